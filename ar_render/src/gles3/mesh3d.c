/* The mesh3d layer's GL half (layer_mesh3d.c computes the matrices).
 *
 * Occlusion: per frame, the depth buffer is cleared, the canonical face mesh posed with the same
 * pose (not the landmark-deformed mesh: both the model and the occluder then move rigidly
 * together, so glasses never swim against the head) is drawn depth-only for every face, then
 * the models with the depth test on. Where the head is in front (temples of glasses behind the
 * ears, a hat's back behind the forehead), the model is hidden. The occluder is the face surface
 * only (the canonical mesh has no back of the head): geometry far behind the face (z < about
 * -8 cm) is not hidden by it and should be shaped by the author to stay near the face.
 *
 * Shading: glTF base colour (factor x texture, sRGB texture decoded to linear) lit by one
 * directional light from the upper left front plus ambient, a small Blinn-Phong highlight, then
 * encoded back to sRGB. Opaque and MASK primitives are drawn first with depth writes, BLEND
 * primitives after them without depth writes (in file order; no per-triangle sorting).
 *
 * Pass: blend normal with opacity 1 and no custom shader draws straight onto the current image
 * (KS__AR_PASS_OVER, premultiplied output); anything else draws into the scratch target (straight
 * alpha, as custom shaders output), which is then composited once with the layer's blend and
 * opacity, so overlapping parts of the model do not show through each other when it is faded. */
#include <stdio.h>
#include <string.h>

#include "gles3.h"
#include "layer_mesh3d.h"

#define STBI_NO_STDIO
#include <stb/stb_image.h>

/* Light direction in camera space (towards the light): upper left, in front of the face. */
static const float k_light_dir[3] = {-0.35f, 0.55f, 0.76f};

static const char k_vs[] = "layout(location = 0) in vec3 a_pos;\n"
                           "layout(location = 1) in vec2 a_uv;\n"
                           "layout(location = 2) in vec3 a_normal;\n"
                           "uniform mat4 u_mvp;\n"
                           "uniform mat4 u_model_view;\n"
                           "out vec3 v_normal;\n"
                           "out vec3 v_view_pos;\n"
                           "out vec2 v_uv;\n"
                           "out vec2 v_screen_uv;\n"
                           "void main() {\n"
                           "    gl_Position = u_mvp * vec4(a_pos, 1.0);\n"
                           "    v_normal = mat3(u_model_view) * a_normal;\n"
                           "    v_view_pos = (u_model_view * vec4(a_pos, 1.0)).xyz;\n"
                           "    v_uv = a_uv;\n"
                           "    v_screen_uv = 0.5 * gl_Position.xy / gl_Position.w + 0.5;\n"
                           "}\n";

static const char k_fs[] =
    "in vec3 v_normal;\n"
    "in vec3 v_view_pos;\n"
    "in vec2 v_uv;\n"
    "uniform sampler2D u_texture;\n"
    "uniform vec4 u_base_color;\n"
    "uniform float u_alpha_cutoff;\n" /* < 0: no alpha test (OPAQUE/BLEND) */
    "uniform float u_opaque;\n"       /* 1: OPAQUE/MASK, alpha forced to 1 */
    "uniform float u_premultiply;\n"
    "uniform vec3 u_light_dir;\n"
    "out vec4 frag_color;\n"
    "void main() {\n"
    "    vec4 t = texture(u_texture, v_uv);\n"
    "    vec4 c = u_base_color * vec4(pow(t.rgb, vec3(2.2)), t.a);\n"
    "    if (u_alpha_cutoff >= 0.0 && c.a < u_alpha_cutoff) discard;\n"
    "    float a = mix(c.a, 1.0, u_opaque);\n"
    "    vec3 n = normalize(v_normal);\n"
    "    if (!gl_FrontFacing) n = -n;\n"
    "    vec3 v = normalize(-v_view_pos);\n"
    "    float diffuse = max(dot(n, u_light_dir), 0.0);\n"
    "    float spec = pow(max(dot(n, normalize(u_light_dir + v)), 0.0), 40.0);\n"
    "    vec3 lin = c.rgb * (0.35 + 0.75 * diffuse) + vec3(0.25 * spec);\n"
    "    vec3 rgb = pow(clamp(lin, 0.0, 1.0), vec3(1.0 / 2.2));\n"
    "    frag_color = vec4(rgb * mix(1.0, a, u_premultiply), a);\n"
    "}\n";

static const char k_occluder_vs[] = "layout(location = 2) in vec3 a_canonical;\n"
                                    "uniform mat4 u_mvp;\n"
                                    "void main() {\n"
                                    "    gl_Position = u_mvp * vec4(a_canonical, 1.0);\n"
                                    "}\n";

