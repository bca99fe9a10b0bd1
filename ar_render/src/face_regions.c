/* Face region tables and their triangulation; the beauty warp grid. See face_regions.h.
 *
 * The index lists are facts about MediaPipe's 468-point face mesh topology (the contours its
 * face_mesh_connections name: lips, eyes, eyebrows, face oval, plus the eye "rings" around each
 * eye and the cheek vertices). "Right" is the subject's right eye (landmark 33, image left for a
 * frontal face). Every right-side list below has its left twin at the mirrored vertex of the
 * canonical mesh (checked against the canonical model: same position with x negated).
 *
 * Why strips and fans rather than a general ear clipper: every region is either star-shaped
 * around a fixed landmark (fan: cheek, eye, mouth, face oval) or a band between two contours
 * that the mesh topology pairs vertex by vertex (strip: lips between outer and inner contour,
 * eyeliner, eyeshadow, brows). Those triangulations depend only on the topology, so they are
 * built once at load and stay valid while the face moves, turns and opens its mouth; an ear
 * clipper run on one pose could produce triangles that fold in another.
 */
#include "face_regions.h"

#include "base/alloc.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PART_FAN = 0, PART_OPEN_STRIP = 1, PART_CLOSED_STRIP = 2 };

typedef struct row_def {
    const uint16_t *a; /* landmarks */
    const uint16_t *b; /* NULL: same as a */
    const float *t;    /* NULL: 0 */
    float alpha;
    const float *alphas; /* per-vertex alpha (times `alpha`); NULL: 1 */
    float feather;       /* face widths */
} row_def;

/* fan: row0 = closed ring of n, row1 = the centre (1 vertex).
 * open strip: row0 and row1 of n each, paired; boundary = row0 forward + row1 backward.
 * closed strip: two closed rings of n, paired; row0 is the outer ring, row1 the inner one. */
typedef struct part_def {
    uint8_t kind;
    bool hole;
    uint8_t n;
    row_def row0, row1;
} part_def;

typedef struct region_def {
    uint32_t num_parts;
    const part_def *parts;
} region_def;

/* ---- landmark lists ------------------------------------------------------------------------ */

/* Lips: outer and inner contours, paired vertex by vertex (61-78 corner, 0-13 top, 17-14
 * bottom), starting at the right corner, over the upper lip, back under the lower lip. */
static const uint16_t LIPS_OUTER[20] = {61,  185, 40,  39,  37,  0,  267, 269, 270, 409,
                                        291, 375, 321, 405, 314, 17, 84,  181, 91,  146};
static const uint16_t LIPS_INNER[20] = {78,  191, 80,  81,  82,  13, 312, 311, 310, 415,
                                        308, 324, 318, 402, 317, 14, 87,  178, 88,  95};

/* Eye contours (eyelid margin), outer corner first, upper lid, then lower lid. */
static const uint16_t EYE_R[16] = {33,  246, 161, 160, 159, 158, 157, 173,
                                   133, 155, 154, 153, 145, 144, 163, 7};
static const uint16_t EYE_L[16] = {263, 466, 388, 387, 386, 385, 384, 398,
                                   362, 382, 381, 380, 374, 373, 390, 249};
/* First ring around each eye, paired with the contour above. */
static const uint16_t EYE_RING1_R[16] = {130, 247, 30, 29, 27, 28, 56,  190,
                                         243, 112, 26, 22, 23, 24, 110, 25};
static const uint16_t EYE_RING1_L[16] = {359, 467, 260, 259, 257, 258, 286, 414,
                                         463, 341, 256, 252, 253, 254, 339, 255};
/* Eyeliner thickness along the contour, as a fraction of the way to ring 1: thick on the upper
 * lid, thin on the lower one, and past ring 1 at the outer corner (the wing). */
static const float EYELINER_T[16] = {1.45f, 0.75f, 0.7f,  0.62f, 0.55f, 0.5f,  0.45f, 0.38f,
                                     0.25f, 0.18f, 0.16f, 0.15f, 0.15f, 0.16f, 0.2f,  0.35f};
