/*
 * hs_ir.h - the HLO intermediate representation: module / computation /
 * instruction, shapes with layouts and memory spaces, and errors.
 *
 * A module owns one arena. Every computation, instruction, name and attribute
 * of a module lives in that arena and is freed with hs_module_free(); there is
 * no per-instruction free.
 *
 *     hs_module *m = hs_module_new("example");
 *     hs_computation *c = hs_module_add_computation(m, "main", true);
 *     hs_shape s = hs_shape_make(HS_F32, 2, (int64_t[]){1, 1024});
 *     hs_instruction *x = hs_computation_add_parameter(c, 0, &s, "x");
 *     hs_instruction *ops[] = {x, x};
 *     hs_instruction *y = hs_computation_add(c, HS_OP_ADD, &s, ops, 2, NULL);
 *     c->root = y;
 *     hs_module_free(m);
 *
 * Most code builds modules through the tracer (hs_builder.h), which infers
 * shapes; the functions here are the low-level constructors that the tracer,
 * the HLO text parser and the passes share.
 */
#ifndef HLOSCOPE_HS_IR_H
#define HLOSCOPE_HS_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hloscope/hs_opcode.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

typedef enum hs_status {
    HS_OK = 0,
    HS_ERR_INVALID,     /* bad user input (schema, values)            */
    HS_ERR_PARSE,       /* syntax error in JSON or HLO text           */
    HS_ERR_SHAPE,       /* shape inference / verification failure     */
    HS_ERR_UNSUPPORTED, /* valid HLO the engine cannot execute         */
    HS_ERR_OOM,         /* emulated device out of memory               */
    HS_ERR_LIMIT,       /* a configured limit was exceeded             */
    HS_ERR_IO,          /* file system                                 */
    HS_ERR_RUNTIME,     /* failure while executing                      */
    HS_ERR_CANCELLED,   /* deadline passed                              */
    HS_ERR_NOMEM        /* host allocation failed                       */
} hs_status;

/* An error a user can act on: what happened and where. Every field but
 * status and message is optional (empty string / 0 when it does not apply). */
typedef struct hs_error {
    hs_status status;
    char message[512];
    char path[256];        /* JSON pointer, e.g. /layers/0/block/features */
    int line;              /* 1-based; 0 when unknown */
    int column;            /* 1-based; 0 when unknown */
    char instruction[128]; /* instruction name, e.g. add.3 */
} hs_error;

const char *hs_status_name(hs_status s);
void hs_error_clear(hs_error *e);
/* Sets status and message (printf-style). e may be NULL. Returns s. The
 * message is kept well-formed UTF-8 whatever the arguments quote: a byte
 * that is not part of a character is written "\xNN", and truncation never
 * cuts a character. */
