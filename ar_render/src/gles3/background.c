/* The background layer's GL half.
 *
 * Soft edges: a prepass averages the mask over a small disc (about 0.6% of the frame height),
 * applies a smoothstep and writes the result into a quarter-resolution R8 target; the composite
 * samples it with bilinear filtering, so the cut-out gets a feathered border instead of the
 * segmenter's staircase for one texture fetch per full-resolution pixel (10 fetches per pixel at
 * full resolution cost more than the whole rest of the layer on llvmpipe).
 *
 * Blur: separable 13-tap Gaussian at quarter resolution (two more layer-owned targets), with
 * taps weighted by "background-ness" so the person does not bleed into the blurred background
 * as a halo. All targets are made at resize. */
#include <math.h>
#include <string.h>

#include "gles3.h"

#define IMAGE_UNIT 0
#define BLUR_UNIT 4
#define SOFT_UNIT 5
#define DOWNSCALE 4

enum { SOFT = 0, BLUR_A = 1, BLUR_B = 2, NUM_TARGETS = 3 };

typedef struct background_gl {
    uint32_t num_frames;
    ks__ar_texture *frames; /* replace: the texture (1) or the sprite frames */
    GLuint program;
    GLint u_cover, u_opacity, u_blend, u_mode;
    GLuint soft_program;
    GLint s_soft;
    GLuint blur_program;
    GLint b_step;
    GLuint tex[NUM_TARGETS], fbo[NUM_TARGETS];
    int32_t small_w, small_h;
} background_gl;

static const char k_soft_fs[] =
    "in vec2 v_uv;\n"
    "uniform sampler2D u_mask;\n"
    "uniform vec2 u_soft;\n" /* averaging radius in uv */
    "out vec4 frag_color;\n"
    "const vec2 k_ring[8] = vec2[8](vec2(1.0, 0.0), vec2(0.7071, 0.7071), vec2(0.0, 1.0),\n"
    "    vec2(-0.7071, 0.7071), vec2(-1.0, 0.0), vec2(-0.7071, -0.7071), vec2(0.0, -1.0),\n"
    "    vec2(0.7071, -0.7071));\n"
    "void main() {\n"
    "    float p = 2.0 * texture(u_mask, v_uv).r;\n"
    "    for (int i = 0; i < 8; i++) p += texture(u_mask, v_uv + u_soft * k_ring[i]).r;\n"
    "    frag_color = vec4(smoothstep(0.3, 0.7, p / 10.0), 0.0, 0.0, 1.0);\n"
    "}\n";

static const char k_fs[] =
    "in vec2 v_uv;\n"
    "uniform sampler2D u_backdrop;\n"
    "uniform sampler2D u_texture;\n"
    "uniform sampler2D u_blurred;\n"
    "uniform sampler2D u_person;\n"
    "uniform vec4 u_cover;\n"
    "uniform float u_opacity;\n"
    "uniform int u_blend;\n"
    "uniform int u_mode;\n"
    "out vec4 frag_color;\n"
    "void main() {\n"
    "    vec4 cb = texture(u_backdrop, v_uv);\n"
    "    float bg = 1.0 - texture(u_person, v_uv).r;\n"
    "    vec4 src = u_mode == 0 ? texture(u_texture, v_uv * u_cover.xy + u_cover.zw)\n"
    "                           : vec4(texture(u_blurred, v_uv).rgb, 1.0);\n"
    "    frag_color = ks_composite(cb, vec4(src.rgb, src.a * bg), u_blend, u_opacity);\n"
    "}\n";

/* One blur direction; u_step = tap spacing in uv of the source. */
static const char k_blur_fs[] =
    "in vec2 v_uv;\n"
    "uniform sampler2D u_texture;\n"
    "uniform sampler2D u_person;\n"
    "uniform vec2 u_step;\n"
    "out vec4 frag_color;\n"
    "void main() {\n"
    "    vec3 acc = vec3(0.0);\n"
    "    float wsum = 0.0;\n"
    "    vec3 plain = vec3(0.0);\n"
    "    float psum = 0.0;\n"
    "    for (int i = -6; i <= 6; i++) {\n"
    "        vec2 uv = v_uv + float(i) * u_step;\n"
    "        float g = exp(-float(i * i) / 18.0);\n"
    "        vec3 c = texture(u_texture, uv).rgb;\n"
    "        float w = g * (1.0 - texture(u_person, uv).r) + 1e-4 * g;\n"
    "        acc += c * w;\n"
    "        wsum += w;\n"
    "        plain += c * g;\n"
    "        psum += g;\n"
    "    }\n"
    "    frag_color = vec4(wsum > 1e-3 ? acc / wsum : plain / psum, 1.0);\n"
    "}\n";

static void release_targets(background_gl *s) {
    for (int i = 0; i < NUM_TARGETS; i++) {
        if (s->fbo[i]) glDeleteFramebuffers(1, &s->fbo[i]);
        if (s->tex[i]) glDeleteTextures(1, &s->tex[i]);
        s->fbo[i] = s->tex[i] = 0;
    }
}

