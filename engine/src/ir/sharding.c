/* sharding.c - XLA's sharding={...} text read into hs_sharding, the shape
 * one device holds, and whether a module is already partitioned
 * (hs_sharding.h). The grammar is HloSharding::Print's: the IR keeps the
 * text, so a sharding only costs something to someone who asks. */
#include <ctype.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_sharding.h"

/* No machine has more devices; a larger product is a typing error, and
 * the bound keeps every tile index and device id far inside int64. */
#define MAX_TILES (INT64_C(1) << 24)

const char *hs_sharding_kind_name(hs_sharding_kind k)
{
    switch (k) {
    case HS_SHARDING_REPLICATED: return "replicated";
    case HS_SHARDING_MAXIMAL: return "maximal";
    case HS_SHARDING_MANUAL: return "manual";
    case HS_SHARDING_UNKNOWN: return "unknown";
    case HS_SHARDING_UNREDUCED: return "unreduced";
    case HS_SHARDING_TILED: return "tiled";
    case HS_SHARDING_TUPLE: return "tuple";
    }
    return "?";
}

/* ---- reading the text ---------------------------------------------------- */

typedef struct reader {
    const char *text;
    size_t len, pos;
    hs_arena *a;
    hs_error *err;
    hs_status st; /* the first failure */
} reader;

