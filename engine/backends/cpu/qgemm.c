/* Quantized GEMM / indirect-GEMM / depthwise driver (qgemm.h): problem description, weight
 * packing with zero-point folding and per-channel requantization constants, input conversion,
 * tiling and threading. Portable C; the ISA files supply the microkernels.
 *
 * Why convert the input first: the microkernels then never see a k tail (each pixel's channels
 * are padded to the k block with a value that contributes nothing), never branch on the input
 * dtype, and for the int16 path never subtract zero points. The pass reads the input once and
 * costs a few percent of the GEMM it feeds; its output is laid out exactly like the input (one
 * row per pixel), so the indirect-GEMM row pointers work unchanged. When it would be a plain copy
 * (KR == 4, channels a multiple of 4, no row sums, and the input already in the A format: U8 for
 * u8 A, I8 for signed A) the kernels read the input in place, and without padding or row sums
 * the flip is one flat pass over the whole input.
 *
 * Exactness: everything the kernels add is congruent mod 2^32 to the reference's int64 sum, and
 * cost() refuses nodes whose true sum may leave int32 (where the reference saturates), so the
 * wrapped int32 result is the reference's value. The requantization constants are derived with
 * the reference's rules (legacy float scale product for U8 convs and per-tensor FC).
 */
#include "qgemm.h"
#include "q8_lut.h"

#include <math.h>
#include <string.h>

#include "q8_common.h"
#include "ref/conv_internal.h"
#include "ref/quant_util.h"

typedef struct qproblem {
    int64_t m;       /* GEMM rows (output pixels) */
    int64_t kc, kcp; /* channels per tap, padded to KR */
    int64_t ks;      /* taps */
    int64_t oc;      /* output channels */
    int64_t pixels;  /* input rows (pixels) converted */
    int conv;        /* row pointers from conv geometry; else row r = input row r */
    int64_t ih, iw, ic, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
    const ks__rt_tensor *x, *w, *bias, *y;
    int legacy; /* TFLite legacy float scale product */
    /* the epilogue: what the microkernel requantizes to (the output's params, or for fused nodes
     * the intermediate's with act NONE) and the fused part */
    ks__q8_fused_desc f;
} qproblem;

int ks__q8_check_common(const ks__rt_tensor *x, const ks__rt_tensor *w, const ks__rt_tensor *y,
                        const ks__rt_tensor *b, int32_t act, int64_t oc, int64_t depth) {
    if (!ks__q8_is_quant(x) || !ks__q8_is_quant(y) || !ks__q8_is_quant(w) || !w->data) return -1;
    if (x->quant->count != 1 || y->quant->count != 1) return -1;
    if (!(x->quant->scales[0] > 0.0f) || !(y->quant->scales[0] > 0.0f)) return -1;
    if ((int64_t)w->quant->count != 1 && ((int64_t)w->quant->count != oc || w->quant->axis != 0))
        return -1;
    int32_t xzp = x->quant->zero_points[0], yzp = y->quant->zero_points[0];
    if (xzp < ks__q8_lo(x->dtype) || xzp > ks__q8_hi(x->dtype)) return -1;
    if (yzp < ks__q8_lo(y->dtype) || yzp > ks__q8_hi(y->dtype)) return -1;
    if (act != KS_ACT_NONE && act != KS_ACT_RELU && act != KS_ACT_RELU6 &&
        act != KS_ACT_RELU_N1_TO_1)
        return -1;
    if (b && (b->dtype != KS_DTYPE_I32 || !b->data || ks__rt_numel(b) != oc)) return -1;
    int64_t wdev = 0;
    for (uint32_t i = 0; i < w->quant->count; i++) {
        int32_t z = w->quant->zero_points[i];
        if (z < ks__q8_lo(w->dtype) || z > ks__q8_hi(w->dtype)) return -1;
        int64_t d = ks__q8_max_dev(w->dtype, z);
        if (d > wdev) wdev = d;
    }
    int64_t bmax = 0;
    for (int64_t c = 0; b && c < oc; c++) {
        int64_t v = ((const int32_t *)b->data)[c];
        if (v < 0) v = -v;
        if (v > bmax) bmax = v;
    }
    int64_t xdev = ks__q8_max_dev(x->dtype, xzp);
    if (depth > (INT32_MAX - bmax) / (xdev * wdev + 1)) return -1;
    return 0;
}

/* ks__q8_check_common, then the plain node's requantization target. */
static int check_quant_common(qproblem *p, int64_t depth) {
    if (ks__q8_check_common(p->x, p->w, p->y, p->bias, p->f.act, p->oc, depth)) return -1;
    if (!p->f.fused) p->f.ys = p->y->quant->scales[0], p->f.yzp = p->y->quant->zero_points[0];
    return 0;
}

int ks__q8_describe_fused(const ks__kernel_ctx *ctx, const ks__rt_tensor *y, int allowed,
                          ks__q8_fused_desc *d) {
    const int32_t *ip = ctx->node->ip;
    const ks__rt_tensor *res = ks__q8_input(ctx, 3), *tab = ks__q8_input(ctx, 4);
    memset(d, 0, sizeof(*d));
    d->act = ip[10];
    if (ip[12] != 1) {
        if (ks__q8_is_quant(y)) d->ys = y->quant->scales[0], d->yzp = y->quant->zero_points[0];
        return res || tab ? -1 : 0;
    }
    if (!allowed || !ks__q8_is_quant(y) || y->quant->count != 1) return -1;
    float is = ctx->node->fp[1];
    int32_t iz = ip[11];
    if (!(is > 0.0f) || !isfinite(is) || iz < ks__q8_lo(y->dtype) || iz > ks__q8_hi(y->dtype))
        return -1;
    if (ip[10] == KS_ACT_TABLE) {
        if (res || !tab || !tab->data || tab->dtype != y->dtype || ks__rt_numel(tab) != 256)
            return -1;
        d->fused = KS_Q8_FUSED_TABLE;
    } else {
        if (!res || tab || !ks__q8_is_quant(res) || res->dtype != y->dtype ||
            res->quant->count != 1 || !(res->quant->scales[0] > 0.0f) || !ks__q8_same_shape(res, y))
            return -1;
        int32_t rz = res->quant->zero_points[0];
        if (rz < ks__q8_lo(y->dtype) || rz > ks__q8_hi(y->dtype)) return -1;
        if (ip[10] != KS_ACT_NONE && ip[10] != KS_ACT_RELU && ip[10] != KS_ACT_RELU6 &&
            ip[10] != KS_ACT_RELU_N1_TO_1)
            return -1;
        d->fused = KS_Q8_FUSED_RESIDUAL;
        d->post_act = ip[10];
    }
    d->res = res, d->table = tab;
    d->act = KS_ACT_NONE;
    d->ys = is, d->yzp = iz;
    return 0;
}

