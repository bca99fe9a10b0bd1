/* f32 Winograd convolution driver (winograd.h): problem description, weight transform and
 * packing, tile blocking and threading. Portable C; the ISA files supply transforms and GEMM.
 *
 * Why Winograd: a 3x3 conv needs 9 MACs per output per input channel; F(m, 3) needs
 * (m+2)^2 / m^2 of them in the batched GEMM (4, 2.25, 1.78 for m = 2, 4, 6) plus transforms
 * whose cost grows with the channel counts, not their product. It wins where channel counts are
 * large enough for the GEMM to dominate and the image has enough tiles to keep the transformed
 * weights (alpha^2 * Cin * Cout floats, streamed once per tile block) amortized.
 *
 * Accuracy: the transforms amplify rounding error with the size of their coefficients (up to
 * 5.25 in B^T and 32 in A^T for m = 6). Measured per layer against the double-accumulated
 * reference on post-ReLU inputs and He-initialised weights (test_impl_winograd prints it):
 *                 28x28x64 rel L2 / max rel     14x14x256 rel L2 / max rel
 *     F(2x2)      1.9e-7 / 2.7e-7               3.8e-7 / 5.3e-7
 *     F(4x4)      8.8e-7 / 2.9e-6               1.6e-6 / 7.8e-6
 *     F(6x6)      1.7e-6 / 4.3e-6               3.2e-6 / 1.1e-5
 * The golden tolerance is rel L2 1e-4 end to end, over networks of up to ~50 3x3 convs whose
 * errors add up (worst case linearly): 50 x 1.6e-6 = 8e-5 fits for F(4), 50 x 3.2e-6 = 1.6e-4
 * does not for F(6). The cost model therefore never picks F(6) (so tuning never times it);
 * it stays callable by name for tests and experiments.
 */
#include "winograd.h"

#include <string.h>

#include "ref/conv_internal.h"

typedef struct wino_problem {
    int64_t n, ih, iw, ic, oh, ow, oc;
    int64_t pt, pl;
    int64_t tiles_h, tiles_w, num_tiles; /* num_tiles over the whole batch */
    const ks__rt_tensor *w, *bias, *residual;
    ks__gemm_epilogue ep;
} wino_problem;

static int float_plain(const ks__rt_tensor *t) {
    return t && t->dtype == KS_DTYPE_F32 && (!t->quant || t->quant->count == 0);
}

static int const_weights(const ks__rt_tensor *t) {
    return t && t->data && (t->dtype == KS_DTYPE_F32 || t->dtype == KS_DTYPE_F16) &&
           (!t->quant || t->quant->count == 0);
}

static const ks__rt_tensor *input_at(const ks__kernel_ctx *ctx, uint32_t i) {
    return i < ctx->num_inputs ? ctx->in[i] : NULL;
}

static int64_t one_if_zero(int32_t v) {
    return v == 0 ? 1 : v;
}

/* Leading pad of one conv axis (the reference kernel's rule, from the inferred output size). */
static int64_t lead_pad(int32_t mode, int64_t explicit_pad, int64_t in, int64_t out) {
    if (mode == KS_PAD_EXPLICIT) return explicit_pad;
    if (mode == KS_PAD_VALID) return 0;
    int64_t total = (out - 1) + 3 - in;
    if (total < 0) total = 0;
    return mode == KS_PAD_SAME_UPPER ? total / 2 : total - total / 2;
}

