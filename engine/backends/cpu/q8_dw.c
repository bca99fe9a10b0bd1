/* Row-wise quantized depthwise CONV2D driver (q8_dw.h): node checks, weight and requantization
 * constant packing, padded phase rows, the per-row interleave and threading over output rows.
 * Portable C; the ISA files supply the interleave and row microkernels.
 *
 * Exactness: the kernels' int32 sums are congruent mod 2^32 to the reference's exact sum, and
 * cost() refuses nodes whose exact sum may leave int32 (where the reference saturates), so the
 * wrapped value is the reference's accumulator. The requantization constants use the reference's
 * multiplier rule (ks__q8_channel_multiplier, q8_common.h).
 *
 * Outlier channels: the kernels take w - w_zp as an s8 ([-127, 127] with signed x). TFLite's
 * per-tensor asymmetric uint8 weights put one to five weights of a layer beyond that (MobileNetV2
 * uint8: 50 of its 52 convolutions, e.g. [-164, 90] with w_zp 165), which used to send the whole
 * layer to the per-pixel kernel. Up to KS_Q8DW_FIX_MAX such channels are now packed with clamped
 * weights and their outputs recomputed exactly after each kernel call (fix_rows: the reference's
 * sum and requantization, scalar), as long as cost() still finds the layer cheaper this way.
 */
#include "q8_dw.h"
#include "q8_lut.h"

#include <math.h>
#include <string.h>

#include "q8_common.h"
#include "ref/quant_util.h"

/* The quad mode (dwp.quad) from this kernel height and output height on: for 3x3 the second
 * group that half the rows then read costs more than the shared interleave saves (~8 % slower
 * on BlazePose's 3x3 stride-2 layers, measured); 5x5 gains ~30 % at 32 rows, ~5 % at 8. */
#define KS_Q8DW_QUAD_MIN_KH 5
#define KS_Q8DW_QUAD_MIN_OH 4
/* Most channels whose weights leave the kernels' s8 range that a node may have (recomputed by
 * fix_rows; listed in the packed header). */
#define KS_Q8DW_FIX_MAX 48

typedef struct dwp {
    int64_t n, ih, iw, c, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
    int64_t groups_h; /* ceil(kh / 4): interleaved row groups */
    int64_t pm;       /* pixels per phase row */
    int64_t patterns; /* P = C / gcd(C, block bytes) */
    int64_t rows;     /* output rows per kernel call at most: 1, 2 or 4 (q8_dw.h; quad: 2) */
    int64_t sets;     /* weight sets per pattern: rows, or 4 in the quad mode */
    /* Quad mode (vertical stride 2): the row groups are the input rows 4t..4t+3 (absolute t),
     * interleaved once and kept for every output row that reads them (3 rows for 5x5), and an
     * output row whose window starts o rows into its first quad uses weight set o; a row with
     * o <= 1 runs with the next one (set o + 2, same quads) in one call, sharing the loads.
     * Without it a stride-2 row re-interleaves its whole window, twice the rows it reads. */
    int64_t quad;
    int64_t bb; /* the arch's flat block bytes */
    const ks__rt_tensor *x, *w, *bias, *y;
    const ks__rt_tensor *table; /* fused TABLE form: the output lookup, else NULL */
    float ys;                   /* what the kernel requantizes to: y's params or the */
    int32_t yzp;                /* intermediate's (fp[1], ip[11]) for the TABLE form */
    int32_t act;
    int32_t xzp; /* input zero point as the kernels see it (I8 flipped to u8) */
    uint8_t flip;
    int64_t nfix; /* channels with a w - w_zp outside [d_min, 127] (full describe only) */
} dwp;

static size_t round_up(size_t v, size_t a) {
    return (v + a - 1) / a * a;
}

static void channel_multiplier(const dwp *p, int64_t c, int32_t *mult, int32_t *left,
                               int32_t *right) {
    ks__q8_channel_multiplier(p->x->quant->scales[0],
                              p->w->quant->scales[p->w->quant->count == 1 ? 0 : c], p->ys,
                              p->x->dtype == KS_DTYPE_U8, mult, left, right);
}

/* The smallest w - w_zp the arch's dot products take (the largest is 127). */
static int32_t d_min(const ks__q8dw_arch *arch) {
    return (arch->mode & KS_Q8DW_SIGNED_X) ? -127 : -128;
}

/* 1 when some w - w_zp of channel c lies outside [d_min, 127]: the kernels then run it with
 * clamped weights and fix_rows recomputes its outputs. */
static int outlier_channel(const dwp *p, const ks__q8dw_arch *arch, int64_t c) {
    const int64_t ks = p->kh * p->kw;
    const int32_t z = ks__q8_wzp(p->w, c), dmin = d_min(arch);
    for (int64_t t = 0; t < ks; t++) {
        int32_t d = ks__q8_load(p->w, c * ks + t) - z;
        if (d < dmin || d > 127) return 1;
    }
    return 0;
}

/* 0 when the node is a quantized depthwise CONV2D this variant runs exactly. `full` adds the
 * checks that read every weight and derive every multiplier (cost/plan/pack); run, which only
 * follows a successful pack of the same node, skips them. */
