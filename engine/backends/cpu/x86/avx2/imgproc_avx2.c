/* AVX2 fast path of ks_image_to_tensor (bilinear): 8 destination pixels per step, taps fetched
 * with 32-bit gathers (the sampler shared with the AVX-512 path: ../imgproc_gather.h). Groups
 * whose taps touch the border take a clamping edge sampler (the scalar reference on planes under
 * 4 bytes), row tails the reference. The arithmetic repeats the scalar statements one by one with
 * separate multiply and add (no FMA), so results are bit-identical
 * (engine/tests/unit/test_imgproc.c checks this). */
#include <immintrin.h>

#include "interleave3.h"

#define VF __m256
#define VI __m256i
#define VF_SET1 _mm256_set1_ps
#define VF_ZERO _mm256_setzero_ps
#define VF_ADD _mm256_add_ps
#define VF_SUB _mm256_sub_ps
#define VF_MUL _mm256_mul_ps
#define VF_MIN _mm256_min_ps
#define VF_MAX _mm256_max_ps
#define VF_FLOOR _mm256_floor_ps
#define VF_FROM_I _mm256_cvtepi32_ps
#define VI_TRUNC _mm256_cvttps_epi32
#define VI_SET1 _mm256_set1_epi32
#define VI_ADD _mm256_add_epi32
#define VI_AND _mm256_and_si256
#define VI_MULLO _mm256_mullo_epi32
#define VI_SRLI _mm256_srli_epi32
#define VI_SLLI _mm256_slli_epi32
#define VI_SRLV _mm256_srlv_epi32
#define VI_MIN _mm256_min_epi32
#define VI_MAX _mm256_max_epi32
#define VF_SEL_GT(a, b, x, y)                                                                      \
    _mm256_blendv_ps((y), (x), _mm256_castsi256_ps(_mm256_cmpgt_epi32((a), (b))))
#define VI_SUB _mm256_sub_epi32
#define VI_SHUFB _mm256_shuffle_epi8
#define VI_BCAST128 _mm256_broadcastsi128_si256
#define VI_GATHER(base, offsets)                                                                   \
    _mm256_i32gather_epi32((const int *)(const void *)(base), (offsets), 1)
#include "../imgproc_gather.h"

static __m256i gather(const uint8_t *base, __m256i offsets) {
    return VI_GATHER(base, offsets);
}

/* 8 single-pixel reads of bpp (1..4) bytes at byte offsets off of a plane, as 32-bit lanes with
 * the pixel's first byte in the low byte. Each 4-byte read ends at the pixel's last byte (it
 * starts up to 4 - bpp bytes before the pixel; at the plane's first bytes it starts at 0 and the
 * lane is shifted), so nothing past the pixel is read: safe at the plane's very end. The plane
 * must span at least 4 bytes. */
static __m256i gather_px(const uint8_t *base, __m256i off, int32_t bpp) {
    __m256i back = _mm256_min_epi32(off, _mm256_set1_epi32(4 - bpp));
    __m256i v = gather(base, _mm256_sub_epi32(off, back));
    return _mm256_srlv_epi32(v, _mm256_slli_epi32(back, 3));
}

static __m256i clamp_i32(__m256i v, int32_t hi) {
    return _mm256_min_epi32(_mm256_max_epi32(v, _mm256_setzero_si256()), _mm256_set1_epi32(hi));
}

/* Bilinear RGB of 8 points with taps anywhere: each tap is read at its clamped position (the
 * scalar reference's REPLICATE rule) and, for ZERO/CONSTANT borders, taps outside the image take
 * the border colour before the blend, as the reference's fetch does. */
