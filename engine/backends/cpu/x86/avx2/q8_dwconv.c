/* Row-wise quantized depthwise CONV2D microkernels for AVX2 + AVX-VNNI (q8_dw.h): the same
 * scheme as the AVX-512 VNNI kernels (x86/avx512vnni/q8_dwconv.c) in 32-byte flat blocks, for
 * CPUs with the VEX-encoded vpdpbusd but no AVX-512 (Intel Alder Lake and later client cores).
 * The same rows for plain AVX2 (ks_q8_dwconv__avx2_dwrow): vpdpbusd is emulated exactly with
 * vpsignb + vpmaddubsw + vpmaddwd (q8_dw.h KS_Q8DW_SIGNED_X; see block_sx).
 *
 * AVX2 has no 64-bit arithmetic shift, so the requantization takes the reference's two steps
 * (q8_dw.h, C2 constants): h = SRDHM(x, m) = floor((x m + 2^30) / 2^31) from vpmuldq products
 * (bits 31..62 of the 64-bit sums), then h / 2^r rounded half away from zero plus the zero point
 * as (h + 2^(r-1) + zp 2^r - [h < 0]) >> r in 32 bits; q8_dw.c keeps |acc| < 2^30 so the sum
 * cannot wrap. Channels with left shifts (real multipliers above 1) shift each lane first
 * (KS_Q8DW_LEFT_SHIFT, wrapping like the reference), in generic-tap instances of the row loops
 * (BlazePose full has 20 such layers). Only functions marked KS_VNNI use AVX-VNNI; the file is
 * compiled for AVX2 and the impl's ISA bits gate it at run time.
 */
#include <immintrin.h>
#include <string.h>

#include "../../q8_dw.h"
#include "../../q8_lut.h"

#define KS_INLINE static inline __attribute__((always_inline))
#define KS_VNNI __attribute__((target("avx2,fma,avxvnni")))
/* inline helpers that use AVX-VNNI need the target too (gcc checks them on their own) */
#define KS_INLINE_VNNI static inline __attribute__((always_inline, target("avx2,fma,avxvnni")))
/* A hint for gcc; clang unrolls the constant-count instances by itself. */
#if defined(__clang__)
#define KS_UNROLL
#else
#define KS_UNROLL _Pragma("GCC unroll 16")
#endif

enum { BB = 32 }; /* flat block bytes: 4 vectors of 8 int32 lanes */

/* Lane k of a permuted row holds flat dwords k, 2 + k, 4 + k, 6 + k, so the in-lane unpacks
 * give flat positions 0..7, 8..15, 16..23, 24..31. */
static const int32_t k_spread[8] = {0, 2, 4, 6, 1, 3, 5, 7};
/* After the packs, position 4 k + n holds flat dword 2 n + k: back to the flat order. */
static const int32_t k_gather[8] = {0, 4, 1, 5, 2, 6, 3, 7};

/* Interleaves 4 rows into 4-byte groups, every byte xored with `flip` (0: as is; 0x80: x - 128
 * as s8, KS_Q8DW_SIGNED_X). */
KS_INLINE void interleave4(const uint8_t *const rows[4], size_t num_blocks, uint32_t *dst,
                           __m256i flip) {
    const __m256i sp = _mm256_loadu_si256((const __m256i *)k_spread);
    for (size_t j = 0; j < num_blocks; j++) {
        __m256i r0 = _mm256_permutevar8x32_epi32(
            _mm256_loadu_si256((const __m256i *)(rows[0] + BB * j)), sp);
        __m256i r1 = _mm256_permutevar8x32_epi32(
            _mm256_loadu_si256((const __m256i *)(rows[1] + BB * j)), sp);
        __m256i r2 = _mm256_permutevar8x32_epi32(
            _mm256_loadu_si256((const __m256i *)(rows[2] + BB * j)), sp);
        __m256i r3 = _mm256_permutevar8x32_epi32(
            _mm256_loadu_si256((const __m256i *)(rows[3] + BB * j)), sp);
        __m256i lo01 = _mm256_unpacklo_epi8(r0, r1), hi01 = _mm256_unpackhi_epi8(r0, r1);
        __m256i lo23 = _mm256_unpacklo_epi8(r2, r3), hi23 = _mm256_unpackhi_epi8(r2, r3);
        __m256i *d = (__m256i *)(dst + BB * j);
        _mm256_storeu_si256(d, _mm256_xor_si256(_mm256_unpacklo_epi16(lo01, lo23), flip));
        _mm256_storeu_si256(d + 1, _mm256_xor_si256(_mm256_unpackhi_epi16(lo01, lo23), flip));
        _mm256_storeu_si256(d + 2, _mm256_xor_si256(_mm256_unpacklo_epi16(hi01, hi23), flip));
        _mm256_storeu_si256(d + 3, _mm256_xor_si256(_mm256_unpackhi_epi16(hi01, hi23), flip));
    }
}

