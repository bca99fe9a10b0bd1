/* Headless OpenGL ES 3.0 context for tools and tests (desktop only; never part of kestrel_ar,
 * whose users own their context). Uses EGL's surfaceless platform (Mesa: llvmpipe without a
 * display), falling back to the default display with a 1x1 pbuffer.
 *
 * Usage:
 *     ks_ar_egl *egl = NULL;
 *     char err[256];
 *     if (ks_ar_egl_create(&egl, err, sizeof(err)) != KS_STATUS_OK) { skip(err); }
 *     ...ks_ar_renderer_create / ks_ar_render (the context is current on this thread)...
 *     ks_ar_egl_destroy(egl);
 *
 * Thread safety: the context is made current on the creating thread; use it there only.
 */
#ifndef KESTREL_AR_EGL_HEADLESS_H
#define KESTREL_AR_EGL_HEADLESS_H

#include <stddef.h>
#include <stdint.h>

#include "kestrel/kestrel.h"

typedef struct ks_ar_egl ks_ar_egl;

/* Creates an EGL display + OpenGL ES 3.0 context and makes it current. KS_STATUS_UNSUPPORTED
 * when EGL or GLES 3 is not available (message in err). */
ks_status ks_ar_egl_create(ks_ar_egl **out, char *err, size_t err_cap);
/* Releases the context. NULL is a no-op. */
void ks_ar_egl_destroy(ks_ar_egl *egl);
/* "Mesa llvmpipe ... / OpenGL ES 3.2 Mesa ..." (GL_RENDERER / GL_VERSION), static storage. */
const char *ks_ar_egl_describe(ks_ar_egl *egl);

/* An offscreen RGBA8 colour texture attached to a framebuffer, for rendering into when the
 * caller wants its own target (ks_ar_output.texture / framebuffer). */
typedef struct ks_ar_egl_fbo {
    uint32_t texture, framebuffer;
    int32_t width_px, height_px;
} ks_ar_egl_fbo;
ks_status ks_ar_egl_fbo_create(int32_t width_px, int32_t height_px, ks_ar_egl_fbo *out, char *err,
                               size_t err_cap);
void ks_ar_egl_fbo_destroy(ks_ar_egl_fbo *fbo);

#endif /* KESTREL_AR_EGL_HEADLESS_H */
