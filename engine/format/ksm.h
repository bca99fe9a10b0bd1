/* The .ksm model format: reader and writer. Not a published API (ks__ prefix).
 *
 * A .ksm file holds one IR graph (engine/src/ir.h) and its weights. It is designed to be mapped
 * read-only and used in place: every constant's bytes sit 64-byte aligned in one weight section
 * (except encoded payloads, which are decoded at load, see below).
 * All integers are little-endian. Strings are u32 byte length + bytes (no NUL, UTF-8).
 *
 * Header (64 bytes, offset 0)
 *   0  u8[4]  magic "KSMF"
 *   4  u16    major version (KSM_VERSION_MAJOR). A reader refuses a greater major.
 *   6  u16    minor version. Minor bumps add optional content; content an older reader cannot
 *             skip is marked so that it refuses the file cleanly (1.1: tensor flag 0x2; 1.2:
 *             header flag bit 1). Writers write 1.1 unless the file uses 1.2 content.
 *   8  u32    header size in bytes (64)
 *   12 u32    flags (bit 0: checksum present; bit 1: the file uses format 1.2 content
 *             (PACKED section, tensor flags 0x4/0x8, LOSSLESS and unaligned payloads), set so
 *             that 1.1 readers refuse it as an unknown flag; other bits reserved, must be 0)
 *   16 u64    file size in bytes (must equal the real size)
 *   24 u32    number of sections (<= 32)
 *   28 u32    CRC-32 (IEEE 802.3, reflected 0xEDB88320) of the whole file with bytes 28..31 read
 *             as zero
 *   32 u64    offset of the section table
 *   40 u8[24] reserved, zero
 *
 * Section table: `number of sections` entries of 24 bytes:
 *   0  u32 kind   (1 META, 2 TENSORS, 3 NODES, 4 GRAPH_IO, 5 WEIGHTS, 6 ENCODED (since 1.1),
 *                 7 PACKED (since 1.2); unknown kinds are skipped)
 *   4  u32 flags  (reserved, 0)
 *   8  u64 offset (from file start; WEIGHTS offset is a multiple of 64)
 *   16 u64 size in bytes
 * Sections must lie inside the file. Kinds 1..5 each appear exactly once, in the section table
 * or inside PACKED (WEIGHTS never packed); kinds 6 and 7 at most once.
 *
 * META:     u32 count; count x { string key; string value }
 * TENSORS:  u32 count; count x {
 *             string name; u8 dtype (ks_dtype); u8 rank (<= 8); u16 flags (bit 0: constant;
 *             bit 1: encoded, since 1.1; bit 2: zero points omitted, since 1.2; bit 3: f16
 *             scales, since 1.2; other bits must be 0);
 *             i64 dims[rank] (-1: dynamic);
 *             u64 data_offset (from WEIGHTS section start; a multiple of 64 unless the tensor
 *             is encoded); u64 data_size;
 *             u32 quant_count; i32 quant_axis; f32 scales[quant_count] (with flag bit 3:
 *             u16 h[quant_count] instead, scale = f16_to_f32(h) / 127.0f, an IEEE f32
 *             division: symmetric int8 scales max|w| / 127 of f16 weights; writers use it only
 *             where every scale comes back bit for bit);
 *             i32 zero_points[quant_count] (absent with flag bit 2: all zero) }
 *           flag bits 2 and 3 need quant_count > 0. Zero points of U8, I8 and I16 tensors
 *           must lie in their dtype's range (readers since 1.2 refuse others).
 *           non-constant tensors have data_offset = data_size = 0.
 * NODES:    u32 count; count x { u16 op (ops.inc id); u16 reserved (0); string name;
 *             u32 num_inputs; i32 inputs[num_inputs] (-1 = absent optional); u32 num_outputs;
 *             i32 outputs[num_outputs]; u32 num_iparams (<= 32); i32 iparams[];
 *             u32 num_fparams (<= 8); f32 fparams[] }   nodes are stored in execution order.
 * GRAPH_IO: u32 num_inputs; i32 tensor ids[]; u32 num_outputs; i32 tensor ids[]
 * WEIGHTS:  constant bytes: each in-place (not encoded) constant 64-byte aligned, zero padding
 *           between; encoded payloads may sit at any offset (1.2 writers put them last, back to
 *           back, since the reader decodes them into aligned buffers).
 *
 * Weight-only compression (format 1.1). A constant with tensor flag bit 1 (0x2, "encoded") keeps
 * dtype F32 and its dims in TENSORS, but its data_offset/data_size hold an encoded payload
 * (layout in weight_quant.h: per-channel int8 or per-block int4 codes, raw, rANS- or wcode-coded)
 * instead of raw F32 values. 1.0 readers refuse the unknown flag, so such files fail cleanly
 * there. Every encoded tensor has exactly one entry in the ENCODED section:
 * ENCODED:  u32 count; count x {
 *             u32 tensor id; u8 encoding (1 INT8_CHANNEL, 2 INT4_BLOCK, 3 LOSSLESS since 1.2);
 *             u8 coder (0 raw,
 *             1 rANS, 2 wcode: context-adaptive arithmetic coding of scales and codes, see
 *             weight_coder.h; readers from before coder 2 refuse it as bad encoding parameters);
 *             u8 scale dtype (ks_dtype: 1 F32, 2 F16); u8 reserved (0);
 *             u32 block size (INT4_BLOCK, 1..65536; else 0); u32 reserved (0) }   (16 bytes each)
 * The reader decodes encoded tensors into F32 buffers owned by the graph (so the model owns
 * them and stays immutable); kernels never see the encoding. Output channels are dims[0].
 * A payload may decode to at most 256 x its size + 64 KiB bytes (the reader refuses more before
 * allocating, so a small hostile file cannot demand a huge buffer).
 * Writers may also store conv/FC weights as plain F16 constants (--weights fp16), which is
 * already valid 1.0 content.
 *
 * Lossless constants (format 1.2). ENCODED encoding 3 (LOSSLESS) stores any constant's own bytes
 * losslessly coded: the tensor keeps its dtype (any dtype with a size), dims and quantization
 * (e.g. the I8 weights of a ks-quant model, whose per-channel scales stay in TENSORS); coder
 * 0 raw bytes, 1 rANS of the bytes, 2 wcode (I8 only: int8 codes in [-127, 127], no scales),
 * 3 bcode of the bytes (weight_coder.h), 4 (F32 only, added within 1.2: older 1.2 readers refuse it
 * as bad encoding parameters) bcode of the values' f16 bit patterns, for F32 constants whose
 * every value is an f16 (widened bit for bit); scale dtype 0; the block size field holds the number
 * of wcode rows (1..bytes, dividing them) for coder 2 and 0 otherwise. Payload layout in
 * weight_quant.h. The reader decodes it into a graph-owned buffer of num_elems x dtype size bytes
 * (same 256x + 64 KiB bound). Encodings 1 and 2 still need an F32 tensor.
 *
 * Packed tables (format 1.2). Section kind 7 PACKED replaces the META, TENSORS, NODES,
 * GRAPH_IO and ENCODED entries of the section table with one compressed copy of them:
 * PACKED:   u32 unpacked size U; u32 method (1: bcode, see weight_coder.h); then the bcode stream
 * of exactly U bytes, to the end of the section. U <= 256 x the stream size + 64 KiB. Unpacked: u32
 * count (<= 8); count x { u32 kind (1, 2, 3, 4 or 6); u32 reserved (0); u64 size }; then the
 * sections' bytes back to back in that order, exactly filling U. A kind packed here must not also
 * be in the section table. Writers pack only when it is smaller.
 *
 * The reader checks every count, offset and size against the section it lies in before use, then
 * runs ks__graph_validate (ids, arity, topological order, constant sizes).
 */
