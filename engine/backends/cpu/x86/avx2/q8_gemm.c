/* Quantized microkernels for AVX2 (qgemm.h): the u8 x s8 indirect GEMM (4 x 16 tiles,
 * vpmaddubsw, below) and the int16 one (6 x 16 tiles, vpmaddwd) behind quantized CONV2D and
 * FULLY_CONNECTED, and the 8-channel per-pixel depthwise kernel.
 *
 * vpmaddubsw adds two u8 x s8 products into a saturating int16, and 2 * 255 * 127 overflows it,
 * which would break bit-exactness with the reference. The maddubs kernel therefore moves the
 * activation's sign onto the weight (|a| <= 128 times w * sign(a), |w| <= 127: pairs <= 32512)
 * and takes only nodes whose w - w_zp fit [-127, 127] (ks-quant's symmetric int8 weights do).
 * The int16 kernel takes the rest: the driver converts the input once to (x - x_zp) as int16 and
 * packs (w - w_zp) as int16, so vpmaddwd computes exact 32-bit pair sums and no zero-point
 * correction is needed afterwards. 6 x 16: 12 ymm accumulators + 2 weight vectors + 1
 * broadcast = 15 of the 16 registers.
 *
 * The requantization is TFLite's MultiplyByQuantizedMultiplier, vectorized exactly (see the
 * AVX-512 VNNI file for the derivation of the floor((x * m + 2^30) / 2^31) form).
 */
#include <immintrin.h>
#include <string.h>

#include "../../qgemm.h"
#include "q8_rescale.h"
#include "q8_table.h"

#define ARCH_MR 6
#define ARCH_NR 16
#define DW_CB 8

#if defined(__clang__)
#define KS_UNROLL _Pragma("unroll")
#else
#define KS_UNROLL _Pragma("GCC unroll 16")
#endif
#define KS_INLINE static inline __attribute__((always_inline))

KS_INLINE __m256i requant(__m256i v, const int32_t *hdr, size_t stride) {
    __m256i mult = _mm256_loadu_si256((const __m256i *)(hdr + KS_Q8_HDR_MULT * stride));
    __m256i lsh = _mm256_loadu_si256((const __m256i *)(hdr + KS_Q8_HDR_LSHIFT * stride));
    __m256i rsh = _mm256_loadu_si256((const __m256i *)(hdr + KS_Q8_HDR_RSHIFT * stride));
    __m256i mask = _mm256_loadu_si256((const __m256i *)(hdr + KS_Q8_HDR_RMASK * stride));
    const __m256i nudge = _mm256_set1_epi64x(1LL << 30);
    v = _mm256_sllv_epi32(v, lsh);
    __m256i even = _mm256_add_epi64(_mm256_mul_epi32(v, mult), nudge);
    __m256i odd = _mm256_add_epi64(
        _mm256_mul_epi32(_mm256_srli_epi64(v, 32), _mm256_srli_epi64(mult, 32)), nudge);
    __m256i high = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
    __m256i rem = _mm256_and_si256(high, mask);
    __m256i thr = _mm256_sub_epi32(_mm256_srli_epi32(mask, 1), _mm256_srai_epi32(high, 31));
    __m256i res = _mm256_srav_epi32(high, rsh);
    return _mm256_sub_epi32(res, _mm256_cmpgt_epi32(rem, thr));
}

/* Adds the zero point, clamps and stores the low byte of n (<= 8) lanes. */
KS_INLINE void store_out(void *dst, __m256i v, const ks__q8_epilogue *ep, size_t n) {
    v = _mm256_add_epi32(v, _mm256_set1_epi32(ep->out_zp));
    v = _mm256_max_epi32(v, _mm256_set1_epi32(ep->lo));
    v = _mm256_min_epi32(v, _mm256_set1_epi32(ep->hi));
    v = _mm256_and_si256(v, _mm256_set1_epi32(0xFF));
    __m128i w16 = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    __m128i b = _mm_packus_epi16(w16, w16);
    if (n == 8) {
        _mm_storel_epi64((__m128i *)dst, b);
    } else {
        uint8_t tmp[16];
        _mm_storeu_si128((__m128i *)tmp, b);
        memcpy(dst, tmp, n);
    }
}

