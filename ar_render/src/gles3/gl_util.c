/* Shared GL helpers of the AR renderer's GLES 3 backend: programs, textures, the fullscreen
 * quad, the canonical face mesh buffers, render targets and passes, and the per-frame
 * input/output work (conventions in gles3.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gles3.h"

#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_NO_STDIO
#include <stb/stb_image.h>

const char ks__ar_glsl_prologue[] = "#version 300 es\nprecision highp float;\n";

const char ks__ar_glsl_blend[] =
    "vec3 ks_blend(int mode, vec3 cb, vec3 cs) {\n"
    "    if (mode == 1) return cb * cs;\n"
    "    if (mode == 2) return mix(2.0 * cb * cs, 1.0 - 2.0 * (1.0 - cb) * (1.0 - cs),\n"
    "                              step(0.5, cb));\n"
    "    if (mode == 3) {\n"
    "        vec3 d = mix(sqrt(cb), ((16.0 * cb - 12.0) * cb + 4.0) * cb, step(cb, vec3(0.25)));\n"
    "        return mix(cb - (1.0 - 2.0 * cs) * cb * (1.0 - cb), cb + (2.0 * cs - 1.0) * (d - "
    "cb),\n"
    "                   step(0.5, cs));\n"
    "    }\n"
    "    return cs;\n"
    "}\n"
    "vec4 ks_composite(vec4 backdrop, vec4 src, int mode, float opacity) {\n"
    "    float a = clamp(src.a * opacity, 0.0, 1.0);\n"
    "    return vec4(mix(backdrop.rgb, ks_blend(mode, backdrop.rgb, clamp(src.rgb, 0.0, 1.0)), "
    "a),\n"
    "                1.0);\n"
    "}\n";

const char ks__ar_fullscreen_vs[] = "layout(location = 0) in vec2 a_pos;\n"
                                    "layout(location = 1) in vec2 a_uv;\n"
                                    "out vec2 v_uv;\n"
                                    "void main() {\n"
                                    "    v_uv = a_uv;\n"
                                    "    gl_Position = vec4(a_pos, 0.0, 1.0);\n"
                                    "}\n";

const char ks__ar_face_mesh_vs[] = "layout(location = 0) in vec3 a_pos_px;\n"
                                   "layout(location = 1) in vec2 a_uv;\n"
                                   "uniform vec2 u_resolution_px;\n"
                                   "out vec2 v_uv;\n"
                                   "out vec2 v_screen_uv;\n"
                                   "void main() {\n"
                                   "    v_uv = a_uv;\n"
                                   "    v_screen_uv = a_pos_px.xy / u_resolution_px;\n"
                                   "    gl_Position = vec4(2.0 * v_screen_uv - 1.0, 0.0, 1.0);\n"
                                   "}\n";

static const char k_copy_fs[] = "in vec2 v_uv;\n"
                                "uniform sampler2D u_texture;\n"
                                "uniform float u_flip;\n"
                                "out vec4 frag_color;\n"
                                "void main() {\n"
                                "    vec2 uv = vec2(v_uv.x, mix(v_uv.y, 1.0 - v_uv.y, u_flip));\n"
                                "    frag_color = vec4(texture(u_texture, uv).rgb, 1.0);\n"
                                "}\n";

/* Scratch holds premultiplied colour (see ks__ar_pass_begin); un-premultiply, then blend. */
static const char k_composite_fs[] =
    "in vec2 v_uv;\n"
    "uniform sampler2D u_texture;\n"
    "uniform sampler2D u_backdrop;\n"
    "uniform int u_blend;\n"
    "uniform float u_opacity;\n"
    "out vec4 frag_color;\n"
    "void main() {\n"
    "    vec4 s = texture(u_texture, v_uv);\n"
    "    vec3 cs = s.a > 0.0 ? s.rgb / s.a : vec3(0.0);\n"
    "    frag_color = ks_composite(texture(u_backdrop, v_uv), vec4(cs, s.a), u_blend, u_opacity);\n"
    "}\n";

/* ---- errors -------------------------------------------------------------------------------- */

ks_status ks__ar_gl_check(ks__ar_renderer *r, const ks__ar_layer *layer, const char *what) {
    GLenum first = glGetError();
    if (first == GL_NO_ERROR) return KS_STATUS_OK;
    for (int i = 0; i < 16 && glGetError() != GL_NO_ERROR; i++) {
    }
    if (layer)
        return ks__ar_error(r, KS_STATUS_INTERNAL, "layer '%s' (%s): %s: GL error 0x%04x",
                            layer->desc->name, ks_effect_layer_kind_string(layer->desc->kind), what,
                            (unsigned)first);
    return ks__ar_error(r, KS_STATUS_INTERNAL, "ar renderer: %s: GL error 0x%04x", what,
                        (unsigned)first);
}

