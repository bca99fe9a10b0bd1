/* Row-wise quantized (U8/I8) depthwise CONV2D (q8_dw.c): the driver of the "dwrow" variants.
 * Not a published API.
 *
 * An output row of a depthwise conv in NHWC is one flat run of ow * C bytes, and for a given tap
 * the input bytes it reads form a flat run too, once the input row is padded and split into
 * stride phases (padded pixel X = phase + sw * m goes to phase X % sw at m): tap kx reads phase
 * (kx * dw) % sw from pixel (kx * dw) / sw on. So a row is computed in B-byte blocks of the flat
 * output (B = 64 for AVX-512, 32 for AVX2) with no per-pixel pointer work, and channel c of flat
 * byte f is f % C: the packed weights repeat with period P = C / gcd(C, B) blocks ("patterns"),
 * processed pattern by pattern so one pattern's weights stay in L1.
 *
 * 4 taps per dot product (vpdpbusd, u8 x s8): per output row, the rows of each group of 4 kernel
 * rows are byte-interleaved once into an "I" buffer (one uint32 per flat position holding the 4
 * rows' bytes), so every tap column kx is a plain unaligned load of I at kx's flat offset. I8
 * inputs are flipped to u8 (x ^ 0x80 = x + 128) when the padded rows are copied; the zero point
 * (flipped alike) is folded into the starting accumulator at pack time, as is the padding value
 * (padding is the zero point, which then contributes nothing). Weights are stored as w - w_zp,
 * clamped to s8: the driver recomputes the outputs of channels it clamped (q8_dw.c fix_rows, at
 * most KS_Q8DW_FIX_MAX of them, else the variant refuses the node). With stride 1 and no vertical
 * dilation, the groups hold the rows of 2 or 4 consecutive output rows when they fit (3x3: 2,
 * 5x5: 4), and one interleave and one set of loads serve them all (weight set q shifted by q
 * rows).
 * With stride 1 the ISA's interleave_src reads the input rows in place (masked at the padding, the
 * I8 flip included), so no padded copy is made. With vertical stride 2 and kh >= 5 ("quad
 * mode", q8_dw.c) the groups are the aligned input rows 4t..4t+3, interleaved once and shared by
 * the ~3 output rows that read them, each row using the weight set of its offset in the quad.
 *
 * Requantization is the reference's MultiplyByQuantizedMultiplier followed by the output zero
 * point, computed exactly per lane either in one 64-bit rounding step (see the ISA file; a left
 * shift that cannot wrap is folded into the right one) or, when q8_dw.c proves it exact for
 * every reachable accumulator of every channel, as floor(x A + B) in float64 (KS_Q8DW_CD_*):
 * one FMA and one rounding-down conversion per 8 lanes. Results are bit-identical to
 * ref/conv.c. Of the fused CONV2D forms (ip[12] == 1) the output TABLE one is run (requantize to
 * the intermediate, then a 256-entry lookup of each byte of the row while it is in L1); the
 * residual form is refused, and the older per-pixel kernel (qgemm.c) takes it.
 */
#ifndef KESTREL_CPU_Q8_DW_H
#define KESTREL_CPU_Q8_DW_H

#include "impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-lane requantization constants of one pattern block: 4 vectors (v) of B / 4 lanes each. */
enum {
    KS_Q8DW_C_BIAS = 0, /* int32 starting accumulator (bias with zero points folded) */
    KS_Q8DW_C_LSHIFT,   /* int32 left shift */
    KS_Q8DW_C_MEVEN,    /* int32 multiplier, natural lane order (even lanes used) */
    KS_Q8DW_C_MODD,     /* int64 per odd lane: the multiplier of lane 2i + 1 */
    KS_Q8DW_C_KEVEN,    /* int64 rounding + zero-point addend of lane 2i */
    KS_Q8DW_C_KODD,     /* int64 of lane 2i + 1 */
    KS_Q8DW_C_SEVEN,    /* int64 subtracted for negative products (2^31 or 0), lane 2i */
    KS_Q8DW_C_SODD,     /* lane 2i + 1 */
    KS_Q8DW_C_SHEVEN,   /* int64 total right shift (31 + r), lane 2i */
    KS_Q8DW_C_SHODD,    /* lane 2i + 1 */
    KS_Q8DW_C_ROWS
};
/* The float64 form (ks__q8dw_row fp64, requant 0 only; it reuses the 64-bit rows): per lane
 * y = x A + B (B - S for x < 0) by one FMA, out = floor(y) converted by one rounding-down
 * conversion. Lanes 0..B/8-1 of vector v in the LO row, the others in HI (B / 8 doubles each). */
