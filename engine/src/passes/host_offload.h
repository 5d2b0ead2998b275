/*
 * host_offload.h - what the `schedule` pass (buffers/schedule.c) asks of
 * host offloading on the order it keeps. Defined in host_offload.c.
 */
#ifndef HLOSCOPE_PASSES_HOST_OFFLOAD_H
#define HLOSCOPE_PASSES_HOST_OFFLOAD_H

#include <stdbool.h>

#include "hloscope/hs_ir.h"

/* Copy-starts right after their operand, copy-dones right before their
 * first use; true when anything moved. A copy whose frontend attributes
 * hold HS_PLACED_ATTRIBUTE stays where it is: its place was chosen on the
 * device's clock (the offload what-if, engine/src/whatif/prefetch.c), and
 * a compile of its HLO text keeps it. */
#define HS_PLACED_ATTRIBUTE "_hloscope_copy_placed=\"true\""
bool hs__place_async_copies(hs_computation *c);

#endif
