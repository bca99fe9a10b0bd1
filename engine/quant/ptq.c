/* The post-training quantization driver (ptq.h): ks__quant_run strings the steps together (read,
 * split, equalize, calibrate, plan, round, correct, check and fall back, write) and owns every
 * resource of a run; the steps are in ptq_*.c (ptq_internal.h lists them). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fileio.h"
#include "kestrel/imgproc.h"
#include "ptq_internal.h"

#define MAX_MODEL_BYTES ((size_t)1 << 31)
/* Equalization is an exact fp32 rewrite; outputs moving by more than this (relative to each
 * output's largest magnitude) mean a bug, and the pass is dropped. */
#define EQUALIZE_TOLERANCE 1e-4

/* ---- messages ----------------------------------------------------------------------------- */

void ks__quant_log(const ks__quant_ctx *c, ks_log_level level, const char *fmt, ...) {
    if (!c->o->log) return;
    char msg[8192]; /* a path of PATH_MAX and a decoder's message fit */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    c->o->log(c->o->user, level, msg);
}

void ks__quant_progress(const ks__quant_ctx *c, const char *what, int done, int total) {
    if (c->o->progress) c->o->progress(c->o->user, what, done, total);
}

ks_status ks__quant_fail_engine(const ks__quant_ctx *c, ks_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ks__failv(c->err, c->err_cap, st, fmt, ap);
    va_end(ap);
    return st == KS_STATUS_INVALID_ARGUMENT ? KS_STATUS_INTERNAL : st;
}

ks_status ks__quant_oom(const ks__quant_ctx *c, const char *what) {
    if (what)
        return ks__fail(c->err, c->err_cap, KS_STATUS_OUT_OF_MEMORY, "out of memory (%s)", what);
    return ks__fail(c->err, c->err_cap, KS_STATUS_OUT_OF_MEMORY, "out of memory");
}