__attribute__((noinline)) static vec_rgb sample8_edge(const ks__imgproc *p, __m256i ix, __m256i iy,
                                                      __m256 ax, __m256 ay) {
    const __m256i one = _mm256_set1_epi32(1), minus1 = _mm256_set1_epi32(-1);
    int32_t w = p->width_px, h = p->height_px;
    __m256i xs[2] = {ix, _mm256_add_epi32(ix, one)}, ys[2] = {iy, _mm256_add_epi32(iy, one)};
    __m256i xc[2] = {clamp_i32(xs[0], w - 1), clamp_i32(xs[1], w - 1)};
    __m256i yc[2] = {clamp_i32(ys[0], h - 1), clamp_i32(ys[1], h - 1)};
    __m256i s0 = _mm256_set1_epi32((int32_t)p->stride_bytes[0]);
    vec_rgb c[4];
    __m256 Yt[4], Ut[4], Vt[4]; /* YUV sources: the taps' samples */
    const int yuv = p->format == KS_PIXEL_FORMAT_NV21 || p->format == KS_PIXEL_FORMAT_NV12 ||
                    p->format == KS_PIXEL_FORMAT_I420;
    for (int t = 0; t < 4; t++) {
        __m256i x = xc[t & 1], y = yc[t >> 1];
        __m256i row = _mm256_mullo_epi32(y, s0);
        switch (p->format) {
        case KS_PIXEL_FORMAT_RGBA:
        case KS_PIXEL_FORMAT_BGRA:
        case KS_PIXEL_FORMAT_RGB:
        case KS_PIXEL_FORMAT_BGR: {
            int four = p->format == KS_PIXEL_FORMAT_RGBA || p->format == KS_PIXEL_FORMAT_BGRA;
            int bgr = p->format == KS_PIXEL_FORMAT_BGRA || p->format == KS_PIXEL_FORMAT_BGR;
            int32_t bpp = four ? 4 : 3;
            __m256i v = gather_px(
                p->plane[0], _mm256_add_epi32(row, _mm256_mullo_epi32(x, _mm256_set1_epi32(bpp))),
                bpp);
            c[t].r = byte_f(v, bgr ? 16 : 0);
            c[t].g = byte_f(v, 8);
            c[t].b = byte_f(v, bgr ? 0 : 16);
            break;
        }
        case KS_PIXEL_FORMAT_GRAY:
            c[t].r = byte_f(gather_px(p->plane[0], _mm256_add_epi32(row, x), 1), 0);
            c[t].g = c[t].b = c[t].r;
            break;
        default: {
            __m256 Y = byte_f(gather_px(p->plane[0], _mm256_add_epi32(row, x), 1), 0);
            __m256i cx = _mm256_srli_epi32(x, 1), cy = _mm256_srli_epi32(y, 1);
            __m256i crow = _mm256_mullo_epi32(cy, _mm256_set1_epi32((int32_t)p->stride_bytes[1]));
            __m256 U, V;
            if (p->format == KS_PIXEL_FORMAT_I420) {
                __m256i crow2 =
                    _mm256_mullo_epi32(cy, _mm256_set1_epi32((int32_t)p->stride_bytes[2]));
                U = byte_f(gather_px(p->plane[1], _mm256_add_epi32(crow, cx), 1), 0);
                V = byte_f(gather_px(p->plane[2], _mm256_add_epi32(crow2, cx), 1), 0);
            } else {
                __m256i uv =
                    gather_px(p->plane[1], _mm256_add_epi32(crow, _mm256_add_epi32(cx, cx)), 2);
                int nv21 = p->format == KS_PIXEL_FORMAT_NV21;
                U = byte_f(uv, nv21 ? 8 : 0);
                V = byte_f(uv, nv21 ? 0 : 8);
            }
            Yt[t] = Y;
            Ut[t] = U;
            Vt[t] = V;
            break;
        }
        }
        if (yuv) continue;
        if (p->border != KS_BORDER_REPLICATE) {
            /* outside: x or y differs from its clamped value */
            __m256 out = _mm256_castsi256_ps(_mm256_or_si256(
                _mm256_xor_si256(_mm256_cmpeq_epi32(xs[t & 1], x), _mm256_set1_epi32(-1)),
                _mm256_xor_si256(_mm256_cmpeq_epi32(ys[t >> 1], y), _mm256_set1_epi32(-1))));
            c[t].r = _mm256_blendv_ps(c[t].r, _mm256_set1_ps(p->border_rgb[0]), out);
            c[t].g = _mm256_blendv_ps(c[t].g, _mm256_set1_ps(p->border_rgb[1]), out);
            c[t].b = _mm256_blendv_ps(c[t].b, _mm256_set1_ps(p->border_rgb[2]), out);
        }
    }
    if (yuv) {
        /* The reference blends Y, U, V and converts once, except in lanes where a tap takes a
         * constant border colour: there each tap is converted and the RGB blended. */
        vec_rgb o = yuv_to_rgb(p, lerp2(Yt[0], Yt[1], Yt[2], Yt[3], ax, ay),
                               lerp2(Ut[0], Ut[1], Ut[2], Ut[3], ax, ay),
                               lerp2(Vt[0], Vt[1], Vt[2], Vt[3], ax, ay));
        if (p->border == KS_BORDER_REPLICATE) return o;
        __m256i outside = _mm256_setzero_si256();
        for (int k = 0; k < 2; k++)
            outside = _mm256_or_si256(
                outside,
                _mm256_or_si256(_mm256_xor_si256(_mm256_cmpeq_epi32(xs[k], xc[k]), minus1),
                                _mm256_xor_si256(_mm256_cmpeq_epi32(ys[k], yc[k]), minus1)));
        if (_mm256_testz_si256(outside, outside)) return o;
        for (int t = 0; t < 4; t++) {
            c[t] = yuv_to_rgb(p, Yt[t], Ut[t], Vt[t]);
            __m256 out = _mm256_castsi256_ps(_mm256_or_si256(
                _mm256_xor_si256(_mm256_cmpeq_epi32(xs[t & 1], xc[t & 1]), minus1),
                _mm256_xor_si256(_mm256_cmpeq_epi32(ys[t >> 1], yc[t >> 1]), minus1)));
            c[t].r = _mm256_blendv_ps(c[t].r, _mm256_set1_ps(p->border_rgb[0]), out);
            c[t].g = _mm256_blendv_ps(c[t].g, _mm256_set1_ps(p->border_rgb[1]), out);
            c[t].b = _mm256_blendv_ps(c[t].b, _mm256_set1_ps(p->border_rgb[2]), out);
        }
        __m256 sel = _mm256_castsi256_ps(outside);
        o.r = _mm256_blendv_ps(o.r, lerp2(c[0].r, c[1].r, c[2].r, c[3].r, ax, ay), sel);
        o.g = _mm256_blendv_ps(o.g, lerp2(c[0].g, c[1].g, c[2].g, c[3].g, ax, ay), sel);
        o.b = _mm256_blendv_ps(o.b, lerp2(c[0].b, c[1].b, c[2].b, c[3].b, ax, ay), sel);
        return o;
    }
    vec_rgb o;
    o.r = lerp2(c[0].r, c[1].r, c[2].r, c[3].r, ax, ay);
    o.g = lerp2(c[0].g, c[1].g, c[2].g, c[3].g, ax, ay);
    o.b = lerp2(c[0].b, c[1].b, c[2].b, c[3].b, ax, ay);
    return o;
}

