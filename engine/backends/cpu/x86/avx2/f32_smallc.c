/* Small-channel direct CONV2D (smallc.h): stems with few input channels and convs with 8, 16 or
 * 32 output channels. x86/avx512/f32_smallc.c includes this file; the vector width comes from
 * f32_vsimd.h, the masks and masked accesses from f32_dw_simd.h.
 *
 * Tiles: AVX2: 12 pixels x 8 channels or 6 pixels x 16 channels; 12 accumulators, one or two
 * weight vectors and the broadcast register fit the 16 ymm registers. AVX2 has no broadcast
 * memory operand for FMAs, so each pixel of a tap costs a vbroadcastss load and an FMA.
 * AVX-512: 28 pixels x 16 channels (one zmm per pixel) or 14 pixels x 32 channels; 28
 * accumulators plus one or two weight vectors fit the 32 zmm registers, and the input operand of
 * every FMA is a {1to16} broadcast from memory at a constant offset, so a tap costs nv weight
 * loads and P broadcast-FMAs and nothing else.
 * The cores are compiled per pixel stride sx = stride_w * Cin (26 strides: 1..16, 18..32 even,
 * 48, 64; x 1 or 2 vectors). Clamp and slope activations (none, relu, relu6, relu_n1_to_1,
 * prelu, leaky relu) without residual are finished in the core; the others read the tile back
 * from a stack buffer in one shared epilogue, which keeps the 52 core instantiations small.
 */
#include "../../gemm.h"
#include "../../smallc.h"
#include "f32_dw_simd.h"

#if defined(__clang__)
#define KS_UNROLL _Pragma("clang loop unroll(full)")
#else
#define KS_UNROLL _Pragma("GCC unroll 32")
#endif
/* Full unrolling of the pixel loops is what keeps the accumulators in registers; clang's plain
 * "unroll" left them on the stack. GCC's predictive commoning sees that pixel p + 1's tap j is
 * pixel p's tap j + sx and carries loaded values across iterations in registers, which spills the
 * accumulators; the broadcasts must stay memory operands. */
#if defined(__GNUC__) && !defined(__clang__)
#define KS_CORE_ATTR __attribute__((optimize("no-predictive-commoning")))
#else
#define KS_CORE_ATTR
#endif

#define LANES V_N

/* ---- the ISA-specific pieces (the masks, masked accesses and the negative-side slope are
 * f32_dw_simd.h's) ---- */
#if defined(__AVX512F__)
#define PX_NV1 28
#define PX_NV2 14
#define SPLIT_FULL 0 /* masked accesses cost the same as plain ones */

KS_INLINE void store_a(float *p, vf v) {
    _mm512_store_ps(p, v);
}
KS_INLINE vf bcast(const float *p) {
    return _mm512_set1_ps(*p);
}
/* p * 2^n for integral n in [-126, 127] (exact). */
KS_INLINE vf scale_pow2(vf p, vf n) {
    return _mm512_scalef_ps(p, n);
}

/* Finishes a core's tile into st->y: + bias, then the activation through masks, without
 * branches (lanes outside kc / ks are left alone, so NaN stays NaN without an activation). */
KS_INLINE void core_store(const uint32_t NV, const uint32_t P, const vf *acc, const ks_dw_mask *m,
                          const vf *bias, const vf *slope, const ks__smallc_store *st) {
    const __m512 lo = _mm512_set1_ps(st->lo), hi = _mm512_set1_ps(st->hi);
    const __mmask16 kc = st->kind == KS_SMALLC_STORE_CLAMP ? (__mmask16)0xFFFF : 0;
    const __mmask16 ks = st->kind == KS_SMALLC_STORE_SLOPE ? (__mmask16)0xFFFF : 0;
    const size_t ys = st->y_stride;
    KS_UNROLL for (uint32_t p = 0; p < P; p++) {
        KS_UNROLL for (uint32_t v = 0; v < NV; v++) {
            __m512 a = _mm512_add_ps(acc[p * NV + v], bias[v]);
            if (st->res)
                a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(m[v], st->res + p * ys + v * LANES));
            a = _mm512_mask_min_ps(a, kc, _mm512_mask_max_ps(a, kc, a, lo), hi);
            const __mmask16 neg = _mm512_mask_cmp_ps_mask(ks, a, _mm512_setzero_ps(), _CMP_LT_OQ);
            a = _mm512_mask_mul_ps(a, neg, a, slope[v]);
            _mm512_mask_storeu_ps(st->y + p * ys + v * LANES, m[v], a);
        }
    }
}

#else /* AVX2 + FMA */
#define PX_NV1 12
#define PX_NV2 6
#define PX_NV3 4     /* 24 channels (BlazeFace's stem) in one block: 12 FMAs per 7 loads */
#define SPLIT_FULL 1 /* vmaskmovps is slow: full blocks use plain loads and stores */