static int describe(const ks__kernel_ctx *ctx, const ks__q8dw_arch *arch, dwp *p, int full) {
    memset(p, 0, sizeof(*p));
    const ks__node *node = ctx->node;
    if (node->op != KS_OP_CONV2D || ctx->num_outputs != 1 || ctx->num_inputs < 2) return -1;
    const int32_t *ip = node->ip;
    const ks__rt_tensor *x = ks__q8_input(ctx, 0), *w = ks__q8_input(ctx, 1), *y = ctx->out[0];
    const ks__rt_tensor *b = ks__q8_input(ctx, 2);
    if (!x || !w || !y || x->rank != 4 || w->rank != 4 || y->rank != 4) return -1;
    if (!ks__q8_is_quant(x) || !ks__q8_is_quant(y) || !ks__q8_is_quant(w) || !w->data) return -1;
    p->x = x, p->w = w, p->y = y, p->bias = b;
    if (y->quant->count != 1) return -1;
    /* Fused forms (ip[12] == 1, ops.inc): the output TABLE only (requantize to the intermediate,
     * then look up); the residual form goes to the per-pixel kernel (qgemm.c). */
    ks__q8_fused_desc fd;
    if (ks__q8_describe_fused(ctx, y, 1, &fd) || fd.fused == KS_Q8_FUSED_RESIDUAL) return -1;
    p->act = fd.act, p->ys = fd.ys, p->yzp = fd.yzp, p->table = fd.table;
    p->c = x->dims[3], p->kh = w->dims[1], p->kw = w->dims[2];
    if (p->c < 1 || w->dims[0] != p->c || w->dims[3] != 1 || ks__q8_one_if_zero(ip[9]) != p->c ||
        y->dims[3] != p->c || y->dims[0] != x->dims[0] || p->kh < 1 || p->kw < 1)
        return -1;
    if (ip[8] < KS_PAD_EXPLICIT || ip[8] > KS_PAD_VALID) return -1;
    p->n = x->dims[0], p->ih = x->dims[1], p->iw = x->dims[2];
    p->oh = y->dims[1], p->ow = y->dims[2];
    p->sh = ks__q8_one_if_zero(ip[0]), p->sw = ks__q8_one_if_zero(ip[1]);
    p->dh = ks__q8_one_if_zero(ip[2]), p->dw = ks__q8_one_if_zero(ip[3]);
    if (p->n < 1 || p->ih < 1 || p->iw < 1 || p->oh < 1 || p->ow < 1) return -1;
    if (p->sh < 1 || p->sw < 1 || p->dh < 1 || p->dw < 1 || p->sw > 8) return -1;
    /* keeps every size below comfortably inside size_t and the scratch reasonable */
    if (p->c > (1 << 16) || p->kh > 64 || p->kw > 64 || p->iw > (1 << 16) || p->ow > (1 << 16))
        return -1;
    p->pt = ks__q8_lead_pad(ip[8], ip[4], p->ih, p->oh, (p->kh - 1) * p->dh + 1, p->sh);
    p->pl = ks__q8_lead_pad(ip[8], ip[5], p->iw, p->ow, (p->kw - 1) * p->dw + 1, p->sw);
    if (p->pt < 0 || p->pl < 0) return -1;
    if (p->act != KS_ACT_NONE && p->act != KS_ACT_RELU && p->act != KS_ACT_RELU6 &&
        p->act != KS_ACT_RELU_N1_TO_1)
        return -1;
    if (x->quant->count != 1) return -1;
    if (!(x->quant->scales[0] > 0.0f) || !(y->quant->scales[0] > 0.0f)) return -1;
    if ((int64_t)w->quant->count != 1 && ((int64_t)w->quant->count != p->c || w->quant->axis != 0))
        return -1;
    int32_t xzp = x->quant->zero_points[0], yzp = p->yzp;
    if (xzp < ks__q8_lo(x->dtype) || xzp > ks__q8_hi(x->dtype)) return -1;
    if (yzp < ks__q8_lo(y->dtype) || yzp > ks__q8_hi(y->dtype)) return -1;
    if (b && (b->dtype != KS_DTYPE_I32 || !b->data || ks__rt_numel(b) != p->c)) return -1;
    if (ks__rt_numel(w) != p->c * p->kh * p->kw) return -1;
    /* the kernels take w - w_zp as an s8 (the dot products are u8 x s8; with signed x one that
     * can change sign: [-127, 127]); channels beyond are fixed up (outlier_channel); bound the
     * exact sum as qgemm.c */
    int64_t ks = p->kh * p->kw, wdev = 0;
    for (int64_t c = 0; c < p->c && full; c++) {
        int32_t z = ks__q8_wzp(w, c);
        if (z < ks__q8_lo(w->dtype) || z > ks__q8_hi(w->dtype)) return -1;
        p->nfix += outlier_channel(p, arch, c);
        int64_t dev = ks__q8_max_dev(w->dtype, z);
        if (dev > wdev) wdev = dev;
    }
    if (p->nfix > KS_Q8DW_FIX_MAX) return -1;
    int64_t bmax = 0;
    for (int64_t c = 0; b && full && c < p->c; c++) {
        int64_t v = ((const int32_t *)b->data)[c];
        v = v < 0 ? -v : v;
        if (v > bmax) bmax = v;
    }
    if (full && ks > (INT32_MAX - bmax) / (ks__q8_max_dev(x->dtype, xzp) * wdev + 1)) return -1;
    /* the two-step form adds < 2^30 to h (|h| <= |acc|) in 32 bits and has no left shifts */
    if (full && (arch->mode & KS_Q8DW_TWO_STEP) &&
        ks > ((1 << 30) - 1 - bmax) / (ks__q8_max_dev(x->dtype, xzp) * wdev + 1))
        return -1;
    /* the one-step requantization needs a normalized multiplier (or 0) and keeps its 64-bit
     * addend in range only for right shifts <= 22 (real multipliers >= 2^-23) */
    for (int64_t c = 0; c < p->c && full; c++) {
        int32_t mult, left, right;
        channel_multiplier(p, c, &mult, &left, &right);
        if ((mult != 0 && mult < (1 << 30)) || right > 22) return -1;
        if ((arch->mode & KS_Q8DW_TWO_STEP) && !(arch->mode & KS_Q8DW_LEFT_SHIFT) && left > 0)
            return -1;
    }
    p->flip = x->dtype == KS_DTYPE_I8 ? 0x80 : 0;
    p->xzp = xzp + (p->flip ? 128 : 0);
    p->groups_h = (p->kh + 3) / 4;
    p->rows = 1;
    if (p->sh == 1 && p->dh == 1) /* the largest that keeps the window in the same groups */
        p->rows = p->kh + 3 <= 4 * p->groups_h ? 4 : (p->kh + 1 <= 4 * p->groups_h ? 2 : 1);
    while (p->rows > (int64_t)arch->max_rows && p->rows > 1)
        p->rows /= 2;
    p->sets = p->rows;
    p->quad = p->sh == 2 && p->dh == 1 && p->kh >= KS_Q8DW_QUAD_MIN_KH && p->kh <= 16 &&
              p->oh >= KS_Q8DW_QUAD_MIN_OH && arch->max_rows >= 4;
    if (p->quad) p->groups_h = (p->kh + 6) / 4, p->sets = 4;
    p->pm = p->ow + (p->kw - 1) * p->dw / p->sw;
    p->bb = arch->block_bytes;
    int64_t g = p->c, h = p->bb;
    while (h) {
        int64_t t = g % h;
        g = h, h = t;
    }
    p->patterns = p->c / g;
    /* bounded scratch and packed data (a flat row of 4 MB, 32 MB of patterns): far beyond real
     * depthwise layers, and the per-pixel kernel takes anything bigger */
    int64_t taps = p->groups_h * p->kw;
    int64_t pattern = (taps * p->sets + KS_Q8DW_C_ROWS) * 4 * p->bb;
    if (p->pm * p->c > (1 << 22) || p->patterns * pattern > (1 << 25)) return -1;
    return 0;
}

