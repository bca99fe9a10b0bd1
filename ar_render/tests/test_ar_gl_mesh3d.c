/* mesh3d layer on GLES 3 (headless Mesa): glasses on the astronaut photo with the landmark + pose
 * fixture. Checks (1) occlusion directly: a pixel on the front rim is drawn, while pixels where
 * the temples run behind the head keep the photo; (2) the whole image against the committed
 * golden (PSNR >= 35 dB; regenerate with gen_mesh3d_golden.py golden). Exits 77 (skip) without
 * an EGL/GLES 3 context. The rendered images are written to KS_BINARY_DIR for inspection. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include "egl_headless.h"
#include "kestrel/ar.h"
#include "mesh3d_test_util.h"

#define FIXTURE KS_AR_TEST_DIR "/mesh3d_astronaut_face.json"
#define GOLDEN KS_AR_TEST_DIR "/golden/mesh3d_glasses.png"
#define PHOTO KS_SOURCE_DIR "/models/images/skimage_astronaut.png"
#define MIN_PSNR_DB 35.0
/* The golden is the face region (as test_ar_gl.c's goldens): 192 x 192 from (128, 16). */
#define CROP_X 128
#define CROP_Y 16
#define CROP_PX 192

/* Renders one frame of `fx` (destroyed here) on the photo with the fixture face. */
static uint8_t *render_fx(const m3_fixture *fix, const uint8_t *photo, const float *pose_override,
                          ks_effect *fx) {
    ks_ar_renderer *ar = NULL;
    ks_status st = ks_ar_renderer_create(NULL, fx, &ar);
    if (st) print_error("%s\n", ks_last_error(NULL));
    assert_int_equal(st, KS_STATUS_OK);
    ks_ar_face face = m3_face(fix);
    if (pose_override) memcpy(face.pose_matrix, pose_override, sizeof face.pose_matrix);
    ks_ar_frame frame = {.width_px = fix->width_px,
                         .height_px = fix->height_px,
                         .pixels = photo,
                         .num_faces = 1,
                         .faces = &face};
    size_t bytes = (size_t)fix->width_px * (size_t)fix->height_px * 4;
    uint8_t *out = malloc(bytes);
    assert_non_null(out);
    st = ks_ar_render(ar, &frame, &(ks_ar_output){.pixels = out});
    if (st) print_error("%s\n", ks_last_error(ar));
    assert_int_equal(st, KS_STATUS_OK);
    ks_ar_renderer_destroy(ar);
    ks_effect_destroy(fx);
    return out;
}

static uint8_t *render_glb(const m3_fixture *fix, const uint8_t *photo, const float *pose_override,
                           const char *layer_json, const m3_buf *glb) {
    return render_fx(fix, photo, pose_override, m3_effect(layer_json, glb));
}

static uint8_t *render(const m3_fixture *fix, const uint8_t *photo, const float *pose_override,
                       const char *layer_json) {
    m3_buf glb = m3_glasses_glb();
    uint8_t *out = render_glb(fix, photo, pose_override, layer_json, &glb);
    free(glb.p);
    return out;
}

static const uint8_t *pixel(const uint8_t *img, int32_t w, const float px[2]) {
    return img + ((size_t)(int32_t)px[1] * (size_t)w + (size_t)(int32_t)px[0]) * 4;
}

static int diff(const uint8_t *a, const uint8_t *b) {
    return abs(a[0] - b[0]) + abs(a[1] - b[1]) + abs(a[2] - b[2]);
}

static double psnr_rgb(const uint8_t *a, const uint8_t *b, size_t num_px) {
    double se = 0.0;
    for (size_t i = 0; i < num_px; i++)
        for (int c = 0; c < 3; c++) {
            double d = (double)a[4 * i + (size_t)c] - (double)b[4 * i + (size_t)c];
            se += d * d;
        }
    double mse = se / (3.0 * (double)num_px);
    return mse > 0.0 ? 10.0 * log10(255.0 * 255.0 / mse) : 99.0;
}

