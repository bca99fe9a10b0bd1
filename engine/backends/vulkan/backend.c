/* The Vulkan device backend, step 1 of issue 24 (docs/vulkan.md).
 *
 * What happens when:
 * - device_create: loader (dlopen, vk_loader.c), instance, the first physical device with
 *   Vulkan 1.1 and a compute queue (or KS_VULKAN_DEVICE), logical device, queue, command pool.
 *   Pipelines are made the first time a partition needs them and kept for the device's life.
 * - compile (every reshape, per partition): one device-local buffer holds every tensor the
 *   partition touches, each at its own aligned offset (no reuse between tensors, so the only
 *   hazards inside a run are read-after-write ones); one host-visible staging buffer, mapped for
 *   the program's life, holds its inputs and outputs; constants (weights, biases) are uploaded
 *   once through a temporary staging buffer. Then ONE command buffer is recorded: upload copy,
 *   every dispatch with a buffer barrier on the region it wrote, download copy.
 * - submit: copies the inputs from the host arena into the staging buffer and submits the
 *   recorded command buffer with a fence. Nothing is recorded or allocated.
 * - wait: waits on the fence, copies the outputs from the staging buffer into the host arena,
 *   and reports times from timestamp queries (plus the host copies), or from the host clock when
 *   the queue has no timestamps.
 *
 * Tensors are float32 in the engine's NHWC layout exactly as the host stores them (a packed GPU
 * layout is a later step), so the transfers are plain copies. */
#include "vk_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/error.h"
#include "src/shape_conv.h"
#include "vk_loader.h"
#include "vk_shaders.h" /* generated at build time from shaders/ (cmake/vulkan.cmake) */

#define GROUP_SIZE 64u /* local_size_x of every shader */

/* Headers older than 1.3.207 (portability enumeration) and 1.2.175 (VK_API_VERSION_MAJOR). */
#ifdef VK_KHR_portability_enumeration
#define PORTABILITY_FLAG VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR
#else
#define PORTABILITY_FLAG 0
#endif
#ifndef VK_API_VERSION_MAJOR
#define VK_API_VERSION_MAJOR(v) VK_VERSION_MAJOR(v)
#define VK_API_VERSION_MINOR(v) VK_VERSION_MINOR(v)
#endif
#define MAX_BINDINGS 6u

/* ---------------------------------------------------------------------------------------------
 * Shader families and their push constants (each must match its shader's `P` block)
 * ------------------------------------------------------------------------------------------- */

enum { K_BINARY, K_UNARY, K_CONV, K_COUNT };

typedef struct pc_binary {
    uint32_t count, op;
    int32_t act;
    float alpha;
    uint32_t d1, d2, d3;
    uint32_t sa[4], sb[4];
} pc_binary;

typedef struct pc_unary {
    uint32_t count;
    int32_t act;
    float alpha;
} pc_unary;

typedef struct pc_conv {
    uint32_t count;
    int32_t ih, iw, ic, oh, ow, oc;
    int32_t kh, kw, icg, ocg;
    int32_t sh, sw, dh, dw, pt, pl;
    int32_t act;
    uint32_t flags; /* 1 bias, 2 residual, 4 PRELU slopes */
    float alpha;
} pc_conv;

typedef struct kernel_info {
    const char *name;
    const uint32_t *spv;
    size_t spv_bytes;
    uint32_t num_bindings; /* inputs 0..num_bindings-2, then the output */
    uint32_t pc_bytes;
} kernel_info;

static const kernel_info k_kernels[K_COUNT] = {
    {"binary", ks__vk_spv_binary, sizeof(ks__vk_spv_binary), 3, sizeof(pc_binary)},
    {"unary", ks__vk_spv_unary, sizeof(ks__vk_spv_unary), 2, sizeof(pc_unary)},
    {"conv2d", ks__vk_spv_conv2d, sizeof(ks__vk_spv_conv2d), 6, sizeof(pc_conv)},
};

/* What one node needs: its shader family, push constants and dispatch size. */
typedef struct node_plan {
    int kind;
    union {
        pc_binary binary;
        pc_unary unary;
        pc_conv conv;
    } pc;
    uint32_t count; /* invocations: one per output element */
    uint32_t groups_x, groups_y;
} node_plan;

/* ---------------------------------------------------------------------------------------------
 * The device
 * ------------------------------------------------------------------------------------------- */

typedef struct vk_pipe {
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
} vk_pipe;

typedef struct vk_dev {
    ks_allocator alloc;
    ks__vk_fns vk;
    VkInstance instance;
    VkPhysicalDevice phys;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    VkCommandPool cmd_pool;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem;
    uint32_t timestamp_bits; /* of the queue; 0: no timestamps */
    VkDeviceSize align;      /* of storage buffer offsets */
    vk_pipe pipes[K_COUNT];
} vk_dev;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static VkDeviceSize align_up(VkDeviceSize v, VkDeviceSize a) {
    return (v + a - 1) / a * a;
}

static void vk_device_destroy(void *dev_) {
    vk_dev *d = dev_;
    if (!d) return;
    const ks__vk_fns *vk = &d->vk;
    if (d->device && vk->vkDestroyDevice) {
        if (vk->vkDeviceWaitIdle) vk->vkDeviceWaitIdle(d->device);
        for (int k = 0; k < K_COUNT; k++) {
            vk_pipe *p = &d->pipes[k];
            if (p->pipeline) vk->vkDestroyPipeline(d->device, p->pipeline, NULL);
            if (p->layout) vk->vkDestroyPipelineLayout(d->device, p->layout, NULL);
            if (p->set_layout) vk->vkDestroyDescriptorSetLayout(d->device, p->set_layout, NULL);
        }
        if (d->cmd_pool) vk->vkDestroyCommandPool(d->device, d->cmd_pool, NULL);
        vk->vkDestroyDevice(d->device, NULL);
    }
    if (d->instance && vk->vkDestroyInstance) vk->vkDestroyInstance(d->instance, NULL);
    ks_allocator a = d->alloc;
    ks__free(&a, d);
}

/* Whether phys can run the backend: Vulkan 1.1 and a queue family with compute. */
static bool usable_device(vk_dev *d, VkPhysicalDevice phys, uint32_t *family_out,
                          uint32_t *ts_bits_out, const char **why) {
    VkPhysicalDeviceProperties props;
    d->vk.vkGetPhysicalDeviceProperties(phys, &props);
    if (props.apiVersion < VK_API_VERSION_1_1) {
        *why = "it supports only Vulkan 1.0";
        return false;
    }
    VkQueueFamilyProperties qf[32];
    uint32_t nq = 0;
    d->vk.vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, NULL);
    if (nq > 32) nq = 32;
    d->vk.vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, qf);
    for (uint32_t i = 0; i < nq; i++) {
        if (qf[i].queueCount > 0 && (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) {
            *family_out = i;
            *ts_bits_out = qf[i].timestampValidBits;
            return true;
        }
    }
    *why = "it has no compute queue";
    return false;
}

static bool has_extension(const VkExtensionProperties *ex, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(ex[i].extensionName, name) == 0) return true;
    return false;
}

