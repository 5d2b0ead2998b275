/* dtype.c - element types: names and sizes, from HS_DTYPE_LIST. */
#include <string.h>

#include "hloscope/hs_ir.h"

static const struct {
    const char *name;
    int bits;
} dtype_table[] = {
#define HS_X(e, n, b) {n, b},
    HS_DTYPE_LIST(HS_X)
#undef HS_X
};

#define N_DTYPES ((int)(sizeof dtype_table / sizeof dtype_table[0]))

const char *hs_dtype_name(hs_dtype t)
{
    if ((int)t >= 0 && (int)t < N_DTYPES)
        return dtype_table[t].name;
    return t == HS_TUPLE ? "tuple" : "?";
}

int hs_dtype_bits(hs_dtype t)
{
    if ((int)t >= 0 && (int)t < N_DTYPES)
        return dtype_table[t].bits;
    return 0;
}

bool hs_dtype_parse(const char *name, size_t len, hs_dtype *out)
{
    for (int i = 0; i < N_DTYPES; i++) {
        if (strlen(dtype_table[i].name) == len &&
            memcmp(dtype_table[i].name, name, len) == 0) {
            *out = (hs_dtype)i;
            return true;
        }
    }
    return false;
}

bool hs_dtype_is_float(hs_dtype t)
{
    return t >= HS_F4E2M1FN && t <= HS_F64; /* the list keeps them together */
}
