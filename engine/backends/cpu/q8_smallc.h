/* Small-channel quantized (U8/I8) CONV2D (q8_smallc.c driver, x86/<isa>/q8_smallc.c
 * microkernels). Not a published API.
 *
 * For convs with few output channels at high resolution (stems, decoder and head convs), where
 * the indirect GEMM's 16-row tiles rebuild tap pointers per tile, convert the input with a
 * scalar pass and requantize half-empty vectors. Here every 16-lane vector is full of wanted
 * outputs. Two forms:
 *
 * WIDE (9..32 output channels; any kernel size, stride and padding; dilation 1): one pixel per
 * vector (two vectors above 16 channels), channels in lanes. The input is first copied once into
 * a zero-point padded u8 image (I8 flipped by ^0x80), so a kernel row's KW * Cin bytes are
 * contiguous and the reduction over them is one dword broadcast + one vpdpbusd per 4 bytes,
 * without bounds checks; the last group of a row may read past the row's taps into the next
 * pixel, where its packed weights are 0. Pointwise convs whose Cin is a multiple of 4 skip the
 * copy and read the input itself (I8 flipped in registers).
 *
 * PAIR (1..8 output channels; 1x1, stride 1, no padding): two pixels per vector. The input copy
 * interleaves the 4-byte groups of pixel pairs, so one qword broadcast feeds both pixels (even
 * lanes pixel 0, odd lanes pixel 1, each weight dword duplicated); the accumulators are permuted
 * to pixel-major order before the epilogue.
 *
 * Exactness (as qgemm.h): u8 activations x s8 weights (U8 weights shifted by -128), the input
 * zero point folded into the per-channel start value (bias - x_zp' * sum w); padding holds x_zp',
 * so it adds nothing. Nodes whose shifted weight zero points are not all 0 are refused (they need
 * per-pixel row sums; the GEMM takes them), as are nodes whose sum could leave int32. The
 * requantization is the reference's, per lane. Fused nodes (ip[12] == 1) stage each tile's
 * intermediate bytes and finish them in one pass: the output TABLE by lookup, the residual ADD
 * with a 256 x 256 byte table of the reference ADD over every (intermediate, residual) byte pair,
 * built at pack time.
 *
 * PAIR nodes with 8 output channels and a residual ADD on a CPU with VBMI (BlazePose's 8 -> 8
 * decoder convs) instead keep everything in registers: the intermediate bytes are packed 64 at
 * a time, each ADD input's rescaled int32 term is looked up in four 256-byte planes (the ADD's
 * first two requantizations depend on one byte each, so pack() tabulates them by the
 * reference's scalar rule), and only the ADD's output requantization is computed. With Cin 4 or
 * 8 the input is read in place (no pair copy) and each accumulator holds one channel of 16
 * pixels, so every requantization constant is uniform. When the value ranges allow it
 * (short_requant, checked per node) both requantizations take a shorter exact form. Measured
 * (Zen 4, 1 thread, BlazePose full nodes 106/110/94/98): 1.9-2.2x faster than the staged
 * byte-pair table (~1 cycle per output byte, ~45 vector instructions per 16 outputs before).
 */
#ifndef KESTREL_CPU_Q8_SMALLC_H
#define KESTREL_CPU_Q8_SMALLC_H

#include "qgemm.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { KS_Q8SC_WIDE = 0, KS_Q8SC_PAIR = 1 };

/* Per-lane header rows at the start of the packed data (`lanes` int32 each, lane order as the
 * epilogue sees it: WIDE lane = channel, PAIR lane = pixel * 8 + channel). */
enum {
    KS_Q8SC_HDR_START = 0, /* bias - x_zp' * sum(w) */
    KS_Q8SC_HDR_MULT = 1,
    KS_Q8SC_HDR_LSHIFT = 2,
    KS_Q8SC_HDR_RSHIFT = 3,
    KS_Q8SC_HDR_RMASK = 4,
    KS_Q8SC_HDR_ROWS = 5
};

