/* CUDA bias gradient db[N] += Σ_m dout[m, :] (matmul_cpu.c's tz_cpu_bias_bwd): the
 * deterministic tiled column sum of cuda_common.cuh (16-byte loads of row chunks × column
 * strips, per-block partials in scratch, then a fixed-order final sum into db).
 * PDL: tzc_colsum's kernels are launched through cuda_common.cuh's tzc_launch (programmatic dependent
 * launch on sm_90+, TEZGAH_CUDA_PDL: cuda_common.cuh) and begin with tzc_pdl_wait. */
#include "kernels/common/cuda_common.cuh"

extern "C" void tzc_bias_bwd(tz_backend *be, tz_slice db, tz_slice dout, int M, int N) {
  TZC_PROF(be, "bias_bwd");
  TZC_PROF_WORK((double)M * N, (double)M * N * tz_dtype_size(tzc(be)->act) + 8.0 * N);
  if (M <= 0 || N <= 0) return;
  TZC_DISPATCH_ACT(be, {
    const T *d = (const T *)tzc_ptr(dout);
    float *dst = (float *)tzc_ptr(db);
    if (N % VW(T) == 0 && tzc_aligned16(d))
      tzc_colsum<VW(T), 1>(be, dst, nullptr, M, N, tzc_row_term<VW(T), T>{d, N});
    else
      tzc_colsum<1, 1>(be, dst, nullptr, M, N, tzc_row_term<1, T>{d, N});
  });
}
