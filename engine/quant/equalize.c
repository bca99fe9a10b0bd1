/* Data-free accuracy passes for ks-quant (quant.h): cross-layer equalization and bias correction.
 *
 * Why equalization: int8 activations are per tensor, so in the depthwise-separable models the
 * quietest channels of a tensor get a handful of levels when one channel is 100x louder. The
 * weights are per output channel, so a producer conv's rows can be rescaled for free, and a
 * depthwise consumer's rows too; only a group-1 consumer pays, through the range of input channel
 * c inside each of its rows. Nagel et al. balance weight ranges; here the producer side is the
 * calibrated activation range instead (the producer's own weights do not care), which is what
 * per-channel weights make the bottleneck.
 *
 * Why bias correction: rounding the few taps of a depthwise 3x3 row shifts the layer's mean
 * output by sum(dW) * E[x], a systematic error that survives averaging; subtracting it from the
 * bias costs nothing at run time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant.h"

/* Per-channel factors are kept within [1/KS__QUANT_MAX_FACTOR, KS__QUANT_MAX_FACTOR]: beyond that a
 * channel is (nearly) dead and rescaling it only moves rounding noise around. */
#define KS__QUANT_MAX_FACTOR 256.0
/* Channel shares below this are treated as dead channels (factor 1). */
#define KS__QUANT_DEAD_SHARE 1e-6
/* RELU6 producers: relu6(d z) = d relu6(z) only while d z <= 6, so a channel is only amplified
 * (d > 1), only if it never reached 6 in calibration, and only up to the factor that puts its
 * calibrated maximum at 6 / KS__QUANT_RELU6_HEADROOM: the rewrite is then exact for every value up
 * to KS__QUANT_RELU6_HEADROOM times the largest one seen. Saturating channels keep d = 1. */
#define KS__QUANT_RELU6_HEADROOM 2.0
#define KS__QUANT_RELU6_SATURATED (6.0 * (1.0 - 1e-4))

static bool is_const_f32(const ks__tensor *t) {
    return (t->flags & KS__TENSOR_CONST) && t->data && t->dtype == KS_DTYPE_F32 &&
           !t->quant.count && t->size_bytes == (size_t)ks__numel(t->rank, t->dims) * sizeof(float);
}

/* Writable float data of constant `id`: borrowed data is copied into the graph first. */
static float *owned_f32(ks__graph *g, int32_t id) {
    ks__tensor *t = &g->tensors[id];
    if (t->flags & KS__TENSOR_BORROWED) {
        if (ks__graph_set_const(g, id, t->data, t->size_bytes, true)) return NULL;
    }
    return (float *)t->data; /* graph-owned, allocated by ks__graph_set_const */
}

static const ks__quant_chan *chan_of(const ks__quant_calib *c, int32_t t, int64_t channels) {
    if (t < 0 || (uint32_t)t >= c->num_tensors || !c->chan) return NULL;
    const ks__quant_chan *ch = &c->chan[t];
    return ch->channels == (uint32_t)channels && ch->count ? ch : NULL;
}

/* Conv/FC geometry: out channels, values per row, input channels per group, groups. */
typedef struct geom {
    int64_t co, per, cpg, groups, taps;
} geom;

static bool conv_geom(const ks__graph *g, const ks__node *n, geom *out) {
    if (n->num_inputs < 2 || n->inputs[1] < 0) return false;
    const ks__tensor *w = &g->tensors[n->inputs[1]];
    if (!is_const_f32(w)) return false;
    if (n->op == KS_OP_CONV2D && w->rank == 4) {
        out->co = w->dims[0];
        out->cpg = w->dims[3];
        out->taps = w->dims[1] * w->dims[2];
        out->groups = n->ip[9] > 0 ? n->ip[9] : 1;
    } else if (n->op == KS_OP_FULLY_CONNECTED && w->rank == 2) {
        out->co = w->dims[0];
        out->cpg = w->dims[1];
        out->taps = 1;
        out->groups = 1;
    } else {
        return false;
    }
    out->per = out->taps * out->cpg;
    return out->co > 0 && out->per > 0 && out->co % out->groups == 0;
}

