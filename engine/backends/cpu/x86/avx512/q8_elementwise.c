/* Quantized (U8/I8, per-tensor) elementwise kernels for AVX-512 (F/BW/VL), bit-exact with the
 * reference kernels (ref/elementwise.c):
 *   QUANTIZE F32 -> U8/I8: round-half-away-from-zero of x / scale (a true IEEE division, as the
 *       reference does), NaN -> 0, + zero point, clamp to the dtype;
 *   ADD/SUB of same-shape tensors: TFLite's integer add (both inputs shifted left by 20 bits and
 *       rescaled to twice the larger scale, summed, rescaled to the output);
 *   MUL of same-shape tensors: (a - za) * (b - zb) rescaled by s_a * s_b / s_out;
 *   ADD/SUB again with AVX-512 VBMI, the two input rescalings looked up from per-node tables;
 *   DEQUANTIZE U8/I8 -> F32 (the vector formula behind q8_lut.c's ks_q8_dequantize__avx512).
 * All rescalings are MultiplyByQuantizedMultiplier (rounding doubling high multiply, then a
 * rounding right shift), 16 lanes at a time; tails use masked loads and stores, so there is no
 * scalar path. Broadcasting and I16 stay with the reference.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "../../impl.h"
#include "../../q8_lut.h"
#include "../../ref/quant_util.h"

#define KS_INLINE static inline __attribute__((always_inline))

enum { ADD_LEFT_SHIFT = 20, GRAIN = 8192 };

typedef struct qmul {
    int32_t mult, left, right;
} qmul;

static void make_qmul(double real, qmul *q) {
    int32_t shift;
    ks__quant_multiplier(real, &q->mult, &shift);
    q->left = shift > 0 ? (shift > 31 ? 31 : shift) : 0;
    q->right = shift > 0 ? 0 : (-shift > 31 ? 31 : -shift);
}

typedef struct vreq {
    __m512i mult, mask, thr_base;
    __m128i left, right;
} vreq;

static void vreq_init(const qmul *q, vreq *v) {
    int32_t mask = (int32_t)((1LL << q->right) - 1);
    v->mult = _mm512_set1_epi32(q->mult);
    v->mask = _mm512_set1_epi32(mask);
    v->thr_base = _mm512_set1_epi32(mask >> 1);
    v->left = _mm_cvtsi32_si128(q->left);
    v->right = _mm_cvtsi32_si128(q->right);
}

/* ks__quant_mul on 16 lanes. The nudge is always +2^30 with a flooring shift, which equals
 * gemmlowp's sign-dependent nudge with a truncating divide; the multiplier is never INT32_MIN,
 * so the saturating case cannot occur. */
KS_INLINE __m512i requant(__m512i v, const vreq *q) {
    const __m512i nudge = _mm512_set1_epi64(1LL << 30);
    v = _mm512_sll_epi32(v, q->left);
    __m512i even = _mm512_add_epi64(_mm512_mul_epi32(v, q->mult), nudge);
    __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(v, 32), q->mult), nudge);
    __m512i high = _mm512_mask_blend_epi32((__mmask16)0xAAAA, _mm512_srli_epi64(even, 31),
                                           _mm512_slli_epi64(odd, 1));
    __m512i rem = _mm512_and_si512(high, q->mask);
    __m512i thr = _mm512_sub_epi32(q->thr_base, _mm512_srai_epi32(high, 31));
    __m512i res = _mm512_sra_epi32(high, q->right);
    __mmask16 up = _mm512_cmpgt_epi32_mask(rem, thr);
    return _mm512_mask_sub_epi32(res, up, res, _mm512_set1_epi32(-1));
}

KS_INLINE __mmask16 tail_mask(size_t n) {
    return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u);
}

/* 16 bytes -> 16 int32 (sign- or zero-extended by dtype) minus the zero point. */
KS_INLINE __m512i load16(const uint8_t *p, __mmask16 m, int is_i8, __m512i zp) {
    __m128i b = _mm_maskz_loadu_epi8(m, p);
    __m512i v = is_i8 ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
    return _mm512_sub_epi32(v, zp);
}