static ks_status open_instance(vk_dev *d, char *err, size_t cap) {
    ks__vk_fns *vk = &d->vk;
    ks_status st = ks__vk_load_global(vk, err, cap);
    if (st) return st;
    uint32_t api = VK_API_VERSION_1_0;
    if (vk->vkEnumerateInstanceVersion && vk->vkEnumerateInstanceVersion(&api) != VK_SUCCESS)
        api = VK_API_VERSION_1_0;
    if (api < VK_API_VERSION_1_1)
        return ks__fail(err, cap, KS_STATUS_UNSUPPORTED,
                        "Vulkan: the loader supports Vulkan %u.%u; 1.1 is needed",
                        VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api));
    /* MoltenVK and other portability drivers are listed only when asked for. */
    bool portability = false;
    uint32_t next = 0;
    if (vk->vkEnumerateInstanceExtensionProperties(NULL, &next, NULL) == VK_SUCCESS && next) {
        VkExtensionProperties *ex = ks__calloc(&d->alloc, next, sizeof(*ex));
        if (!ex) return ks__fail(err, cap, KS_STATUS_OUT_OF_MEMORY, "Vulkan: out of memory");
        if (vk->vkEnumerateInstanceExtensionProperties(NULL, &next, ex) >= 0)
            portability =
                PORTABILITY_FLAG != 0 && has_extension(ex, next, "VK_KHR_portability_enumeration");
        ks__free(&d->alloc, ex);
    }
    const char *ext = "VK_KHR_portability_enumeration";
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "kestrel",
        .pEngineName = "kestrel",
        .apiVersion = VK_API_VERSION_1_1,
    };
    VkInstanceCreateInfo ici = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .flags = portability ? (VkInstanceCreateFlags)PORTABILITY_FLAG : 0,
        .pApplicationInfo = &app,
        .enabledExtensionCount = portability ? 1u : 0u,
        .ppEnabledExtensionNames = portability ? &ext : NULL,
    };
    VkResult r = vk->vkCreateInstance(&ici, NULL, &d->instance);
    if (r != VK_SUCCESS) {
        d->instance = VK_NULL_HANDLE;
        return ks__fail(err, cap, KS_STATUS_UNSUPPORTED, "Vulkan: no driver (vkCreateInstance: %s)",
                        ks__vk_result_string(r));
    }
    return ks__vk_load_instance(vk, d->instance, err, cap);
}

/* Picks the physical device: KS_VULKAN_DEVICE=<index>, or the first usable one. */
static ks_status pick_device(vk_dev *d, char *err, size_t cap) {
    ks__vk_fns *vk = &d->vk;
    VkPhysicalDevice list[16];
    uint32_t n = 16;
    VkResult r = vk->vkEnumeratePhysicalDevices(d->instance, &n, list);
    if (r < 0 || n == 0)
        return ks__fail(err, cap, KS_STATUS_UNSUPPORTED, "Vulkan: no physical device%s%s%s",
                        r < 0 ? " (" : "", r < 0 ? ks__vk_result_string(r) : "", r < 0 ? ")" : "");
    const char *env = getenv("KS_VULKAN_DEVICE");
    long want = -1;
    if (env && env[0]) {
        char *end = NULL;
        want = strtol(env, &end, 10);
        if (*end || want < 0)
            return ks__fail(err, cap, KS_STATUS_UNSUPPORTED,
                            "Vulkan: KS_VULKAN_DEVICE='%s' is not a device index", env);
        if (want >= (long)n)
            return ks__fail(err, cap, KS_STATUS_UNSUPPORTED,
                            "Vulkan: KS_VULKAN_DEVICE=%ld, but there are %u physical devices", want,
                            n);
    }
    const char *why = "";
    for (uint32_t i = 0; i < n; i++) {
        if (want >= 0 && (long)i != want) continue;
        uint32_t family = 0, ts_bits = 0;
        if (!usable_device(d, list[i], &family, &ts_bits, &why)) continue;
        d->phys = list[i];
        d->queue_family = family;
        d->timestamp_bits = ts_bits;
        break;
    }
    if (!d->phys) {
        if (want >= 0) {
            VkPhysicalDeviceProperties props;
            vk->vkGetPhysicalDeviceProperties(list[want], &props);
            return ks__fail(err, cap, KS_STATUS_UNSUPPORTED,
                            "Vulkan: device %ld (%s) cannot be used: %s", want, props.deviceName,
                            why);
        }
        return ks__fail(err, cap, KS_STATUS_UNSUPPORTED,
                        "Vulkan: no physical device with Vulkan 1.1 and a compute queue");
    }
    vk->vkGetPhysicalDeviceProperties(d->phys, &d->props);
    vk->vkGetPhysicalDeviceMemoryProperties(d->phys, &d->mem);
    d->align = d->props.limits.minStorageBufferOffsetAlignment;
    if (d->align < 16) d->align = 16;
    return KS_STATUS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Fault injection (vk_backend.h): tests only; production devices never install it
 * ------------------------------------------------------------------------------------------- */

static struct {
    bool hooks;
    ks__vk_fault where;
    uint32_t after;
    VkResult result;
    PFN_vkAllocateMemory alloc; /* the device's own functions */
    PFN_vkQueueSubmit submit;
    PFN_vkWaitForFences wait;
} g_fault;

void ks__vk_fault_hooks(bool on) {
    g_fault.hooks = on;
    g_fault.where = KS__VK_FAULT_NONE;
}

void ks__vk_fault_inject(ks__vk_fault where, uint32_t after, int32_t vk_result) {
    g_fault.where = where;
    g_fault.after = after;
    g_fault.result = (VkResult)vk_result;
}

static bool fault_now(ks__vk_fault where) {
    if (g_fault.where != where) return false;
    if (g_fault.after) {
        g_fault.after--;
        return false;
    }
    g_fault.where = KS__VK_FAULT_NONE; /* one failure per arming */
    return true;
}

static VKAPI_ATTR VkResult VKAPI_CALL fault_alloc(VkDevice dev, const VkMemoryAllocateInfo *ai,
                                                  const VkAllocationCallbacks *cb,
                                                  VkDeviceMemory *mem) {
    if (fault_now(KS__VK_FAULT_ALLOC)) return g_fault.result;
    return g_fault.alloc(dev, ai, cb, mem);
}

static VKAPI_ATTR VkResult VKAPI_CALL fault_submit(VkQueue q, uint32_t n, const VkSubmitInfo *si,
                                                   VkFence fence) {
    if (fault_now(KS__VK_FAULT_SUBMIT)) return g_fault.result;
    return g_fault.submit(q, n, si, fence);
}

static VKAPI_ATTR VkResult VKAPI_CALL fault_wait(VkDevice dev, uint32_t n, const VkFence *fences,
                                                 VkBool32 all, uint64_t timeout) {
    VkResult r = g_fault.wait(dev, n, fences, all, timeout); /* the work is done either way */
    if (r == VK_SUCCESS && fault_now(KS__VK_FAULT_WAIT)) return g_fault.result;
    return r;
}

static void install_fault_hooks(ks__vk_fns *vk) {
    if (!g_fault.hooks) return;
    g_fault.alloc = vk->vkAllocateMemory;
    g_fault.submit = vk->vkQueueSubmit;
    g_fault.wait = vk->vkWaitForFences;
    vk->vkAllocateMemory = fault_alloc;
    vk->vkQueueSubmit = fault_submit;
    vk->vkWaitForFences = fault_wait;
}

static ks_status open_device(vk_dev *d, char *err, size_t cap) {
    ks__vk_fns *vk = &d->vk;
    ks_status st;
    if ((st = open_instance(d, err, cap)) || (st = pick_device(d, err, cap))) return st;
    /* A portability driver's device must enable VK_KHR_portability_subset when it lists it. */
    bool subset = false;
    uint32_t next = 0;
    if (vk->vkEnumerateDeviceExtensionProperties(d->phys, NULL, &next, NULL) == VK_SUCCESS &&
        next) {
        VkExtensionProperties *ex = ks__calloc(&d->alloc, next, sizeof(*ex));
        if (!ex) return ks__fail(err, cap, KS_STATUS_OUT_OF_MEMORY, "Vulkan: out of memory");
        if (vk->vkEnumerateDeviceExtensionProperties(d->phys, NULL, &next, ex) >= 0)
            subset = has_extension(ex, next, "VK_KHR_portability_subset");
        ks__free(&d->alloc, ex);
    }
    const char *ext = "VK_KHR_portability_subset";
    float priority = 1.0f;
    VkDeviceQueueCreateInfo qci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = d->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    VkDeviceCreateInfo dci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qci,
        .enabledExtensionCount = subset ? 1u : 0u,
        .ppEnabledExtensionNames = subset ? &ext : NULL,
    };
    VkResult r = vk->vkCreateDevice(d->phys, &dci, NULL, &d->device);
    if (r != VK_SUCCESS) {
        d->device = VK_NULL_HANDLE;
        return ks__fail(err, cap, KS_STATUS_UNSUPPORTED, "Vulkan: vkCreateDevice on '%s': %s",
                        d->props.deviceName, ks__vk_result_string(r));
    }
    if ((st = ks__vk_load_device(vk, d->device, err, cap))) return st;
    install_fault_hooks(vk);
    vk->vkGetDeviceQueue(d->device, d->queue_family, 0, &d->queue);
    VkCommandPoolCreateInfo cpi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .queueFamilyIndex = d->queue_family,
    };
    r = vk->vkCreateCommandPool(d->device, &cpi, NULL, &d->cmd_pool);
    if (r != VK_SUCCESS) {
        d->cmd_pool = VK_NULL_HANDLE;
        return ks__fail(err, cap, KS_STATUS_UNSUPPORTED, "Vulkan: vkCreateCommandPool: %s",
                        ks__vk_result_string(r));
    }
    return KS_STATUS_OK;
}

