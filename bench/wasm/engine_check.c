/* Compares the engine's fast kernels with its reference kernels on real models, in whatever
 * build runs it (the WebAssembly SIMD128 kernels under Node: bench/wasm/check.sh; natively it
 * checks the native kernels the same way).
 *
 * Usage: engine_check [--threads N] MODEL.ksm...
 * For each model: deterministic inputs (a fixed pseudo-random pattern in each input's dtype
 * range), one run with the fast kernels and one with the reference kernels (two sessions; the
 * reference one is made after setenv("KS_FORCE_SCALAR") would not work, since the CPU features
 * are read once per process, so the reference outputs come from a second process: --scalar
 * writes them, the default mode reads and compares). Prints one line per output: the relative L2
 * error and the largest absolute difference; exit 1 when a float output's rel L2 is above 1e-4
 * with a largest difference above 1e-5 (fp32 kernels differ from the reference only by summation
 * order and fused multiply-adds; an output of values near 1e-12 has a large rel L2 from rounding
 * alone), or when an integer output differs at all.
 *     engine_check --scalar --dump DIR MODEL...   (reference outputs into DIR)
 *     engine_check --dump DIR MODEL...            (fast kernels, compared with DIR)
 * --runs N also times N more runs of each model and prints the median (ms); --profile then
 * prints the time per op and kernel over those runs (the engine's per-op profiler). */
#include <math.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "kestrel/engine.h"

static uint32_t g_seed = 12345u;
static float next_unit(void) {
    g_seed = g_seed * 1664525u + 1013904223u;
    return (float)(g_seed >> 8) / 16777216.0f; /* [0, 1) */
}

