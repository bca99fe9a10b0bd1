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
#include "../../ref/quant_util.h"

typedef struct qpool {
    int64_t n, ih, iw, c, oh, ow, kh, kw, sh, sw, pt, pl;
    int is_i8;
    int32_t lo, hi, empty; /* clamp range; the value of an empty window */
    const uint8_t *x;
    uint8_t *y;
} qpool;

static int64_t lead_pad(int32_t mode, int64_t explicit_lo, int64_t in, int64_t out, int64_t k,
                        int64_t stride) {
    if (mode == KS_PAD_EXPLICIT) return explicit_lo;
    if (mode == KS_PAD_VALID) return 0;
    int64_t total = (out - 1) * stride + k - in;
    if (total < 0) total = 0;
    return mode == KS_PAD_SAME_UPPER ? total / 2 : total - total / 2;
}

static int same_q8(const ks__rt_tensor *x, const ks__rt_tensor *y) {
    if (!x || !y || (x->dtype != KS_DTYPE_U8 && x->dtype != KS_DTYPE_I8) || y->dtype != x->dtype)
        return 0;
    if (!x->quant || !y->quant || x->quant->count != 1 || y->quant->count != 1 ||
        !x->quant->scales || !y->quant->scales || !x->quant->zero_points || !y->quant->zero_points)
        return 0;
    float s = x->quant->scales[0];
    int32_t zp = x->quant->zero_points[0];
    int32_t lo = x->dtype == KS_DTYPE_U8 ? 0 : -128, hi = x->dtype == KS_DTYPE_U8 ? 255 : 127;
    return s > 0.0f && isfinite(s) && zp >= lo && zp <= hi && y->quant->scales[0] == s &&
           y->quant->zero_points[0] == zp;
}

static int describe(const ks__kernel_ctx *ctx, qpool *g) {
    memset(g, 0, sizeof(*g));
    const ks__node *nd = ctx->node;
    if (nd->op != KS_OP_POOL2D || ctx->num_inputs != 1 || ctx->num_outputs != 1) return -1;
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    if (!same_q8(x, y) || x->rank != 4 || y->rank != 4) return -1;
    const int32_t *ip = nd->ip;
    if (ip[9] != 0) return -1; /* max only */
    int32_t act = ip[11];
    if (act != KS_ACT_NONE && act != KS_ACT_RELU && act != KS_ACT_RELU6 &&
        act != KS_ACT_RELU_N1_TO_1)
        return -1;
    g->n = x->dims[0], g->ih = x->dims[1], g->iw = x->dims[2], g->c = x->dims[3];
    g->oh = y->dims[1], g->ow = y->dims[2];
    if (g->n < 1 || g->ih < 1 || g->iw < 1 || g->c < 1 || g->oh < 1 || g->ow < 1 ||
        y->dims[0] != g->n || y->dims[3] != g->c)
        return -1;
    int32_t mode = ip[8];
    if (ip[0] == 0 && ip[1] == 0) {
        g->kh = g->ih, g->kw = g->iw, g->sh = 1, g->sw = 1;
        mode = KS_PAD_VALID;
    } else {
        g->kh = ip[0], g->kw = ip[1];
        g->sh = ip[2] ? ip[2] : 1, g->sw = ip[3] ? ip[3] : 1;
    }
    if (g->kh < 1 || g->kw < 1 || g->sh < 1 || g->sw < 1 || mode < 0 || mode >= KS_PAD_MODE_COUNT ||
        g->kh > (1 << 20) || g->kw > (1 << 20))
        return -1;
    if (mode == KS_PAD_EXPLICIT && (ip[4] < 0 || ip[5] < 0)) return -1;
    g->pt = lead_pad(mode, ip[4], g->ih, g->oh, g->kh, g->sh);
    g->pl = lead_pad(mode, ip[5], g->iw, g->ow, g->kw, g->sw);
    g->is_i8 = x->dtype == KS_DTYPE_I8;
    int32_t zp = y->quant->zero_points[0];
    ks__quant_act_range(act, y->quant->scales[0], zp, y->dtype, &g->lo, &g->hi);
    g->empty = zp < g->lo ? g->lo : (zp > g->hi ? g->hi : zp);
    g->x = (const uint8_t *)x->data;
    g->y = (uint8_t *)y->data;
    return 0;
}

static __mmask64 mask64(int64_t n) {
    return n >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1);
}

static void pool_rows(void *arg, size_t begin, size_t end, uint32_t thread) {
    const qpool *g = (const qpool *)arg;
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
    qpool g;
    if (describe(ctx, &g)) return -1.0;
    return (double)(g.n * g.oh * g.ow) * (double)(g.kh * g.kw) * (double)((g.c + 63) / 64);
}

static ks_status plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    (void)ctx;
    *packed_bytes_out = 0;
    return KS_STATUS_OK;
}

static ks_status run(ks__kernel_ctx *ctx) {
    qpool g;
    if (describe(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 max pool cannot run this node");
    ks__parallel_for(ctx->pool, (size_t)(g.n * g.oh), 1, pool_rows, &g);
    return KS_STATUS_OK;
}

const ks__impl ks_q8_maxpool__avx512 = {
    "ks_q8_maxpool__avx512", KS_OP_POOL2D, KS_ISA_AVX512, cost, plan, NULL, run};
