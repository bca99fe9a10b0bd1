/* Bounds-checked readers for FlatBuffers (the TFLite container) and FlexBuffers (the encoding of
 * TFLite custom-op options). Not a published API.
 *
 * Everything read is treated as hostile: every offset, vtable, vector length and string is
 * checked against the buffer before use, and nothing assumes alignment (bytes are assembled
 * explicitly, which also makes the readers endian-independent).
 *
 * FlatBuffers layout recap (all little-endian):
 *   - the buffer starts with a uoffset32 to the root table (and optionally a 4-byte identifier);
 *   - a table starts with an soffset32: vtable = table - soffset;
 *   - a vtable is u16 vtable_size, u16 table_size, then one u16 per field: the field's offset
 *     inside the table, 0 when the field is absent (the reader then uses the schema default);
 *   - reference fields (tables, vectors, strings) hold a uoffset32 relative to the field itself;
 *   - a vector is u32 count followed by the elements; a string is a byte vector (+ NUL).
 *
 * Functions return false on malformed input and record a short reason in fb->why and the
 * offending offset in fb->bad_offset. Absent fields are not errors: they yield the default, an
 * empty vector, or a table with pos == 0.
 */
#ifndef KESTREL_CONVERT_TFLITE_FB_H
#define KESTREL_CONVERT_TFLITE_FB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ks__fb {
    const uint8_t *data;
    size_t size;
    const char *why;   /* set on the first failure */
    size_t bad_offset; /* offset that failed the check */
} ks__fb;

typedef struct ks__fb_table {
    size_t pos; /* 0: absent */
    size_t vtable;
    uint32_t vt_size;
    uint32_t tbl_size;
} ks__fb_table;

typedef struct ks__fb_vec {
    size_t pos;     /* first element (0 when absent) */
    uint32_t count; /* 0 when absent */
    bool present;
} ks__fb_vec;

/* Little-endian loads from unaligned memory (caller has checked the bounds). */
static inline uint16_t ks__ld_u16(const uint8_t *p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t ks__ld_u32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t ks__ld_u64(const uint8_t *p) {
    return (uint64_t)ks__ld_u32(p) | ((uint64_t)ks__ld_u32(p + 4) << 32);
}
float ks__ld_f32(const uint8_t *p);
double ks__ld_f64(const uint8_t *p);

/* Opens the root table (checks the minimum size and the root offset). */
bool ks__fb_root(ks__fb *fb, ks__fb_table *root_out);
/* Opens the table that starts at pos. */
bool ks__fb_table_at(ks__fb *fb, size_t pos, ks__fb_table *t_out);

/* Position of scalar field `field` of `size_bytes` bytes, 0 when absent. */
bool ks__fb_field(ks__fb *fb, const ks__fb_table *t, uint32_t field, size_t size_bytes,
                  size_t *pos_out);

/* Scalar fields with schema defaults. */
bool ks__fb_get_u8(ks__fb *fb, const ks__fb_table *t, uint32_t field, uint8_t def, uint8_t *out);
bool ks__fb_get_i8(ks__fb *fb, const ks__fb_table *t, uint32_t field, int8_t def, int8_t *out);
bool ks__fb_get_i32(ks__fb *fb, const ks__fb_table *t, uint32_t field, int32_t def, int32_t *out);
bool ks__fb_get_u32(ks__fb *fb, const ks__fb_table *t, uint32_t field, uint32_t def, uint32_t *out);
bool ks__fb_get_u64(ks__fb *fb, const ks__fb_table *t, uint32_t field, uint64_t def, uint64_t *out);
bool ks__fb_get_f32(ks__fb *fb, const ks__fb_table *t, uint32_t field, float def, float *out);
bool ks__fb_get_bool(ks__fb *fb, const ks__fb_table *t, uint32_t field, bool *out);

/* Sub-table field (out->pos == 0 when absent). */
bool ks__fb_get_table(ks__fb *fb, const ks__fb_table *t, uint32_t field, ks__fb_table *out);
/* Vector field whose elements are elem_size bytes each (1, 2, 4 or 8; 4 for tables). */
bool ks__fb_get_vec(ks__fb *fb, const ks__fb_table *t, uint32_t field, size_t elem_size,
                    ks__fb_vec *out);
/* String field: *s points into the buffer (not NUL-terminated); NULL/0 when absent. */
bool ks__fb_get_str(ks__fb *fb, const ks__fb_table *t, uint32_t field, const uint8_t **s,
                    uint32_t *len);
/* Table element i of a vector of tables. */
bool ks__fb_vec_table(ks__fb *fb, const ks__fb_vec *v, uint32_t i, ks__fb_table *out);

static inline int32_t ks__fb_vec_i32(const ks__fb *fb, const ks__fb_vec *v, uint32_t i) {
    return (int32_t)ks__ld_u32(fb->data + v->pos + 4 * (size_t)i);
}

/* ---- FlexBuffers ---- */

typedef enum ks__flex_type {
    KS_FLEX_NULL = 0,
    KS_FLEX_INT = 1,
    KS_FLEX_UINT = 2,
    KS_FLEX_FLOAT = 3,
    KS_FLEX_KEY = 4,
    KS_FLEX_STRING = 5,
    KS_FLEX_INDIRECT_INT = 6,
    KS_FLEX_INDIRECT_UINT = 7,
    KS_FLEX_INDIRECT_FLOAT = 8,
    KS_FLEX_MAP = 9,
    KS_FLEX_VECTOR = 10,
    KS_FLEX_VECTOR_INT = 11,
    KS_FLEX_VECTOR_UINT = 12,
    KS_FLEX_VECTOR_FLOAT = 13,
    KS_FLEX_VECTOR_KEY = 14,
    KS_FLEX_VECTOR_INT2 = 16, /* ..VECTOR_FLOAT4 = 24: fixed-length typed vectors */
    KS_FLEX_BLOB = 25,
    KS_FLEX_BOOL = 26,
    KS_FLEX_VECTOR_BOOL = 36
} ks__flex_type;

/* A value: where it is stored (pos, parent_width bytes) and how to read it. */
typedef struct ks__flex_val {
    const uint8_t *data;
    size_t size;
    size_t pos;
    uint8_t parent_width; /* 1, 2, 4, 8 */
    uint8_t width;        /* byte width of the pointed-to object (for offsets) */
    uint8_t type;         /* ks__flex_type */
} ks__flex_val;

/* Root value of a FlexBuffer. */
bool ks__flex_root(const uint8_t *data, size_t size, ks__flex_val *out);
/* Looks up `key` in a map; *found false when missing. */
bool ks__flex_map_find(const ks__flex_val *map, const char *key, ks__flex_val *out, bool *found);
/* Scalars (ints, uints, bools, floats and their indirect forms; converts between them). */
bool ks__flex_as_i64(const ks__flex_val *v, int64_t *out);
bool ks__flex_as_f64(const ks__flex_val *v, double *out);
/* Vectors (untyped, typed and fixed-size typed): length and element i. */
bool ks__flex_vec_len(const ks__flex_val *v, uint32_t *len_out);
bool ks__flex_vec_at(const ks__flex_val *v, uint32_t i, ks__flex_val *out);

#endif /* KESTREL_CONVERT_TFLITE_FB_H */
