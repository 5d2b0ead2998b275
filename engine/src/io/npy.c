/* npy.c - NumPy .npy reader and writer (format 1.0, little-endian).
 *
 * Every type NumPy has is written and read as itself: pred, s8..s64,
 * u8..u64, f16, f32, f64. bf16 and the f8 types have no NumPy dtype
 * (ml_dtypes adds them, but a file that needs it is no longer plain
 * NumPy): they are written widened to '<f4', exactly, so any reader sees
 * their values; reading gives f32. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hloscope/hs_npy.h"
#include "numerics/element_types.h"

/* The NumPy types, as .npy headers spell them. */
static const struct {
    hs_dtype t;
    const char *descr;
} npy_types[] = {
    {HS_PRED, "|b1"}, {HS_S8, "|i1"},  {HS_S16, "<i2"}, {HS_S32, "<i4"},
    {HS_S64, "<i8"},  {HS_U8, "|u1"},  {HS_U16, "<u2"}, {HS_U32, "<u4"},
    {HS_U64, "<u8"},  {HS_F16, "<f2"}, {HS_F32, "<f4"}, {HS_F64, "<f8"},
};
enum { N_NPY_TYPES = sizeof npy_types / sizeof npy_types[0] };

static const char *descr_of(hs_dtype t)
{
    for (int i = 0; i < N_NPY_TYPES; i++)
        if (npy_types[i].t == t)
            return npy_types[i].descr;
    return NULL;
}

/* A type without a NumPy dtype, written as exact f32 values. */
static bool widened_to_f32(hs_dtype t)
{
    return elem_class_of(t) == ELEM_F32 && !descr_of(t);
}

static hs_status write_widened(const char *path, const hs_tensor *t,
                               hs_error *err)
{
    hs_tensor w = {.shape = t->shape};
    w.shape.dtype = HS_F32;
    int64_t n = hs_shape_elements(&t->shape);
    w.data = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!w.data)
        return hs_error_set(err, HS_ERR_NOMEM, "%s: out of host memory",
                            path);
    elem_convert(t->shape.dtype, HS_F32, t->data, w.data, n);
    hs_status st = hs_npy_write(path, &w, err);
    free(w.data);
    return st;
}

hs_status hs_npy_write(const char *path, const hs_tensor *t, hs_error *err)
{
    if (widened_to_f32(t->shape.dtype))
        return write_widened(path, t, err);
    const char *descr = descr_of(t->shape.dtype);
    if (!descr)
        return hs_error_set(err, HS_ERR_UNSUPPORTED,
                            "%s: element type %s cannot be written as .npy",
                            path, hs_dtype_name(t->shape.dtype));
    char dict[512];
    int n = snprintf(dict, sizeof dict,
                     "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     descr);
    for (int i = 0; i < t->shape.rank; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld,%s",
                      (long long)t->shape.dims[i],
                      i + 1 < t->shape.rank ? " " : "");
    if (t->shape.rank > 1) /* "(3, 4,)" is valid but NumPy writes "(3, 4)" */
        n--;
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    /* Magic (6) + version (2) + header length (2) + dict + padding + '\n'
     * must be a multiple of 64. */
    int total = 10 + n + 1;
    int pad = (64 - total % 64) % 64;
    int header_len = n + pad + 1;

    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return hs_error_set(err, HS_ERR_IO, "%s: path too long", path);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return hs_error_set(err, HS_ERR_IO, "%s: %s", tmp, strerror(errno));
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                             (unsigned char)(header_len & 0xff),
                             (unsigned char)(header_len >> 8)};
    bool ok = fwrite(pre, 1, 10, f) == 10 &&
              fwrite(dict, 1, (size_t)n, f) == (size_t)n;
    for (int i = 0; ok && i < pad; i++)
        ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    size_t bytes = (size_t)hs_shape_bytes(&t->shape);
    ok = ok && fwrite(t->data, 1, bytes, f) == bytes;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return hs_error_set(err, HS_ERR_IO, "%s: write failed: %s", path,
                            strerror(errno));
    }
    return HS_OK;
}

hs_status hs_npy_write_f32(const char *path, const hs_shape *shape,
                           const float *data, hs_error *err)
{
    hs_tensor t = {.shape = *shape, .data = (void *)data};
    t.shape.dtype = HS_F32;
    return hs_npy_write(path, &t, err);
}

