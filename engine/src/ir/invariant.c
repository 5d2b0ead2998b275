/* invariant.c - where a failed HS_ASSERT ends (ir/invariant.h). */
#include <stdio.h>
#include <stdlib.h>

#include "ir/invariant.h"

void hs__assert_fail(const char *file, int line, const char *cond)
{
    fprintf(stderr,
            "hloscope: internal error: %s:%d: assertion '%s' failed\n", file,
            line, cond);
    fflush(stderr);
    abort();
}