/* ---- programs ------------------------------------------------------------------------------ */

static ks_status compile_stage(ks__ar_renderer *r, const char *what, GLenum type,
                               const char *const *parts, uint32_t num_parts, bool user_shader,
                               GLuint *out) {
    GLuint sh = glCreateShader(type);
    if (!sh) return ks__ar_gl_check(r, NULL, "glCreateShader");
    glShaderSource(sh, (GLsizei)num_parts, (const GLchar *const *)parts, NULL);
    glCompileShader(sh);
    GLint ok = 0;
    glGetShaderiv(sh, GL_COMPILE_STATUS, &ok);
    if (!ok) {
        char log[384];
        GLsizei n = 0;
        glGetShaderInfoLog(sh, (GLsizei)sizeof(log), &n, log);
        log[n > 0 && n < (GLsizei)sizeof(log) ? n : 0] = '\0';
        for (char *c = log; *c; c++)
            if (*c == '\n') *c = ' ';
        glDeleteShader(sh);
        return ks__ar_error(r, user_shader ? KS_STATUS_INVALID_MODEL : KS_STATUS_INTERNAL,
                            "%s: %s shader does not compile: %s", what,
                            type == GL_VERTEX_SHADER ? "vertex" : "fragment", log);
    }
    *out = sh;
    return KS_STATUS_OK;
}

ks_status ks__ar_program_create(ks__ar_renderer *r, const char *what, const char *const *vs_parts,
                                uint32_t num_vs_parts, const char *const *fs_parts,
                                uint32_t num_fs_parts, bool user_shader, uint32_t *program_out) {
    GLuint vs = 0, fs = 0, prog = 0;
    ks_status st = compile_stage(r, what, GL_VERTEX_SHADER, vs_parts, num_vs_parts, false, &vs);
    if (st) goto error;
    st = compile_stage(r, what, GL_FRAGMENT_SHADER, fs_parts, num_fs_parts, user_shader, &fs);
    if (st) goto error;
    prog = glCreateProgram();
    if (!prog) {
        st = ks__ar_gl_check(r, NULL, "glCreateProgram");
        if (!st) st = ks__ar_error(r, KS_STATUS_INTERNAL, "%s: glCreateProgram failed", what);
        goto error;
    }
    glAttachShader(prog, vs);
    glAttachShader(prog, fs);
    glBindAttribLocation(prog, 0, "a_pos");
    glBindAttribLocation(prog, 1, "a_uv");
    glBindAttribLocation(prog, 2, "a_canonical");
    glLinkProgram(prog);
    GLint ok = 0;
    glGetProgramiv(prog, GL_LINK_STATUS, &ok);
    if (!ok) {
        char log[384];
        GLsizei n = 0;
        glGetProgramInfoLog(prog, (GLsizei)sizeof(log), &n, log);
        log[n > 0 && n < (GLsizei)sizeof(log) ? n : 0] = '\0';
        for (char *c = log; *c; c++)
            if (*c == '\n') *c = ' ';
        st = ks__ar_error(r, user_shader ? KS_STATUS_INVALID_MODEL : KS_STATUS_INTERNAL,
                          "%s: program does not link: %s", what, log);
        goto error;
    }
    glDeleteShader(vs);
    glDeleteShader(fs);
    *program_out = prog;
    return ks__ar_gl_check(r, NULL, what);
error:
    if (vs) glDeleteShader(vs);
    if (fs) glDeleteShader(fs);
    if (prog) glDeleteProgram(prog);
    return st;
}

ks_status ks__ar_custom_program_create(ks__ar_renderer *r, ks__ar_layer *layer,
                                       const char *vs_source) {
    if (!layer->desc->shader || !layer->desc->shader[0]) return KS_STATUS_OK;
    const ks_effect_asset *a = ks_effect_find_asset(r->effect, layer->desc->shader);
    if (!a)
        return ks__ar_error(r, KS_STATUS_INVALID_MODEL, "layer '%s': shader asset '%s' missing",
                            layer->desc->name, layer->desc->shader);
    char what[320];
    snprintf(what, sizeof(what), "layer '%s': shader '%s'", layer->desc->name, a->name);
    /* The package shader carries its own "#version 300 es" line (checked by the reader); asset
     * data has a hidden NUL terminator. */
    const char *vs[2] = {ks__ar_glsl_prologue, vs_source};
    const char *fs[1] = {(const char *)a->data};
    return ks__ar_program_create(r, what, vs, 2, fs, 1, true, &layer->custom_program);
}

