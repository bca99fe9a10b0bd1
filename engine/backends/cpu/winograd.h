/* Portable driver of the f32 Winograd convolutions (winograd.c). Not a published API.
 *
 * Dense 3x3, stride 1, dilation 1, ungrouped f32 CONV2D as F(m x m, 3 x 3) with m = 2, 4 or 6
 * (alpha = m + 2 transformed points per axis):
 *
 *     y = act(A^T [ (G g G^T) . (B^T d B) ] A + bias + residual)
 *
 * Work item: a block of TB output tiles (all channels). Per block, on one thread:
 *   1. input transform: each tile's alpha x alpha input patch (zero outside the image) becomes
 *      alpha^2 rows of Cin floats, V[pos][tile][Cin] (per-thread scratch);
 *   2. batched GEMM: for each of the alpha^2 positions, M[pos] = V[pos] (TB x Cin) * U[pos]
 *      (Cin x Cout), where U = G g G^T was computed in double at reshape and packed into
 *      NR-wide panels of the ISA's microkernel;
 *   3. output transform with the fused epilogue (bias, residual, activation), clipped at the
 *      image border.
 * Blocks write disjoint output tiles with a fixed summation order, so results do not depend on
 * the thread count.
 *
 * The ISA files (x86/avx2/f32_wino.c, x86/avx512/f32_wino.c) provide the transforms and the GEMM
 * microkernel and define the ks__impl entries (impls_winograd.inc); winograd_tx.h is the
 * vector-width-generic transform code they instantiate.
 */
#ifndef KESTREL_CPU_WINOGRAD_H
#define KESTREL_CPU_WINOGRAD_H

#include "gemm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* C[mr x nc] = A[mr x kc] * W[kc x NR] (mr <= MR, nc <= NR); row r of A at a + r * a_stride,
 * row r of C at c + r * c_stride. Columns >= nc of C are not written. */
typedef void (*ks__wino_gemm_fn)(size_t mr, size_t nc, size_t kc, const float *a, size_t a_stride,
                                 const float *w, float *c, size_t c_stride);

/* Input transform of one tile, all `c` channels: the alpha x alpha patch of the NHWC image `x`
 * (ih x iw x c) whose top-left input pixel is (y0, x0) (may lie outside: zeros), written to
 * v[pos * pos_stride + ch] for pos in [0, alpha^2). */
typedef void (*ks__wino_itx_fn)(const float *x, int64_t ih, int64_t iw, int64_t c, int64_t y0,
                                int64_t x0, float *v, size_t pos_stride);

/* Output transform of one tile, all `c` channels: reads m[pos * pos_stride + ch], writes the
 * m x m output pixels at (oy0, ox0) of the NHWC image y (oh x ow x c) that lie inside it,
 * with bias (c floats, never NULL), residual (NULL or same layout as y) and activation. */
typedef void (*ks__wino_otx_fn)(const float *m, size_t pos_stride, int64_t c, const float *bias,
                                float *y, const float *res, int64_t oh, int64_t ow, int64_t oy0,
                                int64_t ox0, const ks__gemm_epilogue *ep);

typedef struct ks__wino_arch {
    uint32_t m;            /* output tile edge: 2, 4 or 6 */
    uint32_t mr, nr;       /* GEMM microkernel tile */
    uint32_t vl;           /* floats per vector, for the transform cost */
    double macs_per_cycle; /* peak vector MACs per cycle (the same unit as ks__f32_gemm_cost) */
    ks__wino_gemm_fn gemm;
    ks__wino_itx_fn itx;
    ks__wino_otx_fn otx;
} ks__wino_arch;

/* Non-zero when the node is a conv this driver can compute (f32, constant F32/F16 weights,
 * 3x3, stride 1, dilation 1, groups 1). plan/pack/run accept exactly these nodes. */
int ks__wino_supported(const ks__kernel_ctx *ctx);

/* The impl steps (impl.h). cost() is additionally negative where measurements showed the
 * indirect GEMM to be as fast or faster, and for F(6x6) where its rounding error could exceed
 * the golden tolerance (see winograd.c). */
double ks__wino_cost(const ks__kernel_ctx *ctx, const ks__wino_arch *arch);
ks_status ks__wino_plan(ks__kernel_ctx *ctx, const ks__wino_arch *arch, size_t *packed_bytes_out);
ks_status ks__wino_pack(ks__kernel_ctx *ctx, const ks__wino_arch *arch);
ks_status ks__wino_run(ks__kernel_ctx *ctx, const ks__wino_arch *arch);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_WINOGRAD_H */
