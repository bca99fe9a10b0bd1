/* .ksm reader and writer. The byte layout is specified in ksm.h.
 *
 * The reader treats the image as hostile: it reads through a cursor that refuses to move past
 * the end of the section it is in, so every count is checked against the bytes that remain
 * before anything is allocated for it. */
#include "base/crc32.h"
#include "ksm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weight_coder.h"
#include "weight_quant.h"

/* ---- little-endian helpers ---- */

static uint16_t rd16(const uint8_t *p) {
    return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p) {
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

typedef struct cursor {
    const uint8_t *p;
    size_t left;
    bool bad;
} cursor;

static const uint8_t *take(cursor *c, size_t n) {
    if (c->bad || n > c->left) {
        c->bad = true;
        return NULL;
    }
    const uint8_t *r = c->p;
    c->p += n;
    c->left -= n;
    return r;
}
static uint8_t get_u8(cursor *c) {
    const uint8_t *p = take(c, 1);
    return p ? p[0] : 0;
}
static uint16_t get_u16(cursor *c) {
    const uint8_t *p = take(c, 2);
    return p ? rd16(p) : 0;
}
static uint32_t get_u32(cursor *c) {
    const uint8_t *p = take(c, 4);
    return p ? rd32(p) : 0;
}
static uint64_t get_u64(cursor *c) {
    const uint8_t *p = take(c, 8);
    return p ? rd64(p) : 0;
}
static float get_f32(cursor *c) {
    uint32_t u = get_u32(c);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

#define KSM_MAX_STRING 4096u

/* Reads a string into a NUL-terminated heap copy. */
static char *get_string(cursor *c, const ks_allocator *a, ks_status *st) {
    uint32_t n = get_u32(c);
    if (n > KSM_MAX_STRING) c->bad = true;
    const uint8_t *p = take(c, n);
    if (!p) return NULL;
    char *s = ks__alloc(a, (size_t)n + 1);
    if (!s) {
        *st = KS_STATUS_OUT_OF_MEMORY;
        return NULL;
    }
    memcpy(s, p, n);
    s[n] = 0;
    return s;
}

/* A section's bytes lie in the file (base = the file image) or, since 1.2, in the decoded
 * PACKED image (base = that buffer). */
typedef struct section {
    const uint8_t *base;
    uint64_t offset, size;
    bool present;
} section;

static cursor section_cursor(const uint8_t *data, const section *s) {
    (void)data;
    cursor c = {s->base + s->offset, (size_t)s->size, false};
    return c;
}

#define FAIL(code, ...)                                                                            \
    do {                                                                                           \
        st = (code);                                                                               \
        ks__fmt(err, err_cap, __VA_ARGS__);                                                        \
        goto error;                                                                                \
    } while (0)

static const char *k_section_names[] = {"",         "META",    "TENSORS", "NODES",
                                        "GRAPH_IO", "WEIGHTS", "ENCODED", "PACKED"};

#define KSM_NUM_KINDS 8 /* section kinds 0..7; 0 unused */
#define KSM_PACKED_MAX_SECTIONS 8

/* Finds the sections of a .ksm image (header already checked up to the section table) and
 * decodes the PACKED section (1.2) into *packed_out (allocated from a; the caller frees it), so
 * that every section of sec[] can be read with section_cursor. */
static ks_status load_sections(const uint8_t *data, size_t size, const ks_allocator *a,
                               section sec[KSM_NUM_KINDS], uint8_t **packed_out, char *err,
                               size_t err_cap) {
    ks_status st = KS_STATUS_INVALID_MODEL;
    uint8_t *raw = NULL, *scratch = NULL;
    memset(sec, 0, sizeof(section) * KSM_NUM_KINDS);
    *packed_out = NULL;
    uint32_t num_sections = rd32(data + 24);
    uint64_t table_off = rd64(data + 32);
    if (num_sections > KSM_MAX_SECTIONS)
        FAIL(KS_STATUS_INVALID_MODEL, "%u sections (limit %d)", num_sections, KSM_MAX_SECTIONS);
    if (table_off > size || (uint64_t)num_sections * 24 > size - table_off)
        FAIL(KS_STATUS_INVALID_MODEL, "section table at %llu (%u entries) lies outside the file",
             (unsigned long long)table_off, num_sections);
    for (uint32_t i = 0; i < num_sections; i++) {
        const uint8_t *e = data + table_off + (uint64_t)i * 24;
        uint32_t kind = rd32(e);
        uint64_t off = rd64(e + 8), sz = rd64(e + 16);
        if (off > size || sz > size - off)
            FAIL(KS_STATUS_INVALID_MODEL,
                 "section %u (kind %u) [%llu, +%llu) lies outside the file", i, kind,
                 (unsigned long long)off, (unsigned long long)sz);
        if (kind < 1 || kind >= KSM_NUM_KINDS) continue; /* unknown: skipped (minor extension) */
        if (sec[kind].present)
            FAIL(KS_STATUS_INVALID_MODEL, "section %s appears twice", k_section_names[kind]);
        sec[kind] = (section){data, off, sz, true};
    }
    if (sec[KSM_SECTION_PACKED].present) {
        cursor c = section_cursor(data, &sec[KSM_SECTION_PACKED]);
        uint32_t raw_size = get_u32(&c), method = get_u32(&c);
        if (c.bad || method != 1)
            FAIL(KS_STATUS_INVALID_MODEL, "PACKED section: %s (method %u, expected 1)",
                 c.bad ? "truncated" : "unknown method", method);
        /* bounded before allocating, so a small hostile file cannot demand a huge buffer */
        if ((uint64_t)raw_size > (uint64_t)KS__WENC_MAX_RATIO * c.left + KS__WENC_RATIO_SLACK)
            FAIL(KS_STATUS_INVALID_MODEL,
                 "PACKED section: %u table bytes cannot come from a %zu-byte stream", raw_size,
                 c.left);
        raw = ks__alloc(a, (size_t)raw_size + 1);
        scratch = ks__alloc(a, ks__bcode_scratch_bytes());
        if (!raw || !scratch)
            FAIL(KS_STATUS_OUT_OF_MEMORY, "out of memory unpacking %u table bytes", raw_size);
        if (ks__bcode_decode(c.p, c.left, scratch, raw, raw_size) != KS_STATUS_OK)
            FAIL(KS_STATUS_INVALID_MODEL, "PACKED section: corrupt stream (%zu bytes for %u)",
                 c.left, raw_size);
        cursor r = {raw, raw_size, false};
        uint32_t n = get_u32(&r);
        if (n > KSM_PACKED_MAX_SECTIONS || n > r.left / 16)
            FAIL(KS_STATUS_INVALID_MODEL, "PACKED section: %u sections", n);
        uint64_t off = 4 + (uint64_t)n * 16;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t kind = get_u32(&r), reserved = get_u32(&r);
            uint64_t sz = get_u64(&r);
            bool packable = kind == KSM_SECTION_META || kind == KSM_SECTION_TENSORS ||
                            kind == KSM_SECTION_NODES || kind == KSM_SECTION_GRAPH_IO ||
                            kind == KSM_SECTION_ENCODED;
            if (!packable || reserved)
                FAIL(KS_STATUS_INVALID_MODEL, "PACKED section: entry %u has kind %u", i, kind);
            if (sec[kind].present)
                FAIL(KS_STATUS_INVALID_MODEL, "section %s appears twice", k_section_names[kind]);
            if (sz > raw_size - off)
                FAIL(KS_STATUS_INVALID_MODEL, "PACKED section: %s (%llu bytes) overruns it",
                     k_section_names[kind], (unsigned long long)sz);
            sec[kind] = (section){raw, off, sz, true};
            off += sz;
        }
        if (off != raw_size)
            FAIL(KS_STATUS_INVALID_MODEL, "PACKED section: %llu of %u bytes used",
                 (unsigned long long)off, raw_size);
        *packed_out = raw;
        raw = NULL;
    }
    st = KS_STATUS_OK;
error:
    ks__free(a, scratch);
    ks__free(a, raw);
    return st;
}

/* Decodes one LOSSLESS payload (1.2) into a graph-owned buffer of the tensor's own dtype. */
static ks_status read_lossless(ks__graph *g, uint32_t id, const ks__wenc_params *p, char *err,
                               size_t err_cap) {
    ks_status st = KS_STATUS_INVALID_MODEL;
    ks__tensor *t = &g->tensors[id];
    size_t elem = ks_dtype_size(t->dtype);
    uint64_t num_elems = 1;
    if (!elem)
        FAIL(KS_STATUS_INVALID_MODEL, "tensor %u '%s': lossless payload of dtype %u", id, t->name,
             t->dtype);
    for (int32_t d = 0; d < t->rank; d++) {
        if (t->dims[d] < 0 || (t->dims[d] && num_elems > ((uint64_t)1 << 40) / t->dims[d]))
            FAIL(KS_STATUS_INVALID_MODEL, "tensor %u '%s': encoded tensor has bad dims", id,
                 t->name);
        num_elems *= (uint64_t)t->dims[d];
    }
    uint64_t num_bytes = num_elems * elem;
    /* checked before allocating, so a tiny file cannot claim a huge tensor */
    if (num_bytes > (uint64_t)KS__WENC_MAX_RATIO * t->size_bytes + KS__WENC_RATIO_SLACK)
        FAIL(KS_STATUS_INVALID_MODEL,
             "tensor %u '%s': %llu bytes cannot come from a %zu-byte payload", id, t->name,
             (unsigned long long)num_bytes, t->size_bytes);
    const uint8_t *payload = t->data;
    size_t payload_size = t->size_bytes;
    uint8_t *buf = ks__alloc_aligned(&g->alloc, (size_t)num_bytes + 4, KSM_WEIGHT_ALIGN);
    if (!buf)
        FAIL(KS_STATUS_OUT_OF_MEMORY, "tensor %u '%s': out of memory decoding %llu bytes", id,
             t->name, (unsigned long long)num_bytes);
    t->data = buf; /* graph-owned from here, so any failure below frees it with g */
    t->size_bytes = (size_t)num_bytes;
    t->flags = KS__TENSOR_CONST;
    char derr[256];
    derr[0] = 0;
    st = ks__wenc_decode_lossless(&g->alloc, payload, payload_size, p, t->dtype, (size_t)num_bytes,
                                  buf, derr, sizeof(derr));
    if (st) FAIL(st, "tensor %u '%s': %s", id, t->name, derr);
    return KS_STATUS_OK;
error:
    return st;
}

/* Decodes the tensors listed in the ENCODED section (format 1.1) into graph-owned F32 buffers.
 * encoded[id] is 1 for tensors flagged encoded; entries set it to 2 so duplicates are caught. */
static ks_status read_encoded(const uint8_t *data, const section *sec, ks__graph *g,
                              uint8_t *encoded, uint32_t num_encoded, char *err, size_t err_cap) {
    ks_status st = KS_STATUS_INVALID_MODEL;
    if (!sec->present) {
        if (num_encoded)
            FAIL(KS_STATUS_INVALID_MODEL,
                 "%u tensors are marked encoded but the ENCODED section is missing", num_encoded);
        return KS_STATUS_OK;
    }
    cursor c = section_cursor(data, sec);
    uint32_t n = get_u32(&c);
    if (n > c.left / 16) FAIL(KS_STATUS_INVALID_MODEL, "ENCODED: count %u exceeds the section", n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id = get_u32(&c);
        ks__wenc_params p;
        p.encoding = get_u8(&c);
        p.coder = get_u8(&c);
        p.scale_dtype = get_u8(&c);
        uint8_t reserved8 = get_u8(&c);
        p.block_size = get_u32(&c);
        uint32_t reserved32 = get_u32(&c);
        if (reserved8 || reserved32)
            FAIL(KS_STATUS_INVALID_MODEL, "ENCODED entry %u: reserved fields are not zero", i);
        if (id >= g->num_tensors || encoded[id] != 1)
            FAIL(KS_STATUS_INVALID_MODEL,
                 "ENCODED entry %u: tensor %u is not an encoded tensor or is listed twice", i, id);
        encoded[id] = 2;
        ks__tensor *t = &g->tensors[id];
        if (p.encoding == KS__WENC_LOSSLESS) {
            st = read_lossless(g, id, &p, err, err_cap);
            if (st) goto error;
            st = KS_STATUS_INVALID_MODEL;
            continue;
        }
        if (t->dtype != KS_DTYPE_F32)
            FAIL(KS_STATUS_INVALID_MODEL,
                 "tensor %u '%s': encoding %u needs an F32 tensor (dtype %u)", id, t->name,
                 p.encoding, t->dtype);
        uint64_t num_elems = 1;
        for (int32_t d = 0; d < t->rank; d++) {
            if (t->dims[d] < 0 || (t->dims[d] && num_elems > ((uint64_t)1 << 40) / t->dims[d]))
                FAIL(KS_STATUS_INVALID_MODEL, "tensor %u '%s': encoded tensor has bad dims", id,
                     t->name);
            num_elems *= (uint64_t)t->dims[d];
        }
        uint64_t num_channels = t->rank ? (uint64_t)t->dims[0] : 1;
        const uint8_t *payload = t->data;
        size_t payload_size = t->size_bytes;
        /* checked before allocating, so a tiny file cannot claim a huge tensor */
        if (num_elems * 4 > (uint64_t)KS__WENC_MAX_RATIO * payload_size + KS__WENC_RATIO_SLACK)
            FAIL(KS_STATUS_INVALID_MODEL,
                 "tensor %u '%s': %llu values cannot come from a %zu-byte payload", id, t->name,
                 (unsigned long long)num_elems, payload_size);
        float *buf = ks__alloc_aligned(&g->alloc, (size_t)num_elems * 4 + 4, KSM_WEIGHT_ALIGN);
        if (!buf)
            FAIL(KS_STATUS_OUT_OF_MEMORY, "tensor %u '%s': out of memory decoding %llu weights", id,
                 t->name, (unsigned long long)num_elems);
        t->data = buf; /* graph-owned from here, so any failure below frees it with g */
        t->size_bytes = (size_t)num_elems * 4;
        t->flags = KS__TENSOR_CONST;
        char derr[256];
        derr[0] = 0;
        st = ks__wenc_decode(&g->alloc, payload, payload_size, &p, num_elems, num_channels, buf,
                             derr, sizeof(derr));
        if (st) FAIL(st, "tensor %u '%s': %s", id, t->name, derr);
    }
    if (c.bad) FAIL(KS_STATUS_INVALID_MODEL, "ENCODED section is truncated");
    for (uint32_t id = 0; id < g->num_tensors; id++)
        if (encoded[id] == 1)
            FAIL(KS_STATUS_INVALID_MODEL,
                 "tensor %u '%s' is marked encoded but has no ENCODED entry", id,
                 g->tensors[id].name);
    return KS_STATUS_OK;
error:
    return st;
}

ks_status ks__ksm_read(const uint8_t *data, size_t size, bool verify_checksum, ks__graph *g,
                       char *err, size_t err_cap) {
    ks_status st = KS_STATUS_INVALID_MODEL;
    section sec[KSM_NUM_KINDS];
    memset(sec, 0, sizeof(sec));
    uint8_t *packed = NULL;
    char *name = NULL;
    int32_t *ids = NULL;
    uint8_t *encoded = NULL;
    uint32_t num_encoded = 0;

    if (!data || size < KSM_HEADER_BYTES)
        FAIL(KS_STATUS_INVALID_MODEL, "file is %zu bytes, shorter than the 64-byte .ksm header",
             size);
    if (memcmp(data, KSM_MAGIC, 4) != 0)
        FAIL(KS_STATUS_INVALID_MODEL, "not a .ksm file (magic is not \"KSMF\")");
    uint16_t major = rd16(data + 4), minor = rd16(data + 6);
    if (major > KSM_VERSION_MAJOR)
        FAIL(KS_STATUS_VERSION_MISMATCH,
             ".ksm format %u.%u is newer than this Kestrel reads (%d.x); upgrade Kestrel "
             "(runtime %s)",
             major, minor, KSM_VERSION_MAJOR, KS_VERSION_STRING);
    if (major < 1) FAIL(KS_STATUS_INVALID_MODEL, ".ksm major version 0 is invalid");
    if (rd32(data + 8) != KSM_HEADER_BYTES)
        FAIL(KS_STATUS_INVALID_MODEL, "header size %u, expected 64", rd32(data + 8));
    uint32_t flags = rd32(data + 12);
    if (flags & ~(KSM_FLAG_CHECKSUM | KSM_FLAG_NEEDS_1_2))
        FAIL(KS_STATUS_INVALID_MODEL, "unknown header flags 0x%x", flags);
    uint64_t file_size = rd64(data + 16);
    if (file_size != size)
        FAIL(KS_STATUS_INVALID_MODEL,
             "header says the file is %llu bytes but it is %zu (truncated or padded)",
             (unsigned long long)file_size, size);
    if ((flags & 1u) && verify_checksum) {
        static const uint8_t zero4[4] = {0, 0, 0, 0};
        uint32_t crc = ks__crc32(0, data, 28);
        crc = ks__crc32(crc, zero4, 4);
        crc = ks__crc32(crc, data + 32, size - 32);
        if (crc != rd32(data + 28))
            FAIL(KS_STATUS_CHECKSUM_MISMATCH,
                 "checksum mismatch: stored 0x%08x, computed 0x%08x (file corrupt)",
                 rd32(data + 28), crc);
    }
    st = load_sections(data, size, &g->alloc, sec, &packed, err, err_cap);
    if (st) goto error;
    st = KS_STATUS_INVALID_MODEL;
    if (sec[KSM_SECTION_WEIGHTS].present && sec[KSM_SECTION_WEIGHTS].base != data)
        FAIL(KS_STATUS_INVALID_MODEL, "the WEIGHTS section cannot be packed");
    for (int k = 1; k <= 5; k++)
        if (!sec[k].present)
            FAIL(KS_STATUS_INVALID_MODEL, "section %s is missing", k_section_names[k]);
    if (sec[KSM_SECTION_WEIGHTS].offset % KSM_WEIGHT_ALIGN)
        FAIL(KS_STATUS_INVALID_MODEL, "weight section offset %llu is not 64-byte aligned",
             (unsigned long long)sec[KSM_SECTION_WEIGHTS].offset);

    /* META */
    {
        cursor c = section_cursor(data, &sec[KSM_SECTION_META]);
        uint32_t n = get_u32(&c);
        if (n > c.left / 8) c.bad = true;
        for (uint32_t i = 0; i < n && !c.bad; i++) {
            char *k = get_string(&c, &g->alloc, &st);
            char *v = k ? get_string(&c, &g->alloc, &st) : NULL;
            if (k && v) st = ks__graph_set_meta(g, k, v);
            ks__free(&g->alloc, k);
            ks__free(&g->alloc, v);
            if (st == KS_STATUS_OUT_OF_MEMORY) FAIL(st, "out of memory reading metadata");
            st = KS_STATUS_INVALID_MODEL;
        }
        if (c.bad) FAIL(KS_STATUS_INVALID_MODEL, "META section is truncated or malformed");
    }

    /* TENSORS */
    {
        cursor c = section_cursor(data, &sec[KSM_SECTION_TENSORS]);
        const uint8_t *wbase = data + sec[KSM_SECTION_WEIGHTS].offset;
        uint64_t wsize = sec[KSM_SECTION_WEIGHTS].size;
        uint32_t n = get_u32(&c);
        /* each tensor record is at least 32 bytes */
        if (n > c.left / 32)
            FAIL(KS_STATUS_INVALID_MODEL, "tensor count %u exceeds the section", n);
        encoded = ks__calloc(&g->alloc, (size_t)n + 1, 1);
        if (!encoded) FAIL(KS_STATUS_OUT_OF_MEMORY, "out of memory reading tensors");
        for (uint32_t i = 0; i < n; i++) {
            name = get_string(&c, &g->alloc, &st);
            if (!name) {
                if (st == KS_STATUS_OUT_OF_MEMORY) FAIL(st, "out of memory reading tensors");
                FAIL(KS_STATUS_INVALID_MODEL, "tensor %u: truncated name", i);
            }
            uint8_t dtype = get_u8(&c), rank = get_u8(&c);
            uint16_t tflags = get_u16(&c);
            if (rank > KS_MAX_RANK)
                FAIL(KS_STATUS_INVALID_MODEL, "tensor %u '%s': rank %u > 8", i, name, rank);
            int64_t dims[KS_MAX_RANK];
            for (uint32_t d = 0; d < rank; d++)
                dims[d] = (int64_t)get_u64(&c);
            uint64_t doff = get_u64(&c), dsize = get_u64(&c);
            uint32_t qn = get_u32(&c);
            int32_t qaxis = (int32_t)get_u32(&c);
            if (c.bad) FAIL(KS_STATUS_INVALID_MODEL, "tensor %u '%s': record truncated", i, name);
            bool no_zp = (tflags & KSM_TENSOR_NO_ZERO_POINTS) != 0;
            bool f16_scales = (tflags & KSM_TENSOR_F16_SCALES) != 0;
            if (qn > c.left / ((f16_scales ? 2 : 4) + (no_zp ? 0 : 4)))
                FAIL(KS_STATUS_INVALID_MODEL,
                     "tensor %u '%s': %u quantization params exceed the section", i, name, qn);
            if ((no_zp || f16_scales) && !qn)
                FAIL(KS_STATUS_INVALID_MODEL,
                     "tensor %u '%s': quantization flags 0x%x without quantization", i, name,
                     tflags);
            int32_t id;
            st = ks__graph_add_tensor(g, name, (ks_dtype)dtype, rank, dims, &id);
            if (st) FAIL(st, "tensor %u '%s': %s", i, name, ks_status_string(st));
            ks__free(&g->alloc, name);
            name = NULL;
            ks__tensor *t = &g->tensors[id];
            if (qn) {
                t->quant.scales = ks__alloc(&g->alloc, qn * sizeof(float));
                t->quant.zero_points = ks__calloc(&g->alloc, qn, sizeof(int32_t));
                if (!t->quant.scales || !t->quant.zero_points)
                    FAIL(KS_STATUS_OUT_OF_MEMORY, "out of memory reading quantization");
                /* f16 scales: 127 x scale as f16 bits (see ksm.h); the division is IEEE f32 */
                for (uint32_t q = 0; q < qn; q++)
                    t->quant.scales[q] =
                        f16_scales ? ks__f16_to_f32(get_u16(&c)) / 127.0f : get_f32(&c);
                for (uint32_t q = 0; q < qn && !no_zp; q++)
                    t->quant.zero_points[q] = (int32_t)get_u32(&c);
                t->quant.count = qn;
                t->quant.axis = qaxis;
                /* integer kernels subtract zero points in int arithmetic: one outside the
                 * dtype's range is no valid quantization and would overflow there */
                int32_t zlo = dtype == KS_DTYPE_U8 ? 0 : dtype == KS_DTYPE_I8 ? -128 : -32768;
                int32_t zhi = dtype == KS_DTYPE_U8 ? 255 : dtype == KS_DTYPE_I8 ? 127 : 32767;
                bool small_int =
                    dtype == KS_DTYPE_U8 || dtype == KS_DTYPE_I8 || dtype == KS_DTYPE_I16;
                for (uint32_t q = 0; q < qn && small_int; q++)
                    if (t->quant.zero_points[q] < zlo || t->quant.zero_points[q] > zhi)
                        FAIL(KS_STATUS_INVALID_MODEL,
                             "tensor %u '%s': zero point %d outside [%d, %d] of its dtype", i,
                             t->name, t->quant.zero_points[q], zlo, zhi);
            }
            if (tflags & ~(KSM_TENSOR_CONST | KSM_TENSOR_ENCODED | KSM_TENSOR_NO_ZERO_POINTS |
                           KSM_TENSOR_F16_SCALES))
                FAIL(KS_STATUS_INVALID_MODEL, "tensor %u '%s': unknown flags 0x%x", i, t->name,
                     tflags);
            if (tflags & KSM_TENSOR_ENCODED) {
                /* the dtype is checked against the encoding in read_encoded (LOSSLESS payloads
                 * keep any dtype since 1.2) */
                if (!(tflags & KSM_TENSOR_CONST))
                    FAIL(KS_STATUS_INVALID_MODEL,
                         "tensor %u '%s': encoded tensors must be constants (flags 0x%x)", i,
                         t->name, tflags);
                encoded[id] = 1;
                num_encoded++;
            }
            if (tflags & KSM_TENSOR_CONST) {
                /* encoded payloads are decoded into aligned buffers: only data used in place
                 * must be aligned (the writer packs payloads unaligned since 1.2) */
                bool in_place = !(tflags & KSM_TENSOR_ENCODED);
                if ((in_place && doff % KSM_WEIGHT_ALIGN) || doff > wsize || dsize > wsize - doff)
                    FAIL(KS_STATUS_INVALID_MODEL,
                         "tensor %u '%s': data [%llu, +%llu) outside the weight section (%llu "
                         "bytes)",
                         i, t->name, (unsigned long long)doff, (unsigned long long)dsize,
                         (unsigned long long)wsize);
                t->data = wbase + doff;
                t->size_bytes = (size_t)dsize;
                t->flags = KS__TENSOR_CONST | KS__TENSOR_BORROWED;
            } else if (doff || dsize) {
                FAIL(KS_STATUS_INVALID_MODEL, "tensor %u '%s': non-constant with data", i, t->name);
            }
        }
        if (c.bad) FAIL(KS_STATUS_INVALID_MODEL, "TENSORS section is truncated");
    }

    st = read_encoded(data, &sec[KSM_SECTION_ENCODED], g, encoded, num_encoded, err, err_cap);
    if (st) goto error;
    st = KS_STATUS_INVALID_MODEL;

    /* NODES */
    {
        cursor c = section_cursor(data, &sec[KSM_SECTION_NODES]);
        uint32_t n = get_u32(&c);
        if (n > c.left / 24) FAIL(KS_STATUS_INVALID_MODEL, "node count %u exceeds the section", n);
        for (uint32_t i = 0; i < n; i++) {
            uint16_t op = get_u16(&c);
            (void)get_u16(&c);
            name = get_string(&c, &g->alloc, &st);
            if (!name) {
                if (st == KS_STATUS_OUT_OF_MEMORY) FAIL(st, "out of memory reading nodes");
                FAIL(KS_STATUS_INVALID_MODEL, "node %u: truncated", i);
            }
            uint32_t nin = get_u32(&c);
            if (nin > 1024 || nin > c.left / 4)
                FAIL(KS_STATUS_INVALID_MODEL, "node %u '%s': %u inputs", i, name, nin);
            int32_t in_buf[1024], out_buf[1024];
            for (uint32_t k = 0; k < nin; k++)
                in_buf[k] = (int32_t)get_u32(&c);
            uint32_t nout = get_u32(&c);
            if (nout > 1024 || nout > c.left / 4)
                FAIL(KS_STATUS_INVALID_MODEL, "node %u '%s': %u outputs", i, name, nout);
            for (uint32_t k = 0; k < nout; k++)
                out_buf[k] = (int32_t)get_u32(&c);
            uint32_t nip = get_u32(&c);
            if (nip > KS_NODE_MAX_IPARAMS)
                FAIL(KS_STATUS_INVALID_MODEL, "node %u '%s': %u int params (max %d)", i, name, nip,
                     KS_NODE_MAX_IPARAMS);
            int32_t ip[KS_NODE_MAX_IPARAMS] = {0};
            for (uint32_t k = 0; k < nip; k++)
                ip[k] = (int32_t)get_u32(&c);
            uint32_t nfp = get_u32(&c);
            if (nfp > KS_NODE_MAX_FPARAMS)
                FAIL(KS_STATUS_INVALID_MODEL, "node %u '%s': %u float params (max %d)", i, name,
                     nfp, KS_NODE_MAX_FPARAMS);
            float fp[KS_NODE_MAX_FPARAMS] = {0};
            for (uint32_t k = 0; k < nfp; k++)
                fp[k] = get_f32(&c);
            if (c.bad) FAIL(KS_STATUS_INVALID_MODEL, "node %u '%s': record truncated", i, name);
            uint32_t idx;
            st = ks__graph_add_node(g, op, name, nin, in_buf, nout, out_buf, &idx);
            if (st) FAIL(st, "node %u: %s", i, ks_status_string(st));
            memcpy(g->nodes[idx].ip, ip, sizeof(ip));
            memcpy(g->nodes[idx].fp, fp, sizeof(fp));
            ks__free(&g->alloc, name);
            name = NULL;
        }
    }

    /* GRAPH_IO */
    {
        cursor c = section_cursor(data, &sec[KSM_SECTION_GRAPH_IO]);
        uint32_t nin = get_u32(&c);
        if (nin > c.left / 4)
            FAIL(KS_STATUS_INVALID_MODEL, "GRAPH_IO: %u inputs exceed the section", nin);
        ids = ks__alloc(&g->alloc, ((size_t)nin + 1) * sizeof(int32_t));
        if (!ids) FAIL(KS_STATUS_OUT_OF_MEMORY, "out of memory reading graph I/O");
        for (uint32_t k = 0; k < nin; k++)
            ids[k] = (int32_t)get_u32(&c);
        uint32_t nout = get_u32(&c);
        if (c.bad || nout > c.left / 4)
            FAIL(KS_STATUS_INVALID_MODEL, "GRAPH_IO section is truncated");
        int32_t *outs = ks__alloc(&g->alloc, ((size_t)nout + 1) * sizeof(int32_t));
        if (!outs) FAIL(KS_STATUS_OUT_OF_MEMORY, "out of memory reading graph I/O");
        for (uint32_t k = 0; k < nout; k++)
            outs[k] = (int32_t)get_u32(&c);
        st = ks__graph_set_io(g, nin, ids, nout, outs);
        ks__free(&g->alloc, outs);
        if (st) FAIL(st, "out of memory reading graph I/O");
        if (nout == 0) FAIL(KS_STATUS_INVALID_MODEL, "graph has no outputs");
    }

    {
        char verr[400];
        verr[0] = 0;
        st = ks__graph_validate(g, verr, sizeof(verr));
        if (st) FAIL(st, "%s", verr);
        /* graph inputs must not be constants */
        for (uint32_t i = 0; i < g->num_inputs; i++)
            if (g->tensors[g->inputs[i]].flags & KS__TENSOR_CONST)
                FAIL(KS_STATUS_INVALID_MODEL, "graph input %u '%s' is a constant", i,
                     g->tensors[g->inputs[i]].name);
    }
    st = KS_STATUS_OK;
error:
    ks__free(&g->alloc, name);
    ks__free(&g->alloc, ids);
    ks__free(&g->alloc, encoded);
    ks__free(&g->alloc, packed);
    return st;
}

ks_status ks__ksm_sizes_of(const uint8_t *data, size_t size, ks__ksm_sizes *out) {
    ks_status st = KS_STATUS_INVALID_MODEL;
    char err[8];
    size_t err_cap = sizeof(err);
    section sec[KSM_NUM_KINDS];
    uint8_t *packed = NULL;
    ks_allocator a = ks__allocator_or_default(NULL);
    ks__ksm_sizes z;
    memset(&z, 0, sizeof(z));
    if (!data || size < KSM_HEADER_BYTES || memcmp(data, KSM_MAGIC, 4) != 0) return st;
    st = load_sections(data, size, &a, sec, &packed, err, err_cap);
    if (st) return st;
    st = KS_STATUS_INVALID_MODEL;
    if (!sec[KSM_SECTION_TENSORS].present) goto error;
    z.file_bytes = size;
    for (int k = 1; k < KSM_NUM_KINDS; k++) {
        if (!sec[k].present) continue;
        if (sec[k].base == data)
            z.section_bytes[k] = sec[k].size;
        else
            z.packed_section_bytes[k] = sec[k].size;
    }
    cursor c = section_cursor(data, &sec[KSM_SECTION_TENSORS]);
    uint32_t n = get_u32(&c);
    z.num_tensors = n;
    for (uint32_t i = 0; i < n && !c.bad; i++) {
        uint32_t name_len = get_u32(&c);
        take(&c, name_len);
        z.name_bytes += 4 + (uint64_t)name_len;
        uint8_t dtype = get_u8(&c);
        uint8_t rank = get_u8(&c);
        uint16_t tflags = get_u16(&c);
        if (rank > KS_MAX_RANK) goto error;
        uint64_t elems = 1;
        for (uint32_t d = 0; d < rank; d++) {
            int64_t v = (int64_t)get_u64(&c);
            elems = v > 0 && elems < ((uint64_t)1 << 40) ? elems * (uint64_t)v : 0;
        }
        (void)get_u64(&c);
        uint64_t dsize = get_u64(&c);
        uint32_t qn = get_u32(&c);
        (void)get_u32(&c);
        bool no_zp = (tflags & KSM_TENSOR_NO_ZERO_POINTS) != 0;
        size_t scale_elem = (tflags & KSM_TENSOR_F16_SCALES) ? 2 : 4;
        if (qn > c.left / 2) goto error;
        take(&c, (size_t)qn * scale_elem);
        z.scale_bytes += (uint64_t)qn * scale_elem;
        if (!no_zp) {
            take(&c, (size_t)qn * 4);
            z.zero_point_bytes += (uint64_t)qn * 4;
        }
        if (!(tflags & KSM_TENSOR_CONST)) continue;
        z.num_constants++;
        z.stored_bytes += dsize;
        z.dtype_stored_bytes[dtype & 15] += dsize;
        z.dtype_raw_bytes[dtype & 15] += elems * ks_dtype_size((ks_dtype)dtype);
        z.num_values += elems;
        if (tflags & KSM_TENSOR_ENCODED) {
            z.encoded_bytes += dsize;
            z.encoded_values += elems;
            z.num_encoded++;
        }
    }
    if (c.bad) goto error;
    z.record_bytes =
        sec[KSM_SECTION_TENSORS].size - z.name_bytes - z.scale_bytes - z.zero_point_bytes;
    if (sec[KSM_SECTION_WEIGHTS].present && sec[KSM_SECTION_WEIGHTS].size >= z.stored_bytes)
        z.padding_bytes = sec[KSM_SECTION_WEIGHTS].size - z.stored_bytes;
    *out = z;
    st = KS_STATUS_OK;
error:
    ks__free(&a, packed);
    return st;
}

ks_status ks__ksm_weight_stats(const uint8_t *data, size_t size, uint64_t *stored_bytes_out,
                               uint64_t *num_values_out, uint64_t *encoded_bytes_out,
                               uint64_t *encoded_values_out, uint32_t *num_encoded_out) {
    ks__ksm_sizes z;
    ks_status st = ks__ksm_sizes_of(data, size, &z);
    if (st) return st;
    *stored_bytes_out = z.stored_bytes;
    *num_values_out = z.num_values;
    *encoded_bytes_out = z.encoded_bytes;
    *encoded_values_out = z.encoded_values;
    *num_encoded_out = z.num_encoded;
    return KS_STATUS_OK;
}

/* ---- writer ---- */

typedef struct wbuf {
    const ks_allocator *a;
    uint8_t *p;
    size_t len, cap;
    bool oom;
} wbuf;

static void put(wbuf *b, const void *src, size_t n) {
    if (b->oom) return;
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->len + n)
            nc *= 2;
        uint8_t *np = ks__alloc_aligned(b->a, nc, 64);
        if (!np) {
            b->oom = true;
            return;
        }
        if (b->len) memcpy(np, b->p, b->len);
        ks__free(b->a, b->p);
        b->p = np;
        b->cap = nc;
    }
    if (src)
        memcpy(b->p + b->len, src, n);
    else
        memset(b->p + b->len, 0, n);
    b->len += n;
}
static void put_u8(wbuf *b, uint8_t v) {
    put(b, &v, 1);
}
static void put_u16(wbuf *b, uint16_t v) {
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    put(b, x, 2);
}
static void put_u32(wbuf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(b, x, 4);
}
static void put_u64(wbuf *b, uint64_t v) {
    put_u32(b, (uint32_t)v);
    put_u32(b, (uint32_t)(v >> 32));
}
static void put_f32(wbuf *b, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    put_u32(b, u);
}
static void put_str(wbuf *b, const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n > KSM_MAX_STRING) n = KSM_MAX_STRING;
    put_u32(b, (uint32_t)n);
    put(b, s, n);
}
static void pad_to(wbuf *b, size_t align) {
    size_t r = b->len % align;
    if (r) put(b, NULL, align - r);
}
static void patch_u32(wbuf *b, size_t at, uint32_t v) {
    if (b->oom) return;
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    memcpy(b->p + at, x, 4);
}
static void patch_u64(wbuf *b, size_t at, uint64_t v) {
    patch_u32(b, at, (uint32_t)v);
    patch_u32(b, at + 4, (uint32_t)(v >> 32));
}

