/* clock.c - the process clock every room reads (pass timings, compile and
 * run deadlines, step timings), so that they share one time base. */
#include <time.h>

#include "hloscope/hs_ir.h"

int64_t hs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
