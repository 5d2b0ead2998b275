/*
 * device_internal.h - shared between the files of the emulated device.
 *
 * Execution model. A run walks a per-computation plan (built once per run):
 * every live instruction is a step with its kernel, the frame slots of its
 * operands, the slots whose last use it is, and its roofline cost. A frame
 * slot holds a reference to a value; a value is an array (a reference to a
 * block of memory) or a tuple (references to its element values). Aliasing
 * ops (get-tuple-element, reshape, bitcast, tuple) share blocks through
 * reference counts, so a block is freed, and leaves the memory accounting,
 * exactly when the last value referring to it is released.
 */
#ifndef HS_DEVICE_INTERNAL_H
#define HS_DEVICE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "hloscope/hs_device.h"

/* ---- memory ---------------------------------------------------------- */

/* A block of element data, 64-byte aligned. Blocks that wrap the caller's
 * argument tensors or constant literals are not owned: they are never
 * written and never freed by the device. */
typedef struct dev_block {
    void *data;
    int64_t bytes; /* accounted bytes */
    size_t cap;    /* allocation size; 0 when not owned */
    int space;     /* accounting index: 0 device, 1 host */
    int refs;
    /* A view (a zero-copy dynamic-slice) points into its parent's data and
     * holds one reference to it, so the parent outlives the view and is
     * never updated in place while the view is alive. Views account no
     * bytes and own no data. */
    struct dev_block *parent;
    struct dev_block *next; /* free list / cache link */
    int rec; /* 1 + index of its timeline record; 0 = none */
} dev_block;

typedef struct dev_val {
    int refs;
    const hs_shape *shape;
    dev_block *block;      /* arrays */
    int n;                 /* tuples: element count */
    struct dev_val **elems; /* tuples */
    int space;             /* tuples: where the index table is accounted */
    double ready;          /* copy-start: when its DMA transfer ends */
    struct dev_val *next;  /* free list link */
} dev_val;

struct dev_plan;
struct dev_step;
typedef struct dev_ctx dev_ctx;

/* A kernel reads its operands from the frame f (f[s->ops[k]]) and stores a
 * new reference in *out. */
typedef hs_status (*dev_kernel)(dev_ctx *x, const struct dev_step *s,
                                dev_val **f, dev_val **out);

/* The kernel table (kernel_table.c): one entry per opcode, either a
 * kernel or the reason the device does not run that opcode. */
typedef struct dev_kernel_entry {
    dev_kernel kernel;
    const char *not_run; /* why there is no kernel; NULL when there is */
} dev_kernel_entry;
const dev_kernel_entry *dev_kernel_entry_of(hs_opcode op);
/* The kernel that runs in, or NULL (custom-calls: only the identity
 * targets of host offloading run). */
dev_kernel dev_kernel_for(const hs_instruction *in);

typedef struct dev_step {
    const hs_instruction *in;
    dev_kernel kern;
    int slot;          /* frame slot of the result */
    int n_ops;
    int *ops;          /* frame slots of the operands */
    bool *op_last;     /* this step is the final reference to ops[k] */
    int n_release;
    int *release;      /* slots released after the step */
    struct dev_plan *callee[2]; /* while {cond, body}; call / reduce */
    int aux;           /* kernel-specific: reduce fast-path opcode, -1 none */
    void *data;        /* kernel-specific plan data (fused program, pad) */
    uint64_t in_place; /* bit k: the result may take over operand k's
                          buffer (hs_reads_elementwise; k < 64) */
    bool host_transfer; /* copies between memory spaces: a DMA-stream
                           candidate (copy-start, copy, MoveTo*) */
    double flops, bytes, seconds; /* roofline cost */
} dev_step;

typedef struct dev_plan {
    const hs_computation *comp;
    int n_slots;
    int n_steps;
    dev_step *steps;
    int root_slot;
    int n_params;
    int *param_slots;   /* slot of parameter(i) */
    bool *param_dead;   /* parameter(i) has no user and is not the root */
    dev_val **frame;    /* reused between evaluations (HLO has no recursion) */
    bool busy;
} dev_plan;

