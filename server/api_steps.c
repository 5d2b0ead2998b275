/* api_steps.c - the step timeline of a run result: how host tracing and
 * compiling and device execution line up over the steps, and the goodput
 * that follows (PyTorch/XLA's tracing-bound steps).
 *
 * As in torch_xla's lazy tensor mode, every step traces its graph on the
 * host; the first step also compiles it (unless the compile cache already
 * had it); the device executes a step once its graph is ready and the
 * previous step is done, while the host already traces the next one. The
 * host times are the ones measured for this result (trace, and for a
 * training run the step build by autodiff; compile), the device times the
 * emulator's simulated seconds per step. */
#include <stdio.h>
#include <string.h>

#include "api.h"

#define STEPS_LISTED 200 /* segments listed per lane; totals cover all */

static double num(json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

static json_t *segment(int64_t step, const char *kind, double start, double end)
{
    return json_pack("{s:I, s:s, s:f, s:f}", "step", (json_int_t)step, "kind", kind,
                     "start", start, "end", end);
}

json_t *api_steps_json(json_t *summary, hs_error *e)
{
    json_t *run = json_object_get(summary, "run");
    if (!run) {
        hs_error_set(e, HS_ERR_INVALID,
                     "steps need a run result (POST /v1/run); this one was %s",
                     json_string_value(json_object_get(summary, "endpoint")));
        return NULL;
    }
    json_t *train = json_object_get(summary, "train");
    json_t *step_sim = json_object_get(train, "step_sim_seconds");
    bool training = json_is_array(step_sim) && json_array_size(step_sim) > 0;
    int64_t n = training ? (int64_t)json_array_size(step_sim) : 1;
    bool fwd_cached = strcmp(json_string_value(json_object_get(summary, "compile_cache"))
                                 ? json_string_value(json_object_get(summary, "compile_cache"))
                                 : "",
                             "hit") == 0;
    double trace = num(summary, "trace_seconds"), compile = fwd_cached ? 0 : num(summary, "compile_seconds");
    if (training) {
        bool step_cached = strcmp(json_string_value(json_object_get(train, "compile_cache"))
                                      ? json_string_value(json_object_get(train, "compile_cache"))
                                      : "",
                                  "hit") == 0;
        trace += num(train, "build_seconds");
        compile = step_cached ? 0 : num(train, "compile_seconds");
    }
    json_t *host = json_array(), *device = json_array();
    double host_t = 0, dev_t = 0, busy = 0, idle = 0;
    for (int64_t k = 0; k < n; k++) {
        double d = training ? json_number_value(json_array_get(step_sim, (size_t)k))
                            : num(run, "sim_seconds");
        bool listed = k < STEPS_LISTED;
        if (listed)
            json_array_append_new(host, segment(k + 1, "trace", host_t, host_t + trace));
        host_t += trace;
        if (k == 0 && compile > 0) {
            json_array_append_new(host, segment(1, "compile", host_t, host_t + compile));
            host_t += compile;
        }
        double start = host_t > dev_t ? host_t : dev_t;
        if (listed && start > dev_t)
            json_array_append_new(device, segment(k + 1, "idle", dev_t, start));
        if (listed)
            json_array_append_new(device, segment(k + 1, "execute", start, start + d));
        idle += start - dev_t;
        busy += d;
        dev_t = start + d;
    }
    double per_step_device = busy / (double)n;
    return json_pack("{s:s, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:b, s:b, s:o, s:o}",
                     "mode", training ? "train" : "forward", "steps", (json_int_t)n,
                     "trace_seconds_per_step", trace, "compile_seconds", compile,
                     "device_seconds_per_step", per_step_device, "makespan_seconds", dev_t,
                     "device_busy_seconds", busy, "goodput", dev_t > 0 ? busy / dev_t : 0,
                     "tracing_bound", trace > per_step_device, "truncated",
                     n > STEPS_LISTED, "host", host, "device", device);
}
