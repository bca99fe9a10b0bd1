/* The face_texture layer's GL half: the texture on the face mesh of every drawn face. */
#include <string.h>

#include "gles3.h"

typedef struct face_texture_gl {
    ks__ar_texture texture;
    GLuint program;
    GLint u_resolution, u_opacity, u_premultiply;
} face_texture_gl;

static const char k_fs[] =
    "in vec2 v_uv;\n"
    "in vec2 v_screen_uv;\n"
    "uniform sampler2D u_texture;\n"
    "uniform float u_opacity;\n"
    "uniform int u_premultiply;\n"
    "out vec4 frag_color;\n"
    "void main() {\n"
    "    vec4 c = texture(u_texture, v_uv);\n"
    "    frag_color = u_premultiply == 1 ? vec4(c.rgb * c.a, c.a) * u_opacity"
    " : c;\n"
    "}\n";

static ks_status face_texture_gl_create(ks__ar_renderer *r, ks__ar_layer *layer) {
    const ks_effect_layer *d = layer->desc;
    face_texture_gl *s = ks__ar_alloc(r, sizeof(*s));
    if (!s) return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "layer '%s': out of memory", d->name);
    layer->gl_impl = s;
    ks_status st = ks__ar_texture_from_name(r, layer, d->texture, &s->texture);
    if (st) return st;
    const char *vs[2] = {ks__ar_glsl_prologue, ks__ar_face_mesh_vs};
    const char *fs[2] = {ks__ar_glsl_prologue, k_fs};
    st = ks__ar_program_create(r, "face_texture program", vs, 2, fs, 2, false, &s->program);
    if (st) return st;
    s->u_resolution = glGetUniformLocation(s->program, "u_resolution_px");
    s->u_opacity = glGetUniformLocation(s->program, "u_opacity");
    s->u_premultiply = glGetUniformLocation(s->program, "u_premultiply");
    glUseProgram(s->program);
    glUniform1i(glGetUniformLocation(s->program, "u_texture"), 0);
    glUseProgram(0);
    return ks__ar_custom_program_create(r, layer, ks__ar_face_mesh_vs);
}

static ks_status face_texture_gl_draw(ks__ar_renderer *r, ks__ar_layer *layer, ks__ar_ctx *ctx) {
    face_texture_gl *s = layer->gl_impl;
    bool custom = layer->custom_program != 0;
    ks_effect_blend blend = layer->desc->blend;
    ks__ar_pass_kind kind =
        (!custom && blend == KS_EFFECT_BLEND_NORMAL) ? KS__AR_PASS_OVER : KS__AR_PASS_SCRATCH;
    ks_status st = ks__ar_pass_begin(r, ctx, kind);
    if (st) return st;
    GLuint prog = custom ? layer->custom_program : s->program;
    glUseProgram(prog);
    if (custom) {
        ks__ar_set_standard_uniforms(r, layer, ctx, prog);
    } else {
        glUniform2f(s->u_resolution, (float)ctx->width_px, (float)ctx->height_px);
        glUniform1f(s->u_opacity, layer->opacity);
        glUniform1i(s->u_premultiply, kind == KS__AR_PASS_OVER);
    }
    uint32_t tex = ks__ar_layer_param_texture(r, layer);
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, tex ? tex : s->texture.id);
    for (uint32_t f = 0; f < ctx->num_faces; f++) {
        uint32_t slot = ctx->faces[f].slot;
        if (layer->inst[slot].drawn) ks__ar_draw_face_mesh(r, slot);
    }
    return ks__ar_pass_end(r, ctx, kind, blend, custom ? 1.0f : layer->opacity);
}

static void face_texture_gl_destroy(ks__ar_renderer *r, ks__ar_layer *layer) {
    face_texture_gl *s = layer->gl_impl;
    if (!s) return;
    ks__ar_texture_destroy(r, &s->texture);
    if (s->program) glDeleteProgram(s->program);
    ks__ar_free(r, s);
    layer->gl_impl = NULL;
}

const ks__ar_layer_gl_vtable ks__ar_gl_layer_face_texture = {
    .create = face_texture_gl_create,
    .draw = face_texture_gl_draw,
    .destroy = face_texture_gl_destroy,
};
