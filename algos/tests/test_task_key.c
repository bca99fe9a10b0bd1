/* Encrypted models through the task APIs (ks_task_options.key / key_provider): the real face
 * detector and face landmarker models, encrypted here with the engine's ks-protect code, give
 * the same results as the plain ones; a missing key, a wrong key and a refusing key provider are
 * refused with their own status and a message; the task's copy of the key is wiped before it is
 * freed (seen through a counting allocator that scans every block the task frees). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "format/ksm_crypt.h"
#include "image_io.h"
#include "kestrel/bundle.h"
#include "kestrel/face.h"

#define ASTRONAUT KS_SOURCE_DIR "/models/images/skimage_astronaut.png"
#define DETECTOR_BUNDLE "face_detector_short.ksb"
#define LANDMARKER_BUNDLE "face_landmarker.ksb"

static const char *g_dir; /* bundles: this build's, else the Release build's */
static ks_image_buf g_astro;
static uint8_t g_key[KS_TASK_KEY_BYTES], g_bad_key[KS_TASK_KEY_BYTES];
static char g_enc_ksm[64], g_enc_ksb[64];
static int g_num_bundle_models; /* model entries of the landmarker bundle, all encrypted */
static char g_first_model[KS_BUNDLE_NAME_BYTES]; /* the first one's entry name */

/* ---- an allocator that checks what the task frees ---- */

typedef struct scan_stats {
    int key_left_in_freed; /* freed blocks that still held the key */
    int wiped_key_blocks;  /* freed key-sized blocks that were all zero */
} scan_stats;

static scan_stats g_scan;

#define HEADER_BYTES 64

static void *scan_alloc(void *user, size_t size, size_t alignment) {
    (void)user;
    if (alignment > HEADER_BYTES) return NULL;
    void *p = NULL;
    if (posix_memalign(&p, HEADER_BYTES, HEADER_BYTES + (size ? size : 1))) return NULL;
    memcpy(p, &size, sizeof(size));
    return (uint8_t *)p + HEADER_BYTES;
}

static int contains_key(const uint8_t *d, size_t n) {
    for (size_t i = 0; i + sizeof(g_key) <= n; i++)
        if (d[i] == g_key[0] && memcmp(d + i, g_key, sizeof(g_key)) == 0) return 1;
    return 0;
}

static void scan_free(void *user, void *ptr) {
    (void)user;
    if (!ptr) return;
    uint8_t *base = (uint8_t *)ptr - HEADER_BYTES;
    size_t size;
    memcpy(&size, base, sizeof(size));
    const uint8_t *d = ptr;
    if (contains_key(d, size)) g_scan.key_left_in_freed++;
    if (size == KS_TASK_KEY_BYTES) {
        size_t i = 0;
        while (i < size && d[i] == 0)
            i++;
        if (i == size) g_scan.wiped_key_blocks++;
    }
    free(base);
}

static const ks_allocator g_scan_alloc = {scan_alloc, scan_free, NULL};

/* ---- fixtures ---- */

