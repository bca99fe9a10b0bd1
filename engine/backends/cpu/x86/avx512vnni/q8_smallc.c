/* Small-channel quantized CONV2D microkernels for AVX-512 VNNI (q8_smallc.h).
 *
 * WIDE: 8 output pixels per tile, one accumulator each (two above 16 channels, channels in
 * lanes); per 4-byte group of a kernel row, one weight vector load feeds 8 vpdpbusd whose u8
 * operand is a dword broadcast straight from the padded input (a memory operand). PAIR: 8
 * accumulators of two pixels each; the operand is a qword broadcast of the pair's interleaved
 * group. Zen 4 runs one 512-bit vpdpbusd per cycle, so a WIDE 3x3 stem is bound by them.
 *
 * The epilogue requantizes in registers with per-lane constants held for the whole call (the
 * vectorized TFLite rule of x86/avx512vnni/q8_gemm.c, static there: requant_lanes is a copy).
 * Fused nodes stage a tile's intermediate bytes (<= 256, in L1) and finish them in one pass: the
 * output TABLE with 64-byte VBMI permutes, the residual ADD with the driver's byte-pair table
 * (measured against the in-register ADD of q8_gemm.c, a gather, and a mix: fastest on Zen 4),
 * except PAIR nodes with 8 channels on VBMI CPUs, which do the ADD in registers with byte-plane
 * lookups (pair_planes below, ~2x faster on those nodes).
 */
#include <immintrin.h>
#include <string.h>

#include "../../q8_smallc.h"

#define TILE 8

/* A hint for gcc; clang unrolls the constant-count instances by itself, and its "unroll" pragma
 * fails (-Wpass-failed, an error with -Werror) on the runtime-count ones under the sanitizers. */
#if defined(__clang__)
#define KS_UNROLL
#else
#define KS_UNROLL _Pragma("GCC unroll 16")
#endif
#define KS_INLINE static inline __attribute__((always_inline))

/* Everything the epilogue needs, loaded once per call. */
typedef struct epi {
    __m512i start, mult, mult_odd, lsh, rsh, mask, half;
    __m512i zp, lo, hi;
    int any_lshift;
    const ks__q8_fused *fused;
    const uint8_t *add_table;
} epi;

/* The constants of lanes [16 v, 16 v + 16). */
static void epi_load(const ks__q8sc_args *a, size_t v, epi *e) {
    const int32_t *h = a->hdr + v * 16;
    const size_t n = a->lanes;
    e->start = _mm512_loadu_si512(h + KS_Q8SC_HDR_START * n);
    e->mult = _mm512_loadu_si512(h + KS_Q8SC_HDR_MULT * n);
    e->mult_odd = _mm512_srli_epi64(e->mult, 32);
    e->lsh = _mm512_loadu_si512(h + KS_Q8SC_HDR_LSHIFT * n);
    e->rsh = _mm512_loadu_si512(h + KS_Q8SC_HDR_RSHIFT * n);
    e->mask = _mm512_loadu_si512(h + KS_Q8SC_HDR_RMASK * n);
    e->half = _mm512_srli_epi32(e->mask, 1);
    e->zp = _mm512_set1_epi32(a->out_zp);
    e->lo = _mm512_set1_epi32(a->lo);
    e->hi = _mm512_set1_epi32(a->hi);
    e->any_lshift = a->any_lshift;
    e->fused = a->fused;
    e->add_table = a->add_table;
}

/* TFLite MultiplyByQuantizedMultiplier with per-lane constants (see q8_gemm.c requant). */
KS_INLINE __m512i requant_lanes(__m512i v, const epi *e) {
    const __m512i nudge = _mm512_set1_epi64(1LL << 30);
    if (e->any_lshift) v = _mm512_sllv_epi32(v, e->lsh);
    __m512i even = _mm512_add_epi64(_mm512_mul_epi32(v, e->mult), nudge);
    __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(v, 32), e->mult_odd), nudge);
    /* Bits 31..62 of each 64-bit sum: the even ones shifted down, the odd ones moved up. */
    __m512i high = _mm512_mask_blend_epi32((__mmask16)0xAAAA, _mm512_srli_epi64(even, 31),
                                           _mm512_slli_epi64(odd, 1));
    __m512i rem = _mm512_and_si512(high, e->mask);
    __m512i thr = _mm512_sub_epi32(e->half, _mm512_srai_epi32(high, 31));
    __m512i res = _mm512_srav_epi32(high, e->rsh);
    __mmask16 up = _mm512_cmpgt_epi32_mask(rem, thr);
    return _mm512_mask_add_epi32(res, up, res, _mm512_set1_epi32(1));
}

/* The 16 bytes of accumulator v (lanes in output order): the output, or for fused nodes the
 * intermediate, which fused_pass finishes. */
KS_INLINE __m128i finish(__m512i v, const epi *e) {
    v = _mm512_add_epi32(requant_lanes(_mm512_add_epi32(v, e->start), e), e->zp);
    v = _mm512_min_epi32(_mm512_max_epi32(v, e->lo), e->hi);
    return _mm512_cvtepi32_epi8(v);
}

