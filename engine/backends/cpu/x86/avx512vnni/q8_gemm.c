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
 * zero via the (mask >> 1) + (x < 0) threshold (requant(), the depthwise kernels).
 *
 * The GEMM epilogues merge the two roundings into one (qgemm.h KS_Q8_EXT_*: a 64-bit product,
 * add, sign-masked correction and arithmetic shift per 8 lanes), start the accumulators at the
 * column terms, and narrow four requantized vectors with one saturating pack sequence (rq64,
 * pack4): with small k (1x1 convs of 16..64 channels) the epilogue, not the dot products, is most
 * of the work. Fused epilogues run on the tile in registers: the residual ADD from the int32
 * lanes (resid16), the TABLE lookup with VBMI permutes on the packed bytes (table_rows_vbmi);
 * without VBMI the tile is staged and finished by fused_tile.
 */
#include <immintrin.h>

#include "../../q8_lut.h"
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

/* 64 bytes holding `rows` (<= 8) tile rows of 8 bytes, in order, to output rows of nc <= 8
 * bytes. */
KS_INLINE void store_rows8(__m512i y, char *c, size_t c_stride, size_t rows, size_t nc) {
    if (c_stride == 8 && nc == 8) { /* the rows are contiguous in the output too */
        _mm512_mask_storeu_epi8(c, rows >= 8 ? ~(__mmask64)0 : ((__mmask64)1 << (rows * 8)) - 1, y);
        return;
    }
    _Alignas(64) uint8_t buf[64];
    _mm512_store_si512(buf, y);
    const __mmask16 m = (__mmask16)((1u << nc) - 1);
    for (size_t i = 0; i < rows; i++)
        _mm_mask_storeu_epi8(c + i * c_stride, m, _mm_loadl_epi64((const __m128i *)(buf + 8 * i)));
}

/* The GEMM kernels' TABLE epilogue: nv vectors of packed intermediate bytes, each holding rpv
 * (2, 4 or 8) tile rows of 64 / rpv bytes, looked up and stored as rows r < mr, columns < nc. One
 * call per tile (the kernels themselves are built without VBMI), with the 64-byte vectors passed
 * through full stores that the loads here forward from. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi"), noinline)) static void
table_rows_vbmi(const uint8_t *table, const __m512i *v, size_t nv, size_t rpv, char *c,
                size_t c_stride, size_t mr, size_t nc) {
    const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
    const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
    const __mmask32 m = nc >= 32 ? ~(__mmask32)0 : (__mmask32)((1u << nc) - 1);
    for (size_t i = 0; i < nv; i++) {
        __m512i x = _mm512_load_si512(v + i);
        __m512i lo = _mm512_permutex2var_epi8(t0, x, t1);
        __m512i hi = _mm512_permutex2var_epi8(t2, x, t3);
        __m512i y = _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), lo, hi);
        size_t r = i * rpv;
        char *cr = c + r * c_stride;
        if (rpv == 8) {
            store_rows8(y, cr, c_stride, mr - r < 8 ? mr - r : 8, nc);
            continue;
        }
        if (rpv == 2) {
            _mm256_mask_storeu_epi8(cr, m, _mm512_castsi512_si256(y));
            if (r + 1 < mr)
                _mm256_mask_storeu_epi8(cr + c_stride, m, _mm512_extracti64x4_epi64(y, 1));
            continue;
        }
        const __mmask16 m16 = (__mmask16)m;
        _mm_mask_storeu_epi8(cr, m16, _mm512_castsi512_si128(y));
        if (r + 1 < mr) _mm_mask_storeu_epi8(cr + c_stride, m16, _mm512_extracti32x4_epi32(y, 1));
        if (r + 2 < mr)
            _mm_mask_storeu_epi8(cr + 2 * c_stride, m16, _mm512_extracti32x4_epi32(y, 2));
        if (r + 3 < mr)
            _mm_mask_storeu_epi8(cr + 3 * c_stride, m16, _mm512_extracti32x4_epi32(y, 3));
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
        ks__q8_map_rows_avx2(f->table, f->tscope, stage, sstride, dst, dstride, n, rows);
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

/* ks__quant_mul of 16 lanes with the panel's 64-bit rows (qgemm.h KS_Q8_EXT_*): per 8 lanes
 * one 64-bit product, add, sign-masked correction and shift, in place of the two roundings. */