/* Input channel read by row o, column k (0..cpg-1). */
static int64_t in_channel(const geom *gm, int64_t o, int64_t k) {
    return (o / (gm->co / gm->groups)) * gm->cpg + k;
}

typedef struct uses {
    uint32_t *count;    /* per tensor: input slots referring to it */
    int32_t *producer;  /* per tensor: node index or -1 */
    bool *graph_output; /* per tensor */
} uses;

static void uses_free(uses *u) {
    free(u->count);
    free(u->producer);
    free(u->graph_output);
}

static ks_status uses_init(uses *u, const ks__graph *g) {
    uint32_t nt = g->num_tensors + 1;
    u->count = calloc(nt, sizeof(uint32_t));
    u->producer = malloc(nt * sizeof(int32_t));
    u->graph_output = calloc(nt, sizeof(bool));
    if (!u->count || !u->producer || !u->graph_output) {
        uses_free(u);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    for (uint32_t t = 0; t < nt; t++)
        u->producer[t] = -1;
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        const ks__node *n = &g->nodes[i];
        for (uint32_t k = 0; k < n->num_inputs; k++)
            if (n->inputs[k] >= 0) u->count[n->inputs[k]]++;
        for (uint32_t k = 0; k < n->num_outputs; k++)
            if (n->outputs[k] >= 0) u->producer[n->outputs[k]] = (int32_t)i;
    }
    for (uint32_t k = 0; k < g->num_outputs; k++)
        if (g->outputs[k] >= 0) u->graph_output[g->outputs[k]] = true;
    return KS_STATUS_OK;
}

/* A consumer conv is usable when it reads t only as its data input and owns its weights. */
static bool consumer_ok(const ks__graph *g, const uses *u, const ks__node *n, int32_t t,
                        int64_t channels, geom *gm) {
    if (n->op != KS_OP_CONV2D || n->inputs[0] != t) return false;
    for (uint32_t k = 1; k < n->num_inputs; k++)
        if (n->inputs[k] == t) return false;
    if (!conv_geom(g, n, gm) || u->count[n->inputs[1]] != 1) return false;
    return gm->groups * gm->cpg == channels;
}

#define MAX_CHAIN 2
#define MAX_CONSUMERS 16

