/* Bias correction in the quantization pipeline (ptq_internal.h): the analytic correction
 * (equalize.c computes it; GPTQ's mean error replaces nearest rounding's), the empirical one
 * measured here layer by layer on the int8 model, and the automatic choice between them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptq_internal.h"

#define BIAS_IMAGES 8  /* images the mean errors are measured on, spread over the set */
#define BIAS_ROUNDS 48 /* at most this many measuring runs; deeper nets group depth levels */
/* Channels with fewer informative values keep their bias: a mean of a few values (a 1x1 squeeze-
 * excite conv sees one per image) is noise, and correcting by it hurt (selfie masks). */
#define BIAS_MIN_SAMPLES 256

/* Whether a conv/FC output value pair is informative about the pre-activation shift: both inside
 * the activation's linear part and q not saturated (clipping is not a bias to correct). */
static bool linear_part(int act, double f, double v) {
    switch (act) {
    case KS_ACT_NONE:
        return true;
    case KS_ACT_RELU:
        return f > 0.0 && v > 0.0;
    case KS_ACT_RELU6:
        return f > 0.0 && v > 0.0 && f < 6.0 && v < 6.0;
    case KS_ACT_RELU_N1_TO_1:
        return f > -1.0 && v > -1.0 && f < 1.0 && v < 1.0;
    default:
        return false;
    }
}

/* Nagel et al.'s empirical bias correction: per int8 conv/FC output channel, the mean of
 * (int8 model - fp32 model) over the images, subtracted from the bias. Layers are corrected in
 * depth order (a layer's depth counts the corrected layers on its longest input path), each depth
 * measured with everything upstream already corrected, so an upstream shift is not corrected
 * twice; the error that quantization noise builds up through the activations is included. */
