/* Byte lookup helpers shared by the quantized lookup-table variants (q8_lut.c) and their ISA
 * kernels. Not a published API. */
#ifndef KESTREL_CPU_Q8_LUT_H
#define KESTREL_CPU_Q8_LUT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__x86_64__)
/* y[i] = table[x[i]] for i < n; needs AVX-512 VBMI (x86/avx512/q8_map_vbmi.c). */
void ks__q8_map_bytes_avx512vbmi(const uint8_t *table, const uint8_t *x, uint8_t *y, size_t n);
/* y[i] = scale * (float)(x[i] - zp), x read as I8 when is_i8 else U8; needs AVX-512 F/BW
 * (x86/avx512/q8_elementwise.c). */
void ks__q8_dequantize_avx512(const uint8_t *x, float *y, size_t n, int is_i8, int32_t zp,
                              float scale);
#endif

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_Q8_LUT_H */
