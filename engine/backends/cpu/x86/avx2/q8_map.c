/* y[i] = table[x[i]] with AVX2 (q8_lut.h ks__q8_map_bytes_avx2): 32 bytes per 16 vpshufb from
 * the table's telescoped form, then 16 bytes, the last n % 16 one at a time from the table. */

#include <string.h>

#include "../../q8_lut.h"
#include "q8_table.h"

void ks__q8_map_rows_avx2(const uint8_t *table, const uint8_t *tscope, const uint8_t *x,
                          size_t x_stride, uint8_t *y, size_t y_stride, size_t n, size_t rows) {
    for (size_t r = 0; r < rows; r++, x += x_stride, y += y_stride) {
        size_t i = 0;
        for (; i + 32 <= n; i += 32)
            _mm256_storeu_si256((__m256i *)(y + i),
                                table32(_mm256_loadu_si256((const __m256i *)(x + i)), tscope));
        if (i + 16 <= n) {
            _mm_storeu_si128((__m128i *)(y + i),
                             table16(_mm_loadu_si128((const __m128i *)(x + i)), tscope));
            i += 16;
        }
        for (; i < n; i++)
            y[i] = table[x[i]];
    }
}

void ks__q8_map_bytes_avx2(const uint8_t *table, const uint8_t *tscope, const uint8_t *x,
                           uint8_t *y, size_t n) {
    ks__q8_map_rows_avx2(table, tscope, x, n, y, n, n, 1);
}

/* scale * (float)(x - zp), the AVX-512 kernel's formula (x86/avx512/q8_elementwise.c; q8_lut.c
 * checks it against the reference's table at pack), 8 values per step, the tail from a padded
 * copy. */
static inline __attribute__((always_inline)) __m256 dq8(__m128i b, int is_i8, __m256i zp,
                                                        __m256 s) {
    __m256i v = is_i8 ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(v, zp)), s);
}

void ks__q8_dequantize_avx2(const uint8_t *x, float *y, size_t n, int is_i8, int32_t zp,
                            float scale) {
    const __m256i vzp = _mm256_set1_epi32(zp);
    const __m256 vs = _mm256_set1_ps(scale);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i b = _mm256_loadu_si256((const __m256i *)(x + i));
        __m128i lo = _mm256_castsi256_si128(b), hi = _mm256_extracti128_si256(b, 1);
        _mm256_storeu_ps(y + i, dq8(lo, is_i8, vzp, vs));
        _mm256_storeu_ps(y + i + 8, dq8(_mm_srli_si128(lo, 8), is_i8, vzp, vs));
        _mm256_storeu_ps(y + i + 16, dq8(hi, is_i8, vzp, vs));
        _mm256_storeu_ps(y + i + 24, dq8(_mm_srli_si128(hi, 8), is_i8, vzp, vs));
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, dq8(_mm_loadl_epi64((const __m128i *)(x + i)), is_i8, vzp, vs));
    if (i < n) {
        uint8_t in[8] = {0};
        float out[8];
        memcpy(in, x + i, n - i);
        _mm256_storeu_ps(out, dq8(_mm_loadl_epi64((const __m128i *)in), is_i8, vzp, vs));
        memcpy(y + i, out, (n - i) * sizeof(float));
    }
}
