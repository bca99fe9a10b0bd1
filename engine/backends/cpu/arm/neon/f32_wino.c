/* f32 Winograd F(2x2,3x3), F(4x4,3x3) and F(6x6,3x3) CONV2D for AArch64 NEON (winograd.h): the
 * transforms (winograd_tx.h at 4 floats per vector, on the vector layer of x86/avx2/f32_vsimd.h)
 * and an 8 x 8 direct GEMM microkernel for the batched per-position products: 16 accumulators, the
 * 8 rows' next 4 k values in 8 registers consumed by lane-indexed FMAs (as arm/neon/f32_gemm.c) and
 * two weight vectors, so the k loop runs without spills in the 32 vector registers.
 *
 * Why: every dense 3x3 convolution ran as an indirect GEMM on AArch64 (9 MACs per output and
 * input channel); F(4x4) needs 36 / 16 = 2.25 per output pixel plus the transforms, which is
 * how MNN runs them on ARM (docs/benchmarks-arm.md, point 2). As on x86, the cost model never
 * picks F(6x6) (its rounding error, winograd.c); tuning may not either.
 *
 * Cost unit: ks__arm_gemm_cost counts 8x8 tile steps of the NEON GEMM (64 MACs, about 8 cycles
 * of two 4-lane FMA pipes), so macs_per_cycle is 64 here and vl 32 (4 lanes x 8 cycles) puts
 * the transforms' vector operations in the same unit.
 */
#include <arm_neon.h>
#include <string.h>

#include "../../winograd.h"
#include "../../x86/avx2/f32_vsimd.h"

static inline vf wino_silu(vf x) {
    return v_mul(x, v_sigmoid(x));
}

#define V vf
#define VL 4
#define V_ZERO() v_zero()
#define V_SET1(f) v_set1(f)
#define V_LOAD(p) v_load(p)
#define V_STORE(p, v) v_store((p), (v))
#define V_LOADN(p, n) v_loadn((p), (n))
#define V_STOREN(p, v, n) v_storen((p), (v), (n))
#define V_ADD v_add
#define V_SUB v_sub
#define V_MUL v_mul
#define V_MAX v_max
#define V_MIN v_min
#define V_FMA v_fmadd
#define V_SILU wino_silu
#include "../../winograd_tx.h"

#define ARCH_MR 8
#define ARCH_NR 8

#define KS_UNROLL _Pragma("GCC unroll 8")

/* C[MR x nc] = A[MR x kc] * W[kc x 8]; the sums start at zero and take k in order. */
WTX_INLINE void gemm_tile(const size_t MR, size_t nc, size_t kc, const float *a, size_t as,
                          const float *w, float *c, size_t cs) {
    float32x4_t acc0[ARCH_MR], acc1[ARCH_MR];
    const float *ap[ARCH_MR];
    KS_UNROLL for (size_t r = 0; r < MR; r++) {
        acc0[r] = vdupq_n_f32(0.0f);
        acc1[r] = vdupq_n_f32(0.0f);
        ap[r] = a + r * as;
    }
    size_t k = 0;
    for (; k + 4 <= kc; k += 4) {
        float32x4_t va[ARCH_MR];
        KS_UNROLL for (size_t r = 0; r < MR; r++) va[r] = vld1q_f32(ap[r] + k);
#define STEP(l)                                                                                    \
    {                                                                                              \
        const float32x4_t b0 = vld1q_f32(w), b1 = vld1q_f32(w + 4);                                \
        w += ARCH_NR;                                                                              \
        KS_UNROLL for (size_t r = 0; r < MR; r++) {                                                \
            acc0[r] = vfmaq_laneq_f32(acc0[r], b0, va[r], l);                                      \
            acc1[r] = vfmaq_laneq_f32(acc1[r], b1, va[r], l);                                      \
        }                                                                                          \
    }
        STEP(0)
        STEP(1)
        STEP(2)
        STEP(3)
#undef STEP
    }
    for (; k < kc; k++) {
        const float32x4_t b0 = vld1q_f32(w), b1 = vld1q_f32(w + 4);
        w += ARCH_NR;
        KS_UNROLL for (size_t r = 0; r < MR; r++) {
            const float32x4_t av = vld1q_dup_f32(ap[r] + k);
            acc0[r] = vfmaq_f32(acc0[r], b0, av);
            acc1[r] = vfmaq_f32(acc1[r], b1, av);
        }
    }
    if (nc == ARCH_NR) {
        KS_UNROLL for (size_t r = 0; r < MR; r++) {
            vst1q_f32(c + r * cs, acc0[r]);
            vst1q_f32(c + r * cs + 4, acc1[r]);
        }
        return;
    }
    KS_UNROLL for (size_t r = 0; r < MR; r++) {
        float tmp[ARCH_NR];
        vst1q_f32(tmp, acc0[r]);
        vst1q_f32(tmp + 4, acc1[r]);
        memcpy(c + r * cs, tmp, nc * sizeof(float));
    }
}

static void ks_f32_wgemm__neon_8x8(size_t mr, size_t nc, size_t kc, const float *a, size_t as,
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

#define WINO_VARIANT(M) WTX_VARIANT(neon, KS_ISA_NEON, M, 32, 64.0, ks_f32_wgemm__neon_8x8)

WINO_VARIANT(2)
WINO_VARIANT(4)
WINO_VARIANT(6)
