/* parser.c - recursive descent over XLA's HLO text grammar:
 *
 *   module      := ["HloModule" name {"," key "=" value}] computation+
 *   computation := ["ENTRY"] ["%"]name [signature] "{" instruction+ "}"
 *   signature   := "(" [name ":" shape {"," name ":" shape}] ")" "->" shape
 *   instruction := ["ROOT"] ["%"]name "=" shape opcode "(" operands ")"
 *                  {"," key "=" value}
 *   operand     := [shape] ["%"]name
 *
 * Names are resolved after the fact: operands when their computation ends
 * (forward references inside a computation are fine), called computations
 * when the module ends (callees may come before or after their callers). */
#include <stdlib.h>
#include <string.h>

#include "hlo_text/hlo_text_internal.h"

/* The shortest parameter instruction: "p=()parameter(0)". */
#define HS_MIN_PARAMETER_TEXT 16

const char *hs__parser_cstr(hs_parser *P, const char *p, size_t n)
{
    if (n + 1 > P->cap_scratch) {
        size_t cap = P->cap_scratch ? P->cap_scratch : 256;
        while (cap < n + 1)
            cap *= 2;
        char *q = realloc(P->scratch, cap);
        if (!q) {
            hs__scan_fail(&P->s, P->s.pos, "out of host memory");
            return NULL;
        }
        P->scratch = q;
        P->cap_scratch = cap;
    }
    memcpy(P->scratch, p, n);
    P->scratch[n] = '\0';
    return P->scratch;
}

static bool oom(hs_parser *P)
{
    return hs__scan_fail(&P->s, P->s.pos, "out of host memory");
}

/* "(" literal ")" of a constant: decoded when the type allows, else kept. */
static bool parse_constant_body(hs_parser *P, hs_instruction *i)
{
    size_t b, e;
    if (!hs__scan_balanced(&P->s, '(', &b, &e))
        return false;
    const char *t = P->s.text;
    while (b < e && (t[b] == ' ' || t[b] == '\n' || t[b] == '\t' ||
                     t[b] == '\r'))
        b++;
    while (e > b && (t[e - 1] == ' ' || t[e - 1] == '\n' ||
                     t[e - 1] == '\t' || t[e - 1] == '\r'))
        e--;
    if (b == e)
        return hs__scan_fail(&P->s, b, "expected a literal in constant()");
    i->literal = hs__literal_decode(P->a, &i->shape, t + b, e - b,
                                    &i->literal_splat);
    if (!i->literal) {
        i->literal_text = hs_arena_strndup(P->a, t + b, e - b);
        if (!i->literal_text)
            return oom(P);
    }
    return true;
}

static bool parse_operands(hs_parser *P, hs_pending *pend)
{
    hs_scanner *s = &P->s;
    if (!hs__scan_expect(s, '(', "to open the operand list"))
        return false;
    pend->first = P->n_operand_refs;
    if (hs__scan_accept(s, ')'))
        return true;
    for (;;) {
        if (hs__at_shape(s)) {
            hs_shape ignored; /* the operand's own shape is authoritative */
            if (!hs__parse_shape(s, P->a, &ignored))
                return false;
        }
        hs_name_ref ref = {0};
        hs__scan_peek(s);
        ref.pos = s->pos;
        ref.len = hs__scan_name(s, &ref.name);
        if (!ref.len) {
            if (s->failed)
                return false;
            return hs__scan_fail(s, s->pos, "expected an operand name");
        }
        if (!hs__vec_reserve((void **)&P->operand_refs, sizeof ref,
                             P->n_operand_refs, &P->cap_operand_refs))
            return oom(P);
        P->operand_refs[P->n_operand_refs++] = ref;
        pend->n++;
        if (hs__scan_accept(s, ','))
            continue;
        return hs__scan_expect(s, ')', "to close the operand list");
    }
}

