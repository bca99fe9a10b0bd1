/* The 4-lane bilinear sampler of ks_image_to_tensor, written once for the ISAs without a gather:
 * AArch64 NEON (arm/neon/imgproc_neon.c) and WebAssembly SIMD128
 * (wasm/simd128/imgproc_simd128.c). Each of those files defines the vector types and operations
 * below, then includes this header once; the header defines the row loop as
 * ks__imgproc_v4_rows().
 *
 * Types: v4f (4 floats), v4i (4 x 32-bit integers, also lane masks: all ones or zero), v4b (a
 * byte-index vector for v4_byte_f). Operations (static inline):
 *   v4f  v4f_set1(float), v4f_add, v4f_sub, v4f_mul, v4f_floor,
 *        v4f_clamp(v, lo, hi): min(max(v, lo), hi) as the reference's compare-and-select gives
 *        it on finite values, v4f_from_i32(v4i), v4f_select(v4i mask, v4f a, v4f b): mask ? a : b
 *   v4i  v4i_set1(int32_t), v4i_iota() (0, 1, 2, 3), v4i_add, v4i_mul, v4i_and,
 *        v4i_shr(v, n) (logical, n a constant), v4i_eq, v4i_gt (signed), v4i_le_u (unsigned),
 *        v4i_min, v4i_max (signed), v4i_trunc(v4f) (the C (int32_t) cast on in-range values),
 *        v4i_select(mask, a, b); V4I_GET(v, lane) and V4I_SET(v, lane, x) (macros: constant
 *        lanes); int v4i_all(mask): every lane set
 *   v4b  v4b_load(const uint8_t idx[16]); v4f v4_byte_f(v4i v, v4b idx): the byte idx selects in
 *        each lane (an index >= 16 gives 0) as a float
 *   void v4_store_f32(float *, v4f), v4_store3_f32(float *, v4f r, v4f g, v4f b) (interleaved),
 *        uint32_t v4_to_u8x4(v4f v): v (in [0.5, 255.5)) truncated to bytes, lane 0 lowest
 *
 * Exactness: the arithmetic repeats ks__imgproc_span_scalar statement by statement, with
 * separate multiply and add (never fused), so the results are bit-identical to the reference
 * (engine/tests/unit/test_imgproc.c under qemu for NEON, bench/wasm/imgproc_check.c under Node
 * for SIMD128).
 *
 * AArch64 and SIMD128 have no gather, so each lane's tap bytes are read with one scalar load
 * inserted into a vector; bytes then go to 32-bit lanes with one table lookup each, which lets a
 * load start anywhere inside the 4 bytes it covers. That is why the fast region here is wider
 * than AVX2's: a load never needs to reach past the last byte a tap uses (see fast_x_max).
 * Groups of 4 with any tap outside the fast region take sample4_edge (still vectorized, exact
 * byte reads at clamped positions; groups made only of letterbox padding are filled with the
 * border colour there); only row tails (width % 4) and nearest sampling use the scalar code. */
#ifndef KESTREL_IMGPROC_V4_H
#define KESTREL_IMGPROC_V4_H

#include <string.h>

#include "imgproc_impl.h"

/* Every helper is forced inline: the row loop is instantiated once per source kind, and no copy
 * may call sample4 out of line (returning its vectors through memory). */
#define V4_INLINE __attribute__((always_inline)) static inline

typedef struct v4_rgb {
    v4f r, g, b;
} v4_rgb;

/* The fast sampler is compiled once per source kind (v4_rows_kind), so each copy keeps in
 * registers only the constants its format needs (the NV21 loop holds about 28). */
enum v4_kind { V4_RGBA, V4_RGB, V4_GRAY, V4_NV, V4_I420 };

/* Per-call constants. The output stores go through a void pointer, so reading p->... inside the
 * loop would make the compiler reload them after every store. */
