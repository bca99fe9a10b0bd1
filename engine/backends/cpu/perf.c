/* Portable parts of the "perf" variants (perf.h). */
#include "perf.h"

#include <string.h>

bool ks__perf_is_x32(const ks__rt_tensor *t) {
    if (!t || (t->quant && t->quant->count != 0)) return false;
    return t->dtype == KS_DTYPE_F32 || t->dtype == KS_DTYPE_I32;
}

/* The element size the gathers take for t: 4 (ks__perf_is_x32) or 2 (F16); 0 otherwise. */
static size_t elem_bytes(const ks__rt_tensor *t) {
    if (ks__perf_is_x32(t)) return 4;
    if (t && t->dtype == KS_DTYPE_F16 && (!t->quant || t->quant->count == 0)) return 2;
    return 0;
}

void ks__gather_collapse(ks__gather_geom *g) {
    int32_t r = 0;
    int64_t dims[KS_MAX_RANK], st[KS_MAX_RANK];
    g->numel = 1;
    for (int32_t d = 0; d < g->rank; d++) {
        g->numel *= g->dims[d];
        if (g->dims[d] == 1) continue;
        /* axis d continues the previous kept axis when stepping it once equals stepping d
         * through its whole extent */
        if (r > 0 && st[r - 1] == g->in_stride[d] * g->dims[d]) {
            dims[r - 1] *= g->dims[d];
            st[r - 1] = g->in_stride[d];
            continue;
        }
        dims[r] = g->dims[d];
        st[r] = g->in_stride[d];
        r++;
    }
    if (r == 0) dims[0] = 1, st[0] = 1, r = 1;
    g->rank = r;
    memcpy(g->dims, dims, sizeof(int64_t) * (size_t)r);
    memcpy(g->in_stride, st, sizeof(int64_t) * (size_t)r);
}

static void contiguous_strides(int32_t rank, const int64_t *dims, int64_t *strides) {
    int64_t s = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
        strides[d] = s;
        s *= dims[d];
    }
}

bool ks__gather_geom_transpose_es(const ks__kernel_ctx *ctx, ks__gather_geom *g, size_t es) {
    if (ctx->num_inputs != 1 || ctx->num_outputs != 1) return false;
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    if (elem_bytes(x) != es || x->dtype != y->dtype || x->rank != y->rank || x->rank < 1 ||
        x->rank > KS_MAX_RANK)
        return false;
    const int32_t *ip = ctx->node->ip;
    int32_t rank = x->rank, perm[KS_MAX_RANK];
    bool seen[KS_MAX_RANK] = {false};
    for (int32_t d = 0; d < rank; d++) {
        perm[d] = ip[0] == 0 ? rank - 1 - d : ip[1 + d];
        if ((ip[0] != 0 && ip[0] != rank) || perm[d] < 0 || perm[d] >= rank || seen[perm[d]])
            return false;
        seen[perm[d]] = true;
    }
    int64_t xs[KS_MAX_RANK];
    contiguous_strides(rank, x->dims, xs);
    g->rank = rank;
    g->base = 0;
    for (int32_t d = 0; d < rank; d++) {
        if (y->dims[d] != x->dims[perm[d]]) return false;
        g->dims[d] = y->dims[d];
        g->in_stride[d] = xs[perm[d]];
    }
    ks__gather_collapse(g);
    return true;
}

bool ks__gather_geom_transpose(const ks__kernel_ctx *ctx, ks__gather_geom *g) {
    return ks__gather_geom_transpose_es(ctx, g, 4);
}

