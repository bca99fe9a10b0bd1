/* Face geometry: see face_geometry.h for contracts, file format and conventions.
 *
 * The pose estimate follows MediaPipe's GeometryPipeline (screen-to-metric conversion with a
 * two-pass depth/scale estimate, then a weighted Procrustes fit of the canonical mesh). The
 * Procrustes rotation is solved with Horn's quaternion method (largest eigenvector of a
 * symmetric 4x4, Jacobi iterations): it yields the same optimum over proper rotations as the
 * SVD-with-reflection-fix formulation, needs no general SVD, and is exact in double. */
#include "face_geometry.h"

#include <math.h>
#include <string.h>

#include "src/ir.h" /* ks__alloc / ks__free */
#include "base/pb.h"
#include "vision_util.h"

/* ---- parsing ---------------------------------------------------------------------------- */

#define FIELD_CANONICAL_MESH 1u
#define FIELD_BASIS 2u
#define FIELD_INPUT_SOURCE 3u
#define MESH_VERTEX_TYPE 1u
#define MESH_PRIMITIVE_TYPE 2u
#define MESH_VERTEX_BUFFER 3u
#define MESH_INDEX_BUFFER 4u
#define BASIS_LANDMARK_ID 1u
#define BASIS_WEIGHT 2u

static ks_status pb_fail(char *err, size_t err_cap, const char *where, int rc) {
    return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                           "geometry_pipeline_metadata: %s: %s", where, ks__pb_error_string(rc));
}

void ks__face_geometry_metadata_destroy(ks__face_geometry_metadata *md) {
    if (!md) return;
    ks_allocator a = md->alloc;
    /* The arrays share one block that starts at `vertices`. */
    ks__free(&a, md->vertices);
    ks__free(&a, md);
}

static ks_status parse_basis_entry(ks__pb_span span, uint32_t *id_out, float *w_out, char *err,
                                   size_t err_cap) {
    ks__pb_reader r = ks__pb_reader_init(span);
    ks__pb_field f;
    int rc;
    uint64_t id = 0;
    float w = 0.0f;
    while ((rc = ks__pb_next(&r, &f)) > 0) {
        if (f.number == BASIS_LANDMARK_ID) {
            if (f.wire != KS_PB_VARINT)
                return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                                       "geometry_pipeline_metadata: landmark_id has wire type %u",
                                       (unsigned)f.wire);
            id = f.u64;
        } else if (f.number == BASIS_WEIGHT) {
            if (f.wire != KS_PB_FIXED32)
                return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                                       "geometry_pipeline_metadata: weight has wire type %u",
                                       (unsigned)f.wire);
            uint32_t bits = (uint32_t)f.u64;
            memcpy(&w, &bits, 4);
        }
    }
    if (rc < 0) return pb_fail(err, err_cap, "procrustes_landmark_basis", rc);
    if (id > UINT32_MAX)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                               "geometry_pipeline_metadata: landmark_id %llu too large",
                               (unsigned long long)id);
    *id_out = (uint32_t)id;
    *w_out = w;
    return KS_STATUS_OK;
}

