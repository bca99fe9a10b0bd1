/* Quantized max pooling: the node description shared by the AVX2 and AVX-512 kernels
 * (q8_pool.h). Portable C: it only reads the node and its tensors. */
#include "q8_pool.h"

#include <math.h>
#include <string.h>

#include "ref/quant_util.h"

static int64_t lead_pad(int32_t mode, int64_t explicit_lo, int64_t in, int64_t out, int64_t k,
                        int64_t stride) {
    if (mode == KS_PAD_EXPLICIT) return explicit_lo;
    if (mode == KS_PAD_VALID) return 0;
    int64_t total = (out - 1) * stride + k - in;
    if (total < 0) total = 0;
    return mode == KS_PAD_SAME_UPPER ? total / 2 : total - total / 2;
}

static int same_q8(const ks__rt_tensor *x, const ks__rt_tensor *y) {
    if (!x || !y || (x->dtype != KS_DTYPE_U8 && x->dtype != KS_DTYPE_I8) || y->dtype != x->dtype)
        return 0;
    if (!x->quant || !y->quant || x->quant->count != 1 || y->quant->count != 1 ||
        !x->quant->scales || !y->quant->scales || !x->quant->zero_points || !y->quant->zero_points)
        return 0;
    float s = x->quant->scales[0];
    int32_t zp = x->quant->zero_points[0];
    int32_t lo = x->dtype == KS_DTYPE_U8 ? 0 : -128, hi = x->dtype == KS_DTYPE_U8 ? 255 : 127;
    return s > 0.0f && isfinite(s) && zp >= lo && zp <= hi && y->quant->scales[0] == s &&
           y->quant->zero_points[0] == zp;
}

int ks__q8_pool_describe(const ks__kernel_ctx *ctx, ks__q8_pool *g) {
    memset(g, 0, sizeof(*g));
    const ks__node *nd = ctx->node;
    if (nd->op != KS_OP_POOL2D || ctx->num_inputs != 1 || ctx->num_outputs != 1) return -1;
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    if (!same_q8(x, y) || x->rank != 4 || y->rank != 4) return -1;
    const int32_t *ip = nd->ip;
    if (ip[9] != 0) return -1; /* max only */
    int32_t act = ip[11];
    if (act != KS_ACT_NONE && act != KS_ACT_RELU && act != KS_ACT_RELU6 &&
        act != KS_ACT_RELU_N1_TO_1)
        return -1;
    g->n = x->dims[0], g->ih = x->dims[1], g->iw = x->dims[2], g->c = x->dims[3];
    g->oh = y->dims[1], g->ow = y->dims[2];
    if (g->n < 1 || g->ih < 1 || g->iw < 1 || g->c < 1 || g->oh < 1 || g->ow < 1 ||
        y->dims[0] != g->n || y->dims[3] != g->c)
        return -1;
    int32_t mode = ip[8];
    if (ip[0] == 0 && ip[1] == 0) {
        g->kh = g->ih, g->kw = g->iw, g->sh = 1, g->sw = 1;
        mode = KS_PAD_VALID;
    } else {
        g->kh = ip[0], g->kw = ip[1];
        g->sh = ip[2] ? ip[2] : 1, g->sw = ip[3] ? ip[3] : 1;
    }
    if (g->kh < 1 || g->kw < 1 || g->sh < 1 || g->sw < 1 || mode < 0 || mode >= KS_PAD_MODE_COUNT ||
        g->kh > (1 << 20) || g->kw > (1 << 20))
        return -1;
    if (mode == KS_PAD_EXPLICIT && (ip[4] < 0 || ip[5] < 0)) return -1;
    g->pt = lead_pad(mode, ip[4], g->ih, g->oh, g->kh, g->sh);
    g->pl = lead_pad(mode, ip[5], g->iw, g->ow, g->kw, g->sw);
    g->is_i8 = x->dtype == KS_DTYPE_I8;
    int32_t zp = y->quant->zero_points[0];
    ks__quant_act_range(act, y->quant->scales[0], zp, y->dtype, &g->lo, &g->hi);
    g->empty = zp < g->lo ? g->lo : (zp > g->hi ? g->hi : zp);
    g->x = (const uint8_t *)x->data;
    g->y = (uint8_t *)y->data;
    return 0;
}
