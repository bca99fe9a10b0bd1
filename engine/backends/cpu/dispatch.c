/* Variant list and selection (impl.h). */
#include "impl.h"

#define KS_IMPL(sym) extern const ks__impl sym;
#include "impls.inc"
#undef KS_IMPL

static const ks__impl *const k_impls[] = {
#define KS_IMPL(sym) &sym,
#include "impls.inc"
#undef KS_IMPL
    NULL,
};

const ks__impl *const *ks__impl_list(void) {
    return k_impls;
}

const ks__impl *ks__impl_select(const ks__kernel_ctx *ctx, uint32_t isa) {
    const ks__impl *best = NULL;
    double best_cost = 0;
    for (const ks__impl *const *p = k_impls; *p; p++) {
        const ks__impl *im = *p;
        if (im->op != ctx->node->op || (im->isa & ~isa) != 0) continue;
        double c = im->cost(ctx);
        if (c < 0) continue;
        if (!best || c < best_cost) {
            best = im;
            best_cost = c;
        }
    }
    return best;
}
