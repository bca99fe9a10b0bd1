/* Shared by the mesh3d tests (test_ar_mesh3d.c, test_ar_gl_mesh3d.c): a glasses-shaped glb built
 * in C, a STORED zip writer for the .kfx package around it, and the landmark + pose fixture
 * reader (mesh3d_astronaut_face.json, written by gen_mesh3d_golden.py from ks-vision).
 * Test-only code: aborts through cmocka asserts on any failure. */
#ifndef KESTREL_AR_MESH3D_TEST_UTIL_H
#define KESTREL_AR_MESH3D_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kestrel/ar.h"

typedef struct m3_buf {
    uint8_t *p;
    size_t n, cap;
} m3_buf;

static inline void m3_put(m3_buf *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 256;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}
static inline void m3_le(m3_buf *b, uint32_t v, int bytes) {
    for (int i = 0; i < bytes; i++) {
        uint8_t c = (uint8_t)(v >> (8 * i));
        m3_put(b, &c, 1);
    }
}
static inline void m3_f32(m3_buf *b, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    m3_le(b, u, 4);
}

/* ---- glasses glb ---------------------------------------------------------------------------
 * Canonical-space centimetres, origin at the anchor (landmark 168, the nose bridge). Frame:
 * two rectangular rims around the eyes, a bridge, hinges and two temples running back 10 cm
 * along -z past the ears, all in one opaque primitive; the lenses are a second, blended
 * primitive (tinted, alpha 0.35). */

typedef struct m3_mesh {
    m3_buf pos, nrm, idx; /* float xyz, float xyz, u32 */
    uint32_t num_vertices, num_indices;
} m3_mesh;

static inline void m3_box(m3_mesh *m, float x0, float y0, float z0, float x1, float y1, float z1) {
    /* 6 faces x 4 vertices with face normals; counter-clockwise seen from outside */
    static const int faces[6][4][3] = {
        {{1, 0, 0}, {1, 1, 0}, {1, 1, 1}, {1, 0, 1}}, /* +x */
        {{0, 0, 0}, {0, 0, 1}, {0, 1, 1}, {0, 1, 0}}, /* -x */
        {{0, 1, 0}, {0, 1, 1}, {1, 1, 1}, {1, 1, 0}}, /* +y */
        {{0, 0, 0}, {1, 0, 0}, {1, 0, 1}, {0, 0, 1}}, /* -y */
        {{0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}}, /* +z */
        {{0, 0, 0}, {0, 1, 0}, {1, 1, 0}, {1, 0, 0}}, /* -z */
    };
    static const float normals[6][3] = {{1, 0, 0},  {-1, 0, 0}, {0, 1, 0},
                                        {0, -1, 0}, {0, 0, 1},  {0, 0, -1}};
    float lo[3] = {x0, y0, z0}, hi[3] = {x1, y1, z1};
    for (int f = 0; f < 6; f++) {
        uint32_t base = m->num_vertices;
        for (int v = 0; v < 4; v++) {
            for (int c = 0; c < 3; c++)
                m3_f32(&m->pos, faces[f][v][c] ? hi[c] : lo[c]);
            for (int c = 0; c < 3; c++)
                m3_f32(&m->nrm, normals[f][c]);
            m->num_vertices++;
        }
        static const uint32_t quad[6] = {0, 1, 2, 0, 2, 3};
        for (int k = 0; k < 6; k++)
            m3_le(&m->idx, base + quad[k], 4);
        m->num_indices += 6;
    }
}

/* A rim: rectangle centred at (cx, cy), outer size w x h, bar thickness t, depth d at z. */
static inline void m3_rim(m3_mesh *m, float cx, float cy, float w, float h, float t, float z,
                          float d) {
    float x0 = cx - w / 2, x1 = cx + w / 2, y0 = cy - h / 2, y1 = cy + h / 2;
    m3_box(m, x0, y1 - t, z - d, x1, y1, z);         /* top */
    m3_box(m, x0, y0, z - d, x1, y0 + t, z);         /* bottom */
    m3_box(m, x0, y0 + t, z - d, x0 + t, y1 - t, z); /* outer/inner sides */
    m3_box(m, x1 - t, y0 + t, z - d, x1, y1 - t, z);
}

/* Geometry constants shared with the occlusion checks of the GL test. */
#define M3_LENS_CX 3.3f
#define M3_LENS_CY (-0.7f)
#define M3_LENS_W 5.2f
#define M3_LENS_H 3.6f
#define M3_FRONT_Z 0.6f
#define M3_TEMPLE_X 7.1f
#define M3_TEMPLE_Y 0.2f
#define M3_TEMPLE_BACK_Z (-10.0f)

