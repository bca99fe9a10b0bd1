/* Binary glTF 2.0 reader: see glb.h for the subset and the checks.
 *
 * Shape of the parser: header and chunks first; then the JSON tables the scene refers to are
 * validated once, in dependency order (buffers -> bufferViews -> materials/images -> meshes ->
 * nodes), into small C tables; then the node forest is walked once (pass 1) to collect mesh
 * instances with their world matrices and to total the output sizes against the named limits;
 * only then is the output allocated, exactly, and filled (pass 2), which can no longer fail. So
 * a hostile file costs at most one walk of its JSON and never a large allocation. */
#include "glb.h"

#include "base/alloc.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#define GLB_MAGIC 0x46546C67u
#define CHUNK_JSON 0x4E4F534Au
#define CHUNK_BIN 0x004E4942u

enum {
    CT_I8 = 5120,
    CT_U8 = 5121,
    CT_I16 = 5122,
    CT_U16 = 5123,
    CT_U32 = 5125,
    CT_F32 = 5126,
};

/* A validated accessor. base == NULL: no bufferView, every element reads as zero. */
typedef struct acc {
    const uint8_t *base;
    uint32_t index; /* into accessors, for messages */
    uint32_t count, ctype, ncomp, stride;
    bool normalized;
} acc;

typedef struct view {
    uint64_t offset, length;
    uint32_t stride; /* 0 = tightly packed */
} view;

typedef struct prim {
    acc pos, nrm, uv, idx;
    bool has_nrm, has_uv, has_idx;
    uint32_t num_indices;
    uint32_t material; /* model material index (the default one when absent) */
} prim;

typedef struct mesh {
    uint32_t first_prim, num_prims;
} mesh;

typedef struct instance {
    float world[16];
    uint32_t mesh;
} instance;

typedef struct parser {
    const char *name;
    char *err;
    size_t cap;
    const ks_allocator *a;
    const uint8_t *bin;
    uint64_t buffer0_bytes; /* declared buffers[0].byteLength (<= BIN chunk) */
    bool buffer0_is_bin;
    uint32_t num_buffers;
    cJSON *root;
    /* top-level arrays indexed once, so element lookup is O(1) */
    cJSON **accessors, **views_json, **meshes_json, **nodes, **materials_json, **textures,
        **images_json, **scenes;
    uint32_t num_accessors, num_views, num_meshes, num_nodes, num_materials, num_textures,
        num_images, num_scenes;
    view *views;
    prim *prims;
    uint32_t num_prims;
    mesh *meshes;
    uint8_t *node_parents; /* parent count, saturating at 2 */
    uint8_t *node_seen;
    instance *instances;
    uint32_t num_instances;
    int32_t *image_map; /* file image -> model image, -1 when unused */
    ks__glb_model *m;
} parser;

/* ---- allocation and errors ----------------------------------------------------------------- */

