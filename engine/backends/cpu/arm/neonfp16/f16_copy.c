/* TRANSPOSE and SPLIT of F16 activations (the fp16 pass's graphs, precision.h) as 16-bit strided
 * gathers (perf.h: size-1 axes dropped, adjacent axes merged). Three forms, by the collapsed
 * geometry's two innermost axes:
 *   rows        the innermost axis is contiguous in the input: one memcpy per output row (most
 *               splits, and transposes that keep the last axis);
 *   interleave  the innermost axis has 2, 3 or 4 elements and the one before it is contiguous:
 *               VST2/VST3/VST4 of 8 input columns at a time (the NHWC channel shuffles of
 *               ShuffleNet: [P, g, C/g] -> [P, C/g, g]);
 *   strided     anything else: element by element.
 * And constant PAD of F16 tensors (BlazeFace's channel pads on its residual paths), row by row.
 * Bitwise copies: no arithmetic, so every result equals the reference kernel's. */
#include <arm_neon.h>
#include <string.h>

#include "../../perf.h"
#include "../../vec.h"

#define TASK_ELEMS 16384

enum { G_ROWS, G_INTERLEAVE, G_STRIDED };

typedef struct g16_job {
    const uint16_t *x;
    uint16_t *y;
    int kind;
    int32_t num_outer;
    int64_t outer_dims[KS_MAX_RANK], outer_in[KS_MAX_RANK];
    int64_t outer_count, rows_per_task;
    int64_t inner, inner_stride; /* the innermost axis */
    int64_t mid;                 /* G_INTERLEAVE: the contiguous axis before it */
    int64_t row_elems;           /* output elements per outer index */
} g16_job;

/* y[m * n + i] = x[m + i * s], m < mid, i < n (n = 2, 3, 4) */
static void interleave(const uint16_t *x, uint16_t *y, int64_t mid, int64_t n, int64_t s) {
    int64_t m = 0;
    if (n == 2) {
        for (; m + 8 <= mid; m += 8) {
            uint16x8x2_t v = {{vld1q_u16(x + m), vld1q_u16(x + m + s)}};
            vst2q_u16(y + m * 2, v);
        }
    } else if (n == 3) {
        for (; m + 8 <= mid; m += 8) {
            uint16x8x3_t v = {{vld1q_u16(x + m), vld1q_u16(x + m + s), vld1q_u16(x + m + 2 * s)}};
            vst3q_u16(y + m * 3, v);
        }
    } else {
        for (; m + 8 <= mid; m += 8) {
            uint16x8x4_t v = {{vld1q_u16(x + m), vld1q_u16(x + m + s), vld1q_u16(x + m + 2 * s),
                               vld1q_u16(x + m + 3 * s)}};
            vst4q_u16(y + m * 4, v);
        }
    }
    for (; m < mid; m++)
        for (int64_t i = 0; i < n; i++)
            y[m * n + i] = x[m + i * s];
}

static void g16_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const g16_job *j = (const g16_job *)arg;
    int64_t r0 = (int64_t)begin * j->rows_per_task;
    int64_t r1 = (int64_t)end * j->rows_per_task;
    if (r1 > j->outer_count) r1 = j->outer_count;
    if (r0 >= r1) return;
    /* the input offset of outer index r0, then an odometer */
    int64_t idx[KS_MAX_RANK], in_off = 0, rest = r0;
    for (int32_t d = j->num_outer - 1; d >= 0; d--) {
        idx[d] = rest % j->outer_dims[d];
        rest /= j->outer_dims[d];
        in_off += idx[d] * j->outer_in[d];
    }
    for (int64_t r = r0; r < r1; r++) {
        const uint16_t *src = j->x + in_off;
        uint16_t *dst = j->y + r * j->row_elems;
        if (j->kind == G_ROWS) {
            memcpy(dst, src, (size_t)j->inner * sizeof(uint16_t));
        } else if (j->kind == G_INTERLEAVE) {
            interleave(src, dst, j->mid, j->inner, j->inner_stride);
        } else {
            for (int64_t i = 0; i < j->inner; i++)
                dst[i] = src[i * j->inner_stride];
        }
        for (int32_t d = j->num_outer - 1; d >= 0; d--) {
            in_off += j->outer_in[d];
            if (++idx[d] < j->outer_dims[d]) break;
            in_off -= idx[d] * j->outer_in[d];
            idx[d] = 0;
        }
    }
}