/* ---- sizes ---- */

static size_t num_taps(const dwp *p) {
    return (size_t)(p->groups_h * p->kw);
}

static size_t cst_offset(const dwp *p) {
    return num_taps(p) * 4 * (size_t)p->bb * (size_t)p->sets;
}

static size_t pattern_bytes(const dwp *p) {
    return cst_offset(p) + KS_Q8DW_C_ROWS * 4 * (size_t)p->bb;
}

/* Padded-row slots per thread: the window of `rows` output rows (quad mode: its quads). */
static size_t num_slots(const dwp *p) {
    return (size_t)(p->quad ? 4 * p->groups_h : p->kh + p->rows - 1);
}

/* Interleaved buffers per thread (each of sw phases): one per group, or in the quad mode one
 * more, so the quads of the next output row can be made without evicting the shared ones. */
static size_t num_ibufs(const dwp *p) {
    return (size_t)(p->groups_h + (p->quad ? 1 : 0));
}

/* Bytes of one phase row (and of the zero-point row): the flat run, rounded to whole blocks. */
static size_t phase_bytes(const dwp *p) {
    return round_up((size_t)(p->pm * p->c), 64); /* 64: a multiple of every block size */
}

/* Bytes of one interleaved buffer: a uint32 per flat position, plus the last block's overrun. */
static size_t ibuf_bytes(const dwp *p) {
    return (phase_bytes(p) + 64) * 4;
}

/* Packed data: a 256-byte header (int32 "some channel shifts left", int32 "float64 form", int32
 * the number of outlier channels, then their indices as int32), the zero-point row, the 256-byte
 * output table (TABLE form; indexed by the raw byte) and its telescoped form (q8_lut.h
 * ks__q8_tscope), then the pattern blocks. */
enum { HDR_BYTES = 256, HDR_NFIX = 8, HDR_FIX = 12 };
_Static_assert(HDR_FIX + 4 * KS_Q8DW_FIX_MAX <= HDR_BYTES, "the outlier list fits the header");

static size_t zero_row_bytes(const dwp *p) {
    return HDR_BYTES + phase_bytes(p) + 512;
}

/* Per thread: row tags, tap pointers, kh padded rows of sw phases, groups_h x sw I buffers. */
static size_t tags_bytes(const dwp *p) {
    return round_up((num_slots(p) + num_ibufs(p)) * sizeof(int64_t) + num_taps(p) * sizeof(void *),
                    64);
}

static size_t per_thread(const dwp *p) {
    return tags_bytes(p) + num_slots(p) * (size_t)p->sw * phase_bytes(p) +
           num_ibufs(p) * (size_t)p->sw * ibuf_bytes(p);
}

double ks__q8dw_cost(const ks__kernel_ctx *ctx, const ks__q8dw_arch *arch) {
    dwp p;
    if (describe(ctx, arch, &p, 1)) return -1.0;
    double rows = (double)(p.n * p.oh);
    double blocks = (double)(((size_t)(p.ow * p.c) + (size_t)p.bb - 1) / (size_t)p.bb);
    /* per output block: 4 dot products per tap, ~55 ops of requantization, packing and store
     * (measured ~47 cycles per 3x3 block on Zen 4 at ~1.8 ops per cycle) */
    double taps = (double)num_taps(&p), groups = (double)p.groups_h / (double)p.rows;
    if (p.quad) { /* the two row parities' quads; each quad serves two output rows */
        int64_t o0 = ((-p.pt) % 4 + 4) % 4, o1 = (o0 + 2) % 4;
        taps = (double)(((o0 + p.kh + 3) / 4 + (o1 + p.kh + 3) / 4) * p.kw) / 2.0;
        groups = 0.5;
    }
    /* signed x (AVX2 without VNNI): per tap and vector vpsignb, vpmaddubsw, vpmaddwd and vpaddd
     * per row of the call, and vpabsb once */
    double dot = (arch->mode & KS_Q8DW_SIGNED_X) ? 4.0 * (4.0 + 1.0 / (double)p.rows) : 4.0;
    double row_ops = blocks * (taps * dot + 55.0);
    /* per row: the interleave (~16 ops per block per group and phase, shared by the rows of a
     * call), the new padded rows (about sh per output row) and a fixed overhead */
    double ib = (double)(phase_bytes(&p) / (size_t)p.bb);
    row_ops += ib * 16.0 * groups * (double)p.sw + ib * 3.0 * (double)p.sh * (double)p.sw + 300.0;
    /* fix_rows: per outlier channel and output pixel, ~4 scalar ops per tap and ~30 to
     * requantize and store */
    row_ops += (double)p.ow * (double)p.nfix * ((double)(p.kh * p.kw) * 4.0 + 30.0);
    return rows * row_ops / arch->ops_per_cycle;
}

ks_status ks__q8dw_plan(ks__kernel_ctx *ctx, const ks__q8dw_arch *arch, size_t *packed_bytes_out) {
    dwp p;
    if (describe(ctx, arch, &p, 1))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 dwrow cannot run this node");
    uint32_t threads = ctx->num_threads ? ctx->num_threads : 1;
    size_t scratch = per_thread(&p) * threads;
    if (scratch > ctx->scratch_bytes) ctx->scratch_bytes = scratch;
    *packed_bytes_out = zero_row_bytes(&p) + (size_t)p.patterns * pattern_bytes(&p);
    return KS_STATUS_OK;
}

/* The exact accumulator range of channel c: the bias plus each tap's (w - w_zp)(x - x_zp) at
 * its extremes (padding reads the zero point, inside the same range). */
