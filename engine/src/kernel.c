/* The helpers that shape inference (shape_*.c) and every backend's kernels share (kernel.h):
 * one copy, in the core, so both sides report errors and read tensors the same way. */
#include <stdio.h>

#include "kernel.h"

ks_status ks__kernel_error(ks__kernel_ctx *ctx, ks_status status, const char *fmt, ...) {
    if (!ctx->err || ctx->err_cap == 0) return status;
    const ks__op_info *info = ks__op_get_info(ctx->node->op);
    int n = snprintf(ctx->err, ctx->err_cap, "op '%s' (node %u '%s'): ", info ? info->name : "?",
                     ctx->node_index, ctx->node->name ? ctx->node->name : "");
    if (n < 0) n = 0;
    if ((size_t)n < ctx->err_cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->err + n, ctx->err_cap - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return status;
}

int64_t ks__rt_numel(const ks__rt_tensor *t) {
    return ks__numel(t->rank, t->dims);
}

void ks__rt_set_shape(ks__rt_tensor *t, ks_dtype dtype, int32_t rank, const int64_t *dims) {
    int64_t tmp[KS_MAX_RANK];
    for (int32_t i = 0; i < rank; i++)
        tmp[i] = dims[i]; /* dims may alias t->dims */
    t->dtype = dtype;
    t->rank = rank;
    for (int32_t i = 0; i < rank; i++)
        t->dims[i] = tmp[i];
}

int64_t ks__rt_get_int(const ks__rt_tensor *t, int64_t i) {
    switch (t->dtype) {
    case KS_DTYPE_I32:
        return ((const int32_t *)t->data)[i];
    case KS_DTYPE_I64:
        return ((const int64_t *)t->data)[i];
    case KS_DTYPE_U8:
        return ((const uint8_t *)t->data)[i];
    case KS_DTYPE_I8:
        return ((const int8_t *)t->data)[i];
    case KS_DTYPE_I16:
        return ((const int16_t *)t->data)[i];
    case KS_DTYPE_BOOL:
        return ((const uint8_t *)t->data)[i] != 0;
    case KS_DTYPE_F32:
        return (int64_t)((const float *)t->data)[i];
    case KS_DTYPE_F16:
        return (int64_t)ks__f16_to_f32(((const uint16_t *)t->data)[i]);
    default:
        return 0;
    }
}

const char *ks__rt_name(const ks__rt_tensor *t) {
    return (t && t->def && t->def->name) ? t->def->name : "?";
}

void ks__format_dims(char *buf, size_t cap, int32_t rank, const int64_t *dims) {
    size_t n = 0;
    if (cap == 0) return;
    buf[0] = '\0';
    int w = snprintf(buf, cap, "[");
    if (w < 0) return;
    n = (size_t)w;
    for (int32_t i = 0; i < rank && n < cap; i++) {
        w = snprintf(buf + n, cap - n, i ? ",%lld" : "%lld", (long long)dims[i]);
        if (w < 0) return;
        n += (size_t)w;
    }
    if (n < cap) snprintf(buf + n, cap - n, "]");
}
