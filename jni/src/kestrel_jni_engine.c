/* JNI glue of ai.kestrel.Kestrel, Model and Session (kestrel/engine.h). */
#include <stdlib.h>
#include <string.h>

#include "kestrel/engine.h"
#include "kestrel_jni.h"

/* Session.KIND_*: what nativeCopy's target is. */
enum { COPY_FLOATS = 0, COPY_BYTES = 1, COPY_DIRECT = 2 };

/* ---- ai.kestrel.Kestrel ---------------------------------------------------------------------- */

JNIEXPORT jstring JNICALL Java_ai_kestrel_Kestrel_nativeVersion(JNIEnv *env, jclass cls) {
    return (*env)->NewStringUTF(env, ks_version_string());
}

JNIEXPORT void JNICALL Java_ai_kestrel_Kestrel_nativeSetModelsDir(JNIEnv *env, jclass cls,
                                                                  jstring dir) {
    const char *path = dir ? (*env)->GetStringUTFChars(env, dir, NULL) : NULL;
    if (dir && !path) return;
    ks_status st = ks_set_models_dir(path);
    if (path) (*env)->ReleaseStringUTFChars(env, dir, path);
    if (st != KS_STATUS_OK) ks__jni_throw_last(env, st, NULL);
}

JNIEXPORT jstring JNICALL Java_ai_kestrel_Kestrel_nativeModelsDir(JNIEnv *env, jclass cls) {
    return (*env)->NewStringUTF(env, ks_models_dir());
}

/* ---- ai.kestrel.Model ------------------------------------------------------------------------ */

/* Copies the optional key into *key_out (free()d by the caller). Returns nonzero on exception. */
static int read_key(JNIEnv *env, jbyteArray key, ks_model_desc *desc, uint8_t **key_out) {
    *key_out = NULL;
    if (key == NULL) return 0;
    jsize n = (*env)->GetArrayLength(env, key);
    *key_out = malloc(n > 0 ? (size_t)n : 1u);
    if (*key_out == NULL) {
        ks__jni_throw(env, KS_STATUS_OUT_OF_MEMORY, "model key");
        return 1;
    }
    (*env)->GetByteArrayRegion(env, key, 0, n, (jbyte *)*key_out);
    desc->key = *key_out;
    desc->key_bytes = (size_t)n;
    return 0;
}

static void free_key(uint8_t *key, size_t key_bytes) {
    if (key != NULL) {
        memset(key, 0, key_bytes);
        free(key);
    }
}

JNIEXPORT jlong JNICALL Java_ai_kestrel_Model_nativeLoadFile(JNIEnv *env, jclass cls, jstring jpath,
                                                             jint flags, jbyteArray key) {
    ks_model_desc desc = {.flags = (uint32_t)flags};
    ks_model *model = NULL;
    uint8_t *key_copy = NULL;
    if (read_key(env, key, &desc, &key_copy)) return 0;
    const char *path = (*env)->GetStringUTFChars(env, jpath, NULL);
    if (path == NULL) {
        free_key(key_copy, desc.key_bytes);
        return 0;
    }
    ks_status st = ks_model_load_file(path, &desc, &model);
    (*env)->ReleaseStringUTFChars(env, jpath, path);
    free_key(key_copy, desc.key_bytes);
    if (st != KS_STATUS_OK) {
        ks__jni_throw_last(env, st, NULL);
        return 0;
    }
    return KS_JNI_HANDLE(model);
}

JNIEXPORT jlong JNICALL Java_ai_kestrel_Model_nativeLoadBytes(JNIEnv *env, jclass cls,
                                                              jbyteArray array, jobject direct,
                                                              jint offset, jint length, jint flags,
                                                              jbyteArray key) {
    /* Always a copy: the Java buffer may be moved or reused after this call. */
    ks_model_desc desc = {.flags = (uint32_t)flags | KS_MODEL_COPY_BUFFER};
    ks_model *model = NULL;
    uint8_t *key_copy = NULL;
    jbyte *elements = NULL;
    const uint8_t *data = NULL;
    if (read_key(env, key, &desc, &key_copy)) return 0;
    if (array != NULL) {
        elements = (*env)->GetByteArrayElements(env, array, NULL);
        data = (const uint8_t *)elements;
    } else {
        data = (const uint8_t *)(*env)->GetDirectBufferAddress(env, direct);
        if (data == NULL)
            ks__jni_throw(env, KS_STATUS_INVALID_ARGUMENT, "ByteBuffer is not direct");
    }
    ks_status st = KS_STATUS_OK;
    if (data != NULL) st = ks_model_load_buffer(data + offset, (size_t)length, &desc, &model);
    if (elements != NULL) (*env)->ReleaseByteArrayElements(env, array, elements, JNI_ABORT);
    free_key(key_copy, desc.key_bytes);
    if (data == NULL) return 0;
    if (st != KS_STATUS_OK) {
        ks__jni_throw_last(env, st, NULL);
        return 0;
    }
    return KS_JNI_HANDLE(model);
}

