/*
 * hs_train.h - training: losses, optimizers, the one-step module, running
 * steps on the emulated device, and dumping what training produced.
 *
 *     hs_model *m = hs_model_load_file("model.json", NULL, &err); // has "train"
 *     hs_train_step *ts = hs_train_step_build(m, NULL, &err);
 *     // ts->module: ENTRY (x, target, params..., optimizer state...)
 *     //             -> (loss, updated params..., updated state...)
 *     hs_train_run_options ro = {.want_grads = true};
 *     hs_train_result r;
 *     if (hs_train_run(ts, NULL, &ro, &r, &err) == HS_OK) {
 *         // r.losses[0..r.steps), r.grads[i] (first step), r.updated[i]
 *         hs_train_dump(ts, &r, "out", &err);  // target, loss, grads, updated
 *         hs_train_result_free(&r);
 *     }
 *     hs_train_step_free(ts);
 *     hs_model_free(m);
 *
 * Semantics follow PyTorch (docs/TRAINING.md): mse is F.mse_loss (mean over
 * every element), cross_entropy is F.cross_entropy over the last axis with
 * class-index targets (mean over the rest), sgd is torch.optim.SGD(lr) and
 * adam is torch.optim.Adam(lr, betas, eps) with bias correction. The same
 * input and target are used at every step.
 */
#ifndef HLOSCOPE_HS_TRAIN_H
#define HLOSCOPE_HS_TRAIN_H

#include "hloscope/hs_autodiff.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_model.h"
#include "hloscope/hs_scan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Losses and optimizers (builder ops)                                      */
/* ------------------------------------------------------------------------ */

/* mean((out - target)^2) over every element: an f32 scalar. target has
 * out's shape. */
hs_instruction *hs_train_mse(hs_builder *b, hs_instruction *out,
                             hs_instruction *target);
/* Cross entropy of logits [..., C] (the last axis holds the classes)
 * against s32 class indices target [...], averaged over [...]:
 *     mean(logsumexp(logits, -1) - logits[..., target])
 * computed stably (the row maximum is subtracted first). */
hs_instruction *hs_train_cross_entropy(hs_builder *b, hs_instruction *logits,
                                       hs_instruction *target);
/* The loss the config names. */
hs_instruction *hs_train_loss(hs_builder *b, hs_loss loss, hs_instruction *out,
                              hs_instruction *target);

/* Optimizer state entries for n parameters: sgd 0; adam 2n + 1 (exp_avg of
 * every parameter, then exp_avg_sq of every parameter, then the s32 scalar
 * step count: steps taken so far, 0 at the start). */
int hs_train_state_count(const hs_train_config *c, int n_params);
/* The shape of state entry k (params: the parameter shapes). */
hs_shape hs_train_state_shape(const hs_train_config *c, int n_params,
                              const hs_shape *params, int k);
/* Emits one optimizer update: new_params[i] from params[i] and grads[i];
 * new_state[0..state_count) from state. Records errors on b. */
void hs_train_optimizer_update(hs_builder *b, const hs_train_config *c,
                               int n_params, hs_instruction *const *params,
                               hs_instruction *const *grads,
                               hs_instruction *const *state,
                               hs_instruction **new_params,
                               hs_instruction **new_state);

/* ------------------------------------------------------------------------ */
/* The step module                                                          */
/* ------------------------------------------------------------------------ */

/* Output index `output` of the root tuple may reuse the buffer of entry
 * parameter `param` (XLA's input_output_alias). */
typedef struct hs_train_alias {
    int output;
    int param;
} hs_train_alias;

typedef struct hs_train_options {
    /* Passed to hs_autodiff_grad: scope of the gradient instructions and
     * the while-loop hook (scan's reverse scan). */
    hs_autodiff_options autodiff;
    /* "residuals": "auto": plan for this many bytes of device memory
     * instead of the HBM of the model's device (0: the device's). */
    int64_t auto_hbm_bytes;
} hs_train_options;

