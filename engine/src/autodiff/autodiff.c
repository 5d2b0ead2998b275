/*
 * autodiff.c - the reverse sweep: which instructions are active, cotangent
 * bookkeeping (sums for values with several users, per element for
 * tuples), the walk from the loss back to the differentiated inputs, and
 * the errors a user sees.
 *
 * Bookkeeping is indexed by instruction id (ids are unique and dense in a
 * module), sized by the module's next id when the differentiation starts:
 * instructions the rules add later are never looked up, because cotangents
 * only ever flow to operands of forward instructions.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff/autodiff_internal.h"
#include "ir/invariant.h"

struct hs_vjp {
    hs_builder *b;
    const hs_autodiff_options *opts;
    hs_computation *c;
    int n_ids;
    uint8_t *active;           /* by id */
    hs_instruction **ct;       /* by id: cotangent of an array value */
    hs_instruction ***ct_elem; /* by id: cotangents of a tuple's elements */
    hs_error *err;
    bool failed;
    /* op_name scopes: the prefix (opts->scope) and the forward op_name of
     * the instruction whose rule runs. */
    int depth;
    const char *scope_op_name;
};

static const hs_autodiff_options default_options = {.scope = "backward"};

hs_builder *hs__vjp_builder(const hs_vjp *v) { return v->b; }

const hs_autodiff_options *hs__vjp_options(const hs_vjp *v)
{
    return v->opts;
}

static bool known(const hs_vjp *v, const hs_instruction *x)
{
    return x && x->id >= 0 && x->id < v->n_ids && x->parent == v->c;
}

bool hs__vjp_active(const hs_vjp *v, const hs_instruction *x)
{
    return known(v, x) && v->active[x->id];
}

hs_instruction *hs__vjp_cotangent(const hs_vjp *v, const hs_instruction *y)
{
    return known(v, y) ? v->ct[y->id] : NULL;
}

hs_instruction *hs__vjp_cotangent_elem(const hs_vjp *v,
                                       const hs_instruction *y, int k)
{
    if (!known(v, y) || !v->ct_elem[y->id] || k < 0 ||
        k >= y->shape.n_elems)
        return NULL;
    return v->ct_elem[y->id][k];
}

static void pop_scopes(hs_vjp *v)
{
    while (v->depth > 0) {
        hs_builder_pop_scope(v->b);
        v->depth--;
    }
    v->scope_op_name = NULL;
}

