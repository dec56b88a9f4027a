/* bf16 <-> fp32 on the host: bf16 is the top 16 bits of an IEEE-754 binary32 (1 sign, 8
 * exponent, 7 mantissa bits). Shared by the format readers and writers (src/formats: llm.c
 * version 5, safetensors) and the CUDA runtime's host-side weight conversion (its bf16 mirror
 * of the parameters, backend_cuda_mem.c), so both round as the mirror kernel does
 * (__float2bfloat16_rn: round to nearest, ties to even). */
#ifndef TZ_CORE_BF16_H
#define TZ_CORE_BF16_H
#include <stdint.h>

static inline float tz_bf16_to_f32(uint16_t h) {
  union { uint32_t u; float f; } x = {(uint32_t)h << 16};
  return x.f;
}
/* Round to nearest, ties to even; a NaN stays a (quiet) NaN with its sign; values beyond the
 * largest bf16 round to ±inf. */
static inline uint16_t tz_f32_to_bf16(float f) {
  union { float f; uint32_t u; } x = {f};
  if ((x.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x.u >> 16) | 0x40); /* quiet NaN */
  x.u += 0x7fffu + ((x.u >> 16) & 1u);
  return (uint16_t)(x.u >> 16);
}

#endif
