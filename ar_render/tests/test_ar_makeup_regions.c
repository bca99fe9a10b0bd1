/* CPU geometry of the makeup/beauty face regions and of the beauty warp grid (face_regions.h),
 * on the astronaut landmark fixture (tests/fixtures/astronaut_face.json, ks-vision
 * face_landmarks output for models/images/skimage_astronaut.png). No GL. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "face_regions.h"

#define NUM_LM 468u

static float g_lm[NUM_LM * 3];
static float g_box[4]; /* x, y, w, h */
static float g_fw;     /* |234 - 454| */

/* Reads the first face of a ks-vision style JSON ("box": [4], "landmarks": [[x, y, z], ...]).
 * Only what this test needs: numbers after the keys, in order. */
static int load_fixture(void) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/fixtures/astronaut_face.json", KS_AR_TEST_DIR);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strstr(buf, "\"box\"");
    if (!p) return -1;
    for (int i = 0; i < 4; i++) {
        p += strcspn(p, "-0123456789");
        char *end;
        g_box[i] = strtof(p, &end);
        p = end;
    }
    p = strstr(p, "\"landmarks\"");
    if (!p) return -1;
    for (uint32_t i = 0; i < NUM_LM * 3; i++) {
        p += strcspn(p, "-0123456789");
        if (!*p) return -1;
        char *end;
        g_lm[i] = strtof(p, &end);
        p = end;
    }
    float dx = g_lm[3 * 454] - g_lm[3 * 234], dy = g_lm[3 * 454 + 1] - g_lm[3 * 234 + 1];
    g_fw = sqrtf(dx * dx + dy * dy);
    return 0;
}

static int setup(void **state) {
    (void)state;
    return load_fixture();
}

static float tri_area(const float *xya, const uint16_t *t) {
    const float *a = &xya[3 * t[0]], *b = &xya[3 * t[1]], *c = &xya[3 * t[2]];
    return 0.5f * ((b[0] - a[0]) * (c[1] - a[1]) - (c[0] - a[0]) * (b[1] - a[1]));
}

static void test_tables_consistent(void **state) {
    (void)state;
    for (int r = 0; r < KS_EFFECT_MAKEUP_REGION_COUNT; r++) {
        ks__face_region_mesh *m = NULL;
        assert_int_equal(ks__face_region_mesh_create(NULL, (ks_effect_makeup_region)r, &m),
                         KS_STATUS_OK);
        assert_true(m->num_core_vertices > 0 && m->num_vertices > m->num_core_vertices);
        assert_true(m->num_add_indices > 0);
        assert_int_equal(m->num_add_indices % 3, 0);
        assert_int_equal(m->num_hole_indices % 3, 0);
        assert_true(m->num_vertices < 65536);
        for (uint32_t i = 0; i < m->num_add_indices + m->num_hole_indices; i++)
            assert_true(m->indices[i] < m->num_vertices);
        /* only the foundation (skin) region has holes */
        assert_int_equal(m->num_hole_indices > 0, r == KS_EFFECT_MAKEUP_FOUNDATION);
        ks__face_region_mesh_destroy(NULL, m);
    }
    ks__face_region_mesh *m = NULL;
    assert_int_equal(ks__face_region_mesh_create(NULL, KS_EFFECT_MAKEUP_REGION_COUNT, &m),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks__face_region_mesh_create(NULL, KS_EFFECT_MAKEUP_LIPS, NULL),
                     KS_STATUS_INVALID_ARGUMENT);
    ks__face_region_mesh_destroy(NULL, NULL);
}

/* Geometry on the fixture: finite, inside the (feather-expanded) face box, core triangles
 * non-degenerate, feather band at the documented distance with the documented alpha. */
