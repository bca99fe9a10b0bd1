/* Context-adaptive binary arithmetic coder for quantized weights (stream layout in weight_coder.h).
 *
 * Why adaptive binary coding rather than a better rANS table: per-output-channel int8 codes are
 * close to a two-sided geometric law whose width depends on the input channel (folded batch
 * norms and activation ranges differ per input channel), so the magnitude at position j of a row
 * is predicted well by the magnitudes seen at j in earlier rows, rescaled by how this row
 * compares with them so far. A static table cannot follow that, and any table costs bytes that
 * small tensors (a few thousand weights) cannot amortize; adaptive probabilities cost nothing
 * but a short learning phase. Binarizing (bucket tree, mantissa, sign) keeps the number of
 * adaptive states small, so learning is fast.
 *
 * Encoder and decoder share the model code below (ctx_* helpers); only the bit I/O differs. */
#include "weight_coder.h"

#include <string.h>

#include "base/crc32.h"

#define WC_CTX_STEP 16 /* context width in 1/16 octaves */
#define WC_NUM_CTX 10
#define WC_TOP (1u << 24)
#define WC_NUM_CONFIGS 32
#define WC_EXP_ESCAPE 6
#define WC_HEADER 9 /* config, arithmetic part size, CRC-32 */

typedef struct prob {
    uint16_t a, b;
} prob;

static const uint8_t k_rates[4][2] = {{4, 7}, {5, 8}, {5, 7}, {4, 6}};

typedef struct model {
    prob bucket[WC_NUM_CTX][8];
    prob mant[WC_NUM_CTX][8][4];
    prob sign[9];
    prob s_sign, s_zero, s_neg, s_unary[WC_EXP_ESCAPE];
    uint32_t s1, s2, col_shift;
} model;

static void fill_half(prob *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        p[i].a = p[i].b = 32768;
}

static inline uint32_t bucket_of(uint32_t m) {
    return m ? 32u - (uint32_t)__builtin_clz(m) : 0;
}

/* Q16 ratio r of a geometric law P(m) ~ r^m with mean mu = 2^(x - 1/2) (x >= 1; mu = 1/2 for
 * x = 0), r = mu / (mu + 1): the magnitude law each context starts from. */
static const uint32_t k_prior_ratio[WC_NUM_CTX] = {21845, 38390, 48418, 55691, 60214,
                                                   62762, 64119, 64820, 65176, 65355};

static uint16_t split_p0(uint64_t left, uint64_t total) {
    uint64_t p = total ? (left << 16) / total : 32768;
    return (uint16_t)(p < 64 ? 64 : p > 65472 ? 65472 : p);
}

/* Starts every bucket and mantissa bit at the probability the context's geometric law gives
 * it, so small tensors do not pay a long learning phase. Integer arithmetic only: encoder and
 * decoder must agree bit for bit on every platform. */
static void model_prior(model *m, int32_t qmax) {
    uint32_t tree_bits = qmax == 127 ? 3 : 2, num_buckets = 1u << tree_bits;
    for (uint32_t x = 0; x < WC_NUM_CTX; x++) {
        uint64_t w[128], mass[16] = {0};
        w[0] = (uint64_t)1 << 40;
        for (int32_t k = 1; k <= qmax; k++)
            w[k] = (w[k - 1] * k_prior_ratio[x]) >> 16;
        for (int32_t k = 0; k <= qmax; k++)
            mass[num_buckets + bucket_of((uint32_t)k)] += w[k];
        for (uint32_t n = num_buckets; n-- > 1;) /* subtree masses, leaves at num_buckets.. */
            mass[n] = mass[2 * n] + mass[2 * n + 1];
        for (uint32_t n = 1; n < num_buckets; n++)
            m->bucket[x][n].a = m->bucket[x][n].b = split_p0(mass[2 * n], mass[n]);
        for (uint32_t g = 2; g < num_buckets; g++) {
            /* bucket g holds m in [2^(g-1), 2^g); its top two mantissa bits split it in halves
             * (node 1) and quarters (nodes 2, 3) */
            uint32_t lo = 1u << (g - 1), nb = g - 1;
            uint64_t q[4] = {0};
            for (uint32_t k = 0; k < lo; k++)
                q[nb >= 2 ? k >> (nb - 2) : k << 1] += w[lo + k];
            m->mant[x][g][1].a = m->mant[x][g][1].b =
                split_p0(q[0] + q[1], q[0] + q[1] + q[2] + q[3]);
            m->mant[x][g][2].a = m->mant[x][g][2].b = split_p0(q[0], q[0] + q[1]);
            m->mant[x][g][3].a = m->mant[x][g][3].b = split_p0(q[2], q[2] + q[3]);
        }
    }
}

