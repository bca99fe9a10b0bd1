/* Kestrel AR renderer: plays a .kfx effect package (see kestrel/effect.h) on camera frames with
 * OpenGL ES 3.0, driven by face landmarks, head pose, expressions and a person mask.
 *
 * Usage (the app owns the GL context; it must be current on the calling thread):
 *     ks_effect *fx = NULL;
 *     ks_effect_open_file("cat_ears.kfx", NULL, &fx);
 *     ks_ar_renderer *ar = NULL;
 *     if (ks_ar_renderer_create(NULL, fx, &ar) != KS_STATUS_OK)    // compiles, uploads, allocates
 *         fprintf(stderr, "%s\n", ks_last_error(NULL));
 *     ks_ar_set_param_color(ar, "lip_color", (const float[4]){0.7f, 0.1f, 0.2f, 1.0f});
 *     for (each camera frame) {
 *         ks_ar_face faces[KS_AR_MAX_FACES];
 *         for (uint32_t i = 0; i < meshes->count && i < KS_AR_MAX_FACES; i++)
 *             ks_ar_face_from_mesh(&meshes->items[i], &faces[i]);   // from ks_face_landmarker
 *         ks_ar_frame frame = { .width_px = w, .height_px = h, .timestamp_us = t,
 *                               .texture = camera_tex, .num_faces = meshes->count,
 *                               .faces = faces,
 *                               .mask = { .pixels = seg->mask_u8, .width_px = seg->width_px,
 *                                         .height_px = seg->height_px } };
 *         ks_ar_output out = { .to_framebuffer = 1, .framebuffer = 0 };  // or .texture / .pixels
 *         if (ks_ar_render(ar, &frame, &out) != KS_STATUS_OK)
 *             fprintf(stderr, "%s\n", ks_last_error(ar));
 *     }
 *     ks_ar_renderer_destroy(ar);   // with the same context current
 *     ks_effect_destroy(fx);        // after the renderer
 *
 * Backends: KS_AR_BACKEND_GLES3 draws with the caller's current OpenGL ES 3.0 context (the
 * library never creates a context, surface or window). KS_AR_BACKEND_NULL runs all layout,
 * trigger and state logic without any GL call (unit tests, servers, logic-only hosts); it is the
 * only backend of a build without GLES 3 (KS_AR_GLES=OFF).
 *
 * Conventions: image row 0 is the TOP row everywhere (pixels, input and output textures, masks);
 * only the final draw into a framebuffer (ks_ar_output.to_framebuffer) is flipped to GL's
 * bottom-up window convention. Landmarks are frame pixels (x right, y down, z scaled like x).
 * Colours are straight-alpha RGBA8.
 *
 * Memory: everything is created at ks_ar_renderer_create (programs, textures, per-face buffers)
 * or when the frame size changes (the frame-sized render targets). ks_ar_render never allocates.
 *
 * Thread safety: a renderer is used by one thread at a time, the thread whose GL context is
 * current (any thread for the null backend). Renderers sharing one context must be used from
 * that context's thread.
 */
#ifndef KESTREL_AR_H
#define KESTREL_AR_H

#include <stddef.h>
#include <stdint.h>

#include "kestrel/effect.h"
#include "kestrel/kestrel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KS_AR_MAX_FACES 8u       /* == KS_EFFECT_MAX_FACES */
#define KS_AR_MAX_LANDMARKS 478u /* 468 mesh points + 10 iris points */

typedef enum ks_ar_backend {
    KS_AR_BACKEND_GLES3 = 0, /* default: the caller's current OpenGL ES 3.0 context */
    KS_AR_BACKEND_NULL = 1,  /* no GL: layout, triggers and states only */
    KS_AR_BACKEND_COUNT
} ks_ar_backend;

/* "gles3", "null"; "invalid" otherwise. */
KS_API const char *ks_ar_backend_string(ks_ar_backend backend);

/* Zero means the default shown. */
typedef struct ks_ar_renderer_desc {
    ks_ar_backend backend;         /* GLES3 */
    const ks_allocator *allocator; /* NULL: malloc (CPU memory only; GL objects are the driver's) */
    /* Frame size to allocate the render targets for at create (0: at the first frame). A frame
     * of another size reallocates them once (a resize, not a per-frame cost). */
    int32_t width_px, height_px;
} ks_ar_renderer_desc;

/* Expression scores, each in [0, 1], 0 at a neutral face (see kestrel/face.h). */
typedef struct ks_ar_expressions {
    float mouth_open;
    float left_eye_blink, right_eye_blink;
    float brow_raise;
    float smile;
} ks_ar_expressions;

/* One face of a frame. Plain data the app fills (ks_ar_face_from_mesh does it from the face
 * landmarker); nothing is kept after ks_ar_render returns. */
