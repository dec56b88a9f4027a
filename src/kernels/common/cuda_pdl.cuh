/* Programmatic dependent launch (PDL) for the decoding kernels (gemv.cu, attention_decode.cu):
 * device-side controls and a launcher. CUDA C++ only; sm_90+ (the controls are no-ops below, and
 * in a kernel launched without the attribute). */
#ifndef TZ_KERNELS_CUDA_PDL_CUH
#define TZ_KERNELS_CUDA_PDL_CUH
#include "kernels/common/cuda_common.cuh"

/* tzc_pdl_let_next_start: the next kernel of the stream, if launched with the attribute, may
 * start now (its blocks run up to their tzc_pdl_wait_prior). tzc_pdl_wait_prior: blocks until
 * every kernel this one depends on has finished and its writes are visible. A kernel that uses
 * them must call wait before reading anything a previous kernel of the step wrote, and every
 * block must reach wait before it returns (a later kernel's wait covers this one's only once
 * this one has finished, so the chain stays ordered). Used by the decoding kernels (gemv.cu,
 * attention_decode.cu) while a step is recorded (tzc_ctx.pdl). */
__device__ __forceinline__ void tzc_pdl_let_next_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void tzc_pdl_wait_prior() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* Launches kernel<<<grid, block, 0, st>>>(args...), with programmatic stream serialization when
 * pdl (tzc_ctx.pdl: while a decoding step is recorded; the kernel must use tzc_pdl_wait_prior as
 * above). Errors: TZC_CHECK (fatal). */
template <class... P, class... A>
void tzc_launch_pdl(void (*kernel)(P...), dim3 grid, dim3 block, cudaStream_t st, int pdl, A... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = 0;
  cfg.stream = st;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = at;
  cfg.numAttrs = pdl ? 1 : 0;
  TZC_CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
}
#endif
