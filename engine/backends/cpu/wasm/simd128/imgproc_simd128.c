/* WebAssembly SIMD128 fast path of ks_image_to_tensor (bilinear): 4 destination pixels per
 * step, for the editor's module (Effect Studio previews camera frames through the same task code
 * as the SDK). The sampler itself is ../../imgproc_v4.h, shared with the NEON path; this file
 * gives it its vector operations: lane replaces for the missing gather, i8x16.swizzle (zero for
 * an out-of-range index, like NEON's tbl) for the bytes.
 *
 * Exactness: SIMD128 has no fused multiply-add outside relaxed SIMD, which is not used; the
 * clamps are pmin/pmax, whose definitions (b < a ? b : a, a < b ? b : a) are the reference's
 * compare-and-select, signed zeros included; floor is f32x4.floor and the (int32_t) casts
 * i32x4.trunc_sat_f32x4, equal to the C cast on the clamped coordinates. bench/wasm/imgproc_check.c
 * compares the path with the scalar reference bit for bit under Node (scripts/test-editor). */
#include <stdint.h>
#include <wasm_simd128.h>

typedef v128_t v4f;
typedef v128_t v4i;
typedef v128_t v4b;

#define V4_OP __attribute__((always_inline)) static inline

V4_OP v4f v4f_set1(float x) {
    return wasm_f32x4_splat(x);
}
V4_OP v4f v4f_add(v4f a, v4f b) {
    return wasm_f32x4_add(a, b);
}
V4_OP v4f v4f_sub(v4f a, v4f b) {
    return wasm_f32x4_sub(a, b);
}
V4_OP v4f v4f_mul(v4f a, v4f b) {
    return wasm_f32x4_mul(a, b);
}
V4_OP v4f v4f_floor(v4f a) {
    return wasm_f32x4_floor(a);
}
/* v < lo ? lo : v, then v > hi ? hi : v: exactly pmax, then pmin */
V4_OP v4f v4f_clamp(v4f v, v4f lo, v4f hi) {
    return wasm_f32x4_pmin(wasm_f32x4_pmax(v, lo), hi);
}
V4_OP v4f v4f_from_i32(v4i a) {
    return wasm_f32x4_convert_i32x4(a);
}
V4_OP v4f v4f_select(v4i mask, v4f a, v4f b) {
    return wasm_v128_bitselect(a, b, mask);
}
V4_OP v4i v4i_set1(int32_t x) {
    return wasm_i32x4_splat(x);
}
V4_OP v4i v4i_iota(void) {
    return wasm_i32x4_make(0, 1, 2, 3);
}
V4_OP v4i v4i_add(v4i a, v4i b) {
    return wasm_i32x4_add(a, b);
}
V4_OP v4i v4i_mul(v4i a, v4i b) {
    return wasm_i32x4_mul(a, b);
}
V4_OP v4i v4i_and(v4i a, v4i b) {
    return wasm_v128_and(a, b);
}
#define v4i_shr(v, n) wasm_u32x4_shr((v), (n))
V4_OP v4i v4i_eq(v4i a, v4i b) {
    return wasm_i32x4_eq(a, b);
}
V4_OP v4i v4i_gt(v4i a, v4i b) {
    return wasm_i32x4_gt(a, b);
}
V4_OP v4i v4i_le_u(v4i a, v4i b) {
    return wasm_u32x4_le(a, b);
}
V4_OP v4i v4i_min(v4i a, v4i b) {
    return wasm_i32x4_min(a, b);
}
V4_OP v4i v4i_max(v4i a, v4i b) {
    return wasm_i32x4_max(a, b);
}
V4_OP v4i v4i_trunc(v4f a) {
    return wasm_i32x4_trunc_sat_f32x4(a);
}
V4_OP v4i v4i_select(v4i mask, v4i a, v4i b) {
    return wasm_v128_bitselect(a, b, mask);
}
#define V4I_GET(v, lane) wasm_i32x4_extract_lane((v), (lane))
#define V4I_SET(v, lane, x) wasm_i32x4_replace_lane((v), (lane), (x))
V4_OP int v4i_all(v4i mask) {
    return wasm_i32x4_all_true(mask);
}
V4_OP v4b v4b_load(const uint8_t *idx) {
    return wasm_v128_load(idx);
}
V4_OP v4f v4_byte_f(v4i v, v4b idx) {
    return wasm_f32x4_convert_u32x4(wasm_i8x16_swizzle(v, idx));
}
V4_OP void v4_store_f32(float *p, v4f v) {
    wasm_v128_store(p, v);
}
/* r0 g0 b0 r1 | g1 b1 r2 g2 | b2 r3 g3 b3 */
V4_OP void v4_store3_f32(float *p, v4f r, v4f g, v4f b) {
    v128_t rg_lo = wasm_i32x4_shuffle(r, g, 0, 4, 1, 5);  /* r0 g0 r1 g1 */
    v128_t rg_hi = wasm_i32x4_shuffle(r, g, 2, 6, 3, 7);  /* r2 g2 r3 g3 */
    v128_t gb = wasm_i32x4_shuffle(rg_lo, b, 3, 5, 3, 5); /* g1 b1 g1 b1 */
    wasm_v128_store(p, wasm_i32x4_shuffle(rg_lo, b, 0, 1, 4, 2));
    wasm_v128_store(p + 4, wasm_i32x4_shuffle(gb, rg_hi, 0, 1, 4, 5));
    wasm_v128_store(p + 8, wasm_i32x4_shuffle(b, rg_hi, 2, 6, 7, 3));
}
V4_OP uint32_t v4_to_u8x4(v4f v) {
    v128_t i = wasm_i32x4_trunc_sat_f32x4(v);
    v128_t w16 = wasm_u16x8_narrow_i32x4(i, i);
    return (uint32_t)wasm_i32x4_extract_lane(wasm_u8x16_narrow_i16x8(w16, w16), 0);
}

#include "../../imgproc_v4.h"

void ks__imgproc_rows_simd128(const ks__imgproc *p, int32_t y_begin, int32_t y_end) {
    ks__imgproc_v4_rows(p, y_begin, y_end);
}