static ks_status vk_device_create(const ks_allocator *alloc, void **dev_out, char *err,
                                  size_t cap) {
    ks_allocator a = ks__allocator_or_default(alloc);
    vk_dev *d = ks__calloc(&a, 1, sizeof(*d));
    if (!d) return ks__fail(err, cap, KS_STATUS_OUT_OF_MEMORY, "Vulkan: out of memory");
    d->alloc = a;
    ks_status st = open_device(d, err, cap);
    if (st) {
        vk_device_destroy(d);
        return st;
    }
    *dev_out = d;
    return KS_STATUS_OK;
}

/* The pipeline of a shader family, made on first use. */
static ks_status ensure_pipe(vk_dev *d, int kind, char *err, size_t cap) {
    vk_pipe *p = &d->pipes[kind];
    const kernel_info *ki = &k_kernels[kind];
    const ks__vk_fns *vk = &d->vk;
    if (p->pipeline) return KS_STATUS_OK;
    VkResult r = VK_SUCCESS;
    const char *step = "";
    if (!p->set_layout) {
        VkDescriptorSetLayoutBinding b[MAX_BINDINGS];
        memset(b, 0, sizeof(b));
        for (uint32_t i = 0; i < ki->num_bindings; i++) {
            b[i].binding = i;
            b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
            b[i].descriptorCount = 1;
            b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
        }
        VkDescriptorSetLayoutCreateInfo ci = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
            .bindingCount = ki->num_bindings,
            .pBindings = b,
        };
        step = "vkCreateDescriptorSetLayout";
        if ((r = vk->vkCreateDescriptorSetLayout(d->device, &ci, NULL, &p->set_layout))) {
            p->set_layout = VK_NULL_HANDLE;
            goto error;
        }
    }
    if (!p->layout) {
        VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, ki->pc_bytes};
        VkPipelineLayoutCreateInfo ci = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
            .setLayoutCount = 1,
            .pSetLayouts = &p->set_layout,
            .pushConstantRangeCount = 1,
            .pPushConstantRanges = &pcr,
        };
        step = "vkCreatePipelineLayout";
        if ((r = vk->vkCreatePipelineLayout(d->device, &ci, NULL, &p->layout))) {
            p->layout = VK_NULL_HANDLE;
            goto error;
        }
    }
    VkShaderModuleCreateInfo smi = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = ki->spv_bytes,
        .pCode = ki->spv,
    };
    VkShaderModule sm = VK_NULL_HANDLE;
    step = "vkCreateShaderModule";
    if ((r = vk->vkCreateShaderModule(d->device, &smi, NULL, &sm))) goto error;
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage =
            {
                .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = sm,
                .pName = "main",
            },
        .layout = p->layout,
    };
    step = "vkCreateComputePipelines";
    r = vk->vkCreateComputePipelines(d->device, VK_NULL_HANDLE, 1, &ci, NULL, &p->pipeline);
    vk->vkDestroyShaderModule(d->device, sm, NULL);
    if (r == VK_SUCCESS) return KS_STATUS_OK;
    p->pipeline = VK_NULL_HANDLE;
error:;
    ks_status st = ks__vk_status(r);
    return ks__fail(err, cap, st == KS_STATUS_OUT_OF_MEMORY ? st : KS_STATUS_UNSUPPORTED,
                    "Vulkan: cannot build the %s pipeline (%s: %s)", ki->name, step,
                    ks__vk_result_string(r));
}

/* ---------------------------------------------------------------------------------------------
 * What the device runs (supports) and how (the node's plan)
 * ------------------------------------------------------------------------------------------- */

/* An F32 tensor without quantization that one storage buffer descriptor can hold. */
static bool plain_f32(const vk_dev *d, const ks__rt_tensor *t) {
    if (!t || t->dtype != KS_DTYPE_F32 || t->quant->count != 0) return false;
    int64_t n = ks__rt_numel(t);
    return n >= 1 && (uint64_t)n * 4u <= d->props.limits.maxStorageBufferRange &&
           n < ((int64_t)1 << 30);
}

static bool set_groups(const vk_dev *d, uint32_t count, node_plan *np) {
    uint32_t groups = (count + GROUP_SIZE - 1) / GROUP_SIZE;
    uint32_t max_x = d->props.limits.maxComputeWorkGroupCount[0];
    np->groups_x = groups < max_x ? groups : max_x;
    np->groups_y = (groups + np->groups_x - 1) / np->groups_x;
    return np->groups_y <= d->props.limits.maxComputeWorkGroupCount[1];
}

static ks_status refuse(char *why, size_t cap, const char *what) {
    return ks__fail(why, cap, KS_STATUS_UNSUPPORTED, "%s", what);
}

/* Element strides of t read as an operand broadcast to a rank-4 output od (0 along a dimension
 * it broadcasts). */
static bool bcast_strides(const ks__rt_tensor *t, const int64_t *od, uint32_t *s) {
    if (t->rank > 4) return false;
    int64_t stride = 1;
    for (int d = 3; d >= 0; d--) {
        int j = d - (4 - t->rank);
        s[d] = 0;
        if (j < 0) continue;
        int64_t dim = t->dims[j];
        if (dim != 1 && dim != od[d]) return false;
        s[d] = dim == 1 ? 0u : (uint32_t)stride;
        stride *= dim;
    }
    return true;
}

