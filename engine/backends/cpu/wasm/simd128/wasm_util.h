/* Inline WebAssembly SIMD128 helpers shared by the wasm/simd128 kernels: fused activations. Not
 * a published API; included only by files in this directory (built with -msimd128). The same
 * formulas as arm/neon/neon_util.h, with a multiply and an add where NEON fuses them (baseline
 * SIMD128 has no FMA). */
#ifndef KESTREL_CPU_WASM_SIMD128_UTIL_H
#define KESTREL_CPU_WASM_SIMD128_UTIL_H

#include <wasm_simd128.h>

#include "../../arm_common.h"

/* Activation constants loaded once per microkernel call. */
typedef struct wasm_act {
    v128_t lo, hi, alpha;
    int32_t post;
    int32_t nan_to_lo; /* RELU: the reference maps NaN to 0 (x > 0 ? x : 0); others keep NaN */
} wasm_act;

static inline wasm_act wasm_act_load(const ks__arm_act *a) {
    wasm_act v;
    v.lo = wasm_f32x4_splat(a->lo);
    v.hi = wasm_f32x4_splat(a->hi);
    v.alpha = wasm_f32x4_splat(a->alpha);
    v.post = a->post;
    v.nan_to_lo = a->lo == 0.0f && a->hi > 3.0e38f;
    return v;
}

/* x > y ? x : y and x < y ? x : y, as the reference's C expressions (y wins on NaN). */
static inline v128_t wasm_gt_sel(v128_t x, v128_t y) {
    return wasm_v128_bitselect(x, y, wasm_f32x4_gt(x, y));
}
static inline v128_t wasm_lt_sel(v128_t x, v128_t y) {
    return wasm_v128_bitselect(x, y, wasm_f32x4_lt(x, y));
}

/* x * clamp(x + 3, 0, 6) / 6 in the reference's order of operations. */
static inline v128_t wasm_hard_swish(v128_t x) {
    v128_t r = wasm_f32x4_add(x, wasm_f32x4_splat(3.0f));
    r = wasm_f32x4_min(wasm_f32x4_max(r, wasm_f32x4_splat(0.0f)), wasm_f32x4_splat(6.0f));
    return wasm_f32x4_div(wasm_f32x4_mul(x, r), wasm_f32x4_splat(6.0f));
}

/* SiLU, the formula of neon_silu (x / (1 + e) for x >= 0, x * e / (1 + e) below, e = e^-|x|). */
static inline v128_t wasm_silu(v128_t x) {
    const v128_t min_t = wasm_f32x4_splat(-87.3f);
    v128_t t = wasm_f32x4_neg(wasm_f32x4_abs(x));
    v128_t tiny = wasm_f32x4_lt(t, min_t);
    t = wasm_f32x4_max(t, min_t);
    v128_t n = wasm_f32x4_nearest(wasm_f32x4_mul(t, wasm_f32x4_splat(1.44269504088896341f)));
    v128_t r = wasm_f32x4_sub(t, wasm_f32x4_mul(n, wasm_f32x4_splat(0.693359375f)));
    r = wasm_f32x4_sub(r, wasm_f32x4_mul(n, wasm_f32x4_splat(-2.12194440e-4f)));
    v128_t p = wasm_f32x4_splat(1.9875691500e-4f);
#define WASM_HORNER(c) p = wasm_f32x4_add(wasm_f32x4_splat(c), wasm_f32x4_mul(p, r))
    WASM_HORNER(1.3981999507e-3f);
    WASM_HORNER(8.3334519073e-3f);
    WASM_HORNER(4.1665795894e-2f);
    WASM_HORNER(1.6666665459e-1f);
    WASM_HORNER(5.0000001201e-1f);
#undef WASM_HORNER
    p = wasm_f32x4_add(r, wasm_f32x4_mul(p, wasm_f32x4_mul(r, r)));
    p = wasm_f32x4_add(p, wasm_f32x4_splat(1.0f));
    v128_t bits =
        wasm_i32x4_shl(wasm_i32x4_add(wasm_i32x4_trunc_sat_f32x4(n), wasm_i32x4_splat(127)), 23);
    v128_t e = wasm_f32x4_mul(p, bits);
    e = wasm_v128_andnot(e, tiny);
    v128_t q = wasm_f32x4_div(x, wasm_f32x4_add(wasm_f32x4_splat(1.0f), e));
    return wasm_v128_bitselect(q, wasm_f32x4_mul(q, e), wasm_f32x4_ge(x, wasm_f32x4_splat(0.0f)));
}

static inline v128_t wasm_act_apply(v128_t x, const wasm_act *a) {
    if (a->nan_to_lo)
        x = wasm_gt_sel(x, a->lo);
    else
        x = wasm_lt_sel(wasm_gt_sel(x, a->lo), a->hi);
    if (a->post == KS_ACT_LEAKY_RELU)
        x = wasm_v128_bitselect(x, wasm_f32x4_mul(x, a->alpha),
                                wasm_f32x4_ge(x, wasm_f32x4_splat(0.0f)));
    else if (a->post == KS_ACT_HARD_SWISH)
        x = wasm_hard_swish(x);
    else if (a->post == KS_ACT_SILU)
        x = wasm_silu(x);
    return x;
}

#endif
