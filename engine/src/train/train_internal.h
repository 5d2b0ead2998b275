/* train_internal.h - shared between the files of the train module. */
#ifndef HLOSCOPE_TRAIN_INTERNAL_H
#define HLOSCOPE_TRAIN_INTERNAL_H

#include "hloscope/hs_train.h"

/* step.c: the gradient module (x, target, params...) -> (loss, grads...),
 * built on first use and kept in ts. NULL with *err on failure. */
hs_module *hs__train_grad_module(hs_train_step *ts, hs_error *err);

/* step.c: builds the step module (with_update) or the gradient module
 * with ts's current scan options (the report and cursor are reset). */
hs_module *hs__train_build_module(hs_train_step *ts, bool with_update,
                                  hs_error *err);

/* auto.c: "residuals": "auto": chooses ts->placement, sets ts->module to
 * the step built with it, fills ts->auto_choice. */
hs_status hs__train_auto(hs_train_step *ts, hs_error *err);

#endif
