/* The WebAssembly SIMD128 build of arm/neon/f32_pool.c (max / average pooling on the 4-lane
 * vector layer): the same source, from the __wasm_simd128__ branch of x86/avx2/f32_vsimd.h. */
#include "../../arm/neon/f32_pool.c"
