/* ks_session_desc.backend: the CPU by default, a clear refusal for a backend this build or
 * machine lacks (no Vulkan backend built, no Vulkan driver, OpenCL), and KS_BACKEND_AUTO, which
 * measures once per model, threads and precision and falls back to the CPU. The ctest entry
 * test_backend_choice.no_device runs this file with the Vulkan loader pointed at a driver file
 * that does not exist (KS_TEST_NO_GPU). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <unistd.h>

#include "convert.h"
#include "kestrel/engine.h"
#include "ksm.h"
#include "runtime/runtime.h"

static uint8_t *g_img;
static size_t g_img_bytes;

/* x [1,6,7,5] -> x + c -> tanh: ops every backend runs */
static ks_model *make_model(void) {
    if (!g_img) {
        ks__graph g;
        ks__graph_init(&g, NULL);
        int64_t dx[4] = {1, 6, 7, 5}, dc[1] = {5};
        int32_t x, c, a, y;
        assert_int_equal(ks__graph_add_tensor(&g, "x", KS_DTYPE_F32, 4, dx, &x), 0);
        assert_int_equal(ks__graph_add_tensor(&g, "c", KS_DTYPE_F32, 1, dc, &c), 0);
        float cv[5] = {0.5f, -0.25f, 1.0f, 0.0f, -1.5f};
        assert_int_equal(ks__graph_set_const(&g, c, cv, sizeof(cv), true), 0);
        assert_int_equal(ks__graph_add_tensor(&g, "a", KS_DTYPE_F32, 4, dx, &a), 0);
        assert_int_equal(ks__graph_add_tensor(&g, "y", KS_DTYPE_F32, 4, dx, &y), 0);
        int32_t in[2] = {x, c};
        assert_int_equal(ks__graph_add_node(&g, KS_OP_ADD, "add", 2, in, 1, &a, NULL), 0);
        assert_int_equal(ks__graph_add_node(&g, KS_OP_TANH, "tanh", 1, &a, 1, &y, NULL), 0);
        assert_int_equal(ks__graph_set_io(&g, 1, &x, 1, &y), 0);
        char err[256];
        assert_int_equal(ks__ksm_write(&g, &g_img, &g_img_bytes, err, sizeof(err)), 0);
        ks__graph_free(&g);
    }
    ks_model *m = NULL;
    assert_int_equal(ks_model_load_buffer(g_img, g_img_bytes, NULL, &m), KS_STATUS_OK);
    return m;
}

/* Runs s on a fixed input; returns the output (210 floats) in out. */
static void run(ks_session *s, float *out) {
    assert_int_equal(ks_session_reshape(s, NULL), KS_STATUS_OK);
    ks_tensor x, y;
    assert_int_equal(ks_session_input(s, 0, &x), KS_STATUS_OK);
    float *xv = x.data;
    for (size_t i = 0; i < 210; i++)
        xv[i] = (float)((int)(i * 29 % 41) - 20) * 0.1f;
    assert_int_equal(ks_session_run(s), KS_STATUS_OK);
    assert_int_equal(ks_session_output(s, 0, &y), KS_STATUS_OK);
    assert_int_equal(y.size_bytes, 210 * sizeof(float));
    memcpy(out, y.data, y.size_bytes);
}

static void expect_same(const float *a, const float *b) {
    for (size_t i = 0; i < 210; i++)
        if (!(a[i] - b[i] < 1e-5f && b[i] - a[i] < 1e-5f))
            fail_msg("element %zu: %g vs %g", i, (double)a[i], (double)b[i]);
}

static int no_gpu(void) {
    return getenv("KS_TEST_NO_GPU") != NULL;
}

static void test_names_default_and_refusals(void **state) {
    (void)state;
    for (int b = 0; b < KS_BACKEND_COUNT; b++) {
        ks_backend got = KS_BACKEND_COUNT;
        assert_int_equal(ks_backend_parse(ks_backend_string((ks_backend)b), &got), 0);
        assert_int_equal(got, b);
    }
    ks_backend keep = KS_BACKEND_AUTO;
    assert_int_equal(ks_backend_parse("Vulkan", &keep), -1);
    assert_int_equal(ks_backend_parse(NULL, &keep), -1);
    assert_int_equal(keep, KS_BACKEND_AUTO);
    assert_string_equal(ks_backend_string(KS_BACKEND_COUNT), "?");

    ks_model *m = make_model();
    ks_session *s = NULL;
    assert_int_equal(ks_session_create(m, NULL, &s), KS_STATUS_OK);
    assert_int_equal(ks_session_backend(s), KS_BACKEND_CPU);
    ks_session_destroy(s);
    assert_int_equal(ks_session_backend(NULL), KS_BACKEND_CPU);

    ks_session_desc d = {.backend = (ks_backend)7};
    s = NULL;
    assert_int_equal(ks_session_create(m, &d, &s), KS_STATUS_INVALID_ARGUMENT);
    assert_null(s);
    assert_non_null(strstr(ks_last_error(NULL), "backend 7"));
    d.backend = KS_BACKEND_OPENCL;
    assert_int_equal(ks_session_create(m, &d, &s), KS_STATUS_UNSUPPORTED);
    assert_null(s);
    assert_non_null(strstr(ks_last_error(NULL), "opencl"));
    ks_model_destroy(m);
}

