/* Context-adaptive binary arithmetic coder for quantized weights ("wcode") in .ksm files.
 * Not a published API.
 *
 * Used by the .ksm writer (ks-convert --entropy, when it beats raw and rANS) and reader (decoded
 * once at load). Unlike rANS (rans.h) it carries no table: every probability starts at 1/2 and
 * adapts while coding, so small tensors pay no table cost, and the magnitude of a code is coded
 * in the context of the magnitudes already seen in its output channel and at its position in
 * the previous output channels. Pure functions, no allocation (scratch comes from the caller),
 * thread-safe.
 *
 * Input: num_scales scale words (16 or 32 bits, little-endian bit patterns, e.g. f32 or f16)
 * and num_rows x row_len signed codes in [-qmax, qmax], qmax 127 (int8) or 7 (int4), row-major
 * (a row is one output channel).
 *
 * Stream layout (integers little-endian):
 *   0  u8   config: bits 0..1 rate set r, bits 2..3 column rate, bit 4 prior (see below);
 *           bits 5..7 zero
 *   1  u32  A: size of the arithmetic-coded part (>= 4)
 *   5  u32  CRC-32 (IEEE, as in ksm.h) of: a 32-byte geometry record (u32 scale_bits, u32 qmax,
 *           u64 num_scales, u64 num_rows, u64 row_len), then stream bytes 0..4, then all
 *           stream bytes from offset 9; so a stream read with other dimensions is refused
 *   9  u8[A] arithmetic-coded part (below), exactly as many bytes as the decoder reads
 *   .. u8[] raw part: the raw bits named below, in coding order, packed least significant bit
 *           first (a raw field of k bits is written least significant bit first), then zero
 *           bits up to a whole byte; it ends the stream exactly
 *
 * Range coder (LZMA-style, carry propagated by the encoder): the decoder keeps a 32-bit range R
 * (starts 0xFFFFFFFF) and a 32-bit value V (starts with the part's first 4 bytes, big-endian).
 * A bit with probability P0 (16-bit, P(bit = 0) = P0 / 65536) splits at B = (R >> 16) * P0:
 * V < B gives 0 and R = B, else 1 with V -= B, R -= B. After each bit, while R < 2^24: R <<= 8,
 * V = V << 8 | next byte. The encoder flushes its low end exactly, so a valid stream leaves
 * V == 0 after the last bit with no byte left. The decoder checks the CRC first, then that end
 * state, the exact raw length and the zero padding, and never reads past either part, so
 * truncated, padded or corrupted streams are refused. (The end state alone is a weak check on
 * short streams: a corrupted path can end on the same round value; hence the CRC.)
 *
 * Adaptive bits: each context holds two 16-bit estimates a, b of P0 (start 32768, or the prior
 * below for bucket and mantissa bits when config bit 4 is set); the coder
 * uses P0 = (a + b) / 2 (integer), then moves a by (target - a) >> s1 and b by
 * (target - b) >> s2 with target 65535 for a 0 bit, 0 for a 1 bit (integer, exact). Rate sets
 * r: (s1, s2) = (4, 7), (5, 8), (5, 7), (4, 6).
 *
 * Scales (first, in order): with e the exponent field (8 bits for 32-bit words, 5 for 16-bit)
 * and d = e - e_prev (e_prev starts at the midpoint 127 resp. 15): adaptive bit "sign bit of
 * the word"; adaptive bit "d != 0"; if so, adaptive bit "d < 0", then |d| - 1 in unary over
 * adaptive bits (the i-th with its own context) up to 6 ones; |d| - 1 == 6 is an escape
 * followed by e itself as a raw field. Then the mantissa field (23 resp. 10 bits) as a raw
 * field. Decoded exponents wrap modulo the field width.
 *
 * Codes (then, row by row): a code c with m = |c| has bucket g = 0 for m == 0, else
 * floor(log2 m) + 1 (0..7 for int8, 0..3 for int4). Its context x in 0..9 quantizes a predicted
 * magnitude: with L(v) = 16 * floor(log2 v) + the 4 bits below the leading one of v (v >= 1, a
 * piecewise-linear log2 in 1/16 units) and
 *   first row:  lp = L(16 * S + 2 * G + 1) - L(j + 2)
 *   later rows: lp = L(C[j] + 1) + L(16 * S + 4 * G + 1) - L(T + 4 * G + 1)
 * x = 0 when lp < 64, else min(9, (lp - 64) / 16 + 1). Here j is the position in the row,
 * S the sum of m over the row so far, T the sum of C[k] over k < j (each taken before its
 * update), G the tensor's running mean magnitude in 1/16 units (starts 480; after each row
 * G = (16 * S_row + 4 * G) / (row_len + 4), integer division) and C[j] the column mean in 1/16
 * units: 16 * m in the first row, then C[j] += floor((16 * m - C[j]) / 2^k) with k = 1 + the
 * column rate field of the config.
 * Prior (config bit 4): for context x, w[0] = 2^40, w[k] = (w[k-1] * R_x) >> 16 for
 * k = 1..qmax (a geometric law of mean 2^(x - 1/2), x >= 1, resp. 1/2), with R_x (Q16) =
 * 21845, 38390, 48418, 55691, 60214, 62762, 64119, 64820, 65176, 65355 for x = 0..9. A bucket
 * node starts at a = b = clamp(65536 * (mass of its 0-subtree) / (mass of the node), 64, 65472)
 * (masses: sums of w over the buckets below; integer division); the mantissa nodes of bucket
 * g likewise, with the bucket's values split in halves (node 1) and quarters (nodes 2, 3) by
 * their top mantissa bits (g = 2: halves only).
 * The bucket is coded as a binary tree (3 levels for int8, 2 for int4; node n starts at 1,
 * child 2n + bit, most significant bit of g first) with adaptive bits per (x, node). For g >= 2
 * the g - 1 bits of m - 2^(g-1) follow, most significant first: the first two as a tree with
 * adaptive bits per (x, g, node), the rest as one raw field. For m > 0 an adaptive sign bit
 * (1 = negative) follows, its context the signs (0, +, -) of the previous code in the row and
 * of the code at j in the previous row (3 x 3 contexts, "0" when there is none).
 */
