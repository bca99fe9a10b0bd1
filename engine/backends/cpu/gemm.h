/* Portable driver of the f32 GEMM / indirect-GEMM kernels (gemm.c). Not a published API.
 *
 * One register-blocked microkernel per ISA computes an MR x NR tile of
 *     C = act(A * W + bias + residual)
 * where W is packed once at reshape into NR-wide panels ([NR bias][K x NR weights], channels past
 * the end zero-filled) and A is given *indirectly*: for each of the `ks` kernel taps, MR row
 * pointers, each pointing at `kc` contiguous floats. This one interface serves:
 *   - CONV2D (any KHxKW, stride, dilation, padding, groups): the row pointers of an output pixel
 *     are its KH*KW input pixels (NHWC: Cin/groups contiguous channels each); taps that fall into
 *     the padding point at a zero vector, so the microkernel has no bounds checks;
 *   - 1x1 convs, FULLY_CONNECTED and MATMUL with a constant 2-D rhs: ks == 1, one pointer per row.
 * The driver builds the row pointers of each MR-row tile at run time in per-thread scratch (a few
 * hundred bytes), which keeps reshape memory independent of the image size.
 *
 * The ISA files define the microkernels and the ks__impl entries (impls_conv.inc); the cost, plan,
 * pack and run steps are shared here.
 */
#ifndef KESTREL_CPU_GEMM_H
#define KESTREL_CPU_GEMM_H

#include "impl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KS_GEMM_MAX_MR 16

typedef struct ks__gemm_epilogue {
    int32_t act; /* ks__act */
    float alpha; /* leaky relu slope */
    /* KS_ACT_PRELU: the slopes of the output channels. The driver passes each microkernel call
     * an epilogue whose `slope` points at the tile's first column; the microkernel reads only
     * the nc slopes of its columns. */
    const float *slope;
} ks__gemm_epilogue;

/* The activations that the ISA kernels' full tiles compile a copy for, X(act) each (TANH is
 * applied by ks__gemm_act_scalar after the tile and takes the generic path). */
#define KS_GEMM_TILE_ACTS(X)                                                                       \
    X(KS_ACT_NONE)                                                                                 \
    X(KS_ACT_RELU)                                                                                 \
    X(KS_ACT_RELU6)                                                                                \
    X(KS_ACT_RELU_N1_TO_1)                                                                         \
    X(KS_ACT_PRELU)                                                                                \
    X(KS_ACT_LEAKY_RELU)                                                                           \
    X(KS_ACT_HARD_SWISH)                                                                           \
    X(KS_ACT_SIGMOID)                                                                              \
    X(KS_ACT_SILU)

/* Computes rows [0, mr) x columns [0, nc) of one tile (mr <= MR, nc <= NR).
 *   a:       ks groups of MR pointers (a[t * MR + r]); rows >= mr are ignored. A pointer equal
 *            to `zero` is used as is; any other gets `a_offset` floats added (the group's first
 *            input channel), so one pointer set serves every group.
 *   w:       the tile's packed panel: NR bias floats, then ks * kc rows of NR floats.
 *   c:       output row r starts at c + r * c_stride (floats).
 *   res:     NULL, or the residual with the same layout as c (res_stride floats per row). */
typedef void (*ks__f32_igemm_fn)(size_t mr, size_t nc, size_t kc, size_t ks, const float *const *a,
                                 size_t a_offset, const float *zero, const float *w, float *c,
                                 size_t c_stride, const float *res, size_t res_stride,
                                 const ks__gemm_epilogue *ep);

typedef struct ks__f32_gemm_arch {
    uint32_t mr, nr;
    double macs_per_cycle; /* peak vector MACs per cycle, for cost() */
    ks__f32_igemm_fn ukernel;
    /* 0, or the width (one vector) below which the microkernel computes only the first vector of
     * a panel (a last panel of nc <= narrow_nr columns costs narrow_nr, not nr, columns) */
    uint32_t narrow_nr;
} ks__f32_gemm_arch;

/* The impl steps (impl.h) for CONV2D, FULLY_CONNECTED and MATMUL, given the ISA's microkernel.
 * cost() is the padded MACs at peak plus the per-tile overheads below; it is negative for anything
 * but float activations with constant F32/F16 weights (and constant 2-D rhs for MATMUL, without
 * transpose_a), and for grouped convs whose groups have fewer than 8 input or output channels
 * (depthwise-like: other kernels do those better). */
double ks__f32_gemm_cost(const ks__kernel_ctx *ctx, const ks__f32_gemm_arch *arch);
ks_status ks__f32_gemm_plan(ks__kernel_ctx *ctx, const ks__f32_gemm_arch *arch,
                            size_t *packed_bytes_out);
ks_status ks__f32_gemm_pack(ks__kernel_ctx *ctx, const ks__f32_gemm_arch *arch);
ks_status ks__f32_gemm_run(ks__kernel_ctx *ctx, const ks__f32_gemm_arch *arch);

/* Applies act to n floats in place with the scalar reference formula; microkernels use it for
 * activations they do not vectorize (tanh). */
void ks__gemm_act_scalar(float *x, size_t n, const ks__gemm_epilogue *ep);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_GEMM_H */