static int describe(const ks__kernel_ctx *ctx, uint32_t m, wino_problem *p) {
    memset(p, 0, sizeof(*p));
    if (ctx->node->op != KS_OP_CONV2D || ctx->num_outputs != 1 || ctx->num_inputs < 2) return -1;
    const ks__rt_tensor *x = input_at(ctx, 0), *w = input_at(ctx, 1), *y = ctx->out[0];
    const int32_t *ip = ctx->node->ip;
    if (!float_plain(x) || !float_plain(y) || !const_weights(w) || x->rank != 4 || w->rank != 4 ||
        y->rank != 4)
        return -1;
    if (one_if_zero(ip[9]) != 1 || one_if_zero(ip[0]) != 1 || one_if_zero(ip[1]) != 1 ||
        one_if_zero(ip[2]) != 1 || one_if_zero(ip[3]) != 1)
        return -1;
    if (ip[8] < KS_PAD_EXPLICIT || ip[8] > KS_PAD_VALID) return -1;
    if (w->dims[1] != 3 || w->dims[2] != 3) return -1;
    p->n = x->dims[0], p->ih = x->dims[1], p->iw = x->dims[2], p->ic = x->dims[3];
    p->oh = y->dims[1], p->ow = y->dims[2], p->oc = y->dims[3];
    if (p->n < 1 || p->ih < 1 || p->iw < 1 || p->ic < 1 || p->oh < 1 || p->ow < 1 || p->oc < 1 ||
        w->dims[0] != p->oc || w->dims[3] != p->ic || y->dims[0] != p->n)
        return -1;
    p->pt = lead_pad(ip[8], ip[4], p->ih, p->oh);
    p->pl = lead_pad(ip[8], ip[5], p->iw, p->ow);
    p->tiles_h = (p->oh + m - 1) / m;
    p->tiles_w = (p->ow + m - 1) / m;
    p->num_tiles = p->n * p->tiles_h * p->tiles_w;
    p->w = w;
    p->bias = input_at(ctx, 2);
    if (p->bias && (!const_weights(p->bias) || ks__rt_numel(p->bias) != p->oc)) return -1;
    p->residual = input_at(ctx, 3);
    if (p->residual) {
        const ks__rt_tensor *r = p->residual;
        if (!float_plain(r) || r->rank != 4) return -1;
        for (int i = 0; i < 4; i++)
            if (r->dims[i] != y->dims[i]) return -1;
    }
    p->ep.act = ip[10];
    p->ep.alpha = ctx->node->fp[0];
    /* PRELU's per-channel slopes are not in the winograd epilogue: the GEMM path takes those. */
    if (p->ep.act < 0 || p->ep.act >= KS_ACT_COUNT || p->ep.act == KS_ACT_PRELU) return -1;
    return 0;
}

int ks__wino_supported(const ks__kernel_ctx *ctx) {
    wino_problem p;
    return describe(ctx, 2, &p) == 0;
}

/* ---- sizes ---- */

static size_t round_up(size_t v, size_t a) {
    return (v + a - 1) / a * a;
}

static size_t alpha2(const ks__wino_arch *arch) {
    return (size_t)(arch->m + 2) * (arch->m + 2);
}

static size_t num_panels(const wino_problem *p, const ks__wino_arch *arch) {
    return ((size_t)p->oc + arch->nr - 1) / arch->nr;
}

/* Floats of the transformed weights of one position: all panels, Cin x NR each. */
static size_t pos_floats(const wino_problem *p, const ks__wino_arch *arch) {
    return num_panels(p, arch) * (size_t)p->ic * arch->nr;
}

static size_t bias_bytes(const wino_problem *p) {
    return round_up((size_t)p->oc * sizeof(float), 64);
}

/* Tiles per block: V and M of one block (alpha^2 * TB * (Cin + Cout) floats) should stay
 * within ~L2 (512 KB), at least one microkernel row tile and at most 8; never more than the
 * image has. */
static size_t block_tiles(const wino_problem *p, const ks__wino_arch *arch) {
    size_t per_tile = alpha2(arch) * (size_t)(p->ic + p->oc) * sizeof(float);
    size_t tb = ((size_t)512 << 10) / per_tile;
    tb = tb / arch->mr * arch->mr;
    if (tb < arch->mr) tb = arch->mr;
    if (tb > 8 * (size_t)arch->mr) tb = 8 * (size_t)arch->mr;
    size_t all = round_up((size_t)p->num_tiles, arch->mr);
    return tb < all ? tb : all;
}

static size_t v_floats(const wino_problem *p, const ks__wino_arch *arch, size_t tb) {
    return round_up(alpha2(arch) * tb * (size_t)p->ic, 16);
}

