/* 256-entry byte lookups with AVX2 vpshufb from a table's telescoped form (q8_lut.h
 * ks__q8_tscope): 16 shuffles per vector, for the GEMM epilogues' fused tables (q8_gemm.c) and
 * the lookup-table ops (q8_map.c). */
#ifndef KESTREL_CPU_X86_AVX2_Q8_TABLE_H
#define KESTREL_CPU_X86_AVX2_Q8_TABLE_H

#include <immintrin.h>
#include <stdint.h>

#if defined(__clang__)
#define KS_TABLE_UNROLL _Pragma("unroll")
#else
#define KS_TABLE_UNROLL _Pragma("GCC unroll 8")
#endif

/* table[x] for 16 bytes (qgemm.h ks__q8_fused tscope): 8 shuffles per half of the table. */
static inline __attribute__((always_inline)) __m128i table16(__m128i x, const uint8_t *ts) {
    const __m128i x2 = _mm_xor_si128(x, _mm_set1_epi8((char)0x80));
    __m128i r = _mm_setzero_si128();
    KS_TABLE_UNROLL for (int h = 0; h < 8; h++) {
        const __m128i c = _mm_set1_epi8((char)(0x70 - 16 * h));
        r = _mm_xor_si128(r, _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(ts + 16 * h)),
                                              _mm_adds_epu8(x, c)));
        r = _mm_xor_si128(r, _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(ts + 128 + 16 * h)),
                                              _mm_adds_epu8(x2, c)));
    }
    return r;
}

/* The same for 32 bytes (two tile rows of the GEMM epilogues). */
static inline __attribute__((always_inline)) __m256i table32(__m256i x, const uint8_t *ts) {
    const __m256i x2 = _mm256_xor_si256(x, _mm256_set1_epi8((char)0x80));
    __m256i r = _mm256_setzero_si256();
    KS_TABLE_UNROLL for (int h = 0; h < 8; h++) {
        const __m256i c = _mm256_set1_epi8((char)(0x70 - 16 * h));
        __m256i lo = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(ts + 16 * h)));
        __m256i hi =
            _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(ts + 128 + 16 * h)));
        r = _mm256_xor_si256(r, _mm256_shuffle_epi8(lo, _mm256_adds_epu8(x, c)));
        r = _mm256_xor_si256(r, _mm256_shuffle_epi8(hi, _mm256_adds_epu8(x2, c)));
    }
    return r;
}

#endif /* KESTREL_CPU_X86_AVX2_Q8_TABLE_H */
