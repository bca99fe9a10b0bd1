/* ARMv8.2 fp16-arithmetic GEMM (8 rows x 8 output channels, FEAT_FP16 / HWCAP_ASIMDHP) for
 * CONV2D (groups 1: 1x1 and any KH x KW through the same packed-A path) and FULLY_CONNECTED,
 * with its driver. Chosen only when the session asks for KS_PRECISION_FP16 (the session keeps
 * KS_ISA_NEON_FP16 out of the features it passes to selection otherwise) and the CPU has the
 * instructions; elsewhere the fp32 NEON variants run.
 *
 * Numbers: weights are rounded to fp16 once, at pack time; activations are rounded to fp16 while
 * a tile of A is packed; products and sums are fp16 FMLAs (8 lanes, twice the fp32 rate) over a
 * block of at most KS_F16_KBLOCK k-steps, after which the fp16 partial sums are widened and added
 * into fp32 accumulators. Bias and the fused activation are fp32. The activations are F32, or
 * F16 in the graphs of the fp16 pass (precision.h: KS_PRECISION_FP16 stores the tensors between
 * fp16 nodes in fp16): then the tile is packed without conversion, and the microkernel adds the
 * bias and the residual (F16, which the F32 form refuses) to its fp32 sums, clamps and rounds them
 * once to fp16; the other activations follow in a pass over the output (f16_post.h). The block
 * bounds both the growth of the fp16 sums (the rounding error of a running sum grows with its
 * magnitude; fp16 has an 11-bit significand) and the risk of overflowing fp16's 65504. Measured on
 * real images under qemu -cpu max (rel L2 of the fp16 session against the fp32 one, all groups-1
 * convs in fp16): with no block (fp16 sums over the whole K, as MNN's fp16 GEMM does) BlazeFace's
 * scores were off by 8.8e-3; blocks of 32 / 16 / 8 k-steps gave 1.8e-3 / 1.8e-3 / 1.5e-3 there
 * and 2.2e-3 / 1.7e-3 / 1.3e-3 on selfie segmentation (0.9e-3 with one k-step per block, i.e.
 * rounding the operands alone). With the activations stored in fp16 between nodes as well (the
 * fp16 pass) the errors add up over the whole depth: on the same photo BlazeFace's scores were
 * 5.0e-3 from fp32 with blocks of 16 and 3.9e-3 with blocks of 8 (selfie segmentation 0.9e-3 /
 * 0.7e-3), hence 8: a flush of 4 instructions per accumulator every 8 FMLAs into it
 * (docs/kernels.md). The world landmarks of hand_landmark_lite stay at 4-6e-3 whatever the block:
 * operand rounding.
 *
 * Layouts:
 *   packed weights: per 8-channel panel, 8 fp32 biases (32 bytes), then K rows of 8 fp16
 *                   weights (K = KH*KW*Cin, taps ky-major then channels, as OHWI stores them),
 *                   zero past the last output channel; panels start 64-byte aligned.
 *   packed A:       per 8-pixel tile, K rows of 8 fp16 values (row k holds input element k of
 *                   the tile's 8 output pixels; padding taps and rows past the last pixel are
 *                   zero), so one 128-bit load feeds the 8 lane-indexed FMLAs of a k-step.
 * Register budget: 8 fp16 accumulators, 16 fp32 sums, 1 A and 1 weight vector: everything stays
 * in registers. An 8 x 16 tile (16 fp16 accumulators) does the same FMLAs with a third fewer
 * loads, but its 32 fp32 sums cannot live beside them, and the flush through the stack cost more
 * than the loads saved (gcc 12: ~150 instructions per block against 312 in the loop).
 */
#include <arm_neon.h>
#include <string.h>

#include "../../ref/conv_internal.h"
#include "../neon/neon_util.h"
#include "f16_post.h"

#define MR 8
#define NR 8
/* fp16 k-steps summed before the partial sums are added into fp32. */
#ifndef KS_F16_KBLOCK
#define KS_F16_KBLOCK 8
#endif
/* Output channels per work item, in panels (as the fp32 driver: bounds streamed weights). */
#define F16_PANELS_PER_ITEM 8
/* Packed weights above this many bytes mean a corrupt or absurd model. */
#define F16_MAX_PACKED_BYTES ((size_t)1 << 32)

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

static size_t round_up(size_t v, size_t m) {
    return (v + m - 1) / m * m;
}

/* One F16 output row of a tile: fp32 sums (bias added) + the F16 residual row (NULL: none), the
 * clamp (and LEAKY_RELU) of `clamp`, rounded once to fp16; nc of 8 columns stored. */
