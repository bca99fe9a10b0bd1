/* JNI glue of the AR effects (kestrel/effect.h, kestrel/ar.h): ai.kestrel.Effect and
 * ai.kestrel.EffectRenderer.
 *
 * Built with the renderer only when the build has it (KS_JNI_HAVE_AR, set by jni/CMakeLists.txt
 * when the kestrel_ar target exists); otherwise every entry point throws KestrelException
 * (UNSUPPORTED), so the Java classes exist and fail at construction.
 *
 * Layouts shared with the Java classes (same order on both sides):
 *
 *   Effect.nativeInfo:            Object[] { String id, String name, String author,
 *                                 int[] {version major, minor, patch, required_capabilities,
 *                                        max_faces},
 *                                 String[] layer names, int[] layer kinds,
 *                                 String[] param names, int[] param types, String[] state names }
 *   EffectRenderer.nativeRender   ints (RENDER_INT_*), faces: FACE_FLOATS per face
 *                                 (id, num_landmarks, has_pose, pose[16], projection[16],
 *                                 mouth_open, left_eye_blink, right_eye_blink, brow_raise, smile)
 *                                 plus one float[] of (x, y, z) landmarks per face;
 *                                 returns the stats {num_faces, num_layers_drawn, num_passes,
 *                                 num_triggers_fired, cpu_ms}
 *   EffectRenderer.nativeLayerInstance: {drawn, face_id, sprite_frame, center x, y, size w, h,
 *                                 angle_rad}
 */
#include <stdlib.h>
#include <string.h>

#include "kestrel_jni.h"

#if defined(KS_JNI_GENERATED_HEADERS)
#include "ai_kestrel_Effect.h"
#include "ai_kestrel_EffectRenderer.h"
#endif

#if defined(KS_JNI_HAVE_AR)
#include "kestrel/ar.h"
#include "kestrel/effect.h"
#endif

enum {
    RENDER_INT_WIDTH,
    RENDER_INT_HEIGHT,
    RENDER_INT_IN_TEXTURE,
    RENDER_INT_IN_STRIDE,
    RENDER_INT_MASK_WIDTH,
    RENDER_INT_MASK_HEIGHT,
    RENDER_INT_OUT_TEXTURE,
    RENDER_INT_TO_FRAMEBUFFER,
    RENDER_INT_FRAMEBUFFER,
    RENDER_INT_OUT_STRIDE,
    RENDER_NUM_INTS
};
enum { FACE_FLOATS = 3 + 16 + 16 + 5, NUM_STATS = 5, NUM_INSTANCE_FLOATS = 8, NUM_INFO = 9 };

#if !defined(KS_JNI_HAVE_AR)

static const char k_no_ar[] =
    "Effect/EffectRenderer: this build has no AR renderer (ar_render was skipped at configure "
    "time)";

JNIEXPORT jlong JNICALL Java_ai_kestrel_Effect_nativeOpenFile(JNIEnv *env, jclass cls,
                                                              jstring jpath) {
    ks__jni_throw(env, KS_STATUS_UNSUPPORTED, k_no_ar);
    return 0;
}

JNIEXPORT jlong JNICALL Java_ai_kestrel_Effect_nativeOpenBytes(JNIEnv *env, jclass cls,
                                                               jbyteArray data) {
    ks__jni_throw(env, KS_STATUS_UNSUPPORTED, k_no_ar);
    return 0;
}

JNIEXPORT void JNICALL Java_ai_kestrel_Effect_nativeDestroy(JNIEnv *env, jclass cls, jlong h) {}

JNIEXPORT jobjectArray JNICALL Java_ai_kestrel_Effect_nativeInfo(JNIEnv *env, jclass cls, jlong h) {
    ks__jni_throw(env, KS_STATUS_UNSUPPORTED, k_no_ar);
    return NULL;
}

