/* ks-quant IN.ksm OUT.ksm --calibration DIR [options]
 * Post-training int8 quantization of a float .ksm (see engine/quant/quant.h and
 * docs/compression.md, "Post-training int8 (ks-quant)").
 *
 * Steps: decode the calibration images and preprocess them into the model input; run the fp32
 * model on each with every intermediate kept (KS_SESSION_KEEP_ALL_TENSORS, as ks-run --dump-all)
 * and collect per-tensor and per-channel statistics; equalize per-channel ranges across conv
 * pairs (exact fp32 rewrite, checked against the original outputs) and calibrate again; pick I8
 * params per tensor (MSE clipping by default); keep the layers computing the outputs in fp32;
 * correct conv biases for the int8 weights' mean error; quantize conv/FC weights per
 * output channel; rewrite the graph with QUANTIZE/DEQUANTIZE at the int8/fp32 borders; then run
 * the int8 graph against fp32 on a few images, measure per-layer cosine similarity and per-layer
 * time, and return layers to fp32 where the cosine is below --min-cosine or int8 is slower. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "image_io.h"
#include "kestrel/engine.h"
#include "kestrel/imgproc.h"
#include "ksm.h"
#include "quant.h"
#include "wquant.h"

#define MAX_MODEL_BYTES ((size_t)1 << 31)
#define MAX_SKIP 256
#define MAX_CROPS 6 /* --calibration-crops */
/* Equalization is an exact fp32 rewrite; outputs moving by more than this (relative to each
 * output's largest magnitude) mean a bug, and the pass is dropped. */
#define EQUALIZE_TOLERANCE 1e-4

typedef struct preprocess {
    float mean[3], scale[3];
    int layout; /* -1: from the input shape */
    int color;  /* ks_channel_order */
    int32_t width_px, height_px;
} preprocess;

/* --fallback: how the output check (--min-output-cosine) picks the layers it returns to fp32. */
enum {
    FALLBACK_SENSITIVITY = 0, /* measured gain of the model outputs per layer (default) */
    FALLBACK_CHEAP = 1,       /* that gain per microsecond the layer costs in fp32 */
    FALLBACK_OWN_ERROR = 2,   /* largest own error first, an eighth per round (old) */
    FALLBACK_SMALL = 3,       /* that gain per weight the layer would store in fp32 */
};

/* --fallback-weights: storage of the weights of the conv/FC layers left in fp32. */
enum { FW_FP32 = 0, FW_FP16 = 1, FW_INT8 = 2 };

/* --bias-correction values */
enum { BIAS_OFF = 0, BIAS_EMPIRICAL = 1, BIAS_ANALYTIC = 2, BIAS_AUTO = 3 };

typedef struct options {
    const char *in_path, *out_path, *calib_dir, *report_path, *preprocess_spec;
    ks__quant_method method;
    double percentile, min_cosine, min_output_cosine;
    int max_images, eval_images, bench_runs, max_rounds;
    int speed_check, quiet;
    int entropy;            /* --entropy: write .ksm 1.2, losslessly packed (ksm.h) */
    int coder;              /* --coder: 0 best, else the one KS__WCODER_* allowed (+1) */
    int equalize;           /* cross-layer equalization (equalize.c), on by default */
    int bias_correction;    /* BIAS_*: analytic by default */
    int int8_output_layers; /* quantize the layers that compute the model outputs too */
    int crops;              /* --calibration-crops: extra crops per calibration image */
    int fallback;           /* --fallback: FALLBACK_* (how the output check picks layers) */
    int gptq;               /* --weight-rounding gptq: error-compensated weights (gptq.c) */
    int fallback_weights;   /* FW_*: weights of the layers left in fp32 (-1: not given) */
    int weights_only;       /* --weights-only: every layer fp32, weights stored int8 */
    char *skip[MAX_SKIP];
    int num_skip;
    char *skip_buf;
    char *outputs[MAX_SKIP]; /* --outputs: graph outputs the output check considers */
    int num_outputs;
    char *outputs_buf;
    char passes[512]; /* what the data-free passes did, for the report and metadata */
} options;

typedef struct image_list {
    char **paths;
    int count;
} image_list;

typedef struct node_time {
    uint64_t *ns; /* per node: minimum over runs */
    uint32_t count;
} node_time;

static void usage(void) {
    fprintf(stderr,
            "usage: ks-quant IN.ksm OUT.ksm --calibration DIR [options]\n"
            "  Post-training int8 quantization of a float model.\n"
            "  --calibration DIR            folder of calibration images (JPEG, PNG, BMP)\n"
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
            "  --quiet                      no progress bar\n");
}

/* ---- argument parsing --------------------------------------------------------------------- */

static int parse_double(const char *s, double lo, double hi, double *out) {
    char *end = NULL;
    double v = strtod(s, &end);
    if (!s[0] || *end || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (!s[0] || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

/* "a:b:c" or "a" -> three floats. */
static int parse_triplet(const char *s, float out[3]) {
    double v[3];
    int n = 0;
    const char *p = s;
    while (n < 3) {
        char *end = NULL;
        v[n] = strtod(p, &end);
        if (end == p || !isfinite(v[n])) return -1;
        n++;
        if (*end == ':') {
            p = end + 1;
            continue;
        }
        if (*end) return -1;
        break;
    }
    if (n == 2) return -1;
    for (int i = 0; i < 3; i++)
        out[i] = (float)(n == 1 ? v[0] : v[i]);
    return 0;
}

static int parse_preprocess(const char *spec, preprocess *pp, char *err, size_t err_cap) {
    char buf[512];
    if (strlen(spec) >= sizeof(buf)) {
        snprintf(err, err_cap, "--preprocess: spec too long");
        return -1;
    }
    strcpy(buf, spec);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            snprintf(err, err_cap, "--preprocess: '%s' is not KEY=VALUE", tok);
            return -1;
        }
        *eq = '\0';
        const char *k = tok, *v = eq + 1;
        int bad = 0;
        if (strcmp(k, "mean") == 0) {
            bad = parse_triplet(v, pp->mean);
        } else if (strcmp(k, "scale") == 0) {
            bad = parse_triplet(v, pp->scale);
            for (int i = 0; i < 3 && !bad; i++)
                bad = pp->scale[i] == 0.0f;
        } else if (strcmp(k, "layout") == 0) {
            if (strcmp(v, "nhwc") == 0)
                pp->layout = KS_TENSOR_LAYOUT_NHWC;
            else if (strcmp(v, "nchw") == 0)
                pp->layout = KS_TENSOR_LAYOUT_NCHW;
            else
                bad = 1;
        } else if (strcmp(k, "color") == 0) {
            if (strcmp(v, "rgb") == 0)
                pp->color = KS_CHANNEL_ORDER_RGB;
            else if (strcmp(v, "bgr") == 0)
                pp->color = KS_CHANNEL_ORDER_BGR;
            else
                bad = 1;
        } else if (strcmp(k, "size") == 0) {
            int w = 0, h = 0;
            char tail;
            if (sscanf(v, "%dx%d%c", &w, &h, &tail) != 2 || w < 1 || h < 1 || w > 16384 ||
                h > 16384)
                bad = 1;
            pp->width_px = w;
            pp->height_px = h;
        } else {
            snprintf(err, err_cap,
                     "--preprocess: unknown key '%s' (mean, scale, layout, size, color)", k);
            return -1;
        }
        if (bad) {
            snprintf(err, err_cap, "--preprocess: bad value '%s' for '%s'", v, k);
            return -1;
        }
    }
    return 0;
}

static int parse_args(int argc, char **argv, options *o) {
    o->method = KS__QUANT_METHOD_MSE;
    o->percentile = 99.99;
    o->min_cosine = 0.999;
    o->min_output_cosine = 0.999;
    o->max_images = 100;
    o->eval_images = 4;
    o->max_rounds = 16;
    o->speed_check = 1;
    o->equalize = 1;
    o->fallback_weights = -1;
    o->bias_correction = 2;
    const char *skip_arg = NULL, *outputs_arg = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (strcmp(a, "--calibration") == 0 && has) {
            o->calib_dir = argv[++i];
        } else if (strcmp(a, "--preprocess") == 0 && has) {
            o->preprocess_spec = argv[++i];
        } else if (strcmp(a, "--calibration-method") == 0 && has) {
            const char *v = argv[++i];
            if (strcmp(v, "minmax") == 0 || strcmp(v, "min-max") == 0)
                o->method = KS__QUANT_METHOD_MINMAX;
            else if (strcmp(v, "percentile") == 0)
                o->method = KS__QUANT_METHOD_PERCENTILE;
            else if (strcmp(v, "kl") == 0 || strcmp(v, "entropy") == 0)
                o->method = KS__QUANT_METHOD_KL;
            else if (strcmp(v, "mse") == 0)
                o->method = KS__QUANT_METHOD_MSE;
            else {
                fprintf(stderr,
                        "ks-quant: --calibration-method: '%s' is not minmax, percentile, "
                        "kl or mse\n",
                        v);
                return -1;
            }
        } else if (strcmp(a, "--percentile") == 0 && has) {
            if (parse_double(argv[++i], 50.0001, 100.0, &o->percentile)) {
                fprintf(stderr, "ks-quant: --percentile must be in (50, 100], got '%s'\n", argv[i]);
                return -1;
            }
        } else if (strcmp(a, "--min-cosine") == 0 && has) {
            if (parse_double(argv[++i], 0.0, 1.0, &o->min_cosine)) {
                fprintf(stderr, "ks-quant: --min-cosine must be in [0, 1], got '%s'\n", argv[i]);
                return -1;
            }
        } else if (strcmp(a, "--min-output-cosine") == 0 && has) {
            if (parse_double(argv[++i], 0.0, 1.0, &o->min_output_cosine)) {
                fprintf(stderr, "ks-quant: --min-output-cosine must be in [0, 1], got '%s'\n",
                        argv[i]);
                return -1;
            }
        } else if (strcmp(a, "--max-images") == 0 && has) {
            if (parse_int(argv[++i], 1, 100000, &o->max_images)) goto bad_int;
        } else if (strcmp(a, "--eval-images") == 0 && has) {
            if (parse_int(argv[++i], 1, 1000, &o->eval_images)) goto bad_int;
        } else if (strcmp(a, "--calibration-crops") == 0 && has) {
            if (parse_int(argv[++i], 0, MAX_CROPS, &o->crops)) goto bad_int;
        } else if (strcmp(a, "--bench") == 0 && has) {
            if (parse_int(argv[++i], 1, 100000, &o->bench_runs)) goto bad_int;
        } else if (strcmp(a, "--skip") == 0 && has) {
            skip_arg = argv[++i];
        } else if (strcmp(a, "--outputs") == 0 && has) {
            outputs_arg = argv[++i];
        } else if (strcmp(a, "--report") == 0 && has) {
            o->report_path = argv[++i];
        } else if (strcmp(a, "--no-speed-check") == 0) {
            o->speed_check = 0;
        } else if (strcmp(a, "--no-equalize") == 0) {
            o->equalize = 0;
        } else if (strcmp(a, "--no-bias-correction") == 0) {
            o->bias_correction = 0;
        } else if (strcmp(a, "--int8-output-layers") == 0) {
            o->int8_output_layers = 1;
        } else if (strcmp(a, "--bias-correction") == 0 && has) {
            const char *v = argv[++i];
            if (strcmp(v, "empirical") == 0)
                o->bias_correction = 1;
            else if (strcmp(v, "analytic") == 0)
                o->bias_correction = 2;
            else if (strcmp(v, "auto") == 0)
                o->bias_correction = BIAS_AUTO;
            else {
                fprintf(stderr,
                        "ks-quant: --bias-correction: '%s' is not empirical, analytic or auto\n",
                        v);
                return -1;
            }
        } else if (strcmp(a, "--weight-rounding") == 0 && has) {
            const char *v = argv[++i];
            if (strcmp(v, "nearest") == 0)
                o->gptq = 0;
            else if (strcmp(v, "gptq") == 0)
                o->gptq = 1;
            else {
                fprintf(stderr, "ks-quant: --weight-rounding: '%s' is not nearest or gptq\n", v);
                return -1;
            }
        } else if (strcmp(a, "--weights-only") == 0) {
            o->weights_only = 1;
        } else if (strcmp(a, "--fallback-weights") == 0 && has) {
            const char *v = argv[++i];
            if (strcmp(v, "fp32") == 0)
                o->fallback_weights = FW_FP32;
            else if (strcmp(v, "fp16") == 0)
                o->fallback_weights = FW_FP16;
            else if (strcmp(v, "int8") == 0)
                o->fallback_weights = FW_INT8;
            else {
                fprintf(stderr, "ks-quant: --fallback-weights: '%s' is not fp32, fp16 or int8\n",
                        v);
                return -1;
            }
        } else if (strcmp(a, "--fallback") == 0 && has) {
            const char *v = argv[++i];
            if (strcmp(v, "sensitivity") == 0)
                o->fallback = FALLBACK_SENSITIVITY;
            else if (strcmp(v, "cheap") == 0)
                o->fallback = FALLBACK_CHEAP;
            else if (strcmp(v, "own-error") == 0)
                o->fallback = FALLBACK_OWN_ERROR;
            else if (strcmp(v, "small") == 0)
                o->fallback = FALLBACK_SMALL;
            else {
                fprintf(stderr,
                        "ks-quant: --fallback: '%s' is not sensitivity, cheap, small or "
                        "own-error\n",
                        v);
                return -1;
            }
        } else if (strcmp(a, "--quiet") == 0) {
            o->quiet = 1;
        } else if (strcmp(a, "--entropy") == 0) {
            o->entropy = 1;
        } else if (strcmp(a, "--coder") == 0 && has) {
            const char *v = argv[++i];
            if (strcmp(v, "best") == 0)
                o->coder = 0;
            else if (strcmp(v, "rans") == 0)
                o->coder = 1 + KS__WCODER_RANS;
            else if (strcmp(v, "wcode") == 0)
                o->coder = 1 + KS__WCODER_WCODE;
            else {
                fprintf(stderr, "ks-quant: --coder: '%s' is not best, rans or wcode\n", v);
                return -1;
            }
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
        continue;
    bad_int:
        fprintf(stderr, "ks-quant: %s: bad count '%s'\n", a, argv[i]);
        return -1;
    }
    if (!o->in_path || !o->out_path) {
        fprintf(stderr, "ks-quant: IN.ksm and OUT.ksm are required\n");
        return -1;
    }
    if (!o->calib_dir) {
        fprintf(stderr, "ks-quant: --calibration DIR is required\n");
        return -1;
    }
    if (o->coder && !o->entropy) {
        fprintf(stderr, "ks-quant: --coder needs --entropy\n");
        return -1;
    }
    if (o->weights_only && o->fallback_weights == FW_FP32) {
        fprintf(stderr, "ks-quant: --weights-only with --fallback-weights fp32 would write the "
                        "model unchanged\n");
        return -1;
    }
    if (o->fallback_weights < 0) o->fallback_weights = FW_INT8;
    if (skip_arg) {
        o->skip_buf = strdup(skip_arg);
        if (!o->skip_buf) return -1;
        for (char *save = NULL, *tok = strtok_r(o->skip_buf, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save)) {
            if (o->num_skip == MAX_SKIP) {
                fprintf(stderr, "ks-quant: --skip: more than %d names\n", MAX_SKIP);
                return -1;
            }
            o->skip[o->num_skip++] = tok;
        }
        if (o->num_skip == 0) {
            fprintf(stderr, "ks-quant: --skip: empty list\n");
            return -1;
        }
    }
    if (outputs_arg) {
        o->outputs_buf = strdup(outputs_arg);
        if (!o->outputs_buf) return -1;
        for (char *save = NULL, *tok = strtok_r(o->outputs_buf, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save)) {
            if (o->num_outputs == MAX_SKIP) {
                fprintf(stderr, "ks-quant: --outputs: more than %d names\n", MAX_SKIP);
                return -1;
            }
            o->outputs[o->num_outputs++] = tok;
        }
        if (o->num_outputs == 0) {
            fprintf(stderr, "ks-quant: --outputs: empty list\n");
            return -1;
        }
    }
    return 0;
}

/* ---- progress ----------------------------------------------------------------------------- */

static void progress(const options *o, const char *what, int done, int total) {
    if (o->quiet || (!isatty(2) && done < total)) return;
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

/* ---- calibration images ------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_images(image_list *l) {
    for (int i = 0; i < l->count; i++)
        free(l->paths[i]);
    free(l->paths);
    memset(l, 0, sizeof(*l));
}

/* Lists DIR, keeps the files that decode (warning about the others). */
static int list_images(const options *o, image_list *out) {
    struct stat sb;
    memset(out, 0, sizeof(*out));
    if (stat(o->calib_dir, &sb) != 0) {
        fprintf(stderr, "ks-quant: calibration folder '%s' does not exist\n", o->calib_dir);
        return -1;
    }
    if (!S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "ks-quant: --calibration '%s' is not a folder\n", o->calib_dir);
        return -1;
    }
    DIR *d = opendir(o->calib_dir);
    if (!d) {
        fprintf(stderr, "ks-quant: cannot open calibration folder '%s'\n", o->calib_dir);
        return -1;
    }
    char **names = NULL;
    int n = 0, cap = 0, rc = -1, skipped = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", o->calib_dir, e->d_name);
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, (size_t)cap * sizeof(char *));
            if (!nn) goto done;
            names = nn;
        }
        if (!(names[n] = strdup(path))) goto done;
        n++;
    }
    if (n == 0) {
        fprintf(stderr,
                "ks-quant: calibration folder '%s' has no files (zero-size calibration set)\n",
                o->calib_dir);
        goto done;
    }
    qsort(names, (size_t)n, sizeof(char *), cmp_str);
    out->paths = calloc((size_t)n, sizeof(char *));
    if (!out->paths) goto done;
    for (int i = 0; i < n && out->count < o->max_images; i++) {
        ks_image_buf img;
        char err[512];
        if (ks_image_load(names[i], 0, &img, err, sizeof(err))) {
            fprintf(stderr, "ks-quant: warning: skipping '%s': %s\n", names[i], err);
            skipped++;
            continue;
        }
        int empty = img.image.width_px < 1 || img.image.height_px < 1;
        ks_image_buf_free(&img);
        if (empty) {
            fprintf(stderr, "ks-quant: warning: skipping '%s': empty image\n", names[i]);
            skipped++;
            continue;
        }
        out->paths[out->count++] = names[i];
        names[i] = NULL;
    }
    if (out->count == 0) {
        fprintf(stderr,
                "ks-quant: no decodable images in calibration folder '%s' (%d file%s skipped; "
                "JPEG, PNG and BMP are read)\n",
                o->calib_dir, skipped, skipped == 1 ? "" : "s");
        goto done;
    }
    rc = 0;
