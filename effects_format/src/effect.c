/* Effect package reader: zip (zip.c) -> manifest.json (cJSON) -> typed, validated structs.
 *
 * Everything the accessors return lives in one arena owned by the ks_effect, so destroy is a
 * walk over a block list and a half-built effect can always be destroyed. Error messages are
 * built as "<package>: manifest.json: <json path>: <what was expected>, got <what was found>",
 * the JSON path being the one a text editor user would type (layers[2].anchor.landmarks[1]). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/common.h"
#include "effect_internal.h"

#define STBI_NO_STDIO
#include <stb/stb_image.h>

#define ARENA_BLOCK_BYTES 16384u
#define PATH_CAP 192

typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} arena_block;

struct ks_effect {
    ks__object obj; /* must be first: ks_last_error() */
    ks_allocator alloc;
    const ks_allocator *a; /* &alloc, or NULL for malloc */
    arena_block *arena;
    ks_effect_info info;
    ks_effect_layer *layers;
    uint32_t num_layers;
    ks_effect_param *params;
    uint32_t num_params;
    ks_effect_state *states;
    uint32_t num_states;
    uint32_t initial_state;
    ks_effect_trigger *triggers;
    uint32_t num_triggers;
    ks_effect_asset *assets;
    uint32_t num_assets;
    ks__zip_file *files;
    uint32_t num_files;
};

typedef struct parser {
    ks_effect *fx;
    char *err;
    size_t cap;
    uint32_t host_caps;
} parser;

/* ------------------------------------------------------------------------------------------ */
/* Allocation                                                                                 */

static void *arena_alloc(ks_effect *fx, size_t size) {
    size = (size + 15u) & ~(size_t)15u;
    arena_block *b = fx->arena;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > ARENA_BLOCK_BYTES ? size : ARENA_BLOCK_BYTES;
        b = ks__alloc(fx->a, sizeof(arena_block) + cap);
        if (!b) return NULL;
        b->next = fx->arena;
        b->used = 0;
        b->cap = cap;
        fx->arena = b;
    }
    void *p = b->data + b->used;
    b->used += size;
    memset(p, 0, size);
    return p;
}

static ks_status perr(parser *p, ks_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static ks_status perr(parser *p, ks_status st, const char *fmt, ...) {
    int n = snprintf(p->err, p->cap, "manifest.json: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err + n, p->cap - (size_t)n, fmt, ap);
    va_end(ap);
    return st;
}

static ks_status oom(parser *p) {
    return perr(p, KS_STATUS_OUT_OF_MEMORY, "out of memory");
}

static char *pstrdup(parser *p, const char *s) {
    size_t n = strlen(s);
    char *d = arena_alloc(p->fx, n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

/* ------------------------------------------------------------------------------------------ */
/* Enum names (on-disk, frozen)                                                               */

static const char *const k_caps[] = {"face_landmarks", "segmentation", "hand_landmarks",
                                     "pose_landmarks", "face_expressions"};
static const char *const k_kinds[] = {"sticker", "face_texture", "makeup", "beauty",
                                      "lut",     "background",   "mesh3d"};
static const char *const k_blends[] = {"normal", "multiply", "overlay", "soft_light"};
static const char *const k_regions[] = {"lips",  "eyeshadow", "eyeliner",
                                        "blush", "eyebrows",  "foundation"};
static const char *const k_ptypes[] = {"color", "float", "enum", "image"};
static const char *const k_events[] = {"face_found", "face_lost",  "mouth_open",
                                       "blink",      "brow_raise", "smile"};
static const char *const k_actions[] = {"show_layer", "hide_layer", "start_animation"};
static const char *const k_assets[] = {"other", "png", "jpeg", "glb", "shader", "manifest"};
static const char *const k_bg_modes[] = {"replace", "blur"};

#define ENUM_STRING(table, v)                                                                      \
    ((unsigned)(v) < sizeof(table) / sizeof(table[0]) ? table[v] : "invalid")
const char *ks_effect_capability_string(ks_effect_capability c) {
    return ENUM_STRING(k_caps, c);
}
const char *ks_effect_layer_kind_string(ks_effect_layer_kind k) {
    return ENUM_STRING(k_kinds, k);
}
const char *ks_effect_blend_string(ks_effect_blend b) {
    return ENUM_STRING(k_blends, b);
}
const char *ks_effect_makeup_region_string(ks_effect_makeup_region r) {
    return ENUM_STRING(k_regions, r);
}
const char *ks_effect_param_type_string(ks_effect_param_type t) {
    return ENUM_STRING(k_ptypes, t);
}
const char *ks_effect_event_string(ks_effect_event e) {
    return ENUM_STRING(k_events, e);
}
const char *ks_effect_action_kind_string(ks_effect_action_kind k) {
    return ENUM_STRING(k_actions, k);
}
const char *ks_effect_asset_kind_string(ks_effect_asset_kind k) {
    return ENUM_STRING(k_assets, k);
}
const char *ks_effect_background_mode_string(ks_effect_background_mode m) {
    return ENUM_STRING(k_bg_modes, m);
}

/* ------------------------------------------------------------------------------------------ */
/* JSON helpers                                                                               */

/* Short description of a JSON value for "got ..." (strings quoted and truncated). */
static const char *describe(const cJSON *v, char *buf, size_t cap) {
    if (!v) return "nothing";
    if (cJSON_IsString(v)) {
        snprintf(buf, cap, "\"%.40s%s\"", v->valuestring, strlen(v->valuestring) > 40 ? "..." : "");
        return buf;
    }
    if (cJSON_IsNumber(v)) {
        snprintf(buf, cap, "%g", v->valuedouble);
        return buf;
    }
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v) ? "true" : "false";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsObject(v)) return "an object";
    return "an invalid value";
}

/* JSON paths are short (depth <= KS_EFFECT_MAX_JSON_DEPTH, fixed keys); a path that still does
 * not fit ends in "..." rather than being cut silently. */
static void mark_truncated(char *out, int n) {
    if (n >= PATH_CAP) memcpy(out + PATH_CAP - 4, "...", 4);
}
static void join(char *out, const char *path, const char *key) {
    mark_truncated(out, snprintf(out, PATH_CAP, "%s%s%s", path, path[0] ? "." : "", key));
}
static void index_path(char *out, const char *path, uint32_t i) {
    mark_truncated(out, snprintf(out, PATH_CAP, "%s[%u]", path, i));
}

static ks_status want(parser *p, const char *path, const char *expected, const cJSON *got) {
    char buf[64];
    return perr(p, KS_STATUS_INVALID_MODEL, "%s: expected %s, got %s", path, expected,
                describe(got, buf, sizeof buf));
}

static ks_status check_string_value(parser *p, const char *path, const cJSON *v, int allow_empty) {
    if (!cJSON_IsString(v)) return want(p, path, "a string", v);
    size_t n = strlen(v->valuestring);
    if (n > KS_EFFECT_MAX_STRING_BYTES)
        return perr(p, KS_STATUS_LIMIT_EXCEEDED,
                    "%s: string of %zu bytes exceeds KS_EFFECT_MAX_STRING_BYTES (%u)", path, n,
                    KS_EFFECT_MAX_STRING_BYTES);
    if (!allow_empty && n == 0) return want(p, path, "a non-empty string", v);
    return KS_STATUS_OK;
}

static ks_status get_str(parser *p, const cJSON *obj, const char *path, const char *key,
                         int required, const char **out) {
    char sub[PATH_CAP];
    join(sub, path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required) return perr(p, KS_STATUS_INVALID_MODEL, "%s: required field is missing", sub);
        *out = "";
        return KS_STATUS_OK;
    }
    ks_status st = check_string_value(p, sub, v, 0);
    if (st) return st;
    *out = pstrdup(p, v->valuestring);
    return *out ? KS_STATUS_OK : oom(p);
}

static ks_status get_num(parser *p, const cJSON *obj, const char *path, const char *key,
                         int required, double def, double lo, double hi, int integer, double *out) {
    char sub[PATH_CAP], exp[96];
    join(sub, path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required) return perr(p, KS_STATUS_INVALID_MODEL, "%s: required field is missing", sub);
        *out = def;
        return KS_STATUS_OK;
    }
    snprintf(exp, sizeof exp, "%s in [%g, %g]", integer ? "an integer" : "a number", lo, hi);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi || (integer && v->valuedouble != floor(v->valuedouble)))
        return want(p, sub, exp, v);
    *out = v->valuedouble;
    return KS_STATUS_OK;
}

