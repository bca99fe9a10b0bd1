/* WebAssembly SIMD128 fast path of ks_image_to_tensor (bilinear): 4 destination pixels per
 * step, for the editor's module (Effect Studio previews camera frames through the same task
 * code as the SDK). The structure is arm/neon/imgproc_neon.c's: WebAssembly has no gather
 * either, so each lane's tap bytes come from one scalar load replaced into the lane, and
 * i8x16.swizzle (zero for an out-of-range index, like NEON's tbl) spreads bytes into lanes.
 *
 * Exactness: the arithmetic repeats ks__imgproc_span_scalar statement by statement (SIMD128 has
 * no fused multiply-add outside relaxed SIMD, which is not used); clamps use pmin/pmax, whose
 * definitions (b < a ? b : a, a < b ? b : a) are the reference's compare-and-select, signed
 * zeros included; floor is f32x4.floor and the (int32_t) casts are i32x4.trunc_sat_f32x4, equal
 * to the C cast on the clamped coordinates. Per-lane shifts (absent in SIMD128) are selects of
 * two uniform shifts. bench/wasm/imgproc_check.c compares it with the scalar reference bit for
 * bit under Node (scripts/test-editor). */
#include <string.h>
#include <wasm_simd128.h>

#include "../../imgproc_impl.h"

#define ALWAYS_INLINE __attribute__((always_inline)) static inline

typedef struct vec_rgb {
    v128_t r, g, b;
} vec_rgb;

enum sample_kind { KIND_RGBA, KIND_RGB, KIND_GRAY, KIND_NV, KIND_I420 };

/* Per-call constants (see imgproc_neon.c's neon_ctx). */
typedef struct simd_ctx {
    const ks__imgproc *p;
    v128_t y_offset, y_scale, kr_v, kg_u, kg_v, kb_u;
    /* swizzle indices, byte k of each 32-bit lane -> the lane's low byte */
    v128_t byte[4], r0, g0, b0, r1, g1, b1, u, v;
    int32_t s0, s1, s2;
    const uint8_t *plane0, *plane1, *plane2;
} simd_ctx;

static v128_t byte_index(int k) {
    uint8_t idx[16];
    memset(idx, 0xff, sizeof(idx)); /* out of range: swizzle writes 0 */
    for (int lane = 0; lane < 4; lane++)
        idx[4 * lane] = (uint8_t)(4 * lane + k);
    return wasm_v128_load(idx);
}

ALWAYS_INLINE v128_t byte_f(v128_t v, v128_t idx) {
    return wasm_f32x4_convert_u32x4(wasm_i8x16_swizzle(v, idx));
}

/* clamp to [0, 255] exactly as the reference: v < 0 ? 0 : v, then v > 255 ? 255 : v */
ALWAYS_INLINE v128_t clamp255(v128_t v) {
    return wasm_f32x4_pmin(wasm_f32x4_pmax(v, wasm_f32x4_splat(0.0f)), wasm_f32x4_splat(255.0f));
}

