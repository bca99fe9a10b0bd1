/* Small-channel quantized CONV2D driver (q8_smallc.h): node checks, weight packing with the
 * zero-point folding and per-lane requantization constants, the input copy (padded or
 * pair-interleaved) and the row loop. Portable C; the ISA files supply the microkernels. The
 * node checks, the multiplier rule and the fused-node description are the shared ones of
 * q8_common.h, so they derive exactly the GEMM's constants.
 */
#include "q8_smallc.h"

#include <math.h>
#include <string.h>

#include "q8_common.h"
#include "ref/quant_util.h"

#define MAX_WIDE_CH 32 /* two vectors of 16 channels */
#define PAIR_CH 8
#define SLACK_BYTES 64  /* read past the last window by the last group of a kernel row */
#define PAIR_CHUNK 2048 /* output pixels per PAIR work item */

typedef struct scproblem {
    int mode;
    int64_t n, ih, iw, ic, oh, ow, oc, kh, kw, sh, sw, pt, pl;
    int64_t hp, wp; /* WIDE: padded input rows / columns per image */
    int64_t groups; /* 4-byte groups per kernel row (WIDE) or per pixel (PAIR) */
    int64_t npix;   /* output pixels */
    int64_t lanes;  /* header / weight lanes: 16, or 32 for WIDE with more than 16 channels */
    int direct;     /* WIDE reading the input itself (pointwise, Cin % 4 == 0) */
    const ks__rt_tensor *x, *w, *bias, *y;
    int legacy;
    ks__q8_fused_desc f; /* what the kernel requantizes to, and the fused part */
} scproblem;

/* Input zero point as u8 (I8 inputs are flipped by +128). */
static int32_t xzp_shifted(const scproblem *p) {
    return p->x->quant->zero_points[0] + (p->x->dtype == KS_DTYPE_I8 ? 128 : 0);
}

/* Weight zero point of channel c in s8 terms (U8 weights are shifted by -128). */
static int32_t wzp_shifted(const scproblem *p, int64_t c) {
    return ks__q8_wzp(p->w, c) - (p->w->dtype == KS_DTYPE_U8 ? 128 : 0);
}

/* The checks of every quantized variant (ks__q8_check_common), plus: input and output of one
 * dtype, and all shifted weight zero points 0 (no per-pixel row sums here). */
static int check_quant(scproblem *p, int64_t depth) {
    if (ks__q8_check_common(p->x, p->w, p->y, p->bias, p->f.act, p->oc, depth) ||
        p->x->dtype != p->y->dtype)
        return -1;
    for (int64_t c = 0; c < p->oc; c++)
        if (wzp_shifted(p, c) != 0) return -1;
    if (!p->f.fused) p->f.ys = p->y->quant->scales[0], p->f.yzp = p->y->quant->zero_points[0];
    return 0;
}

