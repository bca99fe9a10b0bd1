/* Delivery: the package format and every refusal, the store (install, query, downgrade, replay,
 * key rotation, rollback, tampering on disk), the self-test with an in-memory and a real model,
 * the task-level self-test with a plain and an encrypted bundle, and the cost of verifying and
 * installing a ~3 MB bundle. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>
#include <stdatomic.h>

#include <cmocka.h>

#include "delivery_test_util.h"
#include "format/ksm_crypt.h"
#include "kestrel/delivery.h"
#include "kestrel/engine.h"
#if KS_HAVE_IMAGE_IO
#include "image_io.h"
#include "kestrel/bundle.h"
#include "kestrel/face.h"
#endif

static uint8_t pk1[32], sk1[64], pk2[32], sk2[64];

static int setup(void **state) {
    (void)state;
    dt_keypair(1, pk1, sk1);
    dt_keypair(2, pk2, sk2);
    return 0;
}

/* Offset of the manifest's file table entry `index` (its u16 name length). */
static size_t file_entry(const uint8_t *d, uint32_t index) {
    size_t off = 32;
    off += 1 + d[off]; /* id */
    off += 24;         /* versions, runtime, issued */
    off += 1 + d[off]; /* encryption key name */
    off += 4;          /* file count */
    for (uint32_t i = 0; i < index; i++)
        off += 2 + (d[off] | d[off + 1] << 8) + 40;
    return off;
}

static ks_delivery_error verify_why(const uint8_t *d, size_t n, const uint8_t *keys, uint32_t nk,
                                    ks_status *st_out) {
    ks_delivery_error why = KS_DELIVERY_OK;
    ks_package_info info;
    *st_out = ks_package_verify(d, n, keys, nk, &info, &why);
    return why;
}

static void test_roundtrip(void **state) {
    (void)state;
    size_t n = 0;
    uint8_t *d = dt_simple_package(sk1, 1, 100, 1.0f, &n);
    assert_non_null(d);
    ks_package_info info;
    ks_delivery_error why = KS_DELIVERY_ERROR_COUNT;
    assert_int_equal(ks_package_verify(d, n, pk1, 1, &info, &why), KS_STATUS_OK);
    assert_int_equal(why, KS_DELIVERY_OK);
    assert_string_equal(info.id, "face");
    assert_int_equal(info.version_major, 1);
    assert_int_equal(info.issued, 100);
    assert_int_equal(info.min_runtime, KS_VERSION_HEX);
    assert_int_equal(info.num_files, 2);
    uint8_t kid[8];
    ks__key_id(pk1, kid);
    assert_memory_equal(info.key_id, kid, 8);
    char name[64];
    assert_int_equal(ks_package_file_name(d, n, 1, name, sizeof(name)), KS_STATUS_OK);
    assert_string_equal(name, "notes/readme.txt");
    assert_int_equal(ks_package_file_name(d, n, 2, name, sizeof(name)), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_package_file_name(d, n, 1, name, 4), KS_STATUS_LIMIT_EXCEEDED);
    ks_package_info pi;
    assert_int_equal(ks_package_inspect(d, n, &pi), KS_STATUS_OK);
    assert_memory_equal(pi.digest, info.digest, 32);
    /* Key rotation: the second trusted key verifies too. */
    uint8_t keys[64];
    memcpy(keys, pk2, 32);
    memcpy(keys + 32, pk1, 32);
    assert_int_equal(ks_package_verify(d, n, keys, 2, &info, &why), KS_STATUS_OK);
    free(d);
}

static void test_refusals(void **state) {
    (void)state;
    size_t n = 0;
    uint8_t *good = dt_simple_package(sk1, 1, 100, 1.0f, &n);
    assert_non_null(good);
    uint8_t *d = malloc(n + 1);
    ks_status st;

    /* Bad signature: one bit of the manifest (the version). */
    memcpy(d, good, n);
    d[32 + 1 + 4] ^= 1;
    assert_int_equal(verify_why(d, n, pk1, 1, &st), KS_DELIVERY_BAD_SIGNATURE);
    assert_int_equal(st, KS_STATUS_TAMPERED);
    assert_non_null(strstr(ks_last_error(NULL), "bad signature"));
    /* ...or of the signature itself. */
    memcpy(d, good, n);
    d[file_entry(d, 2)] ^= 0x80; /* first signature byte follows the manifest */
    assert_int_equal(verify_why(d, n, pk1, 1, &st), KS_DELIVERY_BAD_SIGNATURE);

    /* Unknown key. */
    assert_int_equal(verify_why(good, n, pk2, 1, &st), KS_DELIVERY_UNKNOWN_KEY);
    assert_int_equal(st, KS_STATUS_TAMPERED);
    assert_non_null(strstr(ks_last_error(NULL), "not among the 1 trusted"));

    /* Wrong hash: one payload byte. */
    memcpy(d, good, n);
    d[n - 3] ^= 0x20;
    assert_int_equal(verify_why(d, n, pk1, 1, &st), KS_DELIVERY_HASH_MISMATCH);
    assert_int_equal(st, KS_STATUS_CHECKSUM_MISMATCH);
    assert_non_null(strstr(ks_last_error(NULL), "notes/readme.txt"));

    /* Every truncation, and a trailing byte. */
    for (size_t k = 0; k < n; k++) {
        ks_delivery_error why = verify_why(good, k, pk1, 1, &st);
        assert_int_not_equal(st, KS_STATUS_OK);
        assert_int_equal(why, KS_DELIVERY_MALFORMED);
    }
    memcpy(d, good, n);
    d[n] = 0;
    assert_int_equal(verify_why(d, n + 1, pk1, 1, &st), KS_DELIVERY_MALFORMED);
    assert_non_null(strstr(ks_last_error(NULL), "trailing"));

    /* A signed manifest that lies about a size, then about the payload. */
    memcpy(d, good, n);
    size_t e0 = file_entry(d, 0);
    size_t size_at = e0 + 2 + (d[e0] | d[e0 + 1] << 8);
    d[size_at] += 1;
    assert_int_equal(ks__pkg_resign(d, n, sk1), KS_STATUS_OK);
    assert_int_equal(verify_why(d, n, pk1, 1, &st), KS_DELIVERY_SIZE_MISMATCH);
    assert_int_equal(st, KS_STATUS_INVALID_MODEL);
    memcpy(d, good, n);
    d[16] += 1; /* payload_bytes */
    assert_int_equal(ks__pkg_resign(d, n, sk1), KS_STATUS_OK);
    assert_int_equal(verify_why(d, n, pk1, 1, &st), KS_DELIVERY_SIZE_MISMATCH);

    /* Paths that escape or collide: "notes/readme.txt" (16 bytes) rewritten in place. */
    static const char *const bad_paths[] = {"../../../etc/pwd",  "/abs/readme.txt1",
                                            "notes//readme.tx",  "notes/.hidden.tx",
                                            "notes\\readme.txt", "MODEL.KSM/a.txt1"};
    for (size_t i = 0; i < sizeof(bad_paths) / sizeof(bad_paths[0]); i++) {
        memcpy(d, good, n);
        size_t e1 = file_entry(d, 1);
        assert_int_equal(d[e1], 16);
        memcpy(d + e1 + 2, bad_paths[i], 16);
        assert_int_equal(ks__pkg_resign(d, n, sk1), KS_STATUS_OK);
        ks_delivery_error why = verify_why(d, n, pk1, 1, &st);
        if (why != KS_DELIVERY_UNSAFE_PATH)
            fail_msg("path '%s': %s (%s)", bad_paths[i], ks_delivery_error_string(why),
                     ks_last_error(NULL));
        assert_int_equal(st, KS_STATUS_INVALID_MODEL);
    }

    /* Two names equal but for case (one file on iOS and macOS). */
    {
        static const uint8_t one[1] = {1};
        ks__pkg_src_file f[2] = {{"Model.ksm", one, 1}, {"model.KSM", one, 1}};
        size_t cn = 0;
        uint8_t *c = dt_package(sk1, "face", 1, 0, 0, 1, 2, f, &cn);
        assert_non_null(c);
        assert_int_equal(verify_why(c, cn, pk1, 1, &st), KS_DELIVERY_UNSAFE_PATH);
        assert_non_null(strstr(ks_last_error(NULL), "collide"));
        free(c);
    }

    /* Limits in the header. */
    memcpy(d, good, n);
    d[12] = 0, d[13] = 0, d[14] = 2, d[15] = 0; /* manifest 128 KiB */
    assert_int_equal(verify_why(d, n, pk1, 1, &st), KS_DELIVERY_TOO_LARGE);
    assert_int_equal(st, KS_STATUS_LIMIT_EXCEEDED);
    memcpy(d, good, n);
    d[0] = 'X';
    assert_int_equal(verify_why(d, n, pk1, 1, &st), KS_DELIVERY_MALFORMED);
    assert_non_null(strstr(ks_last_error(NULL), "not a Kestrel package"));

    free(d);
    free(good);
}

