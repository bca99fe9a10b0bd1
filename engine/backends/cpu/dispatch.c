/* Variant list and selection (impl.h). */
#include "impl.h"

#include <string.h>

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

/* Whether the node reads or writes an F16 activation (the fp16 pass's graphs, precision.h). */
static bool has_f16_activation(const ks__kernel_ctx *ctx) {
    for (uint32_t k = 0; k < ctx->num_inputs + ctx->num_outputs; k++) {
        const ks__rt_tensor *t = k < ctx->num_inputs ? ctx->in[k] : ctx->out[k - ctx->num_inputs];
        if (t && t->dtype == KS_DTYPE_F16 && !(t->def && (t->def->flags & KS__TENSOR_CONST)))
            return true;
    }
    return false;
}

double ks__impl_cost(const ks__impl *im, const ks__kernel_ctx *ctx, uint32_t isa) {
    if (im->op != ctx->node->op || (im->isa & ~isa) != 0) return -1.0;
    /* F16 activations: only the variants written for them (ks_f16_*, STYLE.md rule 17); the
     * others assume F32 or quantized data and are not asked (the reference kernels take F16) */
    if (has_f16_activation(ctx) && strncmp(im->name, "ks_f16_", 7) != 0) return -1.0;
    return im->cost(ctx);
}

const ks__impl *ks__impl_select(const ks__kernel_ctx *ctx, uint32_t isa) {
    const ks__impl *best = NULL;
    double best_cost = 0;
    for (const ks__impl *const *p = k_impls; *p; p++) {
        const ks__impl *im = *p;
        double c = ks__impl_cost(im, ctx, isa);
        if (c < 0) continue;
        if (!best || c < best_cost) {
            best = im;
            best_cost = c;
        }
    }
    return best;
}