/* y = table[stage] over n bytes with AVX-512 VBMI permutes (two 128-entry halves). */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi"))) static void
table_pass_vbmi(const uint8_t *table, const uint8_t *stage, uint8_t *y, size_t n) {
    const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
    const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
    for (size_t i = 0; i < n; i += 64) {
        __mmask64 m = n - i >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (n - i)) - 1);
        __m512i v = _mm512_maskz_loadu_epi8(m, stage + i);
        __m512i lo = _mm512_permutex2var_epi8(t0, v, t1);
        __m512i hi = _mm512_permutex2var_epi8(t2, v, t3);
        _mm512_mask_storeu_epi8(y + i, m, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
    }
}

/* Finishes n staged intermediate bytes of a fused node into y (res: the residual at y). The
 * residual ADD is one byte of the driver's pair table per output: scalar loads beat a 16-lane
 * gather (~20 cycles on Zen 4) and the three vector requantizations of the ADD. */
static void fused_pass(const epi *e, const uint8_t *stage, const uint8_t *res, uint8_t *y,
                       size_t n) {
    const ks__q8_fused *f = e->fused;
    if (f->kind == KS_Q8_FUSED_RESIDUAL) {
        /* the indices are built 32 at a time in a vector, so each output costs two loads */
        const uint8_t *table = e->add_table;
        _Alignas(64) uint16_t idx[32];
        size_t i = 0;
        for (; i + 32 <= n; i += 32) {
            __m512i t = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(stage + i)));
            __m512i r = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(res + i)));
            _mm512_store_si512(idx, _mm512_or_si512(_mm512_slli_epi16(t, 8), r));
            KS_UNROLL for (size_t k = 0; k < 32; k++) y[i + k] = table[idx[k]];
        }
        for (; i < n; i++)
            y[i] = table[(size_t)stage[i] << 8 | res[i]];
    } else if (f->vbmi) {
        table_pass_vbmi(f->table, stage, y, n);
    } else {
        for (size_t i = 0; i < n; i++)
            y[i] = f->table[stage[i]];
    }
}

/* T pixels of a WIDE row, NV vectors (16 channels each) per pixel; e: NV epilogues. */
KS_INLINE void wide_tile(const ks__q8sc_args *a, const epi *e, const uint8_t *in, size_t T,
                         size_t NV, uint8_t *y, const uint8_t *res) {
    __m512i acc[TILE][2];
    KS_UNROLL for (size_t t = 0; t < T; t++) {
        acc[t][0] = _mm512_setzero_si512();
        acc[t][1] = _mm512_setzero_si512();
    }
    const int8_t *w = (const int8_t *)(a->hdr + KS_Q8SC_HDR_ROWS * a->lanes);
    const size_t groups = a->groups, sx = a->sx;
    const __m512i flip = _mm512_set1_epi32((int32_t)a->flip);
    for (size_t r = 0; r < a->kh; r++) {
        const uint8_t *row = in + r * a->row_bytes;
        const int8_t *wr = w + r * groups * 64 * NV;
        const uint8_t *px[TILE];
        KS_UNROLL for (size_t t = 0; t < T; t++) px[t] = row + t * sx;
        for (size_t g = 0; g < groups; g++) {
            const __m512i w0 = _mm512_loadu_si512(wr + g * 64 * NV);
            const __m512i w1 = NV == 2 ? _mm512_loadu_si512(wr + g * 128 + 64) : w0;
            KS_UNROLL for (size_t t = 0; t < T; t++) {
                int32_t d;
                __builtin_memcpy(&d, px[t] + 4 * g, 4);
                __m512i b = _mm512_set1_epi32(d);
                if (a->flip) b = _mm512_xor_si512(b, flip);
                acc[t][0] = _mm512_dpbusd_epi32(acc[t][0], b, w0);
                if (NV == 2) acc[t][1] = _mm512_dpbusd_epi32(acc[t][1], b, w1);
            }
        }
    }
    const size_t oc = a->oc;
    if (e->fused) {
        /* in order, each 16-byte store only overwrites the previous one's garbage lanes */
        _Alignas(64) uint8_t stage[TILE * 32 + 16];
        KS_UNROLL for (size_t t = 0; t < T; t++) {
            _mm_storeu_si128((__m128i *)(stage + t * oc), finish(acc[t][0], &e[0]));
            if (NV == 2)
                _mm_storeu_si128((__m128i *)(stage + t * oc + 16), finish(acc[t][1], &e[1]));
        }
        fused_pass(e, stage, res, y, T * oc);
        return;
    }
    if (NV == 2) {
        const __mmask16 m1 = (__mmask16)((1u << (oc - 16)) - 1);
        KS_UNROLL for (size_t t = 0; t < T; t++) {
            _mm_storeu_si128((__m128i *)(y + t * oc), finish(acc[t][0], &e[0]));
            _mm_mask_storeu_epi8(y + t * oc + 16, m1, finish(acc[t][1], &e[1]));
        }
        return;
    }
    const __mmask16 m = (__mmask16)((1u << oc) - 1);
    KS_UNROLL for (size_t t = 0; t < T; t++)
        _mm_mask_storeu_epi8(y + t * oc, m, finish(acc[t][0], e));
}

