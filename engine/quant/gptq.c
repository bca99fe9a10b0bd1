/* Error-compensated int8 weight rounding for ks-quant (GPTQ / OBQ style; quant.h).
 *
 * For one output channel with weights w (length K) and inputs x, the output error of rounded
 * weights q is (w - q) . x, whose mean square over the calibration data is
 * (w - q)^T H (w - q) / n with H = sum x x^T. Rounding the weights one by one and moving each
 * rounding error onto the remaining weights along the optimal direction (the row of the Cholesky
 * factor of H^-1) minimizes that greedily (Frantar et al., GPTQ, 2022). Conv weights are OHWI, so a
 * channel's weight k = (ky * KW + kx) * Cin/groups + c, and x is the matching im2col vector of its
 * group (zero where the window reads padding). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant.h"

#define DAMP_FRACTION 0.01
#define MAX_PER_IMAGE 4096 /* sampled output positions per image and layer */
/* Multiply-adds per layer spent accumulating H (bounds the time on wide layers). */
#define SAMPLE_WORK 1.5e9
#define CLIP_STEPS 21 /* MSE clip search: ratios 1.00, 0.98, ..., 0.60 of max |w| */

static int64_t numel(int32_t rank, const int64_t *dims) {
    int64_t n = 1;
    for (int32_t i = 0; i < rank; i++)
        n *= dims[i];
    return n;
}

static size_t layer_bytes(const ks__quant_gptq_layer *l) {
    return (size_t)l->groups * (size_t)l->k * ((size_t)l->k + 1) * sizeof(double);
}

ks_status ks__quant_gptq_init(ks__quant_gptq *q, const ks__graph *g, const ks__quant_plan *plan,
                              size_t budget_bytes) {
    memset(q, 0, sizeof(*q));
    q->num_tensors = g->num_tensors;
    q->num_nodes = g->num_nodes;
    q->layers = calloc(g->num_nodes + 1, sizeof(ks__quant_gptq_layer));
    q->q = calloc(g->num_tensors + 1, sizeof(int8_t *));
    q->scale = calloc(g->num_tensors + 1, sizeof(float *));
    q->bias_shift = calloc(g->num_nodes + 1, sizeof(float *));
    uint8_t *uses = calloc(g->num_tensors + 1, 1);
    if (!q->layers || !q->q || !q->scale || !q->bias_shift || !uses) {
        free(uses);
        ks__quant_gptq_free(q);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    /* A weight tensor read by two nodes sees two input distributions: those keep nearest. */
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        const ks__node *n = &g->nodes[i];
        for (uint32_t j = 0; j < n->num_inputs; j++)
            if (n->inputs[j] >= 0 && uses[n->inputs[j]] < 2) uses[n->inputs[j]]++;
    }
    size_t used = 0;
    int batch = 0;
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        const ks__node *n = &g->nodes[i];
        if ((n->op != KS_OP_CONV2D && n->op != KS_OP_FULLY_CONNECTED) || n->num_inputs < 2 ||
            n->inputs[0] < 0 || n->inputs[1] < 0 || n->num_outputs < 1)
            continue;
        const ks__tensor *w = &g->tensors[n->inputs[1]];
        int32_t x_id = n->inputs[0], y_id = n->outputs[0];
        if (!(w->flags & KS__TENSOR_CONST) || w->dtype != KS_DTYPE_F32 || !w->data ||
            uses[n->inputs[1]] != 1 || w->rank < 2 || w->dims[0] <= 0)
            continue;
        if (plan->rank[x_id] < 2 || plan->rank[y_id] < 2) continue;
        ks__quant_gptq_layer l = {.node = i, .w_id = n->inputs[1], .x_id = x_id, .y_id = y_id};
        l.co = w->dims[0];
        const int64_t *xd = &plan->dims[(size_t)x_id * KS_MAX_RANK];
        const int64_t *yd = &plan->dims[(size_t)y_id * KS_MAX_RANK];
        int32_t xr = plan->rank[x_id], yr = plan->rank[y_id];
        if (n->op == KS_OP_FULLY_CONNECTED) {
            if (w->rank != 2 || xd[xr - 1] != w->dims[1]) continue;
            l.fc = true;
            l.groups = 1;
            l.kh = l.kw = 1;
            l.cig = l.k = w->dims[1];
        } else {
            if (w->rank != 4 || xr != 4 || yr != 4 || yd[3] != l.co) continue;
            l.groups = n->ip[9] > 0 ? n->ip[9] : 1;
            l.kh = w->dims[1];
            l.kw = w->dims[2];
            l.cig = w->dims[3];
            if (l.cig * l.groups != xd[3] || l.co % l.groups) continue;
            l.k = l.kh * l.kw * l.cig;
        }
        if (l.k <= 0 || l.k > KS__QUANT_GPTQ_MAX_K || layer_bytes(&l) > budget_bytes) {
            q->num_capped++;
            continue;
        }
        if (used + layer_bytes(&l) > budget_bytes) {
            batch++;
            used = 0;
        }
        used += layer_bytes(&l);
        l.batch = batch;
        q->layers[q->num_layers++] = l;
    }
    q->num_batches = q->num_layers ? batch + 1 : 0;
    free(uses);
    return KS_STATUS_OK;
}

