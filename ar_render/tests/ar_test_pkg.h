/* Test helpers shared by the AR renderer tests: builds .kfx packages in memory (a STORED zip
 * writer and an RGBA PNG writer) and opens them, so every test package is made by the test
 * itself from a manifest string and procedurally drawn images. Header-only (static functions);
 * test code, so allocation failures abort via cmocka asserts. */
#ifndef KESTREL_AR_TEST_PKG_H
#define KESTREL_AR_TEST_PKG_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "kestrel/effect.h"

typedef struct tp_buf {
    uint8_t *p;
    size_t n, cap;
} tp_buf;

static inline void tp_put(tp_buf *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}
static inline void tp_u16(tp_buf *b, uint32_t v) {
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    tp_put(b, x, 2);
}
static inline void tp_u32(tp_buf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    tp_put(b, x, 4);
}
static inline void tp_u32be(tp_buf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    tp_put(b, x, 4);
}

/* RGBA8 pixels (tight rows) -> PNG bytes. */
static inline tp_buf tp_png(const uint8_t *rgba, uint32_t w, uint32_t h) {
    tp_buf out = {0}, ihdr = {0};
    static const uint8_t magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    tp_put(&out, magic, 8);
    tp_u32be(&ihdr, w);
    tp_u32be(&ihdr, h);
    const uint8_t rest[5] = {8, 6, 0, 0, 0};
    tp_put(&ihdr, rest, 5);
    size_t raw_n = (size_t)h * (1 + 4 * (size_t)w);
    uint8_t *raw = calloc(raw_n, 1);
    assert_non_null(raw);
    for (uint32_t y = 0; y < h; y++)
        memcpy(raw + y * (1 + 4 * (size_t)w) + 1, rgba + (size_t)y * w * 4, (size_t)w * 4);
    uLongf zn = compressBound((uLong)raw_n);
    uint8_t *z = malloc(zn);
    assert_non_null(z);
    assert_int_equal(compress(z, &zn, raw, (uLong)raw_n), Z_OK);
    const struct {
        const char *tag;
        const uint8_t *d;
        size_t n;
    } chunks[3] = {{"IHDR", ihdr.p, ihdr.n}, {"IDAT", z, zn}, {"IEND", NULL, 0}};
    for (int i = 0; i < 3; i++) {
        tp_u32be(&out, (uint32_t)chunks[i].n);
        uLong crc = crc32(0, (const Bytef *)chunks[i].tag, 4);
        if (chunks[i].n) crc = crc32(crc, chunks[i].d, (uInt)chunks[i].n);
        tp_put(&out, chunks[i].tag, 4);
        tp_put(&out, chunks[i].d, chunks[i].n);
        tp_u32be(&out, (uint32_t)crc);
    }
    free(raw);
    free(z);
    free(ihdr.p);
    return out;
}

typedef struct tp_entry {
    const char *name;
    const uint8_t *data;
    size_t size;
} tp_entry;

/* STORED zip of the entries. */
static inline tp_buf tp_zip(const tp_entry *e, int n) {
    tp_buf z = {0}, cd = {0};
    for (int i = 0; i < n; i++) {
        uint32_t off = (uint32_t)z.n, crc = (uint32_t)crc32(0, e[i].data, (uInt)e[i].size);
        uint32_t nl = (uint32_t)strlen(e[i].name), sz = (uint32_t)e[i].size;
        tp_u32(&z, 0x04034b50u);
        tp_u16(&z, 20), tp_u16(&z, 0), tp_u16(&z, 0), tp_u16(&z, 0), tp_u16(&z, 0);
        tp_u32(&z, crc), tp_u32(&z, sz), tp_u32(&z, sz);
        tp_u16(&z, nl), tp_u16(&z, 0);
        tp_put(&z, e[i].name, nl);
        tp_put(&z, e[i].data, e[i].size);
        tp_u32(&cd, 0x02014b50u);
        tp_u16(&cd, 20), tp_u16(&cd, 20), tp_u16(&cd, 0), tp_u16(&cd, 0), tp_u16(&cd, 0);
        tp_u16(&cd, 0);
        tp_u32(&cd, crc), tp_u32(&cd, sz), tp_u32(&cd, sz);
        tp_u16(&cd, nl), tp_u16(&cd, 0), tp_u16(&cd, 0), tp_u16(&cd, 0), tp_u16(&cd, 0);
        tp_u32(&cd, 0), tp_u32(&cd, off);
        tp_put(&cd, e[i].name, nl);
    }
    uint32_t cd_off = (uint32_t)z.n;
    tp_put(&z, cd.p, cd.n);
    tp_u32(&z, 0x06054b50u);
    tp_u16(&z, 0), tp_u16(&z, 0), tp_u16(&z, (uint32_t)n), tp_u16(&z, (uint32_t)n);
    tp_u32(&z, (uint32_t)cd.n), tp_u32(&z, cd_off), tp_u16(&z, 0);
    free(cd.p);
    return z;
}

/* A named PNG drawn by pixel(x, y, rgba_out, user). */
typedef void (*tp_pixel_fn)(uint32_t x, uint32_t y, uint8_t out[4], const void *user);
typedef struct tp_image {
    const char *name;
    uint32_t w, h;
    tp_pixel_fn pixel;
    const void *user;
} tp_image;

/* Opens manifest + images (+ raw extra entries, e.g. shaders) as an effect; fails the test with
 * the reader's message if refused. */
static inline ks_effect *tp_effect_ex(const char *manifest, const tp_image *images, int num_images,
                                      const tp_entry *extra, int num_extra) {
    tp_entry e[24];
    tp_buf pngs[16];
    assert_true(num_images < 16 && num_extra < 7);
    e[0] = (tp_entry){"manifest.json", (const uint8_t *)manifest, strlen(manifest)};
    for (int i = 0; i < num_images; i++) {
        const tp_image *im = &images[i];
        uint8_t *px = malloc((size_t)im->w * im->h * 4);
        assert_non_null(px);
        for (uint32_t y = 0; y < im->h; y++)
            for (uint32_t x = 0; x < im->w; x++)
                im->pixel(x, y, px + ((size_t)y * im->w + x) * 4, im->user);
        pngs[i] = tp_png(px, im->w, im->h);
        free(px);
        e[i + 1] = (tp_entry){im->name, pngs[i].p, pngs[i].n};
    }
    for (int i = 0; i < num_extra; i++)
        e[num_images + 1 + i] = extra[i];
    tp_buf z = tp_zip(e, num_images + 1 + num_extra);
    for (int i = 0; i < num_images; i++)
        free(pngs[i].p);
    ks_effect *fx = NULL;
    ks_status st = ks_effect_open_memory(z.p, z.n, NULL, &fx);
    free(z.p);
    if (st) fail_msg("test package refused: %s: %s", ks_status_string(st), ks_last_error(NULL));
    return fx;
}

static inline ks_effect *tp_effect(const char *manifest, const tp_image *images, int num_images) {
    return tp_effect_ex(manifest, images, num_images, NULL, 0);
}

static inline void tp_solid(uint32_t x, uint32_t y, uint8_t out[4], const void *user) {
    (void)x, (void)y;
    memcpy(out, user, 4);
}

#endif
