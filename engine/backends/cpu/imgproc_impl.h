/* Internal: the resolved form of one ks_image_to_tensor call, shared by the scalar reference
 * (imgproc.c) and the SIMD fast paths (<isa>/imgproc_<isa>.c). Not a published API.
 *
 * Exactness contract: a fast path must produce bit-identical results to ks__imgproc_span_scalar.
 * Both evaluate the same float expressions in the same order, one operation per statement (no
 * fused multiply-add), so that u8 outputs round identically.
 */
#ifndef KESTREL_IMGPROC_IMPL_H
#define KESTREL_IMGPROC_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "kestrel/imgproc.h"

typedef struct ks__imgproc {
    ks_pixel_format format;
    int32_t width_px, height_px; /* raw (unoriented) source */
    const uint8_t *plane[3];
    size_t stride_bytes[3];
    /* destination point -> raw source point (orientation folded in). Every |m[i]| <= 1e6. */
    float m[6];
    int32_t out_width_px, out_height_px, out_channels; /* out_channels: 1 or 3 */
    int nchw;
    int out_u8;   /* else f32 */
    void *out;    /* start of the batch entry being written */
    int bgr;      /* output channel order B, G, R */
    int gray_out; /* one output channel */
    int gray_src; /* GRAY source: R = G = B, gray output takes R as is */
    ks_interp interp;
    ks_border border;
    float border_rgb[3]; /* pixel value of outside taps (R, G, B) for ZERO and CONSTANT */
    float mean[3], scale[3];
    /* YUV -> RGB: y' = (Y - y_offset) * y_scale; u = U - 128; v = V - 128;
     * R = y' + kr_v * v; G = (y' - kg_u * u) - kg_v * v; B = y' + kb_u * u; clamp [0, 255]. */
    float y_offset, y_scale, kr_v, kg_u, kg_v, kb_u;
    /* Every plane spans fewer than 2^31 bytes, so 32-bit gather offsets cannot overflow. */
    int offsets_fit_i32;
} ks__imgproc;

/* The source point of destination row y's x = 0 (before adding m[0] * (x + 0.5) and
 * m[3] * (x + 0.5)): the reference's statements, which every path repeats for exact results. */
static inline void ks__imgproc_row_base(const ks__imgproc *p, int32_t y, float *bx, float *by) {
    float dy = (float)y + 0.5f;
    float x = p->m[1] * dy;
    x = x + p->m[2];
    float v = p->m[4] * dy;
    v = v + p->m[5];
    *bx = x;
    *by = v;
}

/* ks_image_to_tensor with an explicit ISA bit set (0: scalar reference only), so tests can
 * compare the fast paths with the reference in one process. */
ks_status ks__image_to_tensor_isa(const ks_image *src, const ks_image_to_tensor_desc *desc,
                                  ks_tensor *dst, uint32_t isa);

/* The reference: destination pixels [x_begin, x_end) of destination row y. */
void ks__imgproc_span_scalar(const ks__imgproc *p, int32_t y, int32_t x_begin, int32_t x_end);

#if defined(__x86_64__)
/* Whole destination rows [y_begin, y_end); bilinear only (the caller checks). */
void ks__imgproc_rows_avx2(const ks__imgproc *p, int32_t y_begin, int32_t y_end);
/* Destination pixels [x_begin, x_end) of row y by the AVX2 sampler; f32 NHWC 3-channel output
 * (else the reference does them). */
void ks__imgproc_span_avx2(const ks__imgproc *p, int32_t y, int32_t x_begin, int32_t x_end);
/* The same contract as rows_avx2, 16 pixels per step; AVX-512 F + DQ + BW. Takes the rotated
 * and scaled maps of RGBA/BGRA, RGB/BGR, NV21/NV12 and I420 sources into f32 NHWC RGB/BGR (the
 * models' input), hands everything else to rows_avx2. */
void ks__imgproc_rows_avx512(const ks__imgproc *p, int32_t y_begin, int32_t y_end);
#endif
#if defined(__aarch64__)
/* The same contract, 4 pixels per step (arm/neon/imgproc_neon.c). */
void ks__imgproc_rows_neon(const ks__imgproc *p, int32_t y_begin, int32_t y_end);
#endif
#if defined(__wasm_simd128__)
/* The same contract, 4 pixels per step (wasm/simd128/imgproc_simd128.c). */
void ks__imgproc_rows_simd128(const ks__imgproc *p, int32_t y_begin, int32_t y_end);
#endif

#endif /* KESTREL_IMGPROC_IMPL_H */
