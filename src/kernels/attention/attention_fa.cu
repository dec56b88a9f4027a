/* FlashAttention-2 (Dao 2023) on tensor cores: bf16, head_dim 64 or 128, causal, GQA, the
 * training form (Tq == Tk == T, q_pos0 = 0). attention.cu chooses this path and checks its
 * preconditions (every head row 16-byte aligned: strides multiples of 8 elements).
 *
 * Building blocks (sm_80+): mma.sync.m16n8k16 bf16 → fp32; ldmatrix (x4, .trans for the
 * operands whose reduction dim runs down the shared-memory rows); cp.async 16-byte copies
 * of tiles into shared memory, double-buffered (the next tile loads while this one is
 * computed), rows past T zero-filled. Shared-memory rows are padded by 8 elements (16 bytes)
 * so the 8 row addresses of an ldmatrix 8×8 matrix fall in different bank groups.
 *
 * Fragment layouts (PTX ISA, m16n8k16, g = lane/4, c = lane%4):
 *   A 16×16 (row-major): a0 (g, 2c..2c+1), a1 (g+8, 2c..), a2 (g, 2c+8..), a3 (g+8, 2c+8..)
 *   B 16×8  (k × n):     b0 (k 2c..2c+1, n g), b1 (k 2c+8..2c+9, n g)
 *   C 16×8  fp32:        c0,c1 (g, 2c..2c+1), c2,c3 (g+8, 2c..2c+1)
 * ldmatrix gives lane l of each 8×8 matrix (row l/4, cols 2(l%4)..+1), or with .trans
 * (rows 2(l%4)..+1, col l/4). So with X row-major in shared memory:
 *   A from X rows                        lane address: row r0 + l%16,  col c0 + 8·(l/16)
 *   B with B[k][n] = X[n][k] (Kᵀ-like)   non-trans, rows = n: regs (b0,b1) of n-tile 0 and
 *                                        (b0,b1) of n-tile 1: row n0 + l%8 + 8·(l/16),
 *                                        col k0 + 8·((l/8)%2)
 *   B with B[k][n] = X[k][n] (V-like)    .trans, rows = k: (b0,b1) of n-tile 0, then n-tile 1:
 *                                        row k0 + l%16, col n0 + 8·(l/16)
 * A C tile pair becomes an A fragment directly: P's n-tiles 2i, 2i+1 (keys 16i..16i+15) give
 * a0 = pack(C[2i].c0,c1), a1 = pack(C[2i].c2,c3), a2 = pack(C[2i+1].c0,c1),
 * a3 = pack(C[2i+1].c2,c3).
 *
 * Kernels (every warp owns 16 rows of its block and never shares accumulators):
 *   fa_fwd   block = (b, h, 16·NW query rows); K/V tiles of 64 keys over key blocks ≤ the
 *            diagonal (the blocks past it are never loaded; the ones that cross it are
 *            masked). Q fragments in registers; S = Q·Kᵀ, online softmax in fp32 (exp2 with
 *            scale·log2 e folded in; the row sum stays per-thread and is reduced over the
 *            quad at the end), O += P·V with P rounded to bf16. out = O / l (bf16, through
 *            shared memory for 16-byte stores); lse = m·scale + log l.
 *   fa_dkdv  block = (b, kv head g, 16·NW key rows); loops over the query heads of the group
 *            and the query tiles of BQ rows that see its keys (t ≥ the block's first key):
 *            Sᵀ = K·Qᵀ, Pᵀ = exp(Sᵀ·scale − lse), dPᵀ = V·dOᵀ, dSᵀ = Pᵀ∘(dPᵀ − D),
 *            dV += Pᵀ·dO, dK += dSᵀ·Q; dK·scale at the end.
 *   fa_dq    block = (b, h, 16·NW query rows); over key tiles of BK keys ≤ the diagonal:
 *            S = Q·Kᵀ, dP = dO·Vᵀ, dS = P∘(dP − D), dQ += dS·K; dQ·scale at the end.
 * No atomics: every output element has one owner and a fixed summation order. */
#include <cuda_bf16.h>
#include <stdint.h>

#include "backend/cuda/cuda_internal.h"
#include "kernels/attention/attention_cuda.h"

typedef __nv_bfloat16 bf16;