typedef struct rq64 {
    const int32_t *mult, *lsh; /* the half's 16 columns in the HDR rows */
    const int64_t *ext;        /* the half's 8 qwords in the first EXT row */
    size_t ext_stride;         /* qwords between EXT rows (NR / 2) */
    int has_lsh;               /* some column has a left shift */
    /* The sign correction only changes results of negative accumulators, which are <= 0; when
     * the clamp's low end is at or above the zero point (ReLU-like), all of those end up there. */
    int corr;
} rq64;

KS_INLINE void rq64_init(rq64 *q, const int32_t *hdr, const int64_t *ext, size_t nr, size_t h,
                         const ks__q8_epilogue *ep) {
    q->corr = ep->lo < ep->out_zp;
    q->mult = hdr + KS_Q8_HDR_MULT * nr + h * 16;
    q->lsh = hdr + KS_Q8_HDR_LSHIFT * nr + h * 16;
    q->ext = ext + h * 8;
    q->ext_stride = nr / 2;
    __m512i l = _mm512_loadu_si512(q->lsh);
    q->has_lsh = _mm512_test_epi32_mask(l, l) != 0;
}

KS_INLINE __m512i rq64_apply(__m512i v, const rq64 *q) {
    const int64_t *e = q->ext;
    const size_t st = q->ext_stride;
    if (q->has_lsh) v = _mm512_sllv_epi32(v, _mm512_loadu_si512(q->lsh));
    __m512i pe = _mm512_mul_epi32(v, _mm512_loadu_si512(q->mult));
    __m512i po =
        _mm512_mul_epi32(_mm512_srli_epi64(v, 32), _mm512_loadu_si512(e + KS_Q8_EXT_MULT_O * st));
    __mmask8 ne = _mm512_movepi64_mask(pe), no = _mm512_movepi64_mask(po);
    pe = _mm512_add_epi64(pe, _mm512_loadu_si512(e + KS_Q8_EXT_RND_E * st));
    po = _mm512_add_epi64(po, _mm512_loadu_si512(e + KS_Q8_EXT_RND_O * st));
    if (q->corr) {
        pe = _mm512_mask_sub_epi64(pe, ne, pe, _mm512_loadu_si512(e + KS_Q8_EXT_CORR_E * st));
        po = _mm512_mask_sub_epi64(po, no, po, _mm512_loadu_si512(e + KS_Q8_EXT_CORR_O * st));
    }
    pe = _mm512_srav_epi64(pe, _mm512_loadu_si512(e + KS_Q8_EXT_SH_E * st));
    po = _mm512_srav_epi64(po, _mm512_loadu_si512(e + KS_Q8_EXT_SH_O * st));
    /* the results are the low dwords of the qwords: even lanes from pe, odd ones from po */
    const __m512i idx = _mm512_set_epi32(30, 14, 28, 12, 26, 10, 24, 8, 22, 6, 20, 4, 18, 2, 16, 0);
    return _mm512_permutex2var_epi32(pe, idx, po);
}

/* Four requantized int32 vectors (a, b, c, d) to 64 bytes: zero point, dtype saturation and
 * activation clamp, with a's 16 bytes in the first 128-bit lane, b's in the second, and so on.
 * The saturating packs interleave 4-lane groups; one dword permute restores the order. Saturating
 * to int16 first is exact: a value outside int16 stays outside the byte range after + zp. */
