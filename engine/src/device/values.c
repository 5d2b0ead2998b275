/*
 * values.c - device buffers, reference-counted values and memory
 * accounting. A block enters the live-bytes count of its memory space when
 * it is produced and leaves it when its last reference is released; the
 * peak of each space is tracked as blocks enter.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"

/* Freed blocks kept for reuse: while bodies produce the same sizes every
 * iteration, and large allocations would otherwise go back to mmap. */
enum { CACHE_MAX = 32 };

int dev_space_index(int memory_space)
{
    return memory_space == HS_MEMSPACE_HOST ? 1 : 0;
}

hs_status dev_oom(dev_ctx *x)
{
    return hs_error_set(x->err, HS_ERR_NOMEM, "host out of memory");
}

hs_status dev_unsupported(dev_ctx *x, const hs_instruction *in,
                          const char *what)
{
    snprintf(x->err->instruction, sizeof x->err->instruction, "%s",
             in->name);
    return hs_error_set(x->err, HS_ERR_UNSUPPORTED,
                        "instruction %s: %s cannot be executed on the "
                        "emulated device",
                        in->name, what);
}

static bool account(dev_ctx *x, int space, int64_t bytes)
{
    x->live[space] += bytes;
    if (x->live[space] > x->peak[space])
        x->peak[space] = x->live[space];
    if (space == 0 && (double)x->live[0] > x->spec->hbm_bytes) {
        if (x->cur)
            snprintf(x->err->instruction, sizeof x->err->instruction, "%s",
                     x->cur->name);
        hs_error_set(x->err, HS_ERR_OOM,
                     "device out of memory: peak %lld bytes exceeds HBM "
                     "capacity %.0f bytes",
                     (long long)x->live[0], x->spec->hbm_bytes);
        return false;
    }
    return true;
}

/* Timeline: a record per accounted block (docs/MEMORY_TIMELINE.md). */
static void record_alloc(dev_ctx *x, dev_block *b, bool argument)
{
    hs_memory_timeline *t = x->tl;
    if (!t || b->bytes <= 0)
        return;
    if (t->n_buffers == t->cap_buffers) {
        int cap = t->cap_buffers ? 2 * t->cap_buffers : 256;
        hs_buffer_record *r = realloc(t->buffers, sizeof *r * (size_t)cap);
        if (!r)
            return; /* the timeline misses a record; the run goes on */
        t->buffers = r;
        t->cap_buffers = cap;
    }
    hs_buffer_record *r = &t->buffers[t->n_buffers++];
    const hs_instruction *in = x->cur;
    r->instruction = in ? in->name : "?";
    r->op_name = in ? in->op_name : NULL;
    r->computation = in && in->parent ? in->parent->name : NULL;
    r->bytes = b->bytes;
    r->memory_space = b->space ? HS_MEMSPACE_HOST : HS_MEMSPACE_DEVICE;
    r->argument = argument;
    r->alloc_step = x->step_now;
    r->alloc_time = x->now;
    r->free_step = -1;
    r->free_time = -1;
    b->rec = t->n_buffers;
}

static void record_free(dev_ctx *x, dev_block *b)
{
    if (!b->rec || !x->tl || b->rec > x->tl->n_buffers)
        return;
    hs_buffer_record *r = &x->tl->buffers[b->rec - 1];
    r->free_step = x->step_now;
    r->free_time = x->now;
    b->rec = 0;
}

static dev_val *val_alloc(dev_ctx *x)
{
    dev_val *v = x->val_pool;
    if (v)
        x->val_pool = v->next;
    else if (!(v = malloc(sizeof *v))) {
        dev_oom(x);
        return NULL;
    }
    memset(v, 0, sizeof *v);
    v->refs = 1;
    return v;
}