/* Normalized values of 3 channels (r, g, b order of the output) into 24 interleaved floats
 * r0 g0 b0 r1 ... (interleave3.h). */
ALWAYS_INLINE void store_nhwc3_f32(float *dst, __m256 r, __m256 g, __m256 b) {
    ks_avx2_interleave3(dst, r, g, b);
}

/* Any output: u8 or f32, NHWC or NCHW, 1 or 3 channels. */
static void store8(const ks__imgproc *p, int32_t y, int32_t x, const __m256 *val) {
    size_t plane_px = (size_t)p->out_width_px * (size_t)p->out_height_px;
    size_t pix = (size_t)y * (size_t)p->out_width_px + (size_t)x;
    int32_t nc = p->out_channels;
    __m256 o[3];
    for (int32_t c = 0; c < nc; c++) {
        __m256 v = _mm256_sub_ps(val[c], _mm256_set1_ps(p->mean[c]));
        o[c] = _mm256_mul_ps(v, _mm256_set1_ps(p->scale[c]));
    }
    int planar = p->nchw || nc == 1;
    if (p->out_u8) {
        uint8_t tmp[3][16];
        for (int32_t c = 0; c < nc; c++) {
            __m256 v = clamp255(o[c]);
            v = _mm256_add_ps(v, _mm256_set1_ps(0.5f));
            __m256i i = _mm256_cvttps_epi32(v);
            __m128i w16 =
                _mm_packus_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
            __m128i b8 = _mm_packus_epi16(w16, w16);
            uint8_t *dst = planar ? (uint8_t *)p->out + (size_t)c * plane_px + pix : tmp[c];
            _mm_storel_epi64((__m128i *)(void *)dst, b8);
        }
        if (!planar) {
            uint8_t *dst = (uint8_t *)p->out + pix * 3;
            for (int k = 0; k < 8; k++) {
                dst[3 * k] = tmp[0][k];
                dst[3 * k + 1] = tmp[1][k];
                dst[3 * k + 2] = tmp[2][k];
            }
        }
        return;
    }
    if (planar) {
        for (int32_t c = 0; c < nc; c++)
            _mm256_storeu_ps((float *)p->out + (size_t)c * plane_px + pix, o[c]);
        return;
    }
    store_nhwc3_f32((float *)p->out + pix * 3, o[0], o[1], o[2]);
}

/* Lanes whose 4 taps (ix..ix+1, iy..iy+1) all lie outside the image: ix + 1 < 0,
 * ix > w - 1, iy + 1 < 0 or iy > h - 1 (all ones there). */
static __m256i outside_lanes(__m256i ix, __m256i iy, __m256i w_px, __m256i h_px) {
    const __m256i minus1 = _mm256_set1_epi32(-1);
    __m256i out = _mm256_cmpgt_epi32(minus1, ix);
    out = _mm256_or_si256(out, _mm256_cmpgt_epi32(ix, _mm256_add_epi32(w_px, minus1)));
    out = _mm256_or_si256(out, _mm256_cmpgt_epi32(minus1, iy));
    out = _mm256_or_si256(out, _mm256_cmpgt_epi32(iy, _mm256_add_epi32(h_px, minus1)));
    return out;
}

