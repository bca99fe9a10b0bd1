/* Tests for the effect package reader: a valid package built here (zip writer and PNG writer
 * below, STORED and DEFLATE entries), each refusal with its message, truncation and
 * allocation-failure loops. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "kestrel/effect.h"

/* ---- growable buffer ---------------------------------------------------------------------- */
typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void put16(buf *b, uint32_t v) {
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    put(b, x, 2);
}
static void put32(buf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(b, x, 4);
}
static void put32be(buf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    put(b, x, 4);
}

/* ---- PNG writer (RGBA8, one IDAT) --------------------------------------------------------- */
static void png_chunk(buf *b, const char *tag, const uint8_t *d, size_t n) {
    put32be(b, (uint32_t)n);
    uLong crc = crc32(0, (const Bytef *)tag, 4);
    crc = crc32(crc, d, (uInt)n);
    put(b, tag, 4);
    put(b, d, n);
    put32be(b, (uint32_t)crc);
}

static buf make_png(uint32_t w, uint32_t h) {
    buf out = {0}, ihdr = {0};
    static const uint8_t magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    put(&out, magic, 8);
    put32be(&ihdr, w);
    put32be(&ihdr, h);
    uint8_t rest[5] = {8, 6, 0, 0, 0};
    put(&ihdr, rest, 5);
    png_chunk(&out, "IHDR", ihdr.p, ihdr.n);
    size_t raw_n = (size_t)h * (1 + 4 * (size_t)w);
    uint8_t *raw = calloc(raw_n, 1);
    uLongf zn = compressBound((uLong)raw_n);
    uint8_t *z = malloc(zn);
    assert_int_equal(compress(z, &zn, raw, (uLong)raw_n), Z_OK);
    png_chunk(&out, "IDAT", z, zn);
    png_chunk(&out, "IEND", NULL, 0);
    free(raw);
    free(z);
    free(ihdr.p);
    return out;
}

/* ---- zip writer --------------------------------------------------------------------------- */
typedef struct zentry {
    const char *name;
    const uint8_t *data;
    size_t size;
    int deflate;
    uint32_t flags;     /* general purpose flags (e.g. 1 = encrypted) */
    uint32_t unix_mode; /* 0: none (made by MS-DOS) */
    int bad_crc;
    uint32_t fake_usize; /* != 0: declared uncompressed size (a lying header) */
} zentry;

static size_t raw_deflate(const uint8_t *in, size_t n, uint8_t **out) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&zs, (uLong)n);
    *out = malloc(cap);
    zs.next_in = (Bytef *)(uintptr_t)in;
    zs.avail_in = (uInt)n;
    zs.next_out = *out;
    zs.avail_out = (uInt)cap;
    assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
    size_t m = zs.total_out;
    deflateEnd(&zs);
    return m;
}

/* eocd_disk != 0 writes a multi-disk end record. */
static buf make_zip(const zentry *e, int n, uint32_t eocd_disk) {
    buf z = {0}, cd = {0};
    for (int i = 0; i < n; i++) {
        uint8_t *comp = NULL;
        size_t csize = e[i].size;
        const uint8_t *payload = e[i].data;
        if (e[i].deflate) {
            csize = raw_deflate(e[i].data, e[i].size, &comp);
            payload = comp;
        }
        uint32_t crc = (uint32_t)crc32(0, e[i].data, (uInt)e[i].size) ^ (e[i].bad_crc ? 1u : 0u);
        uint32_t off = (uint32_t)z.n, nl = (uint32_t)strlen(e[i].name);
        uint32_t usize = e[i].fake_usize ? e[i].fake_usize : (uint32_t)e[i].size;
        put32(&z, 0x04034b50u);
        put16(&z, 20);
        put16(&z, e[i].flags);
        put16(&z, e[i].deflate ? 8 : 0);
        put16(&z, 0);
        put16(&z, 0x21);
        put32(&z, crc);
        put32(&z, (uint32_t)csize);
        put32(&z, usize);
        put16(&z, nl);
        put16(&z, 0);
        put(&z, e[i].name, nl);
        put(&z, payload, csize);

        put32(&cd, 0x02014b50u);
        put16(&cd, e[i].unix_mode ? (3u << 8) | 20u : 20u);
        put16(&cd, 20);
        put16(&cd, e[i].flags);
        put16(&cd, e[i].deflate ? 8 : 0);
        put16(&cd, 0);
        put16(&cd, 0x21);
        put32(&cd, crc);
        put32(&cd, (uint32_t)csize);
        put32(&cd, usize);
        put16(&cd, nl);
        put16(&cd, 0);
        put16(&cd, 0);
        put16(&cd, 0);
        put16(&cd, 0);
        put32(&cd, e[i].unix_mode << 16);
        put32(&cd, off);
        put(&cd, e[i].name, nl);
        free(comp);
    }
    uint32_t cd_off = (uint32_t)z.n;
    put(&z, cd.p, cd.n);
    put32(&z, 0x06054b50u);
    put16(&z, eocd_disk);
    put16(&z, eocd_disk);
    put16(&z, (uint32_t)n);
    put16(&z, (uint32_t)n);
    put32(&z, (uint32_t)cd.n);
    put32(&z, cd_off);
    put16(&z, 0);
    free(cd.p);
    return z;
}

