/* ks-kbench: kernel microbenchmark. Measures the single-core FMA peak with a dependency-free
 * FMA loop (AVX-512 and AVX2), then times the fast CONV2D variants (impls.inc) at the issue's
 * reference shapes (NHWC, batch 1; 3x3 pad 1 and 1x1) and prints GFLOP/s and the fraction of
 * the peak of the variant's ISA, as the median of repeated runs.
 *
 *   ks-kbench [--runs N] [--threads T]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "impl.h"
#include "cpu_kernel.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : (x > y ? 1 : 0);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#if defined(__x86_64__)
/* 12 independent accumulator chains in named registers (an array ends up on the stack), with
 * distinct start values so the compiler cannot merge them: enough to hide a 4-5 cycle FMA
 * latency on two pipes. */
#define PEAK_ITERS 500000L
#define PEAK_BODY(V, SET, FMA)                                                                     \
    V a0 = SET(0.f), a1 = SET(1.f), a2 = SET(2.f), a3 = SET(3.f), a4 = SET(4.f), a5 = SET(5.f),    \
      a6 = SET(6.f), a7 = SET(7.f), a8 = SET(8.f), a9 = SET(9.f), a10 = SET(10.f),                 \
      a11 = SET(11.f);                                                                             \
    double t0 = now_s();                                                                           \
    for (long it = 0; it < PEAK_ITERS; it++) {                                                     \
        a0 = FMA(a0, m, c), a1 = FMA(a1, m, c), a2 = FMA(a2, m, c), a3 = FMA(a3, m, c);            \
        a4 = FMA(a4, m, c), a5 = FMA(a5, m, c), a6 = FMA(a6, m, c), a7 = FMA(a7, m, c);            \
        a8 = FMA(a8, m, c), a9 = FMA(a9, m, c), a10 = FMA(a10, m, c), a11 = FMA(a11, m, c);        \
    }                                                                                              \
    double dt = now_s() - t0;

__attribute__((target("avx512f"))) static double peak_avx512_once(void) {
    __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-3f);
    PEAK_BODY(__m512, _mm512_set1_ps, _mm512_fmadd_ps)
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
    volatile float sink = _mm512_reduce_add_ps(s);
    (void)sink;
    return (double)PEAK_ITERS * 12 * 16 * 2 / dt / 1e9;
}

__attribute__((target("avx2,fma"))) static double peak_avx2_once(void) {
    __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-3f);
    PEAK_BODY(__m256, _mm256_set1_ps, _mm256_fmadd_ps)
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    float out[8], sum = 0;
    _mm256_storeu_ps(out, s);
    for (int i = 0; i < 8; i++)
        sum += out[i];
    volatile float sink = sum;
    (void)sink;
    return (double)PEAK_ITERS * 12 * 8 * 2 / dt / 1e9;
}
#endif

/* Peak GFLOP/s of one ISA: median of `runs` FMA loops; 0 when the CPU lacks it. */
static double measure_peak(uint32_t isa, int runs) {
    double v[64];
    if (runs > 64) runs = 64;
#if defined(__x86_64__)
    for (int i = 0; i < runs; i++) {
        if (isa == KS_ISA_AVX512)
            v[i] = peak_avx512_once();
        else if (isa == KS_ISA_AVX2)
            v[i] = peak_avx2_once();
        else
            return 0.0;
    }
    return median(v, runs);
#else
    (void)isa, (void)v;
    return 0.0;
#endif
}

typedef struct shape {
    int64_t hw, c, k;
} shape;

static float frand(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / (float)(1u << 23) - 1.0f;
}

static const ks__quant k_noq = {0};

static void mk(ks__rt_tensor *t, void *data, int32_t rank, const int64_t *dims) {
    memset(t, 0, sizeof(*t));
    t->dtype = KS_DTYPE_F32;
    t->rank = rank;
    for (int32_t i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    t->data = data;
    t->quant = &k_noq;
    t->size_bytes = (size_t)ks__rt_numel(t) * sizeof(float);
}

static void *aligned(size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, 64, (bytes + 63) / 64 * 64 + 64)) return NULL;
    return p;
}