static void test_runtime_too_old(void **state) {
    (void)state;
    size_t mn = 0, n = 0;
    uint8_t *m = dt_model(0, &mn);
    ks__pkg_src_file f = {"model.ksm", m, mn};
    ks__pkg_spec spec = {.id = "face",
                         .version = {2, 0, 0},
                         .min_runtime = KS_VERSION_HEX + 1,
                         .issued = 1,
                         .files = &f,
                         .num_files = 1};
    uint8_t *d = NULL;
    char err[256];
    assert_int_equal(ks__pkg_write(&spec, sk1, &d, &n, err, sizeof(err)), KS_STATUS_OK);
    ks_status st;
    assert_int_equal(verify_why(d, n, pk1, 1, &st), KS_DELIVERY_RUNTIME_TOO_OLD);
    assert_int_equal(st, KS_STATUS_VERSION_MISMATCH);
    char want[96];
    snprintf(want, sizeof(want), "needs Kestrel %u.%u.%u or newer; this is Kestrel %s",
             KS_VERSION_MAJOR, KS_VERSION_MINOR, KS_VERSION_PATCH + 1, KS_VERSION_STRING);
    assert_non_null(strstr(ks_last_error(NULL), want));
    free(d);
    free(m);
}

typedef struct events {
    int installed, rolled_back;
    char last[512];
} events;
static void on_event(void *user, ks_store_event ev, const ks_package_info *info, const char *msg) {
    events *e = user;
    (void)info;
    if (ev == KS_STORE_EVENT_INSTALLED)
        e->installed++;
    else
        e->rolled_back++;
    snprintf(e->last, sizeof(e->last), "%s", msg);
}

static uint32_t current_major(ks_store *s, int previous) {
    ks_package_info info;
    if (ks_store_current(s, "face", previous, &info) != KS_STATUS_OK) return 0;
    return info.version_major;
}

/* The installed file reads back with the bytes of the package (and is the model that runs). */
static void expect_model_bias(ks_store *s, float bias) {
    char path[4096];
    assert_int_equal(ks_store_file_path(s, "face", "model.ksm", path, sizeof(path)), KS_STATUS_OK);
    size_t n = 0, want_n = 0;
    uint8_t *got = dt_read(path, &n), *want = dt_model(bias, &want_n);
    assert_non_null(got);
    assert_int_equal(n, want_n);
    assert_memory_equal(got, want, n);
    free(got);
    free(want);
}