static size_t m_floats(const wino_problem *p, const ks__wino_arch *arch, size_t tb) {
    return round_up(alpha2(arch) * tb * (size_t)p->oc, 16);
}

static size_t per_thread_scratch(const wino_problem *p, const ks__wino_arch *arch) {
    size_t tb = block_tiles(p, arch);
    return (v_floats(p, arch, tb) + m_floats(p, arch, tb)) * sizeof(float);
}

/* ---- cost ----
 * Same unit as ks__f32_gemm_cost (cycles at the vector MAC peak). Three parts, calibrated with
 * bench/kbench.c on the development machine (docs/kernels.md has the numbers):
 *   - the batched GEMM at 80% of peak, with tiles rounded up to the microkernel's MR;
 *   - when the transformed weights (alpha^2 * Cin * Cout floats) outgrow the last-level cache
 *     (> 8 MB), each block streams them from DRAM at ~2.3 floats per cycle; the GEMM then runs
 *     at the slower of the two rates;
 *   - the transforms, ~6 vector ops per channel, position and tile.
 * Gates: transformed weights above 64 MB (memory), fewer than 2 * MR tiles leave the microkernel
 * starved of rows (measured slower than F(2) or the indirect GEMM at 7x7x512), and fewer than 16
 * channels (8 with 8-float vectors) make the transforms dominate. */
double ks__wino_cost(const ks__kernel_ctx *ctx, const ks__wino_arch *arch) {
    wino_problem p;
    if (describe(ctx, arch->m, &p)) return -1.0;
    /* F(6x6) accumulates too much rounding error over a deep network (file comment). */
    if (arch->m >= 6) return -1.0;
    /* The channel gate: 16, but 8 with 8-float vectors (AVX2), where the
     * small-channel direct kernels lag more: YOLOX-nano's 12 -> 16 stem at 208x208 1.48-1.59 ->
     * 0.98-1.20 ms, UltraFace's four 8..16-channel 30x40 layers 0.112 -> 0.085 ms, while on
     * AVX-512 the same layers were 0.90 -> 0.83 and 0.084 -> 0.088 ms (docs/kernels.md). */
    const int64_t min_c = arch->vl == 8 ? 8 : 16; /* vl 8: AVX2 only (NEON: not measured) */
    if (p.ic < min_c || p.oc < min_c || p.num_tiles < 2 * (int64_t)arch->mr) return -1.0;
    double a2 = (double)alpha2(arch);
    double tiles = (double)round_up((size_t)p.num_tiles, arch->mr);
    double cout_pad = (double)(num_panels(&p, arch) * arch->nr);
    double u_floats = a2 * (double)p.ic * cout_pad;
    /* The transformed weights are (m+2)^2 / 9 times the original ones (4x for F(4)): past 64 MB
     * the memory is not worth it. */
    if (u_floats * sizeof(float) > 64.0 * (1 << 20)) return -1.0;
    double gemm = u_floats * tiles / arch->macs_per_cycle / 0.8;
    if (u_floats * sizeof(float) > 8.0 * (1 << 20)) {
        size_t tb = block_tiles(&p, arch);
        double blocks = (double)(((size_t)p.num_tiles + tb - 1) / tb);
        double stream = blocks * u_floats / 2.3;
        if (stream > gemm) gemm = stream;
    }
    double tx = a2 * tiles * (double)(p.ic + p.oc) * 6.0 / arch->vl;
    return gemm + tx;
}

ks_status ks__wino_plan(ks__kernel_ctx *ctx, const ks__wino_arch *arch, size_t *packed_bytes_out) {
    wino_problem p;
    if (describe(ctx, arch->m, &p))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "winograd cannot run this node");
    size_t bytes = bias_bytes(&p) + alpha2(arch) * pos_floats(&p, arch) * sizeof(float);
    uint32_t threads = ctx->num_threads ? ctx->num_threads : 1;
    size_t scratch = per_thread_scratch(&p, arch) * threads;
    if (scratch > ctx->scratch_bytes) ctx->scratch_bytes = scratch;
    *packed_bytes_out = bytes;
    return KS_STATUS_OK;
}

