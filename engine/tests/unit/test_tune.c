/* Measured kernel tuning (engine/src/tune.c) through the public session API: FAST and FULL pick
 * valid variants and compute what OFF computes; the cache file round-trips; a warm cache (in
 * memory or on disk) means no timing at reshape (counted with ks__tune_trial_count); corrupt or
 * hostile cache files are ignored and replaced. No timing assertions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <unistd.h>

#include <cmocka.h>

#include "impl.h"
#include "kestrel/engine.h"
#include "ksm.h"
#include "tune.h"

const char *ks__session_kernel_name(const ks_session *s, uint32_t node);

#define HW 20
#define CH 32

static uint8_t *g_ksm;
static size_t g_ksm_bytes;
static char g_cache[256];

static float frand(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / (float)(1u << 23) - 1.0f;
}

/* x[1,HW,HW,CH] -> conv3x3+relu -> conv3x3 -> conv1x1 -> y: two nodes with one tuning key. */
static int make_model(void **state) {
    (void)state;
    ks__graph g;
    ks__graph_init(&g, NULL);
    int64_t xd[4] = {1, HW, HW, CH}, wd[4] = {CH, 3, 3, CH}, w1d[4] = {CH, 1, 1, CH}, bd[1] = {CH};
    int32_t x, w0, w1, w2, b, t0, t1, y;
    static float wv[CH * 9 * CH], w1v[CH * CH], bv[CH];
    uint32_t seed = 99;
    for (size_t i = 0; i < sizeof(wv) / sizeof(wv[0]); i++)
        wv[i] = frand(&seed) * 0.1f;
    for (size_t i = 0; i < sizeof(w1v) / sizeof(w1v[0]); i++)
        w1v[i] = frand(&seed) * 0.2f;
    for (size_t i = 0; i < CH; i++)
        bv[i] = frand(&seed) * 0.1f;
    assert_int_equal(ks__graph_add_tensor(&g, "x", KS_DTYPE_F32, 4, xd, &x), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "w0", KS_DTYPE_F32, 4, wd, &w0), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "w1", KS_DTYPE_F32, 4, wd, &w1), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "w2", KS_DTYPE_F32, 4, w1d, &w2), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "b", KS_DTYPE_F32, 1, bd, &b), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "t0", KS_DTYPE_F32, 4, xd, &t0), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "t1", KS_DTYPE_F32, 4, xd, &t1), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "y", KS_DTYPE_F32, 4, xd, &y), 0);
    assert_int_equal(ks__graph_set_const(&g, w0, wv, sizeof(wv), true), 0);
    assert_int_equal(ks__graph_set_const(&g, w1, wv, sizeof(wv), true), 0);
    assert_int_equal(ks__graph_set_const(&g, w2, w1v, sizeof(w1v), true), 0);
    assert_int_equal(ks__graph_set_const(&g, b, bv, sizeof(bv), true), 0);
    uint32_t idx;
    int32_t in0[3] = {x, w0, b}, in1[3] = {t0, w1, b}, in2[3] = {t1, w2, b};
    assert_int_equal(ks__graph_add_node(&g, KS_OP_CONV2D, "c0", 3, in0, 1, &t0, &idx), 0);
    g.nodes[idx].ip[4] = g.nodes[idx].ip[5] = g.nodes[idx].ip[6] = g.nodes[idx].ip[7] = 1;
    g.nodes[idx].ip[10] = KS_ACT_RELU;
    assert_int_equal(ks__graph_add_node(&g, KS_OP_CONV2D, "c1", 3, in1, 1, &t1, &idx), 0);
    g.nodes[idx].ip[4] = g.nodes[idx].ip[5] = g.nodes[idx].ip[6] = g.nodes[idx].ip[7] = 1;
    g.nodes[idx].ip[10] = KS_ACT_RELU;
    assert_int_equal(ks__graph_add_node(&g, KS_OP_CONV2D, "c2", 3, in2, 1, &y, &idx), 0);
    assert_int_equal(ks__graph_set_io(&g, 1, &x, 1, &y), 0);
    char err[256];
    assert_int_equal(ks__ksm_write(&g, &g_ksm, &g_ksm_bytes, err, sizeof(err)), 0);
    ks__graph_free(&g);
    snprintf(g_cache, sizeof(g_cache), "/tmp/ks_test_tune_%ld.txt", (long)getpid());
    return 0;
}

static int free_model(void **state) {
    (void)state;
    free(g_ksm); /* ks__ksm_write used the default (malloc) allocator */
    remove(g_cache);
    return 0;
}

/* Tuning times candidates only where a node has two or more; this test model's nodes have
 * several on AVX2/AVX-512 but a single NEON variant each, so on AArch64 there is nothing to time
 * (the tuner then keeps the cost model's choice, covered by the other tests). */
static int can_tune(void) {
    return (ks__cpu_isa() & (KS_ISA_AVX2 | KS_ISA_AVX512)) != 0;
}