static inline void m3_glasses_meshes(m3_mesh *frame, m3_mesh *lens) {
    memset(frame, 0, sizeof *frame);
    memset(lens, 0, sizeof *lens);
    const float t = 0.45f, d = 0.5f, z = M3_FRONT_Z;
    for (int s = -1; s <= 1; s += 2)
        m3_rim(frame, (float)s * M3_LENS_CX, M3_LENS_CY, M3_LENS_W, M3_LENS_H, t, z, d);
    m3_box(frame, -0.75f, 0.2f, z - d, 0.75f, 0.6f, z); /* bridge */
    for (int s = -1; s <= 1; s += 2) {
        float xo = (float)s * (M3_LENS_CX + M3_LENS_W / 2);
        float xa = fminf(xo, (float)s * M3_TEMPLE_X), xb = fmaxf(xo, (float)s * M3_TEMPLE_X);
        m3_box(frame, xa, M3_TEMPLE_Y - 0.25f, z - d, xb, M3_TEMPLE_Y + 0.35f, z); /* hinge */
        float tx0 = (float)s * M3_TEMPLE_X - 0.2f, tx1 = (float)s * M3_TEMPLE_X + 0.2f;
        m3_box(frame, tx0, M3_TEMPLE_Y - 0.25f, M3_TEMPLE_BACK_Z, tx1, M3_TEMPLE_Y + 0.35f, z - d);
    }
    for (int s = -1; s <= 1; s += 2) { /* lens: a thin slab inside the rim */
        float cx = (float)s * M3_LENS_CX;
        m3_box(lens, cx - M3_LENS_W / 2 + 0.3f, M3_LENS_CY - M3_LENS_H / 2 + 0.3f, z - 0.35f,
               cx + M3_LENS_W / 2 - 0.3f, M3_LENS_CY + M3_LENS_H / 2 - 0.3f, z - 0.25f);
    }
}

/* A glb with one node, one mesh and one primitive per entry of `prims` (1 or 2), material i =
 * `materials_json` entry i. */
static inline m3_buf m3_glb(m3_mesh *prims, int num_prims, const char *materials_json) {
    m3_buf bin = {0};
    size_t off[6] = {0}, len[6] = {0};
    for (int i = 0; i < 3 * num_prims; i++) {
        m3_buf *part = i % 3 == 0   ? &prims[i / 3].pos
                       : i % 3 == 1 ? &prims[i / 3].nrm
                                    : &prims[i / 3].idx;
        off[i] = bin.n;
        len[i] = part->n;
        m3_put(&bin, part->p, part->n);
        free(part->p);
    }
    char json[4096], acc[1024] = "", views[1024] = "", meshes[512] = "";
    for (int i = 0; i < num_prims; i++) {
        size_t a = strlen(acc), v = strlen(views), m = strlen(meshes);
        snprintf(acc + a, sizeof acc - a,
                 "%s{\"bufferView\":%d,\"componentType\":5126,\"count\":%u,\"type\":\"VEC3\"},"
                 "{\"bufferView\":%d,\"componentType\":5126,\"count\":%u,\"type\":\"VEC3\"},"
                 "{\"bufferView\":%d,\"componentType\":5125,\"count\":%u,\"type\":\"SCALAR\"}",
                 i ? "," : "", 3 * i, prims[i].num_vertices, 3 * i + 1, prims[i].num_vertices,
                 3 * i + 2, prims[i].num_indices);
        for (int k = 0; k < 3; k++) {
            v = strlen(views);
            snprintf(views + v, sizeof views - v,
                     "%s{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":%zu}", i || k ? "," : "",
                     off[3 * i + k], len[3 * i + k]);
        }
        snprintf(meshes + m, sizeof meshes - m,
                 "%s{\"attributes\":{\"POSITION\":%d,\"NORMAL\":%d},\"indices\":%d,"
                 "\"material\":%d}",
                 i ? "," : "", 3 * i, 3 * i + 1, 3 * i + 2, i);
    }
    int jn = snprintf(json, sizeof json,
                      "{\"asset\":{\"version\":\"2.0\",\"generator\":\"kestrel mesh3d test\"},"
                      "\"scene\":0,\"scenes\":[{\"nodes\":[0]}],\"nodes\":[{\"mesh\":0}],"
                      "\"meshes\":[{\"primitives\":[%s]}],\"materials\":%s,"
                      "\"accessors\":[%s],\"bufferViews\":[%s],\"buffers\":[{\"byteLength\":%zu}]}",
                      meshes, materials_json, acc, views, bin.n);
    assert_true(jn > 0 && (size_t)jn < sizeof json - 4);
    while (jn % 4)
        json[jn++] = ' ';
    while (bin.n % 4)
        m3_put(&bin, "", 1);
    m3_buf g = {0};
    m3_put(&g, "glTF", 4);
    m3_le(&g, 2, 4);
    m3_le(&g, (uint32_t)(12 + 8 + (size_t)jn + 8 + bin.n), 4);
    m3_le(&g, (uint32_t)jn, 4);
    m3_put(&g, "JSON", 4);
    m3_put(&g, json, (size_t)jn);
    m3_le(&g, (uint32_t)bin.n, 4);
    m3_put(&g, "BIN\0", 4);
    m3_put(&g, bin.p, bin.n);
    free(bin.p);
    return g;
}

