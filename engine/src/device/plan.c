/*
 * plan.c - turns each computation reachable from the entry into a plan once
 * per run: the kernel of every live instruction, the frame slots of its
 * operands, which slots die after it, and its roofline cost. Everything the
 * interpreter cannot execute is rejected here, before any work is done.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"
#include "ir/strbuf.h"
#include "numerics/element_types.h"

/* Every type numerics/element_types.h computes: pred, the integers of 8
 * to 64 bits and the floats but complex and sub-byte ones. */
bool dev_dtype_executable(hs_dtype t)
{
    return elem_class_of(t) != ELEM_NONE;
}

/* Why t is not executable, for the refusal. */
static const char *not_executable_why(hs_dtype t)
{
    if (t == HS_C64 || t == HS_C128)
        return " (complex types are not executed)";
    if (hs_dtype_bits(t) > 0 && hs_dtype_bits(t) < 8)
        return " (sub-byte types are not executed yet)";
    return "";
}

int dev_esize(hs_dtype t) { return hs_dtype_bits(t) / 8; }

void dev_store_index(hs_dtype t, void *dst, int64_t at, int64_t j)
{
    switch (t) {
    case HS_F32: ((float *)dst)[at] = (float)j; break;
    case HS_S32: ((int32_t *)dst)[at] = (int32_t)j; break;
    case HS_S64: ((int64_t *)dst)[at] = j; break;
    default:
        elem_store(t, HS_S64, &j, (char *)dst + at * dev_esize(t), 1);
        break;
    }
}

/* The first leaf of s with an unbounded dynamic dimension ('?'). */
static const hs_shape *first_unbounded_leaf(const hs_shape *s)
{
    if (s->dtype != HS_TUPLE) {
        for (int d = 0; d < s->rank; d++)
            if (s->dims[d] < 0)
                return s;
        return NULL;
    }
    for (int i = 0; i < s->n_elems; i++) {
        const hs_shape *b = first_unbounded_leaf(&s->elems[i]);
        if (b)
            return b;
    }
    return NULL;
}

static const hs_shape *first_bad_leaf(const hs_shape *s)
{
    if (s->dtype != HS_TUPLE)
        return dev_dtype_executable(s->dtype) ? NULL : s;
    for (int i = 0; i < s->n_elems; i++) {
        const hs_shape *b = first_bad_leaf(&s->elems[i]);
        if (b)
            return b;
    }
    return NULL;
}

/* An instruction whose array has no elements runs as dev_k_empty, as XLA's
 * ZeroSizedHloElimination replaces it by an empty constant; not one that
 * calls a computation, moves data between memories or is a custom-call. */
static bool runs_as_empty(const hs_instruction *in)
{
    if (in->shape.dtype == HS_TUPLE || hs_shape_elements(&in->shape) != 0 ||
        dev_is_host_transfer(in))
        return false;
    switch (in->opcode) {
    case HS_OP_PARAMETER:
    case HS_OP_CONSTANT:
    case HS_OP_WHILE:
    case HS_OP_CALL:
    case HS_OP_CONDITIONAL:
    case HS_OP_CUSTOM_CALL:
    case HS_OP_COPY_START:
    case HS_OP_COPY_DONE:
        return false;
    default:
        return true;
    }
}

