/* NEON fast path of ks_image_to_tensor (bilinear): 4 destination pixels per step, baseline
 * AArch64 Advanced SIMD (ARMv8.0, so it runs on Cortex-A53). The structure follows
 * x86/avx2/imgproc_avx2.c; what differs is how taps are fetched.
 *
 * AArch64 has no gather, so each lane's tap bytes are read with one scalar load (ldrh/ldr at a
 * lane offset) inserted into a vector; bytes then go to 32-bit lanes with one table lookup
 * (tbl) each, which lets a load start anywhere inside the 4 bytes it covers. That is why the
 * fast region here is wider than AVX2's: a load never needs to reach past the last byte a tap
 * uses (see fast_x_max).
 *
 * Exactness: the arithmetic repeats ks__imgproc_span_scalar statement by statement, with
 * separate multiply and add (vmulq/vaddq, never vfmaq; the project compiles C11 without
 * extensions, where GCC does not contract across statements, and clang's default contracts only
 * inside one expression), frintm for floorf, fcvtzs for the (int32_t) casts, fmax/fmin for the
 * clamps (they agree with the reference's compare-and-select on every value that reaches them:
 * finite, and -0 only where both give the same result afterwards, e.g. a u8 store adding 0.5).
 * Results are bit-identical to the scalar reference (test_simd_matches_scalar and
 * test_simd_grid in engine/tests/unit/test_imgproc.c, under qemu at -cpu max and cortex-a53).
 *
 * Groups of 4 with any tap outside the fast region take sample4_edge (still vectorized, exact
 * byte reads at clamped positions; groups made only of letterbox padding are filled with the
 * border colour there); only row tails (width % 4) and nearest sampling use the scalar code. */
#include <arm_neon.h>
#include <string.h>

#include "../../imgproc_impl.h"

/* Every helper is forced inline: the row loop is instantiated once per source kind, and no copy
 * may call sample4 out of line (returning its vectors through memory), whatever gcc's inlining
 * budget decides. */
#define ALWAYS_INLINE __attribute__((always_inline)) static inline

typedef struct vec_rgb {
    float32x4_t r, g, b;
} vec_rgb;

/* The fast sampler is compiled once per source kind (rows_kind), so each copy keeps in registers
 * only the constants its format needs; AArch64 has 32 vector registers and the NV21 loop already
 * holds about 28 constants. */
enum sample_kind { KIND_RGBA, KIND_RGB, KIND_GRAY, KIND_NV, KIND_I420 };

/* Per-call constants. The output stores go through a void pointer, so reading p->... inside the
 * loop would make the compiler reload them after every store. */
typedef struct neon_ctx {
    const ks__imgproc *p;
    float32x4_t y_offset, y_scale, kr_v, kg_u, kg_v, kb_u;
    /* tbl indices, byte k of each 32-bit lane -> the lane's low byte: byte[k] for k = 0..3, and
     * per format the bytes of R, G, B (RGB: left then right tap) or U and V (NV21/NV12) */
    uint8x16_t byte[4], r0, g0, b0, r1, g1, b1, u, v;
    int32_t s0, s1, s2; /* plane strides (offsets_fit_i32 holds) */
    const uint8_t *plane0, *plane1, *plane2;
} neon_ctx;

static uint8x16_t byte_index(int k) {
    uint8_t idx[16];
    memset(idx, 0xff, sizeof(idx)); /* out of range: tbl writes 0 */
    for (int lane = 0; lane < 4; lane++)
        idx[4 * lane] = (uint8_t)(4 * lane + k);
    return vld1q_u8(idx);
}

/* The byte of each 32-bit lane that idx (one of neon_ctx's indices) selects, as a float. */
ALWAYS_INLINE float32x4_t byte_f(uint32x4_t v, uint8x16_t idx) {
    uint8x16_t b = vqtbl1q_u8(vreinterpretq_u8_u32(v), idx);
    return vcvtq_f32_u32(vreinterpretq_u32_u8(b));
}