JNIEXPORT jlong JNICALL Java_ai_kestrel_EffectRenderer_nativeCreate(JNIEnv *env, jclass cls,
                                                                    jlong effect, jint backend,
                                                                    jint width, jint height) {
    ks__jni_throw(env, KS_STATUS_UNSUPPORTED, k_no_ar);
    return 0;
}

JNIEXPORT void JNICALL Java_ai_kestrel_EffectRenderer_nativeDestroy(JNIEnv *env, jclass cls,
                                                                    jlong h) {}

JNIEXPORT void JNICALL Java_ai_kestrel_EffectRenderer_nativeSwapEffect(JNIEnv *env, jclass cls,
                                                                       jlong h, jlong effect) {
    ks__jni_throw(env, KS_STATUS_UNSUPPORTED, k_no_ar);
}

JNIEXPORT void JNICALL Java_ai_kestrel_EffectRenderer_nativeSetFloat(JNIEnv *env, jclass cls,
                                                                     jlong h, jstring name,
                                                                     jfloat value) {
    ks__jni_throw(env, KS_STATUS_UNSUPPORTED, k_no_ar);
}

JNIEXPORT void JNICALL Java_ai_kestrel_EffectRenderer_nativeSetColor(JNIEnv *env, jclass cls,
                                                                     jlong h, jstring name,
                                                                     jfloatArray rgba) {
    ks__jni_throw(env, KS_STATUS_UNSUPPORTED, k_no_ar);
}

JNIEXPORT void JNICALL Java_ai_kestrel_EffectRenderer_nativeSetText(JNIEnv *env, jclass cls,
                                                                    jlong h, jstring name,
                                                                    jstring value,
                                                                    jboolean as_enum) {
    ks__jni_throw(env, KS_STATUS_UNSUPPORTED, k_no_ar);
}

JNIEXPORT void JNICALL Java_ai_kestrel_EffectRenderer_nativeEnterState(JNIEnv *env, jclass cls,
                                                                       jlong h, jstring state) {
    ks__jni_throw(env, KS_STATUS_UNSUPPORTED, k_no_ar);
}

JNIEXPORT void JNICALL Java_ai_kestrel_EffectRenderer_nativeReset(JNIEnv *env, jclass cls,
                                                                  jlong h) {
    ks__jni_throw(env, KS_STATUS_UNSUPPORTED, k_no_ar);
}

JNIEXPORT jfloatArray JNICALL Java_ai_kestrel_EffectRenderer_nativeRender(
    JNIEnv *env, jclass cls, jlong h, jintArray ints, jlong timestamp_us, jbyteArray in_array,
    jobject in_buffer, jlong in_offset, jfloatArray face_data, jobjectArray landmarks,
    jbyteArray mask, jbyteArray out_array, jobject out_buffer, jlong out_offset) {
    ks__jni_throw(env, KS_STATUS_UNSUPPORTED, k_no_ar);
    return NULL;
}

JNIEXPORT jfloatArray JNICALL Java_ai_kestrel_EffectRenderer_nativeLayerInstance(
    JNIEnv *env, jclass cls, jlong h, jint layer, jint face) {
    ks__jni_throw(env, KS_STATUS_UNSUPPORTED, k_no_ar);
    return NULL;
}

#else /* KS_JNI_HAVE_AR */

/* The renderer plus the per-frame scratch the glue fills, made once at create so that a frame
 * allocates nothing on the native side. */
typedef struct jni_renderer {
    ks_ar_renderer *renderer;
    ks_ar_face faces[KS_AR_MAX_FACES];
    float landmarks[KS_AR_MAX_FACES][3 * KS_AR_MAX_LANDMARKS];
} jni_renderer;

JNIEXPORT jlong JNICALL Java_ai_kestrel_Effect_nativeOpenFile(JNIEnv *env, jclass cls,
                                                              jstring jpath) {
    const char *path = (*env)->GetStringUTFChars(env, jpath, NULL);
    if (path == NULL) return 0;
    ks_effect *fx = NULL;
    ks_status st = ks_effect_open_file(path, NULL, &fx);
    (*env)->ReleaseStringUTFChars(env, jpath, path);
    if (st != KS_STATUS_OK) {
        ks__jni_throw_last(env, st, NULL); /* the message starts with the path */
        return 0;
    }
    return KS_JNI_HANDLE(fx);
}

