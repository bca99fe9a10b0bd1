/* Calibration data of the quantization pipeline (ptq_internal.h): the preprocess spec, the image
 * folder, the model input they are preprocessed into (whole or cropped), the sessions that run
 * on them and the statistics passes of calibration. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "image_io.h"
#include "kestrel/imgproc.h"
#include "npy.h"
#include "ptq_internal.h"

/* ---- the preprocess spec ------------------------------------------------------------------ */

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

ks_status ks__quant_parse_preprocess(const char *spec, ks__quant_pp *pp, char *err,
                                     size_t err_cap) {
    char buf[512];
    if (strlen(spec) >= sizeof(buf))
        return ks__fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT, "--preprocess: spec too long");
    strcpy(buf, spec);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return ks__fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                            "--preprocess: '%s' is not KEY=VALUE", tok);
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
            return ks__fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                            "--preprocess: unknown key '%s' (mean, scale, layout, size, color)", k);
        }
        if (bad)
            return ks__fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                            "--preprocess: bad value '%s' for '%s'", v, k);
    }
    return KS_STATUS_OK;
}

/* ---- calibration images ------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "1x128x128x3" (dynamic dimensions as "?") */
static void shape_text(const ks_tensor_shape *sh, char *out, size_t cap) {
    size_t len = 0;
    out[0] = '\0';
    for (int32_t d = 0; d < sh->rank && len + 1 < cap; d++) {
        int w = sh->dims[d] < 0 ? snprintf(out + len, cap - len, "%s?", d ? "x" : "")
                                : snprintf(out + len, cap - len, "%s%lld", d ? "x" : "",
                                           (long long)sh->dims[d]);
        if (w < 0) break;
        len += (size_t)w;
    }
    if (sh->rank == 0) snprintf(out, cap, "scalar");
}

static int is_npy(const char *path) {
    size_t n = strlen(path);
    return n > 4 && (strcmp(path + n - 4, ".npy") == 0 || strcmp(path + n - 4, ".NPY") == 0);
}

/* Whether the .npy file holds a float32 tensor (anything else: a warning and a skip). */
static int npy_usable(const ks__quant_ctx *c, const char *path) {
    ks_npy t;
    char err[512];
    if (ks_npy_read(path, &t, err, sizeof(err))) {
        ks__quant_log(c, KS_LOG_WARN, "skipping '%s': %s", path, err);
        return 0;
    }
    int ok = t.dtype == KS_DTYPE_F32 && t.size_bytes > 0;
    if (!ok)
        ks__quant_log(c, KS_LOG_WARN,
                      "skipping '%s': a %s tensor (calibration tensors are float32, the model "
                      "input after preprocessing)",
                      path, ks_dtype_string(t.dtype));
    ks_npy_free(&t);
    return ok;
}

void ks__quant_free_images(ks__quant_ctx *c) {
    for (int i = 0; i < c->num_images; i++)
        free(c->images[i]);
    free(c->images);
    c->images = NULL;
    c->num_images = 0;
}