static void test_store(void **state) {
    (void)state;
    char root[4096];
    dt_fresh_dir("store_basic", root, sizeof(root));
    uint8_t keys[64];
    memcpy(keys, pk1, 32);
    memcpy(keys + 32, pk2, 32);
    events ev = {0};
    ks_store *s = NULL;
    ks_store_desc desc = {
        .trusted_keys = keys, .num_trusted_keys = 2, .on_event = on_event, .user = &ev};
    assert_int_equal(ks_store_open(root, &desc, &s), KS_STATUS_OK);
    ks_store *again = NULL;
    assert_int_equal(ks_store_open(root, &desc, &again), KS_STATUS_INVALID_STATE);
    assert_null(again);

    ks_package_info info;
    assert_int_equal(ks_store_current(s, "face", 0, &info), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_store_last_refusal(s), KS_DELIVERY_NOT_INSTALLED);
    assert_int_equal(ks_store_current(s, "../etc", 0, &info), KS_STATUS_INVALID_ARGUMENT);

    size_t n1, n2, n1b, n1old;
    uint8_t *v1 = dt_simple_package(sk1, 1, 100, 1.0f, &n1);
    uint8_t *v2 = dt_simple_package(sk2, 2, 200, 2.0f, &n2); /* signed by the rotated key */
    uint8_t *v1_resigned = dt_simple_package(sk1, 1, 300, 1.0f, &n1b);
    uint8_t *v1_old = dt_simple_package(sk1, 1, 50, 1.0f, &n1old);
    assert_int_equal(ks_store_install_buffer(s, v1, n1, 0, &info), KS_STATUS_OK);
    assert_int_equal(info.version_major, 1);
    assert_int_equal(ev.installed, 1);
    assert_int_equal(current_major(s, 0), 1);
    expect_model_bias(s, 1.0f);
    /* The same package again: nothing to do. */
    assert_int_equal(ks_store_install_buffer(s, v1, n1, 0, NULL), KS_STATUS_OK);
    assert_int_equal(ev.installed, 1);

    assert_int_equal(ks_store_install_buffer(s, v2, n2, 0, NULL), KS_STATUS_OK);
    assert_int_equal(current_major(s, 0), 2);
    assert_int_equal(current_major(s, 1), 1);
    expect_model_bias(s, 2.0f);
    char path[4096];
    assert_int_equal(ks_store_file_path(s, "face", "notes/readme.txt", path, sizeof(path)), 0);
    assert_int_equal(ks_store_file_path(s, "face", "nope.txt", path, sizeof(path)),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_store_file_path(s, "face", "model.ksm", path, 8), KS_STATUS_LIMIT_EXCEEDED);

    /* Downgrade: refused, then allowed by the flag with a freshly signed package; a replay of an
     * old signature never. */
    assert_int_equal(ks_store_install_buffer(s, v1_resigned, n1b, 0, NULL),
                     KS_STATUS_INVALID_STATE);
    assert_int_equal(ks_store_last_refusal(s), KS_DELIVERY_DOWNGRADE);
    assert_non_null(strstr(ks_last_error(s), "version 1.0.0 is older than the installed 2.0.0"));
    assert_int_equal(current_major(s, 0), 2);
    assert_int_equal(ks_store_install_buffer(s, v1_old, n1old, KS_STORE_ALLOW_DOWNGRADE, NULL),
                     KS_STATUS_INVALID_STATE);
    assert_int_equal(ks_store_last_refusal(s), KS_DELIVERY_REPLAY);
    assert_int_equal(current_major(s, 0), 2);
    assert_int_equal(ks_store_install_buffer(s, v1_resigned, n1b, KS_STORE_ALLOW_DOWNGRADE, NULL),
                     KS_STATUS_OK);
    assert_int_equal(current_major(s, 0), 1);
    assert_int_equal(current_major(s, 1), 2);
    /* ...and the original v1 (issued 100 < 300) is now a replay even as an upgrade path. */
    assert_int_equal(ks_store_install_buffer(s, v1, n1, KS_STORE_ALLOW_DOWNGRADE, NULL),
                     KS_STATUS_INVALID_STATE);
    assert_int_equal(ks_store_last_refusal(s), KS_DELIVERY_REPLAY);

    /* Rollback to 2, then nothing left to roll back to. */
    assert_int_equal(ks_store_rollback(s, "face"), KS_STATUS_OK);
    assert_int_equal(current_major(s, 0), 2);
    assert_int_equal(ks_store_rollback(s, "face"), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_store_last_refusal(s), KS_DELIVERY_NO_PREVIOUS);
    assert_int_equal(current_major(s, 0), 2);
    assert_int_equal(ks_store_check(s, "face"), KS_STATUS_OK);

    /* Every hostile package through the store: refused, version 2 untouched. */
    uint8_t *d = malloc(n2);
    for (int k = 0; k < 3; k++) {
        memcpy(d, v2, n2);
        d[k == 0 ? 40 : k == 1 ? n2 - 1 : 20] ^= 4; /* manifest, payload, header */
        size_t len = k == 2 ? n2 - 1 : n2;
        assert_int_not_equal(ks_store_install_buffer(s, d, len, KS_STORE_ALLOW_DOWNGRADE, NULL),
                             KS_STATUS_OK);
        assert_int_not_equal(ks_store_last_refusal(s), KS_DELIVERY_OK);
        assert_int_equal(current_major(s, 0), 2);
        assert_int_equal(ks_store_check(s, "face"), KS_STATUS_OK);
    }
    free(d);
    /* A key that was rotated out: a store that trusts only key 2 refuses key 1's packages. */
    ks_store_destroy(s);
    desc.trusted_keys = pk2;
    desc.num_trusted_keys = 1;
    assert_int_equal(ks_store_open(root, &desc, &s), KS_STATUS_OK);
    size_t n3;
    uint8_t *v3 = dt_simple_package(sk1, 3, 400, 3.0f, &n3);
    assert_int_equal(ks_store_install_buffer(s, v3, n3, 0, NULL), KS_STATUS_TAMPERED);
    assert_int_equal(ks_store_last_refusal(s), KS_DELIVERY_UNKNOWN_KEY);
    assert_int_equal(current_major(s, 0), 2);

    /* Install from a file, and a missing file. */
    char file[4200];
    snprintf(file, sizeof(file), "%s/../store_basic_v3.kspkg", root);
    free(v3);
    v3 = dt_simple_package(sk2, 3, 400, 3.0f, &n3);
    FILE *f = fopen(file, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(v3, 1, n3, f), n3);
    fclose(f);
    assert_int_equal(ks_store_install_file(s, file, 0, NULL), KS_STATUS_OK);
    assert_int_equal(current_major(s, 0), 3);
    assert_int_equal(ks_store_install_file(s, "/nonexistent/x.kspkg", 0, NULL), KS_STATUS_IO_ERROR);
    assert_int_equal(ks_store_last_refusal(s), KS_DELIVERY_IO);

    /* Tampering on disk after the install is found by ks_store_check. */
    assert_int_equal(ks_store_file_path(s, "face", "notes/readme.txt", path, sizeof(path)), 0);
    f = fopen(path, "r+b");
    assert_non_null(f);
    fputc('F', f);
    fclose(f);
    assert_int_equal(ks_store_check(s, "face"), KS_STATUS_CHECKSUM_MISMATCH);
    assert_int_equal(ks_store_last_refusal(s), KS_DELIVERY_STORE_CORRUPT);

    /* mark_bad: back to 2, and 3 can never come back. */
    ev.rolled_back = 0;
    assert_int_equal(ks_store_mark_bad(s, "face", "faces found 0 of 3 in the app's check"), 0);
    assert_int_equal(ev.rolled_back, 1);
    assert_non_null(strstr(ev.last, "face 3.0.0: faces found 0 of 3"));
    assert_int_equal(current_major(s, 0), 2);
    char reason[256];
    assert_int_equal(ks_store_last_rollback(s, "face", reason, sizeof(reason)), KS_STATUS_OK);
    assert_non_null(strstr(reason, "faces found 0 of 3"));
    assert_int_equal(ks_store_install_buffer(s, v3, n3, 0, NULL), KS_STATUS_INVALID_STATE);
    assert_int_equal(ks_store_last_refusal(s), KS_DELIVERY_KNOWN_BAD);
    ks_store_destroy(s);
    ks_store_destroy(NULL);
    free(v1);
    free(v2);
    free(v3);
    free(v1_resigned);
    free(v1_old);
}