ks_status ks__face_geometry_parse(const ks_allocator *alloc, const uint8_t *data, size_t size_bytes,
                                  ks__face_geometry_metadata **out, char *err, size_t err_cap) {
    ks_status status = KS_STATUS_OK;
    ks__face_geometry_metadata *md = NULL;
    if (!out || (!data && size_bytes > 0)) {
        status = ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                                 "geometry_pipeline_metadata: NULL argument");
        goto error;
    }
    ks__pb_span file = {data, size_bytes};
    ks__pb_span mesh = {NULL, 0};
    bool have_mesh = false;
    size_t num_basis = 0;
    int64_t input_source = 0;
    ks__pb_reader r = ks__pb_reader_init(file);
    ks__pb_field f;
    int rc;
    while ((rc = ks__pb_next(&r, &f)) > 0) {
        if (f.number == FIELD_CANONICAL_MESH) {
            if (f.wire != KS_PB_LEN || have_mesh) {
                status = ks__vision_fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                                         "geometry_pipeline_metadata: canonical_mesh %s",
                                         have_mesh ? "appears twice" : "is not a message");
                goto error;
            }
            mesh = f.span;
            have_mesh = true;
        } else if (f.number == FIELD_BASIS) {
            if (f.wire != KS_PB_LEN) {
                status = ks__vision_fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                                         "geometry_pipeline_metadata: procrustes_landmark_basis "
                                         "entry %zu is not a message",
                                         num_basis);
                goto error;
            }
            num_basis++;
        } else if (f.number == FIELD_INPUT_SOURCE && f.wire == KS_PB_VARINT) {
            input_source = (int64_t)f.u64;
        }
    }
    if (rc < 0) {
        status = pb_fail(err, err_cap, "top level", rc);
        goto error;
    }
    if (!have_mesh) {
        status = ks__vision_fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                                 "geometry_pipeline_metadata: no canonical_mesh");
        goto error;
    }
    if (input_source < 0 || input_source > 2) {
        status = ks__vision_fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                                 "geometry_pipeline_metadata: input_source %lld unknown",
                                 (long long)input_source);
        goto error;
    }

    /* Mesh header fields: only VERTEX_PT triangles exist. */
    ks__pb_reader mr = ks__pb_reader_init(mesh);
    while ((rc = ks__pb_next(&mr, &f)) > 0) {
        if ((f.number == MESH_VERTEX_TYPE || f.number == MESH_PRIMITIVE_TYPE) &&
            (f.wire != KS_PB_VARINT || f.u64 != 0)) {
            status =
                ks__vision_fail(err, err_cap, KS_STATUS_UNSUPPORTED,
                                "geometry_pipeline_metadata: canonical_mesh %s = %llu "
                                "(only 0: VERTEX_PT / TRIANGLE)",
                                f.number == MESH_VERTEX_TYPE ? "vertex_type" : "primitive_type",
                                (unsigned long long)f.u64);
            goto error;
        }
    }
    if (rc < 0) {
        status = pb_fail(err, err_cap, "canonical_mesh", rc);
        goto error;
    }
    size_t num_floats = 0, num_indices = 0;
    rc = ks__pb_count_repeated(mesh, MESH_VERTEX_BUFFER, KS_PB_FIXED32, &num_floats);
    if (rc < 0) {
        status = pb_fail(err, err_cap, "canonical_mesh.vertex_buffer", rc);
        goto error;
    }
    rc = ks__pb_count_repeated(mesh, MESH_INDEX_BUFFER, KS_PB_VARINT, &num_indices);
    if (rc < 0) {
        status = pb_fail(err, err_cap, "canonical_mesh.index_buffer", rc);
        goto error;
    }
    if (num_floats == 0 || num_floats % 5 != 0) {
        status = ks__vision_fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                                 "geometry_pipeline_metadata: vertex_buffer has %zu floats, not "
                                 "a positive multiple of 5 (x, y, z, u, v)",
                                 num_floats);
        goto error;
    }
    if (num_indices % 3 != 0) {
        status = ks__vision_fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                                 "geometry_pipeline_metadata: index_buffer has %zu indices, not "
                                 "a multiple of 3",
                                 num_indices);
        goto error;
    }
    size_t num_vertices = num_floats / 5;
    if (num_vertices > KS__FACE_GEOMETRY_MAX_VERTICES ||
        num_indices > KS__FACE_GEOMETRY_MAX_INDICES || num_basis > num_vertices) {
        status = ks__vision_fail(err, err_cap, KS_STATUS_LIMIT_EXCEEDED,
                                 "geometry_pipeline_metadata: %zu vertices / %zu indices / %zu "
                                 "basis entries exceed limits (%d / %d / vertex count)",
                                 num_vertices, num_indices, num_basis,
                                 KS__FACE_GEOMETRY_MAX_VERTICES, KS__FACE_GEOMETRY_MAX_INDICES);
        goto error;
    }
    if (num_basis == 0) {
        status = ks__vision_fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                                 "geometry_pipeline_metadata: empty procrustes_landmark_basis");
        goto error;
    }

    ks_allocator a;
    memset(&a, 0, sizeof(a));
    if (alloc) a = *alloc;
    md = ks__alloc(&a, sizeof(*md));
    if (!md) {
        status = ks__vision_fail(err, err_cap, KS_STATUS_OUT_OF_MEMORY,
                                 "geometry_pipeline_metadata: out of memory");
        goto error;
    }
    memset(md, 0, sizeof(*md));
    md->alloc = a;
    /* One block: floats first, then uint32 arrays (all 4-byte elements, so no padding). */
    size_t block_elems = num_floats + num_indices + 2 * num_basis;
    uint8_t *block = ks__alloc(&a, block_elems * 4);
    if (!block) {
        status = ks__vision_fail(err, err_cap, KS_STATUS_OUT_OF_MEMORY,
                                 "geometry_pipeline_metadata: out of memory (%zu bytes)",
                                 block_elems * 4);
        goto error;
    }
    md->vertices = (float *)(void *)block;
    md->basis_weights = md->vertices + num_floats;
    md->indices = (uint32_t *)(void *)(md->basis_weights + num_basis);
    md->basis_ids = md->indices + num_indices;
    md->num_vertices = (uint32_t)num_vertices;
    md->num_indices = (uint32_t)num_indices;
    md->num_basis = (uint32_t)num_basis;
    md->input_source = (int32_t)input_source;

    size_t got = 0;
    rc = ks__pb_read_repeated(mesh, MESH_VERTEX_BUFFER, KS_PB_FIXED32, NULL, md->vertices,
                              num_floats, &got);
    if (rc < 0 || got != num_floats) {
        status = pb_fail(err, err_cap, "canonical_mesh.vertex_buffer", rc < 0 ? rc : -1);
        goto error;
    }
    for (size_t i = 0; i < num_floats; i++) {
        if (!isfinite(md->vertices[i])) {
            status = ks__vision_fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                                     "geometry_pipeline_metadata: vertex_buffer[%zu] is not "
                                     "finite",
                                     i);
            goto error;
        }
    }
    /* Indices are read one at a time: ks__pb_read_repeated wants an int64 buffer, and the
     * uint32 array cannot hold that. Walk the records directly instead. */
    size_t k = 0;
    mr = ks__pb_reader_init(mesh);
    while ((rc = ks__pb_next(&mr, &f)) > 0) {
        if (f.number != MESH_INDEX_BUFFER) continue;
        if (f.wire == KS_PB_VARINT) {
            if (k >= num_indices || f.u64 >= num_vertices) {
                status = ks__vision_fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                                         "geometry_pipeline_metadata: index_buffer[%zu] = %llu "
                                         "out of range (%zu vertices)",
                                         k, (unsigned long long)f.u64, num_vertices);
                goto error;
            }
            md->indices[k++] = (uint32_t)f.u64;
            continue;
        }
        /* Packed run (the count pass already validated its varints). */
        ks__pb_reader pr = ks__pb_reader_init(f.span);
        while (pr.p < pr.end) {
            uint64_t v = 0;
            unsigned shift = 0;
            bool done = false;
            while (pr.p < pr.end && shift < 64) {
                uint8_t b = *pr.p++;
                v |= (uint64_t)(b & 0x7f) << shift;
                shift += 7;
                if (!(b & 0x80)) {
                    done = true;
                    break;
                }
            }
            if (!done || k >= num_indices || v >= num_vertices) {
                status = ks__vision_fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                                         "geometry_pipeline_metadata: packed index_buffer[%zu] "
                                         "malformed or >= %zu vertices",
                                         k, num_vertices);
                goto error;
            }
            md->indices[k++] = (uint32_t)v;
        }
    }
    if (rc < 0 || k != num_indices) {
        status = pb_fail(err, err_cap, "canonical_mesh.index_buffer", rc < 0 ? rc : -1);
        goto error;
    }

    size_t b = 0;
    double weight_sum = 0.0;
    r = ks__pb_reader_init(file);
    while ((rc = ks__pb_next(&r, &f)) > 0) {
        if (f.number != FIELD_BASIS) continue;
        uint32_t id;
        float w;
        status = parse_basis_entry(f.span, &id, &w, err, err_cap);
        if (status != KS_STATUS_OK) goto error;
        if (id >= num_vertices || !isfinite(w) || w < 0.0f) {
            status = ks__vision_fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                                     "geometry_pipeline_metadata: basis[%zu] landmark_id %u "
                                     "(%zu vertices) or weight %g invalid",
                                     b, (unsigned)id, num_vertices, (double)w);
            goto error;
        }
        md->basis_ids[b] = id;
        md->basis_weights[b] = w;
        weight_sum += w;
        b++;
    }
    if (rc < 0) {
        status = pb_fail(err, err_cap, "top level", rc);
        goto error;
    }
    if (!(weight_sum > 0.0)) {
        status = ks__vision_fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                                 "geometry_pipeline_metadata: basis weights sum to %g", weight_sum);
        goto error;
    }
    *out = md;
    return KS_STATUS_OK;
