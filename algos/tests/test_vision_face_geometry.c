/* Face geometry: binarypb parsing (real file; skip 77 when missing), hostile truncations and bit
 * flips, OOM injection, Procrustes recovery of a known similarity transform, end-to-end pose
 * from synthetic perspective landmarks, Euler convention, projection matrix, expressions. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "face_geometry.h"

#define GEOMETRY_FILE                                                                              \
    KS_SOURCE_DIR "/models/face_landmarks/geometry_pipeline_metadata_landmarks.binarypb"
#define DEG (3.14159265358979 / 180.0)

static uint8_t *g_file;
static size_t g_file_size;
static ks__face_geometry_metadata *g_md;

static void assert_near(double a, double b, double tol) {
    if (!(fabs(a - b) <= tol)) fail_msg("%g != %g (tol %g)", a, b, tol);
}

static int setup(void **state) {
    (void)state;
    FILE *f = fopen(GEOMETRY_FILE, "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    g_file = malloc((size_t)n);
    if (g_file && fread(g_file, 1, (size_t)n, f) == (size_t)n) g_file_size = (size_t)n;
    fclose(f);
    char err[256];
    if (ks__face_geometry_parse(NULL, g_file, g_file_size, &g_md, err, sizeof(err)) !=
        KS_STATUS_OK) {
        fprintf(stderr, "parse failed: %s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    ks__face_geometry_metadata_destroy(g_md);
    free(g_file);
    return 0;
}

static void test_parse_real_file(void **state) {
    (void)state;
    if (!g_md) skip();
    assert_int_equal(g_md->num_vertices, 468);
    assert_int_equal(g_md->num_indices, 2694); /* 898 triangles */
    assert_int_equal(g_md->num_basis, 33);
    assert_int_equal(g_md->input_source, 1); /* FACE_LANDMARK_PIPELINE */
    /* Vertex 0 and the first basis entry, as stored in the file. */
    assert_near(g_md->vertices[0], 0.0, 1e-6);
    assert_near(g_md->vertices[1], -3.406404, 1e-5);
    assert_near(g_md->vertices[2], 5.979507, 1e-5);
    assert_near(g_md->vertices[3], 0.499977, 1e-5);
    assert_int_equal(g_md->basis_ids[0], 4);
    assert_near(g_md->basis_weights[0], 0.0709099, 1e-6);
    for (uint32_t i = 0; i < g_md->num_indices; i++)
        assert_true(g_md->indices[i] < 468);
}

/* Every truncation and every single-bit flip of the header region and a sample of the rest must
 * parse or fail cleanly (ASan/UBSan builds catch any out-of-bounds read). */
static void test_hostile_inputs(void **state) {
    (void)state;
    if (!g_md) skip();
    char err[256];
    uint8_t *buf = malloc(g_file_size);
    size_t ok = 0, failed = 0;
    for (size_t len = 0; len < g_file_size; len += (len < 64 ? 1 : 97)) {
        ks__face_geometry_metadata *md = NULL;
        memcpy(buf, g_file, len);
        ks_status st = ks__face_geometry_parse(NULL, buf, len, &md, err, sizeof(err));
        if (st == KS_STATUS_OK) {
            ok++;
            ks__face_geometry_metadata_destroy(md);
        } else {
            failed++;
            assert_null(md);
            assert_true(strlen(err) > 0);
        }
    }
    assert_true(failed > 0);
    for (size_t pos = 0; pos < g_file_size; pos += (pos < 64 ? 1 : 131)) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(buf, g_file, g_file_size);
            buf[pos] ^= (uint8_t)(1u << bit);
            ks__face_geometry_metadata *md = NULL;
            if (ks__face_geometry_parse(NULL, buf, g_file_size, &md, err, sizeof(err)) ==
                KS_STATUS_OK) {
                assert_true(md->num_vertices <= KS__FACE_GEOMETRY_MAX_VERTICES);
                for (uint32_t i = 0; i < md->num_indices; i++)
                    assert_true(md->indices[i] < md->num_vertices);
                ks__face_geometry_metadata_destroy(md);
            }
        }
    }
    /* Targeted: an index out of range, an empty file, a wrong wire type. */
    ks__face_geometry_metadata *md = NULL;
    assert_int_equal(ks__face_geometry_parse(NULL, (const uint8_t *)"", 0, &md, err, sizeof(err)),
                     KS_STATUS_INVALID_MODEL);
    assert_non_null(strstr(err, "canonical_mesh"));
    const uint8_t bad_mesh[] = {0x0d, 0, 0, 0, 0}; /* field 1 as fixed32 */
    assert_int_equal(
        ks__face_geometry_parse(NULL, bad_mesh, sizeof(bad_mesh), &md, err, sizeof(err)),
        KS_STATUS_INVALID_MODEL);
    /* mesh: 1 vertex (5 floats, packed), index 1 (out of range) x3; basis {id 0, w 1}. */
    uint8_t small[64];
    size_t k = 0;
    small[k++] = 0x0a, small[k++] = 2 + 20 + 2 + 3;
    small[k++] = 0x1a, small[k++] = 20;
    memset(small + k, 0, 20), k += 20;
    small[k++] = 0x22, small[k++] = 3;
    small[k++] = 1, small[k++] = 1, small[k++] = 1;
    small[k++] = 0x12, small[k++] = 7;
    small[k++] = 0x08, small[k++] = 0;
    small[k++] = 0x15, small[k++] = 0, small[k++] = 0, small[k++] = 0x80, small[k++] = 0x3f;
    assert_int_equal(ks__face_geometry_parse(NULL, small, k, &md, err, sizeof(err)),
                     KS_STATUS_INVALID_MODEL);
    assert_non_null(strstr(err, "index_buffer"));
    small[26] = 0, small[27] = 0, small[28] = 0; /* indices 0 0 0 */
    assert_int_equal(ks__face_geometry_parse(NULL, small, k, &md, err, sizeof(err)), KS_STATUS_OK);
    assert_int_equal(md->num_vertices, 1);
    ks__face_geometry_metadata_destroy(md);
    free(buf);
}

