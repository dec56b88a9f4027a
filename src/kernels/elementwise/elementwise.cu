/* CUDA add (residual) and sum_sq (global gradient norm). fill, copy_rows and the dtype
 * conversions of this family belong to the runtime (src/backend/cuda).
 * PDL: the kernels here are launched through cuda_common.cuh's tzc_launch (programmatic dependent
 * launch on sm_90+, TEZGAH_CUDA_PDL: cuda_common.cuh), each beginning with tzc_pdl_wait. */
#include "kernels/common/cuda_common.cuh"

namespace {
struct AddOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

/* sum_sq: a fixed grid of SS_BLOCKS blocks (independent of the GPU), each thread sums its
 * grid-stride share of x² in fp64 in index order, blocks reduce with a fixed tree, and one
 * block adds the SS_BLOCKS partials in a fixed tree: bit-identical run to run. */
constexpr int SS_BLOCKS = 1024, SS_THREADS = 256;

template <int W>
__global__ void sum_sq_partial_k(double *part, const float *x, size_t nv, size_t n) {
  tzc_pdl_wait(); /* PDL (cuda_common.cuh): before any global access */
  __shared__ double sh[32];
  size_t g = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  double s = 0.0;
  for (size_t i = g; i < nv; i += stride) {
    float f[W];
    tzc_ld<W>(x + i * W, f);
#pragma unroll
    for (int j = 0; j < W; j++) s += (double)f[j] * (double)f[j];
  }
  size_t t = nv * W + g;
  if (t < n) s += (double)x[t] * (double)x[t];
  s = tzc_block_sum(s, sh);
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}

__global__ void sum_sq_final_k(float *out, const double *part, int np) {
  tzc_pdl_wait();
  __shared__ double sh[32];
  double s = 0.0;
  for (int i = threadIdx.x; i < np; i += blockDim.x) s += part[i];
  s = tzc_block_sum(s, sh);
  if (threadIdx.x == 0) out[0] = (float)s;
}
} // namespace

extern "C" void tzc_add(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, size_t n) {
  TZC_PROF(be, "add");
  TZC_PROF_WORK((double)n, 3.0 * n * tz_dtype_size(tzc(be)->act));
  TZC_DISPATCH_ACT(be, tzc_map<T>(be, (T *)tzc_ptr(out), (const T *)tzc_ptr(a),
                                  (const T *)tzc_ptr(b), n, AddOp()));
}

extern "C" void tzc_sum_sq(tz_backend *be, tz_slice out, tz_slice x, size_t n) {
  TZC_PROF(be, "sum_sq");
  TZC_PROF_WORK(2.0 * n, 4.0 * n);
  double *part = (double *)tzc_scratch(be, SS_BLOCKS * sizeof(double));
  const float *px = (const float *)tzc_ptr(x);
  if (tzc_aligned16(px))
    tzc_launch(be, sum_sq_partial_k<4>, dim3(SS_BLOCKS), dim3(SS_THREADS), 0, part, px, n / 4, n);
  else
    tzc_launch(be, sum_sq_partial_k<1>, dim3(SS_BLOCKS), dim3(SS_THREADS), 0, part, px, n, n);
  TZC_LAUNCHED();
  tzc_launch(be, sum_sq_final_k, dim3(1), dim3(SS_THREADS), 0, (float *)tzc_ptr(out), (const double *)part,
             SS_BLOCKS);
  TZC_LAUNCHED();
}
