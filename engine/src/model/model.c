/* model.c - the public model API: load (parse, validate, trace, draw the
 * initial values), free, and accessors. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_builder.h"
#include "hloscope/hs_file.h"
#include "hloscope/hs_model.h"
#include "model/json_schema.h"
#include "model/model_desc.h"
#include "model/name_index.h"
#include "model/params.h"
#include "model/trace_blocks.h"

hs_model_limits hs_model_limits_resolve(const hs_model_limits *in)
{
    hs_model_limits l = {0};
    if (in)
        l = *in;
    if (l.max_layers <= 0)
        l.max_layers = HS_MODEL_DEFAULT_MAX_LAYERS;
    if (l.max_tensor_elements <= 0)
        l.max_tensor_elements = HS_MODEL_DEFAULT_MAX_TENSOR_ELEMENTS;
    if (l.max_tensor_elements > HS_MODEL_MAX_TENSOR_ELEMENTS_CAP)
        l.max_tensor_elements = HS_MODEL_MAX_TENSOR_ELEMENTS_CAP;
    if (l.max_json_depth <= 0)
        l.max_json_depth = HS_MODEL_DEFAULT_MAX_JSON_DEPTH;
    return l;
}

/* ---- the entry parameter source ---------------------------------------- */

/* Every parameter an unrolled layer asks for becomes the next entry
 * parameter. (Scanned repeats add stacked ones to the same records, see
 * trace_scan.c.) */
typedef struct entry_source {
    hs_param_source base;
    hs_entry_params ep;
} entry_source;

static hs_instruction *entry_get(hs_param_source *self, hs_builder *b,
                                 const char *name, const hs_shape *shape,
                                 hs_init_kind kind, float bound,
                                 const float *values)
{
    hs_entry_params *ep = &((entry_source *)self)->ep;
    hs_instruction *p = hs_b_parameter(b, ep->next, shape, name);
    if (!p)
        return NULL;
    if (!hs__param_list_add(&ep->list, ep->arena, name, shape, ep->next, kind,
                            bound, values)) {
        hs_builder_fail(b, HS_ERR_NOMEM, "out of host memory");
        return NULL;
    }
    ep->next++;
    return p;
}

/* ---- loading ------------------------------------------------------------- */

/* HLO names allow letters, digits, '_', '.' and '-'. */
static char *module_name(hs_arena *a, const char *name)
{
    char *s = hs_arena_strdup(a, name);
    for (char *c = s; c && *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
              (*c >= '0' && *c <= '9') || *c == '_' || *c == '.' ||
              *c == '-'))
            *c = '_';
    return s;
}

static bool fail(hs_error *err, hs_status s, const char *path,
                 const char *msg)
{
    hs_error_set(err, s, "%s", msg);
    if (err && path)
        snprintf(err->path, sizeof err->path, "%s", path);
    return false;
}

/* Parameters are state_dict entries: two with one name (root-module
 * blocks that both declare it, a module name that repeats a positional
 * one) would be one entry in a dump and in load_state_dict. */
static bool unique_param_names(const hs_model *m, hs_error *err)
{
    hs__name_index ix;
    if (!hs__name_index_init(&ix, (size_t)m->n_params + 1))
        return fail(err, HS_ERR_NOMEM, NULL, "out of host memory");
    bool ok = true;
    for (int i = 0; i < m->n_params && ok; i++) {
        if (hs__name_index_get(&ix, m->params[i].name) >= 0) {
            char msg[400];
            snprintf(msg, sizeof msg,
                     "two parameters are named \"%s\"; a state_dict name "
                     "must be unique (give the layers different \"module\" "
                     "names or the params different names)",
                     m->params[i].name);
            ok = fail(err, HS_ERR_INVALID, "/layers", msg);
        } else {
            hs__name_index_put(&ix, m->params[i].name, i);
        }
    }
    hs__name_index_free(&ix);
    return ok;
}

