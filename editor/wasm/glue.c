/* The effect editor's WebAssembly glue (docs/editor.md): a flat C API over the effect reader and
 * validator, the face landmarker, the selfie segmenter and the GLES 3 renderer, called from
 * TypeScript (editor/src/kestrel.ts) through Emscripten's ccall. Nothing here is new logic: each
 * function is the browser's door to the same call the native `ks-ar` tool makes.
 *
 * Conventions: functions return a ks_status (0 = OK); the message of the last failure is in
 * ksw_last_error(). Strings returned (JSON) live in a static buffer until the next call of the
 * same function. The page owns the WebGL 2 context (Emscripten's GL layer, made current before
 * ksw_load_effect); every call runs on the page's main thread.
 *
 * Thread safety: single-threaded (the browser's main thread); nothing here is reentrant. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "glue.h"
#include "kestrel/ar.h"
#include "kestrel/effect.h"
#include "kestrel/face.h"
#include "kestrel/kestrel.h"
#include "kestrel/segment.h"
#include "kestrel/vision.h"

#if defined(__EMSCRIPTEN__)
#include <emscripten/emscripten.h>
#define KSW_EXPORT EMSCRIPTEN_KEEPALIVE
#else
#define KSW_EXPORT
#endif

/* One JSON text of at most this many bytes per call; a longer one is cut at a safe point. */
#define KSW_JSON_CAP 65536

typedef struct ksw_state {
    ks_effect *fx;
    ks_ar_renderer *ar;
    ks_face_landmarker *lm;
    ks_face_meshes *meshes; /* last ksw_detect result, kept for ksw_render */
    ks_ar_face faces[KS_AR_MAX_FACES];
    uint32_t num_faces;
    ks_segmenter *seg;
    ks_segmentation *mask; /* last ksw_segment result, kept for ksw_render */
    double detect_ms, segment_ms, render_ms, upload_ms;
    int last_render_mask; /* the last ksw_render had a person mask */
    char error[1024];
} ksw_state;

static ksw_state g;
static char g_json[KSW_JSON_CAP];

/* Appends to g_json at *pos; on overflow the text stays cut (callers check the flag). */
typedef struct jbuf {
    char *p;
    size_t cap, len;
    int overflow;
} jbuf;

static void jb_printf(jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jb_printf(jbuf *b, const char *fmt, ...) {
    if (b->overflow) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= b->cap - b->len) {
        b->overflow = 1;
        b->p[b->len] = '\0';
        return;
    }
    b->len += (size_t)n;
}

/* A JSON string literal of s (control characters escaped, bytes >= 0x80 passed through). */
static void jb_str(jbuf *b, const char *s) {
    jb_printf(b, "\"");
    for (; s && *s && !b->overflow; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            jb_printf(b, "\\%c", c);
        else if (c < 0x20)
            jb_printf(b, "\\u%04x", c);
        else
            jb_printf(b, "%c", c);
    }
    jb_printf(b, "\"");
}

static double now_ms(void) {
#if defined(__EMSCRIPTEN__)
    return emscripten_get_now();
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
#endif
}

static ks_status fail(ks_status st, const char *what, const char *detail) {
    snprintf(g.error, sizeof(g.error), "%s: %s: %s", what, ks_status_string(st),
             detail && detail[0] ? detail : "(no detail)");
    return st;
}

KSW_EXPORT const char *ksw_last_error(void) {
    return g.error;
}

KSW_EXPORT uint32_t ksw_version(void) {
    return ks_version();
}

/* The validator's message names "<entry>: <json path>: <what>" (effect.h); the path is the
 * second part when the first is manifest.json. Writes "" when there is no path. */
