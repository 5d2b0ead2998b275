/* file.c - reading a whole file into memory. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_file.h"

char *hs_read_file(const char *path, size_t *len, hs_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        hs_error_set(err, HS_ERR_IO, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *grown = realloc(buf, cap * 2 + 1);
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    bool read_error = ferror(f);
    fclose(f);
    if (!buf || read_error) {
        hs_error_set(err, buf ? HS_ERR_IO : HS_ERR_NOMEM, "cannot read %s", path);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}
