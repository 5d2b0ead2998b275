/*
 * positions.h - where each instruction sits in its computation, by id, so
 * that a const module can be walked by position (ir/clone.c, the module's
 * copy, and ir/fingerprint.c, its structural hash).
 */
#ifndef HLOSCOPE_IR_POSITIONS_H
#define HLOSCOPE_IR_POSITIONS_H

#include <stdint.h>

#include "hloscope/hs_ir.h"

/* An array indexed by instruction id (0 .. m->next_id-1), malloc'ed; NULL
 * on host OOM or when some id is out of range. */
int32_t *hs__positions_by_id(const hs_module *m);

#endif
