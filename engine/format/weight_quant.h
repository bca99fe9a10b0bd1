/* Weight-only compression of .ksm constants: quantizers, payload layout and decoders.
 * Not a published API. Used by the .ksm writer (ks-convert --weights) and reader (decodes to F32
 * once at load, so kernels see ordinary F32 constants). Pure functions; thread-safe.
 *
 * Geometry: a weight tensor of num_elems values has num_channels = dims[0] output channels
 * (conv OHWI, conv-transpose OHWI, FC [O, I]); each channel is one contiguous row of
 * row = num_elems / num_channels values (the reduction, i.e. input, dimension).
 *
 * Payload (the bytes at the tensor's data_offset/data_size in the WEIGHTS section):
 *   INT8_CHANNEL: f32 scale[num_channels]; then codes
 *                 value[i] = (float)code[i] * scale[i / row], code in [-127, 127] (int8)
 *   INT4_BLOCK:   scale[num_channels * blocks_per_row] (f16 or f32, see scale_dtype), where
 *                 blocks_per_row = ceil(row / block_size) and block b of channel c covers
 *                 row elements [b * block_size, min(row, (b + 1) * block_size)); then codes:
 *                 4-bit two's-complement codes in [-7, 7], element i in byte i / 2, low nibble
 *                 first for even i; value[i] = (float)code[i] * scale[c * blocks_per_row + b]
 *   codes are stored raw (coder RAW: num_elems bytes for int8, ceil(num_elems / 2) for int4)
 *   or as one rANS stream of those bytes (coder RANS, see rans.h) filling the payload's rest.
 * Coder WCODE (context-adaptive binary arithmetic coding, see weight_coder.h): the whole payload is
 * one wcode stream holding the scales (32-bit words for F32, 16-bit for F16, in the order above)
 *   and then the signed codes of the num_channels rows of row values (qmax 127 for
 *   INT8_CHANNEL, 7 for INT4_BLOCK); it decodes to exactly the scales and codes above. Since
 *   every scale costs at least 10 raw bits, readers refuse a WCODE payload of fewer bytes than
 *   scales (before allocating anything).
 */
#ifndef KESTREL_WQUANT_H
#define KESTREL_WQUANT_H

#include "src/ir.h"

enum {
    KS__WENC_INT8_CHANNEL = 1,
    KS__WENC_INT4_BLOCK = 2,
    KS__WENC_LOSSLESS = 3, /* since .ksm 1.2: the constant's own bytes, losslessly coded */
};
enum {
    KS__WCODER_RAW = 0,
    KS__WCODER_RANS = 1,
    KS__WCODER_WCODE = 2,
    KS__WCODER_BCODE = 3, /* LOSSLESS only (.ksm 1.2): the bcode byte coder of weight_coder.h */
    /* LOSSLESS F32 only (.ksm 1.2, added after the first 1.2 writers): every value is exactly an
     * f16; the payload is the bcode stream of the f16 bit patterns */
    KS__WCODER_F16_BCODE = 4,
};

#define KS__WENC_MAX_BLOCK 65536u
/* A hostile file must not make the reader allocate far more than it holds: decoded bytes are
 * limited to this multiple of the encoded payload plus KS__WENC_RATIO_SLACK bytes. */
#define KS__WENC_MAX_RATIO 256u
#define KS__WENC_RATIO_SLACK 65536u

typedef struct ks__wenc_params {
    uint8_t encoding;    /* KS__WENC_* */
    uint8_t coder;       /* KS__WCODER_* */
    uint8_t scale_dtype; /* KS_DTYPE_F32, or KS_DTYPE_F16 (INT4_BLOCK only) */
    uint32_t block_size; /* INT4_BLOCK: 1..KS__WENC_MAX_BLOCK; INT8_CHANNEL: 0 */
    /* encode only: entropy coders tried when coder != RAW, as a mask of 1 << KS__WCODER_*;
     * 0 tries RANS and WCODE. The smallest payload wins (RAW when no coder pays off). */
    uint8_t entropy_coders;
    /* encode only, INT8_CHANNEL: per-channel scales (finite, > 0; num_channels entries) to use
     * instead of the clip search, codes round(w / scale) clamped to [-127, 127]. Values that
     * already are code * scale (an earlier rounding, e.g. ks-quant's) then keep their codes. */
    const float *scales;
} ks__wenc_params;