static int per_tensor_q8(const ks__rt_tensor *t, ks_dtype dtype) {
    if (!t || t->dtype != dtype || !t->quant || t->quant->count != 1 || !t->quant->scales ||
        !t->quant->zero_points)
        return 0;
    float s = t->quant->scales[0];
    int32_t zp = t->quant->zero_points[0];
    int32_t lo = dtype == KS_DTYPE_U8 ? 0 : -128, hi = dtype == KS_DTYPE_U8 ? 255 : 127;
    return s > 0.0f && isfinite(s) && zp >= lo && zp <= hi;
}

/* ---- ADD / SUB / MUL ---- */

typedef struct vbin_job {
    const uint8_t *a, *b;
    uint8_t *y;
    int is_i8;
    uint32_t op;
    int32_t za, zb, zo, lo, hi;
    qmul ma, mb, mo;
} vbin_job;

static void vbin_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const vbin_job *j = (const vbin_job *)arg;
    (void)thread;
    const __m512i za = _mm512_set1_epi32(j->za), zb = _mm512_set1_epi32(j->zb);
    const __m512i zo = _mm512_set1_epi32(j->zo);
    const __m512i lo = _mm512_set1_epi32(j->lo), hi = _mm512_set1_epi32(j->hi);
    vreq ma, mb, mo;
    vreq_init(&j->ma, &ma);
    vreq_init(&j->mb, &mb);
    vreq_init(&j->mo, &mo);
    const int is_i8 = j->is_i8;
    for (size_t i = begin; i < end; i += 16) {
        __mmask16 m = tail_mask(end - i);
        __m512i va = load16(j->a + i, m, is_i8, za);
        __m512i vb = load16(j->b + i, m, is_i8, zb);
        __m512i raw;
        if (j->op == KS_OP_MUL) {
            raw = _mm512_mullo_epi32(va, vb);
        } else {
            va = requant(_mm512_slli_epi32(va, ADD_LEFT_SHIFT), &ma);
            vb = requant(_mm512_slli_epi32(vb, ADD_LEFT_SHIFT), &mb);
            raw = j->op == KS_OP_SUB ? _mm512_sub_epi32(va, vb) : _mm512_add_epi32(va, vb);
        }
        __m512i q = _mm512_add_epi32(requant(raw, &mo), zo);
        q = _mm512_min_epi32(_mm512_max_epi32(q, lo), hi);
        _mm512_mask_cvtepi32_storeu_epi8(j->y + i, m, q);
    }
}

/* Same dtype (U8 or I8) and per-tensor quantization everywhere, identical shapes. */
static int vbin_describe(const ks__kernel_ctx *ctx, vbin_job *j) {
    memset(j, 0, sizeof(*j));
    if (ctx->num_inputs != 2 || ctx->num_outputs != 1) return -1;
    const ks__rt_tensor *a = ctx->in[0], *b = ctx->in[1], *y = ctx->out[0];
    if (!a || !b || !y || (a->dtype != KS_DTYPE_U8 && a->dtype != KS_DTYPE_I8)) return -1;
    if (!per_tensor_q8(a, a->dtype) || !per_tensor_q8(b, a->dtype) || !per_tensor_q8(y, a->dtype))
        return -1;
    if (a->rank != y->rank || b->rank != y->rank) return -1;
    for (int32_t d = 0; d < y->rank; d++)
        if (a->dims[d] != y->dims[d] || b->dims[d] != y->dims[d]) return -1;
    int32_t act = ctx->node->ip[0];
    if (act != KS_ACT_NONE && act != KS_ACT_RELU && act != KS_ACT_RELU6 &&
        act != KS_ACT_RELU_N1_TO_1)
        return -1;
    j->op = ctx->node->op;
    j->is_i8 = a->dtype == KS_DTYPE_I8;
    j->za = a->quant->zero_points[0];
    j->zb = b->quant->zero_points[0];
    j->zo = y->quant->zero_points[0];
    const float sa = a->quant->scales[0], sb = b->quant->scales[0], so = y->quant->scales[0];
    if (j->op == KS_OP_MUL) {
        make_qmul((double)sa * (double)sb / (double)so, &j->mo);
    } else {
        const double twice_max = 2.0 * (double)(sa > sb ? sa : sb);
        make_qmul((double)sa / twice_max, &j->ma);
        make_qmul((double)sb / twice_max, &j->mb);
        make_qmul(twice_max / ((double)(1 << ADD_LEFT_SHIFT) * (double)so), &j->mo);
    }
    ks__quant_act_range(act, so, j->zo, y->dtype, &j->lo, &j->hi);
    j->a = (const uint8_t *)a->data;
    j->b = (const uint8_t *)b->data;
    j->y = (uint8_t *)y->data;
    return 0;
}

