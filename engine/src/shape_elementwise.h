/* Shape inference of the elementwise and normalization family (shape_elementwise.c): binary
 * arithmetic with numpy broadcasting, comparisons, WHERE, unary ops, PRELU, SOFTMAX /
 * LOG_SOFTMAX, REDUCE, ARG_MAX / ARG_MIN, QUANTIZE, DEQUANTIZE and CAST, and what their kernels
 * share with it. Not a published API.
 *
 * Callers infer through ks__op_infer (shape.h); the ks__infer_* functions are its table's
 * entries (one per kind of op: ks__infer_binary serves ADD..MINIMUM, ks__infer_unary every unary
 * op, ks__infer_compare EQUAL..LESS_EQUAL, ks__infer_softmax both softmaxes, ks__infer_arg both
 * ARG ops). Thread-safe: everything here touches only its arguments.
 */
#ifndef KESTREL_SHAPE_ELEMENTWISE_H
#define KESTREL_SHAPE_ELEMENTWISE_H

#include "kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

ks_status ks__infer_binary(ks__kernel_ctx *ctx);
ks_status ks__infer_compare(ks__kernel_ctx *ctx);
ks_status ks__infer_where(ks__kernel_ctx *ctx);
ks_status ks__infer_prelu(ks__kernel_ctx *ctx);
ks_status ks__infer_unary(ks__kernel_ctx *ctx);
ks_status ks__infer_softmax(ks__kernel_ctx *ctx);
ks_status ks__infer_reduce(ks__kernel_ctx *ctx);
ks_status ks__infer_arg(ks__kernel_ctx *ctx);
ks_status ks__infer_quantize(ks__kernel_ctx *ctx);
ks_status ks__infer_dequantize(ks__kernel_ctx *ctx);
ks_status ks__infer_cast(ks__kernel_ctx *ctx);

/* REDUCE's kind (ip[0], frozen by ops.inc). */
typedef enum ks__reduce_kind {
    KS__REDUCE_MEAN = 0,
    KS__REDUCE_SUM = 1,
    KS__REDUCE_MAX = 2,
    KS__REDUCE_MIN = 3,
    KS__REDUCE_PROD = 4
} ks__reduce_kind;

/* Resolves REDUCE's axes (ip[2..]; none: all) for an input of `rank` into a bit mask. False on
 * a bad axis, with the error reported into ctx->err. */
bool ks__reduce_axes(ks__kernel_ctx *ctx, int32_t rank, uint32_t *mask_out);

/* Per-channel quantization of t: the channel of flat element i is (i / inner) % len along
 * quant->axis (per-tensor: inner = len = 1). Fails when the scales do not match the axis. */
typedef struct ks__qchan {
    const ks__quant *q;
    int64_t inner, len;
} ks__qchan;

ks_status ks__qchan_init(ks__kernel_ctx *ctx, const ks__rt_tensor *t, ks__qchan *c);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_SHAPE_ELEMENTWISE_H */