typedef struct v4_ctx {
    const ks__imgproc *p;
    v4f y_offset, y_scale, kr_v, kg_u, kg_v, kb_u;
    /* byte indices, byte k of each 32-bit lane -> the lane's low byte: byte[k] for k = 0..3, and
     * per format the bytes of R, G, B (RGB: left then right tap) or U and V (NV21/NV12) */
    v4b byte[4], r0, g0, b0, r1, g1, b1, u, v;
    int32_t s0, s1, s2; /* plane strides (offsets_fit_i32 holds) */
    const uint8_t *plane0, *plane1, *plane2;
} v4_ctx;

static v4b v4_byte_index(int k) {
    uint8_t idx[16];
    memset(idx, 0xff, sizeof(idx)); /* out of range: the lookup writes 0 */
    for (int lane = 0; lane < 4; lane++)
        idx[4 * lane] = (uint8_t)(4 * lane + k);
    return v4b_load(idx);
}

V4_INLINE v4f v4_clamp255(v4f v) {
    return v4f_clamp(v, v4f_set1(0.0f), v4f_set1(255.0f));
}

/* One read of size (1..4) bytes at q, zero-extended. */
V4_INLINE uint32_t v4_read_px(const uint8_t *q, int size) {
    uint32_t w;
    uint16_t h;
    switch (size) {
    case 4:
        memcpy(&w, q, 4);
        return w;
    case 3:
        memcpy(&h, q, 2);
        return (uint32_t)h | (uint32_t)q[2] << 16;
    case 2:
        memcpy(&h, q, 2);
        return h;
    default:
        return q[0];
    }
}

/* The missing gather: one read of size bytes per lane at base + off[lane], inserted into the
 * lane. Never reads outside [off, off + size). */
V4_INLINE v4i v4_gather(const uint8_t *base, v4i off, int size) {
    v4i v = v4i_set1((int32_t)v4_read_px(base + (uint32_t)V4I_GET(off, 0), size));
    v = V4I_SET(v, 1, (int32_t)v4_read_px(base + (uint32_t)V4I_GET(off, 1), size));
    v = V4I_SET(v, 2, (int32_t)v4_read_px(base + (uint32_t)V4I_GET(off, 2), size));
    return V4I_SET(v, 3, (int32_t)v4_read_px(base + (uint32_t)V4I_GET(off, 3), size));
}

V4_INLINE v4_rgb v4_yuv_to_rgb(const v4_ctx *c, v4f Y, v4f U, v4f V) {
    const v4f c128 = v4f_set1(128.0f);
    v4f yy = v4f_sub(Y, c->y_offset);
    yy = v4f_mul(yy, c->y_scale);
    v4f u = v4f_sub(U, c128), v = v4f_sub(V, c128);
    v4f t = v4f_mul(c->kr_v, v);
    v4f r = v4f_add(yy, t);
    t = v4f_mul(c->kg_u, u);
    v4f g = v4f_sub(yy, t);
    t = v4f_mul(c->kg_v, v);
    g = v4f_sub(g, t);
    t = v4f_mul(c->kb_u, u);
    v4f b = v4f_add(yy, t);
    v4_rgb out = {v4_clamp255(r), v4_clamp255(g), v4_clamp255(b)};
    return out;
}

V4_INLINE v4f v4_lerp2(v4f p00, v4f p01, v4f p10, v4f p11, v4f ax, v4f ay) {
    v4f d = v4f_sub(p01, p00);
    d = v4f_mul(d, ax);
    v4f top = v4f_add(p00, d);
    d = v4f_sub(p11, p10);
    d = v4f_mul(d, ax);
    v4f bot = v4f_add(p10, d);
    d = v4f_sub(bot, top);
    d = v4f_mul(d, ay);
    return v4f_add(top, d);
}