ks_status ks__quant_equalize(ks__graph *g, const ks__quant_calib *c, ks__quant_equalize_info *info,
                             char *err, size_t err_cap) {
    uses u = {0};
    double *share = NULL, *wshare = NULL, *factor = NULL;
    ks_status st = uses_init(&u, g);
    memset(info, 0, sizeof(*info));
    info->max_factor = 1.0;
    if (st) goto fail;
    for (uint32_t pi = 0; pi < g->num_nodes; pi++) {
        const ks__node *p = &g->nodes[pi];
        geom pg;
        if (p->op != KS_OP_CONV2D || p->num_outputs != 1 || !conv_geom(g, p, &pg)) continue;
        int act = p->ip[10];
        /* The other clipping acts are not positively homogeneous (RELU6 is, below its clamp:
         * KS__QUANT_RELU6_HEADROOM); a residual input ties the channels to another tensor's; shared
         * weights serve other layers too. */
        bool relu6 = act == KS_ACT_RELU6;
        if (act != KS_ACT_NONE && act != KS_ACT_RELU && !relu6) continue;
        if (p->num_inputs > 3 && p->inputs[3] >= 0) continue;
        if (u.count[p->inputs[1]] != 1) continue;
        int32_t bias = p->num_inputs > 2 ? p->inputs[2] : -1;
        if (bias >= 0 && (!is_const_f32(&g->tensors[bias]) || u.count[bias] != 1 ||
                          ks__numel(g->tensors[bias].rank, g->tensors[bias].dims) != pg.co))
            continue;
        int64_t ch = pg.co;
        /* The rescaled tensors: the conv output, then through at most one PRELU (any slopes:
         * prelu(d x) = d prelu(x) for d > 0, so the PRELU itself needs no change). */
        int32_t chain[MAX_CHAIN];
        int num_chain = 0;
        int32_t t = p->outputs[0];
        chain[num_chain++] = t;
        uint32_t consumers[MAX_CONSUMERS];
        uint32_t num_cons = 0;
        bool ok = !u.graph_output[t];
        for (int step = 0; step < MAX_CHAIN && ok; step++) {
            num_cons = 0;
            for (uint32_t i = pi + 1; i < g->num_nodes && ok; i++) {
                const ks__node *n = &g->nodes[i];
                bool reads = false;
                for (uint32_t k = 0; k < n->num_inputs; k++)
                    reads |= n->inputs[k] == t;
                if (!reads) continue;
                if (num_cons == MAX_CONSUMERS)
                    ok = false;
                else
                    consumers[num_cons++] = i;
            }
            if (!ok || num_cons == 0) {
                ok = false;
                break;
            }
            const ks__node *n0 = &g->nodes[consumers[0]];
            if (step == 0 && num_cons == 1 && n0->op == KS_OP_PRELU && n0->inputs[0] == t &&
                n0->num_inputs == 2 && n0->inputs[1] != t && n0->num_outputs == 1 &&
                !u.graph_output[n0->outputs[0]]) {
                t = n0->outputs[0];
                chain[num_chain++] = t;
                continue;
            }
            break;
        }
        if (!ok) continue;
        geom cg[MAX_CONSUMERS];
        for (uint32_t k = 0; k < num_cons && ok; k++)
            ok = consumer_ok(g, &u, &g->nodes[consumers[k]], t, ch, &cg[k]);
        for (int k = 0; k < num_chain && ok; k++)
            ok = chan_of(c, chain[k], ch) != NULL;
        if (!ok) continue;
        free(share);
        free(wshare);
        free(factor);
        share = calloc((size_t)ch, sizeof(double));
        wshare = calloc((size_t)ch, sizeof(double));
        factor = malloc((size_t)ch * sizeof(double));
        if (!share || !wshare || !factor) {
            st = KS_STATUS_OUT_OF_MEMORY;
            goto fail;
        }
        /* a_c: the channel's |range| relative to the loudest channel, worst over the chain. */
        for (int k = 0; k < num_chain; k++) {
            const ks__quant_chan *cs = chan_of(c, chain[k], ch);
            double top = 0.0;
            for (int64_t j = 0; j < ch; j++) {
                double a = fmax(fabs((double)cs->min[j]), fabs((double)cs->max[j]));
                if (a > top) top = a; /* not fmax: gcc 12's aarch64 vectorizer crashes (ICE) */
            }
            if (!(top > 0.0)) continue;
            for (int64_t j = 0; j < ch; j++) {
                double a = fmax(fabs((double)cs->min[j]), fabs((double)cs->max[j])) / top;
                share[j] = fmax(share[j], a);
            }
        }
        /* r_c: input channel c's share of each group-1 consumer row's range, worst over rows. */
        bool constrained = false;
        for (uint32_t k = 0; k < num_cons; k++) {
            const geom *gm = &cg[k];
            if (gm->cpg == 1) continue; /* depthwise: its rows are per channel, rescaling is free */
            constrained = true;
            const float *w = g->tensors[g->nodes[consumers[k]].inputs[1]].data;
            for (int64_t o = 0; o < gm->co; o++) {
                const float *row = w + o * gm->per;
                double rmax = 0.0;
                for (int64_t i = 0; i < gm->per; i++) {
                    double a = fabs((double)row[i]);
                    if (a > rmax) rmax = a;
                }
                if (!(rmax > 0.0)) continue;
                for (int64_t i = 0; i < gm->per; i++) {
                    int64_t cin = in_channel(gm, o, i % gm->cpg);
                    wshare[cin] = fmax(wshare[cin], fabs((double)row[i]) / rmax);
                }
            }
        }
        double top = 0.0;
        for (int64_t j = 0; j < ch; j++) {
            double a = share[j], r = constrained ? wshare[j] : 1.0;
            if (a < KS__QUANT_DEAD_SHARE || r < KS__QUANT_DEAD_SHARE) {
                factor[j] = 1.0;
                continue;
            }
            factor[j] = constrained ? sqrt(r / a) : 1.0 / a;
        }
        /* Normalize so the loudest rescaled channel keeps its range (magnitudes stay familiar). */
        for (int64_t j = 0; j < ch; j++) {
            double a = share[j] * factor[j];
            if (a > top) top = a;
        }
        if (!(top > 0.0)) continue;
        bool any = false;
        for (int64_t j = 0; j < ch; j++) {
            double f = factor[j] / top;
            f = fmin(fmax(f, 1.0 / KS__QUANT_MAX_FACTOR), KS__QUANT_MAX_FACTOR);
            if (share[j] < KS__QUANT_DEAD_SHARE) f = 1.0;
            if (relu6) {
                double m = chan_of(c, chain[0], ch)->max[j];
                double cap = m > 0.0 ? 6.0 / (KS__QUANT_RELU6_HEADROOM * m) : 1.0;
                f = m >= KS__QUANT_RELU6_SATURATED || cap <= 1.0 ? 1.0 : fmin(fmax(f, 1.0), cap);
            }
            factor[j] = f;
            any |= fabs(f - 1.0) > 1e-3;
        }
        if (!any) continue;
        /* Rescale: producer rows and bias by d_c, consumer input channels by 1 / d_c. */
        float *pw = owned_f32(g, p->inputs[1]);
        float *pb = bias >= 0 ? owned_f32(g, bias) : NULL;
        if (!pw || (bias >= 0 && !pb)) {
            st = KS_STATUS_OUT_OF_MEMORY;
            goto fail;
        }
        for (int64_t o = 0; o < pg.co; o++) {
            for (int64_t i = 0; i < pg.per; i++)
                pw[o * pg.per + i] = (float)((double)pw[o * pg.per + i] * factor[o]);
            if (pb) pb[o] = (float)((double)pb[o] * factor[o]);
        }
        for (uint32_t k = 0; k < num_cons; k++) {
            const geom *gm = &cg[k];
            float *cw = owned_f32(g, g->nodes[consumers[k]].inputs[1]);
            if (!cw) {
                st = KS_STATUS_OUT_OF_MEMORY;
                goto fail;
            }
            for (int64_t o = 0; o < gm->co; o++)
                for (int64_t i = 0; i < gm->per; i++) {
                    int64_t cin = in_channel(gm, o, i % gm->cpg);
                    cw[o * gm->per + i] = (float)((double)cw[o * gm->per + i] / factor[cin]);
                }
        }
        for (int64_t j = 0; j < ch; j++) {
            double a = fmax(factor[j], 1.0 / factor[j]);
            if (a > info->max_factor) info->max_factor = a;
        }
        info->num_tensors += (uint32_t)num_chain;
        info->num_consumers += num_cons;
    }
    st = KS_STATUS_OK;
fail:
    if (st && err && err_cap) snprintf(err, err_cap, "equalization: out of memory");
    free(share);
    free(wshare);
    free(factor);
    uses_free(&u);
    return st;
}

