/* Device helpers shared by the CUDA kernel files (src/kernels/<op>/<op>.cu): act-dtype
 * loads/stores as fp32, 16-byte vector loads, deterministic warp/block reductions, the
 * float/bf16 dispatch on tzc(be)->act. Header-only, CUDA C++ only.
 *
 * Vectors: a "vector" of act type T is 16 bytes: 4 floats or 8 bf16 (VW<T>). Kernels are
 * templated on W ∈ {1, VW<T>}: W = 1 is the scalar path for views that are not 16-byte
 * aligned (weight slices of the flat parameter buffer, odd row lengths); tzc_aligned16()
 * decides on the host. Every reduction here combines in a fixed order (shuffle trees,
 * then warps in index order), so results are bit-identical run to run. */
#ifndef TZ_KERNELS_CUDA_COMMON_CUH
#define TZ_KERNELS_CUDA_COMMON_CUH
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "backend/cuda/cuda_internal.h"

/* core/error.h's tz_panic (its _Noreturn is C-only). */
extern "C" [[noreturn]] void tz_panic(const char *file, int line, const char *what);
#define TZC_ASSERT(cond)                                                                  \
  do {                                                                                    \
    if (!(cond)) tz_panic(__FILE__, __LINE__, #cond);                                     \
  } while (0)

typedef __nv_bfloat16 tzc_bf16;

/* ---- programmatic dependent launch (PDL, sm_90+) for our own kernels ----
 * Why: a training step (GPT-2 124M, B16 T1024 bf16: ~30 ms on an H100) runs several hundred
 * kernels, and each memory-bound one (the norms, column sums, cross-entropy, AdamW, GeLU, the
 * embeddings, RoPE, SwiGLU, add, fill, sum_sq) pays a kernel boundary of ~1-3 us: the previous
 * kernel drains, the next is launched, its blocks ramp up. With PDL a kernel launched with
 * cudaLaunchAttributeProgrammaticStreamSerialization (tzc_launch below) may be scheduled before
 * the previous kernel of its stream has finished; its blocks run up to griddepcontrol.wait, which
 * returns once every kernel it depends on has completed and flushed its writes. So the launch and
 * the block scheduling overlap the previous kernel's tail, and what the kernel computes is what it
 * computed before, bit for bit.
 *
 * tzc_pdl_wait(): the FIRST statement of every kernel launched through tzc_launch, before any
 * global load or store and before any early return, in every block. It waits (griddepcontrol.wait)
 * and then lets the next kernel of the stream be scheduled (griddepcontrol.launch_dependents:
 * its blocks take what this kernel's last wave leaves free and wait in turn). Waiting before the
 * trigger keeps at most one kernel waiting ahead; and since every block of a PDL-launched kernel
 * waits, its completion implies its predecessor's, so a later kernel's wait covers the whole
 * chain (a PDL-launched kernel without the wait would break this: never pass tzc_launch a kernel
 * that does not begin with tzc_pdl_wait). Where the trigger goes (here after the wait; at the
 * kernel's start, or none: the implicit one at its end) was not compared. Both are no-ops in a
 * kernel launched without the attribute (a plain launch, or TEZGAH_CUDA_PDL=0) and are not
 * compiled below sm_90. The decoding kernels (gemv.cu,
 * attention_decode.cu) have their own split controls (cuda_pdl.cuh: a gemv loads weights before
 * its wait); their launches are PDL only while a decoding step is recorded (tzc_ctx.pdl).
 *
 * Switch: TEZGAH_CUDA_PDL=1 (the default on compute capability >= 9.0 of the backend's device),
 * =0 plain launches (the A/B); checked at backend creation (tzc_pdl_env_check: another value is
 * a one-line error) and kept in tzc_ctx.pdl_off, also set under TEZGAH_PROFILE (per-op events)
 * and by a decoding recording that failed with programmatic launches (backend_cuda_graph.c: it
 * is made again without them).
 * Graph capture: a cudaLaunchKernelEx with the attribute is captured as a programmatic edge
 * (CUDA 12.3+; the build needs 13.0), so recorded decoding steps keep it. Streams: PDL applies
 * between consecutive kernels of one stream; the side queue's event waits (backend_cuda_side.c)
 * and copies are ordinary full dependencies, and cuBLASLt's / cuDNN's kernels are launched by
 * those libraries as they are (a tzc_launch kernel after one still waits for it to finish).
 * Measured (H100, 2026-12-06; docs/PERF.md): test_pdl_same_bits passed (bits equal under 0 and
 * 1); GPT-2 124M B16 T1024 trains 0.3 % faster, the llama shape 0.5 % (four A/B pairs each).
 */
__device__ __forceinline__ void tzc_pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
/* kernel<<<grid, block, smem, tzc(be)->stream>>>(args...), with programmatic stream serialization
 * unless tzc(be)->pdl_off; the kernel must begin with tzc_pdl_wait() (above). The side queue swaps
 * tzc(be)->stream (cuda_internal.h), so launches follow it. Launch errors are fatal (TZC_CHECK);
 * callers still end with TZC_LAUNCHED() as every launch does. */
template <class... P, class... A>
static inline void tzc_launch(tz_backend *be, void (*kernel)(P...), dim3 grid, dim3 block, size_t smem,
                              A... args) {
  tzc_ctx *c = tzc(be);
  if (c->pdl_off) {
    kernel<<<grid, block, smem, c->stream>>>(args...); /* exactly the launch before PDL: the A/B's 0 */
    return;
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = c->stream;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  TZC_CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
}

/* ---- scalar conversions (fp32 compute, round to nearest even on store) ---- */
__device__ __forceinline__ float tzc_tof(float x) { return x; }
__device__ __forceinline__ float tzc_tof(tzc_bf16 x) { return __bfloat162float(x); }
template <class T> __device__ __forceinline__ T tzc_from(float x);
template <> __device__ __forceinline__ float tzc_from<float>(float x) { return x; }
template <> __device__ __forceinline__ tzc_bf16 tzc_from<tzc_bf16>(float x) {
  return __float2bfloat16_rn(x);
}

/* Elements of T in 16 bytes. */
template <class T> struct tzc_vw { static constexpr int value = 16 / (int)sizeof(T); };
#define VW(T) (tzc_vw<T>::value)

/* W consecutive elements at p (p 16-byte aligned when W > 1) into f[0..W). */
template <int W, class T> __device__ __forceinline__ void tzc_ld(const T *p, float *f) {
  if constexpr (W == 1) {
    f[0] = tzc_tof(p[0]);
  } else {
    static_assert(W * sizeof(T) == 16, "vector loads are 16 bytes");
    int4 r = *reinterpret_cast<const int4 *>(p);
    const T *e = reinterpret_cast<const T *>(&r);
#pragma unroll
    for (int i = 0; i < W; i++) f[i] = tzc_tof(e[i]);
  }
}
template <int W, class T> __device__ __forceinline__ void tzc_st(T *p, const float *f) {
  if constexpr (W == 1) {
    p[0] = tzc_from<T>(f[0]);
  } else {
    static_assert(W * sizeof(T) == 16, "vector stores are 16 bytes");
    int4 r;
    T *e = reinterpret_cast<T *>(&r);
#pragma unroll
    for (int i = 0; i < W; i++) e[i] = tzc_from<T>(f[i]);
    *reinterpret_cast<int4 *>(p) = r;
  }
}

/* W consecutive fp32 values (parameter gradients next to act vectors of width W): W/4
 * float4 accesses when W > 1 (p 16-byte aligned), a scalar one otherwise. */
template <int W> __device__ __forceinline__ void tzc_ld_f32(const float *p, float *f) {
  if constexpr (W == 1) {
    f[0] = p[0];
  } else {
    static_assert(W % 4 == 0, "fp32 vectors are float4s");
#pragma unroll
    for (int k = 0; k < W / 4; k++) {
      float4 r = reinterpret_cast<const float4 *>(p)[k];
      f[4 * k] = r.x, f[4 * k + 1] = r.y, f[4 * k + 2] = r.z, f[4 * k + 3] = r.w;
    }
  }
}
template <int W> __device__ __forceinline__ void tzc_st_f32(float *p, const float *f) {
  if constexpr (W == 1) {
    p[0] = f[0];
  } else {
    static_assert(W % 4 == 0, "fp32 vectors are float4s");
#pragma unroll
    for (int k = 0; k < W / 4; k++)
      reinterpret_cast<float4 *>(p)[k] = make_float4(f[4 * k], f[4 * k + 1], f[4 * k + 2], f[4 * k + 3]);
  }
}

/* GeLU, tanh form (Hendrycks & Gimpel 2016), gelu.cu's forward: x·σ(2u) with u =
 * √(2/π)(x + 0.044715x³), x clamped to ±100 inside u and the exponent to 80 (no inf/NaN); for
 * gelu.cu's elementwise op and the kernels that apply it in an epilogue (gemv.cu, decode_step.cu). */
__device__ __forceinline__ float tzc_gelu_fwd1(float x) {
  const float xc = fminf(fmaxf(x, -100.0f), 100.0f);
  const float u = 0.7978845608028654f * (xc + 0.044715f * xc * xc * xc);
  return __fdividef(x, 1.0f + __expf(fminf(-2.0f * u, 80.0f)));
}
/* Its derivative (gelu.cu's backward): gelu'(x) = σ + 2eσ²·x·√(2/π)(1 + 3·0.044715x²)
 * with e = exp(−2u), σ = 1/(1 + e) (0.5·sech²u = 2eσ²); also matmul.cu's fallback kernel of the
 * DGELU epilogue. */
__device__ __forceinline__ float tzc_gelu_grad1(float x) {
  const float xc = fminf(fmaxf(x, -100.0f), 100.0f);
  const float u = 0.7978845608028654f * (xc + 0.044715f * xc * xc * xc);
  const float e = __expf(fminf(-2.0f * u, 80.0f));
  const float s = __fdividef(1.0f, 1.0f + e);
  return s + 2.0f * (e * s) * s * xc * 0.7978845608028654f * (1.0f + 3.0f * 0.044715f * xc * xc);
}

/* ---- reductions (fixed order: deterministic) ---- */
__device__ __forceinline__ float tzc_warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v; /* every lane holds the same value (xor butterfly: same order in every lane) */
}
__device__ __forceinline__ double tzc_warp_sum(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float tzc_warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
/* Sum over the block (blockDim.x a multiple of 32, ≤ 1024); every thread gets the result.
 * `sh` is __shared__ scratch of ≥ 32 elements; the call ends with the scratch free again
 * (a leading __syncthreads protects a previous call's readers). */
template <class F> __device__ __forceinline__ F tzc_block_sum(F v, F *sh) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  v = tzc_warp_sum(v);
  __syncthreads();
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  F t = lane < nw ? sh[lane] : (F)0;
  return tzc_warp_sum(t);
}

/* ---- column sums (bias_bwd, the norms' dw/db): deterministic, two kernels ----
 * Pass 1 (tzc_colsum_part_k): block (strip, chunk) owns a strip of 32·W columns (each lane W
 * consecutive columns, 16-byte loads when W > 1) and a chunk of `rpc` rows; warp w adds rows
 * n0 + w, n0 + w + 8, ... in increasing order (4 rows' loads in flight per step), then the 8
 * warps' sums are added in warp order and written to scratch part[chunk, c]. Pass 2
 * (tzc_colsum_final_k): per column, 8 threads add every 8th partial in chunk order, the 8 sums
 * are added in order, and the total is added (+=) into the fp32 gradient. The chunking
 * depends only on (N, C, W), so a given call is bit-identical run to run (and across GPUs).
 *
 * Term: a functor `void operator()(int n, int c, float *v, float *u) const` that writes the
 * W summands of row n, columns c..c+W into v (and, for two sums, u). */
constexpr int TZC_CS_WARPS = 8;
/* rows per chunk: about 1536 blocks in all, at least 64 rows (8 per warp) per block */
static inline int tzc_cs_rpc(int N, int strips) {
  int target = 1536 / strips;
  if (target < 1) target = 1;
  int r = (N + target - 1) / target;
  return r < 64 ? 64 : r;
}

/* dst[c] += Σ_p part[p·C + c] (fixed order), for 1 to 3 gradients (dst2/part2, dst3/part3 may
 * be NULL; a NULL dst2 ends the list). Block: 32 columns × 16 groups; group y adds partials y,
 * y + 16, ... in order, then the 16 group sums are added in order. Gradient q is blockIdx.y's
 * (grid.y = how many, tzc_colsum_final below): the three of layernorm_bwd_rb side by side, not one
 * after another in the same 24 blocks (C 768), which left the kernel waiting on one column's
 * chain of loads at a time. U partials' loads in flight a thread (the same adds, the same order). */
constexpr int TZC_CF_GROUPS = 16;
template <int U>
static __global__ void __launch_bounds__(32 * TZC_CF_GROUPS)
tzc_colsum_final_k(float *dst, const float *part, float *dst2, const float *part2, float *dst3, const float *part3,
                   int P, int C) {
  tzc_pdl_wait();
  __shared__ float sh[TZC_CF_GROUPS][33];
  int lane = threadIdx.x & 31, y = threadIdx.x >> 5, c = blockIdx.x * 32 + lane;
  for (int q = blockIdx.y; q < 3; q += gridDim.y) {
    float *d = q == 2 ? dst3 : q ? dst2 : dst;
    const float *pp = q == 2 ? part3 : q ? part2 : part;
    if (!d) break;
    if (q != (int)blockIdx.y) __syncthreads();
    float s = 0.0f;
    if (c < C) {
#pragma unroll U
      for (int p = y; p < P; p += TZC_CF_GROUPS) s += pp[(size_t)p * C + c];
    }
    sh[y][lane] = s;
    __syncthreads();
    if (y == 0 && c < C) {
      float t = 0.0f;
#pragma unroll
      for (int w = 0; w < TZC_CF_GROUPS; w++) t += sh[w][lane];
      d[c] += t;
    }
  }
}
/* tzc_colsum_final_k's launch on stream st for P partials of C columns and the gradients given:
 * one row of blocks per gradient, 16 loads in flight a thread. Measured against the old launch
 * (the gradients one after another in one row of blocks, 8 in flight; H100, 2026-12-06,
 * bench_cuda_ops at C 768, 16384 rows): layernorm_bwd_rb 59.2 -> 52.4 us a call, layernorm_bwd
 * 52.6 -> 49.8, rmsnorm_bwd and bias_bwd unchanged; GPT-2 124M and llama training within noise,
 * losses identical bit for bit. */
static inline void tzc_colsum_final(tz_backend *be, float *dst, const float *part, float *dst2, const float *part2,
                                    float *dst3, const float *part3, int P, int C) {
  const unsigned nq = dst2 ? (dst3 ? 3 : 2) : 1;
  const dim3 grid((unsigned)((C + 31) / 32), nq);
  tzc_launch(be, tzc_colsum_final_k<16>, grid, dim3(32 * TZC_CF_GROUPS), 0, dst, part, dst2, part2, dst3, part3, P,
             C);
}

template <int W, int NA, class Term>
__global__ void __launch_bounds__(32 * TZC_CS_WARPS)
tzc_colsum_part_k(float *part, float *part2, int N, int C, int rpc, Term term) {
  tzc_pdl_wait();
  __shared__ float sh[TZC_CS_WARPS][32 * W];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int c = (blockIdx.x * 32 + lane) * W;
  int n0 = blockIdx.y * rpc, n1 = min(N, n0 + rpc);
  float a[W], b[W];
#pragma unroll
  for (int j = 0; j < W; j++) a[j] = 0.0f, b[j] = 0.0f;
  if (c < C) { /* C % W == 0 when W > 1 */
    int n = n0 + warp;
    for (; n + 3 * TZC_CS_WARPS < n1; n += 4 * TZC_CS_WARPS) {
      float v[4][W], u[4][W];
#pragma unroll
      for (int k = 0; k < 4; k++) term(n + k * TZC_CS_WARPS, c, v[k], u[k]);
#pragma unroll
      for (int k = 0; k < 4; k++)
#pragma unroll
        for (int j = 0; j < W; j++) {
          a[j] += v[k][j];
          if (NA == 2) b[j] += u[k][j];
        }
    }
    for (; n < n1; n += TZC_CS_WARPS) {
      float v[W], u[W];
      term(n, c, v, u);
#pragma unroll
      for (int j = 0; j < W; j++) {
        a[j] += v[j];
        if (NA == 2) b[j] += u[j];
      }
    }
  }
  int t = threadIdx.x, cc = blockIdx.x * 32 * W + t;
#pragma unroll
  for (int q = 0; q < NA; q++) {
    if (q) __syncthreads(); /* the first sum's readers are done with sh */
#pragma unroll
    for (int j = 0; j < W; j++) sh[warp][lane * W + j] = q ? b[j] : a[j];
    __syncthreads();
    if (t < 32 * W && cc < C) {
      float s = 0.0f;
#pragma unroll
      for (int w = 0; w < TZC_CS_WARPS; w++) s += sh[w][t];
      (q ? part2 : part)[(size_t)blockIdx.y * C + cc] = s;
    }
  }
}

/* ---- host side ---- */
static inline bool tzc_aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }
static inline unsigned tzc_blocks(size_t work, int per_block) {
  size_t b = (work + per_block - 1) / per_block;
  return (unsigned)(b ? b : 1);
}
/* Carve consecutive 256-byte-aligned pieces out of one tzc_scratch allocation. */
static inline size_t tzc_round256(size_t b) { return (b + 255) & ~(size_t)255; }
/* dst[c] += Σ_n term(n, c) (and dst2 += the second sum when NA = 2) over N rows, C columns;
 * W > 1 needs C % W == 0 and every row start the term reads 16-byte aligned. */
