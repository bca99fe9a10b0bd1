/* Portable fast paths for three ops the reference runs element by element (through a dtype
 * switch and an index computed per element), with the reference's exact results:
 *   - DEPTH_TO_SPACE / SPACE_TO_DEPTH (NHWC, any dtype: pure data movement): per output pixel,
 *     one contiguous copy of its channels (DCR, TFLite's order) or a strided one (CRD, ONNX's).
 *     pose_detection's three DEPTH_TO_SPACE took 0.69 ms of its 13 ms on the reference.
 *   - CAST from U8 / I8 to F32 (a camera frame into a float graph: movenet's first node, 0.6 ms
 *     for 192x192x3 on the reference); the values are exact in float.
 * Registered like q8_lut.c: AVX2 on x86, NEON on AArch64 (portable C, but never under
 * KS_FORCE_SCALAR, which keeps the reference kernels).
 */
#include <string.h>

#include "impl.h"

/* The kernels here are registered for x86-64 and AArch64 only (impls_quant.inc); on other
 * targets (the WebAssembly build of the editor) this file compiles to nothing. */
#if defined(__x86_64__) || defined(__aarch64__)

typedef struct space_job {
    const uint8_t *x;
    uint8_t *y;
    size_t es;        /* bytes per element */
    int64_t bs, h, w; /* block size; the depth side's spatial size (x of D2S, y of S2D) */
    int64_t oc, ic;   /* channels of the space side and of the depth side (ic = oc * bs^2) */
    int crd, d2s;
} space_job;

static int describe(const ks__kernel_ctx *ctx, space_job *j) {
    memset(j, 0, sizeof(*j));
    if (ctx->num_inputs < 1 || ctx->num_outputs != 1) return -1;
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    if (!x || !y || x->rank != 4 || y->rank != 4 || x->dtype != y->dtype) return -1;
    j->d2s = ctx->node->op == KS_OP_DEPTH_TO_SPACE;
    j->bs = ctx->node->ip[0];
    j->crd = j->d2s && ctx->node->ip[1] == 1;
    j->es = ks_dtype_size(x->dtype);
    if (j->bs < 1 || j->es == 0 || j->es > 8) return -1;
    const ks__rt_tensor *deep = j->d2s ? x : y, *wide = j->d2s ? y : x;
    j->h = deep->dims[1], j->w = deep->dims[2], j->ic = deep->dims[3];
    j->oc = wide->dims[3];
    if (deep->dims[0] != wide->dims[0] || wide->dims[1] != j->h * j->bs ||
        wide->dims[2] != j->w * j->bs || j->ic != j->oc * j->bs * j->bs)
        return -1;
    j->x = (const uint8_t *)x->data;
    j->y = (uint8_t *)y->data;
    return 0;
}

/* n elements of es bytes from src (element stride `stride`) to dst (contiguous), or the
 * reverse when `scatter`. */
static void strided(uint8_t *dst, const uint8_t *src, int64_t n, int64_t stride, size_t es,
                    int scatter) {
    for (int64_t k = 0; k < n; k++) {
        if (scatter)
            memcpy(dst + (size_t)(k * stride) * es, src + (size_t)k * es, es);
        else
            memcpy(dst + (size_t)k * es, src + (size_t)(k * stride) * es, es);
    }
}

/* Rows [begin, end) of the space side (batch * h * bs of them). */
static void space_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const space_job *j = (const space_job *)arg;
    (void)thread;
    const int64_t bs = j->bs, ow = j->w * bs;
    const size_t es = j->es;
    for (size_t r = begin; r < end; r++) {
        int64_t b = (int64_t)r / (j->h * bs), oy = (int64_t)r % (j->h * bs);
        int64_t iy = oy / bs, i = oy % bs;
        for (int64_t ox = 0; ox < ow; ox++) {
            int64_t ix = ox / bs, jj = ox % bs;
            /* DCR: the block offset is the slow part of the depth channel; CRD: the fast one */
            int64_t ch0 = j->crd ? i * bs + jj : (i * bs + jj) * j->oc;
            int64_t stride = j->crd ? bs * bs : 1;
            size_t deep = (size_t)(((b * j->h + iy) * j->w + ix) * j->ic + ch0) * es;
            size_t wide = (size_t)(((b * j->h * bs + oy) * ow + ox) * j->oc) * es;
            if (j->d2s) {
                if (stride == 1)
                    memcpy(j->y + wide, j->x + deep, (size_t)j->oc * es);
                else
                    strided(j->y + wide, j->x + deep, j->oc, stride, es, 0);
            } else {
                memcpy(j->y + deep, j->x + wide, (size_t)j->oc * es); /* S2D is DCR */
            }
        }
    }
}

