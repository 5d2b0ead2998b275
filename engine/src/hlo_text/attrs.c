/* attrs.c - instruction attributes: the ones the engine understands go into
 * hs_instruction fields (dimensions, slice, dot dimensions, direction,
 * called computations, metadata ...); every other one is kept as text in
 * instruction->extra so that printing gives it back unchanged. */
#include <stdlib.h>
#include <string.h>

#include "hlo_text/hlo_text_internal.h"

#define MAX_LIST 64

static bool oom(hs_parser *P)
{
    return hs__scan_fail(&P->s, P->s.pos, "out of host memory");
}

static bool key_is(const char *k, size_t n, const char *w)
{
    return strlen(w) == n && memcmp(k, w, n) == 0;
}

/* "{1,0}" into out[0..*n). */
static bool parse_int_list(hs_parser *P, int64_t *out, int max, int *n,
                           const char *what)
{
    hs_scanner *s = &P->s;
    *n = 0;
    char msg[96];
    snprintf(msg, sizeof msg, "to open the list of %s", what);
    if (!hs__scan_expect(s, '{', msg))
        return false;
    if (hs__scan_accept(s, '}'))
        return true;
    for (;;) {
        size_t at = s->pos;
        int64_t v;
        if (!hs__scan_int(s, &v, "an integer"))
            return false;
        if (*n == max)
            return hs__scan_fail(s, at, "more than %d %s", max, what);
        out[(*n)++] = v;
        if (hs__scan_accept(s, ','))
            continue;
        snprintf(msg, sizeof msg, "to close the list of %s", what);
        return hs__scan_expect(s, '}', msg);
    }
}

/* slice={[0:2], [1:3:1]} */
static bool parse_slice(hs_parser *P, hs_instruction *i)
{
    hs_scanner *s = &P->s;
    hs_slice_dims *sl = hs_arena_alloc(P->a, sizeof *sl);
    if (!sl)
        return oom(P);
    if (!hs__scan_expect(s, '{', "to open slice={...}"))
        return false;
    if (!hs__scan_accept(s, '}')) {
        for (;;) {
            size_t at = s->pos;
            if (sl->rank == HS_MAX_RANK)
                return hs__scan_fail(s, at, "slice has more than %d "
                                            "dimensions", HS_MAX_RANK);
            int d = sl->rank++;
            sl->stride[d] = 1;
            if (!hs__scan_expect(s, '[', "to open a slice range [start:limit]") ||
                !hs__scan_int(s, &sl->start[d], "a slice start") ||
                !hs__scan_expect(s, ':', "after the slice start") ||
                !hs__scan_int(s, &sl->limit[d], "a slice limit"))
                return false;
            if (hs__scan_accept(s, ':') &&
                !hs__scan_int(s, &sl->stride[d], "a slice stride"))
                return false;
            if (!hs__scan_expect(s, ']', "to close the slice range"))
                return false;
            if (hs__scan_accept(s, ','))
                continue;
            if (!hs__scan_expect(s, '}', "to close slice={...}"))
                return false;
            break;
        }
    }
    i->slice = sl;
    return true;
}

static bool parse_dot_dims(hs_parser *P, hs_instruction *i, const char *key,
                           size_t key_len)
{
    if (!i->dot && !(i->dot = hs_arena_alloc(P->a, sizeof *i->dot)))
        return oom(P);
    hs_dot_dims *d = i->dot;
    int *n;
    int64_t *v;
    if (key_is(key, key_len, "lhs_batch_dims")) {
        n = &d->n_lhs_batch, v = d->lhs_batch;
    } else if (key_is(key, key_len, "lhs_contracting_dims")) {
        n = &d->n_lhs_contracting, v = d->lhs_contracting;
    } else if (key_is(key, key_len, "rhs_batch_dims")) {
        n = &d->n_rhs_batch, v = d->rhs_batch;
    } else {
        n = &d->n_rhs_contracting, v = d->rhs_contracting;
    }
    return parse_int_list(P, v, HS_MAX_RANK, n, "dot dimensions");
}

