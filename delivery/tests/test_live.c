/* Live swap: frames run on another thread while the main thread installs versions 2..5 through
 * the store and publishes each new model. Every frame gets a model, runs one consistent version
 * (its outputs match that version's bias exactly), versions never go backwards, each version is
 * released exactly once and never while a frame uses it. The same with pipelines: each version's
 * bundle (a graph with an infer node) installed through the store, a ks_pipeline per version
 * held in the slot (test_live_pipeline). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>

#include "delivery_test_util.h"
#include "kestrel/delivery.h"
#include "kestrel/engine.h"
#include "kestrel/live.h"
#include "kestrel/bundle.h"
#include "kestrel/pipeline.h"

typedef struct engine {
    ks_model *model;
    ks_session *session;
    float bias;
    atomic_int in_use;
} engine;

static atomic_int g_released, g_released_in_use;

static engine *load_engine(ks_store *s, float bias) {
    char path[4096];
    if (ks_store_file_path(s, "face", "model.ksm", path, sizeof(path)) != KS_STATUS_OK) return NULL;
    engine *e = calloc(1, sizeof(*e));
    if (!e || ks_model_load_file(path, NULL, &e->model) ||
        ks_session_create(e->model, NULL, &e->session) || ks_session_reshape(e->session, NULL)) {
        fail_msg("load %s: %s", path, ks_last_error(NULL));
    }
    e->bias = bias;
    return e;
}

static void release_engine(void *user, void *object) {
    (void)user;
    engine *e = object;
    if (atomic_load(&e->in_use)) atomic_fetch_add(&g_released_in_use, 1);
    ks_session_destroy(e->session);
    ks_model_destroy(e->model);
    free(e);
    atomic_fetch_add(&g_released, 1);
}

typedef struct frames {
    ks_live *slot;
    atomic_int stop;
    atomic_int last_bias; /* the version of the latest frame */
    int count, missing, mixed, backwards;
} frames;

static void *frame_main(void *arg) {
    frames *f = arg;
    const float x[4] = {0.5f, -1.0f, 2.0f, -3.0f};
    int last = 0;
    while (!atomic_load(&f->stop)) {
        ks_live_ref ref;
        engine *e = ks_live_acquire(f->slot, &ref);
        if (!e) {
            f->missing++;
            continue;
        }
        atomic_store(&e->in_use, 1);
        ks_tensor in, out;
        ks_session_input(e->session, 0, &in);
        memcpy(in.data, x, sizeof(x));
        if (ks_session_run(e->session) || ks_session_output(e->session, 0, &out)) {
            f->mixed++;
        } else {
            const float *y = out.data;
            for (int i = 0; i < 4; i++) {
                float want = x[i] + e->bias > 0 ? x[i] + e->bias : 0;
                if (y[i] != want) f->mixed++;
            }
        }
        int b = (int)e->bias;
        if (b < last) f->backwards++;
        last = b;
        atomic_store(&e->in_use, 0);
        ks_live_release(f->slot, ref);
        atomic_store(&f->last_bias, b);
        f->count++;
    }
    return NULL;
}

