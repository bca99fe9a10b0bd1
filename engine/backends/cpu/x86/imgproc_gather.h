/* The gather sampler of ks_image_to_tensor's x86 paths, written once for both widths: AVX2, 8
 * lanes (avx2/imgproc_avx2.c), and AVX-512, 16 lanes (avx512/imgproc_avx512.c). Each of those
 * files defines the vector types and operations below as macros, then includes this header once;
 * the header defines the per-kind sampler of the points whose taps lie inside the fast region,
 * the REPLICATE edge sampler, the YUV conversion, the blends and the tap coordinates. The row
 * loops, the other edge cases and the stores stay in each file.
 *
 * Types: VF (float lanes), VI (32-bit integer lanes). Operations:
 *   VF_SET1(float), VF_ZERO(), VF_ADD, VF_SUB, VF_MUL, VF_MIN, VF_MAX (the vminps / vmaxps rule),
 *   VF_FLOOR(v), VF_FROM_I(VI) (vcvtdq2ps), VI_TRUNC(VF) (vcvttps2dq),
 *   VI_SET1(int32_t), VI_ADD, VI_AND, VI_MULLO, VI_SRLI(v, n) and VI_SLLI(v, n) (n a constant),
 *   VI_SRLV(v, counts), VI_GATHER(base, offsets): 4 bytes at base + offset per lane,
 *   VI_SHUFB(v, control) (vpshufb: bytes within each 128-bit lane), VI_BCAST128(__m128i),
 *   VI_MIN, VI_MAX (signed), VI_SUB, VF_SEL_GT(a, b, x, y) (x in the lanes where the integer a
 *   is above b, else y).
 *
 * Exactness: the arithmetic repeats ks__imgproc_span_scalar statement by statement, one
 * operation each, never fused (the build is C11 without GNU extensions: gcc does not contract
 * across statements), so the results are bit-identical to the reference
 * (engine/tests/unit/test_imgproc.c checks every path this CPU runs). Not a published API. */
#ifndef KESTREL_X86_IMGPROC_GATHER_H
#define KESTREL_X86_IMGPROC_GATHER_H

#include "../imgproc_impl.h"

/* Every helper of the row loops is forced inline, whatever gcc's inlining budget decides. */
#define ALWAYS_INLINE __attribute__((always_inline)) static inline

typedef struct vec_rgb {
    VF r, g, b;
} vec_rgb;

/* The samplers are instantiated once per source kind, so each copy keeps only its format's
 * work: BGR orders differ only in byte shifts, NV21 and NV12 in constant byte positions. */
enum sample_kind { KIND_RGBA, KIND_RGB, KIND_GRAY, KIND_NV21, KIND_NV12, KIND_I420 };

/* VI_SHUFB control that moves byte k of each 32-bit lane to its low byte and zeroes the others;
 * adding j to it (j + k < 4) takes byte k + j instead. */
ALWAYS_INLINE VI byte_ctrl(int k) {
    const int z = (int)0x80808000u; /* bytes 1..3 from nowhere: zero */
    return VI_BCAST128(_mm_setr_epi32(k | z, (4 + k) | z, (8 + k) | z, (12 + k) | z));
}

/* Byte shift / 8 of each lane as a float: one AND for the low byte, one byte shuffle for the
 * others (not a shift and an AND). */
ALWAYS_INLINE VF byte_f(VI v, int shift) {
    if (shift == 0) return VF_FROM_I(VI_AND(v, VI_SET1(0xff)));
    return VF_FROM_I(VI_SHUFB(v, byte_ctrl(shift / 8)));
}

ALWAYS_INLINE VF clamp255(VF v) {
    v = VF_MAX(v, VF_ZERO());
    return VF_MIN(v, VF_SET1(255.0f));
}

