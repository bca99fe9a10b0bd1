/* Layer kind "face_texture": an image in the canonical face UV layout (docs/effects-format.md
 * section 5) drawn on the face mesh: every canonical vertex i goes to face landmark i, so the
 * paint deforms with the face. The eye and mouth holes are not in the mesh and stay untouched.
 * This file: validation and the reported geometry; gles3/face_texture.c draws the mesh. */
#include "ar_internal.h"

static ks_status face_texture_create(ks__ar_renderer *r, ks__ar_layer *layer) {
    const ks_effect_layer *d = layer->desc;
    if (!ks_effect_find_asset(r->effect, d->texture))
        return ks__ar_error(r, KS_STATUS_INVALID_MODEL, "layer '%s': texture '%s' missing", d->name,
                            d->texture ? d->texture : "");
    return KS_STATUS_OK;
}

static void face_texture_layout(ks__ar_renderer *r, ks__ar_layer *layer, const ks__ar_ctx *ctx) {
    (void)r;
    for (uint32_t f = 0; f < ctx->num_faces; f++) {
        const ks__ar_face_ctx *face = &ctx->faces[f];
        ks__ar_inst *inst = &layer->inst[face->slot];
        if (!inst->drawn) continue;
        inst->center_px[0] = face->center_px[0];
        inst->center_px[1] = face->center_px[1];
        inst->size_px[0] = inst->size_px[1] = face->face_width_px;
        inst->angle_rad = face->roll_rad;
    }
}

const ks__ar_layer_vtable ks__ar_layer_face_texture = {
    .kind = KS_EFFECT_LAYER_FACE_TEXTURE,
    .per_face = true,
    .create = face_texture_create,
    .layout = face_texture_layout,
};
