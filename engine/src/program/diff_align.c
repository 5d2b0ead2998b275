/* diff_align.c - the module diff side by side: computations paired, and
 * in each pair the instructions on rows, a matched pair on one row and an
 * instruction only one side has opposite a gap (hs_module_diff_align).
 *
 * A computation of a is paired with the computation of b that most of its
 * matched instructions went to (an unrolled entry with the scan's body,
 * where its layers matched), and the same from b; a computation whose
 * instructions matched nothing stands alone. Each instruction without a
 * match is shown in the block of its computation's pair. Rows follow a's
 * order; an instruction only in b comes just before the first pair that
 * follows it in b, so that the loop's own instructions sit where b has
 * them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_program.h"

typedef struct comp_count {
    int a, b;
    int64_t n;
} comp_count;

static int by_comps(const void *x, const void *y)
{
    const comp_count *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return (p->b > q->b) - (p->b < q->b);
}

/* Which computation of the other side each computation is paired with:
 * the one most of its matched instructions went to (the first on a tie),
 * -1 when none matched. */
static int pair_computations(const hs_module *a, const hs_module *b,
                             const hs_module_diff *d, const int *comp_a,
                             const int *comp_b, int *best_a, int *best_b)
{
    comp_count *c = malloc(sizeof *c * (size_t)(d->n_pairs ? d->n_pairs : 1));
    int64_t *most_a = calloc((size_t)(a->n_comps ? a->n_comps : 1), sizeof *most_a);
    int64_t *most_b = calloc((size_t)(b->n_comps ? b->n_comps : 1), sizeof *most_b);
    if (!c || !most_a || !most_b) {
        free(c);
        free(most_a);
        free(most_b);
        return -1;
    }
    for (int k = 0; k < a->n_comps; k++)
        best_a[k] = -1;
    for (int k = 0; k < b->n_comps; k++)
        best_b[k] = -1;
    for (int64_t k = 0; k < d->n_pairs; k++)
        c[k] = (comp_count){comp_a[d->pair_a[k]->id], comp_b[d->pair_b[k]->id], 1};
    qsort(c, (size_t)d->n_pairs, sizeof *c, by_comps);
    int64_t n = 0;
    for (int64_t k = 0; k < d->n_pairs; k++) {
        if (n > 0 && c[n - 1].a == c[k].a && c[n - 1].b == c[k].b)
            c[n - 1].n++;
        else
            c[n++] = c[k];
    }
    for (int64_t k = 0; k < n; k++) {
        if (c[k].a < 0 || c[k].b < 0)
            continue;
        if (c[k].n > most_a[c[k].a])
            most_a[c[k].a] = c[k].n, best_a[c[k].a] = c[k].b;
        if (c[k].n > most_b[c[k].b])
            most_b[c[k].b] = c[k].n, best_b[c[k].b] = c[k].a;
    }
    free(c);
    free(most_a);
    free(most_b);
    return 0;
}

typedef struct block_key {
    int a, b;      /* computation indexes, -1 for none */
    int64_t where; /* sort key: after a's computation, or after the a
                    * computation b's last paired one follows */
} block_key;

static int by_where(const void *x, const void *y)
{
    const block_key *p = x, *q = y;
    if (p->where != q->where)
        return p->where < q->where ? -1 : 1;
    return (p->b > q->b) - (p->b < q->b);
}

/* A pair (its index in d) with its computations, sorted by them. */
typedef struct block_pair {
    int a, b;
    int64_t k;
} block_pair;

static int by_block_order(const void *x, const void *y)
{
    const block_pair *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    if (p->b != q->b)
        return p->b < q->b ? -1 : 1;
    return (p->k > q->k) - (p->k < q->k);
}

/* One row per pair of the block and per unmatched instruction shown in
 * it, in the order the file comment describes. */
typedef struct aligner {
    const hs_module *a, *b;
    const hs_module_diff *d;
    const int *best_a, *best_b;
    int64_t *order_b; /* b's instruction id -> its walk order */
    int *comp_b;      /* b's instruction id -> its computation's index */
    int *comp_a;
    /* the pairs by a's computation, b's, then order */
    block_pair *by_block;
    hs_diff_row *rows;
    int64_t n_rows, cap_rows;
} aligner;

static int push(aligner *al, const hs_instruction *x, const hs_instruction *y,
                hs_diff_status st)
{
    if (al->n_rows == al->cap_rows) {
        int64_t cap = al->cap_rows ? 2 * al->cap_rows : 1024;
        hs_diff_row *r = realloc(al->rows, (size_t)cap * sizeof *r);
        if (!r)
            return -1;
        al->rows = r;
        al->cap_rows = cap;
    }
    al->rows[al->n_rows++] = (hs_diff_row){x, y, st};
    return 0;
}