static double vbin_cost(const ks__kernel_ctx *ctx) {
    vbin_job j;
    if (vbin_describe(ctx, &j)) return -1.0;
    return (double)ks__rt_numel(ctx->out[0]) / 16.0;
}

static ks_status no_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    (void)ctx;
    *packed_bytes_out = 0;
    return KS_STATUS_OK;
}

static ks_status vbin_run(ks__kernel_ctx *ctx) {
    vbin_job j;
    if (vbin_describe(ctx, &j))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 binary op cannot run this node");
    ks__parallel_for(ctx->pool, (size_t)ks__rt_numel(ctx->out[0]), GRAIN, vbin_range, &j);
    return KS_STATUS_OK;
}

const ks__impl ks_q8_vadd__avx512 = {
    "ks_q8_vadd__avx512", KS_OP_ADD, KS_ISA_AVX512, vbin_cost, no_plan, NULL, vbin_run};
const ks__impl ks_q8_vsub__avx512 = {
    "ks_q8_vsub__avx512", KS_OP_SUB, KS_ISA_AVX512, vbin_cost, no_plan, NULL, vbin_run};
const ks__impl ks_q8_vmul__avx512 = {
    "ks_q8_vmul__avx512", KS_OP_MUL, KS_ISA_AVX512, vbin_cost, no_plan, NULL, vbin_run};

/* ---- ADD / SUB with AVX-512 VBMI: the input rescalings as byte-plane lookups ----
 * Each input's rescaled value (the first two requant calls of vbin_range) depends on its byte
 * alone, so pack() tabulates it for the 256 byte values with that same vector code (exact by
 * construction) and stores each int32 table as four 256-byte planes. run() looks the planes up
 * 64 bytes at a time (two vpermi2b and a blend on the index's top bit per plane) and interleaves
 * them back into int32 lanes, which costs about a third of computing the two rescalings; only
 * the output rescaling is still computed. The unpacks interleave within 128-bit lanes, so the
 * input bytes are first permuted (k_unscramble) such that the four int32 vectors come out in
 * element order. */

enum { VT_PLANE = 256, VT_PACKED_BYTES = 2 * 4 * VT_PLANE };

typedef struct vtab_job {
    vbin_job b;
    const uint8_t *planes; /* [input][plane][byte] */
} vtab_job;

static ks_status vtab_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    vbin_job j;
    if (vbin_describe(ctx, &j) || j.op == KS_OP_MUL)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 add/sub cannot run this node");
    *packed_bytes_out = VT_PACKED_BYTES;
    return KS_STATUS_OK;
}