ALWAYS_INLINE vec_rgb yuv_to_rgb(const ks__imgproc *p, VF Y, VF U, VF V) {
    const VF c128 = VF_SET1(128.0f);
    VF yy = VF_SUB(Y, VF_SET1(p->y_offset));
    yy = VF_MUL(yy, VF_SET1(p->y_scale));
    VF u = VF_SUB(U, c128), v = VF_SUB(V, c128);
    VF t = VF_MUL(VF_SET1(p->kr_v), v);
    VF r = VF_ADD(yy, t);
    t = VF_MUL(VF_SET1(p->kg_u), u);
    VF g = VF_SUB(yy, t);
    t = VF_MUL(VF_SET1(p->kg_v), v);
    g = VF_SUB(g, t);
    t = VF_MUL(VF_SET1(p->kb_u), u);
    VF b = VF_ADD(yy, t);
    vec_rgb out = {clamp255(r), clamp255(g), clamp255(b)};
    return out;
}

ALWAYS_INLINE VF lerp2(VF p00, VF p01, VF p10, VF p11, VF ax, VF ay) {
    VF d = VF_SUB(p01, p00);
    d = VF_MUL(d, ax);
    VF top = VF_ADD(p00, d);
    d = VF_SUB(p11, p10);
    d = VF_MUL(d, ax);
    VF bot = VF_ADD(p10, d);
    d = VF_SUB(bot, top);
    d = VF_MUL(d, ay);
    return VF_ADD(top, d);
}

/* Largest tap column ix (the left one of a pair) whose 4-byte gathers stay inside the row. */
static inline int32_t fast_x_max(const ks__imgproc *p) {
    int32_t w = p->width_px, cw = (w + 1) / 2;
    switch (p->format) {
    case KS_PIXEL_FORMAT_RGBA:
    case KS_PIXEL_FORMAT_BGRA:
        return w - 2;
    case KS_PIXEL_FORMAT_RGB:
    case KS_PIXEL_FORMAT_BGR:
        return w - 3; /* 4-byte read at 3 * (ix + 1) */
    case KS_PIXEL_FORMAT_GRAY:
    case KS_PIXEL_FORMAT_NV21:
    case KS_PIXEL_FORMAT_NV12:
        return w - 4; /* 4-byte read at ix; NV chroma then ends within 2 * cw */
    case KS_PIXEL_FORMAT_I420: {
        int32_t a = w - 4, b = 2 * cw - 8;
        return a < b ? a : b;
    }
    default:
        return -1;
    }
}

/* Source columns (or rows) of the lanes' destination points: s - 0.5 clamped to [lo, hi], its
 * floor (i_out) and fraction (a_out). */
ALWAYS_INLINE void tap_coords(VF s, VF half, VF lo, VF hi, VI *i_out, VF *a_out) {
    VF u = VF_MIN(VF_MAX(VF_SUB(s, half), lo), hi);
    VF fu = VF_FLOOR(u);
    *a_out = VF_SUB(u, fu);
    *i_out = VI_TRUNC(fu);
}

/* A YUV point's taps as fetched: y0 and y1 hold the luma bytes at (ix, iy) and (ix + 1, iy), and
 * at (ix, iy + 1) and (ix + 1, iy + 1), in their two low bytes; c[r] the 4 chroma bytes from
 * column 2 * (ix >> 1) of chroma row cy[r] (NV: U and V interleaved), or for I420 c[r] and c2[r]
 * the U and V bytes from column ix >> 1 of the two planes. Each sampler fetches them its own
 * way (gathers, or window loads and permutes); the arithmetic after is one. */
typedef struct yuv_taps {
    VI y0, y1, c[2], c2[2];
} yuv_taps;

/* Bilinear RGB from fetched YUV taps: the right chroma tap takes the next sample when ix is
 * odd; Y, U, V are blended, then converted once (the reference's rule for taps inside). */