done:
    closedir(d);
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (rc) free_images(out);
    return rc;
}

/* ---- model input -------------------------------------------------------------------------- */

static int input_shape(const ks_model *m, preprocess *pp, ks_tensor_shape *shape) {
    ks_tensor_info info;
    if (ks_model_num_inputs(m) != 1) {
        fprintf(stderr,
                "ks-quant: the model has %u inputs; calibration from images needs exactly "
                "one image input\n",
                ks_model_num_inputs(m));
        return -1;
    }
    ks_model_input_info(m, 0, &info);
    if (info.dtype != KS_DTYPE_F32) {
        fprintf(stderr, "ks-quant: input '%s' is %s; ks-quant needs a float model\n", info.name,
                ks_dtype_string(info.dtype));
        return -1;
    }
    *shape = info.shape;
    if (shape->rank != 4) {
        fprintf(stderr,
                "ks-quant: input '%s' has rank %d; an image input [N,H,W,C] or [N,C,H,W] "
                "is needed\n",
                info.name, shape->rank);
        return -1;
    }
    int64_t *d = shape->dims;
    if (pp->layout < 0)
        pp->layout = (d[3] == 3 || d[3] == 1)   ? KS_TENSOR_LAYOUT_NHWC
                     : (d[1] == 3 || d[1] == 1) ? KS_TENSOR_LAYOUT_NCHW
                                                : KS_TENSOR_LAYOUT_NHWC;
    int hi = pp->layout == KS_TENSOR_LAYOUT_NHWC ? 1 : 2, wi = hi + 1,
        ci = pp->layout == KS_TENSOR_LAYOUT_NHWC ? 3 : 1;
    if (d[0] < 0) d[0] = 1;
    if (d[ci] < 0) d[ci] = 3;
    if (d[ci] != 3 && d[ci] != 1) {
        fprintf(stderr, "ks-quant: input '%s' has %lld channels; images need 1 or 3\n", info.name,
                (long long)d[ci]);
        return -1;
    }
    if (d[ci] == 1) pp->color = KS_CHANNEL_ORDER_GRAY;
    if (pp->width_px) {
        if ((d[wi] >= 0 && d[wi] != pp->width_px) || (d[hi] >= 0 && d[hi] != pp->height_px)) {
            fprintf(stderr,
                    "ks-quant: --preprocess size=%dx%d does not match input '%s' (%lldx%lld)\n",
                    pp->width_px, pp->height_px, info.name, (long long)d[wi], (long long)d[hi]);
            return -1;
        }
        d[wi] = pp->width_px;
        d[hi] = pp->height_px;
    }
    if (d[wi] < 0 || d[hi] < 0) {
        fprintf(stderr, "ks-quant: input '%s' has a dynamic size; give --preprocess size=WxH\n",
                info.name);
        return -1;
    }
    return 0;
}

/* Calibration crops (--calibration-crops): side as a share of the photo's shorter side, centre
 * as a share of its width and height. Crop-fed models (landmarks, pose) see one subject filling
 * the input, which the whole stretched photos of a calibration folder rarely show. */
static const float k_crops[MAX_CROPS][3] = {
    {0.8f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.4f}, {0.6f, 0.3f, 0.5f},
    {0.6f, 0.7f, 0.5f}, {0.4f, 0.5f, 0.3f}, {0.7f, 0.5f, 0.6f},
};

/* Narrows img to crop k (1..MAX_CROPS; 0: the whole image) by moving its plane pointer. */
static void crop_view(ks_image *img, int k) {
    int bpp = img->format == KS_PIXEL_FORMAT_RGB || img->format == KS_PIXEL_FORMAT_BGR     ? 3
              : img->format == KS_PIXEL_FORMAT_RGBA || img->format == KS_PIXEL_FORMAT_BGRA ? 4
              : img->format == KS_PIXEL_FORMAT_GRAY                                        ? 1
                                                                                           : 0;
    if (k < 1 || k > MAX_CROPS || !bpp) return;
    int32_t w = img->width_px, h = img->height_px, shorter = w < h ? w : h;
    int32_t side = (int32_t)(k_crops[k - 1][0] * (float)shorter);
    if (side < 8) return;
    int32_t x0 = (int32_t)(k_crops[k - 1][1] * (float)w) - side / 2;
    int32_t y0 = (int32_t)(k_crops[k - 1][2] * (float)h) - side / 2;
    x0 = x0 < 0 ? 0 : (x0 + side > w ? w - side : x0);
    y0 = y0 < 0 ? 0 : (y0 + side > h ? h - side : y0);
    int32_t stride = img->stride_bytes[0] ? img->stride_bytes[0] : w * bpp;
    img->planes[0] =
        (const uint8_t *)img->planes[0] + (size_t)y0 * (size_t)stride + (size_t)x0 * (size_t)bpp;
    img->stride_bytes[0] = stride;
    img->width_px = side;
    img->height_px = side;
}

static int fill_input_crop(ks_session *s, const preprocess *pp, const char *path, int crop) {
    ks_image_buf img;
    char err[512];
    ks_tensor t;
    if (ks_image_load(path, 0, &img, err, sizeof(err))) {
        fprintf(stderr, "ks-quant: %s\n", err);
        return -1;
    }
    ks_image view = img.image;
    crop_view(&view, crop);
    ks_session_input(s, 0, &t);
    ks_image_to_tensor_desc desc;
    memset(&desc, 0, sizeof(desc));
    for (int i = 0; i < 3; i++) {
        desc.mean[i] = pp->mean[i];
        desc.scale[i] = pp->scale[i];
    }
    desc.channel_order = (ks_channel_order)pp->color;
    desc.layout = (ks_tensor_layout)pp->layout;
    ks_status st = ks_image_to_tensor(&view, &desc, &t);
    ks_image_buf_free(&img);
    if (st) {
        fprintf(stderr, "ks-quant: %s: %s\n", path, ks_last_error(NULL));
        return -1;
    }
    return 0;
}

static int fill_input(ks_session *s, const preprocess *pp, const char *path) {
    return fill_input_crop(s, pp, path, 0);
}

/* ---- sessions ----------------------------------------------------------------------------- */

