/* Face tasks on real photos: detection where the face is, landmarks inside the face, stable ids
 * over shifted VIDEO frames, orientation handling, allocator balance and bad inputs. Needs the
 * face bundles (built by algos/face/bundle.cmake from the pinned models); exits 77 without them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../face/face_internal.h"
#include "image_io.h"
#include "kestrel/face.h"
#include "kestrel/pipeline.h"

/* algos/nodes/node_types.h */
ks_status ks__task_register_vision_nodes(void);
ks_status ks__task_register_segment_nodes(void);
ks_status ks__task_register_all_nodes(void);

#define ASTRONAUT KS_SOURCE_DIR "/models/images/skimage_astronaut.png"
#define MESSI KS_SOURCE_DIR "/models/images/opencv_messi5.jpg"
#define CORAL_FACE KS_SHARED_DATA "/images/coral_face.jpg"
#define GROUP_PHOTO KS_SHARED_DATA "/images/ultraface_imgs_1.jpg"

/* The astronaut's face (512x512 photo): centre and side measured on the image by hand, with a
 * tolerance that any correct BlazeFace box meets. */
#define ASTRO_FACE_CX 225.0f
#define ASTRO_FACE_CY 128.0f
#define ASTRO_CENTRE_TOL_PX 15.0f

static ks_image_buf g_astro, g_messi;

static int file_exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