void ks__ar_set_standard_uniforms(const ks__ar_renderer *r, const ks__ar_layer *layer,
                                  const ks__ar_ctx *ctx, uint32_t program) {
    (void)r;
    GLint loc;
    static const char *const samplers[] = {"u_texture", "u_camera", "u_backdrop", "u_mask"};
    for (int i = 0; i < 4; i++)
        if ((loc = glGetUniformLocation(program, samplers[i])) >= 0) glUniform1i(loc, i);
    if ((loc = glGetUniformLocation(program, "u_resolution_px")) >= 0)
        glUniform2f(loc, (float)ctx->width_px, (float)ctx->height_px);
    if ((loc = glGetUniformLocation(program, "u_time_s")) >= 0)
        glUniform1f(loc, (float)ctx->time_s);
    if ((loc = glGetUniformLocation(program, "u_opacity")) >= 0) glUniform1f(loc, layer->opacity);
    if ((loc = glGetUniformLocation(program, "u_color")) >= 0) glUniform4fv(loc, 1, layer->color);
    if ((loc = glGetUniformLocation(program, "u_intensity")) >= 0)
        glUniform1f(loc, layer->intensity);
    if ((loc = glGetUniformLocation(program, "u_blend")) >= 0)
        glUniform1i(loc, (GLint)layer->desc->blend);
}

/* ---- textures ------------------------------------------------------------------------------ */

ks_status ks__ar_texture_from_rgba(ks__ar_renderer *r, const uint8_t *pixels, int32_t width_px,
                                   int32_t height_px, size_t stride_bytes, ks__ar_texture *out) {
    if (width_px <= 0 || height_px <= 0 || width_px > (int32_t)KS_EFFECT_MAX_TEXTURE_PX ||
        height_px > (int32_t)KS_EFFECT_MAX_TEXTURE_PX || !pixels)
        return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT, "texture: bad size %dx%d", (int)width_px,
                            (int)height_px);
    if (stride_bytes == 0) stride_bytes = (size_t)width_px * 4;
    if (stride_bytes % 4 != 0 || stride_bytes < (size_t)width_px * 4)
        return ks__ar_error(r, KS_STATUS_INVALID_ARGUMENT,
                            "texture: stride %zu bytes is not a multiple of 4 >= %d", stride_bytes,
                            (int)width_px * 4);
    GLuint tex = 0;
    glGenTextures(1, &tex);
    glBindTexture(GL_TEXTURE_2D, tex);
    glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, width_px, height_px);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glPixelStorei(GL_UNPACK_ROW_LENGTH, (GLint)(stride_bytes / 4));
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, width_px, height_px, GL_RGBA, GL_UNSIGNED_BYTE, pixels);
    glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    out->id = tex;
    out->width_px = width_px;
    out->height_px = height_px;
    ks_status st = ks__ar_gl_check(r, NULL, "texture upload");
    if (st) ks__ar_texture_destroy(r, out);
    return st;
}

ks_status ks__ar_texture_from_asset(ks__ar_renderer *r, const ks_effect_asset *asset,
                                    ks__ar_texture *out) {
    if (asset->kind != KS_EFFECT_ASSET_PNG && asset->kind != KS_EFFECT_ASSET_JPEG)
        return ks__ar_error(r, KS_STATUS_INVALID_MODEL, "asset '%s': expected a PNG/JPEG, got %s",
                            asset->name, ks_effect_asset_kind_string(asset->kind));
    if (asset->size_bytes > (size_t)INT32_MAX)
        return ks__ar_error(r, KS_STATUS_LIMIT_EXCEEDED, "asset '%s': too large", asset->name);
    int w = 0, h = 0, n = 0;
    /* The reader already checked the header dimensions against KS_EFFECT_MAX_TEXTURE_PX, so the
     * decode buffer is bounded (<= 64 MiB). */
    stbi_uc *px = stbi_load_from_memory(asset->data, (int)asset->size_bytes, &w, &h, &n, 4);
    if (!px)
        return ks__ar_error(r, KS_STATUS_INVALID_MODEL, "asset '%s': cannot decode the image (%s)",
                            asset->name, stbi_failure_reason());
    ks_status st;
    if ((uint32_t)w != asset->width_px || (uint32_t)h != asset->height_px)
        st = ks__ar_error(r, KS_STATUS_INVALID_MODEL,
                          "asset '%s': decodes to %dx%d, header said %ux%u", asset->name, w, h,
                          asset->width_px, asset->height_px);
    else
        st = ks__ar_texture_from_rgba(r, px, w, h, 0, out);
    stbi_image_free(px);
    if (st && st != KS_STATUS_INVALID_MODEL)
        ks__ar_error(r, st, "asset '%s': %s", asset->name, ks_last_error(r));
    return st;
}

