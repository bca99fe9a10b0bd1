/* AR renderer core: effect load, parameters, face tracking slots, triggers and states, per-frame
 * layout, and the frame loop shared by every backend. Portable C: drawing goes through the
 * backend table (r->backend, ar_internal.h; NULL for the null backend).
 *
 * State model. Face-anchored layers (sticker, face_texture, makeup, beauty, mesh3d) keep their
 * visibility and animation clock PER FACE SLOT; frame-wide layers (lut, background) keep one.
 * A face that appears (an id not seen in the previous frame) gets a fresh slot: the layers'
 * manifest `visible` flags, then initial_state, then face_found triggers. A face that is missing
 * from a frame loses its slot in that same frame, before anything is laid out or drawn, so
 * nothing anchored to it can be drawn again (no stale makeup); face_lost triggers then act on
 * the frame-wide layers. Expression triggers fire per face when its score crosses the
 * threshold upwards (a new face starts from 0), and act on that face's layers plus the
 * frame-wide ones. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ar_internal.h"
#include "face_geometry.h"

extern const uint8_t ks__ar_face_geometry_pb[];
extern const size_t ks__ar_face_geometry_pb_size;

#define NO_PARAM UINT32_MAX
#define FRAME_WIDE_SLOT 0u

static const ks__ar_layer_vtable *const k_kinds[KS_EFFECT_LAYER_KIND_COUNT] = {
    [KS_EFFECT_LAYER_STICKER] = &ks__ar_layer_sticker,
    [KS_EFFECT_LAYER_FACE_TEXTURE] = &ks__ar_layer_face_texture,
    [KS_EFFECT_LAYER_MAKEUP] = &ks__ar_layer_makeup,
    [KS_EFFECT_LAYER_BEAUTY] = &ks__ar_layer_beauty,
    [KS_EFFECT_LAYER_LUT] = &ks__ar_layer_lut,
    [KS_EFFECT_LAYER_BACKGROUND] = &ks__ar_layer_background,
    [KS_EFFECT_LAYER_MESH3D] = &ks__ar_layer_mesh3d,
};

const char *ks_ar_backend_string(ks_ar_backend backend) {
    switch (backend) {
    case KS_AR_BACKEND_GLES3:
        return "gles3";
    case KS_AR_BACKEND_NULL:
        return "null";
    default:
        return "invalid";
    }
}

/* ---- small helpers ------------------------------------------------------------------------- */

void *ks__ar_alloc(ks__ar_renderer *r, size_t size_bytes) {
    return ks__calloc(&r->alloc, 1, size_bytes);
}

void ks__ar_free(ks__ar_renderer *r, void *ptr) {
    ks__free(&r->alloc, ptr);
}