static void test_vulkan(void **state) {
    (void)state;
    ks_model *m = make_model();
    ks_session *cpu = NULL, *s = NULL;
    assert_int_equal(ks_session_create(m, NULL, &cpu), KS_STATUS_OK);
    float want[210], got[210];
    run(cpu, want);
    ks_session_desc d = {.backend = KS_BACKEND_VULKAN};
    ks_status st = ks_session_create(m, &d, &s);
#if !defined(KS_TEST_HAVE_VULKAN)
    (void)got;
    assert_int_equal(st, KS_STATUS_UNSUPPORTED);
    assert_non_null(strstr(ks_last_error(NULL), "no Vulkan backend"));
#else
    if (no_gpu()) {
        assert_int_equal(st, KS_STATUS_UNSUPPORTED);
        assert_non_null(strstr(ks_last_error(NULL), "Vulkan"));
        assert_null(s);
    } else if (st != KS_STATUS_OK) {
        print_message("no Vulkan device here (%s): the GPU half is skipped\n", ks_last_error(NULL));
    } else {
        assert_int_equal(ks_session_backend(s), KS_BACKEND_VULKAN);
        run(s, got);
        expect_same(want, got);
    }
#endif
    ks_session_destroy(s);
    ks_session_destroy(cpu);
    ks_model_destroy(m);
}

static int g_auto_logs, g_auto_known;
static void on_log(void *user, ks_log_level level, const char *message) {
    (void)user;
    (void)level;
    if (strncmp(message, "backend auto:", 13) != 0) return;
    if (strstr(message, "chosen before"))
        g_auto_known++; /* read from the file beside the tuning cache */
    else
        g_auto_logs++; /* measured, or why not */
}

static void test_auto(void **state) {
    (void)state;
    ks_log_set(on_log, NULL, KS_LOG_INFO);
    ks_model *m = make_model();
    ks_session *cpu = NULL;
    assert_int_equal(ks_session_create(m, NULL, &cpu), KS_STATUS_OK);
    float want[210], got[210];
    run(cpu, want);
    /* the first create with these threads measures (or says why it cannot), the second reuses
     * the choice: no new measurement, the same backend, the same results */
    ks_backend first = KS_BACKEND_COUNT;
    for (int pass = 0; pass < 2; pass++) {
        g_auto_logs = 0;
        ks_session *s = NULL;
        ks_session_desc d = {.backend = KS_BACKEND_AUTO, .num_threads = 1};
        assert_int_equal(ks_session_create(m, &d, &s), KS_STATUS_OK);
        ks_backend b = ks_session_backend(s);
        assert_true(b == KS_BACKEND_CPU || b == KS_BACKEND_VULKAN);
#if !defined(KS_TEST_HAVE_VULKAN)
        assert_int_equal(b, KS_BACKEND_CPU);
#endif
        if (no_gpu()) assert_int_equal(b, KS_BACKEND_CPU);
        if (pass == 0) {
            assert_true(g_auto_logs >= 1);
            first = b;
        } else {
            assert_int_equal(g_auto_logs, 0);
            assert_int_equal(b, first);
        }
        run(s, got);
        expect_same(want, got);
        ks_session_destroy(s);
    }
    /* another thread count is another entry: measured again */
    g_auto_logs = 0;
    ks_session *s = NULL;
    ks_session_desc d2 = {.backend = KS_BACKEND_AUTO, .num_threads = 2};
    assert_int_equal(ks_session_create(m, &d2, &s), KS_STATUS_OK);
    assert_true(g_auto_logs >= 1);
    run(s, got);
    expect_same(want, got);
    ks_session_destroy(s);
    ks_session_destroy(cpu);
    ks_model_destroy(m);
    ks_log_set(NULL, NULL, KS_LOG_WARN);
}

/* With a tune_cache_path, AUTO's choice outlives the process: "<path>.auto" (auto_cache.h). A
 * "new process" here is ks__auto_forget(), which clears the choices held in memory. */
