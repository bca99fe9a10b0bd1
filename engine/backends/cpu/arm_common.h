/* Portable drivers of the AArch64 NEON fp32 kernel variants (the files under arm/neon). Not a
 * published API.
 *
 * The ISA files supply microkernels only; geometry, weight packing, indirection (per-pixel input
 * pointers, padding taps pointing at a zero vector), scratch sizing and threading live here, in
 * plain C that builds on every architecture (so this file is compiled and warning-checked on x86
 * too, where nothing calls it).
 *
 * Activations are NHWC. Every output element is computed by exactly one work item in a fixed
 * order, so results do not depend on the thread count.
 *
 * Variants covered:
 *   - GEMM: CONV2D with groups == 1 (any kernel, stride, dilation, padding) and FULLY_CONNECTED,
 *     float activations with constant F32/F16/dequantizable weights. Weights are packed at
 *     reshape into NR-wide panels [NR bias][K x NR] (K = KH*KW*Cin, taps ky-major then channels),
 *     zero-filled past the last output channel; a zero vector of Cin floats follows the panels.
 *     The microkernel reads A indirectly: per kernel tap, MR row pointers of kc floats each.
 *     A 1x1 stride-1 conv or an FC has one tap: the pointers are just the rows of the input.
 *   - depthwise CONV2D (groups == Cin == Cout), any kernel size, vectorized over channels.
 *   - ADD/MUL with same-shape, scalar or per-channel (last dim) broadcast, with fused act.
 *   - RELU, RELU6, SIGMOID, HARD_SWISH on F32.
 */
#ifndef KESTREL_CPU_ARM_COMMON_H
#define KESTREL_CPU_ARM_COMMON_H

#include "impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fused activation as microkernels see it: a clamp to [lo, hi] (+-inf when unused), then `post`:
 * KS_ACT_NONE, KS_ACT_LEAKY_RELU (slope alpha), KS_ACT_HARD_SWISH or KS_ACT_SILU. Activations the
 * microkernels do not vectorize (TANH, SIGMOID) have post == KS_ACT_NONE and scalar_act set; the
 * driver applies them after the microkernel with the reference formula. */
typedef struct ks__arm_act {
    float lo, hi;
    int32_t post;
    float alpha;
    int32_t scalar_act; /* KS_ACT_NONE or the act the driver applies afterwards */
    /* Only for GEMM microkernels whose config sets `fused` (NULL otherwise): the fused residual
     * (row r of the tile at res + r * res_stride, nc floats), added to conv + bias before the
     * clamp and post; then PRELU's per-channel slopes (nc floats): v >= 0 ? v : slope * v. */
    const float *res;
    size_t res_stride;
    const float *slope;
} ks__arm_act;

void ks__arm_act_init(ks__arm_act *a, int32_t act, float alpha);
/* Applies a->scalar_act to n floats in place (no-op when it is KS_ACT_NONE). */
void ks__arm_act_scalar(float *x, size_t n, const ks__arm_act *a);

/* ---- GEMM (CONV2D groups == 1, FULLY_CONNECTED) ----
 * Computes rows [0, mr) x columns [0, nc) of one MR x NR tile (mr <= MR, nc <= NR):
 *   a:        ks groups of MR row pointers (a[t * MR + r]), each to kc floats; pointers of rows
 *             >= mr are valid (copies of row 0) but their results are discarded.
 *   w:        the panel: NR bias floats, then ks * kc rows of NR floats.
 *   c:        output row r starts at c + r * c_stride floats. */
typedef void (*ks__arm_gemm_ukernel)(size_t mr, size_t nc, size_t kc, size_t ks,
                                     const float *const *a, const float *w, float *c,
                                     size_t c_stride, const ks__arm_act *act);

