/* Tracking and smoothing: see tracking.h. */
#include "tracking.h"

#include <math.h>
#include <string.h>

#include "base/cpuinfo.h"
#include "src/ir.h" /* ks__alloc / ks__free */
#include "vision_util.h"

/* ---- One Euro --------------------------------------------------------------------------- */

static float default_if_zero(float v, float d) {
    return v == 0.0f ? d : v;
}

void ks__one_euro_init(ks__one_euro *f, const ks__one_euro_params *params) {
    memset(f, 0, sizeof(*f));
    ks__one_euro_params p;
    memset(&p, 0, sizeof(p));
    if (params) p = *params;
    f->p.frequency_hz = default_if_zero(p.frequency_hz, 30.0f);
    f->p.min_cutoff = default_if_zero(p.min_cutoff, 1.0f);
    f->p.beta = p.beta;
    f->p.d_cutoff = default_if_zero(p.d_cutoff, 1.0f);
    ks__one_euro_reset(f);
}

void ks__one_euro_reset(ks__one_euro *f) {
    f->frequency_hz = f->p.frequency_hz;
    f->has_timestamp = false;
    f->has_value = false;
    f->last_timestamp_us = 0;
    f->raw_prev = f->x_prev = f->dx_prev = 0.0f;
}

/* Smoothing factor of a first-order low-pass with the given cutoff at the current rate. */
static float alpha_for(float cutoff_hz, float frequency_hz) {
    float te = 1.0f / frequency_hz;
    float tau = 1.0f / (2.0f * (float)KS__PI * cutoff_hz);
    return 1.0f / (1.0f + tau / te);
}

float ks__one_euro_apply(ks__one_euro *f, float value, float value_scale, int64_t timestamp_us) {
    if (f->has_timestamp && timestamp_us <= f->last_timestamp_us) return value;
    if (f->has_timestamp) f->frequency_hz = 1e6f / (float)(timestamp_us - f->last_timestamp_us);
    f->last_timestamp_us = timestamp_us;
    f->has_timestamp = true;
    if (!f->has_value) {
        f->has_value = true;
        f->raw_prev = f->x_prev = value;
        f->dx_prev = 0.0f;
        return value;
    }
    float dx = (value - f->raw_prev) * value_scale * f->frequency_hz;
    float a_d = alpha_for(f->p.d_cutoff, f->frequency_hz);
    float edx = a_d * dx + (1.0f - a_d) * f->dx_prev;
    float cutoff = f->p.min_cutoff + f->p.beta * fabsf(edx);
    float a = alpha_for(cutoff, f->frequency_hz);
    float x = a * value + (1.0f - a) * f->x_prev;
    f->dx_prev = edx;
    f->raw_prev = value;
    f->x_prev = x;
    return x;
}

/* ---- landmark smoother ------------------------------------------------------------------ */

/* The 3 * n filters of a smoother always see the same timestamps, so the rate, the timestamp
 * state and the derivative's smoothing factor are kept once per smoother and computed once per
 * frame; the per-value state is kept as arrays (x, y, z of landmark i at 3 * i + 0..2), so the
 * per-value loop vectorizes. Each value gets exactly the operations of ks__one_euro_apply, in
 * the same order: the results are bit-identical to 3 * n separate filters. */
struct ks__landmark_smoother {
    ks_allocator alloc;
    bool has_alloc;
    size_t num_landmarks;
    ks__one_euro_params p;
    float frequency_hz;
    int64_t last_timestamp_us;
    bool has_timestamp, has_value;
    float *raw_prev, *x_prev, *dx_prev, *value; /* 3 * num_landmarks each; value: scratch */
};