V4_INLINE v4_rgb v4_lerp_rgb(const v4_rgb c[4], v4f ax, v4f ay) {
    v4_rgb o;
    o.r = v4_lerp2(c[0].r, c[1].r, c[2].r, c[3].r, ax, ay);
    o.g = v4_lerp2(c[0].g, c[1].g, c[2].g, c[3].g, ax, ay);
    o.b = v4_lerp2(c[0].b, c[1].b, c[2].b, c[3].b, ax, ay);
    return o;
}

/* lanes of v shifted right by `bits` where mask is set, unchanged elsewhere */
V4_INLINE v4i v4_shr_where(v4i v, int bits, v4i mask) {
    return v4i_select(mask, bits == 16 ? v4i_shr(v, 16) : v4i_shr(v, 8), v);
}

/* Largest left tap column ix for which every byte the fast sampler reads is inside the row:
 *   RGBA/BGRA  4 bytes at 4 ix and at 4 (ix + 1)
 *   RGB/BGR    4 bytes at 3 ix (ends on the right pixel's R) and at 3 ix + 2 (ends on its B)
 *   GRAY, Y    2 bytes at ix
 *   NV21/NV12  4 bytes at 2 (ix >> 1): both taps' chroma pairs, so ix >> 1 <= ceil(w/2) - 2
 *   I420       2 bytes at ix >> 1 in U and in V: the same bound
 * -1 when the image is too narrow for any. */
static int32_t v4_fast_x_max(const ks__imgproc *p) {
    int32_t w = p->width_px;
    switch (p->format) {
    case KS_PIXEL_FORMAT_NV21:
    case KS_PIXEL_FORMAT_NV12:
    case KS_PIXEL_FORMAT_I420:
        return w - 3; /* (w - 3) >> 1 = ceil(w/2) - 2 for odd and even w */
    default:
        return w - 2;
    }
}