/* Upper lid (corner to corner) and the second ring above it (brow bone), paired. */
static const uint16_t UPPER_LID_R[9] = {33, 246, 161, 160, 159, 158, 157, 173, 133};
static const uint16_t UPPER_LID_L[9] = {263, 466, 388, 387, 386, 385, 384, 398, 362};
static const uint16_t EYE_RING2_UP_R[9] = {226, 113, 225, 224, 223, 222, 221, 189, 244};
static const uint16_t EYE_RING2_UP_L[9] = {446, 342, 445, 444, 443, 442, 441, 413, 464};

/* Eyebrows: upper and lower edge, tail to head, paired. */
static const uint16_t BROW_UP_R[5] = {70, 63, 105, 66, 107};
static const uint16_t BROW_LO_R[5] = {46, 53, 52, 65, 55};
static const uint16_t BROW_UP_L[5] = {300, 293, 334, 296, 336};
static const uint16_t BROW_LO_L[5] = {276, 283, 282, 295, 285};

/* Cheeks: a ring around the cheekbone apple (centre 50 / 280). */
static const uint16_t CHEEK_RING_R[8] = {116, 117, 118, 101, 205, 187, 147, 123};
static const uint16_t CHEEK_RING_L[8] = {345, 346, 347, 330, 425, 411, 376, 352};
static const uint16_t CHEEK_CENTRE_R[1] = {50};
static const uint16_t CHEEK_CENTRE_L[1] = {280};

/* Face oval, clockwise on the image from the forehead top (10). */
static const uint16_t FACE_OVAL[36] = {10,  338, 297, 332, 284, 251, 389, 356, 454, 323, 361, 288,
                                       397, 365, 379, 378, 400, 377, 152, 148, 176, 149, 150, 136,
                                       172, 58,  132, 93,  234, 127, 162, 21,  54,  103, 67,  109};
static const uint16_t NOSE_CENTRE[1] = {195};
/* Centres of the eye and mouth holes: midpoints of two landmarks. */
static const uint16_t EYE_MID_A_R[1] = {33}, EYE_MID_B_R[1] = {133};
static const uint16_t EYE_MID_A_L[1] = {263}, EYE_MID_B_L[1] = {362};
static const uint16_t MOUTH_MID_A[1] = {13}, MOUTH_MID_B[1] = {14};
static const float HALF[1] = {0.5f};

/* ---- regions --------------------------------------------------------------------------------
 * Feather widths (face widths) were chosen by eye on the golden renders: wide for blush and the
 * eyeshadow's upper edge, a couple of pixels at 720p for the eyeliner and the edges that face
 * the eye or the mouth opening (so colour never spills onto the eyeball or the teeth). */

#define ROW(list, alpha_, feather_)                                                                \
    { (list), NULL, NULL, (alpha_), NULL, (feather_) }
#define ROWA(list, alphas_, feather_)                                                              \
    { (list), NULL, NULL, 1.0f, (alphas_), (feather_) }
#define ROWTA(la, lb, t_, alphas_, feather_)                                                       \
    { (la), (lb), (t_), 1.0f, (alphas_), (feather_) }
#define ROWT(la, lb, t_, alpha_, feather_)                                                         \
    { (la), (lb), (t_), (alpha_), NULL, (feather_) }

static const part_def LIPS_PARTS[] = {
    {PART_CLOSED_STRIP, false, 20, ROW(LIPS_OUTER, 1.0f, 0.03f), ROW(LIPS_INNER, 1.0f, 0.008f)},
};

/* Eyeshadow: from the upper lid to the brow bone, fading upwards and towards both ends; the
 * ring-2 corners (226, 244) sit low and far out, so they are pulled halfway to their neighbours
 * to keep the colour off the temple and the nose bridge. */