/* The store from several threads: two readers query while the main thread installs. Every read
 * succeeds and never sees the version go backwards. */
typedef struct reader {
    ks_store *store;
    atomic_int *stop;
    int reads, failures, backwards;
} reader;
static void *reader_main(void *arg) {
    reader *r = arg;
    uint32_t last = 0;
    while (!atomic_load(r->stop)) {
        ks_package_info info;
        char path[4096];
        if (ks_store_current(r->store, "face", 0, &info) != KS_STATUS_OK ||
            ks_store_file_path(r->store, "face", "model.ksm", path, sizeof(path)) != KS_STATUS_OK)
            r->failures++;
        else if (info.version_major < last)
            r->backwards++;
        else
            last = info.version_major;
        r->reads++;
    }
    return NULL;
}
static void test_threads(void **state) {
    (void)state;
    char root[4096];
    dt_fresh_dir("store_threads", root, sizeof(root));
    ks_store *s = NULL;
    assert_int_equal(
        ks_store_open(root, &(ks_store_desc){.trusted_keys = pk1, .num_trusted_keys = 1}, &s), 0);
    size_t n;
    uint8_t *p = dt_simple_package(sk1, 1, 1, 1.0f, &n);
    assert_int_equal(ks_store_install_buffer(s, p, n, 0, NULL), 0);
    free(p);
    atomic_int stop = 0;
    reader r[2] = {{s, &stop, 0, 0, 0}, {s, &stop, 0, 0, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, reader_main, &r[i]), 0);
    for (uint32_t v = 2; v <= 6; v++) {
        p = dt_simple_package(sk1, v, v, (float)v, &n);
        assert_int_equal(ks_store_install_buffer(s, p, n, 0, NULL), 0);
        free(p);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(r[i].failures, 0);
        assert_int_equal(r[i].backwards, 0);
    }
    assert_int_equal(current_major(s, 0), 6);
    ks_store_destroy(s);
}

/* A damaged state file: the store opens, reports STORE_CORRUPT for that package (it cannot tell
 * which version is current) and touches nothing; other packages are unaffected. */
static void test_corrupt_state(void **state) {
    (void)state;
    char root[4096], path[4200];
    dt_fresh_dir("store_corrupt", root, sizeof(root));
    ks_store_desc desc = {.trusted_keys = pk1, .num_trusted_keys = 1};
    ks_store *s = NULL;
    assert_int_equal(ks_store_open(root, &desc, &s), 0);
    size_t n;
    uint8_t *p = dt_simple_package(sk1, 1, 1, 1.0f, &n);
    assert_int_equal(ks_store_install_buffer(s, p, n, 0, NULL), 0);
    ks_store_destroy(s);
    snprintf(path, sizeof(path), "%s/face/state", root);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, 9, SEEK_SET);
    fputc(0x7f, f);
    fclose(f);
    assert_int_equal(ks_store_open(root, &desc, &s), 0);
    ks_package_info info;
    assert_int_equal(ks_store_current(s, "face", 0, &info), KS_STATUS_CHECKSUM_MISMATCH);
    assert_int_equal(ks_store_last_refusal(s), KS_DELIVERY_STORE_CORRUPT);
    assert_non_null(strstr(ks_last_error(s), "state file is corrupt"));
    assert_int_equal(ks_store_install_buffer(s, p, n, 0, NULL), KS_STATUS_CHECKSUM_MISMATCH);
    snprintf(path, sizeof(path), "%s/face/v1/files/model.ksm", root);
    assert_int_equal(access(path, R_OK), 0); /* left alone */
    ks_store_destroy(s);
    free(p);
}

static void test_selftest_in_memory(void **state) {
    (void)state;
    char root[4096];
    dt_fresh_dir("store_selftest", root, sizeof(root));
    events ev = {0};
    ks_store *s = NULL;
    ks_store_desc desc = {
        .trusted_keys = pk1, .num_trusted_keys = 1, .on_event = on_event, .user = &ev};
    assert_int_equal(ks_store_open(root, &desc, &s), KS_STATUS_OK);
    size_t n;
    uint8_t *v1 = dt_simple_package(sk1, 1, 100, 1.0f, &n);
    assert_int_equal(ks_store_install_buffer(s, v1, n, 0, NULL), KS_STATUS_OK);
    free(v1);
    for (int broken = 0; broken < 2; broken++) {
        size_t mn, tn;
        uint8_t *m = dt_model(2.0f, &mn);
        /* Version 3's model no longer gives what its own goldens (made with bias 2) expect. */
        uint8_t *kst = dt_selftest("model.ksm", broken ? 2.5f : 2.0f, &tn);
        ks__pkg_src_file f[2] = {{"model.ksm", m, mn}, {"selftest.kst", kst, tn}};
        uint8_t *p = dt_package(sk1, "face", broken ? 3 : 2, 0, 0, broken ? 300 : 200, 2, f, &n);
        ks_status st = ks_store_install_buffer(s, p, n, 0, NULL);
        if (!broken) {
            assert_int_equal(st, KS_STATUS_OK);
            assert_int_equal(current_major(s, 0), 2);
        } else {
            assert_int_equal(st, KS_STATUS_CHECKSUM_MISMATCH);
            assert_int_equal(ks_store_last_refusal(s), KS_DELIVERY_SELFTEST_FAILED);
            assert_int_equal(ev.rolled_back, 1);
            assert_non_null(strstr(ev.last, "face 3.0.0: self-test failed: model.ksm: output 0"));
            assert_int_equal(current_major(s, 0), 2);
            assert_int_equal(current_major(s, 1), 1);
            char reason[256];
            assert_int_equal(ks_store_last_rollback(s, "face", reason, sizeof(reason)), 0);
            assert_non_null(strstr(reason, "expected"));
            /* Known bad, even after reopening the store. */
            ks_store_destroy(s);
            assert_int_equal(ks_store_open(root, &desc, &s), KS_STATUS_OK);
            assert_int_equal(ks_store_install_buffer(s, p, n, 0, NULL), KS_STATUS_INVALID_STATE);
            assert_int_equal(ks_store_last_refusal(s), KS_DELIVERY_KNOWN_BAD);
            /* Skipping the self-test does not launder a known-bad package either. */
            assert_int_equal(ks_store_install_buffer(s, p, n, KS_STORE_SKIP_SELFTEST, NULL),
                             KS_STATUS_INVALID_STATE);
        }
        free(p);
        free(m);
        free(kst);
    }
    ks_store_destroy(s);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Out of memory at each allocation of the store (open, install, queries): a clean
 * KS_STATUS_OUT_OF_MEMORY, nothing leaked (ASan), and the store still consistent afterwards. */
typedef struct oom {
    int left; /* allocations that still succeed; -1: all */
} oom;
static void *oom_alloc(void *user, size_t n, size_t align) {
    oom *o = user;
    if (o->left == 0) return NULL;
    if (o->left > 0) o->left--;
    void *p = NULL;
    return posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, n ? n : 1) ? NULL
                                                                                          : p;
}
static void oom_free(void *user, void *p) {
    (void)user;
    free(p);
}
static void test_out_of_memory(void **state) {
    (void)state;
    char root[4096];
    dt_fresh_dir("store_oom", root, sizeof(root));
    size_t n1, n2;
    uint8_t *v1 = dt_simple_package(sk1, 1, 1, 1.0f, &n1),
            *v2 = dt_simple_package(sk1, 2, 2, 2.0f, &n2);
    int k;
    for (k = 0; k < 200; k++) {
        dt_fresh_dir("store_oom", root, sizeof(root));
        oom o = {k};
        ks_allocator a = {oom_alloc, oom_free, &o};
        ks_store_desc desc = {.trusted_keys = pk1, .num_trusted_keys = 1, .allocator = &a};
        ks_store *s = NULL;
        ks_status st = ks_store_open(root, &desc, &s);
        if (st == KS_STATUS_OK) st = ks_store_install_buffer(s, v1, n1, 0, NULL);
        if (st == KS_STATUS_OK) /* over a kept version: the dropped-version path too */
            st = ks_store_install_buffer(s, v2, n2, 0, NULL);
        ks_package_info info;
        if (st == KS_STATUS_OK) st = ks_store_current(s, "face", 0, &info);
        if (st == KS_STATUS_OK) st = ks_store_check(s, "face");
        if (st != KS_STATUS_OK && st != KS_STATUS_OUT_OF_MEMORY)
            fail_msg("allocation %d: %s: %s", k, ks_status_string(st),
                     ks_last_error(s ? (const void *)s : NULL));
        ks_store_destroy(s);
        if (st == KS_STATUS_OK) break;
    }
    assert_true(k > 2 && k < 200);
    free(v1);
    free(v2);
}