KS_INLINE __m512i pack4z(__m512i a, __m512i b, __m512i c, __m512i d, int32_t out_zp, int32_t lo,
                         int32_t hi, int32_t out_signed) {
    const __m512i zp = _mm512_set1_epi16((int16_t)out_zp);
    __m512i ab = _mm512_adds_epi16(_mm512_packs_epi32(a, b), zp);
    __m512i cd = _mm512_adds_epi16(_mm512_packs_epi32(c, d), zp);
    __m512i y;
    if (out_signed) {
        y = _mm512_packs_epi16(ab, cd);
        y = _mm512_max_epi8(y, _mm512_set1_epi8((char)lo));
        y = _mm512_min_epi8(y, _mm512_set1_epi8((char)hi));
    } else {
        y = _mm512_packus_epi16(ab, cd);
        y = _mm512_max_epu8(y, _mm512_set1_epi8((char)lo));
        y = _mm512_min_epu8(y, _mm512_set1_epi8((char)hi));
    }
    const __m512i order = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
    return _mm512_permutexvar_epi32(order, y);
}

KS_INLINE __m512i pack4(__m512i a, __m512i b, __m512i c, __m512i d, const ks__q8_epilogue *ep) {
    return pack4z(a, b, c, d, ep->out_zp, ep->lo, ep->hi, ep->out_signed);
}

/* The fused residual ADD in registers (qgemm.h ks__q8_fused), from the requantized int32 lanes
 * of the intermediate: its bytes are clamp(v + zp) and never stored. Each of the ADD's three
 * ks__quant_mul uses the single-rounding 64-bit form of the GEMM panels (qgemm.h KS_Q8_EXT_*)
 * with one multiplier for every lane. */
typedef struct rqu {
    __m512i mult, rnd, corr;
    __m128i left, sh;
    int has_left;
    int has_corr; /* right shift > 0 and the result is not clamped at or above its zero point */
} rqu;

typedef struct resid_ctx {
    rqu a, b, o;
    __m512i iz, ilo, ihi; /* intermediate zero point and dtype range */
    __m512i da, db;       /* offsets to (x - z) in the flipped domain: off - za, off - zb */
    int32_t is_i8;
} resid_ctx;

static inline void rqu_init(rqu *u, const int32_t *vq, int relu_like) {
    int64_t right = vq[2];
    u->has_corr = right != 0 && !relu_like;
    u->mult = _mm512_set1_epi32(vq[0]);
    u->rnd = _mm512_set1_epi64((1LL << 30) + (right ? (int64_t)1 << (30 + right) : 0));
    u->corr = _mm512_set1_epi64(right ? (1LL << 31) : 0);
    u->left = _mm_cvtsi32_si128(vq[1]);
    u->sh = _mm_cvtsi32_si128((int)(31 + right));
    u->has_left = vq[1] != 0;
}

static inline void resid_init(resid_ctx *rc, const ks__q8_epilogue *ep) {
    const ks__q8_fused *f = ep->fused;
    rqu_init(&rc->a, f->vq[0], 0);
    rqu_init(&rc->b, f->vq[1], 0);
    rqu_init(&rc->o, f->vq[2], f->lo >= f->zo); /* see rq64's corr */
    int32_t off = f->flip ? 128 : 0;
    rc->iz = _mm512_set1_epi32(ep->out_zp);
    rc->ilo = _mm512_set1_epi32(ep->lo);
    rc->ihi = _mm512_set1_epi32(ep->hi);
    rc->da = _mm512_set1_epi32(off - f->za);
    rc->db = _mm512_set1_epi32(off - f->zb);
    rc->is_i8 = f->flip != 0;
}

KS_INLINE __m512i rqu_apply(__m512i v, const rqu *u) {
    if (u->has_left) v = _mm512_sll_epi32(v, u->left);
    __m512i pe = _mm512_mul_epi32(v, u->mult);
    __m512i po = _mm512_mul_epi32(_mm512_srli_epi64(v, 32), u->mult);
    __mmask8 ne = _mm512_movepi64_mask(pe), no = _mm512_movepi64_mask(po);
    pe = _mm512_add_epi64(pe, u->rnd);
    po = _mm512_add_epi64(po, u->rnd);
    if (u->has_corr) {
        pe = _mm512_mask_sub_epi64(pe, ne, pe, u->corr);
        po = _mm512_mask_sub_epi64(po, no, po, u->corr);
    }
    pe = _mm512_sra_epi64(pe, u->sh);
    po = _mm512_sra_epi64(po, u->sh);
    const __m512i idx = _mm512_set_epi32(30, 14, 28, 12, 26, 10, 24, 8, 22, 6, 20, 4, 18, 2, 16, 0);
    return _mm512_permutex2var_epi32(pe, idx, po);
}