/* Bilinear RGB of 4 points whose taps (ix..ix+1, iy..iy+1) are all in the fast region. */
V4_INLINE v4_rgb v4_sample4(const v4_ctx *c, const enum v4_kind kind, v4i ix, v4i iy, v4f ax,
                            v4f ay) {
    v4i row0 = v4i_mul(iy, v4i_set1(c->s0));
    v4i row1 = v4i_add(row0, v4i_set1(c->s0));
    v4_rgb t[4];
    if (kind == V4_RGBA || kind == V4_RGB) {
        /* left pixel: a read at its start; right pixel: a read at its start (RGBA) or one byte
         * before it (RGB, so the read ends on its last byte); c->r1.. pick the bytes */
        v4i c0 = v4i_mul(ix, v4i_set1(kind == V4_RGBA ? 4 : 3));
        v4i c1 = v4i_add(c0, v4i_set1(kind == V4_RGBA ? 4 : 2));
        v4i v[4] = {
            v4_gather(c->plane0, v4i_add(row0, c0), 4), v4_gather(c->plane0, v4i_add(row0, c1), 4),
            v4_gather(c->plane0, v4i_add(row1, c0), 4), v4_gather(c->plane0, v4i_add(row1, c1), 4)};
        for (int k = 0; k < 4; k++) {
            t[k].r = v4_byte_f(v[k], (k & 1) ? c->r1 : c->r0);
            t[k].g = v4_byte_f(v[k], (k & 1) ? c->g1 : c->g0);
            t[k].b = v4_byte_f(v[k], (k & 1) ? c->b1 : c->b0);
        }
        return v4_lerp_rgb(t, ax, ay);
    }
    if (kind == V4_GRAY) {
        v4i v0 = v4_gather(c->plane0, v4i_add(row0, ix), 2);
        v4i v1 = v4_gather(c->plane0, v4i_add(row1, ix), 2);
        v4_rgb o;
        o.r = v4_lerp2(v4_byte_f(v0, c->byte[0]), v4_byte_f(v0, c->byte[1]),
                       v4_byte_f(v1, c->byte[0]), v4_byte_f(v1, c->byte[1]), ax, ay);
        o.g = o.b = o.r;
        return o;
    }
    /* YUV: a luma pair per row from one 2-byte read; one chroma read per chroma row at the left
     * tap's sample cx0 = ix >> 1 covers both taps (the right one is cx0 + (ix & 1)), shifted down
     * one sample for odd ix. */
    v4i y0 = v4_gather(c->plane0, v4i_add(row0, ix), 2);
    v4i y1 = v4_gather(c->plane0, v4i_add(row1, ix), 2);
    v4i cx0 = v4i_shr(ix, 1);
    v4i odd = v4i_eq(v4i_and(ix, v4i_set1(1)), v4i_set1(1));
    v4i cy0 = v4i_shr(iy, 1), cy1 = v4i_shr(v4i_add(iy, v4i_set1(1)), 1);
    /* chroma of the 4 taps: left/right x top/bottom */
    v4f u0l, v0l, u0r, v0r, u1l, v1l, u1r, v1r;
    if (kind == V4_I420) {
        v4i s1 = v4i_set1(c->s1), s2 = v4i_set1(c->s2);
        v4i u0 = v4_gather(c->plane1, v4i_add(cx0, v4i_mul(cy0, s1)), 2);
        v4i v0 = v4_gather(c->plane2, v4i_add(cx0, v4i_mul(cy0, s2)), 2);
        v4i u1 = v4_gather(c->plane1, v4i_add(cx0, v4i_mul(cy1, s1)), 2);
        v4i v1 = v4_gather(c->plane2, v4i_add(cx0, v4i_mul(cy1, s2)), 2);
        u0l = v4_byte_f(u0, c->byte[0]);
        v0l = v4_byte_f(v0, c->byte[0]);
        u0r = v4_byte_f(v4_shr_where(u0, 8, odd), c->byte[0]);
        v0r = v4_byte_f(v4_shr_where(v0, 8, odd), c->byte[0]);
        u1l = v4_byte_f(u1, c->byte[0]);
        v1l = v4_byte_f(v1, c->byte[0]);
        u1r = v4_byte_f(v4_shr_where(u1, 8, odd), c->byte[0]);
        v1r = v4_byte_f(v4_shr_where(v1, 8, odd), c->byte[0]);
    } else {
        v4i s1 = v4i_set1(c->s1);
        v4i cx2 = v4i_add(cx0, cx0);
        v4i uv0 = v4_gather(c->plane1, v4i_add(cx2, v4i_mul(cy0, s1)), 4);
        v4i uv1 = v4_gather(c->plane1, v4i_add(cx2, v4i_mul(cy1, s1)), 4);
        v4i uv0r = v4_shr_where(uv0, 16, odd), uv1r = v4_shr_where(uv1, 16, odd);
        u0l = v4_byte_f(uv0, c->u);
        v0l = v4_byte_f(uv0, c->v);
        u0r = v4_byte_f(uv0r, c->u);
        v0r = v4_byte_f(uv0r, c->v);
        u1l = v4_byte_f(uv1, c->u);
        v1l = v4_byte_f(uv1, c->v);
        u1r = v4_byte_f(uv1r, c->u);
        v1r = v4_byte_f(uv1r, c->v);
    }
    /* blend Y, U, V, then convert once (the reference's rule for taps inside the image) */
    v4f Y = v4_lerp2(v4_byte_f(y0, c->byte[0]), v4_byte_f(y0, c->byte[1]),
                     v4_byte_f(y1, c->byte[0]), v4_byte_f(y1, c->byte[1]), ax, ay);
    return v4_yuv_to_rgb(c, Y, v4_lerp2(u0l, u0r, u1l, u1r, ax, ay),
                         v4_lerp2(v0l, v0r, v1l, v1r, ax, ay));
}

V4_INLINE v4i v4_clamp_i32(v4i v, int32_t hi) {
    return v4i_min(v4i_max(v, v4i_set1(0)), v4i_set1(hi));
}

