/* The Vulkan device backend of issue 24 (docs/vulkan.md): step 1 (device, memory, recording,
 * transfers) and step 2 (the ops of the standard models).
 *
 * What happens when:
 * - device_create: loader (dlopen, vk_loader.c), instance, the first physical device with
 *   Vulkan 1.1 and a compute queue (or KS_VULKAN_DEVICE), logical device, queue, command pool.
 *   Pipelines are made the first time a partition needs them and kept for the device's life.
 * - supports (every reshape, per node): the node's plan (plan_node): one or more dispatches of
 *   a shader family, their push constants from the core's geometry functions (shape_*.h), so a
 *   shader and the CPU reference kernel cannot disagree on shapes; or none for a view.
 * - compile (every reshape, per partition): one device-local buffer holds every tensor the
 *   partition touches, each at its own aligned offset (no reuse between tensors, so the only
 *   hazards inside a run are read-after-write ones); one host-visible staging buffer, mapped for
 *   the program's life, holds its inputs and outputs; constants (weights, biases) are uploaded
 *   once through a temporary staging buffer. A view's output is its input's region. Then ONE
 *   command buffer is recorded: upload copy, every dispatch with a buffer barrier on the region
 *   it wrote, download copy.
 * - submit: copies the inputs from the host arena into the staging buffer and submits the
 *   recorded command buffer with a fence. Nothing is recorded or allocated.
 * - wait: waits on the fence, copies the outputs from the staging buffer into the host arena,
 *   and reports times from timestamp queries (plus the host copies), or from the host clock when
 *   the queue has no timestamps.
 *
 * Tensors keep the engine's NHWC layout exactly as the host stores them (a packed GPU layout is
 * a later step). In fp32 they are float32 and the transfers are plain copies. In the fp16 modes
 * (KS_PRECISION_FP16_STORAGE / FP16, the session desc's precision; storageBuffer16BitAccess, and
 * shaderFloat16 for the arithmetic variant, else a fallback with a warning) every tensor of the
 * device buffer is fp16, constants included: the host converts at the transfers only (constants
 * once at compile, inputs at submit, outputs at wait), so graph inputs and outputs stay float32
 * on the host, and the shaders are the variants of shaders/prec.glsl. Why every tensor, weights
 * included: the direct kernels are bandwidth-bound, and weights are read once per output pixel;
 * one dtype per device buffer also keeps one shader variant per family and mode.
 * - The pipeline cache: a VkPipelineCache per device, read from "<tune_cache_path>.vkpipe" at
 *   device create and written back at destroy when it grew (pcache_file.h). */
#include "vk_backend.h"

#include <pthread.h>
#include <stddef.h> /* offsetof */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h> /* getpid */

#include "base/alloc.h"
#include "base/choice_file.h"
#include "base/cpuinfo.h"
#include "base/error.h"
#include "src/common.h" /* ks__log */
#include "src/ir.h"     /* ks__f32_to_f16, ks__f16_to_f32 */
#include "src/shape_conv.h"
#include "src/shape_data.h"
#include "src/shape_elementwise.h"
#include "pcache_file.h"
#include "vk_loader.h"
#include "src/shape_mediapipe.h"
#include "vk_shaders.h"       /* generated at build time from shaders/ (cmake/vulkan.cmake) */
#include "vk_host_redirect.h" /* last: the module calls the core through a table */

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
#define KEY_BYTES KS__VK_PCACHE_HEADER_BYTES /* the pipeline cache file's header */

/* ---------------------------------------------------------------------------------------------
 * Shader families and their push constants (each must match its shader's `P` block)
 * ------------------------------------------------------------------------------------------- */

enum {
    K_BINARY,
    K_UNARY,
    K_CONV,
    K_CONV_GEMM,
    K_CONV_GEMM4, /* conv2d_gemm with vector loads (input channels a multiple of 4; fp32) */
    K_CONV_DW4,   /* conv2d for depthwise, four channels per invocation (channels % 4 == 0) */
    K_CONV_COOP,  /* conv2d_gemm on cooperative matrices (fp16 arithmetic mode only) */
    K_CONV_WIDE,  /* few outputs, long K: one group of 64 per output element (conv2d_wide) */
    K_DECONV,
    K_POOL,
    K_POOL_WIDE,
    K_POOL_WIDE_SG, /* pool2d_wide combining in subgroups (subgroup arithmetic) */
    K_PAD,
    K_COPY,
    K_RESIZE,
    K_SOFTMAX,
    K_MATMUL,
    K_REDUCE,
    K_WIDEN,        /* fp16 -> fp32 copy of a tensor (per-node precision in the fp16 modes) */
    K_NARROW,       /* fp32 -> fp16 */
    K_MP_LANDMARKS, /* MediaPipe's transforms (fp32 mode only) */
    K_MP_TRANSFORM,
    K_MP_MATRIX,
    K_COUNT
};

#define MAX_DIMS 6 /* of the index arithmetic in pad, copy and reduce (size-1 dims dropped) */

typedef struct pc_binary {
    uint32_t count, op;
    int32_t act;
    float alpha;
    uint32_t d1, d2, d3;
    uint32_t sa[4], sb[4];
} pc_binary;

/* op: a ks__act (RELU ... SILU), or one of the UN_* codes of unary.comp */
typedef struct pc_unary {
    uint32_t count;
    int32_t op;
    float alpha, beta;
} pc_unary;

/* CONV2D and CONV2D_TRANSPOSE */
typedef struct pc_conv {
    uint32_t count;
    int32_t ih, iw, ic, oh, ow, oc;
    int32_t kh, kw, icg, ocg;
    int32_t sh, sw, dh, dw, pt, pl;
    int32_t act;
    uint32_t flags; /* 1 bias, 2 residual, 4 PRELU slopes */
    float alpha;
} pc_conv;

typedef struct pc_pool {
    uint32_t count;
    int32_t ih, iw, c, oh, ow, kh, kw, sh, sw, pt, pl, pb, pr;
    int32_t kind, count_include_pad, act;
    float alpha;
} pc_pool;

typedef struct pc_pad {
    uint32_t count;
    int32_t mode, rank;
    float value;
    int32_t out_dims[MAX_DIMS], in_dims[MAX_DIMS], before[MAX_DIMS];
} pc_pad;

/* y[dst] = act(x[src]) over `dims`: src = sbase + sum(i_d * ss_d), dst = dbase + sum(i_d * ds_d).
 * TRANSPOSE, SLICE, CONCAT and PACK (one per input), SPLIT and UNPACK (one per output),
 * DEPTH_TO_SPACE and SPACE_TO_DEPTH are all this one shader. */
typedef struct pc_copy {
    uint32_t count;
    int32_t rank, sbase, dbase, act;
    float alpha;
    int32_t dims[MAX_DIMS], ss[MAX_DIMS], ds[MAX_DIMS];
} pc_copy;

typedef struct pc_resize {
    uint32_t count;
    int32_t ih, iw, c, oh, ow, mode, coord, round_mode;
    float ratio_h, ratio_w;
} pc_resize;

typedef struct pc_softmax {
    uint32_t count, len, inner;
    int32_t log;
    float beta;
} pc_softmax;

/* FULLY_CONNECTED and MATMUL: y[b, i, j] = act(sum_k a[..] * b[..] + bias[j]), element strides */
typedef struct pc_matmul {
    uint32_t count;
    int32_t m, n, k;
    int32_t as_m, as_k, bs_k, bs_n;
    int32_t batch_rank;
    uint32_t flags; /* 1 bias */
    int32_t act;
    float alpha;
    int32_t bdims[4], as_b[4], bs_b[4]; /* per batch dim: extent, a's and b's strides */
} pc_matmul;

typedef struct pc_reduce {
    uint32_t count;
    int32_t kind, nk, nr, rcount;
    int32_t kdims[MAX_DIMS], ks[MAX_DIMS], rdims[MAX_DIMS], rs[MAX_DIMS];
} pc_reduce;

/* WIDEN and NARROW */
typedef struct pc_cast {
    uint32_t count;
} pc_cast;

/* MP_TRANSFORM_LANDMARKS (count landmarks of d values) and MP_TRANSFORM_TENSOR_BILINEAR (count
 * output elements; the geometry) */
typedef struct pc_mp {
    uint32_t count;
    int32_t d, ih, iw, c, oh, ow, half_pixel;
    float scale;
} pc_mp;

#define MP_MATRIX_WORDS 20 /* subset bitmask words in the push constants (640 landmarks) */
typedef struct pc_mp_matrix {
    uint32_t count;
    int32_t left, right, oh, ow, words;
    float target_rotation, scale_x, scale_y;
    uint32_t bits[MP_MATRIX_WORDS];
} pc_mp_matrix;

/* Precision variants of every shader (shaders/prec.glsl): the device's mode picks one. */
enum { V_F32, V_F16_STORAGE, V_F16, V_COUNT };

typedef struct kernel_info {
    const char *name;
    const char *prof_name;       /* the profiler's kernel name: "vk_<shader>" */
    const uint8_t *spv[V_COUNT]; /* SPIR-V words as LEB128 (vk_shaders.h) */
    size_t spv_packed[V_COUNT];  /* bytes of spv */
    size_t spv_words[V_COUNT];   /* words they unpack to */
    uint32_t num_bindings;       /* operands, the output last */
    uint32_t pc_bytes;
} kernel_info;