ks_status ks__landmark_smoother_create(const ks_allocator *alloc, size_t num_landmarks,
                                       const ks__one_euro_params *params,
                                       ks__landmark_smoother **out) {
    ks_status status = KS_STATUS_OK;
    ks__landmark_smoother *s = NULL;
    if (!out || num_landmarks == 0 || num_landmarks > 100000) {
        status = KS_STATUS_INVALID_ARGUMENT;
        goto error;
    }
    s = ks__alloc(alloc, sizeof(*s));
    if (!s) {
        status = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    memset(s, 0, sizeof(*s));
    if (alloc) s->alloc = *alloc, s->has_alloc = true;
    s->num_landmarks = num_landmarks;
    s->raw_prev = ks__alloc(alloc, 4 * 3 * num_landmarks * sizeof(float));
    if (!s->raw_prev) {
        status = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    s->x_prev = s->raw_prev + 3 * num_landmarks;
    s->dx_prev = s->x_prev + 3 * num_landmarks;
    s->value = s->dx_prev + 3 * num_landmarks;
    ks__one_euro f; /* the single filter's defaults */
    ks__one_euro_init(&f, params);
    s->p = f.p;
    ks__landmark_smoother_reset(s);
    *out = s;
    return KS_STATUS_OK;
error:
    ks__landmark_smoother_destroy(s);
    return status;
}

void ks__landmark_smoother_destroy(ks__landmark_smoother *s) {
    if (!s) return;
    const ks_allocator *a = s->has_alloc ? &s->alloc : NULL;
    ks_allocator copy;
    if (a) copy = *a, a = &copy; /* s is freed before the allocator copy is last used */
    ks__free(a, s->raw_prev);
    ks__free(a, s);
}

void ks__landmark_smoother_reset(ks__landmark_smoother *s) {
    if (!s) return;
    s->frequency_hz = s->p.frequency_hz;
    s->has_timestamp = false;
    s->has_value = false;
    s->last_timestamp_us = 0;
    memset(s->raw_prev, 0, 4 * 3 * s->num_landmarks * sizeof(float));
}

ks_status ks__landmark_smoother_apply(ks__landmark_smoother *s, ks__landmark *lm, size_t n,
                                      float object_scale, int64_t timestamp_us) {
    if (!s || !lm || n != s->num_landmarks) return KS_STATUS_INVALID_ARGUMENT;
    /* A vanishing object would blow the derivative up; MediaPipe skips scaling below a minimum
     * object size, we clamp instead so the filter stays continuous. */
    float value_scale = 1.0f / fmaxf(object_scale, 1e-6f);
    if (!isfinite(value_scale)) value_scale = 1.0f;
    /* ks__one_euro_apply's steps, once for all values */
    if (s->has_timestamp && timestamp_us <= s->last_timestamp_us) return KS_STATUS_OK;
    if (s->has_timestamp) s->frequency_hz = 1e6f / (float)(timestamp_us - s->last_timestamp_us);
    s->last_timestamp_us = timestamp_us;
    s->has_timestamp = true;
    const size_t nv = 3 * n;
    float *restrict v = s->value;
    for (size_t i = 0; i < n; i++) {
        v[3 * i + 0] = lm[i].x;
        v[3 * i + 1] = lm[i].y;
        v[3 * i + 2] = lm[i].z;
    }
    if (!s->has_value) {
        s->has_value = true;
        memcpy(s->raw_prev, v, nv * sizeof(float));
        memcpy(s->x_prev, v, nv * sizeof(float));
        memset(s->dx_prev, 0, nv * sizeof(float));
        return KS_STATUS_OK; /* the first values pass unchanged */
    }
    const float freq = s->frequency_hz;
    const float a_d = alpha_for(s->p.d_cutoff, freq);
    const float te = 1.0f / freq; /* alpha_for's, per value */
    const float min_cutoff = s->p.min_cutoff, beta = s->p.beta;
    float *restrict raw_prev = s->raw_prev, *restrict x_prev = s->x_prev,
                    *restrict dx_prev = s->dx_prev;
    for (size_t k = 0; k < nv; k++) {
        float value = v[k];
        float dx = (value - raw_prev[k]) * value_scale * freq;
        float edx = a_d * dx + (1.0f - a_d) * dx_prev[k];
        float cutoff = min_cutoff + beta * fabsf(edx);
        float tau = 1.0f / (2.0f * (float)KS__PI * cutoff);
        float a = 1.0f / (1.0f + tau / te);
        float x = a * value + (1.0f - a) * x_prev[k];
        dx_prev[k] = edx;
        raw_prev[k] = value;
        x_prev[k] = x;
        v[k] = x;
    }
    for (size_t i = 0; i < n; i++) {
        lm[i].x = v[3 * i + 0];
        lm[i].y = v[3 * i + 1];
        lm[i].z = v[3 * i + 2];
    }
    return KS_STATUS_OK;
}

/* ---- tracker ---------------------------------------------------------------------------- */

void ks__tracker_init(ks__tracker *t, const ks__tracker_options *opt) {
    memset(t, 0, sizeof(*t));
    if (opt) t->opt = *opt;
    if (!(t->opt.iou_threshold > 0.0f)) t->opt.iou_threshold = 0.3f;
    if (t->opt.max_missed_frames <= 0) t->opt.max_missed_frames = 2;
    if (t->opt.min_hits <= 0) t->opt.min_hits = 1;
    t->next_id = 1;
}

static ks__detection predicted(const ks__track *tr) {
    ks__detection d = tr->det;
    float steps = (float)(tr->missed + 1);
    float dx = tr->vx * steps, dy = tr->vy * steps;
    d.xmin += dx, d.xmax += dx, d.ymin += dy, d.ymax += dy;
    return d;
}

void ks__tracker_update(ks__tracker *t, ks__detection *dets, size_t n) {
    size_t nd = n < KS__TRACKER_MAX_DETECTIONS ? n : KS__TRACKER_MAX_DETECTIONS;
    int32_t det_track[KS__TRACKER_MAX_DETECTIONS]; /* matched track slot, or -1 */
    bool track_matched[KS__TRACKER_MAX_TRACKS] = {false};
    ks__detection pred[KS__TRACKER_MAX_TRACKS];
    for (size_t i = 0; i < n; i++)
        dets[i].track_id = -1;
    for (size_t i = 0; i < nd; i++)
        det_track[i] = -1;
    for (size_t k = 0; k < t->num_tracks; k++)
        pred[k] = predicted(&t->tracks[k]);

    /* Greedy association, best IoU first. T and D are small (<= 64 x 256), so repeated scans
     * beat building and sorting a pair list and need no scratch. */
    for (;;) {
        float best = t->opt.iou_threshold;
        int32_t bk = -1, bi = -1;
        for (size_t k = 0; k < t->num_tracks; k++) {
            if (track_matched[k]) continue;
            for (size_t i = 0; i < nd; i++) {
                if (det_track[i] >= 0) continue;
                if (t->opt.per_class && dets[i].class_id != t->tracks[k].det.class_id) continue;
                float iou = ks__box_overlap(&pred[k], &dets[i], KS__OVERLAP_IOU);
                if (iou >= best && (iou > best || bk < 0))
                    best = iou, bk = (int32_t)k, bi = (int32_t)i;
            }
        }
        if (bk < 0) break;
        track_matched[bk] = true;
        det_track[bi] = bk;
    }

    for (size_t i = 0; i < nd; i++) {
        if (det_track[i] < 0) continue;
        ks__track *tr = &t->tracks[det_track[i]];
        float ocx = (tr->det.xmin + tr->det.xmax) * 0.5f,
              ocy = (tr->det.ymin + tr->det.ymax) * 0.5f;
        float ncx = (dets[i].xmin + dets[i].xmax) * 0.5f,
              ncy = (dets[i].ymin + dets[i].ymax) * 0.5f;
        /* Velocity per frame over the frames since the last match; blended with the previous
         * estimate once there is one, so one noisy box does not throw the prediction off. */
        float frames = (float)(tr->missed + 1);
        float vx = (ncx - ocx) / frames, vy = (ncy - ocy) / frames;
        if (tr->hits >= 2) {
            tr->vx = 0.5f * tr->vx + 0.5f * vx, tr->vy = 0.5f * tr->vy + 0.5f * vy;
        } else {
            tr->vx = vx, tr->vy = vy;
        }
        tr->det = dets[i];
        tr->hits++;
        tr->missed = 0;
        if (tr->hits >= t->opt.min_hits) tr->confirmed = true;
        tr->det.track_id = tr->id;
        if (tr->confirmed) dets[i].track_id = tr->id;
    }

    /* Unmatched tracks coast or die; compact survivors in place (order kept so ids stay in
     * creation order). */
    size_t kept = 0;
    for (size_t k = 0; k < t->num_tracks; k++) {
        ks__track tr = t->tracks[k];
        if (!track_matched[k]) {
            tr.missed++;
            /* An unconfirmed track that misses a frame is noise: drop it at once. */
            if (tr.missed > t->opt.max_missed_frames || !tr.confirmed) continue;
        }
        t->tracks[kept++] = tr;
    }
    t->num_tracks = kept;

    for (size_t i = 0; i < nd; i++) {
        if (det_track[i] >= 0 || t->num_tracks >= KS__TRACKER_MAX_TRACKS) continue;
        ks__track *tr = &t->tracks[t->num_tracks++];
        memset(tr, 0, sizeof(*tr));
        tr->id = t->next_id++;
        if (t->next_id <= 0) t->next_id = 1; /* wrapped after 2^31 tracks */
        tr->det = dets[i];
        tr->det.track_id = tr->id;
        tr->hits = 1;
        tr->confirmed = tr->hits >= t->opt.min_hits;
        if (tr->confirmed) dets[i].track_id = tr->id;
    }
}

/* ---- mask smoothing --------------------------------------------------------------------- */

/* GCC/Clang vector extensions, four lanes (SSE2, NEON, WebAssembly SIMD or scalar code, whatever
 * the target has) and, on x86-64 CPUs with AVX2 and FMA, eight; log2 by a polynomial instead of
 * libm's log2f: two log2f per mask pixel took 0.64 ms of the selfie segmenter's VIDEO-mode call
 * on a 256x256 mask (Zen 3); the four-lane form is 3.5x faster (a standalone run of both on one
 * 256x256 mask: 1.04 against 0.30 ms in a busy spell of the machine), the eight-lane one 2.2x
 * faster again (fastest of 200 calls on one 256x256 mask, alternated with KS_ISA_MAX=scalar:
 * 0.115 against 0.251 ms). The entropy differs from the
 * log2f form by < 2e-7 (FMA contraction in the eight-lane form moves the last bit). */

/* log2(x) of normal x > 0: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), log2(m) = z * P(z) with
 * z = m - 1 and P the degree-7 least-squares fit (|error| < 1.5e-7 over that range).
 * SMOOTH_DEFS(N, BYTES, ATTR) defines smooth_vN and mask_smooth_vN for vectors of N floats. */
#define SMOOTH_DEFS(N, BYTES, ATTR)                                                                \
    typedef float ks_v##N##f __attribute__((vector_size(BYTES)));                                  \
    typedef int32_t ks_v##N##i __attribute__((vector_size(BYTES)));                                \
    typedef uint32_t ks_v##N##u __attribute__((vector_size(BYTES)));                               \
    ATTR static inline ks_v##N##f sel_v##N(ks_v##N##i m, ks_v##N##f a, ks_v##N##f b) {             \
        return (ks_v##N##f)(((ks_v##N##i)a & m) | ((ks_v##N##i)b & ~m));                           \
    }                                                                                              \
    ATTR static inline ks_v##N##f log2_v##N(ks_v##N##f x) {                                        \
        ks_v##N##u b = (ks_v##N##u)x;                                                              \
        ks_v##N##i e = (ks_v##N##i)(b >> 23) - 127;                                                \
        ks_v##N##f m = (ks_v##N##f)((b & 0x007fffffu) | 0x3f800000u);                              \
        ks_v##N##i big = m > 1.41421356f;                                                          \
        m = sel_v##N(big, m * 0.5f, m);                                                            \
        e = e - big; /* big is -1 where true */                                                    \
        ks_v##N##f z = m - 1.0f;                                                                   \
        ks_v##N##f s = z * -1.407480754e-01f + 2.326024081e-01f;                                   \
        s = s * z - 2.499610838e-01f;                                                              \
        s = s * z + 2.872763164e-01f;                                                              \
        s = s * z - 3.601469501e-01f;                                                              \
        s = s * z + 4.809181333e-01f;                                                              \
        s = s * z - 7.213554130e-01f;                                                              \
        s = s * z + 1.442694958e+00f;                                                              \
        return __builtin_convertvector(e, ks_v##N##f) + s * z;                                     \
    }                                                                                              \
    /* p + (q - p) * u * ratio with u = 1 - (1 - H(p))^2, H the binary entropy in bits of p        \
     * clamped to [0, 1]. The clamp's ends (and a NaN p, whose output stays NaN) give H = 0        \
     * through the 1e-30 floor: H is then ~1e-28, and 1 - H rounds to 1. */                        \
    ATTR static inline ks_v##N##f smooth_v##N(ks_v##N##f p, ks_v##N##f q, float ratio) {           \
        const ks_v##N##f zero = {0.0f}, one = zero + 1.0f, tiny = zero + 1e-30f;                   \
        ks_v##N##f pc = sel_v##N(p > 0.0f, p, zero);                                               \
        pc = sel_v##N(pc < 1.0f, pc, one);                                                         \
        ks_v##N##f a = sel_v##N(pc > 1e-30f, pc, tiny), c = 1.0f - pc;                             \
        c = sel_v##N(c > 1e-30f, c, tiny);                                                         \
        ks_v##N##f h = -(a * log2_v##N(a) + c * log2_v##N(c));                                     \
        ks_v##N##f certainty = 1.0f - h;                                                           \
        ks_v##N##f u = 1.0f - certainty * certainty;                                               \
        return p + (q - p) * (u * ratio);                                                          \
    }                                                                                              \
    /* out may be prev (in place): each group is loaded before it is stored */                     \
    ATTR static void mask_smooth_v##N(const float *cur, const float *prev, float *out, size_t n,   \
                                      float ratio) {                                               \
        size_t i = 0;                                                                              \
        for (; i + N <= n; i += N) {                                                               \
            ks_v##N##f p, q;                                                                       \
            memcpy(&p, cur + i, sizeof(p));                                                        \
            memcpy(&q, prev + i, sizeof(q));                                                       \
            p = smooth_v##N(p, q, ratio);                                                          \
            memcpy(out + i, &p, sizeof(p));                                                        \
        }                                                                                          \
        if (i < n) {                                                                               \
            ks_v##N##f p = {0.0f}, q = p;                                                          \
            memcpy(&p, cur + i, (n - i) * sizeof(float));                                          \
            memcpy(&q, prev + i, (n - i) * sizeof(float));                                         \
            p = smooth_v##N(p, q, ratio);                                                          \
            memcpy(out + i, &p, (n - i) * sizeof(float));                                          \
        }                                                                                          \
    }

