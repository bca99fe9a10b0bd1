/* Inline NEON helpers shared by the arm/neon kernels: fused activations and exp. Not a published
 * API; included only by files in this directory (AArch64 Advanced SIMD, no extra flags). */
#ifndef KESTREL_CPU_ARM_NEON_UTIL_H
#define KESTREL_CPU_ARM_NEON_UTIL_H

#include <arm_neon.h>

#include "../../arm_common.h"

/* Activation constants loaded once per microkernel call. */
typedef struct neon_act {
    float32x4_t lo, hi, alpha;
    int32_t post;
    int32_t nan_to_lo; /* RELU: the reference maps NaN to 0 (x > 0 ? x : 0); others keep NaN */
} neon_act;

static inline neon_act neon_act_load(const ks__arm_act *a) {
    neon_act v;
    v.lo = vdupq_n_f32(a->lo);
    v.hi = vdupq_n_f32(a->hi);
    v.alpha = vdupq_n_f32(a->alpha);
    v.post = a->post;
    v.nan_to_lo = a->lo == 0.0f && a->hi > 3.0e38f;
    return v;
}

/* x * clamp(x + 3, 0, 6) / 6 in the reference's order of operations (bit-identical). */
static inline float32x4_t neon_hard_swish(float32x4_t x) {
    float32x4_t r = vaddq_f32(x, vdupq_n_f32(3.0f));
    r = vminq_f32(vmaxq_f32(r, vdupq_n_f32(0.0f)), vdupq_n_f32(6.0f));
    return vdivq_f32(vmulq_f32(x, r), vdupq_n_f32(6.0f));
}

/* SiLU (KS_ACT_SILU), the same formula as the x86 ks_avx2_silu: x / (1 + e) for x >= 0 and
 * x * e / (1 + e) below, e = e^-|x| (so nothing overflows) by Cody-Waite reduction (n rounded
 * by adding 1.5 * 2^23 + 127, which leaves n + 127 in the low mantissa bits), the degree-5
 * polynomial and 2^n through the exponent bits; -|x| < -87.3 gives e = 0.
 * < 1e-6 relative to the expf-based reference (test_silu.c). NaN stays NaN. */
static inline float32x4_t neon_silu(float32x4_t x) {
    const float32x4_t min_t = vdupq_n_f32(-87.3f);
    float32x4_t t = vnegq_f32(vabsq_f32(x));
    uint32x4_t tiny = vcltq_f32(t, min_t);
    t = vmaxq_f32(t, min_t);
    const float32x4_t magic = vdupq_n_f32(12583039.0f); /* 1.5 * 2^23 + 127 */
    float32x4_t j = vfmaq_f32(magic, t, vdupq_n_f32(1.44269504088896341f));
    float32x4_t n = vsubq_f32(j, magic);
    float32x4_t r = vfmsq_f32(t, n, vdupq_n_f32(0.693359375f));
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    float32x4_t p = vdupq_n_f32(8.2902722061e-3f);
    p = vfmaq_f32(vdupq_n_f32(4.1898161173e-2f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.6667638719e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(4.9999147654e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(9.9999970198e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    int32x4_t bits = vshlq_n_s32(vreinterpretq_s32_f32(j), 23);
    float32x4_t e = vmulq_f32(p, vreinterpretq_f32_s32(bits));
    e = vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(e), tiny));
    float32x4_t q = vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), e));
    return vbslq_f32(vcgeq_f32(x, vdupq_n_f32(0.0f)), q, vmulq_f32(q, e));
}

static inline float32x4_t neon_act_apply(float32x4_t x, const neon_act *a) {
    if (a->nan_to_lo)
        x = vbslq_f32(vcgtq_f32(x, a->lo), x, a->lo);
    else
        x = vminq_f32(vmaxq_f32(x, a->lo), a->hi);
    if (a->post == KS_ACT_LEAKY_RELU)
        x = vbslq_f32(vcgeq_f32(x, vdupq_n_f32(0.0f)), x, vmulq_f32(x, a->alpha));
    else if (a->post == KS_ACT_HARD_SWISH)
        x = neon_hard_swish(x);
    else if (a->post == KS_ACT_SILU)
        x = neon_silu(x);
    return x;
}

static inline float neon_act_scalar(float x, const ks__arm_act *a) {
    if (a->lo == 0.0f && a->hi > 3.0e38f)
        x = x > 0.0f ? x : 0.0f; /* RELU: NaN -> 0 as the reference */
    else
        x = x < a->lo ? a->lo : (x > a->hi ? a->hi : x);
    return a->post == KS_ACT_NONE ? x : ks__act_apply(x, a->post, a->alpha);
}

/* e^x for x <= 0 with ~1 ulp error; results below 2^-126 flush to 0 (e^-87.3). Range reduction
 * x = n ln2 + r, |r| <= ln2/2 (ln2 split in two so n*ln2 is exact), then a degree-6 Taylor
 * polynomial of e^r (truncation error < 2e-7 relative), scaled by 2^n through the exponent bits. */
static inline float32x4_t neon_exp_nonpos(float32x4_t x) {
    const float32x4_t min_x = vdupq_n_f32(-87.3f);
    uint32x4_t tiny = vcltq_f32(x, min_x);
    x = vmaxq_f32(x, min_x);
    float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693145751953125f));
    r = vfmsq_f32(r, n, vdupq_n_f32(1.428606765330187045e-06f));
    float32x4_t p = vdupq_n_f32(1.0f / 720.0f);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 120.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 24.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 6.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    float32x4_t y = vmulq_f32(p, vreinterpretq_f32_s32(e));
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(y), tiny));
}

/* 1 / (1 + e^-x), through e = e^-|x| so the exponential never overflows. */
static inline float32x4_t neon_sigmoid(float32x4_t x) {
    float32x4_t e = neon_exp_nonpos(vnegq_f32(vabsq_f32(x)));
    float32x4_t d = vaddq_f32(vdupq_n_f32(1.0f), e);
    float32x4_t pos = vdivq_f32(vdupq_n_f32(1.0f), d);
    float32x4_t neg = vdivq_f32(e, d);
    return vbslq_f32(vcgeq_f32(x, vdupq_n_f32(0.0f)), pos, neg);
}

#endif /* KESTREL_CPU_ARM_NEON_UTIL_H */
