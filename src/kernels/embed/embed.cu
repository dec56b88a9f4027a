/* CUDA token (+ position) embedding, forward and deterministic backward (embed_cpu.c's math).
 *
 * Backward without float atomics: the (token, row) pairs are sorted by token with CUB's
 * DeviceRadixSort (stable, so each token's rows stay in increasing row order), then the
 * block at the first sorted position of each token adds that token's rows in that order
 * into dwte, starting from the current dwte value — the same order of additions as the CPU
 * reference (bit-identical to it in fp32), and run to run. dwpe[t] adds dout over b in
 * order, skipping invalid ids like the CPU.
 * PDL: the kernels here are launched through cuda_common.cuh's tzc_launch (programmatic dependent
 * launch on sm_90+, TEZGAH_CUDA_PDL: cuda_common.cuh), each beginning with tzc_pdl_wait. */
#include <cub/device/device_radix_sort.cuh>

#include "kernels/common/cuda_common.cuh"

namespace {
constexpr int EMB_THREADS = 128;

/* out[n, c..c+W) = wte[tok[n]] (+ wpe[n % T], or wpe[posv[n]] when posv is given: decoding
 * rows at their own positions); one thread per W columns of one row. */
template <int W, class T>
__global__ void embed_fwd_k(T *out, const int *tok, const T *wte, const T *wpe, int N, int T_,
                            int C, int V, const int *posv) {
  tzc_pdl_wait(); /* PDL (cuda_common.cuh): before any global access or return (every kernel here) */
  size_t cv = (size_t)C / W, total = (size_t)N * cv;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    size_t n = i / cv, c = (i % cv) * W;
    int id = tok[n];
    float f[W];
    if (id < 0 || id >= V) {
#pragma unroll
      for (int j = 0; j < W; j++) f[j] = 0.0f;
    } else {
      tzc_ld<W>(wte + (size_t)id * C + c, f);
      if (wpe) {
        float p[W];
        tzc_ld<W>(wpe + (size_t)(posv ? posv[n] : (int)(n % T_)) * C + c, p);
#pragma unroll
        for (int j = 0; j < W; j++) f[j] += p[j];
      }
    }
    tzc_st<W>(out + n * C + c, f);
  }
}

/* keys = token id (V for an invalid one: sorted last, skipped), values = row */
__global__ void embed_keys_k(unsigned *keys, int *rows, const int *tok, int N, int V) {
  tzc_pdl_wait();
  int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n < N) {
    int id = tok[n];
    keys[n] = (id < 0 || id >= V) ? (unsigned)V : (unsigned)id;
    rows[n] = n;
  }
}

/* One row's W elements as loaded (an int4 when W·sizeof(T) is 16 bytes, else one T), kept raw
 * until added so that U rows in flight cost 4·U registers, not W·U. */
template <int W, class T> struct emb_raw { using type = int4; };
template <class T> struct emb_raw<1, T> { using type = T; };
template <int W, class T>
__device__ __forceinline__ void emb_add(float *acc, const typename emb_raw<W, T>::type &r) {
  if constexpr (W == 1) {
    acc[0] += tzc_tof(r);
  } else {
    const T *e = reinterpret_cast<const T *>(&r);
#pragma unroll
    for (int j = 0; j < W; j++) acc[j] += tzc_tof(e[j]);
  }
}

/* grid (N sorted positions, column chunks of EMB_THREADS·W). Only the block at the first
 * position of a token's run works: it stages the run's row numbers EMB_THREADS at a time in
 * shared memory (one round trip for the keys and rows of 128 positions), then reads the rows U
 * at a time (U independent loads in flight a thread) and adds them in sorted (= row) order. A
 * frequent token's run is one serial chain of adds (the CPU's order, hence exact): what bounds it
 * is the loads' latency, so the chain waits once per U rows. (On the H200, 2026-12-05, GPT-2 124M
 * B16 T1024: 0.72 ms a step with U = 8 and the keys read per group, 0.25 ms this way; docs/PERF.md.) */