static const uint16_t SHADOW_TOP_B_R[9] = {113, 113, 225, 224, 223, 222, 221, 189, 189};
static const uint16_t SHADOW_TOP_B_L[9] = {342, 342, 445, 444, 443, 442, 441, 413, 413};
static const float SHADOW_TOP_T[9] = {0.5f, 0, 0, 0, 0, 0, 0, 0, 0.5f};
static const float SHADOW_LID_ALPHA[9] = {0.5f, 1, 1, 1, 1, 1, 1, 0.8f, 0.4f};
static const float SHADOW_TOP_ALPHA[9] = {0.1f,  0.35f, 0.45f, 0.45f, 0.45f,
                                          0.45f, 0.4f,  0.3f,  0.1f};

static const part_def EYESHADOW_PARTS[] = {
    {PART_OPEN_STRIP, false, 9, ROWA(UPPER_LID_R, SHADOW_LID_ALPHA, 0.006f),
     ROWTA(EYE_RING2_UP_R, SHADOW_TOP_B_R, SHADOW_TOP_T, SHADOW_TOP_ALPHA, 0.06f)},
    {PART_OPEN_STRIP, false, 9, ROWA(UPPER_LID_L, SHADOW_LID_ALPHA, 0.006f),
     ROWTA(EYE_RING2_UP_L, SHADOW_TOP_B_L, SHADOW_TOP_T, SHADOW_TOP_ALPHA, 0.06f)},
};

static const part_def EYELINER_PARTS[] = {
    {PART_CLOSED_STRIP, false, 16, ROWT(EYE_R, EYE_RING1_R, EYELINER_T, 1.0f, 0.012f),
     ROW(EYE_R, 1.0f, 0.004f)},
    {PART_CLOSED_STRIP, false, 16, ROWT(EYE_L, EYE_RING1_L, EYELINER_T, 1.0f, 0.012f),
     ROW(EYE_L, 1.0f, 0.004f)},
};

/* Blush: an outer ring, a middle ring halfway to the apple and the apple itself, so the colour
 * falls off in two linear steps (0.35 -> 0.8 -> 1) instead of one long ramp whose spokes show. */
static const float HALFWAY[8] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
static const uint16_t CHEEK_CENTRE8_R[8] = {50, 50, 50, 50, 50, 50, 50, 50};
static const uint16_t CHEEK_CENTRE8_L[8] = {280, 280, 280, 280, 280, 280, 280, 280};

static const part_def BLUSH_PARTS[] = {
    {PART_CLOSED_STRIP, false, 8, ROW(CHEEK_RING_R, 0.35f, 0.08f),
     ROWT(CHEEK_RING_R, CHEEK_CENTRE8_R, HALFWAY, 0.8f, 0.0f)},
    {PART_FAN, false, 8, ROWT(CHEEK_RING_R, CHEEK_CENTRE8_R, HALFWAY, 0.8f, 0.0f),
     ROW(CHEEK_CENTRE_R, 1.0f, 0.0f)},
    {PART_CLOSED_STRIP, false, 8, ROW(CHEEK_RING_L, 0.35f, 0.08f),
     ROWT(CHEEK_RING_L, CHEEK_CENTRE8_L, HALFWAY, 0.8f, 0.0f)},
    {PART_FAN, false, 8, ROWT(CHEEK_RING_L, CHEEK_CENTRE8_L, HALFWAY, 0.8f, 0.0f),
     ROW(CHEEK_CENTRE_L, 1.0f, 0.0f)},
};

/* Brows taper: full over the arch, lighter at the tail and much lighter at the head, the way
 * brow pencil is applied; the upper edge is softer than the lower one. */
static const float BROW_ALPHA[5] = {0.75f, 1.0f, 1.0f, 0.8f, 0.35f};

static const part_def EYEBROW_PARTS[] = {
    {PART_OPEN_STRIP, false, 5, ROWA(BROW_UP_R, BROW_ALPHA, 0.03f),
     ROWA(BROW_LO_R, BROW_ALPHA, 0.02f)},
    {PART_OPEN_STRIP, false, 5, ROWA(BROW_UP_L, BROW_ALPHA, 0.03f),
     ROWA(BROW_LO_L, BROW_ALPHA, 0.02f)},
};

