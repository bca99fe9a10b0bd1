/* Makeup layer: lipstick, eyeshadow, eyeliner, blush, eyebrows and foundation, tinted with the
 * layer's colour, intensity and blend mode over feathered regions of the face mesh.
 *
 * This file: the region mesh (face_regions.h) of every drawn face, computed at layout into one
 * packed vertex array (x_px, y_px, coverage); gles3/makeup.c draws it (the passes are described
 * there). Memory: the region mesh and the per-face CPU vertex array are made at create; layout
 * never allocates. */
#include "layer_makeup.h"

static void makeup_destroy(ks__ar_renderer *r, ks__ar_layer *layer) {
    ks__ar_makeup *m = layer->impl;
    if (!m) return;
    ks__face_region_mesh_destroy(&r->alloc, m->mesh);
    ks__ar_free(r, m->xya);
    ks__ar_free(r, m);
    layer->impl = NULL;
}

static ks_status makeup_create(ks__ar_renderer *r, ks__ar_layer *layer) {
    const ks_effect_layer *d = layer->desc;
    ks_status st;
    ks__ar_makeup *m = ks__ar_alloc(r, sizeof(*m));
    if (!m) return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "layer '%s': out of memory", d->name);
    layer->impl = m;
    if ((int)d->region < 0 || d->region >= KS_EFFECT_MAKEUP_REGION_COUNT)
        return ks__ar_error(r, KS_STATUS_INVALID_MODEL, "layer '%s': makeup region %d unknown",
                            d->name, (int)d->region);
    st = ks__face_region_mesh_create(&r->alloc, d->region, &m->mesh);
    if (st)
        return ks__ar_error(r, st, "layer '%s': region '%s': %s", d->name,
                            ks_effect_makeup_region_string(d->region), ks_status_string(st));
    m->max_faces = r->max_faces ? r->max_faces : 1u;
    if (m->max_faces > KS__AR_MAX_SLOTS) m->max_faces = KS__AR_MAX_SLOTS;
    /* indices are uint16: every face's vertices must stay addressable */
    if ((size_t)m->max_faces * m->mesh->num_vertices > 65535u)
        return ks__ar_error(r, KS_STATUS_INTERNAL, "layer '%s': region too large", d->name);
    m->xya = ks__ar_alloc(r, (size_t)m->max_faces * m->mesh->num_vertices * 3 * sizeof(float));
    if (!m->xya)
        return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "layer '%s': out of memory", d->name);
    m->use_mask = d->texture && d->texture[0];
    return KS_STATUS_OK;
}

static void makeup_layout(ks__ar_renderer *r, ks__ar_layer *layer, const ks__ar_ctx *ctx) {
    (void)r;
    ks__ar_makeup *m = layer->impl;
    m->num_drawn = 0;
    const uint32_t nv = m->mesh->num_vertices;
    /* Nothing to tint: skip the passes (the layer stays "drawn" for the app's bookkeeping). */
    bool invisible = ks__ar_clamp01(layer->intensity) * layer->opacity * layer->color[3] <= 0.0f &&
                     !layer->custom_program;
    for (uint32_t i = 0; i < ctx->num_faces; i++) {
        const ks__ar_face_ctx *f = &ctx->faces[i];
        ks__ar_inst *inst = &layer->inst[f->slot];
        if (!inst->drawn) continue;
        inst->center_px[0] = f->center_px[0];
        inst->center_px[1] = f->center_px[1];
        inst->size_px[0] = inst->size_px[1] = f->face_width_px;
        inst->angle_rad = f->roll_rad;
        if (m->num_drawn >= m->max_faces ||
            !ks__face_region_mesh_compute(m->mesh, f->landmarks, f->num_landmarks, f->face_width_px,
                                          &m->xya[(size_t)m->num_drawn * nv * 3])) {
            inst->drawn = false;
            continue;
        }
        if (!invisible) m->drawn_slot[m->num_drawn++] = f->slot;
    }
}

const ks__ar_layer_vtable ks__ar_layer_makeup = {
    .kind = KS_EFFECT_LAYER_MAKEUP,
    .per_face = true,
    .create = makeup_create,
    .layout = makeup_layout,
    .destroy = makeup_destroy,
};
