/* Vectorized fp32 RESIZE (nearest and bilinear, NHWC, every coordinate mode of ops.inc).
 * x86/avx512/f32_resize.c includes this file.
 *
 * The per-row and per-column source indices and fractions are computed once at reshape, by the
 * reference's own float arithmetic (vec.c), into the packed area; run only gathers. Nearest is a
 * copy of C floats per pixel, so it is exact; bilinear vectorizes over channels with the four
 * weights formed per pixel and fused multiply-adds (a few ulp from the reference's order).
 *
 * AVX-512 only: a path for narrow bilinear resizes.
 * Why: the channel-vectorized loop fills 16 lanes only when C >= 16; with C = 8
 * (BlazePose's 128x128 -> 256x256 upsampling of its segmentation features) every output pixel is
 * one masked half-vector with its own four weight broadcasts. For C = 1, 2, 4 or 8 a vector holds
 * 16 / C whole output pixels instead; their source pixels lie in a window of at most 32 floats
 * (when the horizontal scale is >= 1), so the four taps are two masked loads per source row and
 * one two-source permute per tap, with lane indices, fractions and load masks made once at
 * reshape next to the shared resize tables. The weights are the same float products as the
 * channel loop's ((1 - dy) * (1 - dx), ...) and the fused multiply-adds run in the same order,
 * so both paths give identical bits.
 */
#include <string.h>

#include "f32_vsimd.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#define VRESIZE_NARROW 1
#else
#define VRESIZE_NARROW 0
#endif

static inline void copy_floats(float *dst, const float *src, size_t n) {
    if (n >= 64) {
        memcpy(dst, src, n * sizeof(float));
        return;
    }
    size_t i = 0;
    for (; i + V_N <= n; i += V_N)
        v_store(dst + i, v_load(src + i));
    if (i < n) v_storen(dst + i, v_loadn(src + i, n - i), n - i);
}

#if VRESIZE_NARROW
/* One narrow group: 16 / C consecutive output pixels of a row. */
typedef struct narrow_group {
    int32_t idx0[16], idx1[16]; /* lane -> float offset of its lower / upper source in the window */
    float dx[16], omdx[16];     /* the lane's pixel fraction and 1 - fraction */
    int64_t base;               /* first float of the window within a source row */
    uint32_t mask0, mask1;      /* loads of the window's two vectors that stay inside the row */
    uint8_t pad[48];
} narrow_group;

/* After the shared tables (64-byte aligned): a header, then the groups. */
typedef struct narrow_hdr {
    int64_t num_groups; /* 0: the narrow path is off for this node */
    uint8_t pad[56];
} narrow_hdr;

static size_t shared_bytes(const ks__kernel_ctx *ctx) {
    return (ks__vresize_packed_bytes(ctx) + 63) / 64 * 64;
}

/* Bilinear with C in {1, 2, 4, 8}; the window check happens at pack. */
static bool narrow_candidate(const ks__kernel_ctx *ctx) {
    if (ctx->node->ip[0] != 1 || ctx->out[0]->rank != 4) return false;
    const int64_t c = ctx->out[0]->dims[3];
    return c == 1 || c == 2 || c == 4 || c == 8;
}

static int64_t narrow_groups(const ks__kernel_ctx *ctx) {
    const int64_t c = ctx->out[0]->dims[3], ppv = 16 / c;
    return (ctx->out[0]->dims[2] + ppv - 1) / ppv;
}

#endif

typedef struct vresize_job {
    ks__vresize_tab t;
    const float *x;
    float *y;
    const void *groups; /* AVX-512 narrow path's groups; NULL: channel loop */
} vresize_job;

