/* f32 Winograd F(2x2,3x3), F(4x4,3x3) and F(6x6,3x3) CONV2D for AVX-512 F (winograd.h): the
 * transforms (winograd_tx.h at 16 floats per vector) and an 8 x 32 direct GEMM microkernel for
 * the batched per-position products.
 *
 * Why a separate microkernel from f32_gemm_avx512.c: the transformed input rows are contiguous
 * with a fixed stride, so no row pointers, zero vector, bias or epilogue are needed (the
 * epilogue runs after the output transform). 8 x 32 for the same register budget reasons as
 * the indirect GEMM (16 zmm accumulators, broadcasts folded into the FMAs).
 */
#include <immintrin.h>

#include "../../winograd.h"
#include "f32_silu.h"

#define V __m512
#define VL 16
#define V_ZERO() _mm512_setzero_ps()
#define V_SET1(f) _mm512_set1_ps(f)
#define V_LOAD(p) _mm512_loadu_ps(p)
#define V_STORE(p, v) _mm512_storeu_ps((p), (v))
#define V_LOADN(p, n) _mm512_maskz_loadu_ps((__mmask16)((1u << (n)) - 1), (p))
#define V_STOREN(p, v, n) _mm512_mask_storeu_ps((p), (__mmask16)((1u << (n)) - 1), (v))
#define V_ADD _mm512_add_ps
#define V_SUB _mm512_sub_ps
#define V_MUL _mm512_mul_ps
#define V_MAX _mm512_max_ps
#define V_MIN _mm512_min_ps
#define V_FMA _mm512_fmadd_ps
#define V_SILU ks_avx512_silu
#include "../../winograd_tx.h"

#define ARCH_MR 8
#define ARCH_NR 32

#if defined(__clang__)
#define KS_UNROLL _Pragma("unroll")
#else
#define KS_UNROLL _Pragma("GCC unroll 16")
#endif

WTX_INLINE void gemm_tile(const size_t MR, size_t nc, size_t kc, const float *a, size_t as,
                          const float *w, float *c, size_t cs) {
    __m512 acc0[ARCH_MR], acc1[ARCH_MR];
    const float *ap[ARCH_MR];
    KS_UNROLL for (size_t r = 0; r < MR; r++) {
        acc0[r] = _mm512_setzero_ps();
        acc1[r] = _mm512_setzero_ps();
        ap[r] = a + r * as;
    }
    for (size_t k = 0; k < kc; k++) {
        const __m512 b0 = _mm512_load_ps(w), b1 = _mm512_load_ps(w + 16);
        w += ARCH_NR;
        KS_UNROLL for (size_t r = 0; r < MR; r++) {
            const __m512 av = _mm512_set1_ps(ap[r][k]);
            acc0[r] = _mm512_fmadd_ps(av, b0, acc0[r]);
            acc1[r] = _mm512_fmadd_ps(av, b1, acc1[r]);
        }
    }
    const __mmask16 m0 = nc >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nc) - 1);
    const __mmask16 m1 =
        nc >= 32 ? (__mmask16)0xFFFF : (nc > 16 ? (__mmask16)((1u << (nc - 16)) - 1) : 0);
    KS_UNROLL for (size_t r = 0; r < MR; r++) {
        _mm512_mask_storeu_ps(c + r * cs, m0, acc0[r]);
        _mm512_mask_storeu_ps(c + r * cs + 16, m1, acc1[r]);
    }
}

static void ks_f32_wgemm__avx512_8x32(size_t mr, size_t nc, size_t kc, const float *a, size_t as,
                                      const float *w, float *c, size_t cs) {
    switch (mr) {
#define CASE(n)                                                                                    \
    case n:                                                                                        \
        gemm_tile(n, nc, kc, a, as, w, c, cs);                                                     \
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

#define WINO_VARIANT(M) WTX_VARIANT(avx512, KS_ISA_AVX512, M, VL, 32.0, ks_f32_wgemm__avx512_8x32)

/* Zen 4/5 and Ice Lake+ server cores issue two 512-bit FMAs per cycle (as f32_gemm_avx512.c). */
WINO_VARIANT(2)
WINO_VARIANT(4)
WINO_VARIANT(6)