#define KERNEL(n, b, pc)                                                                           \
    {                                                                                              \
#n, "vk_" #n,                                                                              \
            {ks__vk_spv_##n, ks__vk_spv_##n##_f16s, ks__vk_spv_##n##_f16 },                        \
             {sizeof(ks__vk_spv_##n), sizeof(ks__vk_spv_##n##_f16s),                               \
              sizeof(ks__vk_spv_##n##_f16) },                                                      \
              {ks__vk_spv_##n##_words, ks__vk_spv_##n##_f16s_words, ks__vk_spv_##n##_f16_words },  \
               b, sizeof(pc)                                                                       \
    }
/* A shader built only as its fp32 variant (the fp16 modes refuse its op). */
#define KERNEL_F32(n, b, pc)                                                                       \
    {                                                                                              \
#n, "vk_" #n,                                                                              \
            {ks__vk_spv_##n, NULL, NULL },                                                         \
             {sizeof(ks__vk_spv_##n), 0, 0 }, {ks__vk_spv_##n##_words, 0, 0 }, b, sizeof(pc)       \
    }
/* A shader built only as its fp16-arithmetic variant (no fp32 or fp16-storage code). */
#define KERNEL_F16(n, b, pc)                                                                       \
    {                                                                                              \
#n, "vk_" #n,                                                                              \
            {NULL, NULL, ks__vk_spv_##n##_f16 },                                                   \
             {0, 0, sizeof(ks__vk_spv_##n##_f16) },                                                \
              {0, 0, ks__vk_spv_##n##_f16_words }, b, sizeof(pc)                                   \
    }
static const kernel_info k_kernels[K_COUNT] = {
    [K_BINARY] = KERNEL(binary, 3, pc_binary),
    [K_UNARY] = KERNEL(unary, 2, pc_unary),
    [K_CONV] = KERNEL(conv2d, 6, pc_conv),
    [K_DECONV] = KERNEL(deconv, 5, pc_conv),
    [K_CONV_GEMM] = KERNEL(conv2d_gemm, 6, pc_conv),
    [K_CONV_GEMM4] = KERNEL_F32(conv2d_gemm4, 6, pc_conv),
    [K_CONV_DW4] = KERNEL(conv2d_dw4, 6, pc_conv),
    [K_CONV_COOP] = KERNEL_F16(conv2d_coop, 6, pc_conv),
    [K_CONV_WIDE] = KERNEL(conv2d_wide, 6, pc_conv),
    [K_POOL] = KERNEL(pool2d, 2, pc_pool),
    [K_POOL_WIDE] = KERNEL(pool2d_wide, 2, pc_pool),
    [K_POOL_WIDE_SG] = KERNEL(pool2d_wide_sg, 2, pc_pool),
    [K_PAD] = KERNEL(pad, 2, pc_pad),
    [K_COPY] = KERNEL(copy, 2, pc_copy),
    [K_RESIZE] = KERNEL(resize, 2, pc_resize),
    [K_SOFTMAX] = KERNEL(softmax, 2, pc_softmax),
    [K_MATMUL] = KERNEL(matmul, 4, pc_matmul),
    [K_REDUCE] = KERNEL(reduce, 2, pc_reduce),
    [K_WIDEN] = KERNEL(widen, 2, pc_cast),
    [K_NARROW] = KERNEL(narrow, 2, pc_cast),
    [K_MP_LANDMARKS] = KERNEL_F32(mp_landmarks, 3, pc_mp),
    [K_MP_TRANSFORM] = KERNEL_F32(mp_transform, 3, pc_mp),
    [K_MP_MATRIX] = KERNEL_F32(mp_matrix, 2, pc_mp_matrix),
};
#undef KERNEL_F32
#undef KERNEL_F16
#undef KERNEL

/* KS_VK_VEC4 (the A/B switch of bench/gpu): unset, every vector-load shader; "0" none; else only
 * those named in a comma list ("gemm", "dw"). */
static bool vec4_allowed(const char *what) {
    const char *env = getenv("KS_VK_VEC4");
    if (!env) return true;
    size_t n = strlen(what);
    for (const char *p = env; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, what, n) == 0) return true;
        p = end ? end + 1 : p + len;
    }
    return false;
}

/* The tiles of conv2d_gemm.comp (its specialization constants 0 and 1: pixels x output channels
 * per group of 64 invocations); T32X32 is the shader's default. plan_conv picks one per node
 * (gemm_tile), tuning times the others; KS_VK_TILE=MxN forces one (the A/B switch of
 * bench/gpu). The shader takes 64 too, but 64x32 and 32x64 ran every model's GEMM convolutions
 * 2.5-3x slower than 32x32 on an H100 (docs/vulkan.md, "GEMM tiles by specialization
 * constants"): not offered. */
enum { T32X32, T16X32, T32X16, T16X16, T_COUNT };
static const struct {
    int32_t m, n;
    const char *choice;       /* its value in the tune file */
    const char *prof_name[2]; /* the profiler's kernel name: conv2d_gemm, conv2d_gemm4 */
} k_tiles[T_COUNT] = {
    [T32X32] = {32, 32, "gemm", {"vk_conv2d_gemm", "vk_conv2d_gemm4"}},
    [T16X32] = {16, 32, "gemm_16x32", {"vk_conv2d_gemm_16x32", "vk_conv2d_gemm4_16x32"}},
    [T32X16] = {32, 16, "gemm_32x16", {"vk_conv2d_gemm_32x16", "vk_conv2d_gemm4_32x16"}},
    [T16X16] = {16, 16, "gemm_16x16", {"vk_conv2d_gemm_16x16", "vk_conv2d_gemm4_16x16"}},
};

/* conv2d_gemm.comp's specialization constants, in constant_id order. */
typedef struct gemm_spec {
    int32_t tm, tn;
    VkBool32 prefetch;
} gemm_spec;

/* The tile KS_VK_TILE names ("16x16"...), or -1: unset or not one of k_tiles. */
static int forced_tile(void) {
    const char *env = getenv("KS_VK_TILE");
    if (!env) return -1;
    for (int t = 0; t < T_COUNT; t++) {
        char name[16];
        snprintf(name, sizeof(name), "%dx%d", k_tiles[t].m, k_tiles[t].n);
        if (strcmp(env, name) == 0) return t;
    }
    return -1;
}

/* Whether a shader family is conv2d_gemm.comp (tiles by specialization constants). */
static bool tiled_kind(int kind) {
    return kind == K_CONV_GEMM || kind == K_CONV_GEMM4;
}

/* One dispatch: its shader family, push constants, size and operands. */
typedef struct dispatch {
    int kind;
    union {
        pc_binary binary;
        pc_unary unary;
        pc_conv conv;
        pc_pool pool;
        pc_pad pad;
        pc_copy copy;
        pc_resize resize;
        pc_softmax softmax;
        pc_matmul matmul;
        pc_reduce reduce;
        pc_cast cast;
        pc_mp mp;
        pc_mp_matrix mp_matrix;
    } pc;
    uint32_t count; /* invocations */
    uint32_t groups_x, groups_y;
    int variant; /* V_*: the shader variant; the device's, or V_F32 for a node kept in fp32 */
    int tile;    /* T_*: conv2d_gemm's tile (tiled_kind), else T32X32 */
    /* per binding, the node's operand: input i (>= 0; absent: the output's region, never read)
     * or output -1 - i */
    int8_t ref[MAX_BINDINGS];
} dispatch;

/* What one node needs: its dispatches (CONCAT and SPLIT: one per input / output), or none for a
 * view (RESHAPE, SQUEEZE, UNSQUEEZE), whose output is its input's memory. */
typedef struct node_plan {
    uint32_t num_steps;
    bool view;
    dispatch steps[KS__MAX_PARTS];
} node_plan;

/* ---------------------------------------------------------------------------------------------
 * The device
 * ------------------------------------------------------------------------------------------- */

typedef struct vk_pipe {
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    /* per variant (the device's, and V_F32 in the fp16 modes) and tile (tiled_kind; else
     * T32X32 only) */
    VkPipeline pipeline[V_COUNT][T_COUNT];
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
    int fp16;           /* V_F32, V_F16_STORAGE or V_F16: the shader variant and tensor dtype */
    VkDeviceSize esize; /* bytes per tensor element on the device: 4, or 2 in the fp16 modes */
    VkPipelineCache pcache;
    char *pcache_path; /* NULL: no file */
    uint8_t pcache_key[KEY_BYTES];
    bool feedback; /* VK_EXT_pipeline_creation_feedback: pipelines say if cached */
    bool coop;     /* tuning may run one-group convolutions on cooperative matrices */
    /* conv2d_gemm4 / conv2d_dw4 where channels come in fours (vec4_allowed) */
    bool gemm4, dw4;
    bool subgroup; /* subgroup arithmetic in compute shaders (KS_VK_SUBGROUP=0: not used) */
    bool prefetch; /* conv2d_gemm's PREFETCH (KS_VK_PREFETCH=0: off, the A/B switch) */
    int tile;      /* KS_VK_TILE's tile for every tiled convolution, or -1: gemm_tile picks */
    uint32_t built, built_cached; /* pipelines made, and those found in the cache */
    ks_precision precision;       /* the session's (desc->precision at device_create) */
    ks_tune_mode tune;            /* the session's: OFF, or time the kernel candidates */
    char *tune_path;              /* "<tune_cache_path>.vktune", or NULL: no file */
    /* What supports has accepted in the current reshape (vk_supports): per tensor id, the run of
     * accepted nodes that produced it (0: none); the current run; the last node asked. */
    uint32_t *run_of;
    size_t run_cap;
    uint32_t run, last_node;
    bool asked;
} vk_dev;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static VkDeviceSize align_up(VkDeviceSize v, VkDeviceSize a) {
    return (v + a - 1) / a * a;
}

/* ---- What the last device did (vk_backend.h) ---- */

static _Thread_local ks__vk_device_info g_info; /* the calling thread's last device */

void ks__vk_last_device_info(ks__vk_device_info *info_out) {
    *info_out = g_info;
}

/* ---- fp16 conversion at the host transfers (the fp16 modes) ----
 * Finite values beyond fp16's range saturate to +-65504 rather than becoming inf (an inf weight
 * or input would turn whole outputs into inf or NaN); inf and NaN stay what they are. */

static uint16_t to_f16(float f) {
    if (f > 65504.0f) f = 65504.0f;
    if (f < -65504.0f) f = -65504.0f;
    return ks__f32_to_f16(f);
}

/* The bulk conversions run 8 values per instruction where the CPU converts in hardware (x86
 * F16C, found at run time; every AArch64 CPU), with the scalar functions' results: round to
 * nearest even, the same saturation (the clamp keeps NaN: MINPS returns its second operand when
 * it is NaN; AArch64 selects NaN lanes back). One 640x640x3 input on the 2-core Zen 1 machine:
 * 8.1-9.3 ms in the scalar loop, 0.6 ms with F16C; on the H200 machine the fp16 modes of YuNet
 * 640 took 14.8 ms against 3.6 in fp32 before (docs/benchmarks-gpu.md). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define KS_VK_F16C 1
__attribute__((target("avx,f16c"))) static size_t f32_to_f16_f16c(uint16_t *dst, const float *src,
                                                                  size_t n) {
    const __m256 hi = _mm256_set1_ps(65504.0f), lo = _mm256_set1_ps(-65504.0f);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_min_ps(hi, _mm256_loadu_ps(src + i));
        v = _mm256_max_ps(lo, v);
        _mm_storeu_si128((__m128i *)(void *)(dst + i),
                         _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    return i;
}
__attribute__((target("avx,f16c"))) static size_t f16_to_f32_f16c(float *dst, const uint16_t *src,
                                                                  size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(
            dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + i))));
    return i;
}
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

static void f32_to_f16_n(uint16_t *dst, const float *src, size_t n) {
    size_t i = 0;
#if defined(KS_VK_F16C)
    if (ks__cpu_isa() & KS_ISA_AVX2) i = f32_to_f16_f16c(dst, src, n);
#elif defined(__aarch64__)
    const float32x4_t hi = vdupq_n_f32(65504.0f), lo = vdupq_n_f32(-65504.0f);
    for (; i + 4 <= n; i += 4) {
        float32x4_t v = vld1q_f32(src + i);
        uint32x4_t nan = vmvnq_u32(vceqq_f32(v, v));
        float32x4_t c = vmaxq_f32(vminq_f32(v, hi), lo);
        v = vbslq_f32(nan, v, c);
        vst1_u16(dst + i, vreinterpret_u16_f16(vcvt_f16_f32(v)));
    }
#endif
    for (; i < n; i++)
        dst[i] = to_f16(src[i]);
}

static void f16_to_f32_n(float *dst, const uint16_t *src, size_t n) {
    size_t i = 0;
#if defined(KS_VK_F16C)
    if (ks__cpu_isa() & KS_ISA_AVX2) i = f16_to_f32_f16c(dst, src, n);
#elif defined(__aarch64__)
    for (; i + 4 <= n; i += 4)
        vst1q_f32(dst + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(src + i))));
#endif
    for (; i < n; i++)
        dst[i] = ks__f16_to_f32(src[i]);
}

/* ---- The persisted VkPipelineCache (pcache_file.h) ----
 * Read at device create: a file made by another device, driver or Kestrel version is ignored, as
 * is one whose size or CRC does not match (a torn or corrupt file), each with a warning, and the
 * pipelines are built again; the driver then checks its own header inside the data. Written at
 * device destroy when the device built a pipeline the cache did not have, to "<file>.tmp<pid>"
 * and renamed over the file, so a reader never sees half a file. */

static void make_pcache_key(vk_dev *d) {
    ks__vk_pcache_key(d->pcache_key, d->props.vendorID, d->props.deviceID, d->props.driverVersion,
                      d->props.pipelineCacheUUID);
}

static void pcache_warn(const char *path, const char *why) {
    ks__fmt(g_info.cache_warning, sizeof(g_info.cache_warning), "%s: %s", path, why);
    ks__log(KS_LOG_WARN, "Vulkan pipeline cache %s: %s; ignored (pipelines are built again)", path,
            why);
}

/* d's cache file, whole (at most the format's limit), or NULL: no file, or ignored with a
 * warning. *data_out points into the returned buffer. */
static uint8_t *read_pipeline_cache(vk_dev *d, const uint8_t **data_out, size_t *bytes_out) {
    FILE *f = fopen(d->pcache_path, "rb");
    if (!f) return NULL; /* no cache yet */
    const size_t cap = KS__VK_PCACHE_HEADER_BYTES + KS__VK_PCACHE_MAX_BYTES + 1;
    long end = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    size_t size = end >= 0 && (size_t)end < cap ? (size_t)end : 0;
    uint8_t *file = size ? ks__alloc(&d->alloc, size) : NULL;
    const char *why = NULL;
    if (end < 0 || (size_t)end >= cap)
        why = end < 0 ? "cannot read it" : "too large";
    else if (size == 0)
        why = "empty";
    else if (!file)
        why = "out of memory reading it";
    else if (fseek(f, 0, SEEK_SET) != 0 || fread(file, 1, size, f) != size)
        why = "cannot read it";
    else
        why = ks__vk_pcache_check(file, size, d->pcache_key, data_out, bytes_out);
    fclose(f);
    if (why) {
        pcache_warn(d->pcache_path, why);
        ks__free(&d->alloc, file);
        return NULL;
    }
    return file;
}

/* Creates d's VkPipelineCache, from the file when it has an accepted one. Never fails the
 * device: without a cache object pipelines are built uncached. */
static void open_pipeline_cache(vk_dev *d) {
    const ks__vk_fns *vk = &d->vk;
    size_t n = 0;
    const uint8_t *data = NULL;
    uint8_t *file = d->pcache_path ? read_pipeline_cache(d, &data, &n) : NULL;
    if (!file) n = 0;
    VkPipelineCacheCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
        .initialDataSize = n,
        .pInitialData = data,
    };
    VkResult r = vk->vkCreatePipelineCache(d->device, &ci, NULL, &d->pcache);
    if (r != VK_SUCCESS && file) { /* the driver refused the data: start empty */
        pcache_warn(d->pcache_path, "the driver refused its data");
        ci.initialDataSize = 0;
        ci.pInitialData = NULL;
        r = vk->vkCreatePipelineCache(d->device, &ci, NULL, &d->pcache);
        n = 0;
    }
    if (r != VK_SUCCESS) d->pcache = VK_NULL_HANDLE;
    g_info.cache_read = d->pcache && n > 0;
    ks__free(&d->alloc, file);
}

static void save_pipeline_cache(vk_dev *d) {
    const ks__vk_fns *vk = &d->vk;
    /* nothing new: every pipeline came from the file (or none was built) */
    if (!d->pcache_path || d->built == d->built_cached) return;
    size_t n = 0;
    if (vk->vkGetPipelineCacheData(d->device, d->pcache, &n, NULL) != VK_SUCCESS || n == 0 ||
        n > KS__VK_PCACHE_MAX_BYTES)
        return;
    uint8_t *buf = ks__alloc(&d->alloc, KEY_BYTES + n);
    size_t pl = strlen(d->pcache_path);
    char *tmp = ks__alloc(&d->alloc, pl + 32);
    if (buf && tmp &&
        vk->vkGetPipelineCacheData(d->device, d->pcache, &n, buf + KEY_BYTES) == VK_SUCCESS) {
        memcpy(buf, d->pcache_key, KEY_BYTES);
        ks__vk_pcache_seal(buf, buf + KEY_BYTES, n);
        ks__fmt(tmp, pl + 32, "%s.tmp%ld", d->pcache_path, (long)getpid());
        FILE *f = fopen(tmp, "wb");
        bool ok = f && fwrite(buf, 1, KEY_BYTES + n, f) == KEY_BYTES + n;
        if (f && fclose(f) != 0) ok = false;
        if (ok && rename(tmp, d->pcache_path) != 0) ok = false;
        if (!ok) {
            if (f) remove(tmp);
            ks__fmt(g_info.cache_warning, sizeof(g_info.cache_warning), "%s: cannot write it",
                    d->pcache_path);
            ks__log(KS_LOG_WARN, "Vulkan pipeline cache %s: cannot write it", d->pcache_path);
        }
    }
    ks__free(&d->alloc, tmp);
    ks__free(&d->alloc, buf);
}

static void vk_device_destroy(void *dev_) {
    vk_dev *d = dev_;
    if (!d) return;
    const ks__vk_fns *vk = &d->vk;
    if (d->device && vk->vkDestroyDevice) {
        if (vk->vkDeviceWaitIdle) vk->vkDeviceWaitIdle(d->device);
        if (d->pcache) {
            save_pipeline_cache(d);
            vk->vkDestroyPipelineCache(d->device, d->pcache, NULL);
        }
        for (int k = 0; k < K_COUNT; k++) {
            vk_pipe *p = &d->pipes[k];
            for (int v = 0; v < V_COUNT; v++)
                for (int t = 0; t < T_COUNT; t++)
                    if (p->pipeline[v][t])
                        vk->vkDestroyPipeline(d->device, p->pipeline[v][t], NULL);
            if (p->layout) vk->vkDestroyPipelineLayout(d->device, p->layout, NULL);
            if (p->set_layout) vk->vkDestroyDescriptorSetLayout(d->device, p->set_layout, NULL);
        }
        if (d->cmd_pool) vk->vkDestroyCommandPool(d->device, d->cmd_pool, NULL);
        vk->vkDestroyDevice(d->device, NULL);
    }
    ks__free(&d->alloc, d->run_of);
    ks__free(&d->alloc, d->pcache_path);
    ks__free(&d->alloc, d->tune_path);
    /* d->instance is the process's (open_instance): kept */
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

/* One VkInstance for the process, made by the first device and never destroyed. Destroying the
 * last instance makes the loader unload the driver, and NVIDIA's driver cannot be loaded again
 * and again: on an H100 (driver 580.159) the 31st create/destroy cycle of a process failed with
 * VK_ERROR_INCOMPATIBLE_DRIVER, so an app (or a test) that creates sessions one after another
 * lost the GPU. A failed attempt (no loader, no driver) is not kept: a later device tries
 * again. Instance-level calls are safe from several threads; the lock covers the creation. */
static struct {
    pthread_mutex_t lock;
    bool open;
    VkInstance instance;
    ks__vk_fns fns; /* the global and instance functions */
} g_instance = {PTHREAD_MUTEX_INITIALIZER, false, VK_NULL_HANDLE, {0}};

static ks_status create_instance(ks__vk_fns *vk, VkInstance *out, const ks_allocator *alloc,
                                 char *err, size_t cap);

/* Validation (vk_backend.h, for tests): asked for before the instance exists. */
static struct {
    bool requested;
    int state;            /* -1 not asked or no instance yet, 0 the layer is not installed, 1 on */
    pthread_mutex_t lock; /* the messenger may be called from any session's thread */
    uint32_t errors;
    char last[512];
} g_validation = {false, -1, PTHREAD_MUTEX_INITIALIZER, 0, ""};

void ks__vk_validation_request(void) {
    g_validation.requested = true;
}

int ks__vk_validation_state(uint32_t *errors_out, const char **last_out) {
    pthread_mutex_lock(&g_validation.lock);
    if (errors_out) *errors_out = g_validation.errors;
    pthread_mutex_unlock(&g_validation.lock);
    if (last_out) *last_out = g_validation.last;
    return g_validation.state;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL
on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT type,
              const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
    (void)type;
    (void)user;
    if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        const char *msg = data && data->pMessage ? data->pMessage : "?";
        pthread_mutex_lock(&g_validation.lock);
        g_validation.errors++;
        ks__fmt(g_validation.last, sizeof(g_validation.last), "%s", msg);
        pthread_mutex_unlock(&g_validation.lock);
        ks__log(KS_LOG_ERROR, "Vulkan validation: %s", msg);
    }
    return VK_FALSE;
}

static bool has_layer(PFN_vkGetInstanceProcAddr gipa, const ks_allocator *alloc, const char *name) {
    PFN_vkEnumerateInstanceLayerProperties enum_layers =
        (PFN_vkEnumerateInstanceLayerProperties)gipa(NULL, "vkEnumerateInstanceLayerProperties");
    uint32_t n = 0;
    if (!enum_layers || enum_layers(&n, NULL) != VK_SUCCESS || n == 0) return false;
    VkLayerProperties *l = ks__calloc(alloc, n, sizeof(*l));
    bool found = false;
    if (l && enum_layers(&n, l) >= 0)
        for (uint32_t i = 0; i < n && !found; i++)
            found = strcmp(l[i].layerName, name) == 0;
    ks__free(alloc, l);
    return found;
}

static ks_status open_instance(vk_dev *d, char *err, size_t cap) {
    ks_status st = KS_STATUS_OK;
    pthread_mutex_lock(&g_instance.lock);
    if (!g_instance.open) {
        memset(&g_instance.fns, 0, sizeof(g_instance.fns));
        st = create_instance(&g_instance.fns, &g_instance.instance, &d->alloc, err, cap);
        g_instance.open = st == KS_STATUS_OK;
    }
    if (!st) {
        d->vk = g_instance.fns;
        d->instance = g_instance.instance;
    }
    pthread_mutex_unlock(&g_instance.lock);
    return st;
}

static ks_status create_instance(ks__vk_fns *vk, VkInstance *out, const ks_allocator *alloc,
                                 char *err, size_t cap) {
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
        VkExtensionProperties *ex = ks__calloc(alloc, next, sizeof(*ex));
        if (!ex) return ks__fail(err, cap, KS_STATUS_OUT_OF_MEMORY, "Vulkan: out of memory");
        if (vk->vkEnumerateInstanceExtensionProperties(NULL, &next, ex) >= 0)
            portability =
                PORTABILITY_FLAG != 0 && has_extension(ex, next, "VK_KHR_portability_enumeration");
        ks__free(alloc, ex);
    }
    const char *ext[2], *layer = "VK_LAYER_KHRONOS_validation";
    uint32_t num_ext = 0;
    if (portability) ext[num_ext++] = "VK_KHR_portability_enumeration";
    bool validate = g_validation.requested && has_layer(vk->vkGetInstanceProcAddr, alloc, layer);
    if (g_validation.requested) g_validation.state = validate ? 1 : 0;
    if (validate) ext[num_ext++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkDebugUtilsMessengerCreateInfoEXT mci = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
        .pfnUserCallback = on_validation,
    };
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
        .enabledExtensionCount = num_ext,
        .ppEnabledExtensionNames = num_ext ? ext : NULL,
        .enabledLayerCount = validate ? 1u : 0u,
        .ppEnabledLayerNames = validate ? &layer : NULL,
        .pNext = validate ? &mci : NULL,
    };
    VkResult r = vk->vkCreateInstance(&ici, NULL, out);
    if (r != VK_SUCCESS) {
        *out = VK_NULL_HANDLE;
        return ks__fail(err, cap, KS_STATUS_UNSUPPORTED, "Vulkan: no driver (vkCreateInstance: %s)",
                        ks__vk_result_string(r));
    }
    st = ks__vk_load_instance(vk, *out, err, cap);
    if (!st && validate) { /* lives as long as the instance: the process */
        PFN_vkCreateDebugUtilsMessengerEXT make =
            (PFN_vkCreateDebugUtilsMessengerEXT)vk->vkGetInstanceProcAddr(
                *out, "vkCreateDebugUtilsMessengerEXT");
        VkDebugUtilsMessengerEXT m;
        if (!make || make(*out, &mci, NULL, &m) != VK_SUCCESS) g_validation.state = 0;
    }
    if (st && vk->vkDestroyInstance) vk->vkDestroyInstance(*out, NULL);
    if (st) *out = VK_NULL_HANDLE;
    return st;
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

/* Whether the device's compute shaders have subgroup arithmetic (subgroupAdd, subgroupMax:
 * pool2d_wide_sg) and KS_VK_SUBGROUP is not "0" (the A/B switch of bench/gpu). Vulkan 1.1 (the
 * least the backend takes) reports it in VkPhysicalDeviceSubgroupProperties. */
static bool subgroup_arith(vk_dev *d) {
    const char *env = getenv("KS_VK_SUBGROUP");
    if (env && strcmp(env, "0") == 0) return false;
    PFN_vkGetPhysicalDeviceProperties2 props2 =
        (PFN_vkGetPhysicalDeviceProperties2)d->vk.vkGetInstanceProcAddr(
            d->instance, "vkGetPhysicalDeviceProperties2");
    if (!props2) return false;
    VkPhysicalDeviceSubgroupProperties sg = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
    };
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &sg};
    props2(d->phys, &p2);
    const VkSubgroupFeatureFlags need =
        VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
    return (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
           (sg.supportedOperations & need) == need && sg.subgroupSize >= 1;
}

/* Whether the device multiplies 16 x 16 by 16 x 8 fp16 matrices into fp32 in subgroups of 32
 * (conv2d_coop.comp's shapes; NVIDIA's tensor cores list it) and KS_VK_COOP is not "0" (an
 * escape hatch and the A/B switch of bench/gpu; docs/vulkan.md). */
static bool coop_shape_ok(vk_dev *d) {
    const char *env = getenv("KS_VK_COOP");
    if (env && strcmp(env, "0") == 0) return false;
    ks__vk_fns *vk = &d->vk;
    PFN_vkGetPhysicalDeviceProperties2 props2 =
        (PFN_vkGetPhysicalDeviceProperties2)vk->vkGetInstanceProcAddr(
            d->instance, "vkGetPhysicalDeviceProperties2");
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV cm =
        (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)vk->vkGetInstanceProcAddr(
            d->instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
    if (!props2 || !cm) return false;
    VkPhysicalDeviceSubgroupProperties sg = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
    };
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &sg};
    props2(d->phys, &p2);
    if (sg.subgroupSize != 32 || !(sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT)) return false;
    uint32_t n = 0;
    if (cm(d->phys, &n, NULL) != VK_SUCCESS || n == 0 || n > 64) return false;
    VkCooperativeMatrixPropertiesNV list[64];
    for (uint32_t i = 0; i < n; i++)
        list[i] = (VkCooperativeMatrixPropertiesNV){
            .sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV};
    if (cm(d->phys, &n, list) < 0) return false;
    for (uint32_t i = 0; i < n; i++) {
        const VkCooperativeMatrixPropertiesNV *q = &list[i];
        if (q->MSize == 16 && q->NSize == 8 && q->KSize == 16 &&
            q->AType == VK_COMPONENT_TYPE_FLOAT16_NV && q->BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
            q->CType == VK_COMPONENT_TYPE_FLOAT32_NV && q->DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
            q->scope == VK_SCOPE_SUBGROUP_NV)
            return true;
    }
    return false;
}

static ks_status open_device(vk_dev *d, char *err, size_t cap) {
    ks__vk_fns *vk = &d->vk;
    ks_status st;
    if ((st = open_instance(d, err, cap)) || (st = pick_device(d, err, cap))) return st;
    /* A portability driver's device must enable VK_KHR_portability_subset when it lists it. The
     * instance asks for Vulkan 1.1, so float16 arithmetic and creation feedback (core in 1.2 and
     * 1.3) come from their extensions. */
    bool subset = false, has_f16 = false, has_feedback = false, has_coop = false, has_vmm = false;
    uint32_t next = 0;
    if (vk->vkEnumerateDeviceExtensionProperties(d->phys, NULL, &next, NULL) == VK_SUCCESS &&
        next) {
        VkExtensionProperties *ex = ks__calloc(&d->alloc, next, sizeof(*ex));
        if (!ex) return ks__fail(err, cap, KS_STATUS_OUT_OF_MEMORY, "Vulkan: out of memory");
        if (vk->vkEnumerateDeviceExtensionProperties(d->phys, NULL, &next, ex) >= 0) {
            subset = has_extension(ex, next, "VK_KHR_portability_subset");
            has_f16 = has_extension(ex, next, "VK_KHR_shader_float16_int8");
            has_feedback = has_extension(ex, next, "VK_EXT_pipeline_creation_feedback");
            has_coop = has_extension(ex, next, "VK_NV_cooperative_matrix");
            has_vmm = has_extension(ex, next, "VK_KHR_vulkan_memory_model");
        }
        ks__free(&d->alloc, ex);
    }
    /* The precision the session asked for, as far as the device can. */
    VkPhysicalDeviceVulkanMemoryModelFeaturesKHR fvm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES_KHR,
    };
    VkPhysicalDeviceCooperativeMatrixFeaturesNV fcm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
        .pNext = &fvm,
    };
    has_coop = has_coop && has_vmm;
    VkPhysicalDeviceShaderFloat16Int8FeaturesKHR f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR,
        .pNext = has_coop ? &fcm : NULL,
    };
    VkPhysicalDevice16BitStorageFeatures s16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
        .pNext = has_f16 ? &f16 : NULL,
    };
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = &s16};
    vk->vkGetPhysicalDeviceFeatures2(d->phys, &f2);
    int want = d->precision == KS_PRECISION_FP16           ? V_F16
               : d->precision == KS_PRECISION_FP16_STORAGE ? V_F16_STORAGE
                                                           : V_F32;
    d->fp16 = want;
    g_info.fallback[0] = 0;
    if (d->fp16 == V_F16 && !(has_f16 && f16.shaderFloat16)) {
        d->fp16 = V_F16_STORAGE;
        ks__fmt(g_info.fallback, sizeof(g_info.fallback),
                "'%s' lacks shaderFloat16: fp16 storage with fp32 arithmetic", d->props.deviceName);
    }
    if (d->fp16 != V_F32 && !s16.storageBuffer16BitAccess) {
        d->fp16 = V_F32;
        ks__fmt(g_info.fallback, sizeof(g_info.fallback),
                "'%s' lacks storageBuffer16BitAccess: fp32", d->props.deviceName);
    }
    static const char *const mode_name[V_COUNT] = {"fp32", "fp16 storage, fp32 arithmetic",
                                                   "fp16 storage and arithmetic (sums in fp32)"};
    if (g_info.fallback[0])
        ks__log(KS_LOG_WARN, "precision %s: Vulkan device %s",
                want == V_F16 ? "fp16" : "fp16-storage", g_info.fallback);
    else if (want != V_F32)
        ks__log(KS_LOG_INFO, "precision %s: Vulkan device '%s' runs %s",
                want == V_F16 ? "fp16" : "fp16-storage", d->props.deviceName, mode_name[want]);
    d->esize = d->fp16 == V_F32 ? 4u : 2u;
    g_info.fp16 = d->fp16;
    d->gemm4 = vec4_allowed("gemm");
    d->dw4 = vec4_allowed("dw");
    const char *pf = getenv("KS_VK_PREFETCH");
    d->prefetch = !(pf && strcmp(pf, "0") == 0);
    d->tile = forced_tile();
    d->subgroup = subgroup_arith(d);
    g_info.subgroup_arith = d->subgroup;
    d->coop = d->fp16 == V_F16 && has_f16 && has_coop && fcm.cooperativeMatrix &&
              fvm.vulkanMemoryModel && coop_shape_ok(d);
    g_info.coop_matrix = d->coop;
    if (d->coop)
        ks__log(KS_LOG_INFO, "Vulkan device '%s': cooperative matrices (a tuning candidate)",
                d->props.deviceName);
    VkPhysicalDeviceVulkanMemoryModelFeaturesKHR en_vm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES_KHR,
        .vulkanMemoryModel = VK_TRUE,
    };
    VkPhysicalDeviceCooperativeMatrixFeaturesNV en_cm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
        .pNext = &en_vm,
        .cooperativeMatrix = VK_TRUE,
    };
    VkPhysicalDeviceShaderFloat16Int8FeaturesKHR en_f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR,
        .pNext = d->coop ? &en_cm : NULL,
        .shaderFloat16 = VK_TRUE,
    };
    VkPhysicalDevice16BitStorageFeatures en_s16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
        .pNext = d->fp16 == V_F16 ? &en_f16 : NULL,
        .storageBuffer16BitAccess = VK_TRUE,
    };
    const char *ext[5];
    uint32_t num_ext = 0;
    if (subset) ext[num_ext++] = "VK_KHR_portability_subset";
    if (d->fp16 == V_F16) ext[num_ext++] = "VK_KHR_shader_float16_int8";
    if (has_feedback) ext[num_ext++] = "VK_EXT_pipeline_creation_feedback";
    if (d->coop) {
        ext[num_ext++] = "VK_NV_cooperative_matrix";
        ext[num_ext++] = "VK_KHR_vulkan_memory_model";
    }
    d->feedback = has_feedback;
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
        .enabledExtensionCount = num_ext,
        .ppEnabledExtensionNames = num_ext ? ext : NULL,
        .pNext = d->fp16 != V_F32 ? &en_s16 : NULL,
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
    make_pcache_key(d);
    open_pipeline_cache(d);
    return KS_STATUS_OK;
}