static const char k_occluder_fs[] = "out vec4 frag_color;\n"
                                    "void main() { frag_color = vec4(0.0); }\n";

typedef struct mesh3d_gl {
    uint32_t vao, vbo, ibo;
    uint32_t program, occluder_program;
    int32_t u_mvp, u_model_view, u_base_color, u_alpha_cutoff, u_opaque, u_premultiply, u_light_dir,
        u_texture;
    int32_t c_mvp, c_model_view, c_base_color; /* the custom program's (-1: unused) */
    int32_t o_mvp;
    uint32_t num_images;
    ks__ar_texture *images;  /* decoded glb images (index = model image) */
    ks__ar_texture override; /* the layer's `texture`, replaces every base colour texture */
} mesh3d_gl;

static ks_status upload_image(ks__ar_renderer *r, ks__ar_layer *layer, const ks__glb_image *img,
                              uint32_t index, ks__ar_texture *out) {
    char name[KS_EFFECT_MAX_STRING_BYTES + 32];
    snprintf(name, sizeof name, "%s#images[%u]", layer->desc->mesh, index);
    int w = 0, h = 0, n = 0;
    if (img->size_bytes > (size_t)INT32_MAX ||
        !stbi_info_from_memory(img->data, (int)img->size_bytes, &w, &h, &n))
        return ks__ar_error(r, KS_STATUS_INVALID_MODEL,
                            "layer '%s' (mesh3d): %s: not a decodable PNG/JPEG", layer->desc->name,
                            name);
    if (w <= 0 || h <= 0 || (uint32_t)w > KS_EFFECT_MAX_TEXTURE_PX ||
        (uint32_t)h > KS_EFFECT_MAX_TEXTURE_PX)
        return ks__ar_error(r, KS_STATUS_LIMIT_EXCEEDED,
                            "layer '%s' (mesh3d): %s: %dx%d, over KS_EFFECT_MAX_TEXTURE_PX (%u)",
                            layer->desc->name, name, w, h, KS_EFFECT_MAX_TEXTURE_PX);
    ks_effect_asset asset = {.name = name,
                             .data = img->data,
                             .size_bytes = img->size_bytes,
                             .kind = img->format == KS__GLB_IMAGE_PNG ? KS_EFFECT_ASSET_PNG
                                                                      : KS_EFFECT_ASSET_JPEG,
                             .width_px = (uint32_t)w,
                             .height_px = (uint32_t)h};
    ks_status st = ks__ar_texture_from_asset(r, &asset, out);
    if (st) {
        char msg[KS_ERROR_CAP];
        snprintf(msg, sizeof msg, "%s", ks_last_error(r));
        return ks__ar_error(r, st, "layer '%s' (mesh3d): %s", layer->desc->name, msg);
    }
    /* glTF samplers default to repeat; the helper clamps. Repeat matches authoring tools. */
    glBindTexture(GL_TEXTURE_2D, out->id);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_REPEAT);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_REPEAT);
    return KS_STATUS_OK;
}

static void mesh3d_gl_destroy(ks__ar_renderer *r, ks__ar_layer *layer) {
    mesh3d_gl *m = layer->gl_impl;
    if (!m) return;
    for (uint32_t i = 0; m->images && i < m->num_images; i++)
        ks__ar_texture_destroy(r, &m->images[i]);
    ks__ar_texture_destroy(r, &m->override);
    GLuint b[2] = {m->vbo, m->ibo};
    if (m->vbo || m->ibo) glDeleteBuffers(2, b);
    GLuint v = m->vao;
    if (v) glDeleteVertexArrays(1, &v);
    if (m->program) glDeleteProgram(m->program);
    if (m->occluder_program) glDeleteProgram(m->occluder_program);
    /* layer->custom_program is deleted by the backend */
    ks__ar_free(r, m->images);
    ks__ar_free(r, m);
    layer->gl_impl = NULL;
}