static void model_init(model *m, uint8_t config, int32_t qmax) {
    fill_half(&m->bucket[0][0], sizeof(m->bucket) / sizeof(prob));
    fill_half(&m->mant[0][0][0], sizeof(m->mant) / sizeof(prob));
    fill_half(m->sign, 9);
    fill_half(&m->s_sign, 1);
    fill_half(&m->s_zero, 1);
    fill_half(&m->s_neg, 1);
    fill_half(m->s_unary, WC_EXP_ESCAPE);
    if (config & 16) model_prior(m, qmax);
    m->s1 = k_rates[config & 3][0];
    m->s2 = k_rates[config & 3][1];
    m->col_shift = (uint32_t)((config >> 2) & 3) + 1;
}

/* No clamping needed: estimates start in [64, 65472] and a shift update never reaches 0 or
 * 65536, so P0 is in [1, 65535] and, with R >= 2^24 before every bit, the split (R >> 16) * P0
 * lies strictly inside (0, R). */
static inline uint32_t prob_p0(const prob *p) {
    return ((uint32_t)p->a + p->b) >> 1;
}

static inline void prob_update(prob *p, uint32_t bit, const model *m) {
    if (bit) {
        p->a = (uint16_t)(p->a - (p->a >> m->s1));
        p->b = (uint16_t)(p->b - (p->b >> m->s2));
    } else {
        p->a = (uint16_t)(p->a + ((65535u - p->a) >> m->s1));
        p->b = (uint16_t)(p->b + ((65535u - p->b) >> m->s2));
    }
}

/* ---- context state shared by encoder and decoder ---- */

typedef struct ctx_state {
    uint16_t *col; /* C[j], 1/16 units (<= 16 * 127) */
    int8_t *prev;  /* code at j in the previous row */
    uint64_t row_len;
    uint64_t glob;  /* G */
    uint64_t sum_m; /* S */
    uint64_t sum_c; /* T */
    bool have_row;
} ctx_state;

/* Piecewise-linear log2 in 1/16 units (Mitchell's approximation, exact integer arithmetic):
 * 16 * floor(log2 v) + the 4 bits below the leading one. v >= 1. */
static inline int32_t log2_q4(uint64_t v) {
    int32_t k = 63 - __builtin_clzll(v);
    uint32_t frac = k >= 4 ? (uint32_t)(v >> (k - 4)) & 15u : (uint32_t)(v << (4 - k)) & 15u;
    return 16 * k + (int32_t)frac;
}

static inline uint32_t ctx_of(const ctx_state *s, uint64_t j) {
    int32_t lp;
    if (!s->have_row)
        lp = log2_q4(16 * s->sum_m + 2 * s->glob + 1) - log2_q4(j + 2);
    else
        lp = log2_q4((uint64_t)s->col[j] + 1) + log2_q4(16 * s->sum_m + 4 * s->glob + 1) -
             log2_q4(s->sum_c + 4 * s->glob + 1);
    /* lp ~ 16 log2 P with P the predicted magnitude in 1/16 units */
    if (lp < 64) return 0;
    uint32_t x = (uint32_t)(lp - 64) / WC_CTX_STEP + 1;
    return x < WC_NUM_CTX ? x : WC_NUM_CTX - 1;
}

/* sign context: signs (0, +, -) of the previous code in the row and of the code at j in the
 * previous row */
static inline uint32_t sign_ctx(const ctx_state *s, uint64_t j, int32_t prev_in_row) {
    uint32_t a = prev_in_row > 0 ? 1 : prev_in_row < 0 ? 2 : 0;
    uint32_t b = 0;
    if (s->have_row) b = s->prev[j] > 0 ? 1 : s->prev[j] < 0 ? 2 : 0;
    return a * 3 + b;
}

static inline void ctx_after_code(ctx_state *s, uint64_t j, int32_t code, uint32_t col_shift) {
    uint32_t m = (uint32_t)(code < 0 ? -code : code);
    s->prev[j] = (int8_t)code;
    s->sum_m += m;
    if (s->have_row) {
        s->sum_c += s->col[j];
        /* C[j] += floor((16 m - C[j]) / 2^k), without relying on signed right shifts */
        uint32_t c = s->col[j], t = 16 * m;
        if (t >= c)
            c += (t - c) >> col_shift;
        else
            c -= (c - t + (1u << col_shift) - 1) >> col_shift;
        s->col[j] = (uint16_t)c;
    } else {
        s->col[j] = (uint16_t)(16 * m);
    }
}

static inline void ctx_end_row(ctx_state *s) {
    s->glob = (16 * s->sum_m + 4 * s->glob) / (s->row_len + 4);
    s->sum_m = s->sum_c = 0;
    s->have_row = true;
}