static void ks_q8dw_interleave__avx2(const uint8_t *const rows[4], size_t num_blocks,
                                     uint32_t *dst) {
    interleave4(rows, num_blocks, dst, _mm256_setzero_si256());
}

KS_INLINE __m256i cst_row(const uint8_t *cst, int row, size_t v) {
    return _mm256_loadu_si256((const __m256i *)(cst + ((size_t)row * 4 + v) * BB));
}

/* out + zp of 8 accumulators (header comment), lanes in flat order. no_sign: q8_dw.h. */
KS_INLINE __m256i requant(__m256i x, const uint8_t *cst, size_t v, int no_sign, int lshift) {
    const __m256i nudge = _mm256_set1_epi64x(1LL << 30);
    if (lshift) x = _mm256_sllv_epi32(x, cst_row(cst, KS_Q8DW_C_LSHIFT, v));
    __m256i pe = _mm256_mul_epi32(x, cst_row(cst, KS_Q8DW_C_MEVEN, v));
    __m256i po = _mm256_mul_epi32(_mm256_srli_epi64(x, 32), cst_row(cst, KS_Q8DW_C_MODD, v));
    pe = _mm256_srli_epi64(_mm256_add_epi64(pe, nudge), 31); /* h in the low dwords */
    po = _mm256_slli_epi64(_mm256_add_epi64(po, nudge), 1);  /* h in the high dwords */
    __m256i h = _mm256_blend_epi32(pe, po, 0xAA);
    if (!no_sign)
        h = _mm256_add_epi32(
            h, _mm256_and_si256(_mm256_srai_epi32(h, 31), cst_row(cst, KS_Q8DW_C2_NZ, v)));
    __m256i t = _mm256_add_epi32(h, cst_row(cst, KS_Q8DW_C2_ADD, v));
    return _mm256_srav_epi32(t, cst_row(cst, KS_Q8DW_C2_SHIFT, v));
}

typedef struct consts {
    __m256i gather, lo, hi;
} consts;

KS_INLINE __m256i finish(__m256i a0, __m256i a1, __m256i a2, __m256i a3, const uint8_t *cst,
                         int out_i8, int clamp, int no_sign, int lshift, const consts *k) {
    __m256i q0 = requant(a0, cst, 0, no_sign, lshift), q1 = requant(a1, cst, 1, no_sign, lshift);
    __m256i q2 = requant(a2, cst, 2, no_sign, lshift), q3 = requant(a3, cst, 3, no_sign, lshift);
    /* saturating packs keep the order of values, so clamping after them is exact */
    __m256i p01 = _mm256_packs_epi32(q0, q1), p23 = _mm256_packs_epi32(q2, q3);
    __m256i b;
    if (out_i8) {
        b = _mm256_packs_epi16(p01, p23);
        if (clamp) b = _mm256_min_epi8(_mm256_max_epi8(b, k->lo), k->hi);
    } else {
        b = _mm256_packus_epi16(p01, p23);
        if (clamp) b = _mm256_min_epu8(_mm256_max_epu8(b, k->lo), k->hi);
    }
    return _mm256_permutevar8x32_epi32(b, k->gather);
}