static dev_block *block_alloc(dev_ctx *x)
{
    dev_block *b = x->block_pool;
    if (b)
        x->block_pool = b->next;
    else if (!(b = malloc(sizeof *b))) {
        dev_oom(x);
        return NULL;
    }
    memset(b, 0, sizeof *b);
    b->refs = 1;
    return b;
}

static void *data_alloc(dev_ctx *x, size_t cap)
{
    for (dev_block **p = &x->cache; *p; p = &(*p)->next) {
        if ((*p)->cap == cap) {
            dev_block *c = *p;
            void *d = c->data;
            *p = c->next;
            x->n_cache--;
            c->next = x->block_pool;
            x->block_pool = c;
            return d;
        }
    }
    return aligned_alloc(64, cap);
}

dev_val *dev_array_new(dev_ctx *x, const hs_shape *shape)
{
    dev_val *v = val_alloc(x);
    dev_block *b = v ? block_alloc(x) : NULL;
    if (!b) {
        if (v) {
            v->next = x->val_pool;
            x->val_pool = v;
        }
        return NULL;
    }
    int64_t bytes = hs_shape_bytes(shape);
    b->bytes = bytes;
    b->cap = ((size_t)bytes + 63) & ~(size_t)63;
    if (b->cap == 0)
        b->cap = 64;
    b->space = dev_space_index(shape->memory_space);
    b->data = data_alloc(x, b->cap);
    v->shape = shape;
    v->block = b;
    if (!b->data) {
        b->cap = 0;
        b->bytes = 0;
        dev_release(x, v);
        dev_oom(x);
        return NULL;
    }
    if (!account(x, b->space, bytes)) {
        dev_release(x, v);
        return NULL;
    }
    record_alloc(x, b, false);
    return v;
}

dev_val *dev_array_wrap(dev_ctx *x, const hs_shape *shape, void *data,
                        bool count)
{
    dev_val *v = val_alloc(x);
    dev_block *b = v ? block_alloc(x) : NULL;
    if (!b) {
        if (v) {
            v->next = x->val_pool;
            x->val_pool = v;
        }
        return NULL;
    }
    b->data = data;
    b->space = dev_space_index(shape->memory_space);
    b->bytes = count ? hs_shape_bytes(shape) : 0;
    v->shape = shape;
    v->block = b;
    if (!account(x, b->space, b->bytes)) {
        dev_release(x, v);
        return NULL;
    }
    record_alloc(x, b, x->cur && x->cur->opcode == HS_OP_PARAMETER);
    return v;
}

dev_val *dev_array_alias(dev_ctx *x, const hs_shape *shape, dev_block *b)
{
    dev_val *v = val_alloc(x);
    if (!v)
        return NULL;
    b->refs++;
    v->shape = shape;
    v->block = b;
    return v;
}

dev_val *dev_array_view(dev_ctx *x, const hs_shape *shape, dev_block *b,
                        int64_t off)
{
    /* A view of a view is a view of the owner: chains never form. */
    while (b->parent) {
        off += (char *)b->data - (char *)b->parent->data;
        b = b->parent;
    }
    dev_val *v = val_alloc(x);
    dev_block *vb = v ? block_alloc(x) : NULL;
    if (!vb) {
        if (v) {
            v->next = x->val_pool;
            x->val_pool = v;
        }
        return NULL;
    }
    vb->data = (char *)b->data + off;
    vb->space = b->space;
    vb->parent = b;
    b->refs++;
    v->shape = shape;
    v->block = vb;
    return v;
}

bool dev_block_shared(const dev_block *b)
{
    return b->refs != 1 || b->cap == 0 || b->parent != NULL;
}

