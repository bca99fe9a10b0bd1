/* Kestrel's thread pool (pool.h). One job at a time; the caller works too.
 *
 * Why spin then sleep: inference issues one parallel_for per op, hundreds per frame, with gaps of
 * microseconds. Sleeping on a condition variable between them costs a futex wake-up (tens of
 * microseconds) per op; spinning briefly catches the next op while it is still hot, and the
 * bounded spin keeps idle apps from burning a core. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* cpu_set_t, sched_setaffinity, sched_getcpu (glibc and bionic) */
#endif
#include "pool.h"

#include "alloc.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KS_POOL_SPIN 20000
#define KS_POOL_MAX_THREADS 64
#define KS_POOL_MAX_CPUS 256 /* CPUs beyond this index are never chosen for binding */

struct ks__pool {
    ks_allocator alloc;
    uint32_t num_threads; /* including the caller */
    pthread_t *threads;
    uint32_t num_started;
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    /* (generation << 32) | next chunk index. Claiming a chunk is one CAS that also checks the
     * generation, so a worker that wakes late can never take a chunk of a newer job with the
     * parameters of an older one. */
    _Atomic uint64_t ticket;
    atomic_size_t chunks_done;
    atomic_bool caller_sleeping;
    atomic_bool stop;
    /* the current job; written before the generation is published, stable until it is done */
    ks__range_fn fn;
    void *arg;
    size_t num_items, chunk;
    atomic_size_t num_chunks; /* atomic: late workers compare against it while it changes */
};

typedef struct worker_arg {
    ks__pool *pool;
    uint32_t index;
    int cpu; /* the CPU this worker binds itself to, or -1 */
} worker_arg;

/* ---- binding workers to CPUs (Linux and Android) ----
 * Why: with unbound workers, a worker woken after an idle gap (one inference per camera frame)
 * was often placed on the CPU of the thread that woke it, preempting the caller until the load
 * balancer separated them: on the 2-core test VM, FaceMesh at 2 threads with a 10 ms pause
 * before each run took 1.48 ms unbound, 0.72 ms bound and 1.06 ms at 1 thread (ks-bench
 * --gap-ms 10). Each worker is bound to its own CPU, chosen among the CPUs the process may use:
 * first those the fewest workers of other live pools are bound to, then the fastest
 * (cpufreq/cpuinfo_max_freq, so big cores on big.LITTLE phones), never the CPU the creating
 * thread runs on. The caller is never bound. No binding when there are not enough CPUs for one
 * worker each, when KS_THREAD_AFFINITY=0 is set, or with KS_SESSION_NO_THREAD_AFFINITY. */
#if defined(__linux__)
static atomic_int g_bound_workers[KS_POOL_MAX_CPUS];

static long cpu_max_freq_khz(int cpu) {
    char path[96];
    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpufreq/cpuinfo_max_freq", cpu);
    FILE *f = fopen(path, "r");
    long khz = 0;
    if (f) {
        if (fscanf(f, "%ld", &khz) != 1) khz = 0;
        fclose(f);
    }
    return khz;
}

/* Fills cpus[1..num_threads-1] with one distinct CPU per worker, or leaves them all -1. */
static void choose_worker_cpus(worker_arg *args, uint32_t num_threads) {
    const char *env = getenv("KS_THREAD_AFFINITY");
    if (env && strcmp(env, "0") == 0) return;
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
    int self = sched_getcpu();
    int cand[KS_POOL_MAX_CPUS];
    long freq[KS_POOL_MAX_CPUS];
    int num_cand = 0;
    for (int c = 0; c < KS_POOL_MAX_CPUS && c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &allowed) || c == self) continue;
        cand[num_cand] = c;
        freq[num_cand] = cpu_max_freq_khz(c);
        num_cand++;
    }
    if ((uint32_t)num_cand < num_threads - 1) return; /* oversubscribed: let the OS share */
    for (uint32_t w = 1; w < num_threads; w++) {
        int best = -1;
        for (int k = 0; k < num_cand; k++) {
            if (cand[k] < 0) continue;
            if (best < 0) {
                best = k;
                continue;
            }
            int load_k = atomic_load(&g_bound_workers[cand[k]]);
            int load_b = atomic_load(&g_bound_workers[cand[best]]);
            if (load_k < load_b || (load_k == load_b && freq[k] > freq[best])) best = k;
        }
        args[w].cpu = cand[best];
        atomic_fetch_add(&g_bound_workers[cand[best]], 1);
        cand[best] = -1;
    }
}

