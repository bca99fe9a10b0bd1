/* The context-adaptive weight coder (weight_coder.h) and its use in .ksm weight payloads
 * (weight_quant.h): bit-exact round trips on synthetic edge cases and real models, refusal of
 * truncated, padded and bit-flipped streams, hostile payloads. KS_WCODE_REPORT=1 runs all five
 * models of docs/compression.md and prints the entropy-coding table (sizes, bits per weight,
 * savings, decode time). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "convert.h"
#include "fileio.h"
#include "base/crc32.h"
#include "ksm.h"
#include "weight_coder.h"
#include "weight_quant.h"

static uint32_t g_rng = 777u;
static uint32_t rnd(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return g_rng >> 8;
}
/* two-sided geometric code with mean magnitude ~ spread, clipped to qmax */
static int8_t rnd_code(double spread, int32_t qmax) {
    double u = ((double)rnd() + 1.0) / (double)(1u << 24);
    double v = -log(u) * spread;
    int32_t m = v > qmax ? qmax : (int32_t)v;
    return (int8_t)(rnd() & 1 ? -m : m);
}

typedef struct stream {
    uint8_t *data;
    size_t size;
} stream;

static stream encode(const uint8_t *scales, uint64_t num_scales, uint32_t scale_bits,
                     const int8_t *codes, uint64_t rows, uint64_t row_len, int32_t qmax) {
    size_t cap = (size_t)(num_scales * 8 + rows * row_len * 2 + 64);
    stream s = {malloc(cap), 0};
    void *scratch = malloc(ks__wcode_scratch_bytes(row_len));
    assert_non_null(s.data);
    assert_int_equal(ks__wcode_encode(scales, num_scales, scale_bits, codes, rows, row_len, qmax,
                                      scratch, s.data, cap, &s.size),
                     KS_STATUS_OK);
    free(scratch);
    return s;
}

static ks_status decode(const uint8_t *src, size_t size, uint64_t num_scales, uint32_t scale_bits,
                        uint8_t *scales_out, uint64_t rows, uint64_t row_len, int32_t qmax,
                        int8_t *codes_out) {
    void *scratch = malloc(ks__wcode_scratch_bytes(row_len));
    ks_status st = ks__wcode_decode(src, size, num_scales, scale_bits, scales_out, rows, row_len,
                                    qmax, scratch, codes_out);
    free(scratch);
    return st;
}

/* Round trip, then: every truncation, one extra byte, and (for small streams) every single-bit
 * flip must be refused, never read out of bounds (ASan/valgrind builds check that). */
static void check_case(const uint8_t *scales, uint64_t num_scales, uint32_t scale_bits,
                       const int8_t *codes, uint64_t rows, uint64_t row_len, int32_t qmax,
                       bool flips) {
    stream s = encode(scales, num_scales, scale_bits, codes, rows, row_len, qmax);
    size_t scale_bytes = (size_t)num_scales * scale_bits / 8, n = (size_t)(rows * row_len);
    uint8_t *so = malloc(scale_bytes + 1);
    int8_t *co = malloc((size_t)(rows * (row_len + 1)) + 1); /* room for the wrong-geometry try */
    assert_int_equal(decode(s.data, s.size, num_scales, scale_bits, so, rows, row_len, qmax, co),
                     KS_STATUS_OK);
    assert_memory_equal(so, scales, scale_bytes);
    if (n) assert_memory_equal(co, codes, n);
    /* exact-size copies so ASan sees any over-read */
    for (size_t cut = 0; cut < s.size; cut += (s.size > 600 ? s.size / 97 + 1 : 1)) {
        uint8_t *t = malloc(cut ? cut : 1);
        memcpy(t, s.data, cut);
        assert_int_equal(decode(t, cut, num_scales, scale_bits, so, rows, row_len, qmax, co),
                         KS_STATUS_INVALID_MODEL);
        free(t);
    }
    uint8_t *longer = malloc(s.size + 1);
    memcpy(longer, s.data, s.size);
    longer[s.size] = 0;
    assert_int_equal(
        decode(longer, s.size + 1, num_scales, scale_bits, so, rows, row_len, qmax, co),
        KS_STATUS_INVALID_MODEL);
    free(longer);
    if (flips) {
        /* the CRC catches every single-bit flip; the end state checks back it up */
        for (size_t bit = 0; bit < s.size * 8; bit++) {
            s.data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            ks_status st =
                decode(s.data, s.size, num_scales, scale_bits, so, rows, row_len, qmax, co);
            s.data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            if (st != KS_STATUS_INVALID_MODEL)
                fail_msg("flip of bit %zu of %zu accepted (rows %llu, row %llu)", bit, s.size,
                         (unsigned long long)rows, (unsigned long long)row_len);
        }
    }
    /* wrong geometry for the same stream */
    if (rows && row_len)
        assert_int_equal(
            decode(s.data, s.size, num_scales, scale_bits, so, rows, row_len + 1, qmax, co),
            KS_STATUS_INVALID_MODEL);
    free(so);
    free(co);
    free(s.data);
}

