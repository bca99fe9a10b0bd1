/* libFuzzer target for the tools' image decoders (engine/tools/common/image_io.c): decode, then
 * run the decoded view through ks_image_to_tensor so the view's size and stride are exercised.
 * Seeds: engine/tests/fuzz/gen_seeds_image_io.py OUTDIR. Any crash, leak, hang or sanitizer report
 * is a bug; error statuses are expected. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "image_io.h"
#include "kestrel/imgproc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Smaller than the tools' cap so one input never costs more than ~16 MB of pixels. */
#define FUZZ_MAX_PIXELS ((uint64_t)1 << 22)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ks_image_buf img;
    char err[256];
    ks_status st = ks_image_decode(data, size, "fuzz", FUZZ_MAX_PIXELS, &img, err, sizeof(err));
    if (st == KS_STATUS_INTERNAL) abort();
    if (st != KS_STATUS_OK) return 0;
    if (!img.pixels || img.image.width_px <= 0 || img.image.height_px <= 0) abort();
    float out[8 * 8 * 3];
    ks_tensor t = {{"fuzz", KS_DTYPE_F32, {4, {1, 8, 8, 3}}, 0.0f, 0}, out, sizeof(out)};
    if (ks_image_to_tensor(&img.image, NULL, &t) != KS_STATUS_OK) abort();
    ks_image_buf_free(&img);
    return 0;
}