static ks_status background_gl_create(ks__ar_renderer *r, ks__ar_layer *layer) {
    const ks_effect_layer *d = layer->desc;
    background_gl *s = ks__ar_alloc(r, sizeof(*s));
    if (!s) return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "layer '%s': out of memory", d->name);
    layer->gl_impl = s;
    bool blur = d->background_mode == KS_EFFECT_BACKGROUND_BLUR;
    uint32_t n = blur ? 0 : (d->num_frames ? d->num_frames : 1);
    if (n) {
        s->frames = ks__ar_alloc(r, n * sizeof(*s->frames));
        if (!s->frames)
            return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "layer '%s': out of memory", d->name);
        for (uint32_t i = 0; i < n; i++) {
            const char *name = d->num_frames ? d->frames[i] : d->texture;
            ks_status st = ks__ar_texture_from_name(r, layer, name, &s->frames[i]);
            if (st) return st;
            s->num_frames = i + 1;
        }
    }
    const char *vs[2] = {ks__ar_glsl_prologue, ks__ar_fullscreen_vs};
    const char *fs[3] = {ks__ar_glsl_prologue, ks__ar_glsl_blend, k_fs};
    ks_status st = ks__ar_program_create(r, "background program", vs, 2, fs, 3, false, &s->program);
    if (st) return st;
    s->u_cover = glGetUniformLocation(s->program, "u_cover");
    s->u_opacity = glGetUniformLocation(s->program, "u_opacity");
    s->u_blend = glGetUniformLocation(s->program, "u_blend");
    s->u_mode = glGetUniformLocation(s->program, "u_mode");
    glUseProgram(s->program);
    glUniform1i(glGetUniformLocation(s->program, "u_texture"), IMAGE_UNIT);
    glUniform1i(glGetUniformLocation(s->program, "u_backdrop"), 2);
    glUniform1i(glGetUniformLocation(s->program, "u_blurred"), BLUR_UNIT);
    glUniform1i(glGetUniformLocation(s->program, "u_person"), SOFT_UNIT);

    const char *sfs[2] = {ks__ar_glsl_prologue, k_soft_fs};
    st = ks__ar_program_create(r, "background soft-mask program", vs, 2, sfs, 2, false,
                               &s->soft_program);
    if (st) return st;
    s->s_soft = glGetUniformLocation(s->soft_program, "u_soft");
    glUseProgram(s->soft_program);
    glUniform1i(glGetUniformLocation(s->soft_program, "u_mask"), 3);
    if (blur) {
        const char *bfs[2] = {ks__ar_glsl_prologue, k_blur_fs};
        st = ks__ar_program_create(r, "background blur program", vs, 2, bfs, 2, false,
                                   &s->blur_program);
        if (st) return st;
        s->b_step = glGetUniformLocation(s->blur_program, "u_step");
        glUseProgram(s->blur_program);
        glUniform1i(glGetUniformLocation(s->blur_program, "u_texture"), 0);
        glUniform1i(glGetUniformLocation(s->blur_program, "u_person"), SOFT_UNIT);
    }
    glUseProgram(0);
    return ks__ar_custom_program_create(r, layer, ks__ar_fullscreen_vs);
}

static ks_status background_gl_resize(ks__ar_renderer *r, ks__ar_layer *layer, int32_t width_px,
                                      int32_t height_px) {
    background_gl *s = layer->gl_impl;
    release_targets(s);
    s->small_w = width_px / DOWNSCALE > 0 ? width_px / DOWNSCALE : 1;
    s->small_h = height_px / DOWNSCALE > 0 ? height_px / DOWNSCALE : 1;
    int num = s->blur_program ? NUM_TARGETS : 1;
    for (int i = 0; i < num; i++) {
        glGenTextures(1, &s->tex[i]);
        glBindTexture(GL_TEXTURE_2D, s->tex[i]);
        glTexStorage2D(GL_TEXTURE_2D, 1, i == SOFT ? GL_R8 : GL_RGBA8, s->small_w, s->small_h);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
        glGenFramebuffers(1, &s->fbo[i]);
        glBindFramebuffer(GL_FRAMEBUFFER, s->fbo[i]);
        glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, s->tex[i], 0);
        GLenum fs = glCheckFramebufferStatus(GL_FRAMEBUFFER);
        if (fs != GL_FRAMEBUFFER_COMPLETE) {
            glBindFramebuffer(GL_FRAMEBUFFER, 0);
            return ks__ar_error(r, KS_STATUS_INTERNAL,
                                "layer '%s': %dx%d work target incomplete (0x%04x)",
                                layer->desc->name, (int)s->small_w, (int)s->small_h, (unsigned)fs);
        }
    }
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    return KS_STATUS_OK;
}