static void bind_self(int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    (void)sched_setaffinity(0, sizeof(one), &one); /* best effort: a refusal only costs speed */
}

static void release_worker_cpus(const worker_arg *args, uint32_t num_threads) {
    for (uint32_t w = 1; w < num_threads; w++)
        if (args[w].cpu >= 0) atomic_fetch_sub(&g_bound_workers[args[w].cpu], 1);
}
#else
static void choose_worker_cpus(worker_arg *args, uint32_t num_threads) {
    (void)args;
    (void)num_threads;
}
static void bind_self(int cpu) {
    (void)cpu;
}
static void release_worker_cpus(const worker_arg *args, uint32_t num_threads) {
    (void)args;
    (void)num_threads;
}
#endif

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("pause");
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* Claims and runs chunks of generation gen until none are left. */
static void do_chunks(ks__pool *p, uint32_t gen, uint32_t thread) {
    for (;;) {
        uint64_t t = atomic_load(&p->ticket);
        if ((uint32_t)(t >> 32) != gen || (t & 0xffffffffu) >= p->num_chunks) return;
        if (!atomic_compare_exchange_weak(&p->ticket, &t, t + 1)) continue;
        size_t c = (size_t)(t & 0xffffffffu);
        size_t begin = c * p->chunk, end = begin + p->chunk;
        if (end > p->num_items) end = p->num_items;
        p->fn(p->arg, begin, end, thread);
        if (atomic_fetch_add(&p->chunks_done, 1) + 1 == p->num_chunks &&
            atomic_load(&p->caller_sleeping)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_broadcast(&p->cv_done);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

static void *worker_main(void *varg) {
    ks__pool *p = ((worker_arg *)varg)->pool;
    uint32_t index = ((worker_arg *)varg)->index;
    uint32_t seen = 0;
    if (((worker_arg *)varg)->cpu >= 0) bind_self(((worker_arg *)varg)->cpu);
    for (;;) {
        uint32_t gen = (uint32_t)(atomic_load(&p->ticket) >> 32);
        for (int spin = 0; gen == seen && spin < KS_POOL_SPIN && !atomic_load(&p->stop); spin++) {
            cpu_relax();
            gen = (uint32_t)(atomic_load(&p->ticket) >> 32);
        }
        if (gen == seen && !atomic_load(&p->stop)) {
            pthread_mutex_lock(&p->mu);
            while ((gen = (uint32_t)(atomic_load(&p->ticket) >> 32)) == seen &&
                   !atomic_load(&p->stop))
                pthread_cond_wait(&p->cv_work, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop)) break;
        seen = gen;
        do_chunks(p, gen, index);
    }
    return NULL;
}

ks_status ks__pool_create(const ks_allocator *alloc, uint32_t num_threads, ks__pool **pool_out) {
    return ks__pool_create_ex(alloc, num_threads, 0, pool_out);
}

ks_status ks__pool_create_ex(const ks_allocator *alloc, uint32_t num_threads, uint32_t flags,
                             ks__pool **pool_out) {
    if (num_threads == 0) num_threads = 1;
    if (num_threads > KS_POOL_MAX_THREADS) num_threads = KS_POOL_MAX_THREADS;
    ks_allocator a = ks__allocator_or_default(alloc);
    ks__pool *p = ks__alloc(&a, sizeof(*p) + sizeof(worker_arg) * num_threads);
    if (!p) return KS_STATUS_OUT_OF_MEMORY;
    memset(p, 0, sizeof(*p));
    p->alloc = a;
    p->num_threads = num_threads;
    atomic_init(&p->ticket, 0);
    atomic_init(&p->chunks_done, 0);
    atomic_init(&p->caller_sleeping, false);
    atomic_init(&p->stop, false);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_work, NULL);
    pthread_cond_init(&p->cv_done, NULL);
    if (num_threads > 1) {
        p->threads = ks__alloc(&a, sizeof(pthread_t) * num_threads);
        if (!p->threads) {
            ks__pool_destroy(p);
            return KS_STATUS_OUT_OF_MEMORY;
        }
        worker_arg *args = (worker_arg *)(p + 1);
        for (uint32_t i = 0; i < num_threads; i++)
            args[i].cpu = -1;
        if (flags & KS_POOL_BIND_CPUS) choose_worker_cpus(args, num_threads);
        for (uint32_t i = 1; i < num_threads; i++) {
            args[i].pool = p;
            args[i].index = i;
            if (pthread_create(&p->threads[i - 1], NULL, worker_main, &args[i]) != 0) {
                ks__pool_destroy(p);
                return KS_STATUS_OUT_OF_MEMORY;
            }
            p->num_started++;
        }
    }
    *pool_out = p;
    return KS_STATUS_OK;
}

void ks__pool_destroy(ks__pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
    for (uint32_t i = 0; i < p->num_started; i++)
        pthread_join(p->threads[i], NULL);
    if (p->threads) release_worker_cpus((const worker_arg *)(p + 1), p->num_threads);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv_work);
    pthread_cond_destroy(&p->cv_done);
    ks_allocator a = p->alloc;
    ks__free(&a, p->threads);
    ks__free(&a, p);
}

uint32_t ks__pool_threads(const ks__pool *p) {
    return p ? p->num_threads : 1;
}

void ks__parallel_for(ks__pool *p, size_t num_items, size_t grain, ks__range_fn fn, void *arg) {
    if (num_items == 0) return;
    if (grain == 0) grain = 1;
    uint32_t workers = p ? p->num_started : 0;
    if (workers == 0 || num_items <= grain) {
        fn(arg, 0, num_items, 0);
        return;
    }
    /* a few chunks per thread balance uneven work without much contention */
    size_t max_chunks = (size_t)(workers + 1) * 4;
    size_t num_chunks = (num_items + grain - 1) / grain;
    if (num_chunks > max_chunks) num_chunks = max_chunks;
    /* Close the finished job first: a worker still inside do_chunks() for it holds a stale
     * ticket, and once the generation moves on its claim (a CAS on that ticket) fails, so it can
     * never pair the old generation with the new job's parameters written below. The closed
     * state has index 0xffffffff, which no job reaches, so nothing can be claimed until the
     * publish. Generations therefore advance by two per job. */
    uint32_t gen = (uint32_t)(atomic_load(&p->ticket) >> 32);
    atomic_store(&p->ticket, ((uint64_t)(gen + 1) << 32) | 0xffffffffu);
    gen += 2;
    p->fn = fn;
    p->arg = arg;
    p->num_items = num_items;
    p->chunk = (num_items + num_chunks - 1) / num_chunks;
    p->num_chunks = (num_items + p->chunk - 1) / p->chunk;
    atomic_store(&p->chunks_done, 0);
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->ticket, (uint64_t)gen << 32); /* publishes the job */
    pthread_cond_broadcast(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
    do_chunks(p, gen, 0);
    /* Wait for chunks, not for workers: a worker the OS has not scheduled yet simply finds no
     * chunk left when it wakes. */
    for (int spin = 0; atomic_load(&p->chunks_done) != p->num_chunks && spin < KS_POOL_SPIN; spin++)
        cpu_relax();
    if (atomic_load(&p->chunks_done) != p->num_chunks) {
        pthread_mutex_lock(&p->mu);
        atomic_store(&p->caller_sleeping, true);
        while (atomic_load(&p->chunks_done) != p->num_chunks)
            pthread_cond_wait(&p->cv_done, &p->mu);
        atomic_store(&p->caller_sleeping, false);
        pthread_mutex_unlock(&p->mu);
    }
}
