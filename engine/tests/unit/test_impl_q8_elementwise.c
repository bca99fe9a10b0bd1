/* Fast quantized elementwise variants (q8_lut.c, x86/avx512/q8_elementwise.c) against the
 * reference kernels: lookup-table unary ops, requantization and dequantization, QUANTIZE from
 * F32 (with halves, NaN, infinities and huge values), same-shape ADD/SUB/MUL, for U8 and I8 with
 * assorted scales and zero points, odd lengths (every tail) and every quantized activation, at 1
 * and 3 threads. Results must be byte-identical. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "impl.h"
#include "cpu_kernel.h"
#include "q8_lut.h"
#include "q8_test_util.h"

static float frand(float lo, float hi) {
    return lo + (hi - lo) * (float)(urand() & 0xFFFF) / 65535.0f;
}

typedef struct qtensor {
    ks__rt_tensor t;
    ks__quant q;
    float scale;
    int32_t zp;
} qtensor;

static void mk(qtensor *qt, ks_dtype dt, int64_t n, int quantized) {
    memset(qt, 0, sizeof(*qt));
    qt->t.dtype = dt;
    qt->t.rank = 2;
    qt->t.dims[0] = 1;
    qt->t.dims[1] = n;
    qt->q.count = quantized ? 1 : 0;
    qt->q.scales = &qt->scale;
    qt->q.zero_points = &qt->zp;
    qt->t.quant = &qt->q;
    qt->t.size_bytes = (size_t)n * ks_dtype_size(dt);
    if (quantized) {
        qt->scale = frand(0.002f, 0.2f);
        qt->zp = dt == KS_DTYPE_U8 ? (int32_t)(urand() % 256) : (int32_t)(urand() % 256) - 128;
    }
}

static void fill(qtensor *qt) {
    int64_t n = qt->t.dims[1];
    qt->t.data = malloc(qt->t.size_bytes + 1);
    assert_non_null(qt->t.data);
    if (qt->t.dtype == KS_DTYPE_F32) {
        float *f = (float *)qt->t.data;
        for (int64_t i = 0; i < n; i++) {
            switch (urand() % 8) {
            case 0: /* exact halves of the scale: the rounding ties */
                f[i] = ((float)((int32_t)(urand() % 600) - 300) + 0.5f) * qt->scale;
                break;
            case 1:
                f[i] = frand(-1e6f, 1e6f);
                break;
            default:
                f[i] = frand(-40.0f, 40.0f) * qt->scale;
            }
        }
        if (n > 3) f[1] = NAN, f[2] = INFINITY, f[3] = -INFINITY;
    } else {
        for (size_t i = 0; i < qt->t.size_bytes; i++)
            ((uint8_t *)qt->t.data)[i] = (uint8_t)urand();
    }
}

static int is_elementwise_variant(const ks__impl *im) {
    return strncmp(im->name, "ks_q8_", 6) == 0 || strncmp(im->name, "ks_x8", 5) == 0;
}

/* Reference vs every supported ks_q8_ / ks_x8 variant of node->op, byte for byte
 * (q8_test_util.h). Returns the number of variants that took the node. */
static int check_variants(const ks__node *node, ks__rt_tensor **ins, uint32_t nin,
                          ks__rt_tensor *y) {
    return q8v_check(node, ins, nin, y, is_elementwise_variant, NULL);
}

static const int64_t k_lengths[] = {1, 7, 15, 16, 17, 33, 100, 1031, 40000};
#define NUM_LENGTHS (sizeof(k_lengths) / sizeof(k_lengths[0]))

static void test_lut_unary(void **state) {
    (void)state;
    static const uint32_t ops[] = {KS_OP_SIGMOID, KS_OP_TANH,         KS_OP_HARD_SWISH,
                                   KS_OP_ELU,     KS_OP_LEAKY_RELU,   KS_OP_RELU,
                                   KS_OP_RELU6,   KS_OP_RELU_N1_TO_1, KS_OP_HARD_SIGMOID,
                                   KS_OP_ABS,     KS_OP_EXP,          KS_OP_CLIP};
    int ran = 0;
    for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
        for (int dt = 0; dt < 2; dt++) {
            for (size_t l = 0; l < NUM_LENGTHS; l += 2) {
                ks_dtype d = dt ? KS_DTYPE_I8 : KS_DTYPE_U8;
                ks__node node;
                memset(&node, 0, sizeof(node));
                node.op = ops[o];
                node.fp[0] = ops[o] == KS_OP_CLIP ? -0.7f : 0.2f;
                node.fp[1] = ops[o] == KS_OP_CLIP ? 1.3f : 0.5f;
                qtensor x, y;
                mk(&x, d, k_lengths[l], 1);
                mk(&y, d, k_lengths[l], 1);
                if (ops[o] == KS_OP_SIGMOID) y.scale = 1.0f / 256.0f;
                fill(&x);
                ks__rt_tensor *ins[1] = {&x.t};
                ran += check_variants(&node, ins, 1, &y.t);
                free(x.t.data);
            }
        }
    }
    if (ks__cpu_isa() & (KS_ISA_AVX2 | KS_ISA_NEON)) assert_true(ran > 0);
}

