/* TFLite front-end: maps subgraph 0 of a .tflite flatbuffer into the Kestrel IR.
 *
 * Schema facts used (tensorflow/lite/schema/schema.fbs, field numbers in brackets):
 *   Model: version[0] operator_codes[1] subgraphs[2] description[3] buffers[4]
 *   OperatorCode: deprecated_builtin_code(int8)[0] custom_code[1] version[2] builtin_code[3]
 *   SubGraph: tensors[0] inputs[1] outputs[2] operators[3]
 *   Tensor: shape[0] type[1] buffer[2] name[3] quantization[4] is_variable[5] sparsity[6]
 *   QuantizationParameters: scale[2] zero_point(int64)[3] quantized_dimension[6]
 *   Operator: opcode_index[0] inputs[1] outputs[2] builtin_options_type[3] builtin_options[4]
 *             custom_options[5]
 *   Buffer: data[0] offset(uint64)[1] size(uint64)[2] (offset > 1: data lives in the file
 *           outside the flatbuffer, at that absolute offset)
 *
 * Design: IR tensors are created lazily, when an op or the graph interface first refers to a
 * TFLite tensor. That lets conversion-time folding (DENSIFY of sparse constants, DEQUANTIZE of
 * fp16 constants) replace whole chains by one F32 constant without leaving the intermediate
 * fp16/sparse constants behind in the graph.
 */
#include "tflite_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- TFLite enum values (schema.fbs) ---- */
enum {
    TFL_ADD = 0,
    TFL_AVERAGE_POOL_2D = 1,
    TFL_CONCATENATION = 2,
    TFL_CONV_2D = 3,
    TFL_DEPTHWISE_CONV_2D = 4,
    TFL_DEPTH_TO_SPACE = 5,
    TFL_DEQUANTIZE = 6,
    TFL_FLOOR = 8,
    TFL_FULLY_CONNECTED = 9,
    TFL_LOGISTIC = 14,
    TFL_MAX_POOL_2D = 17,
    TFL_MUL = 18,
    TFL_RELU = 19,
    TFL_RELU_N1_TO_1 = 20,
    TFL_RELU6 = 21,
    TFL_RESHAPE = 22,
    TFL_RESIZE_BILINEAR = 23,
    TFL_SOFTMAX = 25,
    TFL_SPACE_TO_DEPTH = 26,
    TFL_TANH = 28,
    TFL_CUSTOM = 32,
    TFL_PAD = 34,
    TFL_GATHER = 36,
    TFL_BATCH_TO_SPACE_ND = 37,
    TFL_SPACE_TO_BATCH_ND = 38,
    TFL_TRANSPOSE = 39,
    TFL_MEAN = 40,
    TFL_SUB = 41,
    TFL_DIV = 42,
    TFL_SQUEEZE = 43,
    TFL_STRIDED_SLICE = 45,
    TFL_EXP = 47,
    TFL_SPLIT = 49,
    TFL_LOG_SOFTMAX = 50,
    TFL_CAST = 53,
    TFL_PRELU = 54,
    TFL_MAXIMUM = 55,
    TFL_ARG_MAX = 56,
    TFL_MINIMUM = 57,
    TFL_LESS = 58,
    TFL_NEG = 59,
    TFL_PADV2 = 60,
    TFL_GREATER = 61,
    TFL_GREATER_EQUAL = 62,
    TFL_LESS_EQUAL = 63,
    TFL_SELECT = 64,
    TFL_SLICE = 65,
    TFL_TRANSPOSE_CONV = 67,
    TFL_TILE = 69,
    TFL_EXPAND_DIMS = 70,
    TFL_EQUAL = 71,
    TFL_NOT_EQUAL = 72,
    TFL_LOG = 73,
    TFL_SUM = 74,
    TFL_SQRT = 75,
    TFL_RSQRT = 76,
    TFL_SHAPE = 77,
    TFL_POW = 78,
    TFL_ARG_MIN = 79,
    TFL_REDUCE_PROD = 81,
    TFL_REDUCE_MAX = 82,
    TFL_PACK = 83,
    TFL_UNPACK = 88,
    TFL_REDUCE_MIN = 89,
    TFL_FLOOR_DIV = 90,
    TFL_FLOOR_MOD = 95,
    TFL_RESIZE_NEAREST_NEIGHBOR = 97,
    TFL_LEAKY_RELU = 98,
    TFL_MIRROR_PAD = 100,
    TFL_ABS = 101,
    TFL_SPLIT_V = 102,
    TFL_CEIL = 104,
    TFL_GATHER_ND = 107,
    TFL_ELU = 111,
    TFL_QUANTIZE = 114,
    TFL_HARD_SWISH = 117,
    TFL_SELECT_V2 = 123,
    TFL_DENSIFY = 124,
    TFL_BATCH_MATMUL = 126,
};

/* BuiltinOptions union type codes. */
enum {
    OPT_CONV2D = 1,
    OPT_DEPTHWISE = 2,
    OPT_POOL2D = 5,
    OPT_FC = 8,
    OPT_SOFTMAX = 9,
    OPT_CONCAT = 10,
    OPT_ADD = 11,
    OPT_RESIZE_BILINEAR = 15,
    OPT_RESHAPE = 17,
    OPT_SPACE_TO_DEPTH = 19,
    OPT_MUL = 21,
    OPT_GATHER = 23,
    OPT_REDUCER = 27,
    OPT_SUB = 28,
    OPT_DIV = 29,
    OPT_SQUEEZE = 30,
    OPT_STRIDED_SLICE = 32,
    OPT_SPLIT = 35,
    OPT_TRANSPOSE_CONV = 49,
    OPT_PACK = 59,
    OPT_UNPACK = 64,
    OPT_RESIZE_NEAREST = 74,
    OPT_LEAKY_RELU = 75,
    OPT_MIRROR_PAD = 77,
    OPT_SPLIT_V = 79,
    OPT_DEPTH_TO_SPACE = 94,
    OPT_BATCH_MATMUL = 101,
};

static const char *const k_builtin_names[] = {
    "ADD",
    "AVERAGE_POOL_2D",
    "CONCATENATION",
    "CONV_2D",
    "DEPTHWISE_CONV_2D",
    "DEPTH_TO_SPACE",
    "DEQUANTIZE",
    "EMBEDDING_LOOKUP",
    "FLOOR",
    "FULLY_CONNECTED",
    "HASHTABLE_LOOKUP",
    "L2_NORMALIZATION",
    "L2_POOL_2D",
    "LOCAL_RESPONSE_NORMALIZATION",
    "LOGISTIC",
    "LSH_PROJECTION",
    "LSTM",
    "MAX_POOL_2D",
    "MUL",
    "RELU",
    "RELU_N1_TO_1",
    "RELU6",
    "RESHAPE",
    "RESIZE_BILINEAR",
    "RNN",
    "SOFTMAX",
    "SPACE_TO_DEPTH",
    "SVDF",
    "TANH",
    "CONCAT_EMBEDDINGS",
    "SKIP_GRAM",
    "CALL",
    "CUSTOM",
    "EMBEDDING_LOOKUP_SPARSE",
    "PAD",
    "UNIDIRECTIONAL_SEQUENCE_RNN",
    "GATHER",
    "BATCH_TO_SPACE_ND",
    "SPACE_TO_BATCH_ND",
    "TRANSPOSE",
    "MEAN",
    "SUB",
    "DIV",
    "SQUEEZE",
    "UNIDIRECTIONAL_SEQUENCE_LSTM",
    "STRIDED_SLICE",
    "BIDIRECTIONAL_SEQUENCE_RNN",
    "EXP",
    "TOPK_V2",
    "SPLIT",
    "LOG_SOFTMAX",
    "DELEGATE",
    "BIDIRECTIONAL_SEQUENCE_LSTM",
    "CAST",
    "PRELU",
    "MAXIMUM",
    "ARG_MAX",
    "MINIMUM",
    "LESS",
    "NEG",
    "PADV2",
    "GREATER",
    "GREATER_EQUAL",
    "LESS_EQUAL",
    "SELECT",
    "SLICE",
    "SIN",
    "TRANSPOSE_CONV",
    "SPARSE_TO_DENSE",
    "TILE",
    "EXPAND_DIMS",
    "EQUAL",
    "NOT_EQUAL",
    "LOG",
    "SUM",
    "SQRT",
    "RSQRT",
    "SHAPE",
    "POW",
    "ARG_MIN",
    "FAKE_QUANT",
    "REDUCE_PROD",
    "REDUCE_MAX",
    "PACK",
    "LOGICAL_OR",
    "ONE_HOT",
    "LOGICAL_AND",
    "LOGICAL_NOT",
    "UNPACK",
    "REDUCE_MIN",
    "FLOOR_DIV",
    "REDUCE_ANY",
    "SQUARE",
    "ZEROS_LIKE",
    "FILL",
    "FLOOR_MOD",
    "RANGE",
    "RESIZE_NEAREST_NEIGHBOR",
    "LEAKY_RELU",
    "SQUARED_DIFFERENCE",
    "MIRROR_PAD",
    "ABS",
    "SPLIT_V",
    "UNIQUE",
    "CEIL",
    "REVERSE_V2",
    "ADD_N",
    "GATHER_ND",
    "COS",
    "WHERE",
    "RANK",
    "ELU",
    "REVERSE_SEQUENCE",
    "MATRIX_DIAG",
    "QUANTIZE",
    "MATRIX_SET_DIAG",
    "ROUND",
    "HARD_SWISH",
    "IF",
    "WHILE",
    "NON_MAX_SUPPRESSION_V4",
    "NON_MAX_SUPPRESSION_V5",
    "SCATTER_ND",
    "SELECT_V2",
    "DENSIFY",
    "SEGMENT_SUM",
    "BATCH_MATMUL",
};

/* ---- importer state ---- */

typedef struct folded {
    uint8_t *data; /* owned (importer allocator); NULL: not folded */
    size_t size_bytes;
    ks_dtype dtype;
} folded;

typedef struct tdesc {
    ks__fb_table t;
    const uint8_t *name;
    uint32_t name_len;
    int8_t tfl_type;
    ks_dtype dtype;
    int32_t rank;
    int64_t dims[KS_MAX_RANK];
    uint32_t buffer;
    ks__fb_table quant, sparsity;
    bool is_variable;
} tdesc;

typedef struct cview {
    const uint8_t *data;
    size_t size_bytes;
    ks_dtype dtype;
} cview;

typedef struct imp {
    ks__fb fb;
    const char *src;
    ks__graph *g;
    char *err;
    size_t err_cap;
    ks__fb_vec opcodes, buffers, tensors, ops, sg_inputs, sg_outputs;
    uint32_t num_tensors;
    int32_t *map;   /* TFLite tensor -> IR tensor id, -1: not created yet */
    uint8_t *state; /* TSTATE_* */
    folded *fold;
    uint64_t const_bytes;
    /* current op, for messages */
    uint32_t node;
    const char *op_name;
    char out_name[160];
} imp;

#define TSTATE_INPUT 1u    /* graph input */
#define TSTATE_PRODUCED 2u /* output of an op converted so far */

typedef struct opc {
    int32_t code;
    const char *custom; /* NUL-terminated copy, or NULL */
    char custom_buf[64];
    int32_t version;
    ks__fb_vec ins, outs;
    uint8_t opt_type;
    ks__fb_table opt;
    const uint8_t *custom_opts;
    uint32_t custom_opts_len;
} opc;

/* Writes the message; in_op adds the current op, node and output name. */
static ks_status vreport(imp *c, ks_status st, bool in_op, const char *fmt, va_list ap)
    KS__PRINTF(4, 0);

static ks_status vreport(imp *c, ks_status st, bool in_op, const char *fmt, va_list ap) {
    char msg[384];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    if (in_op)
        ks__fmt(c->err, c->err_cap, "%s: op %s (node %u, output '%s'): %s", c->src, c->op_name,
                c->node, c->out_name, msg);
    else
        ks__fmt(c->err, c->err_cap, "%s: %s", c->src, msg);
    return st;
}

static ks_status fail(imp *c, ks_status st, const char *fmt, ...) KS__PRINTF(3, 4);

static ks_status fail(imp *c, ks_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    st = vreport(c, st, false, fmt, ap);
    va_end(ap);
    return st;
}

/* Error inside the op being converted. */
static ks_status op_fail(imp *c, ks_status st, const char *fmt, ...) KS__PRINTF(3, 4);

static ks_status op_fail(imp *c, ks_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    st = vreport(c, st, true, fmt, ap);
    va_end(ap);
    return st;
}

static ks_status bad_fb(imp *c, const char *what) {
    return fail(c, KS_STATUS_INVALID_MODEL, "malformed flatbuffer reading %s: %s at offset %zu",
                what, c->fb.why ? c->fb.why : "invalid value", c->fb.bad_offset);
}

static ks_status oom(imp *c) {
    return fail(c, KS_STATUS_OUT_OF_MEMORY, "out of memory");
}

static void copy_printable(char *dst, size_t cap, const uint8_t *s, uint32_t len) {
    size_t n = 0;
    for (uint32_t i = 0; i < len && n + 1 < cap; i++) {
        if (s[i] == 0) break;
        dst[n++] = (s[i] >= 32 && s[i] < 127) || s[i] >= 128 ? (char)s[i] : '?';
    }
    dst[n] = 0;
}