error:
    ks__face_geometry_metadata_destroy(md);
    return status;
}

/* ---- Procrustes ------------------------------------------------------------------------- */

/* Eigenvector of the largest eigenvalue of a symmetric 4x4 (cyclic Jacobi): the fallback of
 * ks__sym4_max_eigenvector and its reference in the tests. a is overwritten. */
void ks__sym4_max_eigenvector_jacobi(double a[4][4], double v_out[4]) {
    double v[4][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}};
    for (int sweep = 0; sweep < 64; sweep++) {
        double off = 0.0;
        for (int p = 0; p < 4; p++)
            for (int q = p + 1; q < 4; q++)
                off += a[p][q] * a[p][q];
        if (off < 1e-30) break;
        for (int p = 0; p < 4; p++) {
            for (int q = p + 1; q < 4; q++) {
                if (fabs(a[p][q]) < 1e-300) continue;
                double theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
                double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (int k = 0; k < 4; k++) { /* A = J^T A J */
                    double akp = a[k][p], akq = a[k][q];
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                }
                for (int k = 0; k < 4; k++) {
                    double apk = a[p][k], aqk = a[q][k];
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for (int k = 0; k < 4; k++) {
                    double vkp = v[k][p], vkq = v[k][q];
                    v[k][p] = c * vkp - s * vkq;
                    v[k][q] = s * vkp + c * vkq;
                }
            }
        }
    }
    int best = 0;
    for (int i = 1; i < 4; i++)
        if (a[i][i] > a[best][best]) best = i;
    for (int k = 0; k < 4; k++)
        v_out[k] = v[k][best];
}

