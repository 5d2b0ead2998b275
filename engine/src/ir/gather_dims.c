/* gather_dims.c - the dimension numbers of gather and scatter, read in one
 * place for their shape rules, kernels, cost and gradients, and written
 * as text attributes by the gradients that build one from the other.
 *
 * XLA's GatherDimensionNumbers and ScatterDimensionNumbers are one idea
 * under two sets of names, so both read into hs_gather_dims:
 *
 *   hs_gather_dims     gather's key              scatter's key
 *   offset             offset_dims               update_window_dims
 *   collapsed          collapsed_slice_dims      inserted_window_dims
 *   start_index_map    start_index_map           scatter_dims_to_operand_dims
 *   operand_batching   operand_batching_dims     input_batching_dims
 *   indices_batching   start_indices_batching_dims
 *                                                scatter_indices_batching_dims
 *   index_vector_dim   index_vector_dim          index_vector_dim
 *   slice_sizes        slice_sizes               (the update window's sizes)
 *
 * The parser keeps these attributes as text (printed back as written). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_ir.h"

static const char *const gather_keys[] = {
    "offset_dims", "collapsed_slice_dims", "start_index_map",
    "operand_batching_dims", "start_indices_batching_dims"};
static const char *const scatter_keys[] = {
    "update_window_dims", "inserted_window_dims",
    "scatter_dims_to_operand_dims", "input_batching_dims",
    "scatter_indices_batching_dims"};

/* "{1,0}" (or "1,0") into out[0..*n). false when malformed or longer
 * than HS_MAX_RANK. */
static bool read_list(const char *t, int64_t *out, int *n)
{
    *n = 0;
    while (*t == ' ')
        t++;
    bool braced = *t == '{';
    if (braced)
        t++;
    while (*t == ' ')
        t++;
    if (*t == '}' || *t == '\0')
        return braced ? *t == '}' && t[1] == '\0' : *t == '\0';
    for (;;) {
        char *end;
        errno = 0;
        long long v = strtoll(t, &end, 10);
        if (end == t || errno == ERANGE || *n == HS_MAX_RANK)
            return false;
        out[(*n)++] = v;
        t = end;
        while (*t == ' ')
            t++;
        if (*t == ',') {
            t++;
            continue;
        }
        if (braced)
            return *t == '}' && t[1] == '\0';
        return *t == '\0';
    }
}

static hs_status bad(const hs_instruction *i, hs_error *err,
                     const char *key, const char *text)
{
    return hs_error_set(err, HS_ERR_SHAPE,
                        "instruction %s: %s=%s is not a list of at most %d "
                        "dimension numbers", i->name, key, text,
                        HS_MAX_RANK);
}

static hs_status read_common(const hs_instruction *i,
                             const char *const keys[5], hs_gather_dims *out,
                             hs_error *err)
{
    memset(out, 0, sizeof *out);
    int64_t *lists[5] = {out->offset, out->collapsed, out->start_index_map,
                         out->operand_batching, out->indices_batching};
    int *counts[5] = {&out->n_offset, &out->n_collapsed,
                      &out->n_start_index_map, &out->n_operand_batching,
                      &out->n_indices_batching};
    for (int k = 0; k < 5; k++) {
        const char *t = hs_instruction_attr(i, keys[k]);
        /* XLA prints every list but the batching ones even when empty;
         * a missing list is an empty one, as XLA's parser reads it. */
        if (t && !read_list(t, lists[k], counts[k]))
            return bad(i, err, keys[k], t);
    }
    const char *ivd = hs_instruction_attr(i, "index_vector_dim");
    if (!ivd)
        return hs_error_set(err, HS_ERR_SHAPE,
                            "instruction %s: %s needs index_vector_dim=",
                            i->name, hs_opcode_name(i->opcode));
    char *end;
    errno = 0;
    long long v = strtoll(ivd, &end, 10);
    if (end == ivd || *end || errno == ERANGE || v < 0 || v > HS_MAX_RANK)
        return hs_error_set(err, HS_ERR_SHAPE,
                            "instruction %s: index_vector_dim=%s is not a "
                            "dimension number", i->name, ivd);
    out->index_vector_dim = v;
    return HS_OK;
}

hs_status hs_instruction_gather(const hs_instruction *i, hs_gather_dims *out,
                                hs_error *err)
{
    hs_status st = read_common(i, gather_keys, out, err);
    if (st)
        return st;
    const char *t = hs_instruction_attr(i, "slice_sizes");
    if (!t)
        return hs_error_set(err, HS_ERR_SHAPE,
                            "instruction %s: gather needs slice_sizes=",
                            i->name);
    if (!read_list(t, out->slice_sizes, &out->n_slice_sizes))
        return bad(i, err, "slice_sizes", t);
    return HS_OK;
}

hs_status hs_instruction_scatter(const hs_instruction *i,
                                 hs_gather_dims *out, hs_error *err)
{
    return read_common(i, scatter_keys, out, err);
}

/* "{v0,v1,...}"; buf holds 24 characters per entry. */
static bool put_list(char *buf, size_t size, const int64_t *v, int n)
{
    size_t at = 0;
    int w = snprintf(buf, size, "{");
    for (int k = 0; k < n && w >= 0 && (size_t)w < size - at; k++) {
        at += (size_t)w;
        w = snprintf(buf + at, size - at, k ? ",%lld" : "%lld",
                     (long long)v[k]);
    }
    if (w < 0 || (size_t)w >= size - at)
        return false;
    at += (size_t)w;
    w = snprintf(buf + at, size - at, "}");
    return w >= 0 && (size_t)w < size - at;
}

/* d's lists under keys as text attributes in out (strings in a), in
 * XLA's order: offset, collapsed, start_index_map, the batching lists
 * (only when not empty: XLA leaves them out then), index_vector_dim, and
 * for a gather slice_sizes. The count, or -1 on host OOM. */
static int attrs_of(const char *const keys[5], const hs_gather_dims *d,
                    bool with_slice_sizes, hs_arena *a, hs_attr *out)
{
    const int64_t *lists[5] = {d->offset, d->collapsed, d->start_index_map,
                               d->operand_batching, d->indices_batching};
    const int counts[5] = {d->n_offset, d->n_collapsed, d->n_start_index_map,
                           d->n_operand_batching, d->n_indices_batching};
    char buf[24 * HS_MAX_RANK + 4];
    int n = 0;
    for (int k = 0; k < 5; k++) {
        if (k >= 3 && counts[k] == 0)
            continue;
        put_list(buf, sizeof buf, lists[k], counts[k]);
        out[n].key = keys[k];
        if (!(out[n++].value = hs_arena_strdup(a, buf)))
            return -1;
    }
    snprintf(buf, sizeof buf, "%lld", (long long)d->index_vector_dim);
    out[n].key = "index_vector_dim";
    if (!(out[n++].value = hs_arena_strdup(a, buf)))
        return -1;
    if (with_slice_sizes) {
        put_list(buf, sizeof buf, d->slice_sizes, d->n_slice_sizes);
        out[n].key = "slice_sizes";
        if (!(out[n++].value = hs_arena_strdup(a, buf)))
            return -1;
    }
    return n;
}

int hs_gather_attrs(const hs_gather_dims *d, hs_arena *a,
                    hs_attr out[HS_GATHER_MAX_ATTRS])
{
    return attrs_of(gather_keys, d, true, a, out);
}

int hs_scatter_attrs(const hs_gather_dims *d, hs_arena *a,
                     hs_attr out[HS_GATHER_MAX_ATTRS])
{
    return attrs_of(scatter_keys, d, false, a, out);
}