static int g_fail_after = -1;
static void *failing_alloc(void *user, size_t size, size_t alignment) {
    (void)user, (void)alignment;
    if (g_fail_after == 0) return NULL;
    if (g_fail_after > 0) g_fail_after--;
    return malloc(size);
}
static void plain_free(void *user, void *p) {
    (void)user;
    free(p);
}

static void test_oom(void **state) {
    (void)state;
    if (!g_md) skip();
    ks_allocator a = {failing_alloc, plain_free, NULL};
    char err[256];
    for (int k = 0; k < 2; k++) {
        g_fail_after = k;
        ks__face_geometry_metadata *md = NULL;
        assert_int_equal(ks__face_geometry_parse(&a, g_file, g_file_size, &md, err, sizeof(err)),
                         KS_STATUS_OUT_OF_MEMORY);
        assert_null(md);
    }
    g_fail_after = -1;
}

/* Column-major rotation R = Ry(yaw) Rx(pitch) Rz(roll) as a 3x3 row-major helper. */
static void euler_to_r(double pitch, double yaw, double roll, double r[3][3]) {
    double cp = cos(pitch), sp = sin(pitch), cy = cos(yaw), sy = sin(yaw);
    double cr = cos(roll), sr = sin(roll);
    double ry[3][3] = {{cy, 0, sy}, {0, 1, 0}, {-sy, 0, cy}};
    double rx[3][3] = {{1, 0, 0}, {0, cp, -sp}, {0, sp, cp}};
    double rz[3][3] = {{cr, -sr, 0}, {sr, cr, 0}, {0, 0, 1}};
    double t[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            t[i][j] = 0;
            for (int k = 0; k < 3; k++)
                t[i][j] += rx[i][k] * rz[k][j];
        }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            r[i][j] = 0;
            for (int k = 0; k < 3; k++)
                r[i][j] += ry[i][k] * t[k][j];
        }
}

static void transform_mesh(double s, double r[3][3], const double t[3], float *out_xyz) {
    for (uint32_t i = 0; i < g_md->num_vertices; i++) {
        const float *v = &g_md->vertices[5 * i];
        for (int k = 0; k < 3; k++)
            out_xyz[3 * i + k] =
                (float)(s * (r[k][0] * v[0] + r[k][1] * v[1] + r[k][2] * v[2]) + t[k]);
    }
}

