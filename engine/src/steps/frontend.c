/* frontend.c - the frontend overhead model: host microseconds per traced
 * op that a real frontend adds on top of hloscope's own tracing. A model
 * with illustrative figures (docs/STEPS.md), not a measurement of one. */
#include <string.h>

#include "hloscope/hs_steps.h"

static const hs_frontend_preset presets[] = {
    {"hloscope", 0.0,
     "hloscope's own tracer in C, measured: no overhead is added"},
    {"lazy-tensor", 5.0,
     "illustrative: a lazy-tensor frontend keeps PyTorch's Python and "
     "dispatcher cost per op and replaces the kernel launch by an IR node; "
     "a tiny eager add costs ~4 us per op in PyTorch 1.13 on the machine "
     "these docs were written on (kernel included)"},
    {"eager-python", 20.0,
     "illustrative: per-op host cost of Python-level module code; an "
     "nn.Linear call on an [8,64] input costs ~18 us in PyTorch 1.13 eager "
     "on the machine these docs were written on (tiny kernel included)"},
};

const hs_frontend_preset *hs_frontend_presets(int *count)
{
    if (count)
        *count = (int)(sizeof presets / sizeof presets[0]);
    return presets;
}

const hs_frontend_preset *hs_frontend_find(const char *name)
{
    for (size_t k = 0; name && k < sizeof presets / sizeof presets[0]; k++)
        if (strcmp(presets[k].name, name) == 0)
            return &presets[k];
    return NULL;
}
