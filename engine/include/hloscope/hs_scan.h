/*
 * hs_scan.h - scan and scan_layers: a loop traced once, lowered to `while`.
 *
 * scan(fn, init_carry, xs, reverse) -> (final carry, stacked ys) follows
 * torch_xla's scan (and jax.lax.scan): fn is traced ONCE into a body
 * computation, whatever the number of steps N, and the loop becomes
 *
 *     while(tuple(s32 counter, carries..., xs..., ys accumulators...))
 *       condition: counter < N
 *       body:      x_j  = reshape(dynamic-slice(xs_j, i))     i = counter
 *                                                             (N-1-counter
 *                                                              when reverse)
 *                  (carries', ys) = fn(carries, x)
 *                  acc_j' = dynamic-update-slice(acc_j, reshape(y_j), i)
 *                  tuple(counter + 1, carries', xs..., acc')
 *
 * with known_trip_count = N. A sum of x along the leading axis:
 *
 *     static void step(hs_builder *body, hs_scan_step *s, void *user) {
 *         s->new_carry[0] = hs_b_binary(body, HS_OP_ADD, s->carry[0], s->x[0]);
 *         s->ys[s->n_ys++] = s->new_carry[0];      // running sums
 *     }
 *     hs_instruction *carry, *ys[HS_SCAN_MAX_YS];
 *     int n_ys;
 *     hs_scan(b, step, NULL, &zero_row, 1, &xs, 1, NULL, &carry, ys, &n_ys);
 *
 * Errors follow the builder's sticky-error contract: hs_scan records the
 * first error on b (naming the scan and the offending carry or xs index) and
 * returns NULL; errors fn records on the body builder are carried over to b.
 * See docs/SCAN.md for the lowering, op_name scopes and numerics.
 */
#ifndef HLOSCOPE_HS_SCAN_H
#define HLOSCOPE_HS_SCAN_H

#include "hloscope/hs_autodiff.h"
#include "hloscope/hs_builder.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most ys one scan body may emit. */
#define HS_SCAN_MAX_YS 64

/* What fn sees and returns for one step. Every instruction lives in the
 * body computation (body). */
typedef struct hs_scan_step {
    /* Set by hs_scan before fn runs. */
    hs_instruction *index;        /* s32[]: the slice this step reads and
                                     writes (counter, or N-1-counter) */
    int n_carry;
    hs_instruction *const *carry; /* the carries entering this step */
    int n_xs;
    hs_instruction *const *x;     /* xs[j] sliced at index, leading axis
                                     dropped */
    /* Set by fn. */
    hs_instruction **new_carry;   /* n_carry entries, each the shape and
                                     element type of its init */
    int n_ys;                     /* ys emitted, at most HS_SCAN_MAX_YS */
    hs_instruction *ys[HS_SCAN_MAX_YS];
} hs_scan_step;

/* Traces one step into body. Errors go on body (hs_builder_fail or a
 * failing op); a NULL new carry is an error too. */
typedef void (*hs_scan_fn)(hs_builder *body, hs_scan_step *step, void *user);

typedef struct hs_scan_options {
    /* op_name scope, relative to the caller's current scope, of the loop
     * machinery (counter, slices, updates, the while and its tuples), and
     * the scan's name in errors. NULL: "scan". */
    const char *scope;
    /* Extra scope for fn's instructions, relative to the caller's scope;
     * NULL: none (fn's own scopes sit right under the caller's). */
    const char *body_scope;
    bool reverse;   /* visit xs from the last slice to the first; ys are
                       still written at the slice they belong to */
    int64_t length; /* N; required when there are no xs, else 0 or equal to
                       the xs' leading size */
} hs_scan_options;

/* Lowers scan(fn, init, xs) into b's computation. init[0..n_carry) and
 * xs[0..n_xs) are arrays of b's computation; every xs[j] has rank >= 1 and
 * the same leading size N >= 1. On success returns the while instruction,
 * fills carry_out[0..n_carry) with the final carries and ys_out[0..*n_ys)
 * with the stacked ys ([N, ...y's shape]); ys_out has room for
 * HS_SCAN_MAX_YS. Either output may be NULL when unwanted. Returns NULL on
 * error (recorded on b). */
hs_instruction *hs_scan(hs_builder *b, hs_scan_fn fn, void *user,
                        hs_instruction *const *init, int n_carry,
                        hs_instruction *const *xs, int n_xs,
                        const hs_scan_options *opts,
                        hs_instruction **carry_out, hs_instruction **ys_out,
                        int *n_ys);

/* ------------------------------------------------------------------------ */
/* scan_layers                                                              */
/* ------------------------------------------------------------------------ */

/* One parameter of a layer, named relative to the layer
 * ("attn.q_proj.weight" for "layers.3.attn.q_proj.weight"). */
typedef struct hs_layer_param {
    const char *name;
    hs_shape shape;
    hs_instruction *value; /* the weights in the caller's computation; may
                              be NULL when the caller passes them stacked */
} hs_layer_param;

typedef struct hs_layer {
    const char *name; /* "layers.3" for errors; NULL: "layer <index>" */
    const char *path; /* JSON pointer of the layer for errors, or NULL */
    int n_params;
    const hs_layer_param *params;
} hs_layer;

/* Traces one layer into body: x is the carry, params[j] the layer's j-th
 * parameter (in layers[0]'s order). Returns the layer's output, which must
 * have x's shape, or NULL after recording an error on body. */
typedef hs_instruction *(*hs_layer_fn)(hs_builder *body, hs_instruction *x,
                                       hs_instruction *const *params,
                                       int n_params, void *user);