#if VRESIZE_NARROW
static void narrow_row(const vresize_job *j, const float *r0, const float *r1, float dy,
                       float *dst) {
    const ks__vresize_tab *t = &j->t;
    const int64_t c = t->c, ppv = 16 / c, num_groups = (t->ow + ppv - 1) / ppv;
    const __m512 wy0 = _mm512_set1_ps(1 - dy), wy1 = _mm512_set1_ps(dy);
    for (int64_t gi = 0; gi < num_groups; gi++) {
        const narrow_group *g = (const narrow_group *)j->groups + gi;
        const __m512i i0 = _mm512_load_si512(g->idx0), i1 = _mm512_load_si512(g->idx1);
        const __m512 dx = _mm512_load_ps(g->dx), omdx = _mm512_load_ps(g->omdx);
        const __mmask16 m0 = (__mmask16)g->mask0, m1 = (__mmask16)g->mask1;
        const __m512 a0 = _mm512_maskz_loadu_ps(m0, r0 + g->base);
        const __m512 a1 = _mm512_maskz_loadu_ps(m1, r0 + g->base + 16);
        const __m512 b0 = _mm512_maskz_loadu_ps(m0, r1 + g->base);
        const __m512 b1 = _mm512_maskz_loadu_ps(m1, r1 + g->base + 16);
        __m512 v = _mm512_mul_ps(_mm512_permutex2var_ps(a0, i0, a1), _mm512_mul_ps(wy0, omdx));
        v = _mm512_fmadd_ps(_mm512_permutex2var_ps(b0, i0, b1), _mm512_mul_ps(wy1, omdx), v);
        v = _mm512_fmadd_ps(_mm512_permutex2var_ps(a0, i1, a1), _mm512_mul_ps(wy0, dx), v);
        v = _mm512_fmadd_ps(_mm512_permutex2var_ps(b0, i1, b1), _mm512_mul_ps(wy1, dx), v);
        const int64_t left = (t->ow - gi * ppv) * c;
        if (left >= 16)
            _mm512_storeu_ps(dst + gi * 16, v);
        else
            _mm512_mask_storeu_ps(dst + gi * 16, (__mmask16)((1u << left) - 1u), v);
    }
}

#endif

static void vresize_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const vresize_job *j = (const vresize_job *)arg;
    const ks__vresize_tab *t = &j->t;
    const int64_t c = t->c;
    const size_t cn = (size_t)c;
    for (size_t it = begin; it < end; it++) {
        int64_t n = (int64_t)it / t->oh, oy = (int64_t)it % t->oh;
        float *dst = j->y + (size_t)it * (size_t)(t->ow * c);
        const float *r0 = j->x + (n * t->ih + t->y0[oy]) * t->iw * c;
        if (t->mode == 0) {
            for (int64_t ox = 0; ox < t->ow; ox++, dst += c)
                copy_floats(dst, r0 + t->x0[ox] * c, cn);
            continue;
        }
        const float *r1 = j->x + (n * t->ih + t->y1[oy]) * t->iw * c;
        const float dy = t->fy[oy];
#if VRESIZE_NARROW
        if (j->groups) {
            narrow_row(j, r0, r1, dy, dst);
            continue;
        }
#endif
        for (int64_t ox = 0; ox < t->ow; ox++, dst += c) {
            const float dx = t->fx[ox];
            const vf w00 = v_set1((1 - dy) * (1 - dx)), w10 = v_set1(dy * (1 - dx));
            const vf w01 = v_set1((1 - dy) * dx), w11 = v_set1(dy * dx);
            const float *p00 = r0 + t->x0[ox] * c, *p01 = r0 + t->x1[ox] * c;
            const float *p10 = r1 + t->x0[ox] * c, *p11 = r1 + t->x1[ox] * c;
            size_t i = 0;
            for (; i + V_N <= cn; i += V_N) {
                vf v = v_mul(v_load(p00 + i), w00);
                v = v_fmadd(v_load(p10 + i), w10, v);
                v = v_fmadd(v_load(p01 + i), w01, v);
                v = v_fmadd(v_load(p11 + i), w11, v);
                v_store(dst + i, v);
            }
            if (i < cn) {
                size_t k = cn - i;
                vf v = v_mul(v_loadn(p00 + i, k), w00);
                v = v_fmadd(v_loadn(p10 + i, k), w10, v);
                v = v_fmadd(v_loadn(p01 + i, k), w01, v);
                v = v_fmadd(v_loadn(p11 + i, k), w11, v);
                v_storen(dst + i, v, k);
            }
        }
    }
}

static ks_status vresize_run(ks__kernel_ctx *ctx) {
    vresize_job j;
    if (!ctx->packed || !ks__vresize_supported(ctx))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "resize run without its tables");
    ks__vresize_view(ctx, &j.t);
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    if (j.t.ih != x->dims[1] || j.t.iw != x->dims[2] || j.t.oh != y->dims[1] ||
        j.t.ow != y->dims[2] || j.t.c != x->dims[3] || j.t.n != x->dims[0])
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "shapes changed after planning");
    if (j.t.c == 0 || j.t.n == 0) return KS_STATUS_OK;
    j.x = (const float *)x->data;
    j.y = (float *)y->data;
    j.groups = NULL;
