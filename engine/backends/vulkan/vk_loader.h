/* The Vulkan entry points the backend uses, resolved at run time: the Vulkan loader library is
 * opened with dlopen (no link-time dependency on libvulkan), vkGetInstanceProcAddr is the only
 * symbol read from it, and every other function comes through vkGetInstanceProcAddr /
 * vkGetDeviceProcAddr into a ks__vk_fns table. <vulkan/vulkan.h> is included for its types only
 * (VK_NO_PROTOTYPES). Not a published API.
 *
 *     ks__vk_fns vk;
 *     if (ks__vk_load_global(&vk, err, cap)) ...        // the library (once per process)
 *     vk.vkCreateInstance(&ici, NULL, &inst);
 *     ks__vk_load_instance(&vk, inst);                  // instance-level functions
 *     vk.vkCreateDevice(phys, &dci, NULL, &dev);
 *     if (ks__vk_load_device(&vk, dev, err, cap)) ...   // device-level functions
 *
 * Thread safety: ks__vk_load_global may be called from any thread (the library is opened once
 * and never closed: a driver's threads may outlive a session, and unloading would leave them
 * without code); a table is then filled by, and belongs to, one device. */
#ifndef KESTREL_VULKAN_VK_LOADER_H
#define KESTREL_VULKAN_VK_LOADER_H

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include <stddef.h>

#include "kestrel/kestrel.h"

/* Functions of an instance (through vkGetInstanceProcAddr with the instance). */
#define KS__VK_INSTANCE_FNS(X)                                                                     \
    X(vkDestroyInstance)                                                                           \
    X(vkEnumeratePhysicalDevices)                                                                  \
    X(vkEnumerateDeviceExtensionProperties)                                                        \
    X(vkGetPhysicalDeviceProperties)                                                               \
    X(vkGetPhysicalDeviceQueueFamilyProperties)                                                    \
    X(vkGetPhysicalDeviceMemoryProperties)                                                         \
    X(vkGetPhysicalDeviceFeatures2)                                                                \
    X(vkCreateDevice)                                                                              \
    X(vkGetDeviceProcAddr)

/* Functions of a device (through vkGetDeviceProcAddr). */
#define KS__VK_DEVICE_FNS(X)                                                                       \
    X(vkDestroyDevice)                                                                             \
    X(vkDeviceWaitIdle)                                                                            \
    X(vkGetDeviceQueue)                                                                            \
    X(vkQueueSubmit)                                                                               \
    X(vkCreateCommandPool)                                                                         \
    X(vkDestroyCommandPool)                                                                        \
    X(vkAllocateCommandBuffers)                                                                    \
    X(vkFreeCommandBuffers)                                                                        \
    X(vkBeginCommandBuffer)                                                                        \
    X(vkEndCommandBuffer)                                                                          \
    X(vkCmdBindPipeline)                                                                           \
    X(vkCmdBindDescriptorSets)                                                                     \
    X(vkCmdPushConstants)                                                                          \
    X(vkCmdDispatch)                                                                               \
    X(vkCmdPipelineBarrier)                                                                        \
    X(vkCmdCopyBuffer)                                                                             \
    X(vkCmdResetQueryPool)                                                                         \
    X(vkCmdWriteTimestamp)                                                                         \
    X(vkCreateFence)                                                                               \
    X(vkDestroyFence)                                                                              \
    X(vkResetFences)                                                                               \
    X(vkWaitForFences)                                                                             \
    X(vkCreateBuffer)                                                                              \
    X(vkDestroyBuffer)                                                                             \
    X(vkGetBufferMemoryRequirements)                                                               \
    X(vkAllocateMemory)                                                                            \
    X(vkFreeMemory)                                                                                \
    X(vkBindBufferMemory)                                                                          \
    X(vkMapMemory)                                                                                 \
    X(vkUnmapMemory)                                                                               \
    X(vkCreateShaderModule)                                                                        \
    X(vkDestroyShaderModule)                                                                       \
    X(vkCreateDescriptorSetLayout)                                                                 \
    X(vkDestroyDescriptorSetLayout)                                                                \
    X(vkCreatePipelineLayout)                                                                      \
    X(vkDestroyPipelineLayout)                                                                     \
    X(vkCreateComputePipelines)                                                                    \
    X(vkDestroyPipeline)                                                                           \
    X(vkCreatePipelineCache)                                                                       \
    X(vkDestroyPipelineCache)                                                                      \
    X(vkGetPipelineCacheData)                                                                      \
    X(vkCreateDescriptorPool)                                                                      \
    X(vkDestroyDescriptorPool)                                                                     \
    X(vkAllocateDescriptorSets)                                                                    \
    X(vkUpdateDescriptorSets)                                                                      \
    X(vkCreateQueryPool)                                                                           \
    X(vkDestroyQueryPool)                                                                          \
    X(vkGetQueryPoolResults)

typedef struct ks__vk_fns {
    /* global: from the library */
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
    PFN_vkCreateInstance vkCreateInstance;
    PFN_vkEnumerateInstanceExtensionProperties vkEnumerateInstanceExtensionProperties;
    PFN_vkEnumerateInstanceVersion vkEnumerateInstanceVersion; /* NULL: a Vulkan 1.0 loader */
#define KS__VK_MEMBER(f) PFN_##f f;
    KS__VK_INSTANCE_FNS(KS__VK_MEMBER)
    KS__VK_DEVICE_FNS(KS__VK_MEMBER)
#undef KS__VK_MEMBER
} ks__vk_fns;

/* Opens the Vulkan loader (once per process: "libvulkan.so.1", then "libvulkan.so"; on Apple
 * "libvulkan.1.dylib", then "libMoltenVK.dylib") and fills fns' global members (the others are
 * zeroed). KS_STATUS_UNSUPPORTED with "Vulkan: no loader (...)" when it cannot be opened. */
ks_status ks__vk_load_global(ks__vk_fns *fns, char *err, size_t err_cap);
/* Fills the instance-level members. KS_STATUS_UNSUPPORTED when one is missing. */
ks_status ks__vk_load_instance(ks__vk_fns *fns, VkInstance instance, char *err, size_t err_cap);
/* Fills the device-level members. KS_STATUS_UNSUPPORTED when one is missing. */
ks_status ks__vk_load_device(ks__vk_fns *fns, VkDevice device, char *err, size_t err_cap);

/* "VK_ERROR_DEVICE_LOST", ... ("VkResult <n>" for a value it does not know: a static buffer). */
const char *ks__vk_result_string(VkResult r);
/* The ks_status of a failed call: OUT_OF_MEMORY for host and device memory, UNSUPPORTED for a
 * missing driver, feature, extension or format, INTERNAL for the rest (device lost among them). */
ks_status ks__vk_status(VkResult r);

#endif /* KESTREL_VULKAN_VK_LOADER_H */
