/* f32 indirect-GEMM microkernel for AVX2 + FMA: MR x 16 tiles (gemm.h), and the CONV2D,
 * FULLY_CONNECTED and MATMUL variants built on it.
 *
 * Why 6 x 16: 6 rows x 2 ymm = 12 accumulators, plus 2 weight vectors and a broadcast, uses 15 of
 * the 16 ymm registers; 12 independent FMAs cover the FMA latency on two pipes. 16 columns divide
 * every common channel count.
 */
#include <immintrin.h>

#include "../../gemm.h"
#include "f32_silu.h"

#define ARCH_MR 6
#define ARCH_NR 16

#if defined(__clang__)
#define KS_UNROLL _Pragma("unroll")
#else
#define KS_UNROLL _Pragma("GCC unroll 16")
#endif
#define KS_INLINE static inline __attribute__((always_inline))

/* e^x for the sigmoid epilogue: Cody-Waite range reduction by ln 2 and a degree-6 polynomial
 * (Cephes expf coefficients); the clamp keeps 2^n a normal float. */
KS_INLINE __m256 exp_ps(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
    p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));
    __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/* The fused activation, same formulas as ks__act_apply (tanh is done by the caller); `slope` holds
 * the PRELU slopes of v's columns. */
KS_INLINE __m256 act_of(__m256 v, __m256 slope, int32_t act, float alpha) {
    const __m256 zero = _mm256_setzero_ps();
    switch (act) {
    case KS_ACT_PRELU:
        return _mm256_blendv_ps(v, _mm256_mul_ps(v, slope), _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
    case KS_ACT_RELU:
        return _mm256_max_ps(v, zero);
    case KS_ACT_RELU6:
        return _mm256_min_ps(_mm256_max_ps(v, zero), _mm256_set1_ps(6.0f));
    case KS_ACT_RELU_N1_TO_1:
        return _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-1.0f)), _mm256_set1_ps(1.0f));
    case KS_ACT_LEAKY_RELU: {
        __m256 neg = _mm256_cmp_ps(v, zero, _CMP_LT_OQ);
        return _mm256_blendv_ps(v, _mm256_mul_ps(v, _mm256_set1_ps(alpha)), neg);
    }
    case KS_ACT_HARD_SWISH: {
        __m256 r = _mm256_add_ps(v, _mm256_set1_ps(3.0f));
        r = _mm256_min_ps(_mm256_max_ps(r, zero), _mm256_set1_ps(6.0f));
        return _mm256_div_ps(_mm256_mul_ps(v, r), _mm256_set1_ps(6.0f));
    }
    case KS_ACT_SIGMOID: {
        __m256 e = exp_ps(_mm256_sub_ps(zero, v));
        return _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
    }
    case KS_ACT_SILU:
        return ks_avx2_silu(v);
    default:
        return v;
    }
}

KS_INLINE __m256 act_ps(__m256 v, __m256 slope, const ks__gemm_epilogue *ep) {
    return act_of(v, slope, ep->act, ep->alpha);
}

/* Lane mask with the first n (0..8) lanes set. */
KS_INLINE __m256i lane_mask(size_t n) {
    static const int32_t k_ones[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(const void *)(k_ones + 8 - n));
}

/* NV: 2 computes both 8-column halves, 1 only the first (panels whose columns all fit in it:
 * half the FMAs and weight loads of such a tile). */
