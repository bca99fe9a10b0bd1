/* The AR renderer's OpenGL ES 3 backend: the per-kind GL halves of the layers, the shared GL
 * helpers and their conventions. Compiled only in builds with GLES 3 (KS_AR_GLES); the portable
 * core (../ar_internal.h) never includes this header. Not a published API.
 *
 * A layer kind's GL half, gles3/<kind>.c, defines
 *     const ks__ar_layer_gl_vtable ks__ar_gl_layer_<kind> = { .create = ..., .draw = ... };
 * listed in backend.c's kind table. Its create runs after the portable create (layer->impl is
 * ready) and keeps its GL objects in layer->gl_impl.
 *   create   at effect load: compile programs (ks__ar_program_create), upload textures
 *            (ks__ar_texture_from_asset), make buffers sized for KS_EFFECT_MAX_FACES.
 *   resize   optional: the frame size changed (first frame, or a new size). May (re)allocate
 *            frame-sized GL textures.
 *   draw     called once per frame when at least one inst[].drawn is set (face layers) or
 *            inst[0].drawn (frame-wide layers). Draws every drawn face from what layout left in
 *            layer->impl. Uses the pass helpers below to read the image so far and write the
 *            result. Must not allocate.
 *   destroy  frees everything create/resize made, and gl_impl; must accept a half-built layer.
 *            The backend deletes layer->custom_program after it.
 *
 * Image flow: the frame is drawn into target[0] (the camera image), then each layer transforms
 * "the current image" (ctx->cur) in manifest order; the last current image goes to the output.
 * All targets are RGBA8, frame size, row 0 = image top: a vertex at pixel (x, y) goes to NDC
 * (2x/w - 1, 2y/h - 1) (see ks__ar_px_to_ndc), i.e. GL's "bottom" row is the image top. That
 * keeps every texture (uploaded images, targets, masks) in the same orientation, so any shader
 * samples any of them with the same v. Triangle winding is flipped by this, so the renderer
 * never enables face culling for 2D layers (mesh3d sets its own state).
 *
 * Texture units (the shared helpers and the custom-shader contract rely on them):
 *   0 u_texture (the layer's image/sprite frame), 1 u_camera (the camera frame, unmodified),
 *   2 u_backdrop (the current image, in KS__AR_PASS_BACKDROP passes), 3 u_mask (person mask,
 *   R channel), 4.. free for the layer.
 *
 * Everything that allocates (glGen*, glTexStorage2D, glBufferData with a size) happens in
 * init, resize or layer create; per-frame code only updates existing objects (glTexSubImage2D,
 * glBufferSubData) and draws.
 */
#ifndef KESTREL_AR_GLES3_H
#define KESTREL_AR_GLES3_H

#include <GLES3/gl3.h>

#include "ar_internal.h"

#define KS__AR_FIRST_FREE_UNIT 4

/* ---- the layer kinds' GL halves ------------------------------------------------------------ */

typedef struct ks__ar_layer_gl_vtable {
    ks_status (*create)(ks__ar_renderer *r, ks__ar_layer *layer);
    ks_status (*resize)(ks__ar_renderer *r, ks__ar_layer *layer, int32_t width_px,
                        int32_t height_px); /* optional */
    ks_status (*draw)(ks__ar_renderer *r, ks__ar_layer *layer, ks__ar_ctx *ctx);
    void (*destroy)(ks__ar_renderer *r, ks__ar_layer *layer);
} ks__ar_layer_gl_vtable;

extern const ks__ar_layer_gl_vtable ks__ar_gl_layer_sticker;
extern const ks__ar_layer_gl_vtable ks__ar_gl_layer_face_texture;
extern const ks__ar_layer_gl_vtable ks__ar_gl_layer_makeup;
extern const ks__ar_layer_gl_vtable ks__ar_gl_layer_beauty;
extern const ks__ar_layer_gl_vtable ks__ar_gl_layer_lut;
extern const ks__ar_layer_gl_vtable ks__ar_gl_layer_background;
extern const ks__ar_layer_gl_vtable ks__ar_gl_layer_mesh3d;