static void test_requantize_dequantize(void **state) {
    (void)state;
    int ran = 0;
    for (int dt = 0; dt < 4; dt++) {
        for (size_t l = 0; l < NUM_LENGTHS; l++) {
            ks_dtype din = dt & 1 ? KS_DTYPE_I8 : KS_DTYPE_U8;
            ks_dtype dout = dt & 2 ? KS_DTYPE_I8 : KS_DTYPE_U8;
            ks__node node;
            memset(&node, 0, sizeof(node));
            node.op = KS_OP_QUANTIZE;
            qtensor x, y, f;
            mk(&x, din, k_lengths[l], 1);
            mk(&y, dout, k_lengths[l], 1);
            fill(&x);
            ks__rt_tensor *ins[1] = {&x.t};
            ran += check_variants(&node, ins, 1, &y.t);
            node.op = KS_OP_DEQUANTIZE;
            mk(&f, KS_DTYPE_F32, k_lengths[l], 0);
            ran += check_variants(&node, ins, 1, &f.t);
            free(x.t.data);
        }
    }
    if (ks__cpu_isa() & (KS_ISA_AVX2 | KS_ISA_NEON)) assert_true(ran > 0);
}

static void test_quantize_f32(void **state) {
    (void)state;
    int ran = 0;
    for (int dt = 0; dt < 2; dt++) {
        for (size_t l = 0; l < NUM_LENGTHS; l++) {
            ks__node node;
            memset(&node, 0, sizeof(node));
            node.op = KS_OP_QUANTIZE;
            qtensor x, y;
            mk(&y, dt ? KS_DTYPE_I8 : KS_DTYPE_U8, k_lengths[l], 1);
            mk(&x, KS_DTYPE_F32, k_lengths[l], 0);
            x.scale = y.scale;
            fill(&x);
            ks__rt_tensor *ins[1] = {&x.t};
            ran += check_variants(&node, ins, 1, &y.t);
            free(x.t.data);
        }
    }
    if (ks__cpu_isa() & KS_ISA_AVX512) assert_true(ran > 0);
}

/* QUANTIZE near every rounding boundary, at ordinary and extreme scales: the fast kernels must
 * give the reference's roundf(x / scale) bit for bit. Values: (m + 0.5) * scale and m * scale a
 * few ulps either way, subnormals, huge values. (A reciprocal-plus-FMA-residual division passed
 * this but was no faster: QUANTIZE is memory-bound here, 7 values per ns.) */
static void test_quantize_boundaries(void **state) {
    (void)state;
    static const float scales[] = {0.02f,      1.0f / 255.0f, 3.7e-5f, 0.0123f,       123.4f,
                                   0x1.8p-39f, 0x1p-41f,      0x1p41f, 0x1.fffffep39f};
    enum { N = 4099 };
    int ran = 0;
    for (size_t si = 0; si < sizeof(scales) / sizeof(scales[0]); si++) {
        for (int dt = 0; dt < 2; dt++) {
            ks__node node;
            memset(&node, 0, sizeof(node));
            node.op = KS_OP_QUANTIZE;
            qtensor x, y;
            mk(&y, dt ? KS_DTYPE_I8 : KS_DTYPE_U8, N, 1);
            y.scale = scales[si];
            mk(&x, KS_DTYPE_F32, N, 0);
            x.t.data = malloc(x.t.size_bytes + 1);
            assert_non_null(x.t.data);
            float *f = (float *)x.t.data;
            for (int64_t i = 0; i < N; i++) {
                float m = (float)((int32_t)(urand() % 600) - 300);
                float v = (urand() % 2 ? m + 0.5f : m) * y.scale;
                for (int d = (int)(urand() % 9) - 4; d != 0; d += d > 0 ? -1 : 1)
                    v = nextafterf(v, d > 0 ? INFINITY : -INFINITY);
                switch (urand() % 16) {
                case 0:
                    v = (float)(urand() % 1000) * 0x1p-140f; /* subnormal */
                    break;
                case 1:
                    v = (urand() % 2 ? 1.0f : -1.0f) * 0x1p100f * (float)(1 + urand() % 1000);
                    break;
                default:
                    break;
                }
                f[i] = v;
            }
            ks__rt_tensor *ins[1] = {&x.t};
            ran += check_variants(&node, ins, 1, &y.t);
            free(x.t.data);
        }
    }
    if (ks__cpu_isa() & KS_ISA_AVX512) assert_true(ran > 0);
}