/* ---- the test package --------------------------------------------------------------------- */
#define MANIFEST_FMT                                                                               \
    "{\"format_version\": \"%s\", \"id\": \"com.example.test\", \"name\": \"Test\",\n"             \
    " \"requires\": [%s], \"max_faces\": 2,\n"                                                     \
    " \"parameters\": [{\"name\": \"tint\", \"type\": \"color\", \"default\": \"#ff000080\"},\n"   \
    "   {\"name\": \"amount\", \"type\": \"float\", \"min\": 0, \"max\": 1, \"default\": "         \
    "0.25}],\n"                                                                                    \
    " \"layers\": [\n"                                                                             \
    "  {\"name\": \"lips\", \"kind\": \"makeup\", \"region\": \"lips\", \"color\": [1, 0, 0],\n"   \
    "   \"color_param\": \"tint\", \"blend\": \"multiply\"},\n"                                    \
    "  {\"name\": \"ears\", \"kind\": \"sticker\", \"anchor\": {\"landmarks\": [10, %s]},\n"       \
    "   \"sprite\": {\"frames\": [\"ears/0.png\", \"ears/1.png\"], \"fps\": 10}},\n"               \
    "  {\"name\": \"grade\", \"kind\": \"lut\", \"lut\": \"%s\", \"intensity_param\": "            \
    "\"amount\"}],\n"                                                                              \
    " \"states\": [{\"name\": \"open\", \"actions\": [{\"action\": \"start_animation\", "          \
    "\"layer\": \"ears\"}]}],\n"                                                                   \
    " \"triggers\": [{\"on\": \"mouth_open\", \"threshold\": 0.3, \"state\": \"open\"}]}"

typedef struct pkg_opts {
    const char *version, *requires, *landmark, *lut;
    const char *manifest; /* overrides the template */
    zentry extra;         /* one more entry when extra.name != NULL */
    int deflate_manifest;
    int bad_frame; /* ears/1.png is garbage */
    int big_frame; /* ears/1.png is 4097x1 */
    uint32_t eocd_disk;
} pkg_opts;

static buf make_pkg(pkg_opts o) {
    char manifest[4096];
    snprintf(manifest, sizeof manifest, MANIFEST_FMT, o.version ? o.version : "1.2.0",
             o.requires ? o.requires : "\"face_landmarks\"", o.landmark ? o.landmark : "152",
             o.lut ? o.lut : "lut.png");
    const char *m = o.manifest ? o.manifest : manifest;
    buf frame = make_png(16, 16), lut = make_png(512, 512), big = make_png(4097, 1);
    static const uint8_t garbage[] = "\x89PNG\r\n\x1a\nnot really a png at all";
    zentry e[5] = {
        {.name = "manifest.json",
         .data = (const uint8_t *)m,
         .size = strlen(m),
         .deflate = o.deflate_manifest},
        {.name = "ears/0.png", .data = frame.p, .size = frame.n},
        {.name = "ears/1.png", .data = frame.p, .size = frame.n, .deflate = 1},
        {.name = "lut.png", .data = lut.p, .size = lut.n, .deflate = 1, .unix_mode = 0100644},
    };
    if (o.bad_frame) {
        e[2].data = garbage;
        e[2].size = sizeof garbage - 1;
    }
    if (o.big_frame) {
        e[2].data = big.p;
        e[2].size = big.n;
    }
    int n = 4;
    if (o.extra.name) e[n++] = o.extra;
    buf z = make_zip(e, n, o.eocd_disk);
    free(frame.p);
    free(lut.p);
    free(big.p);
    return z;
}

