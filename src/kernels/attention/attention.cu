/* Causal grouped-query attention on CUDA: the op launchers, the choice of kernels, and the
 * SIMT fallback kernels (attention_fa.cu holds the tensor-core FlashAttention-2 kernels).
 * Math as attention_cpu.c (the reference): s_j = q·k_j·scale, scale = 1/√hd, query row t at
 * position q_pos0 + t sees keys 0..q_pos0+t; out = softmax(s)·V; lse = log Σ_j exp(s_j);
 * GQA: kv head g = h / (n_head / n_kv_head).
 *
 * Paths (chosen per call):
 *   fast      bf16 mode, training form (Tq == Tk, q_pos0 == 0), head_dim 64 or 128, every
 *             head row 16-byte aligned (strides multiples of 8 elements, aligned pointers),
 *             and enough shared memory on the device: attention_fa.cu.
 *   fallback  everything else (fp32 mode, other head sizes, KV-cache decoding): the kernels
 *             below, fp32 math on either act dtype.
 * TEZGAH_CUDA_ATTN=fallback forces the fallback; TEZGAH_CUDA_ATTN=fast makes a call that
 * cannot take the fast path (or the backward's ds path, below) abort (tests use it to be sure
 * the fast kernels really ran). cuDNN (want_cudnn: by default on sm_90 without GQA, or with
 * TEZGAH_CUDA_ATTN=cudnn anywhere; read on every call): training-form bf16 calls go first to
 * cuDNN's fused flash-attention graphs (attention_cudnn.c, libcudnn.so.9 loaded on first use);
 * whatever it declines (no library, an unsupported shape or graph, a workspace that does not fit:
 * a stderr note only when asked for cuDNN or TEZGAH_VERBOSE) runs the paths below.
 * TEZGAH_CUDA_ATTN=builtin: the paths below only (never cuDNN); any other value is an error
 * (tzc_attention_env_check, at the backend's creation).
 * The fast backward takes dQ from a stored dS (attention_fa.cu's "ds path", fa_dq_ds's 128-row
 * blocks, dS written by 16-byte stores) when its scratch fits (tzc_scratch_fits), else recomputes S and
 * dP for dQ (fa_dq, "old"). For A/B runs: TEZGAH_CUDA_ATTN_BWD=old|ds|ds1|ds2 (default auto =
 * ds1; bwd_variant) and TEZGAH_CUDA_ATTN_DS_STORE=4|16 (default 16; ds_store);
 * TEZGAH_CUDA_ATTN_TIMING=1 times the backward's kernels (bwd_events, tzc_attention_bwd_split;
 * bench_cuda_attention's split).
 *
 * Fallback kernels (one warp per output row, 4 warps a block, no T×T buffer, no atomics):
 *   fwd     warp = query row (b, h, t). Keys in chunks of 32, one key per lane: the lane's
 *           score (a sequential fp32 dot product with q, which sits in shared memory), the
 *           chunk's max and sum by shuffles, then the warp rescales its accumulators once
 *           and adds p_j·v_j key by key (lane = output dims lane, lane+32, ...). Online
 *           softmax across chunks; out = acc / l, lse = m + log l.
 *   bwd_d   D[b,h,t] = Σ dout·out (shared by both paths' backward; fp32, in tzc_scratch).
 *   bwd_dq  warp = query row: over keys j ≤ t in chunks of 32 (lane = key) p = exp(s − lse),
 *           ds = p·(dout·v_j − D)·scale; then dq += ds_j·k_j key by key, in j order.
 *   bwd_dkdv warp = key row (b, g, j): over the query heads of the group and queries t ≥ j
 *           (lane = query), dv += p·dout_t, dk += ds·q_t in (h, t) order: the CPU's order.
 * Every sum has one owner and a fixed order, so results are bit-identical run to run. */
#include <cuda_bf16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "kernels/attention/attention_cuda.h"
#include "kernels/attention/attention_cudnn.h"

typedef __nv_bfloat16 bf16;

/* core/error.h spells it with C11 _Noreturn, which C++ lacks */
extern "C" [[noreturn]] void tz_panic(const char *file, int line, const char *what);
extern "C" [[noreturn]] void tz_fatal(const char *msg); // core/error.h: bad user input

