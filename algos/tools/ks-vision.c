/* ks-vision: runs one vision task on one image file.
 *
 *   ks-vision TASK IMAGE [--json] [--out annotated.png] [--model PATH] [--max-results N]
 *                        [--min-score S] [--mask-out mask.png] [--threads N]
 *   ks-vision bundle OUT.ksb --graph G.json [--graph NAME=G.json ...] [--model NAME=FILE.ksm ...]
 *                        [--file NAME=PATH ...] [--config NAME=FILE ...] [--labels NAME=FILE ...]
 *
 * TASK is face_detect, face_landmarks, pose, segment, detect, hands or classify; the JSON each
 * prints is specified in docs/tasks.md. `bundle` writes a .ksb like ks-bundle, but checks the
 * graph with the vision node types registered (ks-bundle only knows the built-in nodes), so the
 * task bundles are built with it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_io.h"
#include "kestrel/bundle.h"
#include "kestrel/pipeline.h"
#include "vision_cli.h"

/* algos/nodes/vision_nodes.h (not on this tool's include path). */
void ks__register_vision_nodes(void);

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

#define MAX_BUNDLE_FILE_BYTES ((size_t)2 << 30)

static int usage(void) {
    fprintf(stderr, "usage: ks-vision TASK IMAGE [--json] [--out annotated.png] [--model PATH]\n"
                    "                 [--max-results N] [--min-score S] [--mask-out mask.png] "
                    "[--threads N]\n"
                    "  TASK: face_detect, face_landmarks, pose, segment, detect, hands, classify\n"
                    "       ks-vision bundle OUT.ksb --graph G.json [--graph NAME=G.json ...]\n"
                    "                 [--model NAME=FILE.ksm ...] [--file NAME=PATH ...]\n"
                    "                 [--config NAME=FILE ...] [--labels NAME=FILE ...]\n");
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

/* ---- bundle subcommand ---------------------------------------------------------------------- */

static int read_file(const char *path, uint8_t **data_out, size_t *size_out) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "ks-vision bundle: cannot open '%s'\n", path);
        return 1;
    }
    int rc = 1;
    uint8_t *buf = NULL;
    long size = 0;
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "ks-vision bundle: cannot read '%s'\n", path);
        goto done;
    }
    if ((size_t)size > MAX_BUNDLE_FILE_BYTES) {
        fprintf(stderr, "ks-vision bundle: '%s' is %ld bytes; at most %zu\n", path, size,
                MAX_BUNDLE_FILE_BYTES);
        goto done;
    }
    buf = malloc((size_t)size + 1);
    if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "ks-vision bundle: cannot read '%s'\n", path);
        goto done;
    }
    *data_out = buf;
    *size_out = (size_t)size;
    buf = NULL;
    rc = 0;
done:
    free(buf);
    fclose(f);
    return rc;
}

/* Adds NAME=PATH (or just PATH for the default graph entry "graph"). */
static int add_entry(ks_bundle_writer *w, const char *arg, uint32_t kind,
                     const char *default_name) {
    char name[KS_BUNDLE_NAME_BYTES];
    const char *eq = strchr(arg, '=');
    const char *path = arg;
    if (eq) {
        size_t n = (size_t)(eq - arg);
        if (n == 0 || n >= sizeof(name)) {
            fprintf(stderr, "ks-vision bundle: bad entry name in '%s'\n", arg);
            return 1;
        }
        memcpy(name, arg, n);
        name[n] = '\0';
        path = eq + 1;
    } else if (default_name) {
        snprintf(name, sizeof(name), "%s", default_name);
    } else {
        fprintf(stderr, "ks-vision bundle: '%s' must be NAME=PATH\n", arg);
        return 1;
    }
    uint8_t *data = NULL;
    size_t size = 0;
    if (read_file(path, &data, &size)) return 1;
    if (kind == KS_BUNDLE_MODEL) {
        ks_model *m = NULL;
        if (ks_model_load_buffer(data, size, NULL, &m)) {
            fprintf(stderr, "ks-vision bundle: '%s' is not a loadable .ksm: %s\n", path,
                    ks_last_error(NULL));
            free(data);
            return 1;
        }
        ks_model_destroy(m);
    }
    ks_status st = ks_bundle_writer_add(w, name, kind, data, size);
    free(data);
    if (st) {
        fprintf(stderr, "ks-vision bundle: entry '%s': %s\n", name, ks_last_error(NULL));
        return 1;
    }
    return 0;
}