static void test_binary(void **state) {
    (void)state;
    static const uint32_t ops[] = {KS_OP_ADD, KS_OP_SUB, KS_OP_MUL};
    static const int32_t acts[] = {KS_ACT_NONE, KS_ACT_RELU, KS_ACT_RELU6, KS_ACT_RELU_N1_TO_1};
    int ran = 0;
    for (size_t o = 0; o < 3; o++) {
        for (int dt = 0; dt < 2; dt++) {
            for (size_t l = 0; l < NUM_LENGTHS; l++) {
                ks_dtype d = dt ? KS_DTYPE_I8 : KS_DTYPE_U8;
                ks__node node;
                memset(&node, 0, sizeof(node));
                node.op = ops[o];
                node.ip[0] = acts[(l + o) % 4];
                qtensor a, b, y;
                mk(&a, d, k_lengths[l], 1);
                mk(&b, d, k_lengths[l], 1);
                mk(&y, d, k_lengths[l], 1);
                if (l % 3 == 0) b.scale = a.scale; /* equal scales: multiplier exactly 0.5 */
                if (ops[o] == KS_OP_MUL) y.scale = a.scale * b.scale * frand(20.0f, 200.0f);
                fill(&a);
                fill(&b);
                ks__rt_tensor *ins[2] = {&a.t, &b.t};
                ran += check_variants(&node, ins, 2, &y.t);
                free(a.t.data);
                free(b.t.data);
            }
        }
    }
    if (ks__cpu_isa() & KS_ISA_AVX512) assert_true(ran > 0);
}

/* Broadcast ADD / SUB / MUL: the AVX2 kernel reads an input whole, periodically (a trailing
 * suffix of the output's dims: per channel, a scalar) or one value per output row (last dim 1);
 * other broadcasts stay with the reference (no variant takes them). Shapes from movenet
 * (x - mean[3], x - scalar, [48,48,1] - [1,17]), the operands both ways round, odd periods, a
 * period whose tile is too large, and ranks that differ. */
static void test_binary_broadcast(void **state) {
    (void)state;
    static const struct {
        int32_t ra, rb, ry;
        int64_t a[4], b[4], y[4];
        int taken; /* whether the AVX2 kernel takes it */
    } cases[] = {
        {4, 4, 4, {1, 9, 11, 3}, {1, 1, 1, 3}, {1, 9, 11, 3}, 1},
        {4, 0, 4, {1, 9, 11, 3}, {0}, {1, 9, 11, 3}, 1},
        {0, 4, 4, {0}, {1, 9, 11, 3}, {1, 9, 11, 3}, 1},
        {3, 2, 3, {6, 5, 1}, {1, 17}, {6, 5, 17}, 1},
        {2, 3, 3, {1, 17}, {6, 5, 1}, {6, 5, 17}, 1},
        {3, 3, 3, {7, 5, 13}, {1, 5, 13}, {7, 5, 13}, 1},
        {3, 1, 3, {4, 6, 600}, {600}, {4, 6, 600}, 1},
        {2, 3, 3, {5, 7}, {3, 5, 7}, {3, 5, 7}, 1},
        {2, 3, 3, {9, 1001}, {2, 9, 1001}, {2, 9, 1001}, 0}, /* tile of 8008 bytes */
        {3, 3, 3, {4, 1, 5}, {1, 3, 1}, {4, 3, 5}, 0},       /* both broadcast in the middle */
        {3, 3, 3, {4, 3, 1}, {4, 1, 1}, {4, 3, 1}, 0},       /* last dim 1 */
    };
    static const uint32_t ops[] = {KS_OP_ADD, KS_OP_SUB, KS_OP_MUL};
    int ran = 0, expected = 0;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        for (size_t o = 0; o < 3; o++) {
            for (int dt = 0; dt < 2; dt++) {
                ks_dtype d = dt ? KS_DTYPE_I8 : KS_DTYPE_U8;
                ks__node node;
                memset(&node, 0, sizeof(node));
                node.op = ops[o];
                node.ip[0] = (int32_t)((c + o) % 3 == 0 ? KS_ACT_RELU : KS_ACT_NONE);
                qtensor q[3];
                const int32_t *rk[3] = {&cases[c].ra, &cases[c].rb, &cases[c].ry};
                const int64_t *dm[3] = {cases[c].a, cases[c].b, cases[c].y};
                for (int t = 0; t < 3; t++) {
                    int64_t n = 1;
                    for (int32_t k = 0; k < *rk[t]; k++)
                        n *= dm[t][k];
                    mk(&q[t], d, n, 1);
                    q[t].t.rank = *rk[t];
                    for (int32_t k = 0; k < *rk[t]; k++)
                        q[t].t.dims[k] = dm[t][k];
                }
                if (ops[o] == KS_OP_MUL)
                    q[2].scale = q[0].scale * q[1].scale * frand(20.0f, 200.0f);
                fill(&q[0]);
                fill(&q[1]);
                ks__rt_tensor *ins[2] = {&q[0].t, &q[1].t};
                int took = check_variants(&node, ins, 2, &q[2].t);
                ran += took;
                if (ks__cpu_isa() & KS_ISA_AVX2) {
                    if (cases[c].taken) assert_true(took > 0);
                    expected += cases[c].taken;
                }
                free(q[0].t.data);
                free(q[1].t.data);
            }
        }
    }
    print_message("broadcast binary: %d variant runs (%d cases the AVX2 kernel must take)\n", ran,
                  expected);
}