KS_INLINE_VNNI void block(const ks__q8dw_row *r, size_t j, const uint8_t *w, int out_i8, int clamp,
                          int no_sign, int lshift, size_t fixed_taps, size_t nrows, const consts *k,
                          __m256i *y) {
    const size_t taps = fixed_taps ? fixed_taps : r->num_taps;
    const uint8_t *cst = w + r->cst_offset;
    __m256i acc[4][4];
    for (size_t v = 0; v < 4; v++) {
        __m256i s = cst_row(cst, KS_Q8DW_C_BIAS, v);
        for (size_t q = 0; q < nrows; q++)
            acc[q][v] = s;
    }
    KS_UNROLL for (size_t t = 0; t < taps; t++) {
        const uint32_t *s = r->tap[t] + BB * j;
        __m256i x[4];
        for (size_t v = 0; v < 4; v++)
            x[v] = _mm256_loadu_si256((const __m256i *)(s + 8 * v));
        for (size_t q = 0; q < nrows; q++) {
            const uint8_t *wp = w + q * r->set_bytes + t * 4 * BB;
            for (size_t v = 0; v < 4; v++)
                acc[q][v] = _mm256_dpbusd_avx_epi32(
                    acc[q][v], x[v], _mm256_loadu_si256((const __m256i *)(wp + BB * v)));
        }
    }
    for (size_t q = 0; q < nrows; q++)
        y[q] = finish(acc[q][0], acc[q][1], acc[q][2], acc[q][3], cst, out_i8, clamp, no_sign,
                      lshift, k);
}

/* Plain AVX2 (q8_dw.h KS_Q8DW_SIGNED_X): the interleaved bytes are x - 128 as s8 and the weights
 * w - w_zp in [-127, 127]. vpmaddubsw takes u8 x s8 with saturating int16 pair sums, so it gets
 * |x| (<= 128; vpabsb of -128 is 0x80, i.e. 128 as u8) and w with x's sign (vpsignb: |w| <= 127,
 * no overflow; 0 where x is 0): each pair is at most 2 * 128 * 127 = 32512, exact, and
 * vpmaddwd with ones adds the pairs into the 4-row dot product vpdpbusd would give. */
KS_INLINE void block_sx(const ks__q8dw_row *r, size_t j, const uint8_t *w, int out_i8, int clamp,
                        int no_sign, int lshift, size_t fixed_taps, size_t nrows, const consts *k,
                        __m256i *y) {
    const size_t taps = fixed_taps ? fixed_taps : r->num_taps;
    const uint8_t *cst = w + r->cst_offset;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[2][4];
    for (size_t v = 0; v < 4; v++) {
        __m256i s = cst_row(cst, KS_Q8DW_C_BIAS, v);
        for (size_t q = 0; q < nrows; q++)
            acc[q][v] = s;
    }
    KS_UNROLL for (size_t t = 0; t < taps; t++) {
        const uint32_t *s = r->tap[t] + BB * j;
        for (size_t v = 0; v < 4; v++) {
            __m256i x = _mm256_loadu_si256((const __m256i *)(s + 8 * v));
            __m256i ax = _mm256_abs_epi8(x);
            for (size_t q = 0; q < nrows; q++) {
                const uint8_t *wp = w + q * r->set_bytes + t * 4 * BB + BB * v;
                __m256i sw = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)wp), x);
                acc[q][v] = _mm256_add_epi32(acc[q][v],
                                             _mm256_madd_epi16(_mm256_maddubs_epi16(ax, sw), ones));
            }
        }
    }
    for (size_t q = 0; q < nrows; q++)
        y[q] = finish(acc[q][0], acc[q][1], acc[q][2], acc[q][3], cst, out_i8, clamp, no_sign,
                      lshift, k);
}

KS_INLINE void store_block(uint8_t *out, size_t j, size_t nb, size_t tail, __m256i b) {
    if (j + 1 < nb) {
        _mm256_storeu_si256((__m256i *)(out + BB * j), b);
        return;
    }
    _Alignas(32) uint8_t last[BB]; /* no byte-masked stores in AVX2 */
    _mm256_store_si256((__m256i *)last, b);
    memcpy(out + BB * j, last, tail);
}

/* Pattern-major, as the AVX-512 kernel: a pattern's weights and constants stay in L1. */
KS_INLINE_VNNI void row_loop(const ks__q8dw_row *r, int out_i8, int clamp, int lshift,
                             size_t fixed_taps, size_t nrows) {
    const size_t nb = r->num_blocks, np = r->num_patterns;
    const size_t row_bytes = (nb - 1) * BB + r->tail_bytes;
    consts k;
    k.gather = _mm256_loadu_si256((const __m256i *)k_gather);
    k.lo = _mm256_set1_epi8((char)r->lo), k.hi = _mm256_set1_epi8((char)r->hi);
    for (size_t p = 0; p < np && p < nb; p++) {
        const uint8_t *w = r->w + p * r->pattern_bytes;
        for (size_t j = p; j < nb; j += np) {
            __m256i y[4];
            block(r, j, w, out_i8, clamp, r->no_sign, lshift, fixed_taps, nrows, &k, y);
            for (size_t q = 0; q < nrows; q++)
                store_block(r->out + q * row_bytes, j, nb, r->tail_bytes, y[q]);
        }
    }
}

