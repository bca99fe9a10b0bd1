/* ks-imgbench: ks_image_to_tensor on the crops the task APIs make per camera frame, timed per
 * pixel format. A 640x480 frame (synthetic, or a raw RGB file) is converted once to every format;
 * each case then runs in interleaved rounds and the median call time is printed.
 *
 *   ks-imgbench [--runs N] [--rounds R] [--rgb FRAME.rgb]
 *
 * Cases (destination, transform):
 *   face_crop  192x192 f32 NHWC [0,1], a 210-px square ROI rotated 0.21 rad (face landmarker)
 *   seg        256x256 f32 NHWC [0,1], the whole frame stretched (selfie segmenter)
 *   palm       192x192 f32 NHWC [0,1], the whole frame letterboxed, zero border (palm detector)
 *   pose_crop  256x256 f32 NHWC [0,1], a 600-px square ROI rotated 0.12 rad reaching past every
 *              edge of the frame, zero border (pose landmarker)
 *   pose_rep   the same with the REPLICATE border (the pose task's own crop)
 * KS_FORCE_SCALAR=1 or KS_ISA_MAX=... select the path as for the engine. Not a test: no
 * timing assertions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kestrel/imgproc.h"
#include "kestrel/kestrel.h"

#define W 640
#define H 480

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : (x > y ? 1 : 0);
}

static uint8_t clamp_u8(float v) {
    return (uint8_t)(v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v + 0.5f));
}

typedef struct frame_set {
    uint8_t rgb[W * H * 3], rgba[W * H * 4], nv21[W * H * 3 / 2], i420[W * H * 3 / 2];
} frame_set;

/* RGB -> BT.601 video range YUV (chroma averaged over 2x2 blocks) */
static void make_formats(frame_set *f) {
    uint8_t *Y = f->nv21, *VU = f->nv21 + W * H;
    for (int i = 0; i < W * H; i++) {
        const uint8_t *p = f->rgb + 3 * i;
        f->rgba[4 * i] = p[0];
        f->rgba[4 * i + 1] = p[1];
        f->rgba[4 * i + 2] = p[2];
        f->rgba[4 * i + 3] = 255;
        Y[i] = clamp_u8(16.0f + 0.257f * p[0] + 0.504f * p[1] + 0.098f * p[2]);
    }
    for (int cy = 0; cy < H / 2; cy++)
        for (int cx = 0; cx < W / 2; cx++) {
            float r = 0, g = 0, b = 0;
            for (int k = 0; k < 4; k++) {
                const uint8_t *p = f->rgb + 3 * ((2 * cy + k / 2) * W + 2 * cx + k % 2);
                r += p[0] * 0.25f;
                g += p[1] * 0.25f;
                b += p[2] * 0.25f;
            }
            uint8_t u = clamp_u8(128.0f - 0.148f * r - 0.291f * g + 0.439f * b);
            uint8_t v = clamp_u8(128.0f + 0.439f * r - 0.368f * g - 0.071f * b);
            VU[2 * (cy * (W / 2) + cx)] = v;
            VU[2 * (cy * (W / 2) + cx) + 1] = u;
            f->i420[W * H + cy * (W / 2) + cx] = u;
            f->i420[W * H + W * H / 4 + cy * (W / 2) + cx] = v;
        }
    memcpy(f->i420, Y, W * H);
}

typedef struct bench_case {
    const char *name;
    int32_t out;
    float m[6]; /* destination point -> source point; zero: stretch */
    ks_border border;
} bench_case;

