/* context.c - the pass context: deadline and cancellation, checked between
 * passes and inside long loops. */
#include "hloscope/hs_passes.h"
#include "passes/context.h"

void hs_pass_context_init(hs_pass_context *ctx)
{
    ctx->deadline_ns = 0;
    ctx->cancel = NULL;
    ctx->verify = true;
    ctx->fold_max_elements = HS_FOLD_MAX_ELEMENTS;
    ctx->target = NULL;
}

void hs_pass_context_set_timeout(hs_pass_context *ctx, int64_t ms)
{
    ctx->deadline_ns = ms > 0 ? hs_now_ns() + ms * 1000000 : 0;
}

hs_status hs_pass_context_check(const hs_pass_context *ctx, hs_error *err)
{
    if (!ctx)
        return HS_OK;
    if (ctx->cancel && atomic_load(ctx->cancel))
        return hs_error_set(err, HS_ERR_CANCELLED, "compilation cancelled");
    if (ctx->deadline_ns > 0 && hs_now_ns() >= ctx->deadline_ns)
        return hs_error_set(err, HS_ERR_CANCELLED,
                            "compilation deadline exceeded");
    return HS_OK;
}

hs_status hs__pass_poll(const hs_pass_context *ctx, int64_t *tick,
                        hs_error *err)
{
    if ((++*tick & 1023) != 0)
        return HS_OK;
    return hs_pass_context_check(ctx, err);
}