static void acc_range(const dwp *p, int64_t c, int64_t *lo, int64_t *hi) {
    const int64_t ks = p->kh * p->kw, xmin = ks__q8_lo(p->x->dtype), xmax = ks__q8_hi(p->x->dtype);
    const int32_t xzp = p->x->quant->zero_points[0], wzp = ks__q8_wzp(p->w, c);
    int64_t a = p->bias ? ((const int32_t *)p->bias->data)[c] : 0, b = a;
    for (int64_t t = 0; t < ks; t++) {
        int64_t d = ks__q8_load(p->w, c * ks + t) - wzp;
        int64_t e0 = d * (xmin - xzp), e1 = d * (xmax - xzp);
        a += e0 < e1 ? e0 : e1;
        b += e0 < e1 ? e1 : e0;
    }
    *lo = a, *hi = b;
}

/* 1 when channel c's left shift (> 0, so its right shift is 0) can be folded into the one-step
 * rounding: x 2^left never wraps int32 (the reference's product then is exact) and 2^left
 * divides the rounding addend. Saves the per-lane variable left shift of the kernel. */
static int fold_left(const dwp *p, const ks__q8dw_arch *arch, int64_t c, int32_t left) {
    if ((arch->mode & KS_Q8DW_TWO_STEP) || left < 1 || left > 30) return 0;
    int64_t lo, hi;
    acc_range(p, c, &lo, &hi);
    const int64_t lim = (int64_t)1 << (31 - left);
    return lo > -lim && hi < lim;
}

/* 1 when the float64 form (q8_dw.h) gives channel c's exact output for every reachable
 * accumulator x: the reference's x 2^left does not wrap (so its result is floor(x A + B - S [x <
 * 0]) + clamp, the one-step rule over 2^(31 + r)); A and B are exact doubles (m has 31 bits, B
 * needs 10 + r); and the exact y has granularity 2^-(31 + r) >= 2^-44 = the ulp of [256, 512),
 * so every |y| < 512 is representable and the FMA's one rounding leaves it unchanged; beyond,
 * rounding is monotonic and 512 representable, so floor(fl(y)) stays beyond every 8-bit clamp
 * bound, on the same side. The conversion needs |y| < 2^31. */
static int fp64_exact(const dwp *p, const ks__q8dw_arch *arch, int64_t c) {
    if (arch->mode & KS_Q8DW_TWO_STEP) return 0;
    int32_t mult, left, right;
    channel_multiplier(p, c, &mult, &left, &right);
    if (right > 13 || left > 30) return 0;
    int64_t lo, hi;
    acc_range(p, c, &lo, &hi);
    int64_t amax = -lo > hi ? -lo : hi;
    if (left > 0 && amax >= ((int64_t)1 << (31 - left))) return 0;
    double ymax = ldexp((double)amax * (double)mult, left - 31 - right) + 512.0;
    return ymax < 2147483648.0 / 2;
}

