/* Quantized (U8/I8) ADD, SUB and MUL of same-shape tensors for AVX2, bit-exact with the reference
 * (TFLite's integer add: both inputs are shifted left by 20 bits, rescaled to twice the larger
 * input scale with their own fixed-point multipliers, summed, and rescaled to the output; MUL:
 * the product of the zero-point-corrected codes rescaled by s_a * s_b / s_out).
 * Broadcasting: each input is read one of three ways (operand_mode): whole (its shape is the
 * output's), periodic (its shape is the output's trailing dims with ones before: element i % P,
 * a scalar when P is 1; a per-channel mean, say) or one value per output row (its last dim is 1
 * and its others are the output's: element i / L with L the output's last dim; movenet's
 * [48,48,1] - [1,17]). A periodic input is read from a tile in the scratch, the input repeated
 * to a multiple of 8 bytes (at most TILE_MAX), so that every 8 lanes are one load; a row-value
 * input is gathered 8 values at a time. Other broadcasts and I16 are left to the reference
 * kernel. The three rescalings use the same exact vectorized MultiplyByQuantizedMultiplier as
 * the quantized GEMM epilogue; the last n % 8 elements use the scalar reference helpers.
 */
#include <immintrin.h>
#include <string.h>

#include "../../impl.h"
#include "../../ref/quant_util.h"
#include "q8_rescale.h"

#define KS_INLINE static inline __attribute__((always_inline))

enum { LEFT_SHIFT = 20 };

/* How an input is read for output element i (see the top comment). */
enum { M_WHOLE, M_PERIODIC, M_ROW };
#define TILE_MAX 4096 /* bytes of a periodic input's tile */

typedef struct operand {
    const uint8_t *p; /* the input; for M_PERIODIC at run, its tile */
    int mode;
    size_t period; /* M_PERIODIC: the input's size P; M_ROW: the output's last dim L */
    size_t tile;   /* M_PERIODIC: the tile's length, lcm(P, 8) rounded to <= TILE_MAX */
} operand;

typedef struct qmul {
    int32_t mult, shift, left, right;
} qmul;

typedef struct vadd_job {
    operand a, b;
    uint8_t *y;
    int32_t flip; /* 0x80 for I8: maps the bytes to u8 (value + 128) */
    int32_t za, zb, zo, lo, hi;
    int sub, mul;
    qmul ma, mb, mo;
} vadd_job;

static void make_qmul(double real, qmul *q) {
    ks__quant_multiplier(real, &q->mult, &q->shift);
    q->left = q->shift > 0 ? (q->shift > 31 ? 31 : q->shift) : 0;
    q->right = q->shift > 0 ? 0 : (-q->shift > 31 ? 31 : -q->shift);
}

/* A qmul's vector constants, made once per range instead of once per vector. */
typedef struct vqmul {
    __m256i mult, mask, half_mask;
    __m128i left, right;
} vqmul;

static void vqmul_init(const qmul *q, vqmul *v) {
    int32_t mask = (int32_t)((1LL << q->right) - 1);
    v->mult = _mm256_set1_epi32(q->mult);
    v->mask = _mm256_set1_epi32(mask);
    v->half_mask = _mm256_set1_epi32(mask >> 1);
    v->left = _mm_cvtsi32_si128(q->left);
    v->right = _mm_cvtsi32_si128(q->right);
}

KS_INLINE __m256i requant(__m256i v, const vqmul *q) {
    const __m256i nudge = _mm256_set1_epi64x(1LL << 30);
    v = _mm256_sll_epi32(v, q->left);
    __m256i even = _mm256_add_epi64(_mm256_mul_epi32(v, q->mult), nudge);
    __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(v, 32), q->mult), nudge);
    __m256i high = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
    __m256i rem = _mm256_and_si256(high, q->mask);
    __m256i thr = _mm256_sub_epi32(q->half_mask, _mm256_srai_epi32(high, 31));
    __m256i res = _mm256_sra_epi32(high, q->right);
    return _mm256_sub_epi32(res, _mm256_cmpgt_epi32(rem, thr));
}

