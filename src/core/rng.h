/* Deterministic random numbers: PCG32 (O'Neill 2014, "PCG: A Family of Simple Fast
 * Space-Efficient Statistically Good Algorithms", pcg32_random_r) with Box-Muller normals.
 * The whole state is two uint64 so checkpoints can store and restore it exactly. */
#ifndef TZ_CORE_RNG_H
#define TZ_CORE_RNG_H
#include <stdint.h>

typedef struct {
  uint64_t state, inc;
} tz_rng;

void tz_rng_seed(tz_rng *r, uint64_t seed, uint64_t stream);
uint32_t tz_rng_u32(tz_rng *r);
/* Skip delta draws of tz_rng_u32 in O(log delta): afterwards r is where delta calls would have
 * left it (so a stream can be cut into pieces filled in parallel with the same values). */
void tz_rng_advance(tz_rng *r, uint64_t delta);
/* Uniform in [0, 1) with 24 bits of precision (exactly representable as float). */
float tz_rng_uniform(tz_rng *r);
/* Uniform integer in [0, n), n > 0, without modulo bias. */
uint32_t tz_rng_below(tz_rng *r, uint32_t n);
/* Standard normal N(0, 1) (Box-Muller, one value per call; the second is discarded so the
 * state stays two words). Exactly two tz_rng_u32 draws per call: tz_model_init_weights cuts
 * the stream by that count (tz_rng_advance(2·k) skips k normals). */
float tz_rng_normal(tz_rng *r);

#endif
