/* Binary glTF 2.0 (.glb) reader for the mesh3d layer. Internal to ar_render; not a published API.
 *
 * Usage:
 *     char err[256];
 *     ks__glb_model *m = NULL;
 *     ks_status st = ks__glb_parse(NULL, bytes, size, "glasses.glb", &m, err, sizeof err);
 *     if (st != KS_STATUS_OK) { ...err: "glasses.glb: accessors[3].count: ..."... }
 *     ...upload m->vertices (m->num_vertices), m->indices (m->num_indices); one draw call per
 *        m->draws[i] with m->materials[m->draws[i].material]...
 *     ks__glb_destroy(m);
 *
 * The whole scene is flattened at parse: every mesh instance reachable from the default scene
 * (`scene`, else scenes[0], else every root node) is transformed by its node's world matrix
 * (TRS or `matrix`, composed down the hierarchy) into one interleaved vertex array and one u32
 * index array, in the model's own space (glTF: metres, +y up, +z forward). Normals are
 * transformed by the inverse transpose; primitives without NORMAL get smooth normals computed
 * from their triangles; a mirroring transform (negative determinant) flips the winding so front
 * faces stay counter-clockwise.
 *
 * File layout (little endian; glTF 2.0 spec, "GLB File Format Specification"):
 *     header   u32 magic 0x46546C67 ("glTF"), u32 version (2), u32 length (whole file)
 *     chunk 0  u32 chunkLength, u32 chunkType 0x4E4F534A ("JSON"), chunkLength bytes of UTF-8 JSON
 *     chunk 1  optional: u32 chunkLength, u32 chunkType 0x004E4942 ("BIN\0"), binary buffer 0
 *     further chunks of unknown type are skipped.
 * JSON subset read (everything else is ignored; min/max are ignored):
 *     asset.version "2.x" (else VERSION_MISMATCH); extensionsRequired must be empty (UNSUPPORTED)
 *     buffers[0] without uri = the BIN chunk (byteLength <= chunk length); other buffers may exist
 *         but a bufferView that uses them is UNSUPPORTED (external data is never loaded)
 *     bufferViews[i]: buffer, byteOffset, byteLength, byteStride (4..252, multiple of 4)
 *     accessors[i]: bufferView (absent = zeros), byteOffset, componentType, normalized, count,
 *         type; `sparse` is UNSUPPORTED. Every element must lie inside its view and buffer.
 *     meshes[i].primitives[j]: mode 4 (TRIANGLES, the default; other modes UNSUPPORTED),
 *         attributes POSITION (float VEC3, required), NORMAL (float VEC3), TEXCOORD_0 (VEC2 of
 *         float, or normalized u8/u16), indices (SCALAR u8/u16/u32; absent = 0..count-1, which
 *         must be a multiple of 3), material
 *     nodes[i]: children, mesh, matrix (16 floats, column-major) or translation/rotation
 *         (quaternion x,y,z,w)/scale; every node is reached at most once (a node with two
 *         parents or a cycle is INVALID_MODEL), depth <= KS__GLB_MAX_DEPTH
 *     materials[i]: pbrMetallicRoughness.baseColorFactor, pbrMetallicRoughness.baseColorTexture
 *         .index -> textures[k].source -> images[n] with bufferView + mimeType image/png or
 *         image/jpeg (image bytes are copied, not decoded: the renderer decodes them; images with
 *         a uri are UNSUPPORTED), alphaMode OPAQUE/MASK/BLEND, alphaCutoff, doubleSided
 * Every count, index, offset and number is checked; failures name the JSON path, e.g.
 * "hat.glb: accessors[3].count: 70000 elements of 12 bytes at byteOffset 0 do not fit
 * bufferViews[1] (byteLength 48)".
 *
 * Thread safety: a parsed model is immutable and may be shared; parse is reentrant.
 */
