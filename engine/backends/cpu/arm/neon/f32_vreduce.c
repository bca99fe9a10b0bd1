/* The NEON build of x86/avx2/f32_vreduce.c (REDUCE mean over H, W):
 * the same source with 4-lane vectors, from the __aarch64__ branch of x86/avx2/f32_vsimd.h. */
#include "../../x86/avx2/f32_vreduce.c"
