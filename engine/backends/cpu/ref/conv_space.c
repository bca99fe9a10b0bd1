/* Reference DEPTH_TO_SPACE, SPACE_TO_DEPTH, SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND (NHWC).
 * Pure data movement, so every dtype works and quantization passes through unchanged; the only
 * value these kernels create is SPACE_TO_BATCH_ND's padding, which is the output zero point for
 * quantized tensors (as in TFLite) and 0 otherwise. */
#include <string.h>

#include "conv_internal.h"
#include "../op_enabled.h"

/* ---- DEPTH_TO_SPACE / SPACE_TO_DEPTH ---- */

static ks_status d2s_run(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *x = ctx->in[0];
    ks__rt_tensor *y = ctx->out[0];
    int64_t bs = ctx->node->ip[0];
    int crd = ctx->node->ip[1] == 1;
    int64_t n = x->dims[0], h = x->dims[1], w = x->dims[2], ic = x->dims[3], oc = ic / (bs * bs);
    size_t es = ks_dtype_size(x->dtype);
    const uint8_t *xb = (const uint8_t *)x->data;
    uint8_t *yb = (uint8_t *)y->data;
    for (int64_t b = 0; b < n; b++)
        for (int64_t oy = 0; oy < h * bs; oy++)
            for (int64_t ox = 0; ox < w * bs; ox++)
                for (int64_t c = 0; c < oc; c++) {
                    int64_t i = oy % bs, j = ox % bs;
                    /* DCR (TF/TFLite): the block offset is the slow part of the channel;
                     * CRD (ONNX): the output channel is. */
                    int64_t ch = crd ? (c * bs + i) * bs + j : (i * bs + j) * oc + c;
                    int64_t xi = ((b * h + oy / bs) * w + ox / bs) * ic + ch;
                    int64_t yi = ((b * h * bs + oy) * w * bs + ox) * oc + c;
                    memcpy(yb + (size_t)yi * es, xb + (size_t)xi * es, es);
                }
    return KS_STATUS_OK;
}

static ks_status s2d_run(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *x = ctx->in[0];
    ks__rt_tensor *y = ctx->out[0];
    int64_t bs = ctx->node->ip[0];
    int64_t n = x->dims[0], h = x->dims[1], w = x->dims[2], c = x->dims[3];
    int64_t oh = h / bs, ow = w / bs, oc = c * bs * bs;
    size_t es = ks_dtype_size(x->dtype);
    const uint8_t *xb = (const uint8_t *)x->data;
    uint8_t *yb = (uint8_t *)y->data;
    for (int64_t b = 0; b < n; b++)
        for (int64_t iy = 0; iy < h; iy++)
            for (int64_t ix = 0; ix < w; ix++)
                for (int64_t ch = 0; ch < c; ch++) {
                    int64_t oci = ((iy % bs) * bs + ix % bs) * c + ch;
                    int64_t yi = ((b * oh + iy / bs) * ow + ix / bs) * oc + oci;
                    int64_t xi = ((b * h + iy) * w + ix) * c + ch;
                    memcpy(yb + (size_t)yi * es, xb + (size_t)xi * es, es);
                }
    return KS_STATUS_OK;
}

/* ---- SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND ----
 * x: [B, S_1..S_M, rest...], block_shape: [M], pads/crops: [M, 2]. The output batch index is
 * block_offset * B + b, where block_offset enumerates the M block positions row-major. */

/* Walks every element of the batched-side tensor `bt` ([B*prod, S'..., rest]) and maps it to
 * the spatial-side tensor `spt` ([B, S..., rest]) position; `to_batch` picks the copy direction.
 * Batched-side positions that fall into the padding / crop are padded (s2b) or skipped (b2s). */
static void nd_move(const ks__batch_space_geom *g, ks__rt_tensor *bt, ks__rt_tensor *spt,
                    int to_batch) {
    size_t es = ks_dtype_size(bt->dtype);
    int32_t rank = bt->rank;
    int64_t inner = 1;
    for (int32_t d = g->m + 1; d < rank; d++)
        inner *= bt->dims[d];
    int64_t batch = spt->dims[0];
    int64_t outer = bt->dims[0];
    for (int32_t d = 1; d <= g->m; d++)
        outer *= bt->dims[d];
    /* Padding value for s2b: quantized tensors pad with their zero point. */
    int32_t pad_q = ks__conv_is_quant(bt) ? ks__conv_qzp(bt, 0) : 0;
    for (int64_t o = 0; o < outer; o++) {
        /* Unravel o over [B*prod, S'_1..S'_M]. */
        int64_t rem = o, pos[KS_MAX_RANK];
        for (int32_t d = g->m; d >= 1; d--) {
            pos[d] = rem % bt->dims[d];
            rem /= bt->dims[d];
        }
        int64_t ob = rem; /* batched-side batch index */
        int64_t b = ob % batch, off = ob / batch;
        int64_t si = b, inside = 1;
        /* block offsets: row-major over the M block dims, last dim fastest */
        int64_t offs[KS_MAX_RANK];
        for (int32_t d = g->m - 1; d >= 0; d--) {
            offs[d] = off % g->block[d];
            off /= g->block[d];
        }
        for (int32_t d = 0; d < g->m; d++) {
            int64_t sp = pos[d + 1] * g->block[d] + offs[d] - g->lo[d];
            if (sp < 0 || sp >= spt->dims[d + 1]) inside = 0;
            si = si * spt->dims[d + 1] + sp;
        }
        uint8_t *bptr = (uint8_t *)bt->data + (size_t)(o * inner) * es;
        if (!inside) {
            if (to_batch) {
                if (pad_q != 0) {
                    for (int64_t k = 0; k < inner; k++)
                        ks__conv_store_q(bt, o * inner + k, pad_q);
                } else {
                    memset(bptr, 0, (size_t)inner * es);
                }
            }
            continue;
        }
        uint8_t *sptr = (uint8_t *)spt->data + (size_t)(si * inner) * es;
        if (to_batch)
            memcpy(bptr, sptr, (size_t)inner * es);
        else
            memcpy(sptr, bptr, (size_t)inner * es);
    }
}

static ks_status s2b_run(ks__kernel_ctx *ctx) {
    ks__batch_space_geom g;
    ks_status st = ks__batch_space_geometry(ctx, &g);
    if (st) return st;
    nd_move(&g, ctx->out[0], ctx->in[0], 1);
    return KS_STATUS_OK;
}

static ks_status b2s_run(ks__kernel_ctx *ctx) {
    ks__batch_space_geom g;
    ks_status st = ks__batch_space_geometry(ctx, &g);
    if (st) return st;
    nd_move(&g, ctx->in[0], ctx->out[0], 0);
    return KS_STATUS_OK;
}

void ks__ref_register_conv_space(ks__kernel_table *t) {
    KS__REF_REG(t, DEPTH_TO_SPACE, NULL, d2s_run);
    KS__REF_REG(t, SPACE_TO_DEPTH, NULL, s2d_run);
    KS__REF_REG(t, SPACE_TO_BATCH_ND, NULL, s2b_run);
    KS__REF_REG(t, BATCH_TO_SPACE_ND, NULL, b2s_run);
}