ks_status ks__ar_texture_from_name(ks__ar_renderer *r, const ks__ar_layer *layer,
                                   const char *asset_name, ks__ar_texture *out) {
    const ks_effect_asset *a = ks_effect_find_asset(r->effect, asset_name);
    if (!a)
        return ks__ar_error(r, KS_STATUS_INVALID_MODEL, "layer '%s': asset '%s' is missing",
                            layer ? layer->desc->name : "?", asset_name ? asset_name : "");
    ks_status st = ks__ar_texture_from_asset(r, a, out);
    if (st && layer) {
        char msg[KS_ERROR_CAP];
        snprintf(msg, sizeof(msg), "%s", ks_last_error(r));
        ks__ar_error(r, st, "layer '%s': %s", layer->desc->name, msg);
    }
    return st;
}

void ks__ar_texture_destroy(ks__ar_renderer *r, ks__ar_texture *tex) {
    (void)r;
    if (tex->id) {
        GLuint id = tex->id;
        glDeleteTextures(1, &id);
    }
    memset(tex, 0, sizeof(*tex));
}

/* ---- shared objects ------------------------------------------------------------------------ */

ks_status ks__ar_gl_init(ks__ar_renderer *r) {
    ks_status st = ks__ar_gl_check(r, NULL, "GL error pending before ks_ar_renderer_create");
    if (st) return st;
    const char *version = (const char *)glGetString(GL_VERSION);
    if (!version || !strstr(version, "OpenGL ES 3"))
        return ks__ar_error(r, KS_STATUS_UNSUPPORTED,
                            "ar renderer: needs a current OpenGL ES 3 context, GL_VERSION is '%s'",
                            version ? version : "(none: no current context?)");
    /* quad: triangle strip, (NDC xy, uv) with uv (0, 0) on the row-0 (image top) side */
    static const float quad[] = {-1, -1, 0, 0, 1, -1, 1, 0, -1, 1, 0, 1, 1, 1, 1, 1};
    GLuint vao = 0, vbo = 0;
    glGenVertexArrays(1, &vao);
    glGenBuffers(1, &vbo);
    r->quad_vao = vao;
    r->quad_vbo = vbo;
    glBindVertexArray(vao);
    glBindBuffer(GL_ARRAY_BUFFER, vbo);
    glBufferData(GL_ARRAY_BUFFER, sizeof(quad), quad, GL_STATIC_DRAW);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 4 * sizeof(float), (void *)0);
    glEnableVertexAttribArray(1);
    glVertexAttribPointer(1, 2, GL_FLOAT, GL_FALSE, 4 * sizeof(float), (void *)(2 * sizeof(float)));
    glBindVertexArray(0);

    const char *vs[2] = {ks__ar_glsl_prologue, ks__ar_fullscreen_vs};
    const char *copy_fs[2] = {ks__ar_glsl_prologue, k_copy_fs};
    st = ks__ar_program_create(r, "copy program", vs, 2, copy_fs, 2, false, &r->copy_program);
    if (st) return st;
    r->copy_u_flip = glGetUniformLocation(r->copy_program, "u_flip");
    glUseProgram(r->copy_program);
    glUniform1i(glGetUniformLocation(r->copy_program, "u_texture"), 0);
    const char *comp_fs[3] = {ks__ar_glsl_prologue, ks__ar_glsl_blend, k_composite_fs};
    st = ks__ar_program_create(r, "composite program", vs, 2, comp_fs, 3, false,
                               &r->composite_program);
    if (st) return st;
    glUseProgram(r->composite_program);
    glUniform1i(glGetUniformLocation(r->composite_program, "u_texture"), 0);
    glUniform1i(glGetUniformLocation(r->composite_program, "u_backdrop"), 2);
    r->composite_u_blend = glGetUniformLocation(r->composite_program, "u_blend");
    r->composite_u_opacity = glGetUniformLocation(r->composite_program, "u_opacity");
    glUseProgram(0);

    static const uint8_t white[4] = {255, 255, 255, 255};
    ks__ar_texture t = {0};
    st = ks__ar_texture_from_rgba(r, white, 1, 1, 0, &t);
    if (st) return st;
    r->white_texture = t.id;
    GLuint fbo = 0;
    glGenFramebuffers(1, &fbo);
    r->output_fbo = fbo;

    /* canonical face mesh: uv and canonical positions are static; landmark positions per slot
     * are rewritten every frame into buffers sized here */
    ks__ar_face_mesh *m = &r->mesh;
    uint32_t nv = m->num_vertices;
    float *tmp = ks__ar_alloc(r, (size_t)nv * 3 * sizeof(float));
    uint16_t *idx = ks__ar_alloc(r, (size_t)m->num_indices * sizeof(uint16_t));
    if (!tmp || !idx) {
        ks__ar_free(r, tmp);
        ks__ar_free(r, idx);
        return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "ar renderer: out of memory (face mesh)");
    }
    GLuint bufs[3] = {0, 0, 0};
    glGenBuffers(3, bufs);
    m->uv_vbo = bufs[0];
    m->canonical_vbo = bufs[1];
    m->ibo = bufs[2];
    for (uint32_t i = 0; i < nv; i++) {
        tmp[2 * i] = m->vertices[5 * i + 3];
        tmp[2 * i + 1] = m->vertices[5 * i + 4];
    }
    glBindBuffer(GL_ARRAY_BUFFER, m->uv_vbo);
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)nv * 2 * sizeof(float), tmp, GL_STATIC_DRAW);
    for (uint32_t i = 0; i < nv; i++)
        for (int k = 0; k < 3; k++)
            tmp[3 * i + k] = m->vertices[5 * i + k];
    glBindBuffer(GL_ARRAY_BUFFER, m->canonical_vbo);
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)nv * 3 * sizeof(float), tmp, GL_STATIC_DRAW);
    for (uint32_t i = 0; i < m->num_indices; i++)
        idx[i] = (uint16_t)m->indices[i];
    ks__ar_free(r, tmp);
    for (uint32_t s = 0; s < KS__AR_MAX_SLOTS; s++) {
        GLuint b = 0, a = 0;
        glGenBuffers(1, &b);
        glGenVertexArrays(1, &a);
        m->landmark_vbo[s] = b;
        m->vao[s] = a;
        glBindVertexArray(a);
        glBindBuffer(GL_ARRAY_BUFFER, b);
        glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)nv * 3 * sizeof(float), NULL, GL_DYNAMIC_DRAW);
        glEnableVertexAttribArray(0);
        glVertexAttribPointer(0, 3, GL_FLOAT, GL_FALSE, 0, (void *)0);
        glBindBuffer(GL_ARRAY_BUFFER, m->uv_vbo);
        glEnableVertexAttribArray(1);
        glVertexAttribPointer(1, 2, GL_FLOAT, GL_FALSE, 0, (void *)0);
        glBindBuffer(GL_ARRAY_BUFFER, m->canonical_vbo);
        glEnableVertexAttribArray(2);
        glVertexAttribPointer(2, 3, GL_FLOAT, GL_FALSE, 0, (void *)0);
        glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, m->ibo);
        if (s == 0)
            glBufferData(GL_ELEMENT_ARRAY_BUFFER, (GLsizeiptr)m->num_indices * sizeof(uint16_t),
                         idx, GL_STATIC_DRAW);
    }
    glBindVertexArray(0);
    glBindBuffer(GL_ARRAY_BUFFER, 0);
    ks__ar_free(r, idx);
    return ks__ar_gl_check(r, NULL, "shared GL objects");
}

