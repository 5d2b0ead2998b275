/* structure.c - groups from structure alone, for computations whose
 * op_names are missing or flat (JAX benchmark dumps, torch_xla without
 * scopes).
 *
 * 1. Cut points. The post-dominator tree is built in one backward pass
 *    (an instruction's immediate post-dominator is the common ancestor of
 *    its users'), and the cut points are the post-dominators of the
 *    deepest instruction: values that every path from it to the root
 *    passes through, such as the residual stream between the layers of a
 *    forward pass. Each non-leaf instruction belongs to the block of the
 *    first cut point above it. A training step has no useful cuts (every
 *    weight reaches the root through its update, so nearly everything
 *    hangs from the root); when one block holds most of the computation,
 *    the blocks are the non-leaf instructions themselves, in definition
 *    order.
 * 2. Each block is hashed by structure (hash.c).
 * 3. Repeats: candidate periods are the commonest distances between equal
 *    block hashes; for each, a run is a stretch where block k and block
 *    k + period hash alike (blocks of single instructions may differ in a
 *    few places, since a schedule moves an instruction or two between
 *    layers). The longest runs that do not overlap become "run.K", with
 *    one "run.K/layer.J" per period; what lies between runs is cut into
 *    "part.K" groups of bounded size. A run of single instructions is
 *    then cut where the fewest values cross between periods (the residual
 *    stream), and may take one more layer at each end.
 * Everything is linear in the instructions but the common-ancestor walks,
 * which are short on real modules and capped (the cuts are given up past
 * the cap, never the grouping). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "groups/groups_internal.h"

enum {
    MAX_PERIODS = 16,      /* candidate periods tried */
    MIN_RUN_UNITS = 8,     /* a run covers at least this many blocks (four
                              times as many single instructions)... */
    MIN_LAYER_INSTRS = 4,  /* ...and a layer at least this many instructions */
    MIN_PART = 256,        /* parts hold at most max(MIN_PART, n / PARTS) */
    PARTS = 24,
    WALK_BUDGET = 64       /* common-ancestor steps per instruction */
};

typedef struct unitseq {
    int n;          /* blocks */
    int *start;     /* members of block u: members[start[u] .. start[u+1]) */
    int *members;   /* positions, increasing within a block */
    uint64_t *hash; /* per block */
    int *size;      /* non-leaf instructions per block */
} unitseq;

typedef struct run {
    int start, period, repeats;
} run;

/* ---- 1. cut points ------------------------------------------------------ */

/* block[p] for each non-leaf position p: the cut point (a position) whose
 * block holds it, or -1. Returns false when the cuts are useless or too
 * costly to find. */
static bool cut_blocks(const hs__gcomp *gc, int *block, int nonleaf)
{
    int n = gc->n, exit = n;
    int *ipdom = malloc(sizeof *ipdom * ((size_t)n + 1));
    int *depth = malloc(sizeof *depth * ((size_t)n + 1));
    bool *spine = calloc((size_t)n + 1, sizeof *spine);
    bool ok = ipdom && depth && spine;
    int64_t steps = 0, budget = (int64_t)WALK_BUDGET * (n + 1);
    if (ok) {
        ipdom[exit] = exit;
        depth[exit] = 0;
    }
    for (int p = n - 1; ok && p >= 0; p--) {
        int a = -1;
        for (int u = gc->user_start[p]; u < gc->user_start[p + 1]; u++) {
            int b = gc->users[u];
            if (a < 0) {
                a = b;
                continue;
            }
            while (a != b && steps++ < budget) {
                if (depth[a] >= depth[b])
                    a = ipdom[a];
                else
                    b = ipdom[b];
            }
        }
        if (steps >= budget)
            ok = false;
        ipdom[p] = a < 0 ? exit : a;
        depth[p] = depth[ipdom[p]] + 1;
    }
    int deepest = -1;
    for (int p = 0; ok && p < n; p++)
        if (deepest < 0 || depth[p] > depth[deepest])
            deepest = p;
    for (int p = deepest; ok && p >= 0 && p != exit; p = ipdom[p])
        spine[p] = !gc->leaf[p];
    int blocks = 0, *size = ok ? calloc((size_t)n + 1, sizeof *size) : NULL;
    int largest = 0;
    for (int p = n - 1; ok && size && p >= 0; p--) {
        block[p] = spine[p] ? p : ipdom[p] == exit ? -1 : block[ipdom[p]];
        if (gc->leaf[p] || block[p] < 0)
            continue;
        blocks += spine[p];
        if (++size[block[p]] > largest)
            largest = size[block[p]];
    }
    ok = ok && size && blocks >= 4 && largest * 2 <= nonleaf;
    free(size);
    free(ipdom);
    free(depth);
    free(spine);
    return ok;
}