static int describe(const ks__kernel_ctx *ctx, scproblem *p) {
    memset(p, 0, sizeof(*p));
    if (ctx->node->op != KS_OP_CONV2D || ctx->num_outputs != 1 || ctx->num_inputs < 2) return -1;
    const ks__rt_tensor *x = ks__q8_input(ctx, 0), *w = ks__q8_input(ctx, 1), *y = ctx->out[0];
    const int32_t *ip = ctx->node->ip;
    if (!x || !w || !y || x->rank != 4 || w->rank != 4 || y->rank != 4) return -1;
    p->x = x, p->w = w, p->y = y, p->bias = ks__q8_input(ctx, 2);
    if (ks__q8_describe_fused(ctx, y, 1, &p->f)) return -1;
    if (ks__q8_one_if_zero(ip[9]) != 1 || ks__q8_one_if_zero(ip[2]) != 1 ||
        ks__q8_one_if_zero(ip[3]) != 1)
        return -1;
    if (ip[8] < KS_PAD_EXPLICIT || ip[8] > KS_PAD_VALID) return -1;
    p->n = x->dims[0], p->ih = x->dims[1], p->iw = x->dims[2], p->ic = x->dims[3];
    p->oc = w->dims[0], p->kh = w->dims[1], p->kw = w->dims[2];
    p->oh = y->dims[1], p->ow = y->dims[2];
    if (p->n < 1 || p->ih < 1 || p->iw < 1 || p->ic < 1 || p->oc < 1 || p->oc > MAX_WIDE_CH ||
        p->kh < 1 || p->kw < 1 || p->oh < 1 || p->ow < 1 || w->dims[3] != p->ic ||
        y->dims[3] != p->oc || y->dims[0] != p->n)
        return -1;
    /* keeps every size below far from overflow; larger maps are the GEMM's */
    if (p->ih > 65536 || p->iw > 65536 || p->ic > 4096 || p->kh > 64 || p->kw > 64 ||
        p->oh > 65536 || p->ow > 65536 || p->n > 65536)
        return -1;
    /* small-channel convs have short reductions; the cap also bounds the packed weights (16
     * lanes per output channel) to under 300 KiB */
    if (p->kh * p->kw * p->ic > 8192) return -1;
    p->sh = ks__q8_one_if_zero(ip[0]), p->sw = ks__q8_one_if_zero(ip[1]);
    if (p->sh < 1 || p->sw < 1 || p->sh > 64 || p->sw > 64) return -1;
    p->pt = ks__q8_lead_pad(ip[8], ip[4], p->ih, p->oh, p->kh, p->sh);
    p->pl = ks__q8_lead_pad(ip[8], ip[5], p->iw, p->ow, p->kw, p->sw);
    if (p->pt < 0 || p->pl < 0 || p->pt > 64 || p->pl > 64) return -1;
    p->npix = p->n * p->oh * p->ow;
    p->legacy = x->dtype == KS_DTYPE_U8;
    const int pointwise = p->kh == 1 && p->kw == 1 && p->sh == 1 && p->sw == 1 && p->pt == 0 &&
                          p->pl == 0 && p->oh == p->ih && p->ow == p->iw;
    if (p->oc <= PAIR_CH && pointwise) {
        p->mode = KS_Q8SC_PAIR;
        p->groups = (p->ic + 3) / 4;
        p->lanes = 16;
    } else {
        p->mode = KS_Q8SC_WIDE;
        p->groups = (p->kw * p->ic + 3) / 4;
        p->hp = (p->oh - 1) * p->sh + p->kh;
        p->wp = (p->ow - 1) * p->sw + p->kw;
        p->direct = pointwise && p->ic % 4 == 0;
        p->lanes = p->oc > 16 ? 32 : 16;
    }
    if ((double)p->n * (double)(p->hp + p->ih) * (double)(p->wp + p->iw) * (double)p->ic >
        (double)((uint64_t)1 << 40))
        return -1;
    return check_quant(p, p->kh * p->kw * p->ic);
}

static size_t round_up(size_t v, size_t a) {
    return (v + a - 1) / a * a;
}

static size_t weight_bytes(const scproblem *p) {
    return (size_t)(p->kh * p->groups) * (size_t)p->lanes * 4;
}

/* Residual-fused nodes: y as a function of the intermediate byte and the residual byte,
 * 256 x 256 bytes (+ slack for 4-byte gathers), after the weights. */
#define ADD_TABLE_BYTES (256 * 256 + 64)

static size_t table_offset(const scproblem *p) {
    return round_up(KS_Q8SC_HDR_ROWS * (size_t)p->lanes * sizeof(int32_t) + weight_bytes(p), 64);
}

/* The ADD's input terms as byte planes instead (q8_smallc.h): 2 inputs x 4 planes x 256. */
#define ADD_PLANES_BYTES (2 * 4 * 256)

static int uses_planes(const scproblem *p, const ks__q8sc_arch *arch) {
    return arch->pair8_planes && p->mode == KS_Q8SC_PAIR && p->oc == PAIR_CH &&
           p->f.fused == KS_Q8_FUSED_RESIDUAL && (ks__cpu_isa() & KS_ISA_AVX512_VBMI) != 0;
}