static void test_live_swap(void **state) {
    (void)state;
    uint8_t pk[32], sk[64];
    dt_keypair(9, pk, sk);
    char root[4096];
    dt_fresh_dir("store_live", root, sizeof(root));
    ks_store *s = NULL;
    assert_int_equal(
        ks_store_open(root, &(ks_store_desc){.trusted_keys = pk, .num_trusted_keys = 1}, &s), 0);
    size_t n;
    uint8_t *p = dt_simple_package(sk, 1, 1, 1.0f, &n);
    assert_int_equal(ks_store_install_buffer(s, p, n, 0, NULL), 0);
    free(p);

    frames f = {0};
    assert_int_equal(ks_live_create(&(ks_live_desc){.release = release_engine}, &f.slot), 0);
    ks_live_ref none;
    assert_null(ks_live_acquire(f.slot, &none));
    ks_live_release(f.slot, none); /* nothing to release: a no-op */
    assert_int_equal(ks_live_publish(f.slot, load_engine(s, 1.0f)), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, frame_main, &f), 0);
    for (uint32_t v = 2; v <= 5; v++) {
        p = dt_simple_package(sk, v, v, (float)v, &n);
        assert_int_equal(ks_store_install_buffer(s, p, n, 0, NULL), 0);
        free(p);
        assert_int_equal(ks_live_publish(f.slot, load_engine(s, (float)v)), 0);
        assert_int_equal(ks_live_generation(f.slot), v);
        /* Let frames run on this version before the next one comes. */
        for (int spin = 0; spin < 20000 && atomic_load(&f.last_bias) != (int)v; spin++) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
        assert_int_equal(atomic_load(&f.last_bias), v);
    }
    atomic_store(&f.stop, 1);
    pthread_join(t, NULL);
    print_message("%d frames over 5 versions; %d released\n", f.count, atomic_load(&g_released));
    assert_int_equal(f.missing, 0);
    assert_int_equal(f.mixed, 0);
    assert_int_equal(f.backwards, 0);
    assert_true(f.count >= 5);
    assert_int_equal(atomic_load(&g_released), 4); /* 1..4; 5 is still current */
    assert_int_equal(atomic_load(&g_released_in_use), 0);
    ks_live_destroy(f.slot);
    assert_int_equal(atomic_load(&g_released), 5);
    ks_live_destroy(NULL);
    assert_int_equal(ks_live_publish(NULL, &f), KS_STATUS_INVALID_ARGUMENT);
    ks_store_destroy(s);
}

/* ---- pipelines ---------------------------------------------------------------------------- */

static const char k_graph[] =
    "{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"nodes\":[{\"type\":\"infer\",\"name\":\"m\","
    "\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"options\":{\"model\":\"model\"}}]}";

/* A bundle of k_graph and dt_model(bias), as a publisher makes it (free with free()). */
static uint8_t *make_bundle(float bias, size_t *size_out) {
    size_t mn = 0;
    uint8_t *model = dt_model(bias, &mn);
    ks_bundle_writer *w = NULL;
    void *data = NULL;
    assert_int_equal(ks_bundle_writer_create(NULL, &w), 0);
    assert_int_equal(ks_bundle_writer_add(w, "graph", KS_BUNDLE_GRAPH, k_graph, strlen(k_graph)),
                     0);
    assert_int_equal(ks_bundle_writer_add(w, "model", KS_BUNDLE_MODEL, model, mn), 0);
    assert_int_equal(ks_bundle_writer_finish(w, &data, size_out), 0);
    ks_bundle_writer_destroy(w);
    free(model);
    uint8_t *copy = malloc(*size_out);
    assert_non_null(copy);
    memcpy(copy, data, *size_out);
    ks_bundle_buffer_free(NULL, data);
    return copy;
}

/* One version: the bundle (mapped from the store's file) and the pipeline made from it. */
typedef struct live_pipeline {
    ks_bundle *bundle;
    ks_pipeline *pipeline;
    float bias;
    atomic_int in_use;
} live_pipeline;

static live_pipeline *load_pipeline(ks_store *s, float bias) {
    char path[4096];
    if (ks_store_file_path(s, "graph", "face.ksb", path, sizeof(path)) != KS_STATUS_OK) return NULL;
    live_pipeline *lp = calloc(1, sizeof(*lp));
    if (!lp || ks_bundle_open_file(path, NULL, &lp->bundle) ||
        ks_pipeline_create_bundle(lp->bundle, NULL, &lp->pipeline))
        fail_msg("pipeline from %s: %s", path, ks_last_error(NULL));
    lp->bias = bias;
    return lp;
}

static void release_pipeline(void *user, void *object) {
    (void)user;
    live_pipeline *lp = object;
    if (atomic_load(&lp->in_use)) atomic_fetch_add(&g_released_in_use, 1);
    ks_pipeline_destroy(lp->pipeline); /* before the bundle it was made from */
    ks_bundle_destroy(lp->bundle);
    free(lp);
    atomic_fetch_add(&g_released, 1);
}