/* What "residuals": "auto" chose (hs_train_step.auto_choice), from
 * compile-time figures: buffer assignment's device peak and
 * hs_device_estimate's step time on the model's device. */
typedef struct hs_train_auto {
    const char *device;     /* the preset it planned for */
    int64_t hbm_bytes;      /* its capacity */
    bool fits;              /* the chosen placement fits hbm_bytes */
    bool full_remat;        /* nothing per residual was enough: the whole
                               body is recomputed (policy remat) */
    int n_residuals;        /* residuals of the differentiated scans */
    int n_offloaded, n_remat; /* residuals moved to host / recomputed */
    int64_t offloaded_bytes, remat_bytes; /* their stacked bytes */
    int64_t save_peak, peak;  /* compiled device peaks: all saved, chosen */
    int64_t host_peak;        /* compiled host peak of the choice */
    double save_seconds, seconds; /* estimated step: all saved, chosen */
    double transfer_seconds, exposed_seconds; /* host link, chosen */
    int candidates;         /* placements compiled to decide */
    /* One paragraph: the choice and why, e.g. "auto: offloaded 3 of 22
     * residuals (...): save needs 93.27M > 64.00M HBM on teach-64m; ...". */
    char text[2048];
} hs_train_auto;

typedef struct hs_train_step {
    const hs_model *model; /* not owned; must outlive the step */
    hs_train_config config;
    /* One training step:
     *   ENTRY train_step(x, target, params[0..n), state[0..n_state))
     *     -> (loss, params'[0..n), state'[0..n_state))
     * Entry parameter numbers: x 0, target 1, params 2.., state 2+n..
     * Root tuple indices: loss 0, params' 1.., state' 1+n..
     * Each updated value aliases the input it replaces; the module header
     * says so as XLA does:
     *   HloModule m.train_step, input_output_alias={ {1}: (2, {},
     *   may-alias), {2}: (3, {}, may-alias), ... } */
    hs_module *module;
    /* The trained values are the forward pass's entry parameters after x
     * (params[k] is the model module's parameter k + 1): the model's
     * parameters in state_dict order when unrolled; with loop "scan", a
     * scanned repeat's stacked [L, ...] parameters (hs_model_stack). */
    int n_params;
    const char **param_names; /* state_dict or stack names */
    hs_shape *param_shapes;
    int n_state;
    const char **state_names; /* "exp_avg.<param>", "exp_avg_sq.<param>",
                                 "step" */
    hs_shape *state_shapes;
    int n_alias;
    hs_train_alias *alias;
    /* (x, target, params...) -> (loss, grads...): the gradients alone,
     * built on first use by hs_train_grads. */
    hs_module *grad_module;
    hs_train_options options;
    /* Scanned repeats: unless options.autodiff.while_vjp is set, their
     * loops are differentiated by hs_scan_while_vjp with these options
     * (the model's residual policy), and scan_report says what each
     * differentiated loop saved, on the device or the host. */
    hs_scan_vjp_options scan;
    hs_scan_vjp_report *scan_report;
    /* "residuals": "auto": the per-residual placement it chose (save,
     * offload or remat, by report index; scan.placement points here) and
     * why. NULL for the other policies. */
    hs_scan_policy *placement;
    int scan_cursor;
    hs_train_auto *auto_choice;
} hs_train_step;

/* Builds the step module of a model that has a "train" section (else
 * HS_ERR_INVALID, path "/train"). opts may be NULL. Differentiating a
 * while loop (loop: "scan") needs opts->autodiff.while_vjp. The model must
 * outlive the step.
 *
 * With "residuals": "auto" (and scan's reverse scan), the step is planned
 * for the model's device (hs_model.device, else the default preset):
 * built and compiled with every residual saved; if that peak fits the
 * device's HBM, saved it stays. Otherwise, greedily: cheap residuals
 * (element-wise ops of saved values) are recomputed, largest first, then
 * the largest remaining ones move to host memory, the fewest bytes that
 * close the gap first (transfers overlap the next layer's compute), each
 * choice checked by compiling it; as a last resort the whole body is
 * rematerialised. Only compile-time figures are used (buffer assignment,
 * hs_device_estimate), and the numerics are those of save. auto_choice
 * says what was chosen and why. */