ks_status ks__ar_error(ks__ar_renderer *r, ks_status status, const char *fmt, ...) {
    char msg[KS_ERROR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ks__object_error(&r->obj, "%s", msg);
    if (r->creating) ks__set_thread_error(msg);
    return status;
}

uint32_t ks__ar_sprite_frame(const ks_effect_layer *desc, const ks__ar_inst *inst,
                             int64_t timestamp_us) {
    if (desc->num_frames <= 1) return 0;
    int64_t elapsed_us = timestamp_us - inst->anim_start_us;
    if (elapsed_us < 0) elapsed_us = 0;
    double frames = (double)elapsed_us * (double)desc->fps / 1e6;
    if (frames > 1e15) frames = 1e15; /* keeps the cast defined for absurd timestamps */
    uint64_t index = (uint64_t)frames;
    if (desc->loop) return (uint32_t)(index % desc->num_frames);
    return index >= desc->num_frames ? desc->num_frames - 1 : (uint32_t)index;
}

void ks__ar_landmark_mean(const ks__ar_face_ctx *face, const uint32_t *indices, uint32_t num,
                          float out_px[2]) {
    double x = 0, y = 0;
    uint32_t n = 0;
    for (uint32_t i = 0; i < num; i++) {
        uint32_t k = indices[i];
        if (k >= face->num_landmarks) k = 1; /* iris index on a 468-point face: nose tip */
        x += face->landmarks[3 * k];
        y += face->landmarks[3 * k + 1];
        n++;
    }
    if (n == 0) {
        out_px[0] = face->center_px[0];
        out_px[1] = face->center_px[1];
        return;
    }
    out_px[0] = (float)(x / n);
    out_px[1] = (float)(y / n);
}

uint32_t ks__ar_layer_param_texture(const ks__ar_renderer *r, const ks__ar_layer *layer) {
    if (layer->image_param == NO_PARAM || layer->image_param >= r->num_params) return 0;
    return r->params[layer->image_param].image.id;
}

static uint32_t find_param(const ks__ar_renderer *r, const char *name) {
    if (!name || !name[0]) return NO_PARAM;
    for (uint32_t i = 0; i < r->num_params; i++)
        if (strcmp(ks_effect_param_at(r->effect, i)->name, name) == 0) return i;
    return NO_PARAM;
}

static double now_ms(void) {
    struct timespec ts;
    if (timespec_get(&ts, TIME_UTC) != TIME_UTC) return 0.0;
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- create / destroy ---------------------------------------------------------------------- */

static void destroy_layers(ks__ar_renderer *r) {
    if (!r->layers) return;
    for (uint32_t i = 0; i < r->num_layers; i++) {
        ks__ar_layer *l = &r->layers[i];
        if (!l->vt) continue; /* its create never ran */
        if (r->backend) r->backend->layer_destroy(r, l);
        if (l->vt->destroy) l->vt->destroy(r, l);
    }
    ks__ar_free(r, r->layers);
    r->layers = NULL;
}

void ks_ar_renderer_destroy(ks_ar_renderer *r) {
    if (!r) return;
    destroy_layers(r);
    if (r->params) {
        for (uint32_t i = 0; r->backend && i < r->num_params; i++) {
            if (r->params[i].image_owned) r->backend->texture_destroy(r, &r->params[i].image);
            r->backend->texture_destroy(r, &r->params[i].default_image);
        }
        ks__ar_free(r, r->params);
    }
    if (r->backend) r->backend->release(r);
    if (r->geometry) ks__face_geometry_metadata_destroy((ks__face_geometry_metadata *)r->geometry);
    ks_allocator alloc = r->alloc;
    ks__free(&alloc, r);
}

static ks_status create_params(ks__ar_renderer *r) {
    r->num_params = ks_effect_num_params(r->effect);
    r->params = ks__ar_alloc(r, (size_t)(r->num_params ? r->num_params : 1) * sizeof(*r->params));
    if (!r->params) return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "ar renderer: out of memory");
    for (uint32_t i = 0; i < r->num_params; i++) {
        const ks_effect_param *p = ks_effect_param_at(r->effect, i);
        ks__ar_param_value *v = &r->params[i];
        memcpy(v->color, p->default_color, sizeof(v->color));
        v->value = p->default_value;
        v->option = p->default_option;
        if (p->type == KS_EFFECT_PARAM_IMAGE && p->default_image && p->default_image[0] &&
            r->backend) {
            ks_status st =
                r->backend->texture_from_name(r, NULL, p->default_image, &v->default_image);
            if (st) return st;
            v->image = v->default_image;
        }
    }
    return KS_STATUS_OK;
}

static ks_status create_layers(ks__ar_renderer *r) {
    r->num_layers = ks_effect_num_layers(r->effect);
    r->layers = ks__ar_alloc(r, (size_t)(r->num_layers ? r->num_layers : 1) * sizeof(*r->layers));
    if (!r->layers) return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "ar renderer: out of memory");
    for (uint32_t i = 0; i < r->num_layers; i++) {
        ks__ar_layer *l = &r->layers[i];
        l->desc = ks_effect_layer_at(r->effect, i);
        l->index = i;
        l->image_param = find_param(r, l->desc->texture_param);
        l->color_param = find_param(r, l->desc->color_param);
        l->intensity_param = find_param(r, l->desc->intensity_param);
        l->opacity = l->desc->opacity;
        l->intensity = l->desc->intensity;
        memcpy(l->color, l->desc->color, sizeof(l->color));
        if ((unsigned)l->desc->kind >= KS_EFFECT_LAYER_KIND_COUNT || !k_kinds[l->desc->kind])
            return ks__ar_error(r, KS_STATUS_UNSUPPORTED, "layer '%s': unknown kind %d",
                                l->desc->name, (int)l->desc->kind);
    }
    /* vtables are set only now, so destroy never runs a kind's destroy for a layer whose
     * create was not called */
    for (uint32_t i = 0; i < r->num_layers; i++) {
        ks__ar_layer *l = &r->layers[i];
        l->vt = k_kinds[l->desc->kind];
        ks_status st = l->vt->create(r, l);
        if (!st && r->backend) st = r->backend->layer_create(r, l);
        if (st) return st;
        if (l->vt->loaded) l->vt->loaded(r, l);
    }
    return KS_STATUS_OK;
}

static void reset_state(ks__ar_renderer *r);

