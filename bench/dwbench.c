/* ks-dwbench: times the fast fp32 depthwise conv / pool / transpose conv variants
 * (impls_dwconv.inc) against the reference kernels on typical mobile-model layers, and puts the
 * memory-bound ops next to a measured streaming-copy bandwidth roofline.
 *
 *   ks-dwbench [--threads N] [--runs R] [--filter SUBSTRING]
 *
 * Prints one line per layer and variant: median ms, speed-up over the reference (single
 * thread), and achieved GB/s = (input + output + packed weight bytes) / time. The machine is
 * shared and noisy: medians of R runs. Not a test; no assertions on timing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "impl.h"

typedef struct layer {
    const char *name;
    uint32_t op;
    int64_t h, w, ci, co, kh, kw, s;
    int32_t pad_mode, pool_kind, act;
} layer;

static const layer k_layers[] = {
    {"dw3x3 s1 112x112x32", KS_OP_CONV2D, 112, 112, 32, 32, 3, 3, 1, KS_PAD_SAME_UPPER, 0, 3},
    {"dw3x3 s2 112x112x64", KS_OP_CONV2D, 112, 112, 64, 64, 3, 3, 2, KS_PAD_SAME_UPPER, 0, 3},
    {"dw3x3 s1 56x56x128", KS_OP_CONV2D, 56, 56, 128, 128, 3, 3, 1, KS_PAD_SAME_UPPER, 0, 3},
    {"dw3x3 s1 28x28x256", KS_OP_CONV2D, 28, 28, 256, 256, 3, 3, 1, KS_PAD_SAME_UPPER, 0, 3},
    {"dw3x3 s1 14x14x512", KS_OP_CONV2D, 14, 14, 512, 512, 3, 3, 1, KS_PAD_SAME_UPPER, 0, 3},
    {"dw3x3 s1 7x7x1024", KS_OP_CONV2D, 7, 7, 1024, 1024, 3, 3, 1, KS_PAD_SAME_UPPER, 0, 3},
    {"dw5x5 s1 28x28x240", KS_OP_CONV2D, 28, 28, 240, 240, 5, 5, 1, KS_PAD_SAME_UPPER, 0, 7},
    {"dw5x5 s2 56x56x72", KS_OP_CONV2D, 56, 56, 72, 72, 5, 5, 2, KS_PAD_SAME_UPPER, 0, 1},
    {"dw3x3 s1 128x128x17", KS_OP_CONV2D, 128, 128, 17, 17, 3, 3, 1, KS_PAD_SAME_UPPER, 0, 0},
    {"dw7x7 s1 28x28x96", KS_OP_CONV2D, 28, 28, 96, 96, 7, 7, 1, KS_PAD_SAME_UPPER, 0, 0},
    /* few channels on large images (YuNet, FaceMesh, YOLOX-nano, BlazePose, selfie seg) */
    {"dw3x3 s1 320x320x16", KS_OP_CONV2D, 320, 320, 16, 16, 3, 3, 1, KS_PAD_SAME_UPPER, 0, 1},
    {"dw3x3 s2 320x320x16", KS_OP_CONV2D, 320, 320, 16, 16, 3, 3, 2, KS_PAD_SAME_UPPER, 0, 1},
    {"dw3x3 s1 160x160x32", KS_OP_CONV2D, 160, 160, 32, 32, 3, 3, 1, KS_PAD_SAME_UPPER, 0, 1},
    {"dw3x3 s1 160x160x64", KS_OP_CONV2D, 160, 160, 64, 64, 3, 3, 1, KS_PAD_SAME_UPPER, 0, 1},
    {"dw3x3 s1 96x96x16", KS_OP_CONV2D, 96, 96, 16, 16, 3, 3, 1, KS_PAD_SAME_UPPER, 0, 0},
    /* BlazeBlock depthwise of palm_detection_full (5x5 at 96x96x32, the model's slowest) */
    {"dw5x5 s1 96x96x32", KS_OP_CONV2D, 96, 96, 32, 32, 5, 5, 1, KS_PAD_SAME_UPPER, 0, 0},
    {"dw3x3 s1 80x80x24", KS_OP_CONV2D, 80, 80, 24, 24, 3, 3, 1, KS_PAD_SAME_UPPER, 0, 8},
    {"dw3x3 s1 40x40x48", KS_OP_CONV2D, 40, 40, 48, 48, 3, 3, 1, KS_PAD_SAME_UPPER, 0, 8},
    {"dw5x5 s1 64x64x24", KS_OP_CONV2D, 64, 64, 24, 24, 5, 5, 1, KS_PAD_SAME_UPPER, 0, 0},
    {"dw5x5 s2 128x128x16", KS_OP_CONV2D, 128, 128, 16, 16, 5, 5, 2, KS_PAD_SAME_UPPER, 0, 7},
    {"maxpool2x2 s2 112x112x64", KS_OP_POOL2D, 112, 112, 64, 64, 2, 2, 2, KS_PAD_VALID, 0, 0},
    /* YuNet-s 640's first downsampling (few channels on a large map) */
    {"maxpool2x2 s2 320x320x16", KS_OP_POOL2D, 320, 320, 16, 16, 2, 2, 2, KS_PAD_VALID, 0, 0},
    {"maxpool3x3 s2 160x160x32", KS_OP_POOL2D, 160, 160, 32, 32, 3, 3, 2, KS_PAD_SAME_UPPER, 0, 0},
    {"avgpool3x3 s1 28x28x192", KS_OP_POOL2D, 28, 28, 192, 192, 3, 3, 1, KS_PAD_SAME_UPPER, 1, 0},
    {"globalavg 7x7x1280", KS_OP_POOL2D, 7, 7, 1280, 1280, 0, 0, 1, KS_PAD_VALID, 1, 0},
    {"avgpool 64x64x16 (selfie)", KS_OP_POOL2D, 64, 64, 16, 16, 64, 64, 1, KS_PAD_VALID, 1, 0},
    {"deconv2x2 s2 128x128x16->1", KS_OP_CONV2D_TRANSPOSE, 128, 128, 16, 1, 2, 2, 2,
     KS_PAD_SAME_UPPER, 0, 0},
    {"deconv4x4 s2 32x32x64->32", KS_OP_CONV2D_TRANSPOSE, 32, 32, 64, 32, 4, 4, 2,
     KS_PAD_SAME_UPPER, 0, 1},
    {"deconv3x3 s2 28x28x32->32", KS_OP_CONV2D_TRANSPOSE, 28, 28, 32, 32, 3, 3, 2,
     KS_PAD_SAME_UPPER, 0, 0},
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- memory roofline: streaming copy (read + write bytes per second) ---- */

