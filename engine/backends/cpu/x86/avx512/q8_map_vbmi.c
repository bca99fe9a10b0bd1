/* 256-entry byte lookup (y[i] = table[x[i]]) with AVX-512 VBMI: two 128-entry two-source byte
 * permutes (vpermi2b) and a blend on the index's top bit, 64 bytes per step. Used by the portable
 * lookup-table variants (q8_lut.c) when ks__cpu_isa() reports KS_ISA_AVX512_VBMI. This directory
 * is compiled for AVX-512 F/BW/VL/DQ only, so the function carries VBMI as a target attribute. */
#include <immintrin.h>

#include "../../q8_lut.h"

__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void
ks__q8_map_bytes_avx512vbmi(const uint8_t *table, const uint8_t *x, uint8_t *y, size_t n) {
    const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
    const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m512i v = _mm512_loadu_si512(x + i);
        __m512i lo = _mm512_permutex2var_epi8(t0, v, t1);
        __m512i hi = _mm512_permutex2var_epi8(t2, v, t3);
        _mm512_storeu_si512(y + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
    }
    if (i < n) {
        __mmask64 m = ((__mmask64)1 << (n - i)) - 1;
        __m512i v = _mm512_maskz_loadu_epi8(m, x + i);
        __m512i lo = _mm512_permutex2var_epi8(t0, v, t1);
        __m512i hi = _mm512_permutex2var_epi8(t2, v, t3);
        _mm512_mask_storeu_epi8(y + i, m, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
    }
}