static void test_geometry_on_fixture(void **state) {
    (void)state;
    for (int r = 0; r < KS_EFFECT_MAKEUP_REGION_COUNT; r++) {
        ks__face_region_mesh *m = NULL;
        assert_int_equal(ks__face_region_mesh_create(NULL, (ks_effect_makeup_region)r, &m),
                         KS_STATUS_OK);
        float *xya = calloc(3u * m->num_vertices, sizeof(float));
        assert_non_null(xya);
        assert_true(ks__face_region_mesh_compute(m, g_lm, NUM_LM, g_fw, xya));
        const float margin = 0.1f * g_fw;
        for (uint32_t i = 0; i < m->num_vertices; i++) {
            const float *v = &xya[3 * i];
            assert_true(isfinite(v[0]) && isfinite(v[1]));
            assert_true(v[0] >= g_box[0] - margin && v[0] <= g_box[0] + g_box[2] + margin);
            assert_true(v[1] >= g_box[1] - margin && v[1] <= g_box[1] + g_box[3] + margin);
            assert_true(v[2] >= 0.0f && v[2] <= 1.0f);
        }
        /* core-only triangles: non-degenerate (at least 0.05 px^2 on a ~94 px face) */
        uint32_t num_idx = m->num_add_indices + m->num_hole_indices, num_core_tris = 0;
        float total_area = 0.0f;
        for (uint32_t t = 0; t < num_idx; t += 3) {
            const uint16_t *tr = &m->indices[t];
            if (tr[0] >= m->num_core_vertices || tr[1] >= m->num_core_vertices ||
                tr[2] >= m->num_core_vertices)
                continue;
            float a = fabsf(tri_area(xya, tr));
            if (a < 0.05f)
                fail_msg("region %d triangle %u (%u %u %u) area %g px^2", r, t / 3, tr[0], tr[1],
                         tr[2], (double)a);
            total_area += a;
            num_core_tris++;
        }
        assert_true(num_core_tris > 0);
        /* the region is a visible part of the face, not all of it (except foundation) */
        float face_area = g_box[2] * g_box[3];
        assert_true(total_area > 0.002f * face_area);
        if (r != KS_EFFECT_MAKEUP_FOUNDATION) assert_true(total_area < 0.3f * face_area);
        /* feather vertices: alpha 0 (1 for holes), within the largest feather width of a core
         * vertex */
        for (uint32_t i = m->num_core_vertices; i < m->num_vertices; i++) {
            const ks__face_region_loop_entry *e = &m->entries[i - m->num_core_vertices];
            assert_float_equal(xya[3 * i + 2], e->hole ? 1.0f : 0.0f, 0.0f);
            const float *c = &xya[3 * e->vertex];
            float d = hypotf(xya[3 * i] - c[0], xya[3 * i + 1] - c[1]);
            float want = m->vdefs[e->vertex].feather * g_fw;
            assert_true(fabsf(d - want) < 1e-3f * g_fw + 1e-3f);
        }
        ks__face_region_mesh_destroy(NULL, m);
        free(xya);
    }
}

/* Where the regions land: lips between nose tip and chin, eyeshadow above the eyes, blush below
 * them, and feather bands pointing away from their region. */
static void test_regions_in_place(void **state) {
    (void)state;
    ks__face_region_mesh *m = NULL;
    float xya[3 * 1024];

    assert_int_equal(ks__face_region_mesh_create(NULL, KS_EFFECT_MAKEUP_LIPS, &m), KS_STATUS_OK);
    assert_true(m->num_vertices <= 1024);
    assert_true(ks__face_region_mesh_compute(m, g_lm, NUM_LM, g_fw, xya));
    float cy = 0.0f;
    for (uint32_t i = 0; i < m->num_core_vertices; i++)
        cy += xya[3 * i + 1];
    cy /= (float)m->num_core_vertices;
    assert_true(cy > g_lm[3 * 1 + 1] && cy < g_lm[3 * 152 + 1]);
    /* outer feather of the upper lip top (vertex 5 = landmark 0) goes up (away from the mouth) */
    for (uint32_t i = m->num_core_vertices; i < m->num_vertices; i++) {
        const ks__face_region_loop_entry *e = &m->entries[i - m->num_core_vertices];
        if (e->vertex == 5 && e->dir > 0) assert_true(xya[3 * i + 1] < xya[3 * 5 + 1]);
    }
    ks__face_region_mesh_destroy(NULL, m);

    float eye_y = 0.5f * (g_lm[3 * 159 + 1] + g_lm[3 * 386 + 1]);
    assert_int_equal(ks__face_region_mesh_create(NULL, KS_EFFECT_MAKEUP_EYESHADOW, &m),
                     KS_STATUS_OK);
    assert_true(ks__face_region_mesh_compute(m, g_lm, NUM_LM, g_fw, xya));
    /* along the face's down axis (the astronaut's head is tilted), the eyeshadow's mean lies
     * above the eye centres */
    float ax = (g_lm[3 * 454] - g_lm[3 * 234]) / g_fw,
          ay = (g_lm[3 * 454 + 1] - g_lm[3 * 234 + 1]) / g_fw;
    float down_x = -ay, down_y = ax, mean_down = 0.0f;
    for (uint32_t i = 0; i < m->num_core_vertices; i++)
        mean_down += xya[3 * i] * down_x + xya[3 * i + 1] * down_y;
    mean_down /= (float)m->num_core_vertices;
    float eye_down = 0.0f;
    const int eye_lm[4] = {33, 133, 263, 362};
    for (int i = 0; i < 4; i++)
        eye_down += 0.25f * (g_lm[3 * eye_lm[i]] * down_x + g_lm[3 * eye_lm[i] + 1] * down_y);
    assert_true(mean_down < eye_down);
    ks__face_region_mesh_destroy(NULL, m);

    assert_int_equal(ks__face_region_mesh_create(NULL, KS_EFFECT_MAKEUP_BLUSH, &m), KS_STATUS_OK);
    assert_true(ks__face_region_mesh_compute(m, g_lm, NUM_LM, g_fw, xya));
    for (uint32_t i = 0; i < m->num_core_vertices; i++)
        assert_true(xya[3 * i + 1] > eye_y);
    ks__face_region_mesh_destroy(NULL, m);
}

