/* Helpers shared by the makeup and beauty GL tests (test_ar_gl_makeup.c, test_ar_gl_beauty.c):
 * an in-memory .kfx writer (STORED zip), the astronaut photo and landmark fixture scaled up 2x
 * (so the face is ~190 px wide and the regions are large enough to judge), golden-image
 * comparison by PSNR on a crop around the face, and an allocation-counting allocator.
 *
 * Goldens: ar_render/tests/golden/<name>.png, the crop of the rendered frame. With
 * KS_REGEN_GOLDEN=1 in the environment the tests write the goldens instead of comparing
 * (ar_render/tests/regen_golden_makeup_beauty.sh). KS_AR_DUMP_DIR=dir also writes every full
 * render there for viewing. */
#ifndef KS_MAKEUP_BEAUTY_TEST_UTIL_H
#define KS_MAKEUP_BEAUTY_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include "egl_headless.h"
#include "kestrel/ar.h"
#include "kestrel/effect.h"

#define MB_SCALE 2
#define MB_NUM_LM 468u
#define MB_PSNR_MIN_DB 35.0

typedef struct mb_scene {
    int32_t width_px, height_px;
    uint8_t *rgba; /* the astronaut, upscaled MB_SCALE x */
    float landmarks[MB_NUM_LM * 3];
    float box[4];    /* face box x, y, w, h (scaled) */
    int32_t crop[4]; /* x, y, w, h: golden crop */
} mb_scene;

/* ---- in-memory STORED zip ------------------------------------------------------------------ */

static inline uint32_t mb_crc32(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

typedef struct mb_zip {
    uint8_t *data;
    size_t size, cap;
    uint8_t central[4096];
    size_t central_size;
    uint16_t num_entries;
} mb_zip;

static inline void mb_put(mb_zip *z, const void *p, size_t n) {
    if (z->size + n > z->cap) {
        z->cap = (z->size + n) * 2 + 1024;
        z->data = realloc(z->data, z->cap);
        if (!z->data) abort();
    }
    memcpy(z->data + z->size, p, n);
    z->size += n;
}

static inline void mb_le(uint8_t *o, uint32_t v, int bytes) {
    for (int i = 0; i < bytes; i++)
        o[i] = (uint8_t)(v >> (8 * i));
}

static inline void mb_zip_add(mb_zip *z, const char *name, const void *data, size_t size) {
    uint8_t h[46];
    uint16_t name_len = (uint16_t)strlen(name);
    uint32_t crc = mb_crc32(data, size), offset = (uint32_t)z->size;
    memset(h, 0, sizeof(h));
    mb_le(h, 0x04034b50u, 4);
    mb_le(h + 4, 20, 2);
    mb_le(h + 14, crc, 4);
    mb_le(h + 18, (uint32_t)size, 4);
    mb_le(h + 22, (uint32_t)size, 4);
    mb_le(h + 26, name_len, 2);
    mb_put(z, h, 30);
    mb_put(z, name, name_len);
    mb_put(z, data, size);
    uint8_t *c = z->central + z->central_size;
    memset(c, 0, 46);
    mb_le(c, 0x02014b50u, 4);
    mb_le(c + 4, 20, 2);
    mb_le(c + 6, 20, 2);
    mb_le(c + 16, crc, 4);
    mb_le(c + 20, (uint32_t)size, 4);
    mb_le(c + 24, (uint32_t)size, 4);
    mb_le(c + 28, name_len, 2);
    mb_le(c + 38, 0100644u << 16, 4);
    mb_le(c + 42, offset, 4);
    memcpy(c + 46, name, name_len);
    z->central_size += 46u + name_len;
    z->num_entries++;
}

static inline void mb_zip_finish(mb_zip *z) {
    uint32_t cd_offset = (uint32_t)z->size;
    mb_put(z, z->central, z->central_size);
    uint8_t e[22];
    memset(e, 0, sizeof(e));
    mb_le(e, 0x06054b50u, 4);
    mb_le(e + 8, z->num_entries, 2);
    mb_le(e + 10, z->num_entries, 2);
    mb_le(e + 12, (uint32_t)z->central_size, 4);
    mb_le(e + 16, cd_offset, 4);
    mb_put(z, e, 22);
}

/* Opens a package made of manifest.json plus optional assets (name/data/size triples). */
static inline ks_effect *mb_effect(const char *manifest, const char *asset_name, const void *asset,
                                   size_t asset_size) {
    mb_zip z = {0};
    mb_zip_add(&z, "manifest.json", manifest, strlen(manifest));
    if (asset_name) mb_zip_add(&z, asset_name, asset, asset_size);
    mb_zip_finish(&z);
    ks_effect *fx = NULL;
    ks_status st = ks_effect_open_memory(z.data, z.size, NULL, &fx);
    if (st != KS_STATUS_OK)
        fprintf(stderr, "effect: %s: %s\n", ks_status_string(st), ks_last_error(NULL));
    free(z.data);
    return fx;
}

/* ---- scene --------------------------------------------------------------------------------- */

static inline int mb_load_fixture(const char *path, float *lm, float *box) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strstr(buf, "\"box\"");
    if (!p) return -1;
    for (int i = 0; i < 4; i++) {
        p += strcspn(p, "-0123456789");
        char *end;
        box[i] = strtof(p, &end);
        p = end;
    }
    p = strstr(p, "\"landmarks\"");
    if (!p) return -1;
    for (uint32_t i = 0; i < MB_NUM_LM * 3; i++) {
        p += strcspn(p, "-0123456789");
        if (!*p) return -1;
        char *end;
        lm[i] = strtof(p, &end);
        p = end;
    }
    return 0;
}