ks_status ks__q8dw_pack(ks__kernel_ctx *ctx, const ks__q8dw_arch *arch) {
    dwp p;
    if (describe(ctx, arch, &p, 1))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 dwrow cannot run this node");
    size_t zb = zero_row_bytes(&p), pb = pattern_bytes(&p), taps = num_taps(&p);
    if (!ctx->packed || ctx->packed_bytes < zb + (size_t)p.patterns * pb)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 dwrow: packed buffer too small");
    uint8_t *base = (uint8_t *)ctx->packed;
    memset(base, 0, HDR_BYTES);
    memset(base + HDR_BYTES, p.xzp, zb - 512 - HDR_BYTES);
    uint8_t *table = base + zb - 512;
    int32_t any_left = 0;
    for (int64_t c = 0; c < p.c; c++) {
        int32_t mult, left, right;
        channel_multiplier(&p, c, &mult, &left, &right);
        any_left |= left > 0 && !fold_left(&p, arch, c, left);
    }
    memcpy(base, &any_left, sizeof(any_left));
    int32_t fp64 = 1;
    for (int64_t c = 0; c < p.c && fp64; c++)
        fp64 = fp64_exact(&p, arch, c);
    memcpy(base + 4, &fp64, sizeof(fp64));
    int32_t nfix = 0;
    for (int64_t c = 0; c < p.c; c++) {
        if (!outlier_channel(&p, arch, c)) continue;
        int32_t ci = (int32_t)c;
        memcpy(base + HDR_FIX + 4 * (size_t)nfix++, &ci, sizeof(ci));
    }
    memcpy(base + HDR_NFIX, &nfix, sizeof(nfix));
    const int32_t dmin = d_min(arch);
    for (int i = 0; i < 256; i++) /* the reference indexes by value + 128 for I8 */
        table[i] =
            p.table ? ((const uint8_t *)p.table->data)[i ^ (p.y->dtype == KS_DTYPE_I8 ? 0x80 : 0)]
                    : (uint8_t)i;
    ks__q8_tscope(table, table + 256);
    const int32_t *bias = p.bias ? (const int32_t *)p.bias->data : NULL;
    int64_t ks = p.kh * p.kw;
    int32_t yzp = p.yzp;
    for (int64_t pat = 0; pat < p.patterns; pat++) {
        uint8_t *blk = base + zb + (size_t)pat * pb;
        memset(blk, 0, pb);
        uint8_t *cst = blk + cst_offset(&p);
        const size_t bb = (size_t)p.bb, vl = bb / 4; /* block bytes, int32 lanes per vector */
        for (size_t pos = 0; pos < bb; pos++) {
            int64_t c = (pat * p.bb + (int64_t)pos) % p.c;
            size_t v = pos / vl, l = pos % vl;
            int32_t wzp = ks__q8_wzp(p.w, c);
            int64_t wsum = 0;
            for (int64_t ky = 0; ky < p.kh; ky++) {
                for (int64_t kx = 0; kx < p.kw; kx++) {
                    int32_t d = ks__q8_load(p.w, c * ks + ky * p.kw + kx) - wzp;
                    d = d < dmin ? dmin : (d > 127 ? 127 : d); /* an outlier channel: fix_rows */
                    size_t t = (size_t)((ky / 4) * p.kw + kx);
                    blk[(t * 4 + v) * bb + l * 4 + (size_t)(ky % 4)] = (uint8_t)(int8_t)d;
                    for (int64_t q = 1; q < p.sets; q++) { /* set q: kernel row ky at ky + q */
                        size_t tq = (size_t)(((ky + q) / 4) * p.kw + kx);
                        blk[(size_t)q * taps * 4 * bb + (tq * 4 + v) * bb + l * 4 +
                            (size_t)((ky + q) % 4)] = (uint8_t)(int8_t)d;
                    }
                    wsum += d;
                }
            }
            /* signed x: the kernels see x_zp - 128 (the interleave flips every byte) */
            int64_t xzp_k = (int64_t)p.xzp - ((arch->mode & KS_Q8DW_SIGNED_X) ? 128 : 0);
            int64_t start = (int64_t)(bias ? bias[c] : 0) - xzp_k * wsum;
            int32_t mult, left, right;
            channel_multiplier(&p, c, &mult, &left, &right);
            int32_t *row32 = (int32_t *)cst;
            int64_t *row64 = (int64_t *)cst;
            row32[(KS_Q8DW_C_BIAS * 4 + v) * vl + l] = (int32_t)(uint32_t)(uint64_t)start;
            /* a left shift that cannot wrap moves into the right shift (fold_left) */
            int32_t fold = left > 0 && fold_left(&p, arch, c, left) ? left : 0;
            row32[(KS_Q8DW_C_LSHIFT * 4 + v) * vl + l] = left - fold;
            row32[(KS_Q8DW_C_MEVEN * 4 + v) * vl + l] = mult;
            size_t q = l / 2, odd = l % 2, vq = vl / 2; /* int64 lanes */
            if (odd && !fp64) row64[(KS_Q8DW_C_MODD * 4 + v) * vq + q] = mult;
            if (arch->mode & KS_Q8DW_TWO_STEP) { /* two steps (q8_dw.h C2 rows) */
                row32[(KS_Q8DW_C2_ADD * 4 + v) * vl + l] =
                    right > 0 ? (1 << (right - 1)) + yzp * (1 << right) : yzp;
                row32[(KS_Q8DW_C2_NZ * 4 + v) * vl + l] = right > 0 ? -1 : 0;
                row32[(KS_Q8DW_C2_SHIFT * 4 + v) * vl + l] = right;
                continue;
            }
            if (fp64) { /* q8_dw.h KS_Q8DW_CD_*: the same rule divided by 2^(31 + r) */
                double *rowd = (double *)cst;
                size_t vh = vl / 2, half = l / vh, ld = l % vh;
                double a = ldexp((double)mult, left - 31 - right);
                double bv = ldexp((double)((1LL << 30) + (right > 0 ? (1LL << (30 + right)) : 0)),
                                  -31 - right) +
                            (double)yzp;
                double sv = right > 0 && mult > 0 ? ldexp(1.0, -right) : 0.0;
                rowd[((KS_Q8DW_CD_ALO + half) * 4 + v) * vh + ld] = a;
                rowd[((KS_Q8DW_CD_BLO + half) * 4 + v) * vh + ld] = bv;
                rowd[((KS_Q8DW_CD_SLO + half) * 4 + v) * vh + ld] = sv;
                continue;
            }
            /* out + zp = floor((x * m + K - S * [x < 0]) / 2^(31 + r)) with
             * K = 2^30 + [r > 0] 2^(30 + r) + zp 2^(31 + r), S = [r > 0] 2^31 (ISA file) */
            int64_t k = (1LL << 30) + (right > 0 ? (1LL << (30 + right)) : 0) +
                        (int64_t)yzp * (int64_t)(1ULL << (31 + right));
            int64_t s = right > 0 ? (1LL << 31) : 0;
            /* folded (right == 0, s == 0): floor((x 2^left m + k) / 2^31) =
             * floor((x m + k / 2^left) / 2^(31 - left)), k a multiple of 2^left (left <= 30) */
            row64[((KS_Q8DW_C_KEVEN + odd) * 4 + v) * vq + q] = k / (1LL << fold);
            row64[((KS_Q8DW_C_SEVEN + odd) * 4 + v) * vq + q] = s;
            row64[((KS_Q8DW_C_SHEVEN + odd) * 4 + v) * vq + q] = 31 + right - fold;
        }
    }
    return KS_STATUS_OK;
}

/* ---- run ---- */

typedef struct dw_job {
    const dwp *p;
    const ks__q8dw_arch *arch;
    const uint8_t *x, *zero, *w;
    uint8_t *y;
    char *thread_mem;
    size_t per_thread;
    int32_t lo, hi, lshift, fp64;
    const uint8_t *table, *tscope;
    int32_t nfix;       /* outlier channels (fix_rows) */
    const uint8_t *fix; /* their indices, int32 each (read with memcpy) */
} dw_job;

/* Output rows oy0 .. oy0 + nr - 1 of image b, channels listed in j->fix: the kernel ran them with
 * clamped weights; recomputed here as the reference computes them (the exact sum, which cost()
 * keeps inside int32, TFLite's MultiplyByQuantizedMultiplier, the clamp, the TABLE lookup). */
static void fix_rows(const dw_job *j, int64_t b, int64_t oy0, int64_t nr) {
    const dwp *p = j->p;
    const int64_t c = p->c, ks = p->kh * p->kw;
    const int32_t xzp = p->x->quant->zero_points[0];
    const int i8 = p->x->dtype == KS_DTYPE_I8;
    for (int32_t f = 0; f < j->nfix; f++) {
        int32_t ch;
        memcpy(&ch, j->fix + 4 * (size_t)f, sizeof(ch));
        const int32_t wzp = ks__q8_wzp(p->w, ch);
        const int32_t bias = p->bias ? ((const int32_t *)p->bias->data)[ch] : 0;
        int32_t mult, left, right;
        channel_multiplier(p, ch, &mult, &left, &right);
        const int32_t shift = left > 0 ? left : -right;
        for (int64_t oy = oy0; oy < oy0 + nr; oy++) {
            uint8_t *out = j->y + (size_t)((b * p->oh + oy) * p->ow) * (size_t)c + (size_t)ch;
            for (int64_t ox = 0; ox < p->ow; ox++) {
                int64_t acc = bias;
                for (int64_t ky = 0; ky < p->kh; ky++) {
                    int64_t iy = oy * p->sh - p->pt + ky * p->dh;
                    if (iy < 0 || iy >= p->ih) continue;
                    const uint8_t *row = j->x + (size_t)((b * p->ih + iy) * p->iw) * (size_t)c;
                    for (int64_t kx = 0; kx < p->kw; kx++) {
                        int64_t ix = ox * p->sw - p->pl + kx * p->dw;
                        if (ix < 0 || ix >= p->iw) continue;
                        uint8_t raw = row[(size_t)ix * (size_t)c + (size_t)ch];
                        int32_t xv = i8 ? (int32_t)(int8_t)raw : (int32_t)raw;
                        acc += (int64_t)(xv - xzp) *
                               (ks__q8_load(p->w, ch * ks + ky * p->kw + kx) - wzp);
                    }
                }
                int32_t v = ks__quant_mul((int32_t)acc, mult, shift) + p->yzp;
                v = v < j->lo ? j->lo : (v > j->hi ? j->hi : v);
                uint8_t byte = (uint8_t)v;
                out[(size_t)ox * (size_t)c] = j->table ? j->table[byte] : byte;
            }
        }
    }
}

