/* Reference data-movement / shape kernels (backends/cpu/ref/data.c): hand-checked cases per op,
 * edge ranks, masks and error statuses/messages. Kernels are driven the way a session drives them:
 * output dtype/quant pre-filled, infer(), output buffers sized from the inferred shape, run(). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpu_kernel.h"

#define MAX_IO 8

typedef struct op_case {
    ks__node node;
    uint32_t num_in, num_out;
    ks__tensor in_def[MAX_IO], out_def[MAX_IO];
    ks__quant in_quant[MAX_IO], out_quant[MAX_IO];
    float in_scale[MAX_IO], out_scale[MAX_IO];
    int32_t in_zp[MAX_IO], out_zp[MAX_IO];
    ks__rt_tensor in[MAX_IO], out[MAX_IO];
    ks__rt_tensor *in_p[MAX_IO], *out_p[MAX_IO];
    bool run_time_only[MAX_IO]; /* hide data during infer */
    char names[2 * MAX_IO][16];
    char err[512];
    ks__kernel_ctx ctx;
} op_case;

static op_case *oc_new(uint32_t op) {
    op_case *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    c->node.op = op;
    c->node.name = "n";
    return c;
}

static void oc_free(op_case *c) {
    for (uint32_t i = 0; i < c->num_out; i++)
        free(c->out[i].data);
    free(c);
}

/* Adds an input named `name` (data is borrowed; NULL with rank<0 adds an absent input). */
static void oc_in(op_case *c, const char *name, ks_dtype dt, int32_t rank, const int64_t *dims,
                  const void *data) {
    uint32_t i = c->num_in++;
    assert_true(i < MAX_IO);
    if (rank < 0) {
        c->in_p[i] = NULL;
        return;
    }
    snprintf(c->names[i], sizeof(c->names[i]), "%s", name);
    c->in_def[i].name = c->names[i];
    c->in_def[i].dtype = dt;
    ks__rt_tensor *t = &c->in[i];
    t->dtype = dt;
    t->rank = rank;
    for (int32_t d = 0; d < rank; d++)
        t->dims[d] = dims[d];
    t->data = (void *)data;
    t->size_bytes = (size_t)ks__rt_numel(t) * ks_dtype_size(dt);
    t->quant = &c->in_quant[i];
    t->def = &c->in_def[i];
    c->in_p[i] = t;
}

static void oc_in_quant(op_case *c, uint32_t i, float scale, int32_t zp) {
    c->in_scale[i] = scale;
    c->in_zp[i] = zp;
    c->in_quant[i] = (ks__quant){1, 0, &c->in_scale[i], &c->in_zp[i]};
}

static void oc_out(op_case *c, ks_dtype dt) {
    uint32_t i = c->num_out++;
    assert_true(i < MAX_IO);
    snprintf(c->names[MAX_IO + i], sizeof(c->names[0]), "y%u", i);
    c->out_def[i].name = c->names[MAX_IO + i];
    c->out[i].dtype = dt;
    c->out[i].quant = &c->out_quant[i];
    c->out[i].def = &c->out_def[i];
    c->out_p[i] = &c->out[i];
}

static void oc_out_quant(op_case *c, uint32_t i, float scale, int32_t zp) {
    c->out_scale[i] = scale;
    c->out_zp[i] = zp;
    c->out_quant[i] = (ks__quant){1, 0, &c->out_scale[i], &c->out_zp[i]};
}

static const ks__kernel *oc_kernel(const op_case *c) {
    const ks__kernel *k = &ks__ref_kernels()->k[c->node.op];
    assert_non_null(k->run);
    return k;
}

static void oc_ctx(op_case *c) {
    c->ctx = (ks__kernel_ctx){.node = &c->node,
                              .node_index = 7,
                              .in = c->in_p,
                              .num_inputs = c->num_in,
                              .out = c->out_p,
                              .num_outputs = c->num_out,
                              .err = c->err,
                              .err_cap = sizeof(c->err)};
}

static ks_status oc_infer(op_case *c) {
    void *saved[MAX_IO];
    c->err[0] = '\0';
    oc_ctx(c);
    for (uint32_t i = 0; i < c->num_in; i++) {
        saved[i] = c->in[i].data;
        if (c->run_time_only[i]) c->in[i].data = NULL;
    }
    ks_status st = ks__ref_prepare(&c->ctx);
    for (uint32_t i = 0; i < c->num_in; i++)
        c->in[i].data = saved[i];
    return st;
}

/* infer + allocate outputs + run. */
static ks_status oc_exec(op_case *c) {
    ks_status st = oc_infer(c);
    if (st) return st;
    for (uint32_t i = 0; i < c->num_out; i++) {
        ks__rt_tensor *o = &c->out[i];
        int64_t n = ks__rt_numel(o);
        assert_true(n >= 0);
        o->size_bytes = (size_t)n * ks_dtype_size(o->dtype);
        free(o->data);
        o->data = calloc(1, o->size_bytes + 1);
        memset(o->data, 0xAB, o->size_bytes + 1);
        assert_non_null(o->data);
    }
    oc_ctx(c);
    return oc_kernel(c)->run(&c->ctx);
}

static void expect_shape(const op_case *c, uint32_t i, int32_t rank, const int64_t *dims) {
    assert_int_equal(c->out[i].rank, rank);
    for (int32_t d = 0; d < rank; d++)
        assert_int_equal(c->out[i].dims[d], dims[d]);
}

static void expect_f32(const op_case *c, uint32_t i, const float *want, int64_t n) {
    assert_int_equal(ks__rt_numel(&c->out[i]), n);
    const float *got = c->out[i].data;
    for (int64_t k = 0; k < n; k++) {
        if (got[k] != want[k])
            fail_msg("element %lld: got %g want %g", (long long)k, got[k], want[k]);
    }
}

static void expect_bytes(const op_case *c, uint32_t i, const void *want, size_t bytes) {
    assert_int_equal(c->out[i].size_bytes, bytes);
    assert_memory_equal(c->out[i].data, want, bytes);
}

static void expect_error(op_case *c, ks_status got, ks_status want, const char *needle) {
    if (got != want) fail_msg("status %d, want %d (%s)", (int)got, (int)want, c->err);
    if (!strstr(c->err, needle)) fail_msg("message '%s' lacks '%s'", c->err, needle);
    /* Every message names the op and node. */
    assert_non_null(strstr(c->err, "(node 7 'n')"));
}

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

static const float k_iota[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                               12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23};

/* ---- RESHAPE ------------------------------------------------------------------------------ */

