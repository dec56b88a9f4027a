/* The tensor-core product shared by the few-row matmul (gemv.cu's mma_k) and the persistent
 * decoding step (decode_step.cu): mma.sync.m16n8k16, bf16 × bf16 → fp32 (PTX ISA, "Warp-level
 * matrix multiply-accumulate", sm_80+), and the two steps of a 32-element K chunk in the fragment
 * layout both kernels load with 16-byte loads: lane (g = lane/4, t = lane%4) holds 8 consecutive
 * k (k0 + 8t ..) of A's rows g and g + 8 (alo, ahi) and of B's column g (w); the first step takes
 * their first halves, the second their second halves, so the product's k order inside a chunk
 * is permuted the same way on both sides (a sum over the same k). D: rows g, g + 8, columns
 * 2t, 2t + 1 (d[0], d[1] row g; d[2], d[3] row g + 8), accumulated in place. CUDA C++ only. */
#ifndef TZ_KERNELS_CUDA_MMA_CUH
#define TZ_KERNELS_CUDA_MMA_CUH
#include <stdint.h>

__device__ __forceinline__ void tzc_mma_bf16_16816(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                                   unsigned b0, unsigned b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
  __trap(); /* hosts never launch it below sm_80 */
#endif
}

/* Both m16n8k16 steps of a 32-element chunk (the layout above). */
__device__ __forceinline__ void tzc_mma_chunk(float (&d)[4], uint4 alo, uint4 ahi, uint4 w) {
  tzc_mma_bf16_16816(d, alo.x, ahi.x, alo.y, ahi.y, w.x, w.y);
  tzc_mma_bf16_16816(d, alo.z, ahi.z, alo.w, ahi.w, w.z, w.w);
}
#endif
