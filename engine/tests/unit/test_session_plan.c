/* Session memory planning: CONCAT written in place. A concat whose inputs are contiguous blocks
 * of its output is skipped and its producers write into the output; the results must equal a
 * session with KS_SESSION_KEEP_ALL_TENSORS (no buffer sharing at all), and the cases where
 * sharing would be wrong (an input read after the concat, unaligned blocks) must keep the copy. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "convert.h"
#include "kestrel/engine.h"
#include "ksm.h"

typedef struct builder {
    ks__graph g;
    int32_t x; /* graph input [1, rows, cols] */
    int64_t rows, cols;
} builder;

static int32_t tensor(builder *b, const char *name, int32_t rank, const int64_t *dims) {
    int32_t id;
    assert_int_equal(ks__graph_add_tensor(&b->g, name, KS_DTYPE_F32, rank, dims, &id), 0);
    return id;
}

static int32_t constant(builder *b, const char *name, float v) {
    int64_t d1[1] = {1};
    int32_t id = tensor(b, name, 1, d1);
    assert_int_equal(ks__graph_set_const(&b->g, id, &v, sizeof(v), true), 0);
    return id;
}

/* y = x (op) c, same shape as x */
static int32_t binary(builder *b, uint32_t op, const char *name, int32_t x, float c) {
    char cname[64];
    snprintf(cname, sizeof(cname), "%s_c", name);
    int32_t k = constant(b, cname, c);
    const ks__tensor *xt = &b->g.tensors[x];
    int64_t dims[KS_MAX_RANK];
    memcpy(dims, xt->dims, sizeof(dims));
    int32_t y = tensor(b, name, xt->rank, dims);
    int32_t in[2] = {x, k};
    assert_int_equal(ks__graph_add_node(&b->g, op, name, 2, in, 1, &y, NULL), 0);
    return y;
}

static int32_t unary(builder *b, uint32_t op, const char *name, int32_t x) {
    const ks__tensor *xt = &b->g.tensors[x];
    int64_t dims[KS_MAX_RANK];
    memcpy(dims, xt->dims, sizeof(dims));
    int32_t y = tensor(b, name, xt->rank, dims);
    assert_int_equal(ks__graph_add_node(&b->g, op, name, 1, &x, 1, &y, NULL), 0);
    return y;
}

static int32_t concat(builder *b, const char *name, int32_t axis, uint32_t n, const int32_t *in) {
    const ks__tensor *t0 = &b->g.tensors[in[0]];
    int64_t dims[KS_MAX_RANK];
    memcpy(dims, t0->dims, sizeof(dims));
    int32_t rank = t0->rank;
    for (uint32_t k = 1; k < n; k++)
        dims[axis] += b->g.tensors[in[k]].dims[axis];
    int32_t y = tensor(b, name, rank, dims);
    uint32_t idx;
    assert_int_equal(ks__graph_add_node(&b->g, KS_OP_CONCAT, name, n, in, 1, &y, &idx), 0);
    b->g.nodes[idx].ip[0] = axis;
    return y;
}

static void begin(builder *b, int64_t rows, int64_t cols) {
    ks__graph_init(&b->g, NULL);
    b->rows = rows, b->cols = cols;
    int64_t d[3] = {1, rows, cols};
    b->x = tensor(b, "x", 3, d);
}

typedef struct prof_count {
    int concat_runs, runs;
} prof_count;

static void on_prof(void *user, const ks_op_profile *p) {
    prof_count *c = user;
    c->runs++;
    if (strcmp(p->op_name, "concat") == 0) c->concat_runs++;
}

/* Runs the graph with and without KEEP_ALL_TENSORS on the same input; outputs must be equal
 * bit for bit. Returns how many concat nodes ran in the default session. */
