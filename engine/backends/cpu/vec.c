/* Portable parts of the vectorized fp32 variants (vec.h). */
#include "vec.h"

#include <math.h>
#include <string.h>

bool ks__vec_is_f32(const ks__rt_tensor *t) {
    return t && t->dtype == KS_DTYPE_F32 && (!t->quant || t->quant->count == 0);
}

/* ---- binary broadcasting ---- */

bool ks__vbin_geom_make(const ks__rt_tensor *a, const ks__rt_tensor *b, const ks__rt_tensor *y,
                        ks__vbin_geom *g) {
    memset(g, 0, sizeof(*g));
    if (y->rank > KS_MAX_RANK || a->rank > y->rank || b->rank > y->rank) return false;
    const ks__rt_tensor *in[2] = {a, b};
    int64_t stride[2][KS_MAX_RANK];
    for (int k = 0; k < 2; k++) {
        int64_t s = 1;
        for (int32_t d = y->rank - 1; d >= 0; d--) {
            int32_t j = d - (y->rank - in[k]->rank);
            int64_t dim = j < 0 ? 1 : in[k]->dims[j];
            if (dim != 1 && dim != y->dims[d]) return false;
            stride[k][d] = dim == 1 ? 0 : s;
            s *= dim;
        }
    }
    /* Walk from the innermost dim outwards, dropping size-1 dims and merging chained ones. The
     * collapsed dims are built reversed, then flipped. */
    int32_t r = 0;
    int64_t dims[KS_MAX_RANK], sa[KS_MAX_RANK], sb[KS_MAX_RANK];
    g->numel = 1;
    for (int32_t d = y->rank - 1; d >= 0; d--) {
        int64_t n = y->dims[d];
        g->numel *= n;
        if (n == 1) continue;
        if (r > 0 && stride[0][d] == sa[r - 1] * dims[r - 1] &&
            stride[1][d] == sb[r - 1] * dims[r - 1]) {
            dims[r - 1] *= n;
            continue;
        }
        dims[r] = n, sa[r] = stride[0][d], sb[r] = stride[1][d];
        r++;
    }
    if (r == 0) dims[0] = 1, sa[0] = 0, sb[0] = 0, r = 1;
    g->rank = r;
    for (int32_t i = 0; i < r; i++) {
        g->dims[i] = dims[r - 1 - i];
        g->stride_a[i] = sa[r - 1 - i];
        g->stride_b[i] = sb[r - 1 - i];
    }
    return true;
}

void ks__vbin_row_offsets(const ks__vbin_geom *g, int64_t row, int64_t *off_a, int64_t *off_b) {
    int64_t oa = 0, ob = 0;
    for (int32_t d = g->rank - 2; d >= 0; d--) {
        int64_t i = row % g->dims[d];
        row /= g->dims[d];
        oa += i * g->stride_a[d];
        ob += i * g->stride_b[d];
    }
    *off_a = oa;
    *off_b = ob;
}

double ks__vbin_numel(const ks__kernel_ctx *ctx, bool prelu) {
    if (ctx->num_inputs != 2 || ctx->num_outputs != 1) return -1;
    const ks__rt_tensor *a = ctx->in[0], *b = ctx->in[1], *y = ctx->out[0];
    if (!ks__vec_is_f32(a) || !ks__vec_is_f32(b) || !ks__vec_is_f32(y)) return -1;
    if (!prelu && (ctx->node->ip[0] < 0 || ctx->node->ip[0] >= KS_ACT_COUNT)) return -1;
    ks__vbin_geom g;
    if (!ks__vbin_geom_make(a, b, y, &g)) return -1;
    return (double)g.numel;
}

double ks__vunary_numel(const ks__kernel_ctx *ctx) {
    if (ctx->num_inputs != 1 || ctx->num_outputs != 1) return -1;
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    if (!ks__vec_is_f32(x) || !ks__vec_is_f32(y)) return -1;
    int64_t n = ks__rt_numel(x);
    if (n < 0 || n != ks__rt_numel(y)) return -1;
    return (double)n;
}