static ks_status plan_binary(const vk_dev *d, const ks__kernel_ctx *ctx, node_plan *np, char *why,
                             size_t cap) {
    const ks__rt_tensor *y = ctx->out[0];
    if (ctx->num_inputs != 2 || !plain_f32(d, ctx->in[0]) || !plain_f32(d, ctx->in[1]))
        return refuse(why, cap, "inputs are not two plain F32 tensors");
    if (y->rank > 4) return refuse(why, cap, "rank above 4");
    int32_t act = ctx->node->ip[0];
    if (act < KS_ACT_NONE || act > KS_ACT_SILU) return refuse(why, cap, "fused activation");
    pc_binary *pc = &np->pc.binary;
    int64_t od[4] = {1, 1, 1, 1};
    for (int32_t k = 0; k < y->rank; k++)
        od[4 - y->rank + k] = y->dims[k];
    if (!bcast_strides(ctx->in[0], od, pc->sa) || !bcast_strides(ctx->in[1], od, pc->sb))
        return refuse(why, cap, "broadcast");
    switch (ctx->node->op) {
    case KS_OP_ADD:
        pc->op = 0;
        break;
    case KS_OP_SUB:
        pc->op = 1;
        break;
    case KS_OP_MUL:
        pc->op = 2;
        break;
    case KS_OP_DIV:
        pc->op = 3;
        break;
    case KS_OP_MAXIMUM:
        pc->op = 4;
        break;
    default:
        pc->op = 5;
        break;
    }
    pc->count = np->count = (uint32_t)ks__rt_numel(y);
    pc->act = act;
    pc->alpha = ctx->node->fp[0];
    pc->d1 = (uint32_t)od[1];
    pc->d2 = (uint32_t)od[2];
    pc->d3 = (uint32_t)od[3];
    np->kind = K_BINARY;
    return KS_STATUS_OK;
}

static ks_status plan_unary(const vk_dev *d, const ks__kernel_ctx *ctx, node_plan *np, char *why,
                            size_t cap) {
    (void)d;
    if (ks__rt_numel(ctx->in[0]) != ks__rt_numel(ctx->out[0]))
        return refuse(why, cap, "input and output sizes differ");
    pc_unary *pc = &np->pc.unary;
    switch (ctx->node->op) {
    case KS_OP_RELU:
        pc->act = KS_ACT_RELU;
        break;
    case KS_OP_RELU6:
        pc->act = KS_ACT_RELU6;
        break;
    case KS_OP_SIGMOID:
        pc->act = KS_ACT_SIGMOID;
        break;
    case KS_OP_TANH:
        pc->act = KS_ACT_TANH;
        break;
    default:
        pc->act = KS_ACT_HARD_SWISH;
        break;
    }
    pc->count = np->count = (uint32_t)ks__rt_numel(ctx->out[0]);
    pc->alpha = 0.0f;
    np->kind = K_UNARY;
    return KS_STATUS_OK;
}

static ks_status plan_conv(const vk_dev *d, const ks__kernel_ctx *ctx, node_plan *np, char *why,
                           size_t cap) {
    /* The core's geometry (the CPU reference kernel uses the same), on a copy of the context so
     * that its messages go to our buffer. */
    ks__kernel_ctx c = *ctx;
    c.err = why;
    c.err_cap = cap;
    ks__conv_geom g;
    ks_status st = ks__conv_geometry(&c, &g);
    if (st) return st;
    if ((st = ks__conv_check_slope(&c, g.act, g.oc))) return st;
    if (ctx->node->ip[12] != 0 || g.act < KS_ACT_NONE || g.act > KS_ACT_PRELU)
        return refuse(why, cap, "fused form or activation");
    for (uint32_t k = 0; k < ctx->num_inputs && k < 5; k++)
        if (ctx->in[k] && !plain_f32(d, ctx->in[k]))
            return refuse(why, cap, "an input is not plain F32");
    const ks__rt_tensor *y = ctx->out[0], *b = ks__kernel_input(ctx, 2);
    const ks__rt_tensor *res = ks__kernel_input(ctx, 3), *slope = ks__kernel_input(ctx, 4);
    int64_t count = g.n * g.oh * g.ow * g.oc;
    if (y->rank != 4 || ks__rt_numel(y) != count || (b && ks__rt_numel(b) != g.oc) ||
        (res && ks__rt_numel(res) != count) || (slope && ks__rt_numel(slope) != g.oc))
        return refuse(why, cap, "operand sizes");
    /* every index the shader forms stays far inside int32 */
    const int64_t lim = (int64_t)1 << 24;
    if (g.ih > lim || g.iw > lim || g.pt > lim || g.pl > lim || g.sh > lim || g.sw > lim ||
        (g.kh - 1) * g.dh > lim || (g.kw - 1) * g.dw > lim)
        return refuse(why, cap, "geometry too large");
    pc_conv *pc = &np->pc.conv;
    pc->count = np->count = (uint32_t)count;
    pc->ih = (int32_t)g.ih, pc->iw = (int32_t)g.iw, pc->ic = (int32_t)g.ic;
    pc->oh = (int32_t)g.oh, pc->ow = (int32_t)g.ow, pc->oc = (int32_t)g.oc;
    pc->kh = (int32_t)g.kh, pc->kw = (int32_t)g.kw, pc->icg = (int32_t)g.icg;
    pc->ocg = (int32_t)g.ocg;
    pc->sh = (int32_t)g.sh, pc->sw = (int32_t)g.sw, pc->dh = (int32_t)g.dh, pc->dw = (int32_t)g.dw;
    pc->pt = (int32_t)g.pt, pc->pl = (int32_t)g.pl;
    pc->act = g.act;
    pc->alpha = g.alpha;
    pc->flags = (b ? 1u : 0u) | (res ? 2u : 0u) | (slope ? 4u : 0u);
    np->kind = K_CONV;
    return KS_STATUS_OK;
}

/* The node's plan, or KS_STATUS_UNSUPPORTED and why (the node then stays on the host). */
static ks_status plan_node(const vk_dev *d, const ks__kernel_ctx *ctx, node_plan *np, char *why,
                           size_t cap) {
    memset(np, 0, sizeof(*np));
    if (ctx->num_outputs != 1 || !plain_f32(d, ctx->out[0]))
        return refuse(why, cap, "the output is not one plain F32 tensor");
    ks_status st;
    switch (ctx->node->op) {
    case KS_OP_ADD:
    case KS_OP_SUB:
    case KS_OP_MUL:
    case KS_OP_DIV:
    case KS_OP_MAXIMUM:
    case KS_OP_MINIMUM:
        st = plan_binary(d, ctx, np, why, cap);
        break;
    case KS_OP_RELU:
    case KS_OP_RELU6:
    case KS_OP_SIGMOID:
    case KS_OP_TANH:
    case KS_OP_HARD_SWISH:
        if (ctx->num_inputs != 1 || !plain_f32(d, ctx->in[0]))
            return refuse(why, cap, "the input is not plain F32");
        st = plan_unary(d, ctx, np, why, cap);
        break;
    case KS_OP_CONV2D:
        st = plan_conv(d, ctx, np, why, cap);
        break;
    default:
        return refuse(why, cap, "op not implemented");
    }
    if (st) return st;
    if (!set_groups(d, np->count, np)) return refuse(why, cap, "too many work groups");
    return KS_STATUS_OK;
}