static int setup(void **state) {
    (void)state;
    char err[256];
    if (ks_image_load(ASTRONAUT, 0, &g_astro, err, sizeof(err)) ||
        ks_image_load(MESSI, 0, &g_messi, err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return ks_set_models_dir(KS_BUNDLES_DIR) == KS_STATUS_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    ks_image_buf_free(&g_astro);
    ks_image_buf_free(&g_messi);
    return 0;
}

static void box_centre(const ks_box *b, float *cx, float *cy) {
    *cx = b->x + 0.5f * b->w;
    *cy = b->y + 0.5f * b->h;
}

static int inside(const ks_box *b, float x, float y, float margin_px) {
    return x >= b->x - margin_px && x <= b->x + b->w + margin_px && y >= b->y - margin_px &&
           y <= b->y + b->h + margin_px;
}

static void test_detect_astronaut(void **state) {
    (void)state;
    for (int model = 0; model < KS_FACE_DETECTOR_MODEL_COUNT; model++) {
        ks_face_detector *det = NULL;
        ks_face_detector_desc desc = {.model = (ks_face_detector_model)model};
        assert_int_equal(ks_face_detector_create(&desc, &det), KS_STATUS_OK);
        ks_faces *faces = NULL;
        assert_int_equal(ks_face_detect(det, &g_astro.image, 0, &faces), KS_STATUS_OK);
        assert_int_equal(faces->count, 1);
        const ks_face *f = &faces->items[0];
        float cx, cy;
        box_centre(&f->box, &cx, &cy);
        assert_true(fabsf(cx - ASTRO_FACE_CX) < ASTRO_CENTRE_TOL_PX);
        assert_true(fabsf(cy - ASTRO_FACE_CY) < ASTRO_CENTRE_TOL_PX);
        assert_true(f->box.w > 70.0f && f->box.w < 130.0f);
        assert_true(f->score > 0.8f && f->score <= 1.0f);
        assert_int_equal(f->id, -1); /* IMAGE mode */
        for (int k = 0; k < KS_FACE_KEYPOINT_COUNT; k++)
            assert_true(inside(&f->box, f->keypoints[k].x, f->keypoints[k].y, 2.0f));
        /* The right eye (subject's) is on the image's left. */
        assert_true(f->keypoints[KS_FACE_KEYPOINT_RIGHT_EYE].x <
                    f->keypoints[KS_FACE_KEYPOINT_LEFT_EYE].x);
        ks_faces_release(faces);
        ks_face_detector_destroy(det);
    }
}

static void test_detect_messi_full_range(void **state) {
    (void)state;
    ks_face_detector *det = NULL;
    ks_face_detector_desc desc = {.model = KS_FACE_DETECTOR_FULL_RANGE};
    assert_int_equal(ks_face_detector_create(&desc, &det), KS_STATUS_OK);
    ks_faces *faces = NULL;
    assert_int_equal(ks_face_detect(det, &g_messi.image, 0, &faces), KS_STATUS_OK);
    /* One small face (about 30 px) near (242, 114); MediaPipe finds the same one. */
    assert_int_equal(faces->count, 1);
    float cx, cy;
    box_centre(&faces->items[0].box, &cx, &cy);
    assert_true(fabsf(cx - 242.0f) < 10.0f && fabsf(cy - 113.0f) < 10.0f);
    ks_faces_release(faces);
    ks_face_detector_destroy(det);
}

static void test_detect_shared_photo(void **state) {
    (void)state;
    if (!file_exists(CORAL_FACE)) skip();
    ks_image_buf photo;
    char err[256];
    assert_int_equal(ks_image_load(CORAL_FACE, 0, &photo, err, sizeof(err)), KS_STATUS_OK);
    ks_face_detector *det = NULL;
    assert_int_equal(ks_face_detector_create(NULL, &det), KS_STATUS_OK);
    ks_faces *faces = NULL;
    assert_int_equal(ks_face_detect(det, &photo.image, 0, &faces), KS_STATUS_OK);
    assert_int_equal(faces->count, 2); /* as MediaPipe's short-range detector */
    for (uint32_t i = 1; i < faces->count; i++)
        assert_true(faces->items[i - 1].score >= faces->items[i].score);
    ks_faces_release(faces);
    ks_face_detector_destroy(det);
    ks_image_buf_free(&photo);
}

static void check_mesh(const ks_face_mesh *f, uint32_t num_landmarks) {
    assert_int_equal(f->num_landmarks, num_landmarks);
    float cx, cy;
    box_centre(&f->box, &cx, &cy);
    assert_true(fabsf(cx - ASTRO_FACE_CX) < ASTRO_CENTRE_TOL_PX);
    assert_true(fabsf(cy - ASTRO_FACE_CY) < 2 * ASTRO_CENTRE_TOL_PX);
    /* Every landmark lies on the face: inside the detector's box grown by 15 %. */
    const ks_box det_box = {178.0f, 81.0f, 94.0f, 94.0f};
    for (uint32_t i = 0; i < f->num_landmarks; i++)
        assert_true(inside(&det_box, f->landmarks[i].x, f->landmarks[i].y, 0.15f * det_box.w));
    assert_true(f->score > 0.5f);
    /* Nearly frontal portrait. */
    assert_true(fabsf(f->yaw_deg) < 20.0f && fabsf(f->roll_deg) < 20.0f &&
                fabsf(f->pitch_deg) < 30.0f);
    const ks_face_expressions *e = &f->expressions;
    const float v[5] = {e->mouth_open, e->left_eye_blink, e->right_eye_blink, e->brow_raise,
                        e->smile};
    for (int i = 0; i < 5; i++)
        assert_true(v[i] >= 0.0f && v[i] <= 1.0f);
    /* Pose: rotation rows are orthogonal with equal norms (a scaled rotation), face in front
     * of the camera (z translation < 0). */
    const float *m = f->pose_matrix;
    float n0 = m[0] * m[0] + m[1] * m[1] + m[2] * m[2];
    float n1 = m[4] * m[4] + m[5] * m[5] + m[6] * m[6];
    float d01 = m[0] * m[4] + m[1] * m[5] + m[2] * m[6];
    assert_true(n0 > 0.0f && fabsf(n0 - n1) < 1e-3f * n0 && fabsf(d01) < 1e-3f * n0);
    assert_true(m[11] < 0.0f);
    assert_true(f->projection_matrix[0] > 0.0f && f->projection_matrix[14] < 0.0f);
}

static void test_landmarks_astronaut(void **state) {
    (void)state;
    for (int refine = 0; refine < 2; refine++) {
        ks_face_landmarker *fl = NULL;
        ks_face_landmarker_desc desc = {.refine_landmarks = refine};
        assert_int_equal(ks_face_landmarker_create(&desc, &fl), KS_STATUS_OK);
        ks_face_meshes *faces = NULL;
        assert_int_equal(ks_face_landmarker_detect(fl, &g_astro.image, 0, &faces), KS_STATUS_OK);
        assert_int_equal(faces->count, 1);
        check_mesh(&faces->items[0],
                   refine ? KS_FACE_MESH_NUM_LANDMARKS_WITH_IRIS : KS_FACE_MESH_NUM_LANDMARKS);
        if (refine) {
            /* Iris centres (468, 473) sit between their eye corners (33/133, 362/263). */
            const ks_point3f *p = faces->items[0].landmarks;
            assert_true(p[468].x > p[33].x && p[468].x < p[133].x);
            assert_true(p[473].x > p[362].x && p[473].x < p[263].x);
        }
        ks_face_meshes_release(faces);
        ks_face_landmarker_destroy(fl);
    }
}

/* Frame k: the astronaut shifted right and down by 3k pixels (edge pixels replicated). */
static uint8_t *shifted_frame(int k) {
    int w = g_astro.image.width_px, h = g_astro.image.height_px, d = 3 * k;
    assert_int_equal(g_astro.image.format, KS_PIXEL_FORMAT_RGB);
    const uint8_t *src = g_astro.pixels;
    uint8_t *dst = malloc((size_t)w * (size_t)h * 3);
    assert_non_null(dst);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int sx = x - d < 0 ? 0 : x - d, sy = y - d < 0 ? 0 : y - d;
            memcpy(dst + ((size_t)y * w + x) * 3, src + ((size_t)sy * w + sx) * 3, 3);
        }
    return dst;
}

static void test_video_ids_stable(void **state) {
    (void)state;
    ks_face_detector *det = NULL;
    ks_face_landmarker *fl = NULL;
    assert_int_equal(
        ks_face_detector_create(&(ks_face_detector_desc){.task.mode = KS_MODE_VIDEO}, &det),
        KS_STATUS_OK);
    assert_int_equal(
        ks_face_landmarker_create(&(ks_face_landmarker_desc){.task.mode = KS_MODE_VIDEO}, &fl),
        KS_STATUS_OK);
    int32_t det_id = -1, mesh_id = -1;
    float prev_cx = 0.0f;
    for (int k = 0; k < 6; k++) {
        uint8_t *px = shifted_frame(k);
        ks_image img = g_astro.image;
        img.planes[0] = px;
        int64_t ts = 33333 * (int64_t)(k + 1);
        ks_faces *faces = NULL;
        ks_face_meshes *meshes = NULL;
        assert_int_equal(ks_face_detect(det, &img, ts, &faces), KS_STATUS_OK);
        assert_int_equal(ks_face_landmarker_detect(fl, &img, ts, &meshes), KS_STATUS_OK);
        assert_int_equal(faces->count, 1);
        assert_int_equal(meshes->count, 1);
        assert_true(faces->items[0].id >= 1 && meshes->items[0].id >= 1);
        if (k == 0) {
            det_id = faces->items[0].id;
            mesh_id = meshes->items[0].id;
        }
        assert_int_equal(faces->items[0].id, det_id);
        assert_int_equal(meshes->items[0].id, mesh_id);
        float cx, cy;
        box_centre(&meshes->items[0].box, &cx, &cy);
        if (k > 0) assert_true(cx > prev_cx - 1.0f); /* follows the shift (smoothed) */
        prev_cx = cx;
        ks_faces_release(faces);
        ks_face_meshes_release(meshes);
        free(px);
    }
    /* Timestamps must increase in VIDEO mode. */
    ks_faces *faces = NULL;
    assert_int_not_equal(ks_face_detect(det, &g_astro.image, 1, &faces), KS_STATUS_OK);
    assert_null(faces);
    assert_true(strlen(ks_last_error(det)) > 0);
    ks_face_detector_destroy(det);
    ks_face_landmarker_destroy(fl);
}

/* The same photo delivered rotated 90 degrees clockwise (as a sensor would) with the desc
 * undoing it gives the upright result. */
static void test_rotation(void **state) {
    (void)state;
    int w = g_astro.image.width_px, h = g_astro.image.height_px;
    uint8_t *rot = malloc((size_t)w * (size_t)h * 3);
    assert_non_null(rot);
    /* rotated image is h x w: pixel (x', y') = upright (y', h - 1 - x') */
    for (int y = 0; y < w; y++)
        for (int x = 0; x < h; x++)
            memcpy(rot + ((size_t)y * h + x) * 3,
                   g_astro.pixels + ((size_t)(h - 1 - x) * w + y) * 3, 3);
    ks_image img = {.format = KS_PIXEL_FORMAT_RGB,
                    .width_px = h,
                    .height_px = w,
                    .planes = {rot},
                    .stride_bytes = {3 * h}};
    ks_face_detector *det = NULL;
    ks_face_detector_desc desc = {.task.rotation = KS_ROTATION_270};
    assert_int_equal(ks_face_detector_create(&desc, &det), KS_STATUS_OK);
    ks_faces *faces = NULL;
    assert_int_equal(ks_face_detect(det, &img, 0, &faces), KS_STATUS_OK);
    assert_int_equal(faces->count, 1);
    float cx, cy;
    box_centre(&faces->items[0].box, &cx, &cy);
    assert_true(fabsf(cx - ASTRO_FACE_CX) < ASTRO_CENTRE_TOL_PX);
    assert_true(fabsf(cy - ASTRO_FACE_CY) < ASTRO_CENTRE_TOL_PX);
    ks_faces_release(faces);
    ks_face_detector_destroy(det);
    free(rot);
}

/* ks_face_landmarker_stats: the calls, the two models by name with their run counts, and stages
 * that add up to no more than the calls' wall time. */
static void test_stats(void **state) {
    (void)state;
    ks_face_landmarker *fl = NULL;
    assert_int_equal(
        ks_face_landmarker_create(&(ks_face_landmarker_desc){.task.mode = KS_MODE_VIDEO}, &fl),
        KS_STATUS_OK);
    ks_task_stats st;
    assert_int_equal(ks_face_landmarker_stats(fl, NULL), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_face_landmarker_stats(NULL, &st), KS_STATUS_INVALID_ARGUMENT);
    const int frames = 5;
    for (int i = 0; i < frames; i++) {
        ks_face_meshes *m = NULL;
        assert_int_equal(ks_face_landmarker_detect(fl, &g_astro.image, 33333 * (i + 1), &m),
                         KS_STATUS_OK);
        assert_int_equal(m->count, 1);
        ks_face_meshes_release(m);
    }
    assert_int_equal(ks_face_landmarker_stats(fl, &st), KS_STATUS_OK);
    assert_int_equal(st.num_calls, frames);
    assert_true(st.num_stages >= 4 && st.num_stages <= KS_TASK_MAX_STAGES);
    assert_int_equal(st.stages[0].kind, KS_TASK_STAGE_PREPROCESS);
    assert_int_equal(st.stages[st.num_stages - 2].kind, KS_TASK_STAGE_POSTPROCESS);
    assert_int_equal(st.stages[st.num_stages - 1].kind, KS_TASK_STAGE_OTHER);
    double sum = 0.0, inference = 0.0;
    uint64_t detector_runs = 0, mesh_runs = 0;
    for (uint32_t i = 0; i < st.num_stages; i++) {
        const ks_task_stage *g = &st.stages[i];
        assert_true(g->total_ms >= 0.0);
        sum += g->total_ms;
        if (g->kind != KS_TASK_STAGE_INFERENCE) continue;
        inference += g->total_ms;
        if (strcmp(g->name, "detector") == 0) detector_runs = g->num_runs;
        if (strcmp(g->name, "landmarks_model") == 0) mesh_runs = g->num_runs;
    }
    /* VIDEO: the detector runs on the first frame only (the face is tracked after it). */
    assert_int_equal(detector_runs, 1);
    assert_int_equal(mesh_runs, frames);
    assert_true(fabs(inference - st.inference_ms) < 1e-9);
    assert_true(st.inference_ms > 0.0);
    assert_true(sum <= st.total_ms * 1.0001 + 1e-6);
    assert_string_equal(ks_task_stage_kind_string(KS_TASK_STAGE_OTHER), "other");
    assert_string_equal(ks_task_stage_kind_string((ks_task_stage_kind)99), "invalid");
    ks_face_landmarker_destroy(fl);
}

/* The astronaut as an Android camera delivers it (NV21, rotated 90 degrees, BT.601 video range):
 * the task samples the camera planes directly, and the face lands where the RGB photo puts it. */
static void test_nv21_rotated_frame(void **state) {
    (void)state;
    int w = g_astro.image.width_px, h = g_astro.image.height_px; /* upright photo */
    /* The sensor image (h x w) is the photo turned 90 degrees counter-clockwise, so the task's
     * rotation 90 (clockwise) makes it upright: sensor pixel (sx, sy) = upright (w - 1 - sy, sx).
     */
    int sw = h, sh = w;
    int cw = (sw + 1) / 2, ch = (sh + 1) / 2;
    uint8_t *yp = malloc((size_t)sw * sh), *vu = malloc((size_t)cw * ch * 2);
    assert_non_null(yp);
    assert_non_null(vu);
    for (int sy = 0; sy < sh; sy++)
        for (int sx = 0; sx < sw; sx++) {
            const uint8_t *p = g_astro.pixels + ((size_t)sx * w + (w - 1 - sy)) * 3;
            double y = 16.0 + 0.256788 * p[0] + 0.504129 * p[1] + 0.097906 * p[2];
            yp[(size_t)sy * sw + sx] = (uint8_t)(y + 0.5);
            if ((sx | sy) & 1) continue;
            double v = 128.0 + 0.439216 * p[0] - 0.367788 * p[1] - 0.071427 * p[2];
            double u = 128.0 - 0.148223 * p[0] - 0.290993 * p[1] + 0.439216 * p[2];
            uint8_t *c = vu + (size_t)(sy / 2) * cw * 2 + (size_t)(sx / 2) * 2;
            c[0] = (uint8_t)(v + 0.5);
            c[1] = (uint8_t)(u + 0.5);
        }
    ks_image img = {.format = KS_PIXEL_FORMAT_NV21,
                    .width_px = sw,
                    .height_px = sh,
                    .planes = {yp, vu},
                    .stride_bytes = {sw, 2 * cw}};
    ks_face_detector *det = NULL;
    assert_int_equal(
        ks_face_detector_create(&(ks_face_detector_desc){.task.rotation = KS_ROTATION_90}, &det),
        KS_STATUS_OK);
    ks_faces *faces = NULL;
    assert_int_equal(ks_face_detect(det, &img, 0, &faces), KS_STATUS_OK);
    assert_int_equal(faces->count, 1);
    float cx, cy;
    box_centre(&faces->items[0].box, &cx, &cy);
    assert_true(fabsf(cx - ASTRO_FACE_CX) < ASTRO_CENTRE_TOL_PX);
    assert_true(fabsf(cy - ASTRO_FACE_CY) < ASTRO_CENTRE_TOL_PX);
    ks_faces_release(faces);
    ks_face_detector_destroy(det);
    free(yp);
    free(vu);
}

/* Small faces: a 720x478 group photo whose ~52 faces are 20-30 px wide. One BlazeFace pass
 * finds none; 4 x 4 tiles with the full-range model find 51 (measured), each once. */
static void test_small_faces_tiles(void **state) {
    (void)state;
    if (!file_exists(GROUP_PHOTO)) skip();
    ks_image_buf photo;
    char err[256];
    assert_int_equal(ks_image_load(GROUP_PHOTO, 0, &photo, err, sizeof(err)), KS_STATUS_OK);
    uint32_t counts[2] = {0, 0};
    for (int t = 0; t < 2; t++) {
        ks_face_detector *det = NULL;
        ks_face_detector_desc d = {.model = KS_FACE_DETECTOR_FULL_RANGE, .tiles = t ? 4 : 0};
        assert_int_equal(ks_face_detector_create(&d, &det), KS_STATUS_OK);
        ks_faces *faces = NULL;
        assert_int_equal(ks_face_detect(det, &photo.image, 0, &faces), KS_STATUS_OK);
        counts[t] = faces->count;
        for (uint32_t i = 0; i < faces->count; i++) {
            const ks_box *a = &faces->items[i].box;
            assert_true(a->w > 10.0f && a->w < 60.0f); /* small faces, not a whole tile */
            if (i) assert_true(faces->items[i].score <= faces->items[i - 1].score);
            for (uint32_t j = 0; j < i; j++) { /* each face once */
                const ks_box *b = &faces->items[j].box;
                float iw = fminf(a->x + a->w, b->x + b->w) - fmaxf(a->x, b->x);
                float ih = fminf(a->y + a->h, b->y + b->h) - fmaxf(a->y, b->y);
                if (iw > 0.0f && ih > 0.0f)
                    assert_true(iw * ih / (a->w * a->h + b->w * b->h - iw * ih) <= 0.3f);
            }
        }
        ks_faces_release(faces);
        ks_face_detector_destroy(det);
    }
    print_message("[ tiles ] group photo: %u faces in one pass, %u with 4 x 4 tiles\n", counts[0],
                  counts[1]);
    assert_true(counts[0] < 5);
    assert_true(counts[1] >= 45);
    /* Tiles are an IMAGE-mode option, 2..4. */
    ks_face_detector *det = NULL;
    assert_int_equal(ks_face_detector_create(
                         &(ks_face_detector_desc){.task.mode = KS_MODE_VIDEO, .tiles = 3}, &det),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "IMAGE mode"));
    assert_int_equal(ks_face_detector_create(&(ks_face_detector_desc){.tiles = 5}, &det),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_null(det);
    ks_image_buf_free(&photo);
}

typedef struct counting {
    long num_alloc, num_free;
} counting;

static void *count_alloc(void *user, size_t size, size_t align) {
    void *p = NULL;
    if (align < sizeof(void *)) align = sizeof(void *);
    if (posix_memalign(&p, align, size ? size : 1)) return NULL;
    ((counting *)user)->num_alloc++;
    return p;
}

static void count_free(void *user, void *p) {
    if (!p) return;
    ((counting *)user)->num_free++;
    free(p);
}

static void test_allocator_balance(void **state) {
    (void)state;
    counting c = {0, 0};
    ks_allocator a = {count_alloc, count_free, &c};
    ks_face_landmarker *fl = NULL;
    ks_face_landmarker_desc desc = {.task = {.allocator = &a}};
    assert_int_equal(ks_face_landmarker_create(&desc, &fl), KS_STATUS_OK);
    ks_face_meshes *faces = NULL;
    assert_int_equal(ks_face_landmarker_detect(fl, &g_astro.image, 0, &faces), KS_STATUS_OK);
    ks_face_landmarker_destroy(fl); /* results outlive the task */
    assert_int_equal(faces->count, 1);
    ks_face_meshes_release(faces);
    assert_true(c.num_alloc > 0);
    assert_int_equal(c.num_alloc, c.num_free);
}

static void test_bad_inputs(void **state) {
    (void)state;
    ks_face_detector *det = NULL;
    ks_faces *faces = NULL;
    assert_int_equal(ks_face_detector_create(NULL, NULL), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_face_detector_create(&(ks_face_detector_desc){.model = 7}, &det),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(
        ks_face_detector_create(&(ks_face_detector_desc){.task.min_score = 2.0f}, &det),
        KS_STATUS_INVALID_ARGUMENT);
    assert_null(det);
    /* A missing bundle names the path. */
    assert_int_equal(ks_face_detector_create(
                         &(ks_face_detector_desc){.task.model_path = "/nonexistent/x.ksb"}, &det),
                     KS_STATUS_IO_ERROR);
    assert_non_null(strstr(ks_last_error(NULL), "/nonexistent/x.ksb"));
    /* The wrong bundle (a landmarker graph has no 'faces' output). */
    assert_int_equal(
        ks_face_detector_create(
            &(ks_face_detector_desc){.task.model_path = KS_BUNDLES_DIR "/face_landmarker.ksb"},
            &det),
        KS_STATUS_INVALID_MODEL);
    /* A file that is not a bundle at all. */
    assert_int_not_equal(
        ks_face_detector_create(&(ks_face_detector_desc){.task.model_path = ASTRONAUT}, &det),
        KS_STATUS_OK);
    assert_null(det);
    ks_face_landmarker *fl = NULL;
    assert_int_equal(
        ks_face_landmarker_create(
            &(ks_face_landmarker_desc){.task.max_results = KS_FACE_MAX_FACES + 1}, &fl),
        KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "max_results"));
    assert_int_equal(
        ks_face_landmarker_create(&(ks_face_landmarker_desc){.task.max_results = -1}, &fl),
        KS_STATUS_INVALID_ARGUMENT);
    assert_null(fl);

    assert_int_equal(ks_face_detector_create(NULL, &det), KS_STATUS_OK);
    assert_int_equal(ks_face_detect(NULL, &g_astro.image, 0, &faces), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_face_detect(det, NULL, 0, &faces), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_face_detect(det, &g_astro.image, 0, NULL), KS_STATUS_INVALID_ARGUMENT);
    ks_image empty = g_astro.image;
    empty.width_px = 0;
    assert_int_equal(ks_face_detect(det, &empty, 0, &faces), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(det), "empty"));
    ks_image no_pixels = g_astro.image;
    no_pixels.planes[0] = NULL;
    assert_int_equal(ks_face_detect(det, &no_pixels, 0, &faces), KS_STATUS_INVALID_ARGUMENT);
    ks_image bad_stride = g_astro.image;
    bad_stride.stride_bytes[0] = 5;
    assert_int_equal(ks_face_detect(det, &bad_stride, 0, &faces), KS_STATUS_INVALID_ARGUMENT);
    ks_image huge = g_astro.image;
    huge.width_px = 1 << 20;
    assert_int_equal(ks_face_detect(det, &huge, 0, &faces), KS_STATUS_LIMIT_EXCEEDED);
    assert_null(faces);
    /* Still usable after errors. */
    assert_int_equal(ks_face_detect(det, &g_astro.image, 0, &faces), KS_STATUS_OK);
    assert_int_equal(faces->count, 1);
    ks_faces_release(faces);
    ks_face_detector_destroy(det);
    ks_face_detector_destroy(NULL);
    ks_face_landmarker_destroy(NULL);
    ks_faces_release(NULL);
    ks_face_meshes_release(NULL);
}