static size_t packed_size(const scproblem *p, const ks__q8sc_arch *arch) {
    if (p->f.fused != KS_Q8_FUSED_RESIDUAL) return table_offset(p);
    return table_offset(p) + (uses_planes(p, arch) ? ADD_PLANES_BYTES : ADD_TABLE_BYTES);
}

/* add_planes nodes whose pair() reads the input itself. */
static int uses_planar(const scproblem *p, const ks__q8sc_arch *arch) {
    return uses_planes(p, arch) && (p->ic == 4 || p->ic == 8);
}

static size_t input_bytes(const scproblem *p, const ks__q8sc_arch *arch) {
    if (p->direct || uses_planar(p, arch)) return 0;
    if (p->mode == KS_Q8SC_PAIR)
        return round_up((size_t)((p->npix + 1) / 2 * p->groups) * 8 + SLACK_BYTES, 64);
    return round_up((size_t)(p->n * p->hp * p->wp * p->ic) + SLACK_BYTES, 64);
}

double ks__q8sc_cost(const ks__kernel_ctx *ctx, const ks__q8sc_arch *arch) {
    scproblem p;
    if (describe(ctx, &p)) return -1.0;
    if (p.mode == KS_Q8SC_PAIR && !arch->pair) return -1.0;
    if (p.mode == KS_Q8SC_WIDE && !arch->wide) return -1.0;
    /* Above 16 channels the 8 x 32 GEMM fills its lanes too; this kernel only wins where the
     * GEMM's per-tap work dominates: spatial kernels over few input channels (stems). Measured
     * on 1x1 convs with 24 / 32 outputs: equal or slower. */
    if (p.oc > 16 && (p.kh * p.kw == 1 || p.ic >= 16)) return -1.0;
    /* In the units of the q8 GEMM's cost (ks__q8_gemm_cost: one unit per 16-lane vpdpbusd,
     * which that kernel reaches only on deep reductions): the dot products, ~6 units of
     * requantization per vector and the input copy, scaled by the GEMM's measured efficiency
     * (~0.45 of its claimed rate at best, measured on Zen 4). Fused epilogues are left out as
     * the GEMM leaves them out: both variants pay them, this one no more than the GEMM.
     * Measured (Zen 4, 1 thread, YOLOX-nano and BlazePose): 1.1x (fused residual ADD through
     * the byte-pair table; the 8 -> 8 in-register form of q8_smallc.h is another 1.9x) to 3x
     * (3x3 stride-2 stem over 3 channels) faster than the GEMM on every node it wins. */
    double vectors = p.mode == KS_Q8SC_PAIR ? (double)((p.npix + 1) / 2)
                                            : (double)p.npix * (double)(p.lanes / 16);
    double dp = vectors * (double)(p.kh * p.groups) / arch->dp_per_cycle;
    double copy = (double)input_bytes(&p, arch) / 16.0;
    return 0.45 * (dp + 6.0 * vectors + copy);
}

ks_status ks__q8sc_plan(ks__kernel_ctx *ctx, const ks__q8sc_arch *arch, size_t *packed_bytes_out) {
    scproblem p;
    if (describe(ctx, &p))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 smallc cannot run this node");
    size_t scratch = input_bytes(&p, arch);
    if (scratch > ctx->scratch_bytes) ctx->scratch_bytes = scratch;
    *packed_bytes_out = packed_size(&p, arch);
    return KS_STATUS_OK;
}

/* Lane l of the header / weight vectors holds output channel lane_channel(l), or -1. */
static int64_t lane_channel(const scproblem *p, size_t lane, int interleaved) {
    int64_t c = p->mode == KS_Q8SC_PAIR ? (int64_t)(interleaved ? lane / 2 : lane % PAIR_CH)
                                        : (int64_t)lane;
    return c < p->oc ? c : -1;
}

/* The quantized ADD of every (intermediate, residual) byte pair, computed exactly as
 * ks__q8_fused_add_one does (each input's rescaled term only depends on its own byte), indexed
 * by the raw bytes: table[t_byte * 256 + r_byte]. One gather then replaces three vector
 * requantizations per output. */
