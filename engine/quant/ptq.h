/* Post-training int8 quantization of a float .ksm, the whole pipeline: what ks-quant runs and
 * what a binding calls (the algorithms it drives are in quant.h; the steps, the flags and the
 * report are described in docs/compression.md, "Post-training int8 (ks-quant)").
 *
 *     ks__quant_options o;
 *     ks__quant_options_default(&o);
 *     o.in_path = "face.ksm";
 *     o.out_path = "face_int8.ksm";
 *     o.calib_dir = "photos";
 *     ks__quant_report r;
 *     char err[1024];
 *     if (ks__quant_run(&o, &r, err, sizeof(err)) == KS_STATUS_OK) {
 *         ... r.num_int8, r.outputs[k].cosine, r.layers[i] ...
 *         ks__quant_report_free(&r);
 *     }
 *
 * Steps: decode the calibration images and preprocess them into the model input; run the fp32
 * model on each with every intermediate kept and collect per-tensor and per-channel statistics;
 * equalize per-channel ranges across conv pairs (exact fp32 rewrite, checked against the original
 * outputs) and calibrate again; pick I8 params per tensor; keep the layers computing the outputs
 * in fp32; correct conv biases; round conv/FC weights per output channel; rewrite the graph with
 * QUANTIZE/DEQUANTIZE at the int8/fp32 borders; then run the int8 graph against fp32 on a few
 * images, measure per-layer cosine similarity and time, and return layers to fp32 where the
 * cosine is too low or int8 is slower; write OUT (and read it back when fp32 layers store rounded
 * weights).
 *
 * The library never prints and never exits: messages go to options.log, progress to
 * options.progress (both optional), results into the report; a failure is a ks_status and one
 * line in (err, err_cap). KS_STATUS_INVALID_ARGUMENT means the options are wrong (a value out of
 * range, a bad preprocess spec, a skip or outputs name the model lacks); every other failure
 * (files, images, the model, memory) has another status.
 *
 * Thread safety: ks__quant_run calls may run on several threads at once, each with its own
 * options and report (the engine's log hook, ks_log_set, is process-wide); the callbacks are
 * called on the calling thread. */
#ifndef KESTREL_QUANT_PTQ_H
#define KESTREL_QUANT_PTQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kestrel/kestrel.h"
#include "quant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the output check (min_output_cosine) picks the layers it returns to fp32. */
typedef enum ks__quant_fallback {
    KS__QUANT_FALLBACK_SENSITIVITY = 0, /* measured gain of the model outputs per layer */
    KS__QUANT_FALLBACK_CHEAP = 1,       /* that gain per microsecond the layer costs in fp32 */
    KS__QUANT_FALLBACK_OWN_ERROR = 2,   /* largest own error first, an eighth per round (old) */
    KS__QUANT_FALLBACK_SMALL = 3,       /* that gain per weight the layer would store in fp32 */
    KS__QUANT_FALLBACK_COUNT
} ks__quant_fallback;

/* Storage of the weights of the conv/FC layers left in fp32. */
typedef enum ks__quant_fweights {
    KS__QUANT_FWEIGHTS_FP32 = 0, /* as they were */
    KS__QUANT_FWEIGHTS_FP16 = 1, /* rounded to f16, stored packed (.ksm 1.2) */
    KS__QUANT_FWEIGHTS_INT8 = 2, /* int8 per output channel, decoded to fp32 at load */
    KS__QUANT_FWEIGHTS_COUNT
} ks__quant_fweights;

typedef enum ks__quant_bias {
    KS__QUANT_BIAS_OFF = 0,
    KS__QUANT_BIAS_EMPIRICAL = 1, /* the int8 model's mean error per channel, layer by layer */
    KS__QUANT_BIAS_ANALYTIC = 2,  /* the int8 weights' expected error */
    KS__QUANT_BIAS_AUTO = 3,      /* both, keeps the one with the better worst output cosine */
    KS__QUANT_BIAS_COUNT
} ks__quant_bias;

/* level: KS_LOG_WARN (a skipped image, a rejected pass) or KS_LOG_INFO (what a pass did). */
typedef void (*ks__quant_log_fn)(void *user, ks_log_level level, const char *message);
/* A long step: done of total (done == total once when it ends). */
typedef void (*ks__quant_progress_fn)(void *user, const char *what, int done, int total);

/* Every ks-quant option (the flag in brackets). Zero does not mean the default here, because a
 * zero threshold means "disabled", as on the command line: start from ks__quant_options_default.
 * Nothing is kept after ks__quant_run returns. */
