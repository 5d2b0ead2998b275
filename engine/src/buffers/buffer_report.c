/*
 * buffer_report.c - text reports of a buffer assignment: memory stats, the
 * buffers live at a peak, and XLA's out-of-memory report.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buffers/buffers_internal.h"

/* A growing malloc'ed string; a failed allocation makes text NULL and
 * every later append a no-op. */
typedef struct strbuf {
    char *text;
    size_t len, cap;
    bool failed;
} strbuf;

static void sb_printf(strbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void sb_printf(strbuf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->text ? b->text + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = true;
            return;
        }
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 256;
        while (cap <= b->len + (size_t)n)
            cap *= 2;
        char *t = realloc(b->text, cap);
        if (!t) {
            b->failed = true;
            return;
        }
        b->text = t;
        b->cap = cap;
    }
}

static char *sb_finish(strbuf *b)
{
    if (b->failed) {
        free(b->text);
        return NULL;
    }
    if (!b->text)
        b->text = calloc(1, 1);
    return b->text;
}

char *hs_format_bytes(int64_t bytes, char *buf, size_t size)
{
    /* tsl::strings::HumanReadableNumBytes, which XLA's messages use. */
    const char *neg = bytes < 0 ? "-" : "";
    uint64_t v = bytes < 0 ? (uint64_t)0 - (uint64_t)bytes : (uint64_t)bytes;
    if (v < 1024) {
        snprintf(buf, size, "%s%lluB", neg, (unsigned long long)v);
        return buf;
    }
    static const char units[] = "KMGTPE";
    const char *unit = units;
    while (v >= (uint64_t)1024 * 1024 && unit[1]) {
        v /= 1024;
        unit++;
    }
    snprintf(buf, size, "%s%.2f%c", neg, (double)v / 1024.0, *unit);
    return buf;
}

char *hs_memory_stats_format(const hs_memory_stats *s)
{
    strbuf b = {0};
    struct {
        const char *label;
        int64_t device, host;
    } rows[] = {
        {"arguments", s->device.argument_bytes, s->host.argument_bytes},
        {"outputs", s->device.output_bytes, s->host.output_bytes},
        {"aliased outputs", s->device.alias_bytes, s->host.alias_bytes},
        {"temporaries", s->device.temp_bytes, s->host.temp_bytes},
        {"peak", s->device.peak_bytes, s->host.peak_bytes},
        {"generated code", s->generated_code_bytes, 0},
    };
    sb_printf(&b, "%-16s %20s %20s\n", "memory", "device (bytes)",
              "host (bytes)");
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        char d[32], h[32];
        hs_format_bytes(rows[r].device, d, sizeof d);
        hs_format_bytes(rows[r].host, h, sizeof h);
        sb_printf(&b, "%-16s %12lld %7s %12lld %7s\n", rows[r].label,
                  (long long)rows[r].device, d, (long long)rows[r].host, h);
    }
    return sb_finish(&b);
}

static void shape_text(const hs_shape *s, char *buf, size_t size)
{
    if (hs_shape_print(s, true, buf, size) >= (int)size && size > 4)
        memcpy(buf + size - 4, "...", 4);
}

static const char *space_name(int memory_space)
{
    return memory_space == HS_MEMSPACE_HOST ? "host" : "device";
}

char *hs_buffers_peak_report(const hs_buffer_assignment *ba, int memory_space,
                             int max_buffers)
{
    strbuf b = {0};
    hs_buffer_peak pk = hs_buffers_peak(ba, memory_space);
    char size[32];
    sb_printf(&b, "Peak %s memory: %s (%lld bytes) at position %d (%s)",
              space_name(memory_space), hs_format_bytes(pk.bytes, size, 32),
              (long long)pk.bytes, pk.position,
              pk.instruction ? pk.instruction->name : "?");
    if (pk.inner && pk.inner != pk.instruction)
        sb_printf(&b, ", inside %s at %s", pk.inner->parent->name,
                  pk.inner->name);
    sb_printf(&b, "\n%10s  %-9s  %-32s  %-28s  %s\n", "size", "kind",
              "buffer", "shape", "op_name");
    int n;
    const hs_logical_buffer *const *live =
        hs_buffers_live_at_peak(ba, memory_space, &n);
    for (int k = 0; k < n && (max_buffers <= 0 || k < max_buffers); k++) {
        char shape[128];
        shape_text(live[k]->shape, shape, sizeof shape);
        sb_printf(&b, "%10s  %-9s  %-32s  %-28s  %s\n",
                  hs_format_bytes(live[k]->bytes, size, sizeof size),
                  hs_buffer_kind_name(live[k]->kind), live[k]->name, shape,
                  live[k]->op_name ? live[k]->op_name : "");
    }
    if (max_buffers > 0 && n > max_buffers)
        sb_printf(&b, "... and %d more\n", n - max_buffers);
    return sb_finish(&b);
}

/* "%dot.3 = dot(%x, %w)" (at most four operands), "%p = parameter(1)";
 * then the buffer when it is part of a tuple, and the computation when it
 * is not the entry. */
