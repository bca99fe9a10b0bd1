/* Vector-width-generic Winograd transforms (winograd.h), instantiated once per ISA file. Not a
 * published API; include only from an ISA file, after defining:
 *   V                   the vector type, VL floats
 *   V_ZERO() V_SET1(f)  constants
 *   V_LOAD(p) V_STORE(p, v)              full-width unaligned
 *   V_LOADN(p, n) V_STOREN(p, v, n)      first n < VL lanes (others read as 0 / not written)
 *   V_ADD V_SUB V_MUL V_MAX V_MIN        lane-wise
 *   V_FMA(a, b, c)                        a * b + c
 * Defines static functions wino_itx{2,4,6} and wino_otx{2,4,6} matching ks__wino_itx_fn and
 * ks__wino_otx_fn.
 *
 * The 1-D transforms are the factored forms of B^T and A^T for the interpolation points
 * 0, +-1, +-2, +-1/2, inf (F(6)), 0, +-1, +-2, inf (F(4)) and 0, +-1, inf (F(2)), so a row costs
 * about 2 * alpha ops instead of alpha^2. Each is applied to columns, then rows (strides in
 * vectors), of an alpha x alpha tile of channel vectors held in [8][8] arrays.
 */
#ifndef KESTREL_CPU_WINOGRAD_TX_H
#define KESTREL_CPU_WINOGRAD_TX_H

#include "winograd.h"

#define WTX_INLINE static inline __attribute__((always_inline))
#define D_(k) d[(k)*ds]
#define O_(k) o[(k)*os]

/* ---- 1-D B^T (alpha -> alpha) ---- */
WTX_INLINE void wino_bt2(V *o, size_t os, const V *d, size_t ds) {
    O_(0) = V_SUB(D_(0), D_(2));
    O_(1) = V_ADD(D_(1), D_(2));
    O_(2) = V_SUB(D_(2), D_(1));
    O_(3) = V_SUB(D_(1), D_(3));
}

WTX_INLINE void wino_bt4(V *o, size_t os, const V *d, size_t ds) {
    const V c4 = V_SET1(4.0f), cm4 = V_SET1(-4.0f), cm5 = V_SET1(-5.0f), c2 = V_SET1(2.0f);
    V d0 = D_(0), d1 = D_(1), d2 = D_(2), d3 = D_(3), d4 = D_(4), d5 = D_(5);
    V s42 = V_SUB(d4, d2), s31 = V_SUB(d3, d1);
    O_(0) = V_FMA(c4, d0, V_FMA(cm5, d2, d4));
    O_(1) = V_FMA(cm4, V_ADD(d1, d2), V_ADD(d4, d3));
    O_(2) = V_FMA(c4, V_SUB(d1, d2), V_SUB(d4, d3));
    O_(3) = V_FMA(c2, s31, s42);
    O_(4) = V_FMA(V_SET1(-2.0f), s31, s42);
    O_(5) = V_FMA(c4, d1, V_FMA(cm5, d3, d5));
}

WTX_INLINE void wino_bt6(V *o, size_t os, const V *d, size_t ds) {
    V d0 = D_(0), d1 = D_(1), d2 = D_(2), d3 = D_(3), d4 = D_(4), d5 = D_(5), d6 = D_(6),
      d7 = D_(7);
    const V c525 = V_SET1(5.25f), cm425 = V_SET1(-4.25f);
    O_(0) = V_FMA(c525, V_SUB(d4, d2), V_SUB(d0, d6));
    O_(7) = V_FMA(c525, V_SUB(d3, d5), V_SUB(d7, d1));
    V t1 = V_FMA(cm425, d4, V_ADD(d2, d6));
    V t2 = V_FMA(cm425, d3, V_ADD(d1, d5));
    O_(1) = V_ADD(t1, t2);
    O_(2) = V_SUB(t1, t2);
    V t3 = V_FMA(V_SET1(-1.25f), d4, V_FMA(V_SET1(0.25f), d2, d6));
    V t4 = V_FMA(V_SET1(2.0f), d5, V_FMA(V_SET1(-2.5f), d3, V_MUL(V_SET1(0.5f), d1)));
    O_(3) = V_ADD(t3, t4);
    O_(4) = V_SUB(t3, t4);
    V t5 = V_FMA(V_SET1(-5.0f), d4, V_FMA(V_SET1(4.0f), d2, d6));
    V t6 = V_FMA(V_SET1(0.5f), d5, V_FMA(V_SET1(-2.5f), d3, V_MUL(V_SET1(2.0f), d1)));
    O_(5) = V_ADD(t5, t6);
    O_(6) = V_SUB(t5, t6);
}