/* Stride 2 with the ISA's split: padding first, then the input pixels in pairs. Padded pixel
 * X = ix + pl goes to phase X % 2 at X / 2. */
static void split2_row(const dw_job *j, const uint8_t *src, uint8_t *dst) {
    const dwp *p = j->p;
    const size_t c = (size_t)p->c, pb = phase_bytes(p);
    const int64_t iw = p->iw, pl = p->pl, pm = p->pm;
    const uint8_t flip = p->flip;
    memset(dst, p->xzp, 2 * pb);
    const int64_t first = pl % 2; /* pixel 0 in the odd phase: the pairs start at pixel 1 */
    int64_t ix = first;
    int64_t m0 = (ix + pl) / 2, pairs = (iw - ix) / 2;
    if (pairs > pm - m0) pairs = pm - m0;
    if (pairs > 0)
        ix += 2 * (int64_t)j->arch->split2(src + (size_t)ix * c, (size_t)pairs, c, flip,
                                           dst + (size_t)m0 * c, dst + pb + (size_t)m0 * c);
    for (int64_t i = 0; i < iw; i++) {
        if (i >= first && i < ix) i = ix; /* skip the pixels the split did */
        if (i >= iw) break;
        int64_t x = i + pl, m = x / 2;
        if (m >= pm) continue;
        uint8_t *o = dst + (size_t)(x % 2) * pb + (size_t)m * c;
        const uint8_t *s = src + (size_t)i * c;
        for (size_t k = 0; k < c; k++)
            o[k] = (uint8_t)(s[k] ^ flip);
    }
}

/* Padded input row `iy` of image b, split into sw phases of phase_bytes each. */
static void fill_row(const dw_job *j, int64_t b, int64_t iy, uint8_t *dst) {
    const dwp *p = j->p;
    size_t c = (size_t)p->c, pb = phase_bytes(p);
    const uint8_t *src = j->x + (size_t)((b * p->ih + iy) * p->iw) * c;
    const uint8_t zp = (uint8_t)p->xzp, flip = p->flip;
    for (int64_t ph = 0; ph < p->sw; ph++) {
        uint8_t *d = dst + (size_t)ph * pb;
        if (p->sw == 1) {
            /* one contiguous run: left padding, the row, right padding */
            int64_t left = p->pl < p->pm ? p->pl : p->pm;
            int64_t cnt = p->iw < p->pm - left ? p->iw : p->pm - left;
            memset(d, zp, (size_t)left * c);
            size_t nb = (size_t)cnt * c;
            uint8_t *o = d + (size_t)left * c;
            if (flip)
                for (size_t i = 0; i < nb; i++)
                    o[i] = (uint8_t)(src[i] ^ 0x80);
            else
                memcpy(o, src, nb);
            memset(o + nb, zp, pb - (size_t)(left + cnt) * c);
            continue;
        }
        if (p->sw == 2 && j->arch->split2) {
            split2_row(j, src, dst);
            break; /* both phases done */
        }
        /* strided pixels: copy, then flip the whole phase in one vectorizable pass */
        for (int64_t m = 0; m < p->pm; m++) {
            int64_t ix = ph + p->sw * m - p->pl;
            uint8_t *o = d + (size_t)m * c;
            if (ix < 0 || ix >= p->iw)
                memset(o, zp ^ flip, c);
            else
                ks__q8_copy_run(o, src + (size_t)ix * c, c);
        }
        const size_t flat = (size_t)p->pm * c; /* a local: d[] may alias *p */
        if (flip)
            for (size_t i = 0; i < flat; i++)
                d[i] ^= 0x80;
        memset(d + (size_t)p->pm * c, zp, pb - (size_t)p->pm * c);
    }
}

/* Makes src[k] the padded row iy0 + k of image b for k < nwin (NULL outside the image), filling
 * slots that hold no row of this window. */
static void window_rows(const dw_job *j, int64_t b, int64_t iy0, int64_t nwin, int64_t *tags,
                        uint8_t *slots, const uint8_t **src) {
    const dwp *p = j->p;
    const int64_t ns = (int64_t)num_slots(p);
    const size_t rb = phase_bytes(p) * (size_t)p->sw;
    for (int64_t k = 0; k < nwin; k++) {
        int64_t iy = iy0 + k;
        src[k] = NULL;
        if (iy < 0 || iy >= p->ih) continue;
        for (int64_t s = 0; s < ns; s++)
            if (tags[s] == b * p->ih + iy) src[k] = slots + (size_t)s * rb;
    }
    for (int64_t k = 0; k < nwin; k++) {
        int64_t iy = iy0 + k;
        if (src[k] || iy < 0 || iy >= p->ih) continue;
        int64_t s = 0; /* a slot holding no row of this window (ns >= nwin) */
        for (; s < ns; s++) {
            const uint8_t *at = slots + (size_t)s * rb;
            int used = 0;
            for (int64_t q = 0; q < nwin; q++)
                used |= src[q] == at;
            if (!used) break;
        }
        uint8_t *at = slots + (size_t)s * rb;
        fill_row(j, b, iy, at);
        tags[s] = b * p->ih + iy;
        src[k] = at;
    }
}

static int64_t floor_div4(int64_t v) {
    return v >= 0 ? v / 4 : -((-v + 3) / 4);
}

/* Quad t of image b as a unique key >= 0: the quads of an image are t_min..t_max. */
static int64_t quad_key(const dwp *p, int64_t b, int64_t t) {
    const int64_t t_min = floor_div4(-p->pt);
    const int64_t t_max = floor_div4((p->oh - 1) * p->sh - p->pt) + p->groups_h;
    return b * (t_max - t_min + 1) + (t - t_min);
}

