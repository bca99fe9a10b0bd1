/* Encrypted models (KSME, ksm_crypt.h): round trip, wrong key, byte flips, truncation, chunk
 * surgery, key misuse, OOM injection and plaintext wiping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "convert.h"
#include "fileio.h"
#include "kestrel/engine.h"
#include "ksm.h"
#include "ksm_crypt.h"

#define CHUNK 4096u

/* Container version the fixture writes; main() runs the suite once per version. */
static uint32_t g_version = KSME_VERSION;

static size_t overhead(void) {
    return g_version == 1 ? KSME_V1_CHUNK_OVERHEAD_BYTES : KSME_CHUNK_OVERHEAD_BYTES;
}

static const uint8_t g_key[KSME_KEY_BYTES] = {
    0x6b, 0x65, 0x73, 0x74, 0x72, 0x65, 0x6c, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09,
    0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f};

static ks_model_desc keyed(void) {
    return (ks_model_desc){.key = g_key, .key_bytes = sizeof(g_key)};
}

/* The real model (BlazeFace short range) converted in memory; NULL when the data is missing. */
static uint8_t *make_plain(size_t *n) {
    const char *path = KS_SHARED_DATA "/face_detection/face_detection_short_range.tflite";
    uint8_t *src = NULL, *img = NULL;
    size_t src_n = 0;
    char err[512];
    if (ks_read_file(path, (size_t)1 << 30, &src, &src_n, err, sizeof(err)) != KS_STATUS_OK)
        return NULL;
    ks__graph g;
    ks__graph_init(&g, NULL);
    assert_int_equal(ks__import_tflite(src, src_n, "bf.tflite", &g, err, sizeof(err)), 0);
    assert_int_equal(ks__graph_optimize(&g, err, sizeof(err)), 0);
    assert_int_equal(ks__ksm_write(&g, &img, n, err, sizeof(err)), 0);
    ks__graph_free(&g);
    free(src);
    return img;
}

static uint8_t *make_encrypted(const uint8_t *plain, size_t plain_n, size_t *n) {
    uint8_t *enc = NULL;
    char err[256];
    assert_int_equal(ks__ksme_encrypt_version(g_version, plain, plain_n, g_key, sizeof(g_key),
                                              CHUNK, NULL, &enc, n, err, 256),
                     KS_STATUS_OK);
    return enc;
}

typedef struct fixture {
    uint8_t *plain, *enc;
    size_t plain_n, enc_n;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof(*f));
    f->plain = make_plain(&f->plain_n);
    if (f->plain) f->enc = make_encrypted(f->plain, f->plain_n, &f->enc_n);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    ks__free(NULL, f->plain);
    ks__free(NULL, f->enc);
    free(f);
    return 0;
}

static fixture *need_model(void **state) {
    fixture *f = *state;
    if (!f->plain) {
        print_message("skipped: face_detection_short_range.tflite not in " KS_SHARED_DATA "\n");
        skip();
    }
    return f;
}

/* Runs the model on a fixed ramp input; returns a malloc'ed copy of every output. */
static uint8_t *run_outputs(ks_model *m, size_t *n_out) {
    ks_session *s = NULL;
    assert_int_equal(ks_session_create(m, NULL, &s), 0);
    assert_int_equal(ks_session_reshape(s, NULL), 0);
    ks_tensor in;
    assert_int_equal(ks_session_input(s, 0, &in), 0);
    float *x = in.data;
    for (size_t i = 0; i < in.size_bytes / sizeof(float); i++)
        x[i] = (float)(i % 251) / 125.0f - 1.0f;
    assert_int_equal(ks_session_run(s), 0);
    uint8_t *all = NULL;
    size_t total = 0;
    for (uint32_t k = 0; k < ks_model_num_outputs(m); k++) {
        ks_tensor out;
        assert_int_equal(ks_session_output(s, k, &out), 0);
        all = realloc(all, total + out.size_bytes);
        memcpy(all + total, out.data, out.size_bytes);
        total += out.size_bytes;
    }
    ks_session_destroy(s);
    *n_out = total;
    return all;
}