static uint8_t *f32_scales(uint64_t n) {
    uint8_t *s = malloc(n * 4 + 1);
    for (uint64_t i = 0; i < n; i++) {
        float f = 1e-3f * (1.0f + (float)(rnd() % 1000) / 100.0f);
        memcpy(s + i * 4, &f, 4);
    }
    return s;
}

static void test_synthetic(void **state) {
    (void)state;
    const uint64_t rows = 12, row_len = 37, n = rows * row_len;
    int8_t *c = malloc(n);
    uint8_t *sc = f32_scales(rows);
    /* all zeros */
    memset(c, 0, n);
    check_case(sc, rows, 32, c, rows, row_len, 127, true);
    /* all +127, all -127, alternating extremes */
    memset(c, 127, n);
    check_case(sc, rows, 32, c, rows, row_len, 127, true);
    for (uint64_t i = 0; i < n; i++)
        c[i] = -127;
    check_case(sc, rows, 32, c, rows, row_len, 127, true);
    for (uint64_t i = 0; i < n; i++)
        c[i] = (int8_t)(i & 1 ? 127 : -127);
    check_case(sc, rows, 32, c, rows, row_len, 127, true);
    /* every int8 code value, uniformly random */
    for (uint64_t i = 0; i < n; i++)
        c[i] = (int8_t)((int32_t)(rnd() % 255) - 127);
    check_case(sc, rows, 32, c, rows, row_len, 127, true);
    /* weight-like */
    for (uint64_t i = 0; i < n; i++)
        c[i] = rnd_code(20.0, 127);
    check_case(sc, rows, 32, c, rows, row_len, 127, true);
    /* int4 range with f16 scale words */
    uint8_t h[2 * 12];
    for (int i = 0; i < 12; i++) {
        uint16_t v = ks__f32_to_f16(0.01f * (float)(i + 1));
        h[2 * i] = (uint8_t)v;
        h[2 * i + 1] = (uint8_t)(v >> 8);
    }
    for (uint64_t i = 0; i < n; i++)
        c[i] = rnd_code(2.0, 7);
    check_case(h, 12, 16, c, rows, row_len, 7, true);
    for (uint64_t i = 0; i < n; i++)
        c[i] = (int8_t)(i & 1 ? 7 : -7);
    check_case(h, 12, 16, c, rows, row_len, 7, true);
    /* tiny: one value, one row; no rows at all; rows of length 0 */
    c[0] = -5;
    check_case(sc, 1, 32, c, 1, 1, 127, true);
    check_case(sc, 0, 32, c, 0, 0, 127, true);
    check_case(sc, 3, 32, c, 3, 0, 127, true);
    /* one channel with a long row; many channels of one value */
    int8_t *big = malloc(5000);
    for (int i = 0; i < 5000; i++)
        big[i] = rnd_code(30.0, 127);
    check_case(sc, 1, 32, big, 1, 5000, 127, false);
    uint8_t *sc_many = f32_scales(5000);
    check_case(sc_many, 5000, 32, big, 5000, 1, 127, false);
    /* scale words of every kind: zero, negative, inf, NaN, denormal, far-apart exponents */
    uint32_t words[8] = {0u,          0x80000000u, 0x7f800000u, 0x7fc00001u,
                         0x00000001u, 0x3f800000u, 0x0a000000u, 0xff7fffffu};
    check_case((const uint8_t *)words, 8, 32, c, 8, 3, 127, true);
    uint16_t hw[6] = {0, 0x7c00, 0xfe01, 0x0001, 0x3c00, 0x7bff};
    check_case((const uint8_t *)hw, 6, 16, c, 6, 2, 7, true);
    free(sc_many);
    free(big);
    free(sc);
    free(c);
}

