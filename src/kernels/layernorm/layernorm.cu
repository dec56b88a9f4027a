/* CUDA LayerNorm (Ba et al. 2016): layernorm_cpu.c's math in fp32 on act rows.
 * Forward: one warp per row (two-pass mean and variance over the row, as the CPU), out act,
 * mean/rstd fp32. Backward: dinp (+=, act) one warp per row, and dw, db (+=, fp32) as
 * deterministic per-chunk partials then a fixed-order final sum. When C % W == 0, C ≤ 8·32·W
 * (2048 in bf16) and the rows are 16-byte aligned, one kernel reads each row once for both
 * (ln_bwd_fused_k: GPT-2's 768/1024/1280/1600); otherwise the rows kernel, then the tiled
 * column sum of cuda_common.cuh. layernorm_bwd_rb (backend.h) adds the column sum of dinp as it
 * comes in (the preceding projection's bias gradient): a third accumulator of the one-pass
 * kernel, or in the fallback a column sum of dinp before the rows kernel. The one-pass kernel
 * also serves RMSNorm's backward (its RMS form: mean 0, no mean_c(w·dy) term, dw alone), for
 * rmsnorm.cu through tzc_rmsnorm_bwd_onepass.
 * PDL: the kernels here are launched through cuda_common.cuh's tzc_launch (programmatic dependent
 * launch on sm_90+, TEZGAH_CUDA_PDL: cuda_common.cuh), each beginning with tzc_pdl_wait. */
#include <stdlib.h>

#include "kernels/common/cuda_common.cuh"