static void test_bad_input(void **state) {
    (void)state;
    ks__face_region_mesh *m = NULL;
    float xya[3 * 1024];
    assert_int_equal(ks__face_region_mesh_create(NULL, KS_EFFECT_MAKEUP_EYELINER, &m),
                     KS_STATUS_OK);
    assert_false(ks__face_region_mesh_compute(m, g_lm, 467, g_fw, xya));
    assert_false(ks__face_region_mesh_compute(m, g_lm, NUM_LM, 0.0f, xya));
    assert_false(ks__face_region_mesh_compute(m, g_lm, NUM_LM, NAN, xya));
    assert_false(ks__face_region_mesh_compute(m, NULL, NUM_LM, g_fw, xya));
    static float bad[NUM_LM * 3];
    memcpy(bad, g_lm, sizeof(bad));
    bad[3 * 33] = INFINITY;
    assert_false(ks__face_region_mesh_compute(m, bad, NUM_LM, g_fw, xya));
    ks__face_region_mesh_destroy(NULL, m);

    static float grid[4 * KS__FACE_WARP_NUM_VERTICES];
    assert_false(ks__face_warp_compute(bad, NUM_LM, g_fw, 1.0f, 1.0f, grid));
    assert_false(ks__face_warp_compute(g_lm, 100, g_fw, 1.0f, 1.0f, grid));
    assert_false(ks__face_warp_compute(g_lm, NUM_LM, -1.0f, 1.0f, 1.0f, grid));
}

/* Out-of-memory: fail the n-th allocation until create succeeds; nothing leaks. */
typedef struct oom_state {
    int fail_at, count, live;
} oom_state;

static void *oom_alloc(void *user, size_t size_bytes, size_t alignment) {
    (void)alignment;
    oom_state *s = user;
    if (s->count++ == s->fail_at) return NULL;
    s->live++;
    return malloc(size_bytes);
}

static void oom_free(void *user, void *ptr) {
    oom_state *s = user;
    s->live--;
    free(ptr);
}

static void test_oom(void **state) {
    (void)state;
    for (int fail_at = 0;; fail_at++) {
        oom_state s = {.fail_at = fail_at};
        ks_allocator a = {.alloc = oom_alloc, .free = oom_free, .user = &s};
        ks__face_region_mesh *m = NULL;
        ks_status st = ks__face_region_mesh_create(&a, KS_EFFECT_MAKEUP_FOUNDATION, &m);
        if (st == KS_STATUS_OK) {
            ks__face_region_mesh_destroy(&a, m);
            assert_int_equal(s.live, 0);
            assert_true(fail_at > 0);
            break;
        }
        assert_int_equal(st, KS_STATUS_OUT_OF_MEMORY);
        assert_null(m);
        assert_int_equal(s.live, 0);
    }
}

/* Warp grid: identity at zero amounts, border exactly unwarped, no fold at full amounts, eyes
 * magnified (samples pulled towards the eye centre) and the jaw pulled in. */