/* G of F(m, 3) (alpha x 3), exact in double. */
static const double k_g2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
static const double k_g4[6][3] = {{1.0 / 4, 0, 0},
                                  {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                  {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                  {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                  {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                  {0, 0, 1}};
static const double k_g6[8][3] = {{1, 0, 0},
                                  {-2.0 / 9, -2.0 / 9, -2.0 / 9},
                                  {-2.0 / 9, 2.0 / 9, -2.0 / 9},
                                  {1.0 / 90, 1.0 / 45, 2.0 / 45},
                                  {1.0 / 90, -1.0 / 45, 2.0 / 45},
                                  {32.0 / 45, 16.0 / 45, 8.0 / 45},
                                  {32.0 / 45, -16.0 / 45, 8.0 / 45},
                                  {0, 0, 1}};

static double g_at(uint32_t m, size_t i, size_t k) {
    if (m == 2) return k_g2[i][k];
    if (m == 4) return k_g4[i][k];
    return k_g6[i][k];
}

static float weight_at(const ks__rt_tensor *w, int64_t i, int64_t channel) {
    if (w->dtype == KS_DTYPE_F32) return ((const float *)w->data)[i];
    return ks__conv_load_f(w, i, channel);
}

ks_status ks__wino_pack(ks__kernel_ctx *ctx, const ks__wino_arch *arch) {
    wino_problem p;
    if (describe(ctx, arch->m, &p))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "winograd cannot run this node");
    size_t a = arch->m + 2, a2 = a * a, nr = arch->nr;
    size_t pf = pos_floats(&p, arch);
    size_t need = bias_bytes(&p) + a2 * pf * sizeof(float);
    if (!ctx->packed || ctx->packed_bytes < need)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "packed buffer too small");
    float *bias = (float *)ctx->packed;
    memset(bias, 0, bias_bytes(&p));
    for (int64_t co = 0; co < p.oc; co++)
        bias[co] = p.bias ? weight_at(p.bias, co, co) : 0.0f;
    float *u = (float *)((char *)ctx->packed + bias_bytes(&p));
    memset(u, 0, a2 * pf * sizeof(float));
    /* U[pos][panel][ci][j] = (G g G^T)[pos] of output channel panel * NR + j, input channel ci. */
    for (int64_t co = 0; co < p.oc; co++) {
        size_t pn = (size_t)co / nr, j = (size_t)co % nr;
        for (int64_t ci = 0; ci < p.ic; ci++) {
            double g[3][3], t[8][3];
            for (int ky = 0; ky < 3; ky++)
                for (int kx = 0; kx < 3; kx++)
                    g[ky][kx] = weight_at(p.w, ((co * 3 + ky) * 3 + kx) * p.ic + ci, co);
            for (size_t i = 0; i < a; i++)
                for (int kx = 0; kx < 3; kx++)
                    t[i][kx] = g_at(arch->m, i, 0) * g[0][kx] + g_at(arch->m, i, 1) * g[1][kx] +
                               g_at(arch->m, i, 2) * g[2][kx];
            for (size_t i = 0; i < a; i++) {
                for (size_t k = 0; k < a; k++) {
                    double v = t[i][0] * g_at(arch->m, k, 0) + t[i][1] * g_at(arch->m, k, 1) +
                               t[i][2] * g_at(arch->m, k, 2);
                    size_t pos = i * a + k;
                    u[pos * pf + (pn * (size_t)p.ic + (size_t)ci) * nr + j] = (float)v;
                }
            }
        }
    }
    return KS_STATUS_OK;
}

/* ---- run ---- */

typedef struct wino_job {
    const wino_problem *p;
    const ks__wino_arch *arch;
    const float *x, *bias, *u, *res;
    float *y, *scratch;
    size_t tb, panels, pos_floats, v_floats, per_thread_floats;
} wino_job;

static void wino_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const wino_job *j = (const wino_job *)arg;
    const wino_problem *p = j->p;
    const ks__wino_arch *arch = j->arch;
    const size_t a2 = alpha2(arch), m = arch->m, ic = (size_t)p->ic, oc = (size_t)p->oc;
    float *v = j->scratch + (size_t)thread * j->per_thread_floats;
    float *mm = v + j->v_floats;
    const size_t tiles_img = (size_t)(p->tiles_h * p->tiles_w);
    const size_t x_img = (size_t)(p->ih * p->iw) * ic, y_img = (size_t)(p->oh * p->ow) * oc;
    for (size_t blk = begin; blk < end; blk++) {
        size_t t0 = blk * j->tb;
        size_t nt = (size_t)p->num_tiles - t0 < j->tb ? (size_t)p->num_tiles - t0 : j->tb;
        /* V[pos][t][ic] */
        for (size_t t = 0; t < nt; t++) {
            size_t tile = t0 + t, b = tile / tiles_img, r = tile % tiles_img;
            int64_t ty = (int64_t)(r / (size_t)p->tiles_w), tx = (int64_t)(r % (size_t)p->tiles_w);
            arch->itx(j->x + b * x_img, p->ih, p->iw, p->ic, ty * (int64_t)m - p->pt,
                      tx * (int64_t)m - p->pl, v + t * ic, j->tb * ic);
        }
        /* M[pos][t][oc] = V[pos] * U[pos] */
        for (size_t pos = 0; pos < a2; pos++) {
            const float *vp = v + pos * j->tb * ic;
            const float *up = j->u + pos * j->pos_floats;
            float *mp = mm + pos * j->tb * oc;
            for (size_t pn = 0; pn < j->panels; pn++) {
                size_t n0 = pn * arch->nr;
                size_t nc = oc - n0 < arch->nr ? oc - n0 : arch->nr;
                const float *w = up + pn * ic * arch->nr;
                for (size_t r0 = 0; r0 < nt; r0 += arch->mr) {
                    size_t mr = nt - r0 < arch->mr ? nt - r0 : arch->mr;
                    arch->gemm(mr, nc, ic, vp + r0 * ic, ic, w, mp + r0 * oc + n0, oc);
                }
            }
        }
        for (size_t t = 0; t < nt; t++) {
            size_t tile = t0 + t, b = tile / tiles_img, r = tile % tiles_img;
            int64_t ty = (int64_t)(r / (size_t)p->tiles_w), tx = (int64_t)(r % (size_t)p->tiles_w);
            arch->otx(mm + t * oc, j->tb * oc, p->oc, j->bias, j->y + b * y_img,
                      j->res ? j->res + b * y_img : NULL, p->oh, p->ow, ty * (int64_t)m,
                      tx * (int64_t)m, &p->ep);
        }
    }
}

ks_status ks__wino_run(ks__kernel_ctx *ctx, const ks__wino_arch *arch) {
    wino_problem p;
    if (describe(ctx, arch->m, &p))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "winograd cannot run this node");
    size_t per_thread = per_thread_scratch(&p, arch);
    uint32_t threads = ks__pool_threads(ctx->pool);
    if (!ctx->packed || !ctx->scratch || ctx->scratch_bytes < per_thread * threads)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL,
                                "winograd: packed/scratch buffers missing or planned for fewer "
                                "than %u threads",
                                threads);
    wino_job j;
    memset(&j, 0, sizeof(j));
    j.p = &p;
    j.arch = arch;
    j.x = (const float *)ctx->in[0]->data;
    j.bias = (const float *)ctx->packed;
    j.u = (const float *)((const char *)ctx->packed + bias_bytes(&p));
    j.res = p.residual ? (const float *)p.residual->data : NULL;
    j.y = (float *)ctx->out[0]->data;
    j.scratch = (float *)ctx->scratch;
    j.tb = block_tiles(&p, arch);
    j.panels = num_panels(&p, arch);
    j.pos_floats = pos_floats(&p, arch);
    j.v_floats = v_floats(&p, arch, j.tb);
    j.per_thread_floats = per_thread / sizeof(float);
    size_t blocks = ((size_t)p.num_tiles + j.tb - 1) / j.tb;
    ks__parallel_for(ctx->pool, blocks, 1, wino_range, &j);
    return KS_STATUS_OK;
}
