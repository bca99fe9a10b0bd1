/* JNI_OnLoad, exceptions and the marshalling helpers shared by all bindings. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kestrel_jni.h"

static jclass g_exception_class;
static jmethodID g_exception_init;
static jclass g_tensor_info_class;
static jmethodID g_tensor_info_init;
static jclass g_string_class;
static jclass g_float_array_class;
static jmethodID g_key_provider_key_for;

/* Number of ints/floats TaskOptions.nativeInts()/nativeFloats() produce. */
enum { TASK_NUM_INTS = 7, TASK_NUM_FLOATS = 6 };

static jclass global_class(JNIEnv *env, const char *name) {
    jclass local = (*env)->FindClass(env, name);
    if (local == NULL) return NULL;
    jclass global = (jclass)(*env)->NewGlobalRef(env, local);
    (*env)->DeleteLocalRef(env, local);
    return global;
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
    JNIEnv *env = NULL;
    if ((*vm)->GetEnv(vm, (void **)&env, KS_JNI_VERSION) != JNI_OK) return JNI_ERR;
    g_exception_class = global_class(env, "ai/kestrel/KestrelException");
    g_tensor_info_class = global_class(env, "ai/kestrel/TensorInfo");
    g_string_class = global_class(env, "java/lang/String");
    g_float_array_class = global_class(env, "[F");
    if (!g_exception_class || !g_tensor_info_class || !g_string_class || !g_float_array_class)
        return JNI_ERR;
    g_exception_init =
        (*env)->GetMethodID(env, g_exception_class, "<init>", "(ILjava/lang/String;)V");
    g_tensor_info_init =
        (*env)->GetMethodID(env, g_tensor_info_class, "<init>", "(Ljava/lang/String;I[JFI)V");
    if (!g_exception_init || !g_tensor_info_init) return JNI_ERR;
    jclass provider = (*env)->FindClass(env, "ai/kestrel/KeyProvider");
    if (provider == NULL) return JNI_ERR;
    g_key_provider_key_for = (*env)->GetMethodID(env, provider, "keyFor", "(Ljava/lang/String;)[B");
    (*env)->DeleteLocalRef(env, provider);
    if (!g_key_provider_key_for) return JNI_ERR;
    if (ks__jni_store_init(env) != 0) return JNI_ERR;
    if (ks__jni_image_init(env) != 0) return JNI_ERR;
    return KS_JNI_VERSION;
}

void ks__jni_throw(JNIEnv *env, ks_status status, const char *message) {
    if ((*env)->ExceptionCheck(env)) return; /* keep the first (more specific) exception */
    jstring jmessage = (*env)->NewStringUTF(env, message ? message : "");
    if (jmessage == NULL) return; /* OutOfMemoryError pending */
    jobject ex =
        (*env)->NewObject(env, g_exception_class, g_exception_init, (jint)status, jmessage);
    if (ex != NULL) (*env)->Throw(env, (jthrowable)ex);
}

void ks__jni_throw_last(JNIEnv *env, ks_status status, const void *handle) {
    ks__jni_throw(env, status, ks_last_error(handle));
}

void ks__jni_throwf(JNIEnv *env, ks_status status, const char *fmt, ...) {
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    ks__jni_throw(env, status, message);
}

jobject ks__jni_new_tensor_info(JNIEnv *env, const ks_tensor_info *info) {
    int32_t rank = info->shape.rank;
    if (rank < 0 || rank > KS_MAX_RANK) {
        ks__jni_throwf(env, KS_STATUS_INTERNAL, "tensor '%s' has rank %d", info->name, (int)rank);
        return NULL;
    }
    jlongArray dims = (*env)->NewLongArray(env, rank);
    if (dims == NULL) return NULL;
    jlong tmp[KS_MAX_RANK];
    for (int32_t i = 0; i < rank; i++)
        tmp[i] = (jlong)info->shape.dims[i];
    (*env)->SetLongArrayRegion(env, dims, 0, rank, tmp);
    jstring name = (*env)->NewStringUTF(env, info->name ? info->name : "");
    if (name == NULL) return NULL;
    return (*env)->NewObject(env, g_tensor_info_class, g_tensor_info_init, name, (jint)info->dtype,
                             dims, (jfloat)info->scale, (jint)info->zero_point);
}

jclass ks__jni_string_class(void) {
    return g_string_class;
}

jclass ks__jni_float_array_class(void) {
    return g_float_array_class;
}

void ks__jni_wipe(void *p, size_t n) {
    volatile uint8_t *v = (volatile uint8_t *)p;
    for (size_t i = 0; i < n; i++)
        v[i] = 0;
}

/* ks_task_key_fn over an ai.kestrel.KeyProvider: called by the C task inside create (or a swap),
 * on the thread (and with the JNIEnv) of nativeCreate (nativeSwapModel). The provider's array is
 * copied straight into the task's key_out (which the task wipes); a Java exception stays pending
 * and is what the caller sees (ks__jni_throw keeps the first one). */