static void build_add_table(const ks__q8_fused *f, uint8_t *table) {
    int32_t ta[256], tb[256];
    for (int32_t v = 0; v < 256; v++) { /* v: the byte as u8 (flipped for I8) */
        ta[v] = ks__quant_mul((v - f->za) * (1 << 20), f->ma, f->sha);
        tb[v] = ks__quant_mul((v - f->zb) * (1 << 20), f->mb, f->shb);
    }
    for (int32_t a = 0; a < 256; a++)
        for (int32_t b = 0; b < 256; b++) {
            int32_t q = ks__quant_mul(ta[a] + tb[b], f->mo, f->sho) + f->zo;
            q = q < f->lo ? f->lo : (q > f->hi ? f->hi : q);
            /* raw bytes: flipped value v ^ flip is the stored byte */
            table[(size_t)((a ^ f->flip) * 256 + (b ^ f->flip))] = (uint8_t)q;
        }
    memset(table + 256 * 256, 0, ADD_TABLE_BYTES - 256 * 256);
}

/* The ADD's rescaled input terms (the first two ks__quant_mul of ks__q8_fused_add_one) by raw
 * byte, plus 2^29 each (wrapping), as byte planes: planes[(input * 4 + byte) * 256 + raw]. */
static void build_add_planes(const ks__q8_fused *f, uint8_t *planes) {
    for (int32_t raw = 0; raw < 256; raw++) {
        int32_t v = raw ^ f->flip; /* the byte as u8 (flipped for I8) */
        uint32_t t[2] = {(uint32_t)ks__quant_mul((v - f->za) * (1 << 20), f->ma, f->sha),
                         (uint32_t)ks__quant_mul((v - f->zb) * (1 << 20), f->mb, f->shb)};
        t[0] += 1u << 29, t[1] += 1u << 29;
        for (int in = 0; in < 2; in++)
            for (int b = 0; b < 4; b++)
                planes[(in * 4 + b) * 256 + raw] = (uint8_t)(t[in] >> (8 * b));
    }
}

ks_status ks__q8sc_pack(ks__kernel_ctx *ctx, const ks__q8sc_arch *arch) {
    scproblem p;
    if (describe(ctx, &p))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 smallc cannot run this node");
    if (!ctx->packed || ctx->packed_bytes < packed_size(&p, arch))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 smallc: packed buffer too small");
    memset(ctx->packed, 0, packed_size(&p, arch));
    int32_t *hdr = (int32_t *)ctx->packed;
    const size_t lanes = (size_t)p.lanes;
    int8_t *wp = (int8_t *)(hdr + KS_Q8SC_HDR_ROWS * lanes);
    const int32_t *bias = p.bias ? (const int32_t *)p.bias->data : NULL;
    const int32_t wshift = p.w->dtype == KS_DTYPE_U8 ? 128 : 0;
    const int64_t span = p.mode == KS_Q8SC_PAIR ? p.ic : p.kw * p.ic;
    /* weights: [kernel row][group][lane][4 bytes]; bytes past the row's taps stay 0 */
    for (int64_t ky = 0; ky < p.kh; ky++)
        for (int64_t k = 0; k < span; k++)
            for (size_t lane = 0; lane < lanes; lane++) {
                int64_t c = lane_channel(&p, lane, 1);
                if (c < 0) continue;
                int32_t v = ks__q8_load(p.w, ((c * p.kh + ky) * p.kw) * p.ic + k) - wshift;
                size_t at =
                    (((size_t)(ky * p.groups + k / 4)) * lanes + lane) * 4 + (size_t)(k % 4);
                wp[at] = (int8_t)v;
            }
    int32_t xzp = xzp_shifted(&p);
    for (size_t lane = 0; lane < lanes; lane++) {
        int64_t c = lane_channel(&p, lane, 0);
        if (c < 0) continue;
        int64_t wsum = 0;
        for (int64_t i = 0; i < p.kh * p.kw * p.ic; i++)
            wsum += ks__q8_load(p.w, c * p.kh * p.kw * p.ic + i) - wshift;
        int64_t start = (int64_t)(bias ? bias[c] : 0) - (int64_t)xzp * wsum;
        hdr[KS_Q8SC_HDR_START * lanes + lane] = (int32_t)(uint32_t)(uint64_t)start;
        int32_t mult, left, right;
        ks__q8_channel_multiplier(p.x->quant->scales[0],
                                  p.w->quant->scales[p.w->quant->count == 1 ? 0 : c], p.f.ys,
                                  p.legacy, &mult, &left, &right);
        hdr[KS_Q8SC_HDR_MULT * lanes + lane] = mult;
        hdr[KS_Q8SC_HDR_LSHIFT * lanes + lane] = left;
        hdr[KS_Q8SC_HDR_RSHIFT * lanes + lane] = right;
        hdr[KS_Q8SC_HDR_RMASK * lanes + lane] = (int32_t)((1LL << right) - 1);
    }
    if (p.f.fused == KS_Q8_FUSED_RESIDUAL) {
        ks__q8_fused f;
        ks__q8_make_fused(&p.f, p.y, &f);
        if (uses_planes(&p, arch))
            build_add_planes(&f, (uint8_t *)ctx->packed + table_offset(&p));
        else
            build_add_table(&f, (uint8_t *)ctx->packed + table_offset(&p));
    }
    return KS_STATUS_OK;
}