/* ---- several faces ------------------------------------------------------------------------ */

/* Messi's face (about 30 px in the 548x342 photo, near (242, 113)) cropped to 128x128 and
 * enlarged 4x (bilinear) to 512x512, so that the short-range detector sees it. */
#define MESSI_CROP_X 178
#define MESSI_CROP_Y 49
#define MESSI_CROP_SIDE 128
#define HALF_SIDE 512
/* Landmarks found on the composite may differ from those found on each photo alone (the
 * detector sees a different letterbox, so the ROI moves a little): issue #4's target. */
#define MULTI_MAX_MEAN_ERR 0.02f

static uint8_t *messi_face_px(void) {
    assert_int_equal(g_messi.image.format, KS_PIXEL_FORMAT_RGB);
    uint8_t *dst = malloc((size_t)HALF_SIDE * HALF_SIDE * 3);
    assert_non_null(dst);
    const uint8_t *src = g_messi.pixels;
    size_t stride = (size_t)g_messi.image.stride_bytes[0];
    float k = (float)MESSI_CROP_SIDE / HALF_SIDE;
    for (int y = 0; y < HALF_SIDE; y++) {
        float sy = MESSI_CROP_Y + ((float)y + 0.5f) * k - 0.5f;
        int y0 = (int)floorf(sy);
        float fy = sy - (float)y0;
        for (int x = 0; x < HALF_SIDE; x++) {
            float sx = MESSI_CROP_X + ((float)x + 0.5f) * k - 0.5f;
            int x0 = (int)floorf(sx);
            float fx = sx - (float)x0;
            for (int c = 0; c < 3; c++) {
                const uint8_t *p = src + (size_t)y0 * stride + (size_t)x0 * 3 + c;
                float v = (1 - fy) * ((1 - fx) * p[0] + fx * p[3]) +
                          fy * ((1 - fx) * p[stride] + fx * p[stride + 3]);
                dst[((size_t)y * HALF_SIDE + x) * 3 + c] = (uint8_t)(v + 0.5f);
            }
        }
    }
    return dst;
}