static void write_png(const char *name, const uint8_t *img, int32_t w, int32_t h) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", KS_BINARY_DIR, name);
    stbi_write_png(path, w, h, 4, img, w * 4);
}

/* Point p (canonical cm, relative to the anchor 168) -> absolute canonical. */
static void at_anchor(float x, float y, float z, float out[3]) {
    out[0] = x + 0.0f;
    out[1] = y + 3.27f; /* canonical landmark 168 */
    out[2] = z + 5.24f;
}

static void test_glasses_on_astronaut(void **state) {
    (void)state;
    m3_fixture fix;
    if (!m3_fixture_load(FIXTURE, &fix)) skip();
    int w = 0, h = 0, n = 0;
    uint8_t *photo = stbi_load(PHOTO, &w, &h, &n, 4);
    if (!photo) skip();
    assert_int_equal(w, fix.width_px);
    assert_int_equal(h, fix.height_px);
    uint8_t *out = render(&fix, photo, NULL, M3_GLASSES_LAYER);
    write_png("mesh3d_glasses.png", out, w, h);

    /* the front of the rims is drawn over the photo */
    float p[3], px[2];
    for (int s = -1; s <= 1; s += 2) {
        at_anchor((float)s * M3_LENS_CX, M3_LENS_CY + M3_LENS_H / 2 - 0.22f, M3_FRONT_Z, p);
        m3_project(&fix, p, px);
        int d = diff(pixel(out, w, px), pixel(photo, w, px));
        if (d < 60) print_error("rim at %.1f,%.1f not drawn (diff %d)\n", px[0], px[1], d);
        assert_true(d >= 60);
    }
    uint8_t *crop = malloc((size_t)CROP_PX * CROP_PX * 4);
    assert_non_null(crop);
    for (int y = 0; y < CROP_PX; y++)
        memcpy(crop + (size_t)y * CROP_PX * 4,
               out + ((size_t)(y + CROP_Y) * (size_t)w + CROP_X) * 4, (size_t)CROP_PX * 4);
    const char *regen = getenv("KS_MESH3D_WRITE_GOLDEN");
    if (regen && regen[0]) {
        assert_true(stbi_write_png(regen, CROP_PX, CROP_PX, 4, crop, CROP_PX * 4) != 0);
    } else {
        int gw = 0, gh = 0, gn = 0;
        uint8_t *golden = stbi_load(GOLDEN, &gw, &gh, &gn, 4);
        if (!golden) print_error("missing %s (gen_mesh3d_golden.py golden)\n", GOLDEN);
        assert_non_null(golden);
        assert_int_equal(gw, CROP_PX);
        assert_int_equal(gh, CROP_PX);
        double db = psnr_rgb(crop, golden, (size_t)CROP_PX * CROP_PX);
        print_message("mesh3d golden PSNR %.2f dB\n", db);
        assert_true(db >= MIN_PSNR_DB);
        stbi_image_free(golden);
    }
    free(crop);
    free(out);
    stbi_image_free(photo);
}

/* Occlusion, measured: a bar through the head is hidden where the face is in front of it and
 * drawn beyond the face's sides. */
static void test_occluder_hides_what_is_behind_the_face(void **state) {
    (void)state;
    m3_fixture fix;
    if (!m3_fixture_load(FIXTURE, &fix)) skip();
    int w = 0, h = 0, n = 0;
    uint8_t *photo = stbi_load(PHOTO, &w, &h, &n, 4);
    if (!photo) skip();
    m3_buf bar = m3_bar_glb();
    uint8_t *out = render_glb(
        &fix, photo, NULL, "{\"name\":\"bar\",\"kind\":\"mesh3d\",\"mesh\":\"glasses.glb\"}", &bar);
    write_png("mesh3d_bar.png", out, w, h);
    float px[2];
    for (float x = -4.0f; x <= 4.0f; x += 2.0f) { /* behind the cheeks and nose: hidden */
        m3_project(&fix, (const float[3]){x, 0.0f, M3_BAR_Z}, px);
        int d = diff(pixel(out, w, px), pixel(photo, w, px));
        if (d > 3)
            print_error("bar at x=%.0f (%.1f,%.1f) drawn (diff %d)\n", (double)x, px[0], px[1], d);
        assert_true(d <= 3);
    }
    for (int s = -1; s <= 1; s += 2) { /* beyond the face outline: drawn, green */
        m3_project(&fix, (const float[3]){(float)s * 11.0f, 0.0f, M3_BAR_Z + 0.5f}, px);
        const uint8_t *q = pixel(out, w, px);
        if (!(q[1] > q[0] + 60 && q[1] > q[2] + 60))
            print_error("bar at x=%d (%.1f,%.1f) not green: %d %d %d\n", 11 * s, px[0], px[1], q[0],
                        q[1], q[2]);
        assert_true(q[1] > q[0] + 60 && q[1] > q[2] + 60);
    }
    free(out);
    free(bar.p);
    stbi_image_free(photo);
}