static char *dup_str(imp *c, const uint8_t *s, uint32_t len) {
    size_t n = 0;
    while (n < len && s[n])
        n++;
    char *d = ks__alloc(&c->g->alloc, n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static ks_dtype map_type(int8_t t) {
    switch (t) {
    case 0:
        return KS_DTYPE_F32;
    case 1:
        return KS_DTYPE_F16;
    case 2:
        return KS_DTYPE_I32;
    case 3:
        return KS_DTYPE_U8;
    case 4:
        return KS_DTYPE_I64;
    case 6:
        return KS_DTYPE_BOOL;
    case 7:
        return KS_DTYPE_I16;
    case 9:
        return KS_DTYPE_I8;
    default:
        return KS_DTYPE_INVALID;
    }
}

static const char *tfl_type_name(int8_t t) {
    static const char *const names[] = {"FLOAT32", "FLOAT16",    "INT32",  "UINT8",     "INT64",
                                        "STRING",  "BOOL",       "INT16",  "COMPLEX64", "INT8",
                                        "FLOAT64", "COMPLEX128", "UINT64", "RESOURCE",  "VARIANT",
                                        "UINT32",  "UINT16",     "INT4"};
    return (t >= 0 && (size_t)t < sizeof(names) / sizeof(names[0])) ? names[t] : "unknown";
}

/* Reads tensor `idx` of subgraph 0. */
static ks_status get_tdesc(imp *c, int32_t idx, tdesc *d) {
    ks__fb_vec shape;
    memset(d, 0, sizeof(*d));
    if (idx < 0 || (uint32_t)idx >= c->num_tensors)
        return fail(c, KS_STATUS_INVALID_MODEL, "tensor index %d out of range (%u tensors)", idx,
                    c->num_tensors);
    if (!ks__fb_vec_table(&c->fb, &c->tensors, (uint32_t)idx, &d->t) ||
        !ks__fb_get_vec(&c->fb, &d->t, 0, 4, &shape) ||
        !ks__fb_get_i8(&c->fb, &d->t, 1, 0, &d->tfl_type) ||
        !ks__fb_get_u32(&c->fb, &d->t, 2, 0, &d->buffer) ||
        !ks__fb_get_str(&c->fb, &d->t, 3, &d->name, &d->name_len) ||
        !ks__fb_get_table(&c->fb, &d->t, 4, &d->quant) ||
        !ks__fb_get_bool(&c->fb, &d->t, 5, &d->is_variable) ||
        !ks__fb_get_table(&c->fb, &d->t, 6, &d->sparsity))
        return bad_fb(c, "a tensor");
    char name[128];
    copy_printable(name, sizeof(name), d->name, d->name_len);
    if (shape.count > KS_MAX_RANK)
        return fail(c, KS_STATUS_UNSUPPORTED, "tensor %d '%s': rank %u exceeds %d", idx, name,
                    shape.count, KS_MAX_RANK);
    d->rank = (int32_t)shape.count;
    for (uint32_t i = 0; i < shape.count; i++) {
        int32_t v = ks__fb_vec_i32(&c->fb, &shape, i);
        if (v < -1)
            return fail(c, KS_STATUS_INVALID_MODEL, "tensor %d '%s': dim %u is %d", idx, name, i,
                        v);
        d->dims[i] = v;
    }
    d->dtype = map_type(d->tfl_type);
    if (d->dtype == KS_DTYPE_INVALID)
        return fail(c, KS_STATUS_UNSUPPORTED,
                    "tensor %d '%s': TFLite type %d (%s) is not supported", idx, name, d->tfl_type,
                    tfl_type_name(d->tfl_type));
    if (d->is_variable)
        return fail(c, KS_STATUS_UNSUPPORTED, "tensor %d '%s': variable tensors are not supported",
                    idx, name);
    return KS_STATUS_OK;
}

/* Raw bytes of buffer `b` (size 0 when empty). */
static ks_status get_buffer(imp *c, uint32_t b, const uint8_t **data, size_t *size) {
    ks__fb_table bt;
    ks__fb_vec v;
    uint64_t off, sz;
    *data = NULL;
    *size = 0;
    if (b >= c->buffers.count)
        return fail(c, KS_STATUS_INVALID_MODEL, "buffer index %u out of range (%u buffers)", b,
                    c->buffers.count);
    if (!ks__fb_vec_table(&c->fb, &c->buffers, b, &bt) || !ks__fb_get_vec(&c->fb, &bt, 0, 1, &v) ||
        !ks__fb_get_u64(&c->fb, &bt, 1, 0, &off) || !ks__fb_get_u64(&c->fb, &bt, 2, 0, &sz))
        return bad_fb(c, "a buffer");
    if (v.count > 0) {
        *data = c->fb.data + v.pos;
        *size = v.count;
    } else if (off > 1) {
        if (off > c->fb.size || sz > c->fb.size - off)
            return fail(c, KS_STATUS_INVALID_MODEL,
                        "buffer %u: external data [%llu, +%llu) beyond the file (%zu bytes)", b,
                        (unsigned long long)off, (unsigned long long)sz, c->fb.size);
        *data = c->fb.data + off;
        *size = (size_t)sz;
    }
    return KS_STATUS_OK;
}

static ks_status check_const_budget(imp *c, size_t bytes) {
    c->const_bytes += bytes;
    if (c->const_bytes > KS_IMPORT_MAX_CONST_BYTES)
        return fail(c, KS_STATUS_LIMIT_EXCEEDED, "constants exceed %llu bytes",
                    (unsigned long long)KS_IMPORT_MAX_CONST_BYTES);
    return KS_STATUS_OK;
}

/* Constant value of TFLite tensor idx (folded value, densified sparse data or raw buffer);
 * v->data == NULL when the tensor is not a constant. */
static ks_status get_const(imp *c, int32_t idx, cview *v) {
    tdesc d;
    const uint8_t *raw;
    size_t raw_size;
    ks_status st;
    char why[200];
    memset(v, 0, sizeof(*v));
    if (idx < 0) return KS_STATUS_OK;
    if ((st = get_tdesc(c, idx, &d))) return st;
    if (c->fold[idx].data) {
        v->data = c->fold[idx].data;
        v->size_bytes = c->fold[idx].size_bytes;
        v->dtype = c->fold[idx].dtype;
        return KS_STATUS_OK;
    }
    if ((st = get_buffer(c, d.buffer, &raw, &raw_size))) return st;
    if (!raw) return KS_STATUS_OK;
    char name[128];
    copy_printable(name, sizeof(name), d.name, d.name_len);
    int64_t n = ks__numel(d.rank, d.dims);
    size_t esz = ks_dtype_size(d.dtype);
    if (n < 0 || (uint64_t)n > KS_IMPORT_MAX_CONST_BYTES / esz)
        return fail(c, KS_STATUS_INVALID_MODEL, "tensor %d '%s': constant with invalid shape", idx,
                    name);
    size_t need = (size_t)n * esz;
    if (!d.sparsity.pos) {
        if (raw_size != need)
            return fail(c, KS_STATUS_INVALID_MODEL,
                        "tensor %d '%s': buffer holds %zu bytes, shape and type need %zu", idx,
                        name, raw_size, need);
        v->data = raw;
        v->size_bytes = raw_size;
        v->dtype = d.dtype;
        return KS_STATUS_OK;
    }
    /* A sparse constant is the one place where a few file bytes could ask for a huge
     * allocation; real models stay far below this expansion ratio. */
    if (need / 256 > c->fb.size)
        return fail(c, KS_STATUS_LIMIT_EXCEEDED,
                    "tensor %d '%s': sparse constant expands to %zu bytes from a %zu-byte file",
                    idx, name, need, c->fb.size);
    if ((st = check_const_budget(c, need))) return st;
    uint8_t *dense = ks__calloc(&c->g->alloc, need ? need : 1, 1);
    if (!dense) return oom(c);
    st = ks__tflite_densify(&c->fb, &d.sparsity, d.rank, d.dims, esz, raw, raw_size, dense, why,
                            sizeof(why));
    if (st) {
        ks__free(&c->g->alloc, dense);
        return fail(c, st, "tensor %d '%s': %s", idx, name, why);
    }
    c->fold[idx].data = dense;
    c->fold[idx].size_bytes = need;
    c->fold[idx].dtype = d.dtype;
    v->data = dense;
    v->size_bytes = need;
    v->dtype = d.dtype;
    return KS_STATUS_OK;
}

/* Copies the quantization of TFLite tensor d onto IR tensor id; quantized_dimension is remapped
 * through axis_map (axis_map[a] = new axis) when given. */
static ks_status copy_quant(imp *c, int32_t idx, const tdesc *d, int32_t id,
                            const int32_t *axis_map) {
    ks__fb_vec scales, zps;
    int32_t qdim;
    float scale_buf[1];
    int32_t zp_buf[1];
    float *sc = scale_buf;
    int32_t *zp = zp_buf;
    ks_status st = KS_STATUS_OK;
    char name[128];
    if (!d->quant.pos) return KS_STATUS_OK;
    /* Float tensors may carry calibration ranges; only integer tensors are quantized. */
    if (d->dtype == KS_DTYPE_F32 || d->dtype == KS_DTYPE_F16 || d->dtype == KS_DTYPE_BOOL)
        return KS_STATUS_OK;
    if (!ks__fb_get_vec(&c->fb, &d->quant, 2, 4, &scales) ||
        !ks__fb_get_vec(&c->fb, &d->quant, 3, 8, &zps) ||
        !ks__fb_get_i32(&c->fb, &d->quant, 6, 0, &qdim))
        return bad_fb(c, "quantization parameters");
    if (scales.count == 0) return KS_STATUS_OK;
    copy_printable(name, sizeof(name), d->name, d->name_len);
    if (zps.count != 0 && zps.count != 1 && zps.count != scales.count)
        return fail(c, KS_STATUS_INVALID_MODEL, "tensor %d '%s': %u scales but %u zero points", idx,
                    name, scales.count, zps.count);
    if (scales.count > 1 && (qdim < 0 || qdim >= d->rank || d->dims[qdim] != scales.count))
        return fail(c, KS_STATUS_INVALID_MODEL,
                    "tensor %d '%s': %u quantization scales on dimension %d", idx, name,
                    scales.count, qdim);
    if (scales.count > 1) {
        sc = ks__alloc(&c->g->alloc, scales.count * sizeof(float));
        zp = ks__alloc(&c->g->alloc, scales.count * sizeof(int32_t));
        if (!sc || !zp) {
            st = oom(c);
            goto done;
        }
    }
    for (uint32_t i = 0; i < scales.count; i++) {
        sc[i] = ks__ld_f32(c->fb.data + scales.pos + 4 * (size_t)i);
        int64_t z = 0;
        if (zps.count)
            z = (int64_t)ks__ld_u64(c->fb.data + zps.pos + 8 * (size_t)(zps.count == 1 ? 0 : i));
        if (z < INT32_MIN || z > INT32_MAX) {
            st = fail(c, KS_STATUS_INVALID_MODEL, "tensor %d '%s': zero point %lld", idx, name,
                      (long long)z);
            goto done;
        }
        zp[i] = (int32_t)z;
        if (!(sc[i] > 0.0f) || !isfinite(sc[i])) {
            st = fail(c, KS_STATUS_INVALID_MODEL, "tensor %d '%s': quantization scale %g", idx,
                      name, (double)sc[i]);
            goto done;
        }
    }
    int32_t axis = scales.count > 1 ? qdim : 0;
    if (axis_map && scales.count > 1) axis = axis_map[axis];
    if (ks__graph_set_quant(c->g, id, scales.count, axis, sc, zp)) st = oom(c);
done:
    if (sc != scale_buf) ks__free(&c->g->alloc, sc);
    if (zp != zp_buf) ks__free(&c->g->alloc, zp);
    return st;
}

/* Creates the IR tensor for TFLite tensor idx (with constant data when it has some). */
static ks_status create_tensor(imp *c, int32_t idx, int32_t *id_out) {
    tdesc d;
    cview cv;
    ks_status st;
    char *name = NULL;
    int32_t id;
    if ((st = get_tdesc(c, idx, &d))) return st;
    if ((st = get_const(c, idx, &cv))) return st;
    if (cv.data) d.dtype = cv.dtype; /* folded fp16 -> f32 */
    if (c->g->num_tensors >= KS_IMPORT_MAX_TENSORS)
        return fail(c, KS_STATUS_LIMIT_EXCEEDED, "more than %u tensors", KS_IMPORT_MAX_TENSORS);
    name = dup_str(c, d.name, d.name_len);
    if (!name) return oom(c);
    st = ks__graph_add_tensor(c->g, name, d.dtype, d.rank, d.dims, &id);
    ks__free(&c->g->alloc, name);
    if (st)
        return st == KS_STATUS_OUT_OF_MEMORY ? oom(c) : fail(c, st, "cannot add tensor %d", idx);
    if (cv.data) {
        if (!c->fold[idx].data && (st = check_const_budget(c, cv.size_bytes))) return st;
        if (ks__graph_set_const(c->g, id, cv.data, cv.size_bytes, true)) return oom(c);
    }
    if (!(cv.data && cv.dtype != map_type(d.tfl_type)) && (st = copy_quant(c, idx, &d, id, NULL)))
        return st;
    c->map[idx] = id;
    *id_out = id;
    return KS_STATUS_OK;
}

/* IR id of a tensor consumed by the current op (-1 for an absent optional input). */
static ks_status use_tensor(imp *c, int32_t idx, int32_t *id_out) {
    cview cv;
    ks_status st;
    *id_out = -1;
    if (idx == -1) return KS_STATUS_OK;
    if (idx < 0 || (uint32_t)idx >= c->num_tensors)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "input tensor index %d out of range", idx);
    if (c->map[idx] >= 0) {
        *id_out = c->map[idx];
        return KS_STATUS_OK;
    }
    if ((st = get_const(c, idx, &cv))) return st;
    if (!cv.data) {
        tdesc d;
        char name[128];
        if ((st = get_tdesc(c, idx, &d))) return st;
        copy_printable(name, sizeof(name), d.name, d.name_len);
        return op_fail(c, KS_STATUS_INVALID_MODEL,
                       "input tensor %d '%s' has no data, no producer before this op and is not "
                       "a graph input",
                       idx, name);
    }
    return create_tensor(c, idx, id_out);
}

/* TFLite tensor index of input k of the op (-1 when absent). */
static int32_t tin(imp *c, const opc *o, uint32_t k) {
    if (k >= o->ins.count) return -1;
    return ks__fb_vec_i32(&c->fb, &o->ins, k);
}

static int32_t tout(imp *c, const opc *o, uint32_t k) {
    if (k >= o->outs.count) return -1;
    return ks__fb_vec_i32(&c->fb, &o->outs, k);
}

static ks_status in_id(imp *c, const opc *o, uint32_t k, int32_t *id) {
    return use_tensor(c, tin(c, o, k), id);
}

/* Input k must exist (not -1). */
static ks_status req_in(imp *c, const opc *o, uint32_t k, int32_t *id) {
    ks_status st = in_id(c, o, k, id);
    if (st) return st;
    if (*id < 0) return op_fail(c, KS_STATUS_INVALID_MODEL, "required input %u is missing", k);
    return KS_STATUS_OK;
}

/* Declares TFLite tensor idx as produced by the current op and returns its IR id. */
static ks_status def_tensor(imp *c, int32_t idx, int32_t *id_out) {
    cview cv;
    ks_status st;
    if (idx < 0 || (uint32_t)idx >= c->num_tensors)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "output tensor index %d out of range", idx);
    if (c->map[idx] >= 0 || (c->state[idx] & TSTATE_PRODUCED))
        return op_fail(c, KS_STATUS_INVALID_MODEL, "output tensor %d is defined twice", idx);
    if ((st = get_const(c, idx, &cv))) return st;
    if (cv.data) return op_fail(c, KS_STATUS_INVALID_MODEL, "output tensor %d is a constant", idx);
    if ((st = create_tensor(c, idx, id_out))) return st;
    c->state[idx] |= TSTATE_PRODUCED;
    return KS_STATUS_OK;
}