static void test_round_trip(void **state) {
    fixture *f = need_model(state);
    assert_true(f->enc_n > 64 * CHUNK); /* many chunks */
    assert_int_equal(memcmp(f->enc, "KSME", 4), 0);
    ks_model *plain = NULL, *enc = NULL, *enc_file = NULL;
    assert_int_equal(ks_model_load_buffer(f->plain, f->plain_n, NULL, &plain), 0);
    ks_model_desc d = keyed();
    assert_int_equal(ks_model_load_buffer(f->enc, f->enc_n, &d, &enc), 0);
    char path[] = "/tmp/ks_test_protect_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, f->enc, f->enc_n), (ssize_t)f->enc_n);
    close(fd);
    assert_int_equal(ks_model_load_file(path, &d, &enc_file), 0);
    unlink(path);
    size_t n0, n1, n2;
    uint8_t *o0 = run_outputs(plain, &n0), *o1 = run_outputs(enc, &n1),
            *o2 = run_outputs(enc_file, &n2);
    assert_true(n0 > 0 && n0 == n1 && n0 == n2);
    assert_memory_equal(o0, o1, n0);
    assert_memory_equal(o0, o2, n0);
    free(o0), free(o1), free(o2);
    ks_model_destroy(plain);
    ks_model_destroy(enc);
    ks_model_destroy(enc_file);

    /* Encrypting the same image twice gives different files (random stream header). */
    size_t n_again;
    uint8_t *again = make_encrypted(f->plain, f->plain_n, &n_again);
    assert_int_equal(n_again, f->enc_n);
    assert_memory_not_equal(again + 24, f->enc + 24, 24);
    ks__free(NULL, again);
}

/* Any decrypt thread count gives the same model, and a tampered chunk is named the same way
 * whichever thread met it first. */
static void test_threads(void **state) {
    fixture *f = need_model(state);
    ks_model *plain = NULL;
    assert_int_equal(ks_model_load_buffer(f->plain, f->plain_n, NULL, &plain), 0);
    size_t n0;
    uint8_t *o0 = run_outputs(plain, &n0);
    ks_model_destroy(plain);
    uint8_t *buf = malloc(f->enc_n);
    memcpy(buf, f->enc, f->enc_n);
    size_t stride = CHUNK + overhead();
    buf[KSME_HEADER_BYTES + 5 * stride + 100] ^= 0x20; /* chunk 5 */
    buf[KSME_HEADER_BYTES + 9 * stride + 7] ^= 0x20;   /* chunk 9 */
    const uint32_t threads[] = {0, 1, 2, 3, 7};
    for (size_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
        ks_model_desc d = keyed();
        d.num_threads = threads[t];
        ks_model *m = NULL;
        assert_int_equal(ks_model_load_buffer(f->enc, f->enc_n, &d, &m), 0);
        size_t n1;
        uint8_t *o1 = run_outputs(m, &n1);
        assert_int_equal(n1, n0);
        assert_memory_equal(o0, o1, n0);
        free(o1);
        ks_model_destroy(m);
        m = NULL;
        assert_int_equal(ks_model_load_buffer(buf, f->enc_n, &d, &m), KS_STATUS_TAMPERED);
        assert_null(m);
        if (!strstr(ks_last_error(NULL), "chunk 5 of"))
            fail_msg("threads %u: %s", threads[t], ks_last_error(NULL));
    }
    free(buf);
    free(o0);
}

static void test_wrong_key(void **state) {
    fixture *f = need_model(state);
    uint8_t bad[KSME_KEY_BYTES];
    memcpy(bad, g_key, sizeof(bad));
    bad[31] ^= 1;
    ks_model *m = NULL;
    ks_model_desc d = {.key = bad, .key_bytes = sizeof(bad)};
    assert_int_equal(ks_model_load_buffer(f->enc, f->enc_n, &d, &m), KS_STATUS_TAMPERED);
    assert_null(m);
    assert_non_null(strstr(ks_last_error(NULL), "wrong key"));
    assert_string_equal(ks_status_string(KS_STATUS_TAMPERED), "model tampered or wrong key");
}