ALWAYS_INLINE vec_rgb yuv_from_taps(const ks__imgproc *p, const enum sample_kind kind, VI ix,
                                    const yuv_taps *t, VF ax, VF ay) {
    VF Y[4] = {byte_f(t->y0, 0), byte_f(t->y0, 8), byte_f(t->y1, 0), byte_f(t->y1, 8)};
    VI odd = VI_AND(ix, VI_SET1(1));
    VF U[4], V[4];
    if (kind == KIND_I420) {
        const VI next = VI_ADD(byte_ctrl(0), odd); /* byte 1 when odd */
        for (int r = 0; r < 2; r++) {
            U[2 * r] = byte_f(t->c[r], 0);
            V[2 * r] = byte_f(t->c2[r], 0);
            U[2 * r + 1] = VF_FROM_I(VI_SHUFB(t->c[r], next));
            V[2 * r + 1] = VF_FROM_I(VI_SHUFB(t->c2[r], next));
        }
    } else {
        const int u_at = kind == KIND_NV21 ? 1 : 0; /* NV21 is V, U; NV12 U, V */
        const VI odd2 = VI_ADD(odd, odd);           /* the next pair when odd */
        const VI u_next = VI_ADD(byte_ctrl(u_at), odd2), v_next = VI_ADD(byte_ctrl(1 - u_at), odd2);
        for (int r = 0; r < 2; r++) {
            U[2 * r] = byte_f(t->c[r], 8 * u_at);
            V[2 * r] = byte_f(t->c[r], 8 * (1 - u_at));
            U[2 * r + 1] = VF_FROM_I(VI_SHUFB(t->c[r], u_next));
            V[2 * r + 1] = VF_FROM_I(VI_SHUFB(t->c[r], v_next));
        }
    }
    return yuv_to_rgb(p, lerp2(Y[0], Y[1], Y[2], Y[3], ax, ay),
                      lerp2(U[0], U[1], U[2], U[3], ax, ay), lerp2(V[0], V[1], V[2], V[3], ax, ay));
}

/* 4 bytes at base + row + col per lane. Safe: nothing past byte col_max + 3 of the row is read
 * (the read starts at min(col, col_max) and the lane shifts down by the difference; the bytes
 * shifted in are zero, and callers use at most the first col_max + 4 - col of them). */
ALWAYS_INLINE VI fetch4(const uint8_t *base, VI row, VI col, const int safe, int32_t col_max) {
    if (!safe) return VI_GATHER(base, VI_ADD(row, col));
    VI c = VI_MIN(col, VI_SET1(col_max));
    VI v = VI_GATHER(base, VI_ADD(row, c));
    return VI_SRLV(v, VI_SLLI(VI_SUB(col, c), 3));
}

/* Bilinear RGB of the lanes' points from taps at columns ix and ix + 1 of rows iy0 and iy1.
 * Unsafe (safe = 0): the 4 taps are inside the fast region (ix in [0, fast_x_max], iy0 in
 * [0, h - 2], iy1 = iy0 + 1). Safe: ix in [0, w - 2], rows in [0, h - 1], w >= 8, and the reads
 * back off at the row ends (sample_replicate). */