JNIEXPORT jlong JNICALL Java_ai_kestrel_Effect_nativeOpenBytes(JNIEnv *env, jclass cls,
                                                               jbyteArray data) {
    jsize n = (*env)->GetArrayLength(env, data);
    jbyte *bytes = (*env)->GetByteArrayElements(env, data, NULL);
    if (bytes == NULL) return 0;
    ks_effect *fx = NULL;
    ks_status st = ks_effect_open_memory(bytes, (size_t)n, NULL, &fx);
    (*env)->ReleaseByteArrayElements(env, data, bytes, JNI_ABORT);
    if (st != KS_STATUS_OK) {
        ks__jni_throw_last(env, st, NULL);
        return 0;
    }
    return KS_JNI_HANDLE(fx);
}

JNIEXPORT void JNICALL Java_ai_kestrel_Effect_nativeDestroy(JNIEnv *env, jclass cls, jlong h) {
    ks_effect_destroy(KS_JNI_PTR(ks_effect, h));
}

/* Sets out[index] to a new String (NULL text: ""); returns nonzero with an exception pending. */
static int set_string(JNIEnv *env, jobjectArray out, jsize index, const char *text) {
    jstring s = (*env)->NewStringUTF(env, text ? text : "");
    if (s == NULL) return 1;
    (*env)->SetObjectArrayElement(env, out, index, s);
    (*env)->DeleteLocalRef(env, s);
    return (*env)->ExceptionCheck(env) ? 1 : 0;
}

static int set_element(JNIEnv *env, jobjectArray out, jsize index, jobject value) {
    if (value == NULL) return 1;
    (*env)->SetObjectArrayElement(env, out, index, value);
    (*env)->DeleteLocalRef(env, value);
    return (*env)->ExceptionCheck(env) ? 1 : 0;
}

static jintArray new_ints(JNIEnv *env, const jint *values, jsize n) {
    jintArray a = (*env)->NewIntArray(env, n);
    if (a != NULL && n > 0) (*env)->SetIntArrayRegion(env, a, 0, n, values);
    return a;
}

JNIEXPORT jobjectArray JNICALL Java_ai_kestrel_Effect_nativeInfo(JNIEnv *env, jclass cls, jlong h) {
    const ks_effect *fx = KS_JNI_PTR(const ks_effect, h);
    const ks_effect_info *info = ks_effect_get_info(fx);
    uint32_t num_layers = ks_effect_num_layers(fx);
    uint32_t num_params = ks_effect_num_params(fx);
    uint32_t num_states = ks_effect_num_states(fx);
    /* The reader's limits keep these small; checked so the fixed arrays below cannot overflow. */
    if (info == NULL || num_layers > KS_EFFECT_MAX_LAYERS || num_params > KS_EFFECT_MAX_PARAMS ||
        num_states > KS_EFFECT_MAX_STATES) {
        ks__jni_throw(env, KS_STATUS_INTERNAL, "Effect: inconsistent native effect");
        return NULL;
    }
    jclass object_class = (*env)->FindClass(env, "java/lang/Object");
    if (object_class == NULL) return NULL;
    jobjectArray out = (*env)->NewObjectArray(env, NUM_INFO, object_class, NULL);
    jobjectArray layer_names =
        out ? (*env)->NewObjectArray(env, (jsize)num_layers, ks__jni_string_class(), NULL) : NULL;
    jobjectArray param_names =
        layer_names ? (*env)->NewObjectArray(env, (jsize)num_params, ks__jni_string_class(), NULL)
                    : NULL;
    jobjectArray state_names =
        param_names ? (*env)->NewObjectArray(env, (jsize)num_states, ks__jni_string_class(), NULL)
                    : NULL;
    if (state_names == NULL) return NULL;

    jint layer_kinds[KS_EFFECT_MAX_LAYERS];
    jint param_types[KS_EFFECT_MAX_PARAMS];
    for (uint32_t i = 0; i < num_layers; i++) {
        const ks_effect_layer *l = ks_effect_layer_at(fx, i);
        layer_kinds[i] = (jint)l->kind;
        if (set_string(env, layer_names, (jsize)i, l->name)) return NULL;
    }
    for (uint32_t i = 0; i < num_params; i++) {
        const ks_effect_param *p = ks_effect_param_at(fx, i);
        param_types[i] = (jint)p->type;
        if (set_string(env, param_names, (jsize)i, p->name)) return NULL;
    }
    for (uint32_t i = 0; i < num_states; i++) {
        if (set_string(env, state_names, (jsize)i, ks_effect_state_at(fx, i)->name)) return NULL;
    }
    const jint nums[5] = {(jint)info->version_major, (jint)info->version_minor,
                          (jint)info->version_patch, (jint)info->required_capabilities,
                          (jint)info->max_faces};
    if (set_string(env, out, 0, info->id) || set_string(env, out, 1, info->name) ||
        set_string(env, out, 2, info->author) || set_element(env, out, 3, new_ints(env, nums, 5)) ||
        set_element(env, out, 4, layer_names) ||
        set_element(env, out, 5, new_ints(env, layer_kinds, (jsize)num_layers)) ||
        set_element(env, out, 6, param_names) ||
        set_element(env, out, 7, new_ints(env, param_types, (jsize)num_params)) ||
        set_element(env, out, 8, state_names))
        return NULL;
    return out;
}