typedef struct ks_ar_face {
    /* Tracking id: the same face keeps the same id across frames (ks_face_mesh.id in VIDEO
     * mode). A face whose id is not in the previous frame is a new face (face_found). -1: no
     * tracking; faces are then matched to the previous frame's by their order. */
    int32_t id;
    uint32_t num_landmarks;     /* 468 or 478 */
    const float *landmarks_xyz; /* num_landmarks (x, y, z) triples, frame pixels */
    /* Canonical face model (cm) -> camera space, ROW-major 4x4 (as ks_face_mesh); camera at the
     * origin looking down -z. has_pose == 0: no pose (mesh3d layers are then not drawn). */
    int32_t has_pose;
    float pose_matrix[16];
    /* Row-major OpenGL perspective of that camera; all zero: the default camera (63 degree
     * vertical field of view, near 1, far 10000, aspect = frame width / height). */
    float projection_matrix[16];
    ks_ar_expressions expressions;
} ks_ar_face;

/* Person mask: 0 = background, 255 (or 1.0) = person. Sampled stretched over the frame (it may
 * be smaller, e.g. the segmenter's own size). Give a texture (R channel used) or 8-bit pixels;
 * none (both zero) means "everything is person" (background layers draw nothing). */
typedef struct ks_ar_mask {
    uint32_t texture;      /* GL_TEXTURE_2D name, or 0 */
    const uint8_t *pixels; /* width_px * height_px bytes (row stride stride_bytes), or NULL */
    int32_t width_px, height_px;
    size_t stride_bytes; /* 0: width_px */
} ks_ar_mask;

typedef struct ks_ar_frame {
    int32_t width_px, height_px; /* 1..4096 each */
    int64_t timestamp_us;        /* drives animations; the first frame's is time 0 */
    /* The camera image: a GL_TEXTURE_2D name (RGBA, row 0 = top; sampled, never modified) or
     * RGBA8 pixels (uploaded into a texture made at create/resize). Exactly one (null backend:
     * neither is needed; the texture wins when both are given). */
    uint32_t texture;
    const uint8_t *pixels;
    size_t stride_bytes; /* of pixels; 0: width_px * 4 */
    uint32_t num_faces;  /* faces beyond the effect's max_faces are ignored (first ones kept) */
    const ks_ar_face *faces;
    ks_ar_mask mask;
} ks_ar_frame;

/* Where the rendered frame goes; any combination, at least one. */
typedef struct ks_ar_output {
    /* Non-zero: the frame is drawn into this GL_TEXTURE_2D (RGBA8, frame size, row 0 = top). */
    uint32_t texture;
    /* Non-zero: the frame is drawn into `framebuffer` (0 = the window's default framebuffer),
     * viewport (0, 0, width, height), flipped so the image appears upright on screen. */
    int32_t to_framebuffer;
    uint32_t framebuffer;
    /* Non-NULL: the frame is read back as RGBA8 here (row 0 = top; height_px rows of
     * stride_bytes, 0: width_px * 4). The readback waits for the GPU. */
    uint8_t *pixels;
    size_t stride_bytes;
} ks_ar_output;

typedef struct ks_ar_renderer ks_ar_renderer;

/* Creates a renderer for `effect` (which must outlive the renderer): every layer is created up
 * front (programs compiled and checked, textures uploaded, buffers allocated). With the GLES3
 * backend an OpenGL ES 3.0 context must be current. desc may be NULL. On failure *out is
 * untouched and ks_last_error(NULL) names the layer, asset or shader and the GL info log.
 * Statuses: INVALID_ARGUMENT, UNSUPPORTED (a layer kind or GL feature this build cannot draw;
 * KS_AR_BACKEND_GLES3 in a build without the GLES 3 backend, configured with KS_AR_GLES=OFF),
 * INVALID_MODEL (an asset that does not decode, a custom shader that does not compile),
 * OUT_OF_MEMORY, INTERNAL (a GL error). */
KS_API ks_status ks_ar_renderer_create(const ks_ar_renderer_desc *desc, const ks_effect *effect,
                                       ks_ar_renderer **out);
/* Frees the renderer and its GL objects (the same context must be current). NULL is a no-op. */
KS_API void ks_ar_renderer_destroy(ks_ar_renderer *renderer);

/* Live swap (docs/delivery.md): replaces the renderer's effect between two frames, e.g. with a
 * newer version installed by the store (open it with ks_effect_open on any thread first). Call
 * on the rendering thread with the context current, between ks_ar_render calls: every layer of
 * `effect` is created as by ks_ar_renderer_create (same backend, allocator and frame size); on
 * success the next frame draws the new effect (parameters at its defaults, states and
 * animations from its start) and the old effect's GL objects are released now, so the old
 * ks_effect may be destroyed once this returns; `effect` must outlive the renderer (or the next
 * swap). On failure (the statuses of create) nothing changes: the renderer keeps drawing the
 * old effect, and ks_last_error(renderer) says why. */
KS_API ks_status ks_ar_renderer_swap_effect(ks_ar_renderer *renderer, const ks_effect *effect);

