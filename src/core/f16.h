/* IEEE binary16 (f16: 1 sign, 5 exponent, 10 mantissa bits) to fp32 on the host: exact for
 * every f16 value (normal, subnormal, ±0, ±inf, NaN). Reads back the WebGPU backend's f16
 * activations (be->act == TZ_F16). Source: IEEE 754-2008 §3.4's encoding. */
#ifndef TZ_F16_H
#define TZ_F16_H
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float tz_f16_to_f32(uint16_t h) {
  uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
  if (e == 0) { /* zero or subnormal: m · 2^-24 */
    float f = ldexpf((float)m, -24);
    return s ? -f : f;
  }
  u = e == 31 ? (s | 0x7f800000u | (m << 13)) : (s | ((e + 112u) << 23) | (m << 13));
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* fp32 to f16, round to nearest even; beyond f16's range ±inf, NaN stays NaN (a quiet NaN).
 * For tests and uploads into f16 activations. */
static inline uint16_t tz_f32_to_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint16_t s = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00u);  /* NaN */
  if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u); /* ≥ 65520 rounds to inf */
  if (a < 0x38800000u) {                                 /* below 2^-14: subnormal or zero */
    float m = fabsf(f) * 16777216.0f;                    /* in units of 2^-24 */
    uint32_t q = (uint32_t)m;
    float r = m - (float)q;
    if (r > 0.5f || (r == 0.5f && (q & 1u))) q++;
    return (uint16_t)(s | q);
  }
  uint32_t e = (a >> 23) - 112u, mant = a & 0x7fffffu;
  uint32_t h = (e << 10) | (mant >> 13), rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++; /* may carry into the exponent: right */
  return (uint16_t)(s | h);
}
#endif
