/* Few-output direct convolution (fewout.h), AVX2 + FMA: 8 output pixels per tile, one vector
 * per pixel (SPAN) or 8 / Cin pixels per vector (PACKED), folded into one vector of the 8 pixels'
 * sums by horizontal adds.
 *
 * The fold: hadd(a, b) sums neighbouring lanes of a and b within each 128-bit half, so three
 * levels of it turn 8 accumulators into the low and high halves of the 8 pixels' lane sums, and
 * one cross-half add finishes them: every output is ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 +
 * l7)) of its own lanes. The PACKED folds are the last one or two levels plus a lane permute.
 * One accumulator per PACKED pixel group would be a chain of dependent FMAs (Cin 1: one
 * accumulator per tile), so the taps alternate between 4 / Cin partial sums, added in a fixed
 * order before the fold.
 */
#include <immintrin.h>

#include "../../fewout.h"
#include "f32_vsimd.h"

#define P 8

/* KS_UNROLL: loops with a constant trip count; KS_UNROLL_CH: the chunk loop, constant in most
 * instantiations (clang unrolls those by itself and refuses "full" for the others) */
#if defined(__clang__)
#define KS_UNROLL _Pragma("clang loop unroll(full)")
#define KS_UNROLL_CH
#else
#define KS_UNROLL _Pragma("GCC unroll 8")
#define KS_UNROLL_CH _Pragma("GCC unroll 8")
#endif
#define KS_INLINE static inline __attribute__((always_inline))

KS_INLINE __m256 fold8(const __m256 *a) {
    const __m256 h01 = _mm256_hadd_ps(a[0], a[1]), h23 = _mm256_hadd_ps(a[2], a[3]);
    const __m256 h45 = _mm256_hadd_ps(a[4], a[5]), h67 = _mm256_hadd_ps(a[6], a[7]);
    /* q0 = [p0..p3 low-half sums | p0..p3 high-half sums], q1 the same for p4..p7 */
    const __m256 q0 = _mm256_hadd_ps(h01, h23), q1 = _mm256_hadd_ps(h45, h67);
    const __m256 lo = _mm256_insertf128_ps(q0, _mm256_castps256_ps128(q1), 1);
    const __m256 hi = _mm256_insertf128_ps(q1, _mm256_extractf128_ps(q0, 1), 0);
    return _mm256_add_ps(lo, hi);
}

/* SPAN: CH chunks per kernel row (0: t->chunks), the last one masked when TAIL; pixel stride SX
 * floats (0: t->sx); Q outputs per fold (t->q_block). With CH and SX constant the loop is flat,
 * and with SX == 8 (Cin 8, unit stride) pixel k's chunk c is pixel k + 1's chunk c - 1, which the
 * compiler loads once. A fold covers 8 / Q pixels x Q outputs, accumulator k * Q + j holding
 * pixel k's output j, so its result is already in the output's pixel-major order, and each input
 * vector feeds Q FMAs. */
KS_INLINE void span_body(const size_t CH, const size_t SX, const int TAIL, const size_t Q,
                         const ks__fewout_tile *t) {
    const size_t sx = SX ? SX : t->sx, chunks = CH ? CH : t->chunks, wos = t->w_out_stride;
    const size_t full = TAIL ? chunks - 1 : chunks, PQ = P / Q;
    const __m256 keep = TAIL ? v_tail(t->tail) : _mm256_setzero_ps();
    float *sums = t->sums;
    for (size_t i = 0; i < t->num_tiles; i++)
        for (size_t ob = 0; ob < t->num_out; ob += Q)
            for (size_t f = 0; f < Q; f++, sums += P) {
                __m256 acc[P];
                KS_UNROLL for (int k = 0; k < P; k++) acc[k] = _mm256_setzero_ps();
                for (size_t r = 0; r < t->num_rows; r++) {
                    const float *x = t->x[r] + i * t->tile_step + f * PQ * sx;
                    const float *w = t->w[r] + ob * wos;
                    KS_UNROLL_CH for (size_t c = 0; c < chunks; c++) {
                        __m256 wv[4];
                        KS_UNROLL for (size_t j = 0; j < Q; j++) wv[j] =
                            _mm256_load_ps(w + j * wos + c * 8);
                        KS_UNROLL for (size_t k = 0; k < PQ; k++) {
                            __m256 xv = _mm256_loadu_ps(x + k * sx + c * 8);
                            if (TAIL && c == full) xv = _mm256_and_ps(xv, keep);
                            KS_UNROLL for (size_t j = 0; j < Q; j++) acc[k * Q + j] =
                                _mm256_fmadd_ps(xv, wv[j], acc[k * Q + j]);
                        }
                    }
                }
                _mm256_store_ps(sums, fold8(acc));
            }
}