static void test_bad_arguments(void **state) {
    (void)state;
    int8_t c[4] = {1, 2, 3, 4};
    uint8_t sc[16] = {0}, dst[256];
    uint8_t scratch[64];
    size_t n = 0;
    /* out-of-range codes, qmax and scale widths the format does not have */
    int8_t bad4[4] = {1, 8, 0, 0};
    assert_int_equal(ks__wcode_encode(sc, 1, 16, bad4, 1, 4, 7, scratch, dst, sizeof(dst), &n),
                     KS_STATUS_INVALID_ARGUMENT);
    int8_t bad8[1] = {-128};
    assert_int_equal(ks__wcode_encode(sc, 1, 32, bad8, 1, 1, 127, scratch, dst, sizeof(dst), &n),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks__wcode_encode(sc, 1, 32, c, 1, 4, 100, scratch, dst, sizeof(dst), &n),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks__wcode_encode(sc, 1, 24, c, 1, 4, 127, scratch, dst, sizeof(dst), &n),
                     KS_STATUS_INVALID_ARGUMENT);
    /* too small a destination */
    assert_int_equal(ks__wcode_encode(sc, 1, 32, c, 1, 4, 127, scratch, dst, 6, &n),
                     KS_STATUS_LIMIT_EXCEEDED);
    assert_int_equal(ks__wcode_encode(sc, 1, 32, c, 1, 4, 127, scratch, dst, sizeof(dst), &n),
                     KS_STATUS_OK);
    int8_t out[4];
    uint8_t so[4];
    assert_int_equal(ks__wcode_decode(dst, n, 1, 32, so, 1, 4, 127, scratch, out), KS_STATUS_OK);
    assert_int_equal(ks__wcode_decode(dst, n, 1, 32, so, 1, 4, 100, scratch, out),
                     KS_STATUS_INVALID_MODEL);
    assert_int_equal(ks__wcode_decode(NULL, 0, 1, 32, so, 1, 4, 127, scratch, out),
                     KS_STATUS_INVALID_MODEL);
    /* reserved config bits, lying arithmetic-part sizes */
    uint8_t t[256];
    memcpy(t, dst, n);
    t[0] |= 0x10;
    assert_int_equal(ks__wcode_decode(t, n, 1, 32, so, 1, 4, 127, scratch, out),
                     KS_STATUS_INVALID_MODEL);
    memcpy(t, dst, n);
    t[1] = 3;
    t[2] = t[3] = t[4] = 0;
    assert_int_equal(ks__wcode_decode(t, n, 1, 32, so, 1, 4, 127, scratch, out),
                     KS_STATUS_INVALID_MODEL);
    t[1] = t[2] = t[3] = t[4] = 0xff;
    assert_int_equal(ks__wcode_decode(t, n, 1, 32, so, 1, 4, 127, scratch, out),
                     KS_STATUS_INVALID_MODEL);
}

/* Writes the stream's CRC field as weight_coder.h specifies it, so hostile bytes reach the
 * decoder's core instead of stopping at the checksum. */