/* Run-time parameters (ks_effect_param). The value is used from the next ks_ar_render on.
 * INVALID_ARGUMENT when the name is unknown, the type differs or the value is out of range
 * (floats: [min, max]; colours: [0, 1] each; enums: one of the options). */
KS_API ks_status ks_ar_set_param_color(ks_ar_renderer *renderer, const char *name,
                                       const float rgba[4]);
KS_API ks_status ks_ar_set_param_float(ks_ar_renderer *renderer, const char *name, float value);
KS_API ks_status ks_ar_set_param_enum(ks_ar_renderer *renderer, const char *name,
                                      const char *option);
/* Image parameter: RGBA8 pixels (row 0 = top, not kept after return; uploaded now, so this
 * call may allocate GPU memory). width/height 1..KS_EFFECT_MAX_TEXTURE_PX. pixels == NULL
 * restores the default image. */
KS_API ks_status ks_ar_set_param_image(ks_ar_renderer *renderer, const char *name,
                                       const uint8_t *pixels, int32_t width_px, int32_t height_px,
                                       size_t stride_bytes);
/* Sets a parameter from text, as command lines give it: colours "#RRGGBB[AA]" or "r,g,b[,a]",
 * floats "0.5", enums the option name. Image parameters are refused (UNSUPPORTED). */
KS_API ks_status ks_ar_set_param_string(ks_ar_renderer *renderer, const char *name,
                                        const char *value);

/* Enters a state by name for every face currently tracked and for the frame-wide layers (as if a
 * trigger had fired on every face). INVALID_ARGUMENT for an unknown name. */
KS_API ks_status ks_ar_enter_state(ks_ar_renderer *renderer, const char *state);
/* Forgets all faces and states, as if the effect had just been loaded (the next frame's
 * timestamp becomes time 0). */
KS_API void ks_ar_reset(ks_ar_renderer *renderer);

/* Renders one frame: updates face tracking, fires triggers (state actions apply in this frame),
 * lays out every layer and, with the GLES3 backend, draws them in order over the camera image
 * into `output` (the null backend ignores output). Leaves the context's framebuffer, program,
 * texture, buffer, vertex-array, blend, depth, cull and viewport bindings/state changed (the app
 * re-binds what it needs; the renderer re-binds everything it uses each frame). Never allocates.
 * Statuses: INVALID_ARGUMENT (bad sizes, no input, bad landmarks count), INTERNAL (a GL error;
 * message in ks_last_error(renderer)). */
KS_API ks_status ks_ar_render(ks_ar_renderer *renderer, const ks_ar_frame *frame,
                              const ks_ar_output *output);

/* What one layer did in the last rendered frame, for one face. */
typedef struct ks_ar_layer_instance {
    int32_t drawn;         /* non-zero: drawn (visible, its face present, geometry valid) */
    int32_t face_id;       /* the face's id (-1 for frame-wide layers or untracked faces) */
    uint32_t sprite_frame; /* sprite layers: frame index shown */
    float center_px[2];    /* sticker: sprite centre; face layers: anchor / face centre */
    float size_px[2];      /* sticker: sprite width and height in pixels */
    float angle_rad;       /* sticker: rotation (face roll), counter-clockwise on screen */
} ks_ar_layer_instance;

/* Layer `layer_index` (manifest order) for `face_index` (index into the last frame's faces;
 * 0 for frame-wide layers: lut, background). A face index past the last frame's faces (or past
 * max_faces) reports drawn == 0. INVALID_ARGUMENT for a layer index out of range, a face index
 * >= KS_AR_MAX_FACES, or a non-zero face index of a frame-wide layer. */
KS_API ks_status ks_ar_get_layer_instance(const ks_ar_renderer *renderer, uint32_t layer_index,
                                          uint32_t face_index, ks_ar_layer_instance *out);

typedef struct ks_ar_stats {
    uint32_t num_faces;        /* faces rendered in the last frame (<= max_faces) */
    uint32_t num_layers_drawn; /* layer draws (one per layer and face) */
    uint32_t num_passes;       /* full-frame passes (copies and composites) */
    uint32_t num_triggers_fired;
    double cpu_ms; /* CPU time of the last ks_ar_render (GL calls are asynchronous) */
} ks_ar_stats;

KS_API ks_status ks_ar_get_stats(const ks_ar_renderer *renderer, ks_ar_stats *out);

/* Fills `out` from a face-landmarker result (struct ks_face_mesh of kestrel/face.h): id, the
 * landmark pointer (out->landmarks_xyz points INTO mesh->landmarks; keep the mesh alive until
 * ks_ar_render returns), pose, projection and expressions (brow_raise, smile and mouth_open
 * copied; blinks per eye). INVALID_ARGUMENT for NULL or a landmark count other than 468/478. */
struct ks_face_mesh;
KS_API ks_status ks_ar_face_from_mesh(const struct ks_face_mesh *mesh, ks_ar_face *out);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_AR_H */
