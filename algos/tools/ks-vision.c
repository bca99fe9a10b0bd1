/* ks-vision: runs one vision task on one image file.
 *
 *   ks-vision TASK IMAGE [--json] [--out annotated.png] [--model PATH] [--max-results N]
 *                        [--min-score S] [--mask-out mask.png] [--threads N]
 *                        [--precision stored|f32|fastest|fp16-storage|fp16] [--tiles N]
 *                        [--backend cpu|vulkan|auto] [--key-file KEY]
 *
 * TASK is face_detect, face_landmarks, pose, segment, detect, hands or classify; the JSON each
 * prints is specified in docs/tasks.md. --model takes a bundle (.ksb) or a bare model (.ksm, e.g.
 * an int8 model from ks-quant) that replaces the default bundle's model with the same inputs and
 * outputs. --key-file opens encrypted models (ks-protect), as --model or inside the bundle; the
 * key is read into memory, wiped before exit and never written anywhere. Bundles whose graphs use
 * task node types are packed with ks-task-bundle (algos/bundle_tool). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_io.h"
#include "kestrel/engine.h"
#include "key_file.h"
#include "precision.h"
#include "vision_cli.h"

/* A task whose source file is not built links as NULL and is reported as such. */
#define KS_WEAK __attribute__((weak))
KS_WEAK int ks__vision_face_detect(const ks_vision_args *, const ks_image *, ks_canvas *);
KS_WEAK int ks__vision_face_landmarks(const ks_vision_args *, const ks_image *, ks_canvas *);
KS_WEAK int ks__vision_pose(const ks_vision_args *, const ks_image *, ks_canvas *);
KS_WEAK int ks__vision_segment(const ks_vision_args *, const ks_image *, ks_canvas *);
KS_WEAK int ks__vision_detect(const ks_vision_args *, const ks_image *, ks_canvas *);
KS_WEAK int ks__vision_hands(const ks_vision_args *, const ks_image *, ks_canvas *);
KS_WEAK int ks__vision_classify(const ks_vision_args *, const ks_image *, ks_canvas *);

typedef struct command {
    const char *name;
    ks_vision_cmd fn;
} command;

static int usage(void) {
    fprintf(stderr, "usage: ks-vision TASK IMAGE [--json] [--out annotated.png] [--model PATH]\n"
                    "                 [--max-results N] [--min-score S] [--mask-out mask.png] "
                    "[--threads N]\n"
                    "                 [--precision stored|f32|fastest|fp16-storage|fp16] "
                    "[--tiles N]\n"
                    "                 [--backend cpu|vulkan|auto] [--key-file KEY]\n"
                    "  TASK: face_detect, face_landmarks, pose, segment, detect, hands, classify\n"
                    "  --model: a bundle (.ksb), or a model (.ksm) replacing the default bundle's\n"
                    "           model with the same inputs and outputs\n"
                    "  --precision: an int8 model's layers as stored (default), in fp32, or per\n"
                    "           layer the faster of the two on this CPU (timed at create)\n"
                    "  --tiles: face_detect also on N x N tiles (2..4) for small faces\n"
                    "  --backend: where the models run (default cpu; auto: the faster, timed)\n"
                    "  --key-file: key of encrypted models (ks-protect keygen: 32 raw bytes or\n"
                    "           64 hex digits), for --model ENC.ksm or a bundle holding them\n");
    return 2;
}

static int parse_int(const char *flag, const char *s, int lo, int hi, int *out) {
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (!end || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "ks-vision: %s '%s' must be an integer in %d..%d\n", flag, s, lo, hi);
        return 1;
    }
    *out = (int)v;
    return 0;
}

/* ---- task commands -------------------------------------------------------------------------- */

/* Tightly packed RGB copy of a decoded image (which may be RGB, RGBA or GRAY). */
static uint8_t *to_rgb(const ks_image *src) {
    size_t w = (size_t)src->width_px, h = (size_t)src->height_px;
    uint8_t *rgb = malloc(w * h * 3);
    if (!rgb) return NULL;
    size_t bpp = src->format == KS_PIXEL_FORMAT_RGBA   ? 4
                 : src->format == KS_PIXEL_FORMAT_GRAY ? 1
                                                       : 3;
    size_t stride = src->stride_bytes[0] ? (size_t)src->stride_bytes[0] : w * bpp;
    const uint8_t *in = src->planes[0];
    for (size_t y = 0; y < h; y++)
        for (size_t x = 0; x < w; x++) {
            const uint8_t *p = in + y * stride + x * bpp;
            uint8_t *q = rgb + (y * w + x) * 3;
            q[0] = p[0];
            q[1] = bpp == 1 ? p[0] : p[1];
            q[2] = bpp == 1 ? p[0] : p[2];
        }
    return rgb;
}

