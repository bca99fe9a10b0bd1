/* Video proof of the VIDEO-mode tasks on synthetic 300-frame clips made from still photos that
 * pan, zoom and rotate over time: every face (and the pose) keeps one track id for the whole
 * clip, the face landmarker's detector runs on at most 10 % of the frames, and on a static clip
 * with per-frame pixel noise One Euro smoothing cuts frame-to-frame landmark jitter at least 3x.
 * Needs the face (and pose) bundles; exits 77 without them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../face/face_internal.h"
#include "image_io.h"
#include "kestrel/face.h"
#include "kestrel/pose.h"

#define ASTRONAUT KS_SOURCE_DIR "/models/images/skimage_astronaut.png"
#define CORAL_FACE KS_SHARED_DATA "/images/coral_face.jpg"

#define NUM_FRAMES 300
#define FRAME_PERIOD_US 33333 /* 30 fps */
#define MAX_DETECTOR_FRACTION 0.10
#define NUM_STATIC_FRAMES 100
#define STATIC_WARMUP_FRAMES 10 /* the filter's start-up transient is not jitter */
#define NOISE_AMPLITUDE 6       /* per-pixel uniform noise in [-6, 6] levels */
#define MIN_JITTER_REDUCTION 3.0

/* The astronaut's face centre in the 512x512 photo (as in test_face.c). */
#define ASTRO_FACE_CX 225.0f
#define ASTRO_FACE_CY 128.0f

static const double kPi = 3.14159265358979323846;

static ks_image_buf g_astro, g_coral;
static int g_have_coral;

static int file_exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

