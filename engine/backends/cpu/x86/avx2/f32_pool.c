/* fp32 max / average pooling, AVX2: 32 channels (4 vectors) per step, then 8, then a masked
 * tail. */
#include "f32_dw_simd.h"

KS_INLINE __m256 pool_op(int kind, __m256 acc, __m256 v) {
    return kind == 0 ? _mm256_max_ps(acc, v) : _mm256_add_ps(acc, v);
}

KS_INLINE __m256 ld(int tail, __m256i m, const float *p) {
    return tail ? _mm256_maskload_ps(p, m) : _mm256_loadu_ps(p);
}

KS_INLINE void pool_vec(int kind, int tail, size_t c0, size_t channels, const float *in,
                        size_t rows, size_t cols, size_t px_stride, size_t row_stride, __m256 init,
                        __m256 vs, float *out, __m256 lo, __m256 hi, const ks__f32_act *act) {
    __m256i m = ks_avx2_mask(channels - c0);
    __m256 a0 = init, a1 = init;
    for (size_t r = 0; r < rows; r++) {
        const float *p = in + r * row_stride + c0;
        size_t q = 0;
        for (; q + 2 <= cols; q += 2, p += 2 * px_stride) {
            a0 = pool_op(kind, a0, ld(tail, m, p));
            a1 = pool_op(kind, a1, ld(tail, m, p + px_stride));
        }
        if (q < cols) a0 = pool_op(kind, a0, ld(tail, m, p));
    }
    __m256 a = pool_op(kind, a0, a1);
    if (kind == 1) a = _mm256_mul_ps(a, vs);
    a = ks_avx2_act(a, lo, hi, act);
    if (tail)
        _mm256_maskstore_ps(out + c0, m, a);
    else
        _mm256_storeu_ps(out + c0, a);
}

KS_INLINE void pool_px(int kind, size_t channels, const float *in, size_t rows, size_t cols,
                       size_t px_stride, size_t row_stride, float scale, float *out, __m256 lo,
                       __m256 hi, const ks__f32_act *act) {
    int empty = rows == 0 || cols == 0;
    __m256 init = kind == 0 && !empty ? _mm256_set1_ps(-INFINITY) : _mm256_setzero_ps();
    __m256 vs = _mm256_set1_ps(scale);
    size_t c0 = 0;
    for (; c0 + 32 <= channels; c0 += 32) {
        __m256 a0 = init, a1 = init, a2 = init, a3 = init;
        for (size_t r = 0; r < rows; r++) {
            const float *p = in + r * row_stride + c0;
            for (size_t q = 0; q < cols; q++, p += px_stride) {
                a0 = pool_op(kind, a0, _mm256_loadu_ps(p));
                a1 = pool_op(kind, a1, _mm256_loadu_ps(p + 8));
                a2 = pool_op(kind, a2, _mm256_loadu_ps(p + 16));
                a3 = pool_op(kind, a3, _mm256_loadu_ps(p + 24));
            }
        }
        if (kind == 1) {
            a0 = _mm256_mul_ps(a0, vs), a1 = _mm256_mul_ps(a1, vs);
            a2 = _mm256_mul_ps(a2, vs), a3 = _mm256_mul_ps(a3, vs);
        }
        _mm256_storeu_ps(out + c0, ks_avx2_act(a0, lo, hi, act));
        _mm256_storeu_ps(out + c0 + 8, ks_avx2_act(a1, lo, hi, act));
        _mm256_storeu_ps(out + c0 + 16, ks_avx2_act(a2, lo, hi, act));
        _mm256_storeu_ps(out + c0 + 24, ks_avx2_act(a3, lo, hi, act));
    }
    for (; c0 + 8 <= channels; c0 += 8)
        pool_vec(kind, 0, c0, channels, in, rows, cols, px_stride, row_stride, init, vs, out, lo,
                 hi, act);
    if (c0 < channels)
        pool_vec(kind, 1, c0, channels, in, rows, cols, px_stride, row_stride, init, vs, out, lo,
                 hi, act);
}

static void pool_ukernel(size_t num_px, size_t channels, const float *const *in,
                         const uint32_t *rows, const uint32_t *cols, size_t px_stride,
                         size_t row_stride, int kind, const float *scale, float *out,
                         size_t out_stride, const ks__f32_act *act) {
    __m256 lo = _mm256_set1_ps(act->lo), hi = _mm256_set1_ps(act->hi);
    for (size_t px = 0; px < num_px; px++) {
        /* whole 2x2 and 3x3 max windows (the stride-2 downsampling of detector backbones):
         * constant window loops, which the compiler unrolls; the same operations in the same
         * order as the general call */
        if (kind == 0 && rows[px] == 2 && cols[px] == 2)
            pool_px(0, channels, in[px], 2, 2, px_stride, row_stride, 1.0f, out + px * out_stride,
                    lo, hi, act);
        else if (kind == 0 && rows[px] == 3 && cols[px] == 3)
            pool_px(0, channels, in[px], 3, 3, px_stride, row_stride, 1.0f, out + px * out_stride,
                    lo, hi, act);
        else if (kind == 0)
            pool_px(0, channels, in[px], rows[px], cols[px], px_stride, row_stride, 1.0f,
                    out + px * out_stride, lo, hi, act);
        else
            pool_px(1, channels, in[px], rows[px], cols[px], px_stride, row_stride, scale[px],
                    out + px * out_stride, lo, hi, act);
    }
}

static const ks__f32_pool_config k_cfg = {8, pool_ukernel};

static double cost(const ks__kernel_ctx *ctx) {
    return ks__f32_pool_cost(ctx, 8);
}
static ks_status plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__f32_pool_plan(ctx, packed_bytes_out);
}
static ks_status run(ks__kernel_ctx *ctx) {
    return ks__f32_pool_run(ctx, &k_cfg);
}

const ks__impl ks_f32_pool2d__avx2_c8 = {
    "ks_f32_pool2d__avx2_c8", KS_OP_POOL2D, KS_ISA_AVX2, cost, plan, NULL, run,
};
