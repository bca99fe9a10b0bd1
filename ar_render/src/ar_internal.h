/* Internal interface of the AR renderer: the layer-kind vtable, the per-frame context and the
 * shared GL helpers. Not a published API.
 *
 * Adding a layer kind: write ar_render/src/layer_<kind>.c defining
 *     const ks__ar_layer_vtable ks__ar_layer_<kind> = { .kind = KS_EFFECT_LAYER_<KIND>, ... };
 * (the symbol names are fixed, see the externs at the end) and delete its stub from
 * layer_stubs.c. CMake globs the .c files of ar_render/src; the kind table is in renderer.c.
 *
 * Life of a layer:
 *   create   at effect load, once. Compile programs (ks__ar_program_create), upload textures
 *            (ks__ar_texture_from_asset), allocate every CPU array the layer will need, sized
 *            for KS_EFFECT_MAX_FACES. With the null backend (r->gl == false) create must not call
 *            GL; it still allocates/validates the CPU side so layout runs.
 *   resize   optional: the frame size changed (first frame, or a new size). May (re)allocate
 *            frame-sized GL textures. Not called with the null backend.
 *   layout   every frame, both backends, pure CPU (no GL): computes per-face geometry into the
 *            layer's preallocated state and fills layer->inst[slot] (center/size/angle/frame and
 *            `drawn` = whether it will draw). The core has already set layer->inst[slot].drawn
 *            to the visibility (layer visible for that face and the face present); layout may
 *            only clear it (e.g. degenerate geometry, no pose).
 *   draw     GL only: called once per frame when at least one inst[].drawn is set (face layers)
 *            or inst[0].drawn (frame-wide layers). Draws every drawn face. Uses the pass helpers
 *            below to read the image so far and write the result. Must not allocate.
 *   destroy  frees everything create/resize made; must accept a half-built layer (impl NULL or
 *            partially filled).
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
 * Thread safety: as the public renderer (one thread, the GL context's).
 */
#ifndef KESTREL_AR_INTERNAL_H
#define KESTREL_AR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "common.h" /* engine/src: ks__object, ks__object_error */
#include "kestrel/ar.h"
#include "kestrel/effect.h"
#include "kestrel/kestrel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KS__AR_MAX_SLOTS KS_EFFECT_MAX_FACES
#define KS__AR_NUM_MESH_VERTICES 468u /* canonical face mesh vertices == landmarks used */
#define KS__AR_FIRST_FREE_UNIT 4

typedef struct ks_ar_renderer ks__ar_renderer; /* the public opaque handle */
typedef struct ks__ar_layer ks__ar_layer;
typedef struct ks__ar_ctx ks__ar_ctx;

/* ---- per-frame data ------------------------------------------------------------------------ */

/* One present face of the current frame, in its tracking slot. */
typedef struct ks__ar_face_ctx {
    uint32_t slot;          /* stable while the face is tracked: index into layer->inst */
    uint32_t frame_index;   /* index into the app's ks_ar_frame.faces */
    int32_t id;             /* app's id (-1 untracked) */
    uint32_t num_landmarks; /* 468 or 478 */
    const float *landmarks; /* xyz triples, frame pixels (the app's array, this frame only) */
    float center_px[2];     /* mean of the face-oval extremes 234/454/10/152 */
    float face_width_px;    /* |234 - 454| in the image plane (> 0) */
    /* Unit axes of the face in image pixels: axis_x from landmark 234 towards 454 (image right
     * for a frontal face), axis_y = axis_x rotated +90 degrees (image down for an upright face). */
    float axis_x[2], axis_y[2];
    float roll_rad; /* atan2 of axis_x; counter-clockwise on screen is positive */
    bool has_pose;
    float pose[16];       /* COLUMN-major canonical cm -> camera (transposed app matrix) */
    float projection[16]; /* COLUMN-major (default camera filled in when the app gave 0) */
    ks_ar_expressions expressions;
} ks__ar_face_ctx;

/* A frame-sized render target. */
typedef struct ks__ar_target {
    uint32_t texture;
    uint32_t fbo;
} ks__ar_target;

/* Everything a layer sees for one frame. Built by the core before layout; read-only for layers
 * except through the pass helpers (which move `cur`). */