namespace {

constexpr float LOG2E = 1.4426950408889634f;

/* ---- PTX wrappers ---- */
__device__ __forceinline__ uint32_t saddr(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}
/* 16 bytes global → shared; pred false writes 16 zero bytes (src-size 0, src not read). */
__device__ __forceinline__ void cp16(void *dst, const void *src, bool pred) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(saddr(dst)), "l"(src),
               "r"(pred ? 16 : 0)
               : "memory");
}
/* 4 bytes global → shared, zero when !pred. */
__device__ __forceinline__ void cp4(void *dst, const void *src, bool pred) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(saddr(dst)), "l"(src),
               "r"(pred ? 4 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void ldsm4(uint32_t (&r)[4], const bf16 *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(saddr(p))
               : "memory");
}
__device__ __forceinline__ void ldsm4t(uint32_t (&r)[4], const bf16 *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(saddr(p))
               : "memory");
}
/* c += a·b (16×8×16, bf16 inputs, fp32 accumulators) */
__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                    uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
/* two floats → bf16x2, lo in the low half (the lower column index) */
__device__ __forceinline__ uint32_t pack(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t *>(&v);
}

/* ---- tile helpers ---- */
/* ROWS rows × HD columns from global (row r at src + r·stride, rows r0 + r ≥ T zero-filled)
 * into shared dst (row stride LD), by NT threads, 16 bytes each. */
template <int ROWS, int HD, int LD, int NT>
__device__ __forceinline__ void load_tile(bf16 *dst, const bf16 *src, size_t stride, int r0,
                                          int T) {
  constexpr int CH = HD / 8; /* 16-byte chunks per row */
#pragma unroll
  for (int i = threadIdx.x; i < ROWS * CH; i += NT) {
    const int r = i / CH, c = (i % CH) * 8;
    const bool ok = r0 + r < T;
    cp16(dst + r * LD + c, ok ? src + (size_t)(r0 + r) * stride + c : src, ok);
  }
}
/* A warp's 16 accumulator rows (C layout, n-tiles of 8 columns) × HD columns → bf16 in
 * shared rows [0, 16) of dst (stride LD), scaled by `mul`. */
template <int HD, int LD>
__device__ __forceinline__ void stage_rows(bf16 *dst, const float (&acc)[HD / 8][4], float mul) {
  const int lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
#pragma unroll
  for (int n = 0; n < HD / 8; n++) {
    *reinterpret_cast<uint32_t *>(dst + g * LD + n * 8 + 2 * c) = pack(acc[n][0] * mul, acc[n][1] * mul);
    *reinterpret_cast<uint32_t *>(dst + (g + 8) * LD + n * 8 + 2 * c) =
        pack(acc[n][2] * mul, acc[n][3] * mul);
  }
}
/* The 16 staged rows → global (row r at dst + r·stride, only rows r0 + r < T), 16 bytes a
 * lane. Call after __syncwarp(). */
template <int HD, int LD>
__device__ __forceinline__ void store_rows(bf16 *dst, size_t stride, const bf16 *sh, int r0, int T) {
  const int lane = threadIdx.x & 31;
  constexpr int CH = HD / 8;
#pragma unroll
  for (int i = lane; i < 16 * CH; i += 32) {
    const int r = i / CH, c = (i % CH) * 8;
    if (r0 + r < T)
      *reinterpret_cast<uint4 *>(dst + (size_t)(r0 + r) * stride + c) =
          *reinterpret_cast<const uint4 *>(sh + r * LD + c);
  }
}

/* ================= forward ================= */
template <int HD, int NW> struct FwdCfg {
  static constexpr int BQ = 16 * NW, BK = 64, LD = HD + 8, NT = 32 * NW;
  static constexpr size_t SMEM = (size_t)(BQ + 4 * BK) * LD * sizeof(bf16); /* Q, 2×K, 2×V */
};

