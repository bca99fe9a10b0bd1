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

/* Fused nodes (qgemm.h, ip[12] == 1): the microkernel stages the intermediate bytes of a tile
 * with full 16-byte stores into a stack buffer, then finishes the tile here, reading them back at
 * the stored size (so the loads are forwarded from the stores) with the residual's constants
 * held in registers for the whole tile.
 *
 * Why not in the store itself: the residual math is three requantizations whose ~20 constants
 * would be reloaded at every 16-lane store, and a dword gather for the table is slow (microcoded
 * on AMD); re-reading the just-stored masked output bytes stalls on store forwarding. */

/* y = table[stage] for rows x n bytes with AVX-512 VBMI permutes (two 128-entry halves). */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi"))) static void
fused_table_vbmi(const uint8_t *table, const uint8_t *stage, size_t sstride, uint8_t *dst,
                 size_t dstride, size_t rows, size_t n) {
    const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
    const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
    for (size_t r = 0; r < rows; r++) {
        for (size_t i = 0; i < n; i += 16) {
            __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
            __m512i v =
                _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(stage + r * sstride + i)));
            __m512i lo = _mm512_permutex2var_epi8(t0, v, t1);
            __m512i hi = _mm512_permutex2var_epi8(t2, v, t3);
            __m512i y = _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi);
            _mm_mask_storeu_epi8(dst + r * dstride + i, m, _mm512_castsi512_si128(y));
        }
    }
}

typedef struct vqmul {
    __m512i mult, left, right, mask, half;
} vqmul;

static inline void vqmul_load(const int32_t *q, vqmul *v) {
    v->mult = _mm512_set1_epi32(q[0]);
    v->left = _mm512_set1_epi32(q[1]);
    v->right = _mm512_set1_epi32(q[2]);
    v->mask = _mm512_set1_epi32(q[3]);
    v->half = _mm512_set1_epi32(q[4]);
}

/* ks__quant_mul with one multiplier for every lane (qgemm.h ks__q8_fused vq row). */
KS_INLINE __m512i requant_b(__m512i v, const vqmul *q) {
    const __m512i nudge = _mm512_set1_epi64(1LL << 30);
    v = _mm512_sllv_epi32(v, q->left);
    /* mult is in both halves of each 64-bit lane: the odd products need no shift of it */
    __m512i even = _mm512_add_epi64(_mm512_mul_epi32(v, q->mult), nudge);
    __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(v, 32), q->mult), nudge);
    __m512i high = _mm512_mask_blend_epi32((__mmask16)0xAAAA, _mm512_srli_epi64(even, 31),
                                           _mm512_slli_epi64(odd, 1));
    __m512i rem = _mm512_and_si512(high, q->mask);
    __m512i thr = _mm512_sub_epi32(q->half, _mm512_srai_epi32(high, 31));
    __m512i res = _mm512_srav_epi32(high, q->right);
    __mmask16 up = _mm512_cmpgt_epi32_mask(rem, thr);
    return _mm512_mask_add_epi32(res, up, res, _mm512_set1_epi32(1));
}

/* Finishes rows x n staged intermediate bytes into dst (row stride dstride). */
static void fused_tile(const ks__q8_epilogue *ep, const uint8_t *stage, size_t sstride,
                       uint8_t *dst, size_t dstride, size_t rows, size_t n) {
    const ks__q8_fused *f = ep->fused;
    if (f->kind == KS_Q8_FUSED_TABLE) {
        if (f->vbmi) {
            fused_table_vbmi(f->table, stage, sstride, dst, dstride, rows, n);
            return;
        }
        for (size_t r = 0; r < rows; r++)
            for (size_t i = 0; i < n; i++)
                dst[r * dstride + i] = f->table[stage[r * sstride + i]];
        return;
    }
    vqmul ma, mb, mo;
    vqmul_load(f->vq[0], &ma);
    vqmul_load(f->vq[1], &mb);
    vqmul_load(f->vq[2], &mo);
    const __m128i flip = _mm_set1_epi8((char)f->flip);
    const __m512i za = _mm512_set1_epi32(f->za), zb = _mm512_set1_epi32(f->zb);
    const __m512i zo = _mm512_set1_epi32(f->zo);
    const __m512i lo = _mm512_set1_epi32(f->lo), hi = _mm512_set1_epi32(f->hi);
    const uint8_t *res = ep->res_base + (dst - ep->y_base);
    for (size_t r = 0; r < rows; r++) {
        for (size_t i = 0; i < n; i += 16) {
            __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
            __m128i ba = _mm_loadu_si128((const __m128i *)(stage + r * sstride + i));
            __m128i bb = _mm_maskz_loadu_epi8(m, res + r * dstride + i);
            __m512i va = _mm512_cvtepu8_epi32(_mm_xor_si128(ba, flip));
            __m512i vb = _mm512_cvtepu8_epi32(_mm_xor_si128(bb, flip));
            va = _mm512_slli_epi32(_mm512_sub_epi32(va, za), 20);
            vb = _mm512_slli_epi32(_mm512_sub_epi32(vb, zb), 20);
            __m512i raw = _mm512_add_epi32(requant_b(va, &ma), requant_b(vb, &mb));
            __m512i q = _mm512_add_epi32(requant_b(raw, &mo), zo);
            q = _mm512_min_epi32(_mm512_max_epi32(q, lo), hi);
            _mm_mask_storeu_epi8(dst + r * dstride + i, m, _mm512_cvtepi32_epi8(q));
        }
    }
}

