/* The beauty layer's GL half (layer_beauty.c computes the amounts, the skin region and the warp
 * grids of the frame).
 *
 * Passes (only those with a non-zero amount run):
 *   skin mask   the foundation region of face_regions.h (face oval minus eyes, brows and mouth,
 *               feathered) of every face into a half-resolution R8 target: MAX for the oval,
 *               MIN for the holes.
 *   smoothing   the current image is downsampled 2x (the bilinear tap at a half-resolution
 *               pixel centre averages 2x2 pixels), then filtered by a separable bilateral
 *               (horizontal, then vertical; 13 taps each): spatial sigma proportional to the
 *               largest face width, range sigma 0.1, so skin texture is flattened while edges
 *               (eyes, nostrils, the face outline) with larger colour steps survive. Separable
 *               bilateral is an approximation of the 2D filter, adequate for skin whose edges
 *               are mostly few and strong; it costs 26 taps per half-resolution pixel.
 *   composite   (BACKDROP pass) over the skin region's own triangles only:
 *               mix(image, smoothed, mask * smoothing * 0.85), then whitening:
 *               mix(c, log(1 + 3c) / log(4), mask * whitening). The log curve lifts mid-tones
 *               most and keeps black and white fixed, so skin brightens without clipping
 *               highlights. Keeping 15 % of the original detail at full smoothing avoids the
 *               "plastic" look. The half-resolution passes are scissored to the skin's bounding
 *               box (plus the filter reach), so their cost follows the face size, not the frame.
 *   warp        (BACKDROP pass) a 57x57 grid per face around the face (face_regions.h) whose
 *               vertices sample the image at displaced positions: eyes magnified radially, the
 *               jaw pulled towards the midline; the displacement is zero on the grid border, so
 *               the warped patch meets the untouched image seamlessly and the background never
 *               tears.
 * Ordering note for effect authors: the warp moves everything drawn before this layer (e.g.
 * makeup), and makeup drawn after it follows the unwarped landmarks; put beauty after makeup
 * layers when using face_slim or eye_enlarge.
 *
 * Memory: GL buffers at create (sized for max_faces), the half-resolution targets at resize;
 * nothing per frame. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gles3.h"
#include "layer_beauty.h"

#define SKIN_UNIT 4
#define SMOOTH_UNIT 5
#define SMOOTH_SIGMA_FW 0.015f /* spatial sigma of the bilateral, in face widths */
#define SMOOTH_RANGE_SIGMA 0.1f
#define SMOOTH_DETAIL_KEPT 0.15f
#define WHITEN_CURVE_BETA 4.0f

enum { TGT_A = 0, TGT_B = 1, TGT_SKIN = 2, NUM_TGT = 3 };

typedef struct beauty_gl {
    GLuint skin_vao, skin_vbo, skin_ibo;
    GLuint grid_vao, grid_vbo, grid_ibo;
    GLuint coverage_program, down_program, bilateral_program, composite_program, warp_program;
    GLint cov_u_res, down_u_src, bil_u_src, bil_u_step, bil_u_inv_range2;
    GLint comp_u_res, comp_u_backdrop, comp_u_skin, comp_u_smooth, comp_u_smoothing,
        comp_u_whitening;
    GLint warp_u_res, warp_u_backdrop;
    GLuint tex[NUM_TGT], fbo[NUM_TGT];
    int32_t half_w, half_h;
} beauty_gl;

static const char k_region_vs[] = "layout(location = 0) in vec3 a_pos;\n"
                                  "uniform vec2 u_resolution_px;\n"
                                  "out float v_alpha;\n"
                                  "out vec2 v_uv;\n"
                                  "void main() {\n"
                                  "    v_alpha = a_pos.z;\n"
                                  "    v_uv = a_pos.xy / u_resolution_px;\n"
                                  "    gl_Position = vec4(2.0 * a_pos.xy / u_resolution_px - 1.0,\n"
                                  "                       0.0, 1.0);\n"
                                  "}\n";

static const char k_coverage_fs[] = "in float v_alpha;\n"
                                    "out vec4 frag_color;\n"
                                    "void main() {\n"
                                    "    float a = clamp(v_alpha, 0.0, 1.0);\n"
                                    "    frag_color = vec4(a * a * (3.0 - 2.0 * a));\n"
                                    "}\n";