static void message_path(const char *msg, char *path, size_t cap) {
    path[0] = '\0';
    const char *m = strstr(msg, "manifest.json: ");
    if (!m) return;
    m += strlen("manifest.json: ");
    const char *end = strstr(m, ": ");
    if (!end || (size_t)(end - m) >= cap) return;
    /* a path is an identifier with [i] and . parts; anything else is prose, not a path */
    for (const char *c = m; c < end; c++)
        if (!(*c == '_' || *c == '.' || *c == '[' || *c == ']' || (*c >= '0' && *c <= '9') ||
              (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
            return;
    memcpy(path, m, (size_t)(end - m));
    path[end - m] = '\0';
}

/* Validates a .kfx package in memory with the C reader and validator.
 * Returns JSON: {"ok":true,"layers":N,"assets":N,"format":"1.1","name":"..."} or
 * {"ok":false,"status":"...","messages":[{"path":"layers[2].scale","message":"..."}]}. */
KSW_EXPORT const char *ksw_validate(const uint8_t *data, size_t size_bytes) {
    jbuf b = {g_json, sizeof(g_json), 0, 0};
    ks_effect *fx = NULL;
    ks_status st = ks_effect_open_memory(data, size_bytes, NULL, &fx);
    if (st) {
        const char *msg = ks_last_error(NULL);
        char path[256];
        message_path(msg, path, sizeof(path));
        jb_printf(&b, "{\"ok\":false,\"status\":");
        jb_str(&b, ks_status_string(st));
        jb_printf(&b, ",\"messages\":[{\"path\":");
        jb_str(&b, path);
        jb_printf(&b, ",\"message\":");
        jb_str(&b, msg);
        jb_printf(&b, "}]}");
    } else {
        const ks_effect_info *info = ks_effect_get_info(fx);
        size_t total = 0;
        uint32_t max_px = 0;
        for (uint32_t i = 0; i < ks_effect_num_assets(fx); i++) {
            const ks_effect_asset *a = ks_effect_asset_at(fx, i);
            total += a->size_bytes;
            if ((uint32_t)a->width_px * (uint32_t)a->height_px > max_px)
                max_px = (uint32_t)a->width_px * (uint32_t)a->height_px;
        }
        jb_printf(&b, "{\"ok\":true,\"name\":");
        jb_str(&b, info->name);
        jb_printf(&b, ",\"id\":");
        jb_str(&b, info->id);
        jb_printf(&b,
                  ",\"format\":\"%u.%u\",\"layers\":%u,\"assets\":%u,\"max_faces\":%u,"
                  "\"asset_bytes\":%zu,\"largest_texture_px\":%u,\"messages\":[]}",
                  (unsigned)info->version_major, (unsigned)info->version_minor,
                  (unsigned)ks_effect_num_layers(fx), (unsigned)ks_effect_num_assets(fx),
                  (unsigned)info->max_faces, total, (unsigned)max_px);
        ks_effect_destroy(fx);
    }
    if (b.overflow) snprintf(g_json, sizeof(g_json), "{\"ok\":false,\"messages\":[]}");
    return g_json;
}

KSW_EXPORT void ksw_unload_effect(void) {
    ks_ar_renderer_destroy(g.ar); /* before the effect it reads */
    ks_effect_destroy(g.fx);
    g.ar = NULL;
    g.fx = NULL;
}

/* Opens `data` as the previewed effect and creates its renderer in the current WebGL 2
 * context. On failure the previous effect stays loaded. */
KSW_EXPORT int ksw_load_effect(const uint8_t *data, size_t size_bytes) {
    ks_effect *fx = NULL;
    ks_ar_renderer *ar = NULL;
    ks_status st = ks_effect_open_memory(data, size_bytes, NULL, &fx);
    if (st) return fail(st, "effect", ks_last_error(NULL));
    st = ks_ar_renderer_create(NULL, fx, &ar);
    if (st) {
        fail(st, "renderer", ks_last_error(NULL));
        ks_effect_destroy(fx);
        return st;
    }
    ksw_unload_effect();
    g.fx = fx;
    g.ar = ar;
    return KS_STATUS_OK;
}

/* Creates the face landmarker from the bundles in `models_dir` (the page writes them into
 * Emscripten's in-memory file system). video != 0: VIDEO mode (tracking, smoothing). */
KSW_EXPORT int ksw_landmarker_create(const char *models_dir, int video, int max_faces,
                                     int full_range) {
    ks_face_landmarker_destroy(g.lm);
    g.lm = NULL;
    ks_status st = ks_set_models_dir(models_dir);
    if (st) return fail(st, "models dir", models_dir);
    if (max_faces < 1) max_faces = 1;
    if (max_faces > (int)KS_AR_MAX_FACES) max_faces = (int)KS_AR_MAX_FACES;
    ks_face_landmarker_desc d = {.task = {.mode = video ? KS_MODE_VIDEO : KS_MODE_IMAGE,
                                          .num_threads = 1,
                                          .max_results = max_faces},
                                 .detector = full_range ? KS_FACE_DETECTOR_FULL_RANGE
                                                        : KS_FACE_DETECTOR_SHORT_RANGE};
    st = ks_face_landmarker_create(&d, &g.lm);
    if (st) return fail(st, "face landmarker", ks_last_error(NULL));
    return KS_STATUS_OK;
}

/* Creates the selfie segmenter (general model, selfie_segmenter.ksb, or with landscape != 0 the
 * landscape one, selfie_segmenter_landscape.ksb) from models_dir, with the desc `ks-ar` uses
 * (ar_render/tools/ks-ar.c): u8 mask at the image's size, one thread. video != 0: VIDEO mode
 * (the mask is smoothed over time). The kept mask is dropped. */
KSW_EXPORT int ksw_segmenter_create(const char *models_dir, int video, int landscape) {
    ks_segmentation_release(g.mask);
    g.mask = NULL;
    ks_segmenter_destroy(g.seg);
    g.seg = NULL;
    ks_status st = ks_set_models_dir(models_dir);
    if (st) return fail(st, "models dir", models_dir);
    ks_segmenter_desc d = {
        .task = {.mode = video ? KS_MODE_VIDEO : KS_MODE_IMAGE, .num_threads = 1},
        .model = landscape ? KS_SEGMENTER_LANDSCAPE : KS_SEGMENTER_GENERAL,
        .output_u8 = 1};
    st = ks_segmenter_create(&d, &g.seg);
    if (st) return fail(st, "segmenter", ks_last_error(NULL));
    return KS_STATUS_OK;
}

/* 1 when the loaded effect asks for a person mask (its manifest requires "segmentation", as
 * background layers do), else 0: ks-ar runs the segmenter under the same condition. */
KSW_EXPORT int ksw_effect_needs_mask(void) {
    if (!g.fx) return 0;
    const ks_effect_info *info = ks_effect_get_info(g.fx);
    return (info->required_capabilities & (1u << KS_EFFECT_CAP_SEGMENTATION)) ? 1 : 0;
}

/* A tight RGBA8 frame of 1..8192 px a side as a ks_image; 0 for a bad one. */
static int rgba_frame(const uint8_t *rgba, int width_px, int height_px, ks_image *out) {
    if (!rgba || width_px < 1 || height_px < 1 || width_px > 8192 || height_px > 8192) return 0;
    *out = (ks_image){.format = KS_PIXEL_FORMAT_RGBA,
                      .width_px = width_px,
                      .height_px = height_px,
                      .planes = {rgba},
                      .stride_bytes = {width_px * 4}};
    return 1;
}

/* Drops the mask of the last ksw_segment (the preview then renders without a person mask). */
KSW_EXPORT void ksw_clear_mask(void) {
    ks_segmentation_release(g.mask);
    g.mask = NULL;
}

/* Segments a tight RGBA8 frame; the mask is kept for ksw_render (which uses it for a frame of
 * the same size while the loaded effect needs a mask). On failure no mask is kept. */
KSW_EXPORT int ksw_segment(const uint8_t *rgba, int width_px, int height_px, double timestamp_us) {
    ksw_clear_mask();
    if (!g.seg) return fail(KS_STATUS_INVALID_ARGUMENT, "segment", "no segmenter");
    ks_image img;
    if (!rgba_frame(rgba, width_px, height_px, &img))
        return fail(KS_STATUS_INVALID_ARGUMENT, "segment", "bad frame");
    double t0 = now_ms();
    ks_status st = ks_segment(g.seg, &img, (int64_t)timestamp_us, &g.mask);
    g.segment_ms = now_ms() - t0;
    if (st) {
        g.mask = NULL;
        return fail(st, "segment", ks_last_error(g.seg));
    }
    if (!g.mask->mask_u8) {
        ksw_clear_mask();
        return fail(KS_STATUS_INTERNAL, "segment", "no u8 mask");
    }
    return KS_STATUS_OK;
}

/* Runs the face landmarker on a tight RGBA8 frame; the faces are kept for ksw_render.
 * Returns the number of faces (>= 0) or -status. */
KSW_EXPORT int ksw_detect(const uint8_t *rgba, int width_px, int height_px, double timestamp_us) {
    ks_face_meshes_release(g.meshes);
    g.meshes = NULL;
    g.num_faces = 0;
    if (!g.lm) return -fail(KS_STATUS_INVALID_ARGUMENT, "detect", "no face landmarker");
    ks_image img;
    if (!rgba_frame(rgba, width_px, height_px, &img))
        return -fail(KS_STATUS_INVALID_ARGUMENT, "detect", "bad frame");
    double t0 = now_ms();
    ks_status st = ks_face_landmarker_detect(g.lm, &img, (int64_t)timestamp_us, &g.meshes);
    g.detect_ms = now_ms() - t0;
    if (st) return -fail(st, "detect", ks_last_error(g.lm));
    for (uint32_t i = 0; i < g.meshes->count && g.num_faces < KS_AR_MAX_FACES; i++)
        if (ks_ar_face_from_mesh(&g.meshes->items[i], &g.faces[g.num_faces]) == KS_STATUS_OK)
            g.num_faces++;
    return (int)g.num_faces;
}

/* Drops the faces of the last ksw_detect (the preview then renders without a face). */
KSW_EXPORT void ksw_clear_faces(void) {
    ks_face_meshes_release(g.meshes);
    g.meshes = NULL;
    g.num_faces = 0;
}

/* Renders the loaded effect over a tight RGBA8 frame with the faces of the last ksw_detect and,
 * when the effect needs one, the mask of the last ksw_segment (if it was made from a frame of
 * this size; else no mask: background layers draw nothing), into the canvas (the default
 * framebuffer) and, when readback is not NULL, also into readback (width * height * 4 bytes,
 * row 0 = top). */
KSW_EXPORT int ksw_render(const uint8_t *rgba, int width_px, int height_px, double timestamp_us,
                          uint8_t *readback) {
    if (!g.ar) return fail(KS_STATUS_INVALID_ARGUMENT, "render", "no effect loaded");
    ks_ar_frame frame = {.width_px = width_px,
                         .height_px = height_px,
                         .timestamp_us = (int64_t)timestamp_us,
                         .pixels = rgba,
                         .num_faces = g.num_faces,
                         .faces = g.faces};
    if (g.mask && ksw_effect_needs_mask() && g.mask->image_width_px == width_px &&
        g.mask->image_height_px == height_px)
        frame.mask = (ks_ar_mask){.pixels = g.mask->mask_u8,
                                  .width_px = g.mask->width_px,
                                  .height_px = g.mask->height_px};
    ks_ar_output out = {.to_framebuffer = 1, .framebuffer = 0, .pixels = readback};
    g.last_render_mask = frame.mask.pixels != NULL;
    double t0 = now_ms();
    ks_status st = ks_ar_render(g.ar, &frame, &out);
    g.render_ms = now_ms() - t0;
    if (st) return fail(st, "render", ks_last_error(g.ar));
    return KS_STATUS_OK;
}

/* Enters a state by name (the trigger buttons of the preview). */
KSW_EXPORT int ksw_enter_state(const char *state) {
    if (!g.ar) return fail(KS_STATUS_INVALID_ARGUMENT, "state", "no effect loaded");
    ks_status st = ks_ar_enter_state(g.ar, state);
    if (st) return fail(st, "state", ks_last_error(g.ar));
    return KS_STATUS_OK;
}

KSW_EXPORT void ksw_reset(void) {
    if (g.ar) ks_ar_reset(g.ar);
}

/* {"detect_ms":..,"segment_ms":..,"render_ms":..,"render_cpu_ms":..,"layers_drawn":..,
 *  "passes":..,"faces":..,"mask":0|1,"landmarker_*":..,"segmenter_*":..} (segment_ms: the last
 * ksw_segment; mask: whether the last ksw_render had a person mask) */
KSW_EXPORT const char *ksw_timings_json(void) {
    jbuf b = {g_json, sizeof(g_json), 0, 0};
    ks_ar_stats s = {0};
    if (g.ar) ks_ar_get_stats(g.ar, &s);
    jb_printf(&b,
              "{\"detect_ms\":%.3f,\"segment_ms\":%.3f,\"render_ms\":%.3f,\"render_cpu_ms\":%.3f,"
              "\"layers_drawn\":%u,\"passes\":%u,\"faces\":%u,\"mask\":%d",
              g.detect_ms, g.segment_ms, g.render_ms, s.cpu_ms, (unsigned)s.num_layers_drawn,
              (unsigned)s.num_passes, (unsigned)g.num_faces, g.last_render_mask);
    ks_task_stats ts;
    if (g.lm && ks_face_landmarker_stats(g.lm, &ts) == KS_STATUS_OK)
        jb_printf(&b,
                  ",\"landmarker_calls\":%llu,\"landmarker_total_ms\":%.3f,"
                  "\"landmarker_inference_ms\":%.3f",
                  (unsigned long long)ts.num_calls, ts.total_ms, ts.inference_ms);
    if (g.seg && ks_segmenter_stats(g.seg, &ts) == KS_STATUS_OK)
        jb_printf(&b,
                  ",\"segmenter_calls\":%llu,\"segmenter_total_ms\":%.3f,"
                  "\"segmenter_inference_ms\":%.3f",
                  (unsigned long long)ts.num_calls, ts.total_ms, ts.inference_ms);
    jb_printf(&b, "}");
    return g_json;
}

/* The last detected faces: [{"id":..,"box":[x,y,w,h],"landmarks":[x0,y0,x1,y1,...]}] (x, y
 * only, one decimal: the page draws them and picks anchors from them). */
KSW_EXPORT const char *ksw_faces_json(void) {
    jbuf b = {g_json, sizeof(g_json), 0, 0};
    jb_printf(&b, "[");
    for (uint32_t i = 0; g.meshes && i < g.meshes->count; i++) {
        const ks_face_mesh *m = &g.meshes->items[i];
        jb_printf(&b, "%s{\"id\":%d,\"box\":[%.1f,%.1f,%.1f,%.1f],\"landmarks\":[", i ? "," : "",
                  (int)m->id, (double)m->box.x, (double)m->box.y, (double)m->box.w,
                  (double)m->box.h);
        for (uint32_t k = 0; k < m->num_landmarks; k++)
            jb_printf(&b, "%s%.1f,%.1f", k ? "," : "", (double)m->landmarks[k].x,
                      (double)m->landmarks[k].y);
        jb_printf(&b, "]}");
    }
    jb_printf(&b, "]");
    if (b.overflow) snprintf(g_json, sizeof(g_json), "[]");
    return g_json;
}