static bool fail(reader *r, size_t at, hs_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool fail(reader *r, size_t at, hs_status st, const char *fmt, ...)
{
    if (r->st != HS_OK)
        return false;
    r->st = st;
    if (r->err) {
        char msg[400];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        hs_error_set(r->err, st, "sharding, column %zu: %s", at + 1, msg);
        r->err->column = (int)(at + 1);
    }
    return false;
}

/* Whitespace, and the index comments XLA puts in long tuples (every
 * fifth element: ", /" "*index=5*" "/ {...}"). */
static void skip(reader *r)
{
    for (;;) {
        while (r->pos < r->len && isspace((unsigned char)r->text[r->pos]))
            r->pos++;
        if (r->pos + 1 < r->len && r->text[r->pos] == '/' &&
            r->text[r->pos + 1] == '*') {
            const char *end = NULL;
            for (size_t k = r->pos + 2; k + 1 < r->len; k++)
                if (r->text[k] == '*' && r->text[k + 1] == '/') {
                    end = r->text + k + 2;
                    break;
                }
            if (!end)
                return; /* left for the caller to find unexpected */
            r->pos = (size_t)(end - r->text);
            continue;
        }
        return;
    }
}

static int peek(reader *r)
{
    skip(r);
    return r->pos < r->len ? (unsigned char)r->text[r->pos] : -1;
}

static bool accept(reader *r, char c)
{
    if (peek(r) != c)
        return false;
    r->pos++;
    return true;
}

static bool expect(reader *r, char c, const char *what)
{
    if (accept(r, c))
        return true;
    return fail(r, r->pos, HS_ERR_PARSE, "expected '%c' %s", c, what);
}

/* A word of letters, digits and '_' (a keyword); its length, 0 if none. */
static size_t word(reader *r, const char **start)
{
    skip(r);
    size_t b = r->pos;
    while (r->pos < r->len && (isalnum((unsigned char)r->text[r->pos]) ||
                               r->text[r->pos] == '_'))
        r->pos++;
    *start = r->text + b;
    return r->pos - b;
}

static bool is_word(const char *w, size_t n, const char *kw)
{
    return n == strlen(kw) && memcmp(w, kw, n) == 0;
}

static bool integer(reader *r, int64_t *out, const char *what)
{
    skip(r);
    size_t b = r->pos;
    int64_t v = 0;
    while (r->pos < r->len && isdigit((unsigned char)r->text[r->pos])) {
        if (v > (INT64_MAX - 9) / 10)
            return fail(r, b, HS_ERR_PARSE, "%s is too large", what);
        v = v * 10 + (r->text[r->pos++] - '0');
    }
    if (r->pos == b)
        return fail(r, b, HS_ERR_PARSE, "expected %s", what);
    *out = v;
    return true;
}

/* A device, below MAX_TILES (so that a count of devices is one more). */
static bool device_number(reader *r, int64_t *out)
{
    size_t at = (skip(r), r->pos);
    if (!integer(r, out, "a device number"))
        return false;
    return *out < MAX_TILES ||
           fail(r, at, HS_ERR_PARSE, "device %" PRId64 " is beyond the "
                "2^24 devices a sharding may name", *out);
}

/* "[a,b,c]" into v[0..*n), at most max entries, each >= 1. */
static bool dims_list(reader *r, int64_t *v, int max, int *n,
                      const char *what)
{
    *n = 0;
    if (!expect(r, '[', what))
        return false;
    if (accept(r, ']'))
        return fail(r, r->pos - 1, HS_ERR_PARSE, "%s is empty", what);
    do {
        size_t at = (skip(r), r->pos);
        int64_t d;
        if (!integer(r, &d, "a dimension"))
            return false;
        if (d < 1 || d > MAX_TILES)
            return fail(r, at, HS_ERR_PARSE, "%s: %" PRId64 " is not a "
                        "dimension of 1 to 2^24", what, d);
        if (*n == max)
            return fail(r, at, HS_ERR_LIMIT, "%s has more than %d entries",
                        what, max);
        v[(*n)++] = d;
    } while (accept(r, ','));
    return expect(r, ']', what);
}

/* The product of v[0..n), which dims_list keeps at most 2^24 each; false
 * past MAX_TILES. */
static bool product(const int64_t *v, int n, int64_t *out)
{
    int64_t p = 1;
    for (int k = 0; k < n; k++) {
        if (p > MAX_TILES / v[k])
            return false;
        p *= v[k];
    }
    *out = p;
    return true;
}

/* "<=[8]" or "<=[2,64]T(1,0)", after devices=[...]. */
static bool iota_form(reader *r, hs_sharding *s)
{
    size_t at = (skip(r), r->pos);
    if (!dims_list(r, s->iota_dims, HS_SHARDING_MAX_TILE_DIMS, &s->n_iota_dims,
                   "after '<=' (the iota's dimensions)"))
        return false;
    int64_t n;
    if (!product(s->iota_dims, s->n_iota_dims, &n) || n != s->n_tiles)
        return fail(r, at, HS_ERR_PARSE, "the iota's dimensions hold "
                    "another number of devices than the %" PRId64 " tiles",
                    s->n_tiles);
    for (int k = 0; k < s->n_iota_dims; k++)
        s->iota_perm[k] = k;
    if (peek(r) != 'T')
        return true;
    r->pos++;
    if (!expect(r, '(', "after 'T' (the iota's transposition)"))
        return false;
    bool seen[HS_SHARDING_MAX_TILE_DIMS] = {false};
    int k = 0;
    do {
        size_t pat = (skip(r), r->pos);
        int64_t p;
        if (!integer(r, &p, "a dimension of the transposition"))
            return false;
        if (k == s->n_iota_dims || p >= s->n_iota_dims || seen[p])
            return fail(r, pat, HS_ERR_PARSE, "T(...) is not a permutation "
                        "of the iota's %d dimensions", s->n_iota_dims);
        seen[p] = true;
        s->iota_perm[k++] = (int)p;
    } while (accept(r, ','));
    if (k != s->n_iota_dims)
        return fail(r, r->pos, HS_ERR_PARSE, "T(...) names %d of the iota's "
                    "%d dimensions", k, s->n_iota_dims);
    return expect(r, ')', "to close T(...)");
}

/* "0,1,2,3" after devices=[...]: one device per tile. */
static bool device_list(reader *r, hs_sharding *s)
{
    /* Each device takes two characters at least ("0,"): a list the text
     * cannot hold is refused before its array is allocated. */
    skip(r);
    if (s->n_tiles > (int64_t)(r->len - r->pos + 1) / 2)
        return fail(r, r->pos, HS_ERR_PARSE, "fewer devices listed than "
                    "the %" PRId64 " tiles", s->n_tiles);
    int64_t *list = hs_arena_alloc(r->a, (size_t)s->n_tiles * sizeof *list);
    if (!list)
        return fail(r, r->pos, HS_ERR_NOMEM, "out of memory");
    int64_t k = 0;
    size_t at = r->pos;
    do {
        int64_t d;
        if (!device_number(r, &d))
            return false;
        if (k == s->n_tiles)
            return fail(r, at, HS_ERR_PARSE, "more devices listed than the "
                        "%" PRId64 " tiles", s->n_tiles);
        list[k++] = d;
    } while (accept(r, ','));
    if (k != s->n_tiles)
        return fail(r, at, HS_ERR_PARSE, "%" PRId64 " devices listed for "
                    "%" PRId64 " tiles", k, s->n_tiles);
    s->device_list = list;
    return true;
}

static bool subgroup_kind(const char *w, size_t n, hs_sharding_kind *out)
{
    static const hs_sharding_kind kinds[] = {
        HS_SHARDING_MANUAL, HS_SHARDING_MAXIMAL, HS_SHARDING_REPLICATED,
        HS_SHARDING_UNREDUCED};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        if (is_word(w, n, hs_sharding_kind_name(kinds[k]))) {
            *out = kinds[k];
            return true;
        }
    return false;
}

/* last_tile_dims={manual, replicated} */
static bool last_tile_dims(reader *r, hs_sharding *s)
{
    if (!expect(r, '=', "after last_tile_dims") ||
        !expect(r, '{', "after last_tile_dims="))
        return false;
    do {
        const char *w;
        size_t at = (skip(r), r->pos);
        size_t n = word(r, &w);
        hs_sharding_kind k;
        if (!subgroup_kind(w, n, &k))
            return fail(r, at, HS_ERR_PARSE, "expected manual, maximal, "
                        "replicated or unreduced in last_tile_dims");
        if (s->n_subgroup_dims == HS_SHARDING_MAX_TILE_DIMS)
            return fail(r, at, HS_ERR_LIMIT, "too many last_tile_dims");
        s->subgroup[s->n_subgroup_dims++] = k;
    } while (accept(r, ','));
    return expect(r, '}', "to close last_tile_dims");
}

/* Reads past a braced value (metadata={...}), strings included. */
static bool skip_braced(reader *r)
{
    size_t at = r->pos;
    if (!expect(r, '{', "after metadata="))
        return false;
    int depth = 1;
    bool quoted = false;
    while (r->pos < r->len && depth > 0) {
        char c = r->text[r->pos++];
        if (quoted) {
            if (c == '\\' && r->pos < r->len)
                r->pos++;
            else if (c == '"')
                quoted = false;
        } else if (c == '"') {
            quoted = true;
        } else {
            depth += (c == '{') - (c == '}');
        }
    }
    return depth == 0 ||
           fail(r, at, HS_ERR_PARSE, "metadata={ is never closed");
}

/* devices=[...] and its assignment; the keyword is read already. */
static bool tiled(reader *r, hs_sharding *s, size_t at)
{
    s->kind = HS_SHARDING_TILED;
    if (!expect(r, '=', "after devices") ||
        !dims_list(r, s->tile_dims, HS_SHARDING_MAX_TILE_DIMS, &s->n_tile_dims,
                   "devices=[...] (the tile dimensions)"))
        return false;
    if (!product(s->tile_dims, s->n_tile_dims, &s->n_tiles))
        return fail(r, at, HS_ERR_LIMIT, "devices=[...] spreads over more "
                    "than 2^24 devices");
    if (peek(r) == '<') {
        r->pos++;
        return expect(r, '=', "after '<' (an iota tile assignment)") &&
               iota_form(r, s);
    }
    return device_list(r, s);
}

/* The optional items after a sharding's kind. */
static bool options(reader *r, hs_sharding *s)
{
    bool replicate_last = false;
    for (;;) {
        int c = peek(r);
        if (c == '}' || c == ',' || c < 0)
            break;
        const char *w;
        size_t at = r->pos;
        size_t n = word(r, &w);
        if (is_word(w, n, "last_tile_dim_replicate") &&
            s->kind == HS_SHARDING_TILED) {
            replicate_last = true;
        } else if (is_word(w, n, "last_tile_dims") &&
                   s->kind == HS_SHARDING_TILED) {
            if (!last_tile_dims(r, s))
                return false;
        } else if (is_word(w, n, "shard_as") || is_word(w, n, "shard_like")) {
            int64_t g;
            if (!integer(r, &g, "a shard group number"))
                return false;
        } else if (is_word(w, n, "metadata")) {
            if (!expect(r, '=', "after metadata") || !skip_braced(r))
                return false;
        } else {
            return fail(r, at, HS_ERR_PARSE, "unexpected '%.*s' in a %s "
                        "sharding", n ? (int)(n > 40 ? 40 : n) : 1,
                        n ? w : r->text + at, hs_sharding_kind_name(s->kind));
        }
    }
    if (replicate_last) {
        if (s->n_subgroup_dims)
            return fail(r, r->pos, HS_ERR_PARSE, "both last_tile_dim_"
                        "replicate and last_tile_dims");
        s->subgroup[s->n_subgroup_dims++] = HS_SHARDING_REPLICATED;
    }
    if (s->n_subgroup_dims > s->n_tile_dims)
        return fail(r, r->pos, HS_ERR_PARSE, "%d subgroup dimensions but "
                    "only %d tile dimensions", s->n_subgroup_dims,
                    s->n_tile_dims);
    return true;
}

/* One sharding that is not a tuple. */
static bool single(reader *r, hs_sharding *s)
{
    memset(s, 0, sizeof *s);
    const char *w;
    size_t at = (skip(r), r->pos);
    size_t n = word(r, &w);
    if (is_word(w, n, "replicated"))
        s->kind = HS_SHARDING_REPLICATED;
    else if (is_word(w, n, "manual"))
        s->kind = HS_SHARDING_MANUAL;
    else if (is_word(w, n, "unknown"))
        s->kind = HS_SHARDING_UNKNOWN;
    else if (is_word(w, n, "unreduced"))
        s->kind = HS_SHARDING_UNREDUCED;
    else if (is_word(w, n, "maximal")) {
        s->kind = HS_SHARDING_MAXIMAL;
        const char *d;
        size_t dat = (skip(r), r->pos);
        size_t dn = word(r, &d);
        if (!is_word(d, dn, "device"))
            return fail(r, dat, HS_ERR_PARSE, "expected device=N after "
                        "maximal");
        if (!expect(r, '=', "after device") || !device_number(r, &s->device))
            return false;
    } else if (is_word(w, n, "devices")) {
        if (!tiled(r, s, at))
            return false;
    } else {
        return fail(r, at, HS_ERR_PARSE, "expected replicated, manual, "
                    "maximal device=N, devices=[...], unknown or unreduced");
    }
    return options(r, s);
}

/* "{a}, {b}, ..." (the outer braces are the attribute's own). */
static bool tuple(reader *r, hs_sharding *s)
{
    memset(s, 0, sizeof *s);
    s->kind = HS_SHARDING_TUPLE;
    size_t save = r->pos;
    int n = 0;
    /* Count the elements first: one arena array, no growing. */
    for (int depth = 0; r->pos < r->len; r->pos++) {
        char c = r->text[r->pos];
        if (c == '"') { /* metadata strings may hold braces */
            for (r->pos++; r->pos < r->len && r->text[r->pos] != '"';
                 r->pos++)
                if (r->text[r->pos] == '\\')
                    r->pos++;
            continue;
        }
        n += c == '{' && depth == 0;
        depth += (c == '{') - (c == '}');
    }
    r->pos = save;
    s->elems = hs_arena_alloc(r->a, (size_t)(n ? n : 1) * sizeof *s->elems);
    if (!s->elems)
        return fail(r, r->pos, HS_ERR_NOMEM, "out of memory");
    do {
        if (!expect(r, '{', "to open a tuple element's sharding"))
            return false;
        if (s->n_elems == n)
            return fail(r, r->pos, HS_ERR_PARSE, "unbalanced braces");
        if (peek(r) == '{')
            return fail(r, r->pos, HS_ERR_PARSE, "a tuple sharding lists "
                        "one sharding per leaf, not nested tuples");
        if (!single(r, &s->elems[s->n_elems]))
            return false;
        s->n_elems++;
        if (!expect(r, '}', "to close a tuple element's sharding"))
            return false;
    } while (accept(r, ','));
    return true;
}

hs_status hs_sharding_parse(const char *text, hs_arena *a, hs_sharding *out,
                            hs_error *err)
{
    reader r = {.text = text ? text : "", .a = a, .err = err};
    r.len = strlen(r.text);
    memset(out, 0, sizeof *out);
    int c = peek(&r);
    if (c < 0) /* sharding={}: a tuple with no leaves */
        out->kind = HS_SHARDING_TUPLE;
    else if (c == '{')
        tuple(&r, out);
    else
        single(&r, out);
    if (r.st == HS_OK && peek(&r) >= 0)
        fail(&r, r.pos, HS_ERR_PARSE, "unexpected '%c' after the sharding",
             r.text[r.pos]);
    return r.st;
}

hs_status hs_instruction_sharding(const hs_instruction *i, hs_arena *a,
                                  hs_sharding *out, hs_error *err)
{
    hs_status st = hs_sharding_parse(i->sharding, a, out, err);
    if (st != HS_OK && err)
        snprintf(err->instruction, sizeof err->instruction, "%s", i->name);
    return st;
}

/* ---- what a sharding says -------------------------------------------------- */

int hs_sharding_data_rank(const hs_sharding *s)
{
    return s->kind == HS_SHARDING_TILED ? s->n_tile_dims - s->n_subgroup_dims
                                        : 0;
}

int64_t hs_sharding_tile_device(const hs_sharding *s, int64_t tile)
{
    if (s->kind != HS_SHARDING_TILED || tile < 0 || tile >= s->n_tiles)
        return -1;
    if (s->device_list)
        return s->device_list[tile];
    /* tile is a row-major index into the transposed iota; its digits in
     * the transposed dimensions are digits of the iota's own index. */
    int64_t digit[HS_SHARDING_MAX_TILE_DIMS];
    int64_t rest = tile;
    for (int k = s->n_iota_dims - 1; k >= 0; k--) {
        int64_t size = s->iota_dims[s->iota_perm[k]];
        digit[s->iota_perm[k]] = rest % size;
        rest /= size;
    }
    int64_t device = 0;
    for (int k = 0; k < s->n_iota_dims; k++)
        device = device * s->iota_dims[k] + digit[k];
    return device;
}

int64_t hs_sharding_device_count(const hs_sharding *s)
{
    switch (s->kind) {
    case HS_SHARDING_MAXIMAL:
        return s->device + 1;
    case HS_SHARDING_TILED: {
        if (!s->device_list)
            return s->n_tiles; /* an iota covers 0 .. n_tiles - 1 */
        int64_t most = 0;
        for (int64_t k = 0; k < s->n_tiles; k++)
            if (s->device_list[k] + 1 > most)
                most = s->device_list[k] + 1;
        return most;
    }
    case HS_SHARDING_TUPLE: {
        int64_t most = 0;
        for (int k = 0; k < s->n_elems; k++) {
            int64_t n = hs_sharding_device_count(&s->elems[k]);
            most = n > most ? n : most;
        }
        return most;
    }
    default:
        return 0;
    }
}

bool hs_sharding_equal(const hs_sharding *a, const hs_sharding *b)
{
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case HS_SHARDING_MAXIMAL:
        return a->device == b->device;
    case HS_SHARDING_TUPLE:
        if (a->n_elems != b->n_elems)
            return false;
        for (int k = 0; k < a->n_elems; k++)
            if (!hs_sharding_equal(&a->elems[k], &b->elems[k]))
                return false;
        return true;
    case HS_SHARDING_TILED:
        if (a == b)
            return true;
        if (a->n_tile_dims != b->n_tile_dims ||
            a->n_subgroup_dims != b->n_subgroup_dims ||
            memcmp(a->tile_dims, b->tile_dims,
                   (size_t)a->n_tile_dims * sizeof a->tile_dims[0]) ||
            memcmp(a->subgroup, b->subgroup,
                   (size_t)a->n_subgroup_dims * sizeof a->subgroup[0]))
            return false;
        if (!a->device_list && !b->device_list &&
            a->n_iota_dims == b->n_iota_dims &&
            !memcmp(a->iota_dims, b->iota_dims,
                    (size_t)a->n_iota_dims * sizeof a->iota_dims[0]) &&
            !memcmp(a->iota_perm, b->iota_perm,
                    (size_t)a->n_iota_dims * sizeof a->iota_perm[0]))
            return true; /* the same iota: no need to walk its tiles */
        for (int64_t t = 0; t < a->n_tiles; t++)
            if (hs_sharding_tile_device(a, t) != hs_sharding_tile_device(b, t))
                return false;
        return true;
    default:
        return true;
    }
}