ALWAYS_INLINE float32x4_t clamp255(float32x4_t v) {
    return vminq_f32(vmaxq_f32(v, vdupq_n_f32(0.0f)), vdupq_n_f32(255.0f));
}

/* One read of size (1..4) bytes at q, zero-extended. */
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

/* The gather AArch64 lacks: one read of size bytes per lane at base + off[lane], inserted into
 * the lane. Never reads outside [off, off + size). */
ALWAYS_INLINE uint32x4_t gather(const uint8_t *base, uint32x4_t off, int size) {
    uint32x4_t v = vdupq_n_u32(read_px(base + vgetq_lane_u32(off, 0), size));
    v = vsetq_lane_u32(read_px(base + vgetq_lane_u32(off, 1), size), v, 1);
    v = vsetq_lane_u32(read_px(base + vgetq_lane_u32(off, 2), size), v, 2);
    return vsetq_lane_u32(read_px(base + vgetq_lane_u32(off, 3), size), v, 3);
}

ALWAYS_INLINE vec_rgb yuv_to_rgb(const neon_ctx *c, float32x4_t Y, float32x4_t U, float32x4_t V) {
    const float32x4_t c128 = vdupq_n_f32(128.0f);
    float32x4_t yy = vsubq_f32(Y, c->y_offset);
    yy = vmulq_f32(yy, c->y_scale);
    float32x4_t u = vsubq_f32(U, c128), v = vsubq_f32(V, c128);
    float32x4_t t = vmulq_f32(c->kr_v, v);
    float32x4_t r = vaddq_f32(yy, t);
    t = vmulq_f32(c->kg_u, u);
    float32x4_t g = vsubq_f32(yy, t);
    t = vmulq_f32(c->kg_v, v);
    g = vsubq_f32(g, t);
    t = vmulq_f32(c->kb_u, u);
    float32x4_t b = vaddq_f32(yy, t);
    vec_rgb out = {clamp255(r), clamp255(g), clamp255(b)};
    return out;
}

ALWAYS_INLINE float32x4_t lerp2(float32x4_t p00, float32x4_t p01, float32x4_t p10, float32x4_t p11,
                                float32x4_t ax, float32x4_t ay) {
    float32x4_t d = vsubq_f32(p01, p00);
    d = vmulq_f32(d, ax);
    float32x4_t top = vaddq_f32(p00, d);
    d = vsubq_f32(p11, p10);
    d = vmulq_f32(d, ax);
    float32x4_t bot = vaddq_f32(p10, d);
    d = vsubq_f32(bot, top);
    d = vmulq_f32(d, ay);
    return vaddq_f32(top, d);
}

ALWAYS_INLINE vec_rgb lerp_rgb(const vec_rgb c[4], float32x4_t ax, float32x4_t ay) {
    vec_rgb o;
    o.r = lerp2(c[0].r, c[1].r, c[2].r, c[3].r, ax, ay);
    o.g = lerp2(c[0].g, c[1].g, c[2].g, c[3].g, ax, ay);
    o.b = lerp2(c[0].b, c[1].b, c[2].b, c[3].b, ax, ay);
    return o;
}

/* Largest left tap column ix for which every byte the fast sampler reads is inside the row:
 *   RGBA/BGRA  4 bytes at 4 ix and at 4 (ix + 1)
 *   RGB/BGR    4 bytes at 3 ix (ends on the right pixel's R) and at 3 ix + 2 (ends on its B)
 *   GRAY, Y    2 bytes at ix
 *   NV21/NV12  4 bytes at 2 (ix >> 1): both taps' chroma pairs, so ix >> 1 <= ceil(w/2) - 2
 *   I420       2 bytes at ix >> 1 in U and in V: the same bound
 * -1 when the image is too narrow for any. */
