/*
 * fusion.c - the `fusion` pass: element-wise loop fusion, after XLA's
 * InstructionFusion for kLoop fusions.
 *
 * Every computation that is not itself fused or a reducer is swept from
 * its root towards its parameters. An element-wise instruction that is not
 * yet part of a fusion starts one (it becomes the fusion's root); its
 * producers are then considered from the latest to the earliest, and a
 * producer joins when
 *
 *   - it is element-wise, a broadcast, a reshape or bitcast that keeps the
 *     data in place, an iota or a scalar constant, with the root's memory
 *     space (never a while, call, custom-call, dot, reduce, dynamic-slice
 *     or dynamic-update-slice: those are not loop-fusible), and
 *   - every user of it is already in the fusion (it is then moved in), or
 *     it is cheap to duplicate (a scalar constant, an iota, a broadcast of
 *     a scalar) and some user is in the fusion (it is then copied in and
 *     the original stays for its other users), and
 *   - it is not expensive (exp, log, tanh, rsqrt, float divide, ...) while
 *     the fusion reads each of its elements many times (through a
 *     broadcast): XLA's "expensive producer, reusing consumer" rule, which
 *     keeps a rsqrt of a [B] vector from being recomputed for each of the
 *     [B, N] elements it is broadcast to.
 *
 * Visiting producers in decreasing definition order means all users of a
 * producer that can ever join have joined when it is considered, so one
 * sweep finds the fixed point. A fusion of at least two instructions
 * replaces its root by
 *
 *   %fusion.N = f32[...] fusion(<external operands>), kind=kLoop,
 *                calls=%fused_computation.N
 *
 * whose fused computation (is_fusion) has parameters %param_K.N and the
 * fused instructions (moved ones keep their names, copies are named
 * <name>.clone) in their original order. Fused computations are placed just
 * before the computation that calls them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes_internal.h"

enum { MAX_MEMBERS = 512 };

/* ---- names ------------------------------------------------------------- */

/* Every instruction and computation name of the module, so that new
 * names are unique. Open addressing; grows at half load. */
typedef struct name_set {
    const char **keys;
    size_t cap, n;
} name_set;

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static bool names_has(const name_set *s, const char *k)
{
    for (size_t h = name_hash(k) & (s->cap - 1);; h = (h + 1) & (s->cap - 1)) {
        if (!s->keys[h])
            return false;
        if (strcmp(s->keys[h], k) == 0)
            return true;
    }
}

static bool names_add(name_set *s, const char *k)
{
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        const char **keys = calloc(cap, sizeof *keys);
        if (!keys)
            return false;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->keys[i])
                continue;
            size_t h = name_hash(s->keys[i]) & (cap - 1);
            while (keys[h])
                h = (h + 1) & (cap - 1);
            keys[h] = s->keys[i];
        }
        free(s->keys);
        s->keys = keys;
        s->cap = cap;
    }
    size_t h = name_hash(k) & (s->cap - 1);
    while (s->keys[h]) {
        if (strcmp(s->keys[h], k) == 0)
            return true;
        h = (h + 1) & (s->cap - 1);
    }
    s->keys[h] = k;
    s->n++;
    return true;
}

/* ---- what fuses --------------------------------------------------------- */

static bool is_elementwise(const hs_instruction *i)
{
    return hs_opcode_category(i->opcode) == HS_CAT_ELEMENTWISE &&
           i->opcode != HS_OP_MAP && i->shape.dtype != HS_TUPLE &&
           i->n_operands > 0;
}

static bool is_scalar(const hs_shape *s)
{
    return s->dtype != HS_TUPLE && hs_shape_elements(s) == 1;
}

static bool default_layout(const hs_shape *s)
{
    if (!s->has_layout)
        return true;
    for (int k = 0; k < s->rank; k++)
        if (s->minor_to_major[k] != s->rank - 1 - k)
            return false;
    return true;
}

/* A reshape or bitcast is a bitcast (moves no data) when both sides use
 * the row-major layout. */
