/* Drawing into RGBA8 frames on the CPU: dots, box outlines and text in a built-in 5x7 bitmap font
 * (digits, letters, a few symbols; lowercase is drawn as uppercase). Shared by the samples for
 * task overlays and the FPS read-out. Everything is clipped to the frame. */
#ifndef SAMPLE_DRAW_H
#define SAMPLE_DRAW_H

#include <stdint.h>

typedef struct draw_target {
    uint8_t *rgba; /* row 0 = top */
    int width, height;
    int stride_bytes; /* 0: width * 4 */
} draw_target;

typedef struct draw_color {
    uint8_t r, g, b;
} draw_color;

void draw_fill_rect(const draw_target *t, int x, int y, int w, int h, draw_color c);
/* Outline `thickness` pixels wide, inside the rectangle. */
void draw_rect(const draw_target *t, int x, int y, int w, int h, int thickness, draw_color c);
void draw_dot(const draw_target *t, float x, float y, int radius, draw_color c);
/* Text with its top-left corner at (x, y); each font pixel is scale x scale pixels. '\n' starts a
 * new line. */
void draw_text(const draw_target *t, int x, int y, int scale, const char *text, draw_color c);
/* Size draw_text covers. */
void draw_text_size(const char *text, int scale, int *width, int *height);

#endif /* SAMPLE_DRAW_H */
