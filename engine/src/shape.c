/* The core's shape inference: one function per op of ops.inc (shape.h). The functions live with
 * their family (shape_conv.c, shape_data.c, shape_elementwise.c, shape_mediapipe.c); this table
 * is the one place that maps op ids to them. It is a constant, so inference needs no
 * registration step and no lock. An op-pruned build keeps every entry: pruning drops kernels,
 * and a pruned op is refused by its kernel stub (engine/backends/cpu/op_enabled.h). */
#include "shape.h"
#include "shape_conv.h"
#include "shape_data.h"
#include "shape_elementwise.h"
#include "shape_mediapipe.h"

static const ks__infer_fn k_infer[KS_OP_MAX_ID] = {
    [KS_OP_CONV2D] = ks__infer_conv2d,
    [KS_OP_CONV2D_TRANSPOSE] = ks__infer_conv2d_transpose,
    [KS_OP_POOL2D] = ks__infer_pool2d,
    [KS_OP_FULLY_CONNECTED] = ks__infer_fully_connected,
    [KS_OP_MATMUL] = ks__infer_matmul,
    [KS_OP_RESIZE] = ks__infer_resize,
    [KS_OP_DEPTH_TO_SPACE] = ks__infer_depth_to_space,
    [KS_OP_SPACE_TO_DEPTH] = ks__infer_space_to_depth,
    [KS_OP_SPACE_TO_BATCH_ND] = ks__infer_space_to_batch_nd,
    [KS_OP_BATCH_TO_SPACE_ND] = ks__infer_batch_to_space_nd,

    [KS_OP_ADD] = ks__infer_binary,
    [KS_OP_SUB] = ks__infer_binary,
    [KS_OP_MUL] = ks__infer_binary,
    [KS_OP_DIV] = ks__infer_binary,
    [KS_OP_FLOOR_DIV] = ks__infer_binary,
    [KS_OP_FLOOR_MOD] = ks__infer_binary,
    [KS_OP_POW] = ks__infer_binary,
    [KS_OP_MAXIMUM] = ks__infer_binary,
    [KS_OP_MINIMUM] = ks__infer_binary,
    [KS_OP_RELU] = ks__infer_unary,
    [KS_OP_RELU6] = ks__infer_unary,
    [KS_OP_RELU_N1_TO_1] = ks__infer_unary,
    [KS_OP_LEAKY_RELU] = ks__infer_unary,
    [KS_OP_SIGMOID] = ks__infer_unary,
    [KS_OP_TANH] = ks__infer_unary,
    [KS_OP_HARD_SWISH] = ks__infer_unary,
    [KS_OP_EXP] = ks__infer_unary,
    [KS_OP_SQRT] = ks__infer_unary,
    [KS_OP_RSQRT] = ks__infer_unary,
    [KS_OP_ABS] = ks__infer_unary,
    [KS_OP_NEG] = ks__infer_unary,
    [KS_OP_FLOOR] = ks__infer_unary,
    [KS_OP_CEIL] = ks__infer_unary,
    [KS_OP_LOG] = ks__infer_unary,
    [KS_OP_CLIP] = ks__infer_unary,
    [KS_OP_ELU] = ks__infer_unary,
    [KS_OP_HARD_SIGMOID] = ks__infer_unary,
    [KS_OP_EQUAL] = ks__infer_compare,
    [KS_OP_NOT_EQUAL] = ks__infer_compare,
    [KS_OP_GREATER] = ks__infer_compare,
    [KS_OP_GREATER_EQUAL] = ks__infer_compare,
    [KS_OP_LESS] = ks__infer_compare,
    [KS_OP_LESS_EQUAL] = ks__infer_compare,
    [KS_OP_WHERE] = ks__infer_where,
    [KS_OP_PRELU] = ks__infer_prelu,
    [KS_OP_SOFTMAX] = ks__infer_softmax,
    [KS_OP_LOG_SOFTMAX] = ks__infer_softmax,
    [KS_OP_REDUCE] = ks__infer_reduce,
    [KS_OP_ARG_MAX] = ks__infer_arg,
    [KS_OP_ARG_MIN] = ks__infer_arg,
    [KS_OP_QUANTIZE] = ks__infer_quantize,
    [KS_OP_DEQUANTIZE] = ks__infer_dequantize,
    [KS_OP_CAST] = ks__infer_cast,

    [KS_OP_RESHAPE] = ks__infer_reshape,
    [KS_OP_SQUEEZE] = ks__infer_squeeze,
    [KS_OP_UNSQUEEZE] = ks__infer_unsqueeze,
    [KS_OP_SHAPE] = ks__infer_shape,
    [KS_OP_TRANSPOSE] = ks__infer_transpose,
    [KS_OP_CONCAT] = ks__infer_concat,
    [KS_OP_SPLIT] = ks__infer_split,
    [KS_OP_PACK] = ks__infer_pack,
    [KS_OP_UNPACK] = ks__infer_unpack,
    [KS_OP_SLICE] = ks__infer_slice,
    [KS_OP_PAD] = ks__infer_pad,
    [KS_OP_GATHER] = ks__infer_gather,
    [KS_OP_GATHER_ND] = ks__infer_gather_nd,
    [KS_OP_EXPAND] = ks__infer_expand,
    [KS_OP_TILE] = ks__infer_tile,

    [KS_OP_MP_TRANSFORM_LANDMARKS] = ks__infer_mp_transform_landmarks,
    [KS_OP_MP_TRANSFORM_TENSOR_BILINEAR] = ks__infer_mp_transform_tensor_bilinear,
    [KS_OP_MP_LANDMARKS_TO_MATRIX] = ks__infer_mp_landmarks_to_matrix,
};

ks_status ks__op_infer(ks__kernel_ctx *ctx) {
    uint32_t op = ctx->node->op;
    ks__infer_fn fn = op < KS_OP_MAX_ID ? k_infer[op] : NULL;
    if (!fn)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "no shape inference for op %u", op);
    return fn(ctx);
}