static void test_procrustes_recovers_transform(void **state) {
    (void)state;
    if (!g_md) skip();
    const double cases[][7] = {
        /* pitch, yaw, roll (deg), scale, tx, ty, tz */
        {10, -25, 5, 1.3, 2, -3, -40},
        {-30, 40, -20, 0.7, -5, 1, -60},
        {0, 0, 0, 1.0, 0, 0, 0},
        {60, 10, 80, 2.0, 10, 10, -10},
    };
    size_t nv = g_md->num_vertices;
    float *src = malloc(nv * 3 * sizeof(float)), *dst = malloc(nv * 3 * sizeof(float));
    float *w = malloc(nv * sizeof(float));
    for (size_t i = 0; i < nv; i++) {
        for (int k = 0; k < 3; k++)
            src[3 * i + k] = g_md->vertices[5 * i + k];
        w[i] = 0.0f;
    }
    for (uint32_t b = 0; b < g_md->num_basis; b++)
        w[g_md->basis_ids[b]] = g_md->basis_weights[b];
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        double r[3][3], t[3] = {cases[c][4], cases[c][5], cases[c][6]};
        euler_to_r(cases[c][0] * DEG, cases[c][1] * DEG, cases[c][2] * DEG, r);
        transform_mesh(cases[c][3], r, t, dst);
        float m[16];
        assert_int_equal(ks__procrustes_solve(src, dst, w, nv, m), KS_STATUS_OK);
        float pitch, yaw, roll;
        ks__pose_euler_deg(m, &pitch, &yaw, &roll);
        assert_near(pitch, cases[c][0], 0.1);
        assert_near(yaw, cases[c][1], 0.1);
        assert_near(roll, cases[c][2], 0.1);
        assert_near(sqrt(m[0] * m[0] + m[1] * m[1] + m[2] * m[2]), cases[c][3], 1e-4);
        for (int k = 0; k < 3; k++)
            assert_near(m[12 + k], t[k], 1e-3 * (1 + fabs(t[k])));
        assert_near(m[15], 1.0, 0);
    }
    /* Degenerate: zero weights, all points equal. */
    float m[16];
    for (size_t i = 0; i < nv; i++)
        w[i] = 0.0f;
    assert_int_equal(ks__procrustes_solve(src, dst, w, nv, m), KS_STATUS_INVALID_ARGUMENT);
    w[0] = w[1] = 1.0f;
    for (size_t i = 0; i < 3 * nv; i++)
        src[i] = 1.0f;
    assert_int_equal(ks__procrustes_solve(src, dst, w, nv, m), KS_STATUS_INVALID_ARGUMENT);
    free(src);
    free(dst);
    free(w);
}

/* Renders the canonical mesh under a known pose with the default camera into screen landmarks
 * (MediaPipe's landmark conventions: x, y image-normalized, z relative depth scaled like x) and
 * checks the estimator recovers the pose. */
/* The polynomial eigen-solver against cyclic Jacobi: Horn matrices of random correlations
 * (clean and noisy rotations, all scales) and random symmetric ones agree to 1e-9 up to sign;
 * a repeated largest eigenvalue (the identity, a diagonal with a double top) still gives a
 * unit eigenvector of it (the Jacobi fallback). */
static void test_sym4_eigenvector_matches_jacobi(void **state) {
    (void)state;
    uint32_t seed = 12345u;
    int checked = 0;
    for (int c = 0; c < 2000; c++) {
        double a[4][4];
        for (int i = 0; i < 4; i++)
            for (int j = i; j < 4; j++) {
                seed = seed * 1664525u + 1013904223u;
                double r = ((double)(seed >> 8) / 16777216.0 - 0.5) * pow(10.0, c % 7 - 2);
                a[i][j] = a[j][i] = r;
            }
        if (c & 1) { /* Horn's form (traceless) of a random 3x3 S */
            double S[3][3];
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    S[i][j] = a[i][(j + 1) % 4] + (i == j ? 3.0 * a[3][3] : 0.0);
            double N[4][4] = {{S[0][0] + S[1][1] + S[2][2], S[1][2] - S[2][1], S[2][0] - S[0][2],
                               S[0][1] - S[1][0]},
                              {S[1][2] - S[2][1], S[0][0] - S[1][1] - S[2][2], S[0][1] + S[1][0],
                               S[2][0] + S[0][2]},
                              {S[2][0] - S[0][2], S[0][1] + S[1][0], -S[0][0] + S[1][1] - S[2][2],
                               S[1][2] + S[2][1]},
                              {S[0][1] - S[1][0], S[2][0] + S[0][2], S[1][2] + S[2][1],
                               -S[0][0] - S[1][1] + S[2][2]}};
            memcpy(a, N, sizeof(a));
        }
        double v[4], r[4], b[4][4];
        memcpy(b, a, sizeof(b));
        ks__sym4_max_eigenvector(a, v);
        ks__sym4_max_eigenvector_jacobi(b, r);
        /* the Jacobi eigenvalues: is the top one separated enough to fix the vector? */
        double d[4] = {b[0][0], b[1][1], b[2][2], b[3][3]}, top = -INFINITY, second = -INFINITY;
        for (int i = 0; i < 4; i++) {
            if (d[i] > top)
                second = top, top = d[i];
            else if (d[i] > second)
                second = d[i];
        }
        double scale = fabs(top) + fabs(second) + 1e-300;
        if (top - second < 1e-6 * scale) continue;
        double dot = 0.0, n2 = 0.0;
        for (int i = 0; i < 4; i++)
            dot += v[i] * r[i], n2 += v[i] * v[i];
        assert_near(n2, 1.0, 1e-12);
        if (fabs(fabs(dot) - 1.0) > 1e-9)
            fail_msg("case %d: |v . v_jacobi| = %.15f (gap %g of %g)", c, fabs(dot), top - second,
                     scale);
        checked++;
    }
    assert_true(checked > 1900);
    /* repeated top eigenvalues: a unit vector in their eigenspace */
    double id[4][4] = {{2, 0, 0, 0}, {0, 2, 0, 0}, {0, 0, 2, 0}, {0, 0, 0, 2}};
    double dbl[4][4] = {{1, 0, 0, 0}, {0, 5, 0, 0}, {0, 0, -3, 0}, {0, 0, 0, 5}};
    double v[4];
    ks__sym4_max_eigenvector(id, v);
    assert_near(v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + v[3] * v[3], 1.0, 1e-12);
    ks__sym4_max_eigenvector(dbl, v);
    assert_near(v[1] * v[1] + v[3] * v[3], 1.0, 1e-9);
}

