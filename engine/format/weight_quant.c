/* Weight quantizers and payload decoders (layout in weight_quant.h).
 *
 * Symmetric codes (no zero point) keep decode a single multiply, and the quantizer computes its
 * dequantized output with exactly the decoder's expression, so "what the writer meant" and "what
 * the reader produces" are bit-identical. */
#include "weight_quant.h"

#include <math.h>
#include <string.h>

#include "rans.h"
#include "weight_coder.h"

static void wr_f32(uint8_t *p, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    p[0] = (uint8_t)u;
    p[1] = (uint8_t)(u >> 8);
    p[2] = (uint8_t)(u >> 16);
    p[3] = (uint8_t)(u >> 24);
}
static float rd_f32(const uint8_t *p) {
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint64_t ks__wenc_num_scales(const ks__wenc_params *p, uint64_t num_elems, uint64_t num_channels) {
    if (!num_channels || num_elems % num_channels) return 0;
    if (p->coder != KS__WCODER_RAW && p->coder != KS__WCODER_RANS && p->coder != KS__WCODER_WCODE)
        return 0;
    if (p->encoding == KS__WENC_INT8_CHANNEL) {
        if (p->scale_dtype != KS_DTYPE_F32 || p->block_size != 0) return 0;
        return num_channels;
    }
    if (p->encoding == KS__WENC_INT4_BLOCK) {
        if (p->scale_dtype != KS_DTYPE_F32 && p->scale_dtype != KS_DTYPE_F16) return 0;
        if (p->block_size < 1 || p->block_size > KS__WENC_MAX_BLOCK) return 0;
        uint64_t row = num_elems / num_channels;
        return num_channels * ((row + p->block_size - 1) / p->block_size);
    }
    return 0;
}

static int32_t quantize_one(float v, float scale, int32_t qmax) {
    if (scale == 0.0f) return 0;
    float r = roundf(v / scale);
    if (r > (float)qmax) return qmax;
    if (r < (float)-qmax) return -qmax;
    return (int32_t)r;
}

static size_t codes_bytes(uint8_t encoding, uint64_t num_elems) {
    return encoding == KS__WENC_INT8_CHANNEL ? (size_t)num_elems : (size_t)((num_elems + 1) / 2);
}

/* Codes scales + codes with wcode into a new buffer when the stream is smaller than
 * size_limit (and at least min_size); *out stays NULL otherwise. int4 codes are unpacked
 * first, since wcode codes one signed value per weight. */
static ks_status encode_wcode(const ks_allocator *a, const uint8_t *scale_words, size_t scale_elem,
                              uint64_t num_scales, const uint8_t *codes, uint64_t num_elems,
                              uint64_t num_channels, bool int8, size_t size_limit, size_t min_size,
                              uint8_t **out, size_t *size_io) {
    ks_status st = KS_STATUS_OK;
    uint64_t row = num_elems / num_channels;
    int8_t *values = NULL;
    uint8_t *scratch = NULL, *buf = NULL;
    *out = NULL;
    if (size_limit < 2) return KS_STATUS_OK;
    values = ks__alloc(a, (size_t)num_elems + 1);
    scratch = ks__alloc(a, ks__wcode_scratch_bytes(row));
    buf = ks__alloc(a, size_limit);
    if (!values || !scratch || !buf) {
        st = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    for (uint64_t i = 0; i < num_elems; i++) {
        if (int8) {
            values[i] = (int8_t)codes[i];
        } else {
            uint32_t nib = (codes[i / 2] >> ((i & 1) * 4)) & 0xfu;
            values[i] = (int8_t)((int32_t)nib - (nib >= 8 ? 16 : 0));
        }
    }
    size_t coded = 0;
    /* capacity size_limit - 1: only a strictly smaller stream is worth it */
    st = ks__wcode_encode(scale_words, num_scales, (uint32_t)scale_elem * 8, values, num_channels,
                          row, int8 ? 127 : 7, scratch, buf, size_limit - 1, &coded);
    if (st == KS_STATUS_LIMIT_EXCEEDED) {
        st = KS_STATUS_OK;
        goto error;
    }
    if (st || coded < min_size) goto error;
    *out = buf;
    *size_io = coded;
    buf = NULL;
error:
    ks__free(a, buf);
    ks__free(a, scratch);
    ks__free(a, values);
    return st;
}

/* Whether row[0..n) is exactly code * s with |code| <= 127. */
static bool on_grid(const float *row, uint64_t n, float s) {
    if (!(s > 0.0f) || !isfinite(s)) return false;
    for (uint64_t j = 0; j < n; j++) {
        float r = roundf(row[j] / s);
        if (r > 127.0f || r < -127.0f) return false;
        float back = r * s;
        if (memcmp(&back, &row[j], 4) != 0) return false;
    }
    return true;
}

bool ks__wenc_find_int8_scales(const float *w, uint64_t num_elems, uint64_t num_channels,
                               float *scales) {
    if (!num_channels || num_elems % num_channels) return false;
    uint64_t row = num_elems / num_channels;
    for (uint64_t c = 0; c < num_channels; c++) {
        const float *r = w + c * row;
        float maxabs = 0.0f;
        for (uint64_t j = 0; j < row; j++) {
            if (!isfinite(r[j])) return false;
            maxabs = fmaxf(maxabs, fabsf(r[j]));
        }
        if (maxabs == 0.0f) {
            scales[c] = 1.0f;
            continue;
        }
        /* the largest value is code k * s: try k = 127 down (nearest rounding reaches 127; a
         * clipped scale less), and the neighbouring floats of maxabs / k (division rounds) */
        bool found = false;
        for (int k = 127; k >= 1 && !found; k--) {
            float s0 = maxabs / (float)k;
            float cand[3] = {s0, nextafterf(s0, 0.0f), nextafterf(s0, INFINITY)};
            for (int i = 0; i < 3 && !found; i++)
                if (on_grid(r, row, cand[i])) {
                    scales[c] = cand[i];
                    found = true;
                }
        }
        if (!found) return false;
    }
    return true;
}

ks_status ks__wenc_encode(const ks_allocator *a, const float *w, uint64_t num_elems,
                          uint64_t num_channels, ks__wenc_params *p, uint8_t **payload_out,
                          size_t *size_out, float *dequant_out) {
    ks_status st = KS_STATUS_OK;
    uint8_t *codes = NULL, *payload = NULL, *wc_payload = NULL;
    float *scales = NULL;
    for (uint64_t i = 0; i < num_elems; i++)
        if (!isfinite(w[i])) return KS_STATUS_UNSUPPORTED;
    uint64_t num_scales = ks__wenc_num_scales(p, num_elems, num_channels);
    if (!num_scales || num_elems > ((uint64_t)1 << 40)) return KS_STATUS_INVALID_ARGUMENT;
    uint64_t row = num_elems / num_channels;
    bool int8 = p->encoding == KS__WENC_INT8_CHANNEL;
    uint32_t block = int8 ? (uint32_t)(row ? row : 1) : p->block_size;
    uint64_t blocks_per_row = int8 ? 1 : (row + block - 1) / block;
    int32_t qmax = int8 ? 127 : 7;
    size_t ncodes = codes_bytes(p->encoding, num_elems);
    scales = ks__alloc(a, (size_t)num_scales * sizeof(float) + 1);
    codes = ks__calloc(a, ncodes + 1, 1);
    if (!scales || !codes) {
        st = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    /* Scales first: f16 scales are rounded before the codes are chosen, so codes are optimal
     * for the scale the reader will actually see. */
    if (p->scales && int8) {
        for (uint64_t c = 0; c < num_channels; c++)
            if (!(p->scales[c] > 0.0f) || !isfinite(p->scales[c])) {
                st = KS_STATUS_INVALID_ARGUMENT;
                goto error;
            }
        memcpy(scales, p->scales, (size_t)num_channels * sizeof(float));
    }
    for (int pass = 0; pass < 2 && !(p->scales && int8); pass++) {
        bool overflow = false;
        for (uint64_t c = 0; c < num_channels; c++)
            for (uint64_t b = 0; b < blocks_per_row; b++) {
                uint64_t lo = b * block, hi = lo + block < row ? lo + block : row;
                float maxabs = 0.0f;
                for (uint64_t j = lo; j < hi; j++)
                    maxabs = fmaxf(maxabs, fabsf(w[c * row + j]));
                /* Clipping the range below max|w| trades a few clipped outliers for a finer
                 * step on the bulk of the weights; keep the scale with the least squared error
                 * (max|w| itself is the first candidate, so this never does worse). */
                float best_s = 0.0f;
                double best_err = INFINITY;
                for (int k = 0; k < 16; k++) {
                    float s = maxabs * (1.0f - 0.03f * (float)k) / (float)qmax;
                    if (p->scale_dtype == KS_DTYPE_F16) {
                        s = ks__f16_to_f32(ks__f32_to_f16(s));
                        if (!isfinite(s)) overflow = true;
                    }
                    if (!isfinite(s)) break;
                    double e = 0.0;
                    for (uint64_t j = lo; j < hi; j++) {
                        float v = w[c * row + j];
                        float d = (float)quantize_one(v, s, qmax) * s - v;
                        e += (double)d * (double)d;
                    }
                    if (e < best_err) {
                        best_err = e;
                        best_s = s;
                    }
                    if (maxabs == 0.0f) break;
                }
                scales[c * blocks_per_row + b] = best_s;
            }
        if (!overflow) break;
        p->scale_dtype = KS_DTYPE_F32;
    }
    for (uint64_t c = 0; c < num_channels; c++)
        for (uint64_t j = 0; j < row; j++) {
            uint64_t i = c * row + j;
            float s = scales[c * blocks_per_row + j / block];
            int32_t q = quantize_one(w[i], s, qmax);
            if (int8)
                codes[i] = (uint8_t)(int8_t)q;
            else
                codes[i / 2] |= (uint8_t)(((uint32_t)q & 0xfu) << ((i & 1) * 4));
            if (dequant_out) dequant_out[i] = (float)q * s;
        }
    size_t scale_elem = p->scale_dtype == KS_DTYPE_F16 ? 2 : 4;
    size_t scale_bytes = (size_t)num_scales * scale_elem;
    size_t raw_size = scale_bytes + ncodes;
    /* Every candidate payload must fit in the raw size (else raw wins), so one buffer of that
     * size (plus the rANS bound's slack) serves all coders. */
    size_t cap = raw_size + (p->coder != KS__WCODER_RAW ? ks__rans_bound(ncodes) : 0);
    payload = ks__alloc(a, cap + 1);
    if (!payload) {
        st = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    for (uint64_t k = 0; k < num_scales; k++) {
        if (scale_elem == 2) {
            uint16_t h = ks__f32_to_f16(scales[k]);
            payload[k * 2] = (uint8_t)h;
            payload[k * 2 + 1] = (uint8_t)(h >> 8);
        } else {
            wr_f32(payload + k * 4, scales[k]);
        }
    }
    size_t size = raw_size;
    uint8_t chosen = KS__WCODER_RAW;
    if (p->coder != KS__WCODER_RAW) {
        uint8_t mask = p->entropy_coders
                           ? p->entropy_coders
                           : (uint8_t)(1u << KS__WCODER_RANS | 1u << KS__WCODER_WCODE);
        /* a payload the reader would refuse for its decode ratio is no candidate */
        size_t min_size = 0;
        if (num_elems * 4 > KS__WENC_RATIO_SLACK)
            min_size = (size_t)((num_elems * 4 - KS__WENC_RATIO_SLACK + KS__WENC_MAX_RATIO - 1) /
                                KS__WENC_MAX_RATIO);
        if (mask & (1u << KS__WCODER_RANS)) {
            size_t coded = 0;
            st = ks__rans_encode_model(codes, ncodes,
                                       int8 ? KS__RANS_TABLE_INT8 : KS__RANS_TABLE_INT4_PAIRS,
                                       payload + scale_bytes, cap - scale_bytes, &coded);
            if (st) goto error;
            if (scale_bytes + coded < size && scale_bytes + coded >= min_size) {
                size = scale_bytes + coded;
                chosen = KS__WCODER_RANS;
            }
        }
        if (mask & (1u << KS__WCODER_WCODE)) {
            st = encode_wcode(a, payload, scale_elem, num_scales, codes, num_elems, num_channels,
                              int8, size, min_size, &wc_payload, &size);
            if (st) goto error;
            if (wc_payload) chosen = KS__WCODER_WCODE;
        }
    }
    p->coder = chosen;
    if (chosen == KS__WCODER_WCODE) {
        ks__free(a, payload);
        payload = wc_payload;
        wc_payload = NULL;
    } else if (chosen == KS__WCODER_RANS) {
        /* the rANS stream already sits right after the scales */
    } else {
        memcpy(payload + scale_bytes, codes, ncodes);
    }
    *payload_out = payload;
    *size_out = size;
    payload = NULL;
error:
    ks__free(a, wc_payload);
    ks__free(a, payload);
    ks__free(a, codes);
    ks__free(a, scales);
    return st;
}

ks_status ks__wenc_decode(const ks_allocator *a, const uint8_t *payload, size_t size,
                          const ks__wenc_params *p, uint64_t num_elems, uint64_t num_channels,
                          float *out, char *err, size_t err_cap) {
    ks_status st = KS_STATUS_INVALID_MODEL;
    uint8_t *scratch = NULL;
    uint64_t num_scales = ks__wenc_num_scales(p, num_elems, num_channels);
    if (!num_scales) {
        ks__fmt(err, err_cap,
                "bad encoding parameters (encoding %u, coder %u, scale dtype %u, block %u) for "
                "%llu values in %llu channels",
                p->encoding, p->coder, p->scale_dtype, p->block_size, (unsigned long long)num_elems,
                (unsigned long long)num_channels);
        return st;
    }
    if (num_elems * 4 > (uint64_t)KS__WENC_MAX_RATIO * size + KS__WENC_RATIO_SLACK) {
        ks__fmt(err, err_cap, "%llu values from a %zu-byte payload exceed the %ux size limit",
                (unsigned long long)num_elems, size, KS__WENC_MAX_RATIO);
        return st;
    }
    size_t scale_elem = p->scale_dtype == KS_DTYPE_F16 ? 2 : 4;
    /* WCODE codes the scales too, each with at least 10 raw bits, so a valid stream has more
     * bytes than scales: that bounds the scratch even for empty tensors with many channels */
    if (p->coder == KS__WCODER_WCODE ? num_scales > size : num_scales > size / scale_elem) {
        ks__fmt(err, err_cap, "%llu scales do not fit the %zu-byte payload",
                (unsigned long long)num_scales, size);
        return st;
    }
    size_t scale_bytes = (size_t)num_scales * scale_elem;
    size_t ncodes = codes_bytes(p->encoding, num_elems);
    const uint8_t *scales = payload, *codes = NULL;
    bool unpacked = false; /* one int8 per value (WCODE) instead of the raw layout */
    size_t rest = p->coder == KS__WCODER_WCODE ? 0 : size - scale_bytes;
    if (p->coder == KS__WCODER_RAW) {
        if (rest != ncodes) {
            ks__fmt(err, err_cap, "raw codes are %zu bytes, expected %zu", rest, ncodes);
            return st;
        }
        codes = payload + scale_bytes;
    } else if (p->coder == KS__WCODER_RANS) {
        scratch = ks__alloc(a, ncodes + 1);
        if (!scratch) {
            ks__fmt(err, err_cap, "out of memory decoding %zu weight codes", ncodes);
            return KS_STATUS_OUT_OF_MEMORY;
        }
        if (ks__rans_decode(payload + scale_bytes, rest, scratch, ncodes) != KS_STATUS_OK) {
            ks__fmt(err, err_cap, "corrupt entropy-coded stream (%zu bytes for %zu codes)", rest,
                    ncodes);
            goto error;
        }
        codes = scratch;
    } else {
        /* scales, then one code per value, then the coder's column state; all bounded by
         * num_elems, which the ratio check above ties to the payload size */
        uint64_t row = num_elems / num_channels;
        size_t wc_bytes = scale_bytes + (size_t)num_elems + ks__wcode_scratch_bytes(row);
        scratch = ks__alloc(a, wc_bytes);
        if (!scratch) {
            ks__fmt(err, err_cap, "out of memory decoding %llu weight codes",
                    (unsigned long long)num_elems);
            return KS_STATUS_OUT_OF_MEMORY;
        }
        int8_t *values = (int8_t *)(scratch + scale_bytes);
        if (ks__wcode_decode(payload, size, num_scales, (uint32_t)scale_elem * 8, scratch,
                             num_channels, row, p->encoding == KS__WENC_INT8_CHANNEL ? 127 : 7,
                             scratch + scale_bytes + num_elems, values) != KS_STATUS_OK) {
            ks__fmt(err, err_cap, "corrupt wcode stream (%zu bytes for %llu codes)", size,
                    (unsigned long long)num_elems);
            goto error;
        }
        scales = scratch;
        codes = (const uint8_t *)values;
        unpacked = true;
    }
    uint64_t row = num_elems / num_channels;
    bool int8 = p->encoding == KS__WENC_INT8_CHANNEL;
    uint64_t block = int8 ? (row ? row : 1) : p->block_size;
    uint64_t blocks_per_row = int8 ? 1 : (row + block - 1) / block;
    for (uint64_t c = 0; c < num_channels; c++)
        for (uint64_t b = 0; b < blocks_per_row; b++) {
            uint64_t k = c * blocks_per_row + b;
            float s = scale_elem == 2
                          ? ks__f16_to_f32((uint16_t)(scales[k * 2] | scales[k * 2 + 1] << 8))
                          : rd_f32(scales + k * 4);
            uint64_t lo = b * block, hi = lo + block < row ? lo + block : row;
            for (uint64_t j = lo; j < hi; j++) {
                uint64_t i = c * row + j;
                int32_t q;
                if (int8 || unpacked)
                    q = (int8_t)codes[i];
                else {
                    uint32_t nib = (codes[i / 2] >> ((i & 1) * 4)) & 0xfu;
                    q = (int32_t)nib - (nib >= 8 ? 16 : 0);
                }
                out[i] = (float)q * s;
            }
        }
    st = KS_STATUS_OK;
error:
    ks__free(a, scratch);
    return st;
}

/* ---- LOSSLESS (.ksm 1.2): a constant's own bytes, e.g. the I8 weights of a ks-quant model ---- */

/* Fills h[n] with the f16 bit patterns of f[n] when every value comes back bit for bit. */
static bool f32_as_f16(const uint8_t *bytes, size_t n, uint8_t *h) {
    for (size_t i = 0; i < n; i++) {
        float f, back;
        memcpy(&f, bytes + 4 * i, 4);
        uint16_t v = ks__f32_to_f16(f);
        back = ks__f16_to_f32(v);
        if (memcmp(&f, &back, 4) != 0) return false;
        h[2 * i] = (uint8_t)(v & 0xff);
        h[2 * i + 1] = (uint8_t)(v >> 8);
    }
    return true;
}

/* F16_BCODE candidate: replaces *best when the f16 stream is smaller. */
static ks_status try_f16_bcode(const ks_allocator *a, const uint8_t *bytes, size_t num_bytes,
                               size_t min_size, uint8_t **best, size_t *best_size, uint8_t *coder) {
    ks_status st = KS_STATUS_OK;
    size_t n16 = num_bytes / 2;
    uint8_t *h = ks__alloc(a, n16), *r = ks__alloc(a, *best_size);
    uint8_t *scratch = ks__alloc(a, ks__bcode_scratch_bytes());
    if (!h || !r || !scratch) {
        st = KS_STATUS_OUT_OF_MEMORY;
        goto done;
    }
    size_t n = 0;
    if (f32_as_f16(bytes, num_bytes / 4, h) &&
        ks__bcode_encode(h, n16, scratch, r, *best_size - 1, &n) == KS_STATUS_OK && n >= min_size) {
        ks__free(a, *best);
        *best = r;
        r = NULL;
        *best_size = n;
        *coder = KS__WCODER_F16_BCODE;
    }
done:
    ks__free(a, scratch);
    ks__free(a, r);
    ks__free(a, h);
    return st;
}

ks_status ks__wenc_encode_lossless(const ks_allocator *a, const uint8_t *bytes, size_t num_bytes,
                                   ks_dtype dtype, uint64_t num_rows, ks__wenc_params *p,
                                   uint8_t **payload_out, size_t *size_out) {
    ks_status st = KS_STATUS_OK;
    bool is_i8 = dtype == KS_DTYPE_I8;
    uint8_t mask = p->entropy_coders
                       ? p->entropy_coders
                       : (uint8_t)(1u << KS__WCODER_RANS | 1u << KS__WCODER_WCODE |
                                   1u << KS__WCODER_BCODE | 1u << KS__WCODER_F16_BCODE);
    size_t cap = num_bytes + ks__rans_bound(num_bytes) + 16;
    uint8_t *best = ks__alloc(a, cap), *scratch = NULL, *wc = NULL;
    if (!best) return KS_STATUS_OUT_OF_MEMORY;
    memcpy(best, bytes, num_bytes);
    size_t best_size = num_bytes;
    uint8_t coder = KS__WCODER_RAW;
    uint32_t rows = 0;
    /* below the ratio floor a payload would be refused by the reader: no candidate */
    size_t min_size =
        num_bytes > KS__WENC_RATIO_SLACK
            ? (num_bytes - KS__WENC_RATIO_SLACK + KS__WENC_MAX_RATIO - 1) / KS__WENC_MAX_RATIO
            : 0;
    if ((mask & (1u << KS__WCODER_RANS)) && num_bytes) {
        uint8_t *r = ks__alloc(a, cap);
        size_t n = 0;
        if (!r) {
            st = KS_STATUS_OUT_OF_MEMORY;
            goto error;
        }
        st = ks__rans_encode_model(
            bytes, num_bytes, is_i8 ? KS__RANS_TABLE_INT8 : KS__RANS_TABLE_EXPLICIT, r, cap, &n);
        if (!st && n < best_size && n >= min_size) {
            ks__free(a, best);
            best = r;
            best_size = n;
            coder = KS__WCODER_RANS;
        } else {
            ks__free(a, r);
        }
        st = KS_STATUS_OK;
    }
    if ((mask & (1u << KS__WCODER_BCODE)) && num_bytes && best_size > 16) {
        uint8_t *r = ks__alloc(a, best_size);
        scratch = ks__alloc(a, ks__bcode_scratch_bytes());
        if (!r || !scratch) {
            ks__free(a, r);
            st = KS_STATUS_OUT_OF_MEMORY;
            goto error;
        }
        size_t n = 0;
        ks_status bs = ks__bcode_encode(bytes, num_bytes, scratch, r, best_size - 1, &n);
        if (bs == KS_STATUS_OK && n >= min_size) {
            ks__free(a, best);
            best = r;
            best_size = n;
            coder = KS__WCODER_BCODE;
        } else {
            ks__free(a, r);
        }
        ks__free(a, scratch);
        scratch = NULL;
    }
    if ((mask & (1u << KS__WCODER_F16_BCODE)) && dtype == KS_DTYPE_F32 && num_bytes >= 64 &&
        num_bytes % 4 == 0 && best_size > 16) {
        st = try_f16_bcode(a, bytes, num_bytes, min_size, &best, &best_size, &coder);
        if (st) goto error;
    }
    bool in_range = is_i8 && num_bytes && num_rows && num_rows <= num_bytes &&
                    num_bytes % num_rows == 0 && num_rows <= UINT32_MAX;
    for (size_t i = 0; in_range && i < num_bytes; i++)
        if (bytes[i] == 0x80) in_range = false; /* -128: outside wcode's [-127, 127] */
    if ((mask & (1u << KS__WCODER_WCODE)) && in_range && best_size > 1) {
        uint64_t row = num_bytes / num_rows;
        scratch = ks__alloc(a, ks__wcode_scratch_bytes(row));
        wc = ks__alloc(a, best_size);
        if (!scratch || !wc) {
            st = KS_STATUS_OUT_OF_MEMORY;
            goto error;
        }
        size_t n = 0;
        ks_status ws = ks__wcode_encode(NULL, 0, 32, (const int8_t *)bytes, num_rows, row, 127,
                                        scratch, wc, best_size - 1, &n);
        if (ws == KS_STATUS_OK && n >= min_size) {
            ks__free(a, best);
            best = wc;
            wc = NULL;
            best_size = n;
            coder = KS__WCODER_WCODE;
            rows = (uint32_t)num_rows;
        } else if (ws != KS_STATUS_OK && ws != KS_STATUS_LIMIT_EXCEEDED) {
            st = ws;
            goto error;
        }
    }
    p->encoding = KS__WENC_LOSSLESS;
    p->coder = coder;
    p->scale_dtype = 0;
    p->block_size = rows;
    *payload_out = best;
    *size_out = best_size;
    best = NULL;
error:
    ks__free(a, wc);
    ks__free(a, scratch);
    ks__free(a, best);
    return st;
}

ks_status ks__wenc_decode_lossless(const ks_allocator *a, const uint8_t *payload, size_t size,
                                   const ks__wenc_params *p, ks_dtype dtype, size_t num_bytes,
                                   uint8_t *out, char *err, size_t err_cap) {
    ks_status st = KS_STATUS_INVALID_MODEL;
    uint8_t *scratch = NULL;
    bool is_i8 = dtype == KS_DTYPE_I8;
    bool rows_ok = p->coder == KS__WCODER_WCODE
                       ? (is_i8 && p->block_size >= 1 && p->block_size <= num_bytes &&
                          num_bytes % p->block_size == 0)
                       : p->block_size == 0;
    bool dtype_ok =
        p->coder != KS__WCODER_F16_BCODE || (dtype == KS_DTYPE_F32 && num_bytes % 4 == 0);
    if (p->encoding != KS__WENC_LOSSLESS || p->scale_dtype != 0 ||
        p->coder > KS__WCODER_F16_BCODE || !rows_ok || !dtype_ok) {
        ks__fmt(err, err_cap,
                "bad lossless encoding parameters (coder %u, scale dtype %u, rows %u) for %zu "
                "bytes of dtype %u",
                p->coder, p->scale_dtype, p->block_size, num_bytes, (unsigned)dtype);
        return st;
    }
    if ((uint64_t)num_bytes > (uint64_t)KS__WENC_MAX_RATIO * size + KS__WENC_RATIO_SLACK) {
        ks__fmt(err, err_cap, "%zu bytes from a %zu-byte payload exceed the %ux size limit",
                num_bytes, size, KS__WENC_MAX_RATIO);
        return st;
    }
    if (p->coder == KS__WCODER_RAW) {
        if (size != num_bytes) {
            ks__fmt(err, err_cap, "raw payload is %zu bytes, expected %zu", size, num_bytes);
            return st;
        }
        memcpy(out, payload, num_bytes);
    } else if (p->coder == KS__WCODER_RANS) {
        if (ks__rans_decode(payload, size, out, num_bytes) != KS_STATUS_OK) {
            ks__fmt(err, err_cap, "corrupt rANS stream (%zu bytes for %zu bytes)", size, num_bytes);
            return st;
        }
    } else if (p->coder == KS__WCODER_F16_BCODE) {
        /* in place: the f16 values go to the upper half of out and widen front to back; value
         * i ends at byte 4i + 4 <= num_bytes / 2 + 2(i + 1), where the unread f16 i + 1 starts */
        size_t n = num_bytes / 4;
        uint8_t *h = out + num_bytes / 2;
        scratch = ks__alloc(a, ks__bcode_scratch_bytes());
        if (!scratch) {
            ks__fmt(err, err_cap, "out of memory decoding %zu bytes", num_bytes);
            return KS_STATUS_OUT_OF_MEMORY;
        }
        if (ks__bcode_decode(payload, size, scratch, h, 2 * n) != KS_STATUS_OK) {
            ks__fmt(err, err_cap, "corrupt bcode stream (%zu bytes for %zu f16 values)", size, n);
            goto error;
        }
        for (size_t i = 0; i < n; i++) {
            uint16_t v = (uint16_t)(h[2 * i] | h[2 * i + 1] << 8);
            float f = ks__f16_to_f32(v);
            memcpy(out + 4 * i, &f, 4);
        }
    } else if (p->coder == KS__WCODER_BCODE) {
        scratch = ks__alloc(a, ks__bcode_scratch_bytes());
        if (!scratch) {
            ks__fmt(err, err_cap, "out of memory decoding %zu bytes", num_bytes);
            return KS_STATUS_OUT_OF_MEMORY;
        }
        if (ks__bcode_decode(payload, size, scratch, out, num_bytes) != KS_STATUS_OK) {
            ks__fmt(err, err_cap, "corrupt bcode stream (%zu bytes for %zu bytes)", size,
                    num_bytes);
            goto error;
        }
    } else {
        uint64_t row = num_bytes / p->block_size;
        scratch = ks__alloc(a, ks__wcode_scratch_bytes(row));
        if (!scratch) {
            ks__fmt(err, err_cap, "out of memory decoding %zu weight codes", num_bytes);
            return KS_STATUS_OUT_OF_MEMORY;
        }
        if (ks__wcode_decode(payload, size, 0, 32, NULL, p->block_size, row, 127, scratch,
                             (int8_t *)out) != KS_STATUS_OK) {
            ks__fmt(err, err_cap, "corrupt wcode stream (%zu bytes for %zu codes)", size,
                    num_bytes);
            goto error;
        }
    }
    st = KS_STATUS_OK;
error:
    ks__free(a, scratch);
    return st;
}
