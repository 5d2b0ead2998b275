/*
 * kernels_spmd.c - the custom-calls that mark a module for XLA's SPMD
 * partitioner, run on the one emulated device.
 *
 * JAX's shard_map and torch_xla's manual sharding write
 *     s = f32[8,16] custom-call(x), custom_call_target="Sharding",
 *         sharding={devices=[2,1]0,1}
 *     m = f32[4,16] custom-call(s), custom_call_target="SPMDFullToShardShape",
 *         sharding={manual}
 *     ... per-device code on m ...
 *     y = f32[8,16] custom-call(r), custom_call_target="SPMDShardToFullShape",
 *         sharding={devices=[2,1]0,1}
 * which the partitioner turns into each device's own program: the global
 * value enters the manual region as that device's tile and leaves it as
 * the union of every device's tile. One emulated device can only be one
 * of those devices, so it plays partition 0:
 *   - Sharding is the identity (it only constrains the partitioner);
 *   - SPMDFullToShardShape gives device 0's tile of its operand under the
 *     operand's sharding (ceil(dim / tiles) per tiled dimension, as
 *     ir/sharding.c's per-device shapes; the elements past the end of an
 *     uneven last tile are zero, XLA's padding);
 *   - SPMDShardToFullShape places its operand, device 0's tile, at that
 *     tile's place in the global shape under its own sharding; the rest,
 *     which the other devices would have computed, is zero.
 * A replicated or maximal sharding's tile is the whole value. The tile's
 * origin is computed when the step is planned, and the check before a run
 * refuses a sharding that does not fit the shapes, naming the
 * instruction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device_internal.h"
#include "hloscope/hs_sharding.h"

bool dev_is_spmd_shape_call(const hs_instruction *in)
{
    const char *t = in->custom_call_target;
    return in->opcode == HS_OP_CUSTOM_CALL && t &&
           (strcmp(t, "SPMDFullToShardShape") == 0 ||
            strcmp(t, "SPMDShardToFullShape") == 0);
}

static bool to_shard(const hs_instruction *in)
{
    return strcmp(in->custom_call_target, "SPMDFullToShardShape") == 0;
}

/* Device 0's tile origin in the full shape, into origin[full->rank];
 * HS_OK or the refusal in x->err. The sharding is the operand's going
 * into the manual region, the instruction's own coming out of it. */
static hs_status tile_origin(dev_ctx *x, const hs_instruction *in,
                             int64_t *origin)
{
    if (in->n_operands != 1 || in->shape.dtype == HS_TUPLE ||
        in->operands[0]->shape.dtype == HS_TUPLE ||
        in->operands[0]->shape.dtype != in->shape.dtype)
        return dev_unsupported(x, in, "an SPMD shape custom-call that does "
                                      "not take one array to one array of "
                                      "its type");
    bool down = to_shard(in);
    const hs_shape *full = down ? &in->operands[0]->shape : &in->shape;
    const hs_shape *shard = down ? &in->shape : &in->operands[0]->shape;
    const char *text = down ? in->operands[0]->sharding : in->sharding;
    if (!text)
        return dev_unsupported(x, in, down ? "SPMDFullToShardShape whose "
                                             "operand has no sharding"
                                           : "SPMDShardToFullShape without "
                                             "a sharding");
    hs_arena *a = hs_arena_new(0);
    if (!a)
        return dev_oom(x);
    hs_sharding s;
    hs_shape local;
    hs_error e;
    hs_error_clear(&e);
    hs_status st = hs_sharding_parse(text, a, &s, &e);
    if (st == HS_OK && s.kind == HS_SHARDING_TUPLE)
        st = hs_error_set(&e, HS_ERR_UNSUPPORTED, "a tuple sharding");
    if (st == HS_OK)
        st = hs_sharding_device_shape(&s, full, a, &local, &e);
    if (st == HS_OK && (local.rank != shard->rank ||
                        memcmp(local.dims, shard->dims,
                               sizeof(int64_t) * (size_t)local.rank) != 0)) {
        char want[96], got[96];
        hs_shape_print(&local, false, want, sizeof want);
        hs_shape_print(shard, false, got, sizeof got);
        st = hs_error_set(&e, HS_ERR_SHAPE, "a device's tile is %s, the "
                                            "shard is %s", want, got);
    }
    memset(origin, 0, sizeof(int64_t) * (size_t)full->rank);
    if (st == HS_OK && s.kind == HS_SHARDING_TILED) {
        int64_t t = 0;
        while (t < s.n_tiles && hs_sharding_tile_device(&s, t) != 0)
            t++;
        if (t == s.n_tiles)
            st = hs_error_set(&e, HS_ERR_UNSUPPORTED,
                              "no tile is on device 0");
        /* the tile's coordinates, row-major over tile_dims; the data
         * dimensions come first */
        for (int d = s.n_tile_dims - 1; st == HS_OK && d >= 0; d--) {
            int64_t c = t % s.tile_dims[d];
            t /= s.tile_dims[d];
            if (d < full->rank)
                origin[d] = c * local.dims[d];
        }
    }
    hs_arena_free(a);
    if (st != HS_OK) {
        char what[sizeof e.message + 200];
        snprintf(what, sizeof what, "%s with sharding={%.120s} (%s)",
                 in->custom_call_target, text, e.message);
        dev_unsupported(x, in, what);
    }
    return st == HS_OK ? HS_OK : x->err->status;
}

