/* Benchmark timing, statistics and per-op profiles (bench_stats.h). */
#include "bench_stats.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cpuinfo.h"
#include "base/error.h"

double ks__bench_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void sleep_us(int us) {
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static ks_status run_failed(ks_session *s, ks_status st, char *err, size_t err_cap) {
    return ks__fail(err, err_cap, st, "run: %s: %s", ks_status_string(st), ks_last_error(s));
}

ks_status ks__bench_time_runs(ks_session *s, int warmup, int runs, int gap_us, double *times_ms,
                              char *err, size_t err_cap) {
    for (int r = -warmup; r < runs; r++) {
        if (gap_us > 0) sleep_us(gap_us);
        double start = ks__bench_now_ms();
        ks_status st = ks_session_run(s);
        double elapsed = ks__bench_now_ms() - start;
        if (st) return run_failed(s, st, err, err_cap);
        if (r >= 0) times_ms[r] = elapsed;
    }
    return KS_STATUS_OK;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double ks__bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void ks__bench_stats_of(double *times_ms, int n, ks__bench_stats *out) {
    double sum_ms = 0.0;
    for (int r = 0; r < n; r++)
        sum_ms += times_ms[r];
    out->mean_ms = sum_ms / n;
    out->median_ms = ks__bench_median(times_ms, n); /* sorts */
    out->min_ms = times_ms[0];
    out->max_ms = times_ms[n - 1];
}

/* ---- the profile ------------------------------------------------------------------------- */

static void on_profile(void *user, const ks_op_profile *p) {
    ks__bench_profile *ps = user;
    if (ps->failed) return;
    if (p->node_index >= ps->cap_nodes) {
        /* grows only during the sizing run; timed profile runs find the table sized */
        uint32_t cap = ps->cap_nodes ? ps->cap_nodes : 64;
        while (cap <= p->node_index)
            cap *= 2;
        ks__bench_node *nodes = realloc(ps->nodes, cap * sizeof(*nodes));
        if (!nodes) {
            ps->failed = 1;
            return;
        }
        memset(nodes + ps->cap_nodes, 0, (cap - ps->cap_nodes) * sizeof(*nodes));
        ps->nodes = nodes;
        ps->cap_nodes = cap;
    }
    ks__bench_node *np = &ps->nodes[p->node_index];
    if (np->seen && strcmp(np->op_name, p->op_name) != 0) {
        uint32_t k = 0;
        while (k < ps->num_extra && !(ps->extra[k].node_index == p->node_index &&
                                      strcmp(ps->extra[k].op_name, p->op_name) == 0))
            k++;
        if (k == ps->num_extra) {
            if (ps->num_extra == ps->cap_extra) {
                uint32_t cap = ps->cap_extra ? 2 * ps->cap_extra : 16;
                ks__bench_node *e = realloc(ps->extra, cap * sizeof(*e));
                if (!e) {
                    ps->failed = 1;
                    return;
                }
                ps->extra = e;
                ps->cap_extra = cap;
            }
            memset(&ps->extra[k], 0, sizeof(ps->extra[k]));
            ps->num_extra++;
        }
        np = &ps->extra[k];
    }
    if (!np->seen) {
        np->samples_ns = calloc((size_t)ps->runs, sizeof(uint64_t));
        if (!np->samples_ns) {
            ps->failed = 1;
            return;
        }
        np->seen = 1;
        np->node_index = p->node_index;
        np->op_name = p->op_name;
        np->node_name = p->node_name;
        np->kernel_name = p->kernel_name ? p->kernel_name : p->op_name;
        np->flops = p->flops;
        np->dispatches = p->dispatches;
        if (p->node_index >= ps->num_nodes) ps->num_nodes = p->node_index + 1;
    }
    if (ps->current_run >= 0) np->samples_ns[ps->current_run] += p->elapsed_ns;
}

ks_status ks__bench_profile_runs(ks_session *s, int runs, ks__bench_profile *p, char *err,
                                 size_t err_cap) {
    p->runs = runs;
    p->current_run = -1;
    if (!(p->wall_ms = calloc((size_t)(runs > 0 ? runs : 1), sizeof(double))))
        return ks__fail(err, err_cap, KS_STATUS_OUT_OF_MEMORY, "out of memory while profiling");
    ks_session_set_profiler(s, on_profile, p);
    ks_status st = KS_STATUS_OK;
    for (int r = -1; r < runs && !p->failed && !st; r++) {
        p->current_run = r;
        double t0 = ks__bench_now_ms();
        st = ks_session_run(s);
        if (r >= 0) p->wall_ms[r] = ks__bench_now_ms() - t0;
    }
    ks_session_set_profiler(s, NULL, NULL);
    if (st) return run_failed(s, st, err, err_cap);
    if (p->failed)
        return ks__fail(err, err_cap, KS_STATUS_OUT_OF_MEMORY, "out of memory while profiling");
    return KS_STATUS_OK;
}

void ks__bench_profile_free(ks__bench_profile *p) {
    for (uint32_t i = 0; i < p->cap_nodes; i++)
        free(p->nodes[i].samples_ns);
    free(p->nodes);
    for (uint32_t i = 0; i < p->num_extra; i++)
        free(p->extra[i].samples_ns);
    free(p->extra);
    free(p->wall_ms);
    memset(p, 0, sizeof(*p));
}

/* Row i of the profile: the node table, then the extra rows. */
static uint32_t num_rows_of(const ks__bench_profile *ps) {
    return ps->num_nodes + ps->num_extra;
}

static const ks__bench_node *row_of(const ks__bench_profile *ps, uint32_t i) {
    return i < ps->num_nodes ? &ps->nodes[i] : &ps->extra[i - ps->num_nodes];
}

static int same_group(const ks__bench_group *g, const ks__bench_node *np) {
    return strcmp(g->op_name, np->op_name) == 0 && strcmp(g->kernel_name, np->kernel_name) == 0;
}

static int group_cmp(const void *a, const void *b) {
    const ks__bench_group *x = a, *y = b;
    return (x->median_ms < y->median_ms) - (x->median_ms > y->median_ms);
}

int ks__bench_profile_groups(const ks__bench_profile *ps, ks__bench_group **groups_out) {
    uint32_t n = num_rows_of(ps);
    ks__bench_group *groups = calloc(n ? n : 1, sizeof(*groups));
    double *per_run = calloc((size_t)ps->runs, sizeof(double));
    int num_groups = 0;
    if (!groups || !per_run) {
        free(groups);
        free(per_run);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        const ks__bench_node *np = row_of(ps, i);
        if (!np->seen) continue;
        int g = 0;
        while (g < num_groups && !same_group(&groups[g], np))
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
            for (uint32_t i = 0; i < n; i++) {
                const ks__bench_node *np = row_of(ps, i);
                if (np->seen && same_group(&groups[g], np)) total_ns += np->samples_ns[r];
            }
            per_run[r] = (double)total_ns * 1e-6;
        }
        groups[g].median_ms = ks__bench_median(per_run, ps->runs);
    }
    qsort(groups, (size_t)num_groups, sizeof(*groups), group_cmp);
    free(per_run);
    *groups_out = groups;
    return num_groups;
}

typedef struct node_row {
    uint32_t index;
    double median_ms;
} node_row;

static int node_row_cmp(const void *a, const void *b) {
    const node_row *x = a, *y = b;
    return (x->median_ms < y->median_ms) - (x->median_ms > y->median_ms);
}

int ks__bench_print_nodes(FILE *f, const ks__bench_profile *ps) {
    uint32_t n = num_rows_of(ps);
    node_row *rows = calloc(n ? n : 1, sizeof(*rows));
    double *samples_ms = calloc((size_t)ps->runs, sizeof(double));
    if (!rows || !samples_ms) {
        free(rows);
        free(samples_ms);
        return -1;
    }
    uint32_t num_rows = 0;
    for (uint32_t i = 0; i < n; i++) {
        const ks__bench_node *np = row_of(ps, i);
        if (!np->seen) continue;
        for (int r = 0; r < ps->runs; r++)
            samples_ms[r] = (double)np->samples_ns[r] * 1e-6;
        rows[num_rows].index = i;
        rows[num_rows].median_ms = ks__bench_median(samples_ms, ps->runs);
        num_rows++;
    }
    qsort(rows, num_rows, sizeof(*rows), node_row_cmp);
    fprintf(f, "\nper-node profile (median over runs, slowest first):\n");
    fprintf(f, "%5s  %-10s %-34s %10s %10s %9s  %s\n", "node", "op", "kernel", "ms", "MFLOP",
            "GFLOP/s", "name");
    for (uint32_t k = 0; k < num_rows; k++) {
        const ks__bench_node *np = row_of(ps, rows[k].index);
        double ms = rows[k].median_ms;
        /* TFLite names list every folded op; 60 characters identify the node */
        const char *name = np->node_name ? np->node_name : "";
        int name_len = (int)strlen(name);
        fprintf(f, "%5u  %-10s %-34s %10.4f %10.2f %9.2f  %.*s%s\n", np->node_index, np->op_name,
                np->kernel_name, ms, (double)np->flops * 1e-6,
                ms > 0 ? (double)np->flops / (ms * 1e6) : 0.0, name_len > 60 ? 57 : name_len, name,
                name_len > 60 ? "..." : "");
    }
    free(rows);
    free(samples_ms);
    return 0;
}

void ks__bench_print_groups(FILE *f, const ks__bench_group *groups, int num_groups) {
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
    fprintf(f, "\nper-op profile (median over runs of each group's per-run total):\n");
    fprintf(f, "%-*s  %-*s %5s %10s %6s %10s %9s\n", op_w, "op", kernel_w, "kernel", "nodes", "ms",
            "%", "MFLOP", "GFLOP/s");
    for (int g = 0; g < num_groups; g++) {
        const ks__bench_group *pg = &groups[g];
        double gflops_per_s = pg->median_ms > 0 ? (double)pg->flops / (pg->median_ms * 1e6) : 0;
        fprintf(f, "%-*s  %-*s %5u %10.3f %6.1f %10.2f %9.2f\n", op_w, pg->op_name, kernel_w,
                pg->kernel_name, pg->num_nodes, pg->median_ms,
                total_ms > 0 ? 100.0 * pg->median_ms / total_ms : 0, (double)pg->flops * 1e-6,
                gflops_per_s);
    }
    fprintf(f, "%-*s  %-*s %5s %10.3f %6.1f %10.2f %9.2f\n", op_w, "total", kernel_w, "", "",
            total_ms, 100.0, (double)total_flops * 1e-6,
            total_ms > 0 ? (double)total_flops / (total_ms * 1e6) : 0.0);
}

void ks__bench_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

int ks__bench_profile_device(const ks__bench_profile *ps, ks__bench_device *out) {
    memset(out, 0, sizeof(*out));
    static const char *const k_rows[3] = {"upload", "submit", "download"};
    double *per_run[5];
    for (int k = 0; k < 5; k++)
        per_run[k] = calloc((size_t)(ps->runs > 0 ? ps->runs : 1), sizeof(double));
    int ok = per_run[0] && per_run[1] && per_run[2] && per_run[3] && per_run[4];
    for (uint32_t i = 0; ok && i < num_rows_of(ps); i++) {
        const ks__bench_node *np = row_of(ps, i);
        if (!np->seen) continue;
        int k = 0; /* 0: a kernel row of the device; 1..3: k_rows */
        while (k < 3 && strcmp(np->op_name, k_rows[k]) != 0)
            k++;
        k = k < 3 ? k + 1 : 0;
        if (k == 2) out->partitions++;
        if (k == 0 && !np->dispatches && strcmp(np->op_name, "partition") != 0) continue;
        out->dispatches += np->dispatches;
        for (int r = 0; r < ps->runs; r++)
            per_run[k][r] += (double)np->samples_ns[r] * 1e-6;
    }
    if (ok && out->partitions && ps->runs > 0) {
        for (int r = 0; r < ps->runs; r++)
            per_run[4][r] = ps->wall_ms ? ps->wall_ms[r] - per_run[0][r] : 0.0;
        out->outside_ms = ks__bench_median(per_run[4], ps->runs);
        out->kernels_ms = ks__bench_median(per_run[0], ps->runs);
        out->upload_ms = ks__bench_median(per_run[1], ps->runs);
        out->submit_ms = ks__bench_median(per_run[2], ps->runs);
        out->download_ms = ks__bench_median(per_run[3], ps->runs);
    }
    for (int k = 0; k < 5; k++)
        free(per_run[k]);
    return ok ? 0 : -1;
}

void ks__bench_print_json(FILE *f, const ks__bench_summary *s) {
    fprintf(f, "{\"model\":");
    ks__bench_json_string(f, s->model_path);
    fprintf(f, ",\"kestrel_version\":");
    ks__bench_json_string(f, ks_version_string());
    fprintf(f, ",\"cpu\":");
    ks__bench_json_string(f, ks__cpu_name());
    fprintf(f, ",\"isa\":");
    ks__bench_json_string(f, s->isa);
    if (s->backend) {
        fprintf(f, ",\"backend\":");
        ks__bench_json_string(f, s->backend);
    }
    fprintf(f, ",\"threads\":%d,\"runs\":%d,\"warmup\":%d,\"seed\":%llu", s->threads, s->runs,
            s->warmup, (unsigned long long)s->seed);
    fprintf(f, ",\"load_ms\":%.4f,\"create_ms\":%.4f,\"reshape_ms\":%.4f", s->load_ms, s->create_ms,
            s->reshape_ms);
    fprintf(f, ",\"min_ms\":%.4f,\"median_ms\":%.4f,\"mean_ms\":%.4f,\"max_ms\":%.4f",
            s->latency.min_ms, s->latency.median_ms, s->latency.mean_ms, s->latency.max_ms);
    if (s->profiled) {
        fprintf(f, ",\"ops\":[");
        for (int g = 0; g < s->num_groups; g++) {
            fprintf(f, "%s{\"op\":", g ? "," : "");
            ks__bench_json_string(f, s->groups[g].op_name);
            fprintf(f, ",\"kernel\":");
            ks__bench_json_string(f, s->groups[g].kernel_name);
            fprintf(f, ",\"nodes\":%u,\"median_ms\":%.4f,\"flops\":%llu}", s->groups[g].num_nodes,
                    s->groups[g].median_ms, (unsigned long long)s->groups[g].flops);
        }
        fprintf(f, "]");
    }
    if (s->device && s->device->partitions)
        fprintf(f,
                ",\"device\":{\"partitions\":%u,\"dispatches\":%u,\"kernels_ms\":%.4f,"
                "\"upload_ms\":%.4f,\"submit_ms\":%.4f,\"download_ms\":%.4f,"
                "\"outside_ms\":%.4f}",
                s->device->partitions, s->device->dispatches, s->device->kernels_ms,
                s->device->upload_ms, s->device->submit_ms, s->device->download_ms,
                s->device->outside_ms);
    fprintf(f, "}\n");
}
