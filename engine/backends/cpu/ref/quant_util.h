/* Fixed-point helpers for quantized reference kernels (TFLite integer semantics).
 * Not a published API. All functions are pure and thread-safe.
 *
 * Usage:
 *     int32_t mult, shift;
 *     ks__quant_multiplier((double)in_scale * w_scale / out_scale, &mult, &shift);
 *     int32_t q = ks__quant_mul(acc, mult, shift) + out_zp;
 *     q = clamp(q, act_lo, act_hi);   (act range from ks__quant_act_range)
 */
#ifndef KESTREL_CPU_REF_QUANT_UTIL_H
#define KESTREL_CPU_REF_QUANT_UTIL_H

#include <stdint.h>

#include "kestrel/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Decomposes a real multiplier (0 < m < 2^31 range as in TFLite) into Q31 mult + shift, so that
 * real ~= mult * 2^(shift - 31). real == 0 gives mult = shift = 0. Tiny multipliers
 * (shift < -31) flush to 0; multipliers >= 2^31 saturate to the largest representable value. */
void ks__quant_multiplier(double real, int32_t *mult_out, int32_t *shift_out);

/* TFLite MultiplyByQuantizedMultiplier: rounding-doubling high mul + rounding shift.
 * (x * 2^max(shift,0) wraps like TFLite's int32 product; real models never get there.) */
int32_t ks__quant_mul(int32_t x, int32_t mult, int32_t shift);

/* gemmlowp SaturatingRoundingDoublingHighMul: round(a * b / 2^31), saturating INT32_MIN^2. */
int32_t ks__quant_high_mul(int32_t a, int32_t b);

/* gemmlowp RoundingDivideByPOT: x / 2^exponent rounded half away from zero (0 <= exp <= 31). */
int32_t ks__quant_rounding_shift(int32_t x, int32_t exponent);

/* Clamps to the U8/I8/I16 value range (other dtypes: to the int32 range, i.e. unchanged). */
int32_t ks__quant_clamp(int32_t v, ks_dtype dtype);

/* Activation range in the quantized domain for fused act (NONE/RELU/RELU6/RELU_N1_TO_1), as
 * TFLite's CalculateActivationRangeQuantized. Other acts give the full dtype range. */
void ks__quant_act_range(int32_t act, float scale, int32_t zp, ks_dtype dtype, int32_t *lo,
                         int32_t *hi);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_REF_QUANT_UTIL_H */
