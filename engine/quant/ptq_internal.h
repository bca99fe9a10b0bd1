/* What the files of the quantization pipeline (ptq*.c) share; callers use ptq.h.
 *
 * ptq.c        the driver (ks__quant_run) and the messages
 * ptq_data.c   calibration data: the preprocess spec, the image folder, the model input, the
 *              sessions and the statistics passes over the images
 * ptq_measure.c  int8 against fp32: per-tensor cosines and per-layer times, each layer's own
 *              error, fp32 comparisons, a plan's worst output cosine, the side-by-side bench
 * ptq_bias.c   bias correction (analytic, empirical, auto)
 * ptq_weights.c  GPTQ rounding, the stored weights of the fp32 layers, the read-back check
 * ptq_fallback.c  which layers stay or go back to fp32 (skip, output layers, speed, outputs)
 * ptq_report.c  the report: filled from the measurements, written as markdown or JSON
 *
 * Every function that fails writes its message into the run's error buffer (c->err) and
 * returns the status; none prints. */
#ifndef KESTREL_QUANT_PTQ_INTERNAL_H
#define KESTREL_QUANT_PTQ_INTERNAL_H

#include "base/error.h"
#include "kestrel/engine.h"
#include "ksm.h"
#include "ptq.h"

#define KS__QUANT_MAX_CROPS 6 /* options.crops */

/* How images become the model input. */
typedef struct ks__quant_pp {
    float mean[3], scale[3];
    int layout; /* -1: from the input shape */
    int color;  /* ks_channel_order */
    int32_t width_px, height_px;
} ks__quant_pp;

/* One run of the pipeline. */
typedef struct ks__quant_ctx {
    const ks__quant_options *o;
    char *err;
    size_t err_cap;
    ks__quant_pp pp;
    ks_tensor_shape shape; /* the model input, dynamic dims decided */
    char **images;         /* calibration image paths, sorted, all decodable */
    int num_images;
    int npy;        /* the calibration files are .npy input tensors (preprocessed), not images */
    ks_session *fs; /* the fp32 reference (the split graph), every tensor kept */
} ks__quant_ctx;

/* ---- ptq.c */
void ks__quant_log(const ks__quant_ctx *c, ks_log_level level, const char *fmt, ...)
    KS__PRINTF(3, 4);
void ks__quant_progress(const ks__quant_ctx *c, const char *what, int done, int total);
/* An engine call's failure: its status, except INVALID_ARGUMENT (every argument inside the
 * pipeline is the pipeline's own: that status stays for the caller's options). */
ks_status ks__quant_fail_engine(const ks__quant_ctx *c, ks_status st, const char *fmt, ...)
    KS__PRINTF(3, 4);
ks_status ks__quant_oom(const ks__quant_ctx *c, const char *what);

/* ---- ptq_data.c */
ks_status ks__quant_parse_preprocess(const char *spec, ks__quant_pp *pp, char *err, size_t err_cap);
/* Lists options.calib_dir and keeps the files that decode (warning about the others): images,
 * or .npy float32 tensors of the model's input (then c->npy; a folder holds one kind). */
ks_status ks__quant_list_images(ks__quant_ctx *c);
void ks__quant_free_images(ks__quant_ctx *c);
/* Checks the model's one image input and decides c->shape (and pp's layout and color); with
 * .npy calibration, the input's shape with dynamic dimensions taken from the first tensor. */
ks_status ks__quant_input_shape(ks__quant_ctx *c, const ks_model *m);
/* Decodes the image, narrows it to crop (0: whole), preprocesses it into s's input 0; an .npy
 * tensor is copied as it is (its shape must be c->shape). */
ks_status ks__quant_fill_input(const ks__quant_ctx *c, ks_session *s, const char *path, int crop);
/* The k-th of n evaluation images, spread evenly over the calibration set. */
const char *ks__quant_eval_image(const ks__quant_ctx *c, int k, int n);
int ks__quant_num_eval(const ks__quant_ctx *c); /* min(images, eval_images) */
/* One thread, every tensor kept, reshaped to c->shape. */
ks_status ks__quant_open_session(const ks__quant_ctx *c, const ks_model *m, ks_session **out);
ks_status ks__quant_run_session(const ks__quant_ctx *c, ks_session *s);
/* Runs c->fs over the calibration images: pass 1 min/max, per-channel statistics and runtime
 * shapes (into plan when given), pass 2 (passes == 2) the histograms. */
ks_status ks__quant_calibrate(const ks__quant_ctx *c, const ks__graph *g, int passes,
                              ks__quant_calib *calib, ks__quant_plan *plan);
/* Serializes g and loads it as a model (a copy: g may change afterwards). */
ks_status ks__quant_load_graph(const ks__graph *g, ks_model **out, char *err, size_t err_cap);

/* ---- ptq_measure.c */

/* The int8 graph against fp32 on the evaluation images. */
typedef struct ks__quant_eval {
    double *dot, *n_ref, *n_q; /* per source tensor */
    bool *has;
    uint64_t *t_f32, *t_i8; /* per source node: fp32 node time, int8 node + its conversions */
    uint64_t *t_i8_own;     /* per source node: the int8 node alone */
    uint64_t total_f32, total_i8;
} ks__quant_eval;

void ks__quant_eval_free(ks__quant_eval *e);
double ks__quant_eval_cosine(const ks__quant_eval *e, uint32_t t); /* NAN: never seen */
ks_status ks__quant_evaluate(const ks__quant_ctx *c, const ks__graph *src, const ks__quant_map *map,
                             ks__graph *qg, ks__quant_eval *e, const char *what);
/* Each planned int8 layer's own error: cosine of its int8 shadow copy (fed by the exact fp32
 * inputs) against its fp32 output, per source node (NAN where the layer has no shadow). */
