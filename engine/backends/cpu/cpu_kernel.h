/* The CPU backend's reference kernels and the helpers kernels share. The contract they
 * implement (ks__kernel_ctx, ks__kernel, ks__impl) and shape inference belong to the core:
 * engine/src/kernel.h, engine/src/shape.h. Not a published API.
 *
 * Reference kernels (backends/cpu/ref/) are obviously-correct scalar code and stay forever as the
 * oracle for fast kernels.
 */
#ifndef KESTREL_CPU_CPU_KERNEL_H
#define KESTREL_CPU_CPU_KERNEL_H

#include "src/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- conv helpers the fast conv families share (gemm.c, smallc.c, fewout.c, perf.c) ---- */

/* A stride, dilation or group count of a node's params: 0 stands for 1. */
static inline int64_t ks__ip_or_one(int32_t v) {
    return v == 0 ? 1 : v;
}

/* Plain float32 (not quantized). */
static inline bool ks__rt_float_plain(const ks__rt_tensor *t) {
    return t && t->dtype == KS_DTYPE_F32 && (!t->quant || t->quant->count == 0);
}

/* Weights known at reshape, float32 or float16, not quantized. */
static inline bool ks__rt_const_weights(const ks__rt_tensor *t) {
    return t && t->data && (t->dtype == KS_DTYPE_F32 || t->dtype == KS_DTYPE_F16) &&
           (!t->quant || t->quant->count == 0);
}

/* Leading pad of one conv axis (the reference kernel's rule, from the inferred output size;
 * k_eff is the dilated kernel extent). */
static inline int64_t ks__conv_lead_pad(int32_t mode, int64_t explicit_pad, int64_t in, int64_t out,
                                        int64_t k_eff, int64_t stride) {
    if (mode == KS_PAD_EXPLICIT) return explicit_pad;
    if (mode == KS_PAD_VALID) return 0;
    int64_t total = (out - 1) * stride + k_eff - in;
    if (total < 0) total = 0;
    return mode == KS_PAD_SAME_UPPER ? total / 2 : total - total / 2;
}

/* The reference kernel table (filled once; thread-safe after first call returns). */
const ks__kernel_table *ks__ref_kernels(void);

/* Prepares ctx's node for its reference kernel as a session's reshape does: the core's shape
 * inference (ks__op_infer, shape.h), then the kernel's plan (ctx->scratch_bytes). For code that
 * runs a reference kernel by hand (tables of fast kernels, the quantizer, tests); ctx->scratch
 * must then hold scratch_bytes before run. KS_STATUS_UNSUPPORTED when the op has no reference
 * kernel in this build. */
ks_status ks__ref_prepare(ks__kernel_ctx *ctx);

/* Each family file registers its ops into the table. */
void ks__ref_register_conv(ks__kernel_table *t);        /* conv, pool, fc, resize, space ops */
void ks__ref_register_elementwise(ks__kernel_table *t); /* binary, unary, softmax, reduce... */
void ks__ref_register_data(ks__kernel_table *t);        /* reshape, concat, slice, gather... */
void ks__ref_register_mediapipe(ks__kernel_table *t);   /* MediaPipe custom ops */

/* ---- helpers shared by kernels (those shape inference uses too are the core's: kernel.h) ---- */
/* Reads element i of any numeric tensor as double (quantized values are NOT dequantized). */
double ks__rt_get_f64(const ks__rt_tensor *t, int64_t i);
/* Writes element i of any numeric tensor from double (with C conversion; ints truncate). */
void ks__rt_set_f64(ks__rt_tensor *t, int64_t i, double v);
/* Applies a fused float activation. */
float ks__act_apply(float x, int32_t act, float alpha);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_CPU_KERNEL_H */
