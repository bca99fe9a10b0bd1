/* ai.kestrel.Image -> ks_image for the length of one call.
 *
 * Plane kinds (Image.KIND_*): a byte[] is copied by the JVM (GetByteArrayElements; a heap array
 * cannot be pinned for a whole inference without stalling the GC), a direct ByteBuffer is used
 * in place by address (no copy). On Android (__ANDROID__ only) an android.graphics.Bitmap is
 * locked with jnigraphics and an android.hardware.HardwareBuffer with AHardwareBuffer_lock for
 * the call, both without copies. Sizes were checked by Image against the buffers' capacities.
 */
#include <string.h>

#include "kestrel_jni.h"

#if defined(__ANDROID__)
#include <android/bitmap.h>
#include <android/hardware_buffer_jni.h>
#endif

enum {
    KIND_NONE = 0,
    KIND_ARRAY = 1,
    KIND_DIRECT = 2,
    KIND_ANDROID_BITMAP = 3,
    KIND_ANDROID_HARDWARE_BUFFER = 4,
};

static jfieldID g_format, g_width, g_height, g_yuv_range, g_planes, g_kinds, g_offsets, g_strides;

int ks__jni_image_init(JNIEnv *env) {
    jclass cls = (*env)->FindClass(env, "ai/kestrel/Image");
    if (cls == NULL) return 1;
    g_format = (*env)->GetFieldID(env, cls, "formatCode", "I");
    g_width = (*env)->GetFieldID(env, cls, "width", "I");
    g_height = (*env)->GetFieldID(env, cls, "height", "I");
    g_yuv_range = (*env)->GetFieldID(env, cls, "yuvRange", "I");
    g_planes = (*env)->GetFieldID(env, cls, "planes", "[Ljava/lang/Object;");
    g_kinds = (*env)->GetFieldID(env, cls, "kinds", "[I");
    g_offsets = (*env)->GetFieldID(env, cls, "offsets", "[I");
    g_strides = (*env)->GetFieldID(env, cls, "strides", "[I");
    (*env)->DeleteLocalRef(env, cls);
    return !(g_format && g_width && g_height && g_yuv_range && g_planes && g_kinds && g_offsets &&
             g_strides);
}

#if defined(__ANDROID__)
/* Locks an RGBA_8888 Bitmap; the Java side made the Image with the bitmap's size and stride. */
static const uint8_t *lock_bitmap(JNIEnv *env, jobject bitmap, ks__jni_image *img, int i) {
    AndroidBitmapInfo info;
    void *pixels = NULL;
    if (AndroidBitmap_getInfo(env, bitmap, &info) != ANDROID_BITMAP_RESULT_SUCCESS) {
        ks__jni_throw(env, KS_STATUS_INVALID_ARGUMENT, "AndroidBitmap_getInfo failed");
        return NULL;
    }
    if (info.format != ANDROID_BITMAP_FORMAT_RGBA_8888 ||
        (int32_t)info.width != img->image.width_px ||
        (int32_t)info.height != img->image.height_px) {
        ks__jni_throwf(env, KS_STATUS_INVALID_ARGUMENT,
                       "Bitmap must be ARGB_8888 of %dx%d, got format %d %ux%u",
                       (int)img->image.width_px, (int)img->image.height_px, (int)info.format,
                       info.width, info.height);
        return NULL;
    }
    if (AndroidBitmap_lockPixels(env, bitmap, &pixels) != ANDROID_BITMAP_RESULT_SUCCESS) {
        ks__jni_throw(env, KS_STATUS_INVALID_ARGUMENT, "AndroidBitmap_lockPixels failed");
        return NULL;
    }
    img->locked[i] = pixels;
    img->image.stride_bytes[i] = (int32_t)info.stride;
    return pixels;
}

/* Locks an RGBA8888 HardwareBuffer for CPU reads (API 26). */
static const uint8_t *lock_hardware_buffer(JNIEnv *env, jobject hb, ks__jni_image *img, int i) {
    AHardwareBuffer *buffer = AHardwareBuffer_fromHardwareBuffer(env, hb);
    AHardwareBuffer_Desc desc;
    void *pixels = NULL;
    if (buffer == NULL) {
        ks__jni_throw(env, KS_STATUS_INVALID_ARGUMENT, "not a HardwareBuffer");
        return NULL;
    }
    AHardwareBuffer_describe(buffer, &desc);
    if (desc.format != AHARDWAREBUFFER_FORMAT_R8G8B8A8_UNORM &&
        desc.format != AHARDWAREBUFFER_FORMAT_R8G8B8X8_UNORM) {
        ks__jni_throwf(env, KS_STATUS_UNSUPPORTED, "HardwareBuffer format %u is not RGBA8888",
                       desc.format);
        return NULL;
    }
    if ((int32_t)desc.width != img->image.width_px ||
        (int32_t)desc.height != img->image.height_px) {
        ks__jni_throwf(env, KS_STATUS_INVALID_ARGUMENT,
                       "HardwareBuffer is %ux%u, the Image says %dx%d", desc.width, desc.height,
                       (int)img->image.width_px, (int)img->image.height_px);
        return NULL;
    }
    if (AHardwareBuffer_lock(buffer, AHARDWAREBUFFER_USAGE_CPU_READ_OFTEN, -1, NULL, &pixels) !=
        0) {
        ks__jni_throw(env, KS_STATUS_IO_ERROR, "AHardwareBuffer_lock failed");
        return NULL;
    }
    img->locked[i] = buffer;
    img->image.stride_bytes[i] = (int32_t)(desc.stride * 4u);
    return pixels;
}
#endif