ks_status ks_ar_renderer_create(const ks_ar_renderer_desc *desc, const ks_effect *effect,
                                ks_ar_renderer **out) {
    ks_ar_renderer_desc d = desc ? *desc : (ks_ar_renderer_desc){0};
    if (!effect || !out) {
        ks__object_error(NULL, "ks_ar_renderer_create: effect and out must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if ((unsigned)d.backend >= KS_AR_BACKEND_COUNT || d.width_px < 0 || d.height_px < 0 ||
        d.width_px > 4096 || d.height_px > 4096 || (d.width_px == 0) != (d.height_px == 0)) {
        ks__object_error(NULL, "ks_ar_renderer_create: bad desc (backend %d, size %dx%d)",
                         (int)d.backend, (int)d.width_px, (int)d.height_px);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    ks_allocator alloc = ks__allocator_or_default(d.allocator);
    ks__ar_renderer *r = ks__alloc(&alloc, sizeof(*r));
    if (!r) {
        ks__object_error(NULL, "ks_ar_renderer_create: out of memory");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    memset(r, 0, sizeof(*r));
    r->obj.magic = KS__OBJECT_MAGIC;
    r->alloc = alloc;
    r->creating = true;
    if (d.backend == KS_AR_BACKEND_GLES3 && !(r->backend = ks__ar_gles3_backend())) {
        ks__ar_error(
            r, KS_STATUS_UNSUPPORTED,
            "ks_ar_renderer_create: this build has no OpenGL ES 3 backend (KS_AR_GLES=OFF); "
            "KS_AR_BACKEND_NULL is available");
        ks_ar_renderer_destroy(r);
        return KS_STATUS_UNSUPPORTED;
    }
    r->effect = effect;
    r->info = ks_effect_get_info(effect);
    r->max_faces = r->info->max_faces;
    if (r->max_faces < 1) r->max_faces = 1;
    if (r->max_faces > KS__AR_MAX_SLOTS) r->max_faces = KS__AR_MAX_SLOTS;

    char err[256] = "";
    ks__face_geometry_metadata *md = NULL;
    ks_status st = ks__face_geometry_parse(&r->alloc, ks__ar_face_geometry_pb,
                                           ks__ar_face_geometry_pb_size, &md, err, sizeof(err));
    if (st) {
        st = ks__ar_error(r, st, "ar renderer: embedded canonical face mesh: %s", err);
        goto error;
    }
    r->geometry = md;
    if (md->num_vertices != KS__AR_NUM_MESH_VERTICES || md->num_indices == 0) {
        st = ks__ar_error(r, KS_STATUS_INTERNAL,
                          "ar renderer: canonical face mesh has %u vertices, expected %u",
                          md->num_vertices, KS__AR_NUM_MESH_VERTICES);
        goto error;
    }
    r->mesh.num_vertices = md->num_vertices;
    r->mesh.num_indices = md->num_indices;
    r->mesh.vertices = md->vertices;
    r->mesh.indices = md->indices;

    if (r->backend && (st = r->backend->init(r)) != KS_STATUS_OK) goto error;
    if ((st = create_params(r)) != KS_STATUS_OK) goto error;
    if ((st = create_layers(r)) != KS_STATUS_OK) goto error;
    if (r->backend && d.width_px > 0 &&
        (st = r->backend->resize(r, d.width_px, d.height_px)) != KS_STATUS_OK)
        goto error;
    reset_state(r);
    r->creating = false;
    *out = r;
    return KS_STATUS_OK;
error:
    ks_ar_renderer_destroy(r);
    return st;
}

ks_status ks_ar_renderer_swap_effect(ks_ar_renderer *r, const ks_effect *effect) {
    if (!r || !effect) {
        if (r)
            ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT,
                         "ks_ar_renderer_swap_effect: effect is NULL");
        else
            ks__object_error(NULL, "ks_ar_renderer_swap_effect: renderer is NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    /* A complete renderer for the new effect, with this one's backend, allocator and frame size;
     * on failure this one is untouched. */
    ks_ar_renderer_desc d = {.backend = r->backend ? KS_AR_BACKEND_GLES3 : KS_AR_BACKEND_NULL,
                             .allocator = &r->alloc,
                             .width_px = r->width_px,
                             .height_px = r->height_px};
    ks_ar_renderer *fresh = NULL;
    ks_status st = ks_ar_renderer_create(&d, effect, &fresh);
    if (st) {
        char why[KS_ERROR_CAP];
        snprintf(why, sizeof(why), "%s", ks_last_error(NULL));
        ks__ar_error(r, st, "ks_ar_renderer_swap_effect: %s", why);
        return st;
    }
    /* Exchange everything but the error holders: r becomes the new renderer, fresh holds the
     * old effect's layers and GL objects and is released (no field points into its own struct). */
    ks__ar_renderer tmp = *r;
    ks__object r_obj = r->obj, fresh_obj = fresh->obj;
    *r = *fresh;
    *fresh = tmp;
    r->obj = r_obj;
    fresh->obj = fresh_obj;
    ks_ar_renderer_destroy(fresh);
    return KS_STATUS_OK;
}

/* ---- parameters ---------------------------------------------------------------------------- */

static ks_status lookup_param(ks__ar_renderer *r, const char *name, ks_effect_param_type type,
                              uint32_t *index_out) {
    if (!r) return KS_STATUS_INVALID_ARGUMENT;
    uint32_t i = find_param(r, name);
    if (i == NO_PARAM)
        return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT, "parameter '%s': no such parameter",
                            name ? name : "(null)");
    const ks_effect_param *p = ks_effect_param_at(r->effect, i);
    if (p->type != type)
        return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT, "parameter '%s': is a %s, not a %s",
                            name, ks_effect_param_type_string(p->type),
                            ks_effect_param_type_string(type));
    *index_out = i;
    return KS_STATUS_OK;
}

ks_status ks_ar_set_param_color(ks_ar_renderer *r, const char *name, const float rgba[4]) {
    uint32_t i;
    ks_status st = lookup_param(r, name, KS_EFFECT_PARAM_COLOR, &i);
    if (st) return st;
    if (!rgba) return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT, "parameter '%s': NULL", name);
    for (int k = 0; k < 4; k++)
        if (!(rgba[k] >= 0.0f && rgba[k] <= 1.0f))
            return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT,
                                "parameter '%s': component %d is %g, expected [0, 1]", name, k,
                                (double)rgba[k]);
    memcpy(r->params[i].color, rgba, 4 * sizeof(float));
    return KS_STATUS_OK;
}