static bool trace_forward(hs_model *m, const hs_model_desc *d,
                          const hs_model_limits *limits, hs_error *err)
{
    m->module = hs_module_new(module_name(m->arena, d->name));
    if (!m->module)
        return fail(err, HS_ERR_NOMEM, NULL, "out of host memory");
    hs_builder *b = hs_builder_new(m->module, "main", true);
    if (!b)
        return fail(err, HS_ERR_NOMEM, NULL, "out of host memory");
    entry_source src = {.base = {entry_get},
                        .ep = {.arena = m->arena, .next = 1}};
    hs_trace t;
    hs__trace_init(&t, b, &src.base);
    t.max_elements = limits->max_tensor_elements;
    t.dtype = d->dtype;
    t.loop = d->loop;
    t.max_unrolled_steps = limits->max_layers;
    hs_instruction *x = hs_b_parameter(b, 0, &d->input_shape, "x");
    for (int k = 0; k < d->n_layers && x;) {
        /* The copies of one repeat share their block, and separate entries
         * never do, so a run of equal pointers is exactly one repeat. */
        int run = 1;
        while (k + run < d->n_layers && d->layers[k + run] == d->layers[k])
            run++;
        if (d->loop == HS_LOOP_SCAN && run >= 2)
            x = hs__trace_scanned(&t, &src.ep, d->layers[k], k,
                                  &d->layer_names[k], run, x);
        else
            for (int r = 0; r < run && x; r++)
                x = hs__trace_layer(&t, d->layers[k + r],
                                    &d->layer_names[k + r], x);
        k += run;
    }
    if (!x && hs_builder_ok(b))
        hs_builder_fail(b, HS_ERR_INVALID, "the model produced no output");

    hs_error berr;
    hs_error_clear(&berr);
    hs_computation *c = hs_builder_finish(b, x, &berr);
    if (!c) {
        if (err) {
            *err = berr;
            if (!err->path[0])
                snprintf(err->path, sizeof err->path, "%s", t.fail_path);
        }
        hs__entry_params_free(&src.ep);
        return false;
    }
    const hs_param_list *l = &src.ep.list;
    m->n_params = l->n;
    m->params = hs_arena_alloc(m->arena,
                               (size_t)(l->n + 1) * sizeof *m->params);
    if (m->params && l->n)
        memcpy(m->params, l->v, (size_t)l->n * sizeof *m->params);
    m->n_stacks = src.ep.n_stacks;
    m->stacks = hs_arena_alloc(m->arena,
                               (size_t)(m->n_stacks + 1) * sizeof *m->stacks);
    if (m->stacks && m->n_stacks)
        memcpy(m->stacks, src.ep.stacks,
               (size_t)m->n_stacks * sizeof *m->stacks);
    m->n_args = (int)src.ep.next;
    hs__entry_params_free(&src.ep);
    if (!m->params || !m->stacks)
        return fail(err, HS_ERR_NOMEM, NULL, "out of host memory");
    for (int i = 0; i < m->n_params; i++)
        m->param_elements += hs_shape_elements(&m->params[i].shape);
    m->output_shape = c->root->shape;
    return unique_param_names(m, err);
}

/* Every tensor the module would compute must fit the element limit; tracing
 * allocates no data, so this is checked before anything is drawn. */
static bool check_sizes(const hs_module *mod, int64_t limit, hs_error *err)
{
    for (int ci = 0; ci < mod->n_comps; ci++) {
        const hs_computation *c = mod->comps[ci];
        for (int i = 0; i < c->n_instrs; i++) {
            const hs_instruction *in = c->instrs[i];
            if (hs_shape_is_tuple(&in->shape) ||
                hs_shape_elements(&in->shape) <= limit)
                continue;
            char s[160];
            hs_shape_print(&in->shape, false, s, sizeof s);
            hs_error_set(err, HS_ERR_LIMIT,
                         "%s (%s) has more than %lld elements (limit "
                         "max_tensor_elements)",
                         s, in->op_name ? in->op_name : in->name,
                         (long long)limit);
            if (err)
                snprintf(err->instruction, sizeof err->instruction, "%s",
                         in->name);
            return false;
        }
    }
    return true;
}

static bool check_train(hs_model *m, hs_error *err)
{
    if (!m->train.enabled)
        return true;
    if (m->output_shape.dtype != HS_F32)
        return fail(err, HS_ERR_INVALID, "/train",
                    "training needs an f32 output");
    if (m->train.loss == HS_LOSS_CROSS_ENTROPY && m->output_shape.rank < 1)
        return fail(err, HS_ERR_INVALID, "/train/loss",
                    "cross_entropy needs an output with a class axis (the "
                    "last one)");
    return true;
}

/* s32 indices floor(u * classes) with u from stream (class targets,
 * token ids). false on host OOM. */
static bool fill_indices(uint64_t seed, const char *stream, int64_t classes,
                         hs_tensor *t)
{
    int64_t n = hs_shape_elements(&t->shape);
    float *u = malloc((size_t)(n > 0 ? n : 1) * sizeof *u);
    if (!u)
        return false;
    hs_model_fill_uniform(seed, stream, 0, 1, u, n);
    int32_t *idx = t->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t c = (int64_t)(u[i] * (float)classes);
        idx[i] = (int32_t)(c < classes ? c : classes - 1);
    }
    free(u);
    return true;
}

static hs_tensor *draw_target(const hs_model *m)
{
    const hs_shape *out = &m->output_shape;
    if (m->train.loss == HS_LOSS_MSE) {
        hs_tensor *t = hs_tensor_new(out);
        if (t && m->train.target == HS_TARGET_RANDOM)
            hs_model_fill_uniform(m->seed, "target", -1, 1, hs_tensor_f32(t),
                                  hs_shape_elements(out));
        return t;
    }
    /* Class indices over every axis but the last. */
    int64_t classes = out->dims[out->rank - 1];
    hs_shape s = hs_shape_make(HS_S32, out->rank - 1, out->dims);
    hs_tensor *t = hs_tensor_new(&s);
    if (!t || m->train.target == HS_TARGET_ZEROS)
        return t;
    if (!fill_indices(m->seed, "target", classes, t)) {
        hs_tensor_free(t);
        return NULL;
    }
    return t;
}