static ks_status tensor_desc_of_input(imp *c, const opc *o, uint32_t k, tdesc *d) {
    int32_t idx = tin(c, o, k);
    if (idx < 0) return op_fail(c, KS_STATUS_INVALID_MODEL, "required input %u is missing", k);
    return get_tdesc(c, idx, d);
}

/* Reads a constant integer input (I32/I64) into vals (at most cap values). */
static ks_status const_ints(imp *c, const opc *o, uint32_t k, int64_t *vals, uint32_t cap,
                            uint32_t *n_out) {
    cview cv;
    ks_status st;
    if ((st = get_const(c, tin(c, o, k), &cv))) return st;
    if (!cv.data) return op_fail(c, KS_STATUS_UNSUPPORTED, "input %u must be a constant", k);
    size_t esz = cv.dtype == KS_DTYPE_I32 ? 4 : cv.dtype == KS_DTYPE_I64 ? 8 : 0;
    if (!esz) return op_fail(c, KS_STATUS_INVALID_MODEL, "input %u must be int32/int64", k);
    size_t n = cv.size_bytes / esz;
    if (n > cap)
        return op_fail(c, KS_STATUS_UNSUPPORTED, "input %u has %zu values (at most %u)", k, n, cap);
    for (size_t i = 0; i < n; i++)
        vals[i] =
            esz == 4 ? (int32_t)ks__ld_u32(cv.data + 4 * i) : (int64_t)ks__ld_u64(cv.data + 8 * i);
    *n_out = (uint32_t)n;
    return KS_STATUS_OK;
}

/* Adds the IR node; *node_out is valid until the next node is added. */
static ks_status emit(imp *c, uint32_t op, uint32_t nin, const int32_t *ins, uint32_t nout,
                      const int32_t *outs, ks__node **node_out) {
    uint32_t index;
    if (c->g->num_nodes >= KS_IMPORT_MAX_NODES)
        return fail(c, KS_STATUS_LIMIT_EXCEEDED, "more than %u nodes", KS_IMPORT_MAX_NODES);
    ks_status st = ks__graph_add_node(c->g, op, c->out_name, nin, ins, nout, outs, &index);
    if (st) return st == KS_STATUS_OUT_OF_MEMORY ? oom(c) : op_fail(c, st, "cannot add node");
    *node_out = &c->g->nodes[index];
    return KS_STATUS_OK;
}

/* Options must be the expected union member (or absent). */
static ks_status want_opt(imp *c, const opc *o, uint8_t type) {
    if (o->opt_type != 0 && o->opt_type != type)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "builtin_options type %u, expected %u",
                       o->opt_type, type);
    return KS_STATUS_OK;
}

static ks_status opt_bad(imp *c) {
    return op_fail(c, KS_STATUS_INVALID_MODEL, "malformed options: %s at offset %zu",
                   c->fb.why ? c->fb.why : "?", c->fb.bad_offset);
}

/* One scalar field of a builtin options table: where it goes and its schema default. */
enum { OF_I8, OF_I32, OF_BOOL, OF_F32 };

typedef struct optf {
    uint8_t kind; /* OF_* */
    uint32_t field;
    int32_t def; /* OF_F32: converted to float */
    void *out;   /* int8_t, int32_t, bool or float */
} optf;

/* Checks the union type, then reads the fields in order (stopping at the first bad one). */
static ks_status read_opts(imp *c, const opc *o, uint8_t type, const optf *f, size_t num_fields) {
    ks_status st = want_opt(c, o, type);
    if (st) return st;
    for (size_t i = 0; i < num_fields; i++) {
        bool ok = false;
        switch (f[i].kind) {
        case OF_I8:
            ok = ks__fb_get_i8(&c->fb, &o->opt, f[i].field, (int8_t)f[i].def, f[i].out);
            break;
        case OF_I32:
            ok = ks__fb_get_i32(&c->fb, &o->opt, f[i].field, f[i].def, f[i].out);
            break;
        case OF_BOOL:
            ok = ks__fb_get_bool(&c->fb, &o->opt, f[i].field, f[i].out);
            break;
        case OF_F32:
            ok = ks__fb_get_f32(&c->fb, &o->opt, f[i].field, (float)f[i].def, f[i].out);
            break;
        }
        if (!ok) return opt_bad(c);
    }
    return KS_STATUS_OK;
}

#define NUM_OPTS(a) (sizeof(a) / sizeof((a)[0]))

static ks_status map_act(imp *c, int8_t act, int32_t *out) {
    if (act >= 0 && act <= 4) { /* NONE, RELU, RELU_N1_TO_1, RELU6, TANH == ks__act values */
        *out = act;
        return KS_STATUS_OK;
    }
    if (act == 5) return op_fail(c, KS_STATUS_UNSUPPORTED, "fused activation SIGN_BIT");
    return op_fail(c, KS_STATUS_INVALID_MODEL, "fused activation %d", act);
}

static ks_status map_pad(imp *c, int8_t pad, int32_t *out) {
    if (pad == 0)
        *out = KS_PAD_SAME_UPPER;
    else if (pad == 1)
        *out = KS_PAD_VALID;
    else
        return op_fail(c, KS_STATUS_INVALID_MODEL, "padding %d", pad);
    return KS_STATUS_OK;
}

static ks_status check_stride(imp *c, int32_t sh, int32_t sw, int32_t dh, int32_t dw) {
    if (sh < 1 || sw < 1 || dh < 1 || dw < 1 || sh > 65536 || sw > 65536 || dh > 65536 ||
        dw > 65536)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "stride %dx%d / dilation %dx%d", sh, sw, dh, dw);
    return KS_STATUS_OK;
}

/* Options shared by the windowed ops (conv, depthwise, transposed conv, pooling). */
typedef struct win_opts {
    int8_t pad, act;
    int32_t sh, sw, dh, dw;
    int32_t pad_mode, ks_act; /* mapped by map_window */
} win_opts;

static ks_status map_window(imp *c, win_opts *w) {
    ks_status st;
    if ((st = map_pad(c, w->pad, &w->pad_mode)) || (st = map_act(c, w->act, &w->ks_act)) ||
        (st = check_stride(c, w->sh, w->sw, w->dh, w->dw)))
        return st;
    return KS_STATUS_OK;
}

/* CONV2D params: stride, dilation, padding mode, groups, fused activation. */
static void set_conv_ip(ks__node *n, const win_opts *w, int32_t groups) {
    n->ip[0] = w->sh;
    n->ip[1] = w->sw;
    n->ip[2] = w->dh;
    n->ip[3] = w->dw;
    n->ip[8] = w->pad_mode;
    n->ip[9] = groups;
    n->ip[10] = w->ks_act;
}

/* Defines all outputs of the op into outs[] (at most cap). */
static ks_status def_outputs(imp *c, const opc *o, int32_t *outs, uint32_t cap) {
    ks_status st;
    if (o->outs.count == 0 || o->outs.count > cap)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "%u outputs", o->outs.count);
    for (uint32_t k = 0; k < o->outs.count; k++)
        if ((st = def_tensor(c, tout(c, o, k), &outs[k]))) return st;
    return KS_STATUS_OK;
}

/* Emits op over ins with the op's single output. */
static ks_status emit_single(imp *c, const opc *o, uint32_t op, uint32_t nin, const int32_t *ins,
                             ks__node **node_out) {
    int32_t out;
    ks_status st;
    if (o->outs.count != 1) return op_fail(c, KS_STATUS_INVALID_MODEL, "%u outputs", o->outs.count);
    if ((st = def_tensor(c, tout(c, o, 0), &out))) return st;
    return emit(c, op, nin, ins, 1, &out, node_out);
}

/* Emits op with TFLite inputs [first, first + n) (absent ones as -1) and all outputs. */
static ks_status simple(imp *c, const opc *o, uint32_t op, uint32_t first, uint32_t n,
                        uint32_t min_n, ks__node **node_out) {
    int32_t ins[64], outs[64];
    ks_status st;
    if (o->ins.count < first + min_n || n > 64)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "%u inputs", o->ins.count);
    for (uint32_t k = 0; k < n; k++) {
        if (k < min_n) {
            if ((st = req_in(c, o, first + k, &ins[k]))) return st;
        } else if ((st = in_id(c, o, first + k, &ins[k]))) {
            return st;
        }
    }
    if ((st = def_outputs(c, o, outs, 64))) return st;
    return emit(c, op, n, ins, o->outs.count, outs, node_out);
}

/* ---- individual ops ---- */

static ks_status conv_2d(imp *c, const opc *o) {
    win_opts wo = {0};
    tdesc x, w;
    ks__node *n;
    ks_status st;
    const optf f[] = {{OF_I8, 0, 0, &wo.pad}, {OF_I32, 1, 1, &wo.sw}, {OF_I32, 2, 1, &wo.sh},
                      {OF_I8, 3, 0, &wo.act}, {OF_I32, 4, 1, &wo.dw}, {OF_I32, 5, 1, &wo.dh}};
    if ((st = read_opts(c, o, OPT_CONV2D, f, NUM_OPTS(f))) || (st = map_window(c, &wo))) return st;
    if ((st = tensor_desc_of_input(c, o, 0, &x)) || (st = tensor_desc_of_input(c, o, 1, &w)))
        return st;
    if (w.rank != 4 || w.dims[3] <= 0)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "weights of rank %d", w.rank);
    int32_t groups = 1;
    if (x.rank == 4 && x.dims[3] > 0) {
        if (x.dims[3] % w.dims[3] != 0)
            return op_fail(c, KS_STATUS_INVALID_MODEL, "%lld input channels, weights take %lld",
                           (long long)x.dims[3], (long long)w.dims[3]);
        groups = (int32_t)(x.dims[3] / w.dims[3]);
    }
    if ((st = simple(c, o, KS_OP_CONV2D, 0, 3, 2, &n))) return st;
    set_conv_ip(n, &wo, groups);
    return KS_STATUS_OK;
}