static void release_targets(ks__ar_renderer *r) {
    for (int i = 0; i < 3; i++) {
        GLuint t = r->targets[i].texture, f = r->targets[i].fbo;
        if (f) glDeleteFramebuffers(1, &f);
        if (t) glDeleteTextures(1, &t);
        r->targets[i].texture = r->targets[i].fbo = 0;
    }
    GLuint rb = r->depth_renderbuffer, cam = r->camera_upload;
    if (rb) glDeleteRenderbuffers(1, &rb);
    if (cam) glDeleteTextures(1, &cam);
    r->depth_renderbuffer = r->camera_upload = 0;
    r->width_px = r->height_px = 0;
}

void ks__ar_gl_release(ks__ar_renderer *r) {
    release_targets(r);
    ks__ar_texture_destroy(r, &r->mask_upload);
    GLuint vao = r->quad_vao, vbo = r->quad_vbo, fbo = r->output_fbo, white = r->white_texture;
    if (vao) glDeleteVertexArrays(1, &vao);
    if (vbo) glDeleteBuffers(1, &vbo);
    if (fbo) glDeleteFramebuffers(1, &fbo);
    if (white) glDeleteTextures(1, &white);
    if (r->copy_program) glDeleteProgram(r->copy_program);
    if (r->composite_program) glDeleteProgram(r->composite_program);
    ks__ar_face_mesh *m = &r->mesh;
    GLuint bufs[3] = {m->uv_vbo, m->canonical_vbo, m->ibo};
    for (int i = 0; i < 3; i++)
        if (bufs[i]) glDeleteBuffers(1, &bufs[i]);
    for (uint32_t s = 0; s < KS__AR_MAX_SLOTS; s++) {
        GLuint b = m->landmark_vbo[s], a = m->vao[s];
        if (b) glDeleteBuffers(1, &b);
        if (a) glDeleteVertexArrays(1, &a);
    }
    r->quad_vao = r->quad_vbo = r->output_fbo = r->white_texture = 0;
    r->copy_program = r->composite_program = 0;
}