/* |2^(right - 1) + zp * 2^right| < 2^30: the rounding shift's addend with the zero point. */
static int fold_ok(int32_t right, int32_t zp) {
    int64_t c = ((int64_t)1 << (right - 1)) + (int64_t)zp * ((int64_t)1 << right);
    return c > -(1 << 30) && c < (1 << 30);
}

/* ks__q8sc_args.short_requant for an add_planes node (PAIR, 8 channels: header lane c and
 * weight lanes 2c, 2c + 1 are channel c). */
static int32_t short_requant_ok(const ks__q8sc_args *a, const ks__q8_fused *f) {
    const int8_t *w = (const int8_t *)(a->hdr + KS_Q8SC_HDR_ROWS * a->lanes);
    for (size_t c = 0; c < PAIR_CH; c++) {
        /* |acc + start| over every u8 input */
        int64_t bound = a->hdr[KS_Q8SC_HDR_START * a->lanes + c];
        bound = bound < 0 ? -bound : bound;
        for (size_t k = 0; k < a->groups * 4; k++) {
            int64_t v = w[(k / 4 * a->lanes + 2 * c) * 4 + k % 4];
            bound += 255 * (v < 0 ? -v : v);
        }
        const int32_t right = a->hdr[KS_Q8SC_HDR_RSHIFT * a->lanes + c];
        if (bound >= (1 << 30) || a->hdr[KS_Q8SC_HDR_LSHIFT * a->lanes + c] != 0 || right < 1 ||
            right > 30 || !fold_ok(right, a->out_zp))
            return 0;
    }
    if (f->vq[2][1] != 0 || f->vq[2][2] < 1 || f->vq[2][2] > 30 || !fold_ok(f->vq[2][2], f->zo))
        return 0;
    int64_t max_term[2] = {0, 0};
    for (int in = 0; in < 2; in++)
        for (int raw = 0; raw < 256; raw++) {
            uint32_t t = 0;
            for (int b = 0; b < 4; b++)
                t |= (uint32_t)a->add_planes[(in * 4 + b) * 256 + raw] << (8 * b);
            int64_t v = (int64_t)(int32_t)(t - (1u << 29));
            v = v < 0 ? -v : v;
            if (v > max_term[in]) max_term[in] = v;
        }
    return max_term[0] + max_term[1] < (1 << 30);
}

typedef struct scjob {
    const scproblem *p;
    const ks__q8sc_arch *arch;
    const uint8_t *x;
    uint8_t *buf, *y;   /* buf: the input copy */
    const uint8_t *img; /* what the kernels read: buf, or x itself */
    const uint8_t *res;
    uint8_t flip, pad;
    ks__q8sc_args args;
} scjob;

