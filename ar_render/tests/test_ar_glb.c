/* Tests for the glb reader: a valid two-mesh scene built here (TRS and matrix nodes, a mirrored
 * node, u16 indices, u8 normalized UVs, an embedded PNG, a blended material), each refusal with
 * its status and message, every truncation and many bit flips of the valid file, and an
 * allocation-failure loop. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "glb.h"

/* ---- glb builder ------------------------------------------------------------------------- */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void put32(buf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(b, x, 4);
}
static void putf(buf *b, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    put32(b, u);
}

/* A glb from JSON text and a BIN chunk (bin == NULL: no BIN chunk). */
static buf make_glb(const char *json, const buf *bin) {
    buf out = {0};
    size_t jn = strlen(json), jpad = (4 - jn % 4) % 4;
    size_t bn = bin ? bin->n : 0, bpad = (4 - bn % 4) % 4;
    size_t total = 12 + 8 + jn + jpad + (bin ? 8 + bn + bpad : 0);
    put(&out, "glTF", 4);
    put32(&out, 2);
    put32(&out, (uint32_t)total);
    put32(&out, (uint32_t)(jn + jpad));
    put(&out, "JSON", 4);
    put(&out, json, jn);
    put(&out, "   ", jpad);
    if (bin) {
        put32(&out, (uint32_t)(bn + bpad));
        put(&out, "BIN\0", 4);
        put(&out, bin->p, bn);
        put(&out, "\0\0\0", bpad);
    }
    return out;
}

/* BIN layout of the valid scene (see the JSON below). */
static buf valid_bin(void) {
    buf b = {0};
    static const float quad[] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0};
    for (int i = 0; i < 12; i++)
        putf(&b, quad[i]);        /* view 0: 0..48 */
    for (int i = 0; i < 4; i++) { /* view 1: 48..96 */
        putf(&b, 0);
        putf(&b, 0);
        putf(&b, 1);
    }
    static const uint8_t uv[] = {0, 0, 255, 0, 255, 255, 0, 255}; /* view 2: 96..104 */
    put(&b, uv, 8);
    static const uint16_t idx[] = {0, 1, 2, 0, 2, 3}; /* view 3: 104..116 */
    for (int i = 0; i < 6; i++)
        put(&b, (const uint8_t[]){(uint8_t)idx[i], 0}, 2);
    put(&b, "\0\0\0\0", 4); /* 116..120 */
    static const float tri[] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    for (int i = 0; i < 9; i++)
        putf(&b, tri[i]);                     /* view 4: 120..156 */
    put(&b, "\x89PNG\r\n\x1a\n\0\0\0\0", 12); /* view 5: 156..168 (not decoded here) */
    return b;
}

static const char valid_json[] =
    "{\"asset\":{\"version\":\"2.0\",\"generator\":\"test_glb\"},"
    "\"scene\":0,\"scenes\":[{\"nodes\":[0]}],"
    "\"nodes\":[{\"children\":[1,2],\"translation\":[0,1,0]},"
    "{\"mesh\":0,\"scale\":[2,2,2],\"rotation\":[0,0,0,1]},"
    "{\"mesh\":1,\"matrix\":[-1,0,0,0,0,1,0,0,0,0,1,0,0,0,0,1]},"
    "{\"mesh\":0}],"
    "\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0,\"NORMAL\":1,\"TEXCOORD_0\":2},"
    "\"indices\":3,\"material\":0,\"mode\":4}]},"
    "{\"primitives\":[{\"attributes\":{\"POSITION\":4},\"material\":1}]}],"
    "\"materials\":[{\"pbrMetallicRoughness\":{\"baseColorFactor\":[1,0,0,1],"
    "\"baseColorTexture\":{\"index\":0}}},"
    "{\"alphaMode\":\"BLEND\",\"doubleSided\":true,"
    "\"pbrMetallicRoughness\":{\"baseColorFactor\":[0,0,1,0.5]}}],"
    "\"textures\":[{\"source\":0}],"
    "\"images\":[{\"bufferView\":5,\"mimeType\":\"image/png\"}],"
    "\"accessors\":["
    "{\"bufferView\":0,\"componentType\":5126,\"count\":4,\"type\":\"VEC3\",\"min\":[0,0,0]},"
    "{\"bufferView\":1,\"componentType\":5126,\"count\":4,\"type\":\"VEC3\"},"
    "{\"bufferView\":2,\"componentType\":5121,\"normalized\":true,\"count\":4,\"type\":\"VEC2\"},"
    "{\"bufferView\":3,\"componentType\":5123,\"count\":6,\"type\":\"SCALAR\"},"
    "{\"bufferView\":4,\"componentType\":5126,\"count\":3,\"type\":\"VEC3\"}],"
    "\"bufferViews\":["
    "{\"buffer\":0,\"byteOffset\":0,\"byteLength\":48},"
    "{\"buffer\":0,\"byteOffset\":48,\"byteLength\":48,\"byteStride\":12},"
    "{\"buffer\":0,\"byteOffset\":96,\"byteLength\":8},"
    "{\"buffer\":0,\"byteOffset\":104,\"byteLength\":12},"
    "{\"buffer\":0,\"byteOffset\":120,\"byteLength\":36},"
    "{\"buffer\":0,\"byteOffset\":156,\"byteLength\":12}],"
    "\"buffers\":[{\"byteLength\":168}]}";

