/* Image files for the tools, tests and samples (desktop only; NOT part of the core library,
 * which takes pixels through ks_image views).
 *
 * Usage:
 *     ks_image_buf photo;
 *     char err[256];
 *     if (ks_image_load("face.jpg", 0, &photo, err, sizeof(err))) { fprintf(stderr, "%s\n", err); }
 *     ks_image_to_tensor(&photo.image, &desc, &input);
 *     ks_image_save_png("out.png", &photo.image, err, sizeof(err));
 *     ks_image_buf_free(&photo);
 *
 * Thread safety: load/decode/save may run on several threads at once, except that stb_image's
 * failure text is a process-wide string (messages of concurrent stb failures may mix up).
 *
 * Decoders: JPEG (baseline and progressive) through libjpeg-turbo; PNG and BMP through
 * stb_image. Other formats are refused (KS_STATUS_UNSUPPORTED) so that hostile input only reaches
 * the decoders the tools need (stb's PNM reader, for one, accepts truncated pixel data). Files are
 * checked against the size caps below from their headers, before any pixel buffer is allocated.
 * JPEG decoding is strict: data that libjpeg only warns about (truncated, corrupt entropy data) is
 * an error here.
 */
#ifndef KESTREL_IMAGE_IO_H
#define KESTREL_IMAGE_IO_H

#include <stddef.h>
#include <stdint.h>

#include "kestrel/imgproc.h"

#define KS_IMAGE_IO_MAX_DIM_PX 16384                 /* per side */
#define KS_IMAGE_IO_MAX_PIXELS ((uint64_t)1 << 26)   /* 64 Mpx: 256 MB as RGBA */
#define KS_IMAGE_IO_MAX_FILE_BYTES ((size_t)1 << 28) /* 256 MB */
#define KS_IMAGE_IO_MAX_JPEG_SCANS 256               /* progressive JPEG scan limit */

/* A decoded image: `image` is a view of `pixels` with format RGB, RGBA (the file has alpha) or
 * GRAY, tightly packed. */
typedef struct ks_image_buf {
    ks_image image;
    uint8_t *pixels; /* malloc'ed; free with ks_image_buf_free */
} ks_image_buf;

/* Decodes an in-memory file. `name` only appears in messages (may be NULL). max_pixels caps
 * width * height (0: KS_IMAGE_IO_MAX_PIXELS). Statuses: KS_STATUS_UNSUPPORTED (unknown or
 * refused format), KS_STATUS_INVALID_ARGUMENT (truncated or corrupt data),
 * KS_STATUS_LIMIT_EXCEEDED (a size cap), KS_STATUS_OUT_OF_MEMORY. *out is written on success only.
 */
ks_status ks_image_decode(const uint8_t *data, size_t size_bytes, const char *name,
                          uint64_t max_pixels, ks_image_buf *out, char *err, size_t err_cap);

/* Reads and decodes a file (KS_STATUS_IO_ERROR if it cannot be read). */
ks_status ks_image_load(const char *path, uint64_t max_pixels, ks_image_buf *out, char *err,
                        size_t err_cap);

/* Frees the pixels and zeroes *img. NULL and zeroed structs are fine. */
void ks_image_buf_free(ks_image_buf *img);

/* Writes an RGB, RGBA or GRAY image (any stride) as PNG. */
ks_status ks_image_save_png(const char *path, const ks_image *img, char *err, size_t err_cap);

#endif
