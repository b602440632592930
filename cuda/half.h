/* IEEE binary16 conversions for the C reference path.
 *
 * p3dc_float_to_half() rounds to nearest, ties to even, exactly as CUDA's
 * __float2half_rn(), so an F16 tensor from the reference and one from a
 * kernel agree bit for bit wherever their float32 values do. */
#ifndef P3DC_HALF_H
#define P3DC_HALF_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

static inline uint16_t
p3dc_float_to_half (float value)
{
  uint32_t bits, sign, abs;

  memcpy (&bits, &value, sizeof bits);
  sign = (bits >> 16) & 0x8000u;
  abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u)        /* NaN: CUDA's canonical quiet NaN */
    return 0x7fffu;
  if (abs >= 0x477ff000u)       /* 65520 and up round to infinity */
    return (uint16_t) (sign | 0x7c00u);
  if (abs >= 0x38800000u) {     /* a normal half: 2^-14 and up */
    uint32_t rounded = abs + 0x0fffu + ((abs >> 13) & 1u);

    return (uint16_t) (sign | ((rounded - (112u << 23)) >> 13));
  } else {                      /* a subnormal half, or zero */
    uint32_t exponent = abs >> 23;
    uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exponent;
    uint32_t quotient, remainder, halfway;

    if (abs == 0 || shift > 25u)
      return (uint16_t) sign;
    quotient = mantissa >> shift;
    remainder = mantissa & ((1u << shift) - 1u);
    halfway = 1u << (shift - 1u);
    if (remainder > halfway || (remainder == halfway && (quotient & 1u)))
      quotient++;
    return (uint16_t) (sign | quotient);
  }
}

static inline float
p3dc_half_to_float (uint16_t half)
{
  uint32_t sign = (uint32_t) (half & 0x8000u) << 16;
  uint32_t exponent = (half >> 10) & 0x1fu;
  uint32_t mantissa = half & 0x3ffu;
  uint32_t bits;
  float value;

  if (exponent == 0x1fu) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {
    /* subnormal: value = mantissa * 2^-24, exact in float */
    value = (float) mantissa * (1.0f / 16777216.0f);
    return sign ? -value : value;
  }
  memcpy (&value, &bits, sizeof value);
  return value;
}

#ifdef __cplusplus
}
#endif

#endif /* P3DC_HALF_H */
