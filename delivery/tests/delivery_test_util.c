#include "delivery_test_util.h"

#include <dirent.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/ksm.h"
#include "src/ir.h"

void dt_keypair(uint8_t seed, uint8_t pk[32], uint8_t sk[64]) {
    uint8_t s[32];
    memset(s, seed, sizeof(s));
    if (sodium_init() < 0 || crypto_sign_seed_keypair(pk, sk, s) != 0)
        abort(); /* test set-up only */
}

uint8_t *dt_model(float bias, size_t *size_out) {
    int64_t d14[2] = {1, 4}, d4[1] = {4};
    int32_t x = 0, c = 0, s = 0, y = 0;
    ks__graph g;
    ks__graph_init(&g, NULL);
    const float cv[4] = {bias, bias, bias, bias};
    int ok = ks__graph_add_tensor(&g, "x", KS_DTYPE_F32, 2, d14, &x) == 0 &&
             ks__graph_add_tensor(&g, "bias", KS_DTYPE_F32, 1, d4, &c) == 0 &&
             ks__graph_set_const(&g, c, cv, sizeof(cv), true) == 0 &&
             ks__graph_add_tensor(&g, "sum", KS_DTYPE_F32, 2, d14, &s) == 0 &&
             ks__graph_add_tensor(&g, "y", KS_DTYPE_F32, 2, d14, &y) == 0;
    int32_t in_add[2] = {x, c};
    ok = ok && ks__graph_add_node(&g, KS_OP_ADD, "add", 2, in_add, 1, &s, NULL) == 0 &&
         ks__graph_add_node(&g, KS_OP_RELU, "relu", 1, &s, 1, &y, NULL) == 0 &&
         ks__graph_set_io(&g, 1, &x, 1, &y) == 0;
    uint8_t *buf = NULL;
    char err[256];
    if (!ok || ks__ksm_write(&g, &buf, size_out, err, sizeof(err)) != 0) buf = NULL;
    ks__graph_free(&g);
    return buf;
}

uint8_t *dt_selftest(const char *model_name, float expect_bias, size_t *size_out) {
    const float x[4] = {0.5f, -1.0f, 2.0f, -3.0f};
    float y[4];
    for (int i = 0; i < 4; i++)
        y[i] = x[i] + expect_bias > 0 ? x[i] + expect_bias : 0;
    ks__selftest_tensor in = {0, 0, x, sizeof(x)}, out = {0, 1e-5f, y, sizeof(y)};
    uint8_t *d = NULL;
    if (ks__selftest_write(model_name, &in, 1, &out, 1, &d, size_out) != 0) return NULL;
    return d;
}

uint8_t *dt_package(const uint8_t sk[64], const char *id, uint32_t major, uint32_t minor,
                    uint32_t patch, uint64_t issued, uint32_t num_files,
                    const ks__pkg_src_file *files, size_t *size_out) {
    ks__pkg_spec spec = {.id = id,
                         .version = {major, minor, patch},
                         .min_runtime = KS_VERSION_HEX,
                         .issued = issued,
                         .files = files,
                         .num_files = num_files};
    uint8_t *d = NULL;
    char err[256];
    if (ks__pkg_write(&spec, sk, &d, size_out, err, sizeof(err)) != 0) {
        fprintf(stderr, "dt_package: %s\n", err);
        return NULL;
    }
    return d;
}

uint8_t *dt_simple_package(const uint8_t sk[64], uint32_t major, uint64_t issued, float bias,
                           size_t *size_out) {
    size_t mn = 0;
    uint8_t *m = dt_model(bias, &mn);
    static const char readme[] = "face effect notes\n";
    ks__pkg_src_file f[2] = {{"model.ksm", m, mn},
                             {"notes/readme.txt", (const uint8_t *)readme, sizeof(readme) - 1}};
    uint8_t *p = m ? dt_package(sk, "face", major, 0, 0, issued, 2, f, size_out) : NULL;
    free(m);
    return p;
}

void dt_remove_tree(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char sub[4096];
            snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
            dt_remove_tree(sub);
        }
        if (d) closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

const char *dt_fresh_dir(const char *name, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/%s", KS_BINARY_DIR, name);
    dt_remove_tree(buf);
    mkdir(buf, 0755);
    return buf;
}

const char *dt_bundle_file(const char *rel, char *buf, size_t cap) {
    const char *dir = getenv("KS_TEST_BUNDLES_DIR");
    snprintf(buf, cap, "%s/%s", dir && dir[0] ? dir : KS_BUNDLES_DIR, rel);
    return access(buf, R_OK) == 0 ? buf : NULL;
}

uint8_t *dt_read(const char *path, size_t *size_out) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (d && fread(d, 1, (size_t)n, f) != (size_t)n) {
        free(d);
        d = NULL;
    }
    fclose(f);
    *size_out = (size_t)n;
    return d;
}
