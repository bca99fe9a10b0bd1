/* The makeup layer's CPU state (layer_makeup.c), which its GL half (gles3/makeup.c) draws from.
 * Internal. */
#ifndef KESTREL_AR_LAYER_MAKEUP_H
#define KESTREL_AR_LAYER_MAKEUP_H

#include "ar_internal.h"
#include "face_regions.h"

typedef struct ks__ar_makeup {
    ks__face_region_mesh *mesh;
    uint32_t max_faces;
    float *xya;         /* max_faces * num_vertices * 3: this frame's vertices, packed */
    uint32_t num_drawn; /* faces laid out this frame (packed in xya in this order) */
    uint32_t drawn_slot[KS__AR_MAX_SLOTS];
    bool use_mask; /* coverage from the UV mask texture on the face mesh */
} ks__ar_makeup;

#endif /* KESTREL_AR_LAYER_MAKEUP_H */
