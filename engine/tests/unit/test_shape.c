/* The core's shape inference (engine/src/shape.h): every op of ops.inc has one, it refuses
 * unknown op ids, and it reports bad input without crashing for every op. The shapes themselves
 * are checked op by op in test_ref_conv.c, test_ref_data.c and test_ref_elementwise.c, which
 * run inference before each reference kernel. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "src/shape.h"

#define MAX_IO 8

typedef struct shape_case {
    ks__node node;
    ks__quant none;
    ks__rt_tensor t[2 * MAX_IO];
    ks__rt_tensor *in[MAX_IO], *out[MAX_IO];
    ks__kernel_ctx ctx;
    char err[256];
} shape_case;

/* A node of `op` with `num_in` inputs and `num_out` outputs, all F32 [1,4,4,4] without data. */
static void make_case(shape_case *c, uint32_t op, uint32_t num_in, uint32_t num_out) {
    memset(c, 0, sizeof(*c));
    c->node.op = op;
    c->node.name = "n";
    for (uint32_t i = 0; i < 2 * MAX_IO; i++) {
        c->t[i] = (ks__rt_tensor){.dtype = KS_DTYPE_F32, .rank = 4, .quant = &c->none};
        for (int d = 0; d < 4; d++)
            c->t[i].dims[d] = d ? 4 : 1;
    }
    for (uint32_t i = 0; i < MAX_IO; i++) {
        c->in[i] = &c->t[i];
        c->out[i] = &c->t[MAX_IO + i];
    }
    c->ctx = (ks__kernel_ctx){.node = &c->node,
                              .node_index = 3,
                              .in = c->in,
                              .num_inputs = num_in,
                              .out = c->out,
                              .num_outputs = num_out,
                              .err = c->err,
                              .err_cap = sizeof(c->err)};
}

static void test_every_op_has_inference(void **state) {
    (void)state;
    static const uint32_t ops[] = {
#define KS_OP(sym, id, name, min_in, max_in, min_out, max_out, flags) KS_OP_##sym,
#include "src/ops.inc"
#undef KS_OP
    };
    shape_case c;
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        const ks__op_info *info = ks__op_get_info(ops[i]);
        assert_non_null(info);
        uint32_t num_in = info->min_inputs, num_out = info->min_outputs;
        assert_true(num_in <= MAX_IO && num_out <= MAX_IO);
        make_case(&c, ops[i], num_in, num_out);
        /* Most ops refuse these inputs (no parameter values, wrong dtypes); none may lack
         * inference, and every refusal names the op and the node. */
        ks_status st = ks__op_infer(&c.ctx);
        if (st == KS_STATUS_OK) continue;
        if (strstr(c.err, "no shape inference")) fail_msg("op %s: %s", info->name, c.err);
        assert_non_null(strstr(c.err, info->name));
        assert_non_null(strstr(c.err, "(node 3 'n')"));
    }
}

static void test_unknown_op(void **state) {
    (void)state;
    shape_case c;
    uint32_t bad[] = {0, 127, KS_OP_MAX_ID, 1000};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        make_case(&c, bad[i], 1, 1);
        assert_int_equal(ks__op_infer(&c.ctx), KS_STATUS_UNSUPPORTED);
        assert_non_null(strstr(c.err, "no shape inference"));
    }
}

/* One op of each family: the output shape and dtype come out as ops.inc defines them. */
static void test_shapes(void **state) {
    (void)state;
    shape_case c;
    make_case(&c, KS_OP_ADD, 2, 1); /* [1,4,4,4] + [4] broadcast */
    c.t[1].rank = 1, c.t[1].dims[0] = 4;
    c.t[MAX_IO].dtype = KS_DTYPE_INVALID;
    assert_int_equal(ks__op_infer(&c.ctx), KS_STATUS_OK);
    assert_int_equal(c.t[MAX_IO].dtype, KS_DTYPE_F32);
    assert_int_equal(c.t[MAX_IO].rank, 4);
    assert_int_equal(c.t[MAX_IO].dims[3], 4);

    make_case(&c, KS_OP_CONV2D, 2, 1); /* 3x3 VALID conv: 4x4 -> 2x2, 8 channels */
    c.t[1].dims[0] = 8, c.t[1].dims[1] = 3, c.t[1].dims[2] = 3;
    c.node.ip[8] = KS_PAD_VALID;
    assert_int_equal(ks__op_infer(&c.ctx), KS_STATUS_OK);
    int64_t want[4] = {1, 2, 2, 8};
    assert_int_equal(c.t[MAX_IO].rank, 4);
    for (int d = 0; d < 4; d++)
        assert_int_equal(c.t[MAX_IO].dims[d], want[d]);
    assert_int_equal(c.ctx.scratch_bytes, 0); /* scratch is the kernel's plan, not inference */

    make_case(&c, KS_OP_SQUEEZE, 1, 1); /* every size-1 axis */
    assert_int_equal(ks__op_infer(&c.ctx), KS_STATUS_OK);
    assert_int_equal(c.t[MAX_IO].rank, 3);

    make_case(&c, KS_OP_MP_TRANSFORM_TENSOR_BILINEAR, 2, 1);
    c.t[1].rank = 2, c.t[1].dims[0] = 4, c.t[1].dims[1] = 4;
    c.node.ip[0] = 5, c.node.ip[1] = 6;
    assert_int_equal(ks__op_infer(&c.ctx), KS_STATUS_OK);
    assert_int_equal(c.t[MAX_IO].dims[1], 5);
    assert_int_equal(c.t[MAX_IO].dims[2], 6);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_op_has_inference),
        cmocka_unit_test(test_unknown_op),
        cmocka_unit_test(test_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