/* Bilinear RGB of 4 points with taps anywhere: each tap is read at its clamped position (the
 * reference's REPLICATE rule) with reads of exactly the tap's bytes, so it is safe on planes of
 * any size; for ZERO/CONSTANT borders, taps outside the image take the border colour before the
 * blend, as the reference's fetch does, and YUV lanes with such a tap are converted per tap. */
__attribute__((noinline)) static v4_rgb v4_sample4_edge(const v4_ctx *c, v4i ix, v4i iy, v4f ax,
                                                        v4f ay) {
    const ks__imgproc *p = c->p;
    const v4i one = v4i_set1(1), minus1 = v4i_set1(-1);
    int32_t w = p->width_px, h = p->height_px;
    const v4f border[3] = {v4f_set1(p->border_rgb[0]), v4f_set1(p->border_rgb[1]),
                           v4f_set1(p->border_rgb[2])};
    if (p->border != KS_BORDER_REPLICATE) {
        /* letterbox padding: all four taps of every lane are outside, and the reference's lerp
         * of four equal border taps gives the border exactly */
        v4i out = v4i_select(v4i_gt(minus1, ix), minus1, v4i_gt(ix, v4i_set1(w - 1)));
        out = v4i_select(out, minus1, v4i_gt(minus1, iy));
        out = v4i_select(out, minus1, v4i_gt(iy, v4i_set1(h - 1)));
        if (v4i_all(out)) {
            v4_rgb b = {border[0], border[1], border[2]};
            return b;
        }
    }
    v4i xs[2] = {ix, v4i_add(ix, one)}, ys[2] = {iy, v4i_add(iy, one)};
    v4i xc[2] = {v4_clamp_i32(xs[0], w - 1), v4_clamp_i32(xs[1], w - 1)};
    v4i yc[2] = {v4_clamp_i32(ys[0], h - 1), v4_clamp_i32(ys[1], h - 1)};
    v4_rgb t[4];
    v4f Yt[4], Ut[4], Vt[4]; /* YUV sources: the taps' samples */
    const int yuv = p->format == KS_PIXEL_FORMAT_NV21 || p->format == KS_PIXEL_FORMAT_NV12 ||
                    p->format == KS_PIXEL_FORMAT_I420;
    for (int k = 0; k < 4; k++) {
        v4i x = xc[k & 1], y = yc[k >> 1];
        v4i row = v4i_mul(y, v4i_set1(c->s0));
        switch (p->format) {
        case KS_PIXEL_FORMAT_RGBA:
        case KS_PIXEL_FORMAT_BGRA:
        case KS_PIXEL_FORMAT_RGB:
        case KS_PIXEL_FORMAT_BGR: {
            int four = p->format == KS_PIXEL_FORMAT_RGBA || p->format == KS_PIXEL_FORMAT_BGRA;
            int bgr = p->format == KS_PIXEL_FORMAT_BGRA || p->format == KS_PIXEL_FORMAT_BGR;
            v4i v = v4_gather(c->plane0, v4i_add(row, v4i_mul(x, v4i_set1(four ? 4 : 3))),
                              four ? 4 : 3);
            t[k].r = v4_byte_f(v, c->byte[bgr ? 2 : 0]);
            t[k].g = v4_byte_f(v, c->byte[1]);
            t[k].b = v4_byte_f(v, c->byte[bgr ? 0 : 2]);
            break;
        }
        case KS_PIXEL_FORMAT_GRAY:
            t[k].r = v4_byte_f(v4_gather(c->plane0, v4i_add(row, x), 1), c->byte[0]);
            t[k].g = t[k].b = t[k].r;
            break;
        default: {
            v4i cx = v4i_shr(x, 1), cy = v4i_shr(y, 1);
            Yt[k] = v4_byte_f(v4_gather(c->plane0, v4i_add(row, x), 1), c->byte[0]);
            if (p->format == KS_PIXEL_FORMAT_I420) {
                Ut[k] = v4_byte_f(
                    v4_gather(c->plane1, v4i_add(cx, v4i_mul(cy, v4i_set1(c->s1))), 1), c->byte[0]);
                Vt[k] = v4_byte_f(
                    v4_gather(c->plane2, v4i_add(cx, v4i_mul(cy, v4i_set1(c->s2))), 1), c->byte[0]);
            } else {
                v4i uv =
                    v4_gather(c->plane1, v4i_add(v4i_add(cx, cx), v4i_mul(cy, v4i_set1(c->s1))), 2);
                Ut[k] = v4_byte_f(uv, c->u);
                Vt[k] = v4_byte_f(uv, c->v);
            }
            break;
        }
        }
        if (yuv) continue;
        if (p->border != KS_BORDER_REPLICATE) {
            /* outside: x or y differs from its clamped value */
            v4i in = v4i_and(v4i_eq(xs[k & 1], xc[k & 1]), v4i_eq(ys[k >> 1], yc[k >> 1]));
            t[k].r = v4f_select(in, t[k].r, border[0]);
            t[k].g = v4f_select(in, t[k].g, border[1]);
            t[k].b = v4f_select(in, t[k].b, border[2]);
        }
    }
    if (yuv) {
        /* The reference blends Y, U, V and converts once, except in lanes where a tap takes a
         * constant border colour: there each tap is converted and the RGB blended. */
        v4_rgb o = v4_yuv_to_rgb(c, v4_lerp2(Yt[0], Yt[1], Yt[2], Yt[3], ax, ay),
                                 v4_lerp2(Ut[0], Ut[1], Ut[2], Ut[3], ax, ay),
                                 v4_lerp2(Vt[0], Vt[1], Vt[2], Vt[3], ax, ay));
        if (p->border == KS_BORDER_REPLICATE) return o;
        v4i inside = v4i_and(v4i_and(v4i_eq(xs[0], xc[0]), v4i_eq(xs[1], xc[1])),
                             v4i_and(v4i_eq(ys[0], yc[0]), v4i_eq(ys[1], yc[1])));
        if (v4i_all(inside)) return o;
        for (int k = 0; k < 4; k++) {
            t[k] = v4_yuv_to_rgb(c, Yt[k], Ut[k], Vt[k]);
            v4i in = v4i_and(v4i_eq(xs[k & 1], xc[k & 1]), v4i_eq(ys[k >> 1], yc[k >> 1]));
            t[k].r = v4f_select(in, t[k].r, border[0]);
            t[k].g = v4f_select(in, t[k].g, border[1]);
            t[k].b = v4f_select(in, t[k].b, border[2]);
        }
        v4_rgb e = v4_lerp_rgb(t, ax, ay);
        o.r = v4f_select(inside, o.r, e.r);
        o.g = v4f_select(inside, o.g, e.g);
        o.b = v4f_select(inside, o.b, e.b);
        return o;
    }
    return v4_lerp_rgb(t, ax, ay);
}