#ifndef KESTREL_KSM_H
#define KESTREL_KSM_H

#include "src/ir.h"

#define KSM_MAGIC "KSMF"
#define KSM_VERSION_MAJOR 1
#define KSM_VERSION_MINOR 2
#define KSM_HEADER_BYTES 64
#define KSM_MAX_SECTIONS 32
#define KSM_WEIGHT_ALIGN 64

enum {
    KSM_SECTION_META = 1,
    KSM_SECTION_TENSORS = 2,
    KSM_SECTION_NODES = 3,
    KSM_SECTION_GRAPH_IO = 4,
    KSM_SECTION_WEIGHTS = 5,
    KSM_SECTION_ENCODED = 6,
    KSM_SECTION_PACKED = 7,
};

#define KSM_FLAG_CHECKSUM 0x1u
#define KSM_FLAG_NEEDS_1_2 0x2u

#define KSM_TENSOR_CONST 0x1u
#define KSM_TENSOR_ENCODED 0x2u
#define KSM_TENSOR_NO_ZERO_POINTS 0x4u
#define KSM_TENSOR_F16_SCALES 0x8u

/* Which conv/FC weights (input 1 of CONV2D, CONV2D_TRANSPOSE, FULLY_CONNECTED, F32, used by
 * nothing else) the writer compresses, and how. */
typedef enum ks__ksm_weights {
    KS__KSM_WEIGHTS_FP32 = 0, /* unchanged */
    KS__KSM_WEIGHTS_FP16 = 1, /* stored as F16 constants (kernels accept F16 weights) */
    KS__KSM_WEIGHTS_INT8 = 2, /* symmetric int8 per output channel, decoded to F32 at load */
    KS__KSM_WEIGHTS_INT4 = 3, /* symmetric int4 per block along the input dims, ditto */
} ks__ksm_weights;

