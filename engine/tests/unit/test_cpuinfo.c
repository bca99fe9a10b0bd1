/* CPU feature detection and the dispatch cap (cpuinfo.c): KS_ISA_MAX levels keep exactly their
 * bits, an unknown or empty level caps nothing, and the detected features obey the cap that the
 * environment set for this process (scripts/test runs the unit tests with KS_ISA_MAX=avx2 on
 * AVX-512 machines; this test then checks that no AVX-512 bit got through). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "impl.h"

static void test_levels(void **state) {
    (void)state;
    const uint32_t x86 =
        KS_ISA_AVX2 | KS_ISA_AVX_VNNI | KS_ISA_AVX512 | KS_ISA_AVX512_VNNI | KS_ISA_AVX512_VBMI;
    const uint32_t arm = KS_ISA_NEON | KS_ISA_NEON_FP16 | KS_ISA_NEON_DOT;
    assert_int_equal(ks__isa_cap("scalar"), 0u);
    /* each level caps its own architecture ... */
    assert_int_equal(ks__isa_cap("avx2") & x86, KS_ISA_AVX2);
    assert_int_equal(ks__isa_cap("AVX2") & x86, KS_ISA_AVX2); /* case-insensitive */
    assert_int_equal(ks__isa_cap("avxvnni") & x86, KS_ISA_AVX2 | KS_ISA_AVX_VNNI);
    assert_int_equal(ks__isa_cap("avx512") & x86, KS_ISA_AVX2 | KS_ISA_AVX_VNNI | KS_ISA_AVX512);
    assert_int_equal(ks__isa_cap("avx512vnni") & x86,
                     KS_ISA_AVX2 | KS_ISA_AVX_VNNI | KS_ISA_AVX512 | KS_ISA_AVX512_VNNI);
    assert_int_equal(ks__isa_cap("neon") & arm, KS_ISA_NEON);
    assert_int_equal(ks__isa_cap("neonfp16") & arm, KS_ISA_NEON | KS_ISA_NEON_FP16);
    assert_int_equal(ks__isa_cap("neondot") & arm, KS_ISA_NEON | KS_ISA_NEON_DOT);
    /* ... and leaves the other one alone (KS_ISA_MAX=avx2 must not turn an AArch64 run scalar) */
    const char *x86_levels[] = {"avx2", "avxvnni", "avx512", "avx512vnni"};
    const char *arm_levels[] = {"neon", "neonfp16", "neondot"};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(ks__isa_cap(x86_levels[i]) & arm, arm);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(ks__isa_cap(arm_levels[i]) & x86, x86);
    /* every level is a subset of the next one of its family */
    assert_int_equal(ks__isa_cap("avx2") & ~ks__isa_cap("avxvnni"), 0u);
    assert_int_equal(ks__isa_cap("avxvnni") & ~ks__isa_cap("avx512"), 0u);
    assert_int_equal(ks__isa_cap("avx512") & ~ks__isa_cap("avx512vnni"), 0u);
}

static void test_no_cap(void **state) {
    (void)state;
    assert_int_equal(ks__isa_cap(NULL), ~0u);
    assert_int_equal(ks__isa_cap(""), ~0u);
    assert_int_equal(ks__isa_cap("avx3"), ~0u);
    assert_int_equal(ks__isa_cap("avx2 "), ~0u);
}

/* The features this process dispatches to obey its environment. */
static void test_process_cap(void **state) {
    (void)state;
    uint32_t isa = ks__cpu_isa();
    char name[128];
    ks__isa_string(isa, name, sizeof(name));
    const char *cap = getenv("KS_ISA_MAX");
    const char *force = getenv("KS_FORCE_SCALAR");
    printf("cpu: %s; dispatch: %s (KS_ISA_MAX=%s, KS_FORCE_SCALAR=%s)\n", ks__cpu_name(), name,
           cap ? cap : "", force ? force : "");
    assert_int_equal(isa & ~ks__isa_cap(cap), 0u);
    if (force && force[0] && strcmp(force, "0") != 0) assert_int_equal(isa, 0u);
    if (!isa) assert_string_equal(name, "scalar");
    /* the set is stable: detected once */
    assert_int_equal(ks__cpu_isa(), isa);
#if defined(__aarch64__)
    if (!(force && force[0] && strcmp(force, "0") != 0) && !(cap && !strcasecmp(cap, "scalar")))
        assert_true(isa & KS_ISA_NEON); /* baseline on AArch64 */
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels),
        cmocka_unit_test(test_no_cap),
        cmocka_unit_test(test_process_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