static void expect_flip(const fixture *f, uint8_t *buf, size_t pos, uint8_t mask) {
    buf[pos] ^= mask;
    ks_model *m = NULL;
    ks_model_desc d = keyed();
    ks_status st = ks_model_load_buffer(buf, f->enc_n, &d, &m);
    buf[pos] ^= mask;
    if (pos >= KSME_HEADER_BYTES) {
        if (st != KS_STATUS_TAMPERED) fail_msg("flip at %zu gave status %d", pos, st);
    } else if (pos < 4) {
        /* No longer "KSME": treated as a plain file, which a keyed load refuses. */
        assert_int_equal(st, KS_STATUS_INVALID_ARGUMENT);
    } else {
        if (st != KS_STATUS_TAMPERED && st != KS_STATUS_INVALID_MODEL &&
            st != KS_STATUS_VERSION_MISMATCH && st != KS_STATUS_UNSUPPORTED)
            fail_msg("header flip at %zu gave status %d", pos, st);
    }
    assert_null(m);
}

static void test_byte_flips(void **state) {
    fixture *f = need_model(state);
    uint8_t *buf = malloc(f->enc_n);
    memcpy(buf, f->enc, f->enc_n);
    size_t n = f->enc_n, num = 0;
    size_t stride = CHUNK + overhead();
    size_t num_chunks = (f->plain_n + CHUNK - 1) / CHUNK;
    for (size_t p = 0; p < KSME_HEADER_BYTES; p++, num++)
        expect_flip(f, buf, p, 0x01);
    for (size_t k = 0; k < num_chunks; k += (k < 3 || k + 3 > num_chunks) ? 1 : num_chunks / 7) {
        size_t base = KSME_HEADER_BYTES + k * stride;
        size_t end = k + 1 == num_chunks ? n : base + stride;
        /* tag byte, first ciphertext bytes, middle, last ciphertext byte, every MAC byte */
        size_t picks[] = {base, base + 1, base + 2, (base + end) / 2, end - 17};
        for (size_t i = 0; i < sizeof(picks) / sizeof(picks[0]); i++, num++)
            expect_flip(f, buf, picks[i], 0x80);
        for (size_t p = end - 16; p < end; p++, num++)
            expect_flip(f, buf, p, 0x04);
    }
    uint32_t rng = 12345;
    for (int i = 0; i < 300; i++, num++) {
        rng = rng * 1664525u + 1013904223u;
        expect_flip(f, buf, rng % n, (uint8_t)(1u << (rng >> 29)));
    }
    print_message("%zu single-byte flips all refused\n", num);
    free(buf);
}

static void test_truncation(void **state) {
    fixture *f = need_model(state);
    ks_model_desc d = keyed();
    size_t num = 0;
    for (size_t len = 0; len < f->enc_n; len += len < 200 ? 1 : 997, num++) {
        ks_model *m = NULL;
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, f->enc, len);
        ks_status st = ks_model_load_buffer(copy, len, &d, &m);
        free(copy);
        assert_null(m);
        if (len >= 4 && st != KS_STATUS_INVALID_MODEL) fail_msg("length %zu gave %d", len, st);
        if (len < 4) assert_int_equal(st, KS_STATUS_INVALID_ARGUMENT);
    }
    /* One byte too many. */
    uint8_t *longer = malloc(f->enc_n + 1);
    memcpy(longer, f->enc, f->enc_n);
    longer[f->enc_n] = 0;
    ks_model *m = NULL;
    assert_int_equal(ks_model_load_buffer(longer, f->enc_n + 1, &d, &m), KS_STATUS_INVALID_MODEL);
    free(longer);
    print_message("%zu truncated lengths all refused\n", num);
}