static ks_image rgb_image(uint8_t *px, int w, int h) {
    return (ks_image){.format = KS_PIXEL_FORMAT_RGB,
                      .width_px = w,
                      .height_px = h,
                      .planes = {px},
                      .stride_bytes = {3 * w}};
}

/* The astronaut on the left half, Messi's face on the right: 1024x512. */
static uint8_t *side_by_side_px(const uint8_t *messi) {
    assert_int_equal(g_astro.image.width_px, HALF_SIDE);
    assert_int_equal(g_astro.image.height_px, HALF_SIDE);
    uint8_t *dst = malloc((size_t)2 * HALF_SIDE * HALF_SIDE * 3);
    assert_non_null(dst);
    for (int y = 0; y < HALF_SIDE; y++) {
        memcpy(dst + (size_t)y * 2 * HALF_SIDE * 3,
               g_astro.pixels + (size_t)y * g_astro.image.stride_bytes[0], HALF_SIDE * 3);
        memcpy(dst + ((size_t)y * 2 + 1) * HALF_SIDE * 3, messi + (size_t)y * HALF_SIDE * 3,
               HALF_SIDE * 3);
    }
    return dst;
}

/* Mean landmark distance between two meshes (b shifted by dx), over the mean side of a's box. */
static float mesh_error(const ks_face_mesh *a, const ks_face_mesh *b, float dx) {
    assert_int_equal(a->num_landmarks, b->num_landmarks);
    double sum = 0.0;
    for (uint32_t i = 0; i < a->num_landmarks; i++)
        sum += hypot(a->landmarks[i].x - (b->landmarks[i].x + dx),
                     a->landmarks[i].y - b->landmarks[i].y);
    return (float)(sum / a->num_landmarks / (0.5 * (a->box.w + a->box.h)));
}