static const char k_down_fs[] =
    "in vec2 v_uv;\n"
    "uniform sampler2D u_src;\n"
    "out vec4 frag_color;\n"
    "void main() { frag_color = vec4(texture(u_src, v_uv).rgb, 1.0); }\n";

/* Taps at offsets i * u_step, i = -6..6, with u_step = sigma / 2: spatial weight
 * exp(-(i/2)^2 / 2) = exp(-i^2 / 8), out to 3 sigma. */
static const char k_bilateral_fs[] =
    "in vec2 v_uv;\n"
    "uniform sampler2D u_src;\n"
    "uniform vec2 u_step;\n"
    "uniform float u_inv_range2;\n"
    "out vec4 frag_color;\n"
    "void main() {\n"
    "    vec3 c0 = texture(u_src, v_uv).rgb;\n"
    "    vec3 sum = c0;\n"
    "    float wsum = 1.0;\n"
    "    for (int i = 1; i <= 6; i++) {\n"
    "        float ws = exp(-float(i * i) / 8.0);\n"
    "        vec3 a = texture(u_src, v_uv + float(i) * u_step).rgb;\n"
    "        vec3 b = texture(u_src, v_uv - float(i) * u_step).rgb;\n"
    "        float wa = ws * exp(-dot(a - c0, a - c0) * u_inv_range2);\n"
    "        float wb = ws * exp(-dot(b - c0, b - c0) * u_inv_range2);\n"
    "        sum += wa * a + wb * b;\n"
    "        wsum += wa + wb;\n"
    "    }\n"
    "    frag_color = vec4(sum / wsum, 1.0);\n"
    "}\n";

static const char k_composite_fs[] =
    "in vec2 v_uv;\n"
    "uniform sampler2D u_backdrop;\n"
    "uniform sampler2D u_skin;\n"
    "uniform sampler2D u_smooth;\n"
    "uniform float u_smoothing;\n"
    "uniform float u_whitening;\n"
    "out vec4 frag_color;\n"
    "void main() {\n"
    "    vec3 c = texture(u_backdrop, v_uv).rgb;\n"
    "    float m = texture(u_skin, v_uv).r;\n"
    "    if (m > 0.0) {\n"
    "        c = mix(c, texture(u_smooth, v_uv).rgb, m * u_smoothing);\n"
    "        vec3 w = log(1.0 + 3.0 * c) / log(4.0);\n"
    "        c = mix(c, w, m * u_whitening);\n"
    "    }\n"
    "    frag_color = vec4(c, 1.0);\n"
    "}\n";

/* Grid vertices: output position and source position, both in frame pixels. */
static const char k_warp_vs[] = "layout(location = 0) in vec2 a_pos;\n"
                                "layout(location = 1) in vec2 a_uv;\n"
                                "uniform vec2 u_resolution_px;\n"
                                "out vec2 v_src;\n"
                                "void main() {\n"
                                "    v_src = a_uv / u_resolution_px;\n"
                                "    gl_Position = vec4(2.0 * a_pos / u_resolution_px - 1.0,\n"
                                "                       0.0, 1.0);\n"
                                "}\n";

static const char k_warp_fs[] = "in vec2 v_src;\n"
                                "uniform sampler2D u_backdrop;\n"
                                "out vec4 frag_color;\n"
                                "void main() {\n"
                                "    frag_color = vec4(texture(u_backdrop, v_src).rgb, 1.0);\n"
                                "}\n";

static void release_targets(beauty_gl *b) {
    for (int i = 0; i < NUM_TGT; i++) {
        if (b->fbo[i]) glDeleteFramebuffers(1, &b->fbo[i]);
        if (b->tex[i]) glDeleteTextures(1, &b->tex[i]);
        b->fbo[i] = b->tex[i] = 0;
    }
}

static void beauty_gl_destroy(ks__ar_renderer *r, ks__ar_layer *layer) {
    beauty_gl *b = layer->gl_impl;
    if (!b) return;
    release_targets(b);
    GLuint vaos[2] = {b->skin_vao, b->grid_vao};
    GLuint bufs[4] = {b->skin_vbo, b->skin_ibo, b->grid_vbo, b->grid_ibo};
    GLuint progs[5] = {b->coverage_program, b->down_program, b->bilateral_program,
                       b->composite_program, b->warp_program};
    for (int i = 0; i < 2; i++)
        if (vaos[i]) glDeleteVertexArrays(1, &vaos[i]);
    for (int i = 0; i < 4; i++)
        if (bufs[i]) glDeleteBuffers(1, &bufs[i]);
    for (int i = 0; i < 5; i++)
        if (progs[i]) glDeleteProgram(progs[i]);
    ks__ar_free(r, b);
    layer->gl_impl = NULL;
}

