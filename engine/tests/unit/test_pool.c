/* Thread pool: every item of every job runs exactly once, for back-to-back jobs of varying sizes
 * and more threads than cores (the case where workers wake late); bound workers stay on one CPU
 * each, and the calling thread is never bound. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getcpu, sched_getaffinity */
#endif
#include <sched.h>
#include <setjmp.h>
#include <stdlib.h>
#include <time.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "impl.h"

#define MAX_ITEMS 5000

#define MAX_THREADS 8

typedef struct job {
    _Atomic int counts[MAX_ITEMS];
    _Atomic uint32_t max_thread;
} job;

static void count_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    job *j = arg;
    for (size_t i = begin; i < end; i++)
        atomic_fetch_add(&j->counts[i], 1);
    uint32_t seen = atomic_load(&j->max_thread);
    while (thread > seen && !atomic_compare_exchange_weak(&j->max_thread, &seen, thread)) {
    }
}

static job g_job;

static void run_jobs_flags(uint32_t threads, uint32_t flags) {
    ks__pool *pool = NULL;
    assert_int_equal(ks__pool_create_ex(NULL, threads, flags, &pool), KS_STATUS_OK);
    assert_int_equal(ks__pool_threads(pool), threads);
    uint32_t seed = 12345;
    for (int iter = 0; iter < 3000; iter++) {
        seed = seed * 1103515245u + 12345u;
        size_t n = 1 + (seed >> 8) % MAX_ITEMS;
        size_t grain = 1 + (seed >> 20) % 64;
        memset(&g_job, 0, sizeof(g_job));
        ks__parallel_for(pool, n, grain, count_range, &g_job);
        for (size_t i = 0; i < n; i++)
            if (g_job.counts[i] != 1)
                fail_msg("threads %u iter %d: item %zu of %zu ran %d times", threads, iter, i, n,
                         g_job.counts[i]);
        assert_true(g_job.max_thread < threads);
    }
    ks__pool_destroy(pool);
}

static void run_jobs(uint32_t threads) {
    run_jobs_flags(threads, 0);
}

static void test_two_threads(void **state) {
    (void)state;
    run_jobs(2);
}

static void test_oversubscribed(void **state) {
    (void)state;
    run_jobs(3);
    run_jobs(5);
}

#if defined(__linux__)
/* A job of one item per thread whose items wait for each other (up to 10 s), so every worker
 * takes part however loaded the machine is; each records whether its mask holds one CPU. */
typedef struct barrier_job {
    _Atomic int arrived;
    int threads;
    _Atomic int pinned[MAX_THREADS];
    _Atomic int ran[MAX_THREADS];
} barrier_job;

static void barrier_item(void *arg, size_t begin, size_t end, uint32_t thread) {
    barrier_job *j = arg;
    atomic_fetch_add(&j->arrived, (int)(end - begin));
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (atomic_load(&j->arrived) < j->threads && now.tv_sec - t0.tv_sec < 10);
    if (thread < MAX_THREADS) {
        cpu_set_t mask;
        CPU_ZERO(&mask);
        if (sched_getaffinity(0, sizeof(mask), &mask) == 0 && CPU_COUNT(&mask) == 1)
            atomic_store(&j->pinned[thread], 1);
        atomic_store(&j->ran[thread], 1);
    }
}
#endif

/* With KS_POOL_BIND_CPUS and a CPU per worker (the caller's own CPU excluded), every worker is
 * bound to one CPU and the caller is not. */
static void test_bound_workers(void **state) {
    (void)state;
#if defined(__linux__)
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    assert_int_equal(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
    int num_cpus = CPU_COUNT(&allowed);
    unsetenv("KS_THREAD_AFFINITY"); /* the opt-out would turn binding off */
    if (num_cpus < 2) skip();
    uint32_t threads = num_cpus > 4 ? 4u : (uint32_t)num_cpus;
    ks__pool *pool = NULL;
    assert_int_equal(ks__pool_create_ex(NULL, threads, KS_POOL_BIND_CPUS, &pool), KS_STATUS_OK);
    static barrier_job bj;
    memset(&bj, 0, sizeof(bj));
    bj.threads = (int)threads;
    ks__parallel_for(pool, threads, 1, barrier_item, &bj);
    assert_int_equal(atomic_load(&bj.arrived), (int)threads);
    assert_true(bj.ran[0]);
    assert_false(bj.pinned[0]); /* the caller is never bound */
    for (uint32_t t = 1; t < threads; t++) {
        if (!bj.ran[t]) fail_msg("worker %u never ran (10 s)", t);
        if (!bj.pinned[t]) fail_msg("worker %u is not bound to one CPU", t);
    }
    ks__pool_destroy(pool);
    cpu_set_t after;
    CPU_ZERO(&after);
    assert_int_equal(sched_getaffinity(0, sizeof(after), &after), 0);
    assert_true(CPU_EQUAL(&allowed, &after));
    run_jobs_flags(2, KS_POOL_BIND_CPUS); /* and a bound pool still runs every item once */
#else
    skip();
#endif
}

static void test_null_pool(void **state) {
    (void)state;
    memset(&g_job, 0, sizeof(g_job));
    ks__parallel_for(NULL, 100, 7, count_range, &g_job);
    for (int i = 0; i < 100; i++)
        assert_int_equal(g_job.counts[i], 1);
    ks__pool_destroy(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_threads), cmocka_unit_test(test_oversubscribed),
        cmocka_unit_test(test_bound_workers), cmocka_unit_test(test_null_pool)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