/* ---- 1-D A^T (alpha -> m) ---- */
WTX_INLINE void wino_at2(V *o, size_t os, const V *d, size_t ds) {
    O_(0) = V_ADD(V_ADD(D_(0), D_(1)), D_(2));
    O_(1) = V_SUB(V_SUB(D_(1), D_(2)), D_(3));
}

WTX_INLINE void wino_at4(V *o, size_t os, const V *d, size_t ds) {
    V a1 = V_ADD(D_(1), D_(2)), b1 = V_SUB(D_(1), D_(2));
    V a2 = V_ADD(D_(3), D_(4)), b2 = V_SUB(D_(3), D_(4));
    O_(0) = V_ADD(V_ADD(D_(0), a1), a2);
    O_(1) = V_FMA(V_SET1(2.0f), b2, b1);
    O_(2) = V_FMA(V_SET1(4.0f), a2, a1);
    O_(3) = V_ADD(V_FMA(V_SET1(8.0f), b2, b1), D_(5));
}

WTX_INLINE void wino_at6(V *o, size_t os, const V *d, size_t ds) {
    V a1 = V_ADD(D_(1), D_(2)), b1 = V_SUB(D_(1), D_(2));
    V a2 = V_ADD(D_(3), D_(4)), b2 = V_SUB(D_(3), D_(4));
    V a3 = V_ADD(D_(5), D_(6)), b3 = V_SUB(D_(5), D_(6));
    O_(0) = V_ADD(V_ADD(D_(0), a1), V_ADD(a2, a3));
    O_(1) = V_FMA(V_SET1(0.5f), b3, V_FMA(V_SET1(2.0f), b2, b1));
    O_(2) = V_FMA(V_SET1(0.25f), a3, V_FMA(V_SET1(4.0f), a2, a1));
    O_(3) = V_FMA(V_SET1(0.125f), b3, V_FMA(V_SET1(8.0f), b2, b1));
    O_(4) = V_FMA(V_SET1(0.0625f), a3, V_FMA(V_SET1(16.0f), a2, a1));
    O_(5) = V_ADD(V_FMA(V_SET1(0.03125f), b3, V_FMA(V_SET1(32.0f), b2, b1)), D_(7));
}

#undef D_
#undef O_

typedef void (*wino_1d_fn)(V *o, size_t os, const V *d, size_t ds);

/* ---- input transform ---- */
WTX_INLINE void wino_itx_body(const size_t A, wino_1d_fn bt, const float *x, int64_t ih, int64_t iw,
                              int64_t c, int64_t y0, int64_t x0, float *v, size_t ps) {
    int ok[8][8];
    for (size_t i = 0; i < A; i++)
        for (size_t k = 0; k < A; k++)
            ok[i][k] = y0 + (int64_t)i >= 0 && y0 + (int64_t)i < ih && x0 + (int64_t)k >= 0 &&
                       x0 + (int64_t)k < iw;
    for (int64_t ch = 0; ch < c; ch += VL) {
        const size_t n = c - ch < VL ? (size_t)(c - ch) : VL;
        V d[8][8], t[8][8];
        for (size_t i = 0; i < A; i++) {
            for (size_t k = 0; k < A; k++) {
                if (!ok[i][k]) {
                    d[i][k] = V_ZERO();
                    continue;
                }
                const float *src = x + ((y0 + (int64_t)i) * iw + x0 + (int64_t)k) * c + ch;
                d[i][k] = n == VL ? V_LOAD(src) : V_LOADN(src, n);
            }
        }
        for (size_t k = 0; k < A; k++)
            bt(&t[0][k], 8, &d[0][k], 8);
        for (size_t i = 0; i < A; i++)
            bt(&d[i][0], 1, &t[i][0], 1);
        for (size_t i = 0; i < A; i++) {
            for (size_t k = 0; k < A; k++) {
                float *dst = v + (i * A + k) * ps + (size_t)ch;
                if (n == VL)
                    V_STORE(dst, d[i][k]);
                else
                    V_STOREN(dst, d[i][k], n);
            }
        }
    }
}