static ks_status get_float(parser *p, const cJSON *obj, const char *path, const char *key,
                           double def, double lo, double hi, float *out) {
    double d;
    ks_status st = get_num(p, obj, path, key, 0, def, lo, hi, 0, &d);
    if (!st) *out = (float)d;
    return st;
}

static ks_status get_bool(parser *p, const cJSON *obj, const char *path, const char *key, bool def,
                          bool *out) {
    char sub[PATH_CAP];
    join(sub, path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        *out = def;
        return KS_STATUS_OK;
    }
    if (!cJSON_IsBool(v)) return want(p, sub, "true or false", v);
    *out = cJSON_IsTrue(v);
    return KS_STATUS_OK;
}

static ks_status match_enum(parser *p, const char *path, const cJSON *v, const char *const *names,
                            uint32_t count, ks_status unknown_status, uint32_t *out) {
    ks_status st = check_string_value(p, path, v, 0);
    if (st) return st;
    for (uint32_t i = 0; i < count; i++) {
        if (strcmp(v->valuestring, names[i]) == 0) {
            *out = i;
            return KS_STATUS_OK;
        }
    }
    char list[256];
    size_t n = 0;
    list[0] = '\0';
    for (uint32_t i = 0; i < count && n < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", names[i]);
    return perr(p, unknown_status, "%s: unknown value \"%.64s\" (expected one of: %s)", path,
                v->valuestring, list);
}

static ks_status get_enum(parser *p, const cJSON *obj, const char *path, const char *key,
                          const char *const *names, uint32_t count, int required, uint32_t def,
                          uint32_t *out) {
    char sub[PATH_CAP];
    join(sub, path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required) return perr(p, KS_STATUS_INVALID_MODEL, "%s: required field is missing", sub);
        *out = def;
        return KS_STATUS_OK;
    }
    return match_enum(p, sub, v, names, count, KS_STATUS_INVALID_MODEL, out);
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Colours are "#RRGGBB", "#RRGGBBAA" or [r, g, b(, a)] with components in [0, 1]. */
static ks_status parse_color(parser *p, const char *path, const cJSON *v, float out[4]) {
    const char *exp = "a colour (\"#RRGGBB\", \"#RRGGBBAA\" or [r, g, b, a] in [0, 1])";
    if (cJSON_IsString(v)) {
        const char *s = v->valuestring;
        size_t n = strlen(s);
        if (s[0] != '#' || (n != 7 && n != 9)) return want(p, path, exp, v);
        out[3] = 1.0f;
        for (size_t i = 0; i < (n - 1) / 2; i++) {
            int hi = hexval(s[1 + 2 * i]), lo = hexval(s[2 + 2 * i]);
            if (hi < 0 || lo < 0) return want(p, path, exp, v);
            out[i] = (float)(hi * 16 + lo) / 255.0f;
        }
        return KS_STATUS_OK;
    }
    int n = cJSON_GetArraySize(v);
    if (!cJSON_IsArray(v) || n < 3 || n > 4) return want(p, path, exp, v);
    out[3] = 1.0f;
    for (int i = 0; i < n; i++) {
        const cJSON *c = cJSON_GetArrayItem(v, i);
        if (!cJSON_IsNumber(c) || !(c->valuedouble >= 0.0 && c->valuedouble <= 1.0)) {
            char sub[PATH_CAP];
            index_path(sub, path, (uint32_t)i);
            return want(p, sub, "a colour component in [0, 1]", c);
        }
        out[i] = (float)c->valuedouble;
    }
    return KS_STATUS_OK;
}

/* An array field: missing -> count 0 (or an error if required); bounds on the length. */
static ks_status get_array(parser *p, const cJSON *obj, const char *path, const char *key,
                           uint32_t min, uint32_t max, const char *limit_name, const cJSON **arr,
                           uint32_t *count) {
    char sub[PATH_CAP];
    join(sub, path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *arr = v;
    *count = 0;
    if (!v) {
        if (min) return perr(p, KS_STATUS_INVALID_MODEL, "%s: required field is missing", sub);
        return KS_STATUS_OK;
    }
    if (!cJSON_IsArray(v)) return want(p, sub, "an array", v);
    int n = cJSON_GetArraySize(v);
    if ((uint32_t)n > max)
        return perr(p, KS_STATUS_LIMIT_EXCEEDED, "%s: %d entries exceed %s (%u)", sub, n,
                    limit_name, max);
    if ((uint32_t)n < min)
        return perr(p, KS_STATUS_INVALID_MODEL, "%s: expected at least %u entries, got %d", sub,
                    min, n);
    *count = (uint32_t)n;
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Assets                                                                                     */

static ks_effect_asset *find_asset(const ks_effect *fx, const char *name) {
    for (uint32_t i = 0; i < fx->num_assets; i++)
        if (strcmp(fx->assets[i].name, name) == 0) return (ks_effect_asset *)&fx->assets[i];
    return NULL;
}

static int has_suffix_ci(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    if (n < m) return 0;
    for (size_t i = 0; i < m; i++) {
        char c = s[n - m + i];
        if (c >= 'A' && c <= 'Z') c = (char)(c + 32);
        if (c != suffix[i]) return 0;
    }
    return 1;
}

/* Decodes the image header (never the pixels) so a renderer can trust width/height before it
 * allocates a texture. Returns an error without the "manifest.json" prefix: images are checked
 * for every file, referenced or not. */
static ks_status check_image(ks_effect_asset *as, char *err, size_t err_cap) {
    static const uint8_t png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    int is_png = as->size_bytes >= 8 && memcmp(as->data, png_magic, 8) == 0;
    int is_jpeg =
        as->size_bytes >= 3 && as->data[0] == 0xff && as->data[1] == 0xd8 && as->data[2] == 0xff;
    int w = 0, h = 0, comp = 0;
    if ((!is_png && !is_jpeg) || as->size_bytes > INT32_MAX ||
        !stbi_info_from_memory(as->data, (int)as->size_bytes, &w, &h, &comp) || w <= 0 || h <= 0) {
        snprintf(err, err_cap,
                 "asset '%s': cannot decode the image header (expected a PNG or JPEG "
                 "file)",
                 as->name);
        return KS_STATUS_INVALID_MODEL;
    }
    if ((uint32_t)w > KS_EFFECT_MAX_TEXTURE_PX || (uint32_t)h > KS_EFFECT_MAX_TEXTURE_PX) {
        snprintf(err, err_cap,
                 "asset '%s': image is %dx%d, over KS_EFFECT_MAX_TEXTURE_PX (%u) per "
                 "side",
                 as->name, w, h, KS_EFFECT_MAX_TEXTURE_PX);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    as->kind = is_png ? KS_EFFECT_ASSET_PNG : KS_EFFECT_ASSET_JPEG;
    as->width_px = (uint32_t)w;
    as->height_px = (uint32_t)h;
    return KS_STATUS_OK;
}

typedef enum use { USE_IMAGE, USE_PNG_LUT, USE_GLB, USE_SHADER } use;

/* Resolves a reference from the manifest (the string at `path`) and checks the asset fits its
 * use. Images were header-checked when the package was opened. */
static ks_status ref_asset(parser *p, const char *path, const char *name, use u) {
    ks_effect_asset *as = find_asset(p->fx, name);
    if (!as)
        return perr(p, KS_STATUS_INVALID_MODEL, "%s: asset '%s' is not in the package", path, name);
    switch (u) {
    case USE_IMAGE:
        if (as->kind != KS_EFFECT_ASSET_PNG && as->kind != KS_EFFECT_ASSET_JPEG)
            return perr(p, KS_STATUS_INVALID_MODEL,
                        "%s: asset '%s': expected a PNG or JPEG image, got %s data", path, name,
                        ks_effect_asset_kind_string(as->kind));
        return KS_STATUS_OK;
    case USE_PNG_LUT:
        if (as->kind != KS_EFFECT_ASSET_PNG || as->width_px != KS_EFFECT_LUT_PX ||
            as->height_px != KS_EFFECT_LUT_PX)
            return perr(p, KS_STATUS_INVALID_MODEL,
                        "%s: asset '%s': expected a %ux%u PNG LUT, got %s %ux%u", path, name,
                        KS_EFFECT_LUT_PX, KS_EFFECT_LUT_PX, ks_effect_asset_kind_string(as->kind),
                        as->width_px, as->height_px);
        return KS_STATUS_OK;
    case USE_GLB: {
        /* glb header: magic "glTF", version 2, total length == file size; then a JSON chunk. */
        const uint8_t *d = as->data;
        uint32_t ver = 0, len = 0, chunk_type = 0;
        if (as->size_bytes >= 20) {
            ver =
                (uint32_t)d[4] | (uint32_t)d[5] << 8 | (uint32_t)d[6] << 16 | (uint32_t)d[7] << 24;
            len = (uint32_t)d[8] | (uint32_t)d[9] << 8 | (uint32_t)d[10] << 16 |
                  (uint32_t)d[11] << 24;
            chunk_type = (uint32_t)d[16] | (uint32_t)d[17] << 8 | (uint32_t)d[18] << 16 |
                         (uint32_t)d[19] << 24;
        }
        if (as->size_bytes < 20 || memcmp(d, "glTF", 4) != 0 || ver != 2 || len != as->size_bytes ||
            chunk_type != 0x4e4f534au /* "JSON" */)
            return perr(p, KS_STATUS_INVALID_MODEL,
                        "%s: asset '%s': expected a binary glTF 2.0 file (magic \"glTF\", "
                        "version 2, length %zu, JSON chunk first), got version %u length %u",
                        path, name, as->size_bytes, ver, len);
        as->kind = KS_EFFECT_ASSET_GLB;
        return KS_STATUS_OK;
    }
    case USE_SHADER: {
        const char *s = (const char *)as->data;
        if (strlen(s) != as->size_bytes)
            return perr(p, KS_STATUS_INVALID_MODEL,
                        "%s: asset '%s': expected GLSL source text, got a NUL byte at offset %zu",
                        path, name, strlen(s));
        while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
            s++;
        static const char directive[] = "#version 300 es";
        if (strncmp(s, directive, sizeof directive - 1) != 0 ||
            (s[sizeof directive - 1] != '\n' && s[sizeof directive - 1] != '\r' &&
             s[sizeof directive - 1] != ' ' && s[sizeof directive - 1] != '\0'))
            return perr(p, KS_STATUS_INVALID_MODEL,
                        "%s: asset '%s': expected a GLSL ES 3.00 fragment shader starting with "
                        "\"#version 300 es\"",
                        path, name);
        if (!strstr(s, "main"))
            return perr(p, KS_STATUS_INVALID_MODEL,
                        "%s: asset '%s': the shader has no main() function", path, name);
        as->kind = KS_EFFECT_ASSET_SHADER;
        return KS_STATUS_OK;
    }
    }
    return KS_STATUS_INTERNAL;
}

static ks_status get_asset(parser *p, const cJSON *obj, const char *path, const char *key,
                           int required, use u, const char **out) {
    ks_status st = get_str(p, obj, path, key, required, out);
    if (st || !(*out)[0]) return st;
    char sub[PATH_CAP];
    join(sub, path, key);
    return ref_asset(p, sub, *out, u);
}

/* ------------------------------------------------------------------------------------------ */
/* Manifest sections                                                                          */

static ks_status parse_version(parser *p, const cJSON *root) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "format_version");
    if (!v) return perr(p, KS_STATUS_INVALID_MODEL, "format_version: required field is missing");
    const char *exp = "a semantic version \"MAJOR.MINOR.PATCH\"";
    if (!cJSON_IsString(v)) return want(p, "format_version", exp, v);
    uint32_t part[3] = {0, 0, 0};
    const char *s = v->valuestring;
    for (int i = 0; i < 3; i++) {
        if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
            return want(p, "format_version", exp, v);
        while (*s >= '0' && *s <= '9') {
            if (part[i] > 99999) return want(p, "format_version", exp, v);
            part[i] = part[i] * 10 + (uint32_t)(*s++ - '0');
        }
        if (i < 2 && *s++ != '.') return want(p, "format_version", exp, v);
    }
    if (*s != '\0' && *s != '-' && *s != '+') return want(p, "format_version", exp, v);
    if (part[0] == 0)
        return perr(p, KS_STATUS_VERSION_MISMATCH,
                    "format_version: \"%.32s\" is a pre-release major 0 (this reader reads "
                    "major %u)",
                    v->valuestring, KS_EFFECT_FORMAT_MAJOR);
    if (part[0] > KS_EFFECT_FORMAT_MAJOR)
        return perr(p, KS_STATUS_VERSION_MISMATCH,
                    "format_version: \"%.32s\" has major %u; this reader supports major %u "
                    "(update Kestrel)",
                    v->valuestring, part[0], KS_EFFECT_FORMAT_MAJOR);
    p->fx->info.version_major = part[0];
    p->fx->info.version_minor = part[1];
    p->fx->info.version_patch = part[2];
    return KS_STATUS_OK;
}

static ks_status parse_info(parser *p, const cJSON *root) {
    ks_effect_info *in = &p->fx->info;
    ks_status st = parse_version(p, root);
    if (!st) st = get_str(p, root, "", "id", 1, &in->id);
    if (st) return st;
    for (const char *c = in->id; *c; c++) {
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '.' || *c == '_' || *c == '-'))
            return perr(p, KS_STATUS_INVALID_MODEL,
                        "id: expected letters, digits, '.', '_' or '-', got \"%s\"", in->id);
    }
    if (!st) st = get_str(p, root, "", "name", 1, &in->name);
    if (!st) st = get_str(p, root, "", "author", 0, &in->author);
    if (!st) st = get_asset(p, root, "", "thumbnail", 0, USE_IMAGE, &in->thumbnail);
    double d = 1;
    if (!st) st = get_num(p, root, "", "max_faces", 0, 1, 1, KS_EFFECT_MAX_FACES, 1, &d);
    if (st) return st;
    in->max_faces = (uint32_t)d;

    const cJSON *arr;
    uint32_t n;
    st = get_array(p, root, "", "requires", 0, KS_EFFECT_CAP_COUNT * 4u, "the capability count",
                   &arr, &n);
    for (uint32_t i = 0; !st && i < n; i++) {
        char sub[PATH_CAP];
        index_path(sub, "requires", i);
        uint32_t cap;
        st = match_enum(p, sub, cJSON_GetArrayItem(arr, (int)i), k_caps, KS_EFFECT_CAP_COUNT,
                        KS_STATUS_UNSUPPORTED, &cap);
        if (st) break;
        if (!(p->host_caps & (1u << cap)))
            st = perr(p, KS_STATUS_UNSUPPORTED,
                      "%s: the effect requires \"%s\", which this host does not provide", sub,
                      k_caps[cap]);
        in->required_capabilities |= 1u << cap;
    }
    return st;
}

