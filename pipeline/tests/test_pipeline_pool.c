/* Per-graph block pool: after a warm-up, frames of a graph with a previous loop, split and
 * foreach crops (and, when the face detector model has been converted, an infer node) call the
 * app's allocator not at all; everything taken is given back by destroy, also when an output
 * packet outlives its pipeline; packets released on another thread return safely. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kestrel/pipeline.h"

#define WARMUP_FRAMES 3
#define COUNTED_FRAMES 100
/* Converted by the face bundle rules at build time (algos/face/bundle.cmake). */
#define DETECTOR_KSM KS_BINARY_DIR "/../bundles/ksm/face_detection_short_range.ksm"

typedef struct counting {
    pthread_mutex_t lock;
    long num_alloc, num_free;
} counting;

static void *count_alloc(void *user, size_t size, size_t align) {
    counting *c = user;
    void *p = NULL;
    if (align < sizeof(void *)) align = sizeof(void *);
    if (posix_memalign(&p, align, size ? size : 1)) return NULL;
    pthread_mutex_lock(&c->lock);
    c->num_alloc++;
    pthread_mutex_unlock(&c->lock);
    return p;
}

static void count_free(void *user, void *p) {
    counting *c = user;
    if (!p) return;
    pthread_mutex_lock(&c->lock);
    c->num_free++;
    pthread_mutex_unlock(&c->lock);
    free(p);
}

static long allocs(counting *c) {
    pthread_mutex_lock(&c->lock);
    long n = c->num_alloc;
    pthread_mutex_unlock(&c->lock);
    return n;
}

static const char *k_crops_graph =
    "{\"name\":\"crops\",\"inputs\":[\"image\",\"rois\"],\"outputs\":[\"tensors\",\"seen\"],"
    "\"nodes\":["
    "{\"type\":\"previous\",\"name\":\"last\",\"inputs\":[\"tensors\"],\"outputs\":[\"prev\"]},"
    "{\"type\":\"has_packet\",\"name\":\"had\",\"inputs\":[\"prev\"],\"outputs\":[\"seen\"]},"
    "{\"type\":\"split\",\"name\":\"split\",\"inputs\":[\"rois\"],\"outputs\":[\"roi_list\"]},"
    "{\"type\":\"foreach\",\"name\":\"per_roi\",\"inputs\":[\"roi_list\",\"image\"],"
    "\"outputs\":[\"tensors\"],\"options\":{\"graph\":{\"inputs\":[\"roi\",\"image\"],"
    "\"outputs\":[\"t\"],\"nodes\":[{\"type\":\"image_to_tensor\",\"name\":\"crop\","
    "\"inputs\":[\"image\",\"roi\"],\"outputs\":[\"t\"],"
    "\"options\":{\"width\":64,\"height\":64,\"range\":[-1,1]}}]}}}]}";

static const char *k_detector_graph =
    "{\"name\":\"detector\",\"inputs\":[\"image\"],\"outputs\":[\"boxes\",\"scores\",\"m\"],"
    "\"nodes\":["
    "{\"type\":\"image_to_tensor\",\"name\":\"pre\",\"inputs\":[\"image\"],"
    "\"outputs\":[\"t\",\"m\"],\"options\":{\"width\":128,\"height\":128,\"range\":[-1,1],"
    "\"keep_aspect\":true,\"border_zero\":true}},"
    "{\"type\":\"infer\",\"name\":\"detector\",\"inputs\":[\"t\"],\"outputs\":[\"boxes\","
    "\"scores\"],\"options\":{\"model\":\"" DETECTOR_KSM "\"}}]}";

/* A graph on a counting allocator, with its inputs. */
typedef struct fixture {
    counting c;
    ks_allocator alloc;
    ks_pipeline *pipeline;
} fixture;

static void fixture_open(fixture *f, const char *graph) {
    memset(f, 0, sizeof(*f));
    pthread_mutex_init(&f->c.lock, NULL);
    f->alloc = (ks_allocator){count_alloc, count_free, &f->c};
    ks_pipeline_desc desc = {.allocator = &f->alloc};
    assert_int_equal(ks_pipeline_create_json(graph, strlen(graph), &desc, &f->pipeline),
                     KS_STATUS_OK);
}

/* Everything the app allocator gave must be back once the pipeline and its packets are gone. */
static void fixture_check_balanced(fixture *f) {
    assert_int_equal(f->c.num_alloc, f->c.num_free);
    pthread_mutex_destroy(&f->c.lock);
}

typedef struct frame_inputs {
    uint8_t *pixels;
    ks_packet *image, *rois;
} frame_inputs;