/* WIDE input copy: padded rows [begin, end) of all images (row = b * hp + prow). */
static void copy_wide(void *arg, size_t begin, size_t end, uint32_t thread) {
    const scjob *j = (const scjob *)arg;
    const scproblem *p = j->p;
    const size_t ic = (size_t)p->ic, row_bytes = (size_t)p->wp * ic;
    (void)thread;
    for (size_t r = begin; r < end; r++) {
        int64_t b = (int64_t)r / p->hp, iy = (int64_t)r % p->hp - p->pt;
        uint8_t *dst = j->buf + r * row_bytes;
        if (iy < 0 || iy >= p->ih) {
            memset(dst, j->pad, row_bytes);
            continue;
        }
        int64_t left = p->pl < p->wp ? p->pl : p->wp;
        int64_t cols = p->wp - left < p->iw ? p->wp - left : p->iw;
        memset(dst, j->pad, (size_t)left * ic);
        const uint8_t *src = j->x + (size_t)((b * p->ih + iy) * p->iw) * ic;
        uint8_t *d = dst + (size_t)left * ic;
        const uint8_t flip = j->flip;
        for (size_t i = 0; i < (size_t)cols * ic; i++)
            d[i] = (uint8_t)(src[i] ^ flip);
        memset(d + (size_t)cols * ic, j->pad, (size_t)(p->wp - left - cols) * ic);
    }
}

/* PAIR input copy: pixel pairs [begin, end) as [pair][group][pixel 0 dword, pixel 1 dword]. */
static void copy_pair(void *arg, size_t begin, size_t end, uint32_t thread) {
    const scjob *j = (const scjob *)arg;
    const scproblem *p = j->p;
    const size_t ic = (size_t)p->ic, g = (size_t)p->groups;
    (void)thread;
    if (j->arch->pair_copy) {
        j->arch->pair_copy(j->x, (size_t)p->npix, ic, g, j->flip, begin, end, j->buf);
        return;
    }
    if (ic % 4 == 0) {
        const uint32_t flip = j->flip * 0x01010101u;
        for (size_t q = begin; q < end; q++) {
            uint32_t *d = (uint32_t *)(j->buf + q * g * 8);
            size_t p0 = 2 * q;
            const uint8_t *s0 = j->x + p0 * ic;
            const uint8_t *s1 = p0 + 1 < (size_t)p->npix ? s0 + ic : s0;
            for (size_t k = 0; k < g; k++) {
                uint32_t a, b;
                memcpy(&a, s0 + 4 * k, 4);
                memcpy(&b, s1 + 4 * k, 4);
                d[2 * k] = a ^ flip;
                d[2 * k + 1] = b ^ flip;
            }
        }
        return;
    }
    for (size_t q = begin; q < end; q++) {
        uint8_t *d = j->buf + q * g * 8;
        for (size_t h = 0; h < 2; h++) {
            size_t px = 2 * q + h < (size_t)p->npix ? 2 * q + h : 2 * q;
            const uint8_t *s = j->x + px * ic;
            for (size_t k = 0; k < g * 4; k++)
                d[(k / 4) * 8 + h * 4 + k % 4] = k < ic ? (uint8_t)(s[k] ^ j->flip) : j->pad;
        }
    }
}

static void run_wide(void *arg, size_t begin, size_t end, uint32_t thread) {
    const scjob *j = (const scjob *)arg;
    const scproblem *p = j->p;
    const size_t row_bytes = (size_t)p->wp * (size_t)p->ic, oc = (size_t)p->oc;
    (void)thread;
    for (size_t r = begin; r < end; r++) { /* r = b * oh + oy */
        size_t b = r / (size_t)p->oh, oy = r % (size_t)p->oh;
        const uint8_t *in = j->img + (b * (size_t)p->hp + oy * (size_t)p->sh) * row_bytes;
        size_t at = r * (size_t)p->ow * oc;
        j->arch->wide(&j->args, in, (size_t)p->ow, j->y + at, j->res ? j->res + at : NULL);
    }
}

