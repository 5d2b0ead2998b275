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

struct hs_executable;
/* What the driver makes once and every section reads: the group tree of
 * the entry, and the module compiled as it is for the device (the default
 * pipeline, no cache). The reroll's "before", the offload's starting point
 * and the sharding's peaks are this one compile: on Mixtral a compile is
 * most of the analysis, and three of them missed the 2 s goal. */
typedef struct hs__whatif_shared {
    const hs_group_tree *tree;
    struct hs_executable *exe; /* NULL: m does not compile */
    double compile_seconds;          /* wall time of that compile */
    hs_error why;                    /* exe == NULL: the compile's error */
} hs__whatif_shared;

/* Fills sh for m: tree (borrowed, may be NULL for a section that does not
 * read it) and the one compile for o's device. HS_ERR_INVALID for an
 * unknown device; a module that does not compile is HS_OK with exe NULL;
 * cancelled or out of host memory stop. */
hs_status hs__whatif_shared_init(const hs_module *m, const hs_group_tree *t,
                                 const hs_whatif_options *o,
                                 hs__whatif_shared *sh, hs_error *err);
void hs__whatif_shared_free(hs__whatif_shared *sh);

/* reroll.c: w->repeats, w->n_repeats and w->scan. */
hs_status hs__whatif_reroll(const hs_module *m, const hs__whatif_shared *sh,
                            const hs_whatif_options *o, hs_whatif *w,
                            hs_error *err);
/* offload.c: w->offload. */
hs_status hs__whatif_offload(const hs_module *m, const hs__whatif_shared *sh,
                             const hs_whatif_options *o, hs_whatif *w,
                             hs_error *err);
/* sharding.c: w->sharding. */
hs_status hs__whatif_sharding(const hs_module *m, const hs__whatif_shared *sh,
                              const hs_whatif_options *o, hs_whatif *w,
                              hs_error *err);

#endif