void ks__q8_make_fused(const ks__q8_fused_desc *d, const ks__rt_tensor *y, ks__q8_fused *f) {
    memset(f, 0, sizeof(*f));
    f->kind = d->fused;
    if (d->fused == KS_Q8_FUSED_RESIDUAL) {
        ks__q8_fused_add_init(f, y->dtype, d->ys, d->yzp, d->res->quant->scales[0],
                              d->res->quant->zero_points[0], y->quant->scales[0],
                              y->quant->zero_points[0], d->post_act);
    } else if (d->fused == KS_Q8_FUSED_TABLE) {
        f->flip = y->dtype == KS_DTYPE_I8 ? 0x80 : 0;
        f->vbmi = (ks__cpu_isa() & KS_ISA_AVX512_VBMI) != 0;
        const uint8_t *t = (const uint8_t *)d->table->data;
        for (int b = 0; b < 256; b++)
            f->table[b] = t[b ^ f->flip];
        ks__q8_tscope(f->table, f->tscope);
    }
}

static void vq_consts(int32_t mult, int32_t shift, int32_t *out) {
    int32_t left = shift > 0 ? (shift > 31 ? 31 : shift) : 0;
    int32_t right = shift > 0 ? 0 : (-shift > 31 ? 31 : -shift);
    int32_t mask = (int32_t)((1LL << right) - 1);
    out[0] = mult, out[1] = left, out[2] = right, out[3] = mask, out[4] = mask >> 1;
}

void ks__q8_fused_add_init(ks__q8_fused *f, ks_dtype dtype, float sa, int32_t za, float sb,
                           int32_t zb, float so, int32_t zo, int32_t act) {
    int32_t off = dtype == KS_DTYPE_I8 ? 128 : 0;
    f->kind = KS_Q8_FUSED_RESIDUAL;
    f->flip = off ? 0x80 : 0;
    f->za = za + off, f->zb = zb + off, f->zo = zo;
    const double twice_max = 2.0 * (double)(sa > sb ? sa : sb);
    ks__quant_multiplier((double)sa / twice_max, &f->ma, &f->sha);
    ks__quant_multiplier((double)sb / twice_max, &f->mb, &f->shb);
    ks__quant_multiplier(twice_max / ((double)(1 << 20) * (double)so), &f->mo, &f->sho);
    ks__quant_act_range(act, so, zo, dtype, &f->lo, &f->hi);
    vq_consts(f->ma, f->sha, f->vq[0]);
    vq_consts(f->mb, f->shb, f->vq[1]);
    vq_consts(f->mo, f->sho, f->vq[2]);
}

int32_t ks__q8_fused_add_one(const ks__q8_fused *f, int32_t a, int32_t b) {
    int32_t off = f->flip ? 128 : 0;
    /* |a - za| <= 255, so the << 20 stays inside int32 (the reference's wrapping multiply) */
    int32_t va = (a + off - f->za) * (1 << 20), vb = (b + off - f->zb) * (1 << 20);
    int32_t raw = ks__quant_mul(va, f->ma, f->sha) + ks__quant_mul(vb, f->mb, f->shb);
    int32_t q = ks__quant_mul(raw, f->mo, f->sho) + f->zo;
    return q < f->lo ? f->lo : (q > f->hi ? f->hi : q);
}

void ks__q8_fused_apply_scalar(const ks__q8_fused *f, uint8_t *y, const uint8_t *res, size_t n) {
    if (f->kind == KS_Q8_FUSED_TABLE) {
        for (size_t i = 0; i < n; i++)
            y[i] = f->table[y[i]];
        return;
    }
    if (f->kind != KS_Q8_FUSED_RESIDUAL) return;
    const int32_t off = f->flip ? 128 : 0;
    for (size_t i = 0; i < n; i++) {
        int32_t a = (int32_t)(uint8_t)(y[i] ^ f->flip) - off;
        int32_t b = (int32_t)(uint8_t)(res[i] ^ f->flip) - off;
        y[i] = (uint8_t)ks__q8_fused_add_one(f, a, b);
    }
}

static int describe_gemm(const ks__kernel_ctx *ctx, qproblem *p, uint32_t kr, int fused_ok) {
    memset(p, 0, sizeof(*p));
    if (ctx->num_outputs != 1 || ctx->num_inputs < 2) return -1;
    const ks__rt_tensor *x = ks__q8_input(ctx, 0), *w = ks__q8_input(ctx, 1), *y = ctx->out[0];
    if (!x || !w || !y) return -1;
    p->x = x, p->w = w, p->y = y, p->bias = ks__q8_input(ctx, 2);
    if (ctx->node->op == KS_OP_CONV2D) {
        const int32_t *ip = ctx->node->ip;
        if (x->rank != 4 || w->rank != 4 || y->rank != 4) return -1;
        if (ks__q8_describe_fused(ctx, p->y, fused_ok, &p->f)) return -1;
        if (ks__q8_one_if_zero(ip[9]) != 1) return -1;
        p->ic = x->dims[3], p->kc = w->dims[3], p->kh = w->dims[1], p->kw = w->dims[2];
        p->oc = w->dims[0];
        if (p->kc != p->ic || p->kc < 1 || p->kh < 1 || p->kw < 1 || p->oc < 1 ||
            y->dims[3] != p->oc || y->dims[0] != x->dims[0])
            return -1;
        if (ip[8] < KS_PAD_EXPLICIT || ip[8] > KS_PAD_VALID) return -1;
        p->ih = x->dims[1], p->iw = x->dims[2], p->oh = y->dims[1], p->ow = y->dims[2];
        p->sh = ks__q8_one_if_zero(ip[0]), p->sw = ks__q8_one_if_zero(ip[1]);
        p->dh = ks__q8_one_if_zero(ip[2]), p->dw = ks__q8_one_if_zero(ip[3]);
        if (p->sh < 1 || p->sw < 1 || p->dh < 1 || p->dw < 1 || p->ih < 1 || p->iw < 1) return -1;
        p->pt = ks__q8_lead_pad(ip[8], ip[4], p->ih, p->oh, (p->kh - 1) * p->dh + 1, p->sh);
        p->pl = ks__q8_lead_pad(ip[8], ip[5], p->iw, p->ow, (p->kw - 1) * p->dw + 1, p->sw);
        p->ks = p->kh * p->kw;
        p->m = y->dims[0] * p->oh * p->ow;
        p->pixels = x->dims[0] * p->ih * p->iw;
        p->conv = !(p->ks == 1 && p->sh == 1 && p->sw == 1 && p->pt == 0 && p->pl == 0 &&
                    p->oh == p->ih && p->ow == p->iw);
        p->legacy = x->dtype == KS_DTYPE_U8;
    } else if (ctx->node->op == KS_OP_FULLY_CONNECTED) {
        if (w->rank != 2) return -1;
        int64_t o = w->dims[0], in_size = w->dims[1], numel = ks__rt_numel(x);
        if (o < 1 || in_size < 1 || numel < 0 || numel % in_size) return -1;
        if (ks__rt_numel(y) != numel / in_size * o) return -1;
        p->oc = o, p->kc = in_size, p->ks = 1, p->m = numel / in_size, p->pixels = p->m;
        p->f.act = ctx->node->ip[0];
        p->legacy = ks__q8_is_quant(w) && w->quant->count == 1;
    } else {
        return -1;
    }
    if (p->m < 1) return -1;
    p->kcp = (p->kc + kr - 1) / kr * kr;
    return check_quant_common(p, p->ks * p->kc);
}