static ks_status parse_params(parser *p, const cJSON *root) {
    const cJSON *arr;
    uint32_t n;
    ks_status st = get_array(p, root, "", "parameters", 0, KS_EFFECT_MAX_PARAMS,
                             "KS_EFFECT_MAX_PARAMS", &arr, &n);
    if (st || n == 0) return st;
    ks_effect *fx = p->fx;
    fx->params = arena_alloc(fx, n * sizeof(*fx->params));
    if (!fx->params) return oom(p);
    for (uint32_t i = 0; i < n; i++) {
        char path[PATH_CAP], sub[PATH_CAP];
        index_path(path, "parameters", i);
        const cJSON *o = cJSON_GetArrayItem(arr, (int)i);
        if (!cJSON_IsObject(o)) return want(p, path, "an object", o);
        ks_effect_param *pm = &fx->params[i];
        uint32_t type = 0;
        st = get_str(p, o, path, "name", 1, &pm->name);
        if (!st)
            st = get_enum(p, o, path, "type", k_ptypes, KS_EFFECT_PARAM_TYPE_COUNT, 1, 0, &type);
        if (st) return st;
        pm->type = (ks_effect_param_type)type;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(fx->params[j].name, pm->name) == 0)
                return perr(p, KS_STATUS_INVALID_MODEL,
                            "%s.name: \"%s\" is already the name of parameters[%u]", path, pm->name,
                            j);
        join(sub, path, "default");
        const cJSON *def = cJSON_GetObjectItemCaseSensitive(o, "default");
        switch (pm->type) {
        case KS_EFFECT_PARAM_COLOR:
            if (!def) return perr(p, KS_STATUS_INVALID_MODEL, "%s: required field is missing", sub);
            st = parse_color(p, sub, def, pm->default_color);
            break;
        case KS_EFFECT_PARAM_FLOAT: {
            double lo, hi, dv;
            st = get_num(p, o, path, "min", 0, 0.0, -1e6, 1e6, 0, &lo);
            if (!st) st = get_num(p, o, path, "max", 0, 1.0, -1e6, 1e6, 0, &hi);
            if (!st && !(lo < hi))
                st = perr(p, KS_STATUS_INVALID_MODEL, "%s: expected min < max, got [%g, %g]", path,
                          lo, hi);
            if (!st) st = get_num(p, o, path, "default", 0, lo, lo, hi, 0, &dv);
            if (st) return st;
            pm->min = (float)lo;
            pm->max = (float)hi;
            pm->default_value = (float)dv;
            break;
        }
        case KS_EFFECT_PARAM_ENUM: {
            const cJSON *opts;
            uint32_t no;
            st = get_array(p, o, path, "options", 1, KS_EFFECT_MAX_OPTIONS, "KS_EFFECT_MAX_OPTIONS",
                           &opts, &no);
            if (st) return st;
            const char **list = arena_alloc(fx, no * sizeof(*list));
            if (!list) return oom(p);
            for (uint32_t j = 0; j < no; j++) {
                char osub[PATH_CAP], opath[PATH_CAP];
                join(opath, path, "options");
                index_path(osub, opath, j);
                const cJSON *ov = cJSON_GetArrayItem(opts, (int)j);
                st = check_string_value(p, osub, ov, 0);
                if (st) return st;
                if (!(list[j] = pstrdup(p, ov->valuestring))) return oom(p);
            }
            pm->options = list;
            pm->num_options = no;
            pm->default_option = 0;
            if (def) {
                st = check_string_value(p, sub, def, 0);
                if (st) return st;
                uint32_t j = 0;
                while (j < no && strcmp(list[j], def->valuestring) != 0)
                    j++;
                if (j == no) return want(p, sub, "one of the options", def);
                pm->default_option = j;
            }
            break;
        }
        case KS_EFFECT_PARAM_IMAGE:
            st = get_asset(p, o, path, "default", 0, USE_IMAGE, &pm->default_image);
            break;
        default:
            break;
        }
        if (st) return st;
        fx->num_params = i + 1;
    }
    return KS_STATUS_OK;
}