static int run_both(builder *b, uint32_t num_outputs, const int32_t *outputs) {
    assert_int_equal(ks__graph_set_io(&b->g, 1, &b->x, num_outputs, outputs), 0);
    uint8_t *img = NULL;
    size_t n = 0;
    char err[256];
    assert_int_equal(ks__ksm_write(&b->g, &img, &n, err, sizeof(err)), 0);
    ks__graph_free(&b->g);
    ks_model *m = NULL;
    assert_int_equal(ks_model_load_buffer(img, n, NULL, &m), KS_STATUS_OK);
    float *want[4] = {0};
    int concat_runs = -1;
    for (int keep = 1; keep >= 0; keep--) {
        ks_session *s = NULL;
        ks_session_desc d = {.num_threads = 1, .flags = keep ? KS_SESSION_KEEP_ALL_TENSORS : 0};
        assert_int_equal(ks_session_create(m, &d, &s), KS_STATUS_OK);
        assert_int_equal(ks_session_reshape(s, NULL), KS_STATUS_OK);
        prof_count pc = {0, 0};
        assert_int_equal(ks_session_set_profiler(s, on_prof, &pc), KS_STATUS_OK);
        ks_tensor in;
        assert_int_equal(ks_session_input(s, 0, &in), 0);
        float *xv = in.data;
        for (size_t i = 0; i < in.size_bytes / sizeof(float); i++)
            xv[i] = (float)((int)(i * 37 % 23) - 11) * 0.125f;
        assert_int_equal(ks_session_run(s), KS_STATUS_OK);
        for (uint32_t o = 0; o < num_outputs; o++) {
            ks_tensor out;
            assert_int_equal(ks_session_output(s, o, &out), 0);
            if (keep) {
                want[o] = malloc(out.size_bytes);
                assert_non_null(want[o]);
                memcpy(want[o], out.data, out.size_bytes);
            } else if (memcmp(want[o], out.data, out.size_bytes) != 0) {
                fail_msg("output %u differs from the no-sharing session", o);
            }
        }
        if (keep) assert_true(pc.concat_runs > 0);
        if (!keep) concat_runs = pc.concat_runs;
        ks_session_destroy(s);
    }
    for (uint32_t o = 0; o < num_outputs; o++)
        free(want[o]);
    ks_model_destroy(m);
    free(img);
    return concat_runs;
}

/* a = x + 1, b = x * 2 (blocks of 4 x 16 floats = 256 bytes) -> concat rows -> tanh */
static void test_concat_in_place(void **state) {
    (void)state;
    builder b;
    begin(&b, 4, 16);
    int32_t a = binary(&b, KS_OP_ADD, "a", b.x, 1.0f);
    int32_t m = binary(&b, KS_OP_MUL, "b", b.x, 2.0f);
    int32_t in[2] = {a, m};
    int32_t y = concat(&b, "cat", 1, 2, in);
    int32_t z = unary(&b, KS_OP_TANH, "z", y);
    assert_int_equal(run_both(&b, 1, &z), 0); /* skipped: written in place */
}

/* a feeds the concat and, later, an ADD; the TANH after the concat runs in place on the
 * concat's buffer, so with a written in place the ADD would read tanh(a): the concat must copy.
 */
static void test_input_read_later(void **state) {
    (void)state;
    builder b;
    begin(&b, 4, 16);
    int32_t a = binary(&b, KS_OP_ADD, "a", b.x, 1.0f);
    int32_t m = binary(&b, KS_OP_MUL, "b", b.x, 2.0f);
    int32_t in[2] = {a, m};
    int32_t y = concat(&b, "cat", 1, 2, in);
    int32_t z = unary(&b, KS_OP_TANH, "z", y);
    int32_t w = binary(&b, KS_OP_ADD, "w", a, 0.5f);
    int32_t outs[2] = {z, w};
    assert_int_equal(run_both(&b, 2, outs), 1);
}

/* blocks of 3 x 5 floats (60 bytes) are not 64-byte aligned: copy */
static void test_unaligned_blocks(void **state) {
    (void)state;
    builder b;
    begin(&b, 3, 5);
    int32_t a = binary(&b, KS_OP_ADD, "a", b.x, 1.0f);
    int32_t m = binary(&b, KS_OP_MUL, "b", b.x, 2.0f);
    int32_t in[2] = {a, m};
    int32_t y = concat(&b, "cat", 1, 2, in);
    int32_t z = unary(&b, KS_OP_TANH, "z", y);
    assert_int_equal(run_both(&b, 1, &z), 1);
}

/* concat(concat(a, b), c) along rows, then a channel concat (not contiguous: copies) */
static void test_nested_and_inner_axis(void **state) {
    (void)state;
    builder b;
    begin(&b, 4, 16);
    int32_t a = binary(&b, KS_OP_ADD, "a", b.x, 1.0f);
    int32_t m = binary(&b, KS_OP_MUL, "b", b.x, 2.0f);
    int32_t c = binary(&b, KS_OP_SUB, "c", b.x, 3.0f);
    int32_t in1[2] = {a, m};
    int32_t ab = concat(&b, "cat1", 1, 2, in1);
    int32_t in2[2] = {ab, c};
    int32_t abc = concat(&b, "cat2", 1, 2, in2);
    int32_t z = unary(&b, KS_OP_TANH, "z", abc);
    int32_t p = binary(&b, KS_OP_ADD, "p", b.x, 5.0f);
    int32_t q = binary(&b, KS_OP_MUL, "q", b.x, -1.0f);
    int32_t in3[2] = {p, q};
    int32_t inner = concat(&b, "cat3", 2, 2, in3); /* last axis: rows interleave */
    int32_t outs[2] = {z, inner};
    assert_int_equal(run_both(&b, 2, outs), 1); /* only cat3 runs */
}

