/* scan.c - scan(fn, init, xs): fn traced once into a while body.
 *
 * The loop state is one tuple (s32 counter, carries..., xs..., ys
 * accumulators...). The accumulators' shapes are only known once fn has
 * been traced, so the body's parameter is created with the first three
 * groups, fn is traced, and then the parameter's tuple shape is extended
 * with the accumulators before their get-tuple-elements are made: earlier
 * get-tuple-elements index elements that do not move, so their shapes stay
 * right. See docs/SCAN.md. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_scan.h"

/* Everything one lowering needs, so helpers take one pointer. */
typedef struct scan_ctx {
    hs_builder *b; /* the caller's builder */
    const char *scope;
    const char *body_scope;
    const char *caller_scope; /* "" outside any scope */
    bool reverse;
    int64_t n; /* trip count */
    int n_carry, n_xs, n_ys;
    hs_instruction *const *init;
    hs_instruction *const *xs;
    hs_instruction *ys[HS_SCAN_MAX_YS]; /* body values, then stacked */
} scan_ctx;

static char *shape_text(const hs_shape *s, char *buf, size_t size)
{
    hs_shape_print(s, false, buf, size);
    return buf;
}

/* A computation name not yet used in m: "<scope>_<role>", with '/' and
 * other characters HLO names do not allow turned into '_', and ".k" added
 * when taken. */
static const char *fresh_name(hs_module *m, const char *scope,
                              const char *role, char *buf, size_t size)
{
    size_t k = 0;
    for (const char *c = scope; *c && k + 1 < size / 2; c++) {
        bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || *c == '_' || *c == '-';
        buf[k++] = ok ? *c : '_';
    }
    snprintf(buf + k, size - k, "_%s", role);
    size_t base = strlen(buf);
    for (int i = 1; hs_module_find_computation(m, buf); i++)
        snprintf(buf + base, size - base, ".%d", i);
    return buf;
}

/* Pushes the caller's scope (as one piece) then extra (when given). */
static void push_scopes(hs_builder *body, const scan_ctx *s, const char *extra)
{
    if (s->caller_scope[0])
        hs_builder_push_scope(body, s->caller_scope);
    if (extra && extra[0])
        hs_builder_push_scope(body, extra);
}

static void pop_scopes(hs_builder *body, const scan_ctx *s, const char *extra)
{
    if (extra && extra[0])
        hs_builder_pop_scope(body);
    if (s->caller_scope[0])
        hs_builder_pop_scope(body);
}

/* ---- checks ---------------------------------------------------------------- */

static bool check_inputs(scan_ctx *s, int64_t length)
{
    hs_builder *b = s->b;
    char t0[128], t1[128];
    for (int k = 0; k < s->n_carry; k++)
        if (hs_shape_is_tuple(&s->init[k]->shape)) {
            hs_builder_fail(b, HS_ERR_INVALID,
                            "scan %s: init carry %d (%s) is a tuple; pass "
                            "its elements as separate carries",
                            s->scope, k, s->init[k]->name);
            return false;
        }
    for (int j = 0; j < s->n_xs; j++) {
        const hs_shape *x = &s->xs[j]->shape;
        if (hs_shape_is_tuple(x) || x->rank < 1) {
            hs_builder_fail(b, HS_ERR_SHAPE,
                            "scan %s: xs %d (%s) is %s; xs need a leading "
                            "axis to scan over",
                            s->scope, j, s->xs[j]->name,
                            shape_text(x, t0, sizeof t0));
            return false;
        }
        if (j > 0 && x->dims[0] != s->xs[0]->shape.dims[0]) {
            hs_builder_fail(b, HS_ERR_SHAPE,
                            "scan %s: xs %d (%s) has leading size %" PRId64
                            " (%s) but xs 0 (%s) has %" PRId64 " (%s)",
                            s->scope, j, s->xs[j]->name, x->dims[0],
                            shape_text(x, t0, sizeof t0), s->xs[0]->name,
                            s->xs[0]->shape.dims[0],
                            shape_text(&s->xs[0]->shape, t1, sizeof t1));
            return false;
        }
    }
    if (s->n_xs == 0 && length <= 0) {
        hs_builder_fail(b, HS_ERR_INVALID,
                        "scan %s: no xs and no length; give the number of "
                        "steps in options.length",
                        s->scope);
        return false;
    }
    int64_t n = s->n_xs ? s->xs[0]->shape.dims[0] : length;
    if (s->n_xs && length > 0 && length != n) {
        hs_builder_fail(b, HS_ERR_SHAPE,
                        "scan %s: length %" PRId64 " but the xs have "
                        "leading size %" PRId64,
                        s->scope, length, n);
        return false;
    }
    if (n <= 0 || n > INT32_MAX) {
        hs_builder_fail(b, HS_ERR_INVALID,
                        "scan %s: %" PRId64 " steps; a scan needs 1 to "
                        "2^31-1 steps (its counter is s32)",
                        s->scope, n);
        return false;
    }
    s->n = n;
    return true;
}