hs_train_step *hs_train_step_build(const hs_model *m,
                                   const hs_train_options *opts,
                                   hs_error *err);
void hs_train_step_free(hs_train_step *ts);

/* ------------------------------------------------------------------------ */
/* Running steps                                                            */
/* ------------------------------------------------------------------------ */

/* Called after every step (1-based) with its loss and device statistics. */
typedef void (*hs_train_step_fn)(int64_t step, float loss,
                                 const hs_run_stats *stats, void *user);

typedef struct hs_train_run_options {
    int64_t steps;   /* 0: the model's train.steps */
    bool want_grads; /* also compute the gradients at the initial
                        parameters (those of the first step) */
    hs_train_step_fn on_step;
    void *user;
    /* Runs this module instead of ts->module, e.g. a compiled copy (same
     * entry signature and root tuple). NULL: ts->module. */
    const hs_module *module;
    /* When set, receives the memory timeline of the first step
     * (hs_device_run_ex); the caller frees it. */
    hs_memory_timeline *timeline;
    /* As hs_run_options: an absolute CLOCK_MONOTONIC time in ns (0 = none)
     * and a flag (may be NULL) that stop the run inside a step, with
     * HS_ERR_CANCELLED ("... after K of N steps"); *out is then empty. */
    int64_t deadline_ns;
    atomic_bool *cancel;
} hs_train_run_options;

typedef struct hs_train_result {
    int64_t steps;
    float *losses;      /* [steps]: the loss each step computed (before its
                           update) */
    int n_params;
    hs_tensor **grads;  /* [n_params] first-step gradients, or NULL */
    hs_tensor **updated;/* [n_params] parameters after the last step */
    int n_state;
    hs_tensor **state;  /* [n_state] optimizer state after the last step */
    hs_run_stats last;  /* the last step's statistics */
    hs_run_stats total; /* summed over steps (peaks: the maximum) */
} hs_train_result;

/* Runs steps of ts on spec (NULL: the model's device, else the default)
 * from the model's initial parameters, fresh optimizer state, and the
 * model's input and target at every step. Updated parameters and state of
 * one step are the inputs of the next (the aliased buffers are handed
 * over, not copied). Fills *out (free with hs_train_result_free); on error
 * *out is empty. Needs a model loaded with data (not shapes_only). */
hs_status hs_train_run(hs_train_step *ts, const hs_device_spec *spec,
                       const hs_train_run_options *opts, hs_train_result *out,
                       hs_error *err);
/* The loss and gradients at the model's initial parameters (grads: room
 * for n_params new tensors, freed by the caller with hs_tensor_free).
 * Builds ts->grad_module on first use, so calls on one step (this and
 * hs_train_run with want_grads) must not run concurrently; distinct steps
 * are independent. */
hs_status hs_train_grads(hs_train_step *ts, const hs_device_spec *spec,
                         float *loss, hs_tensor **grads, hs_error *err);
void hs_train_result_free(hs_train_result *r);

/* Writes what training produced under dir (created if needed):
 *   dir/target.npy            the target (f32, or s32 class indices)
 *   dir/loss.npy              f32 [steps], one loss per step
 *   dir/grads/<name>.npy      first-step gradients (when r->grads)
 *   dir/updated/<name>.npy    parameters after the last step
 * <name> is the state_dict name, as in dir/params/<name>.npy: a parameter
 * of a scanned repeat is written as its slice of the stacked value. */
hs_status hs_train_dump(const hs_train_step *ts, const hs_train_result *r,
                        const char *dir, hs_error *err);

#ifdef __cplusplus
}
#endif
#endif