#if VRESIZE_NARROW
    if (narrow_candidate(ctx)) {
        const size_t off = shared_bytes(ctx);
        const narrow_hdr *h =
            (const narrow_hdr *)(const void *)((const uint8_t *)ctx->packed + off);
        if (ctx->packed_bytes < off + sizeof(narrow_hdr) ||
            (h->num_groups &&
             (h->num_groups != narrow_groups(ctx) ||
              ctx->packed_bytes <
                  off + sizeof(narrow_hdr) + (size_t)h->num_groups * sizeof(narrow_group))))
            return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "resize run without its tables");
        if (h->num_groups) j.groups = h + 1;
    }
#endif
    size_t grain = (size_t)(V_MIN_PARALLEL / (j.t.ow * j.t.c)) + 1;
    ks__parallel_for(ctx->pool, (size_t)(j.t.n * j.t.oh), grain, vresize_range, &j);
    return KS_STATUS_OK;
}

static double vresize_cost(const ks__kernel_ctx *ctx) {
    if (!ks__vresize_supported(ctx)) return -1.0;
    double n = (double)ks__rt_numel(ctx->out[0]);
#if VRESIZE_NARROW
    if (narrow_candidate(ctx)) return 1.0 + 2.0 * n / V_N;
#endif
    return 1.0 + (ctx->node->ip[0] == 1 ? 4.0 : 1.0) * n / V_N;
}

static ks_status vresize_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    *packed_bytes_out = ks__vresize_packed_bytes(ctx);
#if VRESIZE_NARROW
    if (*packed_bytes_out && narrow_candidate(ctx))
        *packed_bytes_out = shared_bytes(ctx) + sizeof(narrow_hdr) +
                            (size_t)narrow_groups(ctx) * sizeof(narrow_group);
#endif
    return KS_STATUS_OK;
}

#if VRESIZE_NARROW
/* The shared tables, then (narrow candidates) the groups; num_groups stays 0 when a group's
 * sources do not fit one 32-float window (a horizontal downscale). */
static ks_status vresize_pack(ks__kernel_ctx *ctx) {
    ks_status st = ks__vresize_pack(ctx);
    if (st || !narrow_candidate(ctx)) return st;
    const size_t off = shared_bytes(ctx);
    const int64_t num_groups = narrow_groups(ctx);
    if (ctx->packed_bytes < off + sizeof(narrow_hdr) + (size_t)num_groups * sizeof(narrow_group))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "resize table does not fit");
    narrow_hdr *h = (narrow_hdr *)(void *)((uint8_t *)ctx->packed + off);
    narrow_group *groups = (narrow_group *)(void *)(h + 1);
    memset(h, 0, sizeof(*h));
    ks__vresize_tab t;
    ks__vresize_view(ctx, &t);
    const int64_t c = t.c, ppv = 16 / c, row = t.iw * c;
    for (int64_t gi = 0; gi < num_groups; gi++) {
        narrow_group *g = &groups[gi];
        memset(g, 0, sizeof(*g));
        const int64_t ox0 = gi * ppv;
        int64_t lo = INT64_MAX;
        for (int64_t p = 0; p < ppv && ox0 + p < t.ow; p++) {
            const int64_t a = t.x0[ox0 + p] < t.x1[ox0 + p] ? t.x0[ox0 + p] : t.x1[ox0 + p];
            lo = a < lo ? a : lo;
        }
        g->base = lo * c;
        for (int l = 0; l < 16; l++) {
            /* lanes past the row's end repeat its last pixel (their stores are masked) */
            int64_t ox = ox0 + l / c;
            if (ox >= t.ow) ox = t.ow - 1;
            const int64_t ch = l % c;
            const int64_t o0 = t.x0[ox] * c + ch - g->base, o1 = t.x1[ox] * c + ch - g->base;
            if (o0 < 0 || o0 >= 32 || o1 < 0 || o1 >= 32) return KS_STATUS_OK; /* path off */
            g->idx0[l] = (int32_t)o0;
            g->idx1[l] = (int32_t)o1;
            g->dx[l] = t.fx[ox];
            g->omdx[l] = 1 - t.fx[ox];
        }
        const int64_t avail = row - g->base; /* floats of the row from the window's start */
        g->mask0 = avail >= 16 ? 0xFFFFu : (uint32_t)((1u << avail) - 1u);
        g->mask1 = avail >= 32 ? 0xFFFFu : avail <= 16 ? 0u : (uint32_t)((1u << (avail - 16)) - 1u);
    }
    h->num_groups = num_groups;
    return KS_STATUS_OK;
}

#else
#define vresize_pack ks__vresize_pack
#endif

const ks__impl V_SYM(vresize) = {V_NAME(vresize), KS_OP_RESIZE, V_ISA,      vresize_cost,
                                 vresize_plan,    vresize_pack, vresize_run};