static void test_reshape(void **state) {
    (void)state;
    /* Shape input with 0 (copy dim) and -1 (inferred): [2,3,4] -> [2,12]. */
    op_case *c = oc_new(KS_OP_RESHAPE);
    int64_t shp[] = {0, -1};
    oc_in(c, "x", KS_DTYPE_F32, 3, DIMS(2, 3, 4), k_iota);
    oc_in(c, "shp", KS_DTYPE_I64, 1, DIMS(2), shp);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 2, DIMS(2, 12));
    expect_f32(c, 0, k_iota, 24);
    oc_free(c);

    /* Params form: ip0 rank, ip1.. dims. */
    c = oc_new(KS_OP_RESHAPE);
    c->node.ip[0] = 3;
    c->node.ip[1] = 4;
    c->node.ip[2] = -1;
    c->node.ip[3] = 1;
    oc_in(c, "x", KS_DTYPE_F32, 2, DIMS(2, 6), k_iota);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 3, DIMS(4, 3, 1));
    oc_free(c);

    /* allowzero: a literal 0 on an empty tensor. */
    c = oc_new(KS_OP_RESHAPE);
    int32_t shp0[] = {3, 0};
    c->node.ip[9] = 1;
    oc_in(c, "x", KS_DTYPE_F32, 2, DIMS(0, 3), NULL);
    oc_in(c, "shp", KS_DTYPE_I32, 1, DIMS(2), shp0);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 2, DIMS(3, 0));
    oc_free(c);

    /* Rank 1 -> rank 0 with an empty shape input. */
    c = oc_new(KS_OP_RESHAPE);
    float one = 42.0f;
    oc_in(c, "x", KS_DTYPE_F32, 1, DIMS(1), &one);
    oc_in(c, "shp", KS_DTYPE_I64, 1, DIMS(0), NULL);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 0, NULL);
    expect_f32(c, 0, &one, 1);
    oc_free(c);
}

static void test_reshape_errors(void **state) {
    (void)state;
    op_case *c = oc_new(KS_OP_RESHAPE);
    int64_t shp[] = {4, 2};
    oc_in(c, "x", KS_DTYPE_F32, 2, DIMS(2, 3), k_iota);
    oc_in(c, "shp", KS_DTYPE_I64, 1, DIMS(2), shp);
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_exec(c), KS_STATUS_INVALID_SHAPE, "element count mismatch");
    assert_non_null(strstr(c->err, "'x' [2,3] has 6 elements"));
    assert_non_null(strstr(c->err, "[4,2] has 8"));
    oc_free(c);

    /* -1 that cannot divide. */
    c = oc_new(KS_OP_RESHAPE);
    int64_t shp2[] = {4, -1};
    oc_in(c, "x", KS_DTYPE_F32, 2, DIMS(2, 3), k_iota);
    oc_in(c, "shp", KS_DTYPE_I64, 1, DIMS(2), shp2);
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_exec(c), KS_STATUS_INVALID_SHAPE, "element count mismatch");
    oc_free(c);

    /* Two -1. */
    c = oc_new(KS_OP_RESHAPE);
    int64_t shp3[] = {-1, -1};
    oc_in(c, "x", KS_DTYPE_F32, 2, DIMS(2, 3), k_iota);
    oc_in(c, "shp", KS_DTYPE_I64, 1, DIMS(2), shp3);
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_exec(c), KS_STATUS_INVALID_MODEL, "more than one -1");
    oc_free(c);

    /* Shape only known at run time. */
    c = oc_new(KS_OP_RESHAPE);
    oc_in(c, "x", KS_DTYPE_F32, 2, DIMS(2, 3), k_iota);
    oc_in(c, "dyn_shape", KS_DTYPE_I64, 1, DIMS(2), shp);
    c->run_time_only[1] = true;
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_infer(c), KS_STATUS_UNSUPPORTED,
                 "shape input 'dyn_shape' is only known at run time");
    oc_free(c);

    /* Output dtype pre-filled by the graph must match. */
    c = oc_new(KS_OP_RESHAPE);
    int64_t shp4[] = {6};
    oc_in(c, "x", KS_DTYPE_F32, 2, DIMS(2, 3), k_iota);
    oc_in(c, "shp", KS_DTYPE_I64, 1, DIMS(1), shp4);
    oc_out(c, KS_DTYPE_I32);
    expect_error(c, oc_infer(c), KS_STATUS_INVALID_MODEL, "dtype i32 but the op produces f32");
    oc_free(c);
}

/* ---- TRANSPOSE ---------------------------------------------------------------------------- */

static void test_transpose(void **state) {
    (void)state;
    /* [2,3,4] perm [2,0,1] -> [4,2,3]: y[k][i][j] = x[i][j][k] = 12i + 4j + k. */
    op_case *c = oc_new(KS_OP_TRANSPOSE);
    c->node.ip[0] = 3;
    c->node.ip[1] = 2;
    c->node.ip[2] = 0;
    c->node.ip[3] = 1;
    oc_in(c, "x", KS_DTYPE_F32, 3, DIMS(2, 3, 4), k_iota);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 3, DIMS(4, 2, 3));
    static const float want[] = {0, 4, 8,  12, 16, 20, 1, 5, 9,  13, 17, 21,
                                 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23};
    expect_f32(c, 0, want, 24);
    oc_free(c);

    /* u8, 2-D, default perm (reverse). */
    c = oc_new(KS_OP_TRANSPOSE);
    uint8_t u[] = {1, 2, 3, 4, 5, 6};
    oc_in(c, "x", KS_DTYPE_U8, 2, DIMS(2, 3), u);
    oc_out(c, KS_DTYPE_U8);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 2, DIMS(3, 2));
    expect_bytes(c, 0, (uint8_t[]){1, 4, 2, 5, 3, 6}, 6);
    oc_free(c);

    /* Rank 0 and rank 1 are copies. */
    c = oc_new(KS_OP_TRANSPOSE);
    int64_t s = -5;
    oc_in(c, "x", KS_DTYPE_I64, 0, NULL, &s);
    oc_out(c, KS_DTYPE_I64);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 0, NULL);
    expect_bytes(c, 0, &s, 8);
    oc_free(c);

    c = oc_new(KS_OP_TRANSPOSE);
    c->node.ip[0] = 1;
    oc_in(c, "x", KS_DTYPE_F32, 1, DIMS(5), k_iota);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_f32(c, 0, k_iota, 5);
    oc_free(c);

    /* Not a permutation. */
    c = oc_new(KS_OP_TRANSPOSE);
    c->node.ip[0] = 2;
    c->node.ip[1] = 1;
    c->node.ip[2] = 1;
    oc_in(c, "x", KS_DTYPE_F32, 2, DIMS(2, 3), k_iota);
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_exec(c), KS_STATUS_INVALID_MODEL, "perm entry 1 is 1: not a permutation");
    oc_free(c);
}