static ks_status mesh3d_gl_create(ks__ar_renderer *r, ks__ar_layer *layer) {
    const ks__glb_model *model = ((const ks__ar_mesh3d *)layer->impl)->model;
    char what[KS_EFFECT_MAX_STRING_BYTES + 32];
    snprintf(what, sizeof what, "layer '%s' (mesh3d)", layer->desc->name);
    mesh3d_gl *m = ks__ar_alloc(r, sizeof *m);
    if (!m) return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "%s: out of memory", what);
    layer->gl_impl = m;
    const char *vs[] = {ks__ar_glsl_prologue, k_vs};
    const char *fs[] = {ks__ar_glsl_prologue, k_fs};
    ks_status st = ks__ar_program_create(r, what, vs, 2, fs, 2, false, &m->program);
    if (st) return st;
    const char *ovs[] = {ks__ar_glsl_prologue, k_occluder_vs};
    const char *ofs[] = {ks__ar_glsl_prologue, k_occluder_fs};
    if ((st = ks__ar_program_create(r, what, ovs, 2, ofs, 2, false, &m->occluder_program)))
        return st;
    if ((st = ks__ar_custom_program_create(r, layer, k_vs))) return st;
    GLuint p = m->program;
    m->u_mvp = glGetUniformLocation(p, "u_mvp");
    m->u_model_view = glGetUniformLocation(p, "u_model_view");
    m->u_base_color = glGetUniformLocation(p, "u_base_color");
    m->u_alpha_cutoff = glGetUniformLocation(p, "u_alpha_cutoff");
    m->u_opaque = glGetUniformLocation(p, "u_opaque");
    m->u_premultiply = glGetUniformLocation(p, "u_premultiply");
    m->u_light_dir = glGetUniformLocation(p, "u_light_dir");
    m->u_texture = glGetUniformLocation(p, "u_texture");
    m->o_mvp = glGetUniformLocation(m->occluder_program, "u_mvp");
    if (layer->custom_program) {
        m->c_mvp = glGetUniformLocation(layer->custom_program, "u_mvp");
        m->c_model_view = glGetUniformLocation(layer->custom_program, "u_model_view");
        m->c_base_color = glGetUniformLocation(layer->custom_program, "u_base_color");
    }

    GLuint ids[2] = {0, 0};
    glGenVertexArrays(1, ids);
    m->vao = ids[0];
    glGenBuffers(2, ids);
    m->vbo = ids[0];
    m->ibo = ids[1];
    glBindVertexArray(m->vao);
    glBindBuffer(GL_ARRAY_BUFFER, m->vbo);
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)(model->num_vertices * sizeof(ks__glb_vertex)),
                 model->vertices, GL_STATIC_DRAW);
    glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, m->ibo);
    glBufferData(GL_ELEMENT_ARRAY_BUFFER, (GLsizeiptr)(model->num_indices * sizeof(uint32_t)),
                 model->indices, GL_STATIC_DRAW);
    const GLsizei stride = (GLsizei)sizeof(ks__glb_vertex);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 3, GL_FLOAT, GL_FALSE, stride,
                          (void *)offsetof(ks__glb_vertex, position));
    glEnableVertexAttribArray(1);
    glVertexAttribPointer(1, 2, GL_FLOAT, GL_FALSE, stride, (void *)offsetof(ks__glb_vertex, uv));
    glEnableVertexAttribArray(2);
    glVertexAttribPointer(2, 3, GL_FLOAT, GL_FALSE, stride,
                          (void *)offsetof(ks__glb_vertex, normal));
    glBindVertexArray(0);
    glBindBuffer(GL_ARRAY_BUFFER, 0);

    m->images = ks__ar_alloc(r, (model->num_images + 1) * sizeof *m->images);
    if (!m->images) return ks__ar_error(r, KS_STATUS_OUT_OF_MEMORY, "%s: out of memory", what);
    m->num_images = model->num_images;
    for (uint32_t i = 0; i < model->num_images; i++)
        if ((st = upload_image(r, layer, &model->images[i], i, &m->images[i]))) return st;
    if (layer->desc->texture && layer->desc->texture[0] &&
        (st = ks__ar_texture_from_name(r, layer, layer->desc->texture, &m->override)))
        return st;
    return ks__ar_gl_check(r, layer, "mesh3d upload");
}

/* ---- draw ------------------------------------------------------------------------------ */