/* Determinant of rows r[0..2], columns c[0..2] of m. */
static double det3(const double m[4][4], const int r[3], const int c[3]) {
    return m[r[0]][c[0]] * (m[r[1]][c[1]] * m[r[2]][c[2]] - m[r[1]][c[2]] * m[r[2]][c[1]]) -
           m[r[0]][c[1]] * (m[r[1]][c[0]] * m[r[2]][c[2]] - m[r[1]][c[2]] * m[r[2]][c[0]]) +
           m[r[0]][c[2]] * (m[r[1]][c[0]] * m[r[2]][c[1]] - m[r[1]][c[1]] * m[r[2]][c[0]]);
}

/* Cofactor (i, j) of a 4x4. */
static double cofactor4(const double m[4][4], int i, int j) {
    int r[3], c[3];
    for (int k = 0, n = 0; k < 4; k++)
        if (k != i) r[n++] = k;
    for (int k = 0, n = 0; k < 4; k++)
        if (k != j) c[n++] = k;
    double d = det3(m, r, c);
    return (i + j) & 1 ? -d : d;
}

/* Eigenvector of the largest eigenvalue of a symmetric 4x4 without iterating rotations (the
 * quaternion characteristic polynomial method of Theobald, 2005, for Horn's matrix): the
 * characteristic polynomial's coefficients once, its largest root by Newton's method from an
 * upper bound (above the largest root of a polynomial with real roots it is positive, rising
 * and convex, so the steps fall monotonically onto it), then the eigenvector as the largest
 * column of the adjugate of A - lambda I (rank 3 there: every nonzero column is a multiple of
 * it). A largest eigenvalue that is (nearly) repeated leaves that adjugate (nearly) zero: then
 * cyclic Jacobi. About 300 flops against Jacobi's ~5 sweeps of square roots and divisions. */
void ks__sym4_max_eigenvector(const double a[4][4], double v_out[4]) {
    /* det(A - x I) = x^4 - e1 x^3 + e2 x^2 - e3 x + e4 */
    double e1 = a[0][0] + a[1][1] + a[2][2] + a[3][3], e2 = 0.0, e3 = 0.0, e4 = 0.0, norm2 = 0.0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            norm2 += a[i][j] * a[i][j];
            if (j > i) e2 += a[i][i] * a[j][j] - a[i][j] * a[j][i];
        }
    for (int i = 0; i < 4; i++)
        e3 += cofactor4(a, i, i);
    for (int j = 0; j < 4; j++)
        e4 += a[0][j] * cofactor4(a, 0, j);
    /* every eigenvalue lies within the Frobenius norm */
    double scale = sqrt(norm2), x = scale;
    for (int it = 0; it < 100 && scale > 0.0; it++) {
        double p = (((x - e1) * x + e2) * x - e3) * x + e4;
        double dp = ((4.0 * x - 3.0 * e1) * x + 2.0 * e2) * x - e3;
        if (!(dp > 0.0) || !(p > 0.0)) break; /* on the root (or rounding below it) */
        double step = p / dp;
        x -= step;
        if (step <= 1e-15 * scale) break;
    }
    double m[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            m[i][j] = a[i][j] - (i == j ? x : 0.0);
    /* adj(M)_jj is proportional to v_j^2: take the column of the largest */
    int best = 0;
    double c_best = -1.0;
    for (int j = 0; j < 4; j++) {
        double c = fabs(cofactor4(m, j, j));
        if (c > c_best) c_best = c, best = j;
    }
    if (c_best > 1e-9 * scale * scale * scale && isfinite(c_best)) {
        double v[4], n2 = 0.0;
        for (int i = 0; i < 4; i++) {
            v[i] = cofactor4(m, i, best);
            n2 += v[i] * v[i];
        }
        double inv = 1.0 / sqrt(n2);
        for (int i = 0; i < 4; i++)
            v_out[i] = v[i] * inv;
        return;
    }
    double b[4][4];
    memcpy(b, a, sizeof(b));
    ks__sym4_max_eigenvector_jacobi(b, v_out);
}

