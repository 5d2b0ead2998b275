/* split.c - files written for --split-input-file: modules separated by a
 * line "// -----". Each piece is parsed alone; error lines stay relative to
 * the whole file, and in a file of several modules the message starts
 * "module K: " (K from 0, the index hs_program_options.module takes).
 * Pieces holding only comments (a trailing separator) are skipped. */
#include <stdlib.h>
#include <string.h>

#include "hlo_text/hlo_text_internal.h"

/* True when the line [b, e) is a separator: "// -----" after blanks. */
static bool is_separator(const char *t, size_t b, size_t e)
{
    while (b < e && (t[b] == ' ' || t[b] == '\t'))
        b++;
    static const char sep[] = "// -----";
    return e - b >= sizeof sep - 1 && memcmp(t + b, sep, sizeof sep - 1) == 0;
}

static bool only_comments(const char *t, size_t len)
{
    hs_scanner s;
    hs__scan_init(&s, t, len, NULL);
    return hs__scan_peek(&s) < 0 && !s.failed;
}

/* Says which module of a split file an error is in. */
static void name_module(hs_error *err, int index)
{
    char msg[sizeof err->message];
    memcpy(msg, err->message, sizeof msg);
    hs_error_set(err, err->status, "module %d: %s", index, msg);
}

static void free_all(hs_module **mods, int n)
{
    for (int k = 0; k < n; k++)
        hs_module_free(mods[k]);
    free(mods);
}

int hs_hlo_parse_many(const char *text, size_t len, hs_module ***out,
                      hs_error *err)
{
    hs_error_clear(err);
    *out = NULL;
    if (!text)
        len = 0;
    hs_module **mods = NULL;
    size_t n = 0, cap = 0;
    size_t piece = 0;    /* start of the current piece */
    int piece_line = 1;  /* its first line in the file */
    int line = 1;
    for (size_t p = 0; p <= len;) {
        size_t e = p;
        while (e < len && text[e] != '\n')
            e++;
        bool sep = p < len && is_separator(text, p, e);
        bool end = e >= len;
        if (sep || end) {
            size_t piece_end = sep ? p : len;
            if (!only_comments(text + piece, piece_end - piece)) {
                hs_module *m = hs_hlo_parse(text + piece, piece_end - piece,
                                            err);
                if (!m) {
                    if (err && err->line > 0)
                        err->line += piece_line - 1;
                    if (err && (n > 0 || sep))
                        name_module(err, (int)n);
                    free_all(mods, (int)n);
                    return -1;
                }
                if (!hs__vec_reserve((void **)&mods, sizeof *mods, n, &cap)) {
                    hs_module_free(m);
                    free_all(mods, (int)n);
                    hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
                    return -1;
                }
                mods[n++] = m;
            }
            piece = e < len ? e + 1 : len;
            piece_line = line + 1;
        }
        if (end)
            break;
        p = e + 1;
        line++;
    }
    if (n == 0) {
        hs_error_set(err, HS_ERR_PARSE, "expected a computation (a name, or "
                                        "'ENTRY')");
        if (err) {
            hs__scan_line_col(text ? text : "", len, len, &err->line,
                              &err->column);
        }
        free(mods);
        return -1;
    }
    *out = mods;
    return (int)n;
}