KS_INLINE void wide_row(const ks__q8sc_args *a, const epi *e, const uint8_t *in, size_t count,
                        size_t NV, uint8_t *y, const uint8_t *res) {
    const size_t sx = a->sx, oc = a->oc;
    size_t i = 0;
    for (; i + TILE <= count; i += TILE)
        wide_tile(a, e, in + i * sx, TILE, NV, y + i * oc, res ? res + i * oc : NULL);
    size_t rest = count - i;
    in += i * sx, y += i * oc, res = res ? res + i * oc : NULL;
    switch (rest) {
    case 7:
        wide_tile(a, e, in, 7, NV, y, res);
        break;
    case 6:
        wide_tile(a, e, in, 6, NV, y, res);
        break;
    case 5:
        wide_tile(a, e, in, 5, NV, y, res);
        break;
    case 4:
        wide_tile(a, e, in, 4, NV, y, res);
        break;
    case 3:
        wide_tile(a, e, in, 3, NV, y, res);
        break;
    case 2:
        wide_tile(a, e, in, 2, NV, y, res);
        break;
    case 1:
        wide_tile(a, e, in, 1, NV, y, res);
        break;
    default:
        break;
    }
}

static void ks_q8sc_wide__avx512vnni(const ks__q8sc_args *a, const uint8_t *in, size_t count,
                                     uint8_t *y, const uint8_t *res) {
    epi e[2];
    epi_load(a, 0, &e[0]);
    if (a->lanes == 32) {
        epi_load(a, 1, &e[1]);
        wide_row(a, e, in, count, 2, y, res);
    } else {
        wide_row(a, e, in, count, 1, y, res);
    }
}

/* V vectors (2V pixels, the last one absent when `odd`) of a PAIR run. */
KS_INLINE void pair_tile(const ks__q8sc_args *a, const epi *e, const uint8_t *in, size_t V, int odd,
                         uint8_t *y, const uint8_t *res) {
    __m512i acc[TILE];
    KS_UNROLL for (size_t t = 0; t < V; t++) acc[t] = _mm512_setzero_si512();
    const int8_t *w = (const int8_t *)(a->hdr + KS_Q8SC_HDR_ROWS * 16);
    const size_t groups = a->groups;
    for (size_t g = 0; g < groups; g++) {
        const __m512i wv = _mm512_loadu_si512(w + g * 64);
        KS_UNROLL for (size_t t = 0; t < V; t++) {
            long long d;
            __builtin_memcpy(&d, in + (t * groups + g) * 8, 8);
            acc[t] = _mm512_dpbusd_epi32(acc[t], _mm512_set1_epi64(d), wv);
        }
    }
    /* lane 2c + j (pixel j, channel c) -> lane 8j + c */
    const __m512i perm = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    const size_t oc = a->oc;
    if (e->fused) {
        _Alignas(64) uint8_t stage[TILE * 16 + 16];
        KS_UNROLL for (size_t t = 0; t < V; t++) {
            __m128i b = finish(_mm512_permutexvar_epi32(perm, acc[t]), e);
            _mm_storeu_si128((__m128i *)(stage + 2 * t * oc), b);
            if (oc < 8)
                _mm_storeu_si128((__m128i *)(stage + (2 * t + 1) * oc), _mm_bsrli_si128(b, 8));
        }
        fused_pass(e, stage, res, y, (2 * V - (size_t)odd) * oc);
        return;
    }
    if (oc == 8) {
        KS_UNROLL for (size_t t = 0; t < V; t++) {
            const __mmask16 m = odd && t + 1 == V ? (__mmask16)0x00FF : (__mmask16)0xFFFF;
            _mm_mask_storeu_epi8(y + t * 16, m, finish(_mm512_permutexvar_epi32(perm, acc[t]), e));
        }
        return;
    }
    const __mmask16 m = (__mmask16)((1u << oc) - 1);
    KS_UNROLL for (size_t t = 0; t < V; t++) {
        __m128i b = finish(_mm512_permutexvar_epi32(perm, acc[t]), e);
        uint8_t *y0 = y + 2 * t * oc;
        _mm_mask_storeu_epi8(y0, m, b);
        if (!(odd && t + 1 == V)) _mm_mask_storeu_epi8(y0 + oc, m, _mm_bsrli_si128(b, 8));
    }
}

/* ---- PAIR, 8 channels, fused residual ADD, AVX-512 VBMI: all in registers (q8_smallc.h) ----
 * Per 8 pixels (4 accumulators, 64 outputs): the intermediate bytes are packed with saturating
 * packs (the clamp to the dtype), the packs' lane order is kept all the way (each ADD input's
 * int32 terms come out of the plane lookup's unpacks in exactly the packed order), and the
 * residual / output bytes are moved into / out of that order by one byte permute each. */

#define KS_VBMI_FN                                                                                 \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi")))

/* 64 raw bytes -> their int32 terms from four 256-byte planes (the low byte first). out[k] lane
 * 4L + i is the term of byte 16L + 4k + i: the order pack4 puts four int32 vectors in. */
KS_VBMI_FN static inline __attribute__((always_inline)) void
plane_lookup(__m512i v, const uint8_t *planes, __m512i out[4]) {
    const __mmask64 top = _mm512_movepi8_mask(v);
    __m512i b[4];
    KS_UNROLL for (int p = 0; p < 4; p++) {
        const uint8_t *t = planes + p * 256;
        __m512i lo = _mm512_permutex2var_epi8(_mm512_loadu_si512(t), v, _mm512_loadu_si512(t + 64));
        __m512i hi =
            _mm512_permutex2var_epi8(_mm512_loadu_si512(t + 128), v, _mm512_loadu_si512(t + 192));
        b[p] = _mm512_mask_blend_epi8(top, lo, hi);
    }
    const __m512i w_lo = _mm512_unpacklo_epi8(b[0], b[1]), w_hi = _mm512_unpackhi_epi8(b[0], b[1]);
    const __m512i u_lo = _mm512_unpacklo_epi8(b[2], b[3]), u_hi = _mm512_unpackhi_epi8(b[2], b[3]);
    out[0] = _mm512_unpacklo_epi16(w_lo, u_lo);
    out[1] = _mm512_unpackhi_epi16(w_lo, u_lo);
    out[2] = _mm512_unpacklo_epi16(w_hi, u_hi);
    out[3] = _mm512_unpackhi_epi16(w_hi, u_hi);
}

