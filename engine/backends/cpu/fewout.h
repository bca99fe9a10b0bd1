/* Few-output direct convolution (fewout.c): CONV2D with 1..4 output channels (prediction and
 * segmentation heads) and CONV2D_TRANSPOSE whose kernel equals its stride with at most 4 outputs
 * per input pixel (segmentation upsamplers). Portable geometry, cost, weight packing and the
 * row/tile driver; the ISA file (x86/avx2/f32_fewout.c) supplies the cores and the store. Not a
 * published API.
 *
 * Why: the GEMM and smallc vectorize over output channels, so with one output channel 7 of 8
 * (AVX2) lanes are padding. Here the lanes run along the reduction instead, and P output pixels
 * (P = lanes) are folded into one vector at the end:
 *   - SPAN: one accumulator per pixel; with NHWC input and OHWI weights the KW * Cin taps of one
 *     kernel row are contiguous in both (dilation 1), so a kernel row is ceil(KW * Cin / lanes)
 *     vector FMAs per pixel, the last one masked. Any Cin and stride.
 *   - PACKED (Cin 1, 2 or 4, unit stride): one vector holds lanes / Cin neighbouring pixels'
 *     channels, so a tap is Cin vector FMAs for the P pixels against the tap's weights repeated
 *     lanes / Cin times at pack time.
 * A CONV2D_TRANSPOSE with kernel == stride is a 1x1 conv to KH * KW * Cout outputs whose values
 * are scattered into KH output rows (depth to space), so it is the SPAN case with KH = KW = 1 and
 * a store per kernel row of the block.
 *
 * Tiles whose input reaches into the padding or past the end of the row (or the partial tile at
 * the row end) read a zero-filled copy of their input window, so the cores have no bounds checks
 * (the masked last chunk only keeps the next pixel's values out of the sums: they would add
 * 0 * value, which is NaN for an infinite value).
 *
 * Summation order per output: lane-wise along kernel rows and chunks, then a fixed fold tree of
 * the lanes, then bias, residual and the activation. It depends neither on the tile position nor
 * on the thread count (output rows are split between threads).
 */
#ifndef KESTREL_CPU_FEWOUT_H
#define KESTREL_CPU_FEWOUT_H

#include <stdbool.h>

#include "impl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KS_FEWOUT_MAX_OUT 4 /* outputs per pixel (Cout, or KH * KW * Cout of a transpose conv) */
#define KS_FEWOUT_MAX_PX 16 /* pixels per tile (lanes of the widest ISA) */

/* num_tiles consecutive tiles of P output pixels x num_out outputs each. */
typedef struct ks__fewout_tile {
    size_t num_tiles;
    size_t tile_step;      /* floats between consecutive tiles' first inputs */
    size_t num_rows;       /* kernel rows inside the image */
    const float *const *x; /* per row: the first tile's first input float */
    const float *const *w; /* per row: packed weights of output 0 for that kernel row */
    size_t w_out_stride;   /* floats between the packed weights of consecutive outputs */
    size_t sx;             /* SPAN: floats between neighbouring pixels' inputs */
    size_t chunks;         /* SPAN: vectors per kernel row; PACKED: taps per kernel row (KW) */
    size_t tail;           /* SPAN: valid lanes of the last chunk, 0 when it is full */
    size_t num_out;        /* <= KS_FEWOUT_MAX_OUT */
    size_t q_block;        /* SPAN: outputs per fold, 1, 2 or 4 (dividing num_out) */
    /* out, per tile num_out x P floats (no bias): per block of q_block outputs, P pixels x
     * q_block outputs, pixel-major (q_block 1: output-major) */
    float *sums;
} ks__fewout_tile;

typedef void (*ks__fewout_core_fn)(const ks__fewout_tile *t);

/* Finishes q outputs per pixel of num_px consecutive pixels (tiles of P) into y (q * num_px
 * contiguous floats, pixel-major):
 *     y[i] = act(sums[t * sums_stride + c * P + p] + bias[c] + res[i]),  i = (t * P + p) * q + c
 * or, when pixel_major (q dividing P), sums[t * sums_stride + p * q + c].
 * res may alias y (each value is read before it is written) or be NULL. slope (PRELU only, else
 * NULL) holds the slope of every y[i] of one whole tile, i < P * q. */
typedef struct ks__fewout_store {
    const float *sums;
    size_t sums_stride; /* floats between consecutive tiles' sums */
    bool pixel_major;
    size_t q, num_px;
    const float *bias; /* q floats */
    const float *res;
    const float *slope;
    int32_t act;
    float alpha;
    float *y;
} ks__fewout_store;

typedef void (*ks__fewout_store_fn)(const ks__fewout_store *s);

typedef struct ks__fewout_arch {
    uint32_t lanes;        /* floats per vector = pixels per tile (<= KS_FEWOUT_MAX_PX) */
    double fma_per_cycle;  /* vector FMAs per cycle, for cost() */
    double fold_cycles[4]; /* folding one output of a tile: SPAN, PACKED Cin 1, 2, 4 */
    /* the SPAN core for pixel stride sx, chunks per kernel row, tail lanes and outputs per fold
     * (never NULL) */
    ks__fewout_core_fn (*span)(size_t sx, size_t chunks, size_t tail, size_t q_block);
    ks__fewout_core_fn packed[3]; /* Cin 1, 2, 4; NULL: not compiled */
    ks__fewout_store_fn store;
} ks__fewout_arch;

/* The impl steps (impl.h). cost() is negative unless the node is a float CONV2D (ungrouped,
 * horizontal dilation 1, constant F32/F16 weights and bias, any activation but TABLE, residual
 * and PRELU allowed) with at most KS_FEWOUT_MAX_OUT output channels, or a float
 * CONV2D_TRANSPOSE with kernel == stride, no padding, no residual and KH * KW * Cout <=
 * KS_FEWOUT_MAX_OUT. */
double ks__fewout_cost(const ks__kernel_ctx *ctx, const ks__fewout_arch *arch);
ks_status ks__fewout_plan(ks__kernel_ctx *ctx, const ks__fewout_arch *arch,
                          size_t *packed_bytes_out);
ks_status ks__fewout_pack(ks__kernel_ctx *ctx, const ks__fewout_arch *arch);
ks_status ks__fewout_run(ks__kernel_ctx *ctx, const ks__fewout_arch *arch);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_FEWOUT_H */