static void ks_q8_igemm__avx2_6x16(size_t mr, size_t nc, size_t kb, size_t ks, const void *const *a,
                                   const void *w, void *c, size_t c_stride, const int32_t *rowsum,
                                   const ks__q8_epilogue *ep) {
    (void)rowsum; /* the int16 path folds zero points into A and W */
    __m256i acc[ARCH_MR][2];
    KS_UNROLL for (int r = 0; r < ARCH_MR; r++) {
        acc[r][0] = _mm256_setzero_si256();
        acc[r][1] = _mm256_setzero_si256();
    }
    const int32_t *hdr = (const int32_t *)w;
    const char *wp = (const char *)w + KS_Q8_HDR_ROWS * ARCH_NR * 4;
    for (size_t t = 0; t < ks; t++) {
        const int32_t *ar[ARCH_MR];
        KS_UNROLL for (int r = 0; r < ARCH_MR; r++) ar[r] = (const int32_t *)a[t * ARCH_MR + r];
        for (size_t k = 0; k < kb; k++) {
            __m256i w0 = _mm256_loadu_si256((const __m256i *)wp);
            __m256i w1 = _mm256_loadu_si256((const __m256i *)(wp + 32));
            wp += 64;
            KS_UNROLL for (int r = 0; r < ARCH_MR; r++) {
                __m256i b = _mm256_set1_epi32(ar[r][k]);
                acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(b, w0));
                acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(b, w1));
            }
        }
    }
    for (size_t h = 0; h < 2; h++) {
        if (nc <= h * 8) break;
        size_t n = nc - h * 8 < 8 ? nc - h * 8 : 8;
        const int32_t *hh = hdr + h * 8;
        __m256i bias = _mm256_loadu_si256((const __m256i *)(hh + KS_Q8_HDR_BIAS * ARCH_NR));
        KS_UNROLL for (int r = 0; r < ARCH_MR; r++) {
            if ((size_t)r >= mr) break;
            __m256i v = requant(_mm256_add_epi32(acc[r][h], bias), hh, ARCH_NR);
            store_out((char *)c + (size_t)r * c_stride + h * 8, v, ep, n);
        }
    }
}

/* ---- the u8 x s8 GEMM (vpmaddubsw), signed A (qgemm.h) ----
 * A holds x as s8 and W holds w - w_zp in [-127, 127]. vpmaddubsw multiplies u8 by s8 and adds
 * each pair into a saturating int16, so the kernel moves a's sign onto the weights first:
 * a * w = |a| * (w * sign(a)), with |a| <= 128 (vpabsb of -128 is 0x80, 128 as u8) and
 * |w * sign(a)| <= 127 (vpsignb cannot overflow: w is never -128). A pair is then at most
 * 2 * 128 * 127 = 32512 < 2^15: never saturated, every product and sum exact, bit-identical to
 * the reference. vpmaddwd with ones widens the pair sums into int32 lanes of four products.
 * Per 4 k and 8 columns: vpsignb, vpmaddubsw, vpmaddwd, vpaddd (32 MACs); vpabsb per row.
 * 4 x 16: 8 accumulators, the two weight vectors, the broadcast, its absolute value, ones and a
 * temporary (14 of the 16 registers). 6 x 16 (12 accumulators) spills a row and reloads the
 * weights, and measured 3-4 % slower on Zen 1.
 *
 * The epilogue requantizes a row pair's four vectors (constants loaded once per tile, not per
 * row) and narrows them with one saturating pack sequence to 32 bytes: row r in the low 128
 * bits, row r + 1 in the high. */
#define MB_MR 4
#define MB_NR 16

typedef struct rqc {
    __m256i mult, mult_odd, lsh, rsh, mask, half;
    int has_lsh;
} rqc;

KS_INLINE void rqc_load(rqc *q, const int32_t *hdr, size_t stride) {
    q->mult = _mm256_loadu_si256((const __m256i *)(hdr + KS_Q8_HDR_MULT * stride));
    q->mult_odd = _mm256_srli_epi64(q->mult, 32);
    q->lsh = _mm256_loadu_si256((const __m256i *)(hdr + KS_Q8_HDR_LSHIFT * stride));
    q->rsh = _mm256_loadu_si256((const __m256i *)(hdr + KS_Q8_HDR_RSHIFT * stride));
    q->mask = _mm256_loadu_si256((const __m256i *)(hdr + KS_Q8_HDR_RMASK * stride));
    q->half = _mm256_srli_epi32(q->mask, 1);
    q->has_lsh = !_mm256_testz_si256(q->lsh, q->lsh);
}

/* requant() with the constants in registers. no_sign (the clamp's low end is at or above the
 * output zero point, e.g. ReLU): a negative h rounds to a value <= 0, which the clamp lifts to
 * its low end whichever way it rounded, so the half-away-from-zero correction is left out. */