/* Every new carry has the shape it entered with; ys are arrays of an
 * element type the accumulators can be zeroed in. Errors go on body. */
static bool check_step(hs_builder *body, scan_ctx *s, hs_scan_step *st)
{
    char t0[128], t1[128];
    for (int k = 0; k < s->n_carry; k++) {
        const hs_instruction *c = st->new_carry[k];
        if (!c) {
            hs_builder_fail(body, HS_ERR_INVALID,
                            "scan %s: the body returned no carry %d",
                            s->scope, k);
            return false;
        }
        if (!hs_shape_compatible(&c->shape, &s->init[k]->shape)) {
            hs_builder_fail(body, HS_ERR_SHAPE,
                            "scan %s: carry %d changes shape in the body: it "
                            "enters as %s and leaves as %s",
                            s->scope, k,
                            shape_text(&s->init[k]->shape, t0, sizeof t0),
                            shape_text(&c->shape, t1, sizeof t1));
            return false;
        }
    }
    if (st->n_ys < 0 || st->n_ys > HS_SCAN_MAX_YS) {
        hs_builder_fail(body, HS_ERR_LIMIT,
                        "scan %s: %d ys; at most %d", s->scope, st->n_ys,
                        HS_SCAN_MAX_YS);
        return false;
    }
    for (int j = 0; j < st->n_ys; j++) {
        const hs_instruction *y = st->ys[j];
        if (!y) {
            hs_builder_fail(body, HS_ERR_INVALID,
                            "scan %s: y %d is NULL", s->scope, j);
            return false;
        }
        hs_dtype t = y->shape.dtype;
        if (t != HS_F32 && t != HS_S32 && t != HS_PRED) {
            hs_builder_fail(body, HS_ERR_UNSUPPORTED,
                            "scan %s: y %d is %s; ys must be f32, s32 or "
                            "pred arrays",
                            s->scope, j, shape_text(&y->shape, t0, sizeof t0));
            return false;
        }
        if (y->shape.rank + 1 > HS_MAX_RANK) {
            hs_builder_fail(body, HS_ERR_SHAPE,
                            "scan %s: y %d has rank %d; stacking it needs "
                            "rank %d > %d",
                            s->scope, j, y->shape.rank, y->shape.rank + 1,
                            HS_MAX_RANK);
            return false;
        }
    }
    return true;
}

/* ---- shapes ------------------------------------------------------------------ */

/* [n, dims of s...] */
static hs_shape stacked_shape(const hs_shape *s, int64_t n)
{
    int64_t dims[HS_MAX_RANK];
    dims[0] = n;
    for (int d = 0; d < s->rank; d++)
        dims[d + 1] = s->dims[d];
    return hs_shape_make(s->dtype, s->rank + 1, dims);
}

