/* Kestrel inference engine: models and sessions.
 *
 * Usage:
 *     ks_model *model = NULL;
 *     ks_session *s = NULL;
 *     if (ks_model_load_file("blazeface.ksm", NULL, &model) != KS_STATUS_OK) { ... }
 *     if (ks_session_create(model, &(ks_session_desc){ .num_threads = 1 }, &s)) { ... }
 *     if (ks_session_reshape(s, NULL)) { ... }        // plan for the model's own input shapes
 *     ks_tensor in, out;
 *     ks_session_input(s, 0, &in);
 *     fill(in.data, in.size_bytes);
 *     if (ks_session_run(s)) { ... }
 *     ks_session_output(s, 0, &out);
 *     ks_session_destroy(s);
 *     ks_model_destroy(model);
 *
 * Thread safety: a ks_model is immutable after load and may be shared by any number of sessions
 * on any threads. A ks_session is used by one thread at a time (one session per thread).
 *
 * Lifecycle: load -> session_create -> session_reshape (shape inference, arena planning; once per
 * input shape) -> session_run (only calls kernels; never allocates) -> ... -> destroy.
 */
#ifndef KESTREL_ENGINE_H
#define KESTREL_ENGINE_H

#include "kestrel/kestrel.h"
#include "kestrel/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ks_model ks_model;
typedef struct ks_session ks_session;

/* Model load flags. */
#define KS_MODEL_NO_MMAP 0x1u       /* read the file into memory instead of mapping it */
#define KS_MODEL_SKIP_CHECKSUM 0x2u /* trust the file; skip the whole-file checksum */
#define KS_MODEL_COPY_BUFFER 0x4u   /* ks_model_load_buffer copies; the buffer may then go */

typedef struct ks_model_desc {
    const ks_allocator *allocator; /* NULL: malloc/free. Must outlive the model. */
    uint32_t flags;                /* KS_MODEL_* */
    /* ks-protect: 32-byte key of an encrypted (KSME) model; NULL for a plain .ksm. Not kept after
     * load. A key for a plain file, or no key for an encrypted one, is KS_STATUS_INVALID_ARGUMENT;
     * a wrong key or a modified file is KS_STATUS_TAMPERED. */
    const uint8_t *key;
    size_t key_bytes;
    /* Threads that decrypt an encrypted model at load (its chunks are independent); 0: the
     * online CPUs, at most 4. Plain models ignore it. */
    uint32_t num_threads;
} ks_model_desc;

/* Loads a .ksm file. Weights are used in place from a read-only mapping (zero-copy).
 * desc may be NULL. On failure see ks_last_error(NULL). */
KS_API ks_status ks_model_load_file(const char *path, const ks_model_desc *desc,
                                    ks_model **model_out);

/* Loads a .ksm image from memory. Without KS_MODEL_COPY_BUFFER, `data` must outlive the model
 * and weights are used in place (zero-copy) when `data` is 64-byte aligned. */
KS_API ks_status ks_model_load_buffer(const void *data, size_t size_bytes,
                                      const ks_model_desc *desc, ks_model **model_out);

/* Destroys a model. All sessions made from it must be destroyed first. NULL is a no-op. */
KS_API void ks_model_destroy(ks_model *model);

KS_API uint32_t ks_model_num_inputs(const ks_model *model);
KS_API uint32_t ks_model_num_outputs(const ks_model *model);
/* Describes graph input/output `index`. Dynamic dimensions are -1. Names live with the model. */
KS_API ks_status ks_model_input_info(const ks_model *model, uint32_t index,
                                     ks_tensor_info *info_out);
KS_API ks_status ks_model_output_info(const ks_model *model, uint32_t index,
                                      ks_tensor_info *info_out);
/* Value of metadata `key` (e.g. "source", "producer"), or NULL. Lives as long as the model. */
KS_API const char *ks_model_metadata(const ks_model *model, const char *key);

/* Precision of a session. Models without int8 layers run in fp32 whatever is asked, but for the
 * fp16 modes on a GPU backend. For a quantized model (ks-quant), an int8 layer "runs in fp32"
 * with its int8 weights dequantized at session create: same weights, fp32 activations (slightly
 * more accurate than int8, never less than the file's accuracy check); the fp16 modes leave its
 * int8 layers as stored on the CPU. Graph inputs and outputs keep their dtypes. */