static ks_status vk_device_create(const ks_allocator *alloc, const ks_session_desc *desc,
                                  void **dev_out, char *err, size_t cap) {
    ks_allocator a = ks__allocator_or_default(alloc);
    vk_dev *d = ks__calloc(&a, 1, sizeof(*d));
    if (!d) return ks__fail(err, cap, KS_STATUS_OUT_OF_MEMORY, "Vulkan: out of memory");
    d->alloc = a;
    d->precision = desc ? desc->precision : KS_PRECISION_DEFAULT;
    d->tune = desc ? desc->tune : KS_TUNE_OFF;
    g_info = (ks__vk_device_info){.pipelines_from_cache = -1};
    const char *tp = desc ? desc->tune_cache_path : NULL;
    if (tp && tp[0]) {
        size_t n = strlen(tp);
        d->pcache_path = ks__alloc(&a, n + sizeof(".vkpipe"));
        d->tune_path = ks__alloc(&a, n + sizeof(".vktune"));
        if (!d->pcache_path || !d->tune_path) {
            ks__free(&a, d->pcache_path);
            ks__free(&a, d->tune_path);
            ks__free(&a, d);
            return ks__fail(err, cap, KS_STATUS_OUT_OF_MEMORY, "Vulkan: out of memory");
        }
        memcpy(d->pcache_path, tp, n);
        memcpy(d->pcache_path + n, ".vkpipe", sizeof(".vkpipe"));
        memcpy(d->tune_path, tp, n);
        memcpy(d->tune_path + n, ".vktune", sizeof(".vktune"));
    }
    ks_status st = open_device(d, err, cap);
    if (st) {
        vk_device_destroy(d);
        return st;
    }
    *dev_out = d;
    return KS_STATUS_OK;
}

static ks_status vk_identity(char *buf, size_t cap, char *err, size_t err_cap) {
    vk_dev *d = ks__calloc(NULL, 1, sizeof(*d));
    if (!d) return ks__fail(err, err_cap, KS_STATUS_OUT_OF_MEMORY, "Vulkan: out of memory");
    d->alloc = ks__allocator_or_default(NULL);
    ks_status st = open_instance(d, err, err_cap);
    if (!st) st = pick_device(d, err, err_cap);
    if (!st) {
        snprintf(buf, cap, "vulkan %04x:%04x driver %08x %s", d->props.vendorID, d->props.deviceID,
                 d->props.driverVersion, d->props.deviceName);
        for (char *p = buf; *p; p++)
            if (*p == '\t' || *p == '\n' || *p == '\r') *p = ' ';
    }
    ks__free(NULL, d);
    return st;
}

/* Unpacks n bytes of LEB128 (cmake/vulkan.cmake) into exactly `words` 32-bit words; false when
 * they hold another count, a group past 32 bits or a truncated word. */
static bool spv_unpack(const uint8_t *in, size_t n, uint32_t *out, size_t words) {
    size_t i = 0, w = 0;
    while (i < n) {
        uint32_t v = 0;
        unsigned shift = 0;
        for (;;) {
            if (i >= n || shift > 28) return false;
            uint8_t b = in[i++];
            if (shift == 28 && (b & 0x70)) return false; /* bits past 32 */
            v |= (uint32_t)(b & 0x7f) << shift;
            if (!(b & 0x80)) break;
            shift += 7;
        }
        if (w >= words) return false;
        out[w++] = v;
    }
    return w == words;
}

