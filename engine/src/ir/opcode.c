/* opcode.c - lookups into the opcode table of hs_opcode.h. */
#include <string.h>

#include "hloscope/hs_opcode.h"

static const struct {
    const char *name;
    int arity;
    hs_op_category category;
    hs_op_family family;
} opcode_table[] = {
#define HS_X(e, n, a, c, f) {n, a, c, HS_FAM_##f},
    HS_OPCODE_LIST(HS_X)
#undef HS_X
};

static const char *const category_names[HS_CAT_COUNT] = {
    [HS_CAT_PARAMETER] = "parameter",
    [HS_CAT_CONSTANT] = "constant",
    [HS_CAT_ELEMENTWISE] = "elementwise",
    [HS_CAT_DATA_MOVEMENT] = "data_movement",
    [HS_CAT_DOT] = "dot",
    [HS_CAT_REDUCTION] = "reduction",
    [HS_CAT_TUPLE] = "tuple",
    [HS_CAT_CONTROL] = "control",
    [HS_CAT_FUSION] = "fusion",
    [HS_CAT_CUSTOM_CALL] = "custom_call",
    [HS_CAT_COPY] = "copy",
    [HS_CAT_COLLECTIVE] = "collective",
    [HS_CAT_OTHER] = "other",
};

hs_op_family hs_opcode_family(hs_opcode op)
{
    return (unsigned)op < HS_OP_COUNT ? opcode_table[op].family : HS_FAM_OWN;
}

bool hs_opcode_is_unary_family(hs_opcode op)
{
    hs_op_family f = hs_opcode_family(op);
    return f == HS_FAM_UNARY_ANY || f == HS_FAM_UNARY_FLOAT ||
           f == HS_FAM_UNARY_LOGICAL;
}

bool hs_opcode_is_binary_family(hs_opcode op)
{
    hs_op_family f = hs_opcode_family(op);
    return f == HS_FAM_BINARY_ANY || f == HS_FAM_BINARY_LOGICAL;
}

const char *hs_opcode_name(hs_opcode op)
{
    return (unsigned)op < HS_OP_COUNT ? opcode_table[op].name : "?";
}

int hs_opcode_arity(hs_opcode op)
{
    return (unsigned)op < HS_OP_COUNT ? opcode_table[op].arity : -1;
}

hs_op_category hs_opcode_category(hs_opcode op)
{
    return (unsigned)op < HS_OP_COUNT ? opcode_table[op].category
                                      : HS_CAT_OTHER;
}

const char *hs_op_category_name(hs_op_category c)
{
    return (unsigned)c < HS_CAT_COUNT ? category_names[c] : "?";
}

bool hs_opcode_parse(const char *name, size_t len, hs_opcode *out)
{
    for (int i = 0; i < HS_OP_COUNT; i++) {
        if (i == HS_OP_UNKNOWN)
            continue;
        if (strlen(opcode_table[i].name) == len &&
            memcmp(opcode_table[i].name, name, len) == 0) {
            *out = (hs_opcode)i;
            return true;
        }
    }
    *out = HS_OP_UNKNOWN;
    return false;
}

bool hs_opcode_is_elementwise(hs_opcode op)
{
    return hs_opcode_category(op) == HS_CAT_ELEMENTWISE && op != HS_OP_MAP;
}