/* How one constant is stored: its own bytes, or a converted/encoded copy (owned). */
typedef struct wtensor {
    const void *data;
    size_t size_bytes;
    uint8_t dtype;
    uint16_t flags;
    ks__wenc_params enc;
    void *owned;
} wtensor;

/* Marks the tensors that are only ever the weight input (1) of CONV2D, CONV2D_TRANSPOSE or
 * FULLY_CONNECTED, are F32 constants without quantization and are not graph outputs: changing
 * their storage cannot affect any other op. */
static bool weight_is_compressible(const ks__graph *g, const uint8_t *use, uint32_t id) {
    const ks__tensor *t = &g->tensors[id];
    if (use[id] != 1 || !(t->flags & KS__TENSOR_CONST) || t->dtype != KS_DTYPE_F32 ||
        t->quant.count || t->rank < 1 || t->dims[0] < 1)
        return false;
    uint64_t n = 1;
    for (int32_t d = 0; d < t->rank; d++)
        n *= (uint64_t)(t->dims[d] > 0 ? t->dims[d] : 0);
    return n >= 32 && n * 4 == t->size_bytes;
}

static size_t align_up(size_t n) {
    return (n + KSM_WEIGHT_ALIGN - 1) / KSM_WEIGHT_ALIGN * KSM_WEIGHT_ALIGN;
}