/* The pipeline of a shader family in variant v, made on first use. */
static ks_status ensure_pipe(vk_dev *d, int kind, int v, int tile, char *err, size_t cap) {
    vk_pipe *p = &d->pipes[kind];
    const kernel_info *ki = &k_kernels[kind];
    const ks__vk_fns *vk = &d->vk;
    if (!tiled_kind(kind)) tile = T32X32;
    if (p->pipeline[v][tile]) return KS_STATUS_OK;
    if (!ki->spv[v]) {
        static const char *const variant_name[V_COUNT] = {"fp32", "fp16-storage", "fp16"};
        return ks__fail(err, cap, KS_STATUS_UNSUPPORTED, "Vulkan: shader %s has no %s variant",
                        ki->name, variant_name[v]);
    }
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
    size_t words = ki->spv_words[v];
    uint32_t *code = ks__alloc(&d->alloc, words * sizeof(uint32_t));
    if (!code)
        return ks__fail(err, cap, KS_STATUS_OUT_OF_MEMORY,
                        "Vulkan: out of memory unpacking the %s shader", ki->name);
    if (!spv_unpack(ki->spv[v], ki->spv_packed[v], code, words)) {
        ks__free(&d->alloc, code);
        return ks__fail(err, cap, KS_STATUS_INTERNAL,
                        "Vulkan: the embedded %s shader does not unpack to %zu words", ki->name,
                        words);
    }
    VkShaderModuleCreateInfo smi = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = words * sizeof(uint32_t),
        .pCode = code,
    };
    VkShaderModule sm = VK_NULL_HANDLE;
    step = "vkCreateShaderModule";
    r = vk->vkCreateShaderModule(d->device, &smi, NULL, &sm);
    ks__free(&d->alloc, code);
    if (r) goto error;
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
    /* conv2d_gemm.comp: TM, TN, PREFETCH (constant_id 0, 1, 2) */
    gemm_spec spec = {k_tiles[tile].m, k_tiles[tile].n, d->prefetch ? VK_TRUE : VK_FALSE};
    const VkSpecializationMapEntry spec_map[3] = {
        {0, offsetof(gemm_spec, tm), sizeof(int32_t)},
        {1, offsetof(gemm_spec, tn), sizeof(int32_t)},
        {2, offsetof(gemm_spec, prefetch), sizeof(VkBool32)},
    };
    const VkSpecializationInfo spec_info = {3, spec_map, sizeof(spec), &spec};
    if (tiled_kind(kind)) ci.stage.pSpecializationInfo = &spec_info;
    VkPipelineCreationFeedbackEXT fb = {0}, fb_stage = {0};
    VkPipelineCreationFeedbackCreateInfoEXT fci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO_EXT,
        .pPipelineCreationFeedback = &fb,
        .pipelineStageCreationFeedbackCount = 1,
        .pPipelineStageCreationFeedbacks = &fb_stage,
    };
    if (d->feedback) ci.pNext = &fci;
    step = "vkCreateComputePipelines";
    r = vk->vkCreateComputePipelines(d->device, d->pcache, 1, &ci, NULL, &p->pipeline[v][tile]);
    vk->vkDestroyShaderModule(d->device, sm, NULL);
    if (r == VK_SUCCESS) {
        d->built++;
        bool hit =
            d->feedback && (fb.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT_EXT) &&
            (fb.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT_EXT);
        if (hit) d->built_cached++;
        g_info.pipelines_built = d->built;
        g_info.pipelines_from_cache = d->feedback ? (int32_t)d->built_cached : -1;
        return KS_STATUS_OK;
    }
    p->pipeline[v][tile] = VK_NULL_HANDLE;
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

/* A constant stored as F16 (a .ksm written with `ks-convert --weights fp16`) that one storage
 * buffer descriptor can hold once widened to F32: convolution weights, bias and slopes may be
 * one. upload_constants widens it (or, into an fp16 region, copies it as it is). */
static bool const_f16(const vk_dev *d, const ks__rt_tensor *t) {
    if (!t || t->dtype != KS_DTYPE_F16 || t->quant->count != 0 || !t->data) return false;
    int64_t n = ks__rt_numel(t);
    return n >= 1 && (uint64_t)n * 4u <= d->props.limits.maxStorageBufferRange &&
           n < ((int64_t)1 << 30);
}

/* Every input in [first, first + n) that is present is plain F32. */
static bool inputs_f32(const vk_dev *d, const ks__kernel_ctx *ctx, uint32_t first, uint32_t n) {
    for (uint32_t k = first; k < first + n && k < ctx->num_inputs; k++)
        if (ctx->in[k] && !plain_f32(d, ctx->in[k])) return false;
    return true;
}

static bool set_groups(const vk_dev *d, dispatch *sp) {
    uint32_t groups = (sp->count + GROUP_SIZE - 1) / GROUP_SIZE;
    uint32_t max_x = d->props.limits.maxComputeWorkGroupCount[0];
    sp->groups_x = groups < max_x ? groups : max_x;
    sp->groups_y = (groups + sp->groups_x - 1) / sp->groups_x;
    return sp->groups_y <= d->props.limits.maxComputeWorkGroupCount[1];
}

/* conv2d_gemm's work groups for an output of m pixels x n channels on `tile`: one per tile. */
static int64_t tiles_of(int64_t m, int64_t n, int tile) {
    return ((m + k_tiles[tile].m - 1) / k_tiles[tile].m) *
           ((n + k_tiles[tile].n - 1) / k_tiles[tile].n);
}

/* A tiled convolution's dispatch on another tile of conv2d_gemm.comp (or, for conv2d_coop.comp,
 * its own 32 x 32): one group of 64 per tile. False: too many groups for the device. */
static bool retile(const vk_dev *d, dispatch *sp, int tile) {
    const pc_conv *c = &sp->pc.conv;
    int64_t tiles = tiles_of(c->count / (uint32_t)c->oc, c->oc, tile);
    if (tiles * GROUP_SIZE > (int64_t)UINT32_MAX) return false;
    sp->tile = tile;
    sp->count = (uint32_t)(tiles * GROUP_SIZE);
    return set_groups(d, sp);
}

/* The profiler's name of a dispatch's kernel: the shader's, with the tile where not 32 x 32. */
static const char *kernel_name(const dispatch *sp) {
    if (tiled_kind(sp->kind)) return k_tiles[sp->tile].prof_name[sp->kind == K_CONV_GEMM4];
    return k_kernels[sp->kind].prof_name;
}

static ks_status refuse(char *why, size_t cap, const char *what) {
    return ks__fail(why, cap, KS_STATUS_UNSUPPORTED, "%s", what);
}

/* A fused activation the shaders apply (act.glsl): not PRELU (CONV2D's own) nor TABLE. */
static bool float_act(int32_t act) {
    return act >= KS_ACT_NONE && act <= KS_ACT_SILU;
}

/* Every size the index arithmetic of a shader forms stays far inside int32. */
static bool small(int64_t v) {
    return v >= -((int64_t)1 << 24) && v <= ((int64_t)1 << 24);
}

/* Appends a step of `kind` with `count` invocations; its operands are the node's inputs in order,
 * then output 0. The caller keeps num_steps within KS__MAX_PARTS (the op arity bounds it). */
static dispatch *add_step(node_plan *np, int kind, int64_t count) {
    dispatch *sp = &np->steps[np->num_steps++];
    memset(sp, 0, sizeof(*sp));
    sp->kind = kind;
    sp->count = (uint32_t)count;
    uint32_t nb = k_kernels[kind].num_bindings;
    for (uint32_t i = 0; i + 1 < nb; i++)
        sp->ref[i] = (int8_t)i;
    sp->ref[nb - 1] = -1;
    return sp;
}

/* Row-major element strides of dims. */
static void strides_of(int32_t rank, const int64_t *dims, int64_t *s) {
    int64_t v = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
        s[d] = v;
        v *= dims[d];
    }
}

/* A copy step (copy.comp) from operand `in` to operand `out` over dims, with source and
 * destination element strides and bases. Extent-1 dims are dropped and neighbours contiguous on
 * both sides merged, so that MAX_DIMS index dims suffice for every layout op of the models. */
static ks_status add_copy(node_plan *np, int in, int out, int32_t rank, const int64_t *dims,
                          const int64_t *ss, int64_t sbase, const int64_t *ds, int64_t dbase,
                          int32_t act, float alpha, char *why, size_t cap) {
    int64_t n[KS_MAX_RANK + 2], s[KS_MAX_RANK + 2], t[KS_MAX_RANK + 2], count = 1;
    int32_t r = 0;
    for (int32_t k = 0; k < rank; k++) {
        count *= dims[k];
        if (dims[k] == 1) continue;
        if (r > 0 && s[r - 1] == ss[k] * dims[k] && t[r - 1] == ds[k] * dims[k]) {
            n[r - 1] *= dims[k];
            s[r - 1] = ss[k];
            t[r - 1] = ds[k];
            continue;
        }
        n[r] = dims[k], s[r] = ss[k], t[r] = ds[k];
        r++;
    }
    if (count < 1) return refuse(why, cap, "empty copy");
    if (r > (int32_t)MAX_DIMS) return refuse(why, cap, "more than 6 dims to index");
    dispatch *sp = add_step(np, K_COPY, count);
    pc_copy *pc = &sp->pc.copy;
    pc->count = (uint32_t)count;
    pc->rank = r;
    pc->sbase = (int32_t)sbase;
    pc->dbase = (int32_t)dbase;
    pc->act = act;
    pc->alpha = alpha;
    for (int32_t k = 0; k < r; k++) {
        pc->dims[k] = (int32_t)n[k];
        pc->ss[k] = (int32_t)s[k];
        pc->ds[k] = (int32_t)t[k];
    }
    sp->ref[0] = (int8_t)in;
    sp->ref[1] = (int8_t)out;
    return KS_STATUS_OK;
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

static ks_status plan_binary(const vk_dev *d, ks__kernel_ctx *ctx, node_plan *np, char *why,
                             size_t cap) {
    const ks__rt_tensor *y = ctx->out[0];
    if (ctx->num_inputs != 2 || !plain_f32(d, ctx->in[0]) || !plain_f32(d, ctx->in[1]))
        return refuse(why, cap, "inputs are not two plain F32 tensors");
    if (y->rank > 4) return refuse(why, cap, "rank above 4");
    int32_t act = ctx->node->ip[0];
    if (!float_act(act)) return refuse(why, cap, "fused activation");
    dispatch *sp = add_step(np, K_BINARY, ks__rt_numel(y));
    pc_binary *pc = &sp->pc.binary;
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
    pc->count = sp->count;
    pc->act = act;
    pc->alpha = ctx->node->fp[0];
    pc->d1 = (uint32_t)od[1];
    pc->d2 = (uint32_t)od[2];
    pc->d3 = (uint32_t)od[3];
    return KS_STATUS_OK;
}

/* The unary ops beyond the activations (unary.comp's UN_* codes). */
enum {
    UN_EXP = 16,
    UN_SQRT,
    UN_RSQRT,
    UN_ABS,
    UN_NEG,
    UN_FLOOR,
    UN_CEIL,
    UN_LOG,
    UN_CLIP,
    UN_ELU,
    UN_HARD_SIGMOID
};

static ks_status plan_unary(const vk_dev *d, ks__kernel_ctx *ctx, node_plan *np, char *why,
                            size_t cap) {
    if (ctx->num_inputs != 1 || !plain_f32(d, ctx->in[0]) ||
        ks__rt_numel(ctx->in[0]) != ks__rt_numel(ctx->out[0]))
        return refuse(why, cap, "the input is not plain F32 of the output's size");
    static const struct {
        uint32_t op;
        int32_t code;
    } map[] = {
        {KS_OP_RELU, KS_ACT_RELU},
        {KS_OP_RELU6, KS_ACT_RELU6},
        {KS_OP_RELU_N1_TO_1, KS_ACT_RELU_N1_TO_1},
        {KS_OP_LEAKY_RELU, KS_ACT_LEAKY_RELU},
        {KS_OP_SIGMOID, KS_ACT_SIGMOID},
        {KS_OP_TANH, KS_ACT_TANH},
        {KS_OP_HARD_SWISH, KS_ACT_HARD_SWISH},
        {KS_OP_EXP, UN_EXP},
        {KS_OP_SQRT, UN_SQRT},
        {KS_OP_RSQRT, UN_RSQRT},
        {KS_OP_ABS, UN_ABS},
        {KS_OP_NEG, UN_NEG},
        {KS_OP_FLOOR, UN_FLOOR},
        {KS_OP_CEIL, UN_CEIL},
        {KS_OP_LOG, UN_LOG},
        {KS_OP_CLIP, UN_CLIP},
        {KS_OP_ELU, UN_ELU},
        {KS_OP_HARD_SIGMOID, UN_HARD_SIGMOID},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (map[i].op != ctx->node->op) continue;
        dispatch *sp = add_step(np, K_UNARY, ks__rt_numel(ctx->out[0]));
        sp->pc.unary = (pc_unary){sp->count, map[i].code, ctx->node->fp[0], ctx->node->fp[1]};
        return KS_STATUS_OK;
    }
    return refuse(why, cap, "op not implemented");
}

/* conv2d_gemm's tile: KS_VK_TILE's, else the cost model's: 32 pixels x 16 channels for every
 * shape. On an H100 (fp32, per-node profiles of the ten benchmark models with each tile forced,
 * bench/gpu/tiles.py) it ran the GEMM convolutions in 6.66 ms in all against 7.87 with 32x32,
 * and within 2.2 % of the best tile chosen per node (6.52 ms); no rule on the groups' count did
 * better than the constant (docs/vulkan.md, "GEMM tiles by specialization constants"). Tuning
 * times the others per shape. */
static int gemm_tile(const vk_dev *d) {
    return d->tile >= 0 ? d->tile : T32X16;
}

/* CONV2D (deconv false) and CONV2D_TRANSPOSE: the core's geometry, as for the CPU reference. */
static ks_status plan_conv(const vk_dev *d, ks__kernel_ctx *ctx, node_plan *np, char *why,
                           size_t cap, bool deconv) {
    ks__conv_geom g;
    ks_status st = deconv ? ks__tconv_geometry(ctx, &g) : ks__conv_geometry(ctx, &g);
    if (st) return st;
    if (!deconv) {
        if ((st = ks__conv_check_slope(ctx, g.act, g.oc))) return st;
        if (ctx->node->ip[12] != 0) return refuse(why, cap, "fused form");
    }
    if (!(float_act(g.act) || (!deconv && g.act == KS_ACT_PRELU)))
        return refuse(why, cap, "fused activation");
    for (uint32_t k = 0; k < (deconv ? 4u : 5u) && k < ctx->num_inputs; k++) {
        bool weights = k == 1 || k == 2 || (!deconv && k == 4); /* may be F16 constants */
        if (ctx->in[k] && !plain_f32(d, ctx->in[k]) && !(weights && const_f16(d, ctx->in[k])))
            return refuse(why, cap, "an input is not plain F32");
    }
    if (!ctx->in[0] || !ctx->in[1]) return refuse(why, cap, "an input is not plain F32");
    const ks__rt_tensor *y = ctx->out[0], *b = ks__kernel_input(ctx, 2);
    const ks__rt_tensor *res = ks__kernel_input(ctx, 3);
    const ks__rt_tensor *slope = deconv ? NULL : ks__kernel_input(ctx, 4);
    /* the fp16 modes keep weights, bias and slopes fp32 (wide_binding): constants only */
    if (d->fp16 != V_F32 && (!ctx->in[1]->data || (b && !b->data) || (slope && !slope->data)))
        return refuse(why, cap, "weights computed at run time (fp16 modes)");
    int64_t count = g.n * g.oh * g.ow * g.oc;
    if (y->rank != 4 || ks__rt_numel(y) != count || (b && ks__rt_numel(b) != g.oc) ||
        (res && ks__rt_numel(res) != count) || (slope && ks__rt_numel(slope) != g.oc))
        return refuse(why, cap, "operand sizes");
    if (!small(g.ih) || !small(g.iw) || !small(g.pt) || !small(g.pl) || !small(g.sh) ||
        !small(g.sw) || !small((g.kh - 1) * g.dh) || !small((g.kw - 1) * g.dw) || !small(g.oh) ||
        !small(g.ow))
        return refuse(why, cap, "geometry too large");
    if (count > (int64_t)UINT32_MAX) return refuse(why, cap, "more than 2^32 outputs");
    /* One group (not depthwise or grouped): the tiled implicit GEMM, one group of 64 invocations
     * per output tile (conv2d_gemm.comp, the tile gemm_tile's); else one invocation per output
     * element. */
    bool gemm = !deconv && g.icg == g.ic && g.ocg == g.oc;
    int tile = gemm_tile(d);
    int64_t tiles = tiles_of(g.n * g.oh * g.ow, g.oc, tile);
    if (gemm && tiles * GROUP_SIZE > (int64_t)UINT32_MAX) gemm = false;
    /* vector loads where a pixel's channels and a weight row's taps come in fours (every
     * region starts d->align >= 16 bytes into the device buffer); fp32 tensors only: with fp16
     * tensors the H100 ran BlazePose heavy's GEMM convolutions in 5.13 ms with them against
     * 4.01 without (docs/vulkan.md, "Vector loads") */
    int gemm_kind = d->gemm4 && d->fp16 == V_F32 && g.ic % 4 == 0 ? K_CONV_GEMM4 : K_CONV_GEMM;
    /* depthwise (one channel per group) in fours: four channels of a pixel per invocation */
    bool dw4 = !deconv && !gemm && d->dw4 && g.icg == 1 && g.ocg == 1 && g.oc % 4 == 0;
    /* Few outputs and a long reduction: one group of 64 per output element, K split among them
     * (conv2d_wide.comp). The tiled GEMM gives such a node one or two groups that walk K alone
     * (UltraFace's 4x5 heads over 256 channels, K = 2304: 0.107 ms each on an H100); 1024
     * outputs are one GEMM tile, one group of 64 invocations for the whole node. */
    bool wide = !deconv && count <= 1024 && g.kh * g.kw * g.icg >= 512;
    dispatch *sp = add_step(np,
                            deconv ? K_DECONV
                            : wide ? K_CONV_WIDE
                            : gemm ? gemm_kind
                            : dw4  ? K_CONV_DW4
                                   : K_CONV,
                            wide   ? count * GROUP_SIZE
                            : gemm ? tiles * GROUP_SIZE
                            : dw4  ? count / 4
                                   : count);
    if (tiled_kind(sp->kind)) sp->tile = tile;
    pc_conv *pc = &sp->pc.conv;
    pc->count = (uint32_t)count;
    pc->ih = (int32_t)g.ih, pc->iw = (int32_t)g.iw, pc->ic = (int32_t)g.ic;
    pc->oh = (int32_t)g.oh, pc->ow = (int32_t)g.ow, pc->oc = (int32_t)g.oc;
    pc->kh = (int32_t)g.kh, pc->kw = (int32_t)g.kw, pc->icg = (int32_t)g.icg;
    pc->ocg = (int32_t)g.ocg;
    pc->sh = (int32_t)g.sh, pc->sw = (int32_t)g.sw, pc->dh = (int32_t)g.dh, pc->dw = (int32_t)g.dw;
    pc->pt = (int32_t)g.pt, pc->pl = (int32_t)g.pl;
    pc->act = g.act;
    pc->alpha = g.alpha;
    pc->flags = (b ? 1u : 0u) | (res ? 2u : 0u) | (slope ? 4u : 0u);
    return KS_STATUS_OK;
}

static ks_status plan_pool(const vk_dev *d, ks__kernel_ctx *ctx, node_plan *np, char *why,
                           size_t cap) {
    ks__pool_geom g;
    ks_status st = ks__pool_geometry(ctx, &g);
    if (st) return st;
    if (!plain_f32(d, ctx->in[0])) return refuse(why, cap, "the input is not plain F32");
    if (!float_act(g.act)) return refuse(why, cap, "fused activation");
    int64_t count = g.n * g.oh * g.ow * g.c;
    if (ks__rt_numel(ctx->out[0]) != count) return refuse(why, cap, "operand sizes");
    if (!small(g.ih) || !small(g.iw) || !small(g.kh) || !small(g.kw) || !small(g.sh) ||
        !small(g.sw) || !small(g.pt) || !small(g.pl) || !small(g.pb) || !small(g.pr) ||
        !small(g.oh) || !small(g.ow))
        return refuse(why, cap, "geometry too large");
    /* A window of 256 pixels or more (global pooling): one group of 256 per output
     * (pool2d_wide.comp; its partials combined in subgroups where the device can) instead of
     * one invocation walking the whole window. The step's count is GROUP_SIZE per output, so
     * that set_groups makes one group per output whatever the shader's group size. */
    bool wide = g.kh * g.kw >= 256 && count * GROUP_SIZE <= (int64_t)UINT32_MAX;
    dispatch *sp = add_step(np,
                            !wide         ? K_POOL
                            : d->subgroup ? K_POOL_WIDE_SG
                                          : K_POOL_WIDE,
                            wide ? count * GROUP_SIZE : count);
    sp->pc.pool = (pc_pool){
        (uint32_t)count,     (int32_t)g.ih, (int32_t)g.iw,    (int32_t)g.c,  (int32_t)g.oh,
        (int32_t)g.ow,       (int32_t)g.kh, (int32_t)g.kw,    (int32_t)g.sh, (int32_t)g.sw,
        (int32_t)g.pt,       (int32_t)g.pl, (int32_t)g.pb,    (int32_t)g.pr, g.kind,
        g.count_include_pad, g.act,         ctx->node->fp[0],
    };
    return KS_STATUS_OK;
}

static ks_status plan_pad(const vk_dev *d, ks__kernel_ctx *ctx, node_plan *np, char *why,
                          size_t cap) {
    ks__pad_geom g;
    ks_status st = ks__pad_geometry(ctx, &g);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0], *v = ks__kernel_input(ctx, 2);
    if (!plain_f32(d, x)) return refuse(why, cap, "the input is not plain F32");
    if (x->rank > (int32_t)MAX_DIMS) return refuse(why, cap, "rank above 6");
    float fill = ctx->node->fp[0]; /* a `value` input wins (ops.inc) */
    if (v) {
        if (!v->data || ks__rt_numel(v) < 1)
            return refuse(why, cap, "the pad value is known only at run time");
        if (v->dtype == KS_DTYPE_F32)
            fill = ((const float *)v->data)[0];
        else if (ks__dtype_is_int(v->dtype))
            fill = (float)ks__rt_get_int(v, 0);
        else
            return refuse(why, cap, "pad value dtype");
    }
    dispatch *sp = add_step(np, K_PAD, ks__rt_numel(ctx->out[0]));
    pc_pad *pc = &sp->pc.pad;
    pc->count = sp->count;
    pc->mode = g.mode;
    pc->rank = x->rank;
    pc->value = fill;
    for (int32_t k = 0; k < x->rank; k++) {
        if (!small(g.before[k]) || !small(g.out_dims[k])) return refuse(why, cap, "pads too large");
        pc->out_dims[k] = (int32_t)g.out_dims[k];
        pc->in_dims[k] = (int32_t)x->dims[k];
        pc->before[k] = (int32_t)g.before[k];
    }
    return KS_STATUS_OK;
}