hs_status hs_error_set(hs_error *e, hs_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Formats "line:col: path: instruction: message" (omitting absent parts). */
int hs_error_format(const hs_error *e, char *buf, size_t size);

/* ------------------------------------------------------------------------ */
/* Arena                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct hs_arena hs_arena;

hs_arena *hs_arena_new(size_t chunk_bytes); /* 0 = default (64 KiB) */
void hs_arena_free(hs_arena *a);
/* Zeroed, 16-byte aligned. Returns NULL only on host OOM. */
void *hs_arena_alloc(hs_arena *a, size_t size);
char *hs_arena_strdup(hs_arena *a, const char *s);
char *hs_arena_strndup(hs_arena *a, const char *s, size_t n);
char *hs_arena_printf(hs_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
size_t hs_arena_bytes(const hs_arena *a); /* bytes reserved from the OS */

/* ------------------------------------------------------------------------ */
/* Element types                                                            */
/* ------------------------------------------------------------------------ */

/* X(ENUM, text name, bits): every primitive type of XLA's xla_data.proto
 * but OPAQUE_TYPE. Integers run from S1 to U64 and real floats from
 * F4E2M1FN to F64 (predicates below rely on both ranges). The device
 * executes some (dev_dtype_executable); the rest are parsed, printed and
 * sized for analysis of imported HLO. */
#define HS_DTYPE_LIST(X)                \
    X(PRED, "pred", 8)                  \
    X(S1, "s1", 1)                      \
    X(S2, "s2", 2)                      \
    X(S4, "s4", 4)                      \
    X(S8, "s8", 8)                      \
    X(S16, "s16", 16)                   \
    X(S32, "s32", 32)                   \
    X(S64, "s64", 64)                   \
    X(U1, "u1", 1)                      \
    X(U2, "u2", 2)                      \
    X(U4, "u4", 4)                      \
    X(U8, "u8", 8)                      \
    X(U16, "u16", 16)                   \
    X(U32, "u32", 32)                   \
    X(U64, "u64", 64)                   \
    X(F4E2M1FN, "f4e2m1fn", 4)          \
    X(F8E3M4, "f8e3m4", 8)              \
    X(F8E4M3, "f8e4m3", 8)              \
    X(F8E4M3FN, "f8e4m3fn", 8)          \
    X(F8E4M3B11FNUZ, "f8e4m3b11fnuz", 8)\
    X(F8E5M2, "f8e5m2", 8)              \
    X(F8E4M3FNUZ, "f8e4m3fnuz", 8)      \
    X(F8E5M2FNUZ, "f8e5m2fnuz", 8)      \
    X(F8E8M0FNU, "f8e8m0fnu", 8)        \
    X(F16, "f16", 16)                   \
    X(BF16, "bf16", 16)                 \
    X(F32, "f32", 32)                   \
    X(F64, "f64", 64)                   \
    X(C64, "c64", 64)                   \
    X(C128, "c128", 128)                \
    X(TOKEN, "token", 0)

typedef enum hs_dtype {
#define HS_X(e, n, b) HS_##e,
    HS_DTYPE_LIST(HS_X)
#undef HS_X
    HS_TUPLE, /* not an element type: marks a tuple shape */
    HS_DTYPE_COUNT
} hs_dtype;

const char *hs_dtype_name(hs_dtype t);
int hs_dtype_bits(hs_dtype t);
/* Returns false when name (of length len) is not an element type. */
bool hs_dtype_parse(const char *name, size_t len, hs_dtype *out);
bool hs_dtype_is_float(hs_dtype t);

/* ------------------------------------------------------------------------ */
/* Shapes                                                                   */
/* ------------------------------------------------------------------------ */

#define HS_MAX_RANK 8

/* Memory spaces as XLA numbers them in layouts: {1,0:S(5)} is host. */
enum { HS_MEMSPACE_DEVICE = 0, HS_MEMSPACE_HOST = 5 };

typedef struct hs_shape hs_shape;
struct hs_shape {
    hs_dtype dtype; /* HS_TUPLE for tuples */
    int rank;
    int64_t dims[HS_MAX_RANK];
    uint8_t dynamic_mask; /* bit i set: dimension i is "<=dims[i]" */
    bool has_layout;      /* layout written explicitly (parser) */
    int8_t minor_to_major[HS_MAX_RANK];
    int memory_space;        /* 0 device, 5 host (S(5)) */
    const char *layout_tail; /* other layout items after ':' kept as text
                                (e.g. "T(8,128)"), NULL when none */
    /* tuples */
    int n_elems;
    hs_shape *elems; /* arena-allocated array of n_elems */
};

/* An array shape with the default (descending) layout. */
hs_shape hs_shape_make(hs_dtype t, int rank, const int64_t *dims);
hs_shape hs_shape_scalar(hs_dtype t);
/* A tuple shape; elems are copied into the arena. */
hs_shape hs_shape_tuple(hs_arena *a, int n, const hs_shape *elems);
bool hs_shape_is_tuple(const hs_shape *s);
/* The largest array hloscope accepts: 2^44 elements and 2^44 bytes
 * (16 TiB), far above any real tensor (a 70B model's largest weight is
 * about 2^31 bytes) and far below int64; the size functions below
 * saturate rather than wrap.
 * Parser, builder and verifier refuse larger shapes (hs_shape_check_size),
 * so every count, stride and offset of an accepted array fits int64. */
#define HS_MAX_ARRAY_ELEMENTS (INT64_C(1) << 44)
#define HS_MAX_ARRAY_BYTES (INT64_C(1) << 44)
/* The verifier's bound on the bytes of all results of a module together,
 * which bounds every sum of live bytes the buffer analyses form. */
#define HS_MAX_MODULE_BYTES (INT64_C(1) << 62)

/* 1 for scalars; tuples: 0. Saturates at INT64_MAX instead of
 * overflowing (a shape hs_shape_check_size refused). */
int64_t hs_shape_elements(const hs_shape *s);
/* Array bytes (bits rounded up). A tuple's own buffer is its index table:
 * 8 bytes per element. Saturates at INT64_MAX. */
int64_t hs_shape_bytes(const hs_shape *s);
/* All leaf bytes of a (possibly nested) tuple, plus index tables.
 * Saturates at INT64_MAX. */
int64_t hs_shape_total_bytes(const hs_shape *s);
/* The arrays (and tokens) in s, its leaves: 1 for a non-tuple, the sum
 * over a tuple's elements (0 for an empty tuple). */
int hs_shape_leaf_count(const hs_shape *s);
/* HS_OK when every array in s (tuples: every leaf) has non-negative
 * dimensions (or '?' dynamic ones) and at most HS_MAX_ARRAY_ELEMENTS
 * elements and HS_MAX_ARRAY_BYTES bytes; otherwise HS_ERR_LIMIT with a
 * message that quotes the shape, e.g. "f32[4294967296,4294967296] has
 * 2^64 elements, more than the 2^44 ...". The caller adds where. */
hs_status hs_shape_check_size(const hs_shape *s, hs_error *err);
/* Saturating int64 arithmetic for byte and FLOP sums: the result is
 * clamped to [INT64_MIN, INT64_MAX] instead of overflowing. */
int64_t hs_sat_add(int64_t a, int64_t b);
int64_t hs_sat_mul(int64_t a, int64_t b);
/* Dimensions and element type equal (layout and memory space ignored). */
bool hs_shape_compatible(const hs_shape *a, const hs_shape *b);
/* Prints e.g. "f32[1,1024]{1,0}" or "(f32[2], s32[])". with_layout adds the
 * layout (always, default one if none was given) for arrays of rank >= 1.
 * Returns the number of characters that the full string needs. */
int hs_shape_print(const hs_shape *s, bool with_layout, char *buf,
                   size_t size);
/* The same, whole however long, in a new string (free it); NULL when out
 * of memory. */
char *hs_shape_string(const hs_shape *s, bool with_layout);
/* Sets the default descending layout (minor_to_major = rank-1 .. 0). */
void hs_shape_default_layout(hs_shape *s);

/* ------------------------------------------------------------------------ */
/* Instructions                                                             */
/* ------------------------------------------------------------------------ */

typedef struct hs_module hs_module;
typedef struct hs_computation hs_computation;
typedef struct hs_instruction hs_instruction;

typedef enum hs_direction {
    HS_DIR_NONE = 0,
    HS_DIR_EQ,
    HS_DIR_NE,
    HS_DIR_LT,
    HS_DIR_LE,
    HS_DIR_GT,
    HS_DIR_GE
} hs_direction;

const char *hs_direction_name(hs_direction d); /* "EQ" ... */
bool hs_direction_parse(const char *s, size_t len, hs_direction *out);

typedef struct hs_dot_dims {
    int n_lhs_batch, n_lhs_contracting, n_rhs_batch, n_rhs_contracting;
    int64_t lhs_batch[HS_MAX_RANK], lhs_contracting[HS_MAX_RANK];
    int64_t rhs_batch[HS_MAX_RANK], rhs_contracting[HS_MAX_RANK];
} hs_dot_dims;

typedef struct hs_slice_dims {
    int rank;
    int64_t start[HS_MAX_RANK], limit[HS_MAX_RANK], stride[HS_MAX_RANK];
} hs_slice_dims;

/* The step a slice takes along dimension k of its operand: its stride
 * where it takes more than one element (then stride * (n - 1) < the
 * operand's size, so strides of a verified slice never overflow), 1 where
 * the stride is never used (`[0:2:2^63-1]` takes one element). */
static inline int64_t hs_slice_step(const hs_slice_dims *s,
                                    const int64_t *result_dims, int k)
{
    return result_dims[k] > 1 && s->stride[k] > 1 ? s->stride[k] : 1;
}

/* An attribute the engine keeps as text only, to print it back unchanged. */
typedef struct hs_attr {
    const char *key;
    const char *value;
} hs_attr;

struct hs_instruction {
    hs_opcode opcode;
    int id;           /* unique in the module */
    const char *name; /* unique in the module, without '%' */
    hs_computation *parent;
    hs_shape shape;

    int n_operands;
    hs_instruction **operands;
    /* while: {condition, body}; reduce/map/sort/scatter: {to_apply};
     * call/fusion/custom-call: {calls...}; conditional: branches. */
    int n_called;
    hs_computation **called;

    /* Attributes; which ones are meaningful depends on the opcode. */
    int64_t index;    /* parameter number; get-tuple-element index */
    int n_dims;       /* dimensions={...} of broadcast, transpose, reduce, */
    int64_t *dims;    /* concatenate, reverse; dynamic_slice_sizes; */
                      /* iota_dimension (n_dims = 1); reduce-precision's */
                      /* {exponent_bits, mantissa_bits} (n_dims = 2) */
    hs_dot_dims *dot; /* dot */
    hs_slice_dims *slice; /* slice */
    hs_direction direction;      /* compare */
    const char *compare_type;    /* compare type=..., NULL when absent */
    const char *custom_call_target; /* custom-call */
    const char *fusion_kind;     /* fusion: "kLoop", "kCustom", ... */
    /* constant: literal data in the element type's natural C layout for
     * f32 (float), s32 (int32_t), pred (uint8_t), and other types whose
     * text the parser can decode; literal_text keeps the literal as written
     * when it could not be decoded (analysis-only types). */
    void *literal;
    const char *literal_text;
    /* constant: an array written as one value for every element
     * (`f32[256,1024] constant(0)`), printed back the same way rather
     * than as its 262,144 elements */
    bool literal_splat;

    /* metadata={op_name="layers.3/linear" ...} */
    const char *op_name;
    const char *op_type;
    const char *metadata_rest; /* other metadata fields, kept as text */
    const char *frontend_attributes; /* text inside {...}, NULL if none */
    const char *backend_config;      /* as written (quoted or {json}) */
    const char *sharding;            /* text inside {...}, NULL if none */
    int64_t known_trip_count;        /* while; -1 when not known */

    int n_extra; /* attributes kept as text only */
    hs_attr *extra;
    const char *unknown_opcode; /* opcode text when opcode==HS_OP_UNKNOWN */

    int64_t scratch; /* free for the pass or analysis running now */
};

/* ------------------------------------------------------------------------ */
/* Computations and modules                                                 */
/* ------------------------------------------------------------------------ */

struct hs_computation {
    const char *name;
    hs_module *module;
    int id;
    /* In definition order, which is a post order: operands before users. */
    int n_instrs, cap_instrs;
    hs_instruction **instrs;
    /* params[i] is parameter(i); NULL holes are a verifier error. */
    int n_params, cap_params;
    hs_instruction **params;
    hs_instruction *root;
    bool is_entry;
    bool is_fusion; /* called by a fusion instruction */
};

/* XLA's host-offload annotation (torch_xla's place_to_host and
 * place_to_device), which the offload pass lowers to host buffers and
 * copies:
 *     custom-call(x), custom_call_target="annotate_device_placement",
 *       frontend_attributes={_xla_buffer_placement="pinned_host"}
 * ("device" for the way back). Written by the model loader, scan and
 * autodiff, read by autodiff and the offload pass: all through these. */
#define HS_PLACEMENT_TARGET "annotate_device_placement"
typedef enum hs_placement {
    HS_PLACEMENT_NONE,   /* not a placement annotation */
    HS_PLACEMENT_DEVICE,
    HS_PLACEMENT_HOST,
} hs_placement;
hs_placement hs_instruction_placement(const hs_instruction *i);
/* Sets the frontend attributes of i (a custom-call to
 * HS_PLACEMENT_TARGET) to place it on the host or the device. False on
 * host OOM. */
bool hs_instruction_set_placement(hs_instruction *i, bool host);

/* The process clock: CLOCK_MONOTONIC in nanoseconds (ir/clock.c), for
 * pass timings, deadlines and step timings in every room. */
int64_t hs_now_ns(void);

/* One entry of XLA's input_output_alias: the output at index path
 * `output` may reuse (must reuse, for must-alias) the buffer of entry
 * parameter `param` at index path `param_index`. In HLO text,
 *     input_output_alias={ {1}: (2, {}, may-alias), {2,0}: (3, {1}, must-alias) }
 * An empty path is the whole value. */
enum { HS_MAX_ALIAS_INDEX = 8 };
typedef struct hs_io_alias {
    int output[HS_MAX_ALIAS_INDEX], output_len;
    int param;
    int param_index[HS_MAX_ALIAS_INDEX], param_index_len;
    bool must_alias;
} hs_io_alias;

struct hs_module {
    const char *name;
    hs_arena *arena;
    int n_comps, cap_comps;
    hs_computation **comps; /* callees before callers */
    hs_computation *entry;
    int next_id;              /* next instruction id */
    /* N of the next default name "<opcode>.<N>": above the N of every
     * name of that form the module holds (parsed, copied or renamed), so
     * that an instruction a pass adds never takes a name already used
     * (a printed training step re-parsed once clashed on constant.496) */
    int64_t next_name;
    /* The module attributes the engine does not model, as text after
     * "HloModule name," (without input_output_alias). */
    const char *header_attrs;
    /* input_output_alias, in the module's arena (hs_module_set_io_aliases):
     * read by buffer assignment and the device, printed by the printer. */
    int n_io_aliases;
    const hs_io_alias *io_aliases;
};

hs_module *hs_module_new(const char *name);
void hs_module_free(hs_module *m);
hs_computation *hs_module_add_computation(hs_module *m, const char *name,
                                          bool is_entry);
hs_computation *hs_module_find_computation(const hs_module *m,
                                           const char *name);
/* Total instructions over all computations. */
int64_t hs_module_instruction_count(const hs_module *m);
/* Replaces m's input_output_alias with a copy of a[0..n) in m's arena.
 * Returns false on host OOM (m unchanged). */
bool hs_module_set_io_aliases(hs_module *m, const hs_io_alias *a, int n);
/* Position of c in m->comps, or -1 when c is not one of m's
 * computations. O(1) when c->id is its position, as it is after
 * hs_module_add_computation. */
int hs_computation_index(const hs_module *m, const hs_computation *c);

/* XXH3-64 over the module's structure: computations in order; for each
 * instruction its opcode, shape (layout and memory space included), operands
 * as positions within the computation, attributes, called computations as
 * positions within the module, and constant literal bytes. Names, ids and
 * metadata are excluded, so tracing the same graph twice gives the same
 * fingerprint. */
uint64_t hs_module_fingerprint(const hs_module *m);

/* A deep copy of m in a new arena (names and ids preserved), or NULL on
 * host OOM or when m is malformed (an operand not defined before use). */
hs_module *hs_module_clone(const hs_module *m);

/* Appends an instruction. operands are copied; name NULL gives
 * "<opcode>.<N>", N at least the id and above every "<name>.<N>" the module
 * holds. Returns NULL on host OOM. The caller sets attributes. */
hs_instruction *hs_computation_add(hs_computation *c, hs_opcode op,
                                   const hs_shape *shape,
                                   hs_instruction *const *operands,
                                   int n_operands, const char *name);
/* Records that the module holds name: a later default name's number goes
 * above its ".<N>" suffix (for names set outside hs_computation_add). */
void hs_module_note_name(hs_module *m, const char *name);
/* Appends parameter(number) and records it in c->params. */
hs_instruction *hs_computation_add_parameter(hs_computation *c,
                                             int64_t number,
                                             const hs_shape *shape,
                                             const char *name);
/* Attribute setters that copy into the module arena. */
void hs_instruction_set_dims(hs_instruction *i, const int64_t *dims, int n);
void hs_instruction_set_called(hs_instruction *i, hs_computation *const *c,
                               int n);
void hs_instruction_add_extra(hs_instruction *i, const char *key,
                              const char *value);
hs_arena *hs_instruction_arena(const hs_instruction *i);

/* Users of every instruction of c, computed in one pass. users[k] lists the
 * users of c->instrs[k]; instruction->scratch is set to its index k.
 * Allocated in the module arena. */
typedef struct hs_user_list {
    int n;
    hs_instruction **users;
} hs_user_list;
hs_user_list *hs_computation_users(hs_computation *c);

/* Removes instructions that are not reachable from the root (parameters are
 * kept). Returns the number removed. */
int hs_computation_remove_dead(hs_computation *c);

/* Structural checks: operand arity from the opcode table, operands defined
 * before use in the same computation, a root in every computation,
 * parameters numbered 0..n-1 without holes, called computations present,
 * unique names, and shapes that agree with shape inference where the engine
 * knows the rule. The error names the instruction. */
hs_status hs_module_verify(const hs_module *m, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Computation order (added for the tracer)                                 */
/* ------------------------------------------------------------------------ */

/* Keeps m->comps callees-before-callers when caller starts calling callee:
 * if callee sits after caller, moves callee and every computation it calls
 * (directly or transitively) that also sits after caller to just before
 * caller, keeping their relative order. No-op when callee is already before
 * caller. HS_ERR_INVALID when either is not in m, they are the same, or
 * callee (transitively) calls caller; HS_ERR_NOMEM on host OOM. */
hs_status hs_module_move_computation_before(hs_module *m,
                                            hs_computation *callee,
                                            const hs_computation *caller);

/* Whether element j of user's result reads only element j of operand
 * `operand` (same dimensions): an element-wise op, or a kLoop fusion whose
 * root reaches that parameter through element-wise ops only. An operand
 * passed at several indexes must be read so at each. Such a result may
 * take over the operand's buffer where the operand dies (ir/access.c). */
bool hs_reads_elementwise(const hs_instruction *user, int operand);

/* ------------------------------------------------------------------------ */
/* Copying between modules (clone, inlining)                                */
/* ------------------------------------------------------------------------ */

/* A pad's padding={lo_hi_interior x ...} attribute, per dimension. */
typedef struct hs_padding {
    int rank;
    int64_t lo[HS_MAX_RANK], hi[HS_MAX_RANK], interior[HS_MAX_RANK];
} hs_padding;
/* Reads pad instruction i's padding attribute for an operand of the given
 * rank. HS_ERR_SHAPE with a message when it is missing, malformed, has a
 * negative interior or another rank. */
hs_status hs_instruction_padding(const hs_instruction *i, int rank,
                                 hs_padding *out, hs_error *err);
/* The text of i's attribute `key` that the engine keeps as text only
 * (instruction->extra: window=, dim_labels=, padding=, ...), NULL when i
 * has none. */
const char *hs_instruction_attr(const hs_instruction *i, const char *key);

/* A window={size=... stride=... pad=... lhs_dilate=... rhs_dilate=...
 * rhs_reversal=...} attribute (convolution, reduce-window,
 * select-and-scatter), per window dimension. Fields the text leaves out
 * take XLA's defaults: stride, dilations 1, padding 0, no reversal. */
typedef struct hs_window_dim {
    int64_t size, stride, pad_lo, pad_hi, lhs_dilate, rhs_dilate;
    bool reversal;
} hs_window_dim;
typedef struct hs_window {
    int rank;
    hs_window_dim dim[HS_MAX_RANK];
} hs_window;
/* Reads i's window attribute for `rank` window dimensions. HS_ERR_SHAPE
 * naming the instruction and the field when it is missing (and rank > 0),
 * malformed, has another rank, or a size, stride or dilation below 1
 * (sizes and strides below 1 are what XLA's shape inference rejects;
 * padding may be negative). */
hs_status hs_instruction_window(const hs_instruction *i, int rank,
                                hs_window *out, hs_error *err);
/* The extent of a dimension of `n` elements after base (lhs) dilation and
 * padding (may be negative), and the number of window positions along it
 * (0 when the dilated window does not fit): XLA's window_util. Both
 * saturate rather than overflow; the shape checks refuse such sizes. */
int64_t hs_window_padded_extent(const hs_window_dim *w, int64_t n);
int64_t hs_window_output_extent(const hs_window_dim *w, int64_t n);

/* A convolution's dim_labels (XLA's ConvolutionDimensionNumbers), e.g.
 * b01f_01io->b01f or bf01_oi01->bf01: which dimension of the input (lhs),
 * kernel (rhs) and output is the batch, the feature, the kernel's input
 * and output feature, and spatial dimension 0, 1, ... (ir/conv_dims.c). */
typedef struct hs_conv_dims {
    int n_spatial;
    int64_t lhs_batch, lhs_feature, lhs_spatial[HS_MAX_RANK];
    int64_t rhs_input, rhs_output, rhs_spatial[HS_MAX_RANK];
    int64_t out_batch, out_feature, out_spatial[HS_MAX_RANK];
} hs_conv_dims;
/* Everything a convolution's attributes say: its dimension numbers, its
 * window (one dimension per spatial dimension) and its group counts
 * (feature_group_count: depthwise and grouped convolutions;
 * batch_group_count: the kernel gradient of a grouped convolution), 1 when
 * not written. */
typedef struct hs_conv {
    hs_conv_dims dims;
    hs_window window;
    int64_t feature_groups, batch_groups;
} hs_conv;
/* Parses dim_labels text. false with *why set (static text) when it is
 * malformed: three ranks that differ, a label missing or repeated, an
 * unknown letter. */
bool hs_conv_dims_parse(const char *text, hs_conv_dims *out,
                        const char **why);
/* Writes the dim_labels text of d into buf; false when it does not fit. */
bool hs_conv_dims_print(const hs_conv_dims *d, char *buf, size_t size);
/* Writes window text in XLA's form (fields at their default left out)
 * into buf; false when it does not fit. */
bool hs_window_print(const hs_window *w, char *buf, size_t size);
/* Reads convolution i's dim_labels, window, feature_group_count and
 * batch_group_count. HS_ERR_SHAPE naming the instruction and the attribute
 * when one is missing or malformed, or the operands' ranks disagree with
 * the dim_labels. */
hs_status hs_instruction_conv(const hs_instruction *i, hs_conv *out,
                              hs_error *err);

/* The select= and scatter= computations of select-and-scatter i:
 * i->called[0] and [1] (the parser puts them there whatever order they
 * are written in; the printer writes them back under their keys). False
 * when either is missing. */
bool hs_select_and_scatter_computations(const hs_instruction *i,
                                        hs_computation **select,
                                        hs_computation **scatter);

/* The epsilon= and feature_index= attributes of batch-norm-training,
 * -inference and -grad (ir/batch_norm.c). */
typedef struct hs_batch_norm {
    float epsilon;
    int feature_index;
} hs_batch_norm;
/* Reads them for an operand of the given rank. HS_ERR_SHAPE naming the
 * instruction when one is missing, is not a number, epsilon is negative
 * or not finite, or feature_index is not a dimension of the operand. */
hs_status hs_instruction_batch_norm(const hs_instruction *i, int rank,
                                    hs_batch_norm *out, hs_error *err);

/* The dimension numbers of gather and scatter (ir/gather_dims.c): XLA's
 * GatherDimensionNumbers, and its ScatterDimensionNumbers under gather's
 * names (update_window_dims are `offset`, inserted_window_dims
 * `collapsed`, scatter_dims_to_operand_dims `start_index_map`,
 * input_batching_dims `operand_batching`, scatter_indices_batching_dims
 * `indices_batching`). slice_sizes: gather only. */
typedef struct hs_gather_dims {
    int n_offset, n_collapsed, n_start_index_map;
    int n_operand_batching, n_indices_batching, n_slice_sizes;
    int64_t offset[HS_MAX_RANK], collapsed[HS_MAX_RANK];
    int64_t start_index_map[HS_MAX_RANK];
    int64_t operand_batching[HS_MAX_RANK], indices_batching[HS_MAX_RANK];
    int64_t slice_sizes[HS_MAX_RANK];
    int64_t index_vector_dim;
} hs_gather_dims;
/* Read gather (scatter) i's dimension numbers; HS_ERR_SHAPE naming the
 * instruction and the attribute when one is malformed or
 * index_vector_dim= (gather: slice_sizes=) is missing. Whether the
 * numbers fit the operands is the shape rule's check. */
hs_status hs_instruction_gather(const hs_instruction *i, hs_gather_dims *out,
                                hs_error *err);
hs_status hs_instruction_scatter(const hs_instruction *i,
                                 hs_gather_dims *out, hs_error *err);
/* d as gather's (scatter's) text attributes in XLA's spelling and order,
 * strings in arena a: what a gradient building a scatter from a gather,
 * or back, hands to the new instruction. The count (at most
 * HS_GATHER_MAX_ATTRS), or -1 on host OOM. */
enum { HS_GATHER_MAX_ATTRS = 7 };
int hs_gather_attrs(const hs_gather_dims *d, hs_arena *a,
                    hs_attr out[HS_GATHER_MAX_ATTRS]);
int hs_scatter_attrs(const hs_gather_dims *d, hs_arena *a,
                     hs_attr out[HS_GATHER_MAX_ATTRS]);

/* Bytes of i's decoded literal: 0 when it has none or its element type is
 * narrower than a byte (those stay as literal_text). */
int64_t hs_instruction_literal_bytes(const hs_instruction *i);
/* Deep copy of src (tuple elements, layout tail) into arena a. Returns
 * false on host OOM. */
bool hs_shape_copy(hs_arena *a, hs_shape *dst, const hs_shape *src);
/* Copies every attribute of src into dst, allocating in dst's module arena:
 * all fields but opcode, id, name, parent, shape, operands and called
 * computations, which the caller sets. Returns false on host OOM. */
bool hs_instruction_copy_attributes(hs_instruction *dst,
                                    const hs_instruction *src);

#ifdef __cplusplus
}
#endif
#endif
