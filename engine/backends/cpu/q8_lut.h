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
/* 1 when the running CPU has AVX-512 VBMI (checked once). */
/* y[i] = table[x[i]] for i < n; needs AVX-512 VBMI (x86/avx512/q8_map_vbmi.c). */
void ks__q8_map_bytes_avx512vbmi(const uint8_t *table, const uint8_t *x, uint8_t *y, size_t n);
#endif

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_Q8_LUT_H */