/* A 320x240 gradient and two rotated ROIs, made before counting starts. */
static void make_inputs(frame_inputs *in) {
    const int w = 320, h = 240;
    in->pixels = malloc((size_t)w * h * 3);
    assert_non_null(in->pixels);
    for (int i = 0; i < w * h * 3; i++)
        in->pixels[i] = (uint8_t)(i * 7);
    assert_int_equal(ks_packet_create_image(NULL,
                                            &(ks_packet_image){.format = KS_PIXEL_RGB8,
                                                               .width_px = w,
                                                               .height_px = h,
                                                               .data = in->pixels},
                                            &in->image),
                     KS_STATUS_OK);
    const ks_rect rects[2] = {{0.3f, 0.4f, 0.2f, 0.3f, 0.3f}, {0.7f, 0.5f, 0.25f, 0.25f, 0.0f}};
    assert_int_equal(ks_packet_create_rects(NULL, &(ks_packet_rects){2, rects}, &in->rois),
                     KS_STATUS_OK);
}

static void free_inputs(frame_inputs *in) {
    ks_packet_release(in->image);
    ks_packet_release(in->rois);
    free(in->pixels);
}

/* Runs warm-up frames, then COUNTED_FRAMES frames, and returns the app allocations the counted
 * frames made. */
static long steady_allocs(ks_pipeline *p, counting *c, const ks_packet *const *ins,
                          uint32_t num_outputs) {
    ks_packet *outs[4] = {NULL};
    int64_t ts = 0;
    for (int k = 0; k < WARMUP_FRAMES; k++) {
        assert_int_equal(ks_pipeline_process(p, ins, ++ts, outs), KS_STATUS_OK);
        for (uint32_t i = 0; i < num_outputs; i++)
            ks_packet_release(outs[i]);
    }
    long before = allocs(c);
    for (int k = 0; k < COUNTED_FRAMES; k++) {
        assert_int_equal(ks_pipeline_process(p, ins, ++ts, outs), KS_STATUS_OK);
        for (uint32_t i = 0; i < num_outputs; i++) {
            assert_non_null(outs[i]);
            ks_packet_release(outs[i]);
        }
    }
    return allocs(c) - before;
}

static void test_crops_steady_state(void **state) {
    (void)state;
    fixture f;
    frame_inputs in;
    make_inputs(&in);
    fixture_open(&f, k_crops_graph);
    const ks_packet *ins[2] = {in.image, in.rois};
    long n = steady_allocs(f.pipeline, &f.c, ins, 2);
    printf("[ pool ] crops graph: %ld app allocations in %d frames after %d warm-up frames "
           "(%ld before)\n",
           n, COUNTED_FRAMES, WARMUP_FRAMES, allocs(&f.c) - n);
    assert_int_equal(n, 0);
    ks_pipeline_destroy(f.pipeline);
    fixture_check_balanced(&f);
    free_inputs(&in);
}

static void test_infer_steady_state(void **state) {
    (void)state;
    FILE *file = fopen(DETECTOR_KSM, "rb");
    if (!file) {
        printf("[ pool ] %s not built yet: skipped\n", DETECTOR_KSM);
        skip();
    }
    fclose(file);
    fixture f;
    frame_inputs in;
    make_inputs(&in);
    fixture_open(&f, k_detector_graph);
    const ks_packet *ins[1] = {in.image};
    long n = steady_allocs(f.pipeline, &f.c, ins, 3);
    printf("[ pool ] detector graph (image_to_tensor + infer): %ld app allocations in %d frames\n",
           n, COUNTED_FRAMES);
    assert_int_equal(n, 0);
    ks_pipeline_destroy(f.pipeline);
    fixture_check_balanced(&f);
    free_inputs(&in);
}

static void *release_on_thread(void *arg) {
    ks_packet_release(arg);
    return NULL;
}

/* Outputs the app keeps past ks_pipeline_destroy, released later (one on another thread), give
 * their blocks back to the app's allocator. */
static void test_packets_outlive_pipeline(void **state) {
    (void)state;
    fixture f;
    frame_inputs in;
    make_inputs(&in);
    fixture_open(&f, k_crops_graph);
    const ks_packet *ins[2] = {in.image, in.rois};
    ks_packet *outs[2] = {NULL};
    assert_int_equal(ks_pipeline_process(f.pipeline, ins, 1, outs), KS_STATUS_OK);
    ks_packet_release(outs[0]);
    ks_packet_release(outs[1]);
    assert_int_equal(ks_pipeline_process(f.pipeline, ins, 2, outs), KS_STATUS_OK);
    ks_pipeline_destroy(f.pipeline);
    assert_true(f.c.num_alloc > f.c.num_free); /* the outputs still hold blocks */
    const ks_packet *t0 = ks_packet_list_item(outs[0], 0);
    assert_non_null(ks_packet_tensor(t0)); /* still readable */
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, release_on_thread, outs[0]), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    ks_packet_release(outs[1]);
    fixture_check_balanced(&f);
    free_inputs(&in);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crops_steady_state),
        cmocka_unit_test(test_infer_steady_state),
        cmocka_unit_test(test_packets_outlive_pipeline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