static bool parse_instruction(hs_parser *P, hs_computation *c, bool *is_root)
{
    hs_scanner *s = &P->s;
    *is_root = false;
    size_t at = s->pos;
    if (hs__scan_accept_word(s, "ROOT")) {
        if (hs__scan_peek(s) == '=')
            s->pos = at; /* an instruction named ROOT */
        else
            *is_root = true;
    }
    const char *name;
    hs__scan_peek(s);
    size_t name_pos = s->pos;
    size_t name_len = hs__scan_name(s, &name);
    if (!name_len) {
        if (s->failed)
            return false;
        return hs__scan_fail(s, s->pos, "expected an instruction name or "
                                        "'}' to close computation '%s'",
                             c->name);
    }
    s->instr = name;
    s->instr_len = name_len;
    char what[200];
    snprintf(what, sizeof what, "after instruction name '%.*s'",
             (int)(name_len > 150 ? 150 : name_len), name);
    if (!hs__scan_expect(s, '=', what))
        return false;
    hs_shape shape;
    if (!hs__parse_shape(s, P->a, &shape))
        return false;
    const char *opname;
    size_t op_len = hs__scan_word(s, &opname);
    if (!op_len) {
        if (s->failed)
            return false;
        return hs__scan_fail(s, s->pos, "expected an opcode after the shape");
    }
    hs_opcode op;
    bool known = hs_opcode_parse(opname, op_len, &op);
    if (!known)
        op = HS_OP_UNKNOWN;

    hs_instruction *i;
    hs_pending pend = {0};
    pend.pos = name_pos;
    const char *cname = hs__parser_cstr(P, name, name_len);
    if (!cname)
        return false;
    if (op == HS_OP_PARAMETER) {
        int64_t number;
        if (!hs__scan_expect(s, '(', "after 'parameter'"))
            return false;
        size_t num_pos = s->pos;
        if (!hs__scan_int(s, &number, "a parameter number"))
            return false;
        /* Parameters 0..number each take an instruction of at least
         * HS_MIN_PARAMETER_TEXT bytes ("p=()parameter(0)"), so a number the
         * text cannot hold is refused before its slots are made. */
        if (number < 0 || number > (1 << 24) ||
            (uint64_t)number >= s->len / HS_MIN_PARAMETER_TEXT)
            return hs__scan_fail(s, num_pos, "parameter number %lld is out "
                                             "of range: %zu bytes of text hold "
                                             "at most %zu parameters",
                                 (long long)number, s->len,
                                 s->len / HS_MIN_PARAMETER_TEXT);
        if (number < c->n_params && c->params[number])
            return hs__scan_fail(s, num_pos, "parameter(%lld) is defined "
                                             "twice in computation '%s'",
                                 (long long)number, c->name);
        if (!hs__scan_expect(s, ')', "to close 'parameter('"))
            return false;
        i = hs_computation_add_parameter(c, number, &shape, cname);
        if (!i)
            return oom(P);
        pend.first = P->n_operand_refs;
    } else {
        i = hs_computation_add(c, op, &shape, NULL, 0, cname);
        if (!i)
            return oom(P);
        if (!known) {
            i->unknown_opcode = hs_arena_strndup(P->a, opname, op_len);
            if (!i->unknown_opcode)
                return oom(P);
        }
        if (op == HS_OP_CONSTANT) {
            if (!parse_constant_body(P, i))
                return false;
            pend.first = P->n_operand_refs;
        } else if (!parse_operands(P, &pend)) {
            return false;
        }
    }
    pend.instr = i;

    void *existing;
    if (!hs__map_put(&P->instr_names, name, name_len, i, &existing))
        return oom(P);
    if (existing)
        return hs__scan_fail(s, name_pos, "instruction '%.*s' is defined "
                                          "twice in computation '%s'",
                             (int)(name_len > 150 ? 150 : name_len), name,
                             c->name);

    P->next_append_slot = 0;
    while (hs__scan_accept(s, ','))
        if (!hs__parse_attribute(P, i))
            return false;
    if (s->failed)
        return false;

    if (!hs__vec_reserve((void **)&P->instrs, sizeof pend, P->n_instrs,
                         &P->cap_instrs))
        return oom(P);
    P->instrs[P->n_instrs++] = pend;
    s->instr = NULL;
    return true;
}