/* The blocks of gc: cut blocks when useful, else one per non-leaf
 * instruction. Members of a block are increasing positions. */
static bool make_units(hs__gbuild *b, const hs__gcomp *gc, unitseq *u,
                       bool *by_instruction)
{
    int n = gc->n, nonleaf = 0;
    for (int p = 0; p < n; p++)
        nonleaf += !gc->leaf[p];
    int *block = malloc(sizeof *block * ((size_t)n + 1));
    int *unit_of = malloc(sizeof *unit_of * ((size_t)n + 1));
    u->start = malloc(sizeof *u->start * ((size_t)nonleaf + 2));
    u->members = malloc(sizeof *u->members * ((size_t)nonleaf + 1));
    u->hash = malloc(sizeof *u->hash * ((size_t)nonleaf + 1));
    u->size = calloc((size_t)nonleaf + 1, sizeof *u->size);
    uint32_t *stamps = calloc((size_t)n + 1, sizeof *stamps);
    uint64_t *h = malloc(sizeof *h * ((size_t)n + 1));
    bool ok = block && unit_of && u->start && u->members && u->hash &&
              u->size && stamps && h;
    *by_instruction = !(ok && cut_blocks(gc, block, nonleaf));
    if (ok) {
        /* Units in definition order of their cut point (or instruction). */
        u->n = 0;
        for (int p = 0; p < n; p++) {
            unit_of[p] = -1;
            if (gc->leaf[p])
                continue;
            if (*by_instruction || block[p] == p)
                unit_of[p] = u->n++;
        }
        for (int p = 0; p < n; p++) {
            if (gc->leaf[p])
                continue;
            int owner = *by_instruction ? p : block[p];
            if (owner >= 0)
                u->size[unit_of[owner]]++;
        }
        u->start[0] = 0;
        for (int k = 0; k < u->n; k++)
            u->start[k + 1] = u->start[k] + u->size[k];
        int *fill = calloc((size_t)u->n + 1, sizeof *fill);
        ok = fill != NULL;
        for (int p = 0; ok && p < n; p++) {
            if (gc->leaf[p])
                continue;
            int owner = *by_instruction ? p : block[p];
            if (owner < 0)
                continue;
            int k = unit_of[owner];
            u->members[u->start[k] + fill[k]++] = p;
        }
        free(fill);
        for (int k = 0; ok && k < u->n; k++)
            u->hash[k] = hs__ghash_members(b, gc->c, u->members + u->start[k],
                                           u->size[k], stamps, (uint32_t)k + 1,
                                           h);
    }
    free(block);
    free(unit_of);
    free(stamps);
    free(h);
    return ok;
}

/* ---- 3. repeats ----------------------------------------------------------- */

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The commonest distances between blocks of equal hash, best first. */
static int candidate_periods(const unitseq *u, int *periods)
{
    int n = u->n;
    /* Sort block indices by hash to find each block's previous twin. */
    int *order = malloc(sizeof *order * ((size_t)n + 1));
    int *gaps = malloc(sizeof *gaps * ((size_t)n + 1));
    if (!order || !gaps) {
        free(order);
        free(gaps);
        return -1;
    }
    for (int k = 0; k < n; k++)
        order[k] = k;
    /* Counting by hash with a stable sort keeps it deterministic. */
    const uint64_t *hash = u->hash;
    for (int w = 1; w < n; w *= 2) {
        /* bottom-up merge sort on (hash, index) */
        int *tmp = malloc(sizeof *tmp * (size_t)n);
        if (!tmp) {
            free(order);
            free(gaps);
            return -1;
        }
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                tmp[o++] = hash[order[j]] < hash[order[i]] ? order[j++] : order[i++];
            while (i < mid)
                tmp[o++] = order[i++];
            while (j < hi)
                tmp[o++] = order[j++];
        }
        memcpy(order, tmp, sizeof *tmp * (size_t)n);
        free(tmp);
    }
    int ng = 0;
    for (int k = 1; k < n; k++)
        if (hash[order[k]] == hash[order[k - 1]])
            gaps[ng++] = order[k] - order[k - 1];
    qsort(gaps, (size_t)ng, sizeof *gaps, cmp_int);
    /* The MAX_PERIODS commonest gaps (seen at least twice), ties to the
     * shorter: gaps are sorted, so equal ones are neighbours. */
    int np = 0;
    int counts[MAX_PERIODS];
    for (int k = 0; k < ng;) {
        int j = k;
        while (j < ng && gaps[j] == gaps[k])
            j++;
        int c = j - k;
        k = j;
        if (c < 2 || (np == MAX_PERIODS && counts[np - 1] >= c))
            continue;
        int at = np < MAX_PERIODS ? np++ : MAX_PERIODS - 1;
        while (at > 0 && counts[at - 1] < c) {
            periods[at] = periods[at - 1];
            counts[at] = counts[at - 1];
            at--;
        }
        periods[at] = gaps[j - 1];
        counts[at] = c;
    }
    free(order);
    free(gaps);
    return np;
}

