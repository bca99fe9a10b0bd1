/* TRANSPOSE and SPLIT of 4-byte elements (F32, I32) as strided gathers (perf.h), AVX2; and
 * AArch64 NEON (arm/neon/f32_perf_copy.c includes this file: 4x4 register transposes instead of
 * 8x8, the rest the same).
 *
 * Bitwise equal to the reference. After collapsing, a gather is one of three shapes:
 *  - rows: the innermost output axis is contiguous in the input (split, or a transpose that keeps
 *    the last axis): row copies;
 *  - 2-D transpose: some other output axis is contiguous in the input: 8x8 register transposes
 *    over (that axis, innermost axis) tiles, the other axes outside (NCHW <-> NHWC, channel
 *    shuffles);
 *  - otherwise element-wise strided copies.
 * Work is split into tasks of a few thousand elements over the outer axes and, for transposes,
 * blocks of the input-contiguous axis; each task writes disjoint output.
 */
#if defined(__aarch64__)
#include <arm_neon.h>
#else
#include <immintrin.h>

#include "interleave3.h"
#endif
#include <string.h>

#include "../../perf.h"

#define TASK_ELEMS 8192
#define MIN_PARALLEL_ELEMS 65536

enum { GATHER_ROWS, GATHER_T2D, GATHER_STRIDED };

typedef struct gather_job {
    int kind;
    int32_t num_outer; /* outer axes, outermost first */
    int64_t outer_dims[KS_MAX_RANK], outer_in[KS_MAX_RANK], outer_out[KS_MAX_RANK];
    int64_t outer_count;
    int64_t inner;        /* ROWS/STRIDED: innermost length; T2D: I (output-contiguous) */
    int64_t inner_stride; /* STRIDED: input stride of innermost; T2D: input stride of I */
    int64_t cols;         /* T2D: J, the input-contiguous axis */
    int64_t col_out;      /* T2D: output stride of J */
    int64_t col_block, num_col_blocks;
    int64_t outer_per_task; /* T2D: outer indices per task (small transposes) */
    int64_t rows_per_task;  /* ROWS/STRIDED */
    const uint32_t *x;
    uint32_t *y;
} gather_job;

static void outer_offsets(const gather_job *j, int64_t o, int64_t *in_off, int64_t *out_off) {
    int64_t a = 0, b = 0;
    for (int32_t d = j->num_outer - 1; d >= 0; d--) {
        int64_t i = o % j->outer_dims[d];
        o /= j->outer_dims[d];
        a += i * j->outer_in[d];
        b += i * j->outer_out[d];
    }
    *in_off = a;
    *out_off = b;
}

#if defined(__aarch64__)
#define TB 4 /* the register transpose's block */

/* dst[2 * c + r] = row r's c for c < n: two rows interleaved (ShuffleNet's channel shuffle in
 * NHWC: [pixels, 2, C/2] -> [pixels, C/2, 2]) */
static inline int64_t interleave2(const uint32_t *x0, const uint32_t *x1, uint32_t *y, int64_t n) {
    int64_t c = 0;
    for (; c + 4 <= n; c += 4) {
        uint32x4x2_t v = {{vld1q_u32(x0 + c), vld1q_u32(x1 + c)}};
        vst2q_u32(y + 2 * c, v);
    }
    return c;
}

/* dst[3 * c + r] = row r's c for c < n: three planes interleaved (an NCHW RGB input to NHWC) */
static inline int64_t interleave3(const uint32_t *x0, const uint32_t *x1, const uint32_t *x2,
                                  uint32_t *y, int64_t n) {
    int64_t c = 0;
    for (; c + 4 <= n; c += 4) {
        uint32x4x3_t v = {{vld1q_u32(x0 + c), vld1q_u32(x1 + c), vld1q_u32(x2 + c)}};
        vst3q_u32(y + 3 * c, v);
    }
    return c;
}

