/* The AArch64 NEON build of x86/avx2/f32_dwconv.c (depthwise fp32 CONV2D on the portable
 * driver of dwconv.c: the indirect and row schedules): the same source, 4-channel blocks, the
 * taps of 3x3 and 5x5 kept in registers (32 vector registers, as with AVX-512), from the
 * __aarch64__ branches of x86/avx2/f32_vsimd.h and f32_dw_simd.h.
 *
 * Why not a NEON kernel of its own: the earlier one (per-pixel tap pointers built by an AArch64
 * driver for every pixel, 8 channels per step) executed 1.5 instructions per multiply-add under
 * qemu, and its driver's pointer tables another 12 % of BlazeFace's instructions
 * (docs/benchmarks-arm.md); the row schedule reads interior pixels from the input rows. */
/* The pixels the row schedule leaves to tap pointers (each layer's borders) run the generic
 * kernel, weights loaded per tap, instead of 3x3 and 5x5 copies with the weights in registers:
 * the copies were 17 KB of the library (docs/size.md, twenty-ninth session). */
#define KS_DW_NO_TAP_KERNELS 1
#include "../../x86/avx2/f32_dwconv.c"