namespace {

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(bf16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ bf16 from_f<bf16>(float x) { return __float2bfloat16_rn(x); }

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
/* Butterfly sum: every lane ends with the same bits (a + b == b + a in IEEE arithmetic). */
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

constexpr int FB_WARPS = 4; /* warps (rows) per block in the fallback kernels */

/* Forward, any Tq/Tk/q_pos0. NPL = dims per lane (hd ≤ 32·NPL). Dynamic shared memory:
 * FB_WARPS·hd floats (each warp's query row). */
template <typename T, int NPL>
__global__ void __launch_bounds__(FB_WARPS * 32)
    attn_fwd_simt(T *__restrict__ out, float *__restrict__ lse, const T *__restrict__ q,
                  const T *__restrict__ k, const T *__restrict__ v, int B, int Tq, int Tk,
                  int q_pos0, int H, int rep, int hd, int qs, int kvs, float scale) {
  extern __shared__ float fb_sh[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const size_t row = (size_t)blockIdx.x * FB_WARPS + warp; /* ((b·H + h)·Tq + t) */
  if (row >= (size_t)B * H * Tq) return;                   /* whole warp: no block barrier below */
  const int t = (int)(row % Tq), h = (int)(row / Tq % H), b = (int)(row / Tq / H);
  const int g = h / rep;
  float *qsh = fb_sh + warp * hd;
  const T *qr = q + ((size_t)b * Tq + t) * qs + (size_t)h * hd;
  for (int d = lane; d < hd; d += 32) qsh[d] = to_f(qr[d]);
  __syncwarp();
  const T *kb = k + (size_t)b * Tk * kvs + (size_t)g * hd;
  const T *vb = v + (size_t)b * Tk * kvs + (size_t)g * hd;
  const int L = min(q_pos0 + t + 1, Tk); /* visible keys (≥ 1) */
  float m = -INFINITY, l = 0.0f, acc[NPL];
#pragma unroll
  for (int i = 0; i < NPL; i++) acc[i] = 0.0f;
  for (int j0 = 0; j0 < L; j0 += 32) {
    const int j = j0 + lane;
    float s = -INFINITY;
    if (j < L) {
      const T *kr = kb + (size_t)j * kvs;
      float dot = 0.0f;
      for (int d = 0; d < hd; d++) dot += qsh[d] * to_f(kr[d]);
      s = dot * scale;
    }
    const float mn = fmaxf(m, warp_max(s)); /* finite: lane 0's key j0 < L is visible */
    const float corr = expf(m - mn);        /* 0 on the first chunk (m = −inf) */
    const float p = j < L ? expf(s - mn) : 0.0f;
    l = l * corr + warp_sum(p);
    m = mn;
#pragma unroll
    for (int i = 0; i < NPL; i++) acc[i] *= corr;
    const int nj = min(32, L - j0);
    for (int jj = 0; jj < nj; jj++) {
      const float pj = __shfl_sync(0xffffffffu, p, jj);
      const T *vr = vb + (size_t)(j0 + jj) * kvs;
#pragma unroll
      for (int i = 0; i < NPL; i++) {
        const int d = lane + 32 * i;
        if (d < hd) acc[i] += pj * to_f(vr[d]);
      }
    }
  }
  const float inv = 1.0f / l;
  T *orow = out + (((size_t)b * Tq + t) * H + h) * hd;
#pragma unroll
  for (int i = 0; i < NPL; i++) {
    const int d = lane + 32 * i;
    if (d < hd) orow[d] = from_f<T>(acc[i] * inv);
  }
  if (lse && lane == 0) lse[row] = m + logf(l);
}

/* D[(b·H + h)·T + t] = Σ_d dout·out over the head's hd columns (dout, out [B·T, H·hd]).
 * V = 1: a warp per row, one element a lane at a time (any dtype, any hd). V = 8 (bf16 only;
 * hd % 8 == 0, both pointers 16-byte aligned: the caller checks): 8 lanes per row (4 rows a
 * warp), 16-byte loads, a lane's 8 products summed, then the 8 lanes over shuffles — the
 * scalar form issued 2-byte loads and left the kernel far from the bandwidth floor. */
template <typename T, int V>
__global__ void __launch_bounds__(FB_WARPS * 32)
    attn_bwd_d(float *__restrict__ D, const T *__restrict__ dout, const T *__restrict__ out,
               int B, int T_, int H, int hd) {
  constexpr int L = V == 1 ? 32 : 8; /* lanes a row */
  const int lane = threadIdx.x & 31, sub = lane % L;
  const size_t row = ((size_t)blockIdx.x * FB_WARPS + (threadIdx.x >> 5)) * (32 / L) + lane / L;
  const bool ok = row < (size_t)B * H * T_; /* no early return: every lane joins the shuffles */
  float s = 0.0f;
  if (ok) {
    const int t = (int)(row % T_), h = (int)(row / T_ % H), b = (int)(row / T_ / H);
    const size_t off = (((size_t)b * T_ + t) * H + h) * hd;
    for (int d = sub * V; d < hd; d += L * V) {
      if constexpr (V == 1) {
        s += to_f(dout[off + d]) * to_f(out[off + d]);
      } else {
        const uint4 a = *reinterpret_cast<const uint4 *>(dout + off + d);
        const uint4 c = *reinterpret_cast<const uint4 *>(out + off + d);
        const __nv_bfloat162 *pa = reinterpret_cast<const __nv_bfloat162 *>(&a);
        const __nv_bfloat162 *pc = reinterpret_cast<const __nv_bfloat162 *>(&c);
#pragma unroll
        for (int i = 0; i < 4; i++) {
          const float2 x = __bfloat1622float2(pa[i]), y = __bfloat1622float2(pc[i]);
          s = fmaf(x.x, y.x, s);
          s = fmaf(x.y, y.y, s);
        }
      }
    }
  }
#pragma unroll
  for (int o = L / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (ok && sub == 0) D[row] = s;
}

/* dq, warp per query row (b, h, t). Shared memory: FB_WARPS·2·hd floats (q and dout). */
template <typename T, int NPL>
__global__ void __launch_bounds__(FB_WARPS * 32)
    attn_bwd_dq_simt(T *__restrict__ dq, const T *__restrict__ dout, const T *__restrict__ q,
                     const T *__restrict__ k, const T *__restrict__ v,
                     const float *__restrict__ lse, const float *__restrict__ D, int B, int T_,
                     int H, int rep, int hd, int qs, int kvs, float scale) {
  extern __shared__ float fb_sh[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const size_t row = (size_t)blockIdx.x * FB_WARPS + warp;
  if (row >= (size_t)B * H * T_) return;
  const int t = (int)(row % T_), h = (int)(row / T_ % H), b = (int)(row / T_ / H);
  const int g = h / rep;
  float *qsh = fb_sh + warp * 2 * hd, *dsh = qsh + hd;
  const T *qr = q + ((size_t)b * T_ + t) * qs + (size_t)h * hd;
  const T *dr = dout + (((size_t)b * T_ + t) * H + h) * hd;
  for (int d = lane; d < hd; d += 32) qsh[d] = to_f(qr[d]), dsh[d] = to_f(dr[d]);
  __syncwarp();
  const float l = lse[row], Dr = D[row];
  const T *kb = k + (size_t)b * T_ * kvs + (size_t)g * hd;
  const T *vb = v + (size_t)b * T_ * kvs + (size_t)g * hd;
  const int L = t + 1;
  float acc[NPL];
#pragma unroll
  for (int i = 0; i < NPL; i++) acc[i] = 0.0f;
  for (int j0 = 0; j0 < L; j0 += 32) {
    const int j = j0 + lane;
    float ds = 0.0f;
    if (j < L) {
      const T *kr = kb + (size_t)j * kvs, *vr = vb + (size_t)j * kvs;
      float s = 0.0f, dp = 0.0f;
      for (int d = 0; d < hd; d++) {
        s += qsh[d] * to_f(kr[d]);
        dp += dsh[d] * to_f(vr[d]);
      }
      const float p = expf(s * scale - l);
      ds = p * (dp - Dr) * scale;
    }
    const int nj = min(32, L - j0);
    for (int jj = 0; jj < nj; jj++) {
      const float dsj = __shfl_sync(0xffffffffu, ds, jj);
      const T *kr = kb + (size_t)(j0 + jj) * kvs;
#pragma unroll
      for (int i = 0; i < NPL; i++) {
        const int d = lane + 32 * i;
        if (d < hd) acc[i] += dsj * to_f(kr[d]);
      }
    }
  }
  T *o = dq + ((size_t)b * T_ + t) * qs + (size_t)h * hd;
#pragma unroll
  for (int i = 0; i < NPL; i++) {
    const int d = lane + 32 * i;
    if (d < hd) o[d] = from_f<T>(acc[i]);
  }
}

/* dk, dv, warp per key row (b, g, j): sums over the group's query heads and queries t ≥ j.
 * Shared memory: FB_WARPS·2·hd floats (k_j and v_j). */
template <typename T, int NPL>
__global__ void __launch_bounds__(FB_WARPS * 32)
    attn_bwd_dkdv_simt(T *__restrict__ dk, T *__restrict__ dv, const T *__restrict__ dout,
                       const T *__restrict__ q, const T *__restrict__ k,
                       const T *__restrict__ v, const float *__restrict__ lse,
                       const float *__restrict__ D, int B, int T_, int H, int KVH, int hd,
                       int qs, int kvs, float scale) {
  extern __shared__ float fb_sh[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const size_t row = (size_t)blockIdx.x * FB_WARPS + warp; /* ((b·KVH + g)·T + j) */
  if (row >= (size_t)B * KVH * T_) return;
  const int j = (int)(row % T_), g = (int)(row / T_ % KVH), b = (int)(row / T_ / KVH);
  const int rep = H / KVH;
  float *ksh = fb_sh + warp * 2 * hd, *vsh = ksh + hd;
  const size_t kvoff = ((size_t)b * T_ + j) * kvs + (size_t)g * hd;
  for (int d = lane; d < hd; d += 32) ksh[d] = to_f(k[kvoff + d]), vsh[d] = to_f(v[kvoff + d]);
  __syncwarp();
  float ak[NPL], av[NPL];
#pragma unroll
  for (int i = 0; i < NPL; i++) ak[i] = av[i] = 0.0f;
  for (int h = g * rep; h < (g + 1) * rep; h++) {
    const T *qb = q + (size_t)b * T_ * qs + (size_t)h * hd;
    const T *db = dout + ((size_t)b * T_ * H + h) * hd; /* row t at + t·H·hd */
    const size_t strow = (size_t)H * hd;
    const float *lb = lse + ((size_t)b * H + h) * T_, *Db = D + ((size_t)b * H + h) * T_;
    for (int t0 = j; t0 < T_; t0 += 32) {
      const int t = t0 + lane;
      float p = 0.0f, ds = 0.0f;
      if (t < T_) {
        const T *qr = qb + (size_t)t * qs, *dr = db + (size_t)t * strow;
        float s = 0.0f, dp = 0.0f;
        for (int d = 0; d < hd; d++) {
          s += to_f(qr[d]) * ksh[d];
          dp += to_f(dr[d]) * vsh[d];
        }
        p = expf(s * scale - lb[t]);
        ds = p * (dp - Db[t]) * scale;
      }
      const int nt = min(32, T_ - t0);
      for (int tt = 0; tt < nt; tt++) {
        const float pt = __shfl_sync(0xffffffffu, p, tt);
        const float dst = __shfl_sync(0xffffffffu, ds, tt);
        const T *qr = qb + (size_t)(t0 + tt) * qs, *dr = db + (size_t)(t0 + tt) * strow;
#pragma unroll
        for (int i = 0; i < NPL; i++) {
          const int d = lane + 32 * i;
          if (d < hd) {
            ak[i] += dst * to_f(qr[d]);
            av[i] += pt * to_f(dr[d]);
          }
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < NPL; i++) {
    const int d = lane + 32 * i;
    if (d < hd) dk[kvoff + d] = from_f<T>(ak[i]), dv[kvoff + d] = from_f<T>(av[i]);
  }
}

unsigned cdiv(size_t a, size_t b) { return (unsigned)((a + b - 1) / b); }

/* ---- fallback launchers (templated on the act type and dims per lane) ---- */
template <typename T, int NPL>
void fb_fwd(cudaStream_t st, void *out, float *lse, const void *q, const void *k, const void *v,
            int B, int Tq, int Tk, int q_pos0, int H, int KVH, int hd, int qs, int kvs) {
  const size_t rows = (size_t)B * H * Tq;
  attn_fwd_simt<T, NPL><<<cdiv(rows, FB_WARPS), FB_WARPS * 32, FB_WARPS * hd * sizeof(float), st>>>(
      (T *)out, lse, (const T *)q, (const T *)k, (const T *)v, B, Tq, Tk, q_pos0, H, H / KVH, hd,
      qs, kvs, 1.0f / sqrtf((float)hd));
  TZC_LAUNCHED();
}
template <typename T, int NPL>
void fb_bwd(cudaStream_t st, void *dq, void *dk, void *dv, const void *dout, const void *q,
            const void *k, const void *v, const float *lse, const float *D, int B, int T_, int H,
            int KVH, int hd, int qs, int kvs) {
  const float scale = 1.0f / sqrtf((float)hd);
  const size_t smem = FB_WARPS * 2 * hd * sizeof(float);
  attn_bwd_dq_simt<T, NPL><<<cdiv((size_t)B * H * T_, FB_WARPS), FB_WARPS * 32, smem, st>>>(
      (T *)dq, (const T *)dout, (const T *)q, (const T *)k, (const T *)v, lse, D, B, T_, H,
      H / KVH, hd, qs, kvs, scale);
  TZC_LAUNCHED();
  attn_bwd_dkdv_simt<T, NPL><<<cdiv((size_t)B * KVH * T_, FB_WARPS), FB_WARPS * 32, smem, st>>>(
      (T *)dk, (T *)dv, (const T *)dout, (const T *)q, (const T *)k, (const T *)v, lse, D, B, T_,
      H, KVH, hd, qs, kvs, scale);
  TZC_LAUNCHED();
}

/* Dims per lane for the fallback: hd ≤ 32·NPL, NPL ∈ {1, 2, 4, 8, 16}. */
int fb_npl(int hd) {
  if (hd <= 32) return 1;
  if (hd <= 64) return 2;
  if (hd <= 128) return 4;
  if (hd <= 256) return 8;
  if (hd <= 512) return 16;
  tz_panic(__FILE__, __LINE__, "cuda attention: head_dim > 512");
}

#define FB_DISPATCH(T, hd, fn, ...)                   \
  switch (fb_npl(hd)) {                               \
  case 1: fn<T, 1>(__VA_ARGS__); break;               \
  case 2: fn<T, 2>(__VA_ARGS__); break;               \
  case 4: fn<T, 4>(__VA_ARGS__); break;               \
  case 8: fn<T, 8>(__VA_ARGS__); break;               \
  default: fn<T, 16>(__VA_ARGS__); break;             \
  }

/* ---- path selection ---- */
enum { MODE_AUTO, MODE_FAST, MODE_FALLBACK, MODE_CUDNN, MODE_BUILTIN };
/* TEZGAH_CUDA_ATTN's value as a MODE_*, or -1 when it is none of them */
int parse_mode(const char *e) {
  if (!e || !*e || !strcmp(e, "auto")) return MODE_AUTO;
  if (!strcmp(e, "fast")) return MODE_FAST;
  if (!strcmp(e, "fallback")) return MODE_FALLBACK;
  if (!strcmp(e, "cudnn")) return MODE_CUDNN;
  if (!strcmp(e, "builtin")) return MODE_BUILTIN;
  return -1;
}
int attn_mode(void) {
  const char *e = getenv("TEZGAH_CUDA_ATTN");
  const int mode = parse_mode(e);
  if (mode >= 0) return mode;
  /* the backend checked it at creation (tzc_attention_env_check); changed since */
  char m[160]; /* bad user input, not a bug: tz_fatal */
  snprintf(m, sizeof m, "cuda attention: TEZGAH_CUDA_ATTN=%.40s: must be auto, builtin, cudnn, fast or fallback", e);
  tz_fatal(m);
  return MODE_AUTO;
}
/* Whether a call asks cuDNN first (it still declines what it cannot run: attention_cudnn.h):
 * TEZGAH_CUDA_ATTN=cudnn, or by default on compute capability 9.0 (Hopper) when every query head
 * has its own kv head: there cuDNN 9.14's fused attention measured faster than the built-in
 * kernels (docs/PERF.md, 2026-12-03: GPT-2 124M and llama B16 T1024 training 1.05x). Not by
 * default for GQA/MQA: cuDNN's backward rounds each query head's dK/dV to bf16 before summing a
 * group (the frontend's graph; elements near cancellation land 2x our test's bound, where the
 * built-in kernels sum in fp32); nor on other GPUs, where it is unmeasured. */
bool want_cudnn(tz_backend *be, int n_head, int n_kv_head) {
  const int mode = attn_mode();
  return mode == MODE_CUDNN || (mode == MODE_AUTO && n_head == n_kv_head && tzc(be)->cc_major == 9 &&
                                tzc(be)->cc_minor == 0);
}
bool al16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* Largest dynamic shared memory a block may opt into on the current device (cached). */
size_t smem_optin(int device) {
  static int cached_dev = -1;
  static size_t bytes = 0;
  if (cached_dev != device) {
    int v = 0;
    TZC_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    bytes = (size_t)v;
    cached_dev = device;
  }
  return bytes;
}

/* Whether this call takes the tensor-core path; with TEZGAH_CUDA_ATTN=fast a call that
 * cannot is a fatal error (tests). */
bool use_fast(tz_backend *be, const char *op, int Tq, int Tk, int q_pos0, int hd, int qs,
              int kvs, const void *const *ptrs, int nptr) {
  const int mode = attn_mode();
  if (mode == MODE_FALLBACK) return false;
  bool ok = tzc(be)->act == TZ_BF16 && Tq == Tk && q_pos0 == 0 && (hd == 64 || hd == 128) &&
            qs % 8 == 0 && kvs % 8 == 0 && smem_optin(tzc(be)->device) >= tzc_fa_smem_bytes(hd);
  for (int i = 0; i < nptr && ok; i++) ok = ptrs[i] == NULL || al16(ptrs[i]);
  if (!ok && mode == MODE_FAST) {
    char m[256];
    snprintf(m, sizeof m,
             "cuda %s: TEZGAH_CUDA_ATTN=fast but %s, Tq %d, Tk %d, q_pos0 %d, head_dim %d, "
             "strides %d/%d (or alignment) is not a tensor-core shape",
             op, tz_dtype_name(tzc(be)->act), Tq, Tk, q_pos0, hd, qs, kvs);
    tz_panic(__FILE__, __LINE__, m);
  }
  return ok;
}

/* The tensor-core backward's dQ (TEZGAH_CUDA_ATTN_BWD, read on every call): "old": -1, fa_dq
 * recomputes S and dP; "ds": 0, fa_dkdv stores dS and fa_dq_ds computes dQ = dS·K (64-row
 * blocks); "ds1": 1 (128-row blocks, 2 m-tiles a warp); "ds2": 2 (128 rows, 8 warps). Unset,
 * empty or "auto": ds1, the fastest at every shape measured (H200, bench_cuda_attention, B 16
 * T 1024, 2026-12-03, with 16-byte dS stores, bwd ms against old: 124M 0.370 vs 0.400, GQA
 * 0.401 vs 0.426, hd 128 0.358 vs ~0.437, T 2048 0.656 vs 0.713, 350M 0.471 vs 0.508: old's
 * undisturbed figures of that call; the table in attention_fa.cu's header says why). Anything
 * else is a fatal error (a typo must not measure the old kernels under a new name). */
int bwd_variant(void) {
  const char *e = getenv("TEZGAH_CUDA_ATTN_BWD");
  if (!e || !*e || !strcmp(e, "auto")) return 1;
  if (!strcmp(e, "old")) return -1;
  if (!strcmp(e, "ds")) return 0;
  if (!strcmp(e, "ds1")) return 1;
  if (!strcmp(e, "ds2")) return 2;
  tz_panic(__FILE__, __LINE__,
           "cuda attention_bwd: TEZGAH_CUDA_ATTN_BWD must be auto, old, ds, ds1 or ds2");
}

/* How fa_dkdv writes dS on the ds path (TEZGAH_CUDA_ATTN_DS_STORE, read on every call): unset or
 * "16": stmatrix into a per-warp shared-memory stage, then 16-byte stores of whole dS rows
 * (attention_fa.cu's DkvCfg; fa_dkdv 0.257 ms against 0.312 with "4" at 124M, H200); "4":
 * 4-byte stores straight from the mma fragments. */
int ds_store(void) {
  const char *e = getenv("TEZGAH_CUDA_ATTN_DS_STORE");
  if (!e || !*e || !strcmp(e, "16")) return 16;
  if (!strcmp(e, "4")) return 4;
  tz_panic(__FILE__, __LINE__, "cuda attention_bwd: TEZGAH_CUDA_ATTN_DS_STORE must be 4 or 16");
}

/* Per-kernel timing of the backward (TEZGAH_CUDA_ATTN_TIMING=1, read on every call; for
 * bench_cuda_attention): CUDA events around the D kernel, fa_dkdv and fa_dq / fa_dq_ds, summed
 * into bwd_ms until tzc_attention_bwd_split reads them. The host waits after every call. */
double bwd_ms[3];
long bwd_calls;
cudaEvent_t *bwd_events(void) {
  const char *e = getenv("TEZGAH_CUDA_ATTN_TIMING");
  if (!e || strcmp(e, "1") != 0) return NULL;
  static cudaEvent_t ev[4];
  static bool made = false;
  if (!made) {
    for (int i = 0; i < 4; i++) TZC_CHECK(cudaEventCreate(&ev[i]));
    made = true;
  }
  return ev;
}

} // namespace

extern "C" int tzc_attention_env_check(char *why, size_t cap) {
  const char *e = getenv("TEZGAH_CUDA_ATTN");
  if (parse_mode(e) >= 0) return 0;
  snprintf(why, cap, "TEZGAH_CUDA_ATTN=%.40s: must be auto, builtin, cudnn, fast or fallback", e);
  return -1;
}

extern "C" void tzc_attention_fwd(tz_backend *be, tz_slice out, tz_slice lse, tz_slice q,
                                  tz_slice k, tz_slice v, int B, int Tq, int Tk, int q_pos0,
                                  int n_head, int n_kv_head, int head_dim, int q_stride,
                                  int kv_stride) {
  TZC_PROF(be, "attention_fwd");
  /* visible (query, key) pairs: Σ_t min(q_pos0 + t + 1, Tk); 2 matmuls of 2·hd FLOPs each */
  double pairs = 0;
  {
    const int full = Tk - q_pos0; /* queries t ≥ full see all Tk keys */
    const int a = Tq < full ? Tq : (full > 0 ? full : 0);
    pairs = (double)a * q_pos0 + (double)a * (a + 1) / 2 + (double)(Tq - a) * Tk;
  }
  TZC_PROF_WORK(4.0 * B * n_head * head_dim * pairs, 0);
  if (B <= 0 || Tq <= 0) return; /* nothing to compute (a zero-block launch is an error) */
  cudaStream_t st = tzc(be)->stream;
  void *o = tzc_ptr(out);
  float *l = (float *)tzc_ptr(lse);
  const void *qp = tzc_ptr(q), *kp = tzc_ptr(k), *vp = tzc_ptr(v);
  const void *ptrs[] = {o, qp, kp, vp};
  /* cuDNN first (want_cudnn) when it takes the call (training form with lse), else below */
  if (want_cudnn(be, n_head, n_kv_head) && Tq == Tk && q_pos0 == 0 && l &&
      tzc_cudnn_attn_fwd(be, o, l, qp, kp, vp, B, Tq, n_head, n_kv_head, head_dim, q_stride, kv_stride) == 0)
    return;
  if (use_fast(be, "attention_fwd", Tq, Tk, q_pos0, head_dim, q_stride, kv_stride, ptrs, 4)) {
    tzc_fa_fwd(st, (bf16 *)o, l, (const bf16 *)qp, (const bf16 *)kp, (const bf16 *)vp, B, Tq,
               n_head, n_kv_head, head_dim, q_stride, kv_stride);
  } else if (tzc(be)->act == TZ_BF16) {
    FB_DISPATCH(bf16, head_dim, fb_fwd, st, o, l, qp, kp, vp, B, Tq, Tk, q_pos0, n_head,
                n_kv_head, head_dim, q_stride, kv_stride);
  } else {
    FB_DISPATCH(float, head_dim, fb_fwd, st, o, l, qp, kp, vp, B, Tq, Tk, q_pos0, n_head,
                n_kv_head, head_dim, q_stride, kv_stride);
  }
}

extern "C" void tzc_attention_bwd(tz_backend *be, tz_slice dq, tz_slice dk, tz_slice dv,
                                  tz_slice dout, tz_slice q, tz_slice k, tz_slice v,
                                  tz_slice out, tz_slice lse, int B, int T, int n_head,
                                  int n_kv_head, int head_dim, int q_stride, int kv_stride) {
  TZC_PROF(be, "attention_bwd");
  /* nominal FlashAttention count: 2.5 × the forward's (5 matmuls over the causal half) */
  TZC_PROF_WORK(10.0 * B * n_head * head_dim * ((double)T * (T + 1) / 2), 0);
  if (B <= 0 || T <= 0) return;
  cudaStream_t st = tzc(be)->stream;
  const size_t rows = (size_t)B * n_head * T;
  void *dqp = tzc_ptr(dq), *dkp = tzc_ptr(dk), *dvp = tzc_ptr(dv);
  const void *dop = tzc_ptr(dout), *qp = tzc_ptr(q), *kp = tzc_ptr(k), *vp = tzc_ptr(v),
             *op = tzc_ptr(out);
  const float *l = (const float *)tzc_ptr(lse);
  const bool bf = tzc(be)->act == TZ_BF16;
  const void *ptrs[] = {dqp, dkp, dvp, dop, qp, kp, vp};
  /* cuDNN first (want_cudnn) when it takes the call (it computes its own D), else below */
  if (want_cudnn(be, n_head, n_kv_head) &&
      tzc_cudnn_attn_bwd(be, dqp, dkp, dvp, dop, qp, kp, vp, op, l, B, T, n_head, n_kv_head, head_dim, q_stride,
                         kv_stride) == 0)
    return;
  const bool fast = use_fast(be, "attention_bwd", T, T, 0, head_dim, q_stride, kv_stride, ptrs, 7);
  /* scratch: D (rows floats), then on the ds path the dS tiles (256-byte aligned) */
  const size_t d_bytes = (rows * sizeof(float) + 255) & ~(size_t)255;
  const int dsvar = fast ? bwd_variant() : -1;
  const size_t ds_bytes = dsvar >= 0 ? tzc_fa_ds_bytes(B, n_head, T) : 0;
  const bool ds = dsvar >= 0 && tzc_scratch_fits(be, d_bytes + ds_bytes);
  /* tests (TEZGAH_CUDA_ATTN=fast): the ds kernels chosen must really run */
  if (dsvar >= 0 && !ds && attn_mode() == MODE_FAST)
    tz_panic(__FILE__, __LINE__,
             "cuda attention_bwd: TEZGAH_CUDA_ATTN=fast, but the dS scratch of the ds backward "
             "does not fit (TEZGAH_CUDA_ATTN_BWD=old needs none)");
  static int told = 0; /* TEZGAH_VERBOSE: the fallback is otherwise silent (once a process) */
  if (dsvar >= 0 && !ds && tzc(be)->verbose && !told) {
    told = 1;
    fprintf(stderr, "cuda: attention_bwd: the dS scratch (%.0f MiB) does not fit in the free device memory: "
            "the recomputing dQ kernel runs (as TEZGAH_CUDA_ATTN_BWD=old)\n", (double)(d_bytes + ds_bytes) / (1 << 20));
  }
  float *D = (float *)tzc_scratch(be, d_bytes + (ds ? ds_bytes : 0));
  bf16 *dsp = ds ? (bf16 *)((char *)D + d_bytes) : NULL;
  cudaEvent_t *ev = fast ? bwd_events() : NULL; /* ev[3]: before the D kernel */
  if (ev) TZC_CHECK(cudaEventRecord(ev[3], st));
  if (bf && head_dim % 8 == 0 && al16(dop) && al16(op))
    attn_bwd_d<bf16, 8><<<cdiv(rows, FB_WARPS * 4), FB_WARPS * 32, 0, st>>>(
        D, (const bf16 *)dop, (const bf16 *)op, B, T, n_head, head_dim);
  else if (bf)
    attn_bwd_d<bf16, 1><<<cdiv(rows, FB_WARPS), FB_WARPS * 32, 0, st>>>(
        D, (const bf16 *)dop, (const bf16 *)op, B, T, n_head, head_dim);
  else
    attn_bwd_d<float, 1><<<cdiv(rows, FB_WARPS), FB_WARPS * 32, 0, st>>>(
        D, (const float *)dop, (const float *)op, B, T, n_head, head_dim);
  TZC_LAUNCHED();
  if (fast) {
    if (ev) { /* the D kernel alone */
      float a = 0;
      TZC_CHECK(cudaEventRecord(ev[0], st));
      TZC_CHECK(cudaEventSynchronize(ev[0]));
      TZC_CHECK(cudaEventElapsedTime(&a, ev[3], ev[0]));
      bwd_ms[0] += a, bwd_calls++;
    }
    const tzc_fa_bwd_opts o = {dsvar, ds_store(), ev, bwd_ms + 1};
    tzc_fa_bwd(st, (bf16 *)dqp, (bf16 *)dkp, (bf16 *)dvp, dsp, &o, (const bf16 *)dop,
               (const bf16 *)qp, (const bf16 *)kp, (const bf16 *)vp, l, D, B, T, n_head,
               n_kv_head, head_dim, q_stride, kv_stride);
  } else if (bf) {
    FB_DISPATCH(bf16, head_dim, fb_bwd, st, dqp, dkp, dvp, dop, qp, kp, vp, l, D, B, T, n_head,
                n_kv_head, head_dim, q_stride, kv_stride);
  } else {
    FB_DISPATCH(float, head_dim, fb_bwd, st, dqp, dkp, dvp, dop, qp, kp, vp, l, D, B, T, n_head,
                n_kv_head, head_dim, q_stride, kv_stride);
  }
}

extern "C" long tzc_attention_bwd_split(double ms[3]) {
  const long n = bwd_calls;
  for (int i = 0; i < 3; i++) ms[i] = bwd_ms[i], bwd_ms[i] = 0;
  bwd_calls = 0;
  return n;
}