ks_status ks_ar_set_param_float(ks_ar_renderer *r, const char *name, float value) {
    uint32_t i;
    ks_status st = lookup_param(r, name, KS_EFFECT_PARAM_FLOAT, &i);
    if (st) return st;
    const ks_effect_param *p = ks_effect_param_at(r->effect, i);
    if (!(value >= p->min && value <= p->max))
        return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT, "parameter '%s': %g is outside [%g, %g]",
                            name, (double)value, (double)p->min, (double)p->max);
    r->params[i].value = value;
    return KS_STATUS_OK;
}

ks_status ks_ar_set_param_enum(ks_ar_renderer *r, const char *name, const char *option) {
    uint32_t i;
    ks_status st = lookup_param(r, name, KS_EFFECT_PARAM_ENUM, &i);
    if (st) return st;
    const ks_effect_param *p = ks_effect_param_at(r->effect, i);
    for (uint32_t k = 0; option && k < p->num_options; k++) {
        if (strcmp(p->options[k], option) == 0) {
            r->params[i].option = k;
            return KS_STATUS_OK;
        }
    }
    return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT, "parameter '%s': '%s' is not an option",
                        name, option ? option : "(null)");
}

ks_status ks_ar_set_param_image(ks_ar_renderer *r, const char *name, const uint8_t *pixels,
                                int32_t width_px, int32_t height_px, size_t stride_bytes) {
    uint32_t i;
    ks_status st = lookup_param(r, name, KS_EFFECT_PARAM_IMAGE, &i);
    if (st) return st;
    ks__ar_param_value *v = &r->params[i];
    if (pixels &&
        (width_px <= 0 || height_px <= 0 || width_px > (int32_t)KS_EFFECT_MAX_TEXTURE_PX ||
         height_px > (int32_t)KS_EFFECT_MAX_TEXTURE_PX))
        return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT,
                            "parameter '%s': image is %dx%d, expected 1..%u per side", name,
                            (int)width_px, (int)height_px, KS_EFFECT_MAX_TEXTURE_PX);
    ks__ar_texture t = {0};
    if (pixels && r->backend) {
        st = r->backend->texture_from_rgba(r, pixels, width_px, height_px, stride_bytes, &t);
        if (st) return st;
    } else if (pixels) {
        t.width_px = width_px; /* null backend: remember the size only */
        t.height_px = height_px;
    }
    if (v->image_owned && r->backend) r->backend->texture_destroy(r, &v->image);
    v->image_owned = pixels != NULL;
    v->image = pixels ? t : v->default_image;
    return KS_STATUS_OK;
}

static bool parse_hex_color(const char *s, float out[4]) {
    size_t n = strlen(s);
    if (n != 7 && n != 9) return false;
    unsigned v[4] = {0, 0, 0, 255};
    for (size_t k = 0; k < (n - 1) / 2; k++) {
        unsigned byte = 0;
        for (int j = 0; j < 2; j++) {
            char c = s[1 + 2 * k + (size_t)j];
            unsigned d = (c >= '0' && c <= '9')   ? (unsigned)(c - '0')
                         : (c >= 'a' && c <= 'f') ? (unsigned)(c - 'a' + 10)
                         : (c >= 'A' && c <= 'F') ? (unsigned)(c - 'A' + 10)
                                                  : 99u;
            if (d > 15) return false;
            byte = byte * 16 + d;
        }
        v[k] = byte;
    }
    for (int k = 0; k < 4; k++)
        out[k] = (float)v[k] / 255.0f;
    return true;
}

ks_status ks_ar_set_param_string(ks_ar_renderer *r, const char *name, const char *value) {
    if (!r) return KS_STATUS_INVALID_ARGUMENT;
    uint32_t i = find_param(r, name);
    if (i == NO_PARAM || !value)
        return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT, "parameter '%s': no such parameter",
                            name ? name : "(null)");
    const ks_effect_param *p = ks_effect_param_at(r->effect, i);
    switch (p->type) {
    case KS_EFFECT_PARAM_COLOR: {
        float c[4] = {0, 0, 0, 1};
        if (value[0] == '#') {
            if (!parse_hex_color(value, c))
                return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT,
                                    "parameter '%s': '%s' is not #RRGGBB or #RRGGBBAA", name,
                                    value);
        } else {
            int n = sscanf(value, "%f,%f,%f,%f", &c[0], &c[1], &c[2], &c[3]);
            if (n < 3)
                return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT,
                                    "parameter '%s': '%s' is not r,g,b[,a]", name, value);
        }
        return ks_ar_set_param_color(r, name, c);
    }
    case KS_EFFECT_PARAM_FLOAT: {
        char *end = NULL;
        float f = strtof(value, &end);
        if (end == value || *end)
            return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT,
                                "parameter '%s': '%s' is not a number", name, value);
        return ks_ar_set_param_float(r, name, f);
    }
    case KS_EFFECT_PARAM_ENUM:
        return ks_ar_set_param_enum(r, name, value);
    default:
        return ks__ar_error(r, KS_STATUS_UNSUPPORTED,
                            "parameter '%s': image parameters take pixels "
                            "(ks_ar_set_param_image)",
                            name);
    }
}