/* (s32[], carries..., xs..., accumulators for ys[0..n_ys)...) */
static hs_shape state_shape(hs_arena *a, const scan_ctx *s, int n_ys)
{
    int n = 1 + s->n_carry + s->n_xs + n_ys;
    hs_shape *e = calloc((size_t)n, sizeof *e);
    if (!e)
        return hs_shape_scalar(HS_TUPLE); /* n_elems 0: caught as NOMEM */
    e[0] = hs_shape_scalar(HS_S32);
    for (int k = 0; k < s->n_carry; k++)
        e[1 + k] = s->init[k]->shape;
    for (int j = 0; j < s->n_xs; j++)
        e[1 + s->n_carry + j] = s->xs[j]->shape;
    for (int j = 0; j < n_ys; j++)
        e[1 + s->n_carry + s->n_xs + j] =
            stacked_shape(&s->ys[j]->shape, s->n);
    hs_shape t = hs_shape_tuple(a, n, e);
    free(e);
    return t;
}

static bool state_ok(hs_builder *b, const hs_shape *t, int n)
{
    if (t->dtype == HS_TUPLE && t->n_elems == n && t->elems)
        return true;
    hs_builder_fail(b, HS_ERR_NOMEM, "scan: out of host memory");
    return false;
}

/* starts = {pos, 0, ..., 0} for an array of the given rank; *zero is made
 * on first use and shared. */
static bool slice_starts(hs_builder *body, hs_instruction *pos, int rank,
                         hs_instruction **zero, hs_instruction **starts)
{
    if (rank > 1 && !*zero)
        *zero = hs_b_const_s32(body, 0);
    starts[0] = pos;
    for (int d = 1; d < rank; d++)
        starts[d] = *zero;
    return hs_builder_ok(body);
}

/* ---- the body ------------------------------------------------------------------ */

/* Traces the body computation; returns it (finished) or NULL with the error
 * carried over to s->b. */
