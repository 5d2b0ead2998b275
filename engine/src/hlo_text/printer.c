/* printer.c - modules in XLA's long form:
 *
 *   HloModule name, entry_computation_layout={...}
 *
 *   %add (x: f32[], y: f32[]) -> f32[] {
 *     %x = f32[] parameter(0)
 *     ...
 *   }
 *
 *   ENTRY %main (p: f32[2]) -> f32[] {
 *     ROOT %r = f32[] reduce(f32[2]{0} %p, f32[] %zero), dimensions={0}, to_apply=%add
 *   }
 *
 * Attributes follow the order XLA prints them in: the opcode's own
 * attributes, other attributes kept as text, called computations, then
 * sharding, frontend_attributes, metadata and backend_config. Everything
 * appends to one growable buffer, so printing is linear in the output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_text/hlo_text_internal.h"

static void put_name(hs_buf *b, const char *name)
{
    hs__buf_putc(b, '%');
    hs__buf_puts(b, name);
}

static void put_key(hs_buf *b, const char *key)
{
    hs__buf_put(b, ", ", 2);
    hs__buf_puts(b, key);
    hs__buf_putc(b, '=');
}

static void put_int_list(hs_buf *b, const int64_t *v, int n)
{
    hs__buf_putc(b, '{');
    for (int k = 0; k < n; k++) {
        if (k)
            hs__buf_putc(b, ',');
        hs__buf_put_int(b, v[k]);
    }
    hs__buf_putc(b, '}');
}

static void put_called_list(hs_buf *b, hs_computation *const *c, int n)
{
    hs__buf_putc(b, '{');
    for (int k = 0; k < n; k++) {
        if (k)
            hs__buf_put(b, ", ", 2);
        put_name(b, c[k]->name);
    }
    hs__buf_putc(b, '}');
}

/* Opcodes whose dimensions= XLA prints even when empty. */
static bool always_has_dimensions(hs_opcode op)
{
    switch (op) {
    case HS_OP_BROADCAST: case HS_OP_TRANSPOSE: case HS_OP_REDUCE:
    case HS_OP_CONCATENATE: case HS_OP_REVERSE: case HS_OP_MAP:
    case HS_OP_SORT:
        return true;
    default:
        return false;
    }
}

static void put_operands(hs_buf *b, const hs_instruction *i)
{
    switch (i->opcode) {
    case HS_OP_PARAMETER:
        hs__buf_put_int(b, i->index);
        return;
    case HS_OP_CONSTANT:
        /* A zero-element array has no data to decode: "{}" (or "{ {}, {}
         * }" for f32[2,0]) all the same. */
        if (i->literal && i->literal_splat && i->shape.rank > 0 &&
            hs__literal_uniform(&i->shape, i->literal)) {
            /* as written: one value for every element */
            hs_shape scalar = i->shape;
            scalar.rank = 0;
            hs__literal_print(b, &scalar, i->literal);
        } else if (i->literal || (i->shape.dtype != HS_TUPLE && i->shape.rank > 0 &&
                                  hs_shape_elements(&i->shape) == 0))
            hs__literal_print(b, &i->shape, i->literal);
        else if (i->literal_text)
            hs__buf_puts(b, i->literal_text);
        return;
    default:
        break;
    }
    for (int k = 0; k < i->n_operands; k++) {
        if (k)
            hs__buf_put(b, ", ", 2);
        const hs_instruction *o = i->operands[k];
        hs__print_shape(b, &o->shape, true);
        hs__buf_putc(b, ' ');
        put_name(b, o->name);
    }
}

