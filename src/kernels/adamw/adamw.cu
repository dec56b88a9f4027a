/* CUDA multi-tensor AdamW (Loshchilov & Hutter 2019; adamw_cpu.c's math, bit for bit in fp32)
 * with the fused bf16 weight mirror.
 *
 * Multi-tensor apply without allocation: the range list is cut into launches of up to
 * AW_MAX ranges, each passed by value as a kernel parameter (offsets, lengths, decay and the
 * first block of each range); block b finds its range by a scan of that table and updates
 * AW_CHUNK consecutive elements of it. Nothing is cached between calls, so a caller may
 * change its ranges freely. GPT-2 124M's ~150 ranges take ~5 launches.
 *
 * Math order: the host computes the bias corrections 1 − β^t with powf exactly like the CPU,
 * and the kernel uses explicitly rounded fp32 operations in the CPU's evaluation order (no
 * FMA contraction, IEEE division and sqrt), so params/m/v match the CPU reference exactly.
 * When params is the buffer registered with params_mirror and the backend keeps a bf16
 * mirror, the new parameter is also written there (round to nearest even) in the same pass.
 * When the four fp32 arrays are 16-byte aligned (and the mirror 8-byte aligned), each block's
 * chunk is updated with float4 accesses (a scalar head and tail where a range starts or ends
 * off a multiple of 4 elements); elementwise, so the results are the same either way.
 * PDL: the kernels here are launched through cuda_common.cuh's tzc_launch (programmatic dependent
 * launch on sm_90+, TEZGAH_CUDA_PDL: cuda_common.cuh), each beginning with tzc_pdl_wait. */
#include "kernels/common/cuda_common.cuh"

namespace {
constexpr int AW_MAX = 32, AW_CHUNK = 4096, AW_THREADS = 256;

struct aw_table {
  int n;                     /* ranges in this launch */
  unsigned blk0[AW_MAX + 1]; /* first block of each range; blk0[n] = blocks of the launch */
  unsigned long long off[AW_MAX], len[AW_MAX];
  float wd[AW_MAX]; /* weight_decay · decay */
};
struct aw_hp {
  float lr, b1, b2, eps, gs, c1, c2;
};

/* one element, in the CPU's operation order (explicit roundings, no FMA contraction) */
__device__ __forceinline__ float aw_one(float &pi, float gi, float &mi, float &vi, float wd,
                                       const aw_hp &h) {
  float ob1 = 1.0f - h.b1, ob2 = 1.0f - h.b2;
  gi = __fmul_rn(gi, h.gs);
  mi = __fadd_rn(__fmul_rn(h.b1, mi), __fmul_rn(ob1, gi));
  vi = __fadd_rn(__fmul_rn(h.b2, vi), __fmul_rn(__fmul_rn(ob2, gi), gi));
  float den = __fadd_rn(__fsqrt_rn(__fdiv_rn(vi, h.c2)), h.eps);
  float upd = __fadd_rn(__fdiv_rn(__fdiv_rn(mi, h.c1), den), __fmul_rn(wd, pi));
  pi = __fsub_rn(pi, __fmul_rn(h.lr, upd));
  return pi;
}

__device__ __forceinline__ void aw_scalar(float *p, const float *g, float *m, float *v,
                                          tzc_bf16 *mirror, size_t i, float wd, const aw_hp &h) {
  float pi = p[i], mi = m[i], vi = v[i];
  aw_one(pi, g[i], mi, vi, wd, h);
  m[i] = mi, v[i] = vi, p[i] = pi;
  if (mirror) mirror[i] = __float2bfloat16_rn(pi);
}

/* VEC: p, g, m, v 16-byte aligned and the mirror 8-byte aligned (host check), so element i
 * is vector-aligned in all of them when i % 4 == 0: a scalar head up to the first such i,
 * float4 accesses (4 bf16 = 8 bytes for the mirror), a scalar tail. */
template <bool VEC>
__global__ void __launch_bounds__(AW_THREADS)
adamw_k(float *p, const float *g, float *m, float *v, tzc_bf16 *mirror, aw_table tb, aw_hp h) {
  tzc_pdl_wait(); /* PDL (cuda_common.cuh): before any global access or return */
  unsigned b = blockIdx.x;
  int r = 0;
  while (r + 1 < tb.n && tb.blk0[r + 1] <= b) r++;
  size_t start = tb.off[r] + (size_t)(b - tb.blk0[r]) * AW_CHUNK;
  size_t end = tb.off[r] + tb.len[r];
  if (start + AW_CHUNK < end) end = start + AW_CHUNK;
  float wd = tb.wd[r];
  if (!VEC) {
#pragma unroll 4
    for (size_t i = start + threadIdx.x; i < end; i += AW_THREADS) aw_scalar(p, g, m, v, mirror, i, wd, h);
    return;
  }
  size_t vs = (start + 3) & ~(size_t)3;
  if (vs > end) vs = end;
  size_t ve = vs + ((end - vs) & ~(size_t)3);
  if (threadIdx.x < vs - start) aw_scalar(p, g, m, v, mirror, start + threadIdx.x, wd, h);
  if (threadIdx.x < end - ve) aw_scalar(p, g, m, v, mirror, ve + threadIdx.x, wd, h);
#pragma unroll 4
  for (size_t i = vs + 4 * (size_t)threadIdx.x; i < ve; i += 4 * AW_THREADS) {
    float4 P = *reinterpret_cast<float4 *>(p + i), G = *reinterpret_cast<const float4 *>(g + i);
    float4 M = *reinterpret_cast<float4 *>(m + i), V = *reinterpret_cast<float4 *>(v + i);
    aw_one(P.x, G.x, M.x, V.x, wd, h);
    aw_one(P.y, G.y, M.y, V.y, wd, h);
    aw_one(P.z, G.z, M.z, V.z, wd, h);
    aw_one(P.w, G.w, M.w, V.w, wd, h);
    *reinterpret_cast<float4 *>(m + i) = M;
    *reinterpret_cast<float4 *>(v + i) = V;
    *reinterpret_cast<float4 *>(p + i) = P;
    if (mirror) {
      __nv_bfloat162 lo = __floats2bfloat162_rn(P.x, P.y), hi = __floats2bfloat162_rn(P.z, P.w);
      uint2 u;
      u.x = *reinterpret_cast<unsigned *>(&lo);
      u.y = *reinterpret_cast<unsigned *>(&hi);
      *reinterpret_cast<uint2 *>(mirror + i) = u;
    }
  }
}
} // namespace

