/* Row-wise quantized depthwise CONV2D microkernels for AVX-512 VNNI (q8_dw.h): the 4-row byte
 * interleave and the output-row kernel (4 taps per vpdpbusd, 64 output bytes per block).
 *
 * Why this beats one vpdpwssd per tap: each u8 x s8 dot product covers 4 kernel rows, and the
 * bytes are interleaved once per row group and output row instead of sign-extended once per tap,
 * so a 3x3 block of 64 outputs is 12 dot products and 12 loads with no shuffles.
 *
 * Requantization: the reference computes h = SRDHM(x, m) = floor((x m + 2^30) / 2^31) (gemmlowp's
 * nudge with truncation equals this for both signs) and then rounds h / 2^r half away from zero,
 * i.e. floor((h + 2^(r-1) - [h < 0]) / 2^r) for r > 0. A floor of a floor by a power of two
 * nests, so with the output zero point zp inside the floor:
 *     out + zp = floor((x m + 2^30 + [r > 0] (2^(30+r) - 2^31 [h < 0]) + zp 2^(31+r)) / 2^(31+r)).
 * [h < 0] may be replaced by [x m < 0] because the multiplier is 0 or >= 2^30: they differ only at
 * x = -1, m = 2^30 (h = 0), where both forms give 0. So per lane: one 64-bit multiply, an add, a
 * masked subtract and an arithmetic shift; even and odd lanes use vpmuldq separately and are
 * merged with one permute. The 64-bit sum stays far inside int64 (right shifts <= 22, q8_dw.c).
 */
#include <immintrin.h>

#include "../../q8_dw.h"
#include "../../q8_lut.h"

#define KS_INLINE static inline __attribute__((always_inline))
/* A hint for gcc; clang unrolls the constant-count instances by itself (its "unroll" pragma
 * warns on the runtime-count one). */
#if defined(__clang__)
#define KS_UNROLL
#else
#define KS_UNROLL _Pragma("GCC unroll 16")
#endif

/* dword 4k + n <-> dword 4n + k: a 4x4 transpose of the 128-bit lanes' dwords (an involution). */
static const int32_t k_transpose[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
/* low dwords of the even-lane products (first source) and odd-lane products (second) */
static const int32_t k_merge[16] = {0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30};

/* After the transpose, lane k of each row holds flat dwords k, 4 + k, 8 + k, 12 + k, so the
 * in-lane unpacks (bytes, then words) produce flat positions 0..15, 16..31, 32..47, 48..63. */
static void ks_q8dw_interleave__avx512vnni(const uint8_t *const rows[4], size_t num_blocks,
                                           uint32_t *dst) {
    const __m512i tr = _mm512_loadu_si512(k_transpose);
    for (size_t j = 0; j < num_blocks; j++) {
        __m512i r0 = _mm512_permutexvar_epi32(tr, _mm512_loadu_si512(rows[0] + 64 * j));
        __m512i r1 = _mm512_permutexvar_epi32(tr, _mm512_loadu_si512(rows[1] + 64 * j));
        __m512i r2 = _mm512_permutexvar_epi32(tr, _mm512_loadu_si512(rows[2] + 64 * j));
        __m512i r3 = _mm512_permutexvar_epi32(tr, _mm512_loadu_si512(rows[3] + 64 * j));
        __m512i lo01 = _mm512_unpacklo_epi8(r0, r1), hi01 = _mm512_unpackhi_epi8(r0, r1);
        __m512i lo23 = _mm512_unpacklo_epi8(r2, r3), hi23 = _mm512_unpackhi_epi8(r2, r3);
        uint32_t *d = dst + 64 * j;
        _mm512_storeu_si512(d, _mm512_unpacklo_epi16(lo01, lo23));
        _mm512_storeu_si512(d + 16, _mm512_unpackhi_epi16(lo01, lo23));
        _mm512_storeu_si512(d + 32, _mm512_unpacklo_epi16(hi01, hi23));
        _mm512_storeu_si512(d + 48, _mm512_unpackhi_epi16(hi01, hi23));
    }
}

/* 64 bytes of a row read in place from flat byte f (q8_dw.h ks__q8dw_src), flipped. */
KS_INLINE __m512i src_block(const ks__q8dw_src *r, size_t f, __m512i flip, __m512i pad) {
    if (f >= r->lo && f + 64 <= r->hi)
        return _mm512_xor_si512(_mm512_loadu_si512(r->data + (f - r->shift)), flip);
    if (f + 64 <= r->lo || f >= r->hi) return pad;
    /* an edge block: the valid bytes [lo, hi) - f, loaded masked (masked-off bytes are never
     * accessed; the address is formed as an integer, it may precede the row) */
    size_t b = r->lo > f ? r->lo - f : 0, e = r->hi - f < 64 ? r->hi - f : 64;
    __mmask64 m =
        (e == 64 ? ~(__mmask64)0 : (((__mmask64)1 << e) - 1)) & ~(((__mmask64)1 << b) - 1);
    const void *at = (const void *)((uintptr_t)r->data + f - r->shift);
    return _mm512_mask_mov_epi8(pad, m, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, at), flip));
}