static void run_pair(void *arg, size_t begin, size_t end, uint32_t thread) {
    const scjob *j = (const scjob *)arg;
    const scproblem *p = j->p;
    const size_t oc = (size_t)p->oc, g = (size_t)p->groups;
    (void)thread;
    for (size_t i = begin; i < end; i++) {
        size_t p0 = i * PAIR_CHUNK;
        size_t count = (size_t)p->npix - p0 < PAIR_CHUNK ? (size_t)p->npix - p0 : PAIR_CHUNK;
        size_t at = p0 * oc;
        j->arch->pair(&j->args, j->img + p0 / 2 * g * 8, count, j->y + at,
                      j->res ? j->res + at : NULL);
    }
}

ks_status ks__q8sc_run(ks__kernel_ctx *ctx, const ks__q8sc_arch *arch) {
    scproblem p;
    if (describe(ctx, &p))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 smallc cannot run this node");
    if (!ctx->packed || ctx->packed_bytes < packed_size(&p, arch) ||
        (input_bytes(&p, arch) && (!ctx->scratch || ctx->scratch_bytes < input_bytes(&p, arch))))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL,
                                "q8 smallc: packed/scratch buffers missing or too small");
    scjob j;
    memset(&j, 0, sizeof(j));
    j.p = &p;
    j.arch = arch;
    j.x = (const uint8_t *)p.x->data;
    j.buf = (uint8_t *)ctx->scratch;
    j.img = j.buf;
    j.y = (uint8_t *)p.y->data;
    j.res = p.f.res ? (const uint8_t *)p.f.res->data : NULL;
    j.flip = p.x->dtype == KS_DTYPE_I8 ? 0x80 : 0;
    j.pad = (uint8_t)xzp_shifted(&p);
    ks__q8_fused fused;
    ks__q8_make_fused(&p.f, p.y, &fused);
    ks__q8sc_args *a = &j.args;
    a->mode = p.mode;
    a->oc = (size_t)p.oc;
    a->kh = (size_t)p.kh;
    a->groups = (size_t)p.groups;
    a->sx = (size_t)(p.sw * p.ic);
    a->row_bytes = (size_t)(p.wp * p.ic);
    if (p.direct) {
        j.img = j.x;
        a->flip = j.flip ? 0x80808080u : 0;
    }
    a->hdr = (const int32_t *)ctx->packed;
    a->out_zp = p.f.yzp;
    ks__quant_act_range(p.f.act, p.f.ys, p.f.yzp, p.y->dtype, &a->lo, &a->hi);
    a->lanes = (size_t)p.lanes;
    for (size_t l = 0; l < a->lanes; l++)
        a->any_lshift |= a->hdr[KS_Q8SC_HDR_LSHIFT * a->lanes + l] != 0;
    a->fused = p.f.fused ? &fused : NULL;
    if (p.f.fused == KS_Q8_FUSED_RESIDUAL && uses_planes(&p, arch))
        a->add_planes = (const uint8_t *)ctx->packed + table_offset(&p);
    else if (p.f.fused == KS_Q8_FUSED_RESIDUAL)
        a->add_table = (const uint8_t *)ctx->packed + table_offset(&p);
    if (a->add_planes) a->short_requant = short_requant_ok(a, &fused);
    if (uses_planar(&p, arch)) {
        a->planar = 1;
        j.img = j.x;
    }
    if (p.mode == KS_Q8SC_PAIR) {
        if (!a->planar) ks__parallel_for(ctx->pool, (size_t)(p.npix + 1) / 2, 256, copy_pair, &j);
        size_t chunks = ((size_t)p.npix + PAIR_CHUNK - 1) / PAIR_CHUNK;
        ks__parallel_for(ctx->pool, chunks, 1, run_pair, &j);
    } else {
        if (!p.direct) ks__parallel_for(ctx->pool, (size_t)(p.n * p.hp), 4, copy_wide, &j);
        ks__parallel_for(ctx->pool, (size_t)(p.n * p.oh), 1, run_wide, &j);
    }
    return KS_STATUS_OK;
}