static void put_own_attributes(hs_buf *b, const hs_instruction *i)
{
    hs_opcode op = i->opcode;
    if (op == HS_OP_DYNAMIC_SLICE) {
        put_key(b, "dynamic_slice_sizes");
        put_int_list(b, i->dims, i->n_dims);
    } else if (op == HS_OP_IOTA) {
        if (i->n_dims >= 1) {
            put_key(b, "iota_dimension");
            hs__buf_put_int(b, i->dims[0]);
        }
    } else if (op == HS_OP_REDUCE_PRECISION) {
        if (i->n_dims == 2) {
            put_key(b, "exponent_bits");
            hs__buf_put_int(b, i->dims[0]);
            put_key(b, "mantissa_bits");
            hs__buf_put_int(b, i->dims[1]);
        }
    } else if (i->n_dims > 0 || always_has_dimensions(op)) {
        put_key(b, "dimensions");
        put_int_list(b, i->dims, i->n_dims);
    }
    if (op == HS_OP_GET_TUPLE_ELEMENT) {
        put_key(b, "index");
        hs__buf_put_int(b, i->index);
    }
    if (op == HS_OP_SLICE && i->slice) {
        put_key(b, "slice");
        hs__buf_putc(b, '{');
        for (int d = 0; d < i->slice->rank; d++) {
            if (d)
                hs__buf_put(b, ", ", 2);
            hs__buf_putc(b, '[');
            hs__buf_put_int(b, i->slice->start[d]);
            hs__buf_putc(b, ':');
            hs__buf_put_int(b, i->slice->limit[d]);
            if (i->slice->stride[d] != 1) {
                hs__buf_putc(b, ':');
                hs__buf_put_int(b, i->slice->stride[d]);
            }
            hs__buf_putc(b, ']');
        }
        hs__buf_putc(b, '}');
    }
    if (op == HS_OP_DOT && i->dot) {
        /* As XLA: empty batch dimensions are left out. */
        const hs_dot_dims *d = i->dot;
        if (d->n_lhs_batch) {
            put_key(b, "lhs_batch_dims");
            put_int_list(b, d->lhs_batch, d->n_lhs_batch);
        }
        put_key(b, "lhs_contracting_dims");
        put_int_list(b, d->lhs_contracting, d->n_lhs_contracting);
        if (d->n_rhs_batch) {
            put_key(b, "rhs_batch_dims");
            put_int_list(b, d->rhs_batch, d->n_rhs_batch);
        }
        put_key(b, "rhs_contracting_dims");
        put_int_list(b, d->rhs_contracting, d->n_rhs_contracting);
    }
    if (op == HS_OP_COMPARE && i->direction != HS_DIR_NONE) {
        put_key(b, "direction");
        hs__buf_puts(b, hs_direction_name(i->direction));
    }
    if (op == HS_OP_COMPARE && i->compare_type) {
        put_key(b, "type");
        hs__buf_puts(b, i->compare_type);
    }
    if (op == HS_OP_FUSION && i->fusion_kind) {
        put_key(b, "kind");
        hs__buf_puts(b, i->fusion_kind);
    }
    if (op == HS_OP_CUSTOM_CALL && i->custom_call_target) {
        put_key(b, "custom_call_target");
        hs__buf_put_quoted(b, i->custom_call_target);
    }
}

/* Called computations under the key XLA uses for the opcode. Opcodes
 * without one keep such attributes in extra (printed as text). */