/* Per-call constants of the row loops, set once (call_init) and kept in registers. */
typedef struct call_consts {
    __m256 half, lo, hi_x, hi_y, m0, m3;
    __m256i x_lim, y_lim, minus1, w_px, h_px;
    int constant_border, edge_ok, replicate, bgr;
    vec_rgb border;
    __m256 mean0, mean1, mean2, scale0, scale1, scale2;
} call_consts;

ALWAYS_INLINE void call_init(const ks__imgproc *p, const enum sample_kind kind, call_consts *k) {
    k->half = _mm256_set1_ps(0.5f);
    k->lo = _mm256_set1_ps(-4.0f);
    k->hi_x = _mm256_set1_ps((float)p->width_px + 4.0f);
    k->hi_y = _mm256_set1_ps((float)p->height_px + 4.0f);
    k->m0 = _mm256_set1_ps(p->m[0]);
    k->m3 = _mm256_set1_ps(p->m[3]);
    k->x_lim = _mm256_set1_epi32(fast_x_max(p) + 1);
    k->y_lim = _mm256_set1_epi32(p->height_px - 1);
    k->minus1 = _mm256_set1_epi32(-1);
    k->w_px = _mm256_set1_epi32(p->width_px);
    k->h_px = _mm256_set1_epi32(p->height_px);
    k->constant_border = p->border != KS_BORDER_REPLICATE;
    /* sample8_edge reads 4 bytes ending at a pixel: every plane must span 4 bytes (its rows
     * but the last, then the last row's pixels) */
    int32_t bpp0 = kind == KIND_RGBA ? 4 : kind == KIND_RGB ? 3 : 1;
    int32_t cw = (p->width_px + 1) / 2, ch = (p->height_px + 1) / 2;
    int edge_ok = (size_t)(p->height_px - 1) * p->stride_bytes[0] + (size_t)p->width_px * bpp0 >= 4;
    if (kind == KIND_NV21 || kind == KIND_NV12)
        edge_ok = edge_ok && (size_t)(ch - 1) * p->stride_bytes[1] + 2 * (size_t)cw >= 4;
    if (kind == KIND_I420)
        edge_ok = edge_ok && (size_t)(ch - 1) * p->stride_bytes[1] + (size_t)cw >= 4 &&
                  (size_t)(ch - 1) * p->stride_bytes[2] + (size_t)cw >= 4;
    k->edge_ok = edge_ok;
    /* REPLICATE edge groups through sample_replicate (its reads need rows of 8 pixels) */
    k->replicate = !k->constant_border && p->width_px >= 8 && p->height_px >= 2;
    k->border.r = _mm256_set1_ps(p->border_rgb[0]);
    k->border.g = _mm256_set1_ps(p->border_rgb[1]);
    k->border.b = _mm256_set1_ps(p->border_rgb[2]);
    /* nhwc3: the output's channels 0 and 2 are R and B, or B and R */
    k->bgr = p->bgr;
    k->mean0 = _mm256_set1_ps(p->mean[0]);
    k->mean1 = _mm256_set1_ps(p->mean[1]);
    k->mean2 = _mm256_set1_ps(p->mean[2]);
    k->scale0 = _mm256_set1_ps(p->scale[0]);
    k->scale1 = _mm256_set1_ps(p->scale[1]);
    k->scale2 = _mm256_set1_ps(p->scale[2]);
}

/* Normalizes and stores 8 pixels at (x, y) (nhwc3: f32 NHWC RGB or BGR with the constants in
 * registers; else store8). */
ALWAYS_INLINE void emit8(const ks__imgproc *p, const call_consts *k, const int nhwc3, int32_t y,
                         int32_t x, vec_rgb rgb) {
    if (nhwc3) {
        __m256 c0 = k->bgr ? rgb.b : rgb.r, c2 = k->bgr ? rgb.r : rgb.b;
        c0 = _mm256_mul_ps(_mm256_sub_ps(c0, k->mean0), k->scale0);
        __m256 c1 = _mm256_mul_ps(_mm256_sub_ps(rgb.g, k->mean1), k->scale1);
        c2 = _mm256_mul_ps(_mm256_sub_ps(c2, k->mean2), k->scale2);
        store_nhwc3_f32((float *)p->out + ((size_t)y * (size_t)p->out_width_px + (size_t)x) * 3, c0,
                        c1, c2);
        return;
    }
    __m256 val[3];
    if (p->gray_out) {
        if (p->gray_src) {
            val[0] = rgb.r;
        } else {
            __m256 l = _mm256_mul_ps(_mm256_set1_ps(0.299f), rgb.r);
            __m256 t = _mm256_mul_ps(_mm256_set1_ps(0.587f), rgb.g);
            l = _mm256_add_ps(l, t);
            t = _mm256_mul_ps(_mm256_set1_ps(0.114f), rgb.b);
            val[0] = _mm256_add_ps(l, t);
        }
    } else {
        val[0] = k->bgr ? rgb.b : rgb.r;
        val[1] = rgb.g;
        val[2] = k->bgr ? rgb.r : rgb.b;
    }
    store8(p, y, x, val);
}

