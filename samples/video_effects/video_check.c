/* ks-sample-video-check: test helper for the samples (not sample code itself).
 *
 *   ks-sample-video-check make PHOTO OUT.mp4 [--frames N]
 *       A WxH = 320x240, 25 fps clip of PHOTO slowly panned and zoomed (N frames, default 50).
 *   ks-sample-video-check compare A B --region X,Y,W,H [--frames N] [--min-changed F]
 *                                     [--max-changed F] [--side-by-side OUT.png]
 *       Decodes A and B (videos or images, one size) in step. Fails unless B has as many
 *       frames as A (with --frames: exactly N, and only A's first N are compared), and the mean
 *       fraction of region pixels whose colour changed (a channel by more than 40) is at least
 *       the minimum (default 0.02) and at most the maximum (default 1).
 *       --side-by-side writes the middle frame pair as one PNG (for README screenshots).
 * Exit status 0 when the checks pass. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stb/stb_image_write.h>

#include "video_io.h"

#define CLIP_W 320
#define CLIP_H 240
#define CHANGED_THRESHOLD 40

static uint8_t sample(const uint8_t *rgba, int w, int h, float x, float y, int ch) {
    x = fminf(fmaxf(x, 0), (float)w - 1.001f);
    y = fminf(fmaxf(y, 0), (float)h - 1.001f);
    int x0 = (int)x, y0 = (int)y;
    float ax = x - (float)x0, ay = y - (float)y0;
    const uint8_t *p = rgba + ((size_t)y0 * (size_t)w + (size_t)x0) * 4 + ch;
    size_t row = (size_t)w * 4;
    float top = p[0] * (1 - ax) + p[4] * ax, bottom = p[row] * (1 - ax) + p[row + 4] * ax;
    return (uint8_t)lroundf(top * (1 - ay) + bottom * ay);
}

static int make_clip(const char *photo_path, const char *out_path, int num_frames) {
    video_reader *photo = NULL;
    video_writer *out = NULL;
    const uint8_t *src;
    int64_t pts;
    static uint8_t frame[CLIP_W * CLIP_H * 4];
    int rc = 1;
    if (video_reader_open(photo_path, &photo) || video_reader_read(photo, &src, &pts) != 1 ||
        video_writer_open(out_path, CLIP_W, CLIP_H, 25, 1, &out))
        goto done;
    int w = video_reader_width(photo), h = video_reader_height(photo);
    for (int i = 0; i < num_frames; i++) {
        /* A crop window of the photo's 4:3 centre area that zooms in and pans right. */
        float t = num_frames > 1 ? (float)i / (float)(num_frames - 1) : 0;
        float crop_w = (0.78f - 0.12f * t) * (float)w, crop_h = crop_w * 3 / 4;
        float cx = (0.41f + 0.08f * t) * (float)w, cy = 0.33f * (float)h;
        for (int y = 0; y < CLIP_H; y++)
            for (int x = 0; x < CLIP_W; x++)
                for (int ch = 0; ch < 4; ch++)
                    frame[(y * CLIP_W + x) * 4 + ch] = sample(
                        src, w, h, cx - crop_w / 2 + ((float)x + 0.5f) * crop_w / CLIP_W - 0.5f,
                        cy - crop_h / 2 + ((float)y + 0.5f) * crop_h / CLIP_H - 0.5f, ch);
        if (video_writer_write(out, frame)) goto done;
    }
    rc = 0;
done:
    if (video_writer_close(out)) rc = 1;
    video_reader_close(photo);
    if (rc == 0) printf("%s: %d frames %dx%d\n", out_path, num_frames, CLIP_W, CLIP_H);
    return rc;
}

static double changed_fraction(const uint8_t *a, const uint8_t *b, int w, const int region[4]) {
    long changed = 0;
    for (int y = region[1]; y < region[1] + region[3]; y++)
        for (int x = region[0]; x < region[0] + region[2]; x++) {
            const uint8_t *p = a + ((size_t)y * (size_t)w + (size_t)x) * 4;
            const uint8_t *q = b + ((size_t)y * (size_t)w + (size_t)x) * 4;
            for (int ch = 0; ch < 3; ch++)
                if (abs(p[ch] - q[ch]) > CHANGED_THRESHOLD) {
                    changed++;
                    break;
                }
        }
    return (double)changed / ((double)region[2] * region[3]);
}

