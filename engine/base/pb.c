/* Protobuf wire-format reader: see pb.h. Every read checks against `end` before touching a byte. */
#include "pb.h"

#include <string.h>

ks__pb_reader ks__pb_reader_init(ks__pb_span span) {
    ks__pb_reader r;
    r.p = span.ptr;
    r.end = span.ptr ? span.ptr + span.size_bytes : span.ptr;
    return r;
}

static int read_varint(ks__pb_reader *r, uint64_t *v_out) {
    uint64_t v = 0;
    for (unsigned i = 0; i < 10; i++) {
        if (r->p >= r->end) return KS_PB_ERR_TRUNCATED;
        uint8_t b = *r->p++;
        /* The 10th byte may only contribute bit 63; anything more overflows 64 bits. */
        if (i == 9 && (b & 0x7e)) return KS_PB_ERR_VARINT;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v_out = v;
            return 1;
        }
    }
    return KS_PB_ERR_VARINT;
}

static uint64_t load_le(const uint8_t *p, unsigned n) {
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

int ks__pb_next(ks__pb_reader *r, ks__pb_field *f) {
    if (r->p >= r->end) return 0;
    uint64_t key;
    int rc = read_varint(r, &key);
    if (rc < 0) return rc;
    uint64_t number = key >> 3;
    if (number == 0 || number > 0x1fffffffu) return KS_PB_ERR_FIELD;
    memset(f, 0, sizeof(*f));
    f->number = (uint32_t)number;
    f->wire = (uint32_t)(key & 7u);
    switch (f->wire) {
    case KS_PB_VARINT:
        rc = read_varint(r, &f->u64);
        return rc < 0 ? rc : 1;
    case KS_PB_FIXED64:
        if ((size_t)(r->end - r->p) < 8) return KS_PB_ERR_TRUNCATED;
        f->u64 = load_le(r->p, 8);
        r->p += 8;
        return 1;
    case KS_PB_FIXED32:
        if ((size_t)(r->end - r->p) < 4) return KS_PB_ERR_TRUNCATED;
        f->u64 = load_le(r->p, 4);
        r->p += 4;
        return 1;
    case KS_PB_LEN: {
        uint64_t len;
        rc = read_varint(r, &len);
        if (rc < 0) return rc;
        if (len > (uint64_t)(r->end - r->p)) return KS_PB_ERR_TRUNCATED;
        f->span.ptr = r->p;
        f->span.size_bytes = (size_t)len;
        r->p += len;
        return 1;
    }
    default:
        return KS_PB_ERR_WIRE;
    }
}

const char *ks__pb_error_string(int err) {
    switch (err) {
    case KS_PB_ERR_TRUNCATED:
        return "truncated protobuf record";
    case KS_PB_ERR_VARINT:
        return "protobuf varint longer than 10 bytes";
    case KS_PB_ERR_WIRE:
        return "unsupported protobuf wire type (group or reserved)";
    case KS_PB_ERR_FIELD:
        return "protobuf field number 0";
    default:
        return "malformed protobuf";
    }
}

/* Floats arrive as fixed32 bits, doubles as fixed64 bits; both are stored as float. */
static void store_f32(float *dst, uint64_t bits, uint32_t kind) {
    if (kind == KS_PB_FIXED64) {
        double d;
        memcpy(&d, &bits, 8);
        *dst = (float)d;
    } else {
        uint32_t b32 = (uint32_t)bits;
        memcpy(dst, &b32, 4);
    }
}

/* Visits every element of repeated field `number`; out arrays may be NULL (count only). */
static int walk_repeated(ks__pb_span msg, uint32_t number, uint32_t kind, int64_t *out_i64,
                         float *out_f32, size_t cap, size_t *count_out) {
    ks__pb_reader r = ks__pb_reader_init(msg);
    ks__pb_field f;
    size_t n = 0;
    int rc;
    while ((rc = ks__pb_next(&r, &f)) > 0) {
        if (f.number != number) continue;
        if (f.wire == KS_PB_LEN) { /* packed */
            ks__pb_reader pr = ks__pb_reader_init(f.span);
            while (pr.p < pr.end) {
                uint64_t v;
                if (kind == KS_PB_FIXED32 || kind == KS_PB_FIXED64) {
                    unsigned w = kind == KS_PB_FIXED32 ? 4u : 8u;
                    if ((size_t)(pr.end - pr.p) < w) return KS_PB_ERR_TRUNCATED;
                    v = load_le(pr.p, w);
                    pr.p += w;
                } else {
                    int vr = read_varint(&pr, &v);
                    if (vr < 0) return vr;
                }
                if (n < cap) {
                    if (out_i64) out_i64[n] = (int64_t)v;
                    if (out_f32) store_f32(&out_f32[n], v, kind);
                }
                n++;
            }
        } else if (f.wire == kind) {
            if (n < cap) {
                if (out_i64) out_i64[n] = (int64_t)f.u64;
                if (out_f32) store_f32(&out_f32[n], f.u64, kind);
            }
            n++;
        } else {
            return KS_PB_ERR_WIRE;
        }
    }
    if (rc < 0) return rc;
    *count_out = n;
    return 1;
}

int ks__pb_count_repeated(ks__pb_span msg, uint32_t number, uint32_t kind, size_t *count_out) {
    return walk_repeated(msg, number, kind, NULL, NULL, 0, count_out);
}

int ks__pb_read_repeated(ks__pb_span msg, uint32_t number, uint32_t kind, int64_t *out_i64,
                         float *out_f32, size_t cap, size_t *count_out) {
    return walk_repeated(msg, number, kind, out_i64, out_f32, cap, count_out);
}
