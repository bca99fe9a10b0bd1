/* Measured kernel selection (tune.h).
 *
 * Why time at reshape rather than trust the cost model: the cost functions are calibrated on one
 * machine and see neither the cache sizes nor the memory bandwidth of this one; a few runs on the
 * real shapes settle close calls (e.g. Winograd F(2) vs F(4) vs the indirect GEMM on small
 * images). Timing costs a few runs per distinct node shape, so winners are cached in memory
 * (repeated blocks of a network share keys) and on disk.
 *
 * Trial runs use their own buffers: the session's arena does not exist yet during reshape, and
 * the reshape-time tensors must not change. Each candidate gets a warm-up run and then up to
 * `runs` timed runs (fewer once a run exceeds the time budget); the minimum is its time, the
 * least noisy statistic on a shared machine.
 */
#include "tune.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

#define TUNE_MAGIC "kestrel-tune 1"
#define TUNE_MAX_FILE_BYTES ((size_t)4 << 20)
#define TUNE_MAX_ENTRIES 65536u
#define TUNE_KEY_CAP 1024
#define TUNE_NAME_CAP 128
#define TUNE_FAST_CANDIDATES 3
#define TUNE_MAX_CANDIDATES 32
#define TUNE_RUN_BUDGET_NS 20000000ull /* stop repeating once one run takes 20 ms */

typedef struct tune_entry {
    char *key;
    const ks__impl *impl;
} tune_entry;

struct ks__tuner {
    ks_allocator alloc;
    ks_tune_mode mode;
    char *path;
    bool loaded; /* the cache file was read (or found absent/ignored) */
    tune_entry *entries;
    uint32_t num_entries, cap_entries;
    char header[512];
};

static atomic_uint_least64_t g_trials;