/* Runs the model once; returns the output (malloc) and fills kernel names of the 3 nodes. */
static float *run_once(ks_tune_mode mode, const char *cache, int threads, const char **names) {
    ks_model *m = NULL;
    assert_int_equal(ks_model_load_buffer(g_ksm, g_ksm_bytes, NULL, &m), KS_STATUS_OK);
    ks_session *s = NULL;
    ks_session_desc d = {.num_threads = threads, .tune = mode, .tune_cache_path = cache};
    assert_int_equal(ks_session_create(m, &d, &s), KS_STATUS_OK);
    assert_int_equal(ks_session_reshape(s, NULL), KS_STATUS_OK);
    ks_tensor in, out;
    assert_int_equal(ks_session_input(s, 0, &in), KS_STATUS_OK);
    uint32_t seed = 5;
    for (size_t i = 0; i < in.size_bytes / sizeof(float); i++)
        ((float *)in.data)[i] = frand(&seed);
    assert_int_equal(ks_session_run(s), KS_STATUS_OK);
    assert_int_equal(ks_session_output(s, 0, &out), KS_STATUS_OK);
    float *y = malloc(out.size_bytes);
    assert_non_null(y);
    memcpy(y, out.data, out.size_bytes);
    for (uint32_t i = 0; names && i < 3; i++)
        names[i] = ks__session_kernel_name(s, i); /* static strings of the impl table */
    ks_session_destroy(s);
    ks_model_destroy(m);
    return y;
}

static int is_valid_variant(const char *name) {
    if (!strcmp(name, "ref")) return 1;
    for (const ks__impl *const *it = ks__impl_list(); *it; it++)
        if (!strcmp((*it)->name, name)) return ((*it)->isa & ~ks__cpu_isa()) == 0;
    return 0;
}

static void assert_close(const float *a, const float *b) {
    for (size_t i = 0; i < (size_t)HW * HW * CH; i++)
        if (!(fabsf(a[i] - b[i]) <= 1e-4f * (1.0f + fabsf(b[i])))) {
            print_error("element %zu: %g vs %g\n", i, (double)a[i], (double)b[i]);
            fail();
        }
}

static void test_modes_agree(void **state) {
    (void)state;
    if (!can_tune()) skip();
    const char *names[3];
    float *off = run_once(KS_TUNE_OFF, NULL, 1, NULL);
    for (int mode = KS_TUNE_FAST; mode <= KS_TUNE_FULL; mode++) {
        for (int threads = 1; threads <= 2; threads++) {
            uint64_t before = ks__tune_trial_count();
            float *y = run_once((ks_tune_mode)mode, NULL, threads, names);
            assert_true(ks__tune_trial_count() > before);
            for (int i = 0; i < 3; i++)
                assert_true(is_valid_variant(names[i]));
            assert_close(y, off);
            free(y);
        }
    }
    free(off);
}

/* Same session, second reshape: the in-memory cache answers; also the two identical 3x3 convs
 * share one key, so one reshape times at most the two distinct conv shapes. */
static void test_warm_reshape(void **state) {
    (void)state;
    if (!can_tune()) skip();
    ks_model *m = NULL;
    assert_int_equal(ks_model_load_buffer(g_ksm, g_ksm_bytes, NULL, &m), KS_STATUS_OK);
    ks_session *s = NULL;
    ks_session_desc d = {.tune = KS_TUNE_FULL};
    assert_int_equal(ks_session_create(m, &d, &s), KS_STATUS_OK);
    uint64_t t0 = ks__tune_trial_count();
    assert_int_equal(ks_session_reshape(s, NULL), KS_STATUS_OK);
    uint64_t t1 = ks__tune_trial_count();
    assert_true(t1 > t0);
    assert_string_equal(ks__session_kernel_name(s, 0), ks__session_kernel_name(s, 1));
    assert_int_equal(ks_session_reshape(s, NULL), KS_STATUS_OK);
    assert_true(ks__tune_trial_count() == t1);
    assert_int_equal(ks_session_run(s), KS_STATUS_OK);
    ks_session_destroy(s);
    ks_model_destroy(m);
}

