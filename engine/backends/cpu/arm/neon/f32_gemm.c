/* NEON fp32 GEMM microkernel (8 rows x 8 output channels) and the CONV2D / FULLY_CONNECTED
 * variants built on it (driver: arm_common.c).
 *
 * Register budget (32 x 128-bit): 16 accumulators, 8 A vectors (4 k-steps of 8 rows, consumed by
 * lane-indexed FMAs) and 2 weight vectors, so the k loop runs without spills. 8x8 rather than a
 * wider 8x12 tile because most mobile-net layers have channel counts that are multiples of 8,
 * which keeps the zero-padded panel tail empty.
 *
 * Accumulators start at zero and the bias is added after the k loop, as in the reference (sum,
 * then bias). Starting from the bias rounds every FMA at the magnitude of the folded
 * batch-norm bias, which is often much larger than the dot product: on pose_landmark_full that
 * roughly doubled each layer's error and put the segmentation output at 1.2e-4 rel L2 against
 * LiteRT (3.3e-5 this way, the same as the double-accumulating reference kernels).
 */
#include <string.h>

#include "neon_util.h"

#define MR 8
#define NR 8

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

static void ks_f32_gemm__neon_8x8(size_t mr, size_t nc, size_t kc, size_t ks, const float *const *a,
                                  const float *w, float *c, size_t c_stride,
                                  const ks__arm_act *act) {
    const float32x4_t bias0 = vld1q_f32(w), bias1 = vld1q_f32(w + 4);
    w += NR;
#define INIT(r) float32x4_t acc##r##0 = vdupq_n_f32(0.0f), acc##r##1 = vdupq_n_f32(0.0f);
    ROWS(INIT)
#undef INIT
    for (size_t t = 0; t < ks; t++) {
#define PTR(r) const float *a##r = a[t * MR + r];
        ROWS(PTR)
#undef PTR
        size_t k = kc;
        for (; k >= 4; k -= 4) {
#define LOADA(r)                                                                                   \
    const float32x4_t va##r = vld1q_f32(a##r);                                                     \
    a##r += 4;
            ROWS(LOADA)
#undef LOADA
#define FMA_LANE(r, l)                                                                             \
    acc##r##0 = vfmaq_laneq_f32(acc##r##0, w0, va##r, l);                                          \
    acc##r##1 = vfmaq_laneq_f32(acc##r##1, w1, va##r, l);
/* clang-format is not idempotent on this macro */
// clang-format off
#define STEP(l)                                                                                    \
    {                                                                                              \
        const float32x4_t w0 = vld1q_f32(w), w1 = vld1q_f32(w + 4);                                \
        w += NR;                                                                                   \
        FMA_LANE(0, l) FMA_LANE(1, l) FMA_LANE(2, l) FMA_LANE(3, l)                                \
        FMA_LANE(4, l) FMA_LANE(5, l) FMA_LANE(6, l) FMA_LANE(7, l)                                \
    }
            // clang-format on
            STEP(0) STEP(1) STEP(2) STEP(3)
#undef STEP
#undef FMA_LANE
        }
        for (; k > 0; k--) {
            const float32x4_t w0 = vld1q_f32(w), w1 = vld1q_f32(w + 4);
            w += NR;
#define FMA1(r)                                                                                    \
    {                                                                                              \
        const float32x4_t v = vld1q_dup_f32(a##r++);                                               \
        acc##r##0 = vfmaq_f32(acc##r##0, w0, v);                                                   \
        acc##r##1 = vfmaq_f32(acc##r##1, w1, v);                                                   \
    }
            ROWS(FMA1)
#undef FMA1
        }
    }
    const neon_act va = neon_act_load(act);
    /* conv + bias, + the residual row, then the clamp and post, then PRELU's slope (the config's
     * `fused`: the driver used to add the residual to each stored row in a separate pass, 13 % of
     * BlazeFace's instructions under qemu). Tiles without either take the plain epilogue: the
     * per-row tests cost the narrow layers of other models more than they saved. */
    if (!act->res && !act->slope) {
#define ACT(r)                                                                                     \
    acc##r##0 = neon_act_apply(vaddq_f32(acc##r##0, bias0), &va);                                  \
    acc##r##1 = neon_act_apply(vaddq_f32(acc##r##1, bias1), &va);
        ROWS(ACT)
#undef ACT
    } else {
        float32x4_t slope0 = vdupq_n_f32(0.0f), slope1 = slope0;
        if (act->slope) {
            float sl[NR] = {0};
            memcpy(sl, act->slope, nc * sizeof(float));
            slope0 = vld1q_f32(sl);
            slope1 = vld1q_f32(sl + 4);
        }
#define ACT(r)                                                                                     \
    acc##r##0 = vaddq_f32(acc##r##0, bias0);                                                       \
    acc##r##1 = vaddq_f32(acc##r##1, bias1);                                                       \
    if (act->res && r < mr) {                                                                      \
        const float *rr = act->res + (size_t)(r)*act->res_stride;                                  \
        if (nc == NR) {                                                                            \
            acc##r##0 = vaddq_f32(acc##r##0, vld1q_f32(rr));                                       \
            acc##r##1 = vaddq_f32(acc##r##1, vld1q_f32(rr + 4));                                   \
        } else {                                                                                   \
            float tmp[NR] = {0};                                                                   \
            memcpy(tmp, rr, nc * sizeof(float));                                                   \
            acc##r##0 = vaddq_f32(acc##r##0, vld1q_f32(tmp));                                      \
            acc##r##1 = vaddq_f32(acc##r##1, vld1q_f32(tmp + 4));                                  \
        }                                                                                          \
    }                                                                                              \
    acc##r##0 = neon_act_apply(acc##r##0, &va);                                                    \
    acc##r##1 = neon_act_apply(acc##r##1, &va);                                                    \
    if (act->slope) {                                                                              \
        const float32x4_t zero = vdupq_n_f32(0.0f);                                                \
        acc##r##0 =                                                                                \
            vbslq_f32(vcgeq_f32(acc##r##0, zero), acc##r##0, vmulq_f32(acc##r##0, slope0));        \
        acc##r##1 =                                                                                \
            vbslq_f32(vcgeq_f32(acc##r##1, zero), acc##r##1, vmulq_f32(acc##r##1, slope1));        \
    }
        ROWS(ACT)
#undef ACT
    }
    /* Rows past mr are not stored; a partial column tile goes through a buffer. */
#define STORE(r)                                                                                   \
    if (r < mr) {                                                                                  \
        float *cr = c + (size_t)(r)*c_stride;                                                      \
        if (nc == NR) {                                                                            \
            vst1q_f32(cr, acc##r##0);                                                              \
            vst1q_f32(cr + 4, acc##r##1);                                                          \
        } else {                                                                                   \
            float tmp[NR];                                                                         \
            vst1q_f32(tmp, acc##r##0);                                                             \
            vst1q_f32(tmp + 4, acc##r##1);                                                         \
            memcpy(cr, tmp, nc * sizeof(float));                                                   \
        }                                                                                          \
    }
    ROWS(STORE)
#undef STORE
}

static const ks__arm_gemm_config k_gemm_8x8 = {MR, NR, ks_f32_gemm__neon_8x8, 1};

static double gemm_cost(const ks__kernel_ctx *ctx) {
    return ks__arm_gemm_cost(ctx, &k_gemm_8x8);
}
static ks_status gemm_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__arm_gemm_plan(ctx, &k_gemm_8x8, packed_bytes_out);
}
static ks_status gemm_pack(ks__kernel_ctx *ctx) {
    return ks__arm_gemm_pack(ctx, &k_gemm_8x8);
}
static ks_status gemm_run(ks__kernel_ctx *ctx) {
    return ks__arm_gemm_run(ctx, &k_gemm_8x8);
}

/* Not listed in impls_arm.inc for now (see there); kept built and unit-tested. */
const ks__impl ks_f32_conv__neon_8x8;
const ks__impl ks_f32_conv__neon_8x8 = {
    "ks_f32_conv__neon_8x8", KS_OP_CONV2D, KS_ISA_NEON, gemm_cost, gemm_plan, gemm_pack, gemm_run};
const ks__impl ks_f32_fc__neon_8x8 = {"ks_f32_fc__neon_8x8",
                                      KS_OP_FULLY_CONNECTED,
                                      KS_ISA_NEON,
                                      gemm_cost,
                                      gemm_plan,
                                      gemm_pack,
                                      gemm_run};