static int32_t resolve_axis(int32_t axis, int32_t rank) {
    if (axis < 0) axis += rank;
    return axis >= 0 && axis < rank ? axis : -1;
}

bool ks__vsoftmax_shape(const ks__kernel_ctx *ctx, int64_t *rows_out, int64_t *len_out) {
    if (ctx->num_inputs != 1 || ctx->num_outputs != 1) return false;
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    if (!ks__vec_is_f32(x) || !ks__vec_is_f32(y) || x->rank < 1) return false;
    int32_t axis = resolve_axis(ctx->node->ip[0], x->rank);
    if (axis < 0) return false;
    int64_t rows = 1;
    for (int32_t d = 0; d < axis; d++)
        rows *= x->dims[d];
    for (int32_t d = axis + 1; d < x->rank; d++)
        if (x->dims[d] != 1) return false;
    if (ks__rt_numel(y) != rows * x->dims[axis]) return false;
    *rows_out = rows;
    *len_out = x->dims[axis];
    return true;
}

bool ks__vreduce_is_hw_mean(const ks__kernel_ctx *ctx) {
    if (ctx->num_inputs != 1 || ctx->num_outputs != 1) return false;
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    const int32_t *ip = ctx->node->ip;
    if (!ks__vec_is_f32(x) || !ks__vec_is_f32(y) || x->rank != 4 || ip[0] != 0) return false;
    if (ip[2] < 1 || ip[2] > KS_MAX_RANK) return false;
    uint32_t mask = 0;
    for (int32_t k = 0; k < ip[2]; k++) {
        int32_t a = resolve_axis(ip[3 + k], 4);
        if (a < 0) return false;
        mask |= 1u << a;
    }
    return mask == 6u && ks__rt_numel(y) == x->dims[0] * x->dims[3];
}

/* ---- RESIZE: same coordinate arithmetic as ref/conv_resize.c ---- */

typedef struct resize_hdr {
    int32_t mode;
    int64_t n, ih, iw, c, oh, ow;
} resize_hdr;

#define RESIZE_HDR_BYTES 64

static bool resize_dims(const ks__kernel_ctx *ctx, resize_hdr *h) {
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    if (x->rank != 4 || y->rank != 4) return false;
    h->mode = ctx->node->ip[0];
    h->n = x->dims[0], h->ih = x->dims[1], h->iw = x->dims[2], h->c = x->dims[3];
    h->oh = y->dims[1], h->ow = y->dims[2];
    if (y->dims[0] != h->n || y->dims[3] != h->c) return false;
    if (h->ih < 1 || h->iw < 1 || h->oh < 1 || h->ow < 1) return false;
    /* indices are stored as int32 */
    return h->ih <= INT32_MAX && h->iw <= INT32_MAX && h->oh <= INT32_MAX / 4 &&
           h->ow <= INT32_MAX / 4;
}

bool ks__vresize_supported(const ks__kernel_ctx *ctx) {
    if (ctx->num_inputs < 1 || ctx->num_outputs != 1) return false;
    if (!ks__vec_is_f32(ctx->in[0]) || !ks__vec_is_f32(ctx->out[0])) return false;
    const int32_t *ip = ctx->node->ip;
    if (ip[0] != 0 && ip[0] != 1) return false;
    if (ip[1] < 0 || ip[1] >= KS_RESIZE_COORD_COUNT || ip[2] < 0 || ip[2] > 3) return false;
    resize_hdr h;
    return resize_dims(ctx, &h);
}

static size_t resize_tab_bytes(const resize_hdr *h) {
    /* y0 y1 x0 x1 (int32) and fy fx (float) */
    return RESIZE_HDR_BYTES + (size_t)(h->oh + h->ow) * 3 * 4;
}

size_t ks__vresize_packed_bytes(const ks__kernel_ctx *ctx) {
    resize_hdr h;
    if (!resize_dims(ctx, &h)) return 0;
    return resize_tab_bytes(&h);
}