enum {
    KS_Q8DW_CD_ALO = KS_Q8DW_C_MODD, /* A = m 2^(left - 31 - r) */
    KS_Q8DW_CD_AHI,
    KS_Q8DW_CD_BLO, /* B = (2^30 + [r > 0] 2^(30 + r)) / 2^(31 + r) + zp */
    KS_Q8DW_CD_BHI,
    KS_Q8DW_CD_SLO, /* S = [r > 0 and m > 0] 2^-r */
    KS_Q8DW_CD_SHI
};
/* The two-step form (ks__q8dw_arch KS_Q8DW_TWO_STEP, for ISAs without 64-bit arithmetic shifts): h
 * = SRDHM(x, m) from the 64-bit products, then (h + add - [h < 0 and r > 0]) >> r in 32 bits. */
enum {
    KS_Q8DW_C2_ADD = KS_Q8DW_C_KEVEN,   /* int32 2^(r-1) + zp 2^r (r > 0), else zp */
    KS_Q8DW_C2_NZ = KS_Q8DW_C_SEVEN,    /* int32 -1 if r > 0, else 0 */
    KS_Q8DW_C2_SHIFT = KS_Q8DW_C_SHEVEN /* int32 r */
};

/* The work of 1, 2 or 4 consecutive output rows for the microkernel, in flat blocks of B bytes
 * (the arch's block_bytes: 64 for AVX-512, 32 for AVX2), i.e. 4 vectors of B / 4 int32 lanes.
 * Taps are ordered (group g, column kx); tap t reads B / 4 uint32 at tap[t] + B * j + B / 4 * v
 * for flat block j and vector v. Each pattern block holds max_rows weight sets of num_taps x 4 x
 * B bytes (set q, lane l, byte s = weight of kernel row 4 g + s - q), set_bytes apart, then
 * KS_Q8DW_C_ROWS x 4 x B bytes of constants (at cst_offset).
 *
 * Several rows (stride 1, no vertical dilation, and kh + rows - 1 <= 4 * groups, e.g. 2 rows for
 * 3x3, 4 for 5x5): the rows interleaved for output row oy start at its first input row and
 * include the next ones, so output row oy + q is the same loads times weight set q. */
typedef struct ks__q8dw_row {
    const uint32_t *const *tap;
    size_t num_taps;
    size_t num_blocks; /* ceil(ow * C / 64) */
    size_t tail_bytes; /* valid bytes of the last block (1..64) */
    const uint8_t *w;  /* pattern block 0 */
    size_t pattern_bytes;
    size_t set_bytes;    /* distance of the weight sets of a pattern block */
    size_t cst_offset;   /* constants in a pattern block */
    size_t num_patterns; /* P */
    uint8_t *out;        /* the first output row (ow * C bytes); the others follow it */
    size_t num_rows;     /* 1, 2 or 4 */
    int32_t out_i8;      /* output dtype I8 (else U8) */
    int32_t lshift;      /* some channel has a left shift */
    int32_t fp64;        /* the constants are the float64 form (KS_Q8DW_CD_*) */
    int32_t lo, hi;      /* clamp, output dtype values */
    /* lo >= the output zero point (ReLU-style clamps): a negative requantized value clamps to lo
     * however it rounds, so kernels may skip the rounding's sign correction */
    int32_t no_sign;
    /* Fused TABLE form: out[i] = table[out[i]] (256 entries indexed by the raw byte), applied by
     * the row kernel once the row is written; NULL otherwise. */
    const uint8_t *table;
    const uint8_t *tscope; /* the table's telescoped form (q8_lut.h ks__q8_tscope) */
    int32_t vbmi;          /* the CPU has AVX-512 VBMI (64-byte table permutes) */
} ks__q8dw_row;

