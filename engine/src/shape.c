/* The core's shape inference: one function per op of ops.inc (shape.h). The functions live with
 * their family (shape_conv.c, shape_data.c, shape_elementwise.c, shape_mediapipe.c); this table
 * is the one place that maps op ids to them. It is code, so inference needs no registration
 * step and no lock. An op-pruned build (op_enabled.h) keeps only the cases of its ops, so the
 * inference of the others is dropped with their kernels, and refuses the others here with a message
 * that says how to rebuild. */
#include "shape.h"

#include <stddef.h>

#include "op_enabled.h"
#include "shape_conv.h"
#include "shape_data.h"
#include "shape_elementwise.h"
#include "shape_mediapipe.h"

/* INFER(OP, fn): the case of OP in this build, else nothing (so fn is not referenced). */
#define INFER(OP, fn) KS__IF_OP(OP, case KS_OP_##OP : return fn(ctx);)

ks_status ks__op_infer(ks__kernel_ctx *ctx) {
    uint32_t op = ctx->node->op;
    /* A switch, not a table of pointers: it needs no load-time relocation. An op of this build
     * with no case here is caught by test_shape. */
    switch (op) {
        INFER(CONV2D, ks__infer_conv2d)
        INFER(CONV2D_TRANSPOSE, ks__infer_conv2d_transpose)
        INFER(POOL2D, ks__infer_pool2d)
        INFER(FULLY_CONNECTED, ks__infer_fully_connected)
        INFER(MATMUL, ks__infer_matmul)
        INFER(RESIZE, ks__infer_resize)
        INFER(DEPTH_TO_SPACE, ks__infer_depth_to_space)
        INFER(SPACE_TO_DEPTH, ks__infer_space_to_depth)
        INFER(SPACE_TO_BATCH_ND, ks__infer_space_to_batch_nd)
        INFER(BATCH_TO_SPACE_ND, ks__infer_batch_to_space_nd)
        INFER(ADD, ks__infer_binary)
        INFER(SUB, ks__infer_binary)
        INFER(MUL, ks__infer_binary)
        INFER(DIV, ks__infer_binary)
        INFER(FLOOR_DIV, ks__infer_binary)
        INFER(FLOOR_MOD, ks__infer_binary)
        INFER(POW, ks__infer_binary)
        INFER(MAXIMUM, ks__infer_binary)
        INFER(MINIMUM, ks__infer_binary)
        INFER(RELU, ks__infer_unary)
        INFER(RELU6, ks__infer_unary)
        INFER(RELU_N1_TO_1, ks__infer_unary)
        INFER(LEAKY_RELU, ks__infer_unary)
        INFER(SIGMOID, ks__infer_unary)
        INFER(TANH, ks__infer_unary)
        INFER(HARD_SWISH, ks__infer_unary)
        INFER(EXP, ks__infer_unary)
        INFER(SQRT, ks__infer_unary)
        INFER(RSQRT, ks__infer_unary)
        INFER(ABS, ks__infer_unary)
        INFER(NEG, ks__infer_unary)
        INFER(FLOOR, ks__infer_unary)
        INFER(CEIL, ks__infer_unary)
        INFER(LOG, ks__infer_unary)
        INFER(CLIP, ks__infer_unary)
        INFER(ELU, ks__infer_unary)
        INFER(HARD_SIGMOID, ks__infer_unary)
        INFER(EQUAL, ks__infer_compare)
        INFER(NOT_EQUAL, ks__infer_compare)
        INFER(GREATER, ks__infer_compare)
        INFER(GREATER_EQUAL, ks__infer_compare)
        INFER(LESS, ks__infer_compare)
        INFER(LESS_EQUAL, ks__infer_compare)
        INFER(WHERE, ks__infer_where)
        INFER(PRELU, ks__infer_prelu)
        INFER(SOFTMAX, ks__infer_softmax)
        INFER(LOG_SOFTMAX, ks__infer_softmax)
        INFER(REDUCE, ks__infer_reduce)
        INFER(ARG_MAX, ks__infer_arg)
        INFER(ARG_MIN, ks__infer_arg)
        INFER(QUANTIZE, ks__infer_quantize)
        INFER(DEQUANTIZE, ks__infer_dequantize)
        INFER(CAST, ks__infer_cast)
        INFER(RESHAPE, ks__infer_reshape)
        INFER(SQUEEZE, ks__infer_squeeze)
        INFER(UNSQUEEZE, ks__infer_unsqueeze)
        INFER(SHAPE, ks__infer_shape)
        INFER(TRANSPOSE, ks__infer_transpose)
        INFER(CONCAT, ks__infer_concat)
        INFER(SPLIT, ks__infer_split)
        INFER(PACK, ks__infer_pack)
        INFER(UNPACK, ks__infer_unpack)
        INFER(SLICE, ks__infer_slice)
        INFER(PAD, ks__infer_pad)
        INFER(GATHER, ks__infer_gather)
        INFER(GATHER_ND, ks__infer_gather_nd)
        INFER(EXPAND, ks__infer_expand)
        INFER(TILE, ks__infer_tile)
        INFER(MP_TRANSFORM_LANDMARKS, ks__infer_mp_transform_landmarks)
        INFER(MP_TRANSFORM_TENSOR_BILINEAR, ks__infer_mp_transform_tensor_bilinear)
        INFER(MP_LANDMARKS_TO_MATRIX, ks__infer_mp_landmarks_to_matrix)
    default:
        break;
    }
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
#undef INFER
