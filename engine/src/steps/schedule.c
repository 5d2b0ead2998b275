/* schedule.c - the two-lane step timeline from per-step host and device
 * durations and the queue depth, and goodput/MFU over the steady steps.
 * Pure functions: no clock, no device, no allocation. */
#include <math.h>
#include <string.h>

#include "hloscope/hs_steps.h"

static bool bad(double x)
{
    return !isfinite(x) || x < 0;
}

hs_status hs_steps_schedule(const hs_step_timing *t, int64_t n, int queue_depth,
                            hs_step_slot *out, hs_error *err)
{
    hs_error_clear(err);
    if (n < 0 || queue_depth < 0 || (n > 0 && (!t || !out)))
        return hs_error_set(err, HS_ERR_INVALID,
                            "steps: %lld steps with queue depth %d",
                            (long long)n, queue_depth);
    for (int64_t k = 0; k < n; k++)
        if (bad(t[k].host_seconds) || bad(t[k].device_seconds))
            return hs_error_set(err, HS_ERR_INVALID,
                                "steps: step %lld has a negative or non-finite "
                                "duration (host %g s, device %g s)",
                                (long long)k + 1, t[k].host_seconds,
                                t[k].device_seconds);
    double host = 0, dev = 0; /* next host start; last device end */
    for (int64_t k = 0; k < n; k++) {
        hs_step_slot *s = &out[k];
        memset(s, 0, sizeof *s);
        s->host_start = host;
        s->host_end = host + t[k].host_seconds;
        s->enqueue = s->host_end;
        if (queue_depth > 0 && k - queue_depth >= 0 &&
            out[k - queue_depth].device_end > s->enqueue)
            s->enqueue = out[k - queue_depth].device_end;
        s->device_start = fmax(s->enqueue, dev);
        s->device_end = s->device_start + t[k].device_seconds;
        s->device_idle = s->device_start - dev;
        s->wall_seconds = s->device_end - dev;
        dev = s->device_end;
        if (queue_depth == 0) {
            /* synchronous: the host waits for this step to finish */
            s->host_wait = s->device_end - s->host_end;
            host = s->device_end;
        } else {
            s->host_wait = s->enqueue - s->host_end;
            host = s->enqueue;
        }
    }
    return HS_OK;
}

void hs_steps_summarize(const hs_step_timing *t, const hs_step_slot *s,
                        int64_t n, double flops_per_step, double peak_flops,
                        hs_steps_summary *out)
{
    memset(out, 0, sizeof *out);
    out->steps = n;
    if (n <= 0)
        return;
    int64_t first = n > 1 ? 1 : 0; /* step 1 (index 0) compiles: excluded */
    double from = first ? s[0].device_end : 0;
    out->makespan_seconds = s[n - 1].device_end;
    out->steady_steps = n - first;
    out->steady_wall_seconds = s[n - 1].device_end - from;
    for (int64_t k = first; k < n; k++) {
        out->steady_device_seconds += t[k].device_seconds;
        out->steady_idle_seconds += s[k].device_idle;
        out->steady_host_seconds += t[k].host_seconds;
    }
    out->step_seconds = out->steady_wall_seconds / (double)out->steady_steps;
    if (out->steady_wall_seconds > 0) {
        out->goodput = out->steady_device_seconds / out->steady_wall_seconds;
        if (peak_flops > 0)
            out->mfu = flops_per_step * (double)out->steady_steps /
                       (out->steady_wall_seconds * peak_flops);
    }
    /* The verdict looks at the median step, so that one slow trace (a
     * page fault, another process) does not decide it. */
    int64_t m = out->steady_steps, idle_steps = 0;
    for (int64_t k = first; k < n; k++)
        if (s[k].device_idle > 0.01 * s[k].wall_seconds)
            idle_steps++;
    out->host_bound = 2 * idle_steps > m;
}