KS_INLINE __m256i rqc_apply(__m256i v, const rqc *q, int no_sign) {
    const __m256i nudge = _mm256_set1_epi64x(1LL << 30);
    if (q->has_lsh) v = _mm256_sllv_epi32(v, q->lsh);
    __m256i even = _mm256_add_epi64(_mm256_mul_epi32(v, q->mult), nudge);
    __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(v, 32), q->mult_odd), nudge);
    __m256i high = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
    __m256i rem = _mm256_and_si256(high, q->mask);
    __m256i thr = no_sign ? q->half : _mm256_sub_epi32(q->half, _mm256_srai_epi32(high, 31));
    __m256i res = _mm256_srav_epi32(high, q->rsh);
    return _mm256_sub_epi32(res, _mm256_cmpgt_epi32(rem, thr));
}

/* Four requantized vectors (a, b: row r's columns 0-7 and 8-15; c, d: row r + 1's) to 32 bytes:
 * the zero point, the dtype's saturation and the activation clamp. Saturating to int16 first is
 * exact: a value outside int16 stays outside the byte range after + zp. The packs interleave
 * 4-lane groups; one dword permute restores the order. */
KS_INLINE __m256i pack4_avx2(__m256i a, __m256i b, __m256i c, __m256i d,
                             const ks__q8_epilogue *ep) {
    const __m256i zp = _mm256_set1_epi16((int16_t)ep->out_zp);
    __m256i ab = _mm256_adds_epi16(_mm256_packs_epi32(a, b), zp);
    __m256i cd = _mm256_adds_epi16(_mm256_packs_epi32(c, d), zp);
    __m256i y;
    if (ep->out_signed) {
        y = _mm256_packs_epi16(ab, cd);
        y = _mm256_max_epi8(y, _mm256_set1_epi8((char)ep->lo));
        y = _mm256_min_epi8(y, _mm256_set1_epi8((char)ep->hi));
    } else {
        y = _mm256_packus_epi16(ab, cd);
        y = _mm256_max_epu8(y, _mm256_set1_epi8((char)ep->lo));
        y = _mm256_min_epu8(y, _mm256_set1_epi8((char)ep->hi));
    }
    return _mm256_permutevar8x32_epi32(y, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* The first n (1..16) bytes of v; 8-byte halves stored whole (narrow layers have 8 channels). */
KS_INLINE void store16(void *dst, __m128i v, size_t n) {
    if (n == 16) {
        _mm_storeu_si128((__m128i *)dst, v);
        return;
    }
    if (n >= 8) {
        _mm_storel_epi64((__m128i *)dst, v);
        dst = (char *)dst + 8, n -= 8;
        v = _mm_srli_si128(v, 8);
    }
    if (n == 0) return;
    uint8_t tmp[16];
    _mm_storeu_si128((__m128i *)tmp, v);
    memcpy(dst, tmp, n);
}

static void fused_apply(const ks__q8_fused *f, uint8_t *y, const uint8_t *res, size_t n);

/* A fused residual ADD over the tile's stored rows while they are in L1 (kernels that take the
 * fused node themselves, arch fused_in_kernel: the TABLE runs in registers, this in place). */
static void fused_residual_rows(const ks__q8_epilogue *ep, void *c, size_t c_stride, size_t mr,
                                size_t nc) {
    if (c_stride == nc) { /* narrow outputs: the tile's rows are contiguous */
        fused_apply(ep->fused, (uint8_t *)c, ep->res_base + ((uint8_t *)c - ep->y_base), mr * nc);
        return;
    }
    for (size_t r = 0; r < mr; r++) {
        uint8_t *y = (uint8_t *)c + r * c_stride;
        fused_apply(ep->fused, y, ep->res_base + (y - ep->y_base), nc);
    }
}

/* acc[r] += the tile's dot products for rows r < rows (a constant after inlining). */
KS_INLINE void mb_dot(__m256i (*acc)[2], const int rows, size_t kb, size_t ks, const void *const *a,
                      const int8_t *wp) {
    const __m256i ones = _mm256_set1_epi16(1);
    for (size_t t = 0; t < ks; t++) {
        const int32_t *ar[MB_MR];
        KS_UNROLL for (int r = 0; r < rows; r++) ar[r] = (const int32_t *)a[t * MB_MR + r];
        for (size_t k = 0; k < kb; k++) {
            const __m256i *w0 = (const __m256i *)wp, *w1 = (const __m256i *)(wp + 32);
            wp += 64;
            KS_UNROLL for (int r = 0; r < rows; r++) {
                __m256i x = _mm256_set1_epi32(ar[r][k]);
                __m256i ax = _mm256_abs_epi8(x);
                __m256i p0 = _mm256_maddubs_epi16(ax, _mm256_sign_epi8(_mm256_loadu_si256(w0), x));
                acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(p0, ones));
                __m256i p1 = _mm256_maddubs_epi16(ax, _mm256_sign_epi8(_mm256_loadu_si256(w1), x));
                acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(p1, ones));
            }
        }
    }
}

