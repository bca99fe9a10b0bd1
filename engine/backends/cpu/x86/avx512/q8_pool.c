/* Quantized (U8/I8) max pooling for AVX-512BW, bit-exact with the reference (ref/conv.c): the
 * maximum of the window's valid input codes (padding never wins), clamped to the fused
 * activation's quantized range; a window with no valid input gives the output zero point. Only
 * nodes whose input and output quantization are equal (what ks-quant emits for pooling; TFLite
 * requires it) are taken: the reference requantizes otherwise. Channels go 64 bytes at a time
 * with a masked tail; average pooling stays with the reference.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "../../impl.h"
#include "../../q8_pool.h"
#include "../../ref/quant_util.h"

static __mmask64 mask64(int64_t n) {
    return n >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1);
}

static void pool_rows(void *arg, size_t begin, size_t end, uint32_t thread) {
    const ks__q8_pool *g = (const ks__q8_pool *)arg;
    (void)thread;
    /* In the I8 case the codes are flipped to u8 order (x ^ 0x80) so one unsigned max serves. */
    const __m512i flip = _mm512_set1_epi8(g->is_i8 ? (char)0x80 : 0);
    const __m512i lo = _mm512_set1_epi8((char)(uint8_t)((g->lo ^ (g->is_i8 ? 0x80 : 0)) & 0xFF));
    const __m512i hi = _mm512_set1_epi8((char)(uint8_t)((g->hi ^ (g->is_i8 ? 0x80 : 0)) & 0xFF));
    const size_t c = (size_t)g->c;
    for (size_t row = begin; row < end; row++) { /* row = b * oh + oy */
        int64_t b = (int64_t)row / g->oh, oy = (int64_t)row % g->oh;
        int64_t y0 = oy * g->sh - g->pt;
        int64_t vy0 = y0 < 0 ? 0 : y0, vy1 = y0 + g->kh > g->ih ? g->ih : y0 + g->kh;
        const uint8_t *img = g->x + (size_t)(b * g->ih * g->iw) * c;
        uint8_t *out_row = g->y + (size_t)row * (size_t)g->ow * c;
        for (int64_t ox = 0; ox < g->ow; ox++) {
            int64_t x0 = ox * g->sw - g->pl;
            int64_t vx0 = x0 < 0 ? 0 : x0, vx1 = x0 + g->kw > g->iw ? g->iw : x0 + g->kw;
            uint8_t *out = out_row + (size_t)ox * c;
            if (vy1 <= vy0 || vx1 <= vx0) {
                memset(out, (int)(uint8_t)g->empty, c);
                continue;
            }
            for (size_t c0 = 0; c0 < c; c0 += 64) {
                __mmask64 m = mask64((int64_t)(c - c0));
                __m512i acc = _mm512_setzero_si512(); /* u8 order: 0 is the smallest code */
                for (int64_t iy = vy0; iy < vy1; iy++) {
                    const uint8_t *p = img + (size_t)(iy * g->iw + vx0) * c + c0;
                    for (int64_t ix = vx0; ix < vx1; ix++, p += c)
                        acc = _mm512_max_epu8(
                            acc, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, p), flip));
                }
                acc = _mm512_xor_si512(_mm512_min_epu8(_mm512_max_epu8(acc, lo), hi), flip);
                _mm512_mask_storeu_epi8(out + c0, m, acc);
            }
        }
    }
}

static double cost(const ks__kernel_ctx *ctx) {
    ks__q8_pool g;
    if (ks__q8_pool_describe(ctx, &g)) return -1.0;
    return (double)(g.n * g.oh * g.ow) * (double)(g.kh * g.kw) * (double)((g.c + 63) / 64);
}

static ks_status plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    (void)ctx;
    *packed_bytes_out = 0;
    return KS_STATUS_OK;
}

static ks_status run(ks__kernel_ctx *ctx) {
    ks__q8_pool g;
    if (ks__q8_pool_describe(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 max pool cannot run this node");
    ks__parallel_for(ctx->pool, (size_t)(g.n * g.oh), 1, pool_rows, &g);
    return KS_STATUS_OK;
}

const ks__impl ks_q8_maxpool__avx512 = {
    "ks_q8_maxpool__avx512", KS_OP_POOL2D, KS_ISA_AVX512, cost, plan, NULL, run};