static void put_called(hs_buf *b, const hs_instruction *i)
{
    if (i->n_called == 0)
        return;
    hs_computation *const *c = i->called;
    int n = i->n_called;
    switch (i->opcode) {
    case HS_OP_WHILE:
        put_key(b, "condition");
        put_name(b, c[0]->name);
        if (n > 1) {
            put_key(b, "body");
            put_name(b, c[1]->name);
        }
        return;
    case HS_OP_CONDITIONAL:
        if (n == 2 && i->n_operands > 0 &&
            i->operands[0]->shape.dtype == HS_PRED) {
            put_key(b, "true_computation");
            put_name(b, c[0]->name);
            put_key(b, "false_computation");
            put_name(b, c[1]->name);
        } else {
            put_key(b, "branch_computations");
            put_called_list(b, c, n);
        }
        return;
    case HS_OP_FUSION:
        put_key(b, "calls");
        break;
    case HS_OP_CUSTOM_CALL:
        put_key(b, "called_computations");
        put_called_list(b, c, n);
        return;
    case HS_OP_SELECT_AND_SCATTER:
        put_key(b, "select");
        put_name(b, c[0]->name);
        if (n > 1) {
            put_key(b, "scatter");
            put_name(b, c[1]->name);
        }
        return;
    case HS_OP_CALL: case HS_OP_REDUCE: case HS_OP_REDUCE_WINDOW:
    case HS_OP_MAP: case HS_OP_SORT: case HS_OP_SCATTER:
    case HS_OP_ALL_REDUCE: case HS_OP_REDUCE_SCATTER:
        put_key(b, "to_apply");
        break;
    default:
        return;
    }
    if (n == 1)
        put_name(b, c[0]->name);
    else
        put_called_list(b, c, n);
}

static void put_trailing_attributes(hs_buf *b, const hs_instruction *i)
{
    if (i->sharding) {
        put_key(b, "sharding");
        hs__buf_putc(b, '{');
        hs__buf_puts(b, i->sharding);
        hs__buf_putc(b, '}');
    }
    if (i->frontend_attributes) {
        put_key(b, "frontend_attributes");
        hs__buf_putc(b, '{');
        hs__buf_puts(b, i->frontend_attributes);
        hs__buf_putc(b, '}');
    }
    if (i->op_type || i->op_name || i->metadata_rest) {
        put_key(b, "metadata");
        hs__buf_putc(b, '{');
        bool sep = false;
        if (i->op_type) {
            hs__buf_puts(b, "op_type=");
            hs__buf_put_quoted(b, i->op_type);
            sep = true;
        }
        if (i->op_name) {
            if (sep)
                hs__buf_putc(b, ' ');
            hs__buf_puts(b, "op_name=");
            hs__buf_put_quoted(b, i->op_name);
            sep = true;
        }
        if (i->metadata_rest) {
            if (sep)
                hs__buf_putc(b, ' ');
            hs__buf_puts(b, i->metadata_rest);
        }
        hs__buf_putc(b, '}');
    }
    if (i->backend_config) {
        put_key(b, "backend_config");
        hs__buf_puts(b, i->backend_config);
    } else if (i->opcode == HS_OP_WHILE && i->known_trip_count >= 0) {
        /* A trip count found by analysis is written the way XLA does. */
        put_key(b, "backend_config");
        hs__buf_puts(b, "{\"known_trip_count\":{\"n\":\"");
        hs__buf_put_int(b, i->known_trip_count);
        hs__buf_puts(b, "\"}}");
    }
}

void hs__print_instruction(hs_buf *b, const hs_instruction *i)
{
    put_name(b, i->name);
    hs__buf_put(b, " = ", 3);
    hs__print_shape(b, &i->shape, true);
    hs__buf_putc(b, ' ');
    if (i->opcode == HS_OP_UNKNOWN && i->unknown_opcode)
        hs__buf_puts(b, i->unknown_opcode);
    else
        hs__buf_puts(b, hs_opcode_name(i->opcode));
    hs__buf_putc(b, '(');
    put_operands(b, i);
    hs__buf_putc(b, ')');
    put_own_attributes(b, i);
    for (int k = 0; k < i->n_extra; k++) {
        put_key(b, i->extra[k].key);
        hs__buf_puts(b, i->extra[k].value);
    }
    put_called(b, i);
    put_trailing_attributes(b, i);
}