/* Zero point and clamp: the 16 output (or, for fused nodes, intermediate) bytes. */
KS_INLINE __m128i out_bytes(__m512i v, const ks__q8_epilogue *ep) {
    v = _mm512_add_epi32(v, _mm512_set1_epi32(ep->out_zp));
    v = _mm512_max_epi32(v, _mm512_set1_epi32(ep->lo));
    v = _mm512_min_epi32(v, _mm512_set1_epi32(ep->hi));
    return _mm512_cvtepi32_epi8(v);
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
    _Alignas(64) uint8_t stage[(ARCH_MR + 1) * ARCH_NR]; /* fused nodes: the intermediate tile */
    /* Narrow outputs whose tile rows are contiguous (one panel of <= 16 columns) are staged and
     * finished as one span, so the fused pass runs on full vectors. Rows are stored in order and
     * each 16-byte store only overwrites the previous row's garbage lanes. */
    const int packed = ep->fused && nc <= 16 && c_stride == nc;
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
            if (ep->fused)
                _mm_storeu_si128((__m128i *)(stage + (packed ? r * nc : r * ARCH_NR + h * 16)),
                                 out_bytes(v, ep));
            else
                _mm_mask_storeu_epi8((char *)c + (size_t)r * c_stride + h * 16, m,
                                     out_bytes(v, ep));
        }
    }
    if (packed)
        fused_tile(ep, stage, 0, (uint8_t *)c, 0, 1, mr * nc);
    else if (ep->fused)
        fused_tile(ep, stage, ARCH_NR, (uint8_t *)c, c_stride, mr, nc);
}

/* The 16 x 16 variant for outputs with at most 16 channels (first layers, heads, the narrow
 * high-resolution convs of segmentation decoders), where the 8 x 32 tile computes and requantizes
 * at least half padding columns: one weight vector and 16 row broadcasts per 4 k. */
#define N16 16

static void ks_q8_igemm__avx512vnni_16x16(size_t mr, size_t nc, size_t kb, size_t ks,
                                          const void *const *a, const void *w, void *c,
                                          size_t c_stride, const int32_t *rowsum,
                                          const ks__q8_epilogue *ep) {
    __m512i acc[N16];
    KS_UNROLL for (int r = 0; r < N16; r++) acc[r] = _mm512_setzero_si512();
    const int32_t *hdr = (const int32_t *)w;
    const int8_t *wp = (const int8_t *)w + KS_Q8_HDR_ROWS * N16 * 4;
    _Alignas(64) uint8_t stage[(N16 + 1) * N16];    /* fused nodes: the intermediate tile */
    const int packed = ep->fused && c_stride == nc; /* rows contiguous: one span (see 8 x 32) */
    for (size_t t = 0; t < ks; t++) {
        const int32_t *ar[N16];
        KS_UNROLL for (int r = 0; r < N16; r++) ar[r] = (const int32_t *)a[t * N16 + r];
        for (size_t k = 0; k < kb; k++) {
            __m512i w0 = _mm512_loadu_si512(wp);
            wp += 64;
            KS_UNROLL for (int r = 0; r < N16; r++) acc[r] =
                _mm512_dpbusd_epi32(acc[r], _mm512_set1_epi32(ar[r][k]), w0);
        }
    }
    const __mmask16 m = nc >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nc) - 1);
    const __m512i bias = _mm512_loadu_si512(hdr + KS_Q8_HDR_BIAS * N16);
    const __m512i rowmul = _mm512_loadu_si512(hdr + KS_Q8_HDR_ROWMUL * N16);
    KS_UNROLL for (int r = 0; r < N16; r++) {
        if ((size_t)r >= mr) break;
        __m512i v = _mm512_add_epi32(acc[r], bias);
        if (ep->use_rowsum)
            v = _mm512_add_epi32(v, _mm512_mullo_epi32(_mm512_set1_epi32(rowsum[r]), rowmul));
        v = requant(v, hdr, N16);
        if (ep->fused)
            _mm_storeu_si128((__m128i *)(stage + (size_t)r * (packed ? nc : (size_t)N16)),
                             out_bytes(v, ep));
        else
            _mm_mask_storeu_epi8((char *)c + (size_t)r * c_stride, m, out_bytes(v, ep));
    }
    if (packed)
        fused_tile(ep, stage, 0, (uint8_t *)c, 0, 1, mr * nc);
    else if (ep->fused)
        fused_tile(ep, stage, N16, (uint8_t *)c, c_stride, mr, nc);
}

