/* placement.c - XLA's annotate_device_placement custom-call: which memory
 * space it asks for, and how to write one (hs_ir.h). */
#include <string.h>

#include "hloscope/hs_ir.h"

hs_placement hs_instruction_placement(const hs_instruction *i)
{
    /* One operand, the value placed: without it the call places nothing
     * (and the device refuses it as a custom-call short of operands). */
    if (i->opcode != HS_OP_CUSTOM_CALL || !i->custom_call_target ||
        strcmp(i->custom_call_target, HS_PLACEMENT_TARGET) != 0 ||
        i->n_operands != 1)
        return HS_PLACEMENT_NONE;
    return i->frontend_attributes &&
                   strstr(i->frontend_attributes, "pinned_host") != NULL
               ? HS_PLACEMENT_HOST
               : HS_PLACEMENT_DEVICE;
}

bool hs_instruction_set_placement(hs_instruction *i, bool host)
{
    i->frontend_attributes = hs_arena_strdup(
        hs_instruction_arena(i), host ? "_xla_buffer_placement=\"pinned_host\""
                                      : "_xla_buffer_placement=\"device\"");
    return i->frontend_attributes != NULL;
}