static void collect_png(void *context, void *data, int size) {
    m3_put(context, data, (size_t)size);
}

/* A quad in front of the face textured with an embedded 8x8 PNG (quadrants red, green / blue,
 * white): the glb image path and the texture orientation (glTF uv (0, 0) = image top-left). */
static void test_embedded_texture(void **state) {
    (void)state;
    m3_fixture fix;
    if (!m3_fixture_load(FIXTURE, &fix)) skip();
    int w = 0, h = 0, n = 0;
    uint8_t *photo = stbi_load(PHOTO, &w, &h, &n, 4);
    if (!photo) skip();
    uint8_t tex[8 * 8 * 4];
    static const uint8_t quadrant[4][4] = {
        {255, 0, 0, 255}, {0, 255, 0, 255}, {0, 0, 255, 255}, {255, 255, 255, 255}};
    for (int y = 0; y < 8; y++)
        for (int x = 0; x < 8; x++)
            memcpy(tex + 4 * (y * 8 + x), quadrant[(y / 4) * 2 + x / 4], 4);
    m3_buf png = {0};
    assert_true(stbi_write_png_to_func(collect_png, &png, 8, 8, 4, tex, 32) != 0);
    m3_buf bin = {0};
    static const float pos[12] = {-4, 4, 9, 4, 4, 9, 4, -4, 9, -4, -4, 9};
    static const float uv[8] = {0, 0, 1, 0, 1, 1, 0, 1};
    for (int i = 0; i < 12; i++)
        m3_f32(&bin, pos[i]); /* 0..48 */
    for (int i = 0; i < 8; i++)
        m3_f32(&bin, uv[i]);                           /* 48..80 */
    static const uint16_t idx[6] = {0, 3, 2, 0, 2, 1}; /* counter-clockwise seen from +z */
    for (int i = 0; i < 6; i++)
        m3_le(&bin, idx[i], 2); /* 80..92 */
    size_t png_at = bin.n;
    m3_put(&bin, png.p, png.n);
    while (bin.n % 4)
        m3_put(&bin, "", 1);
    char json[2048];
    int jn = snprintf(
        json, sizeof json,
        "{\"asset\":{\"version\":\"2.0\"},\"nodes\":[{\"mesh\":0}],"
        "\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0,\"TEXCOORD_0\":1},"
        "\"indices\":2,\"material\":0}]}],"
        "\"materials\":[{\"pbrMetallicRoughness\":{\"baseColorTexture\":{\"index\":0}}}],"
        "\"textures\":[{\"source\":0}],\"images\":[{\"bufferView\":3,\"mimeType\":\"image/png\"}],"
        "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":4,\"type\":\"VEC3\"},"
        "{\"bufferView\":1,\"componentType\":5126,\"count\":4,\"type\":\"VEC2\"},"
        "{\"bufferView\":2,\"componentType\":5123,\"count\":6,\"type\":\"SCALAR\"}],"
        "\"bufferViews\":[{\"buffer\":0,\"byteOffset\":0,\"byteLength\":48},"
        "{\"buffer\":0,\"byteOffset\":48,\"byteLength\":32},"
        "{\"buffer\":0,\"byteOffset\":80,\"byteLength\":12},"
        "{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":%zu}],"
        "\"buffers\":[{\"byteLength\":%zu}]}",
        png_at, png.n, bin.n);
    while (jn % 4)
        json[jn++] = ' ';
    m3_buf glb = {0};
    m3_put(&glb, "glTF", 4);
    m3_le(&glb, 2, 4);
    m3_le(&glb, (uint32_t)(28 + (size_t)jn + bin.n), 4);
    m3_le(&glb, (uint32_t)jn, 4);
    m3_put(&glb, "JSON", 4);
    m3_put(&glb, json, (size_t)jn);
    m3_le(&glb, (uint32_t)bin.n, 4);
    m3_put(&glb, "BIN\0", 4);
    m3_put(&glb, bin.p, bin.n);
    uint8_t *out =
        render_glb(&fix, photo, NULL,
                   "{\"name\":\"card\",\"kind\":\"mesh3d\",\"mesh\":\"glasses.glb\"}", &glb);
    write_png("mesh3d_texture.png", out, w, h);
    static const float probe[4][3] = {{-2, 2, 9}, {2, 2, 9}, {-2, -2, 9}, {2, -2, 9}};
    for (int q = 0; q < 4; q++) {
        float px[2];
        m3_project(&fix, probe[q], px);
        const uint8_t *c = pixel(out, w, px);
        int expect_max = q == 3 ? -1 : q; /* channel that dominates; white: all high */
        if (expect_max < 0) {
            assert_true(c[0] > 150 && c[1] > 150 && c[2] > 150);
        } else {
            for (int k = 0; k < 3; k++)
                if (k != expect_max) {
                    if (!(c[expect_max] > c[k] + 80))
                        print_error("quadrant %d at %.1f,%.1f: %d %d %d\n", q, px[0], px[1], c[0],
                                    c[1], c[2]);
                    assert_true(c[expect_max] > c[k] + 80);
                }
        }
    }
    free(out);
    free(glb.p);
    free(bin.p);
    free(png.p);
    stbi_image_free(photo);
}

