/* AVX-512 fast path of ks_image_to_tensor (bilinear) for the crops that models take: rotated or
 * scaled maps of RGBA/BGRA, RGB/BGR, NV21/NV12 and I420 sources into f32 NHWC RGB/BGR, 16
 * destination pixels per step, taps fetched with 32-bit gathers (NV21/NV12: from one 64-byte
 * window per source row with word permutes where a group's taps fit). The sampler is the AVX2
 * path's, written once for both widths (../imgproc_gather.h): the same statements in the same
 * order, one operation each (no FMA), so results are bit-identical to the scalar reference
 * (engine/tests/unit/test_imgproc.c checks both paths against it). With the REPLICATE border,
 * groups on or past the image's edge take the shared edge sampler (sample_replicate); with the
 * others, groups whose taps touch the border band, the row tails and every other form of call go
 * to the AVX2 sampler. */
#include <immintrin.h>

#define VF __m512
#define VI __m512i
#define VF_SET1 _mm512_set1_ps
#define VF_ZERO _mm512_setzero_ps
#define VF_ADD _mm512_add_ps
#define VF_SUB _mm512_sub_ps
#define VF_MUL _mm512_mul_ps
#define VF_MIN _mm512_min_ps
#define VF_MAX _mm512_max_ps
#define VF_FLOOR(v) _mm512_roundscale_ps((v), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
#define VF_FROM_I _mm512_cvtepi32_ps
#define VI_TRUNC _mm512_cvttps_epi32
#define VI_SET1 _mm512_set1_epi32
#define VI_ADD _mm512_add_epi32
#define VI_AND _mm512_and_si512
#define VI_MULLO _mm512_mullo_epi32
#define VI_SRLI(v, n) _mm512_srli_epi32((v), (unsigned)(n))
#define VI_SLLI(v, n) _mm512_slli_epi32((v), (unsigned)(n))
#define VI_SRLV _mm512_srlv_epi32
#define VI_MIN _mm512_min_epi32
#define VI_MAX _mm512_max_epi32
#define VF_SEL_GT(a, b, x, y) _mm512_mask_mov_ps((y), _mm512_cmpgt_epi32_mask((a), (b)), (x))
#define VI_SUB _mm512_sub_epi32
#define VI_SHUFB _mm512_shuffle_epi8
#define VI_BCAST128 _mm512_broadcast_i32x4
#define VI_GATHER(base, offsets) _mm512_i32gather_epi32((offsets), (const void *)(base), 1)
#include "../imgproc_gather.h"

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

/* Most luma rows one group's taps may span for the window fetch below (rows iy_min ..
 * iy_max + 1); steeper lines (rotations near 90 degrees) take the gathers. */
#define WINDOW_ROWS 8

/* Lane 0 and lane 15 of v. */
ALWAYS_INLINE void end_lanes(__m512i v, int32_t *first, int32_t *last) {
    *first = _mm_cvtsi128_si32(_mm512_castsi512_si128(v));
    *last = _mm_extract_epi32(_mm512_extracti32x4_epi32(v, 3), 3);
}

/* Byte mask of a plane row's window from byte `col`: the bytes before `row_bytes` (a masked
 * load does not fault on the others and reads them as 0). */
ALWAYS_INLINE __mmask64 window_mask(int32_t col, int32_t row_bytes) {
    int32_t len = row_bytes - col;
    return len >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << len) - 1);
}

/* Each lane's 4 bytes from one plane's windows (rows first .. first + n - 1, row masks m): the
 * word pair `idx` (word indices below 32) of the window of row rel0 into out0 and of row rel1
 * into out1, rel0 and rel1 relative to `first` and held in both 16-bit halves of each lane.
 * Rows go two at a time through a two-table word permute (vpermt2w: index bit 5 picks the
 * second row), each pair's result kept under the mask of its lanes and OR-ed in, so no permute
 * waits for another. */