/* Checks what the kernels rely on and that the plan cannot express. */
static hs_status check_instruction(dev_ctx *x, const hs_instruction *in)
{
    char what[160];
    /* Kernels index with int64 arithmetic that an accepted size cannot
     * overflow; a module that skipped the verifier is checked here. */
    hs_error size_err;
    if (hs_shape_check_size(&in->shape, &size_err) != HS_OK) {
        snprintf(x->err->instruction, sizeof x->err->instruction, "%s",
                 in->name);
        return hs_error_set(x->err, size_err.status, "instruction %s: %s",
                            in->name, size_err.message);
    }
    const hs_shape *unbounded = first_unbounded_leaf(&in->shape);
    if (unbounded) {
        dev_unsupported(x, in, "an unbounded dynamic dimension");
        char *text = hs_shape_string(unbounded, false);
        size_t len = strlen(x->err->message);
        snprintf(x->err->message + len, sizeof x->err->message - len,
                 " (%s: '?' has no size to run at; a bounded '<=N' runs at N)",
                 text ? text : "its shape");
        free(text);
        return x->err->status;
    }
    dev_kernel k = dev_kernel_for(in);
    if (!k && in->opcode != HS_OP_PARAMETER) {
        if (in->opcode == HS_OP_CUSTOM_CALL && dev_is_topk_call(in)) {
            dev_unsupported(x, in, "custom-call target 'TopK'");
            size_t len = strlen(x->err->message);
            snprintf(x->err->message + len, sizeof x->err->message - len,
                     " (%s)", dev_topk_call_why_not(in));
            return x->err->status;
        } else if (in->opcode == HS_OP_CUSTOM_CALL)
            snprintf(what, sizeof what, "custom-call target '%s'",
                     in->custom_call_target ? in->custom_call_target : "");
        else {
            snprintf(what, sizeof what, "opcode '%s'",
                     in->opcode == HS_OP_UNKNOWN && in->unknown_opcode
                         ? in->unknown_opcode
                         : hs_opcode_name(in->opcode));
            dev_unsupported(x, in, what);
            /* The kernel table says why. */
            size_t len = strlen(x->err->message);
            snprintf(x->err->message + len, sizeof x->err->message - len,
                     " (%s)", dev_kernel_entry_of(in->opcode)->not_run);
            return x->err->status;
        }
        return dev_unsupported(x, in, what);
    }
    int arity = hs_opcode_arity(in->opcode);
    int need = in->opcode == HS_OP_DYNAMIC_UPDATE_SLICE ? 2
               : (in->opcode == HS_OP_DYNAMIC_SLICE ||
                  in->opcode == HS_OP_CONCATENATE ||
                  in->opcode == HS_OP_CUSTOM_CALL)
                   ? 1
                   : 0;
    if ((arity >= 0 && in->n_operands != arity) || in->n_operands < need)
        return hs_error_set(x->err, HS_ERR_INVALID,
                            "instruction %s: %s with %d operands", in->name,
                            hs_opcode_name(in->opcode), in->n_operands);
    const hs_shape *bad = first_bad_leaf(&in->shape);
    if (in->opcode == HS_OP_COPY_START || in->opcode == HS_OP_COPY_DONE) {
        /* (destination, source, u32[] context): the context is opaque. */
        const hs_shape *t = in->opcode == HS_OP_COPY_START
                                ? &in->shape
                                : &in->operands[0]->shape;
        if (t->dtype != HS_TUPLE || t->n_elems < 2 ||
            t->elems[0].dtype == HS_TUPLE ||
            !hs_shape_compatible(&t->elems[0], &t->elems[1]))
            return dev_unsupported(x, in, "a copy-start that does not "
                                          "return (destination, source, "
                                          "context)");
        bad = first_bad_leaf(&t->elems[0]);
    }
    for (int i = 0; !bad && i < in->n_operands; i++)
        if (in->opcode != HS_OP_COPY_DONE)
            bad = first_bad_leaf(&in->operands[i]->shape);
    if (bad) {
        snprintf(what, sizeof what, "element type '%s'%s",
                 hs_dtype_name(bad->dtype), not_executable_why(bad->dtype));
        return dev_unsupported(x, in, what);
    }
    switch (in->opcode) {
    case HS_OP_CONSTANT:
        if (in->shape.dtype == HS_TUPLE || !in->literal)
            return dev_unsupported(x, in, "a constant without decoded data");
        break;
    case HS_OP_DOT:
        if (!in->dot)
            return dev_unsupported(x, in, "a dot without dimensions");
        if (in->shape.dtype == HS_PRED)
            return dev_unsupported(x, in, "a dot with a pred result");
        break;
    case HS_OP_BATCH_NORM_TRAINING: case HS_OP_BATCH_NORM_INFERENCE:
    case HS_OP_BATCH_NORM_GRAD:
        /* f16, bf16 and f8 compute in f32 (widen.c) */
        if (in->n_operands < 1 ||
            elem_class_of(in->operands[0]->shape.dtype) != ELEM_F32)
            return dev_unsupported(x, in, "a batch norm that is not of a "
                                          "float type (f32, f16, bf16, f8)");
        break;
    case HS_OP_REDUCE: {
        int n = in->n_operands / 2;
        if (in->n_operands < 2 || in->n_operands % 2 || in->n_called < 1)
            return hs_error_set(x->err, HS_ERR_INVALID,
                                "instruction %s: reduce needs inputs and "
                                "as many init values, and a reducer",
                                in->name);
        bool ok = n == 1 ? in->shape.dtype != HS_TUPLE
                         : in->shape.dtype == HS_TUPLE &&
                               in->shape.n_elems == n;
        for (int k = 0; ok && k < n; k++) {
            const hs_shape *a = &in->operands[k]->shape;
            const hs_shape *r = n == 1 ? &in->shape : &in->shape.elems[k];
            const hs_shape *a0 = &in->operands[0]->shape;
            ok = a->dtype != HS_TUPLE && r->dtype != HS_TUPLE &&
                 a->rank == a0->rank &&
                 memcmp(a->dims, a0->dims,
                        sizeof(int64_t) * (size_t)a->rank) == 0 &&
                 hs_shape_elements(&in->operands[n + k]->shape) == 1 &&
                 in->operands[n + k]->shape.dtype == a->dtype &&
                 r->dtype == a->dtype;
        }
        if (!ok)
            return dev_unsupported(x, in, "a reduce whose inputs, init "
                                          "values and results do not "
                                          "match");
        break;
    }
    case HS_OP_CUSTOM_CALL:
        if (dev_is_spmd_shape_call(in))
            return dev_spmd_check(x, in);
        break;
    case HS_OP_FUSION:
        if (in->n_called < 1 || !in->called[0])
            return hs_error_set(x->err, HS_ERR_INVALID,
                                "instruction %s: fusion without calls",
                                in->name);
        break;
    case HS_OP_PAD:
        if (in->shape.dtype == HS_TUPLE ||
            in->operands[0]->shape.rank != in->shape.rank ||
            hs_shape_elements(&in->operands[1]->shape) != 1 ||
            in->operands[1]->shape.dtype != in->shape.dtype ||
            in->operands[0]->shape.dtype != in->shape.dtype)
            return dev_unsupported(x, in, "a pad whose operand, padding "
                                          "value and result do not match");
        break;
    case HS_OP_RESHAPE: case HS_OP_BITCAST: case HS_OP_BITCAST_CONVERT:
        if (in->shape.dtype == HS_TUPLE ||
            hs_shape_bytes(&in->shape) !=
                hs_shape_bytes(&in->operands[0]->shape))
            return dev_unsupported(x, in, "a size-changing bitcast");
        break;
    case HS_OP_REDUCE_PRECISION:
        if (in->n_dims != 2 || in->dims[0] < 1 || in->dims[1] < 0 ||
            in->dims[0] > 64 || in->dims[1] > 64)
            return hs_error_set(x->err, HS_ERR_INVALID,
                                "instruction %s: reduce-precision needs "
                                "exponent_bits from 1 to 64 and "
                                "mantissa_bits from 0 to 64", in->name);
        break;
    case HS_OP_WHILE:
        if (in->n_called < 2)
            return hs_error_set(x->err, HS_ERR_INVALID,
                                "instruction %s: while needs condition and "
                                "body", in->name);
        break;
    case HS_OP_CALL:
        if (in->n_called < 1)
            return hs_error_set(x->err, HS_ERR_INVALID,
                                "instruction %s: call without to_apply",
                                in->name);
        break;
    case HS_OP_SLICE:
        if (!in->slice)
            return hs_error_set(x->err, HS_ERR_INVALID,
                                "instruction %s: slice without bounds",
                                in->name);
        break;
    default:
        break;
    }
    return HS_OK;
}