static ks_status bind_param(parser *p, const cJSON *o, const char *path, const char *key,
                            ks_effect_param_type type, const char **out) {
    ks_status st = get_str(p, o, path, key, 0, out);
    if (st || !(*out)[0]) return st;
    for (uint32_t i = 0; i < p->fx->num_params; i++) {
        if (strcmp(p->fx->params[i].name, *out) != 0) continue;
        if (p->fx->params[i].type != type)
            return perr(p, KS_STATUS_INVALID_MODEL,
                        "%s.%s: parameter \"%s\" is of type %s, expected %s", path, key, *out,
                        k_ptypes[p->fx->params[i].type], k_ptypes[type]);
        return KS_STATUS_OK;
    }
    return perr(p, KS_STATUS_INVALID_MODEL, "%s.%s: no parameter is named \"%s\"", path, key, *out);
}

static ks_status parse_anchor(parser *p, const cJSON *o, const char *path, int required,
                              ks_effect_layer *l) {
    char apath[PATH_CAP], sub[PATH_CAP];
    join(apath, path, "anchor");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "anchor");
    l->scale = 1.0f;
    if (!a) {
        if (required)
            return perr(p, KS_STATUS_INVALID_MODEL, "%s: required field is missing", apath);
        return KS_STATUS_OK;
    }
    if (!cJSON_IsObject(a)) return want(p, apath, "an object", a);
    const cJSON *arr;
    uint32_t n;
    ks_status st = get_array(p, a, apath, "landmarks", 1, KS_EFFECT_MAX_ANCHORS,
                             "KS_EFFECT_MAX_ANCHORS", &arr, &n);
    if (st) return st;
    uint32_t *idx = arena_alloc(p->fx, n * sizeof(*idx));
    if (!idx) return oom(p);
    join(sub, apath, "landmarks");
    for (uint32_t i = 0; i < n; i++) {
        char ipath[PATH_CAP];
        index_path(ipath, sub, i);
        const cJSON *v = cJSON_GetArrayItem(arr, (int)i);
        if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) ||
            v->valuedouble >= KS_EFFECT_NUM_LANDMARKS || v->valuedouble != floor(v->valuedouble)) {
            char exp[64];
            snprintf(exp, sizeof exp, "a landmark index in [0, %u)", KS_EFFECT_NUM_LANDMARKS);
            return want(p, ipath, exp, v);
        }
        idx[i] = (uint32_t)v->valuedouble;
    }
    l->anchor_landmarks = idx;
    l->num_anchor_landmarks = n;
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(a, "offset");
    join(sub, apath, "offset");
    if (off) {
        if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2)
            return want(p, sub, "[x, y] in face widths", off);
        for (int i = 0; i < 2; i++) {
            const cJSON *v = cJSON_GetArrayItem(off, i);
            if (!cJSON_IsNumber(v) || !(fabs(v->valuedouble) <= 100.0)) {
                char ipath[PATH_CAP];
                index_path(ipath, sub, (uint32_t)i);
                return want(p, ipath, "a number in [-100, 100]", v);
            }
            l->anchor_offset[i] = (float)v->valuedouble;
        }
    }
    return get_float(p, a, apath, "scale", 1.0, 1e-3, 1e3, &l->scale);
}