/* IR tensor holding depthwise weights [1,KH,KW,C] re-laid out as OHWI [C,KH,KW,1]. */
static ks_status depthwise_weights(imp *c, const opc *o, int32_t *id_out) {
    tdesc w;
    cview cv;
    ks_status st;
    char *name = NULL;
    int32_t widx = tin(c, o, 1), id;
    static const int32_t axis_map[4] = {3, 1, 2, 0};
    if ((st = tensor_desc_of_input(c, o, 1, &w))) return st;
    if (w.rank != 4 || w.dims[0] != 1 || w.dims[1] < 0 || w.dims[2] < 0 || w.dims[3] < 0)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "depthwise weights must be [1,KH,KW,C]");
    int64_t dims[4] = {w.dims[3], w.dims[1], w.dims[2], 1};
    if ((st = get_const(c, widx, &cv))) return st;
    if (!cv.data) {
        /* Runtime weights: transpose in the graph. */
        int32_t src, tr;
        ks__node *n;
        if ((st = use_tensor(c, widx, &src))) return st;
        name = ks__alloc(&c->g->alloc, w.name_len + 8);
        if (!name) return oom(c);
        copy_printable(name, w.name_len + 1, w.name, w.name_len);
        strcat(name, "/ohwi");
        st = ks__graph_add_tensor(c->g, name, w.dtype, 4, dims, &tr);
        ks__free(&c->g->alloc, name);
        if (st) return oom(c);
        if ((st = copy_quant(c, widx, &w, tr, axis_map))) return st;
        if ((st = emit(c, KS_OP_TRANSPOSE, 1, &src, 1, &tr, &n))) return st;
        n->ip[0] = 4;
        n->ip[1] = 3;
        n->ip[2] = 1;
        n->ip[3] = 2;
        n->ip[4] = 0;
        *id_out = tr;
        return KS_STATUS_OK;
    }
    size_t esz = ks_dtype_size(cv.dtype);
    size_t plane = (size_t)(w.dims[1] * w.dims[2]);
    size_t ch = (size_t)w.dims[3];
    if (cv.size_bytes != plane * ch * esz)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "depthwise weights hold %zu bytes",
                       cv.size_bytes);
    uint8_t *t = ks__alloc_aligned(&c->g->alloc, cv.size_bytes ? cv.size_bytes : 1, 64);
    if (!t) return oom(c);
    for (size_t p = 0; p < plane; p++)
        for (size_t k = 0; k < ch; k++)
            memcpy(t + (k * plane + p) * esz, cv.data + (p * ch + k) * esz, esz);
    name = dup_str(c, w.name, w.name_len);
    if (!name) {
        ks__free(&c->g->alloc, t);
        return oom(c);
    }
    st = ks__graph_add_tensor(c->g, name, cv.dtype, 4, dims, &id);
    ks__free(&c->g->alloc, name);
    if (st) {
        ks__free(&c->g->alloc, t);
        return oom(c);
    }
    if ((st = check_const_budget(c, cv.size_bytes))) {
        ks__free(&c->g->alloc, t);
        return st;
    }
    ks__graph_set_const(c->g, id, t, cv.size_bytes, false); /* takes ownership; cannot fail */
    if (cv.dtype == w.dtype && (st = copy_quant(c, widx, &w, id, axis_map))) return st;
    *id_out = id;
    return KS_STATUS_OK;
}

static ks_status depthwise_conv_2d(imp *c, const opc *o) {
    win_opts wo = {0};
    int32_t mult = 1, ins[3];
    tdesc x, w;
    ks__node *n;
    ks_status st;
    const optf f[] = {{OF_I8, 0, 0, &wo.pad}, {OF_I32, 1, 1, &wo.sw}, {OF_I32, 2, 1, &wo.sh},
                      {OF_I32, 3, 1, &mult},  {OF_I8, 4, 0, &wo.act}, {OF_I32, 5, 1, &wo.dw},
                      {OF_I32, 6, 1, &wo.dh}};
    if ((st = read_opts(c, o, OPT_DEPTHWISE, f, NUM_OPTS(f))) || (st = map_window(c, &wo)))
        return st;
    if ((st = tensor_desc_of_input(c, o, 0, &x)) || (st = tensor_desc_of_input(c, o, 1, &w)))
        return st;
    if (w.rank != 4 || w.dims[3] <= 0)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "depthwise weights of rank %d", w.rank);
    int64_t cout = w.dims[3], cin;
    if (x.rank == 4 && x.dims[3] > 0)
        cin = x.dims[3];
    else if (mult > 0 && cout % mult == 0)
        cin = cout / mult;
    else
        return op_fail(c, KS_STATUS_UNSUPPORTED, "input channel count unknown");
    if (cout % cin != 0 || cin > INT32_MAX)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "%lld output channels for %lld inputs",
                       (long long)cout, (long long)cin);
    if (o->ins.count < 2) return op_fail(c, KS_STATUS_INVALID_MODEL, "%u inputs", o->ins.count);
    if ((st = req_in(c, o, 0, &ins[0])) || (st = depthwise_weights(c, o, &ins[1])) ||
        (st = in_id(c, o, 2, &ins[2])))
        return st;
    if ((st = emit_single(c, o, KS_OP_CONV2D, 3, ins, &n))) return st;
    set_conv_ip(n, &wo, (int32_t)cin);
    return KS_STATUS_OK;
}

static ks_status transpose_conv(imp *c, const opc *o) {
    win_opts wo = {.dh = 1, .dw = 1};
    int32_t ins[3];
    tdesc x, w;
    ks__node *n;
    ks_status st;
    const optf f[] = {{OF_I8, 0, 0, &wo.pad},
                      {OF_I32, 1, 1, &wo.sw},
                      {OF_I32, 2, 1, &wo.sh},
                      {OF_I8, 3, 0, &wo.act}};
    if ((st = read_opts(c, o, OPT_TRANSPOSE_CONV, f, NUM_OPTS(f))) || (st = map_window(c, &wo)))
        return st;
    if (o->ins.count < 3) return op_fail(c, KS_STATUS_INVALID_MODEL, "%u inputs", o->ins.count);
    if ((st = tensor_desc_of_input(c, o, 2, &x)) || (st = tensor_desc_of_input(c, o, 1, &w)))
        return st;
    int64_t oshape[8];
    uint32_t on = 0;
    if ((st = const_ints(c, o, 0, oshape, 8, &on))) return st;
    if (on != 4 || w.rank != 4)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "output_shape of %u values", on);
    /* TFLite derives the padding from the requested output size; express it explicitly when the
     * input size is known so that any output size is honoured. */
    int32_t pads[4] = {0, 0, 0, 0}, out_pad[2] = {0, 0};
    bool explicit_pads = x.rank == 4 && x.dims[1] > 0 && x.dims[2] > 0;
    for (int a = 0; a < 2 && explicit_pads; a++) {
        int64_t in = x.dims[1 + a], k = w.dims[1 + a], s = a == 0 ? wo.sh : wo.sw;
        int64_t total = (in - 1) * s + k - oshape[1 + a];
        if (oshape[1 + a] <= 0 || total > INT32_MAX || total < INT32_MIN)
            return op_fail(c, KS_STATUS_INVALID_MODEL, "output size %lld",
                           (long long)oshape[1 + a]);
        if (total < 0) {
            out_pad[a] = (int32_t)-total;
        } else if (wo.pad_mode == KS_PAD_SAME_UPPER) {
            pads[a] = (int32_t)(total / 2);
            pads[2 + a] = (int32_t)(total - total / 2);
        } else {
            pads[2 + a] = (int32_t)total; /* VALID: TFLite crops at the bottom/right */
        }
    }
    if ((st = req_in(c, o, 2, &ins[0])) || (st = req_in(c, o, 1, &ins[1])) ||
        (st = in_id(c, o, 3, &ins[2])))
        return st;
    if ((st = emit_single(c, o, KS_OP_CONV2D_TRANSPOSE, 3, ins, &n))) return st;
    n->ip[0] = wo.sh;
    n->ip[1] = wo.sw;
    if (explicit_pads) {
        n->ip[2] = pads[0];
        n->ip[3] = pads[1];
        n->ip[4] = pads[2];
        n->ip[5] = pads[3];
        n->ip[6] = KS_PAD_EXPLICIT;
        n->ip[8] = out_pad[0];
        n->ip[9] = out_pad[1];
    } else {
        n->ip[6] = wo.pad_mode;
    }
    n->ip[7] = wo.ks_act;
    return KS_STATUS_OK;
}

static ks_status pool_2d(imp *c, const opc *o, int32_t kind) {
    win_opts wo = {.dh = 1, .dw = 1};
    int32_t fw = 0, fh = 0;
    ks__node *n;
    ks_status st;
    const optf f[] = {{OF_I8, 0, 0, &wo.pad}, {OF_I32, 1, 1, &wo.sw}, {OF_I32, 2, 1, &wo.sh},
                      {OF_I32, 3, 0, &fw},    {OF_I32, 4, 0, &fh},    {OF_I8, 5, 0, &wo.act}};
    if ((st = read_opts(c, o, OPT_POOL2D, f, NUM_OPTS(f))) || (st = map_window(c, &wo))) return st;
    if (fw < 1 || fh < 1 || fw > 65536 || fh > 65536)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "filter %dx%d", fh, fw);
    if ((st = simple(c, o, KS_OP_POOL2D, 0, 1, 1, &n))) return st;
    n->ip[0] = fh;
    n->ip[1] = fw;
    n->ip[2] = wo.sh;
    n->ip[3] = wo.sw;
    n->ip[8] = wo.pad_mode;
    n->ip[9] = kind;
    n->ip[10] = 0; /* TFLite averages over the valid (unpadded) window */
    n->ip[11] = wo.ks_act;
    return KS_STATUS_OK;
}

static ks_status fully_connected(imp *c, const opc *o) {
    int8_t act = 0, fmt = 0;
    bool keep = false;
    int32_t ks_act;
    ks__node *n;
    ks_status st;
    const optf f[] = {{OF_I8, 0, 0, &act}, {OF_I8, 1, 0, &fmt}, {OF_BOOL, 2, 0, &keep}};
    if ((st = read_opts(c, o, OPT_FC, f, NUM_OPTS(f)))) return st;
    if (fmt != 0) return op_fail(c, KS_STATUS_UNSUPPORTED, "weights_format %d", fmt);
    if ((st = map_act(c, act, &ks_act))) return st;
    if ((st = simple(c, o, KS_OP_FULLY_CONNECTED, 0, 3, 2, &n))) return st;
    n->ip[0] = ks_act;
    n->ip[1] = keep ? 1 : 0;
    return KS_STATUS_OK;
}

static ks_status binary(imp *c, const opc *o, uint32_t op, uint8_t opt_type) {
    int8_t act = 0;
    int32_t ks_act = 0;
    ks__node *n;
    ks_status st;
    if (opt_type) {
        const optf f[] = {{OF_I8, 0, 0, &act}};
        if ((st = read_opts(c, o, opt_type, f, 1)) || (st = map_act(c, act, &ks_act))) return st;
    }
    if ((st = simple(c, o, op, 0, 2, 2, &n))) return st;
    n->ip[0] = ks_act;
    return KS_STATUS_OK;
}

static ks_status reshape(imp *c, const opc *o) {
    ks__fb_vec ns;
    ks__node *n;
    ks_status st;
    int32_t shape_idx = tin(c, o, 1);
    if ((st = want_opt(c, o, OPT_RESHAPE))) return st;
    if (!ks__fb_get_vec(&c->fb, &o->opt, 0, 4, &ns)) return opt_bad(c);
    if (shape_idx >= 0) {
        tdesc sd;
        if ((st = get_tdesc(c, shape_idx, &sd))) return st;
        /* A shape input is authoritative when it is a 1-D int tensor. */
        if (sd.rank == 1 && (sd.dtype == KS_DTYPE_I32 || sd.dtype == KS_DTYPE_I64)) {
            if ((st = simple(c, o, KS_OP_RESHAPE, 0, 2, 2, &n))) return st;
            n->ip[9] = 1; /* TFLite: 0 is a literal size */
            return KS_STATUS_OK;
        }
    }
    int64_t dims[KS_MAX_RANK];
    int32_t rank;
    if (ns.present) {
        if (ns.count > KS_MAX_RANK)
            return op_fail(c, KS_STATUS_UNSUPPORTED, "new_shape of rank %u", ns.count);
        rank = (int32_t)ns.count;
        for (uint32_t i = 0; i < ns.count; i++)
            dims[i] = ks__fb_vec_i32(&c->fb, &ns, i);
    } else {
        tdesc od;
        if ((st = get_tdesc(c, tout(c, o, 0), &od))) return st;
        rank = od.rank;
        for (int32_t i = 0; i < rank; i++)
            dims[i] = od.dims[i];
    }
    if ((st = simple(c, o, KS_OP_RESHAPE, 0, 1, 1, &n))) return st;
    n->ip[0] = rank;
    for (int32_t i = 0; i < rank; i++) {
        if (dims[i] < -1 || dims[i] > INT32_MAX)
            return op_fail(c, KS_STATUS_INVALID_MODEL, "new_shape[%d] = %lld", i,
                           (long long)dims[i]);
        n->ip[1 + i] = (int32_t)dims[i];
    }
    n->ip[9] = 1;
    return KS_STATUS_OK;
}