typedef struct hs_scan_layers_options {
    const char *scope;      /* loop machinery scope; NULL: "layers/scan" */
    const char *body_scope; /* as hs_scan_options.body_scope */
    /* One [L, ...] instruction per parameter of layers[0], already stacked
     * (host-side stacking: the caller feeds stacked arrays). NULL: the
     * per-layer values are stacked in the graph (reshape + concatenate). */
    hs_instruction *const *stacked;
} hs_scan_layers_options;

/* HS_OK when every layer has the parameter names and shapes of layers[0]
 * (same count, same order). Otherwise HS_ERR_INVALID with err naming the
 * first mismatching layer and parameter, e.g.
 *   scan_layers: layers.3 has parameter 'attn.q_proj.weight' of shape
 *   f32[256,256] but layers.0 has f32[128,256]
 * and err->path set to that layer's path. */
hs_status hs_scan_layers_check(const hs_layer *layers, int n_layers,
                               hs_error *err);

/* scan_layers(layers, x): checks the layers (as above), stacks each
 * parameter along a new leading axis (or takes opts->stacked) and scans fn
 * over them with x as the carry. Returns the final carry; x itself when
 * n_layers is 0; NULL on error (recorded on b). */
hs_instruction *hs_scan_layers(hs_builder *b, const hs_layer *layers,
                               int n_layers, hs_layer_fn fn, void *user,
                               hs_instruction *x,
                               const hs_scan_layers_options *opts);


/* ------------------------------------------------------------------------ */
/* The reverse scan (autodiff of scan loops)                                */
/* ------------------------------------------------------------------------ */

/* What the forward loop keeps for the backward pass (docs/TRAINING.md,
 * "Scan: the reverse scan"). */
typedef enum hs_scan_policy {
    HS_SCAN_SAVE = 0, /* stack the residuals on the device */
    HS_SCAN_REMAT,    /* stack only the carries; recompute the body */
    HS_SCAN_OFFLOAD,  /* stack the residuals in host memory */
    HS_SCAN_REMAT_OFFLOAD /* stack only the carries, in host memory;
                             recompute the body */
} hs_scan_policy;

#define HS_SCAN_REPORT_MAX 256

/* One stacked residual of a differentiated scan. */
typedef struct hs_scan_residual_info {
    char name[160];   /* op_name of the saved value ("layers.(*)/attn/q_proj"),
                         or "carry" under remat */
    char opcode[32];  /* its opcode ("dot", "multiply", ...) */
    char shape[96];   /* per-step shape */
    int64_t bytes;    /* per step */
    int64_t steps;    /* stack length N */
    bool host;        /* stacked in host memory */
    /* Not stacked: recomputed in the backward step from saved residuals
     * (hs_scan_vjp_options.placement asked for HS_SCAN_REMAT and every
     * carry-dependent operand is saved or recomputed itself). */
    bool remat;
} hs_scan_residual_info;

/* Filled (appended to) by hs_scan_while_vjp: what each loop saved. */
typedef struct hs_scan_vjp_report {
    int n_loops;
    int n_residuals; /* entries in residuals (at most HS_SCAN_REPORT_MAX) */
    hs_scan_residual_info residuals[HS_SCAN_REPORT_MAX];
    int64_t device_bytes; /* stacked residual bytes on the device */
    int64_t host_bytes;   /* stacked residual bytes on the host */
} hs_scan_vjp_report;

typedef struct hs_scan_vjp_options {
    hs_scan_policy policy;
    /* With HS_SCAN_SAVE: residuals whose op_name matches one of these go to
     * host memory instead ("attn/q_proj" matches "layers.(*)/attn/q_proj"
     * and "layers.(*)/attn/q_proj/..."; "mlp" every MLP residual). */
    const char *const *offload;
    int n_offload;
    /* Offloaded residuals are fetched one step ahead (the next step's
     * transfer overlaps this step's compute); true fetches them where they
     * are used. */
    bool no_prefetch;
    hs_scan_vjp_report *report; /* optional */
    /* With HS_SCAN_SAVE or HS_SCAN_OFFLOAD: where each residual goes, by
     * its index in the report (residuals of every loop differentiated with
     * these options, in order; the report lists the same residuals in the
     * same order under any placement). HS_SCAN_SAVE: the device;
     * HS_SCAN_OFFLOAD: the host; HS_SCAN_REMAT: not stacked, recomputed in
     * the backward step from its operands when every carry-dependent
     * operand is saved (or itself recomputed), else saved. Residuals past
     * n_placement follow policy and offload. The numerics do not change.
     * *cursor (needed with placement) is the index of the next loop's
     * first residual: the caller sets it to 0 before differentiating a
     * module and each loop advances it. */
    const hs_scan_policy *placement;
    int n_placement;
    int *cursor;
} hs_scan_vjp_options;

/* autodiff's while-loop hook (hs_autodiff_options.while_vjp, user = const
 * hs_scan_vjp_options *, NULL = save) for loops with scan's lowering: a
 * counted while (known_trip_count) over (s32 counter, state...) whose body
 * returns a tuple. Rebuilds the forward loop so that it also stacks what
 * the backward pass reads (per the policy), moves the loop's users onto
 * it, and emits the reverse scan: each step the VJP of the body, reading
 * the residuals of its step. Stacked inputs only sliced per step (the
 * weights of scan_layers) get stacked gradients, one slice per step. */
hs_status hs_scan_while_vjp(hs_builder *b, hs_autodiff_while *w, void *user,
                            hs_error *err);

#ifdef __cplusplus
}
#endif
#endif