typedef enum ks_precision {
    /* As stored: int8 layers run int8. A GPU backend has no int8 kernels: a session there runs
     * every int8 layer that has a float form dequantized, as KS_PRECISION_F32 does (the fp16
     * modes likewise, in fp16 storage on the device). */
    KS_PRECISION_DEFAULT = 0,
    KS_PRECISION_F32 = 1, /* every int8 layer that has a float form runs in fp32 */
    /* Per layer, whichever of int8 and fp32 is faster on this CPU: session create times the
     * model both ways (a few runs, with the desc's threads and tuning) and picks the layers
     * that minimise the run time, the QUANTIZE/DEQUANTIZE passes between them included.
     * Needs static input shapes (else the model runs as stored). Costs about 12 runs of the
     * model at create. */
    KS_PRECISION_FASTEST = 2,
    /* Float activations stored in fp16 on a device that can (Vulkan: storageBuffer16BitAccess),
     * halving memory traffic; convolution weights, arithmetic and every accumulation stay fp32.
     * Graph inputs and outputs keep their dtypes (converted at the transfers). Elsewhere, the
     * CPU included, the same as KS_PRECISION_DEFAULT for now (ARM fp16 CPU kernels come later).
     * Typically 1e-3 relative error against fp32; some models amplify fp16 rounding more. A
     * device without fp16 falls back instead of failing (docs/vulkan.md, "Precision"). */
    KS_PRECISION_FP16_STORAGE = 3,
    /* As FP16_STORAGE, plus fp16 arithmetic where the device has shaderFloat16: binary ops,
     * piecewise-linear activations and the products of matrix products. Every sum (convolution
     * and matmul dot products, softmax, mean and the other reductions, average pooling)
     * accumulates in fp32; convolutions, exp, log, tanh and sigmoid compute in fp32. Without
     * shaderFloat16 the same as FP16_STORAGE. On an AArch64 CPU with fp16 arithmetic (ARMv8.2
     * asimdhp: Cortex-A55/A75 and later) convolutions with groups 1 compute in fp16: weights
     * and activations rounded to fp16, fp16 products and sums over blocks of 16 terms added in
     * fp32, bias and activation in fp32; tensors between nodes stay fp32. Typically 1-3e-3
     * relative error against fp32 (docs/kernels.md). Other CPUs: the same as
     * KS_PRECISION_DEFAULT. */
    KS_PRECISION_FP16 = 4,
    KS_PRECISION_COUNT
} ks_precision;

/* Session flags. */
#define KS_SESSION_KEEP_ALL_TENSORS 0x1u /* no memory reuse: every intermediate stays readable */
/* By default (Linux, Android) each worker thread of a session with num_threads > 1 is bound to
 * its own CPU, the fastest ones first, never the CPU that created the session; the calling
 * thread is never bound. This flag (or KS_THREAD_AFFINITY=0 in the environment) leaves worker
 * placement to the OS. */
#define KS_SESSION_NO_THREAD_AFFINITY 0x2u

/* Measured kernel tuning at reshape. OFF: a cost model picks each op's kernel. FAST: the top few
 * candidates of each distinct op shape are timed briefly. FULL: every candidate is timed. Winners
 * are cached in tune_cache_path (keyed by CPU model, ISA set and Kestrel version), so a later
 * reshape with a warm cache is as fast as OFF. */
typedef enum ks_tune_mode {
    KS_TUNE_OFF = 0,
    KS_TUNE_FAST = 1,
    KS_TUNE_FULL = 2,
    KS_TUNE_COUNT
} ks_tune_mode;

/* Where a session runs. A GPU backend runs the ops it supports (docs/vulkan.md) in partitions
 * and leaves the rest, with the transfers between them, to the CPU; `ks-bench --profile` shows
 * both. A backend this build or device lacks refuses the session with KS_STATUS_UNSUPPORTED and
 * a message that names it. */
typedef enum ks_backend {
    KS_BACKEND_CPU = 0,    /* the default */
    KS_BACKEND_VULKAN = 1, /* Vulkan compute (builds with KS_VULKAN; a Vulkan 1.1 device) */
    KS_BACKEND_OPENCL = 2, /* not in this version: always refused */
    /* Session create times the model on the CPU and on each GPU backend that opens here (a few
     * runs, after one warm-up, with the desc's threads) and keeps the fastest; any failure of
     * a GPU backend falls back to the CPU. The choice is remembered for the process per model
     * (checksum and size), threads and precision, so a second create measures nothing, and with
     * a tune_cache_path also in "<tune_cache_path>.auto" (keyed by the device and driver too),
     * so a later process measures nothing either. Needs static input shapes; a model with
     * dynamic ones runs on the CPU. */
    KS_BACKEND_AUTO = 3,
    KS_BACKEND_COUNT
} ks_backend;