static void label(strbuf *b, const hs_logical_buffer *l)
{
    const hs_instruction *i = l->instruction;
    const char *op = i->opcode == HS_OP_UNKNOWN && i->unknown_opcode
                         ? i->unknown_opcode
                         : hs_opcode_name(i->opcode);
    sb_printf(b, "%%%s = %s(", i->name, op);
    if (i->opcode == HS_OP_PARAMETER)
        sb_printf(b, "%lld", (long long)i->index);
    for (int o = 0; o < i->n_operands && o < 4; o++)
        sb_printf(b, "%s%%%s", o ? ", " : "", i->operands[o]->name);
    sb_printf(b, "%s)", i->n_operands > 4 ? ", ..." : "");
    if (strcmp(l->name, i->name) != 0)
        sb_printf(b, ", buffer %s", l->name);
    if (!i->parent->is_entry)
        sb_printf(b, ", in %s", i->parent->name);
}

static const char *allocation_type(const hs_logical_buffer *l)
{
    switch (l->kind) {
    case HS_BUFFER_ARGUMENT: return "parameter";
    case HS_BUFFER_OUTPUT: return "output";
    case HS_BUFFER_CONSTANT: return "constant";
    default: return "HLO temp";
    }
}

char *hs_buffers_oom_report(const hs_buffer_assignment *ba, int64_t capacity,
                            const char *platform, int max_buffers)
{
    hs_buffer_peak pk = hs_buffers_peak(ba, HS_MEMSPACE_DEVICE);
    if (pk.bytes <= capacity)
        return NULL;
    const hs_memory_stats *ms = hs_buffers_memory_stats(ba);
    int n;
    const hs_logical_buffer *const *live =
        hs_buffers_live_at_peak(ba, HS_MEMSPACE_DEVICE, &n);
    int64_t by_kind[4] = {0};
    for (int k = 0; k < n; k++)
        by_kind[live[k]->kind] += live[k]->bytes;
    /* The temporaries of called computations are in the peak without
     * being one buffer of the entry: whatever the list leaves out. */
    int64_t listed = by_kind[0] + by_kind[1] + by_kind[2] + by_kind[3];
    int64_t temp = by_kind[HS_BUFFER_TEMPORARY] +
                   by_kind[HS_BUFFER_CONSTANT] + (pk.bytes - listed);
    char used[32], cap[32], over[32], a[32], o[32], t[32], al[32];
    strbuf b = {0};
    sb_printf(&b,
              "RESOURCE_EXHAUSTED: XLA:%s compile permanent error. Ran out "
              "of memory in memory space hbm. Used %s of %s hbm. Exceeded "
              "hbm capacity by %s.\n\n",
              platform ? platform : "TPU",
              hs_format_bytes(pk.bytes, used, sizeof used),
              hs_format_bytes(capacity, cap, sizeof cap),
              hs_format_bytes(pk.bytes - capacity, over, sizeof over));
    sb_printf(&b,
              "Total hbm usage >= %s:\n"
              "    arguments  %12s\n"
              "    outputs    %12s\n"
              "    HLO temp   %12s\n\n",
              used,
              hs_format_bytes(by_kind[HS_BUFFER_ARGUMENT], a, sizeof a),
              hs_format_bytes(by_kind[HS_BUFFER_OUTPUT], o, sizeof o),
              hs_format_bytes(temp, t, sizeof t));
    sb_printf(&b, "Output size %s; shares %s with arguments.\n\n",
              hs_format_bytes(ms->device.output_bytes, o, sizeof o),
              hs_format_bytes(ms->device.alias_bytes, al, sizeof al));
    sb_printf(&b, "Peak at position %d of %s (%%%s)", pk.position,
              pk.instruction->parent->name, pk.instruction->name);
    if (pk.inner && pk.inner != pk.instruction)
        sb_printf(&b, ", inside %s at %%%s", pk.inner->parent->name,
                  pk.inner->name);
    sb_printf(&b, ".\n\n  Largest program allocations in hbm:\n\n");
    for (int k = 0; k < n && (max_buffers <= 0 || k < max_buffers); k++) {
        const hs_logical_buffer *l = live[k];
        char size[32], shape[256];
        shape_text(l->shape, shape, sizeof shape);
        sb_printf(&b, "  %d. Size: %s\n", k + 1,
                  hs_format_bytes(l->bytes, size, sizeof size));
        if (l->op_name)
            sb_printf(&b, "     Operator: op_name=\"%s\"\n", l->op_name);
        sb_printf(&b, "     Shape: %s\n", shape);
        sb_printf(&b, "     XLA label: ");
        label(&b, l);
        sb_printf(&b, "\n     Allocation type: %s\n", allocation_type(l));
        sb_printf(&b, "     ==========================\n\n");
    }
    if (max_buffers > 0 && n > max_buffers)
        sb_printf(&b, "  ... and %d smaller allocations\n", n - max_buffers);
    return sb_finish(&b);
}