KS_INLINE void store_a(float *p, vf v) {
    _mm256_store_ps(p, v);
}
KS_INLINE vf bcast(const float *p) {
    return _mm256_broadcast_ss(p);
}
/* p * 2^n for integral n in [-126, 127], through the exponent bits (exact). */
KS_INLINE vf scale_pow2(vf p, vf n) {
    __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

KS_INLINE void core_store(const uint32_t NV, const uint32_t P, const vf *acc, const ks_dw_mask *m,
                          const vf *bias, const vf *slope, const ks__smallc_store *st) {
    const __m256 lo = _mm256_set1_ps(st->lo), hi = _mm256_set1_ps(st->hi);
    const size_t ys = st->y_stride;
    const int full = st->num_ch == NV * LANES;
    KS_UNROLL for (uint32_t p = 0; p < P; p++) {
        KS_UNROLL for (uint32_t v = 0; v < NV; v++) {
            __m256 a = _mm256_add_ps(acc[p * NV + v], bias[v]);
            float *yp = st->y + p * ys + v * LANES;
            if (st->res) a = _mm256_add_ps(a, ks_dw_ld(!full, m[v], st->res + p * ys + v * LANES));
            if (st->kind == KS_SMALLC_STORE_CLAMP)
                a = _mm256_min_ps(_mm256_max_ps(a, lo), hi);
            else if (st->kind == KS_SMALLC_STORE_SLOPE)
                a = ks_dw_mul_neg(a, slope[v]);
            ks_dw_st(!full, m[v], yp, a);
        }
    }
}
#endif

KS_INLINE void core_body(const int64_t SX, const uint32_t NV, const uint32_t P, size_t num_rows,
                         const float *const *x, const float *const *w, size_t span, float *out,
                         const ks__smallc_store *st) {
    vf acc[PX_NV1];
    KS_UNROLL for (uint32_t i = 0; i < P * NV; i++) acc[i] = v_zero();
    for (size_t t = 0; t < num_rows; t++) {
        const float *xp = x[t], *wp = w[t];
        for (size_t j = 0; j < span; j++, wp += NV * LANES) {
            vf wv[3];
            KS_UNROLL for (uint32_t v = 0; v < NV; v++) wv[v] = ks_dw_load_a(wp + v * LANES);
            KS_UNROLL for (uint32_t p = 0; p < P; p++) {
                const vf xv = bcast(xp + (int64_t)p * SX + (int64_t)j);
                KS_UNROLL for (uint32_t v = 0; v < NV; v++) acc[p * NV + v] =
                    v_fmadd(xv, wv[v], acc[p * NV + v]);
            }
        }
    }
    if (!st) {
        KS_UNROLL for (uint32_t i = 0; i < P * NV; i++) store_a(out + i * LANES, acc[i]);
        return;
    }
    ks_dw_mask m[3];
    vf bias[3], slope[3];
    KS_UNROLL for (uint32_t v = 0; v < NV; v++) {
        const size_t c = v * LANES, left = st->num_ch > c ? st->num_ch - c : 0;
        m[v] = ks_dw_mask_of(left >= LANES ? LANES : left);
        bias[v] = st->bias ? ks_dw_loadm(m[v], st->bias + c) : v_zero();
        slope[v] = st->slope ? ks_dw_loadm(m[v], st->slope + c) : v_set1(st->alpha);
    }
    core_store(NV, P, acc, m, bias, slope, st);
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
    }                                                                                              \
    DEFINE_CORE3(sx)
#if defined(PX_NV3)
#define DEFINE_CORE3(sx)                                                                           \
    KS_CORE_ATTR static void core3_##sx(size_t nr, const float *const *x, const float *const *w,   \
                                        size_t span, float *out, const ks__smallc_store *st) {     \
        core_body(sx, 3, PX_NV3, nr, x, w, span, out, st);                                         \
    }
#define CORE3(sx) core3_##sx
#else
#define DEFINE_CORE3(sx)
#define CORE3(sx) ((ks__smallc_core_fn)NULL)
#endif
SX_LIST(DEFINE_CORES)
#undef DEFINE_CORES

static ks__smallc_core_fn core_for(int64_t sx, uint32_t nv) {
    switch (sx) {
#define CASE(sx)                                                                                   \
    case sx:                                                                                       \
        return nv == 1 ? core1_##sx : nv == 2 ? core2_##sx : nv == 3 ? CORE3(sx) : NULL;
        SX_LIST(CASE)
#undef CASE
    default:
        return NULL;
    }
}

/* e^x for the sigmoid epilogue: the GEMM epilogue's formula (f32_gemm_avx2.c,
 * f32_gemm_avx512.c). */
