/* Quantized depthwise CONV2D microkernel for baseline AArch64 NEON (qgemm.h, driver
 * ks__q8_dw_*): one output pixel, 16 channels per block, U8 and I8, bit-exact with the reference.
 *
 * The driver packs (w - w_zp) in the low 16 bits of int32 words and folds the input zero point
 * into the starting value (bias - x_zp * sum(w - w_zp), the ROWMUL header row), so the kernel
 * multiplies raw input codes: the 16 input bytes of a tap are sign- (I8) or zero-extended (U8)
 * to int16, the weight words are narrowed to int16 by UZP1 of their low halves, and SMLAL/SMLAL2
 * accumulate exact 32-bit products (|x| <= 255, |w - w_zp| <= 255). Padding taps point at a
 * vector of x_zp, which the folded start value cancels.
 *
 * Per tap and 16 channels: the tap pointer + 1 input load + 2 widenings + 2 LDP of weights +
 * 2 UZP1 + 4 SMLAL(2) + loop overhead, about 15 instructions, 0.9 per MAC. A channel tail in a
 * pixel of >= 16 channels costs one TBL more per tap (no copy).
 */
#include "q8_neon.h"

#define CB 16

#define KS_Q8_DW_INLINE static inline __attribute__((always_inline))

/* How a block loads its 16 input bytes per tap. */
enum {
    LOAD_FULL = 0, /* 16 channels */
    LOAD_BACK = 1, /* tail of n < 16 channels in a pixel of >= 16: the 16 bytes ending at the
                      pixel's last channel, moved down by TBL (lanes >= n read index >= 16: 0) */
    LOAD_COPY = 2  /* pixel of fewer than 16 channels: a copy, nothing read past its end */
};

/* 16 input codes of channels [c0, c0 + n) (at p) widened to int16. */
KS_Q8_DW_INLINE void load_x(const uint8_t *p, size_t n, int mode, uint8x16_t back_idx, int is_i8,
                            int16x8_t *lo, int16x8_t *hi) {
    uint8x16_t b;
    if (mode == LOAD_FULL) {
        b = vld1q_u8(p);
    } else if (mode == LOAD_BACK) {
        b = vqtbl1q_u8(vld1q_u8(p + n - CB), back_idx);
    } else {
        uint8_t tmp[CB] = {0};
        memcpy(tmp, p, n);
        b = vld1q_u8(tmp);
    }
    if (is_i8) {
        const int8x16_t s = vreinterpretq_s8_u8(b);
        *lo = vmovl_s8(vget_low_s8(s));
        *hi = vmovl_high_s8(s);
    } else {
        *lo = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(b)));
        *hi = vreinterpretq_s16_u16(vmovl_high_u8(b));
    }
}

KS_Q8_DW_INLINE void dw_block(size_t c0, size_t n, size_t ks, const void *const *in,
                              const int32_t *hdr, void *out, const ks__q8_epilogue *ep, int mode,
                              uint8x16_t back_idx, int is_i8) {
    const int32_t *wp = hdr + KS_Q8_HDR_ROWS * CB;
    int32x4_t acc0 = vld1q_s32(hdr + KS_Q8_HDR_ROWMUL * CB);
    int32x4_t acc1 = vld1q_s32(hdr + KS_Q8_HDR_ROWMUL * CB + 4);
    int32x4_t acc2 = vld1q_s32(hdr + KS_Q8_HDR_ROWMUL * CB + 8);
    int32x4_t acc3 = vld1q_s32(hdr + KS_Q8_HDR_ROWMUL * CB + 12);
    for (size_t t = 0; t < ks; t++, wp += CB) {
        int16x8_t xlo, xhi;
        load_x((const uint8_t *)in[t] + c0, n, mode, back_idx, is_i8, &xlo, &xhi);
        const int16x8_t wlo = vuzp1q_s16(vreinterpretq_s16_s32(vld1q_s32(wp)),
                                         vreinterpretq_s16_s32(vld1q_s32(wp + 4)));
        const int16x8_t whi = vuzp1q_s16(vreinterpretq_s16_s32(vld1q_s32(wp + 8)),
                                         vreinterpretq_s16_s32(vld1q_s32(wp + 12)));
        acc0 = vmlal_s16(acc0, vget_low_s16(xlo), vget_low_s16(wlo));
        acc1 = vmlal_high_s16(acc1, xlo, wlo);
        acc2 = vmlal_s16(acc2, vget_low_s16(xhi), vget_low_s16(whi));
        acc3 = vmlal_high_s16(acc3, xhi, whi);
    }
    acc0 = ks_q8_neon_requant(acc0, hdr, CB);
    acc1 = ks_q8_neon_requant(acc1, hdr + 4, CB);
    acc2 = ks_q8_neon_requant(acc2, hdr + 8, CB);
    acc3 = ks_q8_neon_requant(acc3, hdr + 12, CB);
    ks_q8_neon_store16((char *)out + c0, ks_q8_neon_pack16(acc0, acc1, acc2, acc3, ep), n);
}

static void ks_q8_dw__neon_c16(size_t channels, size_t ks, const void *const *in, const void *w,
                               void *out, int32_t in_flip, int32_t in_zp,
                               const ks__q8_epilogue *ep) {
    static const uint8_t k_iota[CB] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    const size_t block_ints = (KS_Q8_HDR_ROWS + ks) * CB;
    const size_t full = channels / CB * CB;
    const int32_t *hdr = (const int32_t *)w;
    const uint8x16_t none = vdupq_n_u8(0);
    (void)in_zp;
    size_t c0 = 0;
    for (; c0 < full; c0 += CB, hdr += block_ints) {
        if (in_flip)
            dw_block(c0, CB, ks, in, hdr, out, ep, LOAD_FULL, none, 1);
        else
            dw_block(c0, CB, ks, in, hdr, out, ep, LOAD_FULL, none, 0);
    }
    if (c0 == channels) return;
    const size_t n = channels - c0;
    const int mode = channels >= CB ? LOAD_BACK : LOAD_COPY;
    const uint8x16_t back_idx = vaddq_u8(vld1q_u8(k_iota), vdupq_n_u8((uint8_t)(CB - n)));
    if (in_flip)
        dw_block(c0, n, ks, in, hdr, out, ep, mode, back_idx, 1);
    else
        dw_block(c0, n, ks, in, hdr, out, ep, mode, back_idx, 0);
}

/* Fused residual / TABLE epilogues (ip[12] == 1) run as the driver's scalar pass over each
 * freshly written, cache-hot pixel. */
static const ks__q8_dw_arch k_dw = {.cb = CB,
                                    .macs_per_cycle = 4.0,
                                    .ukernel = ks_q8_dw__neon_c16,
                                    .fused = ks__q8_fused_apply_scalar};

static double dw_cost(const ks__kernel_ctx *ctx) {
    return ks__q8_dw_cost(ctx, &k_dw);
}
static ks_status dw_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__q8_dw_plan(ctx, &k_dw, packed_bytes_out);
}
static ks_status dw_pack(ks__kernel_ctx *ctx) {
    return ks__q8_dw_pack(ctx, &k_dw);
}
static ks_status dw_run(ks__kernel_ctx *ctx) {
    return ks__q8_dw_run(ctx, &k_dw);
}

const ks__impl ks_q8_dwconv__neon_c16 = {
    "ks_q8_dwconv__neon_c16", KS_OP_CONV2D, KS_ISA_NEON, dw_cost, dw_plan, dw_pack, dw_run};
