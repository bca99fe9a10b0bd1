/* NEON fp32 elementwise variants (driver: arm_common.c): ADD/MUL with fused activation, and
 * RELU, RELU6, SIGMOID, HARD_SWISH. 8 floats per step, then 4, then a scalar tail that uses the
 * reference formulas. */
#include <math.h>

#include "neon_util.h"

#define DEFINE_BINARY(name, vop, sop)                                                              \
    static void name##_same(size_t n, const float *a, const float *b, float *y,                    \
                            const ks__arm_act *act) {                                              \
        const neon_act va = neon_act_load(act);                                                    \
        size_t i = 0;                                                                              \
        for (; i + 8 <= n; i += 8) {                                                               \
            float32x4_t v0 = vop(vld1q_f32(a + i), vld1q_f32(b + i));                              \
            float32x4_t v1 = vop(vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));                      \
            vst1q_f32(y + i, neon_act_apply(v0, &va));                                             \
            vst1q_f32(y + i + 4, neon_act_apply(v1, &va));                                         \
        }                                                                                          \
        for (; i + 4 <= n; i += 4)                                                                 \
            vst1q_f32(y + i, neon_act_apply(vop(vld1q_f32(a + i), vld1q_f32(b + i)), &va));        \
        for (; i < n; i++)                                                                         \
            y[i] = neon_act_scalar(a[i] sop b[i], act);                                            \
    }                                                                                              \
    static void name##_scalar(size_t n, const float *a, const float *b, float *y,                  \
                              const ks__arm_act *act) {                                            \
        const neon_act va = neon_act_load(act);                                                    \
        const float32x4_t vb = vdupq_n_f32(b[0]);                                                  \
        size_t i = 0;                                                                              \
        for (; i + 8 <= n; i += 8) {                                                               \
            vst1q_f32(y + i, neon_act_apply(vop(vld1q_f32(a + i), vb), &va));                      \
            vst1q_f32(y + i + 4, neon_act_apply(vop(vld1q_f32(a + i + 4), vb), &va));              \
        }                                                                                          \
        for (; i + 4 <= n; i += 4)                                                                 \
            vst1q_f32(y + i, neon_act_apply(vop(vld1q_f32(a + i), vb), &va));                      \
        for (; i < n; i++)                                                                         \
            y[i] = neon_act_scalar(a[i] sop b[0], act);                                            \
    }                                                                                              \
    static const ks__arm_binary_config name##_cfg = {name##_same, name##_scalar};                  \
    static ks_status name##_run(ks__kernel_ctx *ctx) {                                             \
        return ks__arm_binary_run(ctx, &name##_cfg);                                               \
    }

DEFINE_BINARY(vadd, vaddq_f32, +)
DEFINE_BINARY(vmul, vmulq_f32, *)

static double binary_cost(const ks__kernel_ctx *ctx) {
    return ks__arm_binary_cost(ctx);
}

const ks__impl ks_f32_vadd__neon_u8 = {"ks_f32_vadd__neon_u8", KS_OP_ADD, KS_ISA_NEON, binary_cost,
                                       ks__arm_plan_nothing,   NULL,      vadd_run};
const ks__impl ks_f32_vmul__neon_u8 = {"ks_f32_vmul__neon_u8", KS_OP_MUL, KS_ISA_NEON, binary_cost,
                                       ks__arm_plan_nothing,   NULL,      vmul_run};

static inline float32x4_t v_relu(float32x4_t x) {
    /* select, not max: the reference maps NaN to 0 and FMAX would propagate it */
    return vbslq_f32(vcgtq_f32(x, vdupq_n_f32(0.0f)), x, vdupq_n_f32(0.0f));
}
static inline float32x4_t v_relu6(float32x4_t x) {
    return vminq_f32(vmaxq_f32(x, vdupq_n_f32(0.0f)), vdupq_n_f32(6.0f));
}
static inline float s_relu(float x) {
    return x > 0.0f ? x : 0.0f;
}
static inline float s_relu6(float x) {
    return x < 0.0f ? 0.0f : (x > 6.0f ? 6.0f : x);
}
static inline float s_sigmoid(float x) {
    return 1.0f / (1.0f + expf(-x));
}
static inline float s_hard_swish(float x) {
    return ks__act_apply(x, KS_ACT_HARD_SWISH, 0.0f);
}

#define DEFINE_UNARY(name, OP, vf, sf)                                                             \
    static void name##_ukernel(size_t n, const float *x, float *y) {                               \
        size_t i = 0;                                                                              \
        for (; i + 8 <= n; i += 8) {                                                               \
            vst1q_f32(y + i, vf(vld1q_f32(x + i)));                                                \
            vst1q_f32(y + i + 4, vf(vld1q_f32(x + i + 4)));                                        \
        }                                                                                          \
        for (; i + 4 <= n; i += 4)                                                                 \
            vst1q_f32(y + i, vf(vld1q_f32(x + i)));                                                \
        for (; i < n; i++)                                                                         \
            y[i] = sf(x[i]);                                                                       \
    }                                                                                              \
    static double name##_cost(const ks__kernel_ctx *ctx) {                                         \
        return ks__arm_unary_cost(ctx, OP);                                                        \
    }                                                                                              \
    static ks_status name##_run(ks__kernel_ctx *ctx) {                                             \
        return ks__arm_unary_run(ctx, name##_ukernel);                                             \
    }                                                                                              \
    const ks__impl ks_f32_##name##__neon_u8 = {                                                    \
        "ks_f32_" #name "__neon_u8", OP,   KS_ISA_NEON, name##_cost,                               \
        ks__arm_plan_nothing,        NULL, name##_run};

DEFINE_UNARY(relu, KS_OP_RELU, v_relu, s_relu)
DEFINE_UNARY(relu6, KS_OP_RELU6, v_relu6, s_relu6)
DEFINE_UNARY(sigmoid, KS_OP_SIGMOID, neon_sigmoid, s_sigmoid)
DEFINE_UNARY(hswish, KS_OP_HARD_SWISH, neon_hard_swish, s_hard_swish)
