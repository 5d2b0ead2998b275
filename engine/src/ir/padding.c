/* padding.c - a pad's padding={lo_hi_interior x ...} attribute, read in one
 * place for its shape rule and its kernel. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_ir.h"

static bool read_int(const char **p, int64_t *v)
{
    char *end;
    errno = 0;
    long long n = strtoll(*p, &end, 10);
    if (end == *p || errno == ERANGE)
        return false;
    *v = n;
    *p = end;
    return true;
}

hs_status hs_instruction_padding(const hs_instruction *i, int rank,
                                 hs_padding *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    out->rank = rank;
    const char *text = hs_instruction_attr(i, "padding");
    if (!text && rank == 0)
        return HS_OK;
    if (!text)
        return hs_error_set(err, HS_ERR_SHAPE,
                            "pad: missing padding={...} attribute");
    const char *p = text;
    bool ok = true;
    for (int d = 0; ok && d < rank; d++) {
        if (d > 0)
            ok = *p++ == 'x';
        ok = ok && read_int(&p, &out->lo[d]) && *p++ == '_' &&
             read_int(&p, &out->hi[d]);
        if (ok && *p == '_') {
            p++;
            ok = read_int(&p, &out->interior[d]) && out->interior[d] >= 0;
        }
    }
    if (!ok || *p)
        return hs_error_set(err, HS_ERR_SHAPE,
                            "pad: padding=%s is not %d entries of "
                            "low_high[_interior] with interior >= 0",
                            text, rank);
    return HS_OK;
}