template <int HD, int NW>
__global__ void __launch_bounds__(NW * 32)
    fa_fwd(bf16 *__restrict__ out, float *__restrict__ lse, const bf16 *__restrict__ q,
           const bf16 *__restrict__ k, const bf16 *__restrict__ v, int T, int H, int rep, int qs,
           int kvs, float scale) {
  using C = FwdCfg<HD, NW>;
  constexpr int BQ = C::BQ, BK = C::BK, LD = C::LD, NT = C::NT;
  extern __shared__ __align__(16) unsigned char fa_sh[];
  bf16 *Qs = reinterpret_cast<bf16 *>(fa_sh);
  bf16 *Ks = Qs + BQ * LD; /* [2][BK][LD] */
  bf16 *Vs = Ks + 2 * BK * LD;

  const int qb = gridDim.x - 1 - blockIdx.x; /* the longest (last) query blocks first */
  const int h = blockIdx.y, b = blockIdx.z, g = h / rep;
  const int q0 = qb * BQ;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, gr = lane >> 2, gc = lane & 3;
  const bf16 *qg = q + (size_t)b * T * qs + (size_t)h * HD;
  const bf16 *kg = k + (size_t)b * T * kvs + (size_t)g * HD;
  const bf16 *vg = v + (size_t)b * T * kvs + (size_t)g * HD;
  const int nkb = (min(q0 + BQ, T) - 1) / BK + 1; /* key blocks with a visible key */

  load_tile<BQ, HD, LD, NT>(Qs, qg, qs, q0, T);
  load_tile<BK, HD, LD, NT>(Ks, kg, kvs, 0, T);
  load_tile<BK, HD, LD, NT>(Vs, vg, kvs, 0, T);
  cp_commit();

  float o[HD / 8][4];
#pragma unroll
  for (int n = 0; n < HD / 8; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  uint32_t qf[HD / 16][4];
  const float sl2 = scale * LOG2E;
  const int row0 = q0 + warp * 16 + gr; /* this thread's rows: row0, row0 + 8 */

  for (int kb = 0; kb < nkb; kb++) {
    const int buf = kb & 1;
    if (kb + 1 < nkb) {
      load_tile<BK, HD, LD, NT>(Ks + (buf ^ 1) * BK * LD, kg, kvs, (kb + 1) * BK, T);
      load_tile<BK, HD, LD, NT>(Vs + (buf ^ 1) * BK * LD, vg, kvs, (kb + 1) * BK, T);
      cp_commit();
      cp_wait<1>();
    } else {
      cp_wait<0>();
    }
    __syncthreads();
    if (kb == 0) {
#pragma unroll
      for (int ks = 0; ks < HD / 16; ks++)
        ldsm4(qf[ks], Qs + (warp * 16 + (lane & 15)) * LD + ks * 16 + (lane >> 4) * 8);
    }
    const bf16 *Kb = Ks + buf * BK * LD, *Vb = Vs + buf * BK * LD;

    /* S = Q·Kᵀ: 16 × BK per warp */
    float s[BK / 8][4];
#pragma unroll
    for (int n = 0; n < BK / 8; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < HD / 16; ks++) {
#pragma unroll
      for (int np = 0; np < BK / 16; np++) {
        uint32_t kf[4];
        ldsm4(kf, Kb + (np * 16 + (lane & 7) + ((lane >> 4) << 3)) * LD + ks * 16 +
                      ((lane >> 3) & 1) * 8);
        mma(s[2 * np], qf[ks], kf[0], kf[1]);
        mma(s[2 * np + 1], qf[ks], kf[2], kf[3]);
      }
    }
    /* mask keys past the query (causal) or past T, in the blocks that reach them */
    const int k0 = kb * BK;
    if (k0 + BK > q0 || k0 + BK > T) {
#pragma unroll
      for (int n = 0; n < BK / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int key = k0 + n * 8 + 2 * gc + (e & 1), row = row0 + (e >> 1) * 8;
          if (key > row || key >= T) s[n][e] = -INFINITY;
        }
    }
    /* online softmax, rows r = 0 (row0) and 1 (row0 + 8) */
#pragma unroll
    for (int r = 0; r < 2; r++) {
      float mx = -INFINITY;
#pragma unroll
      for (int n = 0; n < BK / 8; n++) mx = fmaxf(mx, fmaxf(s[n][2 * r], s[n][2 * r + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float mn = fmaxf(m[r], mx);
      const float mb = mn == -INFINITY ? 0.0f : mn * sl2; /* a row with nothing visible yet */
      const float corr = exp2f(m[r] * sl2 - mb);          /* m = −inf: 0 */
      float sum = 0.0f;
#pragma unroll
      for (int n = 0; n < BK / 8; n++) {
        s[n][2 * r] = exp2f(fmaf(s[n][2 * r], sl2, -mb));
        s[n][2 * r + 1] = exp2f(fmaf(s[n][2 * r + 1], sl2, -mb));
        sum += s[n][2 * r] + s[n][2 * r + 1];
      }
      l[r] = l[r] * corr + sum;
      m[r] = mn;
#pragma unroll
      for (int n = 0; n < HD / 8; n++) o[n][2 * r] *= corr, o[n][2 * r + 1] *= corr;
    }
    /* O += P·V */
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) {
      const uint32_t pa[4] = {pack(s[2 * kk][0], s[2 * kk][1]), pack(s[2 * kk][2], s[2 * kk][3]),
                              pack(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int dp = 0; dp < HD / 16; dp++) {
        uint32_t vf[4];
        ldsm4t(vf, Vb + (kk * 16 + (lane & 15)) * LD + dp * 16 + (lane >> 4) * 8);
        mma(o[2 * dp], pa, vf[0], vf[1]);
        mma(o[2 * dp + 1], pa, vf[2], vf[3]);
      }
    }
    __syncthreads(); /* the next iteration's copy overwrites buffer buf ^ 1's partner */
  }

  /* epilogue: l over the quad, out = O / l through this warp's own rows of Qs */
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; r++) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    inv[r] = 1.0f / l[r];
    const int row = row0 + r * 8;
    if (lse && gc == 0 && row < T) lse[((size_t)b * H + h) * T + row] = m[r] * scale + logf(l[r]);
  }
  bf16 *Qw = Qs + warp * 16 * LD;
#pragma unroll
  for (int n = 0; n < HD / 8; n++) {
    *reinterpret_cast<uint32_t *>(Qw + gr * LD + n * 8 + 2 * gc) = pack(o[n][0] * inv[0], o[n][1] * inv[0]);
    *reinterpret_cast<uint32_t *>(Qw + (gr + 8) * LD + n * 8 + 2 * gc) =
        pack(o[n][2] * inv[1], o[n][3] * inv[1]);
  }
  __syncwarp();
  store_rows<HD, LD>(out + (size_t)b * T * H * HD + (size_t)h * HD, (size_t)H * HD, Qw,
                     q0 + warp * 16, T);
}

/* ================= backward: dK, dV ================= */
template <int HD, int NW, int BQ> struct DkvCfg {
  static constexpr int BKV = 16 * NW, LD = HD + 8, NT = 32 * NW;
  /* K, V; 2×Q, 2×dO; 2×lse, 2×D */
  static constexpr size_t SMEM =
      (size_t)(2 * BKV + 4 * BQ) * LD * sizeof(bf16) + 4 * BQ * sizeof(float);
};

template <int HD, int NW, int BQ>
__global__ void __launch_bounds__(NW * 32)
    fa_dkdv(bf16 *__restrict__ dk, bf16 *__restrict__ dv, const bf16 *__restrict__ dout,
            const bf16 *__restrict__ q, const bf16 *__restrict__ k, const bf16 *__restrict__ v,
            const float *__restrict__ lse, const float *__restrict__ D, int T, int H, int rep,
            int qs, int kvs, float scale) {
  using C = DkvCfg<HD, NW, BQ>;
  constexpr int BKV = C::BKV, LD = C::LD, NT = C::NT;
  extern __shared__ __align__(16) unsigned char fa_sh[];
  bf16 *Ks = reinterpret_cast<bf16 *>(fa_sh);
  bf16 *Vs = Ks + BKV * LD;
  bf16 *Qs = Vs + BKV * LD;  /* [2][BQ][LD] */
  bf16 *Os = Qs + 2 * BQ * LD; /* dO, [2][BQ][LD] */
  float *Ls = reinterpret_cast<float *>(Os + 2 * BQ * LD); /* [2][BQ] */
  float *Dsh = Ls + 2 * BQ;                                 /* [2][BQ] */

  const int kb = blockIdx.x; /* the longest (first) key blocks first */
  const int g = blockIdx.y, b = blockIdx.z, Hh = H;
  const int k0 = kb * BKV;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, gr = lane >> 2, gc = lane & 3;
  const bf16 *kg = k + (size_t)b * T * kvs + (size_t)g * HD;
  const bf16 *vg = v + (size_t)b * T * kvs + (size_t)g * HD;
  const int qb0 = k0 / BQ, nqb = (T + BQ - 1) / BQ, nq = nqb - qb0;
  const int niter = rep * nq;
  const size_t ostride = (size_t)Hh * HD;

  /* iteration it → query head h = g·rep + it / nq, query tile qb0 + it % nq */
  auto load_q = [&](int it, int bsel) {
    const int h = g * rep + it / nq, qt0 = (qb0 + it % nq) * BQ;
    load_tile<BQ, HD, LD, NT>(Qs + bsel * BQ * LD, q + (size_t)b * T * qs + (size_t)h * HD, qs, qt0, T);
    load_tile<BQ, HD, LD, NT>(Os + bsel * BQ * LD, dout + (size_t)b * T * ostride + (size_t)h * HD,
                              ostride, qt0, T);
    const float *lr = lse + ((size_t)b * Hh + h) * T, *dr = D + ((size_t)b * Hh + h) * T;
    for (int i = threadIdx.x; i < BQ; i += NT) {
      const bool ok = qt0 + i < T;
      cp4(Ls + bsel * BQ + i, ok ? lr + qt0 + i : lr, ok);
      cp4(Dsh + bsel * BQ + i, ok ? dr + qt0 + i : dr, ok);
    }
  };

  load_tile<BKV, HD, LD, NT>(Ks, kg, kvs, k0, T);
  load_tile<BKV, HD, LD, NT>(Vs, vg, kvs, k0, T);
  load_q(0, 0);
  cp_commit();

  float dka[HD / 8][4], dva[HD / 8][4];
#pragma unroll
  for (int n = 0; n < HD / 8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) dka[n][e] = dva[n][e] = 0.0f;
  const float sl2 = scale * LOG2E;
  const int key0 = k0 + warp * 16 + gr; /* this thread's keys: key0, key0 + 8 */
  const bf16 *Kw = Ks + warp * 16 * LD, *Vw = Vs + warp * 16 * LD;

  for (int it = 0; it < niter; it++) {
    const int buf = it & 1;
    if (it + 1 < niter) {
      load_q(it + 1, buf ^ 1);
      cp_commit();
      cp_wait<1>();
    } else {
      cp_wait<0>();
    }
    __syncthreads();
    const int qt0 = (qb0 + it % nq) * BQ;
    const bf16 *Qb = Qs + buf * BQ * LD, *Ob = Os + buf * BQ * LD;
    const float *Lb = Ls + buf * BQ, *Db = Dsh + buf * BQ;

    /* Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ: 16 keys × BQ queries per warp */
    float st[BQ / 8][4], dpt[BQ / 8][4];
#pragma unroll
    for (int n = 0; n < BQ / 8; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) st[n][e] = dpt[n][e] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < HD / 16; ks++) {
      uint32_t ka[4], va[4];
      ldsm4(ka, Kw + (lane & 15) * LD + ks * 16 + (lane >> 4) * 8);
      ldsm4(va, Vw + (lane & 15) * LD + ks * 16 + (lane >> 4) * 8);
#pragma unroll
      for (int np = 0; np < BQ / 16; np++) {
        const int off = (np * 16 + (lane & 7) + ((lane >> 4) << 3)) * LD + ks * 16 + ((lane >> 3) & 1) * 8;
        uint32_t qf[4], of[4];
        ldsm4(qf, Qb + off);
        ldsm4(of, Ob + off);
        mma(st[2 * np], ka, qf[0], qf[1]);
        mma(st[2 * np + 1], ka, qf[2], qf[3]);
        mma(dpt[2 * np], va, of[0], of[1]);
        mma(dpt[2 * np + 1], va, of[2], of[3]);
      }
    }
    /* Pᵀ = exp(Sᵀ·scale − lse) (0 where query < key or query ≥ T), dSᵀ = Pᵀ∘(dPᵀ − D) */
    const bool edge = qt0 < k0 + BKV || qt0 + BQ > T;
#pragma unroll
    for (int n = 0; n < BQ / 8; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int qi = n * 8 + 2 * gc + (e & 1), key = key0 + (e >> 1) * 8;
        float p = exp2f(fmaf(st[n][e], sl2, -Lb[qi] * LOG2E));
        if (edge && (qt0 + qi < key || qt0 + qi >= T)) p = 0.0f;
        st[n][e] = p;
        dpt[n][e] = p * (dpt[n][e] - Db[qi]);
      }
    /* dV += Pᵀ·dO, dK += dSᵀ·Q (reduction over the BQ queries) */
#pragma unroll
    for (int kk = 0; kk < BQ / 16; kk++) {
      const uint32_t pa[4] = {pack(st[2 * kk][0], st[2 * kk][1]), pack(st[2 * kk][2], st[2 * kk][3]),
                              pack(st[2 * kk + 1][0], st[2 * kk + 1][1]),
                              pack(st[2 * kk + 1][2], st[2 * kk + 1][3])};
      const uint32_t da[4] = {pack(dpt[2 * kk][0], dpt[2 * kk][1]), pack(dpt[2 * kk][2], dpt[2 * kk][3]),
                              pack(dpt[2 * kk + 1][0], dpt[2 * kk + 1][1]),
                              pack(dpt[2 * kk + 1][2], dpt[2 * kk + 1][3])};
#pragma unroll
      for (int dp = 0; dp < HD / 16; dp++) {
        const int off = (kk * 16 + (lane & 15)) * LD + dp * 16 + (lane >> 4) * 8;
        uint32_t of[4], qf[4];
        ldsm4t(of, Ob + off);
        ldsm4t(qf, Qb + off);
        mma(dva[2 * dp], pa, of[0], of[1]);
        mma(dva[2 * dp + 1], pa, of[2], of[3]);
        mma(dka[2 * dp], da, qf[0], qf[1]);
        mma(dka[2 * dp + 1], da, qf[2], qf[3]);
      }
    }
    __syncthreads();
  }

  /* epilogue: each warp stages its own 16 rows of Ks / Vs (only it reads them) */
  bf16 *Kx = Ks + warp * 16 * LD, *Vx = Vs + warp * 16 * LD;
  stage_rows<HD, LD>(Kx, dka, scale);
  stage_rows<HD, LD>(Vx, dva, 1.0f);
  __syncwarp();
  store_rows<HD, LD>(dk + (size_t)b * T * kvs + (size_t)g * HD, kvs, Kx, k0 + warp * 16, T);
  store_rows<HD, LD>(dv + (size_t)b * T * kvs + (size_t)g * HD, kvs, Vx, k0 + warp * 16, T);
}

/* ================= backward: dQ ================= */
template <int HD, int NW, int BK> struct DqCfg {
  static constexpr int BQ = 16 * NW, LD = HD + 8, NT = 32 * NW;
  static constexpr size_t SMEM = (size_t)(2 * BQ + 4 * BK) * LD * sizeof(bf16); /* Q, dO, 2×K, 2×V */
};

template <int HD, int NW, int BK>
__global__ void __launch_bounds__(NW * 32)
    fa_dq(bf16 *__restrict__ dq, const bf16 *__restrict__ dout, const bf16 *__restrict__ q,
          const bf16 *__restrict__ k, const bf16 *__restrict__ v, const float *__restrict__ lse,
          const float *__restrict__ D, int T, int H, int rep, int qs, int kvs, float scale) {
  using C = DqCfg<HD, NW, BK>;
  constexpr int BQ = C::BQ, LD = C::LD, NT = C::NT;
  extern __shared__ __align__(16) unsigned char fa_sh[];
  bf16 *Qs = reinterpret_cast<bf16 *>(fa_sh);
  bf16 *Os = Qs + BQ * LD;
  bf16 *Ks = Os + BQ * LD; /* [2][BK][LD] */
  bf16 *Vs = Ks + 2 * BK * LD;

  const int qb = gridDim.x - 1 - blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z, g = h / rep;
  const int q0 = qb * BQ;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, gr = lane >> 2, gc = lane & 3;
  const size_t ostride = (size_t)H * HD;
  const bf16 *kg = k + (size_t)b * T * kvs + (size_t)g * HD;
  const bf16 *vg = v + (size_t)b * T * kvs + (size_t)g * HD;
  const int nkb = (min(q0 + BQ, T) - 1) / BK + 1;

  load_tile<BQ, HD, LD, NT>(Qs, q + (size_t)b * T * qs + (size_t)h * HD, qs, q0, T);
  load_tile<BQ, HD, LD, NT>(Os, dout + (size_t)b * T * ostride + (size_t)h * HD, ostride, q0, T);
  load_tile<BK, HD, LD, NT>(Ks, kg, kvs, 0, T);
  load_tile<BK, HD, LD, NT>(Vs, vg, kvs, 0, T);
  cp_commit();

  const int row0 = q0 + warp * 16 + gr; /* rows row0, row0 + 8 */
  float lr[2], dr[2];
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const int row = row0 + r * 8;
    const size_t i = ((size_t)b * H + h) * T + row;
    lr[r] = row < T ? lse[i] * LOG2E : 0.0f;
    dr[r] = row < T ? D[i] : 0.0f;
  }
  const float sl2 = scale * LOG2E;
  float acc[HD / 8][4];
#pragma unroll
  for (int n = 0; n < HD / 8; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
  const bf16 *Qw = Qs + warp * 16 * LD, *Ow = Os + warp * 16 * LD;

  for (int kb = 0; kb < nkb; kb++) {
    const int buf = kb & 1;
    if (kb + 1 < nkb) {
      load_tile<BK, HD, LD, NT>(Ks + (buf ^ 1) * BK * LD, kg, kvs, (kb + 1) * BK, T);
      load_tile<BK, HD, LD, NT>(Vs + (buf ^ 1) * BK * LD, vg, kvs, (kb + 1) * BK, T);
      cp_commit();
      cp_wait<1>();
    } else {
      cp_wait<0>();
    }
    __syncthreads();
    const bf16 *Kb = Ks + buf * BK * LD, *Vb = Vs + buf * BK * LD;
    const int k0 = kb * BK;

    /* S = Q·Kᵀ, dP = dO·Vᵀ: 16 × BK per warp */
    float s[BK / 8][4], dp[BK / 8][4];
#pragma unroll
    for (int n = 0; n < BK / 8; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) s[n][e] = dp[n][e] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < HD / 16; ks++) {
      uint32_t qa[4], oa[4];
      ldsm4(qa, Qw + (lane & 15) * LD + ks * 16 + (lane >> 4) * 8);
      ldsm4(oa, Ow + (lane & 15) * LD + ks * 16 + (lane >> 4) * 8);
#pragma unroll
      for (int np = 0; np < BK / 16; np++) {
        const int off = (np * 16 + (lane & 7) + ((lane >> 4) << 3)) * LD + ks * 16 + ((lane >> 3) & 1) * 8;
        uint32_t kf[4], vf[4];
        ldsm4(kf, Kb + off);
        ldsm4(vf, Vb + off);
        mma(s[2 * np], qa, kf[0], kf[1]);
        mma(s[2 * np + 1], qa, kf[2], kf[3]);
        mma(dp[2 * np], oa, vf[0], vf[1]);
        mma(dp[2 * np + 1], oa, vf[2], vf[3]);
      }
    }
    /* P = exp(S·scale − lse) (0 past the diagonal or T), dS = P∘(dP − D) */
    const bool edge = k0 + BK > q0 || k0 + BK > T;
#pragma unroll
    for (int n = 0; n < BK / 8; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int key = k0 + n * 8 + 2 * gc + (e & 1), row = row0 + (e >> 1) * 8, r = e >> 1;
        float p = exp2f(fmaf(s[n][e], sl2, -lr[r]));
        if (edge && (key > row || key >= T)) p = 0.0f;
        dp[n][e] = p * (dp[n][e] - dr[r]);
      }
    /* dQ += dS·K (reduction over the BK keys; K read transposed) */
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) {
      const uint32_t da[4] = {pack(dp[2 * kk][0], dp[2 * kk][1]), pack(dp[2 * kk][2], dp[2 * kk][3]),
                              pack(dp[2 * kk + 1][0], dp[2 * kk + 1][1]),
                              pack(dp[2 * kk + 1][2], dp[2 * kk + 1][3])};
#pragma unroll
      for (int dn = 0; dn < HD / 16; dn++) {
        uint32_t kf[4];
        ldsm4t(kf, Kb + (kk * 16 + (lane & 15)) * LD + dn * 16 + (lane >> 4) * 8);
        mma(acc[2 * dn], da, kf[0], kf[1]);
        mma(acc[2 * dn + 1], da, kf[2], kf[3]);
      }
    }
    __syncthreads();
  }

  bf16 *Qx = Qs + warp * 16 * LD; /* this warp's own rows (only it read them) */
  stage_rows<HD, LD>(Qx, acc, scale);
  __syncwarp();
  store_rows<HD, LD>(dq + (size_t)b * T * qs + (size_t)h * HD, qs, Qx, q0 + warp * 16, T);
}

