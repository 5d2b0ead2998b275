/* report.c - the compilation report as a table, one row per pass. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_passes.h"
#include "ir/strbuf.h"

const hs_pass_stats *hs_compile_report_find(const hs_compile_report *r,
                                            const char *name)
{
    for (int k = 0; k < r->n_passes; k++)
        if (strcmp(r->passes[k].name, name) == 0)
            return &r->passes[k];
    return NULL;
}


char *hs_compile_report_format(const hs_compile_report *r)
{
    hs_buf o = {0};
    hs__buf_printf(&o, "Compilation report: pipeline %s\n", r->pipeline);
    hs__buf_printf(&o, "%-24s %5s %12s %14s %14s %8s\n", "pass", "runs", "time(ms)",
         "instrs before", "instrs after", "changed");
    for (int k = 0; k < r->n_passes; k++) {
        const hs_pass_stats *p = &r->passes[k];
        hs__buf_printf(&o, "%-24s %5d %12.3f %14lld %14lld %8s\n", p->name, p->runs,
             (double)p->total_ns / 1e6, (long long)p->instructions_before,
             (long long)p->instructions_after,
             p->changed_runs ? "yes" : "no");
    }
    hs__buf_printf(&o, "%-24s %5s %12.3f %14lld %14lld\n", "total", "",
         (double)r->total_ns / 1e6, (long long)r->instructions_before,
         (long long)r->instructions_after);
    hs__buf_printf(&o, "verification: %.3f ms\n", (double)r->verify_ns / 1e6);
    if (o.oom) {
        free(o.data);
        return NULL;
    }
    return o.data;
}
