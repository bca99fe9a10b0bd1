/* Activation statistics and clipping-range selection for ks-quant (quant.h).
 *
 * Percentile and KL work on a histogram of |x| rather than of x: one histogram per tensor and one
 * threshold T, applied as [max(min, -T), min(max, T)]. Post-ReLU tensors (min >= 0) lose nothing;
 * for signed tensors the asymmetric zero point still uses the observed min/max inside T. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant.h"

ks_status ks__quant_calib_init(ks__quant_calib *c, uint32_t num_tensors) {
    memset(c, 0, sizeof(*c));
    c->stats = calloc(num_tensors ? num_tensors : 1, sizeof(ks__quant_stat));
    c->chan = calloc(num_tensors ? num_tensors : 1, sizeof(ks__quant_chan));
    if (!c->stats || !c->chan) {
        free(c->stats);
        free(c->chan);
        memset(c, 0, sizeof(*c));
        return KS_STATUS_OUT_OF_MEMORY;
    }
    c->num_tensors = num_tensors;
    return KS_STATUS_OK;
}

static void chan_free(ks__quant_chan *ch) {
    free(ch->min);
    free(ch->max);
    free(ch->sum);
    memset(ch, 0, sizeof(*ch));
}

void ks__quant_calib_free(ks__quant_calib *c) {
    if (c->stats)
        for (uint32_t i = 0; i < c->num_tensors; i++)
            free(c->stats[i].hist);
    if (c->chan)
        for (uint32_t i = 0; i < c->num_tensors; i++)
            chan_free(&c->chan[i]);
    free(c->stats);
    free(c->chan);
    memset(c, 0, sizeof(*c));
}

static double abs_max(const ks__quant_stat *s) {
    double a = fabs((double)s->min), b = fabs((double)s->max);
    return a > b ? a : b;
}

ks_status ks__quant_calib_observe(ks__quant_calib *c, uint32_t id, const float *x, size_t n,
                                  int pass) {
    if (id >= c->num_tensors || n == 0) return KS_STATUS_OK;
    ks__quant_stat *s = &c->stats[id];
    if (pass == 1) {
        float lo = s->seen ? s->min : INFINITY, hi = s->seen ? s->max : -INFINITY;
        for (size_t i = 0; i < n; i++) {
            float v = x[i];
            if (!isfinite(v)) continue; /* an inf/NaN would make the scale meaningless */
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        if (lo > hi) return KS_STATUS_OK;
        s->min = lo;
        s->max = hi;
        s->seen = true;
        return KS_STATUS_OK;
    }
    if (!s->seen) return KS_STATUS_OK;
    if (!s->hist) {
        s->hist = calloc(KS__QUANT_HIST_BINS, sizeof(uint64_t));
        if (!s->hist) return KS_STATUS_OUT_OF_MEMORY;
    }
    double am = abs_max(s);
    if (am <= 0.0) {
        s->hist[0] += n;
        return KS_STATUS_OK;
    }
    double inv_w = KS__QUANT_HIST_BINS / am;
    for (size_t i = 0; i < n; i++) {
        double v = fabs((double)x[i]);
        if (!isfinite(v)) continue;
        double b = v * inv_w;
        size_t k = b >= KS__QUANT_HIST_BINS - 1 ? KS__QUANT_HIST_BINS - 1 : (size_t)b;
        s->hist[k]++;
    }
    return KS_STATUS_OK;
}

ks_status ks__quant_calib_observe_channels(ks__quant_calib *c, uint32_t id, const float *x,
                                           size_t n, uint32_t channels) {
    if (id >= c->num_tensors || !c->chan || channels == 0 || n == 0 || n % channels) {
        return KS_STATUS_OK;
    }
    ks__quant_chan *ch = &c->chan[id];
    if (ch->channels && ch->channels != channels) { /* shape changed: not per-channel after all */
        chan_free(ch);
        ch->channels = UINT32_MAX;
    }
    if (ch->channels == UINT32_MAX) return KS_STATUS_OK;
    if (!ch->channels) {
        ch->min = malloc(channels * sizeof(float));
        ch->max = malloc(channels * sizeof(float));
        ch->sum = calloc(channels, sizeof(double));
        if (!ch->min || !ch->max || !ch->sum) {
            chan_free(ch);
            return KS_STATUS_OUT_OF_MEMORY;
        }
        for (uint32_t k = 0; k < channels; k++) {
            ch->min[k] = INFINITY;
            ch->max[k] = -INFINITY;
        }
        ch->channels = channels;
    }
    size_t rows = n / channels;
    for (size_t r = 0; r < rows; r++) {
        const float *v = x + r * channels;
        for (uint32_t k = 0; k < channels; k++) {
            float a = v[k];
            if (!isfinite(a)) continue;
            ch->min[k] = a < ch->min[k] ? a : ch->min[k];
            ch->max[k] = a > ch->max[k] ? a : ch->max[k];
            ch->sum[k] += a;
        }
    }
    ch->count += rows;
    return KS_STATUS_OK;
}

/* Bin count (1..KS__QUANT_HIST_BINS) below the threshold holding `percentile` % of the mass. */
static size_t percentile_bins(const uint64_t *h, double percentile) {
    uint64_t total = 0;
    for (size_t i = 0; i < KS__QUANT_HIST_BINS; i++)
        total += h[i];
    if (total == 0) return KS__QUANT_HIST_BINS;
    double want = (double)total * percentile / 100.0, acc = 0.0;
    for (size_t i = 0; i < KS__QUANT_HIST_BINS; i++) {
        acc += (double)h[i];
        if (acc >= want) return i + 1;
    }
    return KS__QUANT_HIST_BINS;
}