const hs_sharding *hs_sharding_leaf(const hs_sharding *s, int leaf)
{
    if (s->kind != HS_SHARDING_TUPLE)
        return s;
    return leaf >= 0 && leaf < s->n_elems ? &s->elems[leaf] : NULL;
}

/* ---- shapes -------------------------------------------------------------- */

const hs_sharding *hs_sharding_element(const hs_sharding *s,
                                       const hs_shape *tuple, int64_t index)
{
    if (tuple->dtype != HS_TUPLE || index < 0 || index >= tuple->n_elems ||
        tuple->elems[index].dtype == HS_TUPLE)
        return NULL;
    int leaf = 0;
    for (int64_t k = 0; k < index; k++)
        leaf += hs_shape_leaf_count(&tuple->elems[k]);
    return hs_sharding_leaf(s, leaf);
}

typedef struct shape_map {
    const hs_sharding *s;
    bool to_global; /* dims * tiles instead of ceil(dims / tiles) */
    hs_arena *a;
    hs_error *err;
    int next_leaf;
} shape_map;

static hs_status map_array(shape_map *m, const hs_sharding *s,
                           const hs_shape *in, hs_shape *out)
{
    *out = *in;
    if (s->kind != HS_SHARDING_TILED || in->dtype == HS_TOKEN)
        return HS_OK;
    int rank = hs_sharding_data_rank(s);
    if (rank != in->rank) {
        char text[128];
        hs_shape_print(in, false, text, sizeof text);
        return hs_error_set(m->err, HS_ERR_SHAPE, "the sharding tiles %d "
                            "dimension%s but %s has %d", rank,
                            rank == 1 ? "" : "s", text, in->rank);
    }
    for (int k = 0; k < rank; k++) {
        int64_t d = in->dims[k], t = s->tile_dims[k];
        if (d < 0)
            continue; /* '?', unbounded: no size to split */
        out->dims[k] = m->to_global ? hs_sat_mul(d, t) : (d + t - 1) / t;
    }
    return HS_OK;
}