static inline m3_buf m3_glasses_glb(void) {
    m3_mesh prims[2];
    m3_glasses_meshes(&prims[0], &prims[1]);
    return m3_glb(prims, 2,
                  "[{\"pbrMetallicRoughness\":{\"baseColorFactor\":[0.45,0.05,0.04,1]}},"
                  "{\"alphaMode\":\"BLEND\",\"pbrMetallicRoughness\":{\"baseColorFactor\":"
                  "[0.1,0.2,0.35,0.4]}}]");
}

/* Occlusion probe: an opaque green bar along x through the head at canonical y = 0, z = -1
 * (behind the face surface in the middle, outside the head beyond |x| = 7.7). Use it without an
 * anchor, so the model origin is the canonical origin. */
#define M3_BAR_Z (-1.0f)
#define M3_BAR_HALF_X 13.0f
static inline m3_buf m3_bar_glb(void) {
    m3_mesh bar;
    memset(&bar, 0, sizeof bar);
    m3_box(&bar, -M3_BAR_HALF_X, -0.5f, M3_BAR_Z - 0.5f, M3_BAR_HALF_X, 0.5f, M3_BAR_Z + 0.5f);
    return m3_glb(&bar, 1, "[{\"pbrMetallicRoughness\":{\"baseColorFactor\":[0.1,0.9,0.1,1]}}]");
}

/* ---- zip (STORED) --------------------------------------------------------------------------- */