/* dst[c * ldd + r] = src[r * lds + c] for a 4x4 block */
static inline void transpose_blk(const uint32_t *src, int64_t lds, uint32_t *dst, int64_t ldd) {
    uint32x4_t r0 = vld1q_u32(src), r1 = vld1q_u32(src + lds);
    uint32x4_t r2 = vld1q_u32(src + 2 * lds), r3 = vld1q_u32(src + 3 * lds);
    uint32x4_t t0 = vtrn1q_u32(r0, r1), t1 = vtrn2q_u32(r0, r1);
    uint32x4_t t2 = vtrn1q_u32(r2, r3), t3 = vtrn2q_u32(r2, r3);
    uint64x2_t a0 = vreinterpretq_u64_u32(t0), a1 = vreinterpretq_u64_u32(t1);
    uint64x2_t a2 = vreinterpretq_u64_u32(t2), a3 = vreinterpretq_u64_u32(t3);
    vst1q_u32(dst, vreinterpretq_u32_u64(vtrn1q_u64(a0, a2)));
    vst1q_u32(dst + ldd, vreinterpretq_u32_u64(vtrn1q_u64(a1, a3)));
    vst1q_u32(dst + 2 * ldd, vreinterpretq_u32_u64(vtrn2q_u64(a0, a2)));
    vst1q_u32(dst + 3 * ldd, vreinterpretq_u32_u64(vtrn2q_u64(a1, a3)));
}
#else
#define TB 8

