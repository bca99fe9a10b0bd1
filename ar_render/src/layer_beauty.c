/* Beauty layer: skin smoothing, whitening, face slimming and eye enlarging. Each amount is in
 * [0, 1] and scaled by the layer's intensity.
 *
 * This file: the amounts of this frame, the skin region (the foundation region of
 * face_regions.h) and the warp grid (face_regions.h) of every drawn face, packed into arrays
 * made at create; gles3/beauty.c runs the passes (described there). Layout never allocates. */
#include <math.h>

#include "layer_beauty.h"

static void beauty_destroy(ks__ar_renderer *r, ks__ar_layer *layer) {
    ks__ar_beauty *b = layer->impl;
    if (!b) return;
    ks__face_region_mesh_destroy(&r->alloc, b->skin);
    ks__ar_free(r, b->skin_xya);
    ks__ar_free(r, b->grid);
    ks__ar_free(r, b);
    layer->impl = NULL;
}

static ks_status beauty_create(ks__ar_renderer *r, ks__ar_layer *layer) {
    const ks_effect_layer *d = layer->desc;
    ks__ar_beauty *b = ks__ar_alloc(r, sizeof(*b));
    if (!b) return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "layer '%s': out of memory", d->name);
    layer->impl = b;
    b->max_faces = r->max_faces ? r->max_faces : 1u;
    if (b->max_faces > KS__AR_MAX_SLOTS) b->max_faces = KS__AR_MAX_SLOTS;
    ks_status st = ks__face_region_mesh_create(&r->alloc, KS_EFFECT_MAKEUP_FOUNDATION, &b->skin);
    if (st)
        return ks__ar_error(r, st, "layer '%s': skin region: %s", d->name, ks_status_string(st));
    if ((size_t)b->max_faces * b->skin->num_vertices > 65535u ||
        (size_t)b->max_faces * KS__FACE_WARP_NUM_VERTICES > 65535u)
        return ks__ar_error(r, KS_STATUS_INTERNAL, "layer '%s': geometry too large", d->name);
    b->skin_xya = ks__ar_alloc(r, (size_t)b->max_faces * b->skin->num_vertices * 3 * sizeof(float));
    b->grid =
        ks__ar_alloc(r, (size_t)b->max_faces * KS__FACE_WARP_NUM_VERTICES * 4 * sizeof(float));
    if (!b->skin_xya || !b->grid)
        return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "layer '%s': out of memory", d->name);
    return KS_STATUS_OK;
}

static void beauty_layout(ks__ar_renderer *r, ks__ar_layer *layer, const ks__ar_ctx *ctx) {
    (void)r;
    ks__ar_beauty *b = layer->impl;
    const ks_effect_layer *d = layer->desc;
    float k = ks__ar_clamp01(layer->intensity) * ks__ar_clamp01(layer->opacity);
    b->smoothing = ks__ar_clamp01(d->smoothing) * k;
    b->whitening = ks__ar_clamp01(d->whitening) * k;
    b->face_slim = ks__ar_clamp01(d->face_slim) * k;
    b->eye_enlarge = ks__ar_clamp01(d->eye_enlarge) * k;
    bool tone = b->smoothing > 0.0f || b->whitening > 0.0f;
    bool warp = b->face_slim > 0.0f || b->eye_enlarge > 0.0f;
    const uint32_t snv = b->skin->num_vertices;
    b->num_skin = b->num_warp = 0;
    b->max_face_width_px = 0.0f;
    b->skin_box[0] = b->skin_box[1] = INFINITY;
    b->skin_box[2] = b->skin_box[3] = -INFINITY;
    for (uint32_t i = 0; i < ctx->num_faces; i++) {
        const ks__ar_face_ctx *f = &ctx->faces[i];
        ks__ar_inst *inst = &layer->inst[f->slot];
        if (!inst->drawn) continue;
        inst->center_px[0] = f->center_px[0];
        inst->center_px[1] = f->center_px[1];
        inst->size_px[0] = inst->size_px[1] = f->face_width_px;
        inst->angle_rad = f->roll_rad;
        /* Both computations reject the same inputs (landmark count, non-finite values, face
         * width), so a face is either fully processed or not at all. */
        bool ok =
            b->num_skin < b->max_faces &&
            ks__face_region_mesh_compute(b->skin, f->landmarks, f->num_landmarks, f->face_width_px,
                                         &b->skin_xya[(size_t)b->num_skin * snv * 3]);
        if (ok && warp)
            ok = ks__face_warp_compute(
                f->landmarks, f->num_landmarks, f->face_width_px, b->eye_enlarge, b->face_slim,
                &b->grid[(size_t)b->num_warp * KS__FACE_WARP_NUM_VERTICES * 4]);
        if (!ok) {
            inst->drawn = false;
            continue;
        }
        if (tone) {
            const float *v = &b->skin_xya[(size_t)b->num_skin * snv * 3];
            for (uint32_t j = 0; j < snv; j++) {
                b->skin_box[0] = fminf(b->skin_box[0], v[3 * j]);
                b->skin_box[1] = fminf(b->skin_box[1], v[3 * j + 1]);
                b->skin_box[2] = fmaxf(b->skin_box[2], v[3 * j]);
                b->skin_box[3] = fmaxf(b->skin_box[3], v[3 * j + 1]);
            }
            b->num_skin++;
        }
        if (warp) b->num_warp++;
        if (f->face_width_px > b->max_face_width_px) b->max_face_width_px = f->face_width_px;
    }
}

const ks__ar_layer_vtable ks__ar_layer_beauty = {
    .kind = KS_EFFECT_LAYER_BEAUTY,
    .per_face = true,
    .create = beauty_create,
    .layout = beauty_layout,
    .destroy = beauty_destroy,
};