/* The ADD's output before its zero point (pack4z adds it and clamps) for 16 lanes: v is the
 * intermediate's requantized value, res the residual bytes (lanes outside m not read). */
KS_INLINE __m512i resid16v(__m512i v, __m128i rb, const resid_ctx *rc) {
    __m512i a = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(v, rc->iz), rc->ilo), rc->ihi);
    __m512i b = rc->is_i8 ? _mm512_cvtepi8_epi32(rb) : _mm512_cvtepu8_epi32(rb);
    __m512i va = _mm512_slli_epi32(_mm512_add_epi32(a, rc->da), 20);
    __m512i vb = _mm512_slli_epi32(_mm512_add_epi32(b, rc->db), 20);
    __m512i raw = _mm512_add_epi32(rqu_apply(va, &rc->a), rqu_apply(vb, &rc->b));
    return rqu_apply(raw, &rc->o);
}

KS_INLINE __m512i resid16(__m512i v, const uint8_t *res, __mmask16 m, const resid_ctx *rc) {
    return resid16v(v, _mm_maskz_loadu_epi8(m, res), rc);
}

KS_INLINE const int64_t *ext_rows(const void *w, size_t nr, size_t kb, size_t ks) {
    return (const int64_t *)((const char *)w + KS_Q8_HDR_ROWS * nr * 4 + ks * kb * nr * 4);
}

/* acc[r] += the tile's dot products for rows r < rows (a constant after inlining). */
KS_INLINE void dot_8x32(__m512i (*acc)[2], const int rows, size_t kb, size_t ks,
                        const void *const *a, const int8_t *wp) {
    for (size_t t = 0; t < ks; t++) {
        const int32_t *ar[ARCH_MR];
        KS_UNROLL for (int r = 0; r < rows; r++) ar[r] = (const int32_t *)a[t * ARCH_MR + r];
        for (size_t k = 0; k < kb; k++) {
            __m512i w0 = _mm512_loadu_si512(wp);
            __m512i w1 = _mm512_loadu_si512(wp + 64);
            wp += 128;
            KS_UNROLL for (int r = 0; r < rows; r++) {
                __m512i b = _mm512_set1_epi32(ar[r][k]);
                acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], b, w0);
                acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], b, w1);
            }
        }
    }
}

