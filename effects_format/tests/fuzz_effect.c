/* libFuzzer target for the effect package reader. Seeds come from gen_seeds_effect.py (run by
 * engine/tests/fuzz/run_fuzzer.cmake).
 *
 * Two modes, chosen by the first byte:
 *   - '{': the input is a manifest. It is wrapped, with a fixed set of valid assets (the names
 *     the documented example uses), into a STORED zip with correct CRCs. Without this, almost
 *     every mutation of a whole package dies at the CRC check and the manifest code stays cold.
 *   - anything else: the input is a whole package (zip structure, inflate, image headers). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "kestrel/effect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct bytes {
    uint8_t *p;
    size_t n, cap;
} bytes;

static void put(bytes *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 256;
        uint8_t *q = realloc(b->p, b->cap);
        if (!q) abort(); /* harness only */
        b->p = q;
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void le(bytes *b, uint32_t v, int n) {
    for (int i = 0; i < n; i++) {
        uint8_t c = (uint8_t)(v >> (8 * i));
        put(b, &c, 1);
    }
}
static void be32(bytes *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    put(b, x, 4);
}
static void png_chunk(bytes *b, const char *tag, const uint8_t *d, size_t n) {
    be32(b, (uint32_t)n);
    put(b, tag, 4);
    put(b, d, n);
    be32(b, (uint32_t)crc32(crc32(0, (const Bytef *)tag, 4), d, (uInt)n));
}
static bytes make_png(uint32_t w, uint32_t h) {
    bytes out = {0}, hdr = {0};
    put(&out, "\x89PNG\r\n\x1a\n", 8);
    be32(&hdr, w);
    be32(&hdr, h);
    put(&hdr, "\x08\x06\x00\x00\x00", 5);
    png_chunk(&out, "IHDR", hdr.p, hdr.n);
    size_t raw_n = (size_t)h * (1 + 4 * (size_t)w);
    uint8_t *raw = calloc(raw_n, 1);
    uLongf zn = compressBound((uLong)raw_n);
    uint8_t *z = malloc(zn);
    if (!raw || !z || compress(z, &zn, raw, (uLong)raw_n) != Z_OK) abort();
    png_chunk(&out, "IDAT", z, zn);
    png_chunk(&out, "IEND", NULL, 0);
    free(raw);
    free(z);
    free(hdr.p);
    return out;
}

typedef struct asset {
    const char *name;
    bytes data;
} asset;

static asset g_assets[9];
static size_t g_num_assets;

static void add_asset(const char *name, const void *d, size_t n) {
    asset *a = &g_assets[g_num_assets++];
    a->name = name;
    put(&a->data, d, n);
}

static void init_assets(void) {
    static const uint8_t glb[] = "glTF\x02\x00\x00\x00\x30\x00\x00\x00"
                                 "\x1c\x00\x00\x00JSON{\"asset\":{\"version\":\"2.0\"}}  ";
    static const char frag[] = "#version 300 es\nprecision mediump float;\nout vec4 c;\n"
                               "void main() { c = vec4(1.0); }\n";
    const char *pngs[] = {"thumb.png",  "whiskers.png", "ears/0.png",
                          "ears/1.png", "a.png",        "bg.jpg"};
    for (size_t i = 0; i < sizeof pngs / sizeof pngs[0]; i++) {
        bytes p = make_png(8, 8);
        add_asset(pngs[i], p.p, p.n); /* bg.jpg is a PNG: the reader goes by content */
        free(p.p);
    }
    bytes lut = make_png(512, 512);
    add_asset("lut.png", lut.p, lut.n);
    free(lut.p);
    add_asset("hat.glb", glb, sizeof glb - 1);
    add_asset("shaders/tint.frag", frag, sizeof frag - 1);
}

