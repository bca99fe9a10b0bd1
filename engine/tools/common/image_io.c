/* Image file decode/encode for the tools: libjpeg-turbo for JPEG, stb_image for PNG/BMP,
 * stb_image_write for PNG. Every size comes from a header the caller does not control, so the
 * caps are checked before any pixel allocation.
 *
 * libjpeg reports fatal errors through error_exit, which must not return: it longjmps back to
 * decode_jpeg. Warnings (truncated data, corrupt entropy segments) are counted and turned into
 * errors after the fact, because a silently gray-filled photo gives wrong detections. */
#include "image_io.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "ir.h"

#if KS_HAVE_IMAGE_IO
#include <jpeglib.h>
#include <stb/stb_image.h>
#include <stb/stb_image_write.h>
#endif

void ks_image_buf_free(ks_image_buf *img) {
    if (!img) return;
    free(img->pixels);
    memset(img, 0, sizeof(*img));
}

static const char *or_default(const char *name) {
    return name ? name : "(image)";
}

#if KS_HAVE_IMAGE_IO
static ks_status check_size(const char *name, uint64_t w, uint64_t h, uint64_t max_pixels,
                            char *err, size_t err_cap) {
    if (w == 0 || h == 0) {
        ks__fmt(err, err_cap, "%s: image size %llux%llu is empty", name, (unsigned long long)w,
                (unsigned long long)h);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (w > KS_IMAGE_IO_MAX_DIM_PX || h > KS_IMAGE_IO_MAX_DIM_PX || w * h > max_pixels) {
        ks__fmt(err, err_cap,
                "%s: image size %llux%llu exceeds the limit (%d px per side, %llu pixels)", name,
                (unsigned long long)w, (unsigned long long)h, KS_IMAGE_IO_MAX_DIM_PX,
                (unsigned long long)max_pixels);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    return KS_STATUS_OK;
}

static void fill_view(ks_image_buf *out, uint8_t *pixels, int32_t w, int32_t h, int32_t comp) {
    memset(out, 0, sizeof(*out));
    out->pixels = pixels;
    out->image.format = comp == 1   ? KS_PIXEL_FORMAT_GRAY
                        : comp == 3 ? KS_PIXEL_FORMAT_RGB
                                    : KS_PIXEL_FORMAT_RGBA;
    out->image.width_px = w;
    out->image.height_px = h;
    out->image.planes[0] = pixels;
    out->image.stride_bytes[0] = w * comp;
}
#endif /* KS_HAVE_IMAGE_IO */

#if KS_HAVE_IMAGE_IO

/* ---- JPEG ---- */

typedef struct jpeg_err {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    int too_many_scans;
} jpeg_err;

static void jpeg_error_exit(j_common_ptr cinfo) {
    jpeg_err *e = (jpeg_err *)(void *)cinfo->err;
    cinfo->err->format_message(cinfo, e->message);
    longjmp(e->jump, 1);
}

static void jpeg_emit_message(j_common_ptr cinfo, int msg_level) {
    jpeg_err *e = (jpeg_err *)(void *)cinfo->err;
    if (msg_level < 0) {
        /* keep the first warning's text; it is what the user needs to see */
        if (e->mgr.num_warnings == 0) cinfo->err->format_message(cinfo, e->message);
        e->mgr.num_warnings++;
    }
}

static void jpeg_output_message(j_common_ptr cinfo) {
    (void)cinfo; /* the tools decide what to print */
}

/* Hostile progressive files can hold thousands of tiny scans, each costing a full pass. */
static void jpeg_progress(j_common_ptr cinfo) {
    if (!cinfo->is_decompressor) return;
    j_decompress_ptr d = (j_decompress_ptr)cinfo;
    if (d->input_scan_number > KS_IMAGE_IO_MAX_JPEG_SCANS) {
        jpeg_err *e = (jpeg_err *)(void *)cinfo->err;
        e->too_many_scans = 1;
        snprintf(e->message, sizeof(e->message), "more than %d scans", KS_IMAGE_IO_MAX_JPEG_SCANS);
        longjmp(e->jump, 1);
    }
}

static ks_status decode_jpeg(const uint8_t *data, size_t size, const char *name,
                             uint64_t max_pixels, ks_image_buf *out, char *err, size_t err_cap) {
    struct jpeg_decompress_struct cinfo;
    jpeg_err jerr;
    struct jpeg_progress_mgr progress;
    /* volatile: modified after setjmp and read after longjmp */
    uint8_t *volatile pixels = NULL;
    volatile ks_status status = KS_STATUS_INVALID_ARGUMENT;
    memset(&cinfo, 0, sizeof(cinfo));
    memset(&jerr, 0, sizeof(jerr));
    cinfo.err = jpeg_std_error(&jerr.mgr);
    jerr.mgr.error_exit = jpeg_error_exit;
    jerr.mgr.emit_message = jpeg_emit_message;
    jerr.mgr.output_message = jpeg_output_message;
    if (setjmp(jerr.jump)) {
        ks__fmt(err, err_cap, "%s: JPEG: %s", name, jerr.message);
        if (jerr.too_many_scans) status = KS_STATUS_LIMIT_EXCEEDED;
        goto error;
    }
    jpeg_create_decompress(&cinfo);
    cinfo.mem->max_memory_to_use = (long)1 << 30;
    progress.progress_monitor = jpeg_progress;
    cinfo.progress = &progress;
    if (size > (size_t)~0ul >> 1) {
        ks__fmt(err, err_cap, "%s: JPEG: file too large", name);
        goto error;
    }
    jpeg_mem_src(&cinfo, data, (unsigned long)size);
    if (jpeg_read_header(&cinfo, TRUE) != JPEG_HEADER_OK) {
        ks__fmt(err, err_cap, "%s: JPEG: no image in the file", name);
        goto error;
    }
    status = check_size(name, cinfo.image_width, cinfo.image_height, max_pixels, err, err_cap);
    if (status) goto error;
    status = KS_STATUS_INVALID_ARGUMENT;
    int32_t comp = cinfo.num_components == 1 ? 1 : 3;
    cinfo.out_color_space = comp == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(&cinfo);
    if (cinfo.output_components != comp) {
        ks__fmt(err, err_cap, "%s: JPEG: %d output components, expected %d", name,
                cinfo.output_components, comp);
        goto error;
    }
    int32_t w = (int32_t)cinfo.output_width, h = (int32_t)cinfo.output_height;
    size_t row_bytes = (size_t)w * (size_t)comp;
    pixels = malloc(row_bytes * (size_t)h);
    if (!pixels) {
        ks__fmt(err, err_cap, "%s: JPEG: out of memory for %dx%d pixels", name, w, h);
        status = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = pixels + row_bytes * cinfo.output_scanline;
        if (jpeg_read_scanlines(&cinfo, &row, 1) != 1) break;
    }
    if (jerr.mgr.num_warnings > 0) {
        ks__fmt(err, err_cap, "%s: JPEG: corrupt or truncated data (%s)", name, jerr.message);
        goto error;
    }
    jpeg_finish_decompress(&cinfo);
    if (jerr.mgr.num_warnings > 0) {
        ks__fmt(err, err_cap, "%s: JPEG: corrupt or truncated data (%s)", name, jerr.message);
        goto error;
    }
    jpeg_destroy_decompress(&cinfo);
    fill_view(out, pixels, w, h, comp);
    return KS_STATUS_OK;
error:
    jpeg_destroy_decompress(&cinfo);
    free(pixels);
    return status;
}

/* ---- stb_image formats ---- */

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* stb_image sizes its IDAT buffer from each chunk's length field before checking that the bytes
 * exist, so a 70-byte file can make it allocate a gigabyte. Walking the chunk list first (each
 * chunk: 4-byte big-endian length, 4-byte type, data, 4-byte CRC) bounds every length by the file
 * size; a file that ends before IEND is truncated. */
static ks_status check_png_chunks(const uint8_t *data, size_t size, const char *name, char *err,
                                  size_t err_cap) {
    size_t pos = 8;
    while (pos + 12 <= size) {
        uint64_t len = be32(data + pos);
        if (len > size - pos - 12) {
            ks__fmt(err, err_cap,
                    "%s: PNG chunk '%.4s' at offset %zu claims %llu bytes; only %zu remain", name,
                    (const char *)(data + pos + 4), pos, (unsigned long long)len, size - pos - 12);
            return KS_STATUS_INVALID_ARGUMENT;
        }
        if (memcmp(data + pos + 4, "IEND", 4) == 0) return KS_STATUS_OK;
        pos += 12 + (size_t)len;
    }
    ks__fmt(err, err_cap, "%s: PNG is truncated (no IEND chunk within %zu bytes)", name, size);
    return KS_STATUS_INVALID_ARGUMENT;
}

/* stb_image reads missing BMP pixel bytes as zeros; a cut-off file must be an error instead.
 * Header fields (BITMAPFILEHEADER + BITMAPINFOHEADER, little-endian): 10 bfOffBits, 14 biSize,
 * 18 biWidth, 22 biHeight (negative: top-down), 28 biBitCount, 30 biCompression. */
static ks_status check_bmp_length(const uint8_t *data, size_t size, const char *name, char *err,
                                  size_t err_cap) {
    if (size < 34 || le32(data + 14) < 40) return KS_STATUS_OK; /* stb rejects or handles */
    uint32_t compression = le32(data + 30);
    if (compression != 0 && compression != 3) return KS_STATUS_OK; /* BI_RGB, BI_BITFIELDS */
    uint64_t off = le32(data + 10);
    int64_t w = (int32_t)le32(data + 18), h = (int32_t)le32(data + 22);
    uint64_t bpp = (uint64_t)data[28] | (uint64_t)data[29] << 8;
    if (w <= 0 || h == 0 || bpp == 0 || bpp > 32) return KS_STATUS_OK;
    if (h < 0) h = -h;
    uint64_t row_bytes = ((uint64_t)w * bpp + 31) / 32 * 4;
    uint64_t need = off + row_bytes * (uint64_t)h;
    if (need > size) {
        ks__fmt(err, err_cap, "%s: BMP is truncated: %zu bytes, pixel data needs %llu", name, size,
                (unsigned long long)need);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    return KS_STATUS_OK;
}

static ks_status decode_stb(const uint8_t *data, size_t size, const char *name, uint64_t max_pixels,
                            ks_image_buf *out, char *err, size_t err_cap) {
    if (size > 0x7fffffff) {
        ks__fmt(err, err_cap, "%s: %zu bytes is too large for the decoder", name, size);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    if (data[0] == 0x89) {
        ks_status cst = check_png_chunks(data, size, name, err, err_cap);
        if (cst) return cst;
    }
    int w = 0, h = 0, comp = 0;
    if (!stbi_info_from_memory(data, (int)size, &w, &h, &comp)) {
        ks__fmt(err, err_cap, "%s: corrupt or truncated image header (%s)", name,
                stbi_failure_reason() ? stbi_failure_reason() : "unknown");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (h < 0 && h > INT32_MIN) h = -h; /* stb reports top-down BMPs with their negative height */
    if (w <= 0 || h <= 0) {
        ks__fmt(err, err_cap, "%s: image size %dx%d is empty", name, w, h);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    ks_status st = check_size(name, (uint64_t)w, (uint64_t)h, max_pixels, err, err_cap);
    if (st) return st;
    if (data[0] == 'B') {
        st = check_bmp_length(data, size, name, err, err_cap);
        if (st) return st;
    }
    int want = comp == 1 ? 1 : (comp == 3 ? 3 : 4); /* gray+alpha becomes RGBA */
    int w2 = 0, h2 = 0, c2 = 0;
    uint8_t *pixels = stbi_load_from_memory(data, (int)size, &w2, &h2, &c2, want);
    if (!pixels) {
        ks__fmt(err, err_cap, "%s: corrupt or truncated image data (%s)", name,
                stbi_failure_reason() ? stbi_failure_reason() : "unknown");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (w2 != w || h2 != h) { /* header and data disagree: never trust either */
        stbi_image_free(pixels);
        ks__fmt(err, err_cap, "%s: inconsistent image size (%dx%d vs %dx%d)", name, w, h, w2, h2);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    /* stbi_image_free is free() in the stock build; copy anyway so ks_image_buf_free is right
     * whatever allocator libstb was built with. */
    size_t bytes = (size_t)w * (size_t)h * (size_t)want;
    uint8_t *copy = malloc(bytes);
    if (!copy) {
        stbi_image_free(pixels);
        ks__fmt(err, err_cap, "%s: out of memory for %dx%d pixels", name, w, h);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    memcpy(copy, pixels, bytes);
    stbi_image_free(pixels);
    fill_view(out, copy, w, h, want);
    return KS_STATUS_OK;
}

#endif /* KS_HAVE_IMAGE_IO */

ks_status ks_image_decode(const uint8_t *data, size_t size_bytes, const char *name,
                          uint64_t max_pixels, ks_image_buf *out, char *err, size_t err_cap) {
    name = or_default(name);
    if (!data || !out) {
        ks__fmt(err, err_cap, "%s: data and out must not be NULL", name);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (max_pixels == 0 || max_pixels > KS_IMAGE_IO_MAX_PIXELS) max_pixels = KS_IMAGE_IO_MAX_PIXELS;
#if KS_HAVE_IMAGE_IO
    if (size_bytes >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF)
        return decode_jpeg(data, size_bytes, name, max_pixels, out, err, err_cap);
    static const uint8_t png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    int is_png = size_bytes >= 8 && memcmp(data, png_magic, 8) == 0;
    int is_bmp = size_bytes >= 2 && data[0] == 'B' && data[1] == 'M';
    if (is_png || is_bmp) return decode_stb(data, size_bytes, name, max_pixels, out, err, err_cap);
    ks__fmt(err, err_cap, "%s: not a JPEG, PNG or BMP file (first bytes %02x %02x %02x)", name,
            size_bytes > 0 ? data[0] : 0, size_bytes > 1 ? data[1] : 0,
            size_bytes > 2 ? data[2] : 0);
    return KS_STATUS_UNSUPPORTED;
#else
    (void)size_bytes;
    ks__fmt(err, err_cap, "%s: built without image decoders (libjpeg, libstb)", name);
    return KS_STATUS_UNSUPPORTED;
#endif
}

ks_status ks_image_load(const char *path, uint64_t max_pixels, ks_image_buf *out, char *err,
                        size_t err_cap) {
    uint8_t *data = NULL;
    size_t size = 0;
    ks_status st = ks_read_file(path, KS_IMAGE_IO_MAX_FILE_BYTES, &data, &size, err, err_cap);
    if (st) return st;
    st = ks_image_decode(data, size, path, max_pixels, out, err, err_cap);
    free(data);
    return st;
}

ks_status ks_image_save_png(const char *path, const ks_image *img, char *err, size_t err_cap) {
    if (!path || !img || !img->planes[0]) {
        ks__fmt(err, err_cap, "ks_image_save_png: path and image must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    int comp = img->format == KS_PIXEL_FORMAT_GRAY   ? 1
               : img->format == KS_PIXEL_FORMAT_RGB  ? 3
               : img->format == KS_PIXEL_FORMAT_RGBA ? 4
                                                     : 0;
    if (!comp) {
        ks__fmt(err, err_cap, "%s: cannot save %s images as PNG (RGB, RGBA or GRAY only)", path,
                ks_pixel_format_string(img->format));
        return KS_STATUS_UNSUPPORTED;
    }
    if (img->width_px <= 0 || img->height_px <= 0 || img->width_px > KS_IMAGE_IO_MAX_DIM_PX ||
        img->height_px > KS_IMAGE_IO_MAX_DIM_PX) {
        ks__fmt(err, err_cap, "%s: cannot save a %dx%d image", path, img->width_px, img->height_px);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    int stride = img->stride_bytes[0] ? img->stride_bytes[0] : img->width_px * comp;
    if (stride < img->width_px * comp) {
        ks__fmt(err, err_cap, "%s: stride %d is below the row size %d", path, stride,
                img->width_px * comp);
        return KS_STATUS_INVALID_ARGUMENT;
    }
#if KS_HAVE_IMAGE_IO
    if (!stbi_write_png(path, img->width_px, img->height_px, comp, img->planes[0], stride)) {
        ks__fmt(err, err_cap, "%s: cannot write PNG", path);
        return KS_STATUS_IO_ERROR;
    }
    return KS_STATUS_OK;
#else
    ks__fmt(err, err_cap, "%s: built without image encoders (libstb)", path);
    return KS_STATUS_UNSUPPORTED;
#endif
}