/* "cpu", "vulkan", "opencl", "auto"; "?" for other values. */
KS_API const char *ks_backend_string(ks_backend backend);
/* Parses those names (ASCII, exact). 0 on success, -1 otherwise (*out untouched). */
KS_API int ks_backend_parse(const char *name, ks_backend *out);

typedef struct ks_session_desc {
    int32_t num_threads;           /* 0: 1 thread. Threads split each op's work. */
    ks_precision precision;        /* 0: default */
    uint32_t flags;                /* KS_SESSION_* */
    const ks_allocator *allocator; /* NULL: the model's allocator. Must outlive the session. */
    size_t max_memory_bytes;       /* cap on the planned arena; 0: 2 GiB. Exceeding it makes
                                      reshape fail with KS_STATUS_LIMIT_EXCEEDED. */
    ks_tune_mode tune;             /* 0: off */
    const char *tune_cache_path;   /* NULL: no cache file. Copied; read and written at reshape. */
    ks_backend backend;            /* 0: the CPU */
} ks_session_desc;

/* Creates a session on a model. The model must outlive the session. desc may be NULL. */
KS_API ks_status ks_session_create(const ks_model *model, const ks_session_desc *desc,
                                   ks_session **session_out);
KS_API void ks_session_destroy(ks_session *session);
/* The backend the session runs on (KS_BACKEND_AUTO resolved: CPU or a GPU backend). */
KS_API ks_backend ks_session_backend(const ks_session *session);

/* Shape inference, algorithm choice and arena planning for the given input shapes.
 * input_shapes has ks_model_num_inputs() entries, or is NULL to use the model's own shapes
 * (which must then be fully static). Invalidates tensor views obtained before. Allocates. */
KS_API ks_status ks_session_reshape(ks_session *session, const ks_tensor_shape *input_shapes);

/* Whether the caller reads output `index` (every output is needed until told otherwise). Takes
 * effect at the next ks_session_reshape: the nodes whose results reach no needed output are
 * neither planned nor run (no memory, no time), so a model's optional heads (a pose model's
 * segmentation mask, a detector's auxiliary outputs) cost nothing when unused. The view of an
 * output that is not computed has its info but no data, and ks_session_output returns
 * KS_STATUS_INVALID_STATE for it. An output that a needed one depends on is still computed. */
KS_API ks_status ks_session_set_output_needed(ks_session *session, uint32_t index, int needed);
/* 1 if output `index` is marked needed (the setting, which the next reshape applies), else 0. */
KS_API int ks_session_output_needed(const ks_session *session, uint32_t index);

/* Views of input/output `index` in the session's memory, valid until the next reshape or
 * destroy. Write inputs before run; read outputs after run. Requires a successful reshape. */
KS_API ks_status ks_session_input(ks_session *session, uint32_t index, ks_tensor *tensor_out);
KS_API ks_status ks_session_output(ks_session *session, uint32_t index, ks_tensor *tensor_out);

/* Runs the graph once. Never allocates. */
KS_API ks_status ks_session_run(ks_session *session);

/* Per-op profiling: called after every op of every run, on the running thread. */
typedef struct ks_op_profile {
    uint32_t node_index;
    const char *op_name;   /* e.g. "conv2d" */
    const char *node_name; /* from the source model */
    uint64_t elapsed_ns;
    uint64_t flops;          /* estimated multiply-adds x2; 0 where not meaningful */
    const char *kernel_name; /* the kernel variant chosen at reshape, e.g. "ref" */
    /* Device rows (a GPU partition's nodes, or its "partition" row): the kernel dispatches the
     * row covers in this run; 0 for host rows and where the device does not count them. */
    uint32_t dispatches;
} ks_op_profile;
typedef void (*ks_profile_fn)(void *user, const ks_op_profile *profile);
/* Installs (or with fn == NULL removes) the profiling callback. */
KS_API ks_status ks_session_set_profiler(ks_session *session, ks_profile_fn fn, void *user);

/* Debugging access to every tensor of the graph (for ks-run --dump-all). Tensors whose memory
 * was reused hold garbage after run unless the session has KS_SESSION_KEEP_ALL_TENSORS. */
KS_API uint32_t ks_session_num_tensors(const ks_session *session);
KS_API ks_status ks_session_tensor(ks_session *session, uint32_t index, ks_tensor *tensor_out);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_ENGINE_H */