ALWAYS_INLINE uint32_t read_px(const uint8_t *q, int size) {
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

/* One read of size bytes per lane at base + off[lane]; never reads outside [off, off + size). */
ALWAYS_INLINE v128_t gather(const uint8_t *base, v128_t off, int size) {
    v128_t v =
        wasm_i32x4_splat((int32_t)read_px(base + (uint32_t)wasm_i32x4_extract_lane(off, 0), size));
    v = wasm_i32x4_replace_lane(
        v, 1, (int32_t)read_px(base + (uint32_t)wasm_i32x4_extract_lane(off, 1), size));
    v = wasm_i32x4_replace_lane(
        v, 2, (int32_t)read_px(base + (uint32_t)wasm_i32x4_extract_lane(off, 2), size));
    return wasm_i32x4_replace_lane(
        v, 3, (int32_t)read_px(base + (uint32_t)wasm_i32x4_extract_lane(off, 3), size));
}

ALWAYS_INLINE vec_rgb yuv_to_rgb(const simd_ctx *c, v128_t Y, v128_t U, v128_t V) {
    const v128_t c128 = wasm_f32x4_splat(128.0f);
    v128_t yy = wasm_f32x4_sub(Y, c->y_offset);
    yy = wasm_f32x4_mul(yy, c->y_scale);
    v128_t u = wasm_f32x4_sub(U, c128), v = wasm_f32x4_sub(V, c128);
    v128_t t = wasm_f32x4_mul(c->kr_v, v);
    v128_t r = wasm_f32x4_add(yy, t);
    t = wasm_f32x4_mul(c->kg_u, u);
    v128_t g = wasm_f32x4_sub(yy, t);
    t = wasm_f32x4_mul(c->kg_v, v);
    g = wasm_f32x4_sub(g, t);
    t = wasm_f32x4_mul(c->kb_u, u);
    v128_t b = wasm_f32x4_add(yy, t);
    vec_rgb out = {clamp255(r), clamp255(g), clamp255(b)};
    return out;
}

ALWAYS_INLINE v128_t lerp2(v128_t p00, v128_t p01, v128_t p10, v128_t p11, v128_t ax, v128_t ay) {
    v128_t d = wasm_f32x4_sub(p01, p00);
    d = wasm_f32x4_mul(d, ax);
    v128_t top = wasm_f32x4_add(p00, d);
    d = wasm_f32x4_sub(p11, p10);
    d = wasm_f32x4_mul(d, ax);
    v128_t bot = wasm_f32x4_add(p10, d);
    d = wasm_f32x4_sub(bot, top);
    d = wasm_f32x4_mul(d, ay);
    return wasm_f32x4_add(top, d);
}

ALWAYS_INLINE vec_rgb lerp_rgb(const vec_rgb c[4], v128_t ax, v128_t ay) {
    vec_rgb o;
    o.r = lerp2(c[0].r, c[1].r, c[2].r, c[3].r, ax, ay);
    o.g = lerp2(c[0].g, c[1].g, c[2].g, c[3].g, ax, ay);
    o.b = lerp2(c[0].b, c[1].b, c[2].b, c[3].b, ax, ay);
    return o;
}

/* Largest left tap column whose reads stay inside the row (imgproc_neon.c's fast_x_max). */
static int32_t fast_x_max(const ks__imgproc *p) {
    int32_t w = p->width_px;
    switch (p->format) {
    case KS_PIXEL_FORMAT_NV21:
    case KS_PIXEL_FORMAT_NV12:
    case KS_PIXEL_FORMAT_I420:
        return w - 3;
    default:
        return w - 2;
    }
}

/* lanes of v shifted right by `bits` where mask is set, unchanged elsewhere */
ALWAYS_INLINE v128_t shr_where(v128_t v, int bits, v128_t mask) {
    return wasm_v128_bitselect(wasm_u32x4_shr(v, bits), v, mask);
}

/* Bilinear RGB of 4 points whose taps are all in the fast region. */
ALWAYS_INLINE vec_rgb sample4(const simd_ctx *c, const enum sample_kind kind, v128_t ix, v128_t iy,
                              v128_t ax, v128_t ay) {
    v128_t row0 = wasm_i32x4_mul(iy, wasm_i32x4_splat(c->s0));
    v128_t row1 = wasm_i32x4_add(row0, wasm_i32x4_splat(c->s0));
    vec_rgb t[4];
    if (kind == KIND_RGBA || kind == KIND_RGB) {
        v128_t c0 = wasm_i32x4_mul(ix, wasm_i32x4_splat(kind == KIND_RGBA ? 4 : 3));
        v128_t c1 = wasm_i32x4_add(c0, wasm_i32x4_splat(kind == KIND_RGBA ? 4 : 2));
        v128_t v[4] = {gather(c->plane0, wasm_i32x4_add(row0, c0), 4),
                       gather(c->plane0, wasm_i32x4_add(row0, c1), 4),
                       gather(c->plane0, wasm_i32x4_add(row1, c0), 4),
                       gather(c->plane0, wasm_i32x4_add(row1, c1), 4)};
        for (int k = 0; k < 4; k++) {
            t[k].r = byte_f(v[k], (k & 1) ? c->r1 : c->r0);
            t[k].g = byte_f(v[k], (k & 1) ? c->g1 : c->g0);
            t[k].b = byte_f(v[k], (k & 1) ? c->b1 : c->b0);
        }
        return lerp_rgb(t, ax, ay);
    }
    if (kind == KIND_GRAY) {
        v128_t v0 = gather(c->plane0, wasm_i32x4_add(row0, ix), 2);
        v128_t v1 = gather(c->plane0, wasm_i32x4_add(row1, ix), 2);
        vec_rgb o;
        o.r = lerp2(byte_f(v0, c->byte[0]), byte_f(v0, c->byte[1]), byte_f(v1, c->byte[0]),
                    byte_f(v1, c->byte[1]), ax, ay);
        o.g = o.b = o.r;
        return o;
    }
    /* YUV: a luma pair per row from one 2-byte read; one chroma read per chroma row at the left
     * tap's sample cx0 = ix >> 1 covers both taps (the right one is cx0 + (ix & 1)). */
    v128_t y0 = gather(c->plane0, wasm_i32x4_add(row0, ix), 2);
    v128_t y1 = gather(c->plane0, wasm_i32x4_add(row1, ix), 2);
    v128_t cx0 = wasm_u32x4_shr(ix, 1);
    v128_t odd = wasm_i32x4_eq(wasm_v128_and(ix, wasm_i32x4_splat(1)), wasm_i32x4_splat(1));
    v128_t cy0 = wasm_u32x4_shr(iy, 1);
    v128_t cy1 = wasm_u32x4_shr(wasm_i32x4_add(iy, wasm_i32x4_splat(1)), 1);
    v128_t u0l, v0l, u0r, v0r, u1l, v1l, u1r, v1r;
    if (kind == KIND_I420) {
        v128_t s1 = wasm_i32x4_splat(c->s1), s2 = wasm_i32x4_splat(c->s2);
        v128_t u0 = gather(c->plane1, wasm_i32x4_add(cx0, wasm_i32x4_mul(cy0, s1)), 2);
        v128_t v0 = gather(c->plane2, wasm_i32x4_add(cx0, wasm_i32x4_mul(cy0, s2)), 2);
        v128_t u1 = gather(c->plane1, wasm_i32x4_add(cx0, wasm_i32x4_mul(cy1, s1)), 2);
        v128_t v1 = gather(c->plane2, wasm_i32x4_add(cx0, wasm_i32x4_mul(cy1, s2)), 2);
        u0l = byte_f(u0, c->byte[0]);
        v0l = byte_f(v0, c->byte[0]);
        u0r = byte_f(shr_where(u0, 8, odd), c->byte[0]);
        v0r = byte_f(shr_where(v0, 8, odd), c->byte[0]);
        u1l = byte_f(u1, c->byte[0]);
        v1l = byte_f(v1, c->byte[0]);
        u1r = byte_f(shr_where(u1, 8, odd), c->byte[0]);
        v1r = byte_f(shr_where(v1, 8, odd), c->byte[0]);
    } else {
        v128_t s1 = wasm_i32x4_splat(c->s1);
        v128_t cx2 = wasm_i32x4_add(cx0, cx0);
        v128_t uv0 = gather(c->plane1, wasm_i32x4_add(cx2, wasm_i32x4_mul(cy0, s1)), 4);
        v128_t uv1 = gather(c->plane1, wasm_i32x4_add(cx2, wasm_i32x4_mul(cy1, s1)), 4);
        v128_t uv0r = shr_where(uv0, 16, odd), uv1r = shr_where(uv1, 16, odd);
        u0l = byte_f(uv0, c->u);
        v0l = byte_f(uv0, c->v);
        u0r = byte_f(uv0r, c->u);
        v0r = byte_f(uv0r, c->v);
        u1l = byte_f(uv1, c->u);
        v1l = byte_f(uv1, c->v);
        u1r = byte_f(uv1r, c->u);
        v1r = byte_f(uv1r, c->v);
    }
    /* blend Y, U, V, then convert once (the reference's rule for taps inside the image) */
    v128_t Y = lerp2(byte_f(y0, c->byte[0]), byte_f(y0, c->byte[1]), byte_f(y1, c->byte[0]),
                     byte_f(y1, c->byte[1]), ax, ay);
    return yuv_to_rgb(c, Y, lerp2(u0l, u0r, u1l, u1r, ax, ay), lerp2(v0l, v0r, v1l, v1r, ax, ay));
}

ALWAYS_INLINE v128_t clamp_i32(v128_t v, int32_t hi) {
    return wasm_i32x4_min(wasm_i32x4_max(v, wasm_i32x4_splat(0)), wasm_i32x4_splat(hi));
}

/* Bilinear RGB of 4 points with taps anywhere (imgproc_neon.c's sample4_edge): each tap read at
 * its clamped position with reads of exactly its bytes; ZERO/CONSTANT borders give outside taps
 * the border colour, and YUV lanes with such a tap are converted per tap as the reference does. */
__attribute__((noinline)) static vec_rgb sample4_edge(const simd_ctx *c, v128_t ix, v128_t iy,
                                                      v128_t ax, v128_t ay) {
    const ks__imgproc *p = c->p;
    const v128_t one = wasm_i32x4_splat(1), minus1 = wasm_i32x4_splat(-1);
    int32_t w = p->width_px, h = p->height_px;
    if (p->border != KS_BORDER_REPLICATE) {
        v128_t out =
            wasm_v128_or(wasm_i32x4_gt(minus1, ix), wasm_i32x4_gt(ix, wasm_i32x4_splat(w - 1)));
        out = wasm_v128_or(out, wasm_v128_or(wasm_i32x4_gt(minus1, iy),
                                             wasm_i32x4_gt(iy, wasm_i32x4_splat(h - 1))));
        if (wasm_i32x4_all_true(out)) {
            vec_rgb b = {wasm_f32x4_splat(p->border_rgb[0]), wasm_f32x4_splat(p->border_rgb[1]),
                         wasm_f32x4_splat(p->border_rgb[2])};
            return b;
        }
    }
    v128_t xs[2] = {ix, wasm_i32x4_add(ix, one)}, ys[2] = {iy, wasm_i32x4_add(iy, one)};
    v128_t xc[2] = {clamp_i32(xs[0], w - 1), clamp_i32(xs[1], w - 1)};
    v128_t yc[2] = {clamp_i32(ys[0], h - 1), clamp_i32(ys[1], h - 1)};
    vec_rgb t[4];
    v128_t Yt[4], Ut[4], Vt[4];
    const int yuv = p->format == KS_PIXEL_FORMAT_NV21 || p->format == KS_PIXEL_FORMAT_NV12 ||
                    p->format == KS_PIXEL_FORMAT_I420;
    for (int k = 0; k < 4; k++) {
        v128_t x = xc[k & 1], y = yc[k >> 1];
        v128_t row = wasm_i32x4_mul(y, wasm_i32x4_splat(c->s0));
        switch (p->format) {
        case KS_PIXEL_FORMAT_RGBA:
        case KS_PIXEL_FORMAT_BGRA:
        case KS_PIXEL_FORMAT_RGB:
        case KS_PIXEL_FORMAT_BGR: {
            int four = p->format == KS_PIXEL_FORMAT_RGBA || p->format == KS_PIXEL_FORMAT_BGRA;
            int bgr = p->format == KS_PIXEL_FORMAT_BGRA || p->format == KS_PIXEL_FORMAT_BGR;
            v128_t v = gather(
                c->plane0, wasm_i32x4_add(row, wasm_i32x4_mul(x, wasm_i32x4_splat(four ? 4 : 3))),
                four ? 4 : 3);
            t[k].r = byte_f(v, c->byte[bgr ? 2 : 0]);
            t[k].g = byte_f(v, c->byte[1]);
            t[k].b = byte_f(v, c->byte[bgr ? 0 : 2]);
            break;
        }
        case KS_PIXEL_FORMAT_GRAY:
            t[k].r = byte_f(gather(c->plane0, wasm_i32x4_add(row, x), 1), c->byte[0]);
            t[k].g = t[k].b = t[k].r;
            break;
        default: {
            v128_t cx = wasm_u32x4_shr(x, 1), cy = wasm_u32x4_shr(y, 1);
            Yt[k] = byte_f(gather(c->plane0, wasm_i32x4_add(row, x), 1), c->byte[0]);
            if (p->format == KS_PIXEL_FORMAT_I420) {
                Ut[k] = byte_f(
                    gather(c->plane1,
                           wasm_i32x4_add(cx, wasm_i32x4_mul(cy, wasm_i32x4_splat(c->s1))), 1),
                    c->byte[0]);
                Vt[k] = byte_f(
                    gather(c->plane2,
                           wasm_i32x4_add(cx, wasm_i32x4_mul(cy, wasm_i32x4_splat(c->s2))), 1),
                    c->byte[0]);
            } else {
                v128_t uv = gather(c->plane1,
                                   wasm_i32x4_add(wasm_i32x4_add(cx, cx),
                                                  wasm_i32x4_mul(cy, wasm_i32x4_splat(c->s1))),
                                   2);
                Ut[k] = byte_f(uv, c->u);
                Vt[k] = byte_f(uv, c->v);
            }
            break;
        }
        }
        if (yuv) continue;
        if (p->border != KS_BORDER_REPLICATE) {
            v128_t in = wasm_v128_and(wasm_i32x4_eq(xs[k & 1], xc[k & 1]),
                                      wasm_i32x4_eq(ys[k >> 1], yc[k >> 1]));
            t[k].r = wasm_v128_bitselect(t[k].r, wasm_f32x4_splat(p->border_rgb[0]), in);
            t[k].g = wasm_v128_bitselect(t[k].g, wasm_f32x4_splat(p->border_rgb[1]), in);
            t[k].b = wasm_v128_bitselect(t[k].b, wasm_f32x4_splat(p->border_rgb[2]), in);
        }
    }
    if (yuv) {
        vec_rgb o = yuv_to_rgb(c, lerp2(Yt[0], Yt[1], Yt[2], Yt[3], ax, ay),
                               lerp2(Ut[0], Ut[1], Ut[2], Ut[3], ax, ay),
                               lerp2(Vt[0], Vt[1], Vt[2], Vt[3], ax, ay));
        if (p->border == KS_BORDER_REPLICATE) return o;
        v128_t inside =
            wasm_v128_and(wasm_v128_and(wasm_i32x4_eq(xs[0], xc[0]), wasm_i32x4_eq(xs[1], xc[1])),
                          wasm_v128_and(wasm_i32x4_eq(ys[0], yc[0]), wasm_i32x4_eq(ys[1], yc[1])));
        if (wasm_i32x4_all_true(inside)) return o;
        for (int k = 0; k < 4; k++) {
            t[k] = yuv_to_rgb(c, Yt[k], Ut[k], Vt[k]);
            v128_t in = wasm_v128_and(wasm_i32x4_eq(xs[k & 1], xc[k & 1]),
                                      wasm_i32x4_eq(ys[k >> 1], yc[k >> 1]));
            t[k].r = wasm_v128_bitselect(t[k].r, wasm_f32x4_splat(p->border_rgb[0]), in);
            t[k].g = wasm_v128_bitselect(t[k].g, wasm_f32x4_splat(p->border_rgb[1]), in);
            t[k].b = wasm_v128_bitselect(t[k].b, wasm_f32x4_splat(p->border_rgb[2]), in);
        }
        vec_rgb e = lerp_rgb(t, ax, ay);
        o.r = wasm_v128_bitselect(o.r, e.r, inside);
        o.g = wasm_v128_bitselect(o.g, e.g, inside);
        o.b = wasm_v128_bitselect(o.b, e.b, inside);
        return o;
    }
    return lerp_rgb(t, ax, ay);
}

/* Normalize and store 4 pixels of row y from column x. */
ALWAYS_INLINE void store4(const ks__imgproc *p, const v128_t *mean, const v128_t *scale,
                          size_t plane_px, int32_t y, int32_t x, const v128_t *val) {
    size_t pix = (size_t)y * (size_t)p->out_width_px + (size_t)x;
    int32_t nc = p->out_channels;
    v128_t o[3];
    for (int32_t ch = 0; ch < nc; ch++) {
        v128_t v = wasm_f32x4_sub(val[ch], mean[ch]);
        o[ch] = wasm_f32x4_mul(v, scale[ch]);
    }
    int planar = p->nchw || nc == 1;
    if (p->out_u8) {
        uint8_t b[3][16];
        for (int32_t ch = 0; ch < nc; ch++) {
            v128_t v = clamp255(o[ch]);
            v = wasm_f32x4_add(v, wasm_f32x4_splat(0.5f));
            v128_t i = wasm_i32x4_trunc_sat_f32x4(v);
            v128_t w16 = wasm_u16x8_narrow_i32x4(i, i);
            wasm_v128_store(b[ch], wasm_u8x16_narrow_i16x8(w16, w16));
            if (planar) memcpy((uint8_t *)p->out + (size_t)ch * plane_px + pix, b[ch], 4);
        }
        if (!planar) {
            uint8_t *dst = (uint8_t *)p->out + pix * 3;
            for (int k = 0; k < 4; k++) {
                dst[3 * k] = b[0][k];
                dst[3 * k + 1] = b[1][k];
                dst[3 * k + 2] = b[2][k];
            }
        }
        return;
    }
    float *out = (float *)p->out;
    if (planar) {
        for (int32_t ch = 0; ch < nc; ch++)
            wasm_v128_store(out + (size_t)ch * plane_px + pix, o[ch]);
        return;
    }
    /* r0 g0 b0 r1 | g1 b1 r2 g2 | b2 r3 g3 b3 */
    v128_t rg_lo = wasm_i32x4_shuffle(o[0], o[1], 0, 4, 1, 5); /* r0 g0 r1 g1 */
    v128_t rg_hi = wasm_i32x4_shuffle(o[0], o[1], 2, 6, 3, 7); /* r2 g2 r3 g3 */
    v128_t gb = wasm_i32x4_shuffle(rg_lo, o[2], 3, 5, 3, 5);   /* g1 b1 g1 b1 */
    float *dst = out + pix * 3;
    wasm_v128_store(dst, wasm_i32x4_shuffle(rg_lo, o[2], 0, 1, 4, 2));
    wasm_v128_store(dst + 4, wasm_i32x4_shuffle(gb, rg_hi, 0, 1, 4, 5));
    wasm_v128_store(dst + 8, wasm_i32x4_shuffle(o[2], rg_hi, 2, 6, 7, 3));
}

/* The row loop for one source kind; always inlined so that each kind gets its own copy. */
ALWAYS_INLINE void rows_kind(const simd_ctx *cp, int32_t y_begin, int32_t y_end,
                             const enum sample_kind kind) {
    const simd_ctx c = *cp;
    const ks__imgproc *p = c.p;
    const float *m = p->m;
    const v128_t half = wasm_f32x4_splat(0.5f), lo = wasm_f32x4_splat(-4.0f);
    const v128_t hi_x = wasm_f32x4_splat((float)p->width_px + 4.0f);
    const v128_t hi_y = wasm_f32x4_splat((float)p->height_px + 4.0f);
    const v128_t m0 = wasm_f32x4_splat(m[0]), m3 = wasm_f32x4_splat(m[3]);
    const v128_t iota = wasm_i32x4_make(0, 1, 2, 3);
    int32_t x_max = fast_x_max(p), y_max = p->height_px - 2;
    const int fast_possible = x_max >= 0 && y_max >= 0;
    const v128_t x_lim = wasm_i32x4_splat(x_max >= 0 ? x_max : 0);
    const v128_t y_lim = wasm_i32x4_splat(y_max >= 0 ? y_max : 0);
    v128_t mean[3], scale[3];
    for (int ch = 0; ch < 3; ch++) {
        mean[ch] = wasm_f32x4_splat(p->mean[ch]);
        scale[ch] = wasm_f32x4_splat(p->scale[ch]);
    }
    const size_t plane_px = (size_t)p->out_width_px * (size_t)p->out_height_px;
    const int32_t out_w = p->out_width_px;
    const int gray_out = p->gray_out, gray_src = p->gray_src, bgr = p->bgr;
    for (int32_t y = y_begin; y < y_end; y++) {
        float dy = (float)y + 0.5f;
        float bx = m[1] * dy;
        bx = bx + m[2];
        float by = m[4] * dy;
        by = by + m[5];
        const v128_t bxv = wasm_f32x4_splat(bx), byv = wasm_f32x4_splat(by);
        int32_t x = 0;
        for (; x + 4 <= out_w; x += 4) {
            v128_t dx = wasm_f32x4_convert_i32x4(wasm_i32x4_add(wasm_i32x4_splat(x), iota));
            dx = wasm_f32x4_add(dx, half);
            v128_t sx = wasm_f32x4_mul(m0, dx);
            sx = wasm_f32x4_add(sx, bxv);
            v128_t sy = wasm_f32x4_mul(m3, dx);
            sy = wasm_f32x4_add(sy, byv);
            /* the reference's clamp_coord: v < -4 ? -4 : v, then v > hi ? hi : v */
            v128_t u = wasm_f32x4_pmin(wasm_f32x4_pmax(wasm_f32x4_sub(sx, half), lo), hi_x);
            v128_t v = wasm_f32x4_pmin(wasm_f32x4_pmax(wasm_f32x4_sub(sy, half), lo), hi_y);
            v128_t fu = wasm_f32x4_floor(u), fv = wasm_f32x4_floor(v);
            v128_t ax = wasm_f32x4_sub(u, fu), ay = wasm_f32x4_sub(v, fv);
            v128_t ix = wasm_i32x4_trunc_sat_f32x4(fu), iy = wasm_i32x4_trunc_sat_f32x4(fv);
            /* 0 <= ix <= x_max and 0 <= iy <= y_max (unsigned compares fold the >= 0) */
            v128_t ok = wasm_v128_and(wasm_u32x4_le(ix, x_lim), wasm_u32x4_le(iy, y_lim));
            vec_rgb rgb;
            if (fast_possible && wasm_i32x4_all_true(ok))
                rgb = sample4(&c, kind, ix, iy, ax, ay);
            else
                rgb = sample4_edge(cp, ix, iy, ax, ay);
            v128_t val[3];
            if (gray_out) {
                if (gray_src) {
                    val[0] = rgb.r;
                } else {
                    v128_t l = wasm_f32x4_mul(wasm_f32x4_splat(0.299f), rgb.r);
                    v128_t t = wasm_f32x4_mul(wasm_f32x4_splat(0.587f), rgb.g);
                    l = wasm_f32x4_add(l, t);
                    t = wasm_f32x4_mul(wasm_f32x4_splat(0.114f), rgb.b);
                    val[0] = wasm_f32x4_add(l, t);
                }
            } else {
                val[0] = bgr ? rgb.b : rgb.r;
                val[1] = rgb.g;
                val[2] = bgr ? rgb.r : rgb.b;
            }
            store4(p, mean, scale, plane_px, y, x, val);
        }
        if (x < out_w) ks__imgproc_span_scalar(p, y, x, out_w);
    }
}

void ks__imgproc_rows_simd128(const ks__imgproc *p, int32_t y_begin, int32_t y_end) {
    simd_ctx c;
    memset(&c, 0, sizeof(c));
    c.p = p;
    c.y_offset = wasm_f32x4_splat(p->y_offset);
    c.y_scale = wasm_f32x4_splat(p->y_scale);
    c.kr_v = wasm_f32x4_splat(p->kr_v);
    c.kg_u = wasm_f32x4_splat(p->kg_u);
    c.kg_v = wasm_f32x4_splat(p->kg_v);
    c.kb_u = wasm_f32x4_splat(p->kb_u);
    for (int k = 0; k < 4; k++)
        c.byte[k] = byte_index(k);
    int bgr = p->format == KS_PIXEL_FORMAT_BGRA || p->format == KS_PIXEL_FORMAT_BGR;
    int k1 = p->format == KS_PIXEL_FORMAT_RGB || p->format == KS_PIXEL_FORMAT_BGR;
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
        rows_kind(&c, y_begin, y_end, KIND_RGBA);
        break;
    case KS_PIXEL_FORMAT_RGB:
    case KS_PIXEL_FORMAT_BGR:
        rows_kind(&c, y_begin, y_end, KIND_RGB);
        break;
    case KS_PIXEL_FORMAT_GRAY:
        rows_kind(&c, y_begin, y_end, KIND_GRAY);
        break;
    case KS_PIXEL_FORMAT_NV21:
    case KS_PIXEL_FORMAT_NV12:
        rows_kind(&c, y_begin, y_end, KIND_NV);
        break;
    case KS_PIXEL_FORMAT_I420:
        rows_kind(&c, y_begin, y_end, KIND_I420);
        break;
    default:
        for (int32_t y = y_begin; y < y_end; y++)
            ks__imgproc_span_scalar(p, y, 0, p->out_width_px);
        break;
    }
}
