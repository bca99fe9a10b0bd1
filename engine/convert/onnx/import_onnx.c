/* ONNX front-end: ModelProto bytes -> Kestrel IR.
 *
 * The file is decoded with the hand-written wire reader in pb.h; nothing is copied out of the
 * buffer except constant data and names. Field numbers follow onnx.proto:
 *   ModelProto: 1 ir_version, 2 producer_name, 7 graph, 8 opset_import{1 domain, 2 version}
 *   GraphProto: 1 node, 5 initializer, 11 input, 12 output, 13 value_info
 *   NodeProto: 1 input, 2 output, 3 name, 4 op_type, 5 attribute, 7 domain
 *   AttributeProto: 1 name, 2 f, 3 i, 4 s, 5 t, 7 floats, 8 ints, 20 type
 *   TensorProto: 1 dims, 2 data_type, 4 float_data, 5 int32_data, 7 int64_data, 8 name,
 *                9 raw_data, 10 double_data, 13 external_data, 14 data_location
 *   ValueInfoProto: 1 name, 2 type{1 tensor_type{1 elem_type, 2 shape{1 dim{1 value, 2 param}}}}
 *
 * Layout: ONNX activations are NCHW, the IR's spatial ops are NHWC. Each spatial op is wrapped
 * in TRANSPOSE(0,2,3,1) ... TRANSPOSE(0,3,1,2) so graph inputs and outputs keep their ONNX
 * layout; ks__graph_optimize() then cancels the adjacent inverse pairs between spatial ops.
 * Conv weights are transposed OIHW -> OHWI here when constant.
 *
 * Ranks: the importer tracks each tensor's rank where it can (needed to place per-channel
 * constants and to lower opset<13 Softmax). Dims it cannot know stay -1; the passes fill them.
 */
#include "convert.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/pb.h"

#define ONNX_MIN_OPSET 7
#define ONNX_MAX_OPSET 18
#define ONNX_MAX_DIM (INT64_C(1) << 40)
#define ONNX_MAX_NAME 4096

/* ONNX TensorProto.DataType values (frozen by the ONNX spec). */
enum {
    ONNX_FLOAT = 1,
    ONNX_UINT8 = 2,
    ONNX_INT8 = 3,
    ONNX_INT16 = 5,
    ONNX_INT32 = 6,
    ONNX_INT64 = 7,
    ONNX_STRING = 8,
    ONNX_BOOL = 9,
    ONNX_FLOAT16 = 10,
    ONNX_DOUBLE = 11,
};

/* AttributeProto.AttributeType values. */
enum {
    ATTR_FLOAT = 1,
    ATTR_INT = 2,
    ATTR_STRING = 3,
    ATTR_TENSOR = 4,
    ATTR_FLOATS = 6,
    ATTR_INTS = 7
};

typedef struct attr {
    ks__pb_span name;
    uint32_t type;
    float f;
    int64_t i;
    ks__pb_span s;   /* string */
    ks__pb_span t;   /* TensorProto */
    ks__pb_span msg; /* whole AttributeProto, for repeated floats/ints */
    int has_f, has_i, has_s, has_t;
} attr;

typedef struct onode {
    ks__pb_span op_type, name, domain;
    uint32_t num_inputs, num_outputs, num_attrs;
    ks__pb_span *inputs;
    ks__pb_span *outputs;
    attr *attrs;
} onode;

typedef struct map_entry {
    const uint8_t *key;
    uint32_t len;
    int32_t val; /* -1 = empty slot */
} map_entry;

typedef struct name_map {
    map_entry *e;
    uint32_t cap, count;
} name_map;

typedef struct imp {
    ks__graph *g;
    const char *src;
    char *err;
    size_t err_cap;
    int64_t opset;
    name_map tensors; /* ONNX value name -> IR tensor id */
    name_map vinfo;   /* value name -> index into vi_spans */
    ks__pb_span *vi_spans;
    int trust_value_info; /* value_info dims are used only when every graph input is static */
    uint8_t *rank_known;  /* per IR tensor */
    uint32_t rank_known_cap;
    uint64_t const_bytes;
    /* current node */
    uint32_t node_index;
    onode node;
    uint32_t cap_in, cap_out, cap_attr;
    char *tmp; /* NUL-terminated copy of one span */
    size_t tmp_cap;
    char opname[64], nodename[160];
} imp;

/* ---------------------------------------------------------------- errors */

/* Writes the message; in_node adds the current node's index, name and op type. */
static ks_status vreport(imp *c, ks_status st, int in_node, const char *fmt, va_list ap)
    KS__PRINTF(4, 0);

static ks_status vreport(imp *c, ks_status st, int in_node, const char *fmt, va_list ap) {
    char msg[512];
    /* node messages leave room for the node prefix */
    vsnprintf(msg, in_node ? 384 : sizeof(msg), fmt, ap);
    if (in_node)
        ks__fmt(c->err, c->err_cap, "%s: node %u '%s' (%s): %s", c->src, c->node_index, c->nodename,
                c->opname, msg);
    else
        ks__fmt(c->err, c->err_cap, "%s: %s", c->src, msg);
    return st;
}

static ks_status fail(imp *c, ks_status st, const char *fmt, ...) KS__PRINTF(3, 4);

static ks_status fail(imp *c, ks_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    st = vreport(c, st, 0, fmt, ap);
    va_end(ap);
    return st;
}

/* Copies a span into a small printable buffer (for messages and fixed-size names). */
static void span_print(ks__pb_span s, char *buf, size_t cap) {
    size_t n = s.size_bytes < cap - 1 ? s.size_bytes : cap - 1;
    for (size_t i = 0; i < n; i++) {
        uint8_t ch = s.ptr[i];
        buf[i] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
    }
    buf[n] = 0;
}

static ks_status node_fail(imp *c, ks_status st, const char *fmt, ...) KS__PRINTF(3, 4);

static ks_status node_fail(imp *c, ks_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    st = vreport(c, st, 1, fmt, ap);
    va_end(ap);
    return st;
}

static ks_status pb_fail(imp *c, int rc, const char *where) {
    return fail(c, KS_STATUS_INVALID_MODEL, "%s: %s", where, ks__pb_error_string(rc));
}

/* NUL-terminated copy of a span in c->tmp (valid until the next call). */
static const char *span_cstr(imp *c, ks__pb_span s) {
    size_t n = s.size_bytes;
    if (n + 1 > c->tmp_cap) {
        size_t cap = n + 1 < 256 ? 256 : n + 1;
        char *t = ks__alloc(&c->g->alloc, cap);
        if (!t) return NULL;
        ks__free(&c->g->alloc, c->tmp);
        c->tmp = t;
        c->tmp_cap = cap;
    }
    if (n) memcpy(c->tmp, s.ptr, n);
    c->tmp[n] = 0;
    return c->tmp;
}

static int span_eq(ks__pb_span s, const char *lit) {
    size_t n = strlen(lit);
    return s.size_bytes == n && (n == 0 || memcmp(s.ptr, lit, n) == 0);
}

/* ---------------------------------------------------------------- name map */

static uint32_t hash_bytes(const uint8_t *p, uint32_t n) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

static ks_status map_grow(imp *c, name_map *m) {
    uint32_t nc = m->cap ? m->cap * 2 : 256;
    map_entry *e = ks__alloc(&c->g->alloc, (size_t)nc * sizeof(map_entry));
    if (!e) return KS_STATUS_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < nc; i++)
        e[i].val = -1;
    for (uint32_t i = 0; i < m->cap; i++) {
        if (m->e[i].val < 0) continue;
        uint32_t h = hash_bytes(m->e[i].key, m->e[i].len) & (nc - 1);
        while (e[h].val >= 0)
            h = (h + 1) & (nc - 1);
        e[h] = m->e[i];
    }
    ks__free(&c->g->alloc, m->e);
    m->e = e;
    m->cap = nc;
    return KS_STATUS_OK;
}

static int32_t map_get(const name_map *m, ks__pb_span key) {
    if (!m->cap || key.size_bytes > UINT32_MAX) return -1;
    uint32_t len = (uint32_t)key.size_bytes;
    uint32_t h = hash_bytes(key.ptr, len) & (m->cap - 1);
    while (m->e[h].val >= 0) {
        if (m->e[h].len == len && (len == 0 || memcmp(m->e[h].key, key.ptr, len) == 0))
            return m->e[h].val;
        h = (h + 1) & (m->cap - 1);
    }
    return -1;
}

/* Inserts or overwrites. */
static ks_status map_put(imp *c, name_map *m, ks__pb_span key, int32_t val) {
    if (key.size_bytes > UINT32_MAX) return KS_STATUS_LIMIT_EXCEEDED;
    if ((m->count + 1) * 2 > m->cap) {
        ks_status st = map_grow(c, m);
        if (st) return st;
    }
    uint32_t len = (uint32_t)key.size_bytes;
    uint32_t h = hash_bytes(key.ptr, len) & (m->cap - 1);
    while (m->e[h].val >= 0) {
        if (m->e[h].len == len && (len == 0 || memcmp(m->e[h].key, key.ptr, len) == 0)) {
            m->e[h].val = val;
            return KS_STATUS_OK;
        }
        h = (h + 1) & (m->cap - 1);
    }
    m->e[h].key = key.ptr;
    m->e[h].len = len;
    m->e[h].val = val;
    m->count++;
    return KS_STATUS_OK;
}

/* ---------------------------------------------------------------- tensors */

static ks_dtype map_dtype(int64_t onnx_type) {
    switch (onnx_type) {
    case ONNX_FLOAT:
        return KS_DTYPE_F32;
    case ONNX_UINT8:
        return KS_DTYPE_U8;
    case ONNX_INT8:
        return KS_DTYPE_I8;
    case ONNX_INT16:
        return KS_DTYPE_I16;
    case ONNX_INT32:
        return KS_DTYPE_I32;
    case ONNX_INT64:
        return KS_DTYPE_I64;
    case ONNX_BOOL:
        return KS_DTYPE_BOOL;
    case ONNX_FLOAT16:
        return KS_DTYPE_F16;
    case ONNX_DOUBLE:
        return KS_DTYPE_F32; /* narrowed: no f64 in the IR */
    default:
        return KS_DTYPE_INVALID;
    }
}

static ks_status set_rank_known(imp *c, int32_t id, int known) {
    if ((uint32_t)id >= c->rank_known_cap) {
        uint32_t nc = c->rank_known_cap ? c->rank_known_cap : 256;
        while (nc <= (uint32_t)id)
            nc *= 2;
        uint8_t *n = ks__calloc(&c->g->alloc, nc, 1);
        if (!n) return KS_STATUS_OUT_OF_MEMORY;
        if (c->rank_known) memcpy(n, c->rank_known, c->rank_known_cap);
        ks__free(&c->g->alloc, c->rank_known);
        c->rank_known = n;
        c->rank_known_cap = nc;
    }
    c->rank_known[id] = (uint8_t)known;
    return KS_STATUS_OK;
}

static int rank_known(const imp *c, int32_t id) {
    return id >= 0 && (uint32_t)id < c->rank_known_cap && c->rank_known[id];
}

static int32_t t_rank(const imp *c, int32_t id) {
    return c->g->tensors[id].rank;
}

/* The rank of tensor id, -1 when unknown. */
static int32_t known_rank(const imp *c, int32_t id) {
    return rank_known(c, id) ? t_rank(c, id) : -1;
}
static int is_const(const imp *c, int32_t id) {
    return id >= 0 && (c->g->tensors[id].flags & KS__TENSOR_CONST);
}

/* Adds a tensor. rank < 0 means unknown (stored as rank 0 and flagged). dims NULL => all -1. */
static ks_status new_tensor(imp *c, const char *name, ks_dtype dtype, int32_t rank,
                            const int64_t *dims, int32_t *id_out) {
    if (c->g->num_tensors >= KS_IMPORT_MAX_TENSORS)
        return fail(c, KS_STATUS_LIMIT_EXCEEDED, "more than %u tensors", KS_IMPORT_MAX_TENSORS);
    int64_t d[KS_MAX_RANK];
    int32_t r = rank < 0 ? 0 : rank;
    for (int32_t i = 0; i < r; i++)
        d[i] = dims ? dims[i] : -1;
    ks_status st = ks__graph_add_tensor(c->g, name, dtype, r, d, id_out);
    if (st) return fail(c, st, "cannot add tensor '%s'", name ? name : "");
    return set_rank_known(c, *id_out, rank >= 0);
}

static ks_status track_const_bytes(imp *c, uint64_t bytes, const char *name) {
    c->const_bytes += bytes;
    if (c->const_bytes > KS_IMPORT_MAX_CONST_BYTES)
        return fail(c, KS_STATUS_LIMIT_EXCEEDED,
                    "constant '%s': total constant data exceeds %llu "
                    "bytes",
                    name, (unsigned long long)KS_IMPORT_MAX_CONST_BYTES);
    return KS_STATUS_OK;
}

/* New constant; data copied. */
static ks_status new_const(imp *c, const char *name, ks_dtype dtype, int32_t rank,
                           const int64_t *dims, const void *data, int32_t *id_out) {
    int64_t n = ks__numel(rank, dims);
    if (n < 0) return fail(c, KS_STATUS_INVALID_MODEL, "constant '%s': bad shape", name);
    size_t bytes = (size_t)n * ks_dtype_size(dtype);
    ks_status st = track_const_bytes(c, bytes, name);
    if (st) return st;
    st = new_tensor(c, name, dtype, rank, dims, id_out);
    if (st) return st;
    st = ks__graph_set_const(c->g, *id_out, data, bytes, true);
    if (st) return fail(c, st, "constant '%s': out of memory", name);
    return KS_STATUS_OK;
}

static ks_status const_i64_1d(imp *c, const char *name, const int64_t *vals, int64_t n,
                              int32_t *id_out) {
    int64_t d[1] = {n};
    return new_const(c, name, KS_DTYPE_I64, 1, d, vals, id_out);
}

