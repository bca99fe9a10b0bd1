/* Op-pruned builds (docs/size.md, op_enabled.h): a model that needs an op the build left out is
 * refused with KS_STATUS_UNSUPPORTED and a message naming the op and the pruning, never run. The
 * core's shape inference covers every op; the refusal comes from the pruned op's kernel stub,
 * which the session plans right after inference.
 * The test compiles the reference registry itself as an op-pruned build that registers every op
 * but RELU (its own KS__OP_ON), so it runs in the normal test build; the definitions here take
 * the place of libkestrel's registry.o at link time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define KS_OPS_PRUNED 1
#define KS__OP_ON(OP) (KS_OP_##OP != KS_OP_RELU)
#define KS_OPS_ENABLED_LIST "(every op but relu)"
#include "ref/registry.c"

#include "ksm.h"

/* x[1,4] -> OP (unary, or ADD with a constant) -> y */
static ks_model *make_model(uint32_t op) {
    int64_t d14[2] = {1, 4};
    int32_t x, c, y;
    ks__graph g;
    ks__graph_init(&g, NULL);
    assert_int_equal(ks__graph_add_tensor(&g, "x", KS_DTYPE_F32, 2, d14, &x), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "c", KS_DTYPE_F32, 2, d14, &c), 0);
    const float cv[4] = {1.0f, -2.0f, 3.0f, -4.0f};
    assert_int_equal(ks__graph_set_const(&g, c, cv, sizeof(cv), true), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "y", KS_DTYPE_F32, 2, d14, &y), 0);
    int32_t in[2] = {x, c};
    uint32_t num_in = op == KS_OP_ADD ? 2 : 1;
    assert_int_equal(ks__graph_add_node(&g, op, "the_node", num_in, in, 1, &y, NULL), 0);
    assert_int_equal(ks__graph_set_io(&g, 1, &x, 1, &y), 0);
    uint8_t *buf = NULL;
    size_t n = 0;
    char err[256];
    assert_int_equal(ks__ksm_write(&g, &buf, &n, err, sizeof(err)), 0);
    ks__graph_free(&g);
    ks_model *m = NULL;
    assert_int_equal(
        ks_model_load_buffer(buf, n, &(ks_model_desc){.flags = KS_MODEL_COPY_BUFFER}, &m),
        KS_STATUS_OK);
    free(buf);
    return m;
}

static void test_pruned_op_refused(void **state) {
    (void)state;
    ks_model *m = make_model(KS_OP_RELU);
    ks_session *s = NULL;
    ks_status st = ks_session_create(m, NULL, &s);
    const char *msg = NULL;
    if (st == KS_STATUS_OK) {
        st = ks_session_reshape(s, NULL);
        msg = ks_last_error(s);
    } else {
        msg = ks_last_error(NULL);
    }
    assert_int_equal(st, KS_STATUS_UNSUPPORTED);
    assert_non_null(strstr(msg, "'relu'"));
    assert_non_null(strstr(msg, "the_node"));
    assert_non_null(strstr(msg, "op-pruned build"));
    /* A refused session never runs. */
    if (s) assert_int_not_equal(ks_session_run(s), KS_STATUS_OK);
    ks_session_destroy(s);
    ks_model_destroy(m);
}

static void test_enabled_op_runs(void **state) {
    (void)state;
    ks_model *m = make_model(KS_OP_ADD);
    ks_session *s = NULL;
    assert_int_equal(ks_session_create(m, NULL, &s), KS_STATUS_OK);
    assert_int_equal(ks_session_reshape(s, NULL), KS_STATUS_OK);
    ks_tensor in, out;
    assert_int_equal(ks_session_input(s, 0, &in), 0);
    const float xv[4] = {0.5f, 0.5f, -5.0f, 10.0f};
    memcpy(in.data, xv, sizeof(xv));
    assert_int_equal(ks_session_run(s), KS_STATUS_OK);
    assert_int_equal(ks_session_output(s, 0, &out), 0);
    const float *y = out.data;
    assert_true(y[0] == 1.5f && y[1] == -1.5f && y[2] == -2.0f && y[3] == 6.0f);
    ks_session_destroy(s);
    ks_model_destroy(m);
}

static void test_table(void **state) {
    (void)state;
    const ks__kernel_table *t = ks__ref_kernels();
    assert_ptr_equal(t->k[KS_OP_RELU].plan, pruned_plan);
    assert_ptr_equal(t->k[KS_OP_RELU].run, pruned_run);
    assert_ptr_not_equal(t->k[KS_OP_RELU6].run, pruned_run);
    assert_non_null(t->k[KS_OP_RELU6].run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pruned_op_refused),
        cmocka_unit_test(test_enabled_op_runs),
        cmocka_unit_test(test_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