/* ---- the layout ops: copy steps ---- */

static ks_status plan_transpose(const vk_dev *d, ks__kernel_ctx *ctx, node_plan *np, char *why,
                                size_t cap) {
    int32_t perm[KS_MAX_RANK];
    int64_t dims[KS_MAX_RANK], is[KS_MAX_RANK], ss[KS_MAX_RANK], ds[KS_MAX_RANK];
    ks_status st = ks__transpose_geometry(ctx, perm, dims);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    if (!plain_f32(d, x)) return refuse(why, cap, "the input is not plain F32");
    strides_of(x->rank, x->dims, is);
    strides_of(x->rank, dims, ds);
    for (int32_t k = 0; k < x->rank; k++)
        ss[k] = is[perm[k]];
    return add_copy(np, 0, -1, x->rank, dims, ss, 0, ds, 0, KS_ACT_NONE, 0.0f, why, cap);
}

static ks_status plan_concat(const vk_dev *d, ks__kernel_ctx *ctx, node_plan *np, char *why,
                             size_t cap) {
    ks__concat_geom g;
    ks_status st = ks__concat_geometry(ctx, &g);
    if (st) return st;
    int32_t act = ctx->node->ip[1];
    if (!float_act(act)) return refuse(why, cap, "fused activation");
    int64_t ys[KS_MAX_RANK], xs[KS_MAX_RANK], off = 0;
    strides_of(g.rank, g.out_dims, ys);
    for (uint32_t k = 0; k < ctx->num_inputs; k++) {
        const ks__rt_tensor *x = ctx->in[k];
        if (!x || x->dtype != KS_DTYPE_F32 || x->quant->count != 0)
            return refuse(why, cap, "an input is not plain F32");
        if (ks__rt_numel(x) == 0) continue;
        if (!plain_f32(d, x)) return refuse(why, cap, "an input is too large");
        strides_of(x->rank, x->dims, xs);
        if ((st = add_copy(np, (int)k, -1, x->rank, x->dims, xs, 0, ys, off * ys[g.axis], act,
                           ctx->node->fp[0], why, cap)))
            return st;
        off += x->dims[g.axis];
    }
    if (np->num_steps == 0) return refuse(why, cap, "every input is empty");
    return KS_STATUS_OK;
}

static ks_status plan_split(const vk_dev *d, ks__kernel_ctx *ctx, node_plan *np, char *why,
                            size_t cap) {
    ks__split_geom g;
    ks_status st = ks__split_geometry(ctx, &g);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    if (!plain_f32(d, x)) return refuse(why, cap, "the input is not plain F32");
    int64_t xs[KS_MAX_RANK], dims[KS_MAX_RANK], ys[KS_MAX_RANK], off = 0;
    strides_of(x->rank, x->dims, xs);
    memcpy(dims, x->dims, sizeof(dims[0]) * (size_t)x->rank);
    for (uint32_t k = 0; k < ctx->num_outputs; k++) {
        dims[g.axis] = g.sizes[k];
        strides_of(x->rank, dims, ys);
        if ((st = add_copy(np, 0, -1 - (int)k, x->rank, dims, xs, off * xs[g.axis], ys, 0,
                           KS_ACT_NONE, 0.0f, why, cap)))
            return st;
        off += g.sizes[k];
    }
    return KS_STATUS_OK;
}

static ks_status plan_slice(const vk_dev *d, ks__kernel_ctx *ctx, node_plan *np, char *why,
                            size_t cap) {
    ks__slice_geom g;
    ks_status st = ks__slice_geometry(ctx, &g);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    if (!plain_f32(d, x)) return refuse(why, cap, "the input is not plain F32");
    int64_t xs[KS_MAX_RANK], ss[KS_MAX_RANK], ds[KS_MAX_RANK], base = 0;
    strides_of(x->rank, x->dims, xs);
    strides_of(x->rank, g.count, ds); /* shrunk axes have count 1 */
    for (int32_t k = 0; k < x->rank; k++) {
        base += g.start[k] * xs[k];
        ss[k] = g.step[k] * xs[k];
        if (!small(ss[k])) return refuse(why, cap, "step too large");
    }
    return add_copy(np, 0, -1, x->rank, g.count, ss, base, ds, 0, KS_ACT_NONE, 0.0f, why, cap);
}

/* Strides of the contiguous `full` (rank r + 1) without its axis `axis`, and that axis' stride. */
static void strides_without(int32_t full_rank, const int64_t *full_dims, int32_t axis,
                            int64_t *strides, int64_t *axis_stride) {
    int64_t s[KS_MAX_RANK + 1];
    strides_of(full_rank, full_dims, s);
    for (int32_t d = 0, k = 0; d < full_rank; d++) {
        if (d == axis)
            *axis_stride = s[d];
        else
            strides[k++] = s[d];
    }
}

static ks_status plan_pack(const vk_dev *d, ks__kernel_ctx *ctx, node_plan *np, char *why,
                           size_t cap, bool unpack) {
    int32_t axis = 0;
    int64_t dims[KS_MAX_RANK + 1], packed[KS_MAX_RANK], flat[KS_MAX_RANK], astride = 0;
    ks_status st =
        unpack ? ks__unpack_geometry(ctx, &axis, dims) : ks__pack_geometry(ctx, &axis, dims);
    if (st) return st;
    if (!inputs_f32(d, ctx, 0, ctx->num_inputs)) return refuse(why, cap, "an input is not F32");
    if (unpack) {
        const ks__rt_tensor *x = ctx->in[0];
        strides_without(x->rank, x->dims, axis, packed, &astride);
        strides_of(x->rank - 1, dims, flat);
        for (uint32_t k = 0; k < ctx->num_outputs; k++)
            if ((st = add_copy(np, 0, -1 - (int)k, x->rank - 1, dims, packed, (int64_t)k * astride,
                               flat, 0, KS_ACT_NONE, 0.0f, why, cap)))
                return st;
        return KS_STATUS_OK;
    }
    int32_t rank = ctx->in[0]->rank;
    strides_without(rank + 1, dims, axis, packed, &astride);
    for (uint32_t k = 0; k < ctx->num_inputs; k++) {
        const ks__rt_tensor *x = ctx->in[k];
        strides_of(rank, x->dims, flat);
        if ((st = add_copy(np, (int)k, -1, rank, x->dims, flat, 0, packed, (int64_t)k * astride,
                           KS_ACT_NONE, 0.0f, why, cap)))
            return st;
    }
    return KS_STATUS_OK;
}

/* DEPTH_TO_SPACE (DCR or CRD) and SPACE_TO_DEPTH as rank-6 copies in the output's order:
 * [n, h, i, w, j, c] of y = [n, h*b, w*b, c] (d2s), [n, h, w, i, j, c] of y = [n, h, w, b*b*c]
 * (s2d), where i, j index the block. */
static ks_status plan_space(const vk_dev *d, ks__kernel_ctx *ctx, node_plan *np, char *why,
                            size_t cap, bool to_space) {
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    int64_t b = ctx->node->ip[0];
    if (!plain_f32(d, x) || x->rank != 4 || y->rank != 4 || b < 1)
        return refuse(why, cap, "operands");
    int64_t n = x->dims[0], h = x->dims[1], w = x->dims[2], c = x->dims[3];
    int64_t dims[6], ss[6], ds[6];
    if (to_space) {
        int64_t oc = c / (b * b);
        int64_t want[4] = {n, h * b, w * b, oc};
        if (oc * b * b != c || memcmp(want, y->dims, sizeof(want)) != 0)
            return refuse(why, cap, "shapes");
        bool crd = ctx->node->ip[1] == 1;
        int64_t id[6] = {n, h, b, w, b, oc};
        int64_t is[6] = {h * w * c, w * c, crd ? b : b * oc, c, crd ? 1 : oc, crd ? b * b : 1};
        memcpy(dims, id, sizeof(dims));
        memcpy(ss, is, sizeof(ss));
    } else {
        int64_t oh = h / b, ow = w / b;
        int64_t want[4] = {n, oh, ow, b * b * c};
        if (oh * b != h || ow * b != w || memcmp(want, y->dims, sizeof(want)) != 0)
            return refuse(why, cap, "shapes");
        int64_t id[6] = {n, oh, ow, b, b, c};
        int64_t is[6] = {h * w * c, b * w * c, b * c, w * c, c, 1};
        memcpy(dims, id, sizeof(dims));
        memcpy(ss, is, sizeof(ss));
    }
    strides_of(6, dims, ds);
    return add_copy(np, 0, -1, 6, dims, ss, 0, ds, 0, KS_ACT_NONE, 0.0f, why, cap);
}

static ks_status plan_resize(const vk_dev *d, ks__kernel_ctx *ctx, node_plan *np, char *why,
                             size_t cap) {
    ks__resize_geom g;
    ks_status st = ks__resize_geometry(ctx, &g);
    if (st) return st;
    if (!plain_f32(d, ctx->in[0])) return refuse(why, cap, "the input is not plain F32");
    int64_t count = g.n * g.oh * g.ow * g.c;
    if (ks__rt_numel(ctx->out[0]) != count) return refuse(why, cap, "operand sizes");
    if (!small(g.ih) || !small(g.iw) || !small(g.oh) || !small(g.ow))
        return refuse(why, cap, "geometry too large");
    dispatch *sp = add_step(np, K_RESIZE, count);
    sp->pc.resize = (pc_resize){
        sp->count, (int32_t)g.ih, (int32_t)g.iw, (int32_t)g.c, (int32_t)g.oh, (int32_t)g.ow,
        g.mode,    g.coord,       g.round_mode,  g.ratio_h,    g.ratio_w,
    };
    return KS_STATUS_OK;
}

/* MediaPipe's TransformLandmarks, TransformTensorBilinear and Landmarks2TransformMatrix (the face
 * mesh with attention), as the CPU reference defines them (engine/backends/cpu/ref/mediapipe.c).
 * fp32 mode only: a crop matrix's translation in fp16 would lose its fraction. */