static ks_status resize(imp *c, const opc *o, int32_t mode) {
    bool align = false, half = false;
    ks__node *n;
    ks_status st;
    /* ResizeBilinearOptions keep two deprecated fields before align_corners. */
    uint32_t first = mode == 1 ? 2 : 0;
    const optf f[] = {{OF_BOOL, first, 0, &align}, {OF_BOOL, first + 1, 0, &half}};
    if ((st = read_opts(c, o, mode == 1 ? OPT_RESIZE_BILINEAR : OPT_RESIZE_NEAREST, f, 2)))
        return st;
    if (align && half)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "align_corners and half_pixel_centers");
    if ((st = simple(c, o, KS_OP_RESIZE, 0, 2, 2, &n))) return st;
    n->ip[0] = mode;
    if (mode == 1) {
        n->ip[1] = align  ? KS_RESIZE_ALIGN_CORNERS
                   : half ? KS_RESIZE_HALF_PIXEL
                          : KS_RESIZE_ASYMMETRIC;
    } else {
        /* TFLite nearest: align_corners rounds (half away from zero), otherwise floors, with
         * the +0.5 offset when half_pixel_centers. */
        n->ip[1] = align  ? KS_RESIZE_ALIGN_CORNERS
                   : half ? KS_RESIZE_TF_HALF_PIXEL_FOR_NN
                          : KS_RESIZE_ASYMMETRIC;
        n->ip[2] = align ? 1 : 2;
    }
    return KS_STATUS_OK;
}

static ks_status pad_op(imp *c, const opc *o, int32_t code) {
    ks__node *n;
    ks_status st;
    int8_t mode = 0;
    if (code == TFL_MIRROR_PAD) {
        const optf f[] = {{OF_I8, 0, 0, &mode}};
        if ((st = read_opts(c, o, OPT_MIRROR_PAD, f, 1))) return st;
        if (mode != 0 && mode != 1) return op_fail(c, KS_STATUS_INVALID_MODEL, "mode %d", mode);
    }
    if ((st = simple(c, o, KS_OP_PAD, 0, code == TFL_PADV2 ? 3 : 2, 2, &n))) return st;
    n->ip[0] = code == TFL_MIRROR_PAD ? (mode == 0 ? 1 : 3) : 0;
    n->fp[0] = 0.0f; /* TFLite pads with real 0 (the zero point when quantized) */
    return KS_STATUS_OK;
}

static ks_status concat(imp *c, const opc *o) {
    int32_t axis = 0, ks_act;
    int8_t act = 0;
    ks__node *n;
    ks_status st;
    const optf f[] = {{OF_I32, 0, 0, &axis}, {OF_I8, 1, 0, &act}};
    if ((st = read_opts(c, o, OPT_CONCAT, f, 2)) || (st = map_act(c, act, &ks_act))) return st;
    if (o->ins.count < 1 || o->ins.count > 64)
        return op_fail(c, KS_STATUS_UNSUPPORTED, "%u inputs (1..64 supported)", o->ins.count);
    if ((st = simple(c, o, KS_OP_CONCAT, 0, o->ins.count, o->ins.count, &n))) return st;
    n->ip[0] = axis;
    n->ip[1] = ks_act;
    return KS_STATUS_OK;
}

static ks_status unary(imp *c, const opc *o, uint32_t op) {
    ks__node *n;
    return simple(c, o, op, 0, 1, 1, &n);
}

static ks_status softmax(imp *c, const opc *o, uint32_t op) {
    float beta = 1.0f;
    ks__node *n;
    ks_status st;
    if (op == KS_OP_SOFTMAX) {
        const optf f[] = {{OF_F32, 0, 0, &beta}};
        if ((st = read_opts(c, o, OPT_SOFTMAX, f, 1))) return st;
        if (!isfinite(beta) || beta == 0.0f)
            return op_fail(c, KS_STATUS_UNSUPPORTED, "beta %g", (double)beta);
    }
    if ((st = simple(c, o, op, 0, 1, 1, &n))) return st;
    n->ip[0] = -1;
    n->fp[0] = beta;
    return KS_STATUS_OK;
}

static ks_status leaky_relu(imp *c, const opc *o) {
    float alpha = 0.0f;
    ks__node *n;
    ks_status st;
    const optf f[] = {{OF_F32, 0, 0, &alpha}};
    if ((st = read_opts(c, o, OPT_LEAKY_RELU, f, 1))) return st;
    if ((st = simple(c, o, KS_OP_LEAKY_RELU, 0, 1, 1, &n))) return st;
    n->fp[0] = alpha;
    return KS_STATUS_OK;
}

static ks_status reduce(imp *c, const opc *o, int32_t kind) {
    bool keep = false;
    int64_t axes[8];
    uint32_t na = 0;
    ks__node *n;
    ks_status st;
    const optf f[] = {{OF_BOOL, 0, 0, &keep}};
    if ((st = read_opts(c, o, OPT_REDUCER, f, 1))) return st;
    if ((st = const_ints(c, o, 1, axes, 8, &na))) return st;
    if (na == 0) return op_fail(c, KS_STATUS_UNSUPPORTED, "empty axes (identity reduction)");
    if ((st = simple(c, o, KS_OP_REDUCE, 0, 1, 1, &n))) return st;
    n->ip[0] = kind;
    n->ip[1] = keep ? 1 : 0;
    n->ip[2] = (int32_t)na;
    for (uint32_t i = 0; i < na; i++) {
        if (axes[i] < -KS_MAX_RANK || axes[i] >= KS_MAX_RANK)
            return op_fail(c, KS_STATUS_INVALID_MODEL, "axis %lld", (long long)axes[i]);
        n->ip[3 + i] = (int32_t)axes[i];
    }
    return KS_STATUS_OK;
}

/* A constant scalar axis input (shape [] or [1]). */
static ks_status axis_input(imp *c, const opc *o, uint32_t k, int32_t *axis) {
    int64_t v[1];
    uint32_t nv = 0;
    ks_status st = const_ints(c, o, k, v, 1, &nv);
    if (st) return st;
    if (nv != 1 || v[0] < -KS_MAX_RANK || v[0] >= KS_MAX_RANK)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "bad axis input");
    *axis = (int32_t)v[0];
    return KS_STATUS_OK;
}

static ks_status arg_minmax(imp *c, const opc *o, uint32_t op) {
    int32_t axis;
    ks__node *n;
    ks_status st;
    if ((st = axis_input(c, o, 1, &axis))) return st;
    if ((st = simple(c, o, op, 0, 1, 1, &n))) return st;
    n->ip[0] = axis;
    n->ip[1] = 0;
    return KS_STATUS_OK;
}

static ks_status block_op(imp *c, const opc *o, uint32_t op, uint8_t opt_type) {
    int32_t block = 0;
    ks__node *n;
    ks_status st;
    const optf f[] = {{OF_I32, 0, 0, &block}};
    if ((st = read_opts(c, o, opt_type, f, 1))) return st;
    if (block < 1 || block > 65536) return op_fail(c, KS_STATUS_INVALID_MODEL, "block %d", block);
    if ((st = simple(c, o, op, 0, 1, 1, &n))) return st;
    n->ip[0] = block;
    n->ip[1] = 0; /* DCR */
    return KS_STATUS_OK;
}

static ks_status strided_slice(imp *c, const opc *o) {
    int32_t bm = 0, em = 0, ell = 0, nam = 0, sm = 0, ins[5];
    bool offset = false;
    ks__node *n;
    ks_status st;
    const optf f[] = {{OF_I32, 0, 0, &bm},  {OF_I32, 1, 0, &em}, {OF_I32, 2, 0, &ell},
                      {OF_I32, 3, 0, &nam}, {OF_I32, 4, 0, &sm}, {OF_BOOL, 5, 0, &offset}};
    if ((st = read_opts(c, o, OPT_STRIDED_SLICE, f, NUM_OPTS(f)))) return st;
    if (ell || nam || offset)
        return op_fail(c, KS_STATUS_UNSUPPORTED, "ellipsis_mask %d / new_axis_mask %d / offset %d",
                       ell, nam, offset);
    if (o->ins.count < 3) return op_fail(c, KS_STATUS_INVALID_MODEL, "%u inputs", o->ins.count);
    if ((st = req_in(c, o, 0, &ins[0])) || (st = req_in(c, o, 1, &ins[1])) ||
        (st = req_in(c, o, 2, &ins[2])) || (st = in_id(c, o, 3, &ins[4])))
        return st;
    ins[3] = -1;
    if ((st = emit_single(c, o, KS_OP_SLICE, ins[4] >= 0 ? 5 : 3, ins, &n))) return st;
    n->ip[0] = bm;
    n->ip[1] = em;
    n->ip[2] = sm;
    return KS_STATUS_OK;
}

/* Adds an I32 constant tensor named "<output>/<suffix>". */
static ks_status add_i32_const(imp *c, const char *suffix, const int32_t *vals, uint32_t n,
                               int32_t *id_out) {
    char name[256];
    int64_t dims[1] = {n};
    ks_status st;
    snprintf(name, sizeof(name), "%s/%s", c->out_name, suffix);
    if ((st = ks__graph_add_tensor(c->g, name, KS_DTYPE_I32, 1, dims, id_out))) return oom(c);
    if (ks__graph_set_const(c->g, *id_out, vals, n * sizeof(int32_t), true)) return oom(c);
    return KS_STATUS_OK;
}

static ks_status slice(imp *c, const opc *o) {
    int64_t begin[KS_MAX_RANK], size[KS_MAX_RANK];
    int32_t ends[KS_MAX_RANK], ins[3];
    uint32_t nb = 0, ns = 0;
    ks__node *n;
    ks_status st;
    if ((st = const_ints(c, o, 1, begin, KS_MAX_RANK, &nb)) ||
        (st = const_ints(c, o, 2, size, KS_MAX_RANK, &ns)))
        return st;
    if (nb != ns) return op_fail(c, KS_STATUS_INVALID_MODEL, "%u begins, %u sizes", nb, ns);
    for (uint32_t i = 0; i < nb; i++) {
        if (begin[i] < 0 || begin[i] > INT32_MAX || size[i] < -1 || size[i] > INT32_MAX)
            return op_fail(c, KS_STATUS_INVALID_MODEL, "begin %lld size %lld", (long long)begin[i],
                           (long long)size[i]);
        int64_t e = size[i] == -1 ? INT32_MAX : begin[i] + size[i];
        ends[i] = (int32_t)(e > INT32_MAX ? INT32_MAX : e);
    }
    if ((st = req_in(c, o, 0, &ins[0])) || (st = req_in(c, o, 1, &ins[1]))) return st;
    if ((st = add_i32_const(c, "ends", ends, nb, &ins[2]))) return st;
    return emit_single(c, o, KS_OP_SLICE, 3, ins, &n);
}

static ks_status pack_unpack(imp *c, const opc *o, bool pack) {
    int32_t count = 0, axis = 0;
    ks__node *n;
    ks_status st;
    const optf f[] = {{OF_I32, 0, 0, &count}, {OF_I32, 1, 0, &axis}};
    if ((st = read_opts(c, o, pack ? OPT_PACK : OPT_UNPACK, f, 2))) return st;
    if (pack) {
        if (o->ins.count < 1 || o->ins.count > 64)
            return op_fail(c, KS_STATUS_UNSUPPORTED, "%u inputs (1..64 supported)", o->ins.count);
        if ((st = simple(c, o, KS_OP_PACK, 0, o->ins.count, o->ins.count, &n))) return st;
    } else {
        if ((st = simple(c, o, KS_OP_UNPACK, 0, 1, 1, &n))) return st;
    }
    n->ip[0] = axis;
    return KS_STATUS_OK;
}

static ks_status gather(imp *c, const opc *o) {
    int32_t axis = 0, batch_dims = 0;
    ks__node *n;
    ks_status st;
    const optf f[] = {{OF_I32, 0, 0, &axis}, {OF_I32, 1, 0, &batch_dims}};
    if ((st = read_opts(c, o, OPT_GATHER, f, 2))) return st;
    if (batch_dims != 0) return op_fail(c, KS_STATUS_UNSUPPORTED, "batch_dims %d", batch_dims);
    if ((st = simple(c, o, KS_OP_GATHER, 0, 2, 2, &n))) return st;
    n->ip[0] = axis;
    return KS_STATUS_OK;
}

static ks_status transpose(imp *c, const opc *o) {
    int64_t perm[KS_MAX_RANK];
    uint32_t np = 0;
    ks__node *n;
    ks_status st;
    if ((st = const_ints(c, o, 1, perm, KS_MAX_RANK, &np))) return st;
    if ((st = simple(c, o, KS_OP_TRANSPOSE, 0, 1, 1, &n))) return st;
    n->ip[0] = (int32_t)np;
    for (uint32_t i = 0; i < np; i++) {
        if (perm[i] < 0 || perm[i] >= (int64_t)np)
            return op_fail(c, KS_STATUS_INVALID_MODEL, "perm[%u] = %lld", i, (long long)perm[i]);
        n->ip[1 + i] = (int32_t)perm[i];
    }
    return KS_STATUS_OK;
}

static ks_status squeeze(imp *c, const opc *o) {
    ks__fb_vec dims;
    ks__node *n;
    ks_status st;
    if ((st = want_opt(c, o, OPT_SQUEEZE))) return st;
    if (!ks__fb_get_vec(&c->fb, &o->opt, 0, 4, &dims)) return opt_bad(c);
    if (dims.count > KS_MAX_RANK)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "%u squeeze dims", dims.count);
    if ((st = simple(c, o, KS_OP_SQUEEZE, 0, 1, 1, &n))) return st;
    n->ip[0] = (int32_t)dims.count;
    for (uint32_t i = 0; i < dims.count; i++) {
        int32_t a = ks__fb_vec_i32(&c->fb, &dims, i);
        if (a < -KS_MAX_RANK || a >= KS_MAX_RANK)
            return op_fail(c, KS_STATUS_INVALID_MODEL, "squeeze dim %d", a);
        n->ip[1 + i] = a;
    }
    return KS_STATUS_OK;
}

