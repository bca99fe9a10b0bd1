/* The AVX-512 build of x86/avx2/f32_dw_simd.h: same source, the branch selected by this
 * directory's compile flags (ks_avx512_mask, ks_avx512_act, 16-lane vf). */
#include "../avx2/f32_dw_simd.h"
