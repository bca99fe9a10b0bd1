/* mesh3d layer: a glb model attached to the head pose, hidden behind the head.
 *
 * Space: the glb is read in the canonical face model space (face_geometry.h: centimetre-like
 * units, origin at the head centre, x towards the subject's left = image right for a frontal
 * face, y up, z towards the camera), as docs/effects-format.md specifies. The layer's anchor
 * moves the model origin to the canonical position of the anchor landmarks (plus the offset in
 * canonical face widths along canonical x and -y, since the manifest's y points down) and
 * `scale` scales it uniformly about that origin:
 *     model = pose * T(anchor) * S(scale),   mvp = F * projection * model
 * where F = diag(1, -1, 1, 1) turns GL's "NDC +y = image top" into the renderer's target
 * convention (row 0 = top at NDC -1). F mirrors, so front faces are clockwise on screen.
 *
 * This file: the glb (parsed and checked at create, kept until the backend has uploaded it), the
 * anchor and, per frame and face, the matrices and the visibility test; gles3/mesh3d.c draws
 * (occlusion, shading, passes: described there). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "layer_mesh3d.h"

/* ---- matrices (column-major, m[col * 4 + row]) ---------------------------------------------- */

static void mat_mul(const float *a, const float *b, float *out) {
    float t[16];
    for (int c = 0; c < 4; c++)
        for (int r = 0; r < 4; r++) {
            float s = 0.0f;
            for (int k = 0; k < 4; k++)
                s += a[k * 4 + r] * b[c * 4 + k];
            t[c * 4 + r] = s;
        }
    memcpy(out, t, sizeof t);
}

static void mat_apply(const float *m, const float *p, float out[4]) {
    for (int r = 0; r < 4; r++)
        out[r] = m[r] * p[0] + m[4 + r] * p[1] + m[8 + r] * p[2] + m[12 + r];
}

/* ---- create --------------------------------------------------------------------------------- */

static ks_status layer_error(ks__ar_renderer *r, const ks__ar_layer *layer, ks_status st,
                             const char *what) {
    return ks__ar_error(r, st, "layer '%s' (mesh3d): %s", layer->desc->name, what);
}

/* Anchor of the model origin in canonical space, from the layer's anchor landmarks. */
static ks_status compute_local(ks__ar_renderer *r, ks__ar_layer *layer, ks__ar_mesh3d *m) {
    const ks_effect_layer *d = layer->desc;
    const ks__ar_face_mesh *fm = &r->mesh;
    float anchor[3] = {0, 0, 0};
    if (d->num_anchor_landmarks) {
        for (uint32_t i = 0; i < d->num_anchor_landmarks; i++) {
            uint32_t k = d->anchor_landmarks[i];
            if (k >= fm->num_vertices) {
                char msg[160];
                snprintf(msg, sizeof msg,
                         "anchor.landmarks[%u]: %u has no canonical position (iris points "
                         "468..477 cannot anchor a mesh; use 0..%u)",
                         i, k, fm->num_vertices ? fm->num_vertices - 1 : 0);
                return layer_error(r, layer, KS_STATUS_INVALID_MODEL, msg);
            }
            for (int c = 0; c < 3; c++)
                anchor[c] += fm->vertices[5 * k + (uint32_t)c];
        }
        for (int c = 0; c < 3; c++)
            anchor[c] /= (float)d->num_anchor_landmarks;
    }
    float face_width = 0.0f;
    if (fm->num_vertices > 454) {
        float dx = fm->vertices[5 * 454] - fm->vertices[5 * 234];
        float dy = fm->vertices[5 * 454 + 1] - fm->vertices[5 * 234 + 1];
        float dz = fm->vertices[5 * 454 + 2] - fm->vertices[5 * 234 + 2];
        face_width = sqrtf(dx * dx + dy * dy + dz * dz);
    }
    anchor[0] += d->anchor_offset[0] * face_width;
    anchor[1] -= d->anchor_offset[1] * face_width;
    float s = d->scale > 0.0f ? d->scale : 1.0f;
    memset(m->local, 0, sizeof m->local);
    m->local[0] = m->local[5] = m->local[10] = s;
    m->local[12] = anchor[0];
    m->local[13] = anchor[1];
    m->local[14] = anchor[2];
    m->local[15] = 1.0f;
    return KS_STATUS_OK;
}

static void mesh3d_destroy(ks__ar_renderer *r, ks__ar_layer *layer);

