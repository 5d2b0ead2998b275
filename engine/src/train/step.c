/* step.c - builds the training step module of a model:
 *
 *   ENTRY train_step(x, target, params..., state...)
 *     forward   the model's traced forward pass, inlined
 *     loss      hs_train_loss(out, target)
 *     backward  hs_autodiff_grad(loss, params)
 *     update    hs_train_optimizer_update
 *     ROOT      (loss, params'..., state'...)
 *
 * and its gradient-only sibling (x, target, params...) -> (loss, grads...).
 * Every updated value may reuse the buffer of the input it replaces; the
 * module header records it in XLA's syntax (input_output_alias). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_passes.h"
#include "train/train_internal.h"

typedef struct step_inputs {
    hs_instruction *x, *target;
    hs_instruction **params, **state;
} step_inputs;

static bool declare_inputs(hs_builder *b, const hs_train_step *ts,
                           bool with_state, step_inputs *in)
{
    const hs_model *m = ts->model;
    in->x = hs_b_parameter(b, 0, &m->input_shape, "x");
    hs_shape target_shape = m->output_shape;
    if (ts->config.loss == HS_LOSS_CROSS_ENTROPY)
        target_shape = hs_shape_make(HS_S32, m->output_shape.rank - 1,
                                     m->output_shape.dims);
    else
        target_shape = hs_shape_make(HS_F32, m->output_shape.rank,
                                     m->output_shape.dims);
    in->target = hs_b_parameter(b, 1, &target_shape, "target");
    for (int i = 0; i < ts->n_params; i++)
        in->params[i] = hs_b_parameter(b, 2 + i, &ts->param_shapes[i],
                                       ts->param_names[i]);
    for (int k = 0; with_state && k < ts->n_state; k++)
        in->state[k] = hs_b_parameter(b, 2 + ts->n_params + k,
                                      &ts->state_shapes[k],
                                      ts->state_names[k]);
    return hs_builder_ok(b);
}

/* The forward pass of the model, copied in with x and the parameters. */
static hs_instruction *forward(hs_builder *b, const hs_train_step *ts,
                               const step_inputs *in)
{
    const hs_computation *fwd = ts->model->module->entry;
    int n = fwd->n_params;
    if (n != 1 + ts->n_params) {
        hs_builder_fail(b, HS_ERR_INVALID,
                        "train: the forward pass takes %d parameters, "
                        "expected %d",
                        n, 1 + ts->n_params);
        return NULL;
    }
    hs_instruction **args = calloc((size_t)n + 1, sizeof *args);
    if (!args) {
        hs_builder_fail(b, HS_ERR_NOMEM, "train: out of host memory");
        return NULL;
    }
    args[0] = in->x;
    memcpy(args + 1, in->params, sizeof *args * (size_t)ts->n_params);
    hs_instruction *out = hs_autodiff_inline(b, fwd, args, n, NULL);
    free(args);
    return out;
}

/* The step's input_output_alias: output {k} reuses parameter al[k].param
 * (both whole values), may-alias. */
static bool set_aliases(hs_module *m, int n_alias, const hs_train_alias *al)
{
    hs_io_alias *list = calloc((size_t)n_alias + 1, sizeof *list);
    if (!list)
        return false;
    for (int k = 0; k < n_alias; k++) {
        list[k].output[0] = al[k].output;
        list[k].output_len = 1;
        list[k].param = al[k].param;
    }
    bool ok = hs_module_set_io_aliases(m, list, n_alias);
    free(list);
    return ok;
}

static bool has_while(const hs_module *m)
{
    for (int c = 0; c < m->n_comps; c++)
        for (int k = 0; k < m->comps[c]->n_instrs; k++)
            if (m->comps[c]->instrs[k]->opcode == HS_OP_WHILE)
                return true;
    return false;
}

