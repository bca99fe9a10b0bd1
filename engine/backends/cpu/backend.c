/* The CPU backend (src/backend.h): reference kernels for every op, the fast variants of
 * impls.inc picked by cost model or measured (tune.h), on the CPU features of this machine. */
#include "impl.h"
#include "tune.h"

static uint32_t cpu_features(void) {
    return ks__cpu_isa();
}

static ks_status cpu_tuner_create(const ks_allocator *alloc, ks_tune_mode mode,
                                  const char *cache_path, void **tuner_out) {
    ks__tuner *t = NULL;
    ks_status st = ks__tuner_create(alloc, mode, cache_path, &t);
    *tuner_out = t;
    return st;
}

static void cpu_tuner_destroy(void *tuner) {
    ks__tuner_destroy(tuner);
}

static const ks__impl *cpu_select(void *tuner, const ks__kernel_ctx *ctx, uint32_t features) {
    return tuner ? ks__tune_select(tuner, ctx, features) : ks__impl_select(ctx, features);
}

static const ks__backend k_cpu = {
    .name = "cpu",
    .kernels = ks__ref_kernels,
    .features = cpu_features,
    .tuner_create = cpu_tuner_create,
    .tuner_destroy = cpu_tuner_destroy,
    .select = cpu_select,
};

const ks__backend *ks__cpu_backend(void) {
    return &k_cpu;
}