/* Four int32 vectors -> 64 bytes, saturated to the dtype: byte 16L + 4k + i = v[k] lane 4L + i. */
KS_INLINE __m512i pack4(const __m512i v[4], int is_signed) {
    const __m512i w01 = _mm512_packs_epi32(v[0], v[1]), w23 = _mm512_packs_epi32(v[2], v[3]);
    return is_signed ? _mm512_packs_epi16(w01, w23) : _mm512_packus_epi16(w01, w23);
}

/* Byte permutes between the packed order and memory (the loops that derive them are in the
 * comments of pair_planes_body / pair_planar_body). */
_Alignas(64) static const uint8_t k_pair_to_packed[64] = {
    0,  8,  1,  9,  16, 24, 17, 25, 32, 40, 33, 41, 48, 56, 49, 57, 2,  10, 3,  11, 18, 26,
    19, 27, 34, 42, 35, 43, 50, 58, 51, 59, 4,  12, 5,  13, 20, 28, 21, 29, 36, 44, 37, 45,
    52, 60, 53, 61, 6,  14, 7,  15, 22, 30, 23, 31, 38, 46, 39, 47, 54, 62, 55, 63};
_Alignas(64) static const uint8_t k_pair_to_memory[64] = {
    0,  2,  16, 18, 32, 34, 48, 50, 1,  3,  17, 19, 33, 35, 49, 51, 4,  6,  20, 22, 36, 38,
    52, 54, 5,  7,  21, 23, 37, 39, 53, 55, 8,  10, 24, 26, 40, 42, 56, 58, 9,  11, 25, 27,
    41, 43, 57, 59, 12, 14, 28, 30, 44, 46, 60, 62, 13, 15, 29, 31, 45, 47, 61, 63};
_Alignas(64) static const uint8_t k_planar_to_packed[2][64] = {
    {0,  8,   16,  24,  1,  9,   17,  25,  2,  10,  18,  26,  3,  11,  19,  27,
     32, 40,  48,  56,  33, 41,  49,  57,  34, 42,  50,  58,  35, 43,  51,  59,
     64, 72,  80,  88,  65, 73,  81,  89,  66, 74,  82,  90,  67, 75,  83,  91,
     96, 104, 112, 120, 97, 105, 113, 121, 98, 106, 114, 122, 99, 107, 115, 123},
    {4,   12,  20,  28,  5,   13,  21,  29,  6,   14,  22,  30,  7,   15,  23,  31,
     36,  44,  52,  60,  37,  45,  53,  61,  38,  46,  54,  62,  39,  47,  55,  63,
     68,  76,  84,  92,  69,  77,  85,  93,  70,  78,  86,  94,  71,  79,  87,  95,
     100, 108, 116, 124, 101, 109, 117, 125, 102, 110, 118, 126, 103, 111, 119, 127}};
_Alignas(64) static const uint8_t k_planar_to_memory[128] = {
    0,   4,   8,   12,  64,  68,  72,  76,  1,   5,   9,   13,  65,  69,  73,  77,  2,   6,   10,
    14,  66,  70,  74,  78,  3,   7,   11,  15,  67,  71,  75,  79,  16,  20,  24,  28,  80,  84,
    88,  92,  17,  21,  25,  29,  81,  85,  89,  93,  18,  22,  26,  30,  82,  86,  90,  94,  19,
    23,  27,  31,  83,  87,  91,  95,  32,  36,  40,  44,  96,  100, 104, 108, 33,  37,  41,  45,
    97,  101, 105, 109, 34,  38,  42,  46,  98,  102, 106, 110, 35,  39,  43,  47,  99,  103, 107,
    111, 48,  52,  56,  60,  112, 116, 120, 124, 49,  53,  57,  61,  113, 117, 121, 125, 50,  54,
    58,  62,  114, 118, 122, 126, 51,  55,  59,  63,  115, 119, 123, 127};

/* The requantization of q8_smallc.h's short_requant nodes, exact for them: xb = x + 2^30 in
 * [0, 2^31) (x the value to requantize), m2 = 2 * mult as unsigned, k64 = 2^31 * (1 - mult)
 * per 64-bit lane, so the 64-bit xb * m2 + k64 = 2 * x * mult + 2^31 and its high dword is the
 * rounding-doubling high product h; then (h + c + (h < 0 ? -1 : 0)) >> right with
 * c = 2^(right - 1) + zp * 2^right is the rounding shift plus the zero point. */
KS_INLINE __m512i requant_short(__m512i xb, __m512i m2, __m512i k64, __m512i c, __m512i rsh) {
    const __m512i even = _mm512_add_epi64(_mm512_mul_epu32(xb, m2), k64);
    const __m512i odd = _mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(xb, 32), m2), k64);
    const __m512i high = _mm512_mask_shuffle_epi32(odd, (__mmask16)0x5555, even, _MM_PERM_DDBB);
    return _mm512_srav_epi32(
        _mm512_add_epi32(_mm512_add_epi32(high, c), _mm512_srai_epi32(high, 31)), rsh);
}