static void draw_primitives(ks__ar_renderer *r, ks__ar_layer *layer, const ks__ar_mesh3d *cpu,
                            const mesh3d_gl *m, bool blended, bool premultiply) {
    bool custom = layer->custom_program != 0;
    for (uint32_t k = 0; k < cpu->num_draws; k++) {
        const ks__glb_draw *d = &cpu->draws[k];
        const ks__glb_material *mat = &cpu->materials[d->material];
        if ((mat->alpha_mode == KS__GLB_ALPHA_BLEND) != blended) continue;
        if (mat->double_sided)
            glDisable(GL_CULL_FACE);
        else
            glEnable(GL_CULL_FACE);
        uint32_t tex = m->override.id;
        if (!tex && mat->base_color_image >= 0) tex = m->images[mat->base_color_image].id;
        glActiveTexture(GL_TEXTURE0);
        glBindTexture(GL_TEXTURE_2D, tex ? tex : r->white_texture);
        if (custom) {
            glUniform4fv(m->c_base_color, 1, mat->base_color); /* -1: ignored by GL */
        } else {
            glUniform4fv(m->u_base_color, 1, mat->base_color);
            glUniform1f(m->u_alpha_cutoff,
                        mat->alpha_mode == KS__GLB_ALPHA_MASK ? mat->alpha_cutoff : -1.0f);
            glUniform1f(m->u_opaque, mat->alpha_mode == KS__GLB_ALPHA_BLEND ? 0.0f : 1.0f);
            glUniform1f(m->u_premultiply, premultiply ? 1.0f : 0.0f);
        }
        glDrawElements(GL_TRIANGLES, (GLsizei)d->num_indices, GL_UNSIGNED_INT,
                       (void *)((uintptr_t)d->first_index * sizeof(uint32_t)));
    }
}

static ks_status mesh3d_gl_draw(ks__ar_renderer *r, ks__ar_layer *layer, ks__ar_ctx *ctx) {
    const ks__ar_mesh3d *cpu = layer->impl;
    const mesh3d_gl *m = layer->gl_impl;
    bool direct = layer->desc->blend == KS_EFFECT_BLEND_NORMAL && layer->opacity >= 1.0f &&
                  !layer->custom_program;
    ks__ar_pass_kind kind = direct ? KS__AR_PASS_OVER : KS__AR_PASS_SCRATCH;
    ks_status st = ks__ar_pass_begin(r, ctx, kind);
    if (st) return st;
    glDepthMask(GL_TRUE);
    glClearDepthf(1.0f);
    glClear(GL_DEPTH_BUFFER_BIT);
    glEnable(GL_DEPTH_TEST);
    glDepthFunc(GL_LEQUAL);
    glFrontFace(GL_CW); /* the y flip in the mvp mirrors the screen */
    glCullFace(GL_BACK);

    /* 1. every face's occluder, depth only */
    glColorMask(GL_FALSE, GL_FALSE, GL_FALSE, GL_FALSE);
    glDisable(GL_CULL_FACE);
    glUseProgram(m->occluder_program);
    for (uint32_t i = 0; i < ctx->num_faces; i++) {
        uint32_t slot = ctx->faces[i].slot;
        if (!layer->inst[slot].drawn) continue;
        glUniformMatrix4fv(m->o_mvp, 1, GL_FALSE, cpu->occluder_mvp[slot]);
        ks__ar_draw_face_mesh(r, slot);
    }
    glColorMask(GL_TRUE, GL_TRUE, GL_TRUE, GL_TRUE);

    /* 2. the models: opaque/mask with depth writes, then blended without */
    GLuint prog = layer->custom_program ? layer->custom_program : m->program;
    glUseProgram(prog);
    if (layer->custom_program) {
        ks__ar_set_standard_uniforms(r, layer, ctx, prog);
    } else {
        glUniform1i(m->u_texture, 0);
        glUniform3fv(m->u_light_dir, 1, k_light_dir);
    }
    int32_t u_mvp = layer->custom_program ? m->c_mvp : m->u_mvp;
    int32_t u_mv = layer->custom_program ? m->c_model_view : m->u_model_view;
    glBindVertexArray(m->vao);
    for (int pass = 0; pass < 2; pass++) {
        glDepthMask(pass == 0 ? GL_TRUE : GL_FALSE);
        for (uint32_t i = 0; i < ctx->num_faces; i++) {
            uint32_t slot = ctx->faces[i].slot;
            if (!layer->inst[slot].drawn) continue;
            glUniformMatrix4fv(u_mvp, 1, GL_FALSE, cpu->mvp[slot]);
            glUniformMatrix4fv(u_mv, 1, GL_FALSE, cpu->model_view[slot]);
            draw_primitives(r, layer, cpu, m, pass == 1, direct);
        }
    }
    glDepthMask(GL_TRUE);
    glDisable(GL_DEPTH_TEST);
    glDisable(GL_CULL_FACE);
    glFrontFace(GL_CCW);
    glActiveTexture(GL_TEXTURE0);
    st = ks__ar_pass_end(r, ctx, kind, layer->desc->blend, layer->opacity);
    if (st) return st;
    return ks__ar_gl_check(r, layer, "mesh3d draw");
}

const ks__ar_layer_gl_vtable ks__ar_gl_layer_mesh3d = {
    .create = mesh3d_gl_create,
    .draw = mesh3d_gl_draw,
    .destroy = mesh3d_gl_destroy,
};