static void test_auto_file(void **state) {
    (void)state;
    char dir[] = "/tmp/ks_auto_XXXXXX", tune[64], file[80];
    assert_non_null(mkdtemp(dir));
    snprintf(tune, sizeof(tune), "%s/tune", dir);
    snprintf(file, sizeof(file), "%s/tune.auto", dir);
    ks_log_set(on_log, NULL, KS_LOG_INFO);
    ks_model *m = make_model();
    ks_session_desc d = {.backend = KS_BACKEND_AUTO, .num_threads = 3, .tune_cache_path = tune};
    ks__auto_forget();
    g_auto_logs = g_auto_known = 0;
    ks_session *s = NULL;
    assert_int_equal(ks_session_create(m, &d, &s), KS_STATUS_OK);
    ks_backend first = ks_session_backend(s);
    ks_session_destroy(s);
    assert_true(g_auto_logs >= 1);
    FILE *f = fopen(file, "rb");
    bool have_gpu = false;
#if defined(KS_TEST_HAVE_VULKAN)
    ks_session_desc dv = {.backend = KS_BACKEND_VULKAN};
    ks_session *v = NULL;
    have_gpu = ks_session_create(m, &dv, &v) == KS_STATUS_OK;
    ks_session_destroy(v);
#endif
    if (!have_gpu) { /* nothing to choose between: nothing kept on disk */
        assert_null(f);
        print_message("no Vulkan device here: only the no-file half runs\n");
    } else {
        assert_non_null(f);
        char text[4096] = "";
        size_t n = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        text[n] = '\0';
        assert_non_null(strstr(text, "kestrel-auto 1\t"));
        assert_non_null(strstr(text, ":t3:p0:vulkan "));
        assert_non_null(strstr(text, first == KS_BACKEND_CPU ? "\tcpu\n" : "\tvulkan\n"));
        /* a "new process": the file's choice, nothing measured */
        for (int pass = 0; pass < 2; pass++) {
            ks__auto_forget();
            g_auto_logs = g_auto_known = 0;
            assert_int_equal(ks_session_create(m, &d, &s), KS_STATUS_OK);
            assert_int_equal(ks_session_backend(s), first);
            assert_int_equal(g_auto_logs, 0);
            assert_int_equal(g_auto_known, 1);
            float want[210], got[210];
            ks_session *cpu = NULL;
            assert_int_equal(ks_session_create(m, NULL, &cpu), KS_STATUS_OK);
            run(cpu, want);
            run(s, got);
            expect_same(want, got);
            ks_session_destroy(cpu);
            ks_session_destroy(s);
            if (pass == 0) { /* the other choice, written by hand, is obeyed */
                f = fopen(file, "rb");
                n = fread(text, 1, sizeof(text) - 1, f);
                fclose(f);
                text[n] = '\0';
                char *tab = strrchr(text, '\t');
                assert_non_null(tab);
                first = first == KS_BACKEND_CPU ? KS_BACKEND_VULKAN : KS_BACKEND_CPU;
                snprintf(tab, sizeof(text) - (size_t)(tab - text), "\t%s\n",
                         ks_backend_string(first));
                f = fopen(file, "wb");
                fputs(text, f);
                fclose(f);
            }
        }
        /* a damaged file (a truncated last line) is ignored: measured again and rewritten */
        f = fopen(file, "rb");
        n = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        f = fopen(file, "wb");
        fwrite(text, 1, n - 1, f);
        fclose(f);
        ks__auto_forget();
        g_auto_logs = g_auto_known = 0;
        assert_int_equal(ks_session_create(m, &d, &s), KS_STATUS_OK);
        ks_session_destroy(s);
        assert_true(g_auto_logs >= 1);
        assert_int_equal(g_auto_known, 0);
        f = fopen(file, "rb");
        n = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        text[n] = '\0';
        assert_true(n > 0 && text[n - 1] == '\n');
        /* another thread count is another key: measured, and both kept */
        ks_session_desc d1 = d;
        d1.num_threads = 1;
        ks__auto_forget();
        g_auto_logs = 0;
        assert_int_equal(ks_session_create(m, &d1, &s), KS_STATUS_OK);
        ks_session_destroy(s);
        assert_true(g_auto_logs >= 1);
        f = fopen(file, "rb");
        n = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        text[n] = '\0';
        assert_non_null(strstr(text, ":t3:p0:"));
        assert_non_null(strstr(text, ":t1:p0:"));
        remove(file);
    }
    char pipe[96];
    snprintf(pipe, sizeof(pipe), "%s.vkpipe", tune); /* the Vulkan sessions' pipeline cache */
    remove(pipe);
    remove(tune);
    assert_int_equal(rmdir(dir), 0);
    ks__auto_forget();
    ks_model_destroy(m);
    ks_log_set(NULL, NULL, KS_LOG_WARN);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_default_and_refusals),
        cmocka_unit_test(test_vulkan),
        cmocka_unit_test(test_auto),
        cmocka_unit_test(test_auto_file),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(g_img);
    return rc;
}
