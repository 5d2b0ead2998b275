/*
 * hs_sharding.h - XLA's `sharding={...}` annotations read into a struct,
 * and the shape one device holds.
 *
 * The IR keeps an instruction's sharding as the text inside its braces
 * (hs_instruction.sharding), as the HLO text parser found it; this reads
 * that text when someone needs its meaning (the sharding what-if, the
 * graph's per-device sizes):
 *
 *     hs_shape local, global;
 *     if (i->sharding &&
 *         hs_instruction_sharded_shapes(i, hs_module_is_partitioned(m),
 *                                       arena, &local, &global,
 *                                       &err) == HS_OK)
 *         printf("%s: %lld of %lld bytes per device\n", i->name,
 *                (long long)hs_shape_total_bytes(&local),
 *                (long long)hs_shape_total_bytes(&global));
 *
 * Every form XLA's HloSharding prints is read:
 *     replicated | manual | unknown | unreduced | maximal device=3
 *     devices=[2,1]0,1                       explicit tile assignment
 *     devices=[4,2]<=[8]                     iota: devices 0..7 in order
 *     devices=[64,1,2]<=[2,64]T(1,0)         iota reshaped, transposed
 *     ... last_tile_dim_replicate            the last tile dim replicates
 *     ... last_tile_dims={manual, replicated} subgroup dims, one per type
 *     {replicated}, {devices=[2]0,1}         a tuple: one per leaf
 * with an optional shard group (`shard_as 1`, `shard_like 1`) and
 * metadata={...}, both read past. A tiled array's per-device shape is
 * ceil(dim / tiles) along each data dimension, as XLA pads its shards.
 */
#ifndef HLOSCOPE_HS_SHARDING_H
#define HLOSCOPE_HS_SHARDING_H

#include <stdbool.h>
#include <stdint.h>

#include "hloscope/hs_ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Tile dimensions: one per data dimension, then the subgroup ones. */
#define HS_SHARDING_MAX_TILE_DIMS (HS_MAX_RANK + 4)

typedef enum hs_sharding_kind {
    HS_SHARDING_REPLICATED, /* every device holds all of it */
    HS_SHARDING_MAXIMAL,    /* one device (device) holds all of it */
    HS_SHARDING_MANUAL,     /* split by the program itself: the shape
                               written is already one device's */
    HS_SHARDING_UNKNOWN,    /* left for sharding propagation to decide */
    HS_SHARDING_UNREDUCED,  /* every device holds a partial sum of all */
    HS_SHARDING_TILED,      /* split into tiles over devices */
    HS_SHARDING_TUPLE       /* one sharding per leaf of a tuple */
} hs_sharding_kind;

/* "replicated", "maximal", ..., "tuple". */
const char *hs_sharding_kind_name(hs_sharding_kind k);

typedef struct hs_sharding hs_sharding;
struct hs_sharding {
    hs_sharding_kind kind;
    int64_t device; /* maximal: the device */

    /* tiled: devices=[tile_dims...]; the last n_subgroup_dims of them do
     * not split the data (last_tile_dim_replicate is one replicated
     * subgroup dim), subgroup[k] says what the k-th of them does. */
    int n_tile_dims;
    int64_t tile_dims[HS_SHARDING_MAX_TILE_DIMS];
    int n_subgroup_dims;
    hs_sharding_kind subgroup[HS_SHARDING_MAX_TILE_DIMS];
    int64_t n_tiles; /* product of tile_dims: the devices it is spread on */
    /* Which device holds each tile, row-major over tile_dims: an explicit
     * list (devices=[2,2]0,2,1,3), or XLA's iota form (device_list NULL):
     * iota(n_tiles) reshaped to iota_dims, transposed by iota_perm. */
    const int64_t *device_list;
    int n_iota_dims;
    int64_t iota_dims[HS_SHARDING_MAX_TILE_DIMS];
    int iota_perm[HS_SHARDING_MAX_TILE_DIMS];