#ifndef KESTREL_AR_GLB_H
#define KESTREL_AR_GLB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kestrel/kestrel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Named limits; exceeding one is KS_STATUS_LIMIT_EXCEEDED. */
#define KS__GLB_MAX_FILE_BYTES (32u << 20)    /* the whole .glb (= KS_EFFECT_MAX_FILE_BYTES) */
#define KS__GLB_MAX_JSON_BYTES (4u << 20)     /* JSON chunk */
#define KS__GLB_MAX_JSON_DEPTH 32u            /* nesting of JSON arrays/objects */
#define KS__GLB_MAX_ELEMENTS 4096u            /* entries of any top-level array (accessors, ...) */
#define KS__GLB_MAX_PRIMITIVES 256u           /* primitives of one mesh */
#define KS__GLB_MAX_DRAWS 1024u               /* primitive instances in the flattened scene */
#define KS__GLB_MAX_NODES 4096u               /* nodes */
#define KS__GLB_MAX_DEPTH 32u                 /* node hierarchy depth (roots at depth 1) */
#define KS__GLB_MAX_VERTICES (1u << 18)       /* flattened vertices */
#define KS__GLB_MAX_INDICES (3u * (1u << 19)) /* flattened indices */
#define KS__GLB_MAX_COORD 1e9f /* |position|, |normal|, |uv| components (INVALID_MODEL above) */

typedef enum ks__glb_alpha_mode {
    KS__GLB_ALPHA_OPAQUE = 0,
    KS__GLB_ALPHA_MASK = 1,
    KS__GLB_ALPHA_BLEND = 2,
    KS__GLB_ALPHA_COUNT
} ks__glb_alpha_mode;

typedef enum ks__glb_image_format {
    KS__GLB_IMAGE_PNG = 0,
    KS__GLB_IMAGE_JPEG = 1,
    KS__GLB_IMAGE_FORMAT_COUNT
} ks__glb_image_format;

/* Interleaved, 32 bytes: the layout uploaded to the VBO as is. */
typedef struct ks__glb_vertex {
    float position[3];
    float normal[3]; /* unit length */
    float uv[2];     /* 0,0 when the primitive has no TEXCOORD_0 */
} ks__glb_vertex;

typedef struct ks__glb_material {
    float base_color[4]; /* linear RGBA factor, each in [0, 1]; default 1,1,1,1 */
    ks__glb_alpha_mode alpha_mode;
    float alpha_cutoff; /* MASK only; default 0.5 */
    bool double_sided;
    int32_t base_color_image; /* index into images, -1 when untextured */
} ks__glb_material;

/* An embedded, still encoded image (bytes owned by the model). */
typedef struct ks__glb_image {
    ks__glb_image_format format;
    const uint8_t *data;
    size_t size_bytes;
} ks__glb_image;

/* One primitive instance: indices [first_index, first_index + num_indices) of the model. */
typedef struct ks__glb_draw {
    uint32_t first_index;
    uint32_t num_indices; /* a multiple of 3 */
    uint32_t material;    /* index into materials */
} ks__glb_draw;

typedef struct ks__glb_model {
    uint32_t num_vertices;
    ks__glb_vertex *vertices;
    uint32_t num_indices;
    uint32_t *indices; /* every value < num_vertices */
    uint32_t num_draws;
    ks__glb_draw *draws;
    /* The file's materials plus one default material (white, opaque) at the end, used by
     * primitives without `material`. num_materials >= 1. */
    uint32_t num_materials;
    ks__glb_material *materials;
    uint32_t num_images;
    ks__glb_image *images;
    float bounds_min[3], bounds_max[3]; /* of the flattened positions; 0 when empty */
    ks_allocator alloc;                 /* private */
} ks__glb_model;

/* Parses the glb in `data` (not kept). `name` (may be NULL) starts every error message. On
 * failure *model_out is untouched, err (err_cap bytes, may be NULL/0) holds the message and
 * nothing is allocated. A scene without any triangle is valid (num_draws == 0).
 * Statuses: INVALID_ARGUMENT, INVALID_MODEL, UNSUPPORTED, VERSION_MISMATCH, LIMIT_EXCEEDED,
 * OUT_OF_MEMORY. */
ks_status ks__glb_parse(const ks_allocator *alloc, const uint8_t *data, size_t size_bytes,
                        const char *name, ks__glb_model **model_out, char *err, size_t err_cap);

/* NULL is a no-op. */
void ks__glb_destroy(ks__glb_model *model);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_AR_GLB_H */