/* dst[c * ldd + r] = src[r * lds + c] for an 8x8 block */
static inline void transpose8x8(const uint32_t *src, int64_t lds, uint32_t *dst, int64_t ldd) {
    __m256 r0 = _mm256_loadu_ps((const float *)(src + 0 * lds));
    __m256 r1 = _mm256_loadu_ps((const float *)(src + 1 * lds));
    __m256 r2 = _mm256_loadu_ps((const float *)(src + 2 * lds));
    __m256 r3 = _mm256_loadu_ps((const float *)(src + 3 * lds));
    __m256 r4 = _mm256_loadu_ps((const float *)(src + 4 * lds));
    __m256 r5 = _mm256_loadu_ps((const float *)(src + 5 * lds));
    __m256 r6 = _mm256_loadu_ps((const float *)(src + 6 * lds));
    __m256 r7 = _mm256_loadu_ps((const float *)(src + 7 * lds));
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps((float *)(dst + 0 * ldd), _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps((float *)(dst + 1 * ldd), _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps((float *)(dst + 2 * ldd), _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps((float *)(dst + 3 * ldd), _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps((float *)(dst + 4 * ldd), _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps((float *)(dst + 5 * ldd), _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps((float *)(dst + 6 * ldd), _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps((float *)(dst + 7 * ldd), _mm256_permute2f128_ps(u3, u7, 0x31));
}
static inline void transpose_blk(const uint32_t *src, int64_t lds, uint32_t *dst, int64_t ldd) {
    transpose8x8(src, lds, dst, ldd);
}

/* dst[3 * c + r] = row r's c for c < n (see the NEON twin above; interleave3.h) */
static inline int64_t interleave3(const uint32_t *x0, const uint32_t *x1, const uint32_t *x2,
                                  uint32_t *y, int64_t n) {
    int64_t c = 0;
    for (; c + 8 <= n; c += 8)
        ks_avx2_interleave3((float *)(y + 3 * c), _mm256_loadu_ps((const float *)(x0 + c)),
                            _mm256_loadu_ps((const float *)(x1 + c)),
                            _mm256_loadu_ps((const float *)(x2 + c)));
    return c;
}

/* dst[2 * c + r] = row r's c for c < n (see the NEON twin above) */
static inline int64_t interleave2(const uint32_t *x0, const uint32_t *x1, uint32_t *y, int64_t n) {
    int64_t c = 0;
    for (; c + 8 <= n; c += 8) {
        __m256 a = _mm256_loadu_ps((const float *)(x0 + c));
        __m256 b = _mm256_loadu_ps((const float *)(x1 + c));
        __m256 lo = _mm256_unpacklo_ps(a, b), hi = _mm256_unpackhi_ps(a, b);
        _mm256_storeu_ps((float *)(y + 2 * c), _mm256_permute2f128_ps(lo, hi, 0x20));
        _mm256_storeu_ps((float *)(y + 2 * c + 8), _mm256_permute2f128_ps(lo, hi, 0x31));
    }
    return c;
}
#endif

/* y[c * ldy + r] = x[r * ldx + c] for r < rows (output-contiguous), c < cols */
static void transpose_2d(const uint32_t *x, int64_t ldx, uint32_t *y, int64_t ldy, int64_t rows,
                         int64_t cols) {
    int64_t r = 0;
    for (; r + TB <= rows; r += TB) {
        int64_t c = 0;
        for (; c + TB <= cols; c += TB)
            transpose_blk(x + r * ldx + c, ldx, y + c * ldy + r, ldy);
        for (; c < cols; c++)
            for (int64_t k = 0; k < TB; k++)
                y[c * ldy + r + k] = x[(r + k) * ldx + c];
    }
    if (r == rows) return;
    const int64_t rem = rows - r;
    if (rem == 1) {
        for (int64_t c = 0; c < cols; c++)
            y[c * ldy + r] = x[r * ldx + c];
    } else if (rem == 2) {
        const uint32_t *x0 = x + r * ldx, *x1 = x0 + ldx;
        int64_t c = ldy == 2 ? interleave2(x0, x1, y + r, cols) : 0;
        for (; c < cols; c++) {
            y[c * ldy + r] = x0[c];
            y[c * ldy + r + 1] = x1[c];
        }
    } else if (rem == 3) {
        const uint32_t *x0 = x + r * ldx, *x1 = x0 + ldx, *x2 = x1 + ldx;
        int64_t c = ldy == 3 ? interleave3(x0, x1, x2, y + r, cols) : 0;
        for (; c < cols; c++) {
            y[c * ldy + r] = x0[c];
            y[c * ldy + r + 1] = x1[c];
            y[c * ldy + r + 2] = x2[c];
        }
    } else {
        for (int64_t c = 0; c < cols; c++)
            for (int64_t k = 0; k < rem; k++)
                y[c * ldy + r + k] = x[(r + k) * ldx + c];
    }
}

static void gather_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const gather_job *j = (const gather_job *)arg;
    for (size_t t = begin; t < end; t++) {
        if (j->kind == GATHER_T2D) {
            int64_t ob = (int64_t)t / j->num_col_blocks, cb = (int64_t)t % j->num_col_blocks;
            int64_t c0 = cb * j->col_block;
            int64_t c1 = c0 + j->col_block < j->cols ? c0 + j->col_block : j->cols;
            int64_t o0 = ob * j->outer_per_task, o1 = o0 + j->outer_per_task;
            if (o1 > j->outer_count) o1 = j->outer_count;
            for (int64_t o = o0; o < o1; o++) {
                int64_t in_off, out_off;
                outer_offsets(j, o, &in_off, &out_off);
                transpose_2d(j->x + in_off + c0, j->inner_stride, j->y + out_off + c0 * j->col_out,
                             j->col_out, j->inner, c1 - c0);
            }
            continue;
        }
        int64_t r0 = (int64_t)t * j->rows_per_task;
        int64_t r1 =
            r0 + j->rows_per_task < j->outer_count ? r0 + j->rows_per_task : j->outer_count;
        for (int64_t r = r0; r < r1; r++) {
            int64_t in_off, out_off;
            outer_offsets(j, r, &in_off, &out_off);
            const uint32_t *src = j->x + in_off;
            uint32_t *dst = j->y + out_off;
            if (j->kind == GATHER_ROWS) {
                memcpy(dst, src, (size_t)j->inner * sizeof(uint32_t));
            } else {
                for (int64_t i = 0; i < j->inner; i++)
                    dst[i] = src[i * j->inner_stride];
            }
        }
    }
}

static void gather_run(const ks__gather_geom *g, const void *x, void *y, ks__pool *pool) {
    if (g->numel == 0) return;
    gather_job j;
    memset(&j, 0, sizeof(j));
    j.x = (const uint32_t *)x + g->base;
    j.y = (uint32_t *)y;
    const int32_t last = g->rank - 1;
    int64_t out_stride[KS_MAX_RANK], s = 1;
    for (int32_t d = last; d >= 0; d--) {
        out_stride[d] = s;
        s *= g->dims[d];
    }
    int32_t k = -1;
    if (g->in_stride[last] != 1)
        for (int32_t d = 0; d < last && k < 0; d++)
            if (g->in_stride[d] == 1) k = d;
    j.kind = g->in_stride[last] == 1 ? GATHER_ROWS : (k >= 0 ? GATHER_T2D : GATHER_STRIDED);
    j.outer_count = 1;
    for (int32_t d = 0; d < last; d++) {
        if (d == k) continue;
        j.outer_dims[j.num_outer] = g->dims[d];
        j.outer_in[j.num_outer] = g->in_stride[d];
        j.outer_out[j.num_outer] = out_stride[d];
        j.num_outer++;
        j.outer_count *= g->dims[d];
    }
    j.inner = g->dims[last];
    j.inner_stride = g->in_stride[last];
    size_t tasks;
    if (j.kind == GATHER_T2D) {
        j.cols = g->dims[k];
        j.col_out = out_stride[k];
        int64_t cb = TASK_ELEMS / j.inner;
        cb = cb < 8 ? 8 : cb / 8 * 8;
        j.col_block = cb < j.cols ? cb : j.cols;
        j.num_col_blocks = (j.cols + j.col_block - 1) / j.col_block;
        /* a transpose of a few dozen elements per outer index (a channel shuffle per pixel):
         * several outer indices per task */
        int64_t per_outer = j.inner * j.col_block;
        j.outer_per_task = j.num_col_blocks == 1 && per_outer < TASK_ELEMS
                               ? TASK_ELEMS / (per_outer > 0 ? per_outer : 1)
                               : 1;
        tasks =
            (size_t)((j.outer_count + j.outer_per_task - 1) / j.outer_per_task * j.num_col_blocks);
    } else {
        int64_t rpt = TASK_ELEMS / j.inner;
        j.rows_per_task = rpt < 1 ? 1 : rpt;
        tasks = (size_t)((j.outer_count + j.rows_per_task - 1) / j.rows_per_task);
    }
    size_t grain = g->numel < MIN_PARALLEL_ELEMS ? tasks : 1;
    ks__parallel_for(pool, tasks, grain ? grain : 1, gather_range, &j);
}

static ks_status perf_noplan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    (void)ctx;
    *packed_bytes_out = 0;
    return KS_STATUS_OK;
}

/* ---- TRANSPOSE ---- */

static double transpose_cost(const ks__kernel_ctx *ctx) {
    ks__gather_geom g;
    if (!ks__gather_geom_transpose(ctx, &g)) return -1.0;
    return 1.0 + (double)g.numel / 8.0;
}

static ks_status transpose_run(ks__kernel_ctx *ctx) {
    ks__gather_geom g;
    if (!ks__gather_geom_transpose(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "shapes changed after planning");
    gather_run(&g, ctx->in[0]->data, ctx->out[0]->data, ctx->pool);
    return KS_STATUS_OK;
}

#if defined(__aarch64__)
const ks__impl ks_x32_transpose__neon = {"ks_x32_transpose__neon",
                                         KS_OP_TRANSPOSE,
                                         KS_ISA_NEON,
                                         transpose_cost,
                                         perf_noplan,
                                         NULL,
                                         transpose_run};
#else
const ks__impl ks_x32_transpose__avx2 = {"ks_x32_transpose__avx2",
                                         KS_OP_TRANSPOSE,
                                         KS_ISA_AVX2,
                                         transpose_cost,
                                         perf_noplan,
                                         NULL,
                                         transpose_run};
#endif

/* ---- SPLIT ---- */

static double split_cost(const ks__kernel_ctx *ctx) {
    ks__gather_geom g;
    double total = 1.0;
    for (uint32_t k = 0; k < ctx->num_outputs; k++) {
        if (!ks__gather_geom_split(ctx, k, &g)) return -1.0;
        total += (double)g.numel / 8.0;
    }
    return total;
}

static ks_status split_run(ks__kernel_ctx *ctx) {
    for (uint32_t k = 0; k < ctx->num_outputs; k++) {
        ks__gather_geom g;
        if (!ks__gather_geom_split(ctx, k, &g))
            return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "shapes changed after planning");
        gather_run(&g, ctx->in[0]->data, ctx->out[k]->data, ctx->pool);
    }
    return KS_STATUS_OK;
}

#if defined(__aarch64__)
const ks__impl ks_x32_split__neon = {"ks_x32_split__neon", KS_OP_SPLIT, KS_ISA_NEON, split_cost,
                                     perf_noplan,          NULL,        split_run};
#else
const ks__impl ks_x32_split__avx2 = {"ks_x32_split__avx2", KS_OP_SPLIT, KS_ISA_AVX2, split_cost,
                                     perf_noplan,          NULL,        split_run};
#endif
