/* Landmark fixture reader (see landmark_fixture.h). Untrusted input: every array length, type
 * and number is checked before use; nothing is allocated beyond cJSON's tree of a file capped at
 * KS_AR_FIXTURE_MAX_BYTES. */
#include "landmark_fixture.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ABS 1e6

#define FAIL(...) (snprintf(err, err_cap, __VA_ARGS__), KS_STATUS_INVALID_MODEL)

static int number(const cJSON *v, double *out) {
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || fabs(v->valuedouble) > MAX_ABS) return 0;
    *out = v->valuedouble;
    return 1;
}

static ks_status matrix(const cJSON *face, const char *key, uint32_t i, float m[16], int *present,
                        char *err, size_t err_cap) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(face, key);
    *present = 0;
    if (!a) return KS_STATUS_OK;
    char path[96];
    snprintf(path, sizeof(path), "faces[%u].%s", i, key);
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != 16)
        return FAIL("%s: expected an array of 16 numbers", path);
    for (int k = 0; k < 16; k++) {
        double d;
        if (!number(cJSON_GetArrayItem(a, k), &d))
            return FAIL("%s: element %d is not a finite number", path, k);
        m[k] = (float)d;
    }
    *present = 1;
    return KS_STATUS_OK;
}

static ks_status parse_face(const cJSON *f, uint32_t i, ks_ar_fixture *out, char *err,
                            size_t err_cap) {
    char path[96];
    snprintf(path, sizeof(path), "faces[%u]", i);
    if (!cJSON_IsObject(f)) return FAIL("%s: expected an object", path);
    ks_ar_face *face = &out->faces[i];
    memset(face, 0, sizeof(*face));
    face->id = -1;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(f, "id");
    if (id) {
        double d;
        if (!number(id, &d) || d != floor(d) || d < -1 || d > INT32_MAX)
            return FAIL("%s.id: expected an integer >= -1", path);
        face->id = (int32_t)d;
    }
    const cJSON *lm = cJSON_GetObjectItemCaseSensitive(f, "landmarks");
    int n = cJSON_IsArray(lm) ? cJSON_GetArraySize(lm) : -1;
    if (n != 468 && n != 478)
        return FAIL("%s.landmarks: expected an array of 468 or 478 [x, y, z], got %d", path, n);
    int k = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, lm) {
        if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 3)
            return FAIL("%s.landmarks: point %d is not [x, y, z]", path, k);
        for (int c = 0; c < 3; c++) {
            double d;
            if (!number(cJSON_GetArrayItem(p, c), &d))
                return FAIL("%s.landmarks: point %d has a non-finite coordinate", path, k);
            out->landmarks[i][3 * k + c] = (float)d;
        }
        k++;
    }
    face->num_landmarks = (uint32_t)n;
    face->landmarks_xyz = out->landmarks[i];
    int present = 0;
    ks_status st = matrix(f, "pose_matrix", i, face->pose_matrix, &present, err, err_cap);
    if (st) return st;
    face->has_pose = present;
    st = matrix(f, "projection_matrix", i, face->projection_matrix, &present, err, err_cap);
    if (st) return st;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(f, "expressions");
    if (e) {
        if (!cJSON_IsObject(e)) return FAIL("%s.expressions: expected an object", path);
        static const char *const names[5] = {"mouth_open", "left_eye_blink", "right_eye_blink",
                                             "brow_raise", "smile"};
        float *dst[5] = {&face->expressions.mouth_open, &face->expressions.left_eye_blink,
                         &face->expressions.right_eye_blink, &face->expressions.brow_raise,
                         &face->expressions.smile};
        for (int c = 0; c < 5; c++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, names[c]);
            if (!v) continue;
            double d;
            if (!number(v, &d) || d < 0 || d > 1) {
                char sub[160];
                snprintf(sub, sizeof(sub), "%s.expressions.%s", path, names[c]);
                return FAIL("%s: expected a number in [0, 1]", sub);
            }
            *dst[c] = (float)d;
        }
    }
    return KS_STATUS_OK;
}