static int write_temp(char path[64], const void *data, size_t size) {
    snprintf(path, 64, "/tmp/ks_test_task_key_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    int ok = write(fd, data, size) == (ssize_t)size;
    close(fd);
    return ok ? 0 : -1;
}

static uint8_t *encrypt(const uint8_t *plain, size_t n, size_t *out_n) {
    uint8_t *enc = NULL;
    char err[256];
    if (ks__ksme_encrypt(plain, n, g_key, sizeof(g_key), 0, NULL, &enc, out_n, err, sizeof(err))) {
        fprintf(stderr, "encrypt: %s\n", err);
        return NULL;
    }
    return enc;
}

/* g_enc_ksm: the detector bundle's model, encrypted; g_enc_ksb: the landmarker bundle with
 * both of its models encrypted. */
static int make_encrypted_files(void) {
    char path[512];
    ks_bundle *b = NULL;
    snprintf(path, sizeof(path), "%s/%s", g_dir, DETECTOR_BUNDLE);
    if (ks_bundle_open_file(path, NULL, &b)) return -1;
    int rc = -1;
    for (uint32_t i = 0; i < ks_bundle_num_entries(b); i++) {
        ks_bundle_entry e;
        if (ks_bundle_get_entry(b, i, &e) || e.kind != KS_BUNDLE_MODEL) continue;
        size_t n = 0;
        uint8_t *enc = encrypt(e.data, e.size_bytes, &n);
        rc = enc ? write_temp(g_enc_ksm, enc, n) : -1;
        ks__free(NULL, enc);
        break;
    }
    ks_bundle_destroy(b);
    if (rc) return rc;

    snprintf(path, sizeof(path), "%s/%s", g_dir, LANDMARKER_BUNDLE);
    if (ks_bundle_open_file(path, NULL, &b)) return -1;
    ks_bundle_writer *w = NULL;
    int num_models = 0;
    rc = ks_bundle_writer_create(NULL, &w) ? -1 : 0;
    for (uint32_t i = 0; !rc && i < ks_bundle_num_entries(b); i++) {
        ks_bundle_entry e;
        if (ks_bundle_get_entry(b, i, &e)) rc = -1;
        if (rc) break;
        if (e.kind == KS_BUNDLE_MODEL) {
            if (!num_models) snprintf(g_first_model, sizeof(g_first_model), "%s", e.name);
            size_t n = 0;
            uint8_t *enc = encrypt(e.data, e.size_bytes, &n);
            rc = enc && !ks_bundle_writer_add(w, e.name, e.kind, enc, n) ? 0 : -1;
            ks__free(NULL, enc);
            num_models++;
        } else {
            rc = ks_bundle_writer_add(w, e.name, e.kind, e.data, e.size_bytes) ? -1 : 0;
        }
    }
    void *image = NULL;
    size_t image_n = 0;
    g_num_bundle_models = num_models;
    if (!rc && num_models >= 2 && !ks_bundle_writer_finish(w, &image, &image_n))
        rc = write_temp(g_enc_ksb, image, image_n);
    else
        rc = -1;
    ks_bundle_buffer_free(NULL, image);
    ks_bundle_writer_destroy(w);
    ks_bundle_destroy(b);
    return rc;
}

static int setup(void **state) {
    (void)state;
    char err[256];
    for (size_t i = 0; i < sizeof(g_key); i++) {
        g_key[i] = (uint8_t)(0xA5 ^ (i * 37));
        g_bad_key[i] = g_key[i];
    }
    g_bad_key[7] ^= 1;
    if (ks_image_load(ASTRONAUT, 0, &g_astro, err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    if (ks_set_models_dir(g_dir) || make_encrypted_files()) return -1;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    ks_image_buf_free(&g_astro);
    unlink(g_enc_ksm);
    unlink(g_enc_ksb);
    return 0;
}

static ks_faces *detect(const ks_task_options *task) {
    ks_face_detector *det = NULL;
    ks_faces *faces = NULL;
    ks_status st = ks_face_detector_create(&(ks_face_detector_desc){.task = *task}, &det);
    if (st) fprintf(stderr, "%s\n", ks_last_error(NULL));
    assert_int_equal(st, KS_STATUS_OK);
    assert_int_equal(ks_face_detect(det, &g_astro.image, 0, &faces), KS_STATUS_OK);
    ks_face_detector_destroy(det);
    return faces;
}

static ks_face_meshes *landmarks(const ks_task_options *task) {
    ks_face_landmarker *fl = NULL;
    ks_face_meshes *m = NULL;
    ks_status st = ks_face_landmarker_create(&(ks_face_landmarker_desc){.task = *task}, &fl);
    if (st) fprintf(stderr, "%s\n", ks_last_error(NULL));
    assert_int_equal(st, KS_STATUS_OK);
    assert_int_equal(ks_face_landmarker_detect(fl, &g_astro.image, 0, &m), KS_STATUS_OK);
    ks_face_landmarker_destroy(fl);
    return m;
}

/* The encrypted detector model (model_path, key in the options) finds the same faces, bit for
 * bit, as the default bundle; the task's key copy is wiped before it is freed. */
static void test_detector_encrypted_ksm(void **state) {
    (void)state;
    ks_faces *ref = detect(&(ks_task_options){0});
    memset(&g_scan, 0, sizeof(g_scan));
    ks_faces *enc = detect(&(ks_task_options){.model_path = g_enc_ksm,
                                              .key = g_key,
                                              .key_bytes = sizeof(g_key),
                                              .allocator = &g_scan_alloc});
    assert_true(ref->count >= 1);
    assert_int_equal(enc->count, ref->count);
    assert_memory_equal(enc->items, ref->items, ref->count * sizeof(ks_face));
    assert_int_equal(g_scan.key_left_in_freed, 0);
    assert_true(g_scan.wiped_key_blocks >= 1);
    ks_faces_release(enc);
    ks_faces_release(ref);
}

typedef struct provider_log {
    int calls;
    char names[4][64];
    ks_status answer;
} provider_log;

static ks_status provide(void *user, const char *name, uint8_t *key_out, size_t key_cap,
                         size_t *key_bytes_out) {
    provider_log *log = user;
    if (log->calls < 4) snprintf(log->names[log->calls], sizeof(log->names[0]), "%s", name);
    log->calls++;
    if (log->answer) return log->answer;
    if (key_cap < sizeof(g_key)) return KS_STATUS_INVALID_ARGUMENT;
    memcpy(key_out, g_key, sizeof(g_key));
    *key_bytes_out = sizeof(g_key);
    return KS_STATUS_OK;
}

/* A bundle whose models (both face detectors and the landmark model) are encrypted, opened
 * through a key provider asked once per model by entry name: the same 468 landmarks as the plain
 * bundle, bit for bit. */
static void test_landmarker_encrypted_bundle(void **state) {
    (void)state;
    ks_face_meshes *ref = landmarks(&(ks_task_options){0});
    provider_log log = {0};
    memset(&g_scan, 0, sizeof(g_scan));
    ks_face_meshes *enc = landmarks(&(ks_task_options){.model_path = g_enc_ksb,
                                                       .key_provider = provide,
                                                       .key_user = &log,
                                                       .allocator = &g_scan_alloc});
    assert_int_equal(log.calls, g_num_bundle_models);
    assert_string_equal(log.names[0], g_first_model);
    assert_string_not_equal(log.names[0], log.names[1]);
    assert_int_equal(g_scan.key_left_in_freed, 0);
    /* one zeroed copy per model (other zeroed blocks of that size may add to the count) */
    assert_true(g_scan.wiped_key_blocks >= g_num_bundle_models);
    assert_int_equal(ref->count, 1);
    assert_int_equal(enc->count, ref->count);
    assert_int_equal(enc->items[0].num_landmarks, ref->items[0].num_landmarks);
    assert_memory_equal(enc->items[0].landmarks, ref->items[0].landmarks,
                        ref->items[0].num_landmarks * sizeof(ks_point3f));
    assert_memory_equal(enc->items[0].pose_matrix, ref->items[0].pose_matrix,
                        sizeof(ref->items[0].pose_matrix));
    ks_face_meshes_release(enc);
    ks_face_meshes_release(ref);
}

/* No key: INVALID_ARGUMENT naming the model and the option; wrong key: TAMPERED; a key of the
 * wrong size or a provider that says no: its status and a message. Nothing is created. */
static void test_refusals(void **state) {
    (void)state;
    ks_face_detector *det = NULL;
    ks_face_landmarker *fl = NULL;
    assert_int_equal(
        ks_face_detector_create(&(ks_face_detector_desc){.task = {.model_path = g_enc_ksm}}, &det),
        KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "needs its key"));
    assert_non_null(strstr(ks_last_error(NULL), g_enc_ksm));
    assert_int_equal(ks_face_landmarker_create(
                         &(ks_face_landmarker_desc){.task = {.model_path = g_enc_ksb}}, &fl),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "needs its key"));

    assert_int_equal(
        ks_face_detector_create(&(ks_face_detector_desc){.task = {.model_path = g_enc_ksm,
                                                                  .key = g_bad_key,
                                                                  .key_bytes = sizeof(g_bad_key)}},
                                &det),
        KS_STATUS_TAMPERED);
    assert_non_null(strstr(ks_last_error(NULL), "key does not open it"));
    assert_int_equal(ks_face_landmarker_create(
                         &(ks_face_landmarker_desc){.task = {.model_path = g_enc_ksb,
                                                             .key = g_bad_key,
                                                             .key_bytes = sizeof(g_bad_key)}},
                         &fl),
                     KS_STATUS_TAMPERED);
    assert_non_null(strstr(ks_last_error(NULL), "key does not open it"));

    assert_int_equal(ks_face_detector_create(
                         &(ks_face_detector_desc){
                             .task = {.model_path = g_enc_ksm, .key = g_key, .key_bytes = 16}},
                         &det),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "16 bytes"));

    provider_log log = {.answer = KS_STATUS_IO_ERROR};
    assert_int_equal(
        ks_face_landmarker_create(
            &(ks_face_landmarker_desc){
                .task = {.model_path = g_enc_ksb, .key_provider = provide, .key_user = &log}},
            &fl),
        KS_STATUS_IO_ERROR);
    assert_int_equal(log.calls, 1);
    assert_non_null(strstr(ks_last_error(NULL), "key provider refused"));
    assert_null(det);
    assert_null(fl);
}