/* Bilinear 2x upscale of the astronaut and the fixture; the crop is the face box plus 20 %. */
static inline int mb_scene_load(mb_scene *s) {
    memset(s, 0, sizeof(*s));
    int w = 0, h = 0, c = 0;
    uint8_t *src = stbi_load(KS_SOURCE_DIR "/models/images/skimage_astronaut.png", &w, &h, &c, 4);
    if (!src) return -1;
    if (mb_load_fixture(KS_AR_TEST_DIR "/fixtures/astronaut_face.json", s->landmarks, s->box)) {
        stbi_image_free(src);
        return -1;
    }
    s->width_px = w * MB_SCALE;
    s->height_px = h * MB_SCALE;
    s->rgba = malloc((size_t)s->width_px * s->height_px * 4);
    if (!s->rgba) abort();
    for (int y = 0; y < s->height_px; y++) {
        float sy = ((float)y + 0.5f) / MB_SCALE - 0.5f;
        int y0 = (int)floorf(sy);
        float fy = sy - (float)y0;
        int ya = y0 < 0 ? 0 : y0, yb = y0 + 1 >= h ? h - 1 : y0 + 1;
        for (int x = 0; x < s->width_px; x++) {
            float sx = ((float)x + 0.5f) / MB_SCALE - 0.5f;
            int x0 = (int)floorf(sx);
            float fx = sx - (float)x0;
            int xa = x0 < 0 ? 0 : x0, xb = x0 + 1 >= w ? w - 1 : x0 + 1;
            for (int k = 0; k < 4; k++) {
                float v =
                    (1 - fy) *
                        ((1 - fx) * src[(ya * w + xa) * 4 + k] + fx * src[(ya * w + xb) * 4 + k]) +
                    fy * ((1 - fx) * src[(yb * w + xa) * 4 + k] + fx * src[(yb * w + xb) * 4 + k]);
                s->rgba[((size_t)y * s->width_px + x) * 4 + k] = (uint8_t)(v + 0.5f);
            }
        }
    }
    stbi_image_free(src);
    /* pixel centres: a landmark at source pixel coordinate p lands at MB_SCALE * p */
    for (uint32_t i = 0; i < MB_NUM_LM * 3; i++)
        s->landmarks[i] *= MB_SCALE;
    for (int i = 0; i < 4; i++)
        s->box[i] *= MB_SCALE;
    float mx = 0.2f * s->box[2], my = 0.2f * s->box[3];
    s->crop[0] = (int32_t)floorf(s->box[0] - mx);
    s->crop[1] = (int32_t)floorf(s->box[1] - my);
    s->crop[2] = (int32_t)ceilf(s->box[2] + 2 * mx);
    s->crop[3] = (int32_t)ceilf(s->box[3] + 2 * my);
    return 0;
}

static inline void mb_scene_free(mb_scene *s) {
    free(s->rgba);
    s->rgba = NULL;
}

static inline ks_ar_face mb_face(const mb_scene *s) {
    ks_ar_face f;
    memset(&f, 0, sizeof(f));
    f.id = 1;
    f.num_landmarks = MB_NUM_LM;
    f.landmarks_xyz = s->landmarks;
    return f;
}

/* Renders one frame of `fx` over the scene into out (width*height*4). 0 on success. */
static inline int mb_render(ks_ar_renderer *ar, const mb_scene *s, int64_t t_us, uint8_t *out,
                            uint32_t num_faces) {
    ks_ar_face face = mb_face(s);
    ks_ar_frame frame = {.width_px = s->width_px,
                         .height_px = s->height_px,
                         .timestamp_us = t_us,
                         .pixels = s->rgba,
                         .num_faces = num_faces,
                         .faces = &face};
    ks_ar_output o = {.pixels = out};
    ks_status st = ks_ar_render(ar, &frame, &o);
    if (st != KS_STATUS_OK) {
        fprintf(stderr, "render: %s: %s\n", ks_status_string(st), ks_last_error(ar));
        return -1;
    }
    return 0;
}

