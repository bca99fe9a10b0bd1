/* The .ksm model format: reader and writer. Not a published API (ks__ prefix).
 *
 * A .ksm file holds one IR graph (engine/src/ir.h) and its weights. It is designed to be mapped
 * read-only and used in place: every constant's bytes sit 64-byte aligned in one weight section.
 * All integers are little-endian. Strings are u32 byte length + bytes (no NUL, UTF-8).
 *
 * Header (64 bytes, offset 0)
 *   0  u8[4]  magic "KSMF"
 *   4  u16    major version (KSM_VERSION_MAJOR). A reader refuses a greater major.
 *   6  u16    minor version. Minor bumps only add optional content older readers may skip.
 *   8  u32    header size in bytes (64)
 *   12 u32    flags (bit 0: checksum present; other bits reserved, must be 0)
 *   16 u64    file size in bytes (must equal the real size)
 *   24 u32    number of sections (<= 32)
 *   28 u32    CRC-32 (IEEE 802.3, reflected 0xEDB88320) of the whole file with bytes 28..31 read
 *             as zero
 *   32 u64    offset of the section table
 *   40 u8[24] reserved, zero
 *
 * Section table: `number of sections` entries of 24 bytes:
 *   0  u32 kind   (1 META, 2 TENSORS, 3 NODES, 4 GRAPH_IO, 5 WEIGHTS; unknown kinds are skipped)
 *   4  u32 flags  (reserved, 0)
 *   8  u64 offset (from file start; WEIGHTS offset is a multiple of 64)
 *   16 u64 size in bytes
 * Sections must lie inside the file. Kinds 1..5 each appear exactly once.
 *
 * META:     u32 count; count x { string key; string value }
 * TENSORS:  u32 count; count x {
 *             string name; u8 dtype (ks_dtype); u8 rank (<= 8); u16 flags (bit 0: constant);
 *             i64 dims[rank] (-1: dynamic);
 *             u64 data_offset (from WEIGHTS section start, multiple of 64); u64 data_size;
 *             u32 quant_count; i32 quant_axis; f32 scales[quant_count]; i32
 * zero_points[quant_count] }   non-constant tensors have data_offset = data_size = 0. NODES:    u32
 * count; count x { u16 op (ops.inc id); u16 reserved (0); string name; u32 num_inputs; i32
 * inputs[num_inputs] (-1 = absent optional); u32 num_outputs; i32 outputs[num_outputs]; u32
 * num_iparams (<= 32); i32 iparams[]; u32 num_fparams (<= 8); f32 fparams[] }   nodes are stored in
 * execution order. GRAPH_IO: u32 num_inputs; i32 tensor ids[]; u32 num_outputs; i32 tensor ids[]
 * WEIGHTS:  raw constant bytes, each constant 64-byte aligned, zero padding between.
 *
 * The reader checks every count, offset and size against the section it lies in before use, then
 * runs ks__graph_validate (ids, arity, topological order, constant sizes).
 */
#ifndef KESTREL_KSM_H
#define KESTREL_KSM_H

#include "ir.h"

#define KSM_MAGIC "KSMF"
#define KSM_VERSION_MAJOR 1
#define KSM_VERSION_MINOR 0
#define KSM_HEADER_BYTES 64
#define KSM_MAX_SECTIONS 32
#define KSM_WEIGHT_ALIGN 64

enum {
    KSM_SECTION_META = 1,
    KSM_SECTION_TENSORS = 2,
    KSM_SECTION_NODES = 3,
    KSM_SECTION_GRAPH_IO = 4,
    KSM_SECTION_WEIGHTS = 5,
};

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

uint32_t ks__crc32(uint32_t crc, const uint8_t *data, size_t size_bytes);

#endif /* KESTREL_KSM_H */