/* ---- CONCAT ------------------------------------------------------------------------------- */

static void test_concat_small(void **state) {
    (void)state;
    /* [2,2] ++ [2,1] along axis -1. */
    op_case *c = oc_new(KS_OP_CONCAT);
    float a[] = {1, 2, 3, 4}, b[] = {9, 8};
    c->node.ip[0] = -1;
    oc_in(c, "a", KS_DTYPE_F32, 2, DIMS(2, 2), a);
    oc_in(c, "b", KS_DTYPE_F32, 2, DIMS(2, 1), b);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 2, DIMS(2, 3));
    expect_f32(c, 0, (float[]){1, 2, 9, 3, 4, 8}, 6);
    oc_free(c);

    /* Fused RELU6 on floats. */
    c = oc_new(KS_OP_CONCAT);
    float p[] = {-1, 7}, q[] = {3};
    c->node.ip[1] = KS_ACT_RELU6;
    oc_in(c, "p", KS_DTYPE_F32, 1, DIMS(2), p);
    oc_in(c, "q", KS_DTYPE_F32, 1, DIMS(1), q);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_f32(c, 0, (float[]){0, 6, 3}, 3);
    oc_free(c);

    /* i64 along axis 0 (dtype-agnostic by element size). */
    c = oc_new(KS_OP_CONCAT);
    int64_t i0[] = {1, -2}, i1[] = {INT64_MAX};
    oc_in(c, "i0", KS_DTYPE_I64, 1, DIMS(2), i0);
    oc_in(c, "i1", KS_DTYPE_I64, 1, DIMS(1), i1);
    oc_out(c, KS_DTYPE_I64);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_bytes(c, 0, (int64_t[]){1, -2, INT64_MAX}, 24);
    oc_free(c);
}

/* Concat along each axis of rank-4 tensors with odd sizes; three inputs whose sizes on the
 * concat axis are 1, 2 and 3. Expected values come from explicit index arithmetic. */
static void test_concat_rank4_each_axis(void **state) {
    (void)state;
    const int64_t base[4] = {3, 1, 5, 7};
    for (int32_t axis = 0; axis < 4; axis++) {
        int64_t dims[3][4];
        float *data[3];
        int64_t total = 0;
        for (int k = 0; k < 3; k++) {
            memcpy(dims[k], base, sizeof(base));
            dims[k][axis] = k + 1;
            total += k + 1;
            int64_t n = dims[k][0] * dims[k][1] * dims[k][2] * dims[k][3];
            data[k] = malloc((size_t)n * sizeof(float));
            for (int64_t e = 0; e < n; e++)
                data[k][e] = (float)(1000 * k + e);
        }
        op_case *c = oc_new(KS_OP_CONCAT);
        c->node.ip[0] = axis - (axis % 2 ? 4 : 0); /* odd axes given as negative */
        oc_in(c, "a", KS_DTYPE_F32, 4, dims[0], data[0]);
        oc_in(c, "b", KS_DTYPE_F32, 4, dims[1], data[1]);
        oc_in(c, "c", KS_DTYPE_F32, 4, dims[2], data[2]);
        oc_out(c, KS_DTYPE_F32);
        assert_int_equal(oc_exec(c), KS_STATUS_OK);
        int64_t od[4];
        memcpy(od, base, sizeof(od));
        od[axis] = total;
        expect_shape(c, 0, 4, od);
        const float *y = c->out[0].data;
        int64_t i[4];
        for (i[0] = 0; i[0] < od[0]; i[0]++)
            for (i[1] = 0; i[1] < od[1]; i[1]++)
                for (i[2] = 0; i[2] < od[2]; i[2]++)
                    for (i[3] = 0; i[3] < od[3]; i[3]++) {
                        int64_t j[4] = {i[0], i[1], i[2], i[3]};
                        int k = 0;
                        while (j[axis] >= dims[k][axis])
                            j[axis] -= dims[k++][axis];
                        int64_t src =
                            ((j[0] * dims[k][1] + j[1]) * dims[k][2] + j[2]) * dims[k][3] + j[3];
                        int64_t dst = ((i[0] * od[1] + i[1]) * od[2] + i[2]) * od[3] + i[3];
                        if (y[dst] != (float)(1000 * k + src))
                            fail_msg("axis %d dst %lld: got %g want %g", axis, (long long)dst,
                                     y[dst], (float)(1000 * k + src));
                    }
        oc_free(c);
        for (int k = 0; k < 3; k++)
            free(data[k]);
    }
}

static void test_concat_quantized(void **state) {
    (void)state;
    /* u8: input a has scale 0.5 zp 10 (requantized), b matches the output (copied), d has scale
     * 2 (saturates). Output scale 1, zp 0. */
    op_case *c = oc_new(KS_OP_CONCAT);
    uint8_t a[] = {10, 12, 20, 255, 0}, b[] = {7, 200}, d[] = {200, 3};
    oc_in(c, "a", KS_DTYPE_U8, 1, DIMS(5), a);
    oc_in(c, "b", KS_DTYPE_U8, 1, DIMS(2), b);
    oc_in(c, "d", KS_DTYPE_U8, 1, DIMS(2), d);
    oc_in_quant(c, 0, 0.5f, 10);
    oc_in_quant(c, 1, 1.0f, 0);
    oc_in_quant(c, 2, 2.0f, 0);
    oc_out(c, KS_DTYPE_U8);
    oc_out_quant(c, 0, 1.0f, 0);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    /* a: (q-10)*0.5 = 0, 1, 5, 122.5 -> 123 (half away from zero), -5 -> clamp 0. */
    expect_bytes(c, 0, (uint8_t[]){0, 1, 5, 123, 0, 7, 200, 255, 6}, 9);
    oc_free(c);

    /* i8 with a different output zero point and fused RELU: output zp -5 is real 0. */
    c = oc_new(KS_OP_CONCAT);
    int8_t p[] = {-10, 3, 127}, q[] = {-128, 0};
    c->node.ip[1] = KS_ACT_RELU;
    oc_in(c, "p", KS_DTYPE_I8, 1, DIMS(3), p);
    oc_in(c, "q", KS_DTYPE_I8, 1, DIMS(2), q);
    oc_in_quant(c, 0, 0.25f, -5); /* same as the output: copied, then clamped by RELU */
    oc_in_quant(c, 1, 0.5f, -8);  /* real -60, 4 -> q -245 -> -5 (relu), 11 */
    oc_out(c, KS_DTYPE_I8);
    oc_out_quant(c, 0, 0.25f, -5);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_bytes(c, 0, (int8_t[]){-5, 3, 127, -5, 11}, 5);
    oc_free(c);
}

