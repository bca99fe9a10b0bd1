/* WebAssembly SIMD128 fp32 GEMM microkernel (6 rows x 8 output channels) and the CONV2D /
 * FULLY_CONNECTED variants built on it (driver: arm_common.c, shared with NEON).
 *
 * Budget: engines map v128 values onto the host's vector registers (16 xmm on x86-64): 12
 * accumulators, 2 weight vectors and one broadcast row value, so the k loop can stay in
 * registers. Baseline SIMD128 has no fused multiply-add, so each step is a multiply and an add.
 * Accumulators start at zero and the bias is added after the k loop, as in the reference and
 * the NEON kernel (arm/neon/f32_gemm.c says why). The fused residual and PRELU are applied here,
 * on the tile in registers (config `fused`): done by the driver on the stored rows, in scalar
 * code, they took half of the face mesh's conv time under V8. */
#include <string.h>

#include "wasm_util.h"

#define MR 6
#define NR 8

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

static void ks_f32_gemm__simd128_6x8(size_t mr, size_t nc, size_t kc, size_t ks,
                                     const float *const *a, const float *w, float *c,
                                     size_t c_stride, const ks__arm_act *act) {
    const v128_t bias0 = wasm_v128_load(w), bias1 = wasm_v128_load(w + 4);
    w += NR;
#define INIT(r) v128_t acc##r##0 = wasm_f32x4_splat(0.0f), acc##r##1 = wasm_f32x4_splat(0.0f);
    ROWS(INIT)
#undef INIT
    for (size_t t = 0; t < ks; t++) {
#define PTR(r) const float *a##r = a[t * MR + r];
        ROWS(PTR)
#undef PTR
        for (size_t k = 0; k < kc; k++) {
            const v128_t w0 = wasm_v128_load(w), w1 = wasm_v128_load(w + 4);
            w += NR;
#define STEP(r)                                                                                    \
    {                                                                                              \
        const v128_t v = wasm_v128_load32_splat(a##r + k);                                         \
        acc##r##0 = wasm_f32x4_add(acc##r##0, wasm_f32x4_mul(w0, v));                              \
        acc##r##1 = wasm_f32x4_add(acc##r##1, wasm_f32x4_mul(w1, v));                              \
    }
            ROWS(STEP)
#undef STEP
        }
    }
    const wasm_act va = wasm_act_load(act);
    v128_t slope0 = wasm_f32x4_splat(0.0f), slope1 = slope0;
    if (act->slope) {
        float sl[NR] = {0};
        memcpy(sl, act->slope, nc * sizeof(float));
        slope0 = wasm_v128_load(sl);
        slope1 = wasm_v128_load(sl + 4);
    }
    /* conv + bias, + the residual row, then the clamp and post, then PRELU's slope. */
#define EPI(r)                                                                                     \
    acc##r##0 = wasm_f32x4_add(acc##r##0, bias0);                                                  \
    acc##r##1 = wasm_f32x4_add(acc##r##1, bias1);                                                  \
    if (act->res && r < mr) {                                                                      \
        const float *rr = act->res + (size_t)(r)*act->res_stride;                                  \
        if (nc == NR) {                                                                            \
            acc##r##0 = wasm_f32x4_add(acc##r##0, wasm_v128_load(rr));                             \
            acc##r##1 = wasm_f32x4_add(acc##r##1, wasm_v128_load(rr + 4));                         \
        } else {                                                                                   \
            float tmp[NR] = {0};                                                                   \
            memcpy(tmp, rr, nc * sizeof(float));                                                   \
            acc##r##0 = wasm_f32x4_add(acc##r##0, wasm_v128_load(tmp));                            \
            acc##r##1 = wasm_f32x4_add(acc##r##1, wasm_v128_load(tmp + 4));                        \
        }                                                                                          \
    }                                                                                              \
    acc##r##0 = wasm_act_apply(acc##r##0, &va);                                                    \
    acc##r##1 = wasm_act_apply(acc##r##1, &va);                                                    \
    if (act->slope) {                                                                              \
        const v128_t zero = wasm_f32x4_splat(0.0f);                                                \
        acc##r##0 = wasm_v128_bitselect(acc##r##0, wasm_f32x4_mul(acc##r##0, slope0),              \
                                        wasm_f32x4_ge(acc##r##0, zero));                           \
        acc##r##1 = wasm_v128_bitselect(acc##r##1, wasm_f32x4_mul(acc##r##1, slope1),              \
                                        wasm_f32x4_ge(acc##r##1, zero));                           \
    }
    ROWS(EPI)
#undef EPI
    /* Rows past mr are not stored; a partial column tile goes through a buffer. */
#define STORE(r)                                                                                   \
    if (r < mr) {                                                                                  \
        float *cr = c + (size_t)(r)*c_stride;                                                      \
        if (nc == NR) {                                                                            \
            wasm_v128_store(cr, acc##r##0);                                                        \
            wasm_v128_store(cr + 4, acc##r##1);                                                    \
        } else {                                                                                   \
            float tmp[NR];                                                                         \
            wasm_v128_store(tmp, acc##r##0);                                                       \
            wasm_v128_store(tmp + 4, acc##r##1);                                                   \
            memcpy(cr, tmp, nc * sizeof(float));                                                   \
        }                                                                                          \
    }
    ROWS(STORE)
#undef STORE
}

static const ks__arm_gemm_config k_gemm_6x8 = {MR, NR, ks_f32_gemm__simd128_6x8, 1};

static double gemm_cost(const ks__kernel_ctx *ctx) {
    return ks__arm_gemm_cost(ctx, &k_gemm_6x8);
}
static ks_status gemm_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__arm_gemm_plan(ctx, &k_gemm_6x8, packed_bytes_out);
}
static ks_status gemm_pack(ks__kernel_ctx *ctx) {
    return ks__arm_gemm_pack(ctx, &k_gemm_6x8);
}
static ks_status gemm_run(ks__kernel_ctx *ctx) {
    return ks__arm_gemm_run(ctx, &k_gemm_6x8);
}

const ks__impl ks_f32_conv__simd128_6x8 = {"ks_f32_conv__simd128_6x8",
                                           KS_OP_CONV2D,
                                           KS_ISA_WASM_SIMD128,
                                           gemm_cost,
                                           gemm_plan,
                                           gemm_pack,
                                           gemm_run};
const ks__impl ks_f32_fc__simd128_6x8 = {"ks_f32_fc__simd128_6x8",
                                         KS_OP_FULLY_CONNECTED,
                                         KS_ISA_WASM_SIMD128,
                                         gemm_cost,
                                         gemm_plan,
                                         gemm_pack,
                                         gemm_run};
