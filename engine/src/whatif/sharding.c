/* sharding.c - the sharding section of a what-if (hs_whatif.h): the
 * module's sharding={...} annotations (hs_sharding.h) give the shape each
 * device holds. The module is compiled as it is for the device, as the
 * offload section does, so that one peak is the compile's own; buffer
 * assignment on a copy of the optimized module whose shapes are the
 * other side's gives the other.
 *
 * Two kinds of module come in. One not yet partitioned (a JAX or
 * PyTorch/XLA dump before optimisations) is written at global shapes: the
 * copy takes the per-device shapes. One XLA already partitioned (it holds
 * the collectives the SPMD partitioner inserts; the dumps in
 * ../shared/hlo-real are) is written at per-device shapes and is taken as
 * it is: the copy takes the global shapes its annotations name.
 *
 * Nothing XLA did not write is invented, except the tiling of an
 * element-wise result (or fusion of them) whose operand is tiled (XLA's
 * sharding propagation would give it that tiling too): the other values
 * keep their written shape, and no collective is inserted. The note says
 * so to the user. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_buffers.h"
#include "hloscope/hs_compile.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_sharding.h"
#include "whatif/whatif_internal.h"

typedef struct sharding_run {
    const hs_module *m;
    const hs_whatif_options *o;
    bool partitioned;
    hs_arena *scratch;       /* parsed shardings */
    const hs_sharding **of;  /* by instruction id: written or propagated */
    int n_ids;
    int64_t annotated, propagated, devices;
    bool compiled;          /* m is the compile's optimized module */
    double compiled_peak;   /* then its device peak, else -1 */
    char not_compiled[200]; /* else why m is read as parsed */
} sharding_run;

/* Not analysed, and why (a user's error: where it is). */
static hs_status not_analysed(hs_whatif_sharding *s, const hs_error *why)
{
    s->analysed = false;
    hs_error_format(why, s->reason, sizeof s->reason);
    return HS_OK;
}

/* Reads every annotation of the module into run->of. A malformed one is
 * returned in *why (HS_ERR_PARSE / HS_ERR_SHAPE), host OOM as the status. */
static hs_status read_annotations(sharding_run *run, hs_error *why)
{
    const hs_module *m = run->m;
    for (int c = 0; c < m->n_comps; c++)
        for (int k = 0; k < m->comps[c]->n_instrs; k++) {
            const hs_instruction *i = m->comps[c]->instrs[k];
            if (!i->sharding)
                continue;
            if (i->id < 0 || i->id >= run->n_ids)
                return hs_error_set(why, HS_ERR_INVALID, "instruction %s "
                                    "has id %d, outside the module's",
                                    i->name, i->id);
            hs_sharding *s = hs_arena_alloc(run->scratch, sizeof *s);
            if (!s)
                return HS_ERR_NOMEM;
            hs_status st = hs_instruction_sharding(i, run->scratch, s, why);
            if (st != HS_OK)
                return st;
            run->of[i->id] = s;
            run->annotated++;
            int64_t d = hs_sharding_device_count(s);
            run->devices = d > run->devices ? d : run->devices;
        }
    return HS_OK;
}

/* The sharding a value has (written or propagated so far), or NULL. */
static const hs_sharding *sharding_of(const sharding_run *run,
                                      const hs_instruction *i)
{
    return i->id >= 0 && i->id < run->n_ids ? run->of[i->id] : NULL;
}

static bool same_dims(const hs_shape *a, const hs_shape *b)
{
    return a->rank == b->rank &&
           memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]) == 0;
}

/* A fusion of element-wise ops (what the compile's fusion pass makes of
 * them): every fused instruction but its parameters and constants is an
 * element-wise op, copy or broadcast whose result is a scalar or has the
 * fusion's dimensions, so each output element reads its operands of the
 * same dimensions at the same index. */
static bool elementwise_fusion(const hs_instruction *i)
{
    if (i->opcode != HS_OP_FUSION || i->n_called < 1 || !i->called[0])
        return false;
    const hs_computation *c = i->called[0];
    for (int k = 0; k < c->n_instrs; k++) {
        const hs_instruction *f = c->instrs[k];
        if (f->opcode == HS_OP_PARAMETER || f->opcode == HS_OP_CONSTANT)
            continue;
        if (!hs_opcode_is_elementwise(f->opcode) && f->opcode != HS_OP_COPY &&
            f->opcode != HS_OP_BROADCAST)
            return false;
        if (f->shape.dtype == HS_TUPLE ||
            (f->shape.rank > 0 && !same_dims(&f->shape, &i->shape)))
            return false;
    }
    return true;
}