static void g16_run(const ks__gather_geom *g, const void *x, void *y, ks__pool *pool) {
    if (g->numel == 0) return;
    g16_job j;
    memset(&j, 0, sizeof(j));
    j.x = (const uint16_t *)x + g->base;
    j.y = (uint16_t *)y;
    const int32_t last = g->rank - 1;
    j.inner = g->dims[last];
    j.inner_stride = g->in_stride[last];
    int32_t outer_end = last; /* axes [0, outer_end) are outer */
    if (j.inner_stride == 1) {
        j.kind = G_ROWS;
    } else if (last >= 1 && g->in_stride[last - 1] == 1 && j.inner >= 2 && j.inner <= 4) {
        j.kind = G_INTERLEAVE;
        j.mid = g->dims[last - 1];
        outer_end = last - 1;
    } else {
        j.kind = G_STRIDED;
    }
    j.row_elems = j.kind == G_INTERLEAVE ? j.mid * j.inner : j.inner;
    j.outer_count = 1;
    for (int32_t d = 0; d < outer_end; d++) {
        j.outer_dims[j.num_outer] = g->dims[d];
        j.outer_in[j.num_outer] = g->in_stride[d];
        j.num_outer++;
        j.outer_count *= g->dims[d];
    }
    int64_t rpt = TASK_ELEMS / (j.row_elems > 0 ? j.row_elems : 1);
    j.rows_per_task = rpt < 1 ? 1 : rpt;
    size_t tasks = (size_t)((j.outer_count + j.rows_per_task - 1) / j.rows_per_task);
    ks__parallel_for(pool, tasks, 1, g16_range, &j);
}

static ks_status noplan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    (void)ctx;
    *packed_bytes_out = 0;
    return KS_STATUS_OK;
}

static double transpose_cost(const ks__kernel_ctx *ctx) {
    ks__gather_geom g;
    if (!ks__gather_geom_transpose_es(ctx, &g, 2)) return -1.0;
    return 1.0 + (double)g.numel / 8.0;
}

static ks_status transpose_run(ks__kernel_ctx *ctx) {
    ks__gather_geom g;
    if (!ks__gather_geom_transpose_es(ctx, &g, 2))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "shapes changed after planning");
    g16_run(&g, ctx->in[0]->data, ctx->out[0]->data, ctx->pool);
    return KS_STATUS_OK;
}

static double split_cost(const ks__kernel_ctx *ctx) {
    ks__gather_geom g;
    double total = 1.0;
    for (uint32_t k = 0; k < ctx->num_outputs; k++) {
        if (!ks__gather_geom_split_es(ctx, k, &g, 2)) return -1.0;
        total += (double)g.numel / 8.0;
    }
    return total;
}

static ks_status split_run(ks__kernel_ctx *ctx) {
    for (uint32_t k = 0; k < ctx->num_outputs; k++) {
        ks__gather_geom g;
        if (!ks__gather_geom_split_es(ctx, k, &g, 2))
            return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "shapes changed after planning");
        g16_run(&g, ctx->in[0]->data, ctx->out[k]->data, ctx->pool);
    }
    return KS_STATUS_OK;
}

const ks__impl ks_f16_transpose__neonfp16 = {"ks_f16_transpose__neonfp16",
                                             KS_OP_TRANSPOSE,
                                             KS_ISA_NEON | KS_ISA_NEON_FP16,
                                             transpose_cost,
                                             noplan,
                                             NULL,
                                             transpose_run};
const ks__impl ks_f16_split__neonfp16 = {"ks_f16_split__neonfp16",
                                         KS_OP_SPLIT,
                                         KS_ISA_NEON | KS_ISA_NEON_FP16,
                                         split_cost,
                                         noplan,
                                         NULL,
                                         split_run};

