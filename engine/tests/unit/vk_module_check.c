/* The Vulkan module through the shared library (docs/vulkan.md, "The Vulkan module"): linked
 * against libkestrel.so only, public API only, as an app is. ctest runs it three ways
 * (engine/tests/unit/CMakeLists.txt):
 *   vk_module_check MODEL.ksm loads     the module beside the library runs the model on Vulkan,
 *                                      outputs within 1e-3 relative L2 of the CPU session's
 *   vk_module_check MODEL.ksm missing   KS_VULKAN_MODULE names no file: KS_BACKEND_VULKAN is
 *                                      refused with KS_STATUS_UNSUPPORTED and a message naming
 *                                      the module; KS_BACKEND_AUTO runs on the CPU
 *   vk_module_check MODEL.ksm foreign   KS_VULKAN_MODULE names a library that is not this
 *                                      build's module (libkestrel.so itself): refused the same
 *                                      way, the message saying so; AUTO runs on the CPU
 * Exit 0 passes, 77 skips (no model file), anything else fails. */
#include <kestrel/engine.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, ks_status st) {
    fprintf(stderr, "vk_module_check: %s: %s: %s\n", what, ks_status_string(st),
            ks_last_error(NULL));
    return 1;
}

/* Runs model on backend b with a fixed input; out (num floats of output 0) filled. */
static ks_status run(const ks_model *m, ks_backend b, float *out, size_t cap, size_t *num,
                     ks_backend *ran_on) {
    ks_session_desc desc;
    memset(&desc, 0, sizeof(desc));
    desc.backend = b;
    ks_session *s = NULL;
    ks_status st = ks_session_create(m, &desc, &s);
    if (!st) st = ks_session_reshape(s, NULL);
    ks_tensor t;
    if (!st) st = ks_session_input(s, 0, &t);
    if (!st) {
        float *x = (float *)t.data;
        for (size_t i = 0; i < t.size_bytes / sizeof(float); i++)
            x[i] = (float)((i * 7919u) % 1000u) / 1000.0f; /* deterministic, image-like */
    }
    if (!st) st = ks_session_run(s);
    if (!st) st = ks_session_output(s, 0, &t);
    if (!st) {
        *num = t.size_bytes / sizeof(float) < cap ? t.size_bytes / sizeof(float) : cap;
        memcpy(out, t.data, *num * sizeof(float));
        *ran_on = ks_session_backend(s);
    }
    ks_session_destroy(s);
    return st;
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        fprintf(stderr, "vk_module_check: %s not found (scripts/setup fetches the models): skip\n",
                argv[1]);
        return 77;
    }
    fclose(f);
    ks_model *m = NULL;
    ks_status st = ks_model_load_file(argv[1], NULL, &m);
    if (st) return fail("load", st);
    enum { CAP = 1 << 20 };
    static float cpu[CAP], dev[CAP];
    size_t n_cpu = 0, n_dev = 0;
    ks_backend on = KS_BACKEND_CPU;
    if ((st = run(m, KS_BACKEND_CPU, cpu, CAP, &n_cpu, &on))) return fail("cpu run", st);
    int rc = 0;
    if (strcmp(argv[2], "loads") == 0) {
        st = run(m, KS_BACKEND_VULKAN, dev, CAP, &n_dev, &on);
        if (st) return fail("vulkan run", st);
        double d = 0, r = 0;
        for (size_t i = 0; i < n_cpu && i < n_dev; i++) {
            d += ((double)dev[i] - cpu[i]) * ((double)dev[i] - cpu[i]);
            r += (double)cpu[i] * cpu[i];
        }
        double rel = sqrt(d / (r > 0 ? r : 1));
        printf("vulkan through the module: backend %s, %zu outputs, rel L2 %.3g to the CPU\n",
               ks_backend_string(on), n_dev, rel);
        rc = on == KS_BACKEND_VULKAN && n_dev == n_cpu && rel <= 1e-3 ? 0 : 1;
    } else if (strcmp(argv[2], "missing") == 0 || strcmp(argv[2], "foreign") == 0) {
        bool foreign = strcmp(argv[2], "foreign") == 0;
        st = run(m, KS_BACKEND_VULKAN, dev, CAP, &n_dev, &on);
        const char *msg = ks_last_error(NULL);
        printf("vulkan with the module %s: %s: %s\n", foreign ? "of another build" : "missing",
               ks_status_string(st), msg);
        if (st != KS_STATUS_UNSUPPORTED ||
            !strstr(msg, foreign ? "is not the Vulkan module" : "Vulkan module"))
            rc = 1;
        st = run(m, KS_BACKEND_AUTO, dev, CAP, &n_dev, &on);
        printf("auto without the module: %s, on %s\n", ks_status_string(st), ks_backend_string(on));
        if (st || on != KS_BACKEND_CPU || n_dev != n_cpu || memcmp(dev, cpu, n_cpu * sizeof(float)))
            rc = 1;
    } else {
        rc = 2;
    }
    ks_model_destroy(m);
    return rc;
}