hs_status dev_spmd_check(dev_ctx *x, const hs_instruction *in)
{
    int64_t origin[HS_MAX_RANK];
    return tile_origin(x, in, origin);
}

int64_t *dev_spmd_plan(dev_ctx *x, const hs_instruction *in)
{
    int64_t *origin = hs_arena_alloc(x->arena, sizeof(int64_t) * HS_MAX_RANK);
    if (!origin) {
        dev_oom(x);
        return NULL;
    }
    return tile_origin(x, in, origin) == HS_OK ? origin : NULL;
}

/* Both directions: a zeroed result, then the box where the tile and the
 * full shape overlap copied between the tile's origin in the full array
 * and the shard's corner. */
hs_status dev_k_spmd_shape(dev_ctx *x, const dev_step *s, dev_val **f,
                           dev_val **out)
{
    const hs_instruction *in = s->in;
    const int64_t *origin = s->data;
    const dev_val *a = dev_op(s, f, 0);
    dev_val *y = dev_array_new(x, &in->shape);
    if (!y)
        return x->err->status;
    bool down = to_shard(in);
    const hs_shape *full = down ? &in->operands[0]->shape : &in->shape;
    const hs_shape *shard = down ? &in->shape : &in->operands[0]->shape;
    int rank = full->rank, es = dev_esize(in->shape.dtype);
    memset(y->block->data, 0,
           (size_t)(hs_shape_elements(&in->shape) * es));
    int64_t fs[HS_MAX_RANK], ss[HS_MAX_RANK], box[HS_MAX_RANK];
    dev_row_major_strides(full->dims, rank, fs);
    dev_row_major_strides(shard->dims, rank, ss);
    int64_t off = 0; /* of the origin in the full array, in elements */
    for (int d = 0; d < rank; d++) {
        int64_t room = full->dims[d] - origin[d];
        box[d] = room < 0 ? 0 : room < shard->dims[d] ? room : shard->dims[d];
        /* a tile wholly past the end is all padding */
        if (box[d] == 0) {
            *out = y;
            return HS_OK;
        }
        off += origin[d] * fs[d];
    }
    char *fd = (down ? (char *)a->block->data : (char *)y->block->data) +
               off * es;
    if (down)
        dev_copy_strided(y->block->data, ss, fd, fs, box, rank, es);
    else
        dev_copy_strided(fd, fs, a->block->data, ss, box, rank, es);
    *out = y;
    return HS_OK;
}
