/* The WebAssembly SIMD128 build of x86/avx2/f32_softmax.c: the same source with 4-lane vectors,
 * from the __wasm_simd128__ branch of x86/avx2/f32_vsimd.h. */
#include "../../x86/avx2/f32_softmax.c"
