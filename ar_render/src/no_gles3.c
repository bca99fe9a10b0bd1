/* A build without the OpenGL ES 3 backend (KS_AR_GLES=OFF, or no GLES 3 headers and library):
 * only the null backend exists, and ks_ar_renderer_create refuses KS_AR_BACKEND_GLES3 with
 * KS_STATUS_UNSUPPORTED. The GLES 3 build links gles3/backend.c instead of this file. */
#include "ar_internal.h"

const ks__ar_backend *ks__ar_gles3_backend(void) {
    return NULL;
}
