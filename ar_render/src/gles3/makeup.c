/* The makeup layer's GL half (layer_makeup.c lays the regions out).
 *
 * Two passes per frame, both over every drawn face at once:
 *   1. coverage: the region triangles (face_regions.h) of all faces go into a frame-sized R8
 *      texture with GL_MAX blending, then the hole triangles (foundation only) with GL_MIN. MAX
 *      makes overlapping feather bands and parts (both eyes, two faces) combine without seams or
 *      double tinting. With a mask texture (`texture`, face UV layout) the coverage is instead
 *      the mask's alpha drawn over the face mesh.
 *   2. composite (BACKDROP pass): the same triangles again; each fragment mixes the backdrop
 *      towards blend(backdrop, colour) by coverage x colour alpha x intensity x opacity. All
 *      overlapping fragments compute the same value from the coverage texture, so drawing a pixel
 *      twice is harmless, and pixels outside the region keep the blitted copy.
 * A custom fragment shader (the layer's `shader`) replaces pass 2: it runs fullscreen in a
 * SCRATCH pass and gets the coverage as `uniform sampler2D u_coverage` (unit 4, R channel,
 * sampled at v_uv); its straight-alpha output is composited with the layer's blend.
 *
 * Memory: the GL buffers (sized for max_faces) and the index buffer (one copy of the region's
 * indices per face, offset to that face's vertices, so one draw call covers every face) are made
 * at create; the coverage texture at resize. draw never allocates. */
#include <stdio.h>
#include <string.h>

#include "gles3.h"
#include "layer_makeup.h"

#define COVERAGE_UNIT 4

typedef struct makeup_gl {
    ks__ar_texture mask;
    GLuint vao, vbo, ibo;
    GLuint coverage_program; /* region triangles -> coverage */
    GLuint mask_program;     /* face mesh x UV mask alpha -> coverage */
    GLuint composite_program;
    GLint coverage_u_res, mask_u_res, mask_u_texture;
    GLint comp_u_res, comp_u_backdrop, comp_u_coverage, comp_u_color, comp_u_intensity,
        comp_u_opacity, comp_u_blend;
    GLuint coverage_tex, coverage_fbo;
} makeup_gl;

/* Region vertices: (x_px, y_px, coverage). Image convention (row 0 = top) as every target. */
static const char k_region_vs[] = "layout(location = 0) in vec3 a_pos;\n"
                                  "uniform vec2 u_resolution_px;\n"
                                  "out float v_alpha;\n"
                                  "out vec2 v_screen_uv;\n"
                                  "void main() {\n"
                                  "    v_alpha = a_pos.z;\n"
                                  "    v_screen_uv = a_pos.xy / u_resolution_px;\n"
                                  "    gl_Position = vec4(2.0 * v_screen_uv - 1.0, 0.0, 1.0);\n"
                                  "}\n";

static const char k_coverage_fs[] = "in float v_alpha;\n"
                                    "out vec4 frag_color;\n"
                                    "void main() {\n"
                                    "    float a = clamp(v_alpha, 0.0, 1.0);\n"
                                    "    frag_color = vec4(a * a * (3.0 - 2.0 * a));\n"
                                    "}\n";

static const char k_mask_fs[] = "in vec2 v_uv;\n"
                                "uniform sampler2D u_texture;\n"
                                "out vec4 frag_color;\n"
                                "void main() { frag_color = vec4(texture(u_texture, v_uv).a); }\n";

static const char k_composite_fs[] =
    "in vec2 v_screen_uv;\n"
    "uniform sampler2D u_backdrop;\n"
    "uniform sampler2D u_coverage;\n"
    "uniform vec4 u_color;\n"
    "uniform float u_intensity;\n"
    "uniform float u_opacity;\n"
    "uniform int u_blend;\n"
    "out vec4 frag_color;\n"
    "void main() {\n"
    "    float cov = texture(u_coverage, v_screen_uv).r;\n"
    "    frag_color = ks_composite(texture(u_backdrop, v_screen_uv),\n"
    "                              vec4(u_color.rgb, u_color.a * cov * u_intensity), u_blend,\n"
    "                              u_opacity);\n"
    "}\n";