/* Soft mask, then (blur mode) the two blur directions, all at quarter resolution. */
static void prepasses(ks__ar_renderer *r, ks__ar_layer *layer, const ks__ar_ctx *ctx) {
    background_gl *s = layer->gl_impl;
    glDisable(GL_BLEND);
    glDisable(GL_DEPTH_TEST);
    glViewport(0, 0, s->small_w, s->small_h);
    glBindVertexArray(r->quad_vao);

    float r_px = 0.006f * (float)ctx->height_px;
    glBindFramebuffer(GL_FRAMEBUFFER, s->fbo[SOFT]);
    glUseProgram(s->soft_program);
    glUniform2f(s->s_soft, r_px / (float)ctx->width_px, r_px / (float)ctx->height_px);
    glActiveTexture(GL_TEXTURE3);
    glBindTexture(GL_TEXTURE_2D, ctx->mask_texture);
    ks__ar_draw_fullscreen(r);
    r->stats.num_passes++;
    glActiveTexture(GL_TEXTURE0 + SOFT_UNIT);
    glBindTexture(GL_TEXTURE_2D, s->tex[SOFT]);
    if (!s->blur_program) return;

    /* sigma = radius / 2: 13 taps spaced radius / 6 with weights exp(-i^2 / 18) (sigma 3 taps) */
    float step_px = layer->desc->blur_radius * (float)ctx->height_px / 6.0f;
    glUseProgram(s->blur_program);
    GLuint src[2] = {r->targets[ctx->cur].texture, s->tex[BLUR_A]};
    for (int pass = 0; pass < 2; pass++) {
        glBindFramebuffer(GL_FRAMEBUFFER, s->fbo[BLUR_A + pass]);
        glActiveTexture(GL_TEXTURE0);
        glBindTexture(GL_TEXTURE_2D, src[pass]);
        if (pass == 0)
            glUniform2f(s->b_step, step_px / (float)ctx->width_px, 0.0f);
        else
            glUniform2f(s->b_step, 0.0f, step_px / (float)ctx->height_px);
        ks__ar_draw_fullscreen(r);
        r->stats.num_passes++;
    }
}

static ks_status background_gl_draw(ks__ar_renderer *r, ks__ar_layer *layer, ks__ar_ctx *ctx) {
    background_gl *s = layer->gl_impl;
    const ks_effect_layer *d = layer->desc;
    bool blur = d->background_mode == KS_EFFECT_BACKGROUND_BLUR;
    prepasses(r, layer, ctx);
    bool custom = layer->custom_program != 0;
    ks__ar_pass_kind kind = custom ? KS__AR_PASS_SCRATCH : KS__AR_PASS_REPLACE;
    ks_status st = ks__ar_pass_begin(r, ctx, kind);
    if (st) return st;
    ks__ar_texture image = {0};
    if (!blur) {
        if (ks__ar_layer_param_texture(r, layer)) {
            image = r->params[layer->image_param].image;
        } else {
            uint32_t f = layer->inst[0].sprite_frame;
            image = s->frames[f < s->num_frames ? f : 0];
        }
    }
    glActiveTexture(GL_TEXTURE0 + IMAGE_UNIT);
    glBindTexture(GL_TEXTURE_2D, image.id ? image.id : r->white_texture);
    glActiveTexture(GL_TEXTURE0 + BLUR_UNIT);
    glBindTexture(GL_TEXTURE_2D, blur ? s->tex[BLUR_B] : r->white_texture);
    glActiveTexture(GL_TEXTURE0 + SOFT_UNIT);
    glBindTexture(GL_TEXTURE_2D, s->tex[SOFT]);
    glActiveTexture(GL_TEXTURE0);
    if (custom) {
        glUseProgram(layer->custom_program);
        ks__ar_set_standard_uniforms(r, layer, ctx, layer->custom_program);
    } else {
        float cover[4] = {1, 1, 0, 0};
        if (image.id && image.width_px > 0 && image.height_px > 0) {
            float ai = (float)image.width_px / (float)image.height_px;
            float af = (float)ctx->width_px / (float)ctx->height_px;
            if (ai > af)
                cover[0] = af / ai;
            else
                cover[1] = ai / af;
            cover[2] = 0.5f - 0.5f * cover[0];
            cover[3] = 0.5f - 0.5f * cover[1];
        }
        glUseProgram(s->program);
        glUniform4fv(s->u_cover, 1, cover);
        glUniform1f(s->u_opacity, layer->opacity);
        glUniform1i(s->u_blend, (GLint)d->blend);
        glUniform1i(s->u_mode, blur ? 1 : 0);
    }
    ks__ar_draw_fullscreen(r);
    return ks__ar_pass_end(r, ctx, kind, d->blend, 1.0f);
}

static void background_gl_destroy(ks__ar_renderer *r, ks__ar_layer *layer) {
    background_gl *s = layer->gl_impl;
    if (!s) return;
    release_targets(s);
    if (s->frames) {
        for (uint32_t i = 0; i < s->num_frames; i++)
            ks__ar_texture_destroy(r, &s->frames[i]);
        ks__ar_free(r, s->frames);
    }
    if (s->program) glDeleteProgram(s->program);
    if (s->soft_program) glDeleteProgram(s->soft_program);
    if (s->blur_program) glDeleteProgram(s->blur_program);
    ks__ar_free(r, s);
    layer->gl_impl = NULL;
}

const ks__ar_layer_gl_vtable ks__ar_gl_layer_background = {
    .create = background_gl_create,
    .resize = background_gl_resize,
    .draw = background_gl_draw,
    .destroy = background_gl_destroy,
};