JNIEXPORT jlong JNICALL Java_ai_kestrel_EffectRenderer_nativeCreate(JNIEnv *env, jclass cls,
                                                                    jlong effect, jint backend,
                                                                    jint width, jint height) {
    jni_renderer *jr = calloc(1, sizeof *jr);
    if (jr == NULL) {
        ks__jni_throw(env, KS_STATUS_OUT_OF_MEMORY, "EffectRenderer: out of memory");
        return 0;
    }
    ks_ar_renderer_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.backend = (ks_ar_backend)backend;
    desc.width_px = width;
    desc.height_px = height;
    ks_status st = ks_ar_renderer_create(&desc, KS_JNI_PTR(const ks_effect, effect), &jr->renderer);
    if (st != KS_STATUS_OK) {
        ks__jni_throw_last(env, st, NULL);
        free(jr);
        return 0;
    }
    return KS_JNI_HANDLE(jr);
}

JNIEXPORT void JNICALL Java_ai_kestrel_EffectRenderer_nativeDestroy(JNIEnv *env, jclass cls,
                                                                    jlong h) {
    jni_renderer *jr = KS_JNI_PTR(jni_renderer, h);
    if (jr == NULL) return;
    ks_ar_renderer_destroy(jr->renderer);
    free(jr);
}

/* Throws with the renderer's message unless st is OK. */
static void check(JNIEnv *env, ks_status st, const ks_ar_renderer *r) {
    if (st != KS_STATUS_OK) ks__jni_throw_last(env, st, r);
}

/* The Java side holds a reference on the new effect's package before this call and drops the old
 * one after it succeeds (EffectRenderer.swapEffect). */
JNIEXPORT void JNICALL Java_ai_kestrel_EffectRenderer_nativeSwapEffect(JNIEnv *env, jclass cls,
                                                                       jlong h, jlong effect) {
    ks_ar_renderer *r = KS_JNI_PTR(jni_renderer, h)->renderer;
    check(env, ks_ar_renderer_swap_effect(r, KS_JNI_PTR(const ks_effect, effect)), r);
}

