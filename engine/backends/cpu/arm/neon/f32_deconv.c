/* fp32 transpose convolution, NEON: the per-phase indirect GEMM microkernel of the portable
 * CONV2D_TRANSPOSE driver (dwconv.c), 4 output pixels x 16 output channels (four 4-lane vectors
 * per pixel, 16 accumulators; input channels broadcast), written with the vector layer of
 * x86/avx2/f32_vsimd.h. Like the x86 kernels it starts the sums from the bias and adds the taps
 * in (tap, channel) order; partial channel blocks are stored through v_storen. */
#include "../../dwconv.h"
#include "../../x86/avx2/f32_vsimd.h"

#define MR 4
#define NR 16
#define NV (NR / V_N)

/* Clamp to [lo, hi] (x86 operand order, so NaN passes), then the post activation. */
static inline vf deconv_act(vf v, vf lo, vf hi, const ks__f32_act *a) {
    v = v_clamp(v, lo, hi);
    if (a->act == KS_ACT_LEAKY_RELU)
        v = v_sel(v_lt(v, v_zero()), v_mul(v, v_set1(a->alpha)), v);
    else if (a->act == KS_ACT_HARD_SWISH)
        v = v_hard_swish(v);
    else if (a->act == KS_ACT_SILU)
        v = v_mul(v, v_sigmoid(v));
    return v;
}

static void deconv_4x16(size_t num_px, size_t nc, size_t num_taps, size_t cin,
                        const float *const *taps, const float *packed, float *const *out,
                        const ks__f32_act *act) {
    vf acc[MR][NV];
    for (size_t m = 0; m < MR; m++)
        for (size_t k = 0; k < NV; k++)
            acc[m][k] = v_load(packed + k * V_N);
    const float *w = packed + NR;
    for (size_t t = 0; t < num_taps; t++) {
        const float *a[MR];
        for (size_t m = 0; m < MR; m++)
            a[m] = taps[m * num_taps + t];
        for (size_t ci = 0; ci < cin; ci++, w += NR) {
            vf wv[NV];
            for (size_t k = 0; k < NV; k++)
                wv[k] = v_load(w + k * V_N);
            for (size_t m = 0; m < MR; m++) {
                const vf x = v_set1(a[m][ci]);
                for (size_t k = 0; k < NV; k++)
                    acc[m][k] = v_fmadd(x, wv[k], acc[m][k]);
            }
        }
    }
    const vf lo = v_set1(act->lo), hi = v_set1(act->hi);
    for (size_t m = 0; m < num_px; m++)
        for (size_t k = 0; k < NV && k * V_N < nc; k++) {
            vf v = deconv_act(acc[m][k], lo, hi, act);
            size_t n = nc - k * V_N;
            if (n >= V_N)
                v_store(out[m] + k * V_N, v);
            else
                v_storen(out[m] + k * V_N, v, n);
        }
}

static const ks__f32_deconv_config k_cfg = {MR, NR, deconv_4x16};

static double cost(const ks__kernel_ctx *ctx) {
    /* four 4-lane vectors per 16 channels: four times the AVX-512 cost unit */
    double c = ks__f32_deconv_cost(ctx, MR, NR);
    return c < 0 ? c : 4.0 * c;
}
static ks_status plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__f32_deconv_plan(ctx, MR, NR, packed_bytes_out);
}
static ks_status pack(ks__kernel_ctx *ctx) {
    return ks__f32_deconv_pack(ctx, NR);
}
static ks_status run(ks__kernel_ctx *ctx) {
    return ks__f32_deconv_run(ctx, &k_cfg);
}

const ks__impl ks_f32_deconv__neon_4x16 = {
    "ks_f32_deconv__neon_4x16", KS_OP_CONV2D_TRANSPOSE, KS_ISA_NEON, cost, plan, pack, run,
};