KS_INLINE void row_loop_sx(const ks__q8dw_row *r, int out_i8, int clamp, int lshift,
                           size_t fixed_taps, size_t nrows) {
    const size_t nb = r->num_blocks, np = r->num_patterns;
    const size_t row_bytes = (nb - 1) * BB + r->tail_bytes;
    consts k;
    k.gather = _mm256_loadu_si256((const __m256i *)k_gather);
    k.lo = _mm256_set1_epi8((char)r->lo), k.hi = _mm256_set1_epi8((char)r->hi);
    for (size_t p = 0; p < np && p < nb; p++) {
        const uint8_t *w = r->w + p * r->pattern_bytes;
        for (size_t j = p; j < nb; j += np) {
            __m256i y[2];
            block_sx(r, j, w, out_i8, clamp, r->no_sign, lshift, fixed_taps, nrows, &k, y);
            for (size_t q = 0; q < nrows; q++)
                store_block(r->out + q * row_bytes, j, nb, r->tail_bytes, y[q]);
        }
    }
}

#define KS_DISPATCH_ROWS(TAPS)                                                                     \
    do {                                                                                           \
        if (r->num_rows == 4)                                                                      \
            row_loop(r, i8, clamp, 0, TAPS, 4);                                                    \
        else if (r->num_rows == 2)                                                                 \
            row_loop(r, i8, clamp, 0, TAPS, 2);                                                    \
        else                                                                                       \
            row_loop(r, i8, clamp, 0, TAPS, 1);                                                    \
    } while (0)

KS_VNNI static void ks_q8dw_row__avxvnni(const ks__q8dw_row *r) {
    const int i8 = r->out_i8;
    const int clamp = r->lo > (i8 ? -128 : 0) || r->hi < (i8 ? 127 : 255);
    if (r->lshift) { /* left shifts are rare (large real multipliers): generic instances */
        if (r->num_rows == 4)
            row_loop(r, i8, clamp, 1, 0, 4);
        else if (r->num_rows == 2)
            row_loop(r, i8, clamp, 1, 0, 2);
        else
            row_loop(r, i8, clamp, 1, 0, 1);
    } else if (r->num_taps == 3)
        KS_DISPATCH_ROWS(3);
    else if (r->num_taps == 10)
        KS_DISPATCH_ROWS(10);
    else
        KS_DISPATCH_ROWS(0);
    if (r->table) /* fused TABLE form: a pass over the rows while they are in L1 */
        ks__q8_map_bytes_avx2(r->table, r->tscope, r->out, r->out,
                              ((r->num_blocks - 1) * BB + r->tail_bytes) * r->num_rows);
}

static void ks_q8dw_row__avx2(const ks__q8dw_row *r) {
    const int i8 = r->out_i8;
    const int clamp = r->lo > (i8 ? -128 : 0) || r->hi < (i8 ? 127 : 255);
    const size_t nr = r->num_rows;
    if (r->lshift) /* left shifts are rare (large real multipliers): one generic instance */
        row_loop_sx(r, i8, clamp, 1, 0, nr == 2 ? 2 : 1);
    else if (r->num_taps == 3 && nr == 2)
        row_loop_sx(r, i8, clamp, 0, 3, 2);
    else if (r->num_taps == 3)
        row_loop_sx(r, i8, clamp, 0, 3, 1);
    else if (nr == 2)
        row_loop_sx(r, i8, clamp, 0, 0, 2);
    else
        row_loop_sx(r, i8, clamp, 0, 0, 1);
    if (r->table) /* fused TABLE form: a pass over the rows while they are in L1 */
        ks__q8_map_bytes_avx2(r->table, r->tscope, r->out, r->out,
                              ((r->num_blocks - 1) * BB + r->tail_bytes) * r->num_rows);
}

/* ks_q8dw_interleave__avx2 with every byte flipped by 0x80: x - 128 as s8 (KS_Q8DW_SIGNED_X). */
static void ks_q8dw_interleave_sx__avx2(const uint8_t *const rows[4], size_t num_blocks,
                                        uint32_t *dst) {
    interleave4(rows, num_blocks, dst, _mm256_set1_epi8((char)0x80));
}

