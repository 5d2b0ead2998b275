/* reroll_plan.c - the plan of one run's reroll (reroll_internal.h):
 * which layer each instruction is in (the group tree's), the layers put in
 * one order and checked alike instruction by instruction, as torch_xla's
 * scan_layers checks homogeneity (when two differ, the reason names both
 * instructions and what differs), and what each layer reads from outside
 * itself:
 *   a carry     (layer j reads instruction p of layer j-1; layer 0 reads
 *                the value from before the run: the init),
 *   an invariant (every layer reads the same value),
 *   a constant  (equal in every layer: copied into the body),
 *   a stacked input (each layer its own value; per-layer entry parameters
 *                become one new [L, ...] parameter).
 * Values of a layer read after the run are the scan's ys. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "whatif/reroll_internal.h"


void hs__reroll_plan_free(plan *p)
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

/* The layer of the run instruction i belongs to, or -1: parameters and
 * constants belong to none (they are shared or stacked, never a layer's). */
static int layer_of_instruction(const plan *p, const hs_instruction *i)
{
    if (i->opcode == HS_OP_PARAMETER || i->opcode == HS_OP_CONSTANT)
        return -1;
    int g = i->id < p->t->n_ids ? p->t->group_of[i->id] : -1;
    return layer_of_group(p->t, p->run, g);
}

/* The run's layers in the order they run: by the last instruction of
 * each in the entry's order. A backward pass runs its layers last to
 * last (backward/layers.3 before backward/layers.2), and the tree lists
 * them by name. The last instruction, not the last: a schedule may hoist
 * a layer's last cheap instructions above the layer before it (Mixtral's
 * backward layers), never its result. rank[child] receives each child's
 * place. */