typedef struct copy_job {
    const float *src;
    float *dst;
    size_t n;
} copy_job;

static void copy_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const copy_job *j = (const copy_job *)arg;
    size_t per = j->n / 64;
    size_t lo = begin * per, hi = end == 64 ? j->n : end * per;
    memcpy(j->dst + lo, j->src + lo, (hi - lo) * sizeof(float));
}

static double copy_gbps(ks__pool *pool, size_t bytes, int runs) {
    size_t n = bytes / sizeof(float);
    float *a = aligned_alloc(64, n * sizeof(float)), *b = aligned_alloc(64, n * sizeof(float));
    if (!a || !b) {
        free(a);
        free(b);
        return 0.0;
    }
    for (size_t i = 0; i < n; i++)
        a[i] = (float)i, b[i] = 0.0f;
    copy_job j = {a, b, n};
    double t[64];
    if (runs > 64) runs = 64;
    for (int r = 0; r < runs; r++) {
        double t0 = now_s();
        ks__parallel_for(pool, 64, 1, copy_range, &j);
        t[r] = now_s() - t0;
    }
    double med = median(t, runs);
    free(a);
    free(b);
    return 2.0 * (double)bytes / med * 1e-9;
}

/* ---- one layer ---- */

typedef struct setup {
    ks__node node;
    ks__rt_tensor x, w, b, y;
    ks__rt_tensor *ins[3], *outp;
    ks__quant noq;
    float *xd, *wd, *bd, *yd;
    char err[256];
} setup;