/* An encrypted model (ks-protect) self-tested with a key from the app's key provider: without a
 * provider, or with a wrong key, the package is refused with NO_KEY and not marked bad; with the
 * right key it installs. */
typedef struct keys {
    const uint8_t *key;
    int calls;
    char last_name[80];
} keys;
static int key_provider(void *user, const char *name, uint8_t key_out[32]) {
    keys *k = user;
    k->calls++;
    snprintf(k->last_name, sizeof(k->last_name), "%s", name);
    if (!k->key) return 1;
    memcpy(key_out, k->key, 32);
    return 0;
}
static void test_selftest_encrypted(void **state) {
    (void)state;
    uint8_t key[32], wrong[32];
    memset(key, 0x5a, sizeof(key));
    memset(wrong, 0x33, sizeof(wrong));
    size_t mn = 0, en = 0, tn = 0, n = 0;
    uint8_t *m = dt_model(2.0f, &mn), *enc = NULL;
    char err[256];
    assert_int_equal(ks__ksme_encrypt(m, mn, key, 32, 0, NULL, &enc, &en, err, sizeof(err)), 0);
    uint8_t *kst = dt_selftest("model.ksm", 2.0f, &tn);
    ks__pkg_src_file f[2] = {{"model.ksm", enc, en}, {"selftest.kst", kst, tn}};
    ks__pkg_spec spec = {.id = "face",
                         .version = {1, 0, 0},
                         .min_runtime = KS_VERSION_HEX,
                         .issued = 1,
                         .encryption_key_name = "face-key-2026",
                         .files = f,
                         .num_files = 2};
    uint8_t *p = NULL;
    assert_int_equal(ks__pkg_write(&spec, sk1, &p, &n, err, sizeof(err)), 0);
    char root[4096];
    dt_fresh_dir("store_encrypted", root, sizeof(root));
    keys k = {0};
    ks_store_desc desc = {.trusted_keys = pk1, .num_trusted_keys = 1};
    for (int round = 0; round < 3; round++) {
        desc.key_provider = round == 0 ? NULL : key_provider;
        desc.user = &k;
        k.key = round == 1 ? wrong : key;
        ks_store *s = NULL;
        assert_int_equal(ks_store_open(root, &desc, &s), 0);
        ks_status st = ks_store_install_buffer(s, p, n, 0, NULL);
        ks_package_info info;
        if (round < 2) {
            assert_int_equal(st, KS_STATUS_INVALID_ARGUMENT);
            assert_int_equal(ks_store_last_refusal(s), KS_DELIVERY_NO_KEY);
            assert_non_null(strstr(ks_last_error(s), "face-key-2026"));
            assert_int_equal(ks_store_current(s, "face", 0, &info), KS_STATUS_INVALID_ARGUMENT);
        } else {
            if (st != KS_STATUS_OK) fail_msg("%s", ks_last_error(s));
            assert_int_equal(ks_store_current(s, "face", 0, &info), 0);
            assert_string_equal(info.encryption_key_name, "face-key-2026");
        }
        ks_store_destroy(s);
    }
    assert_int_equal(k.calls, 2);
    assert_string_equal(k.last_name, "face-key-2026");
    free(p);
    free(kst);
    free(m);
    ks__free(NULL, enc);
}

/* A real model from the build: golden outputs recorded with the session API, then a package
 * whose goldens no longer match. */
