/* Tracking blocks: One Euro filter (jitter reduction, ramp tracking, timestamps), landmark
 * smoother (incl. OOM injection), tracker ids through motion and missed frames, mask smoothing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tracking.h"

static void assert_near(float a, float b, float tol) {
    if (!(fabsf(a - b) <= tol)) fail_msg("%g != %g (tol %g)", (double)a, (double)b, (double)tol);
}

/* Deterministic noise in [-1, 1] (LCG), so the test never flakes. */
static float noise(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / (float)(1u << 23) - 1.0f;
}

static void test_one_euro_static_jitter(void **state) {
    (void)state;
    ks__one_euro f;
    ks__one_euro_init(&f, &(ks__one_euro_params){.min_cutoff = 1.0f, .beta = 0.0f});
    uint32_t seed = 12345;
    double raw_sq = 0.0, filt_sq = 0.0;
    const int n = 600;
    for (int i = 0; i < n; i++) {
        float x = 5.0f + 0.1f * noise(&seed);
        float y = ks__one_euro_apply(&f, x, 1.0f, (int64_t)i * 33333);
        if (i >= 30) { /* after the filter settles */
            raw_sq += (x - 5.0) * (x - 5.0);
            filt_sq += (y - 5.0) * (y - 5.0);
        }
    }
    double ratio = sqrt(raw_sq / filt_sq);
    if (!(ratio >= 3.0)) fail_msg("jitter reduced only %.2fx", ratio);
}

