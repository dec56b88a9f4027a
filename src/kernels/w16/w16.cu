// The CUDA runtime's own small kernels: the bf16 weight mirror (beside w16.wgsl, WebGPU's f16
// mirror) and fill.
//
// bf16 mirror: in --precision bf16 the runtime keeps mirror[i] = bf16(params[i]) (round to
// nearest even) for the registered flat fp32 parameter buffer; weight reads go through tzc_w().
// adamw rewrites it in its own pass; tzc_mirror_refresh covers every other write (upload,
// copy, fill into the parameters).
//
// All three are launched through cuda_common.cuh's tzc_launch (programmatic dependent launch on
// sm_90+, TEZGAH_CUDA_PDL) and begin with its tzc_pdl_wait.
#include <cuda_bf16.h>

#include "backend/cuda/cuda_internal.h"
#include "kernels/common/cuda_common.cuh"

namespace {

constexpr int kThreads = 256;

unsigned grid_for(size_t n) {
  size_t g = (n + kThreads - 1) / kThreads;
  return (unsigned)(g < 65535u * 8u ? (g ? g : 1) : 65535u * 8u); // grid-stride beyond this
}

__global__ void mirror_kernel(__nv_bfloat16 *__restrict__ dst, const float *__restrict__ src, size_t n) {
  tzc_pdl_wait(); /* before any global access */
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = __float2bfloat16_rn(src[i]);
}

/* fill: dst[0, n) = v. The elements before dst's first 16-byte boundary (head) and after the last
 * whole 16-byte vector (tail) one at a time, the rest as 16-byte stores of v repeated: a bf16
 * fill stored 2 bytes a thread before, 0.42 TB/s on an H100 (bench_cuda_ops fill
 * [16384,3072], 2026-12-06), and the backward's first step fills the residual gradient (25 MB
 * at GPT-2 124M B16 T1024) every step. The bytes written are the same. */
template <typename T>
__global__ void fill_kernel(T *__restrict__ dst, T v, size_t n) {
  tzc_pdl_wait();
  constexpr int E = 16 / sizeof(T); /* elements a vector */
  size_t head = ((16 - ((uintptr_t)dst & 15)) & 15) / sizeof(T);
  if (head > n) head = n;
  size_t nvec = (n - head) / E, tail0 = head + nvec * E;
  size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
  union {
    T e[E];
    uint4 u;
  } pat;
#pragma unroll
  for (int j = 0; j < E; j++) pat.e[j] = v;
  uint4 *vd = (uint4 *)(dst + head);
  for (size_t i = t; i < nvec; i += stride) vd[i] = pat.u;
  if (t < head) dst[t] = v;
  if (t < n - tail0) dst[tail0 + t] = v;
}

/* zero_ranges: up to ZR_MAX ranges a launch, passed by value (as adamw.cu's table); block b
 * finds its range by a scan of blk0 and zeroes ZR_CHUNK consecutive elements of it. */
constexpr int ZR_MAX = 64, ZR_CHUNK = 4096;
struct zr_table {
  int n;
  unsigned blk0[ZR_MAX + 1]; /* first block of each range; blk0[n] = the launch's blocks */
  unsigned long long off[ZR_MAX], len[ZR_MAX];
};

__global__ void zero_ranges_kernel(float *__restrict__ base, zr_table t) {
  tzc_pdl_wait();
  int r = 0;
  while (r + 1 < t.n && blockIdx.x >= t.blk0[r + 1]) r++;
  size_t i0 = (size_t)(blockIdx.x - t.blk0[r]) * ZR_CHUNK, i1 = i0 + ZR_CHUNK;
  if (i1 > t.len[r]) i1 = t.len[r];
  float *d = base + t.off[r];
  for (size_t i = i0 + threadIdx.x; i < i1; i += blockDim.x) d[i] = 0.0f;
}

/* fill_kernel<T> over n elements: a thread a 16-byte vector (its head and tail elements go to
 * the first threads) */
template <typename T> void fill_launch(tz_backend *be, T *dst, T v, size_t n) {
  constexpr size_t E = 16 / sizeof(T);
  tzc_launch(be, fill_kernel<T>, dim3(grid_for((n + E - 1) / E)), dim3(kThreads), 0, dst, v, n);
}

} // namespace

extern "C" void tzc_zero_ranges(tz_backend *be, float *base, const size_t *ranges, int n) {
  TZC_PROF(be, "fill");
  size_t total = 0;
  for (int i = 0; i < n; i++) total += ranges[2 * i + 1];
  TZC_PROF_WORK(0, 4.0 * total);
  for (int i0 = 0; i0 < n;) {
    zr_table t;
    t.n = 0;
    unsigned blocks = 0;
    for (; i0 < n && t.n < ZR_MAX; i0++) {
      size_t len = ranges[2 * i0 + 1];
      if (!len) continue;
      t.blk0[t.n] = blocks, t.off[t.n] = ranges[2 * i0], t.len[t.n] = len, t.n++;
      blocks += (unsigned)((len + ZR_CHUNK - 1) / ZR_CHUNK);
    }
    if (!t.n) break;
    t.blk0[t.n] = blocks;
    tzc_launch(be, zero_ranges_kernel, dim3(blocks), dim3(kThreads), 0, base, t);
    TZC_LAUNCHED();
  }
}

extern "C" void tzc_mirror_refresh(tz_backend *be, size_t first, size_t n) {
  tzc_ctx *c = tzc(be);
  if (!c->params_bf16 || !n) return;
  TZC_PROF(be, "mirror");
  TZC_PROF_WORK(0, 6.0 * n);
  tzc_launch(be, mirror_kernel, dim3(grid_for(n)), dim3(kThreads), 0, (__nv_bfloat16 *)c->params_bf16 + first,
             (const float *)c->params->ptr + first, n);
  TZC_LAUNCHED();
}

extern "C" void tzc_fill(tz_backend *be, tz_slice dst, float value, size_t n, tz_dtype dt) {
  if (!n) return;
  TZC_PROF(be, "fill");
  TZC_PROF_WORK(0, (dt == TZ_BF16 ? 2.0 : 4.0) * n);
  if (dt == TZ_BF16)
    fill_launch(be, (__nv_bfloat16 *)tzc_ptr(dst), __float2bfloat16_rn(value), n);
  else
    fill_launch(be, (float *)tzc_ptr(dst), value, n);
  TZC_LAUNCHED();
}
