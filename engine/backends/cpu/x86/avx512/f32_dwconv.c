/* The AVX-512 build of x86/avx2/f32_dwconv.c: same source, 16-channel blocks, all taps of 3x3
 * and 5x5 kept in registers and 8-pixel 3x3 row tiles, selected by this directory's compile
 * flags (see f32_vsimd.h). */
#include "../avx2/f32_dwconv.c"