/* In the 1024-px-wide composite the astronaut's face is 100 px: too small for the short-range
 * detector's 128x128 input, so these tests use the full-range one (as for group photos). */
static ks_face_meshes *single_face(const ks_image *img) {
    ks_face_landmarker *fl = NULL;
    assert_int_equal(ks_face_landmarker_create(
                         &(ks_face_landmarker_desc){.detector = KS_FACE_DETECTOR_FULL_RANGE}, &fl),
                     KS_STATUS_OK);
    ks_face_meshes *faces = NULL;
    assert_int_equal(ks_face_landmarker_detect(fl, img, 0, &faces), KS_STATUS_OK);
    assert_int_equal(faces->count, 1);
    ks_face_landmarker_destroy(fl);
    return faces;
}

/* The two faces of a side-by-side frame, left first, each checked against its photo alone. */
static void check_two_faces(const ks_face_meshes *faces, const ks_face_mesh *astro,
                            const ks_face_mesh *messi, float *err_left, float *err_right) {
    assert_int_equal(faces->count, 2);
    const ks_face_mesh *l = &faces->items[0], *r = &faces->items[1];
    if (l->box.x > r->box.x) {
        const ks_face_mesh *t = l;
        l = r, r = t;
    }
    assert_true(l->box.x + l->box.w <= HALF_SIDE + 1.0f && r->box.x >= HALF_SIDE - 1.0f);
    *err_left = mesh_error(l, astro, 0.0f);
    *err_right = mesh_error(r, messi, (float)HALF_SIDE);
    assert_true(*err_left <= MULTI_MAX_MEAN_ERR);
    assert_true(*err_right <= MULTI_MAX_MEAN_ERR);
    /* Each face has its own head pose: the left face sits left of the camera axis (x < 0 in
     * camera space), the right one right of it. (The angles themselves differ from the photos
     * alone: the faces are off the composite's optical axis.) */
    assert_true(l->pose_matrix[3] < 0.0f && r->pose_matrix[3] > 0.0f);
    assert_true(l->pose_matrix[11] < 0.0f && r->pose_matrix[11] < 0.0f);
}