/* The short form's constants for one multiplier (all lanes alike). */
typedef struct short_rq {
    __m512i m2, k64, c, rsh;
} short_rq;

static void short_rq_init(int32_t mult, int32_t right, int32_t zp, short_rq *s) {
    s->m2 = _mm512_set1_epi32((int32_t)(2u * (uint32_t)mult));
    s->k64 = _mm512_set1_epi64((long long)(((int64_t)1 - mult) * ((int64_t)1 << 31)));
    s->c = _mm512_set1_epi32(
        (int32_t)(((int64_t)1 << (right - 1)) + (int64_t)zp * ((int64_t)1 << right)));
    s->rsh = _mm512_set1_epi32(right);
}

/* The ADD's output requantization in the general form (any shifts): one multiplier. */
static void add_out_epi(const ks__q8_fused *f, epi *o) {
    o->mult = o->mult_odd = _mm512_set1_epi32(f->vq[2][0]);
    o->lsh = _mm512_set1_epi32(f->vq[2][1]);
    o->rsh = _mm512_set1_epi32(f->vq[2][2]);
    o->mask = _mm512_set1_epi32(f->vq[2][3]);
    o->half = _mm512_set1_epi32(f->vq[2][4]);
    o->any_lshift = f->vq[2][1] != 0;
}

/* Output bytes of the ADD from the two inputs' biased terms; is_signed: I8. */
KS_INLINE __m512i add_out(__m512i sa, __m512i sb, int short_form, const short_rq *so, const epi *o,
                          __m512i zo, __m512i olo, __m512i ohi, int clamp_o) {
    __m512i q;
    if (short_form) {
        q = requant_short(_mm512_add_epi32(sa, sb), so->m2, so->k64, so->c, so->rsh);
    } else {
        const __m512i x = _mm512_sub_epi32(_mm512_add_epi32(sa, sb), _mm512_set1_epi32(1 << 30));
        q = _mm512_add_epi32(requant_lanes(x, o), zo);
    }
    if (clamp_o) q = _mm512_min_epi32(_mm512_max_epi32(q, olo), ohi);
    return q;
}