/* ---- requantization constants ---- */

void ks__q8_channel_multiplier(float xs, float ws, float ys, int legacy, int32_t *mult,
                               int32_t *left, int32_t *right) {
    double real = legacy ? (double)(xs * ws) / (double)ys : (double)xs * (double)ws / (double)ys;
    int32_t shift;
    ks__quant_multiplier(real, mult, &shift);
    *left = shift > 0 ? (shift > 31 ? 31 : shift) : 0;
    *right = shift > 0 ? 0 : (-shift > 31 ? 31 : -shift);
}

static void col_requant(const qproblem *p, int64_t c, int32_t *hdr, size_t stride) {
    int32_t mult, left, right;
    ks__q8_channel_multiplier(p->x->quant->scales[0],
                              p->w->quant->scales[p->w->quant->count == 1 ? 0 : c], p->f.ys,
                              p->legacy, &mult, &left, &right);
    hdr[KS_Q8_HDR_MULT * stride] = mult;
    hdr[KS_Q8_HDR_LSHIFT * stride] = left;
    hdr[KS_Q8_HDR_RSHIFT * stride] = right;
    hdr[KS_Q8_HDR_RMASK * stride] = (int32_t)((1LL << right) - 1);
}

static void make_epilogue(const qproblem *p, ks__q8_epilogue *ep) {
    memset(ep, 0, sizeof(*ep));
    ep->out_zp = p->f.yzp;
    ep->out_signed = p->y->dtype == KS_DTYPE_I8;
    ks__quant_act_range(p->f.act, p->f.ys, ep->out_zp, p->y->dtype, &ep->lo, &ep->hi);
}

/* Input zero point as the KR == 4 kernels see it (I8 inputs are flipped to u8 by +128). */
static int32_t xzp_shifted(const qproblem *p) {
    return p->x->quant->zero_points[0] + (p->x->dtype == KS_DTYPE_I8 ? 128 : 0);
}

/* Weight zero point of channel c in s8 terms (U8 weights are shifted by -128). */
static int32_t wzp_shifted(const qproblem *p, int64_t c) {
    return ks__q8_wzp(p->w, c) - (p->w->dtype == KS_DTYPE_U8 ? 128 : 0);
}

/* What the KR == 4 input pass XORs into each input byte: I8 -> u8 (+128) for u8 A, U8 -> s8
 * (-128) for signed A (sa); 0 when A is the input's own bytes. */
static uint8_t a_flip(const qproblem *p, int sa) {
    int i8 = p->x->dtype == KS_DTYPE_I8;
    return (sa ? !i8 : i8) ? 0x80 : 0;
}

/* The A byte that stands for x_zp: padding taps and channels. */
static uint8_t a_pad(const qproblem *p, int sa) {
    return (uint8_t)((uint8_t)p->x->quant->zero_points[0] ^ a_flip(p, sa));
}

/* Signed A (qgemm.h): every w - w_zp must fit [-127, 127], so that moving a's sign onto it never
 * overflows s8 (vpsignb of -128) and |a| * |w| pair sums stay below 2^15. */
static int s8_weights_fit(const qproblem *p) {
    int64_t per = p->ks * p->kc;
    for (int64_t c = 0; c < p->oc; c++) {
        int32_t wzp = ks__q8_wzp(p->w, c);
        for (int64_t i = 0; i < per; i++) {
            int32_t v = ks__q8_load(p->w, c * per + i) - wzp;
            if (v < -127 || v > 127) return 0;
        }
    }
    return 1;
}

static int needs_rowsum(const qproblem *p, uint32_t kr, int sa) {
    if (kr != 4 || sa) return 0;
    for (int64_t c = 0; c < p->oc; c++)
        if (wzp_shifted(p, c) != 0) return 1;
    return 0;
}

/* ---- GEMM sizes ---- */

static size_t round_up(size_t v, size_t a) {
    return (v + a - 1) / a * a;
}

static size_t esize(const ks__q8_gemm_arch *arch) {
    return arch->kr == 4 ? 1 : 2;
}

static size_t num_panels(const qproblem *p, const ks__q8_gemm_arch *arch) {
    return ((size_t)p->oc + arch->nr - 1) / arch->nr;
}

static size_t ext_bytes(const ks__q8_gemm_arch *arch, int r64) {
    return r64 ? KS_Q8_EXT_ROWS * (arch->nr / 2) * sizeof(int64_t) : 0;
}

static size_t panel_bytes(const qproblem *p, const ks__q8_gemm_arch *arch, int r64) {
    return KS_Q8_HDR_ROWS * arch->nr * sizeof(int32_t) +
           (size_t)(p->ks * p->kcp) * arch->nr * esize(arch) + ext_bytes(arch, r64);
}

/* Column j's KS_Q8_EXT_* entries (qgemm.h) from its header's multiplier and right shift. The
 * reference rounds twice: h = floor((p + 2^30) / 2^31), then h / 2^r half away from zero, i.e.
 * floor((h + 2^(r-1) - [h < 0]) / 2^r); nested floors of divisions by powers of two merge into
 * one. [h < 0] may be replaced by [p < 0]: they differ only when h == 0, where both give 0. */
static void fill_ext(char *ext, size_t nr, size_t j, const int32_t *hdr) {
    int64_t *e = (int64_t *)ext;
    size_t half = nr / 2, q = (j / 16) * 8 + (j % 16) / 2, odd = j & 1;
    int64_t r = hdr[KS_Q8_HDR_RSHIFT * nr + j];
    e[(KS_Q8_EXT_RND_E + odd) * half + q] = (1LL << 30) + (r ? (int64_t)1 << (30 + r) : 0);
    e[(KS_Q8_EXT_SH_E + odd) * half + q] = 31 + r;
    e[(KS_Q8_EXT_CORR_E + odd) * half + q] = r ? (1LL << 31) : 0;
    if (odd) e[KS_Q8_EXT_MULT_O * half + q] = hdr[KS_Q8_HDR_MULT * nr + j];
}

static size_t zero_bytes(const qproblem *p, const ks__q8_gemm_arch *arch) {
    return round_up((size_t)p->kcp * esize(arch), 64);
}