static int32_t load_one(const uint8_t *p, int32_t flip) {
    return (int32_t)(uint8_t)(*p ^ (uint8_t)flip);
}

/* The input's byte for output element i. */
static const uint8_t *at(const operand *o, size_t i) {
    switch (o->mode) {
    case M_PERIODIC:
        return o->p + i % o->tile;
    case M_ROW:
        return o->p + i / o->period;
    default:
        return o->p + i;
    }
}

/* 8 input bytes for output elements i..i+7. */
static __m128i load8(const operand *o, size_t i) {
    if (o->mode != M_ROW) return _mm_loadl_epi64((const __m128i *)(const void *)at(o, i));
    size_t r = i / o->period, left = o->period - i % o->period; /* of the first row */
    uint8_t v[8];
    for (int k = 0; k < 8; k++) {
        if ((size_t)k == left) {
            r++;
            left += o->period;
        }
        v[k] = o->p[r];
    }
    return _mm_loadl_epi64((const __m128i *)(const void *)v);
}

static void vadd_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const vadd_job *j = (const vadd_job *)arg;
    (void)thread;
    const __m128i flip = _mm_set1_epi8((char)j->flip);
    const __m256i za = _mm256_set1_epi32(j->za), zb = _mm256_set1_epi32(j->zb);
    const __m256i zo = _mm256_set1_epi32(j->zo);
    const __m256i lo = _mm256_set1_epi32(j->lo), hi = _mm256_set1_epi32(j->hi);
    const __m256i byte = _mm256_set1_epi32(0xFF);
    vqmul ma, mb, mo;
    vqmul_init(&j->ma, &ma);
    vqmul_init(&j->mb, &mb);
    vqmul_init(&j->mo, &mo);
    const int mul = j->mul, sub = j->sub;
    const int narrow = !mul && j->ma.left == 0 && j->mb.left == 0; /* q8_rescale.h applies */
    const ks__q8_rescale ra = ks__q8_rescale_make(j->ma.mult, j->ma.right);
    const ks__q8_rescale rb = ks__q8_rescale_make(j->mb.mult, j->mb.right);
    size_t i = begin;
    for (; i + 8 <= end; i += 8) {
        __m128i ba = _mm_xor_si128(load8(&j->a, i), flip);
        __m128i bb = _mm_xor_si128(load8(&j->b, i), flip);
        __m256i va = _mm256_sub_epi32(_mm256_cvtepu8_epi32(ba), za);
        __m256i vb = _mm256_sub_epi32(_mm256_cvtepu8_epi32(bb), zb);
        __m256i raw;
        if (mul) {
            raw = _mm256_mullo_epi32(va, vb);
        } else if (narrow) {
            va = ks__q8_rescale_apply(va, &ra);
            vb = ks__q8_rescale_apply(vb, &rb);
            raw = sub ? _mm256_sub_epi32(va, vb) : _mm256_add_epi32(va, vb);
        } else {
            va = requant(_mm256_slli_epi32(va, LEFT_SHIFT), &ma);
            vb = requant(_mm256_slli_epi32(vb, LEFT_SHIFT), &mb);
            raw = sub ? _mm256_sub_epi32(va, vb) : _mm256_add_epi32(va, vb);
        }
        __m256i q = _mm256_add_epi32(requant(raw, &mo), zo);
        q = _mm256_and_si256(_mm256_min_epi32(_mm256_max_epi32(q, lo), hi), byte);
        __m128i w16 = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        _mm_storel_epi64((__m128i *)(j->y + i), _mm_packus_epi16(w16, w16));
    }
    for (; i < end && j->mul; i++) {
        int32_t va = load_one(at(&j->a, i), j->flip) - j->za;
        int32_t vb = load_one(at(&j->b, i), j->flip) - j->zb;
        int32_t q = ks__quant_mul(va * vb, j->mo.mult, j->mo.shift) + j->zo;
        q = q < j->lo ? j->lo : (q > j->hi ? j->hi : q);
        j->y[i] = (uint8_t)q;
    }
    for (; i < end; i++) {
        int32_t va = (int32_t)((uint32_t)(load_one(at(&j->a, i), j->flip) - j->za) << LEFT_SHIFT);
        int32_t vb = (int32_t)((uint32_t)(load_one(at(&j->b, i), j->flip) - j->zb) << LEFT_SHIFT);
        int32_t sva = ks__quant_mul(va, j->ma.mult, j->ma.shift);
        int32_t svb = ks__quant_mul(vb, j->mb.mult, j->mb.shift);
        int32_t q = ks__quant_mul(j->sub ? sva - svb : sva + svb, j->mo.mult, j->mo.shift) + j->zo;
        q = q < j->lo ? j->lo : (q > j->hi ? j->hi : q);
        j->y[i] = (uint8_t)q;
    }
}

