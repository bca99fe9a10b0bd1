/* The beauty layer's CPU state (layer_beauty.c), which its GL half (gles3/beauty.c) draws from.
 * Internal. */
#ifndef KESTREL_AR_LAYER_BEAUTY_H
#define KESTREL_AR_LAYER_BEAUTY_H

#include "ar_internal.h"
#include "face_regions.h"

typedef struct ks__ar_beauty {
    uint32_t max_faces;
    ks__face_region_mesh *skin;
    float *skin_xya;             /* max_faces * skin->num_vertices * 3 */
    float *grid;                 /* max_faces * KS__FACE_WARP_NUM_VERTICES * 4 */
    uint32_t num_skin, num_warp; /* faces laid out this frame, packed */
    float max_face_width_px;
    float skin_box[4]; /* x0, y0, x1, y1 (frame px) of this frame's skin vertices */
    float smoothing, whitening, face_slim, eye_enlarge; /* x intensity, this frame */
} ks__ar_beauty;

#endif /* KESTREL_AR_LAYER_BEAUTY_H */