/* Requantizes and stores rows r < mr (<= max_rows, even), columns c < nc of a 16-column tile,
 * with a fused TABLE in registers or a fused residual over the stored rows. */
KS_INLINE void mb_store(__m256i (*acc)[2], const int max_rows, size_t mr, size_t nc,
                        const int32_t *hdr, void *c, size_t c_stride, const ks__q8_epilogue *ep,
                        int no_sign) {
    rqc q0, q1;
    rqc_load(&q0, hdr, MB_NR);
    rqc_load(&q1, hdr + 8, MB_NR);
    const int two = nc > 8; /* the second half has columns to store */
    const uint8_t *tab =
        ep->fused && ep->fused->kind == KS_Q8_FUSED_TABLE ? ep->fused->tscope : NULL;
    KS_UNROLL for (int r = 0; r < max_rows; r += 2) {
        if ((size_t)r >= mr) break;
        __m256i a0 = rqc_apply(acc[r][0], &q0, no_sign);
        __m256i b0 = rqc_apply(acc[r + 1][0], &q0, no_sign);
        __m256i a1 = two ? rqc_apply(acc[r][1], &q1, no_sign) : a0;
        __m256i b1 = two ? rqc_apply(acc[r + 1][1], &q1, no_sign) : b0;
        __m256i y = pack4_avx2(a0, a1, b0, b1, ep);
        if (tab) y = table32(y, tab);
        char *cr = (char *)c + (size_t)r * c_stride;
        store16(cr, _mm256_castsi256_si128(y), nc);
        if ((size_t)r + 1 < mr) store16(cr + c_stride, _mm256_extracti128_si256(y, 1), nc);
    }
    if (ep->fused && ep->fused->kind == KS_Q8_FUSED_RESIDUAL)
        fused_residual_rows(ep, c, c_stride, mr, nc);
}

static void ks_q8_igemm__avx2_maddubs_4x16(size_t mr, size_t nc, size_t kb, size_t ks,
                                           const void *const *a, const void *w, void *c,
                                           size_t c_stride, const int32_t *rowsum,
                                           const ks__q8_epilogue *ep) {
    (void)rowsum; /* signed A folds the zero points into the column terms */
    const int32_t *hdr = (const int32_t *)w;
    const int8_t *wp = (const int8_t *)w + KS_Q8_HDR_ROWS * MB_NR * 4;
    /* the accumulators start at the column terms (bias with the zero points folded in) */
    const __m256i bias0 = _mm256_loadu_si256((const __m256i *)(hdr + KS_Q8_HDR_BIAS * MB_NR));
    const __m256i bias1 = _mm256_loadu_si256((const __m256i *)(hdr + KS_Q8_HDR_BIAS * MB_NR + 8));
    __m256i acc[MB_MR][2];
    KS_UNROLL for (int r = 0; r < MB_MR; r++) {
        acc[r][0] = bias0;
        acc[r][1] = bias1;
    }
    /* short tiles (small images, FULLY_CONNECTED) skip the dot products of repeated rows */
    if (mr > 2)
        mb_dot(acc, MB_MR, kb, ks, a, wp);
    else
        mb_dot(acc, 2, kb, ks, a, wp);
    if (ep->lo >= ep->out_zp)
        mb_store(acc, MB_MR, mr, nc, hdr, c, c_stride, ep, 1);
    else
        mb_store(acc, MB_MR, mr, nc, hdr, c, c_stride, ep, 0);
}

/* ---- the u8 x s8 GEMM with AVX-VNNI (vpdpbusd on ymm: Intel Alder Lake and later client
 * cores, AMD Zen 5) ----
 * The AVX-512 VNNI scheme (qgemm.h, KR == 4 with u8 A) in 32-byte vectors: A = x as u8 (I8
 * inputs flipped by the driver's input pass), W = w as s8, zero points folded into the column
 * terms (plus rowsum * rowmul when some w_zp' != 0, which ks-quant's symmetric weights never
 * have). One vpdpbusd per 4 k and 8 columns: no sign transfer, and the sum is exact (it wraps
 * like the reference's modulo 2^32 sum, which cost() keeps inside int32). 6 x 16: 12
 * accumulators, 2 weight vectors and the broadcast = 15 registers; per 4 k 2 weight loads, 6
 * broadcasts and 12 dot products, so the two vpdpbusd pipes of Zen 5 (or ports 0 and 1 of Intel
 * cores) stay busy. The epilogue is the maddubs kernel's (mb_store). */