/* metadata={op_type="..." op_name="..." source_file="..." source_line=3} */
static bool parse_metadata(hs_parser *P, hs_instruction *i)
{
    hs_scanner *s = &P->s;
    if (!hs__scan_expect(s, '{', "to open metadata={...}"))
        return false;
    hs_buf rest = {0};
    bool ok = true;
    while (ok && !hs__scan_accept(s, '}')) {
        const char *k;
        size_t kn = hs__scan_word(s, &k);
        if (!kn) {
            ok = s->failed ? false
                           : hs__scan_fail(s, s->pos, "expected a metadata "
                                                      "field or '}'");
            break;
        }
        if (!hs__scan_expect(s, '=', "after the metadata field name")) {
            ok = false;
            break;
        }
        if (key_is(k, kn, "op_name")) {
            ok = hs__scan_string(s, P->a, &i->op_name);
        } else if (key_is(k, kn, "op_type")) {
            ok = hs__scan_string(s, P->a, &i->op_type);
        } else {
            size_t b, e;
            ok = hs__scan_raw_value(s, &b, &e, "a metadata field");
            if (ok) {
                if (rest.len)
                    hs__buf_putc(&rest, ' ');
                hs__buf_put(&rest, k, kn);
                hs__buf_putc(&rest, '=');
                hs__buf_put(&rest, s->text + b, e - b);
            }
        }
    }
    if (ok && rest.len) {
        i->metadata_rest = rest.oom ? NULL
                                    : hs_arena_strndup(P->a, rest.data,
                                                       rest.len);
        if (!i->metadata_rest)
            ok = oom(P);
    }
    hs__buf_free(&rest);
    return ok;
}

/* backend_config={"known_trip_count":{"n":"7"}} or a quoted string with
 * the same JSON: the trip count a while loop is known to run. */
static int64_t known_trip_count(const char *bc)
{
    const char *p = strstr(bc, "known_trip_count");
    if (!p)
        return -1;
    p = strstr(p, "\"n\"");
    if (!p)
        p = strstr(bc, "\\\"n\\\"");
    if (!p)
        return -1;
    while (*p && *p != ':')
        p++;
    while (*p && (*p == ':' || *p == ' ' || *p == '"' || *p == '\\'))
        p++;
    if (*p < '0' || *p > '9')
        return -1;
    int64_t v = 0;
    while (*p >= '0' && *p <= '9' && v < INT64_MAX / 10 - 9)
        v = v * 10 + (*p++ - '0');
    return v;
}

/* How an attribute that names computations is stored for this opcode. */
typedef enum {
    CALL_NOT,        /* not a computation attribute */
    CALL_SLOT0,      /* fixed slot: condition=, true_computation= */
    CALL_SLOT1,      /* fixed slot: body=, false_computation= */
    CALL_APPEND,     /* list in order: to_apply=, calls=, branch_computations= */
    CALL_TEXT,       /* kept as text only: not this opcode's own key */
    CALL_TEXT_REFS   /* kept as text and resolved into called */
} call_kind;

static bool has_call_keys(hs_opcode op)
{
    switch (op) {
    case HS_OP_WHILE: case HS_OP_CONDITIONAL: case HS_OP_FUSION:
    case HS_OP_CUSTOM_CALL: case HS_OP_CALL: case HS_OP_REDUCE:
    case HS_OP_REDUCE_WINDOW: case HS_OP_MAP: case HS_OP_SORT:
    case HS_OP_SCATTER: case HS_OP_ALL_REDUCE: case HS_OP_REDUCE_SCATTER:
    case HS_OP_SELECT_AND_SCATTER:
        return true;
    default:
        return false;
    }
}

static call_kind classify_call(hs_opcode op, const char *k, size_t n)
{
    static const char *const keys[] = {
        "condition", "body", "to_apply", "calls", "select", "scatter",
        "branch_computations", "called_computations", "true_computation",
        "false_computation"};
    bool is_call = false;
    for (size_t j = 0; j < sizeof keys / sizeof keys[0]; j++)
        if (key_is(k, n, keys[j]))
            is_call = true;
    if (!is_call)
        return CALL_NOT;
    switch (op) {
    case HS_OP_WHILE:
        if (key_is(k, n, "condition"))
            return CALL_SLOT0;
        if (key_is(k, n, "body"))
            return CALL_SLOT1;
        break;
    case HS_OP_CONDITIONAL:
        if (key_is(k, n, "true_computation"))
            return CALL_SLOT0;
        if (key_is(k, n, "false_computation"))
            return CALL_SLOT1;
        if (key_is(k, n, "branch_computations"))
            return CALL_APPEND;
        break;
    case HS_OP_FUSION:
        if (key_is(k, n, "calls"))
            return CALL_APPEND;
        break;
    case HS_OP_CUSTOM_CALL:
        if (key_is(k, n, "called_computations") || key_is(k, n, "to_apply"))
            return CALL_APPEND;
        break;
    case HS_OP_CALL:
        if (key_is(k, n, "to_apply") || key_is(k, n, "calls"))
            return CALL_APPEND;
        break;
    case HS_OP_SELECT_AND_SCATTER:
        if (key_is(k, n, "select"))
            return CALL_SLOT0;
        if (key_is(k, n, "scatter"))
            return CALL_SLOT1;
        break;
    default:
        if (has_call_keys(op) && key_is(k, n, "to_apply"))
            return CALL_APPEND;
        break;
    }
    return has_call_keys(op) ? CALL_TEXT : CALL_TEXT_REFS;
}