static void wino_itx2(const float *x, int64_t ih, int64_t iw, int64_t c, int64_t y0, int64_t x0,
                      float *v, size_t ps) {
    wino_itx_body(4, wino_bt2, x, ih, iw, c, y0, x0, v, ps);
}
static void wino_itx4(const float *x, int64_t ih, int64_t iw, int64_t c, int64_t y0, int64_t x0,
                      float *v, size_t ps) {
    wino_itx_body(6, wino_bt4, x, ih, iw, c, y0, x0, v, ps);
}
static void wino_itx6(const float *x, int64_t ih, int64_t iw, int64_t c, int64_t y0, int64_t x0,
                      float *v, size_t ps) {
    wino_itx_body(8, wino_bt6, x, ih, iw, c, y0, x0, v, ps);
}

/* ---- output transform ---- */
/* An includer that defines V_SILU(v) (KS_ACT_SILU on one vector) gets SiLU in the vector
 * epilogue; others fall back to the scalar reference formula. */
#if defined(V_SILU)
#define V_HAS_SILU 1
#else
#define V_HAS_SILU 0
#endif
WTX_INLINE V wino_act(V r, const ks__gemm_epilogue *ep) {
    switch (ep->act) {
    case KS_ACT_RELU:
        return V_MAX(r, V_ZERO());
    case KS_ACT_RELU6:
        return V_MIN(V_MAX(r, V_ZERO()), V_SET1(6.0f));
    case KS_ACT_RELU_N1_TO_1:
        return V_MIN(V_MAX(r, V_SET1(-1.0f)), V_SET1(1.0f));
    case KS_ACT_LEAKY_RELU:
        /* max(r, 0) + alpha * min(r, 0) is exactly r or alpha * r. */
        return V_FMA(V_SET1(ep->alpha), V_MIN(r, V_ZERO()), V_MAX(r, V_ZERO()));
#if defined(V_SILU)
    case KS_ACT_SILU:
        return V_SILU(r);
#endif
    default:
        return r;
    }
}

