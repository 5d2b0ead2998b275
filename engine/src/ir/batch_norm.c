/* batch_norm.c - the epsilon= and feature_index= attributes of the
 * batch-norm opcodes, read in one place for their shape rules, kernels,
 * cost and gradients. XLA's parser requires both; they are kept as text
 * (printed back as written) and read here. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "hloscope/hs_ir.h"

hs_status hs_instruction_batch_norm(const hs_instruction *i, int rank,
                                    hs_batch_norm *out, hs_error *err)
{
    const char *eps = hs_instruction_attr(i, "epsilon");
    const char *fi = hs_instruction_attr(i, "feature_index");
    if (!eps || !fi)
        return hs_error_set(err, HS_ERR_SHAPE,
                            "instruction %s: %s needs epsilon= and "
                            "feature_index=", i->name,
                            hs_opcode_name(i->opcode));
    char *end;
    errno = 0;
    double e = strtod(eps, &end);
    if (end == eps || *end || errno == ERANGE || !isfinite(e) || e < 0)
        return hs_error_set(err, HS_ERR_SHAPE,
                            "instruction %s: epsilon=%s is not a finite "
                            "non-negative number", i->name, eps);
    errno = 0;
    long long f = strtoll(fi, &end, 10);
    if (end == fi || *end || errno == ERANGE || f < 0 || f >= rank)
        return hs_error_set(err, HS_ERR_SHAPE,
                            "instruction %s: feature_index=%s is not a "
                            "dimension of its rank-%d operand", i->name, fi,
                            rank);
    out->epsilon = (float)e;
    out->feature_index = (int)f;
    return HS_OK;
}