ks_status ks__quant_gptq_alloc_batch(ks__quant_gptq *q, int batch) {
    for (uint32_t i = 0; i < q->num_layers; i++) {
        ks__quant_gptq_layer *l = &q->layers[i];
        if (l->batch != batch) continue;
        size_t kk = (size_t)l->groups * (size_t)l->k * (size_t)l->k;
        l->h = calloc(kk, sizeof(double));
        l->sum_x = calloc((size_t)l->groups * (size_t)l->k, sizeof(double));
        l->count = 0;
        if (!l->h || !l->sum_x) return KS_STATUS_OUT_OF_MEMORY;
    }
    return KS_STATUS_OK;
}

/* Adds v v^T (lower triangle) and v to one group's accumulators. */
static void accumulate(double *h, double *sum, const double *v, int64_t k) {
    for (int64_t i = 0; i < k; i++) {
        double xi = v[i];
        if (xi == 0.0) continue; /* post-ReLU inputs and padding are often zero */
        sum[i] += xi;
        double *row = &h[i * k];
        for (int64_t j = 0; j <= i; j++)
            row[j] += xi * v[j];
    }
}

/* Top / left padding of a conv axis (ops.inc CONV2D, ir.h ks__pad_mode). */
static int64_t pad_before(const ks__node *n, int axis, int64_t in, int64_t out, int64_t kernel) {
    int64_t stride = n->ip[axis] > 0 ? n->ip[axis] : 1,
            dil = n->ip[2 + axis] > 0 ? n->ip[2 + axis] : 1;
    int64_t total = (out - 1) * stride + (kernel - 1) * dil + 1 - in;
    if (total < 0) total = 0;
    switch (n->ip[8]) {
    case KS_PAD_SAME_UPPER:
        return total / 2;
    case KS_PAD_SAME_LOWER:
        return total - total / 2;
    case KS_PAD_VALID:
        return 0;
    default:
        return n->ip[4 + axis];
    }
}

