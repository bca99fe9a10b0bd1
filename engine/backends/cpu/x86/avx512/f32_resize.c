/* The AVX-512 build of x86/avx2/f32_resize.c: same source, 16-lane vectors selected by this
 * directory's compile flags (see f32_vsimd.h), plus the narrow bilinear path it enables. */
#include "../avx2/f32_resize.c"