#ifndef KESTREL_WCODE_H
#define KESTREL_WCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kestrel/kestrel.h"

/* Scratch bytes the coder needs for rows of row_len codes (column state). */
size_t ks__wcode_scratch_bytes(uint64_t row_len);

/* Encodes scales (num_scales words of scale_bits 16 or 32, little-endian) and codes
 * (num_rows * row_len, each in [-qmax, qmax]) into dst (dst_cap bytes). Tries all 32 configs
 * and keeps the smallest stream (so encoding costs about 32 decodes). Returns
 * KS_STATUS_LIMIT_EXCEEDED when no stream fits dst_cap, and KS_STATUS_INVALID_ARGUMENT for bad
 * parameters or out-of-range codes. */
ks_status ks__wcode_encode(const uint8_t *scales, uint64_t num_scales, uint32_t scale_bits,
                           const int8_t *codes, uint64_t num_rows, uint64_t row_len, int32_t qmax,
                           void *scratch, uint8_t *dst, size_t dst_cap, size_t *size_out);

/* Decodes a stream of exactly src_size bytes. Writes scales_out[num_scales * scale_bits / 8]
 * and codes_out[num_rows * row_len]. Returns KS_STATUS_INVALID_MODEL when the stream is
 * malformed (outputs then undefined, but never written out of bounds). Runs in time linear in
 * the output whatever the input. */
ks_status ks__wcode_decode(const uint8_t *src, size_t src_size, uint64_t num_scales,
                           uint32_t scale_bits, uint8_t *scales_out, uint64_t num_rows,
                           uint64_t row_len, int32_t qmax, void *scratch, int8_t *codes_out);

/* Byte coder ("bcode", .ksm 1.2 PACKED section): the same range coder and adaptive bits as
 * above, for arbitrary bytes b[0..n) (the model's tables: names, shapes, node parameters,
 * scales). Byte i is coded as 8 adaptive bits, most significant first, each with one of:
 *   order-1: O[b[i-1]][node] (b[-1] = 0), node the position in the byte's binary tree (1, then
 *            2 node + bit), 256 x 256 contexts;
 *   match:   M[len][e], len 1..15, e the bit at the same position of the predicted byte b[P].
 * Match state (P, len), len 0 = no match; table T of 65536 positions, all 0 at the start. Before
 * byte i, when len == 0 and i >= 2: x = b[i-2] * 256 + b[i-1]; if T[x] != 0 then P = T[x],
 * len = 1. While len > 0 the bits use M; a bit that differs from e sets len = 0 and the rest of
 * the byte uses O. After byte i: T[x] = i (i >= 2, x as above); if len > 0: P += 1,
 * len = min(len + 1, 15). Every probability starts at 1/2 and adapts with the config's rates
 * (s1, s2) as above.
 * Stream layout:
 *   0  u8   config: bits 0..1 rate set r (as above); bits 2..7 zero
 *   1  u32  CRC-32 (as in ksm.h) of the decoded bytes followed by their count as u64
 *   5  u8[] arithmetic-coded part, to the end of the stream; a valid stream leaves V == 0
 *           after the last bit with every byte consumed (checked, as above) */

/* Scratch bytes bcode needs (the context table). */
size_t ks__bcode_scratch_bytes(void);

/* Codes src[n] into dst (dst_cap bytes), trying the 4 rate sets and keeping the smallest.
 * KS_STATUS_LIMIT_EXCEEDED when no stream fits. */
ks_status ks__bcode_encode(const uint8_t *src, size_t n, void *scratch, uint8_t *dst,
                           size_t dst_cap, size_t *size_out);

/* Decodes a stream of exactly src_size bytes into dst[n]. KS_STATUS_INVALID_MODEL when it is
 * malformed or does not decode to exactly n bytes with the stored CRC. Time linear in n. */
ks_status ks__bcode_decode(const uint8_t *src, size_t src_size, void *scratch, uint8_t *dst,
                           size_t n);

#endif /* KESTREL_WCODE_H */