ks_status ks__procrustes_solve(const float *src_xyz, const float *dst_xyz, const float *weights,
                               size_t n, float transform_out[16]) {
    if (!src_xyz || !dst_xyz || !weights || !transform_out || n == 0)
        return KS_STATUS_INVALID_ARGUMENT;
    double wsum = 0.0, cs[3] = {0}, cd[3] = {0};
    for (size_t i = 0; i < n; i++) {
        double w = weights[i];
        if (!(w >= 0.0)) return KS_STATUS_INVALID_ARGUMENT;
        wsum += w;
        for (int k = 0; k < 3; k++)
            cs[k] += w * src_xyz[3 * i + k], cd[k] += w * dst_xyz[3 * i + k];
    }
    if (!(wsum > 0.0) || !isfinite(wsum)) return KS_STATUS_INVALID_ARGUMENT;
    for (int k = 0; k < 3; k++)
        cs[k] /= wsum, cd[k] /= wsum;
    double S[3][3] = {{0}}, src_var = 0.0;
    for (size_t i = 0; i < n; i++) {
        double w = weights[i], s[3], d[3];
        for (int k = 0; k < 3; k++)
            s[k] = src_xyz[3 * i + k] - cs[k], d[k] = dst_xyz[3 * i + k] - cd[k];
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++)
                S[r][c] += w * s[r] * d[c];
        src_var += w * (s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
    }
    if (!(src_var > 1e-20) || !isfinite(src_var)) return KS_STATUS_INVALID_ARGUMENT;
    double N[4][4] = {
        {S[0][0] + S[1][1] + S[2][2], S[1][2] - S[2][1], S[2][0] - S[0][2], S[0][1] - S[1][0]},
        {S[1][2] - S[2][1], S[0][0] - S[1][1] - S[2][2], S[0][1] + S[1][0], S[2][0] + S[0][2]},
        {S[2][0] - S[0][2], S[0][1] + S[1][0], -S[0][0] + S[1][1] - S[2][2], S[1][2] + S[2][1]},
        {S[0][1] - S[1][0], S[2][0] + S[0][2], S[1][2] + S[2][1], -S[0][0] - S[1][1] + S[2][2]}};
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++)
            if (!isfinite(N[r][c])) return KS_STATUS_INVALID_ARGUMENT;
    double q[4];
    ks__sym4_max_eigenvector(N, q);
    double qn = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (!(qn > 0.0)) return KS_STATUS_INVALID_ARGUMENT;
    double w = q[0] / qn, x = q[1] / qn, y = q[2] / qn, z = q[3] / qn;
    double R[3][3] = {{1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)},
                      {2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)},
                      {2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)}};
    /* scale = sum w d'.(R s') / sum w |s'|^2 = trace(R S) / var, with S = sum w s' d'^T. */
    double num = 0.0;
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            num += R[r][c] * S[c][r];
    double scale = num / src_var;
    double t[3];
    for (int r = 0; r < 3; r++)
        t[r] = cd[r] - scale * (R[r][0] * cs[0] + R[r][1] * cs[1] + R[r][2] * cs[2]);
    memset(transform_out, 0, 16 * sizeof(float));
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++)
            transform_out[c * 4 + r] = (float)(scale * R[r][c]);
        transform_out[12 + r] = (float)t[r];
    }
    transform_out[15] = 1.0f;
    return KS_STATUS_OK;
}

/* ---- pose pipeline ---------------------------------------------------------------------- */

typedef struct frustum {
    float left, right, bottom, top, near_plane, far_plane;
} frustum;

static ks__perspective_camera camera_or_default(const ks__perspective_camera *c) {
    ks__perspective_camera r = {63.0f, 1.0f, 10000.0f};
    if (c) {
        if (c->vertical_fov_deg != 0.0f) r.vertical_fov_deg = c->vertical_fov_deg;
        if (c->near_plane != 0.0f) r.near_plane = c->near_plane;
        if (c->far_plane != 0.0f) r.far_plane = c->far_plane;
    }
    return r;
}

static frustum make_frustum(const ks__perspective_camera *cam, int32_t w, int32_t h) {
    frustum f;
    float height_at_near =
        2.0f * cam->near_plane * tanf(0.5f * cam->vertical_fov_deg * (float)(KS__PI / 180.0));
    float width_at_near = (float)w * height_at_near / (float)h;
    f.left = -0.5f * width_at_near;
    f.right = 0.5f * width_at_near;
    f.bottom = -0.5f * height_at_near;
    f.top = 0.5f * height_at_near;
    f.near_plane = cam->near_plane;
    f.far_plane = cam->far_plane;
    return f;
}

size_t ks__face_geometry_workspace_floats(const ks__face_geometry_metadata *md) {
    if (!md) return 0;
    return 6 * (size_t)md->num_vertices + 7 * (size_t)md->num_basis;
}

typedef struct basis_ws {
    const ks__face_geometry_metadata *md;
    float *src, *dst, *w;
} basis_ws;

/* The unprojection of near-plane points: z = (z - depth_offset + near) / scale; x, y scaled
 * to that depth (x * z / near); z flipped to the right-handed camera frame. By reciprocals (one
 * rounding more than the divisions, a relative 1e-7), so that the loop over all points
 * vectorizes without a division per coordinate; pass 2 maps its basis points the same way. */