WTX_INLINE void wino_otx_body(const size_t A, const size_t M, wino_1d_fn at, const float *m,
                              size_t ps, int64_t c, const float *bias, float *y, const float *res,
                              int64_t oh, int64_t ow, int64_t oy0, int64_t ox0,
                              const ks__gemm_epilogue *ep) {
    const size_t mh = oh - oy0 < (int64_t)M ? (size_t)(oh - oy0) : M;
    const size_t mw = ow - ox0 < (int64_t)M ? (size_t)(ow - ox0) : M;
    const int scalar_act = ep->act != KS_ACT_NONE && ep->act != KS_ACT_RELU &&
                           ep->act != KS_ACT_RELU6 && ep->act != KS_ACT_RELU_N1_TO_1 &&
                           ep->act != KS_ACT_LEAKY_RELU && !(V_HAS_SILU && ep->act == KS_ACT_SILU);
    const size_t row = (size_t)(ow * c);
    const size_t off0 = (size_t)(oy0 * ow + ox0) * (size_t)c;
    for (int64_t ch = 0; ch < c; ch += VL) {
        const size_t n = c - ch < VL ? (size_t)(c - ch) : VL;
        V s[8][8], t[8][8];
        for (size_t i = 0; i < A; i++) {
            for (size_t k = 0; k < A; k++) {
                const float *src = m + (i * A + k) * ps + (size_t)ch;
                s[i][k] = n == VL ? V_LOAD(src) : V_LOADN(src, n);
            }
        }
        for (size_t k = 0; k < A; k++)
            at(&t[0][k], 8, &s[0][k], 8);
        for (size_t i = 0; i < M; i++)
            at(&s[i][0], 1, &t[i][0], 1);
        const V b = n == VL ? V_LOAD(bias + ch) : V_LOADN(bias + ch, n);
        for (size_t i = 0; i < mh; i++) {
            for (size_t k = 0; k < mw; k++) {
                size_t off = off0 + i * row + k * (size_t)c + (size_t)ch;
                V r = V_ADD(s[i][k], b);
                if (res) r = V_ADD(r, n == VL ? V_LOAD(res + off) : V_LOADN(res + off, n));
                r = wino_act(r, ep);
                if (n == VL)
                    V_STORE(y + off, r);
                else
                    V_STOREN(y + off, r, n);
                if (scalar_act) ks__gemm_act_scalar(y + off, n, ep);
            }
        }
    }
}

static void wino_otx2(const float *m, size_t ps, int64_t c, const float *bias, float *y,
                      const float *res, int64_t oh, int64_t ow, int64_t oy0, int64_t ox0,
                      const ks__gemm_epilogue *ep) {
    wino_otx_body(4, 2, wino_at2, m, ps, c, bias, y, res, oh, ow, oy0, ox0, ep);
}
static void wino_otx4(const float *m, size_t ps, int64_t c, const float *bias, float *y,
                      const float *res, int64_t oh, int64_t ow, int64_t oy0, int64_t ox0,
                      const ks__gemm_epilogue *ep) {
    wino_otx_body(6, 4, wino_at4, m, ps, c, bias, y, res, oh, ow, oy0, ox0, ep);
}
static void wino_otx6(const float *m, size_t ps, int64_t c, const float *bias, float *y,
                      const float *res, int64_t oh, int64_t ow, int64_t oy0, int64_t ox0,
                      const ks__gemm_epilogue *ep) {
    wino_otx_body(8, 6, wino_at6, m, ps, c, bias, y, res, oh, ow, oy0, ox0, ep);
}

/* The ks__impl `ks_f32_conv3x3__<TAG>_wino<M>` of an ISA file (its microkernel GEMM, ARCH_MR x
 * ARCH_NR; VLC the floats per vector of the transform cost; MACS its peak MACs per cycle, both in
 * the unit of the ISA's GEMM cost) on the portable driver. */
#define WTX_VARIANT(TAG, ISA, M, VLC, MACS, GEMM)                                                  \
    static const ks__wino_arch k_arch##M = {M,    ARCH_MR, ARCH_NR,     VLC,                       \
                                            MACS, GEMM,    wino_itx##M, wino_otx##M};              \
    static double cost##M(const ks__kernel_ctx *ctx) {                                             \
        return ks__wino_cost(ctx, &k_arch##M);                                                     \
    }                                                                                              \
    static ks_status plan##M(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {                      \
        return ks__wino_plan(ctx, &k_arch##M, packed_bytes_out);                                   \
    }                                                                                              \
    static ks_status pack##M(ks__kernel_ctx *ctx) {                                                \
        return ks__wino_pack(ctx, &k_arch##M);                                                     \
    }                                                                                              \
    static ks_status run##M(ks__kernel_ctx *ctx) {                                                 \
        return ks__wino_run(ctx, &k_arch##M);                                                      \
    }                                                                                              \
    const ks__impl ks_f32_conv3x3__##TAG##_wino##M = {                                             \
        "ks_f32_conv3x3__" #TAG "_wino" #M, KS_OP_CONV2D, ISA, cost##M, plan##M, pack##M, run##M};

#endif /* KESTREL_CPU_WINOGRAD_TX_H */
