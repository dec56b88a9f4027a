/* CUDA GeLU, tanh form (Hendrycks & Gimpel 2016): gelu_cpu.c's math, elementwise in fp32 on
 * act tensors (float or bf16), 16-byte vectors when aligned. */
#include "kernels/common/cuda_common.cuh"

namespace {
#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

/* the CPU's clamp of x inside the tanh argument (x³ cannot overflow; exact, see gelu_cpu.c) */
__device__ __forceinline__ float clamp100(float x) { return fminf(fmaxf(x, -100.0f), 100.0f); }

struct GeluFwd {
  __device__ float operator()(float x, float) const {
    float xc = clamp100(x);
    float u = GELU_K * (xc + 0.044715f * xc * xc * xc);
    return 0.5f * x * (1.0f + tanhf(u));
  }
};
struct GeluBwd { /* (x, dout) -> dinp */
  __device__ float operator()(float x, float dy) const {
    float xc = clamp100(x);
    float u = GELU_K * (xc + 0.044715f * xc * xc * xc);
    float th = tanhf(u);
    float sech2 = 1.0f - th * th;
    float g = 0.5f * (1.0f + th) + 0.5f * xc * sech2 * GELU_K * (1.0f + 3.0f * 0.044715f * xc * xc);
    return g * dy;
  }
};
} // namespace

extern "C" void tzc_gelu_fwd(tz_backend *be, tz_slice out, tz_slice inp, size_t n) {
  TZC_PROF(be, "gelu_fwd");
  TZC_PROF_WORK(10.0 * n, 2.0 * n * tz_dtype_size(tzc(be)->act));
  TZC_DISPATCH_ACT(be, tzc_map<T>(be, (T *)tzc_ptr(out), (const T *)tzc_ptr(inp),
                                  (const T *)nullptr, n, GeluFwd()));
}

extern "C" void tzc_gelu_bwd(tz_backend *be, tz_slice dinp, tz_slice inp, tz_slice dout,
                             size_t n) {
  TZC_PROF(be, "gelu_bwd");
  TZC_PROF_WORK(20.0 * n, 3.0 * n * tz_dtype_size(tzc(be)->act));
  TZC_DISPATCH_ACT(be, tzc_map<T>(be, (T *)tzc_ptr(dinp), (const T *)tzc_ptr(inp),
                                  (const T *)tzc_ptr(dout), n, GeluBwd()));
}
