/* reroll.c - the repeats and scan section of a what-if (hs_whatif.h): the
 * inverse of unrolling. The runs of repeated layers come from the group
 * tree; the largest run of the entry computation that rerolls is rewritten
 * the way torch_xla's scan_layers would have traced it, one `while` (made
 * by hs_scan) whose body is one layer:
 *
 *   - the layers must be isomorphic instruction by instruction (opcode,
 *     shape, attributes, called computations, edges inside the layer);
 *     when two differ, scan.reason names both instructions and what
 *     differs, as scan_layers' homogeneity check does;
 *   - each operand a layer takes from outside itself is one of
 *       a carry     (layer j reads instruction p of layer j-1; layer 0
 *                    reads the value from before the run: the init),
 *       an invariant (every layer reads the same value: passed through the
 *                    loop as a carry that the body returns unchanged),
 *       a stacked input (each layer reads its own value from before the
 *                    run: stacked [L, ...] in the graph, reshape +
 *                    concatenate, and sliced at the step in the body);
 *   - per-layer entry parameters (parameters inside the layers) become one
 *     new entry parameter [L, ...] each, appended after the parameters the
 *     module keeps; its argument is the layers' arguments stacked in layer
 *     order (argument l of the stack = the parameter of layer l), which is
 *     how the equivalence run builds it; per-layer constants whose values
 *     differ are stacked in the graph, equal ones are copied into the body;
 *   - values of a layer read after the run are the scan's ys (the last
 *     layer's carries are the loop's results); ys of 16-bit floats are
 *     accumulated in f32 (exact both ways), as hs_scan stacks f32, s32 and
 *     pred.
 * Everything outside the run is copied unchanged. Both modules are
 * compiled with the default pipeline, and run on the same drawn arguments
 * when the module is executable and small enough. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_builder.h"
#include "hloscope/hs_compile.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_scan.h"
#include "whatif/whatif_internal.h"

/* ---- the plan: which layer each instruction is in, and the slots ---------- */

/* Parameters and constants are never inside a layer: they are what the
 * layers read, and the slots say how. */
typedef enum slot_kind {
    SLOT_CARRY,         /* layer j reads position p of layer j-1 */
    SLOT_INVARIANT,     /* every layer reads the same value */
    SLOT_CONSTANT,      /* constants equal in every layer: copied */
    SLOT_STACKED,       /* each its own value: stacked in the graph */
    SLOT_STACKED_PARAM  /* each its own entry parameter, read by that layer
                           only: one new [L, ...] entry parameter */
} slot_kind;

/* One value entering the body from outside the layer. */
typedef struct slot {
    slot_kind kind;
    int p;                     /* carry: position in the previous layer */
    const hs_instruction *v0;  /* layer 0's value (a carry's init) */
    int rk, ro;                /* the first reader: operand ro of position
                                  rk, so layer j's value is
                                  at(j, rk)->operands[ro] */
    int index;                 /* carry/invariant: carry index; stacked:
                                  xs index */
} slot;

typedef struct plan {
    const hs_module *m;
    const hs_computation *c; /* the entry */
    const hs_group_tree *t;
    int run;                 /* the run's group */
    int L, n;                /* layers, instructions per layer */
    const char **layer_path; /* group path of each layer */
    const hs_instruction **in; /* in[j * n + k]: instruction k of layer j */
    int *layer_of;           /* by id: layer, or -1 outside the run */
    int *pos_of;             /* by id: position in its layer */
    int n_ids;
    /* Per position of layer 0: for each operand the slot it reads (-1:
     * inside the layer). */
    int **operand_slot;
    /* by id: the one layer that reads it, -1 for after the run, -2 for
     * several readers' places, -3 for none */
    int *reader_layer;
    int n_slots, cap_slots;
    slot *slots;
    int n_carry, n_invariant, n_xs;
    /* positions read after the run: y index, or -1 */
    int *y_of;
    int n_ys;
    const hs_instruction *ys_pos[HS_SCAN_MAX_YS];
    char reason[512];
    char phase_note[512]; /* when only some of the run's layers are kept */
} plan;

static void plan_free(plan *p)
{
    if (p->operand_slot)
        for (int k = 0; k < p->n; k++)
            free(p->operand_slot[k]);
    free(p->operand_slot);
    free(p->reader_layer);
    free(p->y_of);
    free(p->slots);
    free(p->in);
    free(p->layer_of);
    free(p->pos_of);
    free(p->layer_path);
}

static bool refuse(plan *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static bool refuse(plan *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->reason, sizeof p->reason, fmt, ap);
    va_end(ap);
    return false;
}

static int layer_of(const plan *p, const hs_instruction *i)
{
    return i && i->id >= 0 && i->id < p->n_ids ? p->layer_of[i->id] : -1;
}

/* The layer (child index of the run) an instruction's innermost group sits
 * under, or -1. */
static int layer_of_group(const hs_group_tree *t, int run, int g)
{
    while (g >= 0 && t->groups[g].parent != run)
        g = t->groups[g].parent;
    if (g < 0)
        return -1;
    const hs_group *r = &t->groups[run];
    for (int j = 0; j < r->n_children; j++)
        if (r->children[j] == g)
            return j;
    return -1;
}

/* Fills layer_of, pos_of and in[] from the group tree. */
static bool plan_layers(plan *p)
{
    const hs_group *r = &p->t->groups[p->run];
    p->L = r->n_children;
    p->n_ids = p->m->next_id;
    p->layer_of = malloc(sizeof(int) * (size_t)p->n_ids);
    p->pos_of = calloc((size_t)p->n_ids, sizeof(int));
    p->layer_path = calloc((size_t)p->L, sizeof(char *));
    int *count = calloc((size_t)p->L, sizeof(int));
    if (!p->layer_of || !p->pos_of || !p->layer_path || !count) {
        free(count);
        return refuse(p, "out of host memory");
    }
    for (int j = 0; j < p->L; j++)
        p->layer_path[j] = p->t->groups[r->children[j]].path;
    for (int k = 0; k < p->n_ids; k++)
        p->layer_of[k] = -1;
    for (int k = 0; k < p->c->n_instrs; k++) {
        const hs_instruction *i = p->c->instrs[k];
        int g = i->id < p->t->n_ids ? p->t->group_of[i->id] : -1;
        int j = i->opcode == HS_OP_PARAMETER || i->opcode == HS_OP_CONSTANT
                    ? -1
                    : layer_of_group(p->t, p->run, g);
        p->layer_of[i->id] = j;
        if (j >= 0)
            p->pos_of[i->id] = count[j]++;
    }
    p->n = count[0];
    for (int j = 1; j < p->L; j++)
        if (count[j] != p->n) {
            int n = count[j];
            free(count);
            return refuse(p,
                          "%s has %d instructions but %s has %d; layers "
                          "must be identical to be rerolled",
                          p->layer_path[j], n, p->layer_path[0], p->n);
        }
    free(count);
    p->in = calloc((size_t)p->L * (size_t)p->n, sizeof *p->in);
    if (!p->in || p->n == 0)
        return refuse(p, p->n ? "out of host memory" : "empty layers");
    for (int k = 0; k < p->c->n_instrs; k++) {
        const hs_instruction *i = p->c->instrs[k];
        int j = p->layer_of[i->id];
        if (j >= 0)
            p->in[(size_t)j * p->n + p->pos_of[i->id]] = i;
    }
    return true;
}

