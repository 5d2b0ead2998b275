/*
 * whatif_internal.h - the sections of a what-if (hs_whatif.h), one file
 * each, called in this order by whatif.c's hs_whatif_analyse. Each fills
 * its own section of w (strings and arrays in w->arena); a section that
 * does not apply to the module sets analysed = false and a reason and
 * returns HS_OK. Anything else returned (HS_ERR_CANCELLED, HS_ERR_NOMEM)
 * stops the whole analysis.
 */
#ifndef HLOSCOPE_WHATIF_INTERNAL_H
#define HLOSCOPE_WHATIF_INTERNAL_H

#include "hloscope/hs_whatif.h"

/* Shared by the sections (whatif.c). */
struct hs_compile_options;
/* HS_ERR_CANCELLED, naming `what`, once o's cancel flag is set or its
 * deadline has passed; else HS_OK. */
hs_status hs__whatif_stopped(const hs_whatif_options *o, const char *what,
                             hs_error *err);
/* Compile options for device (and pipeline; NULL: the default) that
 * stop where o stops: its cancel flag, the time left to its deadline. */
void hs__whatif_compile_options(const hs_whatif_options *o, const char *device,
                                const char *pipeline,
                                struct hs_compile_options *co);

/* reroll.c: w->repeats, w->n_repeats and w->scan. */
hs_status hs__whatif_reroll(const hs_module *m, const hs_group_tree *t,
                            const hs_whatif_options *o, hs_whatif *w,
                            hs_error *err);
/* offload.c: w->offload. */
hs_status hs__whatif_offload(const hs_module *m, const hs_group_tree *t,
                             const hs_whatif_options *o, hs_whatif *w,
                             hs_error *err);
/* sharding.c: w->sharding. */
hs_status hs__whatif_sharding(const hs_module *m, const hs_whatif_options *o,
                              hs_whatif *w, hs_error *err);

#endif