static buf valid_glb(void) {
    buf bin = valid_bin();
    buf g = make_glb(valid_json, &bin);
    free(bin.p);
    return g;
}

/* valid_json with the first occurrence of `from` replaced by `to`. */
static char *json_with(const char *from, const char *to) {
    const char *at = strstr(valid_json, from);
    assert_non_null(at);
    size_t n = strlen(valid_json) - strlen(from) + strlen(to);
    char *s = malloc(n + 1);
    assert_non_null(s);
    size_t pre = (size_t)(at - valid_json);
    memcpy(s, valid_json, pre);
    strcpy(s + pre, to);
    strcat(s, at + strlen(from));
    return s;
}

/* ---- counting allocator (leak check and failure injection) ------------------------------ */

typedef struct counter {
    long live, calls, fail_at; /* fail_at < 0: never */
} counter;

static void *count_alloc(void *user, size_t n, size_t align) {
    counter *c = user;
    (void)align;
    if (c->fail_at >= 0 && c->calls++ == c->fail_at) return NULL;
    void *p = malloc(n);
    if (p) c->live++;
    return p;
}
static void count_free(void *user, void *p) {
    counter *c = user;
    if (p) c->live--;
    free(p);
}

static ks_status parse(const buf *g, ks__glb_model **m, char *err, size_t err_cap) {
    return ks__glb_parse(NULL, g->p, g->n, "t.glb", m, err, err_cap);
}

/* ---- tests -------------------------------------------------------------------------------- */

static void near3(const float *v, float x, float y, float z) {
    assert_true(fabsf(v[0] - x) < 1e-5f && fabsf(v[1] - y) < 1e-5f && fabsf(v[2] - z) < 1e-5f);
}

static void test_valid_scene(void **state) {
    (void)state;
    buf g = valid_glb();
    ks__glb_model *m = NULL;
    char err[256];
    ks_status st = parse(&g, &m, err, sizeof err);
    if (st) print_error("%s\n", err);
    assert_int_equal(st, KS_STATUS_OK);
    assert_int_equal(m->num_vertices, 7);
    assert_int_equal(m->num_indices, 9);
    assert_int_equal(m->num_draws, 2);
    assert_int_equal(m->num_materials, 3); /* two + the default */
    assert_int_equal(m->num_images, 1);
    assert_int_equal(m->images[0].format, KS__GLB_IMAGE_PNG);
    assert_int_equal(m->images[0].size_bytes, 12);
    /* quad: scaled by 2 under a parent translated by (0, 1, 0) */
    near3(m->vertices[2].position, 2, 3, 0);
    near3(m->vertices[2].normal, 0, 0, 1);
    assert_true(fabsf(m->vertices[2].uv[0] - 1.0f) < 1e-6f);
    assert_true(fabsf(m->vertices[3].uv[1] - 1.0f) < 1e-6f);
    /* mirrored triangle: x negated, winding flipped, computed normal still faces +z */
    near3(m->vertices[5].position, -1, 1, 0);
    assert_int_equal(m->indices[6], 4);
    assert_int_equal(m->indices[7], 6);
    assert_int_equal(m->indices[8], 5);
    for (int i = 4; i < 7; i++)
        near3(m->vertices[i].normal, 0, 0, 1);
    assert_int_equal(m->draws[0].first_index, 0);
    assert_int_equal(m->draws[0].num_indices, 6);
    assert_int_equal(m->draws[1].first_index, 6);
    assert_int_equal(m->draws[1].material, 1);
    const ks__glb_material *m0 = &m->materials[0], *m1 = &m->materials[1];
    assert_int_equal(m0->base_color_image, 0);
    assert_true(m0->base_color[0] == 1.0f && m0->base_color[1] == 0.0f);
    assert_int_equal(m1->alpha_mode, KS__GLB_ALPHA_BLEND);
    assert_true(m1->double_sided);
    assert_true(m1->base_color[3] == 0.5f);
    assert_int_equal(m->materials[2].base_color_image, -1);
    near3(m->bounds_min, -1, 1, 0);
    near3(m->bounds_max, 2, 3, 0);
    for (uint32_t i = 0; i < m->num_indices; i++)
        assert_true(m->indices[i] < m->num_vertices);
    ks__glb_destroy(m);
    ks__glb_destroy(NULL);
    free(g.p);
}