static void test_pose_end_to_end(void **state) {
    (void)state;
    if (!g_md) skip();
    const int32_t fw = 640, fh = 480;
    const double fov = 63.0 * DEG, near_plane = 1.0;
    double h_near = 2.0 * near_plane * tan(0.5 * fov), w_near = h_near * fw / fh;
    size_t nv = g_md->num_vertices;
    float *cam = malloc(nv * 3 * sizeof(float));
    ks__landmark *lm = calloc(nv, sizeof(*lm));
    float *ws = malloc(ks__face_geometry_workspace_floats(g_md) * sizeof(float));
    float *metric = malloc(nv * 3 * sizeof(float));
    const double poses[][6] = {
        {5, -15, 8, 1, -2, -45}, {-12, 20, -5, -3, 2, -60}, {0, 0, 0, 0, 0, -50}};
    for (size_t c = 0; c < sizeof(poses) / sizeof(poses[0]); c++) {
        double r[3][3], t[3] = {poses[c][3], poses[c][4], poses[c][5]};
        euler_to_r(poses[c][0] * DEG, poses[c][1] * DEG, poses[c][2] * DEG, r);
        transform_mesh(1.0, r, t, cam);
        double mean_depth = 0;
        for (size_t i = 0; i < nv; i++)
            mean_depth += -cam[3 * i + 2];
        mean_depth /= (double)nv;
        for (size_t i = 0; i < nv; i++) {
            double depth = -cam[3 * i + 2];
            double xn = cam[3 * i] * near_plane / depth, yn = cam[3 * i + 1] * near_plane / depth;
            lm[i].x = (float)((xn + 0.5 * w_near) / w_near);
            lm[i].y = (float)(1.0 - (yn + 0.5 * h_near) / h_near);
            /* Relative depth in near-plane units (weak perspective), normalized by width; closer
             * is negative as in the face mesh model. */
            lm[i].z = (float)((depth - mean_depth) * near_plane / mean_depth / w_near);
        }
        ks__face_pose pose;
        char err[256];
        assert_int_equal(ks__face_geometry_estimate(g_md, NULL, lm, nv, fw, fh, ws, metric, &pose,
                                                    err, sizeof(err)),
                         KS_STATUS_OK);
        /* The synthetic z follows the same depth model the estimator inverts, so the recovery
         * is exact up to float rounding. */
        assert_near(pose.pitch_deg, poses[c][0], 0.1);
        assert_near(pose.yaw_deg, poses[c][1], 0.1);
        assert_near(pose.roll_deg, poses[c][2], 0.1);
        assert_near(pose.translation[2], poses[c][5], 0.01 * fabs(poses[c][5]));
        assert_near(pose.translation[0], poses[c][3], 0.05);
        assert_near(pose.scale, 1.0, 1e-3);
        /* The metric mesh in canonical space is the canonical mesh up to the estimate's error. */
        for (size_t i = 0; i < nv; i += 37)
            assert_near(metric[3 * i + 2], g_md->vertices[5 * i + 2], 1e-2);
        ks__face_expressions ex;
        ks__face_expressions_compute(metric, nv, &ex);
        assert_true(ex.mouth_open < 0.1f && ex.left_eye_blink < 0.15f && ex.smile < 0.15f);
    }
    char err[256];
    ks__face_pose pose;
    assert_int_equal(ks__face_geometry_estimate(g_md, NULL, lm, nv - 1, fw, fh, ws, NULL, &pose,
                                                err, sizeof(err)),
                     KS_STATUS_INVALID_ARGUMENT);
    free(cam);
    free(lm);
    free(ws);
    free(metric);
}