static ks_status make_program(ks__ar_renderer *r, const char *what, const char *vs_src,
                              const char *fs_src, GLuint *out) {
    const char *vs[2] = {ks__ar_glsl_prologue, vs_src};
    const char *fs[2] = {ks__ar_glsl_prologue, fs_src};
    return ks__ar_program_create(r, what, vs, 2, fs, 2, false, out);
}

static ks_status beauty_gl_create(ks__ar_renderer *r, ks__ar_layer *layer) {
    const ks__ar_beauty *cpu = layer->impl;
    char what[320];
    ks_status st;
    snprintf(what, sizeof(what), "layer '%s' (beauty)", layer->desc->name);
    beauty_gl *b = ks__ar_alloc(r, sizeof(*b));
    if (!b) return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "%s: out of memory", what);
    layer->gl_impl = b;
    const uint32_t max_faces = cpu->max_faces;
    if ((st = make_program(r, what, k_region_vs, k_coverage_fs, &b->coverage_program)) ||
        (st = make_program(r, what, ks__ar_fullscreen_vs, k_down_fs, &b->down_program)) ||
        (st = make_program(r, what, ks__ar_fullscreen_vs, k_bilateral_fs, &b->bilateral_program)) ||
        (st = make_program(r, what, k_region_vs, k_composite_fs, &b->composite_program)) ||
        (st = make_program(r, what, k_warp_vs, k_warp_fs, &b->warp_program)))
        return st;
    b->cov_u_res = glGetUniformLocation(b->coverage_program, "u_resolution_px");
    b->down_u_src = glGetUniformLocation(b->down_program, "u_src");
    b->bil_u_src = glGetUniformLocation(b->bilateral_program, "u_src");
    b->bil_u_step = glGetUniformLocation(b->bilateral_program, "u_step");
    b->bil_u_inv_range2 = glGetUniformLocation(b->bilateral_program, "u_inv_range2");
    b->comp_u_backdrop = glGetUniformLocation(b->composite_program, "u_backdrop");
    b->comp_u_res = glGetUniformLocation(b->composite_program, "u_resolution_px");
    b->comp_u_skin = glGetUniformLocation(b->composite_program, "u_skin");
    b->comp_u_smooth = glGetUniformLocation(b->composite_program, "u_smooth");
    b->comp_u_smoothing = glGetUniformLocation(b->composite_program, "u_smoothing");
    b->comp_u_whitening = glGetUniformLocation(b->composite_program, "u_whitening");
    b->warp_u_res = glGetUniformLocation(b->warp_program, "u_resolution_px");
    b->warp_u_backdrop = glGetUniformLocation(b->warp_program, "u_backdrop");

    /* index buffers: one copy per face, offset to that face's vertices */
    const ks__face_region_mesh *skin = cpu->skin;
    uint32_t snv = skin->num_vertices, sna = skin->num_add_indices, snh = skin->num_hole_indices;
    size_t skin_idx = (size_t)max_faces * (sna + snh);
    size_t grid_idx = (size_t)max_faces * KS__FACE_WARP_NUM_INDICES;
    uint16_t *idx = ks__ar_alloc(r, (skin_idx > grid_idx ? skin_idx : grid_idx) * 2u);
    if (!idx) return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "%s: out of memory", what);
    for (uint32_t f = 0; f < max_faces; f++) {
        for (uint32_t i = 0; i < sna; i++)
            idx[f * sna + i] = (uint16_t)(skin->indices[i] + f * snv);
        for (uint32_t i = 0; i < snh; i++)
            idx[max_faces * sna + f * snh + i] = (uint16_t)(skin->indices[sna + i] + f * snv);
    }
    glGenVertexArrays(1, &b->skin_vao);
    glGenBuffers(1, &b->skin_vbo);
    glGenBuffers(1, &b->skin_ibo);
    glBindVertexArray(b->skin_vao);
    glBindBuffer(GL_ARRAY_BUFFER, b->skin_vbo);
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)((size_t)max_faces * snv * 3 * sizeof(float)), NULL,
                 GL_DYNAMIC_DRAW);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 3, GL_FLOAT, GL_FALSE, 0, (void *)0);
    glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, b->skin_ibo);
    glBufferData(GL_ELEMENT_ARRAY_BUFFER, (GLsizeiptr)(skin_idx * 2u), idx, GL_STATIC_DRAW);

    ks__face_warp_indices(idx);
    for (uint32_t f = 1; f < max_faces; f++)
        for (uint32_t i = 0; i < KS__FACE_WARP_NUM_INDICES; i++)
            idx[f * KS__FACE_WARP_NUM_INDICES + i] =
                (uint16_t)(idx[i] + f * KS__FACE_WARP_NUM_VERTICES);
    glGenVertexArrays(1, &b->grid_vao);
    glGenBuffers(1, &b->grid_vbo);
    glGenBuffers(1, &b->grid_ibo);
    glBindVertexArray(b->grid_vao);
    glBindBuffer(GL_ARRAY_BUFFER, b->grid_vbo);
    glBufferData(GL_ARRAY_BUFFER,
                 (GLsizeiptr)((size_t)max_faces * KS__FACE_WARP_NUM_VERTICES * 4 * sizeof(float)),
                 NULL, GL_DYNAMIC_DRAW);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 4 * sizeof(float), (void *)0);
    glEnableVertexAttribArray(1);
    glVertexAttribPointer(1, 2, GL_FLOAT, GL_FALSE, 4 * sizeof(float), (void *)(2 * sizeof(float)));
    glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, b->grid_ibo);
    glBufferData(GL_ELEMENT_ARRAY_BUFFER, (GLsizeiptr)(grid_idx * 2u), idx, GL_STATIC_DRAW);
    glBindVertexArray(0);
    glBindBuffer(GL_ARRAY_BUFFER, 0);
    ks__ar_free(r, idx);
    return ks__ar_gl_check(r, layer, "beauty buffers");
}

