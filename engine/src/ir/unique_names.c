/*
 * unique_names.c - duplicate detection by radix-sorting 32-bit hashes.
 */
#include "ir/unique_names.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

uint32_t hs__name_hash(const char *s)
{
    /* XXH3 reads a short name in a few wide loads; a byte-at-a-time hash
     * (FNV-1a) was a tenth of the time of a small load. */
    return (uint32_t)XXH3_64bits(s, strlen(s));
}

/* LSD radix sort of records (hash << 32 | index) on the hash bits only;
 * stable, so equal hashes keep ascending indices. */
static void sort_by_hash(uint64_t *rec, uint64_t *tmp, int64_t n)
{
    static const int shift[3] = {32, 43, 54};
    static const int bits[3] = {11, 11, 10};
    size_t count[1 << 11];
    for (int pass = 0; pass < 3; pass++) {
        size_t mask = ((size_t)1 << bits[pass]) - 1;
        memset(count, 0, sizeof count);
        for (int64_t k = 0; k < n; k++)
            count[(rec[k] >> shift[pass]) & mask]++;
        size_t sum = 0;
        for (size_t d = 0; d <= mask; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (int64_t k = 0; k < n; k++)
            tmp[count[(rec[k] >> shift[pass]) & mask]++] = rec[k];
        uint64_t *swap = rec;
        rec = tmp;
        tmp = swap;
    }
    /* Three passes: the sorted data is in the caller's tmp buffer. */
}

int64_t hs__find_duplicate_name(const char *const *names,
                                const uint32_t *hashes, int64_t n,
                                int64_t *first)
{
    if (n < 2)
        return -1;
    uint64_t *rec = malloc((size_t)n * sizeof *rec);
    uint64_t *tmp = malloc((size_t)n * sizeof *tmp);
    if (!rec || !tmp) {
        free(rec);
        free(tmp);
        return -2;
    }
    for (int64_t k = 0; k < n; k++)
        rec[k] = (uint64_t)hashes[k] << 32 | (uint64_t)k;
    sort_by_hash(rec, tmp, n);
    const uint64_t *sorted = tmp;

    int64_t best = -1;
    for (int64_t a = 0, b; a < n; a = b) {
        uint32_t h = (uint32_t)(sorted[a] >> 32);
        for (b = a + 1; b < n && (uint32_t)(sorted[b] >> 32) == h; b++)
            ;
        /* A run of equal hashes, indices ascending: the first string equal
         * to an earlier one in the run is this run's earliest duplicate. */
        for (int64_t x = a + 1; x < b; x++) {
            int64_t kx = (int64_t)(uint32_t)sorted[x];
            if (best >= 0 && kx >= best)
                break;
            int64_t hit = -1;
            for (int64_t y = a; y < x && hit < 0; y++)
                if (strcmp(names[(uint32_t)sorted[y]], names[kx]) == 0)
                    hit = (int64_t)(uint32_t)sorted[y];
            if (hit >= 0) {
                best = kx;
                *first = hit;
                break;
            }
        }
    }
    free(rec);
    free(tmp);
    return best;
}