static void release_coverage(makeup_gl *m) {
    if (m->coverage_fbo) glDeleteFramebuffers(1, &m->coverage_fbo);
    if (m->coverage_tex) glDeleteTextures(1, &m->coverage_tex);
    m->coverage_fbo = m->coverage_tex = 0;
}

static void makeup_gl_destroy(ks__ar_renderer *r, ks__ar_layer *layer) {
    makeup_gl *m = layer->gl_impl;
    if (!m) return;
    release_coverage(m);
    ks__ar_texture_destroy(r, &m->mask);
    if (m->vao) glDeleteVertexArrays(1, &m->vao);
    if (m->vbo) glDeleteBuffers(1, &m->vbo);
    if (m->ibo) glDeleteBuffers(1, &m->ibo);
    if (m->coverage_program) glDeleteProgram(m->coverage_program);
    if (m->mask_program) glDeleteProgram(m->mask_program);
    if (m->composite_program) glDeleteProgram(m->composite_program);
    ks__ar_free(r, m);
    layer->gl_impl = NULL;
}

static ks_status makeup_gl_create(ks__ar_renderer *r, ks__ar_layer *layer) {
    const ks_effect_layer *d = layer->desc;
    const ks__ar_makeup *cpu = layer->impl;
    char what[320];
    ks_status st;
    makeup_gl *m = ks__ar_alloc(r, sizeof(*m));
    if (!m) return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "layer '%s': out of memory", d->name);
    layer->gl_impl = m;
    snprintf(what, sizeof(what), "layer '%s' (makeup)", d->name);
    const char *vs[2] = {ks__ar_glsl_prologue, k_region_vs};
    const char *cov_fs[2] = {ks__ar_glsl_prologue, k_coverage_fs};
    const char *comp_fs[3] = {ks__ar_glsl_prologue, ks__ar_glsl_blend, k_composite_fs};
    const char *mesh_vs[2] = {ks__ar_glsl_prologue, ks__ar_face_mesh_vs};
    const char *mask_fs[2] = {ks__ar_glsl_prologue, k_mask_fs};
    st = ks__ar_program_create(r, what, vs, 2, cov_fs, 2, false, &m->coverage_program);
    if (st) return st;
    if (cpu->use_mask) {
        st = ks__ar_program_create(r, what, mesh_vs, 2, mask_fs, 2, false, &m->mask_program);
        if (st) return st;
        st = ks__ar_texture_from_name(r, layer, d->texture, &m->mask);
        if (st) return st;
        m->mask_u_res = glGetUniformLocation(m->mask_program, "u_resolution_px");
        m->mask_u_texture = glGetUniformLocation(m->mask_program, "u_texture");
    }
    st = ks__ar_program_create(r, what, vs, 2, comp_fs, 3, false, &m->composite_program);
    if (st) return st;
    st = ks__ar_custom_program_create(r, layer, ks__ar_fullscreen_vs);
    if (st) return st;
    m->coverage_u_res = glGetUniformLocation(m->coverage_program, "u_resolution_px");
    GLuint p = m->composite_program;
    m->comp_u_res = glGetUniformLocation(p, "u_resolution_px");
    m->comp_u_backdrop = glGetUniformLocation(p, "u_backdrop");
    m->comp_u_coverage = glGetUniformLocation(p, "u_coverage");
    m->comp_u_color = glGetUniformLocation(p, "u_color");
    m->comp_u_intensity = glGetUniformLocation(p, "u_intensity");
    m->comp_u_opacity = glGetUniformLocation(p, "u_opacity");
    m->comp_u_blend = glGetUniformLocation(p, "u_blend");

    /* Per-face copies of the indices: adds of face 0..max-1, then holes of face 0..max-1. */
    const ks__face_region_mesh *mesh = cpu->mesh;
    const uint32_t max_faces = cpu->max_faces;
    uint32_t nv = mesh->num_vertices, na = mesh->num_add_indices, nh = mesh->num_hole_indices;
    size_t num_idx = (size_t)max_faces * (na + nh);
    uint16_t *idx = ks__ar_alloc(r, num_idx * sizeof(uint16_t));
    if (!idx) return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "%s: out of memory", what);
    for (uint32_t f = 0; f < max_faces; f++) {
        for (uint32_t i = 0; i < na; i++)
            idx[f * na + i] = (uint16_t)(mesh->indices[i] + f * nv);
        for (uint32_t i = 0; i < nh; i++)
            idx[max_faces * na + f * nh + i] = (uint16_t)(mesh->indices[na + i] + f * nv);
    }
    glGenVertexArrays(1, &m->vao);
    glGenBuffers(1, &m->vbo);
    glGenBuffers(1, &m->ibo);
    glBindVertexArray(m->vao);
    glBindBuffer(GL_ARRAY_BUFFER, m->vbo);
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)((size_t)max_faces * nv * 3 * sizeof(float)), NULL,
                 GL_DYNAMIC_DRAW);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 3, GL_FLOAT, GL_FALSE, 0, (void *)0);
    glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, m->ibo);
    glBufferData(GL_ELEMENT_ARRAY_BUFFER, (GLsizeiptr)(num_idx * sizeof(uint16_t)), idx,
                 GL_STATIC_DRAW);
    glBindVertexArray(0);
    glBindBuffer(GL_ARRAY_BUFFER, 0);
    ks__ar_free(r, idx);
    return ks__ar_gl_check(r, layer, "makeup buffers");
}