typedef struct unprojection {
    float shift, inv_scale, inv_near;
} unprojection;

static unprojection make_unprojection(const frustum *f, float depth_offset, float scale) {
    unprojection u = {f->near_plane - depth_offset, 1.0f / scale, 1.0f / f->near_plane};
    return u;
}

static inline void metric_point(const float *screen, float *out, const unprojection *u) {
    float z = (screen[2] + u->shift) * u->inv_scale;
    float zn = z * u->inv_near;
    out[0] = screen[0] * zn;
    out[1] = screen[1] * zn;
    out[2] = -z;
}

static void to_metric(const float *screen, float *out, size_t n, const unprojection *u) {
    for (size_t i = 0; i < n; i++)
        metric_point(screen + 3 * i, out + 3 * i, u);
}

/* Procrustes of the canonical basis points onto the same points of the screen points mapped
 * by `map`: MAP_FLIP negates z (pass 1), MAP_METRIC applies metric_point with `u` (pass 2),
 * MAP_NONE takes them as they are. Only the basis points are mapped; the source points and
 * weights are basis_fill_source's. */
enum basis_map { MAP_NONE, MAP_FLIP, MAP_METRIC };

static ks_status fit_basis(const basis_ws *b, const float *pts, enum basis_map map,
                           const unprojection *u, float m[16]) {
    for (uint32_t i = 0; i < b->md->num_basis; i++) {
        uint32_t id = b->md->basis_ids[i];
        const float *q = pts + 3 * (size_t)id;
        float *d = b->dst + 3 * (size_t)i;
        if (map == MAP_METRIC) {
            metric_point(q, d, u);
        } else {
            d[0] = q[0];
            d[1] = q[1];
            d[2] = map == MAP_FLIP ? -q[2] : q[2];
        }
    }
    return ks__procrustes_solve(b->src, b->dst, b->w, b->md->num_basis, m);
}

/* The canonical basis points and their weights: the same for every pass, filled once. */
static void basis_fill_source(const basis_ws *b) {
    for (uint32_t i = 0; i < b->md->num_basis; i++) {
        uint32_t id = b->md->basis_ids[i];
        for (int k = 0; k < 3; k++)
            b->src[3 * i + k] = b->md->vertices[5 * (size_t)id + (size_t)k];
        b->w[i] = b->md->basis_weights[i];
    }
}

static float col0_norm(const float m[16]) {
    return sqrtf(m[0] * m[0] + m[1] * m[1] + m[2] * m[2]);
}