/* Rows for wcode: output channels (dims[0]) of conv/FC weights; when dims[0] is 1 (depthwise
 * [1, H, W, C]) the taps, so that a column is one channel, whose weights share a magnitude. */
static uint64_t lossless_rows(const ks__tensor *t) {
    if (t->rank < 2) return 1;
    if (t->dims[0] > 1) return (uint64_t)t->dims[0];
    uint64_t rows = 1;
    for (int32_t d = 0; d + 1 < t->rank; d++)
        rows *= (uint64_t)(t->dims[d] > 0 ? t->dims[d] : 1);
    return rows;
}

/* pack (1.2): a constant becomes a LOSSLESS payload when that is smaller than its aligned
 * in-place bytes (an ENCODED entry costs ~8 bytes once the tables are packed). Decoding it costs
 * a copy at load, so in-place (zero-copy) data stays only where coding does not pay. */
static ks_status pack_constant(const ks__graph *g, const ks__ksm_write_opts *o, uint32_t id,
                               wtensor *w) {
    const ks__tensor *t = &g->tensors[id];
    size_t elem = ks_dtype_size(t->dtype);
    uint64_t num_elems = 1;
    for (int32_t d = 0; d < t->rank; d++)
        num_elems *= (uint64_t)(t->dims[d] > 0 ? t->dims[d] : 0);
    if (!elem || num_elems * elem != t->size_bytes || !t->size_bytes) return KS_STATUS_OK;
    ks__wenc_params p = {0};
    p.entropy_coders = o->entropy_coders;
    uint8_t *payload = NULL;
    size_t size = 0;
    ks_status st = ks__wenc_encode_lossless(&g->alloc, t->data, t->size_bytes, t->dtype,
                                            lossless_rows(t), &p, &payload, &size);
    if (st) return st;
    if (size + 8 >= align_up(t->size_bytes)) {
        ks__free(&g->alloc, payload);
        return KS_STATUS_OK;
    }
    w->owned = payload;
    w->data = payload;
    w->size_bytes = size;
    w->flags |= KSM_TENSOR_ENCODED;
    w->enc = p;
    return KS_STATUS_OK;
}

