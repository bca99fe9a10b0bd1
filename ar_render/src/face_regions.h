/* Face regions for makeup and beauty: landmark polygons of the MediaPipe 468-point face mesh
 * (lips, eyes, eyebrows, cheeks, eyeshadow area, face oval), triangulated once at load, with a
 * feathered outer band whose geometry is recomputed per frame on the CPU; and the screen-space
 * warp grid of the beauty layer (eye enlarging, face slimming). Internal; not a published API.
 *
 * Usage:
 *     ks__face_region_mesh *m = NULL;
 *     ks__face_region_mesh_create(&alloc, KS_EFFECT_MAKEUP_LIPS, &m);   // at effect load
 *     float *xya = malloc(m->num_vertices * 3 * sizeof(float));         // at effect load
 *     ...every frame, per face:
 *     if (ks__face_region_mesh_compute(m, face->landmarks, face->num_landmarks,
 *                                      face->face_width_px, xya)) {
 *         upload xya; draw indices[0, num_add_indices) with GL_MAX blending (coverage) and
 *         then indices[num_add_indices, +num_hole_indices) with GL_MIN (holes)
 *     }
 *     ks__face_region_mesh_destroy(&alloc, m);
 *
 * Geometry model. A region is a set of parts; each part is a fan (a centre and a closed ring),
 * an open strip (two corresponding rows of vertices, quads between them) or a closed strip (two
 * corresponding closed rings, e.g. the outer and inner lip contours, so the mouth opening is a
 * hole by construction). Every part vertex is a point on the line through two landmarks,
 * lerp(L[a], L[b], t), so contours can be moved off the landmarks (eyeliner thickness, wing)
 * without extra landmarks. Each boundary loop of a part gets a feather band: one extra vertex per
 * loop vertex, offset along the loop's screen-space normal (away from the part, or into the
 * hole for the inner ring of a closed strip) by a per-row fraction of the face width. Vertices
 * carry a coverage alpha: core vertices their row's alpha, feather vertices 0. Hole parts (eyes,
 * brows and mouth cut out of the foundation / skin mask) are the reverse: core 0, feather 1, and
 * are meant to be drawn with MIN blending after the coverage parts, which are drawn with MAX;
 * with those blend equations overlapping triangles (feather over core, left over right) never
 * double-count, so the band may freely overlap its own part.
 *
 * Vertex output: 3 floats per vertex (x_px, y_px, alpha) in the landmarks' pixel space; core
 * vertices first (num_core_vertices), then feather vertices. Indices are per face, uint16.
 *
 * Thread safety: a mesh is immutable after create; compute may run concurrently on different
 * output buffers.
 */
#ifndef KESTREL_AR_FACE_REGIONS_H
#define KESTREL_AR_FACE_REGIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "kestrel/effect.h"
#include "kestrel/kestrel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Landmark count the region tables index into (no iris points needed). */
#define KS__FACE_REGION_MIN_LANDMARKS 468u

typedef struct ks__face_region_vdef {
    uint16_t a, b; /* landmarks; position = L[a] + t * (L[b] - L[a]) */
    float t;
    float alpha;   /* coverage of the core vertex (holes: 0) */
    float feather; /* feather width of its band vertex, in face widths */
} ks__face_region_vdef;

typedef struct ks__face_region_loop_entry {
    uint16_t vertex;                 /* core vertex index */
    int8_t dir;                      /* +1 offset outward from the loop, -1 inward */
    bool hole;                       /* band vertex alpha 1 instead of 0 */
    uint16_t loop_begin, loop_count; /* the closed loop this entry belongs to (entry indices) */
} ks__face_region_loop_entry;

typedef struct ks__face_region_mesh {
    ks_effect_makeup_region region;
    uint32_t num_vertices;      /* core + feather: 3 floats each in the compute output */
    uint32_t num_core_vertices; /* the first ones; the rest are feather vertices */
    uint32_t num_add_indices;   /* coverage triangles (MAX blending) ... */
    uint32_t num_hole_indices;  /* ... then hole triangles (MIN blending) */
    uint16_t *indices;          /* num_add_indices + num_hole_indices */
    /* private */
    ks__face_region_vdef *vdefs;         /* num_core_vertices */
    ks__face_region_loop_entry *entries; /* num_vertices - num_core_vertices */
} ks__face_region_mesh;

/* Builds the triangulation of `region` (a ks_effect_makeup_region; FOUNDATION is also the skin
 * mask of the beauty layer). alloc NULL = malloc. Statuses: INVALID_ARGUMENT (NULL out, unknown
 * region), OUT_OF_MEMORY. Free with ks__face_region_mesh_destroy. */
ks_status ks__face_region_mesh_create(const ks_allocator *alloc, ks_effect_makeup_region region,
                                      ks__face_region_mesh **mesh_out);
/* NULL is a no-op. `alloc` must be the one given to create. */
void ks__face_region_mesh_destroy(const ks_allocator *alloc, ks__face_region_mesh *mesh);

/* Computes this frame's vertices (x_px, y_px, alpha; 3 * num_vertices floats) from
 * `num_landmarks` (x, y, z) triples in pixels. Returns false, leaving `out_xya` unspecified, when
 * there are fewer than KS__FACE_REGION_MIN_LANDMARKS landmarks, a used one is not finite, or
 * face_width_px is not positive and finite. Does not allocate. */
bool ks__face_region_mesh_compute(const ks__face_region_mesh *mesh, const float *landmarks_xyz,
                                  uint32_t num_landmarks, float face_width_px, float *out_xya);

/* ---- beauty warp --------------------------------------------------------------------------- */

/* The warp grid covers a square around the face centre, KS__FACE_WARP_EXTENT face widths from
 * the centre in each direction, with KS__FACE_WARP_GRID x KS__FACE_WARP_GRID vertices. */
#define KS__FACE_WARP_GRID 57u
#define KS__FACE_WARP_EXTENT 1.25f
#define KS__FACE_WARP_NUM_VERTICES (KS__FACE_WARP_GRID * KS__FACE_WARP_GRID)
#define KS__FACE_WARP_NUM_INDICES (6u * (KS__FACE_WARP_GRID - 1u) * (KS__FACE_WARP_GRID - 1u))

/* Fills the grid's triangle indices (KS__FACE_WARP_NUM_INDICES uint16 values). */
void ks__face_warp_indices(uint16_t *indices);

/* Computes the grid vertices for one face: 4 floats per vertex (x_px, y_px of the output
 * position, then x_px, y_px of the source position to sample: a backward map). eye_enlarge and
 * face_slim are in [0, 1] (clamped). The displacement is smooth, fold-free for amounts in
 * [0, 1], and exactly zero on the grid border, so the warped grid meets the unwarped image
 * without a seam. Returns false (out unspecified) on bad landmarks or face width, as
 * ks__face_region_mesh_compute. Does not allocate. */
bool ks__face_warp_compute(const float *landmarks_xyz, uint32_t num_landmarks, float face_width_px,
                           float eye_enlarge, float face_slim, float *out_xyuv);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_AR_FACE_REGIONS_H */