static void fix_crc(uint8_t *s, size_t n, uint64_t num_scales, uint32_t scale_bits, uint64_t rows,
                    uint64_t row_len, int32_t qmax) {
    if (n < 9) return;
    uint8_t geo[32];
    uint64_t v[5] = {scale_bits, (uint64_t)qmax, num_scales, rows, row_len};
    for (int i = 0; i < 2; i++)
        for (int b = 0; b < 4; b++)
            geo[4 * i + b] = (uint8_t)(v[i] >> (8 * b));
    for (int i = 0; i < 3; i++)
        for (int b = 0; b < 8; b++)
            geo[8 + 8 * i + b] = (uint8_t)(v[2 + i] >> (8 * b));
    uint32_t crc = ks__crc32(ks__crc32(ks__crc32(0, geo, 32), s, 5), s + 9, n - 9);
    for (int b = 0; b < 4; b++)
        s[5 + b] = (uint8_t)(crc >> (8 * b));
}

/* Random bytes as a stream (mostly with a valid CRC): any status but OK/INVALID_MODEL is a bug;
 * no crash, no out-of-range code, bounded time. */
static void test_random_streams(void **state) {
    (void)state;
    uint8_t buf[300];
    int8_t out[64 * 5];
    uint8_t so[64 * 4];
    uint8_t scratch[64 * 3 + 8];
    for (int k = 0; k < 3000; k++) {
        size_t n = rnd() % sizeof(buf);
        for (size_t i = 0; i < n; i++)
            buf[i] = (uint8_t)rnd();
        if (n >= 5) {
            buf[0] &= 15;
            uint32_t ac = n > 5 ? (uint32_t)(rnd() % (n - 4)) : 0;
            buf[1] = (uint8_t)ac;
            buf[2] = (uint8_t)(ac >> 8);
            buf[3] = buf[4] = 0;
        }
        uint64_t rows = 1 + rnd() % 5, row_len = 1 + rnd() % 64;
        if (k % 4 != 3) fix_crc(buf, n, rows, k & 1 ? 16 : 32, rows, row_len, k & 2 ? 7 : 127);
        ks_status st = ks__wcode_decode(buf, n, rows, k & 1 ? 16 : 32, so, rows, row_len,
                                        k & 2 ? 7 : 127, scratch, out);
        assert_true(st == KS_STATUS_OK || st == KS_STATUS_INVALID_MODEL);
        if (st == KS_STATUS_OK)
            for (uint64_t i = 0; i < rows * row_len; i++)
                assert_true(out[i] >= (k & 2 ? -7 : -127) && out[i] <= (k & 2 ? 7 : 127));
    }
}

