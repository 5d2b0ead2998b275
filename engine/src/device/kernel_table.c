/* kernel_table.c - the device kernel of every opcode, indexed by hs_opcode.
 *
 * The table is generated from HS_OPCODE_LIST (hs_opcode.h): an element-wise
 * opcode takes its family's kernel, every other opcode E the macro KERNEL_E
 * below, so adding an opcode without deciding how the device runs it does
 * not compile. RUN(k) names
 * the kernel; NOT_RUN(why) says why there is none, and the device refuses
 * such an instruction before it allocates anything, quoting `why`. One
 * kernel serves a whole family (dev_k_unary takes the opcode from the
 * instruction), as in kernels_elementwise.c. */
#include <string.h>

#include "device/device_internal.h"

#define RUN(k) {k, NULL}
#define NOT_RUN(why) {NULL, why}

/* the element-wise families: one kernel each, the element function picked
 * by opcode */
#define KERNEL_OF_UNARY_ANY(e) RUN(dev_k_unary)
#define KERNEL_OF_UNARY_FLOAT(e) RUN(dev_k_unary)
#define KERNEL_OF_UNARY_LOGICAL(e) RUN(dev_k_unary)
#define KERNEL_OF_BINARY_ANY(e) RUN(dev_k_binary)
#define KERNEL_OF_BINARY_LOGICAL(e) RUN(dev_k_binary)
#define KERNEL_OF_OWN(e) KERNEL_##e

/* leaves: a parameter's value is its argument, bound by the caller */
#define KERNEL_PARAMETER NOT_RUN("a parameter is bound to its argument")
#define KERNEL_CONSTANT RUN(dev_k_constant)
#define KERNEL_IOTA RUN(dev_k_iota)
#define KERNEL_CONVERT RUN(dev_k_convert)
#define KERNEL_BITCAST_CONVERT RUN(dev_k_alias)
/* element-wise, outside the families */
#define KERNEL_COMPARE RUN(dev_k_compare)
#define KERNEL_IS_FINITE RUN(dev_k_is_finite)
#define KERNEL_REDUCE_PRECISION RUN(dev_k_reduce_precision)
#define KERNEL_SELECT RUN(dev_k_select)
#define KERNEL_CLAMP RUN(dev_k_clamp)
/* data movement */
#define KERNEL_BROADCAST RUN(dev_k_broadcast)
#define KERNEL_RESHAPE RUN(dev_k_alias)
#define KERNEL_BITCAST RUN(dev_k_alias)
#define KERNEL_TRANSPOSE RUN(dev_k_transpose)
#define KERNEL_SLICE RUN(dev_k_slice)
#define KERNEL_CONCATENATE RUN(dev_k_concatenate)
#define KERNEL_REVERSE RUN(dev_k_reverse)
#define KERNEL_PAD RUN(dev_k_pad)
#define KERNEL_DYNAMIC_SLICE RUN(dev_k_dynamic_slice)
#define KERNEL_DYNAMIC_UPDATE_SLICE RUN(dev_k_dynamic_update_slice)
#define KERNEL_GATHER RUN(dev_k_gather)
#define KERNEL_SCATTER RUN(dev_k_scatter)
/* compute */
#define KERNEL_DOT RUN(dev_k_dot)
#define KERNEL_CONVOLUTION RUN(dev_k_convolution)
#define KERNEL_REDUCE RUN(dev_k_reduce)
#define KERNEL_REDUCE_WINDOW RUN(dev_k_reduce_window)
#define KERNEL_SELECT_AND_SCATTER RUN(dev_k_select_and_scatter)
#define KERNEL_BATCH_NORM_TRAINING RUN(dev_k_batch_norm_training)
#define KERNEL_BATCH_NORM_INFERENCE RUN(dev_k_batch_norm_inference)
#define KERNEL_BATCH_NORM_GRAD RUN(dev_k_batch_norm_grad)
#define KERNEL_MAP NOT_RUN("map has no kernel yet")
#define KERNEL_SORT RUN(dev_k_sort)
#define KERNEL_TOPK RUN(dev_k_topk)
#define KERNEL_RNG RUN(dev_k_rng)
#define KERNEL_RNG_BIT_GENERATOR RUN(dev_k_rng_bit_generator)
/* tuples */
#define KERNEL_TUPLE RUN(dev_k_tuple)
#define KERNEL_GET_TUPLE_ELEMENT RUN(dev_k_get_tuple_element)
/* control flow; a custom-call runs only for the targets dev_kernel_for
 * lists */