/* ---- what blocks a run ----------------------------------------------------- */

enum { MAX_KINDS = 32, SHOWN_KINDS = 6 };

typedef struct blocker {
    char what[256];
    int64_t count;
    const char *first; /* the first instruction it blocks */
    hs_status status;
} blocker;

/* The part of a refusal after "instruction NAME: ", without the common
 * tail, so that refusals of the same kind compare equal. */
static void kind_of(const char *message, const char *name, char *what,
                    size_t size)
{
    const char *p = message;
    size_t n = strlen(name);
    if (strncmp(p, "instruction ", 12) == 0 && strncmp(p + 12, name, n) == 0 &&
        strncmp(p + 12 + n, ": ", 2) == 0)
        p += 14 + n;
    size_t len = strlen(p);
    if (len >= size)
        len = size - 1;
    memcpy(what, p, len);
    what[len] = '\0';
    char *tail = strstr(what, " cannot be executed on the emulated device");
    if (tail)
        memmove(tail, tail + 42, strlen(tail + 42) + 1);
}

static int by_count(const void *a, const void *b)
{
    const blocker *x = a, *y = b;
    return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

hs_status hs_device_check_report(const hs_module *m, char **report,
                                 hs_error *err)
{
    if (report)
        *report = NULL;
    if (!m)
        return hs_error_set(err, HS_ERR_INVALID, "device check: no module");
    blocker kinds[MAX_KINDS];
    int n_kinds = 0;
    int64_t total = 0, other = 0;
    hs_error e;
    dev_ctx x = {.m = m, .err = &e};
    for (int c = 0; c < m->n_comps; c++) {
        const hs_computation *comp = m->comps[c];
        for (int k = 0; comp && k < comp->n_instrs; k++) {
            const hs_instruction *in = comp->instrs[k];
            hs_error_clear(&e);
            if (check_instruction(&x, in) == HS_OK)
                continue;
            total++;
            char what[256];
            kind_of(e.message, in->name, what, sizeof what);
            int j = 0;
            while (j < n_kinds && strcmp(kinds[j].what, what) != 0)
                j++;
            if (j == n_kinds && n_kinds == MAX_KINDS) {
                other++;
                continue;
            }
            if (j == n_kinds) {
                memcpy(kinds[j].what, what, sizeof what);
                kinds[j].count = 0;
                kinds[j].first = in->name;
                kinds[j].status = e.status;
                n_kinds++;
            }
            kinds[j].count++;
        }
    }
    if (total == 0)
        return HS_OK;
    qsort(kinds, (size_t)n_kinds, sizeof kinds[0], by_count);
    /* A growing string: err's message keeps what fits, *report all. */
    hs_buf msg = {0};
    hs__buf_printf(&msg, "%lld instruction%s cannot be executed on the "
                         "emulated device:",
                   (long long)total, total == 1 ? "" : "s");
    for (int j = 0; j < n_kinds && j < SHOWN_KINDS; j++)
        hs__buf_printf(&msg, "%s %s x%lld (first: %s)", j ? ";" : "",
                       kinds[j].what, (long long)kinds[j].count,
                       kinds[j].first);
    if (n_kinds > SHOWN_KINDS || other)
        hs__buf_printf(&msg, "; and %lld more",
                       (long long)(other + (n_kinds > SHOWN_KINDS
                                                ? n_kinds - SHOWN_KINDS
                                                : 0)));
    char *text = NULL;
    if (hs__buf_finish(&msg, &text, NULL, "the device check", err) != HS_OK)
        return HS_ERR_NOMEM;
    hs_error_set(err, kinds[0].status, "%s", text);
    if (report)
        *report = text;
    else
        free(text);
    if (err)
        snprintf(err->instruction, sizeof err->instruction, "%s",
                 kinds[0].first);
    return kinds[0].status;
}

hs_status hs_device_check(const hs_module *m, hs_error *err)
{
    return hs_device_check_report(m, NULL, err);
}

/* Pointer -> instruction index, open addressing. */
typedef struct index_map {
    const hs_instruction **keys;
    int *vals;
    size_t mask;
} index_map;

static size_t hash_ptr(const void *p)
{
    uintptr_t v = (uintptr_t)p;
    v ^= v >> 17;
    v *= (uintptr_t)0xed5ad4bbU;
    v ^= v >> 11;
    return (size_t)v;
}

static int map_get(const index_map *m, const hs_instruction *in)
{
    for (size_t h = hash_ptr(in) & m->mask;; h = (h + 1) & m->mask) {
        if (m->keys[h] == in)
            return m->vals[h];
        if (!m->keys[h])
            return -1;
    }
}

static void *zalloc(dev_ctx *x, size_t n)
{
    void *p = hs_arena_alloc(x->arena, n ? n : 1);
    if (!p)
        dev_oom(x);
    return p;
}

static hs_status build_plan(dev_ctx *x, const hs_computation *c,
                            dev_plan *p);

dev_plan *dev_plan_of(dev_ctx *x, const hs_computation *c)
{
    int id = c->id;
    if (id < 0 || id >= x->m->n_comps || x->m->comps[id] != c) {
        for (id = 0; id < x->m->n_comps && x->m->comps[id] != c; id++)
            ;
        if (id == x->m->n_comps)
            return NULL;
    }
    return x->plans[id];
}

static hs_status plan_for(dev_ctx *x, const hs_computation *c, int depth,
                          dev_plan **out);

/* A fusion runs its compiled element-wise program when the fused
 * computation has that form, else its fused computation like a call. */
static hs_status plan_fusion(dev_ctx *x, const hs_instruction *in,
                             dev_step *s, int depth)
{
    const hs_computation *c = in->called[0];
    if (c->n_params != in->n_operands)
        return hs_error_set(x->err, HS_ERR_INVALID,
                            "instruction %s: fusion passes %d operands to "
                            "%s, which has %d parameters",
                            in->name, in->n_operands, c->name, c->n_params);
    for (int k = 0; k < c->n_params; k++) {
        if (c->params[k] &&
            hs_shape_compatible(&c->params[k]->shape,
                                &in->operands[k]->shape))
            continue;
        return hs_error_set(x->err, HS_ERR_INVALID,
                            "instruction %s: operand %d does not have the "
                            "shape of parameter %d of %s",
                            in->name, k, k, c->name);
    }
    if (!c->root || !hs_shape_compatible(&c->root->shape, &in->shape))
        return hs_error_set(x->err, HS_ERR_INVALID,
                            "instruction %s: its shape is not that of the "
                            "root of %s", in->name, c->name);
    s->data = dev_fusion_compile(x, in);
    if (s->data) {
        for (int k = 0; k < in->n_operands && k < 64; k++)
            if (hs_shape_bytes(&in->operands[k]->shape) ==
                    hs_shape_bytes(&in->shape) &&
                dev_space_index(in->operands[k]->shape.memory_space) ==
                    dev_space_index(in->shape.memory_space) &&
                hs_reads_elementwise(in, k))
                s->in_place |= (uint64_t)1 << k;
        return HS_OK;
    }
    if (x->err->status != HS_OK)
        return x->err->status;
    return plan_for(x, c, depth + 1, &s->callee[0]);
}

static hs_status plan_for(dev_ctx *x, const hs_computation *c, int depth,
                          dev_plan **out)
{
    int id = c->id;
    if (id < 0 || id >= x->m->n_comps || x->m->comps[id] != c) {
        for (id = 0; id < x->m->n_comps && x->m->comps[id] != c; id++)
            ;
        if (id == x->m->n_comps)
            return hs_error_set(x->err, HS_ERR_INVALID,
                                "computation %s is not in the module",
                                c->name);
    }
    if (x->plans[id]) {
        if (x->plans[id]->busy)
            return hs_error_set(x->err, HS_ERR_INVALID,
                                "computation %s calls itself", c->name);
        *out = x->plans[id];
        return HS_OK;
    }
    if (depth > 64)
        return hs_error_set(x->err, HS_ERR_LIMIT,
                            "computations nested more than 64 deep");
    dev_plan *p = zalloc(x, sizeof *p);
    if (!p)
        return HS_ERR_NOMEM;
    p->busy = true; /* under construction */
    x->plans[id] = p;
    hs_status st = build_plan(x, c, p);
    if (st)
        return st;
    /* Called computations. */
    for (int k = 0; k < p->n_steps; k++) {
        dev_step *s = &p->steps[k];
        const hs_instruction *in = s->in;
        if (in->opcode == HS_OP_FUSION) {
            st = plan_fusion(x, in, s, depth);
            if (st)
                return st;
            continue;
        }
        int n_callee = (in->opcode == HS_OP_WHILE ||
                        in->opcode == HS_OP_SELECT_AND_SCATTER)
                           ? 2
                       : (in->opcode == HS_OP_CALL ||
                          in->opcode == HS_OP_REDUCE ||
                          in->opcode == HS_OP_REDUCE_WINDOW ||
                          in->opcode == HS_OP_SCATTER ||
                          in->opcode == HS_OP_SORT)
                           ? 1
                           : 0;
        if (n_callee > in->n_called)
            return hs_error_set(x->err, HS_ERR_INVALID,
                                "instruction %s: %s needs %d called "
                                "computations", in->name,
                                hs_opcode_name(in->opcode), n_callee);
        for (int j = 0; j < n_callee; j++) {
            if (!in->called[j])
                return hs_error_set(x->err, HS_ERR_INVALID,
                                    "instruction %s: missing computation",
                                    in->name);
            st = plan_for(x, in->called[j], depth + 1, &s->callee[j]);
            if (st)
                return st;
        }
        if (in->opcode == HS_OP_REDUCE) {
            if (s->callee[0]->n_params != in->n_operands)
                return dev_unsupported(x, in, "a reducer whose parameters "
                                              "are not (accumulators, "
                                              "elements)");
            s->aux = in->n_operands == 2 ? dev_reducer_fast_op(in->called[0])
                                         : -1;
        }
        if (in->opcode == HS_OP_WHILE &&
            (s->callee[0]->n_params != 1 || s->callee[1]->n_params != 1))
            return hs_error_set(x->err, HS_ERR_INVALID,
                                "instruction %s: while condition and body "
                                "take one parameter",
                                in->name);
        if (in->opcode == HS_OP_CALL &&
            s->callee[0]->n_params != in->n_operands)
            return hs_error_set(x->err, HS_ERR_INVALID,
                                "instruction %s: call passes %d operands "
                                "to a computation of %d parameters",
                                in->name, in->n_operands,
                                s->callee[0]->n_params);
    }
    p->busy = false;
    *out = p;
    return HS_OK;
}

/* A get-tuple-element moves its element out of the tuple (aux = 1) when
 * every user of the tuple is a get-tuple-element and no other one reads
 * that index: the element then lives to its own last use, as buffer
 * assignment counts it, not as long as the tuple (a while body's
 * parameter, whose last get-tuple-element may come late). A tuple built
 * here whose users are all get-tuple-elements does not keep the elements
 * none of them reads (data: a bool per operand, true = dropped). */
static hs_status mark_moving_gtes(dev_ctx *x, const hs_computation *c,
                                  const index_map *map, int root,
                                  dev_plan *p)
{
    int n = c->n_instrs;
    bool *other = zalloc(x, (size_t)n * sizeof *other);
    int **seen = zalloc(x, (size_t)n * sizeof *seen);
    if (!other || !seen)
        return HS_ERR_NOMEM;
    other[root] = true;
    for (int j = 0; j < p->n_steps; j++) {
        const hs_instruction *in = p->steps[j].in;
        for (int o = 0; o < in->n_operands; o++) {
            int t = map_get(map, in->operands[o]);
            const hs_shape *ts = &in->operands[o]->shape;
            if (in->opcode != HS_OP_GET_TUPLE_ELEMENT ||
                ts->dtype != HS_TUPLE || in->index < 0 ||
                in->index >= ts->n_elems) {
                other[t] = true;
                continue;
            }
            if (!seen[t] &&
                !(seen[t] = zalloc(x, (size_t)ts->n_elems * sizeof(int))))
                return HS_ERR_NOMEM;
            seen[t][in->index]++;
        }
    }
    for (int j = 0; j < p->n_steps; j++) {
        dev_step *s = &p->steps[j];
        if (s->in->opcode == HS_OP_TUPLE && !other[s->slot] && seen[s->slot]) {
            bool *drop = zalloc(x, (size_t)(s->n_ops + 1) * sizeof *drop);
            if (!drop)
                return HS_ERR_NOMEM;
            for (int k = 0; k < s->n_ops; k++)
                drop[k] = seen[s->slot][k] == 0;
            s->data = drop;
        }
        if (s->in->opcode != HS_OP_GET_TUPLE_ELEMENT || !seen[s->ops[0]])
            continue;
        s->aux = !other[s->ops[0]] && seen[s->ops[0]][s->in->index] == 1;
    }
    return HS_OK;
}

static hs_status build_plan(dev_ctx *x, const hs_computation *c,
                            dev_plan *p)
{
    int n = c->n_instrs;
    if (!c->root)
        return hs_error_set(x->err, HS_ERR_INVALID,
                            "computation %s has no root", c->name);
    index_map map;
    size_t cap = 16;
    while (cap < 2 * (size_t)n)
        cap *= 2;
    map.mask = cap - 1;
    map.keys = zalloc(x, cap * sizeof *map.keys);
    map.vals = zalloc(x, cap * sizeof *map.vals);
    bool *live = zalloc(x, (size_t)n * sizeof *live);
    int *last = zalloc(x, (size_t)n * sizeof *last);
    if (!map.keys || !map.vals || !live || !last)
        return HS_ERR_NOMEM;
    for (int k = 0; k < n; k++) {
        size_t h = hash_ptr(c->instrs[k]) & map.mask;
        while (map.keys[h])
            h = (h + 1) & map.mask;
        map.keys[h] = c->instrs[k];
        map.vals[h] = k;
    }
    int root = map_get(&map, c->root);
    if (root < 0)
        return hs_error_set(x->err, HS_ERR_INVALID,
                            "computation %s: root is not one of its "
                            "instructions", c->name);
    /* Liveness: operands come before users, so one backward sweep. */
    live[root] = true;
    int n_steps = 0;
    for (int k = n - 1; k >= 0; k--) {
        const hs_instruction *in = c->instrs[k];
        if (!live[k])
            continue;
        if (in->opcode != HS_OP_PARAMETER)
            n_steps++;
        for (int j = 0; j < in->n_operands; j++) {
            int o = map_get(&map, in->operands[j]);
            if (o < 0 || o >= k)
                return hs_error_set(x->err, HS_ERR_INVALID,
                                    "instruction %s: operand %d is not "
                                    "defined before it in %s",
                                    in->name, j, c->name);
            live[o] = true;
        }
    }
    p->comp = c;
    p->n_slots = n;
    p->root_slot = root;
    p->n_params = c->n_params;
    p->param_slots = zalloc(x, (size_t)c->n_params * sizeof(int));
    p->param_dead = zalloc(x, (size_t)c->n_params * sizeof(bool));
    p->frame = zalloc(x, (size_t)n * sizeof(dev_val *));
    p->steps = zalloc(x, (size_t)n_steps * sizeof(dev_step));
    if (!p->param_slots || !p->param_dead || !p->frame || !p->steps)
        return HS_ERR_NOMEM;
    for (int i = 0; i < c->n_params; i++) {
        if (!c->params[i])
            return hs_error_set(x->err, HS_ERR_INVALID,
                                "computation %s: parameter %d is missing",
                                c->name, i);
        int k = map_get(&map, c->params[i]);
        if (k < 0)
            return hs_error_set(x->err, HS_ERR_INVALID,
                                "computation %s: parameter %d is not one "
                                "of its instructions", c->name, i);
        p->param_slots[i] = k;
        p->param_dead[i] = !live[k];
    }
    /* Steps, and the last step that uses each slot. */
    for (int k = 0; k < n; k++)
        last[k] = -1;
    int j = 0;
    for (int k = 0; k < n; k++) {
        const hs_instruction *in = c->instrs[k];
        if (!live[k] || in->opcode == HS_OP_PARAMETER)
            continue;
        hs_status st = check_instruction(x, in);
        if (st) {
            if (!x->err->instruction[0])
                snprintf(x->err->instruction, sizeof x->err->instruction,
                         "%s", in->name);
            return st;
        }
        dev_step *s = &p->steps[j];
        s->in = in;
        s->kern = runs_as_empty(in) ? dev_k_empty : dev_kernel_for(in);
        s->slot = k;
        s->aux = -1;
        s->n_ops = in->n_operands;
        s->ops = zalloc(x, (size_t)in->n_operands * sizeof(int));
        s->op_last = zalloc(x, (size_t)in->n_operands * sizeof(bool));
        if (!s->ops || !s->op_last)
            return HS_ERR_NOMEM;
        for (int o = 0; o < in->n_operands; o++) {
            s->ops[o] = map_get(&map, in->operands[o]);
            last[s->ops[o]] = j;
        }
        dev_cost(x->spec, in, &s->flops, &s->bytes, &s->seconds);
        s->host_transfer = dev_is_host_transfer(in);
        if (in->opcode == HS_OP_DYNAMIC_SLICE)
            s->aux = dev_dynamic_slice_is_view(in);
        if (in->opcode == HS_OP_PAD && !(s->data = dev_pad_config(x, in)))
            return x->err->status;
        if (dev_is_spmd_shape_call(in) && !(s->data = dev_spmd_plan(x, in)))
            return x->err->status;
        j++;
    }
    p->n_steps = n_steps;
    hs_status mst = mark_moving_gtes(x, c, &map, root, p);
    if (mst)
        return mst;
    /* Release lists and final references. */
    int *count = zalloc(x, (size_t)n_steps * sizeof(int));
    if (!count)
        return HS_ERR_NOMEM;
    for (int k = 0; k < n; k++)
        if (k != root && last[k] >= 0)
            count[last[k]]++;
    for (int t = 0; t < n_steps; t++) {
        dev_step *s = &p->steps[t];
        s->release = zalloc(x, (size_t)count[t] * sizeof(int));
        if (!s->release)
            return HS_ERR_NOMEM;
        for (int o = s->n_ops - 1; o >= 0; o--) {
            int slot = s->ops[o];
            if (slot == root || last[slot] != t)
                continue;
            bool repeated = false;
            for (int q = o + 1; q < s->n_ops; q++)
                repeated |= s->ops[q] == slot;
            if (!repeated) {
                s->op_last[o] = true;
                s->release[s->n_release++] = slot;
            }
        }
    }
    return HS_OK;
}

hs_status dev_plan_module(dev_ctx *x, const hs_computation *entry)
{
    x->arena = hs_arena_new(0);
    if (!x->arena)
        return dev_oom(x);
    x->plans = hs_arena_alloc(x->arena,
                              (size_t)(x->m->n_comps ? x->m->n_comps : 1) *
                                  sizeof *x->plans);
    if (!x->plans)
        return dev_oom(x);
    dev_plan *p;
    return plan_for(x, entry, 0, &p);
}

void dev_plans_free(dev_ctx *x)
{
    hs_arena_free(x->arena);
    x->arena = NULL;
    x->plans = NULL;
}
