/* Test-only JNI library (never shipped): a headless OpenGL ES 3.0 context (surfaceless EGL, see
 * ar_render/tools/egl_headless.h) for the GLES3 tests of ai.kestrel.EffectTest, plus the GL
 * calls those tests need to make an input texture and read an output texture back. A real app
 * owns its context (GLSurfaceView on Android); the binding itself never creates one. */
#include <GLES3/gl3.h>
#include <jni.h>
#include <stdint.h>
#include <string.h>

#include "egl_headless.h"

/* No javac -h for test classes: declared here so -Wmissing-prototypes stays on. */
JNIEXPORT jlong JNICALL Java_ai_kestrel_EffectTest_nativeEglCreate(JNIEnv *env, jclass cls,
                                                                   jobjectArray err_out);
JNIEXPORT void JNICALL Java_ai_kestrel_EffectTest_nativeEglDestroy(JNIEnv *env, jclass cls,
                                                                   jlong h);
JNIEXPORT jint JNICALL Java_ai_kestrel_EffectTest_nativeTexture(JNIEnv *env, jclass cls,
                                                                jbyteArray rgba, jint width,
                                                                jint height);
JNIEXPORT void JNICALL Java_ai_kestrel_EffectTest_nativeReadTexture(JNIEnv *env, jclass cls,
                                                                    jint texture, jint width,
                                                                    jint height, jbyteArray rgba);
JNIEXPORT void JNICALL Java_ai_kestrel_EffectTest_nativeDeleteTexture(JNIEnv *env, jclass cls,
                                                                      jint texture);

/* Returns the context (current on this thread) or 0 with the reason in err_out[0]. */
JNIEXPORT jlong JNICALL Java_ai_kestrel_EffectTest_nativeEglCreate(JNIEnv *env, jclass cls,
                                                                   jobjectArray err_out) {
    ks_ar_egl *egl = NULL;
    char err[256] = "";
    if (ks_ar_egl_create(&egl, err, sizeof err) != KS_STATUS_OK) {
        jstring s = (*env)->NewStringUTF(env, err);
        if (s != NULL) (*env)->SetObjectArrayElement(env, err_out, 0, s);
        return 0;
    }
    return (jlong)(intptr_t)egl;
}

JNIEXPORT void JNICALL Java_ai_kestrel_EffectTest_nativeEglDestroy(JNIEnv *env, jclass cls,
                                                                   jlong h) {
    ks_ar_egl_destroy((ks_ar_egl *)(intptr_t)h);
}

JNIEXPORT jint JNICALL Java_ai_kestrel_EffectTest_nativeTexture(JNIEnv *env, jclass cls,
                                                                jbyteArray rgba, jint width,
                                                                jint height) {
    jbyte *px = NULL;
    if (rgba != NULL) {
        px = (*env)->GetByteArrayElements(env, rgba, NULL);
        if (px == NULL) return 0;
    }
    GLuint tex = 0;
    glGenTextures(1, &tex);
    glBindTexture(GL_TEXTURE_2D, tex);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE, px);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
    glBindTexture(GL_TEXTURE_2D, 0);
    if (px != NULL) (*env)->ReleaseByteArrayElements(env, rgba, px, JNI_ABORT);
    return glGetError() == GL_NO_ERROR ? (jint)tex : 0;
}

JNIEXPORT void JNICALL Java_ai_kestrel_EffectTest_nativeReadTexture(JNIEnv *env, jclass cls,
                                                                    jint texture, jint width,
                                                                    jint height, jbyteArray rgba) {
    jbyte *px = (*env)->GetByteArrayElements(env, rgba, NULL);
    if (px == NULL) return;
    GLuint fbo = 0;
    glGenFramebuffers(1, &fbo);
    glBindFramebuffer(GL_FRAMEBUFFER, fbo);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, (GLuint)texture, 0);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, px);
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    glDeleteFramebuffers(1, &fbo);
    (*env)->ReleaseByteArrayElements(env, rgba, px, 0);
}

JNIEXPORT void JNICALL Java_ai_kestrel_EffectTest_nativeDeleteTexture(JNIEnv *env, jclass cls,
                                                                      jint texture) {
    GLuint tex = (GLuint)texture;
    glDeleteTextures(1, &tex);
}