/* Appends a note to the passes summary ("; " between notes). */
static void add_pass(char *passes, size_t cap, const char *fmt, ...) KS__PRINTF(3, 4);
static void add_pass(char *passes, size_t cap, const char *fmt, ...) {
    size_t len = strlen(passes);
    if (len && len + 2 < cap) {
        memcpy(passes + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(passes + len, cap - len, fmt, ap);
    va_end(ap);
}

/* ---- options ------------------------------------------------------------------------------ */

void ks__quant_options_default(ks__quant_options *o) {
    memset(o, 0, sizeof(*o));
    o->method = KS__QUANT_METHOD_MSE;
    o->percentile = 99.99;
    o->min_cosine = 0.999;
    o->min_output_cosine = 0.999;
    o->max_images = 100;
    o->eval_images = 4;
    o->max_rounds = 16;
    o->speed_check = true;
    o->equalize = true;
    o->bias_correction = KS__QUANT_BIAS_ANALYTIC;
    o->fallback_weights = KS__QUANT_FWEIGHTS_INT8;
}

static ks_status check_options(const ks__quant_options *o, char *err, size_t err_cap) {
    const ks_status bad = KS_STATUS_INVALID_ARGUMENT;
    if (!o->in_path || !o->out_path) return ks__fail(err, err_cap, bad, "IN and OUT are required");
    if (!o->calib_dir) return ks__fail(err, err_cap, bad, "a calibration folder is required");
    if ((unsigned)o->method > KS__QUANT_METHOD_MSE)
        return ks__fail(err, err_cap, bad, "unknown calibration method %d", (int)o->method);
    if (!(o->percentile > 50.0 && o->percentile <= 100.0))
        return ks__fail(err, err_cap, bad, "--percentile must be in (50, 100], got %g",
                        o->percentile);
    if (!(o->min_cosine >= 0.0 && o->min_cosine <= 1.0) ||
        !(o->min_output_cosine >= 0.0 && o->min_output_cosine <= 1.0))
        return ks__fail(err, err_cap, bad,
                        "--min-cosine and --min-output-cosine must be in [0, 1]");
    if (o->max_images < 1 || o->eval_images < 1 || o->crops < 0 || o->crops > KS__QUANT_MAX_CROPS ||
        o->max_rounds < 0 || o->bench_runs < 0)
        return ks__fail(err, err_cap, bad,
                        "an image count, crop count or run count is out of range");
    if ((unsigned)o->fallback >= KS__QUANT_FALLBACK_COUNT ||
        (unsigned)o->bias_correction >= KS__QUANT_BIAS_COUNT ||
        (unsigned)o->fallback_weights >= KS__QUANT_FWEIGHTS_COUNT)
        return ks__fail(err, err_cap, bad, "unknown fallback, bias correction or fallback weights");
    if (o->coder && !o->entropy) return ks__fail(err, err_cap, bad, "--coder needs --entropy");
    if (o->coder > 8) return ks__fail(err, err_cap, bad, "unknown coder %u", o->coder);
    if (o->weights_only && o->fallback_weights == KS__QUANT_FWEIGHTS_FP32)
        return ks__fail(err, err_cap, bad,
                        "--weights-only with --fallback-weights fp32 would write the model "
                        "unchanged");
    for (uint32_t k = 0; k < o->num_skip; k++)
        if (!o->skip[k]) return ks__fail(err, err_cap, bad, "--skip: a NULL name");
    for (uint32_t k = 0; k < o->num_outputs; k++)
        if (!o->outputs[k]) return ks__fail(err, err_cap, bad, "--outputs: a NULL name");
    return KS_STATUS_OK;
}

static ks_status check_float_model(const ks__quant_ctx *c, const ks__graph *g) {
    const char *path = c->o->in_path;
    for (uint32_t t = 0; t < g->num_tensors; t++) {
        const ks__tensor *d = &g->tensors[t];
        if (d->quant.count && (d->dtype == KS_DTYPE_I8 || d->dtype == KS_DTYPE_U8))
            return ks__fail(c->err, c->err_cap, KS_STATUS_UNSUPPORTED,
                            "%s is already quantized (tensor '%s' is %s with quantization); "
                            "ks-quant needs a float model",
                            path, d->name, ks_dtype_string(d->dtype));
    }
    for (uint32_t i = 0; i < g->num_nodes; i++)
        if (g->nodes[i].op == KS_OP_QUANTIZE)
            return ks__fail(c->err, c->err_cap, KS_STATUS_UNSUPPORTED,
                            "%s has QUANTIZE node '%s'; ks-quant needs a float model", path,
                            g->nodes[i].name);
    return KS_STATUS_OK;
}

/* Every resource of one run (freed in one place). */
typedef struct run_state {
    ks__quant_ctx c;
    uint8_t *data; /* IN's bytes */
    size_t size;
    ks__graph orig, src, qg; /* src: orig with residual convs split (what gets quantized) */
    int32_t *pair;
    ks_model *orig_model, *fm; /* the original, and the fp32 reference of src */
    ks__quant_calib calib;
    ks__quant_biascorr bc;
    ks__quant_gptq gq;
    ks__quant_fw fw;
    uint8_t *fw_select;
    const float **fw_scales;
    ks__quant_plan plan;
    ks__quant_map map;
    ks__quant_eval ev;
    double *iso, *sens;
    ks__quant_outref oref;
    ks__quant_report report;
} run_state;

/* Cross-layer equalization on per-channel ranges of the fp32 model, then (the caller)
 * recalibrates the rescaled graph (only the rescaled tensors change, but the histograms need
 * it). The equalized graph replaces s->src and the reference when its outputs match. */
static ks_status equalize(run_state *s) {
    ks__quant_ctx *c = &s->c;
    ks__quant_equalize_info eq;
    ks_model *em = NULL;
    double rel = 0.0;
    const char *worst = "";
    char err[1024];
    ks_status st;
    if (ks__quant_calib_init(&s->calib, s->src.num_tensors)) return ks__quant_oom(c, NULL);
    if ((st = ks__quant_calibrate(c, &s->src, 1, &s->calib, NULL))) return st;
    err[0] = '\0';
    if ((st = ks__quant_equalize(&s->src, &s->calib, &eq, err, sizeof(err))))
        return ks__fail(c->err, c->err_cap, st, "%s", err);
    ks__quant_calib_free(&s->calib);
    if (eq.num_tensors) {
        if ((st = ks__quant_load_graph(&s->src, &em, err, sizeof(err))))
            return ks__quant_fail_engine(c, st, "equalized graph: %s %s", err, ks_last_error(NULL));
        if ((st = ks__quant_compare_fp32(c, s->fm, em, &rel, &worst))) {
            ks_model_destroy(em);
            return st;
        }
    }
    if (eq.num_tensors && rel > EQUALIZE_TOLERANCE) {
        ks__quant_log(c, KS_LOG_WARN,
                      "equalization moved fp32 output '%s' by %.3g (relative to its largest "
                      "value, tolerance %g); not used",
                      worst, rel, EQUALIZE_TOLERANCE);
        ks_model_destroy(em);
        ks__graph_free(&s->src);
        ks__graph_init(&s->src, NULL);
        free(s->pair);
        s->pair = NULL;
        err[0] = '\0';
        if ((st = ks__quant_unfuse_residual(&s->orig, &s->src, &s->pair, err, sizeof(err))))
            return ks__fail(c->err, c->err_cap, st, "%s: %s", c->o->in_path, err);
    } else if (eq.num_tensors) {
        ks_session_destroy(c->fs);
        c->fs = NULL;
        ks_model_destroy(s->fm);
        s->fm = em;
        if ((st = ks__quant_open_session(c, s->fm, &c->fs))) return st;
        snprintf(s->report.passes, sizeof(s->report.passes),
                 "equalized %u tensors (%u consumer convs, factors up to %.0f, fp32 outputs "
                 "within %.2g)",
                 eq.num_tensors, eq.num_consumers, eq.max_factor, rel);
    }
    ks__quant_log(c, KS_LOG_INFO, "%s",
                  s->report.passes[0] ? s->report.passes : "equalization: no eligible conv pairs");
    return KS_STATUS_OK;
}

/* Reads IN, splits it, prepares the fp32 reference, the input shape and the images. */
static ks_status prepare(run_state *s, const char **meta_pp_out) {
    ks__quant_ctx *c = &s->c;
    const ks__quant_options *o = c->o;
    char err[1024];
    ks_status st;
    err[0] = '\0';
    if ((st = ks_read_file(o->in_path, MAX_MODEL_BYTES, &s->data, &s->size, err, sizeof(err))))
        return ks__fail(c->err, c->err_cap,
                        st == KS_STATUS_INVALID_ARGUMENT ? KS_STATUS_IO_ERROR : st, "%s", err);
    if ((st = ks__ksm_read(s->data, s->size, true, &s->orig, err, sizeof(err))))
        return ks__quant_fail_engine(c, st, "%s: not a valid .ksm: %s", o->in_path, err);
    if ((st = check_float_model(c, &s->orig))) return st;
    err[0] = '\0';
    if ((st = ks__quant_unfuse_residual(&s->orig, &s->src, &s->pair, err, sizeof(err))))
        return ks__quant_fail_engine(c, st, "%s: %s", o->in_path, err);
    const char *meta_pp = ks__graph_get_meta(&s->orig, "preprocess");
    *meta_pp_out = meta_pp;
    if (meta_pp && ks__quant_parse_preprocess(meta_pp, &c->pp, err, sizeof(err)))
        return ks__fail(c->err, c->err_cap, KS_STATUS_INVALID_MODEL,
                        "model metadata 'preprocess': %s", err);
    if (o->preprocess_spec &&
        (st = ks__quant_parse_preprocess(o->preprocess_spec, &c->pp, c->err, c->err_cap)))
        return st;
    ks_model_desc md = {.flags = KS_MODEL_COPY_BUFFER};
    if ((st = ks_model_load_buffer(s->data, s->size, &md, &s->orig_model)))
        return ks__quant_fail_engine(c, st, "%s: %s", o->in_path, ks_last_error(NULL));
    /* The fp32 reference runs the split graph, so every tensor of src has a value. */
    if ((st = ks__quant_load_graph(&s->src, &s->fm, err, sizeof(err))))
        return ks__quant_fail_engine(c, st, "%s: cannot prepare the fp32 reference: %s %s",
                                     o->in_path, err, ks_last_error(NULL));
    if ((st = ks__quant_list_images(c)) || (st = ks__quant_input_shape(c, s->fm)) ||
        (st = ks__quant_open_session(c, s->fm, &c->fs)))
        return st;
    for (uint32_t k = 0; k < o->num_outputs; k++) {
        bool found = false;
        for (uint32_t i = 0; i < s->src.num_outputs && !found; i++)
            found = strcmp(s->src.tensors[s->src.outputs[i]].name, o->outputs[k]) == 0;
        if (!found)
            return ks__fail(c->err, c->err_cap, KS_STATUS_INVALID_ARGUMENT,
                            "--outputs: the model has no output named '%s'", o->outputs[k]);
    }
    return KS_STATUS_OK;
}

/* Calibrates src into plan: I8 params per tensor, then skip, GPTQ and the output layers. */
static ks_status calibrate_plan(run_state *s) {
    ks__quant_ctx *c = &s->c;
    const ks__quant_options *o = c->o;
    ks_status st;
    if (ks__quant_calib_init(&s->calib, s->src.num_tensors) ||
        ks__quant_plan_init(&s->plan, &s->src))
        return ks__quant_oom(c, NULL);
    s->plan.pair = s->pair;
    /* Calibration: pass 1 min/max (and shapes), pass 2 histograms for percentile / KL. */
    int passes = o->method == KS__QUANT_METHOD_MINMAX ? 1 : 2;
    if ((st = ks__quant_calibrate(c, &s->src, passes, &s->calib, &s->plan))) return st;
    for (uint32_t t = 0; t < s->src.num_tensors; t++) {
        float lo, hi;
        if (!ks__quant_calib_range(&s->calib, t, o->method, o->percentile, &lo, &hi)) continue;
        ks__quant_qparams_from_range(lo, hi, &s->plan.scale[t], &s->plan.zp[t]);
        s->plan.has_q[t] = true;
    }
    if ((st = ks__quant_apply_skip(c, &s->src, &s->plan))) return st;
    if (o->gptq || o->fallback_weights == KS__QUANT_FWEIGHTS_INT8) {
        if ((st = ks__quant_gptq_weights(c, &s->src, &s->plan, &s->gq))) return st;
        if (o->gptq)
            add_pass(s->report.passes, sizeof(s->report.passes), "gptq-rounded %u layers",
                     s->gq.num_solved);
    }
    if (!o->int8_output_layers) {
        int kept = 0;
        if (ks__quant_keep_output_layers(&s->src, &s->plan, &kept)) return ks__quant_oom(c, NULL);
        if (kept)
            ks__quant_log(c, KS_LOG_INFO, "%d output layer%s kept in fp32", kept,
                          kept == 1 ? "" : "s");
    }
    /* Layers whose own int8 error is too large go back to fp32 (one pass: a layer's own error
     * does not depend on the precision of the others). */
    s->iso = malloc((s->src.num_nodes + 1) * sizeof(double));
    if (!s->iso) return ks__quant_oom(c, NULL);
    for (uint32_t i = 0; i < s->src.num_nodes; i++)
        s->iso[i] = NAN;
    ks__quant_plan_decide(&s->plan, &s->src);
    if (o->min_cosine > 0.0) {
        if ((st = ks__quant_isolated_cosines(c, &s->src, &s->plan, s->iso))) return st;
        int marked = 0;
        for (uint32_t i = 0; i < s->src.num_nodes; i++)
            if (!isnan(s->iso[i]) && s->iso[i] < o->min_cosine && !s->plan.force_f32[i]) {
                s->plan.force_f32[i] = 1;
                s->plan.force_why[i] = KS__QUANT_WHY_COSINE;
                marked++;
            }
        if (marked)
            ks__quant_log(c, KS_LOG_INFO, "%d layer%s below cosine %g back to fp32", marked,
                          marked == 1 ? "" : "s", o->min_cosine);
    }
    return KS_STATUS_OK;
}

/* The stored weights of the fp32 layers, the reference outputs and the bias correction. */
static ks_status weights_and_biases(run_state *s) {
    ks__quant_ctx *c = &s->c;
    const ks__quant_options *o = c->o;
    char *passes = s->report.passes;
    size_t cap = sizeof(s->report.passes);
    ks_status st;
    /* From here on the layers left in fp32 compute with the weights the file will store. */
    if (o->fallback_weights != KS__QUANT_FWEIGHTS_FP32) {
        if ((st = ks__quant_fw_init(c, &s->src, &s->gq, &s->fw))) return st;
        s->plan.f32_weights = s->fw.values;
        if (o->fallback_weights == KS__QUANT_FWEIGHTS_INT8)
            add_pass(passes, cap, "fp32 layers store int8 weights (%u gptq-rounded, %u nearest)",
                     s->fw.num_gptq, s->fw.num_nearest);
        else
            add_pass(passes, cap, "fp32 layers store fp16 weights");
    }
    s->sens = malloc((s->src.num_nodes + 1) * sizeof(double));
    if (!s->sens)
        return ks__fail(c->err, c->err_cap, KS_STATUS_OUT_OF_MEMORY,
                        "cannot measure the fp32 reference outputs");
    if ((st = ks__quant_outref_init(c, &s->src, &s->oref))) return st;
    for (uint32_t i = 0; i < s->src.num_nodes; i++)
        s->sens[i] = NAN;
    s->report.bias_correction = KS__QUANT_BIAS_OFF;
    if (o->bias_correction) {
        /* After the per-layer check: that check measures the layers' own rounding error. The
         * empirical correction is measured for the plan as it stands; layers that go back to
         * fp32 later get their original bias again (ks__quant_biascorr_apply). */
        if ((st = ks__quant_correct_bias(c, &s->src, &s->plan, &s->calib, &s->gq, &s->oref, &s->bc,
                                         &s->report.bias_correction, passes, cap)))
            return st;
    }
    /* The fp32 layers' GPTQ-rounded weights shift their mean output like the int8 layers'
     * rounding does: their bias takes the same correction while they stay fp32. */
    if (o->bias_correction && o->fallback_weights == KS__QUANT_FWEIGHTS_INT8) {
        if (ks__quant_biascorr_stored(&s->bc, &s->src, &s->gq, s->fw.values))
            return ks__quant_oom(c, NULL);
        uint32_t num_stored = 0;
        for (uint32_t i = 0; s->bc.stored && i < s->bc.num_nodes; i++)
            num_stored += s->bc.stored[i] != NULL;
        size_t len = strlen(passes);
        snprintf(passes + len, cap - len,
                 "; biases of %u fp32 layers corrected for their int8 weights' mean error",
                 num_stored);
    }
    return KS_STATUS_OK;
}

/* Build, measure, return slower or harmful layers to fp32, repeat. */
static ks_status check_rounds(run_state *s) {
    ks__quant_ctx *c = &s->c;
    const ks__quant_options *o = c->o;
    ks__quant_sens sc = {
        .ref = &s->oref, .bc = o->bias_correction ? &s->bc : NULL, .sens = s->sens};
    char err[1024];
    ks_status st;
    for (int round = 0;; round++) {
        ks__quant_plan_decide(&s->plan, &s->src);
        if (o->bias_correction) ks__quant_biascorr_apply(&s->bc, &s->src, s->plan.mode);
        ks__graph_free(&s->qg);
        ks__graph_init(&s->qg, NULL);
        ks__quant_map_free(&s->map);
        err[0] = '\0';
        if ((st = ks__quant_build(&s->src, &s->plan, &s->qg, &s->map, NULL, err, sizeof(err))))
            return ks__quant_fail_engine(c, st, "rewrite failed: %s", err);
        char what[64];
        snprintf(what, sizeof(what), "checking (round %d)", round + 1);
        if ((st = ks__quant_evaluate(c, &s->src, &s->map, &s->qg, &s->ev, what))) return st;
        if (round >= o->max_rounds) break;
        int marked = 0;
        if ((st = ks__quant_mark_fallbacks(c, &s->src, &s->plan, &s->ev, s->iso, &sc, &marked)))
            return st;
        if (marked)
            ks__quant_log(c, KS_LOG_INFO, "round %d: %d layer%s back to fp32", round + 1, marked,
                          marked == 1 ? "" : "s");
        if (!marked) break;
    }
    return KS_STATUS_OK;
}

/* Metadata, the fallback weights' storage, OUT and its read-back check. */
static ks_status write_out(run_state *s, const char *meta_pp) {
    ks__quant_ctx *c = &s->c;
    const ks__quant_options *o = c->o;
    const ks__quant_pp *pp = &c->pp;
    char val[256], err[1024];
    ks_status st;
    /* the corrected biases live in int8 layers only */
    bool any_int8 = false;
    for (uint32_t i = 0; i < s->src.num_nodes; i++)
        any_int8 = any_int8 || s->plan.mode[i] == KS__QUANT_INT8;
    ks__quant_bias bias_meta = any_int8 ? s->report.bias_correction : KS__QUANT_BIAS_OFF;
    snprintf(val, sizeof(val), "%s, %s, %d images%s%s%s%s",
             o->weights_only ? "int8 weights only" : "int8 ptq", ks__quant_method_string(o->method),
             c->num_images,
             o->equalize && strstr(s->report.passes, "equalized") ? ", equalized" : "",
             o->gptq ? ", gptq weights" : "",
             o->fallback_weights == KS__QUANT_FWEIGHTS_INT8   ? ", fp32 layers with int8 weights"
             : o->fallback_weights == KS__QUANT_FWEIGHTS_FP16 ? ", fp32 layers with fp16 weights"
                                                              : "",
             bias_meta == KS__QUANT_BIAS_EMPIRICAL  ? ", bias-corrected (empirical)"
             : bias_meta == KS__QUANT_BIAS_ANALYTIC ? ", bias-corrected (analytic)"
                                                    : "");
    if ((st = ks__graph_set_meta(&s->qg, "quantization", val))) return ks__quant_oom(c, NULL);
    snprintf(val, sizeof(val), "mean=%g:%g:%g,scale=%g:%g:%g,layout=%s", pp->mean[0], pp->mean[1],
             pp->mean[2], pp->scale[0], pp->scale[1], pp->scale[2],
             pp->layout == KS_TENSOR_LAYOUT_NCHW ? "nchw" : "nhwc");
    if (!meta_pp && (st = ks__graph_set_meta(&s->qg, "preprocess", val)))
        return ks__quant_oom(c, NULL);
    ks__ksm_write_opts wo = {.pack = o->entropy,
                             .entropy = o->entropy,
                             .entropy_coders = o->coder ? (uint8_t)(1u << (o->coder - 1)) : 0};
    int num_fw = 0;
    if (o->fallback_weights != KS__QUANT_FWEIGHTS_FP32 &&
        (st = ks__quant_fw_select(c, &s->src, &s->fw, &s->map, &s->qg, &wo, &s->fw_select,
                                  &s->fw_scales, &num_fw)))
        return st;
    err[0] = '\0';
    if ((st = ks__ksm_write_file_ex(&s->qg, &wo, o->out_path, err, sizeof(err))))
        return ks__quant_fail_engine(c, st, "cannot write %s: %s", o->out_path, err);
    if (num_fw > 0 && (st = ks__quant_verify_stored(c, &s->qg))) return st;
    s->report.num_fallback_layers = num_fw;
    return KS_STATUS_OK;
}

static void run_state_free(run_state *s) {
    free(s->iso);
    free(s->sens);
    ks__quant_outref_free(&s->oref);
    ks__quant_eval_free(&s->ev);
    ks__quant_map_free(&s->map);
    ks__quant_plan_free(&s->plan);
    ks__quant_calib_free(&s->calib);
    ks__quant_biascorr_free(&s->bc);
    ks__quant_gptq_free(&s->gq);
    ks__quant_fw_free(&s->fw);
    free(s->fw_select);
    free((void *)s->fw_scales);
    ks_session_destroy(s->c.fs);
    ks_model_destroy(s->fm);
    ks_model_destroy(s->orig_model);
    ks__graph_free(&s->qg);
    ks__graph_free(&s->src);
    ks__graph_free(&s->orig);
    free(s->pair);
    free(s->data);
    ks__quant_free_images(&s->c);
    ks__quant_report_free(&s->report);
}

ks_status ks__quant_run(const ks__quant_options *o, ks__quant_report *report_out, char *err,
                        size_t err_cap) {
    if (!o || !report_out)
        return ks__fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT, "NULL options or report");
    ks_status st = check_options(o, err, err_cap);
    if (st) return st;
    run_state *s = calloc(1, sizeof(run_state));
    if (!s) return ks__fail(err, err_cap, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    ks__quant_ctx *c = &s->c;
    c->o = o;
    c->err = err;
    c->err_cap = err_cap;
    c->pp = (ks__quant_pp){{0, 0, 0}, {1.0f / 255, 1.0f / 255, 1.0f / 255}, -1, 0, 0, 0};
    ks__graph_init(&s->orig, NULL);
    ks__graph_init(&s->src, NULL);
    ks__graph_init(&s->qg, NULL);
    const char *meta_pp = NULL;
    if ((st = prepare(s, &meta_pp))) goto done;
    if (o->equalize && (st = equalize(s))) goto done;
    if ((st = calibrate_plan(s)) || (st = weights_and_biases(s)) || (st = check_rounds(s)) ||
        (st = write_out(s, meta_pp)))
        goto done;
    ks__quant_report *r = &s->report;
    struct stat sb;
    r->num_images = c->num_images;
    r->in_bytes = s->size;
    r->out_bytes = stat(o->out_path, &sb) == 0 ? (size_t)sb.st_size : 0;
    if (ks__quant_report_fill(r, &s->src, &s->plan, &s->ev, s->iso, s->sens)) {
        st = ks__quant_oom(c, "report");
        goto done;
    }
    if (o->report_path && (st = ks__quant_report_write(r, o, o->report_path, err, err_cap)))
        goto done;
    if (o->bench_runs && (st = ks__quant_bench(c, s->orig_model, r))) goto done;
    *report_out = *r;
    memset(r, 0, sizeof(*r));
done:
    run_state_free(s);
    free(s);
    return st;
}