/* Stride-2 phase split (q8_dw.h) for 8, 16 and multiple-of-32 byte pixels. */
static size_t ks_q8dw_split2__avx2(const uint8_t *src, size_t pairs, size_t c, uint8_t flip,
                                   uint8_t *even, uint8_t *odd) {
    const __m256i f = _mm256_set1_epi8((char)flip);
    size_t i = 0;
    if (c == 8 || c == 16) {
        const size_t per = 32 / c; /* pairs per 64 input bytes */
        for (; i + per <= pairs; i += per) {
            __m256i a = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(src + 2 * i * c)), f);
            __m256i b =
                _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(src + 2 * i * c + 32)), f);
            __m256i e, o;
            if (c == 8) { /* qwords a0 a1 a2 a3, b0 b1 b2 b3 -> a0 a2 b0 b2, a1 a3 b1 b3 */
                e = _mm256_permute4x64_epi64(_mm256_unpacklo_epi64(a, b), 0xD8);
                o = _mm256_permute4x64_epi64(_mm256_unpackhi_epi64(a, b), 0xD8);
            } else {
                e = _mm256_permute2x128_si256(a, b, 0x20);
                o = _mm256_permute2x128_si256(a, b, 0x31);
            }
            _mm256_storeu_si256((__m256i *)(even + i * c), e);
            _mm256_storeu_si256((__m256i *)(odd + i * c), o);
        }
        return i;
    }
    if (c % 32 == 0) {
        for (; i < pairs; i++) {
            for (size_t k = 0; k < c; k += 32) {
                __m256i a = _mm256_loadu_si256((const __m256i *)(src + 2 * i * c + k));
                __m256i b = _mm256_loadu_si256((const __m256i *)(src + (2 * i + 1) * c + k));
                _mm256_storeu_si256((__m256i *)(even + i * c + k), _mm256_xor_si256(a, f));
                _mm256_storeu_si256((__m256i *)(odd + i * c + k), _mm256_xor_si256(b, f));
            }
        }
    }
    return i;
}

/* 2 rows per call at most: 4 would need 16 accumulators, all 16 ymm registers */
static const ks__q8dw_arch k_arch = {BB,
                                     KS_Q8DW_TWO_STEP | KS_Q8DW_LEFT_SHIFT,
                                     2,
                                     ks_q8dw_interleave__avx2,
                                     ks_q8dw_row__avxvnni,
                                     1.8,
                                     ks_q8dw_split2__avx2,
                                     NULL};
static const ks__q8dw_arch k_arch_sx = {BB,
                                        KS_Q8DW_TWO_STEP | KS_Q8DW_SIGNED_X | KS_Q8DW_LEFT_SHIFT,
                                        2,
                                        ks_q8dw_interleave_sx__avx2,
                                        ks_q8dw_row__avx2,
                                        1.8,
                                        ks_q8dw_split2__avx2,
                                        NULL};

static double dwrow_cost(const ks__kernel_ctx *ctx) {
    /* twice the AVX-512 kernel's blocks at the same rate; AVX-512 CPUs pick that one */
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

const ks__impl ks_q8_dwconv__avxvnni_dwrow = {"ks_q8_dwconv__avxvnni_dwrow",
                                              KS_OP_CONV2D,
                                              KS_ISA_AVX2 | KS_ISA_AVX_VNNI,
                                              dwrow_cost,
                                              dwrow_plan,
                                              dwrow_pack,
                                              dwrow_run};

static double dwrow_sx_cost(const ks__kernel_ctx *ctx) {
    return ks__q8dw_cost(ctx, &k_arch_sx);
}
static ks_status dwrow_sx_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__q8dw_plan(ctx, &k_arch_sx, packed_bytes_out);
}
static ks_status dwrow_sx_pack(ks__kernel_ctx *ctx) {
    return ks__q8dw_pack(ctx, &k_arch_sx);
}
static ks_status dwrow_sx_run(ks__kernel_ctx *ctx) {
    return ks__q8dw_run(ctx, &k_arch_sx);
}

const ks__impl ks_q8_dwconv__avx2_dwrow = {"ks_q8_dwconv__avx2_dwrow",
                                           KS_OP_CONV2D,
                                           KS_ISA_AVX2,
                                           dwrow_sx_cost,
                                           dwrow_sx_plan,
                                           dwrow_sx_pack,
                                           dwrow_sx_run};