static void test_one_euro_ramp(void **state) {
    (void)state;
    /* A ramp of 1 unit/s at 30 Hz: with beta the lag stays small; without, it is ~v/(2 pi fc). */
    ks__one_euro fast, slow;
    ks__one_euro_init(&fast, &(ks__one_euro_params){.min_cutoff = 1.0f, .beta = 5.0f});
    ks__one_euro_init(&slow, &(ks__one_euro_params){.min_cutoff = 1.0f, .beta = 0.0f});
    float lag_fast = 0, lag_slow = 0;
    for (int i = 0; i < 300; i++) {
        float t = (float)i / 30.0f;
        lag_fast = t - ks__one_euro_apply(&fast, t, 1.0f, (int64_t)i * 33333);
        lag_slow = t - ks__one_euro_apply(&slow, t, 1.0f, (int64_t)i * 33333);
    }
    assert_true(lag_fast >= 0.0f && lag_fast < 0.05f);
    assert_true(lag_slow > 2.0f * lag_fast);
    assert_true(lag_slow < 0.25f);
    /* Non-increasing timestamp: value passes through, state untouched. */
    assert_near(ks__one_euro_apply(&fast, 123.0f, 1.0f, 0), 123.0f, 0);
    float next = ks__one_euro_apply(&fast, 300.0f / 30.0f, 1.0f, 300 * 33333);
    assert_true(fabsf(next - 10.0f) < 0.1f);
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

static void test_landmark_smoother(void **state) {
    (void)state;
    ks_allocator a = {failing_alloc, plain_free, NULL};
    /* OOM injection: every allocation failing in turn returns OUT_OF_MEMORY, no leak (ASan). */
    for (int k = 0; k < 2; k++) {
        g_fail_after = k;
        ks__landmark_smoother *s = NULL;
        assert_int_equal(ks__landmark_smoother_create(&a, 4, NULL, &s), KS_STATUS_OUT_OF_MEMORY);
        assert_null(s);
    }
    g_fail_after = -1;
    ks__landmark_smoother *s = NULL;
    assert_int_equal(ks__landmark_smoother_create(&a, 2, &(ks__one_euro_params){.beta = 0.0f}, &s),
                     KS_STATUS_OK);
    uint32_t seed = 7;
    double raw_sq = 0, filt_sq = 0;
    for (int i = 0; i < 300; i++) {
        ks__landmark lm[2] = {{0.5f + 0.01f * noise(&seed), 0.5f, 0, 0, 0},
                              {0.2f, 0.3f + 0.01f * noise(&seed), 0, 0, 0}};
        float r0 = lm[0].x;
        assert_int_equal(ks__landmark_smoother_apply(s, lm, 2, 0.2f, (int64_t)i * 33333),
                         KS_STATUS_OK);
        if (i > 30) raw_sq += (r0 - 0.5) * (r0 - 0.5), filt_sq += (lm[0].x - 0.5) * (lm[0].x - 0.5);
    }
    assert_true(raw_sq > 9.0 * filt_sq);
    ks__landmark one[1] = {{0}};
    assert_int_equal(ks__landmark_smoother_apply(s, one, 1, 1.0f, 1), KS_STATUS_INVALID_ARGUMENT);
    ks__landmark_smoother_reset(s);
    ks__landmark_smoother_destroy(s);
    ks__landmark_smoother_destroy(NULL);
}

/* The smoother keeps one rate per frame and its values as arrays: it must give what 3 * n
 * separate One Euro filters give, through a changing frame rate, a repeated timestamp (values
 * pass through, state kept) and a reset. */
static void test_landmark_smoother_matches_filters(void **state) {
    (void)state;
    enum { N = 37 };
    const ks__one_euro_params prm = {.min_cutoff = 0.05f, .beta = 80.0f, .d_cutoff = 1.0f};
    ks__landmark_smoother *s = NULL;
    assert_int_equal(ks__landmark_smoother_create(NULL, N, &prm, &s), KS_STATUS_OK);
    ks__one_euro f[3 * N];
    for (int k = 0; k < 3 * N; k++)
        ks__one_euro_init(&f[k], &prm);
    uint32_t seed = 99;
    int64_t ts = 0;
    double max_err = 0.0;
    for (int frame = 0; frame < 120; frame++) {
        if (frame == 60) {
            ks__landmark_smoother_reset(s);
            for (int k = 0; k < 3 * N; k++)
                ks__one_euro_reset(&f[k]);
        }
        if (frame != 40) ts += 20000 + (int64_t)(frame % 7) * 3000; /* frame 40: same time */
        ks__landmark lm[N];
        float want[3 * N];
        const float scale = 40.0f + (float)(frame % 5);
        for (int i = 0; i < N; i++) {
            lm[i] = (ks__landmark){100.0f + (float)i + 3.0f * noise(&seed),
                                   50.0f + 0.1f * (float)frame + noise(&seed), -2.0f + noise(&seed),
                                   0.5f, 0.25f};
            want[3 * i + 0] = ks__one_euro_apply(&f[3 * i + 0], lm[i].x, 1.0f / scale, ts);
            want[3 * i + 1] = ks__one_euro_apply(&f[3 * i + 1], lm[i].y, 1.0f / scale, ts);
            want[3 * i + 2] = ks__one_euro_apply(&f[3 * i + 2], lm[i].z, 1.0f / scale, ts);
        }
        assert_int_equal(ks__landmark_smoother_apply(s, lm, N, scale, ts), KS_STATUS_OK);
        for (int i = 0; i < N; i++) {
            const float got[3] = {lm[i].x, lm[i].y, lm[i].z};
            for (int c = 0; c < 3; c++) {
                double e = fabs((double)got[c] - (double)want[3 * i + c]) /
                           fmax(1.0, fabs((double)want[3 * i + c]));
                max_err = fmax(max_err, e);
            }
            assert_true(lm[i].visibility == 0.5f && lm[i].presence == 0.25f);
        }
    }
    /* the same operations in the same order: equal, but for a fused multiply-add that a
     * compiler may form differently in the vectorized loop (AArch64) */
    if (!(max_err <= 1e-6)) fail_msg("smoother differs from the filters by %g", max_err);
    ks__landmark_smoother_destroy(s);
}

static ks__detection box_at(float cx, float cy, float size) {
    ks__detection d;
    memset(&d, 0, sizeof(d));
    d.xmin = cx - size / 2, d.xmax = cx + size / 2, d.ymin = cy - size / 2, d.ymax = cy + size / 2;
    d.score = 0.9f;
    return d;
}

static void test_tracker(void **state) {
    (void)state;
    ks__tracker t;
    ks__tracker_init(&t, &(ks__tracker_options){.min_hits = 2, .max_missed_frames = 2});
    int32_t id_a = -1, id_b = -1;
    /* Two boxes moving in opposite directions, 0.03 per frame (box size 0.1: consecutive IoU
     * ~0.54 without prediction), with frames 10-11 missing box A and frame 20 missing both. */
    for (int f = 0; f < 30; f++) {
        ks__detection d[2];
        size_t n = 0;
        float ax = 0.1f + 0.02f * (float)f, bx = 0.9f - 0.02f * (float)f;
        bool a_here = !(f == 10 || f == 11 || f == 20), b_here = f != 20;
        int ia = -1, ib = -1;
        /* Alternate the order so ids cannot follow the array index. */
        if (f % 2) {
            if (b_here) ib = (int)n, d[n++] = box_at(bx, 0.7f, 0.1f);
            if (a_here) ia = (int)n, d[n++] = box_at(ax, 0.3f, 0.1f);
        } else {
            if (a_here) ia = (int)n, d[n++] = box_at(ax, 0.3f, 0.1f);
            if (b_here) ib = (int)n, d[n++] = box_at(bx, 0.7f, 0.1f);
        }
        ks__tracker_update(&t, d, n);
        if (f == 0) {
            /* Not confirmed before min_hits frames. */
            assert_int_equal(d[0].track_id, -1);
            assert_int_equal(d[1].track_id, -1);
            continue;
        }
        if (f == 1) {
            id_a = d[ia].track_id, id_b = d[ib].track_id;
            assert_true(id_a > 0 && id_b > 0 && id_a != id_b);
            continue;
        }
        if (ia >= 0) assert_int_equal(d[ia].track_id, id_a);
        if (ib >= 0) assert_int_equal(d[ib].track_id, id_b);
    }
    /* Gone for 3 frames (> max_missed_frames): a new id. */
    for (int f = 0; f < 3; f++)
        ks__tracker_update(&t, NULL, 0);
    assert_int_equal(t.num_tracks, 0);
    ks__detection d = box_at(0.5f, 0.5f, 0.1f);
    ks__tracker_update(&t, &d, 1);
    ks__tracker_update(&t, &d, 1);
    assert_true(d.track_id > id_a && d.track_id > id_b);
}

static void test_mask_smooth(void **state) {
    (void)state;
    float cur[3] = {0.5f, 1.0f, 0.0f}, prev[3] = {1.0f, 0.0f, 1.0f}, out[3];
    ks__mask_smooth(cur, prev, out, 3, 0.9f);
    assert_near(out[0], 0.5f + 0.5f * 0.9f, 1e-6f); /* fully uncertain: leans on prev */
    assert_near(out[1], 1.0f, 1e-6f);               /* confident: follows cur */
    assert_near(out[2], 0.0f, 1e-6f);
    float mid[1] = {0.8f}, pv[1] = {0.0f}, o1[1];
    ks__mask_smooth(mid, pv, o1, 1, 1.0f);
    assert_true(o1[0] > 0.0f && o1[0] < 0.8f);
    ks__mask_smooth(cur, NULL, out, 3, 0.9f);
    assert_near(out[0], 0.5f, 0);
    /* In place over prev. */
    ks__mask_smooth(cur, prev, prev, 3, 0.0f);
    assert_near(prev[0], 0.5f, 0);
    /* A sweep of p (a length that leaves a tail for 4 and 8 lanes), in place over prev, against
     * the libm form of MediaPipe's blend, whichever vector width this CPU runs. */
    enum { N = 1003 };
    static float p[N], q[N];
    for (int i = 0; i < N; i++) {
        p[i] = i == 0 ? -0.25f : i == 1 ? 1.5f : (float)(i - 2) / (float)(N - 3);
        q[i] = (float)((i * 37) % 101) / 100.0f;
    }
    float want[N];
    for (int i = 0; i < N; i++) {
        double pc = p[i] < 0 ? 0 : p[i] > 1 ? 1 : p[i];
        double h = 0;
        if (pc > 0 && pc < 1) h = -(pc * log2(pc) + (1 - pc) * log2(1 - pc));
        double u = 1 - (1 - h) * (1 - h);
        want[i] = (float)(p[i] + (q[i] - p[i]) * u * 0.9);
    }
    ks__mask_smooth(p, q, q, N, 0.9f);
    for (int i = 0; i < N; i++)
        assert_near(q[i], want[i], 2e-6f);
}

/* ks__mask_resample against the per-pixel expression (top, bottom, blend, clamp) on an upsampling
 * (the window-permute path where the CPU has AVX2), a downsampling and scattered taps (gathers),
 * bit for bit, with the count of outputs >= 0.5. */
static void test_mask_resample(void **state) {
    (void)state;
    enum { SW = 37, SH = 9 };
    static float src[SH * SW];
    for (int i = 0; i < SH * SW; i++)
        src[i] = (float)((i * 53) % 97) / 80.0f - 0.1f; /* some outside [0, 1] */
    src[5] = NAN;
    const int32_t widths[3] = {93, 20, 61};
    for (int c = 0; c < 3; c++) {
        int32_t dw = widths[c], dh = 7;
        ks__resample r = {0};
        assert_true(ks__resample_reserve(&r, NULL, (size_t)dw));
        if (c < 2) {
            ks__resample_columns(&r, SW, dw);
        } else {
            for (int32_t x = 0; x < dw; x++) {
                r.col0[x] = (x * 13) % SW;
                r.col1[x] = (x * 7 + 3) % SW;
                r.colw[x] = (float)(x % 5) / 5.0f;
            }
            r.src_w = SW;
        }
        ks__resample_rows rows = {SH, (float)SH / (float)dh};
        float out[7 * 93];
        size_t count = 0;
        ks__mask_resample(&r, src, SW, ks__resample_row_tap, &rows, out, dw, dh, (size_t)dw,
                          &count);
        size_t want_count = 0;
        for (int32_t y = 0; y < dh; y++) {
            int32_t y0, y1;
            float wy;
            ks__resample_row_tap(&rows, y, &y0, &y1, &wy);
            for (int32_t x = 0; x < dw; x++) {
                float a = src[y0 * SW + r.col0[x]], b = src[y1 * SW + r.col0[x]];
                float t = a + (src[y0 * SW + r.col1[x]] - a) * r.colw[x];
                float u = b + (src[y1 * SW + r.col1[x]] - b) * r.colw[x];
                float v = t + (u - t) * wy;
                v = v > 0.0f ? v : 0.0f;
                v = v < 1.0f ? v : 1.0f;
                if (memcmp(&v, &out[y * dw + x], sizeof(v)) != 0)
                    fail_msg("case %d (%d, %d): %.9g, want %.9g", c, (int)x, (int)y,
                             (double)out[y * dw + x], (double)v);
                want_count += v >= 0.5f;
            }
        }
        assert_int_equal(count, want_count);
        ks__resample_free(&r, NULL);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_euro_static_jitter),
        cmocka_unit_test(test_one_euro_ramp),
        cmocka_unit_test(test_landmark_smoother),
        cmocka_unit_test(test_landmark_smoother_matches_filters),
        cmocka_unit_test(test_tracker),
        cmocka_unit_test(test_mask_smooth),
        cmocka_unit_test(test_mask_resample),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
