/* Reference kernel table and helpers shared by the kernels. */
#include "../cpu_kernel.h"
#include "../op_enabled.h"
#include "base/once.h"
#include "src/shape.h"

#include <math.h>
#include <string.h>

static ks__kernel_table g_ref_table;

#ifdef KS_OPS_PRUNED
/* An op this op-pruned build left out: refuse at reshape (the session plans every node after the
 * core's shape inference) with a message that says why, instead of the generic "no kernel" error,
 * so the app developer knows to rebuild with the model listed. */
static ks_status pruned_plan(ks__kernel_ctx *ctx) {
    return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                            "not in this op-pruned build (built with KS_OPS/KS_OPS_FROM_MODELS; "
                            "registered ops: %s); rebuild with this model in KS_OPS_FROM_MODELS",
                            KS_OPS_ENABLED_LIST);
}

static ks_status pruned_run(ks__kernel_ctx *ctx) {
    return pruned_plan(ctx);
}

static void register_pruned(ks__kernel_table *t) {
    static const struct {
        uint32_t op;
        int on;
    } k_ops[] = {
#define KS_OP(sym, id, name, min_in, max_in, min_out, max_out, flags) {KS_OP_##sym, KS__OP_ON(sym)},
#include "../../../src/ops.inc"
#undef KS_OP
    };
    for (size_t i = 0; i < sizeof(k_ops) / sizeof(k_ops[0]); i++)
        if (!k_ops[i].on) t->k[k_ops[i].op] = (ks__kernel){pruned_plan, pruned_run};
}
#endif
static ks__once_flag g_ref_once = KS__ONCE_INIT;

/* Runs once (ks__once), so it fills the table in place: no other thread reads it before. */
static void fill_ref_table(void) {
    ks__kernel_table *t = &g_ref_table;
    memset(t, 0, sizeof(*t));
    ks__ref_register_conv(t);
    ks__ref_register_elementwise(t);
    ks__ref_register_data(t);
    ks__ref_register_mediapipe(t);
#ifdef KS_OPS_PRUNED
    register_pruned(t);
#endif
}

const ks__kernel_table *ks__ref_kernels(void) {
    /* Sessions, tasks and pipelines may be created from several threads at once. */
    ks__once(&g_ref_once, fill_ref_table);
    return &g_ref_table;
}

ks_status ks__ref_prepare(ks__kernel_ctx *ctx) {
    uint32_t op = ctx->node->op;
    const ks__kernel *k = op < KS_OP_MAX_ID ? &ks__ref_kernels()->k[op] : NULL;
    if (!k || !k->run) return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "no reference kernel");
    ks_status st = ks__op_infer(ctx);
    if (st == KS_STATUS_OK && k->plan) st = k->plan(ctx);
    return st;
}

double ks__rt_get_f64(const ks__rt_tensor *t, int64_t i) {
    switch (t->dtype) {
    case KS_DTYPE_F32:
        return ((const float *)t->data)[i];
    case KS_DTYPE_F16:
        return ks__f16_to_f32(((const uint16_t *)t->data)[i]);
    default:
        return (double)ks__rt_get_int(t, i);
    }
}

void ks__rt_set_f64(ks__rt_tensor *t, int64_t i, double v) {
    switch (t->dtype) {
    case KS_DTYPE_F32:
        ((float *)t->data)[i] = (float)v;
        break;
    case KS_DTYPE_F16:
        ((uint16_t *)t->data)[i] = ks__f32_to_f16((float)v);
        break;
    case KS_DTYPE_I32:
        ((int32_t *)t->data)[i] = (int32_t)v;
        break;
    case KS_DTYPE_I64:
        ((int64_t *)t->data)[i] = (int64_t)v;
        break;
    case KS_DTYPE_U8:
        ((uint8_t *)t->data)[i] = (uint8_t)v;
        break;
    case KS_DTYPE_I8:
        ((int8_t *)t->data)[i] = (int8_t)v;
        break;
    case KS_DTYPE_I16:
        ((int16_t *)t->data)[i] = (int16_t)v;
        break;
    case KS_DTYPE_BOOL:
        ((uint8_t *)t->data)[i] = v != 0.0;
        break;
    default:
        break;
    }
}

float ks__act_apply(float x, int32_t act, float alpha) {
    switch (act) {
    case KS_ACT_RELU:
        return x > 0.0f ? x : 0.0f;
    case KS_ACT_RELU_N1_TO_1:
        return x < -1.0f ? -1.0f : (x > 1.0f ? 1.0f : x);
    case KS_ACT_RELU6:
        return x < 0.0f ? 0.0f : (x > 6.0f ? 6.0f : x);
    case KS_ACT_TANH:
        return tanhf(x);
    case KS_ACT_SIGMOID:
        return 1.0f / (1.0f + expf(-x));
    case KS_ACT_LEAKY_RELU:
        return x >= 0.0f ? x : alpha * x;
    case KS_ACT_PRELU:
        return x >= 0.0f ? x : alpha * x; /* alpha: the channel's slope */
    case KS_ACT_HARD_SWISH: {
        float r = x + 3.0f;
        r = r < 0.0f ? 0.0f : (r > 6.0f ? 6.0f : r);
        return x * r / 6.0f;
    }
    /* One division: e^-x overflows to inf for x < -88.7 and gives -0, as x * sigmoid(x). */
    case KS_ACT_SILU:
        return x / (1.0f + expf(-x));
    default:
        return x;
    }
}