/* ---- bias correction ---------------------------------------------------------------------- */

void ks__quant_biascorr_free(ks__quant_biascorr *bc) {
    if (bc->orig)
        for (uint32_t i = 0; i < bc->num_nodes; i++) {
            free(bc->orig[i]);
            if (bc->stored) free(bc->stored[i]);
            free(bc->fixed[i]);
        }
    free(bc->orig);
    free(bc->fixed);
    free(bc->stored);
    free(bc->bias_id);
    memset(bc, 0, sizeof(*bc));
}

/* Same rounding as rewrite.c's quant_weights (symmetric per row, [-127, 127]). */
static float row_scale(const float *row, int64_t per) {
    float m = 0.0f;
    for (int64_t k = 0; k < per; k++) {
        float a = fabsf(row[k]);
        if (isfinite(a) && a > m) m = a;
    }
    return m > 0.0f ? m / 127.0f : 1.0f;
}

static float quantized(float v, float s) {
    long r = isfinite(v) ? lroundf(v / s) : 0;
    r = r > 127 ? 127 : (r < -127 ? -127 : r);
    return (float)r * s;
}

static int64_t lead_pad(int32_t mode, int64_t explicit_lo, int64_t in, int64_t out, int64_t k_eff,
                        int64_t stride) {
    if (mode == KS_PAD_EXPLICIT) return explicit_lo;
    if (mode == KS_PAD_VALID) return 0;
    int64_t total = (out - 1) * stride + k_eff - in;
    if (total < 0) total = 0;
    return mode == KS_PAD_SAME_UPPER ? total / 2 : total - total / 2;
}

