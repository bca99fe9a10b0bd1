/* Quantized microkernels for AVX2 (qgemm.h): the int16 indirect GEMM (6 x 16 tiles, vpmaddwd)
 * behind quantized CONV2D and FULLY_CONNECTED, and the 8-channel depthwise kernel.
 *
 * Why int16 and not vpmaddubsw: maddubs adds two u8 x s8 products into a saturating int16, and
 * 2 * 255 * 127 overflows it, which would break bit-exactness with the reference. The driver
 * converts the input once to (x - x_zp) as int16 and packs (w - w_zp) as int16, so vpmaddwd
 * computes exact 32-bit pair sums and no zero-point correction is needed afterwards.
 * 6 x 16: 12 ymm accumulators + 2 weight vectors + 1 broadcast = 15 of the 16 registers.
 *
 * The requantization is TFLite's MultiplyByQuantizedMultiplier, vectorized exactly (see the
 * AVX-512 VNNI file for the derivation of the floor((x * m + 2^30) / 2^31) form).
 */
#include <immintrin.h>
#include <string.h>

#include "../../qgemm.h"

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

/* The reference quantized ADD (ks__q8_fused_add_one) 8 lanes at a time; tables and the last
 * n % 8 bytes go through the scalar epilogue. */
static void fused_apply(const ks__q8_fused *f, uint8_t *y, const uint8_t *res, size_t n) {
    size_t i = 0;
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
        for (; i + 8 <= n; i += 8) {
            __m128i ba = _mm_xor_si128(_mm_loadl_epi64((const __m128i *)(y + i)), flip);
            __m128i bb = _mm_xor_si128(_mm_loadl_epi64((const __m128i *)(res + i)), flip);
            __m256i va = _mm256_slli_epi32(_mm256_sub_epi32(_mm256_cvtepu8_epi32(ba), za), 20);
            __m256i vb = _mm256_slli_epi32(_mm256_sub_epi32(_mm256_cvtepu8_epi32(bb), zb), 20);
            __m256i raw = _mm256_add_epi32(requant_b(va, &ma), requant_b(vb, &mb));
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

static const ks__q8_gemm_arch k_gemm = {ARCH_MR,     ARCH_NR, 2, 16.0, ks_q8_igemm__avx2_6x16,
                                        fused_apply, 0};
static const ks__q8_dw_arch k_dw = {DW_CB, 4.0, ks_q8_dw__avx2_c8, fused_apply, 0, NULL};

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