typedef struct ks__ksm_write_opts {
    ks__ksm_weights weights;
    bool entropy;        /* entropy-code int8/int4 codes (per tensor, only where it pays off) */
    uint32_t block_size; /* int4 block (0: 32) */
    bool f32_scales;     /* int4 scales as F32 (default F16) */
    /* with entropy: coders tried per tensor, mask of 1 << KS__WCODER_* (weight_quant.h); 0 = rANS
     * and wcode, the smaller payload wins */
    uint8_t entropy_coders;
    /* format 1.2, lossless: all-zero zero points omitted, f16-exact int8 scales as f16,
     * constants losslessly coded where smaller (rANS, wcode for int8, bcode; restricted by
     * entropy_coders), coded payloads unaligned, and the tables packed (bcode) */
    bool pack;
    /* optional, num_select entries per tensor id: with a selection, only the weights it marks
     * (non-zero) are compressed (ks-quant: the layers left in fp32); int8_scales (INT8, may be
     * NULL) gives a marked tensor's per-output-channel scales (NULL entry: searched), so weights
     * already rounded to code * scale are stored with exactly those codes */
    const uint8_t *select;
    const float *const *int8_scales;
    uint32_t num_select;
} ks__ksm_write_opts;

/* Parses a .ksm image into g (freshly ks__graph_init'ed). Constants point into `data`
 * (KS__TENSOR_BORROWED), so `data` must outlive g. With verify_checksum, the CRC is checked.
 * On failure g may hold partial content (free it) and err names the problem. */
ks_status ks__ksm_read(const uint8_t *data, size_t size_bytes, bool verify_checksum, ks__graph *g,
                       char *err, size_t err_cap);

/* Serializes g into a newly allocated buffer (g->alloc); the caller frees it with ks__free. */
ks_status ks__ksm_write(const ks__graph *g, uint8_t **data_out, size_t *size_out, char *err,
                        size_t err_cap);

/* Serializes g and writes it to path (atomically through a temporary file + rename). */
ks_status ks__ksm_write_file(const ks__graph *g, const char *path, char *err, size_t err_cap);

/* As ks__ksm_write / ks__ksm_write_file with weight compression; opts NULL = all defaults. */
ks_status ks__ksm_write_ex(const ks__graph *g, const ks__ksm_write_opts *opts, uint8_t **data_out,
                           size_t *size_out, char *err, size_t err_cap);
ks_status ks__ksm_write_file_ex(const ks__graph *g, const ks__ksm_write_opts *opts,
                                const char *path, char *err, size_t err_cap);

/* The weights the writer may store compressed (--weights, packing, ks-quant's int8 weights of
 * fp32 layers): out[id] (num_tensors entries) is 1 for F32 constants without quantization
 * params, at least 32 values, read only as the weight input of CONV2D, CONV2D_TRANSPOSE or
 * FULLY_CONNECTED and not graph outputs; 0 elsewhere. */
ks_status ks__ksm_compressible_weights(const ks__graph *g, uint8_t *out);

/* Storage statistics of a .ksm image without decoding it (for ks-inspect's bits per weight):
 * bytes and value counts of all constants, and of the encoded ones among them. */
ks_status ks__ksm_weight_stats(const uint8_t *data, size_t size_bytes, uint64_t *stored_bytes_out,
                               uint64_t *num_values_out, uint64_t *encoded_bytes_out,
                               uint64_t *encoded_values_out, uint32_t *num_encoded_out);

/* Where a .ksm image's bytes go (ks-inspect --sizes). Sections by kind: bytes in the file,
 * and for packed kinds their unpacked size. */
typedef struct ks__ksm_sizes {
    uint64_t file_bytes;
    uint64_t section_bytes[8];              /* stored in the file */
    uint64_t packed_section_bytes[8];       /* unpacked size of sections inside PACKED */
    uint64_t name_bytes;                    /* TENSORS: names (with their length words) */
    uint64_t scale_bytes, zero_point_bytes; /* TENSORS: quantization arrays */
    uint64_t record_bytes;                  /* TENSORS: the rest (dtype, dims, offsets, ...) */
    uint64_t stored_bytes, num_values;      /* constants: stored bytes and values */
    uint64_t encoded_bytes, encoded_values; /* ... of which encoded */
    uint64_t padding_bytes;                 /* WEIGHTS bytes that are no constant's */
    /* constants by dtype (index ks_dtype < 16): stored bytes, and bytes once decoded */
    uint64_t dtype_stored_bytes[16], dtype_raw_bytes[16];
    uint32_t num_tensors, num_constants, num_encoded;
} ks__ksm_sizes;

ks_status ks__ksm_sizes_of(const uint8_t *data, size_t size_bytes, ks__ksm_sizes *out);

#endif /* KESTREL_KSM_H */