static size_t abuf_bytes(const qproblem *p, const ks__q8_gemm_arch *arch) {
    return round_up((size_t)p->pixels * (size_t)p->kcp * esize(arch), 64);
}

static size_t rowsum_bytes(const qproblem *p) {
    return round_up((size_t)p->pixels * sizeof(int32_t), 64);
}

static size_t per_thread_scratch(const qproblem *p, const ks__q8_gemm_arch *arch) {
    return round_up((size_t)arch->mr * (size_t)p->ks * sizeof(void *), 64) +
           round_up(arch->mr * sizeof(int32_t), 64);
}

static double gemm_cost(const ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch, int sa) {
    qproblem p;
    if (describe_gemm(ctx, &p, arch->kr, arch->fused != NULL)) return -1.0;
    if (sa && (arch->kr != 4 || !s8_weights_fit(&p))) return -1.0;
    double mtiles = (double)((p.m + arch->mr - 1) / arch->mr);
    double macs =
        mtiles * arch->mr * (double)num_panels(&p, arch) * arch->nr * (double)(p.ks * p.kcp);
    int in_place = sa && p.kc == p.kcp && !a_flip(&p, sa);
    return macs / arch->macs_per_cycle + (in_place ? 0.0 : (double)p.pixels * (double)p.kcp / 16.0);
}

double ks__q8_gemm_cost(const ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch) {
    return gemm_cost(ctx, arch, 0);
}

double ks__q8_gemm_cost_sa(const ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch) {
    return gemm_cost(ctx, arch, 1);
}

static ks_status gemm_plan(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch, int r64,
                           size_t *packed_bytes_out) {
    qproblem p;
    if (describe_gemm(ctx, &p, arch->kr, arch->fused != NULL))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 gemm cannot run this node");
    uint32_t threads = ctx->num_threads ? ctx->num_threads : 1;
    size_t scratch =
        abuf_bytes(&p, arch) + rowsum_bytes(&p) + per_thread_scratch(&p, arch) * threads;
    if (scratch > ctx->scratch_bytes) ctx->scratch_bytes = scratch;
    *packed_bytes_out = zero_bytes(&p, arch) + num_panels(&p, arch) * panel_bytes(&p, arch, r64);
    return KS_STATUS_OK;
}

ks_status ks__q8_gemm_plan(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch,
                           size_t *packed_bytes_out) {
    return gemm_plan(ctx, arch, 0, packed_bytes_out);
}

ks_status ks__q8_gemm_plan_r64(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch,
                               size_t *packed_bytes_out) {
    return gemm_plan(ctx, arch, 1, packed_bytes_out);
}

static ks_status gemm_pack(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch, int r64, int sa) {
    qproblem p;
    if (describe_gemm(ctx, &p, arch->kr, arch->fused != NULL))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 gemm cannot run this node");
    size_t np = num_panels(&p, arch), pb = panel_bytes(&p, arch, r64), nr = arch->nr;
    size_t kr = arch->kr, zb = zero_bytes(&p, arch);
    if (r64 && (kr != 4 || nr % 16 != 0))
        return ks__kernel_error(
            ctx, KS_STATUS_INTERNAL,
            "q8 gemm: 64-bit requantization needs KR 4 and NR a multiple of 16");
    if (!ctx->packed || ctx->packed_bytes < zb + np * pb)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "packed buffer too small");
    if (sa && (kr != 4 || r64 || !s8_weights_fit(&p)))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "q8 gemm: signed A needs KR 4 and weights - zero point in "
                                "[-127, 127]");
    int32_t xzp4 = xzp_shifted(&p);
    int32_t xzp_s = (int8_t)a_pad(&p, sa); /* signed A: x_zp as A holds it */
    if (kr == 4)
        memset(ctx->packed, (int)a_pad(&p, sa), zb);
    else
        memset(ctx->packed, 0, zb);
    const int32_t *bias = p.bias ? (const int32_t *)p.bias->data : NULL;
    int64_t kb = p.kcp / (int64_t)kr, k_padded = p.ks * p.kcp;
    for (size_t pn = 0; pn < np; pn++) {
        char *panel = (char *)ctx->packed + zb + pn * pb;
        int32_t *hdr = (int32_t *)panel;
        memset(panel, 0, pb);
        for (size_t j = 0; j < nr; j++) {
            int64_t co = (int64_t)(pn * nr + j);
            if (co >= p.oc) continue; /* padding columns: all zero, outputs never stored */
            int32_t wzp = ks__q8_wzp(p.w, co);
            int64_t wsum = 0;
            for (int64_t t = 0; t < p.ks; t++) {
                for (int64_t k = 0; k < p.kc; k++) {
                    int32_t wv = ks__q8_load(p.w, (co * p.ks + t) * p.kc + k);
                    /* Index of (t, k) within the panel's [t][kb][nr][kr] weight blocks. */
                    size_t at =
                        (((size_t)t * (size_t)kb + (size_t)(k / (int64_t)kr)) * nr + j) * kr +
                        (size_t)(k % (int64_t)kr);
                    if (sa) {
                        ((int8_t *)(panel + KS_Q8_HDR_ROWS * nr * 4))[at] = (int8_t)(wv - wzp);
                        wsum += wv - wzp;
                    } else if (kr == 4) {
                        int32_t ws = wv - (p.w->dtype == KS_DTYPE_U8 ? 128 : 0);
                        ((int8_t *)(panel + KS_Q8_HDR_ROWS * nr * 4))[at] = (int8_t)ws;
                        wsum += ws;
                    } else {
                        ((int16_t *)(panel + KS_Q8_HDR_ROWS * nr * 4))[at] = (int16_t)(wv - wzp);
                    }
                }
            }
            int64_t colterm = bias ? bias[co] : 0;
            if (sa) {
                colterm -= (int64_t)xzp_s * wsum;
            } else if (kr == 4) {
                int64_t wz = wzp_shifted(&p, co);
                colterm += -(int64_t)xzp4 * wsum + k_padded * (int64_t)xzp4 * wz;
                hdr[KS_Q8_HDR_ROWMUL * nr + j] = (int32_t)(uint32_t)(uint64_t)(-wz);
            }
            hdr[KS_Q8_HDR_BIAS * nr + j] = (int32_t)(uint32_t)(uint64_t)colterm;
            col_requant(&p, co, hdr + j, nr);
            if (r64) fill_ext(panel + pb - ext_bytes(arch, r64), nr, j, hdr);
        }
        /* Outputs of at most NR / 2 channels: the padding columns [NR / 2, NR) repeat the
         * requantization constants of [0, NR / 2), so kernels may requantize two tile rows'
         * columns in one vector (their bias and weights stay 0). */
        if (r64 && (int64_t)(nr / 2) >= p.oc) {
            for (size_t j = nr / 2; j < nr / 2 + (size_t)p.oc; j++) {
                for (int row = KS_Q8_HDR_MULT; row <= KS_Q8_HDR_RMASK; row++)
                    hdr[(size_t)row * nr + j] = hdr[(size_t)row * nr + j - nr / 2];
                fill_ext(panel + pb - ext_bytes(arch, r64), nr, j, hdr);
            }
        }
    }
    return KS_STATUS_OK;
}