/* The quad mode (dwp.quad): one or two output rows per kernel call. */
static void dw_range_quad(const dw_job *j, ks__q8dw_row *r, size_t begin, size_t end, char *mem) {
    const dwp *p = j->p;
    const int64_t ns = (int64_t)num_slots(p), nib = (int64_t)num_ibufs(p), g_max = p->groups_h;
    int64_t *tags = (int64_t *)mem, *qtags = tags + ns;
    const uint32_t **tap = (const uint32_t **)(qtags + nib);
    uint8_t *slots = (uint8_t *)mem + tags_bytes(p);
    const size_t pb = phase_bytes(p), rb = pb * (size_t)p->sw, bb = (size_t)p->bb;
    uint32_t *ibufs = (uint32_t *)(slots + rb * (size_t)ns);
    const size_t ib_words = ibuf_bytes(p) / 4, c = (size_t)p->c;
    const size_t set_bytes = r->set_bytes, cst = r->cst_offset;
    const uint8_t *src[64]; /* the rows of the current quads: 4 g_max <= 64 (kh <= 16) */
    for (int64_t s = 0; s < ns; s++)
        tags[s] = -1;
    for (int64_t i = 0; i < nib; i++)
        qtags[i] = -1;
    r->tap = tap;
    for (size_t row = begin; row < end; row++) {
        int64_t b = (int64_t)row / p->oh, oy = (int64_t)row % p->oh;
        int64_t iy0 = oy * p->sh - p->pt, t0 = floor_div4(iy0), o = iy0 - 4 * t0;
        /* a row starting in the quad's first half pairs with the next one (offset o + 2, the
         * same quads when they fit): one call, the quad loads shared, weight sets o and o + 2 */
        int64_t nr =
            o <= 1 && o + 2 + p->kh <= 4 * g_max && row + 1 < end && oy + 1 < p->oh ? 2 : 1;
        int64_t ng = (o + 2 * (nr - 1) + p->kh + 3) / 4; /* quads the rows read (<= g_max) */
        window_rows(j, b, 4 * t0, 4 * g_max, tags, slots, src);
        int64_t at[64];
        for (int64_t g = 0; g < ng; g++) { /* find the quad, else interleave it */
            int64_t key = quad_key(p, b, t0 + g), i = 0;
            at[g] = -1;
            for (i = 0; i < nib; i++)
                if (qtags[i] == key) at[g] = i;
            if (at[g] >= 0) continue;
            for (i = 0; i < nib; i++) { /* one no current quad uses */
                int64_t k2 = qtags[i], used = 0;
                for (int64_t h = 0; h < ng; h++)
                    used |= k2 == quad_key(p, b, t0 + h);
                if (!used) break;
            }
            at[g] = i;
            qtags[i] = key;
            for (int64_t ph = 0; ph < p->sw; ph++) {
                const uint8_t *rows4[4];
                for (int64_t q = 0; q < 4; q++)
                    rows4[q] = src[4 * g + q] ? src[4 * g + q] + (size_t)ph * pb : j->zero;
                j->arch->interleave(rows4, pb / bb, ibufs + (size_t)(i * p->sw + ph) * ib_words);
            }
        }
        for (int64_t g = 0; g < ng; g++)
            for (int64_t kx = 0; kx < p->kw; kx++) {
                int64_t ph = (kx * p->dw) % p->sw, off = (kx * p->dw) / p->sw;
                tap[g * p->kw + kx] =
                    ibufs + (size_t)(at[g] * p->sw + ph) * ib_words + (size_t)off * c;
            }
        r->num_taps = (size_t)(ng * p->kw);
        r->w = j->w + (size_t)o * set_bytes;
        r->cst_offset = cst - (size_t)o * set_bytes;
        r->set_bytes = 2 * set_bytes;
        r->out = j->y + row * (size_t)p->ow * c;
        r->num_rows = (size_t)nr;
        j->arch->row(r);
        if (j->nfix) fix_rows(j, b, oy, nr);
        row += (size_t)nr - 1;
    }
}

