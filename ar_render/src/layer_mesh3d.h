/* The mesh3d layer's CPU state (layer_mesh3d.c), which its GL half (gles3/mesh3d.c) uploads and
 * draws from. Internal. */
#ifndef KESTREL_AR_LAYER_MESH3D_H
#define KESTREL_AR_LAYER_MESH3D_H

#include "ar_internal.h"
#include "glb.h"

typedef struct ks__ar_mesh3d {
    /* The parsed glb, from create until the backend has uploaded it (`loaded` frees it). */
    ks__glb_model *model;
    uint32_t num_draws;
    ks__glb_draw *draws;
    uint32_t num_materials;
    ks__glb_material *materials;
    float bounds_min[3], bounds_max[3];
    float local[16]; /* T(anchor) * S(scale), canonical space */
    /* per slot, this frame (layout) */
    float mvp[KS__AR_MAX_SLOTS][16];
    float model_view[KS__AR_MAX_SLOTS][16];
    float occluder_mvp[KS__AR_MAX_SLOTS][16];
} ks__ar_mesh3d;

#endif /* KESTREL_AR_LAYER_MESH3D_H */