namespace {
constexpr int ROWS_PER_BLOCK = 4; /* warps per block, one row each */

template <int W, class T>
__global__ void __launch_bounds__(32 * ROWS_PER_BLOCK)
ln_fwd_k(T *out, float *mean, float *rstd, const T *inp, const T *w, const T *b, int N, int C,
         float eps) {
  tzc_pdl_wait(); /* PDL (cuda_common.cuh): before any global access or return */
  int lane = threadIdx.x & 31, row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
  if (row >= N) return;
  const T *x = inp + (size_t)row * C;
  float s = 0.0f;
  for (int c = lane * W; c < C; c += 32 * W) {
    float f[W];
    tzc_ld<W>(x + c, f);
#pragma unroll
    for (int j = 0; j < W; j++) s += f[j];
  }
  float m = tzc_warp_sum(s) / C;
  float v = 0.0f;
  for (int c = lane * W; c < C; c += 32 * W) {
    float f[W];
    tzc_ld<W>(x + c, f);
#pragma unroll
    for (int j = 0; j < W; j++) v += (f[j] - m) * (f[j] - m);
  }
  v = tzc_warp_sum(v);
  float r = 1.0f / sqrtf(v / C + eps);
  T *o = out + (size_t)row * C;
  for (int c = lane * W; c < C; c += 32 * W) {
    float f[W], g[W], h[W];
    tzc_ld<W>(x + c, f);
    tzc_ld<W>(w + c, g);
    tzc_ld<W>(b + c, h);
#pragma unroll
    for (int j = 0; j < W; j++) f[j] = (f[j] - m) * r * g[j] + h[j];
    tzc_st<W>(o + c, f);
  }
  if (lane == 0) mean[row] = m, rstd[row] = r;
}

/* A row's two sums for dx, W columns' terms added in order: gm += w·dy, gxm += w·dy·xh with
 * xh = (x − mean)·r (both backward kernels below). */
template <int W>
__device__ __forceinline__ void ln_dots(const float *a, const float *d, const float *g, float m, float r, float &gm,
                                        float &gxm) {
#pragma unroll
  for (int j = 0; j < W; j++) {
    float gg = g[j] * d[j];
    gm += gg;
    gxm += gg * (a[j] - m) * r;
  }
}

/* dx += r·(w·dy − mean_c(w·dy) − xh·mean_c(w·dy·xh)), xh = (x − mean)·r */
template <int W, class T>
__global__ void __launch_bounds__(32 * ROWS_PER_BLOCK)
ln_bwd_rows_k(T *dinp, const T *dout, const T *inp, const T *w, const float *mean,
              const float *rstd, int N, int C) {
  tzc_pdl_wait();
  int lane = threadIdx.x & 31, row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
  if (row >= N) return;
  const T *x = inp + (size_t)row * C, *dy = dout + (size_t)row * C;
  T *dx = dinp + (size_t)row * C;
  float m = mean[row], r = rstd[row], gm = 0.0f, gxm = 0.0f;
  for (int c = lane * W; c < C; c += 32 * W) {
    float a[W], d[W], g[W];
    tzc_ld<W>(x + c, a);
    tzc_ld<W>(dy + c, d);
    tzc_ld<W>(w + c, g);
    ln_dots<W>(a, d, g, m, r, gm, gxm);
  }
  gm = tzc_warp_sum(gm) / C;
  gxm = tzc_warp_sum(gxm) / C;
  for (int c = lane * W; c < C; c += 32 * W) {
    float a[W], d[W], g[W], o[W];
    tzc_ld<W>(x + c, a);
    tzc_ld<W>(dy + c, d);
    tzc_ld<W>(w + c, g);
    tzc_ld<W>(dx + c, o);
#pragma unroll
    for (int j = 0; j < W; j++) o[j] += r * (g[j] * d[j] - gm - (a[j] - m) * r * gxm);
    tzc_st<W>(dx + c, o);
  }
}

/* dw, db summands of row n (the tiled column sum): dy·(x − mean)·rstd and dy */
template <int W, class T> struct LnDwDbTerm {
  const T *dout, *inp;
  const float *mean, *rstd;
  int C;
  __device__ __forceinline__ void operator()(int n, int c, float *v, float *u) const {
    float x[W];
    tzc_ld<W>(dout + (size_t)n * C + c, u);
    tzc_ld<W>(inp + (size_t)n * C + c, x);
    float m = mean[n], r = rstd[n];
#pragma unroll
    for (int j = 0; j < W; j++) v[j] = u[j] * (x[j] - m) * r;
  }
};

/* One pass (ln_bwd_fused_k) for C % W == 0 and C ≤ NV·32·W, 16-byte aligned rows: block = nw
 * warps (ln_nw(): TEZGAH_CUDA_LN_WARPS, by default 4 or 2) over a chunk of rpc rows (warp w:
 * rows n0 + w, n0 + w + nw, ... in increasing order). Lane l owns the vectors v = k·32 + l
 * (k < NV, v < C/W) of every row. A warp loads x, dy and dx of its row at once (raw 16-byte
 * vectors in registers: 3·NV loads in flight per lane, so the memory pipe stays full at any C),
 * computes dx (+=) as ln_bwd_rows_k does, and adds the row's dw, db summands into its own fp32
 * accumulators in shared memory (sh[warp][C] each; a lane touches only its own columns, so no
 * barrier). With partr (layernorm_bwd_rb) a third accumulator adds the row's dx as loaded,
 * before the add: the preceding projection's bias gradient. At the end the warps'
 * accumulators are added in warp order into partw/partb(/partr)[chunk, C], and
 * tzc_colsum_final_k adds the chunks in order: deterministic, the order fixed by (N, C, nw).
 *
 * Warps per block (TEZGAH_CUDA_LN_WARPS, 1..8; by default 4 where their accumulators take at most
 * 48 KB, else 2: ln_nw): at C = 1600 bf16 the kernel takes 161
 * registers, and layernorm_bwd_rb's three accumulators 3·nw·C·4 bytes of shared memory: 4 warps
 * gave 77 KB blocks, 2 per SM (8 warps), 2 warps 38 KB, 5 per SM (10 warps). H100, 2026-12-05,
 * bench_cuda_ops 1600 48, ms a call: layernorm_bwd_rb 0.1149 (2 warps) / 0.1405 (3) / 0.1429
 * (4) / 0.1269 (8), layernorm_bwd 0.1063 / 0.1034 / 0.1114 / 0.1069; 1.5B training 50,583
 * tokens/s at 2 warps against 50,245 / 50,361 at 4. Loading the next row before a row's math
 * (two register sets, 254 registers) gave rb 0.1242 at 4 warps but 0.1188 at 2: not kept. At
 * C = 768 (H100, same call as the 1.5B training) 4 warps were faster: layernorm_bwd_rb 0.0582 ms
 * against 0.0615 at 2, layernorm_bwd 0.0525 against 0.0552 (36.9 and 24.6 KB blocks). */
constexpr int FB_WARPS_MAX = 8; /* TEZGAH_CUDA_LN_WARPS's largest */
/* warps per block for nacc accumulators of C floats each: TEZGAH_CUDA_LN_WARPS, else 4 where
 * they take at most 48 KB of shared memory (C ≤ 1536 with two, ≤ 1024 with three), else 2 */
static int ln_nw(const tzc_ctx *cx, int nacc, int C) {
  if (cx->ln_warps >= 1 && cx->ln_warps <= FB_WARPS_MAX) return cx->ln_warps;
  return (size_t)nacc * 4 * C * sizeof(float) <= 48 * 1024 ? 4 : 2;
}
constexpr int FB_CHUNKS = 512; /* about this many blocks (one wave at 4-6 blocks per SM) */
/* The chunk count: FB_CHUNKS, or env TEZGAH_CUDA_LN_CHUNKS (16..8192; read once per process,
 * so results stay bit-identical run to run at a given setting) for the device sweep in
 * scripts/device_cuda_ln.sh. */
static int ln_chunks() {
  static int v = 0;
  if (!v) {
    const char *e = getenv("TEZGAH_CUDA_LN_CHUNKS");
    int x = e ? atoi(e) : 0;
    v = x >= 16 && x <= 8192 ? x : FB_CHUNKS;
  }
  return v;
}

template <int W, class T> __device__ __forceinline__ void unpack(const int4 &r, float *f) {
  const T *e = reinterpret_cast<const T *>(&r);
#pragma unroll
  for (int i = 0; i < W; i++) f[i] = tzc_tof(e[i]);
}

/* One row as loaded: its raw x, dy, dx vectors (lane's NV), mean and rstd. */
template <int NV> struct LnRaw {
  int4 a[NV], d[NV], o[NV];
  float m, r;
};

template <int W, int NV, class T>
__device__ __forceinline__ void ln_load(LnRaw<NV> &q, const T *inp, const T *dout, const T *dinp,
                                        const float *mean, const float *rstd, int n, int C, int lane) {
  const int4 *x = reinterpret_cast<const int4 *>(inp + (size_t)n * C);
  const int4 *dy = reinterpret_cast<const int4 *>(dout + (size_t)n * C);
  const int4 *dx = reinterpret_cast<const int4 *>(dinp + (size_t)n * C);
  const int nv = C / W;
#pragma unroll
  for (int k = 0; k < NV; k++) {
    int v = k * 32 + lane;
    if (v < nv) q.a[k] = __ldg(x + v), q.d[k] = __ldg(dy + v), q.o[k] = dx[v];
  }
  q.m = mean ? __ldg(mean + n) : 0.0f, q.r = __ldg(rstd + n);
}

/* Row n's dx (stored over dinp) and its summands added into the warp's accumulators sw, sb
 * (and sr when not NULL: the dx as loaded). RMS: RMSNorm's backward (Zhang & Sennrich 2019),
 * which is LayerNorm's with the mean 0 and no mean_c(w·dy) term: dx += r·(w·dy − xh·mean_c(w·dy·xh)),
 * xh = x·r, and dw's summand alone (sb, sr unused). */
template <int W, int NV, bool RMS, class T>
__device__ __forceinline__ void ln_row(const LnRaw<NV> &q, T *dinp, const T *w, int n, int C, int lane,
                                       float *sw, float *sb, float *sr) {
  const int nv = C / W;
  const float m = q.m, r = q.r;
  float gm = 0.0f, gxm = 0.0f;
#pragma unroll
  for (int k = 0; k < NV; k++) {
    int v = k * 32 + lane;
    if (v >= nv) continue;
    float a[W], d[W], g[W];
    unpack<W, T>(q.a[k], a);
    unpack<W, T>(q.d[k], d);
    tzc_ld<W>(w + v * W, g);
    ln_dots<W>(a, d, g, m, r, gm, gxm);
  }
  gm = RMS ? 0.0f : tzc_warp_sum(gm) / C;
  gxm = tzc_warp_sum(gxm) / C;
  int4 *dx = reinterpret_cast<int4 *>(dinp + (size_t)n * C);
#pragma unroll
  for (int k = 0; k < NV; k++) {
    int v = k * 32 + lane;
    if (v >= nv) continue;
    float a[W], d[W], g[W], o[W], aw[W], ab[W] = {};
    unpack<W, T>(q.a[k], a);
    unpack<W, T>(q.d[k], d);
    unpack<W, T>(q.o[k], o);
    tzc_ld<W>(w + v * W, g);
    tzc_ld_f32<W>(sw + v * W, aw);
    if (!RMS) tzc_ld_f32<W>(sb + v * W, ab);
    if (!RMS && sr) {
      float ar[W];
      tzc_ld_f32<W>(sr + v * W, ar);
#pragma unroll
      for (int j = 0; j < W; j++) ar[j] += o[j];
      tzc_st_f32<W>(sr + v * W, ar);
    }
#pragma unroll
    for (int j = 0; j < W; j++) {
      float xh = (a[j] - m) * r;
      o[j] += r * (g[j] * d[j] - gm - xh * gxm);
      aw[j] += d[j] * xh;
      ab[j] += d[j];
    }
    tzc_st<W>(reinterpret_cast<T *>(dx + v), o);
    tzc_st_f32<W>(sw + v * W, aw);
    if (!RMS) tzc_st_f32<W>(sb + v * W, ab);
  }
}

template <int W, int NV, bool RMS, class T>
__global__ void __launch_bounds__(32 * FB_WARPS_MAX)
ln_bwd_fused_k(T *dinp, float *partw, float *partb, float *partr, const T *dout, const T *inp, const T *w,
               const float *mean, const float *rstd, int N, int C, int rpc) {
  static_assert(W * sizeof(T) == 16, "16-byte vectors");
  tzc_pdl_wait();
  /* [NA][nw][C], NA = 2 (3 with partr; 1 with RMS): dw, db (, dbias) accumulators per warp */
  extern __shared__ float sh[];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5, nv = C / W;
  float *sw = sh + (size_t)warp * C, *sb = RMS ? nullptr : sh + (size_t)(nw + warp) * C;
  float *sr = !RMS && partr ? sh + (size_t)(2 * nw + warp) * C : nullptr;
  int n0 = blockIdx.x * rpc, n1 = min(N, n0 + rpc);
  const float zero[W] = {};
#pragma unroll
  for (int k = 0; k < NV; k++) {
    int v = k * 32 + lane;
    if (v < nv) {
      tzc_st_f32<W>(sw + v * W, zero);
      if (sb) tzc_st_f32<W>(sb + v * W, zero);
      if (sr) tzc_st_f32<W>(sr + v * W, zero);
    }
  }
  for (int n = n0 + warp; n < n1; n += nw) {
    LnRaw<NV> q;
    ln_load<W, NV>(q, inp, dout, dinp, mean, rstd, n, C, lane);
    ln_row<W, NV, RMS>(q, dinp, w, n, C, lane, sw, sb, sr);
  }
  __syncthreads();
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float tw = 0.0f, tb = 0.0f, tr = 0.0f;
    for (int u = 0; u < nw; u++) tw += sh[(size_t)u * C + c];
    partw[(size_t)blockIdx.x * C + c] = tw;
    if constexpr (!RMS) {
      for (int u = 0; u < nw; u++) tb += sh[(size_t)(nw + u) * C + c];
      partb[(size_t)blockIdx.x * C + c] = tb;
      if (partr) {
        for (int u = 0; u < nw; u++) tr += sh[(size_t)(2 * nw + u) * C + c];
        partr[(size_t)blockIdx.x * C + c] = tr;
      }
    }
  }
}

