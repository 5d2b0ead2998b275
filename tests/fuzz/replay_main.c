/* replay_main.c - runs a harness over files without libFuzzer: every
 * argument is a file or a directory whose regular files are replayed in
 * name order. CTest replays the seed corpus and the saved findings with
 * it (tests/fuzz/CMakeLists.txt); a missing directory counts as empty. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            uint8_t *grown = realloc(buf, cap *= 2);
            if (!grown)
                free(buf);
            buf = grown;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "replay: %s: out of memory\n", path);
        return -1;
    }
    /* An exact-size copy, as libFuzzer passes it: a read past the end is
     * caught by ASan in the sanitizer build. */
    uint8_t *data = malloc(len ? len : 1);
    if (data)
        memcpy(data, buf, len);
    free(buf);
    if (!data)
        return -1;
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
    LLVMFuzzerTestOneInput(data, len);
    free(data);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_dir(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    char **names = NULL;
    int n = 0, cap = 0, rc = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **grown = realloc(names, sizeof *names * (size_t)cap);
            if (!grown) {
                rc = -1;
                break;
            }
            names = grown;
        }
        names[n++] = strdup(de->d_name);
    }
    closedir(d);
    if (n > 1)
        qsort(names, (size_t)n, sizeof *names, by_name);
    for (int k = 0; k < n; k++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        if (rc == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (replay_file(path) != 0)
                rc = -1;
            ++*count;
        }
        free(names[k]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    int count = 0, rc = 0;
    for (int k = 1; k < argc; k++) {
        struct stat st;
        if (stat(argv[k], &st) == 0 && S_ISDIR(st.st_mode)) {
            if (replay_dir(argv[k], &count) != 0)
                rc = 1;
        } else if (stat(argv[k], &st) == 0) {
            rc |= replay_file(argv[k]) != 0;
            count++;
        }
    }
    printf("replayed %d inputs\n", count);
    return rc;
}
