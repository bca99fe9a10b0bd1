/* fp32 CONCAT and constant PAD as wide copies. x86/avx512/f32_copy.c includes this file.
 *
 * Both are pure data movement (bitwise equal to the reference); concat applies its fused
 * activation to each block right after copying it, while it is in cache. Work is split into
 * blocks of at most V_BLOCK * 4 elements so large single chunks still spread over threads.
 */
#include <string.h>

#include "f32_vsimd.h"

#define COPY_BLOCK (V_BLOCK * 4)

static inline void copy_floats(float *dst, const float *src, size_t n) {
    if (n >= 64) {
        memcpy(dst, src, n * sizeof(float));
        return;
    }
    size_t i = 0;
    for (; i + V_N <= n; i += V_N)
        v_store(dst + i, v_load(src + i));
    if (i == n) return;
    if (n >= V_N) /* the last vector again, overlapping: masked stores are slow on AMD cores */
        v_store(dst + n - V_N, v_load(src + n - V_N));
    else
        v_storen(dst + i, v_loadn(src + i, n - i), n - i);
}

static inline void fill_floats(float *dst, float value, size_t n) {
    const vf v = v_set1(value);
    size_t i = 0;
    for (; i + V_N <= n; i += V_N)
        v_store(dst + i, v);
    if (i < n) v_storen(dst + i, v, n - i);
}

static ks_status vcopy_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    (void)ctx;
    *packed_bytes_out = 0;
    return KS_STATUS_OK;
}

/* ---- CONCAT ---- */

typedef struct vconcat_job {
    ks__vconcat_geom g;
    const float *src[KS__VCONCAT_MAX_INPUTS];
    int64_t num_blocks[KS__VCONCAT_MAX_INPUTS];
    uint32_t num_inputs;
    int64_t blocks_per_outer;
    float *y;
    int32_t act;
    float alpha;
} vconcat_job;

static void vconcat_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const vconcat_job *j = (const vconcat_job *)arg;
    for (size_t it = begin; it < end; it++) {
        int64_t o = (int64_t)it / j->blocks_per_outer, r = (int64_t)it % j->blocks_per_outer;
        uint32_t i = 0;
        while (r >= j->num_blocks[i])
            r -= j->num_blocks[i++];
        int64_t c0 = r * COPY_BLOCK;
        int64_t c1 = c0 + COPY_BLOCK < j->g.chunk[i] ? c0 + COPY_BLOCK : j->g.chunk[i];
        float *dst = j->y + o * j->g.row + j->g.offset[i] + c0;
        copy_floats(dst, j->src[i] + o * j->g.chunk[i] + c0, (size_t)(c1 - c0));
        if (j->act != KS_ACT_NONE) v_act_inplace(dst, (size_t)(c1 - c0), j->act, j->alpha);
    }
}

