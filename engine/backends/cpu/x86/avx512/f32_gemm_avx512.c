/* f32 indirect-GEMM microkernel for AVX-512 F: MR x 32 tiles (gemm.h), and the CONV2D,
 * FULLY_CONNECTED and MATMUL variants built on it.
 *
 * Why 8 x 32: 32 columns are two zmm vectors and divide every common channel count (64..512), so
 * wide layers waste nothing on panel padding; 8 rows give 16 independent accumulators, enough to
 * cover the FMA latency on two 512-bit pipes, while the 8 row pointers, the weight pointer and
 * the loop counters still fit the 15 usable general registers (more rows would spill row
 * pointers inside the k loop). Broadcasts are folded into the FMAs as {1to16} memory operands.
 * Measured (bench/kbench.c, 1 thread, Zen 5): 80-95% of the FMA peak on 3x3 and 1x1 convs from
 * 56x56x64 to 7x7x512.
 */
#include <immintrin.h>

#include "../../gemm.h"
#include "f32_silu.h"

#define ARCH_MR 8
#define ARCH_NR 32

#if defined(__clang__)
#define KS_UNROLL _Pragma("unroll")
#else
#define KS_UNROLL _Pragma("GCC unroll 16")
#endif
#define KS_INLINE static inline __attribute__((always_inline))

/* e^x for the sigmoid epilogue: Cody-Waite range reduction by ln 2 and a degree-6 polynomial
 * (Cephes expf coefficients), ~1 ulp on the clamped range. */
KS_INLINE __m512 exp_ps(__m512 x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(88.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
    p = _mm512_add_ps(p, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

/* The fused activation, same formulas as ks__act_apply (tanh is done by the caller); `slope` holds
 * the PRELU slopes of v's columns. */
KS_INLINE __m512 act_ps(__m512 v, __m512 slope, const ks__gemm_epilogue *ep) {
    const __m512 zero = _mm512_setzero_ps();
    switch (ep->act) {
    case KS_ACT_PRELU: {
        __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
        return _mm512_mask_mul_ps(v, neg, v, slope);
    }
    case KS_ACT_RELU:
        return _mm512_max_ps(v, zero);
    case KS_ACT_RELU6:
        return _mm512_min_ps(_mm512_max_ps(v, zero), _mm512_set1_ps(6.0f));
    case KS_ACT_RELU_N1_TO_1:
        return _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-1.0f)), _mm512_set1_ps(1.0f));
    case KS_ACT_LEAKY_RELU: {
        __mmask16 neg = _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ);
        return _mm512_mask_mul_ps(v, neg, v, _mm512_set1_ps(ep->alpha));
    }
    case KS_ACT_HARD_SWISH: {
        __m512 r = _mm512_add_ps(v, _mm512_set1_ps(3.0f));
        r = _mm512_min_ps(_mm512_max_ps(r, zero), _mm512_set1_ps(6.0f));
        return _mm512_div_ps(_mm512_mul_ps(v, r), _mm512_set1_ps(6.0f));
    }
    case KS_ACT_SIGMOID: {
        __m512 e = exp_ps(_mm512_sub_ps(zero, v));
        return _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_add_ps(_mm512_set1_ps(1.0f), e));
    }
    case KS_ACT_SILU:
        return ks_avx512_silu(v);
    default:
        return v;
    }
}