/* The GL half of a layer's kind (backend.c's table). */
const ks__ar_layer_gl_vtable *ks__ar_gl_kind(const ks__ar_layer *layer);

/* ---- shared GL objects and the frame (gl_util.c) ------------------------------------------- */

/* KS_STATUS_INTERNAL with "layer 'name' (kind): what: GL error 0x0502" if glGetError reports
 * anything (all pending errors are drained). layer may be NULL. */
ks_status ks__ar_gl_check(ks__ar_renderer *r, const ks__ar_layer *layer, const char *what);

/* GL objects shared by every renderer feature (quad, copy/composite programs, white texture,
 * output FBO, canonical mesh buffers): made at create, freed at destroy. */
ks_status ks__ar_gl_init(ks__ar_renderer *r);
void ks__ar_gl_release(ks__ar_renderer *r);
/* (Re)makes the frame-sized targets for a new frame size (also calls the layers' resize). */
ks_status ks__ar_gl_resize(ks__ar_renderer *r, int32_t width_px, int32_t height_px);
/* Per-frame GL work of ks_ar_render around the layer draws. */
ks_status ks__ar_gl_begin_frame(ks__ar_renderer *r, const ks_ar_frame *frame);
ks_status ks__ar_gl_end_frame(ks__ar_renderer *r, const ks_ar_output *output);

/* ---- shaders ------------------------------------------------------------------------------- */

/* Standard shader prologue: "#version 300 es\nprecision highp float;\n" (both stages). */
extern const char ks__ar_glsl_prologue[];
/* GLSL functions (fragment stage) shared by the layers:
 *   vec3 ks_blend(int mode, vec3 cb, vec3 cs)        W3C separable blend, mode = ks_effect_blend
 *   vec4 ks_composite(vec4 backdrop, vec4 src, int mode, float opacity)
 *       straight-alpha src over an opaque backdrop: mix(cb, B(cb, cs), src.a * opacity), a = 1
 *   vec3 ks_srgb_luma(vec3 c) not provided; keep kinds self-contained beyond these. */
extern const char ks__ar_glsl_blend[];
/* Vertex shader for fullscreen passes: in vec2 a_pos (NDC, location 0), in vec2 a_uv (location
 * 1); out vec2 v_uv (image convention: (0, 0) = top-left pixel of the targets). */
extern const char ks__ar_fullscreen_vs[];
/* Vertex shader for the face mesh: attrib 0 vec3 a_pos_px (landmark pixels), 1 vec2 a_uv;
 * uniform vec2 u_resolution_px; out vec2 v_uv (mesh UV), out vec2 v_screen_uv (image uv of the
 * fragment, for sampling u_backdrop/u_camera/u_mask). */
extern const char ks__ar_face_mesh_vs[];

/* Compiles and links a program from source parts (each stage's parts are concatenated; pass
 * ks__ar_glsl_prologue first unless the source has its own #version line). Binds attribute
 * locations a_pos=0, a_uv=1, a_canonical=2 before linking. On failure: INVALID_MODEL for
 * `user_shader` programs (a package's shader), INTERNAL otherwise, with "what: compile/link
 * failed: <info log>" in the error. `what` names the layer/shader in messages. */
ks_status ks__ar_program_create(ks__ar_renderer *r, const char *what, const char *const *vs_parts,
                                uint32_t num_vs_parts, const char *const *fs_parts,
                                uint32_t num_fs_parts, bool user_shader, uint32_t *program_out);
/* Compiles the layer's custom fragment shader (layer->desc->shader, an asset) with vs_source
 * into layer->custom_program; no-op when the layer has none. */
ks_status ks__ar_custom_program_create(ks__ar_renderer *r, ks__ar_layer *layer,
                                       const char *vs_source);
/* Sets the custom-shader contract uniforms on `program` (must be in use): u_texture=0,
 * u_camera=1, u_backdrop=2, u_mask=3, u_resolution_px, u_time_s, u_opacity, u_color,
 * u_intensity (the layer's resolved values). Missing uniforms are skipped. */
