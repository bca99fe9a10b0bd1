/* The sticker layer's GL half: the sprite frames' textures and one textured quad per face at
 * the corners layer_sticker.c laid out. */
#include <string.h>

#include "gles3.h"
#include "layer_sticker.h"

typedef struct sticker_gl {
    uint32_t num_frames;
    ks__ar_texture *frames;
    GLuint program;
    GLint u_corners, u_resolution, u_opacity, u_premultiply;
    GLint c_corners, c_resolution; /* custom program */
} sticker_gl;

static const char k_vs[] = "uniform vec2 u_corners[4];\n"
                           "uniform vec2 u_resolution_px;\n"
                           "out vec2 v_uv;\n"
                           "out vec2 v_screen_uv;\n"
                           "void main() {\n"
                           "    vec2 p = u_corners[gl_VertexID];\n"
                           "    v_uv = vec2(float(gl_VertexID & 1), float(gl_VertexID >> 1));\n"
                           "    v_screen_uv = p / u_resolution_px;\n"
                           "    gl_Position = vec4(2.0 * v_screen_uv - 1.0, 0.0, 1.0);\n"
                           "}\n";

static const char k_fs[] =
    "in vec2 v_uv;\n"
    "uniform sampler2D u_texture;\n"
    "uniform float u_opacity;\n"
    "uniform int u_premultiply;\n"
    "out vec4 frag_color;\n"
    "void main() {\n"
    "    vec4 c = texture(u_texture, v_uv);\n"
    "    frag_color = u_premultiply == 1 ? vec4(c.rgb * c.a, c.a) * u_opacity"
    " : c;\n"
    "}\n";

static ks_status sticker_gl_create(ks__ar_renderer *r, ks__ar_layer *layer) {
    const ks_effect_layer *d = layer->desc;
    sticker_gl *s = ks__ar_alloc(r, sizeof(*s));
    if (!s) return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "layer '%s': out of memory", d->name);
    layer->gl_impl = s;
    s->frames = ks__ar_alloc(r, d->num_frames * sizeof(*s->frames));
    if (!s->frames)
        return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "layer '%s': out of memory", d->name);
    for (uint32_t i = 0; i < d->num_frames; i++) {
        ks_status st = ks__ar_texture_from_name(r, layer, d->frames[i], &s->frames[i]);
        if (st) return st;
        s->num_frames = i + 1;
    }
    const char *vs[2] = {ks__ar_glsl_prologue, k_vs};
    const char *fs[2] = {ks__ar_glsl_prologue, k_fs};
    ks_status st = ks__ar_program_create(r, "sticker program", vs, 2, fs, 2, false, &s->program);
    if (st) return st;
    s->u_corners = glGetUniformLocation(s->program, "u_corners");
    s->u_resolution = glGetUniformLocation(s->program, "u_resolution_px");
    s->u_opacity = glGetUniformLocation(s->program, "u_opacity");
    s->u_premultiply = glGetUniformLocation(s->program, "u_premultiply");
    glUseProgram(s->program);
    glUniform1i(glGetUniformLocation(s->program, "u_texture"), 0);
    glUseProgram(0);
    st = ks__ar_custom_program_create(r, layer, k_vs);
    if (st) return st;
    if (layer->custom_program) {
        s->c_corners = glGetUniformLocation(layer->custom_program, "u_corners");
        s->c_resolution = glGetUniformLocation(layer->custom_program, "u_resolution_px");
    }
    return KS_STATUS_OK;
}

static ks_status sticker_gl_draw(ks__ar_renderer *r, ks__ar_layer *layer, ks__ar_ctx *ctx) {
    const ks__ar_sticker *cpu = layer->impl;
    sticker_gl *s = layer->gl_impl;
    bool custom = layer->custom_program != 0;
    ks_effect_blend blend = layer->desc->blend;
    ks__ar_pass_kind kind =
        (!custom && blend == KS_EFFECT_BLEND_NORMAL) ? KS__AR_PASS_OVER : KS__AR_PASS_SCRATCH;
    ks_status st = ks__ar_pass_begin(r, ctx, kind);
    if (st) return st;
    GLuint prog = custom ? layer->custom_program : s->program;
    GLint u_corners = custom ? s->c_corners : s->u_corners;
    glUseProgram(prog);
    if (custom) {
        ks__ar_set_standard_uniforms(r, layer, ctx, prog);
        glUniform2f(s->c_resolution, (float)ctx->width_px, (float)ctx->height_px);
    } else {
        glUniform2f(s->u_resolution, (float)ctx->width_px, (float)ctx->height_px);
        glUniform1f(s->u_opacity, layer->opacity);
        glUniform1i(s->u_premultiply, kind == KS__AR_PASS_OVER);
    }
    glBindVertexArray(r->quad_vao);
    glActiveTexture(GL_TEXTURE0);
    for (uint32_t f = 0; f < ctx->num_faces; f++) {
        uint32_t slot = ctx->faces[f].slot;
        const ks__ar_inst *inst = &layer->inst[slot];
        if (!inst->drawn) continue;
        uint32_t frame = inst->sprite_frame < s->num_frames ? inst->sprite_frame : 0;
        glBindTexture(GL_TEXTURE_2D, s->frames[frame].id);
        glUniform2fv(u_corners, 4, cpu->corners[slot]);
        glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
    }
    /* custom shaders apply u_opacity themselves (contract); the default one is composited */
    return ks__ar_pass_end(r, ctx, kind, blend, custom ? 1.0f : layer->opacity);
}

static void sticker_gl_destroy(ks__ar_renderer *r, ks__ar_layer *layer) {
    sticker_gl *s = layer->gl_impl;
    if (!s) return;
    if (s->frames) {
        for (uint32_t i = 0; i < s->num_frames; i++)
            ks__ar_texture_destroy(r, &s->frames[i]);
        ks__ar_free(r, s->frames);
    }
    if (s->program) glDeleteProgram(s->program);
    ks__ar_free(r, s);
    layer->gl_impl = NULL;
}

const ks__ar_layer_gl_vtable ks__ar_gl_layer_sticker = {
    .create = sticker_gl_create,
    .draw = sticker_gl_draw,
    .destroy = sticker_gl_destroy,
};
