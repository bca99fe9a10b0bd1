/* NEON fp32 depthwise CONV2D (driver: arm_common.c), vectorized over channels (NHWC), 8 channels
 * per step then 4, then a 1..3 channel tail through a small buffer (inputs are not padded; the
 * packed weights and the zero vector are). 3x3 and 5x5 get their own inlined copies so the tap
 * loop is fully unrolled; any stride/dilation/padding works because taps come from the driver's
 * per-pixel pointer table. The bias is added after the taps, not used as the starting value, so
 * the FMAs round at the magnitude of the products (see f32_gemm.c). */
#include <string.h>

#include "neon_util.h"

static inline __attribute__((always_inline)) void
dw_pixels(size_t num_px, size_t channels, size_t cp, size_t num_taps, const float *const *taps,
          const float *packed, float *out, const ks__arm_act *act) {
    const neon_act va = neon_act_load(act);
    const float *wt = packed + cp;
    for (size_t px = 0; px < num_px; px++, taps += num_taps, out += channels) {
        size_t c = 0;
        for (; c + 8 <= channels; c += 8) {
            float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
            for (size_t t = 0; t < num_taps; t++) {
                const float *x = taps[t] + c, *w = wt + t * cp + c;
                acc0 = vfmaq_f32(acc0, vld1q_f32(x), vld1q_f32(w));
                acc1 = vfmaq_f32(acc1, vld1q_f32(x + 4), vld1q_f32(w + 4));
            }
            acc0 = vaddq_f32(acc0, vld1q_f32(packed + c));
            acc1 = vaddq_f32(acc1, vld1q_f32(packed + c + 4));
            vst1q_f32(out + c, neon_act_apply(acc0, &va));
            vst1q_f32(out + c + 4, neon_act_apply(acc1, &va));
        }
        for (; c + 4 <= channels; c += 4) {
            float32x4_t acc = vdupq_n_f32(0.0f);
            for (size_t t = 0; t < num_taps; t++)
                acc = vfmaq_f32(acc, vld1q_f32(taps[t] + c), vld1q_f32(wt + t * cp + c));
            acc = vaddq_f32(acc, vld1q_f32(packed + c));
            vst1q_f32(out + c, neon_act_apply(acc, &va));
        }
        if (c < channels) {
            size_t rem = channels - c;
            float32x4_t acc = vdupq_n_f32(0.0f);
            for (size_t t = 0; t < num_taps; t++) {
                float buf[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                memcpy(buf, taps[t] + c, rem * sizeof(float));
                acc = vfmaq_f32(acc, vld1q_f32(buf), vld1q_f32(wt + t * cp + c));
            }
            acc = vaddq_f32(acc, vld1q_f32(packed + c));
            float res[4];
            vst1q_f32(res, neon_act_apply(acc, &va));
            memcpy(out + c, res, rem * sizeof(float));
        }
    }
}

static void ks_f32_dwconv__neon_c8(size_t num_px, size_t channels, size_t cp, size_t num_taps,
                                   const float *const *taps, const float *packed, float *out,
                                   const ks__arm_act *act) {
    if (num_taps == 9)
        dw_pixels(num_px, channels, cp, 9, taps, packed, out, act);
    else if (num_taps == 25)
        dw_pixels(num_px, channels, cp, 25, taps, packed, out, act);
    else
        dw_pixels(num_px, channels, cp, num_taps, taps, packed, out, act);
}

static double dw_cost(const ks__kernel_ctx *ctx) {
    return ks__arm_dw_cost(ctx);
}
static ks_status dw_run(ks__kernel_ctx *ctx) {
    return ks__arm_dw_run(ctx, ks_f32_dwconv__neon_c8);
}

const ks__impl ks_f32_dwconv__neon_c8_impl = {
    "ks_f32_dwconv__neon_c8", KS_OP_CONV2D,    KS_ISA_NEON, dw_cost,
    ks__arm_dw_plan,          ks__arm_dw_pack, dw_run};
