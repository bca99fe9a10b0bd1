/* The core's shape inference: one function per op of ops.inc (shape.h). The functions live with
 * their family (shape_conv.c, shape_data.c, shape_elementwise.c, shape_mediapipe.c); this table
 * is the one place that maps op ids to them. It is a constant, so inference needs no
 * registration step and no lock. An op-pruned build (op_enabled.h) keeps only the entries of its
 * ops, so the inference of the others is dropped with their kernels, and refuses the others here
 * with a message that says how to rebuild. */
#include "shape.h"

#include <stddef.h>

#include "op_enabled.h"
#include "shape_conv.h"
#include "shape_data.h"
#include "shape_elementwise.h"
#include "shape_mediapipe.h"

static const ks__infer_fn k_infer[KS_OP_MAX_ID] = {
    [KS_OP_CONV2D] = KS__OP_FN(CONV2D, ks__infer_conv2d),
    [KS_OP_CONV2D_TRANSPOSE] = KS__OP_FN(CONV2D_TRANSPOSE, ks__infer_conv2d_transpose),
    [KS_OP_POOL2D] = KS__OP_FN(POOL2D, ks__infer_pool2d),
    [KS_OP_FULLY_CONNECTED] = KS__OP_FN(FULLY_CONNECTED, ks__infer_fully_connected),
    [KS_OP_MATMUL] = KS__OP_FN(MATMUL, ks__infer_matmul),
    [KS_OP_RESIZE] = KS__OP_FN(RESIZE, ks__infer_resize),
    [KS_OP_DEPTH_TO_SPACE] = KS__OP_FN(DEPTH_TO_SPACE, ks__infer_depth_to_space),
    [KS_OP_SPACE_TO_DEPTH] = KS__OP_FN(SPACE_TO_DEPTH, ks__infer_space_to_depth),
    [KS_OP_SPACE_TO_BATCH_ND] = KS__OP_FN(SPACE_TO_BATCH_ND, ks__infer_space_to_batch_nd),
    [KS_OP_BATCH_TO_SPACE_ND] = KS__OP_FN(BATCH_TO_SPACE_ND, ks__infer_batch_to_space_nd),

    [KS_OP_ADD] = KS__OP_FN(ADD, ks__infer_binary),
    [KS_OP_SUB] = KS__OP_FN(SUB, ks__infer_binary),
    [KS_OP_MUL] = KS__OP_FN(MUL, ks__infer_binary),
    [KS_OP_DIV] = KS__OP_FN(DIV, ks__infer_binary),
    [KS_OP_FLOOR_DIV] = KS__OP_FN(FLOOR_DIV, ks__infer_binary),
    [KS_OP_FLOOR_MOD] = KS__OP_FN(FLOOR_MOD, ks__infer_binary),
    [KS_OP_POW] = KS__OP_FN(POW, ks__infer_binary),
    [KS_OP_MAXIMUM] = KS__OP_FN(MAXIMUM, ks__infer_binary),
    [KS_OP_MINIMUM] = KS__OP_FN(MINIMUM, ks__infer_binary),
    [KS_OP_RELU] = KS__OP_FN(RELU, ks__infer_unary),
    [KS_OP_RELU6] = KS__OP_FN(RELU6, ks__infer_unary),
    [KS_OP_RELU_N1_TO_1] = KS__OP_FN(RELU_N1_TO_1, ks__infer_unary),
    [KS_OP_LEAKY_RELU] = KS__OP_FN(LEAKY_RELU, ks__infer_unary),
    [KS_OP_SIGMOID] = KS__OP_FN(SIGMOID, ks__infer_unary),
    [KS_OP_TANH] = KS__OP_FN(TANH, ks__infer_unary),
    [KS_OP_HARD_SWISH] = KS__OP_FN(HARD_SWISH, ks__infer_unary),
    [KS_OP_EXP] = KS__OP_FN(EXP, ks__infer_unary),
    [KS_OP_SQRT] = KS__OP_FN(SQRT, ks__infer_unary),
    [KS_OP_RSQRT] = KS__OP_FN(RSQRT, ks__infer_unary),
    [KS_OP_ABS] = KS__OP_FN(ABS, ks__infer_unary),
    [KS_OP_NEG] = KS__OP_FN(NEG, ks__infer_unary),
    [KS_OP_FLOOR] = KS__OP_FN(FLOOR, ks__infer_unary),
    [KS_OP_CEIL] = KS__OP_FN(CEIL, ks__infer_unary),
    [KS_OP_LOG] = KS__OP_FN(LOG, ks__infer_unary),
    [KS_OP_CLIP] = KS__OP_FN(CLIP, ks__infer_unary),
    [KS_OP_ELU] = KS__OP_FN(ELU, ks__infer_unary),
    [KS_OP_HARD_SIGMOID] = KS__OP_FN(HARD_SIGMOID, ks__infer_unary),
    [KS_OP_EQUAL] = KS__OP_FN(EQUAL, ks__infer_compare),
    [KS_OP_NOT_EQUAL] = KS__OP_FN(NOT_EQUAL, ks__infer_compare),
    [KS_OP_GREATER] = KS__OP_FN(GREATER, ks__infer_compare),
    [KS_OP_GREATER_EQUAL] = KS__OP_FN(GREATER_EQUAL, ks__infer_compare),
    [KS_OP_LESS] = KS__OP_FN(LESS, ks__infer_compare),
    [KS_OP_LESS_EQUAL] = KS__OP_FN(LESS_EQUAL, ks__infer_compare),
    [KS_OP_WHERE] = KS__OP_FN(WHERE, ks__infer_where),
    [KS_OP_PRELU] = KS__OP_FN(PRELU, ks__infer_prelu),
    [KS_OP_SOFTMAX] = KS__OP_FN(SOFTMAX, ks__infer_softmax),
    [KS_OP_LOG_SOFTMAX] = KS__OP_FN(LOG_SOFTMAX, ks__infer_softmax),
    [KS_OP_REDUCE] = KS__OP_FN(REDUCE, ks__infer_reduce),
    [KS_OP_ARG_MAX] = KS__OP_FN(ARG_MAX, ks__infer_arg),
    [KS_OP_ARG_MIN] = KS__OP_FN(ARG_MIN, ks__infer_arg),
    [KS_OP_QUANTIZE] = KS__OP_FN(QUANTIZE, ks__infer_quantize),
    [KS_OP_DEQUANTIZE] = KS__OP_FN(DEQUANTIZE, ks__infer_dequantize),
    [KS_OP_CAST] = KS__OP_FN(CAST, ks__infer_cast),

    [KS_OP_RESHAPE] = KS__OP_FN(RESHAPE, ks__infer_reshape),
    [KS_OP_SQUEEZE] = KS__OP_FN(SQUEEZE, ks__infer_squeeze),
    [KS_OP_UNSQUEEZE] = KS__OP_FN(UNSQUEEZE, ks__infer_unsqueeze),
    [KS_OP_SHAPE] = KS__OP_FN(SHAPE, ks__infer_shape),
    [KS_OP_TRANSPOSE] = KS__OP_FN(TRANSPOSE, ks__infer_transpose),
    [KS_OP_CONCAT] = KS__OP_FN(CONCAT, ks__infer_concat),
    [KS_OP_SPLIT] = KS__OP_FN(SPLIT, ks__infer_split),
    [KS_OP_PACK] = KS__OP_FN(PACK, ks__infer_pack),
    [KS_OP_UNPACK] = KS__OP_FN(UNPACK, ks__infer_unpack),
    [KS_OP_SLICE] = KS__OP_FN(SLICE, ks__infer_slice),
    [KS_OP_PAD] = KS__OP_FN(PAD, ks__infer_pad),
    [KS_OP_GATHER] = KS__OP_FN(GATHER, ks__infer_gather),
    [KS_OP_GATHER_ND] = KS__OP_FN(GATHER_ND, ks__infer_gather_nd),
    [KS_OP_EXPAND] = KS__OP_FN(EXPAND, ks__infer_expand),
    [KS_OP_TILE] = KS__OP_FN(TILE, ks__infer_tile),

    [KS_OP_MP_TRANSFORM_LANDMARKS] =
        KS__OP_FN(MP_TRANSFORM_LANDMARKS, ks__infer_mp_transform_landmarks),
    [KS_OP_MP_TRANSFORM_TENSOR_BILINEAR] =
        KS__OP_FN(MP_TRANSFORM_TENSOR_BILINEAR, ks__infer_mp_transform_tensor_bilinear),
    [KS_OP_MP_LANDMARKS_TO_MATRIX] =
        KS__OP_FN(MP_LANDMARKS_TO_MATRIX, ks__infer_mp_landmarks_to_matrix),
};

ks_status ks__op_infer(ks__kernel_ctx *ctx) {
    uint32_t op = ctx->node->op;
    ks__infer_fn fn = op < KS_OP_MAX_ID ? k_infer[op] : NULL;
    if (!fn) {
#ifdef KS_OPS_PRUNED
        if (op < KS_OP_MAX_ID)
            return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                    "not in this op-pruned build (built with KS_OPS/"
                                    "KS_OPS_FROM_MODELS; registered ops: %s); rebuild with this "
                                    "model in KS_OPS_FROM_MODELS",
                                    KS_OPS_ENABLED_LIST);
#endif
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "no shape inference for op %u", op);
    }
    return fn(ctx);
}
