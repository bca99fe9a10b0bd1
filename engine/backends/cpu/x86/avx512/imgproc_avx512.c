/* AVX-512 fast path of ks_image_to_tensor (bilinear) for the crops that models take: rotated or
 * scaled maps of RGBA/BGRA, RGB/BGR, NV21/NV12 and I420 sources into f32 NHWC RGB/BGR, 16
 * destination pixels per step, taps fetched with 32-bit gathers. It is the AVX2 sampler
 * (x86/avx2/imgproc_avx2.c) at twice the width: the same statements in the same order, one
 * operation each (no FMA), so results are bit-identical to the scalar reference
 * (engine/tests/unit/test_imgproc.c checks both paths against it). Groups whose taps touch the
 * border or would read past a row end, the row tails and every other form of call go to the
 * AVX2 sampler. */
#include <immintrin.h>

#include "../../imgproc_impl.h"

#define ALWAYS_INLINE __attribute__((always_inline)) static inline

typedef struct vec_rgb {
    __m512 r, g, b;
} vec_rgb;

enum sample_kind { KIND_RGBA, KIND_RGB, KIND_NV21, KIND_NV12, KIND_I420 };

ALWAYS_INLINE __m512 byte_f(__m512i v, int shift) {
    __m512i b = _mm512_and_si512(_mm512_srli_epi32(v, (unsigned)shift), _mm512_set1_epi32(0xff));
    return _mm512_cvtepi32_ps(b);
}

ALWAYS_INLINE __m512i gather(const uint8_t *base, __m512i offsets) {
    return _mm512_i32gather_epi32(offsets, (const void *)base, 1);
}

ALWAYS_INLINE __m512 clamp255(__m512 v) {
    v = _mm512_max_ps(v, _mm512_setzero_ps());
    return _mm512_min_ps(v, _mm512_set1_ps(255.0f));
}

ALWAYS_INLINE vec_rgb yuv_to_rgb(const ks__imgproc *p, __m512 Y, __m512 U, __m512 V) {
    const __m512 c128 = _mm512_set1_ps(128.0f);
    __m512 yy = _mm512_sub_ps(Y, _mm512_set1_ps(p->y_offset));
    yy = _mm512_mul_ps(yy, _mm512_set1_ps(p->y_scale));
    __m512 u = _mm512_sub_ps(U, c128), v = _mm512_sub_ps(V, c128);
    __m512 t = _mm512_mul_ps(_mm512_set1_ps(p->kr_v), v);
    __m512 r = _mm512_add_ps(yy, t);
    t = _mm512_mul_ps(_mm512_set1_ps(p->kg_u), u);
    __m512 g = _mm512_sub_ps(yy, t);
    t = _mm512_mul_ps(_mm512_set1_ps(p->kg_v), v);
    g = _mm512_sub_ps(g, t);
    t = _mm512_mul_ps(_mm512_set1_ps(p->kb_u), u);
    __m512 b = _mm512_add_ps(yy, t);
    vec_rgb out = {clamp255(r), clamp255(g), clamp255(b)};
    return out;
}

ALWAYS_INLINE __m512 lerp2(__m512 p00, __m512 p01, __m512 p10, __m512 p11, __m512 ax, __m512 ay) {
    __m512 d = _mm512_sub_ps(p01, p00);
    d = _mm512_mul_ps(d, ax);
    __m512 top = _mm512_add_ps(p00, d);
    d = _mm512_sub_ps(p11, p10);
    d = _mm512_mul_ps(d, ax);
    __m512 bot = _mm512_add_ps(p10, d);
    d = _mm512_sub_ps(bot, top);
    d = _mm512_mul_ps(d, ay);
    return _mm512_add_ps(top, d);
}

/* Largest tap column ix (the left one of a pair) whose gathers stay inside the row (the AVX2
 * sampler's fast_x_max). */