static void test_warp(void **state) {
    (void)state;
    static float grid[4 * KS__FACE_WARP_NUM_VERTICES];
    static uint16_t idx[KS__FACE_WARP_NUM_INDICES];
    const uint32_t g = KS__FACE_WARP_GRID;
    ks__face_warp_indices(idx);
    for (uint32_t i = 0; i < KS__FACE_WARP_NUM_INDICES; i++)
        assert_true(idx[i] < KS__FACE_WARP_NUM_VERTICES);

    assert_true(ks__face_warp_compute(g_lm, NUM_LM, g_fw, 0.0f, 0.0f, grid));
    for (uint32_t i = 0; i < KS__FACE_WARP_NUM_VERTICES; i++) {
        assert_float_equal(grid[4 * i + 2], grid[4 * i], 1e-4);
        assert_float_equal(grid[4 * i + 3], grid[4 * i + 1], 1e-4);
    }

    assert_true(ks__face_warp_compute(g_lm, NUM_LM, g_fw, 1.0f, 1.0f, grid));
    float max_shift = 0.0f;
    for (uint32_t y = 0; y < g; y++) {
        for (uint32_t x = 0; x < g; x++) {
            const float *v = &grid[4 * (y * g + x)];
            float d = hypotf(v[2] - v[0], v[3] - v[1]);
            if (x == 0 || y == 0 || x == g - 1 || y == g - 1) assert_float_equal(d, 0.0f, 0.0f);
            max_shift = fmaxf(max_shift, d);
        }
    }
    assert_true(max_shift > 0.01f * g_fw && max_shift < 0.2f * g_fw);
    /* every source triangle keeps the orientation of its output triangle: no fold or tear */
    for (uint32_t t = 0; t < KS__FACE_WARP_NUM_INDICES; t += 3) {
        const float *a = &grid[4 * idx[t]], *b = &grid[4 * idx[t + 1]], *c = &grid[4 * idx[t + 2]];
        float dst = (b[0] - a[0]) * (c[1] - a[1]) - (c[0] - a[0]) * (b[1] - a[1]);
        float src = (b[2] - a[2]) * (c[3] - a[3]) - (c[2] - a[2]) * (b[3] - a[3]);
        assert_true(dst * src > 0.0f);
        assert_true(src / dst > 0.2f); /* no extreme squash either */
    }
    /* sampling near the right eye centre comes from closer to the centre (magnification) */
    float ecx = 0.5f * (g_lm[3 * 33] + g_lm[3 * 133]),
          ecy = 0.5f * (g_lm[3 * 33 + 1] + g_lm[3 * 133 + 1]);
    float best = 1e30f;
    const float *near = NULL;
    for (uint32_t i = 0; i < KS__FACE_WARP_NUM_VERTICES; i++) {
        float d = hypotf(grid[4 * i] - ecx, grid[4 * i + 1] - ecy);
        if (d > 0.04f * g_fw && d < best) {
            best = d;
            near = &grid[4 * i];
        }
    }
    assert_non_null(near);
    assert_true(hypotf(near[2] - ecx, near[3] - ecy) < hypotf(near[0] - ecx, near[1] - ecy));
}

/* A mirrored image (x flipped) reverses every loop's orientation; the feather must still point
 * away from each region: the band of the lips' outer contour lies outside the outer contour. */
static void test_mirrored_feather(void **state) {
    (void)state;
    static float mirrored[NUM_LM * 3];
    for (uint32_t i = 0; i < NUM_LM; i++) {
        mirrored[3 * i] = 1000.0f - g_lm[3 * i];
        mirrored[3 * i + 1] = g_lm[3 * i + 1];
        mirrored[3 * i + 2] = g_lm[3 * i + 2];
    }
    const float *sets[2] = {g_lm, mirrored};
    ks__face_region_mesh *m = NULL;
    float xya[3 * 1024];
    assert_int_equal(ks__face_region_mesh_create(NULL, KS_EFFECT_MAKEUP_LIPS, &m), KS_STATUS_OK);
    for (int k = 0; k < 2; k++) {
        assert_true(ks__face_region_mesh_compute(m, sets[k], NUM_LM, g_fw, xya));
        /* centre of the mouth */
        float cx = 0.5f * (sets[k][3 * 13] + sets[k][3 * 14]);
        float cy = 0.5f * (sets[k][3 * 13 + 1] + sets[k][3 * 14 + 1]);
        for (uint32_t i = m->num_core_vertices; i < m->num_vertices; i++) {
            const ks__face_region_loop_entry *e = &m->entries[i - m->num_core_vertices];
            if (e->dir < 0) continue;
            const float *c = &xya[3 * e->vertex], *f = &xya[3 * i];
            float dc = hypotf(c[0] - cx, c[1] - cy), df = hypotf(f[0] - cx, f[1] - cy);
            assert_true(df > dc);
        }
    }
    ks__face_region_mesh_destroy(NULL, m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables_consistent),
        cmocka_unit_test(test_geometry_on_fixture),
        cmocka_unit_test(test_regions_in_place),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_oom),
        cmocka_unit_test(test_warp),
        cmocka_unit_test(test_mirrored_feather),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
