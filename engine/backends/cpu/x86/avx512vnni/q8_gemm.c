/* Quantized microkernels for AVX-512 VNNI (qgemm.h): the u8 x s8 indirect GEMM (8 x 32 tiles,
 * vpdpbusd) behind quantized CONV2D and FULLY_CONNECTED, and the 16-channel depthwise kernel.
 *
 * Why 8 x 32: 32 columns are two zmm accumulators per row; 8 rows give 16 independent
 * vpdpbusd chains (enough to hide its latency on two ports) and the A bytes are broadcast as
 * {1to16} memory operands, so the k loop is 2 weight loads + 16 dot products per 4 k.
 * vpdpbusd (not vpdpbusds) wraps like the reference's exact sum modulo 2^32; cost() has already
 * ruled out sums that leave int32.
 *
 * The requantization is TFLite's MultiplyByQuantizedMultiplier, vectorized exactly: the rounding
 * doubling high multiply round(x * m / 2^31) with gemmlowp's nudge equals floor((x * m + 2^30) /
 * 2^31) for both signs (the negative nudge 1 - 2^30 with truncation toward zero lands on the
 * same integer), so it is a 64-bit add and shift; the rounding right shift rounds half away from
 * zero via the (mask >> 1) + (x < 0) threshold.
 */
#include <immintrin.h>

#include "../../qgemm.h"

#define ARCH_MR 8
#define ARCH_NR 32
#define DW_CB 16

#if defined(__clang__)
#define KS_UNROLL _Pragma("unroll")
#else
#define KS_UNROLL _Pragma("GCC unroll 16")
#endif
#define KS_INLINE static inline __attribute__((always_inline))

KS_INLINE __m512i requant(__m512i v, const int32_t *hdr, size_t stride) {
    __m512i mult = _mm512_loadu_si512(hdr + KS_Q8_HDR_MULT * stride);
    __m512i lsh = _mm512_loadu_si512(hdr + KS_Q8_HDR_LSHIFT * stride);
    __m512i rsh = _mm512_loadu_si512(hdr + KS_Q8_HDR_RSHIFT * stride);
    __m512i mask = _mm512_loadu_si512(hdr + KS_Q8_HDR_RMASK * stride);
    const __m512i nudge = _mm512_set1_epi64(1LL << 30);
    v = _mm512_sllv_epi32(v, lsh);
    __m512i even = _mm512_add_epi64(_mm512_mul_epi32(v, mult), nudge);
    __m512i odd = _mm512_add_epi64(
        _mm512_mul_epi32(_mm512_srli_epi64(v, 32), _mm512_srli_epi64(mult, 32)), nudge);
    /* Bits 31..62 of each 64-bit sum: the even ones shifted down, the odd ones moved up. */
    __m512i high = _mm512_mask_blend_epi32((__mmask16)0xAAAA, _mm512_srli_epi64(even, 31),
                                           _mm512_slli_epi64(odd, 1));
    __m512i rem = _mm512_and_si512(high, mask);
    __m512i thr = _mm512_sub_epi32(_mm512_srli_epi32(mask, 1), _mm512_srai_epi32(high, 31));
    __m512i res = _mm512_srav_epi32(high, rsh);
    __mmask16 up = _mm512_cmpgt_epi32_mask(rem, thr);
    return _mm512_mask_add_epi32(res, up, res, _mm512_set1_epi32(1));
}

KS_INLINE void store_out(void *dst, __m512i v, const ks__q8_epilogue *ep, __mmask16 m) {
    v = _mm512_add_epi32(v, _mm512_set1_epi32(ep->out_zp));
    v = _mm512_max_epi32(v, _mm512_set1_epi32(ep->lo));
    v = _mm512_min_epi32(v, _mm512_set1_epi32(ep->hi));
    _mm_mask_storeu_epi8(dst, m, _mm512_cvtepi32_epi8(v));
}

