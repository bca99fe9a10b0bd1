/* face_demo MODEL.ksm IMAGE [--top N]
 *
 * The demo job: runs BlazeFace (short range, 128x128) converted to .ksm on a photo and prints the
 * best face anchors decoded into pixel boxes. Desktop sample code (uses stb_image to decode).
 *
 * Steps: letterbox the photo into 128x128 (keep aspect ratio, like MediaPipe's ImageToTensor),
 * scale pixels to [-1, 1], run, decode the 896 SSD anchors (strides 8 and 16, 2 and 6 anchors per
 * cell, fixed anchor size, offset 0.5), sigmoid the scores, weighted non-maximum suppression,
 * then undo the letterbox to get boxes in image pixels. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stb/stb_image.h>

#include "kestrel/engine.h"

#define NUM_ANCHORS 896
#define INPUT_PX 128

typedef struct face {
    float score;
    float xmin, ymin, xmax, ymax; /* normalized to the 128x128 input */
    float kp[6][2];
} face;

/* SSD anchors of MediaPipe's short-range face detector: layers of the same stride are merged, so
 * stride 8 has 2 anchors per cell and stride 16 has 6. Fixed anchor size: w = h = 1. */
static int make_anchors(float (*anchors)[2]) {
    static const int strides[2] = {8, 16}, per_cell[2] = {2, 6};
    int n = 0;
    for (int l = 0; l < 2; l++) {
        int fm = INPUT_PX / strides[l];
        for (int y = 0; y < fm; y++)
            for (int x = 0; x < fm; x++)
                for (int a = 0; a < per_cell[l]; a++) {
                    anchors[n][0] = ((float)x + 0.5f) / (float)fm;
                    anchors[n][1] = ((float)y + 0.5f) / (float)fm;
                    n++;
                }
    }
    return n;
}

static float iou(const face *a, const face *b) {
    float ix = fminf(a->xmax, b->xmax) - fmaxf(a->xmin, b->xmin);
    float iy = fminf(a->ymax, b->ymax) - fmaxf(a->ymin, b->ymin);
    if (ix <= 0 || iy <= 0) return 0;
    float inter = ix * iy;
    float ua =
        (a->xmax - a->xmin) * (a->ymax - a->ymin) + (b->xmax - b->xmin) * (b->ymax - b->ymin);
    return inter / (ua - inter);
}