/* Normalize and store 4 pixels of row y from column x. */
V4_INLINE void v4_store4(const ks__imgproc *p, const v4f *mean, const v4f *scale, size_t plane_px,
                         int32_t y, int32_t x, const v4f *val) {
    size_t pix = (size_t)y * (size_t)p->out_width_px + (size_t)x;
    int32_t nc = p->out_channels;
    v4f o[3];
    for (int32_t ch = 0; ch < nc; ch++) {
        v4f v = v4f_sub(val[ch], mean[ch]);
        o[ch] = v4f_mul(v, scale[ch]);
    }
    int planar = p->nchw || nc == 1;
    if (p->out_u8) {
        uint32_t b[3];
        for (int32_t ch = 0; ch < nc; ch++) {
            v4f v = v4_clamp255(o[ch]);
            b[ch] = v4_to_u8x4(v4f_add(v, v4f_set1(0.5f)));
            if (planar) /* dst may be unaligned */
                memcpy((uint8_t *)p->out + (size_t)ch * plane_px + pix, &b[ch], 4);
        }
        if (!planar) {
            uint8_t *dst = (uint8_t *)p->out + pix * 3;
            for (int k = 0; k < 4; k++) {
                dst[3 * k] = (uint8_t)(b[0] >> (8 * k));
                dst[3 * k + 1] = (uint8_t)(b[1] >> (8 * k));
                dst[3 * k + 2] = (uint8_t)(b[2] >> (8 * k));
            }
        }
        return;
    }
    float *out = (float *)p->out;
    if (planar) {
        for (int32_t ch = 0; ch < nc; ch++)
            v4_store_f32(out + (size_t)ch * plane_px + pix, o[ch]);
        return;
    }
    v4_store3_f32(out + pix * 3, o[0], o[1], o[2]); /* r0 g0 b0 r1 g1 b1 ... */
}