static void *mem_calloc(parser *p, size_t count, size_t elem) {
    if (elem && count > SIZE_MAX / elem) return NULL;
    void *q = ks__alloc(p->a, count * elem);
    if (q) memset(q, 0, count * elem > 0 ? count * elem : 1);
    return q;
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static ks_status
fail(parser *p, ks_status st, const char *fmt, ...) {
    if (p->err && p->cap) {
        int n = snprintf(p->err, p->cap, "%s: ", p->name);
        if (n < 0) n = 0;
        if ((size_t)n < p->cap) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(p->err + n, p->cap - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return st;
}

static ks_status oom(parser *p, const char *what) {
    return fail(p, KS_STATUS_OUT_OF_MEMORY, "out of memory allocating %s", what);
}

static uint32_t rd32(const uint8_t *q) {
    return (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
}

/* ---- JSON helpers ------------------------------------------------------------------------- */

static const char *describe(const cJSON *j) {
    if (!j) return "nothing";
    if (cJSON_IsNumber(j)) return "a number";
    if (cJSON_IsString(j)) return "a string";
    if (cJSON_IsBool(j)) return "a boolean";
    if (cJSON_IsNull(j)) return "null";
    if (cJSON_IsArray(j)) return "an array";
    if (cJSON_IsObject(j)) return "an object";
    return "an invalid value";
}

static const cJSON *member(const cJSON *obj, const char *key) {
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* Optional (or required) non-negative integer <= max. Above max: LIMIT_EXCEEDED when `limit`
 * names the limit, else INVALID_MODEL. */
static ks_status get_uint(parser *p, const cJSON *obj, const char *key, const char *path,
                          bool required, uint64_t def, uint64_t max, const char *limit,
                          uint64_t *out) {
    const cJSON *j = member(obj, key);
    if (!j) {
        if (required) return fail(p, KS_STATUS_INVALID_MODEL, "%s.%s: missing", path, key);
        *out = def;
        return KS_STATUS_OK;
    }
    if (!cJSON_IsNumber(j))
        return fail(p, KS_STATUS_INVALID_MODEL, "%s.%s: expected a non-negative integer, got %s",
                    path, key, describe(j));
    double v = j->valuedouble;
    if (!(v >= 0.0) || v != floor(v) || v > 9.0e15)
        return fail(p, KS_STATUS_INVALID_MODEL, "%s.%s: expected a non-negative integer, got %.17g",
                    path, key, v);
    if (v > (double)max) {
        if (limit)
            return fail(p, KS_STATUS_LIMIT_EXCEEDED, "%s.%s: %.17g is over %s (%llu)", path, key, v,
                        limit, (unsigned long long)max);
        return fail(p, KS_STATUS_INVALID_MODEL, "%s.%s: expected at most %llu, got %.17g", path,
                    key, (unsigned long long)max, v);
    }
    *out = (uint64_t)v;
    return KS_STATUS_OK;
}

/* An index into a table of `n` entries named `table`. */
static ks_status get_index(parser *p, const cJSON *obj, const char *key, const char *path,
                           bool required, uint32_t n, const char *table, int64_t *out) {
    if (!member(obj, key) && !required) {
        *out = -1;
        return KS_STATUS_OK;
    }
    uint64_t v = 0;
    ks_status st = get_uint(p, obj, key, path, required, 0, UINT32_MAX, NULL, &v);
    if (st) return st;
    if (v >= n)
        return fail(p, KS_STATUS_INVALID_MODEL, "%s.%s: %llu is not an index into %s (%u entries)",
                    path, key, (unsigned long long)v, table, n);
    *out = (int64_t)v;
    return KS_STATUS_OK;
}

/* Exactly n finite numbers, each in [lo, hi]. *present_out = false when the key is absent. */
static ks_status get_floats(parser *p, const cJSON *obj, const char *key, const char *path, int n,
                            float lo, float hi, float *out, bool *present_out) {
    const cJSON *j = member(obj, key);
    *present_out = false;
    if (!j) return KS_STATUS_OK;
    if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) != n)
        return fail(p, KS_STATUS_INVALID_MODEL, "%s.%s: expected an array of %d numbers, got %s",
                    path, key, n, describe(j));
    int i = 0;
    for (const cJSON *e = j->child; e; e = e->next, i++) {
        double v = cJSON_IsNumber(e) ? e->valuedouble : NAN;
        if (!(v >= lo && v <= hi))
            return fail(p, KS_STATUS_INVALID_MODEL,
                        "%s.%s[%d]: expected a number in [%g, %g], got %s", path, key, i, lo, hi,
                        describe(e));
        out[i] = (float)v;
    }
    *present_out = true;
    return KS_STATUS_OK;
}

static ks_status get_bool(parser *p, const cJSON *obj, const char *key, const char *path,
                          bool *out) {
    const cJSON *j = member(obj, key);
    *out = false;
    if (!j) return KS_STATUS_OK;
    if (!cJSON_IsBool(j))
        return fail(p, KS_STATUS_INVALID_MODEL, "%s.%s: expected a boolean, got %s", path, key,
                    describe(j));
    *out = cJSON_IsTrue(j);
    return KS_STATUS_OK;
}

/* Optional top-level array of objects -> pointer table. */
static ks_status index_table(parser *p, const char *key, uint32_t max, const char *limit,
                             cJSON ***table_out, uint32_t *n_out) {
    const cJSON *j = member(p->root, key);
    *n_out = 0;
    if (!j) return KS_STATUS_OK;
    if (!cJSON_IsArray(j))
        return fail(p, KS_STATUS_INVALID_MODEL, "%s: expected an array, got %s", key, describe(j));
    uint32_t n = 0;
    for (const cJSON *e = j->child; e; e = e->next) {
        if (!cJSON_IsObject(e))
            return fail(p, KS_STATUS_INVALID_MODEL, "%s[%u]: expected an object, got %s", key, n,
                        describe(e));
        if (++n > max)
            return fail(p, KS_STATUS_LIMIT_EXCEEDED, "%s: more than %s (%u) entries", key, limit,
                        max);
    }
    cJSON **t = mem_calloc(p, n, sizeof *t);
    if (!t) return oom(p, key);
    n = 0;
    for (cJSON *e = j->child; e; e = e->next)
        t[n++] = e;
    *table_out = t;
    *n_out = n;
    return KS_STATUS_OK;
}

/* cJSON recurses per nesting level; cap the depth before handing it the text. */
static ks_status check_depth(parser *p, const char *s, size_t n) {
    uint32_t depth = 0;
    bool in_str = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '[' || c == '{') {
            if (++depth > KS__GLB_MAX_JSON_DEPTH)
                return fail(p, KS_STATUS_LIMIT_EXCEEDED,
                            "JSON chunk: nesting deeper than KS__GLB_MAX_JSON_DEPTH (%u) at byte "
                            "%zu",
                            KS__GLB_MAX_JSON_DEPTH, i);
        } else if ((c == ']' || c == '}') && depth) {
            depth--;
        }
    }
    return KS_STATUS_OK;
}

/* ---- container ---------------------------------------------------------------------------- */

static ks_status read_chunks(parser *p, const uint8_t *d, size_t size, const uint8_t **json_out,
                             size_t *json_bytes_out) {
    if (size < 12)
        return fail(p, KS_STATUS_INVALID_MODEL, "header: %zu bytes, a glb needs at least 12", size);
    if (rd32(d) != GLB_MAGIC)
        return fail(p, KS_STATUS_INVALID_MODEL, "header: magic 0x%08x is not \"glTF\"", rd32(d));
    if (rd32(d + 4) != 2)
        return fail(p, KS_STATUS_VERSION_MISMATCH, "header: version %u, only glb version 2 is read",
                    rd32(d + 4));
    uint32_t length = rd32(d + 8);
    if (length != size)
        return fail(p, KS_STATUS_INVALID_MODEL,
                    "header: length %u does not match the %zu bytes given (truncated?)", length,
                    size);
    size_t at = 12;
    uint32_t index = 0;
    *json_out = NULL;
    while (at < size) {
        if (size - at < 8)
            return fail(p, KS_STATUS_INVALID_MODEL,
                        "chunk %u: header at byte %zu needs 8 bytes, %zu left", index, at,
                        size - at);
        uint32_t len = rd32(d + at), type = rd32(d + at + 4);
        if (len > size - at - 8)
            return fail(p, KS_STATUS_INVALID_MODEL,
                        "chunk %u: chunkLength %u at byte %zu runs past the end (%zu bytes left)",
                        index, len, at, size - at - 8);
        const uint8_t *body = d + at + 8;
        if (index == 0) {
            if (type != CHUNK_JSON)
                return fail(p, KS_STATUS_INVALID_MODEL,
                            "chunk 0: type 0x%08x, the first chunk must be JSON", type);
            if (len > KS__GLB_MAX_JSON_BYTES)
                return fail(p, KS_STATUS_LIMIT_EXCEEDED,
                            "chunk 0: JSON of %u bytes is over KS__GLB_MAX_JSON_BYTES (%u)", len,
                            KS__GLB_MAX_JSON_BYTES);
            *json_out = body;
            *json_bytes_out = len;
        } else if (index == 1 && type == CHUNK_BIN) {
            p->bin = body;
            p->buffer0_bytes = len; /* narrowed to buffers[0].byteLength later */
        } else if (type == CHUNK_JSON || type == CHUNK_BIN) {
            return fail(p, KS_STATUS_INVALID_MODEL,
                        "chunk %u: %s chunk out of place (chunk 0 is JSON, chunk 1 the only BIN)",
                        index, type == CHUNK_JSON ? "JSON" : "BIN");
        } /* other types: skipped, as the spec asks */
        at += 8 + (size_t)len;
        index++;
    }
    if (!*json_out) return fail(p, KS_STATUS_INVALID_MODEL, "chunk 0: missing JSON chunk");
    return KS_STATUS_OK;
}

static ks_status check_asset(parser *p) {
    const cJSON *asset = member(p->root, "asset");
    if (!cJSON_IsObject(asset))
        return fail(p, KS_STATUS_INVALID_MODEL, "asset: expected an object, got %s",
                    describe(asset));
    const cJSON *v = member(asset, "version");
    if (!cJSON_IsString(v))
        return fail(p, KS_STATUS_INVALID_MODEL, "asset.version: expected a string, got %s",
                    describe(v));
    if (strncmp(v->valuestring, "2.", 2) != 0)
        return fail(p, KS_STATUS_VERSION_MISMATCH, "asset.version: \"%.32s\", only 2.x is read",
                    v->valuestring);
    const cJSON *req = member(p->root, "extensionsRequired");
    if (req) {
        if (!cJSON_IsArray(req))
            return fail(p, KS_STATUS_INVALID_MODEL, "extensionsRequired: expected an array, got %s",
                        describe(req));
        if (req->child)
            return fail(p, KS_STATUS_UNSUPPORTED,
                        "extensionsRequired[0]: extension \"%.64s\" is not supported",
                        cJSON_IsString(req->child) ? req->child->valuestring : "?");
    }
    return KS_STATUS_OK;
}

/* ---- buffers, views, accessors ------------------------------------------------------------ */

static ks_status parse_buffers(parser *p) {
    cJSON **t = NULL;
    ks_status st = index_table(p, "buffers", KS__GLB_MAX_ELEMENTS, "KS__GLB_MAX_ELEMENTS", &t,
                               &p->num_buffers);
    if (st) return st;
    uint64_t bin_bytes = p->bin ? p->buffer0_bytes : 0;
    p->buffer0_bytes = 0;
    if (p->num_buffers && !member(t[0], "uri")) {
        uint64_t len = 0;
        st = get_uint(p, t[0], "byteLength", "buffers[0]", true, 0, UINT64_MAX / 4, NULL, &len);
        if (!st && len > bin_bytes)
            st = fail(p, KS_STATUS_INVALID_MODEL,
                      "buffers[0].byteLength: %llu bytes, but the BIN chunk holds %llu",
                      (unsigned long long)len, (unsigned long long)bin_bytes);
        p->buffer0_bytes = len;
        p->buffer0_is_bin = true;
    }
    ks__free(p->a, t);
    return st;
}

static ks_status parse_views(parser *p) {
    ks_status st = index_table(p, "bufferViews", KS__GLB_MAX_ELEMENTS, "KS__GLB_MAX_ELEMENTS",
                               &p->views_json, &p->num_views);
    if (st) return st;
    p->views = mem_calloc(p, p->num_views, sizeof *p->views);
    if (!p->views) return oom(p, "bufferViews");
    for (uint32_t i = 0; i < p->num_views; i++) {
        char path[32];
        snprintf(path, sizeof path, "bufferViews[%u]", i);
        const cJSON *o = p->views_json[i];
        int64_t buffer = 0;
        uint64_t off = 0, len = 0, stride = 0;
        st = get_index(p, o, "buffer", path, true, p->num_buffers, "buffers", &buffer);
        if (st) return st;
        if (buffer != 0 || !p->buffer0_is_bin)
            return fail(p, KS_STATUS_UNSUPPORTED,
                        "%s.buffer: buffers[%lld] is external (uri); only the embedded BIN chunk "
                        "is read",
                        path, (long long)buffer);
        if ((st = get_uint(p, o, "byteOffset", path, false, 0, UINT32_MAX, NULL, &off)) ||
            (st = get_uint(p, o, "byteLength", path, true, 0, UINT32_MAX, NULL, &len)) ||
            (st = get_uint(p, o, "byteStride", path, false, 0, 252, NULL, &stride)))
            return st;
        if (stride && (stride < 4 || stride % 4))
            return fail(p, KS_STATUS_INVALID_MODEL,
                        "%s.byteStride: %llu, expected a multiple of 4 in [4, 252]", path,
                        (unsigned long long)stride);
        if (off + len > p->buffer0_bytes)
            return fail(p, KS_STATUS_INVALID_MODEL,
                        "%s: byteOffset %llu + byteLength %llu is past buffers[0] (%llu bytes)",
                        path, (unsigned long long)off, (unsigned long long)len,
                        (unsigned long long)p->buffer0_bytes);
        p->views[i] = (view){off, len, (uint32_t)stride};
    }
    return KS_STATUS_OK;
}

static uint32_t ctype_bytes(uint32_t ct) {
    switch (ct) {
    case CT_I8:
    case CT_U8:
        return 1;
    case CT_I16:
    case CT_U16:
        return 2;
    case CT_U32:
    case CT_F32:
        return 4;
    default:
        return 0;
    }
}

/* Accessor `index` (referenced from `use`), checked against what the use allows: `ncomp`
 * components and a component type in the `ctypes` list (0-terminated); `normalized` must be
 * set exactly for integer types when `want_norm`. Every element lies inside its view. */
static ks_status get_accessor(parser *p, const cJSON *holder, const char *key, const char *use,
                              uint32_t ncomp, const uint32_t *ctypes, bool want_norm,
                              uint32_t max_count, const char *limit, acc *out) {
    int64_t index = 0;
    ks_status st = get_index(p, holder, key, use, true, p->num_accessors, "accessors", &index);
    if (st) return st;
    const cJSON *o = p->accessors[index];
    char path[32];
    snprintf(path, sizeof path, "accessors[%lld]", (long long)index);
    if (member(o, "sparse"))
        return fail(p, KS_STATUS_UNSUPPORTED, "%s.sparse: sparse accessors are not supported",
                    path);
    uint64_t ct = 0, count = 0, off = 0;
    if ((st = get_uint(p, o, "componentType", path, true, 0, UINT32_MAX, NULL, &ct))) return st;
    if (!ctype_bytes((uint32_t)ct))
        return fail(p, KS_STATUS_INVALID_MODEL, "%s.componentType: %llu is not a glTF type", path,
                    (unsigned long long)ct);
    bool ok = false;
    for (const uint32_t *c = ctypes; *c; c++)
        ok |= *c == ct;
    if (!ok)
        return fail(p, KS_STATUS_INVALID_MODEL, "%s.componentType: %llu is not allowed for %s.%s",
                    path, (unsigned long long)ct, use, key);
    static const char *const types[] = {"", "SCALAR", "VEC2", "VEC3", "VEC4"};
    const cJSON *type = member(o, "type");
    if (!cJSON_IsString(type))
        return fail(p, KS_STATUS_INVALID_MODEL, "%s.type: expected a string, got %s", path,
                    describe(type));
    if (strcmp(type->valuestring, types[ncomp]) != 0)
        return fail(p, KS_STATUS_INVALID_MODEL, "%s.type: \"%.16s\", %s.%s needs %s", path,
                    type->valuestring, use, key, types[ncomp]);
    bool norm = false;
    if ((st = get_bool(p, o, "normalized", path, &norm))) return st;
    if (ct != CT_F32 && norm != want_norm)
        return fail(p, KS_STATUS_INVALID_MODEL, "%s.normalized: must be %s for %s.%s", path,
                    want_norm ? "true" : "false", use, key);
    if (ct == CT_F32 && norm)
        return fail(p, KS_STATUS_INVALID_MODEL, "%s.normalized: must be false for floats", path);
    if ((st = get_uint(p, o, "count", path, true, 0, max_count, limit, &count)) ||
        (st = get_uint(p, o, "byteOffset", path, false, 0, UINT32_MAX, NULL, &off)))
        return st;
    if (count == 0) return fail(p, KS_STATUS_INVALID_MODEL, "%s.count: must be at least 1", path);
    uint32_t elem = ncomp * ctype_bytes((uint32_t)ct);
    *out = (acc){.index = (uint32_t)index,
                 .count = (uint32_t)count,
                 .ctype = (uint32_t)ct,
                 .ncomp = ncomp,
                 .stride = elem,
                 .normalized = norm};
    int64_t vi = -1;
    if ((st = get_index(p, o, "bufferView", path, false, p->num_views, "bufferViews", &vi)))
        return st;
    if (vi < 0) return KS_STATUS_OK; /* all zeros */
    const view *v = &p->views[vi];
    if (v->stride) {
        if (v->stride < elem)
            return fail(p, KS_STATUS_INVALID_MODEL,
                        "%s: bufferViews[%lld].byteStride %u is less than the %u-byte element",
                        path, (long long)vi, v->stride, elem);
        out->stride = v->stride;
    }
    uint64_t need = off + (uint64_t)out->stride * (count - 1) + elem;
    if (need > v->length)
        return fail(p, KS_STATUS_INVALID_MODEL,
                    "%s.count: %llu elements of %u bytes (stride %u) at byteOffset %llu need %llu "
                    "bytes, bufferViews[%lld] has %llu",
                    path, (unsigned long long)count, elem, out->stride, (unsigned long long)off,
                    (unsigned long long)need, (long long)vi, (unsigned long long)v->length);
    out->base = p->bin + v->offset + off;
    return KS_STATUS_OK;
}

static float read_comp(const acc *a, uint32_t i, uint32_t c) {
    if (!a->base) return 0.0f;
    const uint8_t *q = a->base + (size_t)a->stride * i + (size_t)c * ctype_bytes(a->ctype);
    switch (a->ctype) {
    case CT_F32: {
        float f;
        memcpy(&f, q, 4);
        return f;
    }
    case CT_U8:
        return a->normalized ? q[0] / 255.0f : (float)q[0];
    case CT_I8: {
        float v = (float)(int8_t)q[0];
        return a->normalized ? fmaxf(v / 127.0f, -1.0f) : v;
    }
    case CT_U16: {
        uint16_t v;
        memcpy(&v, q, 2);
        return a->normalized ? v / 65535.0f : (float)v;
    }
    case CT_I16: {
        int16_t v;
        memcpy(&v, q, 2);
        return a->normalized ? fmaxf(v / 32767.0f, -1.0f) : (float)v;
    }
    default:
        return 0.0f;
    }
}

static uint32_t read_index(const acc *a, uint32_t i) {
    if (!a->base) return 0;
    const uint8_t *q = a->base + (size_t)a->stride * i;
    if (a->ctype == CT_U8) return q[0];
    if (a->ctype == CT_U16) return (uint32_t)q[0] | (uint32_t)q[1] << 8;
    return rd32(q);
}

/* ---- materials and images ----------------------------------------------------------------- */

static ks_status parse_image(parser *p, int64_t img, const char *use, int32_t *model_index_out) {
    if (p->image_map[img] >= 0) {
        *model_index_out = p->image_map[img];
        return KS_STATUS_OK;
    }
    char path[32];
    snprintf(path, sizeof path, "images[%lld]", (long long)img);
    const cJSON *o = p->images_json[img];
    if (member(o, "uri"))
        return fail(p, KS_STATUS_UNSUPPORTED,
                    "%s.uri: external or data-URI images are not supported (used by %s); embed "
                    "the image in a bufferView",
                    path, use);
    int64_t vi = 0;
    ks_status st = get_index(p, o, "bufferView", path, true, p->num_views, "bufferViews", &vi);
    if (st) return st;
    const cJSON *mime = member(o, "mimeType");
    if (!cJSON_IsString(mime))
        return fail(p, KS_STATUS_INVALID_MODEL, "%s.mimeType: expected a string, got %s", path,
                    describe(mime));
    const view *v = &p->views[vi];
    const uint8_t *bytes = p->bin + v->offset;
    ks__glb_image_format fmt;
    if (strcmp(mime->valuestring, "image/png") == 0) {
        fmt = KS__GLB_IMAGE_PNG;
        if (v->length < 8 || memcmp(bytes, "\x89PNG\r\n\x1a\n", 8) != 0)
            return fail(p, KS_STATUS_INVALID_MODEL,
                        "%s: mimeType image/png but bufferViews[%lld] has no PNG signature", path,
                        (long long)vi);
    } else if (strcmp(mime->valuestring, "image/jpeg") == 0) {
        fmt = KS__GLB_IMAGE_JPEG;
        if (v->length < 3 || bytes[0] != 0xFF || bytes[1] != 0xD8 || bytes[2] != 0xFF)
            return fail(p, KS_STATUS_INVALID_MODEL,
                        "%s: mimeType image/jpeg but bufferViews[%lld] has no JPEG signature", path,
                        (long long)vi);
    } else {
        return fail(p, KS_STATUS_UNSUPPORTED,
                    "%s.mimeType: \"%.32s\", only image/png and image/jpeg are read", path,
                    mime->valuestring);
    }
    ks__glb_model *m = p->m;
    uint8_t *copy = ks__alloc(p->a, (size_t)v->length);
    if (!copy) return oom(p, path);
    memcpy(copy, bytes, (size_t)v->length);
    m->images[m->num_images] = (ks__glb_image){fmt, copy, (size_t)v->length};
    p->image_map[img] = (int32_t)m->num_images;
    *model_index_out = (int32_t)m->num_images++;
    return KS_STATUS_OK;
}

static ks_status parse_materials(parser *p) {
    ks_status st = index_table(p, "materials", KS__GLB_MAX_ELEMENTS, "KS__GLB_MAX_ELEMENTS",
                               &p->materials_json, &p->num_materials);
    if (!st)
        st = index_table(p, "textures", KS__GLB_MAX_ELEMENTS, "KS__GLB_MAX_ELEMENTS", &p->textures,
                         &p->num_textures);
    if (!st)
        st = index_table(p, "images", KS__GLB_MAX_ELEMENTS, "KS__GLB_MAX_ELEMENTS", &p->images_json,
                         &p->num_images);
    if (st) return st;
    ks__glb_model *m = p->m;
    m->materials = mem_calloc(p, p->num_materials + 1, sizeof *m->materials);
    m->images = mem_calloc(p, p->num_images, sizeof *m->images);
    p->image_map = mem_calloc(p, p->num_images, sizeof *p->image_map);
    if (!m->materials || !m->images || !p->image_map) return oom(p, "materials");
    for (uint32_t i = 0; i < p->num_images; i++)
        p->image_map[i] = -1;
    for (uint32_t i = 0; i <= p->num_materials; i++) {
        ks__glb_material *mat = &m->materials[i];
        *mat = (ks__glb_material){{1, 1, 1, 1}, KS__GLB_ALPHA_OPAQUE, 0.5f, false, -1};
        m->num_materials = i + 1;
        if (i == p->num_materials) break; /* the default material */
        char path[64];
        snprintf(path, sizeof path, "materials[%u]", i);
        const cJSON *o = p->materials_json[i];
        const cJSON *pbr = member(o, "pbrMetallicRoughness");
        bool present = false;
        if (pbr) {
            char pbr_path[96];
            snprintf(pbr_path, sizeof pbr_path, "%s.pbrMetallicRoughness", path);
            if (!cJSON_IsObject(pbr))
                return fail(p, KS_STATUS_INVALID_MODEL, "%s: expected an object, got %s", pbr_path,
                            describe(pbr));
            if ((st = get_floats(p, pbr, "baseColorFactor", pbr_path, 4, 0.0f, 1.0f,
                                 mat->base_color, &present)))
                return st;
            const cJSON *tex = member(pbr, "baseColorTexture");
            if (tex) {
                char tex_path[128];
                snprintf(tex_path, sizeof tex_path, "%s.baseColorTexture", pbr_path);
                if (!cJSON_IsObject(tex))
                    return fail(p, KS_STATUS_INVALID_MODEL, "%s: expected an object, got %s",
                                tex_path, describe(tex));
                int64_t ti = 0, src = -1;
                uint64_t set = 0;
                if ((st = get_index(p, tex, "index", tex_path, true, p->num_textures, "textures",
                                    &ti)) ||
                    (st = get_uint(p, tex, "texCoord", tex_path, false, 0, UINT32_MAX, NULL, &set)))
                    return st;
                if (set != 0)
                    return fail(p, KS_STATUS_UNSUPPORTED,
                                "%s.texCoord: %llu, only TEXCOORD_0 is supported", tex_path,
                                (unsigned long long)set);
                char t_path[32];
                snprintf(t_path, sizeof t_path, "textures[%lld]", (long long)ti);
                if ((st = get_index(p, p->textures[ti], "source", t_path, false, p->num_images,
                                    "images", &src)))
                    return st;
                if (src >= 0 && (st = parse_image(p, src, tex_path, &mat->base_color_image)))
                    return st;
            }
        }
        const cJSON *mode = member(o, "alphaMode");
        if (mode) {
            if (cJSON_IsString(mode) && strcmp(mode->valuestring, "OPAQUE") == 0)
                mat->alpha_mode = KS__GLB_ALPHA_OPAQUE;
            else if (cJSON_IsString(mode) && strcmp(mode->valuestring, "MASK") == 0)
                mat->alpha_mode = KS__GLB_ALPHA_MASK;
            else if (cJSON_IsString(mode) && strcmp(mode->valuestring, "BLEND") == 0)
                mat->alpha_mode = KS__GLB_ALPHA_BLEND;
            else
                return fail(p, KS_STATUS_INVALID_MODEL,
                            "%s.alphaMode: expected \"OPAQUE\", \"MASK\" or \"BLEND\", got %s",
                            path, describe(mode));
        }
        const cJSON *cut = member(o, "alphaCutoff");
        if (cut) {
            if (!cJSON_IsNumber(cut) || !(cut->valuedouble >= 0.0 && cut->valuedouble <= 1.0))
                return fail(p, KS_STATUS_INVALID_MODEL,
                            "%s.alphaCutoff: expected a number in [0, 1], got %s", path,
                            describe(cut));
            mat->alpha_cutoff = (float)cut->valuedouble;
        }
        if ((st = get_bool(p, o, "doubleSided", path, &mat->double_sided))) return st;
    }
    return KS_STATUS_OK;
}

/* ---- meshes ------------------------------------------------------------------------------- */

static ks_status parse_primitive(parser *p, const cJSON *o, const char *path, prim *pr) {
    static const uint32_t f32[] = {CT_F32, 0};
    static const uint32_t uv_types[] = {CT_F32, CT_U8, CT_U16, 0};
    static const uint32_t idx_types[] = {CT_U8, CT_U16, CT_U32, 0};
    uint64_t mode = 4;
    ks_status st = get_uint(p, o, "mode", path, false, 4, 6, NULL, &mode);
    if (st) return st;
    if (mode != 4)
        return fail(p, KS_STATUS_UNSUPPORTED, "%s.mode: %llu, only TRIANGLES (4) is supported",
                    path, (unsigned long long)mode);
    const cJSON *attr = member(o, "attributes");
    char apath[96];
    snprintf(apath, sizeof apath, "%s.attributes", path);
    if (!cJSON_IsObject(attr))
        return fail(p, KS_STATUS_INVALID_MODEL, "%s: expected an object, got %s", apath,
                    describe(attr));
    if ((st = get_accessor(p, attr, "POSITION", apath, 3, f32, false, KS__GLB_MAX_VERTICES,
                           "KS__GLB_MAX_VERTICES", &pr->pos)))
        return st;
    pr->has_nrm = member(attr, "NORMAL") != NULL;
    if (pr->has_nrm && (st = get_accessor(p, attr, "NORMAL", apath, 3, f32, false,
                                          KS__GLB_MAX_VERTICES, "KS__GLB_MAX_VERTICES", &pr->nrm)))
        return st;
    pr->has_uv = member(attr, "TEXCOORD_0") != NULL;
    if (pr->has_uv && (st = get_accessor(p, attr, "TEXCOORD_0", apath, 2, uv_types, true,
                                         KS__GLB_MAX_VERTICES, "KS__GLB_MAX_VERTICES", &pr->uv)))
        return st;
    uint32_t nv = pr->pos.count;
    if ((pr->has_nrm && pr->nrm.count != nv) || (pr->has_uv && pr->uv.count != nv))
        return fail(p, KS_STATUS_INVALID_MODEL,
                    "%s: NORMAL/TEXCOORD_0 count (%u/%u) differs from POSITION count %u", apath,
                    pr->has_nrm ? pr->nrm.count : nv, pr->has_uv ? pr->uv.count : nv, nv);
    /* The range keeps every later product (world matrix <= 1e12) finite in float. */
    const float lim = KS__GLB_MAX_COORD;
    for (uint32_t i = 0; i < nv; i++)
        for (uint32_t c = 0; c < 3; c++)
            if (!(fabsf(read_comp(&pr->pos, i, c)) <= lim) ||
                (pr->has_nrm && !(fabsf(read_comp(&pr->nrm, i, c)) <= lim)) ||
                (pr->has_uv && c < 2 && !(fabsf(read_comp(&pr->uv, i, c)) <= lim)))
                return fail(p, KS_STATUS_INVALID_MODEL,
                            "%s: vertex %u has a value that is not finite or above %g in "
                            "magnitude",
                            apath, i, (double)lim);
    pr->has_idx = member(o, "indices") != NULL;
    if (pr->has_idx) {
        if ((st = get_accessor(p, o, "indices", path, 1, idx_types, false, KS__GLB_MAX_INDICES,
                               "KS__GLB_MAX_INDICES", &pr->idx)))
            return st;
        pr->num_indices = pr->idx.count;
        if (!pr->idx.base)
            return fail(p, KS_STATUS_INVALID_MODEL, "accessors[%u]: indices need a bufferView",
                        pr->idx.index);
        for (uint32_t i = 0; i < pr->idx.count; i++) {
            uint32_t v = read_index(&pr->idx, i);
            if (v >= nv)
                return fail(p, KS_STATUS_INVALID_MODEL,
                            "%s.indices: accessors[%u] element %u is %u, POSITION has %u vertices",
                            path, pr->idx.index, i, v, nv);
        }
    } else {
        pr->num_indices = nv;
    }
    if (pr->num_indices % 3)
        return fail(p, KS_STATUS_INVALID_MODEL, "%s: %u %s is not a multiple of 3 (TRIANGLES)",
                    path, pr->num_indices, pr->has_idx ? "indices" : "vertices");
    int64_t mat = -1;
    if ((st = get_index(p, o, "material", path, false, p->num_materials, "materials", &mat)))
        return st;
    pr->material = mat < 0 ? p->num_materials : (uint32_t)mat;
    return KS_STATUS_OK;
}

static ks_status parse_meshes(parser *p) {
    ks_status st = index_table(p, "meshes", KS__GLB_MAX_ELEMENTS, "KS__GLB_MAX_ELEMENTS",
                               &p->meshes_json, &p->num_meshes);
    if (st) return st;
    p->meshes = mem_calloc(p, p->num_meshes, sizeof *p->meshes);
    if (!p->meshes) return oom(p, "meshes");
    uint32_t total = 0;
    for (uint32_t i = 0; i < p->num_meshes; i++) {
        const cJSON *prims = member(p->meshes_json[i], "primitives");
        if (!cJSON_IsArray(prims))
            return fail(p, KS_STATUS_INVALID_MODEL,
                        "meshes[%u].primitives: expected an array, got %s", i, describe(prims));
        int n = cJSON_GetArraySize(prims);
        if (n < 1) return fail(p, KS_STATUS_INVALID_MODEL, "meshes[%u].primitives: empty", i);
        if ((uint32_t)n > KS__GLB_MAX_PRIMITIVES)
            return fail(p, KS_STATUS_LIMIT_EXCEEDED,
                        "meshes[%u].primitives: %d entries, over KS__GLB_MAX_PRIMITIVES (%u)", i, n,
                        KS__GLB_MAX_PRIMITIVES);
        total += (uint32_t)n;
        if (total > KS__GLB_MAX_ELEMENTS)
            return fail(p, KS_STATUS_LIMIT_EXCEEDED,
                        "meshes[%u]: more than KS__GLB_MAX_ELEMENTS (%u) primitives in all", i,
                        KS__GLB_MAX_ELEMENTS);
    }
    p->prims = mem_calloc(p, total, sizeof *p->prims);
    if (!p->prims) return oom(p, "primitives");
    for (uint32_t i = 0; i < p->num_meshes; i++) {
        const cJSON *prims = member(p->meshes_json[i], "primitives");
        p->meshes[i].first_prim = p->num_prims;
        uint32_t j = 0;
        for (const cJSON *e = prims->child; e; e = e->next, j++) {
            char path[64];
            snprintf(path, sizeof path, "meshes[%u].primitives[%u]", i, j);
            if (!cJSON_IsObject(e))
                return fail(p, KS_STATUS_INVALID_MODEL, "%s: expected an object, got %s", path,
                            describe(e));
            if ((st = parse_primitive(p, e, path, &p->prims[p->num_prims]))) return st;
            p->num_prims++;
            p->meshes[i].num_prims++;
        }
    }
    return KS_STATUS_OK;
}

/* ---- nodes -------------------------------------------------------------------------------- */

/* Column-major 4x4: out = a * b (out may not alias). */
static void mat_mul(const float *a, const float *b, float *out) {
    for (int c = 0; c < 4; c++)
        for (int r = 0; r < 4; r++) {
            float s = 0.0f;
            for (int k = 0; k < 4; k++)
                s += a[k * 4 + r] * b[c * 4 + k];
            out[c * 4 + r] = s;
        }
}

static ks_status node_local(parser *p, const cJSON *o, const char *path, float *m) {
    bool present = false;
    const float big = 1e6f; /* beyond any sensible model transform; keeps products finite */
    ks_status st = get_floats(p, o, "matrix", path, 16, -big, big, m, &present);
    if (st || present) return st;
    float t[3] = {0, 0, 0}, q[4] = {0, 0, 0, 1}, s[3] = {1, 1, 1};
    if ((st = get_floats(p, o, "translation", path, 3, -big, big, t, &present)) ||
        (st = get_floats(p, o, "rotation", path, 4, -2.0f, 2.0f, q, &present)) ||
        (st = get_floats(p, o, "scale", path, 3, -big, big, s, &present)))
        return st;
    float n = sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (!(n > 1e-6f))
        return fail(p, KS_STATUS_INVALID_MODEL, "%s.rotation: zero-length quaternion", path);
    float x = q[0] / n, y = q[1] / n, z = q[2] / n, w = q[3] / n;
    float r[9] = {1 - 2 * (y * y + z * z), 2 * (x * y + z * w),     2 * (x * z - y * w),
                  2 * (x * y - z * w),     1 - 2 * (x * x + z * z), 2 * (y * z + x * w),
                  2 * (x * z + y * w),     2 * (y * z - x * w),     1 - 2 * (x * x + y * y)};
    for (int c = 0; c < 3; c++) {
        for (int rr = 0; rr < 3; rr++)
            m[c * 4 + rr] = r[c * 3 + rr] * s[c];
        m[c * 4 + 3] = 0.0f;
    }
    m[12] = t[0];
    m[13] = t[1];
    m[14] = t[2];
    m[15] = 1.0f;
    return KS_STATUS_OK;
}

static ks_status visit(parser *p, uint32_t ni, const float *parent, uint32_t depth) {
    char path[32];
    snprintf(path, sizeof path, "nodes[%u]", ni);
    if (depth > KS__GLB_MAX_DEPTH)
        return fail(p, KS_STATUS_LIMIT_EXCEEDED, "%s: hierarchy deeper than KS__GLB_MAX_DEPTH (%u)",
                    path, KS__GLB_MAX_DEPTH);
    if (p->node_seen[ni])
        return fail(p, KS_STATUS_INVALID_MODEL,
                    "%s: reached twice from the scene (a cycle or a node used as two roots)", path);
    p->node_seen[ni] = 1;
    const cJSON *o = p->nodes[ni];
    float local[16], world[16];
    ks_status st = node_local(p, o, path, local);
    if (st) return st;
    mat_mul(parent, local, world);
    for (int i = 0; i < 16; i++)
        if (!isfinite(world[i]) || fabsf(world[i]) > 1e12f)
            return fail(p, KS_STATUS_INVALID_MODEL, "%s: world matrix overflows", path);
    int64_t mi = -1;
    if ((st = get_index(p, o, "mesh", path, false, p->num_meshes, "meshes", &mi))) return st;
    if (mi >= 0) {
        instance *in = &p->instances[p->num_instances++]; /* <= num_nodes: one per node */
        memcpy(in->world, world, sizeof world);
        in->mesh = (uint32_t)mi;
    }
    const cJSON *children = member(o, "children");
    for (const cJSON *c = children ? children->child : NULL; c; c = c->next) {
        /* children were validated as indices in parse_nodes */
        if ((st = visit(p, (uint32_t)c->valuedouble, world, depth + 1))) return st;
    }
    return KS_STATUS_OK;
}

static ks_status parse_nodes(parser *p) {
    ks_status st =
        index_table(p, "nodes", KS__GLB_MAX_NODES, "KS__GLB_MAX_NODES", &p->nodes, &p->num_nodes);
    if (!st)
        st = index_table(p, "scenes", KS__GLB_MAX_ELEMENTS, "KS__GLB_MAX_ELEMENTS", &p->scenes,
                         &p->num_scenes);
    if (st) return st;
    p->node_parents = mem_calloc(p, p->num_nodes, 1);
    p->node_seen = mem_calloc(p, p->num_nodes, 1);
    p->instances = mem_calloc(p, p->num_nodes, sizeof *p->instances);
    if (!p->node_parents || !p->node_seen || !p->instances) return oom(p, "nodes");
    for (uint32_t i = 0; i < p->num_nodes; i++) {
        const cJSON *ch = member(p->nodes[i], "children");
        if (!ch) continue;
        if (!cJSON_IsArray(ch))
            return fail(p, KS_STATUS_INVALID_MODEL, "nodes[%u].children: expected an array, got %s",
                        i, describe(ch));
        uint32_t k = 0;
        for (const cJSON *c = ch->child; c; c = c->next, k++) {
            double v = cJSON_IsNumber(c) ? c->valuedouble : -1.0;
            if (!(v >= 0.0) || v != floor(v) || v >= p->num_nodes)
                return fail(p, KS_STATUS_INVALID_MODEL,
                            "nodes[%u].children[%u]: expected an index into nodes (%u entries)", i,
                            k, p->num_nodes);
            uint32_t c_index = (uint32_t)v;
            if (c_index == i)
                return fail(p, KS_STATUS_INVALID_MODEL,
                            "nodes[%u].children[%u]: a node cannot be its own child", i, k);
            if (p->node_parents[c_index] >= 1)
                return fail(p, KS_STATUS_INVALID_MODEL,
                            "nodes[%u].children[%u]: nodes[%u] already has a parent", i, k,
                            c_index);
            p->node_parents[c_index] = 1;
        }
    }
    static const float identity[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    int64_t si = -1;
    if ((st = get_index(p, p->root, "scene", "(root)", false, p->num_scenes, "scenes", &si)))
        return st;
    if (si < 0 && p->num_scenes) si = 0;
    if (si < 0) { /* no scene: every root node */
        for (uint32_t i = 0; i < p->num_nodes; i++)
            if (!p->node_parents[i] && (st = visit(p, i, identity, 1))) return st;
        return KS_STATUS_OK;
    }
    char path[32];
    snprintf(path, sizeof path, "scenes[%lld]", (long long)si);
    const cJSON *roots = member(p->scenes[si], "nodes");
    if (!roots) return KS_STATUS_OK;
    if (!cJSON_IsArray(roots))
        return fail(p, KS_STATUS_INVALID_MODEL, "%s.nodes: expected an array, got %s", path,
                    describe(roots));
    uint32_t k = 0;
    for (const cJSON *c = roots->child; c; c = c->next, k++) {
        double v = cJSON_IsNumber(c) ? c->valuedouble : -1.0;
        if (!(v >= 0.0) || v != floor(v) || v >= p->num_nodes)
            return fail(p, KS_STATUS_INVALID_MODEL,
                        "%s.nodes[%u]: expected an index into nodes (%u entries)", path, k,
                        p->num_nodes);
        if (p->node_parents[(uint32_t)v])
            return fail(p, KS_STATUS_INVALID_MODEL, "%s.nodes[%u]: nodes[%u] is not a root", path,
                        k, (uint32_t)v);
        if ((st = visit(p, (uint32_t)v, identity, 1))) return st;
    }
    return KS_STATUS_OK;
}

/* ---- flattening --------------------------------------------------------------------------- */

static ks_status count_output(parser *p, uint64_t *nv_out, uint64_t *ni_out, uint64_t *nd_out) {
    uint64_t nv = 0, ni = 0, nd = 0;
    for (uint32_t i = 0; i < p->num_instances; i++) {
        const mesh *me = &p->meshes[p->instances[i].mesh];
        for (uint32_t j = 0; j < me->num_prims; j++) {
            const prim *pr = &p->prims[me->first_prim + j];
            nv += pr->pos.count;
            ni += pr->num_indices;
            nd++;
        }
        if (nv > KS__GLB_MAX_VERTICES)
            return fail(p, KS_STATUS_LIMIT_EXCEEDED,
                        "meshes[%u]: the flattened scene has more than KS__GLB_MAX_VERTICES (%u) "
                        "vertices",
                        p->instances[i].mesh, KS__GLB_MAX_VERTICES);
        if (ni > KS__GLB_MAX_INDICES)
            return fail(p, KS_STATUS_LIMIT_EXCEEDED,
                        "meshes[%u]: the flattened scene has more than KS__GLB_MAX_INDICES (%u) "
                        "indices",
                        p->instances[i].mesh, KS__GLB_MAX_INDICES);
        if (nd > KS__GLB_MAX_DRAWS)
            return fail(p, KS_STATUS_LIMIT_EXCEEDED,
                        "meshes[%u]: the flattened scene has more than KS__GLB_MAX_DRAWS (%u) "
                        "primitives",
                        p->instances[i].mesh, KS__GLB_MAX_DRAWS);
    }
    *nv_out = nv;
    *ni_out = ni;
    *nd_out = nd;
    return KS_STATUS_OK;
}

static void normalize3(float *v) {
    float n = sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (n > 1e-20f && isfinite(n)) {
        v[0] /= n;
        v[1] /= n;
        v[2] /= n;
    } else {
        v[0] = 0.0f;
        v[1] = 0.0f;
        v[2] = 1.0f;
    }
}

static void emit_primitive(ks__glb_model *m, const prim *pr, const float *w) {
    /* normal matrix: cofactors of the upper 3x3 (= det * inverse transpose), sign-corrected */
    float a = w[0], b = w[4], c = w[8], d = w[1], e = w[5], f = w[9], g = w[2], h = w[6], k = w[10];
    float cof[9] = {e * k - f * h,    -(d * k - f * g), d * h - e * g,
                    -(b * k - c * h), a * k - c * g,    -(a * h - b * g),
                    b * f - c * e,    -(a * f - c * d), a * e - b * d};
    float det = a * cof[0] + b * cof[1] + c * cof[2];
    float sgn = det < 0.0f ? -1.0f : 1.0f;
    uint32_t base = m->num_vertices;
    for (uint32_t i = 0; i < pr->pos.count; i++) {
        ks__glb_vertex *v = &m->vertices[base + i];
        float x = read_comp(&pr->pos, i, 0), y = read_comp(&pr->pos, i, 1),
              z = read_comp(&pr->pos, i, 2);
        for (int r = 0; r < 3; r++)
            v->position[r] = w[r] * x + w[4 + r] * y + w[8 + r] * z + w[12 + r];
        if (pr->has_nrm) {
            float nx = read_comp(&pr->nrm, i, 0), ny = read_comp(&pr->nrm, i, 1),
                  nz = read_comp(&pr->nrm, i, 2);
            /* rows of cof (row-major here) map a normal */
            for (int r = 0; r < 3; r++)
                v->normal[r] = sgn * (cof[r * 3] * nx + cof[r * 3 + 1] * ny + cof[r * 3 + 2] * nz);
            normalize3(v->normal);
        } else {
            v->normal[0] = v->normal[1] = v->normal[2] = 0.0f;
        }
        v->uv[0] = pr->has_uv ? read_comp(&pr->uv, i, 0) : 0.0f;
        v->uv[1] = pr->has_uv ? read_comp(&pr->uv, i, 1) : 0.0f;
    }
    uint32_t *out = &m->indices[m->num_indices];
    for (uint32_t i = 0; i < pr->num_indices; i++)
        out[i] = base + (pr->has_idx ? read_index(&pr->idx, i) : i);
    if (det < 0.0f) /* mirrored: keep front faces counter-clockwise */
        for (uint32_t i = 0; i < pr->num_indices; i += 3) {
            uint32_t t = out[i + 1];
            out[i + 1] = out[i + 2];
            out[i + 2] = t;
        }
    if (!pr->has_nrm) { /* smooth normals: area-weighted face normals */
        for (uint32_t i = 0; i < pr->num_indices; i += 3) {
            ks__glb_vertex *v0 = &m->vertices[out[i]], *v1 = &m->vertices[out[i + 1]],
                           *v2 = &m->vertices[out[i + 2]];
            float u[3], t[3];
            for (int r = 0; r < 3; r++) {
                u[r] = v1->position[r] - v0->position[r];
                t[r] = v2->position[r] - v0->position[r];
            }
            float n[3] = {u[1] * t[2] - u[2] * t[1], u[2] * t[0] - u[0] * t[2],
                          u[0] * t[1] - u[1] * t[0]};
            for (int r = 0; r < 3; r++) {
                v0->normal[r] += n[r];
                v1->normal[r] += n[r];
                v2->normal[r] += n[r];
            }
        }
        for (uint32_t i = 0; i < pr->pos.count; i++)
            normalize3(m->vertices[base + i].normal);
    }
    m->draws[m->num_draws++] = (ks__glb_draw){m->num_indices, pr->num_indices, pr->material};
    m->num_vertices += pr->pos.count;
    m->num_indices += pr->num_indices;
}

/* ---- entry points ------------------------------------------------------------------------- */

void ks__glb_destroy(ks__glb_model *m) {
    if (!m) return;
    ks_allocator a = m->alloc;
    const ks_allocator *pa = (a.alloc && a.free) ? &a : NULL;
    for (uint32_t i = 0; i < m->num_images; i++)
        ks__free(pa, (void *)m->images[i].data);
    ks__free(pa, m->images);
    ks__free(pa, m->materials);
    ks__free(pa, m->draws);
    ks__free(pa, m->indices);
    ks__free(pa, m->vertices);
    ks__free(pa, m);
}

ks_status ks__glb_parse(const ks_allocator *alloc, const uint8_t *data, size_t size_bytes,
                        const char *name, ks__glb_model **model_out, char *err, size_t err_cap) {
    parser p = {.name = name ? name : "glb", .err = err, .cap = err_cap};
    if (alloc && alloc->alloc && alloc->free) p.a = alloc;
    if (err && err_cap) err[0] = '\0';
    if (!data || !model_out)
        return fail(&p, KS_STATUS_INVALID_ARGUMENT, "data and model_out must not be NULL");
    if (size_bytes > KS__GLB_MAX_FILE_BYTES)
        return fail(&p, KS_STATUS_LIMIT_EXCEEDED, "%zu bytes, over KS__GLB_MAX_FILE_BYTES (%u)",
                    size_bytes, KS__GLB_MAX_FILE_BYTES);
    const uint8_t *json = NULL;
    size_t json_bytes = 0;
    ks_status st = read_chunks(&p, data, size_bytes, &json, &json_bytes);
    if (st) return st;
    if ((st = check_depth(&p, (const char *)json, json_bytes))) return st;
    const char *end = NULL;
    p.root = cJSON_ParseWithLengthOpts((const char *)json, json_bytes, &end, 0);
    if (!p.root) {
        size_t at = end ? (size_t)(end - (const char *)json) : 0;
        /* cJSON also fails when its own allocations fail; it cannot tell us which */
        return fail(&p, KS_STATUS_INVALID_MODEL, "JSON chunk: invalid JSON near byte %zu", at);
    }
    p.m = mem_calloc(&p, 1, sizeof *p.m);
    if (!p.m) {
        st = oom(&p, "the model");
        goto error;
    }
    if (p.a) p.m->alloc = *p.a;
    if (!cJSON_IsObject(p.root)) {
        st = fail(&p, KS_STATUS_INVALID_MODEL, "(root): expected an object, got %s",
                  describe(p.root));
        goto error;
    }
    if ((st = check_asset(&p)) || (st = parse_buffers(&p)) || (st = parse_views(&p)) ||
        (st = index_table(&p, "accessors", KS__GLB_MAX_ELEMENTS, "KS__GLB_MAX_ELEMENTS",
                          &p.accessors, &p.num_accessors)) ||
        (st = parse_materials(&p)) || (st = parse_meshes(&p)) || (st = parse_nodes(&p)))
        goto error;
    uint64_t nv = 0, ni = 0, nd = 0;
    if ((st = count_output(&p, &nv, &ni, &nd))) goto error;
    ks__glb_model *m = p.m;
    m->vertices = mem_calloc(&p, (size_t)nv, sizeof *m->vertices);
    m->indices = mem_calloc(&p, (size_t)ni, sizeof *m->indices);
    m->draws = mem_calloc(&p, (size_t)nd, sizeof *m->draws);
    if (!m->vertices || !m->indices || !m->draws) {
        st = oom(&p, "the flattened mesh");
        goto error;
    }
    for (uint32_t i = 0; i < p.num_instances; i++) {
        const mesh *me = &p.meshes[p.instances[i].mesh];
        for (uint32_t j = 0; j < me->num_prims; j++)
            emit_primitive(m, &p.prims[me->first_prim + j], p.instances[i].world);
    }
    for (uint32_t i = 0; i < m->num_vertices; i++)
        for (int r = 0; r < 3; r++) {
            float v = m->vertices[i].position[r];
            if (i == 0 || v < m->bounds_min[r]) m->bounds_min[r] = v;
            if (i == 0 || v > m->bounds_max[r]) m->bounds_max[r] = v;
        }
    *model_out = m;
    p.m = NULL;
    st = KS_STATUS_OK;
error:
    ks__glb_destroy(p.m);
    cJSON_Delete(p.root);
    ks__free(p.a, p.accessors);
    ks__free(p.a, p.views_json);
    ks__free(p.a, p.meshes_json);
    ks__free(p.a, p.nodes);
    ks__free(p.a, p.materials_json);
    ks__free(p.a, p.textures);
    ks__free(p.a, p.images_json);
    ks__free(p.a, p.scenes);
    ks__free(p.a, p.views);
    ks__free(p.a, p.prims);
    ks__free(p.a, p.meshes);
    ks__free(p.a, p.node_parents);
    ks__free(p.a, p.node_seen);
    ks__free(p.a, p.instances);
    ks__free(p.a, p.image_map);
    return st;
}
