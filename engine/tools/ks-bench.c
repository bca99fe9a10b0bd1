/* ks-bench MODEL.ksm [--threads N] [--runs R] [--warmup W] [--seed S] [--input NAME=FILE.npy]
 *                    [--shape NAME=1x3x224x224] [--range LO:HI] [--json] [--profile]
 * [--profile-nodes] Times ks_session_run on one model: inputs are filled once with seeded random
 * data (or read from .npy files), the session is reshaped once, W untimed runs warm caches and the
 * thread pool, then R runs are timed one by one with a monotonic clock. Prints min/median/max
 * latency.
 *
 * --json prints one JSON object as the LAST line of stdout (machine-readable; other lines are
 * for people). --profile adds a second pass of R runs with the per-op profiler installed, so the
 * profiler's own overhead never shows in the latency figures, and prints per-op totals (median
 * over runs) grouped by op and kernel; --profile-nodes adds one row per node, slowest first.
 *
 * The inputs (random data, .npy files, shapes) and the timing, statistics and profile tables are
 * the tool library's (engine/tools/common: bench_inputs.h, bench_stats.h). Dynamic dimensions are
 * 1 unless --shape or an .npy input gives them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_inputs.h"
#include "bench_stats.h"
#include "base/cpuinfo.h"
#include "kestrel/engine.h"
#include "key_file.h"
#include "precision.h"

#define MAX_INPUTS 64
#define MAX_RUNS 1000000

typedef struct options {
    const char *model_path;
    int threads, runs, warmup;
    int gap_us; /* --gap-ms: idle time before each run, as between camera frames */
    uint64_t seed;
    int json, profile;
    int profile_nodes; /* --profile-nodes: also one row per node */
    ks__bench_range range;
    const char *in_specs[MAX_INPUTS]; /* NAME=FILE.npy or FILE.npy by position */
    int num_in_specs;
    const char *shape_specs[MAX_INPUTS]; /* NAME=AxBxC */
    int num_shape_specs;
    ks_tune_mode tune;                    /* --tune off|fast|full */
    ks_precision precision;               /* --precision stored|f32|fastest|fp16-storage|fp16 */
    const char *tune_cache;               /* --tune-cache FILE */
    const char *key_file;                 /* --key-file KEY: the model is encrypted */
    const char *skip_outputs[MAX_INPUTS]; /* --skip-output NAME|INDEX */
    int num_skip_outputs;
    ks_backend backend; /* --backend cpu|vulkan|opencl|auto */
} options;

