/* Reference kernels for the MediaPipe custom ops used by the face/iris landmark models
 * (mediapipe/util/tflite/operations/: TransformLandmarks, TransformTensorBilinear,
 * Landmarks2TransformMatrix). The arithmetic follows MediaPipe's CPU kernels step by step,
 * in the same float/double precision and order, so results match them bit for bit on the same
 * compiler settings.
 *
 * Param layout (the contract the TFLite importer fills):
 *
 * MP_TRANSFORM_LANDMARKS  in: landmarks[..., C] (F32), matrix (F32, 16 values: 4x4 row-major)
 *                         out: same shape as landmarks.
 *     ip: 0 dims D (2 or 3; 0 => C, MediaPipe v2) ; fp: 0 scale (0 => 1; MediaPipe v1 scales
 *     the translation column). The landmarks are read as groups of D values:
 *     x' = m0*x + m1*y + m3*scale, y' = m4*x + m5*y + m7*scale, z' = z.
 * MP_TRANSFORM_TENSOR_BILINEAR  in: x[1,H,W,C] (F32), matrix (F32, 16 values)
 *                         out: [1,OH,OW,C]
 *     ip: 0 output_height 1 output_width 2 half_pixel (1: MediaPipe v2, which maps pixel
 *     centres: T' = S(-0.5) * T * S(+0.5); 0: v1, pixel corners). For each output pixel (ox, oy)
 *     the source point is (m0*ox + m1*oy + m3, m4*ox + m5*oy + m7); outside [0, W-1]x[0, H-1]
 *     gives 0, otherwise bilinear interpolation (neighbours beyond the edge read as 0).
 * MP_LANDMARKS_TO_MATRIX  in: landmarks (F32, N*3 values: x, y, z per landmark, any shape)
 *                         out: [1,4,4] (MediaPipe v2)
 *     ip: 0 left_rotation_idx 1 right_rotation_idx 2 output_height 3 output_width
 *         4 num_words W (1..27) 5..4+W subset bitmask: bit b of ip[5 + w] set <=> landmark
 *         32*w + b belongs to subset_idxs (only the set matters: the op takes the bounding box
 *         of the subset after rotation, which is independent of order and duplicates)
 *     fp: 0 target_rotation_radians 1 scale_x 2 scale_y
 */
#include "../cpu_kernel.h"
#include "../op_enabled.h"
#include "src/shape_mediapipe.h"

#include <math.h>
#include <string.h>

/* ---- TransformLandmarks ---- */

static float dot4(float a0, float a1, float a2, float a3, float b0, float b1, float b2, float b3) {
    return a0 * b0 + a1 * b1 + a2 * b2 + a3 * b3;
}

static ks_status transform_landmarks_run(ks__kernel_ctx *ctx) {
    const float *x = ctx->in[0]->data;
    const float *m = ctx->in[1]->data;
    float *y = ctx->out[0]->data;
    int32_t d = ks__mp_landmark_dims(ctx);
    float scale = ctx->node->fp[0] != 0.0f ? ctx->node->fp[0] : 1.0f;
    int64_t n = ks__rt_numel(ctx->in[0]) / d;
    float tx = m[3] * scale, ty = m[7] * scale;
    for (int64_t i = 0; i < n; i++) {
        const float *p = x + i * d;
        float *q = y + i * d;
        float lx = p[0], ly = p[1];
        float ox = dot4(m[0], m[1], m[2], tx, lx, ly, 0.0f, 1.0f);
        float oy = dot4(m[4], m[5], m[6], ty, lx, ly, 0.0f, 1.0f);
        float z = d == 3 ? p[2] : 0.0f;
        q[0] = ox;
        q[1] = oy;
        if (d == 3) q[2] = z;
    }
    return KS_STATUS_OK;
}

/* ---- TransformTensorBilinear ---- */

static ks_status transform_tensor_run(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *xt = ctx->in[0];
    const float *x = xt->data;
    const float *m = ctx->in[1]->data;
    float *y = ctx->out[0]->data;
    const int64_t ih = xt->dims[1], iw = xt->dims[2], ch = xt->dims[3];
    const int32_t oh = ctx->node->ip[0], ow = ctx->node->ip[1];
    float xr[4] = {m[0], m[1], m[2], m[3]};
    float yr[4] = {m[4], m[5], m[6], m[7]};
    if (ctx->node->ip[2]) {
        /* Sample at pixel centres; MediaPipe computes the correction in double. */
        xr[3] = (float)((double)xr[3] + ((double)xr[0] * 0.5 + (double)xr[1] * 0.5 - 0.5));
        yr[3] = (float)((double)yr[3] + ((double)yr[0] * 0.5 + (double)yr[1] * 0.5 - 0.5));
    }
    for (int32_t oy = 0; oy < oh; oy++) {
        for (int32_t ox = 0; ox < ow; ox++) {
            float tx = dot4(xr[0], xr[1], xr[2], xr[3], (float)ox, (float)oy, 0.0f, 1.0f);
            float ty = dot4(yr[0], yr[1], yr[2], yr[3], (float)ox, (float)oy, 0.0f, 1.0f);
            float *out = y + ((int64_t)oy * ow + ox) * ch;
            /* The negated form also rejects NaN coordinates. */
            if (!(tx >= 0.0f && tx <= (float)(iw - 1) && ty >= 0.0f && ty <= (float)(ih - 1))) {
                memset(out, 0, (size_t)ch * sizeof(float));
                continue;
            }
            float fx = floorf(tx), fy = floorf(ty);
            int64_t x0 = (int64_t)fx, y0 = (int64_t)fy;
            double right = (double)(tx - fx), lower = (double)(ty - fy);
            for (int64_t c = 0; c < ch; c++) {
                float q[4];
                for (int k = 0; k < 4; k++) {
                    int64_t yy = y0 + (k >> 1), xx = x0 + (k & 1);
                    q[k] = (yy < ih && xx < iw) ? x[(yy * iw + xx) * ch + c] : 0.0f;
                }
                float upper_v = (float)((1.0 - right) * q[0] + right * q[1]);
                float lower_v = (float)((1.0 - right) * q[2] + right * q[3]);
                out[c] = (float)(lower * lower_v + (1.0 - lower) * upper_v);
            }
        }
    }
    return KS_STATUS_OK;
}

