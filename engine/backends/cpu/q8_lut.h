/* Byte lookup helpers shared by the quantized lookup-table variants (q8_lut.c) and their ISA
 * kernels. Not a published API. */
#ifndef KESTREL_CPU_Q8_LUT_H
#define KESTREL_CPU_Q8_LUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* memcpy of one pixel's or one run's bytes (a depthwise row's pixels, a CONCAT input's channels):
 * the common sizes are fixed-size copies the compiler inlines as a few vector moves, the rest a
 * libc call. */
static inline void ks__q8_copy_run(uint8_t *dst, const uint8_t *src, size_t n) {
    switch (n) {
    case 8:
        memcpy(dst, src, 8);
        break;
    case 16:
        memcpy(dst, src, 16);
        break;
    case 24:
        memcpy(dst, src, 24);
        break;
    case 32:
        memcpy(dst, src, 32);
        break;
    case 48:
        memcpy(dst, src, 48);
        break;
    case 64:
        memcpy(dst, src, 64);
        break;
    default:
        memcpy(dst, src, n);
        break;
    }
}

/* The telescoped form of a 256-byte table for 16-entry shuffle lookups (AVX2 vpshufb): for each
 * half of the table (bytes < 128; bytes >= 128 flipped by 0x80) eight 16-byte rows, row h =
 * table row h XOR table row h + 1 (row 7 as it is). A lookup XORs shuffle(row h, adds_u8(x,
 * 0x70 - 16 h)) over h: rows below x's row see an index >= 0x80 (a zero), rows from x's up see
 * x's low nibble, so the XORs telescope to table[x]. */
static inline void ks__q8_tscope(const uint8_t *table, uint8_t *ts) {
    for (int half = 0; half < 2; half++)
        for (int b = 0; b < 128; b++)
            ts[half * 128 + b] =
                (uint8_t)(table[half * 128 + b] ^ (b < 112 ? table[half * 128 + b + 16] : 0));
}

#if defined(__x86_64__)
/* y[i] = table[x[i]] for i < n, by shuffles from its telescoped form tscope (ks__q8_tscope); needs
 * AVX2 (x86/avx2/q8_map.c). */
void ks__q8_map_bytes_avx2(const uint8_t *table, const uint8_t *tscope, const uint8_t *x,
                           uint8_t *y, size_t n);
/* The same for `rows` runs of n bytes, run r at x + r * x_stride and y + r * y_stride. */
void ks__q8_map_rows_avx2(const uint8_t *table, const uint8_t *tscope, const uint8_t *x,
                          size_t x_stride, uint8_t *y, size_t y_stride, size_t n, size_t rows);
/* y[i] = table[x[i]] for i < n; needs AVX-512 VBMI (x86/avx512/q8_map_vbmi.c). */
void ks__q8_map_bytes_avx512vbmi(const uint8_t *table, const uint8_t *x, uint8_t *y, size_t n);
/* y[i] = scale * (float)(x[i] - zp), x read as I8 when is_i8 else U8; needs AVX-512 F/BW
 * (x86/avx512/q8_elementwise.c). */
void ks__q8_dequantize_avx512(const uint8_t *x, float *y, size_t n, int is_i8, int32_t zp,
                              float scale);
/* The same with AVX2 (x86/avx2/q8_map.c). */
void ks__q8_dequantize_avx2(const uint8_t *x, float *y, size_t n, int is_i8, int32_t zp,
                            float scale);
#endif

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_Q8_LUT_H */