#define SPAN_CORE(ch, sx, tail)                                                                    \
    static void span_##ch##_##sx##_##tail##_1(const ks__fewout_tile *t) {                          \
        span_body(ch, sx, tail, 1, t);                                                             \
    }                                                                                              \
    static void span_##ch##_##sx##_##tail##_2(const ks__fewout_tile *t) {                          \
        span_body(ch, sx, tail, 2, t);                                                             \
    }                                                                                              \
    static void span_##ch##_##sx##_##tail##_4(const ks__fewout_tile *t) {                          \
        span_body(ch, sx, tail, 4, t);                                                             \
    }
#define SPAN_CORES(X)                                                                              \
    X(1, 8, 0)                                                                                     \
    X(2, 8, 0)                                                                                     \
    X(3, 8, 0)                                                                                     \
    X(4, 8, 0)                                                                                     \
    X(5, 8, 0)                                                                                     \
    X(1, 0, 0)                                                                                     \
    X(2, 0, 0)                                                                                     \
    X(3, 0, 0)                                                                                     \
    X(4, 0, 0)                                                                                     \
    X(1, 0, 1)                                                                                     \
    X(2, 0, 1)                                                                                     \
    X(3, 0, 1)                                                                                     \
    X(4, 0, 1)                                                                                     \
    X(0, 0, 0)                                                                                     \
    X(0, 0, 1)
SPAN_CORES(SPAN_CORE)
#undef SPAN_CORE

static ks__fewout_core_fn span_for(size_t sx, size_t chunks, size_t tail, size_t q_block) {
    const size_t sx_c = sx == 8 ? 8 : 0, ch_c = chunks <= 5 ? chunks : 0, tail_c = tail != 0;
#define CASE(ch, sx, tail)                                                                         \
    if (ch_c == ch && sx_c == sx && tail_c == tail)                                                \
        return q_block == 4   ? span_##ch##_##sx##_##tail##_4                                      \
               : q_block == 2 ? span_##ch##_##sx##_##tail##_2                                      \
                              : span_##ch##_##sx##_##tail##_1;
    SPAN_CORES(CASE)
#undef CASE
    /* sx 8 with more chunks than compiled, or 5 chunks at another stride */
    if (tail_c) return q_block == 4 ? span_0_0_1_4 : q_block == 2 ? span_0_0_1_2 : span_0_0_1_1;
    return q_block == 4 ? span_0_0_0_4 : q_block == 2 ? span_0_0_0_2 : span_0_0_0_1;
}

/* PACKED, Cin = C: vector k of a tap holds pixels [k * 8 / C, (k + 1) * 8 / C); S = 4 / C partial
 * sums per vector (taps alternate between them), so 4 independent FMA chains. */
KS_INLINE void packed_body(const int C, const ks__fewout_tile *t) {
    const int S = 4 / C;
    float *sums = t->sums;
    for (size_t i = 0; i < t->num_tiles; i++)
        for (size_t o = 0; o < t->num_out; o++, sums += P) {
            __m256 acc[4];
            KS_UNROLL for (int a = 0; a < 4; a++) acc[a] = _mm256_setzero_ps();
            int s = 0;
            for (size_t r = 0; r < t->num_rows; r++) {
                const float *x = t->x[r] + i * t->tile_step, *w = t->w[r] + o * t->w_out_stride;
                for (size_t kx = 0; kx < t->chunks; kx++, x += C, w += 8) {
                    const __m256 wv = _mm256_load_ps(w);
                    KS_UNROLL for (int k = 0; k < C; k++) acc[k * S + s] =
                        _mm256_fmadd_ps(_mm256_loadu_ps(x + 8 * k), wv, acc[k * S + s]);
                    s = s + 1 == S ? 0 : s + 1;
                }
            }
            __m256 v;
            if (C == 1) {
                v = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
            } else if (C == 2) {
                /* [p0 p1 p4 p5 | p2 p3 p6 p7] -> pixel order */
                const __m256 a0 = _mm256_add_ps(acc[0], acc[1]), a1 = _mm256_add_ps(acc[2], acc[3]);
                v = _mm256_castpd_ps(
                    _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_hadd_ps(a0, a1)), 0xD8));
            } else {
                /* [p0 p2 p4 p6 | p1 p3 p5 p7] -> pixel order */
                const __m256 q =
                    _mm256_hadd_ps(_mm256_hadd_ps(acc[0], acc[1]), _mm256_hadd_ps(acc[2], acc[3]));
                v = _mm256_permutevar8x32_ps(q, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            }
            _mm256_store_ps(sums, v);
        }
}

