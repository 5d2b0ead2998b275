/* labels.c - what a node says: XLA-style labels (name, or opcode and name;
 * "Parameter N"; one line of opcode-specific detail; the shape) and
 * tooltips (shape, bytes, op_name, op_type, frontend attributes). Every
 * line is cleaned and escaped for a DOT quoted string; lines are joined
 * with DOT's "\n". */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "render/render_internal.h"

/* Characters per label line and per tooltip field. */
enum { LINE_CHARS = 64, TIP_CHARS = 400 };

void hs__shape_text(const hs_shape *s, char *buf, size_t size)
{
    int need = hs_shape_print(s, true, buf, size);
    if (need >= (int)size && size >= 4)
        memcpy(buf + size - 4, "...", 4);
}

/* XLA's MatchTrivialComputation: a computation of two scalar parameters
 * and one binary op on them is named by that op. */
const char *hs__trivial_computation(const hs_computation *c)
{
    if (!c || c->n_instrs != 3 || !c->root || c->root->n_operands != 2)
        return c ? c->name : "?";
    const hs_instruction *r = c->root;
    const hs_instruction *a = r->operands[0], *b = r->operands[1];
    if (!a || !b || a->opcode != HS_OP_PARAMETER ||
        b->opcode != HS_OP_PARAMETER || a == b)
        return c->name;
    bool swapped = a->index == 1;
    switch (r->opcode) {
    case HS_OP_ADD: return "add";
    case HS_OP_MULTIPLY: return "multiply";
    case HS_OP_MINIMUM: return "min";
    case HS_OP_MAXIMUM: return "max";
    case HS_OP_AND: return "and";
    case HS_OP_OR: return "or";
    case HS_OP_XOR: return "xor";
    case HS_OP_COMPARE:
        switch (r->direction) {
        case HS_DIR_EQ: return "equal-to";
        case HS_DIR_NE: return "not-equal-to";
        case HS_DIR_LT: return swapped ? "greater-than" : "less-than";
        case HS_DIR_LE: return swapped ? "greater-or-equal" : "less-or-equal";
        case HS_DIR_GT: return swapped ? "less-than" : "greater-than";
        case HS_DIR_GE: return swapped ? "less-or-equal" : "greater-or-equal";
        default: return c->name;
        }
    default:
        return c->name;
    }
}

static void line(hs_buf *b, bool *first, const char *text)
{
    if (!*first)
        hs__buf_puts(b, "\\n");
    *first = false;
    hs__dot_text(b, text, LINE_CHARS);
}

static void dims_text(char *buf, size_t size, const char *key,
                      const int64_t *dims, int n)
{
    size_t pos = (size_t)snprintf(buf, size, "%s={", key);
    for (int k = 0; k < n && pos < size; k++) {
        if (k == 8) {
            pos += (size_t)snprintf(buf + pos, size - pos, ",...");
            break;
        }
        pos += (size_t)snprintf(buf + pos, size - pos, "%s%" PRId64,
                                k ? "," : "", dims[k]);
    }
    if (pos < size)
        snprintf(buf + pos, size - pos, "}");
}

/* The scalar value of a constant, when the literal was decoded. */
static bool scalar_value(const hs_instruction *i, char *buf, size_t size)
{
    if (i->shape.dtype == HS_TUPLE || hs_shape_elements(&i->shape) != 1)
        return false;
    if (i->literal) {
        switch (i->shape.dtype) {
        case HS_F32:
            snprintf(buf, size, "value=%g", (double)*(const float *)i->literal);
            return true;
        case HS_S32:
            snprintf(buf, size, "value=%d", (int)*(const int32_t *)i->literal);
            return true;
        case HS_PRED:
            snprintf(buf, size, "value=%s",
                     *(const uint8_t *)i->literal ? "true" : "false");
            return true;
        default:
            break;
        }
    }
    if (i->literal_text) {
        snprintf(buf, size, "value=%s", i->literal_text);
        return true;
    }
    return false;
}

/* One line of opcode-specific detail, as XLA's extra info. */
static bool detail(const hs_instruction *i, char *buf, size_t size)
{
    switch (i->opcode) {
    case HS_OP_BROADCAST:
    case HS_OP_TRANSPOSE:
    case HS_OP_REDUCE:
    case HS_OP_REVERSE:
    case HS_OP_CONCATENATE:
        if (!i->dims && i->opcode != HS_OP_BROADCAST)
            return false;
        dims_text(buf, size, "dims", i->dims, i->n_dims);
        if (i->opcode == HS_OP_REDUCE && i->n_called > 0) {
            size_t n = strlen(buf);
            snprintf(buf + n, size - n, " to_apply=%s",
                     hs__trivial_computation(i->called[0]));
        }
        return true;
    case HS_OP_GET_TUPLE_ELEMENT:
        snprintf(buf, size, "index=%" PRId64, i->index);
        return true;
    case HS_OP_COMPARE:
        snprintf(buf, size, "direction=%s", hs_direction_name(i->direction));
        return true;
    case HS_OP_CUSTOM_CALL:
        if (!i->custom_call_target)
            return false;
        snprintf(buf, size, "target=%s", i->custom_call_target);
        return true;
    case HS_OP_CONSTANT:
        return scalar_value(i, buf, size);
    case HS_OP_WHILE:
        if (i->known_trip_count < 0)
            return false;
        snprintf(buf, size, "trip count=%" PRId64, i->known_trip_count);
        return true;
    case HS_OP_REDUCE_WINDOW:
    case HS_OP_MAP:
    case HS_OP_SORT:
    case HS_OP_SCATTER:
    case HS_OP_ALL_REDUCE:
    case HS_OP_REDUCE_SCATTER:
        if (i->n_called < 1)
            return false;
        snprintf(buf, size, "to_apply=%s",
                 hs__trivial_computation(i->called[0]));
        return true;
    case HS_OP_FUSION:
        if (!i->fusion_kind)
            return false;
        snprintf(buf, size, "%s", i->fusion_kind);
        return true;
    default:
        return false;
    }
}