static ks_status expand_dims(imp *c, const opc *o) {
    int32_t axis;
    ks__node *n;
    ks_status st;
    if ((st = axis_input(c, o, 1, &axis))) return st;
    if ((st = simple(c, o, KS_OP_UNSQUEEZE, 0, 1, 1, &n))) return st;
    n->ip[0] = 1;
    n->ip[1] = axis;
    return KS_STATUS_OK;
}

static ks_status split(imp *c, const opc *o) {
    int32_t axis, num = 0, in, outs[64];
    ks__node *n;
    ks_status st;
    const optf f[] = {{OF_I32, 0, 0, &num}};
    if ((st = read_opts(c, o, OPT_SPLIT, f, 1))) return st;
    if (num != (int32_t)o->outs.count)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "num_splits %d for %u outputs", num,
                       o->outs.count);
    if ((st = axis_input(c, o, 0, &axis)) || (st = req_in(c, o, 1, &in))) return st;
    if ((st = def_outputs(c, o, outs, 64))) return st;
    if ((st = emit(c, KS_OP_SPLIT, 1, &in, o->outs.count, outs, &n))) return st;
    n->ip[0] = axis;
    return KS_STATUS_OK;
}

static ks_status split_v(imp *c, const opc *o) {
    int32_t axis, ins[2], outs[64], sizes32[64];
    int64_t sizes[64];
    uint32_t ns = 0;
    tdesc x;
    ks__node *n;
    ks_status st;
    if ((st = want_opt(c, o, OPT_SPLIT_V))) return st;
    if ((st = axis_input(c, o, 2, &axis)) || (st = tensor_desc_of_input(c, o, 0, &x))) return st;
    if ((st = req_in(c, o, 0, &ins[0]))) return st;
    cview cv;
    if ((st = get_const(c, tin(c, o, 1), &cv))) return st;
    int64_t dim = -1;
    int32_t a = axis < 0 ? axis + x.rank : axis;
    if (a >= 0 && a < x.rank) dim = x.dims[a];
    if (cv.data && (st = const_ints(c, o, 1, sizes, 64, &ns))) return st;
    /* Resolve a -1 entry at conversion time when the axis size is known. */
    int32_t unknown = -1;
    int64_t known = 0;
    for (uint32_t i = 0; cv.data && i < ns; i++) {
        if (sizes[i] == -1 && unknown < 0)
            unknown = (int32_t)i;
        else if (sizes[i] < 0 || sizes[i] > INT32_MAX)
            return op_fail(c, KS_STATUS_INVALID_MODEL, "size_splits[%u] = %lld", i,
                           (long long)sizes[i]);
        else
            known += sizes[i];
    }
    if (cv.data && unknown >= 0 && dim >= known) {
        sizes[unknown] = dim - known;
        for (uint32_t i = 0; i < ns; i++)
            sizes32[i] = (int32_t)sizes[i];
        if ((st = add_i32_const(c, "sizes", sizes32, ns, &ins[1]))) return st;
    } else if ((st = req_in(c, o, 1, &ins[1]))) {
        return st;
    }
    if ((st = def_outputs(c, o, outs, 64))) return st;
    if ((st = emit(c, KS_OP_SPLIT, 2, ins, o->outs.count, outs, &n))) return st;
    n->ip[0] = axis;
    return KS_STATUS_OK;
}

static ks_status batch_matmul(imp *c, const opc *o) {
    bool adj_x = false, adj_y = false;
    ks__node *n;
    ks_status st;
    const optf f[] = {{OF_BOOL, 0, 0, &adj_x}, {OF_BOOL, 1, 0, &adj_y}};
    if ((st = read_opts(c, o, OPT_BATCH_MATMUL, f, 2))) return st;
    if ((st = simple(c, o, KS_OP_MATMUL, 0, 2, 2, &n))) return st;
    n->ip[0] = adj_x;
    n->ip[1] = adj_y;
    return KS_STATUS_OK;
}

/* Ops folded at conversion time have exactly one input and one output. */
static ks_status fold_io(imp *c, const opc *o, cview *in) {
    if (o->outs.count != 1 || o->ins.count != 1)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "%u inputs / %u outputs", o->ins.count,
                       o->outs.count);
    return get_const(c, tin(c, o, 0), in);
}

/* The folded op's output, which must not be defined yet. */
static ks_status fold_target(imp *c, int32_t oi, tdesc *od) {
    ks_status st = get_tdesc(c, oi, od);
    if (st) return st;
    if (c->map[oi] >= 0 || c->fold[oi].data || (c->state[oi] & TSTATE_PRODUCED))
        return op_fail(c, KS_STATUS_INVALID_MODEL, "output tensor %d is defined twice", oi);
    return KS_STATUS_OK;
}

/* Records data (owned from here on) as the constant value of output oi. */
static void fold_store(imp *c, int32_t oi, uint8_t *data, size_t size_bytes, ks_dtype dtype) {
    c->fold[oi].data = data;
    c->fold[oi].size_bytes = size_bytes;
    c->fold[oi].dtype = dtype;
    c->state[oi] |= TSTATE_PRODUCED;
}

/* Folds a DENSIFY of a constant: the output becomes a (dense) constant. */
static ks_status densify(imp *c, const opc *o) {
    cview cv;
    ks_status st;
    int32_t oi = tout(c, o, 0);
    tdesc od;
    if ((st = fold_io(c, o, &cv))) return st;
    if (!cv.data) return op_fail(c, KS_STATUS_UNSUPPORTED, "densify of a non-constant tensor");
    if ((st = fold_target(c, oi, &od))) return st;
    int64_t n = ks__numel(od.rank, od.dims);
    if (od.dtype != cv.dtype || n < 0 || (uint64_t)n * ks_dtype_size(od.dtype) != cv.size_bytes)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "output does not match the input");
    uint8_t *copy = ks__alloc(&c->g->alloc, cv.size_bytes ? cv.size_bytes : 1);
    if (!copy) return oom(c);
    if ((st = check_const_budget(c, cv.size_bytes))) {
        ks__free(&c->g->alloc, copy);
        return st;
    }
    memcpy(copy, cv.data, cv.size_bytes);
    fold_store(c, oi, copy, cv.size_bytes, cv.dtype);
    return KS_STATUS_OK;
}

/* DEQUANTIZE: fp16 constants are converted now; everything else becomes a node. */
static ks_status dequantize(imp *c, const opc *o) {
    cview cv;
    ks_status st;
    int32_t oi = tout(c, o, 0);
    tdesc od;
    if ((st = fold_io(c, o, &cv))) return st;
    if (!cv.data || cv.dtype != KS_DTYPE_F16) return unary(c, o, KS_OP_DEQUANTIZE);
    if ((st = fold_target(c, oi, &od))) return st;
    size_t count = cv.size_bytes / 2;
    int64_t n = ks__numel(od.rank, od.dims);
    if (od.dtype != KS_DTYPE_F32 || n < 0 || (uint64_t)n != count)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "output does not match the fp16 input");
    if ((st = check_const_budget(c, count * 4))) return st;
    uint8_t *f = ks__alloc(&c->g->alloc, count ? count * 4 : 1);
    if (!f) return oom(c);
    for (size_t i = 0; i < count; i++) {
        float v = ks__f16_to_f32(ks__ld_u16(cv.data + 2 * i));
        memcpy(f + 4 * i, &v, 4);
    }
    fold_store(c, oi, f, count * 4, KS_DTYPE_F32);
    return KS_STATUS_OK;
}

/* ---- custom ops ---- */

static ks_status custom_transpose_conv_bias(imp *c, const opc *o) {
    ks__node *n;
    ks_status st;
    /* custom_options is a raw TfLiteTransposeConvParams: int32 padding (1 SAME, 2 VALID),
     * int32 stride_width, int32 stride_height. */
    if (o->custom_opts_len < 12)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "custom options of %u bytes (need 12)",
                       o->custom_opts_len);
    int32_t padding = (int32_t)ks__ld_u32(o->custom_opts);
    int32_t sw = (int32_t)ks__ld_u32(o->custom_opts + 4);
    int32_t sh = (int32_t)ks__ld_u32(o->custom_opts + 8);
    if (padding != 1 && padding != 2)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "padding %d", padding);
    if ((st = check_stride(c, sh, sw, 1, 1))) return st;
    if ((st = simple(c, o, KS_OP_CONV2D_TRANSPOSE, 0, 3, 2, &n))) return st;
    n->ip[0] = sh;
    n->ip[1] = sw;
    n->ip[6] = padding == 1 ? KS_PAD_SAME_UPPER : KS_PAD_VALID;
    return KS_STATUS_OK;
}

static ks_status flex_options(imp *c, const opc *o, ks__flex_val *root) {
    if (!ks__flex_root(o->custom_opts, o->custom_opts_len, root) || root->type != KS_FLEX_MAP)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "custom options are not a FlexBuffer map");
    return KS_STATUS_OK;
}

static ks_status flex_find(imp *c, const ks__flex_val *map, const char *key, ks__flex_val *v,
                           bool *found) {
    if (!ks__flex_map_find(map, key, v, found))
        return op_fail(c, KS_STATUS_INVALID_MODEL, "malformed custom options map");
    return KS_STATUS_OK;
}

/* Integer option `key`; *found false leaves *out untouched. */
static ks_status flex_int(imp *c, const ks__flex_val *map, const char *key, int64_t lo, int64_t hi,
                          int32_t *out, bool *found) {
    ks__flex_val v;
    int64_t x;
    ks_status st = flex_find(c, map, key, &v, found);
    if (st || !*found) return st;
    if (!ks__flex_as_i64(&v, &x) || x < lo || x > hi)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "custom option '%s' invalid", key);
    *out = (int32_t)x;
    return KS_STATUS_OK;
}

static ks_status flex_float(imp *c, const ks__flex_val *map, const char *key, float *out,
                            bool *found) {
    ks__flex_val v;
    double x;
    ks_status st = flex_find(c, map, key, &v, found);
    if (st || !*found) return st;
    if (!ks__flex_as_f64(&v, &x) || !isfinite(x) || fabs(x) > 1e30)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "custom option '%s' invalid", key);
    *out = (float)x;
    return KS_STATUS_OK;
}

static ks_status custom_transform_landmarks(imp *c, const opc *o) {
    int32_t dims = 0;
    float scale = 1.0f;
    bool found;
    ks__node *n;
    ks_status st;
    if (o->version < 2) {
        ks__flex_val map;
        if ((st = flex_options(c, o, &map)) ||
            (st = flex_int(c, &map, "dimensions", 2, 3, &dims, &found)) ||
            (st = flex_float(c, &map, "scale", &scale, &found)))
            return st;
        if (dims == 0 || scale == 0.0f)
            return op_fail(c, KS_STATUS_INVALID_MODEL, "dimensions %d scale %g", dims,
                           (double)scale);
    }
    if ((st = simple(c, o, KS_OP_MP_TRANSFORM_LANDMARKS, 0, 2, 2, &n))) return st;
    n->ip[0] = dims;
    n->fp[0] = scale;
    return KS_STATUS_OK;
}

static ks_status custom_transform_tensor_bilinear(imp *c, const opc *o, bool v1_name) {
    int32_t oh = 0, ow = 0;
    bool found_h = false, found_w = false;
    ks__flex_val map;
    tdesc od;
    ks__node *n;
    ks_status st;
    if (o->custom_opts_len) {
        if ((st = flex_options(c, o, &map)) ||
            (st = flex_int(c, &map, "output_height", 1, 1 << 20, &oh, &found_h)) ||
            (st = flex_int(c, &map, "output_width", 1, 1 << 20, &ow, &found_w)))
            return st;
    }
    if (!found_h || !found_w) {
        if ((st = get_tdesc(c, tout(c, o, 0), &od))) return st;
        if (od.rank != 4 || od.dims[1] <= 0 || od.dims[2] <= 0 || od.dims[1] > (1 << 20) ||
            od.dims[2] > (1 << 20))
            return op_fail(c, KS_STATUS_INVALID_MODEL, "output size unknown");
        if (!found_h) oh = (int32_t)od.dims[1];
        if (!found_w) ow = (int32_t)od.dims[2];
    }
    if ((st = simple(c, o, KS_OP_MP_TRANSFORM_TENSOR_BILINEAR, 0, 2, 2, &n))) return st;
    n->ip[0] = oh;
    n->ip[1] = ow;
    n->ip[2] = (!v1_name && o->version >= 2) ? 1 : 0;
    return KS_STATUS_OK;
}

#define MP_L2M_MAX_WORDS 27 /* ip[5..31]: landmark indices < 864 */

