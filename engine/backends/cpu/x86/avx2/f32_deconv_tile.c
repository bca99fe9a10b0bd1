/* fp32 transpose convolution whose kernel equals its stride (KH == stride_h, KW == stride_w, no
 * padding): every input pixel owns its own KH x KW block of output pixels, so the layer is one
 * small GEMM per input pixel, out[(a, b, o)] = sum_c x[c] * w[o, a, b, c] + bias[o], written
 * straight into the block. Segmentation heads end this way: selfie segmentation's last layer is
 * a 2x2 stride 2 deconv from 16 channels to 1, where the general phase kernel
 * (ks_f32_deconv__*_8x16) keeps 1 of its 16 output lanes busy and ran at 3.4 GFLOP/s.
 *
 * Here the KH * KW * Co outputs of a pixel share one vector (at most V_N of them), Ci broadcast
 * FMAs per pixel, four pixels in flight for latency. The products are summed from zero in
 * channel order and the bias is added after them, then the activation on the finished rows.
 * x86/avx512/f32_deconv_tile.c includes this file (16 lanes). */
#include <string.h>

#include "f32_vsimd.h"

#define TILE_PX 4

typedef struct tile_geom {
    int64_t n, ih, iw, ci, co, kh, kw; /* output: ih * kh rows, iw * kw columns */
    int32_t act;
    float alpha;
} tile_geom;

static bool tile_geom_get(const ks__kernel_ctx *ctx, tile_geom *g) {
    const ks__node *nd = ctx->node;
    if (nd->op != KS_OP_CONV2D_TRANSPOSE || ctx->num_inputs < 2 || ctx->num_outputs < 1)
        return false;
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1], *y = ctx->out[0];
    const ks__rt_tensor *b = ctx->num_inputs > 2 ? ctx->in[2] : NULL;
    if (!x || !w || !y || x->dtype != KS_DTYPE_F32 || y->dtype != KS_DTYPE_F32 || x->rank != 4 ||
        y->rank != 4 || w->rank != 4 || !w->data || x->quant->count || y->quant->count)
        return false;
    if (w->dtype != KS_DTYPE_F32 && w->dtype != KS_DTYPE_F16) return false;
    if (b && (!b->data || (b->dtype != KS_DTYPE_F32 && b->dtype != KS_DTYPE_F16))) return false;
    const int32_t *ip = nd->ip;
    g->n = x->dims[0], g->ih = x->dims[1], g->iw = x->dims[2], g->ci = x->dims[3];
    g->co = w->dims[0], g->kh = w->dims[1], g->kw = w->dims[2];
    if (w->dims[3] != g->ci || g->ci < 1 || g->co < 1 || g->n < 1 || g->ih < 1 || g->iw < 1)
        return false;
    if (g->co * g->kh * g->kw > V_N || (b && ks__rt_numel(b) != g->co)) return false;
    /* stride == kernel, no padding, no output padding: output exactly ih*kh x iw*kw */
    if (ip[0] != g->kh || ip[1] != g->kw) return false;
    if (ip[6] == KS_PAD_EXPLICIT && (ip[2] || ip[3] || ip[4] || ip[5])) return false;
    if (y->dims[0] != g->n || y->dims[1] != g->ih * g->kh || y->dims[2] != g->iw * g->kw ||
        y->dims[3] != g->co)
        return false;
    g->act = ip[7];
    g->alpha = nd->fp[0];
    return g->act >= KS_ACT_NONE && g->act <= KS_ACT_SILU;
}

static double tile_cost(const ks__kernel_ctx *ctx) {
    tile_geom g;
    if (!tile_geom_get(ctx, &g)) return -1.0;
    /* Ci FMAs per input pixel plus the block stores; comparable with ks__f32_deconv_cost */
    return (double)(g.n * g.ih * g.iw) * (double)(g.ci + 8);
}

/* Packed: bias per output lane (V_N floats), then per input channel c the V_N weights of lanes
 * (a * KW + b) * Co + o, zero beyond KH * KW * Co. */
static size_t tile_packed_floats(const tile_geom *g) {
    return (size_t)V_N * (size_t)(1 + g->ci);
}

static ks_status tile_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    tile_geom g;
    if (!tile_geom_get(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "deconv tile: node not supported");
    *packed_bytes_out = tile_packed_floats(&g) * sizeof(float);
    return KS_STATUS_OK;
}