int main(int argc, char **argv) {
    int runs = 200, rounds = 5;
    const char *rgb_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--rgb") && i + 1 < argc) {
            rgb_path = argv[++i];
        } else {
            fprintf(stderr, "usage: ks-imgbench [--runs N] [--rounds R] [--rgb FRAME.rgb]\n");
            return 2;
        }
    }
    if (runs < 1 || runs > 100000 || rounds < 1 || rounds > 1000) {
        fprintf(stderr, "ks-imgbench: --runs 1..100000, --rounds 1..1000\n");
        return 2;
    }
    frame_set *f = malloc(sizeof(*f));
    if (!f) return 1;
    if (rgb_path) {
        FILE *fp = fopen(rgb_path, "rb");
        size_t got = fp ? fread(f->rgb, 1, sizeof(f->rgb), fp) : 0;
        if (fp) fclose(fp);
        if (got != sizeof(f->rgb)) {
            fprintf(stderr, "ks-imgbench: %s must hold 640x480 RGB bytes\n", rgb_path);
            free(f);
            return 1;
        }
    } else {
        uint32_t r = 1;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                for (int c = 0; c < 3; c++) {
                    r = r * 1664525u + 1013904223u;
                    f->rgb[3 * (y * W + x) + c] =
                        (uint8_t)(((x * (c + 1) + y * (3 - c)) >> 2) + (r >> 29));
                }
    }
    make_formats(f);

    const float a = 0.21f, s = 210.0f / 192.0f;
    const float lb = (float)W / 192.0f; /* letterbox: the frame's width fills the tensor */
    const float ap = 0.12f, sp = 600.0f / 256.0f; /* a body's ROI, past the frame's edges */
    bench_case cases[] = {
        {"face_crop",
         192,
         {s * cosf(a), -s * sinf(a), 330.0f - 96.0f * s * cosf(a) + 96.0f * s * sinf(a),
          s * sinf(a), s * cosf(a), 230.0f - 96.0f * s * sinf(a) - 96.0f * s * cosf(a)},
         KS_BORDER_REPLICATE},
        {"seg", 256, {0}, KS_BORDER_REPLICATE},
        {"palm", 192, {lb, 0, 0, 0, lb, -(192.0f * lb - (float)H) / 2.0f}, KS_BORDER_ZERO},
        {"pose_crop",
         256,
         {sp * cosf(ap), -sp * sinf(ap), 330.0f - 128.0f * sp * cosf(ap) + 128.0f * sp * sinf(ap),
          sp * sinf(ap), sp * cosf(ap), 250.0f - 128.0f * sp * sinf(ap) - 128.0f * sp * cosf(ap)},
         KS_BORDER_ZERO},
        {"pose_rep",
         256,
         {sp * cosf(ap), -sp * sinf(ap), 330.0f - 128.0f * sp * cosf(ap) + 128.0f * sp * sinf(ap),
          sp * sinf(ap), sp * cosf(ap), 250.0f - 128.0f * sp * sinf(ap) - 128.0f * sp * cosf(ap)},
         KS_BORDER_REPLICATE},
    };
    struct {
        const char *name;
        ks_image img;
    } formats[] = {
        {"nv21", {KS_PIXEL_FORMAT_NV21, W, H, {f->nv21, f->nv21 + W * H, NULL}, {W, W, 0}, 0}},
        {"i420",
         {KS_PIXEL_FORMAT_I420,
          W,
          H,
          {f->i420, f->i420 + W * H, f->i420 + W * H + W * H / 4},
          {W, W / 2, W / 2},
          0}},
        {"rgba", {KS_PIXEL_FORMAT_RGBA, W, H, {f->rgba, NULL, NULL}, {W * 4, 0, 0}, 0}},
        {"rgb", {KS_PIXEL_FORMAT_RGB, W, H, {f->rgb, NULL, NULL}, {W * 3, 0, 0}, 0}},
    };
    enum { NC = sizeof(cases) / sizeof(cases[0]), NF = sizeof(formats) / sizeof(formats[0]) };
    ks_tensor t[NC];
    int rc = 0;
    memset(t, 0, sizeof(t));
    for (int c = 0; c < NC; c++) {
        t[c].info.dtype = KS_DTYPE_F32;
        t[c].info.shape.rank = 4;
        t[c].info.shape.dims[0] = 1;
        t[c].info.shape.dims[1] = t[c].info.shape.dims[2] = cases[c].out;
        t[c].info.shape.dims[3] = 3;
        t[c].size_bytes = (size_t)cases[c].out * (size_t)cases[c].out * 3 * sizeof(float);
        t[c].data = malloc(t[c].size_bytes);
        if (!t[c].data) rc = 1;
    }
    double *med = calloc((size_t)NC * NF * (size_t)rounds, sizeof(double));
    double *sample = calloc((size_t)runs, sizeof(double));
    if (!med || !sample) rc = 1;
    for (int r = 0; r < rounds && !rc; r++)
        for (int c = 0; c < NC && !rc; c++)
            for (int k = 0; k < NF && !rc; k++) {
                ks_image_to_tensor_desc d = {.border = cases[c].border,
                                             .scale = {1 / 255.0f, 1 / 255.0f, 1 / 255.0f}};
                memcpy(d.m, cases[c].m, sizeof(d.m));
                for (int i = -3; i < runs && !rc; i++) {
                    double t0 = now_s();
                    if (ks_image_to_tensor(&formats[k].img, &d, &t[c])) {
                        fprintf(stderr, "ks-imgbench: %s\n", ks_last_error(NULL));
                        rc = 1;
                    }
                    if (i >= 0) sample[i] = now_s() - t0;
                }
                qsort(sample, (size_t)runs, sizeof(double), cmp_double);
                med[((size_t)c * NF + (size_t)k) * (size_t)rounds + (size_t)r] = sample[runs / 2];
            }
    if (!rc) {
        printf(
            "| case | format | median ms (median of %d rounds of %d calls) |\n| --- | --- | ---: "
            "|\n",
            rounds, runs);
        for (int c = 0; c < NC; c++)
            for (int k = 0; k < NF; k++) {
                double *m = med + ((size_t)c * NF + (size_t)k) * (size_t)rounds;
                qsort(m, (size_t)rounds, sizeof(double), cmp_double);
                printf("| %s | %s | %.4f |\n", cases[c].name, formats[k].name, m[rounds / 2] * 1e3);
            }
    }
    for (int c = 0; c < NC; c++)
        free(t[c].data);
    free(med);
    free(sample);
    free(f);
    return rc;
}