/* Foundation (and the beauty skin mask): the face oval minus eyes, brows and mouth. */
static const part_def FOUNDATION_PARTS[] = {
    {PART_FAN, false, 36, ROW(FACE_OVAL, 1.0f, 0.04f), ROW(NOSE_CENTRE, 1.0f, 0.0f)},
    {PART_FAN, true, 16, ROW(EYE_R, 0.0f, 0.03f), ROWT(EYE_MID_A_R, EYE_MID_B_R, HALF, 0.0f, 0.0f)},
    {PART_FAN, true, 16, ROW(EYE_L, 0.0f, 0.03f), ROWT(EYE_MID_A_L, EYE_MID_B_L, HALF, 0.0f, 0.0f)},
    {PART_OPEN_STRIP, true, 5, ROW(BROW_UP_R, 0.0f, 0.025f), ROW(BROW_LO_R, 0.0f, 0.025f)},
    {PART_OPEN_STRIP, true, 5, ROW(BROW_UP_L, 0.0f, 0.025f), ROW(BROW_LO_L, 0.0f, 0.025f)},
    {PART_FAN, true, 20, ROW(LIPS_OUTER, 0.0f, 0.025f),
     ROWT(MOUTH_MID_A, MOUTH_MID_B, HALF, 0.0f, 0.0f)},
};

#define COUNT(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))

static const region_def REGIONS[KS_EFFECT_MAKEUP_REGION_COUNT] = {
    [KS_EFFECT_MAKEUP_LIPS] = {COUNT(LIPS_PARTS), LIPS_PARTS},
    [KS_EFFECT_MAKEUP_EYESHADOW] = {COUNT(EYESHADOW_PARTS), EYESHADOW_PARTS},
    [KS_EFFECT_MAKEUP_EYELINER] = {COUNT(EYELINER_PARTS), EYELINER_PARTS},
    [KS_EFFECT_MAKEUP_BLUSH] = {COUNT(BLUSH_PARTS), BLUSH_PARTS},
    [KS_EFFECT_MAKEUP_EYEBROWS] = {COUNT(EYEBROW_PARTS), EYEBROW_PARTS},
    [KS_EFFECT_MAKEUP_FOUNDATION] = {COUNT(FOUNDATION_PARTS), FOUNDATION_PARTS},
};

/* ---- building ------------------------------------------------------------------------------ */

static uint32_t part_num_core(const part_def *p) {
    return p->kind == PART_FAN ? p->n + 1u : 2u * p->n;
}

/* Loops whose rows all have zero feather (inner rings that only shape the colour falloff) get
 * no band. */
static bool row0_loop_feathered(const part_def *p) {
    return p->kind == PART_OPEN_STRIP ? p->row0.feather > 0.0f || p->row1.feather > 0.0f
                                      : p->row0.feather > 0.0f;
}

static bool row1_loop_feathered(const part_def *p) {
    return p->kind == PART_CLOSED_STRIP && p->row1.feather > 0.0f;
}

static uint32_t part_num_loop_entries(const part_def *p) {
    uint32_t n0 = p->kind == PART_OPEN_STRIP ? 2u * p->n : p->n;
    return (row0_loop_feathered(p) ? n0 : 0u) + (row1_loop_feathered(p) ? p->n : 0u);
}

static uint32_t part_num_core_indices(const part_def *p) {
    switch (p->kind) {
    case PART_FAN:
        return 3u * p->n;
    case PART_OPEN_STRIP:
        return 6u * (p->n - 1u);
    default:
        return 6u * p->n;
    }
}

static ks__face_region_vdef make_vdef(const row_def *row, uint32_t i, bool hole) {
    ks__face_region_vdef v;
    v.a = row->a[i];
    v.b = row->b ? row->b[i] : row->a[i];
    v.t = row->t ? row->t[i] : 0.0f;
    v.alpha = hole ? 0.0f : row->alpha * (row->alphas ? row->alphas[i] : 1.0f);
    v.feather = row->feather;
    return v;
}

typedef struct builder {
    ks__face_region_mesh *m;
    uint32_t num_core, num_entries, num_add, num_hole;
    uint16_t *add, *hole; /* write cursors */
} builder;

