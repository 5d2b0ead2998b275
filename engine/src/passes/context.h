/*
 * context.h - the pass context's deadline polled inside long loops, for the
 * passes and for the buffers room above them (buffer liveness, the
 * scheduler). Defined in context.c.
 */
#ifndef HLOSCOPE_PASSES_CONTEXT_H
#define HLOSCOPE_PASSES_CONTEXT_H

#include <stdint.h>

#include "hloscope/hs_passes.h"

/* Checks the deadline every 1024 calls, so that long loops stay cheap. */
hs_status hs__pass_poll(const hs_pass_context *ctx, int64_t *tick,
                        hs_error *err);

#endif
