/* fp16 and bf16 conversions, round to nearest even, inf and NaN kept.
 * Header-only and C-compatible: the judge, goldens and kernels all use these same functions. */
#ifndef TEMPER_HALF_H
#define TEMPER_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t temper_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
static inline float temper_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline float temper_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13); /* inf or NaN, payload kept */
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {
    /* subnormal: normalize */
    int e = -1;
    do {
      ++e;
      man <<= 1;
    } while ((man & 0x400u) == 0);
    bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
  }
  return temper_bits_f32(bits);
}

static inline uint16_t temper_f32_to_f16(float f) {
  uint32_t x = temper_f32_bits(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) { /* inf or NaN */
    return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? (0x200u | ((absx >> 13) & 0x3ffu)) : 0u));
  }
  if (absx >= 0x477ff000u) { /* rounds to >= 65520: overflow to inf */
    return (uint16_t)(sign | 0x7c00u);
  }
  if (absx < 0x38800000u) { /* below the smallest normal half (2^-14): subnormal or zero */
    if (absx < 0x33000000u) return sign; /* below half of the smallest subnormal, 2^-25 */
    uint32_t e = absx >> 23;
    uint32_t man = (absx & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e; /* 14..24 */
    uint32_t half_man = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (half_man & 1u))) ++half_man;
    return (uint16_t)(sign | half_man);
  }
  uint32_t rounded = absx + 0xfffu + ((absx >> 13) & 1u); /* round to nearest even at bit 13 */
  return (uint16_t)(sign | ((rounded - 0x38000000u) >> 13));
}

static inline float temper_bf16_to_f32(uint16_t b) { return temper_bits_f32((uint32_t)b << 16); }

static inline uint16_t temper_f32_to_bf16(float f) {
  uint32_t x = temper_f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

#endif /* TEMPER_HALF_H */