static ks_status vconcat_run(ks__kernel_ctx *ctx) {
    vconcat_job j;
    if (!ks__vconcat_geom_make(ctx, &j.g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "shapes changed after planning");
    j.num_inputs = ctx->num_inputs;
    j.blocks_per_outer = 0;
    for (uint32_t i = 0; i < j.num_inputs; i++) {
        j.src[i] = (const float *)ctx->in[i]->data;
        j.num_blocks[i] = (j.g.chunk[i] + COPY_BLOCK - 1) / COPY_BLOCK;
        j.blocks_per_outer += j.num_blocks[i];
    }
    if (j.blocks_per_outer == 0 || j.g.outer == 0) return KS_STATUS_OK;
    j.y = (float *)ctx->out[0]->data;
    j.act = ctx->node->ip[1];
    j.alpha = ctx->node->fp[0];
    int64_t avg = j.g.row / j.blocks_per_outer + 1;
    ks__parallel_for(ctx->pool, (size_t)(j.g.outer * j.blocks_per_outer),
                     (size_t)(V_MIN_PARALLEL / avg) + 1, vconcat_range, &j);
    return KS_STATUS_OK;
}

static double vconcat_cost(const ks__kernel_ctx *ctx) {
    ks__vconcat_geom g;
    int32_t act = ctx->node->ip[1];
    if (act < 0 || act >= KS_ACT_COUNT || !ks__vconcat_geom_make(ctx, &g)) return -1.0;
    return 1.0 + (double)(g.outer * g.row) / V_N;
}

const ks__impl V_SYM(vconcat) = {V_NAME(vconcat), KS_OP_CONCAT, V_ISA,      vconcat_cost,
                                 vcopy_plan,      NULL,         vconcat_run};

/* ---- PAD (constant) ---- */

typedef struct vpad_job {
    ks__vpad_geom g;
    int64_t in_stride[KS_MAX_RANK];
    const float *x;
    float *y;
} vpad_job;

static void vpad_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const vpad_job *j = (const vpad_job *)arg;
    const int32_t last = j->g.rank - 1;
    const int64_t ow = j->g.out_dims[last], iw = j->g.in_dims[last], b = j->g.before[last];
    /* output columns [lo, hi) come from the input row; the rest is fill */
    const int64_t lo = b > 0 ? (b < ow ? b : ow) : 0;
    int64_t hi = b + iw < ow ? b + iw : ow;
    if (hi < lo) hi = lo;
    bool rows_only = hi > lo; /* every row inside: only the last dimension is padded */
    for (int32_t d = 0; d < last && rows_only; d++)
        rows_only = j->g.before[d] == 0 && j->g.in_dims[d] == j->g.out_dims[d];
    if (rows_only && lo == 0 && b == 0 && hi == iw && iw >= V_N) {
        /* a channel pad at the end (BlazeFace's 24 -> 28 channels before a residual): whole
         * vectors only, since masked stores cost ~10x a plain one on AMD cores. The row's last
         * input vector is re-read at iw - V_N (overlapping), and the fill runs in whole vectors
         * past the row end into the next row, whose copy then overwrites it; only the range's
         * last row (the next one may belong to another thread) is filled exactly. */
        const vf fill = v_set1(j->g.fill);
        for (size_t it = begin; it < end; it++) {
            float *dst = j->y + (int64_t)it * ow;
            const float *src = j->x + (int64_t)it * iw;
            int64_t i = 0;
            for (; i + V_N <= iw; i += V_N)
                v_store(dst + i, v_load(src + i));
            if (i < iw) v_store(dst + iw - V_N, v_load(src + iw - V_N));
            if (it + 1 == end) {
                fill_floats(dst + iw, j->g.fill, (size_t)(ow - iw));
                break;
            }
            for (i = iw; i < ow; i += V_N)
                v_store(dst + i, fill);
        }
        return;
    }
    if (rows_only) { /* any other pad of the last dimension alone */
        for (size_t it = begin; it < end; it++) {
            float *dst = j->y + (int64_t)it * ow;
            fill_floats(dst, j->g.fill, (size_t)lo);
            copy_floats(dst + lo, j->x + (int64_t)it * iw + (lo - b), (size_t)(hi - lo));
            fill_floats(dst + hi, j->g.fill, (size_t)(ow - hi));
        }
        return;
    }
    /* the output index of row `begin` (one division per dimension), then stepped like an
     * odometer instead of two 64-bit divisions per row and dimension (tens of cycles each for
     * rows of a few dozen floats) */
    int64_t idx[KS_MAX_RANK] = {0};
    {
        int64_t row = (int64_t)begin;
        for (int32_t d = last - 1; d >= 0; d--) {
            idx[d] = row % j->g.out_dims[d];
            row /= j->g.out_dims[d];
        }
    }
    for (size_t it = begin; it < end; it++) {
        if (it > begin)
            for (int32_t d = last - 1; d >= 0; d--) {
                if (++idx[d] < j->g.out_dims[d]) break;
                idx[d] = 0;
            }
        float *dst = j->y + (int64_t)it * ow;
        int64_t src = 0;
        bool inside = true;
        for (int32_t d = last - 1; d >= 0 && inside; d--) {
            int64_t k = idx[d] - j->g.before[d];
            inside = k >= 0 && k < j->g.in_dims[d];
            src += k * j->in_stride[d];
        }
        if (!inside || hi == lo) {
            fill_floats(dst, j->g.fill, (size_t)ow);
            continue;
        }
        fill_floats(dst, j->g.fill, (size_t)lo);
        copy_floats(dst + lo, j->x + src + (lo - b), (size_t)(hi - lo));
        fill_floats(dst + hi, j->g.fill, (size_t)(ow - hi));
    }
}

static ks_status vpad_run(ks__kernel_ctx *ctx) {
    vpad_job j;
    if (!ks__vpad_geom_make(ctx, &j.g, true))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "shapes changed after planning");
    int64_t s = 1, rows = 1;
    for (int32_t d = j.g.rank - 1; d >= 0; d--) {
        j.in_stride[d] = s;
        s *= j.g.in_dims[d];
        if (d < j.g.rank - 1) rows *= j.g.out_dims[d];
    }
    int64_t ow = j.g.out_dims[j.g.rank - 1];
    if (rows == 0 || ow == 0) return KS_STATUS_OK;
    j.x = (const float *)ctx->in[0]->data;
    j.y = (float *)ctx->out[0]->data;
    ks__parallel_for(ctx->pool, (size_t)rows, (size_t)(V_MIN_PARALLEL / ow) + 1, vpad_range, &j);
    return KS_STATUS_OK;
}

static double vpad_cost(const ks__kernel_ctx *ctx) {
    ks__vpad_geom g;
    if (!ks__vpad_geom_make(ctx, &g, false)) return -1.0;
    return 1.0 + (double)ks__rt_numel(ctx->out[0]) / V_N;
}

const ks__impl V_SYM(vpad) = {V_NAME(vpad), KS_OP_PAD, V_ISA,   vpad_cost,
                              vcopy_plan,   NULL,      vpad_run};
