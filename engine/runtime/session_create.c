/* Session creation (runtime.h): validates the description, picks the backend and, for
 * KS_PRECISION_F32 / FASTEST on a quantized model, builds the graph the session runs. */
#include "runtime.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auto_cache.h"
#include "backends/cpu/impl.h" /* ks__cpu_backend */
#include "base/alloc.h"
#include "base/crc32.h"
#include "format/ksm.h"
#include "src/common.h"
#include "src/model.h"
#include "src/precision.h"
#if defined(KS_HAVE_VULKAN)
#include "backends/vulkan/vk_host.h" /* ks__vulkan_backend_get: linked in, or the module */
#endif

const char *ks_backend_string(ks_backend b) {
    switch (b) {
    case KS_BACKEND_CPU:
        return "cpu";
    case KS_BACKEND_VULKAN:
        return "vulkan";
    case KS_BACKEND_OPENCL:
        return "opencl";
    case KS_BACKEND_AUTO:
        return "auto";
    default:
        return "?";
    }
}

int ks_backend_parse(const char *name, ks_backend *out) {
    for (int b = 0; name && out && b < KS_BACKEND_COUNT; b++)
        if (strcmp(name, ks_backend_string((ks_backend)b)) == 0) {
            *out = (ks_backend)b;
            return 0;
        }
    return -1;
}

/* The device backend of a GPU ks_backend in this build, or NULL with the reason in err. */
static const ks__backend *device_backend(ks_backend b, char *err, size_t err_cap) {
#if defined(KS_HAVE_VULKAN)
    if (b == KS_BACKEND_VULKAN) return ks__vulkan_backend_get(err, err_cap);
#endif
    if (b == KS_BACKEND_VULKAN)
        snprintf(err, err_cap,
                 "backend 'vulkan': this build of Kestrel has no Vulkan backend (configure with "
                 "-DKS_VULKAN=ON; it needs the Vulkan headers and glslangValidator)");
    else
        snprintf(err, err_cap, "backend '%s': not available in this version of Kestrel",
                 ks_backend_string(b));
    return NULL;
}

/* A device session on a graph with int8 layers (precision as stored, or a device's fp16 mode):
 * the devices have no integer kernels, so every demotable int8 layer runs dequantized, as with
 * KS_PRECISION_F32 (same weights, float activations; QUANTIZE / DEQUANTIZE stay at the graph's
 * edges and around what cannot be demoted, on the host). Without this the whole model ran on
 * the host, the device idle. The session owns the copy of the graph. */
static ks_status create_dequantized(const ks_model *model, const ks__graph *graph,
                                    const ks_session_desc *desc, const ks__backend *dev,
                                    ks_session **session_out) {
    ks_allocator a = ks__allocator_or_default(desc->allocator ? desc->allocator : &model->alloc);
    uint8_t *fp32 = ks__alloc(&a, graph->num_nodes ? graph->num_nodes : 1);
    ks__graph *g = ks__alloc(&a, sizeof(*g));
    ks_status st = KS_STATUS_OUT_OF_MEMORY;
    char err[256] = "";
    if (!fp32 || !g) {
        ks__object_error(NULL, "out of memory creating a session");
    } else {
        memset(fp32, 1, graph->num_nodes);
        if ((st = ks__prec_build(graph, fp32, g, NULL, err, sizeof(err)))) {
            ks__object_error(NULL,
                             "ks_session_create: cannot dequantize the int8 layers for %s: %s",
                             dev->name, err);
        } else if ((st = ks__session_create_split(model, g, desc, ks__cpu_backend(), dev,
                                                  session_out))) {
            ks__graph_free(g);
        } else {
            ks__session_adopt_graph(*session_out, g);
            g = NULL;
        }
    }
    ks__free(&a, fp32);
    ks__free(&a, g);
    return st;
}

/* A CPU session. KS_PRECISION_FP16 on a CPU with fp16 arithmetic runs the fp16 pass's copy of
 * the graph (precision.h: activations between fp16-capable nodes stored in fp16); elsewhere the
 * graph as given. */
