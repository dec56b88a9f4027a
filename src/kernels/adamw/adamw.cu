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
 * mirror, the new parameter is also written there (round to nearest even) in the same pass. */
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

__global__ void __launch_bounds__(AW_THREADS)
adamw_k(float *p, const float *g, float *m, float *v, tzc_bf16 *mirror, aw_table tb, aw_hp h) {
  unsigned b = blockIdx.x;
  int r = 0;
  while (r + 1 < tb.n && tb.blk0[r + 1] <= b) r++;
  size_t start = tb.off[r] + (size_t)(b - tb.blk0[r]) * AW_CHUNK;
  size_t end = tb.off[r] + tb.len[r];
  if (start + AW_CHUNK < end) end = start + AW_CHUNK;
  float wd = tb.wd[r], ob1 = 1.0f - h.b1, ob2 = 1.0f - h.b2;
#pragma unroll 4
  for (size_t i = start + threadIdx.x; i < end; i += AW_THREADS) {
    float gi = __fmul_rn(g[i], h.gs);
    float mi = __fadd_rn(__fmul_rn(h.b1, m[i]), __fmul_rn(ob1, gi));
    float vi = __fadd_rn(__fmul_rn(h.b2, v[i]), __fmul_rn(__fmul_rn(ob2, gi), gi));
    m[i] = mi;
    v[i] = vi;
    float pi = p[i];
    float den = __fadd_rn(__fsqrt_rn(__fdiv_rn(vi, h.c2)), h.eps);
    float upd = __fadd_rn(__fdiv_rn(__fdiv_rn(mi, h.c1), den), __fmul_rn(wd, pi));
    pi = __fsub_rn(pi, __fmul_rn(h.lr, upd));
    p[i] = pi;
    if (mirror) mirror[i] = __float2bfloat16_rn(pi);
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
    adamw_k<<<blocks, AW_THREADS, 0, c->stream>>>(p, g, mm, vv, mirror, tb, h);
    TZC_LAUNCHED();
  }
}