static hs_status map_shape(shape_map *m, const hs_shape *in, hs_shape *out)
{
    if (in->dtype != HS_TUPLE) {
        const hs_sharding *s = hs_sharding_leaf(m->s, m->next_leaf++);
        return map_array(m, s, in, out);
    }
    *out = *in;
    if (in->n_elems == 0)
        return HS_OK;
    out->elems = hs_arena_alloc(m->a, (size_t)in->n_elems * sizeof *in->elems);
    if (!out->elems)
        return hs_error_set(m->err, HS_ERR_NOMEM, "out of memory");
    for (int k = 0; k < in->n_elems; k++) {
        hs_status st = map_shape(m, &in->elems[k], &out->elems[k]);
        if (st != HS_OK)
            return st;
    }
    return HS_OK;
}

static hs_status map(const hs_sharding *s, const hs_shape *in, bool to_global,
                     hs_arena *a, hs_shape *out, hs_error *err)
{
    if (s->kind == HS_SHARDING_TUPLE) {
        int leaves = hs_shape_leaf_count(in);
        /* XLA lets a tuple with no leaves carry one sharding, or none. */
        bool empty_ok = leaves == 0 && s->n_elems <= 1;
        if (in->dtype != HS_TUPLE || (leaves != s->n_elems && !empty_ok)) {
            char text[128];
            hs_shape_print(in, false, text, sizeof text);
            return hs_error_set(err, HS_ERR_SHAPE, "a tuple sharding of %d "
                                "element%s on %s, which has %d lea%s",
                                s->n_elems, s->n_elems == 1 ? "" : "s", text,
                                leaves, leaves == 1 ? "f" : "ves");
        }
    }
    shape_map m = {.s = s, .to_global = to_global, .a = a, .err = err};
    return map_shape(&m, in, out);
}