static ks_status vtab_pack(ks__kernel_ctx *ctx) {
    vbin_job j;
    if (vbin_describe(ctx, &j) || j.op == KS_OP_MUL)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 add/sub cannot run this node");
    if (!ctx->packed || ctx->packed_bytes < VT_PACKED_BYTES)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 add/sub: packed tables missing");
    uint8_t *planes = (uint8_t *)ctx->packed;
    vreq m[2];
    vreq_init(&j.ma, &m[0]);
    vreq_init(&j.mb, &m[1]);
    const __m512i zp[2] = {_mm512_set1_epi32(j.za), _mm512_set1_epi32(j.zb)};
    uint8_t bytes[16];
    int32_t vals[16];
    for (int t = 0; t < 2; t++) {
        for (int i = 0; i < 256; i += 16) {
            for (int k = 0; k < 16; k++)
                bytes[k] = (uint8_t)(i + k);
            __m512i v = load16(bytes, 0xFFFF, j.is_i8, zp[t]);
            _mm512_storeu_si512(vals, requant(_mm512_slli_epi32(v, ADD_LEFT_SHIFT), &m[t]));
            for (int k = 0; k < 16; k++)
                for (int p = 0; p < 4; p++)
                    planes[(t * 4 + p) * VT_PLANE + i + k] =
                        (uint8_t)((uint32_t)vals[k] >> (8 * p));
        }
    }
    return KS_STATUS_OK;
}

#define KS_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))

/* byte b of the unpack result lands on element order[b]; gather element order[b] into byte b */
static const uint8_t k_unscramble[64] = {
    0,  1,  2,  3,  16, 17, 18, 19, 32, 33, 34, 35, 48, 49, 50, 51, 4,  5,  6,  7,  20, 21,
    22, 23, 36, 37, 38, 39, 52, 53, 54, 55, 8,  9,  10, 11, 24, 25, 26, 27, 40, 41, 42, 43,
    56, 57, 58, 59, 12, 13, 14, 15, 28, 29, 30, 31, 44, 45, 46, 47, 60, 61, 62, 63};

/* 64 bytes (already unscrambled) -> the table values of elements 0..15, 16..31, 32..47, 48..63 */
KS_VBMI static inline __attribute__((always_inline)) void
vt_lookup(__m512i v, const uint8_t *planes, __m512i out[4]) {
    const __mmask64 top = _mm512_movepi8_mask(v);
    __m512i b[4];
    for (int p = 0; p < 4; p++) {
        const uint8_t *t = planes + p * VT_PLANE;
        __m512i lo = _mm512_permutex2var_epi8(_mm512_loadu_si512(t), v, _mm512_loadu_si512(t + 64));
        __m512i hi =
            _mm512_permutex2var_epi8(_mm512_loadu_si512(t + 128), v, _mm512_loadu_si512(t + 192));
        b[p] = _mm512_mask_blend_epi8(top, lo, hi);
    }
    const __m512i w_lo = _mm512_unpacklo_epi8(b[0], b[1]), w_hi = _mm512_unpackhi_epi8(b[0], b[1]);
    const __m512i u_lo = _mm512_unpacklo_epi8(b[2], b[3]), u_hi = _mm512_unpackhi_epi8(b[2], b[3]);
    out[0] = _mm512_unpacklo_epi16(w_lo, u_lo);
    out[1] = _mm512_unpackhi_epi16(w_lo, u_lo);
    out[2] = _mm512_unpacklo_epi16(w_hi, u_hi);
    out[3] = _mm512_unpackhi_epi16(w_hi, u_hi);
}

KS_VBMI static void vtab_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const vtab_job *j = (const vtab_job *)arg;
    (void)thread;
    const __m512i zo = _mm512_set1_epi32(j->b.zo);
    const __m512i lo = _mm512_set1_epi32(j->b.lo), hi = _mm512_set1_epi32(j->b.hi);
    const __m512i perm = _mm512_loadu_si512(k_unscramble);
    vreq mo;
    vreq_init(&j->b.mo, &mo);
    const int sub = j->b.op == KS_OP_SUB;
    for (size_t i = begin; i < end; i += 64) {
        const size_t left = end - i;
        const __mmask64 m = left >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << left) - 1;
        __m512i ta[4], tb[4];
        vt_lookup(_mm512_permutexvar_epi8(perm, _mm512_maskz_loadu_epi8(m, j->b.a + i)), j->planes,
                  ta);
        vt_lookup(_mm512_permutexvar_epi8(perm, _mm512_maskz_loadu_epi8(m, j->b.b + i)),
                  j->planes + 4 * VT_PLANE, tb);
        for (int k = 0; k < 4; k++) {
            const __m512i raw =
                sub ? _mm512_sub_epi32(ta[k], tb[k]) : _mm512_add_epi32(ta[k], tb[k]);
            __m512i q = _mm512_add_epi32(requant(raw, &mo), zo);
            q = _mm512_min_epi32(_mm512_max_epi32(q, lo), hi);
            if (left >= 64)
                _mm512_mask_cvtepi32_storeu_epi8(j->b.y + i + 16 * k, 0xFFFF, q);
            else if (left > (size_t)(16 * k))
                _mm512_mask_cvtepi32_storeu_epi8(j->b.y + i + 16 * k, tail_mask(left - 16 * k), q);
        }
    }
}