static hs_computation *trace_body(scan_ctx *s, hs_scan_fn fn, void *user)
{
    hs_module *m = hs_builder_module(s->b);
    char name[160];
    hs_builder *body =
        hs_builder_new(m, fresh_name(m, s->scope, "body", name, sizeof name),
                       false);
    if (!body) {
        hs_builder_fail(s->b, HS_ERR_NOMEM, "scan: out of host memory");
        return NULL;
    }
    int nc = s->n_carry, nx = s->n_xs;
    hs_instruction **v = calloc((size_t)(2 * (nc + nx) + 1), sizeof *v);
    if (!v) {
        hs_builder_free(body);
        hs_builder_fail(s->b, HS_ERR_NOMEM, "scan: out of host memory");
        return NULL;
    }
    hs_instruction **carry = v, **x = v + nc, **xs = v + nc + nx;
    hs_instruction **new_carry = v + nc + 2 * nx;

    push_scopes(body, s, s->scope);
    hs_shape st0 = state_shape(m->arena, s, 0);
    hs_instruction *p = state_ok(body, &st0, 1 + nc + nx)
                            ? hs_b_parameter(body, 0, &st0, NULL)
                            : NULL;
    hs_instruction *counter = hs_b_get_tuple_element(body, p, 0);
    hs_instruction *pos = counter, *zero = NULL;
    if (s->reverse)
        pos = hs_b_binary(body, HS_OP_SUBTRACT,
                          hs_b_const_s32(body, (int32_t)(s->n - 1)), counter);
    for (int k = 0; k < nc; k++)
        carry[k] = hs_b_get_tuple_element(body, p, 1 + k);
    for (int j = 0; j < nx && hs_builder_ok(body); j++) {
        const hs_shape *xsh = &s->xs[j]->shape;
        hs_instruction *starts[HS_MAX_RANK];
        int64_t sizes[HS_MAX_RANK];
        sizes[0] = 1;
        for (int d = 1; d < xsh->rank; d++)
            sizes[d] = xsh->dims[d];
        xs[j] = hs_b_get_tuple_element(body, p, 1 + nc + j);
        if (slice_starts(body, pos, xsh->rank, &zero, starts))
            x[j] = hs_b_reshape(
                body, hs_b_dynamic_slice(body, xs[j], starts, sizes),
                xsh->rank - 1, xsh->dims + 1);
    }
    pop_scopes(body, s, s->scope);

    hs_scan_step step = {.index = pos, .n_carry = nc, .carry = carry,
                         .n_xs = nx, .x = x, .new_carry = new_carry};
    if (hs_builder_ok(body)) {
        push_scopes(body, s, s->body_scope);
        fn(body, &step, user);
        pop_scopes(body, s, s->body_scope);
    }

    hs_instruction *root = NULL;
    if (hs_builder_ok(body) && check_step(body, s, &step)) {
        s->n_ys = step.n_ys;
        memcpy(s->ys, step.ys, sizeof step.ys[0] * (size_t)step.n_ys);
        push_scopes(body, s, s->scope);
        /* Now the ys' shapes are known: extend the state with their
         * accumulators, then read them. */
        int n_state = 1 + nc + nx + s->n_ys;
        hs_shape st = state_shape(m->arena, s, s->n_ys);
        hs_instruction **out = calloc((size_t)n_state, sizeof *out);
        if (!out)
            hs_builder_fail(body, HS_ERR_NOMEM, "scan: out of host memory");
        if (out && state_ok(body, &st, n_state)) {
            p->shape = st;
            out[0] = hs_b_binary(body, HS_OP_ADD, counter,
                                 hs_b_const_s32(body, 1));
            for (int k = 0; k < nc; k++)
                out[1 + k] = new_carry[k];
            for (int j = 0; j < nx; j++)
                out[1 + nc + j] = xs[j];
            for (int j = 0; j < s->n_ys && hs_builder_ok(body); j++) {
                const hs_shape *ysh = &s->ys[j]->shape;
                hs_shape one = stacked_shape(ysh, 1);
                hs_instruction *acc =
                    hs_b_get_tuple_element(body, p, 1 + nc + nx + j);
                hs_instruction *starts[HS_MAX_RANK];
                if (slice_starts(body, pos, one.rank, &zero, starts))
                    out[1 + nc + nx + j] = hs_b_dynamic_update_slice(
                        body, acc,
                        hs_b_reshape(body, s->ys[j], one.rank, one.dims),
                        starts);
            }
            root = hs_b_tuple(body, out, n_state);
        }
        free(out);
        pop_scopes(body, s, s->scope);
    }
    free(v);
    hs_error e;
    hs_computation *c = hs_builder_finish(body, root, &e);
    if (!c)
        hs_builder_fail(s->b, e.status, "%s", e.message);
    return c;
}

/* counter < N over the full loop state. */
static hs_computation *trace_condition(scan_ctx *s, const hs_shape *state)
{
    hs_module *m = hs_builder_module(s->b);
    char name[160];
    hs_builder *cb =
        hs_builder_new(m, fresh_name(m, s->scope, "cond", name, sizeof name),
                       false);
    if (!cb) {
        hs_builder_fail(s->b, HS_ERR_NOMEM, "scan: out of host memory");
        return NULL;
    }
    push_scopes(cb, s, s->scope);
    hs_instruction *p = hs_b_parameter(cb, 0, state, NULL);
    hs_instruction *lt =
        hs_b_compare(cb, HS_DIR_LT, hs_b_get_tuple_element(cb, p, 0),
                     hs_b_const_s32(cb, (int32_t)s->n));
    pop_scopes(cb, s, s->scope);
    hs_error e;
    hs_computation *c = hs_builder_finish(cb, lt, &e);
    if (!c)
        hs_builder_fail(s->b, e.status, "%s", e.message);
    return c;
}

/* ---- the loop in the caller's computation ---------------------------------------- */

static hs_instruction *zeros(hs_builder *b, const hs_shape *s)
{
    hs_instruction *z = s->dtype == HS_S32    ? hs_b_const_s32(b, 0)
                        : s->dtype == HS_PRED ? hs_b_const_pred(b, false)
                                              : hs_b_const_f32(b, 0);
    return hs_b_broadcast(b, z, s, NULL, 0);
}