static ks_status empirical_bias(const ks__quant_ctx *c, ks__graph *src, const ks__quant_plan *plan,
                                ks__quant_biascorr *bc, int *rounds_out) {
    uint32_t nn = src->num_nodes, nt = src->num_tensors;
    int32_t *lvl_t = calloc(nt + 1, sizeof(int32_t)), *lvl = malloc((nn + 1) * sizeof(int32_t));
    double **sum = calloc(nn + 1, sizeof(double *)), **cnt = calloc(nn + 1, sizeof(double *));
    ks__graph qg;
    ks__quant_map map = {0};
    ks_model *qm = NULL;
    ks_session *qs = NULL, *fs = c->fs;
    char err[1024];
    ks_status st = KS_STATUS_OK;
    int max_lvl = -1;
    ks__graph_init(&qg, NULL);
    *rounds_out = 0;
    if (!lvl_t || !lvl || !sum || !cnt) goto oom;
    for (uint32_t i = 0; i < nn; i++) {
        const ks__node *n = &src->nodes[i];
        int32_t l = 0;
        for (uint32_t k = 0; k < n->num_inputs; k++)
            if (n->inputs[k] >= 0 && lvl_t[n->inputs[k]] > l) l = lvl_t[n->inputs[k]];
        bool corrected = bc->bias_id[i] >= 0 && plan->mode[i] == KS__QUANT_INT8;
        lvl[i] = corrected ? l : -1;
        if (corrected && l > max_lvl) max_lvl = l;
        for (uint32_t k = 0; k < n->num_outputs; k++)
            if (n->outputs[k] >= 0) lvl_t[n->outputs[k]] = l + (corrected ? 1 : 0);
    }
    int step = (max_lvl + 1 + BIAS_ROUNDS - 1) / BIAS_ROUNDS;
    if (step < 1) step = 1;
    int n_img = c->num_images < BIAS_IMAGES ? c->num_images : BIAS_IMAGES;
    for (int from = 0; from <= max_lvl; from += step) {
        (*rounds_out)++;
        ks__quant_progress(c, "bias correction", from, max_lvl + 1);
        ks__quant_biascorr_apply(bc, src, plan->mode);
        ks__graph_free(&qg);
        ks__graph_init(&qg, NULL);
        ks__quant_map_free(&map);
        ks_session_destroy(qs);
        qs = NULL;
        ks_model_destroy(qm);
        qm = NULL;
        err[0] = '\0';
        if ((st = ks__quant_build(src, plan, &qg, &map, NULL, err, sizeof(err))) ||
            (st = ks__quant_load_graph(&qg, &qm, err, sizeof(err)))) {
            st = ks__quant_fail_engine(c, st, "bias correction: %s %s", err, ks_last_error(NULL));
            goto done;
        }
        if ((st = ks__quant_open_session(c, qm, &qs))) goto done;
        for (uint32_t i = 0; i < nn; i++) {
            if (lvl[i] < from || lvl[i] >= from + step) continue;
            const ks__tensor *b = &src->tensors[bc->bias_id[i]];
            size_t ch = b->size_bytes / sizeof(float);
            if (!(sum[i] = calloc(ch, sizeof(double))) || !(cnt[i] = calloc(ch, sizeof(double))))
                goto oom;
        }
        for (int k = 0; k < n_img; k++) {
            const char *img = ks__quant_eval_image(c, k, n_img);
            if ((st = ks__quant_fill_input(c, fs, img, 0)) ||
                (st = ks__quant_fill_input(c, qs, img, 0)) || (st = ks__quant_run_session(c, fs)) ||
                (st = ks__quant_run_session(c, qs)))
                goto done;
            for (uint32_t i = 0; i < nn; i++) {
                if (!sum[i]) continue;
                const ks__node *n = &src->nodes[i];
                int32_t y = n->outputs[0], qid = map.i8_id[y];
                int act = n->op == KS_OP_CONV2D ? n->ip[10] : n->ip[0];
                size_t ch = src->tensors[bc->bias_id[i]].size_bytes / sizeof(float);
                ks_tensor rt, qt;
                if (qid < 0 || ks_session_tensor(fs, (uint32_t)y, &rt) || !rt.data ||
                    ks_session_tensor(qs, (uint32_t)qid, &qt) || !qt.data ||
                    qt.info.dtype != KS_DTYPE_I8 ||
                    qt.size_bytes * sizeof(float) != rt.size_bytes || qt.size_bytes % ch)
                    continue;
                const float *f = rt.data;
                const int8_t *q = qt.data;
                for (size_t j = 0; j < qt.size_bytes; j++) {
                    if (q[j] == -128 || q[j] == 127 || !isfinite(f[j])) continue;
                    double v = (double)qt.info.scale * (q[j] - qt.info.zero_point);
                    if (!linear_part(act, f[j], v)) continue;
                    sum[i][j % ch] += v - (double)f[j];
                    cnt[i][j % ch] += 1.0;
                }
            }
        }
        for (uint32_t i = 0; i < nn; i++) {
            if (!sum[i]) continue;
            size_t ch = src->tensors[bc->bias_id[i]].size_bytes / sizeof(float);
            for (size_t k = 0; k < ch; k++)
                if (cnt[i][k] >= BIAS_MIN_SAMPLES)
                    bc->fixed[i][k] -= (float)(sum[i][k] / cnt[i][k]);
            free(sum[i]);
            free(cnt[i]);
            sum[i] = cnt[i] = NULL;
        }
    }
    ks__quant_progress(c, "bias correction", max_lvl + 1, max_lvl + 1);
    ks__quant_biascorr_apply(bc, src, plan->mode);
    goto done;
oom:
    st = ks__quant_oom(c, "bias correction");
done:
    if (sum)
        for (uint32_t i = 0; i < nn; i++) {
            free(sum[i]);
            free(cnt[i]);
        }
    free(sum);
    free(cnt);
    free(lvl_t);
    free(lvl);
    ks_session_destroy(qs);
    ks_model_destroy(qm);
    ks__graph_free(&qg);
    ks__quant_map_free(&map);
    return st;
}

/* Both corrections, measured on the worst checked output of the plan as it stands; the better
 * one is kept in bc (empirical wins on BlazeFace, loses on selfie). */