/* ---- states -------------------------------------------------------------------------------- */

/* Applies a state's actions for face slot `slot` (its per-face layers) and the frame-wide
 * layers; slot == UINT32_MAX: frame-wide layers only; slot == ALL_SLOTS: every active slot. */
#define ALL_SLOTS (UINT32_MAX - 1u)
static void apply_state(ks__ar_renderer *r, uint32_t state, uint32_t slot, int64_t now_us) {
    const ks_effect_state *s = ks_effect_state_at(r->effect, state);
    if (!s) return;
    for (uint32_t a = 0; a < s->num_actions; a++) {
        const ks_effect_action *act = &s->actions[a];
        if (act->layer >= r->num_layers) continue;
        ks__ar_layer *l = &r->layers[act->layer];
        for (uint32_t k = 0; k < KS__AR_MAX_SLOTS; k++) {
            bool target;
            if (!l->vt->per_face)
                target = k == FRAME_WIDE_SLOT;
            else if (slot == ALL_SLOTS)
                target = r->slots[k].active;
            else
                target = k == slot;
            if (!target) continue;
            ks__ar_inst *inst = &l->inst[k];
            switch (act->kind) {
            case KS_EFFECT_ACTION_SHOW_LAYER:
                /* a layer that appears starts its sprite from frame 0 */
                if (!inst->visible) inst->anim_start_us = now_us;
                inst->visible = true;
                break;
            case KS_EFFECT_ACTION_HIDE_LAYER:
                inst->visible = false;
                break;
            case KS_EFFECT_ACTION_START_ANIMATION:
                inst->anim_start_us = now_us;
                break;
            default:
                break;
            }
        }
    }
}

static void fire(ks__ar_renderer *r, ks_effect_event event, uint32_t slot, int64_t now_us) {
    uint32_t n = ks_effect_num_triggers(r->effect);
    for (uint32_t t = 0; t < n; t++) {
        const ks_effect_trigger *tr = ks_effect_trigger_at(r->effect, t);
        if (tr->event != event) continue;
        apply_state(r, tr->state, slot, now_us);
        r->stats.num_triggers_fired++;
    }
}

static void fire_crossings(ks__ar_renderer *r, uint32_t slot, const float scores[],
                           int64_t now_us) {
    uint32_t n = ks_effect_num_triggers(r->effect);
    for (uint32_t t = 0; t < n; t++) {
        const ks_effect_trigger *tr = ks_effect_trigger_at(r->effect, t);
        if (tr->event < KS_EFFECT_EVENT_MOUTH_OPEN || tr->event >= KS_EFFECT_EVENT_COUNT) continue;
        float prev = r->slots[slot].prev_scores[tr->event], cur = scores[tr->event];
        if (prev < tr->threshold && cur >= tr->threshold) {
            apply_state(r, tr->state, slot, now_us);
            r->stats.num_triggers_fired++;
        }
    }
}

/* A face slot starts from the manifest: visible flags, animations from now, initial_state. */
static void init_slot_layers(ks__ar_renderer *r, uint32_t slot, bool per_face, int64_t now_us) {
    for (uint32_t i = 0; i < r->num_layers; i++) {
        ks__ar_layer *l = &r->layers[i];
        if (l->vt->per_face != per_face) continue;
        ks__ar_inst *inst = &l->inst[slot];
        memset(inst, 0, sizeof(*inst));
        inst->visible = l->desc->visible;
        inst->anim_start_us = now_us;
    }
    uint32_t init = ks_effect_initial_state(r->effect);
    if (init == UINT32_MAX) return;
    const ks_effect_state *s = ks_effect_state_at(r->effect, init);
    if (!s) return;
    for (uint32_t a = 0; a < s->num_actions; a++) {
        const ks_effect_action *act = &s->actions[a];
        if (act->layer >= r->num_layers || r->layers[act->layer].vt->per_face != per_face) continue;
        ks__ar_inst *inst = &r->layers[act->layer].inst[slot];
        if (act->kind == KS_EFFECT_ACTION_SHOW_LAYER) inst->visible = true;
        if (act->kind == KS_EFFECT_ACTION_HIDE_LAYER) inst->visible = false;
        if (act->kind == KS_EFFECT_ACTION_START_ANIMATION) inst->anim_start_us = now_us;
    }
}

static void reset_state(ks__ar_renderer *r) {
    memset(r->slots, 0, sizeof(r->slots));
    for (uint32_t i = 0; i < r->num_layers; i++)
        memset(r->layers[i].inst, 0, sizeof(r->layers[i].inst));
    r->started = false;
    r->start_us = 0;
    r->num_frame_faces = 0;
    r->ctx.num_faces = 0;
    /* frame-wide layers exist from load on, so ks_ar_enter_state works before the first frame */
    init_slot_layers(r, FRAME_WIDE_SLOT, false, 0);
}

ks_status ks_ar_enter_state(ks_ar_renderer *r, const char *state) {
    if (!r) return KS_STATUS_INVALID_ARGUMENT;
    uint32_t n = ks_effect_num_states(r->effect);
    for (uint32_t i = 0; state && i < n; i++) {
        if (strcmp(ks_effect_state_at(r->effect, i)->name, state) == 0) {
            apply_state(r, i, ALL_SLOTS, r->ctx.timestamp_us);
            return KS_STATUS_OK;
        }
    }
    return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT, "ks_ar_enter_state: no state named '%s'",
                        state ? state : "(null)");
}

