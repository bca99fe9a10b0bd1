/* Static order-0 rANS (byte-wise renormalization, 32-bit state, 12-bit probabilities).
 *
 * Why rANS rather than Huffman: quantized weights are peaked around zero, so the most frequent
 * symbol often carries well under one bit, which Huffman cannot code below 1 bit/symbol. One
 * state is enough: decoding runs once at load, and a single stream keeps the format simple. */
#include "rans.h"

#include <math.h>
#include <string.h>

#define RANS_L (1u << 23)   /* lower bound of the normalized state interval [L, L << 8) */
#define RANS_HEADER_MIN 12u /* n + table kind + smallest table + state */

static void wr32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

size_t ks__rans_bound(size_t n) {
    return 4 + 1 + 32 + 256 * 2 + 4 + 2 * n;
}

/* Scales counts to frequencies summing to KS__RANS_SCALE, keeping every present symbol >= 1. */
static void normalize(const uint64_t count[256], uint64_t total, uint32_t freq[256]) {
    int64_t sum = 0;
    for (int s = 0; s < 256; s++) {
        freq[s] = 0;
        if (!count[s]) continue;
        uint64_t f = (count[s] * KS__RANS_SCALE + total / 2) / total;
        freq[s] = f ? (uint32_t)f : 1;
        sum += freq[s];
    }
    /* Fix the rounding error on the largest frequencies, where it costs the least. */
    while (sum != (int64_t)KS__RANS_SCALE) {
        int best = -1;
        for (int s = 0; s < 256; s++) {
            if (!freq[s] || (sum > (int64_t)KS__RANS_SCALE && freq[s] <= 1)) continue;
            if (best < 0 || freq[s] > freq[best]) best = s;
        }
        int64_t step = sum > (int64_t)KS__RANS_SCALE ? -1 : 1;
        int64_t room = sum > (int64_t)KS__RANS_SCALE ? sum - KS__RANS_SCALE : KS__RANS_SCALE - sum;
        int64_t movable = step < 0 ? (int64_t)freq[best] - 1 : room;
        int64_t d = room < movable ? room : movable;
        if (d > (int64_t)freq[best] / 4 + 1 && step < 0) d = (int64_t)freq[best] / 4 + 1;
        freq[best] = (uint32_t)((int64_t)freq[best] + step * d);
        sum += step * d;
    }
}

/* The parametric tables: a two-sided geometric law over signed codes |v| <= vmax, built with
 * integer arithmetic only, so encoder and decoder agree bit for bit on every platform. */
static void model_freqs(uint8_t kind, uint32_t ratio, uint32_t vmax, uint32_t freq[256]) {
    uint64_t g[128], count[256], total = 0;
    g[0] = 1u << 16;
    for (uint32_t k = 1; k < 128; k++)
        g[k] = (g[k - 1] * ratio) >> 16;
    for (int s = 0; s < 256; s++) {
        if (kind == KS__RANS_TABLE_INT8) {
            int32_t v = (int8_t)s;
            uint32_t a = (uint32_t)(v < 0 ? -v : v);
            count[s] = a <= vmax ? g[a] + 1 : 0;
        } else {
            int32_t lo = s & 15, hi = s >> 4;
            lo -= lo >= 8 ? 16 : 0;
            hi -= hi >= 8 ? 16 : 0;
            uint32_t al = (uint32_t)(lo < 0 ? -lo : lo), ah = (uint32_t)(hi < 0 ? -hi : hi);
            count[s] = al <= vmax && ah <= vmax ? (g[al] + 1) * (g[ah] + 1) : 0;
        }
        total += count[s];
    }
    normalize(count, total, freq);
}

/* Bits needed to code `count` with `freq` (infinite when a used symbol has no frequency). */
static double code_bits(const uint64_t count[256], const uint32_t freq[256]) {
    double bits = 0.0;
    for (int s = 0; s < 256; s++) {
        if (!count[s]) continue;
        if (!freq[s]) return INFINITY;
        bits += (double)count[s] * (KS__RANS_SCALE_BITS - log2((double)freq[s]));
    }
    return bits;
}

ks_status ks__rans_encode(const uint8_t *src, size_t n, uint8_t *dst, size_t cap,
                          size_t *size_out) {
    return ks__rans_encode_model(src, n, KS__RANS_TABLE_EXPLICIT, dst, cap, size_out);
}