/* The first entry of by_block at or after (ka, kb). */
static int64_t first_of_block(const aligner *al, int ka, int kb)
{
    int64_t lo = 0, hi = al->d->n_pairs;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int xa = al->by_block[mid].a, xb = al->by_block[mid].b;
        if (xa < ka || (xa == ka && xb < kb))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* b's unmatched instructions of cb from *next up to (not including) walk
 * order `before` (all of them: INT64_MAX), each opposite a gap. */
static int added_until(aligner *al, const hs_computation *cb, int *next,
                       int64_t before, const bool *matched_b)
{
    for (; *next < cb->n_instrs && al->order_b[cb->instrs[*next]->id] < before; (*next)++) {
        const hs_instruction *z = cb->instrs[*next];
        if (!matched_b[z->id] && push(al, NULL, z, HS_DIFF_ADDED))
            return -1;
    }
    return 0;
}

/* A block that is not a's computation's own: the pairs between ka and kb,
 * in a's order, and (own_b) b's unmatched of kb where b has them. */
static int pairs_rows(aligner *al, int ka, int kb, bool own_b, const bool *matched_b)
{
    const hs_computation *cb = kb >= 0 ? al->b->comps[kb] : NULL;
    int next_b = 0;
    for (int64_t j = ka >= 0 && kb >= 0 ? first_of_block(al, ka, kb) : al->d->n_pairs;
         j < al->d->n_pairs; j++) {
        int64_t k = al->by_block[j].k;
        if (al->by_block[j].a != ka || al->by_block[j].b != kb)
            break;
        const hs_instruction *x = al->d->pair_a[k], *y = al->d->pair_b[k];
        if ((own_b && added_until(al, cb, &next_b, al->order_b[y->id], matched_b)) ||
            push(al, x, y, al->d->pair_changed[k] ? HS_DIFF_CHANGED : HS_DIFF_SAME))
            return -1;
    }
    return own_b ? added_until(al, cb, &next_b, INT64_MAX, matched_b) : 0;
}

/* The rows of block (ka, kb). matched_a/b: whether each instruction (by
 * id) has a match; pairs_at: the first pair of a's computation ka (pairs
 * are in a's order, so a computation's are consecutive). */
static int block_rows(aligner *al, int ka, int kb, const bool *matched_a,
                      const bool *matched_b, const int64_t *pairs_at,
                      const int64_t *pairs_end)
{
    const hs_computation *ca = ka >= 0 ? al->a->comps[ka] : NULL;
    const hs_computation *cb = kb >= 0 ? al->b->comps[kb] : NULL;
    bool own_a = ca && al->best_a[ka] == kb; /* a's unmatched shown here */
    bool own_b = cb && al->best_b[kb] == ka;
    int next_b = 0; /* b's next instruction not yet placed, when own_b */
    if (!own_a) /* the pairs of (ka, kb) only: ka's own block has the rest */
        return pairs_rows(al, ka, kb, own_b, matched_b);
    int64_t p = ca ? pairs_at[ka] : 0, pe = ca ? pairs_end[ka] : 0;
    for (int i = 0; ca && i < ca->n_instrs; i++) {
        const hs_instruction *x = ca->instrs[i];
        if (!matched_a[x->id]) {
            if (own_a && push(al, x, NULL, HS_DIFF_REMOVED))
                return -1;
            continue;
        }
        for (; p < pe && al->d->pair_a[p] == x; p++) {
            const hs_instruction *y = al->d->pair_b[p];
            /* A pair into another computation is shown in that pair's
             * block when there is one (b's computation is paired with
             * ka), else here, in x's own block. */
            if (y->parent != cb &&
                (!own_a || al->best_b[al->comp_b[y->id]] == ka))
                continue;
            /* b's unmatched before y */
            if ((own_b && y->parent == cb &&
                 added_until(al, cb, &next_b, al->order_b[y->id], matched_b)) ||
                push(al, x, y, al->d->pair_changed[p] ? HS_DIFF_CHANGED : HS_DIFF_SAME))
                return -1;
        }
    }
    return own_b ? added_until(al, cb, &next_b, INT64_MAX, matched_b) : 0;
}

hs_status hs_module_diff_align(const hs_module *a, const hs_module *b,
                               const hs_module_diff *d, hs_diff_alignment *out,
                               hs_error *err)
{
    memset(out, 0, sizeof *out);
    size_t ca = (size_t)(a->n_comps ? a->n_comps : 1), cb = (size_t)(b->n_comps ? b->n_comps : 1);
    int *best_a = malloc(ca * sizeof *best_a), *best_b = malloc(cb * sizeof *best_b);
    bool *matched_a = calloc((size_t)(a->next_id > 0 ? a->next_id : 1), sizeof *matched_a);
    bool *matched_b = calloc((size_t)(b->next_id > 0 ? b->next_id : 1), sizeof *matched_b);
    int64_t *order_b = malloc((size_t)(b->next_id > 0 ? b->next_id : 1) * sizeof *order_b);
    /* instruction id -> computation index (hs_computation_index is a
     * search once passes renumbered the computations) */
    int *comp_a = malloc((size_t)(a->next_id > 0 ? a->next_id : 1) * sizeof *comp_a);
    int *comp_b = malloc((size_t)(b->next_id > 0 ? b->next_id : 1) * sizeof *comp_b);
    int64_t *pairs_at = calloc(ca, sizeof *pairs_at), *pairs_end = calloc(ca, sizeof *pairs_end);
    block_key *keys = malloc((ca + cb) * sizeof *keys);
    block_pair *by_block = malloc((size_t)(d->n_pairs ? d->n_pairs : 1) * sizeof *by_block);
    aligner al = {.a = a, .b = b, .d = d, .best_a = best_a, .best_b = best_b,
                  .order_b = order_b, .comp_b = comp_b, .comp_a = comp_a,
                  .by_block = by_block};
    hs_status st = HS_OK;
    if (!best_a || !best_b || !matched_a || !matched_b || !order_b || !comp_a ||
        !comp_b || !pairs_at || !pairs_end || !keys || !by_block) {
        st = hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        goto done;
    }
    int64_t o = 0;
    for (int c = 0; c < b->n_comps; c++)
        for (int i = 0; i < b->comps[c]->n_instrs; i++) {
            order_b[b->comps[c]->instrs[i]->id] = o++;
            comp_b[b->comps[c]->instrs[i]->id] = c;
        }
    for (int c = 0; c < a->n_comps; c++)
        for (int i = 0; i < a->comps[c]->n_instrs; i++)
            comp_a[a->comps[c]->instrs[i]->id] = c;
    if (pair_computations(a, b, d, comp_a, comp_b, best_a, best_b)) {
        st = hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        goto done;
    }
    for (int64_t k = 0; k < d->n_pairs; k++)
        by_block[k] = (block_pair){comp_a[d->pair_a[k]->id], comp_b[d->pair_b[k]->id], k};
    qsort(by_block, (size_t)d->n_pairs, sizeof *by_block, by_block_order);
    for (int64_t k = 0; k < d->n_pairs; k++) {
        matched_a[d->pair_a[k]->id] = matched_b[d->pair_b[k]->id] = true;
        int c = comp_a[d->pair_a[k]->id];
        if (!pairs_end[c])
            pairs_at[c] = k;
        pairs_end[c] = k + 1;
    }
    /* the blocks: each computation with its best partner, both ways */
    int n = 0;
    for (int k = 0; k < a->n_comps; k++)
        keys[n++] = (block_key){k, best_a[k], 2 * (int64_t)k};
    int follows = -1; /* the a computation b's walk last met */
    for (int k = 0; k < b->n_comps; k++) {
        int pa = best_b[k];
        if (pa >= 0)
            follows = pa;
        if (pa >= 0 && best_a[pa] == k)
            continue; /* the same block */
        keys[n++] = (block_key){pa, k, pa >= 0 ? 2 * (int64_t)pa : 2 * (int64_t)follows + 1};
    }
    qsort(keys, (size_t)n, sizeof *keys, by_where);
    if (!(out->blocks = malloc((size_t)(n ? n : 1) * sizeof *out->blocks))) {
        st = hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        goto done;
    }
    for (int k = 0; k < n; k++) {
        int64_t first = al.n_rows;
        if (block_rows(&al, keys[k].a, keys[k].b, matched_a, matched_b, pairs_at,
                       pairs_end)) {
            st = hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
            goto done;
        }
        if (al.n_rows == first && keys[k].a >= 0 && keys[k].b >= 0)
            continue; /* a secondary pairing with nothing left to show */
        out->blocks[out->n_blocks++] = (hs_diff_block){
            keys[k].a >= 0 ? a->comps[keys[k].a] : NULL,
            keys[k].b >= 0 ? b->comps[keys[k].b] : NULL, first, al.n_rows - first};
    }
    out->rows = al.rows;
    out->n_rows = al.n_rows;
    al.rows = NULL;
done:
    if (st != HS_OK)
        hs_diff_alignment_free(out);
    free(al.rows);
    free(best_a);
    free(best_b);
    free(matched_a);
    free(matched_b);
    free(order_b);
    free(comp_a);
    free(comp_b);
    free(by_block);
    free(pairs_at);
    free(pairs_end);
    free(keys);
    return st;
}

void hs_diff_alignment_free(hs_diff_alignment *al)
{
    free(al->blocks);
    free(al->rows);
    memset(al, 0, sizeof *al);
}