/* Out of memory in the new steps (the key copy, the decrypted model's buffer): OUT_OF_MEMORY,
 * nothing created, nothing leaked (the sanitizer build checks leaks). */
static size_t g_fail_size_min, g_fail_size_max;

static void *failing_alloc(void *user, size_t size, size_t alignment) {
    if (size >= g_fail_size_min && size <= g_fail_size_max) return NULL;
    return scan_alloc(user, size, alignment);
}

static void test_out_of_memory(void **state) {
    (void)state;
    const ks_allocator failing = {failing_alloc, scan_free, NULL};
    const size_t ranges[2][2] = {{KS_TASK_KEY_BYTES, KS_TASK_KEY_BYTES},
                                 {(size_t)100 << 10, SIZE_MAX}};
    for (int i = 0; i < 2; i++) {
        g_fail_size_min = ranges[i][0];
        g_fail_size_max = ranges[i][1];
        ks_face_detector *det = NULL;
        ks_status st =
            ks_face_detector_create(&(ks_face_detector_desc){.task = {.model_path = g_enc_ksm,
                                                                      .key = g_key,
                                                                      .key_bytes = sizeof(g_key),
                                                                      .allocator = &failing}},
                                    &det);
        assert_int_equal(st, KS_STATUS_OUT_OF_MEMORY);
        assert_null(det);
        assert_non_null(strstr(ks_last_error(NULL), "out of memory"));
    }
}