void ks_ar_reset(ks_ar_renderer *r) {
    if (r) reset_state(r);
}

/* ---- per frame ----------------------------------------------------------------------------- */

static ks_status check_frame(ks__ar_renderer *r, const ks_ar_frame *f, const ks_ar_output *o) {
    if (f->width_px <= 0 || f->height_px <= 0 || f->width_px > 4096 || f->height_px > 4096)
        return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT,
                            "ks_ar_render: frame is %dx%d, expected 1..4096 per side",
                            (int)f->width_px, (int)f->height_px);
    if (f->num_faces > 0 && !f->faces)
        return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT, "ks_ar_render: %u faces but NULL",
                            f->num_faces);
    uint32_t n = f->num_faces < r->max_faces ? f->num_faces : r->max_faces;
    for (uint32_t i = 0; i < n; i++) {
        const ks_ar_face *fc = &f->faces[i];
        if ((fc->num_landmarks != 468 && fc->num_landmarks != 478) || !fc->landmarks_xyz)
            return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT,
                                "ks_ar_render: faces[%u] has %u landmarks (pointer %s), "
                                "expected 468 or 478",
                                i, fc->num_landmarks, fc->landmarks_xyz ? "set" : "NULL");
        for (uint32_t k = 0; k < 3 * fc->num_landmarks; k++)
            if (!isfinite(fc->landmarks_xyz[k]) || fabsf(fc->landmarks_xyz[k]) > 1e6f)
                return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT,
                                    "ks_ar_render: faces[%u] landmark %u is not finite/sane (%g)",
                                    i, k / 3, (double)fc->landmarks_xyz[k]);
        for (uint32_t j = 0; j < i; j++)
            if (fc->id >= 0 && f->faces[j].id == fc->id)
                return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT,
                                    "ks_ar_render: faces[%u] and faces[%u] share id %d", j, i,
                                    (int)fc->id);
    }
    if (!r->backend) return KS_STATUS_OK; /* the null backend reads no pixels */
    if (!f->texture && !f->pixels)
        return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT,
                            "ks_ar_render: the frame has neither a texture nor pixels");
    if (!f->texture && f->stride_bytes &&
        (f->stride_bytes % 4 != 0 || f->stride_bytes < (size_t)f->width_px * 4))
        return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT,
                            "ks_ar_render: pixel stride %zu is not a multiple of 4 >= %d",
                            f->stride_bytes, (int)f->width_px * 4);
    const ks_ar_mask *m = &f->mask;
    if (!m->texture && m->pixels &&
        (m->width_px <= 0 || m->height_px <= 0 || m->width_px > 4096 || m->height_px > 4096 ||
         (m->stride_bytes && m->stride_bytes < (size_t)m->width_px)))
        return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT, "ks_ar_render: mask is %dx%d stride %zu",
                            (int)m->width_px, (int)m->height_px, m->stride_bytes);
    if (!o || (!o->texture && !o->to_framebuffer && !o->pixels))
        return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT,
                            "ks_ar_render: output has no texture, framebuffer or pixels");
    if (o->pixels && o->stride_bytes &&
        (o->stride_bytes % 4 != 0 || o->stride_bytes < (size_t)f->width_px * 4))
        return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT,
                            "ks_ar_render: output stride %zu is not a multiple of 4 >= %d",
                            o->stride_bytes, (int)f->width_px * 4);
    return KS_STATUS_OK;
}

static void expression_scores(const ks_ar_expressions *e, float scores[KS_EFFECT_EVENT_COUNT]) {
    for (int i = 0; i < KS_EFFECT_EVENT_COUNT; i++)
        scores[i] = 0.0f;
    scores[KS_EFFECT_EVENT_MOUTH_OPEN] = e->mouth_open;
    /* both eyes closed: a wink is not a blink */
    scores[KS_EFFECT_EVENT_BLINK] =
        e->left_eye_blink < e->right_eye_blink ? e->left_eye_blink : e->right_eye_blink;
    scores[KS_EFFECT_EVENT_BROW_RAISE] = e->brow_raise;
    scores[KS_EFFECT_EVENT_SMILE] = e->smile;
}