/* Runs of period L: stretches where block k and k + L hash alike, allowing
 * `slack` differences in any L consecutive comparisons. */
static int runs_of_period(const unitseq *u, int L, int slack, run *out,
                          int cap)
{
    int n = u->n, found = 0;
    int k = 0;
    while (k + L < n && found < cap) {
        if (u->hash[k] != u->hash[k + L]) {
            k++;
            continue;
        }
        int a = k, last_match = k, misses = 0;
        /* misses among the last L comparisons */
        while (k + L < n) {
            bool same = u->hash[k] == u->hash[k + L];
            if (same)
                last_match = k;
            else
                misses++;
            if (k - L >= a && u->hash[k - L] != u->hash[k])
                misses--;
            if (misses > slack)
                break;
            k++;
        }
        int length = last_match + 1 - a; /* comparisons in the run */
        int repeats = (length + L) / L;
        if (repeats >= 2)
            out[found++] = (run){a, L, repeats};
        k = last_match + 1;
    }
    return found;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Whether blocks [a, a+L) and [b, b+L) hold the same hashes but for at
 * most slack: a layer whose schedule differs by an instruction (layer 0
 * holding a broadcast the others reuse) shifts every position after it,
 * so the neighbours of a run are compared as multisets. */
static bool same_multiset(const unitseq *u, int a, int b, int L, int slack,
                          uint64_t *tmp)
{
    memcpy(tmp, u->hash + a, sizeof *tmp * (size_t)L);
    memcpy(tmp + L, u->hash + b, sizeof *tmp * (size_t)L);
    qsort(tmp, (size_t)L, sizeof *tmp, cmp_u64);
    qsort(tmp + L, (size_t)L, sizeof *tmp, cmp_u64);
    int i = 0, j = 0, diff = 0;
    while (i < L && j < L && diff <= 2 * slack) {
        if (tmp[i] == tmp[L + j]) {
            i++;
            j++;
        } else if (tmp[i] < tmp[L + j]) {
            i++;
            diff++;
        } else {
            j++;
            diff++;
        }
    }
    diff += (L - i) + (L - j);
    return diff <= 2 * slack;
}

/* Grows run r by whole periods at both ends while the neighbour period
 * matches its adjacent layer as a multiset. */
static void extend_run(const unitseq *u, run *r, int slack, uint64_t *tmp)
{
    int L = r->period;
    while (r->start - L >= 0 &&
           same_multiset(u, r->start - L, r->start, L, slack, tmp)) {
        r->start -= L;
        r->repeats++;
    }
    for (;;) {
        int end = r->start + L * r->repeats;
        if (end + L > u->n || !same_multiset(u, end - L, end, L, slack, tmp))
            break;
        r->repeats++;
    }
}

static int64_t run_instructions(const unitseq *u, const run *r)
{
    int end = r->start + r->period * r->repeats;
    return (int64_t)u->start[end] - u->start[r->start];
}

static int cmp_run_start(const void *a, const void *b)
{
    const run *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

/* Non-overlapping runs, the most instructions first; sorted by start. */
static int choose_runs(const unitseq *u, bool by_instruction, run **out)
{
    int periods[MAX_PERIODS];
    int np = candidate_periods(u, periods);
    if (np < 0)
        return -1;
    int cap = 64, n = 0;
    run *all = malloc(sizeof *all * (size_t)cap * (size_t)(np + 1));
    if (!all)
        return -1;
    uint64_t *tmp = malloc(sizeof *tmp * (2 * (size_t)u->n + 2));
    if (!tmp) {
        free(all);
        return -1;
    }
    for (int k = 0; k < np; k++) {
        int slack = by_instruction ? periods[k] / 16 : 0;
        int found = runs_of_period(u, periods[k], slack, all + n, cap);
        for (int j = 0; j < found; j++)
            extend_run(u, &all[n + j], slack, tmp);
        n += found;
    }
    free(tmp);
    /* Selection: largest first (ties: shorter period, earlier start). */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            const run *x = &all[j], *y = &all[j - 1];
            int64_t cx = run_instructions(u, x), cy = run_instructions(u, y);
            bool better = cx > cy || (cx == cy && (x->period < y->period ||
                          (x->period == y->period && x->start < y->start)));
            if (!better)
                break;
            run t = all[j];
            all[j] = all[j - 1];
            all[j - 1] = t;
        }
    int kept = 0;
    for (int i = 0; i < n; i++) {
        run *r = &all[i];
        int end = r->start + r->period * r->repeats;
        if (r->period * r->repeats <
                MIN_RUN_UNITS * (by_instruction ? 4 : 1) ||
            run_instructions(u, r) < (int64_t)MIN_LAYER_INSTRS * r->repeats)
            continue;
        bool overlaps = false;
        for (int j = 0; j < kept && !overlaps; j++) {
            int e = all[j].start + all[j].period * all[j].repeats;
            overlaps = r->start < e && all[j].start < end;
        }
        if (!overlaps)
            all[kept++] = *r;
    }
    qsort(all, (size_t)kept, sizeof *all, cmp_run_start);
    *out = all;
    return kept;
}

/* ---- groups ----------------------------------------------------------------- */

static void assign(hs__gbuild *b, const hs__gcomp *gc, const unitseq *u,
                   int from, int to, int g)
{
    for (int k = u->start[from]; k < u->start[to]; k++)
        b->group_of[gc->c->instrs[u->members[k]]->id] = g;
}

/* Blocks [from, to) outside any run, in parts of at most `most`
 * instructions (a lone small stretch stays ungrouped). */
static hs_status add_parts(hs__gbuild *b, const hs__gcomp *gc,
                           const unitseq *u, int from, int to, int most,
                           int *n_parts)
{
    while (from < to) {
        int end = from, count = 0;
        while (end < to && (count == 0 || count + u->size[end] <= most))
            count += u->size[end++];
        if (count >= 2 && !(from == 0 && end == u->n)) {
            char local[32], label[64];
            snprintf(local, sizeof local, "part.%d", *n_parts);
            snprintf(label, sizeof label, "part %d (%d instructions)",
                     *n_parts, count);
            int g = hs__group_add(b, HS_GROUP_STRUCTURE, gc->group, local,
                                  gc->prefix, label, gc->c);
            if (g < 0)
                return HS_ERR_NOMEM;
            assign(b, gc, u, from, end, g);
            ++*n_parts;
        }
        from = end;
    }
    return HS_OK;
}

/* ---- the phase of a run ---------------------------------------------------- */

/* cross[k]: how many values defined in blocks before k are used in block k
 * or later (blocks of single instructions). Where few cross is where one
 * layer hands over to the next: the residual stream. */
static int *crossings(hs__gbuild *b, const hs__gcomp *gc, const unitseq *u)
{
    int *unit_of = malloc(sizeof *unit_of * ((size_t)gc->n + 1));
    int *cross = calloc((size_t)u->n + 2, sizeof *cross);
    if (!unit_of || !cross) {
        free(unit_of);
        free(cross);
        return NULL;
    }
    for (int p = 0; p < gc->n; p++)
        unit_of[p] = -1;
    for (int k = 0; k < u->n; k++)
        unit_of[u->members[u->start[k]]] = k;
    for (int k = 0; k < u->n; k++) {
        const hs_instruction *i = gc->c->instrs[u->members[u->start[k]]];
        for (int o = 0; o < i->n_operands; o++) {
            int q = hs__gpos(b, i->operands[o]);
            int from = q >= 0 && i->operands[o]->parent == gc->c ? unit_of[q] : -1;
            if (from < 0 || from >= k)
                continue;
            cross[from + 1]++;
            cross[k + 1]--;
        }
    }
    for (int k = 1; k <= u->n; k++)
        cross[k] += cross[k - 1];
    free(unit_of);
    return cross;
}

/* Shifts run r (of single instructions) so that its layers begin where
 * the fewest values cross, then takes one more layer at each end when it
 * holds the same instructions but for a quarter of a period (the first
 * layer keeps what XLA's CSE left there for all layers). lo and hi bound
 * where it may reach (its neighbours). */
static void phase_run(const unitseq *u, const int *cross, run *r, int lo,
                      int hi, uint64_t *tmp)
{
    int L = r->period;
    int64_t best = -1;
    int phase = 0;
    for (int f = 0; f < L; f++) {
        int64_t sum = 0;
        for (int j = 0; j < r->repeats; j++)
            sum += cross[r->start + f + j * L];
        if (best < 0 || sum < best) {
            best = sum;
            phase = f;
        }
    }
    int start = r->start + phase, repeats = r->repeats;
    /* the last period may now run past what matched: keep it only when it
     * still matches its predecessor */
    if (start + repeats * L > hi ||
        !same_multiset(u, start + (repeats - 2) * L, start + (repeats - 1) * L,
                       L, L / 16, tmp))
        repeats--;
    int slack = L / 4;
    if (start - L >= lo && same_multiset(u, start - L, start, L, slack, tmp)) {
        start -= L;
        repeats++;
    }
    int end = start + repeats * L;
    if (end + L <= hi && same_multiset(u, end - L, end, L, slack, tmp))
        repeats++;
    if (repeats >= 2) {
        r->start = start;
        r->repeats = repeats;
    }
}

hs_status hs__groups_structure(hs__gbuild *b, const hs__gcomp *gc)
{
    unitseq u = {0};
    run *runs = NULL;
    bool by_instruction = true;
    hs_status st = HS_OK;
    if (!make_units(b, gc, &u, &by_instruction)) {
        st = hs_error_set(b->err, HS_ERR_NOMEM, "out of host memory");
        goto done;
    }
    int n_runs = choose_runs(&u, by_instruction, &runs);
    if (n_runs < 0) {
        st = hs_error_set(b->err, HS_ERR_NOMEM, "out of host memory");
        goto done;
    }
    if (by_instruction && n_runs > 0) {
        int *cross = crossings(b, gc, &u);
        uint64_t *tmp = malloc(sizeof *tmp * (2 * (size_t)u.n + 2));
        if (!cross || !tmp) {
            free(cross);
            free(tmp);
            st = hs_error_set(b->err, HS_ERR_NOMEM, "out of host memory");
            goto done;
        }
        for (int r = 0; r < n_runs; r++) {
            int lo = r > 0 ? runs[r - 1].start + runs[r - 1].period * runs[r - 1].repeats : 0;
            int hi = r + 1 < n_runs ? runs[r + 1].start : u.n;
            phase_run(&u, cross, &runs[r], lo, hi, tmp);
        }
        free(cross);
        free(tmp);
    }
    int total = u.start[u.n];
    int most = total / PARTS > MIN_PART ? total / PARTS : MIN_PART;
    int at = 0, n_parts = 0;
    for (int r = 0; r <= n_runs && st == HS_OK; r++) {
        int next = r < n_runs ? runs[r].start : u.n;
        if (n_runs > 0 || total > most)
            st = add_parts(b, gc, &u, at, next, most, &n_parts);
        if (st != HS_OK || r == n_runs)
            break;
        const run *x = &runs[r];
        char local[48], label[32];
        snprintf(local, sizeof local, "run.%d", r);
        int g = hs__group_add(b, HS_GROUP_STRUCTURE, gc->group, local,
                              gc->prefix, local, gc->c);
        if (g < 0) {
            st = HS_ERR_NOMEM;
            break;
        }
        b->g[g].repeat = -1;
        for (int j = 0; j < x->repeats; j++) {
            snprintf(local, sizeof local, "run.%d/layer.%d", r, j);
            snprintf(label, sizeof label, "layer %d", j);
            int l = hs__group_add(b, HS_GROUP_STRUCTURE, g, local, gc->prefix,
                                  label, gc->c);
            if (l < 0) {
                st = HS_ERR_NOMEM;
                break;
            }
            int from = x->start + j * x->period;
            assign(b, gc, &u, from, from + x->period, l);
        }
        at = x->start + x->period * x->repeats;
    }
done:
    free(u.start);
    free(u.members);
    free(u.hash);
    free(u.size);
    free(runs);
    return st;
}