#define VN_MR 6
#define VN_NR 16
#define KS_VNNI __attribute__((target("avx2,fma,avxvnni")))
#define KS_INLINE_VNNI static inline __attribute__((always_inline, target("avx2,fma,avxvnni")))

KS_INLINE_VNNI void vn_dot(__m256i (*acc)[2], const int rows, size_t kb, size_t ks,
                           const void *const *a, const int8_t *wp) {
    for (size_t t = 0; t < ks; t++) {
        const int32_t *ar[VN_MR];
        KS_UNROLL for (int r = 0; r < rows; r++) ar[r] = (const int32_t *)a[t * VN_MR + r];
        for (size_t k = 0; k < kb; k++) {
            __m256i w0 = _mm256_loadu_si256((const __m256i *)wp);
            __m256i w1 = _mm256_loadu_si256((const __m256i *)(wp + 32));
            wp += 64;
            KS_UNROLL for (int r = 0; r < rows; r++) {
                __m256i x = _mm256_set1_epi32(ar[r][k]);
                acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], x, w0);
                acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], x, w1);
            }
        }
    }
}

KS_VNNI static void ks_q8_igemm__avxvnni_6x16(size_t mr, size_t nc, size_t kb, size_t ks,
                                              const void *const *a, const void *w, void *c,
                                              size_t c_stride, const int32_t *rowsum,
                                              const ks__q8_epilogue *ep) {
    const int32_t *hdr = (const int32_t *)w;
    const int8_t *wp = (const int8_t *)w + KS_Q8_HDR_ROWS * VN_NR * 4;
    const __m256i bias0 = _mm256_loadu_si256((const __m256i *)(hdr + KS_Q8_HDR_BIAS * VN_NR));
    const __m256i bias1 = _mm256_loadu_si256((const __m256i *)(hdr + KS_Q8_HDR_BIAS * VN_NR + 8));
    __m256i acc[VN_MR][2];
    KS_UNROLL for (int r = 0; r < VN_MR; r++) {
        acc[r][0] = bias0;
        acc[r][1] = bias1;
    }
    if (mr > 4)
        vn_dot(acc, VN_MR, kb, ks, a, wp);
    else if (mr > 2)
        vn_dot(acc, 4, kb, ks, a, wp);
    else
        vn_dot(acc, 2, kb, ks, a, wp);
    if (ep->use_rowsum) {
        const __m256i m0 = _mm256_loadu_si256((const __m256i *)(hdr + KS_Q8_HDR_ROWMUL * VN_NR));
        const __m256i m1 =
            _mm256_loadu_si256((const __m256i *)(hdr + KS_Q8_HDR_ROWMUL * VN_NR + 8));
        for (size_t r = 0; r < mr; r++) {
            __m256i s = _mm256_set1_epi32(rowsum[r]);
            acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_mullo_epi32(s, m0));
            acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_mullo_epi32(s, m1));
        }
    }
    if (ep->lo >= ep->out_zp)
        mb_store(acc, VN_MR, mr, nc, hdr, c, c_stride, ep, 1);
    else
        mb_store(acc, VN_MR, mr, nc, hdr, c, c_stride, ep, 0);
}

/* 8 input bytes of channels [c0, c0 + n) of one pixel, flipped to u8 and widened to int32. */
/* 8 raw input codes, sign- (I8) or zero-extended (U8) to int32; the zero point is folded into
 * the starting value (the ROWMUL header row, qgemm.c), padding taps read x_zp. */
KS_INLINE __m256i load_x(const uint8_t *p, size_t n, int is_i8) {
    __m128i b;
    if (n == DW_CB) {
        b = _mm_loadl_epi64((const __m128i *)p);
    } else {
        uint8_t tmp[16] = {0};
        memcpy(tmp, p, n);
        b = _mm_loadl_epi64((const __m128i *)tmp);
    }
    return is_i8 ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
}

/* The packed int32 weight words hold (w - w_zp) in their low 16 bits and 0 above, so vpmaddwd's
 * upper 16-bit product is 0 whatever the sign extension of x left there. */