struct ks__ar_ctx {
    int32_t width_px, height_px;
    int64_t timestamp_us;
    double time_s;      /* since the effect started (first frame = 0) */
    uint32_t num_faces; /* present faces, <= max_faces */
    ks__ar_face_ctx faces[KS__AR_MAX_SLOTS];
    /* GL only (0 with the null backend): */
    uint32_t camera_texture; /* unit 1: the input frame (app texture or the upload) */
    uint32_t mask_texture;   /* unit 3: the person mask; 0 when the app gave none */
    bool has_mask;
    uint32_t cur; /* index of the current image in r->targets */
};

/* ---- layers -------------------------------------------------------------------------------- */

typedef struct ks__ar_layer_vtable {
    ks_effect_layer_kind kind;
    /* true: the layer is drawn per face (per-face visibility, vanishes with the face);
     * false: frame-wide (lut, background): one instance, inst[0]. */
    bool per_face;
    ks_status (*create)(ks__ar_renderer *r, ks__ar_layer *layer);
    ks_status (*resize)(ks__ar_renderer *r, ks__ar_layer *layer, int32_t width_px,
                        int32_t height_px); /* optional */
    void (*layout)(ks__ar_renderer *r, ks__ar_layer *layer, const ks__ar_ctx *ctx);
    ks_status (*draw)(ks__ar_renderer *r, ks__ar_layer *layer, ks__ar_ctx *ctx);
    void (*destroy)(ks__ar_renderer *r, ks__ar_layer *layer);
} ks__ar_layer_vtable;

/* Per-face (or, for frame-wide layers, the single) instance of a layer; the core owns
 * `visible` and `anim_start_us`, layout fills the rest. Mirrors ks_ar_layer_instance. */
typedef struct ks__ar_inst {
    bool visible;          /* state: shown for this face (reset to the layer's flag on found) */
    bool drawn;            /* this frame: visible && face present && layout accepted */
    int64_t anim_start_us; /* sprite time origin (face found, or start_animation) */
    uint32_t sprite_frame;
    float center_px[2];
    float size_px[2];
    float angle_rad;
} ks__ar_inst;

struct ks__ar_layer {
    const ks__ar_layer_vtable *vt;
    const ks_effect_layer *desc; /* owned by the effect */
    uint32_t index;              /* manifest order */
    /* Parameters resolved for this frame (bound params applied), set by the core before layout. */
    float color[4];
    float intensity;
    float opacity;
    uint32_t image_param;     /* param index bound to texture_param, UINT32_MAX if none */
    uint32_t custom_program;  /* the layer's custom shader program (0: none), kind-compiled */
    uint32_t color_param;     /* param index bound to color_param, UINT32_MAX if none */
    uint32_t intensity_param; /* param index bound to intensity_param, UINT32_MAX if none */
    ks__ar_inst inst[KS__AR_MAX_SLOTS];
    void *impl; /* the kind's state (create allocates with ks__ar_alloc) */
};

/* ---- the renderer (shared state the helpers use) ------------------------------------------- */

typedef struct ks__ar_texture {
    uint32_t id;
    int32_t width_px, height_px;
} ks__ar_texture;

typedef struct ks__ar_face_mesh {
    uint32_t num_vertices; /* 468 */
    uint32_t num_indices;  /* 3 * triangles */
    const float *vertices; /* [num_vertices * 5]: canonical x, y, z (cm), u, v */
    const uint32_t *indices;
    /* GL objects (0 with the null backend): */
    uint32_t uv_vbo;                         /* vec2 per vertex (u, v), v down (image convention) */
    uint32_t canonical_vbo;                  /* vec3 per vertex, canonical cm */
    uint32_t ibo;                            /* GL_UNSIGNED_SHORT indices */
    uint32_t landmark_vbo[KS__AR_MAX_SLOTS]; /* vec3 per vertex, frame pixels, this frame */
    uint32_t vao[KS__AR_MAX_SLOTS]; /* attrib 0 = landmark px (vec3), 1 = uv, 2 = canonical */
} ks__ar_face_mesh;

typedef struct ks__ar_param_value {
    float color[4];
    float value;
    uint32_t option;
    ks__ar_texture image; /* IMAGE: current texture (default asset or app-set) */
    bool image_owned;     /* image.id made by set_param_image (else the default's) */
    ks__ar_texture default_image;
} ks__ar_param_value;

typedef struct ks__ar_slot {
    bool active;
    int32_t id;
    float prev_scores[KS_EFFECT_EVENT_COUNT]; /* expression scores of the previous frame */
} ks__ar_slot;

