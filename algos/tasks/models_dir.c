/* Default models directory for the task APIs (ks_set_models_dir / ks_models_dir). */
#include <stdlib.h>
#include <string.h>

#include "kestrel/vision.h"

#ifndef KS_DEFAULT_MODELS_DIR
#define KS_DEFAULT_MODELS_DIR "bundles"
#endif

#define MODELS_DIR_CAP 4096

/* Set once at startup by the app (documented "call before creating tasks"), so a plain static
 * buffer is enough; tasks only read it. */
static char g_models_dir[MODELS_DIR_CAP];
static int g_models_dir_set;

ks_status ks_set_models_dir(const char *dir) {
    if (!dir) {
        g_models_dir_set = 0;
        g_models_dir[0] = '\0';
        return KS_STATUS_OK;
    }
    size_t n = strlen(dir);
    if (n == 0 || n >= MODELS_DIR_CAP) return KS_STATUS_INVALID_ARGUMENT;
    memcpy(g_models_dir, dir, n + 1);
    g_models_dir_set = 1;
    return KS_STATUS_OK;
}

const char *ks_models_dir(void) {
    const char *env = getenv("KESTREL_MODELS_DIR");
    if (env && env[0]) return env;
    if (g_models_dir_set) return g_models_dir;
    return KS_DEFAULT_MODELS_DIR;
}