ALWAYS_INLINE void window_rows(const uint8_t *first, size_t stride, int32_t n, __mmask64 m,
                               __m512i idx, __m512i rel0, __m512i rel1, __m512i *out0,
                               __m512i *out1) {
    const __m512i one16 = _mm512_set1_epi16(1), bit5 = _mm512_set1_epi16(32);
    /* the row within the pair picks the table: bit 5 of the word index */
    const __m512i i0 = _mm512_or_si512(idx, _mm512_and_si512(_mm512_slli_epi16(rel0, 5), bit5));
    const __m512i i1 = _mm512_or_si512(idx, _mm512_and_si512(_mm512_slli_epi16(rel1, 5), bit5));
    const __m512i h0 = _mm512_srli_epi16(rel0, 1), h1 = _mm512_srli_epi16(rel1, 1);
    __m512i a0 = _mm512_setzero_si512(), a1 = _mm512_setzero_si512();
    __m512i pair = _mm512_setzero_si512();
    for (int32_t k = 0; k < n; k += 2) {
        __m512i wa = _mm512_maskz_loadu_epi8(m, first + (size_t)k * stride);
        __m512i wb = k + 1 < n ? _mm512_maskz_loadu_epi8(m, first + (size_t)(k + 1) * stride)
                               : _mm512_setzero_si512();
        a0 = _mm512_or_si512(
            a0, _mm512_maskz_permutex2var_epi16(_mm512_cmpeq_epi16_mask(h0, pair), wa, i0, wb));
        a1 = _mm512_or_si512(
            a1, _mm512_maskz_permutex2var_epi16(_mm512_cmpeq_epi16_mask(h1, pair), wa, i1, wb));
        pair = _mm512_add_epi16(pair, one16);
    }
    *out0 = a0;
    *out1 = a1;
}

/* The NV taps of a group without gathers (16 gathered dwords cost about as much as the rest of
 * a group on Zen 5): the lanes' points lie on one line, so their tap columns and rows are
 * monotonic across the lanes and lanes 0 and 15 bound them. When the luma taps fit one 64-byte
 * window per row (columns within 61 of an even start) over at most WINDOW_ROWS rows, each
 * row's window is loaded once and word permutes put each lane's 4 bytes in place (luma from an
 * even byte, so odd columns shift down by 8 bits after; the 4 chroma bytes start at an even
 * column already). The taps are the bytes the gathers fetch, so the results stay
 * bit-identical. Returns 0 (nothing written) when they do not fit. */
ALWAYS_INLINE int nv_window_taps(const ks__imgproc *p, __m512i ix, __m512i iy, yuv_taps *t) {
    int32_t i_a, i_b, j_a, j_b;
    end_lanes(ix, &i_a, &i_b);
    end_lanes(iy, &j_a, &j_b);
    const int32_t i_min = i_a < i_b ? i_a : i_b, i_max = i_a < i_b ? i_b : i_a;
    const int32_t j_min = j_a < j_b ? j_a : j_b, j_max = j_a < j_b ? j_b : j_a;
    const int32_t x0 = i_min & ~1, c_min = i_min >> 1, c_max = i_max >> 1;
    if (i_max - x0 > 61 || c_max - c_min > 30 || j_max - j_min > WINDOW_ROWS - 2) return 0;
    const __m512i one = _mm512_set1_epi32(1);
    /* luma: word index (ix - x0) >> 1 and the next one, per lane; rows iy and iy + 1 */
    const __m512i d = _mm512_sub_epi32(ix, _mm512_set1_epi32(x0));
    __m512i w = _mm512_srli_epi32(d, 1);
    __m512i idx = _mm512_or_si512(w, _mm512_slli_epi32(_mm512_add_epi32(w, one), 16));
    __m512i r0 = _mm512_sub_epi32(iy, _mm512_set1_epi32(j_min));
    r0 = _mm512_or_si512(r0, _mm512_slli_epi32(r0, 16)); /* both words of a lane */
    __m512i r1 = _mm512_add_epi16(r0, _mm512_set1_epi16(1));
    __m512i y0, y1;
    window_rows(p->plane[0] + (size_t)j_min * p->stride_bytes[0] + x0, p->stride_bytes[0],
                j_max + 2 - j_min, window_mask(x0, p->width_px), idx, r0, r1, &y0, &y1);
    const __m512i par = _mm512_slli_epi32(_mm512_and_si512(d, one), 3);
    t->y0 = _mm512_srlv_epi32(y0, par);
    t->y1 = _mm512_srlv_epi32(y1, par);
    /* chroma: the word pair at 2 * (ix >> 1) of the window from 2 * c_min, rows iy >> 1 and
     * (iy + 1) >> 1 */
    w = _mm512_sub_epi32(_mm512_srli_epi32(ix, 1), _mm512_set1_epi32(c_min));
    idx = _mm512_or_si512(w, _mm512_slli_epi32(_mm512_add_epi32(w, one), 16));
    const int32_t cy_min = j_min >> 1, cy_max = (j_max + 1) >> 1;
    const __m512i cy0 = _mm512_set1_epi32(cy_min);
    r0 = _mm512_sub_epi32(_mm512_srli_epi32(iy, 1), cy0);
    r1 = _mm512_sub_epi32(_mm512_srli_epi32(_mm512_add_epi32(iy, one), 1), cy0);
    r0 = _mm512_or_si512(r0, _mm512_slli_epi32(r0, 16));
    r1 = _mm512_or_si512(r1, _mm512_slli_epi32(r1, 16));
    window_rows(p->plane[1] + (size_t)cy_min * p->stride_bytes[1] + 2 * c_min, p->stride_bytes[1],
                cy_max + 1 - cy_min, window_mask(2 * c_min, 2 * ((p->width_px + 1) / 2)), idx, r0,
                r1, &t->c[0], &t->c[1]);
    return 1;
}