static void tensor(ks__rt_tensor *t, const ks__quant *q, void *data, int32_t rank,
                   const int64_t *dims) {
    memset(t, 0, sizeof(*t));
    t->dtype = KS_DTYPE_F32;
    t->rank = rank;
    for (int32_t i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    t->data = data;
    t->quant = q;
    t->size_bytes = (size_t)ks__rt_numel(t) * sizeof(float);
}

static float *rand_buf(int64_t n) {
    float *p = aligned_alloc(64, ((size_t)n * sizeof(float) + 63) / 64 * 64);
    if (!p) return NULL;
    uint32_t s = 7u;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = (float)(s >> 9) / 8388608.0f - 1.0f;
    }
    return p;
}

static ks__kernel_ctx ctx_of(setup *su) {
    ks__kernel_ctx c = {.node = &su->node,
                        .in = su->ins,
                        .num_inputs = su->node.op == KS_OP_POOL2D ? 1 : 3,
                        .out = &su->outp,
                        .num_outputs = 1,
                        .err = su->err,
                        .err_cap = sizeof(su->err)};
    return c;
}

static int setup_layer(const layer *l, setup *su) {
    memset(su, 0, sizeof(*su));
    su->node.op = l->op;
    su->node.name = (char *)l->name;
    int64_t xd[4] = {1, l->h, l->w, l->ci};
    su->xd = rand_buf(l->h * l->w * l->ci);
    tensor(&su->x, &su->noq, su->xd, 4, xd);
    su->ins[0] = &su->x;
    int32_t *ip = su->node.ip;
    if (l->op == KS_OP_POOL2D) {
        ip[0] = (int32_t)l->kh, ip[1] = (int32_t)l->kw, ip[2] = ip[3] = (int32_t)l->s;
        ip[8] = l->pad_mode, ip[9] = l->pool_kind, ip[11] = l->act;
    } else {
        int64_t wd[4] = {l->co, l->kh, l->kw, l->op == KS_OP_CONV2D ? 1 : l->ci};
        int64_t bd[1] = {l->co};
        su->wd = rand_buf(wd[0] * wd[1] * wd[2] * wd[3]);
        su->bd = rand_buf(l->co);
        tensor(&su->w, &su->noq, su->wd, 4, wd);
        tensor(&su->b, &su->noq, su->bd, 1, bd);
        su->ins[1] = &su->w, su->ins[2] = &su->b;
        ip[0] = ip[1] = (int32_t)l->s;
        if (l->op == KS_OP_CONV2D) {
            ip[8] = l->pad_mode, ip[9] = (int32_t)l->ci, ip[10] = l->act;
        } else {
            ip[6] = l->pad_mode, ip[7] = l->act;
        }
    }
    su->outp = &su->y;
    tensor(&su->y, &su->noq, NULL, 0, NULL);
    ks__kernel_ctx c = ctx_of(su);
    if (!su->xd || ks__ref_prepare(&c) != KS_STATUS_OK) return 0;
    su->y.size_bytes = (size_t)ks__rt_numel(&su->y) * sizeof(float);
    su->yd = aligned_alloc(64, (su->y.size_bytes + 63) / 64 * 64);
    su->y.data = su->yd;
    return su->yd != NULL;
}

static void free_setup(setup *su) {
    free(su->xd);
    free(su->wd);
    free(su->bd);
    free(su->yd);
}

/* Median seconds of `runs` runs of fn (ref kernel when im == NULL). */
static double time_runs(setup *su, const ks__impl *im, ks__pool *pool, uint32_t threads, int runs,
                        int *ok) {
    ks__kernel_ctx c = ctx_of(su);
    c.num_threads = threads;
    c.pool = pool;
    void *packed = NULL, *scratch = NULL;
    double t[64], med = 0.0;
    *ok = 0;
    if (runs > 64) runs = 64;
    if (im) {
        size_t packed_bytes = 0;
        if (im->plan(&c, &packed_bytes)) goto done;
        if (packed_bytes && !(packed = aligned_alloc(64, (packed_bytes + 63) / 64 * 64))) goto done;
        if (c.scratch_bytes && !(scratch = aligned_alloc(64, (c.scratch_bytes + 63) / 64 * 64)))
            goto done;
        c.packed = packed, c.packed_bytes = packed_bytes, c.scratch = scratch;
        if (im->pack && im->pack(&c)) goto done;
    }
    const ks__kernel *k = &ks__ref_kernels()->k[su->node.op];
    for (int r = -1; r < runs; r++) { /* r == -1 warms up */
        double t0 = now_s();
        ks_status st = im ? im->run(&c) : k->run(&c);
        double dt = now_s() - t0;
        if (st) goto done;
        if (r >= 0) t[r] = dt;
    }
    med = median(t, runs);
    *ok = 1;
done:
    free(packed);
    free(scratch);
    return med;
}