/* The PAIR form (any Cin): accumulator lane m is pixel m & 1, channel m >> 1. */
KS_VBMI_FN static inline __attribute__((always_inline)) void
pair_planes_body(const ks__q8sc_args *a, const uint8_t *in, size_t count, uint8_t *y,
                 const uint8_t *res, const int short_form) {
    const ks__q8_fused *f = a->fused;
    epi e;
    epi_load(a, 0, &e);
    /* the header is pixel-major (lane c: channel c); spread it to the accumulator order */
    const __m512i to_acc = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    e.start = _mm512_permutexvar_epi32(to_acc, e.start);
    e.mult = _mm512_permutexvar_epi32(to_acc, e.mult);
    e.mult_odd = _mm512_srli_epi64(e.mult, 32);
    e.lsh = _mm512_permutexvar_epi32(to_acc, e.lsh);
    e.rsh = _mm512_permutexvar_epi32(to_acc, e.rsh);
    e.mask = _mm512_permutexvar_epi32(to_acc, e.mask);
    e.half = _mm512_srli_epi32(e.mask, 1);
    short_rq sc, so;
    memset(&sc, 0, sizeof(sc));
    memset(&so, 0, sizeof(so));
    __m512i init = e.start;
    if (short_form) {
        /* both lanes of a 64-bit lane hold one channel */
        _Alignas(64) int32_t mult[16], right[16];
        _mm512_store_si512(mult, e.mult);
        _mm512_store_si512(right, e.rsh);
        _Alignas(64) int32_t m2[16], c[16];
        _Alignas(64) int64_t k64[8];
        for (int l = 0; l < 16; l++) {
            m2[l] = (int32_t)(2u * (uint32_t)mult[l]);
            c[l] = (int32_t)(((int64_t)1 << (right[l] - 1)) +
                             (int64_t)a->out_zp * ((int64_t)1 << right[l]));
        }
        for (int l = 0; l < 8; l++)
            k64[l] = ((int64_t)1 - mult[2 * l]) * ((int64_t)1 << 31);
        sc.m2 = _mm512_load_si512(m2);
        sc.k64 = _mm512_load_si512(k64);
        sc.c = _mm512_load_si512(c);
        sc.rsh = e.rsh;
        init = _mm512_add_epi32(e.start, _mm512_set1_epi32(1 << 30));
        short_rq_init(f->vq[2][0], f->vq[2][2], f->zo, &so);
    }
    const int is_signed = f->flip != 0;
    /* packs clamp to the dtype; a narrower range needs its own clamp */
    const int clamp_t = is_signed ? (a->lo > -128 || a->hi < 127) : (a->lo > 0 || a->hi < 255);
    const int clamp_o = is_signed ? (f->lo > -128 || f->hi < 127) : (f->lo > 0 || f->hi < 255);
    epi o;
    add_out_epi(f, &o);
    const __m512i zo = _mm512_set1_epi32(f->zo), olo = _mm512_set1_epi32(f->lo),
                  ohi = _mm512_set1_epi32(f->hi);
    /* packed byte b = 16L + 4k + i is accumulator k's lane m = 4L + i: pixel 2k + (m & 1),
     * channel m >> 1, i.e. byte (2k + (m & 1)) * 8 + (m >> 1) of the 8 pixels in memory:
     *   for b in 0..63: k = (b % 16) / 4, m = 4 * (b / 16) + b % 4,
     *       at = (2k + (m & 1)) * 8 + (m >> 1), to_packed[b] = at, to_memory[at] = b */
    const __m512i pin = _mm512_load_si512(k_pair_to_packed);
    const __m512i pout = _mm512_load_si512(k_pair_to_memory);
    const uint8_t *ta = a->add_planes, *tb = a->add_planes + 4 * 256;
    const int8_t *w = (const int8_t *)(a->hdr + KS_Q8SC_HDR_ROWS * 16);
    const size_t groups = a->groups;
    for (size_t i = 0; i < count; i += 8) {
        const size_t npx = count - i < 8 ? count - i : 8;
        const uint8_t *src = in + i / 2 * groups * 8;
        __m512i acc[4];
        KS_UNROLL for (size_t t = 0; t < 4; t++) acc[t] = init;
        const size_t nv = npx == 8 ? 4 : (npx + 1) / 2; /* the pairs present */
        for (size_t g = 0; g < groups; g++) {
            const __m512i wv = _mm512_loadu_si512(w + g * 64);
            KS_UNROLL for (size_t t = 0; t < 4; t++) {
                if (t >= nv) break;
                long long d;
                __builtin_memcpy(&d, src + (t * groups + g) * 8, 8);
                acc[t] = _mm512_dpbusd_epi32(acc[t], _mm512_set1_epi64(d), wv);
            }
        }
        __m512i v[4];
        KS_UNROLL for (size_t t = 0; t < 4; t++) {
            if (short_form)
                v[t] = requant_short(acc[t], sc.m2, sc.k64, sc.c, sc.rsh);
            else
                v[t] = _mm512_add_epi32(requant_lanes(acc[t], &e), e.zp);
            if (clamp_t) v[t] = _mm512_min_epi32(_mm512_max_epi32(v[t], e.lo), e.hi);
        }
        const __mmask64 m = npx == 8 ? ~(__mmask64)0 : ((__mmask64)1 << (8 * npx)) - 1;
        const __m512i r = _mm512_permutexvar_epi8(pin, _mm512_maskz_loadu_epi8(m, res + i * 8));
        __m512i sa[4], sb[4];
        plane_lookup(pack4(v, is_signed), ta, sa);
        plane_lookup(r, tb, sb);
        KS_UNROLL for (size_t k = 0; k < 4; k++) v[k] =
            add_out(sa[k], sb[k], short_form, &so, &o, zo, olo, ohi, clamp_o);
        _mm512_mask_storeu_epi8(y + i * 8, m, _mm512_permutexvar_epi8(pout, pack4(v, is_signed)));
    }
}

/* The planar form (Cin 4 or 8, the input read in place): 16 pixels per step, accumulator c holds
 * channel c of the 16 pixels (one dword broadcast of weights per group), so every requantization
 * constant is uniform per vector. pack4 of channels 0..3 and of 4..7 gives bytes
 * 16L + 4k + i = pixel 4L + i, channel k (+ 4): the residual and output bytes are moved
 * into / out of that order by two-source byte permutes of their 128 bytes. */