/* Source columns of 8 destination points: u clamped to [-4, w + 4], its floor ix and fraction
 * ax (and the same for rows). */
ALWAYS_INLINE void taps(const call_consts *k, __m256 s, __m256 lo_v, __m256 hi, __m256i *i_out,
                        __m256 *a_out) {
    tap_coords(s, k->half, lo_v, hi, i_out, a_out);
}

/* One group of 8 destination pixels at (x, y) from their taps, any map: the gather sampler where
 * every tap is inside, the border colour where every tap is outside (constant border), else the
 * clamping sampler or the scalar reference. */
ALWAYS_INLINE void group8(const ks__imgproc *p, const call_consts *k, const enum sample_kind kind,
                          const int nhwc3, int32_t y, int32_t x, __m256i ix, __m256i iy, __m256 ax,
                          __m256 ay) {
    __m256i ok =
        _mm256_and_si256(_mm256_cmpgt_epi32(ix, k->minus1), _mm256_cmpgt_epi32(k->x_lim, ix));
    ok = _mm256_and_si256(ok, _mm256_cmpgt_epi32(iy, k->minus1));
    ok = _mm256_and_si256(ok, _mm256_cmpgt_epi32(k->y_lim, iy));
    vec_rgb rgb;
    const int ok_bits = _mm256_movemask_ps(_mm256_castsi256_ps(ok));
    __m256i out = _mm256_setzero_si256();
    int out_bits = 0;
    if (ok_bits != 0xff && k->constant_border) {
        out = outside_lanes(ix, iy, k->w_px, k->h_px);
        out_bits = _mm256_movemask_ps(_mm256_castsi256_ps(out));
    }
    if (ok_bits == 0xff) {
        rgb = sample_inside(p, kind, ix, iy, ax, ay);
    } else if (out_bits == 0xff) {
        /* letterbox padding: the scalar lerp of four equal border taps is exact */
        rgb = k->border;
    } else if ((ok_bits | out_bits) == 0xff) {
        /* Each lane is inside the fast region or has all its taps outside (a crop reaching past
         * the image with a constant border, away from the 1-pixel band along the edge): the
         * inside lanes as sample_inside gives them, the others the border colour. Outside lanes
         * read at (0, 0), inside the region since an inside lane exists. */
        rgb = sample_inside(p, kind, _mm256_andnot_si256(out, ix), _mm256_andnot_si256(out, iy), ax,
                            ay);
        const __m256 sel = _mm256_castsi256_ps(out);
        rgb.r = _mm256_blendv_ps(rgb.r, k->border.r, sel);
        rgb.g = _mm256_blendv_ps(rgb.g, k->border.g, sel);
        rgb.b = _mm256_blendv_ps(rgb.b, k->border.b, sel);
    } else if (k->replicate) {
        rgb = sample_replicate(p, kind, ix, iy, ax, ay);
    } else if (k->edge_ok) {
        rgb = sample8_edge(p, ix, iy, ax, ay);
    } else {
        ks__imgproc_span_scalar(p, y, x, x + 8);
        return;
    }
    emit8(p, k, nhwc3, y, x, rgb);
}

/* Destination pixels [x_begin, x_end) of row y for one source kind and output form (nhwc3 or
 * store8): groups of 8 by group8, the rest by the reference; always inlined so that each
 * combination gets its own copy. */
ALWAYS_INLINE void span_kind(const ks__imgproc *p, const call_consts *k, int32_t y, int32_t x_begin,
                             int32_t x_end, const enum sample_kind kind, const int nhwc3) {
    float bx, by;
    ks__imgproc_row_base(p, y, &bx, &by);
    const __m256 bxv = _mm256_set1_ps(bx), byv = _mm256_set1_ps(by);
    int32_t x = x_begin;
    for (; x + 8 <= x_end; x += 8) {
        /* destination x + 0.5 of the group's lanes: exact in float */
        __m256 dx = _mm256_add_ps(_mm256_set1_ps((float)x),
                                  _mm256_setr_ps(0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f));
        __m256 sx = _mm256_mul_ps(k->m0, dx);
        sx = _mm256_add_ps(sx, bxv);
        __m256 sy = _mm256_mul_ps(k->m3, dx);
        sy = _mm256_add_ps(sy, byv);
        __m256i ix, iy;
        __m256 ax, ay;
        taps(k, sx, k->lo, k->hi_x, &ix, &ax);
        taps(k, sy, k->lo, k->hi_y, &iy, &ay);
        group8(p, k, kind, nhwc3, y, x, ix, iy, ax, ay);
    }
    if (x < x_end) ks__imgproc_span_scalar(p, y, x, x_end);
}