/* Interleaves 4 flat u8 rows into dst: dst[f] = r0[f] | r1[f] << 8 | r2[f] << 16 | r3[f] << 24
 * for f < B * num_blocks (reads B * num_blocks bytes of each row). */
typedef void (*ks__q8dw_interleave_fn)(const uint8_t *const rows[4], size_t num_blocks,
                                       uint32_t *dst);
typedef void (*ks__q8dw_row_fn)(const ks__q8dw_row *r);
/* Stride-2 phase split of `pairs` pixel pairs of c bytes each (flipped by xor with `flip`):
 * pixel 2i goes to even + i * c, pixel 2i + 1 to odd + i * c. Returns how many pairs it did
 * (0 when c is not one it handles); the driver copies the rest. */
typedef size_t (*ks__q8dw_split2_fn)(const uint8_t *src, size_t pairs, size_t c, uint8_t flip,
                                     uint8_t *even, uint8_t *odd);

/* One input row as read in place (stride 1): flat byte f of the padded row is data[f - shift]
 * when lo <= f < hi, else the (flipped) zero point `pad`; bytes are flipped by xor with `flip`.
 * Rows outside the image have lo == hi. */
typedef struct ks__q8dw_src {
    const uint8_t *data;
    size_t shift, lo, hi;
} ks__q8dw_src;
/* As ks__q8dw_interleave_fn from rows read in place: no padded copy of the input row. */
typedef void (*ks__q8dw_interleave_src_fn)(const ks__q8dw_src rows[4], size_t num_blocks,
                                           uint8_t flip, uint8_t pad, uint32_t *dst);

/* ks__q8dw_arch mode bits. 0: one 64-bit rounding step (KS_Q8DW_C_*), u8 x s8 dot products of
 * the interleaved rows (vpdpbusd).
 * KS_Q8DW_TWO_STEP: the two-step requantization (C2 constants).
 * KS_Q8DW_SIGNED_X: the ISA's interleave stores each byte flipped by 0x80 (x - 128 as s8: I8
 * inputs as they are, U8 shifted), so the starting accumulator is packed as bias - x_zp' * sum(w)
 * with x_zp' the zero point as s8, and the packed w - w_zp lie in [-127, 127]: the AVX2 kernel
 * multiplies |x| by w with x's sign (vpsignb, vpmaddubsw), whose pair sums then stay below 2^15
 * (x86/avx2/q8_dwconv.c).
 * KS_Q8DW_LEFT_SHIFT: the two-step kernel shifts each lane left by its KS_Q8DW_C_LSHIFT first
 * (wrapping, as the reference's x * 2^left), so channels with left shifts are taken too. */
enum { KS_Q8DW_TWO_STEP = 1, KS_Q8DW_SIGNED_X = 2, KS_Q8DW_LEFT_SHIFT = 4 };

typedef struct ks__q8dw_arch {
    uint32_t block_bytes; /* B: 64 or 32 */
    uint32_t mode;        /* KS_Q8DW_* bits (above) */
    uint32_t max_rows;    /* output rows per call the row kernel takes: 1, 2 or 4 */
    ks__q8dw_interleave_fn interleave;
    ks__q8dw_row_fn row;
    double ops_per_cycle;                      /* for cost() */
    ks__q8dw_split2_fn split2;                 /* may be NULL */
    ks__q8dw_interleave_src_fn interleave_src; /* may be NULL: stride 1 then copies the rows */
} ks__q8dw_arch;

double ks__q8dw_cost(const ks__kernel_ctx *ctx, const ks__q8dw_arch *arch);
ks_status ks__q8dw_plan(ks__kernel_ctx *ctx, const ks__q8dw_arch *arch, size_t *packed_bytes_out);
ks_status ks__q8dw_pack(ks__kernel_ctx *ctx, const ks__q8dw_arch *arch);
ks_status ks__q8dw_run(ks__kernel_ctx *ctx, const ks__q8dw_arch *arch);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_Q8_DW_H */