static inline void store_row16(float16_t *dst, float32x4_t v0, float32x4_t v1, const float16_t *res,
                               size_t nc, const neon_act *clamp) {
    float16_t t[NR] = {0};
    if (res) {
        float16x8_t h;
        if (nc == NR) {
            h = vld1q_f16(res);
        } else {
            memcpy(t, res, nc * sizeof(float16_t));
            h = vld1q_f16(t);
        }
        v0 = vaddq_f32(v0, vcvt_f32_f16(vget_low_f16(h)));
        v1 = vaddq_f32(v1, vcvt_high_f32_f16(h));
    }
    float16x8_t o = vcombine_f16(vcvt_f16_f32(neon_act_apply(v0, clamp)),
                                 vcvt_f16_f32(neon_act_apply(v1, clamp)));
    if (nc == NR) {
        vst1q_f16(dst, o);
    } else {
        vst1q_f16(t, o);
        memcpy(dst, t, nc * sizeof(float16_t));
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Microkernel                                                                                 */

/* Rows [0, mr) x columns [0, nc) of one tile. a: the tile's packed A (k rows of 8); w: the
 * panel's k rows of 8 weights; bias: its 8 fp32 biases; c: row r at c + r * c_stride. */
static void ks_f16_gemm__neonfp16_8x8(size_t mr, size_t nc, size_t k, const float16_t *a,
                                      const float16_t *w, const float *bias, void *cv,
                                      size_t c_stride, const neon_act *act, const float *slope,
                                      bool out16, const float16_t *res) {
#define INIT_SUM(r) float32x4_t s##r##0 = vdupq_n_f32(0.0f), s##r##1 = vdupq_n_f32(0.0f);
    ROWS(INIT_SUM)
#undef INIT_SUM
    for (size_t k0 = 0; k0 < k; k0 += KS_F16_KBLOCK) {
        size_t kn = k - k0 < KS_F16_KBLOCK ? k - k0 : KS_F16_KBLOCK;
#define INIT(r) float16x8_t acc##r = vdupq_n_f16(0);
        ROWS(INIT)
#undef INIT
        /* The FMLAs are inline assembly: the by-element fp16 FMLA can only take its lane
         * operand from v0-v15, and gcc 12 met that by copying each lane out with DUP (8 extra
         * instructions per k-step) once the registers filled up. The "x" constraint puts A in
         * v0-v15 and leaves the rest to the compiler: per k-step one 8-row load, one 8-weight
         * load and 8 FMLAs. */
#define FMLA_ROW(r) "fmla %[c" #r "].8h, %[w0].8h, %[va].h[" #r "]\n\t"
#define STEP                                                                                       \
    {                                                                                              \
        const float16x8_t va = vld1q_f16(a), w0 = vld1q_f16(w);                                    \
        a += MR;                                                                                   \
        w += NR;                                                                                   \
        __asm__(ROWS(FMLA_ROW)                                                                     \
                : [c0] "+w"(acc0), [c1] "+w"(acc1), [c2] "+w"(acc2), [c3] "+w"(acc3),              \
                  [c4] "+w"(acc4), [c5] "+w"(acc5), [c6] "+w"(acc6), [c7] "+w"(acc7)               \
                : [va] "x"(va), [w0] "w"(w0));                                                     \
    }
        size_t kk = kn;
        for (; kk >= 2; kk -= 2) {
            STEP STEP
        }
        if (kk)
            STEP
#undef STEP
#undef FMLA_ROW
            /* the block's fp16 sums into the fp32 ones, which stay in registers (8 + 16 + 2) */
#define FLUSH(r)                                                                                   \
    s##r##0 = vaddq_f32(s##r##0, vcvt_f32_f16(vget_low_f16(acc##r)));                              \
    s##r##1 = vaddq_f32(s##r##1, vcvt_high_f32_f16(acc##r));
            ROWS(FLUSH)
#undef FLUSH
    }
    const float32x4_t b0 = vld1q_f32(bias), b1 = vld1q_f32(bias + 4);
    /* + bias and the clamp on the sums in registers; LEAKY_RELU, HARD_SWISH or SILU after them
     * in a pass over the stored rows, where their constants stay in registers (in the store's
     * 16-sum unrolling gcc 12 reloaded SiLU's from memory for every vector: a third of YOLOX's
     * fp16 GEMM instructions). Same operations in the same order. */
    neon_act clamp = *act;
    clamp.post = KS_ACT_NONE; /* the post activation follows below */
    if (out16) {
        /* F16 output (row stride c_stride halves): + bias, + the F16 residual, the clamp (and
         * LEAKY_RELU), rounded once to fp16; anything else is the driver's pass over the whole
         * output (f16_post.h) */
        float16_t *c16 = (float16_t *)cv;
        if (act->post == KS_ACT_LEAKY_RELU) clamp.post = KS_ACT_LEAKY_RELU; /* 3 operations */
#define STORE16(r)                                                                                 \
    if (r < mr) {                                                                                  \
        float32x4_t v0 = vaddq_f32(s##r##0, b0), v1 = vaddq_f32(s##r##1, b1);                      \
        store_row16(c16 + (size_t)(r)*c_stride, v0, v1, res ? res + (size_t)(r)*c_stride : NULL,   \
                    nc, &clamp);                                                                   \
    }
        ROWS(STORE16)
#undef STORE16
        return;
    }
    float *c = (float *)cv;
#define STORE(r)                                                                                   \
    if (r < mr) {                                                                                  \
        float tmp[NR];                                                                             \
        float *cr = nc == NR ? c + (size_t)(r)*c_stride : tmp;                                     \
        vst1q_f32(cr, neon_act_apply(vaddq_f32(s##r##0, b0), &clamp));                             \
        vst1q_f32(cr + 4, neon_act_apply(vaddq_f32(s##r##1, b1), &clamp));                         \
        if (nc != NR) memcpy(c + (size_t)(r)*c_stride, tmp, nc * sizeof(float));                   \
    }
    ROWS(STORE)
#undef STORE
    /* one loop per activation (PRELU's slopes are one too), so that nothing is tested inside
     * it; F0 and F1 take columns 0-3 and 4-7 */
#define POST_ROWS(F0, F1)                                                                          \
    for (size_t r = 0; r < mr; r++) {                                                              \
        float *cr = c + r * c_stride, tmp[NR];                                                     \
        if (nc != NR) memcpy(tmp, cr, nc * sizeof(float));                                         \
        float *v = nc == NR ? cr : tmp;                                                            \
        vst1q_f32(v, F0(vld1q_f32(v)));                                                            \
        vst1q_f32(v + 4, F1(vld1q_f32(v + 4)));                                                    \
        if (nc != NR) memcpy(cr, tmp, nc * sizeof(float));                                         \
    }
    const float32x4_t zero = vdupq_n_f32(0.0f);
    if (slope) { /* PRELU (no other activation then): x >= 0 ? x : slope * x */
        float sl[NR] = {0};
        memcpy(sl, slope, nc * sizeof(float));
        const float32x4_t s0 = vld1q_f32(sl), s1 = vld1q_f32(sl + 4);
#define PRELU0(x) vbslq_f32(vcgeq_f32(x, zero), x, vmulq_f32(s0, x))
#define PRELU1(x) vbslq_f32(vcgeq_f32(x, zero), x, vmulq_f32(s1, x))
        POST_ROWS(PRELU0, PRELU1)
#undef PRELU0
#undef PRELU1
        return;
    }
    const float32x4_t alpha = act->alpha;
#define LEAKY(x) vbslq_f32(vcgeq_f32(x, zero), x, vmulq_f32(x, alpha))
    if (act->post == KS_ACT_SILU)
        POST_ROWS(neon_silu, neon_silu)
    else if (act->post == KS_ACT_HARD_SWISH)
        POST_ROWS(neon_hard_swish, neon_hard_swish)
    else if (act->post == KS_ACT_LEAKY_RELU)
        POST_ROWS(LEAKY, LEAKY)
#undef LEAKY
#undef POST_ROWS
}

/* ------------------------------------------------------------------------------------------ */
/* Direct microkernel: 1x1 convolutions on F16 rows, no packing                                 */

#define DR 7 /* rows: 7 A vectors (v0-v15) + 7 fp16 accumulators + 14 fp32 sums + 1 weight */
#define DROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6)

/* Rows [0, mr) (mr <= 7) x columns [0, nc) of C += A * W for a 1x1 convolution whose A rows are
 * the input pixels themselves (row r at a + r * lda halves, k a multiple of 8): per 8 k-steps one
 * load of 8 consecutive values of each row and 8 of the panel's weight rows, then 56 lane-indexed
 * FMLAs, so A is never packed (packing is an 8 x 8 transpose per 64 values, a fifth of BlazePose
 * lite's fp16 instructions). Each group of 8 k-steps is one fp16 block (KS_F16_KBLOCK 8), added
 * into fp32. Rows past mr read row 0 and are not stored. */
static void ks_f16_gemm_direct__neonfp16_7x8(size_t mr, size_t nc, size_t k, const float16_t *a,
                                             size_t lda, const float16_t *w, const float *bias,
                                             float16_t *c, size_t c_stride, const neon_act *act,
                                             const float16_t *res) {
#define DINIT(r)                                                                                   \
    float32x4_t s##r##0 = vdupq_n_f32(0.0f), s##r##1 = vdupq_n_f32(0.0f);                          \
    const float16_t *a##r = a + (r < mr ? (size_t)(r)*lda : 0);
    DROWS(DINIT)
#undef DINIT
    for (size_t k0 = 0; k0 < k; k0 += 8) {
#define DLOAD(r) const float16x8_t v##r = vld1q_f16(a##r + k0);
        DROWS(DLOAD)
#undef DLOAD
#define DZERO(r) float16x8_t acc##r = vdupq_n_f16(0);
        DROWS(DZERO)
#undef DZERO
#define DFMLA(r, l) "fmla %[c" #r "].8h, %[w0].8h, %[v" #r "].h[" #l "]\n\t"
#define DSTEP(l)                                                                                   \
    do {                                                                                           \
        const float16x8_t w0 = vld1q_f16(w);                                                       \
        w += NR;                                                                                   \
        __asm__(DFMLA(0, l) DFMLA(1, l) DFMLA(2, l) DFMLA(3, l) DFMLA(4, l) DFMLA(5, l)            \
                    DFMLA(6, l)                                                                    \
                : [c0] "+w"(acc0), [c1] "+w"(acc1), [c2] "+w"(acc2), [c3] "+w"(acc3),              \
                  [c4] "+w"(acc4), [c5] "+w"(acc5), [c6] "+w"(acc6)                                \
                : [v0] "x"(v0), [v1] "x"(v1), [v2] "x"(v2), [v3] "x"(v3), [v4] "x"(v4),            \
                  [v5] "x"(v5), [v6] "x"(v6), [w0] "w"(w0));                                       \
    } while (0)
        DSTEP(0);
        DSTEP(1);
        DSTEP(2);
        DSTEP(3);
        DSTEP(4);
        DSTEP(5);
        DSTEP(6);
        DSTEP(7);
#undef DSTEP
#undef DFMLA
#define DFLUSH(r)                                                                                  \
    s##r##0 = vaddq_f32(s##r##0, vcvt_f32_f16(vget_low_f16(acc##r)));                              \
    s##r##1 = vaddq_f32(s##r##1, vcvt_high_f32_f16(acc##r));
        DROWS(DFLUSH)
#undef DFLUSH
    }
    const float32x4_t b0 = vld1q_f32(bias), b1 = vld1q_f32(bias + 4);
    neon_act clamp = *act;
    clamp.post = act->post == KS_ACT_LEAKY_RELU ? KS_ACT_LEAKY_RELU : KS_ACT_NONE;
#define DSTORE(r)                                                                                  \
    if (r < mr)                                                                                    \
        store_row16(c + (size_t)(r)*c_stride, vaddq_f32(s##r##0, b0), vaddq_f32(s##r##1, b1),      \
                    res ? res + (size_t)(r)*c_stride : NULL, nc, &clamp);
    DROWS(DSTORE)
#undef DSTORE
}

/* ------------------------------------------------------------------------------------------ */
/* A packing: fp32 NHWC pixels -> fp16, transposed to k-major rows of 8 pixels                 */

static float16x8_t load_row8(const float *p) {
    if (!p) return vdupq_n_f16(0);
    return vcombine_f16(vcvt_f16_f32(vld1q_f32(p)), vcvt_f16_f32(vld1q_f32(p + 4)));
}

static float16x8_t load_row8_f16(const float16_t *p) {
    if (!p) return vdupq_n_f16(0);
    return vld1q_f16(p);
}

/* One tap: rows[r] points at channel 0 of pixel r's input (NULL: zero), ic channels each, F32
 * or (io16) F16. Writes ic rows of 8 to dst. */
static void pack_tap(const void *const *rows, size_t ic, bool io16, float16_t *dst) {
    size_t c = 0;
    for (; c + 8 <= ic; c += 8) {
        float16x8_t v[8];
        if (io16)
            for (int r = 0; r < 8; r++)
                v[r] = load_row8_f16(rows[r] ? (const float16_t *)rows[r] + c : NULL);
        else
            for (int r = 0; r < 8; r++)
                v[r] = load_row8(rows[r] ? (const float *)rows[r] + c : NULL);
        /* 8x8 transpose of 16-bit lanes: pairs, then 32-bit pairs, then 64-bit halves. */
        float16x8_t a01 = vtrn1q_f16(v[0], v[1]), b01 = vtrn2q_f16(v[0], v[1]);
        float16x8_t a23 = vtrn1q_f16(v[2], v[3]), b23 = vtrn2q_f16(v[2], v[3]);
        float16x8_t a45 = vtrn1q_f16(v[4], v[5]), b45 = vtrn2q_f16(v[4], v[5]);
        float16x8_t a67 = vtrn1q_f16(v[6], v[7]), b67 = vtrn2q_f16(v[6], v[7]);
#define U32(x) vreinterpretq_u32_f16(x)
        uint32x4_t c04 = vtrn1q_u32(U32(a01), U32(a23)), c26 = vtrn2q_u32(U32(a01), U32(a23));
        uint32x4_t c15 = vtrn1q_u32(U32(b01), U32(b23)), c37 = vtrn2q_u32(U32(b01), U32(b23));
        uint32x4_t d04 = vtrn1q_u32(U32(a45), U32(a67)), d26 = vtrn2q_u32(U32(a45), U32(a67));
        uint32x4_t d15 = vtrn1q_u32(U32(b45), U32(b67)), d37 = vtrn2q_u32(U32(b45), U32(b67));
#undef U32
#define U64(x) vreinterpretq_u64_u32(x)
#define OUT(j, lo_or_hi, cv, dv)                                                                   \
    vst1q_f16(dst + (c + j) * 8, vreinterpretq_f16_u64(lo_or_hi(U64(cv), U64(dv))));
        OUT(0, vtrn1q_u64, c04, d04)
        OUT(4, vtrn2q_u64, c04, d04)
        OUT(1, vtrn1q_u64, c15, d15)
        OUT(5, vtrn2q_u64, c15, d15)
        OUT(2, vtrn1q_u64, c26, d26)
        OUT(6, vtrn2q_u64, c26, d26)
        OUT(3, vtrn1q_u64, c37, d37)
        OUT(7, vtrn2q_u64, c37, d37)
#undef OUT
#undef U64
    }
    for (; c < ic; c++)
        for (int r = 0; r < 8; r++)
            dst[c * 8 + r] = !rows[r] ? (float16_t)0
                             : io16   ? ((const float16_t *)rows[r])[c]
                                      : (float16_t)((const float *)rows[r])[c];
}

/* ------------------------------------------------------------------------------------------ */
/* Driver                                                                                      */

typedef struct f16_conv {
    size_t n, ih, iw, ic, oh, ow, oc, kh, kw, sh, sw, dh, dw, pt, pl;
    int32_t act;
    float alpha;
    const float *slope; /* KS_ACT_PRELU: per output channel, applied after the microkernel */
    bool io16;          /* x, y (and the residual) are F16 */
    bool direct;        /* io16 1x1, stride 1, no padding, Cin a multiple of 8: no packing */
    bool res;           /* a fused residual add (F16 only) */
} f16_conv;

/* Probe of the fp32 NEON GEMM's acceptance test (arm_common.c): the fp16 variant runs the nodes
 * that one runs (float activations, constant weights and bias, groups 1) but for a fused
 * residual add, which f16_supported refuses (the fp32 GEMM adds it after its microkernel; this
 * kernel does not). Its mr/nr only bound the packed size there. */
static const ks__arm_gemm_config k_probe = {MR, NR, NULL, 0};

static size_t one_if_zero(int32_t v) {
    return v <= 0 ? 1 : (size_t)v;
}

/* Geometry of a node the probe accepted. */
static void f16_geometry(const ks__kernel_ctx *ctx, f16_conv *g) {
    memset(g, 0, sizeof(*g));
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1], *y = ctx->out[0];
    const int32_t *ip = ctx->node->ip;
    g->alpha = ctx->node->fp[0];
    if (ctx->node->op == KS_OP_FULLY_CONNECTED) {
        g->n = g->ih = g->oh = 1;
        g->ic = (size_t)w->dims[1];
        g->oc = (size_t)w->dims[0];
        g->iw = g->ow = (size_t)ks__rt_numel(x) / g->ic;
        g->kh = g->kw = g->sh = g->sw = g->dh = g->dw = 1;
        g->act = ip[0];
        return;
    }
    g->n = (size_t)x->dims[0], g->ih = (size_t)x->dims[1], g->iw = (size_t)x->dims[2];
    g->ic = (size_t)x->dims[3];
    g->oh = (size_t)y->dims[1], g->ow = (size_t)y->dims[2], g->oc = (size_t)y->dims[3];
    g->kh = (size_t)w->dims[1], g->kw = (size_t)w->dims[2];
    g->sh = one_if_zero(ip[0]), g->sw = one_if_zero(ip[1]);
    g->dh = one_if_zero(ip[2]), g->dw = one_if_zero(ip[3]);
    g->pt = (size_t)ks__conv_lead_pad(ip[8], ip[4], (int64_t)g->ih, (int64_t)g->oh,
                                      (int64_t)((g->kh - 1) * g->dh + 1), (int64_t)g->sh);
    g->pl = (size_t)ks__conv_lead_pad(ip[8], ip[5], (int64_t)g->iw, (int64_t)g->ow,
                                      (int64_t)((g->kw - 1) * g->dw + 1), (int64_t)g->sw);
    g->act = ip[10];
    if (g->act == KS_ACT_PRELU) g->slope = (const float *)ctx->in[4]->data;
}

static size_t panel_bytes(const f16_conv *g) {
    return round_up(NR * sizeof(float) + g->kh * g->kw * g->ic * NR * sizeof(float16_t), 64);
}

/* 0 when too large. */
static size_t packed_bytes(const f16_conv *g) {
    size_t k = g->kh * g->kw * g->ic;
    if (k > F16_MAX_PACKED_BYTES / (NR * sizeof(float16_t))) return 0;
    size_t panels = (g->oc + NR - 1) / NR, pb = panel_bytes(g);
    if (panels > F16_MAX_PACKED_BYTES / pb) return 0;
    return panels * pb;
}

/* Per-thread scratch: the tile's packed A, then 8 row pointers. */
static size_t scratch_stride(const f16_conv *g) {
    return round_up(g->kh * g->kw * g->ic * MR * sizeof(float16_t), 64) + 64;
}

static int f16_supported(const ks__kernel_ctx *ctx, f16_conv *g) {
    const bool io16 = ctx->num_inputs > 0 && ctx->in[0] && ctx->in[0]->dtype == KS_DTYPE_F16;
    const bool res = ctx->num_inputs > 3 && ctx->in[3];
    if (io16 ? !ks__arm_gemm_accepts(ctx, KS_DTYPE_F16) : ks__arm_gemm_cost(ctx, &k_probe) < 0)
        return 0;
    if (res && !io16) return 0; /* F32: the fp32 NEON GEMM takes a fused residual add */
    f16_geometry(ctx, g);
    g->io16 = io16;
    g->res = res;
    g->direct = io16 && g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 &&
                g->pl == 0 && g->ih == g->oh && g->iw == g->ow && g->ic % 8 == 0 &&
                KS_F16_KBLOCK == 8;
    return packed_bytes(g) != 0;
}

static double f16_cost(const ks__kernel_ctx *ctx) {
    f16_conv g;
    if (!f16_supported(ctx, &g)) return -1.0;
    /* In the fp32 variant's unit (one 8x8 fp32 k-step: 16 FMLAs and ~3 loads): an 8x8 fp16
     * k-step is 8 FMLAs and 2 loads plus 1/16 of a 32-instruction flush, ~0.6; packing A costs
     * about half a step per k per tile (convert + transpose). */
    double tiles = (double)round_up(g.n * g.oh * g.ow, MR) / MR;
    double panels = (double)round_up(g.oc, NR) / NR, k = (double)(g.kh * g.kw * g.ic);
    return tiles * k * (0.6 * panels + 0.5);
}

static ks_status f16_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    f16_conv g;
    if (!f16_supported(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "fp16 GEMM cannot run this node");
    if (g.io16) f16_post_plan(g.act);
    ctx->scratch_bytes = scratch_stride(&g) * (ctx->num_threads > 0 ? ctx->num_threads : 1);
    *packed_bytes_out = packed_bytes(&g);
    return KS_STATUS_OK;
}

static ks_status f16_pack(ks__kernel_ctx *ctx) {
    f16_conv g;
    if (!f16_supported(ctx, &g) || !ctx->packed || ctx->packed_bytes < packed_bytes(&g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "fp16 GEMM pack: bad plan");
    const ks__rt_tensor *w = ctx->in[1], *b = ctx->num_inputs > 2 ? ctx->in[2] : NULL;
    const size_t k = g.kh * g.kw * g.ic, pb = panel_bytes(&g);
    char *packed = (char *)ctx->packed;
    memset(packed, 0, ctx->packed_bytes);
    for (size_t co = 0; co < g.oc; co++) {
        char *panel = packed + (co / NR) * pb;
        size_t j = co % NR;
        float *bias = (float *)(void *)panel;
        float16_t *wp = (float16_t *)(void *)(panel + NR * sizeof(float));
        bias[j] = b ? ks__conv_load_f(b, (int64_t)co, (int64_t)co) : 0.0f;
        if (w->dtype == KS_DTYPE_F32) {
            const float *src = (const float *)w->data + co * k;
            for (size_t i = 0; i < k; i++)
                wp[i * NR + j] = (float16_t)src[i];
        } else {
            for (size_t i = 0; i < k; i++)
                wp[i * NR + j] = (float16_t)ks__conv_load_f(w, (int64_t)(co * k + i), (int64_t)co);
        }
    }
    return KS_STATUS_OK;
}

typedef struct f16_job {
    f16_conv g;
    ks__arm_act act;
    neon_act vact;
    const char *x; /* F32 or F16 */
    const char *packed;
    char *y;
    const float16_t *res; /* F16 residual, y's layout */
    char *scratch;
    size_t scratch_stride, panel_bytes, num_panels, num_chunks, num_pixels;
    bool rows_pass; /* a scalar activation left for a pass over stored rows */
} f16_job;

/* Packs the A tile of output pixels [p0, p0 + mr) into a. The pixels' coordinates are found
 * once per tile (one division, then stepping along the row). A full tile inside one output row
 * whose tap lies inside the image for all 8 pixels (most taps of most tiles) gets its 8 row
 * pointers as a series, base + r * sw * ic; the others are tested pixel by pixel. A division
 * per pixel and tap was a fifth of UltraFace's fp16 instructions, the bounds tests per pixel
 * another. */
static void pack_a_tile(const f16_job *j, size_t p0, size_t mr, float16_t *a, const void **rows) {
    const f16_conv *g = &j->g;
    const size_t ih = g->ih, iw = g->iw, pt = g->pt, pl = g->pl;
    const size_t es = g->io16 ? sizeof(float16_t) : sizeof(float), ic = g->ic * es; /* bytes */
    const char *x = j->x;
    size_t img[MR], y0[MR], x0[MR]; /* image, top-left input coordinates (+ pt, pl) */
    size_t ox = p0 % g->ow, rest = p0 / g->ow, oy = rest % g->oh, n = rest / g->oh;
    for (size_t r = 0; r < mr; r++) {
        img[r] = n, y0[r] = oy * g->sh, x0[r] = ox * g->sw;
        if (++ox == g->ow) {
            ox = 0;
            if (++oy == g->oh) oy = 0, n++;
        }
    }
    for (size_t r = mr; r < MR; r++)
        rows[r] = NULL;
    const bool one_row = mr == MR && y0[MR - 1] == y0[0] && img[MR - 1] == img[0];
    const size_t step = g->sw * ic; /* bytes from one pixel's window to the next's */
    for (size_t ky = 0; ky < g->kh; ky++)
        for (size_t kx = 0; kx < g->kw; kx++) {
            float16_t *dst = a + (ky * g->kw + kx) * g->ic * MR;
            size_t iy = y0[0] + ky * g->dh, ix = x0[0] + kx * g->dw;
            if (one_row && iy >= pt && iy - pt < ih && ix >= pl &&
                x0[MR - 1] + kx * g->dw - pl < iw) {
                const char *base = x + ((img[0] * ih + iy - pt) * iw + ix - pl) * ic;
                for (size_t r = 0; r < MR; r++)
                    rows[r] = base + r * step;
            } else {
                for (size_t r = 0; r < mr; r++) {
                    size_t yy = y0[r] + ky * g->dh, xx = x0[r] + kx * g->dw;
                    rows[r] = yy < pt || yy - pt >= ih || xx < pl || xx - pl >= iw
                                  ? NULL
                                  : x + ((img[r] * ih + yy - pt) * iw + xx - pl) * ic;
                }
            }
            pack_tap(rows, g->ic, g->io16, dst);
        }
}

static void f16_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const f16_job *j = (const f16_job *)arg;
    const f16_conv *g = &j->g;
    char *mine = j->scratch + (size_t)thread * j->scratch_stride;
    float16_t *a = (float16_t *)(void *)mine;
    const void **rows = (const void **)(void *)(mine + j->scratch_stride - 64);
    const size_t k = g->kh * g->kw * g->ic;
    size_t built_tile = (size_t)-1;
    for (size_t item = begin; item < end; item++) {
        size_t tile = item / j->num_chunks, chunk = item % j->num_chunks;
        if (g->direct) { /* tiles of DR pixels straight from the input rows */
            size_t p0 = tile * DR, mr = j->num_pixels - p0 < DR ? j->num_pixels - p0 : DR;
            size_t pan0 = chunk * F16_PANELS_PER_ITEM, pan1 = pan0 + F16_PANELS_PER_ITEM;
            if (pan1 > j->num_panels) pan1 = j->num_panels;
            for (size_t pan = pan0; pan < pan1; pan++) {
                size_t c0 = pan * NR, nc = g->oc - c0 < NR ? g->oc - c0 : NR;
                const char *panel = j->packed + pan * j->panel_bytes;
                ks_f16_gemm_direct__neonfp16_7x8(
                    mr, nc, k, (const float16_t *)(const void *)j->x + p0 * g->ic, g->ic,
                    (const float16_t *)(const void *)(panel + NR * sizeof(float)),
                    (const float *)(const void *)panel, (float16_t *)(void *)j->y + p0 * g->oc + c0,
                    g->oc, &j->vact, j->res ? j->res + p0 * g->oc + c0 : NULL);
            }
            continue;
        }
        size_t p0 = tile * MR, mr = j->num_pixels - p0 < MR ? j->num_pixels - p0 : MR;
        if (tile != built_tile) {
            pack_a_tile(j, p0, mr, a, rows);
            built_tile = tile;
        }
        size_t pan0 = chunk * F16_PANELS_PER_ITEM, pan1 = pan0 + F16_PANELS_PER_ITEM;
        if (pan1 > j->num_panels) pan1 = j->num_panels;
        for (size_t pan = pan0; pan < pan1; pan++) {
            size_t c0 = pan * NR, nc = g->oc - c0 < NR ? g->oc - c0 : NR;
            const char *panel = j->packed + pan * j->panel_bytes;
            const float16_t *wp = (const float16_t *)(const void *)(panel + NR * sizeof(float));
            if (g->io16) {
                ks_f16_gemm__neonfp16_8x8(mr, nc, k, a, wp, (const float *)(const void *)panel,
                                          (float16_t *)(void *)j->y + p0 * g->oc + c0, g->oc,
                                          &j->vact, NULL, true,
                                          j->res ? j->res + p0 * g->oc + c0 : NULL);
                continue;
            }
            float *c = (float *)(void *)j->y + p0 * g->oc + c0;
            ks_f16_gemm__neonfp16_8x8(mr, nc, k, a, wp, (const float *)(const void *)panel, c,
                                      g->oc, &j->vact, g->slope ? g->slope + c0 : NULL, false,
                                      NULL);
            if (!j->rows_pass) continue; /* the epilogue did the whole activation */
            for (size_t r = 0; r < mr; r++)
                ks__arm_act_scalar(c + r * g->oc, nc, &j->act);
        }
    }
}

static ks_status f16_run(ks__kernel_ctx *ctx) {
    f16_job j;
    memset(&j, 0, sizeof(j));
    if (!f16_supported(ctx, &j.g) || !ctx->packed || ctx->packed_bytes < packed_bytes(&j.g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "fp16 GEMM run: not planned");
    j.scratch_stride = scratch_stride(&j.g);
    if (!ctx->scratch || ctx->scratch_bytes < j.scratch_stride * ks__pool_threads(ctx->pool))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "fp16 GEMM run: scratch too small");
    ks__arm_act_init(&j.act, j.g.slope ? KS_ACT_NONE : j.g.act, j.g.alpha);
    j.vact = neon_act_load(&j.act);
    j.rows_pass = j.act.scalar_act != KS_ACT_NONE;
    j.x = (const char *)ctx->in[0]->data;
    j.y = (char *)ctx->out[0]->data;
    j.res = j.g.res ? (const float16_t *)ctx->in[3]->data : NULL;
    j.packed = (const char *)ctx->packed;
    j.scratch = (char *)ctx->scratch;
    j.panel_bytes = panel_bytes(&j.g);
    j.num_panels = (j.g.oc + NR - 1) / NR;
    j.num_chunks = (j.num_panels + F16_PANELS_PER_ITEM - 1) / F16_PANELS_PER_ITEM;
    j.num_pixels = j.g.n * j.g.oh * j.g.ow;
    size_t tile_rows = j.g.direct ? DR : MR;
    size_t num_tiles = (j.num_pixels + tile_rows - 1) / tile_rows;
    ks__parallel_for(ctx->pool, num_tiles * j.num_chunks, 1, f16_range, &j);
    if (j.g.io16) { /* what the F16 store does not fuse: SILU, HARD_SWISH, PRELU... */
        ks__arm_act rest = j.act;
        if (rest.post == KS_ACT_LEAKY_RELU) rest.post = KS_ACT_NONE; /* fused */
        ks__f16_post_run(ctx->pool, &rest, j.g.slope, j.g.oc, (float16_t *)(void *)j.y,
                         j.num_pixels * j.g.oc);
    }
    return KS_STATUS_OK;
}

const ks__impl ks_f16_conv__neonfp16_8x8 = {"ks_f16_conv__neonfp16_8x8",
                                            KS_OP_CONV2D,
                                            KS_ISA_NEON | KS_ISA_NEON_FP16,
                                            f16_cost,
                                            f16_plan,
                                            f16_pack,
                                            f16_run};
const ks__impl ks_f16_fc__neonfp16_8x8 = {"ks_f16_fc__neonfp16_8x8",
                                          KS_OP_FULLY_CONNECTED,
                                          KS_ISA_NEON | KS_ISA_NEON_FP16,
                                          f16_cost,
                                          f16_plan,
                                          f16_pack,
                                          f16_run};