static void tri(uint16_t **cursor, uint32_t a, uint32_t b, uint32_t c) {
    (*cursor)[0] = (uint16_t)a;
    (*cursor)[1] = (uint16_t)b;
    (*cursor)[2] = (uint16_t)c;
    *cursor += 3;
}

/* Adds one closed loop of core vertices (indices into vdefs) and its band triangles. Band
 * vertices are numbered after all core vertices, in entry order. */
static void add_loop(builder *bd, const uint32_t *core, uint32_t n, int8_t dir, bool hole) {
    ks__face_region_mesh *m = bd->m;
    uint32_t begin = bd->num_entries;
    uint16_t **cur = hole ? &bd->hole : &bd->add;
    for (uint32_t j = 0; j < n; j++) {
        ks__face_region_loop_entry *e = &m->entries[begin + j];
        e->vertex = (uint16_t)core[j];
        e->dir = dir;
        e->hole = hole;
        e->loop_begin = (uint16_t)begin;
        e->loop_count = (uint16_t)n;
    }
    for (uint32_t j = 0; j < n; j++) {
        uint32_t k = (j + 1u) % n;
        uint32_t fj = m->num_core_vertices + begin + j, fk = m->num_core_vertices + begin + k;
        tri(cur, core[j], core[k], fj);
        tri(cur, core[k], fk, fj);
    }
    bd->num_entries += n;
}

static void add_part(builder *bd, const part_def *p) {
    ks__face_region_mesh *m = bd->m;
    uint32_t base = bd->num_core, n = p->n;
    uint16_t **cur = p->hole ? &bd->hole : &bd->add;
    uint32_t loop[64]; /* the tables' longest loop is the 36-point face oval */
    assert(n <= 64u && (p->kind != PART_OPEN_STRIP || 2u * n <= 64u));
    /* row0 vertices at base .. base+n-1; row1 (or the fan centre) after them */
    for (uint32_t i = 0; i < n; i++)
        m->vdefs[base + i] = make_vdef(&p->row0, i, p->hole);
    uint32_t n1 = p->kind == PART_FAN ? 1u : n;
    for (uint32_t i = 0; i < n1; i++)
        m->vdefs[base + n + i] = make_vdef(&p->row1, i, p->hole);
    bd->num_core += n + n1;

    if (p->kind == PART_FAN) {
        for (uint32_t i = 0; i < n; i++)
            tri(cur, base + n, base + i, base + (i + 1u) % n);
        for (uint32_t i = 0; i < n; i++)
            loop[i] = base + i;
        if (row0_loop_feathered(p)) add_loop(bd, loop, n, +1, p->hole);
        return;
    }
    uint32_t num_quads = p->kind == PART_OPEN_STRIP ? n - 1u : n;
    for (uint32_t i = 0; i < num_quads; i++) {
        uint32_t i1 = (i + 1u) % n;
        tri(cur, base + i, base + i1, base + n + i);
        tri(cur, base + i1, base + n + i1, base + n + i);
    }
    if (p->kind == PART_OPEN_STRIP) {
        for (uint32_t i = 0; i < n; i++) {
            loop[i] = base + i;
            loop[n + i] = base + n + (n - 1u - i);
        }
        if (row0_loop_feathered(p)) add_loop(bd, loop, 2u * n, +1, p->hole);
    } else {
        for (uint32_t i = 0; i < n; i++)
            loop[i] = base + i;
        if (row0_loop_feathered(p)) add_loop(bd, loop, n, +1, p->hole);
        for (uint32_t i = 0; i < n; i++)
            loop[i] = base + n + i;
        if (row1_loop_feathered(p)) add_loop(bd, loop, n, -1, p->hole);
    }
}