/* Decodes a TensorProto into an IR constant (name_override wins over the proto's own name). */
static ks_status parse_tensor(imp *c, ks__pb_span msg, const char *name_override, int32_t *id_out) {
    ks__pb_reader r = ks__pb_reader_init(msg);
    ks__pb_field f;
    int rc;
    int64_t data_type = 0, data_location = 0;
    ks__pb_span name = {NULL, 0}, raw = {NULL, 0};
    int has_raw = 0, has_external = 0, has_strings = 0, has_segment = 0;
    while ((rc = ks__pb_next(&r, &f)) > 0) {
        switch (f.number) {
        case 2:
            data_type = (int64_t)f.u64;
            break;
        case 3:
            has_segment = 1;
            break;
        case 6:
            has_strings = 1;
            break;
        case 8:
            if (f.wire != KS_PB_LEN)
                return fail(c, KS_STATUS_INVALID_MODEL, "tensor name: bad wire type");
            name = f.span;
            break;
        case 9:
            if (f.wire != KS_PB_LEN)
                return fail(c, KS_STATUS_INVALID_MODEL, "tensor raw_data: bad wire type");
            raw = f.span;
            has_raw = 1;
            break;
        case 13:
            has_external = 1;
            break;
        case 14:
            data_location = (int64_t)f.u64;
            break;
        default:
            break;
        }
    }
    if (rc < 0) return pb_fail(c, rc, "TensorProto");
    char tname[256];
    if (name_override)
        ks__fmt(tname, sizeof(tname), "%s", name_override);
    else
        span_print(name, tname, sizeof(tname));
    if (has_external || data_location == 1)
        return fail(c, KS_STATUS_UNSUPPORTED,
                    "tensor '%s': external data is not supported "
                    "(re-save the model with weights embedded)",
                    tname);
    if (has_segment)
        return fail(c, KS_STATUS_UNSUPPORTED, "tensor '%s': segmented tensors are not supported",
                    tname);
    ks_dtype dt = map_dtype(data_type);
    if (dt == KS_DTYPE_INVALID || has_strings)
        return fail(c, KS_STATUS_UNSUPPORTED, "tensor '%s': data_type %lld is not supported", tname,
                    (long long)data_type);

    size_t ndims = 0;
    rc = ks__pb_count_repeated(msg, 1, KS_PB_VARINT, &ndims);
    if (rc < 0) return pb_fail(c, rc, "TensorProto.dims");
    if (ndims > KS_MAX_RANK)
        return fail(c, KS_STATUS_UNSUPPORTED, "tensor '%s': rank %zu exceeds %d", tname, ndims,
                    KS_MAX_RANK);
    int64_t dims[KS_MAX_RANK];
    rc = ks__pb_read_repeated(msg, 1, KS_PB_VARINT, dims, NULL, KS_MAX_RANK, &ndims);
    if (rc < 0) return pb_fail(c, rc, "TensorProto.dims");
    for (size_t i = 0; i < ndims; i++)
        if (dims[i] < 0 || dims[i] > ONNX_MAX_DIM)
            return fail(c, KS_STATUS_INVALID_MODEL, "tensor '%s': invalid dim[%zu] = %lld", tname,
                        i, (long long)dims[i]);
    int64_t numel = ks__numel((int32_t)ndims, dims);
    if (numel < 0)
        return fail(c, KS_STATUS_INVALID_MODEL, "tensor '%s': element count overflows", tname);
    size_t esize = ks_dtype_size(dt);
    if ((uint64_t)numel > KS_IMPORT_MAX_CONST_BYTES / esize)
        return fail(c, KS_STATUS_LIMIT_EXCEEDED,
                    "tensor '%s': %lld elements exceed the constant "
                    "size limit",
                    tname, (long long)numel);
    size_t out_bytes = (size_t)numel * esize;
    size_t src_esize = data_type == ONNX_DOUBLE ? 8 : esize;

    ks_status st = KS_STATUS_OK;
    void *buf = NULL;
    int64_t *tmp64 = NULL;
    float *tmpf = NULL;
    if (has_raw) {
        if ((uint64_t)raw.size_bytes != (uint64_t)numel * src_esize) {
            st = fail(c, KS_STATUS_INVALID_MODEL,
                      "tensor '%s': raw_data holds %zu bytes, shape "
                      "needs %llu",
                      tname, raw.size_bytes, (unsigned long long)numel * src_esize);
            goto done;
        }
    } else {
        /* typed fields: float_data(4) for float, int32_data(5) for small ints/bool/fp16,
         * int64_data(7), double_data(10) */
        uint32_t field = 5, kind = KS_PB_VARINT;
        if (data_type == ONNX_FLOAT)
            field = 4, kind = KS_PB_FIXED32;
        else if (data_type == ONNX_INT64)
            field = 7;
        else if (data_type == ONNX_DOUBLE)
            field = 10, kind = KS_PB_FIXED64;
        size_t cnt = 0;
        rc = ks__pb_count_repeated(msg, field, kind, &cnt);
        if (rc < 0) {
            st = pb_fail(c, rc, "TensorProto data");
            goto done;
        }
        if ((int64_t)cnt != numel) {
            st = fail(c, KS_STATUS_INVALID_MODEL, "tensor '%s': holds %zu values, shape needs %lld",
                      tname, cnt, (long long)numel);
            goto done;
        }
        if (cnt) {
            if (kind == KS_PB_VARINT)
                tmp64 = ks__alloc(&c->g->alloc, cnt * sizeof(int64_t));
            else
                tmpf = ks__alloc(&c->g->alloc, cnt * sizeof(float));
            if (!tmp64 && !tmpf) {
                st = fail(c, KS_STATUS_OUT_OF_MEMORY, "tensor '%s': out of memory", tname);
                goto done;
            }
            rc = ks__pb_read_repeated(msg, field, kind, tmp64, tmpf, cnt, &cnt);
            if (rc < 0) {
                st = pb_fail(c, rc, "TensorProto data");
                goto done;
            }
        }
    }
    st = track_const_bytes(c, out_bytes, tname);
    if (st) goto done;
    buf = ks__alloc_aligned(&c->g->alloc, out_bytes ? out_bytes : 1, 64);
    if (!buf) {
        st = fail(c, KS_STATUS_OUT_OF_MEMORY, "tensor '%s': out of memory (%zu bytes)", tname,
                  out_bytes);
        goto done;
    }
    if (has_raw) {
        /* raw_data is little-endian; Kestrel targets little-endian hosts only. */
        if (data_type == ONNX_DOUBLE) {
            for (int64_t i = 0; i < numel; i++) {
                double d;
                memcpy(&d, raw.ptr + i * 8, 8);
                ((float *)buf)[i] = (float)d;
            }
        } else if (out_bytes) {
            memcpy(buf, raw.ptr, out_bytes);
        }
    } else if (tmpf) {
        memcpy(buf, tmpf, out_bytes);
    } else {
        for (int64_t i = 0; i < numel; i++) {
            int64_t v = tmp64[i];
            switch (dt) {
            case KS_DTYPE_I64:
                ((int64_t *)buf)[i] = v;
                break;
            case KS_DTYPE_I32:
                ((int32_t *)buf)[i] = (int32_t)v;
                break;
            case KS_DTYPE_I16:
                ((int16_t *)buf)[i] = (int16_t)v;
                break;
            case KS_DTYPE_F16:
                ((uint16_t *)buf)[i] = (uint16_t)v;
                break;
            case KS_DTYPE_I8:
                ((int8_t *)buf)[i] = (int8_t)v;
                break;
            case KS_DTYPE_BOOL:
                ((uint8_t *)buf)[i] = v != 0;
                break;
            default:
                ((uint8_t *)buf)[i] = (uint8_t)v;
                break;
            }
        }
    }
    st = new_tensor(c, tname, dt, (int32_t)ndims, dims, id_out);
    if (st) goto done;
    st = ks__graph_set_const(c->g, *id_out, buf, out_bytes, false);
    if (st) {
        st = fail(c, st, "tensor '%s': cannot set data", tname);
        goto done;
    }
    buf = NULL; /* owned by the graph now */
done:
    ks__free(&c->g->alloc, buf);
    ks__free(&c->g->alloc, tmp64);
    ks__free(&c->g->alloc, tmpf);
    return st;
}

/* ValueInfoProto -> dtype and shape. Dims with dim_param or no value become -1.
 * *rank_out = -1 when the shape is absent. */
static ks_status parse_value_info(imp *c, ks__pb_span msg, ks__pb_span *name_out,
                                  ks_dtype *dtype_out, int32_t *rank_out, int64_t *dims) {
    ks__pb_reader r = ks__pb_reader_init(msg);
    ks__pb_field f;
    int rc;
    ks__pb_span type = {NULL, 0}, tt = {NULL, 0}, shape = {NULL, 0};
    int has_type = 0, has_tt = 0, has_shape = 0;
    int64_t elem = 0;
    name_out->ptr = NULL;
    name_out->size_bytes = 0;
    while ((rc = ks__pb_next(&r, &f)) > 0) {
        if (f.number == 1 && f.wire == KS_PB_LEN) *name_out = f.span;
        if (f.number == 2 && f.wire == KS_PB_LEN) type = f.span, has_type = 1;
    }
    if (rc < 0) return pb_fail(c, rc, "ValueInfoProto");
    char nm[128];
    span_print(*name_out, nm, sizeof(nm));
    if (has_type) {
        r = ks__pb_reader_init(type);
        while ((rc = ks__pb_next(&r, &f)) > 0)
            if (f.number == 1 && f.wire == KS_PB_LEN) tt = f.span, has_tt = 1;
        if (rc < 0) return pb_fail(c, rc, "TypeProto");
    }
    if (!has_tt)
        return fail(c, KS_STATUS_UNSUPPORTED, "value '%s': only tensor types are supported", nm);
    r = ks__pb_reader_init(tt);
    while ((rc = ks__pb_next(&r, &f)) > 0) {
        if (f.number == 1 && f.wire == KS_PB_VARINT) elem = (int64_t)f.u64;
        if (f.number == 2 && f.wire == KS_PB_LEN) shape = f.span, has_shape = 1;
    }
    if (rc < 0) return pb_fail(c, rc, "TypeProto.Tensor");
    *dtype_out = map_dtype(elem);
    if (*dtype_out == KS_DTYPE_INVALID)
        return fail(c, KS_STATUS_UNSUPPORTED, "value '%s': element type %lld is not supported", nm,
                    (long long)elem);
    *rank_out = -1;
    if (!has_shape) return KS_STATUS_OK;
    int32_t rank = 0;
    r = ks__pb_reader_init(shape);
    while ((rc = ks__pb_next(&r, &f)) > 0) {
        if (f.number != 1 || f.wire != KS_PB_LEN) continue;
        if (rank >= KS_MAX_RANK)
            return fail(c, KS_STATUS_UNSUPPORTED, "value '%s': rank exceeds %d", nm, KS_MAX_RANK);
        int64_t d = -1;
        ks__pb_reader dr = ks__pb_reader_init(f.span);
        ks__pb_field df;
        int drc;
        while ((drc = ks__pb_next(&dr, &df)) > 0)
            if (df.number == 1 && df.wire == KS_PB_VARINT) d = (int64_t)df.u64;
        if (drc < 0) return pb_fail(c, drc, "TensorShapeProto.Dimension");
        if (d < -1 || d > ONNX_MAX_DIM)
            return fail(c, KS_STATUS_INVALID_MODEL, "value '%s': invalid dim[%d] = %lld", nm, rank,
                        (long long)d);
        dims[rank++] = d;
    }
    if (rc < 0) return pb_fail(c, rc, "TensorShapeProto");
    *rank_out = rank;
    return KS_STATUS_OK;
}

/* ---------------------------------------------------------------- nodes */

static ks_status parse_attr(imp *c, ks__pb_span msg, attr *a) {
    memset(a, 0, sizeof(*a));
    a->msg = msg;
    ks__pb_reader r = ks__pb_reader_init(msg);
    ks__pb_field f;
    int rc;
    while ((rc = ks__pb_next(&r, &f)) > 0) {
        switch (f.number) {
        case 1:
            if (f.wire == KS_PB_LEN) a->name = f.span;
            break;
        case 2:
            if (f.wire == KS_PB_FIXED32) {
                uint32_t b = (uint32_t)f.u64;
                memcpy(&a->f, &b, 4);
                a->has_f = 1;
            }
            break;
        case 3:
            if (f.wire == KS_PB_VARINT) a->i = (int64_t)f.u64, a->has_i = 1;
            break;
        case 4:
            if (f.wire == KS_PB_LEN) a->s = f.span, a->has_s = 1;
            break;
        case 5:
            if (f.wire == KS_PB_LEN) a->t = f.span, a->has_t = 1;
            break;
        case 20:
            a->type = (uint32_t)f.u64;
            break;
        default:
            break;
        }
    }
    if (rc < 0)
        return node_fail(c, KS_STATUS_INVALID_MODEL, "attribute: %s", ks__pb_error_string(rc));
    return KS_STATUS_OK;
}

