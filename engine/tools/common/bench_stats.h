/* Timing and statistics of benchmark runs (ks-bench): the monotonic clock, the timed run loop,
 * medians, and the per-op profile collected through the session profiler (a separate pass, so
 * the profiler's overhead never shows in the latency figures), grouped by op and kernel and
 * printed as tables.
 *
 *     ks__bench_time_runs(s, warmup, runs, gap_us, times_ms, err, sizeof(err));
 *     ks__bench_stats lat;  ks__bench_stats_of(times_ms, runs, &lat);
 *     ks__bench_profile p = {0};
 *     ks__bench_profile_runs(s, runs, &p, err, sizeof(err));
 *     ks__bench_group *groups;  int n = ks__bench_profile_groups(&p, &groups);
 *     ks__bench_print_groups(stdout, groups, n);  free(groups);  ks__bench_profile_free(&p);
 *
 * Thread safety: no shared state; a profile belongs to one session. */
#ifndef KESTREL_BENCH_STATS_H
#define KESTREL_BENCH_STATS_H

#include <stdint.h>
#include <stdio.h>

#include "kestrel/engine.h"

double ks__bench_now_ms(void); /* CLOCK_MONOTONIC */

/* warmup untimed runs, then runs timed one by one into times_ms[runs]; gap_us > 0: sleeps that
 * long before each run (as between camera frames). */
ks_status ks__bench_time_runs(ks_session *s, int warmup, int runs, int gap_us, double *times_ms,
                              char *err, size_t err_cap);

/* Median of v[n] (sorts v). */
double ks__bench_median(double *v, int n);

typedef struct ks__bench_stats {
    double min_ms, median_ms, mean_ms, max_ms;
} ks__bench_stats;

void ks__bench_stats_of(double *times_ms, int n, ks__bench_stats *out); /* sorts times_ms */

/* One graph node as seen by the profiler. */
typedef struct ks__bench_node {
    int seen;
    uint32_t node_index;
    const char *op_name, *node_name, *kernel_name; /* the session's strings */
    uint64_t flops;
    uint32_t dispatches;  /* device rows: kernel dispatches per run (ks_op_profile) */
    uint64_t *samples_ns; /* [runs], per timed profile run */
} ks__bench_node;

typedef struct ks__bench_profile {
    ks__bench_node *nodes; /* by node index: the first op name reported for that node */
    uint32_t num_nodes, cap_nodes;
    /* further rows of a node under other op names: a device partition reports "submit",
     * "upload", "partition" and "download" under its first node */
    ks__bench_node *extra;
    uint32_t num_extra, cap_extra;
    int runs;
    double *wall_ms; /* [runs]: each profiled run's ks_session_run, timed around the call */
    int current_run; /* -1 during the sizing run */
    int failed;      /* out of memory while growing the table */
} ks__bench_profile;

/* One untimed run sizes the table (so the timed ones never allocate), then runs profiled runs;
 * the profiler is removed afterwards. p must start zeroed; free with ks__bench_profile_free. */
ks_status ks__bench_profile_runs(ks_session *s, int runs, ks__bench_profile *p, char *err,
                                 size_t err_cap);
void ks__bench_profile_free(ks__bench_profile *p);

/* All nodes with the same op and kernel. */
typedef struct ks__bench_group {
    const char *op_name, *kernel_name;
    uint32_t num_nodes;
    uint64_t flops;
    double median_ms; /* median over runs of the group's per-run total */
} ks__bench_group;

/* Groups the profiled nodes, slowest first, into *groups_out (malloc'ed; free it). Returns the
 * number of groups, -1 when out of memory. */
int ks__bench_profile_groups(const ks__bench_profile *p, ks__bench_group **groups_out);

/* The per-op table, and one row per node, slowest first (the view that finds the one layer of a
 * group that is slow; -1 when out of memory). */
void ks__bench_print_groups(FILE *f, const ks__bench_group *groups, int num_groups);
int ks__bench_print_nodes(FILE *f, const ks__bench_profile *p);

/* What the device partitions of a profile add up to (all zero when the session ran on the host
 * only): kernel dispatches per run, and the medians over the profiled runs of the time in the
 * device's kernels (per-node device rows, or "partition" rows where the device has no
 * per-dispatch timestamps), of the partitions' "upload", "submit" and "download" rows, and of
 * everything outside the device's kernels (host nodes, transfers, submission and waiting). */
typedef struct ks__bench_device {
    uint32_t partitions, dispatches;
    double kernels_ms, upload_ms, submit_ms, download_ms;
    double outside_ms; /* median over the profiled runs of the run's wall time minus kernels_ms */
} ks__bench_device;

/* Fills *out; returns 0, or -1 when out of memory. */
int ks__bench_profile_device(const ks__bench_profile *p, ks__bench_device *out);

/* s as a JSON string literal (NULL: ""). */
void ks__bench_json_string(FILE *f, const char *s);

/* What a run measured, as ks-bench --json prints it. */
typedef struct ks__bench_summary {
    const char *model_path, *isa;
    const char *backend; /* ks_backend_string of the session's backend; NULL: not printed */
    int threads, runs, warmup;
    uint64_t seed;
    double load_ms, create_ms, reshape_ms;
    ks__bench_stats latency;
    int profiled; /* groups[num_groups] hold the profile */
    const ks__bench_group *groups;
    int num_groups;
    const ks__bench_device *device; /* NULL, or a profile's device partitions (printed when any) */
} ks__bench_summary;

/* One JSON object on one line. */
void ks__bench_print_json(FILE *f, const ks__bench_summary *s);

#endif
