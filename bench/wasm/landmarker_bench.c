/* ks-landmarker-bench / kestrel_landmarker_bench: per-frame time of the face landmarker in VIDEO
 * mode (one thread), built from this one file natively (bench/CMakeLists.txt) and for Node with
 * Emscripten (editor/wasm/CMakeLists.txt), so the two builds are timed on the same pixels and the
 * same bundle side by side (bench/wasm/run.sh; docs/editor.md "Speed", issue 19).
 *
 *   ks-landmarker-bench --bundle face_landmarker.ksb --photo PNG [--frames N] [--warmup W]
 *                       [--scalar]
 *
 * The photo (RGBA, as the editor feeds its frames) is panned a few pixels per frame, back and
 * forth, with timestamps 33.333 ms apart, so the landmarker runs in its tracking steady state.
 * Only ks_face_landmarker_detect is timed (CLOCK_MONOTONIC), over N frames after W untimed ones.
 * --scalar sets KS_FORCE_SCALAR=1 before the first Kestrel call: only the reference kernels run.
 * Prints one JSON line: build, isa (the engine's dispatch bits; "none" when no ISA bit is set),
 * scalar, frames, median_ms, p10_ms, p90_ms, faces (on the last frame) and landmarks_checksum
 * (sum of x + y over the last frame's landmarks). Not a test: no timing assertions.
 * Exit status: 0, 1 on a Kestrel or file failure, 2 on bad arguments. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stb/stb_image.h"

#include "base/cpuinfo.h"
#include "kestrel/face.h"

#define DEFAULT_FRAMES 60
#define DEFAULT_WARMUP 5
#define MAX_FRAMES 100000
#define FRAME_PERIOD_US 33333
#define PAN_PERIOD_FRAMES 20 /* pan right for this many frames, then back */
#define MAX_PHOTO_BYTES (64L << 20)

#ifdef __EMSCRIPTEN__
#define BUILD_NAME "wasm"
#else
#define BUILD_NAME "native"
#endif

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : (x > y ? 1 : 0);
}

/* q-quantile of sorted v[0..n), linear between the closest ranks. */
static double quantile(const double *v, int n, double q) {
    double pos = q * (double)(n - 1);
    int lo = (int)pos;
    if (lo >= n - 1) return v[n - 1];
    return v[lo] + (pos - (double)lo) * (v[lo + 1] - v[lo]);
}

/* Whole file into a malloc'd buffer (stdio only: the wasm build reads through NODERAWFS). */
static unsigned char *read_file(const char *path, size_t *size_out) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    if (n > 0 && n <= MAX_PHOTO_BYTES && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)n);
        if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    if (buf) *size_out = (size_t)n;
    return buf;
}

/* The photo shifted left by `shift` px (edge columns repeated), as samples/update make_frame. */
static void make_frame(const uint8_t *photo, int w, int h, int shift, uint8_t *out) {
    for (int y = 0; y < h; y++) {
        const uint8_t *src = photo + (size_t)y * (size_t)w * 4;
        uint8_t *dst = out + (size_t)y * (size_t)w * 4;
        for (int x = 0; x < w; x++) {
            int sx = x + shift >= w ? w - 1 : x + shift;
            memcpy(dst + 4 * (size_t)x, src + 4 * (size_t)sx, 4);
        }
    }
}

static int parse_count(const char *s, int min, int *out) {
    char *end = NULL;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || end == s || *end || v < min || v > MAX_FRAMES) return -1;
    *out = (int)v;
    return 0;
}

static int usage(const char *msg) {
    if (msg) fprintf(stderr, "landmarker_bench: %s\n", msg);
    fprintf(stderr, "usage: landmarker_bench --bundle face_landmarker.ksb --photo PNG "
                    "[--frames N (60)] [--warmup W (5)] [--scalar]\n");
    return 2;
}