/* ---- configurations ---- */
constexpr int FWD_NW = 4;           /* 64 query rows a block, 64-key tiles */
constexpr int DKV_NW = 4;           /* 64 key rows a block */
constexpr int DKV_BQ64 = 64, DKV_BQ128 = 32;  /* query tile of the dK/dV loop (registers) */
constexpr int DQ_NW = 4;            /* 64 query rows a block */
constexpr int DQ_BK64 = 64, DQ_BK128 = 32;    /* key tile of dQ (shared memory ≤ 99 KB: sm_89) */

template <typename K> void set_smem(K kern, size_t bytes) {
  /* once per kernel instance; a host-side attribute, no allocation or synchronization */
  TZC_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}

template <int HD, int BQd, int BKq>
void bwd_hd(cudaStream_t st, bf16 *dq, bf16 *dk, bf16 *dv, const bf16 *dout, const bf16 *q,
            const bf16 *k, const bf16 *v, const float *lse, const float *D, int B, int T, int H,
            int KVH, int qs, int kvs) {
  const float scale = 1.0f / sqrtf((float)HD);
  const int rep = H / KVH;
  {
    using C = DkvCfg<HD, DKV_NW, BQd>;
    static bool init = false;
    if (!init) set_smem(fa_dkdv<HD, DKV_NW, BQd>, C::SMEM), init = true;
    dim3 grid((T + C::BKV - 1) / C::BKV, KVH, B);
    fa_dkdv<HD, DKV_NW, BQd><<<grid, C::NT, C::SMEM, st>>>(dk, dv, dout, q, k, v, lse, D, T, H,
                                                           rep, qs, kvs, scale);
    TZC_LAUNCHED();
  }
  {
    using C = DqCfg<HD, DQ_NW, BKq>;
    static bool init = false;
    if (!init) set_smem(fa_dq<HD, DQ_NW, BKq>, C::SMEM), init = true;
    dim3 grid((T + C::BQ - 1) / C::BQ, H, B);
    fa_dq<HD, DQ_NW, BKq><<<grid, C::NT, C::SMEM, st>>>(dq, dout, q, k, v, lse, D, T, H, rep, qs,
                                                        kvs, scale);
    TZC_LAUNCHED();
  }
}