static ks_status open_pkg(pkg_opts o, ks_effect **fx) {
    buf z = make_pkg(o);
    ks_status st = ks_effect_open_memory(z.p, z.n, NULL, fx);
    free(z.p);
    return st;
}

#define EXPECT_FAIL(opts, status, needle)                                                          \
    do {                                                                                           \
        ks_effect *fx_ = NULL;                                                                     \
        ks_status st_ = open_pkg(opts, &fx_);                                                      \
        const char *msg_ = ks_last_error(NULL);                                                    \
        if (st_ != (status) || !strstr(msg_, needle))                                              \
            fail_msg("expected %s with \"%s\", got %s: %s", ks_status_string(status), needle,      \
                     ks_status_string(st_), msg_);                                                 \
        assert_null(fx_);                                                                          \
    } while (0)

/* ---- tests -------------------------------------------------------------------------------- */
static void test_valid(void **state) {
    (void)state;
    ks_effect *fx = NULL;
    ks_status st = open_pkg((pkg_opts){.deflate_manifest = 1}, &fx);
    if (st) fail_msg("%s: %s", ks_status_string(st), ks_last_error(NULL));
    const ks_effect_info *in = ks_effect_get_info(fx);
    assert_string_equal(in->id, "com.example.test");
    assert_int_equal(in->version_minor, 2); /* newer minor of the same major is fine */
    assert_int_equal(in->max_faces, 2);
    assert_int_equal(in->required_capabilities, 1u << KS_EFFECT_CAP_FACE_LANDMARKS);
    assert_int_equal(ks_effect_num_layers(fx), 3);
    const ks_effect_layer *lips = ks_effect_layer_at(fx, 0), *ears = ks_effect_layer_at(fx, 1);
    assert_int_equal(lips->kind, KS_EFFECT_LAYER_MAKEUP);
    assert_int_equal(lips->blend, KS_EFFECT_BLEND_MULTIPLY);
    assert_string_equal(lips->color_param, "tint");
    assert_true(lips->color[0] == 1.0f && lips->color[3] == 1.0f);
    assert_int_equal(ears->num_anchor_landmarks, 2);
    assert_int_equal(ears->anchor_landmarks[1], 152);
    assert_int_equal(ears->num_frames, 2);
    assert_true(ears->fps == 10.0f && ears->loop);
    assert_string_equal(ks_effect_layer_at(fx, 2)->lut, "lut.png");
    assert_null(ks_effect_layer_at(fx, 3));
    assert_int_equal(ks_effect_num_params(fx), 2);
    const ks_effect_param *tint = ks_effect_param_at(fx, 0);
    assert_int_equal(tint->type, KS_EFFECT_PARAM_COLOR);
    assert_true(tint->default_color[0] == 1.0f && tint->default_color[3] > 0.5f &&
                tint->default_color[3] < 0.51f);
    assert_true(ks_effect_param_at(fx, 1)->default_value == 0.25f);
    assert_int_equal(ks_effect_num_triggers(fx), 1);
    assert_int_equal(ks_effect_trigger_at(fx, 0)->event, KS_EFFECT_EVENT_MOUTH_OPEN);
    assert_int_equal(ks_effect_trigger_at(fx, 0)->state, 0);
    assert_int_equal(ks_effect_state_at(fx, 0)->actions[0].kind, KS_EFFECT_ACTION_START_ANIMATION);
    assert_int_equal(ks_effect_initial_state(fx), UINT32_MAX);
    const ks_effect_asset *lut = ks_effect_find_asset(fx, "lut.png");
    assert_non_null(lut);
    assert_int_equal(lut->kind, KS_EFFECT_ASSET_PNG);
    assert_int_equal(lut->width_px, 512);
    assert_int_equal(ks_effect_find_asset(fx, "ears/1.png")->height_px, 16);
    assert_null(ks_effect_find_asset(fx, "missing.png"));
    assert_int_equal(ks_effect_num_assets(fx), 4);
    ks_effect_destroy(fx);
    ks_effect_destroy(NULL);
}