static void test_projection_and_euler(void **state) {
    (void)state;
    float m[16];
    ks__face_geometry_projection(NULL, 640, 480, m);
    double k = 1.0 / tan(0.5 * 63.0 * DEG);
    assert_near(m[0], k / (640.0 / 480.0), 1e-5);
    assert_near(m[5], k, 1e-5);
    assert_near(m[10], (1.0 + 10000.0) / (1.0 - 10000.0), 1e-5);
    assert_near(m[11], -1.0, 0);
    assert_near(m[14], 2.0 * 10000.0 / (1.0 - 10000.0), 1e-3);
    /* Yaw +30: the nose (+z) turns to +x (image right). */
    double r[3][3];
    euler_to_r(0, 30 * DEG, 0, r);
    assert_true(r[0][2] > 0.4);
    float pm[16] = {0};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            pm[j * 4 + i] = (float)r[i][j];
    pm[15] = 1;
    float p, y, ro;
    ks__pose_euler_deg(pm, &p, &y, &ro);
    assert_near(y, 30, 1e-4);
    assert_near(p, 0, 1e-4);
}

static void test_expressions(void **state) {
    (void)state;
    if (!g_md) skip();
    size_t nv = g_md->num_vertices;
    float *p = malloc(nv * 3 * sizeof(float));
    for (size_t i = 0; i < nv; i++)
        for (int k = 0; k < 3; k++)
            p[3 * i + k] = g_md->vertices[5 * i + k] * 3.7f; /* scale-invariant */
    ks__face_expressions ex;
    ks__face_expressions_compute(p, nv, &ex);
    /* Neutral canonical face: everything ~0 (the constants in face_geometry.c match the file). */
    assert_near(ex.mouth_open, 0, 1e-3);
    assert_near(ex.left_eye_blink, 0, 1e-3);
    assert_near(ex.right_eye_blink, 0, 1e-3);
    assert_near(ex.left_brow_raise, 0, 1e-3);
    assert_near(ex.smile, 0, 1e-3);
    /* Close the right eye: upper lid points onto the lower lid. */
    const int up[2] = {160, 158}, lo[2] = {144, 153};
    for (int e = 0; e < 2; e++)
        for (int k = 0; k < 3; k++)
            p[3 * up[e] + k] = p[3 * lo[e] + k];
    /* Open the mouth: move the lower inner lip down by 60% of the mouth width. */
    float width = fabsf(p[3 * 291] - p[3 * 61]);
    p[3 * 14 + 1] -= 0.6f * width;
    /* Raise the left brow by 40% of its neutral distance to the lid. */
    p[3 * 334 + 1] += 0.5f * fabsf(p[3 * 334 + 1] - p[3 * 386 + 1]);
    ks__face_expressions_compute(p, nv, &ex);
    assert_near(ex.right_eye_blink, 1.0, 1e-3);
    assert_near(ex.left_eye_blink, 0.0, 1e-3);
    assert_true(ex.mouth_open > 0.8f);
    assert_true(ex.left_brow_raise > 0.5f && ex.right_brow_raise < 1e-3f);
    ks__face_expressions_compute(p, 100, &ex);
    assert_near(ex.mouth_open, 0, 0);
    free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_real_file),
        cmocka_unit_test(test_hostile_inputs),
        cmocka_unit_test(test_oom),
        cmocka_unit_test(test_procrustes_recovers_transform),
        cmocka_unit_test(test_sym4_eigenvector_matches_jacobi),
        cmocka_unit_test(test_pose_end_to_end),
        cmocka_unit_test(test_projection_and_euler),
        cmocka_unit_test(test_expressions),
    };
    FILE *f = fopen(GEOMETRY_FILE, "rb");
    if (!f) {
        fprintf(stderr, "skip: %s not found (run scripts/fetch-models)\n", GEOMETRY_FILE);
        return 77;
    }
    fclose(f);
    return cmocka_run_group_tests(tests, setup, teardown);
}