/* Head turned 35 degrees (pose only; the occluder follows the pose): the near temple is seen
 * along the side of the head, the far one disappears behind it. Faded (opacity 0.6, scratch
 * pass) to cover the composite path. Written for inspection, with coarse checks. */
static void test_turned_head_and_fade(void **state) {
    (void)state;
    m3_fixture fix;
    if (!m3_fixture_load(FIXTURE, &fix)) skip();
    int w = 0, h = 0, n = 0;
    uint8_t *photo = stbi_load(PHOTO, &w, &h, &n, 4);
    if (!photo) skip();
    float yaw = 35.0f * 3.14159265f / 180.0f, c = cosf(yaw), s = sinf(yaw);
    float ry[9] = {c, 0, s, 0, 1, 0, -s, 0, c}; /* row-major rotation about y */
    float pose[16];
    memcpy(pose, fix.pose, sizeof pose);
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++) {
            float acc = 0.0f;
            for (int j = 0; j < 3; j++)
                acc += fix.pose[r * 4 + j] * ry[j * 3 + k];
            pose[r * 4 + k] = acc;
        }
    uint8_t *turned = render(&fix, photo, pose, M3_GLASSES_LAYER);
    write_png("mesh3d_glasses_turned.png", turned, w, h);
    uint8_t *faded = render(&fix, photo, NULL,
                            "{\"name\":\"glasses\",\"kind\":\"mesh3d\",\"mesh\":\"glasses.glb\","
                            "\"opacity\":0.6,\"anchor\":{\"landmarks\":[168]}}");
    write_png("mesh3d_glasses_faded.png", faded, w, h);
    m3_fixture turned_fix = fix;
    memcpy(turned_fix.pose, pose, sizeof pose);
    float p[3], px[2];
    at_anchor(M3_LENS_CX, M3_LENS_CY + M3_LENS_H / 2 - 0.22f, M3_FRONT_Z, p);
    m3_project(&turned_fix, p, px);
    assert_true(diff(pixel(turned, w, px), pixel(photo, w, px)) >= 40);
    /* faded: the rim is drawn, but less strongly than opaque */
    m3_project(&fix, p, px);
    int d = diff(pixel(faded, w, px), pixel(photo, w, px));
    assert_true(d >= 20);
    free(turned);
    free(faded);
    stbi_image_free(photo);
}