JNIEXPORT void JNICALL Java_ai_kestrel_EffectRenderer_nativeSetFloat(JNIEnv *env, jclass cls,
                                                                     jlong h, jstring jname,
                                                                     jfloat value) {
    ks_ar_renderer *r = KS_JNI_PTR(jni_renderer, h)->renderer;
    const char *name = (*env)->GetStringUTFChars(env, jname, NULL);
    if (name == NULL) return;
    ks_status st = ks_ar_set_param_float(r, name, value);
    (*env)->ReleaseStringUTFChars(env, jname, name);
    check(env, st, r);
}

JNIEXPORT void JNICALL Java_ai_kestrel_EffectRenderer_nativeSetColor(JNIEnv *env, jclass cls,
                                                                     jlong h, jstring jname,
                                                                     jfloatArray jrgba) {
    ks_ar_renderer *r = KS_JNI_PTR(jni_renderer, h)->renderer;
    float rgba[4];
    (*env)->GetFloatArrayRegion(env, jrgba, 0, 4, rgba); /* length checked in Java */
    if ((*env)->ExceptionCheck(env)) return;
    const char *name = (*env)->GetStringUTFChars(env, jname, NULL);
    if (name == NULL) return;
    ks_status st = ks_ar_set_param_color(r, name, rgba);
    (*env)->ReleaseStringUTFChars(env, jname, name);
    check(env, st, r);
}

JNIEXPORT void JNICALL Java_ai_kestrel_EffectRenderer_nativeSetText(JNIEnv *env, jclass cls,
                                                                    jlong h, jstring jname,
                                                                    jstring jvalue,
                                                                    jboolean as_enum) {
    ks_ar_renderer *r = KS_JNI_PTR(jni_renderer, h)->renderer;
    const char *name = (*env)->GetStringUTFChars(env, jname, NULL);
    if (name == NULL) return;
    const char *value = (*env)->GetStringUTFChars(env, jvalue, NULL);
    if (value == NULL) {
        (*env)->ReleaseStringUTFChars(env, jname, name);
        return;
    }
    ks_status st =
        as_enum ? ks_ar_set_param_enum(r, name, value) : ks_ar_set_param_string(r, name, value);
    (*env)->ReleaseStringUTFChars(env, jvalue, value);
    (*env)->ReleaseStringUTFChars(env, jname, name);
    check(env, st, r);
}

JNIEXPORT void JNICALL Java_ai_kestrel_EffectRenderer_nativeEnterState(JNIEnv *env, jclass cls,
                                                                       jlong h, jstring jstate) {
    ks_ar_renderer *r = KS_JNI_PTR(jni_renderer, h)->renderer;
    const char *state = (*env)->GetStringUTFChars(env, jstate, NULL);
    if (state == NULL) return;
    ks_status st = ks_ar_enter_state(r, state);
    (*env)->ReleaseStringUTFChars(env, jstate, state);
    check(env, st, r);
}

JNIEXPORT void JNICALL Java_ai_kestrel_EffectRenderer_nativeReset(JNIEnv *env, jclass cls,
                                                                  jlong h) {
    ks_ar_reset(KS_JNI_PTR(jni_renderer, h)->renderer);
}