ks_status ks__rans_encode_model(const uint8_t *src, size_t n, uint8_t model, uint8_t *dst,
                                size_t cap, size_t *size_out) {
    if ((uint64_t)n > 0xffffffffu || cap < 4 + 1 + 32 + 4) return KS_STATUS_LIMIT_EXCEEDED;
    uint64_t count[256] = {0};
    for (size_t i = 0; i < n; i++)
        count[src[i]]++;
    uint32_t freq[256], cum[256];
    uint8_t kind = KS__RANS_TABLE_EXPLICIT;
    uint32_t best_ratio = 0, vmax = 0;
    if (n)
        normalize(count, n, freq);
    else
        memset(freq, 0, sizeof(freq));
    if (n && (model == KS__RANS_TABLE_INT8 || model == KS__RANS_TABLE_INT4_PAIRS)) {
        /* A parametric table costs 3 bytes instead of ~1 byte per symbol, which decides the
         * outcome for the many small weight tensors; keep whichever total is smaller. */
        uint32_t present = 0;
        for (int s = 0; s < 256; s++) {
            if (!count[s]) continue;
            present++;
            int32_t a, b = 0;
            if (model == KS__RANS_TABLE_INT8) {
                a = (int8_t)s;
            } else {
                a = (s & 15) - ((s & 15) >= 8 ? 16 : 0);
                b = (s >> 4) - ((s >> 4) >= 8 ? 16 : 0);
            }
            a = a < 0 ? -a : a;
            b = b < 0 ? -b : b;
            if ((uint32_t)a > vmax) vmax = (uint32_t)a;
            if ((uint32_t)b > vmax) vmax = (uint32_t)b;
        }
        uint32_t limit = model == KS__RANS_TABLE_INT8 ? 127 : 7;
        double best = code_bits(count, freq) / 8.0 + 32.0 + 1.2 * present;
        if (vmax <= limit) {
            uint32_t mf[256];
            for (int k = 0; k < 64; k++) {
                /* decay per code step from 2^-4 to 2^-(1/256): covers narrow to wide laws */
                double tau = 0.25 * pow(2.0, (double)k * 10.0 / 63.0);
                uint32_t r = (uint32_t)lrint(65536.0 * pow(2.0, -1.0 / tau));
                if (r < 1) r = 1;
                if (r > 65535) r = 65535;
                model_freqs(model, r, vmax, mf);
                double bytes = code_bits(count, mf) / 8.0 + 3.0;
                if (bytes < best) {
                    best = bytes;
                    best_ratio = r;
                    kind = model;
                }
            }
            if (kind != KS__RANS_TABLE_EXPLICIT) model_freqs(kind, best_ratio, vmax, freq);
        }
    }
    uint32_t c = 0;
    for (int s = 0; s < 256; s++) {
        cum[s] = c;
        c += freq[s];
    }
    size_t pos = 0;
    wr32(dst, (uint32_t)n);
    dst[4] = kind;
    pos = 5;
    if (kind != KS__RANS_TABLE_EXPLICIT) {
        dst[pos++] = (uint8_t)best_ratio;
        dst[pos++] = (uint8_t)(best_ratio >> 8);
        dst[pos++] = (uint8_t)vmax;
    } else {
        memset(dst + 5, 0, 32);
        pos = 37;
    }
    for (int s = 0; s < 256 && kind == KS__RANS_TABLE_EXPLICIT; s++) {
        if (!freq[s]) continue;
        dst[5 + (s >> 3)] |= (uint8_t)(1u << (s & 7));
        /* one byte for frequencies below 128 (most of them): the table is per tensor, so its
         * size matters for the many small conv weights */
        if (pos + 2 > cap) return KS_STATUS_LIMIT_EXCEEDED;
        if (freq[s] < 128) {
            dst[pos++] = (uint8_t)freq[s];
        } else {
            dst[pos++] = (uint8_t)(0x80u | (freq[s] & 0x7fu));
            dst[pos++] = (uint8_t)(freq[s] >> 7);
        }
    }
    size_t state_at = pos;
    pos += 4;
    if (pos > cap) return KS_STATUS_LIMIT_EXCEEDED;
    /* Bytes are produced last-symbol-first, so they are written backwards from the end of dst
     * and moved down behind the header afterwards. */
    size_t end = cap, out = cap;
    uint32_t x = RANS_L;
    for (size_t i = n; i-- > 0;) {
        uint32_t f = freq[src[i]];
        uint32_t x_max = ((RANS_L >> KS__RANS_SCALE_BITS) << 8) * f;
        while (x >= x_max) {
            if (out <= pos) return KS_STATUS_LIMIT_EXCEEDED;
            dst[--out] = (uint8_t)x;
            x >>= 8;
        }
        x = ((x / f) << KS__RANS_SCALE_BITS) + (x % f) + cum[src[i]];
    }
    wr32(dst + state_at, x);
    memmove(dst + pos, dst + out, end - out);
    *size_out = pos + (end - out);
    return KS_STATUS_OK;
}

