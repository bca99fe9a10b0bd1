/* <immintrin.h> for checking AVX-512 source files on a CPU without AVX-512 (used by
 * bench/x86/check-avx512-emulated.sh only; never part of a build of the SDK): the compiler's own
 * header, then SIMDe's portable AVX-512 (Debian libsimde-dev) under the native names. SIMDe 0.7.4
 * lacks five intrinsics the image sampler uses and gets a sixth wrong (_mm512_roundscale_ps with
 * a rounding mode gave -0.5 for floor(-0.2)); those six are defined here, lane by lane. */
#ifndef KS_SIMDE_AVX512_WRAP
#define KS_SIMDE_AVX512_WRAP
#include_next <immintrin.h>
#include <math.h>
#include <string.h>
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

static inline simde__m512 ks_chk_cvtepi32_ps(simde__m512i a) {
    simde__m512i_private ap = simde__m512i_to_private(a);
    simde__m512_private r;
    for (int i = 0; i < 16; i++)
        r.f32[i] = (float)ap.i32[i];
    return simde__m512_from_private(r);
}

static inline simde__m512i ks_chk_cvttps_epi32(simde__m512 a) {
    simde__m512_private ap = simde__m512_to_private(a);
    simde__m512i_private r;
    for (int i = 0; i < 16; i++)
        r.i32[i] = (int32_t)ap.f32[i]; /* in-range values only, as the sampler's */
    return simde__m512i_from_private(r);
}

static inline simde__m512i ks_chk_i32gather_epi32(simde__m512i idx, const void *base, int scale) {
    simde__m512i_private ip = simde__m512i_to_private(idx);
    simde__m512i_private r;
    for (int i = 0; i < 16; i++)
        memcpy(&r.i32[i], (const char *)base + (long)ip.i32[i] * scale, 4);
    return simde__m512i_from_private(r);
}

static inline simde__m512 ks_chk_roundscale_ps(simde__m512 a, int imm) {
    simde__m512_private ap = simde__m512_to_private(a), r;
    for (int i = 0; i < 16; i++) { /* imm bits 7..4 (kept fraction bits) must be 0 */
        float v = ap.f32[i];
        switch (imm & 3) {
        case 0:
            r.f32[i] = nearbyintf(v);
            break;
        case 1:
            r.f32[i] = floorf(v);
            break;
        case 2:
            r.f32[i] = ceilf(v);
            break;
        default:
            r.f32[i] = truncf(v);
            break;
        }
    }
    return simde__m512_from_private(r);
}

/* masked-off bytes are not read (the sampler relies on it at a plane's end) */
static inline simde__m512i ks_chk_maskz_loadu_epi8(uint64_t k, const void *p) {
    simde__m512i_private r;
    for (int i = 0; i < 64; i++)
        r.u8[i] = (k >> i) & 1 ? ((const uint8_t *)p)[i] : 0;
    return simde__m512i_from_private(r);
}

static inline uint32_t ks_chk_cmpeq_epi16_mask(simde__m512i a, simde__m512i b) {
    simde__m512i_private ap = simde__m512i_to_private(a), bp = simde__m512i_to_private(b);
    uint32_t k = 0;
    for (int i = 0; i < 32; i++)
        k |= (uint32_t)(ap.i16[i] == bp.i16[i]) << i;
    return k;
}

#define _mm512_maskz_loadu_epi8(k, p) ks_chk_maskz_loadu_epi8((k), (p))
#define _mm512_cmpeq_epi16_mask(a, b) ks_chk_cmpeq_epi16_mask((a), (b))
#define _mm512_cvtepi32_ps(a) ks_chk_cvtepi32_ps(a)
#define _mm512_cvttps_epi32(a) ks_chk_cvttps_epi32(a)
#define _mm512_i32gather_epi32(i, b, s) ks_chk_i32gather_epi32((i), (b), (s))
#undef _mm512_roundscale_ps
#define _mm512_roundscale_ps(a, imm) ks_chk_roundscale_ps((a), (imm))
#else
#include_next <immintrin.h> /* SIMDe's own include of it */
#endif
