/* Layer kind "lut": colour grading through a 64^3 lookup table stored as a 512x512 PNG (8x8 tiles
 * of 64x64; tile index = blue, x = red, y = green; docs/effects-format.md 4.6). This file:
 * validation and layout; gles3/lut.c grades. */
#include "ar_internal.h"

static ks_status lut_create(ks__ar_renderer *r, ks__ar_layer *layer) {
    const ks_effect_layer *d = layer->desc;
    const ks_effect_asset *a = ks_effect_find_asset(r->effect, d->lut);
    if (!a || a->width_px != KS_EFFECT_LUT_PX || a->height_px != KS_EFFECT_LUT_PX)
        return ks__ar_error(r, KS_STATUS_INVALID_MODEL, "layer '%s': lut '%s' is not a %ux%u PNG",
                            d->name, d->lut ? d->lut : "", KS_EFFECT_LUT_PX, KS_EFFECT_LUT_PX);
    return KS_STATUS_OK;
}

static void lut_layout(ks__ar_renderer *r, ks__ar_layer *layer, const ks__ar_ctx *ctx) {
    (void)r;
    ks__ar_inst *inst = &layer->inst[0];
    inst->center_px[0] = 0.5f * (float)ctx->width_px;
    inst->center_px[1] = 0.5f * (float)ctx->height_px;
    inst->size_px[0] = (float)ctx->width_px;
    inst->size_px[1] = (float)ctx->height_px;
    /* intensity 0 or opacity 0 is the identity: skip the pass */
    if (layer->intensity * layer->opacity <= 0.0f) inst->drawn = false;
}

const ks__ar_layer_vtable ks__ar_layer_lut = {
    .kind = KS_EFFECT_LAYER_LUT,
    .per_face = false,
    .create = lut_create,
    .layout = lut_layout,
};