KS_VBMI_FN static inline __attribute__((always_inline)) void
pair_planar_body(const ks__q8sc_args *a, const uint8_t *x, size_t count, uint8_t *y,
                 const uint8_t *res, const int short_form) {
    const ks__q8_fused *f = a->fused;
    const size_t ic = a->groups * 4; /* 4 or 8 */
    const int32_t *hdr = a->hdr;
    const int32_t *wd = hdr + KS_Q8SC_HDR_ROWS * 16; /* [group][lane][4 bytes], lane 2c + j */
    /* per channel: accumulator start, requantization constants, weight dwords */
    _Alignas(64) epi ech[8];
    _Alignas(64) short_rq sch[8];
    __m512i init[8], wgt[8][2];
    for (int c = 0; c < 8; c++) {
        const int32_t start = hdr[KS_Q8SC_HDR_START * 16 + c];
        const int32_t mult = hdr[KS_Q8SC_HDR_MULT * 16 + c];
        const int32_t right = hdr[KS_Q8SC_HDR_RSHIFT * 16 + c];
        const int32_t mask = hdr[KS_Q8SC_HDR_RMASK * 16 + c];
        ech[c].lo = _mm512_set1_epi32(a->lo);
        ech[c].hi = _mm512_set1_epi32(a->hi);
        if (short_form) {
            short_rq_init(mult, right, a->out_zp, &sch[c]);
            init[c] = _mm512_set1_epi32((int32_t)((uint32_t)start + (1u << 30)));
        } else {
            ech[c].start = _mm512_set1_epi32(start);
            ech[c].mult = ech[c].mult_odd = _mm512_set1_epi32(mult);
            ech[c].lsh = _mm512_set1_epi32(hdr[KS_Q8SC_HDR_LSHIFT * 16 + c]);
            ech[c].rsh = _mm512_set1_epi32(right);
            ech[c].mask = _mm512_set1_epi32(mask);
            ech[c].half = _mm512_set1_epi32(mask >> 1);
            ech[c].zp = _mm512_set1_epi32(a->out_zp);
            ech[c].any_lshift = a->any_lshift;
            init[c] = ech[c].start;
        }
        for (size_t g = 0; g < 2; g++)
            wgt[c][g] = _mm512_set1_epi32(g < a->groups ? wd[g * 16 + 2 * c] : 0);
    }
    short_rq so;
    memset(&so, 0, sizeof(so));
    if (short_form) short_rq_init(f->vq[2][0], f->vq[2][2], f->zo, &so);
    epi o;
    add_out_epi(f, &o);
    const int is_signed = f->flip != 0;
    const int clamp_t = is_signed ? (a->lo > -128 || a->hi < 127) : (a->lo > 0 || a->hi < 255);
    const int clamp_o = is_signed ? (f->lo > -128 || f->hi < 127) : (f->lo > 0 || f->hi < 255);
    const __m512i zo = _mm512_set1_epi32(f->zo), olo = _mm512_set1_epi32(f->lo),
                  ohi = _mm512_set1_epi32(f->hi);
    const __m512i flip = _mm512_set1_epi8((char)f->flip);
    /* packed byte b of the channel 0..3 (h = 0) / 4..7 (h = 1) vector <-> memory byte of the 16
     * pixels: for b in 0..63, h in 0..1: px = 4 * (b / 16) + b % 4, ch = (b % 16) / 4,
     *     to_packed[h][b] = px * 8 + ch + 4h, to_memory[px * 8 + ch + 4h] = b + 64h */
    const __m512i pin0 = _mm512_load_si512(k_planar_to_packed[0]);
    const __m512i pin1 = _mm512_load_si512(k_planar_to_packed[1]);
    const __m512i pout0 = _mm512_load_si512(k_planar_to_memory);
    const __m512i pout1 = _mm512_load_si512(k_planar_to_memory + 64);
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd =
        _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const uint8_t *ta = a->add_planes, *tb = a->add_planes + 4 * 256;
    for (size_t i = 0; i < count; i += 16) {
        const size_t n = count - i < 16 ? count - i : 16;
        const size_t nx = n * ic, ny = n * 8; /* input / output bytes */
        const __mmask64 mx0 = nx >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << nx) - 1;
        const __mmask64 mx1 = nx >= 128 ? ~(__mmask64)0
                              : nx > 64 ? ((__mmask64)1 << (nx - 64)) - 1
                                        : 0;
        const __mmask64 my0 = ny >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << ny) - 1;
        const __mmask64 my1 = ny >= 128 ? ~(__mmask64)0
                              : ny > 64 ? ((__mmask64)1 << (ny - 64)) - 1
                                        : 0;
        __m512i xg[2];
        const __m512i x0 = _mm512_xor_si512(_mm512_maskz_loadu_epi8(mx0, x + i * ic), flip);
        if (ic == 8) {
            const __m512i x1 =
                _mm512_xor_si512(_mm512_maskz_loadu_epi8(mx1, x + i * ic + 64), flip);
            xg[0] = _mm512_permutex2var_epi32(x0, even, x1);
            xg[1] = _mm512_permutex2var_epi32(x0, odd, x1);
        } else {
            xg[0] = x0;
            xg[1] = _mm512_setzero_si512();
        }
        __m512i v[8];
        KS_UNROLL for (int c = 0; c < 8; c++) {
            __m512i acc = _mm512_dpbusd_epi32(init[c], xg[0], wgt[c][0]);
            if (ic == 8) acc = _mm512_dpbusd_epi32(acc, xg[1], wgt[c][1]);
            if (short_form)
                v[c] = requant_short(acc, sch[c].m2, sch[c].k64, sch[c].c, sch[c].rsh);
            else
                v[c] = _mm512_add_epi32(requant_lanes(acc, &ech[c]), ech[c].zp);
            if (clamp_t) v[c] = _mm512_min_epi32(_mm512_max_epi32(v[c], ech[c].lo), ech[c].hi);
        }
        const __m512i r0 = _mm512_maskz_loadu_epi8(my0, res + i * 8);
        const __m512i r1 = _mm512_maskz_loadu_epi8(my1, res + i * 8 + 64);
        __m512i out[2];
        KS_UNROLL for (int h = 0; h < 2; h++) {
            __m512i sa[4], sb[4];
            plane_lookup(pack4(v + 4 * h, is_signed), ta, sa);
            plane_lookup(_mm512_permutex2var_epi8(r0, h ? pin1 : pin0, r1), tb, sb);
            KS_UNROLL for (int k = 0; k < 4; k++) sa[k] =
                add_out(sa[k], sb[k], short_form, &so, &o, zo, olo, ohi, clamp_o);
            out[h] = pack4(sa, is_signed);
        }
        _mm512_mask_storeu_epi8(y + i * 8, my0, _mm512_permutex2var_epi8(out[0], pout0, out[1]));
        _mm512_mask_storeu_epi8(y + i * 8 + 64, my1,
                                _mm512_permutex2var_epi8(out[0], pout1, out[1]));
    }
}

KS_VBMI_FN static void pair_planes(const ks__q8sc_args *a, const uint8_t *in, size_t count,
                                   uint8_t *y, const uint8_t *res) {
    if (a->planar && a->short_requant)
        pair_planar_body(a, in, count, y, res, 1);
    else if (a->planar)
        pair_planar_body(a, in, count, y, res, 0);
    else if (a->short_requant)
        pair_planes_body(a, in, count, y, res, 1);
    else
        pair_planes_body(a, in, count, y, res, 0);
}