static bool draw_data(hs_model *m, hs_error *err)
{
    m->input = hs_tensor_new(&m->input_shape);
    if (!m->input || !hs__stacks_materialize(m->stacks, m->n_stacks) ||
        !hs__params_materialize(m->seed, m->params, m->n_params, m->stacks))
        return fail(err, HS_ERR_NOMEM, NULL, "out of host memory");
    if (m->input_shape.dtype == HS_S32) {
        if (!fill_indices(m->seed, "input", m->desc->input_ids, m->input))
            return fail(err, HS_ERR_NOMEM, NULL, "out of host memory");
    } else if (m->input_shape.dtype != HS_F32) {
        if (!hs__fill_narrow(m->input, m->seed, NULL))
            return fail(err, HS_ERR_NOMEM, NULL, "out of host memory");
    } else {
        hs_model_fill_uniform(m->seed, "input", -1, 1,
                              hs_tensor_f32(m->input),
                              hs_shape_elements(&m->input_shape));
    }
    if (m->train.enabled && !(m->target = draw_target(m)))
        return fail(err, HS_ERR_NOMEM, NULL, "out of host memory");
    return true;
}

static void copy_settings(hs_model *m, const hs_model_desc *d)
{
    m->name = d->name;
    m->seed = d->seed;
    m->device = d->device;
    m->loop = d->loop;
    m->residuals = d->residuals;
    m->offload_names = (const char *const *)d->offload_names;
    m->n_offload_names = d->n_offload_names;
    m->train = d->train;
    m->input_shape = d->input_shape;
    m->n_layers = d->n_layers;
}

/* Validates and traces a parsed description (the common part of loading
 * from text and from a parsed value). */
static hs_model *load_root(const json_t *root, const hs_model_options *opts,
                           const hs_model_limits *limits, hs_error *err)
{
    hs_model *m = calloc(1, sizeof *m);
    if (m)
        m->arena = hs_arena_new(0);
    if (m && m->arena)
        m->desc = hs_arena_alloc(m->arena, sizeof *m->desc);
    if (!m || !m->desc) {
        hs_model_free(m);
        hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        return NULL;
    }
    bool ok = hs__model_desc_parse(root, opts, limits, m->arena, m->desc, err);
    if (ok) {
        copy_settings(m, m->desc);
        ok = trace_forward(m, m->desc, limits, err) &&
             check_sizes(m->module, limits->max_tensor_elements, err) &&
             hs_module_verify(m->module, err) == HS_OK && check_train(m, err) &&
             (opts && opts->shapes_only ? true : draw_data(m, err));
    }
    if (!ok) {
        hs_model_free(m);
        return NULL;
    }
    return m;
}

hs_model *hs_model_load(const char *json_text, size_t len,
                        const hs_model_options *opts, hs_error *err)
{
    hs_error_clear(err);
    hs_model_limits limits =
        hs_model_limits_resolve(opts ? &opts->limits : NULL);
    json_t *root = js_parse(json_text, len, limits.max_json_depth, err);
    if (!root)
        return NULL;
    hs_model *m = load_root(root, opts, &limits, err);
    json_decref(root);
    return m;
}

hs_model *hs_model_load_json(const json_t *root, const hs_model_options *opts,
                             hs_error *err)
{
    hs_error_clear(err);
    hs_model_limits limits =
        hs_model_limits_resolve(opts ? &opts->limits : NULL);
    if (!js_check_depth(root, limits.max_json_depth, err))
        return NULL;
    return load_root(root, opts, &limits, err);
}

hs_status hs_model_materialize(hs_model *m, hs_error *err)
{
    if (m->input)
        return HS_OK;
    if (!draw_data(m, err))
        return err ? err->status : HS_ERR_NOMEM;
    return HS_OK;
}

hs_model *hs_model_load_file(const char *path, const hs_model_options *opts,
                             hs_error *err)
{
    hs_error_clear(err);
    size_t n;
    char *buf = hs_read_file(path, &n, err);
    if (!buf)
        return NULL;
    hs_model *m = hs_model_load(buf, n, opts, err);
    free(buf);
    return m;
}

void hs_model_free(hs_model *m)
{
    if (!m)
        return;
    hs__params_release(m->params, m->n_params);
    for (int i = 0; i < m->n_stacks; i++)
        hs_tensor_free(m->stacks[i].value);
    hs_tensor_free(m->input);
    hs_tensor_free(m->target);
    hs_module_free(m->module);
    hs_arena_free(m->arena);
    free(m);
}

int hs_model_args(const hs_model *m, hs_tensor **args, int cap)
{
    if (!m->input || cap < m->n_args)
        return -1;
    args[0] = m->input;
    for (int i = 0; i < m->n_params; i++)
        if (m->params[i].stack < 0)
            args[m->params[i].number] = m->params[i].value;
    for (int s = 0; s < m->n_stacks; s++)
        args[m->stacks[s].number] = m->stacks[s].value;
    return m->n_args;
}


int hs_model_find_param(const hs_model *m, const char *name)
{
    for (int i = 0; i < m->n_params; i++)
        if (strcmp(m->params[i].name, name) == 0)
            return i;
    return -1;
}