static const hs_instruction *at(const plan *p, int j, int k)
{
    return p->in[(size_t)j * p->n + k];
}

/* [L, dims of s...]: a stacked parameter's shape. */
static hs_shape stacked_shape(const plan *p, const hs_shape *s)
{
    int64_t dims[HS_MAX_RANK];
    dims[0] = p->L;
    for (int d = 0; d < s->rank; d++)
        dims[d + 1] = s->dims[d];
    return hs_shape_make(s->dtype, s->rank + 1, dims);
}

/* ---- isomorphism ---------------------------------------------------------- */

static bool same_computation(const hs_computation *a, const hs_computation *b,
                             int depth);

static bool same_bytes(const void *a, const void *b, size_t n)
{
    return (!a && !b) || (a && b && memcmp(a, b, n) == 0);
}

static bool same_text(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* What differs between a and b in what they compute (names and metadata
 * aside), or NULL. Operands are compared by the caller. */
static const char *attribute_difference(const hs_instruction *a,
                                        const hs_instruction *b, int depth)
{
    if (a->opcode != b->opcode)
        return "opcode";
    if (!hs_shape_compatible(&a->shape, &b->shape))
        return "shape";
    if (a->n_operands != b->n_operands)
        return "operand count";
    if (a->opcode != HS_OP_PARAMETER && a->index != b->index)
        return "index";
    if (a->n_dims != b->n_dims ||
        !same_bytes(a->dims, b->dims, sizeof(int64_t) * (size_t)a->n_dims))
        return "dimensions";
    if (!same_bytes(a->dot, b->dot, sizeof *a->dot))
        return "dot dimensions";
    if (!same_bytes(a->slice, b->slice, sizeof *a->slice))
        return "slice";
    if (a->direction != b->direction || !same_text(a->compare_type,
                                                   b->compare_type))
        return "comparison";
    if (!same_text(a->custom_call_target, b->custom_call_target) ||
        !same_text(a->fusion_kind, b->fusion_kind))
        return "target";
    if (a->n_extra != b->n_extra)
        return "attributes";
    for (int k = 0; k < a->n_extra; k++) {
        if (!same_text(a->extra[k].key, b->extra[k].key))
            return a->extra[k].key ? a->extra[k].key : "attributes";
        /* A collective's channel_id names the instance, not what it
         * computes: one loop body has one. */
        if (a->extra[k].key && strcmp(a->extra[k].key, "channel_id") == 0)
            continue;
        if (!same_text(a->extra[k].value, b->extra[k].value))
            return a->extra[k].key ? a->extra[k].key : "attributes";
    }
    if (a->n_called != b->n_called)
        return "called computations";
    for (int k = 0; k < a->n_called; k++)
        if (!same_computation(a->called[k], b->called[k], depth + 1))
            return "called computation";
    return NULL;
}

static int position_in(const hs_computation *c, const hs_instruction *i)
{
    for (int k = 0; k < c->n_instrs; k++)
        if (c->instrs[k] == i)
            return k;
    return -1;
}

/* Called computations (reducers, branches) are equal when they are the
 * same, or structurally identical with equal literals. */
static bool same_computation(const hs_computation *a, const hs_computation *b,
                             int depth)
{
    if (a == b)
        return true;
    if (!a || !b || depth > 8 || a->n_instrs != b->n_instrs ||
        a->n_params != b->n_params || position_in(a, a->root) !=
                                          position_in(b, b->root))
        return false;
    for (int k = 0; k < a->n_instrs; k++) {
        const hs_instruction *x = a->instrs[k], *y = b->instrs[k];
        if (attribute_difference(x, y, depth) ||
            (x->opcode == HS_OP_PARAMETER && x->index != y->index) ||
            !same_bytes(x->literal, y->literal,
                        (size_t)hs_instruction_literal_bytes(x)))
            return false;
        for (int o = 0; o < x->n_operands; o++)
            if (position_in(a, x->operands[o]) !=
                position_in(b, y->operands[o]))
                return false;
    }
    return true;
}

static bool literal_equal(const hs_instruction *a, const hs_instruction *b)
{
    return same_bytes(a->literal, b->literal,
                      (size_t)hs_instruction_literal_bytes(a)) &&
           same_text(a->literal_text, b->literal_text);
}

/* Writes into buf how instruction k of layers ja and jb differ, as
 * scan_layers' homogeneity check says it. */
static void say_difference(const plan *p, int ja, int jb, int k,
                           const char *what, char *buf, size_t size)
{
    const hs_instruction *a = at(p, ja, k), *b = at(p, jb, k);
    char sa[128], sb[128];
    hs_shape_print(&a->shape, false, sa, sizeof sa);
    hs_shape_print(&b->shape, false, sb, sizeof sb);
    snprintf(buf, size,
             "%s and %s differ at instruction %d of %d: %%%s (%s %s) vs "
             "%%%s (%s %s): %s differs",
             p->layer_path[ja], p->layer_path[jb], k, p->n, a->name,
             hs_opcode_name(a->opcode), sa, b->name,
             hs_opcode_name(b->opcode), sb, what);
}

static bool differs(plan *p, int j, int k, const char *what)
{
    say_difference(p, 0, j, k, what, p->reason, sizeof p->reason);
    return false;
}

static const hs_instruction *slot_value(const plan *p, const slot *s, int j)
{
    return at(p, j, s->rk)->operands[s->ro];
}

static bool same_slot(const plan *p, const slot *a, const slot *b)
{
    if (a->kind != b->kind || a->v0 != b->v0 ||
        (a->kind == SLOT_CARRY && a->p != b->p))
        return false;
    if (a->kind == SLOT_STACKED || a->kind == SLOT_STACKED_PARAM)
        for (int j = 1; j < p->L; j++)
            if (slot_value(p, a, j) != slot_value(p, b, j))
                return false;
    return true;
}

/* Who reads each value: one layer, after the run, or several places. */
static bool plan_readers(plan *p)
{
    p->reader_layer = malloc(sizeof(int) * (size_t)p->n_ids);
    if (!p->reader_layer)
        return refuse(p, "out of host memory");
    for (int k = 0; k < p->n_ids; k++)
        p->reader_layer[k] = -3;
    for (int k = 0; k < p->c->n_instrs; k++) {
        const hs_instruction *i = p->c->instrs[k];
        for (int o = 0; o < i->n_operands; o++) {
            int *r = &p->reader_layer[i->operands[o]->id];
            int here = p->layer_of[i->id];
            *r = *r == -3 || *r == here ? here : -2;
        }
    }
    p->reader_layer[p->c->root->id] = -2;
    return true;
}

/* ---- aligning the layers ---------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

static uint64_t shape_hash(const hs_shape *s)
{
    uint64_t h = mix((uint64_t)s->dtype, (uint64_t)s->rank);
    for (int d = 0; d < s->rank; d++)
        h = mix(h, (uint64_t)s->dims[d]);
    return mix(h, (uint64_t)s->n_elems);
}

typedef struct keyed {
    uint64_t key;
    int k;
} keyed;

static int keyed_order(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->k - y->k;
}

/* Keeps the longest stretch of consecutive layers whose instructions have
 * the same keys (h2, as a multiset). A cut that falls a few instructions
 * off the layer's own boundary (the Mixtral train step's first forward
 * layer lacks the opt-barrier the others start with, the remat of the
 * layer before it) leaves the first or last layer unlike the others: they
 * stay outside the loop, unrolled, and the note says so. */
static void keep_longest_alike(plan *p, const uint64_t *h2)
{
    uint64_t *sig = calloc((size_t)p->L, sizeof *sig);
    if (!sig)
        return;
    for (int j = 0; j < p->L; j++)
        for (int k = 0; k < p->n; k++)
            sig[j] += mix(h2[at(p, j, k)->id], 17);
    int best_a = 0, best_len = 0;
    for (int a = 0; a < p->L;) {
        int b = a + 1;
        while (b < p->L && sig[b] == sig[a])
            b++;
        if (b - a > best_len)
            best_a = a, best_len = b - a;
        a = b;
    }
    free(sig);
    if (best_len < 2 || best_len == p->L)
        return; /* the check below says what differs */
    /* what sets the nearest other layer apart, in definition order */
    int ja = best_a > 0 ? best_a : best_a + best_len - 1;
    int jb = best_a > 0 ? best_a - 1 : best_a + best_len;
    char why[400] = "";
    for (int k = 0; k < p->n && !why[0]; k++) {
        const char *d = attribute_difference(at(p, ja, k), at(p, jb, k), 0);
        if (d)
            say_difference(p, ja, jb, k, d, why, sizeof why);
    }
    for (int k = 0; k < p->c->n_instrs; k++) {
        int *l = &p->layer_of[p->c->instrs[k]->id];
        *l = *l >= best_a && *l < best_a + best_len ? *l - best_a : -1;
    }
    memmove(p->in, p->in + (size_t)best_a * p->n,
            sizeof *p->in * (size_t)best_len * (size_t)p->n);
    memmove(p->layer_path, p->layer_path + best_a,
            sizeof *p->layer_path * (size_t)best_len);
    snprintf(p->phase_note, sizeof p->phase_note,
             "layers %d..%d of %d rerolled (%s..%s); the others differ "
             "from them and stay unrolled: %s",
             best_a, best_a + best_len - 1, p->L, p->layer_path[0],
             p->layer_path[best_len - 1],
             why[0] ? why : "they hold other instructions");
    p->L = best_len;
}

/* The group tree finds layers as sets (its fingerprint does not depend on
 * order), and a layer cut where the fewest values cross may list its
 * instructions in another order than the layer before it. Each layer is
 * put in layer 0's order by a structural key: what an instruction
 * computes from what (operands inside the layer by their key, others by
 * shape only: layer 0 reads the run's input where the others read the
 * layer before), then what reads it inside the layer. Equal keys keep
 * definition order; the isomorphism check that follows proves or refutes
 * the match. */
static bool plan_align(plan *p)
{
    uint64_t *h = calloc((size_t)p->n_ids, sizeof *h);
    uint64_t *h2 = calloc((size_t)p->n_ids, sizeof *h2);
    keyed *k0 = malloc(sizeof *k0 * (size_t)p->n);
    keyed *kj = malloc(sizeof *kj * (size_t)p->n);
    const hs_instruction **row = malloc(sizeof *row * (size_t)p->n);
    bool ok = h && h2 && k0 && kj && row;
    for (int k = 0; ok && k < p->c->n_instrs; k++) {
        const hs_instruction *i = p->c->instrs[k];
        int j = p->layer_of[i->id];
        if (j < 0)
            continue;
        uint64_t x = mix(mix((uint64_t)i->opcode, shape_hash(&i->shape)),
                         (uint64_t)i->n_operands);
        if (i->opcode == HS_OP_GET_TUPLE_ELEMENT)
            x = mix(x, (uint64_t)i->index);
        for (int o = 0; o < i->n_operands; o++) {
            const hs_instruction *v = i->operands[o];
            x = mix(x, p->layer_of[v->id] == j
                           ? h[v->id]
                           : mix(977, shape_hash(&v->shape)));
        }
        h[i->id] = x;
        h2[i->id] = x;
    }
    for (int k = 0; ok && k < p->c->n_instrs; k++) {
        const hs_instruction *i = p->c->instrs[k];
        int j = p->layer_of[i->id];
        for (int o = 0; j >= 0 && o < i->n_operands; o++)
            if (p->layer_of[i->operands[o]->id] == j)
                h2[i->operands[o]->id] += mix(h[i->id], (uint64_t)o);
    }
    if (ok)
        keep_longest_alike(p, h2);
    for (int k = 0; ok && k < p->n; k++)
        k0[k] = (keyed){h2[at(p, 0, k)->id], k};
    if (ok)
        qsort(k0, (size_t)p->n, sizeof *k0, keyed_order);
    for (int j = 1; ok && j < p->L; j++) {
        for (int k = 0; k < p->n; k++)
            kj[k] = (keyed){h2[at(p, j, k)->id], k};
        qsort(kj, (size_t)p->n, sizeof *kj, keyed_order);
        for (int r = 0; r < p->n; r++) {
            if (kj[r].key != k0[r].key) {
                /* Said as scan_layers says it when the definition orders
                 * agree up to a differing instruction; else the first
                 * instruction of layer j without a twin. */
                for (int k = 0; k < p->n; k++) {
                    const char *d = attribute_difference(at(p, 0, k),
                                                         at(p, j, k), 0);
                    if (d) {
                        differs(p, j, k, d);
                        break;
                    }
                }
                ok = false;
                if (p->reason[0])
                    break;
                const hs_instruction *a = at(p, j, kj[r].k);
                char sa[128];
                hs_shape_print(&a->shape, false, sa, sizeof sa);
                refuse(p,
                       "%s has %%%s (%s %s) where %s has nothing computed "
                       "the same way",
                       p->layer_path[j], a->name, hs_opcode_name(a->opcode),
                       sa, p->layer_path[0]);
                ok = false;
                break;
            }
            row[k0[r].k] = at(p, j, kj[r].k);
        }
        for (int k = 0; ok && k < p->n; k++) {
            p->in[(size_t)j * p->n + k] = row[k];
            p->pos_of[row[k]->id] = k;
        }
    }
    if (!(h && h2 && k0 && kj && row))
        refuse(p, "out of host memory");
    free(h);
    free(h2);
    free(k0);
    free(kj);
    free(row);
    return ok;
}


/* Carries a slot takes: a tuple's elements, else one. */
static int carry_width(const slot *s)
{
    return s->kind == SLOT_CARRY && hs_shape_is_tuple(&s->v0->shape)
               ? s->v0->shape.n_elems
               : 1;
}

static int add_slot(plan *p, slot s)
{
    for (int k = 0; k < p->n_slots; k++)
        if (same_slot(p, &p->slots[k], &s))
            return k;
    if (p->n_slots == p->cap_slots) {
        int cap = p->cap_slots ? 2 * p->cap_slots : 16;
        slot *q = realloc(p->slots, sizeof *q * (size_t)cap);
        if (!q)
            return -1;
        p->slots = q;
        p->cap_slots = cap;
    }
    /* A tuple carry (the operand of an opt-barrier between layers) is
     * carried as its elements: hs_scan carries arrays. */
    int width = s.kind == SLOT_CARRY && hs_shape_is_tuple(&s.v0->shape)
                    ? s.v0->shape.n_elems
                    : 1;
    for (int e = 0; width > 1 && e < width; e++)
        if (hs_shape_is_tuple(&s.v0->shape.elems[e]))
            return -1;
    p->n_carry += width - 1;
    s.index = s.kind == SLOT_CARRY       ? p->n_carry++ - (width - 1)
              : s.kind == SLOT_INVARIANT ? p->n_invariant++
              : s.kind == SLOT_CONSTANT  ? -1
                                         : p->n_xs++;
    p->slots[p->n_slots] = s;
    return p->n_slots++;
}

/* The slot of operand o of position k, which layer 0 takes from outside. */
static int classify_operand(plan *p, int k, int o)
{
    const hs_instruction *v0 = at(p, 0, k)->operands[o];
    bool all_same = true, carry = true, outside = true;
    bool equal_constants = v0->opcode == HS_OP_CONSTANT;
    bool own_params = v0->opcode == HS_OP_PARAMETER &&
                      p->reader_layer[v0->id] == 0 &&
                      !hs_shape_is_tuple(&v0->shape);
    int cp = -1;
    for (int j = 1; j < p->L; j++) {
        const hs_instruction *v = at(p, j, k)->operands[o];
        int lj = layer_of(p, v);
        all_same = all_same && v == v0;
        if (lj == j - 1 && (cp < 0 || cp == p->pos_of[v->id]))
            cp = p->pos_of[v->id];
        else
            carry = false;
        outside = outside && lj < 0;
        equal_constants = equal_constants && v->opcode == HS_OP_CONSTANT &&
                          literal_equal(v, v0);
        own_params = own_params && v->opcode == HS_OP_PARAMETER &&
                     p->reader_layer[v->id] == j;
        if (lj >= 0 && lj != j - 1)
            return refuse(p,
                          "%%%s of %s reads %%%s of %s: a layer may only "
                          "read the layer before it",
                          at(p, j, k)->name, p->layer_path[j], v->name,
                          p->layer_path[lj]),
                   -2;
        if (!hs_shape_compatible(&v->shape, &v0->shape))
            return differs(p, j, k, "an operand's shape"), -2;
    }
    slot s = {.v0 = v0, .p = -1, .rk = k, .ro = o};
    if (equal_constants)
        s.kind = SLOT_CONSTANT;
    else if (all_same)
        s.kind = SLOT_INVARIANT;
    else if (carry && cp >= 0)
        s.kind = SLOT_CARRY, s.p = cp;
    else if (own_params)
        s.kind = SLOT_STACKED_PARAM;
    else if (outside)
        s.kind = SLOT_STACKED;
    else
        return refuse(p,
                      "operand %d of %%%s (%s) comes partly from the "
                      "previous layer and partly from before the run",
                      o, at(p, 0, k)->name, p->layer_path[0]),
               -2;
    if ((s.kind == SLOT_STACKED || s.kind == SLOT_STACKED_PARAM) &&
        (hs_shape_is_tuple(&v0->shape) || v0->shape.rank >= HS_MAX_RANK))
        return refuse(p,
                      "%%%s, read by %s, differs per layer but cannot be "
                      "stacked (a tuple, or rank %d already)",
                      v0->name, p->layer_path[0], v0->shape.rank),
               -2;
    int r = add_slot(p, s);
    return r >= 0 ? r
                  : (refuse(p, "%%%s carries a nested tuple or host memory "
                               "ran out", v0->name),
                     -2);
}

/* Checks every layer against layer 0 and classifies its inputs. */
static bool plan_slots(plan *p)
{
    p->operand_slot = calloc((size_t)p->n, sizeof(int *));
    if (!p->operand_slot)
        return refuse(p, "out of host memory");
    for (int k = 0; k < p->n; k++) {
        const hs_instruction *a = at(p, 0, k);
        p->operand_slot[k] = malloc(sizeof(int) * (size_t)(a->n_operands + 1));
        if (!p->operand_slot[k])
            return refuse(p, "out of host memory");
        for (int j = 1; j < p->L; j++) {
            const hs_instruction *b = at(p, j, k);
            const char *d = attribute_difference(a, b, 0);
            if (d)
                return differs(p, j, k, d);
            for (int o = 0; o < a->n_operands; o++) {
                int la = layer_of(p, a->operands[o]);
                int lb = layer_of(p, b->operands[o]);
                if (la == 0 && !(lb == j && p->pos_of[b->operands[o]->id] ==
                                                p->pos_of[a->operands[o]->id]))
                    return differs(p, j, k, "an operand");
                if (la < 0 && lb == j)
                    return differs(p, j, k, "an operand");
            }
        }
        for (int o = 0; o < a->n_operands; o++) {
            p->operand_slot[k][o] = -1;
            if (layer_of(p, a->operands[o]) == 0)
                continue;
            int s = classify_operand(p, k, o);
            if (s < 0)
                return false;
            p->operand_slot[k][o] = s;
        }
    }
    return true;
}

/* Positions whose values are read after the run become ys, except the
 * last layer's carries, which are the loop's results. */
static bool plan_outputs(plan *p)
{
    p->y_of = malloc(sizeof(int) * (size_t)p->n);
    bool *read = calloc((size_t)p->L * (size_t)p->n, sizeof(bool));
    if (!p->y_of || !read) {
        free(read);
        return refuse(p, "out of host memory");
    }
    for (int k = 0; k < p->n; k++)
        p->y_of[k] = -1;
    for (int k = 0; k < p->c->n_instrs; k++) {
        const hs_instruction *i = p->c->instrs[k];
        if (layer_of(p, i) >= 0)
            continue;
        for (int o = 0; o < i->n_operands; o++) {
            int j = layer_of(p, i->operands[o]);
            if (j >= 0)
                read[(size_t)j * p->n + p->pos_of[i->operands[o]->id]] = true;
        }
    }
    if (layer_of(p, p->c->root) >= 0)
        read[(size_t)layer_of(p, p->c->root) * p->n +
             p->pos_of[p->c->root->id]] = true;
    bool ok = true;
    for (int j = 0; j < p->L && ok; j++)
        for (int k = 0; k < p->n && ok; k++) {
            if (!read[(size_t)j * p->n + k] || p->y_of[k] >= 0)
                continue;
            bool is_carry = false;
            for (int s = 0; s < p->n_slots; s++)
                is_carry |= p->slots[s].kind == SLOT_CARRY &&
                            p->slots[s].p == k;
            if (is_carry && j == p->L - 1)
                continue;
            if (p->n_ys == HS_SCAN_MAX_YS) {
                ok = refuse(p,
                            "more than %d values of each layer are read "
                            "after the run (the most a scan stacks)",
                            HS_SCAN_MAX_YS);
                break;
            }
            p->ys_pos[p->n_ys] = at(p, 0, k);
            p->y_of[k] = p->n_ys++;
        }
    free(read);
    return ok;
}

/* ---- the rewrite ---------------------------------------------------------- */

typedef struct rewrite {
    plan *p;
    hs_module *dst;
    hs_builder *b;
    hs_instruction **map;      /* by source id: its copy in the new entry */
    hs_instruction **body_map; /* by position of layer 0: its copy */
    hs_instruction **slot_body; /* by slot: a constant's copy in the body */
    hs_instruction *while_i;
    hs_instruction **carry_out; /* n_carry + n_invariant */
    hs_instruction *ys_out[HS_SCAN_MAX_YS];
    int n_kept_params;
} rewrite;

static bool narrow_float(hs_dtype t)
{
    return t == HS_BF16 || t == HS_F16;
}

/* Appends a copy of s with operands ops to computation c of dst; called
 * computations are dst's (the clone keeps the source's order). */
static hs_instruction *copy_into(rewrite *rw, hs_computation *c,
                                 const hs_instruction *s,
                                 hs_instruction *const *ops)
{
    hs_shape shape;
    if (!hs_shape_copy(rw->dst->arena, &shape, &s->shape))
        return NULL;
    hs_instruction *d =
        hs_computation_add(c, s->opcode, &shape, ops, s->n_operands, NULL);
    if (!d || !hs_instruction_copy_attributes(d, s))
        return NULL;
    if (s->n_called > 0) {
        hs_computation **called =
            malloc(sizeof *called * (size_t)s->n_called);
        if (!called)
            return NULL;
        for (int k = 0; k < s->n_called; k++)
            called[k] = rw->dst->comps[hs_computation_index(rw->p->m,
                                                            s->called[k])];
        hs_instruction_set_called(d, called, s->n_called);
        free(called);
        if (!d->called)
            return NULL;
    }
    return d;
}

/* [1, dims...] of x, in x's computation. */
static hs_instruction *with_unit_axis(hs_builder *b, hs_instruction *x)
{
    int64_t dims[HS_MAX_RANK];
    dims[0] = 1;
    for (int d = 0; d < x->shape.rank; d++)
        dims[d + 1] = x->shape.dims[d];
    return hs_b_reshape(b, x, x->shape.rank + 1, dims);
}

static void body_fn(hs_builder *body, hs_scan_step *st, void *user)
{
    rewrite *rw = user;
    plan *p = rw->p;
    hs_computation *bc = hs_builder_computation(body);
    hs_instruction *ops_small[16];
    for (int k = 0; k < p->n; k++) {
        const hs_instruction *s = at(p, 0, k);
        hs_instruction **ops = ops_small;
        if (s->n_operands > 16 &&
            !(ops = malloc(sizeof *ops * (size_t)s->n_operands))) {
            hs_builder_fail(body, HS_ERR_NOMEM, "reroll: out of host memory");
            return;
        }
        for (int o = 0; o < s->n_operands; o++) {
            int sl = p->operand_slot[k][o];
            if (sl < 0) {
                ops[o] = rw->body_map[p->pos_of[s->operands[o]->id]];
                continue;
            }
            const slot *x = &p->slots[sl];
            if (x->kind == SLOT_CONSTANT && !rw->slot_body[sl])
                rw->slot_body[sl] = copy_into(rw, bc, x->v0, NULL);
            if (x->kind == SLOT_CARRY && hs_shape_is_tuple(&x->v0->shape) &&
                !rw->slot_body[sl])
                rw->slot_body[sl] = hs_b_tuple(body, &st->carry[x->index],
                                               x->v0->shape.n_elems);
            ops[o] = x->kind == SLOT_CARRY
                         ? (hs_shape_is_tuple(&x->v0->shape)
                                ? rw->slot_body[sl]
                                : st->carry[x->index])
                     : x->kind == SLOT_INVARIANT
                         ? st->carry[p->n_carry + x->index]
                     : x->kind == SLOT_CONSTANT ? rw->slot_body[sl]
                                                : st->x[x->index];
        }
        rw->body_map[k] = copy_into(rw, bc, s, ops);
        if (ops != ops_small)
            free(ops);
        if (!rw->body_map[k]) {
            hs_builder_fail(body, HS_ERR_NOMEM, "reroll: out of host memory");
            return;
        }
    }
    for (int s = 0; s < p->n_slots; s++) {
        const slot *x = &p->slots[s];
        if (x->kind == SLOT_CARRY)
            for (int e = 0; e < carry_width(x); e++)
                st->new_carry[x->index + e] =
                    hs_shape_is_tuple(&x->v0->shape)
                        ? hs_b_get_tuple_element(body, rw->body_map[x->p], e)
                        : rw->body_map[x->p];
        else if (x->kind == SLOT_INVARIANT)
            st->new_carry[p->n_carry + x->index] =
                st->carry[p->n_carry + x->index];
    }
    for (int y = 0; y < p->n_ys; y++) {
        hs_instruction *v = rw->body_map[p->pos_of[p->ys_pos[y]->id]];
        st->ys[y] = narrow_float(v->shape.dtype) ? hs_b_convert(body, v, HS_F32)
                                                 : v;
    }
    st->n_ys = p->n_ys;
}

/* The new entry's copy of v, a value from outside the run; constants
 * only the run read are copied here on demand. NULL when v is computed
 * after the loop must start (error on the builder). */
static hs_instruction *outside_value(rewrite *rw, const hs_instruction *v,
                                     const char *reader)
{
    if (!rw->map[v->id] && v->opcode == HS_OP_CONSTANT)
        rw->map[v->id] = copy_into(rw, hs_builder_computation(rw->b), v, NULL);
    if (!rw->map[v->id])
        hs_builder_fail(rw->b, HS_ERR_INVALID,
                        "%%%s, read by %s, is computed after values of the "
                        "run it reads are used",
                        v->name, reader);
    return rw->map[v->id];
}

/* The stacked [L, ...] input of slot s, in the new entry: a new parameter
 * for per-layer parameters, else the layers' values stacked in the graph. */
static hs_instruction *stacked_input(rewrite *rw, const slot *s, int *param)
{
    plan *p = rw->p;
    hs_builder *b = rw->b;
    if (s->kind == SLOT_STACKED_PARAM) {
        hs_shape sh = stacked_shape(p, &s->v0->shape);
        char name[256];
        snprintf(name, sizeof name, "%s.stacked", s->v0->name);
        return hs_b_parameter(b, (*param)++, &sh, name);
    }
    hs_instruction **parts = malloc(sizeof *parts * (size_t)p->L);
    if (!parts)
        return NULL;
    bool ok = true;
    for (int j = 0; j < p->L && ok; j++) {
        hs_instruction *v = outside_value(rw, slot_value(p, s, j),
                                          p->layer_path[j]);
        parts[j] = v ? with_unit_axis(b, v) : NULL;
        ok = parts[j] != NULL;
    }
    hs_instruction *r = ok ? hs_b_concatenate(b, parts, p->L, 0) : NULL;
    free(parts);
    return r;
}

static bool emit_while(rewrite *rw)
{
    plan *p = rw->p;
    hs_builder *b = rw->b;
    int nc = p->n_carry + p->n_invariant;
    hs_instruction **init = calloc((size_t)nc + 1, sizeof *init);
    hs_instruction **xs = calloc((size_t)p->n_xs + 1, sizeof *xs);
    rw->carry_out = hs_arena_alloc(rw->dst->arena,
                                   sizeof *rw->carry_out * ((size_t)nc + 1));
    rw->body_map = calloc((size_t)p->n, sizeof *rw->body_map);
    rw->slot_body = calloc((size_t)p->n_slots + 1, sizeof *rw->slot_body);
    if (!init || !xs || !rw->carry_out || !rw->body_map || !rw->slot_body) {
        free(init);
        free(xs);
        return false;
    }
    int param = rw->n_kept_params;
    bool ok = true;
    for (int s = 0; s < p->n_slots && ok; s++) {
        const slot *x = &p->slots[s];
        if (x->kind == SLOT_STACKED || x->kind == SLOT_STACKED_PARAM) {
            xs[x->index] = stacked_input(rw, x, &param);
            ok = xs[x->index] != NULL;
            continue;
        }
        if (x->kind == SLOT_CONSTANT)
            continue;
        hs_instruction *v = outside_value(rw, x->v0, p->layer_path[0]);
        ok = v != NULL;
        for (int e = 0; v && e < carry_width(x); e++)
            init[(x->kind == SLOT_CARRY ? 0 : p->n_carry) + x->index + e] =
                hs_shape_is_tuple(&x->v0->shape)
                    ? hs_b_get_tuple_element(b, v, e)
                    : v;
    }
    if (ok) {
        hs_scan_options so = {.scope = "reroll"};
        int n_ys = 0;
        rw->while_i = hs_scan(b, body_fn, rw, init, nc, xs, p->n_xs, &so,
                              rw->carry_out, rw->ys_out, &n_ys);
        ok = rw->while_i != NULL;
    }
    free(init);
    free(xs);
    return ok;
}

/* The new entry's value for instruction k of layer j, read after the run. */
static hs_instruction *run_output(rewrite *rw, const hs_instruction *v)
{
    plan *p = rw->p;
    if (!rw->while_i && !emit_while(rw))
        return NULL;
    int j = layer_of(p, v), k = p->pos_of[v->id];
    if (p->y_of[k] < 0 || j == p->L - 1) {
        for (int s = 0; s < p->n_slots; s++)
            if (p->slots[s].kind == SLOT_CARRY && p->slots[s].p == k &&
                j == p->L - 1)
                return hs_shape_is_tuple(&v->shape)
                           ? hs_b_tuple(rw->b,
                                        &rw->carry_out[p->slots[s].index],
                                        v->shape.n_elems)
                           : rw->carry_out[p->slots[s].index];
    }
    hs_instruction *ys = rw->ys_out[p->y_of[k]];
    int64_t start[HS_MAX_RANK] = {0}, limit[HS_MAX_RANK];
    for (int d = 0; d < ys->shape.rank; d++)
        limit[d] = ys->shape.dims[d];
    start[0] = j;
    limit[0] = j + 1;
    hs_instruction *r = hs_b_reshape(
        rw->b, hs_b_slice(rw->b, ys, start, limit, NULL), v->shape.rank,
        v->shape.dims);
    if (r && r->shape.dtype != v->shape.dtype)
        r = hs_b_convert(rw->b, r, v->shape.dtype);
    return r;
}

/* Whether entry parameter i is replaced by a stacked parameter. */
static bool stacked_away(const plan *p, const hs_instruction *i)
{
    for (int s = 0; s < p->n_slots; s++)
        if (p->slots[s].kind == SLOT_STACKED_PARAM)
            for (int j = 0; j < p->L; j++)
                if (slot_value(p, &p->slots[s], j) == i)
                    return true;
    return false;
}

/* Copies the entry, the run replaced by the while, into dst's new entry. */
static bool rewrite_entry(rewrite *rw)
{
    plan *p = rw->p;
    const hs_computation *c = p->c;
    hs_instruction *ops_small[16];
    int param = 0;
    for (int k = 0; k < c->n_params; k++) {
        hs_shape sh;
        if (stacked_away(p, c->params[k]))
            continue;
        if (!hs_shape_copy(rw->dst->arena, &sh, &c->params[k]->shape))
            return false;
        rw->map[c->params[k]->id] =
            hs_b_parameter(rw->b, param++, &sh, c->params[k]->name);
    }
    rw->n_kept_params = param;
    for (int k = 0; k < c->n_instrs && hs_builder_ok(rw->b); k++) {
        const hs_instruction *s = c->instrs[k];
        if (layer_of(p, s) >= 0 || s->opcode == HS_OP_PARAMETER ||
            (s->opcode == HS_OP_CONSTANT && p->reader_layer[s->id] >= 0))
            continue;
        hs_instruction **ops = ops_small;
        if (s->n_operands > 16 &&
            !(ops = malloc(sizeof *ops * (size_t)s->n_operands)))
            return false;
        bool ok = true;
        for (int o = 0; o < s->n_operands && ok; o++) {
            const hs_instruction *v = s->operands[o];
            if (!rw->map[v->id] && layer_of(p, v) >= 0)
                rw->map[v->id] = run_output(rw, v);
            ops[o] = rw->map[v->id];
            ok = ops[o] != NULL;
        }
        rw->map[s->id] = ok ? copy_into(rw, hs_builder_computation(rw->b),
                                        s, ops)
                            : NULL;
        if (ops != ops_small)
            free(ops);
        if (!rw->map[s->id])
            return false;
    }
    if (!rw->while_i && !emit_while(rw))
        return false;
    const hs_instruction *root = c->root;
    if (!rw->map[root->id] && layer_of(p, root) >= 0)
        rw->map[root->id] = run_output(rw, root);
    return rw->map[root->id] != NULL;
}

/* The rerolled module, or NULL with p->reason set. */
static hs_module *reroll_module(plan *p)
{
    hs_module *dst = hs_module_clone(p->m);
    if (!dst) {
        refuse(p, "out of host memory");
        return NULL;
    }
    hs_computation *old = dst->comps[hs_computation_index(p->m, p->c)];
    const char *name = old->name;
    old->name = hs_arena_printf(dst->arena, "%s.unrolled", name);
    old->is_entry = false;
    rewrite rw = {.p = p, .dst = dst};
    rw.map = calloc((size_t)p->n_ids + 1, sizeof *rw.map);
    rw.b = hs_builder_new(dst, name, true);
    bool ok = rw.map && rw.b && rewrite_entry(&rw);
    hs_error e;
    hs_error_clear(&e);
    hs_computation *entry = NULL;
    if (ok)
        entry = hs_builder_finish(rw.b, rw.map[p->c->root->id], &e);
    else if (rw.b) {
        const hs_error *be = hs_builder_error(rw.b);
        snprintf(p->reason, sizeof p->reason, "%s",
                 be && be->status != HS_OK ? be->message
                                           : "out of host memory");
        hs_builder_free(rw.b);
    }
    free(rw.map);
    free(rw.body_map);
    free(rw.slot_body);
    if (!entry) {
        if (ok)
            snprintf(p->reason, sizeof p->reason, "%s", e.message);
        hs_module_free(dst);
        return NULL;
    }
    /* The unrolled copy is called by nothing now: unlinked (it stays in
     * the arena). Not dce, which would also drop what the user's module
     * leaves dead and so flatter the instruction count. */
    int at_old = hs_computation_index(dst, old);
    memmove(&dst->comps[at_old], &dst->comps[at_old + 1],
            sizeof *dst->comps * (size_t)(dst->n_comps - at_old - 1));
    dst->n_comps--;
    for (int k = 0; k < dst->n_comps; k++)
        dst->comps[k]->id = k;
    if (hs_module_verify(dst, &e) != HS_OK) {
        snprintf(p->reason, sizeof p->reason,
                 "the rerolled module does not verify: %.400s", e.message);
        hs_module_free(dst);
        return NULL;
    }
    return dst;
}

/* ---- measuring: compile both, run both ------------------------------------ */

/* Appends a sentence to the scan's note ("; " between). */
static void add_note(hs_whatif_scan *sc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_note(hs_whatif_scan *sc, const char *fmt, ...)
{
    size_t n = strlen(sc->note);
    if (n > 0 && n + 2 < sizeof sc->note) {
        memcpy(sc->note + n, "; ", 3);
        n += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sc->note + n, sizeof sc->note - n, fmt, ap);
    va_end(ap);
}

static hs_status compile_timed(const hs_module *m, const hs_whatif_options *o,
                               const char *device, hs_executable **exe,
                               double *seconds, hs_error *err)
{
    hs_compile_options co;
    hs__whatif_compile_options(o, device, NULL, &co);
    int64_t t0 = hs_now_ns();
    hs_status s = hs_compile(m, &co, NULL, NULL, exe, err);
    *seconds = (double)(hs_now_ns() - t0) / 1e9;
    return s;
}

static int64_t run_bytes(const hs_executable *exe)
{
    const hs_module *m = hs_executable_module(exe);
    int64_t bytes = 0;
    for (int k = 0; k < m->entry->n_params; k++)
        bytes = hs_sat_add(bytes,
                           hs_shape_total_bytes(&m->entry->params[k]->shape));
    const hs_buffer_assignment *ba = hs_executable_buffers(exe);
    for (int space = 0; ba && space <= HS_MEMSPACE_HOST;
         space += HS_MEMSPACE_HOST)
        bytes = hs_sat_add(bytes, hs_buffers_peak(ba, space).bytes);
    return bytes;
}

/* Whether both can run here; otherwise why, in note. */
static bool runnable(const plan *p, const hs_whatif_options *o,
                     hs_executable *before, hs_executable *after, char *note,
                     size_t size)
{
    hs_error e;
    if (!o->run_equivalence) {
        snprintf(note, size, "compile only was asked");
        return false;
    }
    for (int k = 0; k < p->c->n_params; k++)
        if (hs_shape_is_tuple(&p->c->params[k]->shape)) {
            snprintf(note, size, "entry parameter %s is a tuple",
                     p->c->params[k]->name);
            return false;
        }
    if (hs_device_check(hs_executable_module(before), &e) != HS_OK ||
        hs_device_check(hs_executable_module(after), &e) != HS_OK) {
        snprintf(note, size, "%.200s", e.message);
        return false;
    }
    int64_t need = run_bytes(before) > run_bytes(after) ? run_bytes(before)
                                                         : run_bytes(after);
    if (o->max_run_bytes > 0 && (double)need > o->max_run_bytes) {
        snprintf(note, size,
                 "arguments and peak need %" PRId64
                 " bytes, more than the run limit of %.0f",
                 need, o->max_run_bytes);
        return false;
    }
    return true;
}

/* The rerolled module's arguments from the original's: the kept
 * parameters' own, then each stacked parameter as its layers' arguments
 * concatenated in layer order. Tensors of args are borrowed (owned[k]
 * false); stacked ones are new. */
static hs_tensor **rerolled_args(const plan *p, hs_tensor **args,
                                 int *n_out, bool **owned_out)
{
    int n = 0, cap = p->c->n_params + p->n_xs + 1;
    hs_tensor **r = calloc((size_t)cap, sizeof *r);
    bool *owned = calloc((size_t)cap, sizeof *owned);
    if (!r || !owned)
        goto fail;
    for (int k = 0; k < p->c->n_params; k++)
        if (!stacked_away(p, p->c->params[k]))
            r[n++] = args[k];
    for (int s = 0; s < p->n_slots; s++) {
        const slot *x = &p->slots[s];
        if (x->kind != SLOT_STACKED_PARAM)
            continue;
        hs_shape sh = stacked_shape(p, &x->v0->shape);
        hs_tensor *t = hs_tensor_new(&sh);
        if (!t)
            goto fail;
        owned[n] = true;
        r[n++] = t;
        size_t bytes = (size_t)hs_shape_bytes(&x->v0->shape);
        for (int j = 0; j < p->L; j++)
            memcpy((char *)t->data + (size_t)j * bytes,
                   args[slot_value(p, x, j)->index]->data, bytes);
    }
    *n_out = n;
    *owned_out = owned;
    return r;
fail:
    for (int k = 0; r && k < n; k++)
        if (owned[k])
            hs_tensor_free(r[k]);
    free(r);
    free(owned);
    return NULL;
}

static double max_abs_difference(const hs_tensor *a, const hs_tensor *b)
{
    if (a->shape.dtype != HS_F32)
        return -1;
    double worst = 0;
    const float *x = hs_tensor_f32(a), *y = hs_tensor_f32(b);
    for (int64_t k = 0; k < hs_tensor_elements(a); k++) {
        double d = (double)x[k] - (double)y[k];
        d = d < 0 ? -d : d;
        if (d > worst || d != d)
            worst = d;
    }
    return worst;
}

/* Runs both on the same drawn arguments and compares every output. */
static hs_status run_both(const plan *p, const hs_whatif_options *o,
                          const hs_device_spec *spec, hs_executable *before,
                          hs_executable *after, hs_whatif_scan *sc,
                          hs_error *err)
{
    int n_args = 0, n_new = 0, n_a = 0, n_b = 0;
    bool *owned = NULL;
    hs_tensor **args = hs_model_hlo_args(p->m, &n_args, err);
    hs_tensor **new_args = NULL, **outs_a = NULL, **outs_b = NULL;
    hs_run_options ro = {.deadline_ns = o->deadline_ns, .cancel = o->cancel};
    hs_status s = args ? HS_OK : err->status;
    if (s == HS_OK &&
        !(new_args = rerolled_args(p, args, &n_new, &owned)))
        s = hs_error_set(err, HS_ERR_NOMEM, "reroll: out of host memory");
    if (s == HS_OK)
        s = hs_device_run_ex(hs_executable_module(before), spec, args,
                             n_args, &outs_a, &n_a, &ro, NULL, err);
    if (s == HS_OK)
        s = hs_device_run_ex(hs_executable_module(after), spec, new_args,
                             n_new, &outs_b, &n_b, &ro, NULL, err);
    if (s == HS_OK) {
        sc->equivalent = n_a == n_b;
        sc->max_abs_difference = 0;
        for (int k = 0; k < n_a && k < n_b; k++) {
            bool same = hs_shape_compatible(&outs_a[k]->shape,
                                            &outs_b[k]->shape) &&
                        memcmp(outs_a[k]->data, outs_b[k]->data,
                               (size_t)hs_shape_bytes(&outs_a[k]->shape)) ==
                            0;
            if (!same) {
                sc->equivalent = 0;
                double d = max_abs_difference(outs_a[k], outs_b[k]);
                if (d > sc->max_abs_difference || d < 0)
                    sc->max_abs_difference = d;
            }
        }
        add_note(sc, "ran both on the same drawn arguments (%d outputs): %s",
                 n_a, sc->equivalent ? "bit-identical" : "they differ");
    } else if (s != HS_ERR_CANCELLED && s != HS_ERR_NOMEM) {
        /* A run the device refuses is a fact about the module, not a
         * failure of the what-if. */
        add_note(sc, "the device refused the run: %.200s", err->message);
        s = HS_OK;
    }
    hs_tensors_free(outs_a, n_a);
    hs_tensors_free(outs_b, n_b);
    for (int k = 0; new_args && k < n_new; k++)
        if (owned[k])
            hs_tensor_free(new_args[k]);
    free(new_args);
    free(owned);
    for (int k = 0; args && k < n_args; k++)
        hs_tensor_free(args[k]);
    free(args);
    return s;
}

/* ---- the section ------------------------------------------------------------ */

/* Each run of repeated layers in the tree, largest first. */
static hs_status list_repeats(const hs_module *m, const hs_group_tree *t,
                              hs_whatif *w, hs_error *err)
{
    int n = 0;
    for (int g = 0; g < t->n_groups; g++)
        n += t->groups[g].repeat > 1 && t->groups[g].n_children > 1;
    w->repeats = hs_arena_alloc(w->arena, sizeof *w->repeats * (size_t)(n + 1));
    if (!w->repeats)
        return hs_error_set(err, HS_ERR_NOMEM, "whatif: out of host memory");
    w->n_repeats = 0;
    for (int g = 0; g < t->n_groups; g++) {
        const hs_group *r = &t->groups[g];
        if (r->repeat <= 1 || r->n_children <= 1)
            continue;
        const hs_computation *c = r->computation;
        int first_child = r->children[0], last_child =
                                              r->children[r->n_children - 1];
        const char *first = NULL, *last = NULL;
        for (int k = 0; k < c->n_instrs; k++) {
            int gi = c->instrs[k]->id < t->n_ids ? t->group_of[c->instrs[k]->id]
                                                 : -1;
            while (gi >= 0 && gi != first_child && gi != last_child)
                gi = t->groups[gi].parent;
            if (gi == first_child && !first)
                first = c->instrs[k]->name;
            if (gi == last_child)
                last = c->instrs[k]->name;
        }
        hs_whatif_repeat *x = &w->repeats[w->n_repeats++];
        x->count = r->n_children;
        x->block_instructions = t->groups[first_child].instructions;
        x->first = hs_arena_strdup(w->arena, first ? first : "");
        x->last = hs_arena_strdup(w->arena, last ? last : "");
        x->path = hs_arena_strdup(w->arena, r->path);
        if (!x->first || !x->last || !x->path)
            return hs_error_set(err, HS_ERR_NOMEM,
                                "whatif: out of host memory");
    }
    /* largest first: instructions in the run, then the tree's order */
    for (int a = 1; a < w->n_repeats; a++)
        for (int b = a; b > 0; b--) {
            hs_whatif_repeat *x = &w->repeats[b - 1], *y = &w->repeats[b];
            if (x->count * x->block_instructions >=
                y->count * y->block_instructions)
                break;
            hs_whatif_repeat tmp = *x;
            *x = *y;
            *y = tmp;
        }
    (void)m;
    return HS_OK;
}

/* Tries to reroll run group g; the plan keeps the reason on failure. */
static hs_module *try_reroll(const hs_module *m, const hs_group_tree *t,
                             int g, plan *p)
{
    memset(p, 0, sizeof *p);
    p->m = m;
    p->c = m->entry;
    p->t = t;
    p->run = g;
    if (!plan_layers(p) || !plan_align(p) || !plan_readers(p) ||
        !plan_slots(p) ||
        !plan_outputs(p))
        return NULL;
    return reroll_module(p);
}

hs_status hs__whatif_reroll(const hs_module *m, const hs_group_tree *t,
                            const hs_whatif_options *o, hs_whatif *w,
                            hs_error *err)
{
    hs_whatif_scan *sc = &w->scan;
    sc->equivalent = -1;
    hs_status s = list_repeats(m, t, w, err);
    if (s != HS_OK)
        return s;
    /* Runs of the entry, largest first, then numbered siblings that the
     * tree did not find identical (so that a refusal says which
     * instruction differs); the first that rerolls is kept, and the first
     * one's refusal is said when it was not it. */
    int *cand = malloc(sizeof(int) * (size_t)(t->n_groups + 1));
    int n_cand = 0;
    if (!cand)
        return hs_error_set(err, HS_ERR_NOMEM, "whatif: out of host memory");
    for (int k = 0; k < w->n_repeats; k++) {
        int g = hs_groups_find(t, w->repeats[k].path,
                               strlen(w->repeats[k].path));
        if (g >= 0 && t->groups[g].computation == m->entry)
            cand[n_cand++] = g;
    }
    for (int g = 0; g < t->n_groups; g++) {
        const hs_group *x = &t->groups[g];
        bool numbered = x->repeat <= 1 && x->n_children >= 2 &&
                        x->computation == m->entry;
        for (int c = 0; numbered && c < x->n_children; c++)
            numbered = t->groups[x->children[c]].is_repeat_item;
        if (numbered)
            cand[n_cand++] = g;
    }
    plan p;
    hs_module *r = NULL;
    char first_reason[512] = "";
    const char *first_path = NULL;
    for (int k = 0; k < n_cand && !r; k++) {
        if (o->cancel && atomic_load(o->cancel)) {
            free(cand);
            return hs_error_set(err, HS_ERR_CANCELLED, "whatif: cancelled");
        }
        r = try_reroll(m, t, cand[k], &p);
        if (!r) {
            if (!first_path) {
                first_path = hs_arena_strdup(w->arena, t->groups[cand[k]].path);
                snprintf(first_reason, sizeof first_reason, "%s", p.reason);
            }
            plan_free(&p);
            continue;
        }
        sc->path = hs_arena_strdup(w->arena, t->groups[cand[k]].path);
    }
    free(cand);
    if (!r) {
        sc->analysed = false;
        snprintf(sc->reason, sizeof sc->reason, "%s%s%s",
                 first_path ? first_path : "",
                 first_path ? ": " : "",
                 first_path ? first_reason
                            : "no repeated layers in the entry computation");
        return HS_OK;
    }
    sc->rerolled = r;
    sc->analysed = true;
    if (first_path && strcmp(first_path, sc->path) != 0)
        add_note(sc, "%s not rerolled: %.200s", first_path, first_reason);
    if (p.phase_note[0])
        add_note(sc, "%s", p.phase_note);
    sc->instructions_before = hs_module_instruction_count(m);
    sc->instructions_after = hs_module_instruction_count(r);

    hs_executable *before = NULL, *after = NULL;
    s = compile_timed(m, o, w->device, &before, &sc->compile_seconds_before,
                      err);
    if (s == HS_OK)
        s = compile_timed(r, o, w->device, &after, &sc->compile_seconds_after,
                          err);
    if (s != HS_OK && s != HS_ERR_CANCELLED && s != HS_ERR_NOMEM) {
        /* A module that does not compile is a finding, not a failure. */
        add_note(sc, "%s does not compile: %.200s",
                 before ? "the rerolled module" : "the module", err->message);
        hs_error_clear(err);
        s = HS_OK;
        hs_executable_release(before);
        hs_executable_release(after);
        plan_free(&p);
        return s;
    }
    char why[256];
    if (s == HS_OK && runnable(&p, o, before, after, why, sizeof why))
        s = run_both(&p, o, hs_device_find(w->device), before, after, sc,
                     err);
    else if (s == HS_OK)
        add_note(sc, "not run: %s", why);
    hs_executable_release(before);
    hs_executable_release(after);
    plan_free(&p);
    return s;
}