static bool vk_supports(void *dev, const ks__kernel_ctx *ctx) {
    node_plan np;
    char why[160];
    return plan_node(dev, ctx, &np, why, sizeof(why)) == KS_STATUS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Programs: one per partition
 * ------------------------------------------------------------------------------------------- */

/* Where a tensor of the partition lives. */
enum { R_CONST, R_INPUT, R_OUTPUT, R_INTERNAL };

typedef struct region {
    const ks__rt_tensor *t;
    int kind;
    VkDeviceSize off, bytes; /* in the device buffer */
    VkDeviceSize stage_off;  /* inputs and outputs: in the staging buffer; constants: in the
                                temporary upload buffer */
} region;

typedef struct host_copy {
    void *host;
    size_t stage_off, bytes;
} host_copy;

typedef struct vk_prog {
    uint32_t index; /* the partition's */
    VkBuffer dbuf;
    VkDeviceMemory dmem;
    VkBuffer sbuf;
    VkDeviceMemory smem;
    uint8_t *smap; /* the staging buffer, mapped for the program's life */
    VkDescriptorPool dpool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkQueryPool qpool; /* 4 timestamps: start, uploaded, computed, downloaded; or none */
    host_copy *copies; /* num_in inputs, then num_out outputs */
    uint32_t num_in, num_out;
    uint64_t in_bytes, out_bytes;
    uint64_t submit_ns, upload_host_ns;
    int submitted;
} vk_prog;

static void vk_release(void *dev_, void *prog_) {
    vk_dev *d = dev_;
    vk_prog *p = prog_;
    if (!p) return;
    const ks__vk_fns *vk = &d->vk;
    VkDevice dv = d->device;
    if (p->submitted && p->fence) vk->vkWaitForFences(dv, 1, &p->fence, VK_TRUE, UINT64_MAX);
    if (p->cmd) vk->vkFreeCommandBuffers(dv, d->cmd_pool, 1, &p->cmd);
    if (p->qpool) vk->vkDestroyQueryPool(dv, p->qpool, NULL);
    if (p->dpool) vk->vkDestroyDescriptorPool(dv, p->dpool, NULL);
    if (p->fence) vk->vkDestroyFence(dv, p->fence, NULL);
    if (p->smap) vk->vkUnmapMemory(dv, p->smem);
    if (p->sbuf) vk->vkDestroyBuffer(dv, p->sbuf, NULL);
    if (p->smem) vk->vkFreeMemory(dv, p->smem, NULL);
    if (p->dbuf) vk->vkDestroyBuffer(dv, p->dbuf, NULL);
    if (p->dmem) vk->vkFreeMemory(dv, p->dmem, NULL);
    ks__free(&d->alloc, p->copies);
    ks__free(&d->alloc, p);
}

static int32_t memory_type(const vk_dev *d, uint32_t bits, VkMemoryPropertyFlags flags) {
    for (uint32_t i = 0; i < d->mem.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (d->mem.memoryTypes[i].propertyFlags & flags) == flags)
            return (int32_t)i;
    return -1;
}

/* A buffer with its own memory: of a type with `need`, and `want` too where there is one. */
static ks_status make_buffer(vk_dev *d, VkDeviceSize bytes, VkBufferUsageFlags usage,
                             VkMemoryPropertyFlags need, VkMemoryPropertyFlags want,
                             const char *what, uint32_t part, VkBuffer *buf, VkDeviceMemory *mem,
                             char *err, size_t cap) {
    const ks__vk_fns *vk = &d->vk;
    VkBufferCreateInfo bi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = bytes,
        .usage = usage,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkResult r = vk->vkCreateBuffer(d->device, &bi, NULL, buf);
    if (r != VK_SUCCESS) {
        *buf = VK_NULL_HANDLE;
        return ks__fail(err, cap, ks__vk_status(r),
                        "Vulkan: cannot create the %llu-byte %s buffer of partition %u (%s)",
                        (unsigned long long)bytes, what, part, ks__vk_result_string(r));
    }
    VkMemoryRequirements mr;
    vk->vkGetBufferMemoryRequirements(d->device, *buf, &mr);
    int32_t type = memory_type(d, mr.memoryTypeBits, need | want);
    if (type < 0) type = memory_type(d, mr.memoryTypeBits, need);
    if (type < 0)
        return ks__fail(err, cap, KS_STATUS_UNSUPPORTED,
                        "Vulkan: no memory type for the %s buffer of partition %u", what, part);
    VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = mr.size,
        .memoryTypeIndex = (uint32_t)type,
    };
    r = vk->vkAllocateMemory(d->device, &ai, NULL, mem);
    if (r != VK_SUCCESS) {
        *mem = VK_NULL_HANDLE;
        return ks__fail(err, cap, ks__vk_status(r),
                        "Vulkan: %s allocating %llu bytes for the %s buffer of partition %u",
                        r == VK_ERROR_OUT_OF_DEVICE_MEMORY ? "out of device memory"
                                                           : ks__vk_result_string(r),
                        (unsigned long long)mr.size, what, part);
    }
    r = vk->vkBindBufferMemory(d->device, *buf, *mem, 0);
    if (r != VK_SUCCESS)
        return ks__fail(err, cap, ks__vk_status(r), "Vulkan: vkBindBufferMemory: %s",
                        ks__vk_result_string(r));
    return KS_STATUS_OK;
}

static bool listed(const int32_t *ids, uint32_t n, int32_t id) {
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] == id) return true;
    return false;
}

/* State of one compile: temporary arrays, freed when it returns. */
typedef struct build {
    vk_dev *d;
    const ks__partition *part;
    const ks__kernel_ctx *ctx;
    vk_prog *p;
    node_plan *plans;
    uint32_t *map; /* tensor id -> region index + 1 */
    region *rg;
    uint32_t num_rg;
    uint32_t *bind;        /* per node, per binding: region index */
    VkDescriptorSet *sets; /* per node (owned by the program's pool) */
    VkBufferCopy *copy;    /* room for one copy per region */
    char *err;
    size_t cap;
} build;

static ks_status region_of(build *b, int32_t id, const ks__rt_tensor *t, bool produced,
                           uint32_t *out) {
    if (!b->map[id]) {
        region *r = &b->rg[b->num_rg];
        r->t = t;
        r->bytes = (VkDeviceSize)ks__rt_numel(t) * 4u;
        if (listed(b->part->inputs, b->part->num_inputs, id))
            r->kind = R_INPUT;
        else if (produced)
            r->kind = listed(b->part->outputs, b->part->num_outputs, id) ? R_OUTPUT : R_INTERNAL;
        else if (t->data)
            r->kind = R_CONST;
        else
            return ks__fail(b->err, b->cap, KS_STATUS_INTERNAL,
                            "Vulkan: partition %u reads tensor '%s' before it is computed",
                            b->part->index, ks__rt_name(t));
        if ((r->kind == R_INPUT || r->kind == R_OUTPUT) && !t->data)
            return ks__fail(b->err, b->cap, KS_STATUS_INTERNAL,
                            "Vulkan: partition %u: tensor '%s' has no host memory", b->part->index,
                            ks__rt_name(t));
        b->map[id] = ++b->num_rg;
    }
    *out = b->map[id] - 1;
    return KS_STATUS_OK;
}