static double layer_bytes(const layer *l, const setup *su) {
    double b = (double)su->x.size_bytes + (double)su->y.size_bytes;
    if (l->op != KS_OP_POOL2D) b += (double)su->w.size_bytes + (double)su->b.size_bytes;
    return b;
}

int main(int argc, char **argv) {
    uint32_t threads = 2;
    int runs = 21;
    const char *filter = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc)
            filter = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--threads N] [--runs R] [--filter SUBSTRING]\n", argv[0]);
            return 2;
        }
    }
    if (threads < 1) threads = 1;
    if (runs < 1) runs = 1;
    ks__pool *pool = NULL;
    if (threads > 1 && ks__pool_create(NULL, threads, &pool)) {
        fprintf(stderr, "cannot create a thread pool of %u\n", threads);
        return 1;
    }
    char isa[128];
    ks__isa_string(ks__cpu_isa(), isa, sizeof(isa));
    printf("cpu: %s  isa: %s  threads: 1 and %u  runs: %d (medians)\n", ks__cpu_name(), isa,
           threads, runs);
    double bw1 = copy_gbps(NULL, (size_t)256 << 20, 7);
    double bwn = threads > 1 ? copy_gbps(pool, (size_t)256 << 20, 7) : bw1;
    double bw1_l3 = copy_gbps(NULL, (size_t)8 << 20, 31);
    double bw1_l2 = copy_gbps(NULL, (size_t)512 << 10, 201);
    printf("roofline (memcpy, read+write bytes): DRAM 256 MiB: %.1f GB/s (1 thr), %.1f GB/s "
           "(%u thr); 8 MiB (L3): %.1f GB/s; 512 KiB (L2): %.1f GB/s (1 thr)\n\n",
           bw1, bwn, threads, bw1_l3, bw1_l2);
    printf("%-28s %-28s %9s %9s %8s %8s %7s %7s\n", "layer", "variant", "1thr ms", "Nthr ms",
           "x ref", "x refN", "GB/s1", "GB/sN");
    for (size_t li = 0; li < sizeof(k_layers) / sizeof(k_layers[0]); li++) {
        const layer *l = &k_layers[li];
        if (filter && !strstr(l->name, filter)) continue;
        setup su;
        if (!setup_layer(l, &su)) {
            printf("%-28s setup failed: %s\n", l->name, su.err);
            free_setup(&su);
            continue;
        }
        int ok = 0;
        int ref_runs = runs < 3 ? runs : 3;
        double tref = time_runs(&su, NULL, NULL, 1, ref_runs, &ok);
        double bytes = layer_bytes(l, &su);
        printf("%-28s %-28s %9.3f %9s %8s %8s %7.2f %7s\n", l->name, "reference", tref * 1e3, "-",
               "1.0", "-", bytes / tref * 1e-9, "-");
        ks__kernel_ctx c = ctx_of(&su);
        uint32_t cpu = ks__cpu_isa();
        for (const ks__impl *const *p = ks__impl_list(); *p; p++) {
            const ks__impl *im = *p;
            if (im->op != l->op || (im->isa & ~cpu) || im->cost(&c) < 0) continue;
            int ok1 = 0, okn = 0;
            double t1 = time_runs(&su, im, NULL, 1, runs, &ok1);
            double tn = threads > 1 ? time_runs(&su, im, pool, threads, runs, &okn) : t1;
            if (!ok1 || (threads > 1 && !okn)) {
                printf("%-28s %-28s failed: %s\n", "", im->name, su.err);
                continue;
            }
            printf("%-28s %-28s %9.3f %9.3f %8.1f %8.1f %7.2f %7.2f\n", "", im->name, t1 * 1e3,
                   tn * 1e3, tref / t1, tref / tn, bytes / t1 * 1e-9, bytes / tn * 1e-9);
        }
        const ks__impl *sel = ks__impl_select(&c, cpu);
        printf("%-28s selected: %s\n", "", sel ? sel->name : "(reference)");
        free_setup(&su);
    }
    ks__pool_destroy(pool);
    return 0;
}