static void test_landmarks_two_faces(void **state) {
    (void)state;
    uint8_t *messi_px = messi_face_px();
    uint8_t *both_px = side_by_side_px(messi_px);
    ks_image messi_img = rgb_image(messi_px, HALF_SIDE, HALF_SIDE);
    ks_image both = rgb_image(both_px, 2 * HALF_SIDE, HALF_SIDE);
    ks_face_meshes *astro = single_face(&g_astro.image);
    ks_face_meshes *messi = single_face(&messi_img);

    /* IMAGE mode. The default (one face) still finds one; max_results 2 finds both. */
    ks_face_meshes *faces = NULL;
    ks_face_meshes *one = single_face(&both);
    ks_face_meshes_release(one);
    ks_face_landmarker *fl = NULL;
    assert_int_equal(ks_face_landmarker_create(
                         &(ks_face_landmarker_desc){.task.max_results = 2,
                                                    .detector = KS_FACE_DETECTOR_FULL_RANGE},
                         &fl),
                     KS_STATUS_OK);
    assert_int_equal(ks_face_landmarker_detect(fl, &both, 0, &faces), KS_STATUS_OK);
    float el, er;
    check_two_faces(faces, &astro->items[0], &messi->items[0], &el, &er);
    printf("[ multi ] IMAGE: 2 faces; mean landmark error vs each photo alone: astronaut %.3f %%, "
           "messi %.3f %% of the face box\n",
           100.0 * el, 100.0 * er);
    assert_int_equal(faces->items[0].id, -1);
    ks_face_meshes_release(faces);
    ks_face_landmarker_destroy(fl);

    /* VIDEO mode, asking for 3 faces when 2 are there: distinct ids that stay, and the
     * detector looks for the third only every few frames. */
    const int num_frames = 60;
    assert_int_equal(
        ks_face_landmarker_create(
            &(ks_face_landmarker_desc){.task = {.mode = KS_MODE_VIDEO, .max_results = 3},
                                       .detector = KS_FACE_DETECTOR_FULL_RANGE},
            &fl),
        KS_STATUS_OK);
    int32_t ids[2] = {0, 0};
    float worst = 0.0f;
    for (int k = 0; k < num_frames; k++) {
        assert_int_equal(ks_face_landmarker_detect(fl, &both, 33333 * (int64_t)(k + 1), &faces),
                         KS_STATUS_OK);
        check_two_faces(faces, &astro->items[0], &messi->items[0], &el, &er);
        worst = fmaxf(worst, fmaxf(el, er));
        assert_true(faces->items[0].id >= 1 && faces->items[1].id > faces->items[0].id);
        if (k == 0) {
            ids[0] = faces->items[0].id;
            ids[1] = faces->items[1].id;
        }
        assert_int_equal(faces->items[0].id, ids[0]);
        assert_int_equal(faces->items[1].id, ids[1]);
        ks_face_meshes_release(faces);
    }
    ks__face_lm_stats st;
    assert_int_equal(ks__face_landmarker_stats(fl, &st), KS_STATUS_OK);
    printf("[ multi ] VIDEO, max_results 3, 2 faces: ids %d and %d on all %d frames, detector on "
           "%llu frames (%.1f %%), worst mean error %.3f %%\n",
           (int)ids[0], (int)ids[1], num_frames, (unsigned long long)st.num_detector_runs,
           100.0 * (double)st.num_detector_runs / num_frames, 100.0 * worst);
    assert_int_equal(st.num_frames, num_frames);
    assert_true(st.num_detector_runs >= 1 && st.num_detector_runs * 10 <= (uint64_t)num_frames);
    ks_face_landmarker_destroy(fl);

    ks_face_meshes_release(astro);
    ks_face_meshes_release(messi);
    free(both_px);
    free(messi_px);
}