/* Runs a one-off command buffer that copies the constants into the device buffer, and waits. */
static ks_status upload_constants(build *b, VkDeviceSize const_bytes) {
    vk_dev *d = b->d;
    vk_prog *p = b->p;
    const ks__vk_fns *vk = &d->vk;
    VkBuffer ubuf = VK_NULL_HANDLE;
    VkDeviceMemory umem = VK_NULL_HANDLE;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkResult r = VK_SUCCESS;
    const char *step = "";
    ks_status st =
        make_buffer(d, const_bytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0,
                    "weights", p->index, &ubuf, &umem, b->err, b->cap);
    if (st) goto done;
    void *map = NULL;
    step = "vkMapMemory";
    if ((r = vk->vkMapMemory(d->device, umem, 0, VK_WHOLE_SIZE, 0, &map))) goto vk_error;
    uint32_t n = 0;
    for (uint32_t i = 0; i < b->num_rg; i++) {
        const region *rg = &b->rg[i];
        if (rg->kind != R_CONST) continue;
        memcpy((uint8_t *)map + rg->stage_off, rg->t->data, (size_t)rg->bytes);
        b->copy[n++] = (VkBufferCopy){rg->stage_off, rg->off, rg->bytes};
    }
    vk->vkUnmapMemory(d->device, umem);
    VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = d->cmd_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    step = "vkAllocateCommandBuffers";
    if ((r = vk->vkAllocateCommandBuffers(d->device, &ai, &cmd))) {
        cmd = VK_NULL_HANDLE;
        goto vk_error;
    }
    VkCommandBufferBeginInfo bi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    step = "vkBeginCommandBuffer";
    if ((r = vk->vkBeginCommandBuffer(cmd, &bi))) goto vk_error;
    vk->vkCmdCopyBuffer(cmd, ubuf, p->dbuf, n, b->copy);
    step = "vkEndCommandBuffer";
    if ((r = vk->vkEndCommandBuffer(cmd))) goto vk_error;
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &cmd,
    };
    step = "vkQueueSubmit";
    if ((r = vk->vkQueueSubmit(d->queue, 1, &si, p->fence))) goto vk_error;
    step = "vkWaitForFences";
    r = vk->vkWaitForFences(d->device, 1, &p->fence, VK_TRUE, UINT64_MAX);
    if (r == VK_SUCCESS) {
        step = "vkResetFences";
        r = vk->vkResetFences(d->device, 1, &p->fence);
    }
    if (r == VK_SUCCESS) goto done;
vk_error:
    st = ks__fail(b->err, b->cap, ks__vk_status(r),
                  "Vulkan: uploading the constants of partition %u: %s: %s", p->index, step,
                  ks__vk_result_string(r));
done:
    if (cmd) vk->vkFreeCommandBuffers(d->device, d->cmd_pool, 1, &cmd);
    if (ubuf) vk->vkDestroyBuffer(d->device, ubuf, NULL);
    if (umem) vk->vkFreeMemory(d->device, umem, NULL);
    return st;
}

/* Descriptor sets: one per node, each binding a region of the device buffer. */
static ks_status make_descriptors(build *b) {
    vk_dev *d = b->d;
    vk_prog *p = b->p;
    const ks__vk_fns *vk = &d->vk;
    uint32_t nn = b->part->num_nodes;
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, nn * MAX_BINDINGS};
    VkDescriptorPoolCreateInfo pci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = nn,
        .poolSizeCount = 1,
        .pPoolSizes = &size,
    };
    VkResult r = vk->vkCreateDescriptorPool(d->device, &pci, NULL, &p->dpool);
    const char *step = "vkCreateDescriptorPool";
    if (r != VK_SUCCESS) {
        p->dpool = VK_NULL_HANDLE;
        goto error;
    }
    step = "vkAllocateDescriptorSets";
    for (uint32_t k = 0; k < nn; k++) {
        const kernel_info *ki = &k_kernels[b->plans[k].kind];
        VkDescriptorSetAllocateInfo ai = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
            .descriptorPool = p->dpool,
            .descriptorSetCount = 1,
            .pSetLayouts = &d->pipes[b->plans[k].kind].set_layout,
        };
        VkDescriptorSet set;
        if ((r = vk->vkAllocateDescriptorSets(d->device, &ai, &set))) goto error;
        VkDescriptorBufferInfo info[MAX_BINDINGS];
        VkWriteDescriptorSet w[MAX_BINDINGS];
        for (uint32_t i = 0; i < ki->num_bindings; i++) {
            const region *rg = &b->rg[b->bind[k * MAX_BINDINGS + i]];
            info[i] = (VkDescriptorBufferInfo){p->dbuf, rg->off, rg->bytes};
            w[i] = (VkWriteDescriptorSet){
                .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                .dstSet = set,
                .dstBinding = i,
                .descriptorCount = 1,
                .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                .pBufferInfo = &info[i],
            };
        }
        vk->vkUpdateDescriptorSets(d->device, ki->num_bindings, w, 0, NULL);
        b->sets[k] = set;
    }
    return KS_STATUS_OK;
error:
    return ks__fail(b->err, b->cap, ks__vk_status(r), "Vulkan: partition %u: %s: %s", p->index,
                    step, ks__vk_result_string(r));
}

static VkBufferMemoryBarrier buffer_barrier(VkBuffer buf, VkDeviceSize off, VkDeviceSize bytes,
                                            VkAccessFlags src, VkAccessFlags dst) {
    return (VkBufferMemoryBarrier){
        .sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
        .srcAccessMask = src,
        .dstAccessMask = dst,
        .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .buffer = buf,
        .offset = off,
        .size = bytes,
    };
}

