/* The weights the quantized file stores (ptq_internal.h): the GPTQ pass over the calibration
 * images (gptq.c solves), the rounded weights of the layers left in fp32 (options.
 * fallback_weights: int8 codes with their scales, or f16 values), the writer options that store
 * exactly those values, and the read-back check that the file computes what was checked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ptq_internal.h"
#include "weight_quant.h"

/* ---- error-compensated weight rounding (options.gptq) ------------------------------------- */

static const float *session_tensor(void *user, int32_t id, size_t *num) {
    ks_tensor rt;
    if (ks_session_tensor(user, (uint32_t)id, &rt) || !rt.data || rt.info.dtype != KS_DTYPE_F32)
        return NULL;
    *num = rt.size_bytes / sizeof(float);
    return rt.data;
}

/* Hessian budget of one pass over the images (layers beyond it take another pass). */
#define GPTQ_BUDGET_BYTES ((size_t)192 << 20)

ks_status ks__quant_gptq_weights(const ks__quant_ctx *c, const ks__graph *g, ks__quant_plan *plan,
                                 ks__quant_gptq *gq) {
    double t0 = (double)clock() / CLOCKS_PER_SEC;
    ks_status st;
    if (ks__quant_gptq_init(gq, g, plan, GPTQ_BUDGET_BYTES)) goto oom;
    for (int b = 0; b < gq->num_batches; b++) {
        char what[64];
        snprintf(what, sizeof(what), "weight rounding (%d/%d)", b + 1, gq->num_batches);
        if (ks__quant_gptq_alloc_batch(gq, b)) goto oom;
        for (int i = 0; i < c->num_images; i++) {
            ks__quant_progress(c, what, i, c->num_images);
            if ((st = ks__quant_fill_input(c, c->fs, c->images[i], 0)) ||
                (st = ks__quant_run_session(c, c->fs)))
                return st;
            ks__quant_gptq_observe(gq, b, g, plan, session_tensor, c->fs, i, c->num_images);
        }
        ks__quant_progress(c, what, c->num_images, c->num_images);
        if (ks__quant_gptq_solve_batch(gq, g, b)) goto oom;
    }
    if (c->o->gptq) plan->gptq = gq; /* else only the fp32 layers' stored weights use it */
    ks__quant_log(c, KS_LOG_INFO,
                  "gptq weight rounding: %u layers (%u above %d inputs per channel keep nearest), "
                  "H-weighted error %.3f of nearest's (mean per layer; worst layer %.3f), %.1f s",
                  gq->num_solved, gq->num_capped, KS__QUANT_GPTQ_MAX_K,
                  gq->proxy_nearest > 0 ? gq->proxy_gptq / gq->proxy_nearest : 1.0,
                  gq->proxy_nearest > 0 ? gq->proxy_worst : 1.0,
                  (double)clock() / CLOCKS_PER_SEC - t0);
    return KS_STATUS_OK;
oom:
    return ks__quant_oom(c, "weight rounding");
}

/* ---- stored weights of the fp32 layers (options.fallback_weights) ------------------------ */

void ks__quant_fw_free(ks__quant_fw *fw) {
    for (uint32_t t = 0; fw->values && t < fw->num_tensors; t++) {
        free(fw->values[t]);
        free(fw->scales[t]);
    }
    free(fw->values);
    free(fw->scales);
    memset(fw, 0, sizeof(*fw));
}

/* int8 rounding of one weight tensor without gptq: the .ksm writer's own (per-channel scale with
 * the least squared error, ks__wenc_encode), read back from a raw payload (f32 scales first). */
