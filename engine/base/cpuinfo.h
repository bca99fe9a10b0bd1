/* Run-time CPU feature detection (cpuinfo.c). Not a published API. */
#ifndef KESTREL_BASE_CPUINFO_H
#define KESTREL_BASE_CPUINFO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- ISA features (bits) ---- */
#define KS_ISA_AVX2 (1u << 0)          /* AVX2 + FMA3 + F16C */
#define KS_ISA_AVX512 (1u << 1)        /* AVX-512 F + BW + VL + DQ */
#define KS_ISA_AVX512_VNNI (1u << 2)   /* AVX-512 VNNI */
#define KS_ISA_AVX_VNNI (1u << 3)      /* AVX-VNNI (VEX-encoded) */
#define KS_ISA_AVX512_VBMI (1u << 4)   /* AVX-512 VBMI (byte permutes) */
#define KS_ISA_NEON (1u << 8)          /* AArch64 Advanced SIMD (baseline on arm64) */
#define KS_ISA_NEON_FP16 (1u << 9)     /* FEAT_FP16 arithmetic (asimdhp) */
#define KS_ISA_NEON_DOT (1u << 10)     /* FEAT_DotProd (asimddp) */
#define KS_ISA_WASM_SIMD128 (1u << 16) /* WebAssembly SIMD128 (a build-time choice: -msimd128) */

/* Features of the running CPU, detected once. KS_FORCE_SCALAR=1 in the environment makes this
 * return 0, so only the reference kernels run; KS_ISA_MAX=<level> keeps only the features of its
 * architecture at or below that level (scalar, avx2, avxvnni, avx512, avx512vnni; neon, neonfp16,
 * neondot; simd128), so a machine with AVX-512 can run and time its AVX2 kernels. */
uint32_t ks__cpu_isa(void);
/* The bits KS_ISA_MAX=level keeps (~0u for NULL, "" or an unknown level). */
uint32_t ks__isa_cap(const char *level);
/* CPU model string (x86 brand string, or "aarch64"), static storage. */
const char *ks__cpu_name(void);
/* "avx2,avx512,..." for a bit set, into buf. */
void ks__isa_string(uint32_t isa, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* KESTREL_BASE_CPUINFO_H */
