/* JNI glue of ai.kestrel.Store (kestrel/delivery.h): open, install (bytes, a direct buffer read
 * from an InputStream, a file), queries, rollback, markBad, check, and the store's events handed
 * to Store.Events.dispatch. Each failure throws
 * ai.kestrel.StoreException(status, ks_store_last_refusal, ks_last_error(store)); calls on one
 * Store are serialized by its Java methods, so the refusal and message read after a call are that
 * call's. Without the delivery module (KS_WITH_SODIUM=OFF) every entry point throws UNSUPPORTED.
 */
#include <stdlib.h>
#include <string.h>

#include "kestrel_jni.h"

#if defined(KS_JNI_HAVE_DELIVERY)
#include "kestrel/delivery.h"
#endif

static jclass g_store_exception_class;
static jmethodID g_store_exception_init;
static jclass g_package_info_class;
static jmethodID g_package_info_init;
static jmethodID g_key_for;  /* KeyProvider.keyFor */
static jmethodID g_dispatch; /* Store.Events.dispatch(int, PackageInfo, String) */

int ks__jni_store_init(JNIEnv *env) {
    jclass local = (*env)->FindClass(env, "ai/kestrel/StoreException");
    if (local == NULL) return 1;
    g_store_exception_class = (jclass)(*env)->NewGlobalRef(env, local);
    (*env)->DeleteLocalRef(env, local);
    local = (*env)->FindClass(env, "ai/kestrel/PackageInfo");
    if (local == NULL) return 1;
    g_package_info_class = (jclass)(*env)->NewGlobalRef(env, local);
    (*env)->DeleteLocalRef(env, local);
    if (!g_store_exception_class || !g_package_info_class) return 1;
    g_store_exception_init =
        (*env)->GetMethodID(env, g_store_exception_class, "<init>", "(IILjava/lang/String;)V");
    g_package_info_init = (*env)->GetMethodID(env, g_package_info_class, "<init>",
                                              "(Ljava/lang/String;IIIIJ[BLjava/lang/String;IJ[B)V");
    local = (*env)->FindClass(env, "ai/kestrel/KeyProvider");
    if (local == NULL) return 1;
    g_key_for = (*env)->GetMethodID(env, local, "keyFor", "(Ljava/lang/String;)[B");
    (*env)->DeleteLocalRef(env, local);
    local = (*env)->FindClass(env, "ai/kestrel/Store$Events");
    if (local == NULL) return 1;
    g_dispatch = (*env)->GetMethodID(env, local, "dispatch",
                                     "(ILai/kestrel/PackageInfo;Ljava/lang/String;)V");
    (*env)->DeleteLocalRef(env, local);
    return g_store_exception_init && g_package_info_init && g_key_for && g_dispatch ? 0 : 1;
}

/* Throws StoreException(status, refusal, message) unless an exception is already pending. */
static void throw_store(JNIEnv *env, ks_status status, int refusal, const char *message) {
    if ((*env)->ExceptionCheck(env)) return;
    jstring jmessage = (*env)->NewStringUTF(env, message ? message : "");
    if (jmessage == NULL) return;
    jobject ex = (*env)->NewObject(env, g_store_exception_class, g_store_exception_init,
                                   (jint)status, (jint)refusal, jmessage);
    if (ex != NULL) (*env)->Throw(env, (jthrowable)ex);
}

#if defined(KS_JNI_HAVE_DELIVERY)

/* The Java Store's handle: the C store and, when the app gave them, the KeyProvider of the
 * store's self-tests of encrypted models and the Store.Events that hands events to the
 * StoreListener (global references), with the VM to call them through. */
typedef struct jni_store {
    ks_store *store;
    JavaVM *vm;
    jobject key_provider;
    jobject events;
} jni_store;

#define STORE(h) (KS_JNI_PTR(jni_store, h)->store)

/* ks_store_key_fn over the KeyProvider: called inside an install, on the thread of the Java call
 * (attached, so GetEnv finds its JNIEnv). A Java exception stays pending and is what the install
 * throws; null or a key of another size is "no key" (the store refuses with NO_KEY). */
