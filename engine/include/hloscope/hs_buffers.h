/*
 * hs_buffers.h - buffer assignment: the logical buffers of a scheduled
 * module, their live ranges, and the peak of every memory space, as XLA's
 * BufferAssignment and HeapSimulator compute them.
 *
 *     hs_error err;
 *     hs_buffer_assignment *ba = hs_assign_buffers(module, &err);
 *     hs_buffer_peak pk = hs_buffers_peak(ba, HS_MEMSPACE_DEVICE);
 *     printf("peak %lld bytes at %s\n", (long long)pk.bytes,
 *            pk.instruction->name);
 *     int n;
 *     const hs_logical_buffer *const *live =
 *         hs_buffers_live_at_peak(ba, HS_MEMSPACE_DEVICE, &n);
 *     // live[0] is the largest buffer live at the peak
 *     const hs_memory_stats *ms = hs_buffers_memory_stats(ba);
 *     hs_buffers_free(ba);
 *
 * The module's instruction order is its schedule (the `schedule` pass
 * chooses it): a buffer is live from the position of the instruction that
 * defines it to the position of its last use, both inclusive. Aliasing
 * instructions (get-tuple-element, bitcast, reshape that keeps the bytes,
 * tuple elements, while results, in-place dynamic-update-slice) define no
 * new bytes. Computations called by while, call and conditional add their
 * own peak at the call site. docs/PASSES.md describes every rule.
 *
 * The analysis reads the module and never changes it; the result refers
 * to the module's instructions and must be freed before the module.
 */
#ifndef HLOSCOPE_HS_BUFFERS_H
#define HLOSCOPE_HS_BUFFERS_H

#include <stdint.h>

#include "hloscope/hs_ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hs_buffer_kind {
    HS_BUFFER_ARGUMENT,  /* an entry parameter: live for the whole program */
    HS_BUFFER_OUTPUT,    /* part of the entry root: live to the end */
    HS_BUFFER_TEMPORARY, /* everything else, in any computation */
    HS_BUFFER_CONSTANT   /* a literal: read-only, live until its last use */
} hs_buffer_kind;

const char *hs_buffer_kind_name(hs_buffer_kind k); /* "argument", ... */

/* One logical buffer: an array (or a tuple's index table) that some
 * instruction defines. Positions are indexes into computation->instrs. */
typedef struct hs_logical_buffer {
    int id;                            /* index in hs_buffers_list */
    const char *name;                  /* "dot.3", "tuple.5{}", "p.1{1,0}" */
    const hs_instruction *instruction; /* the defining instruction */
    const hs_computation *computation;
    const char *op_name;               /* metadata op_name, or NULL */
    const hs_shape *shape;             /* the array, or the tuple */
    int64_t bytes;
    int memory_space;                  /* HS_MEMSPACE_DEVICE or _HOST */
    int start, end;                    /* inclusive positions */
    hs_buffer_kind kind;
    /* An output in an argument's buffer: returned as is, or written over a
     * parameter that input_output_alias donates. */
    bool aliases_argument;
    /* An argument that input_output_alias donates to an output: it is
     * live until its last use only, not for the whole program. */
    bool donated;
} hs_logical_buffer;

/* The peak of one memory space. position and instruction are in the entry
 * computation; when the peak lies inside a called computation (a while
 * body, a call), instruction is the call site and inner the instruction
 * of the innermost computation where the peak is reached. */
typedef struct hs_buffer_peak {
    int64_t bytes;
    int position;
    const hs_instruction *instruction;
    const hs_instruction *inner;
} hs_buffer_peak;

/* Sizes like XLA's CompiledMemoryStats, per memory space. At the peak,
 * the live bytes are the arguments, the outputs defined so far, and
 * temporaries; temp_bytes is the largest sum of live temporaries
 * (constants and the temporaries of called computations included). */
typedef struct hs_memory_space_stats {
    int64_t argument_bytes; /* entry parameters */
    int64_t output_bytes;   /* buffers of the entry root */
    int64_t alias_bytes;    /* output bytes in argument buffers (returned
                               as is, or donated by input_output_alias) */
    int64_t temp_bytes;
    int64_t peak_bytes;
} hs_memory_space_stats;

typedef struct hs_memory_stats {
    hs_memory_space_stats device, host;
    int64_t generated_code_bytes; /* always 0: nothing is generated */
} hs_memory_stats;

typedef struct hs_buffer_assignment hs_buffer_assignment;

/* Assigns buffers to m in its current order. NULL with *err set when the
 * module is malformed (an operand defined after its user or in another
 * computation, a computation that calls itself) or on host OOM. */
hs_buffer_assignment *hs_assign_buffers(const hs_module *m, hs_error *err);
void hs_buffers_free(hs_buffer_assignment *ba);
/* Assignments computed by this process so far (every hs_assign_buffers
 * call, from any thread). A statistic: hs_compile computes one per
 * compiled module and a program reuses it, which tests check with this
 * count; the server exports it as hloscope_buffer_assignments_total. */
int64_t hs_buffers_assignment_count(void);

/* memory_space is HS_MEMSPACE_DEVICE or HS_MEMSPACE_HOST. */
hs_buffer_peak hs_buffers_peak(const hs_buffer_assignment *ba,
                               int memory_space);
/* Buffers live at the peak of memory_space, largest first (ties: program
 * order), including those of the called computation the peak lies in. */
const hs_logical_buffer *const *
hs_buffers_live_at_peak(const hs_buffer_assignment *ba, int memory_space,
                        int *n);
/* Every buffer, in program order: computations as the module lists them,
 * then by start position. Nested computations use their own positions. */
const hs_logical_buffer *hs_buffers_list(const hs_buffer_assignment *ba,
                                         int *n);
const hs_memory_stats *hs_buffers_memory_stats(const hs_buffer_assignment *ba);

/* ---- reports (malloc'ed strings, NULL on host OOM) ---------------------- */

/* Bytes as XLA prints them (tsl HumanReadableNumBytes): "512B", "1.50K",
 * "16.00G" (binary units). Returns buf. */
char *hs_format_bytes(int64_t bytes, char *buf, size_t size);

/* The memory stats, one line per quantity and memory space. */
char *hs_memory_stats_format(const hs_memory_stats *s);

/* The peak of memory_space and the max_buffers largest buffers live at it
 * (0 = all), one per line: size, name, shape, op_name. */
char *hs_buffers_peak_report(const hs_buffer_assignment *ba, int memory_space,
                             int max_buffers);

/* XLA's out-of-memory report when the device peak exceeds capacity:
 *
 *   RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory
 *   in memory space hbm. Used 18.50G of 16.00G hbm. Exceeded hbm capacity
 *   by 2.50G.
 *
 * (one line) followed by the usage at the peak and the max_buffers largest
 * allocations live at it (size, operator, shape, label, allocation type).
 * platform is "TPU" or "GPU" (NULL = "TPU"). Returns NULL also when the
 * peak fits. */
char *hs_buffers_oom_report(const hs_buffer_assignment *ba, int64_t capacity,
                            const char *platform, int max_buffers);

#ifdef __cplusplus
}
#endif
#endif
