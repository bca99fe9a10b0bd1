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
 * (measured against the in-register ADD of q8_gemm.c, a gather, and a mix: fastest on Zen 4).
 */
#include <immintrin.h>

#include "../../q8_smallc.h"

#define TILE 8

#if defined(__clang__)
#define KS_UNROLL _Pragma("unroll")
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

static void ks_q8sc_pair__avx512vnni(const ks__q8sc_args *a, const uint8_t *in, size_t count,
                                     uint8_t *y, const uint8_t *res) {
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
                                     ks_q8sc_pair_copy__avx512vnni};

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