static int jni_store_key(void *user, const char *key_name, uint8_t key_out[32]) {
    jni_store *s = user;
    JNIEnv *env = NULL;
    if ((*s->vm)->GetEnv(s->vm, (void **)&env, KS_JNI_VERSION) != JNI_OK || env == NULL) return 1;
    if ((*env)->ExceptionCheck(env)) return 1;
    jstring name = (*env)->NewStringUTF(env, key_name ? key_name : "");
    if (name == NULL) return 1;
    jbyteArray key = (jbyteArray)(*env)->CallObjectMethod(env, s->key_provider, g_key_for, name);
    (*env)->DeleteLocalRef(env, name);
    if ((*env)->ExceptionCheck(env) || key == NULL) return 1;
    int rc = 1;
    if ((*env)->GetArrayLength(env, key) == KS_TASK_KEY_BYTES) {
        (*env)->GetByteArrayRegion(env, key, 0, KS_TASK_KEY_BYTES, (jbyte *)key_out);
        rc = 0;
    }
    (*env)->DeleteLocalRef(env, key);
    return rc;
}

static jobject package_info(JNIEnv *env, const ks_package_info *info);

/* ks_store_event_fn over Store.Events.dispatch: called inside an install or markBad, on the
 * thread of the Java call, with the store's lock held. dispatch catches what the listener throws
 * and keeps it for the Java call to throw once the store has returned, so nothing unwinds
 * through the store (JNI cannot unwind anyway: an exception only stays pending). An exception
 * already pending (the KeyProvider's, which the install is to throw) is set aside for the call
 * and restored after it. */
static void jni_store_event(void *user, ks_store_event event, const ks_package_info *info,
                            const char *message) {
    jni_store *s = user;
    JNIEnv *env = NULL;
    if (s->events == NULL || info == NULL) return;
    if ((*s->vm)->GetEnv(s->vm, (void **)&env, KS_JNI_VERSION) != JNI_OK || env == NULL) return;
    jthrowable pending = (*env)->ExceptionOccurred(env);
    if (pending != NULL) (*env)->ExceptionClear(env);
    if ((*env)->PushLocalFrame(env, 8) == 0) {
        jobject jinfo = package_info(env, info);
        jstring jmessage = jinfo != NULL ? (*env)->NewStringUTF(env, message ? message : "") : NULL;
        if (jmessage != NULL)
            (*env)->CallVoidMethod(env, s->events, g_dispatch, (jint)event, jinfo, jmessage);
        (*env)->PopLocalFrame(env, NULL);
    }
    /* Only the binding's own failure (e.g. out of memory making the PackageInfo) can be pending
     * here; it is what the call throws, unless an earlier exception is. */
    if (pending != NULL) {
        if ((*env)->ExceptionCheck(env)) (*env)->ExceptionClear(env);
        (*env)->Throw(env, pending);
        (*env)->DeleteLocalRef(env, pending);
    }
}

/* Throws the store's refusal and message for a failed call. */
static void throw_refusal(JNIEnv *env, ks_status status, ks_store *store) {
    throw_store(env, status, (int)ks_store_last_refusal(store), ks_last_error(store));
}

static jbyteArray new_bytes(JNIEnv *env, const uint8_t *data, jsize n) {
    jbyteArray out = (*env)->NewByteArray(env, n);
    if (out != NULL) (*env)->SetByteArrayRegion(env, out, 0, n, (const jbyte *)data);
    return out;
}

static jobject package_info(JNIEnv *env, const ks_package_info *info) {
    jstring id = (*env)->NewStringUTF(env, info->id);
    if (id == NULL) return NULL;
    jstring key_name = (*env)->NewStringUTF(env, info->encryption_key_name);
    if (key_name == NULL) return NULL;
    jbyteArray key_id = new_bytes(env, info->key_id, KS_PACKAGE_KEY_ID_BYTES);
    if (key_id == NULL) return NULL;
    jbyteArray digest = new_bytes(env, info->digest, KS_PACKAGE_DIGEST_BYTES);
    if (digest == NULL) return NULL;
    return (*env)->NewObject(env, g_package_info_class, g_package_info_init, id,
                             (jint)info->version_major, (jint)info->version_minor,
                             (jint)info->version_patch, (jint)info->min_runtime,
                             (jlong)info->issued, key_id, key_name, (jint)info->num_files,
                             (jlong)info->payload_bytes, digest);
}

