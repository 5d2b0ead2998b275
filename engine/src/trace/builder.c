/*
 * builder.c - the tracer's lifecycle, op_name scopes, sticky error and the
 * one path every op takes into the IR (hs__b_emit).
 *
 * Tracing speed bounds goodput, so the per-instruction path does no heap
 * allocation and no formatting: the prototype lives on the stack, shape
 * inference writes into a stack shape, the module arena holds the result,
 * and op_name is a pointer shared by every instruction of a scope.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_infer.h"
#include "trace/builder_internal.h"

hs_builder *hs_builder_new(hs_module *m, const char *name, bool is_entry)
{
    hs_builder *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->m = m;
    b->c = hs_module_add_computation(m, name, is_entry);
    if (!b->c) {
        free(b);
        return NULL;
    }
    return b;
}

void hs_builder_free(hs_builder *b)
{
    if (!b)
        return;
    free(b->path);
    free(b->marks);
    free(b->saved);
    free(b);
}

hs_computation *hs_builder_finish(hs_builder *b, hs_instruction *root,
                                  hs_error *err)
{
    if (!b) {
        hs_error_set(err, HS_ERR_NOMEM, "builder: out of memory");
        return NULL;
    }
    if (!b->failed && !root)
        hs_builder_fail(b, HS_ERR_INVALID,
                        "computation %s: no root instruction", b->c->name);
    if (!b->failed && root->parent != b->c)
        hs_builder_fail(b, HS_ERR_INVALID,
                        "computation %s: root %s belongs to computation %s",
                        b->c->name, root->name, root->parent->name);
    hs_computation *c = NULL;
    if (b->failed) {
        if (err)
            *err = b->err;
    } else {
        b->c->root = root;
        c = b->c;
        if (err)
            hs_error_clear(err);
    }
    hs_builder_free(b);
    return c;
}

hs_module *hs_builder_module(const hs_builder *b) { return b->m; }

hs_computation *hs_builder_computation(const hs_builder *b) { return b->c; }

bool hs_builder_ok(const hs_builder *b) { return !b->failed; }

const hs_error *hs_builder_error(const hs_builder *b) { return &b->err; }

/* Records the first error; detail is prefixed with the scope so that the
 * user learns which layer failed. */
static void fail_with(hs_builder *b, hs_status s, const char *detail)
{
    if (b->failed)
        return;
    b->failed = true;
    hs_error_clear(&b->err);
    if (b->op_name)
        hs_error_set(&b->err, s, "%s: %s", b->op_name, detail);
    else
        hs_error_set(&b->err, s, "%s", detail);
}