ks_status ks__q8_gemm_pack(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch) {
    return gemm_pack(ctx, arch, 0, 0);
}

ks_status ks__q8_gemm_pack_r64(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch) {
    return gemm_pack(ctx, arch, 1, 0);
}

ks_status ks__q8_gemm_pack_sa(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch) {
    return gemm_pack(ctx, arch, 0, 1);
}

/* Arm SDOT has no u8 x s8 form (USDOT needs FEAT_I8MM), so those kernels flip each A byte back
 * to s8 (a ^ 0x80 == a - 128) and take s8 x s8 dot products, which lowers every column's sum by
 * 128 * (sum of its W bytes over all taps); the colterm adds it back, modulo 2^32 like the rest. */
ks_status ks__q8_gemm_pack_s8a(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch) {
    if (arch->kr != 4)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 gemm: s8 A needs 4-byte k groups");
    ks_status st = ks__q8_gemm_pack(ctx, arch);
    if (st != KS_STATUS_OK) return st;
    qproblem p;
    if (describe_gemm(ctx, &p, arch->kr, arch->fused != NULL))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 gemm cannot run this node");
    size_t np = num_panels(&p, arch), pb = panel_bytes(&p, arch, 0), nr = arch->nr;
    size_t groups = (size_t)(p.ks * p.kcp) / 4;
    for (size_t pn = 0; pn < np; pn++) {
        char *panel = (char *)ctx->packed + zero_bytes(&p, arch) + pn * pb;
        int32_t *hdr = (int32_t *)panel;
        const int8_t *wp = (const int8_t *)(panel + KS_Q8_HDR_ROWS * nr * 4);
        for (size_t j = 0; j < nr; j++) {
            uint32_t sum = 0;
            for (size_t g = 0; g < groups; g++)
                for (size_t q = 0; q < 4; q++)
                    sum += (uint32_t)(int32_t)wp[(g * nr + j) * 4 + q];
            hdr[KS_Q8_HDR_BIAS * nr + j] =
                (int32_t)((uint32_t)hdr[KS_Q8_HDR_BIAS * nr + j] + 128u * sum);
        }
    }
    return KS_STATUS_OK;
}

/* ---- GEMM run ---- */

typedef struct qgemm_job {
    const qproblem *p;
    const ks__q8_gemm_arch *arch;
    const char *xin;   /* raw input */
    char *abuf;        /* converted input */
    const char *arows; /* what the row pointers index: abuf, or the input when it needs no pass */
    int32_t *pixsum;   /* per converted row: sum of its A bytes (KR == 4 with rowsum) */
    const char *zero, *w;
    char *y;
    size_t panels, mtiles, pb, per_thread, esz;
    int tile_major;
    int sa;           /* signed A (qgemm.h) */
    int32_t zero_sum; /* rowsum contribution of a padding tap */
    char *thread_mem;
    ks__q8_epilogue ep;
    const uint8_t *res; /* fused residual (same layout as y) */
    ks__q8_fused fused;
} qgemm_job;

static void convert_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const qgemm_job *j = (const qgemm_job *)arg;
    const qproblem *p = j->p;
    size_t kc = (size_t)p->kc, kcp = (size_t)p->kcp;
    (void)thread;
    if (j->arch->kr == 4) {
        uint8_t flip = a_flip(p, j->sa);
        uint8_t pad = a_pad(p, j->sa);
        if (!j->pixsum && kc == kcp) { /* the rows are contiguous: one flat (vectorized) pass */
            const uint8_t *src = (const uint8_t *)j->xin + begin * kc;
            uint8_t *dst = (uint8_t *)j->abuf + begin * kc;
            size_t n = (end - begin) * kc;
#if defined(__x86_64__)
            if (ks__cpu_isa() & KS_ISA_AVX2) {
                ks__q8_xor_bytes__avx2(src, dst, n, flip);
                return;
            }
#endif
            for (size_t i = 0; i < n; i++)
                dst[i] = (uint8_t)(src[i] ^ flip);
            return;
        }
        for (size_t r = begin; r < end && !j->pixsum; r++) { /* padded rows, no row sums */
            const uint8_t *src = (const uint8_t *)j->xin + r * kc;
            uint8_t *dst = (uint8_t *)j->abuf + r * kcp;
            for (size_t k = 0; k < kc; k++)
                dst[k] = (uint8_t)(src[k] ^ flip);
            for (size_t k = kc; k < kcp; k++)
                dst[k] = pad;
        }
        for (size_t r = begin; r < end && j->pixsum; r++) {
            const uint8_t *src = (const uint8_t *)j->xin + r * kc;
            uint8_t *dst = (uint8_t *)j->abuf + r * kcp;
            uint32_t sum = 0;
            for (size_t k = 0; k < kc; k++) {
                uint8_t v = (uint8_t)(src[k] ^ flip);
                dst[k] = v;
                sum += v;
            }
            for (size_t k = kc; k < kcp; k++) {
                dst[k] = pad;
                sum += pad;
            }
            j->pixsum[r] = (int32_t)sum;
        }
        return;
    }
    int32_t zp = p->x->quant->zero_points[0];
    for (size_t r = begin; r < end; r++) {
        int16_t *dst = (int16_t *)j->abuf + r * kcp;
        if (p->x->dtype == KS_DTYPE_U8) {
            const uint8_t *src = (const uint8_t *)j->xin + r * kc;
            for (size_t k = 0; k < kc; k++)
                dst[k] = (int16_t)(src[k] - zp);
        } else {
            const int8_t *src = (const int8_t *)j->xin + r * kc;
            for (size_t k = 0; k < kc; k++)
                dst[k] = (int16_t)(src[k] - zp);
        }
        for (size_t k = kc; k < kcp; k++)
            dst[k] = 0;
    }
}