/* A Java string as UTF-8 for one call; NULL with an exception pending. */
static const char *utf(JNIEnv *env, jstring s) {
    return (*env)->GetStringUTFChars(env, s, NULL);
}

JNIEXPORT jlong JNICALL Java_ai_kestrel_Store_nativeMaxPackageBytes(JNIEnv *env, jclass cls) {
    return (jlong)(32u + KS_PACKAGE_SIGNATURE_BYTES + KS_PACKAGE_MAX_MANIFEST_BYTES +
                   KS_PACKAGE_MAX_PAYLOAD_BYTES);
}

static void jni_store_free(JNIEnv *env, jni_store *s) {
    if (s == NULL) return;
    ks_store_destroy(s->store);
    if (s->key_provider != NULL) (*env)->DeleteGlobalRef(env, s->key_provider);
    if (s->events != NULL) (*env)->DeleteGlobalRef(env, s->events);
    free(s);
}

JNIEXPORT jlong JNICALL Java_ai_kestrel_Store_nativeOpen(JNIEnv *env, jclass cls, jstring jdir,
                                                         jbyteArray jkeys, jobject jprovider,
                                                         jobject jevents) {
    jni_store *s = calloc(1, sizeof(*s));
    jsize n = (*env)->GetArrayLength(env, jkeys);
    uint8_t *keys = malloc(n > 0 ? (size_t)n : 1u);
    if (s == NULL || keys == NULL) {
        free(s);
        free(keys);
        throw_store(env, KS_STATUS_OUT_OF_MEMORY, 0, "Store.open: trusted keys");
        return 0;
    }
    (*env)->GetByteArrayRegion(env, jkeys, 0, n, (jbyte *)keys);
    ks_store_desc desc = {.trusted_keys = keys,
                          .num_trusted_keys = (uint32_t)n / KS_PACKAGE_PUBLIC_KEY_BYTES};
    if ((jprovider != NULL || jevents != NULL) &&
        ((*env)->GetJavaVM(env, &s->vm) != JNI_OK ||
         (jprovider != NULL && (s->key_provider = (*env)->NewGlobalRef(env, jprovider)) == NULL) ||
         (jevents != NULL && (s->events = (*env)->NewGlobalRef(env, jevents)) == NULL))) {
        jni_store_free(env, s);
        free(keys);
        throw_store(env, KS_STATUS_OUT_OF_MEMORY, 0, "Store.open: key provider or listener");
        return 0;
    }
    desc.user = s;
    if (jprovider != NULL) desc.key_provider = jni_store_key;
    if (jevents != NULL) desc.on_event = jni_store_event;
    const char *dir = utf(env, jdir);
    if (dir == NULL) {
        jni_store_free(env, s);
        free(keys);
        return 0;
    }
    ks_status st = ks_store_open(dir, &desc, &s->store);
    (*env)->ReleaseStringUTFChars(env, jdir, dir);
    free(keys); /* public keys, copied by the store */
    if (st != KS_STATUS_OK) {
        throw_store(env, st, 0, ks_last_error(NULL));
        jni_store_free(env, s);
        return 0;
    }
    return KS_JNI_HANDLE(s);
}

JNIEXPORT void JNICALL Java_ai_kestrel_Store_nativeDestroy(JNIEnv *env, jclass cls, jlong h) {
    jni_store_free(env, KS_JNI_PTR(jni_store, h));
}

static jobject installed(JNIEnv *env, ks_store *store, ks_status st, const ks_package_info *info) {
    if (st != KS_STATUS_OK) {
        throw_refusal(env, st, store);
        return NULL;
    }
    /* A KeyProvider's exception (the install then succeeded without its key: a plain self-test)
     * is what the call throws; no JNI call may follow it. */
    if ((*env)->ExceptionCheck(env)) return NULL;
    return package_info(env, info);
}

JNIEXPORT jobject JNICALL Java_ai_kestrel_Store_nativeInstallBytes(JNIEnv *env, jclass cls, jlong h,
                                                                   jbyteArray jpkg, jint flags) {
    jsize n = (*env)->GetArrayLength(env, jpkg);
    /* A copy or the array itself (JVM's choice); not a critical region: the install writes and
     * fsyncs files, which must not hold up the garbage collector. */
    jbyte *bytes = (*env)->GetByteArrayElements(env, jpkg, NULL);
    if (bytes == NULL) return NULL;
    ks_package_info info;
    ks_status st = ks_store_install_buffer(STORE(h), bytes, (size_t)n, (uint32_t)flags, &info);
    (*env)->ReleaseByteArrayElements(env, jpkg, bytes, JNI_ABORT);
    return installed(env, STORE(h), st, &info);
}