void ks__quant_gptq_observe(ks__quant_gptq *q, int batch, const ks__graph *g,
                            const ks__quant_plan *plan, ks__quant_tensor_fn tensor, void *user,
                            int image, int num_images) {
    for (uint32_t li = 0; li < q->num_layers; li++) {
        ks__quant_gptq_layer *l = &q->layers[li];
        if (l->batch != batch || !l->h) continue;
        const ks__node *n = &g->nodes[l->node];
        const int64_t *xd = &plan->dims[(size_t)l->x_id * KS_MAX_RANK];
        const int64_t *yd = &plan->dims[(size_t)l->y_id * KS_MAX_RANK];
        int32_t xr = plan->rank[l->x_id];
        size_t num = 0;
        const float *x = tensor(user, l->x_id, &num);
        if (!x || (int64_t)num != numel(xr, xd)) continue;
        int64_t positions = l->fc ? (int64_t)num / l->k : yd[0] * yd[1] * yd[2];
        if (positions <= 0) continue;
        double cost = (double)l->groups * (double)l->k * (double)l->k / 2.0 + 1.0;
        double want = SAMPLE_WORK / cost;
        if (want < 2.0 * (double)l->k) want = 2.0 * (double)l->k;
        int64_t per = (int64_t)ceil(want / (num_images > 0 ? num_images : 1));
        if (per > MAX_PER_IMAGE) per = MAX_PER_IMAGE;
        if (per > positions) per = positions;
        if (per < 1) per = 1;
        double *v = malloc((size_t)l->groups * (size_t)l->k * sizeof(double));
        if (!v) continue; /* fewer samples; the damping keeps H usable */
        int64_t step = positions / per, offset = step > 1 ? (int64_t)image % step : 0;
        for (int64_t s = 0; s < per; s++) {
            int64_t p = s * positions / per + offset;
            if (p >= positions) p = positions - 1;
            if (l->fc) {
                for (int64_t k = 0; k < l->k; k++)
                    v[k] = x[p * l->k + k];
            } else {
                int64_t ih = xd[1], iw = xd[2], ci = xd[3], oh = yd[1], ow = yd[2];
                int64_t b = p / (oh * ow), oy = (p / ow) % oh, ox = p % ow;
                int64_t sh = n->ip[0] > 0 ? n->ip[0] : 1, sw = n->ip[1] > 0 ? n->ip[1] : 1;
                int64_t dh = n->ip[2] > 0 ? n->ip[2] : 1, dw = n->ip[3] > 0 ? n->ip[3] : 1;
                int64_t pt = pad_before(n, 0, ih, oh, l->kh), pl = pad_before(n, 1, iw, ow, l->kw);
                for (int64_t ky = 0; ky < l->kh; ky++)
                    for (int64_t kx = 0; kx < l->kw; kx++) {
                        int64_t y = oy * sh - pt + ky * dh, xx = ox * sw - pl + kx * dw;
                        bool inside = y >= 0 && y < ih && xx >= 0 && xx < iw;
                        const float *src = inside ? &x[((b * ih + y) * iw + xx) * ci] : NULL;
                        for (int64_t gi = 0; gi < l->groups; gi++)
                            for (int64_t c = 0; c < l->cig; c++)
                                v[gi * l->k + (ky * l->kw + kx) * l->cig + c] =
                                    src ? src[gi * l->cig + c] : 0.0;
                    }
            }
            for (int64_t gi = 0; gi < l->groups; gi++)
                accumulate(&l->h[(size_t)gi * (size_t)(l->k * l->k)], &l->sum_x[gi * l->k],
                           &v[gi * l->k], l->k);
            l->count++;
        }
        free(v);
    }
}

/* In-place lower Cholesky factor of the symmetric positive definite a (k x k, lower triangle
 * read). Returns false when a pivot is not positive. */
static bool cholesky(double *a, int64_t k) {
    for (int64_t j = 0; j < k; j++) {
        double d = a[j * k + j];
        for (int64_t p = 0; p < j; p++)
            d -= a[j * k + p] * a[j * k + p];
        if (!(d > 0.0)) return false;
        d = sqrt(d);
        a[j * k + j] = d;
        for (int64_t i = j + 1; i < k; i++) {
            double s = a[i * k + j];
            const double *ri = &a[i * k], *rj = &a[j * k];
            for (int64_t p = 0; p < j; p++)
                s -= ri[p] * rj[p];
            a[i * k + j] = s / d;
        }
    }
    return true;
}