static void fill_face_ctx(const ks__ar_renderer *r, const ks_ar_frame *frame, uint32_t index,
                          uint32_t slot, ks__ar_face_ctx *fc) {
    const ks_ar_face *f = &frame->faces[index];
    const float *lm = f->landmarks_xyz;
    memset(fc, 0, sizeof(*fc));
    fc->slot = slot;
    fc->frame_index = index;
    fc->id = f->id;
    fc->num_landmarks = f->num_landmarks;
    fc->landmarks = lm;
    /* face oval extremes: 234 (subject's right cheek), 454 (left), 10 (forehead), 152 (chin) */
    const float *a = lm + 3 * 234, *b = lm + 3 * 454, *t = lm + 3 * 10, *c = lm + 3 * 152;
    fc->center_px[0] = 0.25f * (a[0] + b[0] + t[0] + c[0]);
    fc->center_px[1] = 0.25f * (a[1] + b[1] + t[1] + c[1]);
    float dx = b[0] - a[0], dy = b[1] - a[1];
    float w = sqrtf(dx * dx + dy * dy);
    fc->face_width_px = w;
    if (w > 1e-3f) {
        fc->axis_x[0] = dx / w;
        fc->axis_x[1] = dy / w;
    } else {
        fc->axis_x[0] = 1.0f;
    }
    fc->axis_y[0] = -fc->axis_x[1];
    fc->axis_y[1] = fc->axis_x[0];
    fc->roll_rad = atan2f(-fc->axis_x[1], fc->axis_x[0]);
    fc->has_pose = f->has_pose != 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            fc->pose[j * 4 + i] = f->pose_matrix[i * 4 + j];
            fc->projection[j * 4 + i] = f->projection_matrix[i * 4 + j];
        }
    bool zero = true;
    for (int i = 0; i < 16; i++)
        zero = zero && f->projection_matrix[i] == 0.0f;
    if (zero) {
        /* the face landmarker's camera: 63 degree vertical fov, near 1, far 10000 */
        const float near_plane = 1.0f, far_plane = 10000.0f;
        float fy = 1.0f / tanf(0.5f * 63.0f * 3.14159265358979f / 180.0f);
        float aspect = (float)frame->width_px / (float)frame->height_px;
        memset(fc->projection, 0, sizeof(fc->projection));
        fc->projection[0] = fy / aspect;
        fc->projection[5] = fy;
        fc->projection[10] = (far_plane + near_plane) / (near_plane - far_plane);
        fc->projection[11] = -1.0f;
        fc->projection[14] = 2.0f * far_plane * near_plane / (near_plane - far_plane);
    }
    fc->expressions = f->expressions;
    (void)r;
}

/* Matches this frame's faces to slots; frees the slots of lost faces (firing face_lost), takes
 * slots for new ones (initialising their layers, firing face_found), then fires expression
 * crossings. Fills ctx->faces in the app's order. */
static void track_faces(ks__ar_renderer *r, const ks_ar_frame *frame) {
    int64_t now = frame->timestamp_us;
    uint32_t n = frame->num_faces < r->max_faces ? frame->num_faces : r->max_faces;
    uint32_t slot_of[KS__AR_MAX_SLOTS];
    bool slot_taken[KS__AR_MAX_SLOTS] = {false};
    for (uint32_t i = 0; i < n; i++) {
        slot_of[i] = UINT32_MAX;
        const ks_ar_face *f = &frame->faces[i];
        for (uint32_t s = 0; s < KS__AR_MAX_SLOTS; s++) {
            const ks__ar_slot *sl = &r->slots[s];
            if (!sl->active || slot_taken[s]) continue;
            bool match = f->id >= 0
                             ? sl->id == f->id
                             : (sl->id < 0 && i < r->num_frame_faces && r->frame_faces[i] == s);
            if (match) {
                slot_of[i] = s;
                slot_taken[s] = true;
                break;
            }
        }
    }
    /* lost first: everything anchored to a lost face is gone before this frame is laid out */
    for (uint32_t s = 0; s < KS__AR_MAX_SLOTS; s++) {
        if (!r->slots[s].active || slot_taken[s]) continue;
        memset(&r->slots[s], 0, sizeof(r->slots[s]));
        for (uint32_t l = 0; l < r->num_layers; l++)
            if (r->layers[l].vt->per_face) memset(&r->layers[l].inst[s], 0, sizeof(ks__ar_inst));
        fire(r, KS_EFFECT_EVENT_FACE_LOST, UINT32_MAX, now);
    }
    for (uint32_t i = 0; i < n; i++) {
        if (slot_of[i] != UINT32_MAX) continue;
        uint32_t s = 0;
        while (s < KS__AR_MAX_SLOTS && (r->slots[s].active || slot_taken[s]))
            s++;
        if (s == KS__AR_MAX_SLOTS) continue; /* cannot happen: n <= max_faces <= slots */
        slot_of[i] = s;
        slot_taken[s] = true;
        r->slots[s].active = true;
        r->slots[s].id = frame->faces[i].id;
        memset(r->slots[s].prev_scores, 0, sizeof(r->slots[s].prev_scores));
        init_slot_layers(r, s, true, now);
        fire(r, KS_EFFECT_EVENT_FACE_FOUND, s, now);
    }
    for (uint32_t i = 0; i < n; i++) {
        float scores[KS_EFFECT_EVENT_COUNT];
        expression_scores(&frame->faces[i].expressions, scores);
        fire_crossings(r, slot_of[i], scores, now);
        memcpy(r->slots[slot_of[i]].prev_scores, scores, sizeof(scores));
        fill_face_ctx(r, frame, i, slot_of[i], &r->ctx.faces[i]);
        r->frame_faces[i] = slot_of[i];
    }
    r->num_frame_faces = n;
    r->ctx.num_faces = n;
}

