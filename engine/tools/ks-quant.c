/* ks-quant IN.ksm OUT.ksm --calibration DIR [options]
 * Post-training int8 quantization of a float .ksm: the command line of the engine/quant pipeline
 * (ptq.h, which lists the steps; docs/compression.md, "Post-training int8 (ks-quant)"). Parses
 * the flags into ks__quant_options, shows the pipeline's messages and progress on stderr and
 * prints its summary (and the bench line) on stdout. Exit 0, 1 on failure, 2 on bad flags. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptq.h"
#include "weight_quant.h"

#define MAX_NAMES 256 /* --skip, --outputs */

static void usage(void) {
    fprintf(stderr,
            "usage: ks-quant IN.ksm OUT.ksm --calibration DIR [options]\n"
            "  Post-training int8 quantization of a float model.\n"
            "  --calibration DIR            folder of calibration images (JPEG, PNG, BMP),\n"
            "                               or of .npy float32 tensors of the model input\n"
            "                               (already preprocessed; --preprocess ignored)\n"
            "  --preprocess SPEC            mean=M[:M:M],scale=S[:S:S],layout=nhwc|nchw,\n"
            "                               size=WxH,color=rgb|bgr (default: the model's\n"
            "                               'preprocess' metadata, else mean=0,scale=1/255)\n"
            "  --calibration-method M       minmax | percentile | kl | mse (default mse)\n"
            "  --percentile P               for percentile, in (50, 100] (default 99.99)\n"
            "  --calibration-crops N        also calibrate on N square crops of each image\n"
            "                               (0..6, default 0; for models fed crops)\n"
            "  --skip NAME,...              keep these layers (node or output names) in fp32\n"
            "  --min-cosine C               keep in fp32 the layers whose own int8 output (from\n"
            "                               exact fp32 inputs) has a cosine similarity vs fp32\n"
            "                               below C (default 0.999; 0 disables)\n"
            "  --min-output-cosine C        then, while a model output is below C vs fp32,\n"
            "                               return int8 layers to fp32 (default 0.999; 0\n"
            "                               disables), picked by --fallback\n"
            "  --fallback sensitivity|cheap|small|own-error\n"
            "                               sensitivity (default): the layers whose return\n"
            "                               to fp32 raises the worst output cosine most,\n"
            "                               measured per layer; cheap: that gain per us the\n"
            "                               layer costs in fp32; small: per weight it stores\n"
            "                               in fp32; own-error: largest own error first, an\n"
            "                               eighth of the layers per round\n"
            "  --outputs NAME,...           outputs that check considers (default: all)\n"
            "  --max-images N               calibration images used (default 100)\n"
            "  --eval-images N              images for the cosine checks, spread over the\n"
            "                               calibration set (default 4)\n"
            "  --no-speed-check             keep int8 layers even where measured slower\n"
            "  --no-equalize                no cross-layer equalization of per-channel ranges\n"
            "  --bias-correction M          analytic (default: the int8 weights' expected\n"
            "                               error) | empirical (the int8 model's mean error per\n"
            "                               channel, measured layer by layer) | auto (both,\n"
            "                               keeps the one with the better worst output cosine)\n"
            "  --no-bias-correction         no bias correction\n"
            "  --weight-rounding nearest|gptq\n"
            "                               nearest (default): round each weight alone;\n"
            "                               gptq: round each output channel in order, moving\n"
            "                               each error onto the rest through the layer's input\n"
            "                               statistics (one more pass over the images)\n"
            "  --fallback-weights fp32|fp16|int8\n"
            "                               storage of the weights of the conv/FC layers left\n"
            "                               in fp32 (their activations stay fp32): int8\n"
            "                               (default; per output channel, gptq-rounded with\n"
            "                               the calibration images, decoded to fp32 at load),\n"
            "                               fp16 (rounded to f16, stored packed: .ksm 1.2), or\n"
            "                               fp32 (as they were); every check runs with the\n"
            "                               weights the file stores\n"
            "  --weights-only               every layer stays fp32 and stores int8 weights\n"
            "                               (gptq-rounded with the calibration images): the\n"
            "                               size without the activation error\n"
            "  --int8-output-layers         quantize the layers that compute the model outputs\n"
            "                               too (default: they stay fp32, see docs)\n"
            "  --report FILE.md|FILE.json   per-layer cosine similarity, worst first\n"
            "  --bench N                    time fp32 and int8 interleaved, N runs, 1 thread\n"
            "  --entropy                    write the model losslessly packed (.ksm 1.2:\n"
            "                               coded constants and tables; same outputs, needs a\n"
            "                               reader of format 1.2)\n"
            "  --coder best|rans|wcode      with --entropy: best (default, smallest per\n"
            "                               constant) or one coder only; rans decodes ~9x\n"
            "                               faster than wcode at load (slightly larger)\n"
            "  --quiet                      no progress bar\n"
            "  --progress-lines             progress as lines "
            "\"progress<TAB>STAGE<TAB>DONE<TAB>TOTAL\"\n"
            "                               on stderr instead of a bar (for programs that run\n"
            "                               ks-quant: the Python package's bars)\n");
}

