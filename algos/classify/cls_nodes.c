/* cls_scores: a classifier's output tensor (f32, or u8/i8 quantized; [1, N] or [N]) -> f32
 * probabilities [N]. Quantized outputs are dequantized with the tensor's scale and zero point;
 * option `softmax` applies a softmax (for models that output logits). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "node_types.h"
#include "task_common.h"

#define CLS_MAX_CLASSES 100000

static ks_status cls_create(const ks_node_init *init, void **state_out) {
    int softmax = 0;
    ks_status st = ks_node_options_bool(init->options, "softmax", 0, &softmax);
    if (st) return st;
    /* The flag is the whole state: store it in the pointer, nothing to free. */
    *state_out = softmax ? (void *)(uintptr_t)1 : NULL;
    return KS_STATUS_OK;
}

static ks_status cls_process(void *state, ks_node_ctx *ctx) {
    int softmax = state != NULL;
    const ks_tensor *t = ks_packet_tensor(ks_node_input(ctx, 0));
    size_t elem = t->info.dtype == KS_DTYPE_F32                                    ? 4
                  : (t->info.dtype == KS_DTYPE_U8 || t->info.dtype == KS_DTYPE_I8) ? 1
                                                                                   : 0;
    if (!elem || t->size_bytes % elem || t->size_bytes / elem > CLS_MAX_CLASSES ||
        t->size_bytes == 0)
        return ks_node_fail(ctx, KS_STATUS_UNSUPPORTED,
                            "scores tensor is %s with %zu bytes; expected f32/u8/i8 with 1..%d "
                            "classes",
                            ks_dtype_string(t->info.dtype), t->size_bytes, CLS_MAX_CLASSES);
    size_t n = t->size_bytes / elem;
    ks_tensor_info info = {.dtype = KS_DTYPE_F32};
    info.shape.rank = 1;
    info.shape.dims[0] = (int64_t)n;
    ks_packet *p = NULL;
    ks_status st = ks_packet_create_tensor(ks_node_allocator(ctx), &info, NULL, &p);
    if (st) return ks_node_fail(ctx, st, "scores");
    size_t bytes = 0;
    float *out = ks_packet_mutable_data(p, &bytes);
    float scale = t->info.scale != 0.0f ? t->info.scale : 1.0f;
    for (size_t i = 0; i < n; i++) {
        if (t->info.dtype == KS_DTYPE_F32)
            out[i] = ((const float *)t->data)[i];
        else if (t->info.dtype == KS_DTYPE_U8)
            out[i] = scale * (float)((int32_t)((const uint8_t *)t->data)[i] - t->info.zero_point);
        else
            out[i] = scale * (float)((int32_t)((const int8_t *)t->data)[i] - t->info.zero_point);
        if (!isfinite(out[i])) out[i] = 0.0f;
    }
    if (softmax) {
        float mx = out[0];
        for (size_t i = 1; i < n; i++)
            mx = fmaxf(mx, out[i]);
        double sum = 0.0;
        for (size_t i = 0; i < n; i++) {
            out[i] = expf(out[i] - mx);
            sum += out[i];
        }
        for (size_t i = 0; i < n; i++)
            out[i] = (float)(out[i] / sum);
    }
    return ks_node_output(ctx, 0, p);
}

static const ks_port cls_in[] = {{"tensor", KS_PACKET_TENSOR, KS_PACKET_ANY, 0, -1}};
static const ks_port cls_out[] = {{"scores", KS_PACKET_TENSOR, KS_PACKET_ANY, 0, -1}};
const ks_node_type ks__node_cls_scores = {"cls_scores", 1,           1,    cls_in, cls_out,
                                          cls_create,   cls_process, NULL, NULL,   NULL};