static void ks_q8sc_pair__avx512vnni(const ks__q8sc_args *a, const uint8_t *in, size_t count,
                                     uint8_t *y, const uint8_t *res) {
    if (a->add_planes) {
        pair_planes(a, in, count, y, res);
        return;
    }
    epi e;
    epi_load(a, 0, &e);
    const size_t oc = a->oc, vb = a->groups * 8; /* bytes per pixel pair */
    size_t i = 0;
    for (; i + 2 * TILE <= count; i += 2 * TILE)
        pair_tile(a, &e, in + i / 2 * vb, TILE, 0, y + i * oc, res ? res + i * oc : NULL);
    size_t rest = count - i;
    if (!rest) return;
    in += i / 2 * vb, y += i * oc, res = res ? res + i * oc : NULL;
    const int odd = (int)(rest & 1);
    switch ((rest + 1) / 2) { /* rest is at most 2 * TILE - 1 */
    case 8:
        pair_tile(a, &e, in, 8, odd, y, res);
        break;
    case 7:
        pair_tile(a, &e, in, 7, odd, y, res);
        break;
    case 6:
        pair_tile(a, &e, in, 6, odd, y, res);
        break;
    case 5:
        pair_tile(a, &e, in, 5, odd, y, res);
        break;
    case 4:
        pair_tile(a, &e, in, 4, odd, y, res);
        break;
    case 3:
        pair_tile(a, &e, in, 3, odd, y, res);
        break;
    case 2:
        pair_tile(a, &e, in, 2, odd, y, res);
        break;
    case 1:
        pair_tile(a, &e, in, 1, odd, y, res);
        break;
    default:
        break;
    }
}

/* ks__q8sc_pair_copy_fn: per pair and 8 groups, two masked loads (never past a pixel's Cin
 * bytes) and one two-source dword permute that interleaves them. */
static void ks_q8sc_pair_copy__avx512vnni(const uint8_t *x, size_t npix, size_t ic, size_t groups,
                                          uint8_t flip, size_t q_begin, size_t q_end,
                                          uint8_t *buf) {
    const __m512i idx = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i fv = _mm512_set1_epi8((char)flip);
    size_t q = q_begin;
    if (ic == 4 * groups && (groups == 1 || groups == 2 || groups == 4 || groups == 8)) {
        /* whole pairs in 64-byte blocks: one in-register dword permute per block */
        const size_t per = 8 / groups; /* pairs per block */
        int32_t perm[16];
        for (size_t i = 0; i < 16; i++) {
            size_t block = i / (2 * groups), within = i % (2 * groups);
            perm[i] = (int32_t)(block * 2 * groups + (within % 2) * groups + within / 2);
        }
        const __m512i pv = _mm512_loadu_si512(perm);
        for (; q + per <= q_end && 2 * (q + per) <= npix; q += per) {
            __m512i v = _mm512_loadu_si512(x + 2 * q * ic);
            _mm512_storeu_si512(buf + q * groups * 8,
                                _mm512_xor_si512(_mm512_permutexvar_epi32(pv, v), fv));
        }
    }
    for (; q < q_end; q++) {
        const uint8_t *p0 = x + 2 * q * ic;
        const uint8_t *p1 = 2 * q + 1 < npix ? p0 + ic : p0;
        uint8_t *d = buf + q * groups * 8;
        for (size_t c = 0; c < groups; c += 8) {
            size_t nb = ic - 4 * c < 32 ? ic - 4 * c : 32;
            size_t ng = groups - c < 8 ? groups - c : 8;
            __mmask64 mb = ((__mmask64)1 << nb) - 1;
            __m512i a = _mm512_maskz_loadu_epi8(mb, p0 + 4 * c);
            __m512i b = _mm512_maskz_loadu_epi8(mb, p1 + 4 * c);
            __m512i v = _mm512_xor_si512(_mm512_permutex2var_epi32(a, idx, b), fv);
            _mm512_mask_storeu_epi32(d + c * 8, (__mmask16)((1u << (2 * ng)) - 1), v);
        }
    }
}

static const ks__q8sc_arch k_arch = {1.0, ks_q8sc_wide__avx512vnni, ks_q8sc_pair__avx512vnni,
                                     ks_q8sc_pair_copy__avx512vnni, 1};

static double sc_cost(const ks__kernel_ctx *ctx) {
    return ks__q8sc_cost(ctx, &k_arch);
}
static ks_status sc_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__q8sc_plan(ctx, &k_arch, packed_bytes_out);
}
static ks_status sc_pack(ks__kernel_ctx *ctx) {
    return ks__q8sc_pack(ctx, &k_arch);
}
static ks_status sc_run(ks__kernel_ctx *ctx) {
    return ks__q8sc_run(ctx, &k_arch);
}

const ks__impl ks_q8_conv2d_smallc__avx512vnni = {"ks_q8_conv2d_smallc__avx512vnni",
                                                  KS_OP_CONV2D,
                                                  KS_ISA_AVX512 | KS_ISA_AVX512_VNNI,
                                                  sc_cost,
                                                  sc_plan,
                                                  sc_pack,
                                                  sc_run};