static void ks_q8_igemm__avx512vnni_8x32(size_t mr, size_t nc, size_t kb, size_t ks,
                                         const void *const *a, const void *w, void *c,
                                         size_t c_stride, const int32_t *rowsum,
                                         const ks__q8_epilogue *ep) {
    __m512i acc[ARCH_MR][2];
    KS_UNROLL for (int r = 0; r < ARCH_MR; r++) {
        acc[r][0] = _mm512_setzero_si512();
        acc[r][1] = _mm512_setzero_si512();
    }
    const int32_t *hdr = (const int32_t *)w;
    const int8_t *wp = (const int8_t *)w + KS_Q8_HDR_ROWS * ARCH_NR * 4;
    for (size_t t = 0; t < ks; t++) {
        const int32_t *ar[ARCH_MR];
        KS_UNROLL for (int r = 0; r < ARCH_MR; r++) ar[r] = (const int32_t *)a[t * ARCH_MR + r];
        for (size_t k = 0; k < kb; k++) {
            __m512i w0 = _mm512_loadu_si512(wp);
            __m512i w1 = _mm512_loadu_si512(wp + 64);
            wp += 128;
            KS_UNROLL for (int r = 0; r < ARCH_MR; r++) {
                __m512i b = _mm512_set1_epi32(ar[r][k]);
                acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], b, w0);
                acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], b, w1);
            }
        }
    }
    __mmask64 ncm = nc >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << nc) - 1);
    __mmask16 m0 = (__mmask16)ncm, m1 = (__mmask16)(ncm >> 16);
    for (size_t h = 0; h < 2; h++) {
        const int32_t *hh = hdr + h * 16;
        __m512i bias = _mm512_loadu_si512(hh + KS_Q8_HDR_BIAS * ARCH_NR);
        __m512i rowmul = _mm512_loadu_si512(hh + KS_Q8_HDR_ROWMUL * ARCH_NR);
        __mmask16 m = h == 0 ? m0 : m1;
        if (!m) break;
        KS_UNROLL for (int r = 0; r < ARCH_MR; r++) {
            if ((size_t)r >= mr) break;
            __m512i v = _mm512_add_epi32(acc[r][h], bias);
            if (ep->use_rowsum)
                v = _mm512_add_epi32(v, _mm512_mullo_epi32(_mm512_set1_epi32(rowsum[r]), rowmul));
            v = requant(v, hh, ARCH_NR);
            store_out((char *)c + (size_t)r * c_stride + h * 16, v, ep, m);
        }
    }
}

/* x * w summed over the taps, with x the raw codes (sign- or zero-extended) and the zero point
 * folded into the starting value: one vpdpwssd per tap and 16 channels. */
KS_INLINE __m512i dw_load(const uint8_t *p, __mmask16 m, int full, int is_i8) {
    __m128i b = full ? _mm_loadu_si128((const __m128i *)p) : _mm_maskz_loadu_epi8(m, p);
    return is_i8 ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
}

KS_INLINE void dw_block(size_t c0, size_t n, size_t ks, const void *const *in, const int32_t *hdr,
                        void *out, const ks__q8_epilogue *ep, int is_i8) {
    __mmask16 m = (__mmask16)((1u << n) - 1);
    const int full = n == DW_CB;
    const int32_t *wp = hdr + KS_Q8_HDR_ROWS * DW_CB;
    __m512i acc0 = _mm512_loadu_si512(hdr + KS_Q8_HDR_ROWMUL * DW_CB);
    __m512i acc1 = _mm512_setzero_si512();
    size_t t = 0;
    for (; t + 2 <= ks; t += 2) {
        __m512i x0 = dw_load((const uint8_t *)in[t] + c0, m, full, is_i8);
        __m512i x1 = dw_load((const uint8_t *)in[t + 1] + c0, m, full, is_i8);
        acc0 = _mm512_dpwssd_epi32(acc0, x0, _mm512_loadu_si512(wp));
        acc1 = _mm512_dpwssd_epi32(acc1, x1, _mm512_loadu_si512(wp + DW_CB));
        wp += 2 * DW_CB;
    }
    if (t < ks) {
        __m512i x0 = dw_load((const uint8_t *)in[t] + c0, m, full, is_i8);
        acc0 = _mm512_dpwssd_epi32(acc0, x0, _mm512_loadu_si512(wp));
    }
    __m512i v = requant(_mm512_add_epi32(acc0, acc1), hdr, DW_CB);
    store_out((char *)out + c0, v, ep, m);
}

/* The packed int32 weight words hold (w - w_zp) in their low 16 bits and 0 above, so vpdpwssd's
 * upper 16-bit product is 0 whatever the sign extension of x left there. */
static void ks_q8_dw__avx512vnni_c16(size_t channels, size_t ks, const void *const *in,
                                     const void *w, void *out, int32_t in_flip, int32_t in_zp,
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

static const ks__q8_gemm_arch k_gemm = {ARCH_MR, ARCH_NR, 4, 64.0, ks_q8_igemm__avx512vnni_8x32};
static const ks__q8_dw_arch k_dw = {DW_CB, 8.0, ks_q8_dw__avx512vnni_c16};

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

const ks__impl ks_q8_conv2d__avx512vnni_8x32 = {"ks_q8_conv2d__avx512vnni_8x32",
                                                KS_OP_CONV2D,
                                                KS_ISA_AVX512 | KS_ISA_AVX512_VNNI,
                                                gemm_cost,
                                                gemm_plan,
                                                gemm_pack,
                                                gemm_run};
const ks__impl ks_q8_fc__avx512vnni_8x32 = {"ks_q8_fc__avx512vnni_8x32",
                                            KS_OP_FULLY_CONNECTED,
                                            KS_ISA_AVX512 | KS_ISA_AVX512_VNNI,
                                            gemm_cost,
                                            gemm_plan,
                                            gemm_pack,
                                            gemm_run};
const ks__impl ks_q8_dwconv__avx512vnni_c16 = {"ks_q8_dwconv__avx512vnni_c16",
                                               KS_OP_CONV2D,
                                               KS_ISA_AVX512 | KS_ISA_AVX512_VNNI,
                                               dw_cost,
                                               dw_plan,
                                               dw_pack,
                                               dw_run};