template <int W, class T>
__global__ void __launch_bounds__(EMB_THREADS)
    embed_dwte_k(float *dwte, const T *dout, const unsigned *keys, const int *rows, int N, int C,
                 int V) {
  tzc_pdl_wait(); /* (after CUB's sort, whose kernels are launched plainly) */
  constexpr int U = 16;
  __shared__ int srow[EMB_THREADS];
  int p = blockIdx.x;
  unsigned key = keys[p];
  if (key >= (unsigned)V || (p > 0 && keys[p - 1] == key)) return; /* the whole block */
  size_t c = ((size_t)blockIdx.y * EMB_THREADS + threadIdx.x) * W;
  bool mine = c < (size_t)C; /* past C a thread only stages rows */
  float acc[W];
  float *dst = dwte + (size_t)key * C + c;
  if (mine) tzc_ld_f32<W>(dst, acc);
  for (int base = p;; base += EMB_THREADS) {
    int q = base + (int)threadIdx.x;
    bool in = q < N && keys[q] == key;
    srow[threadIdx.x] = in ? rows[q] : -1;
    /* sorted: this tile's rows of the run are its first n; a barrier too (srow is written) */
    int n = __syncthreads_count(in);
    if (mine)
      for (int i = 0; i < n; i += U) {
        typename emb_raw<W, T>::type r[U];
#pragma unroll
        for (int u = 0; u < U; u++)
          if (i + u < n)
            r[u] = *reinterpret_cast<const typename emb_raw<W, T>::type *>(dout + (size_t)srow[i + u] * C + c);
#pragma unroll
        for (int u = 0; u < U; u++)
          if (i + u < n) emb_add<W, T>(acc, r[u]);
      }
    if (n < EMB_THREADS) break; /* n is the block's: every thread leaves together */
    __syncthreads();            /* srow is read before the next tile overwrites it */
  }
  if (mine) tzc_st_f32<W>(dst, acc);
}

/* dwpe[t, c..c+W) += Σ_b dout[b·T + t] over valid ids, b in order. grid (T, column chunks). */
template <int W, class T>
__global__ void embed_dwpe_k(float *dwpe, const T *dout, const int *tok, int B, int T_, int C,
                             int V) {
  tzc_pdl_wait();
  int t = blockIdx.x;
  size_t c = ((size_t)blockIdx.y * EMB_THREADS + threadIdx.x) * W;
  if (c >= (size_t)C) return;
  float acc[W];
  float *dst = dwpe + (size_t)t * C + c;
  tzc_ld_f32<W>(dst, acc);
  for (int b = 0; b < B; b++) {
    size_t n = (size_t)b * T_ + t;
    int id = tok[n];
    if (id < 0 || id >= V) continue;
    float v[W];
    tzc_ld<W>(dout + n * C + c, v);
#pragma unroll
    for (int j = 0; j < W; j++) acc[j] += v[j];
  }
  tzc_st_f32<W>(dst, acc);
}

template <class T>
void embed_bwd(tz_backend *be, float *dwte, float *dwpe, const T *dout, const int *tok, int B,
               int T_, int C, int V) {
  cudaStream_t st = tzc(be)->stream;
  int N = B * T_;
  int end_bit = 1;
  while (end_bit < 32 && ((unsigned long long)1 << end_bit) <= (unsigned long long)V) end_bit++;
  size_t temp_bytes = 0;
  TZC_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, (const unsigned *)nullptr,
                                            (unsigned *)nullptr, (const int *)nullptr,
                                            (int *)nullptr, N, 0, end_bit, st));
  size_t a = tzc_round256((size_t)N * 4);
  char *s = (char *)tzc_scratch(be, 4 * a + tzc_round256(temp_bytes));
  unsigned *keys = (unsigned *)s, *keys_sorted = (unsigned *)(s + a);
  int *rows = (int *)(s + 2 * a), *rows_sorted = (int *)(s + 3 * a);
  void *temp = s + 4 * a;
  tzc_launch(be, embed_keys_k, dim3(tzc_blocks(N, 256)), dim3(256), 0, keys, rows, tok, N, V);
  TZC_LAUNCHED();
  TZC_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, keys_sorted, rows,
                                            rows_sorted, N, 0, end_bit, st));
  constexpr int VWT = VW(T);
  bool vec = C % VWT == 0 && tzc_aligned16(dout) && tzc_aligned16(dwte) &&
             (!dwpe || tzc_aligned16(dwpe));
  int w = vec ? VWT : 1;
  dim3 g((unsigned)N, (unsigned)((C + EMB_THREADS * w - 1) / (EMB_THREADS * w)));
  if (vec)
    tzc_launch(be, embed_dwte_k<VWT, T>, g, dim3(EMB_THREADS), 0, dwte, dout, (const unsigned *)keys_sorted,
               (const int *)rows_sorted, N, C, V);
  else
    tzc_launch(be, embed_dwte_k<1, T>, g, dim3(EMB_THREADS), 0, dwte, dout, (const unsigned *)keys_sorted,
               (const int *)rows_sorted, N, C, V);
  TZC_LAUNCHED();
  if (dwpe) {
    dim3 gp((unsigned)T_, g.y);
    if (vec)
      tzc_launch(be, embed_dwpe_k<VWT, T>, gp, dim3(EMB_THREADS), 0, dwpe, dout, tok, B, T_, C, V);
    else
      tzc_launch(be, embed_dwpe_k<1, T>, gp, dim3(EMB_THREADS), 0, dwpe, dout, tok, B, T_, C, V);
    TZC_LAUNCHED();
  }
}
} // namespace

