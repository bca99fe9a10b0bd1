/* Vectorized fp32 REDUCE mean over H and W of NHWC data (global average pooling). x86/avx512/
 * f32_vreduce.c includes this file.
 *
 * Each channel is summed in double in the reference's order (h, then w) and divided by H*W in
 * double, so the result is bitwise the reference's. Work items are (batch, block of channels);
 * a block spans 4 vectors so its 8 double accumulators stay in registers.
 */
#include <math.h>
#include <string.h>

#include "f32_vsimd.h"

#define GAP_VECS 4
#define GAP_BLOCK (GAP_VECS * V_N)

typedef struct vgap_job {
    const float *x;
    float *y;
    int64_t hw, c, num_blocks;
} vgap_job;

static void vgap_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const vgap_job *j = (const vgap_job *)arg;
    for (size_t it = begin; it < end; it++) {
        int64_t n = (int64_t)it / j->num_blocks, c0 = ((int64_t)it % j->num_blocks) * GAP_BLOCK;
        size_t cw = (size_t)(j->c - c0 < GAP_BLOCK ? j->c - c0 : GAP_BLOCK);
        size_t full = cw / V_N, rem = cw % V_N;
        const float *base = j->x + n * j->hw * j->c + c0;
        vd acc[2 * GAP_VECS];
        for (int k = 0; k < 2 * GAP_VECS; k++)
            acc[k] = v_dzero();
        for (int64_t p = 0; p < j->hw; p++) {
            const float *src = base + p * j->c;
            for (size_t v = 0; v < full; v++) {
                vf t = v_load(src + v * V_N);
                acc[2 * v] = v_dadd(acc[2 * v], v_dlo(t));
                acc[2 * v + 1] = v_dadd(acc[2 * v + 1], v_dhi(t));
            }
            if (rem) {
                vf t = v_loadn(src + full * V_N, rem);
                acc[2 * full] = v_dadd(acc[2 * full], v_dlo(t));
                acc[2 * full + 1] = v_dadd(acc[2 * full + 1], v_dhi(t));
            }
        }
        double sums[2 * GAP_VECS * (V_N / 2)];
        memcpy(sums, acc, sizeof(sums));
        float *dst = j->y + n * j->c + c0;
        for (size_t k = 0; k < cw; k++)
            dst[k] = j->hw > 0 ? (float)(sums[k] / (double)j->hw) : NAN;
    }
}

static ks_status vgap_run(ks__kernel_ctx *ctx) {
    if (!ks__vreduce_is_hw_mean(ctx))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "shapes changed after planning");
    const ks__rt_tensor *x = ctx->in[0];
    vgap_job j = {(const float *)x->data, (float *)ctx->out[0]->data, x->dims[1] * x->dims[2],
                  x->dims[3], (x->dims[3] + GAP_BLOCK - 1) / GAP_BLOCK};
    size_t items = (size_t)(x->dims[0] * j.num_blocks);
    size_t grain = (size_t)(V_MIN_PARALLEL / (j.hw * GAP_BLOCK + 1)) + 1;
    ks__parallel_for(ctx->pool, items, grain, vgap_range, &j);
    return KS_STATUS_OK;
}

static double vgap_cost(const ks__kernel_ctx *ctx) {
    if (!ks__vreduce_is_hw_mean(ctx)) return -1.0;
    return 1.0 + 2.0 * (double)ks__rt_numel(ctx->in[0]) / V_N;
}

static ks_status vgap_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    (void)ctx;
    *packed_bytes_out = 0;
    return KS_STATUS_OK;
}

const ks__impl V_SYM(vmean_hw) = {V_NAME(vmean_hw), KS_OP_REDUCE, V_ISA,   vgap_cost,
                                  vgap_plan,        NULL,         vgap_run};