template <class T> bool rows_vec(int C, const void *a, const void *b, const void *c,
                                 const void *d) {
  return C % VW(T) == 0 && tzc_aligned16(a) && tzc_aligned16(b) && tzc_aligned16(c) &&
         tzc_aligned16(d);
}
} // namespace

extern "C" void tzc_layernorm_fwd(tz_backend *be, tz_slice out, tz_slice mean, tz_slice rstd,
                                  tz_slice inp, tz_slice w, tz_slice b, int N, int C, float eps) {
  TZC_PROF(be, "layernorm_fwd");
  size_t es = tz_dtype_size(tzc(be)->act);
  TZC_PROF_WORK(7.0 * N * C, 2.0 * N * C * es + 8.0 * N);
  if (N <= 0 || C <= 0) return;
  const dim3 grid(tzc_blocks(N, ROWS_PER_BLOCK)), block(32 * ROWS_PER_BLOCK);
  TZC_DISPATCH_ACT(be, {
    T *o = (T *)tzc_ptr(out);
    const T *x = (const T *)tzc_ptr(inp), *g = (const T *)tzc_w(be, w),
            *h = (const T *)tzc_w(be, b);
    float *mu = (float *)tzc_ptr(mean), *rs = (float *)tzc_ptr(rstd);
    if (rows_vec<T>(C, o, x, g, h))
      tzc_launch(be, ln_fwd_k<VW(T), T>, grid, block, 0, o, mu, rs, x, g, h, N, C, eps);
    else
      tzc_launch(be, ln_fwd_k<1, T>, grid, block, 0, o, mu, rs, x, g, h, N, C, eps);
    TZC_LAUNCHED();
  });
}