static int setup(void **state) {
    (void)state;
    char err[256];
    if (ks_image_load(ASTRONAUT, 0, &g_astro, err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    g_have_coral = file_exists(CORAL_FACE) &&
                   ks_image_load(CORAL_FACE, 0, &g_coral, err, sizeof(err)) == KS_STATUS_OK;
    return ks_set_models_dir(KS_BUNDLES_DIR) == KS_STATUS_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    ks_image_buf_free(&g_astro);
    ks_image_buf_free(&g_coral);
    return 0;
}

/* ---- synthetic clip ---- */

/* The camera motion of frame t: the frame (same size as the photo) shows the photo panned by up
 * to 6 % of its size, zoomed 0.85x..1.2x and rolled by up to +-20 degrees around the frame
 * centre, each on its own period so the motions mix. Returns m: frame point -> photo point. */
static void clip_affine(int32_t w, int32_t h, int t, float m[6]) {
    double s = (double)t / NUM_FRAMES;
    double zoom = 1.025 + 0.175 * sin(2.0 * kPi * s);
    double angle = (20.0 * kPi / 180.0) * sin(2.0 * kPi * 1.5 * s);
    double pan_x = 0.06 * w * sin(2.0 * kPi * 0.5 * s + 0.3);
    double pan_y = 0.06 * h * cos(2.0 * kPi * s);
    double c = cos(angle) / zoom, sn = sin(angle) / zoom;
    double fx = 0.5 * w, fy = 0.5 * h; /* frame centre */
    /* photo = centre + pan + R(angle) / zoom * (frame - frame centre) */
    m[0] = (float)c;
    m[1] = (float)-sn;
    m[2] = (float)(fx + pan_x - c * fx + sn * fy);
    m[3] = (float)sn;
    m[4] = (float)c;
    m[5] = (float)(fy + pan_y - sn * fx - c * fy);
}

/* Renders frame t of the clip of `photo` into rgb (w * h * 3 bytes). */
static void render_frame(const ks_image *photo, int t, uint8_t *rgb, ks_image *frame) {
    int32_t w = photo->width_px, h = photo->height_px;
    ks_tensor dst = {.info = {.dtype = KS_DTYPE_U8, .shape = {.rank = 4, .dims = {1, h, w, 3}}},
                     .data = rgb,
                     .size_bytes = (size_t)w * (size_t)h * 3};
    ks_image_to_tensor_desc d = {.border = KS_BORDER_REPLICATE};
    clip_affine(w, h, t, d.m);
    assert_int_equal(ks_image_to_tensor(photo, &d, &dst), KS_STATUS_OK);
    *frame = (ks_image){.format = KS_PIXEL_FORMAT_RGB,
                        .width_px = w,
                        .height_px = h,
                        .planes = {rgb},
                        .stride_bytes = {w * 3}};
}

/* Where photo point (px, py) appears in frame t. */
static void photo_to_frame(int32_t w, int32_t h, int t, float px, float py, float *fx, float *fy) {
    float m[6], inv[6], p[2] = {px, py}, q[2];
    clip_affine(w, h, t, m);
    assert_int_equal(ks_affine_invert(m, inv), KS_STATUS_OK);
    ks_affine_apply(inv, p, 1, q);
    *fx = q[0];
    *fy = q[1];
}

/* ---- face landmarker: one id over the whole clip, detector on <= 10 % of frames ---- */

static void landmarker_clip(const ks_image_buf *photo, const char *name, int check_astro_face) {
    const ks_image *src = &photo->image;
    uint8_t *rgb = malloc((size_t)src->width_px * (size_t)src->height_px * 3);
    assert_non_null(rgb);
    ks_face_landmarker *fl = NULL;
    assert_int_equal(
        ks_face_landmarker_create(&(ks_face_landmarker_desc){.task.mode = KS_MODE_VIDEO}, &fl),
        KS_STATUS_OK);
    int32_t id = -1;
    int num_frames_with_face = 0;
    float worst_offset = 0.0f;
    for (int t = 0; t < NUM_FRAMES; t++) {
        ks_image frame;
        render_frame(src, t, rgb, &frame);
        ks_face_meshes *faces = NULL;
        assert_int_equal(
            ks_face_landmarker_detect(fl, &frame, (int64_t)t * FRAME_PERIOD_US, &faces),
            KS_STATUS_OK);
        if (faces->count != 1) fprintf(stderr, "%s frame %d: %u faces\n", name, t, faces->count);
        assert_int_equal(faces->count, 1);
        if (id < 0) id = faces->items[0].id;
        if (faces->items[0].id != id)
            fprintf(stderr, "%s frame %d: id %d, was %d\n", name, t, faces->items[0].id, id);
        assert_int_equal(faces->items[0].id, id);
        num_frames_with_face++;
        if (check_astro_face) {
            /* The tracked face is the astronaut's: its box centre follows the camera motion. */
            const ks_box *b = &faces->items[0].box;
            float ex, ey;
            photo_to_frame(src->width_px, src->height_px, t, ASTRO_FACE_CX, ASTRO_FACE_CY, &ex,
                           &ey);
            float off =
                hypotf(b->x + 0.5f * b->w - ex, b->y + 0.5f * b->h - ey) / fmaxf(b->w, b->h);
            worst_offset = fmaxf(worst_offset, off);
        }
        ks_face_meshes_release(faces);
    }
    ks__face_lm_stats st;
    assert_int_equal(ks__face_landmarker_stats(fl, &st), KS_STATUS_OK);
    double fraction = (double)st.num_detector_runs / NUM_FRAMES;
    printf("[ video ] %s: face id %d on %d/%d frames; detector ran on %llu frames (%.1f %%), "
           "mesh on %llu",
           name, id, num_frames_with_face, NUM_FRAMES, (unsigned long long)st.num_detector_runs,
           100.0 * fraction, (unsigned long long)st.num_landmark_runs);
    if (check_astro_face) printf("; worst centre offset %.2f face sizes", (double)worst_offset);
    printf("\n");
    assert_true(id >= 1);
    assert_true(st.num_detector_runs >= 1);
    assert_true(fraction <= MAX_DETECTOR_FRACTION);
    assert_int_equal(st.num_landmark_runs, NUM_FRAMES);
    if (check_astro_face) assert_true(worst_offset < 0.25f);
    ks_face_landmarker_destroy(fl);
    free(rgb);
}

static void test_landmarker_clip_astronaut(void **state) {
    (void)state;
    landmarker_clip(&g_astro, "astronaut", 1);
}

static void test_landmarker_clip_coral(void **state) {
    (void)state;
    if (!g_have_coral) skip();
    landmarker_clip(&g_coral, "coral_face", 0);
}

/* ---- face detector (several faces): each face keeps its tracker id ---- */

/* A marginal detection: a face box within 2 % of the frame's size of its border (partly out of
 * view) or a score near the threshold; such a face can flicker in and out of the detections for
 * longer than the tracker's grace period and come back under a new id. */
#define MARGINAL_SCORE 0.7f
static int marginal(const ks_face *f, const ks_image *frame) {
    const ks_box *b = &f->box;
    float mx = 0.02f * (float)frame->width_px, my = 0.02f * (float)frame->height_px;
    return f->score < MARGINAL_SCORE || b->x < mx || b->y < my ||
           b->x + b->w > (float)frame->width_px - mx || b->y + b->h > (float)frame->height_px - my;
}

static void detector_clip(const ks_image_buf *photo, const char *name) {
    const ks_image *src = &photo->image;
    uint8_t *rgb = malloc((size_t)src->width_px * (size_t)src->height_px * 3);
    assert_non_null(rgb);
    ks_face_detector *det = NULL;
    assert_int_equal(
        ks_face_detector_create(&(ks_face_detector_desc){.task.mode = KS_MODE_VIDEO,
                                                         .model = KS_FACE_DETECTOR_FULL_RANGE},
                                &det),
        KS_STATUS_OK);
    enum { MAX_FACES = 16 };
    int32_t ids[MAX_FACES];
    int num_frames_seen[MAX_FACES] = {0};
    uint32_t num_ids = 0;
    uint32_t num_first = 0; /* clearly detected faces of the first frame */
    int num_entered = 0;
    for (int t = 0; t < NUM_FRAMES; t++) {
        ks_image frame;
        render_frame(src, t, rgb, &frame);
        ks_faces *faces = NULL;
        assert_int_equal(ks_face_detect(det, &frame, (int64_t)t * FRAME_PERIOD_US, &faces),
                         KS_STATUS_OK);
        if (t == 0) {
            assert_true(faces->count >= 1 && faces->count <= MAX_FACES);
            for (uint32_t i = 0; i < faces->count; i++)
                if (!marginal(&faces->items[i], &frame)) ids[num_ids++] = faces->items[i].id;
            assert_true(num_ids >= 1);
            num_first = num_ids;
        }
        /* Every clearly detected face keeps its id: one the detector misses for a frame or two
         * comes back under its old id. Only marginal detections may start new ids. */
        for (uint32_t i = 0; i < faces->count; i++) {
            uint32_t k = 0;
            while (k < num_ids && faces->items[i].id != ids[k])
                k++;
            for (uint32_t j = 0; j < i; j++)
                assert_int_not_equal(faces->items[j].id, faces->items[i].id);
            if (k < num_ids) {
                num_frames_seen[k]++;
            } else if (!marginal(&faces->items[i], &frame)) {
                fprintf(stderr, "%s frame %d: new id %d for a clear face\n", name, t,
                        faces->items[i].id);
                fail();
            } else if (num_ids < MAX_FACES) {
                /* a marginal face: followed from now on like the others */
                ids[num_ids] = faces->items[i].id;
                num_frames_seen[num_ids++] = 1;
                num_entered++;
            }
        }
        if (getenv("KS_VIDEO_TRACE")) {
            fprintf(stderr, "%s frame %d:", name, t);
            for (uint32_t i = 0; i < faces->count; i++)
                fprintf(stderr, " %d(%.0f,%.0f %.2f)", faces->items[i].id,
                        (double)faces->items[i].box.x, (double)faces->items[i].box.y,
                        (double)faces->items[i].score);
            fprintf(stderr, "\n");
        }
        ks_faces_release(faces);
    }
    printf("[ video ] %s: %u clear faces in the first frame (full-range detector + IoU tracker), "
           "no clear face got a new id in %d frames; frames per id:",
           name, num_first, NUM_FRAMES);
    for (uint32_t k = 0; k < num_ids; k++)
        printf(" id %d: %d", ids[k], num_frames_seen[k]);
    printf("; %d marginal track(s) started\n", num_entered);
    /* Every face is followed through most of the clip. */
    for (uint32_t k = 0; k < num_first; k++)
        assert_true(num_frames_seen[k] >= NUM_FRAMES * 9 / 10);
    ks_face_detector_destroy(det);
    free(rgb);
}

static void test_detector_clip_astronaut(void **state) {
    (void)state;
    detector_clip(&g_astro, "astronaut");
}

static void test_detector_clip_coral(void **state) {
    (void)state;
    if (!g_have_coral) skip();
    detector_clip(&g_coral, "coral_face");
}

/* ---- smoothing on a static clip with pixel noise ---- */

/* Mean frame-to-frame landmark displacement (pixels) over a static clip of the astronaut with
 * fresh uniform pixel noise per frame, smoothing on (0: default) or off (< 0). */
static double static_jitter(float smoothing) {
    const ks_image *src = &g_astro.image;
    size_t n = (size_t)src->width_px * (size_t)src->height_px * 3;
    uint8_t *rgb = malloc(n);
    float *prev = NULL;
    assert_non_null(rgb);
    ks_face_landmarker *fl = NULL;
    assert_int_equal(
        ks_face_landmarker_create(
            &(ks_face_landmarker_desc){.task = {.mode = KS_MODE_VIDEO, .smoothing = smoothing}},
            &fl),
        KS_STATUS_OK);
    uint32_t rng = 12345u; /* same noise for both runs */
    double sum = 0.0;
    int num_steps = 0;
    uint32_t num_landmarks = 0;
    for (int t = 0; t < NUM_STATIC_FRAMES; t++) {
        const uint8_t *p = src->planes[0];
        for (size_t i = 0; i < n; i++) {
            rng = rng * 1664525u + 1013904223u;
            int v = (int)p[i] + (int)((rng >> 24) % (2 * NOISE_AMPLITUDE + 1)) - NOISE_AMPLITUDE;
            rgb[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
        ks_image frame = {.format = KS_PIXEL_FORMAT_RGB,
                          .width_px = src->width_px,
                          .height_px = src->height_px,
                          .planes = {rgb},
                          .stride_bytes = {src->width_px * 3}};
        ks_face_meshes *faces = NULL;
        assert_int_equal(
            ks_face_landmarker_detect(fl, &frame, (int64_t)t * FRAME_PERIOD_US, &faces),
            KS_STATUS_OK);
        assert_int_equal(faces->count, 1);
        const ks_face_mesh *f = &faces->items[0];
        if (!prev) {
            num_landmarks = f->num_landmarks;
            prev = calloc((size_t)num_landmarks * 2, sizeof(float));
            assert_non_null(prev);
        }
        assert_int_equal(f->num_landmarks, num_landmarks);
        double d = 0.0;
        for (uint32_t i = 0; i < num_landmarks; i++) {
            d += hypot(f->landmarks[i].x - prev[2 * i], f->landmarks[i].y - prev[2 * i + 1]);
            prev[2 * i] = f->landmarks[i].x;
            prev[2 * i + 1] = f->landmarks[i].y;
        }
        if (t > STATIC_WARMUP_FRAMES) {
            sum += d / num_landmarks;
            num_steps++;
        }
        ks_face_meshes_release(faces);
    }
    ks_face_landmarker_destroy(fl);
    free(prev);
    free(rgb);
    return sum / num_steps;
}

static void test_smoothing_cuts_jitter(void **state) {
    (void)state;
    double raw = static_jitter(-1.0f);
    double smooth = static_jitter(0.0f);
    double factor = raw / fmax(smooth, 1e-9);
    printf("[ video ] static astronaut + noise +-%d: jitter %.4f px/frame raw, %.4f px/frame "
           "smoothed: %.1fx less\n",
           NOISE_AMPLITUDE, raw, smooth, factor);
    assert_true(raw > 0.0);
    assert_true(factor >= MIN_JITTER_REDUCTION);
}

/* ---- pose: one id over the clip ---- */

static void test_pose_clip_astronaut(void **state) {
    (void)state;
    if (!file_exists(KS_BUNDLES_DIR "/pose_landmarker_full.ksb")) skip();
    const ks_image *src = &g_astro.image;
    uint8_t *rgb = malloc((size_t)src->width_px * (size_t)src->height_px * 3);
    assert_non_null(rgb);
    ks_pose_landmarker *pl = NULL;
    assert_int_equal(
        ks_pose_landmarker_create(&(ks_pose_landmarker_desc){.task.mode = KS_MODE_VIDEO}, &pl),
        KS_STATUS_OK);
    int32_t id = -1;
    for (int t = 0; t < NUM_FRAMES; t++) {
        ks_image frame;
        render_frame(src, t, rgb, &frame);
        ks_poses *poses = NULL;
        assert_int_equal(ks_pose_detect(pl, &frame, (int64_t)t * FRAME_PERIOD_US, &poses),
                         KS_STATUS_OK);
        if (poses->count != 1) fprintf(stderr, "pose frame %d: %u poses\n", t, poses->count);
        assert_int_equal(poses->count, 1);
        if (id < 0) id = poses->items[0].id;
        if (poses->items[0].id != id)
            fprintf(stderr, "pose frame %d: id %d, was %d\n", t, poses->items[0].id, id);
        assert_int_equal(poses->items[0].id, id);
        ks_poses_release(poses);
    }
    printf("[ video ] astronaut: pose id %d on all %d frames\n", id, NUM_FRAMES);
    ks_pose_landmarker_destroy(pl);
    free(rgb);
}

int main(void) {
    if (!file_exists(KS_BUNDLES_DIR "/face_landmarker.ksb") ||
        !file_exists(KS_BUNDLES_DIR "/face_detector_full.ksb")) {
        fprintf(stderr, "face bundles not built in %s: skipping\n", KS_BUNDLES_DIR);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_landmarker_clip_astronaut),
        cmocka_unit_test(test_landmarker_clip_coral),
        cmocka_unit_test(test_detector_clip_astronaut),
        cmocka_unit_test(test_detector_clip_coral),
        cmocka_unit_test(test_smoothing_cuts_jitter),
        cmocka_unit_test(test_pose_clip_astronaut),
    };
    /* ctest runs one case per test (cmake/testing.cmake: ks_add_cmocka_test) */
    const char *filter = getenv("KS_TEST_FILTER");
    if (filter && filter[0]) cmocka_set_test_filter(filter);
    return cmocka_run_group_tests(tests, setup, teardown);
}
