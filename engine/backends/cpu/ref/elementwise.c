/* Reference kernels for the elementwise and normalization family: binary arithmetic with numpy
 * broadcasting, comparisons, WHERE, unary activations, PRELU, SOFTMAX/LOG_SOFTMAX, REDUCE,
 * ARG_MAX/ARG_MIN, QUANTIZE/DEQUANTIZE and CAST.
 *
 * These are the oracle for every fast kernel, so they favour obviously-correct over fast: one
 * element at a time through a broadcasting odometer.
 *
 * Numerics:
 * - Float elementwise math is done in float, as TFLite does, so float models match it closely.
 *   Reductions accumulate in double: the oracle must be at least as accurate as any fast kernel.
 * - Quantized (U8/I8/I16 with per-tensor params) forms follow TFLite's integer kernels:
 *   ADD/SUB rescale both inputs to a common Q31 scale after a left shift of 20 (15 for I16);
 *   MUL uses one multiplier s_a * s_b / s_out; RELU/RELU6/RELU_N1_TO_1, LEAKY_RELU, PRELU and
 *   ABS requantize with TFLite's multipliers; MEAN and SUM run TFLite's integer
 *   QuantizedMeanOrSum (1/count folded into the output multiplier).
 * - HARD_SWISH on U8/I8 runs TFLite's 16-bit fixed-point kernel.
 * - Other quantized unary ops (SIGMOID, TANH, ELU, ...) use the semantics of
 *   TFLite's 8-bit lookup tables: dequantize, compute in float, round(y / s_out) + zp, clamp.
 *   For SIGMOID this is exactly what TFLite's logistic runs for U8/I8.
 * - Quantized SOFTMAX follows TFLite's default 8-bit path: a float exp of the raw difference to
 *   the row maximum, normalized, then round(p / s_out) + zp.
 * - Anything else quantized (DIV, POW, MAXIMUM with differing params, ...) dequantizes, computes
 *   in float and requantizes; TFLite either has no integer form for it or rejects it.
 *
 * Which form runs, and every check of dtypes and quantization params, is decided by the core's
 * shape inference (engine/src/shape_elementwise.c) before any of these run.
 */
#include "../cpu_kernel.h"
#include "../op_enabled.h"
#include "quant_util.h"
#include "src/shape_elementwise.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* dtype and tensor helpers                                                                     */
/* ------------------------------------------------------------------------------------------ */

static float load_f(const ks__rt_tensor *t, int64_t i) {
    if (t->dtype == KS_DTYPE_F32) return ((const float *)t->data)[i];
    return ks__f16_to_f32(((const uint16_t *)t->data)[i]);
}

static void store_f(ks__rt_tensor *t, int64_t i, float v) {
    if (t->dtype == KS_DTYPE_F32)
        ((float *)t->data)[i] = v;
    else
        ((uint16_t *)t->data)[i] = ks__f32_to_f16(v);
}

/* Stores with two's-complement wrap-around, as a C++ static_cast to the narrower type does. */
static void store_i(ks__rt_tensor *t, int64_t i, int64_t v) {
    uint64_t u = (uint64_t)v;
    switch (t->dtype) {
    case KS_DTYPE_I32:
        ((int32_t *)t->data)[i] = (int32_t)(uint32_t)u;
        break;
    case KS_DTYPE_I64:
        ((int64_t *)t->data)[i] = v;
        break;
    case KS_DTYPE_U8:
        ((uint8_t *)t->data)[i] = (uint8_t)u;
        break;
    case KS_DTYPE_I8:
        ((int8_t *)t->data)[i] = (int8_t)(uint8_t)u;
        break;
    case KS_DTYPE_I16:
        ((int16_t *)t->data)[i] = (int16_t)(uint16_t)u;
        break;
    case KS_DTYPE_BOOL:
        ((uint8_t *)t->data)[i] = v != 0;
        break;
    default:
        break;
    }
}

static int64_t load_i(const ks__rt_tensor *t, int64_t i) {
    return ks__rt_get_int(t, i);
}

/* int32 product with wrap-around, like TFLite's int32 arithmetic, minus C's signed-overflow UB.
 * Only 16-bit codes with extreme zero points can get there. */
static int32_t wrap_mul32(int32_t a, int32_t b) {
    return (int32_t)(uint32_t)((uint64_t)(int64_t)a * (uint64_t)(int64_t)b);
}