/* pack (1.2), conv/FC weights: values that are exactly an int8 rounding (per output channel,
 * code * scale: decoded int8 weight-only storage, ks-quant's fp32 layers) are stored as those
 * INT8_CHANNEL codes when smaller than what *w holds; they decode to the same bits. */
static ks_status pack_int8_grid(const ks__graph *g, const ks__ksm_write_opts *o, uint32_t id,
                                wtensor *w) {
    const ks__tensor *t = &g->tensors[id];
    uint64_t num_elems = t->size_bytes / 4, channels = (uint64_t)t->dims[0];
    ks_status st = KS_STATUS_OK;
    float *scales = ks__alloc(&g->alloc, (size_t)channels * sizeof(float) + 4);
    float *back = NULL;
    uint8_t *payload = NULL;
    if (!scales) return KS_STATUS_OUT_OF_MEMORY;
    if (!ks__wenc_find_int8_scales(t->data, num_elems, channels, scales)) goto done;
    back = ks__alloc(&g->alloc, (size_t)num_elems * 4 + 4);
    if (!back) {
        st = KS_STATUS_OUT_OF_MEMORY;
        goto done;
    }
    ks__wenc_params p = {0};
    p.encoding = KS__WENC_INT8_CHANNEL;
    p.coder = KS__WCODER_RANS; /* entropy-code: the smallest of the allowed coders and raw */
    p.entropy_coders = o->entropy_coders;
    p.scale_dtype = KS_DTYPE_F32;
    p.scales = scales;
    size_t size = 0;
    st = ks__wenc_encode(&g->alloc, t->data, num_elems, channels, &p, &payload, &size, back);
    if (st == KS_STATUS_UNSUPPORTED) st = KS_STATUS_OK;
    if (st || !payload) goto done;
    size_t current = (w->flags & KSM_TENSOR_ENCODED) ? w->size_bytes : align_up(w->size_bytes);
    if (memcmp(back, t->data, t->size_bytes) != 0 || size + 8 >= current) goto done;
    if (w->owned) ks__free(&g->alloc, w->owned);
    p.scales = NULL; /* encode-only; the entry keeps params, not the scratch pointer */
    w->owned = payload;
    w->data = payload;
    w->size_bytes = size;
    w->dtype = KS_DTYPE_F32;
    w->flags |= KSM_TENSOR_ENCODED;
    w->enc = p;
    payload = NULL;
done:
    ks__free(&g->alloc, payload);
    ks__free(&g->alloc, back);
    ks__free(&g->alloc, scales);
    return st;
}