static int by_score(const void *a, const void *b) {
    float d = ((const face *)b)->score - ((const face *)a)->score;
    return d > 0 ? 1 : (d < 0 ? -1 : 0);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: face_demo MODEL.ksm IMAGE [--top N]\n");
        return 2;
    }
    int top = 5;
    if (argc >= 5 && strcmp(argv[3], "--top") == 0) top = atoi(argv[4]);
    int w = 0, h = 0, c = 0;
    unsigned char *px = stbi_load(argv[2], &w, &h, &c, 3);
    if (!px) {
        fprintf(stderr, "face_demo: %s: %s\n", argv[2], stbi_failure_reason());
        return 1;
    }
    ks_model *m = NULL;
    ks_session *s = NULL;
    int rc = 1;
    face *faces = NULL;
    if (ks_model_load_file(argv[1], NULL, &m) || ks_session_create(m, NULL, &s) ||
        ks_session_reshape(s, NULL)) {
        fprintf(stderr, "face_demo: %s\n", ks_last_error(s ? (const void *)s : NULL));
        goto done;
    }
    ks_tensor in, boxes, scores;
    ks_session_input(s, 0, &in);
    if (in.info.dtype != KS_DTYPE_F32 || in.info.shape.rank != 4 ||
        in.info.shape.dims[1] != INPUT_PX || in.info.shape.dims[2] != INPUT_PX) {
        fprintf(stderr, "face_demo: expected a 1x128x128x3 f32 input (BlazeFace short range)\n");
        goto done;
    }
    /* letterbox: scale the long side to 128, center, pad with 0 (= mid-grey in [-1,1]) */
    float scale = (float)INPUT_PX / (float)(w > h ? w : h);
    float pad_x = ((float)INPUT_PX - (float)w * scale) / 2,
          pad_y = ((float)INPUT_PX - (float)h * scale) / 2;
    float *t = in.data;
    for (int y = 0; y < INPUT_PX; y++)
        for (int x = 0; x < INPUT_PX; x++) {
            float sx = ((float)x + 0.5f - pad_x) / scale - 0.5f,
                  sy = ((float)y + 0.5f - pad_y) / scale - 0.5f;
            for (int ch = 0; ch < 3; ch++) {
                float v = 0;
                if (sx >= -0.5f && sy >= -0.5f && sx <= (float)w - 0.5f && sy <= (float)h - 0.5f) {
                    /* bilinear sample */
                    float fx = fmaxf(0, fminf(sx, (float)w - 1)),
                          fy = fmaxf(0, fminf(sy, (float)h - 1));
                    int x0 = (int)fx, y0 = (int)fy;
                    int x1 = x0 + 1 < w ? x0 + 1 : x0, y1 = y0 + 1 < h ? y0 + 1 : y0;
                    float ax = fx - (float)x0, ay = fy - (float)y0;
                    float p00 = px[(y0 * w + x0) * 3 + ch], p01 = px[(y0 * w + x1) * 3 + ch];
                    float p10 = px[(y1 * w + x0) * 3 + ch], p11 = px[(y1 * w + x1) * 3 + ch];
                    float p =
                        (p00 * (1 - ax) + p01 * ax) * (1 - ay) + (p10 * (1 - ax) + p11 * ax) * ay;
                    v = p / 127.5f - 1.0f;
                }
                t[(y * INPUT_PX + x) * 3 + ch] = v;
            }
        }
    if (ks_session_run(s)) {
        fprintf(stderr, "face_demo: %s\n", ks_last_error(s));
        goto done;
    }
    ks_session_output(s, 0, &boxes);
    ks_session_output(s, 1, &scores);
    if (boxes.size_bytes != NUM_ANCHORS * 16 * sizeof(float) ||
        scores.size_bytes != NUM_ANCHORS * sizeof(float)) {
        fprintf(stderr, "face_demo: unexpected output shapes\n");
        goto done;
    }
    static float anchors[NUM_ANCHORS][2];
    make_anchors(anchors);
    faces = calloc(NUM_ANCHORS, sizeof(face));
    int nf = 0;
    const float *rb = boxes.data, *rs = scores.data;
    for (int i = 0; i < NUM_ANCHORS; i++) {
        float logit = fmaxf(-100.f, fminf(100.f, rs[i]));
        float score = 1.0f / (1.0f + expf(-logit));
        if (score < 0.5f) continue;
        const float *r = rb + i * 16;
        float cx = r[0] / INPUT_PX + anchors[i][0], cy = r[1] / INPUT_PX + anchors[i][1];
        float bw = r[2] / INPUT_PX, bh = r[3] / INPUT_PX;
        face *f = &faces[nf++];
        f->score = score;
        f->xmin = cx - bw / 2;
        f->ymin = cy - bh / 2;
        f->xmax = cx + bw / 2;
        f->ymax = cy + bh / 2;
        for (int k = 0; k < 6; k++) {
            f->kp[k][0] = r[4 + 2 * k] / INPUT_PX + anchors[i][0];
            f->kp[k][1] = r[5 + 2 * k] / INPUT_PX + anchors[i][1];
        }
    }
    qsort(faces, (size_t)nf, sizeof(face), by_score);
    /* weighted NMS: each kept face is the score-weighted mean of the candidates it suppresses */
    int kept = 0;
    printf("image %s: %dx%d, %d anchors above 0.5\n", argv[2], w, h, nf);
    for (int i = 0; i < nf && kept < top; i++) {
        if (faces[i].score < 0) continue;
        face acc = {0};
        float wsum = 0;
        for (int j = i; j < nf; j++) {
            if (faces[j].score < 0 || iou(&faces[i], &faces[j]) < 0.3f) continue;
            float wgt = faces[j].score;
            acc.xmin += faces[j].xmin * wgt;
            acc.ymin += faces[j].ymin * wgt;
            acc.xmax += faces[j].xmax * wgt;
            acc.ymax += faces[j].ymax * wgt;
            wsum += wgt;
            if (j != i) faces[j].score = -1;
        }
        float x0 = (acc.xmin / wsum * INPUT_PX - pad_x) / scale,
              y0 = (acc.ymin / wsum * INPUT_PX - pad_y) / scale;
        float x1 = (acc.xmax / wsum * INPUT_PX - pad_x) / scale,
              y1 = (acc.ymax / wsum * INPUT_PX - pad_y) / scale;
        printf(
            "face %d: score %.3f box [x0=%.0f y0=%.0f x1=%.0f y1=%.0f] px; right eye (%.0f, %.0f) "
            "left eye (%.0f, %.0f)\n",
            kept, (double)faces[i].score, (double)x0, (double)y0, (double)x1, (double)y1,
            (double)((faces[i].kp[0][0] * INPUT_PX - pad_x) / scale),
            (double)((faces[i].kp[0][1] * INPUT_PX - pad_y) / scale),
            (double)((faces[i].kp[1][0] * INPUT_PX - pad_x) / scale),
            (double)((faces[i].kp[1][1] * INPUT_PX - pad_y) / scale));
        kept++;
    }
    if (kept == 0) printf("no face found\n");
    rc = 0;
done:
    free(faces);
    stbi_image_free(px);
    ks_session_destroy(s);
    ks_model_destroy(m);
    return rc;
}