/* ---- Landmarks2TransformMatrix ---- */

/* r = a * b for row-major 4x4 (float accumulation in k order, as MediaPipe's Mat4). */
static void mat4_mul(float *a, const float *b) {
    float r[16];
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 4; j++) {
            float sum = 0.0f;
            for (int k = 0; k < 4; k++)
                sum += a[i * 4 + k] * b[k * 4 + j];
            r[i * 4 + j] = sum;
        }
    }
    memcpy(a, r, sizeof(r));
}

/* Row-major 3x3 times (x, y, z), float accumulation. */
static void mat3_apply(const float *m, const float *v, float *out) {
    for (int r = 0; r < 3; r++) {
        float sum = 0.0f;
        for (int k = 0; k < 3; k++)
            sum += m[r * 3 + k] * v[k];
        out[r] = sum;
    }
}

static ks_status landmarks_to_matrix_run(ks__kernel_ctx *ctx) {
    const ks__node *nd = ctx->node;
    const float *lm = ctx->in[0]->data;
    float *out = ctx->out[0]->data;
    const float *left = lm + 3 * (int64_t)nd->ip[0];
    const float *right = lm + 3 * (int64_t)nd->ip[1];
    const int32_t oh = nd->ip[2], ow = nd->ip[3];

    float rotation = atan2f(right[1] - left[1], right[0] - left[0]);
    rotation = nd->fp[0] - rotation;

    /* Bounding box of the subset in the rotated frame. */
    const float r = rotation;
    const float rot[9] = {cosf(r), -sinf(r), 0.0f, sinf(r), cosf(r), 0.0f, 0.0f, 0.0f, 1.0f};
    const float rot_inv[9] = {cosf(-r), -sinf(-r), 0.0f, sinf(-r), cosf(-r),
                              0.0f,     0.0f,      0.0f, 1.0f};
    float mx = 0.0f, my = 0.0f, nx = 0.0f, ny = 0.0f;
    bool first = true;
    for (int32_t w = 0; w < nd->ip[4]; w++) {
        uint32_t bits = (uint32_t)nd->ip[5 + w];
        for (int b = 0; b < 32; b++) {
            if (!(bits & (1u << b))) continue;
            const float *p = lm + 3 * (32 * (int64_t)w + b);
            float v[3] = {p[0], p[1], 1.0f}, t[3];
            mat3_apply(rot, v, t);
            if (first) {
                mx = nx = t[0];
                my = ny = t[1];
                first = false;
            }
            if (mx < t[0]) mx = t[0];
            if (my < t[1]) my = t[1];
            if (nx > t[0]) nx = t[0];
            if (ny > t[1]) ny = t[1];
        }
    }
    const float crop_w = mx - nx, crop_h = my - ny;
    float centre[3] = {(nx + mx) / 2, (ny + my) / 2, 1.0f}, crop[3];
    mat3_apply(rot_inv, centre, crop);

    float t[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    const float shift[16] = {1, 0, 0, crop[0], 0, 1, 0, crop[1], 0, 0, 1, 0, 0, 0, 0, 1};
    mat4_mul(t, shift);
    const float nr = -rotation;
    const float rot4[16] = {cosf(nr), -sinf(nr), 0, 0, sinf(nr), cosf(nr), 0, 0,
                            0,        0,         1, 0, 0,        0,        0, 1};
    mat4_mul(t, rot4);
    const float sx = nd->fp[1] * crop_w / (float)ow;
    const float sy = nd->fp[2] * crop_h / (float)oh;
    const float scale[16] = {sx, 0, 0, 0, 0, sy, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    mat4_mul(t, scale);
    const float shx = (float)(-1.0 * (ow / 2.0)), shy = (float)(-1.0 * (oh / 2.0));
    const float shift2[16] = {1, 0, 0, shx, 0, 1, 0, shy, 0, 0, 1, 0, 0, 0, 0, 1};
    mat4_mul(t, shift2);
    memcpy(out, t, sizeof(t));
    return KS_STATUS_OK;
}

void ks__ref_register_mediapipe(ks__kernel_table *t) {
    KS__REF_REG(t, MP_TRANSFORM_LANDMARKS, NULL, transform_landmarks_run);
    KS__REF_REG(t, MP_TRANSFORM_TENSOR_BILINEAR, NULL, transform_tensor_run);
    KS__REF_REG(t, MP_LANDMARKS_TO_MATRIX, NULL, landmarks_to_matrix_run);
}
