/* CUDA bias gradient db[N] += Σ_m dout[m, :] (matmul_cpu.c's tz_cpu_bias_bwd): the
 * deterministic two-pass column sum of cuda_common.cuh (fixed row chunks, partials in
 * scratch, then one thread per column adds the partials in order into db). */
#include "kernels/common/cuda_common.cuh"

namespace {
template <class T>
__global__ void __launch_bounds__(TZC_COL_THREADS)
bias_part_k(float *part, const T *dout, int M, int N, int rpc) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= N) return;
  int m0 = blockIdx.y * rpc, m1 = min(M, m0 + rpc);
  float s = 0.0f;
#pragma unroll 8
  for (int m = m0; m < m1; m++) s += tzc_tof(dout[(size_t)m * N + c]);
  part[(size_t)blockIdx.y * N + c] = s;
}
} // namespace

extern "C" void tzc_bias_bwd(tz_backend *be, tz_slice db, tz_slice dout, int M, int N) {
  TZC_PROF(be, "bias_bwd");
  TZC_PROF_WORK((double)M * N, (double)M * N * tz_dtype_size(tzc(be)->act) + 8.0 * N);
  if (M <= 0 || N <= 0) return;
  cudaStream_t st = tzc(be)->stream;
  int rpc = tzc_col_rpc(M), P = tzc_col_chunks(M);
  float *part = (float *)tzc_scratch(be, (size_t)P * N * sizeof(float));
  dim3 pg(tzc_blocks(N, TZC_COL_THREADS), (unsigned)P);
  TZC_DISPATCH_ACT(be, {
    bias_part_k<T><<<pg, TZC_COL_THREADS, 0, st>>>(part, (const T *)tzc_ptr(dout), M, N, rpc);
    TZC_LAUNCHED();
  });
  tzc_colsum_final_k<<<tzc_blocks(N, TZC_COL_THREADS), TZC_COL_THREADS, 0, st>>>(
      (float *)tzc_ptr(db), part, nullptr, nullptr, P, N);
  TZC_LAUNCHED();
}