static ks_status parse_sprite(parser *p, const cJSON *o, const char *path, int required,
                              ks_effect_layer *l) {
    char spath[PATH_CAP], fpath[PATH_CAP];
    join(spath, path, "sprite");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "sprite");
    if (!s) {
        if (required)
            return perr(p, KS_STATUS_INVALID_MODEL, "%s: required field is missing", spath);
        return KS_STATUS_OK;
    }
    if (!cJSON_IsObject(s)) return want(p, spath, "an object", s);
    const cJSON *arr;
    uint32_t n;
    ks_status st =
        get_array(p, s, spath, "frames", 1, KS_EFFECT_MAX_FRAMES, "KS_EFFECT_MAX_FRAMES", &arr, &n);
    if (st) return st;
    const char **frames = arena_alloc(p->fx, n * sizeof(*frames));
    if (!frames) return oom(p);
    join(fpath, spath, "frames");
    uint32_t w0 = 0, h0 = 0;
    for (uint32_t i = 0; i < n; i++) {
        char ipath[PATH_CAP];
        index_path(ipath, fpath, i);
        const cJSON *v = cJSON_GetArrayItem(arr, (int)i);
        st = check_string_value(p, ipath, v, 0);
        if (!st) st = ref_asset(p, ipath, v->valuestring, USE_IMAGE);
        if (st) return st;
        const ks_effect_asset *as = find_asset(p->fx, v->valuestring);
        if (i == 0) {
            w0 = as->width_px;
            h0 = as->height_px;
        } else if (as->width_px != w0 || as->height_px != h0) {
            return perr(p, KS_STATUS_INVALID_MODEL,
                        "%s: asset '%s' is %ux%u; expected %ux%u like frame 0", ipath, as->name,
                        as->width_px, as->height_px, w0, h0);
        }
        if (!(frames[i] = pstrdup(p, v->valuestring))) return oom(p);
    }
    l->frames = frames;
    l->num_frames = n;
    st = get_float(p, s, spath, "fps", 30.0, 0.1, 240.0, &l->fps);
    if (!st) st = get_bool(p, s, spath, "loop", true, &l->loop);
    return st;
}

static const uint32_t k_face_kinds =
    (1u << KS_EFFECT_LAYER_STICKER) | (1u << KS_EFFECT_LAYER_FACE_TEXTURE) |
    (1u << KS_EFFECT_LAYER_MAKEUP) | (1u << KS_EFFECT_LAYER_BEAUTY) |
    (1u << KS_EFFECT_LAYER_MESH3D);

static ks_status need_cap(parser *p, const char *path, const char *what, ks_effect_capability c) {
    if (p->fx->info.required_capabilities & (1u << c)) return KS_STATUS_OK;
    return perr(p, KS_STATUS_INVALID_MODEL,
                "%s: %s needs capability \"%s\", which is missing from requires", path, what,
                k_caps[c]);
}