static void packed1(const ks__fewout_tile *t) {
    packed_body(1, t);
}
static void packed2(const ks__fewout_tile *t) {
    packed_body(2, t);
}
static void packed4(const ks__fewout_tile *t) {
    packed_body(4, t);
}

/* ---- store ---- */

/* Lane l of output vector v of a tile with q outputs per pixel holds pixel (8v + l) / q's output
 * (8v + l) % q: k_pix[q][v] and k_out[q][v]. */
static const int32_t k_pix[5][4][8] = {
    {{0}},
    {{0}},
    {{0, 0, 1, 1, 2, 2, 3, 3}, {4, 4, 5, 5, 6, 6, 7, 7}},
    {{0, 0, 0, 1, 1, 1, 2, 2}, {2, 3, 3, 3, 4, 4, 4, 5}, {5, 5, 6, 6, 6, 7, 7, 7}},
    {{0, 0, 0, 0, 1, 1, 1, 1},
     {2, 2, 2, 2, 3, 3, 3, 3},
     {4, 4, 4, 4, 5, 5, 5, 5},
     {6, 6, 6, 6, 7, 7, 7, 7}},
};
static const int32_t k_out[5][4][8] = {
    {{0}},
    {{0}},
    {{0, 1, 0, 1, 0, 1, 0, 1}, {0, 1, 0, 1, 0, 1, 0, 1}},
    {{0, 1, 2, 0, 1, 2, 0, 1}, {2, 0, 1, 2, 0, 1, 2, 0}, {1, 2, 0, 1, 2, 0, 1, 2}},
    {{0, 1, 2, 3, 0, 1, 2, 3},
     {0, 1, 2, 3, 0, 1, 2, 3},
     {0, 1, 2, 3, 0, 1, 2, 3},
     {0, 1, 2, 3, 0, 1, 2, 3}},
};

KS_INLINE __m256 interleave(const __m256 *r, size_t q, size_t v) {
    const __m256i pix = _mm256_loadu_si256((const __m256i *)(const void *)k_pix[q][v]);
    const __m256i out = _mm256_loadu_si256((const __m256i *)(const void *)k_out[q][v]);
    __m256 a = _mm256_permutevar8x32_ps(r[0], pix);
    for (size_t c = 1; c < q; c++) {
        const __m256 m = _mm256_castsi256_ps(_mm256_cmpeq_epi32(out, _mm256_set1_epi32((int)c)));
        a = _mm256_blendv_ps(a, _mm256_permutevar8x32_ps(r[c], pix), m);
    }
    return a;
}

/* The fused activation, as v_act_inplace (f32_vsimd.h) computes it; PRELU takes its slopes. */
KS_INLINE vf act_v(const int32_t ACT, vf x, const float *slope, float alpha) {
    switch (ACT) {
    case KS_ACT_RELU:
        return v_max(x, v_zero());
    case KS_ACT_RELU_N1_TO_1:
        return v_clamp(x, v_set1(-1.0f), v_set1(1.0f));
    case KS_ACT_RELU6:
        return v_clamp(x, v_zero(), v_set1(6.0f));
    case KS_ACT_TANH:
        return v_tanh(x);
    case KS_ACT_SIGMOID:
        return v_sigmoid(x);
    case KS_ACT_LEAKY_RELU:
        return v_leaky(x, v_set1(alpha));
    case KS_ACT_HARD_SWISH:
        return v_hard_swish(x);
    case KS_ACT_SILU:
        return v_mul(x, v_sigmoid(x));
    case KS_ACT_PRELU:
        return v_leaky(x, _mm256_load_ps(slope));
    default:
        return x;
    }
}

