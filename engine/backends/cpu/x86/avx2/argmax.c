/* ARG_MAX / ARG_MIN over any axis of U8, I8 and F32 tensors into I32 / I64 indices, with the
 * reference's exact rule (the first index of the extreme value; quantized inputs compare raw
 * codes; a float NaN never wins, so a leading NaN keeps index 0). The reference reads and writes
 * every element through a dtype switch and an index computed per element: deeplabv3's ARG_MAX
 * over its 21 class maps at 513 x 513 took 15-22 ms of its run. 8-bit codes along the last
 * axis with at most 32 values (deeplabv3's case) take one 32-byte vector per output: the
 * extreme by a byte max/min tree, its first index by a compare, a movemask and a count of
 * trailing zeros (lanes past the axis set to the value that cannot win first; I8 mapped to U8
 * order by flipping the sign bit). The rest is typed loops the compiler keeps in registers: along
 * the axis per output when the axis is the last (inner == 1), else a block of up to 64 inner
 * positions at a time, walked along the axis together.
 */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "../../impl.h"

typedef struct arg_job {
    const void *x;
    void *y;
    ks_dtype xt, yt;
    bool is_max;
    int64_t outer, len, inner;
} arg_job;

static int describe(const ks__kernel_ctx *ctx, arg_job *j) {
    memset(j, 0, sizeof(*j));
    if (ctx->num_inputs < 1 || ctx->num_outputs != 1) return -1;
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    if (!x || !y || x->rank < 1) return -1;
    if (x->dtype != KS_DTYPE_U8 && x->dtype != KS_DTYPE_I8 && x->dtype != KS_DTYPE_F32) return -1;
    if (y->dtype != KS_DTYPE_I32 && y->dtype != KS_DTYPE_I64) return -1;
    if (x->dtype != KS_DTYPE_F32 && x->quant && x->quant->count > 1) return -1; /* per channel */
    int32_t axis = ks__resolve_axis(ctx->node->ip[0], x->rank);
    if (axis < 0 || axis >= x->rank || x->dims[axis] < 1) return -1;
    j->outer = j->inner = 1;
    for (int32_t d = 0; d < axis; d++)
        j->outer *= x->dims[d];
    for (int32_t d = axis + 1; d < x->rank; d++)
        j->inner *= x->dims[d];
    j->len = x->dims[axis];
    if (ks__rt_numel(y) != j->outer * j->inner) return -1;
    j->x = x->data;
    j->y = y->data;
    j->xt = x->dtype;
    j->yt = y->dtype;
    j->is_max = ctx->node->op == KS_OP_ARG_MAX;
    return 0;
}

#define BLOCK 64

