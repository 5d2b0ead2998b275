/*
 * hs_hlo_text.h - HLO text: a printer in XLA's long form and a parser for
 * XLA's grammar (long and short forms, real dumps from XLA, JAX, torch_xla).
 * print(parse(text)) is a fixed point.
 */
#ifndef HLOSCOPE_HS_HLO_TEXT_H
#define HLOSCOPE_HS_HLO_TEXT_H

#include <stdio.h>

#include "hloscope/hs_ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parses one module. A file written for `--split-input-file` (modules
 * separated by a line "// -----") is parsed by hs_hlo_parse_many. Errors
 * carry line and column (and the instruction name when known). */
hs_module *hs_hlo_parse(const char *text, size_t len, hs_error *err);
/* Parses every module of a split file; returns the count, or -1 on error
 * (modules parsed so far are freed). *mods is malloc'ed. */
int hs_hlo_parse_many(const char *text, size_t len, hs_module ***mods,
                      hs_error *err);

/* Prints the module in XLA's long form. Returns a malloc'ed string. */
char *hs_hlo_print(const hs_module *m);
int hs_hlo_fprint(const hs_module *m, FILE *f);
/* One instruction, e.g.
 * "%add.3 = f32[1,1024]{1,0} add(f32[1,1024]{1,0} %x, ...)".
 * Returns the length the full text needs (snprintf contract). */
int hs_hlo_print_instruction(const hs_instruction *i, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