static ks_status custom_landmarks_to_matrix(imp *c, const opc *o) {
    int32_t left = -1, right = -1, oh = 0, ow = 0;
    float scale_x = 1.0f, scale_y = 1.0f, target = 0.0f;
    bool found;
    uint32_t words[MP_L2M_MAX_WORDS] = {0}, num_words = 0, len;
    ks__flex_val map, subset, e;
    ks__node *n;
    ks_status st;
    if (o->version != 2)
        return op_fail(c, KS_STATUS_UNSUPPORTED, "Landmarks2TransformMatrix version %d",
                       o->version);
    if ((st = flex_options(c, o, &map)) ||
        (st = flex_int(c, &map, "left_rotation_idx", 0, INT32_MAX, &left, &found)) ||
        (st = flex_int(c, &map, "right_rotation_idx", 0, INT32_MAX, &right, &found)) ||
        (st = flex_int(c, &map, "output_height", 1, 1 << 20, &oh, &found)) ||
        (st = flex_int(c, &map, "output_width", 1, 1 << 20, &ow, &found)) ||
        (st = flex_float(c, &map, "scale_x", &scale_x, &found)) ||
        (st = flex_float(c, &map, "scale_y", &scale_y, &found)) ||
        (st = flex_float(c, &map, "target_rotation_radians", &target, &found)))
        return st;
    if (left < 0 || right < 0 || oh <= 0 || ow <= 0 || !(scale_x > 0.0f) || !(scale_y > 0.0f))
        return op_fail(c, KS_STATUS_INVALID_MODEL,
                       "options left %d right %d output %dx%d scale %g,%g", left, right, oh, ow,
                       (double)scale_x, (double)scale_y);
    if (!ks__flex_map_find(&map, "subset_idxs", &subset, &found) || !found ||
        !ks__flex_vec_len(&subset, &len) || len == 0)
        return op_fail(c, KS_STATUS_INVALID_MODEL, "subset_idxs missing or malformed");
    /* Only the set of subset landmarks matters (their bounding box), so it is stored as a
     * bitmask; see mediapipe.c. MediaPipe pairs an odd last entry with itself, which adds
     * nothing to the set. */
    for (uint32_t i = 0; i < len; i++) {
        int64_t v;
        if (!ks__flex_vec_at(&subset, i, &e) || !ks__flex_as_i64(&e, &v) || v < 0)
            return op_fail(c, KS_STATUS_INVALID_MODEL, "subset_idxs[%u] invalid", i);
        if (v >= 32 * MP_L2M_MAX_WORDS)
            return op_fail(c, KS_STATUS_UNSUPPORTED, "subset index %lld (at most %d supported)",
                           (long long)v, 32 * MP_L2M_MAX_WORDS - 1);
        words[v / 32] |= 1u << (v % 32);
        if ((uint32_t)(v / 32) + 1 > num_words) num_words = (uint32_t)(v / 32) + 1;
    }
    if ((st = simple(c, o, KS_OP_MP_LANDMARKS_TO_MATRIX, 0, 1, 1, &n))) return st;
    n->ip[0] = left;
    n->ip[1] = right;
    n->ip[2] = oh;
    n->ip[3] = ow;
    n->ip[4] = (int32_t)num_words;
    for (uint32_t i = 0; i < num_words; i++)
        n->ip[5 + i] = (int32_t)words[i];
    n->fp[0] = target;
    n->fp[1] = scale_x;
    n->fp[2] = scale_y;
    return KS_STATUS_OK;
}

static ks_status unsupported(imp *c) {
    ks__fmt(c->err, c->err_cap, "%s: op %s (node %u, output '%s') is not supported", c->src,
            c->op_name, c->node, c->out_name);
    return KS_STATUS_UNSUPPORTED;
}

static ks_status convert_custom(imp *c, const opc *o) {
    const char *name = o->custom ? o->custom : "";
    if (strcmp(name, "Convolution2DTransposeBias") == 0) return custom_transpose_conv_bias(c, o);
    if (strcmp(name, "TransformLandmarks") == 0) return custom_transform_landmarks(c, o);
    if (strcmp(name, "TransformTensorBilinear") == 0)
        return custom_transform_tensor_bilinear(c, o, false);
    if (strcmp(name, "TransformTensor") == 0) return custom_transform_tensor_bilinear(c, o, true);
    if (strcmp(name, "Landmarks2TransformMatrix") == 0) return custom_landmarks_to_matrix(c, o);
    return unsupported(c);
}

/* Ops that map one to one onto an IR op: all inputs required, all outputs defined; two-input
 * ops may carry a fused activation in options of type opt_type. */
typedef struct direct_op {
    int32_t code;
    uint32_t ir_op;
    uint8_t opt_type;
    uint8_t num_inputs;
} direct_op;

static const direct_op k_direct_ops[] = {
    {TFL_ADD, KS_OP_ADD, OPT_ADD, 2},
    {TFL_SUB, KS_OP_SUB, OPT_SUB, 2},
    {TFL_MUL, KS_OP_MUL, OPT_MUL, 2},
    {TFL_DIV, KS_OP_DIV, OPT_DIV, 2},
    {TFL_FLOOR_DIV, KS_OP_FLOOR_DIV, 0, 2},
    {TFL_FLOOR_MOD, KS_OP_FLOOR_MOD, 0, 2},
    {TFL_POW, KS_OP_POW, 0, 2},
    {TFL_MAXIMUM, KS_OP_MAXIMUM, 0, 2},
    {TFL_MINIMUM, KS_OP_MINIMUM, 0, 2},
    {TFL_EQUAL, KS_OP_EQUAL, 0, 2},
    {TFL_NOT_EQUAL, KS_OP_NOT_EQUAL, 0, 2},
    {TFL_GREATER, KS_OP_GREATER, 0, 2},
    {TFL_GREATER_EQUAL, KS_OP_GREATER_EQUAL, 0, 2},
    {TFL_LESS, KS_OP_LESS, 0, 2},
    {TFL_LESS_EQUAL, KS_OP_LESS_EQUAL, 0, 2},
    {TFL_PRELU, KS_OP_PRELU, 0, 2},
    {TFL_LOGISTIC, KS_OP_SIGMOID, 0, 1},
    {TFL_RELU, KS_OP_RELU, 0, 1},
    {TFL_RELU6, KS_OP_RELU6, 0, 1},
    {TFL_RELU_N1_TO_1, KS_OP_RELU_N1_TO_1, 0, 1},
    {TFL_TANH, KS_OP_TANH, 0, 1},
    {TFL_HARD_SWISH, KS_OP_HARD_SWISH, 0, 1},
    {TFL_EXP, KS_OP_EXP, 0, 1},
    {TFL_SQRT, KS_OP_SQRT, 0, 1},
    {TFL_RSQRT, KS_OP_RSQRT, 0, 1},
    {TFL_ABS, KS_OP_ABS, 0, 1},
    {TFL_NEG, KS_OP_NEG, 0, 1},
    {TFL_FLOOR, KS_OP_FLOOR, 0, 1},
    {TFL_CEIL, KS_OP_CEIL, 0, 1},
    {TFL_LOG, KS_OP_LOG, 0, 1},
    {TFL_CAST, KS_OP_CAST, 0, 1},
    {TFL_QUANTIZE, KS_OP_QUANTIZE, 0, 1},
    {TFL_SHAPE, KS_OP_SHAPE, 0, 1},
    {TFL_GATHER_ND, KS_OP_GATHER_ND, 0, 2},
    {TFL_TILE, KS_OP_TILE, 0, 2},
    {TFL_SELECT, KS_OP_WHERE, 0, 3},
    {TFL_SELECT_V2, KS_OP_WHERE, 0, 3},
    {TFL_SPACE_TO_BATCH_ND, KS_OP_SPACE_TO_BATCH_ND, 0, 3},
    {TFL_BATCH_TO_SPACE_ND, KS_OP_BATCH_TO_SPACE_ND, 0, 3},
};

static ks_status direct(imp *c, const opc *o, const direct_op *d) {
    ks__node *n;
    if (d->num_inputs == 2) return binary(c, o, d->ir_op, d->opt_type);
    return simple(c, o, d->ir_op, 0, d->num_inputs, d->num_inputs, &n);
}

static ks_status convert_op(imp *c, const opc *o) {
    for (size_t i = 0; i < sizeof(k_direct_ops) / sizeof(k_direct_ops[0]); i++)
        if (k_direct_ops[i].code == o->code) return direct(c, o, &k_direct_ops[i]);
    switch (o->code) {
    case TFL_CONV_2D:
        return conv_2d(c, o);
    case TFL_DEPTHWISE_CONV_2D:
        return depthwise_conv_2d(c, o);
    case TFL_TRANSPOSE_CONV:
        return transpose_conv(c, o);
    case TFL_MAX_POOL_2D:
        return pool_2d(c, o, 0);
    case TFL_AVERAGE_POOL_2D:
        return pool_2d(c, o, 1);
    case TFL_FULLY_CONNECTED:
        return fully_connected(c, o);
    case TFL_RESHAPE:
        return reshape(c, o);
    case TFL_RESIZE_BILINEAR:
        return resize(c, o, 1);
    case TFL_RESIZE_NEAREST_NEIGHBOR:
        return resize(c, o, 0);
    case TFL_PAD:
    case TFL_PADV2:
    case TFL_MIRROR_PAD:
        return pad_op(c, o, o->code);
    case TFL_CONCATENATION:
        return concat(c, o);
    case TFL_ELU: {
        ks__node *n;
        ks_status st = simple(c, o, KS_OP_ELU, 0, 1, 1, &n);
        if (!st) n->fp[0] = 1.0f;
        return st;
    }
    case TFL_DEQUANTIZE:
        return dequantize(c, o);
    case TFL_DENSIFY:
        return densify(c, o);
    case TFL_LEAKY_RELU:
        return leaky_relu(c, o);
    case TFL_SOFTMAX:
        return softmax(c, o, KS_OP_SOFTMAX);
    case TFL_LOG_SOFTMAX:
        return softmax(c, o, KS_OP_LOG_SOFTMAX);
    case TFL_MEAN:
        return reduce(c, o, 0);
    case TFL_SUM:
        return reduce(c, o, 1);
    case TFL_REDUCE_MAX:
        return reduce(c, o, 2);
    case TFL_REDUCE_MIN:
        return reduce(c, o, 3);
    case TFL_REDUCE_PROD:
        return reduce(c, o, 4);
    case TFL_ARG_MAX:
        return arg_minmax(c, o, KS_OP_ARG_MAX);
    case TFL_ARG_MIN:
        return arg_minmax(c, o, KS_OP_ARG_MIN);
    case TFL_DEPTH_TO_SPACE:
        return block_op(c, o, KS_OP_DEPTH_TO_SPACE, OPT_DEPTH_TO_SPACE);
    case TFL_SPACE_TO_DEPTH:
        return block_op(c, o, KS_OP_SPACE_TO_DEPTH, OPT_SPACE_TO_DEPTH);
    case TFL_STRIDED_SLICE:
        return strided_slice(c, o);
    case TFL_SLICE:
        return slice(c, o);
    case TFL_PACK:
        return pack_unpack(c, o, true);
    case TFL_UNPACK:
        return pack_unpack(c, o, false);
    case TFL_GATHER:
        return gather(c, o);
    case TFL_TRANSPOSE:
        return transpose(c, o);
    case TFL_SQUEEZE:
        return squeeze(c, o);
    case TFL_EXPAND_DIMS:
        return expand_dims(c, o);
    case TFL_SPLIT:
        return split(c, o);
    case TFL_SPLIT_V:
        return split_v(c, o);
    case TFL_BATCH_MATMUL:
        return batch_matmul(c, o);
    case TFL_CUSTOM:
        return convert_custom(c, o);
    default:
        return unsupported(c);
    }
}

/* Reads operator i and converts it. */
static ks_status import_op(imp *c, uint32_t i) {
    ks__fb_table op, oc;
    uint32_t opcode_index;
    int8_t dep_code = 0;
    opc o;
    ks_status st;
    char name_buf[48];
    memset(&o, 0, sizeof(o));
    c->node = i;
    c->op_name = "?";
    c->out_name[0] = 0;
    if (!ks__fb_vec_table(&c->fb, &c->ops, i, &op) ||
        !ks__fb_get_u32(&c->fb, &op, 0, 0, &opcode_index) ||
        !ks__fb_get_vec(&c->fb, &op, 1, 4, &o.ins) || !ks__fb_get_vec(&c->fb, &op, 2, 4, &o.outs) ||
        !ks__fb_get_u8(&c->fb, &op, 3, 0, &o.opt_type) ||
        !ks__fb_get_table(&c->fb, &op, 4, &o.opt) ||
        !ks__fb_get_str(&c->fb, &op, 5, &o.custom_opts, &o.custom_opts_len))
        return bad_fb(c, "an operator");
    if (opcode_index >= c->opcodes.count)
        return fail(c, KS_STATUS_INVALID_MODEL, "node %u: opcode index %u out of range (%u)", i,
                    opcode_index, c->opcodes.count);
    const uint8_t *cc;
    uint32_t cc_len;
    if (!ks__fb_vec_table(&c->fb, &c->opcodes, opcode_index, &oc) ||
        !ks__fb_get_i8(&c->fb, &oc, 0, 0, &dep_code) ||
        !ks__fb_get_str(&c->fb, &oc, 1, &cc, &cc_len) ||
        !ks__fb_get_i32(&c->fb, &oc, 2, 1, &o.version) ||
        !ks__fb_get_i32(&c->fb, &oc, 3, 0, &o.code))
        return bad_fb(c, "an operator code");
    /* Old files only fill the int8 code; new ones keep it at 127 for codes beyond it. */
    if (dep_code > o.code) o.code = dep_code;
    if (o.code == TFL_CUSTOM) {
        copy_printable(o.custom_buf, sizeof(o.custom_buf), cc ? cc : (const uint8_t *)"",
                       cc ? cc_len : 0);
        o.custom = o.custom_buf;
        c->op_name = o.custom_buf;
    } else if (o.code >= 0 &&
               (size_t)o.code < sizeof(k_builtin_names) / sizeof(k_builtin_names[0])) {
        c->op_name = k_builtin_names[o.code];
    } else {
        snprintf(name_buf, sizeof(name_buf), "BUILTIN_%d", o.code);
        c->op_name = name_buf;
    }
    if (o.outs.count > 0) {
        int32_t oi = ks__fb_vec_i32(&c->fb, &o.outs, 0);
        tdesc d;
        if (oi >= 0 && (uint32_t)oi < c->num_tensors) {
            if ((st = get_tdesc(c, oi, &d))) return st;
            copy_printable(c->out_name, sizeof(c->out_name), d.name, d.name_len);
        }
    }
    st = convert_op(c, &o);
    c->op_name = "?"; /* name_buf goes out of scope */
    return st;
}