/* Symmetric int8 scales are max|w| / 127; when the float weights were f16 (most TFLite models),
 * max|w| is an f16 value, so the scale is 2 bytes of information. Only used when every scale
 * comes back bit for bit. */
static bool scales_fit_f16(const ks__quant *q) {
    if (q->count < 2) return false; /* per-tensor scales: 2 bytes are not worth a flag */
    for (uint32_t i = 0; i < q->count; i++) {
        float s = q->scales[i];
        if (!(s > 0.0f)) return false;
        float back = ks__f16_to_f32(ks__f32_to_f16(s * 127.0f)) / 127.0f;
        if (memcmp(&back, &s, 4) != 0) return false;
    }
    return true;
}

/* use[id] (num_tensors + 1 entries, zeroed): 1 for tensors read only as the weight input (1) of
 * CONV2D, CONV2D_TRANSPOSE or FULLY_CONNECTED and not graph outputs, 2 for any other use. */
static void mark_weight_uses(const ks__graph *g, uint8_t *use) {
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        const ks__node *n = &g->nodes[i];
        bool has_weight = n->op == KS_OP_CONV2D || n->op == KS_OP_CONV2D_TRANSPOSE ||
                          n->op == KS_OP_FULLY_CONNECTED;
        for (uint32_t k = 0; k < n->num_inputs; k++) {
            int32_t id = n->inputs[k];
            if (id < 0) continue;
            use[id] = (has_weight && k == 1 && use[id] != 2) ? 1 : 2;
        }
    }
    for (uint32_t k = 0; k < g->num_outputs; k++)
        use[g->outputs[k]] = 2;
}