/* u (k x k) = the upper Cholesky factor of h^-1 (h^-1 = u^T u), from the lower factor l of h
 * (u may alias l): invert l, form h^-1 = l^-T l^-1, factor it; u is the transposed lower factor. */
static bool inverse_factor(const double *l, double *u, double *tmp, int64_t k) {
    /* tmp = l^-1 (lower) */
    memset(tmp, 0, (size_t)(k * k) * sizeof(double));
    for (int64_t j = 0; j < k; j++) {
        tmp[j * k + j] = 1.0 / l[j * k + j];
        for (int64_t i = j + 1; i < k; i++) {
            double s = 0.0;
            for (int64_t p = j; p < i; p++)
                s -= l[i * k + p] * tmp[p * k + j];
            tmp[i * k + j] = s / l[i * k + i];
        }
    }
    /* u (full, symmetric) = tmp^T tmp = h^-1; element (i, j) = sum_{p >= max(i,j)} */
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j <= i; j++) {
            double s = 0.0;
            for (int64_t p = i; p < k; p++)
                s += tmp[p * k + i] * tmp[p * k + j];
            u[i * k + j] = s;
        }
    /* L = chol_lower(hinv) gives hinv = L L^T; U = L^T satisfies hinv = U^T U. */
    if (!cholesky(u, k)) return false;
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++)
            tmp[i * k + j] = j >= i ? u[j * k + i] : 0.0;
    memcpy(u, tmp, (size_t)(k * k) * sizeof(double));
    return true;
}

static int8_t round_clamp(double v) {
    double r = round(v);
    return (int8_t)(r > 127.0 ? 127 : (r < -127.0 ? -127 : r));
}

/* Per-channel scale with the least squared rounding error over CLIP_STEPS clip ratios. */
static double mse_scale(const float *w, int64_t k, double max_abs) {
    double best = max_abs / 127.0, best_err = INFINITY;
    for (int s = 0; s < CLIP_STEPS; s++) {
        double scale = max_abs * (1.0 - 0.02 * s) / 127.0, err = 0.0;
        for (int64_t i = 0; i < k && err < best_err; i++) {
            double d = (double)w[i] - scale * round_clamp((double)w[i] / scale);
            err += d * d;
        }
        if (err < best_err) {
            best_err = err;
            best = scale;
        }
    }
    return best;
}

/* (w - s q)^T h (w - s q), h symmetric with its lower triangle filled. */
static double proxy(const double *h, const float *w, const int8_t *q, double s, double *d,
                    int64_t k) {
    for (int64_t i = 0; i < k; i++)
        d[i] = (double)w[i] - s * q[i];
    double e = 0.0;
    for (int64_t i = 0; i < k; i++) {
        double r = 0.0;
        for (int64_t j = 0; j < i; j++)
            r += h[i * k + j] * d[j];
        e += d[i] * (2.0 * r + h[i * k + i] * d[i]);
    }
    return e;
}

/* Rounds w (k values) in order with scale s, each error moved onto the rest through u. */
static void gptq_row(const float *w, const double *u, double s, double *work, int8_t *q,
                     int64_t k) {
    for (int64_t i = 0; i < k; i++)
        work[i] = w[i];
    for (int64_t i = 0; i < k; i++) {
        q[i] = round_clamp(work[i] / s);
        double err = (work[i] - s * q[i]) / u[i * k + i];
        const double *ui = &u[i * k];
        for (int64_t j = i + 1; j < k; j++)
            work[j] -= err * ui[j];
    }
}

