/* Shape inference of the MediaPipe custom ops (shape_mediapipe.h). All three are float32 only:
 * TransformLandmarks keeps the landmarks' shape, TransformTensorBilinear makes [1,OH,OW,C] from
 * a [1,H,W,C] input, Landmarks2TransformMatrix makes one [1,4,4] matrix and checks that the
 * rotation landmarks and the subset bitmask stay inside the landmarks it is given.
 */
#include "shape_mediapipe.h"

#define L2M_MAX_WORDS 27

static ks_status need_f32(ks__kernel_ctx *ctx, uint32_t k) {
    if (!ctx->in[k] || ctx->in[k]->dtype != KS_DTYPE_F32)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "input %u must be float32", k);
    return KS_STATUS_OK;
}

static ks_status need_matrix(ks__kernel_ctx *ctx, uint32_t k) {
    ks_status st = need_f32(ctx, k);
    if (st) return st;
    if (ks__rt_numel(ctx->in[k]) != 16)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "input %u must hold a 4x4 matrix (has %lld values)", k,
                                (long long)ks__rt_numel(ctx->in[k]));
    return KS_STATUS_OK;
}

int32_t ks__mp_landmark_dims(const ks__kernel_ctx *ctx) {
    const ks__rt_tensor *x = ctx->in[0];
    int32_t d = ctx->node->ip[0];
    if (d == 0 && x->rank > 0 && x->dims[x->rank - 1] <= 3) d = (int32_t)x->dims[x->rank - 1];
    return d;
}

ks_status ks__infer_mp_transform_landmarks(ks__kernel_ctx *ctx) {
    ks_status st;
    if ((st = need_f32(ctx, 0)) || (st = need_matrix(ctx, 1))) return st;
    const ks__rt_tensor *x = ctx->in[0];
    int32_t d = ks__mp_landmark_dims(ctx);
    int64_t n = ks__rt_numel(x);
    if (x->rank < 1 || (d != 2 && d != 3) || n < 0 || n % d != 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "landmarks of rank %d, %lld values, %d dims per landmark", x->rank,
                                (long long)n, d);
    ks__rt_set_shape(ctx->out[0], KS_DTYPE_F32, x->rank, x->dims);
    return KS_STATUS_OK;
}

ks_status ks__infer_mp_transform_tensor_bilinear(ks__kernel_ctx *ctx) {
    ks_status st;
    if ((st = need_f32(ctx, 0)) || (st = need_matrix(ctx, 1))) return st;
    const ks__rt_tensor *x = ctx->in[0];
    int32_t oh = ctx->node->ip[0], ow = ctx->node->ip[1];
    if (x->rank != 4 || x->dims[0] != 1 || x->dims[1] < 1 || x->dims[2] < 1 || x->dims[3] < 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE, "input must be [1,H,W,C]");
    if (oh < 1 || ow < 1 || oh > (1 << 20) || ow > (1 << 20))
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "output size %dx%d", oh, ow);
    int64_t dims[4] = {1, oh, ow, x->dims[3]};
    ks__rt_set_shape(ctx->out[0], KS_DTYPE_F32, 4, dims);
    return KS_STATUS_OK;
}

ks_status ks__infer_mp_landmarks_to_matrix(ks__kernel_ctx *ctx) {
    ks_status st;
    const ks__node *nd = ctx->node;
    if ((st = need_f32(ctx, 0))) return st;
    int64_t n = ks__rt_numel(ctx->in[0]);
    if (n < 3 || n % 3 != 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "landmarks must hold x,y,z triplets (%lld values)", (long long)n);
    int64_t num = n / 3;
    int32_t words = nd->ip[4];
    if (nd->ip[0] < 0 || nd->ip[0] >= num || nd->ip[1] < 0 || nd->ip[1] >= num)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "rotation landmarks %d, %d out of %lld", nd->ip[0], nd->ip[1],
                                (long long)num);
    if (nd->ip[2] < 1 || nd->ip[3] < 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "output size %dx%d", nd->ip[2],
                                nd->ip[3]);
    if (words < 1 || words > L2M_MAX_WORDS)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "subset of %d words", words);
    bool any = false;
    for (int32_t w = 0; w < words; w++) {
        uint32_t bits = (uint32_t)nd->ip[5 + w];
        for (int b = 0; b < 32; b++) {
            if (!(bits & (1u << b))) continue;
            any = true;
            if (32 * (int64_t)w + b >= num)
                return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                        "subset landmark %lld out of %lld",
                                        (long long)(32 * (int64_t)w + b), (long long)num);
        }
    }
    if (!any) return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "empty subset");
    int64_t dims[3] = {1, 4, 4};
    ks__rt_set_shape(ctx->out[0], KS_DTYPE_F32, 3, dims);
    return KS_STATUS_OK;
}