namespace {
long rb_calls[2]; /* layernorm_bwd_rb calls: [0] the fallback, [1] the one-pass kernel */

/* the fused kernel with NV = ⌈C / (32·W)⌉ vectors per lane (true when launched: NV ≤ 8,
 * i.e. C ≤ 2048 in bf16, 1024 in fp32; its shared memory is NA·nw·C·4 bytes, NA = 2, or 3 with
 * dr, 1 for RMS, nw = ln_nw(): at C = 1600 2 warps, 25.6 or 38.4 KB; at C = 768 4 warps, 24.6 or
 * 36.9 KB); false (nothing launched) for another NV or where that shared memory exceeds the
 * device's. rms: RMSNorm's form (tzc_rmsnorm_bwd_onepass): mu, db and dr NULL, dw alone. */
template <int W, int NV, class T>
bool ln_bwd_fused(tz_backend *be, bool rms, T *dx, float *dw, float *db, float *dr, const T *dy, const T *x,
                  const T *g, const float *mu, const float *rs, int N, int C) {
  if ((C + 32 * W - 1) / (32 * W) != NV) return false;
  TZC_ASSERT(!rms || (!mu && !db && !dr));
  tzc_ctx *cx = tzc(be);
  const int nacc = rms ? 1 : dr ? 3 : 2;
  const int nw = ln_nw(cx, nacc, C);
  size_t smem = nacc * (size_t)nw * C * sizeof(float);
  if (smem > (size_t)cx->smem_optin) return false;
  int chunks = ln_chunks(), rpc = (N + chunks - 1) / chunks;
  if (rpc < 2 * nw) rpc = 2 * nw;
  int P = (N + rpc - 1) / rpc;
  size_t pb = tzc_round256((size_t)P * C * sizeof(float));
  char *s = (char *)tzc_scratch(be, nacc * pb);
  float *partw = (float *)s, *partb = rms ? nullptr : (float *)(s + pb);
  float *partr = dr ? (float *)(s + 2 * pb) : nullptr;
  auto kern = rms ? ln_bwd_fused_k<W, NV, true, T> : ln_bwd_fused_k<W, NV, false, T>;
  if (smem > 48 * 1024) /* above the default dynamic limit (per device: set on every call) */
    TZC_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  tzc_launch(be, kern, dim3(P), dim3(32 * nw), smem, dx, partw, partb, partr, dy, x, g, mu, rs, N, C, rpc);
  TZC_LAUNCHED();
  tzc_colsum_final(be, dw, partw, rms ? nullptr : db, partb, dr, partr, P, C);
  TZC_LAUNCHED();
  return true;
}

/* one ln_bwd_fused per NV = 1..8 (C ≤ 8·32·W), the first that applies */
template <class T>
bool ln_bwd_onepass(tz_backend *be, bool rms, T *dx, float *dw, float *db, float *dr, const T *dy, const T *x,
                    const T *g, const float *mu, const float *rs, int N, int C) {
  constexpr int W = VW(T);
  return ln_bwd_fused<W, 1>(be, rms, dx, dw, db, dr, dy, x, g, mu, rs, N, C) ||
         ln_bwd_fused<W, 2>(be, rms, dx, dw, db, dr, dy, x, g, mu, rs, N, C) ||
         ln_bwd_fused<W, 3>(be, rms, dx, dw, db, dr, dy, x, g, mu, rs, N, C) ||
         ln_bwd_fused<W, 4>(be, rms, dx, dw, db, dr, dy, x, g, mu, rs, N, C) ||
         ln_bwd_fused<W, 5>(be, rms, dx, dw, db, dr, dy, x, g, mu, rs, N, C) ||
         ln_bwd_fused<W, 6>(be, rms, dx, dw, db, dr, dy, x, g, mu, rs, N, C) ||
         ln_bwd_fused<W, 7>(be, rms, dx, dw, db, dr, dy, x, g, mu, rs, N, C) ||
         ln_bwd_fused<W, 8>(be, rms, dx, dw, db, dr, dy, x, g, mu, rs, N, C);
}

/* layernorm_bwd, and with dbias (layernorm_bwd_rb) dbias += Σ_n dinp[n, :] as it comes in */
void ln_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice db, tz_slice dbias, tz_slice dout, tz_slice inp,
            tz_slice w, tz_slice mean, tz_slice rstd, int N, int C) {
  TZC_DISPATCH_ACT(be, {
    T *dx = (T *)tzc_ptr(dinp);
    const T *dy = (const T *)tzc_ptr(dout), *x = (const T *)tzc_ptr(inp);
    const T *g = (const T *)tzc_w(be, w);
    const float *mu = (const float *)tzc_ptr(mean), *rs = (const float *)tzc_ptr(rstd);
    float *pw = (float *)tzc_ptr(dw), *pb = (float *)tzc_ptr(db), *pr = (float *)tzc_ptr(dbias);
    constexpr int W = VW(T);
    bool vec = rows_vec<T>(C, dx, dy, x, g);
    if (vec && ln_bwd_onepass(be, false, dx, pw, pb, pr, dy, x, g, mu, rs, N, C)) {
      if (pr) rb_calls[1]++;
      break;
    }
    if (pr) rb_calls[0]++;
    const dim3 grid(tzc_blocks(N, ROWS_PER_BLOCK)), block(32 * ROWS_PER_BLOCK);
    if (vec) {
      if (pr) tzc_colsum<W, 1>(be, pr, nullptr, N, C, tzc_row_term<W, T>{dx, C}); /* before the rows add */
      tzc_launch(be, ln_bwd_rows_k<W, T>, grid, block, 0, dx, dy, x, g, mu, rs, N, C);
      TZC_LAUNCHED();
      tzc_colsum<W, 2>(be, pw, pb, N, C, LnDwDbTerm<W, T>{dy, x, mu, rs, C});
    } else {
      if (pr) tzc_colsum<1, 1>(be, pr, nullptr, N, C, tzc_row_term<1, T>{dx, C});
      tzc_launch(be, ln_bwd_rows_k<1, T>, grid, block, 0, dx, dy, x, g, mu, rs, N, C);
      TZC_LAUNCHED();
      tzc_colsum<1, 2>(be, pw, pb, N, C, LnDwDbTerm<1, T>{dy, x, mu, rs, C});
    }
  });
}
} // namespace

