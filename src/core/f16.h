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
#endif