static void mk4(qtensor *qt, ks_dtype dt, int64_t n, int64_t h, int64_t w, int64_t c) {
    mk(qt, dt, n * h * w * c, 1);
    qt->t.rank = 4;
    qt->t.dims[0] = n, qt->t.dims[1] = h, qt->t.dims[2] = w, qt->t.dims[3] = c;
}

/* Bilinear RESIZE of U8 (float weights) and I8 (10-bit fixed point) against the reference,
 * byte for byte: up- and downsampling, every coordinate mode, channel counts with every tail
 * (1, 3, 8, 13, 17, 21: deeplabv3's 21 class maps, movenet's 17 heatmaps). The AVX2 kernel must
 * take U8 in every mode and I8 in the three modes of TFLite's fixed-point kernel. */
static void test_resize(void **state) {
    (void)state;
    static const int64_t shapes[][5] = {
        /* ih, iw, c, oh, ow */
        {5, 7, 21, 33, 41}, {12, 12, 17, 48, 48}, {4, 4, 8, 8, 8},  {3, 5, 1, 7, 11},
        {9, 9, 13, 4, 4},   {6, 6, 3, 6, 6},      {2, 3, 16, 9, 5},
    };
    static const int32_t coords[] = {KS_RESIZE_ASYMMETRIC, KS_RESIZE_ALIGN_CORNERS,
                                     KS_RESIZE_HALF_PIXEL, KS_RESIZE_PYTORCH_HALF_PIXEL};
    int ran = 0;
    for (size_t sh = 0; sh < sizeof(shapes) / sizeof(shapes[0]); sh++) {
        for (size_t co = 0; co < 4; co++) {
            for (int dt = 0; dt < 2; dt++) {
                ks_dtype d = dt ? KS_DTYPE_I8 : KS_DTYPE_U8;
                const int64_t *p = shapes[sh];
                ks__node node;
                memset(&node, 0, sizeof(node));
                node.op = KS_OP_RESIZE;
                node.ip[0] = 1; /* bilinear */
                node.ip[1] = coords[co];
                node.ip[3] = (int32_t)p[3];
                node.ip[4] = (int32_t)p[4];
                qtensor x, y;
                mk4(&x, d, 1 + (int64_t)(sh % 2), p[0], p[1], p[2]);
                mk4(&y, d, 1, 1, 1, 1); /* shaped by the reference's inference */
                y.scale = x.scale, y.zp = x.zp;
                fill(&x);
                ks__rt_tensor *ins[1] = {&x.t};
                int took = check_variants(&node, ins, 1, &y.t);
                ran += took;
                if ((ks__cpu_isa() & KS_ISA_AVX2) && (!dt || co < 3)) assert_true(took > 0);
                free(x.t.data);
            }
        }
    }
    print_message("q8 resize: %d variant runs\n", ran);
}

static int is_arg_variant(const ks__impl *im) {
    return strncmp(im->name, "ks_arg", 6) == 0;
}

/* ARG_MAX / ARG_MIN against the reference: U8, I8 (codes from a small range: many ties, the
 * first index must win) and F32 (with NaNs), every axis of a rank-4 tensor and negative axes,
 * I32 and I64 indices. */
static void test_argmax(void **state) {
    (void)state;
    static const int64_t dims[4] = {2, 9, 13, 21};
    static const ks_dtype xts[3] = {KS_DTYPE_U8, KS_DTYPE_I8, KS_DTYPE_F32};
    int ran = 0;
    for (int op = 0; op < 2; op++)
        for (int t = 0; t < 3; t++)
            for (int32_t axis = -1; axis < 4; axis++) {
                ks__node node;
                memset(&node, 0, sizeof(node));
                node.op = op ? KS_OP_ARG_MIN : KS_OP_ARG_MAX;
                node.ip[0] = axis;
                qtensor x, y;
                mk(&x, xts[t], 2 * 9 * 13 * 21, xts[t] != KS_DTYPE_F32);
                x.t.rank = 4;
                memcpy(x.t.dims, dims, sizeof(dims));
                fill(&x);
                if (xts[t] != KS_DTYPE_F32) /* ties everywhere */
                    for (size_t i = 0; i < x.t.size_bytes; i++)
                        ((uint8_t *)x.t.data)[i] = (uint8_t)(urand() % 4);
                mk(&y, (axis + t) % 2 ? KS_DTYPE_I64 : KS_DTYPE_I32, 1, 0);
                ks__rt_tensor *ins[1] = {&x.t};
                int took = q8v_check(&node, ins, 1, &y.t, is_arg_variant, NULL);
                if (ks__cpu_isa() & KS_ISA_AVX2) assert_true(took > 0);
                ran += took;
                free(x.t.data);
            }
    print_message("argmax / argmin: %d variant runs\n", ran);
}