static bool order_layers(plan *p, const hs_group *r, int *rank)
{
    int *last = malloc(sizeof(int) * (size_t)p->L);
    int *order = malloc(sizeof(int) * (size_t)p->L);
    if (!last || !order) {
        free(last);
        free(order);
        return false;
    }
    for (int j = 0; j < p->L; j++) {
        last[j] = -1;
        order[j] = j;
    }
    for (int k = 0; k < p->c->n_instrs; k++) {
        const hs_instruction *i = p->c->instrs[k];
        int j = layer_of_instruction(p, i);
        if (j >= 0)
            last[j] = k;
    }
    /* insertion sort: runs have few layers */
    for (int a = 1; a < p->L; a++)
        for (int b = a; b > 0 && last[order[b - 1]] > last[order[b]]; b--) {
            int t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    for (int j = 0; j < p->L; j++) {
        rank[order[j]] = j;
        p->layer_path[j] = p->t->groups[r->children[order[j]]].path;
    }
    free(last);
    free(order);
    return true;
}

/* The longest stretch of consecutive layers with equal sig: its first
 * layer in *first, its length returned (the first such stretch on ties). */
static int longest_stretch(const uint64_t *sig, int L, int *first)
{
    int best_a = 0, best_len = 0;
    for (int a = 0; a < L;) {
        int b = a + 1;
        while (b < L && sig[b] == sig[a])
            b++;
        if (b - a > best_len)
            best_a = a, best_len = b - a;
        a = b;
    }
    *first = best_a;
    return best_len;
}

/* Keeps layers first..first+len-1 of the run (renumbered from 0); the
 * others are outside it, unrolled. */
static void keep_stretch(plan *p, int first, int len)
{
    for (int k = 0; k < p->c->n_instrs; k++) {
        int *l = &p->layer_of[p->c->instrs[k]->id];
        *l = *l >= first && *l < first + len ? *l - first : -1;
    }
    if (p->in)
        memmove(p->in, p->in + (size_t)first * p->n,
                sizeof *p->in * (size_t)len * (size_t)p->n);
    memmove(p->layer_path, p->layer_path + first,
            sizeof *p->layer_path * (size_t)len);
    p->L = len;
}

/* Keeps the longest stretch of consecutive layers with as many
 * instructions each (the first backward layer also holds the loss's
 * gradient, a structure cut may give the first layer a few more): the
 * others stay unrolled, and the phase note says so. False when no two
 * neighbours have as many. */
static bool keep_equal_sized(plan *p, const int *count)
{
    uint64_t *sig = malloc(sizeof *sig * (size_t)p->L);
    if (!sig)
        return refuse(p, "out of host memory");
    for (int j = 0; j < p->L; j++)
        sig[j] = (uint64_t)count[j];
    int best_a, best_len = longest_stretch(sig, p->L, &best_a);
    free(sig);
    p->n = best_len > 0 ? count[best_a] : 0;
    if (best_len == p->L)
        return true;
    int other = best_a > 0 ? best_a - 1 : best_a + best_len;
    if (best_len < 2)
        return refuse(p,
                      "%s has %d instructions but %s has %d; layers "
                      "must be identical to be rerolled",
                      p->layer_path[1], count[1], p->layer_path[0],
                      count[0]);
    snprintf(p->phase_note, sizeof p->phase_note,
             "layers %d..%d of %d in the loop (%.80s..%.80s); %.80s has %d "
             "instructions where they have %d and stays unrolled%s",
             best_a, best_a + best_len - 1, p->L, p->layer_path[best_a],
             p->layer_path[best_a + best_len - 1], p->layer_path[other],
             count[other], count[best_a],
             p->L - best_len > 1 ? ", as do the others outside the stretch"
                                 : "");
    keep_stretch(p, best_a, best_len);
    return true;
}

/* Fills layer_of, pos_of and in[] from the group tree, the layers in the
 * order they run. */
static bool plan_layers(plan *p)
{
    const hs_group *r = &p->t->groups[p->run];
    p->L = r->n_children;
    p->n_ids = p->m->next_id;
    p->layer_of = malloc(sizeof(int) * (size_t)p->n_ids);
    p->pos_of = calloc((size_t)p->n_ids, sizeof(int));
    p->layer_path = calloc((size_t)p->L, sizeof(char *));
    int *count = calloc((size_t)p->L, sizeof(int));
    int *rank = calloc((size_t)p->L, sizeof(int));
    if (!p->layer_of || !p->pos_of || !p->layer_path || !count || !rank ||
        !order_layers(p, r, rank)) {
        free(count);
        free(rank);
        return refuse(p, "out of host memory");
    }
    for (int k = 0; k < p->n_ids; k++)
        p->layer_of[k] = -1;
    for (int k = 0; k < p->c->n_instrs; k++) {
        const hs_instruction *i = p->c->instrs[k];
        int j = layer_of_instruction(p, i);
        if (j >= 0)
            j = rank[j];
        p->layer_of[i->id] = j;
        if (j >= 0)
            p->pos_of[i->id] = count[j]++;
    }
    free(rank);
    bool ok = keep_equal_sized(p, count);
    free(count);
    if (!ok)
        return false;
    p->in = calloc((size_t)p->L * (size_t)p->n + 1, sizeof *p->in);
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
    const hs_instruction *a = plan_at(p, ja, k), *b = plan_at(p, jb, k);
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

static bool same_slot(const plan *p, const slot *a, const slot *b)
{
    if (a->kind != b->kind || a->v0 != b->v0 ||
        (a->kind == SLOT_CARRY && a->p != b->p))
        return false;
    if (a->kind == SLOT_STACKED || a->kind == SLOT_STACKED_PARAM)
        for (int j = 1; j < p->L; j++)
            if (plan_slot_value(p, a, j) != plan_slot_value(p, b, j))
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
            sig[j] += mix(h2[plan_at(p, j, k)->id], 17);
    int best_a, best_len = longest_stretch(sig, p->L, &best_a);
    free(sig);
    if (best_len < 2 || best_len == p->L)
        return; /* the check below says what differs */
    /* what sets the nearest other layer apart, in definition order */
    int ja = best_a > 0 ? best_a : best_a + best_len - 1;
    int jb = best_a > 0 ? best_a - 1 : best_a + best_len;
    char why[400] = "";
    for (int k = 0; k < p->n && !why[0]; k++) {
        const char *d = attribute_difference(plan_at(p, ja, k), plan_at(p, jb, k), 0);
        if (d)
            say_difference(p, ja, jb, k, d, why, sizeof why);
    }
    size_t used = strlen(p->phase_note);
    if (used > 0 && used + 2 < sizeof p->phase_note) {
        memcpy(p->phase_note + used, "; ", 3);
        used += 2;
    }
    snprintf(p->phase_note + used, sizeof p->phase_note - used,
             "layers %d..%d of %d rerolled (%s..%s); the others differ "
             "from them and stay unrolled: %s",
             best_a, best_a + best_len - 1, p->L, p->layer_path[best_a],
             p->layer_path[best_a + best_len - 1],
             why[0] ? why : "they hold other instructions");
    keep_stretch(p, best_a, best_len);
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
        k0[k] = (keyed){h2[plan_at(p, 0, k)->id], k};
    if (ok)
        qsort(k0, (size_t)p->n, sizeof *k0, keyed_order);
    for (int j = 1; ok && j < p->L; j++) {
        for (int k = 0; k < p->n; k++)
            kj[k] = (keyed){h2[plan_at(p, j, k)->id], k};
        qsort(kj, (size_t)p->n, sizeof *kj, keyed_order);
        for (int r = 0; r < p->n; r++) {
            if (kj[r].key != k0[r].key) {
                /* Said as scan_layers says it when the definition orders
                 * agree up to a differing instruction; else the first
                 * instruction of layer j without a twin. */
                for (int k = 0; k < p->n; k++) {
                    const char *d = attribute_difference(plan_at(p, 0, k),
                                                         plan_at(p, j, k), 0);
                    if (d) {
                        differs(p, j, k, d);
                        break;
                    }
                }
                ok = false;
                if (p->reason[0])
                    break;
                const hs_instruction *a = plan_at(p, j, kj[r].k);
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
            row[k0[r].k] = plan_at(p, j, kj[r].k);
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
    const hs_instruction *v0 = plan_at(p, 0, k)->operands[o];
    bool all_same = true, carry = true, outside = true;
    bool equal_constants = v0->opcode == HS_OP_CONSTANT;
    bool own_params = v0->opcode == HS_OP_PARAMETER &&
                      p->reader_layer[v0->id] == 0 &&
                      !hs_shape_is_tuple(&v0->shape);
    int cp = -1;
    for (int j = 1; j < p->L; j++) {
        const hs_instruction *v = plan_at(p, j, k)->operands[o];
        int lj = plan_layer_of(p, v);
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
                          plan_at(p, j, k)->name, p->layer_path[j], v->name,
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
                      o, plan_at(p, 0, k)->name, p->layer_path[0]),
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
        const hs_instruction *a = plan_at(p, 0, k);
        p->operand_slot[k] = malloc(sizeof(int) * (size_t)(a->n_operands + 1));
        if (!p->operand_slot[k])
            return refuse(p, "out of host memory");
        for (int j = 1; j < p->L; j++) {
            const hs_instruction *b = plan_at(p, j, k);
            const char *d = attribute_difference(a, b, 0);
            if (d)
                return differs(p, j, k, d);
            for (int o = 0; o < a->n_operands; o++) {
                int la = plan_layer_of(p, a->operands[o]);
                int lb = plan_layer_of(p, b->operands[o]);
                if (la == 0 && !(lb == j && p->pos_of[b->operands[o]->id] ==
                                                p->pos_of[a->operands[o]->id]))
                    return differs(p, j, k, "an operand");
                if (la < 0 && lb == j)
                    return differs(p, j, k, "an operand");
            }
        }
        for (int o = 0; o < a->n_operands; o++) {
            p->operand_slot[k][o] = -1;
            if (plan_layer_of(p, a->operands[o]) == 0)
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
        if (plan_layer_of(p, i) >= 0)
            continue;
        for (int o = 0; o < i->n_operands; o++) {
            int j = plan_layer_of(p, i->operands[o]);
            if (j >= 0)
                read[(size_t)j * p->n + p->pos_of[i->operands[o]->id]] = true;
        }
    }
    if (plan_layer_of(p, p->c->root) >= 0)
        read[(size_t)plan_layer_of(p, p->c->root) * p->n +
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
            p->ys_pos[p->n_ys] = plan_at(p, 0, k);
            p->y_of[k] = p->n_ys++;
        }
    free(read);
    return ok;
}


bool hs__reroll_plan(plan *p, const hs_module *m, const hs_group_tree *t,
                     int g)
{
    memset(p, 0, sizeof *p);
    p->m = m;
    p->c = m->entry;
    p->t = t;
    p->run = g;
    return plan_layers(p) && plan_align(p) && plan_readers(p) &&
           plan_slots(p) && plan_outputs(p);
}
