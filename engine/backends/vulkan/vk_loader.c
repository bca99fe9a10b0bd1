/* Run-time loading of the Vulkan loader library (vk_loader.h).
 *
 * The library is opened once per process and never closed. Why: lavapipe and other drivers keep
 * worker threads and atexit handlers whose code lives in libraries the loader opened; closing it
 * while a second session may open it again (or while a leak report symbolizes the driver's
 * frames) buys nothing and has bitten other projects. The outcome of the one attempt, success
 * or the dlerror() text, is kept for every later caller. */
#include "vk_loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/once.h"
#include "vk_host_redirect.h" /* last: the module calls the core through a table */

static ks__once_flag g_once = KS__ONCE_INIT;
static PFN_vkGetInstanceProcAddr g_gipa;
static char g_why[256];

static void open_library(void) {
#if defined(__APPLE__)
    static const char *const names[] = {"libvulkan.1.dylib", "libMoltenVK.dylib"};
#else
    static const char *const names[] = {"libvulkan.so.1", "libvulkan.so"};
#endif
    size_t used = 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            const char *e = dlerror();
            int n = snprintf(g_why + used, sizeof(g_why) - used, "%s%s", used ? "; " : "",
                             e ? e : names[i]);
            used = n > 0 && (size_t)n < sizeof(g_why) - used ? used + (size_t)n : sizeof(g_why) - 1;
            continue;
        }
        void *sym = dlsym(lib, "vkGetInstanceProcAddr");
        if (!sym) {
            ks__fmt(g_why, sizeof(g_why), "%s has no vkGetInstanceProcAddr", names[i]);
            dlclose(lib);
            return;
        }
        /* object pointer to function pointer: memcpy, as POSIX dlsym users must */
        memcpy(&g_gipa, &sym, sizeof(g_gipa));
        return;
    }
}

ks_status ks__vk_load_global(ks__vk_fns *fns, char *err, size_t err_cap) {
    memset(fns, 0, sizeof(*fns));
    ks__once(&g_once, open_library);
    if (!g_gipa)
        return ks__fail(err, err_cap, KS_STATUS_UNSUPPORTED, "Vulkan: no loader (%s)",
                        g_why[0] ? g_why : "unknown reason");
    fns->vkGetInstanceProcAddr = g_gipa;
    fns->vkCreateInstance = (PFN_vkCreateInstance)g_gipa(NULL, "vkCreateInstance");
    fns->vkEnumerateInstanceExtensionProperties =
        (PFN_vkEnumerateInstanceExtensionProperties)g_gipa(
            NULL, "vkEnumerateInstanceExtensionProperties");
    fns->vkEnumerateInstanceVersion =
        (PFN_vkEnumerateInstanceVersion)g_gipa(NULL, "vkEnumerateInstanceVersion");
    if (!fns->vkCreateInstance || !fns->vkEnumerateInstanceExtensionProperties)
        return ks__fail(err, err_cap, KS_STATUS_UNSUPPORTED,
                        "Vulkan: the loader lacks vkCreateInstance");
    return KS_STATUS_OK;
}

ks_status ks__vk_load_instance(ks__vk_fns *fns, VkInstance instance, char *err, size_t err_cap) {
#define KS__VK_LOAD(f)                                                                             \
    fns->f = (PFN_##f)fns->vkGetInstanceProcAddr(instance, #f);                                    \
    if (!fns->f)                                                                                   \
        return ks__fail(err, err_cap, KS_STATUS_UNSUPPORTED, "Vulkan: the instance lacks %s", #f);
    KS__VK_INSTANCE_FNS(KS__VK_LOAD)
#undef KS__VK_LOAD
    return KS_STATUS_OK;
}

ks_status ks__vk_load_device(ks__vk_fns *fns, VkDevice device, char *err, size_t err_cap) {
#define KS__VK_LOAD(f)                                                                             \
    fns->f = (PFN_##f)fns->vkGetDeviceProcAddr(device, #f);                                        \
    if (!fns->f)                                                                                   \
        return ks__fail(err, err_cap, KS_STATUS_UNSUPPORTED, "Vulkan: the device lacks %s", #f);
    KS__VK_DEVICE_FNS(KS__VK_LOAD)
#undef KS__VK_LOAD
    return KS_STATUS_OK;
}

const char *ks__vk_result_string(VkResult r) {
    switch (r) {
#define KS__VK_CASE(v)                                                                             \
    case v:                                                                                        \
        return #v;
        KS__VK_CASE(VK_SUCCESS)
        KS__VK_CASE(VK_NOT_READY)
        KS__VK_CASE(VK_TIMEOUT)
        KS__VK_CASE(VK_INCOMPLETE)
        KS__VK_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
        KS__VK_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        KS__VK_CASE(VK_ERROR_INITIALIZATION_FAILED)
        KS__VK_CASE(VK_ERROR_DEVICE_LOST)
        KS__VK_CASE(VK_ERROR_MEMORY_MAP_FAILED)
        KS__VK_CASE(VK_ERROR_LAYER_NOT_PRESENT)
        KS__VK_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
        KS__VK_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
        KS__VK_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
        KS__VK_CASE(VK_ERROR_TOO_MANY_OBJECTS)
        KS__VK_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
        KS__VK_CASE(VK_ERROR_FRAGMENTED_POOL)
        KS__VK_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
        KS__VK_CASE(VK_ERROR_INVALID_SHADER_NV)
#undef KS__VK_CASE
    default: {
        static _Thread_local char buf[32];
        snprintf(buf, sizeof(buf), "VkResult %d", (int)r);
        return buf;
    }
    }
}

ks_status ks__vk_status(VkResult r) {
    switch (r) {
    case VK_SUCCESS:
        return KS_STATUS_OK;
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_FRAGMENTED_POOL:
    case VK_ERROR_TOO_MANY_OBJECTS:
        return KS_STATUS_OUT_OF_MEMORY;
    case VK_ERROR_INITIALIZATION_FAILED:
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_FORMAT_NOT_SUPPORTED:
        return KS_STATUS_UNSUPPORTED;
    default:
        return KS_STATUS_INTERNAL;
    }
}