/* The interleave of ks_q8dw_interleave__avx512vnni from rows read in place. */
static void ks_q8dw_interleave_src__avx512vnni(const ks__q8dw_src rows[4], size_t num_blocks,
                                               uint8_t flip, uint8_t pad, uint32_t *dst) {
    const __m512i tr = _mm512_loadu_si512(k_transpose);
    const __m512i fv = _mm512_set1_epi8((char)flip), pv = _mm512_set1_epi8((char)pad);
    for (size_t j = 0; j < num_blocks; j++) {
        __m512i r0 = _mm512_permutexvar_epi32(tr, src_block(&rows[0], 64 * j, fv, pv));
        __m512i r1 = _mm512_permutexvar_epi32(tr, src_block(&rows[1], 64 * j, fv, pv));
        __m512i r2 = _mm512_permutexvar_epi32(tr, src_block(&rows[2], 64 * j, fv, pv));
        __m512i r3 = _mm512_permutexvar_epi32(tr, src_block(&rows[3], 64 * j, fv, pv));
        __m512i lo01 = _mm512_unpacklo_epi8(r0, r1), hi01 = _mm512_unpackhi_epi8(r0, r1);
        __m512i lo23 = _mm512_unpacklo_epi8(r2, r3), hi23 = _mm512_unpackhi_epi8(r2, r3);
        uint32_t *d = dst + 64 * j;
        _mm512_storeu_si512(d, _mm512_unpacklo_epi16(lo01, lo23));
        _mm512_storeu_si512(d + 16, _mm512_unpackhi_epi16(lo01, lo23));
        _mm512_storeu_si512(d + 32, _mm512_unpacklo_epi16(hi01, hi23));
        _mm512_storeu_si512(d + 48, _mm512_unpackhi_epi16(hi01, hi23));
    }
}

KS_INLINE __m512i cst_row(const uint8_t *cst, int row, size_t v) {
    return _mm512_loadu_si512(cst + ((size_t)row * 4 + v) * 64);
}

/* out + zp of 16 accumulators (header comment); lanes in natural order. */
/* mode: MODE_LSHIFT (some channel shifts left), MODE_NO_SIGN (the clamp's low end is at or
 * above the zero point, so every negative h clamps to it whichever way it rounds: the sign
 * correction is skipped; q8_dw.h no_sign). */
/* MODE_FP64: the float64 constants (q8_dw.h KS_Q8DW_CD_*, exact where q8_dw.c chose them):
 * two FMAs and two rounding-down conversions per 16 lanes instead of the 64-bit products. */
enum { MODE_LSHIFT = 1, MODE_NO_SIGN = 2, MODE_FP64 = 4 };

KS_INLINE __m512d cst_pd(const uint8_t *cst, int row, size_t v) {
    return _mm512_loadu_pd(cst + ((size_t)row * 4 + v) * 64);
}