static void *pipeline_frames(void *arg) {
    frames *f = arg;
    const float x[4] = {0.5f, -1.0f, 2.0f, -3.0f};
    ks_tensor_info info = {
        .name = "x", .dtype = KS_DTYPE_F32, .shape = {.rank = 2, .dims = {1, 4}}};
    int last = 0;
    int64_t ts = 0;
    while (!atomic_load(&f->stop)) {
        ks_live_ref ref;
        live_pipeline *lp = ks_live_acquire(f->slot, &ref);
        if (!lp) {
            f->missing++;
            continue;
        }
        atomic_store(&lp->in_use, 1);
        ks_packet *in = NULL, *out[1] = {NULL};
        if (ks_packet_create_tensor(ks_pipeline_packet_allocator(lp->pipeline), &info, x, &in) ||
            ks_pipeline_process(lp->pipeline, (const ks_packet *const[]){in}, ++ts, out) ||
            !out[0]) {
            f->mixed++;
        } else {
            const ks_tensor *t = ks_packet_tensor(out[0]);
            const float *y = t ? t->data : NULL;
            for (int i = 0; i < 4; i++) {
                float want = x[i] + lp->bias > 0 ? x[i] + lp->bias : 0;
                if (!y || y[i] != want) f->mixed++;
            }
        }
        /* The frame's packets go before its hold on the version. */
        ks_packet_release(in);
        ks_packet_release(out[0]);
        int b = (int)lp->bias;
        if (b < last) f->backwards++;
        last = b;
        atomic_store(&lp->in_use, 0);
        ks_live_release(f->slot, ref);
        atomic_store(&f->last_bias, b);
        f->count++;
    }
    return NULL;
}

static void test_live_pipeline(void **state) {
    (void)state;
    uint8_t pk[32], sk[64];
    dt_keypair(10, pk, sk);
    char root[4096];
    dt_fresh_dir("store_live_pipeline", root, sizeof(root));
    ks_store *s = NULL;
    assert_int_equal(
        ks_store_open(root, &(ks_store_desc){.trusted_keys = pk, .num_trusted_keys = 1}, &s), 0);
    atomic_store(&g_released, 0);
    atomic_store(&g_released_in_use, 0);
    frames f = {0};
    assert_int_equal(ks_live_create(&(ks_live_desc){.release = release_pipeline}, &f.slot), 0);
    pthread_t t;
    for (uint32_t v = 1; v <= 5; v++) {
        size_t bn = 0, n = 0;
        uint8_t *bundle = make_bundle((float)v, &bn);
        ks__pkg_src_file file = {"face.ksb", bundle, bn};
        uint8_t *p = dt_package(sk, "graph", v, 0, 0, v, 1, &file, &n);
        assert_int_equal(ks_store_install_buffer(s, p, n, 0, NULL), 0);
        free(p);
        free(bundle);
        assert_int_equal(ks_live_publish(f.slot, load_pipeline(s, (float)v)), 0);
        if (v == 1) assert_int_equal(pthread_create(&t, NULL, pipeline_frames, &f), 0);
        for (int spin = 0; spin < 20000 && atomic_load(&f.last_bias) != (int)v; spin++) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
        assert_int_equal(atomic_load(&f.last_bias), v);
    }
    atomic_store(&f.stop, 1);
    pthread_join(t, NULL);
    print_message("pipelines: %d frames over 5 versions; %d released\n", f.count,
                  atomic_load(&g_released));
    assert_int_equal(f.missing, 0);
    assert_int_equal(f.mixed, 0);
    assert_int_equal(f.backwards, 0);
    assert_int_equal(atomic_load(&g_released), 4);
    assert_int_equal(atomic_load(&g_released_in_use), 0);
    ks_live_destroy(f.slot);
    assert_int_equal(atomic_load(&g_released), 5);
    ks_store_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_live_swap),
                                       cmocka_unit_test(test_live_pipeline)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