static ks_status make_target(ks__ar_renderer *r, ks__ar_layer *layer, beauty_gl *b, int i,
                             GLenum format, int32_t w, int32_t h) {
    glGenTextures(1, &b->tex[i]);
    glBindTexture(GL_TEXTURE_2D, b->tex[i]);
    glTexStorage2D(GL_TEXTURE_2D, 1, format, w, h);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    glGenFramebuffers(1, &b->fbo[i]);
    glBindFramebuffer(GL_FRAMEBUFFER, b->fbo[i]);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, b->tex[i], 0);
    GLenum fs = glCheckFramebufferStatus(GL_FRAMEBUFFER);
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    if (fs != GL_FRAMEBUFFER_COMPLETE)
        return ks__ar_error(r, KS_STATUS_INTERNAL,
                            "layer '%s': %dx%d beauty target %d incomplete (0x%04x)",
                            layer->desc->name, (int)w, (int)h, i, (unsigned)fs);
    return KS_STATUS_OK;
}

static ks_status beauty_gl_resize(ks__ar_renderer *r, ks__ar_layer *layer, int32_t width_px,
                                  int32_t height_px) {
    beauty_gl *b = layer->gl_impl;
    release_targets(b);
    b->half_w = (width_px + 1) / 2;
    b->half_h = (height_px + 1) / 2;
    ks_status st;
    if ((st = make_target(r, layer, b, TGT_A, GL_RGBA8, b->half_w, b->half_h)) ||
        (st = make_target(r, layer, b, TGT_B, GL_RGBA8, b->half_w, b->half_h)) ||
        (st = make_target(r, layer, b, TGT_SKIN, GL_R8, b->half_w, b->half_h))) {
        release_targets(b);
        return st;
    }
    return ks__ar_gl_check(r, layer, "beauty targets");
}

static void bind_unit(GLenum unit, GLuint tex) {
    glActiveTexture(GL_TEXTURE0 + unit);
    glBindTexture(GL_TEXTURE_2D, tex);
}

static void bind_fbo(const beauty_gl *b, int i) {
    glBindFramebuffer(GL_FRAMEBUFFER, b->fbo[i]);
    glViewport(0, 0, b->half_w, b->half_h);
}