typedef struct json_case {
    const char *from, *to;
    ks_status status;
    const char *message; /* substring of the error */
} json_case;

static void test_json_refusals(void **state) {
    (void)state;
    static const json_case cases[] = {
        {"\"version\":\"2.0\"", "\"version\":\"3.0\"", KS_STATUS_VERSION_MISMATCH, "asset.version"},
        {"\"asset\":{", "\"extensionsRequired\":[\"KHR_draco_mesh_compression\"],\"asset\":{",
         KS_STATUS_UNSUPPORTED, "KHR_draco_mesh_compression"},
        {"\"count\":4,\"type\":\"VEC3\",\"min\"", "\"count\":5,\"type\":\"VEC3\",\"min\"",
         KS_STATUS_INVALID_MODEL, "accessors[0].count"},
        {"\"count\":4,\"type\":\"VEC3\",\"min\"", "\"count\":300000,\"type\":\"VEC3\",\"min\"",
         KS_STATUS_LIMIT_EXCEEDED, "accessors[0].count"},
        {"\"count\":4,\"type\":\"VEC3\",\"min\"", "\"count\":-1,\"type\":\"VEC3\",\"min\"",
         KS_STATUS_INVALID_MODEL, "accessors[0].count"},
        {"\"count\":4,\"type\":\"VEC3\",\"min\"", "\"count\":1.5,\"type\":\"VEC3\",\"min\"",
         KS_STATUS_INVALID_MODEL, "accessors[0].count"},
        {"\"count\":4,\"type\":\"VEC3\",\"min\"", "\"count\":\"4\",\"type\":\"VEC3\",\"min\"",
         KS_STATUS_INVALID_MODEL,
         "accessors[0].count: expected a non-negative integer, got a "
         "string"},
        {"{\"bufferView\":0,\"componentType\":5126", "{\"bufferView\":0,\"componentType\":5125",
         KS_STATUS_INVALID_MODEL, "accessors[0].componentType"},
        {"{\"bufferView\":0,\"componentType\":5126", "{\"bufferView\":0,\"componentType\":7",
         KS_STATUS_INVALID_MODEL, "accessors[0].componentType: 7"},
        {"\"count\":3,\"type\":\"VEC3\"", "\"count\":3,\"type\":\"VEC2\"", KS_STATUS_INVALID_MODEL,
         "accessors[4].type"},
        {"\"componentType\":5121,\"normalized\":true", "\"componentType\":5121",
         KS_STATUS_INVALID_MODEL, "accessors[2].normalized"},
        {"{\"bufferView\":1,", "{\"sparse\":{},\"bufferView\":1,", KS_STATUS_UNSUPPORTED,
         "accessors[1].sparse"},
        {"\"byteOffset\":156,\"byteLength\":12", "\"byteOffset\":160,\"byteLength\":12",
         KS_STATUS_INVALID_MODEL, "bufferViews[5]: byteOffset 160"},
        {"\"byteLength\":48,\"byteStride\":12", "\"byteLength\":48,\"byteStride\":6",
         KS_STATUS_INVALID_MODEL, "bufferViews[1].byteStride"},
        {"\"byteLength\":48,\"byteStride\":12", "\"byteLength\":48,\"byteStride\":8",
         KS_STATUS_INVALID_MODEL, "byteStride 8 is less than the 12-byte element"},
        {"\"byteLength\":48,\"byteStride\":12", "\"byteLength\":48,\"byteStride\":16",
         KS_STATUS_INVALID_MODEL, "accessors[1].count: 4 elements"},
        {"\"buffers\":[{\"byteLength\":168}]", "\"buffers\":[{\"byteLength\":400}]",
         KS_STATUS_INVALID_MODEL, "buffers[0].byteLength"},
        {"\"buffers\":[{\"byteLength\":168}]", "\"buffers\":[{\"uri\":\"a.bin\",\"byteLength\":1}]",
         KS_STATUS_UNSUPPORTED, "bufferViews[0].buffer"},
        {"{\"buffer\":0,\"byteOffset\":0,", "{\"buffer\":1,\"byteOffset\":0,",
         KS_STATUS_INVALID_MODEL, "bufferViews[0].buffer: 1 is not an index"},
        {"\"indices\":3", "\"indices\":9", KS_STATUS_INVALID_MODEL,
         "meshes[0].primitives[0].indices: 9 is not an index"},
        {"\"mode\":4", "\"mode\":1", KS_STATUS_UNSUPPORTED, "meshes[0].primitives[0].mode"},
        {"\"mode\":4", "\"mode\":99", KS_STATUS_INVALID_MODEL, "meshes[0].primitives[0].mode"},
        {"{\"POSITION\":4}", "{\"NORMAL\":4}", KS_STATUS_INVALID_MODEL,
         "meshes[1].primitives[0].attributes.POSITION: missing"},
        {"\"POSITION\":0,\"NORMAL\":1,\"TEXCOORD_0\":2", "\"POSITION\":0,\"NORMAL\":4",
         KS_STATUS_INVALID_MODEL, "NORMAL/TEXCOORD_0 count"},
        {"\"material\":1", "\"material\":2", KS_STATUS_INVALID_MODEL,
         "meshes[1].primitives[0].material"},
        {"\"children\":[1,2]", "\"children\":[1,2,1]", KS_STATUS_INVALID_MODEL,
         "nodes[0].children[2]: nodes[1] already has a parent"},
        {"{\"mesh\":0,\"scale\"", "{\"mesh\":0,\"children\":[0],\"scale\"", KS_STATUS_INVALID_MODEL,
         "scenes[0].nodes[0]: nodes[0] is not a root"},
        {"\"children\":[1,2]", "\"children\":[1,2,7]", KS_STATUS_INVALID_MODEL,
         "nodes[0].children[2]"},
        {"{\"mesh\":0}]", "{\"mesh\":0,\"children\":[3]}]", KS_STATUS_INVALID_MODEL,
         "nodes[3].children[0]"},
        {"\"scenes\":[{\"nodes\":[0]}]", "\"scenes\":[{\"nodes\":[0,0]}]", KS_STATUS_INVALID_MODEL,
         "nodes[0]: reached twice"},
        {"\"scene\":0", "\"scene\":3", KS_STATUS_INVALID_MODEL, "(root).scene"},
        {"\"translation\":[0,1,0]", "\"translation\":[0,1]", KS_STATUS_INVALID_MODEL,
         "nodes[0].translation"},
        {"\"translation\":[0,1,0]", "\"translation\":[0,1e30,0]", KS_STATUS_INVALID_MODEL,
         "nodes[0].translation[1]"},
        {"\"rotation\":[0,0,0,1]", "\"rotation\":[0,0,0,0]", KS_STATUS_INVALID_MODEL,
         "nodes[1].rotation: zero-length"},
        {"\"matrix\":[-1,0,0,0,", "\"matrix\":[-1,0,0,", KS_STATUS_INVALID_MODEL,
         "nodes[2].matrix"},
        {"\"baseColorFactor\":[1,0,0,1]", "\"baseColorFactor\":[2,0,0,1]", KS_STATUS_INVALID_MODEL,
         "materials[0].pbrMetallicRoughness.baseColorFactor[0]"},
        {"\"alphaMode\":\"BLEND\"", "\"alphaMode\":\"ADD\"", KS_STATUS_INVALID_MODEL,
         "materials[1].alphaMode"},
        {"\"mimeType\":\"image/png\"", "\"mimeType\":\"image/jpeg\"", KS_STATUS_INVALID_MODEL,
         "images[0]: mimeType image/jpeg"},
        {"\"mimeType\":\"image/png\"", "\"mimeType\":\"image/webp\"", KS_STATUS_UNSUPPORTED,
         "images[0].mimeType"},
        {"{\"bufferView\":5,", "{\"uri\":\"x.png\",\"bufferView\":5,", KS_STATUS_UNSUPPORTED,
         "images[0].uri"},
        {"\"textures\":[{\"source\":0}]", "\"textures\":[{\"source\":4}]", KS_STATUS_INVALID_MODEL,
         "textures[0].source"},
        {"\"baseColorTexture\":{\"index\":0}", "\"baseColorTexture\":{\"index\":0,\"texCoord\":1}",
         KS_STATUS_UNSUPPORTED, "baseColorTexture.texCoord"},
        {"\"meshes\":[", "\"meshes\":[{\"primitives\":[]},", KS_STATUS_INVALID_MODEL,
         "meshes[0].primitives: empty"},
        {"\"nodes\":[{", "\"nodes\":[7,{", KS_STATUS_INVALID_MODEL,
         "nodes[0]: expected an object, got a number"},
        {"\"accessors\":[", "\"accessors\":{\"a\":1},\"x\":[", KS_STATUS_INVALID_MODEL,
         "accessors: expected an array"},
        {"{\"asset\"", "[{\"asset\"", KS_STATUS_INVALID_MODEL, "JSON chunk: invalid JSON"},
    };
    buf bin = valid_bin();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *json = json_with(cases[i].from, cases[i].to);
        buf g = make_glb(json, &bin);
        ks__glb_model *m = NULL;
        char err[512];
        ks_status st = parse(&g, &m, err, sizeof err);
        if (st != cases[i].status || !strstr(err, cases[i].message) ||
            strncmp(err, "t.glb: ", 7) != 0)
            print_error("case %zu: status %d, message \"%s\"; expected %d with \"%s\"\n", i,
                        (int)st, err, (int)cases[i].status, cases[i].message);
        assert_int_equal(st, cases[i].status);
        assert_non_null(strstr(err, cases[i].message));
        assert_null(m);
        free(json);
        free(g.p);
    }
    free(bin.p);
}