static void ctx_init(ctx_state *s, void *scratch, uint64_t row_len) {
    /* Callers may hand any byte address (ks__wcode_scratch_bytes leaves slack for this); the
     * uint16_t column predictions need 2-byte alignment. */
    uint8_t *base = (uint8_t *)scratch + ((uintptr_t)scratch & 1u);
    s->col = (uint16_t *)(void *)base;
    s->prev = (int8_t *)(base + row_len * 2);
    s->row_len = row_len;
    s->glob = 480;
    s->sum_m = s->sum_c = 0;
    s->have_row = false;
}

size_t ks__wcode_scratch_bytes(uint64_t row_len) {
    return (size_t)row_len * 3 + 8;
}

static bool params_ok(uint64_t num_scales, uint32_t scale_bits, uint64_t num_rows, uint64_t row_len,
                      int32_t qmax) {
    if (scale_bits != 16 && scale_bits != 32) return false;
    if (qmax != 127 && qmax != 7) return false;
    /* keeps the running sums (<= 16 * 127 * row_len) and the scratch size far from overflow */
    if (row_len >= ((uint64_t)1 << 32) || num_rows >= ((uint64_t)1 << 40)) return false;
    if (num_rows && row_len > ((uint64_t)1 << 40) / num_rows) return false;
    return num_scales < ((uint64_t)1 << 40);
}

/* ---- encoder ---- */

typedef struct enc {
    uint64_t low;
    uint32_t range;
    uint8_t cache;
    uint64_t cache_size;
    uint8_t *dst; /* arithmetic-coded bytes */
    size_t cap, pos;
    uint8_t *raw; /* raw bits, staged until the arithmetic part's size is known */
    size_t raw_cap, raw_pos;
    uint64_t raw_acc;
    uint32_t raw_num;
    bool first; /* the very first byte is always 0 (no carry can reach it): not stored */
    bool overflow;
} enc;

static void enc_put(enc *e, uint8_t byte) {
    if (e->first) {
        e->first = false;
        return;
    }
    if (e->pos >= e->cap) {
        e->overflow = true;
        return;
    }
    e->dst[e->pos++] = byte;
}

static void enc_shift_low(enc *e) {
    if ((uint32_t)e->low < 0xFF000000u || (e->low >> 32) != 0) {
        uint8_t carry = (uint8_t)(e->low >> 32);
        uint8_t c = e->cache;
        do {
            enc_put(e, (uint8_t)(c + carry));
            c = 0xFF;
        } while (--e->cache_size != 0);
        e->cache = (uint8_t)(e->low >> 24);
    }
    e->cache_size++;
    e->low = (e->low & 0x00FFFFFFu) << 8;
}

static inline void enc_bit(enc *e, prob *p, uint32_t bit, const model *m) {
    uint32_t bound = (e->range >> 16) * prob_p0(p);
    if (!bit) {
        e->range = bound;
    } else {
        e->low += bound;
        e->range -= bound;
    }
    prob_update(p, bit, m);
    while (e->range < WC_TOP) {
        e->range <<= 8;
        enc_shift_low(e);
    }
}

/* num_bits <= 25 raw bits, least significant first */
static inline void enc_raw(enc *e, uint32_t value, uint32_t num_bits) {
    e->raw_acc |= (uint64_t)(value & ((1u << num_bits) - 1)) << e->raw_num;
    e->raw_num += num_bits;
    while (e->raw_num >= 8) {
        if (e->raw_pos < e->raw_cap)
            e->raw[e->raw_pos++] = (uint8_t)e->raw_acc;
        else
            e->overflow = true;
        e->raw_acc >>= 8;
        e->raw_num -= 8;
    }
}

static void enc_scale(enc *e, model *m, uint32_t word, uint32_t scale_bits, uint32_t *e_prev) {
    uint32_t exp_bits = scale_bits == 32 ? 8 : 5, mant_bits = scale_bits == 32 ? 23 : 10;
    uint32_t ex = (word >> mant_bits) & ((1u << exp_bits) - 1);
    enc_bit(e, &m->s_sign, word >> (scale_bits - 1), m);
    int32_t d = (int32_t)ex - (int32_t)*e_prev;
    *e_prev = ex;
    enc_bit(e, &m->s_zero, d != 0, m);
    if (d) {
        enc_bit(e, &m->s_neg, d < 0, m);
        uint32_t ad = (uint32_t)(d < 0 ? -d : d) - 1;
        uint32_t u = ad < WC_EXP_ESCAPE ? ad : WC_EXP_ESCAPE;
        for (uint32_t i = 0; i < u; i++)
            enc_bit(e, &m->s_unary[i], 1, m);
        if (u < WC_EXP_ESCAPE)
            enc_bit(e, &m->s_unary[u], 0, m);
        else
            enc_raw(e, ex, exp_bits);
    }
    enc_raw(e, word, mant_bits);
}