/* ---- PAD (constant) ---- */

static void copy16(uint16_t *d, const uint16_t *s, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        vst1q_u16(d + i, vld1q_u16(s + i));
    for (; i < n; i++)
        d[i] = s[i];
}

static void fill16(uint16_t *d, uint16_t v, int64_t n) {
    const uint16x8_t vv = vdupq_n_u16(v);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        vst1q_u16(d + i, vv);
    for (; i < n; i++)
        d[i] = v;
}

typedef struct pad16_job {
    ks__vpad_geom g;
    int64_t in_stride[KS_MAX_RANK];
    const uint16_t *x;
    uint16_t *y;
    uint16_t fill;
} pad16_job;

/* Output rows [begin, end) (every dimension but the last): the input row's overlap, the fill
 * around it; the row's input offset stepped like an odometer. */
static void pad16_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const pad16_job *j = (const pad16_job *)arg;
    const int32_t last = j->g.rank - 1;
    const int64_t ow = j->g.out_dims[last], iw = j->g.in_dims[last], b = j->g.before[last];
    const int64_t lo = b > 0 ? (b < ow ? b : ow) : 0;
    int64_t hi = b + iw < ow ? b + iw : ow;
    if (hi < lo) hi = lo;
    int64_t idx[KS_MAX_RANK] = {0}, row = (int64_t)begin;
    for (int32_t d = last - 1; d >= 0; d--) {
        idx[d] = row % j->g.out_dims[d];
        row /= j->g.out_dims[d];
    }
    for (size_t it = begin; it < end; it++) {
        if (it > begin)
            for (int32_t d = last - 1; d >= 0; d--) {
                if (++idx[d] < j->g.out_dims[d]) break;
                idx[d] = 0;
            }
        uint16_t *dst = j->y + (int64_t)it * ow;
        int64_t src = 0;
        bool inside = true;
        for (int32_t d = last - 1; d >= 0 && inside; d--) {
            int64_t k = idx[d] - j->g.before[d];
            inside = k >= 0 && k < j->g.in_dims[d];
            src += k * j->in_stride[d];
        }
        if (!inside || hi == lo) {
            fill16(dst, j->fill, ow);
            continue;
        }
        fill16(dst, j->fill, lo);
        copy16(dst + lo, j->x + src + (lo - b), hi - lo);
        fill16(dst + hi, j->fill, ow - hi);
    }
}

static double pad_cost(const ks__kernel_ctx *ctx) {
    ks__vpad_geom g;
    if (!ks__vpad_geom_make_dt(ctx, &g, false, KS_DTYPE_F16)) return -1.0;
    return 1.0 + (double)ks__rt_numel(ctx->out[0]) / 8.0;
}

static ks_status pad_run(ks__kernel_ctx *ctx) {
    pad16_job j;
    if (!ks__vpad_geom_make_dt(ctx, &j.g, true, KS_DTYPE_F16))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "shapes changed after planning");
    int64_t s = 1, rows = 1;
    for (int32_t d = j.g.rank - 1; d >= 0; d--) {
        j.in_stride[d] = s;
        s *= j.g.in_dims[d];
        if (d < j.g.rank - 1) rows *= j.g.out_dims[d];
    }
    j.x = (const uint16_t *)ctx->in[0]->data;
    j.y = (uint16_t *)ctx->out[0]->data;
    j.fill = ks__f32_to_f16(j.g.fill);
    int64_t ow = j.g.out_dims[j.g.rank - 1];
    if (rows == 0 || ow == 0) return KS_STATUS_OK;
    ks__parallel_for(ctx->pool, (size_t)rows, (size_t)(TASK_ELEMS / ow) + 1, pad16_range, &j);
    return KS_STATUS_OK;
}

const ks__impl ks_f16_pad__neonfp16 = {"ks_f16_pad__neonfp16",
                                       KS_OP_PAD,
                                       KS_ISA_NEON | KS_ISA_NEON_FP16,
                                       pad_cost,
                                       noplan,
                                       NULL,
                                       pad_run};