static int check_graphs(const char *path, const char *const *graphs, int num_graphs) {
    ks_bundle *b = NULL;
    if (ks_bundle_open_file(path, NULL, &b)) {
        fprintf(stderr, "ks-vision bundle: %s: %s\n", path, ks_last_error(NULL));
        return 1;
    }
    int rc = 0;
    for (int i = 0; i < num_graphs && rc == 0; i++) {
        ks_pipeline *p = NULL;
        if (ks_pipeline_create_bundle(b, &(ks_pipeline_desc){.graph_entry = graphs[i]}, &p)) {
            fprintf(stderr, "ks-vision bundle: %s: graph '%s' check failed: %s\n", path, graphs[i],
                    ks_last_error(NULL));
            rc = 1;
        }
        ks_pipeline_destroy(p);
    }
    ks_bundle_destroy(b);
    return rc;
}

#define MAX_GRAPHS 16

static int bundle_main(int argc, char **argv) {
    if (argc < 3) return usage();
    const char *out = argv[2];
    const char *graphs[MAX_GRAPHS];
    char graph_names[MAX_GRAPHS][KS_BUNDLE_NAME_BYTES];
    int num_graphs = 0, rc = 1;
    void *image = NULL;
    size_t image_bytes = 0;
    ks_bundle_writer *w = NULL;
    FILE *f = NULL;
    if (ks_bundle_writer_create(NULL, &w)) {
        fprintf(stderr, "ks-vision bundle: %s\n", ks_last_error(NULL));
        return 1;
    }
    for (int i = 3; i < argc; i++) {
        if (i + 1 >= argc) {
            rc = usage();
            goto done;
        }
        const char *flag = argv[i], *arg = argv[++i];
        int bad = 0;
        if (strcmp(flag, "--graph") == 0) {
            if (num_graphs >= MAX_GRAPHS) {
                fprintf(stderr, "ks-vision bundle: at most %d graphs\n", MAX_GRAPHS);
                goto done;
            }
            const char *eq = strchr(arg, '=');
            size_t n = eq ? (size_t)(eq - arg) : strlen("graph");
            if (n >= KS_BUNDLE_NAME_BYTES) n = KS_BUNDLE_NAME_BYTES - 1;
            memcpy(graph_names[num_graphs], eq ? arg : "graph", n);
            graph_names[num_graphs][n] = '\0';
            graphs[num_graphs] = graph_names[num_graphs];
            num_graphs++;
            bad = add_entry(w, arg, KS_BUNDLE_GRAPH, "graph");
        } else if (strcmp(flag, "--model") == 0) {
            bad = add_entry(w, arg, KS_BUNDLE_MODEL, NULL);
        } else if (strcmp(flag, "--file") == 0) {
            bad = add_entry(w, arg, KS_BUNDLE_FILE, NULL);
        } else if (strcmp(flag, "--config") == 0) {
            bad = add_entry(w, arg, KS_BUNDLE_CONFIG, NULL);
        } else if (strcmp(flag, "--labels") == 0) {
            bad = add_entry(w, arg, KS_BUNDLE_LABELS, NULL);
        } else {
            rc = usage();
            goto done;
        }
        if (bad) goto done;
    }
    if (num_graphs == 0) {
        fprintf(stderr, "ks-vision bundle: --graph is required\n");
        goto done;
    }
    if (ks_bundle_writer_finish(w, &image, &image_bytes)) {
        fprintf(stderr, "ks-vision bundle: %s\n", ks_last_error(NULL));
        goto done;
    }
    f = fopen(out, "wb");
    if (!f || fwrite(image, 1, image_bytes, f) != image_bytes || fclose(f) != 0) {
        f = NULL;
        fprintf(stderr, "ks-vision bundle: cannot write '%s'\n", out);
        remove(out);
        goto done;
    }
    f = NULL;
    ks__register_vision_nodes();
    if (check_graphs(out, graphs, num_graphs)) {
        remove(out);
        goto done;
    }
    rc = 0;
done:
    if (f) fclose(f);
    ks_bundle_buffer_free(NULL, image);
    ks_bundle_writer_destroy(w);
    return rc;
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
    if (argc >= 2 && strcmp(argv[1], "bundle") == 0) return bundle_main(argc, argv);
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
        } else if (strcmp(a, "--max-results") == 0) {
            if (parse_int(a, v, 1, 1000, &args.max_results)) return 2;
        } else if (strcmp(a, "--threads") == 0) {
            if (parse_int(a, v, 1, 256, &args.num_threads)) return 2;
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
    ks_image_buf photo = {0};
    uint8_t *rgb = NULL;
    ks_canvas canvas = {0};
    if (ks_image_load(args.image, 0, &photo, err, sizeof(err))) {
        fprintf(stderr, "ks-vision: %s\n", err);
        return 1;
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
    if (rc == 0 && args.out_png) {
        ks_image out = img;
        out.planes[0] = canvas.rgb;
        if (ks_image_save_png(args.out_png, &out, err, sizeof(err))) {
            fprintf(stderr, "ks-vision: %s\n", err);
            rc = 1;
        }
    }
done:
    free(canvas.rgb);
    free(rgb);
    ks_image_buf_free(&photo);
    return rc;
}