/* Copies the faces into jr's scratch. Returns the number of faces, or -1 with an exception. */
static int fill_faces(JNIEnv *env, jni_renderer *jr, jfloatArray face_data,
                      jobjectArray landmarks) {
    jsize num_faces = (*env)->GetArrayLength(env, landmarks);
    if (num_faces > (jsize)KS_AR_MAX_FACES) num_faces = KS_AR_MAX_FACES; /* as the renderer */
    if ((*env)->GetArrayLength(env, face_data) < num_faces * FACE_FLOATS) {
        ks__jni_throw(env, KS_STATUS_INTERNAL, "EffectRenderer: face arrays do not match");
        return -1;
    }
    for (jsize i = 0; i < num_faces; i++) {
        float v[FACE_FLOATS];
        (*env)->GetFloatArrayRegion(env, face_data, i * FACE_FLOATS, FACE_FLOATS, v);
        jfloatArray xyz = (jfloatArray)(*env)->GetObjectArrayElement(env, landmarks, i);
        if (xyz == NULL) {
            ks__jni_throw(env, KS_STATUS_INTERNAL, "EffectRenderer: missing landmarks");
            return -1;
        }
        jsize n = (*env)->GetArrayLength(env, xyz);
        if (n % 3 != 0 || n > (jsize)(3 * KS_AR_MAX_LANDMARKS)) {
            (*env)->DeleteLocalRef(env, xyz);
            ks__jni_throwf(env, KS_STATUS_INVALID_ARGUMENT,
                           "EffectRenderer: face %d has %d landmark coordinates, expected 3 x "
                           "468 or 3 x 478",
                           (int)i, (int)n);
            return -1;
        }
        (*env)->GetFloatArrayRegion(env, xyz, 0, n, jr->landmarks[i]);
        (*env)->DeleteLocalRef(env, xyz);
        ks_ar_face *f = &jr->faces[i];
        memset(f, 0, sizeof *f);
        f->id = (int32_t)v[0];
        f->num_landmarks = (uint32_t)(n / 3); /* the renderer checks 468 / 478 */
        f->landmarks_xyz = jr->landmarks[i];
        f->has_pose = v[2] != 0.0f;
        memcpy(f->pose_matrix, &v[3], sizeof f->pose_matrix);
        memcpy(f->projection_matrix, &v[19], sizeof f->projection_matrix);
        f->expressions.mouth_open = v[35];
        f->expressions.left_eye_blink = v[36];
        f->expressions.right_eye_blink = v[37];
        f->expressions.brow_raise = v[38];
        f->expressions.smile = v[39];
    }
    return (int)num_faces;
}

/* Where a byte[] or direct ByteBuffer lives for the length of one call. */
typedef struct pinned {
    jbyteArray array;
    jbyte *elements;
    uint8_t *data;
} pinned;

static int pin(JNIEnv *env, jbyteArray array, jobject buffer, jlong offset, pinned *out) {
    memset(out, 0, sizeof *out);
    if (array != NULL) {
        out->elements = (*env)->GetByteArrayElements(env, array, NULL);
        if (out->elements == NULL) return 1;
        out->array = array;
        out->data = (uint8_t *)out->elements + offset; /* offset and size checked in Java */
    } else if (buffer != NULL) {
        uint8_t *base = (*env)->GetDirectBufferAddress(env, buffer);
        if (base == NULL) {
            ks__jni_throw(env, KS_STATUS_INVALID_ARGUMENT,
                          "EffectRenderer: the ByteBuffer is not direct");
            return 1;
        }
        out->data = base + offset;
    }
    return 0;
}

static void unpin(JNIEnv *env, pinned *p, int commit) {
    if (p->elements != NULL)
        (*env)->ReleaseByteArrayElements(env, p->array, p->elements, commit ? 0 : JNI_ABORT);
    p->elements = NULL;
}