static int is_space_variant(const ks__impl *im) {
    return strncmp(im->name, "ks_x_", 5) == 0 || strncmp(im->name, "ks_x8_cast", 10) == 0;
}

/* space_copy.c against the reference, byte for byte: DEPTH_TO_SPACE in both channel orders and
 * SPACE_TO_DEPTH for 1-, 4- and 8-byte elements, block sizes 2 and 3, odd shapes; CAST of U8 and
 * I8 to F32 (every byte value). */
static void test_space_cast(void **state) {
    (void)state;
    static const ks_dtype dts[3] = {KS_DTYPE_U8, KS_DTYPE_F32, KS_DTYPE_I64};
    int ran = 0;
    for (int bs = 2; bs <= 3; bs++)
        for (int t = 0; t < 3; t++)
            for (int mode = 0; mode < 3; mode++) { /* D2S DCR, D2S CRD, S2D */
                ks__node node;
                memset(&node, 0, sizeof(node));
                node.op = mode == 2 ? KS_OP_SPACE_TO_DEPTH : KS_OP_DEPTH_TO_SPACE;
                node.ip[0] = bs;
                node.ip[1] = mode == 1;
                int64_t n = 2, h = 5, w = 7, c = 3;
                qtensor x, y;
                if (mode == 2)
                    mk4(&x, dts[t], n, h * bs, w * bs, c);
                else
                    mk4(&x, dts[t], n, h, w, c * bs * bs);
                x.q.count = 0;
                fill(&x);
                mk4(&y, dts[t], 1, 1, 1, 1);
                y.q.count = 0;
                ks__rt_tensor *ins[1] = {&x.t};
                int took = q8v_check(&node, ins, 1, &y.t, is_space_variant, NULL);
                if (ks__cpu_isa() & (KS_ISA_AVX2 | KS_ISA_NEON)) assert_true(took > 0);
                ran += took;
                free(x.t.data);
            }
    for (int t = 0; t < 2; t++) {
        ks__node node;
        memset(&node, 0, sizeof(node));
        node.op = KS_OP_CAST;
        node.ip[0] = KS_DTYPE_F32;
        qtensor x, y;
        mk(&x, t ? KS_DTYPE_I8 : KS_DTYPE_U8, 256 * 3 + 5, 0);
        fill(&x);
        for (size_t i = 0; i < x.t.size_bytes; i++)
            ((uint8_t *)x.t.data)[i] = (uint8_t)i;
        mk(&y, KS_DTYPE_F32, 1, 0);
        ks__rt_tensor *ins[1] = {&x.t};
        int took = q8v_check(&node, ins, 1, &y.t, is_space_variant, NULL);
        if (ks__cpu_isa() & (KS_ISA_AVX2 | KS_ISA_NEON)) assert_true(took > 0);
        ran += took;
        free(x.t.data);
    }
    print_message("space copies and casts: %d variant runs\n", ran);
}

static void test_concat(void **state) {
    (void)state;
    int ran = 0;
    for (int round = 0; round < 24; round++) {
        ks_dtype d = round & 1 ? KS_DTYPE_I8 : KS_DTYPE_U8;
        uint32_t nin = 1 + (uint32_t)(round % 4);
        int axis_mode = round % 3; /* channels (-1), width (2), height (1) */
        int64_t h = 1 + urand() % 9, w = 1 + urand() % 11;
        qtensor xs[4], y;
        ks__rt_tensor *ins[4];
        int64_t along = 0;
        for (uint32_t i = 0; i < nin; i++) {
            int64_t part = 1 + urand() % 70;
            int64_t c = axis_mode == 0 ? part : 19;
            mk4(&xs[i], d, 1, axis_mode == 2 ? part : h, axis_mode == 1 ? part : w, c);
            along += part;
            fill(&xs[i]);
            ins[i] = &xs[i].t;
        }
        mk4(&y, d, 1, axis_mode == 2 ? along : h, axis_mode == 1 ? along : w,
            axis_mode == 0 ? along : 19);
        if (round % 3 == 0) y.scale = xs[0].scale, y.zp = xs[0].zp; /* identity input */
        ks__node node;
        memset(&node, 0, sizeof(node));
        node.op = KS_OP_CONCAT;
        node.ip[0] = axis_mode == 0 ? -1 : (axis_mode == 1 ? 2 : 1);
        node.ip[1] = round % 5 == 4 ? KS_ACT_RELU6 : (round % 7 == 6 ? KS_ACT_RELU : KS_ACT_NONE);
        ran += check_variants(&node, ins, nin, &y.t);
        for (uint32_t i = 0; i < nin; i++)
            free(xs[i].t.data);
    }
    if (ks__cpu_isa() & (KS_ISA_AVX2 | KS_ISA_NEON)) assert_true(ran > 0);
}

