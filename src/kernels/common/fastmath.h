/* exp for the CPU kernels' hot loops, written so the compiler vectorizes it (glibc's expf is
 * an opaque call that keeps loops scalar without -ffast-math).
 * Method (Cody & Waite range reduction, Cephes' minimax polynomial for expf):
 *   n = round(x·log2 e), r = x − n·ln2 (in two parts), e^r ≈ 1 + r + r²·P(r), e^x = 2^n · e^r.
 * Accuracy: within 2 ulp of expf over [-87, 88]; below −87.3 it returns 0, above 88.7 +inf
 * would overflow so the input is clamped there (the kernels only exponentiate x ≤ 0).
 * NaN propagates. */
#ifndef TZ_KERNELS_FASTMATH_H
#define TZ_KERNELS_FASTMATH_H
#include <stdint.h>
#include <string.h>

static inline float tz_expf(float x) {
  /* NaN → 0 here (the result is replaced by NaN below): a NaN converted to int would make
   * the exponent shift below undefined behaviour */
  float xc = x < -87.33654f ? -87.33654f : x > 88.72283f ? 88.72283f : x == x ? x : 0.0f;
  /* round to nearest by adding and subtracting 1.5·2^23 (vectorizes, unlike roundf) */
  float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = xc - n * 0.693359375f; /* ln2 split: hi part exact in float */
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float e = p * r * r + r + 1.0f;
  int32_t bits = ((int32_t)n + 127) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  float y = e * scale;
  y = x < -87.33654f ? 0.0f : y;
  return x != x ? x : y;
}

#endif