    /* tuple: one per leaf of the tuple shape, in order (XLA flattens). */
    int n_elems;
    hs_sharding *elems;
};

/* Reads text, the inside of `sharding={...}`, into *out (device lists and
 * tuple elements in a). On a malformed sharding HS_ERR_PARSE with
 * err->column the 1-based column in text. */
hs_status hs_sharding_parse(const char *text, hs_arena *a, hs_sharding *out,
                            hs_error *err);
/* The same for i->sharding (not NULL), the error naming i. */
hs_status hs_instruction_sharding(const hs_instruction *i, hs_arena *a,
                                  hs_sharding *out, hs_error *err);

/* Data dimensions a tiled sharding splits (n_tile_dims - n_subgroup_dims);
 * 0 for the other kinds. */
int hs_sharding_data_rank(const hs_sharding *s);
/* The device holding tile `tile` (row-major over tile_dims) of a tiled
 * sharding; -1 when out of range or not tiled. */
int64_t hs_sharding_tile_device(const hs_sharding *s, int64_t tile);
/* How many devices s names: the largest device it places something on,
 * plus one (tuples: over their leaves); 0 for replicated, manual, unknown
 * and unreduced, which name none. */
int64_t hs_sharding_device_count(const hs_sharding *s);
/* True when a and b split the same way over the same devices. */
bool hs_sharding_equal(const hs_sharding *a, const hs_sharding *b);
/* The sharding of leaf `leaf` of a value sharded by s (s itself when it is
 * not a tuple sharding: one sharding for all leaves); NULL when out of
 * range. */
const hs_sharding *hs_sharding_leaf(const hs_sharding *s, int leaf);
/* The sharding of element `index` of a tuple value of shape `tuple`
 * sharded by s (what a get-tuple-element of it has), when that element is
 * an array; NULL when it is a tuple itself or s does not fit. */
const hs_sharding *hs_sharding_element(const hs_sharding *s,
                                       const hs_shape *tuple, int64_t index);

/* The shape one device holds of a value of shape `global` sharded by s:
 * ceil(dim / tiles) along each tiled data dimension; the whole shape for
 * the other kinds (manual: the shape written is already the device's).
 * Layout and memory space are kept; tuple element arrays live in a.
 * HS_ERR_SHAPE when s does not fit the shape (a tiled rank that is not
 * the array's, a tuple sharding whose leaves are not the shape's). */
hs_status hs_sharding_device_shape(const hs_sharding *s,
                                   const hs_shape *global, hs_arena *a,
                                   hs_shape *out, hs_error *err);
/* The inverse, for a module XLA already partitioned: the global shape a
 * device's shape `local` is a tile of, dim * tiles along each tiled data
 * dimension (an upper bound where XLA padded the last tile). */
hs_status hs_sharding_global_shape(const hs_sharding *s,
                                   const hs_shape *local, hs_arena *a,
                                   hs_shape *out, hs_error *err);

/* True when m was already partitioned by XLA's SPMD partitioner: it holds
 * collectives or partition-id, which the partitioner inserts, and none of
 * the custom-calls it removes (Sharding, SPMDFullToShardShape,
 * SPMDShardToFullShape). Its shapes are then per-device already, and its
 * annotations (kept on entry parameters and outputs) say what the global
 * values were. */
bool hs_module_is_partitioned(const hs_module *m);

/* Both shapes of i, which carries a sharding: the one each device holds
 * and the global one. In a partitioned module (see above) i->shape is the
 * device's and the global one is computed; otherwise the reverse. Errors
 * name i. */
hs_status hs_instruction_sharded_shapes(const hs_instruction *i,
                                        bool partitioned, hs_arena *a,
                                        hs_shape *per_device,
                                        hs_shape *global, hs_error *err);

#ifdef __cplusplus
}
#endif
#endif