static void test_zip_refusals(void **state) {
    (void)state;
    static const uint8_t x[] = "x";
    EXPECT_FAIL(((pkg_opts){.extra = {.name = "../evil.sh", .data = x, .size = 1}}),
                KS_STATUS_INVALID_MODEL, "'..' path component (zip-slip");
    EXPECT_FAIL(((pkg_opts){.extra = {.name = "a/../../evil", .data = x, .size = 1}}),
                KS_STATUS_INVALID_MODEL, "zip-slip");
    EXPECT_FAIL(((pkg_opts){.extra = {.name = "/etc/passwd", .data = x, .size = 1}}),
                KS_STATUS_INVALID_MODEL, "'/etc/passwd' has an absolute path");
    EXPECT_FAIL(((pkg_opts){.extra = {.name = "C:\\evil", .data = x, .size = 1}}),
                KS_STATUS_INVALID_MODEL, "contains byte 0x3a");
    EXPECT_FAIL(((pkg_opts){.extra = {.name = "link",
                                      .data = (const uint8_t *)"/etc",
                                      .size = 4,
                                      .unix_mode = 0120777}}),
                KS_STATUS_INVALID_MODEL, "'link' is a symbolic link");
    EXPECT_FAIL(((pkg_opts){.extra = {.name = "EARS/0.png", .data = x, .size = 1}}),
                KS_STATUS_INVALID_MODEL, "duplicate entry name 'EARS/0.png'");
    EXPECT_FAIL(((pkg_opts){.extra = {.name = "secret", .data = x, .size = 1, .flags = 1}}),
                KS_STATUS_UNSUPPORTED, "'secret' is encrypted");
    EXPECT_FAIL(((pkg_opts){.extra = {.name = "bad", .data = x, .size = 1, .bad_crc = 1}}),
                KS_STATUS_CHECKSUM_MISMATCH, "'bad': CRC-32");
    EXPECT_FAIL(((pkg_opts){.eocd_disk = 1}), KS_STATUS_UNSUPPORTED, "multi-disk");

    /* 4 MiB of zeros deflate to ~4 KiB: a ratio of ~1000, refused before inflating. */
    size_t n = 4u << 20;
    uint8_t *zeros = calloc(n, 1);
    EXPECT_FAIL(((pkg_opts){.extra = {.name = "bomb.bin", .data = zeros, .size = n, .deflate = 1}}),
                KS_STATUS_LIMIT_EXCEEDED, "likely zip bomb");
    free(zeros);

    /* Lying headers: sizes are checked against the limits before anything is inflated. */
    size_t rn = 200u << 10;
    uint8_t *noise = malloc(rn);
    uint32_t rng = 2463534242u; /* xorshift32: incompressible, so ratios stay near 1 */
    for (size_t i = 0; i < rn; i++) {
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        noise[i] = (uint8_t)(rng >> 24);
    }
    EXPECT_FAIL(((pkg_opts){.extra = {.name = "huge.bin",
                                      .data = noise,
                                      .size = rn,
                                      .deflate = 1,
                                      .fake_usize = 33u << 20}}),
                KS_STATUS_LIMIT_EXCEEDED,
                "'huge.bin' is 34603008 bytes uncompressed, over "
                "KS_EFFECT_MAX_FILE_BYTES");
    EXPECT_FAIL(((pkg_opts){.extra = {.name = "z64.bin",
                                      .data = noise,
                                      .size = rn,
                                      .deflate = 1,
                                      .fake_usize = 0xffffffffu}}),
                KS_STATUS_UNSUPPORTED, "'z64.bin' uses zip64 fields");
    EXPECT_FAIL(((pkg_opts){.extra = {.name = "short.bin",
                                      .data = noise,
                                      .size = rn,
                                      .deflate = 1,
                                      .fake_usize = (uint32_t)rn + 1}}),
                KS_STATUS_INVALID_MODEL, "'short.bin': corrupt DEFLATE data");
    {
        zentry many[5];
        for (int i = 0; i < 5; i++)
            many[i] = (zentry){.name = (const char *[]){"a", "b", "c", "d", "e"}[i],
                               .data = noise,
                               .size = rn,
                               .deflate = 1,
                               .fake_usize = 30u << 20};
        buf z = make_zip(many, 5, 0);
        ks_effect *fx = NULL;
        assert_int_equal(ks_effect_open_memory(z.p, z.n, NULL, &fx), KS_STATUS_LIMIT_EXCEEDED);
        if (!strstr(ks_last_error(NULL), "over KS_EFFECT_MAX_TOTAL_BYTES"))
            fail_msg("%s", ks_last_error(NULL));
        free(z.p);
    }
    free(noise);
    {
        enum { N = KS_EFFECT_MAX_FILES + 1 };
        static char names[N][8];
        static zentry lots[N];
        for (int i = 0; i < N; i++) {
            snprintf(names[i], sizeof names[i], "f%d", i);
            lots[i] = (zentry){.name = names[i], .data = (const uint8_t *)"x", .size = 1};
        }
        buf z = make_zip(lots, N, 0);
        ks_effect *fx = NULL;
        assert_int_equal(ks_effect_open_memory(z.p, z.n, NULL, &fx), KS_STATUS_LIMIT_EXCEEDED);
        assert_non_null(strstr(ks_last_error(NULL), "513 entries, over KS_EFFECT_MAX_FILES"));
        free(z.p);
    }

    ks_effect *fx = NULL;
    assert_int_equal(ks_effect_open_memory("PK", 2, NULL, &fx), KS_STATUS_INVALID_MODEL);
    assert_int_equal(ks_effect_open_memory(NULL, 0, NULL, &fx), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_effect_open_file("/nonexistent/x.kfx", NULL, &fx), KS_STATUS_IO_ERROR);
    assert_non_null(strstr(ks_last_error(NULL), "/nonexistent/x.kfx"));
    assert_null(fx);
}