ks_status ks__face_region_mesh_create(const ks_allocator *alloc, ks_effect_makeup_region region,
                                      ks__face_region_mesh **mesh_out) {
    ks_status status = KS_STATUS_OK;
    ks__face_region_mesh *m = NULL;
    if (!mesh_out || (int)region < 0 || region >= KS_EFFECT_MAKEUP_REGION_COUNT)
        return KS_STATUS_INVALID_ARGUMENT;
    const region_def *def = &REGIONS[region];
    uint32_t num_core = 0, num_entries = 0, num_add = 0, num_hole = 0;
    for (uint32_t i = 0; i < def->num_parts; i++) {
        const part_def *p = &def->parts[i];
        uint32_t idx = part_num_core_indices(p) + 6u * part_num_loop_entries(p);
        num_core += part_num_core(p);
        num_entries += part_num_loop_entries(p);
        if (p->hole)
            num_hole += idx;
        else
            num_add += idx;
    }
    m = ks__calloc(alloc, 1, sizeof(*m));
    if (!m) {
        status = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    m->region = region;
    m->num_core_vertices = num_core;
    m->num_vertices = num_core + num_entries;
    m->num_add_indices = num_add;
    m->num_hole_indices = num_hole;
    m->vdefs = ks__calloc(alloc, 1, num_core * sizeof(*m->vdefs));
    m->entries = ks__calloc(alloc, 1, num_entries * sizeof(*m->entries));
    m->indices = ks__calloc(alloc, 1, (num_add + num_hole) * sizeof(*m->indices));
    if (!m->vdefs || !m->entries || !m->indices) {
        status = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    builder bd = {.m = m, .add = m->indices, .hole = m->indices + num_add};
    for (uint32_t i = 0; i < def->num_parts; i++)
        add_part(&bd, &def->parts[i]);
    *mesh_out = m;
    return KS_STATUS_OK;

error:
    ks__face_region_mesh_destroy(alloc, m);
    return status;
}

void ks__face_region_mesh_destroy(const ks_allocator *alloc, ks__face_region_mesh *mesh) {
    if (!mesh) return;
    ks__free(alloc, mesh->vdefs);
    ks__free(alloc, mesh->entries);
    ks__free(alloc, mesh->indices);
    ks__free(alloc, mesh);
}

/* ---- per frame ----------------------------------------------------------------------------- */

static bool face_width_ok(float w) {
    return isfinite(w) && w > 0.0f;
}

bool ks__face_region_mesh_compute(const ks__face_region_mesh *mesh, const float *landmarks_xyz,
                                  uint32_t num_landmarks, float face_width_px, float *out_xya) {
    if (!mesh || !landmarks_xyz || !out_xya || num_landmarks < KS__FACE_REGION_MIN_LANDMARKS ||
        !face_width_ok(face_width_px))
        return false;
    for (uint32_t i = 0; i < mesh->num_core_vertices; i++) {
        const ks__face_region_vdef *v = &mesh->vdefs[i];
        const float *pa = &landmarks_xyz[3u * v->a], *pb = &landmarks_xyz[3u * v->b];
        float x = pa[0] + v->t * (pb[0] - pa[0]), y = pa[1] + v->t * (pb[1] - pa[1]);
        if (!isfinite(x) || !isfinite(y)) return false;
        out_xya[3u * i + 0] = x;
        out_xya[3u * i + 1] = y;
        out_xya[3u * i + 2] = v->alpha;
    }
    uint32_t num_entries = mesh->num_vertices - mesh->num_core_vertices;
    float orient = 1.0f;
    uint32_t loop_begin = UINT32_MAX;
    for (uint32_t j = 0; j < num_entries; j++) {
        const ks__face_region_loop_entry *e = &mesh->entries[j];
        uint32_t n = e->loop_count;
        if (e->loop_begin != loop_begin) {
            /* The loop's orientation on screen (the image may be mirrored, the face turned)
             * decides which side of each edge is "outward": shoelace sign. */
            loop_begin = e->loop_begin;
            double area2 = 0.0;
            for (uint32_t k = 0; k < n; k++) {
                const float *p = &out_xya[3u * mesh->entries[loop_begin + k].vertex];
                const float *q = &out_xya[3u * mesh->entries[loop_begin + (k + 1u) % n].vertex];
                area2 += (double)p[0] * q[1] - (double)q[0] * p[1];
            }
            orient = area2 >= 0.0 ? 1.0f : -1.0f;
        }
        uint32_t k = j - loop_begin;
        const float *prev = &out_xya[3u * mesh->entries[loop_begin + (k + n - 1u) % n].vertex];
        const float *next = &out_xya[3u * mesh->entries[loop_begin + (k + 1u) % n].vertex];
        const float *self = &out_xya[3u * e->vertex];
        float tx = next[0] - prev[0], ty = next[1] - prev[1];
        float len = sqrtf(tx * tx + ty * ty);
        float nx = 0.0f, ny = 0.0f;
        if (len > 1e-6f) {
            /* right-hand normal of the tangent points out of a positively oriented loop */
            float s = orient * (float)e->dir / len;
            nx = ty * s;
            ny = -tx * s;
        }
        float d = mesh->vdefs[e->vertex].feather * face_width_px;
        float *o = &out_xya[3u * (mesh->num_core_vertices + j)];
        o[0] = self[0] + nx * d;
        o[1] = self[1] + ny * d;
        o[2] = e->hole ? 1.0f : 0.0f;
    }
    return true;
}

/* ---- beauty warp ----------------------------------------------------------------------------
 * Backward map: the output pixel p samples the input at p + D(p). Eye enlarging scales the
 * sampling radius around each eye centre by k(r) = 1 - s (1 - r^2/R^2)^2 (r < R): k < 1 inside
 * magnifies, k = 1 with zero slope at r = R, and r * k(r) is increasing for s < 1 (no fold).
 * Slimming translates the jaw contour towards the face's midline (Gustafsson-style local
 * translation): p samples p - m w(|p - q|) d, with w = (1 - r^2/R^2)^2 of compact support R, so
 * the contour point q appears at q + m d. The weights of neighbouring contour points are
 * normalised (divided by max(1, sum)) so overlapping supports do not add up to a fold. A window
 * that is 0 on the grid border and 1 a little inside makes the border exactly unwarped. */

static const uint16_t SLIM_R[5] = {93, 132, 58, 172, 136};
static const uint16_t SLIM_L[5] = {323, 361, 288, 397, 365};

#define EYE_RADIUS_EYE_WIDTHS 1.15f
#define EYE_MAX_SHRINK 0.28f     /* s at eye_enlarge = 1: about 1.4x magnification at centre */
#define SLIM_RADIUS_FW 0.32f     /* support of one jaw point, face widths */
#define SLIM_MAX_SHIFT_FW 0.055f /* jaw moves in by this much per side at face_slim = 1 */
#define WARP_BORDER_FW 0.3f      /* window ramp width inside the grid border */

void ks__face_warp_indices(uint16_t *indices) {
    const uint32_t g = KS__FACE_WARP_GRID;
    uint16_t *o = indices;
    for (uint32_t y = 0; y + 1u < g; y++) {
        for (uint32_t x = 0; x + 1u < g; x++) {
            uint32_t v = y * g + x;
            tri(&o, v, v + 1u, v + g);
            tri(&o, v + 1u, v + g + 1u, v + g);
        }
    }
}

static float bump(float r2, float radius2) {
    if (r2 >= radius2) return 0.0f;
    float u = 1.0f - r2 / radius2;
    return u * u;
}

static float smooth01(float x) {
    x = x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x);
    return x * x * (3.0f - 2.0f * x);
}

static float clamp01(float x) {
    return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x);
}