static void test_concat_errors(void **state) {
    (void)state;
    op_case *c = oc_new(KS_OP_CONCAT);
    c->node.ip[0] = 2;
    oc_in(c, "a", KS_DTYPE_F32, 2, DIMS(2, 2), k_iota);
    oc_in(c, "b", KS_DTYPE_F32, 2, DIMS(2, 2), k_iota);
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_exec(c), KS_STATUS_INVALID_MODEL, "axis 2 is out of range for rank 2");
    oc_free(c);

    c = oc_new(KS_OP_CONCAT);
    oc_in(c, "a", KS_DTYPE_F32, 2, DIMS(2, 2), k_iota);
    oc_in(c, "b", KS_DTYPE_F32, 2, DIMS(2, 3), k_iota);
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_exec(c), KS_STATUS_INVALID_SHAPE, "input 1 'b' has dim 1 = 3");
    oc_free(c);
}

/* ---- SPLIT -------------------------------------------------------------------------------- */

static void test_split(void **state) {
    (void)state;
    /* Equal split of [2,4] along axis 1. */
    op_case *c = oc_new(KS_OP_SPLIT);
    c->node.ip[0] = 1;
    oc_in(c, "x", KS_DTYPE_F32, 2, DIMS(2, 4), k_iota);
    oc_out(c, KS_DTYPE_F32);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 2, DIMS(2, 2));
    expect_f32(c, 0, (float[]){0, 1, 4, 5}, 4);
    expect_f32(c, 1, (float[]){2, 3, 6, 7}, 4);
    oc_free(c);

    /* Sizes with -1, negative axis, rank 1. */
    c = oc_new(KS_OP_SPLIT);
    int32_t sizes[] = {1, -1, 2};
    c->node.ip[0] = -1;
    oc_in(c, "x", KS_DTYPE_F32, 1, DIMS(6), k_iota);
    oc_in(c, "sizes", KS_DTYPE_I32, 1, DIMS(3), sizes);
    oc_out(c, KS_DTYPE_F32);
    oc_out(c, KS_DTYPE_F32);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 1, 1, DIMS(3));
    expect_f32(c, 0, (float[]){0}, 1);
    expect_f32(c, 1, (float[]){1, 2, 3}, 3);
    expect_f32(c, 2, (float[]){4, 5}, 2);
    oc_free(c);

    /* Uneven equal split: the last part gets the remainder. */
    c = oc_new(KS_OP_SPLIT);
    oc_in(c, "x", KS_DTYPE_F32, 1, DIMS(5), k_iota);
    oc_out(c, KS_DTYPE_F32);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_f32(c, 0, (float[]){0, 1, 2}, 3);
    expect_f32(c, 1, (float[]){3, 4}, 2);
    oc_free(c);

    /* Sizes that do not add up. */
    c = oc_new(KS_OP_SPLIT);
    int64_t bad[] = {2, 2};
    oc_in(c, "x", KS_DTYPE_F32, 1, DIMS(5), k_iota);
    oc_in(c, "sizes", KS_DTYPE_I64, 1, DIMS(2), bad);
    oc_out(c, KS_DTYPE_F32);
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_exec(c), KS_STATUS_INVALID_SHAPE, "sizes sum to 4 but axis 0");
    oc_free(c);

    /* Sizes only known at run time. */
    c = oc_new(KS_OP_SPLIT);
    oc_in(c, "x", KS_DTYPE_F32, 1, DIMS(4), k_iota);
    oc_in(c, "sz", KS_DTYPE_I64, 1, DIMS(2), bad);
    c->run_time_only[1] = true;
    oc_out(c, KS_DTYPE_F32);
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_infer(c), KS_STATUS_UNSUPPORTED, "sizes input 'sz' is only known at run");
    oc_free(c);
}

/* ---- SLICE -------------------------------------------------------------------------------- */

static op_case *slice_case(const float *x, int32_t rank, const int64_t *dims, int32_t n,
                           const int64_t *starts, const int64_t *ends, const int64_t *axes,
                           const int64_t *steps) {
    op_case *c = oc_new(KS_OP_SLICE);
    oc_in(c, "x", KS_DTYPE_F32, rank, dims, x);
    oc_in(c, "starts", KS_DTYPE_I64, 1, DIMS(n), starts);
    oc_in(c, "ends", KS_DTYPE_I64, 1, DIMS(n), ends);
    oc_in(c, "axes", KS_DTYPE_I64, axes ? 1 : -1, DIMS(n), axes);
    oc_in(c, "steps", KS_DTYPE_I64, steps ? 1 : -1, DIMS(n), steps);
    oc_out(c, KS_DTYPE_F32);
    return c;
}

static void test_slice_onnx(void **state) {
    (void)state;
    /* x[-3:INT64_MAX] on [10]. */
    op_case *c =
        slice_case(k_iota, 1, DIMS(10), 1, (int64_t[]){-3}, (int64_t[]){INT64_MAX}, NULL, NULL);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 1, DIMS(3));
    expect_f32(c, 0, (float[]){7, 8, 9}, 3);
    oc_free(c);

    /* Full reverse: start -1, end INT64_MIN, step -1. */
    c = slice_case(k_iota, 1, DIMS(5), 1, (int64_t[]){-1}, (int64_t[]){INT64_MIN}, NULL,
                   (int64_t[]){-1});
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_f32(c, 0, (float[]){4, 3, 2, 1, 0}, 5);
    oc_free(c);

    /* Start INT64_MAX clamps to dim-1 for negative steps; step -3: 9, 6, 3 (end 1 exclusive). */
    c = slice_case(k_iota, 1, DIMS(10), 1, (int64_t[]){INT64_MAX}, (int64_t[]){1}, NULL,
                   (int64_t[]){-3});
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_f32(c, 0, (float[]){9, 6, 3}, 3);
    oc_free(c);

    /* 2-D [4,6], axes [-1, 0]: columns 1::2, rows 3:0:-2 -> rows 3,1. */
    c = slice_case(k_iota, 2, DIMS(4, 6), 2, (int64_t[]){1, 3}, (int64_t[]){INT64_MAX, 0},
                   (int64_t[]){-1, 0}, (int64_t[]){2, -2});
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 2, DIMS(2, 3));
    expect_f32(c, 0, (float[]){19, 21, 23, 7, 9, 11}, 6);
    oc_free(c);

    /* Empty result: start past end. */
    c = slice_case(k_iota, 1, DIMS(5), 1, (int64_t[]){4}, (int64_t[]){2}, NULL, NULL);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 1, DIMS(0));
    oc_free(c);

    /* Step 0 is an error naming the axis. */
    c = slice_case(k_iota, 1, DIMS(5), 1, (int64_t[]){0}, (int64_t[]){2}, NULL, (int64_t[]){0});
    expect_error(c, oc_exec(c), KS_STATUS_INVALID_MODEL, "step for axis 0 is 0");
    oc_free(c);

    /* Starts only known at run time. */
    c = slice_case(k_iota, 1, DIMS(5), 1, (int64_t[]){0}, (int64_t[]){2}, NULL, NULL);
    c->run_time_only[1] = true;
    expect_error(c, oc_infer(c), KS_STATUS_UNSUPPORTED, "starts input 'starts' is only known");
    oc_free(c);
}

