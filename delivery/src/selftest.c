/* Self-test of an installed package (docs/delivery.md, "Self-test"): selftest.kst names a model of
 * the package, golden inputs and expected outputs with a tolerance. The model runs through the
 * engine's public session API, exactly as an app would load it, from the installed file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "kestrel/engine.h"
#include "package.h"

#define KST_MAGIC "KSTT"
#define KST_MAX_TENSORS 16u

typedef struct kst {
    char model[KS_PACKAGE_MAX_NAME_BYTES + 1];
    uint32_t num_in, num_out;
    ks__selftest_tensor in[KST_MAX_TENSORS], out[KST_MAX_TENSORS];
} kst;

/* The next nbytes of d (n bytes in all) at *off, or NULL when fewer remain. */
static const uint8_t *take(const uint8_t *d, size_t n, size_t *off, uint64_t nbytes) {
    if (n - *off < nbytes) return NULL;
    const uint8_t *q = d + *off;
    *off += (size_t)nbytes;
    return q;
}

static ks_status parse(const uint8_t *d, size_t n, kst *k, char *err, size_t cap) {
    size_t off = 0;
    const uint8_t *q = take(d, n, &off, 10);
    if (!q || memcmp(q, KST_MAGIC, 4) != 0 || ks__pkg_rd32(q + 4) != 1)
        return ks__fail(err, cap, KS_STATUS_INVALID_MODEL,
                        KS__SELFTEST_NAME ": not a format-1 self-test (magic 'KSTT')");
    uint32_t len = (uint32_t)q[8] | (uint32_t)q[9] << 8;
    q = take(d, n, &off, len);
    if (!q || !ks__pkg_path_ok((const char *)q, len, err, cap))
        return ks__fail(err, cap, KS_STATUS_INVALID_MODEL,
                        KS__SELFTEST_NAME ": bad model path of %u bytes", len);
    memcpy(k->model, q, len);
    k->model[len] = '\0';
    for (int pass = 0; pass < 2; pass++) {
        uint32_t *count = pass ? &k->num_out : &k->num_in;
        ks__selftest_tensor *t = pass ? k->out : k->in;
        q = take(d, n, &off, 4);
        *count = q ? ks__pkg_rd32(q) : 0;
        if (*count == 0 || *count > KST_MAX_TENSORS)
            return ks__fail(err, cap, KS_STATUS_INVALID_MODEL, KS__SELFTEST_NAME ": %u %s (1..%u)",
                            *count, pass ? "outputs" : "inputs", KST_MAX_TENSORS);
        for (uint32_t i = 0; i < *count; i++) {
            size_t head = pass ? 16 : 12;
            q = take(d, n, &off, head);
            if (!q)
                return ks__fail(err, cap, KS_STATUS_INVALID_MODEL,
                                KS__SELFTEST_NAME ": ends inside a tensor header");
            t[i].index = ks__pkg_rd32(q);
            t[i].abs_tolerance = 0;
            if (pass) {
                uint32_t bits = ks__pkg_rd32(q + 4);
                memcpy(&t[i].abs_tolerance, &bits, 4);
            }
            t[i].size_bytes = ks__pkg_rd64(q + head - 8);
            t[i].data = take(d, n, &off, t[i].size_bytes);
            if (!t[i].data)
                return ks__fail(err, cap, KS_STATUS_INVALID_MODEL,
                                KS__SELFTEST_NAME ": tensor of %llu bytes, %zu left",
                                (unsigned long long)t[i].size_bytes, n - off);
        }
    }
    if (off != n)
        return ks__fail(err, cap, KS_STATUS_INVALID_MODEL,
                        KS__SELFTEST_NAME ": %zu unexpected trailing bytes", n - off);
    return KS_STATUS_OK;
}

/* Whether the file starts like a ks-protect container. */
static bool encrypted_file(const char *path) {
    FILE *f = fopen(path, "rb");
    char magic[4] = {0};
    bool enc = f && fread(magic, 1, 4, f) == 4 && memcmp(magic, "KSME", 4) == 0;
    if (f) fclose(f);
    return enc;
}

