/* Small-channel direct CONV2D for AVX2 + FMA (smallc.h): stems with few input channels and convs
 * with 8 or 16 output channels; the AVX-512 file explains the design.
 *
 * Tiles: 12 pixels x 8 channels or 6 pixels x 16 channels: 12 accumulators, one or two weight
 * vectors and the broadcast register fit the 16 ymm registers. AVX2 has no broadcast memory
 * operand for FMAs, so each pixel of a tap costs a vbroadcastss load and an FMA.
 */
#include <immintrin.h>

#include "../../gemm.h"
#include "../../smallc.h"
#include "f32_silu.h"

#if defined(__clang__)
#define KS_UNROLL _Pragma("clang loop unroll(full)")
#else
#define KS_UNROLL _Pragma("GCC unroll 32")
#endif
#define KS_INLINE static inline __attribute__((always_inline))
/* Full unrolling of the pixel loops is what keeps the accumulators in registers; clang's plain
 * "unroll" left them on the stack. GCC's predictive commoning sees that pixel p + 1's tap j is
 * pixel p's tap j + sx and carries loaded values across iterations in registers, which spills the
 * accumulators; the broadcasts must stay memory operands. */
#if defined(__GNUC__) && !defined(__clang__)
#define KS_CORE_ATTR __attribute__((optimize("no-predictive-commoning")))
#else
#define KS_CORE_ATTR
#endif

#define LANES 8
#define PX_NV1 12
#define PX_NV2 6

/* Lane mask with the first n (0..8) lanes set. */
KS_INLINE __m256i lane_mask(size_t n) {
    static const int32_t k_ones[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(const void *)(k_ones + 8 - n));
}

KS_INLINE void core_body(const int64_t SX, const uint32_t NV, const uint32_t P, size_t num_rows,
                         const float *const *x, const float *const *w, size_t span, float *out,
                         const ks__smallc_store *st) {
    __m256 acc[PX_NV1];
    KS_UNROLL for (uint32_t i = 0; i < P * NV; i++) acc[i] = _mm256_setzero_ps();
    for (size_t t = 0; t < num_rows; t++) {
        const float *xp = x[t], *wp = w[t];
        for (size_t j = 0; j < span; j++, wp += NV * LANES) {
            __m256 wv[2];
            KS_UNROLL for (uint32_t v = 0; v < NV; v++) wv[v] = _mm256_load_ps(wp + v * LANES);
            KS_UNROLL for (uint32_t p = 0; p < P; p++) {
                const __m256 xv = _mm256_broadcast_ss(xp + (int64_t)p * SX + (int64_t)j);
                KS_UNROLL for (uint32_t v = 0; v < NV; v++) acc[p * NV + v] =
                    _mm256_fmadd_ps(xv, wv[v], acc[p * NV + v]);
            }
        }
    }
    if (!st) {
        KS_UNROLL for (uint32_t i = 0; i < P * NV; i++) _mm256_store_ps(out + i * LANES, acc[i]);
        return;
    }
    __m256i m[2];
    __m256 bias[2], slope[2];
    KS_UNROLL for (uint32_t v = 0; v < NV; v++) {
        const size_t c = v * LANES, left = st->num_ch > c ? st->num_ch - c : 0;
        m[v] = lane_mask(left >= LANES ? LANES : left);
        bias[v] = st->bias ? _mm256_maskload_ps(st->bias + c, m[v]) : _mm256_setzero_ps();
        slope[v] = st->slope ? _mm256_maskload_ps(st->slope + c, m[v]) : _mm256_set1_ps(st->alpha);
    }
    const __m256 lo = _mm256_set1_ps(st->lo), hi = _mm256_set1_ps(st->hi);
    const size_t ys = st->y_stride;
    const int full = st->num_ch == NV * LANES;
    KS_UNROLL for (uint32_t p = 0; p < P; p++) {
        KS_UNROLL for (uint32_t v = 0; v < NV; v++) {
            __m256 a = _mm256_add_ps(acc[p * NV + v], bias[v]);
            float *yp = st->y + p * ys + v * LANES;
            if (st->kind == KS_SMALLC_STORE_CLAMP)
                a = _mm256_min_ps(_mm256_max_ps(a, lo), hi);
            else if (st->kind == KS_SMALLC_STORE_SLOPE)
                a = _mm256_blendv_ps(a, _mm256_mul_ps(a, slope[v]),
                                     _mm256_cmp_ps(a, _mm256_setzero_ps(), _CMP_LT_OQ));
            if (full)
                _mm256_storeu_ps(yp, a);
            else
                _mm256_maskstore_ps(yp, m[v], a);
        }
    }
}

#define SX_LIST(X)                                                                                 \
    X(1)                                                                                           \
    X(2)                                                                                           \
    X(3)                                                                                           \
    X(4)                                                                                           \
    X(5)                                                                                           \
    X(6)                                                                                           \
    X(7)                                                                                           \
    X(8)                                                                                           \
    X(9)                                                                                           \
    X(10)                                                                                          \
    X(11)                                                                                          \
    X(12)                                                                                          \
    X(13)                                                                                          \
    X(14)                                                                                          \
    X(15)                                                                                          \
    X(16)                                                                                          \
    X(18)                                                                                          \
    X(20)                                                                                          \
    X(22)                                                                                          \
    X(24)                                                                                          \
    X(26)                                                                                          \
    X(28)                                                                                          \
    X(30)                                                                                          \
    X(32)                                                                                          \
    X(48)                                                                                          \
    X(64)

