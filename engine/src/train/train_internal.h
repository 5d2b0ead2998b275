/* train_internal.h - shared between the files of the train module. */
#ifndef HLOSCOPE_TRAIN_INTERNAL_H
#define HLOSCOPE_TRAIN_INTERNAL_H

#include "hloscope/hs_train.h"

/* step.c: the gradient module (x, target, params...) -> (loss, grads...),
 * built on first use and kept in ts. NULL with *err on failure. */
hs_module *hs__train_grad_module(hs_train_step *ts, hs_error *err);

#endif