/* The tiling an unannotated value takes from its operands, as XLA's
 * propagation would give it: a get-tuple-element takes its element's; an
 * element-wise op, copy, convert or fusion of them takes the tiling its
 * operands of the same dimensions agree on (NULL when they disagree or
 * none is tiled). */
static const hs_sharding *propagated(const sharding_run *run,
                                     const hs_instruction *i)
{
    if (i->shape.dtype == HS_TUPLE || i->n_operands == 0)
        return NULL;
    const hs_instruction *op0 = i->operands[0];
    if (i->opcode == HS_OP_GET_TUPLE_ELEMENT) {
        const hs_sharding *t = sharding_of(run, op0);
        return t ? hs_sharding_element(t, &op0->shape, i->index) : NULL;
    }
    if (!hs_opcode_is_elementwise(i->opcode) && i->opcode != HS_OP_COPY &&
        !elementwise_fusion(i))
        return NULL;
    const hs_sharding *agreed = NULL;
    for (int k = 0; k < i->n_operands; k++) {
        const hs_instruction *op = i->operands[k];
        const hs_sharding *s = sharding_of(run, op);
        if (!s || s->kind != HS_SHARDING_TILED || !same_dims(&op->shape,
                                                             &i->shape))
            continue;
        if (agreed && !hs_sharding_equal(agreed, s))
            return NULL;
        agreed = s;
    }
    return agreed;
}

/* Gives every value of copy (a clone of run->m: same computations,
 * positions and ids) the shape on the other side of its sharding. */
static hs_status reshape_copy(sharding_run *run, hs_module *copy,
                              hs_error *why)
{
    const hs_module *m = run->m;
    for (int c = 0; c < m->n_comps; c++) {
        const hs_computation *mc = m->comps[c];
        for (int k = 0; k < mc->n_instrs; k++) {
            const hs_instruction *i = mc->instrs[k];
            const hs_sharding *s = sharding_of(run, i);
            if (!s && !run->partitioned && (s = propagated(run, i)) &&
                i->id >= 0 && i->id < run->n_ids) {
                run->of[i->id] = s;
                run->propagated++;
            }
            if (!s)
                continue;
            hs_shape other;
            hs_status st =
                run->partitioned
                    ? hs_sharding_global_shape(s, &i->shape, copy->arena,
                                               &other, why)
                    : hs_sharding_device_shape(s, &i->shape, copy->arena,
                                               &other, why);
            if (st != HS_OK) {
                snprintf(why->instruction, sizeof why->instruction, "%s",
                         i->name);
                return st;
            }
            copy->comps[c]->instrs[k]->shape = other;
        }
    }
    return HS_OK;
}

/* The device peak of m; -1 with *why set when m cannot be assigned. */
static double device_peak(const hs_module *m, hs_error *why)
{
    hs_buffer_assignment *ba = hs_assign_buffers(m, why);
    if (!ba)
        return -1;
    double peak = (double)hs_buffers_peak(ba, HS_MEMSPACE_DEVICE).bytes;
    hs_buffers_free(ba);
    return peak;
}

static void write_note(const sharding_run *run, hs_whatif_sharding *s)
{
    int n = 0;
    if (!run->compiled)
        n = snprintf(s->note, sizeof s->note,
                     "peaks of the module as parsed (it does not compile: "
                     "%.60s); ", run->not_compiled);
    if (n < 0 || (size_t)n >= sizeof s->note)
        return;
    if (run->partitioned)
        snprintf(s->note + n, sizeof s->note - (size_t)n,
                 "already partitioned by XLA (it holds collectives): its "
                 "shapes are one device's, taken as they are, so "
                 "per_device_peak is its own; global_peak counts the %lld "
                 "annotated values at their global shapes (dims x tiles, "
                 "an upper bound where XLA padded), every other value as "
                 "written; no collective is inserted or removed",
                 (long long)run->annotated);
    else
        snprintf(s->note + n, sizeof s->note - (size_t)n,
                 "per-device shapes from %lld annotations (ceil(dim / "
                 "tiles)); no collective is inserted, so no all-gather or "
                 "resharding buffer is counted; unannotated values keep "
                 "their global shape, except results of element-wise ops "
                 "(or fusions of them), copies and get-tuple-elements of a "
                 "tiled operand (%lld here), which take its tiling; "
                 "replicated, maximal and unknown values count whole",
                 (long long)run->annotated, (long long)run->propagated);
}

