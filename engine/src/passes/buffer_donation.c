/*
 * buffer_donation.c - reads XLA's input_output_alias from the module
 * header, the entry parameters whose buffers the outputs may reuse:
 *
 *     HloModule m, input_output_alias={ {1}: (2, {}, may-alias),
 *                                       {2,0}: (3, {1}, must-alias) }
 *
 * Output index {1} may reuse parameter 2 at index {} (the whole of it).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "passes/buffers_internal.h"

static const char *skip(const char *p)
{
    while (*p && isspace((unsigned char)*p))
        p++;
    return p;
}

/* "{1,0}" into path; returns the character after '}', or NULL. */
static const char *index_path(const char *p, int *path, int *len)
{
    p = skip(p);
    if (*p != '{')
        return NULL;
    *len = 0;
    p = skip(p + 1);
    while (*p != '}') {
        if (!isdigit((unsigned char)*p) || *len == HS__MAX_INDEX_DEPTH)
            return NULL;
        char *end;
        long v = strtol(p, &end, 10);
        if (v > 1 << 20)
            return NULL;
        path[(*len)++] = (int)v;
        p = skip(end);
        if (*p == ',')
            p = skip(p + 1);
    }
    return p + 1;
}

/* One "{out}: (param, {index}, kind)" entry; returns the character after
 * it, or NULL when it is not one. */
static const char *entry(const char *p, hs__donation *d)
{
    p = index_path(p, d->output, &d->output_len);
    if (!p || *(p = skip(p)) != ':' || *(p = skip(p + 1)) != '(')
        return NULL;
    p = skip(p + 1);
    if (!isdigit((unsigned char)*p))
        return NULL;
    char *end;
    long v = strtol(p, &end, 10);
    if (v > 1 << 20)
        return NULL;
    d->param = (int)v;
    p = skip(end);
    if (*p != ',' || !(p = index_path(p + 1, d->param_index,
                                      &d->param_index_len)))
        return NULL;
    while (*p && *p != ')' && *p != '}') /* ", may-alias" */
        p++;
    return *p == ')' ? p + 1 : NULL;
}

int hs__parse_donations(const char *header, hs__donation **out)
{
    *out = NULL;
    const char *p = header ? strstr(header, "input_output_alias=") : NULL;
    if (!p)
        return 0;
    p = skip(p + strlen("input_output_alias="));
    if (*p != '{')
        return 0;
    p++;
    int n = 0, cap = 0;
    hs__donation *d = NULL;
    for (;;) {
        p = skip(p);
        if (*p == '}' || !*p)
            break;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            hs__donation *q = realloc(d, sizeof *q * (size_t)cap);
            if (!q) {
                free(d);
                return -1;
            }
            d = q;
        }
        const char *next = entry(p, &d[n]);
        if (!next) /* not in the grammar: ignore the rest */
            break;
        n++;
        p = skip(next);
        if (*p == ',')
            p++;
    }
    *out = d;
    return n;
}

int hs__index_node(const hs_shape *s, const int *path, int len)
{
    int node = 0;
    for (int d = 0; d < len; d++) {
        if (s->dtype != HS_TUPLE || path[d] < 0 || path[d] >= s->n_elems)
            return -1;
        node++;
        for (int e = 0; e < path[d]; e++)
            node += hs__shape_nodes(&s->elems[e]);
        s = &s->elems[path[d]];
    }
    return node;
}
