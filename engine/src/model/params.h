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

void hs_param_list_free(hs_param_list *l);
/* Appends a parameter; name is copied into arena a. false on host OOM. */
bool hs_param_list_add(hs_param_list *l, hs_arena *a, const char *name,
                       const hs_shape *shape, int64_t number,
                       hs_init_kind kind, float bound);

/* PyTorch's default bound for a Linear-style weight of shape
 * [out, in, ...]: 1/sqrt(fan_in) with fan_in = in * prod(rest) (rank >= 2),
 * dims[0] for rank 1, and 1 for a scalar. */
float hs_param_fan_in_bound(const hs_shape *s);

/* Draws the values of every parameter (and nothing else) into tensors.
 * false on host OOM. */
bool hs_params_materialize(uint64_t seed, hs_model_param *ps, int n);

#endif
