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
        const ks__ksm_write_opts coded[2] = {{.weights = KS__KSM_WEIGHTS_INT8, .entropy = true},
                                             {.weights = KS__KSM_WEIGHTS_INT4, .entropy = true}};
        const char *names[2] = {"conv_pool_int8_rans.ksm", "conv_pool_int4_rans.ksm"};
        for (int k = 0; k < 2; k++) {
            char path[4096], err[256];
            snprintf(path, sizeof(path), "%s/%s", argv[1], names[k]);
            if (ks__ksm_write_file_ex(&g, &coded[k], path, err, sizeof(err))) {
                fprintf(stderr, "gen_seeds_ksm: %s\n", err);
                rc = 1;
            }
        }
        ks__graph_free(&g);
    }
    return rc;
}
