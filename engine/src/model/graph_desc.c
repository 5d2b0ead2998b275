/* graph_desc.c - validates a `graph` block: named parameters, a list of
 * HLO-level ops over them, and the output. Arguments must name "x" (the
 * block input), a parameter or an earlier op. */
#include <string.h>

#include "model/model_desc.h"
#include "model/name_index.h"

/* How an op of the graph block is checked: its argument count (-1: one or
 * more) and the attrs it accepts. */
typedef struct gop_rule {
    const char *name;
    hs_graph_op_kind kind;
    hs_opcode opcode;
    int arity;
    const char *attrs[7];
} gop_rule;

#define UNARY(E, N) {N, HS_GOP_HLO, HS_OP_##E, 1, {NULL}}
#define BINARY(E, N) {N, HS_GOP_HLO, HS_OP_##E, 2, {NULL}}
static const gop_rule k_rules[] = {
    UNARY(ABS, "abs"),
    UNARY(NEGATE, "negate"),
    UNARY(EXP, "exponential"),
    UNARY(EXPM1, "exponential-minus-one"),
    UNARY(LOG, "log"),
    UNARY(LOG1P, "log-plus-one"),
    UNARY(SQRT, "sqrt"),
    UNARY(RSQRT, "rsqrt"),
    UNARY(TANH, "tanh"),
    UNARY(LOGISTIC, "logistic"),
    UNARY(ERF, "erf"),
    UNARY(SIGN, "sign"),
    UNARY(FLOOR, "floor"),
    UNARY(CEIL, "ceil"),
    UNARY(COS, "cosine"),
    UNARY(SIN, "sine"),
    UNARY(NOT, "not"),
    BINARY(ADD, "add"),
    BINARY(SUBTRACT, "subtract"),
    BINARY(MULTIPLY, "multiply"),
    BINARY(DIVIDE, "divide"),
    BINARY(MAXIMUM, "maximum"),
    BINARY(MINIMUM, "minimum"),
    BINARY(POWER, "power"),
    BINARY(REMAINDER, "remainder"),
    BINARY(AND, "and"),
    BINARY(OR, "or"),
    BINARY(XOR, "xor"),
    {"compare", HS_GOP_HLO, HS_OP_COMPARE, 2, {"direction", NULL}},
    {"select", HS_GOP_HLO, HS_OP_SELECT, 3, {NULL}},
    {"convert", HS_GOP_HLO, HS_OP_CONVERT, 1, {"type", NULL}},
    {"broadcast", HS_GOP_HLO, HS_OP_BROADCAST, 1, {"shape", "dimensions"}},
    {"reshape", HS_GOP_HLO, HS_OP_RESHAPE, 1, {"shape", NULL}},
    {"transpose", HS_GOP_HLO, HS_OP_TRANSPOSE, 1, {"dimensions", NULL}},
    {"slice", HS_GOP_HLO, HS_OP_SLICE, 1, {"start", "limit", "stride"}},
    {"concatenate", HS_GOP_HLO, HS_OP_CONCATENATE, -1, {"dimension", NULL}},
    {"dot", HS_GOP_HLO, HS_OP_DOT, 2,
     {"lhs_contracting_dims", "rhs_contracting_dims", "lhs_batch_dims",
      "rhs_batch_dims"}},
    {"reduce", HS_GOP_HLO, HS_OP_REDUCE, 1, {"dimensions", "reducer"}},
    {"constant", HS_GOP_HLO, HS_OP_CONSTANT, 0, {"value", "shape"}},
    {"iota", HS_GOP_HLO, HS_OP_IOTA, 0, {"shape", "dimension"}},
    {"convolution", HS_GOP_HLO, HS_OP_CONVOLUTION, 2,
     {"window_strides", "padding_low", "padding_high", "rhs_dilation",
      "feature_group_count", "dim_labels"}},
    {"reduce-window", HS_GOP_HLO, HS_OP_REDUCE_WINDOW, 1,
     {"window_dimensions", "window_strides", "padding_low", "padding_high",
      "reducer"}},
    {"batch-norm-inference", HS_GOP_HLO, HS_OP_BATCH_NORM_INFERENCE, 5,
     {"epsilon", "feature_index"}},
    {"place_to_host", HS_GOP_PLACE_TO_HOST, HS_OP_CUSTOM_CALL, 1, {NULL}},
    {"place_to_device", HS_GOP_PLACE_TO_DEVICE, HS_OP_CUSTOM_CALL, 1,
     {NULL}},
};
#undef UNARY
#undef BINARY
#define N_RULES (int)(sizeof k_rules / sizeof k_rules[0])