static void test_manifest_refusals(void **state) {
    (void)state;
    EXPECT_FAIL(((pkg_opts){.requires = "\"face_landmarks\", \"x_ray\""}), KS_STATUS_UNSUPPORTED,
                "requires[1]: unknown value \"x_ray\"");
    EXPECT_FAIL(((pkg_opts){.version = "2.0.0"}), KS_STATUS_VERSION_MISMATCH,
                "format_version: \"2.0.0\" has major 2");
    EXPECT_FAIL(((pkg_opts){.version = "1.x"}), KS_STATUS_INVALID_MODEL,
                "format_version: expected a semantic version");
    EXPECT_FAIL(((pkg_opts){.landmark = "500"}), KS_STATUS_INVALID_MODEL,
                "layers[1].anchor.landmarks[1]: expected a landmark index in [0, 478), got 500");
    EXPECT_FAIL(((pkg_opts){.landmark = "\"nose\""}), KS_STATUS_INVALID_MODEL,
                "layers[1].anchor.landmarks[1]: expected a landmark index in [0, 478), got "
                "\"nose\"");
    EXPECT_FAIL(((pkg_opts){.requires = ""}), KS_STATUS_INVALID_MODEL,
                "layers[0]: a makeup layer needs capability \"face_landmarks\"");
    EXPECT_FAIL(((pkg_opts){.lut = "nope.png"}), KS_STATUS_INVALID_MODEL,
                "layers[2].lut: asset 'nope.png' is not in the package");
    EXPECT_FAIL(((pkg_opts){.lut = "ears/0.png"}), KS_STATUS_INVALID_MODEL,
                "layers[2].lut: asset 'ears/0.png': expected a 512x512 PNG LUT, got png 16x16");
    EXPECT_FAIL(((pkg_opts){.bad_frame = 1}), KS_STATUS_INVALID_MODEL,
                "asset 'ears/1.png': cannot decode the image header");
    EXPECT_FAIL(((pkg_opts){.big_frame = 1}), KS_STATUS_LIMIT_EXCEEDED,
                "asset 'ears/1.png': image is 4097x1, over KS_EFFECT_MAX_TEXTURE_PX");
    EXPECT_FAIL(((pkg_opts){.manifest = "{\"format_version\": \"1.0.0\""}), KS_STATUS_INVALID_MODEL,
                "manifest.json: invalid JSON near byte");
    EXPECT_FAIL(((pkg_opts){.manifest = "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]"
                                        "]]]]]]]]]]]"}),
                KS_STATUS_LIMIT_EXCEEDED, "KS_EFFECT_MAX_JSON_DEPTH");
    char *big_json = malloc(KS_EFFECT_MAX_JSON_BYTES + 16);
    memset(big_json, ' ', KS_EFFECT_MAX_JSON_BYTES + 15);
    big_json[0] = '{';
    memcpy(big_json + KS_EFFECT_MAX_JSON_BYTES + 13, "}", 2);
    EXPECT_FAIL(((pkg_opts){.manifest = big_json}), KS_STATUS_LIMIT_EXCEEDED,
                "over KS_EFFECT_MAX_JSON_BYTES");
    free(big_json);
    EXPECT_FAIL(((pkg_opts){.manifest = "{\"format_version\": \"1.0.0\", \"id\": \"a b\"}"}),
                KS_STATUS_INVALID_MODEL, "id: expected letters");
    EXPECT_FAIL(((pkg_opts){.manifest = "{\"format_version\": \"1.0.0\", \"id\": \"a\", "
                                        "\"name\": \"n\"}"}),
                KS_STATUS_INVALID_MODEL, "layers: required field is missing");
    EXPECT_FAIL(((pkg_opts){.manifest = "{\"format_version\": \"1.0.0\", \"id\": \"a\", "
                                        "\"name\": \"n\", \"layers\": [{\"name\": \"s\", "
                                        "\"kind\": \"hologram\"}]}"}),
                KS_STATUS_INVALID_MODEL, "layers[0].kind: unknown value \"hologram\"");

    /* The host can narrow the capabilities it provides. */
    buf z = make_pkg((pkg_opts){.requires = "\"face_landmarks\", \"segmentation\""});
    ks_effect *fx = NULL;
    ks_effect_desc desc = {.host_capabilities = 1u << KS_EFFECT_CAP_FACE_LANDMARKS};
    assert_int_equal(ks_effect_open_memory(z.p, z.n, &desc, &fx), KS_STATUS_UNSUPPORTED);
    assert_non_null(
        strstr(ks_last_error(NULL), "requires[1]: the effect requires \"segmentation\""));
    assert_int_equal(ks_effect_open_memory(z.p, z.n, NULL, &fx), KS_STATUS_OK);
    ks_effect_destroy(fx);
    free(z.p);
}