ks_status ks__ksm_compressible_weights(const ks__graph *g, uint8_t *out) {
    uint8_t *use = ks__calloc(&g->alloc, g->num_tensors + 1, 1);
    if (!use) return KS_STATUS_OUT_OF_MEMORY;
    mark_weight_uses(g, use);
    for (uint32_t i = 0; i < g->num_tensors; i++)
        out[i] = weight_is_compressible(g, use, i);
    ks__free(&g->alloc, use);
    return KS_STATUS_OK;
}

static ks_status prepare_weights(const ks__graph *g, const ks__ksm_write_opts *o, wtensor *wt,
                                 char *err, size_t err_cap) {
    ks_status st = KS_STATUS_OK;
    uint8_t *use = ks__calloc(&g->alloc, g->num_tensors + 1, 1);
    if (!use) goto oom;
    mark_weight_uses(g, use);
    for (uint32_t i = 0; i < g->num_tensors; i++) {
        const ks__tensor *t = &g->tensors[i];
        wt[i].data = t->data;
        wt[i].size_bytes = t->size_bytes;
        wt[i].dtype = (uint8_t)t->dtype;
        wt[i].flags = (t->flags & KS__TENSOR_CONST) ? KSM_TENSOR_CONST : 0;
        bool selected = !o->select || (i < o->num_select && o->select[i]);
        if (o->weights == KS__KSM_WEIGHTS_FP32 || !selected || !weight_is_compressible(g, use, i)) {
            if (o->pack && (t->flags & KS__TENSOR_CONST)) {
                st = pack_constant(g, o, i, &wt[i]);
                if (!st && weight_is_compressible(g, use, i)) st = pack_int8_grid(g, o, i, &wt[i]);
                if (st == KS_STATUS_OUT_OF_MEMORY) goto oom;
                if (st) {
                    ks__fmt(err, err_cap, "tensor %u '%s': cannot code the constant: %s", i,
                            t->name, ks_status_string(st));
                    goto error;
                }
            }
            continue;
        }
        const float *w = t->data;
        size_t num_elems = t->size_bytes / 4;
        if (o->weights == KS__KSM_WEIGHTS_FP16) {
            uint16_t *h = ks__alloc_aligned(&g->alloc, num_elems * 2 + 2, KSM_WEIGHT_ALIGN);
            if (!h) goto oom;
            for (size_t k = 0; k < num_elems; k++)
                h[k] = ks__f32_to_f16(w[k]);
            wt[i].owned = h;
            wt[i].data = h;
            wt[i].size_bytes = num_elems * 2;
            wt[i].dtype = KS_DTYPE_F16;
            continue;
        }
        ks__wenc_params p = {0};
        p.encoding =
            o->weights == KS__KSM_WEIGHTS_INT8 ? KS__WENC_INT8_CHANNEL : KS__WENC_INT4_BLOCK;
        p.coder = o->entropy ? KS__WCODER_RANS : KS__WCODER_RAW;
        p.entropy_coders = o->entropy_coders;
        p.scale_dtype =
            (p.encoding == KS__WENC_INT4_BLOCK && !o->f32_scales) ? KS_DTYPE_F16 : KS_DTYPE_F32;
        p.block_size = p.encoding == KS__WENC_INT4_BLOCK ? (o->block_size ? o->block_size : 32) : 0;
        if (p.encoding == KS__WENC_INT8_CHANNEL && o->select && o->int8_scales)
            p.scales = o->int8_scales[i];
        uint8_t *payload = NULL;
        size_t size = 0;
        st = ks__wenc_encode(&g->alloc, w, num_elems, (uint64_t)t->dims[0], &p, &payload, &size,
                             NULL);
        if (st == KS_STATUS_UNSUPPORTED) { /* non-finite weights stay F32 */
            st = KS_STATUS_OK;
            continue;
        }
        if (st == KS_STATUS_OUT_OF_MEMORY) goto oom;
        if (st) {
            ks__fmt(err, err_cap, "tensor %u '%s': cannot encode weights (block size %u)", i,
                    t->name, p.block_size);
            goto error;
        }
        wt[i].owned = payload;
        wt[i].data = payload;
        wt[i].size_bytes = size;
        wt[i].flags |= KSM_TENSOR_ENCODED;
        wt[i].enc = p;
    }
    goto error;
oom:
    st = KS_STATUS_OUT_OF_MEMORY;
    ks__fmt(err, err_cap, "out of memory compressing weights");
error:
    ks__free(&g->alloc, use);
    return st;
}