/* The outputs [begin, end) of outer rows (each row: len x inner values, inner outputs). */
#define ARG_LOOP(T, GT)                                                                            \
    do {                                                                                           \
        const T *x = (const T *)j->x;                                                              \
        for (size_t o = begin; o < end; o++) {                                                     \
            const T *row = x + (size_t)o * (size_t)(j->len * j->inner);                            \
            if (j->inner == 1) {                                                                   \
                T bv = row[0];                                                                     \
                int64_t best = 0;                                                                  \
                for (int64_t k = 1; k < j->len; k++) {                                             \
                    T v = row[k];                                                                  \
                    if (GT) {                                                                      \
                        bv = v;                                                                    \
                        best = k;                                                                  \
                    }                                                                              \
                }                                                                                  \
                put(j, (int64_t)o, best);                                                          \
                continue;                                                                          \
            }                                                                                      \
            for (int64_t i0 = 0; i0 < j->inner; i0 += BLOCK) {                                     \
                int64_t nb = j->inner - i0 < BLOCK ? j->inner - i0 : BLOCK;                        \
                T bvs[BLOCK];                                                                      \
                int64_t bests[BLOCK];                                                              \
                for (int64_t i = 0; i < nb; i++) {                                                 \
                    bvs[i] = row[i0 + i];                                                          \
                    bests[i] = 0;                                                                  \
                }                                                                                  \
                for (int64_t k = 1; k < j->len; k++) {                                             \
                    const T *r = row + k * j->inner + i0;                                          \
                    for (int64_t i = 0; i < nb; i++) {                                             \
                        T v = r[i], bv = bvs[i];                                                   \
                        if (GT) {                                                                  \
                            bvs[i] = v;                                                            \
                            bests[i] = k;                                                          \
                        }                                                                          \
                    }                                                                              \
                }                                                                                  \
                for (int64_t i = 0; i < nb; i++)                                                   \
                    put(j, (int64_t)o * j->inner + i0 + i, bests[i]);                              \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static inline void put(const arg_job *j, int64_t i, int64_t v) {
    if (j->yt == KS_DTYPE_I64)
        ((int64_t *)j->y)[i] = v;
    else
        ((int32_t *)j->y)[i] = (int32_t)v;
}

/* 8-bit codes, last axis, len <= 32: one vector per output. Rows whose 32-byte read would pass
 * the tensor's end go through a copy. */
static void arg8_short(const arg_job *j, size_t begin, size_t end) {
    const uint8_t *x = (const uint8_t *)j->x;
    size_t len = (size_t)j->len, total = (size_t)(j->outer * j->len);
    const __m256i flip = _mm256_set1_epi8(j->xt == KS_DTYPE_I8 ? (char)0x80 : 0);
    /* lanes >= len: 0 for a max, 255 for a min (after the flip), which cannot come first */
    uint8_t fill_b[32];
    for (size_t k = 0; k < 32; k++)
        fill_b[k] = k < len ? 0 : (j->is_max ? 0x00 : 0xFF);
    uint8_t keep_b[32];
    for (size_t k = 0; k < 32; k++)
        keep_b[k] = k < len ? 0xFF : 0x00;
    const __m256i keep = _mm256_loadu_si256((const __m256i *)(const void *)keep_b);
    const __m256i fill = _mm256_loadu_si256((const __m256i *)(const void *)fill_b);
    for (size_t o = begin; o < end; o++) {
        const uint8_t *row = x + o * len;
        __m256i v;
        if (o * len + 32 <= total) {
            v = _mm256_loadu_si256((const __m256i *)(const void *)row);
        } else {
            uint8_t buf[32] = {0};
            memcpy(buf, row, len);
            v = _mm256_loadu_si256((const __m256i *)(const void *)buf);
        }
        v = _mm256_or_si256(_mm256_and_si256(_mm256_xor_si256(v, flip), keep), fill);
        __m128i m = j->is_max
                        ? _mm_max_epu8(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1))
                        : _mm_min_epu8(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        for (int sh = 8; sh >= 1; sh /= 2) {
            __m128i t = sh == 8   ? _mm_srli_si128(m, 8)
                        : sh == 4 ? _mm_srli_si128(m, 4)
                        : sh == 2 ? _mm_srli_si128(m, 2)
                                  : _mm_srli_si128(m, 1);
            m = j->is_max ? _mm_max_epu8(m, t) : _mm_min_epu8(m, t);
        }
        __m256i best = _mm256_broadcastb_epi8(m);
        uint32_t hits = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, best));
        put(j, (int64_t)o, (int64_t)__builtin_ctz(hits));
    }
}

static void arg_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const arg_job *j = (const arg_job *)arg;
    (void)thread;
    if (j->xt != KS_DTYPE_F32 && j->inner == 1 && j->len <= 32) {
        arg8_short(j, begin, end);
        return;
    }
    switch (j->xt) {
    case KS_DTYPE_U8:
        if (j->is_max)
            ARG_LOOP(uint8_t, v > bv);
        else
            ARG_LOOP(uint8_t, v < bv);
        break;
    case KS_DTYPE_I8:
        if (j->is_max)
            ARG_LOOP(int8_t, v > bv);
        else
            ARG_LOOP(int8_t, v < bv);
        break;
    default:
        if (j->is_max)
            ARG_LOOP(float, v > bv);
        else
            ARG_LOOP(float, v < bv);
        break;
    }
}

static double cost(const ks__kernel_ctx *ctx) {
    arg_job j;
    if (describe(ctx, &j)) return -1.0;
    return (double)(j.outer * j.len * j.inner) / 4.0;
}

static ks_status plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    (void)ctx;
    *packed_bytes_out = 0;
    return KS_STATUS_OK;
}

static ks_status run(ks__kernel_ctx *ctx) {
    arg_job j;
    if (describe(ctx, &j))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "argmax cannot run this node");
    size_t grain = (size_t)(16384 / (j.len * j.inner + 1)) + 1;
    ks__parallel_for(ctx->pool, (size_t)j.outer, grain, arg_range, &j);
    return KS_STATUS_OK;
}

const ks__impl ks_argmax__avx2 = {
    "ks_argmax__avx2", KS_OP_ARG_MAX, KS_ISA_AVX2, cost, plan, NULL, run};
const ks__impl ks_argmin__avx2 = {
    "ks_argmin__avx2", KS_OP_ARG_MIN, KS_ISA_AVX2, cost, plan, NULL, run};