JNIEXPORT void JNICALL Java_ai_kestrel_Model_nativeDestroy(JNIEnv *env, jclass cls, jlong h) {
    ks_model_destroy(KS_JNI_PTR(ks_model, h));
}

JNIEXPORT jint JNICALL Java_ai_kestrel_Model_nativeNumTensors(JNIEnv *env, jclass cls, jlong h,
                                                              jboolean inputs) {
    const ks_model *m = KS_JNI_PTR(ks_model, h);
    return (jint)(inputs ? ks_model_num_inputs(m) : ks_model_num_outputs(m));
}

JNIEXPORT jobject JNICALL Java_ai_kestrel_Model_nativeTensorInfo(JNIEnv *env, jclass cls, jlong h,
                                                                 jboolean input, jint index) {
    const ks_model *m = KS_JNI_PTR(ks_model, h);
    ks_tensor_info info;
    ks_status st = input ? ks_model_input_info(m, (uint32_t)index, &info)
                         : ks_model_output_info(m, (uint32_t)index, &info);
    if (st != KS_STATUS_OK) {
        ks__jni_throw_last(env, st, m);
        return NULL;
    }
    return ks__jni_new_tensor_info(env, &info);
}

JNIEXPORT jstring JNICALL Java_ai_kestrel_Model_nativeMetadata(JNIEnv *env, jclass cls, jlong h,
                                                               jstring jkey) {
    const char *key = (*env)->GetStringUTFChars(env, jkey, NULL);
    if (key == NULL) return NULL;
    const char *value = ks_model_metadata(KS_JNI_PTR(ks_model, h), key);
    (*env)->ReleaseStringUTFChars(env, jkey, key);
    return value ? (*env)->NewStringUTF(env, value) : NULL;
}

/* ---- ai.kestrel.Session ---------------------------------------------------------------------- */

JNIEXPORT jlong JNICALL Java_ai_kestrel_Session_nativeCreate(JNIEnv *env, jclass cls, jlong model,
                                                             jint num_threads, jint flags,
                                                             jlong max_memory_bytes, jint tune,
                                                             jstring jcache, jint precision,
                                                             jint backend) {
    ks_session_desc desc = {.num_threads = num_threads,
                            .precision = (ks_precision)precision,
                            .flags = (uint32_t)flags,
                            .max_memory_bytes = (size_t)max_memory_bytes,
                            .tune = (ks_tune_mode)tune,
                            .backend = (ks_backend)backend};
    ks_session *session = NULL;
    const char *cache = jcache ? (*env)->GetStringUTFChars(env, jcache, NULL) : NULL;
    if (jcache && !cache) return 0;
    desc.tune_cache_path = cache;
    ks_status st = ks_session_create(KS_JNI_PTR(ks_model, model), &desc, &session);
    if (cache) (*env)->ReleaseStringUTFChars(env, jcache, cache);
    if (st != KS_STATUS_OK) {
        ks__jni_throw_last(env, st, NULL);
        return 0;
    }
    return KS_JNI_HANDLE(session);
}

JNIEXPORT void JNICALL Java_ai_kestrel_Session_nativeDestroy(JNIEnv *env, jclass cls, jlong h) {
    ks_session_destroy(KS_JNI_PTR(ks_session, h));
}

JNIEXPORT jint JNICALL Java_ai_kestrel_Session_nativeBackend(JNIEnv *env, jclass cls, jlong h) {
    return (jint)ks_session_backend(KS_JNI_PTR(ks_session, h));
}