/* Replaces the tables (META .. ENCODED, written back to back from sec_off[META]) by one PACKED
 * section when that is smaller. */
static ks_status pack_tables(wbuf *b, size_t *sec_off, size_t *sec_size, char *err, size_t err_cap,
                             bool *packed_out) {
    static const uint32_t kinds[5] = {KSM_SECTION_META, KSM_SECTION_TENSORS, KSM_SECTION_NODES,
                                      KSM_SECTION_GRAPH_IO, KSM_SECTION_ENCODED};
    ks_status st = KS_STATUS_OK;
    size_t start = sec_off[KSM_SECTION_META], tables = b->len - start;
    uint32_t n = 0;
    for (int i = 0; i < 5; i++)
        if (sec_size[kinds[i]] || kinds[i] != KSM_SECTION_ENCODED) n++;
    size_t raw_size = 4 + (size_t)n * 16 + tables;
    uint8_t *raw = ks__alloc(b->a, raw_size), *scratch = ks__alloc(b->a, ks__bcode_scratch_bytes());
    uint8_t *coded = ks__alloc(b->a, raw_size + 16);
    *packed_out = false;
    if (!raw || !scratch || !coded) {
        st = KS_STATUS_OUT_OF_MEMORY;
        ks__fmt(err, err_cap, "out of memory packing the tables");
        goto error;
    }
    size_t pos = 0;
    uint8_t x[16];
    memset(x, 0, sizeof(x));
    x[0] = (uint8_t)n;
    memcpy(raw, x, 4);
    pos = 4;
    for (int i = 0; i < 5; i++) {
        uint32_t k = kinds[i];
        if (!sec_size[k] && k == KSM_SECTION_ENCODED) continue;
        uint64_t sz = sec_size[k];
        memset(x, 0, sizeof(x));
        x[0] = (uint8_t)k;
        for (int j = 0; j < 8; j++)
            x[8 + j] = (uint8_t)(sz >> (8 * j));
        memcpy(raw + pos, x, 16);
        pos += 16;
    }
    memcpy(raw + pos, b->p + start, tables);
    size_t coded_size = 0;
    st = ks__bcode_encode(raw, raw_size, scratch, coded, raw_size + 16, &coded_size);
    if (st == KS_STATUS_LIMIT_EXCEEDED || raw_size > UINT32_MAX || coded_size + 8 + 24 >= tables) {
        st = KS_STATUS_OK; /* incompressible: keep the plain sections */
        goto error;
    }
    if (st) {
        ks__fmt(err, err_cap, "cannot pack the tables: %s", ks_status_string(st));
        goto error;
    }
    b->len = start;
    for (int i = 0; i < 5; i++)
        sec_off[kinds[i]] = sec_size[kinds[i]] = 0;
    sec_off[KSM_SECTION_PACKED] = b->len;
    put_u32(b, (uint32_t)raw_size);
    put_u32(b, 1);
    put(b, coded, coded_size);
    sec_size[KSM_SECTION_PACKED] = b->len - sec_off[KSM_SECTION_PACKED];
    *packed_out = true;
error:
    ks__free(b->a, coded);
    ks__free(b->a, scratch);
    ks__free(b->a, raw);
    return st;
}

ks_status ks__ksm_write(const ks__graph *g, uint8_t **data_out, size_t *size_out, char *err,
                        size_t err_cap) {
    return ks__ksm_write_ex(g, NULL, data_out, size_out, err, err_cap);
}

