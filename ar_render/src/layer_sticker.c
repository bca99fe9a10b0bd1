/* Layer kind "sticker": a sprite (still or animated) anchored to face landmarks. The sprite is
 * centred on the anchor (mean of the anchor landmarks, moved by `offset` face widths along the
 * face's own axes), is `scale` face widths wide (height from the frame aspect) and rotates with
 * the face roll, so it follows scale and rotation in the image plane. This file: validation and
 * layout (the quad's corners); gles3/sticker.c draws them. */
#include <math.h>
#include <string.h>

#include "ar_internal.h"
#include "layer_sticker.h"

static ks_status sticker_create(ks__ar_renderer *r, ks__ar_layer *layer) {
    const ks_effect_layer *d = layer->desc;
    ks__ar_sticker *s = ks__ar_alloc(r, sizeof(*s));
    if (!s) return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "layer '%s': out of memory", d->name);
    layer->impl = s;
    if (d->num_frames == 0 || d->num_anchor_landmarks == 0)
        return ks__ar_error(r, KS_STATUS_INVALID_MODEL, "layer '%s': sticker without %s", d->name,
                            d->num_frames ? "anchor" : "sprite");
    const ks_effect_asset *first = ks_effect_find_asset(r->effect, d->frames[0]);
    if (!first || first->width_px == 0)
        return ks__ar_error(r, KS_STATUS_INVALID_MODEL, "layer '%s': frame '%s' missing", d->name,
                            d->frames[0]);
    s->aspect = (float)first->height_px / (float)first->width_px;
    return KS_STATUS_OK;
}

static void sticker_layout(ks__ar_renderer *r, ks__ar_layer *layer, const ks__ar_ctx *ctx) {
    (void)r;
    ks__ar_sticker *s = layer->impl;
    const ks_effect_layer *d = layer->desc;
    for (uint32_t f = 0; f < ctx->num_faces; f++) {
        const ks__ar_face_ctx *face = &ctx->faces[f];
        ks__ar_inst *inst = &layer->inst[face->slot];
        if (!inst->drawn) continue;
        float fw = face->face_width_px, c[2];
        ks__ar_landmark_mean(face, d->anchor_landmarks, d->num_anchor_landmarks, c);
        c[0] +=
            fw * (d->anchor_offset[0] * face->axis_x[0] + d->anchor_offset[1] * face->axis_y[0]);
        c[1] +=
            fw * (d->anchor_offset[0] * face->axis_x[1] + d->anchor_offset[1] * face->axis_y[1]);
        float w = d->scale * fw, h = w * s->aspect;
        inst->center_px[0] = c[0];
        inst->center_px[1] = c[1];
        inst->size_px[0] = w;
        inst->size_px[1] = h;
        inst->angle_rad = face->roll_rad;
        float hx[2] = {0.5f * w * face->axis_x[0], 0.5f * w * face->axis_x[1]};
        float hy[2] = {0.5f * h * face->axis_y[0], 0.5f * h * face->axis_y[1]};
        float *q = s->corners[face->slot];
        for (int k = 0; k < 4; k++) {
            float sx = (k & 1) ? 1.0f : -1.0f, sy = (k >> 1) ? 1.0f : -1.0f;
            q[2 * k] = c[0] + sx * hx[0] + sy * hy[0];
            q[2 * k + 1] = c[1] + sx * hx[1] + sy * hy[1];
        }
        /* a sprite far outside the frame (or absurdly large) is skipped, not drawn */
        if (!(w > 0.5f && w < 64.0f * (float)(ctx->width_px + ctx->height_px))) inst->drawn = false;
    }
}

static void sticker_destroy(ks__ar_renderer *r, ks__ar_layer *layer) {
    ks__ar_free(r, layer->impl);
    layer->impl = NULL;
}

const ks__ar_layer_vtable ks__ar_layer_sticker = {
    .kind = KS_EFFECT_LAYER_STICKER,
    .per_face = true,
    .create = sticker_create,
    .layout = sticker_layout,
    .destroy = sticker_destroy,
};
