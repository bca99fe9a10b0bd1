/* Portable driver of the quantized (U8/I8) GEMM, indirect-GEMM and depthwise kernels (qgemm.c).
 * Not a published API.
 *
 * Results are bit-identical to the reference kernels (ref/conv.c), i.e. to TFLite's integer
 * reference: exact int32 accumulation of (x - x_zp) * (w - w_zp) plus the int32 bias, then
 * MultiplyByQuantizedMultiplier with the multiplier derived exactly as the reference derives it,
 * the output zero point and the activation clamp. Variants refuse (cost < 0) any node whose
 * accumulator could leave the int32 range, where the reference saturates and we would wrap.
 *
 * GEMM (CONV2D with groups == 1, FULLY_CONNECTED): an MR x NR tile of
 *     y = requant(sum_t sum_k A_t[r][k] * W[t][k][n] + colterm[n] + rowsum[r] * rowmul[n])
 * The driver first converts the input into the kernel's A format (one pass, scratch), with every
 * pixel's channels padded to a multiple of KR so the microkernel has no k tails:
 *   KR == 4 (u8 x s8 dot products, VNNI): A = x as u8 (I8 inputs flipped by +128), padded with
 *      the (shifted) input zero point; W = w as s8 (U8 weights shifted by -128). The zero points
 *      fold into colterm = bias - x_zp' * sum_k W + K * x_zp' * w_zp' and rowmul = -w_zp', with
 *      rowsum[r] = sum of the row's A bytes over all taps (0 and skipped when every w_zp' is 0).
 *   KR == 2 (int16 pairs, AVX2 vpmaddwd): A = x - x_zp and W = w - w_zp as int16, padded with
 *      0; colterm = bias, no row term. Products are exact in int32 (no vpmaddubsw saturation).
 *   KR == 4, signed A (the *_sa entry points; AVX2 vpmaddubsw): A = x as s8 (I8 inputs as
 *      they are, U8 flipped by 0x80), padded with x_zp' = x_zp - (U8 ? 128 : 0); W = w - w_zp
 *      as s8, which must lie in [-127, 127] (cost() refuses the node otherwise); colterm =
 *      bias - x_zp' * sum_k W, no row term. The kernels multiply |a| (u8, <= 128) by W with a's
 *      sign (s8, |.| <= 127), so a pair sum is at most 2 * 128 * 127 = 32512 and vpmaddubsw
 *      never saturates.
 * Padding taps point at a vector that holds the padded value (A's zero), so they add nothing.
 *
 * Depthwise CONV2D (groups == channels, one output channel per group): per output pixel, taps
 * given indirectly as for the GEMM (padding taps point at a vector of x_zp), channels in blocks
 * of CB; weights are packed as int32 words holding (w - w_zp) in the low 16 bits, so the kernels
 * multiply them (vpmaddwd, or vpdpwssd with VNNI) with the raw sign- or zero-extended input codes,
 * starting from the bias with the input zero point folded in (the ROWMUL header row).
 *
 * Packed panels start with per-column epilogue rows (KS_Q8_HDR_ROWS x NR int32, see below).
 *
 * Fused CONV2D (ip[12] == 1, ops.inc): the kernels requantize to the intermediate's params, then
 * finish each tile while it is in cache with the quantized residual ADD or the output table
 * (ks__q8_fused), bit-identical to the unfused CONV2D + ADD / lookup-op chain.
 */
#ifndef KESTREL_CPU_QGEMM_H
#define KESTREL_CPU_QGEMM_H

#include "impl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KS_Q8_MAX_MR 16

/* Rows of the per-column header at the start of each packed panel / channel block. */
enum {
    KS_Q8_HDR_BIAS = 0,   /* colterm (bias with zero-point folding) */
    KS_Q8_HDR_ROWMUL = 1, /* -w_zp' (KR == 4); depthwise: bias - x_zp * sum(w - w_zp) */
    KS_Q8_HDR_MULT = 2,   /* Q31 multiplier */
    KS_Q8_HDR_LSHIFT = 3, /* left shift (0..31) */
    KS_Q8_HDR_RSHIFT = 4, /* right shift (0..31) */
    KS_Q8_HDR_RMASK = 5,  /* (1 << right shift) - 1 */
    KS_Q8_HDR_ROWS = 6
};

/* Optional 64-bit requantization rows of a GEMM panel (the *_r64 entry points below), stored
 * after the panel's weights as int64[KS_Q8_EXT_ROWS][NR / 2]: column j (NR % 16 == 0) sits at qword
 * (j / 16) * 8 + (j % 16) / 2 of the even (j even) or odd row of each pair. They turn the
 * reference's two roundings into one: with p = (x << left) * mult as int64 and right shift r,
 *     ks__quant_mul(x) == (p + RND - (p < 0 ? CORR : 0)) >> SH   (arithmetic shift)
 * where RND = 2^30 + (r ? 2^(30 + r) : 0), CORR = r ? 2^31 : 0, SH = 31 + r (qgemm.c). */