static ks_status tile_pack(ks__kernel_ctx *ctx) {
    tile_geom g;
    if (!tile_geom_get(ctx, &g) || ctx->packed_bytes < tile_packed_floats(&g) * sizeof(float))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "deconv tile: bad packed size");
    float *p = (float *)ctx->packed;
    memset(p, 0, tile_packed_floats(&g) * sizeof(float));
    const ks__rt_tensor *w = ctx->in[1], *b = ctx->num_inputs > 2 ? ctx->in[2] : NULL;
    for (int64_t a = 0; a < g.kh; a++)
        for (int64_t bb = 0; bb < g.kw; bb++)
            for (int64_t o = 0; o < g.co; o++) {
                size_t lane = (size_t)((a * g.kw + bb) * g.co + o);
                if (b) p[lane] = (float)ks__rt_get_f64(b, o);
                for (int64_t c = 0; c < g.ci; c++) /* w is [Co, KH, KW, Ci] */
                    p[(size_t)V_N * (size_t)(1 + c) + lane] =
                        (float)ks__rt_get_f64(w, ((o * g.kh + a) * g.kw + bb) * g.ci + c);
            }
    return KS_STATUS_OK;
}

typedef struct tile_job {
    const tile_geom *g;
    const float *x, *packed;
    float *y;
} tile_job;

/* Writes the output block of one input pixel: row a gets lanes [a*KW*Co, (a+1)*KW*Co). */
static void store_block(const tile_geom *g, vf v, float *y_block, size_t out_row_floats) {
    float lanes[V_N];
    v_store(lanes, v);
    size_t row_floats = (size_t)(g->kw * g->co);
    for (int64_t a = 0; a < g->kh; a++)
        memcpy(y_block + (size_t)a * out_row_floats, lanes + (size_t)a * row_floats,
               row_floats * sizeof(float));
}

static void tile_rows(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const tile_job *j = (const tile_job *)arg;
    const tile_geom *g = j->g;
    const size_t ci = (size_t)g->ci, iw = (size_t)g->iw;
    const size_t out_row_floats = (size_t)(g->iw * g->kw * g->co);
    const size_t block_floats = (size_t)(g->kw * g->co);
    const vf bias = v_load(j->packed);
    const float *w = j->packed + V_N;
    for (size_t r = begin; r < end; r++) { /* r = batch * ih + input row */
        const float *x = j->x + r * iw * ci;
        float *y = j->y + r * (size_t)g->kh * out_row_floats;
        size_t px = 0;
        for (; px + TILE_PX <= iw; px += TILE_PX) {
            const float *x0 = x + px * ci;
            vf acc0 = v_zero(), acc1 = v_zero(), acc2 = v_zero(), acc3 = v_zero();
            for (size_t c = 0; c < ci; c++) {
                vf wc = v_load(w + c * V_N);
                acc0 = v_fmadd(v_set1(x0[c]), wc, acc0);
                acc1 = v_fmadd(v_set1(x0[ci + c]), wc, acc1);
                acc2 = v_fmadd(v_set1(x0[2 * ci + c]), wc, acc2);
                acc3 = v_fmadd(v_set1(x0[3 * ci + c]), wc, acc3);
            }
            float *yb = y + px * block_floats;
            store_block(g, v_add(acc0, bias), yb, out_row_floats);
            store_block(g, v_add(acc1, bias), yb + block_floats, out_row_floats);
            store_block(g, v_add(acc2, bias), yb + 2 * block_floats, out_row_floats);
            store_block(g, v_add(acc3, bias), yb + 3 * block_floats, out_row_floats);
        }
        for (; px < iw; px++) {
            const float *x0 = x + px * ci;
            vf acc = v_zero();
            for (size_t c = 0; c < ci; c++)
                acc = v_fmadd(v_set1(x0[c]), v_load(w + c * V_N), acc);
            store_block(g, v_add(acc, bias), y + px * block_floats, out_row_floats);
        }
        if (g->act != KS_ACT_NONE)
            v_act_inplace(y, (size_t)g->kh * out_row_floats, g->act, g->alpha);
    }
}

static ks_status tile_run(ks__kernel_ctx *ctx) {
    tile_geom g;
    if (!tile_geom_get(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "shapes changed after planning");
    tile_job j = {&g, (const float *)ctx->in[0]->data, (const float *)ctx->packed,
                  (float *)ctx->out[0]->data};
    size_t rows = (size_t)(g.n * g.ih);
    size_t row_work = (size_t)(g.iw * (g.ci + 8));
    ks__parallel_for(ctx->pool, rows, (size_t)(V_MIN_PARALLEL / (row_work + 1)) + 1, tile_rows, &j);
    return KS_STATUS_OK;
}

const ks__impl V_SYM(deconv_tile) = {
    V_NAME(deconv_tile), KS_OP_CONV2D_TRANSPOSE, V_ISA, tile_cost, tile_plan, tile_pack, tile_run};