static ks_status parse_layer(parser *p, const cJSON *o, const char *path, ks_effect_layer *l) {
    uint32_t kind = 0, blend = 0, region = 0;
    ks_status st = get_str(p, o, path, "name", 1, &l->name);
    if (!st) st = get_enum(p, o, path, "kind", k_kinds, KS_EFFECT_LAYER_KIND_COUNT, 1, 0, &kind);
    if (!st) st = get_bool(p, o, path, "visible", true, &l->visible);
    if (!st) st = get_enum(p, o, path, "blend", k_blends, KS_EFFECT_BLEND_COUNT, 0, 0, &blend);
    if (!st) st = get_float(p, o, path, "opacity", 1.0, 0.0, 1.0, &l->opacity);
    if (!st) st = get_asset(p, o, path, "shader", 0, USE_SHADER, &l->shader);
    if (st) return st;
    l->kind = (ks_effect_layer_kind)kind;
    l->blend = (ks_effect_blend)blend;
    l->texture = l->lut = l->mesh = l->color_param = l->intensity_param = l->texture_param = "";
    l->scale = 1.0f;
    l->intensity = 1.0f;
    if (k_face_kinds & (1u << kind)) {
        char what[48];
        snprintf(what, sizeof what, "a %s layer", k_kinds[kind]);
        st = need_cap(p, path, what, KS_EFFECT_CAP_FACE_LANDMARKS);
        if (st) return st;
    }
    switch (l->kind) {
    case KS_EFFECT_LAYER_STICKER:
        st = parse_anchor(p, o, path, 1, l);
        if (!st) st = parse_sprite(p, o, path, 1, l);
        break;
    case KS_EFFECT_LAYER_FACE_TEXTURE:
        st = get_asset(p, o, path, "texture", 1, USE_IMAGE, &l->texture);
        if (!st)
            st = bind_param(p, o, path, "texture_param", KS_EFFECT_PARAM_IMAGE, &l->texture_param);
        break;
    case KS_EFFECT_LAYER_MAKEUP: {
        char sub[PATH_CAP];
        st =
            get_enum(p, o, path, "region", k_regions, KS_EFFECT_MAKEUP_REGION_COUNT, 1, 0, &region);
        if (st) return st;
        l->region = (ks_effect_makeup_region)region;
        join(sub, path, "color");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "color");
        if (!c) return perr(p, KS_STATUS_INVALID_MODEL, "%s: required field is missing", sub);
        st = parse_color(p, sub, c, l->color);
        if (!st) st = bind_param(p, o, path, "color_param", KS_EFFECT_PARAM_COLOR, &l->color_param);
        if (!st) st = get_float(p, o, path, "intensity", 1.0, 0.0, 1.0, &l->intensity);
        if (!st)
            st = bind_param(p, o, path, "intensity_param", KS_EFFECT_PARAM_FLOAT,
                            &l->intensity_param);
        if (!st) st = get_asset(p, o, path, "texture", 0, USE_IMAGE, &l->texture);
        break;
    }
    case KS_EFFECT_LAYER_BEAUTY:
        st = get_float(p, o, path, "smoothing", 0.0, 0.0, 1.0, &l->smoothing);
        if (!st) st = get_float(p, o, path, "whitening", 0.0, 0.0, 1.0, &l->whitening);
        if (!st) st = get_float(p, o, path, "face_slim", 0.0, 0.0, 1.0, &l->face_slim);
        if (!st) st = get_float(p, o, path, "eye_enlarge", 0.0, 0.0, 1.0, &l->eye_enlarge);
        if (!st) st = get_float(p, o, path, "intensity", 1.0, 0.0, 1.0, &l->intensity);
        if (!st)
            st = bind_param(p, o, path, "intensity_param", KS_EFFECT_PARAM_FLOAT,
                            &l->intensity_param);
        break;
    case KS_EFFECT_LAYER_LUT:
        st = get_asset(p, o, path, "lut", 1, USE_PNG_LUT, &l->lut);
        if (!st) st = get_float(p, o, path, "intensity", 1.0, 0.0, 1.0, &l->intensity);
        if (!st)
            st = bind_param(p, o, path, "intensity_param", KS_EFFECT_PARAM_FLOAT,
                            &l->intensity_param);
        break;
    case KS_EFFECT_LAYER_BACKGROUND: {
        uint32_t mode = 0;
        st = need_cap(p, path, "a background layer", KS_EFFECT_CAP_SEGMENTATION);
        if (!st)
            st = get_enum(p, o, path, "mode", k_bg_modes, KS_EFFECT_BACKGROUND_MODE_COUNT, 0, 0,
                          &mode);
        if (st) return st;
        l->background_mode = (ks_effect_background_mode)mode;
        st = get_asset(p, o, path, "texture", 0, USE_IMAGE, &l->texture);
        if (!st) st = parse_sprite(p, o, path, 0, l);
        if (!st)
            st = bind_param(p, o, path, "texture_param", KS_EFFECT_PARAM_IMAGE, &l->texture_param);
        if (!st) st = get_float(p, o, path, "blur_radius", 0.02, 0.001, 0.25, &l->blur_radius);
        if (st) return st;
        if (l->background_mode == KS_EFFECT_BACKGROUND_BLUR) {
            if (l->texture[0] || l->num_frames)
                st = perr(p, KS_STATUS_INVALID_MODEL,
                          "%s: a \"blur\" background takes no \"texture\" or \"sprite\"", path);
        } else if (!!l->texture[0] == !!l->num_frames) {
            st = perr(p, KS_STATUS_INVALID_MODEL,
                      "%s: expected exactly one of \"texture\" and \"sprite\"", path);
        }
        break;
    }
    case KS_EFFECT_LAYER_MESH3D:
        st = get_asset(p, o, path, "mesh", 1, USE_GLB, &l->mesh);
        if (!st) st = parse_anchor(p, o, path, 0, l);
        if (!st) st = get_asset(p, o, path, "texture", 0, USE_IMAGE, &l->texture);
        break;
    default:
        break;
    }
    return st;
}

static ks_status parse_layers(parser *p, const cJSON *root) {
    const cJSON *arr;
    uint32_t n;
    ks_status st =
        get_array(p, root, "", "layers", 1, KS_EFFECT_MAX_LAYERS, "KS_EFFECT_MAX_LAYERS", &arr, &n);
    if (st) return st;
    ks_effect *fx = p->fx;
    fx->layers = arena_alloc(fx, n * sizeof(*fx->layers));
    if (!fx->layers) return oom(p);
    for (uint32_t i = 0; i < n; i++) {
        char path[PATH_CAP];
        index_path(path, "layers", i);
        const cJSON *o = cJSON_GetArrayItem(arr, (int)i);
        if (!cJSON_IsObject(o)) return want(p, path, "an object", o);
        st = parse_layer(p, o, path, &fx->layers[i]);
        if (st) return st;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(fx->layers[j].name, fx->layers[i].name) == 0)
                return perr(p, KS_STATUS_INVALID_MODEL,
                            "%s.name: \"%s\" is already the name of layers[%u]", path,
                            fx->layers[i].name, j);
        fx->num_layers = i + 1;
    }
    return KS_STATUS_OK;
}