static double vtab_cost(const ks__kernel_ctx *ctx) {
    vbin_job j;
    if (vbin_describe(ctx, &j) || j.op == KS_OP_MUL) return -1.0;
    return (double)ks__rt_numel(ctx->out[0]) / 28.0 + 16.0;
}

static ks_status vtab_run(ks__kernel_ctx *ctx) {
    vtab_job j;
    if (vbin_describe(ctx, &j.b) || j.b.op == KS_OP_MUL)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 add/sub cannot run this node");
    if (!ctx->packed || ctx->packed_bytes < VT_PACKED_BYTES)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 add/sub: packed tables missing");
    j.planes = (const uint8_t *)ctx->packed;
    ks__parallel_for(ctx->pool, (size_t)ks__rt_numel(ctx->out[0]), GRAIN, vtab_range, &j);
    return KS_STATUS_OK;
}

const ks__impl ks_q8_vadd__avx512vbmi = {"ks_q8_vadd__avx512vbmi",
                                         KS_OP_ADD,
                                         KS_ISA_AVX512 | KS_ISA_AVX512_VBMI,
                                         vtab_cost,
                                         vtab_plan,
                                         vtab_pack,
                                         vtab_run};
const ks__impl ks_q8_vsub__avx512vbmi = {"ks_q8_vsub__avx512vbmi",
                                         KS_OP_SUB,
                                         KS_ISA_AVX512 | KS_ISA_AVX512_VBMI,
                                         vtab_cost,
                                         vtab_plan,
                                         vtab_pack,
                                         vtab_run};

/* ---- QUANTIZE F32 -> U8/I8 ---- */

typedef struct quant_job {
    const float *x;
    uint8_t *y;
    float scale;
    int32_t zp, lo, hi;
} quant_job;

static void quant_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const quant_job *j = (const quant_job *)arg;
    (void)thread;
    const __m512 scale = _mm512_set1_ps(j->scale);
    /* clamp(r + zp, lo, hi) == clamp(r, lo - zp, hi - zp) + zp for integral r, and those bounds
     * are small integers, exact in float; huge r and infinities end at a bound as in the
     * reference's saturating int conversion. */
    const __m512 rlo = _mm512_set1_ps((float)(j->lo - j->zp));
    const __m512 rhi = _mm512_set1_ps((float)(j->hi - j->zp));
    const __m512 half = _mm512_set1_ps(0.5f);
    const __m512i sign = _mm512_set1_epi32(INT32_MIN);
    const __m512i one = _mm512_castps_si512(_mm512_set1_ps(1.0f));
    const __m512i zp = _mm512_set1_epi32(j->zp);
    for (size_t i = begin; i < end; i += 16) {
        __mmask16 m = tail_mask(end - i);
        __m512 q = _mm512_div_ps(_mm512_maskz_loadu_ps(m, j->x + i), scale);
        /* roundf: truncate, then step away from zero when the (exact) fraction is >= 0.5. */
        __m512 t = _mm512_roundscale_ps(q, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        __m512 frac = _mm512_abs_ps(_mm512_sub_ps(q, t));
        __mmask16 up = _mm512_cmp_ps_mask(frac, half, _CMP_GE_OQ);
        __m512 step = _mm512_castsi512_ps(
            _mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(q), sign), one));
        __m512 r = _mm512_mask_add_ps(t, up, t, step);
        __mmask16 nan = _mm512_cmp_ps_mask(q, q, _CMP_UNORD_Q);
        r = _mm512_mask_mov_ps(r, nan, _mm512_setzero_ps());
        r = _mm512_min_ps(_mm512_max_ps(r, rlo), rhi);
        __m512i v = _mm512_add_epi32(_mm512_cvttps_epi32(r), zp);
        _mm512_mask_cvtepi32_storeu_epi8(j->y + i, m, v);
    }
}

