/* Shape inference of the data-movement and shape ops (shape_data.c): RESHAPE, SQUEEZE,
 * UNSQUEEZE, SHAPE, TRANSPOSE, CONCAT, SPLIT, PACK, UNPACK, SLICE, PAD, GATHER, GATHER_ND, EXPAND
 * and TILE, and the geometry their kernels share with it. Not a published API.
 *
 * Callers infer through ks__op_infer (shape.h); the ks__infer_* functions are its table's
 * entries. Each op's geometry is computed by one function that inference and the op's kernel
 * both call, so the two cannot disagree (the kernel then checks that the output it is handed
 * has the planned shape):
 *
 *     ks__slice_geom g;
 *     ks_status st = ks__slice_geometry(ctx, &g);   // validates; reports into ctx->err
 *
 * Parameter tensors (shape, sizes, starts, pads...) must have their value now: constants, or
 * values computed at reshape. The geometry functions write only their outputs and, on failure,
 * ctx->err, and are thread-safe.
 */
#ifndef KESTREL_SHAPE_DATA_H
#define KESTREL_SHAPE_DATA_H

#include "kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* SPLIT sizes / outputs and CONCAT / PACK inputs are bounded by the op arity (ops.inc: 64). */
#define KS__MAX_PARTS 64

ks_status ks__infer_reshape(ks__kernel_ctx *ctx);
ks_status ks__infer_squeeze(ks__kernel_ctx *ctx);
ks_status ks__infer_unsqueeze(ks__kernel_ctx *ctx);
ks_status ks__infer_shape(ks__kernel_ctx *ctx);
ks_status ks__infer_transpose(ks__kernel_ctx *ctx);
ks_status ks__infer_concat(ks__kernel_ctx *ctx);
ks_status ks__infer_split(ks__kernel_ctx *ctx);
ks_status ks__infer_pack(ks__kernel_ctx *ctx);
ks_status ks__infer_unpack(ks__kernel_ctx *ctx);
ks_status ks__infer_slice(ks__kernel_ctx *ctx);
ks_status ks__infer_pad(ks__kernel_ctx *ctx);
ks_status ks__infer_gather(ks__kernel_ctx *ctx);
ks_status ks__infer_gather_nd(ks__kernel_ctx *ctx);
ks_status ks__infer_expand(ks__kernel_ctx *ctx);
ks_status ks__infer_tile(ks__kernel_ctx *ctx);

/* TRANSPOSE: the permutation (ip, or reversed axes) and the output dims, both of x's rank. */
ks_status ks__transpose_geometry(ks__kernel_ctx *ctx, int32_t *perm, int64_t *out_dims);

/* CONCAT */
typedef struct ks__concat_geom {
    int32_t axis;
    int32_t rank;
    int64_t out_dims[KS_MAX_RANK];
} ks__concat_geom;

ks_status ks__concat_geometry(ks__kernel_ctx *ctx, ks__concat_geom *g);

/* How one input reaches CONCAT's output y: a byte copy when the quantization matches (or
 * neither side is quantized), otherwise TFLite-style requantization (per-tensor only). */
typedef enum ks__concat_path { KS__CONCAT_COPY, KS__CONCAT_REQUANT } ks__concat_path;

ks_status ks__concat_quant_path(ks__kernel_ctx *ctx, const ks__rt_tensor *x, const ks__rt_tensor *y,
                                ks__concat_path *path);
/* Clamp bounds of a fused activation on y in the quantized domain (TFLite
 * CalculateActivationRangeQuantized; act NONE gives y's dtype range). Returns false for
 * activations that are not clamps. */
bool ks__concat_act_range(int32_t act, const ks__rt_tensor *y, int64_t *lo, int64_t *hi);
/* Checks CONCAT's fused activation (ip[1]) against its output's dtype and quantization. */
ks_status ks__concat_check_act(ks__kernel_ctx *ctx);

/* SPLIT */
typedef struct ks__split_geom {
    int32_t axis;
    int64_t sizes[KS__MAX_PARTS]; /* per output, along axis */
} ks__split_geom;

ks_status ks__split_geometry(ks__kernel_ctx *ctx, ks__split_geom *g);

/* PACK: the normalized axis (of the output) and the output dims (x's rank + 1). UNPACK: the axis
 * of x and each output's dims (x's rank - 1). */
ks_status ks__pack_geometry(ks__kernel_ctx *ctx, int32_t *axis, int64_t *out_dims);
ks_status ks__unpack_geometry(ks__kernel_ctx *ctx, int32_t *axis, int64_t *out_dims);

/* SLICE (ONNX Slice with TFLite StridedSlice masks), per input axis. */
typedef struct ks__slice_geom {
    int64_t start[KS_MAX_RANK];
    int64_t step[KS_MAX_RANK];
    int64_t count[KS_MAX_RANK]; /* elements taken per input axis */
    int32_t out_rank;
    int64_t out_dims[KS_MAX_RANK]; /* count without the shrunk axes */
} ks__slice_geom;

ks_status ks__slice_geometry(ks__kernel_ctx *ctx, ks__slice_geom *g);

/* PAD: how the border is filled (ip[0], frozen by ops.inc). */
typedef enum ks__pad_fill {
    KS__PAD_FILL_CONSTANT = 0,
    KS__PAD_FILL_REFLECT = 1,
    KS__PAD_FILL_EDGE = 2,
    KS__PAD_FILL_SYMMETRIC = 3
} ks__pad_fill;

typedef struct ks__pad_geom {
    int32_t mode;                /* ks__pad_fill */
    int64_t before[KS_MAX_RANK]; /* negative: cropped */
    int64_t out_dims[KS_MAX_RANK];
} ks__pad_geom;

ks_status ks__pad_geometry(ks__kernel_ctx *ctx, ks__pad_geom *g);

/* GATHER: the normalized axis and the output shape; GATHER_ND: the output shape. */
ks_status ks__gather_geometry(ks__kernel_ctx *ctx, int32_t *axis, int32_t *out_rank,
                              int64_t *out_dims);
ks_status ks__gather_nd_geometry(ks__kernel_ctx *ctx, int32_t *out_rank, int64_t *out_dims);

/* EXPAND: bidirectional numpy broadcast of x's shape and the shape input. TILE: the repeats
 * (one per axis of x) and the output dims. */
ks_status ks__expand_geometry(ks__kernel_ctx *ctx, int32_t *out_rank, int64_t *out_dims);
ks_status ks__tile_geometry(ks__kernel_ctx *ctx, int64_t *reps, int64_t *out_dims);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_SHAPE_DATA_H */
