/* program_internal.h - what the files of the program room share. */
#ifndef HLOSCOPE_PROGRAM_INTERNAL_H
#define HLOSCOPE_PROGRAM_INTERNAL_H

#include "hloscope/hs_program.h"

/* A program with its metrics and options, nothing traced yet. */
hs_program *hs__program_new(const hs_program_options *opts, hs_error *err);

#endif