static ks_status plan_mp(const vk_dev *d, ks__kernel_ctx *ctx, node_plan *np, char *why,
                         size_t cap) {
    const ks__node *nd = ctx->node;
    for (uint32_t k = 0; k < ctx->num_inputs; k++)
        if (!plain_f32(d, ctx->in[k])) return refuse(why, cap, "an input is not plain F32");
    if (ctx->num_outputs != 1 || !plain_f32(d, ctx->out[0]))
        return refuse(why, cap, "the output is not plain F32");
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    int64_t n = ks__rt_numel(x);
    if (nd->op == KS_OP_MP_LANDMARKS_TO_MATRIX) {
        int64_t points = n / 3;
        int32_t words = nd->ip[4];
        if (words < 1 || words > MP_MATRIX_WORDS || ks__rt_numel(y) != 16)
            return refuse(why, cap, "landmark subset beyond the push constants");
        if (nd->ip[0] < 0 || nd->ip[0] >= points || nd->ip[1] < 0 || nd->ip[1] >= points ||
            nd->ip[2] < 1 || nd->ip[3] < 1)
            return refuse(why, cap, "landmark indices or output size");
        dispatch *sp = add_step(np, K_MP_MATRIX, 1);
        pc_mp_matrix *pc = &sp->pc.mp_matrix;
        pc->count = 1;
        pc->left = nd->ip[0], pc->right = nd->ip[1], pc->oh = nd->ip[2], pc->ow = nd->ip[3];
        pc->words = words;
        pc->target_rotation = nd->fp[0], pc->scale_x = nd->fp[1], pc->scale_y = nd->fp[2];
        for (int32_t w = 0; w < words; w++) {
            pc->bits[w] = (uint32_t)nd->ip[5 + w];
            for (int b = 0; b < 32; b++)
                if ((pc->bits[w] >> b & 1u) && 32 * (int64_t)w + b >= points)
                    return refuse(why, cap, "a subset landmark past the input");
        }
        return KS_STATUS_OK;
    }
    if (ctx->num_inputs != 2 || ks__rt_numel(ctx->in[1]) < 16)
        return refuse(why, cap, "the matrix is not 16 values");
    if (nd->op == KS_OP_MP_TRANSFORM_LANDMARKS) {
        int32_t dims = ks__mp_landmark_dims(ctx);
        if ((dims != 2 && dims != 3) || n % dims != 0 || ks__rt_numel(y) != n)
            return refuse(why, cap, "landmark dims");
        dispatch *sp = add_step(np, K_MP_LANDMARKS, n / dims);
        sp->pc.mp = (pc_mp){
            (uint32_t)(n / dims), dims, 0, 0, 0, 0, 0, 0, nd->fp[0] != 0.0f ? nd->fp[0] : 1.0f};
        return KS_STATUS_OK;
    }
    if (x->rank != 4 || x->dims[0] != 1 || !small(x->dims[1]) || !small(x->dims[2]) ||
        !small(x->dims[3]) || !small(nd->ip[0]) || !small(nd->ip[1]) ||
        ks__rt_numel(y) != (int64_t)nd->ip[0] * nd->ip[1] * x->dims[3])
        return refuse(why, cap, "geometry");
    dispatch *sp = add_step(np, K_MP_TRANSFORM, ks__rt_numel(y));
    sp->pc.mp = (pc_mp){(uint32_t)ks__rt_numel(y),
                        0,
                        (int32_t)x->dims[1],
                        (int32_t)x->dims[2],
                        (int32_t)x->dims[3],
                        nd->ip[0],
                        nd->ip[1],
                        nd->ip[2] != 0,
                        0.0f};
    return KS_STATUS_OK;
}

static ks_status plan_softmax(const vk_dev *d, ks__kernel_ctx *ctx, node_plan *np, char *why,
                              size_t cap) {
    const ks__rt_tensor *x = ctx->in[0];
    if (!plain_f32(d, x) || ks__rt_numel(x) != ks__rt_numel(ctx->out[0]))
        return refuse(why, cap, "the input is not plain F32 of the output's size");
    int32_t axis = ks__resolve_axis(ctx->node->ip[0], x->rank);
    if (axis < 0) return refuse(why, cap, "axis");
    int64_t outer = 1, inner = 1;
    for (int32_t k = 0; k < axis; k++)
        outer *= x->dims[k];
    for (int32_t k = axis + 1; k < x->rank; k++)
        inner *= x->dims[k];
    dispatch *sp = add_step(np, K_SOFTMAX, outer * inner);
    float beta = ctx->node->fp[0] != 0.0f ? ctx->node->fp[0] : 1.0f;
    sp->pc.softmax = (pc_softmax){sp->count, (uint32_t)x->dims[axis], (uint32_t)inner,
                                  ctx->node->op == KS_OP_LOG_SOFTMAX, beta};
    return KS_STATUS_OK;
}

static ks_status plan_fc(const vk_dev *d, ks__kernel_ctx *ctx, node_plan *np, char *why,
                         size_t cap) {
    const ks__rt_tensor *x = ctx->in[0], *w = ks__kernel_input(ctx, 1);
    const ks__rt_tensor *b = ks__kernel_input(ctx, 2);
    if (!x || !w || !inputs_f32(d, ctx, 0, 3) || w->rank != 2)
        return refuse(why, cap, "operands are not plain F32");
    int64_t o = w->dims[0], in = w->dims[1], rows = ks__rt_numel(x) / in;
    int32_t act = ctx->node->ip[0];
    if (!float_act(act)) return refuse(why, cap, "fused activation");
    if (rows * in != ks__rt_numel(x) || ks__rt_numel(ctx->out[0]) != rows * o ||
        (b && ks__rt_numel(b) != o))
        return refuse(why, cap, "operand sizes");
    dispatch *sp = add_step(np, K_MATMUL, rows * o);
    pc_matmul *pc = &sp->pc.matmul;
    pc->count = sp->count;
    pc->m = (int32_t)rows, pc->n = (int32_t)o, pc->k = (int32_t)in;
    pc->as_m = (int32_t)in, pc->as_k = 1, pc->bs_k = 1, pc->bs_n = (int32_t)in;
    pc->flags = b ? 1u : 0u;
    pc->act = act;
    pc->alpha = ctx->node->fp[0];
    return KS_STATUS_OK;
}

static ks_status plan_matmul(const vk_dev *d, ks__kernel_ctx *ctx, node_plan *np, char *why,
                             size_t cap) {
    ks__matmul_geom g;
    int64_t dims[KS_MAX_RANK + 2];
    int32_t rank = 0;
    ks_status st = ks__matmul_geometry(ctx, &g, dims, &rank);
    if (st) return st;
    if (ctx->num_inputs != 2 || !plain_f32(d, ctx->in[0]) || !plain_f32(d, ctx->in[1]))
        return refuse(why, cap, "operands are not plain F32");
    if (g.batch_rank > 4) return refuse(why, cap, "more than 4 batch dims");
    int64_t batches = 1;
    for (int32_t i = 0; i < g.batch_rank; i++)
        batches *= g.batch[i];
    int64_t count = batches * g.m * g.n;
    if (ks__rt_numel(ctx->out[0]) != count) return refuse(why, cap, "operand sizes");
    bool ta = ctx->node->ip[0] != 0, tb = ctx->node->ip[1] != 0;
    dispatch *sp = add_step(np, K_MATMUL, count);
    pc_matmul *pc = &sp->pc.matmul;
    pc->count = sp->count;
    pc->m = (int32_t)g.m, pc->n = (int32_t)g.n, pc->k = (int32_t)g.k;
    /* the CPU reference's indexing (engine/backends/cpu/ref/conv.c, matmul_run) as strides */
    pc->as_m = g.a_vec ? 0 : (int32_t)(ta ? 1 : g.k);
    pc->as_k = g.a_vec ? 1 : (int32_t)(ta ? g.m : 1);
    pc->bs_k = g.b_vec ? 1 : (int32_t)(tb ? 1 : g.n);
    pc->bs_n = g.b_vec ? 0 : (int32_t)(tb ? g.k : 1);
    pc->batch_rank = g.batch_rank;
    pc->act = KS_ACT_NONE;
    int64_t as = 1, bs = 1;
    for (int32_t i = g.batch_rank - 1; i >= 0; i--) {
        pc->bdims[i] = (int32_t)g.batch[i];
        pc->as_b[i] = g.a_batch[i] == 1 ? 0 : (int32_t)(as * g.m * g.k);
        pc->bs_b[i] = g.b_batch[i] == 1 ? 0 : (int32_t)(bs * g.k * g.n);
        as *= g.a_batch[i];
        bs *= g.b_batch[i];
    }
    return KS_STATUS_OK;
}

static ks_status plan_reduce(const vk_dev *d, ks__kernel_ctx *ctx, node_plan *np, char *why,
                             size_t cap) {
    const ks__rt_tensor *x = ctx->in[0];
    if (!plain_f32(d, x)) return refuse(why, cap, "the input is not plain F32");
    int32_t kind = ctx->node->ip[0];
    uint32_t mask = 0;
    if (kind < KS__REDUCE_MEAN || kind > KS__REDUCE_PROD) return refuse(why, cap, "kind");
    if (!ks__reduce_axes(ctx, x->rank, &mask)) return KS_STATUS_UNSUPPORTED;
    int64_t xs[KS_MAX_RANK], kept = 1, reduced = 1;
    strides_of(x->rank, x->dims, xs);
    pc_reduce pc;
    memset(&pc, 0, sizeof(pc));
    for (int32_t k = 0; k < x->rank; k++) {
        if (x->dims[k] == 1) continue;
        bool red = (mask >> k) & 1u;
        int32_t *n = red ? &pc.nr : &pc.nk;
        if (*n == (int32_t)MAX_DIMS) return refuse(why, cap, "more than 6 dims to index");
        (red ? pc.rdims : pc.kdims)[*n] = (int32_t)x->dims[k];
        (red ? pc.rs : pc.ks)[*n] = (int32_t)xs[k];
        (*n)++;
        if (red)
            reduced *= x->dims[k];
        else
            kept *= x->dims[k];
    }
    if (ks__rt_numel(ctx->out[0]) != kept) return refuse(why, cap, "operand sizes");
    dispatch *sp = add_step(np, K_REDUCE, kept);
    pc.count = sp->count;
    pc.kind = kind;
    pc.rcount = (int32_t)reduced;
    sp->pc.reduce = pc;
    return KS_STATUS_OK;
}

/* RESHAPE, SQUEEZE, UNSQUEEZE: no work, the output is the input's memory. */
static ks_status plan_view(const vk_dev *d, ks__kernel_ctx *ctx, node_plan *np, char *why,
                           size_t cap) {
    if (!plain_f32(d, ctx->in[0]) || ks__rt_numel(ctx->in[0]) != ks__rt_numel(ctx->out[0]))
        return refuse(why, cap, "the input is not plain F32 of the output's size");
    np->view = true;
    return KS_STATUS_OK;
}

/* The node's plan, or a status and why (the node then stays on the host). */
static ks_status plan_node(const vk_dev *d, const ks__kernel_ctx *ctx, node_plan *np, char *why,
                           size_t cap) {
    np->num_steps = 0;
    np->view = false;
    uint32_t op = ctx->node->op;
    if (ctx->num_outputs < 1 || (ctx->num_outputs != 1 && op != KS_OP_SPLIT && op != KS_OP_UNPACK))
        return refuse(why, cap, "outputs");
    for (uint32_t k = 0; k < ctx->num_outputs; k++)
        if (!plain_f32(d, ctx->out[k])) return refuse(why, cap, "an output is not plain F32");
    if (ctx->num_inputs < 1 || !ctx->in[0]) return refuse(why, cap, "no input");
    /* The core's geometry functions validate again and report into the context's buffer: a
     * copy of the context sends their messages to ours. */
    ks__kernel_ctx c = *ctx;
    c.err = why;
    c.err_cap = cap;
    const ks__op_info *info = ks__op_get_info(op);
    ks_status st;
    if (info && (info->flags & KS_OPF_VIEW)) return plan_view(d, &c, np, why, cap);
    switch (op) {
    case KS_OP_ADD:
    case KS_OP_SUB:
    case KS_OP_MUL:
    case KS_OP_DIV:
    case KS_OP_MAXIMUM:
    case KS_OP_MINIMUM:
        st = plan_binary(d, &c, np, why, cap);
        break;
    case KS_OP_CONV2D:
    case KS_OP_CONV2D_TRANSPOSE:
        st = plan_conv(d, &c, np, why, cap, op == KS_OP_CONV2D_TRANSPOSE);
        break;
    case KS_OP_POOL2D:
        st = plan_pool(d, &c, np, why, cap);
        break;
    case KS_OP_PAD:
        st = plan_pad(d, &c, np, why, cap);
        break;
    case KS_OP_TRANSPOSE:
        st = plan_transpose(d, &c, np, why, cap);
        break;
    case KS_OP_CONCAT:
        st = plan_concat(d, &c, np, why, cap);
        break;
    case KS_OP_SPLIT:
        st = plan_split(d, &c, np, why, cap);
        break;
    case KS_OP_SLICE:
        st = plan_slice(d, &c, np, why, cap);
        break;
    case KS_OP_PACK:
    case KS_OP_UNPACK:
        st = plan_pack(d, &c, np, why, cap, op == KS_OP_UNPACK);
        break;
    case KS_OP_DEPTH_TO_SPACE:
    case KS_OP_SPACE_TO_DEPTH:
        st = plan_space(d, &c, np, why, cap, op == KS_OP_DEPTH_TO_SPACE);
        break;
    case KS_OP_RESIZE:
        st = plan_resize(d, &c, np, why, cap);
        break;
    case KS_OP_SOFTMAX:
    case KS_OP_LOG_SOFTMAX:
        st = plan_softmax(d, &c, np, why, cap);
        break;
    case KS_OP_FULLY_CONNECTED:
        st = plan_fc(d, &c, np, why, cap);
        break;
    case KS_OP_MATMUL:
        st = plan_matmul(d, &c, np, why, cap);
        break;
    case KS_OP_REDUCE:
        st = plan_reduce(d, &c, np, why, cap);
        break;
    case KS_OP_MP_TRANSFORM_LANDMARKS:
    case KS_OP_MP_TRANSFORM_TENSOR_BILINEAR:
    case KS_OP_MP_LANDMARKS_TO_MATRIX:
        st = plan_mp(d, &c, np, why, cap);
        break;
    default:
        st = plan_unary(d, &c, np, why, cap);
        break;
    }
    if (st) return st;
    for (uint32_t k = 0; k < np->num_steps; k++)
        if (!set_groups(d, &np->steps[k])) return refuse(why, cap, "too many work groups");
    return KS_STATUS_OK;
}

/* Records that the current run of accepted nodes produced tensor id; false when out of memory. */
static bool mark_produced(vk_dev *d, int32_t id) {
    if (id < 0) return true;
    if ((size_t)id >= d->run_cap) {
        size_t cap = d->run_cap ? d->run_cap : 64;
        while (cap <= (size_t)id)
            cap *= 2;
        uint32_t *r = ks__calloc(&d->alloc, cap, sizeof(*r));
        if (!r) return false;
        if (d->run_cap) memcpy(r, d->run_of, d->run_cap * sizeof(*r));
        ks__free(&d->alloc, d->run_of);
        d->run_of = r;
        d->run_cap = cap;
    }
    d->run_of[id] = d->run;
    return true;
}

/* The session asks for every node that runs, in execution order, at every reshape (a node index
 * that does not grow starts a new reshape). A view (RESHAPE, SQUEEZE, UNSQUEEZE) is accepted only
 * when its input comes from the run of device nodes still open: elsewhere the host makes it an
 * alias for free, while a partition of its own would copy the tensor up and down. */
static bool vk_supports(void *dev, const ks__kernel_ctx *ctx) {
    vk_dev *d = dev;
    if (!d->asked || ctx->node_index <= d->last_node) {
        if (d->run_of) memset(d->run_of, 0, d->run_cap * sizeof(*d->run_of));
        d->run++;
    }
    d->asked = true;
    d->last_node = ctx->node_index;
    node_plan np;
    char why[160];
    bool ok = plan_node(d, ctx, &np, why, sizeof(why)) == KS_STATUS_OK;
    if (ok && np.view) {
        int32_t in = ctx->node->inputs[0];
        ok = in >= 0 && (size_t)in < d->run_cap && d->run_of[in] == d->run;
    }
    for (uint32_t k = 0; ok && k < ctx->node->num_outputs; k++)
        ok = mark_produced(d, ctx->node->outputs[k]);
    if (!ok) d->run++; /* a host node ends the run */
    return ok;
}

/* ---------------------------------------------------------------------------------------------
 * Programs: one per partition
 * ------------------------------------------------------------------------------------------- */

/* Where a tensor of the partition lives. */
enum { R_CONST, R_INPUT, R_OUTPUT, R_INTERNAL };

typedef struct region {
    const ks__rt_tensor *t;
    int kind;
    uint32_t root;  /* the region whose memory it is: itself, or a view's input (an alias) */
    bool wide;      /* a constant kept in fp32 in the fp16 modes (convolution weights) */
    uint32_t esize; /* bytes per element: 4, or 2 for an fp16 tensor */
    VkDeviceSize off, bytes; /* in the device buffer */
    VkDeviceSize stage_off;  /* inputs and outputs: in the staging buffer; constants: in the
                                temporary upload buffer */
} region;

typedef struct host_copy {
    void *host;
    size_t stage_off, bytes; /* bytes: in the staging buffer */
    bool half;               /* fp16 on the device: converted at the transfer */
} host_copy;