bool ks__gather_geom_split_es(const ks__kernel_ctx *ctx, uint32_t k, ks__gather_geom *g,
                              size_t es) {
    if (ctx->num_inputs < 1 || k >= ctx->num_outputs) return false;
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[k];
    if (elem_bytes(x) != es || x->rank < 1 || x->rank > KS_MAX_RANK) return false;
    int32_t axis = ctx->node->ip[0];
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis >= x->rank) return false;
    int64_t offset = 0;
    for (uint32_t i = 0; i < ctx->num_outputs; i++) {
        const ks__rt_tensor *o = ctx->out[i];
        if (!o || o->dtype != x->dtype || o->rank != x->rank) return false;
        for (int32_t d = 0; d < x->rank; d++)
            if (d != axis && o->dims[d] != x->dims[d]) return false;
        if (i < k) offset += o->dims[axis];
    }
    if (offset + y->dims[axis] > x->dims[axis]) return false;
    int64_t xs[KS_MAX_RANK];
    contiguous_strides(x->rank, x->dims, xs);
    g->rank = x->rank;
    g->base = offset * xs[axis];
    for (int32_t d = 0; d < x->rank; d++) {
        g->dims[d] = y->dims[d];
        g->in_stride[d] = xs[d];
    }
    ks__gather_collapse(g);
    return true;
}

bool ks__gather_geom_split(const ks__kernel_ctx *ctx, uint32_t k, ks__gather_geom *g) {
    return ks__gather_geom_split_es(ctx, k, g, 4);
}

static bool conv_geom_make(const ks__kernel_ctx *ctx, ks__smallconv_geom *g, bool depthwise) {
    if (ctx->node->op != KS_OP_CONV2D || ctx->num_inputs < 2 || ctx->num_outputs != 1) return false;
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1], *y = ctx->out[0];
    const ks__rt_tensor *b = ctx->num_inputs > 2 ? ctx->in[2] : NULL;
    const int32_t *ip = ctx->node->ip;
    if (ctx->num_inputs > 3 && ctx->in[3]) return false; /* residual: the GEMM fuses it */
    if (!ks__rt_float_plain(x) || !ks__rt_float_plain(y) || !ks__rt_float_plain(w) || !w->data ||
        x->rank != 4 || w->rank != 4 || y->rank != 4)
        return false;
    if (b && (!ks__rt_float_plain(b) || !b->data || ks__rt_numel(b) != w->dims[0])) return false;
    if (ip[8] < KS_PAD_EXPLICIT || ip[8] > KS_PAD_VALID) return false;
    if (ip[10] < 0 || ip[10] >= KS_ACT_COUNT || ip[10] == KS_ACT_PRELU) return false;
    g->n = x->dims[0], g->ih = x->dims[1], g->iw = x->dims[2], g->ic = x->dims[3];
    g->oc = w->dims[0], g->kh = w->dims[1], g->kw = w->dims[2];
    g->oh = y->dims[1], g->ow = y->dims[2];
    if (y->dims[3] != g->oc || y->dims[0] != g->n || g->ic < 1 || g->oc < 1 || g->kh < 1 ||
        g->kw < 1)
        return false;
    if (depthwise) {
        /* one filter per channel, multiplier 1 (groups == 1 is the single-channel case) */
        if (w->dims[3] != 1 || g->oc != g->ic || ks__ip_or_one(ip[9]) != g->ic) return false;
    } else if (w->dims[3] != g->ic || ks__ip_or_one(ip[9]) != 1) {
        return false;
    }
    g->sh = ks__ip_or_one(ip[0]), g->sw = ks__ip_or_one(ip[1]);
    g->dh = ks__ip_or_one(ip[2]), g->dw = ks__ip_or_one(ip[3]);
    if (g->sh < 1 || g->sw < 1 || g->dh < 1 || g->dw < 1) return false;
    g->pt = ks__conv_lead_pad(ip[8], ip[4], g->ih, g->oh, (g->kh - 1) * g->dh + 1, g->sh);
    g->pl = ks__conv_lead_pad(ip[8], ip[5], g->iw, g->ow, (g->kw - 1) * g->dw + 1, g->sw);
    g->act = ip[10];
    g->alpha = ctx->node->fp[0];
    return true;
}

bool ks__smallconv_geom_make(const ks__kernel_ctx *ctx, ks__smallconv_geom *g) {
    return conv_geom_make(ctx, g, false);
}

bool ks__smalldw_geom_make(const ks__kernel_ctx *ctx, ks__smallconv_geom *g) {
    return conv_geom_make(ctx, g, true);
}