/* ks__wenc_encode picks wcode and the payload decodes to the quantizer's own output. */
static void test_payload_round_trip(void **state) {
    (void)state;
    const uint64_t rows = 24, row_len = 3 * 3 * 20, n = rows * row_len;
    float *w = malloc(n * 4), *dq = malloc(n * 4), *out = malloc(n * 4);
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t j = 0; j < row_len; j++) /* per-input-channel and per-row spread */
            w[r * row_len + j] =
                (float)rnd_code(10.0, 127) * 0.01f * (float)(1 + j % 20) * (float)(1 + r % 3);
    for (int mode = 0; mode < 4; mode++) {
        ks__wenc_params p = {mode < 2 ? KS__WENC_INT8_CHANNEL : KS__WENC_INT4_BLOCK,
                             KS__WCODER_WCODE,
                             mode < 2 ? KS_DTYPE_F32 : KS_DTYPE_F16,
                             mode < 2 ? 0u : 32u,
                             (uint8_t)(mode & 1 ? 0 : 1u << KS__WCODER_WCODE),
                             NULL};
        uint8_t *payload = NULL;
        size_t size = 0;
        assert_int_equal(ks__wenc_encode(NULL, w, n, rows, &p, &payload, &size, dq), KS_STATUS_OK);
        assert_int_equal(p.coder, KS__WCODER_WCODE); /* wins on this data */
        char err[256];
        assert_int_equal(ks__wenc_decode(NULL, payload, size, &p, n, rows, out, err, sizeof(err)),
                         KS_STATUS_OK);
        assert_memory_equal(out, dq, n * 4);
        /* truncated payloads are refused with a message */
        for (size_t cut = 0; cut < size; cut += size / 13 + 1) {
            err[0] = 0;
            ks_status st = ks__wenc_decode(NULL, payload, cut, &p, n, rows, out, err, sizeof(err));
            assert_int_equal(st, KS_STATUS_INVALID_MODEL);
            assert_true(err[0] != 0);
        }
        /* a payload that claims far more values than it could hold: refused before allocating */
        assert_int_equal(ks__wenc_decode(NULL, payload, size, &p, (uint64_t)1 << 36, rows, out, err,
                                         sizeof(err)),
                         KS_STATUS_INVALID_MODEL);
        free(payload);
    }
    /* An empty tensor (a zero dim) with a huge first dim claims billions of scales: refused
     * before any scratch is allocated (found by fuzz_ksm). */
    ks__wenc_params p = {KS__WENC_INT8_CHANNEL, KS__WCODER_WCODE, KS_DTYPE_F32, 0, 0, NULL};
    uint8_t small[66] = {0};
    char err[256];
    assert_int_equal(ks__wenc_decode(NULL, small, sizeof(small), &p, 0, (uint64_t)16089350147u, out,
                                     err, sizeof(err)),
                     KS_STATUS_INVALID_MODEL);
    free(w);
    free(dq);
    free(out);
}

/* ---- real models ---- */

typedef struct real_model {
    const char *label, *path;
} real_model;

static const real_model k_models[] = {
    {"FaceMesh", KS_SOURCE_DIR "/models/face_landmarks/face_landmark.tflite"},
    {"BlazeFace (short range)",
     KS_SOURCE_DIR "/models/face_detection/face_detection_short_range.tflite"},
    {"Selfie segmentation", KS_SOURCE_DIR "/models/segmentation/selfie_segmentation.tflite"},
    {"BlazePose full", KS_SOURCE_DIR "/models/pose/pose_landmark_full.tflite"},
    {"YOLOX-nano", KS_SHARED_DATA "/object_detection/yolox_nano.onnx"},
};

static bool import_model(const char *path, ks__graph *g) {
    uint8_t *buf = NULL;
    size_t n = 0;
    char err[512];
    if (ks_read_file(path, (size_t)1 << 30, &buf, &n, err, sizeof(err))) return false;
    ks__graph_init(g, NULL);
    const char *base = strrchr(path, '/');
    ks_status st = ks__import_any(buf, n, base ? base + 1 : path, g, err, sizeof(err));
    free(buf);
    if (!st) st = ks__graph_optimize(g, err, sizeof(err));
    if (st) fail_msg("%s: %s", path, err);
    return true;
}

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct coded {
    uint8_t *img;
    size_t size;
    uint64_t enc_bytes, enc_values;
    double read_ms;
} coded;

static coded write_read(const ks__graph *g, ks__ksm_weights w, bool entropy, uint8_t coders,
                        ks__graph *decoded) {
    coded c = {0};
    ks__ksm_write_opts o = {.weights = w, .entropy = entropy, .entropy_coders = coders};
    char err[512];
    if (ks__ksm_write_ex(g, &o, &c.img, &c.size, err, sizeof(err))) fail_msg("write: %s", err);
    uint64_t sb, nv;
    uint32_t ne;
    assert_int_equal(
        ks__ksm_weight_stats(c.img, c.size, &sb, &nv, &c.enc_bytes, &c.enc_values, &ne),
        KS_STATUS_OK);
    c.read_ms = 1e30;
    for (int rep = 0; rep < 3; rep++) { /* best of 3: the machine is shared */
        ks__graph_free(decoded);
        ks__graph_init(decoded, NULL);
        double t0 = cpu_seconds();
        if (ks__ksm_read(c.img, c.size, false, decoded, err, sizeof(err)))
            fail_msg("read: %s", err);
        double ms = 1e3 * (cpu_seconds() - t0);
        if (ms < c.read_ms) c.read_ms = ms;
    }
    return c;
}

