/* NEON fast path of ks_image_to_tensor (bilinear): 4 destination pixels per step, baseline
 * AArch64 Advanced SIMD (ARMv8.0, so it runs on Cortex-A53). The sampler itself is
 * ../../imgproc_v4.h, shared with the WebAssembly SIMD128 path; this file gives it its vector
 * operations.
 *
 * AArch64 has no gather: each lane's tap bytes come from one scalar load (ldrh/ldr at a lane
 * offset) inserted into a vector, and bytes go to 32-bit lanes with one table lookup (tbl) each.
 *
 * Exactness: separate multiply and add (vmulq/vaddq, never vfmaq; the project compiles C11
 * without extensions, where GCC does not contract across statements, and clang's default
 * contracts only inside one expression), frintm for floorf, fcvtzs for the (int32_t) casts,
 * fmax/fmin for the clamps (they agree with the reference's compare-and-select on every value
 * that reaches them: finite, and -0 only where both give the same result afterwards, e.g. a u8
 * store adding 0.5). Results are bit-identical to the scalar reference (test_simd_matches_scalar
 * and test_simd_grid in engine/tests/unit/test_imgproc.c, under qemu at -cpu max and
 * cortex-a53). */
#include <arm_neon.h>
#include <stdint.h>

typedef float32x4_t v4f;
typedef int32x4_t v4i;
typedef uint8x16_t v4b;

#define V4_OP __attribute__((always_inline)) static inline

V4_OP v4f v4f_set1(float x) {
    return vdupq_n_f32(x);
}
V4_OP v4f v4f_add(v4f a, v4f b) {
    return vaddq_f32(a, b);
}
V4_OP v4f v4f_sub(v4f a, v4f b) {
    return vsubq_f32(a, b);
}
V4_OP v4f v4f_mul(v4f a, v4f b) {
    return vmulq_f32(a, b);
}
V4_OP v4f v4f_floor(v4f a) {
    return vrndmq_f32(a);
}
V4_OP v4f v4f_clamp(v4f v, v4f lo, v4f hi) {
    return vminq_f32(vmaxq_f32(v, lo), hi);
}
V4_OP v4f v4f_from_i32(v4i a) {
    return vcvtq_f32_s32(a);
}
V4_OP v4f v4f_select(v4i mask, v4f a, v4f b) {
    return vbslq_f32(vreinterpretq_u32_s32(mask), a, b);
}
V4_OP v4i v4i_set1(int32_t x) {
    return vdupq_n_s32(x);
}
V4_OP v4i v4i_iota(void) {
    static const int32_t k_iota[4] = {0, 1, 2, 3};
    return vld1q_s32(k_iota);
}
V4_OP v4i v4i_add(v4i a, v4i b) {
    return vaddq_s32(a, b);
}
V4_OP v4i v4i_mul(v4i a, v4i b) {
    return vmulq_s32(a, b);
}
V4_OP v4i v4i_and(v4i a, v4i b) {
    return vandq_s32(a, b);
}
#define v4i_shr(v, n) vreinterpretq_s32_u32(vshrq_n_u32(vreinterpretq_u32_s32(v), (n)))
V4_OP v4i v4i_eq(v4i a, v4i b) {
    return vreinterpretq_s32_u32(vceqq_s32(a, b));
}
V4_OP v4i v4i_gt(v4i a, v4i b) {
    return vreinterpretq_s32_u32(vcgtq_s32(a, b));
}
V4_OP v4i v4i_le_u(v4i a, v4i b) {
    return vreinterpretq_s32_u32(vcleq_u32(vreinterpretq_u32_s32(a), vreinterpretq_u32_s32(b)));
}
V4_OP v4i v4i_min(v4i a, v4i b) {
    return vminq_s32(a, b);
}
V4_OP v4i v4i_max(v4i a, v4i b) {
    return vmaxq_s32(a, b);
}
V4_OP v4i v4i_trunc(v4f a) {
    return vcvtq_s32_f32(a);
}
V4_OP v4i v4i_select(v4i mask, v4i a, v4i b) {
    return vbslq_s32(vreinterpretq_u32_s32(mask), a, b);
}
#define V4I_GET(v, lane) vgetq_lane_s32((v), (lane))
#define V4I_SET(v, lane, x) vsetq_lane_s32((x), (v), (lane))
V4_OP int v4i_all(v4i mask) {
    return vminvq_u32(vreinterpretq_u32_s32(mask)) == 0xffffffffu;
}
V4_OP v4b v4b_load(const uint8_t *idx) {
    return vld1q_u8(idx);
}
V4_OP v4f v4_byte_f(v4i v, v4b idx) {
    return vcvtq_f32_u32(vreinterpretq_u32_u8(vqtbl1q_u8(vreinterpretq_u8_s32(v), idx)));
}
V4_OP void v4_store_f32(float *p, v4f v) {
    vst1q_f32(p, v);
}
V4_OP void v4_store3_f32(float *p, v4f r, v4f g, v4f b) {
    float32x4x3_t v3 = {{r, g, b}};
    vst3q_f32(p, v3);
}
V4_OP uint32_t v4_to_u8x4(v4f v) {
    uint16x4_t w16 = vmovn_u32(vreinterpretq_u32_s32(vcvtq_s32_f32(v)));
    return vget_lane_u32(vreinterpret_u32_u8(vmovn_u16(vcombine_u16(w16, w16))), 0);
}

#include "../../imgproc_v4.h"

void ks__imgproc_rows_neon(const ks__imgproc *p, int32_t y_begin, int32_t y_end) {
    ks__imgproc_v4_rows(p, y_begin, y_end);
}
