/* Kestrel model bundles (.ksb): one deployable file per task, holding several .ksm models, the
 * pipeline graph JSON, labels and decoder/anchor configs.
 *
 * Usage:
 *     ks_bundle *b = NULL;
 *     if (ks_bundle_open_file("face_detect.ksb", NULL, &b)) { ... ks_last_error(NULL) ... }
 *     ks_pipeline *p = NULL;
 *     ks_pipeline_create_bundle(b, NULL, &p);       // models load zero-copy from the bundle
 *     ...
 *     ks_pipeline_destroy(p);
 *     ks_bundle_destroy(b);                          // after everything made from it
 *
 *     ks_bundle_writer *w = NULL;                    // writing
 *     ks_bundle_writer_create(NULL, &w);
 *     ks_bundle_writer_add(w, "graph", KS_BUNDLE_GRAPH, json, json_bytes);
 *     ks_bundle_writer_add(w, "detector", KS_BUNDLE_MODEL, ksm, ksm_bytes);
 *     ks_bundle_writer_write_file(w, "face_detect.ksb");
 *     ks_bundle_writer_destroy(w);
 *
 * Thread safety: an open ks_bundle is immutable and may be shared by any number of threads and
 * pipelines. A ks_bundle_writer is used by one thread at a time.
 *
 * Byte format (version 1.0). All integers little-endian.
 *
 * Header (64 bytes, offset 0)
 *   0  u8[4]  magic "KSBF"
 *   4  u16    major version (1). A reader refuses a greater major.
 *   6  u16    minor version (0). Minor bumps only add content older readers may ignore.
 *   8  u32    header size in bytes (64)
 *   12 u32    flags (bit 0: checksum present; other bits reserved, must be 0)
 *   16 u64    file size in bytes (must equal the real size)
 *   24 u32    number of entries (<= KS_BUNDLE_MAX_ENTRIES)
 *   28 u32    CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320, as in .ksm) of the whole file
 *             with bytes 28..31 read as zero; 0 when flag bit 0 is clear
 *   32 u64    offset of the entry table (64; a multiple of 64)
 *   40 u8[24] reserved, zero
 *
 * Entry table: `number of entries` records of 128 bytes each
 *   0  u32    kind (ks_bundle_kind; unknown kinds are kept and reported as-is)
 *   4  u32    flags (reserved, 0)
 *   8  u64    data offset from the file start; a multiple of 64 (so .ksm models map in place)
 *   16 u64    data size in bytes
 *   24 u32    CRC-32 of the data bytes (checked with the file checksum)
 *   28 u32    reserved, 0
 *   32 u8[96] name: UTF-8, 1..95 bytes, NUL-terminated, zero-padded; unique within the bundle
 *
 * Data: each entry's bytes at its offset, zero padding between entries. Entries lie after the
 * entry table, inside the file, in increasing offset order and without overlap.
 *
 * The reader checks every field above before any use; a hostile file yields a status
 * (KS_STATUS_INVALID_MODEL, _VERSION_MISMATCH, _CHECKSUM_MISMATCH or _LIMIT_EXCEEDED) and a
 * message naming the file, the entry and the offending value.
 */
#ifndef KESTREL_BUNDLE_H
#define KESTREL_BUNDLE_H

#include "kestrel/kestrel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KS_BUNDLE_MAGIC "KSBF"
#define KS_BUNDLE_VERSION_MAJOR 1
#define KS_BUNDLE_VERSION_MINOR 0
#define KS_BUNDLE_HEADER_BYTES 64u
#define KS_BUNDLE_ENTRY_BYTES 128u
#define KS_BUNDLE_NAME_BYTES 96u
#define KS_BUNDLE_ALIGN 64u
#define KS_BUNDLE_MAX_ENTRIES 1024u
#define KS_BUNDLE_MAX_BYTES (UINT64_C(4) << 30) /* 4 GiB */

