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
 * Random data: float inputs that look like images (rank 4 with 1, 3 or 4 channels in the last or
 * second position) are uniform in [0,1], which is inside the valid range of models normalised to
 * [0,1] as well as [-1,1]; other float inputs are uniform in [-1,1]; u8/i8 use their full range
 * (quantized inputs are meant to be fed raw); integer index-like inputs are 0; bool is 0/1.
 * --range LO:HI overrides the float range. Dynamic dimensions are 1 unless --shape or an .npy
 * input gives them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "impl.h"
#include "kestrel/engine.h"
#include "key_file.h"
#include "precision.h"
#include "npy.h"

#define MAX_INPUTS 64
#define MAX_RUNS 1000000

typedef struct options {
    const char *model_path;
    int threads, runs, warmup;
    int gap_us; /* --gap-ms: idle time before each run, as between camera frames */
    uint64_t seed;
    int json, profile;
    int profile_nodes; /* --profile-nodes: also one row per node */
    int has_range;
    float range_lo, range_hi;
    const char *in_specs[MAX_INPUTS]; /* NAME=FILE.npy or FILE.npy by position */
    int num_in_specs;
    const char *shape_specs[MAX_INPUTS]; /* NAME=AxBxC */
    int num_shape_specs;
    ks_tune_mode tune;      /* --tune off|fast|full */
    ks_precision precision; /* --precision stored|f32|fastest */
    const char *tune_cache; /* --tune-cache FILE */
    const char *key_file;   /* --key-file KEY: the model is encrypted */
} options;

/* One graph node as seen by the profiler. */
typedef struct node_prof {
    int seen;
    const char *op_name;
    const char *node_name;
    const char *kernel_name;
    uint64_t flops;
    uint64_t *samples_ns; /* [runs], per timed profile run */
} node_prof;

typedef struct prof_state {
    node_prof *nodes;
    uint32_t num_nodes, cap_nodes;
    int runs;
    int current_run; /* -1 during warmup */
    int failed;      /* out of memory while growing the table */
} prof_state;

/* One output row of the profile: all nodes with the same op and kernel. */
typedef struct prof_group {
    const char *op_name;
    const char *kernel_name;
    uint32_t num_nodes;
    uint64_t flops;
    double median_ms;
} prof_group;