ALWAYS_INLINE void rows_kind(const ks__imgproc *p, int32_t y_begin, int32_t y_end,
                             const enum sample_kind kind, const int nhwc3) {
    call_consts k;
    call_init(p, kind, &k);
    for (int32_t y = y_begin; y < y_end; y++)
        span_kind(p, &k, y, 0, p->out_width_px, kind, nhwc3);
}

/* ---- axis-aligned maps of NV21 / NV12 sources (no rotation by 90 degrees: the crops of
 * detectors and the segmenter's stretch) ----
 *
 * Then every destination column has the same source columns in every row, and every row the
 * same source rows: the columns' taps (ix, ax) are computed once per call, in chunks of
 * AXIS_GROUPS groups of 8, the rows' per row. Where the 4 pixels of each half of a group take
 * their luma pairs from 16 bytes of a row (the downscales up to ~4x that models use), and their
 * chroma pairs from 16 bytes of an interleaved chroma row, those bytes are loaded once per half
 * and distributed by a byte shuffle computed per group, instead of 4 gathers per group. Other
 * groups, and rows whose taps leave the image, take group8's path. The arithmetic is
 * sample_inside's, statement by statement: the same bits. */
#define AXIS_GROUPS 32

typedef struct axis_group {
    __m256i ymask; /* lane: luma bytes (ix, ix + 1) -> bits 0..15 */
    __m256i cmask; /* lane: chroma pairs at cx0, cx1 -> bits 0..31 */
    __m256i ix;
    __m256 ax;
    int32_t ybase[2], cbase[2]; /* per half: byte offsets of the 16-byte loads in a row */
    int shuffled;
} axis_group;

/* Builds the shuffle of one half (lanes h*4 .. h*4+3) of a group, or returns 0 if its bytes
 * do not fit a 16-byte load inside the row. */
static int axis_half(const int32_t *ix, int32_t h, int32_t w, int32_t chroma_row_bytes,
                     uint8_t *ymask, uint8_t *cmask, int32_t *ybase, int32_t *cbase) {
    int32_t lo = ix[4 * h], hi = ix[4 * h];
    for (int32_t l = 4 * h; l < 4 * h + 4; l++) {
        lo = ix[l] < lo ? ix[l] : lo;
        hi = ix[l] > hi ? ix[l] : hi;
    }
    int32_t cb = 2 * (lo >> 1), chi = 2 * ((hi + 1) >> 1) + 1;
    if (lo < 0 || hi + 1 - lo > 15 || lo + 16 > w || chi - cb > 15 || cb + 16 > chroma_row_bytes)
        return 0;
    *ybase = lo;
    *cbase = cb;
    for (int32_t l = 4 * h; l < 4 * h + 4; l++) {
        /* byte offsets within the 128-bit half of the vector (l & 3 selects the lane) */
        uint8_t *ym = ymask + 4 * l, *cm = cmask + 4 * l;
        int32_t c0 = 2 * (ix[l] >> 1) - cb, c1 = 2 * ((ix[l] + 1) >> 1) - cb;
        ym[0] = (uint8_t)(ix[l] - lo);
        ym[1] = (uint8_t)(ix[l] - lo + 1);
        ym[2] = ym[3] = 0x80;
        cm[0] = (uint8_t)c0;
        cm[1] = (uint8_t)(c0 + 1);
        cm[2] = (uint8_t)c1;
        cm[3] = (uint8_t)(c1 + 1);
    }
    return 1;
}

static __m256i load_halves(const uint8_t *row, const int32_t *base) {
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(row + base[0]));
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(row + base[1]));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1);
}