static void fill(ks_tensor *t) {
    size_t n = t->size_bytes;
    switch (t->info.dtype) {
    case KS_DTYPE_F32:
        for (size_t i = 0; i < n / 4; i++)
            ((float *)t->data)[i] = next_unit() * 2.0f - 1.0f;
        break;
    default:
        for (size_t i = 0; i < n; i++)
            ((uint8_t *)t->data)[i] = (uint8_t)(next_unit() * 256.0f);
        break;
    }
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Time per (op, kernel) over the timed runs. */
typedef struct prof_row {
    const char *op, *kernel;
    uint64_t ns;
} prof_row;
static prof_row g_prof[128];
static size_t g_num_prof;

static void on_op(void *user, const ks_op_profile *p) {
    (void)user;
    size_t i = 0;
    while (i < g_num_prof &&
           (strcmp(g_prof[i].op, p->op_name) != 0 || strcmp(g_prof[i].kernel, p->kernel_name) != 0))
        i++;
    if (i == g_num_prof) {
        if (g_num_prof == sizeof(g_prof) / sizeof(g_prof[0])) return;
        g_prof[g_num_prof++] = (prof_row){p->op_name, p->kernel_name, 0};
    }
    g_prof[i].ns += p->elapsed_ns;
}

static int cmp_prof(const void *a, const void *b) {
    uint64_t x = ((const prof_row *)a)->ns, y = ((const prof_row *)b)->ns;
    return x > y ? -1 : x < y;
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int main(int argc, char **argv) {
    int scalar = 0, failed = 0;
    const char *dump = NULL;
    int32_t threads = 1, runs = 0, profile = 0;
    int first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (!strcmp(argv[first], "--scalar"))
            scalar = 1;
        else if (!strcmp(argv[first], "--dump") && first + 1 < argc)
            dump = argv[++first];
        else if (!strcmp(argv[first], "--threads") && first + 1 < argc)
            threads = atoi(argv[++first]);
        else if (!strcmp(argv[first], "--runs") && first + 1 < argc)
            runs = atoi(argv[++first]);
        else if (!strcmp(argv[first], "--profile"))
            profile = 1;
        else {
            fprintf(stderr, "usage: engine_check [--scalar] --dump DIR [--threads N] [--runs N "
                            "[--profile]] MODEL...\n");
            return 2;
        }
    }
    if (!dump || first >= argc) {
        fprintf(stderr, "usage: engine_check [--scalar] --dump DIR [--threads N] [--runs N "
                        "[--profile]] MODEL...\n");
        return 2;
    }
    if (scalar) setenv("KS_FORCE_SCALAR", "1", 1); /* before the engine reads the CPU features */
    for (int m = first; m < argc; m++) {
        ks_model *model = NULL;
        ks_session *s = NULL;
        ks_session_desc sd = {.num_threads = threads};
        if (ks_model_load_file(argv[m], NULL, &model) || ks_session_create(model, &sd, &s) ||
            ks_session_reshape(s, NULL)) {
            fprintf(stderr, "%s: %s\n", argv[m], ks_last_error(s ? (const void *)s : NULL));
            return 1;
        }
        g_seed = 12345u;
        for (uint32_t i = 0; i < ks_model_num_inputs(model); i++) {
            ks_tensor t;
            if (ks_session_input(s, i, &t) == KS_STATUS_OK) fill(&t);
        }
        if (ks_session_run(s)) {
            fprintf(stderr, "%s: run: %s\n", argv[m], ks_last_error(s));
            return 1;
        }
        if (runs > 0) {
            double *t = malloc(sizeof(double) * (size_t)runs);
            if (!t) return 1;
            for (int r = 0; r < runs; r++) {
                double t0 = now_ms();
                if (ks_session_run(s)) return 1;
                t[r] = now_ms() - t0;
            }
            qsort(t, (size_t)runs, sizeof(double), cmp_double);
            printf("%-40s median %.3f ms over %d runs\n", base_name(argv[m]), t[runs / 2], runs);
            free(t);
            if (profile) {
                g_num_prof = 0;
                ks_session_set_profiler(s, on_op, NULL);
                for (int r = 0; r < runs; r++)
                    if (ks_session_run(s)) return 1;
                ks_session_set_profiler(s, NULL, NULL);
                qsort(g_prof, g_num_prof, sizeof(prof_row), cmp_prof);
                for (size_t i = 0; i < g_num_prof && i < 12; i++)
                    printf("    %-22s %-34s %8.3f ms/run\n", g_prof[i].op, g_prof[i].kernel,
                           (double)g_prof[i].ns * 1e-6 / runs);
            }
        }
        for (uint32_t o = 0; o < ks_model_num_outputs(model); o++) {
            ks_tensor t;
            if (ks_session_output(s, o, &t) || !t.data) continue;
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s.%u.bin", dump, base_name(argv[m]), o);
            if (scalar) {
                FILE *f = fopen(path, "wb");
                if (!f || fwrite(t.data, 1, t.size_bytes, f) != t.size_bytes) {
                    fprintf(stderr, "cannot write %s\n", path);
                    return 1;
                }
                fclose(f);
                continue;
            }
            FILE *f = fopen(path, "rb");
            uint8_t *ref = malloc(t.size_bytes ? t.size_bytes : 1);
            if (!f || !ref || fread(ref, 1, t.size_bytes, f) != t.size_bytes) {
                fprintf(stderr, "cannot read %s (run with --scalar first)\n", path);
                return 1;
            }
            fclose(f);
            double num = 0, den = 0, max_abs = 0;
            size_t bytes_diff = 0;
            if (t.info.dtype == KS_DTYPE_F32) {
                const float *a = t.data, *b = (const float *)ref;
                for (size_t i = 0; i < t.size_bytes / 4; i++) {
                    double d = (double)a[i] - (double)b[i];
                    num += d * d;
                    den += (double)b[i] * (double)b[i];
                    if (fabs(d) > max_abs || d != d) max_abs = d != d ? INFINITY : fabs(d);
                }
            } else {
                for (size_t i = 0; i < t.size_bytes; i++)
                    bytes_diff += ((const uint8_t *)t.data)[i] != ref[i];
            }
            double rel = den > 0 ? sqrt(num / den) : sqrt(num);
            int bad =
                t.info.dtype == KS_DTYPE_F32 ? !(rel <= 1e-4 || max_abs <= 1e-5) : bytes_diff != 0;
            printf("%-40s output %u: %s rel L2 %.2e, max abs %.2e%s\n", base_name(argv[m]), o,
                   t.info.dtype == KS_DTYPE_F32 ? "f32" : "int", rel, max_abs, bad ? "  FAIL" : "");
            if (t.info.dtype != KS_DTYPE_F32 && bytes_diff)
                printf("    %zu of %zu bytes differ\n", bytes_diff, t.size_bytes);
            failed |= bad;
            free(ref);
        }
        ks_session_destroy(s);
        ks_model_destroy(model);
    }
    return failed;
}
