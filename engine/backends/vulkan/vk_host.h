/* The Vulkan backend as a loadable module (docs/vulkan.md, "The Vulkan module"): the core's
 * functions the backend calls, handed to libkestrel_vulkan.so as one table when the runtime
 * loads it. Why a table: the shared library exports only the public API (KS_API), so the
 * module cannot link the core's ks__ internals by name, and exporting them would make them
 * part of the library's ABI. The module's sources include vk_host_redirect.h after their other
 * headers, which turns each call into a call through the table; built into the static library
 * they call the functions directly and neither header does anything.
 *
 * The module and the core must come from the same build: the structs they exchange (the graph,
 * the backend interface, this table) are not versioned. The runtime passes the table's size and
 * the build's token (KS_VK_MODULE_TOKEN, made once per build tree by engine/CMakeLists.txt), and
 * the module refuses any other. */
#ifndef KESTREL_VULKAN_VK_HOST_H
#define KESTREL_VULKAN_VK_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "base/choice_file.h"
#include "base/cpuinfo.h"
#include "base/crc32.h"
#include "base/error.h"
#include "base/once.h"
#include "kestrel/kestrel.h"
#include "src/backend.h"
#include "src/common.h"
#include "src/ir.h"
#include "src/kernel.h"
#include "src/shape_conv.h"
#include "src/shape_data.h"
#include "src/shape_elementwise.h"
#include "src/shape_mediapipe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every core function the module calls (vk_host_redirect.h lists the same names). */
#define KS__VK_HOST_FUNCS(X)                                                                       \
    X(ks__alloc)                                                                                   \
    X(ks__allocator_or_default)                                                                    \
    X(ks__calloc)                                                                                  \
    X(ks__free)                                                                                    \
    X(ks__choice_parse)                                                                            \
    X(ks__choice_read)                                                                             \
    X(ks__choice_save)                                                                             \
    X(ks__cpu_isa)                                                                                 \
    X(ks__crc32)                                                                                   \
    X(ks__fail)                                                                                    \
    X(ks__fmt)                                                                                     \
    X(ks__log)                                                                                     \
    X(ks__once)                                                                                    \
    X(ks__f16_to_f32)                                                                              \
    X(ks__f32_to_f16)                                                                              \
    X(ks__op_get_info)                                                                             \
    X(ks__rt_get_int)                                                                              \
    X(ks__rt_name)                                                                                 \
    X(ks__rt_numel)                                                                                \
    X(ks__concat_geometry)                                                                         \
    X(ks__conv_check_slope)                                                                        \
    X(ks__conv_geometry)                                                                           \
    X(ks__matmul_geometry)                                                                         \
    X(ks__mp_landmark_dims)                                                                        \
    X(ks__pack_geometry)                                                                           \
    X(ks__pad_geometry)                                                                            \
    X(ks__pool_geometry)                                                                           \
    X(ks__reduce_axes)                                                                             \
    X(ks__resize_geometry)                                                                         \
    X(ks__slice_geometry)                                                                          \
    X(ks__split_geometry)                                                                          \
    X(ks__tconv_geometry)                                                                          \
    X(ks__transpose_geometry)                                                                      \
    X(ks__unpack_geometry)

/* One member per function, named as the function, of its own pointer type. */
typedef struct ks__vk_host {
#define KS__VK_HOST_MEMBER(f) __typeof__(&f) f;
    KS__VK_HOST_FUNCS(KS__VK_HOST_MEMBER)
#undef KS__VK_HOST_MEMBER
} ks__vk_host;

/* The module's one exported function (vk_module.c): checks host_size and token against its own,
 * keeps the table and returns ks__vulkan_backend(); NULL on a mismatch. */
#define KS__VK_MODULE_ENTRY "ks_vulkan_module_entry"
typedef const ks__backend *(*ks__vk_module_entry_fn)(const ks__vk_host *host, size_t host_size,
                                                     const char *token);

/* The Vulkan backend of this build, or NULL with the reason in err: linked in (vk_link.c, the
 * static library) or loaded from libkestrel_vulkan.so (vk_module_load.c, the shared library
 * with KS_VULKAN_MODULE). The runtime's only way to it (engine/runtime/session_create.c). */
const ks__backend *ks__vulkan_backend_get(char *err, size_t err_cap);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_VULKAN_VK_HOST_H */
