/* fp32 max / average pooling, NEON (and WebAssembly SIMD128: wasm/simd128/f32_pool.c includes
 * this file): the microkernel of the portable POOL2D driver (dwconv.c), written with the 4-lane
 * vector layer of x86/avx2/f32_vsimd.h. 16 channels (4 vectors) per
 * step, then 4, then a tail through v_loadn/v_storen (nothing read or written past the
 * channels).
 *
 * Max keeps the reference's NaN rule (`v > max ? v : max`, so NaN inputs are skipped) because
 * v_max(v, acc) is exactly that expression. Average sums in float, tap by tap in (row, column)
 * order, then multiplies by the driver's 1/count (within the POOL2D tolerance of the reference's
 * double sum). */
#include <math.h>

#include "../../dwconv.h"
#include "../../x86/avx2/f32_vsimd.h"

#define POOL_VECS 4

/* Clamp to [lo, hi] (x86 operand order, so NaN passes), then the post activation. */
static inline vf pool_act(vf v, vf lo, vf hi, const ks__f32_act *a) {
    v = v_clamp(v, lo, hi);
    if (a->act == KS_ACT_LEAKY_RELU)
        v = v_sel(v_lt(v, v_zero()), v_mul(v, v_set1(a->alpha)), v);
    else if (a->act == KS_ACT_HARD_SWISH)
        v = v_hard_swish(v);
    else if (a->act == KS_ACT_SILU)
        v = v_mul(v, v_sigmoid(v));
    return v;
}

static inline vf pool_op(int kind, vf acc, vf v) {
    return kind == 0 ? v_max(v, acc) : v_add(acc, v);
}

static void pool_px(int kind, size_t channels, const float *in, size_t rows, size_t cols,
                    size_t px_stride, size_t row_stride, float scale, float *out, vf lo, vf hi,
                    const ks__f32_act *act) {
    const int empty = rows == 0 || cols == 0;
    const vf init = kind == 0 && !empty ? v_set1(-INFINITY) : v_zero();
    const vf vs = v_set1(scale);
    size_t c0 = 0;
    for (; c0 + POOL_VECS * V_N <= channels; c0 += POOL_VECS * V_N) {
        vf a[POOL_VECS];
        for (int k = 0; k < POOL_VECS; k++)
            a[k] = init;
        for (size_t r = 0; r < rows; r++) {
            const float *p = in + r * row_stride + c0;
            for (size_t q = 0; q < cols; q++, p += px_stride)
                for (int k = 0; k < POOL_VECS; k++)
                    a[k] = pool_op(kind, a[k], v_load(p + k * V_N));
        }
        for (int k = 0; k < POOL_VECS; k++) {
            vf v = kind == 1 ? v_mul(a[k], vs) : a[k];
            v_store(out + c0 + k * V_N, pool_act(v, lo, hi, act));
        }
    }
    for (; c0 < channels; c0 += V_N) {
        const size_t nc = channels - c0 < V_N ? channels - c0 : V_N;
        vf a = init;
        for (size_t r = 0; r < rows; r++) {
            const float *p = in + r * row_stride + c0;
            for (size_t q = 0; q < cols; q++, p += px_stride)
                a = pool_op(kind, a, nc == V_N ? v_load(p) : v_loadn(p, nc));
        }
        if (kind == 1) a = v_mul(a, vs);
        a = pool_act(a, lo, hi, act);
        if (nc == V_N)
            v_store(out + c0, a);
        else
            v_storen(out + c0, a, nc);
    }
}

static void pool_ukernel(size_t num_px, size_t channels, const float *const *in,
                         const uint32_t *rows, const uint32_t *cols, size_t px_stride,
                         size_t row_stride, int kind, const float *scale, float *out,
                         size_t out_stride, const ks__f32_act *act) {
    const vf lo = v_set1(act->lo), hi = v_set1(act->hi);
    for (size_t px = 0; px < num_px; px++)
        pool_px(kind, channels, in[px], rows[px], cols[px], px_stride, row_stride,
                kind == 1 ? scale[px] : 1.0f, out + px * out_stride, lo, hi, act);
}

static const ks__f32_pool_config k_cfg = {V_N, pool_ukernel};

static double cost(const ks__kernel_ctx *ctx) {
    return ks__f32_pool_cost(ctx, V_N);
}
static ks_status plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__f32_pool_plan(ctx, packed_bytes_out);
}
static ks_status run(ks__kernel_ctx *ctx) {
    return ks__f32_pool_run(ctx, &k_cfg);
}

#if defined(__wasm_simd128__)
const ks__impl ks_f32_pool2d__simd128_c4 = {
    "ks_f32_pool2d__simd128_c4", KS_OP_POOL2D, KS_ISA_WASM_SIMD128, cost, plan, NULL, run,
};
#else
const ks__impl ks_f32_pool2d__neon_c4 = {
    "ks_f32_pool2d__neon_c4", KS_OP_POOL2D, KS_ISA_NEON, cost, plan, NULL, run,
};
#endif