static void test_maxpool(void **state) {
    (void)state;
    static const int32_t modes[] = {KS_PAD_SAME_UPPER, KS_PAD_VALID, KS_PAD_EXPLICIT,
                                    KS_PAD_SAME_LOWER};
    int ran = 0;
    for (int round = 0; round < 32; round++) {
        ks_dtype d = round & 1 ? KS_DTYPE_I8 : KS_DTYPE_U8;
        int64_t k = round % 4 == 3 ? 13 : 1 + (round / 2) % 5;
        int64_t stride = 1 + (round / 3) % 2;
        int64_t c = 1 + urand() % 150, h = 1 + urand() % 17, w = 1 + urand() % 17;
        qtensor x, y;
        mk4(&x, d, 1 + round % 2, h, w, c);
        fill(&x);
        mk4(&y, d, 1, 1, 1, 1);
        y.scale = x.scale, y.zp = x.zp;
        ks__node node;
        memset(&node, 0, sizeof(node));
        node.op = KS_OP_POOL2D;
        node.ip[0] = (int32_t)k, node.ip[1] = (int32_t)(round % 5 == 0 ? 2 : k);
        node.ip[2] = node.ip[3] = (int32_t)stride;
        node.ip[8] = modes[round % 4];
        if (node.ip[8] == KS_PAD_EXPLICIT) node.ip[4] = node.ip[5] = node.ip[6] = node.ip[7] = 1;
        if (round % 8 == 7) node.ip[0] = node.ip[1] = 0; /* global */
        node.ip[11] = round % 6 == 5 ? KS_ACT_RELU6 : (round % 6 == 2 ? KS_ACT_RELU : 0);
        if (node.ip[8] == KS_PAD_VALID && (k > h || k > w)) node.ip[8] = KS_PAD_SAME_UPPER;
        /* explicit pads of 1: the window must still fit the padded input */
        if (node.ip[8] == KS_PAD_EXPLICIT && (node.ip[0] > h + 2 || node.ip[1] > w + 2))
            node.ip[8] = KS_PAD_SAME_UPPER;
        ks__rt_tensor *ins[1] = {&x.t};
        ran += check_variants(&node, ins, 1, &y.t);
        free(x.t.data);
    }
    if (ks__cpu_isa() & KS_ISA_AVX512) assert_true(ran > 0);
}

static void test_transpose(void **state) {
    (void)state;
    static const int32_t perms[][4] = {{0, 2, 3, 1}, {0, 3, 1, 2}, {3, 2, 1, 0},
                                       {1, 0, 3, 2}, {0, 1, 3, 2}, {2, 0, 1, 3}};
    int ran = 0;
    for (int round = 0; round < 24; round++) {
        ks_dtype d = round & 1 ? KS_DTYPE_I8 : KS_DTYPE_U8;
        const int32_t *perm = perms[round % 6];
        int64_t dims[4] = {1 + urand() % 3, 1 + urand() % 19, 1 + urand() % 13, 1 + urand() % 90};
        qtensor x, y;
        mk4(&x, d, dims[0], dims[1], dims[2], dims[3]);
        fill(&x);
        mk4(&y, d, dims[perm[0]], dims[perm[1]], dims[perm[2]], dims[perm[3]]);
        y.scale = x.scale, y.zp = x.zp;
        ks__node node;
        memset(&node, 0, sizeof(node));
        node.op = KS_OP_TRANSPOSE;
        node.ip[0] = 4;
        for (int k = 0; k < 4; k++)
            node.ip[1 + k] = perm[k];
        ks__rt_tensor *ins[1] = {&x.t};
        ran += check_variants(&node, ins, 1, &y.t);
        free(x.t.data);
    }
    if (ks__cpu_isa() & (KS_ISA_AVX2 | KS_ISA_NEON)) assert_true(ran > 0);
}

static void test_prelu(void **state) {
    (void)state;
    int ran = 0;
    for (int round = 0; round < 16; round++) {
        ks_dtype d = round & 1 ? KS_DTYPE_I8 : KS_DTYPE_U8;
        int64_t c = 1 + urand() % 70, h = 1 + urand() % 9, w = 1 + urand() % 9;
        qtensor x, al, y;
        mk4(&x, d, 1, h, w, c);
        fill(&x);
        if (round % 4 == 3) { /* one alpha for all channels */
            mk(&al, d, 1, 1);
            al.t.rank = 1;
        } else {
            mk4(&al, d, 1, 1, 1, c);
            al.t.rank = 3, al.t.dims[0] = 1, al.t.dims[1] = 1, al.t.dims[2] = c;
            if (round % 4 == 2) al.t.rank = 1, al.t.dims[0] = c;
        }
        fill(&al);
        mk4(&y, d, 1, h, w, c);
        ks__node node;
        memset(&node, 0, sizeof(node));
        node.op = KS_OP_PRELU;
        ks__rt_tensor *ins[2] = {&x.t, &al.t};
        ran += check_variants(&node, ins, 2, &y.t);
        free(x.t.data);
        free(al.t.data);
    }
    if (ks__cpu_isa() & (KS_ISA_AVX2 | KS_ISA_NEON)) assert_true(ran > 0);
}

