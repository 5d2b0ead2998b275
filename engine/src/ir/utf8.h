/* utf8.h - well-formed UTF-8 for error messages. Messages quote the input
 * (a token of HLO text, jansson's "near '...'"), are cut to the size of
 * hs_error.message, and end up in JSON, which must not carry half a
 * character. */
#ifndef HLOSCOPE_IR_UTF8_H
#define HLOSCOPE_IR_UTF8_H

#include <stddef.h>

/* Length of the well-formed UTF-8 character at p (at most avail bytes):
 * 1 for ASCII, 2..4 for a multi-byte character, 0 when the bytes are not
 * one (a stray continuation byte, a cut or overlong sequence, a
 * surrogate, beyond U+10FFFF). */
size_t hs__utf8_len(const unsigned char *p, size_t avail);

/* Rewrites the NUL-terminated s (a buffer of size bytes, at most 512 are
 * kept) so that it is well-formed UTF-8: a byte that is not part of a
 * character becomes "\xNN", and a character that no longer fits is
 * dropped whole. */
void hs__utf8_clean(char *s, size_t size);

#endif