ks_status ks__quant_gptq_solve_batch(ks__quant_gptq *q, const ks__graph *g, int batch) {
    ks_status st = KS_STATUS_OK;
    for (uint32_t li = 0; li < q->num_layers && !st; li++) {
        ks__quant_gptq_layer *l = &q->layers[li];
        if (l->batch != batch || !l->h) continue;
        const ks__tensor *wt = &g->tensors[l->w_id];
        const float *wf = wt->data;
        int64_t k = l->k, per_group = l->co / l->groups;
        int8_t *qv = malloc((size_t)(l->co * k));
        float *sc = malloc((size_t)l->co * sizeof(float));
        float *shift = malloc((size_t)l->co * sizeof(float));
        double *hd = malloc((size_t)(k * k) * sizeof(double));
        double *u = malloc((size_t)(k * k) * sizeof(double));
        double *tmp = malloc((size_t)(k * k) * sizeof(double));
        double *work = malloc((size_t)k * sizeof(double));
        int8_t *cand = malloc((size_t)k);
        double layer_near = 0.0, layer_best = 0.0;
        bool ok = qv && sc && shift && hd && u && tmp && work && cand && l->count > 0;
        if (!(qv && sc && shift && hd && u && tmp && work && cand)) st = KS_STATUS_OUT_OF_MEMORY;
        for (int64_t gi = 0; gi < l->groups && ok; gi++) {
            double *h = &l->h[(size_t)gi * (size_t)(k * k)];
            const double *sum = &l->sum_x[gi * k];
            double mean_diag = 0.0;
            for (int64_t i = 0; i < k; i++) {
                for (int64_t j = 0; j < i; j++)
                    h[j * k + i] = h[i * k + j];
                mean_diag += h[i * k + i];
            }
            mean_diag /= (double)k;
            if (!(mean_diag > 0.0)) mean_diag = 1.0; /* a group whose inputs were all zero */
            memcpy(hd, h, (size_t)(k * k) * sizeof(double));
            for (int64_t i = 0; i < k; i++) {
                if (hd[i * k + i] == 0.0) hd[i * k + i] = mean_diag; /* dead input */
                hd[i * k + i] += DAMP_FRACTION * mean_diag;
            }
            memcpy(u, hd, (size_t)(k * k) * sizeof(double));
            bool have_u = cholesky(u, k) && inverse_factor(u, u, tmp, k);
            if (!have_u) memcpy(u, hd, (size_t)(k * k) * sizeof(double));
            for (int64_t o = gi * per_group; o < (gi + 1) * per_group; o++) {
                const float *w = &wf[o * k];
                int8_t *qo = &qv[o * k];
                double m = 0.0;
                for (int64_t i = 0; i < k; i++) {
                    double a = fabs((double)w[i]);
                    if (isfinite(a) && a > m) m = a;
                }
                double s_max = m > 0.0 ? m / 127.0 : 1.0;
                /* nearest with the max-abs scale: exactly rewrite.c's rounding */
                float s_near = m > 0.0 ? (float)m / 127.0f : 1.0f;
                for (int64_t i = 0; i < k; i++)
                    qo[i] = isfinite(w[i]) ? round_clamp((double)(w[i] / s_near)) : 0;
                double best = proxy(h, w, qo, s_near, work, k), near = best, best_s = s_near;
                double scales[2] = {s_max, m > 0.0 ? mse_scale(w, k, m) : 1.0};
                for (int c = 0; c < 2 && have_u && m > 0.0; c++) {
                    if (c == 1 && scales[1] == scales[0]) break;
                    gptq_row(w, u, scales[c], work, cand, k);
                    double e = proxy(h, w, cand, scales[c], work, k);
                    if (e < best) {
                        best = e;
                        best_s = scales[c];
                        memcpy(qo, cand, (size_t)k);
                    }
                }
                sc[o] = (float)best_s;
                double sh = 0.0;
                for (int64_t i = 0; i < k; i++)
                    sh += ((double)sc[o] * qo[i] - (double)w[i]) * sum[i];
                shift[o] = (float)(sh / (double)l->count);
                layer_near += near;
                layer_best += best;
            }
        }
        if (ok) {
            q->q[l->w_id] = qv;
            q->scale[l->w_id] = sc;
            q->bias_shift[l->node] = shift;
            qv = NULL;
            sc = NULL;
            shift = NULL;
            q->num_solved++;
            if (layer_near > 0.0) {
                q->proxy_nearest += 1.0;
                q->proxy_gptq += layer_best / layer_near;
                if (layer_best / layer_near > q->proxy_worst)
                    q->proxy_worst = layer_best / layer_near;
            }
        }
        free(qv);
        free(sc);
        free(shift);
        free(hd);
        free(u);
        free(tmp);
        free(work);
        free(cand);
        free(l->h);
        free(l->sum_x);
        l->h = NULL;
        l->sum_x = NULL;
    }
    return st;
}