ks_status ks__face_geometry_estimate(const ks__face_geometry_metadata *md,
                                     const ks__perspective_camera *camera, const ks__landmark *lm,
                                     size_t n, int32_t frame_width, int32_t frame_height,
                                     float *workspace, float *metric_xyz_out,
                                     ks__face_pose *pose_out, char *err, size_t err_cap) {
    if (!md || !lm || !workspace || !pose_out)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT, "face geometry: NULL");
    size_t nv = md->num_vertices;
    if (n < nv)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "face geometry: %zu landmarks, the canonical mesh has %zu", n, nv);
    if (frame_width <= 0 || frame_height <= 0)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "face geometry: frame size %dx%d", (int)frame_width,
                               (int)frame_height);
    ks__perspective_camera cam = camera_or_default(camera);
    if (!(cam.vertical_fov_deg > 0.0f && cam.vertical_fov_deg < 180.0f) ||
        !(cam.near_plane > 0.0f) || !(cam.far_plane > cam.near_plane))
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "face geometry: camera fov %g near %g far %g invalid",
                               (double)cam.vertical_fov_deg, (double)cam.near_plane,
                               (double)cam.far_plane);
    frustum f = make_frustum(&cam, frame_width, frame_height);
    float *screen = workspace;
    float *metric = screen + 3 * nv;
    basis_ws b = {md, metric + 3 * nv, metric + 3 * nv + 3 * (size_t)md->num_basis,
                  metric + 3 * nv + 6 * (size_t)md->num_basis};
    basis_fill_source(&b);

    /* Screen (image-normalized, y down) -> near-plane coordinates, y up. */
    float x_scale = f.right - f.left, y_scale = f.top - f.bottom;
    for (size_t i = 0; i < nv; i++) {
        screen[3 * i + 0] = lm[i].x * x_scale + f.left;
        screen[3 * i + 1] = (1.0f - lm[i].y) * y_scale + f.bottom;
        screen[3 * i + 2] = lm[i].z * x_scale;
    }
    /* the mean depth: four running sums, so the adds do not wait for each other */
    double depth_sum[4] = {0.0, 0.0, 0.0, 0.0};
    size_t i4 = 0;
    for (; i4 + 4 <= nv; i4 += 4)
        for (int k = 0; k < 4; k++)
            depth_sum[k] += screen[3 * (i4 + (size_t)k) + 2];
    for (; i4 < nv; i4++)
        depth_sum[0] += screen[3 * i4 + 2];
    float depth_offset =
        (float)((depth_sum[0] + depth_sum[1] + depth_sum[2] + depth_sum[3]) / (double)nv);
    ks_status st;
    float m[16];

    /* Pass 1: scale of the face as seen on the near plane (handedness flipped: z towards the
     * camera, like the canonical mesh). */
    st = fit_basis(&b, screen, MAP_FLIP, NULL, m);
    if (st != KS_STATUS_OK) goto degenerate;
    float first_scale = col0_norm(m);
    if (!(first_scale > 0.0f)) goto degenerate;
    /* Pass 2: unproject with the depth implied by pass 1, measure the residual scale. */
    unprojection u = make_unprojection(&f, depth_offset, first_scale);
    st = fit_basis(&b, screen, MAP_METRIC, &u, m);
    if (st != KS_STATUS_OK) goto degenerate;
    float second_scale = col0_norm(m);
    if (!(second_scale > 0.0f)) goto degenerate;
    u = make_unprojection(&f, depth_offset, first_scale * second_scale);
    to_metric(screen, metric, nv, &u);
    st = fit_basis(&b, metric, MAP_NONE, NULL, pose_out->pose_matrix);
    if (st != KS_STATUS_OK) goto degenerate;

    float *pm = pose_out->pose_matrix;
    float s = col0_norm(pm);
    if (!(s > 0.0f) || !isfinite(s)) goto degenerate;
    pose_out->scale = s;
    pose_out->translation[0] = pm[12];
    pose_out->translation[1] = pm[13];
    pose_out->translation[2] = pm[14];
    ks__pose_euler_deg(pm, &pose_out->pitch_deg, &pose_out->yaw_deg, &pose_out->roll_deg);
    if (metric_xyz_out) {
        /* Inverse pose: p = R^T (q - t) / s, the 1 / s^2 folded into the matrix. */
        const float inv_s2 = 1.0f / (s * s);
        float k[9];
        for (int r = 0; r < 9; r++)
            k[r] = pm[(r / 3) * 4 + r % 3] * inv_s2;
        const float tx = pm[12], ty = pm[13], tz = pm[14];
        for (size_t i = 0; i < nv; i++) {
            float d0 = metric[3 * i] - tx, d1 = metric[3 * i + 1] - ty, d2 = metric[3 * i + 2] - tz;
            metric_xyz_out[3 * i + 0] = k[0] * d0 + k[1] * d1 + k[2] * d2;
            metric_xyz_out[3 * i + 1] = k[3] * d0 + k[4] * d1 + k[5] * d2;
            metric_xyz_out[3 * i + 2] = k[6] * d0 + k[7] * d1 + k[8] * d2;
        }
    }
    return KS_STATUS_OK;
degenerate:
    return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                           "face geometry: degenerate landmarks (Procrustes fit failed)");
}

void ks__face_geometry_projection(const ks__perspective_camera *camera, int32_t frame_width,
                                  int32_t frame_height, float m_out[16]) {
    ks__perspective_camera cam = camera_or_default(camera);
    float aspect = frame_height > 0 ? (float)frame_width / (float)frame_height : 1.0f;
    float k = 1.0f / tanf(0.5f * cam.vertical_fov_deg * (float)(KS__PI / 180.0));
    float n = cam.near_plane, fa = cam.far_plane;
    memset(m_out, 0, 16 * sizeof(float));
    m_out[0] = k / aspect;
    m_out[5] = k;
    m_out[10] = (n + fa) / (n - fa);
    m_out[11] = -1.0f;
    m_out[14] = 2.0f * fa * n / (n - fa);
}

void ks__pose_euler_deg(const float m[16], float *pitch_out, float *yaw_out, float *roll_out) {
    float s = col0_norm(m);
    if (!(s > 0.0f)) s = 1.0f;
    /* R[r][c] = m[c * 4 + r] / s; R = Ry(yaw) Rx(pitch) Rz(roll) gives
     * R[1][2] = -sin(pitch), R[0][2] / R[2][2] = tan(yaw), R[1][0] / R[1][1] = tan(roll). */
    float r12 = m[2 * 4 + 1] / s;
    if (r12 > 1.0f) r12 = 1.0f;
    if (r12 < -1.0f) r12 = -1.0f;
    const float to_deg = (float)(180.0 / KS__PI);
    float pitch = asinf(-r12);
    float yaw, roll;
    if (fabsf(r12) < 0.99999f) {
        yaw = atan2f(m[2 * 4 + 0], m[2 * 4 + 2]);
        roll = atan2f(m[0 * 4 + 1], m[1 * 4 + 1]);
    } else { /* gimbal lock: fold everything into yaw */
        yaw = atan2f(-m[0 * 4 + 2], m[0 * 4 + 0]);
        roll = 0.0f;
    }
    *pitch_out = pitch * to_deg;
    *yaw_out = yaw * to_deg;
    *roll_out = roll * to_deg;
}

