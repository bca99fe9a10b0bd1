/* Helpers shared by the quantized (U8/I8) drivers: qgemm.c (GEMM, indirect GEMM, depthwise),
 * q8_dw.c (row-wise depthwise) and q8_smallc.c (small-channel conv). Node description, the fused
 * CONV2D forms of ops.inc and the reference's per-channel requantization multiplier, so every
 * variant accepts and rounds exactly like the reference kernels. Not a published API. */
#ifndef KESTREL_CPU_Q8_COMMON_H
#define KESTREL_CPU_Q8_COMMON_H

#include "qgemm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Stride/dilation params: 0 means 1. */
static inline int64_t ks__q8_one_if_zero(int32_t v) {
    return v == 0 ? 1 : v;
}

/* Input i of the node, NULL when absent. */
static inline const ks__rt_tensor *ks__q8_input(const ks__kernel_ctx *ctx, uint32_t i) {
    return i < ctx->num_inputs ? ctx->in[i] : NULL;
}

/* A U8/I8 tensor with scales and zero points. */
static inline int ks__q8_is_quant(const ks__rt_tensor *t) {
    return t && (t->dtype == KS_DTYPE_U8 || t->dtype == KS_DTYPE_I8) && t->quant &&
           t->quant->count > 0 && t->quant->scales && t->quant->zero_points;
}

static inline int32_t ks__q8_lo(ks_dtype d) {
    return d == KS_DTYPE_U8 ? 0 : -128;
}

static inline int32_t ks__q8_hi(ks_dtype d) {
    return d == KS_DTYPE_U8 ? 255 : 127;
}

/* Largest |v - zp| over the dtype's range. */
static inline int64_t ks__q8_max_dev(ks_dtype d, int32_t zp) {
    int64_t a = (int64_t)zp - ks__q8_lo(d), b = (int64_t)ks__q8_hi(d) - zp;
    a = a < 0 ? -a : a;
    b = b < 0 ? -b : b;
    return a > b ? a : b;
}

/* Leading (top or left) padding of one spatial axis, as the reference derives it. */
static inline int64_t ks__q8_lead_pad(int32_t mode, int64_t explicit_pad, int64_t in, int64_t out,
                                      int64_t k_eff, int64_t stride) {
    if (mode == KS_PAD_EXPLICIT) return explicit_pad;
    if (mode == KS_PAD_VALID) return 0;
    int64_t total = (out - 1) * stride + k_eff - in;
    if (total < 0) total = 0;
    return mode == KS_PAD_SAME_UPPER ? total / 2 : total - total / 2;
}

static inline int ks__q8_same_shape(const ks__rt_tensor *a, const ks__rt_tensor *b) {
    if (a->rank != b->rank) return 0;
    for (int32_t d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d]) return 0;
    return 1;
}

/* Weight zero point of output channel c (per tensor or per channel). */
static inline int32_t ks__q8_wzp(const ks__rt_tensor *w, int64_t c) {
    return w->quant->zero_points[w->quant->count == 1 ? 0 : c];
}

/* Element i of a U8/I8 tensor as an integer code. */
static inline int32_t ks__q8_load(const ks__rt_tensor *t, int64_t i) {
    return t->dtype == KS_DTYPE_U8 ? ((const uint8_t *)t->data)[i] : ((const int8_t *)t->data)[i];
}

/* What a quantized CONV2D's epilogue must do (ops.inc): plain, or fused (ip[12] == 1) with a
 * residual ADD (input 3) or an output TABLE (input 4). */
typedef struct ks__q8_fused_desc {
    int32_t act;      /* the microkernel's own act: the node's ip[10], NONE for fused nodes */
    int32_t fused;    /* KS_Q8_FUSED_* (0: plain) */
    int32_t post_act; /* RESIDUAL: the ADD's act (the node's ip[10]) */
    float ys;         /* what the conv requantizes to: the output's, or the intermediate's */
    int32_t yzp;
    const ks__rt_tensor *res, *table;
} ks__q8_fused_desc;

/* 0 and d filled when the node's fused form is valid for output y; -1 otherwise, also for a
 * fused node when !allowed. Without ip[12], inputs 3 and 4 are refused (float-only residual,
 * PRELU slopes). For plain nodes d->ys / d->yzp are y's params when y is quantized. */
int ks__q8_describe_fused(const ks__kernel_ctx *ctx, const ks__rt_tensor *y, int allowed,
                          ks__q8_fused_desc *d);

/* Checks shared by every quantized conv/FC variant: per-tensor U8/I8 activations with zero points
 * inside their dtype, constant U8/I8 weights (per tensor or per output channel of oc), constant
 * I32 bias, a quantizable activation, and an int32-safe accumulator for reduction depth `depth`
 * (the reference saturates where the kernels would wrap). 0 when all hold. */
int ks__q8_check_common(const ks__rt_tensor *x, const ks__rt_tensor *w, const ks__rt_tensor *y,
                        const ks__rt_tensor *bias, int32_t act, int64_t oc, int64_t depth);

/* The epilogue constants of a fused node described by d, output y. */
void ks__q8_make_fused(const ks__q8_fused_desc *d, const ks__rt_tensor *y, ks__q8_fused *f);

/* The reference's requantization multiplier real = xs * ws / ys (the product in float on the
 * legacy TFLite path, `legacy`: U8 conv inputs, per-tensor FC weights; else in double) as a Q31
 * multiplier with its left (0..31) and right (0..31) shifts. */
void ks__q8_channel_multiplier(float xs, float ws, float ys, int legacy, int32_t *mult,
                               int32_t *left, int32_t *right);

#ifdef __cplusplus
}
#endif

#endif /* KESTREL_CPU_Q8_COMMON_H */