/* Row pointers (and row sums) of tile rows [m0, m0 + mr); rows past mr repeat the last row. */
static void build_rows(const qgemm_job *j, size_t m0, size_t mr, const void **a, int32_t *rowsum) {
    const qproblem *p = j->p;
    size_t MR = j->arch->mr, row_bytes = (size_t)p->kcp * j->esz;
    if (!p->conv) {
        for (size_t r = 0; r < MR; r++) {
            size_t row = m0 + (r < mr ? r : mr - 1);
            a[r] = j->arows + row * row_bytes;
            if (j->pixsum) rowsum[r] = j->pixsum[row];
        }
        return;
    }
    int64_t plane = p->oh * p->ow;
    int64_t b = (int64_t)m0 / plane, rem = (int64_t)m0 % plane;
    int64_t oy = rem / p->ow, ox = rem % p->ow;
    /* Output columns whose window lies inside the input horizontally (as in dw_range): from the
     * previous pixel of the same row, the taps of valid input rows advance by sw pixels. Without
     * row sums (symmetric weights, the int16 path) that replaces the per-tap bounds checks. */
    int64_t ox_lo = (p->pl + p->sw - 1) / p->sw;
    int64_t ox_hi = p->iw - 1 - (p->kw - 1) * p->dw + p->pl;
    ox_hi = ox_hi < 0 ? -1 : ox_hi / p->sw;
    const size_t step = (size_t)p->sw * row_bytes;
    for (size_t r = 0; r < MR; r++) {
        if (r > 0 && r < mr && ++ox == p->ow) {
            ox = 0;
            if (++oy == p->oh) oy = 0, b++;
        }
        if (r > 0 && r < mr && !j->pixsum && ox > ox_lo && ox <= ox_hi) {
            /* the run of rows [r, end) in the interior of this output row, tap by tap */
            size_t end = r + 1;
            while (end < mr && ox + 1 <= ox_hi && ox + 1 < p->ow)
                end++, ox++;
            for (size_t t = 0; t < (size_t)p->ks; t++) {
                const char *ptr = (const char *)a[t * MR + r - 1];
                const size_t inc = ptr == j->zero ? 0 : step;
                for (size_t q = r; q < end; q++) {
                    ptr += inc;
                    a[t * MR + q] = ptr;
                }
            }
            for (size_t q = r; q < end; q++)
                rowsum[q] = 0; /* unused without pixsum */
            r = end - 1;
            continue;
        }
        int64_t img = b * p->ih * p->iw;
        int32_t sum = 0;
        for (int64_t ky = 0; ky < p->kh; ky++) {
            int64_t iy = oy * p->sh - p->pt + ky * p->dh;
            int row_ok = iy >= 0 && iy < p->ih;
            for (int64_t kx = 0; kx < p->kw; kx++) {
                int64_t ix = ox * p->sw - p->pl + kx * p->dw;
                size_t t = (size_t)(ky * p->kw + kx);
                if (row_ok && ix >= 0 && ix < p->iw) {
                    int64_t pix = img + iy * p->iw + ix;
                    a[t * MR + r] = j->arows + (size_t)pix * row_bytes;
                    if (j->pixsum) sum += j->pixsum[pix];
                } else {
                    a[t * MR + r] = j->zero;
                    sum += j->zero_sum;
                }
            }
        }
        rowsum[r] = sum;
    }
}

static void gemm_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const qgemm_job *j = (const qgemm_job *)arg;
    const qproblem *p = j->p;
    size_t MR = j->arch->mr, NR = j->arch->nr;
    char *mem = j->thread_mem + (size_t)thread * j->per_thread;
    const void **a = (const void **)mem;
    int32_t *rowsum = (int32_t *)(mem + round_up(MR * (size_t)p->ks * sizeof(void *), 64));
    size_t built = (size_t)-1;
    size_t ldc = (size_t)p->oc * 1, kb = (size_t)(p->kcp / j->arch->kr);
    for (size_t i = begin; i < end; i++) {
        size_t mt, pn;
        if (j->tile_major)
            mt = i / j->panels, pn = i % j->panels;
        else
            mt = i % j->mtiles, pn = i / j->mtiles;
        size_t m0 = mt * MR;
        size_t mr = (size_t)p->m - m0 < MR ? (size_t)p->m - m0 : MR;
        if (mt != built) {
            build_rows(j, m0, mr, a, rowsum);
            built = mt;
        }
        size_t n0 = pn * NR;
        size_t nc = (size_t)p->oc - n0 < NR ? (size_t)p->oc - n0 : NR;
        j->arch->ukernel(mr, nc, kb, (size_t)p->ks, a, j->w + pn * j->pb, j->y + m0 * ldc + n0, ldc,
                         rowsum, &j->ep);
        if (j->fused.kind && !j->arch->fused_in_kernel && ldc == nc) { /* contiguous rows */
            size_t at = m0 * ldc + n0;
            j->arch->fused(&j->fused, (uint8_t *)j->y + at, j->res ? j->res + at : NULL, mr * nc);
        } else if (j->fused.kind && !j->arch->fused_in_kernel) /* the tile is still in L1 */
            for (size_t r = 0; r < mr; r++) {
                size_t at = (m0 + r) * ldc + n0;
                j->arch->fused(&j->fused, (uint8_t *)j->y + at, j->res ? j->res + at : NULL, nc);
            }
    }
}

static ks_status gemm_run(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch, int r64, int sa) {
    qproblem p;
    if (describe_gemm(ctx, &p, arch->kr, arch->fused != NULL))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 gemm cannot run this node");
    uint32_t threads = ks__pool_threads(ctx->pool);
    size_t need = abuf_bytes(&p, arch) + rowsum_bytes(&p) + per_thread_scratch(&p, arch) * threads;
    if (!ctx->packed || !ctx->scratch || ctx->scratch_bytes < need)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL,
                                "q8 gemm: packed/scratch buffers missing or planned for fewer "
                                "than %u threads",
                                threads);
    qgemm_job j;
    memset(&j, 0, sizeof(j));
    j.p = &p;
    j.arch = arch;
    j.sa = sa;
    j.esz = esize(arch);
    j.xin = (const char *)p.x->data;
    j.abuf = (char *)ctx->scratch;
    j.pixsum = needs_rowsum(&p, arch->kr, sa)
                   ? (int32_t *)((char *)ctx->scratch + abuf_bytes(&p, arch))
                   : NULL;
    j.thread_mem = (char *)ctx->scratch + abuf_bytes(&p, arch) + rowsum_bytes(&p);
    j.per_thread = per_thread_scratch(&p, arch);
    j.zero = (const char *)ctx->packed;
    j.zero_sum = (int32_t)(p.kcp * xzp_shifted(&p));
    j.w = (const char *)ctx->packed + zero_bytes(&p, arch);
    j.y = (char *)p.y->data;
    j.panels = num_panels(&p, arch);
    j.mtiles = ((size_t)p.m + arch->mr - 1) / arch->mr;
    j.pb = panel_bytes(&p, arch, r64);
    make_epilogue(&p, &j.ep);
    ks__q8_make_fused(&p.f, p.y, &j.fused);
    j.res = p.f.res ? (const uint8_t *)p.f.res->data : NULL;
    j.ep.use_rowsum = j.pixsum != NULL;
    if (j.fused.kind && arch->fused_in_kernel)
        j.ep.fused = &j.fused, j.ep.y_base = (const uint8_t *)j.y, j.ep.res_base = j.res;
    j.tile_major = j.panels * j.pb <= (256u << 10);
    /* Input rows already in the A format (KR == 4, no k padding, no row sums, no flip: U8 for u8
     * A, I8 for signed A) are read in place. */
    if (arch->kr == 4 && !j.pixsum && p.kc == p.kcp && !a_flip(&p, sa)) {
        j.arows = j.xin;
    } else {
        j.arows = j.abuf;
        ks__parallel_for(ctx->pool, (size_t)p.pixels, 64, convert_range, &j);
    }
    ks__parallel_for(ctx->pool, j.panels * j.mtiles, 1, gemm_range, &j);
    return KS_STATUS_OK;
}