template <int HD>
void fwd_hd(cudaStream_t st, bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v,
            int B, int T, int H, int KVH, int qs, int kvs) {
  using C = FwdCfg<HD, FWD_NW>;
  static bool init = false;
  if (!init) set_smem(fa_fwd<HD, FWD_NW>, C::SMEM), init = true;
  dim3 grid((T + C::BQ - 1) / C::BQ, H, B);
  fa_fwd<HD, FWD_NW><<<grid, C::NT, C::SMEM, st>>>(out, lse, q, k, v, T, H, H / KVH, qs, kvs,
                                                   1.0f / sqrtf((float)HD));
  TZC_LAUNCHED();
}

template <int HD, int BQd, int BKq> constexpr size_t smem_max() {
  const size_t a = FwdCfg<HD, FWD_NW>::SMEM, b = DkvCfg<HD, DKV_NW, BQd>::SMEM,
               c = DqCfg<HD, DQ_NW, BKq>::SMEM;
  return a > b ? (a > c ? a : c) : (b > c ? b : c);
}

} // namespace

size_t tzc_fa_smem_bytes(int hd) {
  return hd == 64 ? smem_max<64, DKV_BQ64, DQ_BK64>() : smem_max<128, DKV_BQ128, DQ_BK128>();
}

void tzc_fa_fwd(cudaStream_t st, bf16 *out, float *lse, const bf16 *q, const bf16 *k,
                const bf16 *v, int B, int T, int H, int KVH, int hd, int qs, int kvs) {
  if (hd == 64)
    fwd_hd<64>(st, out, lse, q, k, v, B, T, H, KVH, qs, kvs);
  else
    fwd_hd<128>(st, out, lse, q, k, v, B, T, H, KVH, qs, kvs);
}

void tzc_fa_bwd(cudaStream_t st, bf16 *dq, bf16 *dk, bf16 *dv, const bf16 *dout, const bf16 *q,
                const bf16 *k, const bf16 *v, const float *lse, const float *D, int B, int T,
                int H, int KVH, int hd, int qs, int kvs) {
  if (hd == 64)
    bwd_hd<64, DKV_BQ64, DQ_BK64>(st, dq, dk, dv, dout, q, k, v, lse, D, B, T, H, KVH, qs, kvs);
  else
    bwd_hd<128, DKV_BQ128, DQ_BK128>(st, dq, dk, dv, dout, q, k, v, lse, D, B, T, H, KVH, qs, kvs);
}
