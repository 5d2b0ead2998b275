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