static inline void enc_code(enc *e, model *m, uint32_t x, int32_t code, uint32_t tree_bits,
                            uint32_t sc) {
    uint32_t mag = (uint32_t)(code < 0 ? -code : code);
    uint32_t g = bucket_of(mag);
    uint32_t node = 1;
    for (uint32_t k = tree_bits; k-- > 0;) {
        uint32_t bit = (g >> k) & 1;
        enc_bit(e, &m->bucket[x][node], bit, m);
        node = node * 2 + bit;
    }
    if (g >= 2) {
        uint32_t nb = g - 1, mant = mag - (1u << nb);
        uint32_t t = 1, k = nb;
        for (uint32_t i = 0; i < 2 && k > 0; i++) {
            k--;
            uint32_t bit = (mant >> k) & 1;
            enc_bit(e, &m->mant[x][g][t], bit, m);
            t = t * 2 + bit;
        }
        enc_raw(e, mant, k);
    }
    if (mag) enc_bit(e, &m->sign[sc], code < 0, m);
}

static uint32_t rd_word(const uint8_t *p, uint32_t scale_bits) {
    uint32_t w = (uint32_t)p[0] | (uint32_t)p[1] << 8;
    if (scale_bits == 32) w |= (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return w;
}

static void wr_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* CRC of the geometry, then stream bytes 0..4 and 9..: a stream read with other dimensions
 * than it was written for is refused too (the end state alone may not notice a few extra
 * highly probable zeros). */
static uint32_t stream_crc(const uint8_t *stream, size_t size, uint64_t num_scales,
                           uint32_t scale_bits, uint64_t num_rows, uint64_t row_len, int32_t qmax) {
    uint8_t geo[32];
    uint64_t v[3] = {num_scales, num_rows, row_len};
    wr_u32(geo, scale_bits);
    wr_u32(geo + 4, (uint32_t)qmax);
    for (int i = 0; i < 3; i++) {
        wr_u32(geo + 8 + 8 * i, (uint32_t)v[i]);
        wr_u32(geo + 12 + 8 * i, (uint32_t)(v[i] >> 32));
    }
    uint32_t crc = ks__crc32(0, geo, sizeof(geo));
    crc = ks__crc32(crc, stream, 5);
    return ks__crc32(crc, stream + WC_HEADER, size - WC_HEADER);
}

/* Codes everything with one config: arithmetic part into dst + WC_HEADER, raw bits into
 * e->raw; returns the total stream size, or 0 when it does not fit dst_cap. */
static size_t encode_config(uint8_t config, const uint8_t *scales, uint64_t num_scales,
                            uint32_t scale_bits, const int8_t *codes, uint64_t num_rows,
                            uint64_t row_len, int32_t qmax, void *scratch, enc *e, model *m,
                            size_t dst_cap) {
    model_init(m, config, qmax);
    e->pos = 0;
    e->cap = dst_cap - WC_HEADER;
    e->low = 0;
    e->range = 0xFFFFFFFFu;
    e->cache = 0;
    e->cache_size = 1;
    e->first = true;
    e->overflow = false;
    e->raw_pos = 0;
    e->raw_acc = 0;
    e->raw_num = 0;
    uint32_t e_prev = scale_bits == 32 ? 127 : 15;
    for (uint64_t i = 0; i < num_scales && !e->overflow; i++)
        enc_scale(e, m, rd_word(scales + i * (scale_bits / 8), scale_bits), scale_bits, &e_prev);
    ctx_state s;
    ctx_init(&s, scratch, row_len);
    uint32_t tree_bits = qmax == 127 ? 3 : 2;
    for (uint64_t r = 0; r < num_rows && !e->overflow; r++) {
        const int8_t *row = codes + r * row_len;
        int32_t prev = 0;
        for (uint64_t j = 0; j < row_len; j++) {
            int32_t c = row[j];
            enc_code(e, m, ctx_of(&s, j), c, tree_bits, sign_ctx(&s, j, prev));
            ctx_after_code(&s, j, c, m->col_shift);
            prev = c;
        }
        ctx_end_row(&s);
    }
    for (int i = 0; i < 5; i++)
        enc_shift_low(e);
    enc_raw(e, 0, 7); /* pad the raw bits to a whole byte with zeros */
    if (e->overflow || e->pos > (size_t)UINT32_MAX || e->raw_pos > dst_cap - WC_HEADER - e->pos)
        return 0;
    return WC_HEADER + e->pos + e->raw_pos;
}

ks_status ks__wcode_encode(const uint8_t *scales, uint64_t num_scales, uint32_t scale_bits,
                           const int8_t *codes, uint64_t num_rows, uint64_t row_len, int32_t qmax,
                           void *scratch, uint8_t *dst, size_t dst_cap, size_t *size_out) {
    if (!params_ok(num_scales, scale_bits, num_rows, row_len, qmax))
        return KS_STATUS_INVALID_ARGUMENT;
    for (uint64_t i = 0; i < num_rows * row_len; i++)
        if (codes[i] < -qmax || codes[i] > qmax) return KS_STATUS_INVALID_ARGUMENT;
    if (dst_cap <= WC_HEADER) return KS_STATUS_LIMIT_EXCEEDED;
    model m;
    enc e;
    size_t best = 0, best_raw = 0;
    uint8_t best_config = 0;
    for (uint8_t config = 0; config < WC_NUM_CONFIGS; config++) {
        size_t cap = best ? best - 1 : dst_cap; /* only a strictly smaller stream can win */
        if (cap <= WC_HEADER) break;
        e.dst = dst + WC_HEADER;
        e.raw = dst + WC_HEADER;
        e.raw_cap = cap - WC_HEADER;
        /* dry run: arithmetic and raw parts share the buffer; only the sizes count */
        size_t n = encode_config(config, scales, num_scales, scale_bits, codes, num_rows, row_len,
                                 qmax, scratch, &e, &m, cap);
        if (n) {
            best = n;
            best_raw = e.raw_pos;
            best_config = config;
        }
    }
    if (!best) return KS_STATUS_LIMIT_EXCEEDED;
    /* final run: raw bits into the top of dst (clear of the arithmetic part, since the sizes
     * repeat the dry run's), then moved right behind the arithmetic part */
    e.dst = dst + WC_HEADER;
    e.raw = dst + dst_cap - best_raw;
    e.raw_cap = best_raw;
    size_t n = encode_config(best_config, scales, num_scales, scale_bits, codes, num_rows, row_len,
                             qmax, scratch, &e, &m, best);
    if (n != best || e.raw < dst + WC_HEADER + e.pos) return KS_STATUS_LIMIT_EXCEEDED;
    memmove(dst + WC_HEADER + e.pos, e.raw, e.raw_pos);
    dst[0] = best_config;
    wr_u32(dst + 1, (uint32_t)e.pos);
    wr_u32(dst + 5, stream_crc(dst, n, num_scales, scale_bits, num_rows, row_len, qmax));
    *size_out = n;
    return KS_STATUS_OK;
}

/* ---- decoder ---- */

typedef struct dec {
    uint32_t range, value;
    const uint8_t *p, *end;
    const uint8_t *raw, *raw_end;
    uint64_t raw_acc;
    uint32_t raw_num;
    bool bad; /* tried to read past the end of either part */
} dec;

static inline void dec_normalize(dec *d) {
    while (d->range < WC_TOP) {
        d->range <<= 8;
        uint8_t byte = 0;
        if (d->p < d->end)
            byte = *d->p++;
        else
            d->bad = true;
        d->value = (d->value << 8) | byte;
    }
}

static inline uint32_t dec_bit(dec *d, prob *p, const model *m) {
    uint32_t bound = (d->range >> 16) * prob_p0(p);
    uint32_t bit = d->value >= bound;
    uint32_t mask = 0u - bit;
    /* written to compile to conditional moves: the bits are unpredictable by design */
    d->value -= bound & mask;
    d->range = bit ? d->range - bound : bound;
    uint32_t a = p->a, b = p->b;
    uint32_t a1 = a - (a >> m->s1), a0 = a + ((65535u - a) >> m->s1);
    uint32_t b1 = b - (b >> m->s2), b0 = b + ((65535u - b) >> m->s2);
    p->a = (uint16_t)(bit ? a1 : a0);
    p->b = (uint16_t)(bit ? b1 : b0);
    if (d->range < WC_TOP) dec_normalize(d);
    return bit;
}

/* num_bits <= 25 */
static inline uint32_t dec_raw(dec *d, uint32_t num_bits) {
    while (d->raw_num < num_bits) {
        uint8_t byte = 0;
        if (d->raw < d->raw_end)
            byte = *d->raw++;
        else
            d->bad = true;
        d->raw_acc |= (uint64_t)byte << d->raw_num;
        d->raw_num += 8;
    }
    uint32_t v = (uint32_t)d->raw_acc & ((1u << num_bits) - 1);
    d->raw_acc >>= num_bits;
    d->raw_num -= num_bits;
    return v;
}

static uint32_t dec_scale(dec *d, model *m, uint32_t scale_bits, uint32_t *e_prev) {
    uint32_t exp_bits = scale_bits == 32 ? 8 : 5, mant_bits = scale_bits == 32 ? 23 : 10;
    uint32_t sign = dec_bit(d, &m->s_sign, m);
    uint32_t ex = *e_prev;
    if (dec_bit(d, &m->s_zero, m)) {
        uint32_t neg = dec_bit(d, &m->s_neg, m);
        uint32_t u = 0;
        while (u < WC_EXP_ESCAPE && dec_bit(d, &m->s_unary[u], m))
            u++;
        if (u < WC_EXP_ESCAPE)
            ex = neg ? ex - (u + 1) : ex + u + 1;
        else
            ex = dec_raw(d, exp_bits);
        ex &= (1u << exp_bits) - 1; /* hostile deltas wrap, like any exponent field */
    }
    *e_prev = ex;
    uint32_t mant = dec_raw(d, mant_bits);
    return sign << (scale_bits - 1) | ex << mant_bits | mant;
}

/* The code loop, inlined once per tree depth so the bucket tree unrolls. A stream that ran out
 * of bytes stops at the next row, so a lying size cannot make the decoder spin on zero bytes for
 * long. Every decoded magnitude is < 2^(2^tree_bits - 1), i.e. within [-qmax, qmax], by
 * construction. */
static inline void decode_codes(dec *dp, model *mp, void *scratch, uint64_t num_rows,
                                uint64_t row_len, uint32_t tree_bits, int8_t *codes_out) {
    dec d = *dp;
    model *m = mp;
    ctx_state s;
    ctx_init(&s, scratch, row_len);
    for (uint64_t r = 0; r < num_rows && !d.bad; r++) {
        int8_t *row = codes_out + r * row_len;
        int32_t prev = 0;
        for (uint64_t j = 0; j < row_len; j++) {
            uint32_t x = ctx_of(&s, j);
            uint32_t node = 1;
            for (uint32_t k = 0; k < tree_bits; k++)
                node = node * 2 + dec_bit(&d, &m->bucket[x][node], m);
            uint32_t g = node - (1u << tree_bits);
            uint32_t mag = g;
            if (g >= 2) {
                uint32_t nb = g - 1, t = 1, k = nb;
                for (uint32_t i = 0; i < 2 && k > 0; i++) {
                    k--;
                    t = t * 2 + dec_bit(&d, &m->mant[x][g][t], m);
                }
                /* t = a leading 1, then the nb - k top mantissa bits */
                mag = (1u << nb) + ((t - (1u << (nb - k))) << k) + dec_raw(&d, k);
            }
            int32_t code = (int32_t)mag;
            if (mag && dec_bit(&d, &m->sign[sign_ctx(&s, j, prev)], m)) code = -code;
            row[j] = (int8_t)code;
            ctx_after_code(&s, j, code, m->col_shift);
            prev = code;
        }
        ctx_end_row(&s);
    }
    *dp = d;
}

ks_status ks__wcode_decode(const uint8_t *src, size_t src_size, uint64_t num_scales,
                           uint32_t scale_bits, uint8_t *scales_out, uint64_t num_rows,
                           uint64_t row_len, int32_t qmax, void *scratch, int8_t *codes_out) {
    if (!params_ok(num_scales, scale_bits, num_rows, row_len, qmax) || !src ||
        src_size < WC_HEADER + 4)
        return KS_STATUS_INVALID_MODEL;
    uint8_t config = src[0];
    size_t ac_size =
        (size_t)src[1] | (size_t)src[2] << 8 | (size_t)src[3] << 16 | (size_t)src[4] << 24;
    if (config >> 5 || ac_size < 4 || ac_size > src_size - WC_HEADER)
        return KS_STATUS_INVALID_MODEL;
    /* The arithmetic part's end check alone is weak on short streams (a corrupted path can end
     * on the same round value) and raw bits have none, hence the CRC over everything. */
    uint32_t crc =
        (uint32_t)src[5] | (uint32_t)src[6] << 8 | (uint32_t)src[7] << 16 | (uint32_t)src[8] << 24;
    if (stream_crc(src, src_size, num_scales, scale_bits, num_rows, row_len, qmax) != crc)
        return KS_STATUS_INVALID_MODEL;
    model m;
    model_init(&m, config, qmax);
    dec d;
    d.p = src + WC_HEADER;
    d.end = d.p + ac_size;
    d.raw = d.end;
    d.raw_end = src + src_size;
    d.raw_acc = 0;
    d.raw_num = 0;
    d.bad = false;
    d.range = 0xFFFFFFFFu;
    d.value = 0;
    for (int i = 0; i < 4; i++)
        d.value = (d.value << 8) | *d.p++;
    uint32_t e_prev = scale_bits == 32 ? 127 : 15;
    for (uint64_t i = 0; i < num_scales && !d.bad; i++) {
        uint32_t w = dec_scale(&d, &m, scale_bits, &e_prev);
        uint8_t *o = scales_out + i * (scale_bits / 8);
        o[0] = (uint8_t)w;
        o[1] = (uint8_t)(w >> 8);
        if (scale_bits == 32) {
            o[2] = (uint8_t)(w >> 16);
            o[3] = (uint8_t)(w >> 24);
        }
    }
    if (qmax == 127)
        decode_codes(&d, &m, scratch, num_rows, row_len, 3, codes_out);
    else
        decode_codes(&d, &m, scratch, num_rows, row_len, 2, codes_out);
    /* exact end: both parts fully consumed, the arithmetic value back at the encoder's low end,
     * and the raw padding (< 8 bits) zero */
    if (d.bad || d.p != d.end || d.value != 0 || d.raw != d.raw_end || d.raw_num >= 8 ||
        d.raw_acc != 0)
        return KS_STATUS_INVALID_MODEL;
    return KS_STATUS_OK;
}

/* ---- bcode: order-1 adaptive byte coder for the .ksm tables (layout in weight_coder.h) ----
 *
 * The tables are short (tens of KB) and made of little-endian records: zero high bytes of
 * counts and dims, ASCII names sharing long prefixes, f32 scales whose exponent bytes repeat.
 * The previous byte is the context that captures most of that with a table small enough to
 * learn from a few KB; the match model adds what an order-1 model cannot see: whole repeated
 * runs (names that differ in a suffix, node records of the same shape), which LZ coders win on.
 * Switching between the two (no mixing) keeps the decoder to one probability per bit. On
 * selfie segmentation's int8 tables: order-1 alone 20.3 KB, with the match model 16.9 KB. */

#define BC_HEADER 5
#define BC_CONTEXTS (256 * 256)
#define BC_MATCH_CONTEXTS 65536
#define BC_MATCH_MIN 2
#define BC_MAX_LEN 15
#define BC_MATCH_PROBS ((BC_MAX_LEN + 1) * 2)

/* Coder state shared by encoder and decoder: order-1 bit probabilities, the match model's
 * probabilities and its table of positions. */
typedef struct bc_state {
    prob *o1;       /* [256 previous byte][256 tree node] */
    prob *match;    /* [16 length][2 expected bit] */
    uint32_t *last; /* [2^16] position after the last occurrence of a 2-byte context, 0: none */
    uint64_t ptr;   /* position of the byte the match predicts */
    uint32_t len;   /* 0: no match */
} bc_state;

size_t ks__bcode_scratch_bytes(void) {
    return (size_t)BC_CONTEXTS * sizeof(prob) + BC_MATCH_PROBS * sizeof(prob) +
           (size_t)BC_MATCH_CONTEXTS * sizeof(uint32_t);
}

static void bc_init(bc_state *s, void *scratch) {
    s->o1 = scratch;
    s->match = s->o1 + BC_CONTEXTS;
    s->last = (uint32_t *)(void *)(s->match + BC_MATCH_PROBS);
    fill_half(s->o1, BC_CONTEXTS);
    fill_half(s->match, BC_MATCH_PROBS);
    memset(s->last, 0, (size_t)BC_MATCH_CONTEXTS * sizeof(uint32_t));
    s->ptr = 0;
    s->len = 0;
}

/* the match model's context: the previous two bytes (i >= 2) */
static inline uint32_t bc_match_ctx(const uint8_t *data, size_t i) {
    return (uint32_t)data[i - 2] << 8 | data[i - 1];
}

/* Before byte i: looks up a match when there is none. data[0..i) are known bytes. */
static inline void bc_begin_byte(bc_state *s, const uint8_t *data, size_t i) {
    if (s->len == 0 && i >= BC_MATCH_MIN) {
        uint32_t at = s->last[bc_match_ctx(data, i)];
        if (at) {
            s->ptr = at;
            s->len = 1;
        }
    }
}

/* After byte i (now known): records its context and advances a surviving match. */
static inline void bc_end_byte(bc_state *s, const uint8_t *data, size_t i) {
    if (i >= BC_MATCH_MIN) s->last[bc_match_ctx(data, i)] = (uint32_t)i;
    if (s->len) {
        s->ptr++;
        if (s->len < BC_MAX_LEN) s->len++;
    }
}

static uint32_t bcode_crc(const uint8_t *data, size_t n) {
    uint8_t len[8];
    wr_u32(len, (uint32_t)n);
    wr_u32(len + 4, (uint32_t)((uint64_t)n >> 32));
    return ks__crc32(ks__crc32(0, data, n), len, 8);
}

/* Codes src with one rate set into e->dst; returns the stream size or 0 when it overflows. */
static size_t bcode_encode_config(uint8_t config, const uint8_t *src, size_t n, void *scratch,
                                  enc *e, model *m, size_t dst_cap) {
    bc_state s;
    bc_init(&s, scratch);
    m->s1 = k_rates[config & 3][0];
    m->s2 = k_rates[config & 3][1];
    e->pos = 0;
    e->cap = dst_cap - BC_HEADER;
    e->low = 0;
    e->range = 0xFFFFFFFFu;
    e->cache = 0;
    e->cache_size = 1;
    e->first = true;
    e->overflow = false;
    uint32_t prev = 0;
    for (size_t i = 0; i < n && !e->overflow; i++) {
        bc_begin_byte(&s, src, i);
        prob *c = s.o1 + prev * 256;
        uint32_t node = 1, byte = src[i], want = s.len ? src[s.ptr] : 0;
        for (int k = 7; k >= 0; k--) {
            uint32_t bit = (byte >> k) & 1;
            if (s.len) {
                uint32_t expect = (want >> k) & 1;
                enc_bit(e, &s.match[s.len * 2 + expect], bit, m);
                if (bit != expect) s.len = 0;
            } else {
                enc_bit(e, &c[node], bit, m);
            }
            node = node * 2 + bit;
        }
        bc_end_byte(&s, src, i);
        prev = byte;
    }
    for (int i = 0; i < 5; i++)
        enc_shift_low(e);
    if (e->overflow) return 0;
    return BC_HEADER + e->pos;
}

ks_status ks__bcode_encode(const uint8_t *src, size_t n, void *scratch, uint8_t *dst,
                           size_t dst_cap, size_t *size_out) {
    if (dst_cap <= BC_HEADER + 4) return KS_STATUS_LIMIT_EXCEEDED;
    model m;
    enc e;
    memset(&e, 0, sizeof(e));
    size_t best = 0;
    uint8_t best_config = 0;
    for (uint8_t config = 0; config < 4; config++) {
        size_t cap = best ? best - 1 : dst_cap;
        if (cap <= BC_HEADER + 4) break;
        e.dst = dst + BC_HEADER;
        size_t size = bcode_encode_config(config, src, n, scratch, &e, &m, cap);
        if (size) {
            best = size;
            best_config = config;
        }
    }
    if (!best) return KS_STATUS_LIMIT_EXCEEDED;
    e.dst = dst + BC_HEADER;
    if (bcode_encode_config(best_config, src, n, scratch, &e, &m, best) != best)
        return KS_STATUS_LIMIT_EXCEEDED;
    dst[0] = best_config;
    wr_u32(dst + 1, bcode_crc(src, n));
    *size_out = best;
    return KS_STATUS_OK;
}

ks_status ks__bcode_decode(const uint8_t *src, size_t src_size, void *scratch, uint8_t *dst,
                           size_t n) {
    if (!src || src_size < BC_HEADER + 4 || src[0] >> 2) return KS_STATUS_INVALID_MODEL;
    bc_state s;
    bc_init(&s, scratch);
    model m;
    m.s1 = k_rates[src[0] & 3][0];
    m.s2 = k_rates[src[0] & 3][1];
    dec d;
    memset(&d, 0, sizeof(d));
    d.p = src + BC_HEADER;
    d.end = src + src_size;
    d.range = 0xFFFFFFFFu;
    for (int i = 0; i < 4; i++)
        d.value = (d.value << 8) | *d.p++;
    uint32_t prev = 0;
    /* a stream that ran out of bytes stops early instead of spinning on zeros; match positions
     * always point before i, so only decoded bytes are read */
    for (size_t i = 0; i < n && !d.bad; i++) {
        bc_begin_byte(&s, dst, i);
        prob *c = s.o1 + prev * 256;
        uint32_t node = 1, want = s.len ? dst[s.ptr] : 0;
        for (int k = 7; k >= 0; k--) {
            uint32_t bit;
            if (s.len) {
                uint32_t expect = (want >> k) & 1;
                bit = dec_bit(&d, &s.match[s.len * 2 + expect], &m);
                if (bit != expect) s.len = 0;
            } else {
                bit = dec_bit(&d, &c[node], &m);
            }
            node = node * 2 + bit;
        }
        prev = node & 0xffu;
        dst[i] = (uint8_t)prev;
        bc_end_byte(&s, dst, i);
    }
    if (d.bad || d.p != d.end || d.value != 0) return KS_STATUS_INVALID_MODEL;
    uint32_t crc =
        (uint32_t)src[1] | (uint32_t)src[2] << 8 | (uint32_t)src[3] << 16 | (uint32_t)src[4] << 24;
    if (bcode_crc(dst, n) != crc) return KS_STATUS_INVALID_MODEL;
    return KS_STATUS_OK;
}
