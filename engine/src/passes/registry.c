/* registry.c - the built-in passes by name, generated from HS_PASS_LIST. */
#include <string.h>

#include "hloscope/hs_passes.h"

static const hs_pass passes[] = {
#define HS_X(id, name, desc) {name, hs_pass_##id##_run, desc},
    HS_PASS_LIST(HS_X)
#undef HS_X
};

int hs_pass_count(void)
{
    return (int)(sizeof passes / sizeof passes[0]);
}

const hs_pass *hs_pass_at(int index)
{
    return index >= 0 && index < hs_pass_count() ? &passes[index] : NULL;
}

const hs_pass *hs_pass_lookup(const char *name)
{
    for (int k = 0; name && k < hs_pass_count(); k++)
        if (strcmp(passes[k].name, name) == 0)
            return &passes[k];
    return NULL;
}