/* Two tracks on one face (two overlapping detections of the same face) are merged: asking for
 * two faces where there is one gives one, with one id, and the detector keeps looking only every
 * few frames. */
static void test_landmarks_one_face_two_asked(void **state) {
    (void)state;
    ks_face_landmarker *fl = NULL;
    assert_int_equal(
        ks_face_landmarker_create(
            &(ks_face_landmarker_desc){.task = {.mode = KS_MODE_VIDEO, .max_results = 2}}, &fl),
        KS_STATUS_OK);
    const int num_frames = 45;
    int32_t id = 0;
    for (int k = 0; k < num_frames; k++) {
        ks_face_meshes *faces = NULL;
        assert_int_equal(
            ks_face_landmarker_detect(fl, &g_astro.image, 33333 * (int64_t)(k + 1), &faces),
            KS_STATUS_OK);
        assert_int_equal(faces->count, 1);
        if (k == 0) id = faces->items[0].id;
        assert_int_equal(faces->items[0].id, id);
        ks_face_meshes_release(faces);
    }
    ks__face_lm_stats st;
    assert_int_equal(ks__face_landmarker_stats(fl, &st), KS_STATUS_OK);
    printf("[ multi ] VIDEO, max_results 2, 1 face: id %d on all %d frames, detector on %llu "
           "frames (%.1f %%)\n",
           (int)id, num_frames, (unsigned long long)st.num_detector_runs,
           100.0 * (double)st.num_detector_runs / num_frames);
    assert_true(st.num_detector_runs * 10 <= (uint64_t)num_frames);
    ks_face_landmarker_destroy(fl);
}

static ks_status fake_create(const ks_node_init *init, void **state_out) {
    (void)init;
    *state_out = NULL;
    return KS_STATUS_OK;
}

static ks_status fake_process(void *state, ks_node_ctx *ctx) {
    (void)state;
    (void)ctx;
    return KS_STATUS_OK;
}

/* Runs first: an app that registered its own type under a task node's name gets a clear refusal
 * for that node's family only; the other families still register. */
static void test_register_conflict(void **state) {
    (void)state;
    static const ks_node_type fake = {
        .name = "seg_mask", .create = fake_create, .process = fake_process};
    assert_int_equal(ks_node_type_register(&fake), KS_STATUS_OK);
    for (int i = 0; i < 2; i++) { /* the second call returns the first one's result */
        assert_int_equal(ks__task_register_segment_nodes(), KS_STATUS_INVALID_STATE);
        assert_non_null(strstr(ks_last_error(NULL), "'seg_mask' is already registered"));
    }
    assert_int_equal(ks__task_register_all_nodes(), KS_STATUS_INVALID_STATE);
    assert_int_equal(ks__task_register_vision_nodes(), KS_STATUS_OK);
}