static void usage(void) {
    fprintf(stderr,
            "usage: ks-bench MODEL.ksm [--threads N] [--runs R] [--warmup W] [--seed S]\n"
            "                [--input NAME=FILE.npy] [--shape NAME=1x3x224x224] [--range LO:HI]\n"
            "                [--json] [--profile] [--tune off|fast|full] [--tune-cache FILE]\n"
            "                [--key-file KEY]\n"
            "                [--precision stored|f32|fastest|fp16-storage|fp16]\n"
            "                [--skip-output NAME|INDEX]... [--backend cpu|vulkan|auto]\n"
            "  --threads N   session threads (default 1)\n"
            "  --runs R      timed runs (default 20)\n"
            "  --warmup W    untimed runs first (default 3)\n"
            "  --gap-ms G    sleep G ms before each run, as between camera frames (default 0:\n"
            "                back to back); idle worker threads then pay their wake-up\n"
            "  --seed S      seed of the random inputs (default 1)\n"
            "  --input       use real data for an input (by name, or by position without NAME=)\n"
            "  --shape       set the shape of an input with dynamic dimensions\n"
            "  --range       uniform range of random float inputs (default: per-input heuristic)\n"
            "  --json        print one JSON object as the last line\n"
            "  --profile     per-op times, FLOPs and kernels (a separate pass of R runs)\n"
            "  --profile-nodes  as --profile, plus one row per node, slowest first\n"
            "  --tune M      kernel choice: off (cost model, default), fast (time the top\n"
            "                candidates per op shape at reshape), full (time all of them)\n"
            "  --tune-cache  file that keeps tuning results across runs\n"
            "  --key-file    key of an encrypted model (ks-protect)\n"
            "  --precision   int8 layers of a quantized model: as stored (default), all in\n"
            "                fp32, or per layer the faster of the two (timed at create);\n"
            "                fp16-storage: float tensors in fp16 on a GPU backend that can\n"
            "                (fp32 arithmetic), fp16: fp16 arithmetic too where the GPU has\n"
            "                it (sums in fp32); on the CPU both run as stored\n"
            "  --skip-output an output the caller does not read: the nodes that only it needs\n"
            "                are not run (ks_session_set_output_needed); repeatable\n"
            "  --backend     where the session runs: cpu (default), vulkan (the ops it supports\n"
            "                on the GPU, the rest on the CPU) or auto (the faster, timed at\n"
            "                create)\n");
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

static int parse_range(const char *s, float *lo, float *hi) {
    char *end = NULL;
    double a = strtod(s, &end);
    if (end == s || *end != ':') return -1;
    const char *p = end + 1;
    double b = strtod(p, &end);
    if (end == p || *end || !(a < b) || !isfinite(a) || !isfinite(b)) return -1;
    *lo = (float)a;
    *hi = (float)b;
    return 0;
}

static int parse_args(int argc, char **argv, options *opt) {
    memset(opt, 0, sizeof(*opt));
    opt->threads = 1;
    opt->runs = 20;
    opt->warmup = 3;
    opt->seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (strcmp(a, "--threads") == 0 && has_value) {
            if (parse_int(argv[++i], 1, 1024, &opt->threads)) goto bad_value;
        } else if (strcmp(a, "--runs") == 0 && has_value) {
            if (parse_int(argv[++i], 1, MAX_RUNS, &opt->runs)) goto bad_value;
        } else if (strcmp(a, "--warmup") == 0 && has_value) {
            if (parse_int(argv[++i], 0, MAX_RUNS, &opt->warmup)) goto bad_value;
        } else if (strcmp(a, "--gap-ms") == 0 && has_value) {
            char *end = NULL;
            const char *v = argv[++i];
            double gap_ms = strtod(v, &end);
            if (!*v || *end || !(gap_ms >= 0.0 && gap_ms <= 10000.0)) goto bad_value;
            opt->gap_us = (int)(gap_ms * 1000.0 + 0.5);
        } else if (strcmp(a, "--seed") == 0 && has_value) {
            char *end = NULL;
            const char *v = argv[++i];
            opt->seed = strtoull(v, &end, 0);
            if (!*v || *end) goto bad_value;
        } else if (strcmp(a, "--range") == 0 && has_value) {
            if (parse_range(argv[++i], &opt->range.lo, &opt->range.hi)) goto bad_value;
            opt->range.given = true;
        } else if (strcmp(a, "--input") == 0 && has_value) {
            if (opt->num_in_specs == MAX_INPUTS) goto too_many;
            opt->in_specs[opt->num_in_specs++] = argv[++i];
        } else if (strcmp(a, "--backend") == 0 && has_value) {
            if (ks_backend_parse(argv[++i], &opt->backend)) goto bad_value;
        } else if (strcmp(a, "--skip-output") == 0 && has_value) {
            if (opt->num_skip_outputs == MAX_INPUTS) goto too_many;
            opt->skip_outputs[opt->num_skip_outputs++] = argv[++i];
        } else if (strcmp(a, "--shape") == 0 && has_value) {
            if (opt->num_shape_specs == MAX_INPUTS) goto too_many;
            const char *v = argv[++i];
            if (!strchr(v, '=')) goto bad_value;
            opt->shape_specs[opt->num_shape_specs++] = v;
        } else if (strcmp(a, "--tune") == 0 && has_value) {
            const char *v = argv[++i];
            if (strcmp(v, "off") == 0)
                opt->tune = KS_TUNE_OFF;
            else if (strcmp(v, "fast") == 0)
                opt->tune = KS_TUNE_FAST;
            else if (strcmp(v, "full") == 0)
                opt->tune = KS_TUNE_FULL;
            else
                goto bad_value;
        } else if (strcmp(a, "--precision") == 0 && has_value) {
            if (!ks__precision_parse(argv[++i], &opt->precision)) goto bad_value;
        } else if (strcmp(a, "--tune-cache") == 0 && has_value) {
            opt->tune_cache = argv[++i];
        } else if (strcmp(a, "--key-file") == 0 && has_value) {
            opt->key_file = argv[++i];
        } else if (strcmp(a, "--json") == 0) {
            opt->json = 1;
        } else if (strcmp(a, "--profile") == 0) {
            opt->profile = 1;
        } else if (strcmp(a, "--profile-nodes") == 0) {
            opt->profile = opt->profile_nodes = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage();
            exit(0);
        } else if (a[0] != '-' && !opt->model_path) {
            opt->model_path = a;
        } else {
            fprintf(stderr, "ks-bench: unexpected argument '%s'\n", a);
            usage();
            return -1;
        }
        continue;
    bad_value:
        fprintf(stderr, "ks-bench: bad value '%s' for %s\n", argv[i], a);
        return -1;
    too_many:
        fprintf(stderr, "ks-bench: more than %d %s options\n", MAX_INPUTS, a);
        return -1;
    }
    if (!opt->model_path) {
        usage();
        return -1;
    }
    return 0;
}