static void test_pad(void **state) {
    (void)state;
    int ran = 0;
    for (int round = 0; round < 24; round++) {
        ks_dtype d = round & 1 ? KS_DTYPE_I8 : KS_DTYPE_U8;
        int64_t dims[4] = {1, 1 + urand() % 9, 1 + urand() % 9, 1 + urand() % 40};
        int32_t pads[8];
        int64_t out[4];
        for (int k = 0; k < 4; k++) {
            pads[2 * k] = (int32_t)(urand() % 5) - 1;
            pads[2 * k + 1] = (int32_t)(urand() % 5) - 1;
            if (k == 0 || (round % 3 == 0 && k != 3)) pads[2 * k] = pads[2 * k + 1] = 0;
            if (pads[2 * k] + pads[2 * k + 1] + dims[k] < 1) pads[2 * k] = pads[2 * k + 1] = 0;
            out[k] = dims[k] + pads[2 * k] + pads[2 * k + 1];
        }
        qtensor x, p, y;
        mk4(&x, d, dims[0], dims[1], dims[2], dims[3]);
        fill(&x);
        mk(&p, KS_DTYPE_I32, 8, 0);
        p.t.rank = 2, p.t.dims[0] = 4, p.t.dims[1] = 2;
        p.t.data = pads;
        mk4(&y, d, out[0], out[1], out[2], out[3]);
        if (round % 5 == 4) x.q.count = y.q.count = 0; /* plain bytes: fill 0 */
        y.scale = x.scale, y.zp = x.zp;
        ks__node node;
        memset(&node, 0, sizeof(node));
        node.op = KS_OP_PAD;
        ks__rt_tensor *ins[2] = {&x.t, &p.t};
        ran += check_variants(&node, ins, 2, &y.t);
        free(x.t.data);
    }
    if (ks__cpu_isa() & (KS_ISA_AVX2 | KS_ISA_NEON)) assert_true(ran > 0);
}

static void test_slice(void **state) {
    (void)state;
    int ran = 0;
    for (int round = 0; round < 60; round++) {
        ks_dtype d = round % 3 == 0 ? KS_DTYPE_F32 : (round % 3 == 1 ? KS_DTYPE_U8 : KS_DTYPE_I8);
        int64_t dims[4] = {1 + urand() % 2, 1 + urand() % 13, 1 + urand() % 13, 1 + urand() % 20};
        int32_t n = 1 + (int32_t)(urand() % 4);
        int32_t starts[4], ends[4], axes[4], steps[4];
        int used[4] = {0};
        for (int32_t i = 0; i < n; i++) {
            int32_t a;
            do {
                a = (int32_t)(urand() % 4);
            } while (used[a]);
            used[a] = 1;
            axes[i] = round % 2 ? a - 4 : a; /* negative axes too */
            starts[i] = (int32_t)(urand() % 9) - 4;
            ends[i] = urand() % 5 == 0 ? INT32_MAX : (int32_t)(urand() % 15) - 4;
            steps[i] = 1 + (int32_t)(urand() % 3);
        }
        qtensor x, ts, te, ta, tp, y;
        mk4(&x, d, dims[0], dims[1], dims[2], dims[3]);
        if (d == KS_DTYPE_F32) x.q.count = 0;
        fill(&x);
        qtensor *ints[4] = {&ts, &te, &ta, &tp};
        int32_t *vals[4] = {starts, ends, axes, steps};
        for (int k = 0; k < 4; k++) {
            mk(ints[k], KS_DTYPE_I32, n, 0);
            ints[k]->t.rank = 1, ints[k]->t.dims[0] = n;
            ints[k]->t.data = vals[k];
        }
        ks__node node;
        memset(&node, 0, sizeof(node));
        node.op = KS_OP_SLICE;
        if (round % 4 == 3) {
            node.ip[0] = (int32_t)(urand() % 16);
            node.ip[1] = (int32_t)(urand() % 16);
            node.ip[2] = (int32_t)(urand() % 16) & 1;
            if (node.ip[2]) steps[0] = 1, starts[0] = 0;
        }
        /* y: dtype and params as x; the reference infers its shape */
        mk4(&y, d, 1, 1, 1, 1);
        if (d == KS_DTYPE_F32) y.q.count = 0;
        y.scale = x.scale, y.zp = x.zp;
        ks__rt_tensor *ins[5] = {&x.t, &ts.t, &te.t, &ta.t, &tp.t};
        ran += check_variants(&node, ins, 5, &y.t);
        free(x.t.data);
    }
    print_message("slice: %d of 60 cases ran a variant\n", ran);
    if (ks__cpu_isa() & (KS_ISA_AVX2 | KS_ISA_NEON)) assert_true(ran > 30);
}

