/* Small-channel direct CONV2D (smallc.c): portable geometry, cost, weight packing and the
 * row/tile driver; the ISA files (x86/avx512/f32_smallc.c, x86/avx2/f32_smallc.c) supply the
 * register-blocked cores and the epilogue. Not a published API.
 *
 * The tile is P output pixels of one output row x one block of up to NV vectors of output
 * channels, all held in registers. The reduction runs over the kernel rows (ky) that fall inside
 * the image and, per row, over the KW*Cin floats that are contiguous in NHWC input (dilation 1):
 * one weight vector load per tap feeds P FMAs whose input operand is a broadcast of
 * x[pixel p][tap]. Pixel p's taps start sx = stride_w * Cin floats after pixel p-1's, and the
 * cores are compiled for a fixed sx (the ISA files list which: every Cin 1..16 at strides 1 and
 * 2, and 24, 32, 48, 64), so that every broadcast is a constant displacement from one pointer.
 * Tiles whose columns reach into the padding (or past the row end) read a zero-filled copy of their
 * input window instead of the image, so the cores have no bounds checks.
 *
 * Summation order per output: kernel rows in order, taps in order, then bias, residual and the
 * activation; it depends neither on the tile position nor on the thread count (rows are split
 * between threads).
 */
#ifndef KESTREL_CPU_SMALLC_H
#define KESTREL_CPU_SMALLC_H

#include <stdbool.h>

#include "impl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KS_SMALLC_MAX_ACC 448 /* floats of one tile's accumulators (P * NV * lanes) */
#define KS_SMALLC_MAX_NV 4

/* Where a core stores a finished tile itself, when all P pixels of the tile are wanted, for the
 * activations that are a clamp (none, relu, relu6, relu_n1_to_1) or a negative-side slope (prelu,
 * leaky relu), for c < num_ch:
 *     v = acc[p][c] + bias[c] (+ res[p][c])
 *     y[p][c] = clamp(v, lo, hi)  or  v < 0 ? slope[c] * v : v
 * Skipping the round trip through the stack buffer saves ~10% on stems and ~25% on 16->16 1x1
 * convs (with the residual: ~5% on BlazePose's 8->8 1x1 convs at 128x128). */
#define KS_SMALLC_STORE_PLAIN 0 /* no activation (NaN stays NaN) */
#define KS_SMALLC_STORE_CLAMP 1
#define KS_SMALLC_STORE_SLOPE 2
typedef struct ks__smallc_store {
    float *y;
    const float *bias;  /* of the block's first channel, or NULL */
    const float *slope; /* SLOPE: per-channel slopes of the block (PRELU), or NULL: alpha */
    const float *res;   /* NULL, or the residual with y's layout (may be y itself) */
    size_t y_stride;    /* floats between pixels of y (and of res) */
    size_t num_ch;
    int kind; /* KS_SMALLC_STORE_* */
    float lo, hi, alpha;
} ks__smallc_store;

/* Accumulates one tile: for t < num_rows, for j < span:
 *     acc[p][v] += x[t][p * sx + j] * w[t][j * nv * lanes + v * lanes + lane]
 * with acc starting at zero; then, if `st` is NULL, stores acc (P * nv * lanes floats, p-major)
 * to `acc`, else finishes the tile into st->y. */
typedef void (*ks__smallc_core_fn)(size_t num_rows, const float *const *x, const float *const *w,
                                   size_t span, float *acc, const ks__smallc_store *st);

typedef struct ks__smallc_epilogue {
    int32_t act;        /* ks__act */
    float alpha;        /* leaky relu slope */
    const float *slope; /* PRELU slopes of the block's first channel, or NULL */
    const float *bias;  /* of the block's first channel, or NULL */
} ks__smallc_epilogue;

/* y[p][c] = act(acc[p][c] + bias[c] + res[p][c]) for p < num_px, c < num_ch (acc rows are
 * nv * lanes floats apart, y and res rows y_stride floats apart; res may be NULL). */
typedef void (*ks__smallc_epilogue_fn)(const float *acc, size_t nv, size_t num_px, size_t num_ch,
                                       const ks__smallc_epilogue *ep, const float *res, float *y,
                                       size_t y_stride);

typedef struct ks__smallc_arch {
    uint32_t lanes;                /* floats per vector */
    uint32_t max_nv;               /* vectors per channel block (<= KS_SMALLC_MAX_NV) */
    uint32_t px[KS_SMALLC_MAX_NV]; /* tile pixels P for nv = 1..max_nv */
    double fma_per_cycle;          /* vector FMAs per cycle, for cost() */
    /* the core for pixel stride sx and nv vectors, or NULL if not compiled */
    ks__smallc_core_fn (*core)(int64_t sx, uint32_t nv);
    ks__smallc_epilogue_fn epilogue;
} ks__smallc_arch;

/* The impl steps (impl.h) given the ISA's arch. cost() is negative unless the node is a float,
 * ungrouped, undilated CONV2D with constant F32/F16 weights whose pixel stride has a core. */
double ks__smallc_cost(const ks__kernel_ctx *ctx, const ks__smallc_arch *arch);
ks_status ks__smallc_plan(ks__kernel_ctx *ctx, const ks__smallc_arch *arch,
                          size_t *packed_bytes_out);
ks_status ks__smallc_pack(ks__kernel_ctx *ctx, const ks__smallc_arch *arch);
ks_status ks__smallc_run(ks__kernel_ctx *ctx, const ks__smallc_arch *arch);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_SMALLC_H */
