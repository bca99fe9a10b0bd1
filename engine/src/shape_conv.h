/* Shape inference of the conv family (shape_conv.c): CONV2D, CONV2D_TRANSPOSE, POOL2D,
 * FULLY_CONNECTED, MATMUL, RESIZE, DEPTH_TO_SPACE, SPACE_TO_DEPTH, SPACE_TO_BATCH_ND and
 * BATCH_TO_SPACE_ND, and the geometry their kernels share with it. Not a published API.
 *
 * Callers infer through ks__op_infer (shape.h); the ks__infer_* functions are its table's
 * entries. A kernel computes its geometry with the same function inference used, so the two
 * cannot disagree:
 *
 *     ks__conv_geom g;
 *     ks_status st = ks__conv_geometry(ctx, &g);   // validates again; reports into ctx->err
 *     if (st) return st;
 *     ... loops over g.oh, g.ow, g.oc ...
 *
 * The geometry functions read the node's params and its inputs (dims, quantization, the data of
 * shape inputs), write only their outputs and, on failure, ctx->err, and are thread-safe.
 */
#ifndef KESTREL_SHAPE_CONV_H
#define KESTREL_SHAPE_CONV_H

#include "kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

ks_status ks__infer_conv2d(ks__kernel_ctx *ctx);
ks_status ks__infer_conv2d_transpose(ks__kernel_ctx *ctx);
ks_status ks__infer_pool2d(ks__kernel_ctx *ctx);
ks_status ks__infer_fully_connected(ks__kernel_ctx *ctx);
ks_status ks__infer_matmul(ks__kernel_ctx *ctx);
ks_status ks__infer_resize(ks__kernel_ctx *ctx);
ks_status ks__infer_depth_to_space(ks__kernel_ctx *ctx);
ks_status ks__infer_space_to_depth(ks__kernel_ctx *ctx);
ks_status ks__infer_space_to_batch_nd(ks__kernel_ctx *ctx);
ks_status ks__infer_batch_to_space_nd(ks__kernel_ctx *ctx);

/* True for a U8/I8 tensor that carries quantization parameters (t may be NULL). */
int ks__conv_is_quant(const ks__rt_tensor *t);

/* CONV2D and CONV2D_TRANSPOSE (NHWC input, OHWI weights). */
typedef struct ks__conv_geom {
    int64_t n, ih, iw, ic, oh, ow, oc, kh, kw, icg, ocg, groups;
    int64_t sh, sw, dh, dw, pt, pl; /* strides, dilations, leading pads */
    int32_t act;
    float alpha;
} ks__conv_geom;

ks_status ks__conv_geometry(ks__kernel_ctx *ctx, ks__conv_geom *g);
ks_status ks__tconv_geometry(ks__kernel_ctx *ctx, ks__conv_geom *g);
/* CONV2D's input 4 (PRELU slopes) against the act, and its quantized fused forms (ip[12]: the
 * intermediate, the residual's ADD or the output table; ops.inc). `quant`: x is quantized. */
ks_status ks__conv_check_slope(ks__kernel_ctx *ctx, int32_t act, int64_t oc);
ks_status ks__conv_check_fused(ks__kernel_ctx *ctx, int quant, int32_t act);

/* POOL2D. pb, pr: the trailing pads as the window sees them (count_include_pad counts up to
 * these). */
typedef struct ks__pool_geom {
    int64_t n, ih, iw, c, oh, ow, kh, kw, sh, sw, pt, pl, pb, pr;
    int32_t kind, count_include_pad, act;
} ks__pool_geom;

ks_status ks__pool_geometry(ks__kernel_ctx *ctx, ks__pool_geom *g);

/* MATMUL (numpy matmul with broadcast batch dims). dims_out gets the output shape (room for
 * KS_MAX_RANK + 2 entries; the rank may exceed KS_MAX_RANK, which inference refuses). */
typedef struct ks__matmul_geom {
    int64_t m, k, n;
    int32_t batch_rank;
    int64_t batch[KS_MAX_RANK], a_batch[KS_MAX_RANK], b_batch[KS_MAX_RANK];
    int a_vec, b_vec; /* 1-D operands (numpy: promoted, then the added dim is dropped) */
} ks__matmul_geom;

ks_status ks__matmul_geometry(ks__kernel_ctx *ctx, ks__matmul_geom *g, int64_t *dims_out,
                              int32_t *rank_out);

/* RESIZE (NHWC). */
typedef struct ks__resize_geom {
    int64_t n, ih, iw, c, oh, ow;
    int32_t mode, coord, round_mode;
    float ratio_h, ratio_w; /* source pixels per output pixel */
} ks__resize_geom;

ks_status ks__resize_geometry(ks__kernel_ctx *ctx, ks__resize_geom *g);

/* SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND: x [B, S_1..S_M, rest...], block_shape [M],
 * paddings / crops [M, 2]. */
typedef struct ks__batch_space_geom {
    int32_t m;
    int64_t block[KS_MAX_RANK];
    int64_t lo[KS_MAX_RANK]; /* pad before (s2b) or crop before (b2s) */
    int64_t hi[KS_MAX_RANK];
} ks__batch_space_geom;

ks_status ks__batch_space_geometry(ks__kernel_ctx *ctx, ks__batch_space_geom *g);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_SHAPE_CONV_H */