ks_status ks__quant_list_images(ks__quant_ctx *c) {
    const char *dir = c->o->calib_dir;
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return ks__fail(c->err, c->err_cap, KS_STATUS_IO_ERROR,
                        "calibration folder '%s' does not exist", dir);
    if (!S_ISDIR(sb.st_mode))
        return ks__fail(c->err, c->err_cap, KS_STATUS_IO_ERROR,
                        "--calibration '%s' is not a folder", dir);
    DIR *d = opendir(dir);
    if (!d)
        return ks__fail(c->err, c->err_cap, KS_STATUS_IO_ERROR,
                        "cannot open calibration folder '%s'", dir);
    char **names = NULL;
    int n = 0, cap = 0, skipped = 0;
    ks_status st = KS_STATUS_OUT_OF_MEMORY;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
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
        st = ks__fail(c->err, c->err_cap, KS_STATUS_IO_ERROR,
                      "calibration folder '%s' has no files (zero-size calibration set)", dir);
        goto done;
    }
    qsort(names, (size_t)n, sizeof(char *), cmp_str);
    c->images = calloc((size_t)n, sizeof(char *));
    if (!c->images) goto done;
    int num_npy = 0;
    for (int i = 0; i < n; i++)
        num_npy += is_npy(names[i]);
    c->npy = num_npy > 0;
    if (num_npy > 0 && num_npy < n) {
        st = ks__fail(c->err, c->err_cap, KS_STATUS_INVALID_ARGUMENT,
                      "calibration folder '%s' mixes %d .npy tensor%s with %d other file%s; use "
                      "images (preprocessed by --preprocess) or .npy input tensors, not both",
                      dir, num_npy, num_npy == 1 ? "" : "s", n - num_npy,
                      n - num_npy == 1 ? "" : "s");
        goto done;
    }
    for (int i = 0; i < n && c->num_images < c->o->max_images; i++) {
        if (c->npy) {
            if (!npy_usable(c, names[i])) {
                skipped++;
                continue;
            }
            c->images[c->num_images++] = names[i];
            names[i] = NULL;
            continue;
        }
        ks_image_buf img;
        char err[512];
        if (ks_image_load(names[i], 0, &img, err, sizeof(err))) {
            ks__quant_log(c, KS_LOG_WARN, "skipping '%s': %s", names[i], err);
            skipped++;
            continue;
        }
        int empty = img.image.width_px < 1 || img.image.height_px < 1;
        ks_image_buf_free(&img);
        if (empty) {
            ks__quant_log(c, KS_LOG_WARN, "skipping '%s': empty image", names[i]);
            skipped++;
            continue;
        }
        c->images[c->num_images++] = names[i];
        names[i] = NULL;
    }
    if (c->num_images == 0) {
        st = ks__fail(c->err, c->err_cap, KS_STATUS_IO_ERROR,
                      c->npy ? "no usable .npy tensors in calibration folder '%s' (%d file%s "
                               "skipped; float32 tensors of the model input are read)"
                             : "no decodable images in calibration folder '%s' (%d file%s "
                               "skipped; JPEG, PNG and BMP are read)",
                      dir, skipped, skipped == 1 ? "" : "s");
        goto done;
    }
    st = KS_STATUS_OK;
done:
    closedir(d);
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (st == KS_STATUS_OUT_OF_MEMORY) ks__quant_oom(c, "calibration images");
    if (st) ks__quant_free_images(c);
    return st;
}

/* ---- model input -------------------------------------------------------------------------- */

/* The model's input, which calibration needs to be one and float ("kind": " image" or ""). */
static ks_status one_float_input(ks__quant_ctx *c, const ks_model *m, const char *kind,
                                 ks_tensor_info *info) {
    if (ks_model_num_inputs(m) != 1)
        return ks__fail(c->err, c->err_cap, KS_STATUS_UNSUPPORTED,
                        "the model has %u inputs; calibration needs exactly one%s input",
                        ks_model_num_inputs(m), kind);
    ks_model_input_info(m, 0, info);
    if (info->dtype != KS_DTYPE_F32)
        return ks__fail(c->err, c->err_cap, KS_STATUS_UNSUPPORTED,
                        "input '%s' is %s; ks-quant needs a float model", info->name,
                        ks_dtype_string(info->dtype));
    return KS_STATUS_OK;
}

/* .npy calibration: the model's one float input, its dynamic dimensions from the first tensor,
 * whose other dimensions must match. */
static ks_status npy_input_shape(ks__quant_ctx *c, const ks_model *m) {
    ks_tensor_info info;
    ks_status st = one_float_input(c, m, "", &info);
    if (st) return st;
    if (c->o->crops > 0)
        return ks__fail(c->err, c->err_cap, KS_STATUS_INVALID_ARGUMENT,
                        "--calibration-crops crops images; this calibration set is .npy tensors");
    ks_npy t;
    char err[512];
    if (ks_npy_read(c->images[0], &t, err, sizeof(err)))
        return ks__fail(c->err, c->err_cap, KS_STATUS_IO_ERROR, "%s", err);
    int same = t.shape.rank == info.shape.rank;
    for (int32_t d = 0; same && d < info.shape.rank; d++)
        same = info.shape.dims[d] < 0 || info.shape.dims[d] == t.shape.dims[d];
    if (!same) {
        char want[128], got[128];
        shape_text(&info.shape, want, sizeof(want));
        shape_text(&t.shape, got, sizeof(got));
        st = ks__fail(c->err, c->err_cap, KS_STATUS_INVALID_SHAPE,
                      "%s holds a tensor of shape %s; input '%s' is %s", c->images[0], got,
                      info.name, want);
    } else {
        c->shape = t.shape;
    }
    ks_npy_free(&t);
    return st;
}