KS_INLINE void tile(const size_t MR, size_t nc, size_t kc, size_t ks, const float *const *a,
                    size_t a_off, const float *zero, const float *w, float *c, size_t cs,
                    const float *res, size_t rs, const ks__gemm_epilogue *ep) {
    __m512 acc0[ARCH_MR], acc1[ARCH_MR];
    const __m512 bias0 = _mm512_load_ps(w), bias1 = _mm512_load_ps(w + 16);
    w += ARCH_NR;
    /* Sums start at zero and the bias is added after the products: a folded batch-norm bias is
     * often much larger than the products, and starting from it makes every FMA round at its
     * scale (about 2x the error; see arm/neon/f32_gemm.c). */
    KS_UNROLL for (size_t r = 0; r < MR; r++) {
        acc0[r] = _mm512_setzero_ps();
        acc1[r] = _mm512_setzero_ps();
    }
    do {
        const float *ap[ARCH_MR];
        KS_UNROLL for (size_t r = 0; r < MR; r++) {
            ap[r] = a[r];
            if (ap[r] != zero) ap[r] += a_off;
        }
        a += ARCH_MR;
        for (size_t k = 0; k < kc; k++) {
            const __m512 b0 = _mm512_load_ps(w), b1 = _mm512_load_ps(w + 16);
            w += ARCH_NR;
            KS_UNROLL for (size_t r = 0; r < MR; r++) {
                const __m512 av = _mm512_set1_ps(ap[r][k]);
                acc0[r] = _mm512_fmadd_ps(av, b0, acc0[r]);
                acc1[r] = _mm512_fmadd_ps(av, b1, acc1[r]);
            }
        }
    } while (--ks);
    const __mmask16 m0 = nc >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nc) - 1);
    const __mmask16 m1 =
        nc >= 32 ? (__mmask16)0xFFFF : (nc > 16 ? (__mmask16)((1u << (nc - 16)) - 1) : 0);
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    if (ep->slope) {
        s0 = _mm512_maskz_loadu_ps(m0, ep->slope);
        s1 = _mm512_maskz_loadu_ps(m1, ep->slope + 16);
    }
    KS_UNROLL for (size_t r = 0; r < MR; r++) {
        __m512 v0 = _mm512_add_ps(acc0[r], bias0), v1 = _mm512_add_ps(acc1[r], bias1);
        float *cr = c + r * cs;
        if (res) {
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, res + r * rs));
            v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, res + r * rs + 16));
        }
        v0 = act_ps(v0, s0, ep);
        v1 = act_ps(v1, s1, ep);
        _mm512_mask_storeu_ps(cr, m0, v0);
        _mm512_mask_storeu_ps(cr + 16, m1, v1);
        if (ep->act == KS_ACT_TANH) ks__gemm_act_scalar(cr, nc, ep);
    }
}

static void ks_f32_igemm__avx512_8x32(size_t mr, size_t nc, size_t kc, size_t ks,
                                      const float *const *a, size_t a_off, const float *zero,
                                      const float *w, float *c, size_t cs, const float *res,
                                      size_t rs, const ks__gemm_epilogue *ep) {
    switch (mr) {
#define CASE(n)                                                                                    \
    case n:                                                                                        \
        tile(n, nc, kc, ks, a, a_off, zero, w, c, cs, res, rs, ep);                                \
        break;
        CASE(1)
        CASE(2)
        CASE(3)
        CASE(4)
        CASE(5)
        CASE(6)
        CASE(7)
        CASE(8)
#undef CASE
    default:
        break;
    }
}

/* Zen 4/5 and Ice Lake+ server cores issue two 512-bit FMAs per cycle. */
static const ks__f32_gemm_arch k_arch = {ARCH_MR, ARCH_NR, 32.0, ks_f32_igemm__avx512_8x32, 0};

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

const ks__impl ks_f32_conv2d__avx512_8x32 = {
    "ks_f32_conv2d__avx512_8x32", KS_OP_CONV2D, KS_ISA_AVX512, cost, plan, pack, run};
const ks__impl ks_f32_fc__avx512_8x32 = {
    "ks_f32_fc__avx512_8x32", KS_OP_FULLY_CONNECTED, KS_ISA_AVX512, cost, plan, pack, run};
const ks__impl ks_f32_matmul__avx512_8x32 = {
    "ks_f32_matmul__avx512_8x32", KS_OP_MATMUL, KS_ISA_AVX512, cost, plan, pack, run};