/* Entropy calibration: the bin count whose clipped distribution, quantized to `levels` levels,
 * loses the least information (KL(P || Q)). Candidates step by 16 bins to keep it cheap. */
static size_t kl_bins(const uint64_t *h, size_t levels) {
    static const size_t step = 16;
    double p[KS__QUANT_HIST_BINS], q[KS__QUANT_HIST_BINS];
    size_t best = KS__QUANT_HIST_BINS;
    double best_kl = INFINITY;
    uint64_t tail_from[KS__QUANT_HIST_BINS + 1];
    tail_from[KS__QUANT_HIST_BINS] = 0;
    for (size_t i = KS__QUANT_HIST_BINS; i-- > 0;)
        tail_from[i] = tail_from[i + 1] + h[i];
    if (tail_from[0] == 0) return KS__QUANT_HIST_BINS;
    for (size_t nb = levels; nb <= KS__QUANT_HIST_BINS; nb += step) {
        double psum = 0.0;
        for (size_t i = 0; i < nb; i++)
            p[i] = (double)h[i];
        p[nb - 1] += (double)tail_from[nb];
        for (size_t i = 0; i < nb; i++)
            psum += p[i];
        if (psum <= 0.0) continue;
        /* Q: each of `levels` chunks spreads its mass evenly over its non-empty bins. */
        for (size_t j = 0; j < levels; j++) {
            size_t b0 = j * nb / levels, b1 = (j + 1) * nb / levels;
            double sum = 0.0;
            size_t nonzero = 0;
            for (size_t i = b0; i < b1; i++) {
                sum += (double)h[i];
                nonzero += h[i] != 0;
            }
            if (j == levels - 1) {
                sum += (double)tail_from[nb];
                if (h[nb - 1] == 0 && tail_from[nb]) nonzero++;
            }
            for (size_t i = b0; i < b1; i++) {
                int occupied = p[i] > 0.0;
                q[i] = occupied && nonzero ? sum / (double)nonzero : 0.0;
            }
        }
        double qsum = 0.0;
        for (size_t i = 0; i < nb; i++)
            qsum += q[i];
        if (qsum <= 0.0) continue;
        double kl = 0.0;
        for (size_t i = 0; i < nb; i++) {
            if (p[i] <= 0.0) continue;
            double pi = p[i] / psum, qi = q[i] / qsum;
            kl += pi * log(pi / (qi > 1e-12 ? qi : 1e-12));
        }
        if (kl < best_kl) {
            best_kl = kl;
            best = nb;
        }
    }
    return best;
}

/* Bin count whose clip threshold minimizes the expected squared error: values above the
 * threshold clip to it, values below round with step (threshold / levels) (uniform error,
 * step^2 / 12). */
static size_t mse_bins(const uint64_t *h, size_t levels) {
    size_t best = KS__QUANT_HIST_BINS;
    double best_err = INFINITY;
    for (size_t nb = 16; nb <= KS__QUANT_HIST_BINS; nb += 8) {
        double step = (double)nb / (double)levels, err = 0.0, inside = 0.0;
        for (size_t i = 0; i < KS__QUANT_HIST_BINS; i++) {
            if (!h[i]) continue;
            if (i < nb) {
                inside += (double)h[i];
            } else {
                double d = (double)i + 0.5 - (double)nb;
                err += (double)h[i] * d * d;
            }
        }
        err += inside * step * step / 12.0;
        if (err < best_err) {
            best_err = err;
            best = nb;
        }
    }
    return best;
}

bool ks__quant_calib_range(const ks__quant_calib *c, uint32_t id, ks__quant_method method,
                           double percentile, float *lo, float *hi) {
    if (id >= c->num_tensors || !c->stats[id].seen) return false;
    const ks__quant_stat *s = &c->stats[id];
    float l = s->min, h = s->max;
    if (method != KS__QUANT_METHOD_MINMAX && s->hist) {
        double am = abs_max(s);
        size_t levels = s->min < 0.0f ? 128 : 256;
        size_t nb = method == KS__QUANT_METHOD_KL    ? kl_bins(s->hist, levels)
                    : method == KS__QUANT_METHOD_MSE ? mse_bins(s->hist, levels)
                                                     : percentile_bins(s->hist, percentile);
        float t = (float)(am * (double)nb / KS__QUANT_HIST_BINS);
        if (l < -t) l = -t;
        if (h > t) h = t;
    }
    *lo = l < 0.0f ? l : 0.0f;
    *hi = h > 0.0f ? h : 0.0f;
    return true;
}

void ks__quant_qparams_from_range(float lo, float hi, float *scale, int32_t *zero_point) {
    if (lo > 0.0f) lo = 0.0f;
    if (hi < 0.0f) hi = 0.0f;
    double range = (double)hi - (double)lo;
    if (!(range > 1e-12)) range = 1e-12; /* constant-zero tensor: any positive scale works */
    double s = range / 255.0;
    double zp = -128.0 - (double)lo / s;
    long z = lround(zp);
    if (z < -128) z = -128;
    if (z > 127) z = 127;
    *scale = (float)s;
    *zero_point = (int32_t)z;
}