/* Per-call constants of the row loop, set once and kept in registers. */
typedef struct call_consts {
    __m512 half, lo, hi_x, hi_y, m0, m3;
    __m512i x_lim, y_lim, minus1, w_last, h_last;
    int bgr, constant_border, replicate;
    __m512 border_r, border_g, border_b;
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
    k->w_last = _mm512_set1_epi32(p->width_px - 1);
    k->h_last = _mm512_set1_epi32(p->height_px - 1);
    k->bgr = p->bgr;
    k->constant_border = p->border != KS_BORDER_REPLICATE;
    /* edge groups of a REPLICATE map in this sampler (its reads need rows of 8 pixels) */
    k->replicate = p->border == KS_BORDER_REPLICATE && p->width_px >= 8 && p->height_px >= 2;
    k->border_r = _mm512_set1_ps(p->border_rgb[0]);
    k->border_g = _mm512_set1_ps(p->border_rgb[1]);
    k->border_b = _mm512_set1_ps(p->border_rgb[2]);
    k->mean0 = _mm512_set1_ps(p->mean[0]);
    k->mean1 = _mm512_set1_ps(p->mean[1]);
    k->mean2 = _mm512_set1_ps(p->mean[2]);
    k->scale0 = _mm512_set1_ps(p->scale[0]);
    k->scale1 = _mm512_set1_ps(p->scale[1]);
    k->scale2 = _mm512_set1_ps(p->scale[2]);
}