JNIEXPORT jfloatArray JNICALL Java_ai_kestrel_EffectRenderer_nativeRender(
    JNIEnv *env, jclass cls, jlong h, jintArray ints, jlong timestamp_us, jbyteArray in_array,
    jobject in_buffer, jlong in_offset, jfloatArray face_data, jobjectArray landmarks,
    jbyteArray mask, jbyteArray out_array, jobject out_buffer, jlong out_offset) {
    jni_renderer *jr = KS_JNI_PTR(jni_renderer, h);
    jint vi[RENDER_NUM_INTS];
    if ((*env)->GetArrayLength(env, ints) != RENDER_NUM_INTS) {
        ks__jni_throw(env, KS_STATUS_INTERNAL, "EffectRenderer: frame arrays do not match");
        return NULL;
    }
    (*env)->GetIntArrayRegion(env, ints, 0, RENDER_NUM_INTS, vi);
    int num_faces = fill_faces(env, jr, face_data, landmarks);
    if (num_faces < 0) return NULL;

    pinned in_px, out_px, mask_px;
    memset(&out_px, 0, sizeof out_px);
    memset(&mask_px, 0, sizeof mask_px);
    if (pin(env, in_array, in_buffer, in_offset, &in_px)) return NULL;
    jfloatArray result = NULL;
    if (pin(env, mask, NULL, 0, &mask_px) || pin(env, out_array, out_buffer, out_offset, &out_px))
        goto done;

    ks_ar_frame frame;
    memset(&frame, 0, sizeof frame);
    frame.width_px = vi[RENDER_INT_WIDTH];
    frame.height_px = vi[RENDER_INT_HEIGHT];
    frame.timestamp_us = (int64_t)timestamp_us;
    frame.texture = (uint32_t)vi[RENDER_INT_IN_TEXTURE];
    frame.pixels = in_px.data;
    frame.stride_bytes = (size_t)vi[RENDER_INT_IN_STRIDE];
    frame.num_faces = (uint32_t)num_faces;
    frame.faces = jr->faces;
    frame.mask.pixels = mask_px.data;
    frame.mask.width_px = vi[RENDER_INT_MASK_WIDTH];
    frame.mask.height_px = vi[RENDER_INT_MASK_HEIGHT];
    ks_ar_output output;
    memset(&output, 0, sizeof output);
    output.texture = (uint32_t)vi[RENDER_INT_OUT_TEXTURE];
    output.to_framebuffer = vi[RENDER_INT_TO_FRAMEBUFFER];
    output.framebuffer = (uint32_t)vi[RENDER_INT_FRAMEBUFFER];
    output.pixels = out_px.data;
    output.stride_bytes = (size_t)vi[RENDER_INT_OUT_STRIDE];

    ks_status st = ks_ar_render(jr->renderer, &frame, &output);
    if (st != KS_STATUS_OK) {
        ks__jni_throw_last(env, st, jr->renderer);
        goto done;
    }
    ks_ar_stats stats;
    st = ks_ar_get_stats(jr->renderer, &stats);
    if (st != KS_STATUS_OK) {
        ks__jni_throw_last(env, st, jr->renderer);
        goto done;
    }
    const float values[NUM_STATS] = {(float)stats.num_faces, (float)stats.num_layers_drawn,
                                     (float)stats.num_passes, (float)stats.num_triggers_fired,
                                     (float)stats.cpu_ms};
    result = (*env)->NewFloatArray(env, NUM_STATS);
    if (result != NULL) (*env)->SetFloatArrayRegion(env, result, 0, NUM_STATS, values);
done:
    unpin(env, &out_px, result != NULL);
    unpin(env, &mask_px, 0);
    unpin(env, &in_px, 0);
    return result;
}

JNIEXPORT jfloatArray JNICALL Java_ai_kestrel_EffectRenderer_nativeLayerInstance(
    JNIEnv *env, jclass cls, jlong h, jint layer, jint face) {
    const ks_ar_renderer *r = KS_JNI_PTR(jni_renderer, h)->renderer;
    ks_ar_layer_instance inst;
    if (layer < 0 || face < 0) {
        ks__jni_throwf(env, KS_STATUS_INVALID_ARGUMENT,
                       "EffectRenderer: layer %d, face %d: indices must be >= 0", (int)layer,
                       (int)face);
        return NULL;
    }
    ks_status st = ks_ar_get_layer_instance(r, (uint32_t)layer, (uint32_t)face, &inst);
    if (st != KS_STATUS_OK) {
        ks__jni_throw_last(env, st, r);
        return NULL;
    }
    const float v[NUM_INSTANCE_FLOATS] = {
        (float)(inst.drawn != 0), (float)inst.face_id, (float)inst.sprite_frame, inst.center_px[0],
        inst.center_px[1],        inst.size_px[0],     inst.size_px[1],          inst.angle_rad};
    jfloatArray out = (*env)->NewFloatArray(env, NUM_INSTANCE_FLOATS);
    if (out != NULL) (*env)->SetFloatArrayRegion(env, out, 0, NUM_INSTANCE_FLOATS, v);
    return out;
}

#endif /* KS_JNI_HAVE_AR */