static inline const uint8_t *mb_px(const mb_scene *s, const uint8_t *img, float x, float y) {
    int ix = (int)floorf(x), iy = (int)floorf(y);
    return &img[((size_t)iy * s->width_px + ix) * 4];
}

static inline float mb_diff_at(const mb_scene *s, const uint8_t *a, const uint8_t *b, float x,
                               float y) {
    const uint8_t *p = mb_px(s, a, x, y), *q = mb_px(s, b, x, y);
    return (float)(abs(p[0] - q[0]) + abs(p[1] - q[1]) + abs(p[2] - q[2]));
}

/* Max channel difference over a (2r+1)^2 neighbourhood. */
static inline int mb_max_diff_near(const mb_scene *s, const uint8_t *a, const uint8_t *b, float x,
                                   float y, int r) {
    int m = 0;
    for (int dy = -r; dy <= r; dy++)
        for (int dx = -r; dx <= r; dx++) {
            const uint8_t *p = mb_px(s, a, x + (float)dx, y + (float)dy);
            const uint8_t *q = mb_px(s, b, x + (float)dx, y + (float)dy);
            for (int k = 0; k < 3; k++)
                if (abs(p[k] - q[k]) > m) m = abs(p[k] - q[k]);
        }
    return m;
}

static inline const float *mb_lm(const mb_scene *s, int i) {
    return &s->landmarks[3 * i];
}

/* Writes the full render to $KS_AR_DUMP_DIR/<name>.png when set. */
static inline void mb_dump(const mb_scene *s, const char *name, const uint8_t *img) {
    const char *dir = getenv("KS_AR_DUMP_DIR");
    if (!dir || !dir[0]) return;
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s.png", dir, name);
    stbi_write_png(path, s->width_px, s->height_px, 4, img, s->width_px * 4);
}

/* Compares the crop with golden/<name>.png (or writes it with KS_REGEN_GOLDEN=1). Returns the
 * PSNR in dB (INFINITY when identical, -1 when the golden is missing or a different size). */
static inline double mb_golden(const mb_scene *s, const char *name, const uint8_t *img) {
    const int32_t cx = s->crop[0], cy = s->crop[1], cw = s->crop[2], ch = s->crop[3];
    uint8_t *crop = malloc((size_t)cw * ch * 3);
    if (!crop) abort();
    for (int y = 0; y < ch; y++)
        for (int x = 0; x < cw; x++)
            for (int k = 0; k < 3; k++)
                crop[((size_t)y * cw + x) * 3 + k] =
                    img[((size_t)(cy + y) * s->width_px + (cx + x)) * 4 + k];
    char path[1024];
    snprintf(path, sizeof(path), "%s/golden/%s.png", KS_AR_TEST_DIR, name);
    const char *regen = getenv("KS_REGEN_GOLDEN");
    double psnr = -1.0;
    if (regen && regen[0] == '1') {
        stbi_write_png(path, cw, ch, 3, crop, cw * 3);
        fprintf(stderr, "wrote %s (%dx%d)\n", path, (int)cw, (int)ch);
        psnr = INFINITY;
    } else {
        int gw = 0, gh = 0, gc = 0;
        uint8_t *g = stbi_load(path, &gw, &gh, &gc, 3);
        if (g && gw == cw && gh == ch) {
            double se = 0.0;
            for (size_t i = 0; i < (size_t)cw * ch * 3; i++) {
                double d = (double)crop[i] - (double)g[i];
                se += d * d;
            }
            double mse = se / ((double)cw * ch * 3);
            psnr = mse == 0.0 ? INFINITY : 10.0 * log10(255.0 * 255.0 / mse);
            fprintf(stderr, "%s: PSNR %.2f dB\n", name, psnr);
        } else {
            fprintf(stderr, "%s: golden missing or %dx%d (want %dx%d)\n", path, gw, gh, (int)cw,
                    (int)ch);
        }
        if (g) stbi_image_free(g);
    }
    free(crop);
    return psnr;
}

/* ---- allocation counting ------------------------------------------------------------------- */

typedef struct mb_alloc_count {
    long num_allocs;
} mb_alloc_count;

static inline void *mb_count_alloc(void *user, size_t size_bytes, size_t alignment) {
    (void)alignment;
    ((mb_alloc_count *)user)->num_allocs++;
    return malloc(size_bytes);
}

static inline void mb_count_free(void *user, void *ptr) {
    (void)user;
    free(ptr);
}

#endif /* KS_MAKEUP_BEAUTY_TEST_UTIL_H */