static bool is_bitcast(const hs_instruction *i)
{
    return (i->opcode == HS_OP_RESHAPE || i->opcode == HS_OP_BITCAST) &&
           i->n_operands == 1 &&
           i->operands[0]->shape.dtype == i->shape.dtype &&
           default_layout(&i->shape) &&
           default_layout(&i->operands[0]->shape);
}

static bool cheap_to_duplicate(const hs_instruction *i)
{
    switch (i->opcode) {
    case HS_OP_CONSTANT: return is_scalar(&i->shape);
    case HS_OP_IOTA: return true;
    case HS_OP_BROADCAST:
        return i->n_operands == 1 && is_scalar(&i->operands[0]->shape);
    default: return false;
    }
}

static bool is_fusible_producer(const hs_instruction *i,
                                const hs_instruction *root)
{
    if (i->shape.dtype == HS_TUPLE ||
        i->shape.memory_space != root->shape.memory_space)
        return false;
    switch (i->opcode) {
    case HS_OP_BROADCAST: return i->n_operands == 1;
    case HS_OP_RESHAPE: case HS_OP_BITCAST: return is_bitcast(i);
    case HS_OP_CONSTANT: return is_scalar(&i->shape) && i->literal;
    case HS_OP_IOTA: return true;
    default: return is_elementwise(i);
    }
}

static bool constant_divisor(const hs_instruction *i)
{
    const hs_instruction *d = i->operands[1];
    while (d->opcode == HS_OP_BROADCAST && d->n_operands == 1)
        d = d->operands[0];
    return d->opcode == HS_OP_CONSTANT;
}

/* XLA's InstructionFusion::IsExpensive for the fusible opcodes. */
static bool is_expensive(const hs_instruction *i)
{
    switch (i->opcode) {
    case HS_OP_EXP: case HS_OP_EXPM1: case HS_OP_LOG: case HS_OP_LOG1P:
    case HS_OP_POWER: case HS_OP_RSQRT: case HS_OP_SQRT: case HS_OP_TANH:
    case HS_OP_LOGISTIC: case HS_OP_ERF:
        return true;
    case HS_OP_DIVIDE: case HS_OP_REMAINDER:
        return hs_dtype_is_float(i->shape.dtype) || !constant_divisor(i);
    default:
        return false;
    }
}

/* Computations whose instructions run once per element of another op
 * (reducers and the like): nothing to gain from fusing inside them. */
static bool *applied_computations(const hs_module *m)
{
    bool *applied = calloc((size_t)m->n_comps + 1, sizeof *applied);
    if (!applied)
        return NULL;
    for (int c = 0; c < m->n_comps; c++) {
        const hs_computation *comp = m->comps[c];
        for (int k = 0; k < comp->n_instrs; k++) {
            const hs_instruction *i = comp->instrs[k];
            switch (i->opcode) {
            case HS_OP_REDUCE: case HS_OP_REDUCE_WINDOW: case HS_OP_MAP:
            case HS_OP_SORT: case HS_OP_SCATTER: case HS_OP_ALL_REDUCE:
            case HS_OP_REDUCE_SCATTER:
                break;
            default:
                continue;
            }
            for (int j = 0; j < i->n_called; j++)
                for (int q = 0; q < m->n_comps; q++)
                    if (m->comps[q] == i->called[j])
                        applied[q] = true;
        }
    }
    return applied;
}

/* ---- grouping ------------------------------------------------------------ */

/* A max-heap of instruction positions. */
typedef struct heap {
    int *v;
    int n, cap;
} heap;