static void test_slice_tflite_masks(void **state) {
    (void)state;
    /* x [3,4]; entry 0 shrink at begin 1 (row 1 dropped to rank 1); entry 1 begin masked (the
     * begin value 3 is ignored) and end 3: row1[0:3] = 4, 5, 6. */
    op_case *c = slice_case(k_iota, 2, DIMS(3, 4), 2, (int64_t[]){1, 3}, (int64_t[]){0, 3}, NULL,
                            (int64_t[]){1, 1});
    c->node.ip[0] = 2; /* begin_mask: entry 1 */
    c->node.ip[2] = 1; /* shrink_mask: entry 0 */
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 1, DIMS(3));
    expect_f32(c, 0, (float[]){4, 5, 6}, 3);
    oc_free(c);

    /* Negative step with end mask runs to the first element: x[-2::-1] on [5] -> 3,2,1,0. */
    c = slice_case(k_iota, 1, DIMS(5), 1, (int64_t[]){-2}, (int64_t[]){0}, NULL, (int64_t[]){-1});
    c->node.ip[1] = 1; /* end_mask */
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_f32(c, 0, (float[]){3, 2, 1, 0}, 4);
    oc_free(c);

    /* Begin mask with negative step starts at the last element: x[:1:-2] on [6] -> 5, 3. */
    c = slice_case(k_iota, 1, DIMS(6), 1, (int64_t[]){0}, (int64_t[]){1}, NULL, (int64_t[]){-2});
    c->node.ip[0] = 1;
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_f32(c, 0, (float[]){5, 3}, 2);
    oc_free(c);

    /* Shrink with a negative index on the last axis: x[:, -1] on [2,3] -> 2, 5. Only one entry
     * given, applied through axes. */
    c = slice_case(k_iota, 2, DIMS(2, 3), 1, (int64_t[]){-1}, (int64_t[]){0}, (int64_t[]){1}, NULL);
    c->node.ip[2] = 1;
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 1, DIMS(2));
    expect_f32(c, 0, (float[]){2, 5}, 2);
    oc_free(c);

    /* Shrink everything of a rank-1 tensor: rank-0 output. */
    c = slice_case(k_iota, 1, DIMS(4), 1, (int64_t[]){2}, (int64_t[]){3}, NULL, NULL);
    c->node.ip[2] = 1;
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 0, NULL);
    expect_f32(c, 0, (float[]){2}, 1);
    oc_free(c);

    /* Shrink index out of range. */
    c = slice_case(k_iota, 1, DIMS(4), 1, (int64_t[]){4}, (int64_t[]){5}, NULL, NULL);
    c->node.ip[2] = 1;
    expect_error(c, oc_exec(c), KS_STATUS_INVALID_SHAPE,
                 "shrink index 4 is out of range for axis 0 of size 4");
    oc_free(c);
}

/* ---- PAD ---------------------------------------------------------------------------------- */

static op_case *pad_case(ks_dtype dt, const void *x, int32_t rank, const int64_t *dims,
                         const int64_t *pads, int32_t mode) {
    op_case *c = oc_new(KS_OP_PAD);
    c->node.ip[0] = mode;
    oc_in(c, "x", dt, rank, dims, x);
    oc_in(c, "pads", KS_DTYPE_I64, 2, DIMS(rank, 2), pads);
    oc_out(c, dt);
    return c;
}

static void test_pad_1d_modes(void **state) {
    (void)state;
    const float x[] = {1, 2, 3};
    static const float want[4][7] = {
        {9, 9, 1, 2, 3, 9, 9}, /* constant 9 */
        {3, 2, 1, 2, 3, 2, 1}, /* reflect */
        {1, 1, 1, 2, 3, 3, 3}, /* edge */
        {2, 1, 1, 2, 3, 3, 2}, /* symmetric */
    };
    for (int32_t mode = 0; mode < 4; mode++) {
        op_case *c = pad_case(KS_DTYPE_F32, x, 1, DIMS(3), (int64_t[]){2, 2}, mode);
        c->node.fp[0] = 9.0f;
        assert_int_equal(oc_exec(c), KS_STATUS_OK);
        expect_shape(c, 0, 1, DIMS(7));
        expect_f32(c, 0, want[mode], 7);
        oc_free(c);
    }
    /* Reflect wider than the axis folds again (numpy): [1,2,3] with 5 before. */
    op_case *c = pad_case(KS_DTYPE_F32, x, 1, DIMS(3), (int64_t[]){5, 0}, 1);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_f32(c, 0, (float[]){2, 1, 2, 3, 2, 1, 2, 3}, 8);
    oc_free(c);
}

static void test_pad_2d(void **state) {
    (void)state;
    /* Reflect x = [[0,1,2],[3,4,5]] with pads rows (1,1), cols (2,0): row -1 -> 1, row 2 -> 0;
     * col -2 -> 2, col -1 -> 1. */
    op_case *c = pad_case(KS_DTYPE_F32, k_iota, 2, DIMS(2, 3), (int64_t[]){1, 1, 2, 0}, 1);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 2, DIMS(4, 5));
    expect_f32(c, 0, (float[]){5, 4, 3, 4, 5, /* row -1 -> row 1 */
                               2, 1, 0, 1, 2, /* row 0 */
                               5, 4, 3, 4, 5, /* row 1 */
                               2, 1, 0, 1, 2 /* row 2 -> row 0 */},
               20);
    oc_free(c);

    /* Constant with a negative (cropping) pad: cols (-1, 1) on [2,3]. */
    c = pad_case(KS_DTYPE_F32, k_iota, 2, DIMS(2, 3), (int64_t[]){0, 0, -1, 1}, 0);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 2, DIMS(2, 3));
    expect_f32(c, 0, (float[]){1, 2, 0, 4, 5, 0}, 6);
    oc_free(c);

    /* Rank-0 input with [0,2] pads is a copy. */
    float s = 3.5f;
    c = oc_new(KS_OP_PAD);
    oc_in(c, "x", KS_DTYPE_F32, 0, NULL, &s);
    oc_in(c, "pads", KS_DTYPE_I32, 2, DIMS(0, 2), NULL);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_f32(c, 0, &s, 1);
    oc_free(c);
}