enum {
    KS_Q8_EXT_RND_E = 0,
    KS_Q8_EXT_RND_O = 1,
    KS_Q8_EXT_SH_E = 2,
    KS_Q8_EXT_SH_O = 3,
    KS_Q8_EXT_CORR_E = 4,
    KS_Q8_EXT_CORR_O = 5,
    KS_Q8_EXT_MULT_O = 6, /* the odd columns' Q31 multipliers (the even ones: HDR_MULT) */
    KS_Q8_EXT_ROWS = 7
};

/* Fused epilogue of a quantized CONV2D with intermediate params (ip[12] == 1, ops.inc): the
 * microkernel computes the intermediate (its requantization uses fp[1]/ip[11], clamp = the
 * dtype's range), then this second step runs on it before the tile leaves the cache: inside the
 * microkernel (arch fused_in_kernel, ep->fused set) or as the driver's pass over the freshly
 * written bytes of each tile / pixel (arch->fused). */
enum { KS_Q8_FUSED_NONE = 0, KS_Q8_FUSED_RESIDUAL = 1, KS_Q8_FUSED_TABLE = 2 };

typedef struct ks__q8_fused {
    int32_t kind; /* KS_Q8_FUSED_* */
    int32_t flip; /* 0x80 for I8 (bytes as u8 = value + 128), else 0 */
    int32_t vbmi; /* the CPU has AVX-512 VBMI (TABLE: 64-byte permute lookups) */
    /* RESIDUAL, the reference quantized ADD(a = intermediate, b = residual) with the node's act:
     * za, zb in the flipped (u8) domain; zo, lo, hi as output dtype values. */
    int32_t za, zb, zo, lo, hi;
    int32_t ma, sha, mb, shb, mo, sho; /* ks__quant_mul multipliers/shifts (after << 20) */
    /* The same three as vector-kernel constants: [a, b, out][mult, left, right, mask, mask/2]. */
    int32_t vq[3][5];
    /* TABLE: output byte indexed by the intermediate's raw byte (already flipped for I8). */
    uint8_t table[256];
    /* TABLE's telescoped form for 16-entry shuffle lookups (q8_lut.h ks__q8_tscope). */
    uint8_t tscope[256];
} ks__q8_fused;

typedef struct ks__q8_epilogue {
    int32_t out_zp;
    int32_t lo, hi;     /* clamp (activation range, within the output dtype) */
    int32_t use_rowsum; /* add rowsum[r] * rowmul[n] */
    /* Fused node, for microkernels that apply it in registers before the store (arch
     * fused_in_kernel); NULL otherwise. The residual of output byte y_base[i] is res_base[i]. */
    const ks__q8_fused *fused;
    const uint8_t *y_base, *res_base;
    int32_t out_signed; /* the output (or intermediate) bytes are I8 */
} ks__q8_epilogue;

/* ADD's constants exactly as the reference quantized ADD derives them (TFLite: both inputs << 20,
 * rescaled to twice the larger input scale, summed, rescaled to the output), act range from
 * ks__quant_act_range. dtype: U8 or I8. */
void ks__q8_fused_add_init(ks__q8_fused *f, ks_dtype dtype, float sa, int32_t za, float sb,
                           int32_t zb, float so, int32_t zo, int32_t act);
/* One element: a, b are dtype values (not flipped); returns the clamped output value. */
int32_t ks__q8_fused_add_one(const ks__q8_fused *f, int32_t a, int32_t b);
/* Scalar epilogue over n bytes: y[i] = fused(y[i], res[i]) in place (res only for RESIDUAL). */
void ks__q8_fused_apply_scalar(const ks__q8_fused *f, uint8_t *y, const uint8_t *res, size_t n);

/* Applies a fused epilogue in place to n bytes (an ISA-specific vector version, or the scalar
 * one); res: the residual bytes at the same positions (RESIDUAL only). */
typedef void (*ks__q8_fused_fn)(const ks__q8_fused *f, uint8_t *y, const uint8_t *res, size_t n);

/* Computes rows [0, mr) x columns [0, nc) of one tile (mr <= MR, nc <= NR).
 *   a:      ks groups of MR pointers (a[t * MR + r]) into the A buffer, kb * KR elements each;
 *           rows >= mr repeat a valid row.
 *   w:      the tile's panel: KS_Q8_HDR_ROWS x NR int32, then ks * kb blocks of NR x KR weights
 *           (then the KS_Q8_EXT_* rows with the *_r64 entry points).
 *   c:      output row r starts at c + r * c_stride (bytes; the output is U8 or I8).
 *   rowsum: MR int32 (read only when ep->use_rowsum). */
typedef void (*ks__q8_igemm_fn)(size_t mr, size_t nc, size_t kb, size_t ks, const void *const *a,
                                const void *w, void *c, size_t c_stride, const int32_t *rowsum,
                                const ks__q8_epilogue *ep);

