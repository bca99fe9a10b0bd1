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

int ks__jni_task_options(JNIEnv *env, jintArray ints, jfloatArray floats, jstring model_path,
                         ks_task_options *out, const char **path_out) {
    jint vi[TASK_NUM_INTS];
    jfloat vf[TASK_NUM_FLOATS];
    *path_out = NULL;
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
    if (model_path != NULL) {
        /* Modified UTF-8: identical to UTF-8 except for NUL and supplementary characters. */
        *path_out = (*env)->GetStringUTFChars(env, model_path, NULL);
        if (*path_out == NULL) return 1;
        out->model_path = *path_out;
    }
    return 0;
}

void ks__jni_task_options_release(JNIEnv *env, jstring model_path, const char *path) {
    if (model_path != NULL && path != NULL) (*env)->ReleaseStringUTFChars(env, model_path, path);
}