ks_status ks__q8_gemm_run(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch) {
    return gemm_run(ctx, arch, 0, 0);
}

ks_status ks__q8_gemm_run_r64(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch) {
    return gemm_run(ctx, arch, 1, 0);
}

ks_status ks__q8_gemm_run_sa(ks__kernel_ctx *ctx, const ks__q8_gemm_arch *arch) {
    return gemm_run(ctx, arch, 0, 1);
}

/* ---- depthwise ---- */

static int describe_dw(const ks__kernel_ctx *ctx, qproblem *p, int fused_ok) {
    memset(p, 0, sizeof(*p));
    if (ctx->node->op != KS_OP_CONV2D || ctx->num_outputs != 1 || ctx->num_inputs < 2) return -1;
    const ks__rt_tensor *x = ks__q8_input(ctx, 0), *w = ks__q8_input(ctx, 1), *y = ctx->out[0];
    const int32_t *ip = ctx->node->ip;
    if (!x || !w || !y || x->rank != 4 || w->rank != 4 || y->rank != 4) return -1;
    p->x = x, p->w = w, p->y = y, p->bias = ks__q8_input(ctx, 2);
    if (ks__q8_describe_fused(ctx, p->y, fused_ok, &p->f)) return -1;
    p->ic = x->dims[3], p->oc = w->dims[0], p->kh = w->dims[1], p->kw = w->dims[2];
    if (w->dims[3] != 1 || ks__q8_one_if_zero(ip[9]) != p->ic || p->oc != p->ic || p->ic < 1 ||
        p->kh < 1 || p->kw < 1 || y->dims[3] != p->oc || y->dims[0] != x->dims[0])
        return -1;
    if (ip[8] < KS_PAD_EXPLICIT || ip[8] > KS_PAD_VALID) return -1;
    p->ih = x->dims[1], p->iw = x->dims[2], p->oh = y->dims[1], p->ow = y->dims[2];
    p->sh = ks__q8_one_if_zero(ip[0]), p->sw = ks__q8_one_if_zero(ip[1]);
    p->dh = ks__q8_one_if_zero(ip[2]), p->dw = ks__q8_one_if_zero(ip[3]);
    if (p->sh < 1 || p->sw < 1 || p->dh < 1 || p->dw < 1 || p->ih < 1 || p->iw < 1) return -1;
    p->pt = ks__q8_lead_pad(ip[8], ip[4], p->ih, p->oh, (p->kh - 1) * p->dh + 1, p->sh);
    p->pl = ks__q8_lead_pad(ip[8], ip[5], p->iw, p->ow, (p->kw - 1) * p->dw + 1, p->sw);
    p->ks = p->kh * p->kw, p->kc = 1;
    p->m = y->dims[0] * p->oh * p->ow;
    p->legacy = x->dtype == KS_DTYPE_U8;
    if (p->m < 1) return -1;
    return check_quant_common(p, p->ks);
}

static size_t dw_blocks(const qproblem *p, const ks__q8_dw_arch *arch) {
    return ((size_t)p->oc + arch->cb - 1) / arch->cb;
}

static size_t dw_block_bytes(const qproblem *p, const ks__q8_dw_arch *arch) {
    return (KS_Q8_HDR_ROWS + (size_t)p->ks) * arch->cb * sizeof(int32_t);
}

/* Per thread: the tap pointers, then the per-tap steps of the row kernel. */
static size_t dw_per_thread(const qproblem *p) {
    return round_up((size_t)p->ks * sizeof(void *), 64) +
           round_up((size_t)p->ks * sizeof(size_t), 64);
}

static size_t dw_zero_bytes(const qproblem *p) {
    return round_up((size_t)p->ic + 64, 64);
}

double ks__q8_dw_cost(const ks__kernel_ctx *ctx, const ks__q8_dw_arch *arch) {
    qproblem p;
    if (describe_dw(ctx, &p, arch->fused != NULL)) return -1.0;
    return (double)p.m * (double)(dw_blocks(&p, arch) * arch->cb) * (double)p.ks /
           arch->macs_per_cycle;
}

ks_status ks__q8_dw_plan(ks__kernel_ctx *ctx, const ks__q8_dw_arch *arch,
                         size_t *packed_bytes_out) {
    qproblem p;
    if (describe_dw(ctx, &p, arch->fused != NULL))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 dwconv cannot run this node");
    uint32_t threads = ctx->num_threads ? ctx->num_threads : 1;
    size_t scratch = dw_per_thread(&p) * threads;
    if (scratch > ctx->scratch_bytes) ctx->scratch_bytes = scratch;
    *packed_bytes_out = dw_zero_bytes(&p) + dw_blocks(&p, arch) * dw_block_bytes(&p, arch);
    return KS_STATUS_OK;
}

ks_status ks__q8_dw_pack(ks__kernel_ctx *ctx, const ks__q8_dw_arch *arch) {
    qproblem p;
    if (describe_dw(ctx, &p, arch->fused != NULL))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 dwconv cannot run this node");
    size_t nb = dw_blocks(&p, arch), bb = dw_block_bytes(&p, arch), cb = arch->cb;
    size_t zb = dw_zero_bytes(&p);
    if (!ctx->packed || ctx->packed_bytes < zb + nb * bb)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "packed buffer too small");
    memset(ctx->packed, (int)(uint8_t)(int8_t)p.x->quant->zero_points[0], zb);
    const int32_t *bias = p.bias ? (const int32_t *)p.bias->data : NULL;
    for (size_t blk = 0; blk < nb; blk++) {
        int32_t *hdr = (int32_t *)((char *)ctx->packed + zb + blk * bb);
        memset(hdr, 0, bb);
        int32_t *wp = hdr + KS_Q8_HDR_ROWS * cb;
        for (size_t j = 0; j < cb; j++) {
            int64_t c = (int64_t)(blk * cb + j);
            if (c >= p.oc) continue;
            int32_t wzp = ks__q8_wzp(p.w, c);
            for (int64_t t = 0; t < p.ks; t++)
                wp[(size_t)t * cb + j] =
                    (int32_t)(uint16_t)(int16_t)(ks__q8_load(p.w, c * p.ks + t) - wzp);
            hdr[KS_Q8_HDR_BIAS * cb + j] = bias ? bias[c] : 0;
            /* The ROWMUL row (unused by depthwise otherwise) holds the bias with the input zero
             * point folded in, for kernels that multiply raw input codes: bias - x_zp * sum(w),
             * congruent mod 2^32 (cost() keeps the true sum inside int32). */
            int64_t wsum = 0;
            for (int64_t t = 0; t < p.ks; t++)
                wsum += ks__q8_load(p.w, c * p.ks + t) - wzp;
            int64_t folded =
                (int64_t)(bias ? bias[c] : 0) - (int64_t)p.x->quant->zero_points[0] * wsum;
            hdr[KS_Q8_HDR_ROWMUL * cb + j] = (int32_t)(uint32_t)(uint64_t)folded;
            col_requant(&p, c, hdr + j, cb);
        }
    }
    return KS_STATUS_OK;
}