/* ADD/SUB through the byte-plane tables (AVX-512 VBMI variant): every tail of a 64-byte step and
 * far-apart scales (large rescaling shifts, one input nearly vanishing), U8 and I8. */
static void test_binary_tables(void **state) {
    (void)state;
    static const float ratios[] = {1.0f, 0.5f, 3.7f, 1e-3f, 2e4f, 0.999f};
    int ran = 0;
    for (int round = 0; round < 160; round++) {
        ks_dtype d = round & 1 ? KS_DTYPE_I8 : KS_DTYPE_U8;
        int64_t n = round < 130 ? round + 1 : 40000 + round;
        ks__node node;
        memset(&node, 0, sizeof(node));
        node.op = round % 3 == 2 ? KS_OP_SUB : KS_OP_ADD;
        node.ip[0] = round % 4 == 3 ? KS_ACT_RELU6 : (round % 4 == 1 ? KS_ACT_RELU : KS_ACT_NONE);
        qtensor a, b, y;
        mk(&a, d, n, 1);
        mk(&b, d, n, 1);
        mk(&y, d, n, 1);
        b.scale = a.scale * ratios[round % 6];
        if (round % 5 == 4) y.scale = a.scale * 1e-3f; /* output saturates */
        fill(&a);
        fill(&b);
        ks__rt_tensor *ins[2] = {&a.t, &b.t};
        ran += check_variants(&node, ins, 2, &y.t);
        free(a.t.data);
        free(b.t.data);
    }
    if (ks__cpu_isa() & KS_ISA_AVX512) assert_true(ran > 0);
}

/* The AVX-512 and AVX2 DEQUANTIZE formulas on every byte value, for scales across the whole
 * float range (denormal products, overflow to infinity) and every zero point, bit for bit against
 * the reference's double product. */
static void test_dequantize_formula(void **state) {
    (void)state;
#if defined(__x86_64__)
    const int has512 = (ks__cpu_isa() & KS_ISA_AVX512) != 0;
    if (!(ks__cpu_isa() & KS_ISA_AVX2)) skip();
    uint8_t bytes[256 + 7];
    float got[256 + 7], want;
    for (int i = 0; i < 256 + 7; i++)
        bytes[i] = (uint8_t)(i * 151 + 3);
    for (int round = 0; round < 3000; round++) {
        float scale;
        if (round < 40) {
            scale = ldexpf(1.0f + (float)round / 41.0f, -149 + round * 7); /* denormal..huge */
        } else {
            uint32_t bits = (urand() << 8 ^ urand()) & 0x7F7FFFFFu; /* finite, positive */
            memcpy(&scale, &bits, sizeof(scale));
            if (!(scale > 0.0f)) scale = 1e-3f;
        }
        const int is_i8 = round & 1;
        const int32_t zp = is_i8 ? (int32_t)(urand() % 256) - 128 : (int32_t)(urand() % 256);
        const size_t n = 256 + (size_t)(round % 8);
        for (int isa = has512 ? 0 : 1; isa < 2; isa++) {
            if (isa == 0)
                ks__q8_dequantize_avx512(bytes, got, n, is_i8, zp, scale);
            else
                ks__q8_dequantize_avx2(bytes, got, n, is_i8, zp, scale);
            for (size_t i = 0; i < n; i++) {
                const int32_t q = is_i8 ? (int32_t)(int8_t)bytes[i] : (int32_t)bytes[i];
                want = (float)((double)scale * (double)(q - zp));
                if (memcmp(&got[i], &want, sizeof(want)) != 0)
                    fail_msg("%s: scale %g zp %d byte %d: got %.9g want %.9g",
                             isa ? "AVX2" : "AVX-512", (double)scale, zp, (int)bytes[i],
                             (double)got[i], (double)want);
            }
        }
    }
#else
    skip();
#endif
}

int main(void) {
    g_rng = 777u; /* the stream these cases were written with */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lut_unary),
        cmocka_unit_test(test_requantize_dequantize),
        cmocka_unit_test(test_quantize_f32),
        cmocka_unit_test(test_quantize_boundaries),
        cmocka_unit_test(test_binary),
        cmocka_unit_test(test_binary_broadcast),
        cmocka_unit_test(test_resize),
        cmocka_unit_test(test_argmax),
        cmocka_unit_test(test_space_cast),
        cmocka_unit_test(test_concat),
        cmocka_unit_test(test_maxpool),
        cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_prelu),
        cmocka_unit_test(test_pad),
        cmocka_unit_test(test_slice),
        cmocka_unit_test(test_binary_tables),
        cmocka_unit_test(test_dequantize_formula),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
