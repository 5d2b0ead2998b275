/* verify.c - the `verify` pass: hs_module_verify as a pipeline step, so
 * that a pipeline can check its input before the first rewrite. */
#include "passes/passes_internal.h"

hs_status hs_pass_verify_run(hs_module *m, hs_pass_context *ctx,
                             bool *changed, hs_error *err)
{
    (void)ctx;
    *changed = false;
    return hs_module_verify(m, err);
}