static ks_status lookup_name(parser *p, const cJSON *o, const char *path, const char *key,
                             int is_state, uint32_t *out) {
    const char *name;
    ks_status st = get_str(p, o, path, key, 1, &name);
    if (st) return st;
    const ks_effect *fx = p->fx;
    uint32_t n = is_state ? fx->num_states : fx->num_layers;
    for (uint32_t i = 0; i < n; i++) {
        if (strcmp(is_state ? fx->states[i].name : fx->layers[i].name, name) == 0) {
            *out = i;
            return KS_STATUS_OK;
        }
    }
    return perr(p, KS_STATUS_INVALID_MODEL, "%s.%s: no %s is named \"%s\"", path, key,
                is_state ? "state" : "layer", name);
}

static ks_status parse_states_triggers(parser *p, const cJSON *root) {
    ks_effect *fx = p->fx;
    const cJSON *arr;
    uint32_t n;
    fx->initial_state = UINT32_MAX;
    ks_status st =
        get_array(p, root, "", "states", 0, KS_EFFECT_MAX_STATES, "KS_EFFECT_MAX_STATES", &arr, &n);
    if (st) return st;
    if (n) {
        fx->states = arena_alloc(fx, n * sizeof(*fx->states));
        if (!fx->states) return oom(p);
    }
    for (uint32_t i = 0; i < n; i++) {
        char path[PATH_CAP];
        index_path(path, "states", i);
        const cJSON *o = cJSON_GetArrayItem(arr, (int)i);
        if (!cJSON_IsObject(o)) return want(p, path, "an object", o);
        ks_effect_state *s = &fx->states[i];
        st = get_str(p, o, path, "name", 1, &s->name);
        if (st) return st;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(fx->states[j].name, s->name) == 0)
                return perr(p, KS_STATUS_INVALID_MODEL,
                            "%s.name: \"%s\" is already the name of states[%u]", path, s->name, j);
        const cJSON *acts;
        uint32_t na;
        st = get_array(p, o, path, "actions", 0, KS_EFFECT_MAX_ACTIONS, "KS_EFFECT_MAX_ACTIONS",
                       &acts, &na);
        if (st) return st;
        ks_effect_action *list = arena_alloc(fx, (na ? na : 1) * sizeof(*list));
        if (!list) return oom(p);
        char apath[PATH_CAP];
        join(apath, path, "actions");
        for (uint32_t j = 0; j < na; j++) {
            char ipath[PATH_CAP];
            index_path(ipath, apath, j);
            const cJSON *a = cJSON_GetArrayItem(acts, (int)j);
            if (!cJSON_IsObject(a)) return want(p, ipath, "an object", a);
            uint32_t kind;
            st = get_enum(p, a, ipath, "action", k_actions, KS_EFFECT_ACTION_KIND_COUNT, 1, 0,
                          &kind);
            if (!st) st = lookup_name(p, a, ipath, "layer", 0, &list[j].layer);
            if (st) return st;
            list[j].kind = (ks_effect_action_kind)kind;
            if (kind == KS_EFFECT_ACTION_START_ANIMATION &&
                fx->layers[list[j].layer].num_frames < 2)
                return perr(p, KS_STATUS_INVALID_MODEL,
                            "%s.layer: layer \"%s\" has no sprite sequence to animate", ipath,
                            fx->layers[list[j].layer].name);
        }
        s->actions = list;
        s->num_actions = na;
        fx->num_states = i + 1;
    }
    if (cJSON_GetObjectItemCaseSensitive(root, "initial_state")) {
        st = lookup_name(p, root, "", "initial_state", 1, &fx->initial_state);
        if (st) return st;
    }

    st = get_array(p, root, "", "triggers", 0, KS_EFFECT_MAX_TRIGGERS, "KS_EFFECT_MAX_TRIGGERS",
                   &arr, &n);
    if (st || n == 0) return st;
    fx->triggers = arena_alloc(fx, n * sizeof(*fx->triggers));
    if (!fx->triggers) return oom(p);
    for (uint32_t i = 0; i < n; i++) {
        char path[PATH_CAP];
        index_path(path, "triggers", i);
        const cJSON *o = cJSON_GetArrayItem(arr, (int)i);
        if (!cJSON_IsObject(o)) return want(p, path, "an object", o);
        ks_effect_trigger *t = &fx->triggers[i];
        uint32_t ev;
        st = get_enum(p, o, path, "on", k_events, KS_EFFECT_EVENT_COUNT, 1, 0, &ev);
        if (!st) st = get_float(p, o, path, "threshold", 0.5, 1e-3, 1.0, &t->threshold);
        if (!st) st = lookup_name(p, o, path, "state", 1, &t->state);
        if (!st) st = need_cap(p, path, "a face trigger", KS_EFFECT_CAP_FACE_LANDMARKS);
        if (st) return st;
        t->event = (ks_effect_event)ev;
        fx->num_triggers = i + 1;
    }
    return KS_STATUS_OK;
}

/* cJSON recurses once per nesting level; bound the depth before it sees the text. */
static ks_status check_depth(const char *s, size_t n, char *err, size_t err_cap) {
    uint32_t depth = 0;
    int in_str = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > KS_EFFECT_MAX_JSON_DEPTH) {
                snprintf(err, err_cap,
                         "manifest.json: nesting deeper than KS_EFFECT_MAX_JSON_DEPTH "
                         "(%u) at byte %zu",
                         KS_EFFECT_MAX_JSON_DEPTH, i);
                return KS_STATUS_LIMIT_EXCEEDED;
            }
        } else if ((c == ']' || c == '}') && depth) {
            depth--;
        }
    }
    return KS_STATUS_OK;
}