void hs_builder_fail(hs_builder *b, hs_status s, const char *fmt, ...)
{
    if (b->failed)
        return;
    char detail[sizeof b->err.message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    fail_with(b, s, detail);
}

/* ------------------------------------------------------------------------ */
/* Scopes                                                                   */
/* ------------------------------------------------------------------------ */

static bool reserve_scope(hs_builder *b, size_t extra)
{
    if (b->depth == b->cap_depth) {
        int cap = b->cap_depth ? b->cap_depth * 2 : 16;
        size_t *marks = realloc(b->marks, sizeof *marks * (size_t)cap);
        if (marks)
            b->marks = marks;
        const char **saved = realloc(b->saved, sizeof *saved * (size_t)cap);
        if (saved)
            b->saved = saved;
        if (!marks || !saved)
            return false;
        b->cap_depth = cap;
    }
    size_t need = b->path_len + extra + 1;
    if (need > b->path_cap) {
        size_t cap = b->path_cap ? b->path_cap : 128;
        while (cap < need)
            cap *= 2;
        char *p = realloc(b->path, cap);
        if (!p)
            return false;
        b->path = p;
        b->path_cap = cap;
    }
    return true;
}

void hs_builder_push_scope(hs_builder *b, const char *name)
{
    size_t len = name ? strlen(name) : 0;
    if (!reserve_scope(b, len + 1)) {
        /* The builder has failed, so unbalanced pops that follow only
         * touch scopes of a trace that is already lost. */
        fail_with(b, HS_ERR_NOMEM, "builder: out of memory");
        return;
    }
    b->marks[b->depth] = b->path_len;
    b->saved[b->depth] = b->op_name;
    b->depth++;
    if (b->path_len > 0)
        b->path[b->path_len++] = '/';
    if (len)
        memcpy(b->path + b->path_len, name, len);
    b->path_len += len;
    b->path[b->path_len] = '\0';
    const char *interned = hs_arena_strndup(b->m->arena, b->path, b->path_len);
    if (!interned)
        fail_with(b, HS_ERR_NOMEM, "builder: out of memory");
    b->op_name = interned;
}

void hs_builder_pop_scope(hs_builder *b)
{
    if (b->depth == 0) {
        hs_builder_fail(b, HS_ERR_INVALID,
                        "builder: pop_scope without a matching push_scope");
        return;
    }
    b->depth--;
    b->path_len = b->marks[b->depth];
    b->path[b->path_len] = '\0';
    b->op_name = b->saved[b->depth];
}

const char *hs_builder_scope(const hs_builder *b)
{
    return b->op_name ? b->op_name : "";
}

/* ------------------------------------------------------------------------ */
/* The path into the IR                                                     */
/* ------------------------------------------------------------------------ */

void hs__b_proto(hs_instruction *p, hs_opcode op, hs_instruction **operands,
                 int n)
{
    memset(p, 0, sizeof *p);
    p->opcode = op;
    p->operands = operands;
    p->n_operands = n;
}

void *hs__b_copy(hs_builder *b, const void *src, size_t size)
{
    void *p = hs_arena_alloc(b->m->arena, size);
    if (!p) {
        fail_with(b, HS_ERR_NOMEM, "builder: out of memory");
        return NULL;
    }
    memcpy(p, src, size);
    return p;
}

/* Operands from another computation (a parameter of the caller used inside
 * a body, say) would make the module invalid; catching it here names the
 * op that did it. */
static bool operands_local(hs_builder *b, hs_instruction *const *xs, int n,
                           hs_opcode op)
{
    for (int k = 0; k < n; k++) {
        if (xs[k]->parent != b->c) {
            hs_builder_fail(b, HS_ERR_INVALID,
                            "%s: operand %d (%s) belongs to computation %s, "
                            "not %s",
                            hs_opcode_name(op), k, xs[k]->name,
                            xs[k]->parent->name, b->c->name);
            return false;
        }
    }
    return true;
}

hs_instruction *hs__b_add(hs_builder *b, hs_opcode op, const hs_shape *shape,
                          hs_instruction *const *operands, int n)
{
    if (!operands_local(b, operands, n, op))
        return NULL;
    hs_instruction *i = hs_computation_add(b->c, op, shape, operands, n, NULL);
    if (!i) {
        fail_with(b, HS_ERR_NOMEM, "builder: out of memory");
        return NULL;
    }
    i->op_name = b->op_name;
    return i;
}

hs_instruction *hs__b_emit(hs_builder *b, const hs_instruction *proto)
{
    hs_shape shape;
    hs_error e;
    hs_status st = hs_infer_shape(proto, b->m->arena, &shape, &e);
    if (st != HS_OK) {
        fail_with(b, st, e.message);
        return NULL;
    }
    return hs__b_add(b, proto->opcode, &shape, proto->operands,
                     proto->n_operands);
}

bool hs__b_order_callee(hs_builder *b, hs_computation *callee)
{
    if (callee == b->c) {
        hs_builder_fail(b, HS_ERR_INVALID,
                        "computation %s cannot call itself", b->c->name);
        return false;
    }
    hs_status st = hs_module_move_computation_before(b->m, callee, b->c);
    if (st == HS_OK)
        return true;
    if (st == HS_ERR_NOMEM)
        fail_with(b, st, "builder: out of memory");
    else
        hs_builder_fail(b, st,
                        "computation %s cannot call %s: it is not in module "
                        "%s or calls back into %s",
                        b->c->name, callee->name, b->m->name, b->c->name);
    return false;
}