static void dw_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const dw_job *j = (const dw_job *)arg;
    const dwp *p = j->p;
    char *mem = j->thread_mem + (size_t)thread * j->per_thread;
    const int64_t ns = (int64_t)num_slots(p);
    int64_t *tags = (int64_t *)mem;
    const uint32_t **tap = (const uint32_t **)(mem + (size_t)ns * sizeof(int64_t));
    uint8_t *slots = (uint8_t *)mem + tags_bytes(p);
    size_t pb = phase_bytes(p), rb = pb * (size_t)p->sw;
    uint32_t *ibufs = (uint32_t *)(slots + rb * (size_t)ns);
    size_t ib_words = ibuf_bytes(p) / 4, c = (size_t)p->c;
    const uint8_t *src[64]; /* per window row: its padded row (all phases); <= 4 groups_h <= 64 */
    for (int64_t s = 0; s < ns; s++)
        tags[s] = -1;
    ks__q8dw_row r;
    memset(&r, 0, sizeof(r));
    r.tap = tap;
    r.num_taps = num_taps(p);
    const size_t bb = (size_t)p->bb;
    r.num_blocks = ((size_t)p->ow * c + bb - 1) / bb;
    r.tail_bytes = (size_t)p->ow * c - (r.num_blocks - 1) * bb;
    r.w = j->w;
    r.pattern_bytes = pattern_bytes(p);
    r.set_bytes = num_taps(p) * 4 * (size_t)p->bb;
    r.cst_offset = cst_offset(p);
    r.num_patterns = (size_t)p->patterns;
    r.out_i8 = p->y->dtype == KS_DTYPE_I8;
    r.lshift = j->lshift;
    r.fp64 = j->fp64;
    r.lo = j->lo, r.hi = j->hi;
    r.no_sign = j->lo >= p->yzp;
    r.table = j->table;
    r.tscope = j->tscope;
    r.vbmi = (ks__cpu_isa() & KS_ISA_AVX512_VBMI) != 0;
    if (p->quad) {
        dw_range_quad(j, &r, begin, end, mem);
        return;
    }
    const int direct = p->sw == 1 && j->arch->interleave_src != NULL;
    for (size_t row = begin; row < end; row++) {
        int64_t b = (int64_t)row / p->oh, oy = (int64_t)row % p->oh;
        /* several output rows at once when they are this thread's and the same image's */
        int64_t nr = p->rows,
                left = (int64_t)(end - row) < p->oh - oy ? (int64_t)(end - row) : p->oh - oy;
        while (nr > left)
            nr /= 2;
        const int64_t nwin = p->kh + nr - 1; /* window rows: iy = oy * sh - pt + k * dh */
        if (direct) { /* stride 1: the interleave reads the input rows in place */
            for (int64_t g = 0; g < p->groups_h; g++) {
                ks__q8dw_src rs[4];
                for (int64_t s = 0; s < 4; s++) {
                    int64_t k = g * 4 + s, iy = oy * p->sh - p->pt + k * p->dh;
                    rs[s].data = j->x, rs[s].shift = rs[s].lo = rs[s].hi = 0;
                    if (k >= nwin || iy < 0 || iy >= p->ih || p->pl >= p->pm) continue;
                    int64_t end_px = p->pl + p->iw < p->pm ? p->pl + p->iw : p->pm;
                    rs[s].data = j->x + (size_t)((b * p->ih + iy) * p->iw) * c;
                    rs[s].shift = rs[s].lo = (size_t)p->pl * c;
                    rs[s].hi = (size_t)end_px * c;
                }
                uint32_t *ib = ibufs + (size_t)g * ib_words;
                j->arch->interleave_src(rs, pb / bb, p->flip, (uint8_t)p->xzp, ib);
                for (int64_t kx = 0; kx < p->kw; kx++)
                    tap[g * p->kw + kx] = ib + (size_t)(kx * p->dw) * c;
            }
            r.out = j->y + row * (size_t)p->ow * c;
            r.num_rows = (size_t)nr;
            j->arch->row(&r);
            if (j->nfix) fix_rows(j, b, oy, nr);
            row += (size_t)nr - 1;
            continue;
        }
        for (int64_t k = 0; k < nwin; k++) {
            int64_t iy = oy * p->sh - p->pt + k * p->dh;
            src[k] = NULL;
            if (iy < 0 || iy >= p->ih) continue;
            int64_t key = b * p->ih + iy;
            for (int64_t s = 0; s < ns; s++)
                if (tags[s] == key) src[k] = slots + (size_t)s * rb;
        }
        for (int64_t k = 0; k < nwin; k++) {
            int64_t iy = oy * p->sh - p->pt + k * p->dh;
            if (src[k] || iy < 0 || iy >= p->ih) continue;
            /* a slot holding no row of this window (one exists: ns >= nwin slots) */
            int64_t s = 0;
            for (; s < ns; s++) {
                const uint8_t *at = slots + (size_t)s * rb;
                int used = 0;
                for (int64_t q = 0; q < nwin; q++)
                    used |= src[q] == at;
                if (!used) break;
            }
            uint8_t *at = slots + (size_t)s * rb;
            fill_row(j, b, iy, at);
            tags[s] = b * p->ih + iy;
            src[k] = at;
        }
        for (int64_t g = 0; g < p->groups_h; g++) {
            for (int64_t ph = 0; ph < p->sw; ph++) {
                int used = 0;
                for (int64_t kx = 0; kx < p->kw; kx++)
                    used |= (kx * p->dw) % p->sw == ph;
                if (!used) continue;
                const uint8_t *rows4[4];
                for (int64_t s = 0; s < 4; s++) {
                    int64_t k = g * 4 + s;
                    rows4[s] = k < nwin && src[k] ? src[k] + (size_t)ph * pb : j->zero;
                }
                j->arch->interleave(rows4, pb / bb, ibufs + (size_t)(g * p->sw + ph) * ib_words);
            }
            for (int64_t kx = 0; kx < p->kw; kx++) {
                int64_t ph = (kx * p->dw) % p->sw, off = (kx * p->dw) / p->sw;
                tap[g * p->kw + kx] = ibufs + (size_t)(g * p->sw + ph) * ib_words + (size_t)off * c;
            }
        }
        r.out = j->y + row * (size_t)p->ow * c;
        r.num_rows = (size_t)nr;
        j->arch->row(&r);
        if (j->nfix) fix_rows(j, b, oy, nr);
        row += (size_t)nr - 1;
    }
}

ks_status ks__q8dw_run(ks__kernel_ctx *ctx, const ks__q8dw_arch *arch) {
    dwp p;
    if (describe(ctx, arch, &p, 0))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 dwrow cannot run this node");
    uint32_t threads = ks__pool_threads(ctx->pool);
    size_t pt = per_thread(&p);
    if (!ctx->packed || !ctx->scratch || ctx->scratch_bytes < pt * threads ||
        ctx->packed_bytes < zero_row_bytes(&p) + (size_t)p.patterns * pattern_bytes(&p))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL,
                                "q8 dwrow: packed/scratch buffers missing or planned for fewer "
                                "than %u threads",
                                threads);
    dw_job j;
    memset(&j, 0, sizeof(j));
    j.p = &p;
    j.arch = arch;
    j.x = (const uint8_t *)p.x->data;
    j.zero = (const uint8_t *)ctx->packed + HDR_BYTES;
    j.w = (const uint8_t *)ctx->packed + zero_row_bytes(&p);
    j.y = (uint8_t *)p.y->data;
    j.thread_mem = (char *)ctx->scratch;
    j.per_thread = pt;
    ks__quant_act_range(p.act, p.ys, p.yzp, p.y->dtype, &j.lo, &j.hi);
    j.table = p.table ? (const uint8_t *)ctx->packed + zero_row_bytes(&p) - 512 : NULL;
    j.tscope = j.table ? j.table + 256 : NULL;
    memcpy(&j.lshift, ctx->packed, sizeof(j.lshift));
    memcpy(&j.fp64, (const uint8_t *)ctx->packed + 4, sizeof(j.fp64));
    memcpy(&j.nfix, (const uint8_t *)ctx->packed + HDR_NFIX, sizeof(j.nfix));
    if (j.nfix < 0 || j.nfix > KS_Q8DW_FIX_MAX)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 dwrow: bad packed header");
    j.fix = (const uint8_t *)ctx->packed + HDR_FIX;
    ks__parallel_for(ctx->pool, (size_t)(p.n * p.oh), 1, dw_range, &j);
    return KS_STATUS_OK;
}