ALWAYS_INLINE void rows_axis_nv(const ks__imgproc *p, int32_t y_begin, int32_t y_end,
                                const enum sample_kind kind, const int nhwc3) {
    call_consts k;
    call_init(p, kind, &k);
    const int32_t out_w = p->out_width_px, groups = out_w / 8;
    const int32_t w = p->width_px, chroma_row_bytes = 2 * ((w + 1) / 2);
    const int nv21 = kind == KIND_NV21;
    const __m256i ff = _mm256_set1_epi32(0xff);
    const size_t s0 = p->stride_bytes[0], s1 = p->stride_bytes[1];
    /* every row's bx is row 0's: m[1] == 0, so m[1] * dy is 0 */
    float bx, by0;
    ks__imgproc_row_base(p, 0, &bx, &by0);
    const __m256 bxv = _mm256_set1_ps(bx);
    const int32_t x_max = fast_x_max(p);
    axis_group tab[AXIS_GROUPS];
    for (int32_t g0 = 0; g0 < groups; g0 += AXIS_GROUPS) {
        const int32_t ng = groups - g0 < AXIS_GROUPS ? groups - g0 : AXIS_GROUPS;
        for (int32_t g = 0; g < ng; g++) {
            axis_group *t = &tab[g];
            float x0 = (float)(8 * (g0 + g));
            __m256 dx = _mm256_add_ps(
                _mm256_setr_ps(0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f), _mm256_set1_ps(x0));
            __m256 sx = _mm256_mul_ps(k.m0, dx);
            sx = _mm256_add_ps(sx, bxv);
            taps(&k, sx, k.lo, k.hi_x, &t->ix, &t->ax);
            int32_t ix[8];
            _mm256_storeu_si256((__m256i *)(void *)ix, t->ix);
            uint8_t ym[32], cm[32];
            int inside = 1;
            for (int l = 0; l < 8; l++)
                inside = inside && ix[l] >= 0 && ix[l] <= x_max;
            t->shuffled =
                inside &&
                axis_half(ix, 0, w, chroma_row_bytes, ym, cm, &t->ybase[0], &t->cbase[0]) &&
                axis_half(ix, 1, w, chroma_row_bytes, ym, cm, &t->ybase[1], &t->cbase[1]);
            if (t->shuffled) {
                t->ymask = _mm256_loadu_si256((const __m256i *)(const void *)ym);
                t->cmask = _mm256_loadu_si256((const __m256i *)(const void *)cm);
            }
        }
        for (int32_t y = y_begin; y < y_end; y++) {
            float bx_row, by;
            ks__imgproc_row_base(p, y, &bx_row, &by);
            /* sy = m[3] * dx + by with m[3] == 0 */
            __m256 sy =
                _mm256_add_ps(_mm256_mul_ps(k.m3, _mm256_set1_ps(0.5f)), _mm256_set1_ps(by));
            __m256i iy;
            __m256 ay;
            taps(&k, sy, k.lo, k.hi_y, &iy, &ay);
            int32_t iy0 = _mm256_cvtsi256_si32(iy);
            int row_in = iy0 >= 0 && iy0 < p->height_px - 1;
            const uint8_t *yr0 = p->plane[0] + (size_t)(row_in ? iy0 : 0) * s0, *yr1 = yr0 + s0;
            const uint8_t *cr0 = p->plane[1] + (size_t)(row_in ? iy0 >> 1 : 0) * s1;
            const uint8_t *cr1 = p->plane[1] + (size_t)(row_in ? (iy0 + 1) >> 1 : 0) * s1;
            for (int32_t g = 0; g < ng; g++) {
                const axis_group *t = &tab[g];
                const int32_t x = 8 * (g0 + g);
                if (!row_in || !t->shuffled) {
                    group8(p, &k, kind, nhwc3, y, x, t->ix, iy, t->ax, ay);
                    continue;
                }
                __m256i l0 = _mm256_shuffle_epi8(load_halves(yr0, t->ybase), t->ymask);
                __m256i l1 = _mm256_shuffle_epi8(load_halves(yr1, t->ybase), t->ymask);
                __m256 Y[4] = {_mm256_cvtepi32_ps(_mm256_and_si256(l0, ff)),
                               _mm256_cvtepi32_ps(_mm256_srli_epi32(l0, 8)),
                               _mm256_cvtepi32_ps(_mm256_and_si256(l1, ff)),
                               _mm256_cvtepi32_ps(_mm256_srli_epi32(l1, 8))};
                __m256i c0 = _mm256_shuffle_epi8(load_halves(cr0, t->cbase), t->cmask);
                __m256i c1 = _mm256_shuffle_epi8(load_halves(cr1, t->cbase), t->cmask);
                /* lane bytes: pair at cx0 (NV21: V, U), pair at cx1 */
                const int u_lo = nv21 ? 8 : 0, v_lo = nv21 ? 0 : 8;
                __m256 U[4] = {byte_f(c0, u_lo), byte_f(c0, u_lo + 16), byte_f(c1, u_lo),
                               byte_f(c1, u_lo + 16)};
                __m256 V[4] = {byte_f(c0, v_lo), byte_f(c0, v_lo + 16), byte_f(c1, v_lo),
                               byte_f(c1, v_lo + 16)};
                vec_rgb rgb = yuv_to_rgb(p, lerp2(Y[0], Y[1], Y[2], Y[3], t->ax, ay),
                                         lerp2(U[0], U[1], U[2], U[3], t->ax, ay),
                                         lerp2(V[0], V[1], V[2], V[3], t->ax, ay));
                emit8(p, &k, nhwc3, y, x, rgb);
            }
        }
    }
    if (groups * 8 < out_w)
        for (int32_t y = y_begin; y < y_end; y++)
            ks__imgproc_span_scalar(p, y, groups * 8, out_w);
}