/* ks_session_set_output_needed: a = x + 1; out0 = tanh(a); out1 = sigmoid(a * 2); out2 = x * 3.
 * With out1 not needed its two nodes neither run nor take memory, the other outputs are the same
 * bit for bit, and out1 is refused with a message; marked needed again, it is computed. */
static void test_unneeded_outputs(void **state) {
    (void)state;
    builder b;
    begin(&b, 4, 16);
    int32_t a = binary(&b, KS_OP_ADD, "a", b.x, 1.0f);
    int32_t o0 = unary(&b, KS_OP_TANH, "o0", a);
    int32_t c = binary(&b, KS_OP_MUL, "c", a, 2.0f);
    int32_t o1 = unary(&b, KS_OP_SIGMOID, "o1", c);
    int32_t o2 = binary(&b, KS_OP_MUL, "o2", b.x, 3.0f);
    int32_t outs[3] = {o0, o1, o2};
    assert_int_equal(ks__graph_set_io(&b.g, 1, &b.x, 3, outs), 0);
    uint8_t *img = NULL;
    size_t n = 0;
    char err[256];
    assert_int_equal(ks__ksm_write(&b.g, &img, &n, err, sizeof(err)), 0);
    ks__graph_free(&b.g);
    ks_model *m = NULL;
    assert_int_equal(ks_model_load_buffer(img, n, NULL, &m), KS_STATUS_OK);
    ks_session *s = NULL;
    assert_int_equal(ks_session_create(m, NULL, &s), KS_STATUS_OK);
    assert_int_equal(ks_session_output_needed(s, 1), 1);
    assert_int_equal(ks_session_set_output_needed(s, 3, 0), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_session_output_needed(s, 3), 0);
    assert_int_equal(ks_session_set_output_needed(NULL, 0, 0), KS_STATUS_INVALID_ARGUMENT);
    float want[3][64];
    int runs_all = 0, runs_some = 0;
    for (int pass = 0; pass < 3; pass++) {
        /* pass 0: all needed; 1: out1 not needed; 2: needed again */
        assert_int_equal(ks_session_set_output_needed(s, 1, pass != 1), KS_STATUS_OK);
        assert_int_equal(ks_session_output_needed(s, 1), pass != 1);
        assert_int_equal(ks_session_reshape(s, NULL), KS_STATUS_OK);
        prof_count pc = {0, 0};
        assert_int_equal(ks_session_set_profiler(s, on_prof, &pc), KS_STATUS_OK);
        ks_tensor in;
        assert_int_equal(ks_session_input(s, 0, &in), 0);
        float *xv = in.data;
        for (size_t i = 0; i < 64; i++)
            xv[i] = (float)((int)(i * 37 % 23) - 11) * 0.125f;
        assert_int_equal(ks_session_run(s), KS_STATUS_OK);
        for (uint32_t o = 0; o < 3; o++) {
            ks_tensor out;
            ks_status st = ks_session_output(s, o, &out);
            if (pass == 1 && o == 1) {
                assert_int_equal(st, KS_STATUS_INVALID_STATE);
                assert_null(out.data);
                assert_int_equal(out.info.shape.rank, 3);
                assert_non_null(strstr(ks_last_error(s), "not needed"));
                continue;
            }
            assert_int_equal(st, KS_STATUS_OK);
            assert_int_equal(out.size_bytes, sizeof(want[o]));
            if (pass == 0)
                memcpy(want[o], out.data, sizeof(want[o]));
            else if (memcmp(want[o], out.data, sizeof(want[o])) != 0)
                fail_msg("pass %d: output %u differs", pass, o);
        }
        if (pass == 0) runs_all = pc.runs;
        if (pass == 1) runs_some = pc.runs;
        if (pass == 2) assert_int_equal(pc.runs, runs_all);
    }
    assert_int_equal(runs_all, 5);
    assert_int_equal(runs_some, 3);
    ks_session_destroy(s);
    ks_model_destroy(m);
    free(img);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concat_in_place),  cmocka_unit_test(test_input_read_later),
        cmocka_unit_test(test_unaligned_blocks), cmocka_unit_test(test_nested_and_inner_axis),
        cmocka_unit_test(test_unneeded_outputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