SMOOTH_DEFS(4, 16, )
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KS_SMOOTH_V8 1
SMOOTH_DEFS(8, 32, __attribute__((target("avx2,fma"))))
#endif

void ks__mask_smooth(const float *cur, const float *prev, float *out, size_t n,
                     float combine_with_previous_ratio) {
    if (!prev) {
        if (out != cur) memmove(out, cur, n * sizeof(float));
        return;
    }
#if defined(KS_SMOOTH_V8)
    if (ks__cpu_isa() & KS_ISA_AVX2) { /* AVX2 + FMA */
        mask_smooth_v8(cur, prev, out, n, combine_with_previous_ratio);
        return;
    }
#endif
    mask_smooth_v4(cur, prev, out, n, combine_with_previous_ratio);
}

/* ---- separable bilinear mask resampling ---- */

void ks__resample_free(ks__resample *r, const ks_allocator *alloc) {
    ks__free(alloc, r->col0);
    ks__free(alloc, r->col1);
    ks__free(alloc, r->colw);
    ks__free(alloc, r->hrow[0]);
    ks__free(alloc, r->hrow[1]);
    memset(r, 0, sizeof(*r));
}

bool ks__resample_reserve(ks__resample *r, const ks_allocator *alloc, size_t n) {
    if (n <= r->cap) return true;
    ks__resample_free(r, alloc);
    r->col0 = ks__alloc(alloc, n * sizeof(int32_t));
    r->col1 = ks__alloc(alloc, n * sizeof(int32_t));
    r->colw = ks__alloc(alloc, n * sizeof(float));
    r->hrow[0] = ks__alloc(alloc, n * sizeof(float));
    r->hrow[1] = ks__alloc(alloc, n * sizeof(float));
    if (!r->col0 || !r->col1 || !r->colw || !r->hrow[0] || !r->hrow[1]) {
        ks__resample_free(r, alloc);
        return false;
    }
    r->cap = n;
    return true;
}