ks_status ks__ar_gl_resize(ks__ar_renderer *r, int32_t width_px, int32_t height_px) {
    release_targets(r);
    GLuint rb = 0;
    glGenRenderbuffers(1, &rb);
    r->depth_renderbuffer = rb;
    glBindRenderbuffer(GL_RENDERBUFFER, rb);
    glRenderbufferStorage(GL_RENDERBUFFER, GL_DEPTH_COMPONENT24, width_px, height_px);
    for (int i = 0; i < 3; i++) {
        GLuint t = 0, f = 0;
        glGenTextures(1, &t);
        glBindTexture(GL_TEXTURE_2D, t);
        glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, width_px, height_px);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
        glGenFramebuffers(1, &f);
        glBindFramebuffer(GL_FRAMEBUFFER, f);
        glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, t, 0);
        glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_DEPTH_ATTACHMENT, GL_RENDERBUFFER, rb);
        r->targets[i].texture = t;
        r->targets[i].fbo = f;
        GLenum fs = glCheckFramebufferStatus(GL_FRAMEBUFFER);
        if (fs != GL_FRAMEBUFFER_COMPLETE) {
            glBindFramebuffer(GL_FRAMEBUFFER, 0);
            release_targets(r);
            return ks__ar_error(r, KS_STATUS_INTERNAL,
                                "ar renderer: %dx%d render target incomplete (0x%04x)",
                                (int)width_px, (int)height_px, (unsigned)fs);
        }
    }
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    GLuint cam = 0;
    glGenTextures(1, &cam);
    glBindTexture(GL_TEXTURE_2D, cam);
    glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, width_px, height_px);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    r->camera_upload = cam;
    ks_status st = ks__ar_gl_check(r, NULL, "render targets");
    if (st) {
        release_targets(r);
        return st;
    }
    r->width_px = width_px;
    r->height_px = height_px;
    for (uint32_t i = 0; i < r->num_layers; i++) {
        ks__ar_layer *l = &r->layers[i];
        const ks__ar_layer_gl_vtable *gl = ks__ar_gl_kind(l);
        if (!gl || !gl->resize) continue;
        st = gl->resize(r, l, width_px, height_px);
        if (!st) st = ks__ar_gl_check(r, l, "resize");
        if (st) {
            release_targets(r);
            return st;
        }
    }
    return KS_STATUS_OK;
}

/* ---- drawing ------------------------------------------------------------------------------- */

void ks__ar_draw_fullscreen(ks__ar_renderer *r) {
    glBindVertexArray(r->quad_vao);
    glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
}

void ks__ar_draw_face_mesh(ks__ar_renderer *r, uint32_t slot) {
    if (slot >= KS__AR_MAX_SLOTS) return;
    glBindVertexArray(r->mesh.vao[slot]);
    glDrawElements(GL_TRIANGLES, (GLsizei)r->mesh.num_indices, GL_UNSIGNED_SHORT, (void *)0);
}

static void bind_texture(GLenum unit, GLuint tex) {
    glActiveTexture(GL_TEXTURE0 + unit);
    glBindTexture(GL_TEXTURE_2D, tex);
}

static void bind_target(ks__ar_renderer *r, uint32_t index) {
    glBindFramebuffer(GL_FRAMEBUFFER, r->targets[index].fbo);
    glViewport(0, 0, r->width_px, r->height_px);
}