static inline uint32_t m3_crc32(const uint8_t *d, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= d[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

typedef struct m3_entry {
    const char *name;
    const uint8_t *data;
    size_t size;
} m3_entry;

static inline m3_buf m3_zip(const m3_entry *e, uint32_t n) {
    m3_buf z = {0}, cd = {0};
    for (uint32_t i = 0; i < n; i++) {
        uint32_t crc = m3_crc32(e[i].data, e[i].size), at = (uint32_t)z.n;
        uint32_t nl = (uint32_t)strlen(e[i].name), sz = (uint32_t)e[i].size;
        m3_le(&z, 0x04034b50u, 4);
        m3_le(&z, 20, 2);
        m3_le(&z, 0, 2);
        m3_le(&z, 0, 2);
        m3_le(&z, 0, 4);
        m3_le(&z, crc, 4);
        m3_le(&z, sz, 4);
        m3_le(&z, sz, 4);
        m3_le(&z, nl, 2);
        m3_le(&z, 0, 2);
        m3_put(&z, e[i].name, nl);
        m3_put(&z, e[i].data, e[i].size);
        m3_le(&cd, 0x02014b50u, 4);
        m3_le(&cd, 20, 2);
        m3_le(&cd, 20, 2);
        m3_le(&cd, 0, 4);
        m3_le(&cd, 0, 4);
        m3_le(&cd, crc, 4);
        m3_le(&cd, sz, 4);
        m3_le(&cd, sz, 4);
        m3_le(&cd, nl, 2);
        m3_le(&cd, 0, 4);
        m3_le(&cd, 0, 4);
        m3_le(&cd, 0, 4);
        m3_le(&cd, at, 4);
        m3_put(&cd, e[i].name, nl);
    }
    uint32_t cd_at = (uint32_t)z.n;
    m3_put(&z, cd.p, cd.n);
    m3_le(&z, 0x06054b50u, 4);
    m3_le(&z, 0, 4);
    m3_le(&z, n, 2);
    m3_le(&z, n, 2);
    m3_le(&z, (uint32_t)cd.n, 4);
    m3_le(&z, cd_at, 4);
    m3_le(&z, 0, 2);
    free(cd.p);
    return z;
}

/* An effect with the mesh3d layer(s) `layer_json` (JSON object text), the asset glasses.glb
 * holding `glb`, and `num_extra` more assets. */
static inline ks_effect *m3_effect_with(const char *layer_json, const m3_buf *glb,
                                        const m3_entry *extra, uint32_t num_extra) {
    char manifest[2048];
    snprintf(manifest, sizeof manifest,
             "{\"format_version\":\"1.0.0\",\"id\":\"com.kestrel.test.glasses\","
             "\"name\":\"Glasses\",\"requires\":[\"face_landmarks\"],\"max_faces\":2,"
             "\"layers\":[%s]}",
             layer_json);
    m3_entry e[8] = {{"manifest.json", (const uint8_t *)manifest, strlen(manifest)},
                     {"glasses.glb", glb->p, glb->n}};
    assert_true(num_extra <= 6);
    for (uint32_t i = 0; i < num_extra; i++)
        e[2 + i] = extra[i];
    m3_buf z = m3_zip(e, 2 + num_extra);
    ks_effect *fx = NULL;
    ks_status st = ks_effect_open_memory(z.p, z.n, NULL, &fx);
    if (st) print_error("%s\n", ks_last_error(NULL));
    assert_int_equal(st, KS_STATUS_OK);
    free(z.p);
    return fx;
}

static inline ks_effect *m3_effect(const char *layer_json, const m3_buf *glb) {
    return m3_effect_with(layer_json, glb, NULL, 0);
}

#define M3_GLASSES_LAYER                                                                           \
    "{\"name\":\"glasses\",\"kind\":\"mesh3d\",\"mesh\":\"glasses.glb\","                          \
    "\"anchor\":{\"landmarks\":[168]}}"

/* ---- fixture -------------------------------------------------------------------------------- */

typedef struct m3_fixture {
    int32_t width_px, height_px;
    float landmarks[478 * 3];
    uint32_t num_landmarks;
    float pose[16]; /* row-major, as ks_ar_face */
} m3_fixture;

/* Returns 0 when the file is missing (the caller skips). */
static inline int m3_fixture_load(const char *path, m3_fixture *fx) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    memset(fx, 0, sizeof *fx);
    fx->width_px = cJSON_GetObjectItem(root, "width")->valueint;
    fx->height_px = cJSON_GetObjectItem(root, "height")->valueint;
    cJSON *face = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "faces"), 0);
    assert_non_null(face);
    cJSON *lm = cJSON_GetObjectItem(face, "landmarks");
    fx->num_landmarks = (uint32_t)cJSON_GetArraySize(lm);
    assert_true(fx->num_landmarks == 468 || fx->num_landmarks == 478);
    for (uint32_t i = 0; i < fx->num_landmarks; i++)
        for (int c = 0; c < 3; c++)
            fx->landmarks[3 * i + (uint32_t)c] =
                (float)cJSON_GetArrayItem(cJSON_GetArrayItem(lm, (int)i), c)->valuedouble;
    cJSON *pose = cJSON_GetObjectItem(face, "pose_matrix");
    assert_int_equal(cJSON_GetArraySize(pose), 16);
    for (int i = 0; i < 16; i++)
        fx->pose[i] = (float)cJSON_GetArrayItem(pose, i)->valuedouble;
    cJSON_Delete(root);
    return 1;
}

static inline ks_ar_face m3_face(const m3_fixture *fx) {
    ks_ar_face f;
    memset(&f, 0, sizeof f);
    f.id = 1;
    f.num_landmarks = fx->num_landmarks;
    f.landmarks_xyz = fx->landmarks;
    f.has_pose = 1;
    memcpy(f.pose_matrix, fx->pose, sizeof f.pose_matrix);
    return f; /* projection all zero: the default camera */
}

/* Projects canonical point p (cm) to frame pixels with the fixture pose and the default camera
 * (63 degree vertical fov), like the layer. Returns the camera-space depth (negative in front). */
static inline float m3_project(const m3_fixture *fx, const float p[3], float px_out[2]) {
    float c[3];
    for (int r = 0; r < 3; r++)
        c[r] = fx->pose[r * 4] * p[0] + fx->pose[r * 4 + 1] * p[1] + fx->pose[r * 4 + 2] * p[2] +
               fx->pose[r * 4 + 3];
    float fy = 1.0f / tanf(0.5f * 63.0f * 3.14159265358979f / 180.0f);
    float fx_ = fy * (float)fx->height_px / (float)fx->width_px;
    float ndc_x = fx_ * c[0] / -c[2], ndc_y = fy * c[1] / -c[2];
    px_out[0] = (0.5f * ndc_x + 0.5f) * (float)fx->width_px;
    px_out[1] = (0.5f - 0.5f * ndc_y) * (float)fx->height_px;
    return c[2];
}

#endif /* KESTREL_AR_MESH3D_TEST_UTIL_H */