/* Scissors the half-resolution passes to the skin box grown by `margin_px` (half-resolution
 * pixels): the filters only matter where the skin mask is non-zero, and the face is usually a
 * small part of the frame. */
static void scissor_half(const ks__ar_beauty *cpu, const beauty_gl *b, float margin_px) {
    float x0 = floorf(0.5f * cpu->skin_box[0] - margin_px),
          y0 = floorf(0.5f * cpu->skin_box[1] - margin_px);
    float x1 = ceilf(0.5f * cpu->skin_box[2] + margin_px),
          y1 = ceilf(0.5f * cpu->skin_box[3] + margin_px);
    x0 = fmaxf(x0, 0.0f);
    y0 = fmaxf(y0, 0.0f);
    x1 = fminf(x1, (float)b->half_w);
    y1 = fminf(y1, (float)b->half_h);
    if (x1 < x0) x1 = x0;
    if (y1 < y0) y1 = y0;
    /* rows are image rows: target row y is GL window row y (see ar_internal.h) */
    glScissor((GLint)x0, (GLint)y0, (GLsizei)(x1 - x0), (GLsizei)(y1 - y0));
}

static ks_status draw_tone(ks__ar_renderer *r, ks__ar_layer *layer, ks__ar_ctx *ctx,
                           const ks__ar_beauty *cpu, beauty_gl *b) {
    const ks__face_region_mesh *skin = cpu->skin;
    const float res[2] = {(float)ctx->width_px, (float)ctx->height_px};
    glDisable(GL_DEPTH_TEST);
    glDisable(GL_CULL_FACE);
    glDisable(GL_BLEND);
    glDisable(GL_SCISSOR_TEST);
    glColorMask(GL_TRUE, GL_TRUE, GL_TRUE, GL_TRUE);

    /* skin mask */
    glBindBuffer(GL_ARRAY_BUFFER, b->skin_vbo);
    glBufferSubData(GL_ARRAY_BUFFER, 0,
                    (GLsizeiptr)((size_t)cpu->num_skin * skin->num_vertices * 3 * sizeof(float)),
                    cpu->skin_xya);
    glBindBuffer(GL_ARRAY_BUFFER, 0);
    bind_fbo(b, TGT_SKIN);
    glClearColor(0.0f, 0.0f, 0.0f, 0.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    glEnable(GL_BLEND);
    glBlendFunc(GL_ONE, GL_ONE);
    glBlendEquation(GL_MAX);
    glUseProgram(b->coverage_program);
    glUniform2fv(b->cov_u_res, 1, res);
    glBindVertexArray(b->skin_vao);
    glDrawElements(GL_TRIANGLES, (GLsizei)(skin->num_add_indices * cpu->num_skin),
                   GL_UNSIGNED_SHORT, (const void *)0);
    glBlendEquation(GL_MIN);
    glDrawElements(GL_TRIANGLES, (GLsizei)(skin->num_hole_indices * cpu->num_skin),
                   GL_UNSIGNED_SHORT,
                   (const void *)((size_t)cpu->max_faces * skin->num_add_indices * 2u));
    glBlendEquation(GL_FUNC_ADD);
    glDisable(GL_BLEND);
    glBindVertexArray(0);

    /* smoothing: downsample, bilateral H (A -> B), bilateral V (B -> A), each scissored to the
     * skin box plus what the later passes read around it */
    if (cpu->smoothing > 0.0f) {
        float sigma_half_px = 0.5f * SMOOTH_SIGMA_FW * cpu->max_face_width_px;
        if (sigma_half_px < 0.5f) sigma_half_px = 0.5f;
        float step_px = 0.5f * sigma_half_px, reach_px = 6.0f * step_px + 2.0f;
        glEnable(GL_SCISSOR_TEST);
        bind_fbo(b, TGT_A);
        scissor_half(cpu, b, 2.0f * reach_px + 2.0f);
        glUseProgram(b->down_program);
        glUniform1i(b->down_u_src, 0);
        bind_unit(0, r->targets[ctx->cur].texture);
        ks__ar_draw_fullscreen(r);
        glUseProgram(b->bilateral_program);
        glUniform1i(b->bil_u_src, 0);
        glUniform1f(b->bil_u_inv_range2, 1.0f / (2.0f * SMOOTH_RANGE_SIGMA * SMOOTH_RANGE_SIGMA));
        bind_fbo(b, TGT_B);
        scissor_half(cpu, b, reach_px + 2.0f);
        glUniform2f(b->bil_u_step, step_px / (float)b->half_w, 0.0f);
        bind_unit(0, b->tex[TGT_A]);
        ks__ar_draw_fullscreen(r);
        bind_fbo(b, TGT_A);
        scissor_half(cpu, b, 2.0f);
        glUniform2f(b->bil_u_step, 0.0f, step_px / (float)b->half_h);
        bind_unit(0, b->tex[TGT_B]);
        ks__ar_draw_fullscreen(r);
        glDisable(GL_SCISSOR_TEST);
    }

    /* composite: only where the skin mask can be non-zero (its coverage triangles); the blit of
     * the BACKDROP pass keeps every other pixel */
    ks_status st = ks__ar_pass_begin(r, ctx, KS__AR_PASS_BACKDROP);
    if (st) return st;
    glUseProgram(b->composite_program);
    glUniform2fv(b->comp_u_res, 1, res);
    glUniform1i(b->comp_u_backdrop, 2);
    glUniform1i(b->comp_u_skin, SKIN_UNIT);
    glUniform1i(b->comp_u_smooth, SMOOTH_UNIT);
    glUniform1f(b->comp_u_smoothing, cpu->smoothing * (1.0f - SMOOTH_DETAIL_KEPT));
    glUniform1f(b->comp_u_whitening, cpu->whitening);
    bind_unit(SKIN_UNIT, b->tex[TGT_SKIN]);
    bind_unit(SMOOTH_UNIT, b->tex[TGT_A]);
    glActiveTexture(GL_TEXTURE0);
    glBindVertexArray(b->skin_vao);
    glDrawElements(GL_TRIANGLES, (GLsizei)(skin->num_add_indices * cpu->num_skin),
                   GL_UNSIGNED_SHORT, (const void *)0);
    return ks__ar_pass_end(r, ctx, KS__AR_PASS_BACKDROP, layer->desc->blend, 1.0f);
}

static ks_status draw_warp(ks__ar_renderer *r, ks__ar_layer *layer, ks__ar_ctx *ctx,
                           const ks__ar_beauty *cpu, beauty_gl *b) {
    glBindBuffer(GL_ARRAY_BUFFER, b->grid_vbo);
    glBufferSubData(
        GL_ARRAY_BUFFER, 0,
        (GLsizeiptr)((size_t)cpu->num_warp * KS__FACE_WARP_NUM_VERTICES * 4 * sizeof(float)),
        cpu->grid);
    glBindBuffer(GL_ARRAY_BUFFER, 0);
    ks_status st = ks__ar_pass_begin(r, ctx, KS__AR_PASS_BACKDROP);
    if (st) return st;
    glUseProgram(b->warp_program);
    glUniform2f(b->warp_u_res, (float)ctx->width_px, (float)ctx->height_px);
    glUniform1i(b->warp_u_backdrop, 2);
    glBindVertexArray(b->grid_vao);
    glDrawElements(GL_TRIANGLES, (GLsizei)(KS__FACE_WARP_NUM_INDICES * cpu->num_warp),
                   GL_UNSIGNED_SHORT, (const void *)0);
    return ks__ar_pass_end(r, ctx, KS__AR_PASS_BACKDROP, layer->desc->blend, 1.0f);
}

static ks_status beauty_gl_draw(ks__ar_renderer *r, ks__ar_layer *layer, ks__ar_ctx *ctx) {
    const ks__ar_beauty *cpu = layer->impl;
    beauty_gl *b = layer->gl_impl;
    ks_status st;
    if (cpu->num_skin > 0 && (st = draw_tone(r, layer, ctx, cpu, b)) != KS_STATUS_OK) return st;
    if (cpu->num_warp > 0 && (st = draw_warp(r, layer, ctx, cpu, b)) != KS_STATUS_OK) return st;
    return ks__ar_gl_check(r, layer, "beauty draw");
}

const ks__ar_layer_gl_vtable ks__ar_gl_layer_beauty = {
    .create = beauty_gl_create,
    .resize = beauty_gl_resize,
    .draw = beauty_gl_draw,
    .destroy = beauty_gl_destroy,
};
