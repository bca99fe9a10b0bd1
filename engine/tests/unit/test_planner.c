/* The arena memory planner (engine/src/planner.h): buffers alive at the same step never share
 * bytes, buffers that are not may, groups share their root's block, in-place placements sit
 * inside their base's block and keep it alive, and the arena is never smaller than the peak of
 * live bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "planner.h"

static ks__planner make(uint32_t n) {
    ks__planner p;
    assert_int_equal(ks__planner_alloc(&p, NULL, n), KS_STATUS_OK);
    ks__planner_reset(&p);
    return p;
}

static void buffer(ks__planner *p, int32_t b, size_t bytes, int32_t first, int32_t last) {
    p->bytes[b] = bytes;
    p->first[b] = first;
    p->last[b] = last;
}

static size_t place(ks__planner *p) {
    size_t arena = 0;
    assert_int_equal(ks__planner_place(p, NULL, &arena), KS_STATUS_OK);
    return arena;
}

static void test_disjoint_lifetimes_share(void **state) {
    (void)state;
    ks__planner p = make(3);
    buffer(&p, 0, 256, 0, 1);
    buffer(&p, 1, 128, 2, 3);
    buffer(&p, 2, 64, 4, 5);
    assert_int_equal(place(&p), 256);
    for (int32_t b = 0; b < 3; b++)
        assert_int_equal(ks__planner_offset(&p, b), 0);
    ks__planner_free(&p, NULL);
}

static void test_overlapping_lifetimes_do_not(void **state) {
    (void)state;
    ks__planner p = make(3);
    buffer(&p, 0, 256, 0, 2);
    buffer(&p, 1, 128, 1, 3);
    buffer(&p, 2, 64, 2, 2);
    assert_int_equal(place(&p), 448);
    /* largest first, each at the lowest offset that fits */
    assert_int_equal(ks__planner_offset(&p, 0), 0);
    assert_int_equal(ks__planner_offset(&p, 1), 256);
    assert_int_equal(ks__planner_offset(&p, 2), 384);
    ks__planner_free(&p, NULL);
}

static void test_fills_a_gap(void **state) {
    (void)state;
    /* 0 lives throughout; 1, 2 and 3 do not overlap each other, so they share the bytes above 0 */
    ks__planner p = make(4);
    buffer(&p, 0, 512, 0, 4); /* alive throughout */
    buffer(&p, 1, 256, 0, 1);
    buffer(&p, 2, 256, 2, 3); /* may take 1's bytes */
    buffer(&p, 3, 64, 4, 4);  /* may take 1's bytes too */
    assert_int_equal(place(&p), 768);
    assert_int_equal(ks__planner_offset(&p, 1), 512);
    assert_int_equal(ks__planner_offset(&p, 2), 512);
    assert_int_equal(ks__planner_offset(&p, 3), 512);
    ks__planner_free(&p, NULL);
}

static void test_groups_share_the_root(void **state) {
    (void)state;
    ks__planner p = make(4);
    buffer(&p, 0, 128, 0, 3);
    buffer(&p, 1, 128, 1, 2);
    buffer(&p, 2, 0, 0, 0);
    buffer(&p, 3, 0, 0, 0);
    p.group[2] = 0; /* 2 and 3 alias 0 (a view, an in-place op) */
    p.group[3] = 2;
    assert_int_equal(ks__planner_find(&p, 3), 0);
    assert_int_equal(place(&p), 256);
    assert_int_equal(ks__planner_offset(&p, 3), ks__planner_offset(&p, 0));
    assert_int_equal(ks__planner_offset(&p, 2), ks__planner_offset(&p, 0));
    assert_int_not_equal(ks__planner_offset(&p, 1), ks__planner_offset(&p, 0));
    ks__planner_free(&p, NULL);
}