static ks_status parse_manifest(parser *p) {
    const ks_effect_asset *m = find_asset(p->fx, "manifest.json");
    if (!m) {
        snprintf(p->err, p->cap, "manifest.json is missing from the package root");
        return KS_STATUS_INVALID_MODEL;
    }
    if (m->size_bytes > KS_EFFECT_MAX_JSON_BYTES) {
        snprintf(p->err, p->cap, "manifest.json: %zu bytes, over KS_EFFECT_MAX_JSON_BYTES (%u)",
                 m->size_bytes, KS_EFFECT_MAX_JSON_BYTES);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    ks_status st = check_depth((const char *)m->data, m->size_bytes, p->err, p->cap);
    if (st) return st;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts((const char *)m->data, m->size_bytes, &end, 0);
    if (!root) {
        size_t at = end ? (size_t)(end - (const char *)m->data) : 0;
        snprintf(p->err, p->cap, "manifest.json: invalid JSON near byte %zu", at);
        return KS_STATUS_INVALID_MODEL;
    }
    if (!cJSON_IsObject(root)) {
        st = want(p, "(root)", "an object", root);
        goto done;
    }
    st = parse_info(p, root);
    if (!st) st = parse_params(p, root);
    if (!st) st = parse_layers(p, root);
    if (!st) st = parse_states_triggers(p, root);
done:
    cJSON_Delete(root);
    return st;
}

/* ------------------------------------------------------------------------------------------ */
/* Open / destroy / accessors                                                                 */

void ks_effect_destroy(ks_effect *fx) {
    if (!fx) return;
    const ks_allocator *a = fx->a;
    ks_allocator copy = fx->alloc;
    if (a) a = &copy;
    ks__zip_free(a, fx->files, fx->num_files);
    for (arena_block *b = fx->arena; b;) {
        arena_block *next = b->next;
        ks__free(a, b);
        b = next;
    }
    fx->obj.magic = 0;
    ks__free(a, fx);
}

static ks_status open_impl(const void *data, size_t size_bytes, const ks_effect_desc *desc,
                           const char *source, ks_effect **out) {
    char err[KS_ERROR_CAP - 64];
    err[0] = '\0';
    ks_effect *fx = NULL;
    ks_status st = KS_STATUS_OK;
    const ks_allocator *a =
        desc && desc->allocator && desc->allocator->alloc ? desc->allocator : NULL;
    uint32_t all_caps = (1u << KS_EFFECT_CAP_COUNT) - 1u;
    uint32_t host = desc && desc->host_capabilities ? desc->host_capabilities : all_caps;
    if (!data || !out) {
        snprintf(err, sizeof err, "ks_effect_open: data and effect_out must not be NULL");
        st = KS_STATUS_INVALID_ARGUMENT;
        goto error;
    }
    fx = ks__alloc(a, sizeof(*fx));
    if (!fx) {
        snprintf(err, sizeof err, "out of memory");
        st = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    memset(fx, 0, sizeof(*fx));
    fx->obj.magic = KS__OBJECT_MAGIC;
    if (a) {
        fx->alloc = *a;
        fx->a = &fx->alloc;
    }
    st = ks__zip_read(data, size_bytes, fx->a, &fx->files, &fx->num_files, err, sizeof err);
    if (st) goto error;
    parser p = {fx, err, sizeof err, host};
    fx->assets = arena_alloc(fx, (fx->num_files ? fx->num_files : 1) * sizeof(*fx->assets));
    if (!fx->assets) {
        st = oom(&p);
        goto error;
    }
    for (uint32_t i = 0; i < fx->num_files; i++) {
        ks_effect_asset *as = &fx->assets[i];
        as->name = fx->files[i].name;
        as->data = fx->files[i].data;
        as->size_bytes = fx->files[i].size_bytes;
        fx->num_assets = i + 1;
        const uint8_t *d = as->data;
        int looks_image = (as->size_bytes >= 4 &&
                           ((d[0] == 0x89 && d[1] == 'P') || (d[0] == 0xff && d[1] == 0xd8))) ||
                          has_suffix_ci(as->name, ".png") || has_suffix_ci(as->name, ".jpg") ||
                          has_suffix_ci(as->name, ".jpeg");
        if (looks_image) {
            st = check_image(as, err, sizeof err);
            if (st) goto error;
        }
        if (strcmp(as->name, "manifest.json") == 0) as->kind = KS_EFFECT_ASSET_MANIFEST;
    }
    st = parse_manifest(&p);
    if (st) goto error;
    *out = fx;
    return KS_STATUS_OK;

error:
    ks__object_error(NULL, "%s: %s", source, err);
    ks_effect_destroy(fx);
    return st;
}

ks_status ks_effect_open_memory(const void *data, size_t size_bytes, const ks_effect_desc *desc,
                                ks_effect **effect_out) {
    return open_impl(data, size_bytes, desc, "<memory>", effect_out);
}

ks_status ks_effect_open_file(const char *path, const ks_effect_desc *desc,
                              ks_effect **effect_out) {
    if (!path || !effect_out) {
        ks__object_error(NULL, "ks_effect_open_file: path and effect_out must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    const ks_allocator *a =
        desc && desc->allocator && desc->allocator->alloc ? desc->allocator : NULL;
    ks_status st = KS_STATUS_OK;
    unsigned char *buf = NULL;
    FILE *f = fopen(path, "rb");
    long size = -1;
    if (!f || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        ks__object_error(NULL, "%s: cannot open or seek the file", path);
        st = KS_STATUS_IO_ERROR;
        goto done;
    }
    if ((unsigned long)size > KS_EFFECT_MAX_PACKAGE_BYTES) {
        ks__object_error(NULL, "%s: %ld bytes, over KS_EFFECT_MAX_PACKAGE_BYTES (%u)", path, size,
                         KS_EFFECT_MAX_PACKAGE_BYTES);
        st = KS_STATUS_LIMIT_EXCEEDED;
        goto done;
    }
    buf = ks__alloc(a, (size_t)size);
    if (!buf) {
        ks__object_error(NULL, "%s: out of memory reading %ld bytes", path, size);
        st = KS_STATUS_OUT_OF_MEMORY;
        goto done;
    }
    if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
        ks__object_error(NULL, "%s: short read", path);
        st = KS_STATUS_IO_ERROR;
        goto done;
    }
    st = open_impl(buf, (size_t)size, desc, path, effect_out);
done:
    ks__free(a, buf);
    if (f) fclose(f);
    return st;
}

const ks_effect_info *ks_effect_get_info(const ks_effect *fx) {
    return fx ? &fx->info : NULL;
}
uint32_t ks_effect_num_layers(const ks_effect *fx) {
    return fx ? fx->num_layers : 0;
}
const ks_effect_layer *ks_effect_layer_at(const ks_effect *fx, uint32_t i) {
    return fx && i < fx->num_layers ? &fx->layers[i] : NULL;
}
uint32_t ks_effect_num_params(const ks_effect *fx) {
    return fx ? fx->num_params : 0;
}
const ks_effect_param *ks_effect_param_at(const ks_effect *fx, uint32_t i) {
    return fx && i < fx->num_params ? &fx->params[i] : NULL;
}
uint32_t ks_effect_num_states(const ks_effect *fx) {
    return fx ? fx->num_states : 0;
}
const ks_effect_state *ks_effect_state_at(const ks_effect *fx, uint32_t i) {
    return fx && i < fx->num_states ? &fx->states[i] : NULL;
}
uint32_t ks_effect_initial_state(const ks_effect *fx) {
    return fx ? fx->initial_state : UINT32_MAX;
}
uint32_t ks_effect_num_triggers(const ks_effect *fx) {
    return fx ? fx->num_triggers : 0;
}
const ks_effect_trigger *ks_effect_trigger_at(const ks_effect *fx, uint32_t i) {
    return fx && i < fx->num_triggers ? &fx->triggers[i] : NULL;
}
uint32_t ks_effect_num_assets(const ks_effect *fx) {
    return fx ? fx->num_assets : 0;
}
const ks_effect_asset *ks_effect_asset_at(const ks_effect *fx, uint32_t i) {
    return fx && i < fx->num_assets ? &fx->assets[i] : NULL;
}
const ks_effect_asset *ks_effect_find_asset(const ks_effect *fx, const char *name) {
    if (!fx || !name || !name[0]) return NULL;
    return find_asset(fx, name);
}