/* Entry kinds. Values are frozen: they are stored in .ksb files. */
typedef enum ks_bundle_kind {
    KS_BUNDLE_FILE = 0,   /* anything else */
    KS_BUNDLE_MODEL = 1,  /* a .ksm model */
    KS_BUNDLE_GRAPH = 2,  /* pipeline graph JSON */
    KS_BUNDLE_LABELS = 3, /* text, one label per line */
    KS_BUNDLE_CONFIG = 4, /* JSON: anchors, decoder settings */
    KS_BUNDLE_KIND_COUNT
} ks_bundle_kind;

/* "file", "model", "graph", "labels", "config"; "unknown" otherwise. */
KS_API const char *ks_bundle_kind_string(uint32_t kind);

typedef struct ks_bundle ks_bundle;

#define KS_BUNDLE_NO_MMAP 0x1u       /* read the file into memory instead of mapping it */
#define KS_BUNDLE_SKIP_CHECKSUM 0x2u /* trust the file: skip the CRC checks */
#define KS_BUNDLE_COPY_BUFFER 0x4u   /* open_buffer copies; the buffer may then go */

typedef struct ks_bundle_desc {
    const ks_allocator *allocator; /* NULL: malloc. Must outlive the bundle. */
    uint32_t flags;                /* KS_BUNDLE_* */
} ks_bundle_desc;

typedef struct ks_bundle_entry {
    const char *name; /* lives with the bundle */
    uint32_t kind;    /* ks_bundle_kind, or an unknown value from a newer writer */
    const void *data; /* 64-byte aligned when the bundle is mapped or copied */
    size_t size_bytes;
} ks_bundle_entry;

/* Opens a .ksb file (mapped read-only unless KS_BUNDLE_NO_MMAP). desc may be NULL. */
KS_API ks_status ks_bundle_open_file(const char *path, const ks_bundle_desc *desc,
                                     ks_bundle **bundle_out);
/* Opens a bundle image in memory. Without KS_BUNDLE_COPY_BUFFER `data` must outlive the bundle;
 * when `data` is not 64-byte aligned it is copied regardless. */
KS_API ks_status ks_bundle_open_buffer(const void *data, size_t size_bytes,
                                       const ks_bundle_desc *desc, ks_bundle **bundle_out);
/* Everything made from the bundle (pipelines, models) must be destroyed first. NULL: no-op. */
KS_API void ks_bundle_destroy(ks_bundle *bundle);

KS_API uint32_t ks_bundle_num_entries(const ks_bundle *bundle);
KS_API ks_status ks_bundle_get_entry(const ks_bundle *bundle, uint32_t index,
                                     ks_bundle_entry *entry_out);
/* KS_STATUS_INVALID_ARGUMENT when there is no entry called `name`. */
KS_API ks_status ks_bundle_find(const ks_bundle *bundle, const char *name,
                                ks_bundle_entry *entry_out);

typedef struct ks_bundle_writer ks_bundle_writer;

KS_API ks_status ks_bundle_writer_create(const ks_allocator *allocator,
                                         ks_bundle_writer **writer_out);
KS_API void ks_bundle_writer_destroy(ks_bundle_writer *writer);
/* Adds an entry; `data` is copied. Names must be unique, 1..95 bytes. */
KS_API ks_status ks_bundle_writer_add(ks_bundle_writer *writer, const char *name, uint32_t kind,
                                      const void *data, size_t size_bytes);
/* Serializes into a new 64-byte aligned buffer from the writer's allocator; free it with
 * ks_bundle_buffer_free(writer-allocator, ptr). */
KS_API ks_status ks_bundle_writer_finish(ks_bundle_writer *writer, void **data_out,
                                         size_t *size_bytes_out);
KS_API void ks_bundle_buffer_free(const ks_allocator *allocator, void *data);
/* Serializes and writes to path through a temporary file and a rename. */
KS_API ks_status ks_bundle_writer_write_file(ks_bundle_writer *writer, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_BUNDLE_H */
