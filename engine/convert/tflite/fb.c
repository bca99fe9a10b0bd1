/* Bounds-checked FlatBuffers/FlexBuffers readers (see fb.h for the layout). */
#include "fb.h"

#include <string.h>

float ks__ld_f32(const uint8_t *p) {
    uint32_t u = ks__ld_u32(p);
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

double ks__ld_f64(const uint8_t *p) {
    uint64_t u = ks__ld_u64(p);
    double d;
    memcpy(&d, &u, sizeof(d));
    return d;
}

static bool bad(ks__fb *fb, const char *why, size_t offset) {
    if (!fb->why) {
        fb->why = why;
        fb->bad_offset = offset;
    }
    return false;
}

/* True when [pos, pos + n) lies inside the buffer (overflow-safe). */
static bool in_range(const ks__fb *fb, size_t pos, size_t n) {
    return pos <= fb->size && n <= fb->size - pos;
}

bool ks__fb_table_at(ks__fb *fb, size_t pos, ks__fb_table *t) {
    memset(t, 0, sizeof(*t));
    if (pos == 0 || !in_range(fb, pos, 4)) return bad(fb, "table offset out of range", pos);
    int64_t soff = (int32_t)ks__ld_u32(fb->data + pos);
    int64_t vt = (int64_t)pos - soff;
    if (vt < 0 || !in_range(fb, (size_t)vt, 4)) return bad(fb, "vtable out of range", pos);
    uint32_t vt_size = ks__ld_u16(fb->data + vt);
    uint32_t tbl_size = ks__ld_u16(fb->data + vt + 2);
    if (vt_size < 4 || (vt_size & 1) || !in_range(fb, (size_t)vt, vt_size))
        return bad(fb, "bad vtable size", (size_t)vt);
    if (tbl_size < 4 || !in_range(fb, pos, tbl_size)) return bad(fb, "bad table size", pos);
    t->pos = pos;
    t->vtable = (size_t)vt;
    t->vt_size = vt_size;
    t->tbl_size = tbl_size;
    return true;
}

bool ks__fb_root(ks__fb *fb, ks__fb_table *root) {
    memset(root, 0, sizeof(*root));
    if (fb->size < 8) return bad(fb, "file too small", 0);
    return ks__fb_table_at(fb, ks__ld_u32(fb->data), root);
}

bool ks__fb_field(ks__fb *fb, const ks__fb_table *t, uint32_t field, size_t size_bytes,
                  size_t *pos_out) {
    *pos_out = 0;
    if (t->pos == 0) return true;
    uint32_t slot = 4 + 2 * field;
    if (field > 1000 || slot + 2 > t->vt_size) return true;
    uint32_t off = ks__ld_u16(fb->data + t->vtable + slot);
    if (off == 0) return true;
    if (off < 4 || (size_t)off + size_bytes > t->tbl_size)
        return bad(fb, "field outside its table", t->pos);
    *pos_out = t->pos + off;
    return true;
}

bool ks__fb_get_u8(ks__fb *fb, const ks__fb_table *t, uint32_t field, uint8_t def, uint8_t *out) {
    size_t p;
    if (!ks__fb_field(fb, t, field, 1, &p)) return false;
    *out = p ? fb->data[p] : def;
    return true;
}

bool ks__fb_get_i8(ks__fb *fb, const ks__fb_table *t, uint32_t field, int8_t def, int8_t *out) {
    uint8_t u;
    if (!ks__fb_get_u8(fb, t, field, (uint8_t)def, &u)) return false;
    *out = (int8_t)u;
    return true;
}

bool ks__fb_get_bool(ks__fb *fb, const ks__fb_table *t, uint32_t field, bool *out) {
    uint8_t u;
    if (!ks__fb_get_u8(fb, t, field, 0, &u)) return false;
    *out = u != 0;
    return true;
}

bool ks__fb_get_u32(ks__fb *fb, const ks__fb_table *t, uint32_t field, uint32_t def,
                    uint32_t *out) {
    size_t p;
    if (!ks__fb_field(fb, t, field, 4, &p)) return false;
    *out = p ? ks__ld_u32(fb->data + p) : def;
    return true;
}

bool ks__fb_get_i32(ks__fb *fb, const ks__fb_table *t, uint32_t field, int32_t def, int32_t *out) {
    uint32_t u;
    if (!ks__fb_get_u32(fb, t, field, (uint32_t)def, &u)) return false;
    *out = (int32_t)u;
    return true;
}

bool ks__fb_get_u64(ks__fb *fb, const ks__fb_table *t, uint32_t field, uint64_t def,
                    uint64_t *out) {
    size_t p;
    if (!ks__fb_field(fb, t, field, 8, &p)) return false;
    *out = p ? ks__ld_u64(fb->data + p) : def;
    return true;
}

bool ks__fb_get_f32(ks__fb *fb, const ks__fb_table *t, uint32_t field, float def, float *out) {
    size_t p;
    if (!ks__fb_field(fb, t, field, 4, &p)) return false;
    *out = p ? ks__ld_f32(fb->data + p) : def;
    return true;
}

/* Follows the uoffset stored in a reference field; 0 when absent. */
static bool get_ref(ks__fb *fb, const ks__fb_table *t, uint32_t field, size_t *target) {
    size_t p;
    *target = 0;
    if (!ks__fb_field(fb, t, field, 4, &p)) return false;
    if (!p) return true;
    uint32_t off = ks__ld_u32(fb->data + p);
    if (off == 0 || !in_range(fb, p, (size_t)off) || p + off >= fb->size)
        return bad(fb, "reference out of range", p);
    *target = p + off;
    return true;
}

bool ks__fb_get_table(ks__fb *fb, const ks__fb_table *t, uint32_t field, ks__fb_table *out) {
    size_t target;
    memset(out, 0, sizeof(*out));
    if (!get_ref(fb, t, field, &target)) return false;
    if (!target) return true;
    return ks__fb_table_at(fb, target, out);
}

static bool vec_at(ks__fb *fb, size_t target, size_t elem_size, ks__fb_vec *out) {
    if (!in_range(fb, target, 4)) return bad(fb, "vector out of range", target);
    uint32_t n = ks__ld_u32(fb->data + target);
    if ((uint64_t)n * elem_size > fb->size - target - 4)
        return bad(fb, "vector length exceeds the file", target);
    out->pos = target + 4;
    out->count = n;
    out->present = true;
    return true;
}

bool ks__fb_get_vec(ks__fb *fb, const ks__fb_table *t, uint32_t field, size_t elem_size,
                    ks__fb_vec *out) {
    size_t target;
    memset(out, 0, sizeof(*out));
    if (!get_ref(fb, t, field, &target)) return false;
    if (!target) return true;
    return vec_at(fb, target, elem_size, out);
}

bool ks__fb_get_str(ks__fb *fb, const ks__fb_table *t, uint32_t field, const uint8_t **s,
                    uint32_t *len) {
    ks__fb_vec v;
    *s = NULL;
    *len = 0;
    if (!ks__fb_get_vec(fb, t, field, 1, &v)) return false;
    if (!v.present) return true;
    *s = fb->data + v.pos;
    *len = v.count;
    return true;
}

bool ks__fb_vec_table(ks__fb *fb, const ks__fb_vec *v, uint32_t i, ks__fb_table *out) {
    memset(out, 0, sizeof(*out));
    if (i >= v->count) return bad(fb, "vector index out of range", v->pos);
    size_t p = v->pos + 4 * (size_t)i;
    uint32_t off = ks__ld_u32(fb->data + p);
    if (off == 0 || !in_range(fb, p, (size_t)off) || p + off >= fb->size)
        return bad(fb, "table reference out of range", p);
    return ks__fb_table_at(fb, p + off, out);
}

/* ---- FlexBuffers ---- */

static bool flex_in_range(size_t size, size_t pos, size_t n) {
    return pos <= size && n <= size - pos;
}

static bool flex_width_ok(uint32_t w) {
    return w == 1 || w == 2 || w == 4 || w == 8;
}

static uint64_t flex_read_uint(const uint8_t *p, uint32_t width) {
    switch (width) {
    case 1:
        return p[0];
    case 2:
        return ks__ld_u16(p);
    case 4:
        return ks__ld_u32(p);
    default:
        return ks__ld_u64(p);
    }
}

static int64_t flex_read_int(const uint8_t *p, uint32_t width) {
    switch (width) {
    case 1:
        return (int8_t)p[0];
    case 2:
        return (int16_t)ks__ld_u16(p);
    case 4:
        return (int32_t)ks__ld_u32(p);
    default:
        return (int64_t)ks__ld_u64(p);
    }
}

/* Target of an offset value stored at v->pos (offsets point backwards). */
static bool flex_indirect(const ks__flex_val *v, size_t *target) {
    if (!flex_in_range(v->size, v->pos, v->parent_width)) return false;
    uint64_t off = flex_read_uint(v->data + v->pos, v->parent_width);
    if (off > v->pos) return false;
    *target = v->pos - (size_t)off;
    return true;
}

bool ks__flex_root(const uint8_t *data, size_t size, ks__flex_val *out) {
    memset(out, 0, sizeof(*out));
    if (!data || size < 3) return false;
    uint32_t width = data[size - 1];
    uint8_t packed = data[size - 2];
    if (!flex_width_ok(width) || size < 2 + (size_t)width) return false;
    out->data = data;
    out->size = size;
    out->pos = size - 2 - width;
    out->parent_width = (uint8_t)width;
    out->width = (uint8_t)(1u << (packed & 3));
    out->type = (uint8_t)(packed >> 2);
    return true;
}

static bool flex_is_typed_vector(uint32_t t) {
    return (t >= KS_FLEX_VECTOR_INT && t <= KS_FLEX_VECTOR_KEY) || t == KS_FLEX_VECTOR_BOOL ||
           t == 15; /* deprecated VECTOR_STRING */
}

static bool flex_is_fixed_vector(uint32_t t, uint32_t *len, uint32_t *elem_type) {
    if (t < KS_FLEX_VECTOR_INT2 || t > 24) return false;
    uint32_t k = t - KS_FLEX_VECTOR_INT2; /* INT2, UINT2, FLOAT2, INT3, ... FLOAT4 */
    *len = 2 + k / 3;
    *elem_type = KS_FLEX_INT + k % 3;
    return true;
}

bool ks__flex_vec_len(const ks__flex_val *v, uint32_t *len_out) {
    uint32_t t = v->type, fixed_len, et;
    if (flex_is_fixed_vector(t, &fixed_len, &et)) {
        *len_out = fixed_len;
        return true;
    }
    if (t != KS_FLEX_VECTOR && t != KS_FLEX_MAP && !flex_is_typed_vector(t)) return false;
    size_t target;
    if (!flex_indirect(v, &target) || target < v->width) return false;
    uint64_t n = flex_read_uint(v->data + target - v->width, v->width);
    /* Elements (plus one type byte each for untyped vectors and maps) must fit. */
    uint64_t per = (uint64_t)v->width + ((t == KS_FLEX_VECTOR || t == KS_FLEX_MAP) ? 1 : 0);
    if (n > UINT32_MAX || n * per > v->size - target) return false;
    *len_out = (uint32_t)n;
    return true;
}

bool ks__flex_vec_at(const ks__flex_val *v, uint32_t i, ks__flex_val *out) {
    uint32_t n, fixed_len, et;
    memset(out, 0, sizeof(*out));
    if (!ks__flex_vec_len(v, &n) || i >= n) return false;
    size_t target;
    if (!flex_indirect(v, &target)) return false;
    out->data = v->data;
    out->size = v->size;
    out->pos = target + (size_t)i * v->width;
    out->parent_width = v->width;
    if (v->type == KS_FLEX_VECTOR || v->type == KS_FLEX_MAP) {
        uint8_t packed = v->data[target + (size_t)n * v->width + i];
        out->type = (uint8_t)(packed >> 2);
        out->width = (uint8_t)(1u << (packed & 3));
    } else if (flex_is_fixed_vector(v->type, &fixed_len, &et)) {
        if (!flex_in_range(v->size, target, (size_t)fixed_len * v->width)) return false;
        out->type = (uint8_t)et;
        out->width = v->width;
    } else {
        out->type = v->type == KS_FLEX_VECTOR_BOOL
                        ? KS_FLEX_BOOL
                        : (uint8_t)(v->type - KS_FLEX_VECTOR_INT + KS_FLEX_INT);
        out->width = v->width;
    }
    return flex_in_range(v->size, out->pos, out->parent_width);
}

/* Compares the NUL-terminated key stored at pos with `key`. */
static bool flex_key_equals(const uint8_t *data, size_t size, size_t pos, const char *key) {
    size_t n = strlen(key);
    if (!flex_in_range(size, pos, n + 1)) return false;
    return memcmp(data + pos, key, n) == 0 && data[pos + n] == 0;
}

bool ks__flex_map_find(const ks__flex_val *map, const char *key, ks__flex_val *out, bool *found) {
    *found = false;
    memset(out, 0, sizeof(*out));
    if (map->type != KS_FLEX_MAP) return false;
    uint32_t n;
    size_t target;
    if (!ks__flex_vec_len(map, &n) || !flex_indirect(map, &target)) return false;
    size_t w = map->width;
    if (target < 3 * w) return false;
    size_t keys_field = target - 3 * w;
    uint64_t keys_off = flex_read_uint(map->data + keys_field, (uint32_t)w);
    uint64_t keys_width = flex_read_uint(map->data + target - 2 * w, (uint32_t)w);
    if (keys_off > keys_field || !flex_width_ok((uint32_t)keys_width)) return false;
    size_t keys = keys_field - (size_t)keys_off;
    if (keys < keys_width) return false;
    uint64_t num_keys = flex_read_uint(map->data + keys - keys_width, (uint32_t)keys_width);
    if (num_keys != n || (uint64_t)n * keys_width > map->size - keys) return false;
    for (uint32_t i = 0; i < n; i++) {
        size_t kp = keys + (size_t)i * keys_width;
        uint64_t koff = flex_read_uint(map->data + kp, (uint32_t)keys_width);
        if (koff > kp) return false;
        if (flex_key_equals(map->data, map->size, kp - (size_t)koff, key)) {
            if (!ks__flex_vec_at(map, i, out)) return false;
            *found = true;
            return true;
        }
    }
    return true;
}

bool ks__flex_as_i64(const ks__flex_val *v, int64_t *out) {
    size_t target;
    double d;
    if (!flex_in_range(v->size, v->pos, v->parent_width)) return false;
    switch (v->type) {
    case KS_FLEX_INT:
        *out = flex_read_int(v->data + v->pos, v->parent_width);
        return true;
    case KS_FLEX_UINT:
    case KS_FLEX_BOOL:
        *out = (int64_t)flex_read_uint(v->data + v->pos, v->parent_width);
        return true;
    case KS_FLEX_INDIRECT_INT:
    case KS_FLEX_INDIRECT_UINT:
        if (!flex_width_ok(v->width) || !flex_indirect(v, &target) ||
            !flex_in_range(v->size, target, v->width))
            return false;
        *out = v->type == KS_FLEX_INDIRECT_INT
                   ? flex_read_int(v->data + target, v->width)
                   : (int64_t)flex_read_uint(v->data + target, v->width);
        return true;
    case KS_FLEX_FLOAT:
    case KS_FLEX_INDIRECT_FLOAT:
        if (!ks__flex_as_f64(v, &d) || !(d >= -9.2e18 && d <= 9.2e18)) return false;
        *out = (int64_t)d;
        return true;
    default:
        return false;
    }
}

bool ks__flex_as_f64(const ks__flex_val *v, double *out) {
    size_t target;
    int64_t i;
    if (!flex_in_range(v->size, v->pos, v->parent_width)) return false;
    switch (v->type) {
    case KS_FLEX_FLOAT:
        if (v->parent_width == 4)
            *out = ks__ld_f32(v->data + v->pos);
        else if (v->parent_width == 8)
            *out = ks__ld_f64(v->data + v->pos);
        else
            return false;
        return true;
    case KS_FLEX_INDIRECT_FLOAT:
        if (!flex_indirect(v, &target) || !flex_in_range(v->size, target, v->width)) return false;
        if (v->width == 4)
            *out = ks__ld_f32(v->data + target);
        else if (v->width == 8)
            *out = ks__ld_f64(v->data + target);
        else
            return false;
        return true;
    default:
        if (!ks__flex_as_i64(v, &i)) return false;
        *out = (double)i;
        return true;
    }
}