KS_INLINE void dw_block(size_t c0, size_t n, size_t ks, const void *const *in, const int32_t *hdr,
                        void *out, const ks__q8_epilogue *ep, int is_i8) {
    const int32_t *wp = hdr + KS_Q8_HDR_ROWS * DW_CB;
    __m256i acc0 = _mm256_loadu_si256((const __m256i *)(hdr + KS_Q8_HDR_ROWMUL * DW_CB));
    __m256i acc1 = _mm256_setzero_si256();
    size_t t = 0;
    for (; t + 2 <= ks; t += 2) {
        __m256i x0 = load_x((const uint8_t *)in[t] + c0, n, is_i8);
        __m256i x1 = load_x((const uint8_t *)in[t + 1] + c0, n, is_i8);
        acc0 =
            _mm256_add_epi32(acc0, _mm256_madd_epi16(x0, _mm256_loadu_si256((const __m256i *)wp)));
        acc1 = _mm256_add_epi32(
            acc1, _mm256_madd_epi16(x1, _mm256_loadu_si256((const __m256i *)(wp + DW_CB))));
        wp += 2 * DW_CB;
    }
    if (t < ks) {
        __m256i x0 = load_x((const uint8_t *)in[t] + c0, n, is_i8);
        acc0 =
            _mm256_add_epi32(acc0, _mm256_madd_epi16(x0, _mm256_loadu_si256((const __m256i *)wp)));
    }
    __m256i v = requant(_mm256_add_epi32(acc0, acc1), hdr, DW_CB);
    store_out((char *)out + c0, v, ep, n);
}

static void ks_q8_dw__avx2_c8(size_t channels, size_t ks, const void *const *in, const void *w,
                              void *out, int32_t in_flip, int32_t in_zp,
                              const ks__q8_epilogue *ep) {
    const size_t block_ints = (KS_Q8_HDR_ROWS + ks) * DW_CB;
    const int32_t *hdr = (const int32_t *)w;
    (void)in_zp;
    for (size_t c0 = 0; c0 < channels; c0 += DW_CB, hdr += block_ints) {
        size_t n = channels - c0 < DW_CB ? channels - c0 : DW_CB;
        if (in_flip)
            dw_block(c0, n, ks, in, hdr, out, ep, 1);
        else
            dw_block(c0, n, ks, in, hdr, out, ep, 0);
    }
}

/* ---- fused nodes (qgemm.h): the driver's pass over each finished tile / pixel ----
 * The stores above are plain 8-byte stores, so the pass's 8-byte loads are forwarded from them. */

typedef struct vqmul {
    __m256i mult, left, right, mask, half;
} vqmul;

static void vqmul_load(const int32_t *q, vqmul *v) {
    v->mult = _mm256_set1_epi32(q[0]);
    v->left = _mm256_set1_epi32(q[1]);
    v->right = _mm256_set1_epi32(q[2]);
    v->mask = _mm256_set1_epi32(q[3]);
    v->half = _mm256_set1_epi32(q[4]);
}

/* ks__quant_mul with one multiplier for every lane (qgemm.h ks__q8_fused vq row). */
KS_INLINE __m256i requant_b(__m256i v, const vqmul *q) {
    const __m256i nudge = _mm256_set1_epi64x(1LL << 30);
    v = _mm256_sllv_epi32(v, q->left);
    /* mult is in both halves of each 64-bit lane: the odd products need no shift of it */
    __m256i even = _mm256_add_epi64(_mm256_mul_epi32(v, q->mult), nudge);
    __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(v, 32), q->mult), nudge);
    __m256i high = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
    __m256i rem = _mm256_and_si256(high, q->mask);
    __m256i thr = _mm256_sub_epi32(q->half, _mm256_srai_epi32(high, 31));
    __m256i res = _mm256_srav_epi32(high, q->right);
    return _mm256_sub_epi32(res, _mm256_cmpgt_epi32(rem, thr));
}

/* The reference quantized ADD (ks__q8_fused_add_one) 8 lanes at a time, the TABLE 16 bytes at a
 * time; the last bytes go through the scalar epilogue. */