/* ---- expressions ------------------------------------------------------------------------ */

/* Ratios measured on the canonical (neutral) face mesh of geometry_pipeline_metadata_landmarks;
 * test_vision_face_geometry checks them against the file. */
#define NEUTRAL_EAR_RIGHT 0.231087f
#define NEUTRAL_EAR_LEFT 0.231087f
#define NEUTRAL_BROW_RIGHT 0.266256f
#define NEUTRAL_BROW_LEFT 0.266256f
#define NEUTRAL_MOUTH_WIDTH 0.552471f
#define NEUTRAL_CORNER_LIFT 0.026116f
#define NEUTRAL_MOUTH_OPEN 0.117750f /* |13-14| / |61-291|: the canonical lips are parted */

static float dist3(const float *p, uint32_t a, uint32_t b) {
    float dx = p[3 * a] - p[3 * b], dy = p[3 * a + 1] - p[3 * b + 1];
    float dz = p[3 * a + 2] - p[3 * b + 2];
    return sqrtf(dx * dx + dy * dy + dz * dz);
}

static float clamp01(float v) {
    if (!(v > 0.0f)) return 0.0f;
    return v > 1.0f ? 1.0f : v;
}

static float ratio(float num, float den) {
    return den > 1e-12f ? num / den : 0.0f;
}

static float eye_aspect(const float *p, uint32_t c0, uint32_t c1, uint32_t u0, uint32_t l0,
                        uint32_t u1, uint32_t l1) {
    return ratio(dist3(p, u0, l0) + dist3(p, u1, l1), 2.0f * dist3(p, c0, c1));
}

void ks__face_expressions_raw(const float *p, float raw_out[6]) {
    float iod = dist3(p, 33, 263);
    raw_out[0] = eye_aspect(p, 33, 133, 160, 144, 158, 153);
    raw_out[1] = eye_aspect(p, 263, 362, 387, 373, 385, 380);
    raw_out[2] = ratio(dist3(p, 105, 159), iod);
    raw_out[3] = ratio(dist3(p, 334, 386), iod);
    raw_out[4] = ratio(dist3(p, 61, 291), iod);
    /* Corner lift along the face's own "up" (lip centre -> eye midpoint), so it works in any
     * space (canonical y up, image y down). */
    float lip[3], up[3], corner[3];
    for (int k = 0; k < 3; k++) {
        lip[k] = 0.5f * (p[3 * 13 + k] + p[3 * 14 + k]);
        up[k] = 0.5f * (p[3 * 33 + k] + p[3 * 263 + k]) - lip[k];
        corner[k] = 0.5f * (p[3 * 61 + k] + p[3 * 291 + k]) - lip[k];
    }
    float un = sqrtf(up[0] * up[0] + up[1] * up[1] + up[2] * up[2]);
    float lift =
        un > 0.0f ? (corner[0] * up[0] + corner[1] * up[1] + corner[2] * up[2]) / un : 0.0f;
    raw_out[5] = ratio(lift, iod);
}

void ks__face_expressions_compute(const float *xyz, size_t n, ks__face_expressions *out) {
    memset(out, 0, sizeof(*out));
    if (!xyz || n < 468) return;
    float raw[6];
    ks__face_expressions_raw(xyz, raw);
    out->mouth_open =
        clamp01((ratio(dist3(xyz, 13, 14), dist3(xyz, 61, 291)) - NEUTRAL_MOUTH_OPEN) / 0.6f);
    /* EAR at 25% of neutral (or below) reads as fully closed. */
    out->right_eye_blink = clamp01((1.0f - ratio(raw[0], NEUTRAL_EAR_RIGHT)) / 0.75f);
    out->left_eye_blink = clamp01((1.0f - ratio(raw[1], NEUTRAL_EAR_LEFT)) / 0.75f);
    out->right_brow_raise = clamp01((ratio(raw[2], NEUTRAL_BROW_RIGHT) - 1.0f) / 0.4f);
    out->left_brow_raise = clamp01((ratio(raw[3], NEUTRAL_BROW_LEFT) - 1.0f) / 0.4f);
    float widen = clamp01((ratio(raw[4], NEUTRAL_MOUTH_WIDTH) - 1.0f) / 0.25f);
    float lift = clamp01((raw[5] - NEUTRAL_CORNER_LIFT) / 0.08f);
    out->smile = 0.5f * (widen + lift);
}