static void test_pad_quantized_and_value(void **state) {
    (void)state;
    /* Quantized u8: the default pad value is the output zero point. */
    uint8_t q[] = {1, 2};
    op_case *c = pad_case(KS_DTYPE_U8, q, 1, DIMS(2), (int64_t[]){1, 2}, 0);
    oc_in_quant(c, 0, 0.1f, 128);
    oc_out_quant(c, 0, 0.1f, 128);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_bytes(c, 0, (uint8_t[]){128, 1, 2, 128, 128}, 5);
    oc_free(c);

    /* An explicit value input wins. */
    uint8_t v = 7;
    c = pad_case(KS_DTYPE_U8, q, 1, DIMS(2), (int64_t[]){1, 0}, 0);
    oc_in(c, "value", KS_DTYPE_U8, 0, NULL, &v);
    oc_out_quant(c, 0, 0.1f, 128);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_bytes(c, 0, (uint8_t[]){7, 1, 2}, 3);
    oc_free(c);

    /* Pads only known at run time. */
    c = pad_case(KS_DTYPE_U8, q, 1, DIMS(2), (int64_t[]){1, 0}, 0);
    c->run_time_only[1] = true;
    expect_error(c, oc_infer(c), KS_STATUS_UNSUPPORTED, "pads input 'pads' is only known");
    oc_free(c);

    /* Bad mode. */
    c = pad_case(KS_DTYPE_U8, q, 1, DIMS(2), (int64_t[]){1, 0}, 9);
    expect_error(c, oc_exec(c), KS_STATUS_INVALID_MODEL, "pad mode 9 is unknown");
    oc_free(c);
}

/* ---- PACK / UNPACK ------------------------------------------------------------------------ */

static void test_pack_unpack(void **state) {
    (void)state;
    /* Pack two [2] along axis 1 -> [2,2]: a0 b0 a1 b1. */
    op_case *c = oc_new(KS_OP_PACK);
    float a[] = {1, 2}, b[] = {3, 4};
    c->node.ip[0] = 1;
    oc_in(c, "a", KS_DTYPE_F32, 1, DIMS(2), a);
    oc_in(c, "b", KS_DTYPE_F32, 1, DIMS(2), b);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 2, DIMS(2, 2));
    expect_f32(c, 0, (float[]){1, 3, 2, 4}, 4);
    oc_free(c);

    /* Pack scalars -> [3]. */
    c = oc_new(KS_OP_PACK);
    int32_t s0 = 5, s1 = 6, s2 = 7;
    oc_in(c, "s0", KS_DTYPE_I32, 0, NULL, &s0);
    oc_in(c, "s1", KS_DTYPE_I32, 0, NULL, &s1);
    oc_in(c, "s2", KS_DTYPE_I32, 0, NULL, &s2);
    oc_out(c, KS_DTYPE_I32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_bytes(c, 0, (int32_t[]){5, 6, 7}, 12);
    oc_free(c);

    /* Unpack [2,3] along axis -1 -> three [2]. */
    c = oc_new(KS_OP_UNPACK);
    c->node.ip[0] = -1;
    oc_in(c, "x", KS_DTYPE_F32, 2, DIMS(2, 3), k_iota);
    oc_out(c, KS_DTYPE_F32);
    oc_out(c, KS_DTYPE_F32);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 2, 1, DIMS(2));
    expect_f32(c, 0, (float[]){0, 3}, 2);
    expect_f32(c, 1, (float[]){1, 4}, 2);
    expect_f32(c, 2, (float[]){2, 5}, 2);
    oc_free(c);

    /* Unpack [3] -> three scalars. */
    c = oc_new(KS_OP_UNPACK);
    oc_in(c, "x", KS_DTYPE_F32, 1, DIMS(3), k_iota);
    for (int i = 0; i < 3; i++)
        oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 1, 0, NULL);
    expect_f32(c, 2, (float[]){2}, 1);
    oc_free(c);

    /* Output count must match the axis. */
    c = oc_new(KS_OP_UNPACK);
    oc_in(c, "x", KS_DTYPE_F32, 1, DIMS(3), k_iota);
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_exec(c), KS_STATUS_INVALID_SHAPE, "has size 3 but the op has 1 outputs");
    oc_free(c);
}

/* ---- GATHER / GATHER_ND ------------------------------------------------------------------- */

static void test_gather(void **state) {
    (void)state;
    /* x [3,2], indices [-1, 0] on axis 0 -> rows 2, 0. */
    op_case *c = oc_new(KS_OP_GATHER);
    int64_t idx[] = {-1, 0};
    oc_in(c, "x", KS_DTYPE_F32, 2, DIMS(3, 2), k_iota);
    oc_in(c, "idx", KS_DTYPE_I64, 1, DIMS(2), idx);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 2, DIMS(2, 2));
    expect_f32(c, 0, (float[]){4, 5, 0, 1}, 4);
    oc_free(c);

    /* Rank-0 index on axis -1 drops the axis: x [2,3], idx 1 -> [1, 4]. */
    c = oc_new(KS_OP_GATHER);
    int32_t one = 1;
    c->node.ip[0] = -1;
    oc_in(c, "x", KS_DTYPE_F32, 2, DIMS(2, 3), k_iota);
    oc_in(c, "idx", KS_DTYPE_I32, 0, NULL, &one);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 1, DIMS(2));
    expect_f32(c, 0, (float[]){1, 4}, 2);
    oc_free(c);

    /* 2-D indices on axis 1 of a u8 tensor: x [2,3], idx [[2,-3],[0,0]] -> [2,2,2]. */
    c = oc_new(KS_OP_GATHER);
    uint8_t u[] = {10, 11, 12, 20, 21, 22};
    int32_t idx2[] = {2, -3, 0, 0};
    c->node.ip[0] = 1;
    oc_in(c, "x", KS_DTYPE_U8, 2, DIMS(2, 3), u);
    oc_in(c, "idx", KS_DTYPE_I32, 2, DIMS(2, 2), idx2);
    oc_out(c, KS_DTYPE_U8);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 3, DIMS(2, 2, 2));
    expect_bytes(c, 0, (uint8_t[]){12, 10, 10, 10, 22, 20, 20, 20}, 8);
    oc_free(c);
}

