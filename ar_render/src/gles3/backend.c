/* The OpenGL ES 3 backend of the AR renderer (ks__ar_gles3_backend): the table the core calls,
 * the GL halves of the layer kinds, and the frame loop around their draws. */
#include "gles3.h"

static const ks__ar_layer_gl_vtable *const k_gl_kinds[KS_EFFECT_LAYER_KIND_COUNT] = {
    [KS_EFFECT_LAYER_STICKER] = &ks__ar_gl_layer_sticker,
    [KS_EFFECT_LAYER_FACE_TEXTURE] = &ks__ar_gl_layer_face_texture,
    [KS_EFFECT_LAYER_MAKEUP] = &ks__ar_gl_layer_makeup,
    [KS_EFFECT_LAYER_BEAUTY] = &ks__ar_gl_layer_beauty,
    [KS_EFFECT_LAYER_LUT] = &ks__ar_gl_layer_lut,
    [KS_EFFECT_LAYER_BACKGROUND] = &ks__ar_gl_layer_background,
    [KS_EFFECT_LAYER_MESH3D] = &ks__ar_gl_layer_mesh3d,
};

const ks__ar_layer_gl_vtable *ks__ar_gl_kind(const ks__ar_layer *layer) {
    unsigned kind = (unsigned)layer->desc->kind;
    return kind < KS_EFFECT_LAYER_KIND_COUNT ? k_gl_kinds[kind] : NULL;
}

static ks_status layer_create(ks__ar_renderer *r, ks__ar_layer *layer) {
    const ks__ar_layer_gl_vtable *gl = ks__ar_gl_kind(layer);
    if (!gl)
        return ks__ar_error(r, KS_STATUS_UNSUPPORTED,
                            "layer '%s': the GLES 3 backend cannot draw %s", layer->desc->name,
                            ks_effect_layer_kind_string(layer->desc->kind));
    ks_status st = gl->create(r, layer);
    if (!st) st = ks__ar_gl_check(r, layer, "create");
    return st;
}

static void layer_destroy(ks__ar_renderer *r, ks__ar_layer *layer) {
    const ks__ar_layer_gl_vtable *gl = ks__ar_gl_kind(layer);
    if (gl && gl->destroy) gl->destroy(r, layer);
    /* the kinds compile it; deleted here so every kind gets this right */
    if (layer->custom_program) glDeleteProgram(layer->custom_program);
    layer->custom_program = 0;
}

static ks_status render(ks__ar_renderer *r, const ks_ar_frame *frame, const ks_ar_output *output) {
    ks_status st = ks__ar_gl_begin_frame(r, frame);
    if (st) return st;
    for (uint32_t i = 0; i < r->num_layers; i++) {
        ks__ar_layer *l = &r->layers[i];
        bool drawn = false;
        for (uint32_t s = 0; s < KS__AR_MAX_SLOTS; s++)
            drawn = drawn || l->inst[s].drawn;
        if (!drawn) continue;
        st = ks__ar_gl_kind(l)->draw(r, l, &r->ctx);
        if (st) return st;
    }
    return ks__ar_gl_end_frame(r, output);
}

static const ks__ar_backend k_gles3 = {
    .name = "gles3",
    .init = ks__ar_gl_init,
    .release = ks__ar_gl_release,
    .layer_create = layer_create,
    .layer_destroy = layer_destroy,
    .resize = ks__ar_gl_resize,
    .render = render,
    .texture_from_name = ks__ar_texture_from_name,
    .texture_from_rgba = ks__ar_texture_from_rgba,
    .texture_destroy = ks__ar_texture_destroy,
};

const ks__ar_backend *ks__ar_gles3_backend(void) {
    return &k_gles3;
}