extern "C" void tzc_adamw(tz_backend *be, tz_slice params, tz_slice grads, tz_slice m,
                          tz_slice v, const tz_range *ranges, int n_ranges,
                          const tz_adamw_hp *hp) {
  TZC_PROF(be, "adamw");
  tzc_ctx *c = tzc(be);
  TZC_ASSERT(hp->t >= 1); /* bias correction is 1-based */
  bool mir = c->params_bf16 && params.buf == c->params;
  size_t total = 0;
  for (int r = 0; r < n_ranges; r++) total += ranges[r].n;
  TZC_PROF_WORK(12.0 * total, (28.0 + (mir ? 2.0 : 0.0)) * total);
  aw_hp h;
  h.lr = hp->lr, h.b1 = hp->beta1, h.b2 = hp->beta2, h.eps = hp->eps, h.gs = hp->grad_scale;
  h.c1 = 1.0f - powf(hp->beta1, (float)hp->t);
  h.c2 = 1.0f - powf(hp->beta2, (float)hp->t);
  float *p = (float *)tzc_ptr(params), *mm = (float *)tzc_ptr(m), *vv = (float *)tzc_ptr(v);
  const float *g = (const float *)tzc_ptr(grads);
  tzc_bf16 *mirror = mir ? (tzc_bf16 *)c->params_bf16 + params.off / sizeof(float) : nullptr;
  bool vec = tzc_aligned16(p) && tzc_aligned16(g) && tzc_aligned16(mm) && tzc_aligned16(vv) &&
             (!mirror || ((uintptr_t)mirror & 7) == 0);
  for (int r0 = 0; r0 < n_ranges; r0 += AW_MAX) {
    aw_table tb;
    tb.n = 0;
    unsigned blocks = 0;
    for (int r = r0; r < n_ranges && r < r0 + AW_MAX; r++) {
      if (ranges[r].n == 0) continue;
      size_t nb = (ranges[r].n + AW_CHUNK - 1) / AW_CHUNK;
      tb.blk0[tb.n] = blocks;
      tb.off[tb.n] = ranges[r].off;
      tb.len[tb.n] = ranges[r].n;
      tb.wd[tb.n] = hp->weight_decay * ranges[r].decay;
      blocks += (unsigned)nb;
      tb.n++;
    }
    if (!tb.n) continue;
    tb.blk0[tb.n] = blocks;
    if (vec)
      tzc_launch(be, adamw_k<true>, dim3(blocks), dim3(AW_THREADS), 0, p, g, mm, vv, mirror, tb, h);
    else
      tzc_launch(be, adamw_k<false>, dim3(blocks), dim3(AW_THREADS), 0, p, g, mm, vv, mirror, tb, h);
    TZC_LAUNCHED();
  }
}