void hs__vjp_fail(hs_vjp *v, const hs_instruction *y, hs_status s,
                  const char *fmt, ...)
{
    if (v->failed)
        return;
    char msg[sizeof v->err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* Out of the gradient scopes, so the message does not start with
     * "backward/...": it names the forward instruction itself. */
    pop_scopes(v);
    hs_builder_fail(v->b, s, "%s", msg);
    v->failed = true;
    if (v->err) {
        *v->err = *hs_builder_error(v->b);
        if (y)
            snprintf(v->err->instruction, sizeof v->err->instruction, "%s",
                     y->name);
    }
}

static bool same_array(const hs_shape *a, const hs_shape *b)
{
    return a->dtype != HS_TUPLE && hs_shape_compatible(a, b);
}

static hs_instruction *sum(hs_vjp *v, hs_instruction *acc, hs_instruction *g)
{
    return acc ? hs_b_binary(v->b, HS_OP_ADD, acc, g) : g;
}

/* A rule handing over a cotangent of the wrong shape is a bug in the rule:
 * a debug build stops there; a release build fails the gradient saying
 * which, which beats a shape error further down. */
static bool check_cotangent(hs_vjp *v, const hs_instruction *x,
                            const hs_shape *want, const hs_instruction *g)
{
    HS_ASSERT(same_array(want, &g->shape));
    if (same_array(want, &g->shape))
        return true;
    char a[128], b[128];
    hs_shape_print(want, false, a, sizeof a);
    hs_shape_print(&g->shape, false, b, sizeof b);
    hs__vjp_fail(v, x, HS_ERR_SHAPE,
                 "autodiff: internal error: cotangent %s for %s (%s) has "
                 "shape %s",
                 g->name, x->name, a, b);
    return false;
}

/* Mixed-precision operands (bf16 + f32 -> f32) take their cotangent in
 * their own type. */
static hs_instruction *to_type(hs_vjp *v, hs_instruction *g, hs_dtype t)
{
    if (g->shape.dtype == t || !hs_dtype_is_float(t) ||
        !hs_dtype_is_float(g->shape.dtype))
        return g;
    return hs_b_convert(v->b, g, t);
}

void hs__vjp_acc(hs_vjp *v, hs_instruction *x, hs_instruction *g)
{
    if (!g || v->failed || !hs__vjp_active(v, x))
        return;
    if (x->shape.dtype != HS_TUPLE && !(g = to_type(v, g, x->shape.dtype)))
        return;
    if (!check_cotangent(v, x, &x->shape, g))
        return;
    v->ct[x->id] = sum(v, v->ct[x->id], g);
}

void hs__vjp_acc_elem(hs_vjp *v, hs_instruction *t, int k, hs_instruction *g)
{
    if (!g || v->failed || !hs__vjp_active(v, t))
        return;
    /* Rules hand tuple elements only to tuples they built or read. */
    HS_ASSERT(t->shape.dtype == HS_TUPLE && k >= 0 && k < t->shape.n_elems);
    if (t->shape.dtype != HS_TUPLE || k < 0 || k >= t->shape.n_elems) {
        hs__vjp_fail(v, t, HS_ERR_INVALID,
                     "autodiff: internal error: %s has no tuple element %d",
                     t->name, k);
        return;
    }
    if (t->shape.elems[k].dtype != HS_TUPLE &&
        !(g = to_type(v, g, t->shape.elems[k].dtype)))
        return;
    if (!check_cotangent(v, t, &t->shape.elems[k], g))
        return;
    hs_instruction ***slot = &v->ct_elem[t->id];
    if (!*slot && !(*slot = calloc((size_t)t->shape.n_elems, sizeof **slot))) {
        hs__vjp_fail(v, t, HS_ERR_NOMEM, "autodiff: out of host memory");
        return;
    }
    (*slot)[k] = sum(v, (*slot)[k], g);
}

/* ------------------------------------------------------------------------ */
/* Activity                                                                 */
/* ------------------------------------------------------------------------ */

static bool holds_float(const hs_shape *s)
{
    if (s->dtype != HS_TUPLE)
        return hs_dtype_is_float(s->dtype);
    for (int k = 0; k < s->n_elems; k++)
        if (holds_float(&s->elems[k]))
            return true;
    return false;
}

/* Forward over instrs[0..last]: an instruction is active when it is
 * differentiated itself, or holds floating-point values computed from an
 * active operand. Integer and pred results (compare, iota, indices) stop
 * the gradient: their derivative is zero almost everywhere. */
static void mark_active(hs_vjp *v, int last)
{
    for (int k = 0; k <= last; k++) {
        hs_instruction *in = v->c->instrs[k];
        if (v->active[in->id] || !holds_float(&in->shape))
            continue;
        for (int o = 0; o < in->n_operands; o++)
            if (hs__vjp_active(v, in->operands[o])) {
                v->active[in->id] = 1;
                break;
            }
    }
}

/* ------------------------------------------------------------------------ */
/* The sweep                                                                */
/* ------------------------------------------------------------------------ */

static bool has_cotangent(const hs_vjp *v, const hs_instruction *in)
{
    if (v->ct[in->id])
        return true;
    hs_instruction **e = v->ct_elem[in->id];
    for (int k = 0; e && k < in->shape.n_elems; k++)
        if (e[k])
            return true;
    return false;
}

/* Gradient instructions of in go under "<prefix>/<in's op_name>". The
 * scope is re-pushed only when the op_name changes, which is rare: a
 * layer's instructions are contiguous. */
static void enter_scope(hs_vjp *v, const hs_instruction *in)
{
    const char *name = in->op_name && in->op_name[0] ? in->op_name : NULL;
    bool prefixed = v->opts->scope && v->opts->scope[0];
    int base = prefixed ? 1 : 0;
    if (v->depth > base && name && v->scope_op_name &&
        (name == v->scope_op_name || strcmp(name, v->scope_op_name) == 0))
        return;
    if (v->depth == base && !name)
        return;
    while (v->depth > base) {
        hs_builder_pop_scope(v->b);
        v->depth--;
    }
    v->scope_op_name = name;
    if (name) {
        hs_builder_push_scope(v->b, name);
        v->depth++;
    }
}

static const char *op_label(const hs_instruction *in)
{
    if (in->opcode == HS_OP_CUSTOM_CALL && in->custom_call_target)
        return in->custom_call_target;
    if (in->opcode == HS_OP_UNKNOWN && in->unknown_opcode)
        return in->unknown_opcode;
    return hs_opcode_name(in->opcode);
}

static void differentiate(hs_vjp *v, hs_instruction *in)
{
    if (in->n_operands == 0)
        return; /* a parameter or other leaf: its cotangent is the result */
    hs_vjp_rule rule = hs__vjp_rule(in->opcode);
    if (!rule) {
        hs__vjp_fail(v, in, HS_ERR_UNSUPPORTED,
                     "autodiff: no gradient rule for %s (instruction %s%s%s)",
                     op_label(in), in->name, in->op_name ? ", op_name " : "",
                     in->op_name ? in->op_name : "");
        return;
    }
    if (in->shape.dtype != HS_TUPLE && in->shape.dtype != HS_F32) {
        hs__vjp_fail(v, in, HS_ERR_UNSUPPORTED,
                     "autodiff: only f32 values are differentiated; %s is "
                     "%s",
                     in->name, hs_dtype_name(in->shape.dtype));
        return;
    }
    enter_scope(v, in);
    rule(v, in);
    if (!v->failed && !hs_builder_ok(v->b)) {
        v->failed = true;
        if (v->err) {
            *v->err = *hs_builder_error(v->b);
            if (!v->err->instruction[0])
                snprintf(v->err->instruction, sizeof v->err->instruction,
                         "%s", in->name);
        }
    }
}

/* Position of every instruction of c in definition order, by id (-1 for
 * ids of other computations). */
static int *positions_by_id(const hs_computation *c, int n_ids)
{
    int *pos = malloc(sizeof *pos * ((size_t)n_ids + 1));
    if (!pos)
        return NULL;
    for (int k = 0; k <= n_ids; k++)
        pos[k] = -1;
    for (int k = 0; k < c->n_instrs; k++) {
        int id = c->instrs[k]->id;
        if (id >= 0 && id < n_ids)
            pos[id] = k;
    }
    return pos;
}

static hs_status check_inputs(hs_builder *b, hs_instruction *loss,
                              hs_instruction *const *wrt, int n_wrt,
                              hs_instruction **grads, hs_error *err)
{
    hs_error local;
    if (!err)
        err = &local;
    if (!b)
        return hs_error_set(err, HS_ERR_INVALID, "autodiff: no builder");
    if (!hs_builder_ok(b)) {
        *err = *hs_builder_error(b);
        return err->status;
    }
    hs_computation *c = hs_builder_computation(b);
    const char *problem = NULL;
    const hs_instruction *bad = loss;
    if (!loss || loss->parent != c)
        problem = "the loss is not an instruction of the builder's "
                  "computation";
    else if (loss->shape.dtype != HS_F32 || loss->shape.rank != 0)
        problem = "the loss must be an f32 scalar";
    else if (n_wrt < 0 || (n_wrt > 0 && (!wrt || !grads)))
        problem = "bad list of differentiated values";
    for (int k = 0; !problem && k < n_wrt; k++) {
        bad = wrt[k];
        if (!wrt[k] || wrt[k]->parent != c)
            problem = "a differentiated value is not an instruction of the "
                      "builder's computation";
        else if (wrt[k]->shape.dtype != HS_F32)
            problem = "only f32 arrays can be differentiated";
    }
    if (!problem)
        return HS_OK;
    hs_builder_fail(b, HS_ERR_INVALID, "autodiff: %s%s%s", problem,
                    bad ? ": " : "", bad ? bad->name : "");
    *err = *hs_builder_error(b);
    if (bad)
        snprintf(err->instruction, sizeof err->instruction, "%s", bad->name);
    return HS_ERR_INVALID;
}

static void free_vjp(hs_vjp *v)
{
    if (v->ct_elem)
        for (int k = 0; k < v->n_ids; k++)
            free(v->ct_elem[k]);
    free(v->ct_elem);
    free(v->ct);
    free(v->active);
}

/* The sweep from seeds: outs[k] receives cotangent cts[k] (NULL: none). */
static hs_status sweep(hs_builder *b, hs_instruction *const *outs,
                       hs_instruction *const *cts, int n_outs,
                       hs_instruction *const *wrt, int n_wrt,
                       const hs_autodiff_options *opts, bool seed_one,
                       hs_instruction **grads, hs_error *err)
{
    hs_error local;
    if (!err)
        err = &local;
    hs_error_clear(err);

    /* A NULL scope means the default one. */
    hs_autodiff_options o = opts ? *opts : default_options;
    if (!o.scope)
        o.scope = default_options.scope;
    hs_vjp v = {.b = b, .opts = &o, .err = err};
    v.c = hs_builder_computation(b);
    v.n_ids = v.c->module->next_id;
    v.active = calloc((size_t)v.n_ids + 1, 1);
    v.ct = calloc((size_t)v.n_ids + 1, sizeof *v.ct);
    v.ct_elem = calloc((size_t)v.n_ids + 1, sizeof *v.ct_elem);
    if (!v.active || !v.ct || !v.ct_elem) {
        free_vjp(&v);
        hs_builder_fail(b, HS_ERR_NOMEM, "autodiff: out of host memory");
        *err = *hs_builder_error(b);
        return HS_ERR_NOMEM;
    }
    int *pos = positions_by_id(v.c, v.n_ids);
    if (!pos) {
        free_vjp(&v);
        hs_builder_fail(b, HS_ERR_NOMEM, "autodiff: out of host memory");
        *err = *hs_builder_error(b);
        return HS_ERR_NOMEM;
    }
    int last = -1;
    for (int k = 0; k < n_outs; k++)
        if (pos[outs[k]->id] > last)
            last = pos[outs[k]->id];
    for (int k = 0; k < n_wrt; k++) {
        if (pos[wrt[k]->id] > last) {
            free(pos);
            hs__vjp_fail(&v, wrt[k], HS_ERR_INVALID,
                         "autodiff: %s is defined after the loss %s, so the "
                         "loss cannot depend on it",
                         wrt[k]->name, n_outs ? outs[0]->name : "?");
            free_vjp(&v);
            return err->status;
        }
        v.active[wrt[k]->id] = 1;
    }
    free(pos);
    mark_active(&v, last);

    if (v.opts->scope && v.opts->scope[0]) {
        hs_builder_push_scope(b, v.opts->scope);
        v.depth = 1;
    }
    if (seed_one && v.active[outs[0]->id])
        v.ct[outs[0]->id] = hs_b_const_f32(b, 1.0f); /* d loss / d loss */
    for (int k = 0; !seed_one && k < n_outs; k++)
        if (cts[k])
            hs__vjp_acc(&v, outs[k], cts[k]);
    for (int k = last; k >= 0 && !v.failed && hs_builder_ok(b); k--) {
        hs_instruction *in = v.c->instrs[k];
        if (v.active[in->id] && has_cotangent(&v, in))
            differentiate(&v, in);
    }
    pop_scopes(&v);
    /* Inputs the loss does not depend on get zeros, so every gradient is
     * an instruction the caller can return. */
    for (int k = 0; k < n_wrt && !v.failed; k++) {
        grads[k] = v.ct[wrt[k]->id];
        if (!grads[k])
            grads[k] = hs__ad_zeros(b, &wrt[k]->shape);
    }
    if (!v.failed && !hs_builder_ok(b)) {
        v.failed = true;
        *err = *hs_builder_error(b);
    }
    free_vjp(&v);
    if (v.failed) {
        for (int k = 0; k < n_wrt; k++)
            grads[k] = NULL;
        return err->status ? err->status : HS_ERR_INVALID;
    }
    return HS_OK;
}

hs_status hs_autodiff_grad(hs_builder *b, hs_instruction *loss,
                           hs_instruction *const *wrt, int n_wrt,
                           const hs_autodiff_options *opts,
                           hs_instruction **grads, hs_error *err)
{
    for (int k = 0; grads && k < n_wrt; k++)
        grads[k] = NULL;
    hs_status st = check_inputs(b, loss, wrt, n_wrt, grads, err);
    if (st != HS_OK)
        return st;
    hs_instruction *none = NULL;
    return sweep(b, &loss, &none, 1, wrt, n_wrt, opts, true, grads, err);
}

hs_status hs_autodiff_vjp(hs_builder *b, hs_instruction *const *outs,
                          hs_instruction *const *cts, int n_outs,
                          hs_instruction *const *wrt, int n_wrt,
                          const hs_autodiff_options *opts,
                          hs_instruction **grads, hs_error *err)
{
    for (int k = 0; grads && k < n_wrt; k++)
        grads[k] = NULL;
    hs_error local;
    if (!err)
        err = &local;
    if (!b)
        return hs_error_set(err, HS_ERR_INVALID, "autodiff: no builder");
    if (!hs_builder_ok(b)) {
        *err = *hs_builder_error(b);
        return err->status;
    }
    hs_computation *c = hs_builder_computation(b);
    for (int k = 0; k < n_outs; k++) {
        const hs_instruction *o = outs[k], *g = cts[k];
        if (!o || o->parent != c || o->shape.dtype == HS_TUPLE ||
            (g && (g->parent != c || !same_array(&o->shape, &g->shape)))) {
            hs_builder_fail(b, HS_ERR_INVALID,
                            "autodiff: output %d (%s) and its cotangent "
                            "do not match",
                            k, o ? o->name : "?");
            *err = *hs_builder_error(b);
            return HS_ERR_INVALID;
        }
    }
    for (int k = 0; k < n_wrt; k++)
        if (!wrt[k] || wrt[k]->parent != c || wrt[k]->shape.dtype != HS_F32) {
            hs_builder_fail(b, HS_ERR_INVALID,
                            "autodiff: only f32 arrays of the builder's "
                            "computation can be differentiated%s%s",
                            wrt[k] ? ": " : "", wrt[k] ? wrt[k]->name : "");
            *err = *hs_builder_error(b);
            return HS_ERR_INVALID;
        }
    return sweep(b, outs, cts, n_outs, wrt, n_wrt, opts, false, grads, err);
}

hs_status hs_autodiff_computation(hs_builder *b, const hs_computation *fwd,
                                  hs_instruction *const *args, int n_args,
                                  const int *wrt_params, int n_wrt,
                                  const hs_autodiff_options *opts,
                                  hs_instruction **value,
                                  hs_instruction **grads, hs_error *err)
{
    hs_error local;
    if (!err)
        err = &local;
    if (value)
        *value = NULL;
    if (!b || !fwd) {
        if (b)
            hs_builder_fail(b, HS_ERR_INVALID,
                            "autodiff: no computation to differentiate");
        return hs_error_set(err, HS_ERR_INVALID,
                            "autodiff: no computation to differentiate");
    }
    hs_instruction **wrt = calloc((size_t)(n_wrt > 0 ? n_wrt : 1), sizeof *wrt);
    if (!wrt || n_wrt < 0) {
        free(wrt);
        hs_builder_fail(b, n_wrt < 0 ? HS_ERR_INVALID : HS_ERR_NOMEM,
                        "autodiff: bad list of differentiated parameters");
        *err = *hs_builder_error(b);
        return err->status;
    }
    for (int k = 0; k < n_wrt; k++) {
        int p = wrt_params ? wrt_params[k] : -1;
        if (p < 0 || p >= n_args) {
            free(wrt);
            hs_builder_fail(b, HS_ERR_INVALID,
                            "autodiff: %s has no parameter %d", fwd->name, p);
            *err = *hs_builder_error(b);
            return HS_ERR_INVALID;
        }
        wrt[k] = args[p];
    }
    hs_instruction *root = hs_autodiff_inline(b, fwd, args, n_args, NULL);
    if (!root) {
        free(wrt);
        *err = *hs_builder_error(b);
        return err->status ? err->status : HS_ERR_INVALID;
    }
    hs_status st = hs_autodiff_grad(b, root, wrt, n_wrt, opts, grads, err);
    free(wrt);
    if (st == HS_OK && value)
        *value = root;
    return st;
}