/* Share of the output positions of one axis at which tap k reads inside the input (the others
 * read the zero padding, which contributes no weight error). */
static double tap_share(int64_t k, int64_t in, int64_t out, int64_t stride, int64_t dil,
                        int64_t pad) {
    if (out <= 0) return 1.0;
    int64_t inside = 0;
    for (int64_t o = 0; o < out; o++) {
        int64_t i = o * stride - pad + k * dil;
        inside += i >= 0 && i < in;
    }
    return (double)inside / (double)out;
}

/* Per-tap share of reads inside the input for a CONV2D (taps KH*KW), from the calibrated shapes;
 * all ones when the shapes are unknown. */
static void tap_shares(const ks__graph *g, const ks__node *n, const ks__quant_plan *plan,
                       double *share, int64_t kh, int64_t kw) {
    for (int64_t t = 0; t < kh * kw; t++)
        share[t] = 1.0;
    if (!plan || n->op != KS_OP_CONV2D) return;
    int32_t x = n->inputs[0], y = n->outputs[0];
    if (plan->rank[x] != 4 || plan->rank[y] != 4) return;
    const int64_t *xd = &plan->dims[(size_t)x * KS_MAX_RANK],
                  *yd = &plan->dims[(size_t)y * KS_MAX_RANK];
    const int32_t *ip = n->ip;
    int64_t sh = ip[0] > 0 ? ip[0] : 1, sw = ip[1] > 0 ? ip[1] : 1;
    int64_t dh = ip[2] > 0 ? ip[2] : 1, dw = ip[3] > 0 ? ip[3] : 1;
    int64_t pt = lead_pad(ip[8], ip[4], xd[1], yd[1], (kh - 1) * dh + 1, sh);
    int64_t pl = lead_pad(ip[8], ip[5], xd[2], yd[2], (kw - 1) * dw + 1, sw);
    for (int64_t a = 0; a < kh; a++) {
        double r = tap_share(a, xd[1], yd[1], sh, dh, pt);
        for (int64_t b = 0; b < kw; b++)
            share[a * kw + b] = r * tap_share(b, xd[2], yd[2], sw, dw, pl);
    }
}

