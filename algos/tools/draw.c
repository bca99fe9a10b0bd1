/* Minimal raster drawing for ks-vision's annotated PNGs: clipped lines, boxes, dots, masks. */
#include <math.h>
#include <stdlib.h>

#include "vision_cli.h"

static void put(ks_canvas *c, int x, int y, uint32_t rgb) {
    if (!c || !c->rgb || x < 0 || y < 0 || x >= c->width_px || y >= c->height_px) return;
    uint8_t *p = c->rgb + ((size_t)y * (size_t)c->width_px + (size_t)x) * 3;
    p[0] = (uint8_t)(rgb >> 16);
    p[1] = (uint8_t)(rgb >> 8);
    p[2] = (uint8_t)rgb;
}

/* Coordinates far outside the canvas are clamped first so the step count stays bounded. */
static float clampf(float v, float lo, float hi) {
    return isfinite(v) ? (v < lo ? lo : v > hi ? hi : v) : lo;
}

void ks__draw_line(ks_canvas *c, float x0, float y0, float x1, float y1, uint32_t rgb) {
    if (!c || !c->rgb) return;
    float lim = 4.0f * (float)(c->width_px + c->height_px);
    x0 = clampf(x0, -lim, lim);
    y0 = clampf(y0, -lim, lim);
    x1 = clampf(x1, -lim, lim);
    y1 = clampf(y1, -lim, lim);
    float dx = x1 - x0, dy = y1 - y0;
    int steps = (int)ceilf(fmaxf(fabsf(dx), fabsf(dy)));
    if (steps < 1) steps = 1;
    /* A 2-pixel wide pen stays visible on large photos. */
    for (int i = 0; i <= steps; i++) {
        float t = (float)i / (float)steps;
        int x = (int)floorf(x0 + t * dx), y = (int)floorf(y0 + t * dy);
        put(c, x, y, rgb);
        put(c, x + 1, y, rgb);
        put(c, x, y + 1, rgb);
    }
}

void ks__draw_box(ks_canvas *c, float x, float y, float w, float h, uint32_t rgb) {
    ks__draw_line(c, x, y, x + w, y, rgb);
    ks__draw_line(c, x + w, y, x + w, y + h, rgb);
    ks__draw_line(c, x + w, y + h, x, y + h, rgb);
    ks__draw_line(c, x, y + h, x, y, rgb);
}

void ks__draw_point(ks_canvas *c, float x, float y, int radius_px, uint32_t rgb) {
    if (!c || !c->rgb || !isfinite(x) || !isfinite(y)) return;
    if (radius_px < 0) radius_px = 0;
    if (radius_px > 64) radius_px = 64;
    int cx = (int)floorf(clampf(x, -1e6f, 1e6f)), cy = (int)floorf(clampf(y, -1e6f, 1e6f));
    for (int dy = -radius_px; dy <= radius_px; dy++)
        for (int dx = -radius_px; dx <= radius_px; dx++)
            if (dx * dx + dy * dy <= radius_px * radius_px) put(c, cx + dx, cy + dy, rgb);
}

void ks__draw_mask(ks_canvas *c, const float *mask, uint32_t rgb, float alpha) {
    if (!c || !c->rgb || !mask) return;
    float col[3] = {(float)((rgb >> 16) & 255), (float)((rgb >> 8) & 255), (float)(rgb & 255)};
    size_t n = (size_t)c->width_px * (size_t)c->height_px;
    for (size_t i = 0; i < n; i++) {
        float m = mask[i];
        float a = alpha * (m < 0.0f ? 0.0f : m > 1.0f ? 1.0f : m);
        if (!(a > 0.0f)) continue;
        uint8_t *p = c->rgb + i * 3;
        for (int k = 0; k < 3; k++)
            p[k] = (uint8_t)lrintf((1.0f - a) * (float)p[k] + a * col[k]);
    }
}