/* "(p0: f32[2], p1: s32[]) -> f32[2]": checked for syntax, then ignored,
 * since the parameter instructions carry the same shapes. */
static bool parse_signature(hs_parser *P)
{
    hs_scanner *s = &P->s;
    s->pos++; /* '(' */
    if (!hs__scan_accept(s, ')')) {
        for (;;) {
            const char *n;
            if (!hs__scan_name(s, &n)) {
                if (s->failed)
                    return false;
                return hs__scan_fail(s, s->pos, "expected a parameter name "
                                                "in the signature");
            }
            if (!hs__scan_expect(s, ':', "after the parameter name"))
                return false;
            hs_shape ignored;
            if (!hs__parse_shape(s, P->a, &ignored))
                return false;
            if (hs__scan_accept(s, ','))
                continue;
            if (!hs__scan_expect(s, ')', "to close the signature"))
                return false;
            break;
        }
    }
    if (!hs__scan_expect(s, '-', "of '->' after the signature"))
        return false;
    if (s->pos >= s->len || s->text[s->pos] != '>')
        return hs__scan_fail(s, s->pos, "expected '>' of '->' after the "
                                        "signature");
    s->pos++;
    hs_shape ignored;
    return hs__parse_shape(s, P->a, &ignored);
}

static bool parse_computation(hs_parser *P, hs_computation **out)
{
    hs_scanner *s = &P->s;
    bool is_entry = hs__scan_accept_word(s, "ENTRY");
    const char *name;
    hs__scan_peek(s);
    size_t name_pos = s->pos;
    size_t name_len = hs__scan_name(s, &name);
    if (!name_len) {
        if (s->failed)
            return false;
        return hs__scan_fail(s, s->pos, is_entry
                                            ? "expected a computation name "
                                              "after 'ENTRY'"
                                            : "expected a computation "
                                              "(a name, or 'ENTRY')");
    }
    if (hs__scan_peek(s) == '(' && !parse_signature(P))
        return false;
    char what[200];
    snprintf(what, sizeof what, "to open computation '%.*s'",
             (int)(name_len > 150 ? 150 : name_len), name);
    hs__scan_peek(s);
    size_t open_pos = s->pos;
    if (!hs__scan_expect(s, '{', what))
        return false;
    if (is_entry && P->m->entry)
        return hs__scan_fail(s, name_pos, "a second ENTRY computation '%.*s'",
                             (int)(name_len > 150 ? 150 : name_len), name);
    const char *cname = hs__parser_cstr(P, name, name_len);
    if (!cname)
        return false;
    hs_computation *c = hs_module_add_computation(P->m, cname, is_entry);
    if (!c)
        return oom(P);
    void *existing;
    if (!hs__map_put(&P->comp_names, name, name_len, c, &existing))
        return oom(P);
    if (existing)
        return hs__scan_fail(s, name_pos, "computation '%s' is defined twice",
                             c->name);

    hs__map_free(&P->instr_names);
    P->n_instrs = 0;
    P->n_operand_refs = 0;
    hs_instruction *root = NULL;
    size_t root_pos = 0;
    for (;;) {
        int ch = hs__scan_peek(s);
        if (ch == '}') {
            s->pos++;
            break;
        }
        if (ch < 0) {
            if (s->failed)
                return false;
            int l, col;
            hs__scan_line_col(s->text, s->len, open_pos, &l, &col);
            return hs__scan_fail(s, s->pos, "expected '}' to close "
                                            "computation '%s' opened at "
                                            "%d:%d", c->name, l, col);
        }
        bool is_root;
        size_t at = s->pos;
        if (!parse_instruction(P, c, &is_root))
            return false;
        if (is_root) {
            if (root) {
                int l, col;
                hs__scan_line_col(s->text, s->len, root_pos, &l, &col);
                return hs__scan_fail(s, at, "a second ROOT in computation "
                                            "'%s' (the first is at %d:%d)",
                                     c->name, l, col);
            }
            root = c->instrs[c->n_instrs - 1];
            root_pos = at;
        }
    }
    if (c->n_instrs == 0)
        return hs__scan_fail(s, name_pos, "computation '%s' has no "
                                          "instructions", c->name);
    c->root = root ? root : c->instrs[c->n_instrs - 1];
    if (!hs__resolve_operands(P, c))
        return false;
    /* XLA appends ", execution_thread=..." to computations of other
     * threads; the engine has one thread, so it is read and dropped. */
    size_t after = s->pos;
    if (hs__scan_accept(s, ',')) {
        size_t b, e;
        if (!hs__scan_accept_word(s, "execution_thread") ||
            !hs__scan_expect(s, '=', "after 'execution_thread'") ||
            !hs__scan_raw_value(s, &b, &e, "execution_thread")) {
            if (!s->failed)
                hs__scan_fail(s, after, "unexpected ',' after computation");
            return false;
        }
    }
    *out = c;
    return true;
}