static const char *opcode_text(const hs_instruction *i)
{
    if (i->opcode == HS_OP_UNKNOWN && i->unknown_opcode)
        return i->unknown_opcode;
    return hs_opcode_name(i->opcode);
}

/* "per device 2.00 MiB of 16.00 MiB" for a sharded node. */
static void per_device_text(const hs_vnode *n, char *buf, size_t size)
{
    char local[32], global[32];
    hs__format_bytes(local, sizeof local, (double)n->per_device_bytes);
    hs__format_bytes(global, sizeof global, (double)n->global_bytes);
    snprintf(buf, size, "per device %s of %s", local, global);
}

static void instruction_label(hs_buf *b, const hs_vnode *n)
{
    const hs_instruction *i = n->instr;
    char text[256];
    bool first = true;
    if (n->is_root)
        line(b, &first, "ROOT");
    if (i->opcode == HS_OP_PARAMETER) {
        snprintf(text, sizeof text, "Parameter %" PRId64, i->index);
        line(b, &first, text);
        line(b, &first, i->name);
    } else {
        /* As XLA: the name alone when it starts with the opcode ("add.3"),
         * else the opcode above the name. */
        const char *op = opcode_text(i);
        if (strncmp(i->name, op, strlen(op)) != 0)
            line(b, &first, op);
        line(b, &first, i->name);
    }
    if (detail(i, text, sizeof text))
        line(b, &first, text);
    hs__shape_text(&i->shape, text, 96);
    line(b, &first, text);
    if (n->sharded) {
        per_device_text(n, text, sizeof text);
        line(b, &first, text);
    }
}

void hs__node_label(hs_buf *b, const hs_view *v, const hs_vnode *n)
{
    (void)v;
    if (n->instr) {
        instruction_label(b, n);
        return;
    }
    bool first = true;
    if (n->is_root)
        line(b, &first, "ROOT");
    hs_buf t = {0};
    hs__text_clean(&t, n->label ? n->label : n->layer, LINE_CHARS);
    hs__buf_printf(&t, " (%d op%s)", n->collapsed_count,
                    n->collapsed_count == 1 ? "" : "s");
    line(b, &first, t.data ? t.data : "");
    hs__buf_free(&t);
}

static void tip(hs_buf *b, bool *first, const char *key, const char *value)
{
    if (!value)
        return;
    if (!*first)
        hs__buf_puts(b, "\\n");
    *first = false;
    hs__buf_puts(b, key);
    hs__dot_text(b, value, TIP_CHARS);
}

void hs__node_tooltip(hs_buf *b, const hs_view *v, const hs_vnode *n)
{
    char text[160], bytes[32];
    bool first = true;
    hs__format_bytes(bytes, sizeof bytes, (double)n->bytes);
    if (!n->instr) {
        hs_buf t = {0};
        hs__text_clean(&t, n->layer, LINE_CHARS);
        hs__buf_printf(&t, ": %d instructions", n->collapsed_count);
        tip(b, &first, "", t.data);
        hs__buf_free(&t);
        snprintf(text, sizeof text, "%s (%" PRId64 ")", bytes, n->bytes);
        tip(b, &first, "output bytes: ", text);
        if (n->sharded) {
            per_device_text(n, text, sizeof text);
            tip(b, &first, "sharded: ", text);
        }
        tip(b, &first, "computation: ", n->comp->name);
        tip(b, &first, "open it with expand=", n->layer);
        return;
    }
    const hs_instruction *i = n->instr;
    tip(b, &first, "", i->name);
    hs__buf_puts(b, " = ");
    hs__dot_text(b, opcode_text(i), LINE_CHARS);
    hs__shape_text(&i->shape, text, sizeof text);
    tip(b, &first, "shape: ", text);
    snprintf(text, sizeof text, "%s (%" PRId64 ")", bytes, n->bytes);
    tip(b, &first, "bytes: ", text);
    if (n->sharded) {
        per_device_text(n, text, sizeof text);
        tip(b, &first, "sharding: ", i->sharding);
        tip(b, &first, "", text);
    }
    tip(b, &first, "op_name: ", i->op_name);
    tip(b, &first, "op_type: ", i->op_type);
    tip(b, &first, "frontend_attributes: ", i->frontend_attributes);
    if (n->comp != v->top)
        tip(b, &first, "computation: ", n->comp->name);
}