static void test_index_out_of_range(void **state) {
    (void)state;
    buf bin = valid_bin();
    bin.p[104 + 4] = 9; /* third index of the quad */
    buf g = make_glb(valid_json, &bin);
    ks__glb_model *m = NULL;
    char err[256];
    assert_int_equal(parse(&g, &m, err, sizeof err), KS_STATUS_INVALID_MODEL);
    assert_non_null(strstr(err, "meshes[0].primitives[0].indices: accessors[3] element 2 is 9"));
    free(g.p);
    /* a NaN position */
    memcpy(bin.p + 104 + 4, "\x02\x00", 2);
    memcpy(bin.p + 4, "\x00\x00\xc0\x7f", 4);
    g = make_glb(valid_json, &bin);
    assert_int_equal(parse(&g, &m, err, sizeof err), KS_STATUS_INVALID_MODEL);
    assert_non_null(strstr(err, "vertex 0 has a value that is not finite"));
    free(g.p);
    free(bin.p);
}

static void test_container(void **state) {
    (void)state;
    buf g = valid_glb();
    ks__glb_model *m = NULL;
    char err[256];
    g.p[0] = 'x';
    assert_int_equal(parse(&g, &m, err, sizeof err), KS_STATUS_INVALID_MODEL);
    assert_non_null(strstr(err, "magic"));
    g.p[0] = 'g';
    g.p[4] = 1;
    assert_int_equal(parse(&g, &m, err, sizeof err), KS_STATUS_VERSION_MISMATCH);
    g.p[4] = 2;
    g.p[12 + 4] = 'X'; /* JSON chunk type */
    assert_int_equal(parse(&g, &m, err, sizeof err), KS_STATUS_INVALID_MODEL);
    assert_non_null(strstr(err, "chunk 0"));
    g.p[12 + 4] = 'J';
    assert_int_equal(ks__glb_parse(NULL, NULL, 0, "t.glb", &m, err, sizeof err),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(
        ks__glb_parse(NULL, g.p, (size_t)KS__GLB_MAX_FILE_BYTES + 1, "t.glb", &m, err, sizeof err),
        KS_STATUS_LIMIT_EXCEEDED);
    /* err may be NULL */
    g.p[0] = 'x';
    assert_int_equal(ks__glb_parse(NULL, g.p, g.n, NULL, &m, NULL, 0), KS_STATUS_INVALID_MODEL);
    assert_null(m);
    free(g.p);
    /* no BIN chunk and no buffers: valid, empty scene */
    buf e = make_glb("{\"asset\":{\"version\":\"2.1\"}}", NULL);
    assert_int_equal(parse(&e, &m, err, sizeof err), KS_STATUS_OK);
    assert_int_equal(m->num_draws, 0);
    assert_int_equal(m->num_materials, 1);
    ks__glb_destroy(m);
    free(e.p);
    /* unknown chunks after BIN are skipped */
    buf bin = valid_bin();
    g = make_glb(valid_json, &bin);
    put32(&g, 4);
    put(&g, "XTRA", 4);
    put32(&g, 0);
    uint32_t total = (uint32_t)g.n;
    memcpy(g.p + 8, &total, 4);
    m = NULL;
    assert_int_equal(parse(&g, &m, err, sizeof err), KS_STATUS_OK);
    ks__glb_destroy(m);
    free(g.p);
    free(bin.p);
}

static void test_limits(void **state) {
    (void)state;
    char err[256];
    ks__glb_model *m = NULL;
    /* a chain of nodes deeper than KS__GLB_MAX_DEPTH */
    buf j = {0};
    const char *head = "{\"asset\":{\"version\":\"2.0\"},\"nodes\":[";
    put(&j, head, strlen(head));
    for (uint32_t i = 0; i < KS__GLB_MAX_DEPTH + 1; i++) {
        char node[48];
        int n = i == KS__GLB_MAX_DEPTH ? snprintf(node, sizeof node, "{}]}")
                                       : snprintf(node, sizeof node, "{\"children\":[%u]},", i + 1);
        put(&j, node, (size_t)n);
    }
    put(&j, "", 1);
    buf g = make_glb((const char *)j.p, NULL);
    assert_int_equal(parse(&g, &m, err, sizeof err), KS_STATUS_LIMIT_EXCEEDED);
    assert_non_null(strstr(err, "KS__GLB_MAX_DEPTH"));
    free(g.p);
    free(j.p);
    /* a cycle not reachable from a root draws nothing; reached from a scene it is refused */
    g = make_glb(
        "{\"asset\":{\"version\":\"2.0\"},\"nodes\":[{\"children\":[1]},{\"children\":[0]}]}",
        NULL);
    assert_int_equal(parse(&g, &m, err, sizeof err), KS_STATUS_OK);
    ks__glb_destroy(m);
    free(g.p);
    g = make_glb("{\"asset\":{\"version\":\"2.0\"},\"scenes\":[{\"nodes\":[0]}],"
                 "\"nodes\":[{\"children\":[1]},{\"children\":[2]},{\"children\":[1]}]}",
                 NULL);
    assert_int_equal(parse(&g, &m, err, sizeof err), KS_STATUS_INVALID_MODEL);
    free(g.p);
    /* JSON nesting */
    j = (buf){0};
    put(&j, "{\"asset\":{\"version\":\"2.0\"},\"x\":", 31);
    for (int i = 0; i < 100; i++)
        put(&j, "[", 1);
    for (int i = 0; i < 100; i++)
        put(&j, "]", 1);
    put(&j, "}", 2);
    g = make_glb((const char *)j.p, NULL);
    assert_int_equal(parse(&g, &m, err, sizeof err), KS_STATUS_LIMIT_EXCEEDED);
    assert_non_null(strstr(err, "KS__GLB_MAX_JSON_DEPTH"));
    free(g.p);
    free(j.p);
    /* many instances of one mesh: over KS__GLB_MAX_DRAWS */
    j = (buf){0};
    const char *h2 = "{\"asset\":{\"version\":\"2.0\"},\"nodes\":[";
    put(&j, h2, strlen(h2));
    for (uint32_t i = 0; i <= KS__GLB_MAX_DRAWS; i++)
        put(&j, i ? ",{\"mesh\":0}" : "{\"mesh\":0}", i ? 11 : 10);
    const char *tail =
        "],\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0}}]}],"
        "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":3,\"type\":\"VEC3\"}],"
        "\"bufferViews\":[{\"buffer\":0,\"byteOffset\":120,\"byteLength\":36}],"
        "\"buffers\":[{\"byteLength\":168}]}";
    put(&j, tail, strlen(tail) + 1);
    buf bin = valid_bin();
    g = make_glb((const char *)j.p, &bin);
    assert_int_equal(parse(&g, &m, err, sizeof err), KS_STATUS_LIMIT_EXCEEDED);
    assert_non_null(strstr(err, "KS__GLB_MAX_DRAWS"));
    free(g.p);
    free(j.p);
    free(bin.p);
}

/* Every proper prefix and many single-bit flips of the valid file: never a crash (run under
 * ASan/UBSan in the sanitizer build), never a leak, and every failure names the file. */
static void test_truncations_and_flips(void **state) {
    (void)state;
    buf g = valid_glb();
    counter c = {0, 0, -1};
    ks_allocator a = {count_alloc, count_free, &c};
    char err[512];
    for (size_t n = 0; n < g.n; n++) {
        ks__glb_model *m = NULL;
        ks_status st = ks__glb_parse(&a, g.p, n, "t.glb", &m, err, sizeof err);
        assert_int_not_equal(st, KS_STATUS_OK);
        assert_int_equal(strncmp(err, "t.glb: ", 7), 0);
        assert_int_equal(c.live, 0);
    }
    uint8_t *copy = malloc(g.n);
    assert_non_null(copy);
    uint32_t num_ok = 0;
    for (size_t i = 0; i < g.n; i++)
        for (int bit = 0; bit < 8; bit += (i < 12 + 8 ? 1 : 3)) {
            memcpy(copy, g.p, g.n);
            copy[i] ^= (uint8_t)(1u << bit);
            ks__glb_model *m = NULL;
            ks_status st = ks__glb_parse(&a, copy, g.n, "t.glb", &m, err, sizeof err);
            if (st == KS_STATUS_OK) {
                num_ok++;
                for (uint32_t k = 0; k < m->num_indices; k++)
                    assert_true(m->indices[k] < m->num_vertices);
                for (uint32_t k = 0; k < m->num_draws; k++) {
                    assert_true(m->draws[k].material < m->num_materials);
                    assert_true(m->draws[k].first_index + m->draws[k].num_indices <=
                                m->num_indices);
                }
                ks__glb_destroy(m);
            } else {
                assert_int_equal(strncmp(err, "t.glb: ", 7), 0);
            }
            assert_int_equal(c.live, 0);
        }
    assert_true(num_ok > 0); /* flips in float data still parse */
    free(copy);
    free(g.p);
}

static void test_allocation_failures(void **state) {
    (void)state;
    buf g = valid_glb();
    char err[256];
    ks_status st = KS_STATUS_OUT_OF_MEMORY;
    for (long k = 0; st == KS_STATUS_OUT_OF_MEMORY; k++) {
        counter c = {0, 0, k};
        ks_allocator a = {count_alloc, count_free, &c};
        ks__glb_model *m = NULL;
        st = ks__glb_parse(&a, g.p, g.n, "t.glb", &m, err, sizeof err);
        if (st == KS_STATUS_OK) {
            ks__glb_destroy(m);
        } else {
            assert_int_equal(st, KS_STATUS_OUT_OF_MEMORY);
            assert_null(m);
        }
        assert_int_equal(c.live, 0);
        assert_true(k < 100);
    }
    free(g.p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_scene),
        cmocka_unit_test(test_json_refusals),
        cmocka_unit_test(test_index_out_of_range),
        cmocka_unit_test(test_container),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_truncations_and_flips),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