static bool parse_module(hs_parser *P)
{
    hs_scanner *s = &P->s;
    if (hs__scan_accept_word(s, "HloModule")) {
        const char *name;
        size_t n = hs__scan_name(s, &name);
        if (!n) {
            if (s->failed)
                return false;
            return hs__scan_fail(s, s->pos, "expected a module name after "
                                            "'HloModule'");
        }
        P->m->name = hs_arena_strndup(P->a, name, n);
        P->has_header = true;
        if (!P->m->name || !hs__parse_header_attrs(P))
            return false;
    }
    hs_computation *last = NULL;
    for (;;) {
        int ch = hs__scan_peek(s);
        if (ch < 0) {
            if (s->failed)
                return false;
            break;
        }
        size_t at = s->pos;
        if (hs__scan_accept_word(s, "HloModule"))
            return hs__scan_fail(s, at, "a second 'HloModule' header: "
                                        "separate modules with a line "
                                        "'// -----'");
        if (!parse_computation(P, &last))
            return false;
    }
    if (!last)
        return hs__scan_fail(s, s->pos, "expected a computation (a name, or "
                                        "'ENTRY')");
    return hs__resolve_module(P, last);
}

static void parser_free(hs_parser *P)
{
    hs__map_free(&P->instr_names);
    hs__map_free(&P->comp_names);
    free(P->instrs);
    free(P->operand_refs);
    free(P->callers);
    free(P->called_refs);
    free(P->scratch);
}

hs_module *hs_hlo_parse(const char *text, size_t len, hs_error *err)
{
    hs_error_clear(err);
    hs_parser P;
    memset(&P, 0, sizeof P);
    hs__scan_init(&P.s, text, len, err);
    P.m = hs_module_new(NULL);
    if (!P.m) {
        hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
        return NULL;
    }
    P.a = P.m->arena;
    /* Names, strings and raw attribute values are kept as C strings: a NUL
     * byte would cut one short and the printed text would not parse. */
    const char *nul = text ? memchr(text, '\0', len) : NULL;
    bool ok = nul ? hs__scan_fail(&P.s, (size_t)(nul - text),
                                  "a NUL byte is not HLO text")
                  : parse_module(&P);
    parser_free(&P);
    if (!ok) {
        hs_module_free(P.m);
        if (err && err->status == HS_OK)
            hs_error_set(err, HS_ERR_PARSE, "invalid HLO text");
        return NULL;
    }
    return P.m;
}