typedef struct ks__q8sc_args {
    int32_t mode;       /* KS_Q8SC_* */
    size_t oc;          /* output channels (also the output pixel stride in bytes) */
    size_t kh;          /* kernel rows */
    size_t groups;      /* 4-byte groups per kernel row (WIDE) or per pixel (PAIR) */
    size_t sx;          /* WIDE: bytes between consecutive output pixels' windows (sw * Cin) */
    size_t row_bytes;   /* WIDE: bytes per padded input row */
    uint32_t flip;      /* WIDE reading the raw input (pointwise, no copy): 0x80808080 for I8 */
    size_t lanes;       /* 16, or 32 for WIDE with 17..32 channels (two vectors per pixel) */
    const int32_t *hdr; /* KS_Q8SC_HDR_ROWS x lanes int32, then the weights */
    int32_t out_zp, lo, hi;
    int32_t any_lshift;        /* some channel's left shift is not 0 */
    const ks__q8_fused *fused; /* NULL unless a fused node */
    /* residual-fused nodes: y byte = add_table[intermediate byte * 256 + residual byte] (the
     * quantized ADD of every byte pair; 4-byte gathers may read 3 bytes past the end) */
    const uint8_t *add_table;
    /* PAIR, 8 channels, residual, arch->pair8_planes: the ADD's input terms plus 2^29 (so
     * their sum is >= 0 when short_requant holds) as byte planes, [input (0 intermediate,
     * 1 residual)][byte 0..3 of the int32][raw byte] (add_table NULL) */
    const uint8_t *add_planes;
    /* add_planes nodes with Cin 4 or 8: pair() reads the input itself (no pair copy) */
    int32_t planar;
    /* add_planes nodes whose requantizations can take a shorter exact form: every channel's
     * |acc + start| < 2^30 and |a term + b term| < 2^30 (so the values plus 2^30 are unsigned
     * int32), no left shifts, right shifts >= 1 and |2^(r-1) + zp * 2^r| < 2^30 (the conv's
     * and the ADD output's rounding shifts, with the zero point folded in) */
    int32_t short_requant;
} ks__q8sc_args;

/* WIDE: `count` output pixels of one output row. in: the padded input row of kernel row 0 at
 * the first pixel's window; kernel row r is r * row_bytes further. y / res: the first pixel's
 * output / residual bytes (res only for residual-fused nodes). */
typedef void (*ks__q8sc_wide_fn)(const ks__q8sc_args *a, const uint8_t *in, size_t count,
                                 uint8_t *y, const uint8_t *res);
/* PAIR: `count` output pixels starting at an even pixel; in: their interleaved pair groups. */
typedef void (*ks__q8sc_pair_fn)(const ks__q8sc_args *a, const uint8_t *in, size_t count,
                                 uint8_t *y, const uint8_t *res);

/* PAIR input copy of pixel pairs [q_begin, q_end) of x (npix pixels of ic bytes, each byte
 * ^ flip) into buf's [pair][group][pixel 0 dword, pixel 1 dword] layout; the bytes of a group
 * past ic may hold anything (their weights are 0). */
typedef void (*ks__q8sc_pair_copy_fn)(const uint8_t *x, size_t npix, size_t ic, size_t groups,
                                      uint8_t flip, size_t q_begin, size_t q_end, uint8_t *buf);

typedef struct ks__q8sc_arch {
    double dp_per_cycle; /* 16-lane dot-product instructions per cycle, for cost() */
    ks__q8sc_wide_fn wide;
    ks__q8sc_pair_fn pair;
    ks__q8sc_pair_copy_fn pair_copy; /* NULL: the driver's portable copy */
    int32_t pair8_planes; /* pair() takes add_planes (only offered on CPUs with AVX-512 VBMI) */
} ks__q8sc_arch;

double ks__q8sc_cost(const ks__kernel_ctx *ctx, const ks__q8sc_arch *arch);
ks_status ks__q8sc_plan(ks__kernel_ctx *ctx, const ks__q8sc_arch *arch, size_t *packed_bytes_out);
ks_status ks__q8sc_pack(ks__kernel_ctx *ctx, const ks__q8sc_arch *arch);
ks_status ks__q8sc_run(ks__kernel_ctx *ctx, const ks__q8sc_arch *arch);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_Q8_SMALLC_H */