void ks__quant_gptq_fix_bias(const ks__quant_gptq *q, ks__quant_biascorr *bc) {
    for (uint32_t i = 0; i < q->num_nodes && i < bc->num_nodes; i++) {
        if (!q->bias_shift[i] || bc->bias_id[i] < 0 || !bc->orig[i] || !bc->fixed[i]) continue;
        const ks__quant_gptq_layer *l = NULL;
        for (uint32_t j = 0; j < q->num_layers && !l; j++)
            if (q->layers[j].node == i) l = &q->layers[j];
        if (!l) continue;
        for (int64_t o = 0; o < l->co; o++)
            bc->fixed[i][o] = bc->orig[i][o] - q->bias_shift[i][o];
    }
}

ks_status ks__quant_biascorr_stored(ks__quant_biascorr *bc, const ks__graph *g,
                                    const ks__quant_gptq *q, float *const *stored_weights) {
    if (!bc->stored && !(bc->stored = calloc(bc->num_nodes + 1, sizeof(float *))))
        return KS_STATUS_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < q->num_nodes && i < bc->num_nodes && i < g->num_nodes; i++) {
        const ks__node *n = &g->nodes[i];
        if (!q->bias_shift[i] || bc->bias_id[i] < 0 || !bc->orig[i] || n->num_inputs < 2 ||
            n->inputs[1] < 0 || !stored_weights[n->inputs[1]] || !q->q[n->inputs[1]])
            continue;
        const ks__quant_gptq_layer *l = NULL;
        for (uint32_t j = 0; j < q->num_layers && !l; j++)
            if (q->layers[j].node == i) l = &q->layers[j];
        if (!l) continue;
        free(bc->stored[i]);
        if (!(bc->stored[i] = malloc((size_t)l->co * sizeof(float))))
            return KS_STATUS_OUT_OF_MEMORY;
        /* A bias that was all f16 (TFLite's fp16 weights) stays f16: it is stored half the
         * size (.ksm 1.2 coder F16_BCODE), and f16 resolution is far finer than the shift. */
        bool f16 = true;
        for (int64_t o = 0; o < l->co && f16; o++) {
            float back = ks__f16_to_f32(ks__f32_to_f16(bc->orig[i][o]));
            f16 = memcmp(&back, &bc->orig[i][o], sizeof(float)) == 0;
        }
        for (int64_t o = 0; o < l->co; o++) {
            float v = bc->orig[i][o] - q->bias_shift[i][o];
            bc->stored[i][o] = f16 ? ks__f16_to_f32(ks__f32_to_f16(v)) : v;
        }
    }
    return KS_STATUS_OK;
}

void ks__quant_gptq_free(ks__quant_gptq *q) {
    for (uint32_t i = 0; q->layers && i < q->num_layers; i++) {
        free(q->layers[i].h);
        free(q->layers[i].sum_x);
    }
    for (uint32_t i = 0; q->q && i < q->num_tensors; i++) {
        free(q->q[i]);
        free(q->scale[i]);
    }
    for (uint32_t i = 0; q->bias_shift && i < q->num_nodes; i++)
        free(q->bias_shift[i]);
    free(q->layers);
    free(q->q);
    free(q->scale);
    free(q->bias_shift);
    memset(q, 0, sizeof(*q));
}