/* The row loop for one source kind; always inlined so that each kind gets its own copy. */
V4_INLINE void v4_rows_kind(const v4_ctx *cp, int32_t y_begin, int32_t y_end,
                            const enum v4_kind kind) {
    const v4_ctx c = *cp;
    const ks__imgproc *p = c.p;
    const float *m = p->m;
    const v4f half = v4f_set1(0.5f), lo = v4f_set1(-4.0f);
    const v4f hi_x = v4f_set1((float)p->width_px + 4.0f);
    const v4f hi_y = v4f_set1((float)p->height_px + 4.0f);
    const v4f m0 = v4f_set1(m[0]), m3 = v4f_set1(m[3]);
    const v4i iota = v4i_iota();
    /* fast region: 0 <= ix <= x_max and 0 <= iy <= h - 2 (unsigned compares fold the >= 0) */
    int32_t x_max = v4_fast_x_max(p), y_max = p->height_px - 2;
    const int fast_possible = x_max >= 0 && y_max >= 0;
    const v4i x_lim = v4i_set1(x_max >= 0 ? x_max : 0);
    const v4i y_lim = v4i_set1(y_max >= 0 ? y_max : 0);
    v4f mean[3], scale[3];
    for (int ch = 0; ch < 3; ch++) {
        mean[ch] = v4f_set1(p->mean[ch]);
        scale[ch] = v4f_set1(p->scale[ch]);
    }
    const size_t plane_px = (size_t)p->out_width_px * (size_t)p->out_height_px;
    const int32_t out_w = p->out_width_px;
    const int gray_out = p->gray_out, gray_src = p->gray_src, bgr = p->bgr;

    for (int32_t y = y_begin; y < y_end; y++) {
        float bx, by;
        ks__imgproc_row_base(p, y, &bx, &by);
        const v4f bxv = v4f_set1(bx), byv = v4f_set1(by);
        int32_t x = 0;
        for (; x + 4 <= out_w; x += 4) {
            v4f dx = v4f_from_i32(v4i_add(v4i_set1(x), iota));
            dx = v4f_add(dx, half);
            v4f sx = v4f_mul(m0, dx);
            sx = v4f_add(sx, bxv);
            v4f sy = v4f_mul(m3, dx);
            sy = v4f_add(sy, byv);
            /* the reference's clamp_coord: v < -4 ? -4 : v, then v > hi ? hi : v */
            v4f u = v4f_clamp(v4f_sub(sx, half), lo, hi_x);
            v4f v = v4f_clamp(v4f_sub(sy, half), lo, hi_y);
            v4f fu = v4f_floor(u), fv = v4f_floor(v);
            v4f ax = v4f_sub(u, fu), ay = v4f_sub(v, fv);
            v4i ix = v4i_trunc(fu), iy = v4i_trunc(fv);
            v4i ok = v4i_and(v4i_le_u(ix, x_lim), v4i_le_u(iy, y_lim));
            v4_rgb rgb;
            if (fast_possible && v4i_all(ok))
                rgb = v4_sample4(&c, kind, ix, iy, ax, ay);
            else
                rgb = v4_sample4_edge(cp, ix, iy, ax, ay);
            v4f val[3];
            if (gray_out) {
                if (gray_src) {
                    val[0] = rgb.r;
                } else {
                    v4f l = v4f_mul(v4f_set1(0.299f), rgb.r);
                    v4f t = v4f_mul(v4f_set1(0.587f), rgb.g);
                    l = v4f_add(l, t);
                    t = v4f_mul(v4f_set1(0.114f), rgb.b);
                    val[0] = v4f_add(l, t);
                }
            } else {
                val[0] = bgr ? rgb.b : rgb.r;
                val[1] = rgb.g;
                val[2] = bgr ? rgb.r : rgb.b;
            }
            v4_store4(p, mean, scale, plane_px, y, x, val);
        }
        if (x < out_w) ks__imgproc_span_scalar(p, y, x, out_w);
    }
}