/* x * w summed over the taps, with x the raw codes (sign- or zero-extended) and the zero point
 * folded into the starting value: one vpdpwssd per tap and 16 channels. */
KS_INLINE __m512i dw_load(const uint8_t *p, __mmask16 m, int full, int is_i8) {
    __m128i b = full ? _mm_loadu_si128((const __m128i *)p) : _mm_maskz_loadu_epi8(m, p);
    return is_i8 ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
}

/* One block of 16 channels of one pixel: its 16 output bytes (lanes >= n are garbage). */
KS_INLINE __m128i dw_block(size_t c0, size_t n, size_t ks, const void *const *in,
                           const int32_t *hdr, const ks__q8_epilogue *ep, int is_i8) {
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
    return out_bytes(requant(_mm512_add_epi32(acc0, acc1), hdr, DW_CB), ep);
}

enum { DW_STAGE = 256, DW_ROW_STAGE = 64 }; /* fused nodes: channels / pixels staged at once */

/* The packed int32 weight words hold (w - w_zp) in their low 16 bits and 0 above, so vpdpwssd's
 * upper 16-bit product is 0 whatever the sign extension of x left there. */
static void ks_q8_dw__avx512vnni_c16(size_t channels, size_t ks, const void *const *in,
                                     const void *w, void *out, int32_t in_flip, int32_t in_zp,
                                     const ks__q8_epilogue *ep) {
    const size_t block_ints = (KS_Q8_HDR_ROWS + ks) * DW_CB;
    const int32_t *hdr = (const int32_t *)w;
    _Alignas(64) uint8_t stage[DW_STAGE]; /* fused nodes: up to 256 intermediate channels */
    (void)in_zp;
    for (size_t c0 = 0; c0 < channels; c0 += DW_CB, hdr += block_ints) {
        size_t n = channels - c0 < DW_CB ? channels - c0 : DW_CB;
        __m128i b =
            in_flip ? dw_block(c0, n, ks, in, hdr, ep, 1) : dw_block(c0, n, ks, in, hdr, ep, 0);
        if (!ep->fused) {
            _mm_mask_storeu_epi8((char *)out + c0, (__mmask16)((1u << n) - 1), b);
            continue;
        }
        size_t s0 = c0 % DW_STAGE; /* DW_STAGE is a multiple of the block */
        _mm_storeu_si128((__m128i *)(stage + s0), b);
        if (s0 + DW_CB == DW_STAGE || c0 + n == channels)
            fused_tile(ep, stage, 0, (uint8_t *)out + (c0 - s0), 0, 1, s0 + n);
    }
}