/* Flags with a word value: the words, the values they set, the message's list. */
typedef struct word_flag {
    const char *flag, *list;
    const char *words[7];
    int values[7];
} word_flag;

static const word_flag k_word_flags[] = {
    {"--calibration-method",
     "minmax, percentile, kl or mse",
     {"minmax", "min-max", "percentile", "kl", "entropy", "mse"},
     {KS__QUANT_METHOD_MINMAX, KS__QUANT_METHOD_MINMAX, KS__QUANT_METHOD_PERCENTILE,
      KS__QUANT_METHOD_KL, KS__QUANT_METHOD_KL, KS__QUANT_METHOD_MSE}},
    {"--bias-correction",
     "empirical, analytic or auto",
     {"empirical", "analytic", "auto"},
     {KS__QUANT_BIAS_EMPIRICAL, KS__QUANT_BIAS_ANALYTIC, KS__QUANT_BIAS_AUTO}},
    {"--weight-rounding", "nearest or gptq", {"nearest", "gptq"}, {0, 1}},
    {"--fallback-weights",
     "fp32, fp16 or int8",
     {"fp32", "fp16", "int8"},
     {KS__QUANT_FWEIGHTS_FP32, KS__QUANT_FWEIGHTS_FP16, KS__QUANT_FWEIGHTS_INT8}},
    {"--fallback",
     "sensitivity, cheap, small or own-error",
     {"sensitivity", "cheap", "own-error", "small"},
     {KS__QUANT_FALLBACK_SENSITIVITY, KS__QUANT_FALLBACK_CHEAP, KS__QUANT_FALLBACK_OWN_ERROR,
      KS__QUANT_FALLBACK_SMALL}},
    {"--coder",
     "best, rans or wcode",
     {"best", "rans", "wcode"},
     {0, 1 + KS__WCODER_RANS, 1 + KS__WCODER_WCODE}},
};

typedef struct cli {
    ks__quant_options o;
    int quiet;
    int progress_lines;
    const char *skip[MAX_NAMES], *outputs[MAX_NAMES];
    char *skip_buf, *outputs_buf;
} cli;