/* One row's span with the nhwc3 output (the AVX-512 sampler's border groups and tails). */
ALWAYS_INLINE void span_nhwc3(const ks__imgproc *p, int32_t y, int32_t x_begin, int32_t x_end,
                              const enum sample_kind kind) {
    call_consts k;
    call_init(p, kind, &k);
    span_kind(p, &k, y, x_begin, x_end, kind, 1);
}

void ks__imgproc_span_avx2(const ks__imgproc *p, int32_t y, int32_t x_begin, int32_t x_end) {
    const int nhwc3 = !p->out_u8 && !p->nchw && !p->gray_out && p->out_channels == 3;
    if (!nhwc3) {
        ks__imgproc_span_scalar(p, y, x_begin, x_end);
        return;
    }
    switch (p->format) {
    case KS_PIXEL_FORMAT_RGBA:
    case KS_PIXEL_FORMAT_BGRA:
        span_nhwc3(p, y, x_begin, x_end, KIND_RGBA);
        break;
    case KS_PIXEL_FORMAT_RGB:
    case KS_PIXEL_FORMAT_BGR:
        span_nhwc3(p, y, x_begin, x_end, KIND_RGB);
        break;
    case KS_PIXEL_FORMAT_NV21:
        span_nhwc3(p, y, x_begin, x_end, KIND_NV21);
        break;
    case KS_PIXEL_FORMAT_NV12:
        span_nhwc3(p, y, x_begin, x_end, KIND_NV12);
        break;
    case KS_PIXEL_FORMAT_I420:
        span_nhwc3(p, y, x_begin, x_end, KIND_I420);
        break;
    default:
        ks__imgproc_span_scalar(p, y, x_begin, x_end);
        break;
    }
}

#define ROWS_KIND(kind)                                                                            \
    do {                                                                                           \
        if (nhwc3)                                                                                 \
            rows_kind(p, y_begin, y_end, kind, 1);                                                 \
        else                                                                                       \
            rows_kind(p, y_begin, y_end, kind, 0);                                                 \
    } while (0)

#define ROWS_AXIS(kind)                                                                            \
    do {                                                                                           \
        if (nhwc3)                                                                                 \
            rows_axis_nv(p, y_begin, y_end, kind, 1);                                              \
        else                                                                                       \
            rows_axis_nv(p, y_begin, y_end, kind, 0);                                              \
    } while (0)

void ks__imgproc_rows_avx2(const ks__imgproc *p, int32_t y_begin, int32_t y_end) {
    const int nhwc3 = !p->out_u8 && !p->nchw && !p->gray_out && p->out_channels == 3;
    switch (p->format) {
    case KS_PIXEL_FORMAT_RGBA:
    case KS_PIXEL_FORMAT_BGRA:
        ROWS_KIND(KIND_RGBA);
        break;
    case KS_PIXEL_FORMAT_RGB:
    case KS_PIXEL_FORMAT_BGR:
        ROWS_KIND(KIND_RGB);
        break;
    case KS_PIXEL_FORMAT_GRAY:
        ROWS_KIND(KIND_GRAY);
        break;
    case KS_PIXEL_FORMAT_NV21:
    case KS_PIXEL_FORMAT_NV12: {
        /* each of NV21 and NV12 has its own copy: byte positions are constants */
        const int nv21 = p->format == KS_PIXEL_FORMAT_NV21;
        if (p->m[1] == 0.0f && p->m[3] == 0.0f) {
            if (nv21)
                ROWS_AXIS(KIND_NV21);
            else
                ROWS_AXIS(KIND_NV12);
        } else if (nv21) {
            ROWS_KIND(KIND_NV21);
        } else {
            ROWS_KIND(KIND_NV12);
        }
        break;
    }
    case KS_PIXEL_FORMAT_I420:
        ROWS_KIND(KIND_I420);
        break;
    default: /* not reached: the caller validated the format */
        for (int32_t y = y_begin; y < y_end; y++)
            ks__imgproc_span_scalar(p, y, 0, p->out_width_px);
        break;
    }
}