/* Records the partition's one command buffer: replayed as is by every run. */
static ks_status record(build *b) {
    vk_dev *d = b->d;
    vk_prog *p = b->p;
    const ks__vk_fns *vk = &d->vk;
    VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = d->cmd_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    const char *step = "vkAllocateCommandBuffers";
    VkResult r = vk->vkAllocateCommandBuffers(d->device, &ai, &p->cmd);
    if (r != VK_SUCCESS) {
        p->cmd = VK_NULL_HANDLE;
        goto error;
    }
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    step = "vkBeginCommandBuffer";
    if ((r = vk->vkBeginCommandBuffer(p->cmd, &bi))) goto error;
    VkCommandBuffer cmd = p->cmd;
    if (p->qpool) {
        vk->vkCmdResetQueryPool(cmd, p->qpool, 0, 4);
        vk->vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, p->qpool, 0);
    }
    /* Earlier submissions on the queue (the constants' upload, the previous run) wrote what this
     * run reads and read what it overwrites: one memory barrier orders them. */
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                         VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
    };
    const VkPipelineStageFlags xfer_compute =
        VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
    vk->vkCmdPipelineBarrier(cmd, xfer_compute, xfer_compute, 0, 1, &mb, 0, NULL, 0, NULL);
    /* upload: staging -> device regions of the inputs */
    uint32_t n = 0;
    for (uint32_t i = 0; i < b->num_rg; i++)
        if (b->rg[i].kind == R_INPUT)
            b->copy[n++] = (VkBufferCopy){b->rg[i].stage_off, b->rg[i].off, b->rg[i].bytes};
    if (n) {
        vk->vkCmdCopyBuffer(cmd, p->sbuf, p->dbuf, n, b->copy);
        VkBufferMemoryBarrier bb = buffer_barrier(
            p->dbuf, 0, VK_WHOLE_SIZE, VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_SHADER_READ_BIT);
        vk->vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0, NULL, 1, &bb, 0, NULL);
    }
    if (p->qpool) vk->vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, p->qpool, 1);
    /* the nodes, each followed by a barrier on the region it wrote */
    int bound = -1;
    for (uint32_t k = 0; k < b->part->num_nodes; k++) {
        const node_plan *np = &b->plans[k];
        const kernel_info *ki = &k_kernels[np->kind];
        const vk_pipe *pipe = &d->pipes[np->kind];
        if (bound != np->kind)
            vk->vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe->pipeline);
        bound = np->kind;
        vk->vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe->layout, 0, 1,
                                    &b->sets[k], 0, NULL);
        vk->vkCmdPushConstants(cmd, pipe->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, ki->pc_bytes,
                               &np->pc);
        vk->vkCmdDispatch(cmd, np->groups_x, np->groups_y, 1);
        const region *out = &b->rg[b->bind[k * MAX_BINDINGS + ki->num_bindings - 1]];
        VkBufferMemoryBarrier bb =
            buffer_barrier(p->dbuf, out->off, out->bytes, VK_ACCESS_SHADER_WRITE_BIT,
                           VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT);
        vk->vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, xfer_compute, 0, 0,
                                 NULL, 1, &bb, 0, NULL);
    }
    if (p->qpool) vk->vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, p->qpool, 2);
    /* download: device regions of the outputs -> staging, then visible to the host */
    n = 0;
    for (uint32_t i = 0; i < b->num_rg; i++)
        if (b->rg[i].kind == R_OUTPUT)
            b->copy[n++] = (VkBufferCopy){b->rg[i].off, b->rg[i].stage_off, b->rg[i].bytes};
    if (n) {
        vk->vkCmdCopyBuffer(cmd, p->dbuf, p->sbuf, n, b->copy);
        VkBufferMemoryBarrier bb = buffer_barrier(
            p->sbuf, 0, VK_WHOLE_SIZE, VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_HOST_READ_BIT);
        vk->vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0,
                                 0, NULL, 1, &bb, 0, NULL);
    }
    if (p->qpool) vk->vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, p->qpool, 3);
    step = "vkEndCommandBuffer";
    if ((r = vk->vkEndCommandBuffer(cmd))) goto error;
    return KS_STATUS_OK;
error:
    return ks__fail(b->err, b->cap, ks__vk_status(r), "Vulkan: partition %u: %s: %s", p->index,
                    step, ks__vk_result_string(r));
}

/* Places every tensor of the partition, makes the buffers, uploads the constants, the
 * descriptor sets and the command buffer. */
static ks_status compile_into(build *b) {
    vk_dev *d = b->d;
    vk_prog *p = b->p;
    const ks__partition *part = b->part;
    const ks__vk_fns *vk = &d->vk;
    char *err = b->err;
    size_t cap = b->cap;
    uint32_t nn = part->num_nodes;
    ks_status st;
    int32_t max_id = 0;
    size_t edges = 0;
    for (uint32_t k = 0; k < nn; k++) {
        const ks__node *n = b->ctx[k].node;
        edges += n->num_inputs + n->num_outputs;
        for (uint32_t j = 0; j < n->num_inputs; j++)
            if (n->inputs[j] > max_id) max_id = n->inputs[j];
        for (uint32_t j = 0; j < n->num_outputs; j++)
            if (n->outputs[j] > max_id) max_id = n->outputs[j];
    }
    b->plans = ks__calloc(&d->alloc, nn, sizeof(*b->plans));
    b->map = ks__calloc(&d->alloc, (size_t)max_id + 1, sizeof(*b->map));
    b->rg = ks__calloc(&d->alloc, edges, sizeof(*b->rg));
    b->bind = ks__calloc(&d->alloc, (size_t)nn * MAX_BINDINGS, sizeof(*b->bind));
    b->sets = ks__calloc(&d->alloc, nn, sizeof(*b->sets));
    b->copy = ks__calloc(&d->alloc, edges, sizeof(*b->copy));
    if (!b->plans || !b->map || !b->rg || !b->bind || !b->sets || !b->copy)
        return ks__fail(err, cap, KS_STATUS_OUT_OF_MEMORY, "Vulkan: out of memory compiling");

    /* plans and regions; a binding of an absent input gets the output's region (never read) */
    for (uint32_t k = 0; k < nn; k++) {
        const ks__kernel_ctx *c = &b->ctx[k];
        char why[160];
        if (plan_node(d, c, &b->plans[k], why, sizeof(why)))
            return ks__fail(err, cap, KS_STATUS_INTERNAL,
                            "Vulkan: node %u '%s' was accepted but cannot be planned: %s",
                            c->node_index, c->node->name, why);
        uint32_t nb = k_kernels[b->plans[k].kind].num_bindings, out;
        uint32_t *bind = &b->bind[k * MAX_BINDINGS];
        if ((st = region_of(b, c->node->outputs[0], c->out[0], true, &out))) return st;
        for (uint32_t i = 0; i + 1 < nb; i++) {
            bind[i] = out;
            if (i < c->num_inputs && c->in[i] && c->node->inputs[i] >= 0 &&
                (st = region_of(b, c->node->inputs[i], c->in[i], false, &bind[i])))
                return st;
        }
        bind[nb - 1] = out;
    }
    /* Regions produced by a node are made at that node: a tensor read by a later node already
     * has its region, one read before it is produced cannot occur (execution order). */
    VkDeviceSize dev_bytes = 0, stage_bytes = 0, const_bytes = 0;
    for (uint32_t i = 0; i < b->num_rg; i++) {
        region *rg = &b->rg[i];
        rg->off = align_up(dev_bytes, d->align);
        dev_bytes = rg->off + rg->bytes;
        if (rg->kind == R_INPUT || rg->kind == R_OUTPUT) {
            rg->stage_off = align_up(stage_bytes, 16);
            stage_bytes = rg->stage_off + rg->bytes;
            if (rg->kind == R_INPUT)
                p->num_in++;
            else
                p->num_out++;
        } else if (rg->kind == R_CONST) {
            rg->stage_off = align_up(const_bytes, 16);
            const_bytes = rg->stage_off + rg->bytes;
        }
    }
    p->copies = ks__calloc(&d->alloc, p->num_in + p->num_out + 1, sizeof(*p->copies));
    if (!p->copies)
        return ks__fail(err, cap, KS_STATUS_OUT_OF_MEMORY, "Vulkan: out of memory compiling");
    uint32_t ni = 0, no = p->num_in;
    for (uint32_t i = 0; i < b->num_rg; i++) {
        const region *rg = &b->rg[i];
        if (rg->kind != R_INPUT && rg->kind != R_OUTPUT) continue;
        host_copy *hc = &p->copies[rg->kind == R_INPUT ? ni++ : no++];
        hc->host = rg->t->data;
        hc->stage_off = (size_t)rg->stage_off;
        hc->bytes = (size_t)rg->bytes;
        if (rg->kind == R_INPUT)
            p->in_bytes += rg->bytes;
        else
            p->out_bytes += rg->bytes;
    }

    /* memory: device-local where there is such memory (lavapipe's is host memory anyway) */
    if ((st = make_buffer(d, dev_bytes,
                          VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                              VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                          0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, "tensor", p->index, &p->dbuf,
                          &p->dmem, err, cap)) ||
        (st =
             make_buffer(d, stage_bytes ? stage_bytes : 16,
                         VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                         VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                         VK_MEMORY_PROPERTY_HOST_CACHED_BIT, "staging", p->index, &p->sbuf,
                         &p->smem, err, cap)))
        return st;
    void *map = NULL;
    VkResult r = vk->vkMapMemory(d->device, p->smem, 0, VK_WHOLE_SIZE, 0, &map);
    if (r != VK_SUCCESS)
        return ks__fail(err, cap, ks__vk_status(r), "Vulkan: partition %u: vkMapMemory: %s",
                        p->index, ks__vk_result_string(r));
    p->smap = map;
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if ((r = vk->vkCreateFence(d->device, &fci, NULL, &p->fence))) {
        p->fence = VK_NULL_HANDLE;
        return ks__fail(err, cap, ks__vk_status(r), "Vulkan: partition %u: vkCreateFence: %s",
                        p->index, ks__vk_result_string(r));
    }
    if (d->timestamp_bits) {
        VkQueryPoolCreateInfo qci = {
            .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            .queryType = VK_QUERY_TYPE_TIMESTAMP,
            .queryCount = 4,
        };
        if (vk->vkCreateQueryPool(d->device, &qci, NULL, &p->qpool) != VK_SUCCESS)
            p->qpool = VK_NULL_HANDLE; /* then host clocks */
    }
    if (const_bytes && (st = upload_constants(b, const_bytes))) return st;
    for (uint32_t k = 0; k < nn; k++)
        if ((st = ensure_pipe(d, b->plans[k].kind, err, cap))) return st;
    if ((st = make_descriptors(b))) return st;
    return record(b);
}

