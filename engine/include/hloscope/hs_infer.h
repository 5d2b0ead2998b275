/*
 * hs_infer.h - shape inference rules, one per opcode, shared by the tracer
 * (hs_builder.h) and the verifier.
 */
#ifndef HLOSCOPE_HS_INFER_H
#define HLOSCOPE_HS_INFER_H

#include "hloscope/hs_ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Infers the shape of instruction i from its opcode, operands (their
 * shapes), attributes and called computations; i->shape is not read.
 * Tuple shapes are allocated in arena a. Returns HS_OK, HS_ERR_SHAPE with a
 * message naming what disagrees, or HS_ERR_UNSUPPORTED when the engine has
 * no rule for the opcode (custom-call, collectives, ...): the verifier then
 * trusts the written shape. */
hs_status hs_infer_shape(const hs_instruction *i, hs_arena *a, hs_shape *out,
                         hs_error *err);
/* Why opcode op has no shape rule (its written shape is trusted), or NULL
 * when it has one. */
const char *hs_infer_written_only(hs_opcode op);

#ifdef __cplusplus
}
#endif
#endif