typedef struct qdw_job {
    const qproblem *p;
    const ks__q8_dw_arch *arch;
    const uint8_t *x, *zero;
    const char *w;
    uint8_t *y;
    char *thread_mem;
    size_t per_thread;
    int32_t flip, zp;
    ks__q8_epilogue ep;
    const uint8_t *res; /* fused residual (same layout as y) */
    ks__q8_fused fused;
} qdw_job;

static void dw_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const qdw_job *j = (const qdw_job *)arg;
    const qproblem *p = j->p;
    const void **a = (const void **)(j->thread_mem + (size_t)thread * j->per_thread);
    size_t *steps = (size_t *)(j->thread_mem + (size_t)thread * j->per_thread +
                               round_up((size_t)p->ks * sizeof(void *), 64));
    size_t c = (size_t)p->ic;
    const int use_row = j->arch->row && c <= j->arch->cb;
    /* Output columns whose window lies inside the input horizontally: from one to the next the
     * tap pointers of valid rows advance by sw pixels, so they are not rebuilt. */
    int64_t ox_lo = (p->pl + p->sw - 1) / p->sw;
    int64_t ox_hi = p->iw - 1 - (p->kw - 1) * p->dw + p->pl; /* last x0 that fits, as x0 */
    ox_hi = ox_hi < 0 ? -1 : ox_hi / p->sw;                  /* last interior ox */
    const size_t step = (size_t)p->sw * c;
    for (size_t row = begin; row < end; row++) { /* row = b * oh + oy */
        int64_t b = (int64_t)row / p->oh, oy = (int64_t)row % p->oh;
        const uint8_t *img = j->x + (size_t)(b * p->ih * p->iw) * c;
        for (int64_t ox = 0; ox < p->ow; ox++) {
            if (ox > ox_lo && ox <= ox_hi && use_row) {
                /* the whole interior run in one call; the tap pointers are at ox - 1 */
                int64_t last = ox_hi < p->ow - 1 ? ox_hi : p->ow - 1;
                size_t count = (size_t)(last - ox + 1);
                for (size_t t = 0; t < (size_t)p->ks; t++) {
                    steps[t] = a[t] == j->zero ? 0 : step;
                    a[t] = (const uint8_t *)a[t] + steps[t];
                }
                size_t at = ((size_t)row * p->ow + (size_t)ox) * c;
                j->arch->row(c, (size_t)p->ks, a, steps, count, j->w, j->y + at, j->flip, &j->ep);
                ox = last; /* the next pixels rebuild their taps */
                continue;
            }
            if (ox > ox_lo && ox <= ox_hi) {
                for (int64_t ky = 0; ky < p->kh; ky++) {
                    int64_t iy = oy * p->sh - p->pt + ky * p->dh;
                    if (iy < 0 || iy >= p->ih) continue;
                    for (int64_t kx = 0; kx < p->kw; kx++)
                        a[ky * p->kw + kx] = (const uint8_t *)a[ky * p->kw + kx] + step;
                }
                size_t at = ((size_t)row * p->ow + (size_t)ox) * c;
                j->arch->ukernel(c, (size_t)p->ks, a, j->w, j->y + at, j->flip, j->zp, &j->ep);
                if (j->fused.kind && !j->arch->fused_in_kernel)
                    j->arch->fused(&j->fused, j->y + at, j->res ? j->res + at : NULL, c);
                continue;
            }
            for (int64_t ky = 0; ky < p->kh; ky++) {
                int64_t iy = oy * p->sh - p->pt + ky * p->dh;
                int row_ok = iy >= 0 && iy < p->ih;
                for (int64_t kx = 0; kx < p->kw; kx++) {
                    int64_t ix = ox * p->sw - p->pl + kx * p->dw;
                    a[ky * p->kw + kx] = (row_ok && ix >= 0 && ix < p->iw)
                                             ? img + (size_t)(iy * p->iw + ix) * c
                                             : j->zero;
                }
            }
            size_t at = ((size_t)row * p->ow + (size_t)ox) * c;
            j->arch->ukernel(c, (size_t)p->ks, a, j->w, j->y + at, j->flip, j->zp, &j->ep);
            if (j->fused.kind && !j->arch->fused_in_kernel)
                j->arch->fused(&j->fused, j->y + at, j->res ? j->res + at : NULL, c);
        }
    }
}

ks_status ks__q8_dw_run(ks__kernel_ctx *ctx, const ks__q8_dw_arch *arch) {
    qproblem p;
    if (describe_dw(ctx, &p, arch->fused != NULL))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 dwconv cannot run this node");
    uint32_t threads = ks__pool_threads(ctx->pool);
    size_t per_thread = dw_per_thread(&p);
    if (!ctx->packed || !ctx->scratch || ctx->scratch_bytes < per_thread * threads)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL,
                                "q8 dwconv: packed/scratch buffers missing or planned for fewer "
                                "than %u threads",
                                threads);
    qdw_job j;
    memset(&j, 0, sizeof(j));
    j.p = &p;
    j.arch = arch;
    j.x = (const uint8_t *)p.x->data;
    j.zero = (const uint8_t *)ctx->packed;
    j.w = (const char *)ctx->packed + dw_zero_bytes(&p);
    j.y = (uint8_t *)p.y->data;
    j.thread_mem = (char *)ctx->scratch;
    j.per_thread = per_thread;
    j.flip = p.x->dtype == KS_DTYPE_I8 ? 0x80 : 0;
    j.zp = p.x->quant->zero_points[0] + (p.x->dtype == KS_DTYPE_I8 ? 128 : 0);
    make_epilogue(&p, &j.ep);
    ks__q8_make_fused(&p.f, p.y, &j.fused);
    j.res = p.f.res ? (const uint8_t *)p.f.res->data : NULL;
    if (j.fused.kind && arch->fused_in_kernel)
        j.ep.fused = &j.fused, j.ep.y_base = j.y, j.ep.res_base = j.res;
    ks__parallel_for(ctx->pool, (size_t)(p.y->dims[0] * p.oh), 1, dw_range, &j);
    return KS_STATUS_OK;
}