extern "C" void tzc_embed_fwd(tz_backend *be, tz_slice out, tz_slice tok, tz_slice wte,
                              tz_slice wpe, int B, int T_, int C, int V) {
  TZC_PROF(be, "embed_fwd");
  size_t N = (size_t)B * T_, es = tz_dtype_size(tzc(be)->act);
  TZC_PROF_WORK((double)N * C, (double)N * C * es * (tz_present(wpe) ? 3 : 2) + 4.0 * N);
  if (N == 0 || C <= 0) return;
  TZC_DISPATCH_ACT(be, {
    T *o = (T *)tzc_ptr(out);
    const T *te = (const T *)tzc_w(be, wte), *pe = (const T *)tzc_w(be, wpe);
    const int *ids = (const int *)tzc_ptr(tok);
    if (C % VW(T) == 0 && tzc_aligned16(o) && tzc_aligned16(te) && (!pe || tzc_aligned16(pe)))
      tzc_launch(be, embed_fwd_k<VW(T), T>, dim3(tzc_blocks(N * C / VW(T), 256)), dim3(256), 0, o, ids, te, pe,
                 (int)N, T_, C, V, (const int *)nullptr);
    else
      tzc_launch(be, embed_fwd_k<1, T>, dim3(tzc_blocks(N * C, 256)), dim3(256), 0, o, ids, te, pe, (int)N, T_, C,
                 V, (const int *)nullptr);
    TZC_LAUNCHED();
  });
}

extern "C" void tzc_embed_bwd(tz_backend *be, tz_slice dwte, tz_slice dwpe, tz_slice dout,
                              tz_slice tok, int B, int T_, int C, int V) {
  TZC_PROF(be, "embed_bwd");
  size_t N = (size_t)B * T_, es = tz_dtype_size(tzc(be)->act);
  size_t touched = N < (size_t)V ? N : (size_t)V;
  TZC_PROF_WORK((double)N * C * (tz_present(dwpe) ? 2 : 1),
                (double)N * C * es * (tz_present(dwpe) ? 2 : 1) + 8.0 * touched * C +
                    (tz_present(dwpe) ? 8.0 * T_ * C : 0.0) + 16.0 * N);
  if (N == 0 || C <= 0) return;
  TZC_DISPATCH_ACT(be, embed_bwd<T>(be, (float *)tzc_ptr(dwte), (float *)tzc_ptr(dwpe),
                                    (const T *)tzc_ptr(dout), (const int *)tzc_ptr(tok), B, T_,
                                    C, V));
}

/* backend.h's embed_pos_fwd: embed_fwd_k with each row's wpe row from pos[b]. */
extern "C" void tzc_embed_pos_fwd(tz_backend *be, tz_slice out, tz_slice tok, tz_slice pos, tz_slice wte,
                                  tz_slice wpe, int B, int C, int V) {
  TZC_PROF(be, "embed_fwd");
  size_t N = (size_t)B, es = tz_dtype_size(tzc(be)->act);
  TZC_PROF_WORK((double)N * C, (double)N * C * es * (tz_present(wpe) ? 3 : 2) + 8.0 * N);
  if (N == 0 || C <= 0) return;
  TZC_DISPATCH_ACT(be, {
    T *o = (T *)tzc_ptr(out);
    const T *te = (const T *)tzc_w(be, wte), *pe = (const T *)tzc_w(be, wpe);
    const int *ids = (const int *)tzc_ptr(tok), *pv = (const int *)tzc_ptr(pos);
    if (C % VW(T) == 0 && tzc_aligned16(o) && tzc_aligned16(te) && (!pe || tzc_aligned16(pe)))
      tzc_launch(be, embed_fwd_k<VW(T), T>, dim3(tzc_blocks(N * C / VW(T), 256)), dim3(256), 0, o, ids, te, pe,
                 (int)N, 1, C, V, pv);
    else
      tzc_launch(be, embed_fwd_k<1, T>, dim3(tzc_blocks(N * C, 256)), dim3(256), 0, o, ids, te, pe, (int)N, 1, C, V,
                 pv);
    TZC_LAUNCHED();
  });
}
