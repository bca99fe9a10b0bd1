/* ks-vision internals: each task's command lives in its own file (vision_<task>.c) and is
 * reached through this table. Desktop tool code, not part of the library. */
#ifndef KESTREL_VISION_CLI_H
#define KESTREL_VISION_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "kestrel/imgproc.h"

typedef struct ks_vision_args {
    const char *task;     /* face_detect, face_landmarks, pose, segment, detect, hands, classify */
    const char *image;    /* input path */
    const char *out_png;  /* --out: annotated PNG, or NULL */
    const char *mask_out; /* --mask-out (segment): 8-bit mask PNG at input size, or NULL */
    const char *model;    /* --model: bundle or model path, or NULL for the default */
    int json;             /* --json: one JSON object on stdout */
    int max_results;      /* --max-results, 0 = task default */
    float min_score;      /* --min-score, 0 = task default */
    int num_threads;      /* --threads, 0 = 1 */
    int precision;        /* --precision stored|f32|fastest (ks_precision) */
    int backend;          /* --backend cpu|vulkan|auto (ks_backend) */
    int tiles;            /* --tiles (face_detect): N x N tile passes for small faces, 0 = off */
    const uint8_t *key;   /* --key-file: key of encrypted models (ks-protect), or NULL */
    size_t key_bytes;
} ks_vision_args;

/* An RGB8 canvas (a copy of the input) that commands draw on when --out is given. */
typedef struct ks_canvas {
    uint8_t *rgb;
    int32_t width_px, height_px;
} ks_canvas;

/* Runs one task on `img` (RGB, upright). Prints the JSON contract of docs/tasks.md when
 * args->json, otherwise a short human summary. Draws into canvas when canvas != NULL.
 * Returns a process exit code (0 ok, 1 failure with a message on stderr). */
typedef int (*ks_vision_cmd)(const ks_vision_args *args, const ks_image *img, ks_canvas *canvas);

/* Commands (vision_<task>.c). A missing command is a weak NULL and ks-vision says so. */
int ks__vision_face_detect(const ks_vision_args *args, const ks_image *img, ks_canvas *canvas);
int ks__vision_face_landmarks(const ks_vision_args *args, const ks_image *img, ks_canvas *canvas);
int ks__vision_pose(const ks_vision_args *args, const ks_image *img, ks_canvas *canvas);
int ks__vision_segment(const ks_vision_args *args, const ks_image *img, ks_canvas *canvas);
int ks__vision_detect(const ks_vision_args *args, const ks_image *img, ks_canvas *canvas);
int ks__vision_hands(const ks_vision_args *args, const ks_image *img, ks_canvas *canvas);
int ks__vision_classify(const ks_vision_args *args, const ks_image *img, ks_canvas *canvas);

/* Drawing helpers (draw.c), clipped to the canvas. Colors are 0xRRGGBB. */
void ks__draw_line(ks_canvas *c, float x0, float y0, float x1, float y1, uint32_t rgb);
void ks__draw_box(ks_canvas *c, float x, float y, float w, float h, uint32_t rgb);
void ks__draw_point(ks_canvas *c, float x, float y, int radius_px, uint32_t rgb);
/* Blends rgb into the canvas with weight alpha * mask (mask: width_px x height_px floats 0..1). */
void ks__draw_mask(ks_canvas *c, const float *mask, uint32_t rgb, float alpha);
/* Label text is not drawn (no font); labels go to the JSON. */

/* JSON helpers (json_out.c): print a float with enough digits, escape a string. */
void ks__json_string(FILE *f, const char *s);

#endif
