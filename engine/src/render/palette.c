/* palette.c - node colours by opcode category. The colours are XLA's graph
 * dumper palette (Material colours, hlo_graph_dumper.cc) where XLA has a
 * colour for the category; constants, custom-calls, copies and host
 * transfers, which XLA paints like other categories, get their own here so
 * that every category of hs_opcode.h is told apart. docs/RENDER.md lists
 * the table. */
#include <string.h>

#include "render/render_internal.h"

static const char *const rcat_names[HS_RCAT_COUNT] = {
    [HS_RCAT_PARAMETER] = "parameter",
    [HS_RCAT_CONSTANT] = "constant",
    [HS_RCAT_ELEMENTWISE] = "elementwise",
    [HS_RCAT_DATA_MOVEMENT] = "data_movement",
    [HS_RCAT_DOT] = "dot",
    [HS_RCAT_REDUCTION] = "reduction",
    [HS_RCAT_TUPLE] = "tuple",
    [HS_RCAT_CONTROL] = "control",
    [HS_RCAT_FUSION] = "fusion",
    [HS_RCAT_CUSTOM_CALL] = "custom_call",
    [HS_RCAT_COPY] = "copy",
    [HS_RCAT_HOST_TRANSFER] = "host_transfer",
    [HS_RCAT_COLLECTIVE] = "collective",
    [HS_RCAT_OTHER] = "other",
    [HS_RCAT_LAYER] = "layer",
};

/* fill, stroke, font */
static const hs_node_style styles[HS_RCAT_COUNT] = {
    [HS_RCAT_PARAMETER] = {"#ffe0b2", "#cbae82", "black"},     /* orange */
    [HS_RCAT_CONSTANT] = {"#bbdefb", "#8aacc8", "black"},      /* blue */
    [HS_RCAT_ELEMENTWISE] = {"#fff9c4", "#cbc693", "black"},   /* yellow */
    [HS_RCAT_DATA_MOVEMENT] = {"#c8e6c9", "#97b498", "black"}, /* green */
    [HS_RCAT_DOT] = {"#1565c0", "#003c8f", "white"},           /* dark blue */
    [HS_RCAT_REDUCTION] = {"#e1bee7", "#af8eb5", "black"},     /* purple */
    [HS_RCAT_TUPLE] = {"white", "black", "black"},             /* white */
    [HS_RCAT_CONTROL] = {"#2e7d32", "#005005", "white"},       /* dark green */
    [HS_RCAT_FUSION] = {"#cfd8dc", "#9ea7aa", "black"},        /* gray */
    [HS_RCAT_CUSTOM_CALL] = {"#ffcdd2", "#cb9ca1", "black"},   /* red */
    [HS_RCAT_COPY] = {"#b2ebf2", "#81b9bf", "black"},          /* cyan */
    [HS_RCAT_HOST_TRANSFER] = {"#b71c1c", "#7f0000", "white"}, /* dark red */
    [HS_RCAT_COLLECTIVE] = {"#bcaaa4", "#8c7b75", "black"},    /* brown */
    [HS_RCAT_OTHER] = {"#f5f5f5", "#757575", "#424242"},       /* light gray */
    [HS_RCAT_LAYER] = {"#eceff1", "#546e7a", "black"},         /* blue gray */
};

static const hs_node_style large_parameter = {"#ffb74d", "#c88719", "black"};
static const hs_node_style scalar_op = {"white", "black", "black"};

const char *hs__rcat_name(hs_rcat c)
{
    return (unsigned)c < HS_RCAT_COUNT ? rcat_names[c] : "other";
}

static bool in_host_memory(const hs_shape *s)
{
    if (s->dtype == HS_TUPLE) {
        for (int k = 0; k < s->n_elems; k++)
            if (in_host_memory(&s->elems[k]))
                return true;
        return false;
    }
    return s->memory_space == HS_MEMSPACE_HOST;
}

static bool is_host_target(const char *t)
{
    return t && (strcmp(t, "MoveToHost") == 0 ||
                 strcmp(t, "MoveToDevice") == 0 ||
                 strcmp(t, "annotate_device_placement") == 0);
}

hs_rcat hs__render_category(const hs_instruction *i)
{
    switch (i->opcode) {
    case HS_OP_CUSTOM_CALL:
        return is_host_target(i->custom_call_target) ? HS_RCAT_HOST_TRANSFER
                                                     : HS_RCAT_CUSTOM_CALL;
    case HS_OP_COPY:
    case HS_OP_COPY_START:
    case HS_OP_COPY_DONE: {
        /* A copy between memory spaces moves data over the host link. */
        bool host = in_host_memory(&i->shape);
        for (int k = 0; k < i->n_operands && !host; k++)
            host = i->operands[k] && in_host_memory(&i->operands[k]->shape);
        return host ? HS_RCAT_HOST_TRANSFER : HS_RCAT_COPY;
    }
    default:
        break;
    }
    switch (hs_opcode_category(i->opcode)) {
    case HS_CAT_PARAMETER: return HS_RCAT_PARAMETER;
    case HS_CAT_CONSTANT: return HS_RCAT_CONSTANT;
    case HS_CAT_ELEMENTWISE: return HS_RCAT_ELEMENTWISE;
    case HS_CAT_DATA_MOVEMENT: return HS_RCAT_DATA_MOVEMENT;
    case HS_CAT_DOT: return HS_RCAT_DOT;
    case HS_CAT_REDUCTION: return HS_RCAT_REDUCTION;
    case HS_CAT_TUPLE: return HS_RCAT_TUPLE;
    case HS_CAT_CONTROL: return HS_RCAT_CONTROL;
    case HS_CAT_FUSION: return HS_RCAT_FUSION;
    case HS_CAT_CUSTOM_CALL: return HS_RCAT_CUSTOM_CALL;
    case HS_CAT_COPY: return HS_RCAT_COPY;
    case HS_CAT_COLLECTIVE: return HS_RCAT_COLLECTIVE;
    default: return HS_RCAT_OTHER;
    }
}

hs_node_style hs__node_style(hs_rcat c, const hs_instruction *i)
{
    if ((unsigned)c >= HS_RCAT_COUNT)
        c = HS_RCAT_OTHER;
    if (i && c == HS_RCAT_PARAMETER && i->shape.dtype != HS_TUPLE &&
        hs_shape_elements(&i->shape) >= 4096)
        return large_parameter;
    if (i && c == HS_RCAT_ELEMENTWISE && i->shape.dtype != HS_TUPLE &&
        hs_shape_elements(&i->shape) == 1)
        return scalar_op;
    return styles[c];
}

/* Light Material 100-200 tones, distinct next to each other. */
static const char *const key_colours[] = {
    "#bbdefb", "#c8e6c9", "#ffe0b2", "#e1bee7", "#b2ebf2", "#fff9c4",
    "#f8bbd0", "#d7ccc8", "#c5cae9", "#dcedc8", "#ffccbc", "#b2dfdb",
};

const char *hs__key_colour(const char *key, size_t len)
{
    enum { N = sizeof key_colours / sizeof key_colours[0] };
    if (!key || !len)
        return "#e0e0e0";
    /* Layers take consecutive colours, so neighbours always differ. */
    size_t lk = hs__layer_key(key);
    if (lk && lk <= len) {
        unsigned long n = 0;
        for (size_t k = 7; k < lk; k++)
            n = n * 10 + (unsigned long)(key[k] - '0');
        return key_colours[n % N];
    }
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t k = 0; k < len; k++)
        h = (h ^ (unsigned char)key[k]) * 16777619u;
    return key_colours[h % N];
}
