/* hlo_args.c - arguments for an imported HLO module, drawn from the same
 * generator as model parameters so that runs of a .hlo file repeat, or
 * read from .npy files named after each leaf. A tuple-shaped parameter
 * (XLA's "tupled" entry, one argument holding them all) gets one tensor
 * per leaf, in the order the device binds them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_model.h"
#include "hloscope/hs_npy.h"
#include "numerics/element_types.h"

/* The leaves of one parameter, depth first: a visitor called with each
 * array shape and its name ("p" for an array parameter, "p.1.0" for the
 * leaf at tuple index {1,0}). Stops at the first visitor that fails. */
typedef hs_status (*leaf_fn)(const hs_shape *leaf, const char *name,
                             void *user, hs_error *err);

static hs_status walk(const hs_shape *s, char *name, size_t len, size_t size,
                      leaf_fn fn, void *user, hs_error *err)
{
    if (!hs_shape_is_tuple(s))
        return fn(s, name, user, err);
    for (int i = 0; i < s->n_elems; i++) {
        snprintf(name + len, size - len, ".%d", i);
        hs_status st = walk(&s->elems[i], name, strlen(name), size, fn, user,
                            err);
        if (st != HS_OK)
            return st;
    }
    name[len] = '\0';
    return HS_OK;
}

static hs_status walk_params(const hs_module *m, leaf_fn fn, void *user,
                             hs_error *err)
{
    const hs_computation *entry = m->entry;
    for (int k = 0; k < entry->n_params; k++) {
        char name[512];
        snprintf(name, sizeof name, "%s", entry->params[k]->name);
        hs_status st = walk(&entry->params[k]->shape, name, strlen(name),
                            sizeof name, fn, user, err);
        if (st != HS_OK)
            return st;
    }
    return HS_OK;
}

typedef struct drawn {
    const char *dir; /* read from dir/<leaf>.npy; NULL: draw */
    hs_tensor **args;
    int n, cap;
} drawn;

/* bf16 and the f8 types have no NumPy dtype: `run --dump` writes them as
 * their exact f32 values (hs_npy_write), so an f32 file of the leaf's dims
 * is read back rounded to the leaf's float type. False when *t is not
 * such a file (or on host OOM). */
static bool narrow_to_leaf(hs_tensor **t, const hs_shape *leaf)
{
    hs_shape f32 = *leaf;
    f32.dtype = HS_F32;
    if ((*t)->shape.dtype != HS_F32 || elem_class_of(leaf->dtype) != ELEM_F32 ||
        hs_dtype_bits(leaf->dtype) < 8 || !hs_shape_compatible(&(*t)->shape, &f32))
        return false;
    hs_tensor *n = hs_tensor_new(leaf);
    if (!n)
        return false;
    elem_convert(HS_F32, leaf->dtype, (*t)->data, n->data, hs_tensor_elements(n));
    hs_tensor_free(*t);
    *t = n;
    return true;
}

/* dir/<leaf>.npy, which must hold the leaf's element type and dims (or,
 * for a float type NumPy lacks, f32: see narrow_to_leaf). */
static hs_tensor *read_leaf(const char *dir, const hs_shape *leaf,
                            const char *name, hs_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    hs_tensor *t = hs_npy_read(path, err);
    if (!t) {
        if (err) {
            char msg[sizeof err->message];
            memcpy(msg, err->message, sizeof msg);
            hs_error_set(err, err->status, "argument %s: %s", name, msg);
        }
    } else if (!hs_shape_compatible(&t->shape, leaf) &&
               !narrow_to_leaf(&t, leaf)) {
        char want[128], got[128];
        hs_shape_print(leaf, false, want, sizeof want);
        hs_shape_print(&t->shape, false, got, sizeof got);
        hs_error_set(err, HS_ERR_INVALID,
                     "argument %s: %s holds %s, the parameter needs %s", name,
                     path, got, want);
        hs_tensor_free(t);
        t = NULL;
    }
    return t;
}

/* A float leaf of any width ~ U(-1, 1), drawn in f32 and rounded once to
 * its type, so that an f16 or bf16 argument holds the f32 draw's nearest
 * value. Integer and pred leaves stay zeros (they are often indices and
 * trip counts). False on host OOM. */
static bool fill_float(hs_tensor *t, const char *name)
{
    hs_dtype dt = t->shape.dtype;
    int64_t n = hs_tensor_elements(t);
    if (dt == HS_F32) {
        hs_model_fill_uniform(0, name, -1.0f, 1.0f, hs_tensor_f32(t), n);
        return true;
    }
    elem_class c = elem_class_of(dt);
    /* Sub-byte floats (f4e2m1fn) are stored packed and not executed. */
    if ((c != ELEM_F32 && c != ELEM_F64) || hs_dtype_bits(dt) < 8 || n <= 0)
        return true;
    float *draw = malloc((size_t)n * sizeof *draw);
    if (!draw)
        return false;
    hs_model_fill_uniform(0, name, -1.0f, 1.0f, draw, n);
    elem_convert(HS_F32, dt, draw, t->data, n);
    free(draw);
    return true;
}

static hs_status make_leaf(const hs_shape *leaf, const char *name, void *user,
                           hs_error *err)
{
    drawn *d = user;
    if (d->n == d->cap) {
        int cap = d->cap ? 2 * d->cap : 8;
        hs_tensor **grown = realloc(d->args, sizeof *grown * (size_t)cap);
        if (!grown)
            return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        d->args = grown;
        d->cap = cap;
    }
    if (d->dir) {
        hs_tensor *t = read_leaf(d->dir, leaf, name, err);
        if (!t)
            return err ? err->status : HS_ERR_IO;
        d->args[d->n++] = t;
        return HS_OK;
    }
    hs_tensor *t = hs_tensor_new(leaf);
    if (!t) {
        hs_error_set(err, HS_ERR_NOMEM, "parameter %s: out of host memory", name);
        if (err)
            snprintf(err->instruction, sizeof err->instruction, "%s", name);
        return HS_ERR_NOMEM;
    }
    if (!fill_float(t, name)) {
        hs_tensor_free(t);
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    }
    d->args[d->n++] = t;
    return HS_OK;
}

hs_tensor **hs_model_hlo_args(const hs_module *m, int *n, hs_error *err)
{
    return hs_model_hlo_args_read(m, NULL, n, err);
}

hs_tensor **hs_model_hlo_args_read(const hs_module *m, const char *dir, int *n,
                                   hs_error *err)
{
    drawn d = {.dir = dir};
    *n = 0;
    if (walk_params(m, make_leaf, &d, err) != HS_OK) {
        for (int k = 0; k < d.n; k++)
            hs_tensor_free(d.args[k]);
        free(d.args);
        return NULL;
    }
    if (!d.args && !(d.args = malloc(sizeof *d.args))) {
        hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        return NULL;
    }
    *n = d.n;
    return d.args;
}

typedef struct named_leaf {
    int want, at;
    char *buf;
    size_t size;
} named_leaf;

static hs_status name_leaf(const hs_shape *leaf, const char *name, void *user,
                           hs_error *err)
{
    (void)leaf, (void)err;
    named_leaf *w = user;
    if (w->at++ != w->want)
        return HS_OK;
    snprintf(w->buf, w->size, "%s", name);
    return HS_ERR_INVALID; /* found: stop walking */
}

bool hs_model_hlo_arg_name(const hs_module *m, int leaf, char *buf, size_t size)
{
    named_leaf w = {.want = leaf, .buf = buf, .size = size};
    return walk_params(m, name_leaf, &w, NULL) != HS_OK;
}