/* Times one variant on one conv; returns median seconds per run (< 0 if it refused). */
static double time_conv(const ks__impl *im, const shape *s, ks__pool *pool, uint32_t threads,
                        int runs) {
    char err[256];
    int64_t xd[4] = {1, s->hw, s->hw, s->c}, wd[4] = {s->c, s->k, s->k, s->c}, bd[1] = {s->c};
    size_t xn = (size_t)(s->hw * s->hw * s->c), wn = (size_t)(s->c * s->k * s->k * s->c);
    float *x = aligned(xn * 4), *w = aligned(wn * 4), *b = aligned((size_t)s->c * 4);
    float *y = aligned(xn * 4);
    double result = -1.0;
    void *packed = NULL, *scratch = NULL;
    if (!x || !w || !b || !y) goto done;
    uint32_t seed = 1;
    for (size_t i = 0; i < xn; i++)
        x[i] = frand(&seed);
    for (size_t i = 0; i < wn; i++)
        w[i] = frand(&seed) * 0.05f;
    for (int64_t i = 0; i < s->c; i++)
        b[i] = frand(&seed);
    ks__rt_tensor tx, tw, tb, ty;
    mk(&tx, x, 4, xd);
    mk(&tw, w, 4, wd);
    mk(&tb, b, 1, bd);
    mk(&ty, y, 4, xd);
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_CONV2D;
    node.name = (char *)"bench";
    int32_t pad = (int32_t)(s->k / 2);
    node.ip[4] = node.ip[5] = node.ip[6] = node.ip[7] = pad;
    node.ip[10] = KS_ACT_RELU;
    ks__rt_tensor *ins[3] = {&tx, &tw, &tb}, *outs[1] = {&ty};
    ks__kernel_ctx ctx = {.node = &node,
                          .in = ins,
                          .num_inputs = 3,
                          .out = outs,
                          .num_outputs = 1,
                          .err = err,
                          .err_cap = sizeof(err),
                          .num_threads = threads,
                          .pool = pool};
    if (im->cost(&ctx) < 0) goto done;
    size_t packed_bytes = 0;
    if (im->plan(&ctx, &packed_bytes)) goto done;
    packed = aligned(packed_bytes);
    scratch = aligned(ctx.scratch_bytes);
    if (!packed || !scratch) goto done;
    ctx.packed = packed;
    ctx.packed_bytes = packed_bytes;
    ctx.scratch = scratch;
    if (im->pack && im->pack(&ctx)) goto done;
    double v[1000];
    if (runs > 1000) runs = 1000;
    if (im->run(&ctx)) goto done; /* warm-up */
    for (int r = 0; r < runs; r++) {
        double t0 = now_s();
        im->run(&ctx);
        v[r] = now_s() - t0;
    }
    result = median(v, runs);
done:
    free(x), free(w), free(b), free(y), free(packed), free(scratch);
    return result;
}

int main(int argc, char **argv) {
    int runs = 21;
    uint32_t threads = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = (uint32_t)atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--runs N] [--threads T]\n", argv[0]);
            return 2;
        }
    }
    if (runs < 1) runs = 1;
    if (threads < 1) threads = 1;
    uint32_t isa = ks__cpu_isa();
    char isa_str[128];
    ks__isa_string(isa, isa_str, sizeof(isa_str));
    printf("cpu: %s\nisa: %s\nthreads: %u, runs: %d (medians)\n", ks__cpu_name(), isa_str, threads,
           runs);
    double peak512 = (isa & KS_ISA_AVX512) ? measure_peak(KS_ISA_AVX512, 51) : 0.0;
    double peak2 = (isa & KS_ISA_AVX2) ? measure_peak(KS_ISA_AVX2, 51) : 0.0;
    printf("single-core FMA peak: avx512 %.1f GFLOP/s, avx2 %.1f GFLOP/s\n", peak512, peak2);
    ks__pool *pool = NULL;
    if (threads > 1 && ks__pool_create(NULL, threads, &pool)) {
        fprintf(stderr, "cannot create a pool of %u threads\n", threads);
        return 1;
    }
    static const shape shapes[] = {{56, 64, 3}, {28, 128, 3}, {14, 256, 3}, {7, 512, 3},
                                   {56, 64, 1}, {28, 128, 1}, {14, 256, 1}, {7, 512, 1}};
    printf("%-30s %-22s %10s %10s %8s\n", "variant", "conv", "ms", "GFLOP/s", "of peak");
    for (const ks__impl *const *it = ks__impl_list(); *it; it++) {
        const ks__impl *im = *it;
        if (im->op != KS_OP_CONV2D || (im->isa & ~isa) != 0) continue;
        double peak = (im->isa & KS_ISA_AVX512) ? peak512 : peak2;
        for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
            const shape *s = &shapes[i];
            double t = time_conv(im, s, pool, threads, runs);
            if (t < 0) continue;
            double flops = 2.0 * (double)(s->hw * s->hw) * (double)(s->c * s->c * s->k * s->k);
            double gf = flops / t / 1e9;
            char name[64];
            snprintf(name, sizeof(name), "%lldx%lldx%lld k%lld", (long long)s->hw, (long long)s->hw,
                     (long long)s->c, (long long)s->k);
            printf("%-30s %-22s %10.3f %10.1f %7.1f%%\n", im->name, name, t * 1e3, gf,
                   peak > 0 ? 100.0 * gf / (peak * threads) : 0.0);
        }
    }
    ks__pool_destroy(pool);
    return 0;
}
