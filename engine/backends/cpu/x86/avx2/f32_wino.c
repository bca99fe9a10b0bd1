/* f32 Winograd F(2x2,3x3), F(4x4,3x3) and F(6x6,3x3) CONV2D for AVX2 + FMA (winograd.h): the
 * transforms (winograd_tx.h at 8 floats per vector) and a 6 x 16 direct GEMM microkernel for the
 * batched per-position products (the register budget of f32_gemm_avx2.c: 12 accumulators, two
 * weight vectors and a broadcast), without row pointers or epilogue, which the output transform
 * does instead.
 */
#include <immintrin.h>
#include <string.h>

#include "../../winograd.h"
#include "f32_silu.h"

static inline __m256i lanes_below(size_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

#define V __m256
#define VL 8
#define V_ZERO() _mm256_setzero_ps()
#define V_SET1(f) _mm256_set1_ps(f)
#define V_LOAD(p) _mm256_loadu_ps(p)
#define V_STORE(p, v) _mm256_storeu_ps((p), (v))
#define V_LOADN(p, n) _mm256_maskload_ps((p), lanes_below(n))
#define V_STOREN(p, v, n) _mm256_maskstore_ps((p), lanes_below(n), (v))
#define V_ADD _mm256_add_ps
#define V_SUB _mm256_sub_ps
#define V_MUL _mm256_mul_ps
#define V_MAX _mm256_max_ps
#define V_MIN _mm256_min_ps
#define V_FMA _mm256_fmadd_ps
#define V_SILU ks_avx2_silu
#include "../../winograd_tx.h"

#define ARCH_MR 6
#define ARCH_NR 16

#if defined(__clang__)
#define KS_UNROLL _Pragma("unroll")
#else
#define KS_UNROLL _Pragma("GCC unroll 16")
#endif

WTX_INLINE void gemm_tile(const size_t MR, size_t nc, size_t kc, const float *a, size_t as,
                          const float *w, float *c, size_t cs) {
    __m256 acc0[ARCH_MR], acc1[ARCH_MR];
    const float *ap[ARCH_MR];
    KS_UNROLL for (size_t r = 0; r < MR; r++) {
        acc0[r] = _mm256_setzero_ps();
        acc1[r] = _mm256_setzero_ps();
        ap[r] = a + r * as;
    }
    for (size_t k = 0; k < kc; k++) {
        const __m256 b0 = _mm256_load_ps(w), b1 = _mm256_load_ps(w + 8);
        w += ARCH_NR;
        KS_UNROLL for (size_t r = 0; r < MR; r++) {
            const __m256 av = _mm256_broadcast_ss(ap[r] + k);
            acc0[r] = _mm256_fmadd_ps(av, b0, acc0[r]);
            acc1[r] = _mm256_fmadd_ps(av, b1, acc1[r]);
        }
    }
    if (nc == ARCH_NR) {
        KS_UNROLL for (size_t r = 0; r < MR; r++) {
            _mm256_storeu_ps(c + r * cs, acc0[r]);
            _mm256_storeu_ps(c + r * cs + 8, acc1[r]);
        }
        return;
    }
    KS_UNROLL for (size_t r = 0; r < MR; r++) {
        float tmp[ARCH_NR];
        _mm256_storeu_ps(tmp, acc0[r]);
        _mm256_storeu_ps(tmp + 8, acc1[r]);
        memcpy(c + r * cs, tmp, nc * sizeof(float));
    }
}

static void ks_f32_wgemm__avx2_6x16(size_t mr, size_t nc, size_t kc, const float *a, size_t as,
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
#undef CASE
    default:
        break;
    }
}

/* Two 256-bit FMA pipes: 16 MACs per cycle (as f32_gemm_avx2.c). */
#define WINO_VARIANT(M) WTX_VARIANT(avx2, KS_ISA_AVX2, M, VL, 16.0, ks_f32_wgemm__avx2_6x16)

WINO_VARIANT(2)
WINO_VARIANT(4)
WINO_VARIANT(6)