static void usage(void) {
    fprintf(stderr,
            "usage: ks-bench MODEL.ksm [--threads N] [--runs R] [--warmup W] [--seed S]\n"
            "                [--input NAME=FILE.npy] [--shape NAME=1x3x224x224] [--range LO:HI]\n"
            "                [--json] [--profile] [--tune off|fast|full] [--tune-cache FILE]\n"
            "                [--key-file KEY] [--precision stored|f32|fastest]\n"
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
            "                fp32, or per layer the faster of the two (timed at create)\n");
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void sleep_us(int us) {
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* splitmix64: tiny, seedable, and good enough for benchmark inputs. */
static uint64_t rng_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float rng_unit(uint64_t *state) {
    return (float)(rng_next(state) >> 40) * (1.0f / 16777216.0f); /* [0,1) with 24 bits */
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

/* "1x3x224x224" -> shape. */
static int parse_dims(const char *s, ks_tensor_shape *shape) {
    shape->rank = 0;
    const char *p = s;
    while (*p) {
        if (shape->rank == KS_MAX_RANK) return -1;
        char *end = NULL;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || v > (1ll << 31)) return -1;
        shape->dims[shape->rank++] = v;
        if (*end == 'x' || *end == 'X' || *end == ',') {
            if (!end[1]) return -1;
            p = end + 1;
        } else if (*end) {
            return -1;
        } else {
            p = end;
        }
    }
    return shape->rank > 0 ? 0 : -1;
}

/* Value of "NAME=VALUE" specs for `name`, or NULL. */
static const char *spec_for(const char *const *specs, int num_specs, const char *name) {
    size_t len = strlen(name);
    for (int k = 0; k < num_specs; k++) {
        const char *eq = strrchr(specs[k], '=');
        if (eq && (size_t)(eq - specs[k]) == len && strncmp(specs[k], name, len) == 0)
            return eq + 1;
    }
    return NULL;
}

static int looks_like_image(const ks_tensor_shape *shape) {
    if (shape->rank != 4) return 0;
    int64_t last = shape->dims[3], second = shape->dims[1];
    return last == 1 || last == 3 || last == 4 || second == 1 || second == 3 || second == 4;
}

static void fill_random(const ks_tensor *t, const options *opt, uint64_t *rng) {
    size_t elem = ks_dtype_size(t->info.dtype);
    size_t n = elem ? t->size_bytes / elem : 0;
    float lo = -1.0f, hi = 1.0f;
    if (opt->has_range) {
        lo = opt->range_lo;
        hi = opt->range_hi;
    } else if (looks_like_image(&t->info.shape)) {
        lo = 0.0f;
    }
    switch (t->info.dtype) {
    case KS_DTYPE_F32: {
        float *p = t->data;
        for (size_t i = 0; i < n; i++)
            p[i] = lo + (hi - lo) * rng_unit(rng);
        break;
    }
    case KS_DTYPE_U8:
    case KS_DTYPE_I8: {
        uint8_t *p = t->data;
        for (size_t i = 0; i < n; i++)
            p[i] = (uint8_t)(rng_next(rng) >> 56);
        break;
    }
    case KS_DTYPE_BOOL: {
        uint8_t *p = t->data;
        for (size_t i = 0; i < n; i++)
            p[i] = (uint8_t)(rng_next(rng) >> 63);
        break;
    }
    default:
        /* f16 bit patterns and index-like integers: zeros are always valid */
        memset(t->data, 0, t->size_bytes);
        break;
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v in place. */
static double median_of(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static const char *profile_kernel_name(const ks_op_profile *p) {
    return p->kernel_name ? p->kernel_name : p->op_name;
}

static void on_profile(void *user, const ks_op_profile *p) {
    prof_state *ps = user;
    if (ps->failed) return;
    if (p->node_index >= ps->cap_nodes) {
        /* grows only during the warmup run; timed profile runs find the table sized */
        uint32_t cap = ps->cap_nodes ? ps->cap_nodes : 64;
        while (cap <= p->node_index)
            cap *= 2;
        node_prof *nodes = realloc(ps->nodes, cap * sizeof(*nodes));
        if (!nodes) {
            ps->failed = 1;
            return;
        }
        memset(nodes + ps->cap_nodes, 0, (cap - ps->cap_nodes) * sizeof(*nodes));
        ps->nodes = nodes;
        ps->cap_nodes = cap;
    }
    node_prof *np = &ps->nodes[p->node_index];
    if (!np->seen) {
        np->samples_ns = calloc((size_t)ps->runs, sizeof(uint64_t));
        if (!np->samples_ns) {
            ps->failed = 1;
            return;
        }
        np->seen = 1;
        np->op_name = p->op_name;
        np->node_name = p->node_name;
        np->kernel_name = profile_kernel_name(p);
        np->flops = p->flops;
        if (p->node_index >= ps->num_nodes) ps->num_nodes = p->node_index + 1;
    }
    if (ps->current_run >= 0) np->samples_ns[ps->current_run] += p->elapsed_ns;
}

static void json_string(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static int group_cmp(const void *a, const void *b) {
    const prof_group *x = a, *y = b;
    return (x->median_ms < y->median_ms) - (x->median_ms > y->median_ms);
}

/* Groups profiled nodes by (op, kernel); each group's time is the median over runs of the
 * group's per-run total. Returns the number of groups written to *groups_out (malloc'ed). */
static int build_groups(const prof_state *ps, prof_group **groups_out) {
    prof_group *groups = calloc(ps->num_nodes ? ps->num_nodes : 1, sizeof(*groups));
    double *per_run = calloc((size_t)ps->runs, sizeof(double));
    int num_groups = 0;
    if (!groups || !per_run) goto error;
    for (uint32_t i = 0; i < ps->num_nodes; i++) {
        const node_prof *np = &ps->nodes[i];
        if (!np->seen) continue;
        int g = 0;
        while (g < num_groups && !(strcmp(groups[g].op_name, np->op_name) == 0 &&
                                   strcmp(groups[g].kernel_name, np->kernel_name) == 0))
            g++;
        if (g == num_groups) {
            groups[g].op_name = np->op_name;
            groups[g].kernel_name = np->kernel_name;
            num_groups++;
        }
        groups[g].num_nodes++;
        groups[g].flops += np->flops;
    }
    for (int g = 0; g < num_groups; g++) {
        for (int r = 0; r < ps->runs; r++) {
            uint64_t total_ns = 0;
            for (uint32_t i = 0; i < ps->num_nodes; i++) {
                const node_prof *np = &ps->nodes[i];
                if (np->seen && strcmp(groups[g].op_name, np->op_name) == 0 &&
                    strcmp(groups[g].kernel_name, np->kernel_name) == 0)
                    total_ns += np->samples_ns[r];
            }
            per_run[r] = (double)total_ns * 1e-6;
        }
        groups[g].median_ms = median_of(per_run, ps->runs);
    }
    qsort(groups, (size_t)num_groups, sizeof(*groups), group_cmp);
    free(per_run);
    *groups_out = groups;
    return num_groups;
error:
    free(groups);
    free(per_run);
    return -1;
}

typedef struct node_row {
    uint32_t index;
    double median_ms;
} node_row;

static int node_row_cmp(const void *a, const void *b) {
    const node_row *x = a, *y = b;
    return (x->median_ms < y->median_ms) - (x->median_ms > y->median_ms);
}

/* One row per profiled node (median over the timed runs), slowest first: the view that finds
 * the one layer of a group that is slow. */
static int print_node_profile(const prof_state *ps) {
    node_row *rows = calloc(ps->num_nodes ? ps->num_nodes : 1, sizeof(*rows));
    double *samples_ms = calloc((size_t)ps->runs, sizeof(double));
    if (!rows || !samples_ms) {
        free(rows);
        free(samples_ms);
        return -1;
    }
    uint32_t num_rows = 0;
    for (uint32_t i = 0; i < ps->num_nodes; i++) {
        const node_prof *np = &ps->nodes[i];
        if (!np->seen) continue;
        for (int r = 0; r < ps->runs; r++)
            samples_ms[r] = (double)np->samples_ns[r] * 1e-6;
        rows[num_rows].index = i;
        rows[num_rows].median_ms = median_of(samples_ms, ps->runs);
        num_rows++;
    }
    qsort(rows, num_rows, sizeof(*rows), node_row_cmp);
    printf("\nper-node profile (median over runs, slowest first):\n");
    printf("%5s  %-10s %-34s %10s %10s %9s  %s\n", "node", "op", "kernel", "ms", "MFLOP", "GFLOP/s",
           "name");
    for (uint32_t k = 0; k < num_rows; k++) {
        const node_prof *np = &ps->nodes[rows[k].index];
        double ms = rows[k].median_ms;
        /* TFLite names list every folded op; 60 characters identify the node */
        const char *name = np->node_name ? np->node_name : "";
        int name_len = (int)strlen(name);
        printf("%5u  %-10s %-34s %10.4f %10.2f %9.2f  %.*s%s\n", rows[k].index, np->op_name,
               np->kernel_name, ms, (double)np->flops * 1e-6,
               ms > 0 ? (double)np->flops / (ms * 1e6) : 0.0, name_len > 60 ? 57 : name_len, name,
               name_len > 60 ? "..." : "");
    }
    free(rows);
    free(samples_ms);
    return 0;
}

static void print_profile(const prof_group *groups, int num_groups) {
    double total_ms = 0.0;
    uint64_t total_flops = 0;
    for (int g = 0; g < num_groups; g++) {
        total_ms += groups[g].median_ms;
        total_flops += groups[g].flops;
    }
    int op_w = 5, kernel_w = 6; /* at least the header widths */
    for (int g = 0; g < num_groups; g++) {
        int n = (int)strlen(groups[g].op_name), k = (int)strlen(groups[g].kernel_name);
        op_w = n > op_w && n < 64 ? n : op_w;
        kernel_w = k > kernel_w && k < 96 ? k : kernel_w;
    }
    printf("\nper-op profile (median over runs of each group's per-run total):\n");
    printf("%-*s  %-*s %5s %10s %6s %10s %9s\n", op_w, "op", kernel_w, "kernel", "nodes", "ms", "%",
           "MFLOP", "GFLOP/s");
    for (int g = 0; g < num_groups; g++) {
        const prof_group *pg = &groups[g];
        double gflops_per_s = pg->median_ms > 0 ? (double)pg->flops / (pg->median_ms * 1e6) : 0;
        printf("%-*s  %-*s %5u %10.3f %6.1f %10.2f %9.2f\n", op_w, pg->op_name, kernel_w,
               pg->kernel_name, pg->num_nodes, pg->median_ms,
               total_ms > 0 ? 100.0 * pg->median_ms / total_ms : 0, (double)pg->flops * 1e-6,
               gflops_per_s);
    }
    printf("%-*s  %-*s %5s %10.3f %6.1f %10.2f %9.2f\n", op_w, "total", kernel_w, "", "", total_ms,
           100.0, (double)total_flops * 1e-6,
           total_ms > 0 ? (double)total_flops / (total_ms * 1e6) : 0.0);
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
            if (parse_range(argv[++i], &opt->range_lo, &opt->range_hi)) goto bad_value;
            opt->has_range = 1;
        } else if (strcmp(a, "--input") == 0 && has_value) {
            if (opt->num_in_specs == MAX_INPUTS) goto too_many;
            opt->in_specs[opt->num_in_specs++] = argv[++i];
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

/* Decides every input's shape (npy file, --shape, or the model's own with dynamic dims = 1) and
 * reads the npy files. */
static int prepare_inputs(const options *opt, const ks_model *model, ks_npy *npys,
                          ks_tensor_shape *shapes) {
    uint32_t nin = ks_model_num_inputs(model);
    char err[1024];
    int positional = 0;
    for (int k = 0; k < opt->num_in_specs; k++)
        positional += strchr(opt->in_specs[k], '=') == 0;
    if (positional && positional != opt->num_in_specs) {
        fprintf(stderr, "ks-bench: --input: use NAME=FILE for all inputs or for none\n");
        return -1;
    }
    if (opt->num_in_specs > (int)nin) {
        fprintf(stderr, "ks-bench: %d --input given, the model has %u inputs\n", opt->num_in_specs,
                nin);
        return -1;
    }
    for (int k = 0; k < opt->num_in_specs + opt->num_shape_specs; k++) {
        const char *spec =
            k < opt->num_in_specs ? opt->in_specs[k] : opt->shape_specs[k - opt->num_in_specs];
        const char *eq = strrchr(spec, '=');
        if (!eq) continue;
        int found = 0;
        for (uint32_t i = 0; i < nin && !found; i++) {
            ks_tensor_info info;
            ks_model_input_info(model, i, &info);
            found = strlen(info.name) == (size_t)(eq - spec) &&
                    strncmp(info.name, spec, (size_t)(eq - spec)) == 0;
        }
        if (!found) {
            fprintf(stderr, "ks-bench: '%s' names no model input\n", spec);
            return -1;
        }
    }
    for (uint32_t i = 0; i < nin; i++) {
        ks_tensor_info info;
        ks_model_input_info(model, i, &info);
        const char *file = positional ? (i < (uint32_t)positional ? opt->in_specs[i] : NULL)
                                      : spec_for(opt->in_specs, opt->num_in_specs, info.name);
        const char *dims = spec_for(opt->shape_specs, opt->num_shape_specs, info.name);
        shapes[i] = info.shape;
        if (file) {
            if (ks_npy_read(file, &npys[i], err, sizeof(err))) {
                fprintf(stderr, "ks-bench: %s\n", err);
                return -1;
            }
            if (npys[i].dtype != info.dtype) {
                fprintf(stderr, "ks-bench: %s is %s, model input '%s' needs %s\n", file,
                        ks_dtype_string(npys[i].dtype), info.name, ks_dtype_string(info.dtype));
                return -1;
            }
            shapes[i] = npys[i].shape;
        } else if (dims) {
            if (parse_dims(dims, &shapes[i])) {
                fprintf(stderr, "ks-bench: bad --shape '%s' for input '%s'\n", dims, info.name);
                return -1;
            }
        } else {
            for (int d = 0; d < shapes[i].rank; d++)
                if (shapes[i].dims[d] < 0) shapes[i].dims[d] = 1;
        }
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
    prof_state ps = {0};
    prof_group *groups = NULL;
    int num_groups = 0;
    memset(npys, 0, sizeof(npys));

    uint8_t key[KS_KEY_FILE_BYTES];
    ks_model_desc model_desc = {0};
    if (opt.key_file) {
        char key_err[512];
        if (ks_key_file_read(opt.key_file, key, key_err, sizeof(key_err))) {
            fprintf(stderr, "ks-bench: %s\n", key_err);
            return 1;
        }
        model_desc.key = key;
        model_desc.key_bytes = sizeof(key);
    }
    double t0 = now_ms();
    ks_status st = ks_model_load_file(opt.model_path, &model_desc, &model);
    memset(key, 0, sizeof(key));
    if (st) {
        fprintf(stderr, "ks-bench: %s: %s: %s\n", opt.model_path, ks_status_string(st),
                ks_last_error(NULL));
        goto done;
    }
    double load_ms = now_ms() - t0;
    uint32_t nin = ks_model_num_inputs(model);
    if (nin > MAX_INPUTS) {
        fprintf(stderr, "ks-bench: the model has %u inputs; at most %d are supported\n", nin,
                MAX_INPUTS);
        goto done;
    }
    if (prepare_inputs(&opt, model, npys, shapes)) goto done;

    t0 = now_ms();
    st = ks_session_create(model,
                           &(ks_session_desc){.num_threads = opt.threads,
                                              .precision = opt.precision,
                                              .tune = opt.tune,
                                              .tune_cache_path = opt.tune_cache},
                           &s);
    double create_ms = now_ms() - t0;
    if (st) {
        fprintf(stderr, "ks-bench: session: %s: %s\n", ks_status_string(st), ks_last_error(NULL));
        goto done;
    }
    t0 = now_ms();
    st = ks_session_reshape(s, shapes);
    if (st) {
        fprintf(stderr, "ks-bench: reshape: %s: %s\n", ks_status_string(st), ks_last_error(s));
        goto done;
    }
    double reshape_ms = now_ms() - t0;

    uint64_t rng = opt.seed;
    for (uint32_t i = 0; i < nin; i++) {
        ks_tensor t;
        if (ks_session_input(s, i, &t)) goto done;
        if (npys[i].data) {
            if (t.size_bytes != npys[i].size_bytes) {
                fprintf(stderr, "ks-bench: input '%s': .npy has %zu bytes, session wants %zu\n",
                        t.info.name, npys[i].size_bytes, t.size_bytes);
                goto done;
            }
            memcpy(t.data, npys[i].data, t.size_bytes);
        } else {
            fill_random(&t, &opt, &rng);
        }
    }

    times_ms = calloc((size_t)opt.runs, sizeof(double));
    if (!times_ms) {
        fprintf(stderr, "ks-bench: out of memory\n");
        goto done;
    }
    for (int r = -opt.warmup; r < opt.runs; r++) {
        if (opt.gap_us > 0) sleep_us(opt.gap_us);
        double start = now_ms();
        st = ks_session_run(s);
        double elapsed = now_ms() - start;
        if (st) {
            fprintf(stderr, "ks-bench: run: %s: %s\n", ks_status_string(st), ks_last_error(s));
            goto done;
        }
        if (r >= 0) times_ms[r] = elapsed;
    }
    double sum_ms = 0.0;
    for (int r = 0; r < opt.runs; r++)
        sum_ms += times_ms[r];
    double mean_ms = sum_ms / opt.runs;
    double median_ms = median_of(times_ms, opt.runs); /* sorts */
    double min_ms = times_ms[0], max_ms = times_ms[opt.runs - 1];

    if (opt.profile) {
        ps.runs = opt.runs;
        ps.current_run = -1;
        ks_session_set_profiler(s, on_profile, &ps);
        /* one untimed run sizes the table, so the timed ones never allocate */
        for (int r = -1; r < opt.runs && !ps.failed; r++) {
            ps.current_run = r;
            st = ks_session_run(s);
            if (st) {
                fprintf(stderr, "ks-bench: run: %s: %s\n", ks_status_string(st), ks_last_error(s));
                goto done;
            }
        }
        ks_session_set_profiler(s, NULL, NULL);
        if (ps.failed || (num_groups = build_groups(&ps, &groups)) < 0) {
            fprintf(stderr, "ks-bench: out of memory while profiling\n");
            goto done;
        }
    }

    char isa[128];
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
    printf("kestrel  %s\ncpu      %s [%s]\nthreads  %d\n", ks_version_string(), ks__cpu_name(), isa,
           opt.threads);
    printf("load     %.3f ms\ncreate   %.3f ms\nreshape  %.3f ms\n", load_ms, create_ms,
           reshape_ms);
    printf("runs     %d (after %d warmup)\n", opt.runs, opt.warmup);
    printf("latency  min %.3f ms  median %.3f ms  mean %.3f ms  max %.3f ms\n", min_ms, median_ms,
           mean_ms, max_ms);
    if (opt.profile) print_profile(groups, num_groups);
    if (opt.profile_nodes && print_node_profile(&ps) < 0) {
        fprintf(stderr, "ks-bench: out of memory while profiling\n");
        goto done;
    }

    if (opt.json) {
        printf("{\"model\":");
        json_string(opt.model_path);
        printf(",\"kestrel_version\":");
        json_string(ks_version_string());
        printf(",\"cpu\":");
        json_string(ks__cpu_name());
        printf(",\"isa\":");
        json_string(isa);
        printf(",\"threads\":%d,\"runs\":%d,\"warmup\":%d,\"seed\":%llu", opt.threads, opt.runs,
               opt.warmup, (unsigned long long)opt.seed);
        printf(",\"load_ms\":%.4f,\"create_ms\":%.4f,\"reshape_ms\":%.4f", load_ms, create_ms,
               reshape_ms);
        printf(",\"min_ms\":%.4f,\"median_ms\":%.4f,\"mean_ms\":%.4f,\"max_ms\":%.4f", min_ms,
               median_ms, mean_ms, max_ms);
        if (opt.profile) {
            printf(",\"ops\":[");
            for (int g = 0; g < num_groups; g++) {
                printf("%s{\"op\":", g ? "," : "");
                json_string(groups[g].op_name);
                printf(",\"kernel\":");
                json_string(groups[g].kernel_name);
                printf(",\"nodes\":%u,\"median_ms\":%.4f,\"flops\":%llu}", groups[g].num_nodes,
                       groups[g].median_ms, (unsigned long long)groups[g].flops);
            }
            printf("]");
        }
        printf("}\n");
    }
    rc = 0;
done:
    for (uint32_t i = 0; i < ps.cap_nodes; i++)
        free(ps.nodes[i].samples_ns);
    free(ps.nodes);
    free(groups);
    free(times_ms);
    for (int i = 0; i < MAX_INPUTS; i++)
        ks_npy_free(&npys[i]);
    ks_session_destroy(s);
    ks_model_destroy(model);
    return rc;
}