ks_status ks__ksm_write_ex(const ks__graph *g, const ks__ksm_write_opts *opts, uint8_t **data_out,
                           size_t *size_out, char *err, size_t err_cap) {
    ks_status st = ks__graph_validate(g, err, err_cap);
    if (st) return st;
    ks__ksm_write_opts o = {.weights = KS__KSM_WEIGHTS_FP32};
    if (opts) o = *opts;
    if (o.block_size > KS__WENC_MAX_BLOCK) {
        ks__fmt(err, err_cap, "int4 block size %u is above %u", o.block_size, KS__WENC_MAX_BLOCK);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    wbuf b = {&g->alloc, NULL, 0, 0, false};
    uint64_t *doffs = ks__calloc(&g->alloc, g->num_tensors + 1, sizeof(uint64_t));
    wtensor *wt = ks__calloc(&g->alloc, g->num_tensors + 1, sizeof(wtensor));
    if (!doffs || !wt) {
        ks__free(&g->alloc, doffs);
        ks__free(&g->alloc, wt);
        ks__fmt(err, err_cap, "out of memory writing .ksm");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    st = prepare_weights(g, &o, wt, err, err_cap);
    if (st) goto done;
    /* weight offsets first, so the tensor table can be written in one pass */
    /* pack: in-place constants first, 64-byte aligned, then the encoded payloads back to back
     * (they are decoded into aligned buffers, so they need no alignment) */
    uint64_t woff = 0;
    uint32_t num_encoded = 0;
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < g->num_tensors; i++) {
            if (!(wt[i].flags & KSM_TENSOR_CONST)) continue;
            bool unaligned = o.pack && (wt[i].flags & KSM_TENSOR_ENCODED);
            if (unaligned != (pass == 1)) continue;
            if (wt[i].flags & KSM_TENSOR_ENCODED) num_encoded++;
            doffs[i] = woff;
            woff += unaligned ? wt[i].size_bytes : align_up(wt[i].size_bytes);
        }
    put(&b, NULL, KSM_HEADER_BYTES);
    size_t sec_off[8] = {0}, sec_size[8] = {0};

    sec_off[KSM_SECTION_META] = b.len;
    put_u32(&b, g->num_meta);
    for (uint32_t i = 0; i < g->num_meta; i++) {
        put_str(&b, g->meta[i].key);
        put_str(&b, g->meta[i].value);
    }
    sec_size[KSM_SECTION_META] = b.len - sec_off[KSM_SECTION_META];

    sec_off[KSM_SECTION_TENSORS] = b.len;
    put_u32(&b, g->num_tensors);
    for (uint32_t i = 0; i < g->num_tensors; i++) {
        const ks__tensor *t = &g->tensors[i];
        bool is_const = (wt[i].flags & KSM_TENSOR_CONST) != 0;
        bool zp_zero = o.pack && t->quant.count > 0;
        for (uint32_t q = 0; q < t->quant.count && zp_zero; q++)
            zp_zero = t->quant.zero_points[q] == 0;
        bool f16_scales = o.pack && scales_fit_f16(&t->quant);
        put_str(&b, t->name);
        put_u8(&b, wt[i].dtype);
        put_u8(&b, (uint8_t)t->rank);
        put_u16(&b, (uint16_t)(wt[i].flags | (zp_zero ? KSM_TENSOR_NO_ZERO_POINTS : 0) |
                               (f16_scales ? KSM_TENSOR_F16_SCALES : 0)));
        for (int32_t d = 0; d < t->rank; d++)
            put_u64(&b, (uint64_t)t->dims[d]);
        put_u64(&b, is_const ? doffs[i] : 0);
        put_u64(&b, is_const ? wt[i].size_bytes : 0);
        put_u32(&b, t->quant.count);
        put_u32(&b, (uint32_t)t->quant.axis);
        for (uint32_t q = 0; q < t->quant.count; q++) {
            if (f16_scales)
                put_u16(&b, ks__f32_to_f16(t->quant.scales[q] * 127.0f));
            else
                put_f32(&b, t->quant.scales[q]);
        }
        for (uint32_t q = 0; q < t->quant.count && !zp_zero; q++)
            put_u32(&b, (uint32_t)t->quant.zero_points[q]);
    }
    sec_size[KSM_SECTION_TENSORS] = b.len - sec_off[KSM_SECTION_TENSORS];

    sec_off[KSM_SECTION_NODES] = b.len;
    put_u32(&b, g->num_nodes);
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        const ks__node *n = &g->nodes[i];
        put_u16(&b, (uint16_t)n->op);
        put_u16(&b, 0);
        put_str(&b, n->name);
        put_u32(&b, n->num_inputs);
        for (uint32_t k = 0; k < n->num_inputs; k++)
            put_u32(&b, (uint32_t)n->inputs[k]);
        put_u32(&b, n->num_outputs);
        for (uint32_t k = 0; k < n->num_outputs; k++)
            put_u32(&b, (uint32_t)n->outputs[k]);
        /* trailing zero params are not stored */
        uint32_t nip = KS_NODE_MAX_IPARAMS, nfp = KS_NODE_MAX_FPARAMS;
        while (nip && n->ip[nip - 1] == 0)
            nip--;
        while (nfp && n->fp[nfp - 1] == 0.0f)
            nfp--;
        put_u32(&b, nip);
        for (uint32_t k = 0; k < nip; k++)
            put_u32(&b, (uint32_t)n->ip[k]);
        put_u32(&b, nfp);
        for (uint32_t k = 0; k < nfp; k++)
            put_f32(&b, n->fp[k]);
    }
    sec_size[KSM_SECTION_NODES] = b.len - sec_off[KSM_SECTION_NODES];

    sec_off[KSM_SECTION_GRAPH_IO] = b.len;
    put_u32(&b, g->num_inputs);
    for (uint32_t k = 0; k < g->num_inputs; k++)
        put_u32(&b, (uint32_t)g->inputs[k]);
    put_u32(&b, g->num_outputs);
    for (uint32_t k = 0; k < g->num_outputs; k++)
        put_u32(&b, (uint32_t)g->outputs[k]);
    sec_size[KSM_SECTION_GRAPH_IO] = b.len - sec_off[KSM_SECTION_GRAPH_IO];

    if (num_encoded) {
        sec_off[KSM_SECTION_ENCODED] = b.len;
        put_u32(&b, num_encoded);
        for (uint32_t i = 0; i < g->num_tensors; i++) {
            if (!(wt[i].flags & KSM_TENSOR_ENCODED)) continue;
            put_u32(&b, i);
            put_u8(&b, wt[i].enc.encoding);
            put_u8(&b, wt[i].enc.coder);
            put_u8(&b, wt[i].enc.scale_dtype);
            put_u8(&b, 0);
            put_u32(&b, wt[i].enc.block_size);
            put_u32(&b, 0);
        }
        sec_size[KSM_SECTION_ENCODED] = b.len - sec_off[KSM_SECTION_ENCODED];
    }
    uint32_t kinds[8], num_sections = 0;
    bool packed = false;
    if (o.pack && !b.oom) {
        st = pack_tables(&b, sec_off, sec_size, err, err_cap, &packed);
        if (st) {
            ks__free(&g->alloc, b.p);
            goto done;
        }
    }
    for (uint32_t k = 1; k < 8; k++)
        if (sec_size[k] || (k <= KSM_SECTION_WEIGHTS && !packed) || k == KSM_SECTION_WEIGHTS)
            kinds[num_sections++] = k;

    size_t table_off = b.len;
    put(&b, NULL, (size_t)num_sections * 24);

    pad_to(&b, KSM_WEIGHT_ALIGN);
    sec_off[KSM_SECTION_WEIGHTS] = b.len;
    for (int pass = 0; pass < 2; pass++) {
        pad_to(&b, KSM_WEIGHT_ALIGN); /* where the offsets above put the payloads */
        for (uint32_t i = 0; i < g->num_tensors; i++) {
            if (!(wt[i].flags & KSM_TENSOR_CONST)) continue;
            bool unaligned = o.pack && (wt[i].flags & KSM_TENSOR_ENCODED);
            if (unaligned != (pass == 1)) continue;
            if (!unaligned) pad_to(&b, KSM_WEIGHT_ALIGN);
            put(&b, wt[i].data, wt[i].size_bytes);
        }
    }
    if (!o.pack) pad_to(&b, KSM_WEIGHT_ALIGN);
    sec_size[KSM_SECTION_WEIGHTS] = b.len - sec_off[KSM_SECTION_WEIGHTS];
    if (b.oom) {
        ks__free(&g->alloc, b.p);
        ks__fmt(err, err_cap, "out of memory writing .ksm");
        st = KS_STATUS_OUT_OF_MEMORY;
        goto done;
    }
    for (uint32_t i = 0; i < num_sections; i++) {
        size_t e = table_off + (size_t)i * 24;
        patch_u32(&b, e, kinds[i]);
        patch_u32(&b, e + 4, 0);
        patch_u64(&b, e + 8, sec_off[kinds[i]]);
        patch_u64(&b, e + 16, sec_size[kinds[i]]);
    }
    /* Files without 1.2 content keep saying 1.1, so 1.1 readers still take them; pack output
     * says 1.2 and sets the header flag 1.1 readers refuse. */
    uint16_t minor = o.pack ? KSM_VERSION_MINOR : 1;
    memcpy(b.p, KSM_MAGIC, 4);
    b.p[4] = KSM_VERSION_MAJOR & 0xff;
    b.p[5] = KSM_VERSION_MAJOR >> 8;
    b.p[6] = (uint8_t)(minor & 0xff);
    b.p[7] = (uint8_t)(minor >> 8);
    patch_u32(&b, 8, KSM_HEADER_BYTES);
    patch_u32(&b, 12, KSM_FLAG_CHECKSUM | (o.pack ? KSM_FLAG_NEEDS_1_2 : 0));
    patch_u64(&b, 16, b.len);
    patch_u32(&b, 24, num_sections);
    patch_u64(&b, 32, table_off);
    patch_u32(&b, 28, ks__crc32(0, b.p, b.len));
    *data_out = b.p;
    *size_out = b.len;
    st = KS_STATUS_OK;
done:
    for (uint32_t i = 0; i < g->num_tensors; i++)
        ks__free(&g->alloc, wt[i].owned);
    ks__free(&g->alloc, wt);
    ks__free(&g->alloc, doffs);
    return st;
}

ks_status ks__ksm_write_file(const ks__graph *g, const char *path, char *err, size_t err_cap) {
    return ks__ksm_write_file_ex(g, NULL, path, err, err_cap);
}

ks_status ks__ksm_write_file_ex(const ks__graph *g, const ks__ksm_write_opts *opts,
                                const char *path, char *err, size_t err_cap) {
    uint8_t *buf = NULL;
    size_t n = 0;
    ks_status st = ks__ksm_write_ex(g, opts, &buf, &n, err, err_cap);
    if (st) return st;
    char tmp[4096];
    ks__fmt(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        ks__fmt(err, err_cap, "%s: cannot open for writing", tmp);
        ks__free(&g->alloc, buf);
        return KS_STATUS_IO_ERROR;
    }
    size_t w = fwrite(buf, 1, n, f);
    int cl = fclose(f);
    ks__free(&g->alloc, buf);
    if (w != n || cl != 0 || rename(tmp, path) != 0) {
        remove(tmp);
        ks__fmt(err, err_cap, "%s: write failed", path);
        return KS_STATUS_IO_ERROR;
    }
    return KS_STATUS_OK;
}