static void fused_apply(const ks__q8_fused *f, uint8_t *y, const uint8_t *res, size_t n) {
    size_t i = 0;
    if (f->kind == KS_Q8_FUSED_TABLE) {
        for (; i + 16 <= n; i += 16)
            _mm_storeu_si128((__m128i *)(y + i),
                             table16(_mm_loadu_si128((const __m128i *)(y + i)), f->tscope));
        if (i + 8 <= n) {
            _mm_storel_epi64((__m128i *)(y + i),
                             table16(_mm_loadl_epi64((const __m128i *)(y + i)), f->tscope));
            i += 8;
        }
    }
    if (f->kind == KS_Q8_FUSED_RESIDUAL && n >= 8) {
        vqmul ma, mb, mo;
        vqmul_load(f->vq[0], &ma);
        vqmul_load(f->vq[1], &mb);
        vqmul_load(f->vq[2], &mo);
        const __m128i flip = _mm_set1_epi8((char)f->flip);
        const __m256i za = _mm256_set1_epi32(f->za), zb = _mm256_set1_epi32(f->zb);
        const __m256i zo = _mm256_set1_epi32(f->zo);
        const __m256i lo = _mm256_set1_epi32(f->lo), hi = _mm256_set1_epi32(f->hi);
        const __m256i byte = _mm256_set1_epi32(0xFF);
        /* the inputs' rescales in 32 bits (q8_rescale.h) unless one shifts left */
        const int narrow = f->vq[0][1] == 0 && f->vq[1][1] == 0;
        const ks__q8_rescale ra = ks__q8_rescale_make(f->vq[0][0], f->vq[0][2]);
        const ks__q8_rescale rb = ks__q8_rescale_make(f->vq[1][0], f->vq[1][2]);
        for (; i + 8 <= n; i += 8) {
            __m128i ba = _mm_xor_si128(_mm_loadl_epi64((const __m128i *)(y + i)), flip);
            __m128i bb = _mm_xor_si128(_mm_loadl_epi64((const __m128i *)(res + i)), flip);
            __m256i va = _mm256_sub_epi32(_mm256_cvtepu8_epi32(ba), za);
            __m256i vb = _mm256_sub_epi32(_mm256_cvtepu8_epi32(bb), zb);
            __m256i raw;
            if (narrow)
                raw =
                    _mm256_add_epi32(ks__q8_rescale_apply(va, &ra), ks__q8_rescale_apply(vb, &rb));
            else
                raw = _mm256_add_epi32(requant_b(_mm256_slli_epi32(va, 20), &ma),
                                       requant_b(_mm256_slli_epi32(vb, 20), &mb));
            __m256i q = _mm256_add_epi32(requant_b(raw, &mo), zo);
            q = _mm256_and_si256(_mm256_min_epi32(_mm256_max_epi32(q, lo), hi), byte);
            __m128i w16 =
                _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
            _mm_storel_epi64((__m128i *)(y + i), _mm_packus_epi16(w16, w16));
        }
    }
    if (i < n) ks__q8_fused_apply_scalar(f, y + i, res ? res + i : NULL, n - i);
}

void ks__q8_xor_bytes__avx2(const uint8_t *src, uint8_t *dst, size_t n, uint8_t mask) {
    const __m256i m = _mm256_set1_epi8((char)mask);
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(src + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(src + i + 32));
        __m256i c = _mm256_loadu_si256((const __m256i *)(src + i + 64));
        __m256i d = _mm256_loadu_si256((const __m256i *)(src + i + 96));
        _mm256_storeu_si256((__m256i *)(dst + i), _mm256_xor_si256(a, m));
        _mm256_storeu_si256((__m256i *)(dst + i + 32), _mm256_xor_si256(b, m));
        _mm256_storeu_si256((__m256i *)(dst + i + 64), _mm256_xor_si256(c, m));
        _mm256_storeu_si256((__m256i *)(dst + i + 96), _mm256_xor_si256(d, m));
    }
    for (; i + 32 <= n; i += 32)
        _mm256_storeu_si256((__m256i *)(dst + i),
                            _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(src + i)), m));
    for (; i < n; i++)
        dst[i] = (uint8_t)(src[i] ^ mask);
}

/* MACs per cost-model cycle (docs/kernels.md: cycles at the f32 FMA peak, 16 MACs per cycle for
 * AVX2), from times against the f32 6x16 GEMM and dwconv on Zen 1 (ks-kbench-style timing of the
 * YOLOX-nano 1x1 and 3x3 shapes, minimum of 21 runs): the int16 GEMM ran at 0.85 of the f32
 * kernel's MAC rate, the maddubs one at 0.90 (both are bound by the one vector-integer multiply
 * pipe: vpmaddwd / vpmaddubsw take 2 cycles per ymm there, where the two FMA pipes do one ymm
 * FMA per cycle), and the per-pixel depthwise kernel at half the f32 dwconv's. So the maddubs
 * kernel wins where it applies, and the row-wise depthwise one (q8_dwconv.c) over the per-pixel
 * one everywhere. */
static const ks__q8_gemm_arch k_gemm = {ARCH_MR,     ARCH_NR, 2, 13.5, ks_q8_igemm__avx2_6x16,
                                        fused_apply, 0};
static const ks__q8_dw_arch k_dw = {DW_CB, 2.2, ks_q8_dw__avx2_c8, fused_apply, 0, NULL};
static const ks__q8_gemm_arch k_gemm_mb = {
    MB_MR, MB_NR, 4, 14.5, ks_q8_igemm__avx2_maddubs_4x16, fused_apply, 1};
/* Measured on Zen 5 (1 thread, KS_ISA_MAX=avxvnni) against the f32 6x16 GEMM: docs/kernels.md. */
static const ks__q8_gemm_arch k_gemm_vn = {VN_MR,       VN_NR, 4, 40.0, ks_q8_igemm__avxvnni_6x16,
                                           fused_apply, 1};