#define DEFINE_CORES(sx)                                                                           \
    KS_CORE_ATTR static void core1_##sx(size_t nr, const float *const *x, const float *const *w,   \
                                        size_t span, float *out, const ks__smallc_store *st) {     \
        core_body(sx, 1, PX_NV1, nr, x, w, span, out, st);                                         \
    }                                                                                              \
    KS_CORE_ATTR static void core2_##sx(size_t nr, const float *const *x, const float *const *w,   \
                                        size_t span, float *out, const ks__smallc_store *st) {     \
        core_body(sx, 2, PX_NV2, nr, x, w, span, out, st);                                         \
    }
SX_LIST(DEFINE_CORES)
#undef DEFINE_CORES

static ks__smallc_core_fn core_for(int64_t sx, uint32_t nv) {
    switch (sx) {
#define CASE(sx)                                                                                   \
    case sx:                                                                                       \
        return nv == 1 ? core1_##sx : nv == 2 ? core2_##sx : NULL;
        SX_LIST(CASE)
#undef CASE
    default:
        return NULL;
    }
}

/* e^x for the sigmoid epilogue: the GEMM epilogue's formula (f32_gemm_avx2.c). */
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

/* The fused activation, same formulas as the GEMM epilogue (tanh is done by the caller). */
KS_INLINE __m256 act_ps(__m256 v, __m256 slope, int32_t act, float alpha) {
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
    case KS_ACT_LEAKY_RELU:
        return _mm256_blendv_ps(v, _mm256_mul_ps(v, _mm256_set1_ps(alpha)),
                                _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
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

/* One activation per instantiation, so the per-vector loop carries no switch. */
KS_INLINE void epilogue_act(const int32_t ACT, const float *acc, size_t nv, size_t num_px,
                            const __m256i *m, int full, const __m256 *bias, const __m256 *slope,
                            float alpha, const float *res, float *y, size_t ys) {
    for (size_t p = 0; p < num_px; p++, acc += nv * LANES, y += ys) {
        for (size_t v = 0; v < nv; v++) {
            __m256 a = _mm256_add_ps(_mm256_load_ps(acc + v * LANES), bias[v]);
            if (full) {
                if (res) a = _mm256_add_ps(a, _mm256_loadu_ps(res + v * LANES));
                _mm256_storeu_ps(y + v * LANES, act_ps(a, slope[v], ACT, alpha));
            } else {
                if (res) a = _mm256_add_ps(a, _mm256_maskload_ps(res + v * LANES, m[v]));
                _mm256_maskstore_ps(y + v * LANES, m[v], act_ps(a, slope[v], ACT, alpha));
            }
        }
        if (res) res += ys;
    }
}

static void epilogue(const float *acc, size_t nv, size_t num_px, size_t num_ch,
                     const ks__smallc_epilogue *ep, const float *res, float *y, size_t ys) {
    __m256i m[KS_SMALLC_MAX_NV];
    __m256 bias[KS_SMALLC_MAX_NV], slope[KS_SMALLC_MAX_NV];
    const int full = num_ch == nv * LANES;
    for (size_t v = 0; v < nv; v++) {
        size_t c = v * LANES, left = num_ch > c ? num_ch - c : 0;
        m[v] = lane_mask(left >= LANES ? LANES : left);
        bias[v] = ep->bias ? _mm256_maskload_ps(ep->bias + c, m[v]) : _mm256_setzero_ps();
        slope[v] = ep->slope ? _mm256_maskload_ps(ep->slope + c, m[v]) : _mm256_setzero_ps();
    }
    switch (ep->act) {
#define CASE(a)                                                                                    \
    case a:                                                                                        \
        epilogue_act(a, acc, nv, num_px, m, full, bias, slope, ep->alpha, res, y, ys);             \
        break;
        CASE(KS_ACT_RELU)
        CASE(KS_ACT_RELU6)
        CASE(KS_ACT_RELU_N1_TO_1)
        CASE(KS_ACT_LEAKY_RELU)
        CASE(KS_ACT_HARD_SWISH)
        CASE(KS_ACT_SIGMOID)
        CASE(KS_ACT_SILU)
        CASE(KS_ACT_PRELU)
#undef CASE
    default:
        epilogue_act(KS_ACT_NONE, acc, nv, num_px, m, full, bias, slope, ep->alpha, res, y, ys);
        break;
    }
    if (ep->act == KS_ACT_TANH) {
        ks__gemm_epilogue gep = {ep->act, ep->alpha, NULL};
        for (size_t p = 0; p < num_px; p++)
            ks__gemm_act_scalar(y + p * ys, num_ch, &gep);
    }
}

/* Two 256-bit FMAs per cycle; the GEMM of this ISA is ks_f32_conv2d__avx2_6x16. */
static const ks__smallc_arch k_arch = {.lanes = LANES,
                                       .max_nv = 2,
                                       .px = {PX_NV1, PX_NV2},
                                       .fma_per_cycle = 2.0,
                                       .core = core_for,
                                       .epilogue = epilogue,
                                       .gemm_mr = 6,
                                       .gemm_nr = 16,
                                       .gemm_macs = 16.0};

static double cost(const ks__kernel_ctx *ctx) {
    return ks__smallc_cost(ctx, &k_arch);
}
static ks_status plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__smallc_plan(ctx, &k_arch, packed_bytes_out);
}
static ks_status pack(ks__kernel_ctx *ctx) {
    return ks__smallc_pack(ctx, &k_arch);
}
static ks_status run(ks__kernel_ctx *ctx) {
    return ks__smallc_run(ctx, &k_arch);
}

const ks__impl ks_f32_conv2d_smallc__avx2_12x8 = {
    "ks_f32_conv2d_smallc__avx2_12x8", KS_OP_CONV2D, KS_ISA_AVX2, cost, plan, pack, run};