/* Splits a comma list into names (pointing into *buf, which the caller frees). */
static int split_names(const char *flag, const char *arg, char **buf, const char **names,
                       uint32_t *num) {
    if (!(*buf = strdup(arg))) return -1;
    for (char *save = NULL, *tok = strtok_r(*buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (*num == MAX_NAMES) {
            fprintf(stderr, "ks-quant: %s: more than %d names\n", flag, MAX_NAMES);
            return -1;
        }
        names[(*num)++] = tok;
    }
    if (*num == 0) fprintf(stderr, "ks-quant: %s: empty list\n", flag);
    return *num ? 0 : -1;
}

static int parse_args(int argc, char **argv, cli *c) {
    ks__quant_options *o = &c->o;
    const char *skip_arg = NULL, *outputs_arg = NULL;
    int word[6] = {-1, -1, -1, -1, -1, -1}; /* per k_word_flags entry: -1 not given */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc, matched = 0;
        for (size_t f = 0; f < sizeof(k_word_flags) / sizeof(k_word_flags[0]) && has; f++) {
            const word_flag *w = &k_word_flags[f];
            if (strcmp(a, w->flag) != 0) continue;
            const char *v = argv[++i];
            int k = 0;
            while (k < 7 && w->words[k] && strcmp(v, w->words[k]) != 0)
                k++;
            if (k == 7 || !w->words[k]) {
                fprintf(stderr, "ks-quant: %s: '%s' is not %s\n", a, v, w->list);
                return -1;
            }
            word[f] = w->values[k];
            matched = 1;
            break;
        }
        if (matched) continue;
        double *dbl = !has                                    ? NULL
                      : strcmp(a, "--percentile") == 0        ? &o->percentile
                      : strcmp(a, "--min-cosine") == 0        ? &o->min_cosine
                      : strcmp(a, "--min-output-cosine") == 0 ? &o->min_output_cosine
                                                              : NULL;
        int *num = !has                                    ? NULL
                   : strcmp(a, "--max-images") == 0        ? &o->max_images
                   : strcmp(a, "--eval-images") == 0       ? &o->eval_images
                   : strcmp(a, "--calibration-crops") == 0 ? &o->crops
                   : strcmp(a, "--bench") == 0             ? &o->bench_runs
                                                           : NULL;
        if (dbl) {
            double lo = dbl == &o->percentile ? 50.0001 : 0.0, hi = dbl == &o->percentile ? 100 : 1;
            char *end = NULL, *s = argv[++i];
            double v = strtod(s, &end);
            if (!s[0] || *end || !(v >= lo && v <= hi)) {
                fprintf(stderr, "ks-quant: %s must be in %s, got '%s'\n", a,
                        dbl == &o->percentile ? "(50, 100]" : "[0, 1]", s);
                return -1;
            }
            *dbl = v;
        } else if (num) {
            long lo = num == &o->crops ? 0 : 1, hi = num == &o->crops         ? 6
                                                     : num == &o->eval_images ? 1000
                                                                              : 100000;
            char *end = NULL, *s = argv[++i];
            long v = strtol(s, &end, 10);
            if (!s[0] || *end || v < lo || v > hi) {
                fprintf(stderr, "ks-quant: %s: bad count '%s'\n", a, s);
                return -1;
            }
            *num = (int)v;
        } else if (strcmp(a, "--calibration") == 0 && has) {
            o->calib_dir = argv[++i];
        } else if (strcmp(a, "--preprocess") == 0 && has) {
            o->preprocess_spec = argv[++i];
        } else if (strcmp(a, "--skip") == 0 && has) {
            skip_arg = argv[++i];
        } else if (strcmp(a, "--outputs") == 0 && has) {
            outputs_arg = argv[++i];
        } else if (strcmp(a, "--report") == 0 && has) {
            o->report_path = argv[++i];
        } else if (strcmp(a, "--no-speed-check") == 0) {
            o->speed_check = false;
        } else if (strcmp(a, "--no-equalize") == 0) {
            o->equalize = false;
        } else if (strcmp(a, "--no-bias-correction") == 0) {
            word[1] = KS__QUANT_BIAS_OFF; /* the last of the bias flags counts */
        } else if (strcmp(a, "--int8-output-layers") == 0) {
            o->int8_output_layers = true;
        } else if (strcmp(a, "--weights-only") == 0) {
            o->weights_only = true;
        } else if (strcmp(a, "--quiet") == 0) {
            c->quiet = 1;
        } else if (strcmp(a, "--progress-lines") == 0) {
            c->progress_lines = 1;
        } else if (strcmp(a, "--entropy") == 0) {
            o->entropy = true;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage();
            exit(0);
        } else if (a[0] != '-' && !o->in_path) {
            o->in_path = a;
        } else if (a[0] != '-' && !o->out_path) {
            o->out_path = a;
        } else {
            fprintf(stderr, "ks-quant: unexpected argument '%s'%s\n", a,
                    a[0] == '-' && !has ? " (missing value?)" : "");
            return -1;
        }
    }
    if (word[0] >= 0) o->method = (ks__quant_method)word[0];
    if (word[1] >= 0) o->bias_correction = (ks__quant_bias)word[1];
    if (word[2] >= 0) o->gptq = word[2] == 1;
    if (word[4] >= 0) o->fallback = (ks__quant_fallback)word[4];
    if (word[5] >= 0) o->coder = (uint8_t)word[5];
    const char *problem = !o->in_path || !o->out_path ? "IN.ksm and OUT.ksm are required"
                          : !o->calib_dir             ? "--calibration DIR is required"
                          : o->coder && !o->entropy   ? "--coder needs --entropy"
                          : o->weights_only && word[3] == KS__QUANT_FWEIGHTS_FP32
                              ? "--weights-only with --fallback-weights fp32 would write the "
                                "model unchanged"
                              : NULL;
    if (problem) {
        fprintf(stderr, "ks-quant: %s\n", problem);
        return -1;
    }
    if (word[3] >= 0) o->fallback_weights = (ks__quant_fweights)word[3];
    if (skip_arg && split_names("--skip", skip_arg, &c->skip_buf, c->skip, &o->num_skip)) return -1;
    if (outputs_arg &&
        split_names("--outputs", outputs_arg, &c->outputs_buf, c->outputs, &o->num_outputs))
        return -1;
    o->skip = c->skip;
    o->outputs = c->outputs;
    return 0;
}