/* with_update: the step module; otherwise the gradient module. */
static hs_module *build_module(const hs_train_step *ts, bool with_update,
                               hs_error *err)
{
    const hs_model *m = ts->model;
    int n = ts->n_params, ns = with_update ? ts->n_state : 0;
    char name[300];
    snprintf(name, sizeof name, "%.200s.%s", m->module->name,
             with_update ? "train_step" : "grads");
    hs_module *mod = hs_module_new(name);
    hs_builder *b = mod ? hs_builder_new(mod, with_update ? "train_step"
                                                          : "grads",
                                         true)
                        : NULL;
    hs_instruction **buf = calloc((size_t)(4 * n + 2 * ns + 2), sizeof *buf);
    if (!mod || !b || !buf) {
        hs_builder_free(b);
        hs_module_free(mod);
        free(buf);
        hs_error_set(err, HS_ERR_NOMEM, "train: out of host memory");
        return NULL;
    }
    step_inputs in = {.params = buf, .state = buf + n};
    hs_instruction **grads = buf + n + ns, **new_params = grads + n;
    hs_instruction **outs = new_params + n; /* 1 + n + ns */
    hs_instruction *root = NULL;
    hs_error ad_err; /* names the instruction autodiff stopped at */
    hs_error_clear(&ad_err);
    if (declare_inputs(b, ts, with_update, &in)) {
        hs_instruction *out = forward(b, ts, &in);
        hs_instruction *loss = hs_train_loss(b, ts->config.loss, out,
                                             in.target);
        if (loss && hs_autodiff_grad(b, loss, in.params, n,
                                     &ts->options.autodiff, grads,
                                     &ad_err) == HS_OK) {
            outs[0] = loss;
            if (with_update) {
                hs_train_optimizer_update(b, &ts->config, n, in.params, grads,
                                          in.state, new_params, outs + 1 + n);
                memcpy(outs + 1, new_params, sizeof *outs * (size_t)n);
            } else {
                memcpy(outs + 1, grads, sizeof *outs * (size_t)n);
            }
            root = hs_b_tuple(b, outs, 1 + n + ns);
        }
    }
    hs_error berr;
    hs_computation *c = hs_builder_finish(b, root, &berr);
    free(buf);
    if (!c) {
        if (err)
            *err = ad_err.status != HS_OK ? ad_err : berr;
        hs_module_free(mod);
        return NULL;
    }
    if (with_update) {
        if (!set_aliases(mod, ts->n_alias, ts->alias)) {
            hs_module_free(mod);
            hs_error_set(err, HS_ERR_NOMEM, "train: out of host memory");
            return NULL;
        }
    }
    if (has_while(mod)) {
        /* The reverse scan rebuilt the forward loops: drop the originals
         * (and the gradient module's second report of the same loops). */
        hs_pass_context ctx;
        hs_pass_context_init(&ctx);
        bool changed = false;
        if (hs_pass_dce_run(mod, &ctx, &changed, err) != HS_OK) {
            hs_module_free(mod);
            return NULL;
        }
    }
    if (hs_module_verify(mod, err) != HS_OK) {
        hs_module_free(mod);
        return NULL;
    }
    return mod;
}

/* The trained values: the forward's entry parameters after x, named after
 * the model parameter or stack that each one is. */
static bool describe_params(hs_train_step *ts)
{
    const hs_model *m = ts->model;
    const hs_computation *fwd = m->module->entry;
    int n = fwd->n_params > 0 ? fwd->n_params - 1 : 0;
    ts->n_params = n;
    ts->param_names = calloc((size_t)n + 1, sizeof *ts->param_names);
    ts->param_shapes = calloc((size_t)n + 1, sizeof *ts->param_shapes);
    if (!ts->param_names || !ts->param_shapes)
        return false;
    for (int k = 0; k < n; k++) {
        const hs_instruction *p = fwd->params[k + 1];
        const char *name = p && p->name ? p->name : "param";
        for (int i = 0; i < m->n_params; i++)
            if (m->params[i].stack < 0 && m->params[i].number == k + 1)
                name = m->params[i].name;
        for (int s = 0; s < m->n_stacks; s++)
            if (m->stacks[s].number == k + 1)
                name = m->stacks[s].name;
        ts->param_names[k] = name;
        if (p)
            ts->param_shapes[k] = hs_shape_make(p->shape.dtype, p->shape.rank,
                                                p->shape.dims);
    }
    return true;
}

static bool describe_state(hs_train_step *ts)
{
    int n = ts->n_params;
    ts->n_state = hs_train_state_count(&ts->config, n);
    ts->state_names = calloc((size_t)ts->n_state + 1, sizeof *ts->state_names);
    ts->state_shapes = calloc((size_t)ts->n_state + 1, sizeof *ts->state_shapes);
    if (!ts->state_names || !ts->state_shapes)
        return false;
    bool ok = true;
    for (int k = 0; k < ts->n_state && ok; k++) {
        ts->state_shapes[k] =
            hs_train_state_shape(&ts->config, n, ts->param_shapes, k);
        char name[320];
        if (k == 2 * n)
            snprintf(name, sizeof name, "step");
        else
            snprintf(name, sizeof name, "%s.%s",
                     k < n ? "exp_avg" : "exp_avg_sq", ts->param_names[k % n]);
        ok = (ts->state_names[k] = strdup(name)) != NULL;
    }
    /* Every updated parameter and state entry aliases its input. */
    ts->n_alias = n + ts->n_state;
    ts->alias = calloc((size_t)ts->n_alias + 1, sizeof *ts->alias);
    for (int k = 0; ok && ts->alias && k < ts->n_alias; k++) {
        ts->alias[k].output = 1 + k;
        ts->alias[k].param = 2 + k;
    }
    return ok && ts->alias;
}

