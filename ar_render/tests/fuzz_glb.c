/* libFuzzer target for the glb reader (ar_render/src/glb.c). Seeds come from
 * gen_seeds_mesh3d_glb.py (run by engine/tests/fuzz/run_fuzzer.cmake with FORMAT=mesh3d_glb).
 *
 * Two modes, chosen by the first byte:
 *   - '{': the input is the JSON chunk. It is wrapped into a glb with a fixed 256-byte BIN chunk
 *     (float ramps, small u16 indices, a PNG signature at byte 192), so mutations reach the
 *     accessor/node/material logic instead of dying at the container checks.
 *   - anything else: the input is a whole glb (header, chunks, then everything). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "glb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void parse_and_walk(const uint8_t *data, size_t size) {
    ks__glb_model *m = NULL;
    char err[256];
    if (ks__glb_parse(NULL, data, size, "fuzz.glb", &m, err, sizeof err) != KS_STATUS_OK) return;
    /* Touch everything a renderer reads, so bad indices or sizes show up under ASan. */
    volatile float sum = 0.0f;
    for (uint32_t i = 0; i < m->num_indices; i++) {
        if (m->indices[i] >= m->num_vertices) abort();
        sum += m->vertices[m->indices[i]].position[0];
    }
    for (uint32_t i = 0; i < m->num_draws; i++) {
        const ks__glb_draw *d = &m->draws[i];
        if (d->material >= m->num_materials || d->num_indices % 3 ||
            d->first_index + (uint64_t)d->num_indices > m->num_indices)
            abort();
        const ks__glb_material *mat = &m->materials[d->material];
        if (mat->base_color_image >= (int32_t)m->num_images) abort();
        if (mat->base_color_image >= 0)
            sum += m->images[mat->base_color_image]
                       .data[m->images[mat->base_color_image].size_bytes - 1];
    }
    (void)sum;
    ks__glb_destroy(m);
}

static void le32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0 || data[0] != '{' || size > (1u << 20)) {
        parse_and_walk(data, size);
        return 0;
    }
    enum { BIN_BYTES = 256 };
    size_t json_bytes = (size + 3) & ~(size_t)3;
    size_t total = 12 + 8 + json_bytes + 8 + BIN_BYTES;
    uint8_t *g = malloc(total);
    if (!g) return 0;
    memcpy(g, "glTF", 4);
    le32(g + 4, 2);
    le32(g + 8, (uint32_t)total);
    le32(g + 12, (uint32_t)json_bytes);
    memcpy(g + 16, "JSON", 4);
    memcpy(g + 20, data, size);
    memset(g + 20 + size, ' ', json_bytes - size);
    uint8_t *bin = g + 20 + json_bytes;
    le32(bin, BIN_BYTES);
    memcpy(bin + 4, "BIN\0", 4);
    bin += 8;
    for (uint32_t i = 0; i < 32; i++) { /* bytes 0..128: floats 0, 0.25, ... */
        float f = 0.25f * (float)(i % 8);
        memcpy(bin + 4 * i, &f, 4);
    }
    for (uint32_t i = 0; i < 32; i++) { /* bytes 128..192: u16 indices 0..5 */
        bin[128 + 2 * i] = (uint8_t)(i % 6);
        bin[128 + 2 * i + 1] = 0;
    }
    memcpy(bin + 192, "\x89PNG\r\n\x1a\n", 8);
    memset(bin + 200, 0x7f, BIN_BYTES - 200);
    parse_and_walk(g, total);
    free(g);
    return 0;
}
