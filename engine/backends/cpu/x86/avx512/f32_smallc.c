/* The AVX-512 build of x86/avx2/f32_smallc.c: same source, 16-lane vectors and 28 / 14 pixel
 * tiles selected by this directory's compile flags (see f32_vsimd.h). */
#include "../avx2/f32_smallc.c"