/* The layer's `texture` replaces the base colour texture, and a custom fragment shader replaces
 * the lit shader (it gets the layer's varyings and uniforms). */
static void test_texture_override_and_custom_shader(void **state) {
    (void)state;
    m3_fixture fix;
    if (!m3_fixture_load(FIXTURE, &fix)) skip();
    int w = 0, h = 0, n = 0;
    uint8_t *photo = stbi_load(PHOTO, &w, &h, &n, 4);
    if (!photo) skip();
    uint8_t yellow[4 * 4 * 4];
    for (int i = 0; i < 16; i++)
        memcpy(yellow + 4 * i, (const uint8_t[4]){255, 230, 0, 255}, 4);
    m3_buf png = {0};
    assert_true(stbi_write_png_to_func(collect_png, &png, 4, 4, 4, yellow, 16) != 0);
    static const char frag[] = "#version 300 es\nprecision highp float;\n"
                               "in vec3 v_normal;\nin vec2 v_uv;\n"
                               "uniform vec4 u_color;\nuniform float u_opacity;\n"
                               "out vec4 frag_color;\n"
                               "void main() { frag_color = vec4(0.0, 1.0, 1.0, 1.0)"
                               " + 0.0 * vec4(v_normal, v_uv.x); }\n";
    m3_entry extra[2] = {{"yellow.png", png.p, png.n},
                         {"cyan.frag", (const uint8_t *)frag, sizeof frag - 1}};
    m3_buf glb = m3_glasses_glb();
    float p[3] = {M3_LENS_CX, M3_LENS_CY + M3_LENS_H / 2 - 0.22f + 3.27f, M3_FRONT_Z + 5.24f},
          px[2];
    m3_project(&fix, p, px);
    uint8_t *out =
        render_fx(&fix, photo, NULL,
                  m3_effect_with("{\"name\":\"g\",\"kind\":\"mesh3d\",\"mesh\":\"glasses.glb\","
                                 "\"texture\":\"yellow.png\",\"anchor\":{\"landmarks\":[168]}}",
                                 &glb, extra, 2));
    write_png("mesh3d_texture_override.png", out, w, h);
    const uint8_t *c = pixel(out, w, px); /* a rim: dark red factor x yellow texture = red-ish */
    assert_true(c[0] > c[2] + 40 && c[0] >= c[1]);
    free(out);
    out = render_fx(&fix, photo, NULL,
                    m3_effect_with("{\"name\":\"g\",\"kind\":\"mesh3d\",\"mesh\":\"glasses.glb\","
                                   "\"shader\":\"cyan.frag\",\"anchor\":{\"landmarks\":[168]}}",
                                   &glb, extra, 2));
    write_png("mesh3d_custom_shader.png", out, w, h);
    c = pixel(out, w, px);
    if (!(c[0] < 60 && c[1] > 180 && c[2] > 180))
        print_error("custom shader pixel %d %d %d\n", c[0], c[1], c[2]);
    assert_true(c[0] < 60 && c[1] > 180 && c[2] > 180);
    free(out);
    free(glb.p);
    free(png.p);
    stbi_image_free(photo);
}

int main(void) {
    ks_ar_egl *egl = NULL;
    char err[256];
    if (ks_ar_egl_create(&egl, err, sizeof err) != KS_STATUS_OK) {
        fprintf(stderr, "test_ar_gl_mesh3d: skipped, no EGL/GLES 3 context: %s\n", err);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_glasses_on_astronaut),
        cmocka_unit_test(test_occluder_hides_what_is_behind_the_face),
        cmocka_unit_test(test_turned_head_and_fade),
        cmocka_unit_test(test_embedded_texture),
        cmocka_unit_test(test_texture_override_and_custom_shader),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    ks_ar_egl_destroy(egl);
    return rc;
}