static int64_t clamp_i64(int64_t v, int64_t lo, int64_t hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

/* Real value of a quantized element (float math, as TFLite's lookup-table builders do). */
static float deq_f(int64_t q, float scale, int32_t zp) {
    return scale * (float)(q - zp);
}

/* TFLite lookup-table requantization: round(y * (1 / scale)) + zp, clamped to the dtype. */
static int64_t requant_lut(float y, float out_scale, int32_t out_zp, ks_dtype dtype) {
    float r = roundf(y * (1.0f / out_scale));
    int64_t q;
    if (isnan(r))
        q = 0;
    else if (r > 2147483520.0f)
        q = INT32_MAX;
    else if (r < -2147483520.0f)
        q = INT32_MIN;
    else
        q = (int64_t)r;
    return clamp_i64(q + out_zp, ks__dtype_min(dtype), ks__dtype_max(dtype));
}

/* ------------------------------------------------------------------------------------------ */
/* numpy broadcasting                                                                           */
/* ------------------------------------------------------------------------------------------ */

#define BCAST_MAX_INPUTS 3

typedef struct bcast_iter {
    int32_t rank;
    uint32_t num_inputs;
    int64_t dims[KS_MAX_RANK];
    int64_t stride[BCAST_MAX_INPUTS][KS_MAX_RANK]; /* elements; 0 along broadcast dims */
    int64_t idx[KS_MAX_RANK];
    int64_t off[BCAST_MAX_INPUTS];
} bcast_iter;

static void bcast_init(bcast_iter *it, ks__rt_tensor *const *in, uint32_t n,
                       const ks__rt_tensor *y) {
    memset(it, 0, sizeof(*it));
    it->rank = y->rank;
    it->num_inputs = n;
    for (int32_t d = 0; d < y->rank; d++)
        it->dims[d] = y->dims[d];
    for (uint32_t k = 0; k < n; k++) {
        int64_t s = 1;
        for (int32_t d = y->rank - 1; d >= 0; d--) {
            int32_t j = d - (y->rank - in[k]->rank);
            if (j < 0) continue;
            int64_t dim = in[k]->dims[j];
            it->stride[k][d] = dim == 1 ? 0 : s;
            s *= dim;
        }
    }
}

static void bcast_next(bcast_iter *it) {
    for (int32_t d = it->rank - 1; d >= 0; d--) {
        it->idx[d]++;
        for (uint32_t k = 0; k < it->num_inputs; k++)
            it->off[k] += it->stride[k][d];
        if (it->idx[d] < it->dims[d]) return;
        for (uint32_t k = 0; k < it->num_inputs; k++)
            it->off[k] -= it->stride[k][d] * it->dims[d];
        it->idx[d] = 0;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* binary arithmetic: ADD SUB MUL DIV FLOOR_DIV FLOOR_MOD POW MAXIMUM MINIMUM                   */
/* ------------------------------------------------------------------------------------------ */

static float binary_f(uint32_t op, float a, float b) {
    switch (op) {
    case KS_OP_ADD:
        return a + b;
    case KS_OP_SUB:
        return a - b;
    case KS_OP_MUL:
        return a * b;
    case KS_OP_DIV:
        return a / b;
    case KS_OP_FLOOR_DIV:
        return floorf(a / b);
    case KS_OP_FLOOR_MOD: {
        float r = fmodf(a, b);
        return r != 0.0f && ((r < 0.0f) != (b < 0.0f)) ? r + b : r;
    }
    case KS_OP_POW:
        return powf(a, b);
    case KS_OP_MAXIMUM:
        return a > b || isnan(a) ? a : b;
    case KS_OP_MINIMUM:
        return a < b || isnan(a) ? a : b;
    default:
        return 0.0f;
    }
}

/* Integer arithmetic wraps (computed on uint64) like the int32/int64 kernels of TFLite/ONNX on
 * two's-complement machines, without C's signed-overflow UB. Returns false on a zero divisor or
 * a negative integer exponent. */
static bool binary_i(uint32_t op, int64_t a, int64_t b, int64_t *r) {
    switch (op) {
    case KS_OP_ADD:
        *r = (int64_t)((uint64_t)a + (uint64_t)b);
        return true;
    case KS_OP_SUB:
        *r = (int64_t)((uint64_t)a - (uint64_t)b);
        return true;
    case KS_OP_MUL:
        *r = (int64_t)((uint64_t)a * (uint64_t)b);
        return true;
    case KS_OP_DIV:
    case KS_OP_FLOOR_DIV:
    case KS_OP_FLOOR_MOD: {
        if (b == 0) return false;
        if (a == INT64_MIN && b == -1) {
            *r = op == KS_OP_FLOOR_MOD ? 0 : INT64_MIN;
            return true;
        }
        int64_t q = a / b, m = a % b;
        if (op == KS_OP_DIV) {
            *r = q;
        } else if (op == KS_OP_FLOOR_DIV) {
            *r = (m != 0 && ((m < 0) != (b < 0))) ? q - 1 : q;
        } else {
            *r = (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
        }
        return true;
    }
    case KS_OP_POW: {
        if (b < 0) return false;
        uint64_t base = (uint64_t)a, acc = 1;
        uint64_t e = (uint64_t)b;
        while (e) {
            if (e & 1u) acc *= base;
            base *= base;
            e >>= 1;
        }
        *r = (int64_t)acc;
        return true;
    }
    case KS_OP_MAXIMUM:
        *r = a > b ? a : b;
        return true;
    case KS_OP_MINIMUM:
        *r = a < b ? a : b;
        return true;
    default:
        *r = 0;
        return true;
    }
}

static int64_t act_i(int32_t act, int64_t v) {
    switch (act) {
    case KS_ACT_RELU:
        return v < 0 ? 0 : v;
    case KS_ACT_RELU6:
        return clamp_i64(v, 0, 6);
    case KS_ACT_RELU_N1_TO_1:
        return clamp_i64(v, -1, 1);
    default:
        return v;
    }
}

/* TFLite quantized ADD/SUB: both inputs are brought to a common scale 2 * max(s_a, s_b) with
 * 20 bits (15 for int16) of headroom, summed, then scaled to the output. */
static void binary_add_sub_q(ks__kernel_ctx *ctx, bcast_iter *it, int64_t n, bool sub) {
    const ks__rt_tensor *a = ctx->in[0], *b = ctx->in[1];
    ks__rt_tensor *y = ctx->out[0];
    const int32_t left_shift = y->dtype == KS_DTYPE_I16 ? 15 : 20;
    const float sa = ks__rt_qscale(a), sb = ks__rt_qscale(b), so = ks__rt_qscale(y);
    const double twice_max = 2.0 * (double)(sa > sb ? sa : sb);
    int32_t ma, sha, mb, shb, mo, sho;
    ks__quant_multiplier((double)sa / twice_max, &ma, &sha);
    ks__quant_multiplier((double)sb / twice_max, &mb, &shb);
    ks__quant_multiplier(twice_max / ((double)(1 << left_shift) * (double)so), &mo, &sho);
    const int32_t za = ks__rt_qzp(a), zb = ks__rt_qzp(b), zo = ks__rt_qzp(y);
    int32_t lo, hi;
    ks__quant_act_range(ctx->node->ip[0], so, zo, y->dtype, &lo, &hi);
    for (int64_t i = 0; i < n; i++, bcast_next(it)) {
        int32_t va = (int32_t)load_i(a, it->off[0]) - za;
        int32_t vb = (int32_t)load_i(b, it->off[1]) - zb;
        int32_t sva = ks__quant_mul(wrap_mul32(va, 1 << left_shift), ma, sha);
        int32_t svb = ks__quant_mul(wrap_mul32(vb, 1 << left_shift), mb, shb);
        int32_t raw = sub ? sva - svb : sva + svb;
        int32_t q = ks__quant_mul(raw, mo, sho) + zo;
        store_i(y, i, q < lo ? lo : (q > hi ? hi : q));
    }
}

static void binary_mul_q(ks__kernel_ctx *ctx, bcast_iter *it, int64_t n) {
    const ks__rt_tensor *a = ctx->in[0], *b = ctx->in[1];
    ks__rt_tensor *y = ctx->out[0];
    const float so = ks__rt_qscale(y);
    int32_t mo, sho;
    ks__quant_multiplier((double)ks__rt_qscale(a) * (double)ks__rt_qscale(b) / (double)so, &mo,
                         &sho);
    const int32_t za = ks__rt_qzp(a), zb = ks__rt_qzp(b), zo = ks__rt_qzp(y);
    int32_t lo, hi;
    ks__quant_act_range(ctx->node->ip[0], so, zo, y->dtype, &lo, &hi);
    for (int64_t i = 0; i < n; i++, bcast_next(it)) {
        int32_t va = (int32_t)load_i(a, it->off[0]) - za;
        int32_t vb = (int32_t)load_i(b, it->off[1]) - zb;
        int32_t q = ks__quant_mul(wrap_mul32(va, vb), mo, sho) + zo;
        store_i(y, i, q < lo ? lo : (q > hi ? hi : q));
    }
}

static bool same_qparams(const ks__rt_tensor *a, const ks__rt_tensor *b) {
    return ks__rt_qscale(a) == ks__rt_qscale(b) && ks__rt_qzp(a) == ks__rt_qzp(b);
}

static ks_status binary_run(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *a = ctx->in[0], *b = ctx->in[1];
    ks__rt_tensor *y = ctx->out[0];
    const uint32_t op = ctx->node->op;
    const int32_t act = ctx->node->ip[0];
    const float alpha = ctx->node->fp[0];
    const int64_t n = ks__rt_numel(y);
    bcast_iter it;
    bcast_init(&it, ctx->in, 2, y);

    if (ks__rt_is_quantized(a)) {
        if (op == KS_OP_ADD || op == KS_OP_SUB) {
            binary_add_sub_q(ctx, &it, n, op == KS_OP_SUB);
            return KS_STATUS_OK;
        }
        if (op == KS_OP_MUL) {
            binary_mul_q(ctx, &it, n);
            return KS_STATUS_OK;
        }
        const float so = ks__rt_qscale(y);
        const int32_t zo = ks__rt_qzp(y);
        int32_t lo, hi;
        ks__quant_act_range(act, so, zo, y->dtype, &lo, &hi);
        /* TFLite's MAXIMUM/MINIMUM compare raw values when all params agree. */
        if ((op == KS_OP_MAXIMUM || op == KS_OP_MINIMUM) && same_qparams(a, b) &&
            same_qparams(a, y)) {
            for (int64_t i = 0; i < n; i++, bcast_next(&it)) {
                int64_t r;
                binary_i(op, load_i(a, it.off[0]), load_i(b, it.off[1]), &r);
                store_i(y, i, clamp_i64(r, lo, hi));
            }
            return KS_STATUS_OK;
        }
        const float sa = ks__rt_qscale(a), sb = ks__rt_qscale(b);
        const int32_t za = ks__rt_qzp(a), zb = ks__rt_qzp(b);
        for (int64_t i = 0; i < n; i++, bcast_next(&it)) {
            float ra = deq_f(load_i(a, it.off[0]), sa, za);
            float rb = deq_f(load_i(b, it.off[1]), sb, zb);
            float r = ks__act_apply(binary_f(op, ra, rb), act, alpha);
            store_i(y, i, clamp_i64(requant_lut(r, so, zo, y->dtype), lo, hi));
        }
        return KS_STATUS_OK;
    }
    if (ks__dtype_is_float(a->dtype)) {
        for (int64_t i = 0; i < n; i++, bcast_next(&it)) {
            float r = binary_f(op, load_f(a, it.off[0]), load_f(b, it.off[1]));
            store_f(y, i, ks__act_apply(r, act, alpha));
        }
        return KS_STATUS_OK;
    }
    for (int64_t i = 0; i < n; i++, bcast_next(&it)) {
        int64_t va = load_i(a, it.off[0]), vb = load_i(b, it.off[1]), r;
        if (!binary_i(op, va, vb, &r)) {
            if (op == KS_OP_POW)
                return ks__kernel_error(ctx, KS_STATUS_INVALID_ARGUMENT,
                                        "integer power with negative exponent %lld at output "
                                        "element %lld",
                                        (long long)vb, (long long)i);
            return ks__kernel_error(ctx, KS_STATUS_INVALID_ARGUMENT,
                                    "integer division by zero at output element %lld",
                                    (long long)i);
        }
        store_i(y, i, act_i(act, r));
    }
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* comparisons and WHERE                                                                        */
/* ------------------------------------------------------------------------------------------ */

static bool compare_d(uint32_t op, double a, double b) {
    switch (op) {
    case KS_OP_EQUAL:
        return a == b;
    case KS_OP_NOT_EQUAL:
        return a != b;
    case KS_OP_GREATER:
        return a > b;
    case KS_OP_GREATER_EQUAL:
        return a >= b;
    case KS_OP_LESS:
        return a < b;
    case KS_OP_LESS_EQUAL:
        return a <= b;
    default:
        return false;
    }
}

static bool compare_i(uint32_t op, int64_t a, int64_t b) {
    switch (op) {
    case KS_OP_EQUAL:
        return a == b;
    case KS_OP_NOT_EQUAL:
        return a != b;
    case KS_OP_GREATER:
        return a > b;
    case KS_OP_GREATER_EQUAL:
        return a >= b;
    case KS_OP_LESS:
        return a < b;
    case KS_OP_LESS_EQUAL:
        return a <= b;
    default:
        return false;
    }
}

static ks_status compare_run(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *a = ctx->in[0], *b = ctx->in[1];
    ks__rt_tensor *y = ctx->out[0];
    const uint32_t op = ctx->node->op;
    const int64_t n = ks__rt_numel(y);
    uint8_t *out = (uint8_t *)y->data;
    bcast_iter it;
    bcast_init(&it, ctx->in, 2, y);
    if (ks__rt_is_quantized(a) && !same_qparams(a, b)) {
        /* Compare real values; exact in double for 8/16-bit codes and float scales. */
        const double sa = ks__rt_qscale(a), sb = ks__rt_qscale(b);
        const int32_t za = ks__rt_qzp(a), zb = ks__rt_qzp(b);
        for (int64_t i = 0; i < n; i++, bcast_next(&it))
            out[i] = compare_d(op, sa * (double)(load_i(a, it.off[0]) - za),
                               sb * (double)(load_i(b, it.off[1]) - zb));
    } else if (ks__dtype_is_float(a->dtype)) {
        for (int64_t i = 0; i < n; i++, bcast_next(&it))
            out[i] = compare_d(op, load_f(a, it.off[0]), load_f(b, it.off[1]));
    } else {
        for (int64_t i = 0; i < n; i++, bcast_next(&it))
            out[i] = compare_i(op, load_i(a, it.off[0]), load_i(b, it.off[1]));
    }
    return KS_STATUS_OK;
}

static ks_status where_run(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *c = ctx->in[0], *a = ctx->in[1], *b = ctx->in[2];
    ks__rt_tensor *y = ctx->out[0];
    const size_t es = ks_dtype_size(y->dtype);
    const int64_t n = ks__rt_numel(y);
    const uint8_t *cond = (const uint8_t *)c->data;
    bcast_iter it;
    bcast_init(&it, ctx->in, 3, y);
    for (int64_t i = 0; i < n; i++, bcast_next(&it)) {
        const uint8_t *src = cond[it.off[0]] ? (const uint8_t *)a->data + (size_t)it.off[1] * es
                                             : (const uint8_t *)b->data + (size_t)it.off[2] * es;
        memcpy((uint8_t *)y->data + (size_t)i * es, src, es);
    }
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* PRELU                                                                                        */
/* ------------------------------------------------------------------------------------------ */

static ks_status prelu_run(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *x = ctx->in[0], *al = ctx->in[1];
    ks__rt_tensor *y = ctx->out[0];
    const int64_t n = ks__rt_numel(y);
    bcast_iter it;
    bcast_init(&it, ctx->in, 2, y);
    if (!ks__rt_is_quantized(x)) {
        for (int64_t i = 0; i < n; i++, bcast_next(&it)) {
            float v = load_f(x, it.off[0]);
            store_f(y, i, v >= 0.0f ? v : v * load_f(al, it.off[1]));
        }
        return KS_STATUS_OK;
    }
    /* TFLite: positive side rescales by s_x / s_y, negative side multiplies the zero-point
     * corrected codes and rescales by s_x * s_alpha / s_y. */
    const float sx = ks__rt_qscale(x), sa = ks__rt_qscale(al), so = ks__rt_qscale(y);
    int32_t m1, sh1, m2, sh2;
    ks__quant_multiplier((double)sx / (double)so, &m1, &sh1);
    ks__quant_multiplier((double)sx * (double)sa / (double)so, &m2, &sh2);
    const int32_t zx = ks__rt_qzp(x), za = ks__rt_qzp(al), zo = ks__rt_qzp(y);
    for (int64_t i = 0; i < n; i++, bcast_next(&it)) {
        int32_t v = (int32_t)load_i(x, it.off[0]) - zx, q;
        if (v >= 0) {
            q = ks__quant_mul(v, m1, sh1);
        } else {
            int32_t av = (int32_t)load_i(al, it.off[1]) - za;
            q = ks__quant_mul(wrap_mul32(v, av), m2, sh2);
        }
        store_i(y, i, clamp_i64((int64_t)q + zo, ks__dtype_min(y->dtype), ks__dtype_max(y->dtype)));
    }
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* unary ops                                                                                    */
/* ------------------------------------------------------------------------------------------ */

static float unary_f(uint32_t op, float x, const float *fp) {
    switch (op) {
    case KS_OP_RELU:
        return x > 0.0f ? x : 0.0f;
    case KS_OP_RELU6:
        return x < 0.0f ? 0.0f : (x > 6.0f ? 6.0f : x);
    case KS_OP_RELU_N1_TO_1:
        return x < -1.0f ? -1.0f : (x > 1.0f ? 1.0f : x);
    case KS_OP_LEAKY_RELU:
        return x >= 0.0f ? x : fp[0] * x;
    case KS_OP_SIGMOID:
        return 1.0f / (1.0f + expf(-x));
    case KS_OP_TANH:
        return tanhf(x);
    case KS_OP_HARD_SWISH: {
        float r = x + 3.0f;
        r = r < 0.0f ? 0.0f : (r > 6.0f ? 6.0f : r);
        return x * r / 6.0f;
    }
    case KS_OP_EXP:
        return expf(x);
    case KS_OP_SQRT:
        return sqrtf(x);
    case KS_OP_RSQRT:
        return 1.0f / sqrtf(x);
    case KS_OP_ABS:
        return fabsf(x);
    case KS_OP_NEG:
        return -x;
    case KS_OP_FLOOR:
        return floorf(x);
    case KS_OP_CEIL:
        return ceilf(x);
    case KS_OP_LOG:
        return logf(x);
    case KS_OP_CLIP: {
        float r = x < fp[0] ? fp[0] : x;
        return r > fp[1] ? fp[1] : r;
    }
    case KS_OP_ELU:
        return x >= 0.0f ? x : fp[0] * expm1f(x);
    case KS_OP_HARD_SIGMOID: {
        float r = fp[0] * x + fp[1];
        return r < 0.0f ? 0.0f : (r > 1.0f ? 1.0f : r);
    }
    default:
        return x;
    }
}

static int64_t unary_i(uint32_t op, int64_t x, const float *fp) {
    switch (op) {
    case KS_OP_RELU:
        return x < 0 ? 0 : x;
    case KS_OP_RELU6:
        return clamp_i64(x, 0, 6);
    case KS_OP_RELU_N1_TO_1:
        return clamp_i64(x, -1, 1);
    case KS_OP_ABS:
        return x < 0 ? (int64_t)(0u - (uint64_t)x) : x;
    case KS_OP_NEG:
        return (int64_t)(0u - (uint64_t)x);
    case KS_OP_CLIP: {
        double lo = ceil((double)fp[0]), hi = floor((double)fp[1]);
        double v = (double)x;
        if (v < lo) return lo <= -9.2e18 ? INT64_MIN : (int64_t)lo;
        if (v > hi) return hi >= 9.2e18 ? INT64_MAX : (int64_t)hi;
        return x;
    }
    default:
        return x;
    }
}

/* ---- TFLite's 8-bit HARD_SWISH (16-bit fixed point, reference_ops::HardSwish) ---- */

static int16_t sat16(int64_t v) {
    return (int16_t)(v < INT16_MIN ? INT16_MIN : (v > INT16_MAX ? INT16_MAX : v));
}

/* gemmlowp SaturatingRoundingDoublingHighMul on int16. */
static int16_t srdhm16(int16_t a, int16_t b) {
    if (a == INT16_MIN && b == INT16_MIN) return INT16_MAX;
    int32_t ab = (int32_t)a * (int32_t)b;
    int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
    return (int16_t)((ab + nudge) / (1 << 15));
}

/* TFLite's non-rounding SaturatingDoublingHighMul: it cancels the bias of the rounding one. */
static int16_t sdhm16(int16_t a, int16_t b) {
    if (a == INT16_MIN && b == INT16_MIN) return INT16_MAX;
    return (int16_t)(((int32_t)a * (int32_t)b) / (1 << 15));
}

/* Q31 multiplier -> Q15, rounding, saturating (TFLite DownScaleInt32ToInt16Multiplier). */
static int16_t q31_to_q15(int32_t m) {
    if (m >= INT32_MAX - (1 << 15)) return INT16_MAX;
    return (int16_t)((m + (1 << 15)) >> 16);
}

typedef struct hswish_q {
    int16_t out_mult, reluish_mult;
    int32_t out_exp, reluish_exp;
} hswish_q;

/* Returns false when TFLite would refuse the params (output multiplier above 1). */
static bool hswish_prepare(float in_scale, float out_scale, hswish_q *h) {
    const float hires_scale = (1.0f / 128.0f) * in_scale;
    const float reluish_scale = 3.0f / 32768.0f;
    int32_t m;
    ks__quant_multiplier((double)(hires_scale / out_scale), &m, &h->out_exp);
    h->out_mult = q31_to_q15(m);
    ks__quant_multiplier((double)(hires_scale / reluish_scale), &m, &h->reluish_exp);
    h->reluish_mult = q31_to_q15(m);
    return h->out_exp <= 0;
}

static int32_t hswish_q_apply(const hswish_q *h, int32_t v, int32_t out_zp) {
    const int16_t hires = (int16_t)(v * 128);
    const int16_t pre_out = srdhm16(hires, h->out_mult);
    int16_t r = hires;
    if (h->reluish_exp > 0) r = sat16((int64_t)r * (1 << (h->reluish_exp - 1)));
    r = srdhm16(r, h->reluish_mult);
    if (h->reluish_exp > 0) r = sat16((int64_t)r * 2);
    if (h->reluish_exp < 0) r = (int16_t)ks__quant_rounding_shift(r, -h->reluish_exp);
    r = (int16_t)((r + (1 << 15)) >> 1);
    const int16_t pre_shift = sdhm16(r, pre_out);
    return ks__quant_rounding_shift(pre_shift, -h->out_exp) + out_zp;
}

static ks_status unary_run_q(ks__kernel_ctx *ctx, int64_t n) {
    const ks__rt_tensor *x = ctx->in[0];
    ks__rt_tensor *y = ctx->out[0];
    const uint32_t op = ctx->node->op;
    const float *fp = ctx->node->fp;
    const float sx = ks__rt_qscale(x), so = ks__rt_qscale(y);
    const int32_t zx = ks__rt_qzp(x), zo = ks__rt_qzp(y);
    const int64_t qmin = ks__dtype_min(y->dtype), qmax = ks__dtype_max(y->dtype);
    int32_t m, sh;
    ks__quant_multiplier((double)sx / (double)so, &m, &sh);

    if (op == KS_OP_RELU || op == KS_OP_RELU6 || op == KS_OP_RELU_N1_TO_1) {
        /* TFLite QuantizedReluX: requantize, then clamp to the activation's quantized range. */
        int32_t act = op == KS_OP_RELU    ? KS_ACT_RELU
                      : op == KS_OP_RELU6 ? KS_ACT_RELU6
                                          : KS_ACT_RELU_N1_TO_1;
        int32_t lo, hi;
        ks__quant_act_range(act, so, zo, y->dtype, &lo, &hi);
        for (int64_t i = 0; i < n; i++) {
            int32_t q = zo + ks__quant_mul((int32_t)load_i(x, i) - zx, m, sh);
            store_i(y, i, q < lo ? lo : (q > hi ? hi : q));
        }
        return KS_STATUS_OK;
    }
    if (op == KS_OP_LEAKY_RELU && fp[0] >= 0.0f) {
        int32_t ma, sha;
        ks__quant_multiplier((double)sx * (double)fp[0] / (double)so, &ma, &sha);
        for (int64_t i = 0; i < n; i++) {
            int32_t v = (int32_t)load_i(x, i) - zx;
            int32_t q = zo + (v >= 0 ? ks__quant_mul(v, m, sh) : ks__quant_mul(v, ma, sha));
            store_i(y, i, clamp_i64(q, qmin, qmax));
        }
        return KS_STATUS_OK;
    }
    if (op == KS_OP_ABS) {
        for (int64_t i = 0; i < n; i++) {
            int32_t v = (int32_t)load_i(x, i) - zx;
            int32_t q = zo + ks__quant_mul(v < 0 ? -v : v, m, sh);
            store_i(y, i, clamp_i64(q, qmin, qmax));
        }
        return KS_STATUS_OK;
    }
    hswish_q hs;
    if (op == KS_OP_HARD_SWISH && x->dtype != KS_DTYPE_I16 && hswish_prepare(sx, so, &hs)) {
        for (int64_t i = 0; i < n; i++)
            store_i(y, i,
                    clamp_i64(hswish_q_apply(&hs, (int32_t)load_i(x, i) - zx, zo), qmin, qmax));
        return KS_STATUS_OK;
    }
    for (int64_t i = 0; i < n; i++) {
        float r = unary_f(op, deq_f(load_i(x, i), sx, zx), fp);
        store_i(y, i, requant_lut(r, so, zo, y->dtype));
    }
    return KS_STATUS_OK;
}

static ks_status unary_run(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *x = ctx->in[0];
    ks__rt_tensor *y = ctx->out[0];
    const uint32_t op = ctx->node->op;
    const int64_t n = ks__rt_numel(y);
    if (ks__rt_is_quantized(x)) return unary_run_q(ctx, n);
    if (ks__dtype_is_float(x->dtype)) {
        for (int64_t i = 0; i < n; i++)
            store_f(y, i, unary_f(op, load_f(x, i), ctx->node->fp));
        return KS_STATUS_OK;
    }
    for (int64_t i = 0; i < n; i++)
        store_i(y, i, unary_i(op, load_i(x, i), ctx->node->fp));
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* SOFTMAX / LOG_SOFTMAX                                                                        */
/* ------------------------------------------------------------------------------------------ */

/* Splits dims around `axis` into outer * len * inner. */
static void split_axis(const ks__rt_tensor *t, int32_t axis, int64_t *outer, int64_t *len,
                       int64_t *inner) {
    int64_t o = 1, in = 1;
    for (int32_t d = 0; d < axis; d++)
        o *= t->dims[d];
    for (int32_t d = axis + 1; d < t->rank; d++)
        in *= t->dims[d];
    *outer = o;
    *len = t->dims[axis];
    *inner = in;
}

static ks_status softmax_run(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *x = ctx->in[0];
    ks__rt_tensor *y = ctx->out[0];
    const bool log_sm = ctx->node->op == KS_OP_LOG_SOFTMAX;
    const float beta = ctx->node->fp[0] != 0.0f ? ctx->node->fp[0] : 1.0f;
    const int32_t axis = ks__resolve_axis(ctx->node->ip[0], x->rank);
    int64_t outer, len, inner;
    split_axis(x, axis, &outer, &len, &inner);
    const bool q = ks__rt_is_quantized(x);
    const bool q8_softmax = q && !log_sm && x->dtype != KS_DTYPE_I16;
    const float sx = ks__rt_qscale(x), so = ks__rt_qscale(y);
    const int32_t zx = ks__rt_qzp(x), zo = ks__rt_qzp(y);

    for (int64_t o = 0; o < outer; o++) {
        for (int64_t in = 0; in < inner; in++) {
            const int64_t base = o * len * inner + in;
            if (q8_softmax) {
                /* TFLite's 8-bit softmax: exp(-s_x * beta * (max - x)) from a float table,
                 * normalized in float, output = round(p / s_out) + zp. */
                int64_t mx = INT64_MIN;
                for (int64_t k = 0; k < len; k++) {
                    int64_t v = load_i(x, base + k * inner);
                    if (v > mx) mx = v;
                }
                const float neg_scale = -sx * beta;
                float sum = 0.0f;
                for (int64_t k = 0; k < len; k++)
                    sum += expf(neg_scale * (float)(mx - load_i(x, base + k * inner)));
                const float inv = 1.0f / (sum * so);
                for (int64_t k = 0; k < len; k++) {
                    float e = expf(neg_scale * (float)(mx - load_i(x, base + k * inner)));
                    int64_t qv = (int64_t)roundf(e * inv) + zo;
                    store_i(y, base + k * inner,
                            clamp_i64(qv, ks__dtype_min(y->dtype), ks__dtype_max(y->dtype)));
                }
                continue;
            }
            float mx = -INFINITY;
            for (int64_t k = 0; k < len; k++) {
                int64_t i = base + k * inner;
                float v = q ? deq_f(load_i(x, i), sx, zx) : load_f(x, i);
                if (v > mx) mx = v;
            }
            double sum = 0.0;
            for (int64_t k = 0; k < len; k++) {
                int64_t i = base + k * inner;
                float v = q ? deq_f(load_i(x, i), sx, zx) : load_f(x, i);
                sum += (double)expf((v - mx) * beta);
            }
            const float log_sum = (float)log(sum);
            const float inv_sum = (float)(1.0 / sum);
            for (int64_t k = 0; k < len; k++) {
                int64_t i = base + k * inner;
                float v = q ? deq_f(load_i(x, i), sx, zx) : load_f(x, i);
                float r = log_sm ? (v - mx) * beta - log_sum : expf((v - mx) * beta) * inv_sum;
                if (q)
                    store_i(y, i, requant_lut(r, so, zo, y->dtype));
                else
                    store_f(y, i, r);
            }
        }
    }
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* REDUCE                                                                                       */
/* ------------------------------------------------------------------------------------------ */

/* Iterates the reduced sub-space of one output element: offsets of the reduced axes. */
typedef struct red_iter {
    int32_t n;
    int64_t dims[KS_MAX_RANK];
    int64_t stride[KS_MAX_RANK];
    int64_t idx[KS_MAX_RANK];
    int64_t off;
} red_iter;

static void red_next(red_iter *r) {
    for (int32_t d = r->n - 1; d >= 0; d--) {
        r->idx[d]++;
        r->off += r->stride[d];
        if (r->idx[d] < r->dims[d]) return;
        r->off -= r->stride[d] * r->dims[d];
        r->idx[d] = 0;
    }
}

typedef struct red_plan {
    red_iter kept;    /* odometer over kept axes, in output order */
    red_iter reduced; /* template for the reduced axes */
    int64_t count;    /* elements per reduction */
} red_plan;

static void reduce_plan(const ks__rt_tensor *x, uint32_t mask, red_plan *p) {
    memset(p, 0, sizeof(*p));
    int64_t strides[KS_MAX_RANK];
    int64_t s = 1;
    for (int32_t d = x->rank - 1; d >= 0; d--) {
        strides[d] = s;
        s *= x->dims[d];
    }
    p->count = 1;
    for (int32_t d = 0; d < x->rank; d++) {
        red_iter *r = (mask & (1u << d)) ? &p->reduced : &p->kept;
        r->dims[r->n] = x->dims[d];
        r->stride[r->n] = strides[d];
        r->n++;
        if (mask & (1u << d)) p->count *= x->dims[d];
    }
}

/* True when every zero-point corrected sum of `count` codes fits in int32, the accumulator
 * TFLite's integer MEAN/SUM uses (where TFLite would wrap, the float path is used instead).
 * Only reductions of millions of elements (tens of thousands for I16) fail this. */
static bool q_sum_fits_i32(const ks__rt_tensor *x, int64_t count) {
    const int64_t zx = ks__rt_qzp(x);
    const int64_t lo = ks__dtype_min(x->dtype) - zx, hi = ks__dtype_max(x->dtype) - zx;
    const int64_t max_dev = hi > -lo ? hi : -lo;
    return max_dev == 0 || count <= INT32_MAX / max_dev;
}

/* TFLite's quantized MEAN and SUM (reference_ops::QuantizedMeanOrSum, which LiteRT uses for
 * U8/I8/I16 whatever the axes and whether or not the in/out params differ): the zero-point
 * corrected integer sum is scaled by one fixed-point multiplier for s_x / s_y. For MEAN the
 * 1/count goes into that multiplier: it is shifted left by floor(log2(count)) bits (at most 32,
 * and no further than a total shift of -31), divided by count with truncation, and the shift
 * lowered to match. That multiplier carries fewer significant bits than s_x / (count * s_y)
 * quantized directly, so ~1% of outputs land one quantum away from the rounded real mean;
 * reproducing the folding literally is what makes the result bit-exact. */
static void reduce_q_mean_sum(const ks__rt_tensor *x, ks__rt_tensor *y, red_plan *p, bool mean) {
    const int32_t zx = ks__rt_qzp(x), zo = ks__rt_qzp(y);
    const int64_t n_out = ks__rt_numel(y);
    if (p->count == 0) {
        /* Empty reduction: TFLite leaves the raw code 0 (not the zero point). */
        for (int64_t o = 0; o < n_out; o++)
            store_i(y, o, 0);
        return;
    }
    int32_t m, sh;
    ks__quant_multiplier((double)ks__rt_qscale(x) / (double)ks__rt_qscale(y), &m, &sh);
    if (mean) {
        int32_t bits = 0;
        while (bits < 62 && (p->count >> (bits + 1)) != 0)
            bits++;
        if (bits > 32) bits = 32;
        if (bits > 31 + sh) bits = 31 + sh;
        if (bits < 0) bits = 0;
        m = (int32_t)((int64_t)((uint64_t)(uint32_t)m << bits) / p->count);
        sh -= bits;
    }
    for (int64_t o = 0; o < n_out; o++, red_next(&p->kept)) {
        red_iter r = p->reduced;
        r.off = p->kept.off;
        int64_t sum = 0;
        for (int64_t k = 0; k < p->count; k++, red_next(&r))
            sum += load_i(x, r.off) - zx;
        int64_t v = (int64_t)ks__quant_mul((int32_t)sum, m, sh) + zo;
        store_i(y, o, clamp_i64(v, ks__dtype_min(y->dtype), ks__dtype_max(y->dtype)));
    }
}

static ks_status reduce_run(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *x = ctx->in[0];
    ks__rt_tensor *y = ctx->out[0];
    const int32_t kind = ctx->node->ip[0];
    uint32_t mask;
    if (!ks__reduce_axes(ctx, x->rank, &mask)) return KS_STATUS_INVALID_MODEL;
    red_plan p;
    reduce_plan(x, mask, &p);
    const int64_t n_out = ks__rt_numel(y);
    const bool q = ks__rt_is_quantized(x);
    const float sx = ks__rt_qscale(x), so = ks__rt_qscale(y);
    const int32_t zx = ks__rt_qzp(x), zo = ks__rt_qzp(y);

    if (q && (kind == KS__REDUCE_MEAN || kind == KS__REDUCE_SUM) && q_sum_fits_i32(x, p.count)) {
        reduce_q_mean_sum(x, y, &p, kind == KS__REDUCE_MEAN);
        return KS_STATUS_OK;
    }

    for (int64_t o = 0; o < n_out; o++, red_next(&p.kept)) {
        red_iter r = p.reduced;
        r.off = p.kept.off;
        if (ks__dtype_is_int(x->dtype) &&
            (!q || kind == KS__REDUCE_MAX || kind == KS__REDUCE_MIN)) {
            /* Raw integer reduction (quantized MAX/MIN compare codes, as TFLite). */
            int64_t acc = kind == KS__REDUCE_PROD  ? 1
                          : kind == KS__REDUCE_MAX ? ks__dtype_min(x->dtype)
                          : kind == KS__REDUCE_MIN ? ks__dtype_max(x->dtype)
                                                   : 0;
            for (int64_t k = 0; k < p.count; k++, red_next(&r)) {
                int64_t v = load_i(x, r.off);
                switch (kind) {
                case KS__REDUCE_MAX:
                    acc = v > acc ? v : acc;
                    break;
                case KS__REDUCE_MIN:
                    acc = v < acc ? v : acc;
                    break;
                case KS__REDUCE_PROD:
                    acc = (int64_t)((uint64_t)acc * (uint64_t)v);
                    break;
                default:
                    acc = (int64_t)((uint64_t)acc + (uint64_t)v);
                    break;
                }
            }
            if (kind == KS__REDUCE_MEAN && p.count > 0) acc /= p.count;
            if (q && !same_qparams(x, y)) acc = requant_lut(deq_f(acc, sx, zx), so, zo, y->dtype);
            store_i(y, o, acc);
            continue;
        }
        /* Float (and quantized SUM/PROD, computed on real values) in double. */
        double acc = kind == KS__REDUCE_PROD  ? 1.0
                     : kind == KS__REDUCE_MAX ? -INFINITY
                     : kind == KS__REDUCE_MIN ? INFINITY
                                              : 0.0;
        for (int64_t k = 0; k < p.count; k++, red_next(&r)) {
            double v = q ? (double)deq_f(load_i(x, r.off), sx, zx) : (double)load_f(x, r.off);
            switch (kind) {
            case KS__REDUCE_MAX:
                acc = v > acc || isnan(v) ? v : acc;
                break;
            case KS__REDUCE_MIN:
                acc = v < acc || isnan(v) ? v : acc;
                break;
            case KS__REDUCE_PROD:
                acc *= v;
                break;
            default:
                acc += v;
                break;
            }
        }
        if (kind == KS__REDUCE_MEAN) acc = p.count > 0 ? acc / (double)p.count : NAN;
        if (q)
            store_i(y, o, requant_lut((float)acc, so, zo, y->dtype));
        else
            store_f(y, o, (float)acc);
    }
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* ARG_MAX / ARG_MIN                                                                            */
/* ------------------------------------------------------------------------------------------ */

static ks_status arg_run(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *x = ctx->in[0];
    ks__rt_tensor *y = ctx->out[0];
    const bool is_max = ctx->node->op == KS_OP_ARG_MAX;
    const int32_t axis = ks__resolve_axis(ctx->node->ip[0], x->rank);
    int64_t outer, len, inner;
    split_axis(x, axis, &outer, &len, &inner);
    const bool fl = ks__dtype_is_float(x->dtype);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t in = 0; in < inner; in++) {
            const int64_t base = o * len * inner + in;
            int64_t best = 0;
            if (fl) {
                float bv = load_f(x, base);
                for (int64_t k = 1; k < len; k++) {
                    float v = load_f(x, base + k * inner);
                    if (is_max ? v > bv : v < bv) {
                        bv = v;
                        best = k;
                    }
                }
            } else {
                /* Quantized inputs compare raw codes: the affine map is monotonic. */
                int64_t bv = load_i(x, base);
                for (int64_t k = 1; k < len; k++) {
                    int64_t v = load_i(x, base + k * inner);
                    if (is_max ? v > bv : v < bv) {
                        bv = v;
                        best = k;
                    }
                }
            }
            store_i(y, o * inner + in, best);
        }
    }
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* QUANTIZE / DEQUANTIZE / CAST                                                                 */
/* ------------------------------------------------------------------------------------------ */

static uint32_t qchan_of(const ks__qchan *c, int64_t i) {
    return c->q->count <= 1 ? 0u : (uint32_t)((i / c->inner) % c->len);
}

static ks_status quantize_run(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *x = ctx->in[0];
    ks__rt_tensor *y = ctx->out[0];
    const int64_t n = ks__rt_numel(y);
    const int64_t lo = ks__dtype_min(y->dtype), hi = ks__dtype_max(y->dtype);
    if (ks__dtype_is_qint(x->dtype)) {
        /* TFLite Requantize: (q - zp_in) * (s_in / s_out) as a Q31 multiplier, + zp_out. */
        int32_t m, sh;
        ks__quant_multiplier((double)ks__rt_qscale(x) / (double)ks__rt_qscale(y), &m, &sh);
        const int32_t zx = ks__rt_qzp(x), zo = ks__rt_qzp(y);
        for (int64_t i = 0; i < n; i++) {
            int32_t v = ks__quant_mul((int32_t)load_i(x, i) - zx, m, sh) + zo;
            store_i(y, i, clamp_i64(v, lo, hi));
        }
        return KS_STATUS_OK;
    }
    ks__qchan c;
    ks_status st = ks__qchan_init(ctx, y, &c);
    if (st) return st;
    for (int64_t i = 0; i < n; i++) {
        uint32_t ch = qchan_of(&c, i);
        /* TFLite AffineQuantize: round-half-away(x / scale) + zp, in float. */
        float r = roundf(load_f(x, i) / y->quant->scales[ch]);
        int64_t v;
        if (isnan(r))
            v = 0;
        else if (r > 2147483520.0f)
            v = INT32_MAX;
        else if (r < -2147483520.0f)
            v = INT32_MIN;
        else
            v = (int64_t)r;
        store_i(y, i, clamp_i64(v + y->quant->zero_points[ch], lo, hi));
    }
    return KS_STATUS_OK;
}

static ks_status dequantize_run(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *x = ctx->in[0];
    ks__rt_tensor *y = ctx->out[0];
    const int64_t n = ks__rt_numel(y);
    float *out = (float *)y->data;
    if (x->dtype == KS_DTYPE_F16) {
        for (int64_t i = 0; i < n; i++)
            out[i] = load_f(x, i);
        return KS_STATUS_OK;
    }
    ks__qchan c;
    ks_status st = ks__qchan_init(ctx, x, &c);
    if (st) return st;
    for (int64_t i = 0; i < n; i++) {
        uint32_t ch = qchan_of(&c, i);
        /* TFLite keeps the scale in double for this product. */
        out[i] = (float)((double)x->quant->scales[ch] *
                         (double)(load_i(x, i) - x->quant->zero_points[ch]));
    }
    return KS_STATUS_OK;
}

/* Float -> integer truncates toward zero (static_cast); out-of-range values saturate and NaN
 * becomes 0 instead of C's undefined behaviour. */
static int64_t float_to_int(double v, ks_dtype d) {
    if (isnan(v)) return 0;
    double t = trunc(v);
    double lo = (double)ks__dtype_min(d), hi = (double)ks__dtype_max(d);
    if (t <= lo) return ks__dtype_min(d);
    if (t >= hi) return ks__dtype_max(d);
    return (int64_t)t;
}

static ks_status cast_run(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *x = ctx->in[0];
    ks__rt_tensor *y = ctx->out[0];
    const int64_t n = ks__rt_numel(y);
    const bool fin = ks__dtype_is_float(x->dtype), fout = ks__dtype_is_float(y->dtype);
    for (int64_t i = 0; i < n; i++) {
        if (y->dtype == KS_DTYPE_BOOL) {
            ((uint8_t *)y->data)[i] = fin ? load_f(x, i) != 0.0f : load_i(x, i) != 0;
        } else if (fout) {
            store_f(y, i, fin ? load_f(x, i) : (float)load_i(x, i));
        } else if (fin) {
            store_i(y, i, float_to_int(load_f(x, i), y->dtype));
        } else {
            store_i(y, i, load_i(x, i));
        }
    }
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* registration                                                                                 */
/* ------------------------------------------------------------------------------------------ */

void ks__ref_register_elementwise(ks__kernel_table *t) {
    /* One line per op (not a loop over op arrays) so an op-pruned build drops exactly the
     * kernels no enabled op references (op_enabled.h). */
    KS__REF_REG(t, ADD, NULL, binary_run);
    KS__REF_REG(t, SUB, NULL, binary_run);
    KS__REF_REG(t, MUL, NULL, binary_run);
    KS__REF_REG(t, DIV, NULL, binary_run);
    KS__REF_REG(t, FLOOR_DIV, NULL, binary_run);
    KS__REF_REG(t, FLOOR_MOD, NULL, binary_run);
    KS__REF_REG(t, POW, NULL, binary_run);
    KS__REF_REG(t, MAXIMUM, NULL, binary_run);
    KS__REF_REG(t, MINIMUM, NULL, binary_run);
    KS__REF_REG(t, RELU, NULL, unary_run);
    KS__REF_REG(t, RELU6, NULL, unary_run);
    KS__REF_REG(t, RELU_N1_TO_1, NULL, unary_run);
    KS__REF_REG(t, LEAKY_RELU, NULL, unary_run);
    KS__REF_REG(t, SIGMOID, NULL, unary_run);
    KS__REF_REG(t, TANH, NULL, unary_run);
    KS__REF_REG(t, HARD_SWISH, NULL, unary_run);
    KS__REF_REG(t, EXP, NULL, unary_run);
    KS__REF_REG(t, SQRT, NULL, unary_run);
    KS__REF_REG(t, RSQRT, NULL, unary_run);
    KS__REF_REG(t, ABS, NULL, unary_run);
    KS__REF_REG(t, NEG, NULL, unary_run);
    KS__REF_REG(t, FLOOR, NULL, unary_run);
    KS__REF_REG(t, CEIL, NULL, unary_run);
    KS__REF_REG(t, LOG, NULL, unary_run);
    KS__REF_REG(t, CLIP, NULL, unary_run);
    KS__REF_REG(t, ELU, NULL, unary_run);
    KS__REF_REG(t, HARD_SIGMOID, NULL, unary_run);
    KS__REF_REG(t, EQUAL, NULL, compare_run);
    KS__REF_REG(t, NOT_EQUAL, NULL, compare_run);
    KS__REF_REG(t, GREATER, NULL, compare_run);
    KS__REF_REG(t, GREATER_EQUAL, NULL, compare_run);
    KS__REF_REG(t, LESS, NULL, compare_run);
    KS__REF_REG(t, LESS_EQUAL, NULL, compare_run);
    KS__REF_REG(t, WHERE, NULL, where_run);
    KS__REF_REG(t, PRELU, NULL, prelu_run);
    KS__REF_REG(t, SOFTMAX, NULL, softmax_run);
    KS__REF_REG(t, LOG_SOFTMAX, NULL, softmax_run);
    KS__REF_REG(t, REDUCE, NULL, reduce_run);
    KS__REF_REG(t, ARG_MAX, NULL, arg_run);
    KS__REF_REG(t, ARG_MIN, NULL, arg_run);
    KS__REF_REG(t, QUANTIZE, NULL, quantize_run);
    KS__REF_REG(t, DEQUANTIZE, NULL, dequantize_run);
    KS__REF_REG(t, CAST, NULL, cast_run);
}