ALWAYS_INLINE vec_rgb sample_rows(const ks__imgproc *p, const enum sample_kind kind, VI ix, VI iy0,
                                  VI iy1, VF ax, VF ay, const int safe) {
    VI s0 = VI_SET1((int32_t)p->stride_bytes[0]);
    VI row0 = VI_MULLO(iy0, s0);
    VI row1 = safe ? VI_MULLO(iy1, s0) : VI_ADD(row0, s0); /* unsafe: iy1 = iy0 + 1 */
    const uint8_t *base = p->plane[0];
    const int32_t w = p->width_px, cw = (w + 1) / 2;
    vec_rgb out;
    if (kind == KIND_RGBA || kind == KIND_RGB) {
        int bgr = p->format == KS_PIXEL_FORMAT_BGRA || p->format == KS_PIXEL_FORMAT_BGR;
        const int32_t b = kind == KIND_RGBA ? 4 : 3;
        VI bpp = VI_SET1(b);
        VI c0 = VI_MULLO(ix, bpp);
        VI c1 = VI_ADD(c0, bpp);
        /* RGBA reads end at the pixel's last byte; RGB's 4th byte may pass the row's end */
        const int s = safe && kind == KIND_RGB;
        VI v00 = fetch4(base, row0, c0, s, b * w - 4);
        VI v01 = fetch4(base, row0, c1, s, b * w - 4);
        VI v10 = fetch4(base, row1, c0, s, b * w - 4);
        VI v11 = fetch4(base, row1, c1, s, b * w - 4);
        int rs = bgr ? 16 : 0, bs = bgr ? 0 : 16;
        out.r = lerp2(byte_f(v00, rs), byte_f(v01, rs), byte_f(v10, rs), byte_f(v11, rs), ax, ay);
        out.g = lerp2(byte_f(v00, 8), byte_f(v01, 8), byte_f(v10, 8), byte_f(v11, 8), ax, ay);
        out.b = lerp2(byte_f(v00, bs), byte_f(v01, bs), byte_f(v10, bs), byte_f(v11, bs), ax, ay);
        return out;
    }
    if (kind == KIND_GRAY) {
        VI v0 = fetch4(base, row0, ix, safe, w - 4);
        VI v1 = fetch4(base, row1, ix, safe, w - 4);
        out.r = lerp2(byte_f(v0, 0), byte_f(v0, 8), byte_f(v1, 0), byte_f(v1, 8), ax, ay);
        out.g = out.b = out.r;
        return out;
    }
    /* YUV: luma pairs from one gather per row, chroma per tap. */
    yuv_taps t;
    t.y0 = fetch4(base, row0, ix, safe, w - 4);
    t.y1 = fetch4(base, row1, ix, safe, w - 4);
    /* Chroma: the taps' columns are cx0 = ix >> 1 and cx0 + (ix & 1), so one 4-byte gather per
     * chroma row (and plane) at cx0 holds both; the right tap takes the next sample when ix is
     * odd. In the fast region ix <= w - 4, so cx0 + 1 < ceil(w / 2) stays inside the row; the
     * safe reads back off instead. */
    VI cx0 = VI_SRLI(ix, 1);
    VI s1 = VI_SET1((int32_t)p->stride_bytes[1]);
    VI cy[2] = {VI_SRLI(iy0, 1), VI_SRLI(iy1, 1)};
    for (int r = 0; r < 2; r++) {
        VI crow = VI_MULLO(cy[r], s1);
        if (kind == KIND_I420) {
            VI s2 = VI_SET1((int32_t)p->stride_bytes[2]);
            VI crow2 = VI_MULLO(cy[r], s2);
            t.c[r] = fetch4(p->plane[1], crow, cx0, safe, cw - 4);
            t.c2[r] = fetch4(p->plane[2], crow2, cx0, safe, cw - 4);
        } else {
            t.c[r] = fetch4(p->plane[1], crow, VI_ADD(cx0, cx0), safe, 2 * cw - 4);
        }
    }
    return yuv_from_taps(p, kind, ix, &t, ax, ay);
}

/* Bilinear RGB of the lanes' points with a REPLICATE border, taps anywhere (the groups on and
 * past the image's edge): the reference clamps each tap into the image. Rows: each of the two
 * clamped on its own (past the top or bottom both are the edge row, whose blend with itself is
 * exact). Columns: left of the image the pair at 0 with weight 0 on its right tap, right of it
 * the pair at w - 2 with weight 1; blends of whole sample values then give the edge sample
 * exactly, as the reference's two equal taps do (for YUV the chroma tap of column w - 1 is the
 * right one of that pair). Reads back off at row ends. Needs w >= 8 and h >= 2. */
ALWAYS_INLINE vec_rgb sample_replicate(const ks__imgproc *p, const enum sample_kind kind, VI ix,
                                       VI iy, VF ax, VF ay) {
    const VI zero = VI_SET1(0), w_pair = VI_SET1(p->width_px - 2);
    const VI h_last = VI_SET1(p->height_px - 1);
    ax = VF_SEL_GT(zero, ix, VF_ZERO(), ax);
    ix = VI_MAX(ix, zero);
    ax = VF_SEL_GT(ix, w_pair, VF_SET1(1.0f), ax);
    ix = VI_MIN(ix, w_pair);
    VI iy0 = VI_MIN(VI_MAX(iy, zero), h_last);
    VI iy1 = VI_MIN(VI_MAX(VI_ADD(iy, VI_SET1(1)), zero), h_last);
    return sample_rows(p, kind, ix, iy0, iy1, ax, ay, 1);
}

/* Bilinear RGB of the lanes' points, whose 4 taps are all inside the fast region (ix in
 * [0, fast_x_max], iy in [0, h - 2]). */
ALWAYS_INLINE vec_rgb sample_inside(const ks__imgproc *p, const enum sample_kind kind, VI ix, VI iy,
                                    VF ax, VF ay) {
    return sample_rows(p, kind, ix, iy, VI_ADD(iy, VI_SET1(1)), ax, ay, 0);
}

#endif /* KESTREL_X86_IMGPROC_GATHER_H */
