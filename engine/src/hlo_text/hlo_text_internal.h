/*
 * hlo_text_internal.h - shared pieces of the HLO text module: a growable
 * text buffer (printer), a bounds-checked scanner (parser), a string map
 * (name resolution), shapes and literals as text.
 *
 * Everything here is private to engine/src/hlo_text/. Names start with
 * hs__ (two underscores) to keep them apart from the public API.
 */
#ifndef HLOSCOPE_HLO_TEXT_INTERNAL_H
#define HLOSCOPE_HLO_TEXT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_ir.h"

/* Nesting limit for tuples, braces and brackets: deep enough for any real
 * dump, shallow enough that hostile input cannot exhaust the stack. */
#define HS_HLO_MAX_DEPTH 64

#include "ir/strbuf.h"

/* ------------------------------------------------------------------------ */
/* Scanner (lexer.c)                                                        */
/* ------------------------------------------------------------------------ */

typedef struct hs_scanner {
    const char *text;
    size_t len;
    size_t pos;
    hs_error *err;
    bool failed;
    /* The instruction being parsed, named in errors; NULL outside one. */
    const char *instr;
    size_t instr_len;
} hs_scanner;

void hs__scan_init(hs_scanner *s, const char *text, size_t len,
                   hs_error *err);
/* Records the first error at byte offset pos (line and column computed
 * from it) and returns false so that callers can `return hs__scan_fail()`. */
bool hs__scan_fail(hs_scanner *s, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Skips whitespace, // line comments and block comments. False (with an
 * error) on an unterminated block comment. */
bool hs__scan_skip(hs_scanner *s);
/* Next significant character after skipping, or -1 at end of input (or
 * after an error). */
int hs__scan_peek(hs_scanner *s);
/* Consumes c if it is next. */
bool hs__scan_accept(hs_scanner *s, char c);
/* Consumes c or fails with "expected 'c' <what>". */
bool hs__scan_expect(hs_scanner *s, char c, const char *what);
/* Consumes the identifier w if it is next as a whole word. */
bool hs__scan_accept_word(hs_scanner *s, const char *w);
/* Reads a name: an optional '%' then [A-Za-z0-9_.-]+. Returns its length
 * (0 when there is none, without error); *start points into the text. */
size_t hs__scan_name(hs_scanner *s, const char **start);
/* An attribute key or opcode: [A-Za-z0-9_-]+ (no '.'). */
size_t hs__scan_word(hs_scanner *s, const char **start);
bool hs__scan_int(hs_scanner *s, int64_t *out, const char *what);
/* A double-quoted string, unescaped into the arena. */
bool hs__scan_string(hs_scanner *s, hs_arena *a, const char **out);
/* A raw attribute value: a quoted string, or text with balanced (), [] and
 * {} up to a ',' or whitespace at depth 0 or an unmatched closer. [*start,
 * *end) is the value as written. Fails on an empty value. */
bool hs__scan_raw_value(hs_scanner *s, size_t *start, size_t *end,
                        const char *what);
/* Next char is `open`; consumes through its matching closer and returns
 * the text strictly between them. */
bool hs__scan_balanced(hs_scanner *s, char open, size_t *start, size_t *end);
/* 1-based line and column of byte offset pos. */
void hs__scan_line_col(const char *text, size_t len, size_t pos, int *line,
                       int *col);

/* ------------------------------------------------------------------------ */
/* String map (names.c): name -> pointer, for resolving references.         */
/* ------------------------------------------------------------------------ */

typedef struct hs_name_map {
    struct hs_name_slot *slots;
    size_t cap, n;
} hs_name_map;

void hs__map_free(hs_name_map *m);
void *hs__map_get(const hs_name_map *m, const char *key, size_t len);
/* Inserts; returns false on host OOM. An existing key is not replaced and
 * *existing (if not NULL) receives its value. */
bool hs__map_put(hs_name_map *m, const char *key, size_t len, void *value,
                 void **existing);
/* Replaces the value of an existing key; no-op when absent. */
void hs__map_set(hs_name_map *m, const char *key, size_t len, void *value);