ks_status ks__quant_isolated_cosines(const ks__quant_ctx *c, const ks__graph *src,
                                     const ks__quant_plan *plan, double *iso);
/* Largest difference between the (checked) outputs of two fp32 models on the evaluation images,
 * relative to each output's largest magnitude; worst_out names the output. */
ks_status ks__quant_compare_fp32(const ks__quant_ctx *c, const ks_model *a, const ks_model *b,
                                 double *max_rel_out, const char **worst_out);
bool ks__quant_output_checked(const ks__quant_options *o, const char *name);

/* fp32 outputs of the evaluation images, the reference every candidate plan is scored against. */
typedef struct ks__quant_outref {
    int num_images;
    uint32_t num_outputs;
    const char **names; /* per output (the src graph's names, shared) */
    bool *checked;      /* per output: selected by options.outputs */
    float **ref;        /* [image * num_outputs + k]; NULL when the output is not f32 */
    size_t *count;      /* per output: values */
} ks__quant_outref;

ks_status ks__quant_outref_init(const ks__quant_ctx *c, const ks__graph *src, ks__quant_outref *r);
void ks__quant_outref_free(ks__quant_outref *r);
/* Worst cosine over the checked outputs of the plan's int8 model against the reference
 * (decides the plan, applies the bias correction bc when given, builds, loads and runs). */
ks_status ks__quant_plan_worst_cosine(const ks__quant_ctx *c, ks__graph *src, ks__quant_plan *plan,
                                      const ks__quant_biascorr *bc, const ks__quant_outref *r,
                                      double *worst_out);
/* fp32 model fm against out_path, 1 thread, interleaved runs: into r's bench fields. */
ks_status ks__quant_bench(const ks__quant_ctx *c, const ks_model *fm, ks__quant_report *r);

/* ---- ptq_bias.c */
/* Initializes bc (options.bias_correction: analytic, empirical or auto, which measures both on
 * the reference r and keeps the better) and applies it to src for the plan as it stands;
 * *used_out: the correction kept. Adds its note to passes (cap bytes). */
ks_status ks__quant_correct_bias(const ks__quant_ctx *c, ks__graph *src, ks__quant_plan *plan,
                                 const ks__quant_calib *calib, const ks__quant_gptq *gq,
                                 const ks__quant_outref *r, ks__quant_biascorr *bc,
                                 ks__quant_bias *used_out, char *passes, size_t cap);

/* ---- ptq_weights.c */

/* Per source tensor: the values an fp32 layer computes with (plan->f32_weights) and, for int8,
 * the per-channel scales the writer must use to store exactly those values as codes. */
typedef struct ks__quant_fw {
    uint32_t num_tensors, num_gptq, num_nearest, num_fp16;
    float **values;
    float **scales;
} ks__quant_fw;

/* Runs the fp32 model over the images once per batch of layers and rounds their weights
 * (plan->gptq then points at gq when options.gptq). */
ks_status ks__quant_gptq_weights(const ks__quant_ctx *c, const ks__graph *g, ks__quant_plan *plan,
                                 ks__quant_gptq *gq);
/* Rounds the weights of every conv/FC whose F32 weight tensor it alone reads; gq (may be NULL)
 * gives gptq codes where it solved the layer. */
ks_status ks__quant_fw_init(const ks__quant_ctx *c, const ks__graph *g, const ks__quant_gptq *gq,
                            ks__quant_fw *fw);
void ks__quant_fw_free(ks__quant_fw *fw);
/* Writer options that store the fp32 layers' weights of the built graph qg as rounded; *sel and
 * *scl (freed by the caller) back wo->select and wo->int8_scales; *num_out: layers. */
ks_status ks__quant_fw_select(const ks__quant_ctx *c, const ks__graph *src, const ks__quant_fw *fw,
                              const ks__quant_map *map, const ks__graph *qg, ks__ksm_write_opts *wo,
                              uint8_t **sel, const float ***scl, int *num_out);
/* The written file computes bit for bit what the checked graph qg computed. */
ks_status ks__quant_verify_stored(const ks__quant_ctx *c, const ks__graph *qg);

/* ---- ptq_fallback.c */
/* A node's name for messages and the report: its own, else its first output's. */
const char *ks__quant_layer_name(const ks__graph *g, const ks__node *n);
/* options.weights_only and options.skip into plan->force_f32. */
ks_status ks__quant_apply_skip(const ks__quant_ctx *c, const ks__graph *g, ks__quant_plan *p);
/* Marks the layers computing the outputs fp32 (but the large ones); returns how many. */
ks_status ks__quant_keep_output_layers(const ks__graph *g, ks__quant_plan *p, int *count_out);

/* What the sensitivity fallback needs besides the context. */
typedef struct ks__quant_sens {
    const ks__quant_outref *ref;
    const ks__quant_biascorr *bc; /* NULL: no bias correction */
    double *sens; /* per node: last measured output-cosine gain of returning it to fp32 (NAN) */
} ks__quant_sens;

/* One round of the check: the speed check, then (while an output is below min_output_cosine)
 * the output check. *marked_out: layers marked to go back to fp32. */
ks_status ks__quant_mark_fallbacks(const ks__quant_ctx *c, ks__graph *g, ks__quant_plan *p,
                                   const ks__quant_eval *e, const double *iso, ks__quant_sens *s,
                                   int *marked_out);

/* ---- ptq_report.c */
/* Fills r from the final plan and measurements (names copied: g may go). */
ks_status ks__quant_report_fill(ks__quant_report *r, const ks__graph *g, const ks__quant_plan *p,
                                const ks__quant_eval *e, const double *iso, const double *sens);

#endif /* KESTREL_QUANT_PTQ_INTERNAL_H */
