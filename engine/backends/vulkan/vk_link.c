/* ks__vulkan_backend_get where the backend is linked in (the static library, and the shared one
 * without KS_VULKAN_MODULE): vk_host.h. */
#include "vk_backend.h"
#include "vk_host.h"

const ks__backend *ks__vulkan_backend_get(char *err, size_t err_cap) {
    (void)err, (void)err_cap;
    return ks__vulkan_backend();
}