static void assert_same_constants(const ks__graph *a, const ks__graph *b) {
    assert_int_equal(a->num_tensors, b->num_tensors);
    for (uint32_t i = 0; i < a->num_tensors; i++) {
        const ks__tensor *x = &a->tensors[i], *y = &b->tensors[i];
        assert_int_equal(x->flags & KS__TENSOR_CONST, y->flags & KS__TENSOR_CONST);
        if (!(x->flags & KS__TENSOR_CONST)) continue;
        assert_int_equal(x->size_bytes, y->size_bytes);
        assert_memory_equal(x->data, y->data, x->size_bytes);
    }
}

static void test_real_models(void **state) {
    (void)state;
    bool report = getenv("KS_WCODE_REPORT") != NULL;
    int found = 0;
    double sum_file = 0, sum_w = 0, sum_file4 = 0, sum_w4 = 0;
    if (report)
        printf("| model | int8 file | int8 weights | + rANS | + wcode | + best | b/w int8 / rANS / "
               "best | saving file / weights | int4 weights | int4 + best | saving | read ms "
               "raw / rANS / best |\n");
    for (size_t k = 0; k < sizeof(k_models) / sizeof(k_models[0]); k++) {
        /* without the report only the small BlazeFace model runs (unit-test time budget) */
        if (!report && k != 1) continue;
        ks__graph g;
        if (!import_model(k_models[k].path, &g)) continue;
        found++;
        ks__graph ref, dec;
        ks__graph_init(&ref, NULL);
        ks__graph_init(&dec, NULL);
        coded raw = write_read(&g, KS__KSM_WEIGHTS_INT8, false, 0, &ref);
        coded rans = write_read(&g, KS__KSM_WEIGHTS_INT8, true, 1u << KS__WCODER_RANS, &dec);
        assert_same_constants(&ref, &dec);
        coded wc = write_read(&g, KS__KSM_WEIGHTS_INT8, true, 1u << KS__WCODER_WCODE, &dec);
        assert_same_constants(&ref, &dec);
        coded best = write_read(&g, KS__KSM_WEIGHTS_INT8, true, 0, &dec);
        assert_same_constants(&ref, &dec);
        assert_true(best.enc_bytes <= rans.enc_bytes && best.enc_bytes <= wc.enc_bytes);
        coded raw4 = write_read(&g, KS__KSM_WEIGHTS_INT4, false, 0, &ref);
        coded best4 = write_read(&g, KS__KSM_WEIGHTS_INT4, true, 0, &dec);
        assert_same_constants(&ref, &dec);
        double save_file = 100.0 * (1.0 - (double)best.size / (double)raw.size);
        double save_w = 100.0 * (1.0 - (double)best.enc_bytes / (double)raw.enc_bytes);
        double save_file4 = 100.0 * (1.0 - (double)best4.size / (double)raw4.size);
        double save_w4 = 100.0 * (1.0 - (double)best4.enc_bytes / (double)raw4.enc_bytes);
        sum_file += save_file;
        sum_w += save_w;
        sum_file4 += save_file4;
        sum_w4 += save_w4;
        if (report) {
            double v = (double)raw.enc_values;
            printf("| %s | %zu | %llu | %llu | %llu | %llu (file %zu) | %.2f / %.2f / %.2f | "
                   "%.1f %% / %.1f %% | %llu | %llu | %.1f %% (file %.1f %%) | %.1f / %.1f / "
                   "%.1f |\n",
                   k_models[k].label, raw.size, (unsigned long long)raw.enc_bytes,
                   (unsigned long long)rans.enc_bytes, (unsigned long long)wc.enc_bytes,
                   (unsigned long long)best.enc_bytes, best.size, 8.0 * (double)raw.enc_bytes / v,
                   8.0 * (double)rans.enc_bytes / v, 8.0 * (double)best.enc_bytes / v, save_file,
                   save_w, (unsigned long long)raw4.enc_bytes, (unsigned long long)best4.enc_bytes,
                   save_w4, save_file4, raw.read_ms, rans.read_ms, best.read_ms);
            printf("    %s: wcode decode %.1f MB of int8 codes/s\n", k_models[k].label,
                   (double)raw.enc_values / 1e6 / ((best.read_ms - raw.read_ms) / 1e3));
        }
        coded all[] = {raw, rans, wc, best, raw4, best4};
        for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
            ks__free(&g.alloc, all[i].img);
        ks__graph_free(&ref);
        ks__graph_free(&dec);
        ks__graph_free(&g);
    }
    if (!found) skip();
    if (report)
        printf("average saving over %d models: int8 file %.2f %%, int8 weights %.2f %%; int4 "
               "file %.2f %%, int4 weights %.2f %%\n",
               found, sum_file / found, sum_w / found, sum_file4 / found, sum_w4 / found);
}