KS_INLINE void tile(const size_t MR, const size_t NV, size_t nc, size_t kc, size_t ks,
                    const float *const *a, size_t a_off, const float *zero, const float *w,
                    float *c, size_t cs, const float *res, size_t rs, const ks__gemm_epilogue *ep) {
    __m256 acc0[ARCH_MR], acc1[ARCH_MR];
    const __m256 bias0 = _mm256_load_ps(w), bias1 = _mm256_load_ps(w + 8);
    w += ARCH_NR;
    /* Sums start at zero and the bias is added after the products: a folded batch-norm bias is
     * often much larger than the products, and starting from it makes every FMA round at its
     * scale (about 2x the error; see arm/neon/f32_gemm.c). */
    KS_UNROLL for (size_t r = 0; r < MR; r++) {
        acc0[r] = _mm256_setzero_ps();
        acc1[r] = _mm256_setzero_ps();
    }
    do {
        const float *ap[ARCH_MR];
        KS_UNROLL for (size_t r = 0; r < MR; r++) {
            ap[r] = a[r];
            if (ap[r] != zero) ap[r] += a_off;
        }
        a += ARCH_MR;
        for (size_t k = 0; k < kc; k++) {
            const __m256 b0 = _mm256_load_ps(w), b1 = NV == 2 ? _mm256_load_ps(w + 8) : b0;
            w += ARCH_NR;
            KS_UNROLL for (size_t r = 0; r < MR; r++) {
                const __m256 av = _mm256_broadcast_ss(ap[r] + k);
                acc0[r] = _mm256_fmadd_ps(av, b0, acc0[r]);
                if (NV == 2) acc1[r] = _mm256_fmadd_ps(av, b1, acc1[r]);
            }
        }
    } while (--ks);
    const __m256i m0 = lane_mask(nc >= 8 ? 8 : nc),
                  m1 = lane_mask(nc >= 16 ? 8 : (nc > 8 ? nc - 8 : 0));
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    if (ep->slope) {
        s0 = _mm256_maskload_ps(ep->slope, m0);
        if (NV == 2) s1 = _mm256_maskload_ps(ep->slope + 8, m1);
    }
    KS_UNROLL for (size_t r = 0; r < MR; r++) {
        __m256 v0 = _mm256_add_ps(acc0[r], bias0), v1 = _mm256_add_ps(acc1[r], bias1);
        float *cr = c + r * cs;
        if (nc == ARCH_NR) {
            if (res) {
                v0 = _mm256_add_ps(v0, _mm256_loadu_ps(res + r * rs));
                v1 = _mm256_add_ps(v1, _mm256_loadu_ps(res + r * rs + 8));
            }
            _mm256_storeu_ps(cr, act_ps(v0, s0, ep));
            _mm256_storeu_ps(cr + 8, act_ps(v1, s1, ep));
        } else if (nc >= 8) {
            /* vmaskmovps stores are microcoded on AMD (Zen 1: ~20x a plain store, even with an
             * empty mask): a full first half is stored plainly, an empty second half not at all */
            if (res) v0 = _mm256_add_ps(v0, _mm256_loadu_ps(res + r * rs));
            _mm256_storeu_ps(cr, act_ps(v0, s0, ep));
            if (NV == 2 && nc > 8) {
                if (res) v1 = _mm256_add_ps(v1, _mm256_maskload_ps(res + r * rs + 8, m1));
                _mm256_maskstore_ps(cr + 8, m1, act_ps(v1, s1, ep));
            }
        } else {
            if (res) v0 = _mm256_add_ps(v0, _mm256_maskload_ps(res + r * rs, m0));
            _mm256_maskstore_ps(cr, m0, act_ps(v0, s0, ep));
        }
        if (ep->act == KS_ACT_TANH) ks__gemm_act_scalar(cr, nc, ep);
    }
}

/* The full 6 x 16 tile, the common case of every layer's interior, with the activation ACT a
 * constant of each inlined copy (TANH excepted: ks__gemm_act_scalar). Same sums in the same order
 * and the same epilogue as tile(); what differs is the code around them: no per-row dispatch on
 * the activation, the column count or masks. With K = 16 (1x1 convs over 16 channels) the
 * generic tile spent ~710 instructions (callgrind) for its 192 FMAs, this one ~580: the front
 * end, not the FMA pipes, set the pace (the 16 -> 16 1x1 conv at 160x160: 0.231 -> 0.194 ms). */
