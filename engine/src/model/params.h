/*
 * params.h - parameter naming and deterministic initialisation.
 *
 * Tracing a block asks a parameter source for each of its weights by
 * state_dict name and shape (see trace_blocks.h). The entry source here
 * turns every request into a new entry parameter and records it, in
 * state_dict order, for the hs_model. A scan body can supply its own source
 * that hands out slices of stacked weights instead.
 */
#ifndef HLOSCOPE_MODEL_PARAMS_H
#define HLOSCOPE_MODEL_PARAMS_H

#include "hloscope/hs_builder.h"
#include "hloscope/hs_model.h"

/* A growing list of parameters (heap; moved into the model arena at the
 * end). */
typedef struct hs_param_list {
    int n, cap;
    hs_model_param *v;
} hs_param_list;

void hs__param_list_free(hs_param_list *l);
/* Appends a parameter held by entry parameter `number` itself (slice and
 * stack -1); name is copied into arena a. false on host OOM. */
bool hs__param_list_add(hs_param_list *l, hs_arena *a, const char *name,
                        const hs_shape *shape, int64_t number,
                        hs_init_kind kind, float bound, const float *values);

/* The loader's entry parameters while tracing: per-layer parameters in
 * state_dict order (list) and the stacked parameters of scanned repeats
 * (stacks, heap). next is the next entry parameter number. */
typedef struct hs_entry_params {
    hs_param_list list;
    int n_stacks, cap_stacks;
    hs_model_stack *stacks;
    hs_arena *arena; /* the model's: names */
    int64_t next;
} hs_entry_params;

void hs__entry_params_free(hs_entry_params *e);
/* Appends a stack record (name and local copied into e->arena); returns
 * its index, or -1 on host OOM. */
int hs__entry_params_add_stack(hs_entry_params *e, const char *name,
                               const char *local, int64_t number,
                               int64_t first_layer, const hs_shape *shape);

/* PyTorch's default bound for a Linear-style weight of shape
 * [out, in, ...]: 1/sqrt(fan_in) with fan_in = in * prod(rest) (rank >= 2),
 * dims[0] for rank 1, and 1 for a scalar. */
float hs__param_fan_in_bound(const hs_shape *s);

/* Allocates each stack's tensor (zeroed). false on host OOM. */
bool hs__stacks_materialize(hs_model_stack *stacks, int n_stacks);
/* Draws the values of every parameter (and nothing else): into a tensor of
 * its own, or for a parameter of a stack (stack >= 0) into its slice of
 * the stack's tensor, which must exist, with value a view of that slice.
 * false on host OOM. */
bool hs__params_materialize(uint64_t seed, hs_model_param *ps, int n,
                            const hs_model_stack *stacks);
/* Fills tensor t of a bf16 or f16 model with parameter p's f32 values
 * (the input's when p is NULL) rounded to t's type. false on host OOM. */
bool hs__fill_narrow(hs_tensor *t, uint64_t seed, const hs_model_param *p);
/* Frees what hs__params_materialize made (views without their data). */
void hs__params_release(hs_model_param *ps, int n);

#endif