static ks_status auto_bias(const ks__quant_ctx *c, ks__graph *src, ks__quant_plan *plan,
                           const ks__quant_calib *calib, const ks__quant_outref *r,
                           ks__quant_biascorr *bc, ks__quant_bias *used_out, int *rounds) {
    ks__quant_biascorr emp = {0};
    double w_analytic = 0.0, w_empirical = 0.0;
    ks_status st = ks__quant_plan_worst_cosine(c, src, plan, bc, r, &w_analytic);
    /* The graph now holds the analytic biases: put the originals back first, or the empirical
     * correction would start from (and "restore" fp32 layers to) them. */
    uint8_t *all_fp32 = calloc(src->num_nodes + 1, 1); /* KS__QUANT_FP32 == 0 */
    if (!st && !all_fp32) st = ks__quant_oom(c, NULL);
    if (!st) ks__quant_biascorr_apply(bc, src, all_fp32);
    free(all_fp32);
    if (!st && ks__quant_biascorr_init(&emp, src, calib, plan, false)) st = ks__quant_oom(c, NULL);
    if (!st) {
        ks__quant_plan_decide(plan, src);
        st = empirical_bias(c, src, plan, &emp, rounds);
    }
    if (!st) st = ks__quant_plan_worst_cosine(c, src, plan, &emp, r, &w_empirical);
    if (st) {
        ks__quant_biascorr_free(&emp);
        return st;
    }
    ks__quant_log(c, KS_LOG_INFO,
                  "bias correction auto: worst output cosine %.5f analytic, %.5f empirical",
                  w_analytic, w_empirical);
    if (w_empirical > w_analytic) {
        ks__quant_biascorr_free(bc);
        *bc = emp;
        *used_out = KS__QUANT_BIAS_EMPIRICAL;
    } else {
        ks__quant_biascorr_free(&emp);
        *used_out = KS__QUANT_BIAS_ANALYTIC;
    }
    ks__quant_plan_decide(plan, src);
    ks__quant_biascorr_apply(bc, src, plan->mode);
    return KS_STATUS_OK;
}

ks_status ks__quant_correct_bias(const ks__quant_ctx *c, ks__graph *src, ks__quant_plan *plan,
                                 const ks__quant_calib *calib, const ks__quant_gptq *gq,
                                 const ks__quant_outref *r, ks__quant_biascorr *bc,
                                 ks__quant_bias *used_out, char *passes, size_t cap) {
    ks__quant_bias mode = c->o->bias_correction;
    int rounds = 0;
    ks_status st;
    if (ks__quant_biascorr_init(bc, src, calib, plan, mode != KS__QUANT_BIAS_EMPIRICAL))
        return ks__quant_oom(c, NULL);
    /* The analytic correction assumes nearest rounding: use the mean error of the weights
     * actually written instead (measured with the layer's real inputs, padding included). */
    if (c->o->gptq && mode != KS__QUANT_BIAS_EMPIRICAL) ks__quant_gptq_fix_bias(gq, bc);
    ks__quant_plan_decide(plan, src);
    if (mode == KS__QUANT_BIAS_EMPIRICAL && (st = empirical_bias(c, src, plan, bc, &rounds)))
        return st;
    if (mode == KS__QUANT_BIAS_AUTO && (st = auto_bias(c, src, plan, calib, r, bc, &mode, &rounds)))
        return st;
    bool emp = mode == KS__QUANT_BIAS_EMPIRICAL;
    size_t len = strlen(passes);
    snprintf(passes + len, cap - len, "%sbias-corrected %u layers (%s%s)", len ? "; " : "",
             bc->num_corrected, emp ? "empirical" : "analytic", emp ? ", depth order" : "");
    ks__quant_log(c, KS_LOG_INFO, "bias correction (%s): %u layers (%d measuring runs)",
                  emp ? "empirical" : "analytic", bc->num_corrected, rounds);
    *used_out = mode;
    return KS_STATUS_OK;
}