uint64_t ks__tune_trial_count(void) {
    return (uint64_t)atomic_load(&g_trials);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The header line without its newline; tabs and newlines in the CPU name become spaces so the
 * line stays parseable. */
static void make_header(char *buf, size_t cap) {
    char isa[128], cpu[256];
    ks__isa_string(ks__cpu_isa(), isa, sizeof(isa));
    snprintf(cpu, sizeof(cpu), "%s", ks__cpu_name() ? ks__cpu_name() : "unknown");
    for (char *p = cpu; *p; p++)
        if (*p == '\t' || *p == '\n' || *p == '\r') *p = ' ';
    snprintf(buf, cap, "%s\t%s\t%s\t%s", TUNE_MAGIC, cpu, isa, KS_VERSION_STRING);
}

ks_status ks__tuner_create(const ks_allocator *alloc, ks_tune_mode mode, const char *cache_path,
                           ks__tuner **tuner_out) {
    ks_allocator a = ks__allocator_or_default(alloc);
    if (mode != KS_TUNE_FAST && mode != KS_TUNE_FULL) return KS_STATUS_INVALID_ARGUMENT;
    ks__tuner *t = ks__calloc(&a, 1, sizeof(*t));
    if (!t) return KS_STATUS_OUT_OF_MEMORY;
    t->alloc = a;
    t->mode = mode;
    if (cache_path && cache_path[0]) {
        size_t n = strlen(cache_path);
        t->path = ks__alloc(&a, n + 1);
        if (!t->path) {
            ks__free(&a, t);
            return KS_STATUS_OUT_OF_MEMORY;
        }
        memcpy(t->path, cache_path, n + 1);
    }
    make_header(t->header, sizeof(t->header));
    *tuner_out = t;
    return KS_STATUS_OK;
}

static void clear_entries(ks__tuner *t) {
    for (uint32_t i = 0; i < t->num_entries; i++)
        ks__free(&t->alloc, t->entries[i].key);
    t->num_entries = 0;
}

void ks__tuner_destroy(ks__tuner *t) {
    if (!t) return;
    clear_entries(t);
    ks__free(&t->alloc, t->entries);
    ks__free(&t->alloc, t->path);
    ks__free(&t->alloc, t);
}

static tune_entry *find_entry(ks__tuner *t, const char *key) {
    for (uint32_t i = 0; i < t->num_entries; i++)
        if (strcmp(t->entries[i].key, key) == 0) return &t->entries[i];
    return NULL;
}

/* Adds or replaces; returns -1 on out of memory or when the cache is full. */
static int put_entry(ks__tuner *t, const char *key, size_t key_len, const ks__impl *impl) {
    char tmp[TUNE_KEY_CAP];
    if (key_len >= sizeof(tmp)) return -1;
    memcpy(tmp, key, key_len);
    tmp[key_len] = 0;
    tune_entry *e = find_entry(t, tmp);
    if (e) {
        e->impl = impl;
        return 0;
    }
    if (t->num_entries >= TUNE_MAX_ENTRIES) return -1;
    if (t->num_entries == t->cap_entries) {
        uint32_t cap = t->cap_entries ? t->cap_entries * 2 : 64;
        tune_entry *ne = ks__alloc(&t->alloc, cap * sizeof(*ne));
        if (!ne) return -1;
        if (t->num_entries) memcpy(ne, t->entries, t->num_entries * sizeof(*ne));
        ks__free(&t->alloc, t->entries);
        t->entries = ne;
        t->cap_entries = cap;
    }
    char *k = ks__alloc(&t->alloc, key_len + 1);
    if (!k) return -1;
    memcpy(k, tmp, key_len + 1);
    t->entries[t->num_entries].key = k;
    t->entries[t->num_entries].impl = impl;
    t->num_entries++;
    return 0;
}

static const ks__impl *impl_by_name(const char *name, size_t len) {
    for (const ks__impl *const *it = ks__impl_list(); *it; it++)
        if (strlen((*it)->name) == len && memcmp((*it)->name, name, len) == 0) return *it;
    return NULL;
}

static int key_char_ok(char c) {
    return c >= 0x21 && c <= 0x7e; /* printable, no space or tab */
}

int ks__tune_parse(ks__tuner *t, const char *data, size_t size) {
    const char *path = t->path ? t->path : "(memory)";
    if (size > TUNE_MAX_FILE_BYTES) {
        ks__log(KS_LOG_WARN, "tune cache '%s': %zu bytes is more than the %zu allowed; ignored",
                path, size, TUNE_MAX_FILE_BYTES);
        return -1;
    }
    size_t hl = strlen(t->header);
    if (size < hl + 1 || memcmp(data, t->header, hl) != 0 || data[hl] != '\n') {
        ks__log(KS_LOG_INFO,
                "tune cache '%s' was made for another CPU, ISA set or Kestrel version (or is "
                "not a tune cache); ignored",
                path);
        return -1;
    }
    /* Validate every line before keeping any, so a damaged file is ignored as a whole. */
    for (int pass = 0; pass < 2; pass++) {
        size_t pos = hl + 1, line = 2;
        while (pos < size) {
            const char *ln = data + pos;
            const char *nl = memchr(ln, '\n', size - pos);
            if (!nl) {
                ks__log(KS_LOG_WARN, "tune cache '%s': line %zu has no newline; ignored", path,
                        line);
                return -1;
            }
            size_t len = (size_t)(nl - ln);
            const char *tab = memchr(ln, '\t', len);
            size_t key_len = tab ? (size_t)(tab - ln) : 0;
            size_t name_len = tab ? len - key_len - 1 : 0;
            int ok = tab && key_len > 0 && key_len < TUNE_KEY_CAP && name_len > 0 &&
                     name_len < TUNE_NAME_CAP;
            for (size_t i = 0; ok && i < key_len; i++)
                ok = key_char_ok(ln[i]);
            const ks__impl *im = ok ? impl_by_name(tab + 1, name_len) : NULL;
            if (!im) {
                ks__log(KS_LOG_WARN,
                        "tune cache '%s': line %zu is malformed or names an unknown kernel; "
                        "ignored",
                        path, line);
                if (pass == 1) clear_entries(t);
                return -1;
            }
            if (pass == 1 && put_entry(t, ln, key_len, im)) {
                ks__log(KS_LOG_WARN, "tune cache '%s': too many entries or out of memory; ignored",
                        path);
                clear_entries(t);
                return -1;
            }
            pos += len + 1;
            line++;
        }
    }
    return 0;
}

static void load_file(ks__tuner *t) {
    t->loaded = true;
    if (!t->path) return;
    FILE *f = fopen(t->path, "rb");
    if (!f) return; /* no cache yet */
    char *buf = NULL;
    size_t n = 0;
    if (fseek(f, 0, SEEK_END) == 0) {
        long end = ftell(f);
        if (end >= 0 && (unsigned long)end <= TUNE_MAX_FILE_BYTES && fseek(f, 0, SEEK_SET) == 0) {
            buf = ks__alloc(&t->alloc, (size_t)end + 1);
            if (buf) n = fread(buf, 1, (size_t)end, f);
            if (buf && n != (size_t)end) {
                ks__log(KS_LOG_WARN, "tune cache '%s': read error; ignored", t->path);
                ks__free(&t->alloc, buf);
                buf = NULL;
            }
        } else if (end >= 0) {
            ks__log(KS_LOG_WARN, "tune cache '%s': larger than %zu bytes; ignored", t->path,
                    TUNE_MAX_FILE_BYTES);
        }
    }
    fclose(f);
    if (buf) ks__tune_parse(t, buf, n);
    ks__free(&t->alloc, buf);
}

/* Writes the whole memory cache to "<path>.tmp", then renames it over the file. */
static void save_file(ks__tuner *t) {
    if (!t->path) return;
    size_t pl = strlen(t->path);
    char *tmp = ks__alloc(&t->alloc, pl + 5);
    if (!tmp) return;
    memcpy(tmp, t->path, pl);
    memcpy(tmp + pl, ".tmp", 5);
    FILE *f = fopen(tmp, "wb");
    int ok = f != NULL;
    if (ok) ok = fprintf(f, "%s\n", t->header) > 0;
    for (uint32_t i = 0; ok && i < t->num_entries; i++)
        if (t->entries[i].impl)
            ok = fprintf(f, "%s\t%s\n", t->entries[i].key, t->entries[i].impl->name) > 0;
    if (f && fclose(f) != 0) ok = 0;
    if (ok && rename(tmp, t->path) != 0) ok = 0;
    if (!ok) {
        ks__log(KS_LOG_WARN, "tune cache '%s': cannot write it; results kept in memory only",
                t->path);
        remove(tmp);
    }
    ks__free(&t->alloc, tmp);
}

/* (op, threads, the session's ISA bits, each input's dtype/shape/constness, each output's
 * dtype/shape, params). The ISA bits are the session's, not the machine's (the header has those):
 * KS_ISA_MAX, KS_FORCE_SCALAR and the precision narrow them (KS_PRECISION_FP16 adds the AArch64
 * fp16 kernels), and a winner timed among one set of candidates says nothing about another. */
static int make_key(const ks__kernel_ctx *ctx, uint32_t isa, char *buf, size_t cap) {
    const ks__node *n = ctx->node;
    size_t len = 0;
#define APPEND(...)                                                                                \
    do {                                                                                           \
        int w_ = snprintf(buf + len, cap - len, __VA_ARGS__);                                      \
        if (w_ < 0 || (size_t)w_ >= cap - len) return -1;                                          \
        len += (size_t)w_;                                                                         \
    } while (0)
    APPEND("%s/t%u/x%x", ks__op_get_info(n->op)->name, ctx->num_threads ? ctx->num_threads : 1,
           (unsigned)isa);
    for (uint32_t k = 0; k < ctx->num_inputs + ctx->num_outputs; k++) {
        const ks__rt_tensor *r = k < ctx->num_inputs ? ctx->in[k] : ctx->out[k - ctx->num_inputs];
        APPEND("/%c", k < ctx->num_inputs ? 'i' : 'o');
        if (!r) {
            APPEND("-");
            continue;
        }
        APPEND("%d%s%s", (int)r->dtype, r->quant && r->quant->count ? "q" : "",
               k < ctx->num_inputs && r->data ? "c" : "");
        for (int32_t d = 0; d < r->rank && d < KS_MAX_RANK; d++)
            APPEND("%c%lld", d ? 'x' : ':', (long long)r->dims[d]);
    }
    APPEND("/p");
    for (int i = 0; i < KS_NODE_MAX_IPARAMS; i++)
        APPEND("%s%d", i ? "," : "", (int)n->ip[i]);
    APPEND("/f");
    for (int i = 0; i < KS_NODE_MAX_FPARAMS; i++) {
        uint32_t bits;
        memcpy(&bits, &n->fp[i], sizeof(bits));
        APPEND("%s%x", i ? "," : "", (unsigned)bits);
    }
#undef APPEND
    return 0;
}

/* Best time in ns of one candidate on trial buffers, or UINT64_MAX if it failed. */
static uint64_t time_candidate(ks__tuner *t, const ks__impl *im, ks__kernel_ctx *trial, int runs) {
    uint64_t best = UINT64_MAX;
    size_t packed_bytes = 0;
    void *packed = NULL, *scratch = NULL;
    trial->packed = NULL;
    trial->packed_bytes = 0;
    trial->scratch = NULL;
    trial->scratch_bytes = 0;
    char err[256];
    trial->err = err;
    trial->err_cap = sizeof(err);
    if (im->plan(trial, &packed_bytes)) goto done;
    if (packed_bytes) {
        packed = ks__alloc_aligned(&t->alloc, packed_bytes, 64);
        if (!packed) goto done;
        trial->packed = packed;
        trial->packed_bytes = packed_bytes;
        if (im->pack && im->pack(trial)) goto done;
    }
    if (trial->scratch_bytes) {
        scratch = ks__alloc_aligned(&t->alloc, trial->scratch_bytes, 64);
        if (!scratch) goto done;
        trial->scratch = scratch;
    }
    atomic_fetch_add(&g_trials, 1);
    if (im->run(trial)) goto done; /* warm-up: caches, page faults */
    for (int r = 0; r < runs; r++) {
        uint64_t t0 = now_ns();
        if (im->run(trial)) {
            best = UINT64_MAX;
            goto done;
        }
        uint64_t dt = now_ns() - t0;
        if (dt < best) best = dt;
        if (dt > TUNE_RUN_BUDGET_NS) break;
    }
done:
    ks__free(&t->alloc, packed);
    ks__free(&t->alloc, scratch);
    return best;
}

static size_t tensor_bytes(const ks__rt_tensor *r) {
    if (r->size_bytes) return r->size_bytes;
    int64_t ne = ks__numel(r->rank, r->dims);
    return ne > 0 ? (size_t)ne * ks_dtype_size(r->dtype) : 0;
}

/* Times the candidates (sorted by cost) and returns the fastest; NULL if none could run. */
static const ks__impl *measure(ks__tuner *t, const ks__kernel_ctx *ctx, const ks__impl **cand,
                               uint32_t num_cand) {
    uint32_t nt = ctx->num_inputs + ctx->num_outputs;
    const ks__impl *best = NULL;
    uint64_t best_ns = UINT64_MAX;
    ks__rt_tensor *copies = ks__calloc(&t->alloc, nt ? nt : 1, sizeof(*copies));
    ks__rt_tensor **ptrs = ks__calloc(&t->alloc, nt ? nt : 1, sizeof(*ptrs));
    void **bufs = ks__calloc(&t->alloc, nt ? nt : 1, sizeof(*bufs));
    if (!copies || !ptrs || !bufs) goto done;
    for (uint32_t k = 0; k < nt; k++) {
        const ks__rt_tensor *r = k < ctx->num_inputs ? ctx->in[k] : ctx->out[k - ctx->num_inputs];
        if (!r) continue;
        copies[k] = *r;
        ptrs[k] = &copies[k];
        if (r->data) continue; /* constants and reshape-time values */
        size_t bytes = tensor_bytes(r);
        bufs[k] = ks__alloc_aligned(&t->alloc, bytes ? bytes : 64, 64);
        if (!bufs[k]) goto done;
        memset(bufs[k], 0, bytes ? bytes : 64);
        copies[k].data = bufs[k];
        copies[k].size_bytes = bytes;
    }
    int runs = t->mode == KS_TUNE_FULL ? 7 : 3;
    for (uint32_t c = 0; c < num_cand; c++) {
        ks__kernel_ctx trial = *ctx;
        trial.in = ptrs;
        trial.out = ptrs + ctx->num_inputs;
        uint64_t ns = time_candidate(t, cand[c], &trial, runs);
        if (ns < best_ns) {
            best_ns = ns;
            best = cand[c];
        }
    }
    ks__log(KS_LOG_DEBUG, "tune: node %u '%s': %s (%llu ns) of %u candidates", ctx->node_index,
            ctx->node->name ? ctx->node->name : "", best ? best->name : "none",
            (unsigned long long)best_ns, num_cand);
done:
    for (uint32_t k = 0; bufs && k < nt; k++)
        ks__free(&t->alloc, bufs[k]);
    ks__free(&t->alloc, bufs);
    ks__free(&t->alloc, ptrs);
    ks__free(&t->alloc, copies);
    return best;
}

const ks__impl *ks__tune_select(ks__tuner *t, const ks__kernel_ctx *ctx, uint32_t isa) {
    const ks__impl *cand[TUNE_MAX_CANDIDATES];
    double cost[TUNE_MAX_CANDIDATES];
    uint32_t num = 0;
    for (const ks__impl *const *it = ks__impl_list(); *it; it++) {
        const ks__impl *im = *it;
        double c = ks__impl_cost(im, ctx, isa);
        if (c < 0) continue;
        /* insertion by cost, stable (list order breaks ties, as ks__impl_select) */
        uint32_t j = num < TUNE_MAX_CANDIDATES ? num : TUNE_MAX_CANDIDATES - 1;
        if (num == TUNE_MAX_CANDIDATES && c >= cost[j]) continue;
        while (j > 0 && cost[j - 1] > c) {
            cand[j] = cand[j - 1];
            cost[j] = cost[j - 1];
            j--;
        }
        cand[j] = im;
        cost[j] = c;
        if (num < TUNE_MAX_CANDIDATES) num++;
    }
    if (num < 2) return num ? cand[0] : NULL;
    if (!t->loaded) load_file(t);
    char key[TUNE_KEY_CAP];
    int have_key = make_key(ctx, isa, key, sizeof(key)) == 0;
    if (have_key) {
        const tune_entry *e = find_entry(t, key);
        if (e) {
            for (uint32_t c = 0; c < num; c++)
                if (cand[c] == e->impl) return e->impl;
            /* a cached winner that no longer applies: re-tune */
        }
    }
    if (t->mode == KS_TUNE_FAST && num > TUNE_FAST_CANDIDATES) num = TUNE_FAST_CANDIDATES;
    const ks__impl *best = measure(t, ctx, cand, num);
    if (!best) {
        ks__log(KS_LOG_WARN, "tune: node %u: no candidate could be timed; using the cost model",
                ctx->node_index);
        return cand[0];
    }
    if (have_key && put_entry(t, key, strlen(key), best) == 0) save_file(t);
    return best;
}
