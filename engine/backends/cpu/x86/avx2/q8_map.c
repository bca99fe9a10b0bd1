/* y[i] = table[x[i]] with AVX2 (q8_lut.h ks__q8_map_bytes_avx2): 32 bytes per 16 vpshufb from
 * the table's telescoped form, then 16 bytes, the last n % 16 one at a time from the table. */

#include "../../q8_lut.h"
#include "q8_table.h"

void ks__q8_map_bytes_avx2(const uint8_t *table, const uint8_t *tscope, const uint8_t *x,
                           uint8_t *y, size_t n) {
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