static ks_status grow_spans(imp *c, void **arr, uint32_t *cap, uint32_t need, size_t elem) {
    if (need <= *cap) return KS_STATUS_OK;
    uint32_t nc = *cap ? *cap : 8;
    while (nc < need)
        nc *= 2;
    void *n = ks__alloc(&c->g->alloc, (size_t)nc * elem);
    if (!n) return fail(c, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    ks__free(&c->g->alloc, *arr);
    *arr = n;
    *cap = nc;
    return KS_STATUS_OK;
}

static ks_status parse_node(imp *c, ks__pb_span msg) {
    onode *n = &c->node;
    memset(&n->op_type, 0, sizeof(n->op_type));
    n->name = n->op_type;
    n->domain = n->op_type;
    uint32_t ni = 0, no = 0, na = 0;
    ks__pb_reader r = ks__pb_reader_init(msg);
    ks__pb_field f;
    int rc;
    while ((rc = ks__pb_next(&r, &f)) > 0) {
        if (f.wire != KS_PB_LEN) continue;
        if (f.number == 1)
            ni++;
        else if (f.number == 2)
            no++;
        else if (f.number == 5)
            na++;
        else if (f.number == 3)
            n->name = f.span;
        else if (f.number == 4)
            n->op_type = f.span;
        else if (f.number == 7)
            n->domain = f.span;
    }
    span_print(n->op_type, c->opname, sizeof(c->opname));
    span_print(n->name, c->nodename, sizeof(c->nodename));
    if (rc < 0) return node_fail(c, KS_STATUS_INVALID_MODEL, "%s", ks__pb_error_string(rc));
    if (ni > 1024 || no > 1024)
        return node_fail(c, KS_STATUS_LIMIT_EXCEEDED, "%u inputs / %u outputs exceed 1024", ni, no);
    ks_status st = grow_spans(c, (void **)&n->inputs, &c->cap_in, ni + 1, sizeof(ks__pb_span));
    if (!st) st = grow_spans(c, (void **)&n->outputs, &c->cap_out, no + 1, sizeof(ks__pb_span));
    if (!st) st = grow_spans(c, (void **)&n->attrs, &c->cap_attr, na + 1, sizeof(attr));
    if (st) return st;
    n->num_inputs = n->num_outputs = n->num_attrs = 0;
    r = ks__pb_reader_init(msg);
    while ((rc = ks__pb_next(&r, &f)) > 0) {
        if (f.wire != KS_PB_LEN) continue;
        if (f.number == 1)
            n->inputs[n->num_inputs++] = f.span;
        else if (f.number == 2)
            n->outputs[n->num_outputs++] = f.span;
        else if (f.number == 5) {
            st = parse_attr(c, f.span, &n->attrs[n->num_attrs++]);
            if (st) return st;
        }
    }
    return KS_STATUS_OK;
}

static const attr *find_attr(imp *c, const char *name) {
    for (uint32_t i = 0; i < c->node.num_attrs; i++)
        if (span_eq(c->node.attrs[i].name, name)) return &c->node.attrs[i];
    return NULL;
}

static int64_t attr_int(imp *c, const char *name, int64_t def) {
    const attr *a = find_attr(c, name);
    return a && a->has_i ? a->i : def;
}

static float attr_float(imp *c, const char *name, float def) {
    const attr *a = find_attr(c, name);
    if (a && a->has_f) return a->f;
    if (a && a->has_i) return (float)a->i;
    return def;
}

static int attr_str_is(imp *c, const char *name, const char *def, const char *val) {
    const attr *a = find_attr(c, name);
    if (!a || !a->has_s) return strcmp(def, val) == 0;
    return span_eq(a->s, val);
}

static void attr_str(imp *c, const char *name, const char *def, char *buf, size_t cap) {
    const attr *a = find_attr(c, name);
    if (!a || !a->has_s)
        ks__fmt(buf, cap, "%s", def);
    else
        span_print(a->s, buf, cap);
}

typedef struct str_choice {
    const char *name;
    int32_t val;
} str_choice;

/* Maps string attribute `name` (def when absent) through choices. The value is compared as
 * printed into a buffer of buf_cap bytes; an unknown value fails with "<what> '<value>'". */
static ks_status attr_choice(imp *c, const char *name, const char *def, size_t buf_cap,
                             const str_choice *choices, size_t num_choices, ks_status bad_status,
                             const char *what, int32_t *out) {
    char buf[64];
    attr_str(c, name, def, buf, buf_cap < sizeof(buf) ? buf_cap : sizeof(buf));
    for (size_t i = 0; i < num_choices; i++) {
        if (strcmp(buf, choices[i].name) == 0) {
            *out = choices[i].val;
            return KS_STATUS_OK;
        }
    }
    return node_fail(c, bad_status, "%s '%s'", what, buf);
}

#define NUM_CHOICES(a) (sizeof(a) / sizeof((a)[0]))

/* Reads repeated attribute field `field` (AttributeProto: 8 = ints, 7 = floats) of `name` into
 * int_out or float_out (cap entries). *count_out = -1 if the attribute is absent. */
static ks_status attr_repeated(imp *c, const char *name, uint32_t field, uint32_t wire,
                               int64_t *int_out, float *float_out, size_t cap, int64_t *count_out) {
    const attr *a = find_attr(c, name);
    *count_out = -1;
    if (!a) return KS_STATUS_OK;
    size_t n = 0;
    int rc = ks__pb_count_repeated(a->msg, field, wire, &n);
    if (rc < 0)
        return node_fail(c, KS_STATUS_INVALID_MODEL, "attribute '%s': %s", name,
                         ks__pb_error_string(rc));
    if (n > cap)
        return node_fail(c, KS_STATUS_UNSUPPORTED,
                         "attribute '%s' has %zu values (at most %zu supported)", name, n, cap);
    rc = ks__pb_read_repeated(a->msg, field, wire, int_out, float_out, cap, &n);
    if (rc < 0)
        return node_fail(c, KS_STATUS_INVALID_MODEL, "attribute '%s': %s", name,
                         ks__pb_error_string(rc));
    *count_out = (int64_t)n;
    return KS_STATUS_OK;
}

static ks_status attr_ints(imp *c, const char *name, int64_t *out, size_t cap, int64_t *count_out) {
    return attr_repeated(c, name, 8, KS_PB_VARINT, out, NULL, cap, count_out);
}

static ks_status attr_floats(imp *c, const char *name, float *out, size_t cap, int64_t *count_out) {
    return attr_repeated(c, name, 7, KS_PB_FIXED32, NULL, out, cap, count_out);
}

/* Tensor id of node input k; -1 if absent/empty (an error when required). */
static ks_status in_id(imp *c, uint32_t k, int required, int32_t *id_out) {
    *id_out = -1;
    if (k >= c->node.num_inputs || c->node.inputs[k].size_bytes == 0) {
        if (required)
            return node_fail(c, KS_STATUS_INVALID_MODEL, "required input %u is missing", k);
        return KS_STATUS_OK;
    }
    int32_t id = map_get(&c->tensors, c->node.inputs[k]);
    if (id < 0) {
        char nm[128];
        span_print(c->node.inputs[k], nm, sizeof(nm));
        return node_fail(c, KS_STATUS_INVALID_MODEL,
                         "input %u '%s' is not produced by any earlier node or initializer", k, nm);
    }
    *id_out = id;
    return KS_STATUS_OK;
}

/* Node inputs 0..num-1 into ids; the first num_required must be present. */
static ks_status in_ids(imp *c, uint32_t num, uint32_t num_required, int32_t *ids) {
    for (uint32_t k = 0; k < num; k++) {
        ks_status st = in_id(c, k, k < num_required, &ids[k]);
        if (st) return st;
    }
    return KS_STATUS_OK;
}

/* Creates the tensor for ONNX output k. rank < 0: unknown. Value info (when trusted) wins. */
static ks_status out_tensor(imp *c, uint32_t k, ks_dtype dtype, int32_t rank, const int64_t *dims,
                            int32_t *id_out) {
    if (k >= c->node.num_outputs)
        return node_fail(c, KS_STATUS_INVALID_MODEL, "output %u is missing", k);
    ks__pb_span nm = c->node.outputs[k];
    if (nm.size_bytes > ONNX_MAX_NAME)
        return node_fail(c, KS_STATUS_LIMIT_EXCEEDED, "output %u name longer than %d bytes", k,
                         ONNX_MAX_NAME);
    if (nm.size_bytes && map_get(&c->tensors, nm) >= 0) {
        char pn[128];
        span_print(nm, pn, sizeof(pn));
        return node_fail(c, KS_STATUS_INVALID_MODEL, "output '%s' is defined twice", pn);
    }
    int64_t vdims[KS_MAX_RANK];
    int32_t vi = c->trust_value_info && nm.size_bytes ? map_get(&c->vinfo, nm) : -1;
    if (vi >= 0) {
        ks__pb_span vn;
        ks_dtype vdt;
        int32_t vrank;
        ks_status st = parse_value_info(c, c->vi_spans[vi], &vn, &vdt, &vrank, vdims);
        if (st) return st;
        if (vrank >= 0 && (rank < 0 || rank == vrank)) {
            rank = vrank;
            dims = vdims;
        }
    }
    const char *name = span_cstr(c, nm);
    if (!name) return fail(c, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    ks_status st = new_tensor(c, name, dtype, rank, dims, id_out);
    if (st) return st;
    if (nm.size_bytes) {
        st = map_put(c, &c->tensors, nm, *id_out);
        if (st) return fail(c, st, "out of memory");
    }
    return KS_STATUS_OK;
}

#define TMP_NAME_CAP 300

/* "<first output>/<suffix>": the name of a tensor the current node adds internally. */
static void tmp_name(imp *c, const char *suffix, char nm[TMP_NAME_CAP]) {
    char base[256];
    if (c->node.num_outputs)
        span_print(c->node.outputs[0], base, sizeof(base));
    else
        ks__fmt(base, sizeof(base), "node%u", c->node_index);
    ks__fmt(nm, TMP_NAME_CAP, "%s/%s", base, suffix);
}

static ks_status tmp_tensor(imp *c, const char *suffix, ks_dtype dtype, int32_t rank,
                            const int64_t *dims, int32_t *id_out) {
    char nm[TMP_NAME_CAP];
    tmp_name(c, suffix, nm);
    return new_tensor(c, nm, dtype, rank, dims, id_out);
}

static ks_status tmp_const(imp *c, const char *suffix, ks_dtype dtype, int32_t rank,
                           const int64_t *dims, const void *data, int32_t *id_out) {
    char nm[TMP_NAME_CAP];
    tmp_name(c, suffix, nm);
    return new_const(c, nm, dtype, rank, dims, data, id_out);
}

static ks_status tmp_const_i64(imp *c, const char *suffix, const int64_t *vals, int64_t n,
                               int32_t *id_out) {
    int64_t d[1] = {n};
    return tmp_const(c, suffix, KS_DTYPE_I64, 1, d, vals, id_out);
}

static ks_status emit(imp *c, uint32_t op, uint32_t nin, const int32_t *ins, uint32_t nout,
                      const int32_t *outs, ks__node **node_out) {
    if (c->g->num_nodes >= KS_IMPORT_MAX_NODES)
        return fail(c, KS_STATUS_LIMIT_EXCEEDED, "more than %u nodes", KS_IMPORT_MAX_NODES);
    uint32_t idx;
    ks_status st = ks__graph_add_node(c->g, op, c->nodename, nin, ins, nout, outs, &idx);
    if (st) return node_fail(c, st, "cannot add node");
    if (node_out) *node_out = &c->g->nodes[idx];
    return KS_STATUS_OK;
}

/* Creates ONNX output 0 (as out_tensor) and emits op over ins into it. */
static ks_status emit_out(imp *c, uint32_t op, uint32_t nin, const int32_t *ins, ks_dtype dtype,
                          int32_t rank, const int64_t *dims, ks__node **node_out) {
    int32_t y;
    ks_status st = out_tensor(c, 0, dtype, rank, dims, &y);
    return st ? st : emit(c, op, nin, ins, 1, &y, node_out);
}

static ks_dtype dtype_of(const imp *c, int32_t id) {
    return c->g->tensors[id].dtype;
}

static ks_status check_axis(imp *c, int64_t axis, int32_t rank) {
    if (axis < -KS_MAX_RANK || axis >= KS_MAX_RANK || (rank >= 0 && (axis < -rank || axis >= rank)))
        return node_fail(c, KS_STATUS_INVALID_MODEL, "axis %lld out of range", (long long)axis);
    return KS_STATUS_OK;
}

/* out = TRANSPOSE(x, perm); out dims are permuted from x's when known. */
static ks_status emit_transpose(imp *c, int32_t x, const int32_t *perm, int32_t rank,
                                const char *suffix, int32_t *out) {
    int64_t d[KS_MAX_RANK];
    const ks__tensor *t = &c->g->tensors[x];
    int known = rank_known(c, x) && t->rank == rank;
    for (int32_t i = 0; i < rank; i++)
        d[i] = known ? t->dims[perm[i]] : -1;
    ks_status st = tmp_tensor(c, suffix, t->dtype, rank, d, out);
    if (st) return st;
    ks__node *n;
    st = emit(c, KS_OP_TRANSPOSE, 1, &x, 1, out, &n);
    if (st) return st;
    n->ip[0] = rank;
    for (int32_t i = 0; i < rank; i++)
        n->ip[1 + i] = perm[i];
    return KS_STATUS_OK;
}

static const int32_t k_to_nhwc[4] = {0, 2, 3, 1};
static const int32_t k_to_nchw[4] = {0, 3, 1, 2};

/* Runs `op` in NHWC: x_nchw -> T -> op(inputs...) -> T -> ONNX output 0. Returns the node. */
static ks_status emit_spatial(imp *c, uint32_t op, int32_t x, uint32_t num_extra,
                              const int32_t *extra, ks__node **node_out) {
    int32_t xh, yh, y;
    ks_status st = emit_transpose(c, x, k_to_nhwc, 4, "nhwc_in", &xh);
    if (st) return st;
    st = tmp_tensor(c, "nhwc", dtype_of(c, x), 4, NULL, &yh);
    if (st) return st;
    int32_t ins[4] = {xh, -1, -1, -1};
    for (uint32_t i = 0; i < num_extra && i < 3; i++)
        ins[1 + i] = extra[i];
    uint32_t idx;
    if (c->g->num_nodes >= KS_IMPORT_MAX_NODES)
        return fail(c, KS_STATUS_LIMIT_EXCEEDED, "more than %u nodes", KS_IMPORT_MAX_NODES);
    st = ks__graph_add_node(c->g, op, c->nodename, 1 + num_extra, ins, 1, &yh, &idx);
    if (st) return node_fail(c, st, "cannot add node");
    st = out_tensor(c, 0, dtype_of(c, x), 4, NULL, &y);
    if (st) return st;
    ks__node *tn;
    st = emit(c, KS_OP_TRANSPOSE, 1, &yh, 1, &y, &tn);
    if (st) return st;
    tn->ip[0] = 4;
    for (int i = 0; i < 4; i++)
        tn->ip[1 + i] = k_to_nchw[i];
    *node_out = &c->g->nodes[idx];
    return KS_STATUS_OK;
}

/* The constant tensor id and its element count, which must not exceed cap. */
static ks_status const_values(imp *c, int32_t id, const char *what, int64_t cap,
                              const ks__tensor **t_out, int64_t *n_out) {
    if (!is_const(c, id)) return node_fail(c, KS_STATUS_UNSUPPORTED, "%s must be a constant", what);
    const ks__tensor *t = &c->g->tensors[id];
    int64_t n = ks__numel(t->rank, t->dims);
    if (n < 0 || n > cap)
        return node_fail(c, KS_STATUS_UNSUPPORTED, "%s has %lld values (at most %lld supported)",
                         what, (long long)n, (long long)cap);
    *t_out = t;
    *n_out = n;
    return KS_STATUS_OK;
}

/* Element i of an integer (or bool) tensor; false for any other dtype. */
static bool int_elem(const ks__tensor *t, int64_t i, int64_t *v) {
    switch (t->dtype) {
    case KS_DTYPE_I64:
        *v = ((const int64_t *)t->data)[i];
        return true;
    case KS_DTYPE_I32:
        *v = ((const int32_t *)t->data)[i];
        return true;
    case KS_DTYPE_I16:
        *v = ((const int16_t *)t->data)[i];
        return true;
    case KS_DTYPE_I8:
        *v = ((const int8_t *)t->data)[i];
        return true;
    case KS_DTYPE_U8:
    case KS_DTYPE_BOOL:
        *v = ((const uint8_t *)t->data)[i];
        return true;
    default:
        return false;
    }
}

/* Reads a constant integer tensor (any int dtype) into out. */
static ks_status const_ints(imp *c, int32_t id, const char *what, int64_t *out, int64_t cap,
                            int64_t *count_out) {
    const ks__tensor *t;
    int64_t n;
    ks_status st = const_values(c, id, what, cap, &t, &n);
    if (st) return st;
    for (int64_t i = 0; i < n; i++)
        if (!int_elem(t, i, &out[i]))
            return node_fail(c, KS_STATUS_INVALID_MODEL, "%s must be an integer tensor", what);
    *count_out = n;
    return KS_STATUS_OK;
}

static ks_status const_floats(imp *c, int32_t id, const char *what, float *out, int64_t cap,
                              int64_t *count_out) {
    const ks__tensor *t;
    int64_t n, v;
    ks_status st = const_values(c, id, what, cap, &t, &n);
    if (st) return st;
    for (int64_t i = 0; i < n; i++) {
        if (t->dtype == KS_DTYPE_F32)
            out[i] = ((const float *)t->data)[i];
        else if (t->dtype == KS_DTYPE_F16)
            out[i] = ks__f16_to_f32(((const uint16_t *)t->data)[i]);
        else if (int_elem(t, i, &v))
            out[i] = (float)v;
        else
            out[i] = ((const uint8_t *)t->data)[i];
    }
    *count_out = n;
    return KS_STATUS_OK;
}

static int32_t clamp_i32(int64_t v) {
    return v > INT32_MAX ? INT32_MAX : (v < INT32_MIN ? INT32_MIN : (int32_t)v);
}

/* ---------------------------------------------------------------- op handlers */

typedef ks_status (*op_fn)(imp *c, uint32_t ir_op);

static ks_status op_unary(imp *c, uint32_t ir_op) {
    int32_t x;
    ks_status st = in_id(c, 0, 1, &x);
    if (st) return st;
    const ks__tensor *t = &c->g->tensors[x];
    ks__node *n;
    st = emit_out(c, ir_op, 1, &x, t->dtype, known_rank(c, x), t->dims, &n);
    if (st) return st;
    if (ir_op == KS_OP_LEAKY_RELU) n->fp[0] = attr_float(c, "alpha", 0.01f);
    if (ir_op == KS_OP_ELU) n->fp[0] = attr_float(c, "alpha", 1.0f);
    if (ir_op == KS_OP_HARD_SIGMOID) {
        n->fp[0] = attr_float(c, "alpha", 0.2f);
        n->fp[1] = attr_float(c, "beta", 0.5f);
    }
    return KS_STATUS_OK;
}

/* Maps an ONNX output onto an existing tensor (Identity, Dropout): no node. */
static ks_status alias_output(imp *c, int32_t x) {
    if (c->node.num_outputs < 1) return node_fail(c, KS_STATUS_INVALID_MODEL, "no output");
    for (uint32_t k = 1; k < c->node.num_outputs; k++)
        if (c->node.outputs[k].size_bytes)
            return node_fail(c, KS_STATUS_UNSUPPORTED, "output %u (mask) is not supported", k);
    ks__pb_span nm = c->node.outputs[0];
    if (nm.size_bytes == 0) return KS_STATUS_OK;
    if (map_get(&c->tensors, nm) >= 0)
        return node_fail(c, KS_STATUS_INVALID_MODEL, "output defined twice");
    ks_status st = map_put(c, &c->tensors, nm, x);
    return st ? fail(c, st, "out of memory") : KS_STATUS_OK;
}

static ks_status op_identity(imp *c, uint32_t ir_op) {
    (void)ir_op;
    int32_t x;
    ks_status st = in_id(c, 0, 1, &x);
    return st ? st : alias_output(c, x);
}

static ks_status op_clip(imp *c, uint32_t ir_op) {
    (void)ir_op;
    int32_t x, mn = -1, mx = -1;
    ks_status st = in_id(c, 0, 1, &x);
    float lo = -INFINITY, hi = INFINITY;
    if (c->opset < 11) {
        lo = attr_float(c, "min", -INFINITY);
        hi = attr_float(c, "max", INFINITY);
    } else {
        if (!st) st = in_id(c, 1, 0, &mn);
        if (!st) st = in_id(c, 2, 0, &mx);
        int64_t cnt;
        if (!st && mn >= 0) st = const_floats(c, mn, "Clip min", &lo, 1, &cnt);
        if (!st && mx >= 0) st = const_floats(c, mx, "Clip max", &hi, 1, &cnt);
    }
    if (st) return st;
    uint32_t op = KS_OP_CLIP;
    if (lo == 0.0f && hi == 6.0f)
        op = KS_OP_RELU6;
    else if (lo == 0.0f && isinf(hi) && hi > 0)
        op = KS_OP_RELU;
    else if (lo == -1.0f && hi == 1.0f)
        op = KS_OP_RELU_N1_TO_1;
    const ks__tensor *t = &c->g->tensors[x];
    ks__node *n;
    st = emit_out(c, op, 1, &x, t->dtype, known_rank(c, x), t->dims, &n);
    if (st) return st;
    n->fp[0] = lo;
    n->fp[1] = hi;
    return KS_STATUS_OK;
}

static int32_t bcast_rank(const imp *c, int32_t a, int32_t b) {
    if (!rank_known(c, a) || !rank_known(c, b)) return -1;
    int32_t ra = t_rank(c, a), rb = t_rank(c, b);
    return ra > rb ? ra : rb;
}

static ks_status op_binary(imp *c, uint32_t ir_op) {
    int32_t ins[2];
    ks_status st = in_ids(c, 2, 2, ins);
    if (st) return st;
    if (c->node.num_inputs > 2)
        return node_fail(c, KS_STATUS_UNSUPPORTED, "%u inputs (at most 2 supported)",
                         c->node.num_inputs);
    ks_dtype dt = dtype_of(c, ins[0]);
    if (ir_op >= KS_OP_EQUAL && ir_op <= KS_OP_LESS_EQUAL) dt = KS_DTYPE_BOOL;
    return emit_out(c, ir_op, 2, ins, dt, bcast_rank(c, ins[0], ins[1]), NULL, NULL);
}

static ks_status op_minmax(imp *c, uint32_t ir_op) {
    if (c->node.num_inputs == 1) return op_identity(c, ir_op);
    return op_binary(c, ir_op);
}

static ks_status op_prelu(imp *c, uint32_t ir_op) {
    (void)ir_op;
    int32_t ins[2];
    ks_status st = in_ids(c, 2, 2, ins);
    if (st) return st;
    int32_t x = ins[0], s = ins[1];
    /* ONNX slope broadcasts unidirectionally; a 1-D slope of C values for an [N,C,...] input is
     * the common PyTorch export and needs the channel axis made explicit. */
    const ks__tensor *tx = &c->g->tensors[x], *ts = &c->g->tensors[s];
    if (is_const(c, s) && ts->rank == 1 && rank_known(c, x) && tx->rank > 2 && ts->dims[0] > 1) {
        int64_t d[KS_MAX_RANK];
        int32_t r = tx->rank - 1;
        d[0] = ts->dims[0];
        for (int32_t i = 1; i < r; i++)
            d[i] = 1;
        char nm[300];
        ks__fmt(nm, sizeof(nm), "%s/c11", ts->name);
        int32_t ns;
        st = new_const(c, nm, ts->dtype, r, d, c->g->tensors[s].data, &ns);
        if (st) return st;
        ins[1] = ns;
    }
    tx = &c->g->tensors[x];
    return emit_out(c, KS_OP_PRELU, 2, ins, tx->dtype, known_rank(c, x), tx->dims, NULL);
}

static ks_status op_where(imp *c, uint32_t ir_op) {
    (void)ir_op;
    int32_t ins[3]; /* cond, a, b */
    ks_status st = in_ids(c, 3, 3, ins);
    if (st) return st;
    int32_t a = ins[1], r = bcast_rank(c, a, ins[2]);
    if (r >= 0) r = bcast_rank(c, a, ins[0]) > r ? bcast_rank(c, a, ins[0]) : r;
    return emit_out(c, KS_OP_WHERE, 3, ins, dtype_of(c, a), r, NULL, NULL);
}

static ks_status read_pads_strides(imp *c, int64_t *strides, int64_t *dil, int64_t *pads,
                                   int32_t *mode) {
    int64_t cnt;
    strides[0] = strides[1] = 1;
    dil[0] = dil[1] = 1;
    pads[0] = pads[1] = pads[2] = pads[3] = 0;
    ks_status st = attr_ints(c, "strides", strides, 2, &cnt);
    if (!st && cnt >= 0 && cnt != 2)
        st = node_fail(c, KS_STATUS_UNSUPPORTED, "only 2-D strides are supported");
    if (!st) st = attr_ints(c, "dilations", dil, 2, &cnt);
    if (!st && cnt >= 0 && cnt != 2)
        st = node_fail(c, KS_STATUS_UNSUPPORTED, "only 2-D dilations are supported");
    if (!st) st = attr_ints(c, "pads", pads, 4, &cnt);
    if (!st && cnt >= 0 && cnt != 4)
        st = node_fail(c, KS_STATUS_UNSUPPORTED, "only 2-D pads are supported");
    if (st) return st;
    for (int i = 0; i < 2; i++) {
        if (strides[i] < 1 || strides[i] > 4096 || dil[i] < 1 || dil[i] > 4096)
            return node_fail(c, KS_STATUS_INVALID_MODEL, "invalid stride %lld / dilation %lld",
                             (long long)strides[i], (long long)dil[i]);
    }
    for (int i = 0; i < 4; i++)
        if (pads[i] < 0 || pads[i] > 65536)
            return node_fail(c, KS_STATUS_INVALID_MODEL, "invalid pad %lld", (long long)pads[i]);
    static const str_choice auto_pads[] = {{"NOTSET", KS_PAD_EXPLICIT},
                                           {"", KS_PAD_EXPLICIT},
                                           {"SAME_UPPER", KS_PAD_SAME_UPPER},
                                           {"SAME_LOWER", KS_PAD_SAME_LOWER},
                                           {"VALID", KS_PAD_VALID}};
    return attr_choice(c, "auto_pad", "NOTSET", 32, auto_pads, NUM_CHOICES(auto_pads),
                       KS_STATUS_INVALID_MODEL, "unknown auto_pad", mode);
}

/* Permutes a 4-D constant into a new constant (OIHW -> OHWI etc.); F32/F16 only. */
static ks_status permute_const4(imp *c, int32_t w, const int32_t *perm, const char *suffix,
                                int32_t *out) {
    const ks__tensor *t = &c->g->tensors[w];
    if (t->rank != 4)
        return node_fail(c, KS_STATUS_UNSUPPORTED, "weight '%s' must be 4-D", t->name);
    size_t es = ks_dtype_size(t->dtype);
    int64_t src[4], dst[4];
    for (int i = 0; i < 4; i++)
        src[i] = t->dims[i];
    for (int i = 0; i < 4; i++)
        dst[i] = src[perm[i]];
    int64_t n = ks__numel(4, src);
    if (n < 0) return node_fail(c, KS_STATUS_INVALID_MODEL, "weight '%s': bad shape", t->name);
    uint8_t *buf = ks__alloc_aligned(&c->g->alloc, (size_t)n * es + 1, 64);
    if (!buf) return fail(c, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    int64_t sstride[4];
    sstride[3] = 1;
    for (int i = 2; i >= 0; i--)
        sstride[i] = sstride[i + 1] * src[i + 1];
    const uint8_t *sd = t->data;
    int64_t idx = 0;
    for (int64_t a = 0; a < dst[0]; a++)
        for (int64_t b = 0; b < dst[1]; b++)
            for (int64_t cc = 0; cc < dst[2]; cc++)
                for (int64_t d = 0; d < dst[3]; d++, idx++) {
                    int64_t di[4] = {a, b, cc, d}, off = 0;
                    for (int i = 0; i < 4; i++)
                        off += di[i] * sstride[perm[i]];
                    memcpy(buf + idx * (int64_t)es, sd + off * (int64_t)es, es);
                }
    char nm[300];
    ks__fmt(nm, sizeof(nm), "%s/%s", t->name, suffix);
    ks_dtype dt = t->dtype;
    ks_status st = track_const_bytes(c, (uint64_t)n * es, nm);
    if (!st) st = new_tensor(c, nm, dt, 4, dst, out);
    if (!st) {
        st = ks__graph_set_const(c->g, *out, buf, (size_t)n * es, false);
        if (!st) return KS_STATUS_OK;
    }
    ks__free(&c->g->alloc, buf);
    return st ? st : KS_STATUS_INTERNAL;
}

static ks_status op_conv(imp *c, uint32_t ir_op) {
    int32_t ins[3];
    ks_status st = in_ids(c, 3, 2, ins);
    if (st) return st;
    int32_t x = ins[0], w = ins[1], b = ins[2];
    if (!rank_known(c, w) || t_rank(c, w) != 4)
        return node_fail(c, KS_STATUS_UNSUPPORTED,
                         "only 2-D convolutions (4-D weights) are supported");
    int64_t strides[2], dil[2], pads[4];
    int32_t mode;
    st = read_pads_strides(c, strides, dil, pads, &mode);
    if (st) return st;
    int64_t group = attr_int(c, "group", 1);
    if (group < 1 || group > 65536)
        return node_fail(c, KS_STATUS_INVALID_MODEL, "invalid group %lld", (long long)group);
    int32_t wt;
    if (ir_op == KS_OP_CONV2D) {
        static const int32_t oihw_to_ohwi[4] = {0, 2, 3, 1};
        if (is_const(c, w))
            st = permute_const4(c, w, oihw_to_ohwi, "ohwi", &wt);
        else
            st = emit_transpose(c, w, oihw_to_ohwi, 4, "w_ohwi", &wt);
    } else {
        if (group != 1)
            return node_fail(c, KS_STATUS_UNSUPPORTED, "grouped ConvTranspose (group %lld)",
                             (long long)group);
        if (dil[0] != 1 || dil[1] != 1)
            return node_fail(c, KS_STATUS_UNSUPPORTED, "dilated ConvTranspose");
        if (find_attr(c, "output_shape"))
            return node_fail(c, KS_STATUS_UNSUPPORTED, "ConvTranspose output_shape attribute");
        static const int32_t iohw_to_ohwi[4] = {1, 2, 3, 0};
        if (is_const(c, w))
            st = permute_const4(c, w, iohw_to_ohwi, "ohwi", &wt);
        else
            st = emit_transpose(c, w, iohw_to_ohwi, 4, "w_ohwi", &wt);
    }
    if (st) return st;
    int32_t extra[2] = {wt, b};
    ks__node *n;
    st = emit_spatial(c, ir_op, x, b >= 0 ? 2 : 1, extra, &n);
    if (st) return st;
    n->ip[0] = (int32_t)strides[0];
    n->ip[1] = (int32_t)strides[1];
    if (ir_op == KS_OP_CONV2D) {
        n->ip[2] = (int32_t)dil[0];
        n->ip[3] = (int32_t)dil[1];
        n->ip[4] = (int32_t)pads[0];
        n->ip[5] = (int32_t)pads[1];
        n->ip[6] = (int32_t)pads[2];
        n->ip[7] = (int32_t)pads[3];
        n->ip[8] = mode;
        n->ip[9] = (int32_t)group;
    } else {
        int64_t op[2] = {0, 0}, cnt;
        st = attr_ints(c, "output_padding", op, 2, &cnt);
        if (st) return st;
        for (int i = 0; i < 4; i++)
            n->ip[2 + i] = (int32_t)pads[i];
        n->ip[6] = mode;
        n->ip[8] = clamp_i32(op[0]);
        n->ip[9] = clamp_i32(op[1]);
    }
    return KS_STATUS_OK;
}

static ks_status op_pool(imp *c, uint32_t kind) {
    /* kind: 0 max, 1 avg, 2 global avg, 3 global max */
    int32_t x;
    ks_status st = in_id(c, 0, 1, &x);
    if (st) return st;
    if (c->node.num_outputs > 1 && c->node.outputs[1].size_bytes)
        return node_fail(c, KS_STATUS_UNSUPPORTED, "MaxPool Indices output");
    int64_t ks[2] = {0, 0}, strides[2], dil[2], pads[4], cnt = 2;
    int32_t mode = KS_PAD_EXPLICIT;
    if (kind < 2) {
        st = attr_ints(c, "kernel_shape", ks, 2, &cnt);
        if (st) return st;
        if (cnt != 2) return node_fail(c, KS_STATUS_UNSUPPORTED, "only 2-D pooling is supported");
        if (ks[0] < 1 || ks[1] < 1 || ks[0] > 65536 || ks[1] > 65536)
            return node_fail(c, KS_STATUS_INVALID_MODEL, "invalid kernel_shape %lldx%lld",
                             (long long)ks[0], (long long)ks[1]);
        st = read_pads_strides(c, strides, dil, pads, &mode);
        if (st) return st;
        if (dil[0] != 1 || dil[1] != 1)
            return node_fail(c, KS_STATUS_UNSUPPORTED, "dilated pooling");
        if (attr_int(c, "storage_order", 0) != 0)
            return node_fail(c, KS_STATUS_UNSUPPORTED, "storage_order 1");
    } else {
        strides[0] = strides[1] = 1;
        pads[0] = pads[1] = pads[2] = pads[3] = 0;
    }
    ks__node *n;
    st = emit_spatial(c, KS_OP_POOL2D, x, 0, NULL, &n);
    if (st) return st;
    n->ip[0] = (int32_t)ks[0];
    n->ip[1] = (int32_t)ks[1];
    n->ip[2] = (int32_t)strides[0];
    n->ip[3] = (int32_t)strides[1];
    for (int i = 0; i < 4; i++)
        n->ip[4 + i] = (int32_t)pads[i];
    n->ip[8] = mode;
    n->ip[9] = (kind == 1 || kind == 2) ? 1 : 0;
    n->ip[10] = kind == 1 ? (int32_t)(attr_int(c, "count_include_pad", 0) != 0) : 0;
    n->ip[12] = kind < 2 ? (int32_t)(attr_int(c, "ceil_mode", 0) != 0) : 0;
    return KS_STATUS_OK;
}

/* Makes a [C, 1, ..., 1] constant (rank r-1 trailing ones) for NCHW per-channel broadcasting. */
static ks_status channel_const(imp *c, const float *vals, int64_t ch, int32_t rank,
                               const char *suffix, int32_t *id) {
    int64_t d[KS_MAX_RANK];
    int32_t r = rank > 1 ? rank - 1 : 1;
    d[0] = ch;
    for (int32_t i = 1; i < r; i++)
        d[i] = 1;
    return tmp_const(c, suffix, KS_DTYPE_F32, r, d, vals, id);
}

static ks_status op_batchnorm(imp *c, uint32_t ir_op) {
    (void)ir_op;
    int32_t xp[5]; /* x, scale, B, mean, var */
    ks_status st = in_ids(c, 5, 5, xp);
    if (st) return st;
    int32_t x = xp[0];
    const int32_t *p = &xp[1];
    for (uint32_t k = 1; k < c->node.num_outputs; k++)
        if (c->node.outputs[k].size_bytes)
            return node_fail(c, KS_STATUS_UNSUPPORTED, "training-mode outputs");
    static const char *names[4] = {"scale", "B", "mean", "var"};
    int64_t ch = -1;
    float *v[4] = {NULL, NULL, NULL, NULL};
    float *a = NULL, *bb = NULL;
    for (int i = 0; i < 4; i++) {
        if (!is_const(c, p[i])) {
            st = node_fail(c, KS_STATUS_UNSUPPORTED, "%s must be a constant", names[i]);
            goto done;
        }
        const ks__tensor *t = &c->g->tensors[p[i]];
        int64_t n = ks__numel(t->rank, t->dims);
        if (n < 1 || n > (1 << 24) || (ch >= 0 && n != ch)) {
            st = node_fail(c, KS_STATUS_INVALID_MODEL, "%s has %lld values, expected %lld",
                           names[i], (long long)n, (long long)ch);
            goto done;
        }
        ch = n;
        v[i] = ks__alloc(&c->g->alloc, (size_t)n * sizeof(float));
        if (!v[i]) {
            st = fail(c, KS_STATUS_OUT_OF_MEMORY, "out of memory");
            goto done;
        }
        int64_t cnt;
        st = const_floats(c, p[i], names[i], v[i], n, &cnt);
        if (st) goto done;
    }
    a = ks__alloc(&c->g->alloc, (size_t)ch * sizeof(float));
    bb = ks__alloc(&c->g->alloc, (size_t)ch * sizeof(float));
    if (!a || !bb) {
        st = fail(c, KS_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    float eps = attr_float(c, "epsilon", 1e-5f);
    for (int64_t i = 0; i < ch; i++) {
        /* y = (x - mean) / sqrt(var + eps) * scale + B = x * a + b */
        double s = (double)v[0][i] / sqrt((double)v[3][i] + (double)eps);
        a[i] = (float)s;
        bb[i] = (float)((double)v[1][i] - (double)v[2][i] * s);
    }
    int32_t rank = rank_known(c, x) ? t_rank(c, x) : 4;
    if (rank < 2) rank = 2;
    int32_t ca, cb, mid, y;
    st = channel_const(c, a, ch, rank, "bn_scale", &ca);
    if (!st) st = channel_const(c, bb, ch, rank, "bn_shift", &cb);
    if (!st) st = tmp_tensor(c, "bn_mul", dtype_of(c, x), rank, NULL, &mid);
    if (st) goto done;
    int32_t ins[2] = {x, ca};
    st = emit(c, KS_OP_MUL, 2, ins, 1, &mid, NULL);
    if (!st) st = out_tensor(c, 0, dtype_of(c, x), rank, NULL, &y);
    if (st) goto done;
    ins[0] = mid;
    ins[1] = cb;
    st = emit(c, KS_OP_ADD, 2, ins, 1, &y, NULL);
done:
    for (int i = 0; i < 4; i++)
        ks__free(&c->g->alloc, v[i]);
    ks__free(&c->g->alloc, a);
    ks__free(&c->g->alloc, bb);
    return st;
}

static ks_status op_resize(imp *c, uint32_t is_upsample) {
    int32_t x, scales = -1, sizes = -1;
    ks_status st = in_id(c, 0, 1, &x);
    if (st) return st;
    static const str_choice modes[] = {{"nearest", 0}, {"linear", 1}, {"bilinear", 1}};
    static const str_choice coords[] = {
        {"half_pixel", KS_RESIZE_HALF_PIXEL},
        {"pytorch_half_pixel", KS_RESIZE_PYTORCH_HALF_PIXEL},
        {"align_corners", KS_RESIZE_ALIGN_CORNERS},
        {"asymmetric", KS_RESIZE_ASYMMETRIC},
        {"tf_half_pixel_for_nearest", KS_RESIZE_TF_HALF_PIXEL_FOR_NN}};
    static const str_choice roundings[] = {
        {"round_prefer_floor", 0}, {"round_prefer_ceil", 1}, {"floor", 2}, {"ceil", 3}};
    int32_t ip_mode;
    st = attr_choice(c, "mode", "nearest", 32, modes, NUM_CHOICES(modes), KS_STATUS_UNSUPPORTED,
                     "mode", &ip_mode);
    if (st) return st;
    int32_t ip_coord = KS_RESIZE_ASYMMETRIC, ip_round = 2; /* Upsample / Resize-10: floor */
    if (!is_upsample && c->opset >= 11) {
        st = attr_choice(c, "coordinate_transformation_mode", "half_pixel", 40, coords,
                         NUM_CHOICES(coords), KS_STATUS_UNSUPPORTED,
                         "coordinate_transformation_mode", &ip_coord);
        if (!st)
            st = attr_choice(c, "nearest_mode", "round_prefer_floor", 40, roundings,
                             NUM_CHOICES(roundings), KS_STATUS_UNSUPPORTED, "nearest_mode",
                             &ip_round);
        if (st) return st;
        if (attr_int(c, "exclude_outside", 0) != 0)
            return node_fail(c, KS_STATUS_UNSUPPORTED, "exclude_outside");
        if (attr_int(c, "antialias", 0) != 0)
            return node_fail(c, KS_STATUS_UNSUPPORTED, "antialias");
        if (find_attr(c, "axes")) return node_fail(c, KS_STATUS_UNSUPPORTED, "axes attribute");
        st = in_id(c, 2, 0, &scales);
        if (!st) st = in_id(c, 3, 0, &sizes);
    } else if (c->opset >= 9 || !is_upsample) {
        st = in_id(c, 1, 1, &scales);
    }
    if (st) return st;
    float sc[4] = {1, 1, 1, 1};
    int64_t cnt = -1;
    if (scales >= 0) {
        const ks__tensor *t = &c->g->tensors[scales];
        if (is_const(c, scales) && ks__numel(t->rank, t->dims) == 0) scales = -1;
    }
    if (sizes >= 0) {
        const ks__tensor *t = &c->g->tensors[sizes];
        if (is_const(c, sizes) && ks__numel(t->rank, t->dims) == 0) sizes = -1;
    }
    if (scales >= 0) {
        st = const_floats(c, scales, "scales", sc, 4, &cnt);
        if (st) return st;
    } else if (is_upsample && c->opset < 9) {
        st = attr_floats(c, "scales", sc, 4, &cnt);
        if (st) return st;
    }
    if (cnt >= 0 && cnt != 4)
        return node_fail(c, KS_STATUS_UNSUPPORTED, "only 4-D resize is supported");
    if (cnt == 4 && (sc[0] != 1.0f || sc[1] != 1.0f))
        return node_fail(c, KS_STATUS_UNSUPPORTED, "scaling of N or C (scales %g, %g)",
                         (double)sc[0], (double)sc[1]);
    if (cnt == 4 && (!(sc[2] > 0.0f) || !(sc[3] > 0.0f) || sc[2] > 65536.0f || sc[3] > 65536.0f))
        return node_fail(c, KS_STATUS_INVALID_MODEL, "invalid scales %g, %g", (double)sc[2],
                         (double)sc[3]);
    int64_t sz[4] = {0, 0, 0, 0};
    int32_t size_in = -1;
    if (sizes >= 0 && is_const(c, sizes)) {
        st = const_ints(c, sizes, "sizes", sz, 4, &cnt);
        if (st) return st;
        if (cnt != 4) return node_fail(c, KS_STATUS_UNSUPPORTED, "only 4-D resize is supported");
        if (sz[2] < 1 || sz[3] < 1 || sz[2] > ONNX_MAX_DIM || sz[3] > ONNX_MAX_DIM)
            return node_fail(c, KS_STATUS_INVALID_MODEL, "invalid sizes %lld x %lld",
                             (long long)sz[2], (long long)sz[3]);
    } else if (sizes >= 0) {
        /* runtime sizes [N,C,H,W]: the IR wants [H,W] */
        int64_t s0 = 2, e0 = 4;
        int32_t st_id, en_id, hw;
        st = tmp_const_i64(c, "hw_start", &s0, 1, &st_id);
        if (!st) st = tmp_const_i64(c, "hw_end", &e0, 1, &en_id);
        int64_t two = 2;
        if (!st) st = tmp_tensor(c, "hw_sizes", dtype_of(c, sizes), 1, &two, &hw);
        if (st) return st;
        int32_t ins[3] = {sizes, st_id, en_id};
        st = emit(c, KS_OP_SLICE, 3, ins, 1, &hw, NULL);
        if (st) return st;
        size_in = hw;
    } else if (scales < 0 && !(is_upsample && c->opset < 9)) {
        return node_fail(c, KS_STATUS_INVALID_MODEL, "neither scales nor sizes given");
    }
    ks__node *n;
    int32_t extra[1] = {size_in};
    st = emit_spatial(c, KS_OP_RESIZE, x, size_in >= 0 ? 1 : 0, extra, &n);
    if (st) return st;
    n->ip[0] = ip_mode;
    n->ip[1] = ip_coord;
    n->ip[2] = ip_round;
    n->ip[3] = (int32_t)sz[2];
    n->ip[4] = (int32_t)sz[3];
    n->fp[0] = sc[2];
    n->fp[1] = sc[3];
    return KS_STATUS_OK;
}

static ks_status op_depth_space(imp *c, uint32_t ir_op) {
    int32_t x;
    ks_status st = in_id(c, 0, 1, &x);
    if (st) return st;
    int64_t bs = attr_int(c, "blocksize", 0);
    if (bs < 1 || bs > 4096)
        return node_fail(c, KS_STATUS_INVALID_MODEL, "invalid blocksize %lld", (long long)bs);
    ks__node *n;
    st = emit_spatial(c, ir_op, x, 0, NULL, &n);
    if (st) return st;
    n->ip[0] = (int32_t)bs;
    if (ir_op == KS_OP_DEPTH_TO_SPACE) n->ip[1] = attr_str_is(c, "mode", "DCR", "CRD") ? 1 : 0;
    return KS_STATUS_OK;
}

static ks_status op_concat(imp *c, uint32_t ir_op) {
    (void)ir_op;
    uint32_t n_in = c->node.num_inputs;
    if (n_in < 1 || n_in > 64)
        return node_fail(c, KS_STATUS_UNSUPPORTED, "%u inputs (1..64 supported)", n_in);
    int32_t ins[64];
    for (uint32_t i = 0; i < n_in; i++) {
        ks_status st = in_id(c, i, 1, &ins[i]);
        if (st) return st;
    }
    int64_t axis = attr_int(c, "axis", c->opset < 11 ? 1 : INT64_MIN);
    if (axis == INT64_MIN) return node_fail(c, KS_STATUS_INVALID_MODEL, "missing axis");
    int32_t rank = known_rank(c, ins[0]);
    ks__node *n;
    ks_status st = check_axis(c, axis, rank);
    if (!st) st = emit_out(c, KS_OP_CONCAT, n_in, ins, dtype_of(c, ins[0]), rank, NULL, &n);
    if (st) return st;
    n->ip[0] = (int32_t)axis;
    return KS_STATUS_OK;
}

static ks_status op_reshape(imp *c, uint32_t ir_op) {
    (void)ir_op;
    int32_t ins[2];
    ks_status st = in_ids(c, 2, 2, ins);
    if (st) return st;
    const ks__tensor *ts = &c->g->tensors[ins[1]];
    int32_t rank = -1;
    if (rank_known(c, ins[1]) && ts->rank == 1 && ts->dims[0] >= 0 && ts->dims[0] <= KS_MAX_RANK)
        rank = (int32_t)ts->dims[0];
    if (ts->dtype != KS_DTYPE_I64 && ts->dtype != KS_DTYPE_I32)
        return node_fail(c, KS_STATUS_INVALID_MODEL, "shape must be int64");
    ks__node *n;
    st = emit_out(c, KS_OP_RESHAPE, 2, ins, dtype_of(c, ins[0]), rank, NULL, &n);
    if (st) return st;
    n->ip[9] = (int32_t)(attr_int(c, "allowzero", 0) != 0);
    return KS_STATUS_OK;
}

/* out = RESHAPE(x) with ip dims (0 copies the input dim, -1 inferred). */
static ks_status emit_reshape_ip(imp *c, int32_t x, const int32_t *dims, int32_t rank, int32_t y) {
    ks__node *n;
    ks_status st = emit(c, KS_OP_RESHAPE, 1, &x, 1, &y, &n);
    if (st) return st;
    n->ip[0] = rank;
    for (int32_t i = 0; i < rank; i++)
        n->ip[1 + i] = dims[i];
    return KS_STATUS_OK;
}

static ks_status op_flatten(imp *c, uint32_t ir_op) {
    (void)ir_op;
    int32_t x, y;
    ks_status st = in_id(c, 0, 1, &x);
    if (st) return st;
    int64_t axis = attr_int(c, "axis", 1);
    const ks__tensor *t = &c->g->tensors[x];
    int32_t rank = rank_known(c, x) ? t->rank : -1;
    if (axis < 0 && rank >= 0) axis += rank;
    int32_t dims[2];
    if (axis == 0)
        dims[0] = 1, dims[1] = -1;
    else if (axis == 1)
        dims[0] = 0, dims[1] = -1;
    else if (rank >= 0 && axis > 1 && axis <= rank) {
        int64_t lead = ks__numel((int32_t)axis, t->dims);
        if (lead < 0 || lead > INT32_MAX)
            return node_fail(c, KS_STATUS_UNSUPPORTED, "Flatten axis %lld over dynamic dims",
                             (long long)axis);
        dims[0] = (int32_t)lead;
        dims[1] = -1;
    } else {
        return node_fail(c, KS_STATUS_UNSUPPORTED, "Flatten axis %lld", (long long)axis);
    }
    st = out_tensor(c, 0, t->dtype, 2, NULL, &y);
    return st ? st : emit_reshape_ip(c, x, dims, 2, y);
}

static ks_status op_transpose(imp *c, uint32_t ir_op) {
    (void)ir_op;
    int32_t x;
    ks_status st = in_id(c, 0, 1, &x);
    if (st) return st;
    int64_t perm[KS_MAX_RANK], cnt;
    st = attr_ints(c, "perm", perm, KS_MAX_RANK, &cnt);
    if (st) return st;
    int32_t rank = known_rank(c, x);
    if (cnt < 0) {
        if (rank < 0)
            return node_fail(c, KS_STATUS_UNSUPPORTED,
                             "Transpose without perm on an input of unknown rank");
        cnt = rank;
        for (int32_t i = 0; i < rank; i++)
            perm[i] = rank - 1 - i;
    }
    if (rank >= 0 && cnt != rank)
        return node_fail(c, KS_STATUS_INVALID_MODEL, "perm has %lld entries for a rank-%d input",
                         (long long)cnt, rank);
    int32_t p[KS_MAX_RANK];
    uint32_t seen = 0;
    for (int64_t i = 0; i < cnt; i++) {
        if (perm[i] < 0 || perm[i] >= cnt || (seen & (1u << perm[i])))
            return node_fail(c, KS_STATUS_INVALID_MODEL,
                             "perm is not a permutation (entry %lld = %lld)", (long long)i,
                             (long long)perm[i]);
        seen |= 1u << perm[i];
        p[i] = (int32_t)perm[i];
    }
    int64_t d[KS_MAX_RANK];
    const ks__tensor *t = &c->g->tensors[x];
    for (int64_t i = 0; i < cnt; i++)
        d[i] = rank >= 0 ? t->dims[p[i]] : -1;
    ks__node *n;
    st = emit_out(c, KS_OP_TRANSPOSE, 1, &x, t->dtype, (int32_t)cnt, d, &n);
    if (st) return st;
    n->ip[0] = (int32_t)cnt;
    for (int64_t i = 0; i < cnt; i++)
        n->ip[1 + i] = p[i];
    return KS_STATUS_OK;
}

static ks_status op_slice(imp *c, uint32_t ir_op) {
    (void)ir_op;
    int32_t ins[5] = {-1, -1, -1, -1, -1};
    ks_status st = in_id(c, 0, 1, &ins[0]);
    if (st) return st;
    uint32_t nin = 3;
    if (c->opset < 10) {
        int64_t v[KS_MAX_RANK], cnt;
        static const char *names[3] = {"starts", "ends", "axes"};
        for (int i = 0; i < 3; i++) {
            st = attr_ints(c, names[i], v, KS_MAX_RANK, &cnt);
            if (st) return st;
            if (cnt < 0) {
                if (i < 2) return node_fail(c, KS_STATUS_INVALID_MODEL, "missing %s", names[i]);
                continue;
            }
            st = tmp_const_i64(c, names[i], v, cnt, &ins[1 + i]);
            if (st) return st;
            if (i == 2) nin = 4;
        }
    } else {
        st = in_id(c, 1, 1, &ins[1]);
        if (!st) st = in_id(c, 2, 1, &ins[2]);
        if (!st) st = in_id(c, 3, 0, &ins[3]);
        if (!st) st = in_id(c, 4, 0, &ins[4]);
        if (st) return st;
        nin = ins[4] >= 0 ? 5 : (ins[3] >= 0 ? 4 : 3);
    }
    return emit_out(c, KS_OP_SLICE, nin, ins, dtype_of(c, ins[0]), known_rank(c, ins[0]), NULL,
                    NULL);
}

static ks_status op_split(imp *c, uint32_t ir_op) {
    (void)ir_op;
    int32_t x, sizes = -1;
    ks_status st = in_id(c, 0, 1, &x);
    if (st) return st;
    uint32_t nout = c->node.num_outputs;
    if (nout < 1 || nout > 64)
        return node_fail(c, KS_STATUS_UNSUPPORTED, "%u outputs (1..64 supported)", nout);
    if (c->opset < 13) {
        int64_t v[64], cnt;
        st = attr_ints(c, "split", v, 64, &cnt);
        if (st) return st;
        if (cnt >= 0) {
            if (cnt != nout)
                return node_fail(c, KS_STATUS_INVALID_MODEL,
                                 "split has %lld entries for %u outputs", (long long)cnt, nout);
            st = tmp_const_i64(c, "split", v, cnt, &sizes);
        }
    } else {
        st = in_id(c, 1, 0, &sizes);
    }
    if (st) return st;
    int64_t axis = attr_int(c, "axis", 0);
    int32_t rank = known_rank(c, x);
    if ((st = check_axis(c, axis, rank))) return st;
    int32_t outs[64];
    for (uint32_t k = 0; k < nout; k++) {
        st = out_tensor(c, k, dtype_of(c, x), rank, NULL, &outs[k]);
        if (st) return st;
    }
    int32_t ins[2] = {x, sizes};
    ks__node *n;
    st = emit(c, KS_OP_SPLIT, sizes >= 0 ? 2 : 1, ins, nout, outs, &n);
    if (st) return st;
    n->ip[0] = (int32_t)axis;
    return KS_STATUS_OK;
}

static ks_status op_softmax(imp *c, uint32_t ir_op) {
    int32_t x, y;
    ks_status st = in_id(c, 0, 1, &x);
    if (st) return st;
    int64_t axis = attr_int(c, "axis", c->opset < 13 ? 1 : -1);
    int32_t rank = known_rank(c, x);
    if ((st = check_axis(c, axis, rank))) return st;
    if (rank >= 0 && axis < 0) axis += rank;
    ks_dtype dt = dtype_of(c, x);
    int last = axis == -1 || (rank >= 0 && axis == rank - 1);
    if (c->opset >= 13 || last) {
        ks__node *n;
        st = emit_out(c, ir_op, 1, &x, dt, rank, NULL, &n);
        if (!st) n->ip[0] = (int32_t)axis;
        return st;
    }
    if (axis < 0)
        return node_fail(c, KS_STATUS_UNSUPPORTED, "negative axis on an input of unknown rank");
    /* opset < 13: softmax over the flattened dims [axis, rank). Keeping the leading dims separate
     * (reshape to [d0..d(axis-1), -1]) gives the same rows; the original shape comes back
     * through SHAPE(x) so dynamic dims stay dynamic. */
    int32_t dims[KS_MAX_RANK];
    for (int64_t i = 0; i < axis; i++)
        dims[i] = 0;
    dims[axis] = -1;
    int32_t flat, sm, shp;
    st = tmp_tensor(c, "sm_flat", dt, (int32_t)axis + 1, NULL, &flat);
    if (!st) st = emit_reshape_ip(c, x, dims, (int32_t)axis + 1, flat);
    if (!st) st = tmp_tensor(c, "sm", dt, (int32_t)axis + 1, NULL, &sm);
    if (st) return st;
    ks__node *n;
    st = emit(c, ir_op, 1, &flat, 1, &sm, &n);
    if (st) return st;
    n->ip[0] = -1;
    int64_t r1 = rank;
    st = tmp_tensor(c, "sm_shape", KS_DTYPE_I64, 1, &r1, &shp);
    if (!st) st = emit(c, KS_OP_SHAPE, 1, &x, 1, &shp, NULL);
    if (!st) st = out_tensor(c, 0, dt, rank, NULL, &y);
    if (st) return st;
    int32_t ins[2] = {sm, shp};
    return emit(c, KS_OP_RESHAPE, 2, ins, 1, &y, NULL);
}

static ks_status op_squeeze_unsqueeze(imp *c, uint32_t ir_op) {
    int32_t x, ax_in = -1;
    ks_status st = in_id(c, 0, 1, &x);
    if (st) return st;
    int64_t axes[KS_MAX_RANK], cnt = -1;
    if (c->opset < 13) {
        st = attr_ints(c, "axes", axes, KS_MAX_RANK, &cnt);
    } else {
        st = in_id(c, 1, 0, &ax_in);
        if (!st && ax_in >= 0) st = const_ints(c, ax_in, "axes", axes, KS_MAX_RANK, &cnt);
    }
    if (st) return st;
    if (ir_op == KS_OP_UNSQUEEZE && cnt < 1)
        return node_fail(c, KS_STATUS_INVALID_MODEL, "missing axes");
    int32_t rank = known_rank(c, x);
    int32_t out_rank = -1;
    if (rank >= 0 && cnt >= 0)
        out_rank = ir_op == KS_OP_UNSQUEEZE ? rank + (int32_t)cnt : rank - (int32_t)cnt;
    if (out_rank > KS_MAX_RANK || (rank >= 0 && out_rank < -1))
        return node_fail(c, KS_STATUS_INVALID_MODEL, "%lld axes for a rank-%d input",
                         (long long)cnt, rank);
    int32_t ref_rank = ir_op == KS_OP_UNSQUEEZE ? out_rank : rank;
    for (int64_t i = 0; i < cnt; i++) {
        if (axes[i] < -KS_MAX_RANK || axes[i] >= KS_MAX_RANK)
            return node_fail(c, KS_STATUS_INVALID_MODEL, "axis %lld out of range",
                             (long long)axes[i]);
        if (axes[i] < 0 && ref_rank >= 0) axes[i] += ref_rank;
        if (ref_rank >= 0 && (axes[i] < 0 || axes[i] >= ref_rank))
            return node_fail(c, KS_STATUS_INVALID_MODEL, "axis %lld out of range",
                             (long long)axes[i]);
    }
    ks__node *n;
    st = emit_out(c, ir_op, 1, &x, dtype_of(c, x), out_rank, NULL, &n);
    if (st) return st;
    n->ip[0] = cnt < 0 ? 0 : (int32_t)cnt;
    for (int64_t i = 0; i < cnt; i++)
        n->ip[1 + i] = (int32_t)axes[i];
    return KS_STATUS_OK;
}

static ks_status op_shape(imp *c, uint32_t ir_op) {
    (void)ir_op;
    int32_t x;
    ks_status st = in_id(c, 0, 1, &x);
    if (st) return st;
    int32_t rank = known_rank(c, x);
    int64_t r1 = rank;
    const attr *as = find_attr(c, "start"), *ae = find_attr(c, "end");
    if (!as && !ae)
        return emit_out(c, KS_OP_SHAPE, 1, &x, KS_DTYPE_I64, 1, rank >= 0 ? &r1 : NULL, NULL);
    int32_t full, s_id, e_id;
    int64_t s = attr_int(c, "start", 0), e = attr_int(c, "end", INT64_MAX);
    st = tmp_tensor(c, "shape", KS_DTYPE_I64, 1, rank >= 0 ? &r1 : NULL, &full);
    if (!st) st = emit(c, KS_OP_SHAPE, 1, &x, 1, &full, NULL);
    if (!st) st = tmp_const_i64(c, "start", &s, 1, &s_id);
    if (!st) st = tmp_const_i64(c, "end", &e, 1, &e_id);
    if (st) return st;
    int32_t ins[3] = {full, s_id, e_id};
    return emit_out(c, KS_OP_SLICE, 3, ins, KS_DTYPE_I64, 1, NULL, NULL);
}

static ks_status op_gather(imp *c, uint32_t ir_op) {
    (void)ir_op;
    int32_t ins[2]; /* data, indices */
    ks_status st = in_ids(c, 2, 2, ins);
    if (st) return st;
    int32_t rank = -1;
    if (rank_known(c, ins[0]) && rank_known(c, ins[1]))
        rank = t_rank(c, ins[0]) + t_rank(c, ins[1]) - 1;
    if (rank > KS_MAX_RANK) return node_fail(c, KS_STATUS_UNSUPPORTED, "output rank %d", rank);
    ks__node *n;
    st = emit_out(c, KS_OP_GATHER, 2, ins, dtype_of(c, ins[0]), rank, NULL, &n);
    if (!st) n->ip[0] = clamp_i32(attr_int(c, "axis", 0));
    return st;
}

static ks_status op_constant(imp *c, uint32_t ir_op) {
    (void)ir_op;
    if (c->node.num_outputs != 1 || c->node.outputs[0].size_bytes == 0)
        return node_fail(c, KS_STATUS_INVALID_MODEL, "Constant needs one named output");
    ks__pb_span nm = c->node.outputs[0];
    if (map_get(&c->tensors, nm) >= 0)
        return node_fail(c, KS_STATUS_INVALID_MODEL, "output defined twice");
    char name[256];
    span_print(nm, name, sizeof(name));
    int32_t id = -1;
    ks_status st;
    const attr *a;
    if ((a = find_attr(c, "value")) != NULL && a->has_t) {
        st = parse_tensor(c, a->t, name, &id);
    } else if ((a = find_attr(c, "value_float")) != NULL) {
        float v = a->f;
        st = new_const(c, name, KS_DTYPE_F32, 0, NULL, &v, &id);
    } else if ((a = find_attr(c, "value_int")) != NULL) {
        int64_t v = a->i;
        st = new_const(c, name, KS_DTYPE_I64, 0, NULL, &v, &id);
    } else if (find_attr(c, "value_ints")) {
        int64_t v[1024], cnt;
        st = attr_ints(c, "value_ints", v, 1024, &cnt);
        if (!st) st = const_i64_1d(c, name, v, cnt, &id);
    } else if (find_attr(c, "value_floats")) {
        float v[1024];
        int64_t cnt;
        st = attr_floats(c, "value_floats", v, 1024, &cnt);
        int64_t d[1] = {cnt};
        if (!st) st = new_const(c, name, KS_DTYPE_F32, 1, d, v, &id);
    } else {
        return node_fail(c, KS_STATUS_UNSUPPORTED, "Constant without a supported value attribute");
    }
    if (st) return st;
    st = map_put(c, &c->tensors, nm, id);
    return st ? fail(c, st, "out of memory") : KS_STATUS_OK;
}

static ks_status op_cast(imp *c, uint32_t ir_op) {
    (void)ir_op;
    int32_t x;
    ks_status st = in_id(c, 0, 1, &x);
    if (st) return st;
    int64_t to = attr_int(c, "to", 0);
    ks_dtype dt = map_dtype(to);
    if (dt == KS_DTYPE_INVALID)
        return node_fail(c, KS_STATUS_UNSUPPORTED, "cast to type %lld", (long long)to);
    return emit_out(c, KS_OP_CAST, 1, &x, dt, known_rank(c, x), c->g->tensors[x].dims, NULL);
}

static ks_status op_pad(imp *c, uint32_t ir_op) {
    (void)ir_op;
    int32_t x, pads = -1, val = -1;
    ks_status st = in_id(c, 0, 1, &x);
    if (st) return st;
    static const str_choice modes[] = {{"constant", 0}, {"reflect", 1}, {"edge", 2}};
    int32_t ip_mode;
    st = attr_choice(c, "mode", "constant", 16, modes, NUM_CHOICES(modes), KS_STATUS_UNSUPPORTED,
                     "mode", &ip_mode);
    if (st) return st;
    float value = 0.0f;
    int64_t pv[2 * KS_MAX_RANK], cnt = -1;
    if (c->opset < 11) {
        st = attr_ints(c, "pads", pv, 2 * KS_MAX_RANK, &cnt);
        if (!st && cnt < 0) st = node_fail(c, KS_STATUS_INVALID_MODEL, "missing pads");
        value = attr_float(c, "value", 0.0f);
    } else {
        st = in_id(c, 1, 1, &pads);
        if (!st) st = in_id(c, 2, 0, &val);
        int32_t axes;
        if (!st) st = in_id(c, 3, 0, &axes);
        if (!st && axes >= 0) st = node_fail(c, KS_STATUS_UNSUPPORTED, "axes input");
        if (!st && is_const(c, pads)) st = const_ints(c, pads, "pads", pv, 2 * KS_MAX_RANK, &cnt);
        if (!st && val >= 0 && is_const(c, val)) {
            int64_t vc;
            st = const_floats(c, val, "constant_value", &value, 1, &vc);
            val = -1;
        }
    }
    if (st) return st;
    int32_t pads_ir;
    if (cnt >= 0) {
        if (cnt % 2)
            return node_fail(c, KS_STATUS_INVALID_MODEL, "pads has %lld entries", (long long)cnt);
        int64_t r = cnt / 2, p2[2 * KS_MAX_RANK];
        for (int64_t i = 0; i < r; i++) {
            p2[2 * i] = pv[i];
            p2[2 * i + 1] = pv[r + i];
        }
        int64_t d[2] = {r, 2};
        st = tmp_const(c, "pads", KS_DTYPE_I64, 2, d, p2, &pads_ir);
    } else {
        /* runtime pads [b0..bn, e0..en] -> [[b0,e0],...] */
        int32_t two_n, dims[2] = {2, -1};
        static const int32_t swap[2] = {1, 0};
        st = tmp_tensor(c, "pads_2n", dtype_of(c, pads), 2, NULL, &two_n);
        if (!st) st = emit_reshape_ip(c, pads, dims, 2, two_n);
        if (!st) st = emit_transpose(c, two_n, swap, 2, "pads_n2", &pads_ir);
    }
    if (st) return st;
    int32_t ins[3] = {x, pads_ir, val};
    ks__node *n;
    st = emit_out(c, KS_OP_PAD, val >= 0 ? 3 : 2, ins, dtype_of(c, x), known_rank(c, x), NULL, &n);
    if (st) return st;
    n->ip[0] = ip_mode;
    n->fp[0] = value;
    return KS_STATUS_OK;
}

static ks_status op_reduce(imp *c, uint32_t kind) {
    int32_t x, ax_in = -1;
    ks_status st = in_id(c, 0, 1, &x);
    if (st) return st;
    int64_t axes[KS_MAX_RANK], cnt = -1;
    st = attr_ints(c, "axes", axes, KS_MAX_RANK, &cnt);
    if (!st && cnt < 0) st = in_id(c, 1, 0, &ax_in);
    if (!st && ax_in >= 0) st = const_ints(c, ax_in, "axes", axes, KS_MAX_RANK, &cnt);
    if (st) return st;
    int64_t keep = attr_int(c, "keepdims", 1);
    if (cnt <= 0 && attr_int(c, "noop_with_empty_axes", 0)) return alias_output(c, x);
    int32_t rank = known_rank(c, x);
    int32_t out_rank = -1;
    if (rank >= 0) out_rank = keep ? rank : (cnt <= 0 ? 0 : rank - (int32_t)cnt);
    if (rank >= 0 && out_rank < 0) return node_fail(c, KS_STATUS_INVALID_MODEL, "too many axes");
    ks__node *n;
    st = emit_out(c, KS_OP_REDUCE, 1, &x, dtype_of(c, x), out_rank, NULL, &n);
    if (st) return st;
    n->ip[0] = (int32_t)kind;
    n->ip[1] = keep != 0;
    n->ip[2] = cnt < 0 ? 0 : (int32_t)cnt;
    for (int64_t i = 0; i < cnt; i++)
        n->ip[3 + i] = clamp_i32(axes[i]);
    return KS_STATUS_OK;
}

/* Transposes a 2-D constant [r, c] -> [c, r] (F32/F16). */
static ks_status transpose_const2(imp *c, int32_t w, int32_t *out) {
    const ks__tensor *t = &c->g->tensors[w];
    int64_t r = t->dims[0], cols = t->dims[1];
    size_t es = ks_dtype_size(t->dtype);
    int64_t n = r * cols;
    uint8_t *buf = ks__alloc_aligned(&c->g->alloc, (size_t)n * es + 1, 64);
    if (!buf) return fail(c, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    const uint8_t *s = t->data;
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < cols; j++)
            memcpy(buf + (j * r + i) * (int64_t)es, s + (i * cols + j) * (int64_t)es, es);
    char nm[300];
    ks__fmt(nm, sizeof(nm), "%s/T", t->name);
    int64_t d[2] = {cols, r};
    ks_dtype dt = t->dtype;
    ks_status st = track_const_bytes(c, (uint64_t)n * es, nm);
    if (!st) st = new_tensor(c, nm, dt, 2, d, out);
    if (!st) st = ks__graph_set_const(c->g, *out, buf, (size_t)n * es, false);
    if (st) ks__free(&c->g->alloc, buf);
    return st;
}

static int is_float_2d_const(const imp *c, int32_t id) {
    if (!is_const(c, id)) return 0;
    const ks__tensor *t = &c->g->tensors[id];
    return t->rank == 2 && (t->dtype == KS_DTYPE_F32 || t->dtype == KS_DTYPE_F16) &&
           t->quant.count == 0;
}

static ks_status op_matmul(imp *c, uint32_t ir_op) {
    (void)ir_op;
    int32_t ins[2];
    ks_status st = in_ids(c, 2, 2, ins);
    if (st) return st;
    int32_t a = ins[0], b = ins[1], rank = -1;
    if (rank_known(c, a) && rank_known(c, b)) {
        int32_t ra = t_rank(c, a), rb = t_rank(c, b);
        rank = ra > rb ? ra : rb;
        if (ra == 1 || rb == 1) rank = (ra == 1 && rb == 1) ? 0 : rank - 1;
    }
    if (is_float_2d_const(c, b) && rank_known(c, a) && t_rank(c, a) >= 2 &&
        dtype_of(c, a) == KS_DTYPE_F32) {
        ks__node *n;
        st = transpose_const2(c, b, &ins[1]);
        if (!st) st = emit_out(c, KS_OP_FULLY_CONNECTED, 2, ins, dtype_of(c, a), rank, NULL, &n);
        if (!st) n->ip[1] = 1;
        return st;
    }
    return emit_out(c, KS_OP_MATMUL, 2, ins, dtype_of(c, a), rank, NULL, NULL);
}

static ks_status op_gemm(imp *c, uint32_t ir_op) {
    (void)ir_op;
    int32_t abc[3];
    ks_status st = in_ids(c, 3, 2, abc);
    if (st) return st;
    int32_t a = abc[0], b = abc[1], bias = abc[2];
    float alpha = attr_float(c, "alpha", 1.0f), beta = attr_float(c, "beta", 1.0f);
    int64_t ta = attr_int(c, "transA", 0), tb = attr_int(c, "transB", 0);
    int bias_ok = bias < 0;
    if (bias >= 0 && is_const(c, bias) && beta == 1.0f && is_float_2d_const(c, b)) {
        const ks__tensor *tc = &c->g->tensors[bias];
        int64_t nb = ks__numel(tc->rank, tc->dims);
        int64_t o = c->g->tensors[b].dims[tb ? 0 : 1];
        bias_ok = tc->dtype == KS_DTYPE_F32 && nb == o &&
                  (tc->rank == 1 || (tc->rank == 2 && tc->dims[0] == 1));
    }
    if (!ta && alpha == 1.0f && is_float_2d_const(c, b) && bias_ok) {
        int32_t wt = b;
        if (!tb) st = transpose_const2(c, b, &wt);
        if (!st && bias >= 0 && c->g->tensors[bias].rank != 1) {
            const ks__tensor *tc = &c->g->tensors[bias];
            char nm[300];
            ks__fmt(nm, sizeof(nm), "%s/1d", tc->name);
            int64_t d[1] = {tc->dims[1]};
            int32_t nb;
            st = new_const(c, nm, KS_DTYPE_F32, 1, d, c->g->tensors[bias].data, &nb);
            bias = nb;
        }
        if (st) return st;
        int32_t ins[3] = {a, wt, bias};
        return emit_out(c, KS_OP_FULLY_CONNECTED, bias >= 0 ? 3 : 2, ins, dtype_of(c, a), 2, NULL,
                        NULL);
    }
    /* general form: y = alpha * op(A) op(B) + beta * C */
    int32_t mm, cur;
    int need_scale = alpha != 1.0f, need_bias = bias >= 0;
    if (!need_scale && !need_bias)
        st = out_tensor(c, 0, dtype_of(c, a), 2, NULL, &mm);
    else
        st = tmp_tensor(c, "mm", dtype_of(c, a), 2, NULL, &mm);
    if (st) return st;
    int32_t ins[2] = {a, b};
    ks__node *n;
    st = emit(c, KS_OP_MATMUL, 2, ins, 1, &mm, &n);
    if (st) return st;
    n->ip[0] = ta != 0;
    n->ip[1] = tb != 0;
    cur = mm;
    if (need_scale) {
        int32_t k, o;
        st = tmp_const(c, "alpha", KS_DTYPE_F32, 0, NULL, &alpha, &k);
        if (!st) {
            if (need_bias)
                st = tmp_tensor(c, "scaled", dtype_of(c, a), 2, NULL, &o);
            else
                st = out_tensor(c, 0, dtype_of(c, a), 2, NULL, &o);
        }
        if (st) return st;
        ins[0] = cur;
        ins[1] = k;
        st = emit(c, KS_OP_MUL, 2, ins, 1, &o, NULL);
        if (st) return st;
        cur = o;
    }
    if (need_bias) {
        int32_t cb = bias, o;
        if (beta != 1.0f) {
            int32_t k, scaled;
            st = tmp_const(c, "beta", KS_DTYPE_F32, 0, NULL, &beta, &k);
            if (!st) st = tmp_tensor(c, "beta_c", dtype_of(c, bias), -1, NULL, &scaled);
            if (st) return st;
            ins[0] = bias;
            ins[1] = k;
            st = emit(c, KS_OP_MUL, 2, ins, 1, &scaled, NULL);
            if (st) return st;
            cb = scaled;
        }
        st = out_tensor(c, 0, dtype_of(c, a), 2, NULL, &o);
        if (st) return st;
        ins[0] = cur;
        ins[1] = cb;
        st = emit(c, KS_OP_ADD, 2, ins, 1, &o, NULL);
    }
    return st;
}

static ks_status op_expand(imp *c, uint32_t ir_op) {
    (void)ir_op;
    int32_t ins[2];
    ks_status st = in_ids(c, 2, 2, ins);
    return st ? st : emit_out(c, KS_OP_EXPAND, 2, ins, dtype_of(c, ins[0]), -1, NULL, NULL);
}

static ks_status op_constant_of_shape(imp *c, uint32_t ir_op) {
    (void)ir_op;
    int32_t s, v;
    ks_status st = in_id(c, 0, 1, &s);
    if (st) return st;
    const attr *a = find_attr(c, "value");
    char nm[TMP_NAME_CAP];
    tmp_name(c, "value", nm);
    if (a && a->has_t) {
        st = parse_tensor(c, a->t, nm, &v);
        if (st) return st;
        const ks__tensor *t = &c->g->tensors[v];
        if (ks__numel(t->rank, t->dims) != 1)
            return node_fail(c, KS_STATUS_INVALID_MODEL, "value must hold one element");
        c->g->tensors[v].rank = 0;
    } else {
        float zero = 0.0f;
        st = new_const(c, nm, KS_DTYPE_F32, 0, NULL, &zero, &v);
        if (st) return st;
    }
    /* EXPAND of a scalar to `shape` is ConstantOfShape; it folds when the shape is constant. */
    int32_t ins[2] = {v, s};
    return emit_out(c, KS_OP_EXPAND, 2, ins, dtype_of(c, v), -1, NULL, NULL);
}

static ks_status op_argmax(imp *c, uint32_t ir_op) {
    int32_t x;
    ks_status st = in_id(c, 0, 1, &x);
    if (st) return st;
    if (attr_int(c, "select_last_index", 0))
        return node_fail(c, KS_STATUS_UNSUPPORTED, "select_last_index");
    int64_t keep = attr_int(c, "keepdims", 1);
    int32_t rank = rank_known(c, x) ? t_rank(c, x) - (keep ? 0 : 1) : -1;
    ks__node *n;
    st = emit_out(c, ir_op, 1, &x, KS_DTYPE_I64, rank, NULL, &n);
    if (st) return st;
    n->ip[0] = clamp_i32(attr_int(c, "axis", 0));
    n->ip[1] = keep != 0;
    return KS_STATUS_OK;
}

typedef struct op_entry {
    const char *name;
    op_fn fn;
    uint32_t arg;
} op_entry;

static const op_entry k_ops[] = {
    {"Conv", op_conv, KS_OP_CONV2D},
    {"ConvTranspose", op_conv, KS_OP_CONV2D_TRANSPOSE},
    {"BatchNormalization", op_batchnorm, 0},
    {"Relu", op_unary, KS_OP_RELU},
    {"LeakyRelu", op_unary, KS_OP_LEAKY_RELU},
    {"Sigmoid", op_unary, KS_OP_SIGMOID},
    {"Tanh", op_unary, KS_OP_TANH},
    {"Exp", op_unary, KS_OP_EXP},
    {"Sqrt", op_unary, KS_OP_SQRT},
    {"Abs", op_unary, KS_OP_ABS},
    {"Neg", op_unary, KS_OP_NEG},
    {"Floor", op_unary, KS_OP_FLOOR},
    {"Ceil", op_unary, KS_OP_CEIL},
    {"Log", op_unary, KS_OP_LOG},
    {"Elu", op_unary, KS_OP_ELU},
    {"HardSigmoid", op_unary, KS_OP_HARD_SIGMOID},
    {"HardSwish", op_unary, KS_OP_HARD_SWISH},
    {"Clip", op_clip, 0},
    {"PRelu", op_prelu, 0},
    {"Add", op_binary, KS_OP_ADD},
    {"Sub", op_binary, KS_OP_SUB},
    {"Mul", op_binary, KS_OP_MUL},
    {"Div", op_binary, KS_OP_DIV},
    {"Pow", op_binary, KS_OP_POW},
    {"Max", op_minmax, KS_OP_MAXIMUM},
    {"Min", op_minmax, KS_OP_MINIMUM},
    {"Equal", op_binary, KS_OP_EQUAL},
    {"Greater", op_binary, KS_OP_GREATER},
    {"Less", op_binary, KS_OP_LESS},
    {"GreaterOrEqual", op_binary, KS_OP_GREATER_EQUAL},
    {"LessOrEqual", op_binary, KS_OP_LESS_EQUAL},
    {"Where", op_where, 0},
    {"MaxPool", op_pool, 0},
    {"AveragePool", op_pool, 1},
    {"GlobalAveragePool", op_pool, 2},
    {"GlobalMaxPool", op_pool, 3},
    {"Resize", op_resize, 0},
    {"Upsample", op_resize, 1},
    {"DepthToSpace", op_depth_space, KS_OP_DEPTH_TO_SPACE},
    {"SpaceToDepth", op_depth_space, KS_OP_SPACE_TO_DEPTH},
    {"Concat", op_concat, 0},
    {"Reshape", op_reshape, 0},
    {"Flatten", op_flatten, 0},
    {"Transpose", op_transpose, 0},
    {"Slice", op_slice, 0},
    {"Split", op_split, 0},
    {"Softmax", op_softmax, KS_OP_SOFTMAX},
    {"LogSoftmax", op_softmax, KS_OP_LOG_SOFTMAX},
    {"Unsqueeze", op_squeeze_unsqueeze, KS_OP_UNSQUEEZE},
    {"Squeeze", op_squeeze_unsqueeze, KS_OP_SQUEEZE},
    {"Shape", op_shape, 0},
    {"Gather", op_gather, 0},
    {"Constant", op_constant, 0},
    {"Identity", op_identity, 0},
    {"Dropout", op_identity, 0},
    {"Cast", op_cast, 0},
    {"Pad", op_pad, 0},
    {"ReduceMean", op_reduce, 0},
    {"ReduceSum", op_reduce, 1},
    {"ReduceMax", op_reduce, 2},
    {"ReduceMin", op_reduce, 3},
    {"ReduceProd", op_reduce, 4},
    {"MatMul", op_matmul, 0},
    {"Gemm", op_gemm, 0},
    {"Expand", op_expand, 0},
    {"ConstantOfShape", op_constant_of_shape, 0},
    {"ArgMax", op_argmax, KS_OP_ARG_MAX},
    {"ArgMin", op_argmax, KS_OP_ARG_MIN},
};

static ks_status import_node(imp *c, ks__pb_span msg) {
    ks_status st = parse_node(c, msg);
    if (st) return st;
    const onode *n = &c->node;
    if (n->domain.size_bytes && !span_eq(n->domain, "ai.onnx"))
        return fail(c, KS_STATUS_UNSUPPORTED,
                    "op %s (node %u '%s') is not supported (domain '%.*s')", c->opname,
                    c->node_index, c->nodename,
                    (int)(n->domain.size_bytes > 64 ? 64 : n->domain.size_bytes),
                    (const char *)n->domain.ptr);
    for (size_t i = 0; i < sizeof(k_ops) / sizeof(k_ops[0]); i++) {
        if (!span_eq(n->op_type, k_ops[i].name)) continue;
        /* every supported op has at least one output; handlers rely on output 0 existing */
        if (n->num_outputs == 0)
            return node_fail(c, KS_STATUS_INVALID_MODEL, "node has no outputs");
        return k_ops[i].fn(c, k_ops[i].arg);
    }
    return fail(c, KS_STATUS_UNSUPPORTED, "op %s (node %u '%s') is not supported", c->opname,
                c->node_index, c->nodename);
}

/* ---------------------------------------------------------------- model */

/* Spans of repeated LEN field `number` inside msg; *out allocated (count may be 0). */
static ks_status collect(imp *c, ks__pb_span msg, uint32_t number, const char *what,
                         ks__pb_span **out, uint32_t *count_out) {
    ks__pb_reader r = ks__pb_reader_init(msg);
    ks__pb_field f;
    int rc;
    uint32_t n = 0;
    while ((rc = ks__pb_next(&r, &f)) > 0)
        if (f.number == number) {
            if (f.wire != KS_PB_LEN)
                return fail(c, KS_STATUS_INVALID_MODEL,
                            "%s: wire type %u instead of length-delimited", what, f.wire);
            n++;
        }
    if (rc < 0) return pb_fail(c, rc, what);
    *out = ks__alloc(&c->g->alloc, (size_t)(n ? n : 1) * sizeof(ks__pb_span));
    if (!*out) return fail(c, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    r = ks__pb_reader_init(msg);
    uint32_t i = 0;
    while (ks__pb_next(&r, &f) > 0)
        if (f.number == number) (*out)[i++] = f.span;
    *count_out = n;
    return KS_STATUS_OK;
}

/* Graph output whose tensor cannot carry the ONNX name itself gets a RESHAPE(x, SHAPE(x)) copy. */
static ks_status bind_output(imp *c, ks__pb_span vi, int32_t *out_ids, uint32_t k) {
    ks__pb_span nm;
    ks_dtype dt;
    int32_t rank;
    int64_t dims[KS_MAX_RANK];
    ks_status st = parse_value_info(c, vi, &nm, &dt, &rank, dims);
    if (st) return st;
    char pn[256];
    span_print(nm, pn, sizeof(pn));
    int32_t id = map_get(&c->tensors, nm);
    if (id < 0)
        return fail(c, KS_STATUS_INVALID_MODEL, "graph output '%s' is not produced by any node",
                    pn);
    const char *name = span_cstr(c, nm);
    if (!name) return fail(c, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    int needs_copy = is_const(c, id) || strcmp(c->g->tensors[id].name, name) != 0;
    for (uint32_t i = 0; i < c->g->num_inputs && !needs_copy; i++)
        if (c->g->inputs[i] == id) needs_copy = 1;
    for (uint32_t i = 0; i < k && !needs_copy; i++)
        if (out_ids[i] == id) needs_copy = 1;
    if (needs_copy) {
        int32_t shp, y;
        int64_t r1 = rank_known(c, id) ? t_rank(c, id) : -1;
        ks__fmt(c->nodename, sizeof(c->nodename), "output_copy_%u", k);
        ks__fmt(c->opname, sizeof(c->opname), "output");
        c->node.num_outputs = 0;
        st = new_tensor(c, "", KS_DTYPE_I64, 1, r1 >= 0 ? &r1 : NULL, &shp);
        if (!st) st = emit(c, KS_OP_SHAPE, 1, &id, 1, &shp, NULL);
        name = span_cstr(c, nm);
        if (!st) st = new_tensor(c, name, c->g->tensors[id].dtype, rank, dims, &y);
        if (st) return st;
        int32_t ins[2] = {id, shp};
        st = emit(c, KS_OP_RESHAPE, 2, ins, 1, &y, NULL);
        if (st) return st;
        id = y;
    }
    /* The ONNX declaration is the contract for outputs: dtype and (possibly dynamic) shape. */
    ks__tensor *t = &c->g->tensors[id];
    if (rank >= 0) {
        t->rank = rank;
        for (int32_t i = 0; i < rank; i++)
            t->dims[i] = dims[i];
        st = set_rank_known(c, id, 1);
        if (st) return st;
    }
    if (dt != t->dtype)
        return fail(c, KS_STATUS_INVALID_MODEL, "graph output '%s': declared %s but computed %s",
                    pn, ks_dtype_string(dt), ks_dtype_string(t->dtype));
    out_ids[k] = id;
    return KS_STATUS_OK;
}

static const char *basename_of(const char *p) {
    const char *b = p;
    for (const char *s = p; *s; s++)
        if (*s == '/' || *s == '\\') b = s + 1;
    return b;
}

ks_status ks__import_onnx(const uint8_t *data, size_t size_bytes, const char *source_name,
                          ks__graph *g, char *err, size_t err_cap) {
    imp c;
    memset(&c, 0, sizeof(c));
    c.g = g;
    c.src = source_name ? source_name : "<onnx>";
    c.err = err;
    c.err_cap = err_cap;
    c.opset = -1;
    ks_status st = KS_STATUS_OK;
    ks__pb_span *nodes = NULL, *inits = NULL, *inputs = NULL, *outputs = NULL;
    uint32_t num_nodes = 0, num_inits = 0, num_inputs = 0, num_outputs = 0, num_vi = 0;
    int32_t *in_ids = NULL, *out_ids = NULL;
    ks__pb_span model = {data, size_bytes}, graph = {NULL, 0};
    int has_graph = 0;
    int64_t ir_version = 0;

    if (!data || size_bytes == 0) {
        st = fail(&c, KS_STATUS_INVALID_MODEL, "empty file");
        goto done;
    }
    {
        ks__pb_reader r = ks__pb_reader_init(model);
        ks__pb_field f;
        int rc;
        while ((rc = ks__pb_next(&r, &f)) > 0) {
            if (f.number == 1 && f.wire == KS_PB_VARINT) ir_version = (int64_t)f.u64;
            if (f.number == 7 && f.wire == KS_PB_LEN) graph = f.span, has_graph = 1;
            if (f.number == 8 && f.wire == KS_PB_LEN) {
                ks__pb_reader o = ks__pb_reader_init(f.span);
                ks__pb_field of;
                ks__pb_span dom = {NULL, 0};
                int64_t ver = -1;
                int orc;
                while ((orc = ks__pb_next(&o, &of)) > 0) {
                    if (of.number == 1 && of.wire == KS_PB_LEN) dom = of.span;
                    if (of.number == 2 && of.wire == KS_PB_VARINT) ver = (int64_t)of.u64;
                }
                if (orc < 0) {
                    st = pb_fail(&c, orc, "OperatorSetIdProto");
                    goto done;
                }
                if (dom.size_bytes == 0 || span_eq(dom, "ai.onnx")) c.opset = ver;
            }
        }
        if (rc < 0) {
            st = pb_fail(&c, rc, "ModelProto");
            goto done;
        }
    }
    if (!has_graph) {
        st = fail(&c, KS_STATUS_INVALID_MODEL, "no graph (not an ONNX model?)");
        goto done;
    }
    if (ir_version < 3 || c.opset < 0) {
        st = fail(&c, KS_STATUS_INVALID_MODEL,
                  "ir_version %lld / default-domain opset %lld: not a "
                  "supported ONNX model",
                  (long long)ir_version, (long long)c.opset);
        goto done;
    }
    if (c.opset < ONNX_MIN_OPSET || c.opset > ONNX_MAX_OPSET) {
        st = fail(&c, KS_STATUS_UNSUPPORTED, "opset %lld is not supported (%d..%d)",
                  (long long)c.opset, ONNX_MIN_OPSET, ONNX_MAX_OPSET);
        goto done;
    }
    st = collect(&c, graph, 1, "GraphProto.node", &nodes, &num_nodes);
    if (!st) st = collect(&c, graph, 5, "GraphProto.initializer", &inits, &num_inits);
    if (!st) st = collect(&c, graph, 11, "GraphProto.input", &inputs, &num_inputs);
    if (!st) st = collect(&c, graph, 12, "GraphProto.output", &outputs, &num_outputs);
    if (!st) st = collect(&c, graph, 13, "GraphProto.value_info", &c.vi_spans, &num_vi);
    if (st) goto done;
    if (num_nodes > KS_IMPORT_MAX_NODES || num_inits > KS_IMPORT_MAX_TENSORS) {
        st = fail(&c, KS_STATUS_LIMIT_EXCEEDED, "%u nodes / %u initializers exceed the limits",
                  num_nodes, num_inits);
        goto done;
    }
    if (num_outputs == 0) {
        st = fail(&c, KS_STATUS_INVALID_MODEL, "graph has no outputs");
        goto done;
    }

    for (uint32_t i = 0; i < num_inits; i++) {
        int32_t id;
        st = parse_tensor(&c, inits[i], NULL, &id);
        if (st) goto done;
        ks__tensor *t = &g->tensors[id];
        ks__pb_span key = {NULL, 0};
        /* re-read the name span from the proto so the map key points into the file */
        ks__pb_reader r = ks__pb_reader_init(inits[i]);
        ks__pb_field f;
        while (ks__pb_next(&r, &f) > 0)
            if (f.number == 8 && f.wire == KS_PB_LEN) key = f.span;
        (void)t;
        if (key.size_bytes == 0) continue;
        st = map_put(&c, &c.tensors, key, id);
        if (st) {
            st = fail(&c, st, "out of memory");
            goto done;
        }
    }

    in_ids = ks__alloc(&g->alloc, (size_t)(num_inputs ? num_inputs : 1) * sizeof(int32_t));
    out_ids = ks__alloc(&g->alloc, (size_t)num_outputs * sizeof(int32_t));
    if (!in_ids || !out_ids) {
        st = fail(&c, KS_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    uint32_t n_in = 0;
    c.trust_value_info = 1;
    for (uint32_t i = 0; i < num_inputs; i++) {
        ks__pb_span nm;
        ks_dtype dt;
        int32_t rank;
        int64_t dims[KS_MAX_RANK];
        st = parse_value_info(&c, inputs[i], &nm, &dt, &rank, dims);
        if (st) goto done;
        if (map_get(&c.tensors, nm) >= 0) continue; /* initializer listed as input (IR < 4) */
        char pn[256];
        span_print(nm, pn, sizeof(pn));
        if (nm.size_bytes == 0 || nm.size_bytes > ONNX_MAX_NAME) {
            st = fail(&c, KS_STATUS_INVALID_MODEL, "graph input %u has an invalid name", i);
            goto done;
        }
        if (rank < 0) {
            st = fail(&c, KS_STATUS_UNSUPPORTED, "graph input '%s' has no shape", pn);
            goto done;
        }
        for (int32_t d = 0; d < rank; d++)
            if (dims[d] < 0) c.trust_value_info = 0;
        const char *name = span_cstr(&c, nm);
        if (!name) {
            st = fail(&c, KS_STATUS_OUT_OF_MEMORY, "out of memory");
            goto done;
        }
        st = new_tensor(&c, name, dt, rank, dims, &in_ids[n_in]);
        if (!st) st = map_put(&c, &c.tensors, nm, in_ids[n_in]);
        if (st) goto done;
        n_in++;
    }
    st = ks__graph_set_io(g, n_in, in_ids, 0, NULL);
    if (st) {
        st = fail(&c, st, "out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < num_vi; i++) {
        ks__pb_reader r = ks__pb_reader_init(c.vi_spans[i]);
        ks__pb_field f;
        int rc;
        while ((rc = ks__pb_next(&r, &f)) > 0)
            if (f.number == 1 && f.wire == KS_PB_LEN) {
                st = map_put(&c, &c.vinfo, f.span, (int32_t)i);
                if (st) {
                    st = fail(&c, st, "out of memory");
                    goto done;
                }
            }
        if (rc < 0) {
            st = pb_fail(&c, rc, "ValueInfoProto");
            goto done;
        }
    }

    for (uint32_t i = 0; i < num_nodes; i++) {
        c.node_index = i;
        st = import_node(&c, nodes[i]);
        if (st) goto done;
    }
    for (uint32_t k = 0; k < num_outputs; k++) {
        st = bind_output(&c, outputs[k], out_ids, k);
        if (st) goto done;
    }
    st = ks__graph_set_io(g, n_in, in_ids, num_outputs, out_ids);
    if (st) {
        st = fail(&c, st, "out of memory");
        goto done;
    }
    {
        char buf[32];
        ks__fmt(buf, sizeof(buf), "%lld", (long long)c.opset);
        st = ks__graph_set_meta(g, "producer", "onnx");
        if (!st) st = ks__graph_set_meta(g, "source", basename_of(c.src));
        if (!st) st = ks__graph_set_meta(g, "onnx.opset", buf);
        if (st) {
            st = fail(&c, st, "out of memory");
            goto done;
        }
    }
    {
        char msg[256];
        st = ks__graph_validate(g, msg, sizeof(msg));
        if (st) st = fail(&c, st, "imported graph is inconsistent: %s", msg);
    }
done:
    ks__free(&g->alloc, nodes);
    ks__free(&g->alloc, inits);
    ks__free(&g->alloc, inputs);
    ks__free(&g->alloc, outputs);
    ks__free(&g->alloc, c.vi_spans);
    ks__free(&g->alloc, in_ids);
    ks__free(&g->alloc, out_ids);
    ks__free(&g->alloc, c.tensors.e);
    ks__free(&g->alloc, c.vinfo.e);
    ks__free(&g->alloc, c.rank_known);
    ks__free(&g->alloc, c.node.inputs);
    ks__free(&g->alloc, c.node.outputs);
    ks__free(&g->alloc, c.node.attrs);
    ks__free(&g->alloc, c.tmp);
    return st;
}

/* ---------------------------------------------------------------- op list */

/* What the handlers above refuse or require, per op, for ks-convert --list-ops. The names are
 * those of k_ops (an op absent here has no constraint beyond its ONNX definition); keep a note
 * in step when a handler gains or drops a refusal. */
typedef struct op_note {
    const char *name;
    const char *constraints;
} op_note;

static const op_note k_op_notes[] = {
    {"Conv", "2-D only (4-D weights; 2-D strides, dilations and pads); auto_pad NOTSET, "
             "SAME_UPPER, SAME_LOWER or VALID"},
    {"ConvTranspose", "2-D only (4-D weights); group 1, no dilation, no output_shape attribute"},
    {"BatchNormalization", "inference only (no training-mode outputs); scale, B, mean and var "
                           "constant"},
    {"Add", "2 inputs, NumPy broadcasting"},
    {"Sub", "2 inputs, NumPy broadcasting"},
    {"Mul", "2 inputs, NumPy broadcasting"},
    {"Div", "2 inputs, NumPy broadcasting"},
    {"Pow", "2 inputs, NumPy broadcasting"},
    {"Max", "at most 2 inputs"},
    {"Min", "at most 2 inputs"},
    {"MaxPool", "2-D only; no dilation, storage_order 0, no Indices output"},
    {"AveragePool", "2-D only; no dilation"},
    {"Resize", "4-D, scaling H and W only; mode nearest or linear; coordinate_transformation_mode "
               "half_pixel, pytorch_half_pixel, align_corners, asymmetric or "
               "tf_half_pixel_for_nearest; no antialias, exclude_outside or axes"},
    {"Upsample", "4-D, scaling H and W only; mode nearest or linear"},
    {"Concat", "1..64 inputs"},
    {"Split", "1..64 outputs"},
    {"Flatten", "axis over static dimensions"},
    {"Transpose", "perm given, or an input of known rank"},
    {"Unsqueeze", "axes constant; negative axes need an input of known rank"},
    {"Squeeze", "axes constant; negative axes need an input of known rank"},
    {"Constant", "a value attribute (tensor, float(s) or int(s))"},
    {"Identity", "no node (the output aliases the input)"},
    {"Dropout", "inference only: the identity; no mask output"},
    {"Cast", "to float32, float16, int32, int64, uint8, int8, int16 or bool"},
    {"Pad", "mode constant, reflect or edge; no axes input"},
    {"ReduceMean", "axes constant"},
    {"ReduceSum", "axes constant"},
    {"ReduceMax", "axes constant"},
    {"ReduceMin", "axes constant"},
    {"ReduceProd", "axes constant"},
    {"ArgMax", "select_last_index 0"},
    {"ArgMin", "select_last_index 0"},
};

uint32_t ks__onnx_num_ops(void) {
    return (uint32_t)(sizeof(k_ops) / sizeof(k_ops[0]));
}

ks__import_op ks__onnx_op(uint32_t index) {
    ks__import_op op = {NULL, ""};
    if (index >= ks__onnx_num_ops()) return op;
    op.name = k_ops[index].name;
    for (size_t i = 0; i < sizeof(k_op_notes) / sizeof(k_op_notes[0]); i++)
        if (strcmp(k_op_notes[i].name, op.name) == 0) op.constraints = k_op_notes[i].constraints;
    return op;
}

#define ONNX_STR_(x) #x
#define ONNX_STR(x) ONNX_STR_(x)

const char *ks__onnx_import_notes(void) {
    static const char notes[] = "opset " ONNX_STR(ONNX_MIN_OPSET) ".." ONNX_STR(
        ONNX_MAX_OPSET) "; the default domain "
                        "(ai.onnx) only; every graph input needs a shape; tensors of rank "
                        "<= " ONNX_STR(KS_MAX_RANK);
    return notes;
}