static bool heap_push(heap *h, int x)
{
    if (h->n == h->cap) {
        int cap = h->cap ? 2 * h->cap : 64;
        int *v = realloc(h->v, sizeof *v * (size_t)cap);
        if (!v)
            return false;
        h->v = v;
        h->cap = cap;
    }
    int k = h->n++;
    while (k > 0 && h->v[(k - 1) / 2] < x) {
        h->v[k] = h->v[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    h->v[k] = x;
    return true;
}

static int heap_pop(heap *h)
{
    int top = h->v[0], x = h->v[--h->n], k = 0;
    for (;;) {
        int c = 2 * k + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->v[c + 1] > h->v[c])
            c++;
        if (h->v[c] <= x)
            break;
        h->v[k] = h->v[c];
        k = c;
    }
    if (h->n > 0)
        h->v[k] = x;
    return top;
}

typedef struct group {
    int root;   /* position of the root */
    int first;  /* its members in fuser.members[first .. first + count) */
    int count;  /* in decreasing position order, root first */
} group;

typedef struct fuser {
    hs_module *m;
    hs_computation *c;
    int n;
    hs_user_list *users;
    int *moved_to;  /* group root a member was moved into, or -1 */
    int *seen;      /* last group that considered it */
    /* Per producer, for the group acc_group that queued it: how many of
     * its members use it, whether one of those is a copy, and whether one
     * reads its elements repeatedly. */
    int *acc_group;
    int *acc_users;
    bool *acc_copied;
    bool *acc_reuse;
    bool *dup;      /* copied into some fusion; the original may die */
    bool *reuse;    /* in the current group: elements read repeatedly */
    hs_instruction **clone; /* while building a fusion (build_fusion) */
    int *clone_suffix; /* per position: next suffix to try for its copies */
    int *members;
    int n_members, cap_members;
    group *groups;
    int n_groups, cap_groups;
    heap h;
    name_set *names;
} fuser;

static bool add_member(fuser *f, int p)
{
    if (f->n_members == f->cap_members) {
        int cap = f->cap_members ? 2 * f->cap_members : 256;
        int *v = realloc(f->members, sizeof *v * (size_t)cap);
        if (!v)
            return false;
        f->members = v;
        f->cap_members = cap;
    }
    f->members[f->n_members++] = p;
    return true;
}

/* Member q of group g uses its operands: counts q among their users in
 * the group (what consider() decides on) and queues them. */
static bool push_operands(fuser *f, int g, int q)
{
    const hs_instruction *i = f->c->instrs[q];
    int64_t elems = hs_shape_elements(&i->shape);
    for (int o = 0; o < i->n_operands; o++) {
        const hs_instruction *op = i->operands[o];
        bool repeated = false;
        for (int t = 0; t < o; t++)
            repeated |= i->operands[t] == op;
        if (op->parent != f->c || repeated)
            continue;
        int p = (int)op->scratch;
        if (f->acc_group[p] != g) {
            f->acc_group[p] = g;
            f->acc_users[p] = 0;
            f->acc_copied[p] = false;
            f->acc_reuse[p] = false;
        }
        f->acc_users[p]++;
        f->acc_copied[p] |= f->moved_to[q] != g;
        f->acc_reuse[p] |= f->reuse[q] ||
                           elems > hs_shape_elements(&op->shape);
        if (!heap_push(&f->h, p))
            return false;
    }
    return true;
}

/* Decides whether producer p, queued by a member of group g (root
 * instruction `root`), joins it; returns false only on host OOM. Every
 * member that uses p has joined by now (members join in decreasing
 * position), so the counts are final. */
static bool consider(fuser *f, int g, int p, const hs_instruction *root)
{
    hs_instruction *P = f->c->instrs[p];
    if (f->moved_to[p] >= 0 || !is_fusible_producer(P, root))
        return true;
    /* Moved in when all its users are moved-in members; the
     * computation's root keeps its place whatever uses it. */
    bool all_moved = f->acc_users[p] == f->users[p].n && !f->acc_copied[p] &&
                     P != f->c->root;
    bool reused = f->acc_reuse[p];
    if (all_moved && !(reused && is_expensive(P)))
        f->moved_to[p] = g;
    else if (cheap_to_duplicate(P))
        f->dup[p] = true;
    else
        return true;
    f->reuse[p] = reused;
    return add_member(f, p) && push_operands(f, g, p);
}

/* Forms the groups of f->c (positions in f->members). */
static hs_status form_groups(fuser *f, const hs_pass_context *ctx,
                             hs_error *err)
{
    int64_t tick = 0;
    for (int k = f->n - 1; k >= 0; k--) {
        hs_status st = hs__pass_poll(ctx, &tick, err);
        if (st)
            return st;
        hs_instruction *i = f->c->instrs[k];
        if (f->moved_to[k] >= 0 || !is_elementwise(i))
            continue;
        int first = f->n_members;
        f->moved_to[k] = k;
        f->reuse[k] = false;
        f->h.n = 0;
        if (!add_member(f, k) || !push_operands(f, k, k))
            return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        while (f->h.n > 0 && f->n_members - first < MAX_MEMBERS) {
            int p = heap_pop(&f->h);
            if (f->seen[p] == k)
                continue;
            f->seen[p] = k;
            if (!consider(f, k, p, i))
                return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        }
        int count = f->n_members - first;
        if (count < 2) {
            f->moved_to[k] = -1;
            f->n_members = first;
            continue;
        }
        if (f->n_groups == f->cap_groups) {
            int cap = f->cap_groups ? 2 * f->cap_groups : 64;
            group *v = realloc(f->groups, sizeof *v * (size_t)cap);
            if (!v)
                return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
            f->groups = v;
            f->cap_groups = cap;
        }
        f->groups[f->n_groups++] = (group){k, first, count};
    }
    return HS_OK;
}

/* ---- building the fusions ------------------------------------------------ */

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* A name not used in the module: base, else base.1, base.2, ... */
/* base, or base.K for the smallest K from *next on that is free. *next
 * remembers where the search stopped: an instruction copied into many
 * fusions (a broadcast constant) would otherwise probe every earlier
 * suffix again, quadratic in its number of copies. */
static const char *unique_name(fuser *f, const char *base, int *next)
{
    hs_arena *a = f->m->arena;
    int k = *next;
    const char *name = k == 0 ? hs_arena_strdup(a, base)
                              : hs_arena_printf(a, "%s.%d", base, k);
    while (name && names_has(f->names, name))
        name = hs_arena_printf(a, "%s.%d", base, ++k);
    *next = k + 1;
    if (name && !names_add(f->names, name))
        return NULL;
    return name;
}

/* The suffix N of fusion.N / fused_computation.N / param_K.N: the id the
 * fusion instruction will get, or the next number free for all of them. */
static int fusion_number(fuser *f, int n_params)
{
    char buf[64];
    for (int n = f->m->next_id;; n++) {
        bool free_n = true;
        snprintf(buf, sizeof buf, "fusion.%d", n);
        free_n &= !names_has(f->names, buf);
        snprintf(buf, sizeof buf, "fused_computation.%d", n);
        free_n &= !names_has(f->names, buf);
        for (int k = 0; free_n && k < n_params; k++) {
            snprintf(buf, sizeof buf, "param_%d.%d", k, n);
            free_n &= !names_has(f->names, buf);
        }
        if (free_n)
            return n;
    }
}

static const char *named(fuser *f, const char *fmt, int a, int b)
{
    const char *s = b < 0 ? hs_arena_printf(f->m->arena, fmt, a)
                          : hs_arena_printf(f->m->arena, fmt, a, b);
    return s && names_add(f->names, s) ? s : NULL;
}

/* A copy of i (attributes shared, they are immutable) in computation fc
 * with operands ops. */
static hs_instruction *clone_into(hs_computation *fc, const hs_instruction *i,
                                  hs_instruction **ops, const char *name)
{
    hs_instruction *c = hs_computation_add(fc, i->opcode, &i->shape, ops,
                                           i->n_operands, name);
    if (!c)
        return NULL;
    hs_instruction keep = *c;
    *c = *i;
    c->id = keep.id;
    c->name = keep.name;
    c->parent = fc;
    c->operands = keep.operands;
    c->n_operands = keep.n_operands;
    c->scratch = -1;
    return c;
}

/* Builds group g's fused computation and fusion instruction; the fusion
 * is appended to f->c (the caller puts it in place). */
static hs_instruction *build_fusion(fuser *f, const group *g,
                                    hs_computation **fused_out)
{
    int *mem = f->members + g->first;
    qsort(mem, (size_t)g->count, sizeof *mem, cmp_int);
    size_t n_uses = 1;
    for (int k = 0; k < g->count; k++)
        n_uses += (size_t)f->c->instrs[mem[k]]->n_operands;
    hs_instruction **ext = malloc(sizeof *ext * n_uses);
    hs_instruction **ops = malloc(sizeof *ops * 16);
    if (!ext || !ops) {
        free(ext);
        free(ops);
        return NULL;
    }
    /* seen[] (free after grouping) marks the members and then the
     * external operands, in order of first use, with stamps of their own
     * for this group. */
    int member = -2 - 2 * g->root, external = -3 - 2 * g->root;
    for (int k = 0; k < g->count; k++)
        f->seen[mem[k]] = member;
    int n_ext = 0;
    for (int k = 0; k < g->count; k++) {
        const hs_instruction *i = f->c->instrs[mem[k]];
        for (int o = 0; o < i->n_operands; o++) {
            hs_instruction *op = i->operands[o];
            int q = (int)op->scratch;
            if (f->seen[q] == member || f->seen[q] == external)
                continue;
            f->seen[q] = external;
            ext[n_ext++] = op;
        }
    }
    hs_instruction *root = f->c->instrs[g->root];
    hs_instruction *fusion = NULL;
    int number = fusion_number(f, n_ext);
    const char *cname = named(f, "fused_computation.%d", number, -1);
    hs_computation *fc = cname ? hs_module_add_computation(f->m, cname, false)
                               : NULL;
    if (!fc)
        goto out;
    fc->is_fusion = true;
    /* clone[q]: the instruction in fc standing for position q (a member
     * or an external operand); reset below for the next group. */
    hs_instruction **clone = f->clone;
    for (int k = 0; k < n_ext; k++) {
        const char *pname = named(f, "param_%d.%d", k, number);
        hs_instruction *p =
            pname ? hs_computation_add_parameter(fc, k, &ext[k]->shape, pname)
                  : NULL;
        if (!p)
            goto out;
        p->scratch = -1;
        clone[ext[k]->scratch] = p;
    }
    int cap_ops = 16;
    for (int k = 0; k < g->count; k++) {
        const hs_instruction *i = f->c->instrs[mem[k]];
        if (i->n_operands > cap_ops) {
            hs_instruction **v = realloc(ops, sizeof *v * (size_t)i->n_operands);
            if (!v)
                goto out;
            ops = v;
            cap_ops = i->n_operands;
        }
        for (int o = 0; o < i->n_operands; o++)
            ops[o] = clone[i->operands[o]->scratch];
        /* Moved instructions keep their names (the originals go); copies
         * are <name>.clone. */
        const char *name =
            f->moved_to[mem[k]] == g->root
                ? i->name
                : unique_name(f, hs_arena_printf(f->m->arena, "%s.clone",
                                                 i->name),
                              &f->clone_suffix[mem[k]]);
        hs_instruction *c = name ? clone_into(fc, i, ops, name) : NULL;
        if (!c)
            goto out;
        clone[mem[k]] = c;
    }
    fc->root = clone[g->root];
    const char *fname = named(f, "fusion.%d", number, -1);
    fusion = fname ? hs_computation_add(f->c, HS_OP_FUSION, &root->shape, ext,
                                        n_ext, fname)
                   : NULL;
    if (fusion) {
        fusion->fusion_kind = "kLoop";
        fusion->op_name = root->op_name;
        fusion->op_type = root->op_type;
        fusion->scratch = -1;
        hs_instruction_set_called(fusion, &fc, 1);
        if (!fusion->called)
            fusion = NULL;
    }
    *fused_out = fc;
out:
    for (int k = 0; k < n_ext; k++)
        f->clone[ext[k]->scratch] = NULL;
    for (int k = 0; k < g->count; k++)
        f->clone[mem[k]] = NULL;
    free(ext);
    free(ops);
    return fusion;
}

/* Rebuilds f->c: each group root replaced by its fusion, moved members
 * and copied originals that lost all their users dropped. */
static bool rebuild(fuser *f, hs_instruction **repl)
{
    hs_computation *c = f->c;
    int n = f->n;
    bool *needed = calloc((size_t)n + 1, sizeof *needed);
    if (!needed)
        return false;
    if (c->root && c->root->parent == c && c->root->scratch >= 0)
        needed[c->root->scratch] = true;
    for (int k = n - 1; k >= 0; k--) {
        hs_instruction *i = repl[k] ? repl[k] : c->instrs[k];
        bool moved = f->moved_to[k] >= 0 && f->moved_to[k] != k;
        bool keep = repl[k] || (!moved && (!f->dup[k] || needed[k] ||
                                           i->opcode == HS_OP_PARAMETER));
        if (!keep) {
            c->instrs[k] = NULL;
            continue;
        }
        for (int o = 0; o < i->n_operands; o++)
            if (i->operands[o]->parent == c && i->operands[o]->scratch >= 0)
                needed[i->operands[o]->scratch] = true;
    }
    int w = 0;
    for (int k = 0; k < n; k++) {
        hs_instruction *i = repl[k] ? repl[k] : c->instrs[k];
        if (!i)
            continue;
        for (int o = 0; o < i->n_operands; o++) {
            hs_instruction *op = i->operands[o];
            if (op->parent == c && op->scratch >= 0 && repl[op->scratch])
                i->operands[o] = repl[op->scratch];
        }
        c->instrs[w++] = i;
    }
    c->n_instrs = w;
    if (c->root && c->root->scratch >= 0 && repl[c->root->scratch])
        c->root = repl[c->root->scratch];
    free(needed);
    return true;
}

static hs_status fuse_computation(fuser *f, hs_computation *c,
                                  hs_computation ***fused, int *n_fused,
                                  const hs_pass_context *ctx, hs_error *err)
{
    f->c = c;
    f->n = c->n_instrs;
    f->n_members = 0;
    f->n_groups = 0;
    if (f->n < 2)
        return HS_OK;
    f->users = hs_computation_users(c); /* sets scratch = position */
    int n = f->n;
    f->moved_to = malloc(sizeof *f->moved_to * (size_t)n);
    f->acc_group = malloc(sizeof *f->acc_group * (size_t)n);
    f->acc_users = calloc((size_t)n, sizeof *f->acc_users);
    f->acc_copied = calloc((size_t)n, sizeof *f->acc_copied);
    f->acc_reuse = calloc((size_t)n, sizeof *f->acc_reuse);
    f->seen = malloc(sizeof *f->seen * (size_t)n);
    f->dup = calloc((size_t)n, sizeof *f->dup);
    f->reuse = calloc((size_t)n, sizeof *f->reuse);
    f->clone = calloc((size_t)n, sizeof *f->clone);
    f->clone_suffix = calloc((size_t)n, sizeof *f->clone_suffix);
    hs_instruction **repl = calloc((size_t)n, sizeof *repl);
    hs_status st = HS_OK;
    if (!f->users || !f->moved_to || !f->acc_group || !f->acc_users ||
        !f->acc_copied || !f->acc_reuse || !f->seen || !f->dup ||
        !f->reuse || !f->clone || !f->clone_suffix || !repl) {
        st = hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        goto out;
    }
    for (int k = 0; k < n; k++)
        f->moved_to[k] = f->acc_group[k] = f->seen[k] = -1;
    st = form_groups(f, ctx, err);
    if (st || f->n_groups == 0)
        goto out;
    hs_computation **list = realloc(*fused, sizeof *list *
                                                (size_t)(*n_fused +
                                                         f->n_groups));
    if (!list) {
        st = hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        goto out;
    }
    *fused = list;
    /* Groups were formed from the root down; build them in definition
     * order so that fusion numbers grow through the computation. */
    for (int g = f->n_groups - 1; g >= 0; g--) {
        hs_computation *fc = NULL;
        hs_instruction *fusion = build_fusion(f, &f->groups[g], &fc);
        if (!fusion) {
            st = hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
            break;
        }
        repl[f->groups[g].root] = fusion;
        list[(*n_fused)++] = fc;
    }
    /* The fusions were appended to c->instrs; rebuild() puts them in
     * place of their roots (or, after an error, drops nothing else). */
    c->n_instrs = n;
    if (!rebuild(f, repl) && !st)
        st = hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
out:
    free(f->moved_to);
    free(f->acc_group);
    free(f->acc_users);
    free(f->acc_copied);
    free(f->acc_reuse);
    free(f->seen);
    free(f->dup);
    free(f->reuse);
    free(f->clone);
    free(f->clone_suffix);
    free(repl);
    f->moved_to = f->acc_group = f->acc_users = f->seen = NULL;
    f->dup = f->reuse = f->acc_copied = f->acc_reuse = NULL;
    f->clone = NULL;
    f->clone_suffix = NULL;
    return st;
}

/* Puts every fused computation just before the computation that calls it,
 * keeping callees before callers, and renumbers computation ids. */
static bool place_fused(hs_module *m, int n_before)
{
    hs_computation **order = malloc(sizeof *order * (size_t)m->n_comps);
    if (!order)
        return false;
    int w = 0;
    for (int c = 0; c < n_before; c++) {
        hs_computation *comp = m->comps[c];
        for (int k = 0; k < comp->n_instrs; k++) {
            const hs_instruction *i = comp->instrs[k];
            if (i->opcode == HS_OP_FUSION && i->n_called == 1 &&
                i->called[0]->id >= n_before)
                order[w++] = i->called[0];
        }
        order[w++] = comp;
    }
    /* Fusions that did not survive (none today) leave their computation
     * unreferenced; keep it at the end rather than lose it. */
    for (int c = n_before; c < m->n_comps && w < m->n_comps; c++) {
        bool placed = false;
        for (int k = 0; k < w && !placed; k++)
            placed = order[k] == m->comps[c];
        if (!placed)
            order[w++] = m->comps[c];
    }
    memcpy(m->comps, order, sizeof *order * (size_t)m->n_comps);
    for (int c = 0; c < m->n_comps; c++)
        m->comps[c]->id = c;
    free(order);
    return true;
}

hs_status hs_pass_fusion_run(hs_module *m, hs_pass_context *ctx,
                             bool *changed, hs_error *err)
{
    name_set names = {0};
    bool *applied = applied_computations(m);
    hs_status st = applied ? HS_OK
                           : hs_error_set(err, HS_ERR_NOMEM,
                                          "out of host memory");
    for (int c = 0; !st && c < m->n_comps; c++) {
        const hs_computation *comp = m->comps[c];
        st = names_add(&names, comp->name) ? HS_OK : HS_ERR_NOMEM;
        for (int k = 0; !st && k < comp->n_instrs; k++)
            if (!names_add(&names, comp->instrs[k]->name))
                st = HS_ERR_NOMEM;
    }
    if (st == HS_ERR_NOMEM)
        hs_error_set(err, st, "out of host memory");
    fuser f = {.m = m, .names = &names};
    hs_computation **fused = NULL;
    int n_fused = 0, n_before = m->n_comps;
    for (int c = 0; !st && c < n_before; c++) {
        hs_computation *comp = m->comps[c];
        if (comp->is_fusion || applied[c])
            continue;
        st = hs_pass_context_check(ctx, err);
        if (!st)
            st = fuse_computation(&f, comp, &fused, &n_fused, ctx, err);
    }
    if (n_fused > 0) {
        *changed = true;
        for (int c = 0; c < m->n_comps; c++)
            m->comps[c]->id = c; /* place_fused reads positions */
        if (!place_fused(m, n_before) && !st)
            st = hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    }
    free(fused);
    free(f.members);
    free(f.groups);
    free(f.h.v);
    free(names.keys);
    free(applied);
    return st;
}