static float axis_ratio(int64_t in, int64_t out, float scale, int from_scale, int32_t coord) {
    if (coord == KS_RESIZE_ALIGN_CORNERS)
        return out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f;
    if (from_scale) return 1.0f / scale;
    return (float)in / (float)out;
}

static float source_coord(int64_t o, int64_t out, float ratio, int32_t coord) {
    float of = (float)o;
    switch (coord) {
    case KS_RESIZE_HALF_PIXEL:
        return (of + 0.5f) * ratio - 0.5f;
    case KS_RESIZE_PYTORCH_HALF_PIXEL:
        return out > 1 ? (of + 0.5f) * ratio - 0.5f : 0.0f;
    case KS_RESIZE_TF_HALF_PIXEL_FOR_NN:
        return (of + 0.5f) * ratio;
    default:
        return of * ratio;
    }
}

static int64_t nearest_index(float src, int64_t in, int32_t round_mode) {
    float r;
    switch (round_mode) {
    case 0:
        r = src - floorf(src) == 0.5f ? floorf(src) : roundf(src);
        break;
    case 1:
        r = roundf(src);
        break;
    case 2:
        r = floorf(src);
        break;
    default:
        r = ceilf(src);
        break;
    }
    if (!(r >= 0.0f)) return 0;
    if (r >= (float)(in - 1)) return in - 1;
    return (int64_t)r;
}

/* One axis of the table: nearest index, or TFLite's floor/ceil bounds of the clamped source
 * coordinate plus the fraction the reference computes (src - lower). */
static void resize_axis(int32_t mode, int32_t coord, int32_t round_mode, int64_t in, int64_t out,
                        float ratio, int32_t *lo, int32_t *hi, float *frac) {
    for (int64_t o = 0; o < out; o++) {
        float s = source_coord(o, out, ratio, coord);
        if (mode == 0) {
            lo[o] = hi[o] = (int32_t)nearest_index(s, in, round_mode);
            frac[o] = 0.0f;
            continue;
        }
        float top = (float)(in - 1);
        s = s < 0.0f ? 0.0f : (s > top ? top : s);
        float f = floorf(s), c = ceilf(s);
        int64_t l = f < 0.0f ? 0 : (f > top ? in - 1 : (int64_t)f);
        int64_t h = c > top ? in - 1 : (c < 0.0f ? 0 : (int64_t)c);
        lo[o] = (int32_t)l;
        hi[o] = (int32_t)h;
        frac[o] = s - (float)l;
    }
}

ks_status ks__vresize_pack(ks__kernel_ctx *ctx) {
    resize_hdr h;
    if (!resize_dims(ctx, &h) || !ctx->packed || ctx->packed_bytes < resize_tab_bytes(&h))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "resize table does not fit");
    const ks__rt_tensor *size = ctx->num_inputs > 1 ? ctx->in[1] : NULL;
    const int32_t *ip = ctx->node->ip;
    const float *fp = ctx->node->fp;
    int from_scale = !size && ip[3] <= 0 && ip[4] <= 0;
    float ratio_h = axis_ratio(h.ih, h.oh, fp[0], from_scale, ip[1]);
    float ratio_w = axis_ratio(h.iw, h.ow, fp[1], from_scale, ip[1]);
    memset(ctx->packed, 0, RESIZE_HDR_BYTES);
    memcpy(ctx->packed, &h, sizeof(h));
    ks__vresize_tab t;
    ks__vresize_view(ctx, &t);
    resize_axis(h.mode, ip[1], ip[2], h.ih, h.oh, ratio_h, (int32_t *)t.y0, (int32_t *)t.y1,
                (float *)t.fy);
    resize_axis(h.mode, ip[1], ip[2], h.iw, h.ow, ratio_w, (int32_t *)t.x0, (int32_t *)t.x1,
                (float *)t.fx);
    return KS_STATUS_OK;
}