void ks__resample_columns(ks__resample *r, int32_t sw, int32_t dw) {
    float sx = (float)sw / (float)dw;
    for (int32_t x = 0; x < dw; x++) {
        float fx = ((float)x + 0.5f) * sx - 0.5f;
        if (fx < 0.0f) fx = 0.0f;
        int32_t x0 = (int32_t)fx;
        if (x0 > sw - 1) x0 = sw - 1;
        float wx = fx - (float)x0;
        r->col0[x] = x0;
        r->col1[x] = x0 + 1 < sw ? x0 + 1 : sw - 1;
        r->colw[x] = wx > 1.0f ? 1.0f : wx;
    }
    r->src_w = sw;
}

void ks__resample_row_tap(const void *ctx, int32_t y, int32_t *y0_out, int32_t *y1_out,
                          float *wy_out) {
    const ks__resample_rows *r = ctx;
    float fy = ((float)y + 0.5f) * r->sy - 0.5f;
    if (fy < 0.0f) fy = 0.0f;
    int32_t y0 = (int32_t)fy;
    if (y0 > r->sh - 1) y0 = r->sh - 1;
    float wy = fy - (float)y0;
    *y0_out = y0;
    *y1_out = y0 + 1 < r->sh ? y0 + 1 : r->sh - 1;
    *wy_out = wy > 1.0f ? 1.0f : wy;
}

