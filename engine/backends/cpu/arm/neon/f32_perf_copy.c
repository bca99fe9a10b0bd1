/* The AArch64 NEON build of x86/avx2/f32_perf_copy.c: TRANSPOSE and SPLIT of 4-byte elements as
 * strided gathers (perf.h), with 4x4 register transposes. Why: on AArch64 both ran the reference
 * kernels, a quarter of NanoDet-m's emulated run time (its ShuffleNetV2 channel shuffles;
 * docs/benchmarks-arm.md). */
#include "../../x86/avx2/f32_perf_copy.c"
