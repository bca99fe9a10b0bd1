/* fp32 transpose convolution, AVX-512: per output phase an indirect GEMM microkernel of
 * 8 output pixels x 16 output channels (input channels broadcast, packed weights streamed). */
#include "f32_dw_simd.h"

#define MR 8

static void deconv_8x16(size_t num_px, size_t nc, size_t num_taps, size_t cin,
                        const float *const *taps, const float *packed, float *const *out,
                        const ks__f32_act *act) {
    __m512 acc[MR];
    __m512 bias = _mm512_load_ps(packed);
#pragma GCC unroll 8
    for (size_t m = 0; m < MR; m++)
        acc[m] = bias;
    const float *w = packed + 16;
    for (size_t t = 0; t < num_taps; t++) {
        const float *a[MR];
#pragma GCC unroll 8
        for (size_t m = 0; m < MR; m++)
            a[m] = taps[m * num_taps + t];
        for (size_t ci = 0; ci < cin; ci++, w += 16) {
            __m512 b = _mm512_load_ps(w);
#pragma GCC unroll 8
            for (size_t m = 0; m < MR; m++)
                acc[m] = _mm512_fmadd_ps(_mm512_set1_ps(a[m][ci]), b, acc[m]);
        }
    }
    __m512 lo = _mm512_set1_ps(act->lo), hi = _mm512_set1_ps(act->hi);
    __mmask16 mask = ks_avx512_mask(nc);
    for (size_t m = 0; m < num_px; m++)
        _mm512_mask_storeu_ps(out[m], mask, ks_avx512_act(acc[m], lo, hi, act));
}

static const ks__f32_deconv_config k_cfg = {MR, 16, deconv_8x16};

static double cost(const ks__kernel_ctx *ctx) {
    return ks__f32_deconv_cost(ctx, MR, 16);
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

const ks__impl ks_f32_deconv__avx512_8x16 = {
    "ks_f32_deconv__avx512_8x16", KS_OP_CONV2D_TRANSPOSE, KS_ISA_AVX512, cost, plan, pack, run,
};