KS_INLINE void dw_row_body(size_t channels, size_t ks, const void *const *in, const size_t *steps,
                           size_t count, const int32_t *hdr, void *out, const ks__q8_epilogue *ep,
                           int is_i8) {
    const __mmask16 m = (__mmask16)((1u << channels) - 1);
    const int full = channels == DW_CB;
    const int32_t *wp = hdr + KS_Q8_HDR_ROWS * DW_CB;
    const __m512i start = _mm512_loadu_si512(hdr + KS_Q8_HDR_ROWMUL * DW_CB);
    /* fused nodes: the pixels' bytes, each 16-byte store overwriting only the previous pixel's
     * garbage lanes (stores in increasing order) */
    _Alignas(64) uint8_t stage[DW_ROW_STAGE * DW_CB + DW_CB];
    for (size_t i = 0; i < count; i++) {
        __m512i acc0 = start, acc1 = _mm512_setzero_si512();
        size_t t = 0;
        for (; t + 2 <= ks; t += 2) {
            __m512i x0 = dw_load((const uint8_t *)in[t] + i * steps[t], m, full, is_i8);
            __m512i x1 = dw_load((const uint8_t *)in[t + 1] + i * steps[t + 1], m, full, is_i8);
            acc0 = _mm512_dpwssd_epi32(acc0, x0, _mm512_loadu_si512(wp + t * DW_CB));
            acc1 = _mm512_dpwssd_epi32(acc1, x1, _mm512_loadu_si512(wp + (t + 1) * DW_CB));
        }
        if (t < ks) {
            __m512i x0 = dw_load((const uint8_t *)in[t] + i * steps[t], m, full, is_i8);
            acc0 = _mm512_dpwssd_epi32(acc0, x0, _mm512_loadu_si512(wp + t * DW_CB));
        }
        __m128i b = out_bytes(requant(_mm512_add_epi32(acc0, acc1), hdr, DW_CB), ep);
        if (!ep->fused) {
            _mm_mask_storeu_epi8((char *)out + i * channels, m, b);
            continue;
        }
        size_t k = i % DW_ROW_STAGE;
        _mm_storeu_si128((__m128i *)(stage + k * channels), b);
        if (k + 1 == DW_ROW_STAGE || i + 1 == count)
            fused_tile(ep, stage, 0, (uint8_t *)out + (i - k) * channels, 0, 1, (k + 1) * channels);
    }
}

/* A run of interior pixels of a conv with at most 16 channels (qgemm.h ks__q8_dw_row_fn). */
static void ks_q8_dwrow__avx512vnni_c16(size_t channels, size_t ks, const void *const *in,
                                        const size_t *steps, size_t count, const void *w, void *out,
                                        int32_t in_flip, const ks__q8_epilogue *ep) {
    if (in_flip)
        dw_row_body(channels, ks, in, steps, count, (const int32_t *)w, out, ep, 1);
    else
        dw_row_body(channels, ks, in, steps, count, (const int32_t *)w, out, ep, 0);
}

/* Fused nodes are finished inside the microkernels (fused_tile): no driver pass. */
static const ks__q8_gemm_arch k_gemm = {
    ARCH_MR, ARCH_NR, 4, 64.0, ks_q8_igemm__avx512vnni_8x32, ks__q8_fused_apply_scalar, 1};
static const ks__q8_dw_arch k_dw = {DW_CB,
                                    8.0,
                                    ks_q8_dw__avx512vnni_c16,
                                    ks__q8_fused_apply_scalar,
                                    1,
                                    ks_q8_dwrow__avx512vnni_c16};

static const ks__q8_gemm_arch k_gemm16 = {
    N16, N16, 4, 64.0, ks_q8_igemm__avx512vnni_16x16, ks__q8_fused_apply_scalar, 1};

/* Only for outputs of at most 16 channels (elsewhere the 8 x 32 tile loads less per product). */
static double gemm16_cost(const ks__kernel_ctx *ctx) {
    const ks__rt_tensor *y = ctx->num_outputs == 1 ? ctx->out[0] : NULL;
    if (!y || y->rank < 1 || y->dims[y->rank - 1] > N16) return -1.0;
    return ks__q8_gemm_cost(ctx, &k_gemm16);
}
static ks_status gemm16_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__q8_gemm_plan(ctx, &k_gemm16, packed_bytes_out);
}
static ks_status gemm16_pack(ks__kernel_ctx *ctx) {
    return ks__q8_gemm_pack(ctx, &k_gemm16);
}
static ks_status gemm16_run(ks__kernel_ctx *ctx) {
    return ks__q8_gemm_run(ctx, &k_gemm16);
}

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
const ks__impl ks_q8_conv2d__avx512vnni_16x16 = {"ks_q8_conv2d__avx512vnni_16x16",
                                                 KS_OP_CONV2D,
                                                 KS_ISA_AVX512 | KS_ISA_AVX512_VNNI,
                                                 gemm16_cost,
                                                 gemm16_plan,
                                                 gemm16_pack,
                                                 gemm16_run};
const ks__impl ks_q8_fc__avx512vnni_16x16 = {"ks_q8_fc__avx512vnni_16x16",
                                             KS_OP_FULLY_CONNECTED,
                                             KS_ISA_AVX512 | KS_ISA_AVX512_VNNI,
                                             gemm16_cost,
                                             gemm16_plan,
                                             gemm16_pack,
                                             gemm16_run};