static void resample_row(const ks__resample *r, const float *row, float *out, int32_t dst_w) {
    for (int32_t x = 0; x < dst_w; x++) {
        float p0 = row[r->col0[x]];
        out[x] = p0 + (row[r->col1[x]] - p0) * r->colw[x];
    }
}

#if defined(KS_SMOOTH_V8)
#include <immintrin.h>

/* resample_row in AVX2: each group of 8 outputs whose taps lie within 8 consecutive source
 * values (upsampling: 3 or 4 of them) loads those once and spreads them with two lane permutes;
 * other groups gather. The same expressions as resample_row (no FMA: this function is not
 * compiled for it), so the same bits. */
__attribute__((target("avx2"))) static void
resample_row_avx2(const ks__resample *r, const float *row, float *out, int32_t dst_w) {
    int32_t x = 0;
    for (; x + 8 <= dst_w; x += 8) {
        __m256i i0 = _mm256_loadu_si256((const __m256i *)(const void *)(r->col0 + x));
        __m256i i1 = _mm256_loadu_si256((const __m256i *)(const void *)(r->col1 + x));
        int32_t base = r->col0[x];
        __m256i b = _mm256_set1_epi32(base), seven = _mm256_set1_epi32(7);
        __m256i d0 = _mm256_sub_epi32(i0, b), d1 = _mm256_sub_epi32(i1, b);
        /* every tap in [base, base + 7]: unsigned d <= 7 (min_epu32(d, 7) == d) */
        __m256i in = _mm256_and_si256(_mm256_cmpeq_epi32(_mm256_min_epu32(d0, seven), d0),
                                      _mm256_cmpeq_epi32(_mm256_min_epu32(d1, seven), d1));
        __m256 p0, p1;
        if (base >= 0 && base + 8 <= r->src_w &&
            _mm256_movemask_ps(_mm256_castsi256_ps(in)) == 0xff) {
            __m256 win = _mm256_loadu_ps(row + base);
            p0 = _mm256_permutevar8x32_ps(win, d0);
            p1 = _mm256_permutevar8x32_ps(win, d1);
        } else {
            p0 = _mm256_i32gather_ps(row, i0, 4);
            p1 = _mm256_i32gather_ps(row, i1, 4);
        }
        __m256 d = _mm256_mul_ps(_mm256_sub_ps(p1, p0), _mm256_loadu_ps(r->colw + x));
        _mm256_storeu_ps(out + x, _mm256_add_ps(p0, d));
    }
    for (; x < dst_w; x++) {
        float p0 = row[r->col0[x]];
        out[x] = p0 + (row[r->col1[x]] - p0) * r->colw[x];
    }
}