static int32_t fast_x_max(const ks__imgproc *p) {
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
ALWAYS_INLINE vec_rgb sample4(const neon_ctx *c, const enum sample_kind kind, int32x4_t ix_s,
                              int32x4_t iy_s, float32x4_t ax, float32x4_t ay) {
    uint32x4_t ix = vreinterpretq_u32_s32(ix_s), iy = vreinterpretq_u32_s32(iy_s);
    uint32x4_t row0 = vmulq_n_u32(iy, (uint32_t)c->s0);
    uint32x4_t row1 = vaddq_u32(row0, vdupq_n_u32((uint32_t)c->s0));
    vec_rgb t[4];
    if (kind == KIND_RGBA || kind == KIND_RGB) {
        /* left pixel: a read at its start; right pixel: a read at its start (RGBA) or one byte
         * before it (RGB, so the read ends on its last byte); c->r1.. pick the bytes */
        uint32x4_t c0 = vmulq_n_u32(ix, kind == KIND_RGBA ? 4u : 3u);
        uint32x4_t c1 = vaddq_u32(c0, vdupq_n_u32(kind == KIND_RGBA ? 4u : 2u));
        uint32x4_t v[4] = {
            gather(c->plane0, vaddq_u32(row0, c0), 4), gather(c->plane0, vaddq_u32(row0, c1), 4),
            gather(c->plane0, vaddq_u32(row1, c0), 4), gather(c->plane0, vaddq_u32(row1, c1), 4)};
        for (int k = 0; k < 4; k++) {
            t[k].r = byte_f(v[k], (k & 1) ? c->r1 : c->r0);
            t[k].g = byte_f(v[k], (k & 1) ? c->g1 : c->g0);
            t[k].b = byte_f(v[k], (k & 1) ? c->b1 : c->b0);
        }
        return lerp_rgb(t, ax, ay);
    }
    if (kind == KIND_GRAY) {
        uint32x4_t v0 = gather(c->plane0, vaddq_u32(row0, ix), 2);
        uint32x4_t v1 = gather(c->plane0, vaddq_u32(row1, ix), 2);
        vec_rgb o;
        o.r = lerp2(byte_f(v0, c->byte[0]), byte_f(v0, c->byte[1]), byte_f(v1, c->byte[0]),
                    byte_f(v1, c->byte[1]), ax, ay);
        o.g = o.b = o.r;
        return o;
    }
    /* YUV: a luma pair per row from one 2-byte read; chroma as in the AVX2 path: one read per
     * chroma row at the left tap's sample cx0 = ix >> 1 covers both taps (the right one is
     * cx0 + (ix & 1)), shifted down one sample for odd ix. */
    uint32x4_t y0 = gather(c->plane0, vaddq_u32(row0, ix), 2);
    uint32x4_t y1 = gather(c->plane0, vaddq_u32(row1, ix), 2);
    uint32x4_t cx0 = vshrq_n_u32(ix, 1);
    uint32x4_t odd = vandq_u32(ix, vdupq_n_u32(1));
    uint32x4_t cy0 = vshrq_n_u32(iy, 1), cy1 = vshrq_n_u32(vaddq_u32(iy, vdupq_n_u32(1)), 1);
    /* chroma of the 4 taps: left/right x top/bottom */
    float32x4_t u0l, v0l, u0r, v0r, u1l, v1l, u1r, v1r;
    if (kind == KIND_I420) {
        int32x4_t sh = vnegq_s32(vreinterpretq_s32_u32(vshlq_n_u32(odd, 3))); /* 8 bits if odd */
        uint32x4_t u0 = gather(c->plane1, vmlaq_n_u32(cx0, cy0, (uint32_t)c->s1), 2);
        uint32x4_t v0 = gather(c->plane2, vmlaq_n_u32(cx0, cy0, (uint32_t)c->s2), 2);
        uint32x4_t u1 = gather(c->plane1, vmlaq_n_u32(cx0, cy1, (uint32_t)c->s1), 2);
        uint32x4_t v1 = gather(c->plane2, vmlaq_n_u32(cx0, cy1, (uint32_t)c->s2), 2);
        u0l = byte_f(u0, c->byte[0]);
        v0l = byte_f(v0, c->byte[0]);
        u0r = byte_f(vshlq_u32(u0, sh), c->byte[0]);
        v0r = byte_f(vshlq_u32(v0, sh), c->byte[0]);
        u1l = byte_f(u1, c->byte[0]);
        v1l = byte_f(v1, c->byte[0]);
        u1r = byte_f(vshlq_u32(u1, sh), c->byte[0]);
        v1r = byte_f(vshlq_u32(v1, sh), c->byte[0]);
    } else {
        int32x4_t sh = vnegq_s32(vreinterpretq_s32_u32(vshlq_n_u32(odd, 4))); /* 16 if odd */
        uint32x4_t cx2 = vaddq_u32(cx0, cx0);
        uint32x4_t uv0 = gather(c->plane1, vmlaq_n_u32(cx2, cy0, (uint32_t)c->s1), 4);
        uint32x4_t uv1 = gather(c->plane1, vmlaq_n_u32(cx2, cy1, (uint32_t)c->s1), 4);
        uint32x4_t uv0r = vshlq_u32(uv0, sh), uv1r = vshlq_u32(uv1, sh);
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
    float32x4_t Y = lerp2(byte_f(y0, c->byte[0]), byte_f(y0, c->byte[1]), byte_f(y1, c->byte[0]),
                          byte_f(y1, c->byte[1]), ax, ay);
    return yuv_to_rgb(c, Y, lerp2(u0l, u0r, u1l, u1r, ax, ay), lerp2(v0l, v0r, v1l, v1r, ax, ay));
}

ALWAYS_INLINE int all_lanes(uint32x4_t mask) {
    return vminvq_u32(mask) == 0xffffffffu;
}

ALWAYS_INLINE int32x4_t clamp_i32(int32x4_t v, int32_t hi) {
    return vminq_s32(vmaxq_s32(v, vdupq_n_s32(0)), vdupq_n_s32(hi));
}

/* Bilinear RGB of 4 points with taps anywhere: each tap is read at its clamped position (the
 * reference's REPLICATE rule) with reads of exactly the tap's bytes, so it is safe on planes of
 * any size; for ZERO/CONSTANT borders, taps outside the image take the border colour before the
 * blend, as the reference's fetch does. */
__attribute__((noinline)) static vec_rgb sample4_edge(const neon_ctx *c, int32x4_t ix, int32x4_t iy,
                                                      float32x4_t ax, float32x4_t ay) {
    const ks__imgproc *p = c->p;
    const int32x4_t one = vdupq_n_s32(1), minus1 = vdupq_n_s32(-1);
    int32_t w = p->width_px, h = p->height_px;
    if (p->border != KS_BORDER_REPLICATE) {
        /* letterbox padding: all four taps of every lane are outside, and the reference's lerp
         * of four equal border taps gives the border exactly */
        uint32x4_t out = vorrq_u32(vcgtq_s32(minus1, ix), vcgtq_s32(ix, vdupq_n_s32(w - 1)));
        out = vorrq_u32(out, vorrq_u32(vcgtq_s32(minus1, iy), vcgtq_s32(iy, vdupq_n_s32(h - 1))));
        if (all_lanes(out)) {
            vec_rgb b = {vdupq_n_f32(p->border_rgb[0]), vdupq_n_f32(p->border_rgb[1]),
                         vdupq_n_f32(p->border_rgb[2])};
            return b;
        }
    }
    int32x4_t xs[2] = {ix, vaddq_s32(ix, one)}, ys[2] = {iy, vaddq_s32(iy, one)};
    int32x4_t xc[2] = {clamp_i32(xs[0], w - 1), clamp_i32(xs[1], w - 1)};
    int32x4_t yc[2] = {clamp_i32(ys[0], h - 1), clamp_i32(ys[1], h - 1)};
    vec_rgb t[4];
    float32x4_t Yt[4], Ut[4], Vt[4]; /* YUV sources: the taps' samples */
    const int yuv = p->format == KS_PIXEL_FORMAT_NV21 || p->format == KS_PIXEL_FORMAT_NV12 ||
                    p->format == KS_PIXEL_FORMAT_I420;
    for (int k = 0; k < 4; k++) {
        uint32x4_t x = vreinterpretq_u32_s32(xc[k & 1]), y = vreinterpretq_u32_s32(yc[k >> 1]);
        uint32x4_t row = vmulq_n_u32(y, (uint32_t)c->s0);
        switch (p->format) {
        case KS_PIXEL_FORMAT_RGBA:
        case KS_PIXEL_FORMAT_BGRA:
        case KS_PIXEL_FORMAT_RGB:
        case KS_PIXEL_FORMAT_BGR: {
            int four = p->format == KS_PIXEL_FORMAT_RGBA || p->format == KS_PIXEL_FORMAT_BGRA;
            int bgr = p->format == KS_PIXEL_FORMAT_BGRA || p->format == KS_PIXEL_FORMAT_BGR;
            uint32x4_t v = gather(c->plane0, vmlaq_n_u32(row, x, four ? 4u : 3u), four ? 4 : 3);
            t[k].r = byte_f(v, c->byte[bgr ? 2 : 0]);
            t[k].g = byte_f(v, c->byte[1]);
            t[k].b = byte_f(v, c->byte[bgr ? 0 : 2]);
            break;
        }
        case KS_PIXEL_FORMAT_GRAY:
            t[k].r = byte_f(gather(c->plane0, vaddq_u32(row, x), 1), c->byte[0]);
            t[k].g = t[k].b = t[k].r;
            break;
        default: {
            float32x4_t Y = byte_f(gather(c->plane0, vaddq_u32(row, x), 1), c->byte[0]);
            uint32x4_t cx = vshrq_n_u32(x, 1), cy = vshrq_n_u32(y, 1);
            float32x4_t U, V;
            if (p->format == KS_PIXEL_FORMAT_I420) {
                U = byte_f(gather(c->plane1, vmlaq_n_u32(cx, cy, (uint32_t)c->s1), 1), c->byte[0]);
                V = byte_f(gather(c->plane2, vmlaq_n_u32(cx, cy, (uint32_t)c->s2), 1), c->byte[0]);
            } else {
                uint32x4_t uv =
                    gather(c->plane1, vmlaq_n_u32(vaddq_u32(cx, cx), cy, (uint32_t)c->s1), 2);
                U = byte_f(uv, c->u);
                V = byte_f(uv, c->v);
            }
            Yt[k] = Y;
            Ut[k] = U;
            Vt[k] = V;
            break;
        }
        }
        if (yuv) continue;
        if (p->border != KS_BORDER_REPLICATE) {
            /* outside: x or y differs from its clamped value */
            uint32x4_t in =
                vandq_u32(vceqq_s32(xs[k & 1], xc[k & 1]), vceqq_s32(ys[k >> 1], yc[k >> 1]));
            t[k].r = vbslq_f32(in, t[k].r, vdupq_n_f32(p->border_rgb[0]));
            t[k].g = vbslq_f32(in, t[k].g, vdupq_n_f32(p->border_rgb[1]));
            t[k].b = vbslq_f32(in, t[k].b, vdupq_n_f32(p->border_rgb[2]));
        }
    }
    if (yuv) {
        /* The reference blends Y, U, V and converts once, except in lanes where a tap takes a
         * constant border colour: there each tap is converted and the RGB blended. */
        vec_rgb o = yuv_to_rgb(c, lerp2(Yt[0], Yt[1], Yt[2], Yt[3], ax, ay),
                               lerp2(Ut[0], Ut[1], Ut[2], Ut[3], ax, ay),
                               lerp2(Vt[0], Vt[1], Vt[2], Vt[3], ax, ay));
        if (p->border == KS_BORDER_REPLICATE) return o;
        uint32x4_t inside = vandq_u32(vandq_u32(vceqq_s32(xs[0], xc[0]), vceqq_s32(xs[1], xc[1])),
                                      vandq_u32(vceqq_s32(ys[0], yc[0]), vceqq_s32(ys[1], yc[1])));
        if (all_lanes(inside)) return o;
        for (int k = 0; k < 4; k++) {
            t[k] = yuv_to_rgb(c, Yt[k], Ut[k], Vt[k]);
            uint32x4_t in =
                vandq_u32(vceqq_s32(xs[k & 1], xc[k & 1]), vceqq_s32(ys[k >> 1], yc[k >> 1]));
            t[k].r = vbslq_f32(in, t[k].r, vdupq_n_f32(p->border_rgb[0]));
            t[k].g = vbslq_f32(in, t[k].g, vdupq_n_f32(p->border_rgb[1]));
            t[k].b = vbslq_f32(in, t[k].b, vdupq_n_f32(p->border_rgb[2]));
        }
        vec_rgb e = lerp_rgb(t, ax, ay);
        o.r = vbslq_f32(inside, o.r, e.r);
        o.g = vbslq_f32(inside, o.g, e.g);
        o.b = vbslq_f32(inside, o.b, e.b);
        return o;
    }
    return lerp_rgb(t, ax, ay);
}

/* Normalize and store 4 pixels of row y from column x. */
ALWAYS_INLINE void store4(const ks__imgproc *p, const float32x4_t *mean, const float32x4_t *scale,
                          size_t plane_px, int32_t y, int32_t x, const float32x4_t *val) {
    size_t pix = (size_t)y * (size_t)p->out_width_px + (size_t)x;
    int32_t nc = p->out_channels;
    float32x4_t o[3];
    for (int32_t ch = 0; ch < nc; ch++) {
        float32x4_t v = vsubq_f32(val[ch], mean[ch]);
        o[ch] = vmulq_f32(v, scale[ch]);
    }
    int planar = p->nchw || nc == 1;
    if (p->out_u8) {
        uint8x8_t b[3];
        for (int32_t ch = 0; ch < nc; ch++) {
            float32x4_t v = clamp255(o[ch]);
            v = vaddq_f32(v, vdupq_n_f32(0.5f));
            uint16x4_t w16 = vmovn_u32(vreinterpretq_u32_s32(vcvtq_s32_f32(v)));
            b[ch] = vmovn_u16(vcombine_u16(w16, w16));
            if (planar) {
                uint8_t *dst = (uint8_t *)p->out + (size_t)ch * plane_px + pix;
                uint32_t four = vget_lane_u32(vreinterpret_u32_u8(b[ch]), 0);
                memcpy(dst, &four, 4); /* dst may be unaligned */
            }
        }
        if (!planar) {
            uint8_t *dst = (uint8_t *)p->out + pix * 3;
            uint8x8x3_t v3 = {{b[0], b[1], b[2]}};
            vst3_lane_u8(dst, v3, 0);
            vst3_lane_u8(dst + 3, v3, 1);
            vst3_lane_u8(dst + 6, v3, 2);
            vst3_lane_u8(dst + 9, v3, 3);
        }
        return;
    }
    float *out = (float *)p->out;
    if (planar) {
        for (int32_t ch = 0; ch < nc; ch++)
            vst1q_f32(out + (size_t)ch * plane_px + pix, o[ch]);
        return;
    }
    float32x4x3_t v3 = {{o[0], o[1], o[2]}};
    vst3q_f32(out + pix * 3, v3); /* r0 g0 b0 r1 g1 b1 ... */
}

/* The row loop for one source kind; always inlined so that each kind gets its own copy. */
__attribute__((always_inline)) ALWAYS_INLINE void
rows_kind(const neon_ctx *cp, int32_t y_begin, int32_t y_end, const enum sample_kind kind) {
    const neon_ctx c = *cp;
    const ks__imgproc *p = c.p;
    const float *m = p->m;
    const float32x4_t half = vdupq_n_f32(0.5f), lo = vdupq_n_f32(-4.0f);
    const float32x4_t hi_x = vdupq_n_f32((float)p->width_px + 4.0f);
    const float32x4_t hi_y = vdupq_n_f32((float)p->height_px + 4.0f);
    const float32x4_t m0 = vdupq_n_f32(m[0]), m3 = vdupq_n_f32(m[3]);
    static const int32_t k_iota[4] = {0, 1, 2, 3};
    const int32x4_t iota = vld1q_s32(k_iota);
    /* fast region: 0 <= ix <= x_max and 0 <= iy <= h - 2 (unsigned compares fold the >= 0) */
    int32_t x_max = fast_x_max(p), y_max = p->height_px - 2;
    const int fast_possible = x_max >= 0 && y_max >= 0;
    const uint32x4_t x_lim = vdupq_n_u32((uint32_t)(x_max >= 0 ? x_max : 0));
    const uint32x4_t y_lim = vdupq_n_u32((uint32_t)(y_max >= 0 ? y_max : 0));
    float32x4_t mean[3], scale[3];
    for (int ch = 0; ch < 3; ch++) {
        mean[ch] = vdupq_n_f32(p->mean[ch]);
        scale[ch] = vdupq_n_f32(p->scale[ch]);
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
        const float32x4_t bxv = vdupq_n_f32(bx), byv = vdupq_n_f32(by);
        int32_t x = 0;
        for (; x + 4 <= out_w; x += 4) {
            float32x4_t dx = vcvtq_f32_s32(vaddq_s32(vdupq_n_s32(x), iota));
            dx = vaddq_f32(dx, half);
            float32x4_t sx = vmulq_f32(m0, dx);
            sx = vaddq_f32(sx, bxv);
            float32x4_t sy = vmulq_f32(m3, dx);
            sy = vaddq_f32(sy, byv);
            float32x4_t u = vminq_f32(vmaxq_f32(vsubq_f32(sx, half), lo), hi_x);
            float32x4_t v = vminq_f32(vmaxq_f32(vsubq_f32(sy, half), lo), hi_y);
            float32x4_t fu = vrndmq_f32(u), fv = vrndmq_f32(v);
            float32x4_t ax = vsubq_f32(u, fu), ay = vsubq_f32(v, fv);
            int32x4_t ix = vcvtq_s32_f32(fu), iy = vcvtq_s32_f32(fv);
            uint32x4_t ok = vandq_u32(vcleq_u32(vreinterpretq_u32_s32(ix), x_lim),
                                      vcleq_u32(vreinterpretq_u32_s32(iy), y_lim));
            vec_rgb rgb;
            if (fast_possible && all_lanes(ok)) {
                rgb = sample4(&c, kind, ix, iy, ax, ay);
            } else {
                rgb = sample4_edge(cp, ix, iy, ax, ay);
            }
            float32x4_t val[3];
            if (gray_out) {
                if (gray_src) {
                    val[0] = rgb.r;
                } else {
                    float32x4_t l = vmulq_f32(vdupq_n_f32(0.299f), rgb.r);
                    float32x4_t t = vmulq_f32(vdupq_n_f32(0.587f), rgb.g);
                    l = vaddq_f32(l, t);
                    t = vmulq_f32(vdupq_n_f32(0.114f), rgb.b);
                    val[0] = vaddq_f32(l, t);
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

void ks__imgproc_rows_neon(const ks__imgproc *p, int32_t y_begin, int32_t y_end) {
    neon_ctx c;
    memset(&c, 0, sizeof(c));
    c.p = p;
    c.y_offset = vdupq_n_f32(p->y_offset);
    c.y_scale = vdupq_n_f32(p->y_scale);
    c.kr_v = vdupq_n_f32(p->kr_v);
    c.kg_u = vdupq_n_f32(p->kg_u);
    c.kg_v = vdupq_n_f32(p->kg_v);
    c.kb_u = vdupq_n_f32(p->kb_u);
    for (int k = 0; k < 4; k++)
        c.byte[k] = byte_index(k);
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
    default: /* not reached: the caller validated the format */
        for (int32_t y = y_begin; y < y_end; y++)
            ks__imgproc_span_scalar(p, y, 0, p->out_width_px);
        break;
    }
}
