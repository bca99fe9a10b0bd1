/* Minimal bounds-checked protobuf wire-format reader, used by the ONNX importer and the
 * face-geometry metadata reader (kestrel_pb: not part of libkestrel, which needs no protobuf).
 * Not a published API.
 *
 * Wire format (https://protobuf.dev/programming-guides/encoding/): a message is a sequence of
 * records `key value`, key = varint (field_number << 3 | wire_type). Wire types: 0 varint
 * (1..10 bytes, 7 bits each, little-endian groups, high bit = continuation), 1 fixed 8 bytes,
 * 2 length-delimited (varint length then that many bytes: strings, bytes, sub-messages and packed
 * repeated scalars), 5 fixed 4 bytes. Types 3/4 (groups) are deprecated and rejected here.
 * All readers work on borrowed spans of the caller's buffer and never read past `end`.
 */
#ifndef KESTREL_BASE_PB_H
#define KESTREL_BASE_PB_H

#include <stddef.h>
#include <stdint.h>

#define KS_PB_VARINT 0u
#define KS_PB_FIXED64 1u
#define KS_PB_LEN 2u
#define KS_PB_FIXED32 5u

typedef struct ks__pb_span {
    const uint8_t *ptr;
    size_t size_bytes;
} ks__pb_span;

typedef struct ks__pb_reader {
    const uint8_t *p;
    const uint8_t *end;
} ks__pb_reader;

/* One record: field number, wire type and its value (u64 for varint/fixed, span for LEN). */
typedef struct ks__pb_field {
    uint32_t number;
    uint32_t wire;
    uint64_t u64;
    ks__pb_span span;
} ks__pb_field;

/* Reader-level errors (returned by ks__pb_next as negative values). */
#define KS_PB_ERR_TRUNCATED (-1)
#define KS_PB_ERR_VARINT (-2) /* varint longer than 10 bytes */
#define KS_PB_ERR_WIRE (-3)   /* group or unknown wire type */
#define KS_PB_ERR_FIELD (-4)  /* field number 0 */

ks__pb_reader ks__pb_reader_init(ks__pb_span span);
/* Reads the next record. Returns 1 on success, 0 at end of message, < 0 on malformed input. */
int ks__pb_next(ks__pb_reader *r, ks__pb_field *f);
/* Human-readable text of a KS_PB_ERR_* value. */
const char *ks__pb_error_string(int err);

/* Repeated scalar fields may be packed (one LEN record) or not (one record per element). These
 * count/decode all elements of field `number` in message `msg`. `kind` selects the element
 * encoding: KS_PB_VARINT (int64/int32 as varint), KS_PB_FIXED32 (float), KS_PB_FIXED64 (double,
 * converted to float). Count is at most the
 * message size in bytes, so callers can allocate from it without overflow concerns.
 * Return < 0 on malformed input. */
int ks__pb_count_repeated(ks__pb_span msg, uint32_t number, uint32_t kind, size_t *count_out);
/* Writes up to `cap` elements: varints as int64 to out_i64, fixed32/64 as float to out_f32. */
int ks__pb_read_repeated(ks__pb_span msg, uint32_t number, uint32_t kind, int64_t *out_i64,
                         float *out_f32, size_t cap, size_t *count_out);

#endif /* KESTREL_BASE_PB_H */