int ks__jni_image_acquire(JNIEnv *env, jobject jimage, ks__jni_image *img) {
    jint kinds[3] = {0}, offsets[3] = {0}, strides[3] = {0};
    memset(img, 0, sizeof *img);
    img->image.format = (ks_pixel_format)(*env)->GetIntField(env, jimage, g_format);
    img->image.width_px = (*env)->GetIntField(env, jimage, g_width);
    img->image.height_px = (*env)->GetIntField(env, jimage, g_height);
    img->image.yuv_range = (ks_yuv_range)(*env)->GetIntField(env, jimage, g_yuv_range);
    jobjectArray planes = (jobjectArray)(*env)->GetObjectField(env, jimage, g_planes);
    jintArray jkinds = (jintArray)(*env)->GetObjectField(env, jimage, g_kinds);
    jintArray joffsets = (jintArray)(*env)->GetObjectField(env, jimage, g_offsets);
    jintArray jstrides = (jintArray)(*env)->GetObjectField(env, jimage, g_strides);
    jsize num_planes = (*env)->GetArrayLength(env, planes);
    if (num_planes < 1 || num_planes > 3) {
        ks__jni_throw(env, KS_STATUS_INTERNAL, "Image has no planes");
        return 1;
    }
    (*env)->GetIntArrayRegion(env, jkinds, 0, num_planes, kinds);
    (*env)->GetIntArrayRegion(env, joffsets, 0, num_planes, offsets);
    (*env)->GetIntArrayRegion(env, jstrides, 0, num_planes, strides);

    for (jsize i = 0; i < num_planes; i++) {
        jobject plane = (*env)->GetObjectArrayElement(env, planes, i);
        const uint8_t *base = NULL;
        img->planes[i] = plane;
        img->kinds[i] = kinds[i];
        img->image.stride_bytes[i] = strides[i];
        switch (kinds[i]) {
        case KIND_ARRAY:
            /* NV21 from one byte[]: both planes name the same array; copy it once. */
            for (jsize j = 0; j < i && base == NULL; j++)
                if (img->elements[j] != NULL && (*env)->IsSameObject(env, plane, img->planes[j]))
                    base = (const uint8_t *)img->elements[j];
            if (base == NULL) {
                img->elements[i] = (*env)->GetByteArrayElements(env, (jbyteArray)plane, NULL);
                base = (const uint8_t *)img->elements[i];
            }
            break;
        case KIND_DIRECT:
            base = (const uint8_t *)(*env)->GetDirectBufferAddress(env, plane);
            if (base == NULL)
                ks__jni_throw(env, KS_STATUS_INVALID_ARGUMENT,
                              "ByteBuffer has no native address (not direct)");
            break;
#if defined(__ANDROID__)
        case KIND_ANDROID_BITMAP:
            base = lock_bitmap(env, plane, img, (int)i);
            break;
        case KIND_ANDROID_HARDWARE_BUFFER:
            base = lock_hardware_buffer(env, plane, img, (int)i);
            break;
#endif
        default:
            ks__jni_throwf(env, KS_STATUS_UNSUPPORTED,
                           "image plane kind %d is not supported on this platform", (int)kinds[i]);
            break;
        }
        if (base == NULL) {
            ks__jni_image_release(env, img);
            if (!(*env)->ExceptionCheck(env))
                ks__jni_throw(env, KS_STATUS_OUT_OF_MEMORY, "cannot access image pixels");
            return 1;
        }
        img->image.planes[i] = base + offsets[i];
    }
    return 0;
}

void ks__jni_image_release(JNIEnv *env, ks__jni_image *img) {
    for (int i = 0; i < 3; i++) {
        if (img->planes[i] == NULL) continue;
        if (img->elements[i] != NULL)
            (*env)->ReleaseByteArrayElements(env, (jbyteArray)img->planes[i], img->elements[i],
                                             JNI_ABORT);
#if defined(__ANDROID__)
        if (img->locked[i] != NULL && img->kinds[i] == KIND_ANDROID_BITMAP)
            AndroidBitmap_unlockPixels(env, img->planes[i]);
        if (img->locked[i] != NULL && img->kinds[i] == KIND_ANDROID_HARDWARE_BUFFER)
            AHardwareBuffer_unlock((AHardwareBuffer *)img->locked[i], NULL);
#endif
        (*env)->DeleteLocalRef(env, img->planes[i]);
        img->planes[i] = NULL;
        img->elements[i] = NULL;
        img->locked[i] = NULL;
    }
}