hs_train_step *hs_train_step_build(const hs_model *m,
                                   const hs_train_options *opts,
                                   hs_error *err)
{
    hs_error_clear(err);
    if (!m || !m->module || !m->module->entry) {
        hs_error_set(err, HS_ERR_INVALID, "train: no model");
        return NULL;
    }
    if (!m->train.enabled) {
        hs_error_set(err, HS_ERR_INVALID,
                     "the model has no \"train\" section: nothing to train");
        if (err)
            snprintf(err->path, sizeof err->path, "/train");
        return NULL;
    }
    hs_train_step *ts = calloc(1, sizeof *ts);
    if (!ts) {
        hs_error_set(err, HS_ERR_NOMEM, "train: out of host memory");
        return NULL;
    }
    ts->model = m;
    ts->config = m->train;
    if (opts)
        ts->options = *opts;
    if (!ts->options.autodiff.while_vjp) {
        ts->scan_report = calloc(1, sizeof *ts->scan_report);
        if (!ts->scan_report) {
            hs_train_step_free(ts);
            hs_error_set(err, HS_ERR_NOMEM, "train: out of host memory");
            return NULL;
        }
        ts->scan.policy =
            m->residuals == HS_RESIDUALS_REMAT     ? HS_SCAN_REMAT
            : m->residuals == HS_RESIDUALS_OFFLOAD ? HS_SCAN_OFFLOAD
            : m->residuals == HS_RESIDUALS_REMAT_OFFLOAD
                ? HS_SCAN_REMAT_OFFLOAD
                : HS_SCAN_SAVE;
        ts->scan.offload = m->offload_names;
        ts->scan.n_offload = m->n_offload_names;
        ts->scan.report = ts->scan_report;
        ts->scan.cursor = &ts->scan_cursor;
        ts->options.autodiff.while_vjp = hs_scan_while_vjp;
        ts->options.autodiff.while_user = &ts->scan;
    }
    if (!describe_params(ts) || !describe_state(ts)) {
        hs_train_step_free(ts);
        hs_error_set(err, HS_ERR_NOMEM, "train: out of host memory");
        return NULL;
    }
    if (m->residuals == HS_RESIDUALS_AUTO && ts->scan.cursor &&
        m->n_offload_names == 0) {
        if (hs__train_auto(ts, err) != HS_OK) {
            hs_train_step_free(ts);
            return NULL;
        }
    } else {
        ts->module = build_module(ts, true, err);
    }
    if (!ts->module) {
        hs_train_step_free(ts);
        return NULL;
    }
    return ts;
}

hs_module *hs__train_build_module(hs_train_step *ts, bool with_update,
                                  hs_error *err)
{
    ts->scan_cursor = 0;
    if (ts->scan.report)
        memset(ts->scan.report, 0, sizeof *ts->scan.report);
    return build_module(ts, with_update, err);
}

/* The gradient module, built on first use. */
hs_module *hs__train_grad_module(hs_train_step *ts, hs_error *err)
{
    if (!ts->grad_module) {
        /* The step module already reported the loops. */
        hs_scan_vjp_report *r = ts->scan.report;
        ts->scan.report = NULL;
        ts->scan_cursor = 0;
        ts->grad_module = build_module(ts, false, err);
        ts->scan.report = r;
    }
    return ts->grad_module;
}

void hs_train_step_free(hs_train_step *ts)
{
    if (!ts)
        return;
    for (int k = 0; ts->state_names && k < ts->n_state; k++)
        free((void *)ts->state_names[k]);
    free(ts->state_names);
    free(ts->state_shapes);
    free(ts->param_names);
    free(ts->param_shapes);
    free(ts->alias);
    free(ts->scan_report);
    free(ts->placement);
    free(ts->auto_choice);
    hs_module_free(ts->module);
    hs_module_free(ts->grad_module);
    free(ts);
}