int main(int argc, char **argv) {
    const char *bundle = NULL, *photo_path = NULL;
    int frames = DEFAULT_FRAMES, warmup = DEFAULT_WARMUP, scalar = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--bundle") && v) {
            bundle = argv[++i];
        } else if (!strcmp(a, "--photo") && v) {
            photo_path = argv[++i];
        } else if (!strcmp(a, "--frames")) {
            if (parse_count(v, 1, &frames)) return usage("--frames needs a count in 1..100000");
            i++;
        } else if (!strcmp(a, "--warmup")) {
            if (parse_count(v, 0, &warmup)) return usage("--warmup needs a count in 0..100000");
            i++;
        } else if (!strcmp(a, "--scalar")) {
            scalar = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(NULL);
            return 0;
        } else {
            fprintf(stderr, "landmarker_bench: unknown or incomplete argument '%s'\n", a);
            return usage(NULL);
        }
    }
    if (!bundle || !photo_path) return usage("--bundle and --photo are required");
    /* Before any Kestrel call: the CPU features are read once (engine/base/cpuinfo.c). */
    if (scalar) setenv("KS_FORCE_SCALAR", "1", 1);

    size_t png_bytes = 0;
    unsigned char *png = read_file(photo_path, &png_bytes);
    if (!png) {
        fprintf(stderr, "landmarker_bench: cannot read '%s'\n", photo_path);
        return 1;
    }
    int w = 0, h = 0, comp = 0;
    uint8_t *photo = stbi_load_from_memory(png, (int)png_bytes, &w, &h, &comp, 4);
    free(png);
    if (!photo) {
        fprintf(stderr, "landmarker_bench: cannot decode '%s': %s\n", photo_path,
                stbi_failure_reason());
        return 1;
    }

    int rc = 1;
    ks_face_landmarker *lm = NULL;
    ks_face_meshes *faces = NULL;
    uint8_t *pixels = malloc((size_t)w * (size_t)h * 4);
    double *times_ms = malloc((size_t)frames * sizeof(double));
    if (!pixels || !times_ms) {
        fprintf(stderr, "landmarker_bench: out of memory\n");
        goto done;
    }
    ks_face_landmarker_desc desc = {
        .task = {.mode = KS_MODE_VIDEO, .num_threads = 1, .model_path = bundle}};
    if (ks_face_landmarker_create(&desc, &lm)) {
        fprintf(stderr, "landmarker_bench: %s: %s\n", bundle, ks_last_error(NULL));
        goto done;
    }
    for (int i = 0; i < warmup + frames; i++) {
        int k = i % (2 * PAN_PERIOD_FRAMES);
        make_frame(photo, w, h, k < PAN_PERIOD_FRAMES ? k : 2 * PAN_PERIOD_FRAMES - k, pixels);
        ks_image img = {.format = KS_PIXEL_FORMAT_RGBA,
                        .width_px = w,
                        .height_px = h,
                        .planes = {pixels},
                        .stride_bytes = {w * 4}};
        ks_face_meshes_release(faces);
        faces = NULL;
        double t0 = now_ms();
        ks_status st = ks_face_landmarker_detect(lm, &img, (int64_t)i * FRAME_PERIOD_US, &faces);
        double t1 = now_ms();
        if (st) {
            fprintf(stderr, "landmarker_bench: frame %d: %s\n", i, ks_last_error(lm));
            goto done;
        }
        if (i >= warmup) times_ms[i - warmup] = t1 - t0;
    }

    double checksum = 0;
    for (uint32_t f = 0; f < faces->count; f++)
        for (uint32_t j = 0; j < faces->items[f].num_landmarks; j++)
            checksum += (double)faces->items[f].landmarks[j].x + faces->items[f].landmarks[j].y;
    char isa[128];
    ks__isa_string(ks__cpu_isa(), isa, sizeof(isa));
    qsort(times_ms, (size_t)frames, sizeof(double), cmp_double);
    printf("{\"build\": \"%s\", \"isa\": \"%s\", \"scalar\": %s, \"frames\": %d, "
           "\"median_ms\": %.3f, \"p10_ms\": %.3f, \"p90_ms\": %.3f, \"faces\": %u, "
           "\"landmarks_checksum\": %.6f}\n",
           BUILD_NAME, isa[0] ? isa : "none", scalar ? "true" : "false", frames,
           quantile(times_ms, frames, 0.5), quantile(times_ms, frames, 0.1),
           quantile(times_ms, frames, 0.9), faces->count, checksum);
    rc = 0;
done:
    ks_face_meshes_release(faces);
    ks_face_landmarker_destroy(lm);
    free(times_ms);
    free(pixels);
    stbi_image_free(photo);
    return rc;
}