/* Destination rows [y_begin, y_end) of the bilinear sampling p describes. */
static void ks__imgproc_v4_rows(const ks__imgproc *p, int32_t y_begin, int32_t y_end) {
    v4_ctx c;
    memset(&c, 0, sizeof(c));
    c.p = p;
    c.y_offset = v4f_set1(p->y_offset);
    c.y_scale = v4f_set1(p->y_scale);
    c.kr_v = v4f_set1(p->kr_v);
    c.kg_u = v4f_set1(p->kg_u);
    c.kg_v = v4f_set1(p->kg_v);
    c.kb_u = v4f_set1(p->kb_u);
    for (int k = 0; k < 4; k++)
        c.byte[k] = v4_byte_index(k);
    int bgr = p->format == KS_PIXEL_FORMAT_BGRA || p->format == KS_PIXEL_FORMAT_BGR;
    int k1 = p->format == KS_PIXEL_FORMAT_RGB || p->format == KS_PIXEL_FORMAT_BGR; /* RGB: +1 */
    c.r0 = c.byte[bgr ? 2 : 0];
    c.g0 = c.byte[1];
    c.b0 = c.byte[bgr ? 0 : 2];
    c.r1 = c.byte[k1 + (bgr ? 2 : 0)];
    c.g1 = c.byte[k1 + 1];
    c.b1 = c.byte[k1 + (bgr ? 0 : 2)];
    int nv21 = p->format == KS_PIXEL_FORMAT_NV21;
    c.u = c.byte[nv21 ? 1 : 0];
    c.v = c.byte[nv21 ? 0 : 1];
    c.s0 = (int32_t)p->stride_bytes[0];
    c.s1 = (int32_t)p->stride_bytes[1];
    c.s2 = (int32_t)p->stride_bytes[2];
    c.plane0 = p->plane[0];
    c.plane1 = p->plane[1];
    c.plane2 = p->plane[2];
    switch (p->format) {
    case KS_PIXEL_FORMAT_RGBA:
    case KS_PIXEL_FORMAT_BGRA:
        v4_rows_kind(&c, y_begin, y_end, V4_RGBA);
        break;
    case KS_PIXEL_FORMAT_RGB:
    case KS_PIXEL_FORMAT_BGR:
        v4_rows_kind(&c, y_begin, y_end, V4_RGB);
        break;
    case KS_PIXEL_FORMAT_GRAY:
        v4_rows_kind(&c, y_begin, y_end, V4_GRAY);
        break;
    case KS_PIXEL_FORMAT_NV21:
    case KS_PIXEL_FORMAT_NV12:
        v4_rows_kind(&c, y_begin, y_end, V4_NV);
        break;
    case KS_PIXEL_FORMAT_I420:
        v4_rows_kind(&c, y_begin, y_end, V4_I420);
        break;
    default: /* not reached: the caller validated the format */
        for (int32_t y = y_begin; y < y_end; y++)
            ks__imgproc_span_scalar(p, y, 0, p->out_width_px);
        break;
    }
}

#endif /* KESTREL_IMGPROC_V4_H */
