/* Shape inference: the core's one function per op, used by sessions (at every reshape), the
 * converter's passes and the quantizer, so a backend implements only kernels (kernel.h,
 * docs/backends.md). Not a published API.
 *
 *     ks__kernel_ctx ctx = {.node = node, .in = ins, .num_inputs = n_in, .out = outs,
 *                           .num_outputs = n_out, .err = err, .err_cap = sizeof(err)};
 *     ks_status st = ks__op_infer(&ctx);   // outputs' dtype, rank and dims, or a line in err
 *
 * Inference reads the node's params, its inputs' dtype, rank, dims and quantization, and the data
 * of inputs whose value sets the output shape (constants, or values computed at reshape: RESHAPE's
 * shape, SLICE's starts...). It sets every output's dtype, rank and dims, and checks everything
 * the op's kernels rely on, so a kernel run after it may assume valid params, dtypes and shapes.
 * Outputs should carry the dtype and quantization the graph gives them (as the session pre-fills
 * them): quantized ops read their output's params. It never allocates and never aborts: bad input
 * gives a status and one line in ctx->err (ks__kernel_error). Thread-safe: it touches only ctx.
 *
 * Op semantics are ops.inc's. Each family's file (shape_conv.c, shape_data.c,
 * shape_elementwise.c, shape_mediapipe.c) also exports, in shape_<family>.h, the geometry its
 * kernels compute from the same params, so inference and kernels cannot disagree.
 */
#ifndef KESTREL_SHAPE_H
#define KESTREL_SHAPE_H

#include "kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef ks_status (*ks__infer_fn)(ks__kernel_ctx *ctx);

/* Infers the output shapes of ctx->node (any op of ops.inc). Unknown op ids give
 * KS_STATUS_UNSUPPORTED. */
ks_status ks__op_infer(ks__kernel_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_SHAPE_H */