static int per_tensor_q8(const ks__rt_tensor *t, ks_dtype dtype) {
    return t && t->dtype == dtype && t->quant && t->quant->count == 1 && t->quant->scales &&
           t->quant->zero_points && t->quant->scales[0] > 0.0f;
}

static size_t gcd(size_t a, size_t b) {
    while (b) {
        size_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* How input x is read for output y (M_*), or -1 for a broadcast this kernel does not take. */
static int operand_mode(const ks__rt_tensor *x, const ks__rt_tensor *y, operand *o) {
    memset(o, 0, sizeof(*o));
    o->p = (const uint8_t *)x->data;
    if (x->rank > y->rank || y->rank < 1) return -1;
    int32_t lead = y->rank - x->rank; /* x's dims align with y's last ones */
    bool whole = lead == 0, suffix = true, row = y->dims[y->rank - 1] > 1;
    bool matched = false; /* a dim of x equal to y's and not 1 seen: no broadcast dim after it */
    for (int32_t d = 0; d < y->rank; d++) {
        int64_t xd = d < lead ? 1 : x->dims[d - lead], yd = y->dims[d];
        if (xd != yd) whole = false;
        if (d < y->rank - 1 && xd != yd) row = false;
        if (d == y->rank - 1 && xd != 1) row = false;
        if (xd == yd && yd != 1) matched = true;
        if (xd != yd) {
            if (xd != 1 || matched) suffix = false; /* a 1 after a matched dim */
        }
    }
    size_t numel = (size_t)ks__rt_numel(x);
    if (whole || (suffix && numel == (size_t)ks__rt_numel(y))) { /* fewer dims, same elements */
        o->mode = M_WHOLE;
        return M_WHOLE;
    }
    if (suffix && numel >= 1) {
        size_t tile = numel / gcd(numel, 8) * 8; /* lcm(P, 8) */
        if (tile > TILE_MAX) return -1;
        o->mode = M_PERIODIC;
        o->period = numel;
        o->tile = tile;
        return M_PERIODIC;
    }
    if (row) {
        o->mode = M_ROW;
        o->period = (size_t)y->dims[y->rank - 1];
        return M_ROW;
    }
    return -1;
}

/* Same dtype (U8 or I8) and per-tensor quantization everywhere, inputs of the output's shape or
 * broadcast in a way operand_mode takes, zero points inside the dtype. */
static int describe(const ks__kernel_ctx *ctx, vadd_job *j) {
    memset(j, 0, sizeof(*j));
    if (ctx->num_inputs != 2 || ctx->num_outputs != 1) return -1;
    const ks__rt_tensor *a = ctx->in[0], *b = ctx->in[1], *y = ctx->out[0];
    if (!a || !b || !y || (a->dtype != KS_DTYPE_U8 && a->dtype != KS_DTYPE_I8)) return -1;
    if (!per_tensor_q8(a, a->dtype) || !per_tensor_q8(b, a->dtype) || !per_tensor_q8(y, a->dtype))
        return -1;
    if (operand_mode(a, y, &j->a) < 0 || operand_mode(b, y, &j->b) < 0) return -1;
    int32_t off = a->dtype == KS_DTYPE_I8 ? 128 : 0;
    j->flip = off ? 0x80 : 0;
    j->za = a->quant->zero_points[0] + off;
    j->zb = b->quant->zero_points[0] + off;
    j->zo = y->quant->zero_points[0];
    if (j->za < 0 || j->za > 255 || j->zb < 0 || j->zb > 255 || j->zo + off < 0 ||
        j->zo + off > 255)
        return -1;
    j->sub = ctx->node->op == KS_OP_SUB;
    j->mul = ctx->node->op == KS_OP_MUL;
    const float sa = a->quant->scales[0], sb = b->quant->scales[0], so = y->quant->scales[0];
    if (j->mul) {
        make_qmul((double)sa * (double)sb / (double)so, &j->mo);
    } else {
        const double twice_max = 2.0 * (double)(sa > sb ? sa : sb);
        make_qmul((double)sa / twice_max, &j->ma);
        make_qmul((double)sb / twice_max, &j->mb);
        make_qmul(twice_max / ((double)(1 << LEFT_SHIFT) * (double)so), &j->mo);
    }
    ks__quant_act_range(ctx->node->ip[0], so, j->zo, y->dtype, &j->lo, &j->hi);
    j->y = (uint8_t *)y->data;
    return 0;
}

/* Scratch bytes of a periodic input's tile: the tile and 8 more bytes of the same period, so
 * that 8 bytes read at any offset below the tile stay inside (a thread's range may start at any
 * element). */
static size_t tile_bytes(const operand *o) {
    return o->mode == M_PERIODIC ? (o->tile + 8 + 63) / 64 * 64 : 0;
}

/* A periodic input's tile at dst: the input repeated over tile + 8 bytes. */
static void make_tile(operand *o, uint8_t *dst) {
    for (size_t k = 0; k < o->tile + 8; k++)
        dst[k] = o->p[k % o->period];
    o->p = dst;
}

static double cost(const ks__kernel_ctx *ctx) {
    vadd_job j;
    if (describe(ctx, &j)) return -1.0;
    return (double)ks__rt_numel(ctx->out[0]) / 8.0;
}

static ks_status plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    vadd_job j;
    *packed_bytes_out = 0;
    if (describe(ctx, &j) == 0) ctx->scratch_bytes = tile_bytes(&j.a) + tile_bytes(&j.b);
    return KS_STATUS_OK;
}

static ks_status run(ks__kernel_ctx *ctx) {
    vadd_job j;
    if (describe(ctx, &j))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 add cannot run this node");
    uint8_t *tiles = (uint8_t *)ctx->scratch;
    size_t need = tile_bytes(&j.a) + tile_bytes(&j.b);
    if (need > ctx->scratch_bytes || (need && !tiles))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 add: scratch of %zu bytes, %zu needed",
                                ctx->scratch_bytes, need);
    if (j.a.mode == M_PERIODIC) {
        make_tile(&j.a, tiles);
        tiles += tile_bytes(&j.a);
    }
    if (j.b.mode == M_PERIODIC) make_tile(&j.b, tiles);
    ks__parallel_for(ctx->pool, (size_t)ks__rt_numel(ctx->out[0]), 8192, vadd_range, &j);
    return KS_STATUS_OK;
}

const ks__impl ks_q8_vadd__avx2 = {
    "ks_q8_vadd__avx2", KS_OP_ADD, KS_ISA_AVX2, cost, plan, NULL, run};
const ks__impl ks_q8_vsub__avx2 = {
    "ks_q8_vsub__avx2", KS_OP_SUB, KS_ISA_AVX2, cost, plan, NULL, run};
const ks__impl ks_q8_vmul__avx2 = {
    "ks_q8_vmul__avx2", KS_OP_MUL, KS_ISA_AVX2, cost, plan, NULL, run};
