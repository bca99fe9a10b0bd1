/* The lut layer's GL half. Trilinear: the GPU's bilinear filter inside a tile (red/green,
 * sampled at texel centres) and a mix between the two nearest blue tiles. `intensity` x
 * `opacity` mixes the graded colour with the input. */
#include <string.h>

#include "gles3.h"

#define LUT_UNIT 4

typedef struct lut_gl {
    ks__ar_texture lut;
    GLuint program;
    GLint u_amount, u_blend;
} lut_gl;

static const char k_fs[] = "in vec2 v_uv;\n"
                           "uniform sampler2D u_backdrop;\n"
                           "uniform sampler2D u_lut;\n"
                           "uniform float u_amount;\n"
                           "uniform int u_blend;\n"
                           "out vec4 frag_color;\n"
                           "vec3 lut_slice(float b, vec2 rg) {\n"
                           "    vec2 tile = vec2(mod(b, 8.0), floor(b / 8.0));\n"
                           "    vec2 px = tile * 64.0 + 0.5 + rg * 63.0;\n"
                           "    return texture(u_lut, px / 512.0).rgb;\n"
                           "}\n"
                           "void main() {\n"
                           "    vec4 c = texture(u_backdrop, v_uv);\n"
                           "    vec3 x = clamp(c.rgb, 0.0, 1.0);\n"
                           "    float b = x.b * 63.0;\n"
                           "    float b0 = floor(b);\n"
                           "    float b1 = min(b0 + 1.0, 63.0);\n"
                           "    vec3 g = mix(lut_slice(b0, x.rg), lut_slice(b1, x.rg), b - b0);\n"
                           "    frag_color = ks_composite(c, vec4(g, 1.0), u_blend, u_amount);\n"
                           "}\n";

static ks_status lut_gl_create(ks__ar_renderer *r, ks__ar_layer *layer) {
    const ks_effect_layer *d = layer->desc;
    lut_gl *s = ks__ar_alloc(r, sizeof(*s));
    if (!s) return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "layer '%s': out of memory", d->name);
    layer->gl_impl = s;
    ks_status st = ks__ar_texture_from_name(r, layer, d->lut, &s->lut);
    if (st) return st;
    const char *vs[2] = {ks__ar_glsl_prologue, ks__ar_fullscreen_vs};
    const char *fs[3] = {ks__ar_glsl_prologue, ks__ar_glsl_blend, k_fs};
    st = ks__ar_program_create(r, "lut program", vs, 2, fs, 3, false, &s->program);
    if (st) return st;
    s->u_amount = glGetUniformLocation(s->program, "u_amount");
    s->u_blend = glGetUniformLocation(s->program, "u_blend");
    glUseProgram(s->program);
    glUniform1i(glGetUniformLocation(s->program, "u_backdrop"), 2);
    glUniform1i(glGetUniformLocation(s->program, "u_lut"), LUT_UNIT);
    glUseProgram(0);
    return ks__ar_custom_program_create(r, layer, ks__ar_fullscreen_vs);
}

static ks_status lut_gl_draw(ks__ar_renderer *r, ks__ar_layer *layer, ks__ar_ctx *ctx) {
    lut_gl *s = layer->gl_impl;
    bool custom = layer->custom_program != 0;
    ks__ar_pass_kind kind = custom ? KS__AR_PASS_SCRATCH : KS__AR_PASS_REPLACE;
    ks_status st = ks__ar_pass_begin(r, ctx, kind);
    if (st) return st;
    glActiveTexture(GL_TEXTURE0 + (custom ? 0 : LUT_UNIT));
    glBindTexture(GL_TEXTURE_2D, s->lut.id);
    glActiveTexture(GL_TEXTURE0);
    if (custom) {
        glUseProgram(layer->custom_program);
        ks__ar_set_standard_uniforms(r, layer, ctx, layer->custom_program);
    } else {
        glUseProgram(s->program);
        glUniform1f(s->u_amount, layer->intensity * layer->opacity);
        glUniform1i(s->u_blend, (GLint)layer->desc->blend);
    }
    ks__ar_draw_fullscreen(r);
    return ks__ar_pass_end(r, ctx, kind, layer->desc->blend, 1.0f);
}

static void lut_gl_destroy(ks__ar_renderer *r, ks__ar_layer *layer) {
    lut_gl *s = layer->gl_impl;
    if (!s) return;
    ks__ar_texture_destroy(r, &s->lut);
    if (s->program) glDeleteProgram(s->program);
    ks__ar_free(r, s);
    layer->gl_impl = NULL;
}

const ks__ar_layer_gl_vtable ks__ar_gl_layer_lut = {
    .create = lut_gl_create,
    .draw = lut_gl_draw,
    .destroy = lut_gl_destroy,
};