KS_INLINE void tile_6x16(const int32_t ACT, size_t kc, size_t ks, const float *const *a,
                         size_t a_off, const float *zero, const float *w, float *c, size_t cs,
                         const float *res, size_t rs, const ks__gemm_epilogue *ep) {
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    const __m256 bias0 = _mm256_load_ps(w), bias1 = _mm256_load_ps(w + 8);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    if (ACT == KS_ACT_PRELU) s0 = _mm256_loadu_ps(ep->slope), s1 = _mm256_loadu_ps(ep->slope + 8);
    const float alpha = ep->alpha;
    w += ARCH_NR;
    do {
        const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
        if (a0 != zero) a0 += a_off;
        if (a1 != zero) a1 += a_off;
        if (a2 != zero) a2 += a_off;
        if (a3 != zero) a3 += a_off;
        if (a4 != zero) a4 += a_off;
        if (a5 != zero) a5 += a_off;
        a += ARCH_MR;
        for (size_t k = 0; k < kc; k++) {
            const __m256 b0 = _mm256_load_ps(w), b1 = _mm256_load_ps(w + 8);
            w += ARCH_NR;
            __m256 t = _mm256_broadcast_ss(a0 + k);
            c00 = _mm256_fmadd_ps(t, b0, c00), c01 = _mm256_fmadd_ps(t, b1, c01);
            t = _mm256_broadcast_ss(a1 + k);
            c10 = _mm256_fmadd_ps(t, b0, c10), c11 = _mm256_fmadd_ps(t, b1, c11);
            t = _mm256_broadcast_ss(a2 + k);
            c20 = _mm256_fmadd_ps(t, b0, c20), c21 = _mm256_fmadd_ps(t, b1, c21);
            t = _mm256_broadcast_ss(a3 + k);
            c30 = _mm256_fmadd_ps(t, b0, c30), c31 = _mm256_fmadd_ps(t, b1, c31);
            t = _mm256_broadcast_ss(a4 + k);
            c40 = _mm256_fmadd_ps(t, b0, c40), c41 = _mm256_fmadd_ps(t, b1, c41);
            t = _mm256_broadcast_ss(a5 + k);
            c50 = _mm256_fmadd_ps(t, b0, c50), c51 = _mm256_fmadd_ps(t, b1, c51);
        }
    } while (--ks);
#define KS_ROW(r, v0, v1)                                                                          \
    do {                                                                                           \
        __m256 x0 = _mm256_add_ps(v0, bias0), x1 = _mm256_add_ps(v1, bias1);                       \
        if (res) {                                                                                 \
            x0 = _mm256_add_ps(x0, _mm256_loadu_ps(res + (r)*rs));                                 \
            x1 = _mm256_add_ps(x1, _mm256_loadu_ps(res + (r)*rs + 8));                             \
        }                                                                                          \
        _mm256_storeu_ps(c + (r)*cs, act_of(x0, s0, ACT, alpha));                                  \
        _mm256_storeu_ps(c + (r)*cs + 8, act_of(x1, s1, ACT, alpha));                              \
    } while (0)
    KS_ROW(0, c00, c01);
    KS_ROW(1, c10, c11);
    KS_ROW(2, c20, c21);
    KS_ROW(3, c30, c31);
    KS_ROW(4, c40, c41);
    KS_ROW(5, c50, c51);
#undef KS_ROW
}

static void ks_f32_igemm__avx2_6x16(size_t mr, size_t nc, size_t kc, size_t ks,
                                    const float *const *a, size_t a_off, const float *zero,
                                    const float *w, float *c, size_t cs, const float *res,
                                    size_t rs, const ks__gemm_epilogue *ep) {
    if (mr == ARCH_MR && nc == ARCH_NR) {
        switch (ep->act) {
#define ACT_CASE(A)                                                                                \
    case A:                                                                                        \
        tile_6x16(A, kc, ks, a, a_off, zero, w, c, cs, res, rs, ep);                               \
        return;
            KS_GEMM_TILE_ACTS(ACT_CASE)
#undef ACT_CASE
        default:
            break;
        }
    }
    const size_t nv = nc > 8 ? 2 : 1;
    switch (mr * 2 + nv - 1) {
#define CASE(n)                                                                                    \
    case n * 2:                                                                                    \
        tile(n, 1, nc, kc, ks, a, a_off, zero, w, c, cs, res, rs, ep);                             \
        break;                                                                                     \
    case n * 2 + 1:                                                                                \
        tile(n, 2, nc, kc, ks, a, a_off, zero, w, c, cs, res, rs, ep);                             \
        break;
        CASE(1)
        CASE(2)
        CASE(3)
        CASE(4)
        CASE(5)
        CASE(6)
#undef CASE
    default:
        break;
    }
}

static const ks__f32_gemm_arch k_arch = {ARCH_MR, ARCH_NR, 16.0, ks_f32_igemm__avx2_6x16, 8};

static double cost(const ks__kernel_ctx *ctx) {
    return ks__f32_gemm_cost(ctx, &k_arch);
}
static ks_status plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__f32_gemm_plan(ctx, &k_arch, packed_bytes_out);
}
static ks_status pack(ks__kernel_ctx *ctx) {
    return ks__f32_gemm_pack(ctx, &k_arch);
}
static ks_status run(ks__kernel_ctx *ctx) {
    return ks__f32_gemm_run(ctx, &k_arch);
}

const ks__impl ks_f32_conv2d__avx2_6x16 = {
    "ks_f32_conv2d__avx2_6x16", KS_OP_CONV2D, KS_ISA_AVX2, cost, plan, pack, run};
const ks__impl ks_f32_fc__avx2_6x16 = {
    "ks_f32_fc__avx2_6x16", KS_OP_FULLY_CONNECTED, KS_ISA_AVX2, cost, plan, pack, run};
const ks__impl ks_f32_matmul__avx2_6x16 = {
    "ks_f32_matmul__avx2_6x16", KS_OP_MATMUL, KS_ISA_AVX2, cost, plan, pack, run};