static void print_computation(hs_buf *b, const hs_computation *c)
{
    if (c->is_entry)
        hs__buf_puts(b, "ENTRY ");
    put_name(b, c->name);
    hs__buf_put(b, " (", 2);
    bool first = true;
    for (int k = 0; k < c->n_params; k++) {
        const hs_instruction *p = c->params[k];
        if (!p)
            continue;
        if (!first)
            hs__buf_put(b, ", ", 2);
        first = false;
        hs__buf_puts(b, p->name);
        hs__buf_put(b, ": ", 2);
        hs__print_shape(b, &p->shape, false);
    }
    hs__buf_put(b, ") -> ", 5);
    const hs_instruction *root =
        c->root ? c->root : c->n_instrs ? c->instrs[c->n_instrs - 1] : NULL;
    if (root)
        hs__print_shape(b, &root->shape, false);
    else
        hs__buf_put(b, "()", 2);
    hs__buf_put(b, " {\n", 3);
    for (int k = 0; k < c->n_instrs; k++) {
        const hs_instruction *i = c->instrs[k];
        hs__buf_puts(b, i == root ? "  ROOT " : "  ");
        hs__print_instruction(b, i);
        hs__buf_putc(b, '\n');
    }
    hs__buf_put(b, "}\n", 2);
}

static void print_index(hs_buf *b, const int *path, int len)
{
    hs__buf_putc(b, '{');
    for (int k = 0; k < len; k++) {
        char n[16];
        int w = snprintf(n, sizeof n, "%s%d", k ? "," : "", path[k]);
        hs__buf_put(b, n, (size_t)w);
    }
    hs__buf_putc(b, '}');
}

/* input_output_alias={ {1}: (2, {}, may-alias), ... } as XLA prints it. */
static void print_io_aliases(hs_buf *b, const hs_module *m)
{
    hs__buf_puts(b, "input_output_alias={ ");
    for (int k = 0; k < m->n_io_aliases; k++) {
        const hs_io_alias *a = &m->io_aliases[k];
        if (k)
            hs__buf_put(b, ", ", 2);
        print_index(b, a->output, a->output_len);
        char n[24];
        int w = snprintf(n, sizeof n, ": (%d, ", a->param);
        hs__buf_put(b, n, (size_t)w);
        print_index(b, a->param_index, a->param_index_len);
        hs__buf_puts(b, a->must_alias ? ", must-alias)" : ", may-alias)");
    }
    hs__buf_puts(b, " }");
}

char *hs_hlo_print(const hs_module *m)
{
    hs_buf b = {0};
    hs__buf_puts(&b, "HloModule ");
    hs__buf_puts(&b, m->name ? m->name : "module");
    if (m->header_attrs && m->header_attrs[0]) {
        hs__buf_put(&b, ", ", 2);
        hs__buf_puts(&b, m->header_attrs);
    }
    if (m->n_io_aliases > 0) {
        hs__buf_put(&b, ", ", 2);
        print_io_aliases(&b, m);
    }
    hs__buf_putc(&b, '\n');
    for (int k = 0; k < m->n_comps; k++) {
        hs__buf_putc(&b, '\n');
        print_computation(&b, m->comps[k]);
    }
    if (b.oom) {
        hs__buf_free(&b);
        return NULL;
    }
    return b.data;
}

int hs_hlo_fprint(const hs_module *m, FILE *f)
{
    char *text = hs_hlo_print(m);
    if (!text)
        return -1;
    size_t n = strlen(text);
    size_t w = fwrite(text, 1, n, f);
    free(text);
    return w == n ? (int)(n > (size_t)INT32_MAX ? INT32_MAX : n) : -1;
}

int hs_hlo_print_instruction(const hs_instruction *i, char *buf, size_t size)
{
    hs_buf b = {0};
    hs__print_instruction(&b, i);
    if (b.oom) {
        hs__buf_free(&b);
        if (size)
            buf[0] = '\0';
        return -1;
    }
    if (size) {
        size_t n = b.len < size - 1 ? b.len : size - 1;
        if (n)
            memcpy(buf, b.data, n);
        buf[n] = '\0';
    }
    int len = (int)b.len;
    hs__buf_free(&b);
    return len;
}
