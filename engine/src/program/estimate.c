/* estimate.c - what one execution of a program costs, by the device's
 * own cost model (hs_device_estimate), computed once per program. */
#include "program/program_internal.h"

hs_status hs_program_estimate(hs_program *p, hs_run_stats *out, hs_error *err)
{
    if (!p->optimized)
        return hs_error_set(err, HS_ERR_INVALID, "estimate: the program is not compiled");
    if (!p->has_estimate) {
        hs_status st = hs_device_estimate(p->optimized, p->device, &p->estimate, err);
        if (st != HS_OK)
            return st;
        p->has_estimate = true;
    }
    *out = p->estimate;
    return HS_OK;
}