static const char *const k_param_keys[] = {"shape", "init", "values", NULL};
static const char *const k_inits[] = {"uniform", "zeros", "ones", NULL};
static const char *const k_op_keys[] = {"name", "op", "args", "attrs",
                                        "scope", NULL};
static const char *const k_directions[] = {"EQ", "NE", "LT", "LE",
                                           "GT", "GE", NULL};
static const char *const k_reducers[] = {"add", "max", "min", "multiply",
                                         NULL};
static const hs_opcode k_reducer_ops[] = {HS_OP_ADD, HS_OP_MAXIMUM,
                                          HS_OP_MINIMUM, HS_OP_MULTIPLY};
static const char *const k_dtypes[] = {"f32", "s32", "pred", "bf16", "f16",
                                       NULL};
static const hs_dtype k_dtype_vals[] = {HS_F32, HS_S32, HS_PRED, HS_BF16,
                                        HS_F16};

/* A name of the graph's namespace: "x", a param or an op so far. */
typedef struct names {
    int n;
    const char **v; /* NULL-terminated for js_closest */
    hs__name_index ix; /* name -> position in v */
} names;

static int names_find(const names *ns, const char *s)
{
    return hs__name_index_get(&ns->ix, s);
}

bool hs__graph_identifier(const char *s)
{
    if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
        return false;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') ||
              (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

/* A param's name may be a state_dict path ("self_attn.q_proj.weight",
 * "0.bias"): an identifier, or segments joined by '.'. */
static bool valid_param_name(const char *s)
{
    if (strchr(s, '.') == NULL)
        return hs__graph_identifier(s);
    return hs__valid_module_path(s, 200);
}

static bool add_name(js_walker *w, names *ns, const char *name,
                     const char *key, bool param)
{
    if (param && (!valid_param_name(name) || strlen(name) > 200))
        return js_fail(w, HS_ERR_INVALID, key,
                       "expected a param name: names of letters, digits and "
                       "'_' joined by '.' (a state_dict path, at most 200 "
                       "long), got \"%s\"",
                       name);
    if (!param && (!hs__graph_identifier(name) || strlen(name) > 64))
        return js_fail(w, HS_ERR_INVALID, key,
                       "expected a name of letters, digits and '_' (not "
                       "starting with a digit, at most 64 long), got \"%s\"",
                       name);
    if (names_find(ns, name) >= 0)
        return js_fail(w, HS_ERR_INVALID, key,
                       "the name \"%s\" is already used (by \"x\", a param "
                       "or an earlier op)",
                       name);
    hs__name_index_put(&ns->ix, name, ns->n);
    ns->v[ns->n++] = name;
    ns->v[ns->n] = NULL;
    return true;
}

/* "values": every element of the param, row-major (an exported buffer:
 * a running mean, a rotary frequency table). Excludes "init". */
static bool parse_values(js_walker *w, const json_t *param, hs_arena *a,
                         int64_t n, hs_graph_param *gp)
{
    const json_t *vs = json_object_get(param, "values");
    if (!vs)
        return true;
    if (json_object_get(param, "init"))
        return js_fail(w, HS_ERR_INVALID, "init",
                       "a param has either \"init\" or \"values\", not both");
    if (!json_is_array(vs) || (int64_t)json_array_size(vs) != n)
        return js_fail(w, HS_ERR_INVALID, "values",
                       "expected an array of %lld numbers (the shape's "
                       "elements, row-major)%s",
                       (long long)n, json_is_array(vs) ? ", got another "
                                                         "count" : "");
    float *v = hs_arena_alloc(a, (size_t)(n ? n : 1) * sizeof *v);
    if (!v)
        return js_fail(w, HS_ERR_NOMEM, NULL, "out of host memory");
    size_t mark = js_push_key(w, "values");
    bool ok = true;
    for (int64_t i = 0; i < n && ok; i++) {
        const json_t *e = json_array_get(vs, (size_t)i);
        if (!json_is_number(e)) {
            size_t m2 = js_push_index(w, (size_t)i);
            ok = js_fail(w, HS_ERR_INVALID, NULL, "expected a number");
            js_pop(w, m2);
        } else {
            v[i] = (float)json_number_value(e);
        }
    }
    js_pop(w, mark);
    gp->values = v;
    gp->init = HS_INIT_VALUES;
    return ok;
}

/* "scope": the op's module path for op_name ("layers.3/self_attn"):
 * segments of [A-Za-z0-9_.*-] joined by '/'; "" is the layer itself. */
static bool parse_scope(js_walker *w, const json_t *op, hs_arena *a,
                        hs_graph_op *g)
{
    const char *s = NULL;
    if (!js_get_string(w, op, "scope", false, NULL, &s))
        return false;
    g->scope = NULL;
    if (!s)
        return true;
    bool ok = strlen(s) <= 200 && s[0] != '/';
    for (const char *c = s; *c && ok; c++)
        ok = *c == '_' || *c == '.' || *c == '*' || *c == '-' ||
             (*c == '/' && c[1] != '/' && c[1] != '\0') ||
             (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
             (*c >= '0' && *c <= '9');
    if (!ok)
        return js_fail(w, HS_ERR_INVALID, "scope",
                       "expected a module path (names of letters, digits, "
                       "'_', '.', '-' joined by '/', at most 200 long), got "
                       "\"%s\"",
                       s);
    g->scope = hs_arena_strdup(a, s);
    return g->scope != NULL || js_fail(w, HS_ERR_NOMEM, NULL,
                                       "out of host memory");
}

static bool parse_params(js_walker *w, const json_t *obj, hs_arena *a,
                         const hs_model_limits *limits, hs_block *blk,
                         names *ns)
{
    const json_t *ps = json_object_get(obj, "params");
    if (!ps)
        return true;
    size_t mark = js_push_key(w, "params");
    if (!js_expect_object(w, ps, "the graph's params ({name: {\"shape\": "
                                 "[...]}})")) {
        js_pop(w, mark);
        return false;
    }
    blk->gparams = hs_arena_alloc(a, (json_object_size(ps) + 1) *
                                         sizeof *blk->gparams);
    const char *key;
    json_t *v;
    bool ok = blk->gparams != NULL;
    json_object_foreach((json_t *)ps, key, v) {
        if (!ok)
            break;
        hs_graph_param *gp = &blk->gparams[blk->n_gparams];
        int64_t dims[HS_MAX_RANK];
        int rank = 0, init = 0;
        ok = add_name(w, ns, key, key, true);
        size_t m2 = js_push_key(w, key);
        ok = ok && js_expect_object(w, v, "a param ({\"shape\": [...]})") &&
             js_check_keys(w, v, k_param_keys) &&
             js_get_int_array(w, v, "shape", true, 1, INT64_MAX, HS_MAX_RANK,
                              dims, &rank) &&
             js_get_enum(w, v, "init", false, 0, k_inits, &init);
        int64_t n = 1;
        if (ok) {
            int64_t cap = limits->max_tensor_elements;
            for (int i = 0; i < rank; i++)
                n = hs__mul_capped(n, dims[i], cap);
            if (n > cap)
                ok = js_fail(w, HS_ERR_LIMIT, "shape",
                             "the param has more than %lld elements (limit "
                             "max_tensor_elements)",
                             (long long)limits->max_tensor_elements);
        }
        if (ok) {
            gp->name = hs_arena_strdup(a, key);
            gp->shape = hs_shape_make(HS_F32, rank, dims);
            gp->init = init == 0   ? HS_INIT_UNIFORM
                       : init == 1 ? HS_INIT_ZEROS
                                   : HS_INIT_ONES;
            ok = parse_values(w, v, a, n, gp);
            if (ok)
                blk->n_gparams++;
        }
        js_pop(w, m2);
    }
    js_pop(w, mark);
    return ok;
}

static const gop_rule *find_rule(js_walker *w, const json_t *op)
{
    const char *s;
    if (!js_get_string(w, op, "op", true, NULL, &s))
        return NULL;
    for (int i = 0; i < N_RULES; i++)
        if (strcmp(k_rules[i].name, s) == 0)
            return &k_rules[i];
    const char *rule_names[N_RULES + 2];
    for (int i = 0; i < N_RULES; i++)
        rule_names[i] = k_rules[i].name;
    rule_names[N_RULES] = "scan"; /* graph_scan_desc.c */
    rule_names[N_RULES + 1] = NULL;
    const char *near = js_closest(s, rule_names);
    hs_opcode any;
    if (hs_opcode_parse(s, strlen(s), &any))
        js_fail(w, HS_ERR_INVALID, "op",
                "the HLO opcode \"%s\" is not available in a graph block",
                s);
    else if (near)
        js_fail(w, HS_ERR_INVALID, "op",
                "unknown op \"%s\" (did you mean \"%s\"?)", s, near);
    else
        js_fail(w, HS_ERR_INVALID, "op",
                "unknown op \"%s\"; expected an HLO opcode name (add, "
                "multiply, dot, ...), place_to_host / place_to_device or "
                "scan",
                s);
    return NULL;
}

static bool parse_args(js_walker *w, const json_t *op, hs_arena *a,
                       const gop_rule *r, const names *ns, hs_graph_op *g)
{
    const json_t *args = json_object_get(op, "args");
    if (!args) {
        if (r->arity == 0)
            return true;
        return js_fail(w, HS_ERR_INVALID, "args",
                       "missing required key 'args' (a list of names)");
    }
    if (!json_is_array(args))
        return js_fail(w, HS_ERR_INVALID, "args",
                       "expected an array of names");
    size_t n = json_array_size(args);
    if (r->arity >= 0 && n != (size_t)r->arity)
        return js_fail(w, HS_ERR_INVALID, "args",
                       "%s takes %d argument%s, got %zu", r->name, r->arity,
                       r->arity == 1 ? "" : "s", n);
    if (r->arity < 0 && n == 0)
        return js_fail(w, HS_ERR_INVALID, "args",
                       "%s takes at least one argument", r->name);
    g->args = hs_arena_alloc(a, (n + 1) * sizeof *g->args);
    if (!g->args)
        return js_fail(w, HS_ERR_NOMEM, NULL, "out of host memory");
    size_t mark = js_push_key(w, "args");
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        size_t m2 = js_push_index(w, i);
        const json_t *e = json_array_get(args, i);
        if (!json_is_string(e)) {
            ok = js_fail(w, HS_ERR_INVALID, NULL, "expected a name (string)");
        } else if (names_find(ns, json_string_value(e)) < 0) {
            const char *s = json_string_value(e);
            const char *near = js_closest(s, ns->v);
            if (near)
                ok = js_fail(w, HS_ERR_INVALID, NULL,
                             "unknown argument \"%s\" (did you mean \"%s\"?); "
                             "an argument names \"x\", a param or an "
                             "earlier op",
                             s, near);
            else
                ok = js_fail(w, HS_ERR_INVALID, NULL,
                             "unknown argument \"%s\"; an argument names "
                             "\"x\", a param or an earlier op",
                             s);
        } else {
            g->args[i] = hs_arena_strdup(a, json_string_value(e));
        }
        js_pop(w, m2);
    }
    js_pop(w, mark);
    g->n_args = (int)n;
    return ok;
}

/* The shape attr of broadcast, reshape, constant and iota. */
static bool shape_attr_fits(js_walker *w, const hs_graph_op *g,
                            int64_t cap)
{
    int64_t n = 1;
    for (int i = 0; i < g->n_shape; i++)
        n = hs__mul_capped(n, g->shape[i], cap);
    if (n <= cap)
        return true;
    return js_fail(w, HS_ERR_LIMIT, "shape",
                   "the shape has more than %lld elements (limit "
                   "max_tensor_elements)",
                   (long long)cap);
}

static bool parse_attrs(js_walker *w, const json_t *op, hs_arena *a,
                        const gop_rule *r, const hs_model_limits *limits,
                        hs_graph_op *g)
{
    const json_t *at = json_object_get(op, "attrs");
    json_t *tmp = NULL;
    if (!at)
        at = tmp = json_object();
    size_t mark = js_push_key(w, "attrs");
    const char *known[8] = {NULL};
    for (int i = 0; i < 7 && r->attrs[i]; i++)
        known[i] = r->attrs[i];
    int idx = 0;
    int64_t rank_max = HS_MAX_RANK - 1;
    bool ok = js_expect_object(w, at, "the op's attrs") &&
              js_check_keys(w, at, known);
    g->n_shape = g->n_dims = g->n_start = g->n_limit = g->n_stride = -1;
    g->n_lc = g->n_rc = g->n_lb = g->n_rb = -1;
    g->opcode = r->opcode;
    if (ok) {
        switch (r->opcode) {
        case HS_OP_COMPARE:
            ok = js_get_enum(w, at, "direction", true, 0, k_directions, &idx);
            g->direction = (hs_direction)(HS_DIR_EQ + idx);
            break;
        case HS_OP_CONVERT:
            ok = js_get_enum(w, at, "type", true, 0, k_dtypes, &idx);
            g->dtype = k_dtype_vals[idx];
            break;
        case HS_OP_BROADCAST:
        case HS_OP_RESHAPE:
            ok = js_get_int_array(w, at, "shape", true, 1, INT64_MAX,
                                  HS_MAX_RANK, g->shape, &g->n_shape) &&
                 js_get_int_array(w, at, "dimensions", false, 0, rank_max,
                                  HS_MAX_RANK, g->dims, &g->n_dims);
            break;
        case HS_OP_TRANSPOSE:
            ok = js_get_int_array(w, at, "dimensions", true, 0, rank_max,
                                  HS_MAX_RANK, g->dims, &g->n_dims);
            break;
        case HS_OP_SLICE:
            ok = js_get_int_array(w, at, "start", true, 0, INT64_MAX,
                                  HS_MAX_RANK, g->start, &g->n_start) &&
                 js_get_int_array(w, at, "limit", true, 0, INT64_MAX,
                                  HS_MAX_RANK, g->limit, &g->n_limit) &&
                 js_get_int_array(w, at, "stride", false, 1, INT64_MAX,
                                  HS_MAX_RANK, g->stride, &g->n_stride);
            break;
        case HS_OP_CONCATENATE:
            ok = js_get_int(w, at, "dimension", true, 0, 0, rank_max,
                            &g->dimension);
            break;
        case HS_OP_DOT:
            ok = js_get_int_array(w, at, "lhs_contracting_dims", false, 0,
                                  rank_max, HS_MAX_RANK, g->lc, &g->n_lc) &&
                 js_get_int_array(w, at, "rhs_contracting_dims", false, 0,
                                  rank_max, HS_MAX_RANK, g->rc, &g->n_rc) &&
                 js_get_int_array(w, at, "lhs_batch_dims", false, 0,
                                  rank_max, HS_MAX_RANK, g->lb, &g->n_lb) &&
                 js_get_int_array(w, at, "rhs_batch_dims", false, 0,
                                  rank_max, HS_MAX_RANK, g->rb, &g->n_rb);
            break;
        case HS_OP_REDUCE:
            ok = js_get_int_array(w, at, "dimensions", true, 0, rank_max,
                                  HS_MAX_RANK, g->dims, &g->n_dims) &&
                 js_get_enum(w, at, "reducer", false, 0, k_reducers, &idx);
            g->reducer = k_reducer_ops[idx];
            break;
        case HS_OP_CONSTANT:
            ok = js_get_number(w, at, "value", true, 0, false, &g->value) &&
                 js_get_int_array(w, at, "shape", false, 1, INT64_MAX,
                                  HS_MAX_RANK, g->shape, &g->n_shape);
            break;
        case HS_OP_IOTA:
            ok = js_get_int_array(w, at, "shape", true, 1, INT64_MAX,
                                  HS_MAX_RANK, g->shape, &g->n_shape) &&
                 js_get_int(w, at, "dimension", false, 0, 0, rank_max,
                            &g->dimension);
            break;
        case HS_OP_CONVOLUTION:
        case HS_OP_REDUCE_WINDOW:
        case HS_OP_BATCH_NORM_INFERENCE:
            ok = hs__vision_attrs_parse(w, at, a, g);
            break;
        default:
            break;
        }
    }
    if (ok)
        ok = shape_attr_fits(w, g, limits->max_tensor_elements);
    js_pop(w, mark);
    if (tmp)
        json_decref(tmp);
    return ok;
}

static bool ns_has(const void *ns, const char *s)
{
    return names_find(ns, s) >= 0;
}

static const char *const *ns_known(const void *ns)
{
    return ((const names *)ns)->v;
}

int hs__graph_op_n_defs(const hs_graph_op *g)
{
    return g->kind == HS_GOP_SCAN ? g->scan->n_carry + g->scan->n_ys : 1;
}

const char *hs__graph_op_def(const hs_graph_op *g, int k)
{
    return g->kind == HS_GOP_SCAN ? g->scan->outputs[k] : g->name;
}

/* A scan op (graph_scan_desc.c): its outputs join the namespace; its own
 * name only names the loop, and is checked like an op name. */
static bool parse_scan_op(js_walker *w, const json_t *op, hs_arena *a,
                          const hs_model_limits *limits, bool allow_scan,
                          names *ns, hs_graph_op *g)
{
    const char *name = NULL;
    if (!allow_scan)
        return js_fail(w, HS_ERR_UNSUPPORTED, "op",
                       "a scan body cannot hold another scan (nested scans "
                       "are not supported)");
    if (!js_get_string(w, op, "name", true, NULL, &name))
        return false;
    if (!hs__graph_identifier(name) || strlen(name) > 64)
        return js_fail(w, HS_ERR_INVALID, "name",
                       "expected a name of letters, digits and '_' (not "
                       "starting with a digit, at most 64 long), got \"%s\"",
                       name);
    if (!hs__graph_scan_parse(w, op, a, limits, ns_has, ns_known, ns, g) ||
        !parse_scope(w, op, a, g))
        return false;
    g->name = hs_arena_strdup(a, name);
    g->kind = HS_GOP_SCAN;
    size_t mark = js_push_key(w, "outputs");
    bool ok = g->name != NULL;
    for (int k = 0; ok && k < hs__graph_op_n_defs(g); k++) {
        size_t m2 = js_push_index(w, (size_t)k);
        ok = add_name(w, ns, g->scan->outputs[k], NULL, false);
        js_pop(w, m2);
    }
    js_pop(w, mark);
    return ok;
}

static bool parse_ops(js_walker *w, const json_t *obj, hs_arena *a,
                      const hs_model_limits *limits, bool allow_scan,
                      hs_block *blk, names *ns)
{
    const json_t *ops = json_object_get(obj, "ops");
    if (!ops)
        return js_fail(w, HS_ERR_INVALID, "ops",
                       "missing required key 'ops' (a list of {name, op, "
                       "args, attrs})");
    if (!json_is_array(ops) || json_array_size(ops) == 0)
        return js_fail(w, HS_ERR_INVALID, "ops",
                       "expected a non-empty array of ops");
    size_t n = json_array_size(ops);
    blk->ops = hs_arena_alloc(a, n * sizeof *blk->ops);
    if (!blk->ops)
        return js_fail(w, HS_ERR_NOMEM, NULL, "out of host memory");
    size_t mark = js_push_key(w, "ops");
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        size_t m2 = js_push_index(w, i);
        const json_t *op = json_array_get(ops, i);
        hs_graph_op *g = &blk->ops[i];
        const char *name = NULL;
        const gop_rule *r = NULL;
        if (json_is_object(op) &&
            json_is_string(json_object_get(op, "op")) &&
            strcmp(json_string_value(json_object_get(op, "op")), "scan") ==
                0) {
            ok = parse_scan_op(w, op, a, limits, allow_scan, ns, g);
            if (ok) {
                g->path = hs_arena_strdup(a, w->path);
                blk->n_ops++;
            }
            js_pop(w, m2);
            continue;
        }
        ok = js_expect_object(w, op, "an op ({name, op, args, attrs})") &&
             js_check_keys(w, op, k_op_keys) &&
             js_get_string(w, op, "name", true, NULL, &name) &&
             (r = find_rule(w, op)) != NULL &&
             parse_args(w, op, a, r, ns, g) &&
             parse_attrs(w, op, a, r, limits, g) &&
             parse_scope(w, op, a, g) && add_name(w, ns, name, "name", false);
        if (ok) {
            g->name = ns->v[ns->n - 1] = hs_arena_strdup(a, name);
            if (g->name) /* the index keeps the copy, not the JSON's text */
                hs__name_index_put(&ns->ix, g->name, ns->n - 1);
            g->path = hs_arena_strdup(a, w->path);
            g->kind = r->kind;
            g->opcode = r->opcode;
            blk->n_ops++;
        }
        js_pop(w, m2);
    }
    js_pop(w, mark);
    return ok;
}

/* How many names a graph may define: its inputs, params, ops and the
 * outputs of its scans (so the namespace is sized once). */
static size_t names_capacity(const json_t *obj, int n_inputs)
{
    const json_t *ps = json_object_get(obj, "params");
    const json_t *ops = json_object_get(obj, "ops");
    size_t cap = 2 + (size_t)n_inputs +
                 (json_is_object(ps) ? json_object_size(ps) : 0);
    for (size_t i = 0; json_is_array(ops) && i < json_array_size(ops); i++) {
        const json_t *outs = json_object_get(json_array_get(ops, i),
                                             "outputs");
        cap += 1 + (json_is_array(outs) ? json_array_size(outs) : 0);
    }
    return cap;
}

/* The params and ops of a graph over its inputs ("x", or a scan body's
 * blk->inputs); ns is left for the caller to resolve results in and to
 * free. */
static bool graph_parse(js_walker *w, const json_t *obj, hs_arena *a,
                        const hs_model_limits *limits, hs_block *blk,
                        bool allow_scan, names *ns)
{
    static const char *const k_x[] = {"x"};
    const char *const *inputs = blk->n_inputs ? (const char *const *)
                                                    blk->inputs
                                              : k_x;
    int n_inputs = blk->n_inputs ? blk->n_inputs : 1;
    size_t cap = names_capacity(obj, n_inputs);
    *ns = (names){0, hs_arena_alloc(a, cap * sizeof(const char *)), {0}};
    if (!ns->v || !hs__name_index_init(&ns->ix, cap))
        return js_fail(w, HS_ERR_NOMEM, NULL, "out of host memory");
    ns->v[0] = NULL;
    for (int i = 0; i < n_inputs; i++) {
        if (names_find(ns, inputs[i]) >= 0)
            return js_fail(w, HS_ERR_INVALID, NULL,
                           "the input name \"%s\" is used twice",
                           inputs[i]);
        hs__name_index_put(&ns->ix, inputs[i], ns->n);
        ns->v[ns->n++] = inputs[i];
        ns->v[ns->n] = NULL;
    }
    return parse_params(w, obj, a, limits, blk, ns) &&
           parse_ops(w, obj, a, limits, allow_scan, blk, ns);
}

/* s is a name the graph defines (an input, a param or an op); the error
 * is at the walker's path. */
static bool resolve_name(js_walker *w, const names *ns, const char *s,
                         const char *what)
{
    if (names_find(ns, s) >= 0)
        return true;
    const char *near = js_closest(s, ns->v);
    if (near)
        return js_fail(w, HS_ERR_INVALID, NULL,
                       "unknown %s \"%s\" (did you mean \"%s\"?)", what, s,
                       near);
    return js_fail(w, HS_ERR_INVALID, NULL,
                   "unknown %s \"%s\"; it names an input, a param or an "
                   "op of the graph",
                   what, s);
}

bool hs__graph_body_parse(js_walker *w, const json_t *obj, hs_arena *a,
                          const hs_model_limits *limits, hs_block *blk,
                          const char *const *result_keys,
                          const char ***results, int *n_results)
{
    names ns;
    bool ok = graph_parse(w, obj, a, limits, blk, false, &ns);
    for (int k = 0; ok && result_keys[k]; k++) {
        const json_t *list = json_object_get(obj, result_keys[k]);
        size_t n = json_is_array(list) ? json_array_size(list) : 0;
        if (!json_is_array(list)) {
            ok = js_fail(w, HS_ERR_INVALID, result_keys[k],
                         "expected a list of names of the body");
            break;
        }
        results[k] = hs_arena_alloc(a, (n + 1) * sizeof *results[k]);
        if (!results[k]) {
            ok = js_fail(w, HS_ERR_NOMEM, NULL, "out of host memory");
            break;
        }
        size_t mark = js_push_key(w, result_keys[k]);
        for (size_t i = 0; ok && i < n; i++) {
            size_t m2 = js_push_index(w, i);
            const json_t *e = json_array_get(list, i);
            if (!json_is_string(e))
                ok = js_fail(w, HS_ERR_INVALID, NULL,
                             "expected a name (string)");
            else
                ok = resolve_name(w, &ns, json_string_value(e), "name") &&
                     (results[k][i] = hs_arena_strdup(
                          a, json_string_value(e))) != NULL;
            js_pop(w, m2);
        }
        js_pop(w, mark);
        n_results[k] = (int)n;
    }
    hs__name_index_free(&ns.ix);
    return ok;
}

bool hs__graph_desc_parse(js_walker *w, const json_t *obj, hs_arena *a,
                          const hs_model_limits *limits, hs_block *blk)
{
    names ns;
    bool ok = graph_parse(w, obj, a, limits, blk, true, &ns);
    const char *out = NULL;
    ok = ok && js_get_string(w, obj, "output", false, NULL, &out);
    if (ok && !out) { /* the last op by default (a scan's last output) */
        const hs_graph_op *last = &blk->ops[blk->n_ops - 1];
        int n = hs__graph_op_n_defs(last);
        out = n ? hs__graph_op_def(last, n - 1) : last->name;
    }
    if (ok && names_find(&ns, out) < 0) {
        const char *near = js_closest(out, ns.v);
        if (near)
            ok = js_fail(w, HS_ERR_INVALID, "output",
                         "unknown output \"%s\" (did you mean \"%s\"?)",
                         out, near);
        else
            ok = js_fail(w, HS_ERR_INVALID, "output",
                         "unknown output \"%s\"; it names \"x\", a param or "
                         "an op",
                         out);
    }
    hs__name_index_free(&ns.ix);
    if (!ok)
        return false;
    blk->output = hs_arena_strdup(a, out);
    size_t mark = js_push_key(w, "output");
    blk->output_path = hs_arena_strdup(a, w->path);
    js_pop(w, mark);
    return true;
}