static ks_status jni_key_provider(void *user, const char *model_name, uint8_t *key_out,
                                  size_t key_cap, size_t *key_bytes_out) {
    ks__jni_task_extras *x = user;
    JNIEnv *env = x->env;
    if ((*env)->ExceptionCheck(env)) return KS_STATUS_INVALID_STATE; /* an earlier call threw */
    jstring name = (*env)->NewStringUTF(env, model_name ? model_name : "");
    if (name == NULL) return KS_STATUS_OUT_OF_MEMORY;
    jbyteArray key =
        (jbyteArray)(*env)->CallObjectMethod(env, x->key_provider, g_key_provider_key_for, name);
    (*env)->DeleteLocalRef(env, name);
    if ((*env)->ExceptionCheck(env)) return KS_STATUS_INVALID_ARGUMENT;
    if (key == NULL) return KS_STATUS_INVALID_ARGUMENT; /* "key provider refused model '...'" */
    jsize n = (*env)->GetArrayLength(env, key);
    ks_status st = KS_STATUS_OK;
    if (n < 0 || (size_t)n > key_cap) {
        *key_bytes_out = (size_t)(n < 0 ? 0 : n); /* the task names the size it got */
    } else {
        (*env)->GetByteArrayRegion(env, key, 0, n, (jbyte *)key_out);
        *key_bytes_out = (size_t)n;
    }
    (*env)->DeleteLocalRef(env, key);
    return st;
}

/* The model path and key fields of `out` (the rest is the caller's), held in `extras`. Returns
 * nonzero with an exception pending, extras then released. */
static int fill_source(JNIEnv *env, jstring model_path, jbyteArray key, jobject key_provider,
                       ks_task_options *out, ks__jni_task_extras *extras) {
    if (key != NULL) {
        /* The Java side (TaskOptions.Builder.key, swapModel) checked the length; checked again
         * since the array is the caller's and could have been swapped by reflection. */
        jsize n = (*env)->GetArrayLength(env, key);
        if (n != KS_TASK_KEY_BYTES) {
            ks__jni_throwf(env, KS_STATUS_INVALID_ARGUMENT,
                           "key: %d bytes; a ks-protect key is %d bytes", (int)n,
                           KS_TASK_KEY_BYTES);
            return 1;
        }
        (*env)->GetByteArrayRegion(env, key, 0, n, (jbyte *)extras->key);
        out->key = extras->key;
        out->key_bytes = KS_TASK_KEY_BYTES;
    } else if (key_provider != NULL) {
        extras->key_provider = key_provider;
        out->key_provider = jni_key_provider;
        out->key_user = extras;
    }
    if (model_path != NULL) {
        /* Modified UTF-8: identical to UTF-8 except for NUL and supplementary characters. */
        extras->path = (*env)->GetStringUTFChars(env, model_path, NULL);
        if (extras->path == NULL) {
            ks__jni_task_options_release(extras);
            return 1;
        }
        extras->model_path = model_path;
        out->model_path = extras->path;
    }
    return 0;
}

int ks__jni_task_options(JNIEnv *env, jintArray ints, jfloatArray floats, jstring model_path,
                         jbyteArray key, jobject key_provider, ks_task_options *out,
                         ks__jni_task_extras *extras) {
    jint vi[TASK_NUM_INTS];
    jfloat vf[TASK_NUM_FLOATS];
    memset(extras, 0, sizeof *extras);
    extras->env = env;
    if ((*env)->GetArrayLength(env, ints) != TASK_NUM_INTS ||
        (*env)->GetArrayLength(env, floats) != TASK_NUM_FLOATS) {
        ks__jni_throw(env, KS_STATUS_INTERNAL, "task option arrays do not match the native glue");
        return 1;
    }
    (*env)->GetIntArrayRegion(env, ints, 0, TASK_NUM_INTS, vi);
    (*env)->GetFloatArrayRegion(env, floats, 0, TASK_NUM_FLOATS, vf);
    memset(out, 0, sizeof *out);
    out->mode = (ks_running_mode)vi[0];
    out->num_threads = vi[1];
    out->max_results = vi[2];
    out->rotation = (ks_rotation)vi[3];
    out->mirror = vi[4];
    out->precision = (ks_precision)vi[5];
    out->backend = (ks_backend)vi[6];
    out->min_score = vf[0];
    out->roi = (ks_box){vf[1], vf[2], vf[3], vf[4]};
    out->smoothing = vf[5];
    return fill_source(env, model_path, key, key_provider, out, extras);
}

int ks__jni_task_source(JNIEnv *env, jstring model_path, jbyteArray key, jobject key_provider,
                        ks_task_options *out, ks__jni_task_extras *extras) {
    memset(extras, 0, sizeof *extras);
    extras->env = env;
    memset(out, 0, sizeof *out);
    return fill_source(env, model_path, key, key_provider, out, extras);
}

void ks__jni_task_options_release(ks__jni_task_extras *extras) {
    ks__jni_wipe(extras->key, sizeof extras->key);
    if (extras->model_path != NULL && extras->path != NULL)
        (*extras->env)->ReleaseStringUTFChars(extras->env, extras->model_path, extras->path);
    extras->path = NULL;
    extras->model_path = NULL;
}
