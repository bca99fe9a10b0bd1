/* Layer kind "background": fills the pixels the person mask marks as background, either with an
 * image / sprite sequence (mode "replace"; scaled to cover the frame, aspect kept, centred) or
 * with the image so far blurred (mode "blur"). This file: validation and layout;
 * gles3/background.c draws (soft mask edges, blur). */
#include "ar_internal.h"

static ks_status background_create(ks__ar_renderer *r, ks__ar_layer *layer) {
    const ks_effect_layer *d = layer->desc;
    bool blur = d->background_mode == KS_EFFECT_BACKGROUND_BLUR;
    if (!blur && !d->num_frames && !ks_effect_find_asset(r->effect, d->texture))
        return ks__ar_error(r, KS_STATUS_INVALID_MODEL, "layer '%s': texture '%s' missing", d->name,
                            d->texture ? d->texture : "");
    return KS_STATUS_OK;
}

static void background_layout(ks__ar_renderer *r, ks__ar_layer *layer, const ks__ar_ctx *ctx) {
    (void)r;
    ks__ar_inst *inst = &layer->inst[0];
    inst->center_px[0] = 0.5f * (float)ctx->width_px;
    inst->center_px[1] = 0.5f * (float)ctx->height_px;
    inst->size_px[0] = (float)ctx->width_px;
    inst->size_px[1] = (float)ctx->height_px;
    /* no mask: everything is person, so there is no background to replace */
    if (!ctx->has_mask || layer->opacity <= 0.0f) inst->drawn = false;
}

const ks__ar_layer_vtable ks__ar_layer_background = {
    .kind = KS_EFFECT_LAYER_BACKGROUND,
    .per_face = false,
    .create = background_create,
    .layout = background_layout,
};