static ks_status makeup_gl_resize(ks__ar_renderer *r, ks__ar_layer *layer, int32_t width_px,
                                  int32_t height_px) {
    makeup_gl *m = layer->gl_impl;
    release_coverage(m);
    glGenTextures(1, &m->coverage_tex);
    glBindTexture(GL_TEXTURE_2D, m->coverage_tex);
    glTexStorage2D(GL_TEXTURE_2D, 1, GL_R8, width_px, height_px);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    glGenFramebuffers(1, &m->coverage_fbo);
    glBindFramebuffer(GL_FRAMEBUFFER, m->coverage_fbo);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, m->coverage_tex, 0);
    GLenum fs = glCheckFramebufferStatus(GL_FRAMEBUFFER);
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    if (fs != GL_FRAMEBUFFER_COMPLETE)
        return ks__ar_error(r, KS_STATUS_INTERNAL,
                            "layer '%s': %dx%d coverage target incomplete (0x%04x)",
                            layer->desc->name, (int)width_px, (int)height_px, (unsigned)fs);
    return ks__ar_gl_check(r, layer, "coverage target");
}

static void draw_regions(const ks__ar_makeup *cpu, bool holes) {
    const ks__face_region_mesh *mesh = cpu->mesh;
    uint32_t n = holes ? mesh->num_hole_indices : mesh->num_add_indices;
    size_t offset = holes ? (size_t)cpu->max_faces * mesh->num_add_indices : 0;
    glDrawElements(GL_TRIANGLES, (GLsizei)(n * cpu->num_drawn), GL_UNSIGNED_SHORT,
                   (const void *)(offset * sizeof(uint16_t)));
}