/* The generic nodes the face graphs do not use: nms, mask_smoother, and option checking. */
static void test_vision_nodes(void **state) {
    (void)state;
    assert_int_equal(ks__task_register_vision_nodes(), KS_STATUS_OK);
    assert_int_equal(ks__task_register_vision_nodes(), KS_STATUS_OK); /* idempotent */
    assert_non_null(ks_node_type_find("ssd_detections"));
    const char *bad = "{\"inputs\":[\"b\",\"s\"],\"outputs\":[\"d\"],\"nodes\":[{\"type\":"
                      "\"ssd_detections\",\"name\":\"dec\",\"inputs\":[\"b\",\"s\"],\"outputs\":"
                      "[\"d\"],\"options\":{\"preset\":\"faces\"}}]}";
    ks_pipeline *p = NULL;
    assert_int_equal(ks_pipeline_create_json(bad, strlen(bad), NULL, &p),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "faces"));
    const char *g = "{\"inputs\":[\"d\",\"m\"],\"outputs\":[\"k\",\"sm\"],\"nodes\":["
                    "{\"type\":\"nms\",\"inputs\":[\"d\"],\"outputs\":[\"k\"],"
                    "\"options\":{\"iou_threshold\":0.5}},"
                    "{\"type\":\"mask_smoother\",\"inputs\":[\"m\"],\"outputs\":[\"sm\"]}]}";
    assert_int_equal(ks_pipeline_create_json(g, strlen(g), NULL, &p), KS_STATUS_OK);
    /* Two overlapping boxes (IoU 0.81) and a separate one. */
    const float boxes[] = {0.1f,  0.1f,  0.3f, 0.3f, 0.11f, 0.11f,
                           0.31f, 0.31f, 0.6f, 0.6f, 0.8f,  0.8f};
    const float scores[] = {0.6f, 0.9f, 0.7f};
    const int32_t classes[] = {0, 0, 0};
    ks_packet *dp = NULL, *mp = NULL, *outs[2] = {NULL, NULL};
    assert_int_equal(ks_packet_create_detections(
                         NULL, &(ks_packet_detections){3, 0, boxes, scores, classes, NULL}, &dp),
                     KS_STATUS_OK);
    float mask[4] = {0.0f, 1.0f, 0.5f, 0.5f};
    assert_int_equal(
        ks_packet_create_mask(NULL, &(ks_packet_mask){KS_DTYPE_F32, 2, 2, 0, mask}, &mp),
        KS_STATUS_OK);
    const ks_packet *in[2] = {dp, mp};
    assert_int_equal(ks_pipeline_process(p, in, 1, outs), KS_STATUS_OK);
    const ks_packet_detections *kept = ks_packet_detections_view(outs[0]);
    assert_non_null(kept);
    assert_int_equal(kept->num_detections, 2);
    assert_float_equal(kept->scores[0], 0.9f, 1e-6f);
    assert_float_equal(kept->scores[1], 0.7f, 1e-6f);
    ks_packet_release(outs[0]);
    ks_packet_release(outs[1]);
    ks_packet_release(mp);
    /* Second mask: confident pixels follow the new value, uncertain ones lean on the old. */
    float mask2[4] = {1.0f, 0.0f, 0.5f, 0.9f};
    assert_int_equal(
        ks_packet_create_mask(NULL, &(ks_packet_mask){KS_DTYPE_F32, 2, 2, 0, mask2}, &mp),
        KS_STATUS_OK);
    in[1] = mp;
    assert_int_equal(ks_pipeline_process(p, in, 2, outs), KS_STATUS_OK);
    const ks_packet_mask *sm = ks_packet_mask_view(outs[1]);
    assert_non_null(sm);
    const float *v = sm->data;
    assert_float_equal(v[0], 1.0f, 1e-6f);
    assert_float_equal(v[1], 0.0f, 1e-6f);
    assert_float_equal(v[2], 0.5f, 1e-6f);
    assert_true(v[3] < 0.9f && v[3] > 0.5f);
    ks_packet_release(outs[0]);
    ks_packet_release(outs[1]);
    ks_packet_release(mp);
    ks_packet_release(dp);
    ks_pipeline_destroy(p);
}

int main(void) {
    if (!file_exists(KS_BUNDLES_DIR "/face_detector_short.ksb") ||
        !file_exists(KS_BUNDLES_DIR "/face_detector_full.ksb") ||
        !file_exists(KS_BUNDLES_DIR "/face_landmarker.ksb") ||
        !file_exists(KS_BUNDLES_DIR "/face_landmarker_attention.ksb") || !file_exists(ASTRONAUT) ||
        !file_exists(MESSI)) {
        fprintf(stderr, "test_face: face bundles or test photos missing; skipped\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_register_conflict),
        cmocka_unit_test(test_detect_astronaut),
        cmocka_unit_test(test_detect_messi_full_range),
        cmocka_unit_test(test_detect_shared_photo),
        cmocka_unit_test(test_landmarks_astronaut),
        cmocka_unit_test(test_video_ids_stable),
        cmocka_unit_test(test_rotation),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_small_faces_tiles),
        cmocka_unit_test(test_nv21_rotated_frame),
        cmocka_unit_test(test_allocator_balance),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_vision_nodes),
        cmocka_unit_test(test_landmarks_two_faces),
        cmocka_unit_test(test_landmarks_one_face_two_asked),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
