/* Quantized (U8/I8) max pooling for AVX2, bit-exact with the reference (ref/conv.c): the
 * maximum of the window's valid input codes (padding never wins), clamped to the fused
 * activation's quantized range; a window with no valid input gives the output zero point. Only
 * nodes whose input and output quantization are equal (what ks-quant emits for pooling; TFLite
 * requires it) are taken: the reference requantizes otherwise. Channels go 32 bytes at a time
 * with a scalar tail; average pooling stays with the reference.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "../../impl.h"
#include "../../q8_pool.h"
#include "../../ref/quant_util.h"

/* Max of the window for channels [c0, c0 + 32) in u8 order (I8 codes flipped by 0x80). */
static inline __attribute__((always_inline)) __m256i
window_max32(const ks__q8_pool *g, const uint8_t *img, int64_t vy0, int64_t vy1, int64_t vx0,
             int64_t vx1, size_t c0, __m256i flip) {
    const size_t c = (size_t)g->c;
    __m256i acc = _mm256_setzero_si256();
    for (int64_t iy = vy0; iy < vy1; iy++) {
        const uint8_t *p = img + (size_t)(iy * g->iw + vx0) * c + c0;
        for (int64_t ix = vx0; ix < vx1; ix++, p += c)
            acc = _mm256_max_epu8(acc,
                                  _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)p), flip));
    }
    return acc;
}

static void pool_rows(void *arg, size_t begin, size_t end, uint32_t thread) {
    const ks__q8_pool *g = (const ks__q8_pool *)arg;
    (void)thread;
    const int flipv = g->is_i8 ? 0x80 : 0;
    const __m256i flip = _mm256_set1_epi8((char)flipv);
    const __m256i lo = _mm256_set1_epi8((char)(uint8_t)((g->lo ^ flipv) & 0xFF));
    const __m256i hi = _mm256_set1_epi8((char)(uint8_t)((g->hi ^ flipv) & 0xFF));
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
            size_t c0 = 0;
            for (; c0 + 32 <= c; c0 += 32) {
                __m256i acc = window_max32(g, img, vy0, vy1, vx0, vx1, c0, flip);
                acc = _mm256_xor_si256(_mm256_min_epu8(_mm256_max_epu8(acc, lo), hi), flip);
                _mm256_storeu_si256((__m256i *)(out + c0), acc);
            }
            for (; c0 < c; c0++) { /* channel tail, scalar in u8 order */
                int32_t m = 0;
                for (int64_t iy = vy0; iy < vy1; iy++)
                    for (int64_t ix = vx0; ix < vx1; ix++) {
                        int32_t v = img[(size_t)(iy * g->iw + ix) * c + c0] ^ flipv;
                        m = v > m ? v : m;
                    }
                int32_t l = (g->lo ^ flipv) & 0xFF, h = (g->hi ^ flipv) & 0xFF;
                m = m < l ? l : (m > h ? h : m);
                out[c0] = (uint8_t)(m ^ flipv);
            }
        }
    }
}

static double cost(const ks__kernel_ctx *ctx) {
    ks__q8_pool g;
    if (ks__q8_pool_describe(ctx, &g)) return -1.0;
    return (double)(g.n * g.oh * g.ow) * (double)(g.kh * g.kw) * (double)((g.c + 31) / 32 + 1);
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

const ks__impl ks_q8_maxpool__avx2 = {
    "ks_q8_maxpool__avx2", KS_OP_POOL2D, KS_ISA_AVX2, cost, plan, NULL, run};
