/* Headless EGL context (see egl_headless.h). */
#include "egl_headless.h"

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES3/gl3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ks_ar_egl {
    EGLDisplay display;
    EGLContext context;
    EGLSurface surface;
    char description[256];
};

#ifndef EGL_PLATFORM_SURFACELESS_MESA
#define EGL_PLATFORM_SURFACELESS_MESA 0x31DD
#endif

static EGLDisplay open_display(void) {
    /* Surfaceless first: works with no X/Wayland and no DRM render node (llvmpipe). */
    PFNEGLGETPLATFORMDISPLAYEXTPROC get_platform_display =
        (PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
    const char *exts = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
    if (get_platform_display && exts && strstr(exts, "EGL_MESA_platform_surfaceless")) {
        EGLDisplay d =
            get_platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, NULL);
        if (d != EGL_NO_DISPLAY) return d;
    }
    return eglGetDisplay(EGL_DEFAULT_DISPLAY);
}

ks_status ks_ar_egl_create(ks_ar_egl **out, char *err, size_t err_cap) {
    ks_ar_egl *egl = calloc(1, sizeof(*egl));
    if (!egl) {
        snprintf(err, err_cap, "egl: out of memory");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    ks_status status = KS_STATUS_UNSUPPORTED;
    egl->display = open_display();
    EGLint major = 0, minor = 0;
    if (egl->display == EGL_NO_DISPLAY || !eglInitialize(egl->display, &major, &minor)) {
        snprintf(err, err_cap, "egl: no display could be initialized (EGL error 0x%x)",
                 (unsigned)eglGetError());
        egl->display = EGL_NO_DISPLAY;
        goto error;
    }
    if (!eglBindAPI(EGL_OPENGL_ES_API)) {
        snprintf(err, err_cap, "egl: OpenGL ES API unavailable (EGL error 0x%x)",
                 (unsigned)eglGetError());
        goto error;
    }
    const EGLint config_attribs[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_ES3_BIT, EGL_SURFACE_TYPE,
                                     EGL_PBUFFER_BIT, EGL_NONE};
    EGLConfig config = NULL;
    EGLint num_configs = 0;
    const char *dexts = eglQueryString(egl->display, EGL_EXTENSIONS);
    bool surfaceless = dexts && strstr(dexts, "EGL_KHR_surfaceless_context");
    if (!eglChooseConfig(egl->display, config_attribs, &config, 1, &num_configs) ||
        num_configs < 1) {
        /* Surfaceless displays may have configs without pbuffer support. */
        const EGLint any_es3[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_ES3_BIT, EGL_NONE};
        if (!eglChooseConfig(egl->display, any_es3, &config, 1, &num_configs) || num_configs < 1) {
            snprintf(err, err_cap, "egl: no OpenGL ES 3 config");
            goto error;
        }
    }
    const EGLint ctx_attribs[] = {EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, 0,
                                  EGL_NONE};
    egl->context = eglCreateContext(egl->display, config, EGL_NO_CONTEXT, ctx_attribs);
    if (egl->context == EGL_NO_CONTEXT) {
        snprintf(err, err_cap, "egl: cannot create an OpenGL ES 3.0 context (EGL error 0x%x)",
                 (unsigned)eglGetError());
        goto error;
    }
    egl->surface = EGL_NO_SURFACE;
    if (!surfaceless) {
        const EGLint pb[] = {EGL_WIDTH, 1, EGL_HEIGHT, 1, EGL_NONE};
        egl->surface = eglCreatePbufferSurface(egl->display, config, pb);
    }
    if (!eglMakeCurrent(egl->display, egl->surface, egl->surface, egl->context)) {
        snprintf(err, err_cap, "egl: eglMakeCurrent failed (EGL error 0x%x)",
                 (unsigned)eglGetError());
        goto error;
    }
    const char *renderer = (const char *)glGetString(GL_RENDERER);
    const char *version = (const char *)glGetString(GL_VERSION);
    snprintf(egl->description, sizeof(egl->description), "%s / %s", renderer ? renderer : "?",
             version ? version : "?");
    *out = egl;
    return KS_STATUS_OK;
error:
    ks_ar_egl_destroy(egl);
    return status;
}

void ks_ar_egl_destroy(ks_ar_egl *egl) {
    if (!egl) return;
    if (egl->display != EGL_NO_DISPLAY) {
        eglMakeCurrent(egl->display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
        if (egl->context != EGL_NO_CONTEXT) eglDestroyContext(egl->display, egl->context);
        if (egl->surface != EGL_NO_SURFACE) eglDestroySurface(egl->display, egl->surface);
        eglTerminate(egl->display);
    }
    free(egl);
}

const char *ks_ar_egl_describe(ks_ar_egl *egl) {
    return egl ? egl->description : "";
}

ks_status ks_ar_egl_fbo_create(int32_t width_px, int32_t height_px, ks_ar_egl_fbo *out, char *err,
                               size_t err_cap) {
    if (width_px <= 0 || height_px <= 0 || !out) {
        snprintf(err, err_cap, "egl fbo: bad size %dx%d", (int)width_px, (int)height_px);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    memset(out, 0, sizeof(*out));
    GLuint tex = 0, fbo = 0;
    glGenTextures(1, &tex);
    glBindTexture(GL_TEXTURE_2D, tex);
    glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, width_px, height_px);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
    glGenFramebuffers(1, &fbo);
    glBindFramebuffer(GL_FRAMEBUFFER, fbo);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, tex, 0);
    GLenum fb_status = glCheckFramebufferStatus(GL_FRAMEBUFFER);
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    out->texture = tex;
    out->framebuffer = fbo;
    out->width_px = width_px;
    out->height_px = height_px;
    if (fb_status != GL_FRAMEBUFFER_COMPLETE || glGetError() != GL_NO_ERROR) {
        snprintf(err, err_cap, "egl fbo: framebuffer incomplete (0x%x)", (unsigned)fb_status);
        ks_ar_egl_fbo_destroy(out);
        return KS_STATUS_INTERNAL;
    }
    return KS_STATUS_OK;
}

void ks_ar_egl_fbo_destroy(ks_ar_egl_fbo *fbo) {
    if (!fbo) return;
    GLuint tex = fbo->texture, fb = fbo->framebuffer;
    if (fb) glDeleteFramebuffers(1, &fb);
    if (tex) glDeleteTextures(1, &tex);
    memset(fbo, 0, sizeof(*fbo));
}