static void test_in_place_block_keeps_base_alive(void **state) {
    (void)state;
    /* 0: a concat output alive at [3, 4]; 1 and 2 are written into it at steps 1 and 2 (an
     * in-place concat), so 0's block must live from step 1; 3 is alive at [0, 2] and must not
     * share it. */
    ks__planner p = make(4);
    buffer(&p, 0, 256, 3, 4);
    buffer(&p, 1, 128, 1, 3);
    buffer(&p, 2, 128, 2, 3);
    buffer(&p, 3, 256, 0, 2);
    p.sub_base[1] = 0;
    p.sub_off[1] = 0;
    p.sub_base[2] = 0;
    p.sub_off[2] = 128;
    assert_int_equal(place(&p), 512);
    assert_int_equal(p.first[0], 1);
    size_t base = ks__planner_offset(&p, 0);
    assert_int_equal(ks__planner_offset(&p, 1), base);
    assert_int_equal(ks__planner_offset(&p, 2), base + 128);
    size_t o3 = ks__planner_offset(&p, 3);
    assert_true(o3 + 256 <= base || base + 256 <= o3);
    ks__planner_free(&p, NULL);
}

/* Random buffers: no two alive at one step overlap; the arena is at least the peak of live
 * bytes and at most their sum; the same input gives the same plan. */
static void test_random_plans_are_valid(void **state) {
    (void)state;
    enum { N = 300, STEPS = 60 };
    uint32_t seed = 7;
    for (int round = 0; round < 20; round++) {
        ks__planner p = make(N), q = make(N);
        size_t sum = 0;
        for (int32_t b = 0; b < N; b++) {
            seed = seed * 1664525u + 1013904223u;
            int32_t first = (int32_t)((seed >> 8) % STEPS);
            seed = seed * 1664525u + 1013904223u;
            int32_t last = first + (int32_t)((seed >> 8) % 8);
            seed = seed * 1664525u + 1013904223u;
            size_t bytes = (size_t)64 * (1 + (seed >> 8) % 64);
            if (round % 4 == 3 && b % 7 == 0) bytes = 0; /* unused buffers */
            buffer(&p, b, bytes, first, last);
            buffer(&q, b, bytes, first, last);
            sum += bytes;
        }
        size_t arena = place(&p);
        assert_int_equal(place(&q), arena);
        size_t peak = 0;
        for (int32_t t = 0; t < STEPS + 8; t++) {
            size_t live = 0;
            for (int32_t b = 0; b < N; b++)
                if (p.bytes[b] && p.first[b] <= t && t <= p.last[b]) live += p.bytes[b];
            if (live > peak) peak = live;
        }
        assert_true(arena >= peak && arena <= sum);
        for (int32_t a = 0; a < N; a++) {
            if (!p.bytes[a]) continue;
            size_t oa = ks__planner_offset(&p, a);
            assert_int_equal(oa, ks__planner_offset(&q, a));
            assert_true(oa + p.bytes[a] <= arena);
            for (int32_t b = a + 1; b < N; b++) {
                if (!p.bytes[b] || p.last[a] < p.first[b] || p.last[b] < p.first[a]) continue;
                size_t ob = ks__planner_offset(&p, b);
                if (!(oa + p.bytes[a] <= ob || ob + p.bytes[b] <= oa))
                    fail_msg("round %d: buffers %d and %d overlap in time and memory", round, a, b);
            }
        }
        ks__planner_free(&p, NULL);
        ks__planner_free(&q, NULL);
    }
}

static void test_empty(void **state) {
    (void)state;
    ks__planner p = make(0);
    assert_int_equal(place(&p), 0);
    ks__planner_free(&p, NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_disjoint_lifetimes_share),
        cmocka_unit_test(test_overlapping_lifetimes_do_not),
        cmocka_unit_test(test_fills_a_gap),
        cmocka_unit_test(test_groups_share_the_root),
        cmocka_unit_test(test_in_place_block_keeps_base_alive),
        cmocka_unit_test(test_random_plans_are_valid),
        cmocka_unit_test(test_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