ALWAYS_INLINE void rows_kind(const ks__imgproc *p, int32_t y_begin, int32_t y_end,
                             const enum sample_kind kind) {
    call_consts k;
    call_init(p, &k);
    const int32_t out_w = p->out_width_px;
    for (int32_t y = y_begin; y < y_end; y++) {
        float bx, by;
        ks__imgproc_row_base(p, y, &bx, &by);
        const __m512 bxv = _mm512_set1_ps(bx), byv = _mm512_set1_ps(by);
        /* destination x + 0.5 of the group's lanes: exact in float */
        __m512 dx = _mm512_setr_ps(0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f, 8.5f, 9.5f,
                                   10.5f, 11.5f, 12.5f, 13.5f, 14.5f, 15.5f);
        int32_t x = 0, pending = -1; /* pending: start of the groups left to the AVX2 sampler */
        for (; x + 16 <= out_w; x += 16, dx = _mm512_add_ps(dx, _mm512_set1_ps(16.0f))) {
            __m512 sx = _mm512_mul_ps(k.m0, dx);
            sx = _mm512_add_ps(sx, bxv);
            __m512 sy = _mm512_mul_ps(k.m3, dx);
            sy = _mm512_add_ps(sy, byv);
            __m512i ix, iy;
            __m512 ax, ay;
            tap_coords(sx, k.half, k.lo, k.hi_x, &ix, &ax);
            tap_coords(sy, k.half, k.lo, k.hi_y, &iy, &ay);
            __mmask16 ok = _mm512_cmpgt_epi32_mask(ix, k.minus1);
            ok = _mm512_mask_cmpgt_epi32_mask(ok, k.x_lim, ix);
            ok = _mm512_mask_cmpgt_epi32_mask(ok, iy, k.minus1);
            ok = _mm512_mask_cmpgt_epi32_mask(ok, k.y_lim, iy);
            __mmask16 out = 0;
            if (ok != 0xffff && k.constant_border) {
                /* lanes whose 4 taps all lie outside the image: ix + 1 < 0, ix > w - 1,
                 * iy + 1 < 0 or iy > h - 1 */
                out = _mm512_cmpgt_epi32_mask(k.minus1, ix) |
                      _mm512_cmpgt_epi32_mask(ix, k.w_last) |
                      _mm512_cmpgt_epi32_mask(k.minus1, iy) | _mm512_cmpgt_epi32_mask(iy, k.h_last);
            }
            if ((__mmask16)(ok | out) != 0xffff && !k.replicate) {
                /* a tap on the 1-pixel band along the border: the AVX2 sampler's cases, for the
                 * whole run of such groups at once (each span call sets up its constants) */
                if (pending < 0) pending = x;
                continue;
            }
            if (pending >= 0) {
                ks__imgproc_span_avx2(p, y, pending, x);
                pending = -1;
            }
            vec_rgb rgb = {k.border_r, k.border_g, k.border_b}; /* all padding: exact */
            if (ok != 0xffff && k.replicate) {
                /* REPLICATE, some lane's taps on or past the edge */
                rgb = sample_replicate(p, kind, ix, iy, ax, ay);
            } else if (out != 0xffff) {
                /* Each lane inside the fast region, or (constant border) with all its taps
                 * outside: those read at (0, 0), inside the region since an inside lane exists,
                 * and take the border colour (the reference's lerp of four equal border taps is
                 * exact). */
                ix = _mm512_maskz_mov_epi32((__mmask16)~out, ix);
                iy = _mm512_maskz_mov_epi32((__mmask16)~out, iy);
                yuv_taps taps;
                if ((kind == KIND_NV21 || kind == KIND_NV12) && out == 0 &&
                    nv_window_taps(p, ix, iy, &taps))
                    rgb = yuv_from_taps(p, kind, ix, &taps, ax, ay);
                else
                    rgb = sample_inside(p, kind, ix, iy, ax, ay);
                rgb.r = _mm512_mask_blend_ps(out, rgb.r, k.border_r);
                rgb.g = _mm512_mask_blend_ps(out, rgb.g, k.border_g);
                rgb.b = _mm512_mask_blend_ps(out, rgb.b, k.border_b);
            }
            __m512 c0 = k.bgr ? rgb.b : rgb.r, c2 = k.bgr ? rgb.r : rgb.b;
            c0 = _mm512_mul_ps(_mm512_sub_ps(c0, k.mean0), k.scale0);
            __m512 c1 = _mm512_mul_ps(_mm512_sub_ps(rgb.g, k.mean1), k.scale1);
            c2 = _mm512_mul_ps(_mm512_sub_ps(c2, k.mean2), k.scale2);
            interleave3_store((float *)p->out + ((size_t)y * (size_t)out_w + (size_t)x) * 3, c0, c1,
                              c2);
        }
        if (pending >= 0 || x < out_w)
            ks__imgproc_span_avx2(p, y, pending >= 0 ? pending : x, out_w);
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