typedef struct ks__quant_options {
    const char *in_path;         /* float .ksm (IN) */
    const char *out_path;        /* quantized .ksm written (OUT) */
    const char *calib_dir;       /* folder of calibration images (JPEG, PNG, BMP) or of .npy float32
                                  * input tensors [--calibration] */
    const char *preprocess_spec; /* "mean=M[:M:M],scale=S[:S:S],layout=nhwc|nchw,size=WxH,
                                    color=rgb|bgr"; NULL: the model's 'preprocess' metadata, else
                                    mean=0,scale=1/255 [--preprocess] */
    const char *report_path;     /* NULL: none; FILE.json: JSON, else markdown [--report] */
    ks__quant_method method;     /* default MSE [--calibration-method] */
    double percentile;           /* for PERCENTILE, in (50, 100]; 99.99 [--percentile] */
    double min_cosine;           /* a layer's own int8 cosine below it: fp32 (0.999; 0: off) */
    double min_output_cosine;    /* then while an output is below it, layers go back (0.999; 0) */
    ks__quant_fallback fallback; /* [--fallback] */
    const char *const *outputs;  /* outputs the output check considers [--outputs] */
    uint32_t num_outputs;        /* 0: all */
    const char *const *skip;     /* layers (node or output names) kept fp32 [--skip] */
    uint32_t num_skip;
    int max_images;                      /* calibration images used, 1..100000 (100) */
    int eval_images;                     /* images of the cosine checks, 1..1000 (4) */
    int crops;                           /* extra square crops per image, 0..6 (0) */
    int max_rounds;                      /* check-and-fallback rounds (16) */
    int bench_runs;                      /* > 0: time fp32 and int8 interleaved [--bench] */
    bool speed_check;                    /* int8 layers measured slower go back (true) */
    bool equalize;                       /* cross-layer equalization (true) */
    ks__quant_bias bias_correction;      /* default ANALYTIC */
    bool gptq;                           /* --weight-rounding gptq (false: nearest) */
    ks__quant_fweights fallback_weights; /* default INT8 */
    bool weights_only;                   /* every layer fp32, weights stored int8 */
    bool int8_output_layers;             /* quantize the layers computing the outputs too */
    bool entropy;                        /* write .ksm 1.2, losslessly packed */
    uint8_t coder;        /* with entropy: 0 the best per constant, else 1 + KS__WCODER_* */
    ks__quant_log_fn log; /* NULL: messages dropped */
    ks__quant_progress_fn progress; /* NULL: none */
    void *user;                     /* passed to log and progress */
} ks__quant_options;

/* Fills o with ks-quant's defaults (no paths, no callbacks). */
void ks__quant_options_default(ks__quant_options *o);

/* One node of the quantized graph (the input with its residual convs split: "<y>/conv"). */
typedef struct ks__quant_layer {
    const char *name;   /* node name, else its first output's (what skip accepts) */
    const char *op;     /* IR op name */
    uint8_t mode;       /* ks__quant_mode */
    uint8_t reason;     /* ks__quant_reason: why int8 or fp32 */
    bool has_output;    /* false: no output tensor, not in the report's table */
    double cosine;      /* its output in the int8 model vs fp32 (NAN: never evaluated) */
    double own_cosine;  /* alone in int8 from exact fp32 inputs (NAN: not checked) */
    double output_gain; /* last measured worst-output gain of its return to fp32 (NAN) */
    double fp32_us;     /* profiled, 1 thread */
    double int8_us;     /* profiled with the QUANTIZE/DEQUANTIZE it needs (meaningful if int8) */
} ks__quant_layer;

typedef struct ks__quant_output {
    const char *name;
    double cosine; /* vs fp32 on the evaluation images (NAN: not evaluated) */
} ks__quant_output;

/* What ks__quant_run measured. Owns its arrays and names: free with ks__quant_report_free. */
typedef struct ks__quant_report {
    uint32_t num_layers, num_int8;
    ks__quant_layer *layers; /* per node, graph order */
    uint32_t num_outputs;
    ks__quant_output *outputs;
    int num_images;                 /* calibration images used */
    size_t in_bytes, out_bytes;     /* file sizes */
    double fp32_ms, int8_ms;        /* profiled totals of one run, 1 thread */
    ks__quant_bias bias_correction; /* the correction applied (AUTO resolved) */
    int num_fallback_layers;        /* fp32 layers whose weights OUT stores rounded */
    char passes[512];               /* what the data-free passes did ("" when none) */
    /* options.bench_runs > 0: medians and minima of the interleaved runs, ms */
    double bench_fp32_median_ms, bench_fp32_min_ms, bench_int8_median_ms, bench_int8_min_ms;
    char *strings; /* the names' storage */
} ks__quant_report;

/* Quantizes options->in_path into options->out_path (and writes options->report_path).
 * *report_out is written only on success. */
ks_status ks__quant_run(const ks__quant_options *options, ks__quant_report *report_out, char *err,
                        size_t err_cap);

/* Writes the per-layer report (markdown, or JSON for a path ending in .json); options: the ones
 * the report was made with (the model path, the method and the thresholds it names). */
ks_status ks__quant_report_write(const ks__quant_report *r, const ks__quant_options *options,
                                 const char *path, char *err, size_t err_cap);

void ks__quant_report_free(ks__quant_report *r); /* zeroed or NULL: nothing */

const char *ks__quant_method_string(ks__quant_method m); /* "minmax", "percentile", ... */
const char *ks__quant_reason_string(ks__quant_reason r); /* "int8", "fp32 (--skip)", ... */

#ifdef __cplusplus
}
#endif

#endif /* KESTREL_QUANT_PTQ_H */
