/* Fixed-point helpers matching TFLite's reference integer arithmetic bit for bit. The rounding
 * rules here (half away from zero in the high mul nudge and in the power-of-two divide) are what
 * make our quantized outputs identical to TFLite's, so do not "simplify" them. */
#include "quant_util.h"

#include <math.h>

#include "../../../src/ir.h"

void ks__quant_multiplier(double real, int32_t *mult_out, int32_t *shift_out) {
    if (!(real > 0.0) || !isfinite(real)) {
        /* TFLite returns 0/0 for 0; negatives and NaN are invalid, and 0 is the safe answer. */
        *mult_out = 0;
        *shift_out = 0;
        return;
    }
    int exp = 0;
    double q = frexp(real, &exp); /* real = q * 2^exp, q in [0.5, 1) */
    int64_t q_fixed = (int64_t)round(q * (double)(1LL << 31));
    if (q_fixed == (1LL << 31)) {
        q_fixed /= 2;
        exp++;
    }
    if (exp < -31) {
        exp = 0;
        q_fixed = 0;
    }
    if (exp > 30) {
        exp = 30;
        q_fixed = (1LL << 31) - 1;
    }
    *mult_out = (int32_t)q_fixed;
    *shift_out = exp;
}

int32_t ks__quant_high_mul(int32_t a, int32_t b) {
    if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
    int64_t ab = (int64_t)a * (int64_t)b;
    int64_t nudge = ab >= 0 ? (1LL << 30) : (1 - (1LL << 30));
    /* C division truncates toward zero, as gemmlowp relies on. */
    return (int32_t)((ab + nudge) / (1LL << 31));
}

int32_t ks__quant_rounding_shift(int32_t x, int32_t exponent) {
    if (exponent <= 0) return x;
    if (exponent > 31) exponent = 31;
    int32_t mask = (int32_t)((1LL << exponent) - 1);
    int32_t remainder = x & mask;
    int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    /* Arithmetic right shift of negatives: implementation-defined in C11 but arithmetic on every
     * compiler we support; written as a floor division to stay portable. */
    int32_t floor_div =
        (int32_t)(x >= 0 ? (x >> exponent)
                         : -(int32_t)((((int64_t) - (int64_t)x) + mask) >> exponent));
    return floor_div + (remainder > threshold ? 1 : 0);
}

int32_t ks__quant_mul(int32_t x, int32_t mult, int32_t shift) {
    int32_t left = shift > 0 ? shift : 0;
    int32_t right = shift > 0 ? 0 : -shift;
    if (left > 31) left = 31;
    int32_t xs = (int32_t)(uint32_t)((uint32_t)x << left);
    return ks__quant_rounding_shift(ks__quant_high_mul(xs, mult), right);
}

int32_t ks__quant_clamp(int32_t v, ks_dtype dtype) {
    int32_t lo = INT32_MIN, hi = INT32_MAX;
    switch (dtype) {
    case KS_DTYPE_U8:
        lo = 0, hi = 255;
        break;
    case KS_DTYPE_I8:
        lo = -128, hi = 127;
        break;
    case KS_DTYPE_I16:
        lo = -32768, hi = 32767;
        break;
    default:
        break;
    }
    return v < lo ? lo : (v > hi ? hi : v);
}

static int32_t quantize_act_bound(float f, float scale, int32_t zp) {
    /* TFLite: zp + (int32_t)TfLiteRound(f / scale), computed in float. */
    float r = roundf(f / scale);
    if (!(r > -2147483648.0f)) return INT32_MIN;
    if (!(r < 2147483648.0f)) return INT32_MAX;
    int64_t v = (int64_t)zp + (int64_t)r;
    return v < INT32_MIN ? INT32_MIN : (v > INT32_MAX ? INT32_MAX : (int32_t)v);
}

void ks__quant_act_range(int32_t act, float scale, int32_t zp, ks_dtype dtype, int32_t *lo,
                         int32_t *hi) {
    int32_t qmin = ks__quant_clamp(INT32_MIN, dtype);
    int32_t qmax = ks__quant_clamp(INT32_MAX, dtype);
    int32_t l = qmin, h = qmax;
    if (scale > 0.0f) {
        switch (act) {
        case KS_ACT_RELU: {
            int32_t z = quantize_act_bound(0.0f, scale, zp);
            l = z > qmin ? z : qmin;
            break;
        }
        case KS_ACT_RELU6: {
            int32_t z = quantize_act_bound(0.0f, scale, zp);
            int32_t s = quantize_act_bound(6.0f, scale, zp);
            l = z > qmin ? z : qmin;
            h = s < qmax ? s : qmax;
            break;
        }
        case KS_ACT_RELU_N1_TO_1: {
            int32_t n = quantize_act_bound(-1.0f, scale, zp);
            int32_t p = quantize_act_bound(1.0f, scale, zp);
            l = n > qmin ? n : qmin;
            h = p < qmax ? p : qmax;
            break;
        }
        default:
            break;
        }
    }
    *lo = l;
    *hi = h;
}