ks_status ks__rans_decode(const uint8_t *src, size_t size, uint8_t *dst, size_t n) {
    if (!src || size < RANS_HEADER_MIN || (uint64_t)n > 0xffffffffu) return KS_STATUS_INVALID_MODEL;
    if (rd32(src) != (uint32_t)n) return KS_STATUS_INVALID_MODEL;
    uint8_t kind = src[4];
    const uint8_t *bitmap = src + 5;
    size_t pos = 5;
    uint32_t freq[256], cum[256], total = 0;
    if (kind == KS__RANS_TABLE_INT8 || kind == KS__RANS_TABLE_INT4_PAIRS) {
        uint32_t ratio = (uint32_t)src[5] | (uint32_t)src[6] << 8, vmax = src[7];
        pos = 8;
        if (!n || ratio == 0 || vmax > (kind == KS__RANS_TABLE_INT8 ? 127u : 7u))
            return KS_STATUS_INVALID_MODEL;
        model_freqs(kind, ratio, vmax, freq);
        for (int s = 0; s < 256; s++) {
            cum[s] = total;
            total += freq[s];
        }
    } else if (kind != KS__RANS_TABLE_EXPLICIT) {
        return KS_STATUS_INVALID_MODEL;
    } else if (size < 37) {
        return KS_STATUS_INVALID_MODEL;
    } else {
        pos = 37;
    }
    for (int s = 0; s < 256 && kind == KS__RANS_TABLE_EXPLICIT; s++) {
        freq[s] = 0;
        cum[s] = total;
        if (!(bitmap[s >> 3] & (1u << (s & 7)))) continue;
        if (pos >= size) return KS_STATUS_INVALID_MODEL;
        freq[s] = src[pos++];
        if (freq[s] & 0x80u) {
            if (pos >= size || src[pos] == 0) return KS_STATUS_INVALID_MODEL;
            freq[s] = (freq[s] & 0x7fu) | (uint32_t)src[pos++] << 7;
        }
        if (freq[s] == 0 || freq[s] > KS__RANS_SCALE - total) return KS_STATUS_INVALID_MODEL;
        total += freq[s];
    }
    if (n ? total != KS__RANS_SCALE : total != 0) return KS_STATUS_INVALID_MODEL;
    if (pos + 4 > size) return KS_STATUS_INVALID_MODEL;
    uint32_t x = rd32(src + pos);
    pos += 4;
    if (x < RANS_L || x >= (RANS_L << 8)) return KS_STATUS_INVALID_MODEL;
    uint8_t slot_sym[KS__RANS_SCALE];
    for (int s = 0; s < 256; s++)
        if (freq[s]) memset(slot_sym + cum[s], s, freq[s]);
    for (size_t i = 0; i < n; i++) {
        uint32_t slot = x & (KS__RANS_SCALE - 1);
        uint8_t s = slot_sym[slot];
        dst[i] = s;
        /* freq * (x >> 12) + slot - cum < 2^31: the product stays in 32 bits */
        x = freq[s] * (x >> KS__RANS_SCALE_BITS) + slot - cum[s];
        while (x < RANS_L) {
            if (pos >= size) return KS_STATUS_INVALID_MODEL;
            x = (x << 8) | src[pos++];
        }
    }
    if (x != RANS_L || pos != size) return KS_STATUS_INVALID_MODEL;
    return KS_STATUS_OK;
}