extern "C" void tzc_layernorm_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice db, tz_slice dout,
                                  tz_slice inp, tz_slice w, tz_slice mean, tz_slice rstd, int N, int C) {
  TZC_PROF(be, "layernorm_bwd");
  size_t es = tz_dtype_size(tzc(be)->act);
  TZC_PROF_WORK(14.0 * N * C, 4.0 * N * C * es + 8.0 * N);
  if (N <= 0 || C <= 0) return;
  ln_bwd(be, dinp, dw, db, TZ_NONE, dout, inp, w, mean, rstd, N, C);
}

/* backend.h's layernorm_bwd_rb: the same, and dbias += Σ_n dinp[n, :] of dinp as it comes in (the
 * output gradient of the projection before this norm in the backward: GPT-2's fc-proj before
 * ln2, attention proj before ln1), summed from the dinp values the kernel loads anyway: the
 * bias_bwd call of that projection, and its read of dinp, are saved. Its own profile row. */
extern "C" void tzc_layernorm_bwd_rb(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice db, tz_slice dbias,
                                     tz_slice dout, tz_slice inp, tz_slice w, tz_slice mean, tz_slice rstd, int N,
                                     int C) {
  TZC_PROF(be, "layernorm_bwd_rb");
  size_t es = tz_dtype_size(tzc(be)->act);
  TZC_PROF_WORK(15.0 * N * C, 4.0 * N * C * es + 8.0 * N);
  if (N <= 0 || C <= 0) return;
  ln_bwd(be, dinp, dw, db, dbias, dout, inp, w, mean, rstd, N, C);
}

extern "C" long tzc_ln_rb_calls(int fused) { return rb_calls[fused ? 1 : 0]; }

/* cuda_internal.h: RMSNorm as ln_bwd_fused's RMS form (no mean, dw alone) */
extern "C" int tzc_rmsnorm_bwd_onepass(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice dout, tz_slice inp,
                                       tz_slice w, tz_slice rstd, int N, int C) {
  if (tzc(be)->rms_rows) return 0;
  bool done = false;
  TZC_DISPATCH_ACT(be, {
    T *dx = (T *)tzc_ptr(dinp);
    const T *dy = (const T *)tzc_ptr(dout), *x = (const T *)tzc_ptr(inp);
    const T *g = (const T *)tzc_w(be, w);
    done = rows_vec<T>(C, dx, dy, x, g) &&
           ln_bwd_onepass(be, true, dx, (float *)tzc_ptr(dw), (float *)nullptr, (float *)nullptr, dy, x, g,
                          (const float *)nullptr, (const float *)tzc_ptr(rstd), N, C);
  });
  return done;
}