ks_status ks__quant_input_shape(ks__quant_ctx *c, const ks_model *m) {
    if (c->npy) return npy_input_shape(c, m);
    ks__quant_pp *pp = &c->pp;
    ks_tensor_shape *shape = &c->shape;
    ks_tensor_info info;
    ks_status st = one_float_input(c, m, " image", &info);
    if (st) return st;
    *shape = info.shape;
    if (shape->rank != 4)
        return ks__fail(c->err, c->err_cap, KS_STATUS_UNSUPPORTED,
                        "input '%s' has rank %d; an image input [N,H,W,C] or [N,C,H,W] is needed",
                        info.name, shape->rank);
    int64_t *d = shape->dims;
    if (pp->layout < 0)
        pp->layout = (d[3] == 3 || d[3] == 1)   ? KS_TENSOR_LAYOUT_NHWC
                     : (d[1] == 3 || d[1] == 1) ? KS_TENSOR_LAYOUT_NCHW
                                                : KS_TENSOR_LAYOUT_NHWC;
    int hi = pp->layout == KS_TENSOR_LAYOUT_NHWC ? 1 : 2, wi = hi + 1,
        ci = pp->layout == KS_TENSOR_LAYOUT_NHWC ? 3 : 1;
    if (d[0] < 0) d[0] = 1;
    if (d[ci] < 0) d[ci] = 3;
    if (d[ci] != 3 && d[ci] != 1)
        return ks__fail(c->err, c->err_cap, KS_STATUS_UNSUPPORTED,
                        "input '%s' has %lld channels; images need 1 or 3", info.name,
                        (long long)d[ci]);
    if (d[ci] == 1) pp->color = KS_CHANNEL_ORDER_GRAY;
    if (pp->width_px) {
        if ((d[wi] >= 0 && d[wi] != pp->width_px) || (d[hi] >= 0 && d[hi] != pp->height_px))
            return ks__fail(c->err, c->err_cap, KS_STATUS_UNSUPPORTED,
                            "--preprocess size=%dx%d does not match input '%s' (%lldx%lld)",
                            pp->width_px, pp->height_px, info.name, (long long)d[wi],
                            (long long)d[hi]);
        d[wi] = pp->width_px;
        d[hi] = pp->height_px;
    }
    if (d[wi] < 0 || d[hi] < 0)
        return ks__fail(c->err, c->err_cap, KS_STATUS_UNSUPPORTED,
                        "input '%s' has a dynamic size; give --preprocess size=WxH", info.name);
    return KS_STATUS_OK;
}

/* Calibration crops (options.crops): side as a share of the photo's shorter side, centre as a
 * share of its width and height. Crop-fed models (landmarks, pose) see one subject filling the
 * input, which the whole stretched photos of a calibration folder rarely show. */
static const float k_crops[KS__QUANT_MAX_CROPS][3] = {
    {0.8f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.4f}, {0.6f, 0.3f, 0.5f},
    {0.6f, 0.7f, 0.5f}, {0.4f, 0.5f, 0.3f}, {0.7f, 0.5f, 0.6f},
};

/* Narrows img to crop k (1..KS__QUANT_MAX_CROPS; 0: the whole image) by moving its plane
 * pointer. */