/* The vertical blend of one output row, clamped to [0, 1] (NaN -> 0), counting outputs >= 0.5:
 * the generic loop's expressions in 8 lanes. */
__attribute__((target("avx2,popcnt"))) static size_t
blend_row_avx2(const float *top, const float *bot, float wy, float *out, int32_t n) {
    const __m256 w = _mm256_set1_ps(wy), zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
    const __m256 half = _mm256_set1_ps(0.5f);
    size_t count = 0;
    int32_t x = 0;
    for (; x + 8 <= n; x += 8) {
        __m256 t = _mm256_loadu_ps(top + x);
        __m256 v = _mm256_add_ps(t, _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(bot + x), t), w));
        v = _mm256_max_ps(v, zero); /* v > 0 ? v : 0, NaN -> 0 */
        v = _mm256_min_ps(v, one);
        _mm256_storeu_ps(out + x, v);
        count += (size_t)__builtin_popcount(
            (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(v, half, _CMP_GE_OQ)));
    }
    for (; x < n; x++) {
        float v = top[x] + (bot[x] - top[x]) * wy;
        v = v > 0.0f ? v : 0.0f;
        out[x] = v < 1.0f ? v : 1.0f;
        count += out[x] >= 0.5f;
    }
    return count;
}
#endif

void ks__mask_resample(ks__resample *r, const float *src, size_t src_stride,
                       ks__resample_row_fn row_tap, const void *row_ctx, float *dst, int32_t dst_w,
                       int32_t dst_h, size_t dst_stride, size_t *num_ge_half) {
    void (*hrow)(const ks__resample *, const float *, float *, int32_t) = resample_row;
#if defined(KS_SMOOTH_V8)
    if (ks__cpu_isa() & KS_ISA_AVX2) hrow = resample_row_avx2;
#endif
    int32_t have[2] = {-1, -1}; /* source row held by hrow[0], hrow[1] */
    size_t count = 0;
    for (int32_t y = 0; y < dst_h; y++) {
        int32_t y0, y1;
        float wy;
        row_tap(row_ctx, y, &y0, &y1, &wy);
        if (have[0] != y0) {
            if (have[1] == y0) { /* the previous bottom row is this top row: swap */
                float *t = r->hrow[0];
                r->hrow[0] = r->hrow[1];
                r->hrow[1] = t;
                have[1] = -1;
            } else {
                hrow(r, src + (size_t)y0 * src_stride, r->hrow[0], dst_w);
            }
            have[0] = y0;
        }
        if (have[1] != y1) {
            hrow(r, src + (size_t)y1 * src_stride, r->hrow[1], dst_w);
            have[1] = y1;
        }
        const float *top = r->hrow[0], *bot = r->hrow[1];
        float *out = dst + (size_t)y * dst_stride;
#if defined(KS_SMOOTH_V8)
        if (hrow == resample_row_avx2) {
            count += blend_row_avx2(top, bot, wy, out, dst_w);
            continue;
        }
#endif
        for (int32_t x = 0; x < dst_w; x++) {
            float v = top[x] + (bot[x] - top[x]) * wy;
            /* clamp to [0, 1], NaN -> 0: the forms of maxps / minps (one instruction each) */
            v = v > 0.0f ? v : 0.0f;
            out[x] = v < 1.0f ? v : 1.0f;
        }
        if (num_ge_half)
            for (int32_t x = 0; x < dst_w; x++)
                count += out[x] >= 0.5f;
    }
    if (num_ge_half) *num_ge_half = count;
}
