/* QUANTIZE F32 -> U8/I8 (per tensor) for AVX2, bit-exact with the reference (ref/elementwise.c):
 * round-half-away-from-zero of x / scale (a true IEEE division, as the reference does), NaN -> 0,
 * + zero point, clamp to the dtype. 8 values per step; the last n % 8 go through the same vector
 * code on a zero-padded copy, so there is no scalar path.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "../../impl.h"

enum { GRAIN = 8192 };

typedef struct quant_job {
    const float *x;
    uint8_t *y;
    float scale;
    int32_t zp, lo, hi;
} quant_job;

/* 8 quantized codes as the low bytes of the int32 lanes. */
static inline __attribute__((always_inline)) __m256i quant8(__m256 x, const quant_job *j) {
    const __m256 half = _mm256_set1_ps(0.5f);
    const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
    /* clamp(r + zp, lo, hi) == clamp(r, lo - zp, hi - zp) + zp for integral r; the bounds are
     * small integers, exact in float, and huge r or infinities end at a bound as in the
     * reference's saturating conversion. */
    const __m256 rlo = _mm256_set1_ps((float)(j->lo - j->zp));
    const __m256 rhi = _mm256_set1_ps((float)(j->hi - j->zp));
    __m256 q = _mm256_div_ps(x, _mm256_set1_ps(j->scale));
    __m256 t = _mm256_round_ps(q, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(q, t)); /* exact; NaN for inf - inf */
    __m256 up = _mm256_cmp_ps(frac, half, _CMP_GE_OQ);
    __m256 step = _mm256_and_ps(up, _mm256_or_ps(_mm256_and_ps(q, sign), one));
    __m256 r = _mm256_add_ps(t, step);
    r = _mm256_andnot_ps(_mm256_cmp_ps(q, q, _CMP_UNORD_Q), r); /* NaN -> 0 */
    /* max/min return the second operand for NaN; none is left here */
    r = _mm256_min_ps(_mm256_max_ps(r, rlo), rhi);
    return _mm256_add_epi32(_mm256_cvttps_epi32(r), _mm256_set1_epi32(j->zp));
}

static inline __attribute__((always_inline)) void store8(uint8_t *dst, __m256i v) {
    const __m256i byte = _mm256_set1_epi32(0xFF);
    v = _mm256_and_si256(v, byte);
    __m128i w16 = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64((__m128i *)dst, _mm_packus_epi16(w16, w16));
}

static void quant_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const quant_job *j = (const quant_job *)arg;
    (void)thread;
    size_t i = begin;
    for (; i + 8 <= end; i += 8)
        store8(j->y + i, quant8(_mm256_loadu_ps(j->x + i), j));
    if (i < end) {
        float in[8] = {0};
        uint8_t out[8];
        memcpy(in, j->x + i, (end - i) * sizeof(float));
        store8(out, quant8(_mm256_loadu_ps(in), j));
        memcpy(j->y + i, out, end - i);
    }
}

static int per_tensor_q8(const ks__rt_tensor *t) {
    if (!t || (t->dtype != KS_DTYPE_U8 && t->dtype != KS_DTYPE_I8) || !t->quant ||
        t->quant->count != 1 || !t->quant->scales || !t->quant->zero_points)
        return 0;
    float s = t->quant->scales[0];
    int32_t zp = t->quant->zero_points[0];
    int32_t lo = t->dtype == KS_DTYPE_U8 ? 0 : -128, hi = t->dtype == KS_DTYPE_U8 ? 255 : 127;
    return s > 0.0f && isfinite(s) && zp >= lo && zp <= hi;
}

static int describe(const ks__kernel_ctx *ctx, quant_job *j) {
    memset(j, 0, sizeof(*j));
    if (ctx->num_inputs != 1 || ctx->num_outputs != 1) return -1;
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    if (!x || !y || x->dtype != KS_DTYPE_F32 || !per_tensor_q8(y)) return -1;
    if (ks__rt_numel(x) != ks__rt_numel(y) || ks__rt_numel(y) < 0) return -1;
    j->scale = y->quant->scales[0];
    j->zp = y->quant->zero_points[0];
    j->lo = y->dtype == KS_DTYPE_U8 ? 0 : -128;
    j->hi = y->dtype == KS_DTYPE_U8 ? 255 : 127;
    j->x = (const float *)x->data;
    j->y = (uint8_t *)y->data;
    return 0;
}

static double cost(const ks__kernel_ctx *ctx) {
    quant_job j;
    if (describe(ctx, &j)) return -1.0;
    return (double)ks__rt_numel(ctx->out[0]) / 8.0;
}

static ks_status plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    (void)ctx;
    *packed_bytes_out = 0;
    return KS_STATUS_OK;
}

static ks_status run(ks__kernel_ctx *ctx) {
    quant_job j;
    if (describe(ctx, &j))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 quantize cannot run this node");
    ks__parallel_for(ctx->pool, (size_t)ks__rt_numel(ctx->out[0]), GRAIN, quant_range, &j);
    return KS_STATUS_OK;
}

const ks__impl ks_q8_quantize__avx2 = {
    "ks_q8_quantize__avx2", KS_OP_QUANTIZE, KS_ISA_AVX2, cost, plan, NULL, run};