typedef struct ks__arm_gemm_config {
    uint32_t mr, nr;
    ks__arm_gemm_ukernel ukernel;
    /* Non-zero: the microkernel applies a fused residual and PRELU itself (act->res, act->slope)
     * while the tile is in registers; else the driver does it on the stored rows. */
    int fused;
} ks__arm_gemm_config;

/* Negative when the node is not a float CONV2D (groups 1) / FULLY_CONNECTED with constant
 * weights (and constant bias, if any). */
double ks__arm_gemm_cost(const ks__kernel_ctx *ctx, const ks__arm_gemm_config *cfg);
/* Whether the NEON GEMM's node test passes with activations (x, y, residual) of dtype act (F32
 * or F16): a groups-1 CONV2D or a FULLY_CONNECTED with constant float weights and bias. */
int ks__arm_gemm_accepts(const ks__kernel_ctx *ctx, ks_dtype act);
ks_status ks__arm_gemm_plan(ks__kernel_ctx *ctx, const ks__arm_gemm_config *cfg,
                            size_t *packed_bytes_out);
ks_status ks__arm_gemm_pack(ks__kernel_ctx *ctx, const ks__arm_gemm_config *cfg);
ks_status ks__arm_gemm_run(ks__kernel_ctx *ctx, const ks__arm_gemm_config *cfg);

/* ---- depthwise CONV2D (the WebAssembly SIMD128 kernel, wasm/simd128/f32_dwconv.c; NEON runs
 * x86/avx2/f32_dwconv.c on dwconv.c's driver: arm/neon/f32_dwconv.c) ----
 * Packed: bias[cp], then per tap (ky-major) weights[cp], then a zero vector of cp floats, where
 * cp = channels rounded up to 4 (padding is zero). The microkernel computes num_px output pixels
 * (all channels) into out (pixel stride `channels`); taps[px * num_taps + t] points at channel 0
 * of the input pixel of tap t, or at the zero vector. */
typedef void (*ks__arm_dw_ukernel)(size_t num_px, size_t channels, size_t cp, size_t num_taps,
                                   const float *const *taps, const float *packed, float *out,
                                   const ks__arm_act *act);

double ks__arm_dw_cost(const ks__kernel_ctx *ctx);
ks_status ks__arm_dw_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out);
ks_status ks__arm_dw_pack(ks__kernel_ctx *ctx);
ks_status ks__arm_dw_run(ks__kernel_ctx *ctx, ks__arm_dw_ukernel ukernel);

/* ---- elementwise ----
 * Binary (ADD, MUL: commutative, so the broadcast operand is always passed as b): out[i] =
 * act(a[i] op b[i]) for `same`, act(a[i] op b[0]) for `scalar`; a per-channel operand (its size
 * is the last dim) is done with `same` once per row. */
typedef void (*ks__arm_binary_ukernel)(size_t n, const float *a, const float *b, float *out,
                                       const ks__arm_act *act);
typedef struct ks__arm_binary_config {
    ks__arm_binary_ukernel same;   /* a[i] op b[i] */
    ks__arm_binary_ukernel scalar; /* a[i] op b[0] */
} ks__arm_binary_config;

/* Negative unless op is ADD/MUL on F32 with one full-size operand and the other full-size,
 * a scalar or a per-channel vector. */
double ks__arm_binary_cost(const ks__kernel_ctx *ctx);
ks_status ks__arm_binary_run(ks__kernel_ctx *ctx, const ks__arm_binary_config *cfg);

typedef void (*ks__arm_unary_ukernel)(size_t n, const float *x, float *out);
/* Negative unless op is `op` on F32 input and output (not quantized). */
double ks__arm_unary_cost(const ks__kernel_ctx *ctx, uint32_t op);
ks_status ks__arm_unary_run(ks__kernel_ctx *ctx, ks__arm_unary_ukernel ukernel);

/* plan step of variants that need neither packed data nor scratch. */
ks_status ks__arm_plan_nothing(ks__kernel_ctx *ctx, size_t *packed_bytes_out);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_ARM_COMMON_H */