typedef struct ks__q8_gemm_arch {
    uint32_t mr, nr;
    uint32_t kr;           /* 4: u8 x s8 A/W bytes; 2: int16 A/W */
    double macs_per_cycle; /* for cost() */
    ks__q8_igemm_fn ukernel;
    ks__q8_fused_fn fused; /* NULL: the variant refuses fused nodes (ip[12] == 1) */
    int fused_in_kernel;   /* the ukernel applies ep->fused itself (no pass over the tile) */
} ks__q8_gemm_arch;

/* One output pixel of a depthwise conv: `channels` channels, ks tap pointers to the input
 * pixels (raw U8/I8 bytes; padding taps point at a vector of x_zp), weights `w` packed in blocks
 * of CB channels (KS_Q8_HDR_ROWS x CB int32 header without ROWMUL use, then ks x CB int32). */
typedef void (*ks__q8_dw_fn)(size_t channels, size_t ks, const void *const *in, const void *w,
                             void *out, int32_t in_flip, int32_t in_zp, const ks__q8_epilogue *ep);

/* `count` consecutive output pixels of a depthwise conv with channels <= CB, one call: pixel i
 * reads tap t at in[t] + i * steps[t] (steps 0 for padding taps) and writes out + i * channels.
 * For the interior of small-channel rows, where a per-pixel call costs more than its math. */
typedef void (*ks__q8_dw_row_fn)(size_t channels, size_t ks, const void *const *in,
                                 const size_t *steps, size_t count, const void *w, void *out,
                                 int32_t in_flip, const ks__q8_epilogue *ep);

typedef struct ks__q8_dw_arch {
    uint32_t cb; /* channel block */
    double macs_per_cycle;
    ks__q8_dw_fn ukernel;
    ks__q8_fused_fn fused; /* NULL: the variant refuses fused nodes (ip[12] == 1) */
    int fused_in_kernel;   /* the ukernel applies ep->fused itself (no pass over the pixel) */
    ks__q8_dw_row_fn row;  /* NULL: per-pixel calls only */
} ks__q8_dw_arch;

/* The impl steps (impl.h). cost() is negative unless the node is a quantized CONV2D (groups 1)
 * or FULLY_CONNECTED with constant weights and bias whose accumulator provably stays in int32,
 * with a fused activation the quantized reference supports; fused CONV2D nodes (residual or
 * TABLE, ip[12] == 1) only when arch->fused is set. */
double ks__q8_gemm_cost(const ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch);
ks_status ks__q8_gemm_plan(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch,
                           size_t *packed_bytes_out);
ks_status ks__q8_gemm_pack(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch);
/* pack for KR == 4 kernels that read A as s8 (each byte ^ 0x80, e.g. Arm SDOT): the colterm
 * also holds 128 * sum of the column's weights, which those kernels' products leave out. */
ks_status ks__q8_gemm_pack_s8a(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch);
ks_status ks__q8_gemm_run(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch);
/* plan/pack/run for kernels whose panels end with the KS_Q8_EXT_* rows (KR == 4, NR % 16 == 0).
 * With at most NR / 2 output channels, the padding columns [NR / 2, NR) of these panels repeat
 * the requantization constants (HDR_MULT..HDR_RMASK, EXT) of columns [0, NR / 2), so a kernel
 * may requantize two tile rows in one vector. */
ks_status ks__q8_gemm_plan_r64(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch,
                               size_t *packed_bytes_out);
ks_status ks__q8_gemm_pack_r64(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch);
ks_status ks__q8_gemm_run_r64(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch);

/* cost/pack/run for KR == 4 kernels with signed A (above; plan is ks__q8_gemm_plan). cost() also
 * refuses nodes with some w - w_zp outside [-127, 127], and counts no input pass where the
 * kernels read the input in place (I8, channels a multiple of 4). */
double ks__q8_gemm_cost_sa(const ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch);
ks_status ks__q8_gemm_pack_sa(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch);
ks_status ks__q8_gemm_run_sa(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch);

#if defined(__x86_64__)
/* dst[i] = src[i] ^ mask for n bytes (x86/avx2; the I8 -> u8 input pass of KR == 4 GEMMs). */
void ks__q8_xor_bytes__avx2(const uint8_t *src, uint8_t *dst, size_t n, uint8_t mask);
#endif

/* Same for depthwise CONV2D (groups == in channels == out channels). */
double ks__q8_dw_cost(const ks__kernel_ctx *ctx, const ks__q8_dw_arch *arch);
ks_status ks__q8_dw_plan(ks__kernel_ctx *ctx, const ks__q8_dw_arch *arch, size_t *packed_bytes_out);
ks_status ks__q8_dw_pack(ks__kernel_ctx *ctx, const ks__q8_dw_arch *arch);
ks_status ks__q8_dw_run(ks__kernel_ctx *ctx, const ks__q8_dw_arch *arch);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_QGEMM_H */
