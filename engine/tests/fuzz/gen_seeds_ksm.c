/* Writes small synthetic .ksm files as the seed corpus of fuzz_ksm: gen_seeds_ksm OUT_DIR. */
#include <stdio.h>
#include <string.h>

#include "ksm.h"

static int write_seed(const char *dir, const char *name, const ks__graph *g) {
    char path[4096], err[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (ks__ksm_write_file(g, path, err, sizeof(err))) {
        fprintf(stderr, "gen_seeds_ksm: %s\n", err);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: gen_seeds_ksm OUT_DIR\n");
        return 2;
    }
    int rc = 0;
    /* 1: x + c -> relu */
    {
        ks__graph g;
        ks__graph_init(&g, NULL);
        int64_t d[2] = {1, 4};
        int32_t x, c, y, r;
        const float cv[4] = {1, 2, 3, 4};
        ks__graph_add_tensor(&g, "x", KS_DTYPE_F32, 2, d, &x);
        ks__graph_add_tensor(&g, "c", KS_DTYPE_F32, 2, d, &c);
        ks__graph_set_const(&g, c, cv, sizeof(cv), true);
        ks__graph_add_tensor(&g, "s", KS_DTYPE_F32, 2, d, &y);
        ks__graph_add_tensor(&g, "r", KS_DTYPE_F32, 2, d, &r);
        int32_t in[2] = {x, c};
        ks__graph_add_node(&g, KS_OP_ADD, "add", 2, in, 1, &y, NULL);
        ks__graph_add_node(&g, KS_OP_RELU, "relu", 1, &y, 1, &r, NULL);
        ks__graph_set_io(&g, 1, &x, 1, &r);
        ks__graph_set_meta(&g, "producer", "seed");
        rc |= write_seed(argv[1], "add_relu.ksm", &g);
        ks__graph_free(&g);
    }
    /* 2: 3x3 conv, NHWC, with bias and relu6, then 2x2 max pool */
    {
        ks__graph g;
        ks__graph_init(&g, NULL);
        int64_t dx[4] = {1, 6, 6, 2}, dw[4] = {3, 3, 3, 2}, db[1] = {3}, dy[4] = {1, 6, 6, 3},
                dp[4] = {1, 3, 3, 3};
        int32_t x, w, b, y, p;
        float wv[54], bv[3] = {0.1f, -0.2f, 0.3f};
        for (int i = 0; i < 54; i++)
            wv[i] = (float)((i * 7) % 11 - 5) / 10.0f;
        ks__graph_add_tensor(&g, "x", KS_DTYPE_F32, 4, dx, &x);
        ks__graph_add_tensor(&g, "w", KS_DTYPE_F32, 4, dw, &w);
        ks__graph_set_const(&g, w, wv, sizeof(wv), true);
        ks__graph_add_tensor(&g, "b", KS_DTYPE_F32, 1, db, &b);
        ks__graph_set_const(&g, b, bv, sizeof(bv), true);
        ks__graph_add_tensor(&g, "y", KS_DTYPE_F32, 4, dy, &y);
        ks__graph_add_tensor(&g, "p", KS_DTYPE_F32, 4, dp, &p);
        int32_t in[3] = {x, w, b};
        uint32_t ci, pi;
        ks__graph_add_node(&g, KS_OP_CONV2D, "conv", 3, in, 1, &y, &ci);
        g.nodes[ci].ip[0] = g.nodes[ci].ip[1] = g.nodes[ci].ip[2] = g.nodes[ci].ip[3] = 1;
        g.nodes[ci].ip[8] = KS_PAD_SAME_UPPER;
        g.nodes[ci].ip[10] = KS_ACT_RELU6;
        ks__graph_add_node(&g, KS_OP_POOL2D, "pool", 1, &y, 1, &p, &pi);
        g.nodes[pi].ip[0] = g.nodes[pi].ip[1] = g.nodes[pi].ip[2] = g.nodes[pi].ip[3] = 2;
        g.nodes[pi].ip[8] = KS_PAD_VALID;
        ks__graph_set_io(&g, 1, &x, 1, &p);
        rc |= write_seed(argv[1], "conv_pool.ksm", &g);
        /* the same graph with coded weights, so the fuzzer reaches the ENCODED section (.ksm 1.1)
         */
        /* ... and packed (.ksm 1.2: PACKED tables, LOSSLESS constants, unaligned payloads) */
        const ks__ksm_write_opts coded[4] = {
            {.weights = KS__KSM_WEIGHTS_INT8, .entropy = true},
            {.weights = KS__KSM_WEIGHTS_INT4, .entropy = true},
            {.pack = true},
            {.weights = KS__KSM_WEIGHTS_INT8, .entropy = true, .pack = true}};
        const char *names[4] = {"conv_pool_int8_rans.ksm", "conv_pool_int4_rans.ksm",
                                "conv_pool_packed.ksm", "conv_pool_int8_packed.ksm"};
        for (int k = 0; k < 4; k++) {
            char path[4096], err[256];
            snprintf(path, sizeof(path), "%s/%s", argv[1], names[k]);
            if (ks__ksm_write_file_ex(&g, &coded[k], path, err, sizeof(err))) {
                fprintf(stderr, "gen_seeds_ksm: %s\n", err);
                rc = 1;
            }
        }
        ks__graph_free(&g);
    }
    /* 3: an int8 conv as ks-quant writes it (I8 per-channel weights with zero zero points, I32
     * bias), packed: reaches zero-point omission and LOSSLESS I8 payloads (wcode, rANS) */
    {
        ks__graph g;
        ks__graph_init(&g, NULL);
        int64_t dx[4] = {1, 4, 4, 4}, dw[4] = {8, 3, 3, 4}, db[1] = {8}, dy[4] = {1, 4, 4, 8};
        int32_t x, xq, w, b, y, yf;
        int8_t wv[288];
        int32_t bv[8] = {100, -200, 300, -400, 5, 6, -7, 8}, zeros[8] = {0}, zq = 1;
        float ws[8] = {0.01f, 0.02f, 0.015f, 0.03f, 0.01f, 0.02f, 0.015f, 0.03f}, sq = 0.05f;
        /* small codes, as real weights are, so every coder (wcode too) beats raw */
        for (int i = 0; i < 288; i++)
            wv[i] = (int8_t)(((i * 29) % 15 - 7) / (1 + i % 3));
        ks__graph_add_tensor(&g, "x", KS_DTYPE_F32, 4, dx, &x);
        ks__graph_add_tensor(&g, "xq", KS_DTYPE_I8, 4, dx, &xq);
        ks__graph_set_quant(&g, xq, 1, 0, &sq, &zq);
        ks__graph_add_tensor(&g, "w", KS_DTYPE_I8, 4, dw, &w);
        ks__graph_set_const(&g, w, wv, sizeof(wv), true);
        ks__graph_set_quant(&g, w, 8, 0, ws, zeros);
        ks__graph_add_tensor(&g, "b", KS_DTYPE_I32, 1, db, &b);
        ks__graph_set_const(&g, b, bv, sizeof(bv), true);
        ks__graph_add_tensor(&g, "y", KS_DTYPE_I8, 4, dy, &y);
        ks__graph_set_quant(&g, y, 1, 0, &sq, &zq);
        ks__graph_add_tensor(&g, "yf", KS_DTYPE_F32, 4, dy, &yf);
        int32_t in[3] = {xq, w, b};
        uint32_t ci;
        ks__graph_add_node(&g, KS_OP_QUANTIZE, "q", 1, &x, 1, &xq, NULL);
        ks__graph_add_node(&g, KS_OP_CONV2D, "conv", 3, in, 1, &y, &ci);
        g.nodes[ci].ip[0] = g.nodes[ci].ip[1] = g.nodes[ci].ip[2] = g.nodes[ci].ip[3] = 1;
        g.nodes[ci].ip[8] = KS_PAD_SAME_UPPER;
        ks__graph_add_node(&g, KS_OP_DEQUANTIZE, "dq", 1, &y, 1, &yf, NULL);
        ks__graph_set_io(&g, 1, &x, 1, &yf);
        rc |= write_seed(argv[1], "conv_int8.ksm", &g);
        /* 3b: conv -> PRELU -> ADD(prelu, prelu) in int8: what KS_PRECISION_F32 rebuilds (the
         * PRELU folds into the conv, borders become views) */
        {
            ks__graph g2;
            ks__graph_init(&g2, NULL);
            int64_t da[3] = {1, 1, 8};
            int32_t x2, xq2, w2, b2, c2, a2, p2, s2, o2;
            int8_t av[8] = {-20, 10, 30, -5, 60, 0, 12, 127};
            float as = 0.004f;
            int32_t az = 0;
            ks__graph_add_tensor(&g2, "x", KS_DTYPE_F32, 4, dx, &x2);
            ks__graph_add_tensor(&g2, "xq", KS_DTYPE_I8, 4, dx, &xq2);
            ks__graph_set_quant(&g2, xq2, 1, 0, &sq, &zq);
            ks__graph_add_tensor(&g2, "w", KS_DTYPE_I8, 4, dw, &w2);
            ks__graph_set_const(&g2, w2, wv, sizeof(wv), true);
            ks__graph_set_quant(&g2, w2, 8, 0, ws, zeros);
            ks__graph_add_tensor(&g2, "b", KS_DTYPE_I32, 1, db, &b2);
            ks__graph_set_const(&g2, b2, bv, sizeof(bv), true);
            ks__graph_add_tensor(&g2, "c", KS_DTYPE_I8, 4, dy, &c2);
            ks__graph_set_quant(&g2, c2, 1, 0, &sq, &zq);
            ks__graph_add_tensor(&g2, "alpha", KS_DTYPE_I8, 3, da, &a2);
            ks__graph_set_const(&g2, a2, av, sizeof(av), true);
            ks__graph_set_quant(&g2, a2, 1, 0, &as, &az);
            ks__graph_add_tensor(&g2, "p", KS_DTYPE_I8, 4, dy, &p2);
            ks__graph_set_quant(&g2, p2, 1, 0, &sq, &zq);
            ks__graph_add_tensor(&g2, "s", KS_DTYPE_I8, 4, dy, &s2);
            ks__graph_set_quant(&g2, s2, 1, 0, &sq, &zq);
            ks__graph_add_tensor(&g2, "y", KS_DTYPE_F32, 4, dy, &o2);
            int32_t cin[3] = {xq2, w2, b2}, pin[2] = {c2, a2}, sin2[2] = {p2, p2};
            uint32_t c2i;
            ks__graph_add_node(&g2, KS_OP_QUANTIZE, "q", 1, &x2, 1, &xq2, NULL);
            ks__graph_add_node(&g2, KS_OP_CONV2D, "conv", 3, cin, 1, &c2, &c2i);
            g2.nodes[c2i].ip[0] = g2.nodes[c2i].ip[1] = 1;
            g2.nodes[c2i].ip[8] = KS_PAD_SAME_UPPER;
            ks__graph_add_node(&g2, KS_OP_PRELU, "prelu", 2, pin, 1, &p2, NULL);
            ks__graph_add_node(&g2, KS_OP_ADD, "add", 2, sin2, 1, &s2, NULL);
            ks__graph_add_node(&g2, KS_OP_DEQUANTIZE, "dq", 1, &s2, 1, &o2, NULL);
            ks__graph_set_io(&g2, 1, &x2, 1, &o2);
            rc |= write_seed(argv[1], "conv_prelu_add_int8.ksm", &g2);
            ks__graph_free(&g2);
        }
        for (int k = 0; k < 4; k++) { /* best, rANS, wcode, bcode */
            char path[4096], err[256];
            ks__ksm_write_opts o = {.pack = true,
                                    .entropy_coders = (uint8_t)(k == 0 ? 0 : 1u << k)};
            snprintf(path, sizeof(path), "%s/conv_int8_packed_%d.ksm", argv[1], k);
            if (ks__ksm_write_file_ex(&g, &o, path, err, sizeof(err))) {
                fprintf(stderr, "gen_seeds_ksm: %s\n", err);
                rc = 1;
            }
        }
        ks__graph_free(&g);
    }
    return rc;
}