static double space_cost(const ks__kernel_ctx *ctx) {
    space_job j;
    if (describe(ctx, &j)) return -1.0;
    return (double)ks__rt_numel(ctx->out[0]) / 16.0;
}

static ks_status no_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    (void)ctx;
    *packed_bytes_out = 0;
    return KS_STATUS_OK;
}

static ks_status space_run(ks__kernel_ctx *ctx) {
    space_job j;
    if (describe(ctx, &j))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "space copy cannot run this node");
    size_t rows = (size_t)(ctx->in[0]->dims[0] * j.h * j.bs);
    size_t grain = (size_t)(16384 / (j.w * j.bs * j.oc + 1)) + 1;
    ks__parallel_for(ctx->pool, rows, grain, space_range, &j);
    return KS_STATUS_OK;
}

/* ---- CAST U8 / I8 -> F32 ---- */

static int cast_ok(const ks__kernel_ctx *ctx) {
    if (ctx->num_inputs < 1 || ctx->num_outputs != 1) return 0;
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    return x && y && (x->dtype == KS_DTYPE_U8 || x->dtype == KS_DTYPE_I8) &&
           y->dtype == KS_DTYPE_F32 && ks__rt_numel(x) == ks__rt_numel(y);
}

typedef struct cast_job {
    const uint8_t *x;
    float *y;
    int sign;
} cast_job;

static void cast_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const cast_job *j = (const cast_job *)arg;
    (void)thread;
    if (j->sign)
        for (size_t i = begin; i < end; i++)
            j->y[i] = (float)(int8_t)j->x[i];
    else
        for (size_t i = begin; i < end; i++)
            j->y[i] = (float)j->x[i];
}

static double cast_cost(const ks__kernel_ctx *ctx) {
    return cast_ok(ctx) ? (double)ks__rt_numel(ctx->out[0]) / 16.0 : -1.0;
}

static ks_status cast_run(ks__kernel_ctx *ctx) {
    if (!cast_ok(ctx))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "cast cannot run this node");
    cast_job j = {(const uint8_t *)ctx->in[0]->data, (float *)ctx->out[0]->data,
                  ctx->in[0]->dtype == KS_DTYPE_I8};
    ks__parallel_for(ctx->pool, (size_t)ks__rt_numel(ctx->out[0]), 16384, cast_range, &j);
    return KS_STATUS_OK;
}

#if defined(__x86_64__)
#define SPACE_IMPL(sym, op, cost, run)                                                             \
    const ks__impl sym##__avx2 = {#sym "__avx2", op, KS_ISA_AVX2, cost, no_plan, NULL, run};
#elif defined(__aarch64__)
#define SPACE_IMPL(sym, op, cost, run)                                                             \
    const ks__impl sym##__neon = {#sym "__neon", op, KS_ISA_NEON, cost, no_plan, NULL, run};
#endif

#ifdef SPACE_IMPL
SPACE_IMPL(ks_x_depth_to_space, KS_OP_DEPTH_TO_SPACE, space_cost, space_run)
SPACE_IMPL(ks_x_space_to_depth, KS_OP_SPACE_TO_DEPTH, space_cost, space_run)
SPACE_IMPL(ks_x8_cast_f32, KS_OP_CAST, cast_cost, cast_run)
#endif

#endif /* x86-64 or AArch64 */