typedef struct vk_prog {
    uint32_t index; /* the partition's */
    VkBuffer dbuf;
    VkDeviceMemory dmem;
    VkBuffer sbuf;
    VkDeviceMemory smem;
    uint8_t *smap; /* the staging buffer, mapped for the program's life */
    VkDescriptorPool dpool;
    VkCommandBuffer cmd;       /* the run */
    VkCommandBuffer cmd_timed; /* the same with a timestamp after each dispatch (profiled runs) */
    bool timed;                /* the run in flight is cmd_timed's */
    VkFence fence;
    /* 4 timestamps (start, uploaded, computed, downloaded), then one after each dispatch; or
     * none */
    VkQueryPool qpool;
    uint32_t num_steps, num_nodes;
    uint32_t *step_node;      /* per dispatch: its node's position in the partition */
    uint64_t *ts;             /* 4 + num_steps timestamps read back */
    uint64_t *node_ns;        /* per node: its dispatches' device time (profiling) */
    const char **node_kernel; /* per node: k_kernels[].prof_name of its first dispatch */
    uint32_t *node_steps;     /* per node: its dispatches (casts included) */
    host_copy *copies;        /* num_in inputs, then num_out outputs */
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
    if (p->cmd_timed) vk->vkFreeCommandBuffers(dv, d->cmd_pool, 1, &p->cmd_timed);
    if (p->qpool) vk->vkDestroyQueryPool(dv, p->qpool, NULL);
    if (p->dpool) vk->vkDestroyDescriptorPool(dv, p->dpool, NULL);
    if (p->fence) vk->vkDestroyFence(dv, p->fence, NULL);
    if (p->smap) vk->vkUnmapMemory(dv, p->smem);
    if (p->sbuf) vk->vkDestroyBuffer(dv, p->sbuf, NULL);
    if (p->smem) vk->vkFreeMemory(dv, p->smem, NULL);
    if (p->dbuf) vk->vkDestroyBuffer(dv, p->dbuf, NULL);
    if (p->dmem) vk->vkFreeMemory(dv, p->dmem, NULL);
    ks__free(&d->alloc, p->copies);
    ks__free(&d->alloc, p->step_node);
    ks__free(&d->alloc, p->ts);
    ks__free(&d->alloc, p->node_ns);
    ks__free(&d->alloc, p->node_kernel);
    ks__free(&d->alloc, p->node_steps);
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
    node_plan *plan; /* of one node at a time */
    dispatch *steps; /* every dispatch of the partition, in order */
    uint32_t num_steps;
    uint32_t *map;      /* tensor id -> region index + 1 */
    uint32_t *map_wide; /* the same for fp32 copies of constants (wide_binding, fp32 nodes) */
    uint32_t *map_cast; /* the same for a tensor's copy in the other precision (made by a cast) */
    uint8_t *fp32;      /* per node of the partition: 1 = runs in fp32 (the fp16 modes) */
    region *rg;
    uint32_t num_rg;
    uint32_t *bind;        /* per step, per binding: region index */
    VkDescriptorSet *sets; /* per step (owned by the program's pool) */
    VkBufferCopy *copy;    /* room for one copy per region */
    char *err;
    size_t cap;
} build;

/* The region of tensor id, made at its first use: as a node's output (`produced`, with that
 * node's element size), else as a partition input or a constant (the device's). */
static ks_status region_of(build *b, int32_t id, const ks__rt_tensor *t, bool produced,
                           uint32_t esize, uint32_t *out) {
    if (!b->map[id]) {
        region *r = &b->rg[b->num_rg];
        r->t = t;
        r->esize = produced ? esize : (uint32_t)b->d->esize;
        r->bytes = (VkDeviceSize)ks__rt_numel(t) * r->esize;
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
        /* F16 tensors are only ever constants here (const_f16): their upload widens them */
        if (t->dtype == KS_DTYPE_F16 && r->kind != R_CONST)
            return ks__fail(b->err, b->cap, KS_STATUS_INTERNAL,
                            "Vulkan: partition %u: F16 tensor '%s' is not a constant",
                            b->part->index, ks__rt_name(t));
        r->root = b->num_rg;
        b->map[id] = ++b->num_rg;
    }
    *out = b->map[id] - 1;
    return KS_STATUS_OK;
}

/* The region of a view's output `id`: the memory of region `of`, its input's. Downloaded from
 * there when it leaves the partition. */
static ks_status region_alias(build *b, int32_t id, const ks__rt_tensor *t, uint32_t of) {
    uint32_t r;
    ks_status st = region_of(b, id, t, true, b->rg[of].esize, &r);
    if (st) return st;
    b->rg[r].root = b->rg[of].root;
    return KS_STATUS_OK;
}

/* Whether binding i of a dispatch of `kind` reads a constant that stays fp32 in the fp16 modes:
 * the weights, bias and slopes of CONV2D and CONV2D_TRANSPOSE (their shaders declare them
 * float). plan_conv accepts only constant ones there. */
static bool wide_binding(int kind, uint32_t i) {
    return ((kind == K_CONV || kind == K_CONV_GEMM || kind == K_CONV_GEMM4 || kind == K_CONV_DW4 ||
             kind == K_CONV_COOP || kind == K_CONV_WIDE) &&
            (i == 1 || i == 2 || i == 4)) ||
           (kind == K_DECONV && (i == 1 || i == 2));
}

/* The fp32 region of constant `id` (for a wide binding in the fp16 modes). */
static ks_status region_wide(build *b, int32_t id, const ks__rt_tensor *t, uint32_t *out) {
    if (!b->map_wide[id]) {
        if (!t->data || listed(b->part->inputs, b->part->num_inputs, id))
            return ks__fail(b->err, b->cap, KS_STATUS_INTERNAL,
                            "Vulkan: partition %u: convolution operand '%s' is not a constant",
                            b->part->index, ks__rt_name(t));
        region *r = &b->rg[b->num_rg];
        r->t = t;
        r->bytes = (VkDeviceSize)ks__rt_numel(t) * 4u;
        r->esize = 4;
        r->kind = R_CONST;
        r->wide = true;
        r->root = b->num_rg;
        b->map_wide[id] = ++b->num_rg;
    }
    *out = b->map_wide[id] - 1;
    return KS_STATUS_OK;
}

/* Whether node_index is in the list "a,b-c,..." (KS_VULKAN_FP32_NODES). */
static bool in_node_list(const char *list, uint32_t node_index) {
    const char *p = list;
    while (*p) {
        char *end = NULL;
        unsigned long lo = strtoul(p, &end, 10), hi = lo;
        if (end == p) return false;
        if (*end == '-') {
            p = end + 1;
            hi = strtoul(p, &end, 10);
            if (end == p) return false;
        }
        if (node_index >= lo && node_index <= hi) return true;
        if (*end != ',') return false;
        p = end + 1;
    }
    return false;
}

/* Which nodes of the partition run in fp32 in the fp16 modes (docs/vulkan.md, "Precision"). */
static void choose_fp32_nodes(build *b) {
    const char *env = getenv("KS_VULKAN_FP32_NODES");
    for (uint32_t k = 0; k < b->part->num_nodes; k++)
        if (env && in_node_list(env, b->ctx[k].node_index)) b->fp32[k] = 1;
}

/* The region that binding i of a step (of `kind`, in variant v, for partition node k) reads for
 * operand tensor id: its own, or in the fp16 modes an fp32 copy of a constant (a wide binding, or
 * a node kept in fp32), or a copy in the other precision made on the device by a cast step,
 * appended now (before the step) and shared by every later reader. */
static ks_status operand_region(build *b, uint32_t k, int kind, int v, uint32_t i, int32_t id,
                                const ks__rt_tensor *t, uint32_t *out) {
    vk_dev *d = b->d;
    if (d->esize == 2 && wide_binding(kind, i)) return region_wide(b, id, t, out);
    uint32_t r;
    ks_status st = region_of(b, id, t, false, (uint32_t)d->esize, &r);
    if (st) return st;
    uint32_t want = v == V_F32 ? 4u : (uint32_t)d->esize;
    if (b->rg[r].esize == want) {
        *out = r;
        return KS_STATUS_OK;
    }
    if (b->rg[r].kind == R_CONST) return region_wide(b, id, t, out); /* want is 4 */
    if (!b->map_cast[id]) {
        int64_t n = ks__rt_numel(t);
        region *c = &b->rg[b->num_rg];
        c->t = t;
        c->kind = R_INTERNAL;
        c->esize = want;
        c->bytes = (VkDeviceSize)n * want;
        c->root = b->num_rg;
        dispatch *sp = &b->steps[b->num_steps];
        memset(sp, 0, sizeof(*sp));
        sp->kind = want == 4 ? K_WIDEN : K_NARROW;
        sp->variant = d->fp16;
        sp->count = (uint32_t)n;
        sp->pc.cast.count = (uint32_t)n;
        if (!small(n) || !set_groups(d, sp))
            return ks__fail(b->err, b->cap, KS_STATUS_INTERNAL,
                            "Vulkan: partition %u: tensor '%s' is too large to convert",
                            b->part->index, ks__rt_name(t));
        uint32_t *bind = &b->bind[b->num_steps * MAX_BINDINGS];
        bind[0] = r;
        bind[1] = b->num_rg;
        b->p->step_node[b->num_steps] = k;
        b->num_steps++;
        b->map_cast[id] = ++b->num_rg;
    }
    *out = b->map_cast[id] - 1;
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
        uint8_t *dst = (uint8_t *)map + rg->stage_off;
        size_t count = (size_t)ks__rt_numel(rg->t);
        bool half = rg->esize == 2;       /* an fp16 region */
        if (rg->t->dtype == KS_DTYPE_F16) /* const_f16: weights stored fp16 */
            half ? memcpy(dst, rg->t->data, count * 2u)
                 : f16_to_f32_n((float *)dst, rg->t->data, count);
        else if (half)
            f32_to_f16_n((uint16_t *)dst, rg->t->data, count);
        else
            memcpy(dst, rg->t->data, (size_t)rg->bytes);
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

/* ---- Measured kernel choice (ks_session_desc.tune; docs/vulkan.md, "Tuning") ----
 * A convolution with one group has two shaders: the tiled implicit GEMM (the cost model's pick)
 * and the direct one (an invocation per output). With tuning on, compile times both on the
 * partition's own buffers (its constants are uploaded; the other tensors hold whatever the
 * memory held, which does not change the time) and keeps the faster; the choice is remembered
 * per shape in "<tune_cache_path>.vktune", a choice file (base/choice_file.h) whose header names
 * the Kestrel version and the device and driver, so a later reshape or process times nothing. */

#define TUNE_MAX_ENTRIES 4096u
#define TUNE_REPS 3 /* dispatches per timing, the best of two timings per candidate */

static void tune_header(const vk_dev *d, char *buf, size_t cap) {
    snprintf(buf, cap, "kestrel-vktune 1\t%s\t%04x:%04x driver %08x %s", KS_VERSION_STRING,
             d->props.vendorID, d->props.deviceID, d->props.driverVersion, d->props.deviceName);
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
}

static void tune_key(const dispatch *sp, char *buf, size_t cap) {
    const pc_conv *c = &sp->pc.conv;
    uint32_t per_image = (uint32_t)c->oh * (uint32_t)c->ow * (uint32_t)c->oc;
    snprintf(buf, cap, "conv v%d n%u in%dx%dx%d out%dx%dx%d k%dx%d s%dx%d d%dx%d f%u", sp->variant,
             per_image ? c->count / per_image : 0, c->ih, c->iw, c->ic, c->oh, c->ow, c->oc, c->kh,
             c->kw, c->sh, c->sw, c->dh, c->dw, c->flags);
}

/* Device time in ns of TUNE_REPS back-to-back runs of candidate `cand` for step k (its
 * descriptor set: the two shaders' set layouts are defined identically), or UINT64_MAX when it
 * cannot be timed. qp: 2 timestamp queries, or VK_NULL_HANDLE (then the host's clock). */
static uint64_t time_candidate(build *b, uint32_t k, const dispatch *cand, VkQueryPool qp) {
    vk_dev *d = b->d;
    vk_prog *p = b->p;
    const ks__vk_fns *vk = &d->vk;
    const vk_pipe *pipe = &d->pipes[cand->kind];
    VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = d->cmd_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    if (vk->vkAllocateCommandBuffers(d->device, &ai, &cmd) != VK_SUCCESS) return UINT64_MAX;
    uint64_t t = UINT64_MAX;
    VkCommandBufferBeginInfo bi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    if (vk->vkBeginCommandBuffer(cmd, &bi) == VK_SUCCESS) {
        if (qp) {
            vk->vkCmdResetQueryPool(cmd, qp, 0, 2);
            vk->vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qp, 0);
        }
        VkMemoryBarrier mb = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
            .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
            .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
        };
        vk->vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
                              pipe->pipeline[cand->variant][cand->tile]);
        vk->vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe->layout, 0, 1,
                                    &b->sets[k], 0, NULL);
        vk->vkCmdPushConstants(cmd, pipe->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                               k_kernels[cand->kind].pc_bytes, &cand->pc);
        for (int r = 0; r < TUNE_REPS; r++) {
            /* each run waits for the last: they write the same region */
            vk->vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                     VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0,
                                     NULL);
            vk->vkCmdDispatch(cmd, cand->groups_x, cand->groups_y, 1);
        }
        if (qp) vk->vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, 1);
        VkSubmitInfo si = {
            .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
            .commandBufferCount = 1,
            .pCommandBuffers = &cmd,
        };
        uint64_t t0 = now_ns();
        if (vk->vkEndCommandBuffer(cmd) == VK_SUCCESS &&
            vk->vkQueueSubmit(d->queue, 1, &si, p->fence) == VK_SUCCESS) {
            VkResult r = vk->vkWaitForFences(d->device, 1, &p->fence, VK_TRUE, UINT64_MAX);
            uint64_t host = now_ns() - t0;
            vk->vkResetFences(d->device, 1, &p->fence);
            uint64_t ts[2];
            if (r != VK_SUCCESS) {
                t = UINT64_MAX;
            } else if (qp && vk->vkGetQueryPoolResults(
                                 d->device, qp, 0, 2, sizeof(ts), ts, sizeof(ts[0]),
                                 VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS) {
                uint64_t mask = d->timestamp_bits >= 64 ? ~(uint64_t)0
                                                        : (((uint64_t)1 << d->timestamp_bits) - 1);
                t = (uint64_t)((double)((ts[1] - ts[0]) & mask) *
                               (double)d->props.limits.timestampPeriod);
            } else {
                t = host;
            }
        }
    }
    vk->vkFreeCommandBuffers(d->device, d->cmd_pool, 1, &cmd);
    return t;
}

static _Atomic uint64_t g_tune_trials; /* convolutions timed, every device (tests) */

uint64_t ks__vk_tune_trials(void) {
    return g_tune_trials;
}