static void test_selftest_real_model(void **state) {
    (void)state;
    char model_path[4096];
    if (!dt_bundle_file("ksm/face_detection_short_range.ksm", model_path, sizeof(model_path))) {
        print_message("skipped: %s is missing (build the bundles, or set KS_TEST_BUNDLES_DIR)\n",
                      model_path);
        skip();
    }
    size_t mn = 0;
    uint8_t *mbytes = dt_read(model_path, &mn);
    assert_non_null(mbytes);
    ks_model *m = NULL;
    ks_session *ss = NULL;
    assert_int_equal(
        ks_model_load_buffer(mbytes, mn, &(ks_model_desc){.flags = KS_MODEL_COPY_BUFFER}, &m), 0);
    assert_int_equal(ks_session_create(m, NULL, &ss), 0);
    assert_int_equal(ks_session_reshape(ss, NULL), 0);
    ks_tensor in, out0;
    assert_int_equal(ks_session_input(ss, 0, &in), 0);
    /* The golden input is kept apart: the session may reuse its input memory during the run. */
    float *x = malloc(in.size_bytes);
    for (size_t i = 0; i < in.size_bytes / 4; i++)
        x[i] = (float)((i * 7919) % 255) / 127.5f - 1.0f;
    memcpy(in.data, x, in.size_bytes);
    assert_int_equal(ks_session_run(ss), 0);
    assert_int_equal(ks_session_output(ss, 0, &out0), 0);
    float *golden = malloc(out0.size_bytes);
    memcpy(golden, out0.data, out0.size_bytes);
    ks__selftest_tensor ti = {0, 0, x, in.size_bytes};
    ks__selftest_tensor to = {0, 1e-3f, golden, out0.size_bytes};
    char root[4096];
    dt_fresh_dir("store_selftest_real", root, sizeof(root));
    ks_store *s = NULL;
    assert_int_equal(
        ks_store_open(root, &(ks_store_desc){.trusted_keys = pk1, .num_trusted_keys = 1}, &s), 0);
    for (int broken = 0; broken < 2; broken++) {
        if (broken) golden[out0.size_bytes / 8] += 0.5f;
        uint8_t *kst = NULL;
        size_t kn = 0, n = 0;
        assert_int_equal(ks__selftest_write("models/detector.ksm", &ti, 1, &to, 1, &kst, &kn), 0);
        ks__pkg_src_file f[2] = {{"models/detector.ksm", mbytes, mn}, {"selftest.kst", kst, kn}};
        uint8_t *p = dt_package(sk1, "detector", 1, (uint32_t)broken, 0, 10 + broken, 2, f, &n);
        ks_status st = ks_store_install_buffer(s, p, n, 0, NULL);
        if (!broken) {
            if (st != KS_STATUS_OK) fail_msg("%s", ks_last_error(s));
            /* What the self-test adds to an install: its run on the installed files. */
            char path[4096];
            assert_int_equal(
                ks_store_file_path(s, "detector", "models/detector.ksm", path, sizeof(path)), 0);
            *strstr(path, "/models/detector.ksm") = '\0';
            char err[512];
            double t0 = now_ms();
            bool key_problem;
            assert_int_equal(ks__selftest_run(kst, kn, path, NULL, &key_problem, err, sizeof(err)),
                             KS_STATUS_OK);
            print_message("self-test of face_detection_short_range.ksm (load, plan, one run, "
                          "compare): %.2f ms\n",
                          now_ms() - t0);
        } else {
            assert_int_equal(st, KS_STATUS_CHECKSUM_MISMATCH);
            assert_int_equal(ks_store_last_refusal(s), KS_DELIVERY_SELFTEST_FAILED);
            ks_package_info info;
            assert_int_equal(ks_store_current(s, "detector", 0, &info), 0);
            assert_int_equal(info.version_minor, 0);
        }
        free(p);
        free(kst);
    }
    ks_store_destroy(s);
    free(golden);
    free(x);
    ks_session_destroy(ss);
    ks_model_destroy(m);
    free(mbytes);
}

/* The task-level self-test on a face landmarker bundle (the boxes of the meshes, recorded with
 * ks__selftest_face_find as ks-sign does): version 1 installs; version 2 ships the wrong file
 * under the same name (a pose bundle), so its self-test fails, it is marked bad and version 1
 * stays current. */
static void test_selftest_face_landmarker(void **state) {
    (void)state;
#if KS_HAVE_IMAGE_IO
    char lm_path[4096], pose_path[4096];
    const char *photo = KS_SHARED_DATA "/images/coral_grace_hopper.bmp";
    if (!dt_bundle_file("face_landmarker.ksb", lm_path, sizeof(lm_path)) ||
        !dt_bundle_file("pose_landmarker_lite.ksb", pose_path, sizeof(pose_path)) ||
        access(photo, R_OK) != 0) {
        print_message("skipped: the face landmarker or pose bundle or %s is missing\n", photo);
        skip();
    }
    ks_image_buf img;
    char err[768];
    if (ks_image_load(photo, 0, &img, err, sizeof(err))) fail_msg("%s", err);
    float boxes[4 * 4];
    uint32_t num = 0;
    const char *kind = "";
    bool key_problem = true;
    if (ks__selftest_face_find(lm_path, NULL, img.pixels, (uint32_t)img.image.width_px,
                               (uint32_t)img.image.height_px, boxes, 4, &num, &kind, &key_problem,
                               err, sizeof(err)))
        fail_msg("%s", err);
    assert_string_equal(kind, "face landmarker");
    assert_false(key_problem);
    assert_int_equal(num, 1);
    ks__selftest_face t = {.bundle_name = "face_landmarker.ksb",
                           .width_px = (uint32_t)img.image.width_px,
                           .height_px = (uint32_t)img.image.height_px,
                           .rgb = img.pixels,
                           .num_faces = num,
                           .min_iou = 0.9f,
                           .num_boxes = num,
                           .boxes = boxes};
    uint8_t *kst = NULL;
    size_t kn = 0;
    assert_int_equal(ks__selftest_face_write(&t, &kst, &kn), 0);
    char root[4096];
    dt_fresh_dir("store_selftest_face_lm", root, sizeof(root));
    ks_store *s = NULL;
    assert_int_equal(
        ks_store_open(root, &(ks_store_desc){.trusted_keys = pk1, .num_trusted_keys = 1}, &s), 0);
    for (int broken = 0; broken < 2; broken++) {
        size_t bn = 0, n = 0;
        uint8_t *bbytes = dt_read(broken ? pose_path : lm_path, &bn);
        assert_non_null(bbytes);
        ks__pkg_src_file f[2] = {{"face_landmarker.ksb", bbytes, bn},
                                 {"selftest_face.kst", kst, kn}};
        uint8_t *p =
            dt_package(sk1, "face", 1 + (uint32_t)broken, 0, 0, 1 + (uint64_t)broken, 2, f, &n);
        ks_status st = ks_store_install_buffer(s, p, n, 0, NULL);
        if (!broken) {
            if (st != KS_STATUS_OK) fail_msg("%s", ks_last_error(s));
        } else {
            assert_int_equal(st, KS_STATUS_CHECKSUM_MISMATCH);
            assert_int_equal(ks_store_last_refusal(s), KS_DELIVERY_SELFTEST_FAILED);
            if (!strstr(ks_last_error(s), "neither a face detector nor a face landmarker"))
                fail_msg("unexpected message: %s", ks_last_error(s));
            ks_package_info info;
            assert_int_equal(ks_store_current(s, "face", 0, &info), 0);
            assert_int_equal(info.version_major, 1);
        }
        free(p);
        free(bbytes);
    }
    ks_store_destroy(s);
    free(kst);
    ks_image_buf_free(&img);
#else
    print_message("skipped: built without image I/O\n");
    skip();
#endif
}