static int write_side_by_side(const char *path, const uint8_t *a, const uint8_t *b, int w, int h) {
    uint8_t *both = malloc((size_t)w * 2 * (size_t)h * 4);
    if (!both) return 1;
    for (int y = 0; y < h; y++) {
        memcpy(both + (size_t)y * w * 8, a + (size_t)y * w * 4, (size_t)w * 4);
        memcpy(both + (size_t)y * w * 8 + (size_t)w * 4, b + (size_t)y * w * 4, (size_t)w * 4);
    }
    for (size_t i = 0; i < (size_t)w * 2 * (size_t)h; i++)
        both[i * 4 + 3] = 255;
    int ok = stbi_write_png(path, w * 2, h, 4, both, w * 8);
    free(both);
    if (!ok) fprintf(stderr, "%s: cannot write\n", path);
    return !ok;
}

static int compare(int argc, char **argv) {
    const char *side_by_side = NULL;
    int region[4] = {0}, want_frames = 0;
    double min_changed = 0.02, max_changed = 1.0;
    for (int i = 4; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--region"))
            sscanf(argv[i + 1], "%d,%d,%d,%d", &region[0], &region[1], &region[2], &region[3]);
        else if (!strcmp(argv[i], "--frames"))
            want_frames = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--min-changed"))
            min_changed = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--max-changed"))
            max_changed = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--side-by-side"))
            side_by_side = argv[i + 1];
    }
    video_reader *a = NULL, *b = NULL;
    uint8_t *keep_a = NULL, *keep_b = NULL;
    int rc = 1, num_frames = 0, got_a = 0, got_b = 0;
    double sum = 0;
    if (video_reader_open(argv[2], &a) || video_reader_open(argv[3], &b)) goto done;
    int w = video_reader_width(a), h = video_reader_height(a);
    if (w != video_reader_width(b) || h != video_reader_height(b)) {
        fprintf(stderr, "size differs: %dx%d vs %dx%d\n", w, h, video_reader_width(b),
                video_reader_height(b));
        goto done;
    }
    if (region[2] <= 0 || region[3] <= 0 || region[0] < 0 || region[1] < 0 ||
        region[0] + region[2] > w || region[1] + region[3] > h) {
        fprintf(stderr, "--region X,Y,W,H must lie inside the %dx%d frame\n", w, h);
        goto done;
    }
    keep_a = malloc((size_t)w * h * 4);
    keep_b = malloc((size_t)w * h * 4);
    if (!keep_a || !keep_b) goto done;
    const uint8_t *pa, *pb;
    int64_t ts;
    while (want_frames == 0 || num_frames < want_frames) {
        got_a = video_reader_read(a, &pa, &ts);
        got_b = video_reader_read(b, &pb, &ts);
        if (got_a != 1 || got_b != 1) break;
        sum += changed_fraction(pa, pb, w, region);
        if (num_frames == (want_frames > 0 ? want_frames / 2 : 0)) {
            memcpy(keep_a, pa, (size_t)w * h * 4);
            memcpy(keep_b, pb, (size_t)w * h * 4);
        }
        num_frames++;
    }
    double mean = num_frames ? sum / num_frames : 0;
    printf("%d frame pairs, mean changed fraction in region %.4f (want %.4f..%.4f)\n", num_frames,
           mean, min_changed, max_changed);
    if (want_frames > 0 && num_frames == want_frames) { /* B must end here */
        got_a = 0;
        got_b = video_reader_read(b, &pb, &ts);
    }
    if (got_a < 0 || got_b < 0) goto done;
    if (got_a != got_b || (want_frames > 0 && num_frames != want_frames)) {
        fprintf(stderr, "frame counts differ (expected %d)\n", want_frames);
        goto done;
    }
    if (num_frames == 0 || mean < min_changed || mean > max_changed) goto done;
    if (side_by_side && write_side_by_side(side_by_side, keep_a, keep_b, w, h)) goto done;
    rc = 0;
done:
    free(keep_a);
    free(keep_b);
    video_reader_close(a);
    video_reader_close(b);
    return rc;
}

int main(int argc, char **argv) {
    if (argc >= 4 && !strcmp(argv[1], "make")) {
        int num_frames = argc >= 6 && !strcmp(argv[4], "--frames") ? atoi(argv[5]) : 50;
        return make_clip(argv[2], argv[3], num_frames > 0 ? num_frames : 50);
    }
    if (argc >= 4 && !strcmp(argv[1], "compare")) return compare(argc, argv);
    fprintf(stderr, "usage: ks-sample-video-check make PHOTO OUT.mp4 [--frames N] | compare A B "
                    "--region X,Y,W,H [--frames N] [--min-changed F] [--max-changed F] "
                    "[--side-by-side OUT.png]\n");
    return 2;
}