static void ks_q8_igemm__avx512vnni_8x32(size_t mr, size_t nc, size_t kb, size_t ks,
                                         const void *const *a, const void *w, void *c,
                                         size_t c_stride, const int32_t *rowsum,
                                         const ks__q8_epilogue *ep) {
    const int32_t *hdr = (const int32_t *)w;
    const int8_t *wp = (const int8_t *)w + KS_Q8_HDR_ROWS * ARCH_NR * 4;
    /* the accumulators start at the column terms (bias with the zero points folded in) */
    const __m512i bias0 = _mm512_loadu_si512(hdr + KS_Q8_HDR_BIAS * ARCH_NR);
    const __m512i bias1 = _mm512_loadu_si512(hdr + KS_Q8_HDR_BIAS * ARCH_NR + 16);
    __m512i acc[ARCH_MR][2];
    KS_UNROLL for (int r = 0; r < ARCH_MR; r++) {
        acc[r][0] = bias0;
        acc[r][1] = bias1;
    }
    _Alignas(64) uint8_t stage[(ARCH_MR + 1) * ARCH_NR]; /* fused nodes: the intermediate tile */
    /* Narrow outputs whose tile rows are contiguous (one panel of <= 16 columns) are staged and
     * finished as one span, so the fused pass runs on full vectors. Rows are stored in order and
     * each store only overwrites the previous row's garbage lanes. */
    const int table = ep->fused && ep->fused->kind == KS_Q8_FUSED_TABLE && ep->fused->vbmi;
    const int resid = ep->fused && ep->fused->kind == KS_Q8_FUSED_RESIDUAL;
    const int packed = ep->fused && !table && !resid && nc <= 16 && c_stride == nc;
    _Alignas(64) __m512i tv[ARCH_MR / 2]; /* TABLE nodes: the tile's intermediate bytes */
    /* short tiles (small images, FULLY_CONNECTED) skip the dot products of repeated rows */
    if (mr > 4)
        dot_8x32(acc, ARCH_MR, kb, ks, a, wp);
    else if (mr > 2)
        dot_8x32(acc, 4, kb, ks, a, wp);
    else
        dot_8x32(acc, 2, kb, ks, a, wp);
    if (ep->use_rowsum) {
        const __m512i rm0 = _mm512_loadu_si512(hdr + KS_Q8_HDR_ROWMUL * ARCH_NR);
        const __m512i rm1 = _mm512_loadu_si512(hdr + KS_Q8_HDR_ROWMUL * ARCH_NR + 16);
        KS_UNROLL for (int r = 0; r < ARCH_MR; r++) {
            __m512i s = _mm512_set1_epi32(rowsum[r]);
            acc[r][0] = _mm512_add_epi32(acc[r][0], _mm512_mullo_epi32(s, rm0));
            acc[r][1] = _mm512_add_epi32(acc[r][1], _mm512_mullo_epi32(s, rm1));
        }
    }
    const int64_t *ext = ext_rows(w, ARCH_NR, kb, ks);
    rq64 q0, q1;
    rq64_init(&q0, hdr, ext, ARCH_NR, 0, ep);
    rq64_init(&q1, hdr, ext, ARCH_NR, 1, ep);
    const __mmask32 m = nc >= 32 ? ~(__mmask32)0 : (__mmask32)((1u << nc) - 1);
    const int two = nc > 16; /* the second half has columns to store */
    if (resid) {
        resid_ctx rc;
        resid_init(&rc, ep);
        const ks__q8_fused *f = ep->fused;
        const uint8_t *res = ep->res_base + ((const uint8_t *)c - ep->y_base);
        const __mmask16 h0 = (__mmask16)m, h1 = (__mmask16)(m >> 16);
        KS_UNROLL for (int r = 0; r < ARCH_MR; r += 2) {
            if ((size_t)r >= mr) break;
            const uint8_t *r0 = res + (size_t)r * c_stride;
            const int next = (size_t)r + 1 < mr; /* row r + 1 exists: its residual may be read */
            const uint8_t *r1 = next ? r0 + c_stride : r0;
            __m512i a0 = resid16(rq64_apply(acc[r][0], &q0), r0, h0, &rc);
            __m512i b0 = resid16(rq64_apply(acc[r + 1][0], &q0), r1, next ? h0 : 0, &rc);
            __m512i a1 = two ? resid16(rq64_apply(acc[r][1], &q1), r0 + 16, h1, &rc) : a0;
            __m512i b1 =
                two ? resid16(rq64_apply(acc[r + 1][1], &q1), r1 + 16, next ? h1 : 0, &rc) : b0;
            __m512i y = pack4z(a0, a1, b0, b1, f->zo, f->lo, f->hi, ep->out_signed);
            _mm256_mask_storeu_epi8((char *)c + (size_t)r * c_stride, m, _mm512_castsi512_si256(y));
            if (next)
                _mm256_mask_storeu_epi8((char *)c + (size_t)(r + 1) * c_stride, m,
                                        _mm512_extracti64x4_epi64(y, 1));
        }
        return;
    }
    /* two rows per pack: row r in the low 256 bits, row r + 1 in the high */
    KS_UNROLL for (int r = 0; r < ARCH_MR; r += 2) {
        if ((size_t)r >= mr) break;
        __m512i a0 = rq64_apply(acc[r][0], &q0), b0 = rq64_apply(acc[r + 1][0], &q0);
        __m512i a1 = two ? rq64_apply(acc[r][1], &q1) : a0;
        __m512i b1 = two ? rq64_apply(acc[r + 1][1], &q1) : b0;
        __m512i y = pack4(a0, a1, b0, b1, ep);
        if (table) {
            tv[r / 2] = y;
            continue;
        }
        __m256i lo = _mm512_castsi512_si256(y), hi = _mm512_extracti64x4_epi64(y, 1);
        if (ep->fused) {
            _mm256_storeu_si256((__m256i *)(stage + (packed ? r * nc : (size_t)r * ARCH_NR)), lo);
            _mm256_storeu_si256(
                (__m256i *)(stage + (packed ? (r + 1) * nc : (size_t)(r + 1) * ARCH_NR)), hi);
            continue;
        }
        _mm256_mask_storeu_epi8((char *)c + (size_t)r * c_stride, m, lo);
        if ((size_t)r + 1 < mr)
            _mm256_mask_storeu_epi8((char *)c + (size_t)(r + 1) * c_stride, m, hi);
    }
    if (table)
        table_rows_vbmi(ep->fused->table, tv, (mr + 1) / 2, 2, (char *)c, c_stride, mr, nc);
    else if (packed)
        fused_tile(ep, stage, 0, (uint8_t *)c, 0, 1, mr * nc);
    else if (ep->fused)
        fused_tile(ep, stage, ARCH_NR, (uint8_t *)c, c_stride, mr, nc);
}

