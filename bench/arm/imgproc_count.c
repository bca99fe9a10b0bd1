/* The workload whose instructions bench/arm/run-imgproc-count counts under qemu-aarch64: an
 * Android-style camera frame, NV21 640x480, rotated 90 degrees and stretched into a 256x256 RGB
 * float tensor normalized to [-1, 1] (NHWC), the call a selfie pipeline makes per frame.
 *
 *   imgproc_count scalar|neon CALLS [FRAME.nv21]
 *
 * FRAME.nv21 is a raw 640x480 NV21 frame (460800 bytes: Y plane, then interleaved VU); without
 * it a synthetic frame is used. Before the timed calls, both paths convert the frame once and
 * must agree bit for bit (exit 1 otherwise); then CALLS conversions run through the chosen path.
 * The setup is the same whatever CALLS is, so counting CALLS and 2 x CALLS and taking the
 * difference leaves the conversions alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/imgproc_impl.h"
#include "base/cpuinfo.h"
#include "kestrel/imgproc.h"

#define SRC_W 640
#define SRC_H 480
#define DST 256
#define FRAME_BYTES ((size_t)SRC_W * SRC_H * 3 / 2)

static int load_frame(const char *path, uint8_t *frame) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "imgproc_count: cannot open %s\n", path);
        return -1;
    }
    size_t got = fread(frame, 1, FRAME_BYTES, f);
    int extra = fgetc(f) != EOF;
    fclose(f);
    if (got != FRAME_BYTES || extra) {
        fprintf(stderr, "imgproc_count: %s must hold exactly %zu bytes (640x480 NV21)\n", path,
                FRAME_BYTES);
        return -1;
    }
    return 0;
}

static void synthetic_frame(uint8_t *frame) {
    uint32_t r = 1;
    for (size_t i = 0; i < FRAME_BYTES; i++) {
        r = r * 1664525u + 1013904223u;
        frame[i] = (uint8_t)((i % SRC_W) / 3 + (r >> 28));
    }
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4 || (strcmp(argv[1], "scalar") && strcmp(argv[1], "neon"))) {
        fprintf(stderr, "usage: imgproc_count scalar|neon CALLS [FRAME.nv21]\n");
        return 2;
    }
    long calls = strtol(argv[2], NULL, 10);
    if (calls < 0 || calls > 100000) {
        fprintf(stderr, "imgproc_count: CALLS must be 0..100000\n");
        return 2;
    }
    uint32_t simd = ks__cpu_isa();
    if (!(simd & KS_ISA_NEON)) {
        fprintf(stderr, "imgproc_count: no NEON reported (KS_FORCE_SCALAR set?)\n");
        return 1;
    }
    uint32_t isa = strcmp(argv[1], "neon") ? 0u : simd;
    uint8_t *frame = malloc(FRAME_BYTES);
    size_t out_bytes = (size_t)DST * DST * 3 * sizeof(float);
    float *a = malloc(out_bytes), *b = malloc(out_bytes);
    int rc = 1;
    if (!frame || !a || !b) goto done;
    if (argc == 4) {
        if (load_frame(argv[3], frame)) goto done;
    } else {
        synthetic_frame(frame);
    }
    ks_image img = {KS_PIXEL_FORMAT_NV21,
                    SRC_W,
                    SRC_H,
                    {frame, frame + (size_t)SRC_W * SRC_H, NULL},
                    {SRC_W, SRC_W, 0},
                    KS_YUV_BT601_VIDEO};
    ks_image_to_tensor_desc d;
    memset(&d, 0, sizeof(d));
    d.rotation = KS_ROTATION_90;
    for (int c = 0; c < 3; c++) {
        d.mean[c] = 127.5f;
        d.scale[c] = 1.0f / 127.5f;
    }
    ks_tensor t;
    memset(&t, 0, sizeof(t));
    t.info.name = "input";
    t.info.dtype = KS_DTYPE_F32;
    t.info.shape.rank = 4;
    t.info.shape.dims[0] = 1;
    t.info.shape.dims[1] = DST;
    t.info.shape.dims[2] = DST;
    t.info.shape.dims[3] = 3;
    t.size_bytes = out_bytes;
    ks_tensor tb = t;
    t.data = a;
    tb.data = b;
    if (ks__image_to_tensor_isa(&img, &d, &t, 0) || ks__image_to_tensor_isa(&img, &d, &tb, simd)) {
        fprintf(stderr, "imgproc_count: conversion failed\n");
        goto done;
    }
    if (memcmp(a, b, out_bytes)) {
        fprintf(stderr, "imgproc_count: NEON and scalar outputs differ\n");
        goto done;
    }
    for (long i = 0; i < calls; i++) {
        if (ks__image_to_tensor_isa(&img, &d, &t, isa)) goto done;
    }
    printf("%s calls %ld out[0] %.6f\n", argv[1], calls, (double)a[0]);
    rc = 0;
done:
    free(frame);
    free(a);
    free(b);
    return rc;
}