/* ------------------------------------------------------------------------ */
/* Shapes as text (shape_text.c)                                            */
/* ------------------------------------------------------------------------ */

/* Parses an array or (nested) tuple shape with optional layouts. Tuple
 * element arrays are allocated in a. */
bool hs__parse_shape(hs_scanner *s, hs_arena *a, hs_shape *out);
/* True when the text at the scanner starts a shape: '(' or a dtype name
 * followed by '['. Does not consume. */
bool hs__at_shape(hs_scanner *s);
/* XLA text; arrays of rank >= 1 always get a layout when with_layout. */
void hs__print_shape(hs_buf *b, const hs_shape *shape, bool with_layout);

/* ------------------------------------------------------------------------ */
/* Literals (literal.c)                                                     */
/* ------------------------------------------------------------------------ */

/* Decodes constant text for shape into arena memory in the element type's
 * natural C layout (row-major). Returns NULL when the text cannot be
 * decoded (elided "{...}", tuples, f8/s4/complex types, size mismatch);
 * the caller then keeps the text. */
void *hs__literal_decode(hs_arena *a, const hs_shape *shape, const char *text,
                         size_t len, bool *one_value);
void hs__literal_print(hs_buf *b, const hs_shape *shape, const void *data);
/* Whether the literal's elements are all the same bits (none or one: true). */
bool hs__literal_uniform(const hs_shape *shape, const void *data);

/* ------------------------------------------------------------------------ */
/* Parser state shared by parser.c, attrs.c and resolve.c                   */
/* ------------------------------------------------------------------------ */

/* Grows a malloc'ed array so that it holds at least n + 1 elements. */
bool hs__vec_reserve(void **items, size_t elem_size, size_t n, size_t *cap);

/* A reference by name, resolved once everything it may name is parsed. */
typedef struct hs_name_ref {
    const char *name;
    size_t len;
    size_t pos;   /* offset in the text, for errors */
    int slot;     /* called computations: index in instruction->called */
} hs_name_ref;

/* An instruction whose operands or called computations wait for
 * resolution. */
typedef struct hs_pending {
    hs_instruction *instr;
    size_t pos;         /* offset of its name */
    size_t first, n;    /* its refs in operand_refs or called_refs */
} hs_pending;

typedef struct hs_parser {
    hs_scanner s;
    hs_module *m;
    hs_arena *a;
    /* The computation being parsed: its names and operand references. */
    hs_name_map instr_names;
    hs_pending *instrs;
    size_t n_instrs, cap_instrs;
    hs_name_ref *operand_refs;
    size_t n_operand_refs, cap_operand_refs;
    /* The module: computation names and called-computation references. */
    hs_name_map comp_names;
    hs_pending *callers;
    size_t n_callers, cap_callers;
    hs_name_ref *called_refs;
    size_t n_called_refs, cap_called_refs;
    int next_append_slot; /* per instruction */
    bool has_header;      /* "HloModule name" was given */
    /* Scratch for NUL-terminating text slices. */
    char *scratch;
    size_t cap_scratch;
} hs_parser;

/* A NUL-terminated copy of [p, p+n) in the parser's scratch buffer, valid
 * until the next call; NULL on host OOM (error recorded). */
const char *hs__parser_cstr(hs_parser *P, const char *p, size_t n);
/* Parses ", key=value" attributes after the operand list (the ',' is
 * already consumed) into the instruction's fields or its extra text. */
bool hs__parse_attribute(hs_parser *P, hs_instruction *i);
/* Parses "key=value" pairs of a module header: input_output_alias into
 * the module's io_aliases, the others into header_attrs as text. */
bool hs__parse_header_attrs(hs_parser *P);
/* Resolves operand names of the computation just parsed. */
bool hs__resolve_operands(hs_parser *P, hs_computation *c);
/* Resolves called computations, orders computations callees first, picks
 * the entry and makes instruction names unique in the module. */
bool hs__resolve_module(hs_parser *P, hs_computation *last_comp);

/* ------------------------------------------------------------------------ */
/* Printing (printer.c)                                                     */
/* ------------------------------------------------------------------------ */

void hs__print_instruction(hs_buf *b, const hs_instruction *i);

#endif
