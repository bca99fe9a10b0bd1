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
#include <math.h>
#include <string.h>

#include "neon_util.h"

#define MR 8
#define NR 8

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

#define KS_NEON_INLINE static inline __attribute__((always_inline))

enum { CLAMP_NONE, CLAMP_RELU, CLAMP_RANGE };

/* Epilogue and store of a full 8 x 8 tile: + bias, + the residual row (RES), the clamp (CLAMP:
 * none, the RELU form that maps NaN to 0, or [lo, hi]), the post activation (POST: none,
 * LEAKY_RELU, HARD_SWISH or SILU), then PRELU (SLOPE), the same operations as the general
 * epilogue below (neon_act_apply). Each (CLAMP, RES, SLOPE, POST) is its own inlined copy: the
 * general epilogue tests the activation, the residual and the column count per row and reloads the
 * act fields after each store (~30 instructions per row on BlazeFace's K = 24..96 layers, against
 * 80 per 4 k steps of FMAs). */
KS_NEON_INLINE void full_tile(const int CLAMP, const int RES, const int SLOPE, const int POST,
                              const float32x4_t *acc, float32x4_t bias0, float32x4_t bias1,
                              const neon_act *va, const ks__arm_act *act, float *c,
                              size_t c_stride) {
    const float *res = act->res;
    const size_t rs = act->res_stride;
    float32x4_t slope0 = vdupq_n_f32(0.0f), slope1 = slope0;
    if (SLOPE) slope0 = vld1q_f32(act->slope), slope1 = vld1q_f32(act->slope + 4);
    const float32x4_t lo = va->lo, hi = va->hi, zero = vdupq_n_f32(0.0f);
    for (int r = 0; r < MR; r++) {
        float32x4_t x0 = vaddq_f32(acc[2 * r], bias0), x1 = vaddq_f32(acc[2 * r + 1], bias1);
        if (RES) {
            x0 = vaddq_f32(x0, vld1q_f32(res + (size_t)r * rs));
            x1 = vaddq_f32(x1, vld1q_f32(res + (size_t)r * rs + 4));
        }
        if (CLAMP == CLAMP_RELU) {
            x0 = vbslq_f32(vcgtq_f32(x0, lo), x0, lo);
            x1 = vbslq_f32(vcgtq_f32(x1, lo), x1, lo);
        } else if (CLAMP == CLAMP_RANGE) {
            x0 = vminq_f32(vmaxq_f32(x0, lo), hi);
            x1 = vminq_f32(vmaxq_f32(x1, lo), hi);
        }
        if (POST == KS_ACT_LEAKY_RELU) {
            x0 = vbslq_f32(vcgeq_f32(x0, zero), x0, vmulq_f32(x0, va->alpha));
            x1 = vbslq_f32(vcgeq_f32(x1, zero), x1, vmulq_f32(x1, va->alpha));
        } else if (POST == KS_ACT_HARD_SWISH) {
            x0 = neon_hard_swish(x0);
            x1 = neon_hard_swish(x1);
        } else if (POST == KS_ACT_SILU) {
            x0 = neon_silu(x0);
            x1 = neon_silu(x1);
        }
        if (SLOPE) {
            x0 = vbslq_f32(vcgeq_f32(x0, zero), x0, vmulq_f32(x0, slope0));
            x1 = vbslq_f32(vcgeq_f32(x1, zero), x1, vmulq_f32(x1, slope1));
        }
        float *cr = c + (size_t)r * c_stride;
        vst1q_f32(cr, x0);
        vst1q_f32(cr + 4, x1);
    }
}

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
        const float32x4x2_t wv = vld1q_f32_x2(w);                                                  \
        const float32x4_t w0 = wv.val[0], w1 = wv.val[1];                                          \
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
            const float32x4x2_t wv = vld1q_f32_x2(w);
            const float32x4_t w0 = wv.val[0], w1 = wv.val[1];
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
    if (mr == MR && nc == NR) {
        /* The full tile: each variant an inlined copy with its clamp, residual, post activation
         * and PRELU known (full_tile); the post activations only without a clamp or PRELU (as
         * models use them: YOLOX-nano's SiLU convs, 6.9 % of its instructions in an out-of-line
         * neon_act_apply). */
        const float32x4_t acc[2 * MR] = {acc00, acc01, acc10, acc11, acc20, acc21, acc30, acc31,
                                         acc40, acc41, acc50, acc51, acc60, acc61, acc70, acc71};
        const int clamp = va.nan_to_lo                                  ? CLAMP_RELU
                          : act->lo == -INFINITY && act->hi == INFINITY ? CLAMP_NONE
                                                                        : CLAMP_RANGE;
        const int res = act->res != NULL, slope = act->slope != NULL;
        if (va.post == KS_ACT_NONE) {
            const int kind = clamp * 4 + res * 2 + slope;
            switch (kind) {
#define KIND(cl, r, sl)                                                                            \
    case cl * 4 + r * 2 + sl:                                                                      \
        full_tile(cl, r, sl, KS_ACT_NONE, acc, bias0, bias1, &va, act, c, c_stride);               \
        return;
                // clang-format off
                KIND(CLAMP_NONE, 0, 0) KIND(CLAMP_NONE, 0, 1)
                KIND(CLAMP_NONE, 1, 0) KIND(CLAMP_NONE, 1, 1)
                KIND(CLAMP_RELU, 0, 0) KIND(CLAMP_RELU, 0, 1)
                KIND(CLAMP_RELU, 1, 0) KIND(CLAMP_RELU, 1, 1)
                KIND(CLAMP_RANGE, 0, 0) KIND(CLAMP_RANGE, 0, 1)
                KIND(CLAMP_RANGE, 1, 0) KIND(CLAMP_RANGE, 1, 1)
            default:
                break;
                // clang-format on
            }
#undef KIND
        } else if (clamp == CLAMP_NONE && !slope) {
            switch (va.post * 2 + res) {
#define POSTK(p, r)                                                                                \
    case p * 2 + r:                                                                                \
        full_tile(CLAMP_NONE, r, 0, p, acc, bias0, bias1, &va, act, c, c_stride);                  \
        return;
                // clang-format off
                POSTK(KS_ACT_SILU, 0) POSTK(KS_ACT_SILU, 1)
                POSTK(KS_ACT_HARD_SWISH, 0) POSTK(KS_ACT_HARD_SWISH, 1)
                POSTK(KS_ACT_LEAKY_RELU, 0) POSTK(KS_ACT_LEAKY_RELU, 1)
            default:
                break;
                // clang-format on
            }
#undef POSTK
        }
    }
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