JNIEXPORT void JNICALL Java_ai_kestrel_Session_nativeReshape(JNIEnv *env, jclass cls, jlong h,
                                                             jobjectArray jshapes) {
    ks_session *s = KS_JNI_PTR(ks_session, h);
    ks_tensor_shape *shapes = NULL;
    ks_status st;
    if (jshapes != NULL) {
        jsize n = (*env)->GetArrayLength(env, jshapes);
        shapes = calloc(n > 0 ? (size_t)n : 1u, sizeof *shapes);
        if (shapes == NULL) {
            ks__jni_throw(env, KS_STATUS_OUT_OF_MEMORY, "reshape: input shapes");
            return;
        }
        for (jsize i = 0; i < n; i++) {
            jlongArray dims = (jlongArray)(*env)->GetObjectArrayElement(env, jshapes, i);
            jsize rank = dims ? (*env)->GetArrayLength(env, dims) : -1;
            if (rank < 0 || rank > KS_MAX_RANK) {
                ks__jni_throwf(env, KS_STATUS_INVALID_ARGUMENT,
                               "reshape: input %d has rank %d (null or above %d)", (int)i,
                               (int)rank, KS_MAX_RANK);
                free(shapes);
                return;
            }
            jlong tmp[KS_MAX_RANK];
            (*env)->GetLongArrayRegion(env, dims, 0, rank, tmp);
            shapes[i].rank = (int32_t)rank;
            for (jsize d = 0; d < rank; d++)
                shapes[i].dims[d] = (int64_t)tmp[d];
            (*env)->DeleteLocalRef(env, dims);
        }
    }
    st = ks_session_reshape(s, shapes);
    free(shapes);
    if (st != KS_STATUS_OK) ks__jni_throw_last(env, st, s);
}

JNIEXPORT jobject JNICALL Java_ai_kestrel_Session_nativeTensorInfo(JNIEnv *env, jclass cls, jlong h,
                                                                   jboolean input, jint index) {
    ks_session *s = KS_JNI_PTR(ks_session, h);
    ks_tensor t;
    ks_status st = input ? ks_session_input(s, (uint32_t)index, &t)
                         : ks_session_output(s, (uint32_t)index, &t);
    if (st != KS_STATUS_OK) {
        ks__jni_throw_last(env, st, s);
        return NULL;
    }
    return ks__jni_new_tensor_info(env, &t.info);
}

JNIEXPORT void JNICALL Java_ai_kestrel_Session_nativeCopy(JNIEnv *env, jclass cls, jlong h,
                                                          jboolean input, jint index,
                                                          jobject target, jint kind, jint offset,
                                                          jlong length) {
    ks_session *s = KS_JNI_PTR(ks_session, h);
    const char *what = input ? "input" : "output";
    ks_tensor t;
    ks_status st = input ? ks_session_input(s, (uint32_t)index, &t)
                         : ks_session_output(s, (uint32_t)index, &t);
    if (st != KS_STATUS_OK) {
        ks__jni_throw_last(env, st, s);
        return;
    }
    if (kind == COPY_FLOATS && t.info.dtype != KS_DTYPE_F32) {
        ks__jni_throwf(env, KS_STATUS_INVALID_ARGUMENT,
                       "%s %d '%s' is %s, not f32: use a byte[] or ByteBuffer", what, (int)index,
                       t.info.name, ks_dtype_string(t.info.dtype));
        return;
    }
    if (length < 0 || (uint64_t)length != (uint64_t)t.size_bytes) {
        ks__jni_throwf(env, KS_STATUS_INVALID_ARGUMENT,
                       "%s %d '%s' holds %zu bytes, the Java buffer has %lld", what, (int)index,
                       t.info.name, t.size_bytes, (long long)length);
        return;
    }
    switch (kind) {
    case COPY_FLOATS: {
        jsize n = (jsize)(t.size_bytes / sizeof(float));
        if (input)
            (*env)->GetFloatArrayRegion(env, (jfloatArray)target, 0, n, (jfloat *)t.data);
        else
            (*env)->SetFloatArrayRegion(env, (jfloatArray)target, 0, n, (const jfloat *)t.data);
        break;
    }
    case COPY_BYTES:
        if (input)
            (*env)->GetByteArrayRegion(env, (jbyteArray)target, offset, (jsize)length,
                                       (jbyte *)t.data);
        else
            (*env)->SetByteArrayRegion(env, (jbyteArray)target, offset, (jsize)length,
                                       (const jbyte *)t.data);
        break;
    case COPY_DIRECT: {
        uint8_t *base = (*env)->GetDirectBufferAddress(env, target);
        jlong capacity = (*env)->GetDirectBufferCapacity(env, target);
        if (base == NULL || offset < 0 || (jlong)offset + length > capacity) {
            ks__jni_throw(env, KS_STATUS_INVALID_ARGUMENT, "ByteBuffer range is not accessible");
            return;
        }
        if (input)
            memcpy(t.data, base + offset, t.size_bytes);
        else
            memcpy(base + offset, t.data, t.size_bytes);
        break;
    }
    default:
        ks__jni_throw(env, KS_STATUS_INTERNAL, "unknown copy kind");
        break;
    }
}

JNIEXPORT void JNICALL Java_ai_kestrel_Session_nativeRun(JNIEnv *env, jclass cls, jlong h) {
    ks_session *s = KS_JNI_PTR(ks_session, h);
    ks_status st = ks_session_run(s);
    if (st != KS_STATUS_OK) ks__jni_throw_last(env, st, s);
}