JNIEXPORT jobject JNICALL Java_ai_kestrel_Store_nativeInstallBuffer(JNIEnv *env, jclass cls,
                                                                    jlong h, jobject jbuf,
                                                                    jint size, jint flags) {
    void *data = (*env)->GetDirectBufferAddress(env, jbuf);
    jlong cap = (*env)->GetDirectBufferCapacity(env, jbuf);
    if (data == NULL || size < 0 || (jlong)size > cap) {
        throw_store(env, KS_STATUS_INTERNAL, 0, "Store.install: not a direct buffer of that size");
        return NULL;
    }
    ks_package_info info;
    ks_status st = ks_store_install_buffer(STORE(h), data, (size_t)size, (uint32_t)flags, &info);
    return installed(env, STORE(h), st, &info);
}

JNIEXPORT jobject JNICALL Java_ai_kestrel_Store_nativeInstallFile(JNIEnv *env, jclass cls, jlong h,
                                                                  jstring jpath, jint flags) {
    const char *path = utf(env, jpath);
    if (path == NULL) return NULL;
    ks_package_info info;
    ks_status st = ks_store_install_file(STORE(h), path, (uint32_t)flags, &info);
    (*env)->ReleaseStringUTFChars(env, jpath, path);
    return installed(env, STORE(h), st, &info);
}

JNIEXPORT jobject JNICALL Java_ai_kestrel_Store_nativeCurrent(JNIEnv *env, jclass cls, jlong h,
                                                              jstring jid, jboolean previous) {
    const char *id = utf(env, jid);
    if (id == NULL) return NULL;
    ks_package_info info;
    ks_status st = ks_store_current(STORE(h), id, previous ? 1 : 0, &info);
    (*env)->ReleaseStringUTFChars(env, jid, id);
    if (st != KS_STATUS_OK && ks_store_last_refusal(STORE(h)) == KS_DELIVERY_NOT_INSTALLED)
        return NULL; /* none: null, not an exception */
    return installed(env, STORE(h), st, &info);
}

JNIEXPORT jstring JNICALL Java_ai_kestrel_Store_nativeFilePath(JNIEnv *env, jclass cls, jlong h,
                                                               jstring jid, jstring jname) {
    const char *id = utf(env, jid);
    if (id == NULL) return NULL;
    const char *name = utf(env, jname);
    if (name == NULL) {
        (*env)->ReleaseStringUTFChars(env, jid, id);
        return NULL;
    }
    char path[4096];
    ks_status st = ks_store_file_path(STORE(h), id, name, path, sizeof path);
    (*env)->ReleaseStringUTFChars(env, jname, name);
    (*env)->ReleaseStringUTFChars(env, jid, id);
    if (st != KS_STATUS_OK) {
        throw_refusal(env, st, STORE(h));
        return NULL;
    }
    return (*env)->NewStringUTF(env, path);
}

/* The calls that take an id (and, for markBad, a reason) and return only a status. */
enum id_call { CALL_ROLLBACK, CALL_MARK_BAD, CALL_CHECK };

static void id_call(JNIEnv *env, jlong h, jstring jid, jstring jreason, enum id_call which) {
    const char *id = utf(env, jid);
    if (id == NULL) return;
    const char *reason = NULL;
    if (jreason != NULL && (reason = utf(env, jreason)) == NULL) {
        (*env)->ReleaseStringUTFChars(env, jid, id);
        return;
    }
    ks_status st = which == CALL_ROLLBACK   ? ks_store_rollback(STORE(h), id)
                   : which == CALL_MARK_BAD ? ks_store_mark_bad(STORE(h), id, reason)
                                            : ks_store_check(STORE(h), id);
    if (reason != NULL) (*env)->ReleaseStringUTFChars(env, jreason, reason);
    (*env)->ReleaseStringUTFChars(env, jid, id);
    if (st != KS_STATUS_OK) throw_refusal(env, st, STORE(h));
}