/* A key for a plain model is ignored: plain bundles and models keep working with a key set. */
static void test_key_with_plain_model(void **state) {
    (void)state;
    ks_faces *ref = detect(&(ks_task_options){0});
    ks_faces *with_key = detect(&(ks_task_options){.key = g_key, .key_bytes = sizeof(g_key)});
    assert_int_equal(with_key->count, ref->count);
    assert_memory_equal(with_key->items, ref->items, ref->count * sizeof(ks_face));
    ks_faces_release(with_key);
    ks_faces_release(ref);
}

int main(void) {
    static const char *dirs[] = {KS_BUNDLES_DIR, KS_SOURCE_DIR "/build/release/bundles"};
    char probe[512];
    for (size_t i = 0; i < 2 && !g_dir; i++) {
        snprintf(probe, sizeof(probe), "%s/%s", dirs[i], LANDMARKER_BUNDLE);
        if (access(probe, R_OK) == 0) g_dir = dirs[i];
    }
    if (!g_dir || !ks__ksme_available()) {
        printf("[  SKIPPED ] test_task_key: %s\n",
               g_dir ? "built without libsodium (no model encryption)"
                     : "no face bundles (build the ks_bundles target)");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detector_encrypted_ksm),
        cmocka_unit_test(test_landmarker_encrypted_bundle),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_key_with_plain_model),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