ks_status ks__ar_pass_begin(ks__ar_renderer *r, ks__ar_ctx *ctx, ks__ar_pass_kind kind) {
    glDisable(GL_DEPTH_TEST);
    glDisable(GL_CULL_FACE);
    glDisable(GL_SCISSOR_TEST);
    uint32_t other = 1u - ctx->cur;
    switch (kind) {
    case KS__AR_PASS_OVER:
        bind_target(r, ctx->cur);
        glEnable(GL_BLEND);
        glBlendFunc(GL_ONE, GL_ONE_MINUS_SRC_ALPHA);
        break;
    case KS__AR_PASS_BACKDROP:
        glBindFramebuffer(GL_READ_FRAMEBUFFER, r->targets[ctx->cur].fbo);
        glBindFramebuffer(GL_DRAW_FRAMEBUFFER, r->targets[other].fbo);
        glBlitFramebuffer(0, 0, r->width_px, r->height_px, 0, 0, r->width_px, r->height_px,
                          GL_COLOR_BUFFER_BIT, GL_NEAREST);
        bind_texture(2, r->targets[ctx->cur].texture);
        ctx->cur = other;
        bind_target(r, ctx->cur);
        glDisable(GL_BLEND);
        r->stats.num_passes++;
        break;
    case KS__AR_PASS_SCRATCH:
        bind_texture(2, r->targets[ctx->cur].texture);
        bind_target(r, 2);
        glClearColor(0, 0, 0, 0);
        glClear(GL_COLOR_BUFFER_BIT);
        /* straight-alpha fragments accumulate as premultiplied colour (over, in order) */
        glEnable(GL_BLEND);
        glBlendFuncSeparate(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA, GL_ONE, GL_ONE_MINUS_SRC_ALPHA);
        break;
    case KS__AR_PASS_REPLACE:
        bind_texture(2, r->targets[ctx->cur].texture);
        ctx->cur = other;
        bind_target(r, ctx->cur);
        glDisable(GL_BLEND);
        r->stats.num_passes++;
        break;
    default:
        return ks__ar_error(r, KS_STATUS_INTERNAL, "ar renderer: bad pass kind %d", (int)kind);
    }
    /* the shared inputs every contract shader may sample */
    bind_texture(1, ctx->camera_texture);
    bind_texture(3, ctx->has_mask ? ctx->mask_texture : r->white_texture);
    glActiveTexture(GL_TEXTURE0);
    return KS_STATUS_OK;
}

ks_status ks__ar_pass_end(ks__ar_renderer *r, ks__ar_ctx *ctx, ks__ar_pass_kind kind,
                          ks_effect_blend blend, float opacity) {
    if (kind == KS__AR_PASS_SCRATCH) {
        glDisable(GL_BLEND);
        bind_texture(2, r->targets[ctx->cur].texture);
        bind_texture(0, r->targets[2].texture);
        ctx->cur = 1u - ctx->cur;
        bind_target(r, ctx->cur);
        glUseProgram(r->composite_program);
        glUniform1i(r->composite_u_blend, (GLint)blend);
        glUniform1f(r->composite_u_opacity, opacity);
        ks__ar_draw_fullscreen(r);
        r->stats.num_passes++;
    }
    glDisable(GL_BLEND);
    glBindVertexArray(0);
    return KS_STATUS_OK;
}

/* ---- frame input / output ------------------------------------------------------------------ */

static ks_status upload_mask(ks__ar_renderer *r, const ks_ar_mask *m) {
    if (r->mask_upload.width_px != m->width_px || r->mask_upload.height_px != m->height_px) {
        /* a new mask size (the segmenter's output size is fixed per model): reallocate once */
        ks__ar_texture_destroy(r, &r->mask_upload);
        GLuint t = 0;
        glGenTextures(1, &t);
        glBindTexture(GL_TEXTURE_2D, t);
        glTexStorage2D(GL_TEXTURE_2D, 1, GL_R8, m->width_px, m->height_px);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
        r->mask_upload.id = t;
        r->mask_upload.width_px = m->width_px;
        r->mask_upload.height_px = m->height_px;
    }
    glBindTexture(GL_TEXTURE_2D, r->mask_upload.id);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glPixelStorei(GL_UNPACK_ROW_LENGTH, (GLint)(m->stride_bytes ? m->stride_bytes : 0));
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, m->width_px, m->height_px, GL_RED, GL_UNSIGNED_BYTE,
                    m->pixels);
    glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    return KS_STATUS_OK;
}