KS_INLINE void store_act(const int32_t ACT, const ks__fewout_store *s) {
    const size_t q = s->q;
    const float *sums = s->sums, *res = s->res;
    float *y = s->y;
    __m256 bias[KS_FEWOUT_MAX_OUT];
    if (s->pixel_major) {
        /* q divides 8: every vector holds whole pixels, lane l output l % q */
        const __m256 b =
            _mm256_setr_ps(s->bias[0], s->bias[1 % q], s->bias[2 % q], s->bias[3 % q],
                           s->bias[4 % q], s->bias[5 % q], s->bias[6 % q], s->bias[7 % q]);
        const size_t n = q * s->num_px;
        for (size_t t = 0; t * P * q < n; t++, sums += s->sums_stride)
            for (size_t v = 0; v < q && (t * q + v) * P < n; v++, y += P) {
                __m256 a = _mm256_add_ps(_mm256_load_ps(sums + v * P), b);
                const size_t left = n - (t * q + v) * P;
                const float *slope = s->slope ? s->slope + v * P : NULL;
                if (left >= P) {
                    if (res) a = _mm256_add_ps(a, _mm256_loadu_ps(res));
                    _mm256_storeu_ps(y, act_v(ACT, a, slope, s->alpha));
                } else {
                    if (res) a = _mm256_add_ps(a, v_loadn(res, left));
                    v_storen(y, act_v(ACT, a, slope, s->alpha), left);
                }
                if (res) res += P;
            }
        return;
    }
    for (size_t c = 0; c < q; c++)
        bias[c] = _mm256_set1_ps(s->bias[c]);
    for (size_t p0 = 0; p0 < s->num_px; p0 += P, sums += s->sums_stride) {
        const size_t n = q * (s->num_px - p0 < P ? s->num_px - p0 : P);
        __m256 r[KS_FEWOUT_MAX_OUT];
        for (size_t c = 0; c < q; c++)
            r[c] = _mm256_add_ps(_mm256_load_ps(sums + c * P), bias[c]);
        for (size_t v = 0; v * P < n; v++, y += P) {
            __m256 a = q == 1 ? r[0] : interleave(r, q, v);
            const size_t left = n - v * P;
            const float *slope = s->slope ? s->slope + v * P : NULL;
            if (left >= P) {
                if (res) a = _mm256_add_ps(a, _mm256_loadu_ps(res));
                _mm256_storeu_ps(y, act_v(ACT, a, slope, s->alpha));
            } else {
                if (res) a = _mm256_add_ps(a, v_loadn(res, left));
                v_storen(y, act_v(ACT, a, slope, s->alpha), left);
            }
            if (res) res += P;
        }
    }
}

static void store(const ks__fewout_store *s) {
    switch (s->act) {
#define CASE(a)                                                                                    \
    case a:                                                                                        \
        store_act(a, s);                                                                           \
        break;
        CASE(KS_ACT_RELU)
        CASE(KS_ACT_RELU_N1_TO_1)
        CASE(KS_ACT_RELU6)
        CASE(KS_ACT_TANH)
        CASE(KS_ACT_SIGMOID)
        CASE(KS_ACT_LEAKY_RELU)
        CASE(KS_ACT_HARD_SWISH)
        CASE(KS_ACT_SILU)
        CASE(KS_ACT_PRELU)
#undef CASE
    default:
        store_act(KS_ACT_NONE, s);
        break;
    }
}

/* Two vector FMAs per cycle, the unit of the AVX2 GEMM's and smallc's costs. Folds: SPAN six
 * hadds, two lane permutes and an add; PACKED Cin 1 three adds, Cin 2 three adds, a hadd and a
 * permute, Cin 4 three hadds and a permute. */
static const ks__fewout_arch k_arch = {.lanes = P,
                                       .fma_per_cycle = 2.0,
                                       .fold_cycles = {9.0, 2.0, 4.0, 6.0},
                                       .span = span_for,
                                       .packed = {packed1, packed2, packed4},
                                       .store = store};

static double cost(const ks__kernel_ctx *ctx) {
    return ks__fewout_cost(ctx, &k_arch);
}
static ks_status plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__fewout_plan(ctx, &k_arch, packed_bytes_out);
}
static ks_status pack(ks__kernel_ctx *ctx) {
    return ks__fewout_pack(ctx, &k_arch);
}
static ks_status run(ks__kernel_ctx *ctx) {
    return ks__fewout_run(ctx, &k_arch);
}

const ks__impl ks_f32_conv2d_fewout__avx2_8px = {
    "ks_f32_conv2d_fewout__avx2_8px", KS_OP_CONV2D, KS_ISA_AVX2, cost, plan, pack, run};
const ks__impl ks_f32_deconv_fewout__avx2_8px = {
    "ks_f32_deconv_fewout__avx2_8px", KS_OP_CONV2D_TRANSPOSE, KS_ISA_AVX2, cost, plan, pack, run};