static bool add_called_ref(hs_parser *P, hs_instruction *i, hs_name_ref ref)
{
    if (!hs__vec_reserve((void **)&P->called_refs, sizeof ref,
                         P->n_called_refs, &P->cap_called_refs))
        return oom(P);
    /* The refs of one instruction are contiguous: its caller record is the
     * last one, or a new one starts here. */
    hs_pending *last = P->n_callers ? &P->callers[P->n_callers - 1] : NULL;
    if (!last || last->instr != i) {
        if (!hs__vec_reserve((void **)&P->callers, sizeof *last,
                             P->n_callers, &P->cap_callers))
            return oom(P);
        hs_pending pend = {i, P->s.instr ? (size_t)(P->s.instr - P->s.text)
                                         : ref.pos,
                           P->n_called_refs, 0};
        P->callers[P->n_callers++] = pend;
        last = &P->callers[P->n_callers - 1];
    }
    P->called_refs[P->n_called_refs++] = ref;
    last->n++;
    return true;
}

/* "%name" or "{%a, %b}"; each name becomes a ref with the given slot
 * (-1: the next free append slot). */
static bool parse_called(hs_parser *P, hs_instruction *i, int slot)
{
    hs_scanner *s = &P->s;
    bool list = hs__scan_accept(s, '{');
    if (list && hs__scan_accept(s, '}'))
        return true;
    for (;;) {
        hs_name_ref ref = {0};
        hs__scan_peek(s);
        ref.pos = s->pos;
        ref.len = hs__scan_name(s, &ref.name);
        if (!ref.len) {
            if (s->failed)
                return false;
            return hs__scan_fail(s, s->pos, "expected a computation name");
        }
        ref.slot = slot >= 0 ? slot : P->next_append_slot++;
        if (!add_called_ref(P, i, ref))
            return false;
        if (!list)
            return true;
        if (hs__scan_accept(s, ','))
            continue;
        return hs__scan_expect(s, '}', "to close the list of computations");
    }
}

static bool keep_as_text(hs_parser *P, hs_instruction *i, const char *k,
                         size_t kn, size_t b, size_t e)
{
    const char *key = hs_arena_strndup(P->a, k, kn);
    const char *val = hs__parser_cstr(P, P->s.text + b, e - b);
    if (!key || !val)
        return oom(P);
    int before = i->n_extra;
    hs_instruction_add_extra(i, key, val);
    return i->n_extra == before + 1 ? true : oom(P);
}

/* The '{...}' text of frontend_attributes= and sharding=. */
static bool parse_braced_text(hs_parser *P, const char **out)
{
    size_t b, e;
    if (!hs__scan_balanced(&P->s, '{', &b, &e))
        return false;
    *out = hs_arena_strndup(P->a, P->s.text + b, e - b);
    return *out ? true : oom(P);
}

static bool parse_word_value(hs_parser *P, const char **out, const char *what)
{
    size_t b, e;
    if (!hs__scan_raw_value(&P->s, &b, &e, what))
        return false;
    *out = hs_arena_strndup(P->a, P->s.text + b, e - b);
    return *out ? true : oom(P);
}