ks_status ks__ar_gl_begin_frame(ks__ar_renderer *r, const ks_ar_frame *frame) {
    ks__ar_ctx *ctx = &r->ctx;
    ks_status st;
    if (r->width_px != frame->width_px || r->height_px != frame->height_px) {
        st = ks__ar_gl_resize(r, frame->width_px, frame->height_px);
        if (st) return st;
    }
    if (frame->texture) {
        ctx->camera_texture = frame->texture;
    } else {
        glBindTexture(GL_TEXTURE_2D, r->camera_upload);
        glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
        glPixelStorei(GL_UNPACK_ROW_LENGTH, (GLint)(frame->stride_bytes / 4));
        glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, frame->width_px, frame->height_px, GL_RGBA,
                        GL_UNSIGNED_BYTE, frame->pixels);
        glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
        ctx->camera_texture = r->camera_upload;
    }
    ctx->has_mask = false;
    ctx->mask_texture = 0;
    if (frame->mask.texture) {
        ctx->mask_texture = frame->mask.texture;
        ctx->has_mask = true;
    } else if (frame->mask.pixels) {
        st = upload_mask(r, &frame->mask);
        if (st) return st;
        ctx->mask_texture = r->mask_upload.id;
        ctx->has_mask = true;
    }
    /* this frame's landmarks into each present face's slot buffer */
    for (uint32_t i = 0; i < ctx->num_faces; i++) {
        const ks__ar_face_ctx *f = &ctx->faces[i];
        glBindBuffer(GL_ARRAY_BUFFER, r->mesh.landmark_vbo[f->slot]);
        glBufferSubData(GL_ARRAY_BUFFER, 0, (GLsizeiptr)r->mesh.num_vertices * 3 * sizeof(float),
                        f->landmarks);
    }
    glBindBuffer(GL_ARRAY_BUFFER, 0);
    /* camera -> target 0 */
    ctx->cur = 0;
    glDisable(GL_BLEND);
    glDisable(GL_DEPTH_TEST);
    glDisable(GL_CULL_FACE);
    glDisable(GL_SCISSOR_TEST);
    glColorMask(GL_TRUE, GL_TRUE, GL_TRUE, GL_TRUE);
    glDepthMask(GL_TRUE);
    bind_target(r, 0);
    glUseProgram(r->copy_program);
    glUniform1f(r->copy_u_flip, 0.0f);
    bind_texture(0, ctx->camera_texture);
    ks__ar_draw_fullscreen(r);
    r->stats.num_passes++;
    return KS_STATUS_OK;
}

ks_status ks__ar_gl_end_frame(ks__ar_renderer *r, const ks_ar_output *out) {
    ks__ar_ctx *ctx = &r->ctx;
    glDisable(GL_BLEND);
    glDisable(GL_DEPTH_TEST);
    glDisable(GL_CULL_FACE);
    glUseProgram(r->copy_program);
    bind_texture(0, r->targets[ctx->cur].texture);
    if (out->texture) {
        glBindFramebuffer(GL_FRAMEBUFFER, r->output_fbo);
        glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, out->texture,
                               0);
        glViewport(0, 0, r->width_px, r->height_px);
        glUniform1f(r->copy_u_flip, 0.0f);
        ks__ar_draw_fullscreen(r);
        glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, 0, 0);
        r->stats.num_passes++;
    }
    if (out->to_framebuffer) {
        glBindFramebuffer(GL_FRAMEBUFFER, out->framebuffer);
        glViewport(0, 0, r->width_px, r->height_px);
        glUniform1f(r->copy_u_flip, 1.0f);
        ks__ar_draw_fullscreen(r);
        r->stats.num_passes++;
    }
    if (out->pixels) {
        size_t stride = out->stride_bytes ? out->stride_bytes : (size_t)r->width_px * 4;
        glBindFramebuffer(GL_FRAMEBUFFER, r->targets[ctx->cur].fbo);
        glPixelStorei(GL_PACK_ALIGNMENT, 4);
        glPixelStorei(GL_PACK_ROW_LENGTH, (GLint)(stride / 4));
        glReadPixels(0, 0, r->width_px, r->height_px, GL_RGBA, GL_UNSIGNED_BYTE, out->pixels);
        glPixelStorei(GL_PACK_ROW_LENGTH, 0);
    }
    glBindVertexArray(0);
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    return ks__ar_gl_check(r, NULL, "ks_ar_render");
}