/* Every prefix and many single-byte corruptions fail cleanly (ASan/UBSan builds check the
 * "cleanly"). */
static void test_truncation_and_corruption(void **state) {
    (void)state;
    buf z = make_pkg((pkg_opts){.deflate_manifest = 1});
    for (size_t n = 0; n < z.n; n += (n < 4096 || z.n - n < 4096) ? 1 : 97) {
        ks_effect *fx = NULL;
        assert_int_not_equal(ks_effect_open_memory(z.p, n, NULL, &fx), KS_STATUS_OK);
        assert_null(fx);
    }
    uint8_t *copy = malloc(z.n);
    for (size_t i = 0; i < z.n; i += (i < 2048 || z.n - i < 2048) ? 1 : 251) {
        memcpy(copy, z.p, z.n);
        copy[i] ^= 0x5a;
        ks_effect *fx = NULL;
        if (ks_effect_open_memory(copy, z.n, NULL, &fx) == KS_STATUS_OK) ks_effect_destroy(fx);
    }
    free(copy);
    free(z.p);
}

typedef struct counting {
    int fail_at, count, live;
} counting;
static void *c_alloc(void *user, size_t size, size_t align) {
    counting *c = user;
    (void)align;
    if (c->count++ == c->fail_at) return NULL;
    c->live++;
    return malloc(size);
}
static void c_free(void *user, void *p) {
    ((counting *)user)->live--;
    free(p);
}

static void test_out_of_memory(void **state) {
    (void)state;
    buf z = make_pkg((pkg_opts){.deflate_manifest = 1});
    ks_status st = KS_STATUS_OUT_OF_MEMORY;
    int i;
    for (i = 0; i < 1000 && st == KS_STATUS_OUT_OF_MEMORY; i++) {
        counting c = {.fail_at = i};
        ks_allocator a = {c_alloc, c_free, &c};
        ks_effect *fx = NULL;
        st = ks_effect_open_memory(z.p, z.n, &(ks_effect_desc){.allocator = &a}, &fx);
        if (st == KS_STATUS_OK) {
            assert_non_null(fx);
            ks_effect_destroy(fx);
        } else {
            assert_int_equal(st, KS_STATUS_OUT_OF_MEMORY);
            assert_null(fx);
        }
        assert_int_equal(c.live, 0);
    }
    assert_int_equal(st, KS_STATUS_OK);
    assert_true(i > 3);
    free(z.p);
}

/* Format 1.1: background "mode"/"blur_radius" and "texture_param". */
#define BG_MANIFEST(layer)                                                                         \
    "{\"format_version\": \"1.1.0\", \"id\": \"a\", \"name\": \"n\", "                             \
    "\"requires\": [\"segmentation\"], \"parameters\": [{\"name\": \"img\", \"type\": "            \
    "\"image\"}, {\"name\": \"f\", \"type\": \"float\"}], \"layers\": [" layer "]}"