struct dev_ctx {
    const hs_module *m;
    const hs_device_spec *spec;
    hs_error *err;
    hs_arena *arena;  /* plans live here, freed at the end of the run */
    dev_plan **plans; /* indexed by computation position in m->comps */
    int64_t live[2], peak[2];
    double sim_seconds, flops, bytes;
    int64_t instructions;
    const hs_instruction *cur; /* executing now, for error messages */
    double transfer_seconds, transfer_bytes; /* host-link traffic */
    /* The clocks: compute stream (now, = sim_seconds as it runs) and DMA
     * stream (free from dma_free on); steps executed so far. */
    double now, dma_free, exposed_seconds;
    int64_t step_now;
    hs_memory_timeline *tl; /* recording, or NULL */
    int64_t deadline_ns;    /* hs_run_options: 0 = none */
    atomic_bool *cancel;    /* hs_run_options: may be NULL */
    dev_val *val_pool;
    dev_block *block_pool;
    dev_block *cache; /* freed owned blocks kept for reuse */
    int n_cache;
    void *fusion_scratch; /* registers of fused programs, grown on demand */
    size_t fusion_scratch_cap;
};

/* values.c */
int dev_space_index(int memory_space);
dev_val *dev_array_new(dev_ctx *x, const hs_shape *shape); /* NULL: error set */
dev_val *dev_array_wrap(dev_ctx *x, const hs_shape *shape, void *data,
                        bool account); /* not owned */
dev_val *dev_array_alias(dev_ctx *x, const hs_shape *shape, dev_block *b);
/* A zero-copy view of `bytes` bytes of b's data from byte offset off,
 * keeping b alive (see dev_block.parent). */
dev_val *dev_array_view(dev_ctx *x, const hs_shape *shape, dev_block *b,
                        int64_t off);
/* True when other values may read b's data: more than one reference, a
 * live view of it, or not owned. In-place updates need this false. */
bool dev_block_shared(const dev_block *b);
dev_val *dev_tuple_new(dev_ctx *x, const hs_shape *shape, int n);
/* A scalar array of shape s holding the element at src, the argument of
 * a called scalar computation (reducers, comparators, scatter's update
 * computation). NULL: error set. */
dev_val *dev_scalar_of(dev_ctx *x, const hs_shape *s, const void *src);
void dev_ref(dev_val *v);
void dev_release(dev_ctx *x, dev_val *v);
void dev_ctx_cleanup(dev_ctx *x);
/* An owned reference to operand k of s: stolen from the frame at its last
 * use, otherwise a new reference. */
dev_val *dev_take(const dev_step *s, dev_val **f, int k);
/* The result buffer of s: the first operand of s->in_place whose last
 * reference this is and that nobody else sees (written in place, as
 * buffer assignment plans), otherwise a new one. NULL: error set. Read
 * the operands' data before: the frame no longer holds a taken operand. */
dev_val *dev_result(dev_ctx *x, const dev_step *s, dev_val **f);
hs_status dev_oom(dev_ctx *x);
hs_status dev_unsupported(dev_ctx *x, const hs_instruction *in,
                          const char *what);
/* The next multi-index over dims[0..n) in row-major order (last dimension
 * fastest); wraps to all zeros after the last. The odometer of the window
 * and convolution kernels. */
static inline void dev_index_next(int64_t *idx, const int64_t *dims, int n)
{
    for (int d = n - 1; d >= 0; d--) {
        if (++idx[d] < dims[d])
            return;
        idx[d] = 0;
    }
}

static inline dev_val *dev_op(const dev_step *s, dev_val **f, int k)
{
    return f[s->ops[k]];
}

/* plan.c */
hs_status dev_plan_module(dev_ctx *x, const hs_computation *entry);
dev_plan *dev_plan_of(dev_ctx *x, const hs_computation *c);
void dev_plans_free(dev_ctx *x);
bool dev_dtype_executable(hs_dtype t);
int dev_esize(hs_dtype t);
/* Element at of dst (type t) = the integer j converted to t (iota). */
void dev_store_index(hs_dtype t, void *dst, int64_t at, int64_t j);

/* interpreter.c: evaluates p with args (references are consumed). */
hs_status dev_eval(dev_ctx *x, dev_plan *p, dev_val **args, int n_args,
                   dev_val **result);

/* cost.c */
/* Why the cost table charges opcode op nothing although it does work
 * (sort, rng, collectives, unknown opcodes); NULL when it is costed. */
const char *dev_cost_not_modelled(hs_opcode op);
void dev_cost(const hs_device_spec *spec, const hs_instruction *in,
              double *flops, double *bytes, double *seconds);