bool ks__face_warp_compute(const float *landmarks_xyz, uint32_t num_landmarks, float face_width_px,
                           float eye_enlarge, float face_slim, float *out_xyuv) {
    if (!landmarks_xyz || !out_xyuv || num_landmarks < KS__FACE_REGION_MIN_LANDMARKS ||
        !face_width_ok(face_width_px))
        return false;
    const float *L = landmarks_xyz;
    eye_enlarge = clamp01(eye_enlarge);
    face_slim = clamp01(face_slim);
    const float fw = face_width_px;

    /* Face frame: centre as the core computes it, axes from the face sides. */
    float cx = 0.25f * (L[3 * 234] + L[3 * 454] + L[3 * 10] + L[3 * 152]);
    float cy = 0.25f * (L[3 * 234 + 1] + L[3 * 454 + 1] + L[3 * 10 + 1] + L[3 * 152 + 1]);
    float ax = L[3 * 454] - L[3 * 234], ay = L[3 * 454 + 1] - L[3 * 234 + 1];
    float alen = sqrtf(ax * ax + ay * ay);
    if (!isfinite(cx) || !isfinite(cy) || !isfinite(alen) || alen <= 1e-6f) return false;
    ax /= alen;
    ay /= alen;
    float bx = -ay, by = ax; /* axis_x rotated +90 degrees: image down for an upright face */

    /* Eye centres and radii. */
    float ex[2], ey[2], er2[2];
    for (int e = 0; e < 2; e++) {
        const uint16_t *c = e == 0 ? EYE_R : EYE_L;
        float sx = 0.0f, sy = 0.0f;
        for (int i = 0; i < 16; i++) {
            sx += L[3 * c[i]];
            sy += L[3 * c[i] + 1];
        }
        ex[e] = sx / 16.0f;
        ey[e] = sy / 16.0f;
        float wx = L[3 * c[0]] - L[3 * c[8]], wy = L[3 * c[0] + 1] - L[3 * c[8] + 1];
        float r = EYE_RADIUS_EYE_WIDTHS * sqrtf(wx * wx + wy * wy);
        er2[e] = r * r;
        if (!isfinite(ex[e]) || !isfinite(ey[e]) || !isfinite(er2[e])) return false;
    }
    const float shrink = EYE_MAX_SHRINK * eye_enlarge;
    const float shift = SLIM_MAX_SHIFT_FW * fw * face_slim;
    const float sr2 = (SLIM_RADIUS_FW * fw) * (SLIM_RADIUS_FW * fw);

    const uint32_t g = KS__FACE_WARP_GRID;
    const float ext = KS__FACE_WARP_EXTENT;
    for (uint32_t gy = 0; gy < g; gy++) {
        float v = ext * (2.0f * (float)gy / (float)(g - 1u) - 1.0f);
        for (uint32_t gx = 0; gx < g; gx++) {
            float u = ext * (2.0f * (float)gx / (float)(g - 1u) - 1.0f);
            float px = cx + fw * (u * ax + v * bx), py = cy + fw * (u * ay + v * by);
            float dx = 0.0f, dy = 0.0f;
            for (int e = 0; e < 2; e++) {
                float rx = px - ex[e], ry = py - ey[e];
                float w = bump(rx * rx + ry * ry, er2[e]);
                float k = shrink * w; /* source = centre + (p - centre)(1 - k) */
                dx -= rx * k;
                dy -= ry * k;
            }
            if (shift > 0.0f) {
                float sx = 0.0f, sy = 0.0f, wsum = 0.0f;
                for (int side = 0; side < 2; side++) {
                    const uint16_t *q = side == 0 ? SLIM_R : SLIM_L;
                    /* towards the midline along the face's x axis */
                    float dirx = side == 0 ? ax : -ax, diry = side == 0 ? ay : -ay;
                    for (int i = 0; i < 5; i++) {
                        float rx = px - L[3 * q[i]], ry = py - L[3 * q[i] + 1];
                        float w = bump(rx * rx + ry * ry, sr2);
                        sx += w * dirx;
                        sy += w * diry;
                        wsum += w;
                    }
                }
                float norm = wsum > 1.0f ? 1.0f / wsum : 1.0f;
                dx -= shift * sx * norm;
                dy -= shift * sy * norm;
            }
            float border = ext - fmaxf(fabsf(u), fabsf(v));
            float win = smooth01(border / WARP_BORDER_FW);
            float *o = &out_xyuv[4u * (gy * g + gx)];
            o[0] = px;
            o[1] = py;
            o[2] = px + dx * win;
            o[3] = py + dy * win;
            if (!isfinite(o[0]) || !isfinite(o[1]) || !isfinite(o[2]) || !isfinite(o[3]))
                return false;
        }
    }
    return true;
}