KS_INLINE vf exp_ps(vf x) {
    x = v_min(v_max(x, v_set1(-87.0f)), v_set1(88.0f));
    vf n = v_round(v_mul(x, v_set1(1.44269504088896341f)));
    vf r = v_fnmadd(n, v_set1(0.693359375f), x);
    r = v_fnmadd(n, v_set1(-2.12194440e-4f), r);
    vf p = v_set1(1.9875691500e-4f);
    p = v_fmadd(p, r, v_set1(1.3981999507e-3f));
    p = v_fmadd(p, r, v_set1(8.3334519073e-3f));
    p = v_fmadd(p, r, v_set1(4.1665795894e-2f));
    p = v_fmadd(p, r, v_set1(1.6666665459e-1f));
    p = v_fmadd(p, r, v_set1(5.0000001201e-1f));
    p = v_fmadd(p, v_mul(r, r), r);
    p = v_add(p, v_set1(1.0f));
    return scale_pow2(p, n);
}

/* The fused activation, same formulas as the GEMM epilogue (tanh is done by the caller). */
KS_INLINE vf act_ps(vf v, vf slope, int32_t act, float alpha) {
    const vf zero = v_zero();
    switch (act) {
    case KS_ACT_PRELU:
        return ks_dw_mul_neg(v, slope);
    case KS_ACT_RELU:
        return v_max(v, zero);
    case KS_ACT_RELU6:
        return v_min(v_max(v, zero), v_set1(6.0f));
    case KS_ACT_RELU_N1_TO_1:
        return v_min(v_max(v, v_set1(-1.0f)), v_set1(1.0f));
    case KS_ACT_LEAKY_RELU:
        return ks_dw_mul_neg(v, v_set1(alpha));
    case KS_ACT_HARD_SWISH: {
        vf r = v_add(v, v_set1(3.0f));
        r = v_min(v_max(r, zero), v_set1(6.0f));
        return v_div(v_mul(v, r), v_set1(6.0f));
    }
    case KS_ACT_SIGMOID: {
        vf e = exp_ps(v_sub(zero, v));
        return v_div(v_set1(1.0f), v_add(v_set1(1.0f), e));
    }
    case KS_ACT_SILU:
        return KS_DW_SYM(silu)(v);
    default:
        return v;
    }
}

/* One activation per instantiation, so the per-vector loop carries no switch. */
KS_INLINE void epilogue_act(const int32_t ACT, const float *acc, size_t nv, size_t num_px,
                            const ks_dw_mask *m, int full, const vf *bias, const vf *slope,
                            float alpha, const float *res, float *y, size_t ys) {
    for (size_t p = 0; p < num_px; p++, acc += nv * LANES, y += ys) {
        for (size_t v = 0; v < nv; v++) {
            vf a = v_add(ks_dw_load_a(acc + v * LANES), bias[v]);
            if (SPLIT_FULL && full) {
                if (res) a = v_add(a, v_load(res + v * LANES));
                v_store(y + v * LANES, act_ps(a, slope[v], ACT, alpha));
            } else {
                if (res) a = v_add(a, ks_dw_loadm(m[v], res + v * LANES));
                ks_dw_storem(m[v], y + v * LANES, act_ps(a, slope[v], ACT, alpha));
            }
        }
        if (res) res += ys;
    }
}

static void epilogue(const float *acc, size_t nv, size_t num_px, size_t num_ch,
                     const ks__smallc_epilogue *ep, const float *res, float *y, size_t ys) {
    ks_dw_mask m[KS_SMALLC_MAX_NV];
    vf bias[KS_SMALLC_MAX_NV], slope[KS_SMALLC_MAX_NV];
    const int full = num_ch == nv * LANES;
    for (size_t v = 0; v < nv; v++) {
        size_t c = v * LANES, left = num_ch > c ? num_ch - c : 0;
        m[v] = ks_dw_mask_of(left >= LANES ? LANES : left);
        bias[v] = ep->bias ? ks_dw_loadm(m[v], ep->bias + c) : v_zero();
        slope[v] = ep->slope ? ks_dw_loadm(m[v], ep->slope + c) : v_zero();
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

/* Two vector FMAs per cycle (AVX2 cores; Zen 4/5 and Ice Lake+ server cores at 512 bits). */
static const ks__smallc_arch k_arch = {.lanes = LANES,
#if defined(PX_NV3)
                                       .max_nv = 3,
                                       .px = {PX_NV1, PX_NV2, PX_NV3},
#else
                                       .max_nv = 2,
                                       .px = {PX_NV1, PX_NV2},
#endif
                                       .fma_per_cycle = 2.0,
                                       .core = core_for,
                                       .epilogue = epilogue};

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

#if defined(__AVX512F__)
const ks__impl ks_f32_conv2d_smallc__avx512_28x16 = {
    "ks_f32_conv2d_smallc__avx512_28x16", KS_OP_CONV2D, KS_ISA_AVX512, cost, plan, pack, run};
#else
const ks__impl ks_f32_conv2d_smallc__avx2_12x8 = {
    "ks_f32_conv2d_smallc__avx2_12x8", KS_OP_CONV2D, KS_ISA_AVX2, cost, plan, pack, run};
#endif