static ks_status mesh3d_create(ks__ar_renderer *r, ks__ar_layer *layer) {
    const ks_effect_layer *d = layer->desc;
    ks__glb_model *model = NULL;
    ks_status st;
    ks__ar_mesh3d *m = ks__ar_alloc(r, sizeof *m);
    if (!m) return layer_error(r, layer, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    layer->impl = m;
    const ks_effect_asset *asset = ks_effect_find_asset(r->effect, d->mesh);
    if (!asset) {
        char msg[KS_EFFECT_MAX_STRING_BYTES + 40];
        snprintf(msg, sizeof msg, "mesh asset '%s' is missing", d->mesh ? d->mesh : "");
        st = layer_error(r, layer, KS_STATUS_INVALID_MODEL, msg);
        goto error;
    }
    char err[KS_ERROR_CAP - 64];
    st = ks__glb_parse(&r->alloc, asset->data, asset->size_bytes, asset->name, &model, err,
                       sizeof err);
    if (st) {
        layer_error(r, layer, st, err);
        goto error;
    }
    if ((st = compute_local(r, layer, m))) goto error;
    m->num_draws = model->num_draws;
    m->num_materials = model->num_materials;
    memcpy(m->bounds_min, model->bounds_min, sizeof m->bounds_min);
    memcpy(m->bounds_max, model->bounds_max, sizeof m->bounds_max);
    m->draws = ks__ar_alloc(r, (model->num_draws + 1) * sizeof *m->draws);
    m->materials = ks__ar_alloc(r, model->num_materials * sizeof *m->materials);
    if (!m->draws || !m->materials) {
        st = layer_error(r, layer, KS_STATUS_OUT_OF_MEMORY, "out of memory");
        goto error;
    }
    memcpy(m->draws, model->draws, model->num_draws * sizeof *m->draws);
    memcpy(m->materials, model->materials, model->num_materials * sizeof *m->materials);
    m->model = model; /* for the backend's upload; freed by mesh3d_loaded */
    return KS_STATUS_OK;
error:
    ks__glb_destroy(model);
    mesh3d_destroy(r, layer);
    return st;
}

static void mesh3d_loaded(ks__ar_renderer *r, ks__ar_layer *layer) {
    (void)r;
    ks__ar_mesh3d *m = layer->impl;
    ks__glb_destroy(m->model);
    m->model = NULL;
}

static void mesh3d_destroy(ks__ar_renderer *r, ks__ar_layer *layer) {
    ks__ar_mesh3d *m = layer->impl;
    if (!m) return;
    ks__glb_destroy(m->model);
    ks__ar_free(r, m->draws);
    ks__ar_free(r, m->materials);
    ks__ar_free(r, m);
    layer->impl = NULL;
}

/* ---- layout (CPU, every backend) ------------------------------------------------------------ */

static void mesh3d_layout(ks__ar_renderer *r, ks__ar_layer *layer, const ks__ar_ctx *ctx) {
    (void)r;
    ks__ar_mesh3d *m = layer->impl;
    static const float flip[16] = {1, 0, 0, 0, 0, -1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    for (uint32_t i = 0; i < ctx->num_faces; i++) {
        const ks__ar_face_ctx *f = &ctx->faces[i];
        ks__ar_inst *inst = &layer->inst[f->slot];
        if (!inst->drawn) continue;
        if (!f->has_pose || !m || m->num_draws == 0) {
            inst->drawn = false;
            continue;
        }
        float fp[16];
        mat_mul(flip, f->projection, fp);
        mat_mul(f->pose, m->local, m->model_view[f->slot]);
        mat_mul(fp, m->model_view[f->slot], m->mvp[f->slot]);
        mat_mul(fp, f->pose, m->occluder_mvp[f->slot]);
        /* Visibility: the model's box against the clip volume. Hidden when all 8 corners are
         * outside one clip plane (behind the camera counts as outside the near plane). */
        uint32_t outside[6] = {0, 0, 0, 0, 0, 0}, num_front = 0;
        float lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
        bool finite = true;
        for (int c = 0; c < 8; c++) {
            float p[3] = {(c & 1) ? m->bounds_max[0] : m->bounds_min[0],
                          (c & 2) ? m->bounds_max[1] : m->bounds_min[1],
                          (c & 4) ? m->bounds_max[2] : m->bounds_min[2]};
            float q[4];
            mat_apply(m->mvp[f->slot], p, q);
            for (int k = 0; k < 4; k++)
                finite &= isfinite(q[k]) != 0;
            outside[0] += q[0] < -q[3];
            outside[1] += q[0] > q[3];
            outside[2] += q[1] < -q[3];
            outside[3] += q[1] > q[3];
            outside[4] += q[2] < -q[3];
            outside[5] += q[2] > q[3];
            if (q[3] > 1e-6f) {
                num_front++;
                for (int k = 0; k < 2; k++) {
                    float px =
                        (0.5f * q[k] / q[3] + 0.5f) * (float)(k ? ctx->height_px : ctx->width_px);
                    lo[k] = fminf(lo[k], px);
                    hi[k] = fmaxf(hi[k], px);
                }
            }
        }
        bool hidden = !finite;
        for (int k = 0; k < 6; k++)
            hidden |= outside[k] == 8;
        if (hidden) {
            inst->drawn = false;
            continue;
        }
        /* Reported geometry: the projected model origin and the screen box of the corners in
         * front of the camera. */
        float origin[4];
        mat_apply(m->mvp[f->slot], (const float[3]){0, 0, 0}, origin);
        if (origin[3] > 1e-6f) {
            inst->center_px[0] = (0.5f * origin[0] / origin[3] + 0.5f) * (float)ctx->width_px;
            inst->center_px[1] = (0.5f * origin[1] / origin[3] + 0.5f) * (float)ctx->height_px;
        } else {
            inst->center_px[0] = f->center_px[0];
            inst->center_px[1] = f->center_px[1];
        }
        inst->size_px[0] = num_front ? hi[0] - lo[0] : 0.0f;
        inst->size_px[1] = num_front ? hi[1] - lo[1] : 0.0f;
        inst->angle_rad = f->roll_rad;
    }
}

const ks__ar_layer_vtable ks__ar_layer_mesh3d = {.kind = KS_EFFECT_LAYER_MESH3D,
                                                 .per_face = true,
                                                 .create = mesh3d_create,
                                                 .loaded = mesh3d_loaded,
                                                 .layout = mesh3d_layout,
                                                 .destroy = mesh3d_destroy};