ks_status ks__selftest_run(const uint8_t *data, size_t n, const char *files_dir, const uint8_t *key,
                           bool *key_problem, char *err, size_t cap) {
    *key_problem = false;
    kst *k = calloc(1, sizeof(*k));
    if (!k) return ks__fail(err, cap, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    ks_model *m = NULL;
    ks_session *s = NULL;
    ks_status st = parse(data, n, k, err, cap);
    if (st) goto done;
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", files_dir, k->model);
    bool enc = encrypted_file(path);
    if (enc && !key) {
        *key_problem = true;
        st = ks__fail(err, cap, KS_STATUS_INVALID_ARGUMENT,
                      "%s is encrypted and no key was given for it", k->model);
        goto done;
    }
    ks_model_desc md = {.key = enc ? key : NULL, .key_bytes = enc ? 32 : 0};
    st = ks_model_load_file(path, &md, &m);
    if (st && enc) {
        *key_problem = true;
        ks__fail(err, cap, st, "%s: the key does not open it: %s", k->model, ks_last_error(NULL));
        goto done;
    }
    if (!st) st = ks_session_create(m, NULL, &s);
    if (!st) st = ks_session_reshape(s, NULL);
    if (st) {
        ks__fail(err, cap, st, "%s: %s", k->model, ks_last_error(s));
        goto done;
    }
    for (uint32_t i = 0; i < k->num_in; i++) {
        ks_tensor t;
        if (k->in[i].index >= ks_model_num_inputs(m) || ks_session_input(s, k->in[i].index, &t) ||
            t.size_bytes != k->in[i].size_bytes) {
            st = ks__fail(err, cap, KS_STATUS_INVALID_MODEL,
                          "%s: golden input %u (%llu bytes) does not fit the model's input",
                          k->model, k->in[i].index, (unsigned long long)k->in[i].size_bytes);
            goto done;
        }
        memcpy(t.data, k->in[i].data, t.size_bytes);
    }
    st = ks_session_run(s);
    if (st) {
        ks__fail(err, cap, st, "%s: run failed: %s", k->model, ks_last_error(s));
        goto done;
    }
    for (uint32_t i = 0; i < k->num_out; i++) {
        const ks__selftest_tensor *e = &k->out[i];
        ks_tensor t;
        if (e->index >= ks_model_num_outputs(m) || ks_session_output(s, e->index, &t) ||
            t.size_bytes != e->size_bytes) {
            st = ks__fail(err, cap, KS_STATUS_CHECKSUM_MISMATCH,
                          "%s: output %u has %zu bytes, the golden one %llu", k->model, e->index,
                          e->index < ks_model_num_outputs(m) ? t.size_bytes : 0,
                          (unsigned long long)e->size_bytes);
            goto done;
        }
        if (t.info.dtype == KS_DTYPE_F32) {
            const float *got = t.data;
            size_t count = t.size_bytes / 4;
            for (size_t j = 0; j < count; j++) {
                float want;
                memcpy(&want, (const uint8_t *)e->data + 4 * j, 4);
                float diff = fabsf(got[j] - want);
                if (!(diff <= e->abs_tolerance)) { /* NaN fails too */
                    st = ks__fail(err, cap, KS_STATUS_CHECKSUM_MISMATCH,
                                  "%s: output %u ('%s') element %zu is %g, expected %g "
                                  "(tolerance %g)",
                                  k->model, e->index, t.info.name ? t.info.name : "", j,
                                  (double)got[j], (double)want, (double)e->abs_tolerance);
                    goto done;
                }
            }
        } else if (memcmp(t.data, e->data, t.size_bytes) != 0) {
            st = ks__fail(err, cap, KS_STATUS_CHECKSUM_MISMATCH,
                          "%s: output %u ('%s', %s) differs from the golden bytes", k->model,
                          e->index, t.info.name ? t.info.name : "", ks_dtype_string(t.info.dtype));
            goto done;
        }
    }
done:
    ks_session_destroy(s);
    ks_model_destroy(m);
    free(k);
    return st;
}

ks_status ks__selftest_write(const char *model_name, const ks__selftest_tensor *inputs,
                             uint32_t num_inputs, const ks__selftest_tensor *outputs,
                             uint32_t num_outputs, uint8_t **data_out, size_t *size_out) {
    size_t ml = strlen(model_name);
    if (ml == 0 || ml > KS_PACKAGE_MAX_NAME_BYTES || num_inputs == 0 ||
        num_inputs > KST_MAX_TENSORS || num_outputs == 0 || num_outputs > KST_MAX_TENSORS)
        return KS_STATUS_INVALID_ARGUMENT;
    size_t n = 10 + ml + 8;
    for (uint32_t i = 0; i < num_inputs; i++)
        n += 12 + (size_t)inputs[i].size_bytes;
    for (uint32_t i = 0; i < num_outputs; i++)
        n += 16 + (size_t)outputs[i].size_bytes;
    uint8_t *d = malloc(n), *p = d;
    if (!d) return KS_STATUS_OUT_OF_MEMORY;
    memcpy(p, KST_MAGIC, 4);
    ks__pkg_wr32(p + 4, 1);
    p[8] = (uint8_t)ml;
    p[9] = (uint8_t)(ml >> 8);
    memcpy(p + 10, model_name, ml);
    p += 10 + ml;
    for (int pass = 0; pass < 2; pass++) {
        uint32_t count = pass ? num_outputs : num_inputs;
        const ks__selftest_tensor *t = pass ? outputs : inputs;
        ks__pkg_wr32(p, count);
        p += 4;
        for (uint32_t i = 0; i < count; i++) {
            ks__pkg_wr32(p, t[i].index);
            p += 4;
            if (pass) {
                uint32_t bits;
                memcpy(&bits, &t[i].abs_tolerance, 4);
                ks__pkg_wr32(p, bits);
                p += 4;
            }
            ks__pkg_wr64(p, t[i].size_bytes);
            p += 8;
            memcpy(p, t[i].data, (size_t)t[i].size_bytes);
            p += t[i].size_bytes;
        }
    }
    *data_out = d;
    *size_out = n;
    return KS_STATUS_OK;
}

/* ---- task level: faces on a photo ------------------------------------------------------------ */

#define KSTF_MAGIC "KSTF"
#define KSTF_MAX_PX 4096u
#define KSTF_MAX_BOXES 64u

ks_status ks__selftest_face_write(const ks__selftest_face *t, uint8_t **data_out,
                                  size_t *size_out) {
    size_t bl = strlen(t->bundle_name);
    if (bl == 0 || bl > KS_PACKAGE_MAX_NAME_BYTES || t->width_px == 0 || t->height_px == 0 ||
        t->width_px > KSTF_MAX_PX || t->height_px > KSTF_MAX_PX || t->num_boxes > KSTF_MAX_BOXES)
        return KS_STATUS_INVALID_ARGUMENT;
    size_t px = (size_t)t->width_px * t->height_px * 3;
    size_t n = 10 + bl + 8 + px + 12 + 16 * (size_t)t->num_boxes;
    uint8_t *d = malloc(n), *p = d;
    if (!d) return KS_STATUS_OUT_OF_MEMORY;
    memcpy(p, KSTF_MAGIC, 4);
    ks__pkg_wr32(p + 4, 1);
    p[8] = (uint8_t)bl;
    p[9] = (uint8_t)(bl >> 8);
    memcpy(p + 10, t->bundle_name, bl);
    p += 10 + bl;
    ks__pkg_wr32(p, t->width_px);
    ks__pkg_wr32(p + 4, t->height_px);
    memcpy(p + 8, t->rgb, px);
    p += 8 + px;
    uint32_t bits;
    ks__pkg_wr32(p, t->num_faces);
    memcpy(&bits, &t->min_iou, 4);
    ks__pkg_wr32(p + 4, bits);
    ks__pkg_wr32(p + 8, t->num_boxes);
    p += 12;
    for (uint32_t i = 0; i < 4 * t->num_boxes; i++, p += 4) {
        memcpy(&bits, &t->boxes[i], 4);
        ks__pkg_wr32(p, bits);
    }
    *data_out = d;
    *size_out = n;
    return KS_STATUS_OK;
}

static float rdf(const uint8_t *p) {
    uint32_t bits = ks__pkg_rd32(p);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

#if KS_DELIVERY_HAVE_TASKS
#include "kestrel/bundle.h"
#include "kestrel/face.h"

/* Whether the face detector's model file (a .ksb, or a .ksm) holds an encrypted model. */
static bool has_encrypted_model(const char *path) {
    if (encrypted_file(path)) return true;
    ks_bundle *b = NULL;
    if (ks_bundle_open_file(path, NULL, &b) != KS_STATUS_OK) return false; /* the task says why */
    bool enc = false;
    for (uint32_t i = 0; i < ks_bundle_num_entries(b) && !enc; i++) {
        ks_bundle_entry e;
        enc = ks_bundle_get_entry(b, i, &e) == KS_STATUS_OK && e.kind == KS_BUNDLE_MODEL &&
              e.size_bytes >= 4 && memcmp(e.data, "KSME", 4) == 0;
    }
    ks_bundle_destroy(b);
    return enc;
}

/* A create message without its "ks_<task>_create: " prefix (the self-test names the task). */
static const char *without_prefix(const char *msg) {
    const char *p = strstr(msg, "_create: ");
    return p && strncmp(msg, "ks_", 3) == 0 ? p + 9 : msg;
}

/* Boxes found: the detector's, else the landmarker's (a landmarker bundle's graph is refused
 * by the detector's create, and the other way round). */
static ks_status find_with_task(const char *path, const ks_task_options *task, const ks_image *img,
                                float *boxes, uint32_t cap, uint32_t *num_faces, const char **kind,
                                char *err, size_t err_cap) {
    ks_face_detector *det = NULL;
    ks_status st = ks_face_detector_create(&(ks_face_detector_desc){.task = *task}, &det);
    if (st == KS_STATUS_OK) {
        *kind = "face detector";
        ks_faces *faces = NULL;
        st = ks_face_detect(det, img, 0, &faces);
        if (st) {
            snprintf(err, err_cap, "detect failed: %s", ks_last_error(det));
        } else {
            *num_faces = faces->count;
            for (uint32_t i = 0; i < faces->count && i < cap; i++)
                memcpy(boxes + 4 * i, &faces->items[i].box, sizeof(ks_box));
        }
        ks_faces_release(faces);
        ks_face_detector_destroy(det);
        return st;
    }
    char det_why[512];
    snprintf(det_why, sizeof(det_why), "%s", without_prefix(ks_last_error(NULL)));
    if (st == KS_STATUS_TAMPERED || st == KS_STATUS_OUT_OF_MEMORY) {
        snprintf(err, err_cap, "%s", det_why);
        return st;
    }
    ks_face_landmarker *lm = NULL;
    ks_face_landmarker_desc ld = {.task = *task};
    ld.task.max_results = KS_FACE_MAX_FACES;
    ks_status lst = ks_face_landmarker_create(&ld, &lm);
    if (lst) {
        snprintf(err, err_cap,
                 "neither a face detector nor a face landmarker bundle (as a landmarker: %s; as a "
                 "detector: %s)",
                 without_prefix(ks_last_error(NULL)), det_why);
        return lst == KS_STATUS_TAMPERED ? lst : st;
    }
    *kind = "face landmarker";
    ks_face_meshes *meshes = NULL;
    st = ks_face_landmarker_detect(lm, img, 0, &meshes);
    if (st) {
        snprintf(err, err_cap, "landmarks failed: %s", ks_last_error(lm));
    } else {
        *num_faces = meshes->count;
        for (uint32_t i = 0; i < meshes->count && i < cap; i++)
            memcpy(boxes + 4 * i, &meshes->items[i].box, sizeof(ks_box));
    }
    ks_face_meshes_release(meshes);
    ks_face_landmarker_destroy(lm);
    return st;
}
#endif

static float iou(const float *a, const float *b) {
    float x0 = fmaxf(a[0], b[0]), y0 = fmaxf(a[1], b[1]);
    float x1 = fminf(a[0] + a[2], b[0] + b[2]), y1 = fminf(a[1] + a[3], b[1] + b[3]);
    float inter = fmaxf(0, x1 - x0) * fmaxf(0, y1 - y0);
    float uni = a[2] * a[3] + b[2] * b[3] - inter;
    return uni > 0 ? inter / uni : 0;
}

ks_status ks__selftest_face_find(const char *path, const uint8_t *key, const uint8_t *rgb,
                                 uint32_t w, uint32_t h, float *boxes, uint32_t cap,
                                 uint32_t *num_faces, const char **kind, bool *key_problem,
                                 char *err, size_t err_cap) {
    *key_problem = false;
    *num_faces = 0;
    *kind = "";
#if KS_DELIVERY_HAVE_TASKS
    bool enc = has_encrypted_model(path);
    if (enc && !key) {
        *key_problem = true;
        snprintf(err, err_cap, "holds encrypted models and no key was given for them");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    ks_image img = {.format = KS_PIXEL_FORMAT_RGB,
                    .width_px = (int32_t)w,
                    .height_px = (int32_t)h,
                    .planes = {rgb},
                    .stride_bytes = {(int32_t)w * 3}};
    /* The task copies the key for its create and wipes the copy; plain models ignore it. */
    ks_task_options task = {
        .model_path = path, .key = key, .key_bytes = key ? KS_TASK_KEY_BYTES : 0};
    char why[640];
    ks_status st = find_with_task(path, &task, &img, boxes, cap, num_faces, kind, why, sizeof(why));
    if (st) {
        /* The package's bytes are signed, so an encrypted model the key does not open is a key
         * problem, not a bad package. */
        if (enc && st == KS_STATUS_TAMPERED) {
            *key_problem = true;
            snprintf(err, err_cap, "the key does not open it: %s", why);
        } else {
            snprintf(err, err_cap, "%s", why);
        }
    }
    return st;
#else
    (void)path;
    (void)key;
    (void)rgb;
    (void)w;
    (void)h;
    (void)boxes;
    (void)cap;
    snprintf(err, err_cap, "this build has no task library (algos/)");
    return KS_STATUS_UNSUPPORTED;
#endif
}

ks_status ks__selftest_face_run(const uint8_t *d, size_t n, const char *files_dir,
                                const uint8_t *key, bool *key_problem, char *err, size_t cap) {
    *key_problem = false;
    size_t off = 0;
    const uint8_t *q = take(d, n, &off, 10);
    if (!q || memcmp(q, KSTF_MAGIC, 4) != 0 || ks__pkg_rd32(q + 4) != 1)
        return ks__fail(err, cap, KS_STATUS_INVALID_MODEL,
                        KS__SELFTEST_FACE_NAME ": not a format-1 face self-test (magic 'KSTF')");
    uint32_t len = (uint32_t)q[8] | (uint32_t)q[9] << 8;
    const char *bundle = (const char *)take(d, n, &off, len);
    if (!bundle || !ks__pkg_path_ok(bundle, len, err, cap))
        return ks__fail(err, cap, KS_STATUS_INVALID_MODEL,
                        KS__SELFTEST_FACE_NAME ": bad bundle path of %u bytes", len);
    q = take(d, n, &off, 8);
    uint32_t w = q ? ks__pkg_rd32(q) : 0, h = q ? ks__pkg_rd32(q + 4) : 0;
    if (w == 0 || h == 0 || w > KSTF_MAX_PX || h > KSTF_MAX_PX)
        return ks__fail(err, cap, KS_STATUS_INVALID_MODEL,
                        KS__SELFTEST_FACE_NAME ": photo of %ux%u px (1..%u each)", w, h,
                        KSTF_MAX_PX);
    const uint8_t *rgb = take(d, n, &off, (uint64_t)w * h * 3);
    q = rgb ? take(d, n, &off, 12) : NULL;
    if (!q)
        return ks__fail(err, cap, KS_STATUS_INVALID_MODEL,
                        KS__SELFTEST_FACE_NAME ": ends inside the photo or the expectations");
    uint32_t want_faces = ks__pkg_rd32(q), num_boxes = ks__pkg_rd32(q + 8);
    float min_iou = rdf(q + 4);
    const uint8_t *boxes = num_boxes <= KSTF_MAX_BOXES ? take(d, n, &off, 16ull * num_boxes) : NULL;
    if (!boxes || off != n || !(min_iou >= 0 && min_iou <= 1))
        return ks__fail(err, cap, KS_STATUS_INVALID_MODEL,
                        KS__SELFTEST_FACE_NAME ": bad expectations (%u boxes, IoU %g, %zu bytes "
                                               "left)",
                        num_boxes, (double)min_iou, n - off);
    char path[4096];
    snprintf(path, sizeof(path), "%s/%.*s", files_dir, (int)len, bundle);
    float found[4 * KSTF_MAX_BOXES];
    uint32_t num_found = 0;
    const char *kind = "";
    char why[768];
    ks_status st = ks__selftest_face_find(path, key, rgb, w, h, found, KSTF_MAX_BOXES, &num_found,
                                          &kind, key_problem, why, sizeof(why));
    if (st) return ks__fail(err, cap, st, "%.*s: %s", (int)len, bundle, why);
    if (num_found != want_faces)
        return ks__fail(err, cap, KS_STATUS_CHECKSUM_MISMATCH,
                        "%.*s (%s): %u face(s) on the %ux%u photo, expected %u", (int)len, bundle,
                        kind, num_found, w, h, want_faces);
    uint32_t nf = num_found < KSTF_MAX_BOXES ? num_found : KSTF_MAX_BOXES;
    for (uint32_t i = 0; i < num_boxes; i++) {
        float b[4];
        for (int k = 0; k < 4; k++)
            b[k] = rdf(boxes + 16 * i + 4 * k);
        float best = 0;
        for (uint32_t j = 0; j < nf; j++)
            best = fmaxf(best, iou(b, found + 4 * j));
        if (!(best >= min_iou))
            return ks__fail(err, cap, KS_STATUS_CHECKSUM_MISMATCH,
                            "%.*s (%s): expected face %u at (%.0f, %.0f, %.0f x %.0f) px: best "
                            "IoU %.2f, needs %.2f",
                            (int)len, bundle, kind, i, (double)b[0], (double)b[1], (double)b[2],
                            (double)b[3], (double)best, (double)min_iou);
    }
    return KS_STATUS_OK;
}