/* The 16 x 16 variant for outputs with at most 16 channels (first layers, heads, the narrow
 * high-resolution convs of segmentation decoders), where the 8 x 32 tile computes and requantizes
 * at least half padding columns: one weight vector and 16 row broadcasts per 4 k. */
#define N16 16

/* The 16 x 16 epilogue for outputs of at most 8 channels: rows 2i and 2i + 1 share one vector
 * (the panel repeats columns 0..7's constants in 8..15, qgemm.c), halving the requantization
 * and fused work; each pack then holds 8 whole rows of 8 bytes. */
KS_INLINE void epilogue_narrow(const __m512i *acc, size_t mr, size_t nc, void *c, size_t c_stride,
                               const rq64 *q, const ks__q8_epilogue *ep) {
    const int table = ep->fused && ep->fused->kind == KS_Q8_FUSED_TABLE && ep->fused->vbmi;
    const int resid = ep->fused && ep->fused->kind == KS_Q8_FUSED_RESIDUAL;
    resid_ctx rc;
    const uint8_t *res = NULL;
    if (resid) {
        resid_init(&rc, ep);
        res = ep->res_base + ((const uint8_t *)c - ep->y_base);
    }
    const __mmask16 m8 = (__mmask16)((1u << nc) - 1);
    _Alignas(64) __m512i tv[2]; /* TABLE nodes: the tile's intermediate bytes */
    _Alignas(64) uint8_t stage[N16 * 8];
    size_t groups = 0;
    KS_UNROLL for (int g = 0; g < 2; g++) {
        const size_t r0 = (size_t)g * 8;
        if (r0 >= mr) break;
        groups++;
        const size_t rows = mr - r0 < 8 ? mr - r0 : 8;
        __m512i v[4];
        KS_UNROLL for (int i = 0; i < 4; i++) {
            const size_t ra = r0 + 2 * (size_t)i;
            __m512i x = _mm512_shuffle_i64x2(acc[ra], acc[ra + 1], 0x44);
            x = rq64_apply(x, q);
            if (resid) {
                const int oka = ra < mr, okb = ra + 1 < mr; /* rows past mr: no reads */
                __m128i rb = _mm_unpacklo_epi64(
                    _mm_maskz_loadu_epi8(oka ? m8 : 0, res + (oka ? ra : r0) * c_stride),
                    _mm_maskz_loadu_epi8(okb ? m8 : 0, res + (okb ? ra + 1 : r0) * c_stride));
                x = resid16v(x, rb, &rc);
            }
            v[i] = x;
        }
        __m512i y = resid ? pack4z(v[0], v[1], v[2], v[3], ep->fused->zo, ep->fused->lo,
                                   ep->fused->hi, ep->out_signed)
                          : pack4(v[0], v[1], v[2], v[3], ep);
        if (table) {
            tv[g] = y;
        } else if (ep->fused && !resid) { /* other fused epilogues: staged, then fused_tile */
            _mm512_store_si512(stage + r0 * 8, y);
        } else {
            store_rows8(y, (char *)c + r0 * c_stride, c_stride, rows, nc);
        }
    }
    if (table) {
        table_rows_vbmi(ep->fused->table, tv, groups, 8, (char *)c, c_stride, mr, nc);
    } else if (ep->fused && !resid) {
        for (size_t g = 0; g < groups; g++) {
            size_t r0 = g * 8, rows = mr - r0 < 8 ? mr - r0 : 8;
            for (size_t i = 0; i < rows; i++) /* compact to nc bytes per row for fused_tile */
                for (size_t j = 0; j < nc; j++)
                    stage[(r0 + i) * nc + j] = stage[(r0 + i) * 8 + j];
        }
        fused_tile(ep, stage, nc, (uint8_t *)c, c_stride, mr, nc);
    }
}