static int32_t fast_x_max(const ks__imgproc *p) {
    int32_t w = p->width_px, cw = (w + 1) / 2;
    switch (p->format) {
    case KS_PIXEL_FORMAT_RGBA:
    case KS_PIXEL_FORMAT_BGRA:
        return w - 2;
    case KS_PIXEL_FORMAT_RGB:
    case KS_PIXEL_FORMAT_BGR:
        return w - 3; /* 4-byte read at 3 * (ix + 1) */
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

/* Bilinear RGB of 16 points whose 4 taps are all inside the fast region. */
ALWAYS_INLINE vec_rgb sample16(const ks__imgproc *p, const enum sample_kind kind, __m512i ix,
                               __m512i iy, __m512 ax, __m512 ay) {
    const __m512i one = _mm512_set1_epi32(1);
    __m512i s0 = _mm512_set1_epi32((int32_t)p->stride_bytes[0]);
    __m512i row0 = _mm512_mullo_epi32(iy, s0);
    __m512i row1 = _mm512_add_epi32(row0, s0);
    const uint8_t *base = p->plane[0];
    vec_rgb out;
    if (kind == KIND_RGBA || kind == KIND_RGB) {
        int bgr = p->format == KS_PIXEL_FORMAT_BGRA || p->format == KS_PIXEL_FORMAT_BGR;
        __m512i bpp = _mm512_set1_epi32(kind == KIND_RGBA ? 4 : 3);
        __m512i c0 = _mm512_mullo_epi32(ix, bpp);
        __m512i c1 = _mm512_add_epi32(c0, bpp);
        __m512i v00 = gather(base, _mm512_add_epi32(row0, c0));
        __m512i v01 = gather(base, _mm512_add_epi32(row0, c1));
        __m512i v10 = gather(base, _mm512_add_epi32(row1, c0));
        __m512i v11 = gather(base, _mm512_add_epi32(row1, c1));
        int rs = bgr ? 16 : 0, bs = bgr ? 0 : 16;
        out.r = lerp2(byte_f(v00, rs), byte_f(v01, rs), byte_f(v10, rs), byte_f(v11, rs), ax, ay);
        out.g = lerp2(byte_f(v00, 8), byte_f(v01, 8), byte_f(v10, 8), byte_f(v11, 8), ax, ay);
        out.b = lerp2(byte_f(v00, bs), byte_f(v01, bs), byte_f(v10, bs), byte_f(v11, bs), ax, ay);
        return out;
    }
    /* YUV: luma pairs from one gather per row; chroma pairs (cx0 = ix >> 1 and cx0 + (ix & 1))
     * from one 4-byte gather per chroma row and plane, the right tap shifted in when ix is odd
     * (the AVX2 sampler's scheme). */
    __m512i y0 = gather(base, _mm512_add_epi32(row0, ix));
    __m512i y1 = gather(base, _mm512_add_epi32(row1, ix));
    __m512 Y[4] = {byte_f(y0, 0), byte_f(y0, 8), byte_f(y1, 0), byte_f(y1, 8)};
    __m512i cx0 = _mm512_srli_epi32(ix, 1);
    __m512i odd = _mm512_and_si512(ix, one);
    __m512i s1 = _mm512_set1_epi32((int32_t)p->stride_bytes[1]);
    __m512i cy[2] = {_mm512_srli_epi32(iy, 1), _mm512_srli_epi32(_mm512_add_epi32(iy, one), 1)};
    __m512 U[4], V[4];
    for (int r = 0; r < 2; r++) {
        __m512i crow = _mm512_mullo_epi32(cy[r], s1);
        if (kind == KIND_I420) {
            __m512i s2 = _mm512_set1_epi32((int32_t)p->stride_bytes[2]);
            __m512i crow2 = _mm512_mullo_epi32(cy[r], s2);
            __m512i u = gather(p->plane[1], _mm512_add_epi32(crow, cx0));
            __m512i v = gather(p->plane[2], _mm512_add_epi32(crow2, cx0));
            __m512i sh = _mm512_slli_epi32(odd, 3); /* 8 bits when odd */
            U[2 * r] = byte_f(u, 0);
            V[2 * r] = byte_f(v, 0);
            U[2 * r + 1] = byte_f(_mm512_srlv_epi32(u, sh), 0);
            V[2 * r + 1] = byte_f(_mm512_srlv_epi32(v, sh), 0);
        } else {
            __m512i uv = gather(p->plane[1], _mm512_add_epi32(crow, _mm512_add_epi32(cx0, cx0)));
            __m512i uv1 = _mm512_srlv_epi32(uv, _mm512_slli_epi32(odd, 4)); /* 16 bits if odd */
            const int nv21 = kind == KIND_NV21;
            U[2 * r] = byte_f(uv, nv21 ? 8 : 0);
            V[2 * r] = byte_f(uv, nv21 ? 0 : 8);
            U[2 * r + 1] = byte_f(uv1, nv21 ? 8 : 0);
            V[2 * r + 1] = byte_f(uv1, nv21 ? 0 : 8);
        }
    }
    /* blend Y, U, V, then convert once (the reference's rule for taps inside the image) */
    return yuv_to_rgb(p, lerp2(Y[0], Y[1], Y[2], Y[3], ax, ay),
                      lerp2(U[0], U[1], U[2], U[3], ax, ay), lerp2(V[0], V[1], V[2], V[3], ax, ay));
}

/* Three 16-float vectors interleaved into 48 floats a0 b0 c0 a1 ...: two two-source permutes
 * per output vector (a with b, then that with c). */
ALWAYS_INLINE void interleave3_store(float *dst, __m512 a, __m512 b, __m512 c) {
    /* output vector k, lane j: element e = 16 k + j is channel e % 3 of pixel e / 3 */
    const __m512i ab0 = _mm512_setr_epi32(0, 16, 0, 1, 17, 0, 2, 18, 0, 3, 19, 0, 4, 20, 0, 5);
    const __m512i c0 = _mm512_setr_epi32(0, 1, 16, 3, 4, 17, 6, 7, 18, 9, 10, 19, 12, 13, 20, 15);
    const __m512i ab1 = _mm512_setr_epi32(21, 0, 6, 22, 0, 7, 23, 0, 8, 24, 0, 9, 25, 0, 10, 26);
    const __m512i c1 = _mm512_setr_epi32(0, 21, 2, 3, 22, 5, 6, 23, 8, 9, 24, 11, 12, 25, 14, 15);
    const __m512i ab2 = _mm512_setr_epi32(0, 11, 27, 0, 12, 28, 0, 13, 29, 0, 14, 30, 0, 15, 31, 0);
    const __m512i c2 = _mm512_setr_epi32(26, 1, 2, 27, 4, 5, 28, 7, 8, 29, 10, 11, 30, 13, 14, 31);
    _mm512_storeu_ps(dst, _mm512_permutex2var_ps(_mm512_permutex2var_ps(a, ab0, b), c0, c));
    _mm512_storeu_ps(dst + 16, _mm512_permutex2var_ps(_mm512_permutex2var_ps(a, ab1, b), c1, c));
    _mm512_storeu_ps(dst + 32, _mm512_permutex2var_ps(_mm512_permutex2var_ps(a, ab2, b), c2, c));
}

/* Per-call constants of the row loop, set once and kept in registers. */
typedef struct call_consts {
    __m512 half, lo, hi_x, hi_y, m0, m3;
    __m512i x_lim, y_lim, minus1;
    int bgr;
    __m512 mean0, mean1, mean2, scale0, scale1, scale2;
} call_consts;

ALWAYS_INLINE void call_init(const ks__imgproc *p, call_consts *k) {
    k->half = _mm512_set1_ps(0.5f);
    k->lo = _mm512_set1_ps(-4.0f);
    k->hi_x = _mm512_set1_ps((float)p->width_px + 4.0f);
    k->hi_y = _mm512_set1_ps((float)p->height_px + 4.0f);
    k->m0 = _mm512_set1_ps(p->m[0]);
    k->m3 = _mm512_set1_ps(p->m[3]);
    k->x_lim = _mm512_set1_epi32(fast_x_max(p) + 1);
    k->y_lim = _mm512_set1_epi32(p->height_px - 1);
    k->minus1 = _mm512_set1_epi32(-1);
    k->bgr = p->bgr;
    k->mean0 = _mm512_set1_ps(p->mean[0]);
    k->mean1 = _mm512_set1_ps(p->mean[1]);
    k->mean2 = _mm512_set1_ps(p->mean[2]);
    k->scale0 = _mm512_set1_ps(p->scale[0]);
    k->scale1 = _mm512_set1_ps(p->scale[1]);
    k->scale2 = _mm512_set1_ps(p->scale[2]);
}

/* Source columns of 16 destination points: u clamped to [-4, w + 4], its floor and fraction. */
ALWAYS_INLINE void taps(const call_consts *k, __m512 s, __m512 hi, __m512i *i_out, __m512 *a_out) {
    __m512 u = _mm512_min_ps(_mm512_max_ps(_mm512_sub_ps(s, k->half), k->lo), hi);
    __m512 fu = _mm512_roundscale_ps(u, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    *a_out = _mm512_sub_ps(u, fu);
    *i_out = _mm512_cvttps_epi32(fu);
}

ALWAYS_INLINE void rows_kind(const ks__imgproc *p, int32_t y_begin, int32_t y_end,
                             const enum sample_kind kind) {
    const float *m = p->m;
    call_consts k;
    call_init(p, &k);
    const int32_t out_w = p->out_width_px;
    for (int32_t y = y_begin; y < y_end; y++) {
        float dy = (float)y + 0.5f;
        float bx = m[1] * dy;
        bx = bx + m[2];
        float by = m[4] * dy;
        by = by + m[5];
        const __m512 bxv = _mm512_set1_ps(bx), byv = _mm512_set1_ps(by);
        /* destination x + 0.5 of the group's lanes: exact in float */
        __m512 dx = _mm512_setr_ps(0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f, 8.5f, 9.5f,
                                   10.5f, 11.5f, 12.5f, 13.5f, 14.5f, 15.5f);
        int32_t x = 0;
        for (; x + 16 <= out_w; x += 16, dx = _mm512_add_ps(dx, _mm512_set1_ps(16.0f))) {
            __m512 sx = _mm512_mul_ps(k.m0, dx);
            sx = _mm512_add_ps(sx, bxv);
            __m512 sy = _mm512_mul_ps(k.m3, dx);
            sy = _mm512_add_ps(sy, byv);
            __m512i ix, iy;
            __m512 ax, ay;
            taps(&k, sx, k.hi_x, &ix, &ax);
            taps(&k, sy, k.hi_y, &iy, &ay);
            __mmask16 ok = _mm512_cmpgt_epi32_mask(ix, k.minus1);
            ok = _mm512_mask_cmpgt_epi32_mask(ok, k.x_lim, ix);
            ok = _mm512_mask_cmpgt_epi32_mask(ok, iy, k.minus1);
            ok = _mm512_mask_cmpgt_epi32_mask(ok, k.y_lim, iy);
            if (ok != 0xffff) { /* a tap at or past the border: the AVX2 sampler's cases */
                ks__imgproc_span_avx2(p, y, x, x + 16);
                continue;
            }
            vec_rgb rgb = sample16(p, kind, ix, iy, ax, ay);
            __m512 c0 = k.bgr ? rgb.b : rgb.r, c2 = k.bgr ? rgb.r : rgb.b;
            c0 = _mm512_mul_ps(_mm512_sub_ps(c0, k.mean0), k.scale0);
            __m512 c1 = _mm512_mul_ps(_mm512_sub_ps(rgb.g, k.mean1), k.scale1);
            c2 = _mm512_mul_ps(_mm512_sub_ps(c2, k.mean2), k.scale2);
            interleave3_store((float *)p->out + ((size_t)y * (size_t)out_w + (size_t)x) * 3, c0, c1,
                              c2);
        }
        if (x < out_w) ks__imgproc_span_avx2(p, y, x, out_w);
    }
}

void ks__imgproc_rows_avx512(const ks__imgproc *p, int32_t y_begin, int32_t y_end) {
    const int nhwc3 = !p->out_u8 && !p->nchw && !p->gray_out && p->out_channels == 3;
    const int axis = p->m[1] == 0.0f && p->m[3] == 0.0f;
    switch (nhwc3 ? p->format : KS_PIXEL_FORMAT_GRAY) {
    case KS_PIXEL_FORMAT_RGBA:
    case KS_PIXEL_FORMAT_BGRA:
        rows_kind(p, y_begin, y_end, KIND_RGBA);
        return;
    case KS_PIXEL_FORMAT_RGB:
    case KS_PIXEL_FORMAT_BGR:
        rows_kind(p, y_begin, y_end, KIND_RGB);
        return;
    case KS_PIXEL_FORMAT_NV21:
    case KS_PIXEL_FORMAT_NV12:
        if (axis) break; /* the AVX2 sampler's shuffle path for axis-aligned maps */
        if (p->format == KS_PIXEL_FORMAT_NV21)
            rows_kind(p, y_begin, y_end, KIND_NV21); /* byte positions are constants */
        else
            rows_kind(p, y_begin, y_end, KIND_NV12);
        return;
    case KS_PIXEL_FORMAT_I420:
        rows_kind(p, y_begin, y_end, KIND_I420);
        return;
    default:
        break;
    }
    ks__imgproc_rows_avx2(p, y_begin, y_end);
}