/* A copy between device and host memory (charged to the host link). */
bool dev_is_host_transfer(const hs_instruction *in);
/* A dynamic-slice whose window is one contiguous run of its operand
 * (size 1 on the leading dimensions up to one, full on the trailing ones)
 * in the same memory space: executed as a zero-copy view. */
bool dev_dynamic_slice_is_view(const hs_instruction *in);

/* kernels_data.c: strided n-d copy, strides in elements (may be 0 or
 * negative on the source side). */
void dev_copy_strided(void *dst, const int64_t *dst_strides, const void *src,
                      const int64_t *src_strides, const int64_t *dims,
                      int rank, int esize);
void dev_row_major_strides(const int64_t *dims, int rank, int64_t *strides);
/* dst (row-major in the permuted order) = src transposed so that dst
 * dimension i is src dimension perm[i]. */
void dev_transpose(void *dst, const void *src, const int64_t *src_dims,
                   int rank, const int64_t *perm, int esize);

/* Kernels, one per op family. */
hs_status dev_k_parameter(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_constant(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_iota(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_empty(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_unary(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_convert(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_binary(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_compare(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_is_finite(dev_ctx *, const dev_step *, dev_val **,
                          dev_val **);
hs_status dev_k_reduce_precision(dev_ctx *, const dev_step *, dev_val **,
                                 dev_val **);
hs_status dev_k_select(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_clamp(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_alias(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_copy(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_broadcast(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_transpose(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_slice(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_concatenate(dev_ctx *, const dev_step *, dev_val **,
                            dev_val **);
hs_status dev_k_reverse(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_dynamic_slice(dev_ctx *, const dev_step *, dev_val **,
                              dev_val **);
hs_status dev_k_dynamic_update_slice(dev_ctx *, const dev_step *, dev_val **,
                                     dev_val **);
hs_status dev_k_dot(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_convolution(dev_ctx *, const dev_step *, dev_val **,
                            dev_val **);
hs_status dev_k_reduce(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_tuple(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_get_tuple_element(dev_ctx *, const dev_step *, dev_val **,
                                  dev_val **);
hs_status dev_k_while(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_call(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_custom_call(dev_ctx *, const dev_step *, dev_val **,
                            dev_val **);
hs_status dev_k_fusion(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_copy_start(dev_ctx *, const dev_step *, dev_val **,
                           dev_val **);
hs_status dev_k_copy_done(dev_ctx *, const dev_step *, dev_val **,
                          dev_val **);
hs_status dev_k_pad(dev_ctx *, const dev_step *, dev_val **, dev_val **);
/* kernels_data.c: parses pad's padding="lo_hi[_interior]x..." into
 * 3 * rank int64 (lo, hi, interior per dimension) in the plan arena. */
int64_t *dev_pad_config(dev_ctx *x, const hs_instruction *in);

/* kernels_reduce.c: the fast-path opcode of a reducer computation, or -1. */
int dev_reducer_fast_op(const hs_computation *c);

/* widen.c: whether an operand or result of s is a narrow float (f16,
 * bf16, f8), and kernel run on s in f32: narrow operands widened, the
 * results rounded once into in's own types (XLA's CPU backend computes
 * convolutions and batch norms of these types so). */
bool dev_step_is_narrow_float(const dev_step *s, dev_val **f);
hs_status dev_run_in_f32(dev_ctx *x, const dev_step *s, dev_val **f,
                         dev_val **out, dev_kernel kernel);

/* kernels_gather.c, kernels_sort.c, kernels_rng.c */
hs_status dev_k_gather(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_scatter(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_sort(dev_ctx *, const dev_step *, dev_val **, dev_val **);
/* kernels_topk.c: topk, and the TopK custom-call (dev_is_topk_call),
 * which runs when its comparator and shapes are XLA's (dev_topk_call_runs) */
hs_status dev_k_topk(dev_ctx *, const dev_step *, dev_val **, dev_val **);
hs_status dev_k_topk_call(dev_ctx *, const dev_step *, dev_val **,
                          dev_val **);
bool dev_is_topk_call(const hs_instruction *in);
bool dev_topk_call_runs(const hs_instruction *in);
/* Why a TopK custom-call does not run (NULL when it does). */
const char *dev_topk_call_why_not(const hs_instruction *in);
hs_status dev_k_rng(dev_ctx *, const dev_step *, dev_val **, dev_val **);
/* kernels_spmd.c: SPMDFullToShardShape and SPMDShardToFullShape on one
 * device, playing partition 0: whether in is one of them, its check
 * (HS_OK or the refusal in x->err), device 0's tile origin computed when
 * it is planned (in x->arena; NULL: error set) and the kernel. */
bool dev_is_spmd_shape_call(const hs_instruction *in);
hs_status dev_spmd_check(dev_ctx *x, const hs_instruction *in);
int64_t *dev_spmd_plan(dev_ctx *x, const hs_instruction *in);
hs_status dev_k_spmd_shape(dev_ctx *, const dev_step *, dev_val **,
                           dev_val **);
/* kernels_rng_bits.c */
hs_status dev_k_rng_bit_generator(dev_ctx *, const dev_step *, dev_val **,
                                  dev_val **);

/* kernels_window.c, kernels_batch_norm.c */
hs_status dev_k_reduce_window(dev_ctx *, const dev_step *, dev_val **,
                              dev_val **);
hs_status dev_k_select_and_scatter(dev_ctx *, const dev_step *, dev_val **,
                                   dev_val **);
hs_status dev_k_batch_norm_training(dev_ctx *, const dev_step *, dev_val **,
                                    dev_val **);
hs_status dev_k_batch_norm_inference(dev_ctx *, const dev_step *,
                                     dev_val **, dev_val **);
hs_status dev_k_batch_norm_grad(dev_ctx *, const dev_step *, dev_val **,
                                dev_val **);

/* for (i = 0; i < n; i++) STMT, written as blocks of 8 with a constant
 * inner trip count: at -O2 GCC's "very cheap" vectoriser skips plain loops
 * of unknown length but fully unrolls and SLP-vectorises these blocks. The
 * statement is usually an element function of numerics/element_ops.h. */
#define VLOOP(n, ...)                                                      \
    do {                                                                   \
        int64_t b_ = 0, n_ = (n);                                          \
        for (; b_ + 8 <= n_; b_ += 8)                                      \
            for (int j_ = 0; j_ < 8; j_++) {                               \
                int64_t i = b_ + j_;                                       \
                __VA_ARGS__;                                               \
            }                                                              \
        for (int64_t i = b_; i < n_; i++) {                                \
            __VA_ARGS__;                                                   \
        }                                                                  \
    } while (0)

/* kernels_elementwise.c: the element loops, shared by the kernels and the
 * fused programs so that fused and unfused results are bit-identical.
 * Pointers are to n elements of the type (y never aliases an input). */
bool dev_unary_supported(hs_opcode op, hs_dtype t);
void dev_unary_loop(hs_opcode op, hs_dtype t, const void *a, void *y,
                    int64_t n);
/* false when op is not defined on t */
bool dev_binary_loop(hs_opcode op, hs_dtype t, const void *a,
                     const void *b, void *y, int64_t n);
void dev_compare_loop(hs_direction d, hs_dtype t, const void *a,
                      const void *b, uint8_t *y, int64_t n);
/* pstep/lstep/hstep: 1 for arrays, 0 for a scalar operand */
void dev_select_loop(int esize, const uint8_t *p, int64_t pstep,
                     const void *a, const void *b, void *y, int64_t n);
void dev_clamp_loop(hs_dtype t, const void *lo, int64_t lstep,
                    const void *a, const void *hi, int64_t hstep, void *y,
                    int64_t n);
void dev_convert_loop(hs_dtype from, hs_dtype to, const void *a, void *y,
                      int64_t n);

/* fusion_program.c: a kLoop fusion compiled to an element-wise program
 * that runs block by block (intermediates live in a few per-block
 * registers, never in device memory). NULL when the fused computation is
 * not of that form (the kernel then evaluates it like a call); an error
 * is set only on host OOM. */
typedef struct dev_fusion_program dev_fusion_program;
dev_fusion_program *dev_fusion_compile(dev_ctx *x, const hs_instruction *in);
/* kernels_fusion.c */
/* out may be one of the operands (a fusion written in place). */
hs_status dev_fusion_execute(dev_ctx *x, const dev_fusion_program *p,
                             const void *const *operands, void *out);

#endif
