/* The Vulkan compute backend (docs/vulkan.md): a device backend (engine/src/backend.h, the
 * "device" members) that runs float32 elementwise ops and CONV2D in compute shaders, on the
 * engine's NHWC tensors as the host stores them. Not a published API: the runtime does not pick
 * it yet (issue 24); tests and tools pass it to ks__session_create_split as the device beside
 * the CPU host:
 *
 *     ks_session *s;
 *     ks_status st = ks__session_create_split(model, ks__model_graph(model), &desc,
 *                                             ks__cpu_backend(), ks__vulkan_backend(), &s);
 *     // KS_STATUS_UNSUPPORTED, and ks_last_error(NULL) says why, without a Vulkan device
 *
 * The Vulkan loader is opened at run time (vk_loader.h); KS_VULKAN_DEVICE=<index> picks a
 * physical device other than the first one with a compute queue.
 *
 * Thread safety: the backend value is immutable; each session opens its own device (instance,
 * queue, pools), used by one thread at a time like the session. */
#ifndef KESTREL_VULKAN_VK_BACKEND_H
#define KESTREL_VULKAN_VK_BACKEND_H

#include "src/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The backend value (static storage, never NULL). Its host members are inert: an empty kernel
 * table, features 0 and select NULL, so a session that took it as its host would refuse every
 * op instead of crashing. */
const ks__backend *ks__vulkan_backend(void);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_VULKAN_VK_BACKEND_H */