static int open_session(const ks_model *m, const ks_tensor_shape *shape, ks_session **out) {
    ks_session_desc desc = {.num_threads = 1, .flags = KS_SESSION_KEEP_ALL_TENSORS};
    ks_status st = ks_session_create(m, &desc, out);
    if (!st) st = ks_session_reshape(*out, shape);
    if (st) {
        fprintf(stderr, "ks-quant: session: %s: %s\n", ks_status_string(st), ks_last_error(*out));
        ks_session_destroy(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

static int run_session(ks_session *s) {
    ks_status st = ks_session_run(s);
    if (st) {
        fprintf(stderr, "ks-quant: run: %s: %s\n", ks_status_string(st), ks_last_error(s));
        return -1;
    }
    return 0;
}

static void on_profile(void *user, const ks_op_profile *p) {
    node_time *t = user;
    if (p->node_index < t->count &&
        (t->ns[p->node_index] == 0 || p->elapsed_ns < t->ns[p->node_index]))
        t->ns[p->node_index] = p->elapsed_ns ? p->elapsed_ns : 1;
}

/* The k-th of n evaluation images, spread evenly over the calibration set. */
static const char *eval_image(const image_list *imgs, int k, int n) {
    return imgs->paths[(size_t)k * (size_t)imgs->count / (size_t)n];
}

/* ---- evaluation: per-tensor cosine similarity of the int8 graph vs fp32 ---------------------- */

typedef struct eval {
    double *dot, *n_ref, *n_q; /* per source tensor */
    bool *has;
    uint64_t *t_f32, *t_i8; /* per source node: fp32 node time, int8 node + its conversions */
    uint64_t *t_i8_own;     /* per source node: the int8 node alone */
    uint64_t total_f32, total_i8;
} eval;

static void eval_free(eval *e) {
    free(e->dot);
    free(e->n_ref);
    free(e->n_q);
    free(e->has);
    free(e->t_f32);
    free(e->t_i8);
    free(e->t_i8_own);
    memset(e, 0, sizeof(*e));
}

static double cosine(const eval *e, uint32_t t) {
    if (!e->has[t]) return NAN;
    if (e->n_ref[t] == 0.0 && e->n_q[t] == 0.0) return 1.0;
    if (e->n_ref[t] == 0.0 || e->n_q[t] == 0.0) return 0.0;
    return e->dot[t] / sqrt(e->n_ref[t] * e->n_q[t]);
}

static void accumulate(eval *e, uint32_t t, const float *ref, const ks_tensor *q) {
    size_t n = q->size_bytes / (q->info.dtype == KS_DTYPE_I8 ? 1 : sizeof(float));
    double dot = 0, a = 0, b = 0;
    for (size_t i = 0; i < n; i++) {
        double r = ref[i], v;
        if (q->info.dtype == KS_DTYPE_I8)
            v = (double)q->info.scale * (((const int8_t *)q->data)[i] - q->info.zero_point);
        else
            v = ((const float *)q->data)[i];
        if (!isfinite(r) || !isfinite(v)) continue;
        dot += r * v;
        a += r * r;
        b += v * v;
    }
    e->dot[t] += dot;
    e->n_ref[t] += a;
    e->n_q[t] += b;
    e->has[t] = true;
}

static int evaluate(const options *o, const ks__graph *src, const ks__quant_map *map, ks__graph *qg,
                    ks_session *fs, const ks_tensor_shape *shape, const preprocess *pp,
                    const image_list *imgs, eval *e, const char *what) {
    uint8_t *buf = NULL;
    size_t size = 0;
    char err[1024];
    ks_model *qm = NULL;
    ks_session *qs = NULL;
    int rc = -1;
    uint32_t nt = src->num_tensors, nn = src->num_nodes;
    node_time tf = {0}, tq = {0};
    eval_free(e);
    e->dot = calloc(nt + 1, sizeof(double));
    e->n_ref = calloc(nt + 1, sizeof(double));
    e->n_q = calloc(nt + 1, sizeof(double));
    e->has = calloc(nt + 1, sizeof(bool));
    e->t_f32 = calloc(nn + 1, sizeof(uint64_t));
    e->t_i8 = calloc(nn + 1, sizeof(uint64_t));
    e->t_i8_own = calloc(nn + 1, sizeof(uint64_t));
    tf.count = nn;
    tf.ns = calloc(nn + 1, sizeof(uint64_t));
    tq.count = qg->num_nodes;
    tq.ns = calloc(qg->num_nodes + 1, sizeof(uint64_t));
    if (!e->dot || !e->n_ref || !e->n_q || !e->has || !e->t_f32 || !e->t_i8 || !e->t_i8_own ||
        !tf.ns || !tq.ns)
        goto done;
    ks_status st = ks__ksm_write(qg, &buf, &size, err, sizeof(err));
    if (st) {
        fprintf(stderr, "ks-quant: cannot serialize the int8 graph: %s\n", err);
        goto done;
    }
    ks_model_desc md = {.flags = KS_MODEL_COPY_BUFFER};
    st = ks_model_load_buffer(buf, size, &md, &qm);
    if (st) {
        fprintf(stderr, "ks-quant: the int8 graph does not load: %s: %s\n", ks_status_string(st),
                ks_last_error(NULL));
        goto done;
    }
    if (open_session(qm, shape, &qs)) goto done;
    int n = imgs->count < o->eval_images ? imgs->count : o->eval_images;
    for (int i = 0; i < n; i++) {
        progress(o, what, i, n);
        const char *img = eval_image(imgs, i, n);
        if (fill_input(fs, pp, img) || fill_input(qs, pp, img) || run_session(fs) ||
            run_session(qs))
            goto done;
        for (uint32_t t = 0; t < nt; t++) {
            const ks__tensor *d = &src->tensors[t];
            if ((d->flags & KS__TENSOR_CONST) || d->dtype != KS_DTYPE_F32) continue;
            int32_t qid = map->i8_id[t] >= 0 ? map->i8_id[t] : map->f32_id[t];
            if (qid < 0) continue;
            ks_tensor rt, qt;
            if (ks_session_tensor(fs, t, &rt) || !rt.data) continue;
            if (ks_session_tensor(qs, (uint32_t)qid, &qt) || !qt.data) continue;
            size_t nq = qt.size_bytes / (qt.info.dtype == KS_DTYPE_I8 ? 1 : sizeof(float));
            if (nq * sizeof(float) != rt.size_bytes) continue;
            accumulate(e, t, rt.data, &qt);
        }
    }
    progress(o, what, n, n);
    {
        /* Per-node times, minimum of a few runs each (the machine may be shared). */
        ks_session_set_profiler(fs, on_profile, &tf);
        ks_session_set_profiler(qs, on_profile, &tq);
        for (int r = 0; r < 5; r++)
            if (run_session(fs) || run_session(qs)) goto done;
        ks_session_set_profiler(fs, NULL, NULL);
        for (uint32_t i = 0; i < nn; i++) {
            e->t_f32[i] = tf.ns[i];
            e->total_f32 += tf.ns[i];
        }
        for (uint32_t i = 0; i < qg->num_nodes; i++) {
            int32_t s = i < map->num_dst_nodes ? map->node_src[i] : -1;
            if (s < 0) {
                e->total_i8 += tq.ns[i];
                continue;
            }
            e->t_i8[s] += tq.ns[i];
            uint32_t op = qg->nodes[i].op;
            if ((op != KS_OP_QUANTIZE && op != KS_OP_DEQUANTIZE) || op == src->nodes[s].op)
                e->t_i8_own[s] += tq.ns[i];
            e->total_i8 += tq.ns[i];
        }
    }
    rc = 0;
done:
    free(tf.ns);
    free(tq.ns);
    ks_session_destroy(qs);
    ks_model_destroy(qm);
    if (buf) ks__free(&qg->alloc, buf);
    return rc;
}

typedef struct row {
    uint32_t node;
    double cos;
} row;

static int cmp_row(const void *a, const void *b) {
    double x = ((const row *)a)->cos, y = ((const row *)b)->cos;
    return x < y ? -1 : (x > y ? 1 : 0);
}

/* Each planned int8 layer's own error: cosine of its int8 shadow copy (fed by the exact fp32
 * inputs) against its fp32 output, per source node (NAN where the layer has no shadow). */
static int isolated_cosines(const options *o, const ks__graph *src, const ks__quant_plan *plan,
                            const ks_tensor_shape *shape, const preprocess *pp,
                            const image_list *imgs, double *iso) {
    ks__graph sg;
    ks__quant_map sm = {0};
    char err[1024];
    uint8_t *buf = NULL;
    size_t size = 0;
    ks_model *m = NULL;
    ks_session *s = NULL;
    int rc = -1;
    uint32_t nn = src->num_nodes;
    int32_t *shadow = malloc((nn + 1) * sizeof(int32_t));
    double *acc = calloc(3 * ((size_t)nn + 1), sizeof(double));
    ks__graph_init(&sg, NULL);
    for (uint32_t i = 0; i < nn; i++)
        iso[i] = NAN;
    if (!shadow || !acc) goto done;
    err[0] = '\0';
    if (ks__quant_build(src, plan, &sg, &sm, shadow, err, sizeof(err)) ||
        ks__ksm_write(&sg, &buf, &size, err, sizeof(err))) {
        fprintf(stderr, "ks-quant: cannot build the per-layer check graph: %s\n", err);
        goto done;
    }
    ks_model_desc md = {.flags = KS_MODEL_COPY_BUFFER};
    if (ks_model_load_buffer(buf, size, &md, &m)) {
        fprintf(stderr, "ks-quant: per-layer check graph: %s\n", ks_last_error(NULL));
        goto done;
    }
    if (open_session(m, shape, &s)) goto done;
    int n = imgs->count < o->eval_images ? imgs->count : o->eval_images;
    for (int k = 0; k < n; k++) {
        progress(o, "checking layers", k, n);
        if (fill_input(s, pp, eval_image(imgs, k, n)) || run_session(s)) goto done;
        for (uint32_t i = 0; i < nn; i++) {
            if (shadow[i] < 0) continue;
            int32_t y = src->nodes[i].outputs[0], ref_id = sm.f32_id[y];
            ks_tensor rt, qt;
            if (ref_id < 0 || ks_session_tensor(s, (uint32_t)ref_id, &rt) || !rt.data ||
                ks_session_tensor(s, (uint32_t)shadow[i], &qt) || !qt.data ||
                qt.size_bytes * sizeof(float) != rt.size_bytes)
                continue;
            const float *r = rt.data;
            const int8_t *q = qt.data;
            double dot = 0, a = 0, b = 0;
            for (size_t j = 0; j < qt.size_bytes; j++) {
                double v = (double)qt.info.scale * (q[j] - qt.info.zero_point);
                if (!isfinite(r[j])) continue;
                dot += r[j] * v;
                a += (double)r[j] * r[j];
                b += v * v;
            }
            acc[3 * i] += dot;
            acc[3 * i + 1] += a;
            acc[3 * i + 2] += b;
        }
    }
    progress(o, "checking layers", n, n);
    for (uint32_t i = 0; i < nn; i++) {
        if (shadow[i] < 0) continue;
        double a = acc[3 * i + 1], b = acc[3 * i + 2];
        iso[i] = (a == 0.0 && b == 0.0)   ? 1.0
                 : (a == 0.0 || b == 0.0) ? 0.0
                                          : acc[3 * i] / sqrt(a * b);
    }
    rc = 0;
done:
    ks_session_destroy(s);
    ks_model_destroy(m);
    if (buf) ks__free(&sg.alloc, buf);
    ks__graph_free(&sg);
    ks__quant_map_free(&sm);
    free(shadow);
    free(acc);
    return rc;
}

/* ---- calibration ------------------------------------------------------------------------- */

/* Runs the fp32 session over the calibration images: pass 1 min/max, per-channel statistics and
 * runtime shapes (into plan when given), pass 2 (passes == 2) the histograms. */
static int calibrate(const options *o, const ks__graph *g, ks_session *fs, const preprocess *pp,
                     const image_list *imgs, int passes, ks__quant_calib *calib,
                     ks__quant_plan *plan) {
    for (int pass = 1; pass <= passes; pass++) {
        const char *what = pass == 1 ? "calibrating (range)" : "calibrating (histogram)";
        int per = 1 + o->crops, total = imgs->count * per;
        for (int i = 0; i < total; i++) {
            progress(o, what, i, total);
            if (fill_input_crop(fs, pp, imgs->paths[i / per], i % per) || run_session(fs))
                return -1;
            for (uint32_t t = 0; t < g->num_tensors; t++) {
                const ks__tensor *d = &g->tensors[t];
                ks_tensor rt;
                if ((d->flags & KS__TENSOR_CONST) || d->dtype != KS_DTYPE_F32) continue;
                if (ks_session_tensor(fs, t, &rt) || !rt.data) continue;
                int32_t rank = rt.info.shape.rank;
                if (plan && pass == 1 && i == 0 && rank <= KS_MAX_RANK) { /* whole image 0 */
                    plan->rank[t] = rank;
                    memcpy(&plan->dims[(size_t)t * KS_MAX_RANK], rt.info.shape.dims,
                           (size_t)rank * sizeof(int64_t));
                }
                size_t n = rt.size_bytes / sizeof(float);
                ks_status st = ks__quant_calib_observe(calib, t, rt.data, n, pass);
                if (!st && pass == 1 && rank >= 2 && rank <= KS_MAX_RANK &&
                    rt.info.shape.dims[rank - 1] > 0 && rt.info.shape.dims[rank - 1] < (1 << 20))
                    st = ks__quant_calib_observe_channels(calib, t, rt.data, n,
                                                          (uint32_t)rt.info.shape.dims[rank - 1]);
                if (st) {
                    fprintf(stderr, "ks-quant: out of memory\n");
                    return -1;
                }
            }
        }
        progress(o, what, total, total);
    }
    return 0;
}

/* ---- stored weights of the fp32 layers (--fallback-weights) ------------------------------ */

/* Per source tensor: the values an fp32 layer computes with (plan->f32_weights) and, for int8,
 * the per-channel scales the writer must use to store exactly those values as codes. */
typedef struct fallback_weights {
    uint32_t num_tensors, num_gptq, num_nearest, num_fp16;
    float **values;
    float **scales;
} fallback_weights;

static void fallback_weights_free(fallback_weights *fw) {
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

/* Rounds the weights of every conv/FC whose F32 weight tensor it alone reads (what the writer
 * can compress); gq (may be NULL) gives gptq codes where it solved the layer. */
static int fallback_weights_init(const options *o, const ks__graph *g, const ks__quant_gptq *gq,
                                 fallback_weights *fw) {
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
        if (o->fallback_weights == FW_FP16) {
            for (int64_t k = 0; k < total; k++)
                v[k] = ks__f16_to_f32(ks__f32_to_f16(wf[k]));
            fw->num_fp16++;
            continue;
        }
        float *sc = malloc((size_t)oc * sizeof(float));
        if (!sc) goto oom;
        fw->scales[id] = sc;
        if (gq && gq->q && gq->q[id]) {
            for (int64_t c = 0; c < oc; c++) {
                sc[c] = gq->scale[id][c];
                for (int64_t k = 0; k < per; k++) /* the reader's expression, bit for bit */
                    v[c * per + k] = (float)gq->q[id][c * per + k] * sc[c];
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
        for (int64_t c = 0; c < oc; c++)
            if (!(sc[c] > 0.0f)) sc[c] = 1.0f;
    }
    free(uses);
    free(compressible);
    return 0;
oom:
    free(uses);
    free(compressible);
    fallback_weights_free(fw);
    fprintf(stderr, "ks-quant: out of memory (fallback weights)\n");
    return -1;
}

/* Writer options that store the fp32 layers' weights of the built graph qg as rounded (their
 * values there already are the rounded ones, plan->f32_weights): int8 codes with the rounding's
 * scales, or (fp16) packed F32 constants. *sel and *scl (freed by the
 * caller) back wo->select and wo->int8_scales. Returns the number of layers, -1 on failure. */
static int fallback_select(const options *o, const ks__graph *src, const fallback_weights *fw,
                           const ks__quant_map *map, const ks__graph *qg, ks__ksm_write_opts *wo,
                           uint8_t **sel, const float ***scl) {
    int num = 0;
    *sel = calloc(qg->num_tensors + 1, 1);
    *scl = calloc(qg->num_tensors + 1, sizeof(float *));
    if (!*sel || !*scl) {
        fprintf(stderr, "ks-quant: out of memory\n");
        return -1;
    }
    for (uint32_t t = 0; t < src->num_tensors && t < fw->num_tensors; t++) {
        int32_t id = map->f32_id[t];
        if (!fw->values[t] || id < 0 || (uint32_t)id >= qg->num_tensors) continue;
        (*sel)[id] = 1;
        (*scl)[id] = fw->scales[t];
        num++;
    }
    if (o->fallback_weights == FW_FP16) {
        /* The values are f16 but stay F32 constants, which packing stores as f16 losslessly
         * (.ksm 1.2 coder F16_BCODE): the fp32 kernels see exactly the checked values (F16
         * constants would take other kernel paths). */
        wo->pack = true;
        return num;
    }
    wo->weights = KS__KSM_WEIGHTS_INT8;
    wo->select = *sel;
    wo->int8_scales = *scl;
    wo->num_select = qg->num_tensors;
    return num;
}

static int compare_fp32(const options *o, const ks_model *a, const ks_model *b,
                        const ks_tensor_shape *shape, const preprocess *pp, const image_list *imgs,
                        double *max_rel_out, const char **worst_out);

/* The file must compute exactly what the checks measured: its fp32 layers decode their stored
 * weights to the values the checked graph held. Compares the outputs of OUT (as read back) and
 * of the checked graph on the evaluation images, bit for bit. */
static int verify_stored(const options *o, const ks__graph *qg, const ks_tensor_shape *shape,
                         const preprocess *pp, const image_list *imgs) {
    uint8_t *buf = NULL;
    size_t size = 0;
    char err[512];
    ks_model *checked = NULL, *stored = NULL;
    int rc = -1;
    ks_model_desc md = {.flags = KS_MODEL_COPY_BUFFER};
    if (ks__ksm_write(qg, &buf, &size, err, sizeof(err)) ||
        ks_model_load_buffer(buf, size, &md, &checked) ||
        ks_model_load_file(o->out_path, NULL, &stored)) {
        fprintf(stderr, "ks-quant: cannot read back %s: %s\n", o->out_path, ks_last_error(NULL));
        goto done;
    }
    double max_rel = 0.0;
    const char *worst = "";
    if (compare_fp32(o, checked, stored, shape, pp, imgs, &max_rel, &worst)) goto done;
    if (max_rel != 0.0) {
        fprintf(stderr,
                "ks-quant: internal error: %s computes output '%s' differently from the checked "
                "model (max relative difference %g)\n",
                o->out_path, worst, max_rel);
        goto done;
    }
    rc = 0;
done:
    ks_model_destroy(checked);
    ks_model_destroy(stored);
    ks__free(&qg->alloc, buf);
    return rc;
}

/* ---- error-compensated weight rounding (--weight-rounding gptq) --------------------------- */

static const float *session_tensor(void *user, int32_t id, size_t *num) {
    ks_tensor rt;
    if (ks_session_tensor(user, (uint32_t)id, &rt) || !rt.data || rt.info.dtype != KS_DTYPE_F32)
        return NULL;
    *num = rt.size_bytes / sizeof(float);
    return rt.data;
}

/* Hessian budget of one pass over the images (layers beyond it take another pass). */
#define GPTQ_BUDGET_BYTES ((size_t)192 << 20)

/* Runs the fp32 model over the calibration images once per batch of layers, collecting each
 * layer's input statistics, and rounds their weights (plan->gptq then points at the result). */
static int gptq_weights(const options *o, const ks__graph *g, ks_session *fs, const preprocess *pp,
                        const image_list *imgs, ks__quant_plan *plan, ks__quant_gptq *gq) {
    double t0 = (double)clock() / CLOCKS_PER_SEC;
    if (ks__quant_gptq_init(gq, g, plan, GPTQ_BUDGET_BYTES)) goto oom;
    for (int b = 0; b < gq->num_batches; b++) {
        char what[64];
        snprintf(what, sizeof(what), "weight rounding (%d/%d)", b + 1, gq->num_batches);
        if (ks__quant_gptq_alloc_batch(gq, b)) goto oom;
        for (int i = 0; i < imgs->count; i++) {
            progress(o, what, i, imgs->count);
            if (fill_input(fs, pp, imgs->paths[i]) || run_session(fs)) return -1;
            ks__quant_gptq_observe(gq, b, g, plan, session_tensor, fs, i, imgs->count);
        }
        progress(o, what, imgs->count, imgs->count);
        if (ks__quant_gptq_solve_batch(gq, g, b)) goto oom;
    }
    if (o->gptq) plan->gptq = gq; /* else only the fp32 layers' stored weights use it */
    if (!o->quiet)
        fprintf(stderr,
                "ks-quant: gptq weight rounding: %u layers (%u above %d inputs per channel keep "
                "nearest), H-weighted error %.3f of nearest's (mean per layer; worst layer "
                "%.3f), %.1f s\n",
                gq->num_solved, gq->num_capped, KS__QUANT_GPTQ_MAX_K,
                gq->proxy_nearest > 0 ? gq->proxy_gptq / gq->proxy_nearest : 1.0,
                gq->proxy_nearest > 0 ? gq->proxy_worst : 1.0,
                (double)clock() / CLOCKS_PER_SEC - t0);
    return 0;
oom:
    fprintf(stderr, "ks-quant: out of memory (weight rounding)\n");
    return -1;
}

static bool output_checked(const options *o, const char *name);

/* Largest difference between the outputs (those --outputs selects) of two fp32 models on the
 * evaluation images, relative to each output's largest magnitude (the equalization must be an
 * exact rewrite); worst_out names the output. */
static int compare_fp32(const options *o, const ks_model *a, const ks_model *b,
                        const ks_tensor_shape *shape, const preprocess *pp, const image_list *imgs,
                        double *max_rel_out, const char **worst_out) {
    ks_session *sa = NULL, *sb = NULL;
    int rc = -1;
    *max_rel_out = 0.0;
    *worst_out = "";
    if (open_session(a, shape, &sa) || open_session(b, shape, &sb)) goto done;
    int n = imgs->count < o->eval_images ? imgs->count : o->eval_images;
    for (int k = 0; k < n; k++) {
        const char *img = eval_image(imgs, k, n);
        if (fill_input(sa, pp, img) || fill_input(sb, pp, img) || run_session(sa) ||
            run_session(sb))
            goto done;
        for (uint32_t i = 0; i < ks_model_num_outputs(a); i++) {
            ks_tensor ta, tb;
            if (ks_session_output(sa, i, &ta) || ks_session_output(sb, i, &tb) ||
                ta.size_bytes != tb.size_bytes || ta.info.dtype != KS_DTYPE_F32)
                continue;
            const float *x = ta.data, *y = tb.data;
            size_t m = ta.size_bytes / sizeof(float);
            double top = 0.0, diff = 0.0;
            for (size_t j = 0; j < m; j++) {
                if (!isfinite(x[j]) || !isfinite(y[j])) continue;
                top = fmax(top, fabs((double)x[j]));
                diff = fmax(diff, fabs((double)x[j] - (double)y[j]));
            }
            double rel = top > 0.0 ? diff / top : diff;
            if (rel > *max_rel_out && output_checked(o, ta.info.name)) {
                *max_rel_out = rel;
                *worst_out = ta.info.name;
            }
        }
    }
    rc = 0;
done:
    ks_session_destroy(sa);
    ks_session_destroy(sb);
    return rc;
}

/* ---- empirical bias correction ------------------------------------------------------------ */

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
static int empirical_bias(const options *o, ks__graph *src, const ks__quant_plan *plan,
                          ks__quant_biascorr *bc, ks_session *fs, const ks_tensor_shape *shape,
                          const preprocess *pp, const image_list *imgs, int *rounds_out) {
    uint32_t nn = src->num_nodes, nt = src->num_tensors;
    int32_t *lvl_t = calloc(nt + 1, sizeof(int32_t)), *lvl = malloc((nn + 1) * sizeof(int32_t));
    double **sum = calloc(nn + 1, sizeof(double *)), **cnt = calloc(nn + 1, sizeof(double *));
    ks__graph qg;
    ks__quant_map map = {0};
    ks_model *qm = NULL;
    ks_session *qs = NULL;
    uint8_t *buf = NULL;
    size_t size = 0;
    char err[1024];
    int rc = -1, max_lvl = -1;
    ks__graph_init(&qg, NULL);
    *rounds_out = 0;
    if (!lvl_t || !lvl || !sum || !cnt) goto done;
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
    int n_img = imgs->count < BIAS_IMAGES ? imgs->count : BIAS_IMAGES;
    for (int from = 0; from <= max_lvl; from += step) {
        (*rounds_out)++;
        progress(o, "bias correction", from, max_lvl + 1);
        ks__quant_biascorr_apply(bc, src, plan->mode);
        ks__graph_free(&qg);
        ks__graph_init(&qg, NULL);
        ks__quant_map_free(&map);
        ks_session_destroy(qs);
        qs = NULL;
        ks_model_destroy(qm);
        qm = NULL;
        if (buf) ks__free(&qg.alloc, buf);
        buf = NULL;
        err[0] = '\0';
        ks_model_desc md = {.flags = KS_MODEL_COPY_BUFFER};
        if (ks__quant_build(src, plan, &qg, &map, NULL, err, sizeof(err)) ||
            ks__ksm_write(&qg, &buf, &size, err, sizeof(err)) ||
            ks_model_load_buffer(buf, size, &md, &qm)) {
            fprintf(stderr, "ks-quant: bias correction: %s %s\n", err, ks_last_error(NULL));
            goto done;
        }
        if (open_session(qm, shape, &qs)) goto done;
        for (uint32_t i = 0; i < nn; i++) {
            if (lvl[i] < from || lvl[i] >= from + step) continue;
            const ks__tensor *b = &src->tensors[bc->bias_id[i]];
            size_t ch = b->size_bytes / sizeof(float);
            if (!(sum[i] = calloc(ch, sizeof(double))) || !(cnt[i] = calloc(ch, sizeof(double))))
                goto done;
        }
        for (int k = 0; k < n_img; k++) {
            const char *img = eval_image(imgs, k, n_img);
            if (fill_input(fs, pp, img) || fill_input(qs, pp, img) || run_session(fs) ||
                run_session(qs))
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
            for (size_t c = 0; c < ch; c++)
                if (cnt[i][c] >= BIAS_MIN_SAMPLES)
                    bc->fixed[i][c] -= (float)(sum[i][c] / cnt[i][c]);
            free(sum[i]);
            free(cnt[i]);
            sum[i] = cnt[i] = NULL;
        }
    }
    progress(o, "bias correction", max_lvl + 1, max_lvl + 1);
    ks__quant_biascorr_apply(bc, src, plan->mode);
    rc = 0;
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
    if (buf) ks__free(&qg.alloc, buf);
    ks__graph_free(&qg);
    ks__quant_map_free(&map);
    return rc;
}

/* ---- fallback ----------------------------------------------------------------------------- */

static uint32_t find_root(uint32_t *parent, uint32_t i) {
    while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
    return i;
}

/* int8 only where faster: a layer whose int8 kernel alone is slower than its fp32 kernel goes
 * back, and so does every connected int8 region (layers joined by int8 tensors) whose total time,
 * QUANTIZE/DEQUANTIZE at its borders included, exceeds the fp32 time of the same layers. Margins
 * (10 % + 2 us per layer, 5 % per region) keep timer noise from flipping layers. */
static int mark_slower(const ks__graph *g, ks__quant_plan *p, const eval *e) {
    uint32_t nn = g->num_nodes;
    int marked = 0;
    uint32_t *parent = malloc((nn + 1) * sizeof(uint32_t));
    int32_t *producer = malloc((g->num_tensors + 1) * sizeof(int32_t));
    uint64_t *sum_q = calloc(nn + 1, sizeof(uint64_t)), *sum_f = calloc(nn + 1, sizeof(uint64_t));
    if (!parent || !producer || !sum_q || !sum_f) goto done;
    for (uint32_t t = 0; t < g->num_tensors; t++)
        producer[t] = -1;
    for (uint32_t i = 0; i < nn; i++) {
        parent[i] = i;
        for (uint32_t o = 0; o < g->nodes[i].num_outputs; o++)
            producer[g->nodes[i].outputs[o]] = (int32_t)i;
    }
    for (uint32_t i = 0; i < nn; i++) {
        const ks__node *n = &g->nodes[i];
        if (p->mode[i] != KS__QUANT_INT8) continue;
        if (ks__quant_is_compute_op(n->op) &&
            e->t_i8_own[i] > e->t_f32[i] + e->t_f32[i] / 10 + 2000) {
            p->force_f32[i] = 1;
            p->force_why[i] = KS__QUANT_WHY_SLOWER;
            marked++;
        }
        for (uint32_t k = 0; k < n->num_inputs; k++) {
            int32_t t = n->inputs[k], q = t >= 0 ? producer[t] : -1;
            if (q >= 0 && p->mode[q] == KS__QUANT_INT8)
                parent[find_root(parent, i)] = find_root(parent, (uint32_t)q);
        }
    }
    if (marked) goto done; /* regions change once those layers are out; measure again first */
    for (uint32_t i = 0; i < nn; i++) {
        if (p->mode[i] != KS__QUANT_INT8) continue;
        uint32_t r = find_root(parent, i);
        sum_q[r] += e->t_i8[i];
        /* A split residual ADD (or SiLU's SIGMOID and MUL) costs next to nothing fused into its
         * fp32 conv. */
        bool split_add = p->pair && p->pair[i] >= 0 && g->nodes[i].op != KS_OP_CONV2D;
        if (!split_add) sum_f[r] += e->t_f32[i];
    }
    for (uint32_t i = 0; i < nn; i++) {
        if (p->mode[i] != KS__QUANT_INT8 || !ks__quant_is_compute_op(g->nodes[i].op)) continue;
        uint32_t r = find_root(parent, i);
        if (sum_q[r] > sum_f[r] + sum_f[r] / 20) {
            p->force_f32[i] = 1;
            p->force_why[i] = KS__QUANT_WHY_SLOWER;
            marked++;
        }
    }
done:
    free(parent);
    free(producer);
    free(sum_q);
    free(sum_f);
    return marked;
}

/* Marks layers to return to fp32; returns how many were marked. */
static bool output_checked(const options *o, const char *name) {
    if (o->num_outputs == 0) return true;
    for (int k = 0; k < o->num_outputs; k++)
        if (name && strcmp(name, o->outputs[k]) == 0) return true;
    return false;
}

/* ---- output sensitivity (--fallback sensitivity, the default) ----------------------------- */

/* fp32 outputs of the evaluation images, the reference every candidate plan is scored against. */
typedef struct outref {
    int num_images;
    uint32_t num_outputs;
    const char **names; /* per output (the src graph's names, shared) */
    bool *checked;      /* per output: selected by --outputs */
    float **ref;        /* [image * num_outputs + k]; NULL when the output is not f32 */
    size_t *count;      /* per output: values */
} outref;

static void outref_free(outref *r) {
    if (r->ref)
        for (size_t i = 0; i < (size_t)r->num_images * r->num_outputs; i++)
            free(r->ref[i]);
    free(r->ref);
    free(r->names);
    free(r->checked);
    free(r->count);
    memset(r, 0, sizeof(*r));
}

static int outref_init(const options *o, const ks__graph *src, ks_session *fs, const preprocess *pp,
                       const image_list *imgs, outref *r) {
    memset(r, 0, sizeof(*r));
    r->num_images = imgs->count < o->eval_images ? imgs->count : o->eval_images;
    r->num_outputs = src->num_outputs;
    r->names = calloc(r->num_outputs + 1, sizeof(char *));
    r->checked = calloc(r->num_outputs + 1, sizeof(bool));
    r->count = calloc(r->num_outputs + 1, sizeof(size_t));
    r->ref = calloc((size_t)r->num_images * r->num_outputs + 1, sizeof(float *));
    if (!r->names || !r->checked || !r->count || !r->ref) return -1;
    for (uint32_t k = 0; k < r->num_outputs; k++) {
        r->names[k] = src->tensors[src->outputs[k]].name;
        r->checked[k] = output_checked(o, r->names[k]);
    }
    for (int i = 0; i < r->num_images; i++) {
        if (fill_input(fs, pp, eval_image(imgs, i, r->num_images)) || run_session(fs)) return -1;
        for (uint32_t k = 0; k < r->num_outputs; k++) {
            ks_tensor t;
            if (ks_session_tensor(fs, (uint32_t)src->outputs[k], &t) || !t.data ||
                t.info.dtype != KS_DTYPE_F32)
                continue;
            float *copy = malloc(t.size_bytes ? t.size_bytes : 1);
            if (!copy) return -1;
            memcpy(copy, t.data, t.size_bytes);
            r->ref[(size_t)i * r->num_outputs + k] = copy;
            r->count[k] = t.size_bytes / sizeof(float);
        }
    }
    return 0;
}

/* Worst cosine over the checked outputs of the plan's int8 model against the fp32 reference
 * (decides the plan, applies the bias correction, builds, loads and runs the model on the
 * evaluation images). */
static int plan_worst_cosine(ks__graph *src, ks__quant_plan *plan, const ks__quant_biascorr *bc,
                             const ks_tensor_shape *shape, const preprocess *pp,
                             const image_list *imgs, const outref *r, double *worst_out) {
    ks__graph qg;
    ks__quant_map map = {0};
    ks_model *qm = NULL;
    ks_session *qs = NULL;
    uint8_t *buf = NULL;
    size_t size = 0;
    char err[1024];
    int rc = -1;
    uint32_t no = r->num_outputs;
    double *acc = calloc(3 * (size_t)no + 1, sizeof(double));
    ks__graph_init(&qg, NULL);
    err[0] = '\0';
    if (!acc) goto done;
    ks__quant_plan_decide(plan, src);
    if (bc && bc->bias_id) ks__quant_biascorr_apply(bc, src, plan->mode);
    ks_model_desc md = {.flags = KS_MODEL_COPY_BUFFER};
    if (ks__quant_build(src, plan, &qg, &map, NULL, err, sizeof(err)) ||
        ks__ksm_write(&qg, &buf, &size, err, sizeof(err)) ||
        ks_model_load_buffer(buf, size, &md, &qm)) {
        fprintf(stderr, "ks-quant: output check: %s %s\n", err, ks_last_error(NULL));
        goto done;
    }
    ks_session_desc sd = {.num_threads = 1};
    if (ks_session_create(qm, &sd, &qs) || ks_session_reshape(qs, shape)) {
        fprintf(stderr, "ks-quant: output check: %s\n", ks_last_error(qs));
        goto done;
    }
    for (int i = 0; i < r->num_images; i++) {
        if (fill_input(qs, pp, eval_image(imgs, i, r->num_images)) || run_session(qs)) goto done;
        for (uint32_t j = 0; j < ks_model_num_outputs(qm); j++) {
            ks_tensor t;
            if (ks_session_output(qs, j, &t) || !t.data || t.info.dtype != KS_DTYPE_F32) continue;
            for (uint32_t k = 0; k < no; k++) {
                const float *ref = r->ref[(size_t)i * no + k];
                if (!ref || !r->checked[k] || !t.info.name ||
                    strcmp(r->names[k], t.info.name) != 0 ||
                    t.size_bytes != r->count[k] * sizeof(float))
                    continue;
                const float *v = t.data;
                for (size_t e = 0; e < r->count[k]; e++) {
                    if (!isfinite(ref[e]) || !isfinite(v[e])) continue;
                    acc[3 * k] += (double)ref[e] * v[e];
                    acc[3 * k + 1] += (double)ref[e] * ref[e];
                    acc[3 * k + 2] += (double)v[e] * v[e];
                }
            }
        }
    }
    *worst_out = 1.0;
    for (uint32_t k = 0; k < no; k++) {
        if (!r->checked[k]) continue;
        double a = acc[3 * k + 1], b = acc[3 * k + 2];
        double c = (a == 0.0 && b == 0.0)   ? 1.0
                   : (a == 0.0 || b == 0.0) ? 0.0
                                            : acc[3 * k] / sqrt(a * b);
        if (c < *worst_out) *worst_out = c;
    }
    rc = 0;
done:
    ks_session_destroy(qs);
    ks_model_destroy(qm);
    if (buf) ks__free(&qg.alloc, buf);
    ks__graph_free(&qg);
    ks__quant_map_free(&map);
    free(acc);
    return rc;
}

/* A node's name for messages and the report; ONNX nodes are often unnamed: then the name of its
 * first output tensor (what --skip also accepts). */
static const char *layer_name(const ks__graph *g, const ks__node *n) {
    if (n->name && n->name[0]) return n->name;
    if (n->num_outputs && n->outputs[0] >= 0 && g->tensors[n->outputs[0]].name)
        return g->tensors[n->outputs[0]].name;
    return "";
}

typedef struct sens_row {
    uint32_t node;
    double score; /* larger: return to fp32 first */
} sens_row;

static int cmp_sens(const void *a, const void *b) {
    double x = ((const sens_row *)a)->score, y = ((const sens_row *)b)->score;
    return x > y ? -1 : (x < y ? 1 : 0);
}

/* What every candidate evaluation of the sensitivity fallback needs. */
typedef struct sens_ctx {
    const ks_tensor_shape *shape;
    const preprocess *pp;
    const image_list *imgs;
    const outref *ref;
    const ks__quant_biascorr *bc;
    double *sens; /* per node: last measured output-cosine gain of returning it to fp32 (NAN) */
    int evals;    /* candidate models built and run so far */
} sens_ctx;

static int64_t weight_count(const ks__graph *g, const ks__node *n);

/* Extra time a layer costs when it returns to fp32 (0 when fp32 is not slower), in ns. */
static double fallback_cost_ns(const eval *e, uint32_t i) {
    double d = (double)e->t_f32[i] - (double)e->t_i8[i];
    return d > 0.0 ? d : 0.0;
}

/* Returns int8 layers to fp32 by their measured effect on the model outputs until the worst
 * checked output reaches --min-output-cosine. A ranking step measures, for every int8 compute
 * layer, the worst output cosine with just that layer back in fp32 (its gain over the current
 * plan); then the best-ranked layers go back one at a time, re-measured after each, until the
 * target is met or a sixteenth of the candidates went back, and the ranking is measured again
 * (interactions: once the worst layer is fp32 the next one's gain changes). With --fallback
 * cheap the rank is the gain per microsecond the layer would add in fp32 (+ 20 us), so cheap
 * layers go first; with small, the gain per weight it would store in fp32 (+ 1024), for the
 * file size. Finally every layer returned here is tried in int8 again, latest first, and
 * stays int8 when the target still holds (a greedy order can return layers that later ones made
 * unnecessary). Returns the number of layers marked, -1 on error. */
static int sensitivity_fallback(const options *o, ks__graph *g, ks__quant_plan *p, const eval *e,
                                sens_ctx *sc, double worst) {
    uint32_t nn = g->num_nodes;
    int marked = 0, rc = -1;
    double target = o->min_output_cosine;
    sens_row *cand = calloc(nn + 1, sizeof(sens_row));
    uint32_t *added = calloc(nn + 1, sizeof(uint32_t));
    uint32_t num_added = 0;
    if (!cand || !added) goto done;
    while (worst < target) {
        uint32_t nc = 0;
        for (uint32_t i = 0; i < nn; i++) {
            if (p->mode[i] != KS__QUANT_INT8 || p->force_f32[i] ||
                !ks__quant_is_compute_op(g->nodes[i].op))
                continue;
            cand[nc++].node = i;
        }
        if (nc == 0) break;
        for (uint32_t c = 0; c < nc; c++) {
            uint32_t i = cand[c].node;
            double w = 0.0;
            progress(o, "output sensitivity", (int)c, (int)nc);
            uint8_t why = p->force_why[i];
            p->force_f32[i] = 1;
            p->force_why[i] = KS__QUANT_WHY_OUTPUT; /* KS__QUANT_WHY_INT8 (0) would keep it int8 */
            int st = plan_worst_cosine(g, p, sc->bc, sc->shape, sc->pp, sc->imgs, sc->ref, &w);
            p->force_f32[i] = 0;
            p->force_why[i] = why;
            sc->evals++;
            if (st) goto done;
            double gain = w - worst;
            sc->sens[i] = gain;
            if (o->fallback == FALLBACK_CHEAP)
                cand[c].score = gain / (fallback_cost_ns(e, i) / 1000.0 + 20.0);
            else if (o->fallback == FALLBACK_SMALL) /* 1024: an ADD costs some tables too */
                cand[c].score = gain / ((double)weight_count(g, &g->nodes[i]) + 1024.0);
            else
                cand[c].score = gain;
        }
        progress(o, "output sensitivity", (int)nc, (int)nc);
        qsort(cand, nc, sizeof(sens_row), cmp_sens);
        uint32_t batch = (nc + 15) / 16;
        for (uint32_t c = 0; c < batch && worst < target; c++) {
            if (c > 0 && cand[c].score <= 0.0) break; /* nothing ranked helps: rank again */
            uint32_t i = cand[c].node;
            p->force_f32[i] = 1;
            p->force_why[i] = KS__QUANT_WHY_OUTPUT;
            added[num_added++] = i;
            marked++;
            int st = plan_worst_cosine(g, p, sc->bc, sc->shape, sc->pp, sc->imgs, sc->ref, &worst);
            sc->evals++;
            if (st) goto done;
            if (!o->quiet)
                fprintf(stderr,
                        "ks-quant: output check: '%s' back to fp32 (alone +%.2g), worst output "
                        "cosine now %.5f\n",
                        layer_name(g, &g->nodes[i]), sc->sens[i], worst);
        }
    }
    for (uint32_t a = num_added; a-- > 0 && num_added > 1 && worst >= target;) {
        uint32_t i = added[a];
        double w = 0.0;
        p->force_f32[i] = 0;
        int st = plan_worst_cosine(g, p, sc->bc, sc->shape, sc->pp, sc->imgs, sc->ref, &w);
        sc->evals++;
        if (st) goto done;
        if (w >= target) {
            marked--;
            if (!o->quiet)
                fprintf(stderr, "ks-quant: output check: '%s' stays int8 after all (%.5f)\n",
                        layer_name(g, &g->nodes[i]), w);
        } else {
            p->force_f32[i] = 1;
        }
    }
    ks__quant_plan_decide(p, g);
    if (sc->bc && sc->bc->bias_id) ks__quant_biascorr_apply(sc->bc, g, p->mode);
    rc = 0;
done:
    free(cand);
    free(added);
    return rc ? -1 : marked;
}

/* Speed (layers slower in int8 go back); and, while a graph output is below
 * --min-output-cosine, layers go back to fp32 as --fallback picks them (sensitivity_fallback;
 * own-error: the int8 layers with the largest own error, an eighth of them per round). Both run
 * every round: on a noisy machine the speed check can mark a layer in every round until the
 * round limit, and the output check must not be starved by it. Returns -1 on error. */
static int mark_fallbacks(const options *o, ks__graph *g, ks__quant_plan *p, const eval *e,
                          const double *iso, sens_ctx *sc) {
    int marked = 0;
    if (o->speed_check) marked += mark_slower(g, p, e);
    if (o->min_output_cosine <= 0.0) return marked;
    double worst = 1.0;
    for (uint32_t i = 0; i < g->num_outputs; i++) {
        if (!output_checked(o, g->tensors[g->outputs[i]].name)) continue;
        double c = cosine(e, (uint32_t)g->outputs[i]);
        if (!isnan(c) && c < worst) worst = c;
    }
    if (worst >= o->min_output_cosine) return marked;
    if (o->fallback != FALLBACK_OWN_ERROR) {
        /* The speed check's marks are part of the plan the sensitivities are measured on. */
        int m = sensitivity_fallback(o, g, p, e, sc, worst);
        return m < 0 ? -1 : marked + m;
    }
    row *cand = calloc(g->num_nodes + 1, sizeof(row));
    uint32_t nc = 0;
    if (!cand) return marked;
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        if (p->mode[i] != KS__QUANT_INT8 || !ks__quant_is_compute_op(g->nodes[i].op) ||
            isnan(iso[i]))
            continue;
        cand[nc].node = i;
        cand[nc].cos = iso[i];
        nc++;
    }
    qsort(cand, nc, sizeof(row), cmp_row);
    uint32_t k = nc ? (nc + 7) / 8 : 0;
    for (uint32_t r = 0; r < k; r++) {
        if (p->force_f32[cand[r].node]) continue; /* already marked by the speed check */
        p->force_f32[cand[r].node] = 1;
        p->force_why[cand[r].node] = KS__QUANT_WHY_OUTPUT;
        marked++;
    }
    free(cand);
    return marked;
}

/* ---- report ------------------------------------------------------------------------------- */

static const char *reason_text(int r) {
    switch (r) {
    case KS__QUANT_WHY_INT8:
        return "int8";
    case KS__QUANT_WHY_NO_INT8_KERNEL:
        return "fp32 (no fast int8 kernel)";
    case KS__QUANT_WHY_SKIPPED:
        return "fp32 (--skip)";
    case KS__QUANT_WHY_COSINE:
        return "fp32 (cosine fallback)";
    case KS__QUANT_WHY_SLOWER:
        return "fp32 (int8 slower)";
    case KS__QUANT_WHY_OUTPUT:
        return "fp32 (output cosine fallback)";
    case KS__QUANT_WHY_OUTPUT_LAYER:
        return "fp32 (computes an output)";
    case KS__QUANT_WHY_WEIGHTS_ONLY:
        return "fp32 (--weights-only)";
    case KS__QUANT_WHY_NOT_CALIBRATED:
        return "fp32 (not calibrated)";
    case KS__QUANT_WHY_INPUT_NOT_INT8:
        return "fp32 (input is fp32)";
    default:
        return "fp32";
    }
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static int write_report(const options *o, const ks__graph *g, const ks__quant_plan *p,
                        const eval *e, const double *iso, const double *sens, int num_images,
                        size_t in_bytes, size_t out_bytes) {
    static const char *methods[] = {"minmax", "percentile", "kl", "mse"};
    row *rows = calloc(g->num_nodes + 1, sizeof(row));
    if (!rows) return -1;
    uint32_t nr = 0, n_int8 = 0;
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        const ks__node *n = &g->nodes[i];
        if (p->mode[i] == KS__QUANT_INT8) n_int8++;
        if (n->num_outputs == 0) continue;
        double c = cosine(e, (uint32_t)n->outputs[0]);
        /* A split conv re-fused with its partner: its own output is not in the model. */
        if (isnan(c) && p->pair && p->pair[i] >= 0)
            c = cosine(e, (uint32_t)g->nodes[p->pair[i]].outputs[0]);
        if (isnan(c)) c = 2.0; /* never evaluated (e.g. shape-only): listed last, as "-" */
        rows[nr].node = i;
        rows[nr].cos = c;
        nr++;
    }
    qsort(rows, nr, sizeof(row), cmp_row);
    FILE *f = fopen(o->report_path, "w");
    if (!f) {
        fprintf(stderr, "ks-quant: cannot write report '%s'\n", o->report_path);
        free(rows);
        return -1;
    }
    size_t len = strlen(o->report_path);
    int json = len > 5 && strcmp(o->report_path + len - 5, ".json") == 0;
    if (json) {
        fprintf(f, "{\"model\":");
        json_str(f, o->in_path);
        fprintf(f,
                ",\"method\":\"%s\",\"calibration_images\":%d,\"fp32_bytes\":%zu,"
                "\"int8_bytes\":%zu,\"int8_layers\":%u,\"layers\":%u,\"data_free_passes\":",
                methods[o->method], num_images, in_bytes, out_bytes, n_int8, g->num_nodes);
        json_str(f, o->passes);
        fprintf(f, ",\"outputs\":[");
        for (uint32_t i = 0; i < g->num_outputs; i++) {
            fprintf(f, "%s{\"name\":", i ? "," : "");
            json_str(f, g->tensors[g->outputs[i]].name);
            fprintf(f, ",\"cosine\":%.6f}", cosine(e, (uint32_t)g->outputs[i]));
        }
        fprintf(f, "],\"layers_worst_first\":[");
        for (uint32_t r = 0; r < nr; r++) {
            const ks__node *n = &g->nodes[rows[r].node];
            fprintf(f, "%s\n{\"node\":", r ? "," : "");
            json_str(f, layer_name(g, n));
            double lc = iso[rows[r].node];
            fprintf(f, ",\"op\":\"%s\",\"precision\":\"%s\",", ks__op_get_info(n->op)->name,
                    reason_text(p->reason[rows[r].node]));
            if (rows[r].cos > 1.5)
                fprintf(f, "\"cosine\":null,");
            else
                fprintf(f, "\"cosine\":%.6f,", rows[r].cos);
            if (isnan(lc))
                fprintf(f, "\"layer_cosine\":null,");
            else
                fprintf(f, "\"layer_cosine\":%.6f,", lc);
            if (isnan(sens[rows[r].node]))
                fprintf(f, "\"output_gain\":null,");
            else
                fprintf(f, "\"output_gain\":%.3g,", sens[rows[r].node]);
            fprintf(f, "\"fp32_us\":%.1f,\"int8_us\":%.1f}", e->t_f32[rows[r].node] / 1e3,
                    p->mode[rows[r].node] == KS__QUANT_INT8 ? e->t_i8[rows[r].node] / 1e3 : 0.0);
        }
        fprintf(f, "]}\n");
    } else {
        fprintf(f, "# ks-quant report: %s\n\n", o->in_path);
        fprintf(f, "- calibration: %s, %d images from `%s`\n", methods[o->method], num_images,
                o->calib_dir);
        fprintf(f, "- size: %zu -> %zu bytes (%.3fx)\n", in_bytes, out_bytes,
                in_bytes ? (double)out_bytes / (double)in_bytes : 0.0);
        fprintf(f, "- layers in int8: %u of %u\n", n_int8, g->num_nodes);
        if (o->passes[0]) fprintf(f, "- data-free passes: %s\n", o->passes);
        fprintf(f, "- profiled time, 1 thread: fp32 %.2f ms, mixed int8 %.2f ms\n\n",
                e->total_f32 / 1e6, e->total_i8 / 1e6);
        fprintf(f, "Outputs (cosine similarity vs fp32):\n\n");
        for (uint32_t i = 0; i < g->num_outputs; i++)
            fprintf(f, "- `%s`: %.6f\n", g->tensors[g->outputs[i]].name,
                    cosine(e, (uint32_t)g->outputs[i]));
        fprintf(f,
                "\nPer layer, worst first. cosine: the layer output in the int8 model vs fp32 "
                "(error accumulated through the network); own: the layer alone in int8 from "
                "exact fp32 inputs (what --min-cosine %g tests); times from the profiler, int8 "
                "including the QUANTIZE/DEQUANTIZE the layer needs; output gain: how much the "
                "worst checked output cosine rose with just this layer back in fp32, in the "
                "last ranking of the output check (--fallback sensitivity / cheap).\n\n",
                o->min_cosine);
        fprintf(
            f, "| # | layer | op | precision | cosine | own | output gain | fp32 us | int8 us |\n");
        fprintf(f, "|---|---|---|---|---|---|---|---|---|\n");
        for (uint32_t r = 0; r < nr; r++) {
            uint32_t i = rows[r].node;
            const ks__node *n = &g->nodes[i];
            fprintf(f, "| %u | %s | %s | %s | ", r + 1, layer_name(g, n),
                    ks__op_get_info(n->op)->name, reason_text(p->reason[i]));
            if (rows[r].cos > 1.5)
                fprintf(f, "- | ");
            else
                fprintf(f, "%.6f | ", rows[r].cos);
            if (isnan(iso[i]))
                fprintf(f, "- | ");
            else
                fprintf(f, "%.6f | ", iso[i]);
            if (isnan(sens[i]))
                fprintf(f, "- | ");
            else
                fprintf(f, "%.3g | ", sens[i]);
            fprintf(f, "%.1f | ", e->t_f32[i] / 1e3);
            if (p->mode[i] == KS__QUANT_INT8)
                fprintf(f, "%.1f |\n", e->t_i8[i] / 1e3);
            else
                fprintf(f, "- |\n");
        }
    }
    int rc = fclose(f) ? -1 : 0;
    free(rows);
    return rc;
}

/* ---- bench: fp32 and int8 side by side ---------------------------------------------------- */

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : (x > y ? 1 : 0);
}

static int bench(const options *o, const ks_model *fm, const char *out_path,
                 const ks_tensor_shape *shape, const preprocess *pp, const image_list *imgs) {
    ks_model *qm = NULL;
    ks_session *fs = NULL, *qs = NULL;
    ks_session_desc desc = {.num_threads = 1};
    double *tf = calloc((size_t)o->bench_runs, sizeof(double));
    double *tq = calloc((size_t)o->bench_runs, sizeof(double));
    int rc = -1;
    if (!tf || !tq) goto done;
    if (ks_model_load_file(out_path, NULL, &qm) || ks_session_create(fm, &desc, &fs) ||
        ks_session_create(qm, &desc, &qs) || ks_session_reshape(fs, shape) ||
        ks_session_reshape(qs, shape)) {
        fprintf(stderr, "ks-quant: bench: %s\n", ks_last_error(NULL));
        goto done;
    }
    if (fill_input(fs, pp, imgs->paths[0]) || fill_input(qs, pp, imgs->paths[0])) goto done;
    for (int w = 0; w < 3; w++)
        if (run_session(fs) || run_session(qs)) goto done;
    for (int r = 0; r < o->bench_runs; r++) { /* interleaved, so drift hits both alike */
        double t0 = now_ns();
        if (run_session(fs)) goto done;
        double t1 = now_ns();
        if (run_session(qs)) goto done;
        double t2 = now_ns();
        tf[r] = (t1 - t0) / 1e6;
        tq[r] = (t2 - t1) / 1e6;
    }
    qsort(tf, (size_t)o->bench_runs, sizeof(double), cmp_double);
    qsort(tq, (size_t)o->bench_runs, sizeof(double), cmp_double);
    double mf = tf[o->bench_runs / 2], mq = tq[o->bench_runs / 2];
    printf("bench (1 thread, %d interleaved runs): fp32 median %.3f ms (min %.3f), int8 median "
           "%.3f ms (min %.3f), speedup %.2fx\n",
           o->bench_runs, mf, tf[0], mq, tq[0], mq > 0 ? mf / mq : 0.0);
    rc = 0;
done:
    free(tf);
    free(tq);
    ks_session_destroy(fs);
    ks_session_destroy(qs);
    ks_model_destroy(qm);
    return rc;
}

/* ---- main --------------------------------------------------------------------------------- */

static int check_float_model(const ks__graph *g, const char *path) {
    for (uint32_t t = 0; t < g->num_tensors; t++) {
        const ks__tensor *d = &g->tensors[t];
        if (d->quant.count && (d->dtype == KS_DTYPE_I8 || d->dtype == KS_DTYPE_U8)) {
            fprintf(stderr,
                    "ks-quant: %s is already quantized (tensor '%s' is %s with "
                    "quantization); ks-quant needs a float model\n",
                    path, d->name, ks_dtype_string(d->dtype));
            return -1;
        }
    }
    for (uint32_t i = 0; i < g->num_nodes; i++)
        if (g->nodes[i].op == KS_OP_QUANTIZE) {
            fprintf(stderr, "ks-quant: %s has QUANTIZE node '%s'; ks-quant needs a float model\n",
                    path, g->nodes[i].name);
            return -1;
        }
    return 0;
}

/* Ops through which a model output is still the value of the layer before (layout changes and
 * monotonic per-value maps): the layer that computes that value is an "output layer". */
static bool passes_value(uint32_t op) {
    switch (op) {
    case KS_OP_RESHAPE:
    case KS_OP_TRANSPOSE:
    case KS_OP_CONCAT:
    case KS_OP_SQUEEZE:
    case KS_OP_UNSQUEEZE:
    case KS_OP_SLICE:
    case KS_OP_SPLIT:
    case KS_OP_PAD:
    case KS_OP_RESIZE:
    case KS_OP_DEPTH_TO_SPACE:
    case KS_OP_SPACE_TO_DEPTH:
    case KS_OP_SIGMOID:
    case KS_OP_TANH:
    case KS_OP_SOFTMAX:
    case KS_OP_CAST:
        return true;
    default:
        return false;
    }
}

/* Weight values of a conv/FC node (0 for other ops). */
static int64_t weight_count(const ks__graph *g, const ks__node *n) {
    if ((n->op != KS_OP_CONV2D && n->op != KS_OP_FULLY_CONNECTED) || n->num_inputs < 2 ||
        n->inputs[1] < 0)
        return 0;
    const ks__tensor *w = &g->tensors[n->inputs[1]];
    return (w->flags & KS__TENSOR_CONST) ? ks__numel(w->rank, w->dims) : 0;
}

/* An output layer holding more than this share of the model's weights stays int8 (size): */
#define OUTPUT_LAYER_MAX_WEIGHT_SHARE 0.15

/* Output layers stay fp32: a per-tensor int8 output has one step for all of its values, and
 * detection heads put their rare, decisive values at the edge of a wide range (BlazeFace's score
 * logits span [-470, 2.5]: one step of 1.85 logits, every face scored sigmoid(1.85)); small head
 * convs in fp32 cost little. A head with a large share of the weights (FaceMesh's landmark conv:
 * fp32 would make the model 2.8x larger, for 0.84 -> 0.80 % landmark error) stays int8. Returns
 * the number of layers marked. */
static int keep_output_layers(const ks__graph *g, ks__quant_plan *p) {
    bool *marked = calloc(g->num_tensors + 1, sizeof(bool));
    int count = 0;
    int64_t total = 0;
    if (!marked) return -1;
    for (uint32_t i = 0; i < g->num_nodes; i++)
        total += weight_count(g, &g->nodes[i]);
    for (uint32_t k = 0; k < g->num_outputs; k++)
        if (g->outputs[k] >= 0) marked[g->outputs[k]] = true;
    for (uint32_t r = g->num_nodes; r-- > 0;) {
        const ks__node *n = &g->nodes[r];
        bool out = false;
        for (uint32_t k = 0; k < n->num_outputs; k++)
            out |= n->outputs[k] >= 0 && marked[n->outputs[k]];
        if (!out) continue;
        if (passes_value(n->op)) {
            uint32_t num = n->op == KS_OP_CONCAT ? n->num_inputs : 1;
            for (uint32_t k = 0; k < num && k < n->num_inputs; k++)
                if (n->inputs[k] >= 0 && !(g->tensors[n->inputs[k]].flags & KS__TENSOR_CONST))
                    marked[n->inputs[k]] = true;
        }
        /* A SIGMOID table would requantize the head's logits to int8 again: fp32 as well. */
        if (ks__quant_is_compute_op(n->op) && !p->force_f32[r] &&
            (double)weight_count(g, n) <= OUTPUT_LAYER_MAX_WEIGHT_SHARE * (double)total) {
            p->force_f32[r] = 1;
            p->force_why[r] = KS__QUANT_WHY_OUTPUT_LAYER;
            count++;
        }
    }
    free(marked);
    return count;
}

static int apply_skip(const options *o, const ks__graph *g, ks__quant_plan *p) {
    for (uint32_t i = 0; i < g->num_nodes && o->weights_only; i++) {
        p->force_f32[i] = 1;
        p->force_why[i] = KS__QUANT_WHY_WEIGHTS_ONLY;
    }
    for (int k = 0; k < o->num_skip; k++) {
        int found = 0;
        for (uint32_t i = 0; i < g->num_nodes; i++) {
            const ks__node *n = &g->nodes[i];
            int match = n->name && strcmp(n->name, o->skip[k]) == 0;
            for (uint32_t j = 0; j < n->num_outputs && !match; j++)
                match = strcmp(g->tensors[n->outputs[j]].name, o->skip[k]) == 0;
            if (match) {
                p->force_f32[i] = 1;
                p->force_why[i] = KS__QUANT_WHY_SKIPPED;
                found = 1;
            }
        }
        if (!found) {
            fprintf(stderr,
                    "ks-quant: --skip: no layer named '%s' (node or output tensor name; "
                    "see ks-inspect)\n",
                    o->skip[k]);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    options o;
    memset(&o, 0, sizeof(o));
    preprocess pp = {{0, 0, 0}, {1.0f / 255, 1.0f / 255, 1.0f / 255}, -1, 0, 0, 0};
    image_list imgs = {0};
    uint8_t *data = NULL;
    size_t size = 0;
    ks__graph orig, src, qg; /* src: orig with residual convs split (what gets quantized) */
    int32_t *pair = NULL;
    uint8_t *work_buf = NULL;
    size_t work_size = 0;
    ks_model *orig_model = NULL;
    ks__quant_calib calib = {0};
    ks__quant_biascorr bc = {0};
    ks__quant_gptq gq = {0};
    fallback_weights fw = {0};
    uint8_t *fw_select = NULL;
    const float **fw_scales = NULL;
    ks__quant_plan plan = {0};
    ks__quant_map map = {0};
    eval ev = {0};
    double *iso = NULL, *sens = NULL;
    outref oref = {0};
    sens_ctx sc = {0};
    ks_model *fm = NULL;
    ks_session *fs = NULL;
    ks_tensor_shape shape;
    char err[1024];
    int rc = 1;
    ks__graph_init(&orig, NULL);
    ks__graph_init(&src, NULL);
    ks__graph_init(&qg, NULL);
    err[0] = '\0';
    if (parse_args(argc, argv, &o)) {
        usage();
        rc = 2;
        goto done;
    }
    if (ks_read_file(o.in_path, MAX_MODEL_BYTES, &data, &size, err, sizeof(err))) {
        fprintf(stderr, "ks-quant: %s\n", err);
        goto done;
    }
    if (ks__ksm_read(data, size, true, &orig, err, sizeof(err))) {
        fprintf(stderr, "ks-quant: %s: not a valid .ksm: %s\n", o.in_path, err);
        goto done;
    }
    if (check_float_model(&orig, o.in_path)) goto done;
    err[0] = '\0';
    if (ks__quant_unfuse_residual(&orig, &src, &pair, err, sizeof(err))) {
        fprintf(stderr, "ks-quant: %s: %s\n", o.in_path, err);
        goto done;
    }
    const char *meta_pp = ks__graph_get_meta(&orig, "preprocess");
    if (meta_pp && parse_preprocess(meta_pp, &pp, err, sizeof(err))) {
        fprintf(stderr, "ks-quant: model metadata 'preprocess': %s\n", err);
        goto done;
    }
    if (o.preprocess_spec && parse_preprocess(o.preprocess_spec, &pp, err, sizeof(err))) {
        fprintf(stderr, "ks-quant: %s\n", err);
        rc = 2;
        goto done;
    }
    ks_model_desc md = {.flags = KS_MODEL_COPY_BUFFER};
    if (ks_model_load_buffer(data, size, &md, &orig_model)) {
        fprintf(stderr, "ks-quant: %s: %s\n", o.in_path, ks_last_error(NULL));
        goto done;
    }
    /* The fp32 reference runs the split graph, so every tensor of src has a value. */
    if (ks__ksm_write(&src, &work_buf, &work_size, err, sizeof(err)) ||
        ks_model_load_buffer(work_buf, work_size, &md, &fm)) {
        fprintf(stderr, "ks-quant: %s: cannot prepare the fp32 reference: %s %s\n", o.in_path, err,
                ks_last_error(NULL));
        goto done;
    }
    if (input_shape(fm, &pp, &shape)) goto done;
    if (list_images(&o, &imgs)) goto done;
    if (open_session(fm, &shape, &fs)) goto done;
    for (int k = 0; k < o.num_outputs; k++) {
        bool found = false;
        for (uint32_t i = 0; i < src.num_outputs && !found; i++)
            found = strcmp(src.tensors[src.outputs[i]].name, o.outputs[k]) == 0;
        if (!found) {
            fprintf(stderr, "ks-quant: --outputs: the model has no output named '%s'\n",
                    o.outputs[k]);
            rc = 2;
            goto done;
        }
    }
    if (o.equalize) {
        /* Cross-layer equalization on per-channel ranges of the fp32 model, then recalibrate
         * the rescaled graph (only the rescaled tensors change, but the histograms need it). */
        ks__quant_equalize_info eq;
        ks_model *em = NULL;
        double rel = 0.0;
        const char *worst = "";
        if (ks__quant_calib_init(&calib, src.num_tensors)) {
            fprintf(stderr, "ks-quant: out of memory\n");
            goto done;
        }
        if (calibrate(&o, &src, fs, &pp, &imgs, 1, &calib, NULL)) goto done;
        err[0] = '\0';
        if (ks__quant_equalize(&src, &calib, &eq, err, sizeof(err))) {
            fprintf(stderr, "ks-quant: %s\n", err);
            goto done;
        }
        ks__quant_calib_free(&calib);
        if (eq.num_tensors) {
            ks__free(&src.alloc, work_buf);
            work_buf = NULL;
            if (ks__ksm_write(&src, &work_buf, &work_size, err, sizeof(err)) ||
                ks_model_load_buffer(work_buf, work_size, &md, &em)) {
                fprintf(stderr, "ks-quant: equalized graph: %s %s\n", err, ks_last_error(NULL));
                goto done;
            }
            if (compare_fp32(&o, fm, em, &shape, &pp, &imgs, &rel, &worst)) {
                ks_model_destroy(em);
                goto done;
            }
        }
        if (eq.num_tensors && rel > EQUALIZE_TOLERANCE) {
            fprintf(stderr,
                    "ks-quant: warning: equalization moved fp32 output '%s' by %.3g (relative "
                    "to its largest value, tolerance %g); not used\n",
                    worst, rel, EQUALIZE_TOLERANCE);
            ks_model_destroy(em);
            ks__graph_free(&src);
            ks__graph_init(&src, NULL);
            free(pair);
            pair = NULL;
            err[0] = '\0';
            if (ks__quant_unfuse_residual(&orig, &src, &pair, err, sizeof(err))) {
                fprintf(stderr, "ks-quant: %s: %s\n", o.in_path, err);
                goto done;
            }
        } else if (eq.num_tensors) {
            ks_session_destroy(fs);
            fs = NULL;
            ks_model_destroy(fm);
            fm = em;
            if (open_session(fm, &shape, &fs)) goto done;
            snprintf(o.passes, sizeof(o.passes),
                     "equalized %u tensors (%u consumer convs, factors up to %.0f, fp32 outputs "
                     "within %.2g)",
                     eq.num_tensors, eq.num_consumers, eq.max_factor, rel);
        }
        if (!o.quiet)
            fprintf(stderr, "ks-quant: %s\n",
                    o.passes[0] ? o.passes : "equalization: no eligible conv pairs");
    }
    if (ks__quant_calib_init(&calib, src.num_tensors) || ks__quant_plan_init(&plan, &src)) {
        fprintf(stderr, "ks-quant: out of memory\n");
        goto done;
    }
    plan.pair = pair;
    /* Calibration: pass 1 min/max (and shapes), pass 2 histograms for percentile / KL. */
    if (calibrate(&o, &src, fs, &pp, &imgs, o.method == KS__QUANT_METHOD_MINMAX ? 1 : 2, &calib,
                  &plan))
        goto done;
    for (uint32_t t = 0; t < src.num_tensors; t++) {
        float lo, hi;
        if (!ks__quant_calib_range(&calib, t, o.method, o.percentile, &lo, &hi)) continue;
        ks__quant_qparams_from_range(lo, hi, &plan.scale[t], &plan.zp[t]);
        plan.has_q[t] = true;
    }
    if (apply_skip(&o, &src, &plan)) {
        rc = 2;
        goto done;
    }
    if (o.gptq || o.fallback_weights == FW_INT8) {
        if (gptq_weights(&o, &src, fs, &pp, &imgs, &plan, &gq)) goto done;
        size_t len = strlen(o.passes);
        if (o.gptq)
            snprintf(o.passes + len, sizeof(o.passes) - len, "%sgptq-rounded %u layers",
                     len ? "; " : "", gq.num_solved);
    }
    if (!o.int8_output_layers) {
        int kept = keep_output_layers(&src, &plan);
        if (kept < 0) goto done;
        if (!o.quiet && kept)
            fprintf(stderr, "ks-quant: %d output layer%s kept in fp32\n", kept,
                    kept == 1 ? "" : "s");
    }
    /* Layers whose own int8 error is too large go back to fp32 (one pass: a layer's own error
     * does not depend on the precision of the others). */
    iso = malloc((src.num_nodes + 1) * sizeof(double));
    if (!iso) goto done;
    for (uint32_t i = 0; i < src.num_nodes; i++)
        iso[i] = NAN;
    ks__quant_plan_decide(&plan, &src);
    if (o.min_cosine > 0.0) {
        if (isolated_cosines(&o, &src, &plan, &shape, &pp, &imgs, iso)) goto done;
        int marked = 0;
        for (uint32_t i = 0; i < src.num_nodes; i++)
            if (!isnan(iso[i]) && iso[i] < o.min_cosine && !plan.force_f32[i]) {
                plan.force_f32[i] = 1;
                plan.force_why[i] = KS__QUANT_WHY_COSINE;
                marked++;
            }
        if (!o.quiet && marked)
            fprintf(stderr, "ks-quant: %d layer%s below cosine %g back to fp32\n", marked,
                    marked == 1 ? "" : "s", o.min_cosine);
    }
    /* From here on the layers left in fp32 compute with the weights the file will store. */
    if (o.fallback_weights != FW_FP32) {
        if (fallback_weights_init(&o, &src, &gq, &fw)) goto done;
        plan.f32_weights = fw.values;
        size_t len = strlen(o.passes);
        if (o.fallback_weights == FW_INT8)
            snprintf(o.passes + len, sizeof(o.passes) - len,
                     "%sfp32 layers store int8 weights (%u gptq-rounded, %u nearest)",
                     len ? "; " : "", fw.num_gptq, fw.num_nearest);
        else
            snprintf(o.passes + len, sizeof(o.passes) - len, "%sfp32 layers store fp16 weights",
                     len ? "; " : "");
    }
    sens = malloc((src.num_nodes + 1) * sizeof(double));
    if (!sens || outref_init(&o, &src, fs, &pp, &imgs, &oref)) {
        fprintf(stderr, "ks-quant: cannot measure the fp32 reference outputs\n");
        goto done;
    }
    for (uint32_t i = 0; i < src.num_nodes; i++)
        sens[i] = NAN;
    if (o.bias_correction) {
        /* After the per-layer check: that check measures the layers' own rounding error. The
         * empirical correction is measured for the plan as it stands; layers that go back to
         * fp32 later get their original bias again (ks__quant_biascorr_apply). */
        int rounds = 0;
        if (ks__quant_biascorr_init(&bc, &src, &calib, &plan,
                                    o.bias_correction != BIAS_EMPIRICAL)) {
            fprintf(stderr, "ks-quant: out of memory\n");
            goto done;
        }
        /* The analytic correction assumes nearest rounding: use the mean error of the weights
         * actually written instead (measured with the layer's real inputs, padding included). */
        if (o.gptq && o.bias_correction != BIAS_EMPIRICAL) ks__quant_gptq_fix_bias(&gq, &bc);
        ks__quant_plan_decide(&plan, &src);
        if (o.bias_correction == BIAS_EMPIRICAL &&
            empirical_bias(&o, &src, &plan, &bc, fs, &shape, &pp, &imgs, &rounds))
            goto done;
        if (o.bias_correction == BIAS_AUTO) {
            /* Both corrections, measured on the worst checked output of the plan as it stands;
             * the better one is kept (empirical wins on BlazeFace, loses on selfie). */
            ks__quant_biascorr emp = {0};
            double w_analytic = 0.0, w_empirical = 0.0;
            int st = plan_worst_cosine(&src, &plan, &bc, &shape, &pp, &imgs, &oref, &w_analytic);
            /* The graph now holds the analytic biases: put the originals back first, or the
             * empirical correction would start from (and "restore" fp32 layers to) them. */
            uint8_t *all_fp32 = calloc(src.num_nodes + 1, 1); /* KS__QUANT_FP32 == 0 */
            if (!all_fp32) st = -1;
            if (!st) ks__quant_biascorr_apply(&bc, &src, all_fp32);
            free(all_fp32);
            if (!st) st = ks__quant_biascorr_init(&emp, &src, &calib, &plan, false) ? -1 : 0;
            if (!st) {
                ks__quant_plan_decide(&plan, &src);
                st = empirical_bias(&o, &src, &plan, &emp, fs, &shape, &pp, &imgs, &rounds);
            }
            if (!st)
                st = plan_worst_cosine(&src, &plan, &emp, &shape, &pp, &imgs, &oref, &w_empirical);
            if (st) {
                ks__quant_biascorr_free(&emp);
                goto done;
            }
            if (!o.quiet)
                fprintf(stderr,
                        "ks-quant: bias correction auto: worst output cosine %.5f analytic, "
                        "%.5f empirical\n",
                        w_analytic, w_empirical);
            if (w_empirical > w_analytic) {
                ks__quant_biascorr_free(&bc);
                bc = emp;
                o.bias_correction = BIAS_EMPIRICAL;
            } else {
                ks__quant_biascorr_free(&emp);
                o.bias_correction = BIAS_ANALYTIC;
            }
            ks__quant_plan_decide(&plan, &src);
            ks__quant_biascorr_apply(&bc, &src, plan.mode);
        }
        size_t len = strlen(o.passes);
        snprintf(o.passes + len, sizeof(o.passes) - len, "%sbias-corrected %u layers (%s%s)",
                 len ? "; " : "", bc.num_corrected,
                 o.bias_correction == 1 ? "empirical" : "analytic",
                 o.bias_correction == 1 ? ", depth order" : "");
        if (!o.quiet)
            fprintf(stderr, "ks-quant: bias correction (%s): %u layers (%d measuring runs)\n",
                    o.bias_correction == 1 ? "empirical" : "analytic", bc.num_corrected, rounds);
    }
    /* The fp32 layers' GPTQ-rounded weights shift their mean output like the int8 layers'
     * rounding does: their bias takes the same correction while they stay fp32. */
    if (o.bias_correction && o.fallback_weights == FW_INT8) {
        if (ks__quant_biascorr_stored(&bc, &src, &gq, fw.values)) {
            fprintf(stderr, "ks-quant: out of memory\n");
            goto done;
        }
        uint32_t num_stored = 0;
        for (uint32_t i = 0; bc.stored && i < bc.num_nodes; i++)
            num_stored += bc.stored[i] != NULL;
        size_t len = strlen(o.passes);
        snprintf(o.passes + len, sizeof(o.passes) - len,
                 "; biases of %u fp32 layers corrected for their int8 weights' mean error",
                 num_stored);
    }
    /* Build, measure, return slower layers to fp32, repeat. */
    sc.shape = &shape;
    sc.pp = &pp;
    sc.imgs = &imgs;
    sc.ref = &oref;
    sc.bc = o.bias_correction ? &bc : NULL;
    sc.sens = sens;
    for (int round = 0;; round++) {
        ks__quant_plan_decide(&plan, &src);
        if (o.bias_correction) ks__quant_biascorr_apply(&bc, &src, plan.mode);
        ks__graph_free(&qg);
        ks__graph_init(&qg, NULL);
        ks__quant_map_free(&map);
        if (ks__quant_build(&src, &plan, &qg, &map, NULL, err, sizeof(err))) {
            fprintf(stderr, "ks-quant: rewrite failed: %s\n", err);
            goto done;
        }
        char what[64];
        snprintf(what, sizeof(what), "checking (round %d)", round + 1);
        if (evaluate(&o, &src, &map, &qg, fs, &shape, &pp, &imgs, &ev, what)) goto done;
        if (round >= o.max_rounds) break;
        int marked = mark_fallbacks(&o, &src, &plan, &ev, iso, &sc);
        if (marked < 0) goto done;
        if (!o.quiet && marked)
            fprintf(stderr, "ks-quant: round %d: %d layer%s back to fp32\n", round + 1, marked,
                    marked == 1 ? "" : "s");
        if (!marked) break;
    }
    {
        static const char *methods[] = {"minmax", "percentile", "kl", "mse"};
        char val[256];
        /* the corrected biases live in int8 layers only */
        bool any_int8 = false;
        for (uint32_t i = 0; i < src.num_nodes; i++)
            any_int8 = any_int8 || plan.mode[i] == KS__QUANT_INT8;
        int bias_meta = any_int8 ? o.bias_correction : 0;
        snprintf(val, sizeof(val), "%s, %s, %d images%s%s%s%s",
                 o.weights_only ? "int8 weights only" : "int8 ptq", methods[o.method], imgs.count,
                 o.equalize && strstr(o.passes, "equalized") ? ", equalized" : "",
                 o.gptq ? ", gptq weights" : "",
                 o.fallback_weights == FW_INT8   ? ", fp32 layers with int8 weights"
                 : o.fallback_weights == FW_FP16 ? ", fp32 layers with fp16 weights"
                                                 : "",
                 bias_meta == 1   ? ", bias-corrected (empirical)"
                 : bias_meta == 2 ? ", bias-corrected (analytic)"
                                  : "");
        if (ks__graph_set_meta(&qg, "quantization", val)) goto done;
        snprintf(val, sizeof(val), "mean=%g:%g:%g,scale=%g:%g:%g,layout=%s", pp.mean[0], pp.mean[1],
                 pp.mean[2], pp.scale[0], pp.scale[1], pp.scale[2],
                 pp.layout == KS_TENSOR_LAYOUT_NCHW ? "nchw" : "nhwc");
        if (!meta_pp && ks__graph_set_meta(&qg, "preprocess", val)) goto done;
    }
    ks__ksm_write_opts wo = {.pack = o.entropy != 0,
                             .entropy = o.entropy != 0,
                             .entropy_coders = o.coder ? (uint8_t)(1u << (o.coder - 1)) : 0};
    int num_fw = 0;
    if (o.fallback_weights != FW_FP32 &&
        (num_fw = fallback_select(&o, &src, &fw, &map, &qg, &wo, &fw_select, &fw_scales)) < 0)
        goto done;
    if (ks__ksm_write_file_ex(&qg, &wo, o.out_path, err, sizeof(err))) {
        fprintf(stderr, "ks-quant: cannot write %s: %s\n", o.out_path, err);
        goto done;
    }
    if (num_fw > 0 && verify_stored(&o, &qg, &shape, &pp, &imgs)) goto done;
    struct stat sb;
    size_t out_bytes = stat(o.out_path, &sb) == 0 ? (size_t)sb.st_size : 0;
    uint32_t n_int8 = 0;
    for (uint32_t i = 0; i < src.num_nodes; i++)
        n_int8 += plan.mode[i] == KS__QUANT_INT8;
    printf("%s: %u of %u layers int8, %zu -> %zu bytes (%.3fx)", o.out_path, n_int8, src.num_nodes,
           size, out_bytes, size ? (double)out_bytes / (double)size : 0.0);
    for (uint32_t i = 0; i < src.num_outputs; i++)
        printf("%s%s cosine %.5f", i ? ", " : "; ", src.tensors[src.outputs[i]].name,
               cosine(&ev, (uint32_t)src.outputs[i]));
    if (o.fallback_weights != FW_FP32)
        printf("; %d fp32 layer%s with %s weights", num_fw, num_fw == 1 ? "" : "s",
               o.fallback_weights == FW_INT8 ? "int8" : "fp16");
    printf("\n");
    if (o.report_path && write_report(&o, &src, &plan, &ev, iso, sens, imgs.count, size, out_bytes))
        goto done;
    if (o.bench_runs && bench(&o, orig_model, o.out_path, &shape, &pp, &imgs)) goto done;
    rc = 0;
done:
    free(iso);
    free(sens);
    outref_free(&oref);
    eval_free(&ev);
    ks__quant_map_free(&map);
    ks__quant_plan_free(&plan);
    ks__quant_calib_free(&calib);
    ks__quant_biascorr_free(&bc);
    ks__quant_gptq_free(&gq);
    fallback_weights_free(&fw);
    free(fw_select);
    free((void *)fw_scales);
    ks_session_destroy(fs);
    ks_model_destroy(fm);
    ks_model_destroy(orig_model);
    if (work_buf) ks__free(&src.alloc, work_buf);
    ks__graph_free(&qg);
    ks__graph_free(&src);
    ks__graph_free(&orig);
    free(pair);
    free(data);
    free_images(&imgs);
    free(o.skip_buf);
    free(o.outputs_buf);
    return rc;
}