/* The low and high 8 lanes of out + zp. */
KS_INLINE void requant_fp64(__m512i x, const uint8_t *cst, size_t v, int mode, __m256i *lo,
                            __m256i *hi) {
    __m512d dl = _mm512_cvtepi32_pd(_mm512_castsi512_si256(x));
    __m512d dh = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(x, 1));
    __m512d bl = cst_pd(cst, KS_Q8DW_CD_BLO, v), bh = cst_pd(cst, KS_Q8DW_CD_BHI, v);
    if (!(mode & MODE_NO_SIGN)) {
        __mmask16 n = _mm512_movepi32_mask(x);
        bl = _mm512_mask_sub_pd(bl, (__mmask8)n, bl, cst_pd(cst, KS_Q8DW_CD_SLO, v));
        bh = _mm512_mask_sub_pd(bh, (__mmask8)(n >> 8), bh, cst_pd(cst, KS_Q8DW_CD_SHI, v));
    }
    __m512d yl = _mm512_fmadd_pd(dl, cst_pd(cst, KS_Q8DW_CD_ALO, v), bl);
    __m512d yh = _mm512_fmadd_pd(dh, cst_pd(cst, KS_Q8DW_CD_AHI, v), bh);
    *lo = _mm512_cvt_roundpd_epi32(yl, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    *hi = _mm512_cvt_roundpd_epi32(yh, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}

KS_INLINE __m512i requant(__m512i x, const uint8_t *cst, size_t v, int mode, __m512i merge) {
    if (mode & MODE_LSHIFT) x = _mm512_sllv_epi32(x, cst_row(cst, KS_Q8DW_C_LSHIFT, v));
    __m512i xo = _mm512_srli_epi64(x, 32);
    __m512i pe = _mm512_mul_epi32(x, cst_row(cst, KS_Q8DW_C_MEVEN, v));
    __m512i po = _mm512_mul_epi32(xo, cst_row(cst, KS_Q8DW_C_MODD, v));
    if (mode & MODE_NO_SIGN) {
        pe = _mm512_add_epi64(pe, cst_row(cst, KS_Q8DW_C_KEVEN, v));
        po = _mm512_add_epi64(po, cst_row(cst, KS_Q8DW_C_KODD, v));
    } else {
        __mmask8 ne = _mm512_movepi64_mask(pe), no = _mm512_movepi64_mask(po);
        pe = _mm512_add_epi64(pe, cst_row(cst, KS_Q8DW_C_KEVEN, v));
        po = _mm512_add_epi64(po, cst_row(cst, KS_Q8DW_C_KODD, v));
        pe = _mm512_mask_sub_epi64(pe, ne, pe, cst_row(cst, KS_Q8DW_C_SEVEN, v));
        po = _mm512_mask_sub_epi64(po, no, po, cst_row(cst, KS_Q8DW_C_SODD, v));
    }
    pe = _mm512_srav_epi64(pe, cst_row(cst, KS_Q8DW_C_SHEVEN, v));
    po = _mm512_srav_epi64(po, cst_row(cst, KS_Q8DW_C_SHODD, v));
    return _mm512_permutex2var_epi32(pe, merge, po);
}

/* table[b] for the 64 bytes of b with AVX-512 VBMI: two 128-entry halves picked by bit 7. */
#define KS_TABLE_LOOKUP(b, t)                                                                      \
    _mm512_mask_blend_epi8(_mm512_movepi8_mask(b), _mm512_permutex2var_epi8(t[0], b, t[1]),        \
                           _mm512_permutex2var_epi8(t[2], b, t[3]))

typedef struct consts {
    __m512i tr, merge, lo, hi;
} consts;

/* The 64 output bytes of 4 accumulators (pattern constants cst). */
KS_INLINE __m512i finish(__m512i a0, __m512i a1, __m512i a2, __m512i a3, const uint8_t *cst,
                         int out_i8, int lshift, int clamp, const consts *k) {
    if (lshift & MODE_FP64) {
        /* the 256-bit halves pack as the 128-bit lanes 0-1 and 2-3 of the 512-bit form below */
        __m256i l[4], h[4];
        requant_fp64(a0, cst, 0, lshift, &l[0], &h[0]);
        requant_fp64(a1, cst, 1, lshift, &l[1], &h[1]);
        requant_fp64(a2, cst, 2, lshift, &l[2], &h[2]);
        requant_fp64(a3, cst, 3, lshift, &l[3], &h[3]);
        __m256i l01 = _mm256_packs_epi32(l[0], l[1]), l23 = _mm256_packs_epi32(l[2], l[3]);
        __m256i h01 = _mm256_packs_epi32(h[0], h[1]), h23 = _mm256_packs_epi32(h[2], h[3]);
        __m256i bl = out_i8 ? _mm256_packs_epi16(l01, l23) : _mm256_packus_epi16(l01, l23);
        __m256i bh = out_i8 ? _mm256_packs_epi16(h01, h23) : _mm256_packus_epi16(h01, h23);
        __m512i b = _mm512_inserti64x4(_mm512_castsi256_si512(bl), bh, 1);
        if (clamp && out_i8) b = _mm512_min_epi8(_mm512_max_epi8(b, k->lo), k->hi);
        if (clamp && !out_i8) b = _mm512_min_epu8(_mm512_max_epu8(b, k->lo), k->hi);
        return _mm512_permutexvar_epi32(k->tr, b);
    }
    __m512i q0 = requant(a0, cst, 0, lshift, k->merge), q1 = requant(a1, cst, 1, lshift, k->merge);
    __m512i q2 = requant(a2, cst, 2, lshift, k->merge), q3 = requant(a3, cst, 3, lshift, k->merge);
    /* saturating packs keep the order of values, so clamping after them is exact (and with the
     * dtype's full range, they are the clamp) */
    __m512i p01 = _mm512_packs_epi32(q0, q1), p23 = _mm512_packs_epi32(q2, q3);
    __m512i b;
    if (out_i8) {
        b = _mm512_packs_epi16(p01, p23);
        if (clamp) b = _mm512_min_epi8(_mm512_max_epi8(b, k->lo), k->hi);
    } else {
        b = _mm512_packus_epi16(p01, p23);
        if (clamp) b = _mm512_min_epu8(_mm512_max_epu8(b, k->lo), k->hi);
    }
    /* lane k now holds flat dwords k, 4 + k, 8 + k, 12 + k of the block */
    return _mm512_permutexvar_epi32(k->tr, b);
}

/* Flat block j of nrows output rows (row q with weight set q, q8_dw.h): the interleaved loads
 * are shared by the rows. */
KS_INLINE void block(const ks__q8dw_row *r, const uint32_t *const *tp, size_t j, const uint8_t *w,
                     int out_i8, int lshift, int clamp, size_t fixed_taps, size_t nrows,
                     const consts *k, __m512i *y) {
    const size_t taps = fixed_taps ? fixed_taps : r->num_taps;
    const uint8_t *cst = w + r->cst_offset;
    __m512i acc[4][4];
    for (size_t v = 0; v < 4; v++) {
        __m512i s = cst_row(cst, KS_Q8DW_C_BIAS, v);
        for (size_t q = 0; q < nrows; q++)
            acc[q][v] = s;
    }
    KS_UNROLL for (size_t t = 0; t < taps; t++) {
        const uint32_t *s = tp[t] + 64 * j;
        __m512i x[4];
        for (size_t v = 0; v < 4; v++)
            x[v] = _mm512_loadu_si512(s + 16 * v);
        for (size_t q = 0; q < nrows; q++) {
            const uint8_t *wp = w + q * r->set_bytes + t * 256;
            for (size_t v = 0; v < 4; v++)
                acc[q][v] = _mm512_dpbusd_epi32(acc[q][v], x[v], _mm512_loadu_si512(wp + 64 * v));
        }
    }
    for (size_t q = 0; q < nrows; q++)
        y[q] = finish(acc[q][0], acc[q][1], acc[q][2], acc[q][3], cst, out_i8, lshift, clamp, k);
}

KS_INLINE void store_block(uint8_t *out, size_t j, size_t nb, __mmask64 tail, __m512i b) {
    if (j + 1 < nb)
        _mm512_storeu_si512(out + 64 * j, b);
    else
        _mm512_mask_storeu_epi8(out + 64 * j, tail, b);
}

/* Pattern-major: every block of one pattern, then the next, so a pattern's weights and
 * constants stay in L1 however many patterns the channel count needs. Defined twice: plain, and
 * for the TABLE form with VBMI, the lookup in registers before the store (the VBMI intrinsics
 * may only appear in functions compiled for it). */
#define KS_DEFINE_ROW_LOOP(NAME, ATTR, LOOKUP)                                                     \
    ATTR static inline __attribute__((always_inline)) void NAME(                                   \
        const ks__q8dw_row *r, int out_i8, int lshift, int clamp, size_t fixed_taps, size_t nrows, \
        const __m512i *table) {                                                                    \
        const size_t nb = r->num_blocks, np = r->num_patterns;                                     \
        const size_t row_bytes = (nb - 1) * 64 + r->tail_bytes;                                    \
        consts k;                                                                                  \
        k.tr = _mm512_loadu_si512(k_transpose);                                                    \
        k.merge = _mm512_loadu_si512(k_merge);                                                     \
        k.lo = _mm512_set1_epi8((char)r->lo), k.hi = _mm512_set1_epi8((char)r->hi);                \
        const __mmask64 tail =                                                                     \
            r->tail_bytes >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << r->tail_bytes) - 1);           \
        (void)table;                                                                               \
        /* a local copy: the stores below may alias r->tap[], which would reload it per block */   \
        const uint32_t *tbuf[16], *const *tp = r->tap;                                             \
        if (fixed_taps) {                                                                          \
            for (size_t t = 0; t < fixed_taps; t++)                                                \
                tbuf[t] = r->tap[t];                                                               \
            tp = tbuf;                                                                             \
        }                                                                                          \
        for (size_t p = 0; p < np && p < nb; p++) {                                                \
            const uint8_t *w = r->w + p * r->pattern_bytes;                                        \
            for (size_t j = p; j < nb; j += np) {                                                  \
                __m512i y[4];                                                                      \
                block(r, tp, j, w, out_i8, lshift, clamp, fixed_taps, nrows, &k, y);               \
                for (size_t q = 0; q < nrows; q++) {                                               \
                    LOOKUP;                                                                        \
                    store_block(r->out + q * row_bytes, j, nb, tail, y[q]);                        \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

#define KS_TARGET_VBMI                                                                             \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi")))

KS_DEFINE_ROW_LOOP(row_loop, , (void)0)
KS_DEFINE_ROW_LOOP(row_loop_vbmi, KS_TARGET_VBMI, y[q] = KS_TABLE_LOOKUP(y[q], table))

/* Bodies specialized on the rows per call and the tap count (3x3: 3, 5x5: 10); dtype, clamp
 * and left shift are loop-invariant branches. */
#define KS_DISPATCH_ROWS(LOOP, TAPS, MODE, I8, CLAMP)                                              \
    do {                                                                                           \
        if (r->num_rows == 4)                                                                      \
            LOOP(r, I8, MODE, CLAMP, TAPS, 4, table);                                              \
        else if (r->num_rows == 2)                                                                 \
            LOOP(r, I8, MODE, CLAMP, TAPS, 2, table);                                              \
        else                                                                                       \
            LOOP(r, I8, MODE, CLAMP, TAPS, 1, table);                                              \
    } while (0)

#define KS_DISPATCH_TAPS_C(LOOP, MODE, I8, CLAMP)                                                  \
    do {                                                                                           \
        if (r->num_taps == 3)                                                                      \
            KS_DISPATCH_ROWS(LOOP, 3, MODE, I8, CLAMP);                                            \
        else if (r->num_taps == 10)                                                                \
            KS_DISPATCH_ROWS(LOOP, 10, MODE, I8, CLAMP);                                           \
        else if (r->num_taps == 6)                                                                 \
            KS_DISPATCH_ROWS(LOOP, 6, MODE, I8, CLAMP);                                            \
        else                                                                                       \
            KS_DISPATCH_ROWS(LOOP, 0, MODE, I8, CLAMP);                                            \
    } while (0)
#define KS_DISPATCH_TAPS(LOOP, MODE) KS_DISPATCH_TAPS_C(LOOP, MODE, i8, clamp)

/* The ReLU-clamped nodes (no sign correction) get their own bodies; the TABLE ones requantize
 * to the full range, so they never skip it and share the runtime-mode body. */
#define KS_DEFINE_DISPATCH(NAME, ATTR, LOOP, NO_SIGN_BODY)                                         \
    ATTR static void NAME(const ks__q8dw_row *r, const __m512i *table) {                           \
        const int i8 = r->out_i8;                                                                  \
        const int mode = r->fp64                                                                   \
                             ? MODE_FP64 | (r->no_sign ? MODE_NO_SIGN : 0)                         \
                             : (r->lshift ? MODE_LSHIFT : 0) | (r->no_sign ? MODE_NO_SIGN : 0);    \
        const int clamp = r->lo > (i8 ? -128 : 0) || r->hi < (i8 ? 127 : 255);                     \
        if (NO_SIGN_BODY && mode == (MODE_FP64 | MODE_NO_SIGN) && i8 && !clamp)                    \
            KS_DISPATCH_TAPS_C(LOOP, MODE_FP64 | MODE_NO_SIGN, 1, 0); /* ReLU6 to I8 */            \
        else if (NO_SIGN_BODY && mode == (MODE_FP64 | MODE_NO_SIGN))                               \
            KS_DISPATCH_TAPS(LOOP, MODE_FP64 | MODE_NO_SIGN);                                      \
        else if (NO_SIGN_BODY && mode == MODE_NO_SIGN)                                             \
            KS_DISPATCH_TAPS(LOOP, MODE_NO_SIGN);                                                  \
        else if (mode == MODE_FP64) /* the TABLE form's usual one */                               \
            KS_DISPATCH_TAPS(LOOP, MODE_FP64);                                                     \
        else                                                                                       \
            KS_DISPATCH_TAPS(LOOP, mode);                                                          \
    }

KS_DEFINE_DISPATCH(row_dispatch, , row_loop, 1)
KS_DEFINE_DISPATCH(row_dispatch_vbmi, KS_TARGET_VBMI, row_loop_vbmi, 0)

KS_TARGET_VBMI static void row_table_vbmi(const ks__q8dw_row *r) {
    __m512i t[4];
    for (int i = 0; i < 4; i++)
        t[i] = _mm512_loadu_si512(r->table + 64 * i);
    row_dispatch_vbmi(r, t);
}

static void ks_q8dw_row__avx512vnni(const ks__q8dw_row *r) {
    if (r->table && r->vbmi) {
        row_table_vbmi(r);
        return;
    }
    row_dispatch(r, NULL);
    if (r->table) /* without VBMI: a pass over the rows while they are in L1 (AVX2 shuffles) */
        ks__q8_map_bytes_avx2(r->table, r->tscope, r->out, r->out,
                              ((r->num_blocks - 1) * 64 + r->tail_bytes) * r->num_rows);
}

/* Stride-2 phase split (q8_dw.h) for 8, 16, 32 and multiple-of-64 byte pixels. */
static size_t ks_q8dw_split2__avx512vnni(const uint8_t *src, size_t pairs, size_t c, uint8_t flip,
                                         uint8_t *even, uint8_t *odd) {
    const __m512i f = _mm512_set1_epi8((char)flip);
    size_t i = 0;
    if (c == 8 || c == 16 || c == 32) {
        const size_t per = 64 / c; /* pairs per 128 input bytes */
        const __m512i ie = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
        const __m512i io = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
        for (; i + per <= pairs; i += per) {
            __m512i a = _mm512_xor_si512(_mm512_loadu_si512(src + 2 * i * c), f);
            __m512i b = _mm512_xor_si512(_mm512_loadu_si512(src + 2 * i * c + 64), f);
            __m512i e, o;
            if (c == 8) {
                e = _mm512_permutex2var_epi64(a, ie, b);
                o = _mm512_permutex2var_epi64(a, io, b);
            } else if (c == 16) {
                e = _mm512_shuffle_i64x2(a, b, 0x88);
                o = _mm512_shuffle_i64x2(a, b, 0xDD);
            } else {
                e = _mm512_shuffle_i64x2(a, b, 0x44);
                o = _mm512_shuffle_i64x2(a, b, 0xEE);
            }
            _mm512_storeu_si512(even + i * c, e);
            _mm512_storeu_si512(odd + i * c, o);
        }
        return i;
    }
    if (c % 64 == 0) {
        for (; i < pairs; i++) {
            for (size_t k = 0; k < c; k += 64) {
                _mm512_storeu_si512(even + i * c + k,
                                    _mm512_xor_si512(_mm512_loadu_si512(src + 2 * i * c + k), f));
                _mm512_storeu_si512(
                    odd + i * c + k,
                    _mm512_xor_si512(_mm512_loadu_si512(src + (2 * i + 1) * c + k), f));
            }
        }
    }
    return i;
}

static const ks__q8dw_arch k_arch = {64,
                                     0,
                                     4,
                                     ks_q8dw_interleave__avx512vnni,
                                     ks_q8dw_row__avx512vnni,
                                     1.8,
                                     ks_q8dw_split2__avx512vnni,
                                     ks_q8dw_interleave_src__avx512vnni};

static double dwrow_cost(const ks__kernel_ctx *ctx) {
    return ks__q8dw_cost(ctx, &k_arch);
}
static ks_status dwrow_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__q8dw_plan(ctx, &k_arch, packed_bytes_out);
}
static ks_status dwrow_pack(ks__kernel_ctx *ctx) {
    return ks__q8dw_pack(ctx, &k_arch);
}
static ks_status dwrow_run(ks__kernel_ctx *ctx) {
    return ks__q8dw_run(ctx, &k_arch);
}

const ks__impl ks_q8_dwconv__avx512vnni_dwrow = {"ks_q8_dwconv__avx512vnni_dwrow",
                                                 KS_OP_CONV2D,
                                                 KS_ISA_AVX512 | KS_ISA_AVX512_VNNI,
                                                 dwrow_cost,
                                                 dwrow_plan,
                                                 dwrow_pack,
                                                 dwrow_run};
