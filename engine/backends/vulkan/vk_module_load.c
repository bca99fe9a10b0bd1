/* ks__vulkan_backend_get in the shared library built with KS_VULKAN_MODULE (vk_host.h): the
 * Vulkan backend lives in libkestrel_vulkan.so, opened the first time a session asks for Vulkan
 * (KS_BACKEND_VULKAN, or AUTO) and kept for the process. Where: $KS_VULKAN_MODULE (a path) if
 * set, else the directory of the library this code is in (dladdr), else the bare name for the
 * dynamic loader's search (an Android app's native library folder). An app that never asks for
 * Vulkan never opens it, and one that ships without it gets KS_STATUS_UNSUPPORTED with the
 * loader's reason; AUTO then runs on the CPU. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_host.h"

#define MODULE_NAME "libkestrel_vulkan.so"

static const ks__vk_host k_host = {
#define KS__VK_HOST_INIT(f) .f = f,
    KS__VK_HOST_FUNCS(KS__VK_HOST_INIT)
#undef KS__VK_HOST_INIT
};

static ks__once_flag g_once = PTHREAD_ONCE_INIT;
static const ks__backend *g_backend;
static char g_why[512];

/* dir of the shared object holding this function + MODULE_NAME, or "" */
static void beside_self(char *out, size_t cap) {
    Dl_info info;
    out[0] = '\0';
    if (!dladdr((void *)&ks__vulkan_backend_get, &info) || !info.dli_fname) return;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash) return;
    int n =
        snprintf(out, cap, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname, MODULE_NAME);
    if (n < 0 || (size_t)n >= cap) out[0] = '\0';
}

static void load(void) {
    char path[1024];
    const char *env = getenv("KS_VULKAN_MODULE");
    void *h = NULL;
    char tried[sizeof(g_why)] = "";
    if (env && *env) {
        h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (!h) ks__fmt(tried, sizeof(tried), "%s", dlerror());
    } else {
        beside_self(path, sizeof(path));
        if (path[0]) {
            h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (!h) ks__fmt(tried, sizeof(tried), "%s", dlerror());
        }
        if (!h) {
            h = dlopen(MODULE_NAME, RTLD_NOW | RTLD_LOCAL);
            if (!h && !tried[0]) ks__fmt(tried, sizeof(tried), "%s", dlerror());
        }
    }
    if (!h) {
        ks__fmt(g_why, sizeof(g_why),
                "backend 'vulkan': the Vulkan module %s could not be opened (%s); it ships "
                "beside libkestrel.so (KS_VULKAN_MODULE names another path)",
                env && *env ? env : MODULE_NAME, tried);
        return;
    }
    ks__vk_module_entry_fn entry;
    void *sym = dlsym(h, KS__VK_MODULE_ENTRY);
    memcpy(&entry, &sym, sizeof(entry)); /* object to function pointer, as POSIX allows */
    const ks__backend *b = entry ? entry(&k_host, sizeof(k_host), KS_VK_MODULE_TOKEN) : NULL;
    if (!b) {
        ks__fmt(g_why, sizeof(g_why),
                "backend 'vulkan': %s is not the Vulkan module of this libkestrel build (%s); "
                "install the two from the same build",
                env && *env ? env : MODULE_NAME,
                entry ? "it refused the core's table" : "no " KS__VK_MODULE_ENTRY);
        dlclose(h);
        return;
    }
    g_backend = b; /* the module stays open for the process: sessions hold its functions */
}

const ks__backend *ks__vulkan_backend_get(char *err, size_t err_cap) {
    ks__once(&g_once, load);
    if (!g_backend) ks__fmt(err, err_cap, "%s", g_why);
    return g_backend;
}