static ks_status create_cpu(const ks_model *model, const ks__graph *graph,
                            const ks_session_desc *desc, ks_session **session_out) {
    const ks__backend *cpu = ks__cpu_backend();
    if (!desc || desc->precision != KS_PRECISION_FP16 || !(cpu->features() & KS_ISA_NEON_FP16))
        return ks__session_create_with(model, graph, desc, cpu, session_out);
    ks_allocator a = ks__allocator_or_default(desc->allocator ? desc->allocator : &model->alloc);
    ks__graph *g = ks__alloc(&a, sizeof(*g));
    if (!g) {
        ks__object_error(NULL, "out of memory creating a session");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    char err[256] = "";
    uint32_t n16 = 0;
    ks_status st = ks__prec_build_f16(graph, g, &n16, err, sizeof(err));
    if (st) {
        ks__object_error(NULL, "ks_session_create: cannot store the activations in fp16: %s", err);
    } else if (n16 == 0) {
        ks__graph_free(g);
        st = ks__session_create_with(model, graph, desc, cpu, session_out);
    } else if ((st = ks__session_create_with(model, g, desc, cpu, session_out))) {
        ks__graph_free(g);
    } else {
        ks__session_adopt_graph(*session_out, g);
        g = NULL;
    }
    ks__free(&a, g);
    return st;
}

static ks_status create_on(const ks_model *model, const ks__graph *graph,
                           const ks_session_desc *desc, ks_backend b, ks_session **session_out) {
    if (b == KS_BACKEND_CPU) return create_cpu(model, graph, desc, session_out);
    char err[600];
    const ks__backend *dev = device_backend(b, err, sizeof(err));
    if (!dev) {
        ks__object_error(NULL, "ks_session_create: %s", err);
        return KS_STATUS_UNSUPPORTED;
    }
    /* KS_PRECISION_F32 and FASTEST chose their layers already (create_mixed) */
    ks_precision prec = desc ? desc->precision : KS_PRECISION_DEFAULT;
    if (desc && prec != KS_PRECISION_F32 && prec != KS_PRECISION_FASTEST &&
        ks__prec_count_demotable(graph))
        return create_dequantized(model, graph, desc, dev, session_out);
    return ks__session_create_split(model, graph, desc, ks__cpu_backend(), dev, session_out);
}

/* ---- KS_BACKEND_AUTO: measured choice, remembered per model, threads and precision ---- */

#define AUTO_RUNS 5
#define AUTO_CACHE 32

typedef struct auto_key {
    uint32_t crc;
    uint64_t bytes;
    int32_t threads, precision;
} auto_key;

static struct {
    pthread_mutex_t lock;
    auto_key key[AUTO_CACHE];
    ks_backend choice[AUTO_CACHE];
    uint32_t count, next;
} g_auto = {PTHREAD_MUTEX_INITIALIZER, {{0}}, {0}, 0, 0};

static auto_key model_key(const ks_model *m, const ks_session_desc *desc) {
    auto_key k = {0, (uint64_t)m->image_bytes, desc->num_threads > 1 ? desc->num_threads : 1,
                  (int32_t)desc->precision};
    const uint8_t *img = m->image;
    /* the file's own CRC when it has one (.ksm header bytes 12 and 28), else computed once */
    if (img && m->image_bytes >= 32 && (img[12] & KSM_FLAG_CHECKSUM))
        k.crc = (uint32_t)img[28] | (uint32_t)img[29] << 8 | (uint32_t)img[30] << 16 |
                (uint32_t)img[31] << 24;
    else if (img)
        k.crc = ks__crc32(0, img, m->image_bytes);
    return k;
}

static bool auto_lookup(const auto_key *k, ks_backend *out) {
    bool found = false;
    pthread_mutex_lock(&g_auto.lock);
    for (uint32_t i = 0; i < g_auto.count && !found; i++)
        if (memcmp(&g_auto.key[i], k, sizeof(*k)) == 0) {
            *out = g_auto.choice[i];
            found = true;
        }
    pthread_mutex_unlock(&g_auto.lock);
    return found;
}

static void auto_store(const auto_key *k, ks_backend b) {
    pthread_mutex_lock(&g_auto.lock);
    uint32_t i = g_auto.count < AUTO_CACHE ? g_auto.count++ : g_auto.next++ % AUTO_CACHE;
    g_auto.key[i] = *k;
    g_auto.choice[i] = b;
    pthread_mutex_unlock(&g_auto.lock);
}

void ks__auto_forget(void) {
    pthread_mutex_lock(&g_auto.lock);
    g_auto.count = g_auto.next = 0;
    pthread_mutex_unlock(&g_auto.lock);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Plans s for the model's own shapes and fills its inputs with a fixed ramp. */
static ks_status prepare_timing(ks_session *s, uint32_t num_inputs) {
    ks_status st = ks_session_reshape(s, NULL);
    for (uint32_t i = 0; !st && i < num_inputs; i++) {
        ks_tensor x;
        if ((st = ks_session_input(s, i, &x))) break;
        if (x.info.dtype == KS_DTYPE_F32) {
            float *f = x.data;
            for (size_t k = 0; k < x.size_bytes / sizeof(float); k++)
                f[k] = (float)((k * 37u) % 251u) / 251.0f;
        } else {
            memset(x.data, 0, x.size_bytes);
        }
    }
    return st;
}

static bool static_inputs(const ks__graph *g) {
    for (uint32_t i = 0; i < g->num_inputs; i++) {
        const ks__tensor *t = &g->tensors[g->inputs[i]];
        for (int32_t k = 0; k < t->rank; k++)
            if (t->dims[k] < 0) return false;
    }
    return true;
}

/* The choice's key in the file beside the tuning cache (auto_cache.h), or false when there is no
 * file or no device to name (then nothing is kept on disk). */
static bool file_key(const auto_key *k, const ks_session_desc *desc, char *buf, size_t cap) {
    if (!desc || !desc->tune_cache_path || !desc->tune_cache_path[0]) return false;
    char err[200], dev[300];
    const ks__backend *b = device_backend(KS_BACKEND_VULKAN, err, sizeof(err));
    if (!b || !b->identity || b->identity(dev, sizeof(dev), err, sizeof(err)) != KS_STATUS_OK)
        return false;
    int n = snprintf(buf, cap, "%08x:%llu:t%d:p%d:%s", (unsigned)k->crc,
                     (unsigned long long)k->bytes, (int)k->threads, (int)k->precision, dev);
    return n > 0 && (size_t)n < cap;
}

/* "<tune_cache_path>.auto" (freed by the caller), or NULL. */
static char *file_path(const ks_session_desc *desc) {
    size_t n = strlen(desc->tune_cache_path);
    char *p = ks__alloc(NULL, n + sizeof(".auto"));
    if (p) {
        memcpy(p, desc->tune_cache_path, n);
        memcpy(p + n, ".auto", sizeof(".auto"));
    }
    return p;
}

static ks_status create_known(const ks_model *model, const ks__graph *graph,
                              const ks_session_desc *desc, ks_backend known,
                              ks_session **session_out) {
    if (known == KS_BACKEND_CPU ||
        create_on(model, graph, desc, known, session_out) != KS_STATUS_OK)
        return create_on(model, graph, desc, KS_BACKEND_CPU, session_out);
    return KS_STATUS_OK;
}

static ks_status create_auto(const ks_model *model, const ks__graph *graph,
                             const ks_session_desc *desc, ks_session **session_out) {
    auto_key key = model_key(model, desc);
    ks_backend known;
    if (auto_lookup(&key, &known)) return create_known(model, graph, desc, known, session_out);
    char fkey[KS__AUTO_KEY_CAP];
    char *path = file_key(&key, desc, fkey, sizeof(fkey)) ? file_path(desc) : NULL;
    if (path && ks__auto_load(path, fkey, &known)) {
        ks__free(NULL, path);
        ks__log(KS_LOG_INFO, "backend auto: %s (chosen before, %s.auto)", ks_backend_string(known),
                desc->tune_cache_path);
        auto_store(&key, known);
        return create_known(model, graph, desc, known, session_out);
    }
    ks_session *cpu = NULL, *gpu = NULL;
    ks_status st = create_on(model, graph, desc, KS_BACKEND_CPU, &cpu);
    if (st) {
        ks__free(NULL, path);
        return st;
    }
    ks_backend best = KS_BACKEND_CPU;
    char why[KS_ERROR_CAP] = "";
    if (!static_inputs(graph)) {
        snprintf(why, sizeof(why), "dynamic input shapes");
    } else if (create_on(model, graph, desc, KS_BACKEND_VULKAN, &gpu) != KS_STATUS_OK) {
        snprintf(why, sizeof(why), "%s", ks_last_error(NULL));
    } else if (prepare_timing(cpu, graph->num_inputs) || prepare_timing(gpu, graph->num_inputs) ||
               ks_session_run(cpu) || ks_session_run(gpu)) {
        snprintf(why, sizeof(why), "a timing run failed: %s",
                 ks_last_error(gpu) ? ks_last_error(gpu) : "?");
    } else {
        /* Interleaved, so that drift hits both alike; medians. A GPU at more than twice the
         * CPU's time after the first pair (a software driver) is not timed further. */
        double t_cpu[AUTO_RUNS], t_gpu[AUTO_RUNS];
        bool ok = true;
        int runs = 0;
        for (int r = 0; r < AUTO_RUNS && ok; r++) {
            double t0 = now_ms();
            ok = ks_session_run(cpu) == KS_STATUS_OK;
            double t1 = now_ms();
            ok = ok && ks_session_run(gpu) == KS_STATUS_OK;
            t_cpu[r] = t1 - t0;
            t_gpu[r] = now_ms() - t1;
            runs = r + 1;
            if (r == 0 && t_gpu[0] > 2.0 * t_cpu[0]) break;
        }
        if (ok) {
            qsort(t_cpu, (size_t)runs, sizeof(double), cmp_double);
            qsort(t_gpu, (size_t)runs, sizeof(double), cmp_double);
            if (t_gpu[runs / 2] < t_cpu[runs / 2]) best = KS_BACKEND_VULKAN;
            ks__log(KS_LOG_INFO, "backend auto: cpu %.3f ms, vulkan %.3f ms (medians of %d): %s",
                    t_cpu[runs / 2], t_gpu[runs / 2], runs, ks_backend_string(best));
        } else {
            snprintf(why, sizeof(why), "a timing run failed: %s", ks_last_error(gpu));
        }
    }
    if (why[0]) ks__log(KS_LOG_INFO, "backend auto: the CPU (%s)", why);
    auto_store(&key, best);
    /* kept on disk only when measured: a failure may be passing (a busy device, a timing run
     * that failed), and the next process then tries again */
    if (path && !why[0]) ks__auto_save(path, fkey, best);
    ks__free(NULL, path);
    if (best == KS_BACKEND_CPU) {
        ks_session_destroy(gpu);
        *session_out = cpu;
    } else {
        ks_session_destroy(cpu);
        *session_out = gpu;
    }
    return KS_STATUS_OK;
}

ks_status ks__session_create_on(const ks_model *model, const ks__graph *graph,
                                const ks_session_desc *desc, ks_session **session_out) {
    ks_backend b = desc ? desc->backend : KS_BACKEND_CPU;
    if (b == KS_BACKEND_AUTO) return create_auto(model, graph, desc, session_out);
    return create_on(model, graph, desc, b, session_out);
}

/* KS_PRECISION_F32 / FASTEST on a quantized model: the session runs its own copy of the graph
 * with the chosen int8 layers in fp32 (precision.h). */
static ks_status create_mixed(const ks_model *model, const ks_session_desc *desc,
                              ks_session **session_out) {
    const ks__graph *mg = &model->graph;
    ks_allocator a = ks__allocator_or_default(desc->allocator ? desc->allocator : &model->alloc);
    uint8_t *fp32 = ks__alloc(&a, mg->num_nodes ? mg->num_nodes : 1);
    ks__graph *g = ks__alloc(&a, sizeof(*g));
    ks_status st = KS_STATUS_OUT_OF_MEMORY;
    if (!fp32 || !g) {
        ks__object_error(NULL, "out of memory creating a session");
        goto done;
    }
    memset(fp32, desc->precision == KS_PRECISION_F32, mg->num_nodes);
    if (desc->precision == KS_PRECISION_FASTEST && (st = ks__prec_plan(model, desc, fp32))) {
        ks__object_error(NULL, "precision fastest: %s", ks_status_string(st));
        goto done;
    }
    bool any = false;
    for (uint32_t i = 0; i < mg->num_nodes; i++)
        any |= fp32[i] != 0;
    if (!any) {
        st = ks__session_create_on(model, mg, desc, session_out);
        goto done;
    }
    char err[256] = "";
    if ((st = ks__prec_build(mg, fp32, g, NULL, err, sizeof(err)))) {
        ks__object_error(NULL, "ks_session_create: cannot run the int8 layers in fp32: %s", err);
        goto done;
    }
    if ((st = ks__session_create_on(model, g, desc, session_out))) {
        ks__graph_free(g);
        goto done;
    }
    ks__session_adopt_graph(*session_out, g);
    g = NULL;
done:
    ks__free(&a, fp32);
    ks__free(&a, g);
    return st;
}

ks_status ks_session_create(const ks_model *model, const ks_session_desc *desc,
                            ks_session **session_out) {
    if (!model || !session_out) {
        ks__object_error(NULL, "ks_session_create: model and session_out must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (desc && (desc->num_threads < 0 || desc->precision >= KS_PRECISION_COUNT ||
                 (desc->flags & ~(KS_SESSION_KEEP_ALL_TENSORS | KS_SESSION_NO_THREAD_AFFINITY)) ||
                 (int)desc->tune < 0 || desc->tune >= KS_TUNE_COUNT || (int)desc->backend < 0 ||
                 desc->backend >= KS_BACKEND_COUNT)) {
        ks__object_error(NULL,
                         "ks_session_create: invalid desc (num_threads %d, precision %d, "
                         "flags 0x%x, tune %d, backend %d)",
                         desc->num_threads, (int)desc->precision, desc->flags, (int)desc->tune,
                         (int)desc->backend);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    ks_precision prec = desc ? desc->precision : KS_PRECISION_DEFAULT;
    /* the fp16 modes are the device's (the Vulkan backend's options): int8 layers as stored */
    if (prec == KS_PRECISION_DEFAULT || prec == KS_PRECISION_FP16_STORAGE ||
        prec == KS_PRECISION_FP16 || !ks__prec_count_demotable(&model->graph))
        return ks__session_create_on(model, &model->graph, desc, session_out);
    return create_mixed(model, desc, session_out);
}