static void add_entry(bytes *z, bytes *cd, const char *name, const uint8_t *d, size_t n) {
    uint32_t crc = (uint32_t)crc32(0, d, (uInt)n), off = (uint32_t)z->n;
    uint32_t nl = (uint32_t)strlen(name);
    le(z, 0x04034b50u, 4);
    le(z, 20, 2);
    le(z, 0, 2);
    le(z, 0, 2);
    le(z, 0, 4);
    le(z, crc, 4);
    le(z, (uint32_t)n, 4);
    le(z, (uint32_t)n, 4);
    le(z, nl, 2);
    le(z, 0, 2);
    put(z, name, nl);
    put(z, d, n);
    le(cd, 0x02014b50u, 4);
    le(cd, 20, 2);
    le(cd, 20, 2);
    le(cd, 0, 4);
    le(cd, 0, 4);
    le(cd, crc, 4);
    le(cd, (uint32_t)n, 4);
    le(cd, (uint32_t)n, 4);
    le(cd, nl, 2);
    le(cd, 0, 4);
    le(cd, 0, 4);
    le(cd, 0, 4);
    le(cd, off, 4);
    put(cd, name, nl);
}

static void open_and_walk(const uint8_t *data, size_t size) {
    ks_effect *fx = NULL;
    if (ks_effect_open_memory(data, size, NULL, &fx) != KS_STATUS_OK) return;
    /* Touch what a renderer would read, so stale pointers show up under ASan. */
    volatile uint32_t sum = 0;
    for (uint32_t i = 0; i < ks_effect_num_layers(fx); i++) {
        const ks_effect_layer *l = ks_effect_layer_at(fx, i);
        for (uint32_t j = 0; j < l->num_frames; j++)
            sum += ks_effect_find_asset(fx, l->frames[j])->width_px;
        for (uint32_t j = 0; j < l->num_anchor_landmarks; j++)
            sum += l->anchor_landmarks[j];
        sum +=
            (uint32_t)strlen(l->name) + (uint32_t)strlen(l->texture) + (uint32_t)strlen(l->shader);
    }
    for (uint32_t i = 0; i < ks_effect_num_assets(fx); i++)
        sum += ks_effect_asset_at(fx, i)->data[ks_effect_asset_at(fx, i)->size_bytes];
    for (uint32_t i = 0; i < ks_effect_num_states(fx); i++)
        for (uint32_t j = 0; j < ks_effect_state_at(fx, i)->num_actions; j++)
            sum += ks_effect_layer_at(fx, ks_effect_state_at(fx, i)->actions[j].layer)->visible;
    for (uint32_t i = 0; i < ks_effect_num_triggers(fx); i++)
        sum += (uint32_t)strlen(ks_effect_state_at(fx, ks_effect_trigger_at(fx, i)->state)->name);
    for (uint32_t i = 0; i < ks_effect_num_params(fx); i++) {
        const ks_effect_param *p = ks_effect_param_at(fx, i);
        if (p->type == KS_EFFECT_PARAM_ENUM) sum += (uint32_t)strlen(p->options[p->default_option]);
    }
    (void)sum;
    ks_effect_destroy(fx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0 || data[0] != '{') {
        open_and_walk(data, size);
        return 0;
    }
    if (!g_num_assets) init_assets();
    bytes z = {0}, cd = {0};
    add_entry(&z, &cd, "manifest.json", data, size);
    for (size_t i = 0; i < g_num_assets; i++)
        add_entry(&z, &cd, g_assets[i].name, g_assets[i].data.p, g_assets[i].data.n);
    uint32_t cd_off = (uint32_t)z.n, n = (uint32_t)g_num_assets + 1;
    put(&z, cd.p, cd.n);
    le(&z, 0x06054b50u, 4);
    le(&z, 0, 4);
    le(&z, n, 2);
    le(&z, n, 2);
    le(&z, (uint32_t)cd.n, 4);
    le(&z, cd_off, 4);
    le(&z, 0, 2);
    open_and_walk(z.p, z.n);
    free(z.p);
    free(cd.p);
    return 0;
}