static void test_gather_errors(void **state) {
    (void)state;
    /* Out-of-range index: infer succeeds (indices may be run-time data), run fails. */
    op_case *c = oc_new(KS_OP_GATHER);
    int64_t idx[] = {0, 3};
    oc_in(c, "x", KS_DTYPE_F32, 2, DIMS(3, 2), k_iota);
    oc_in(c, "idx", KS_DTYPE_I64, 1, DIMS(2), idx);
    c->run_time_only[1] = true;
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_infer(c), KS_STATUS_OK);
    expect_error(c, oc_exec(c), KS_STATUS_INVALID_ARGUMENT,
                 "index 3 at position 1 of indices 'idx' is out of range for axis 0 of size 3");
    oc_free(c);

    c = oc_new(KS_OP_GATHER);
    int64_t neg[] = {-4};
    oc_in(c, "x", KS_DTYPE_F32, 2, DIMS(3, 2), k_iota);
    oc_in(c, "idx", KS_DTYPE_I64, 1, DIMS(1), neg);
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_exec(c), KS_STATUS_INVALID_ARGUMENT, "index -4");
    oc_free(c);

    /* Bad axis. */
    c = oc_new(KS_OP_GATHER);
    c->node.ip[0] = -3;
    oc_in(c, "x", KS_DTYPE_F32, 2, DIMS(3, 2), k_iota);
    oc_in(c, "idx", KS_DTYPE_I64, 1, DIMS(1), idx);
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_exec(c), KS_STATUS_INVALID_MODEL, "axis -3 is out of range for rank 2");
    oc_free(c);
}

static void test_gather_nd(void **state) {
    (void)state;
    /* params [2,3]; indices [[1,0],[0,2]] -> [3, 2]. */
    op_case *c = oc_new(KS_OP_GATHER_ND);
    int32_t idx[] = {1, 0, 0, 2};
    oc_in(c, "p", KS_DTYPE_F32, 2, DIMS(2, 3), k_iota);
    oc_in(c, "idx", KS_DTYPE_I32, 2, DIMS(2, 2), idx);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 1, DIMS(2));
    expect_f32(c, 0, (float[]){3, 2}, 2);
    oc_free(c);

    /* Slices: params [2,2,2], indices [[1],[0]] -> [2,2,2] with blocks 1 then 0. */
    c = oc_new(KS_OP_GATHER_ND);
    int64_t idx2[] = {1, 0};
    oc_in(c, "p", KS_DTYPE_F32, 3, DIMS(2, 2, 2), k_iota);
    oc_in(c, "idx", KS_DTYPE_I64, 2, DIMS(2, 1), idx2);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 3, DIMS(2, 2, 2));
    expect_f32(c, 0, (float[]){4, 5, 6, 7, 0, 1, 2, 3}, 8);
    oc_free(c);

    /* Rank-1 indices select one element: rank-0 output. */
    c = oc_new(KS_OP_GATHER_ND);
    int64_t idx3[] = {1, 2};
    oc_in(c, "p", KS_DTYPE_F32, 2, DIMS(2, 3), k_iota);
    oc_in(c, "idx", KS_DTYPE_I64, 1, DIMS(2), idx3);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 0, NULL);
    expect_f32(c, 0, (float[]){5}, 1);
    oc_free(c);

    /* Out of range (TFLite does not wrap negatives). */
    c = oc_new(KS_OP_GATHER_ND);
    int64_t bad[] = {-1, 0};
    oc_in(c, "p", KS_DTYPE_F32, 2, DIMS(2, 3), k_iota);
    oc_in(c, "idx", KS_DTYPE_I64, 1, DIMS(2), bad);
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_exec(c), KS_STATUS_INVALID_ARGUMENT, "index -1 (entry 0 of index tuple 0");
    oc_free(c);
}

/* ---- SHAPE / SQUEEZE / UNSQUEEZE ---------------------------------------------------------- */

static void test_shape(void **state) {
    (void)state;
    op_case *c = oc_new(KS_OP_SHAPE);
    oc_in(c, "x", KS_DTYPE_F32, 3, DIMS(2, 0, 7), NULL); /* dims only: no data needed */
    oc_out(c, KS_DTYPE_I32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 1, DIMS(3));
    expect_bytes(c, 0, (int32_t[]){2, 0, 7}, 12);
    oc_free(c);

    c = oc_new(KS_OP_SHAPE);
    oc_in(c, "x", KS_DTYPE_U8, 2, DIMS(5, 1), NULL);
    oc_out(c, KS_DTYPE_I64);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_bytes(c, 0, (int64_t[]){5, 1}, 16);
    oc_free(c);

    /* Rank 0 -> empty vector. */
    c = oc_new(KS_OP_SHAPE);
    oc_in(c, "x", KS_DTYPE_F32, 0, NULL, NULL);
    oc_out(c, KS_DTYPE_I64);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 1, DIMS(0));
    oc_free(c);

    c = oc_new(KS_OP_SHAPE);
    oc_in(c, "x", KS_DTYPE_F32, 1, DIMS(2), NULL);
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_infer(c), KS_STATUS_INVALID_MODEL, "shape produces i32 or i64");
    oc_free(c);
}

static void test_squeeze_unsqueeze(void **state) {
    (void)state;
    /* All size-1 axes. */
    op_case *c = oc_new(KS_OP_SQUEEZE);
    oc_in(c, "x", KS_DTYPE_F32, 4, DIMS(1, 3, 1, 2), k_iota);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 2, DIMS(3, 2));
    expect_f32(c, 0, k_iota, 6);
    oc_free(c);

    /* Listed negative axis only. */
    c = oc_new(KS_OP_SQUEEZE);
    c->node.ip[0] = 1;
    c->node.ip[1] = -2;
    oc_in(c, "x", KS_DTYPE_F32, 4, DIMS(1, 3, 1, 2), k_iota);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 3, DIMS(1, 3, 2));
    oc_free(c);

    /* [1] -> scalar. */
    c = oc_new(KS_OP_SQUEEZE);
    oc_in(c, "x", KS_DTYPE_F32, 1, DIMS(1), k_iota);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 0, NULL);
    oc_free(c);

    c = oc_new(KS_OP_SQUEEZE);
    c->node.ip[0] = 1;
    c->node.ip[1] = 1;
    oc_in(c, "x", KS_DTYPE_F32, 2, DIMS(1, 3), k_iota);
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_exec(c), KS_STATUS_INVALID_SHAPE,
                 "cannot squeeze axis 1 of input 'x': size is 3");
    oc_free(c);

    /* Unsqueeze [3] at output positions 0 and -1 -> [1,3,1]. */
    c = oc_new(KS_OP_UNSQUEEZE);
    c->node.ip[0] = 2;
    c->node.ip[1] = 0;
    c->node.ip[2] = -1;
    oc_in(c, "x", KS_DTYPE_F32, 1, DIMS(3), k_iota);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 3, DIMS(1, 3, 1));
    expect_f32(c, 0, k_iota, 3);
    oc_free(c);

    /* Scalar -> [1]. */
    c = oc_new(KS_OP_UNSQUEEZE);
    c->node.ip[0] = 1;
    oc_in(c, "x", KS_DTYPE_F32, 0, NULL, k_iota);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 1, DIMS(1));
    oc_free(c);

    c = oc_new(KS_OP_UNSQUEEZE);
    c->node.ip[0] = 1;
    c->node.ip[1] = 3;
    oc_in(c, "x", KS_DTYPE_F32, 1, DIMS(3), k_iota);
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_exec(c), KS_STATUS_INVALID_MODEL, "unsqueeze axis 3 is out of range");
    oc_free(c);
}