static ks_status makeup_gl_draw(ks__ar_renderer *r, ks__ar_layer *layer, ks__ar_ctx *ctx) {
    const ks__ar_makeup *cpu = layer->impl;
    makeup_gl *m = layer->gl_impl;
    if (cpu->num_drawn == 0) return KS_STATUS_OK;
    const ks__face_region_mesh *mesh = cpu->mesh;
    const float res[2] = {(float)ctx->width_px, (float)ctx->height_px};
    ks_status st;

    glBindBuffer(GL_ARRAY_BUFFER, m->vbo);
    glBufferSubData(GL_ARRAY_BUFFER, 0,
                    (GLsizeiptr)((size_t)cpu->num_drawn * mesh->num_vertices * 3 * sizeof(float)),
                    cpu->xya);
    glBindBuffer(GL_ARRAY_BUFFER, 0);

    /* 1. coverage */
    glBindFramebuffer(GL_FRAMEBUFFER, m->coverage_fbo);
    glViewport(0, 0, ctx->width_px, ctx->height_px);
    glDisable(GL_DEPTH_TEST);
    glDisable(GL_CULL_FACE);
    glDisable(GL_SCISSOR_TEST);
    glColorMask(GL_TRUE, GL_TRUE, GL_TRUE, GL_TRUE);
    glClearColor(0.0f, 0.0f, 0.0f, 0.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    glEnable(GL_BLEND);
    glBlendFunc(GL_ONE, GL_ONE);
    glBlendEquation(GL_MAX);
    if (cpu->use_mask) {
        glUseProgram(m->mask_program);
        glUniform2fv(m->mask_u_res, 1, res);
        glUniform1i(m->mask_u_texture, 0);
        glActiveTexture(GL_TEXTURE0);
        glBindTexture(GL_TEXTURE_2D, m->mask.id);
        for (uint32_t i = 0; i < cpu->num_drawn; i++)
            ks__ar_draw_face_mesh(r, cpu->drawn_slot[i]);
    } else {
        glUseProgram(m->coverage_program);
        glUniform2fv(m->coverage_u_res, 1, res);
        glBindVertexArray(m->vao);
        draw_regions(cpu, false);
        if (mesh->num_hole_indices) {
            glBlendEquation(GL_MIN);
            draw_regions(cpu, true);
        }
    }
    glBlendEquation(GL_FUNC_ADD);
    glDisable(GL_BLEND);
    glBindVertexArray(0);

    /* 2. composite */
    if (layer->custom_program) {
        st = ks__ar_pass_begin(r, ctx, KS__AR_PASS_SCRATCH);
        if (st) return st;
        glUseProgram(layer->custom_program);
        ks__ar_set_standard_uniforms(r, layer, ctx, layer->custom_program);
        GLint loc = glGetUniformLocation(layer->custom_program, "u_coverage");
        if (loc >= 0) glUniform1i(loc, COVERAGE_UNIT);
        glActiveTexture(GL_TEXTURE0 + COVERAGE_UNIT);
        glBindTexture(GL_TEXTURE_2D, m->coverage_tex);
        glActiveTexture(GL_TEXTURE0);
        glBindTexture(GL_TEXTURE_2D, cpu->use_mask ? m->mask.id : r->white_texture);
        ks__ar_draw_fullscreen(r);
        st = ks__ar_pass_end(r, ctx, KS__AR_PASS_SCRATCH, layer->desc->blend, layer->opacity);
    } else {
        st = ks__ar_pass_begin(r, ctx, KS__AR_PASS_BACKDROP);
        if (st) return st;
        glUseProgram(m->composite_program);
        glUniform2fv(m->comp_u_res, 1, res);
        glUniform1i(m->comp_u_backdrop, 2);
        glUniform1i(m->comp_u_coverage, COVERAGE_UNIT);
        glUniform4fv(m->comp_u_color, 1, layer->color);
        glUniform1f(m->comp_u_intensity, ks__ar_clamp01(layer->intensity));
        glUniform1f(m->comp_u_opacity, ks__ar_clamp01(layer->opacity));
        glUniform1i(m->comp_u_blend, (GLint)layer->desc->blend);
        glActiveTexture(GL_TEXTURE0 + COVERAGE_UNIT);
        glBindTexture(GL_TEXTURE_2D, m->coverage_tex);
        glActiveTexture(GL_TEXTURE0);
        if (cpu->use_mask) {
            for (uint32_t i = 0; i < cpu->num_drawn; i++)
                ks__ar_draw_face_mesh(r, cpu->drawn_slot[i]);
        } else {
            glBindVertexArray(m->vao);
            draw_regions(cpu, false);
        }
        st = ks__ar_pass_end(r, ctx, KS__AR_PASS_BACKDROP, layer->desc->blend, layer->opacity);
    }
    if (st) return st;
    return ks__ar_gl_check(r, layer, "makeup draw");
}

const ks__ar_layer_gl_vtable ks__ar_gl_layer_makeup = {
    .create = makeup_gl_create,
    .resize = makeup_gl_resize,
    .draw = makeup_gl_draw,
    .destroy = makeup_gl_destroy,
};
