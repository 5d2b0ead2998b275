/* gantt.c - a step timeline as the render module's two-lane Gantt chart:
 * host lane trace / overhead (the model) / lookup / compile / wait, device
 * lane idle / execute. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_render.h"
#include "hloscope/hs_steps.h"

enum { LABEL = 48, PER_STEP = 8 };

int64_t hs_steps_gantt_segments(const hs_steps_result *r,
                                hs_gantt_segment **segments, char **labels)
{
    *segments = malloc(sizeof **segments * (size_t)(r->n * PER_STEP + 1));
    *labels = malloc((size_t)(r->n * PER_STEP + 1) * LABEL);
    if (!*segments || !*labels) {
        free(*segments);
        free(*labels);
        *segments = NULL;
        *labels = NULL;
        return -1;
    }
    int64_t n = 0;
#define SEG(lane_, kind_, a, b, ...)                                        \
    do {                                                                    \
        if ((b) > (a)) {                                                    \
            char *l = *labels + n * LABEL;                                  \
            snprintf(l, LABEL, __VA_ARGS__);                                \
            (*segments)[n++] = (hs_gantt_segment){lane_, l, kind_, a, b};   \
        }                                                                   \
    } while (0)
    for (int64_t k = 0; k < r->n; k++) {
        const hs_step_record *p = &r->steps[k];
        const hs_step_slot *s = &p->slot;
        long long i = (long long)p->step;
        double t = s->host_start;
        SEG(HS_GANTT_HOST, "trace", t, t + p->trace_seconds, "step %lld trace", i);
        t += p->trace_seconds;
        SEG(HS_GANTT_HOST, "overhead", t, t + p->overhead_seconds,
            "step %lld frontend overhead (model)", i);
        t += p->overhead_seconds;
        SEG(HS_GANTT_HOST, "lookup", t, t + p->lookup_seconds,
            "step %lld cache lookup (hit)", i);
        t += p->lookup_seconds;
        SEG(HS_GANTT_HOST, "compile", t, t + p->compile_seconds,
            "step %lld compile (cache miss)", i);
        SEG(HS_GANTT_HOST, "wait", s->host_end, s->host_end + s->host_wait,
            "step %lld host waits (queue full)", i);
        SEG(HS_GANTT_DEVICE, "idle", s->device_start - s->device_idle,
            s->device_start, "step %lld device idle", i);
        SEG(HS_GANTT_DEVICE, "execute", s->device_start, s->device_end,
            "step %lld execute%s", i, p->device_measured ? "" : " (step 1 reused)");
    }
#undef SEG
    return n;
}

hs_status hs_steps_dot(const hs_steps_result *r, char **out, size_t *out_len,
                       hs_error *err)
{
    hs_gantt_segment *seg;
    char *labels;
    int64_t n = hs_steps_gantt_segments(r, &seg, &labels);
    if (n < 0)
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    char title[128];
    /* Short: the chart's title box holds about 55 characters. */
    snprintf(title, sizeof title, "%.24s %s: goodput %.1f%%, %s", r->model,
             r->train ? "train" : "forward", r->summary.goodput * 100,
             r->summary.host_bound ? "host-bound" : "device-bound");
    hs_gantt_options go = {.title = title};
    hs_status st = hs_render_gantt_dot(seg, (size_t)n, &go, out, out_len, err);
    free(seg);
    free(labels);
    return st;
}

hs_status hs_steps_svg(const hs_steps_result *r, int64_t timeout_ms, char **out,
                       size_t *out_len, hs_error *err)
{
    char *dot;
    *out = NULL;
    hs_status st = hs_steps_dot(r, &dot, NULL, err);
    if (st != HS_OK)
        return st;
    st = hs_render_layout(dot, HS_RENDER_ENGINE_PINNED, "svg", timeout_ms, out,
                          out_len, err);
    free(dot);
    return st;
}