bool hs__parse_attribute(hs_parser *P, hs_instruction *i)
{
    hs_scanner *s = &P->s;
    const char *k;
    hs__scan_peek(s);
    size_t kn = hs__scan_word(s, &k);
    if (!kn) {
        if (s->failed)
            return false;
        return hs__scan_fail(s, s->pos, "expected an attribute name after "
                                        "','");
    }
    char what[96];
    snprintf(what, sizeof what, "after attribute name '%.*s'",
             (int)(kn > 60 ? 60 : kn), k);
    if (!hs__scan_expect(s, '=', what))
        return false;
    hs_opcode op = i->opcode;
    int c = hs__scan_peek(s);
    int64_t list[MAX_LIST];
    int n;

    if ((key_is(k, kn, "dimensions") && op != HS_OP_DYNAMIC_SLICE &&
         op != HS_OP_IOTA && c == '{') ||
        (key_is(k, kn, "dynamic_slice_sizes") && op == HS_OP_DYNAMIC_SLICE)) {
        if (!parse_int_list(P, list, MAX_LIST, &n, "dimensions"))
            return false;
        hs_instruction_set_dims(i, list, n);
        return n == 0 || i->dims ? true : oom(P);
    }
    if (key_is(k, kn, "iota_dimension") && op == HS_OP_IOTA) {
        int64_t v;
        if (!hs__scan_int(s, &v, "an iota dimension"))
            return false;
        hs_instruction_set_dims(i, &v, 1);
        return i->dims ? true : oom(P);
    }
    if ((key_is(k, kn, "exponent_bits") || key_is(k, kn, "mantissa_bits")) &&
        op == HS_OP_REDUCE_PRECISION) {
        /* dims = {exponent_bits, mantissa_bits} */
        int64_t v, bits[2] = {0, 0};
        if (!hs__scan_int(s, &v, "a number of bits"))
            return false;
        if (i->n_dims == 2)
            memcpy(bits, i->dims, sizeof bits);
        bits[key_is(k, kn, "mantissa_bits")] = v;
        hs_instruction_set_dims(i, bits, 2);
        return i->dims ? true : oom(P);
    }
    if (key_is(k, kn, "index") && op == HS_OP_GET_TUPLE_ELEMENT)
        return hs__scan_int(s, &i->index, "a tuple index");
    if (key_is(k, kn, "slice") && op == HS_OP_SLICE)
        return parse_slice(P, i);
    if (op == HS_OP_DOT && (key_is(k, kn, "lhs_batch_dims") ||
                            key_is(k, kn, "lhs_contracting_dims") ||
                            key_is(k, kn, "rhs_batch_dims") ||
                            key_is(k, kn, "rhs_contracting_dims")))
        return parse_dot_dims(P, i, k, kn);
    if (key_is(k, kn, "direction") && op == HS_OP_COMPARE) {
        const char *d;
        size_t at = s->pos;
        size_t dn = hs__scan_word(s, &d);
        if (!dn || !hs_direction_parse(d, dn, &i->direction))
            return hs__scan_fail(s, at, "expected a comparison direction "
                                        "(EQ, NE, LT, LE, GT or GE)");
        return true;
    }
    if (key_is(k, kn, "type") && op == HS_OP_COMPARE)
        return parse_word_value(P, &i->compare_type, "type");
    if (key_is(k, kn, "kind") && op == HS_OP_FUSION)
        return parse_word_value(P, &i->fusion_kind, "kind");
    if (key_is(k, kn, "custom_call_target") && op == HS_OP_CUSTOM_CALL &&
        c == '"')
        return hs__scan_string(s, P->a, &i->custom_call_target);
    if (key_is(k, kn, "metadata") && c == '{')
        return parse_metadata(P, i);
    if (key_is(k, kn, "frontend_attributes") && c == '{')
        return parse_braced_text(P, &i->frontend_attributes);
    if (key_is(k, kn, "sharding") && c == '{')
        return parse_braced_text(P, &i->sharding);
    if (key_is(k, kn, "backend_config")) {
        if (!parse_word_value(P, &i->backend_config, "backend_config"))
            return false;
        if (op == HS_OP_WHILE)
            i->known_trip_count = known_trip_count(i->backend_config);
        return true;
    }

    if (key_is(k, kn, "literal") && op == HS_OP_CUSTOM_CALL) {
        /* literal=s32[] 1: a shape, then its value; kept as text. */
        size_t b = s->pos, vb, ve;
        hs_shape shape;
        if (!hs__parse_shape(s, P->a, &shape) ||
            !hs__scan_raw_value(s, &vb, &ve, "the literal's value"))
            return false;
        return keep_as_text(P, i, k, kn, b, ve);
    }

    switch (classify_call(op, k, kn)) {
    case CALL_SLOT0:
        return parse_called(P, i, 0);
    case CALL_SLOT1:
        return parse_called(P, i, 1);
    case CALL_APPEND:
        return parse_called(P, i, -1);
    case CALL_TEXT_REFS: {
        size_t b = s->pos;
        if (!parse_called(P, i, -1))
            return false;
        return keep_as_text(P, i, k, kn, b, s->pos);
    }
    case CALL_TEXT:
    case CALL_NOT:
        break;
    }
    size_t b, e;
    snprintf(what, sizeof what, "attribute '%.*s'", (int)(kn > 60 ? 60 : kn),
             k);
    if (!hs__scan_raw_value(s, &b, &e, what))
        return false;
    return keep_as_text(P, i, k, kn, b, e);
}

