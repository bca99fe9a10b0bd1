/* Vectorized fp32 RESIZE (nearest and bilinear, NHWC, every coordinate mode of ops.inc).
 * x86/avx512/f32_resize.c includes this file.
 *
 * The per-row and per-column source indices and fractions are computed once at reshape, by the
 * reference's own float arithmetic (vec.c), into the packed area; run only gathers. Nearest is a
 * copy of C floats per pixel, so it is exact; bilinear vectorizes over channels with the four
 * weights formed per pixel and fused multiply-adds (a few ulp from the reference's order).
 */
#include <string.h>

#include "f32_vsimd.h"

static inline void copy_floats(float *dst, const float *src, size_t n) {
    if (n >= 64) {
        memcpy(dst, src, n * sizeof(float));
        return;
    }
    size_t i = 0;
    for (; i + V_N <= n; i += V_N)
        v_store(dst + i, v_load(src + i));
    if (i < n) v_storen(dst + i, v_loadn(src + i, n - i), n - i);
}

typedef struct vresize_job {
    ks__vresize_tab t;
    const float *x;
    float *y;
} vresize_job;

static void vresize_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const vresize_job *j = (const vresize_job *)arg;
    const ks__vresize_tab *t = &j->t;
    const int64_t c = t->c;
    const size_t cn = (size_t)c;
    for (size_t it = begin; it < end; it++) {
        int64_t n = (int64_t)it / t->oh, oy = (int64_t)it % t->oh;
        float *dst = j->y + (size_t)it * (size_t)(t->ow * c);
        const float *r0 = j->x + (n * t->ih + t->y0[oy]) * t->iw * c;
        if (t->mode == 0) {
            for (int64_t ox = 0; ox < t->ow; ox++, dst += c)
                copy_floats(dst, r0 + t->x0[ox] * c, cn);
            continue;
        }
        const float *r1 = j->x + (n * t->ih + t->y1[oy]) * t->iw * c;
        const float dy = t->fy[oy];
        for (int64_t ox = 0; ox < t->ow; ox++, dst += c) {
            const float dx = t->fx[ox];
            const vf w00 = v_set1((1 - dy) * (1 - dx)), w10 = v_set1(dy * (1 - dx));
            const vf w01 = v_set1((1 - dy) * dx), w11 = v_set1(dy * dx);
            const float *p00 = r0 + t->x0[ox] * c, *p01 = r0 + t->x1[ox] * c;
            const float *p10 = r1 + t->x0[ox] * c, *p11 = r1 + t->x1[ox] * c;
            size_t i = 0;
            for (; i + V_N <= cn; i += V_N) {
                vf v = v_mul(v_load(p00 + i), w00);
                v = v_fmadd(v_load(p10 + i), w10, v);
                v = v_fmadd(v_load(p01 + i), w01, v);
                v = v_fmadd(v_load(p11 + i), w11, v);
                v_store(dst + i, v);
            }
            if (i < cn) {
                size_t k = cn - i;
                vf v = v_mul(v_loadn(p00 + i, k), w00);
                v = v_fmadd(v_loadn(p10 + i, k), w10, v);
                v = v_fmadd(v_loadn(p01 + i, k), w01, v);
                v = v_fmadd(v_loadn(p11 + i, k), w11, v);
                v_storen(dst + i, v, k);
            }
        }
    }
}

static ks_status vresize_run(ks__kernel_ctx *ctx) {
    vresize_job j;
    if (!ctx->packed || !ks__vresize_supported(ctx))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "resize run without its tables");
    ks__vresize_view(ctx, &j.t);
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    if (j.t.ih != x->dims[1] || j.t.iw != x->dims[2] || j.t.oh != y->dims[1] ||
        j.t.ow != y->dims[2] || j.t.c != x->dims[3] || j.t.n != x->dims[0])
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "shapes changed after planning");
    if (j.t.c == 0 || j.t.n == 0) return KS_STATUS_OK;
    j.x = (const float *)x->data;
    j.y = (float *)y->data;
    size_t grain = (size_t)(V_MIN_PARALLEL / (j.t.ow * j.t.c)) + 1;
    ks__parallel_for(ctx->pool, (size_t)(j.t.n * j.t.oh), grain, vresize_range, &j);
    return KS_STATUS_OK;
}

static double vresize_cost(const ks__kernel_ctx *ctx) {
    if (!ks__vresize_supported(ctx)) return -1.0;
    double n = (double)ks__rt_numel(ctx->out[0]);
    return 1.0 + (ctx->node->ip[0] == 1 ? 4.0 : 1.0) * n / V_N;
}

static ks_status vresize_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    *packed_bytes_out = ks__vresize_packed_bytes(ctx);
    return KS_STATUS_OK;
}

const ks__impl V_SYM(vresize) = {V_NAME(vresize), KS_OP_RESIZE,     V_ISA,      vresize_cost,
                                 vresize_plan,    ks__vresize_pack, vresize_run};