/* The task-level self-test: the face detector bundle of the package on a photo, with the face
 * count and boxes expected (recorded here with the same bundle, IoU >= 0.9); a package whose
 * expectation is not met (one face more) is refused as SELFTEST_FAILED and marked bad. */
static void test_selftest_face(void **state) {
    (void)state;
#if KS_HAVE_IMAGE_IO
    char bundle[4096];
    const char *photo = KS_SHARED_DATA "/images/coral_grace_hopper.bmp";
    if (!dt_bundle_file("face_detector_short.ksb", bundle, sizeof(bundle)) ||
        access(photo, R_OK) != 0) {
        print_message("skipped: %s or %s is missing\n", bundle, photo);
        skip();
    }
    ks_image_buf img;
    char err[512];
    if (ks_image_load(photo, 0, &img, err, sizeof(err))) fail_msg("%s", err);
    assert_int_equal(img.image.format, KS_PIXEL_FORMAT_RGB);
    ks_face_detector *det = NULL;
    ks_faces *faces = NULL;
    assert_int_equal(
        ks_face_detector_create(&(ks_face_detector_desc){.task = {.model_path = bundle}}, &det), 0);
    assert_int_equal(ks_face_detect(det, &img.image, 0, &faces), 0);
    assert_true(faces->count >= 1);
    float boxes[4 * 4];
    uint32_t nb = faces->count < 4 ? faces->count : 4;
    for (uint32_t i = 0; i < nb; i++)
        memcpy(&boxes[4 * i], &faces->items[i].box, sizeof(float) * 4);
    size_t bn = 0;
    uint8_t *bbytes = dt_read(bundle, &bn);
    char root[4096];
    dt_fresh_dir("store_selftest_face", root, sizeof(root));
    ks_store *s = NULL;
    assert_int_equal(
        ks_store_open(root, &(ks_store_desc){.trusted_keys = pk1, .num_trusted_keys = 1}, &s), 0);
    for (int broken = 0; broken < 2; broken++) {
        ks__selftest_face t = {.bundle_name = "models/face_detector.ksb",
                               .width_px = (uint32_t)img.image.width_px,
                               .height_px = (uint32_t)img.image.height_px,
                               .rgb = img.pixels,
                               .num_faces = faces->count + (uint32_t)broken,
                               .min_iou = 0.9f,
                               .num_boxes = nb,
                               .boxes = boxes};
        uint8_t *kst = NULL;
        size_t kn = 0, n = 0;
        assert_int_equal(ks__selftest_face_write(&t, &kst, &kn), 0);
        ks__pkg_src_file f[2] = {{"models/face_detector.ksb", bbytes, bn},
                                 {"selftest_face.kst", kst, kn}};
        uint8_t *p =
            dt_package(sk1, "faces", 1, (uint32_t)broken, 0, 1 + (uint64_t)broken, 2, f, &n);
        double t0 = now_ms();
        ks_status st = ks_store_install_buffer(s, p, n, 0, NULL);
        double t1 = now_ms();
        if (!broken) {
            if (st != KS_STATUS_OK) fail_msg("%s", ks_last_error(s));
            print_message("install of the face detector bundle with its photo self-test "
                          "(%zu bytes): %.1f ms\n",
                          n, t1 - t0);
        } else {
            assert_int_equal(st, KS_STATUS_CHECKSUM_MISMATCH);
            assert_int_equal(ks_store_last_refusal(s), KS_DELIVERY_SELFTEST_FAILED);
            assert_non_null(strstr(ks_last_error(s), "face(s) on the"));
            ks_package_info info;
            assert_int_equal(ks_store_current(s, "faces", 0, &info), 0);
            assert_int_equal(info.version_minor, 0);
        }
        free(p);
        free(kst);
    }
    ks_store_destroy(s);
    free(bbytes);
    ks_faces_release(faces);
    ks_face_detector_destroy(det);
    ks_image_buf_free(&img);
#else
    print_message("skipped: built without the task library or image I/O\n");
    skip();
#endif
}

/* The task-level self-test over a bundle whose face detector model is encrypted (ks-protect): the
 * store passes the key of the package's key name to the task. Without a key provider, or with a
 * wrong key, the package is refused with NO_KEY (not marked bad); with the right key a wrong
 * expectation fails the self-test (so the detector really ran on the decrypted model) and the
 * right one installs. */