/* Checks params and geometry; returns the number of scales or 0 when invalid. */
uint64_t ks__wenc_num_scales(const ks__wenc_params *p, uint64_t num_elems, uint64_t num_channels);

/* Quantizes w[num_elems] into a payload allocated from a (free with ks__free). p->coder RANS or
 * WCODE means "entropy-code": p->coder becomes the coder of the smallest payload among
 * p->entropy_coders and RAW; p->scale_dtype F16 falls back to F32 when a
 * scale overflows f16, so p is updated. When dequant_out is non-NULL it receives the values the
 * payload decodes to. Returns KS_STATUS_UNSUPPORTED for non-finite weights (keep them raw). */
ks_status ks__wenc_encode(const ks_allocator *a, const float *w, uint64_t num_elems,
                          uint64_t num_channels, ks__wenc_params *p, uint8_t **payload_out,
                          size_t *size_out, float *dequant_out);

/* Lossless int8 detection: true when every value of each of the num_channels rows is exactly
 * (float)code * scale for one scale per row and codes in [-127, 127] (weights an int8 rounding
 * already produced, e.g. decoded int8 weight-only storage or ks-quant's fp32 layers); the scales
 * go to scales[num_channels] (all-zero rows get 1). Encoding with them (p->scales) then stores
 * the values bit for bit. */
bool ks__wenc_find_int8_scales(const float *w, uint64_t num_elems, uint64_t num_channels,
                               float *scales);

/* Decodes a payload into out[num_elems] (F32). Scratch for entropy-coded codes comes from a.
 * Returns KS_STATUS_INVALID_MODEL (err says why) for any inconsistency. */
ks_status ks__wenc_decode(const ks_allocator *a, const uint8_t *payload, size_t size,
                          const ks__wenc_params *p, uint64_t num_elems, uint64_t num_channels,
                          float *out, char *err, size_t err_cap);

/* LOSSLESS payloads (.ksm 1.2): the tensor keeps its dtype, dims and quantization; the payload
 * decodes to exactly its num_bytes raw bytes. Coder RAW: the bytes themselves. RANS: one rANS
 * stream of the bytes (rans.h). BCODE: one bcode stream of the bytes (weight_coder.h; order-1
 * context and match model, e.g. for I32 biases, whose high bytes follow the low ones). WCODE (I8
 * tensors only): one wcode stream (weight_coder.h) with no
 * scales (32-bit scale words, count 0) and num_rows rows of num_bytes / num_rows codes, each in
 * [-127, 127], row-major in the tensor's byte order. num_rows is stored in the ENCODED entry's
 * block size field: 1..num_bytes and dividing num_bytes for WCODE, 0 for RAW and RANS.
 * F16_BCODE (F32 tensors only): one bcode stream of num_bytes / 2 bytes, the little-endian f16
 * bit patterns of the values, which widen to the stored F32 values bit for bit (writers use it
 * only where every value round-trips; TFLite models often carry f16 weights as F32). */

/* Codes bytes[num_bytes] (the values of a tensor of dtype) into a payload allocated from a: the
 * smallest of RAW and the coders in p->entropy_coders (0: RANS, BCODE, for I8 WCODE and for F32
 * F16_BCODE). Sets p->encoding, p->coder, p->scale_dtype (0) and p->block_size (rows). */
ks_status ks__wenc_encode_lossless(const ks_allocator *a, const uint8_t *bytes, size_t num_bytes,
                                   ks_dtype dtype, uint64_t num_rows, ks__wenc_params *p,
                                   uint8_t **payload_out, size_t *size_out);

/* Decodes a LOSSLESS payload into out[num_bytes]. KS_STATUS_INVALID_MODEL (err says why) for
 * any inconsistency, including a payload that would decode to more than
 * KS__WENC_MAX_RATIO x its size + KS__WENC_RATIO_SLACK bytes. */
ks_status ks__wenc_decode_lossless(const ks_allocator *a, const uint8_t *payload, size_t size,
                                   const ks__wenc_params *p, ks_dtype dtype, size_t num_bytes,
                                   uint8_t *out, char *err, size_t err_cap);

#endif /* KESTREL_WQUANT_H */