hs_status hs_sharding_device_shape(const hs_sharding *s,
                                   const hs_shape *global, hs_arena *a,
                                   hs_shape *out, hs_error *err)
{
    return map(s, global, false, a, out, err);
}

hs_status hs_sharding_global_shape(const hs_sharding *s,
                                   const hs_shape *local, hs_arena *a,
                                   hs_shape *out, hs_error *err)
{
    return map(s, local, true, a, out, err);
}

hs_status hs_instruction_sharded_shapes(const hs_instruction *i,
                                        bool partitioned, hs_arena *a,
                                        hs_shape *per_device,
                                        hs_shape *global, hs_error *err)
{
    hs_sharding s;
    hs_status st = hs_instruction_sharding(i, a, &s, err);
    if (st != HS_OK)
        return st;
    if (partitioned) {
        *per_device = i->shape;
        st = hs_sharding_global_shape(&s, &i->shape, a, global, err);
    } else {
        *global = i->shape;
        st = hs_sharding_device_shape(&s, &i->shape, a, per_device, err);
    }
    if (st != HS_OK && err) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        hs_error_set(err, st, "sharding={%.120s}: %s", i->sharding, msg);
        snprintf(err->instruction, sizeof err->instruction, "%s", i->name);
    }
    return st;
}

/* ---- partitioned modules ------------------------------------------------- */

