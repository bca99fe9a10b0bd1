/* Portable drivers of the fast fp32 depthwise-conv, pooling and transpose-conv variants.
 * Not a published API.
 *
 * The ISA files (x86/avx2/f32_*.c, x86/avx512/f32_*.c) supply only microkernels; geometry,
 * weight packing, indirection (per-pixel input pointers, padding taps pointing at a zero
 * vector) and threading live here so every ISA shares one tested driver.
 *
 * Activations are NHWC. Work is split with ks__parallel_for over output rows (or row x channel
 * chunks for pooling); every output element is computed by one thread in a fixed order, so
 * results do not depend on the thread count.
 */
#ifndef KESTREL_CPU_DWCONV_H
#define KESTREL_CPU_DWCONV_H

#include "impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fused activation as the microkernels see it: every float act becomes a clamp to [lo, hi]
 * (RELU family; +-inf when unused) followed by `act`, which is KS_ACT_NONE, KS_ACT_LEAKY_RELU,
 * KS_ACT_HARD_SWISH or KS_ACT_SILU (or, for depthwise CONV2D only, KS_ACT_PRELU). TANH/SIGMOID
 * are applied by the driver after the microkernel (act is NONE then). */
typedef struct ks__f32_act {
    float lo, hi;
    int32_t act;
    float alpha;
} ks__f32_act;

/* ---- depthwise CONV2D ----
 * y = act(conv(x, w) + bias + residual): the taps are summed from zero in (ky, kx) order and the
 * bias is added after them (a large folded-BN bias as the sum's start would make every FMA round
 * at its scale), then the optional residual, then the activation. ks__f32_act.act may also be
 * KS_ACT_PRELU here, with per-channel slopes from the packed block.
 *
 * Packed weights, per block of `cb` channels (KS__F32_DW_BLOCK_FLOATS(cb, num_taps) floats):
 * bias[cb], then tap 0..num_taps-1 weights [cb] (taps in ky-major order), then the PRELU slopes
 * [cb] (zero unless act is PRELU), zero-padded past the last channel. A zero vector of
 * round_up(channels, cb) floats follows the last block. */
#define KS__F32_DW_BLOCK_FLOATS(cb, num_taps) ((size_t)(cb) * ((size_t)(num_taps) + 2))

/* Computes num_px output pixels (all `channels`) into out (pixel stride `channels`).
 * taps[px * num_taps + t] points at the input pixel (channel 0) of tap t, or at the zero vector.
 * res is NULL or the residual with out's layout. */
typedef void (*ks__f32_dw_ukernel)(size_t num_px, size_t channels, size_t num_taps,
                                   const float *const *taps, const float *packed, float *out,
                                   const float *res, const ks__f32_act *act);

/* Row microkernel of a fixed KHxKW window, dilation 1 and a fixed horizontal stride SW: computes
 * num_px consecutive output pixels of one output row whose windows lie inside the input (the
 * driver keeps border pixels and padded rows on the indirect path). rows[ky] points at the
 * input pixel (channel 0) of tap (ky, 0) of the first output pixel; tap (ky, kx) of output pixel
 * p is at rows[ky] + (p * SW + kx) * channels. Why: no per-tap pointers, and horizontally
 * adjacent taps of neighbouring pixels share one load. */
typedef void (*ks__f32_dw_row_ukernel)(size_t num_px, size_t channels, const float *const *rows,
                                       const float *packed, float *out, const float *res,
                                       const ks__f32_act *act);

typedef struct ks__f32_dw_config {
    uint32_t cb;                /* channel block (vector width in floats) */
    ks__f32_dw_ukernel generic; /* any num_taps */
    ks__f32_dw_ukernel k3x3;    /* num_taps == 9 (NULL: use generic) */
    ks__f32_dw_ukernel k5x5;    /* num_taps == 25 */
    /* row[k][s]: window 3x3 (k 0) or 5x5 (k 1), horizontal stride 1 (s 0) or 2 (s 1); NULL:
     * every pixel takes the indirect path */
    ks__f32_dw_row_ukernel row[2][2];
} ks__f32_dw_config;

/* Cost of a depthwise float CONV2D at ctx's shapes with channel block cb, or -1 when the node is
 * not one (groups != Cin, multiplier != 1, quantized input, non-F32 output, ...). */
double ks__f32_dw_cost(const ks__kernel_ctx *ctx, uint32_t cb);
ks_status ks__f32_dw_plan(ks__kernel_ctx *ctx, uint32_t cb, size_t *packed_bytes_out);
ks_status ks__f32_dw_pack(ks__kernel_ctx *ctx, uint32_t cb);
ks_status ks__f32_dw_run(ks__kernel_ctx *ctx, const ks__f32_dw_config *cfg);

/* ---- POOL2D (float) ----
 * For num_px output pixels, reduces a window of rows[px] x cols[px] input pixels whose top-left
 * pixel is in[px] (pixel stride px_stride floats, row stride row_stride floats) over channels
 * [0, channels), into out + px * out_stride. kind 0: max; 1: average (sum times scale[px]). An
 * empty window (rows or cols 0) yields 0 before the activation, as the reference does. */
typedef void (*ks__f32_pool_ukernel)(size_t num_px, size_t channels, const float *const *in,
                                     const uint32_t *rows, const uint32_t *cols, size_t px_stride,
                                     size_t row_stride, int kind, const float *scale, float *out,
                                     size_t out_stride, const ks__f32_act *act);

typedef struct ks__f32_pool_config {
    uint32_t cb;
    ks__f32_pool_ukernel ukernel;
} ks__f32_pool_config;

double ks__f32_pool_cost(const ks__kernel_ctx *ctx, uint32_t cb);
ks_status ks__f32_pool_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out);
ks_status ks__f32_pool_run(ks__kernel_ctx *ctx, const ks__f32_pool_config *cfg);

/* ---- CONV2D_TRANSPOSE (float) ----
 * Computed per output phase (oy mod stride_h, ox mod stride_w): each phase is an indirect GEMM
 * whose taps are the kernel positions congruent to it. Packed weights, per phase and per block
 * of nr output channels: bias[nr], then for each phase tap t and input channel ci: w[nr].
 * A zero vector of Cin floats follows. */

/* Computes num_px (<= mr) output pixels, nr channels starting at the block's first channel
 * (only `nc` <= nr of them are stored), summing over num_taps taps of `cin` input channels.
 * taps[px * num_taps + t] points at an input pixel or the zero vector; out[px] at the output
 * pixel's first channel of the block. */
typedef void (*ks__f32_deconv_ukernel)(size_t num_px, size_t nc, size_t num_taps, size_t cin,
                                       const float *const *taps, const float *packed,
                                       float *const *out, const ks__f32_act *act);

typedef struct ks__f32_deconv_config {
    uint32_t mr, nr;
    ks__f32_deconv_ukernel ukernel;
} ks__f32_deconv_config;

double ks__f32_deconv_cost(const ks__kernel_ctx *ctx, uint32_t mr, uint32_t nr);
ks_status ks__f32_deconv_plan(ks__kernel_ctx *ctx, uint32_t mr, uint32_t nr,
                              size_t *packed_bytes_out);
ks_status ks__f32_deconv_pack(ks__kernel_ctx *ctx, uint32_t nr);
ks_status ks__f32_deconv_run(ks__kernel_ctx *ctx, const ks__f32_deconv_config *cfg);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_DWCONV_H */