/* ---- EXPAND / TILE ------------------------------------------------------------------------ */

static void test_expand(void **state) {
    (void)state;
    /* [3,1] to shape [2,1,4] -> [2,3,4]: y[b][i][j] = x[i]. */
    op_case *c = oc_new(KS_OP_EXPAND);
    float x[] = {1, 2, 3};
    int64_t shp[] = {2, 1, 4};
    oc_in(c, "x", KS_DTYPE_F32, 2, DIMS(3, 1), x);
    oc_in(c, "shp", KS_DTYPE_I64, 1, DIMS(3), shp);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 3, DIMS(2, 3, 4));
    const float *y = c->out[0].data;
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++)
                assert_true(y[(b * 3 + i) * 4 + j] == x[i]);
    oc_free(c);

    /* Scalar to [2]. */
    c = oc_new(KS_OP_EXPAND);
    int16_t h = -7;
    int32_t shp2[] = {2};
    oc_in(c, "x", KS_DTYPE_I16, 0, NULL, &h);
    oc_in(c, "shp", KS_DTYPE_I32, 1, DIMS(1), shp2);
    oc_out(c, KS_DTYPE_I16);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_bytes(c, 0, (int16_t[]){-7, -7}, 4);
    oc_free(c);

    c = oc_new(KS_OP_EXPAND);
    int64_t bad[] = {2};
    oc_in(c, "x", KS_DTYPE_F32, 1, DIMS(3), x);
    oc_in(c, "shp", KS_DTYPE_I64, 1, DIMS(1), bad);
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_exec(c), KS_STATUS_INVALID_SHAPE, "cannot broadcast dim 0 of input 'x'");
    oc_free(c);

    /* Empty but with a huge other dim: strides would overflow, so it is refused. */
    c = oc_new(KS_OP_EXPAND);
    int64_t huge[] = {0, INT64_MAX};
    oc_in(c, "x", KS_DTYPE_F32, 1, DIMS(1), x);
    oc_in(c, "shp", KS_DTYPE_I64, 1, DIMS(2), huge);
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_infer(c), KS_STATUS_LIMIT_EXCEEDED, "[0,9223372036854775807] is invalid");
    oc_free(c);

    c = oc_new(KS_OP_EXPAND);
    oc_in(c, "x", KS_DTYPE_F32, 1, DIMS(3), x);
    oc_in(c, "target", KS_DTYPE_I64, 1, DIMS(1), bad);
    c->run_time_only[1] = true;
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_infer(c), KS_STATUS_UNSUPPORTED, "shape input 'target' is only known");
    oc_free(c);
}

static void test_tile(void **state) {
    (void)state;
    /* [2,3] x [2,2] -> [4,6]. */
    op_case *c = oc_new(KS_OP_TILE);
    int64_t m[] = {2, 2};
    oc_in(c, "x", KS_DTYPE_F32, 2, DIMS(2, 3), k_iota);
    oc_in(c, "m", KS_DTYPE_I64, 1, DIMS(2), m);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 2, DIMS(4, 6));
    expect_f32(c, 0,
               (float[]){0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5, 0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5},
               24);
    oc_free(c);

    /* Rank 1, multiple 3; and multiple 0 gives an empty tensor. */
    c = oc_new(KS_OP_TILE);
    int32_t m1[] = {3};
    oc_in(c, "x", KS_DTYPE_F32, 1, DIMS(2), k_iota);
    oc_in(c, "m", KS_DTYPE_I32, 1, DIMS(1), m1);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_f32(c, 0, (float[]){0, 1, 0, 1, 0, 1}, 6);
    oc_free(c);

    c = oc_new(KS_OP_TILE);
    int32_t m0[] = {0};
    oc_in(c, "x", KS_DTYPE_F32, 1, DIMS(2), k_iota);
    oc_in(c, "m", KS_DTYPE_I32, 1, DIMS(1), m0);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_exec(c), KS_STATUS_OK);
    expect_shape(c, 0, 1, DIMS(0));
    oc_free(c);

    c = oc_new(KS_OP_TILE);
    int64_t huge[] = {INT64_MAX / 2};
    oc_in(c, "x", KS_DTYPE_F32, 1, DIMS(3), k_iota);
    oc_in(c, "m", KS_DTYPE_I64, 1, DIMS(1), huge);
    oc_out(c, KS_DTYPE_F32);
    expect_error(c, oc_infer(c), KS_STATUS_INVALID_MODEL, "multiples entry 0");
    oc_free(c);
}

/* A run with an output buffer that does not match the plan is refused, not overrun. */
static void test_run_checks_output(void **state) {
    (void)state;
    op_case *c = oc_new(KS_OP_TRANSPOSE);
    oc_in(c, "x", KS_DTYPE_F32, 2, DIMS(2, 3), k_iota);
    oc_out(c, KS_DTYPE_F32);
    assert_int_equal(oc_infer(c), KS_STATUS_OK);
    float small[2];
    c->out[0].data = small;
    c->out[0].size_bytes = sizeof(small);
    oc_ctx(c);
    ks_status st = oc_kernel(c)->run(&c->ctx);
    c->out[0].data = NULL;
    expect_error(c, st, KS_STATUS_INVALID_STATE, "output 'y0' is [3,2] (8 bytes)");
    oc_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reshape),
        cmocka_unit_test(test_reshape_errors),
        cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_concat_small),
        cmocka_unit_test(test_concat_rank4_each_axis),
        cmocka_unit_test(test_concat_quantized),
        cmocka_unit_test(test_concat_errors),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_slice_onnx),
        cmocka_unit_test(test_slice_tflite_masks),
        cmocka_unit_test(test_pad_1d_modes),
        cmocka_unit_test(test_pad_2d),
        cmocka_unit_test(test_pad_quantized_and_value),
        cmocka_unit_test(test_pack_unpack),
        cmocka_unit_test(test_gather),
        cmocka_unit_test(test_gather_errors),
        cmocka_unit_test(test_gather_nd),
        cmocka_unit_test(test_shape),
        cmocka_unit_test(test_squeeze_unsqueeze),
        cmocka_unit_test(test_expand),
        cmocka_unit_test(test_tile),
        cmocka_unit_test(test_run_checks_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