ks_status ks__quant_biascorr_init(ks__quant_biascorr *bc, ks__graph *g, const ks__quant_calib *c,
                                  const ks__quant_plan *plan, bool analytic) {
    uses u = {0};
    double *share = NULL;
    ks_status st = KS_STATUS_OUT_OF_MEMORY;
    memset(bc, 0, sizeof(*bc));
    uint32_t nn = g->num_nodes + 1;
    bc->num_nodes = g->num_nodes;
    bc->bias_id = malloc(nn * sizeof(int32_t));
    bc->orig = calloc(nn, sizeof(float *));
    bc->fixed = calloc(nn, sizeof(float *));
    if (!bc->bias_id || !bc->orig || !bc->fixed || uses_init(&u, g)) goto fail;
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        const ks__node *n = &g->nodes[i];
        geom gm;
        bc->bias_id[i] = -1;
        if ((n->op != KS_OP_CONV2D && n->op != KS_OP_FULLY_CONNECTED) || !conv_geom(g, n, &gm))
            continue;
        int32_t b = n->num_inputs > 2 ? n->inputs[2] : -1;
        if (b < 0 || !is_const_f32(&g->tensors[b]) || u.count[b] != 1 ||
            ks__numel(g->tensors[b].rank, g->tensors[b].dims) != gm.co)
            continue;
        const ks__quant_chan *cs = chan_of(c, n->inputs[0], gm.groups * gm.cpg);
        if (!cs) continue;
        const ks__tensor *wt = &g->tensors[n->inputs[1]];
        const float *w = wt->data;
        int64_t kh = wt->rank == 4 ? wt->dims[1] : 1, kw = wt->rank == 4 ? wt->dims[2] : 1;
        free(share);
        if (!(share = malloc((size_t)gm.taps * sizeof(double)))) goto fail;
        tap_shares(g, n, plan, share, kh, kw);
        bc->orig[i] = malloc((size_t)gm.co * sizeof(float));
        bc->fixed[i] = malloc((size_t)gm.co * sizeof(float));
        if (!bc->orig[i] || !bc->fixed[i]) goto fail;
        memcpy(bc->orig[i], g->tensors[b].data, (size_t)gm.co * sizeof(float));
        double bmax = 0.0, cmax = 0.0;
        for (int64_t o = 0; o < gm.co; o++) {
            const float *row = w + o * gm.per;
            float s = row_scale(row, gm.per);
            double e = 0.0;
            for (int64_t k = 0; k < gm.per; k++) {
                int64_t cin = in_channel(&gm, o, k % gm.cpg);
                double mean = cs->sum[cin] / (double)cs->count;
                if (!isfinite(row[k])) continue;
                e += ((double)quantized(row[k], s) - (double)row[k]) * mean * share[k / gm.cpg];
            }
            if (!analytic) e = 0.0; /* the caller measures the correction (empirical) */
            bc->fixed[i][o] = (float)((double)bc->orig[i][o] - e);
            bmax = fmax(bmax, fabs((double)bc->orig[i][o]));
            cmax = fmax(cmax, fabs(e));
        }
        if (!owned_f32(g, b)) goto fail;
        bc->bias_id[i] = b;
        bc->num_corrected++;
        if (bmax > 0.0) bc->max_rel_change = fmax(bc->max_rel_change, cmax / bmax);
    }
    uses_free(&u);
    free(share);
    return KS_STATUS_OK;
fail:
    uses_free(&u);
    free(share);
    ks__quant_biascorr_free(bc);
    return st;
}

void ks__quant_biascorr_apply(const ks__quant_biascorr *bc, ks__graph *g, const uint8_t *mode) {
    for (uint32_t i = 0; i < bc->num_nodes; i++) {
        int32_t b = bc->bias_id[i];
        if (b < 0) continue;
        ks__tensor *t = &g->tensors[b];
        /* graph-owned since ks__quant_biascorr_init (owned_f32) */
        const float *v = mode[i] == KS__QUANT_INT8     ? bc->fixed[i]
                         : bc->stored && bc->stored[i] ? bc->stored[i]
                                                       : bc->orig[i];
        memcpy((float *)t->data, v, t->size_bytes);
    }
}
