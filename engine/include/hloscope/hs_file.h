/*
 * hs_file.h - reading a whole file, for model descriptions and HLO text.
 */
#ifndef HLOSCOPE_HS_FILE_H
#define HLOSCOPE_HS_FILE_H

#include <stddef.h>

#include "hloscope/hs_ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads path into a malloc'ed, NUL-terminated buffer (*len bytes before the
 * NUL). NULL with HS_ERR_IO ("cannot open PATH: reason", "cannot read
 * PATH") or HS_ERR_NOMEM in *err. */
char *hs_read_file(const char *path, size_t *len, hs_error *err);

#ifdef __cplusplus
}
#endif
#endif
