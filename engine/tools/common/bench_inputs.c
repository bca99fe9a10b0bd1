/* Benchmark inputs (bench_inputs.h): shapes from specs and .npy files, and seeded random data. */
#include "bench_inputs.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"

/* splitmix64: tiny, seedable, and good enough for benchmark inputs. */
static uint64_t rng_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float rng_unit(uint64_t *state) {
    return (float)(rng_next(state) >> 40) * (1.0f / 16777216.0f); /* [0,1) with 24 bits */
}

bool ks__bench_parse_dims(const char *s, ks_tensor_shape *shape) {
    shape->rank = 0;
    const char *p = s;
    while (*p) {
        if (shape->rank == KS_MAX_RANK) return false;
        char *end = NULL;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || v > (1ll << 31)) return false;
        shape->dims[shape->rank++] = v;
        if (*end == 'x' || *end == 'X' || *end == ',') {
            if (!end[1]) return false;
            p = end + 1;
        } else if (*end) {
            return false;
        } else {
            p = end;
        }
    }
    return shape->rank > 0;
}

/* Value of "NAME=VALUE" specs for `name`, or NULL. */
static const char *spec_for(const char *const *specs, int num_specs, const char *name) {
    size_t len = strlen(name);
    for (int k = 0; k < num_specs; k++) {
        const char *eq = strrchr(specs[k], '=');
        if (eq && (size_t)(eq - specs[k]) == len && strncmp(specs[k], name, len) == 0)
            return eq + 1;
    }
    return NULL;
}

ks_status ks__bench_prepare_inputs(const ks_model *model, const ks__bench_input_specs *specs,
                                   ks_npy *npys, ks_tensor_shape *shapes, char *err,
                                   size_t err_cap) {
    uint32_t nin = ks_model_num_inputs(model);
    const ks_status bad = KS_STATUS_INVALID_ARGUMENT;
    int positional = 0;
    for (int k = 0; k < specs->num_files; k++)
        positional += strchr(specs->files[k], '=') == 0;
    if (positional && positional != specs->num_files)
        return ks__fail(err, err_cap, bad, "--input: use NAME=FILE for all inputs or for none");
    if (specs->num_files > (int)nin)
        return ks__fail(err, err_cap, bad, "%d --input given, the model has %u inputs",
                        specs->num_files, nin);
    for (int k = 0; k < specs->num_files + specs->num_shapes; k++) {
        const char *spec =
            k < specs->num_files ? specs->files[k] : specs->shapes[k - specs->num_files];
        const char *eq = strrchr(spec, '=');
        if (!eq) continue;
        int found = 0;
        for (uint32_t i = 0; i < nin && !found; i++) {
            ks_tensor_info info;
            ks_model_input_info(model, i, &info);
            found = strlen(info.name) == (size_t)(eq - spec) &&
                    strncmp(info.name, spec, (size_t)(eq - spec)) == 0;
        }
        if (!found) return ks__fail(err, err_cap, bad, "'%s' names no model input", spec);
    }
    for (uint32_t i = 0; i < nin; i++) {
        ks_tensor_info info;
        ks_model_input_info(model, i, &info);
        const char *file = positional ? (i < (uint32_t)positional ? specs->files[i] : NULL)
                                      : spec_for(specs->files, specs->num_files, info.name);
        const char *dims = spec_for(specs->shapes, specs->num_shapes, info.name);
        shapes[i] = info.shape;
        if (file) {
            ks_status st = ks_npy_read(file, &npys[i], err, err_cap);
            if (st) return st;
            if (npys[i].dtype != info.dtype)
                return ks__fail(err, err_cap, bad, "%s is %s, model input '%s' needs %s", file,
                                ks_dtype_string(npys[i].dtype), info.name,
                                ks_dtype_string(info.dtype));
            shapes[i] = npys[i].shape;
        } else if (dims) {
            if (!ks__bench_parse_dims(dims, &shapes[i]))
                return ks__fail(err, err_cap, bad, "bad --shape '%s' for input '%s'", dims,
                                info.name);
        } else {
            for (int d = 0; d < shapes[i].rank; d++)
                if (shapes[i].dims[d] < 0) shapes[i].dims[d] = 1;
        }
    }
    return KS_STATUS_OK;
}

static int looks_like_image(const ks_tensor_shape *shape) {
    if (shape->rank != 4) return 0;
    int64_t last = shape->dims[3], second = shape->dims[1];
    return last == 1 || last == 3 || last == 4 || second == 1 || second == 3 || second == 4;
}

void ks__bench_fill_random(const ks_tensor *t, const ks__bench_range *range, uint64_t *rng) {
    size_t elem = ks_dtype_size(t->info.dtype);
    size_t n = elem ? t->size_bytes / elem : 0;
    float lo = -1.0f, hi = 1.0f;
    if (range && range->given) {
        lo = range->lo;
        hi = range->hi;
    } else if (looks_like_image(&t->info.shape)) {
        lo = 0.0f;
    }
    switch (t->info.dtype) {
    case KS_DTYPE_F32: {
        float *p = t->data;
        for (size_t i = 0; i < n; i++)
            p[i] = lo + (hi - lo) * rng_unit(rng);
        break;
    }
    case KS_DTYPE_U8:
    case KS_DTYPE_I8: {
        uint8_t *p = t->data;
        for (size_t i = 0; i < n; i++)
            p[i] = (uint8_t)(rng_next(rng) >> 56);
        break;
    }
    case KS_DTYPE_BOOL: {
        uint8_t *p = t->data;
        for (size_t i = 0; i < n; i++)
            p[i] = (uint8_t)(rng_next(rng) >> 63);
        break;
    }
    default:
        /* f16 bit patterns and index-like integers: zeros are always valid */
        memset(t->data, 0, t->size_bytes);
        break;
    }
}

ks_status ks__bench_fill_inputs(ks_session *s, uint32_t num_inputs, const ks_npy *npys,
                                const ks__bench_range *range, uint64_t seed, char *err,
                                size_t err_cap) {
    uint64_t rng = seed;
    for (uint32_t i = 0; i < num_inputs; i++) {
        ks_tensor t;
        ks_status st = ks_session_input(s, i, &t);
        if (st) return ks__fail(err, err_cap, st, "input %u: %s", i, ks_last_error(s));
        if (!npys[i].data)
            ks__bench_fill_random(&t, range, &rng);
        else if (t.size_bytes != npys[i].size_bytes)
            return ks__fail(err, err_cap, KS_STATUS_INVALID_SHAPE,
                            "input '%s': .npy has %zu bytes, session wants %zu", t.info.name,
                            npys[i].size_bytes, t.size_bytes);
        else
            memcpy(t.data, npys[i].data, t.size_bytes);
    }
    return KS_STATUS_OK;
}