static const char *base_name(const char *path) {
    const char *b = path;
    for (const char *p = path; *p; p++)
        if (*p == '/' || *p == '\\') b = p + 1;
    return b;
}

ks_status ks__import_tflite(const uint8_t *data, size_t size_bytes, const char *source_name,
                            ks__graph *g, char *err, size_t err_cap) {
    imp c;
    ks__fb_table model, sg;
    ks__fb_vec subgraphs;
    uint32_t version = 0;
    const uint8_t *desc = NULL;
    uint32_t desc_len = 0;
    int32_t *ins = NULL, *outs = NULL;
    uint32_t num_ins = 0;
    ks_status st = KS_STATUS_OK;
    char *desc_str = NULL;

    memset(&c, 0, sizeof(c));
    c.fb.data = data;
    c.fb.size = data ? size_bytes : 0;
    c.src = source_name ? source_name : "<tflite>";
    c.g = g;
    c.err = err;
    c.err_cap = err_cap;
    if (!data || size_bytes < 8 || memcmp(data + 4, "TFL3", 4) != 0) {
        st = fail(&c, KS_STATUS_INVALID_MODEL, "not a TFLite file (no TFL3 identifier)");
        goto error;
    }
    if (!ks__fb_root(&c.fb, &model) || !ks__fb_get_u32(&c.fb, &model, 0, 0, &version) ||
        !ks__fb_get_vec(&c.fb, &model, 1, 4, &c.opcodes) ||
        !ks__fb_get_vec(&c.fb, &model, 2, 4, &subgraphs) ||
        !ks__fb_get_str(&c.fb, &model, 3, &desc, &desc_len) ||
        !ks__fb_get_vec(&c.fb, &model, 4, 4, &c.buffers)) {
        st = bad_fb(&c, "the model table");
        goto error;
    }
    if (version != 3) {
        st = fail(&c, KS_STATUS_UNSUPPORTED, "schema version %u (only 3 is supported)", version);
        goto error;
    }
    if (subgraphs.count == 0) {
        st = fail(&c, KS_STATUS_INVALID_MODEL, "no subgraph");
        goto error;
    }
    if (!ks__fb_vec_table(&c.fb, &subgraphs, 0, &sg) ||
        !ks__fb_get_vec(&c.fb, &sg, 0, 4, &c.tensors) ||
        !ks__fb_get_vec(&c.fb, &sg, 1, 4, &c.sg_inputs) ||
        !ks__fb_get_vec(&c.fb, &sg, 2, 4, &c.sg_outputs) ||
        !ks__fb_get_vec(&c.fb, &sg, 3, 4, &c.ops)) {
        st = bad_fb(&c, "subgraph 0");
        goto error;
    }
    if (c.tensors.count > KS_IMPORT_MAX_TENSORS || c.ops.count > KS_IMPORT_MAX_NODES) {
        st = fail(&c, KS_STATUS_LIMIT_EXCEEDED, "%u tensors / %u operators exceed the limits",
                  c.tensors.count, c.ops.count);
        goto error;
    }
    c.num_tensors = c.tensors.count;
    c.map = ks__alloc(&g->alloc, (c.num_tensors + 1) * sizeof(int32_t));
    c.state = ks__calloc(&g->alloc, c.num_tensors + 1, 1);
    c.fold = ks__calloc(&g->alloc, c.num_tensors + 1, sizeof(folded));
    ins = ks__alloc(&g->alloc, (c.sg_inputs.count + 1) * sizeof(int32_t));
    outs = ks__alloc(&g->alloc, (c.sg_outputs.count + 1) * sizeof(int32_t));
    if (!c.map || !c.state || !c.fold || !ins || !outs) {
        st = oom(&c);
        goto error;
    }
    for (uint32_t i = 0; i < c.num_tensors; i++)
        c.map[i] = -1;

    if ((st = ks__graph_set_meta(g, "producer", "tflite")) ||
        (st = ks__graph_set_meta(g, "source", base_name(c.src)))) {
        st = oom(&c);
        goto error;
    }
    if (desc) {
        desc_str = dup_str(&c, desc, desc_len);
        if (!desc_str || ks__graph_set_meta(g, "tflite.description", desc_str)) {
            st = oom(&c);
            goto error;
        }
    }

    /* Graph inputs (constants that TFLite lists as inputs are not inputs). */
    for (uint32_t i = 0; i < c.sg_inputs.count; i++) {
        int32_t idx = ks__fb_vec_i32(&c.fb, &c.sg_inputs, i);
        cview cv;
        if (idx < 0 || (uint32_t)idx >= c.num_tensors) {
            st = fail(&c, KS_STATUS_INVALID_MODEL, "graph input %u: tensor index %d out of range",
                      i, idx);
            goto error;
        }
        if ((st = get_const(&c, idx, &cv))) goto error;
        if (cv.data) continue;
        if (c.map[idx] >= 0) {
            st =
                fail(&c, KS_STATUS_INVALID_MODEL, "graph input %u: tensor %d listed twice", i, idx);
            goto error;
        }
        if ((st = create_tensor(&c, idx, &ins[num_ins]))) goto error;
        c.state[idx] |= TSTATE_INPUT;
        num_ins++;
    }

    for (uint32_t i = 0; i < c.ops.count; i++)
        if ((st = import_op(&c, i))) goto error;

    for (uint32_t i = 0; i < c.sg_outputs.count; i++) {
        int32_t idx = ks__fb_vec_i32(&c.fb, &c.sg_outputs, i);
        if (idx < 0 || (uint32_t)idx >= c.num_tensors) {
            st = fail(&c, KS_STATUS_INVALID_MODEL, "graph output %u: tensor index %d out of range",
                      i, idx);
            goto error;
        }
        if (c.map[idx] < 0) {
            cview cv;
            if ((st = get_const(&c, idx, &cv))) goto error;
            if (!cv.data) {
                st = fail(&c, KS_STATUS_INVALID_MODEL,
                          "graph output %u (tensor %d) is never produced", i, idx);
                goto error;
            }
            if ((st = create_tensor(&c, idx, &outs[i]))) goto error;
        }
        outs[i] = c.map[idx];
    }
    if (ks__graph_set_io(g, num_ins, ins, c.sg_outputs.count, outs)) {
        st = oom(&c);
        goto error;
    }
    {
        char why[256];
        st = ks__graph_validate(g, why, sizeof(why));
        if (st) {
            st = fail(&c, st == KS_STATUS_OUT_OF_MEMORY ? st : KS_STATUS_INVALID_MODEL,
                      "converted graph is invalid: %s", why);
            goto error;
        }
    }

error:
    if (c.fold) {
        for (uint32_t i = 0; i < c.num_tensors; i++)
            ks__free(&g->alloc, c.fold[i].data);
    }
    ks__free(&g->alloc, c.fold);
    ks__free(&g->alloc, c.map);
    ks__free(&g->alloc, c.state);
    ks__free(&g->alloc, ins);
    ks__free(&g->alloc, outs);
    ks__free(&g->alloc, desc_str);
    return st;
}

/* ---------------------------------------------------------------- op list */

/* For ks-convert --list-ops: the builtin ops that convert_op's switch handles (k_direct_ops
 * lists the others), then the custom ops of convert_custom, each with what its converter
 * refuses or requires. Keep in step with the switch: a case added there is listed here. */
typedef struct listed_op {
    int32_t code; /* TFL_CUSTOM: `custom` names it */
    const char *custom;
    const char *constraints;
} listed_op;

#define TFL_ACT_NOTE "fused activation NONE, RELU, RELU_N1_TO_1, RELU6 or TANH"

static const listed_op k_listed_ops[] = {
    {TFL_CONV_2D, NULL, TFL_ACT_NOTE},
    {TFL_DEPTHWISE_CONV_2D, NULL, "input channel count known; " TFL_ACT_NOTE},
    {TFL_TRANSPOSE_CONV, NULL, "output_shape constant"},
    {TFL_MAX_POOL_2D, NULL, TFL_ACT_NOTE},
    {TFL_AVERAGE_POOL_2D, NULL, TFL_ACT_NOTE},
    {TFL_FULLY_CONNECTED, NULL, "weights_format DEFAULT; " TFL_ACT_NOTE},
    {TFL_RESHAPE, NULL, "new_shape of rank <= 8"},
    {TFL_RESIZE_BILINEAR, NULL, ""},
    {TFL_RESIZE_NEAREST_NEIGHBOR, NULL, ""},
    {TFL_PAD, NULL, ""},
    {TFL_PADV2, NULL, ""},
    {TFL_MIRROR_PAD, NULL, "mode REFLECT or SYMMETRIC"},
    {TFL_CONCATENATION, NULL, "1..64 inputs; " TFL_ACT_NOTE},
    {TFL_ELU, NULL, ""},
    {TFL_DEQUANTIZE, NULL, ""},
    {TFL_DENSIFY, NULL, "a constant (sparse) input"},
    {TFL_LEAKY_RELU, NULL, ""},
    {TFL_SOFTMAX, NULL, "beta 1"},
    {TFL_LOG_SOFTMAX, NULL, ""},
    {TFL_MEAN, NULL, "axes constant and non-empty"},
    {TFL_SUM, NULL, "axes constant and non-empty"},
    {TFL_REDUCE_MAX, NULL, "axes constant and non-empty"},
    {TFL_REDUCE_MIN, NULL, "axes constant and non-empty"},
    {TFL_REDUCE_PROD, NULL, "axes constant and non-empty"},
    {TFL_ARG_MAX, NULL, "axis constant"},
    {TFL_ARG_MIN, NULL, "axis constant"},
    {TFL_DEPTH_TO_SPACE, NULL, ""},
    {TFL_SPACE_TO_DEPTH, NULL, ""},
    {TFL_STRIDED_SLICE, NULL, "no ellipsis_mask, new_axis_mask or offset"},
    {TFL_SLICE, NULL, "begin and size constant"},
    {TFL_PACK, NULL, "1..64 inputs"},
    {TFL_UNPACK, NULL, ""},
    {TFL_GATHER, NULL, "batch_dims 0"},
    {TFL_TRANSPOSE, NULL, "perm constant"},
    {TFL_SQUEEZE, NULL, ""},
    {TFL_EXPAND_DIMS, NULL, "axis constant"},
    {TFL_SPLIT, NULL, "axis constant"},
    {TFL_SPLIT_V, NULL, "axis constant"},
    {TFL_BATCH_MATMUL, NULL, ""},
    {TFL_CUSTOM, "Convolution2DTransposeBias", "MediaPipe's transposed convolution with bias"},
    {TFL_CUSTOM, "TransformLandmarks", "MediaPipe"},
    {TFL_CUSTOM, "TransformTensorBilinear", "MediaPipe"},
    {TFL_CUSTOM, "TransformTensor", "MediaPipe"},
    {TFL_CUSTOM, "Landmarks2TransformMatrix", "MediaPipe; version 1"},
};

static const char *builtin_name(int32_t code) {
    if (code >= 0 && (size_t)code < sizeof(k_builtin_names) / sizeof(k_builtin_names[0]))
        return k_builtin_names[code];
    return "?";
}

uint32_t ks__tflite_num_ops(void) {
    return (uint32_t)(sizeof(k_direct_ops) / sizeof(k_direct_ops[0]) +
                      sizeof(k_listed_ops) / sizeof(k_listed_ops[0]));
}

ks__import_op ks__tflite_op(uint32_t index) {
    ks__import_op op = {NULL, ""};
    const uint32_t n_direct = (uint32_t)(sizeof(k_direct_ops) / sizeof(k_direct_ops[0]));
    if (index < n_direct) {
        const direct_op *d = &k_direct_ops[index];
        op.name = builtin_name(d->code);
        if (d->opt_type)
            op.constraints = "NumPy broadcasting; " TFL_ACT_NOTE;
        else if (d->num_inputs == 2)
            op.constraints = "NumPy broadcasting";
        return op;
    }
    index -= n_direct;
    if (index >= sizeof(k_listed_ops) / sizeof(k_listed_ops[0])) return op;
    const listed_op *l = &k_listed_ops[index];
    op.name = l->custom ? l->custom : builtin_name(l->code);
    op.constraints = l->constraints;
    return op;
}

const char *ks__tflite_import_notes(void) {
    return "schema version 3; the first subgraph; tensors of rank <= 8 of type FLOAT32, "
           "FLOAT16, INT32, INT64, UINT8, INT8, INT16 or BOOL, not variable; custom ops by their "
           "custom_code";
}