static void format_shape(const ks_tensor_shape *s, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    for (int d = 0; d < s->rank && len < cap; d++) {
        int n = snprintf(buf + len, cap - len, "%s%lld", d ? "x" : "", (long long)s->dims[d]);
        if (n > 0) len += (size_t)n;
    }
}

/* Engine log: the precision plan's summary goes with the report, warnings to stderr. */
static void on_log(void *user, ks_log_level level, const char *message) {
    (void)user;
    if (strncmp(message, "precision", 9) == 0)
        printf("%s\n", message);
    else if (level <= KS_LOG_WARN)
        fprintf(stderr, "ks-bench: %s\n", message);
}

int main(int argc, char **argv) {
    options opt;
    if (parse_args(argc, argv, &opt)) return 2;
    ks_log_set(on_log, NULL, KS_LOG_INFO);

    int rc = 1;
    ks_model *model = NULL;
    ks_session *s = NULL;
    ks_npy npys[MAX_INPUTS];
    ks_tensor_shape shapes[MAX_INPUTS];
    double *times_ms = NULL;
    ks__bench_profile ps = {0};
    ks__bench_group *groups = NULL;
    ks__bench_device dev = {0};
    char err[1024], isa[128];
    ks__bench_summary sum = {.model_path = opt.model_path,
                             .isa = isa,
                             .threads = opt.threads,
                             .runs = opt.runs,
                             .warmup = opt.warmup,
                             .seed = opt.seed,
                             .profiled = opt.profile};
    memset(npys, 0, sizeof(npys));

    uint8_t key[KS_KEY_FILE_BYTES];
    ks_model_desc model_desc = {0};
    if (opt.key_file) {
        if (ks_key_file_read(opt.key_file, key, err, sizeof(err))) {
            fprintf(stderr, "ks-bench: %s\n", err);
            return 1;
        }
        model_desc.key = key;
        model_desc.key_bytes = sizeof(key);
    }
    double t0 = ks__bench_now_ms();
    ks_status st = ks_model_load_file(opt.model_path, &model_desc, &model);
    memset(key, 0, sizeof(key));
    if (st) {
        fprintf(stderr, "ks-bench: %s: %s: %s\n", opt.model_path, ks_status_string(st),
                ks_last_error(NULL));
        goto done;
    }
    sum.load_ms = ks__bench_now_ms() - t0;
    uint32_t nin = ks_model_num_inputs(model);
    if (nin > MAX_INPUTS) {
        fprintf(stderr, "ks-bench: the model has %u inputs; at most %d are supported\n", nin,
                MAX_INPUTS);
        goto done;
    }
    ks__bench_input_specs specs = {opt.in_specs, opt.num_in_specs, opt.shape_specs,
                                   opt.num_shape_specs};
    if (ks__bench_prepare_inputs(model, &specs, npys, shapes, err, sizeof(err))) goto fail;

    t0 = ks__bench_now_ms();
    st = ks_session_create(model,
                           &(ks_session_desc){.num_threads = opt.threads,
                                              .precision = opt.precision,
                                              .tune = opt.tune,
                                              .tune_cache_path = opt.tune_cache,
                                              .backend = opt.backend},
                           &s);
    sum.create_ms = ks__bench_now_ms() - t0;
    if (st) {
        fprintf(stderr, "ks-bench: session: %s: %s\n", ks_status_string(st), ks_last_error(NULL));
        goto done;
    }
    for (int k = 0; k < opt.num_skip_outputs; k++) {
        const char *want = opt.skip_outputs[k];
        uint32_t nout = ks_model_num_outputs(model), o = nout;
        for (uint32_t j = 0; j < nout && o == nout; j++) {
            ks_tensor_info oi;
            if (ks_model_output_info(model, j, &oi) == KS_STATUS_OK && oi.name &&
                strcmp(oi.name, want) == 0)
                o = j;
        }
        int idx = -1;
        if (o == nout && parse_int(want, 0, (int)nout - 1, &idx) == 0) o = (uint32_t)idx;
        if (o == nout) {
            fprintf(stderr, "ks-bench: --skip-output %s: the model has no such output\n", want);
            goto done;
        }
        ks_session_set_output_needed(s, o, 0);
    }
    t0 = ks__bench_now_ms();
    st = ks_session_reshape(s, shapes);
    if (st) {
        fprintf(stderr, "ks-bench: reshape: %s: %s\n", ks_status_string(st), ks_last_error(s));
        goto done;
    }
    sum.reshape_ms = ks__bench_now_ms() - t0;
    sum.backend = ks_backend_string(ks_session_backend(s));
    if (ks__bench_fill_inputs(s, nin, npys, &opt.range, opt.seed, err, sizeof(err))) goto fail;

    if (!(times_ms = calloc((size_t)opt.runs, sizeof(double)))) {
        fprintf(stderr, "ks-bench: out of memory\n");
        goto done;
    }
    if (ks__bench_time_runs(s, opt.warmup, opt.runs, opt.gap_us, times_ms, err, sizeof(err)))
        goto fail;
    ks__bench_stats_of(times_ms, opt.runs, &sum.latency);
    if (opt.profile) {
        if (ks__bench_profile_runs(s, opt.runs, &ps, err, sizeof(err))) goto fail;
        if ((sum.num_groups = ks__bench_profile_groups(&ps, &groups)) < 0) goto oom;
        sum.groups = groups;
        if (ks__bench_profile_device(&ps, &dev) < 0) goto oom;
        sum.device = &dev;
    }

    ks__isa_string(ks__cpu_isa(), isa, sizeof(isa));
    printf("model    %s\n", opt.model_path);
    for (uint32_t i = 0; i < nin; i++) {
        ks_tensor t;
        char dims[160];
        ks_session_input(s, i, &t);
        format_shape(&t.info.shape, dims, sizeof(dims));
        printf("input    %s %s %s (%s)\n", t.info.name, ks_dtype_string(t.info.dtype), dims,
               npys[i].data ? "npy" : "random");
    }
    printf("kestrel  %s\ncpu      %s [%s]\nthreads  %d\nbackend  %s\n", ks_version_string(),
           ks__cpu_name(), isa, opt.threads, ks_backend_string(ks_session_backend(s)));
    printf("load     %.3f ms\ncreate   %.3f ms\nreshape  %.3f ms\n", sum.load_ms, sum.create_ms,
           sum.reshape_ms);
    printf("runs     %d (after %d warmup)\n", opt.runs, opt.warmup);
    printf("latency  min %.3f ms  median %.3f ms  mean %.3f ms  max %.3f ms\n", sum.latency.min_ms,
           sum.latency.median_ms, sum.latency.mean_ms, sum.latency.max_ms);
    if (opt.profile) ks__bench_print_groups(stdout, groups, sum.num_groups);
    if (opt.profile && dev.partitions)
        printf("\ndevice   %u partition%s, %u dispatches per run; medians over the profiled runs:\n"
               "         kernels %.3f ms, outside them %.3f ms (upload %.3f, submit %.3f, "
               "download %.3f ms, the rest host nodes and waiting)\n",
               dev.partitions, dev.partitions == 1 ? "" : "s", dev.dispatches, dev.kernels_ms,
               dev.outside_ms, dev.upload_ms, dev.submit_ms, dev.download_ms);
    if (opt.profile_nodes && ks__bench_print_nodes(stdout, &ps) < 0) goto oom;
    if (opt.json) ks__bench_print_json(stdout, &sum);
    rc = 0;
    goto done;
oom:
    snprintf(err, sizeof(err), "out of memory while profiling");
fail:
    fprintf(stderr, "ks-bench: %s\n", err);
done:
    ks__bench_profile_free(&ps);
    free(groups);
    free(times_ms);
    for (int i = 0; i < MAX_INPUTS; i++)
        ks_npy_free(&npys[i]);
    ks_session_destroy(s);
    ks_model_destroy(model);
    return rc;
}