/* With tuning on: each one-group convolution's shader, timed or read from the tune file. */
static void tune_steps(build *b) {
    vk_dev *d = b->d;
    if (d->tune == KS_TUNE_OFF) return;
    const ks__vk_fns *vk = &d->vk;
    VkQueryPool qp = VK_NULL_HANDLE;
    if (d->timestamp_bits) {
        VkQueryPoolCreateInfo qci = {
            .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            .queryType = VK_QUERY_TYPE_TIMESTAMP,
            .queryCount = 2,
        };
        if (vk->vkCreateQueryPool(d->device, &qci, NULL, &qp) != VK_SUCCESS) qp = VK_NULL_HANDLE;
    }
    char header[512], key[256], v[KS__CHOICE_VALUE_CAP], why[200];
    tune_header(d, header, sizeof(header));
    bool warned = false, stale = true; /* stale: the file changed since `file` was read */
    char *file = NULL;
    size_t file_bytes = 0;
    for (uint32_t k = 0; k < b->num_steps; k++) {
        dispatch *sp = &b->steps[k];
        if (sp->kind != K_CONV_GEMM && sp->kind != K_CONV_GEMM4) continue;
        /* the candidates: the cost model's pick (the tiled GEMM with its tile), the other
         * tiles, the same on cooperative matrices where the device has them (d->coop: not the
         * default, since on the H100 it measured no faster over whole models; docs/vulkan.md),
         * the direct shader */
        dispatch cand[T_COUNT + 2];
        const char *names[T_COUNT + 2];
        int nc = 0;
        cand[nc] = *sp;
        names[nc++] = k_tiles[sp->tile].choice;
        for (int t = 0; t < T_COUNT; t++) {
            if (t == sp->tile) continue;
            cand[nc] = *sp;
            if (retile(d, &cand[nc], t) &&
                !ensure_pipe(d, sp->kind, sp->variant, t, why, sizeof(why)))
                names[nc++] = k_tiles[t].choice;
        }
        if (d->coop && !ensure_pipe(d, K_CONV_COOP, sp->variant, T32X32, why, sizeof(why))) {
            cand[nc] = *sp;
            if (retile(d, &cand[nc], T32X32)) { /* conv2d_coop.comp's tile */
                cand[nc].kind = K_CONV_COOP;
                names[nc++] = "coop";
            }
        }
        dispatch alt = *sp;
        alt.kind = K_CONV;
        alt.tile = T32X32;
        alt.count = sp->pc.conv.count;
        if (set_groups(d, &alt) && !ensure_pipe(d, K_CONV, alt.variant, T32X32, why, sizeof(why))) {
            cand[nc] = alt;
            names[nc++] = "direct";
        }
        if (nc < 2) continue;
        tune_key(sp, key, sizeof(key));
        const char *bad = NULL;
        if (d->tune_path && stale) { /* read once, again only after a save */
            ks__free(NULL, file);
            file = ks__choice_read(d->tune_path, &file_bytes, &bad);
            stale = false;
        }
        int found = 0;
        int r = bad    ? -1
                : file ? ks__choice_parse(file, file_bytes, header, TUNE_MAX_ENTRIES, key, v,
                                          sizeof(v), &found)
                       : 0;
        if (r < 0 && !bad) bad = "malformed";
        if (r >= 1 && !found) r = 0;
        if (r < 0 && !warned) {
            ks__log(KS_LOG_WARN, "Vulkan tune cache %s is %s; ignored (rewritten)", d->tune_path,
                    bad);
            snprintf(g_info.cache_warning, sizeof(g_info.cache_warning), "tune cache: %s", bad);
            warned = true;
        }
        int pick = -1;
        for (int c = 0; r >= 1 && c < nc; c++)
            if (strcmp(v, names[c]) == 0) pick = c;
        if (pick >= 0) {
            g_info.tune_cached++;
        } else { /* not in the file, or a choice this device does not have now: time them */
            uint64_t best[T_COUNT + 2];
            for (int c = 0; c < nc; c++)
                best[c] = UINT64_MAX;
            for (int rep = 0; rep < 2; rep++) /* alternated: drift hits all */
                for (int c = 0; c < nc; c++) {
                    uint64_t t = time_candidate(b, k, &cand[c], qp);
                    if (t < best[c]) best[c] = t;
                }
            bool timed = true;
            for (int c = 0; c < nc; c++)
                timed = timed && best[c] != UINT64_MAX;
            if (!timed) continue; /* the cost model's pick */
            pick = 0;
            for (int c = 1; c < nc; c++)
                if (best[c] < best[pick]) pick = c;
            g_info.tune_timed++;
            g_tune_trials++;
            char times[512];
            size_t used = 0;
            for (int c = 0; c < nc && used < sizeof(times); c++)
                used += (size_t)snprintf(times + used, sizeof(times) - used, "%s%s %.1f us",
                                         c ? ", " : "", names[c], (double)best[c] / 1e3);
            ks__log(KS_LOG_DEBUG, "Vulkan tune: %s: %s", key, times);
            const char *wf = NULL;
            if (d->tune_path) {
                if (ks__choice_save(d->tune_path, header, TUNE_MAX_ENTRIES, key, names[pick],
                                    &wf) == 0) {
                    stale = true; /* a later convolution of the same shape finds it */
                } else if (!warned) {
                    ks__log(KS_LOG_WARN, "Vulkan tune cache %s: %s; choices kept for this reshape",
                            d->tune_path, wf);
                    warned = true;
                }
            }
        }
        if (pick > 0) {
            *sp = cand[pick];
            b->p->node_kernel[b->p->step_node[k]] = kernel_name(&cand[pick]);
        }
    }
    ks__free(NULL, file);
    if (qp) vk->vkDestroyQueryPool(d->device, qp, NULL);
}

/* Descriptor sets: one per step, each binding a region of the device buffer. */
static ks_status make_descriptors(build *b) {
    vk_dev *d = b->d;
    vk_prog *p = b->p;
    const ks__vk_fns *vk = &d->vk;
    uint32_t nn = b->num_steps;
    if (nn == 0) return KS_STATUS_OK; /* views only */
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
        const kernel_info *ki = &k_kernels[b->steps[k].kind];
        VkDescriptorSetAllocateInfo ai = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
            .descriptorPool = p->dpool,
            .descriptorSetCount = 1,
            .pSetLayouts = &d->pipes[b->steps[k].kind].set_layout,
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

/* Records one of the partition's command buffers, replayed as is by every run: the plain one, or
 * (timed) the same with a timestamp after each dispatch, for profiled runs only: on an H100 those
 * timestamps cost 5-12 % of a run (YOLOX-nano 1.96 -> 2.20 ms). */
static ks_status record(build *b, bool timed) {
    vk_dev *d = b->d;
    vk_prog *p = b->p;
    const ks__vk_fns *vk = &d->vk;
    VkCommandBuffer *slot = timed ? &p->cmd_timed : &p->cmd;
    VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = d->cmd_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    const char *step = "vkAllocateCommandBuffers";
    VkResult r = vk->vkAllocateCommandBuffers(d->device, &ai, slot);
    if (r != VK_SUCCESS) {
        *slot = VK_NULL_HANDLE;
        goto error;
    }
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    step = "vkBeginCommandBuffer";
    if ((r = vk->vkBeginCommandBuffer(*slot, &bi))) goto error;
    VkCommandBuffer cmd = *slot;
    p->num_steps = b->num_steps;
    memset(p->node_steps, 0, p->num_nodes * sizeof(*p->node_steps));
    for (uint32_t k = 0; k < b->num_steps; k++)
        p->node_steps[p->step_node[k]]++;
    if (p->qpool) {
        vk->vkCmdResetQueryPool(cmd, p->qpool, 0, 4 + b->num_steps);
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
    /* the dispatches, each followed by a barrier on the region it wrote */
    int bound = -1;
    for (uint32_t k = 0; k < b->num_steps; k++) {
        const dispatch *np = &b->steps[k];
        const kernel_info *ki = &k_kernels[np->kind];
        const vk_pipe *pipe = &d->pipes[np->kind];
        int key = (np->kind * V_COUNT + np->variant) * T_COUNT + np->tile;
        if (bound != key)
            vk->vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
                                  pipe->pipeline[np->variant][np->tile]);
        bound = key;
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
        /* the dispatch is done (its barrier waited for it): its end, the next one's start */
        if (timed)
            vk->vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, p->qpool, 4 + k);
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
    b->plan = ks__calloc(&d->alloc, 1, sizeof(*b->plan));
    b->map = ks__calloc(&d->alloc, (size_t)max_id + 1, sizeof(*b->map));
    b->map_wide = ks__calloc(&d->alloc, (size_t)max_id + 1, sizeof(*b->map_wide));
    b->map_cast = ks__calloc(&d->alloc, (size_t)max_id + 1, sizeof(*b->map_cast));
    b->fp32 = ks__calloc(&d->alloc, nn + 1, sizeof(*b->fp32));
    /* a region per edge at most, and per input edge an fp32 copy or a cast copy besides */
    b->rg = ks__calloc(&d->alloc, 2 * edges, sizeof(*b->rg));
    b->copy = ks__calloc(&d->alloc, 2 * edges, sizeof(*b->copy));
    if (!b->plan || !b->map || !b->map_wide || !b->map_cast || !b->fp32 || !b->rg || !b->copy)
        return ks__fail(err, cap, KS_STATUS_OUT_OF_MEMORY, "Vulkan: out of memory compiling");
    if (d->esize == 2) choose_fp32_nodes(b);

    /* plans, twice: the number of dispatches, then the dispatches and their regions */
    uint32_t total = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t k = 0; k < nn; k++) {
            const ks__kernel_ctx *c = &b->ctx[k];
            node_plan *np = b->plan;
            char why[160];
            if (plan_node(d, c, np, why, sizeof(why)))
                return ks__fail(err, cap, KS_STATUS_INTERNAL,
                                "Vulkan: node %u '%s' was accepted but cannot be planned: %s",
                                c->node_index, c->node->name, why);
            if (pass == 0) {
                /* a node whose shader exists in fp32 only (MediaPipe's transforms) runs in fp32
                 * in the fp16 modes, with casts around it ("Nodes kept in fp32") */
                for (uint32_t j = 0; d->esize == 2 && j < np->num_steps; j++)
                    if (!k_kernels[np->steps[j].kind].spv[d->fp16]) b->fp32[k] = 1;
                total += np->num_steps;
                continue;
            }
            if (np->view) {
                uint32_t in;
                if ((st = region_of(b, c->node->inputs[0], c->in[0], false, 0, &in)) ||
                    (st = region_alias(b, c->node->outputs[0], c->out[0], in)))
                    return st;
                continue;
            }
            int v = b->fp32[k] ? V_F32 : d->fp16;
            uint32_t esize = v == V_F32 ? 4u : (uint32_t)d->esize;
            /* a binding of an absent input gets the step's output region (never read); the
             * operands first, since a cast step they need goes before the node's step */
            for (uint32_t j = 0; j < np->num_steps; j++) {
                dispatch cur = np->steps[j];
                cur.variant = v;
                uint32_t nb = k_kernels[cur.kind].num_bindings, out, cb[MAX_BINDINGS];
                int o = -1 - cur.ref[nb - 1];
                if ((st = region_of(b, c->node->outputs[o], c->out[o], true, esize, &out)))
                    return st;
                for (uint32_t i = 0; i + 1 < nb; i++) {
                    int in = cur.ref[i];
                    cb[i] = out;
                    if (in < 0 || (uint32_t)in >= c->num_inputs || !c->in[in] ||
                        c->node->inputs[in] < 0)
                        continue;
                    if ((st = operand_region(b, k, cur.kind, v, i, c->node->inputs[in], c->in[in],
                                             &cb[i])))
                        return st;
                }
                cb[nb - 1] = out;
                b->steps[b->num_steps] = cur;
                memcpy(&b->bind[b->num_steps * MAX_BINDINGS], cb, nb * sizeof(cb[0]));
                p->step_node[b->num_steps] = k;
                if (j == 0) p->node_kernel[k] = kernel_name(&cur);
                b->num_steps++;
            }
        }
        if (pass == 0) {
            total += (uint32_t)edges; /* room for the casts: at most one per operand */
            b->steps = ks__calloc(&d->alloc, total + 1, sizeof(*b->steps));
            b->bind = ks__calloc(&d->alloc, (size_t)(total + 1) * MAX_BINDINGS, sizeof(*b->bind));
            b->sets = ks__calloc(&d->alloc, total + 1, sizeof(*b->sets));
            p->num_nodes = nn;
            p->step_node = ks__calloc(&d->alloc, total + 1, sizeof(*p->step_node));
            p->ts = ks__calloc(&d->alloc, total + 4, sizeof(*p->ts));
            p->node_ns = ks__calloc(&d->alloc, nn + 1, sizeof(*p->node_ns));
            p->node_kernel = ks__calloc(&d->alloc, nn + 1, sizeof(*p->node_kernel));
            p->node_steps = ks__calloc(&d->alloc, nn + 1, sizeof(*p->node_steps));
            if (!p->step_node || !p->ts || !p->node_ns || !p->node_kernel || !p->node_steps)
                return ks__fail(err, cap, KS_STATUS_OUT_OF_MEMORY,
                                "Vulkan: out of memory compiling");
            for (uint32_t i = 0; i < nn; i++)
                p->node_kernel[i] = "vk_view"; /* views: no dispatch, no time */
            if (!b->steps || !b->bind || !b->sets)
                return ks__fail(err, cap, KS_STATUS_OUT_OF_MEMORY,
                                "Vulkan: out of memory compiling");
        }
    }
    /* Regions produced by a node are made at that node: a tensor read by a later node already
     * has its region, one read before it is produced cannot occur (execution order). A view's
     * region comes after its input's, whose offset it takes. */
    VkDeviceSize dev_bytes = 0, stage_bytes = 0, const_bytes = 0;
    for (uint32_t i = 0; i < b->num_rg; i++) {
        region *rg = &b->rg[i];
        if (rg->root != i) {
            rg->off = b->rg[rg->root].off;
        } else {
            rg->off = align_up(dev_bytes, d->align);
            dev_bytes = rg->off + rg->bytes;
        }
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
        hc->half = rg->esize == 2;
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
            .queryCount = 4 + b->num_steps,
        };
        if (vk->vkCreateQueryPool(d->device, &qci, NULL, &p->qpool) != VK_SUCCESS)
            p->qpool = VK_NULL_HANDLE; /* then host clocks */
    }
    if (const_bytes && (st = upload_constants(b, const_bytes))) return st;
    for (uint32_t k = 0; k < b->num_steps; k++)
        if ((st =
                 ensure_pipe(d, b->steps[k].kind, b->steps[k].variant, b->steps[k].tile, err, cap)))
            return st;
    if ((st = make_descriptors(b))) return st;
    tune_steps(b);
    if ((st = record(b, false))) return st;
    return p->qpool ? record(b, true) : KS_STATUS_OK;
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
    ks__free(&d->alloc, b.plan);
    ks__free(&d->alloc, b.steps);
    ks__free(&d->alloc, b.map);
    ks__free(&d->alloc, b.map_wide);
    ks__free(&d->alloc, b.map_cast);
    ks__free(&d->alloc, b.fp32);
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

static ks_status vk_submit(void *dev_, void *prog_, bool profiled, char *err, size_t cap) {
    vk_dev *d = dev_;
    vk_prog *p = prog_;
    if (p->submitted)
        return ks__fail(err, cap, KS_STATUS_INVALID_STATE,
                        "Vulkan: partition %u submitted again before its wait", p->index);
    uint64_t t0 = now_ns();
    for (uint32_t i = 0; i < p->num_in; i++) {
        const host_copy *hc = &p->copies[i];
        if (hc->half) /* the fp16 modes: converted here, the only place inputs cross */
            f32_to_f16_n((uint16_t *)(p->smap + hc->stage_off), hc->host, hc->bytes / 2);
        else
            memcpy(p->smap + hc->stage_off, hc->host, hc->bytes);
    }
    p->upload_host_ns = now_ns() - t0;
    VkResult r = d->vk.vkResetFences(d->device, 1, &p->fence);
    if (r == VK_SUCCESS) {
        VkSubmitInfo si = {
            .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
            .commandBufferCount = 1,
            .pCommandBuffers = profiled && p->cmd_timed ? &p->cmd_timed : &p->cmd,
        };
        p->timed = profiled && p->cmd_timed;
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
    for (uint32_t i = p->num_in; i < p->num_in + p->num_out; i++) {
        const host_copy *hc = &p->copies[i];
        if (hc->half)
            f16_to_f32_n(hc->host, (const uint16_t *)(p->smap + hc->stage_off), hc->bytes / 2);
        else
            memcpy(hc->host, p->smap + hc->stage_off, hc->bytes);
    }
    uint64_t download_host_ns = now_ns() - done_ns;
    if (!times) return KS_STATUS_OK;
    times->upload_bytes = p->in_bytes;
    times->download_bytes = p->out_bytes;
    times->dispatches = p->num_steps;
    times->node_dispatches = p->node_steps;
    uint64_t *ts = p->ts;
    uint32_t nq = p->timed ? 4 + p->num_steps : 4; /* the others are not written: no wait on them */
    if (p->qpool && d->vk.vkGetQueryPoolResults(
                        d->device, p->qpool, 0, nq, nq * sizeof(ts[0]), ts, sizeof(ts[0]),
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
        if (p->timed) {
            /* per node: from the previous dispatch's end (or the upload's) to its own */
            memset(p->node_ns, 0, p->num_nodes * sizeof(*p->node_ns));
            uint64_t prev = ts[1];
            for (uint32_t k = 0; k < p->num_steps; k++) {
                p->node_ns[p->step_node[k]] +=
                    (uint64_t)((double)((ts[4 + k] - prev) & mask) * period);
                prev = ts[4 + k];
            }
            times->node_ns = p->node_ns;
            times->node_kernel = p->node_kernel;
        }
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
    .identity = vk_identity,
};

const ks__backend *ks__vulkan_backend(void) {
    return &k_vulkan;
}