static void test_background_modes(void **state) {
    (void)state;
    ks_effect *fx = NULL;
    buf z = make_pkg(
        (pkg_opts){.manifest = BG_MANIFEST("{\"name\": \"bg\", \"kind\": \"background\", \"mode\": "
                                           "\"blur\", \"blur_radius\": 0.05}")});
    ks_status st = ks_effect_open_memory(z.p, z.n, NULL, &fx);
    free(z.p);
    if (st) fail_msg("%s: %s", ks_status_string(st), ks_last_error(NULL));
    const ks_effect_layer *bg = ks_effect_layer_at(fx, 0);
    assert_int_equal(bg->background_mode, KS_EFFECT_BACKGROUND_BLUR);
    assert_true(bg->blur_radius == 0.05f);
    assert_string_equal(bg->texture_param, "");
    ks_effect_destroy(fx);

    z = make_pkg((pkg_opts){
        .manifest = BG_MANIFEST("{\"name\": \"bg\", \"kind\": \"background\", \"texture\": "
                                "\"ears/0.png\", \"texture_param\": \"img\"}")});
    st = ks_effect_open_memory(z.p, z.n, NULL, &fx);
    free(z.p);
    if (st) fail_msg("%s: %s", ks_status_string(st), ks_last_error(NULL));
    bg = ks_effect_layer_at(fx, 0);
    assert_int_equal(bg->background_mode, KS_EFFECT_BACKGROUND_REPLACE);
    assert_true(bg->blur_radius == 0.02f);
    assert_string_equal(bg->texture_param, "img");
    ks_effect_destroy(fx);

    EXPECT_FAIL(((pkg_opts){.manifest = BG_MANIFEST(
                                "{\"name\": \"bg\", \"kind\": \"background\", \"mode\": "
                                "\"blur\", \"texture\": \"ears/0.png\"}")}),
                KS_STATUS_INVALID_MODEL, "layers[0]: a \"blur\" background takes no \"texture\"");
    EXPECT_FAIL(((pkg_opts){.manifest = BG_MANIFEST(
                                "{\"name\": \"bg\", \"kind\": \"background\", \"mode\": "
                                "\"sepia\"}")}),
                KS_STATUS_INVALID_MODEL, "layers[0].mode: unknown value \"sepia\"");
    EXPECT_FAIL(((pkg_opts){.manifest = BG_MANIFEST(
                                "{\"name\": \"bg\", \"kind\": \"background\", \"mode\": "
                                "\"blur\", \"blur_radius\": 0.5}")}),
                KS_STATUS_INVALID_MODEL, "layers[0].blur_radius");
    EXPECT_FAIL(((pkg_opts){.manifest = BG_MANIFEST(
                                "{\"name\": \"bg\", \"kind\": \"background\", \"texture\": "
                                "\"ears/0.png\", \"texture_param\": \"f\"}")}),
                KS_STATUS_INVALID_MODEL,
                "layers[0].texture_param: parameter \"f\" is of type float, expected image");
    assert_string_equal(ks_effect_background_mode_string(KS_EFFECT_BACKGROUND_BLUR), "blur");
    assert_string_equal(ks_effect_background_mode_string(KS_EFFECT_BACKGROUND_MODE_COUNT),
                        "invalid");
}

static void test_enum_strings(void **state) {
    (void)state;
    assert_string_equal(ks_effect_layer_kind_string(KS_EFFECT_LAYER_MESH3D), "mesh3d");
    assert_string_equal(ks_effect_blend_string(KS_EFFECT_BLEND_SOFT_LIGHT), "soft_light");
    assert_string_equal(ks_effect_event_string(KS_EFFECT_EVENT_BROW_RAISE), "brow_raise");
    assert_string_equal(ks_effect_capability_string(KS_EFFECT_CAP_COUNT), "invalid");
    assert_string_equal(ks_effect_layer_kind_string(KS_EFFECT_LAYER_KIND_COUNT), "invalid");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_zip_refusals),
        cmocka_unit_test(test_manifest_refusals),
        cmocka_unit_test(test_truncation_and_corruption),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_enum_strings),
        cmocka_unit_test(test_background_modes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