static void ks_q8_igemm__avx512vnni_16x16(size_t mr, size_t nc, size_t kb, size_t ks,
                                          const void *const *a, const void *w, void *c,
                                          size_t c_stride, const int32_t *rowsum,
                                          const ks__q8_epilogue *ep) {
    const int32_t *hdr = (const int32_t *)w;
    const int8_t *wp = (const int8_t *)w + KS_Q8_HDR_ROWS * N16 * 4;
    const __m512i bias = _mm512_loadu_si512(hdr + KS_Q8_HDR_BIAS * N16);
    __m512i acc[N16];
    KS_UNROLL for (int r = 0; r < N16; r++) acc[r] = bias;
    _Alignas(64) uint8_t stage[(N16 + 1) * N16 + 64]; /* fused nodes: the intermediate tile */
    const int table = ep->fused && ep->fused->kind == KS_Q8_FUSED_TABLE && ep->fused->vbmi;
    const int resid = ep->fused && ep->fused->kind == KS_Q8_FUSED_RESIDUAL;
    const int packed = ep->fused && !table && !resid && c_stride == nc; /* one span (8 x 32) */
    _Alignas(64) __m512i tv[N16 / 4]; /* TABLE nodes: the tile's intermediate bytes */
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
    if (ep->use_rowsum) {
        const __m512i rowmul = _mm512_loadu_si512(hdr + KS_Q8_HDR_ROWMUL * N16);
        KS_UNROLL for (int r = 0; r < N16; r++) acc[r] =
            _mm512_add_epi32(acc[r], _mm512_mullo_epi32(_mm512_set1_epi32(rowsum[r]), rowmul));
    }
    rq64 q;
    rq64_init(&q, hdr, ext_rows(w, N16, kb, ks), N16, 0, ep);
    if (nc <= 8) {
        epilogue_narrow(acc, mr, nc, c, c_stride, &q, ep);
        return;
    }
    const __mmask16 m = nc >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nc) - 1);
    const size_t srow = packed ? nc : N16;
    if (resid) {
        resid_ctx rc;
        resid_init(&rc, ep);
        const ks__q8_fused *f = ep->fused;
        const uint8_t *res = ep->res_base + ((const uint8_t *)c - ep->y_base);
        KS_UNROLL for (int r = 0; r < N16; r += 4) {
            if ((size_t)r >= mr) break;
            __m512i v[4];
            KS_UNROLL for (int i = 0; i < 4; i++) {
                const int ok = (size_t)(r + i) < mr; /* rows past mr: no residual reads */
                const uint8_t *ri = res + (size_t)(ok ? r + i : r) * c_stride;
                v[i] = resid16(rq64_apply(acc[r + i], &q), ri, ok ? m : 0, &rc);
            }
            __m512i y = pack4z(v[0], v[1], v[2], v[3], f->zo, f->lo, f->hi, ep->out_signed);
            char *cr = (char *)c + (size_t)r * c_stride;
            if (c_stride == N16 && nc == N16 && (size_t)r + 4 <= mr) {
                _mm512_storeu_si512(cr, y);
                continue;
            }
            _mm_mask_storeu_epi8(cr, m, _mm512_castsi512_si128(y));
            if ((size_t)r + 1 < mr)
                _mm_mask_storeu_epi8(cr + c_stride, m, _mm512_extracti32x4_epi32(y, 1));
            if ((size_t)r + 2 < mr)
                _mm_mask_storeu_epi8(cr + 2 * c_stride, m, _mm512_extracti32x4_epi32(y, 2));
            if ((size_t)r + 3 < mr)
                _mm_mask_storeu_epi8(cr + 3 * c_stride, m, _mm512_extracti32x4_epi32(y, 3));
        }
        return;
    }
    /* four rows per pack, one per 128-bit lane */
    KS_UNROLL for (int r = 0; r < N16; r += 4) {
        if ((size_t)r >= mr) break;
        __m512i y = pack4(rq64_apply(acc[r], &q), rq64_apply(acc[r + 1], &q),
                          rq64_apply(acc[r + 2], &q), rq64_apply(acc[r + 3], &q), ep);
        if (table) {
            tv[r / 4] = y;
            continue;
        }
        __m128i y0 = _mm512_castsi512_si128(y), y1 = _mm512_extracti32x4_epi32(y, 1);
        __m128i y2 = _mm512_extracti32x4_epi32(y, 2), y3 = _mm512_extracti32x4_epi32(y, 3);
        if (ep->fused) {
            _mm_storeu_si128((__m128i *)(stage + (size_t)r * srow), y0);
            _mm_storeu_si128((__m128i *)(stage + (size_t)(r + 1) * srow), y1);
            _mm_storeu_si128((__m128i *)(stage + (size_t)(r + 2) * srow), y2);
            _mm_storeu_si128((__m128i *)(stage + (size_t)(r + 3) * srow), y3);
            continue;
        }
        if (c_stride == N16 && nc == N16 && (size_t)r + 4 <= mr) {
            _mm512_storeu_si512((char *)c + (size_t)r * N16, y);
            continue;
        }
        char *cr = (char *)c + (size_t)r * c_stride;
        _mm_mask_storeu_epi8(cr, m, y0);
        if ((size_t)r + 1 < mr) _mm_mask_storeu_epi8(cr + c_stride, m, y1);
        if ((size_t)r + 2 < mr) _mm_mask_storeu_epi8(cr + 2 * c_stride, m, y2);
        if ((size_t)r + 3 < mr) _mm_mask_storeu_epi8(cr + 3 * c_stride, m, y3);
    }
    if (table)
        table_rows_vbmi(ep->fused->table, tv, (mr + 3) / 4, 4, (char *)c, c_stride, mr, nc);
    else if (packed)
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
    return ks__q8_gemm_plan_r64(ctx, &k_gemm16, packed_bytes_out);
}
static ks_status gemm16_pack(ks__kernel_ctx *ctx) {
    return ks__q8_gemm_pack_r64(ctx, &k_gemm16);
}
static ks_status gemm16_run(ks__kernel_ctx *ctx) {
    return ks__q8_gemm_run_r64(ctx, &k_gemm16);
}

static double gemm_cost(const ks__kernel_ctx *ctx) {
    return ks__q8_gemm_cost(ctx, &k_gemm);
}
static ks_status gemm_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__q8_gemm_plan_r64(ctx, &k_gemm, packed_bytes_out);
}
static ks_status gemm_pack(ks__kernel_ctx *ctx) {
    return ks__q8_gemm_pack_r64(ctx, &k_gemm);
}
static ks_status gemm_run(ks__kernel_ctx *ctx) {
    return ks__q8_gemm_run_r64(ctx, &k_gemm);
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
