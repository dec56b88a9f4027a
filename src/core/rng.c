#include "core/rng.h"

#include <math.h>

void tz_rng_seed(tz_rng *r, uint64_t seed, uint64_t stream) {
  r->state = 0;
  r->inc = (stream << 1u) | 1u;
  tz_rng_u32(r);
  r->state += seed;
  tz_rng_u32(r);
}

uint32_t tz_rng_u32(tz_rng *r) {
  uint64_t old = r->state;
  r->state = old * 6364136223846793005ULL + r->inc;
  uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
  uint32_t rot = (uint32_t)(old >> 59u);
  return (xorshifted >> rot) | (xorshifted << ((-rot) & 31));
}

/* The LCG x -> a·x + c applied delta times is x -> A·x + C with A = a^delta and C = c·(a^(delta-1)
 * + ... + a + 1) (mod 2^64); both are built by squaring: (A1, C1) after (A2, C2) composes to
 * (A1·A2, A1·C2 + C1). Brown, "Random number generation with arbitrary strides", Trans. Am.
 * Nucl. Soc. 71 (1994); O'Neill's pcg32_advance. O(log delta) multiplications. */
void tz_rng_advance(tz_rng *r, uint64_t delta) {
  uint64_t acc_mul = 1, acc_add = 0, mul = 6364136223846793005ULL, add = r->inc;
  while (delta) {
    if (delta & 1) {
      acc_mul *= mul;
      acc_add = acc_add * mul + add;
    }
    add = (mul + 1) * add;
    mul *= mul;
    delta >>= 1;
  }
  r->state = acc_mul * r->state + acc_add;
}

float tz_rng_uniform(tz_rng *r) { return (tz_rng_u32(r) >> 8) * (1.0f / 16777216.0f); }

uint32_t tz_rng_below(tz_rng *r, uint32_t n) {
  uint32_t threshold = (uint32_t)(-n) % n;
  for (;;) {
    uint32_t x = tz_rng_u32(r);
    if (x >= threshold) return x % n;
  }
}

float tz_rng_normal(tz_rng *r) {
  /* u1 in (0, 1] so log() is finite. */
  double u1 = ((tz_rng_u32(r) >> 8) + 1.0) * (1.0 / 16777216.0);
  double u2 = (tz_rng_u32(r) >> 8) * (1.0 / 16777216.0);
  return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