struct ks_ar_renderer {
    ks__object obj; /* must be first: ks_last_error(renderer) */
    ks_allocator alloc;
    bool gl;       /* false: null backend */
    bool creating; /* errors also go to the thread error (create failures) */
    const ks_effect *effect;
    const ks_effect_info *info;
    uint32_t max_faces;
    uint32_t num_layers;
    ks__ar_layer *layers;
    uint32_t num_params;
    ks__ar_param_value *params;
    ks__ar_slot slots[KS__AR_MAX_SLOTS];
    bool started;
    int64_t start_us;
    ks__ar_face_mesh mesh;
    /* frame-sized resources (GL) */
    int32_t width_px, height_px; /* size the targets were made for (0: none yet) */
    ks__ar_target targets[3];    /* 0/1 ping-pong images, 2 scratch (KS__AR_PASS_SCRATCH) */
    /* DEPTH_COMPONENT24 renderbuffer, frame size, attached to every target's FBO. Depth test is
     * off unless a layer enables it; a layer that uses depth clears it first (mesh3d). */
    uint32_t depth_renderbuffer;
    uint32_t camera_upload;      /* texture for ks_ar_frame.pixels */
    ks__ar_texture mask_upload;  /* R8 texture for ks_ar_mask.pixels (resized on mask size) */
    uint32_t quad_vao, quad_vbo; /* fullscreen quad: attrib 0 = NDC xy, 1 = uv */
    uint32_t copy_program;       /* texture -> target copy (optional flip) */
    int32_t copy_u_flip;
    uint32_t composite_program; /* scratch -> current with blend/opacity */
    int32_t composite_u_blend, composite_u_opacity;
    uint32_t white_texture; /* 1x1 white (defaults for missing textures/mask) */
    uint32_t output_fbo;    /* attaches ks_ar_output.texture (made at create) */
    const void *geometry;   /* ks__face_geometry_metadata (the parsed canonical mesh) */
    ks__ar_ctx ctx;
    ks_ar_stats stats;
    uint32_t frame_faces[KS__AR_MAX_SLOTS]; /* app face index -> slot (last frame) */
    uint32_t num_frame_faces;
    uint32_t pending[KS__AR_MAX_SLOTS + 1][KS_EFFECT_MAX_TRIGGERS]; /* scratch: fired states */
};

/* ---- helpers ------------------------------------------------------------------------------- */

/* Allocation through the renderer's allocator (zeroed). Create/resize time only. */
void *ks__ar_alloc(ks__ar_renderer *r, size_t size_bytes);
void ks__ar_free(ks__ar_renderer *r, void *ptr);

/* Formats the renderer's error (ks_last_error(renderer)); during create also the thread's
 * (ks_last_error(NULL)). Returns `status` so callers can `return ks__ar_error(r, st, ...)`. */
ks_status ks__ar_error(ks__ar_renderer *r, ks_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

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

/* The sprite frame of an instance at this frame's time (loop or hold the last frame). */
uint32_t ks__ar_sprite_frame(const ks_effect_layer *desc, const ks__ar_inst *inst,
                             int64_t timestamp_us);

/* Mean of `num` landmark indices (clamped to the face's count) in pixels. */
void ks__ar_landmark_mean(const ks__ar_face_ctx *face, const uint32_t *indices, uint32_t num,
                          float out_px[2]);

/* The texture of an image parameter bound by the layer (texture_param), or 0. */
uint32_t ks__ar_layer_param_texture(const ks__ar_renderer *r, const ks__ar_layer *layer);

/* ---- the kind table ------------------------------------------------------------------------ */

extern const ks__ar_layer_vtable ks__ar_layer_sticker;
extern const ks__ar_layer_vtable ks__ar_layer_face_texture;
extern const ks__ar_layer_vtable ks__ar_layer_makeup; /* layer_makeup.c (stub: layer_stubs.c) */
extern const ks__ar_layer_vtable ks__ar_layer_beauty; /* layer_beauty.c (stub: layer_stubs.c) */
extern const ks__ar_layer_vtable ks__ar_layer_lut;
extern const ks__ar_layer_vtable ks__ar_layer_background;
extern const ks__ar_layer_vtable ks__ar_layer_mesh3d; /* layer_mesh3d.c (stub: layer_stubs.c) */

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_AR_INTERNAL_H */
/* INTERFACE READY */