static void crop_view(ks_image *img, int k) {
    int bpp = img->format == KS_PIXEL_FORMAT_RGB || img->format == KS_PIXEL_FORMAT_BGR     ? 3
              : img->format == KS_PIXEL_FORMAT_RGBA || img->format == KS_PIXEL_FORMAT_BGRA ? 4
              : img->format == KS_PIXEL_FORMAT_GRAY                                        ? 1
                                                                                           : 0;
    if (k < 1 || k > KS__QUANT_MAX_CROPS || !bpp) return;
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

/* A .npy calibration tensor into s's input 0: float32 of exactly c->shape. */
static ks_status fill_npy(const ks__quant_ctx *c, ks_session *s, const char *path) {
    ks_npy a;
    char err[512];
    ks_tensor t;
    ks_status st = ks_npy_read(path, &a, err, sizeof(err));
    if (st) return ks__fail(c->err, c->err_cap, KS_STATUS_IO_ERROR, "%s", err);
    int same = a.dtype == KS_DTYPE_F32 && a.shape.rank == c->shape.rank;
    for (int32_t d = 0; same && d < a.shape.rank; d++)
        same = a.shape.dims[d] == c->shape.dims[d];
    ks_session_input(s, 0, &t);
    if (!same || a.size_bytes != t.size_bytes) {
        char want[128], got[128];
        shape_text(&c->shape, want, sizeof(want));
        shape_text(&a.shape, got, sizeof(got));
        st = ks__fail(c->err, c->err_cap, KS_STATUS_INVALID_SHAPE,
                      "%s holds a %s tensor of shape %s; the calibration tensors are float32 %s "
                      "(the first one's shape)",
                      path, ks_dtype_string(a.dtype), got, want);
    } else {
        memcpy(t.data, a.data, t.size_bytes);
    }
    ks_npy_free(&a);
    return st;
}

ks_status ks__quant_fill_input(const ks__quant_ctx *c, ks_session *s, const char *path, int crop) {
    if (c->npy) return fill_npy(c, s, path);
    const ks__quant_pp *pp = &c->pp;
    ks_image_buf img;
    char err[512];
    ks_tensor t;
    ks_status st = ks_image_load(path, 0, &img, err, sizeof(err));
    if (st) return ks__quant_fail_engine(c, st, "%s", err);
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
    st = ks_image_to_tensor(&view, &desc, &t);
    ks_image_buf_free(&img);
    if (st) return ks__quant_fail_engine(c, st, "%s: %s", path, ks_last_error(NULL));
    return KS_STATUS_OK;
}

int ks__quant_num_eval(const ks__quant_ctx *c) {
    return c->num_images < c->o->eval_images ? c->num_images : c->o->eval_images;
}

const char *ks__quant_eval_image(const ks__quant_ctx *c, int k, int n) {
    return c->images[(size_t)k * (size_t)c->num_images / (size_t)n];
}

/* ---- sessions ----------------------------------------------------------------------------- */

ks_status ks__quant_open_session(const ks__quant_ctx *c, const ks_model *m, ks_session **out) {
    ks_session_desc desc = {.num_threads = 1, .flags = KS_SESSION_KEEP_ALL_TENSORS};
    ks_status st = ks_session_create(m, &desc, out);
    if (!st) st = ks_session_reshape(*out, &c->shape);
    if (st) {
        st = ks__quant_fail_engine(c, st, "session: %s: %s", ks_status_string(st),
                                   ks_last_error(*out));
        ks_session_destroy(*out);
        *out = NULL;
    }
    return st;
}

ks_status ks__quant_run_session(const ks__quant_ctx *c, ks_session *s) {
    ks_status st = ks_session_run(s);
    if (st)
        return ks__quant_fail_engine(c, st, "run: %s: %s", ks_status_string(st), ks_last_error(s));
    return KS_STATUS_OK;
}

ks_status ks__quant_load_graph(const ks__graph *g, ks_model **out, char *err, size_t err_cap) {
    uint8_t *buf = NULL;
    size_t size = 0;
    ks_status st = ks__ksm_write(g, &buf, &size, err, err_cap);
    if (st) return st;
    ks_model_desc md = {.flags = KS_MODEL_COPY_BUFFER};
    st = ks_model_load_buffer(buf, size, &md, out);
    ks__free(&g->alloc, buf);
    return st;
}

/* ---- calibration ------------------------------------------------------------------------- */

ks_status ks__quant_calibrate(const ks__quant_ctx *c, const ks__graph *g, int passes,
                              ks__quant_calib *calib, ks__quant_plan *plan) {
    ks_session *fs = c->fs;
    for (int pass = 1; pass <= passes; pass++) {
        const char *what = pass == 1 ? "calibrating (range)" : "calibrating (histogram)";
        int per = 1 + c->o->crops, total = c->num_images * per;
        for (int i = 0; i < total; i++) {
            ks__quant_progress(c, what, i, total);
            ks_status st = ks__quant_fill_input(c, fs, c->images[i / per], i % per);
            if (!st) st = ks__quant_run_session(c, fs);
            if (st) return st;
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
                st = ks__quant_calib_observe(calib, t, rt.data, n, pass);
                if (!st && pass == 1 && rank >= 2 && rank <= KS_MAX_RANK &&
                    rt.info.shape.dims[rank - 1] > 0 && rt.info.shape.dims[rank - 1] < (1 << 20))
                    st = ks__quant_calib_observe_channels(calib, t, rt.data, n,
                                                          (uint32_t)rt.info.shape.dims[rank - 1]);
                if (st) return ks__quant_oom(c, NULL);
            }
        }
        ks__quant_progress(c, what, total, total);
    }
    return KS_STATUS_OK;
}