int main(int argc, char **argv) {
    if (argc < 3) return usage();
    const command commands[] = {
        {"face_detect", ks__vision_face_detect},
        {"face_landmarks", ks__vision_face_landmarks},
        {"pose", ks__vision_pose},
        {"segment", ks__vision_segment},
        {"detect", ks__vision_detect},
        {"hands", ks__vision_hands},
        {"classify", ks__vision_classify},
    };
    ks_vision_args args = {.task = argv[1], .image = argv[2]};
    const char *key_file = NULL;
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            args.json = 1;
            continue;
        }
        if (i + 1 >= argc) return usage();
        const char *v = argv[++i];
        if (strcmp(a, "--out") == 0) {
            args.out_png = v;
        } else if (strcmp(a, "--mask-out") == 0) {
            args.mask_out = v;
        } else if (strcmp(a, "--model") == 0) {
            args.model = v;
        } else if (strcmp(a, "--key-file") == 0) {
            key_file = v;
        } else if (strcmp(a, "--max-results") == 0) {
            if (parse_int(a, v, 1, 1000, &args.max_results)) return 2;
        } else if (strcmp(a, "--threads") == 0) {
            if (parse_int(a, v, 1, 256, &args.num_threads)) return 2;
        } else if (strcmp(a, "--tiles") == 0) {
            if (parse_int(a, v, 0, 4, &args.tiles)) return 2;
        } else if (strcmp(a, "--precision") == 0) {
            ks_precision p;
            if (ks__precision_parse(v, &p)) {
                args.precision = (int)p;
            } else {
                fprintf(stderr,
                        "ks-vision: --precision '%s': use stored, f32, fastest, fp16-storage "
                        "or fp16\n",
                        v);
                return 2;
            }
        } else if (strcmp(a, "--backend") == 0) {
            ks_backend b;
            if (ks_backend_parse(v, &b)) {
                fprintf(stderr, "ks-vision: --backend '%s': use cpu, vulkan, opencl or auto\n", v);
                return 2;
            }
            args.backend = (int)b;
        } else if (strcmp(a, "--min-score") == 0) {
            char *end = NULL;
            double s = strtod(v, &end);
            if (!end || *end || end == v || !(s >= 0.0 && s <= 1.0)) {
                fprintf(stderr, "ks-vision: --min-score '%s' must be a number in 0..1\n", v);
                return 2;
            }
            args.min_score = (float)s;
        } else {
            fprintf(stderr, "ks-vision: unknown option '%s'\n", a);
            return usage();
        }
    }
    const command *cmd = NULL;
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(commands[i].name, args.task) == 0) cmd = &commands[i];
    if (!cmd) {
        fprintf(stderr, "ks-vision: unknown task '%s'\n", args.task);
        return usage();
    }
    if (!cmd->fn) {
        fprintf(stderr, "ks-vision: task %s is not built\n", cmd->name);
        return 1;
    }
    int rc = 1;
    char err[512];
    uint8_t key[KS_KEY_FILE_BYTES];
    if (key_file) {
        if (ks_key_file_read(key_file, key, err, sizeof(err))) {
            fprintf(stderr, "ks-vision: --key-file: %s\n", err);
            return 1;
        }
        args.key = key;
        args.key_bytes = sizeof(key);
    }
    ks_image_buf photo = {0};
    uint8_t *rgb = NULL;
    ks_canvas canvas = {0};
    if (ks_image_load(args.image, 0, &photo, err, sizeof(err))) {
        fprintf(stderr, "ks-vision: %s\n", err);
        goto done;
    }
    rgb = to_rgb(&photo.image);
    if (!rgb) {
        fprintf(stderr, "ks-vision: out of memory\n");
        goto done;
    }
    ks_image img = {.format = KS_PIXEL_FORMAT_RGB,
                    .width_px = photo.image.width_px,
                    .height_px = photo.image.height_px,
                    .planes = {rgb, NULL, NULL},
                    .stride_bytes = {3 * photo.image.width_px, 0, 0}};
    size_t num_bytes = (size_t)img.width_px * (size_t)img.height_px * 3;
    if (args.out_png) {
        canvas.rgb = malloc(num_bytes);
        if (!canvas.rgb) {
            fprintf(stderr, "ks-vision: out of memory\n");
            goto done;
        }
        memcpy(canvas.rgb, rgb, num_bytes);
        canvas.width_px = img.width_px;
        canvas.height_px = img.height_px;
    }
    rc = cmd->fn(&args, &img, args.out_png ? &canvas : NULL);
    const char *why = rc ? ks_last_error(NULL) : NULL;
    if (why && !key_file && strstr(why, "needs its key"))
        fprintf(stderr, "ks-vision: the model is encrypted: pass its key with --key-file KEY\n");
    else if (why && key_file && strstr(why, "key does not open"))
        fprintf(stderr, "ks-vision: the key in '%s' does not open the model\n", key_file);
    if (rc == 0 && args.out_png) {
        ks_image out = img;
        out.planes[0] = canvas.rgb;
        if (ks_image_save_png(args.out_png, &out, err, sizeof(err))) {
            fprintf(stderr, "ks-vision: %s\n", err);
            rc = 1;
        }
    }
done:
    memset(key, 0, sizeof(key));
    __asm__ __volatile__("" : : "r"(key) : "memory"); /* keep the wipe */
    free(canvas.rgb);
    free(rgb);
    ks_image_buf_free(&photo);
    return rc;
}
