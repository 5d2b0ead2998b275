/* fuzz_utf8.h - is a byte string well-formed UTF-8? The harnesses check
 * that error messages built from valid input stay valid (a message that
 * cuts a character in half cannot be sent as JSON). */
#ifndef HLOSCOPE_FUZZ_UTF8_H
#define HLOSCOPE_FUZZ_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF. */
static inline bool fuzz_utf8_valid(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t len;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if (n - i < len)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

#endif
