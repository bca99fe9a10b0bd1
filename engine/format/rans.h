/* Static order-0 rANS entropy coder for weight bytes in .ksm files. Not a published API.
 *
 * Used by the .ksm writer (--entropy) and reader (decoded once at load). Pure functions, no
 * allocation, thread-safe.
 *
 * Stream layout (all integers little-endian):
 *   0  u32     number of coded bytes n (must equal the count the caller expects)
 *   4  u8      table kind:
 *              0 explicit: u8[32] presence bitmap (bit (s & 7) of byte (s >> 3) set when symbol
 *                s occurs), then freq for each present symbol in ascending order, 1..4096,
 *                summing to 4096 (KS__RANS_SCALE): one byte f when f < 128, else two bytes
 *                0x80 | (f & 0x7f), f >> 7 (second byte nonzero); no frequencies when n == 0
 *              1 int8 law / 2 int4-pair law (n > 0): u16 ratio R (1..65535), u8 vmax
 *                (<= 127, resp. <= 7). Weight of a signed code a: g[|a|] + 1 for |a| <= vmax,
 *                else 0, with g[0] = 65536, g[k] = (g[k-1] * R) >> 16 (integer). Kind 1 reads
 *                symbol s as int8; kind 2 as two signed nibbles (low, high) with weight
 *                w(low) * w(high). Weights are scaled to KS__RANS_SCALE by the shared integer
 *                normalization in rans.c (every nonzero weight gets >= 1).
 *   .. u32     final encoder state, in [2^23, 2^31)
 *   .. u8[]    renormalization bytes, read forward by the decoder
 * A valid stream ends exactly where its bytes end and leaves the decoder in state 2^23; the
 * decoder checks both, so truncated, padded or corrupted streams are reported, never over-read.
 */
#ifndef KESTREL_RANS_H
#define KESTREL_RANS_H

#include <stddef.h>
#include <stdint.h>

#include "kestrel/kestrel.h"

#define KS__RANS_SCALE_BITS 12
#define KS__RANS_SCALE (1u << KS__RANS_SCALE_BITS)

/* Upper bound of the encoded size of n bytes (header + at most 2 bytes per symbol). */
size_t ks__rans_bound(size_t n);

/* Encodes src[n] into dst (dst_cap bytes, at least ks__rans_bound(n) is always enough).
 * Returns KS_STATUS_LIMIT_EXCEEDED when dst is too small or n >= 2^32. */
ks_status ks__rans_encode(const uint8_t *src, size_t n, uint8_t *dst, size_t dst_cap,
                          size_t *size_out);

enum {
    KS__RANS_TABLE_EXPLICIT = 0,
    KS__RANS_TABLE_INT8 = 1,       /* symbols are int8 codes */
    KS__RANS_TABLE_INT4_PAIRS = 2, /* symbols are bytes of two int4 codes */
};

/* As ks__rans_encode, but with a hint of what the bytes are (KS__RANS_TABLE_*): the encoder then
 * also tries the 3-byte parametric table and keeps the smaller stream. */
ks_status ks__rans_encode_model(const uint8_t *src, size_t n, uint8_t model, uint8_t *dst,
                                size_t dst_cap, size_t *size_out);

/* Decodes a stream of exactly src_size bytes into dst[n]. Returns KS_STATUS_INVALID_MODEL when
 * the stream is malformed or does not hold exactly n symbols; dst content is then undefined. */
ks_status ks__rans_decode(const uint8_t *src, size_t src_size, uint8_t *dst, size_t n);

#endif /* KESTREL_RANS_H */
