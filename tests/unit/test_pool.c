/* Thread pool: every item of every job runs exactly once, for back-to-back jobs of varying sizes
 * and more threads than cores (the case where workers wake late). */
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "impl.h"

#define MAX_ITEMS 5000

typedef struct job {
    _Atomic int counts[MAX_ITEMS];
    uint32_t max_thread;
} job;

static void count_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    job *j = arg;
    for (size_t i = begin; i < end; i++)
        atomic_fetch_add(&j->counts[i], 1);
    if (thread > j->max_thread) j->max_thread = thread; /* racy max is fine: only a bound */
}

static job g_job;

static void run_jobs(uint32_t threads) {
    ks__pool *pool = NULL;
    assert_int_equal(ks__pool_create(NULL, threads, &pool), KS_STATUS_OK);
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

static void test_two_threads(void **state) {
    (void)state;
    run_jobs(2);
}

static void test_oversubscribed(void **state) {
    (void)state;
    run_jobs(3);
    run_jobs(5);
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
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_two_threads),
                                       cmocka_unit_test(test_oversubscribed),
                                       cmocka_unit_test(test_null_pool)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
