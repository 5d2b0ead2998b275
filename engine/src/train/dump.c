/* dump.c - writes what training produced as .npy files (hs_train_dump):
 * the target, one loss per step, the first step's gradients and the
 * parameters after the last step, named like DIR/params/<name>.npy so that
 * a PyTorch check (tests/reference/compare_grads.py) can load them. */
#include <stdio.h>
#include <string.h>

#include "hloscope/hs_npy.h"
#include "hloscope/hs_train.h"

static hs_status write_named(const char *dir, const char *sub,
                             const char *name, const hs_tensor *t,
                             hs_error *err)
{
    char path[4096];
    int len = snprintf(path, sizeof path, "%s/%s/%s.npy", dir, sub, name);
    if (len < 0 || (size_t)len >= sizeof path)
        return hs_error_set(err, HS_ERR_IO, "train dump: path too long: %s/%s",
                            dir, sub);
    return hs_npy_write(path, t, err);
}

/* Parameter i of the model as a tensor of the trained values ts (indexed
 * like hs_train_step.params): its own, or its slice of a stacked value
 * (copied into *tmp, which the caller frees). */
static const hs_tensor *param_value(const hs_model *m, int i,
                                    hs_tensor *const *ts, int n,
                                    hs_tensor **tmp)
{
    const hs_model_param *p = &m->params[i];
    *tmp = NULL;
    if (p->stack < 0)
        return p->number >= 1 && p->number <= n ? ts[p->number - 1] : NULL;
    const hs_model_stack *s = &m->stacks[p->stack];
    if (s->number < 1 || s->number > n || !ts[s->number - 1])
        return NULL;
    const hs_tensor *st = ts[s->number - 1];
    int64_t per = hs_shape_elements(&p->shape);
    if (p->slice < 0 || p->slice >= st->shape.dims[0] ||
        per * st->shape.dims[0] != hs_tensor_elements(st))
        return NULL;
    if (!(*tmp = hs_tensor_new(&p->shape)))
        return NULL;
    memcpy((*tmp)->data, hs_tensor_f32(st) + p->slice * per,
           (size_t)per * sizeof(float));
    return *tmp;
}

static hs_status write_all(const char *dir, const char *sub,
                           const hs_train_step *step, hs_tensor *const *ts,
                           hs_error *err)
{
    const hs_model *m = step->model;
    char path[4096];
    int len = snprintf(path, sizeof path, "%s/%s", dir, sub);
    if (len < 0 || (size_t)len >= sizeof path)
        return hs_error_set(err, HS_ERR_IO, "train dump: path too long: %s",
                            dir);
    hs_status st = hs_mkdirs(path, err);
    for (int i = 0; st == HS_OK && i < m->n_params; i++) {
        hs_tensor *tmp;
        const hs_tensor *t = param_value(m, i, ts, step->n_params, &tmp);
        st = t ? write_named(dir, sub, m->params[i].name, t, err)
               : hs_error_set(err, HS_ERR_INVALID,
                              "train dump: no value for parameter %s",
                              m->params[i].name);
        hs_tensor_free(tmp);
    }
    return st;
}

hs_status hs_train_dump(const hs_train_step *ts, const hs_train_result *r,
                        const char *dir, hs_error *err)
{
    hs_error_clear(err);
    if (!ts || !r || !dir)
        return hs_error_set(err, HS_ERR_INVALID, "train dump: nothing to "
                                                 "write");
    const hs_model *m = ts->model;
    char path[4096];
    hs_status st = hs_mkdirs(dir, err);
    if (st == HS_OK && m->target) {
        snprintf(path, sizeof path, "%s/target.npy", dir);
        st = hs_npy_write(path, m->target, err);
    }
    if (st == HS_OK && r->losses) {
        hs_shape s = hs_shape_make(HS_F32, 1, (int64_t[]){r->steps});
        snprintf(path, sizeof path, "%s/loss.npy", dir);
        st = hs_npy_write_f32(path, &s, r->losses, err);
    }
    if (st == HS_OK && r->grads)
        st = write_all(dir, "grads", ts, r->grads, err);
    if (st == HS_OK && r->updated)
        st = write_all(dir, "updated", ts, r->updated, err);
    return st;
}