ks_status ks_ar_fixture_parse(const char *json, size_t size_bytes, ks_ar_fixture *out, char *err,
                              size_t err_cap) {
    if (!json || !out) {
        snprintf(err, err_cap, "fixture: NULL argument");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (size_bytes > KS_AR_FIXTURE_MAX_BYTES) {
        snprintf(err, err_cap, "fixture: %zu bytes, over KS_AR_FIXTURE_MAX_BYTES", size_bytes);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    memset(out, 0, sizeof(*out));
    cJSON *root = cJSON_ParseWithLength(json, size_bytes);
    if (!root) {
        snprintf(err, err_cap, "fixture: invalid JSON");
        return KS_STATUS_INVALID_MODEL;
    }
    ks_status st = KS_STATUS_OK;
    if (!cJSON_IsObject(root)) {
        st = FAIL("fixture: expected a JSON object");
        goto done;
    }
    static const char *const dims[2] = {"width", "height"};
    int32_t *dst[2] = {&out->width_px, &out->height_px};
    for (int c = 0; c < 2; c++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, dims[c]);
        double d;
        if (!v) continue;
        if (!number(v, &d) || d != floor(d) || d < 1 || d > 16384) {
            st = FAIL("%s: expected an integer in [1, 16384]", dims[c]);
            goto done;
        }
        *dst[c] = (int32_t)d;
    }
    const cJSON *faces = cJSON_GetObjectItemCaseSensitive(root, "faces");
    if (!cJSON_IsArray(faces)) {
        st = FAIL("faces: expected an array");
        goto done;
    }
    int n = cJSON_GetArraySize(faces);
    if (n > (int)KS_AR_MAX_FACES) {
        st = FAIL("faces: %d faces, over KS_AR_MAX_FACES (%u)", n, KS_AR_MAX_FACES);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        st = parse_face(cJSON_GetArrayItem(faces, i), (uint32_t)i, out, err, err_cap);
        if (st) goto done;
    }
    out->num_faces = (uint32_t)n;
done:
    cJSON_Delete(root);
    return st;
}

ks_status ks_ar_fixture_load(const char *path, ks_ar_fixture *out, char *err, size_t err_cap) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_cap, "%s: cannot open", path);
        return KS_STATUS_IO_ERROR;
    }
    char *buf = malloc(KS_AR_FIXTURE_MAX_BYTES + 1);
    if (!buf) {
        fclose(f);
        snprintf(err, err_cap, "%s: out of memory", path);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    size_t n = fread(buf, 1, KS_AR_FIXTURE_MAX_BYTES + 1, f);
    int read_error = ferror(f);
    fclose(f);
    ks_status st;
    if (read_error) {
        snprintf(err, err_cap, "%s: read error", path);
        st = KS_STATUS_IO_ERROR;
    } else if (n > KS_AR_FIXTURE_MAX_BYTES) {
        snprintf(err, err_cap, "%s: over KS_AR_FIXTURE_MAX_BYTES (%u)", path,
                 KS_AR_FIXTURE_MAX_BYTES);
        st = KS_STATUS_LIMIT_EXCEEDED;
    } else {
        char msg[256];
        st = ks_ar_fixture_parse(buf, n, out, msg, sizeof(msg));
        if (st) snprintf(err, err_cap, "%s: %s", path, msg);
    }
    free(buf);
    return st;
}

void ks_ar_fixture_scale(ks_ar_fixture *fx, float sx, float sy) {
    for (uint32_t i = 0; i < fx->num_faces; i++)
        for (uint32_t k = 0; k < fx->faces[i].num_landmarks; k++) {
            fx->landmarks[i][3 * k] *= sx;
            fx->landmarks[i][3 * k + 1] *= sy;
            fx->landmarks[i][3 * k + 2] *= sx;
        }
    fx->width_px = (int32_t)lroundf((float)fx->width_px * sx);
    fx->height_px = (int32_t)lroundf((float)fx->height_px * sy);
}