void ks__vresize_view(const ks__kernel_ctx *ctx, ks__vresize_tab *t) {
    resize_hdr h;
    memcpy(&h, ctx->packed, sizeof(h));
    t->mode = h.mode;
    t->n = h.n, t->ih = h.ih, t->iw = h.iw, t->c = h.c, t->oh = h.oh, t->ow = h.ow;
    uint8_t *p = (uint8_t *)ctx->packed + RESIZE_HDR_BYTES;
    t->y0 = (const int32_t *)(void *)p;
    t->y1 = t->y0 + h.oh;
    t->fy = (const float *)(const void *)(t->y1 + h.oh);
    t->x0 = (const int32_t *)(const void *)(t->fy + h.oh);
    t->x1 = t->x0 + h.ow;
    t->fx = (const float *)(const void *)(t->x1 + h.ow);
}

/* ---- CONCAT / PAD ---- */

bool ks__vconcat_geom_make(const ks__kernel_ctx *ctx, ks__vconcat_geom *g) {
    memset(g, 0, sizeof(*g));
    if (ctx->num_inputs < 1 || ctx->num_inputs > KS__VCONCAT_MAX_INPUTS || ctx->num_outputs != 1)
        return false;
    const ks__rt_tensor *y = ctx->out[0];
    if (!ks__vec_is_f32(y) || y->rank < 1) return false;
    int32_t axis = resolve_axis(ctx->node->ip[0], y->rank);
    if (axis < 0) return false;
    int64_t inner = 1;
    g->outer = 1;
    for (int32_t d = 0; d < axis; d++)
        g->outer *= y->dims[d];
    for (int32_t d = axis + 1; d < y->rank; d++)
        inner *= y->dims[d];
    int64_t along = 0;
    for (uint32_t i = 0; i < ctx->num_inputs; i++) {
        const ks__rt_tensor *x = ctx->in[i];
        if (!ks__vec_is_f32(x) || x->rank != y->rank) return false;
        for (int32_t d = 0; d < y->rank; d++)
            if (d != axis && x->dims[d] != y->dims[d]) return false;
        g->offset[i] = along * inner;
        g->chunk[i] = x->dims[axis] * inner;
        along += x->dims[axis];
    }
    if (along != y->dims[axis]) return false;
    g->row = along * inner;
    return true;
}

bool ks__vpad_geom_make(const ks__kernel_ctx *ctx, ks__vpad_geom *g, bool with_fill) {
    return ks__vpad_geom_make_dt(ctx, g, with_fill, KS_DTYPE_F32);
}

bool ks__vpad_geom_make_dt(const ks__kernel_ctx *ctx, ks__vpad_geom *g, bool with_fill,
                           ks_dtype dt) {
    memset(g, 0, sizeof(*g));
    if (ctx->num_inputs < 2 || ctx->num_outputs != 1 || ctx->node->ip[0] != 0) return false;
    const ks__rt_tensor *x = ctx->in[0], *pads = ctx->in[1], *y = ctx->out[0];
    if (!x || !y || x->dtype != dt || y->dtype != dt || (x->quant && x->quant->count) ||
        (y->quant && y->quant->count) || x->rank < 1 || y->rank != x->rank)
        return false;
    if (!pads || !pads->data || (pads->dtype != KS_DTYPE_I32 && pads->dtype != KS_DTYPE_I64) ||
        ks__rt_numel(pads) != 2 * (int64_t)x->rank)
        return false;
    g->rank = x->rank;
    for (int32_t d = 0; d < x->rank; d++) {
        int64_t b = ks__rt_get_int(pads, 2 * d);
        g->before[d] = b;
        g->in_dims[d] = x->dims[d];
        g->out_dims[d] = y->dims[d];
        if (b < -x->dims[d] || b > INT32_MAX) return false;
    }
    if (!with_fill) return true;
    const ks__rt_tensor *value = ctx->num_inputs > 2 ? ctx->in[2] : NULL;
    if (value && value->data) {
        if (value->dtype == KS_DTYPE_F32)
            memcpy(&g->fill, value->data, sizeof(float));
        else
            g->fill = (float)ks__rt_get_f64(value, 0);
    } else {
        g->fill = (float)(double)ctx->node->fp[0];
    }
    return true;
}