static hs_status analyse(sharding_run *run, hs_whatif_sharding *out,
                         hs_error *err)
{
    hs_error why;
    hs_error_clear(&why);
    hs_status st = read_annotations(run, &why);
    if (st == HS_ERR_NOMEM)
        return hs_error_set(err, st, "out of memory reading shardings");
    if (st != HS_OK)
        return not_analysed(out, &why);
    if (run->annotated == 0) {
        out->analysed = false;
        snprintf(out->reason, sizeof out->reason,
                 "no instruction carries a sharding={...} annotation");
        return HS_OK;
    }
    if ((st = hs__whatif_stopped(run->o, "the sharding analysis", err)) != HS_OK)
        return st;
    hs_module *copy = hs_module_clone(run->m);
    if (!copy) {
        /* hs_module_clone cannot tell host OOM from a malformed module;
         * either way the other sections may still answer. */
        out->analysed = false;
        snprintf(out->reason, sizeof out->reason,
                 "the module could not be copied for its other shapes (an "
                 "operand used before it is defined, or out of host memory)");
        return HS_OK;
    }
    double written = -1, other = -1;
    st = reshape_copy(run, copy, &why);
    if (st == HS_OK && (st = hs__whatif_stopped(run->o, "the sharding analysis", err)) == HS_OK &&
        (written = run->compiled_peak >= 0 ? run->compiled_peak
                                           : device_peak(run->m, &why)) >= 0 &&
        (st = hs__whatif_stopped(run->o, "the sharding analysis", err)) == HS_OK)
        other = device_peak(copy, &why);
    hs_module_free(copy);
    if (st == HS_ERR_CANCELLED)
        return st;
    if (why.status == HS_ERR_NOMEM) {
        *err = why;
        return HS_ERR_NOMEM;
    }
    if (st != HS_OK || written < 0 || other < 0)
        return not_analysed(out, &why);
    out->analysed = true;
    out->devices = run->devices > 1 << 30 ? 1 << 30 : (int)run->devices;
    out->annotated = run->annotated;
    out->global_peak = run->partitioned ? other : written;
    out->per_device_peak = run->partitioned ? written : other;
    write_note(run, out);
    return HS_OK;
}

hs_status hs__whatif_sharding(const hs_module *m, const hs__whatif_shared *sh,
                              const hs_whatif_options *o, hs_whatif *w,
                              hs_error *err)
{
    hs_whatif_sharding *out = &w->sharding;
    memset(out, 0, sizeof *out);
    /* The module compiled as it is for the device (the driver's one
     * compile, the offload section's too), so that the peaks are the
     * compile's; read as parsed when it does not compile. */
    const hs_executable *exe = sh->exe;
    hs_status st;
    if (exe)
        m = hs_executable_module(exe);
    sharding_run run = {.m = m, .o = o, .n_ids = m->next_id,
                        .partitioned = hs_module_is_partitioned(m),
                        .compiled = exe != NULL,
                        .compiled_peak = -1};
    if (exe)
        run.compiled_peak = (double)hs_buffers_peak(
            hs_executable_buffers(exe), HS_MEMSPACE_DEVICE).bytes;
    if (!exe)
        hs_error_format(&sh->why, run.not_compiled, sizeof run.not_compiled);
    run.scratch = hs_arena_new(0);
    run.of = calloc(run.n_ids > 0 ? (size_t)run.n_ids : 1, sizeof *run.of);
    st = run.scratch && run.of
             ? analyse(&run, out, err)
             : hs_error_set(err, HS_ERR_NOMEM, "out of memory");
    free(run.of);
    hs_arena_free(run.scratch);
    return st;
}