/* bcode (the .ksm 1.2 table coder) round-trips any bytes, including runs the match model
 * predicts and an empty input; damaged streams are refused (the CRC catches what the end state
 * does not). LOSSLESS payloads round-trip through every coder. */
static void test_bcode_and_lossless(void **state) {
    (void)state;
    enum { N = 6000 };
    uint8_t *src = malloc(N), *dst = malloc(N + 1), *cbuf = malloc(2 * N + 64);
    void *scratch = malloc(ks__bcode_scratch_bytes());
    assert_non_null(src);
    assert_non_null(dst);
    assert_non_null(cbuf);
    assert_non_null(scratch);
    uint32_t x = 12345;
    for (int i = 0; i < N; i++) {
        x = x * 1103515245u + 12345u;
        /* records with repeated names and small numbers, then noise */
        src[i] =
            i < N / 2 ? (uint8_t)("tensor/conv2d_"[i % 14] + (i / 97) % 3) : (uint8_t)(x >> 24);
    }
    const size_t sizes[4] = {0, 1, N / 2, N};
    for (int k = 0; k < 4; k++) {
        size_t n = sizes[k], size = 0;
        assert_int_equal(ks__bcode_encode(src, n, scratch, cbuf, 2 * N + 64, &size), 0);
        assert_int_equal(ks__bcode_decode(cbuf, size, scratch, dst, n), 0);
        if (n) assert_memory_equal(src, dst, n);
        if (k == 2) assert_true(size < n / 4); /* the repetitive half compresses well */
        /* truncated, wrong length: refused; flipped: refused unless the flip changes nothing
         * decoded (the rate set of a stream too short to adapt), which the CRC guarantees */
        if (size > 9) assert_int_not_equal(ks__bcode_decode(cbuf, size - 1, scratch, dst, n), 0);
        assert_int_not_equal(ks__bcode_decode(cbuf, size, scratch, dst, n + 1), 0);
        for (size_t b = 0; b < size * 8; b += 7) {
            cbuf[b / 8] ^= (uint8_t)(1u << (b % 8));
            if (ks__bcode_decode(cbuf, size, scratch, dst, n) == 0) {
                assert_true(b < 2);
                if (n) assert_memory_equal(src, dst, n);
            }
            cbuf[b / 8] ^= (uint8_t)(1u << (b % 8));
        }
    }
    /* LOSSLESS: I8 codes through every coder (0: the best of all) */
    int8_t codes[64 * 36];
    for (int i = 0; i < 64 * 36; i++)
        codes[i] = (int8_t)(((i * 7919) % 61 - 30) / (1 + i % 4));
    for (int coders = 0; coders < 4; coders++) {
        ks__wenc_params p = {0};
        p.entropy_coders = (uint8_t)(coders ? 1u << coders : 0);
        uint8_t *payload = NULL;
        size_t size = 0;
        assert_int_equal(ks__wenc_encode_lossless(NULL, (const uint8_t *)codes, sizeof(codes),
                                                  KS_DTYPE_I8, 64, &p, &payload, &size),
                         0);
        assert_int_equal(p.encoding, KS__WENC_LOSSLESS);
        assert_true(size < sizeof(codes));
        char err[256];
        memset(dst, 0, sizeof(codes));
        assert_int_equal(ks__wenc_decode_lossless(NULL, payload, size, &p, KS_DTYPE_I8,
                                                  sizeof(codes), dst, err, sizeof(err)),
                         0);
        assert_memory_equal(codes, dst, sizeof(codes));
        /* the same payload read as another size or as a non-I8 tensor is refused */
        assert_int_not_equal(ks__wenc_decode_lossless(NULL, payload, size, &p, KS_DTYPE_I8,
                                                      sizeof(codes) - 36, dst, err, sizeof(err)),
                             0);
        if (p.coder == KS__WCODER_WCODE)
            assert_int_not_equal(ks__wenc_decode_lossless(NULL, payload, size, &p, KS_DTYPE_U8,
                                                          sizeof(codes), dst, err, sizeof(err)),
                                 0);
        ks__free(NULL, payload);
    }
    /* F32 values that are all f16 (f16 weights stored as F32): F16_BCODE wins, round-trips bit
     * for bit (signed zero, subnormals, infinities included) and is refused for other dtypes or
     * sizes; one value that is not an f16 rules it out */
    float vals[1024];
    for (int i = 0; i < 1024; i++)
        vals[i] = ks__f16_to_f32((uint16_t)(((i * 40503u) & 0x7bffu) | (unsigned)(i & 1) << 15));
    vals[5] = -0.0f;
    vals[6] = ks__f16_to_f32(0x0001); /* smallest subnormal */
    vals[7] = ks__f16_to_f32(0x7c00); /* +inf */
    for (int pass = 0; pass < 2; pass++) {
        if (pass) vals[500] = 1.0f + 1.0f / 4096.0f; /* needs more than f16's 10 mantissa bits */
        ks__wenc_params p = {0};
        uint8_t *payload = NULL;
        size_t size = 0;
        assert_int_equal(ks__wenc_encode_lossless(NULL, (const uint8_t *)vals, sizeof(vals),
                                                  KS_DTYPE_F32, 1, &p, &payload, &size),
                         0);
        assert_int_equal(p.coder == KS__WCODER_F16_BCODE, pass == 0);
        char err[256];
        memset(dst, 0, sizeof(vals));
        assert_int_equal(ks__wenc_decode_lossless(NULL, payload, size, &p, KS_DTYPE_F32,
                                                  sizeof(vals), dst, err, sizeof(err)),
                         0);
        assert_memory_equal(vals, dst, sizeof(vals));
        if (!pass) {
            assert_true(size < sizeof(vals) / 2 + 32); /* ~2 bytes per pseudo-random f16 */
            assert_int_not_equal(ks__wenc_decode_lossless(NULL, payload, size, &p, KS_DTYPE_I32,
                                                          sizeof(vals), dst, err, sizeof(err)),
                                 0);
            assert_int_not_equal(ks__wenc_decode_lossless(NULL, payload, size, &p, KS_DTYPE_F32,
                                                          sizeof(vals) - 4, dst, err, sizeof(err)),
                                 0);
            assert_int_not_equal(ks__wenc_decode_lossless(NULL, payload, size - 1, &p, KS_DTYPE_F32,
                                                          sizeof(vals), dst, err, sizeof(err)),
                                 0);
        }
        ks__free(NULL, payload);
    }
    free(scratch);
    free(cbuf);
    free(dst);
    free(src);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_synthetic),      cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_random_streams), cmocka_unit_test(test_payload_round_trip),
        cmocka_unit_test(test_real_models),    cmocka_unit_test(test_bcode_and_lossless),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
