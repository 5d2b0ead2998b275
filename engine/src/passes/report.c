/* report.c - the compilation report as a table, one row per pass. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_passes.h"

const hs_pass_stats *hs_compile_report_find(const hs_compile_report *r,
                                            const char *name)
{
    for (int k = 0; k < r->n_passes; k++)
        if (strcmp(r->passes[k].name, name) == 0)
            return &r->passes[k];
    return NULL;
}

typedef struct out {
    char *buf;
    size_t len, cap;
    bool oom;
} out;

static void emit(out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void emit(out *o, const char *fmt, ...)
{
    if (o->oom)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (o->len + (size_t)n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 1024;
        while (cap < o->len + (size_t)n + 1)
            cap *= 2;
        char *p = realloc(o->buf, cap);
        if (!p) {
            o->oom = true;
            return;
        }
        o->buf = p;
        o->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    o->len += (size_t)n;
}

char *hs_compile_report_format(const hs_compile_report *r)
{
    out o = {0};
    emit(&o, "Compilation report: pipeline %s\n", r->pipeline);
    emit(&o, "%-24s %5s %12s %14s %14s %8s\n", "pass", "runs", "time(ms)",
         "instrs before", "instrs after", "changed");
    for (int k = 0; k < r->n_passes; k++) {
        const hs_pass_stats *p = &r->passes[k];
        emit(&o, "%-24s %5d %12.3f %14lld %14lld %8s\n", p->name, p->runs,
             (double)p->total_ns / 1e6, (long long)p->instructions_before,
             (long long)p->instructions_after,
             p->changed_runs ? "yes" : "no");
    }
    emit(&o, "%-24s %5s %12.3f %14lld %14lld\n", "total", "",
         (double)r->total_ns / 1e6, (long long)r->instructions_before,
         (long long)r->instructions_after);
    emit(&o, "verification: %.3f ms\n", (double)r->verify_ns / 1e6);
    if (o.oom) {
        free(o.buf);
        return NULL;
    }
    return o.buf;
}
