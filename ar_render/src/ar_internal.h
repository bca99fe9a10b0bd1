/* Internal interface of the AR renderer core: the layer-kind vtable, the per-frame context, the
 * drawing backend interface and the shared helpers. Portable C: nothing here (nor in any file of
 * the core) includes a GL header, so the core and the null backend build and run without GLES.
 * The GLES 3 backend (gles3/, its helpers in gles3/gles3.h) is compiled only when the build has
 * it (KS_AR_GLES). Not a published API.
 *
 * Adding a layer kind: its portable half, ar_render/src/layer_<kind>.c, defines
 *     const ks__ar_layer_vtable ks__ar_layer_<kind> = { .kind = KS_EFFECT_LAYER_<KIND>, ... };
 * (create / layout / destroy: validation, CPU state and geometry), and its GLES 3 half,
 * ar_render/src/gles3/<kind>.c, defines ks__ar_gl_layer_<kind> (gles3/gles3.h: GL objects and
 * draw). State the GL half reads (what layout computed) goes in a struct declared in
 * layer_<kind>.h. Both halves are listed in ar_render/CMakeLists.txt, the kind tables in
 * renderer.c and gles3/backend.c.
 *
 * Life of a layer:
 *   create   at effect load, once. Validates the layer against the effect and allocates every CPU
 *            array the layer will need, sized for KS_EFFECT_MAX_FACES (layer->impl). No GL.
 *            Then, with a drawing backend, the backend's layer_create makes the layer's GPU
 *            objects (layer->gl_impl), reading what create left in layer->impl; then `loaded`
 *            (optional) drops what only loading needed.
 *   layout   every frame, every backend, pure CPU: computes per-face geometry into the layer's
 *            preallocated state and fills layer->inst[slot] (center/size/angle/frame and
 *            `drawn` = whether it will draw). The core has already set layer->inst[slot].drawn
 *            to the visibility (layer visible for that face and the face present); layout may
 *            only clear it (e.g. degenerate geometry, no pose).
 *   draw     the backend's, once per frame for a layer with a drawn instance. Must not allocate.
 *   destroy  the backend's layer_destroy first (GPU objects), then the kind's destroy (CPU
 *            state); both must accept a half-built layer (impl / gl_impl NULL or partly filled).
 *
 * Thread safety: as the public renderer (one thread, the GL context's).
 */
#ifndef KESTREL_AR_INTERNAL_H
#define KESTREL_AR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "src/common.h" /* engine/src: ks__object, ks__object_error */
#include "kestrel/ar.h"
#include "kestrel/effect.h"
#include "kestrel/kestrel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KS__AR_MAX_SLOTS KS_EFFECT_MAX_FACES
#define KS__AR_NUM_MESH_VERTICES 468u /* canonical face mesh vertices == landmarks used */

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

/* A frame-sized render target (GL names). */
typedef struct ks__ar_target {
    uint32_t texture;
    uint32_t fbo;
} ks__ar_target;

/* Everything a layer sees for one frame. Built by the core before layout; read-only for layers
 * except through the GLES 3 pass helpers (which move `cur`). */
struct ks__ar_ctx {
    int32_t width_px, height_px;
    int64_t timestamp_us;
    double time_s;      /* since the effect started (first frame = 0) */
    uint32_t num_faces; /* present faces, <= max_faces */
    ks__ar_face_ctx faces[KS__AR_MAX_SLOTS];
    bool has_mask; /* the frame has a person mask */
    /* GLES 3 backend only (0 with the null backend): */
    uint32_t camera_texture; /* unit 1: the input frame (app texture or the upload) */
    uint32_t mask_texture;   /* unit 3: the person mask; 0 when the app gave none */
    uint32_t cur;            /* index of the current image in r->targets */
};

/* ---- layers -------------------------------------------------------------------------------- */

/* A layer kind's portable half (layer_<kind>.c); see "Life of a layer" above. */
typedef struct ks__ar_layer_vtable {
    ks_effect_layer_kind kind;
    /* true: the layer is drawn per face (per-face visibility, vanishes with the face);
     * false: frame-wide (lut, background): one instance, inst[0]. */
    bool per_face;
    ks_status (*create)(ks__ar_renderer *r, ks__ar_layer *layer);
    void (*loaded)(ks__ar_renderer *r, ks__ar_layer *layer); /* optional */
    void (*layout)(ks__ar_renderer *r, ks__ar_layer *layer, const ks__ar_ctx *ctx);
    void (*destroy)(ks__ar_renderer *r, ks__ar_layer *layer); /* optional (no impl) */
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
    uint32_t custom_program;  /* GLES 3: the layer's custom shader program (0: none) */
    uint32_t color_param;     /* param index bound to color_param, UINT32_MAX if none */
    uint32_t intensity_param; /* param index bound to intensity_param, UINT32_MAX if none */
    ks__ar_inst inst[KS__AR_MAX_SLOTS];
    void *impl;    /* the kind's CPU state (its create allocates it with ks__ar_alloc) */
    void *gl_impl; /* the backend's state for the layer (its layer_create allocates it) */
};