/* Structurally valid edits the size checks cannot see: the AEAD must catch them. */
static void test_chunk_surgery(void **state) {
    fixture *f = need_model(state);
    ks_model_desc d = keyed();
    ks_model *m = NULL;
    size_t stride = CHUNK + overhead();
    uint8_t *buf = malloc(f->enc_n);

    /* swap chunks 1 and 2 */
    memcpy(buf, f->enc, f->enc_n);
    memcpy(buf + KSME_HEADER_BYTES + stride, f->enc + KSME_HEADER_BYTES + 2 * stride, stride);
    memcpy(buf + KSME_HEADER_BYTES + 2 * stride, f->enc + KSME_HEADER_BYTES + stride, stride);
    assert_int_equal(ks_model_load_buffer(buf, f->enc_n, &d, &m), KS_STATUS_TAMPERED);

    /* duplicate chunk 0 over chunk 1 */
    memcpy(buf, f->enc, f->enc_n);
    memcpy(buf + KSME_HEADER_BYTES + stride, f->enc + KSME_HEADER_BYTES, stride);
    assert_int_equal(ks_model_load_buffer(buf, f->enc_n, &d, &m), KS_STATUS_TAMPERED);

    /* drop the last chunk and rewrite the plaintext size so the file size is consistent */
    size_t num_chunks = (f->plain_n + CHUNK - 1) / CHUNK;
    uint64_t plain = (uint64_t)(num_chunks - 1) * CHUNK;
    size_t cut = KSME_HEADER_BYTES + (num_chunks - 1) * stride;
    memcpy(buf, f->enc, cut);
    for (int i = 0; i < 8; i++)
        buf[16 + i] = (uint8_t)(plain >> (8 * i));
    assert_int_equal(ks_model_load_buffer(buf, cut, &d, &m), KS_STATUS_TAMPERED);

    /* a different stream header (nonce material) with the chunks left as they are */
    memcpy(buf, f->enc, f->enc_n);
    buf[30] ^= 0x10;
    assert_int_equal(ks_model_load_buffer(buf, f->enc_n, &d, &m), KS_STATUS_TAMPERED);
    assert_null(m);
    free(buf);
}

static void test_key_misuse(void **state) {
    fixture *f = need_model(state);
    ks_model *m = NULL;
    ks_model_desc d = keyed();
    assert_int_equal(ks_model_load_buffer(f->plain, f->plain_n, &d, &m),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "not encrypted"));
    assert_int_equal(ks_model_load_buffer(f->enc, f->enc_n, NULL, &m), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "no key"));
    ks_model_desc short_key = {.key = g_key, .key_bytes = 16};
    assert_int_equal(ks_model_load_buffer(f->enc, f->enc_n, &short_key, &m),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "32 bytes"));

    char path[] = "/tmp/ks_test_protect_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, f->enc, f->enc_n), (ssize_t)f->enc_n);
    close(fd);
    assert_int_equal(ks_model_load_file(path, NULL, &m), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), path));
    /* a flip in the last chunk read from a file */
    FILE *fp = fopen(path, "r+b");
    fseek(fp, (long)f->enc_n - 5, SEEK_SET);
    fputc(f->enc[f->enc_n - 5] ^ 0x40, fp);
    fclose(fp);
    assert_int_equal(ks_model_load_file(path, &d, &m), KS_STATUS_TAMPERED);
    /* truncated file */
    assert_int_equal(truncate(path, (off_t)f->enc_n - 100), 0);
    assert_int_equal(ks_model_load_file(path, &d, &m), KS_STATUS_INVALID_MODEL);
    unlink(path);
    assert_null(m);
}

/* Allocator that fails the Nth call and checks, on free, that every buffer of the plaintext's
 * size was wiped before it was released. */
typedef struct wipe_alloc {
    long live, calls, fail_at;
    size_t watch_bytes;
    int num_unwiped, num_watched;
} wipe_alloc;

typedef struct block {
    size_t size;
    size_t pad[7]; /* keeps the payload 64-byte aligned */
} block;

static void *w_alloc(void *user, size_t size, size_t align) {
    wipe_alloc *w = user;
    if (w->calls++ == w->fail_at) return NULL;
    assert_true(align <= 64);
    void *p = NULL;
    if (posix_memalign(&p, 64, sizeof(block) + (size ? size : 1)) != 0) return NULL;
    ((block *)p)->size = size;
    w->live++;
    return (block *)p + 1;
}

static void w_free(void *user, void *p) {
    wipe_alloc *w = user;
    if (!p) return;
    block *b = (block *)p - 1;
    if (b->size == w->watch_bytes) {
        w->num_watched++;
        const uint8_t *q = p;
        for (size_t i = 0; i < b->size; i++) {
            if (q[i]) {
                w->num_unwiped++;
                break;
            }
        }
    }
    w->live--;
    free(b);
}