/* The plain term: row n's W values of x [N, C] (bias_bwd's db = Σ_n dout[n, :]; layernorm_bwd_rb's
 * fallback, on dinp before the rows kernel adds to it). In an anonymous namespace like every other
 * term, so that the column-sum kernels it instantiates stay local to each .cu file. */
namespace {
template <int W, class T> struct tzc_row_term {
  const T *x;
  int C;
  __device__ __forceinline__ void operator()(int n, int c, float *v, float *) const {
    tzc_ld<W>(x + (size_t)n * C + c, v);
  }
};
} // namespace
template <int W, int NA, class Term>
static void tzc_colsum(tz_backend *be, float *dst, float *dst2, int N, int C, const Term &term) {
  if (N <= 0 || C <= 0) return;
  int strips = (C + 32 * W - 1) / (32 * W);
  int rpc = tzc_cs_rpc(N, strips), P = (N + rpc - 1) / rpc;
  size_t pb = tzc_round256((size_t)P * C * sizeof(float));
  char *s = (char *)tzc_scratch(be, NA * pb);
  float *part = (float *)s, *part2 = NA == 2 ? (float *)(s + pb) : nullptr;
  tzc_launch(be, tzc_colsum_part_k<W, NA, Term>, dim3((unsigned)strips, (unsigned)P), dim3(32 * TZC_CS_WARPS), 0,
             part, part2, N, C, rpc, term);
  TZC_LAUNCHED();
  tzc_colsum_final(be, dst, part, NA == 2 ? dst2 : nullptr, part2, nullptr, nullptr, P, C);
  TZC_LAUNCHED();
}

