/* fp32 transpose convolution, AVX2 + FMA: per output phase an indirect GEMM microkernel of
 * 4 output pixels x 16 output channels (two ymm per pixel; input channels broadcast). */
#include "f32_dw_simd.h"

#define MR 4

KS_INLINE void store_n(float *p, size_t n, __m256 v) {
    if (n >= 8)
        _mm256_storeu_ps(p, v);
    else if (n > 0)
        _mm256_maskstore_ps(p, ks_avx2_mask(n), v);
}

static void deconv_4x16(size_t num_px, size_t nc, size_t num_taps, size_t cin,
                        const float *const *taps, const float *packed, float *const *out,
                        const ks__f32_act *act) {
    __m256 lo_acc[MR], hi_acc[MR];
    __m256 b0 = _mm256_load_ps(packed), b1 = _mm256_load_ps(packed + 8);
#pragma GCC unroll 4
    for (size_t m = 0; m < MR; m++)
        lo_acc[m] = b0, hi_acc[m] = b1;
    const float *w = packed + 16;
    for (size_t t = 0; t < num_taps; t++) {
        const float *a[MR];
#pragma GCC unroll 4
        for (size_t m = 0; m < MR; m++)
            a[m] = taps[m * num_taps + t];
        for (size_t ci = 0; ci < cin; ci++, w += 16) {
            __m256 w0 = _mm256_load_ps(w), w1 = _mm256_load_ps(w + 8);
#pragma GCC unroll 4
            for (size_t m = 0; m < MR; m++) {
                __m256 v = _mm256_broadcast_ss(a[m] + ci);
                lo_acc[m] = _mm256_fmadd_ps(v, w0, lo_acc[m]);
                hi_acc[m] = _mm256_fmadd_ps(v, w1, hi_acc[m]);
            }
        }
    }
    __m256 lo = _mm256_set1_ps(act->lo), hi = _mm256_set1_ps(act->hi);
    for (size_t m = 0; m < num_px; m++) {
        store_n(out[m], nc, ks_avx2_act(lo_acc[m], lo, hi, act));
        if (nc > 8) store_n(out[m] + 8, nc - 8, ks_avx2_act(hi_acc[m], lo, hi, act));
    }
}

static const ks__f32_deconv_config k_cfg = {MR, 16, deconv_4x16};

static double cost(const ks__kernel_ctx *ctx) {
    /* two ymm per 16 channels: twice the AVX-512 cost unit */
    double c = ks__f32_deconv_cost(ctx, MR, 16);
    return c < 0 ? c : 2.0 * c;
}
static ks_status plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__f32_deconv_plan(ctx, MR, 16, packed_bytes_out);
}
static ks_status pack(ks__kernel_ctx *ctx) {
    return ks__f32_deconv_pack(ctx, 16);
}
static ks_status run(ks__kernel_ctx *ctx) {
    return ks__f32_deconv_run(ctx, &k_cfg);
}

const ks__impl ks_f32_deconv__avx2_4x16 = {
    "ks_f32_deconv__avx2_4x16", KS_OP_CONV2D_TRANSPOSE, KS_ISA_AVX2, cost, plan, pack, run,
};