static void on_log(void *user, ks_log_level level, const char *message) {
    const cli *c = user;
    if (level >= KS_LOG_INFO && c->quiet) return;
    fprintf(stderr, "ks-quant: %s%s\n", level == KS_LOG_WARN ? "warning: " : "", message);
}

/* A progress bar on a terminal; only the final state otherwise. */
static void on_progress(void *user, const char *what, int done, int total) {
    const cli *c = user;
    if (c->progress_lines) {
        fprintf(stderr, "progress\t%s\t%d\t%d\n", what, done, total);
        fflush(stderr);
        return;
    }
    if (c->quiet || (!isatty(2) && done < total)) return;
    enum { WIDTH = 30 };
    int fill = total > 0 ? done * WIDTH / total : WIDTH;
    char bar[WIDTH + 1];
    for (int i = 0; i < WIDTH; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[WIDTH] = '\0';
    fprintf(stderr, "\r%-22s [%s] %d/%d", what, bar, done, total);
    if (done >= total) fputc('\n', stderr);
    fflush(stderr);
}

int main(int argc, char **argv) {
    static cli c;
    ks__quant_options_default(&c.o);
    c.o.log = on_log;
    c.o.progress = on_progress;
    c.o.user = &c;
    if (parse_args(argc, argv, &c)) {
        usage();
        free(c.skip_buf);
        free(c.outputs_buf);
        return 2;
    }
    const ks__quant_options *o = &c.o;
    ks__quant_report r;
    char err[8192];
    ks_status st = ks__quant_run(o, &r, err, sizeof(err));
    free(c.skip_buf);
    free(c.outputs_buf);
    if (st) {
        fprintf(stderr, "ks-quant: %s\n", err);
        return st == KS_STATUS_INVALID_ARGUMENT ? 2 : 1;
    }
    printf("%s: %u of %u layers int8, %zu -> %zu bytes (%.3fx)", o->out_path, r.num_int8,
           r.num_layers, r.in_bytes, r.out_bytes,
           r.in_bytes ? (double)r.out_bytes / (double)r.in_bytes : 0.0);
    for (uint32_t i = 0; i < r.num_outputs; i++)
        printf("%s%s cosine %.5f", i ? ", " : "; ", r.outputs[i].name, r.outputs[i].cosine);
    if (o->fallback_weights != KS__QUANT_FWEIGHTS_FP32)
        printf("; %d fp32 layer%s with %s weights", r.num_fallback_layers,
               r.num_fallback_layers == 1 ? "" : "s",
               o->fallback_weights == KS__QUANT_FWEIGHTS_INT8 ? "int8" : "fp16");
    printf("\n");
    if (o->bench_runs) {
        double mf = r.bench_fp32_median_ms, mq = r.bench_int8_median_ms;
        printf("bench (1 thread, %d interleaved runs): fp32 median %.3f ms (min %.3f), int8 "
               "median %.3f ms (min %.3f), speedup %.2fx\n",
               o->bench_runs, mf, r.bench_fp32_min_ms, mq, r.bench_int8_min_ms,
               mq > 0 ? mf / mq : 0.0);
    }
    ks__quant_report_free(&r);
    return 0;
}
