/* Kestrel AR effect packages (.kfx): reader and validator.
 *
 * An effect package is a zip file with manifest.json at its root plus the assets the manifest
 * names (PNG/JPEG textures and sprite frames, 512x512 LUT PNGs, glb meshes, GLSL ES 3.00
 * fragment shaders). The format is specified in docs/effects-format.md (JSON Schema:
 * docs/effects-format.schema.json). This reader checks everything a renderer relies on, once,
 * at open: zip structure (STORED and DEFLATE only; no encryption, zip64, multi-disk, symlinks,
 * absolute or `..` paths, duplicate names, overlapping entries, zip bombs), CRCs, the named
 * limits below, the manifest's types and ranges, every asset reference, and image dimensions.
 * The package is read into memory only; the library never writes a file.
 *
 * Usage:
 *     ks_effect *fx = NULL;
 *     ks_status st = ks_effect_open_file("cat_ears.kfx", NULL, &fx);
 *     if (st != KS_STATUS_OK) {
 *         // e.g. "cat_ears.kfx: manifest.json: layers[2].anchor.landmarks[1]: expected a
 *         //       landmark index in [0, 478), got 500"
 *         fprintf(stderr, "%s: %s\n", ks_status_string(st), ks_last_error(NULL));
 *         return;
 *     }
 *     const ks_effect_info *info = ks_effect_get_info(fx);
 *     for (uint32_t i = 0; i < ks_effect_num_layers(fx); i++) {
 *         const ks_effect_layer *l = ks_effect_layer_at(fx, i);     // render order
 *         const ks_effect_asset *tex = ks_effect_find_asset(fx, l->texture);
 *         ...upload tex->data (tex->size_bytes bytes, tex->width_px x tex->height_px)...
 *     }
 *     ks_effect_destroy(fx);
 *
 * Thread safety: a ks_effect is immutable after open, so any number of threads may call the
 * accessors of one ks_effect at the same time; open and destroy may run on any thread.
 *
 * Ownership: every pointer returned by an accessor (strings, arrays, asset bytes) is owned by
 * the ks_effect and stays valid until ks_effect_destroy. The open calls do not keep the caller's
 * buffer or path after return.
 *
 * Dependency note: kestrel_effects uses cJSON (JSON), zlib (DEFLATE, CRC-32) and stb_image
 * (image headers) privately; none of their types appear here.
 */