/* What XLA's SPMD partitioner leaves behind (collectives, partition-id)
 * and what it consumes (the sharding custom-calls). Async forms the
 * parser keeps as unknown opcodes are named by their text. */
static bool partitioner_output(const hs_instruction *i)
{
    if (hs_opcode_category(i->opcode) == HS_CAT_COLLECTIVE ||
        i->opcode == HS_OP_PARTITION_ID)
        return true;
    static const char *const async[] = {"all-reduce-", "all-gather-",
                                        "collective-permute-", "all-to-all-",
                                        "reduce-scatter-"};
    if (i->opcode == HS_OP_UNKNOWN && i->unknown_opcode)
        for (size_t k = 0; k < sizeof async / sizeof async[0]; k++)
            if (strncmp(i->unknown_opcode, async[k], strlen(async[k])) == 0)
                return true;
    return false;
}

static bool partitioner_input(const hs_instruction *i)
{
    static const char *const targets[] = {"Sharding", "SPMDFullToShardShape",
                                          "SPMDShardToFullShape"};
    if (i->opcode != HS_OP_CUSTOM_CALL || !i->custom_call_target)
        return false;
    for (size_t k = 0; k < sizeof targets / sizeof targets[0]; k++)
        if (strcmp(i->custom_call_target, targets[k]) == 0)
            return true;
    return false;
}

bool hs_module_is_partitioned(const hs_module *m)
{
    bool output = false;
    for (int c = 0; c < m->n_comps; c++)
        for (int k = 0; k < m->comps[c]->n_instrs; k++) {
            const hs_instruction *i = m->comps[c]->instrs[k];
            if (partitioner_input(i))
                return false;
            output |= partitioner_output(i);
        }
    return output;
}