static ks_status nearest_int8(const ks__tensor *w, float *values, float *scales) {
    ks__wenc_params p = {
        .encoding = KS__WENC_INT8_CHANNEL, .coder = KS__WCODER_RAW, .scale_dtype = KS_DTYPE_F32};
    uint64_t n = (uint64_t)ks__numel(w->rank, w->dims), oc = (uint64_t)w->dims[0];
    uint8_t *payload = NULL;
    size_t size = 0;
    ks_status st = ks__wenc_encode(NULL, w->data, n, oc, &p, &payload, &size, values);
    if (st) return st;
    for (uint64_t c = 0; c < oc && c * 4 + 4 <= size; c++) {
        const uint8_t *b = payload + c * 4;
        uint32_t u =
            (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        memcpy(&scales[c], &u, 4);
    }
    ks__free(NULL, payload);
    return KS_STATUS_OK;
}

ks_status ks__quant_fw_init(const ks__quant_ctx *c, const ks__graph *g, const ks__quant_gptq *gq,
                            ks__quant_fw *fw) {
    memset(fw, 0, sizeof(*fw));
    fw->num_tensors = g->num_tensors;
    fw->values = calloc(g->num_tensors + 1, sizeof(float *));
    fw->scales = calloc(g->num_tensors + 1, sizeof(float *));
    /* the writer's rule (ksm.h), and one reader only: each layer gets its own rounding */
    uint8_t *uses = calloc(g->num_tensors + 1, 1);
    uint8_t *compressible = calloc(g->num_tensors + 1, 1);
    if (!fw->values || !fw->scales || !uses || !compressible ||
        ks__ksm_compressible_weights(g, compressible))
        goto oom;
    for (uint32_t i = 0; i < g->num_nodes; i++)
        for (uint32_t j = 0; j < g->nodes[i].num_inputs; j++) {
            int32_t t = g->nodes[i].inputs[j];
            if (t >= 0 && uses[t] < 2) uses[t]++;
        }
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        const ks__node *n = &g->nodes[i];
        if (n->num_inputs < 2 || n->inputs[1] < 0 || !compressible[n->inputs[1]] ||
            uses[n->inputs[1]] != 1)
            continue;
        int32_t id = n->inputs[1];
        const ks__tensor *w = &g->tensors[id];
        int64_t total = ks__numel(w->rank, w->dims);
        if (!w->data) continue;
        int64_t oc = w->dims[0], per = total / oc;
        const float *wf = w->data;
        bool finite = true;
        for (int64_t k = 0; k < total; k++)
            finite = finite && isfinite(wf[k]);
        if (!finite) continue; /* the writer keeps such weights F32 */
        float *v = malloc((size_t)total * sizeof(float));
        if (!v) goto oom;
        fw->values[id] = v;
        if (c->o->fallback_weights == KS__QUANT_FWEIGHTS_FP16) {
            for (int64_t k = 0; k < total; k++)
                v[k] = ks__f16_to_f32(ks__f32_to_f16(wf[k]));
            fw->num_fp16++;
            continue;
        }
        float *sc = malloc((size_t)oc * sizeof(float));
        if (!sc) goto oom;
        fw->scales[id] = sc;
        if (gq && gq->q && gq->q[id]) {
            for (int64_t ch = 0; ch < oc; ch++) {
                sc[ch] = gq->scale[id][ch];
                for (int64_t k = 0; k < per; k++) /* the reader's expression, bit for bit */
                    v[ch * per + k] = (float)gq->q[id][ch * per + k] * sc[ch];
            }
            fw->num_gptq++;
        } else {
            ks_status st = nearest_int8(w, v, sc);
            if (st == KS_STATUS_OUT_OF_MEMORY) goto oom;
            if (st) { /* not representable: stays F32 */
                free(v);
                free(sc);
                fw->values[id] = NULL;
                fw->scales[id] = NULL;
                continue;
            }
            fw->num_nearest++;
        }
        /* a zero scale (all-zero channel) is no valid stored scale: any positive one gives the
         * same zero codes */
        for (int64_t ch = 0; ch < oc; ch++)
            if (!(sc[ch] > 0.0f)) sc[ch] = 1.0f;
    }
    free(uses);
    free(compressible);
    return KS_STATUS_OK;
oom:
    free(uses);
    free(compressible);
    ks__quant_fw_free(fw);
    return ks__quant_oom(c, "fallback weights");
}

ks_status ks__quant_fw_select(const ks__quant_ctx *c, const ks__graph *src, const ks__quant_fw *fw,
                              const ks__quant_map *map, const ks__graph *qg, ks__ksm_write_opts *wo,
                              uint8_t **sel, const float ***scl, int *num_out) {
    int num = 0;
    *sel = calloc(qg->num_tensors + 1, 1);
    *scl = calloc(qg->num_tensors + 1, sizeof(float *));
    if (!*sel || !*scl) return ks__quant_oom(c, NULL);
    for (uint32_t t = 0; t < src->num_tensors && t < fw->num_tensors; t++) {
        int32_t id = map->f32_id[t];
        if (!fw->values[t] || id < 0 || (uint32_t)id >= qg->num_tensors) continue;
        (*sel)[id] = 1;
        (*scl)[id] = fw->scales[t];
        num++;
    }
    *num_out = num;
    if (c->o->fallback_weights == KS__QUANT_FWEIGHTS_FP16) {
        /* The values are f16 but stay F32 constants, which packing stores as f16 losslessly
         * (.ksm 1.2 coder F16_BCODE): the fp32 kernels see exactly the checked values (F16
         * constants would take other kernel paths). */
        wo->pack = true;
        return KS_STATUS_OK;
    }
    wo->weights = KS__KSM_WEIGHTS_INT8;
    wo->select = *sel;
    wo->int8_scales = *scl;
    wo->num_select = qg->num_tensors;
    return KS_STATUS_OK;
}

/* The file must compute exactly what the checks measured: its fp32 layers decode their stored
 * weights to the values the checked graph held. Compares the outputs of OUT (as read back) and
 * of the checked graph on the evaluation images, bit for bit. */
ks_status ks__quant_verify_stored(const ks__quant_ctx *c, const ks__graph *qg) {
    const char *path = c->o->out_path;
    char err[512];
    ks_model *checked = NULL, *stored = NULL;
    ks_status st;
    err[0] = '\0';
    if ((st = ks__quant_load_graph(qg, &checked, err, sizeof(err))) ||
        (st = ks_model_load_file(path, NULL, &stored))) {
        st = ks__quant_fail_engine(c, st, "cannot read back %s: %s", path, ks_last_error(NULL));
        goto done;
    }
    double max_rel = 0.0;
    const char *worst = "";
    if ((st = ks__quant_compare_fp32(c, checked, stored, &max_rel, &worst))) goto done;
    if (max_rel != 0.0)
        st = ks__fail(c->err, c->err_cap, KS_STATUS_INTERNAL,
                      "internal error: %s computes output '%s' differently from the checked "
                      "model (max relative difference %g)",
                      path, worst, max_rel);
done:
    ks_model_destroy(checked);
    ks_model_destroy(stored);
    return st;
}
