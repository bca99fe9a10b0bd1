/* The NEON build of x86/avx2/f32_deconv_tile.c (transpose conv, kernel == stride):
 * the same source with 4-lane vectors, from the __aarch64__ branch of x86/avx2/f32_vsimd.h. */
#include "../../x86/avx2/f32_deconv_tile.c"