static void resolve_params(ks__ar_renderer *r) {
    for (uint32_t i = 0; i < r->num_layers; i++) {
        ks__ar_layer *l = &r->layers[i];
        memcpy(l->color, l->desc->color, sizeof(l->color));
        if (l->desc->kind != KS_EFFECT_LAYER_MAKEUP)
            l->color[0] = l->color[1] = l->color[2] = l->color[3] = 1.0f; /* u_color: white */
        l->intensity = l->desc->intensity;
        l->opacity = l->desc->opacity;
        if (l->color_param < r->num_params)
            memcpy(l->color, r->params[l->color_param].color, sizeof(l->color));
        if (l->intensity_param < r->num_params) {
            /* a float parameter may have a wider range than the [0, 1] intensity */
            float v = r->params[l->intensity_param].value;
            l->intensity = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
        }
    }
}

ks_status ks_ar_render(ks_ar_renderer *r, const ks_ar_frame *frame, const ks_ar_output *output) {
    if (!r) return KS_STATUS_INVALID_ARGUMENT;
    if (!frame) return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT, "ks_ar_render: NULL frame");
    ks_status st = check_frame(r, frame, output);
    if (st) return st;
    double t0 = now_ms();
    memset(&r->stats, 0, sizeof(r->stats));
    if (!r->started) {
        r->started = true;
        r->start_us = frame->timestamp_us;
        for (uint32_t i = 0; i < r->num_layers; i++)
            if (!r->layers[i].vt->per_face)
                r->layers[i].inst[FRAME_WIDE_SLOT].anim_start_us = frame->timestamp_us;
    }
    ks__ar_ctx *ctx = &r->ctx;
    ctx->width_px = frame->width_px;
    ctx->height_px = frame->height_px;
    ctx->timestamp_us = frame->timestamp_us;
    ctx->time_s = (double)(frame->timestamp_us - r->start_us) / 1e6;
    if (ctx->time_s < 0) ctx->time_s = 0;
    ctx->has_mask = frame->mask.texture != 0 || frame->mask.pixels != NULL;
    track_faces(r, frame);
    resolve_params(r);

    /* visibility -> drawn, then the kinds' layout (which may veto) */
    for (uint32_t i = 0; i < r->num_layers; i++) {
        ks__ar_layer *l = &r->layers[i];
        for (uint32_t s = 0; s < KS__AR_MAX_SLOTS; s++)
            l->inst[s].drawn = false;
        if (l->vt->per_face) {
            for (uint32_t f = 0; f < ctx->num_faces; f++) {
                ks__ar_inst *inst = &l->inst[ctx->faces[f].slot];
                inst->drawn = inst->visible && ctx->faces[f].face_width_px > 1e-3f;
            }
        } else {
            l->inst[FRAME_WIDE_SLOT].drawn = l->inst[FRAME_WIDE_SLOT].visible;
        }
        for (uint32_t s = 0; s < KS__AR_MAX_SLOTS; s++)
            if (l->inst[s].drawn)
                l->inst[s].sprite_frame =
                    ks__ar_sprite_frame(l->desc, &l->inst[s], frame->timestamp_us);
        l->vt->layout(r, l, ctx);
    }
    r->stats.num_faces = ctx->num_faces;
    for (uint32_t i = 0; i < r->num_layers; i++)
        for (uint32_t s = 0; s < KS__AR_MAX_SLOTS; s++)
            r->stats.num_layers_drawn += r->layers[i].inst[s].drawn;
    if (r->backend) {
        st = r->backend->render(r, frame, output);
        if (st) return st;
    }
    r->stats.cpu_ms = now_ms() - t0;
    return KS_STATUS_OK;
}

ks_status ks_ar_get_layer_instance(const ks_ar_renderer *r, uint32_t layer_index,
                                   uint32_t face_index, ks_ar_layer_instance *out) {
    if (!r || !out || layer_index >= r->num_layers) return KS_STATUS_INVALID_ARGUMENT;
    const ks__ar_layer *l = &r->layers[layer_index];
    uint32_t slot = FRAME_WIDE_SLOT;
    int32_t id = -1;
    if (l->vt->per_face) {
        if (face_index >= r->ctx.num_faces) {
            /* a face index past the last frame's faces: nothing is drawn for it */
            memset(out, 0, sizeof(*out));
            out->face_id = -1;
            return face_index < KS_AR_MAX_FACES ? KS_STATUS_OK : KS_STATUS_INVALID_ARGUMENT;
        }
        slot = r->ctx.faces[face_index].slot;
        id = r->ctx.faces[face_index].id;
    } else if (face_index != 0) {
        return KS_STATUS_INVALID_ARGUMENT;
    }
    const ks__ar_inst *inst = &l->inst[slot];
    memset(out, 0, sizeof(*out));
    out->drawn = inst->drawn;
    out->face_id = id;
    out->sprite_frame = inst->sprite_frame;
    memcpy(out->center_px, inst->center_px, sizeof(out->center_px));
    memcpy(out->size_px, inst->size_px, sizeof(out->size_px));
    out->angle_rad = inst->angle_rad;
    return KS_STATUS_OK;
}

ks_status ks_ar_get_stats(const ks_ar_renderer *r, ks_ar_stats *out) {
    if (!r || !out) return KS_STATUS_INVALID_ARGUMENT;
    *out = r->stats;
    return KS_STATUS_OK;
}