dev_val *dev_tuple_new(dev_ctx *x, const hs_shape *shape, int n)
{
    dev_val *v = val_alloc(x);
    if (!v)
        return NULL;
    v->shape = shape;
    v->n = n;
    v->space = dev_space_index(shape->memory_space);
    v->elems = calloc((size_t)(n ? n : 1), sizeof *v->elems);
    if (!v->elems) {
        v->next = x->val_pool;
        x->val_pool = v;
        dev_oom(x);
        return NULL;
    }
    if (!account(x, v->space, 8 * (int64_t)n)) {
        x->live[v->space] -= 8 * (int64_t)n;
        v->n = 0; /* no elements set yet */
        dev_release(x, v);
        return NULL;
    }
    return v;
}

void dev_ref(dev_val *v) { v->refs++; }

static void block_release(dev_ctx *x, dev_block *b)
{
    if (--b->refs > 0)
        return;
    if (b->parent) {
        dev_block *parent = b->parent;
        b->parent = NULL;
        b->next = x->block_pool;
        x->block_pool = b;
        block_release(x, parent);
        return;
    }
    x->live[b->space] -= b->bytes;
    record_free(x, b);
    if (b->cap) {
        if (x->n_cache < CACHE_MAX) {
            /* The block struct itself becomes the cache entry. */
            b->next = x->cache;
            x->cache = b;
            x->n_cache++;
            return;
        }
        free(b->data);
    }
    b->next = x->block_pool;
    x->block_pool = b;
}

void dev_release(dev_ctx *x, dev_val *v)
{
    if (!v || --v->refs > 0)
        return;
    if (v->elems) {
        for (int i = 0; i < v->n; i++)
            dev_release(x, v->elems[i]);
        x->live[v->space] -= 8 * (int64_t)v->n;
        free(v->elems);
    } else if (v->block) {
        block_release(x, v->block);
    }
    v->next = x->val_pool;
    x->val_pool = v;
}

dev_val *dev_take(const dev_step *s, dev_val **f, int k)
{
    int slot = s->ops[k];
    dev_val *v = f[slot];
    if (s->op_last[k])
        f[slot] = NULL;
    else
        v->refs++;
    return v;
}

dev_val *dev_result(dev_ctx *x, const dev_step *s, dev_val **f)
{
    const hs_shape *shape = &s->in->shape;
    dev_val *v = NULL;
    int k = 0;
    for (; k < s->n_ops && k < 64; k++) {
        v = (s->in_place >> k & 1) && s->op_last[k] ? f[s->ops[k]] : NULL;
        if (v && v->refs == 1 && v->block && v->block->refs == 1 &&
            !v->block->parent &&
            v->block->space == dev_space_index(shape->memory_space) &&
            v->block->bytes == hs_shape_bytes(shape))
            break;
        v = NULL;
    }
    if (!v)
        return dev_array_new(x, shape);
    if (!v->block->cap) {
        /* A donated argument: the caller's memory, never written. It
         * leaves the live bytes before the result enters them, as if the
         * result took its place. */
        f[s->ops[k]] = NULL;
        dev_release(x, v);
        return dev_array_new(x, shape);
    }
    f[s->ops[k]] = NULL;
    /* The timeline: the operand's buffer ends, the result's begins. */
    record_free(x, v->block);
    record_alloc(x, v->block, false);
    v->shape = shape;
    return v;
}

void dev_ctx_cleanup(dev_ctx *x)
{
    free(x->fusion_scratch);
    x->fusion_scratch = NULL;
    x->fusion_scratch_cap = 0;
    while (x->cache) {
        dev_block *b = x->cache;
        x->cache = b->next;
        free(b->data);
        free(b);
    }
    x->n_cache = 0;
    while (x->block_pool) {
        dev_block *b = x->block_pool;
        x->block_pool = b->next;
        free(b);
    }
    while (x->val_pool) {
        dev_val *v = x->val_pool;
        x->val_pool = v->next;
        free(v);
    }
}

dev_val *dev_scalar_of(dev_ctx *x, const hs_shape *s, const void *src)
{
    dev_val *v = dev_array_new(x, s);
    if (v)
        memcpy(v->block->data, src, (size_t)dev_esize(s->dtype));
    return v;
}