static void test_selftest_face_encrypted(void **state) {
    (void)state;
#if KS_HAVE_IMAGE_IO
    char bundle[4096];
    const char *photo = KS_SHARED_DATA "/images/coral_grace_hopper.bmp";
    if (!dt_bundle_file("face_detector_short.ksb", bundle, sizeof(bundle)) ||
        access(photo, R_OK) != 0) {
        print_message("skipped: %s or %s is missing\n", bundle, photo);
        skip();
    }
    ks_image_buf img;
    char err[512];
    if (ks_image_load(photo, 0, &img, err, sizeof(err))) fail_msg("%s", err);
    /* The expectation, from the plain bundle. */
    ks_face_detector *det = NULL;
    ks_faces *faces = NULL;
    assert_int_equal(
        ks_face_detector_create(&(ks_face_detector_desc){.task = {.model_path = bundle}}, &det), 0);
    assert_int_equal(ks_face_detect(det, &img.image, 0, &faces), 0);
    assert_true(faces->count >= 1);
    float boxes[4 * 4];
    uint32_t nb = faces->count < 4 ? faces->count : 4;
    for (uint32_t i = 0; i < nb; i++)
        memcpy(&boxes[4 * i], &faces->items[i].box, sizeof(float) * 4);
    /* The same bundle with every model entry encrypted. */
    uint8_t key[32], wrong[32];
    memset(key, 0x6b, sizeof(key));
    memset(wrong, 0x21, sizeof(wrong));
    ks_bundle *src = NULL;
    ks_bundle_writer *w = NULL;
    assert_int_equal(ks_bundle_open_file(bundle, NULL, &src), 0);
    assert_int_equal(ks_bundle_writer_create(NULL, &w), 0);
    uint32_t num_encrypted = 0;
    for (uint32_t i = 0; i < ks_bundle_num_entries(src); i++) {
        ks_bundle_entry e;
        assert_int_equal(ks_bundle_get_entry(src, i, &e), 0);
        uint8_t *enc = NULL;
        size_t en = 0;
        if (e.kind == KS_BUNDLE_MODEL) {
            assert_int_equal(ks__ksme_encrypt(e.data, e.size_bytes, key, sizeof(key), 0, NULL, &enc,
                                              &en, err, sizeof(err)),
                             0);
            num_encrypted++;
        }
        assert_int_equal(
            ks_bundle_writer_add(w, e.name, e.kind, enc ? enc : e.data, enc ? en : e.size_bytes),
            0);
        ks__free(NULL, enc);
    }
    assert_true(num_encrypted >= 1);
    void *ebundle = NULL;
    size_t ebn = 0;
    assert_int_equal(ks_bundle_writer_finish(w, &ebundle, &ebn), 0);
    ks_bundle_writer_destroy(w);
    ks_bundle_destroy(src);

    char root[4096];
    dt_fresh_dir("store_selftest_face_enc", root, sizeof(root));
    keys k = {0};
    ks_store_desc desc = {.trusted_keys = pk1, .num_trusted_keys = 1, .user = &k};
    for (int round = 0; round < 4; round++) {
        /* 0: no provider; 1: a wrong key; 2: the key, one face too many; 3: the key */
        desc.key_provider = round == 0 ? NULL : key_provider;
        k.key = round == 1 ? wrong : key;
        int broken = round == 2;
        ks__selftest_face t = {.bundle_name = "models/face_detector.ksb",
                               .width_px = (uint32_t)img.image.width_px,
                               .height_px = (uint32_t)img.image.height_px,
                               .rgb = img.pixels,
                               .num_faces = faces->count + (uint32_t)broken,
                               .min_iou = 0.9f,
                               .num_boxes = nb,
                               .boxes = boxes};
        uint8_t *kst = NULL, *p = NULL;
        size_t kn = 0, n = 0;
        assert_int_equal(ks__selftest_face_write(&t, &kst, &kn), 0);
        ks__pkg_src_file f[2] = {{"models/face_detector.ksb", ebundle, ebn},
                                 {"selftest_face.kst", kst, kn}};
        ks__pkg_spec spec = {.id = "faces",
                             .version = {1, (uint32_t)round, 0},
                             .min_runtime = KS_VERSION_HEX,
                             .issued = 1 + (uint64_t)round,
                             .encryption_key_name = "face-key-2027",
                             .files = f,
                             .num_files = 2};
        assert_int_equal(ks__pkg_write(&spec, sk1, &p, &n, err, sizeof(err)), 0);
        ks_store *s = NULL;
        assert_int_equal(ks_store_open(root, &desc, &s), 0);
        ks_status st = ks_store_install_buffer(s, p, n, 0, NULL);
        ks_package_info info;
        if (round < 2) {
            assert_int_equal(st, KS_STATUS_INVALID_ARGUMENT);
            assert_int_equal(ks_store_last_refusal(s), KS_DELIVERY_NO_KEY);
            assert_non_null(strstr(ks_last_error(s), "face-key-2027"));
            assert_non_null(strstr(ks_last_error(s),
                                   round == 0 ? "no key was given" : "the key does not open it"));
            assert_int_equal(ks_store_current(s, "faces", 0, &info), KS_STATUS_INVALID_ARGUMENT);
        } else if (broken) {
            assert_int_equal(st, KS_STATUS_CHECKSUM_MISMATCH);
            assert_int_equal(ks_store_last_refusal(s), KS_DELIVERY_SELFTEST_FAILED);
            assert_non_null(strstr(ks_last_error(s), "face(s) on the"));
        } else {
            if (st != KS_STATUS_OK) fail_msg("%s", ks_last_error(s));
            assert_int_equal(ks_store_current(s, "faces", 0, &info), 0);
            assert_int_equal(info.version_minor, 3);
            assert_string_equal(info.encryption_key_name, "face-key-2027");
        }
        ks_store_destroy(s);
        free(p);
        free(kst);
    }
    assert_int_equal(k.calls, 3);
    assert_string_equal(k.last_name, "face-key-2027");
    ks_bundle_buffer_free(NULL, ebundle);
    ks_faces_release(faces);
    ks_face_detector_destroy(det);
    ks_image_buf_free(&img);
#else
    print_message("skipped: built without the task library or image I/O\n");
    skip();
#endif
}

/* The cost of verify + install of a ~3 MB bundle (printed; docs/delivery.md quotes it). */
static void test_install_cost(void **state) {
    (void)state;
    char bpath[4096];
    if (!dt_bundle_file("object_detector_yolox.ksb", bpath, sizeof(bpath))) {
        print_message("skipped: %s is missing (build the bundles, or set KS_TEST_BUNDLES_DIR)\n",
                      bpath);
        skip();
    }
    size_t bn = 0, n = 0;
    uint8_t *b = dt_read(bpath, &bn);
    assert_non_null(b);
    char root[4096];
    dt_fresh_dir("store_cost", root, sizeof(root));
    ks_store *s = NULL;
    assert_int_equal(
        ks_store_open(root, &(ks_store_desc){.trusted_keys = pk1, .num_trusted_keys = 1}, &s), 0);
    enum { RUNS = 5 };
    double verify_ms[RUNS], install_ms[RUNS];
    for (int r = 0; r < RUNS; r++) {
        ks__pkg_src_file f = {"object_detector_yolox.ksb", b, bn};
        uint8_t *p = dt_package(sk1, "detector", 1, 0, (uint32_t)r, 1 + (uint64_t)r, 1, &f, &n);
        double t0 = now_ms();
        assert_int_equal(ks_package_verify(p, n, pk1, 1, NULL, NULL), 0);
        double t1 = now_ms();
        assert_int_equal(ks_store_install_buffer(s, p, n, 0, NULL), 0);
        double t2 = now_ms();
        verify_ms[r] = t1 - t0;
        install_ms[r] = t2 - t1;
        free(p);
    }
    qsort(verify_ms, RUNS, sizeof(double), cmp_double);
    qsort(install_ms, RUNS, sizeof(double), cmp_double);
    print_message("package of %zu bytes: verify %.2f ms, verify + install (fsync) %.2f ms "
                  "(median of %d)\n",
                  n, verify_ms[RUNS / 2], install_ms[RUNS / 2], RUNS);
    ks_store_destroy(s);
    free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_runtime_too_old),
        cmocka_unit_test(test_store),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_corrupt_state),
        cmocka_unit_test(test_selftest_in_memory),
        cmocka_unit_test(test_selftest_encrypted),
        cmocka_unit_test(test_selftest_real_model),
        cmocka_unit_test(test_selftest_face),
        cmocka_unit_test(test_selftest_face_landmarker),
        cmocka_unit_test(test_selftest_face_encrypted),
        cmocka_unit_test(test_install_cost),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
