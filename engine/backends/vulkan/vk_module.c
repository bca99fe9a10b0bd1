/* The entry of libkestrel_vulkan.so (vk_host.h): the only symbol the module exports. Built into
 * the module only (engine/CMakeLists.txt, KS_VULKAN_MODULE). */
#include <string.h>

#include "vk_backend.h"
#include "vk_host.h"

const ks__vk_host *ks__vk_host_fns;

__attribute__((visibility("default"))) const ks__backend *
ks_vulkan_module_entry(const ks__vk_host *host, size_t host_size, const char *token);

const ks__backend *ks_vulkan_module_entry(const ks__vk_host *host, size_t host_size,
                                          const char *token) {
    if (!host || host_size != sizeof(ks__vk_host) || !token || strcmp(token, KS_VK_MODULE_TOKEN))
        return NULL;
    ks__vk_host_fns = host;
    return ks__vulkan_backend();
}