static hs_instruction *emit_loop(scan_ctx *s, hs_computation *cond,
                                 hs_computation *body,
                                 hs_instruction **carry_out,
                                 hs_instruction **ys_out)
{
    hs_builder *b = s->b;
    int nc = s->n_carry, nx = s->n_xs;
    int n_state = 1 + nc + nx + s->n_ys;
    hs_instruction **init = calloc((size_t)n_state, sizeof *init);
    if (!init) {
        hs_builder_fail(b, HS_ERR_NOMEM, "scan: out of host memory");
        return NULL;
    }
    init[0] = hs_b_const_s32(b, 0);
    for (int k = 0; k < nc; k++)
        init[1 + k] = s->init[k];
    for (int j = 0; j < nx; j++)
        init[1 + nc + j] = s->xs[j];
    for (int j = 0; j < s->n_ys; j++) {
        hs_shape acc = stacked_shape(&s->ys[j]->shape, s->n);
        init[1 + nc + nx + j] = zeros(b, &acc);
    }
    hs_instruction *w =
        hs_b_while(b, cond, body, hs_b_tuple(b, init, n_state));
    free(init);
    if (!w)
        return NULL;
    /* The trip count is known by construction; the while-loop-trip-count
     * pass derives the same number from the loop's pattern. */
    char config[96];
    snprintf(config, sizeof config, "{\"known_trip_count\":{\"n\":\"%" PRId64
             "\"}}", s->n);
    w->known_trip_count = s->n;
    w->backend_config = hs_arena_strdup(hs_builder_module(b)->arena, config);
    for (int k = 0; k < nc; k++) {
        hs_instruction *c = hs_b_get_tuple_element(b, w, 1 + k);
        if (carry_out)
            carry_out[k] = c;
    }
    for (int j = 0; j < s->n_ys; j++) {
        hs_instruction *y = hs_b_get_tuple_element(b, w, 1 + nc + nx + j);
        if (ys_out)
            ys_out[j] = y;
    }
    return hs_builder_ok(b) ? w : NULL;
}

hs_instruction *hs_scan(hs_builder *b, hs_scan_fn fn, void *user,
                        hs_instruction *const *init, int n_carry,
                        hs_instruction *const *xs, int n_xs,
                        const hs_scan_options *opts,
                        hs_instruction **carry_out, hs_instruction **ys_out,
                        int *n_ys)
{
    if (n_ys)
        *n_ys = 0;
    if (!hs_builder_ok(b) || n_carry < 0 || n_xs < 0 ||
        (n_carry && !init) || (n_xs && !xs))
        return NULL;
    for (int k = 0; k < n_carry; k++)
        if (!init[k])
            return NULL;
    for (int j = 0; j < n_xs; j++)
        if (!xs[j])
            return NULL;
    hs_scan_options o = {0};
    if (opts)
        o = *opts;
    scan_ctx s = {.b = b, .scope = o.scope ? o.scope : "scan",
                  .body_scope = o.body_scope,
                  .caller_scope = hs_builder_scope(b), .reverse = o.reverse,
                  .n_carry = n_carry, .n_xs = n_xs, .init = init, .xs = xs};
    if (!fn) {
        hs_builder_fail(b, HS_ERR_INVALID, "scan %s: no step function",
                        s.scope);
        return NULL;
    }
    if (!check_inputs(&s, o.length))
        return NULL;
    hs_computation *body = trace_body(&s, fn, user);
    if (!body)
        return NULL;
    hs_computation *cond = trace_condition(&s, &body->params[0]->shape);
    if (!cond)
        return NULL;
    hs_builder_push_scope(b, s.scope);
    hs_instruction *w = emit_loop(&s, cond, body, carry_out, ys_out);
    hs_builder_pop_scope(b);
    if (w && n_ys)
        *n_ys = s.n_ys;
    return w;
}