static void test_oom_and_wipe(void **state) {
    fixture *f = need_model(state);
    long k = 0;
    for (;; k++) {
        wipe_alloc w = {0, 0, k, f->plain_n, 0, 0};
        ks_allocator a = {w_alloc, w_free, &w};
        ks_model *m = NULL;
        ks_model_desc d = keyed();
        d.allocator = &a;
        /* One thread: a failed decrypt thread pool is tolerated (the load decrypts on the calling
         * thread instead), which would end this loop at the pool's allocation. */
        d.num_threads = 1;
        ks_status st = ks_model_load_buffer(f->enc, f->enc_n, &d, &m);
        if (st != KS_STATUS_OK) assert_int_equal(st, KS_STATUS_OUT_OF_MEMORY);
        ks_model_destroy(m);
        assert_int_equal(w.live, 0);
        assert_int_equal(w.num_unwiped, 0);
        if (st == KS_STATUS_OK) {
            assert_int_equal(w.num_watched, 1); /* the plaintext was freed, and wiped */
            break;
        }
    }
    assert_true(k > 5);
    print_message("OOM injection: %ld allocations failed in turn, all clean\n", k);
}

static void test_synthetic_edges(void **state) {
    (void)state;
    uint8_t plain[5000], *enc = NULL, *out = NULL;
    size_t enc_n = 0, out_n = 0;
    char err[256];
    for (size_t i = 0; i < sizeof(plain); i++)
        plain[i] = (uint8_t)(i * 7);
    /* exact multiple of the chunk, one byte over, one byte */
    size_t sizes[] = {CHUNK, CHUNK + 1, 1, sizeof(plain)};
    for (size_t s = 0; s < 4; s++) {
        assert_int_equal(ks__ksme_encrypt_version(g_version, plain, sizes[s], g_key, 32, CHUNK,
                                                  NULL, &enc, &enc_n, err, sizeof(err)),
                         0);
        size_t chunks = (sizes[s] + CHUNK - 1) / CHUNK;
        assert_int_equal(enc_n, KSME_HEADER_BYTES + sizes[s] + overhead() * chunks);
        assert_int_equal(
            ks__ksme_decrypt_buffer(enc, enc_n, g_key, 32, NULL, &out, &out_n, err, sizeof(err)),
            0);
        assert_int_equal(out_n, sizes[s]);
        assert_memory_equal(out, plain, out_n);
        ks__free(NULL, out);
        ks__free(NULL, enc);
    }
    assert_int_equal(
        ks__ksme_encrypt(plain, 0, g_key, 32, CHUNK, NULL, &enc, &enc_n, err, sizeof(err)),
        KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(
        ks__ksme_encrypt(plain, 10, g_key, 32, 100, NULL, &enc, &enc_n, err, sizeof(err)),
        KS_STATUS_INVALID_ARGUMENT);
    /* A valid container whose plaintext is not a .ksm: decrypts, then the parser refuses it. */
    assert_int_equal(
        ks__ksme_encrypt(plain, 100, g_key, 32, CHUNK, NULL, &enc, &enc_n, err, sizeof(err)), 0);
    ks_model *m = NULL;
    ks_model_desc d = keyed();
    assert_int_equal(ks_model_load_buffer(enc, enc_n, &d, &m), KS_STATUS_INVALID_MODEL);
    ks__free(NULL, enc);
}

/* KS_WITH_SODIUM=OFF: an encrypted file is refused as unsupported, with a message. */
static void test_without_sodium(void **state) {
    (void)state;
    uint8_t fake[KSME_HEADER_BYTES + 100] = "KSME";
    ks_model *m = NULL;
    ks_model_desc d = keyed();
    assert_int_equal(ks_model_load_buffer(fake, sizeof(fake), &d, &m), KS_STATUS_UNSUPPORTED);
    assert_non_null(strstr(ks_last_error(NULL), "libsodium"));
    assert_null(m);
}

int main(void) {
    if (!ks__ksme_available()) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_without_sodium)};
        return cmocka_run_group_tests(tests, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),      cmocka_unit_test(test_threads),
        cmocka_unit_test(test_wrong_key),       cmocka_unit_test(test_byte_flips),
        cmocka_unit_test(test_truncation),      cmocka_unit_test(test_chunk_surgery),
        cmocka_unit_test(test_key_misuse),      cmocka_unit_test(test_oom_and_wipe),
        cmocka_unit_test(test_synthetic_edges),
    };
    int failed = 0;
    for (g_version = KSME_VERSION; g_version >= 1; g_version--) {
        print_message("KSME container version %u\n", g_version);
        failed += cmocka_run_group_tests(tests, setup, teardown);
    }
    return failed;
}