static double gemm_cost(const ks__kernel_ctx *ctx) {
    return ks__q8_gemm_cost(ctx, &k_gemm);
}
static ks_status gemm_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__q8_gemm_plan(ctx, &k_gemm, packed_bytes_out);
}
static ks_status gemm_pack(ks__kernel_ctx *ctx) {
    return ks__q8_gemm_pack(ctx, &k_gemm);
}
static ks_status gemm_run(ks__kernel_ctx *ctx) {
    return ks__q8_gemm_run(ctx, &k_gemm);
}
static double gemm_mb_cost(const ks__kernel_ctx *ctx) {
    return ks__q8_gemm_cost_sa(ctx, &k_gemm_mb);
}
static ks_status gemm_mb_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__q8_gemm_plan(ctx, &k_gemm_mb, packed_bytes_out);
}
static ks_status gemm_mb_pack(ks__kernel_ctx *ctx) {
    return ks__q8_gemm_pack_sa(ctx, &k_gemm_mb);
}
static ks_status gemm_mb_run(ks__kernel_ctx *ctx) {
    return ks__q8_gemm_run_sa(ctx, &k_gemm_mb);
}
static double gemm_vn_cost(const ks__kernel_ctx *ctx) {
    return ks__q8_gemm_cost(ctx, &k_gemm_vn);
}
static ks_status gemm_vn_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__q8_gemm_plan(ctx, &k_gemm_vn, packed_bytes_out);
}
static ks_status gemm_vn_pack(ks__kernel_ctx *ctx) {
    return ks__q8_gemm_pack(ctx, &k_gemm_vn);
}
static ks_status gemm_vn_run(ks__kernel_ctx *ctx) {
    return ks__q8_gemm_run(ctx, &k_gemm_vn);
}
static double dw_cost(const ks__kernel_ctx *ctx) {
    return ks__q8_dw_cost(ctx, &k_dw);
}
static ks_status dw_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__q8_dw_plan(ctx, &k_dw, packed_bytes_out);
}
static ks_status dw_pack(ks__kernel_ctx *ctx) {
    return ks__q8_dw_pack(ctx, &k_dw);
}
static ks_status dw_run(ks__kernel_ctx *ctx) {
    return ks__q8_dw_run(ctx, &k_dw);
}

const ks__impl ks_q8_conv2d__avx2_6x16 = {"ks_q8_conv2d__avx2_6x16",
                                          KS_OP_CONV2D,
                                          KS_ISA_AVX2,
                                          gemm_cost,
                                          gemm_plan,
                                          gemm_pack,
                                          gemm_run};
const ks__impl ks_q8_fc__avx2_6x16 = {"ks_q8_fc__avx2_6x16",
                                      KS_OP_FULLY_CONNECTED,
                                      KS_ISA_AVX2,
                                      gemm_cost,
                                      gemm_plan,
                                      gemm_pack,
                                      gemm_run};
const ks__impl ks_q8_dwconv__avx2_c8 = {
    "ks_q8_dwconv__avx2_c8", KS_OP_CONV2D, KS_ISA_AVX2, dw_cost, dw_plan, dw_pack, dw_run};
const ks__impl ks_q8_conv2d__avx2_maddubs_4x16 = {"ks_q8_conv2d__avx2_maddubs_4x16",
                                                  KS_OP_CONV2D,
                                                  KS_ISA_AVX2,
                                                  gemm_mb_cost,
                                                  gemm_mb_plan,
                                                  gemm_mb_pack,
                                                  gemm_mb_run};
const ks__impl ks_q8_fc__avx2_maddubs_4x16 = {"ks_q8_fc__avx2_maddubs_4x16",
                                              KS_OP_FULLY_CONNECTED,
                                              KS_ISA_AVX2,
                                              gemm_mb_cost,
                                              gemm_mb_plan,
                                              gemm_mb_pack,
                                              gemm_mb_run};
const ks__impl ks_q8_conv2d__avxvnni_6x16 = {"ks_q8_conv2d__avxvnni_6x16",
                                             KS_OP_CONV2D,
                                             KS_ISA_AVX2 | KS_ISA_AVX_VNNI,
                                             gemm_vn_cost,
                                             gemm_vn_plan,
                                             gemm_vn_pack,
                                             gemm_vn_run};
const ks__impl ks_q8_fc__avxvnni_6x16 = {"ks_q8_fc__avxvnni_6x16",
                                         KS_OP_FULLY_CONNECTED,
                                         KS_ISA_AVX2 | KS_ISA_AVX_VNNI,
                                         gemm_vn_cost,
                                         gemm_vn_plan,
                                         gemm_vn_pack,
                                         gemm_vn_run};