static void test_cache_round_trip(void **state) {
    (void)state;
    if (!can_tune()) skip();
    remove(g_cache);
    const char *first[3], *second[3];
    uint64_t t0 = ks__tune_trial_count();
    float *a = run_once(KS_TUNE_FAST, g_cache, 1, first);
    uint64_t t1 = ks__tune_trial_count();
    assert_true(t1 > t0);
    FILE *f = fopen(g_cache, "rb");
    assert_non_null(f);
    char line[1024];
    assert_non_null(fgets(line, sizeof(line), f));
    assert_memory_equal(line, "kestrel-tune 1\t", 15);
    assert_non_null(strstr(line, KS_VERSION_STRING));
    int entries = 0;
    while (fgets(line, sizeof(line), f))
        entries++;
    fclose(f);
    assert_true(entries >= 1);
    /* a new session (new process state but for the file) does no timing */
    float *b = run_once(KS_TUNE_FAST, g_cache, 1, second);
    assert_true(ks__tune_trial_count() == t1);
    for (int i = 0; i < 3; i++)
        assert_string_equal(first[i], second[i]);
    assert_memory_equal(a, b, (size_t)HW * HW * CH * sizeof(float));
    /* no stray temporary file */
    char tmp[300];
    snprintf(tmp, sizeof(tmp), "%s.tmp", g_cache);
    assert_int_equal(access(tmp, F_OK), -1);
    free(a);
    free(b);
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* Every corrupt file is ignored (tuning runs again) and replaced by a valid one. */
static void test_corrupt_cache(void **state) {
    (void)state;
    if (!can_tune()) skip();
    remove(g_cache);
    free(run_once(KS_TUNE_FAST, g_cache, 1, NULL));
    /* the valid header of this machine, to build files that pass the header check */
    char header[600] = {0};
    FILE *f = fopen(g_cache, "rb");
    assert_non_null(f);
    assert_non_null(fgets(header, sizeof(header), f));
    fclose(f);
    char buf[4096];
    static const char *const bodies[] = {
        "conv2d/t1\tks_no_such_kernel\n",      /* unknown kernel */
        "conv2d/t1 ks_f32\n",                  /* no tab */
        "\tks_f32_conv2d__avx2_6x16\n",        /* empty key */
        "conv2d/t1\tks_f32_conv2d__avx2_6x16", /* no final newline */
        "con v\tks_f32_conv2d__avx2_6x16\n",   /* space in key */
        "\n",
    };
    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        int n = snprintf(buf, sizeof(buf), "%s%s", header, bodies[i]);
        write_file(g_cache, buf, (size_t)n);
        uint64_t t0 = ks__tune_trial_count();
        free(run_once(KS_TUNE_FAST, g_cache, 1, NULL));
        assert_true(ks__tune_trial_count() > t0);
    }
    /* wrong header, binary junk, empty file, header without newline */
    static const char junk[] = "kestrel-tune 1\tother cpu\tavx2\t0.0.0\nx\ty\n";
    write_file(g_cache, junk, sizeof(junk) - 1);
    uint64_t t0 = ks__tune_trial_count();
    free(run_once(KS_TUNE_FAST, g_cache, 1, NULL));
    assert_true(ks__tune_trial_count() > t0);
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (char)(i * 7919u >> 3);
    write_file(g_cache, buf, sizeof(buf));
    free(run_once(KS_TUNE_FAST, g_cache, 1, NULL));
    write_file(g_cache, "", 0);
    free(run_once(KS_TUNE_FAST, g_cache, 1, NULL));
    write_file(g_cache, header, strlen(header) - 1);
    free(run_once(KS_TUNE_FAST, g_cache, 1, NULL));
    /* after all that, the file is valid again: a warm run does no timing */
    t0 = ks__tune_trial_count();
    free(run_once(KS_TUNE_FAST, g_cache, 1, NULL));
    assert_true(ks__tune_trial_count() == t0);
    /* an unwritable path only logs */
    free(run_once(KS_TUNE_FAST, "/nonexistent-dir/x/cache.txt", 1, NULL));
}

static void test_parse_direct(void **state) {
    (void)state;
    ks__tuner *t = NULL;
    assert_int_equal(ks__tuner_create(NULL, KS_TUNE_FAST, NULL, &t), KS_STATUS_OK);
    assert_int_equal(ks__tune_parse(t, "", 0), -1);
    assert_int_equal(ks__tune_parse(t, "kestrel-tune 1", 14), -1);
    assert_int_equal(ks__tune_parse(t, "\0\0\0\n", 4), -1);
    ks__tuner_destroy(t);
    ks__tuner_destroy(NULL);
    assert_int_equal(ks__tuner_create(NULL, KS_TUNE_OFF, NULL, &t), KS_STATUS_INVALID_ARGUMENT);
}

static void test_invalid_mode(void **state) {
    (void)state;
    ks_model *m = NULL;
    assert_int_equal(ks_model_load_buffer(g_ksm, g_ksm_bytes, NULL, &m), KS_STATUS_OK);
    ks_session *s = NULL;
    ks_session_desc d = {.tune = KS_TUNE_COUNT};
    assert_int_equal(ks_session_create(m, &d, &s), KS_STATUS_INVALID_ARGUMENT);
    assert_null(s);
    ks_model_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modes_agree),      cmocka_unit_test(test_warm_reshape),
        cmocka_unit_test(test_cache_round_trip), cmocka_unit_test(test_corrupt_cache),
        cmocka_unit_test(test_parse_direct),     cmocka_unit_test(test_invalid_mode),
    };
    return cmocka_run_group_tests(tests, make_model, free_model);
}
