/* The Vulkan compute backend (docs/vulkan.md): a device backend (engine/src/backend.h, the
 * "device" members) that runs the float32 ops of the standard models (convolutions, pooling,
 * padding, elementwise, layout ops, resize, softmax, matmul, reductions; the table in
 * docs/vulkan.md) in compute shaders, on the engine's NHWC tensors as the host stores them, in
 * fp32 or, for KS_PRECISION_FP16_STORAGE / FP16, in fp16 (the session desc's precision, read at
 * device_create). Not a published API: sessions ask for it with ks_session_desc.backend
 * (KS_BACKEND_VULKAN or AUTO; engine/runtime/session_create.c), which passes it to
 * ks__session_create_split as the device beside the CPU host, as tests do directly:
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

/* What the calling thread's last device does (created, and reshaped for the pipelines), for
 * tests and tools:
 * fp16 is 0 (fp32), 1 (fp16 storage) or 2 (fp16 storage and arithmetic), after the capability
 * checks: fp16 asked of a device without it falls back, and `fallback` says why ("" if none).
 * cache_read: the pipeline cache file was read and accepted; pipelines_built: pipelines made so
 * far, pipelines_from_cache: those the driver reports as found in the cache
 * (VK_EXT_pipeline_creation_feedback; -1 when the device cannot tell). cache_warning: why a
 * cache file (pipelines, tuning) was ignored or not written ("" if none). */
typedef struct ks__vk_device_info {
    int fp16;
    char fallback[160];
    bool cache_read;
    uint32_t pipelines_built;
    int32_t pipelines_from_cache;
    char cache_warning[200];
    uint32_t tune_timed, tune_cached; /* tuning: convolutions timed / choices read from the file */
    bool coop_matrix;    /* tuning may pick cooperative matrices for convolutions (conv2d_coop) */
    bool subgroup_arith; /* the shaders' subgroup reductions run (pool2d_wide_sg) */
} ks__vk_device_info;
void ks__vk_last_device_info(ks__vk_device_info *info_out);
/* Convolutions that tuning (ks_session_desc.tune) has timed on any device of the process. */
uint64_t ks__vk_tune_trials(void);

/* The Vulkan validation layers, for tests: ks__vk_validation_request() before the process's
 * first Vulkan device makes the instance (made once, kept for the process) enable
 * VK_LAYER_KHRONOS_validation with a VK_EXT_debug_utils messenger when the layer is installed;
 * every error it reports is counted and logged (ks_log_set, KS_LOG_ERROR).
 * ks__vk_validation_state returns -1 (not asked, or no instance yet), 0 (asked, but the layer is
 * not installed) or 1 (on), with the error count and the last error's text. */
void ks__vk_validation_request(void);
int ks__vk_validation_state(uint32_t *errors_out, const char **last_out);

/* Fault injection, for tests (test_vulkan): ks__vk_fault_hooks(true) makes the devices created
 * from then on call vkAllocateMemory, vkQueueSubmit and vkWaitForFences through an injector;
 * ks__vk_fault_inject then arms one failure: after `after` more successful calls of that
 * function, one call returns `vk_result` (a VkResult) instead: an allocation or a submission is
 * not made, a wait still waits and then reports the failure. Process-wide and not thread-safe;
 * one device at a time. KS__VK_FAULT_NONE disarms. */
typedef enum ks__vk_fault {
    KS__VK_FAULT_NONE,
    KS__VK_FAULT_ALLOC,  /* vkAllocateMemory */
    KS__VK_FAULT_SUBMIT, /* vkQueueSubmit */
    KS__VK_FAULT_WAIT,   /* vkWaitForFences */
} ks__vk_fault;
void ks__vk_fault_hooks(bool on);
void ks__vk_fault_inject(ks__vk_fault where, uint32_t after, int32_t vk_result);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_VULKAN_VK_BACKEND_H */