/* Finds 'key': in the header dict and returns the text after it. */
static const char *dict_value(const char *dict, const char *key)
{
    const char *p = strstr(dict, key);
    if (!p)
        return NULL;
    p = strchr(p + strlen(key), ':');
    if (!p)
        return NULL;
    p++;
    while (*p == ' ')
        p++;
    return p;
}

hs_tensor *hs_npy_read(const char *path, hs_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        hs_error_set(err, HS_ERR_IO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    unsigned char pre[10];
    char dict[1024];
    hs_tensor *t = NULL;
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0 ||
        pre[6] != 1) {
        hs_error_set(err, HS_ERR_PARSE, "%s: not a version 1 .npy file", path);
        goto out;
    }
    size_t hl = (size_t)pre[8] | ((size_t)pre[9] << 8);
    if (hl >= sizeof dict || fread(dict, 1, hl, f) != hl) {
        hs_error_set(err, HS_ERR_PARSE, "%s: bad .npy header", path);
        goto out;
    }
    dict[hl] = '\0';
    const char *descr = dict_value(dict, "'descr'");
    const char *fortran = dict_value(dict, "'fortran_order'");
    const char *shape_text = dict_value(dict, "'shape'");
    hs_dtype dt = HS_TUPLE;
    for (int i = 0; descr && i < N_NPY_TYPES; i++)
        if (descr[0] == '\'' && strncmp(descr + 1, npy_types[i].descr, 3) == 0 &&
            descr[4] == '\'')
            dt = npy_types[i].t;
    if (dt == HS_TUPLE) {
        hs_error_set(err, HS_ERR_UNSUPPORTED,
                     "%s: only little-endian bool, int, uint and float "
                     "arrays are read", path);
        goto out;
    }
    if (!fortran || strncmp(fortran, "False", 5) != 0 || !shape_text ||
        *shape_text != '(') {
        hs_error_set(err, HS_ERR_UNSUPPORTED,
                     "%s: only C-order arrays are read", path);
        goto out;
    }
    int64_t dims[HS_MAX_RANK];
    int rank = 0;
    const char *p = shape_text + 1;
    while (*p && *p != ')') {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p) {
            p++;
            continue;
        }
        if (rank == HS_MAX_RANK || v < 0) {
            hs_error_set(err, HS_ERR_UNSUPPORTED, "%s: bad shape", path);
            goto out;
        }
        dims[rank++] = v;
        p = end;
    }
    hs_shape s = hs_shape_make(dt, rank, dims);
    t = hs_tensor_new(&s);
    if (!t) {
        hs_error_set(err, HS_ERR_NOMEM, "%s: out of host memory", path);
        goto out;
    }
    size_t bytes = (size_t)hs_shape_bytes(&s);
    if (fread(t->data, 1, bytes, f) != bytes) {
        hs_error_set(err, HS_ERR_PARSE, "%s: file shorter than its shape",
                     path);
        hs_tensor_free(t);
        t = NULL;
    }
out:
    fclose(f);
    return t;
}

hs_status hs_mkdirs(const char *dir, hs_error *err)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf)
        return hs_error_set(err, HS_ERR_IO, "%s: path too long", dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return hs_error_set(err, HS_ERR_IO, "%s: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return hs_error_set(err, HS_ERR_IO, "%s: %s", buf, strerror(errno));
    return HS_OK;
}

bool hs_tensor_values_f64(const hs_tensor *t, int64_t start, int64_t n,
                          double *out)
{
    hs_dtype dt = t->shape.dtype;
    if (elem_class_of(dt) == ELEM_NONE || hs_dtype_bits(dt) < 8 ||
        start < 0 || n < 0 || start > hs_tensor_elements(t) - n)
        return false;
    const char *src = (const char *)t->data + start * elem_bytes(dt);
    elem_convert(dt, HS_F64, src, out, n);
    return true;
}

hs_tensor_summary hs_tensor_summarize(const hs_tensor *t)
{
    hs_tensor_summary s = {.ok = hs_tensor_values_f64(t, 0, 0, s.first)};
    int64_t count = hs_tensor_elements(t);
    double v[1024];
    for (int64_t at = 0; s.ok && at < count; at += 1024) {
        int64_t k = count - at < 1024 ? count - at : 1024;
        s.ok = hs_tensor_values_f64(t, at, k, v);
        for (int64_t i = 0; s.ok && i < k; i++) {
            s.sum += v[i];
            if (at + i < HS_SUMMARY_FIRST)
                s.first[s.n_first++] = v[i];
        }
    }
    return s;
}