/* ---- the renderer (shared state the helpers use) ------------------------------------------- */

/* A backend texture (GL name; 0 with the null backend, which keeps the size only). */
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
    const struct ks__ar_backend *backend; /* NULL: the null backend */
    bool creating;                        /* errors also go to the thread error (create failures) */
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
    /* The GLES 3 backend's objects (0 with the null backend). Frame-sized ones: */
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

/* ---- drawing backends ---------------------------------------------------------------------- */

/* Everything of a renderer that touches a GPU API. The core calls a backend only through this
 * table; the null backend is no table (r->backend == NULL): layout, triggers and states run,
 * nothing is drawn. */
typedef struct ks__ar_backend {
    const char *name;
    /* At create, before the parameters and layers: checks the context, makes shared objects. */
    ks_status (*init)(ks__ar_renderer *r);
    /* At destroy, after the layers: frees what init and resize made (half-built too). */
    void (*release)(ks__ar_renderer *r);
    /* A layer's GPU half, after the kind's create (whose layer->impl it may read); its destroy
     * runs before the kind's. */
    ks_status (*layer_create)(ks__ar_renderer *r, ks__ar_layer *layer);
    void (*layer_destroy)(ks__ar_renderer *r, ks__ar_layer *layer);
    /* Frame-sized objects for a frame size (also the layers'); at create when the desc gives a
     * size, else by render on the first frame and on a size change. */
    ks_status (*resize)(ks__ar_renderer *r, int32_t width_px, int32_t height_px);
    /* Draws the laid-out frame (r->ctx, the layers' instances) into `output`. No allocation. */
    ks_status (*render)(ks__ar_renderer *r, const ks_ar_frame *frame, const ks_ar_output *output);
    /* Image parameters: a texture from an effect asset or from RGBA8 pixels (stride 0: tight). */
    ks_status (*texture_from_name)(ks__ar_renderer *r, const ks__ar_layer *layer,
                                   const char *asset_name, ks__ar_texture *out);
    ks_status (*texture_from_rgba)(ks__ar_renderer *r, const uint8_t *pixels, int32_t width_px,
                                   int32_t height_px, size_t stride_bytes, ks__ar_texture *out);
    void (*texture_destroy)(ks__ar_renderer *r, ks__ar_texture *texture);
} ks__ar_backend;

/* The OpenGL ES 3 backend (gles3/backend.c), or NULL in a build without it (no_gles3.c). */
const ks__ar_backend *ks__ar_gles3_backend(void);

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

/* The sprite frame of an instance at this frame's time (loop or hold the last frame). */
uint32_t ks__ar_sprite_frame(const ks_effect_layer *desc, const ks__ar_inst *inst,
                             int64_t timestamp_us);

/* Mean of `num` landmark indices (clamped to the face's count) in pixels. */
void ks__ar_landmark_mean(const ks__ar_face_ctx *face, const uint32_t *indices, uint32_t num,
                          float out_px[2]);

/* The texture of an image parameter bound by the layer (texture_param), or 0. */
uint32_t ks__ar_layer_param_texture(const ks__ar_renderer *r, const ks__ar_layer *layer);

static inline float ks__ar_clamp01(float x) {
    return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x);
}

/* ---- the kind table (the portable halves, layer_<kind>.c) ----------------------------------- */

extern const ks__ar_layer_vtable ks__ar_layer_sticker;
extern const ks__ar_layer_vtable ks__ar_layer_face_texture;
extern const ks__ar_layer_vtable ks__ar_layer_makeup;
extern const ks__ar_layer_vtable ks__ar_layer_beauty;
extern const ks__ar_layer_vtable ks__ar_layer_lut;
extern const ks__ar_layer_vtable ks__ar_layer_background;
extern const ks__ar_layer_vtable ks__ar_layer_mesh3d;

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_AR_INTERNAL_H */
/* INTERFACE READY */