#define KERNEL_WHILE RUN(dev_k_while)
#define KERNEL_CALL RUN(dev_k_call)
#define KERNEL_CONDITIONAL NOT_RUN("conditional has no kernel yet")
#define KERNEL_FUSION RUN(dev_k_fusion)
#define KERNEL_CUSTOM_CALL RUN(dev_k_custom_call)
#define KERNEL_OPTIMIZATION_BARRIER RUN(dev_k_alias)
#define KERNEL_AFTER_ALL NOT_RUN("after-all orders side effects the "    \
                                 "emulated device does not have")
/* memory */
#define KERNEL_COPY RUN(dev_k_copy)
#define KERNEL_COPY_START RUN(dev_k_copy_start)
#define KERNEL_COPY_DONE RUN(dev_k_copy_done)
/* collectives: the emulated device is one device */
#define KERNEL_ALL_REDUCE NOT_RUN("collectives need several devices")
#define KERNEL_ALL_GATHER NOT_RUN("collectives need several devices")
#define KERNEL_REDUCE_SCATTER NOT_RUN("collectives need several devices")
#define KERNEL_ALL_TO_ALL NOT_RUN("collectives need several devices")
#define KERNEL_COLLECTIVE_PERMUTE NOT_RUN("collectives need several devices")
#define KERNEL_PARTITION_ID NOT_RUN("partition-id needs a partitioned run")
#define KERNEL_REPLICA_ID NOT_RUN("replica-id needs a replicated run")
#define KERNEL_UNKNOWN NOT_RUN("the opcode is not one hloscope knows")

static const dev_kernel_entry table[] = {
#define HS_X(e, n, a, c, f) [HS_OP_##e] = KERNEL_OF_##f(e),
    HS_OPCODE_LIST(HS_X)
#undef HS_X
};
_Static_assert(sizeof table / sizeof table[0] == HS_OP_COUNT,
               "every opcode has a kernel entry");

const dev_kernel_entry *dev_kernel_entry_of(hs_opcode op)
{
    return (unsigned)op < HS_OP_COUNT ? &table[op] : &table[HS_OP_UNKNOWN];
}

/* The custom-call targets the device runs: the identities of host
 * offloading and of the SPMD partitioner's Sharding, and the partitioner's
 * shape changes (kernels_spmd.c); TopK too (kernels_topk.c), when its
 * comparator is one it knows. Any other target is refused by name. */
static const struct {
    const char *target;
    dev_kernel kernel;
} custom_calls[] = {
    {"annotate_device_placement", dev_k_custom_call},
    {"MoveToHost", dev_k_custom_call},
    {"MoveToDevice", dev_k_custom_call},
    {"Sharding", dev_k_custom_call},
    {"SPMDFullToShardShape", dev_k_spmd_shape},
    {"SPMDShardToFullShape", dev_k_spmd_shape},
};

dev_kernel dev_kernel_for(const hs_instruction *in)
{
    if (in->opcode != HS_OP_CUSTOM_CALL)
        return dev_kernel_entry_of(in->opcode)->kernel;
    if (dev_is_topk_call(in)) /* runs only when its comparator is XLA's */
        return dev_topk_call_runs(in) ? dev_k_topk_call : NULL;
    const char *t = in->custom_call_target;
    for (size_t k = 0; t && k < sizeof custom_calls / sizeof custom_calls[0];
         k++)
        if (strcmp(t, custom_calls[k].target) == 0)
            return custom_calls[k].kernel;
    return NULL;
}