#ifndef KESTREL_EFFECT_H
#define KESTREL_EFFECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kestrel/kestrel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Highest manifest format_version MAJOR this reader understands. Newer majors are refused with
 * KS_STATUS_VERSION_MISMATCH; newer minors of the same major are accepted (unknown keys are
 * ignored, by the format's compatibility rule). */
#define KS_EFFECT_FORMAT_MAJOR 1u
#define KS_EFFECT_FORMAT_MINOR 1u

/* Named safety limits. Packages that exceed one fail with KS_STATUS_LIMIT_EXCEEDED. */
#define KS_EFFECT_MAX_PACKAGE_BYTES (64u << 20) /* the .kfx file itself */
#define KS_EFFECT_MAX_TOTAL_BYTES (128u << 20)  /* sum of all uncompressed entries */
#define KS_EFFECT_MAX_FILE_BYTES (32u << 20)    /* one uncompressed entry */
#define KS_EFFECT_MAX_FILES 512u                /* zip entries, directories included */
#define KS_EFFECT_MAX_NAME_BYTES 255u           /* one entry name */
#define KS_EFFECT_MAX_RATIO 200u              /* uncompressed / compressed bytes of one entry ... */
#define KS_EFFECT_RATIO_MIN_BYTES (1u << 16)  /* ... checked for entries larger than this */
#define KS_EFFECT_MAX_TEXTURE_PX 4096u        /* width or height of any image */
#define KS_EFFECT_LUT_PX 512u                 /* LUT images are exactly 512x512 */
#define KS_EFFECT_MAX_JSON_BYTES (256u << 10) /* manifest.json */
#define KS_EFFECT_MAX_JSON_DEPTH 16u          /* nesting of arrays/objects in the manifest */
#define KS_EFFECT_MAX_LAYERS 64u
#define KS_EFFECT_MAX_PARAMS 64u
#define KS_EFFECT_MAX_TRIGGERS 64u
#define KS_EFFECT_MAX_STATES 64u
#define KS_EFFECT_MAX_ACTIONS 32u /* actions of one state */
#define KS_EFFECT_MAX_FRAMES 256u /* frames of one sprite sequence */
#define KS_EFFECT_MAX_ANCHORS 16u /* landmark indices of one anchor */
#define KS_EFFECT_MAX_OPTIONS 32u /* values of one enum parameter */
#define KS_EFFECT_MAX_FACES 8u
#define KS_EFFECT_MAX_STRING_BYTES 256u /* any manifest string (ids, names, asset names) */
#define KS_EFFECT_NUM_LANDMARKS 478u    /* face mesh landmarks incl. the 10 iris points */

/* Capabilities an effect may require from the host (bit i = 1u << value). On-disk names in
 * brackets. Append-only. */
typedef enum ks_effect_capability {
    KS_EFFECT_CAP_FACE_LANDMARKS = 0,   /* "face_landmarks": 468/478-point face mesh */
    KS_EFFECT_CAP_SEGMENTATION = 1,     /* "segmentation": person/background mask */
    KS_EFFECT_CAP_HAND_LANDMARKS = 2,   /* "hand_landmarks" */
    KS_EFFECT_CAP_POSE_LANDMARKS = 3,   /* "pose_landmarks" */
    KS_EFFECT_CAP_FACE_EXPRESSIONS = 4, /* "face_expressions": mouth/blink/brow/smile scores */
    KS_EFFECT_CAP_COUNT
} ks_effect_capability;

typedef enum ks_effect_layer_kind {
    KS_EFFECT_LAYER_STICKER = 0,      /* 2D sprite anchored to face landmarks */
    KS_EFFECT_LAYER_FACE_TEXTURE = 1, /* texture in the canonical face mesh UV layout */
    KS_EFFECT_LAYER_MAKEUP = 2,       /* coloured region (lips, eyeshadow, ...) */
    KS_EFFECT_LAYER_BEAUTY = 3,       /* smoothing / whitening / reshaping */
    KS_EFFECT_LAYER_LUT = 4,          /* 512x512 colour lookup table */
    KS_EFFECT_LAYER_BACKGROUND = 5,   /* replaces the segmented background */
    KS_EFFECT_LAYER_MESH3D = 6,       /* glb mesh attached to the head pose */
    KS_EFFECT_LAYER_KIND_COUNT
} ks_effect_layer_kind;

typedef enum ks_effect_blend {
    KS_EFFECT_BLEND_NORMAL = 0,
    KS_EFFECT_BLEND_MULTIPLY = 1,
    KS_EFFECT_BLEND_OVERLAY = 2,
    KS_EFFECT_BLEND_SOFT_LIGHT = 3,
    KS_EFFECT_BLEND_COUNT
} ks_effect_blend;

typedef enum ks_effect_makeup_region {
    KS_EFFECT_MAKEUP_LIPS = 0,
    KS_EFFECT_MAKEUP_EYESHADOW = 1,
    KS_EFFECT_MAKEUP_EYELINER = 2,
    KS_EFFECT_MAKEUP_BLUSH = 3,
    KS_EFFECT_MAKEUP_EYEBROWS = 4,
    KS_EFFECT_MAKEUP_FOUNDATION = 5,
    KS_EFFECT_MAKEUP_REGION_COUNT
} ks_effect_makeup_region;

typedef enum ks_effect_param_type {
    KS_EFFECT_PARAM_COLOR = 0, /* RGBA, each in [0, 1] */
    KS_EFFECT_PARAM_FLOAT = 1, /* value in [min, max] */
    KS_EFFECT_PARAM_ENUM = 2,  /* one of `options` */
    KS_EFFECT_PARAM_IMAGE = 3, /* an image the app supplies (default: an asset, or none) */
    KS_EFFECT_PARAM_TYPE_COUNT
} ks_effect_param_type;

typedef enum ks_effect_event {
    KS_EFFECT_EVENT_FACE_FOUND = 0,
    KS_EFFECT_EVENT_FACE_LOST = 1,
    KS_EFFECT_EVENT_MOUTH_OPEN = 2,
    KS_EFFECT_EVENT_BLINK = 3,
    KS_EFFECT_EVENT_BROW_RAISE = 4,
    KS_EFFECT_EVENT_SMILE = 5,
    KS_EFFECT_EVENT_COUNT
} ks_effect_event;

typedef enum ks_effect_action_kind {
    KS_EFFECT_ACTION_SHOW_LAYER = 0,
    KS_EFFECT_ACTION_HIDE_LAYER = 1,
    KS_EFFECT_ACTION_START_ANIMATION = 2, /* restart a layer's sprite sequence at frame 0 */
    KS_EFFECT_ACTION_KIND_COUNT
} ks_effect_action_kind;

typedef enum ks_effect_asset_kind {
    KS_EFFECT_ASSET_OTHER = 0,
    KS_EFFECT_ASSET_PNG = 1,
    KS_EFFECT_ASSET_JPEG = 2,
    KS_EFFECT_ASSET_GLB = 3,
    KS_EFFECT_ASSET_SHADER = 4, /* GLSL ES 3.00 fragment shader source (UTF-8, no NUL) */
    KS_EFFECT_ASSET_MANIFEST = 5,
    KS_EFFECT_ASSET_KIND_COUNT
} ks_effect_asset_kind;

/* How a background layer fills the pixels the person mask marks as background (format 1.1;
 * on-disk "mode", default "replace"). */
typedef enum ks_effect_background_mode {
    KS_EFFECT_BACKGROUND_REPLACE = 0, /* "replace": the layer's image or sprite */
    KS_EFFECT_BACKGROUND_BLUR = 1,    /* "blur": the camera frame, blurred */
    KS_EFFECT_BACKGROUND_MODE_COUNT
} ks_effect_background_mode;

/* Static on-disk names ("face_landmarks", "sticker", "soft_light", "lips", "color",
 * "mouth_open", "show_layer", "png"); "invalid" for out-of-range values. */
KS_API const char *ks_effect_capability_string(ks_effect_capability cap);
KS_API const char *ks_effect_layer_kind_string(ks_effect_layer_kind kind);
KS_API const char *ks_effect_blend_string(ks_effect_blend blend);
KS_API const char *ks_effect_makeup_region_string(ks_effect_makeup_region region);
KS_API const char *ks_effect_param_type_string(ks_effect_param_type type);
KS_API const char *ks_effect_event_string(ks_effect_event event);
KS_API const char *ks_effect_action_kind_string(ks_effect_action_kind kind);
KS_API const char *ks_effect_asset_kind_string(ks_effect_asset_kind kind);
KS_API const char *ks_effect_background_mode_string(ks_effect_background_mode mode);

typedef struct ks_effect ks_effect;

typedef struct ks_effect_desc {
    /* Capabilities the host can provide (bit i = 1u << ks_effect_capability); a package that
     * requires any other is refused with KS_STATUS_UNSUPPORTED. 0 means every capability this
     * version knows. */
    uint32_t host_capabilities;
    /* NULL means malloc/free. Used for every allocation of the reader except cJSON's own
     * (cJSON allocates through its process-wide hooks). */
    const ks_allocator *allocator;
} ks_effect_desc;

/* One zip entry, uncompressed. Directory entries are not listed. */
typedef struct ks_effect_asset {
    const char *name;    /* path inside the package, '/'-separated, no "..", not absolute */
    const uint8_t *data; /* size_bytes bytes (plus one hidden NUL so text can be read) */
    size_t size_bytes;
    ks_effect_asset_kind kind; /* from the content (magic bytes) and the manifest's use */
    uint32_t width_px;         /* images only, else 0 */
    uint32_t height_px;
} ks_effect_asset;

typedef struct ks_effect_info {
    uint32_t version_major, version_minor, version_patch; /* format_version */
    const char *id; /* reverse-DNS style identifier, e.g. "com.example.cat_ears" */
    const char *name;
    const char *author;             /* "" when absent */
    const char *thumbnail;          /* asset name of a PNG/JPEG, "" when absent */
    uint32_t required_capabilities; /* bit i = 1u << ks_effect_capability */
    uint32_t max_faces;             /* 1..KS_EFFECT_MAX_FACES */
} ks_effect_info;

typedef struct ks_effect_param {
    const char *name;
    ks_effect_param_type type;
    float default_color[4];        /* COLOR */
    float min, max, default_value; /* FLOAT */
    uint32_t num_options;          /* ENUM */
    const char *const *options;
    uint32_t default_option;   /* ENUM: index into options */
    const char *default_image; /* IMAGE: asset name, "" when the app must supply one */
} ks_effect_param;

/* A layer. Fields that do not apply to `kind` are zero / "" / NULL. Asset names resolve with
 * ks_effect_find_asset; `*_param` fields name a ks_effect_param (of matching type) that
 * overrides the constant at run time, "" when not bound. */
typedef struct ks_effect_layer {
    const char *name; /* unique among layers; targets of actions */
    ks_effect_layer_kind kind;
    bool visible; /* initial visibility */
    ks_effect_blend blend;
    float opacity; /* [0, 1] */
    /* sticker, mesh3d: anchor = mean of these landmarks, plus offset in face-width units */
    uint32_t num_anchor_landmarks;
    const uint32_t *anchor_landmarks;
    float anchor_offset[2];
    float scale; /* sticker: sprite width in face widths; mesh3d: uniform scale */
    /* sticker, background: sprite sequence (1 frame = still image) */
    uint32_t num_frames;
    const char *const *frames;
    float fps;
    bool loop;
    /* face_texture, background (single image), makeup (optional mask in face UV layout) */
    const char *texture;
    /* makeup */
    ks_effect_makeup_region region;
    float color[4];
    const char *color_param;
    /* makeup, beauty, lut: strength in [0, 1] */
    float intensity;
    const char *intensity_param;
    /* beauty: each in [0, 1] */
    float smoothing, whitening, face_slim, eye_enlarge;
    /* lut: 512x512 PNG (64^3 cube as an 8x8 grid of 64x64 tiles) */
    const char *lut;
    /* mesh3d: binary glTF 2.0 */
    const char *mesh;
    /* optional GLSL ES 3.00 fragment shader replacing the default one ("" when absent) */
    const char *shader;
    /* format 1.1 (appended): */
    ks_effect_background_mode background_mode; /* background */
    float blur_radius; /* background blur: Gaussian radius in frame heights, [0.001, 0.25] */
    /* face_texture, background: an IMAGE parameter that replaces the texture when the app
     * sets it ("" when not bound) */
    const char *texture_param;
} ks_effect_layer;

typedef struct ks_effect_action {
    ks_effect_action_kind kind;
    uint32_t layer; /* index into the layers */
} ks_effect_action;

/* A named set of actions applied when the state is entered. */
typedef struct ks_effect_state {
    const char *name;
    uint32_t num_actions;
    const ks_effect_action *actions;
} ks_effect_state;

/* When `event` fires (expression score crossing `threshold` upwards, or the face event),
 * the effect enters `state`. */
typedef struct ks_effect_trigger {
    ks_effect_event event;
    float threshold; /* expression events only, (0, 1]; default 0.5 */
    uint32_t state;  /* index into the states */
} ks_effect_trigger;

/* Opens a package from memory. Copies what it keeps; `data` may be freed after return. On
 * failure *out is untouched and ks_last_error(NULL) names the package entry, the JSON path and
 * the offending value. desc may be NULL (defaults). Statuses: INVALID_ARGUMENT (NULL pointers),
 * INVALID_MODEL (corrupt zip or manifest, bad reference, undecodable image), UNSUPPORTED
 * (encryption, zip64, multi-disk, compression method, required capability), VERSION_MISMATCH
 * (newer format major), CHECKSUM_MISMATCH (CRC-32), LIMIT_EXCEEDED (a KS_EFFECT_MAX_* limit,
 * zip bomb), OUT_OF_MEMORY. */
KS_API ks_status ks_effect_open_memory(const void *data, size_t size_bytes,
                                       const ks_effect_desc *desc, ks_effect **effect_out);
/* Same, reading the file at `path` (read only; IO_ERROR if it cannot be read). Error messages
 * start with the path. */
KS_API ks_status ks_effect_open_file(const char *path, const ks_effect_desc *desc,
                                     ks_effect **effect_out);
/* Frees the effect and everything its accessors returned. NULL is a no-op. */
KS_API void ks_effect_destroy(ks_effect *effect);

/* Accessors. Out-of-range indices and NULL effects return NULL / 0. */
KS_API const ks_effect_info *ks_effect_get_info(const ks_effect *effect);
KS_API uint32_t ks_effect_num_layers(const ks_effect *effect);
KS_API const ks_effect_layer *ks_effect_layer_at(const ks_effect *effect, uint32_t index);
KS_API uint32_t ks_effect_num_params(const ks_effect *effect);
KS_API const ks_effect_param *ks_effect_param_at(const ks_effect *effect, uint32_t index);
KS_API uint32_t ks_effect_num_states(const ks_effect *effect);
KS_API const ks_effect_state *ks_effect_state_at(const ks_effect *effect, uint32_t index);
/* Index of the state entered at start (the manifest's initial_state); UINT32_MAX if none. */
KS_API uint32_t ks_effect_initial_state(const ks_effect *effect);
KS_API uint32_t ks_effect_num_triggers(const ks_effect *effect);
KS_API const ks_effect_trigger *ks_effect_trigger_at(const ks_effect *effect, uint32_t index);
KS_API uint32_t ks_effect_num_assets(const ks_effect *effect);
KS_API const ks_effect_asset *ks_effect_asset_at(const ks_effect *effect, uint32_t index);
/* Exact, case-sensitive lookup; NULL when absent or name is NULL/"". */
KS_API const ks_effect_asset *ks_effect_find_asset(const ks_effect *effect, const char *name);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_EFFECT_H */