void ks__ar_set_standard_uniforms(const ks__ar_renderer *r, const ks__ar_layer *layer,
                                  const ks__ar_ctx *ctx, uint32_t program);

/* ---- textures ------------------------------------------------------------------------------ */

/* Decodes a PNG/JPEG asset (stb_image) to RGBA8 and uploads it (linear filter, clamp to edge,
 * row 0 = top). The decoded pixels are freed before return. INVALID_MODEL if it does not decode. */
ks_status ks__ar_texture_from_asset(ks__ar_renderer *r, const ks_effect_asset *asset,
                                    ks__ar_texture *out);
/* Same from the effect by asset name (INVALID_MODEL naming the layer when absent). */
ks_status ks__ar_texture_from_name(ks__ar_renderer *r, const ks__ar_layer *layer,
                                   const char *asset_name, ks__ar_texture *out);
/* Uploads RGBA8 pixels (stride 0 = tight) into a new texture. */
ks_status ks__ar_texture_from_rgba(ks__ar_renderer *r, const uint8_t *pixels, int32_t width_px,
                                   int32_t height_px, size_t stride_bytes, ks__ar_texture *out);
void ks__ar_texture_destroy(ks__ar_renderer *r, ks__ar_texture *tex);

/* ---- drawing ------------------------------------------------------------------------------- */

/* Draws the fullscreen quad (binds its VAO; the caller set program, uniforms, textures). */
void ks__ar_draw_fullscreen(ks__ar_renderer *r);
/* Binds the face mesh VAO of `slot` (landmark VBO already updated with this frame's landmarks
 * by the core) and draws all triangles. */
void ks__ar_draw_face_mesh(ks__ar_renderer *r, uint32_t slot);

/* Where a layer's fragments go. */
typedef enum ks__ar_pass_kind {
    /* Draw onto the current image, GL blending ONE, ONE_MINUS_SRC_ALPHA: the shader outputs
     * PREMULTIPLIED colour (normal blend only). Cheapest: no copy. */
    KS__AR_PASS_OVER = 0,
    /* The current image is copied into the other target, which becomes current and is bound;
     * the old image is bound to unit 2 (u_backdrop). The shader outputs the final opaque colour
     * (e.g. ks_composite(texture(u_backdrop, v_screen_uv), src, mode, opacity)) for the pixels it
     * covers; pixels it does not cover keep the copy. No GL blending. */
    KS__AR_PASS_BACKDROP = 1,
    /* The scratch target is bound and cleared to transparent; the shader outputs STRAIGHT-alpha
     * colour (any custom shader). Blending: premultiplied-over into the scratch is NOT done
     * (later fragments overwrite). ks__ar_pass_end composites the scratch over the current
     * image with the layer's blend and opacity. */
    KS__AR_PASS_SCRATCH = 2,
    /* Fullscreen transforms (lut, background): the other target is bound WITHOUT a copy and
     * becomes current; the old image is on unit 2 (u_backdrop). The layer must write every pixel
     * (ks__ar_draw_fullscreen). No GL blending. */
    KS__AR_PASS_REPLACE = 3,
    KS__AR_PASS_KIND_COUNT
} ks__ar_pass_kind;

/* Binds the target for `kind` (viewport = frame size) and sets blend state. */
ks_status ks__ar_pass_begin(ks__ar_renderer *r, ks__ar_ctx *ctx, ks__ar_pass_kind kind);
/* Finishes the pass (SCRATCH: composite with blend/opacity into a new current image). */
ks_status ks__ar_pass_end(ks__ar_renderer *r, ks__ar_ctx *ctx, ks__ar_pass_kind kind,
                          ks_effect_blend blend, float opacity);

/* Pixel -> NDC under the row-0-is-top target convention. */
static inline void ks__ar_px_to_ndc(const ks__ar_ctx *ctx, float x_px, float y_px, float ndc[2]) {
    ndc[0] = 2.0f * x_px / (float)ctx->width_px - 1.0f;
    ndc[1] = 2.0f * y_px / (float)ctx->height_px - 1.0f;
}

#endif /* KESTREL_AR_GLES3_H */
