/* WebAssembly SIMD128 fp32 depthwise CONV2D (driver: arm_common.c; NEON had the same structure
 * until it moved to the row schedule of x86/avx2/f32_dwconv.c, which under V8 ran this model's
 * depthwise layers no faster than this kernel: docs/kernels.md): vectorized over channels (NHWC),
 * 8 channels per step then 4, then a 1..3 channel tail through a small buffer (inputs are not
 * padded; the packed weights and the zero vector are). 3x3 and 5x5 get their own inlined copies
 * so the tap loop is fully unrolled; any stride/dilation/padding works because taps come from
 * the driver's per-pixel pointer table. Multiply and add (no FMA in baseline SIMD128); the bias
 * after the taps. */
#include <string.h>

#include "wasm_util.h"

static inline __attribute__((always_inline)) void
dw_pixels(size_t num_px, size_t channels, size_t cp, size_t num_taps, const float *const *taps,
          const float *packed, float *out, const ks__arm_act *act) {
    const wasm_act va = wasm_act_load(act);
    const float *wt = packed + cp;
    for (size_t px = 0; px < num_px; px++, taps += num_taps, out += channels) {
        size_t c = 0;
        for (; c + 8 <= channels; c += 8) {
            v128_t acc0 = wasm_f32x4_splat(0.0f), acc1 = wasm_f32x4_splat(0.0f);
            for (size_t t = 0; t < num_taps; t++) {
                const float *x = taps[t] + c, *w = wt + t * cp + c;
                acc0 = wasm_f32x4_add(acc0, wasm_f32x4_mul(wasm_v128_load(x), wasm_v128_load(w)));
                acc1 = wasm_f32x4_add(acc1,
                                      wasm_f32x4_mul(wasm_v128_load(x + 4), wasm_v128_load(w + 4)));
            }
            acc0 = wasm_f32x4_add(acc0, wasm_v128_load(packed + c));
            acc1 = wasm_f32x4_add(acc1, wasm_v128_load(packed + c + 4));
            wasm_v128_store(out + c, wasm_act_apply(acc0, &va));
            wasm_v128_store(out + c + 4, wasm_act_apply(acc1, &va));
        }
        for (; c + 4 <= channels; c += 4) {
            v128_t acc = wasm_f32x4_splat(0.0f);
            for (size_t t = 0; t < num_taps; t++)
                acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_v128_load(taps[t] + c),
                                                         wasm_v128_load(wt + t * cp + c)));
            acc = wasm_f32x4_add(acc, wasm_v128_load(packed + c));
            wasm_v128_store(out + c, wasm_act_apply(acc, &va));
        }
        if (c < channels) {
            size_t rem = channels - c;
            v128_t acc = wasm_f32x4_splat(0.0f);
            for (size_t t = 0; t < num_taps; t++) {
                float buf[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                memcpy(buf, taps[t] + c, rem * sizeof(float));
                acc = wasm_f32x4_add(
                    acc, wasm_f32x4_mul(wasm_v128_load(buf), wasm_v128_load(wt + t * cp + c)));
            }
            acc = wasm_f32x4_add(acc, wasm_v128_load(packed + c));
            float res[4];
            wasm_v128_store(res, wasm_act_apply(acc, &va));
            memcpy(out + c, res, rem * sizeof(float));
        }
    }
}

static void ks_f32_dwconv__simd128_c8(size_t num_px, size_t channels, size_t cp, size_t num_taps,
                                      const float *const *taps, const float *packed, float *out,
                                      const ks__arm_act *act) {
    if (num_taps == 9)
        dw_pixels(num_px, channels, cp, 9, taps, packed, out, act);
    else if (num_taps == 25)
        dw_pixels(num_px, channels, cp, 25, taps, packed, out, act);
    else
        dw_pixels(num_px, channels, cp, num_taps, taps, packed, out, act);
}

static double dw_cost(const ks__kernel_ctx *ctx) {
    return ks__arm_dw_cost(ctx);
}
static ks_status dw_run(ks__kernel_ctx *ctx) {
    return ks__arm_dw_run(ctx, ks_f32_dwconv__simd128_c8);
}

const ks__impl ks_f32_dwconv__simd128_c8_impl = {"ks_f32_dwconv__simd128_c8",
                                                 KS_OP_CONV2D,
                                                 KS_ISA_WASM_SIMD128,
                                                 dw_cost,
                                                 ks__arm_dw_plan,
                                                 ks__arm_dw_pack,
                                                 dw_run};