static ks_status vk_compile(void *dev_, const ks__partition *part, const ks__kernel_ctx *ctx,
                            void **prog_out, char *err, size_t cap) {
    vk_dev *d = dev_;
    build b;
    memset(&b, 0, sizeof(b));
    b.d = d;
    b.part = part;
    b.ctx = ctx;
    b.err = err;
    b.cap = cap;
    b.p = ks__calloc(&d->alloc, 1, sizeof(*b.p));
    if (!b.p) return ks__fail(err, cap, KS_STATUS_OUT_OF_MEMORY, "Vulkan: out of memory");
    b.p->index = part->index;
    ks_status st = compile_into(&b);
    ks__free(&d->alloc, b.plans);
    ks__free(&d->alloc, b.map);
    ks__free(&d->alloc, b.rg);
    ks__free(&d->alloc, b.bind);
    ks__free(&d->alloc, b.sets);
    ks__free(&d->alloc, b.copy);
    if (st) {
        vk_release(d, b.p);
        return st;
    }
    *prog_out = b.p;
    return KS_STATUS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Runs: submit and wait (no allocation, no recording)
 * ------------------------------------------------------------------------------------------- */

static ks_status vk_submit(void *dev_, void *prog_, char *err, size_t cap) {
    vk_dev *d = dev_;
    vk_prog *p = prog_;
    if (p->submitted)
        return ks__fail(err, cap, KS_STATUS_INVALID_STATE,
                        "Vulkan: partition %u submitted again before its wait", p->index);
    uint64_t t0 = now_ns();
    for (uint32_t i = 0; i < p->num_in; i++)
        memcpy(p->smap + p->copies[i].stage_off, p->copies[i].host, p->copies[i].bytes);
    p->upload_host_ns = now_ns() - t0;
    VkResult r = d->vk.vkResetFences(d->device, 1, &p->fence);
    if (r == VK_SUCCESS) {
        VkSubmitInfo si = {
            .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
            .commandBufferCount = 1,
            .pCommandBuffers = &p->cmd,
        };
        r = d->vk.vkQueueSubmit(d->queue, 1, &si, p->fence);
    }
    if (r != VK_SUCCESS)
        return ks__fail(err, cap, ks__vk_status(r), "Vulkan: partition %u: vkQueueSubmit: %s",
                        p->index, ks__vk_result_string(r));
    p->submit_ns = now_ns();
    p->submitted = 1;
    return KS_STATUS_OK;
}

static ks_status vk_wait(void *dev_, void *prog_, ks__partition_times *times, char *err,
                         size_t cap) {
    vk_dev *d = dev_;
    vk_prog *p = prog_;
    if (!p->submitted)
        return ks__fail(err, cap, KS_STATUS_INVALID_STATE,
                        "Vulkan: partition %u waited for without a submit", p->index);
    VkResult r = d->vk.vkWaitForFences(d->device, 1, &p->fence, VK_TRUE, UINT64_MAX);
    uint64_t done_ns = now_ns();
    if (r != VK_SUCCESS) {
        /* p stays "submitted" unless the fence is known to be idle: release waits again */
        if (r == VK_ERROR_DEVICE_LOST) p->submitted = 0;
        return ks__fail(err, cap, ks__vk_status(r), "Vulkan: partition %u: %s%s", p->index,
                        ks__vk_result_string(r),
                        r == VK_ERROR_DEVICE_LOST ? " (the GPU reset or the driver crashed)" : "");
    }
    p->submitted = 0;
    for (uint32_t i = p->num_in; i < p->num_in + p->num_out; i++)
        memcpy(p->copies[i].host, p->smap + p->copies[i].stage_off, p->copies[i].bytes);
    uint64_t download_host_ns = now_ns() - done_ns;
    if (!times) return KS_STATUS_OK;
    times->upload_bytes = p->in_bytes;
    times->download_bytes = p->out_bytes;
    uint64_t ts[4];
    if (p->qpool && d->vk.vkGetQueryPoolResults(
                        d->device, p->qpool, 0, 4, sizeof(ts), ts, sizeof(ts[0]),
                        VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS) {
        uint64_t mask =
            d->timestamp_bits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << d->timestamp_bits) - 1);
        double period = (double)d->props.limits.timestampPeriod;
        uint64_t ns[3];
        for (int i = 0; i < 3; i++)
            ns[i] = (uint64_t)((double)((ts[i + 1] - ts[i]) & mask) * period);
        times->upload_ns = p->upload_host_ns + ns[0];
        times->compute_ns = ns[1];
        times->download_ns = ns[2] + download_host_ns;
    } else {
        /* no timestamps: the device's whole time (its copies included) counts as compute */
        times->upload_ns = p->upload_host_ns;
        times->compute_ns = done_ns - p->submit_ns;
        times->download_ns = download_host_ns;
    }
    return KS_STATUS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * The backend value
 * ------------------------------------------------------------------------------------------- */

/* The host members: the session asks only its host backend for kernels and features (a device
 * partition's nodes never reach them), so these only make a misuse as a host fail cleanly. */
static const ks__kernel_table *vk_kernels(void) {
    static const ks__kernel_table none;
    return &none;
}

static uint32_t vk_features(void) {
    return 0;
}

static const ks__impl *vk_select(void *tuner, const ks__kernel_ctx *ctx, uint32_t features) {
    (void)tuner;
    (void)ctx;
    (void)features;
    return NULL;
}

static const ks__backend k_vulkan = {
    .name = "vulkan",
    .kernels = vk_kernels,
    .features = vk_features,
    .select = vk_select,
    .device_create = vk_device_create,
    .device_destroy = vk_device_destroy,
    .supports = vk_supports,
    .compile = vk_compile,
    .release = vk_release,
    .submit = vk_submit,
    .wait = vk_wait,
};

const ks__backend *ks__vulkan_backend(void) {
    return &k_vulkan;
}