/* ---- elementwise maps ---- */
/* out[i] = op(a[i], b ? b[i] : 0) for i < n; out may alias a or b (each element is read and
 * written by one thread). Vectors [0, nv·W), then the scalar tail [nv·W, n) by the first
 * threads of the grid. */
template <int W, class T, class Op>
__global__ void tzc_map_k(T *out, const T *a, const T *b, size_t nv, size_t n, Op op) {
  tzc_pdl_wait();
  size_t g = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = g; i < nv; i += stride) {
    float x[W], y[W];
    tzc_ld<W>(a + i * W, x);
    if (b) {
      tzc_ld<W>(b + i * W, y);
    } else {
#pragma unroll
      for (int j = 0; j < W; j++) y[j] = 0.0f;
    }
#pragma unroll
    for (int j = 0; j < W; j++) x[j] = op(x[j], y[j]);
    tzc_st<W>(out + i * W, x);
  }
  size_t t = nv * W + g;
  if (t < n) out[t] = tzc_from<T>(op(tzc_tof(a[t]), b ? tzc_tof(b[t]) : 0.0f));
}
template <class T, class Op>
static void tzc_map(tz_backend *be, T *out, const T *a, const T *b, size_t n, Op op) {
  if (n == 0) return;
  const int threads = 256;
  if (tzc_aligned16(out) && tzc_aligned16(a) && (!b || tzc_aligned16(b))) {
    constexpr int W = VW(T);
    size_t nv = n / W, work = nv > n - nv * W ? nv : n - nv * W;
    tzc_launch(be, tzc_map_k<W, T, Op>, dim3(tzc_blocks(work, threads)), dim3(threads), 0, out, a, b, nv, n, op);
  } else {
    tzc_launch(be, tzc_map_k<1, T, Op>, dim3(tzc_blocks(n, threads)), dim3(threads), 0, out, a, b, n, n, op);
  }
  TZC_LAUNCHED();
}

/* Run `body` with `T` bound to the act element type of `be` (float or __nv_bfloat16). */
#define TZC_DISPATCH_ACT(be, ...)                                                         \
  do {                                                                                    \
    if (tzc(be)->act == TZ_BF16) {                                                        \
      typedef tzc_bf16 T;                                                                 \
      __VA_ARGS__;                                                                        \
    } else {                                                                              \
      typedef float T;                                                                    \
      __VA_ARGS__;                                                                        \
    }                                                                                     \
  } while (0)

#endif