JNIEXPORT void JNICALL Java_ai_kestrel_Store_nativeRollback(JNIEnv *env, jclass cls, jlong h,
                                                            jstring jid) {
    id_call(env, h, jid, NULL, CALL_ROLLBACK);
}

JNIEXPORT void JNICALL Java_ai_kestrel_Store_nativeMarkBad(JNIEnv *env, jclass cls, jlong h,
                                                           jstring jid, jstring jreason) {
    id_call(env, h, jid, jreason, CALL_MARK_BAD);
}

JNIEXPORT void JNICALL Java_ai_kestrel_Store_nativeCheck(JNIEnv *env, jclass cls, jlong h,
                                                         jstring jid) {
    id_call(env, h, jid, NULL, CALL_CHECK);
}

JNIEXPORT jstring JNICALL Java_ai_kestrel_Store_nativeLastRollback(JNIEnv *env, jclass cls, jlong h,
                                                                   jstring jid) {
    const char *id = utf(env, jid);
    if (id == NULL) return NULL;
    char reason[1024];
    ks_status st = ks_store_last_rollback(STORE(h), id, reason, sizeof reason);
    (*env)->ReleaseStringUTFChars(env, jid, id);
    if (st != KS_STATUS_OK) {
        throw_refusal(env, st, STORE(h));
        return NULL;
    }
    return (*env)->NewStringUTF(env, reason);
}

#else /* !KS_JNI_HAVE_DELIVERY */

static void unsupported(JNIEnv *env) {
    throw_store(env, KS_STATUS_UNSUPPORTED, 0,
                "Store: this build has no delivery module (KS_WITH_SODIUM=OFF)");
}

JNIEXPORT jlong JNICALL Java_ai_kestrel_Store_nativeMaxPackageBytes(JNIEnv *env, jclass cls) {
    return 0;
}
JNIEXPORT jlong JNICALL Java_ai_kestrel_Store_nativeOpen(JNIEnv *env, jclass cls, jstring jdir,
                                                         jbyteArray jkeys, jobject jprovider,
                                                         jobject jevents) {
    unsupported(env);
    return 0;
}
JNIEXPORT void JNICALL Java_ai_kestrel_Store_nativeDestroy(JNIEnv *env, jclass cls, jlong h) {}
JNIEXPORT jobject JNICALL Java_ai_kestrel_Store_nativeInstallBytes(JNIEnv *env, jclass cls, jlong h,
                                                                   jbyteArray jpkg, jint flags) {
    unsupported(env);
    return NULL;
}
JNIEXPORT jobject JNICALL Java_ai_kestrel_Store_nativeInstallBuffer(JNIEnv *env, jclass cls,
                                                                    jlong h, jobject jbuf,
                                                                    jint size, jint flags) {
    unsupported(env);
    return NULL;
}
JNIEXPORT jobject JNICALL Java_ai_kestrel_Store_nativeInstallFile(JNIEnv *env, jclass cls, jlong h,
                                                                  jstring jpath, jint flags) {
    unsupported(env);
    return NULL;
}
JNIEXPORT jobject JNICALL Java_ai_kestrel_Store_nativeCurrent(JNIEnv *env, jclass cls, jlong h,
                                                              jstring jid, jboolean previous) {
    unsupported(env);
    return NULL;
}
JNIEXPORT jstring JNICALL Java_ai_kestrel_Store_nativeFilePath(JNIEnv *env, jclass cls, jlong h,
                                                               jstring jid, jstring jname) {
    unsupported(env);
    return NULL;
}
JNIEXPORT void JNICALL Java_ai_kestrel_Store_nativeRollback(JNIEnv *env, jclass cls, jlong h,
                                                            jstring jid) {
    unsupported(env);
}
JNIEXPORT void JNICALL Java_ai_kestrel_Store_nativeMarkBad(JNIEnv *env, jclass cls, jlong h,
                                                           jstring jid, jstring jreason) {
    unsupported(env);
}
JNIEXPORT void JNICALL Java_ai_kestrel_Store_nativeCheck(JNIEnv *env, jclass cls, jlong h,
                                                         jstring jid) {
    unsupported(env);
}
JNIEXPORT jstring JNICALL Java_ai_kestrel_Store_nativeLastRollback(JNIEnv *env, jclass cls, jlong h,
                                                                   jstring jid) {
    unsupported(env);
    return NULL;
}

#endif