static int quant_describe(const ks__kernel_ctx *ctx, quant_job *j) {
    memset(j, 0, sizeof(*j));
    if (ctx->num_inputs != 1 || ctx->num_outputs != 1) return -1;
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    if (!x || !y || x->dtype != KS_DTYPE_F32) return -1;
    if (!per_tensor_q8(y, KS_DTYPE_U8) && !per_tensor_q8(y, KS_DTYPE_I8)) return -1;
    if (ks__rt_numel(x) != ks__rt_numel(y) || ks__rt_numel(y) < 0) return -1;
    j->scale = y->quant->scales[0];
    j->zp = y->quant->zero_points[0];
    j->lo = y->dtype == KS_DTYPE_U8 ? 0 : -128;
    j->hi = y->dtype == KS_DTYPE_U8 ? 255 : 127;
    j->x = (const float *)x->data;
    j->y = (uint8_t *)y->data;
    return 0;
}

static double quant_cost(const ks__kernel_ctx *ctx) {
    quant_job j;
    if (quant_describe(ctx, &j)) return -1.0;
    return (double)ks__rt_numel(ctx->out[0]) / 16.0;
}

static ks_status quant_run(ks__kernel_ctx *ctx) {
    quant_job j;
    if (quant_describe(ctx, &j))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 quantize cannot run this node");
    ks__parallel_for(ctx->pool, (size_t)ks__rt_numel(ctx->out[0]), GRAIN, quant_range, &j);
    return KS_STATUS_OK;
}

const ks__impl ks_q8_quantize__avx512 = {
    "ks_q8_quantize__avx512", KS_OP_QUANTIZE, KS_ISA_AVX512, quant_cost, no_plan, NULL, quant_run};

/* ---- DEQUANTIZE U8/I8 -> F32 ----
 * scale * (float)(q - zp) in float: the product of a float and an integer of at most 9 bits is
 * exact in double, so the reference's double product rounded to float and this single float
 * product are the same correctly rounded value. q8_lut.c still checks the 256 results against
 * the reference's table before using this. */
void ks__q8_dequantize_avx512(const uint8_t *x, float *y, size_t n, int is_i8, int32_t zp,
                              float scale) {
    const __m512i vzp = _mm512_set1_epi32(zp);
    const __m512 vs = _mm512_set1_ps(scale);
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        const __m512i b = _mm512_loadu_si512(x + i);
        __m128i q0 = _mm512_castsi512_si128(b), q1 = _mm512_extracti32x4_epi32(b, 1);
        __m128i q2 = _mm512_extracti32x4_epi32(b, 2), q3 = _mm512_extracti32x4_epi32(b, 3);
        __m512i v0 = is_i8 ? _mm512_cvtepi8_epi32(q0) : _mm512_cvtepu8_epi32(q0);
        __m512i v1 = is_i8 ? _mm512_cvtepi8_epi32(q1) : _mm512_cvtepu8_epi32(q1);
        __m512i v2 = is_i8 ? _mm512_cvtepi8_epi32(q2) : _mm512_cvtepu8_epi32(q2);
        __m512i v3 = is_i8 ? _mm512_cvtepi8_epi32(q3) : _mm512_cvtepu8_epi32(q3);
        _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(v0, vzp)), vs));
        _mm512_storeu_ps(y + i + 16,
                         _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(v1, vzp)), vs));
        _mm512_storeu_ps(y + i + 32,
                         _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(v2, vzp)), vs));
        _mm512_storeu_ps(y + i + 48,
                         _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(v3, vzp)), vs));
    }
    for (; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        const __m512i v = load16(x + i, m, is_i8, vzp);
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_cvtepi32_ps(v), vs));
    }
}