/* A shape index "{2,0}" into path[0..*len). */
static bool parse_index(hs_parser *P, int *path, int *len)
{
    hs_scanner *s = &P->s;
    *len = 0;
    if (!hs__scan_expect(s, '{', "to open a shape index"))
        return false;
    if (hs__scan_accept(s, '}'))
        return true;
    for (;;) {
        size_t at = s->pos;
        int64_t v;
        if (!hs__scan_int(s, &v, "an index"))
            return false;
        if (v < 0 || v > 1 << 20)
            return hs__scan_fail(s, at, "index %lld out of range",
                                 (long long)v);
        if (*len == HS_MAX_ALIAS_INDEX)
            return hs__scan_fail(s, at, "a shape index deeper than %d",
                                 HS_MAX_ALIAS_INDEX);
        path[(*len)++] = (int)v;
        if (!hs__scan_accept(s, ','))
            return hs__scan_expect(s, '}', "to close a shape index");
    }
}

/* One "{output}: (param, {index}, may-alias)" entry; the kind may be
 * missing, as older XLA prints it. */
static bool parse_io_alias_entry(hs_parser *P, hs_io_alias *d)
{
    hs_scanner *s = &P->s;
    memset(d, 0, sizeof *d);
    if (!parse_index(P, d->output, &d->output_len) ||
        !hs__scan_expect(s, ':', "after the output index") ||
        !hs__scan_expect(s, '(', "to open (parameter, {index}, kind)"))
        return false;
    size_t at = s->pos;
    int64_t v;
    if (!hs__scan_int(s, &v, "a parameter number"))
        return false;
    if (v < 0 || v > 1 << 20)
        return hs__scan_fail(s, at, "parameter %lld out of range",
                             (long long)v);
    d->param = (int)v;
    if (!hs__scan_expect(s, ',', "after the parameter number") ||
        !parse_index(P, d->param_index, &d->param_index_len))
        return false;
    if (hs__scan_accept(s, ',')) {
        hs__scan_peek(s);
        const char *k;
        at = s->pos;
        size_t kn = hs__scan_word(s, &k);
        if (key_is(k, kn, "must-alias"))
            d->must_alias = true;
        else if (!key_is(k, kn, "may-alias"))
            return hs__scan_fail(s, at, "expected may-alias or must-alias");
    }
    return hs__scan_expect(s, ')', "to close (parameter, {index}, kind)");
}

/* input_output_alias={ {1}: (2, {}, may-alias), ... } into the module. */
static bool parse_io_aliases(hs_parser *P)
{
    hs_scanner *s = &P->s;
    hs_io_alias *list = NULL;
    int n = 0, cap = 0;
    bool ok = hs__scan_expect(s, '{', "to open input_output_alias={...}");
    if (ok && !hs__scan_accept(s, '}')) {
        for (;;) {
            if (n == cap) {
                cap = cap ? cap * 2 : 8;
                hs_io_alias *q = realloc(list, sizeof *q * (size_t)cap);
                if (!q) {
                    ok = oom(P);
                    break;
                }
                list = q;
            }
            if (!(ok = parse_io_alias_entry(P, &list[n])))
                break;
            n++;
            if (!hs__scan_accept(s, ',')) {
                ok = hs__scan_expect(s, '}',
                                     "to close input_output_alias={...}");
                break;
            }
        }
    }
    if (ok && !hs_module_set_io_aliases(P->m, list, n))
        ok = oom(P);
    free(list);
    return ok;
}

bool hs__parse_header_attrs(hs_parser *P)
{
    hs_scanner *s = &P->s;
    hs_buf attrs = {0};
    bool ok = true;
    while (ok && hs__scan_accept(s, ',')) {
        const char *k;
        hs__scan_peek(s);
        size_t kn = hs__scan_word(s, &k);
        size_t b, e;
        if (!kn) {
            ok = s->failed ? false
                           : hs__scan_fail(s, s->pos, "expected a module "
                                                      "attribute after ','");
            break;
        }
        ok = hs__scan_expect(s, '=', "after the module attribute name");
        if (ok && key_is(k, kn, "input_output_alias")) {
            ok = parse_io_aliases(P);
            continue;
        }
        ok = ok && hs__scan_raw_value(s, &b, &e, "a module attribute");
        if (ok) {
            if (attrs.len)
                hs__buf_put(&attrs, ", ", 2);
            hs__buf_put(&attrs, k, kn);
            hs__buf_putc(&attrs, '=');
            hs__buf_put(&attrs, s->text + b, e - b);
        }
    }
    if (ok && attrs.len) {
        P->m->header_attrs =
            attrs.oom ? NULL : hs_arena_strndup(P->a, attrs.data, attrs.len);
        if (!P->m->header_attrs)
            ok = oom(P);
    }
    hs__buf_free(&attrs);
    return ok;
}
