/* FlashAttention-2 (Dao 2023) on tensor cores: bf16, head_dim 64 or 128, causal, GQA, the
 * training form (Tq == Tk == T, q_pos0 = 0). attention.cu chooses this path and checks its
 * preconditions (every head row 16-byte aligned: strides multiples of 8 elements).
 *
 * Building blocks (sm_80+): mma.sync.m16n8k16 bf16 → fp32; ldmatrix (x4, .trans for the
 * operands whose reduction dim runs down the shared-memory rows); cp.async 16-byte copies
 * of tiles into shared memory, double-buffered (the next tile loads while this one is
 * computed), rows past T zero-filled, the copy loop fully unrolled (compile-time trip count:
 * the generic strided loop cost ~40% of the forward's instructions). Shared-memory rows are padded by 8 elements (16 bytes)
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
 * Kernels (every warp owns 16·MT consecutive rows of its block, MT m-tiles, and never shares
 * accumulators; a tile wholly past the warp's rows (fwd, dQ) or before its keys (dK/dV) is
 * skipped by that warp; exponentials are ex2.approx.ftz, one MUFU each):
 *   fa_fwd   block = (b, h, 16·NW·MT query rows); K/V tiles of 64 keys over key blocks ≤ the
 *            diagonal (the blocks past it are never loaded; the ones that cross it are
 *            masked). Q fragments in registers; S = Q·Kᵀ, online softmax in fp32 (exp2 with
 *            scale·log2 e folded in; the row sum stays per-thread and is reduced over the
 *            quad at the end), O += P·V with P rounded to bf16. out = O / l (bf16, through
 *            shared memory for 16-byte stores); lse = m·scale + log l.
 *   fa_dkdv  block = (b, kv head g, 16·NW·MT key rows); loops over the query heads of the group
 *            and the query tiles of BQ rows that see its keys (t ≥ the block's first key):
 *            Sᵀ = K·Qᵀ, Pᵀ = exp(Sᵀ·scale − lse), dPᵀ = V·dOᵀ, dSᵀ = Pᵀ∘(dPᵀ − D),
 *            dV += Pᵀ·dO, dK += dSᵀ·Q; dK·scale at the end.
 *   fa_dq    block = (b, h, 16·NW·MT query rows); over key tiles of BK keys ≤ the diagonal:
 *            S = Q·Kᵀ, dP = dO·Vᵀ, dS = P∘(dP − D), dQ += dS·K; dQ·scale at the end.
 *            Q / dO fragments in registers at head_dim 64 (QREG).
 *   ds path  (the default; attention.cu's TEZGAH_CUDA_ATTN_BWD): fa_dkdv<DSM > 0> also stores
 *            its dSᵀ tiles (bf16, the values dK's product uses) to a scratch of B·H·T²/2
 *            elements (packed causal tiles, ds_tile()), and fa_dq_ds computes dQ = dS·K from it
 *            as a plain tiled matmul: 5 matmul units a step instead of 7 (S and dP are no longer
 *            recomputed for dQ: FlashAttention-2's count, Dao 2023 alg. 2, whose dQ atomics this
 *            replaces with a stored dS and one owner per dQ row), for ~2·B·H·T² bytes of DRAM
 *            traffic. fa_dkdv writes dS through a per-warp stmatrix stage as 16-byte row
 *            stores (DSM 2, the default) or straight from the fragments with 4-byte stores
 *            (DSM 1, TEZGAH_CUDA_ATTN_DS_STORE=4); fa_dq_ds runs 128-row blocks of 4 warps × 2
 *            m-tiles (ds1, the default), 64-row blocks (ds) or 128 rows of 8 warps (ds2).
 *            H200, bench_cuda_attention, B 16 T 1024, bwd ms (2026-12-03, one call; old = fa_dq
 *            recomputing; ds4 = ds with 4-byte stores, ds and ds1 with 16-byte):
 *              shape                old     ds4     ds      ds1
 *              124M (12 heads, 64)  0.400   0.428   0.374   0.370
 *              GQA 12/4, 64         0.426   0.470   0.406   0.401
 *              6 heads, hd 128      0.463   0.362   0.360   0.358
 *              124M, T 2048, B 8    0.767   0.777   0.672   0.656
 *              350M (16 heads, 64)  0.563   0.551   0.477   0.471
 *            The old run's last three rows are inflated: its forward (the same kernel in every
 *            run) took 0.237 / 0.380 / 0.253 ms there against 0.132 / 0.223 / 0.160 in the
 *            others, and its per-kernel split sums to 0.437 / 0.725 / 0.508 (likely the
 *            peer's torch.compile warm-up, which device_cudabwd.sh runs in the background
 *            through the bench and waits for only after training). The same call's
 *            undisturbed old figures: T 2048 0.713 and 350M 0.508 (its auto run, then old at
 *            head_dim 64), hd 128 ~0.437 (the split). So ds1 against old: 124M −7%, GQA −6%,
 *            T 2048 −8%, 350M −7%, hd 128 ~−18%.
 *            Per kernel at 124M (D, fa_dkdv, dQ ms): old 0.023 / 0.222 / 0.155, ds with 4-byte
 *            stores 0.021 / 0.312 / 0.094, 16-byte 0.023 / 0.257 / 0.094: storing dS costs
 *            fa_dkdv 16% (4-byte: 41%), fa_dq_ds takes 61% of fa_dq's time. Training B 16
 *            T 1024 bf16, tokens/s old vs ds1 (losses identical): 124M 498,364 vs 505,851,
 *            350M 191,881 vs 194,444; Llama-style hd 128 (124M sizes, 6 heads, d_ff 2048) old
 *            469,227 vs ds4 482,555 (torch.compile, same call: 475,423 at 124M, 187,620 at 350M).
 * No atomics: every output element has one owner and a fixed summation order.
 *
 * Measured on an H200 (bench_cuda_attention, GPT-2 shape B 16, 12 heads, T 1024, hd 64), ncu:
 * all three kernels are latency-bound (issue slots ~60% busy, top stalls "wait" and
 * "short_scoreboard" — fixed-latency and MUFU / shared-memory / shuffle dependencies), not
 * shared-memory-bandwidth-bound: halving ldmatrix traffic per FLOP (MT = 2) did not help. */
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
/* stmatrix x4 (sm_90): the inverse of ldsm4, lane l gives the address of row l % 8 of matrix
 * l / 8 and register i goes to matrix i. Older architectures: the same bytes by 4-byte
 * shared-memory stores (addresses as stmatrix's lanes would see them). */
__device__ __forceinline__ void stsm4(bf16 *p, const uint32_t (&r)[4]) {
#if __CUDA_ARCH__ >= 900
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};\n" ::"r"(saddr(p)),
               "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
#else
  const int lane = threadIdx.x & 31;
  /* lane l's own fragment: register i is matrix i's (row l / 4, columns 2(l % 4)..+1); that
   * row's address is lane 8i + l / 4's */
#pragma unroll
  for (int i = 0; i < 4; i++) {
    const unsigned a = (unsigned)__shfl_sync(0xffffffffu, (unsigned)saddr(p), 8 * i + lane / 4);
    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a + 4 * (lane % 4)), "r"(r[i]) : "memory");
  }
#endif
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
/* 2^x on the special-function unit (one MUFU.EX2; exp2f adds range fix-ups for results
 * below 2^-126, which flush to 0 here: negligible next to the softmax's other terms). −inf → 0. */
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
/* two floats → bf16x2, lo in the low half (the lower column index) */
__device__ __forceinline__ uint32_t pack(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t *>(&v);
}

/* ---- fragment helpers (mma.m16n8k16 register layouts) ---- */
/* zero MT × N accumulator fragments (16 rows × 8 columns each) */
template <int MT, int N> __device__ __forceinline__ void zero_frags(float (&x)[MT][N][4]) {
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int n = 0; n < N; n++) x[mt][n][0] = x[mt][n][1] = x[mt][n][2] = x[mt][n][3] = 0.0f;
}
/* The A fragment (16 rows × 16 columns, bf16) of accumulator columns [16·kk, 16·kk + 16):
 * the C layout of two adjacent 8-column tiles is the A layout of one 16-column slice, so a
 * product stays in registers as the next product's left operand (FlashAttention-2's P·V). */
template <int N>
__device__ __forceinline__ void frags_to_a(uint32_t (&a)[4], const float (&c)[N][4], int kk) {
  a[0] = pack(c[2 * kk][0], c[2 * kk][1]);
  a[1] = pack(c[2 * kk][2], c[2 * kk][3]);
  a[2] = pack(c[2 * kk + 1][0], c[2 * kk + 1][1]);
  a[3] = pack(c[2 * kk + 1][2], c[2 * kk + 1][3]);
}
/* acc[mt] (16 rows × HD) += a[mt] (16 × 16) · B, B = rows [r0, r0 + 16) × HD of a row-major
 * shared tile Bs (row stride LD), read by ldmatrix.trans as the column-major B operand: O += P·V,
 * dQ += dS·K. */
template <int MT, int HD, int LD>
__device__ __forceinline__ void mma_rows(float (&acc)[MT][HD / 8][4], const uint32_t (&a)[MT][4],
                                         const bf16 *Bs, int r0, int lane) {
#pragma unroll
  for (int dn = 0; dn < HD / 16; dn++) {
    uint32_t f[4];
    ldsm4t(f, Bs + (r0 + (lane & 15)) * LD + dn * 16 + (lane >> 4) * 8);
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
      mma(acc[mt][2 * dn], a[mt], f[0], f[1]);
      mma(acc[mt][2 * dn + 1], a[mt], f[2], f[3]);
    }
  }
}
/* Two products side by side over one 16-wide slice ks of the reduction (head_dim):
 * c1[mt] += a1[mt]·B1ᵀ and c2[mt] += a2[mt]·B2ᵀ, B1 / B2 = N·8 rows of row-major shared tiles
 * (row stride LD), columns [16·ks, 16·ks + 16), read by ldmatrix as the B operand (a row of the
 * tile is a column of B): S = Q·Kᵀ with dP = dO·Vᵀ, and Sᵀ = K·Qᵀ with dPᵀ = V·dOᵀ. */
template <int MT, int N, int LD>
__device__ __forceinline__ void mma_cols2(float (&c1)[MT][N][4], float (&c2)[MT][N][4],
                                          const uint32_t (&a1)[MT][4], const uint32_t (&a2)[MT][4],
                                          const bf16 *B1, const bf16 *B2, int ks, int lane) {
#pragma unroll
  for (int np = 0; np < N / 2; np++) {
    const int off = (np * 16 + (lane & 7) + ((lane >> 4) << 3)) * LD + ks * 16 + ((lane >> 3) & 1) * 8;
    uint32_t f1[4], f2[4];
    ldsm4(f1, B1 + off);
    ldsm4(f2, B2 + off);
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
      mma(c1[mt][2 * np], a1[mt], f1[0], f1[1]);
      mma(c1[mt][2 * np + 1], a1[mt], f1[2], f1[3]);
      mma(c2[mt][2 * np], a2[mt], f2[0], f2[1]);
      mma(c2[mt][2 * np + 1], a2[mt], f2[2], f2[3]);
    }
  }
}

/* ---- tile helpers ---- */
/* ROWS rows × HD columns from global (row r at src + r·stride, rows r0 + r ≥ T zero-filled)
 * into shared dst (row stride LD), by NT threads, 16 bytes each. Fully unrolled: thread t
 * copies column chunk t % CH of rows t / CH + j·(NT / CH) (the loop bounds are compile-time,
 * so no trip-count or remainder code; the per-chunk cost is an add, a compare and the copy). */
template <int ROWS, int HD, int LD, int NT>
__device__ __forceinline__ void load_tile(bf16 *dst, const bf16 *src, size_t stride, int r0,
                                          int T) {
  constexpr int CH = HD / 8; /* 16-byte chunks per row */
  static_assert(NT % CH == 0 && (ROWS * CH) % NT == 0, "tile not a whole number of passes");
  constexpr int RS = NT / CH, NIT = ROWS * CH / NT;
  const int r = threadIdx.x / CH, c = (threadIdx.x % CH) * 8;
  const bf16 *sp = src + (size_t)(r0 + r) * stride + c;
  const size_t step = (size_t)RS * stride;
  bf16 *dp = dst + r * LD + c;
#pragma unroll
  for (int j = 0; j < NIT; j++) {
    const bool ok = r0 + r + j * RS < T;
    cp16(dp + j * RS * LD, ok ? sp + j * step : src, ok);
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
/* MT m-tiles a warp: the warp owns 16·MT consecutive rows of the block, and every K / V
 * fragment it loads from shared memory feeds MT mma's (shared-memory traffic per FLOP / MT). */
template <int HD, int NW, int MT> struct FwdCfg {
  static constexpr int BQ = 16 * NW * MT, BK = 64, LD = HD + 8, NT = 32 * NW;
  static constexpr size_t SMEM = (size_t)(BQ + 4 * BK) * LD * sizeof(bf16); /* Q, 2×K, 2×V */
};

/* Blocks an SM should hold at once (__launch_bounds__' second argument: the register cap
 * that allows it, 65536 / (128·blocks)). Without one, ptxas drifts a few registers past a
 * step (130 → 3 blocks instead of 4); with 1, it takes up to 255. */
template <int HD, int MT> constexpr int fwd_blocks() { return HD == 64 && MT == 1 ? 4 : 2; }
template <int HD, int MT> constexpr int dkdv_blocks() { return HD == 64 && MT == 1 ? 3 : 2; }
template <int HD, int MT, int BK> constexpr int dq_blocks() {
  return MT == 1 ? (HD == 64 && BK <= 32 ? 4 : 3) : 2;
}

template <int HD, int NW, int MT>
__global__ void __launch_bounds__(NW * 32, (fwd_blocks<HD, MT>()))
    fa_fwd(bf16 *__restrict__ out, float *__restrict__ lse, const bf16 *__restrict__ q,
           const bf16 *__restrict__ k, const bf16 *__restrict__ v, int T, int H, int rep, int qs,
           int kvs, float scale) {
  using C = FwdCfg<HD, NW, MT>;
  constexpr int BQ = C::BQ, BK = C::BK, LD = C::LD, NT = C::NT, WR = 16 * MT;
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

  float o[MT][HD / 8][4];
  zero_frags(o);
  float m[MT][2], l[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; mt++) m[mt][0] = m[mt][1] = -INFINITY, l[mt][0] = l[mt][1] = 0.0f;
  uint32_t qf[MT][HD / 16][4];
  const float sl2 = scale * LOG2E;
  const int wr0 = warp * WR;            /* the warp's first row in the block */
  const int row0 = q0 + wr0 + gr;       /* this thread's rows: row0 + 16·mt (+ 8) */
  const int wlast = q0 + wr0 + WR - 1;  /* the warp's last row */

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
      for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int ks = 0; ks < HD / 16; ks++)
          ldsm4(qf[mt][ks], Qs + (wr0 + mt * 16 + (lane & 15)) * LD + ks * 16 + (lane >> 4) * 8);
    }
    const int k0 = kb * BK;
    if (k0 <= wlast) { /* a tile wholly past the warp's rows (causal) adds nothing */
      const bf16 *Kb = Ks + buf * BK * LD, *Vb = Vs + buf * BK * LD;

      /* S = Q·Kᵀ: 16·MT × BK per warp */
      float s[MT][BK / 8][4];
      zero_frags(s);
#pragma unroll
      for (int ks = 0; ks < HD / 16; ks++) {
#pragma unroll
        for (int np = 0; np < BK / 16; np++) {
          uint32_t kf[4];
          ldsm4(kf, Kb + (np * 16 + (lane & 7) + ((lane >> 4) << 3)) * LD + ks * 16 +
                        ((lane >> 3) & 1) * 8);
#pragma unroll
          for (int mt = 0; mt < MT; mt++) {
            mma(s[mt][2 * np], qf[mt][ks], kf[0], kf[1]);
            mma(s[mt][2 * np + 1], qf[mt][ks], kf[2], kf[3]);
          }
        }
      }
      /* mask keys past the query (causal) or past T, in the blocks that reach them */
      if (k0 + BK > q0 + wr0 || k0 + BK > T) {
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
          for (int n = 0; n < BK / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
              const int key = k0 + n * 8 + 2 * gc + (e & 1), row = row0 + mt * 16 + (e >> 1) * 8;
              if (key > row || key >= T) s[mt][n][e] = -INFINITY;
            }
      }
      /* online softmax, rows r = 0 (row0 + 16·mt) and 1 (+ 8) */
#pragma unroll
      for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
          float mx = -INFINITY;
#pragma unroll
          for (int n = 0; n < BK / 8; n++) mx = fmaxf(mx, fmaxf(s[mt][n][2 * r], s[mt][n][2 * r + 1]));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
          const float mn = fmaxf(m[mt][r], mx);
          const float mb = mn == -INFINITY ? 0.0f : mn * sl2; /* nothing visible yet */
          const float corr = ex2(m[mt][r] * sl2 - mb);      /* m = −inf: 0 */
          float sum = 0.0f;
#pragma unroll
          for (int n = 0; n < BK / 8; n++) {
            s[mt][n][2 * r] = ex2(fmaf(s[mt][n][2 * r], sl2, -mb));
            s[mt][n][2 * r + 1] = ex2(fmaf(s[mt][n][2 * r + 1], sl2, -mb));
            sum += s[mt][n][2 * r] + s[mt][n][2 * r + 1];
          }
          l[mt][r] = l[mt][r] * corr + sum;
          m[mt][r] = mn;
#pragma unroll
          for (int n = 0; n < HD / 8; n++) o[mt][n][2 * r] *= corr, o[mt][n][2 * r + 1] *= corr;
        }
      /* O += P·V */
#pragma unroll
      for (int kk = 0; kk < BK / 16; kk++) {
        uint32_t pa[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) frags_to_a(pa[mt], s[mt], kk);
        mma_rows<MT, HD, LD>(o, pa, Vb, kk * 16, lane);
      }
    }
    __syncthreads(); /* the next iteration's copy overwrites buffer buf ^ 1's partner */
  }

  /* epilogue: l over the quad, out = O / l through this warp's own rows of Qs */
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
      float lr = l[mt][r];
      lr += __shfl_xor_sync(0xffffffffu, lr, 1);
      lr += __shfl_xor_sync(0xffffffffu, lr, 2);
      inv[r] = 1.0f / lr;
      const int row = row0 + mt * 16 + r * 8;
      if (lse && gc == 0 && row < T) lse[((size_t)b * H + h) * T + row] = m[mt][r] * scale + logf(lr);
    }
    bf16 *Qw = Qs + (wr0 + mt * 16) * LD;
#pragma unroll
    for (int n = 0; n < HD / 8; n++) {
      *reinterpret_cast<uint32_t *>(Qw + gr * LD + n * 8 + 2 * gc) =
          pack(o[mt][n][0] * inv[0], o[mt][n][1] * inv[0]);
      *reinterpret_cast<uint32_t *>(Qw + (gr + 8) * LD + n * 8 + 2 * gc) =
          pack(o[mt][n][2] * inv[1], o[mt][n][3] * inv[1]);
    }
    __syncwarp();
    store_rows<HD, LD>(out + (size_t)b * T * H * HD + (size_t)h * HD, (size_t)H * HD, Qw,
                       q0 + wr0 + mt * 16, T);
  }
}

/* ================= backward: dS scratch (the ds path) ================= */
/* dS = P∘(dP − D) (bf16, before the softmax scale) of one (batch, query head), in DS_T × DS_T
 * tiles over the causal lower triangle, packed: tile (query tile i, key tile j ≤ i) at index
 * i(i+1)/2 + j, each tile row-major [key][query] (DS_T keys × DS_T queries, 8 KB): the layout
 * fa_dkdv writes (key rows: 16-byte row stores from its stage, or 4-byte query pairs from the
 * fragments) and fa_dq_ds reads with 16-byte cp.async rows. A (batch, head) holds nt(nt+1)/2
 * tiles, nt = ⌈T / DS_T⌉. Entries of queries ≥ T may be left unwritten (they feed only dQ rows
 * ≥ T, never stored); every key column < nt·DS_T of a written tile is written (masked ones as
 * 0), since it is reduced over. */
constexpr int DS_T = 64;
__host__ __device__ __forceinline__ size_t ds_tiles(int T) {
  const size_t nt = (size_t)(T + DS_T - 1) / DS_T;
  return nt * (nt + 1) / 2;
}
__device__ __forceinline__ bf16 *ds_tile(bf16 *ds, size_t bh, int T, int i, int j) {
  return ds + (bh * ds_tiles(T) + (size_t)i * (i + 1) / 2 + j) * (DS_T * DS_T);
}

/* ================= backward: dK, dV ================= */
/* DSM (how fa_dkdv writes dS): 0 not at all (fa_dq recomputes it), 1 straight from the
 * fragments (4-byte stores: each covers 8 key rows × 16 bytes; TEZGAH_CUDA_ATTN_DS_STORE=4),
 * 2 staged (the default): stmatrix into the warp's own shared-memory stage, then 16-byte stores
 * of whole rows (a warp's store covers 512 contiguous bytes at head_dim 64: 4 instructions a
 * 64-query tile instead of 16). */
template <int HD, int NW, int MT, int BQ, int DSM = 0> struct DkvCfg {
  static constexpr int BKV = 16 * NW * MT, LD = HD + 8, NT = 32 * NW;
  /* K, V; 2×Q, 2×dO; 2×lse, 2×D; DSM 2: a stage of 16·MT × BQ bf16 a warp */
  static constexpr size_t SMEM = (size_t)(2 * BKV + 4 * BQ) * LD * sizeof(bf16) +
                                 4 * BQ * sizeof(float) +
                                 (DSM == 2 ? (size_t)NW * 16 * MT * BQ * sizeof(bf16) : 0);
};
/* The stage's 16-byte chunk ch of row r (CHR chunks a row, no padding) lies at chunk
 * ch ^ swz(r): the 8 rows of one stmatrix 8×8 matrix (one logical chunk) then fall in 8
 * different 16-byte bank groups (rows of 128 bytes: r % 8; of 64: (r / 2) % 4; of 32: (r / 4) % 2),
 * and the 16-byte reads of a row's chunks stay conflict-free too. */
template <int CHR> __device__ __forceinline__ int swz(int r) { return (r * CHR / 8) % CHR; }

/* The rows of the dS tile of (batch·H + query head) bh, query tile qt0 / DS_T, that the warp
 * whose keys start at kw writes (query tile ≥ key tile always: fa_dkdv's loop starts at its
 * block's first key); DSM 1: at this thread's first fragment element (row g, columns 2c..).
 * A function, not a lambda: with a [&] lambda ptxas gave fa_dkdv at head_dim 128 255 registers
 * and 12-24 bytes of spill instead of 240-245 and none (sm_90, nvcc 13.0). */
template <int DSM>
__device__ __forceinline__ bf16 *ds_rows(bf16 *ds, size_t bh, int T, int qt0, int kw) {
  const int lane = threadIdx.x & 31;
  return ds_tile(ds, bh, T, qt0 / DS_T, kw / DS_T) + (kw % DS_T) * DS_T + qt0 % DS_T +
         (DSM == 1 ? (lane >> 2) * DS_T + 2 * (lane & 3) : 0);
}

/* DSM > 0: also store the tile's dS (bf16, unscaled: the A operand dK's product uses) to ds, in
 * the tile-packed layout of ds_tile() above, for fa_dq_ds (no dQ recompute); DkvCfg says how. */
template <int HD, int NW, int MT, int BQ, int DSM>
__global__ void __launch_bounds__(NW * 32, (dkdv_blocks<HD, MT>()))
    fa_dkdv(bf16 *__restrict__ dk, bf16 *__restrict__ dv, bf16 *__restrict__ ds,
            const bf16 *__restrict__ dout, const bf16 *__restrict__ q, const bf16 *__restrict__ k,
            const bf16 *__restrict__ v, const float *__restrict__ lse,
            const float *__restrict__ D, int T, int H, int rep, int qs, int kvs, float scale) {
  using C = DkvCfg<HD, NW, MT, BQ, DSM>;
  constexpr int BKV = C::BKV, LD = C::LD, NT = C::NT, WR = 16 * MT;
  constexpr bool DS = DSM > 0;
  constexpr int CHR = BQ / 8; /* 16-byte chunks in a query tile's dS row */
  static_assert(!DS || (DS_T % BQ == 0 && DS_T % WR == 0),
                "a query tile and a warp's keys must lie in one dS tile");
  extern __shared__ __align__(16) unsigned char fa_sh[];
  bf16 *Ks = reinterpret_cast<bf16 *>(fa_sh);
  bf16 *Vs = Ks + BKV * LD;
  bf16 *Qs = Vs + BKV * LD;  /* [2][BQ][LD] */
  bf16 *Os = Qs + 2 * BQ * LD; /* dO, [2][BQ][LD] */
  float *Ls = reinterpret_cast<float *>(Os + 2 * BQ * LD); /* [2][BQ] */
  float *Dsh = Ls + 2 * BQ;                                 /* [2][BQ] */
  /* DSM 2: this warp's stage [WR][BQ] (chunks swizzled, swz) */
  bf16 *Stg = reinterpret_cast<bf16 *>(Dsh + 2 * BQ) + (threadIdx.x >> 5) * WR * BQ;

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

  float dka[MT][HD / 8][4], dva[MT][HD / 8][4];
  zero_frags(dka);
  zero_frags(dva);
  const float sl2 = scale * LOG2E;
  const int wk0 = warp * WR;           /* the warp's first key row in the block */
  const int key0 = k0 + wk0 + gr;      /* this thread's keys: key0 + 16·mt (+ 8) */
  const bf16 *Kw = Ks + wk0 * LD, *Vw = Vs + wk0 * LD;

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
    /* DSM 1: where this thread stores dS (DSM 2 computes it where it stores: fewer live
     * registers) */
    bf16 *dss = DSM == 1 ? ds_rows<DSM>(ds, (size_t)b * Hh + g * rep + it / nq, T, qt0, k0 + wk0)
                         : nullptr;
    const bf16 *Qb = Qs + buf * BQ * LD, *Ob = Os + buf * BQ * LD;
    const float *Lb = Ls + buf * BQ, *Db = Dsh + buf * BQ;
    /* a query tile wholly before the warp's keys (causal) adds nothing */
    if (qt0 + BQ - 1 < k0 + wk0) {
      /* but its dS entries (all masked) are read by fa_dq_ds: zeros (when the tile exists:
       * with 128-key blocks a warp's key tile could lie past the query tile; the blocks of 64
       * keys configured below, NW 4 × MT 1 = DS_T, always have it) */
      if (DSM == 2 && qt0 / DS_T >= (k0 + wk0) / DS_T) {
        dss = ds_rows<DSM>(ds, (size_t)b * Hh + g * rep + it / nq, T, qt0, k0 + wk0);
#pragma unroll
        for (int i = lane; i < WR * CHR; i += 32)
          *reinterpret_cast<uint4 *>(dss + (i / CHR) * DS_T + (i % CHR) * 8) = make_uint4(0, 0, 0, 0);
      } else if (DSM == 1 && qt0 / DS_T >= (k0 + wk0) / DS_T) {
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
          for (int n = 0; n < BQ / 8; n++) {
            *reinterpret_cast<uint32_t *>(dss + (mt * 16) * DS_T + n * 8) = 0u;
            *reinterpret_cast<uint32_t *>(dss + (mt * 16 + 8) * DS_T + n * 8) = 0u;
          }
      }
    } else {
      /* Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ: 16·MT keys × BQ queries per warp */
      float st[MT][BQ / 8][4], dpt[MT][BQ / 8][4];
      zero_frags(st);
      zero_frags(dpt);
#pragma unroll
      for (int ks = 0; ks < HD / 16; ks++) {
        uint32_t ka[MT][4], va[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          ldsm4(ka[mt], Kw + (mt * 16 + (lane & 15)) * LD + ks * 16 + (lane >> 4) * 8);
          ldsm4(va[mt], Vw + (mt * 16 + (lane & 15)) * LD + ks * 16 + (lane >> 4) * 8);
        }
        mma_cols2<MT, BQ / 8, LD>(st, dpt, ka, va, Qb, Ob, ks, lane);
      }
      /* Pᵀ = exp(Sᵀ·scale − lse) (0 where query < key or query ≥ T), dSᵀ = Pᵀ∘(dPᵀ − D) */
      const bool edge = qt0 < k0 + wk0 + WR || qt0 + BQ > T;
#pragma unroll
      for (int n = 0; n < BQ / 8; n++)
#pragma unroll
        for (int e1 = 0; e1 < 2; e1++) {
          const int qi = n * 8 + 2 * gc + e1;
          const float lq = Lb[qi] * LOG2E, dq_ = Db[qi];
#pragma unroll
          for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int e2 = 0; e2 < 2; e2++) {
              const int e = e2 * 2 + e1, key = key0 + mt * 16 + e2 * 8;
              float p = ex2(fmaf(st[mt][n][e], sl2, -lq));
              if (edge && (qt0 + qi < key || qt0 + qi >= T)) p = 0.0f;
              st[mt][n][e] = p;
              dpt[mt][n][e] = p * (dpt[mt][n][e] - dq_);
            }
        }
      /* dV += Pᵀ·dO, dK += dSᵀ·Q (reduction over the BQ queries) */
#pragma unroll
      for (int kk = 0; kk < BQ / 16; kk++) {
        uint32_t pa[MT][4], da[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          frags_to_a(pa[mt], st[mt], kk);
          frags_to_a(da[mt], dpt[mt], kk);
          if constexpr (DSM == 2) {
            /* 16×16 = 4 matrices: (keys 0-7 | 8-15) × (queries 0-7 | 8-15); lane l addresses
             * row r = mt·16 + 8·((l / 8) % 2) + l % 8, chunk 2·kk + l / 16, at chunk
             * (2·kk + l / 16) ^ swz(r) = 2·kk ^ (l / 16 ^ swz(r)) (2·kk and l / 16 share no
             * bits): the per-kk part is an XOR of a constant */
            const int m = lane >> 3, r = mt * 16 + (m & 1) * 8 + (lane & 7);
            const int off = r * BQ + (((m >> 1) ^ swz<CHR>(r)) ^ (kk * 2)) * 8;
            stsm4(Stg + off, da[mt]);
          }
          if constexpr (DSM == 1) { /* (key, 2 queries) pairs, 4-byte stores; L2 merges the sectors */
            bf16 *p = dss + (mt * 16) * DS_T + kk * 16;
            *reinterpret_cast<uint32_t *>(p) = da[mt][0];
            *reinterpret_cast<uint32_t *>(p + 8 * DS_T) = da[mt][1];
            *reinterpret_cast<uint32_t *>(p + 8) = da[mt][2];
            *reinterpret_cast<uint32_t *>(p + 8 * DS_T + 8) = da[mt][3];
          }
        }
#pragma unroll
        for (int dp = 0; dp < HD / 16; dp++) {
          const int off = (kk * 16 + (lane & 15)) * LD + dp * 16 + (lane >> 4) * 8;
          uint32_t of[4], qf[4];
          ldsm4t(of, Ob + off);
          ldsm4t(qf, Qb + off);
#pragma unroll
          for (int mt = 0; mt < MT; mt++) {
            mma(dva[mt][2 * dp], pa[mt], of[0], of[1]);
            mma(dva[mt][2 * dp + 1], pa[mt], of[2], of[3]);
            mma(dka[mt][2 * dp], da[mt], qf[0], qf[1]);
            mma(dka[mt][2 * dp + 1], da[mt], qf[2], qf[3]);
          }
        }
      }
      if constexpr (DSM == 2) { /* the stage → global, a row's chunks on consecutive lanes */
        dss = ds_rows<DSM>(ds, (size_t)b * Hh + g * rep + it / nq, T, qt0, k0 + wk0);
        __syncwarp();
#pragma unroll
        for (int i = lane; i < WR * CHR; i += 32) {
          const int r = i / CHR, ch = i % CHR;
          *reinterpret_cast<uint4 *>(dss + r * DS_T + ch * 8) =
              *reinterpret_cast<const uint4 *>(Stg + r * BQ + (ch ^ swz<CHR>(r)) * 8);
        }
        __syncwarp(); /* the next tile's stmatrix overwrites the stage */
      }
    }
    __syncthreads();
  }

  /* epilogue: each warp stages its own rows of Ks / Vs (only it reads them) */
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    bf16 *Kx = Ks + (wk0 + mt * 16) * LD, *Vx = Vs + (wk0 + mt * 16) * LD;
    stage_rows<HD, LD>(Kx, dka[mt], scale);
    stage_rows<HD, LD>(Vx, dva[mt], 1.0f);
    __syncwarp();
    store_rows<HD, LD>(dk + (size_t)b * T * kvs + (size_t)g * HD, kvs, Kx, k0 + wk0 + mt * 16, T);
    store_rows<HD, LD>(dv + (size_t)b * T * kvs + (size_t)g * HD, kvs, Vx, k0 + wk0 + mt * 16, T);
  }
}

/* ================= backward: dQ ================= */
template <int HD, int NW, int MT, int BK> struct DqCfg {
  static constexpr int BQ = 16 * NW * MT, LD = HD + 8, NT = 32 * NW;
  static constexpr size_t SMEM = (size_t)(2 * BQ + 4 * BK) * LD * sizeof(bf16); /* Q, dO, 2×K, 2×V */
};

/* QREG: the warp's Q and dO fragments (A operands of S = Q·Kᵀ, dP = dO·Vᵀ; the same for every
 * key tile) are loaded by ldmatrix once, with the first key tile, and stay in registers
 * (2·MT·HD/4 of them) instead of being re-read from shared memory for every key tile. */
template <int HD, int NW, int MT, int BK, bool QREG>
__global__ void __launch_bounds__(NW * 32, (dq_blocks<HD, MT, BK>()))
    fa_dq(bf16 *__restrict__ dq, const bf16 *__restrict__ dout, const bf16 *__restrict__ q,
          const bf16 *__restrict__ k, const bf16 *__restrict__ v, const float *__restrict__ lse,
          const float *__restrict__ D, int T, int H, int rep, int qs, int kvs, float scale) {
  using C = DqCfg<HD, NW, MT, BK>;
  constexpr int BQ = C::BQ, LD = C::LD, NT = C::NT, WR = 16 * MT;
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

  const int wr0 = warp * WR;
  const int row0 = q0 + wr0 + gr; /* rows row0 + 16·mt (+ 8) */
  const int wlast = q0 + wr0 + WR - 1;
  float lr[MT][2], dr[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int r = 0; r < 2; r++) {
      const int row = row0 + mt * 16 + r * 8;
      const size_t i = ((size_t)b * H + h) * T + row;
      lr[mt][r] = row < T ? lse[i] * LOG2E : 0.0f;
      dr[mt][r] = row < T ? D[i] : 0.0f;
    }
  const float sl2 = scale * LOG2E;
  float acc[MT][HD / 8][4];
  zero_frags(acc);
  const bf16 *Qw = Qs + wr0 * LD, *Ow = Os + wr0 * LD;
  uint32_t qr[QREG ? MT : 1][QREG ? HD / 16 : 1][4], orr[QREG ? MT : 1][QREG ? HD / 16 : 1][4];

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
    if constexpr (QREG) {
      if (kb == 0) { /* Q / dO arrived with the first key tile's cp.async group */
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
          for (int ks = 0; ks < HD / 16; ks++) {
            ldsm4(qr[mt][ks], Qw + (mt * 16 + (lane & 15)) * LD + ks * 16 + (lane >> 4) * 8);
            ldsm4(orr[mt][ks], Ow + (mt * 16 + (lane & 15)) * LD + ks * 16 + (lane >> 4) * 8);
          }
      }
    }
    const int k0 = kb * BK;
    if (k0 <= wlast) { /* a tile wholly past the warp's rows adds nothing */
      const bf16 *Kb = Ks + buf * BK * LD, *Vb = Vs + buf * BK * LD;

      /* S = Q·Kᵀ, dP = dO·Vᵀ: 16·MT × BK per warp */
      float s[MT][BK / 8][4], dp[MT][BK / 8][4];
      zero_frags(s);
      zero_frags(dp);
#pragma unroll
      for (int ks = 0; ks < HD / 16; ks++) {
        uint32_t qa[MT][4], oa[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          if constexpr (QREG) {
#pragma unroll
            for (int i = 0; i < 4; i++) qa[mt][i] = qr[mt][ks][i], oa[mt][i] = orr[mt][ks][i];
          } else {
            ldsm4(qa[mt], Qw + (mt * 16 + (lane & 15)) * LD + ks * 16 + (lane >> 4) * 8);
            ldsm4(oa[mt], Ow + (mt * 16 + (lane & 15)) * LD + ks * 16 + (lane >> 4) * 8);
          }
        }
        mma_cols2<MT, BK / 8, LD>(s, dp, qa, oa, Kb, Vb, ks, lane);
      }
      /* P = exp(S·scale − lse) (0 past the diagonal or T), dS = P∘(dP − D) */
      const bool edge = k0 + BK > q0 + wr0 || k0 + BK > T;
#pragma unroll
      for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int n = 0; n < BK / 8; n++)
#pragma unroll
          for (int e = 0; e < 4; e++) {
            const int r = e >> 1;
            const int key = k0 + n * 8 + 2 * gc + (e & 1), row = row0 + mt * 16 + r * 8;
            float p = ex2(fmaf(s[mt][n][e], sl2, -lr[mt][r]));
            if (edge && (key > row || key >= T)) p = 0.0f;
            dp[mt][n][e] = p * (dp[mt][n][e] - dr[mt][r]);
          }
      /* dQ += dS·K (reduction over the BK keys; K read transposed) */
#pragma unroll
      for (int kk = 0; kk < BK / 16; kk++) {
        uint32_t da[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) frags_to_a(da[mt], dp[mt], kk);
        mma_rows<MT, HD, LD>(acc, da, Kb, kk * 16, lane);
      }
    }
    __syncthreads();
  }

#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    bf16 *Qx = Qs + (wr0 + mt * 16) * LD; /* this warp's own rows (only it read them) */
    stage_rows<HD, LD>(Qx, acc[mt], scale);
    __syncwarp();
    store_rows<HD, LD>(dq + (size_t)b * T * qs + (size_t)h * HD, qs, Qx, q0 + wr0 + mt * 16, T);
  }
}

/* ================= backward: dQ = dS·K from the dS scratch ================= */
/* fa_dq_ds: dQ = scale · dS·K over the causal triangle, a plain tiled matmul (FlashAttention-2's
 * dQ_i += dS_ij·K_j, Dao 2023 alg. 2 line 21, without the atomics: one block owns a query tile
 * and adds the key tiles in order). block = (b, h, BQ = 16·NW·MT query rows = BQ / DS_T dS
 * tiles); over key tiles j of DS_T keys ≤ the block's last query tile, double-buffered cp.async
 * of the K tile ([key][HD]) and the BQ / DS_T dS tiles (i, j) side by side ([key][BQ queries];
 * a tile with i < j or i ≥ nt is zero-filled). A fragments: ldmatrix.trans of the stored
 * [key][query] rows (the "B with B[k][n] = X[n][k]" addressing, which with .trans yields A);
 * B fragments: K read transposed as in fa_dq. */
template <int HD, int NW, int MT> struct DqdsCfg {
  static constexpr int BQ = 16 * NW * MT, LDS = BQ + 8, LD = HD + 8, NT = 32 * NW;
  static_assert(BQ % DS_T == 0, "a block covers whole dS tiles");
  /* 2×dS [DS_T][LDS], 2×K [DS_T][LD]; the epilogue stages BQ rows of LD in the K buffers */
  static constexpr size_t SMEM = (size_t)2 * DS_T * (LDS + LD) * sizeof(bf16);
  static_assert(BQ <= 2 * DS_T, "epilogue staging fits the two K buffers");
};

template <int HD, int NW, int MT>
__global__ void __launch_bounds__(NW * 32)
    fa_dq_ds(bf16 *__restrict__ dq, const bf16 *__restrict__ ds, const bf16 *__restrict__ k,
             int T, int H, int rep, int qs, int kvs, float scale) {
  using C = DqdsCfg<HD, NW, MT>;
  constexpr int BQ = C::BQ, LDS = C::LDS, LD = C::LD, NT = C::NT, WR = 16 * MT;
  constexpr int NSUB = BQ / DS_T;
  extern __shared__ __align__(16) unsigned char fa_sh[];
  bf16 *Ss = reinterpret_cast<bf16 *>(fa_sh); /* [2][DS_T][LDS] */
  bf16 *Ks = Ss + 2 * DS_T * LDS;              /* [2][DS_T][LD] */

  const int qb = gridDim.x - 1 - blockIdx.x; /* the longest (last) query blocks first */
  const int h = blockIdx.y, b = blockIdx.z, g = h / rep;
  const int q0 = qb * BQ, i0 = q0 / DS_T;
  const int nt = (T + DS_T - 1) / DS_T;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const bf16 *kg = k + (size_t)b * T * kvs + (size_t)g * HD;
  const bf16 *dsb = ds + ((size_t)b * H + h) * ds_tiles(T) * (DS_T * DS_T);
  const int nkb = (min(q0 + BQ, T) - 1) / DS_T + 1; /* key tiles with a visible key */

  auto load = [&](int j, int bsel) {
    load_tile<DS_T, HD, LD, NT>(Ks + bsel * DS_T * LD, kg, kvs, j * DS_T, T);
    bf16 *dst = Ss + bsel * DS_T * LDS;
    constexpr int CH = DS_T / 8; /* 16-byte chunks in a tile row */
    static_assert(NSUB * DS_T * CH % NT == 0, "dS tiles not a whole number of passes");
#pragma unroll
    for (int it = 0; it < NSUB * DS_T * CH / NT; it++) {
      const int c = threadIdx.x + it * NT;
      const int sub = c / (DS_T * CH), r = c / CH % DS_T, ch = c % CH, i = i0 + sub;
      const bool ok = i >= j && i < nt;
      const bf16 *src =
          ok ? dsb + ((size_t)i * (i + 1) / 2 + j) * (DS_T * DS_T) + r * DS_T + ch * 8 : dsb;
      cp16(dst + r * LDS + sub * DS_T + ch * 8, src, ok);
    }
  };

  load(0, 0);
  cp_commit();
  float acc[MT][HD / 8][4];
  zero_frags(acc);
  const int wr0 = warp * WR;
  const int wlast = q0 + wr0 + WR - 1;

  for (int j = 0; j < nkb; j++) {
    const int buf = j & 1;
    if (j + 1 < nkb) {
      load(j + 1, buf ^ 1);
      cp_commit();
      cp_wait<1>();
    } else {
      cp_wait<0>();
    }
    __syncthreads();
    if (j * DS_T <= wlast) { /* a key tile wholly past the warp's rows holds only zeros */
      const bf16 *Sb = Ss + buf * DS_T * LDS, *Kb = Ks + buf * DS_T * LD;
#pragma unroll
      for (int kk = 0; kk < DS_T / 16; kk++) {
        uint32_t da[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
          ldsm4t(da[mt], Sb + (kk * 16 + (lane & 7) + ((lane >> 4) << 3)) * LDS + wr0 + mt * 16 +
                             ((lane >> 3) & 1) * 8);
        mma_rows<MT, HD, LD>(acc, da, Kb, kk * 16, lane);
      }
    }
    __syncthreads();
  }

#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    bf16 *Qx = Ks + (wr0 + mt * 16) * LD; /* this warp's own staging rows */
    stage_rows<HD, LD>(Qx, acc[mt], scale);
    __syncwarp();
    store_rows<HD, LD>(dq + (size_t)b * T * qs + (size_t)h * HD, qs, Qx, q0 + wr0 + mt * 16, T);
  }
}

/* ---- configurations ----
 * Every kernel: 4 warps a block, MT = 1 m-tile a warp (64-row blocks); the dK/dV loop's
 * query tile is 64 for head_dim 64 and 32 for 128 (registers), dQ's key tile 32 for both
 * (128: registers, and dQ's shared memory ≤ 99 KB for sm_89). Two m-tiles a warp (128-row
 * blocks, inner tiles 32 or 16) measured no faster on the H200 (gpt2 shape: fwd 201 vs 205
 * TFLOP/s, bwd 148 vs 148.5; GQA bwd 133 vs 139): at ~240 registers a block of 4 warps leaves
 * 2 blocks an SM, and these kernels are latency-bound, not shared-memory-bound.
 * Session 12 (issue 24, H200, bench_cuda_attention gpt2 124M shape; docs/PERF.md): dQ at
 * head_dim 64 with 32-key tiles, 4 blocks an SM and Q / dO kept in registers (QREG) cut the
 * backward from 0.405 to 0.395 ms (with attention.cu's 16-byte-load D kernel; 0.438 before
 * both). Measured and dropped (none faster than these defaults): forward with 128- or 32-key
 * tiles, 8 warps, or 2 m-tiles; dK/dV with K / V in registers, 32- or 128-query tiles; dQ
 * with 64-key tiles + QREG (0.396 ms, a tie) or 128-key tiles. */
constexpr int NW = 4, MT = 1;
constexpr int DKV_BQ64 = 64, DKV_BQ128 = 32; /* query tile of the dK/dV loop */
constexpr int DQ_BK64 = 32, DQ_BK128 = 32;   /* key tile of dQ */
/* dQ's Q / dO fragments in registers: head_dim 64 only (128 would need 64 more registers a
 * thread at 3 blocks an SM: not measured) */
constexpr bool DQ_QREG64 = true, DQ_QREG128 = false;

template <typename K> void set_smem(K kern, size_t bytes) {
  /* once per kernel instance; a host-side attribute, no allocation or synchronization */
  TZC_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}

template <int HD>
void fwd_hd(cudaStream_t st, bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v,
            int B, int T, int H, int KVH, int qs, int kvs) {
  using C = FwdCfg<HD, NW, MT>;
  auto kern = fa_fwd<HD, NW, MT>;
  static bool init = false;
  if (!init) set_smem(kern, C::SMEM), init = true;
  dim3 grid((T + C::BQ - 1) / C::BQ, H, B);
  kern<<<grid, C::NT, C::SMEM, st>>>(out, lse, q, k, v, T, H, H / KVH, qs, kvs,
                                     1.0f / sqrtf((float)HD));
  TZC_LAUNCHED();
}

/* dQ from the dS scratch (fa_dq_ds) with NWq warps × MTq m-tiles a block */
template <int HD, int NWq, int MTq>
void dq_ds_launch(cudaStream_t st, bf16 *dq, const bf16 *ds, const bf16 *k, int B, int T, int H,
                  int rep, int qs, int kvs, float scale) {
  using C = DqdsCfg<HD, NWq, MTq>;
  auto kern = fa_dq_ds<HD, NWq, MTq>;
  static bool init = false;
  if (!init) set_smem(kern, C::SMEM), init = true;
  dim3 grid((T + C::BQ - 1) / C::BQ, H, B);
  kern<<<grid, C::NT, C::SMEM, st>>>(dq, ds, k, T, H, rep, qs, kvs, scale);
  TZC_LAUNCHED();
}

/* fa_dkdv writing dS as DSM says (DkvCfg: 0 not at all, 1 4-byte stores, 2 staged) */
template <int HD, int BQd, int DSM>
void dkdv_launch(cudaStream_t st, bf16 *dk, bf16 *dv, bf16 *ds, const bf16 *dout, const bf16 *q,
                 const bf16 *k, const bf16 *v, const float *lse, const float *D, int B, int T,
                 int H, int KVH, int qs, int kvs, float scale) {
  using C = DkvCfg<HD, NW, MT, BQd, DSM>;
  auto kern = fa_dkdv<HD, NW, MT, BQd, DSM>;
  static bool init = false;
  if (!init) set_smem(kern, C::SMEM), init = true;
  dim3 grid((T + C::BKV - 1) / C::BKV, KVH, B);
  kern<<<grid, C::NT, C::SMEM, st>>>(dk, dv, ds, dout, q, k, v, lse, D, T, H, H / KVH, qs, kvs,
                                     scale);
  TZC_LAUNCHED();
}

/* fa_dkdv, then fa_dq (ds NULL) or fa_dq_ds (o.dsvar's block shape, dS stored as o.dsstore
 * says); with o.ev (timing) ev[1] is recorded between the two. */
template <int HD, int BQd, int BKq, bool QREG>
void bwd_hd(cudaStream_t st, bf16 *dq, bf16 *dk, bf16 *dv, bf16 *ds, const tzc_fa_bwd_opts &o,
            const bf16 *dout, const bf16 *q, const bf16 *k, const bf16 *v, const float *lse,
            const float *D, int B, int T, int H, int KVH, int qs, int kvs) {
  const float scale = 1.0f / sqrtf((float)HD);
  const int rep = H / KVH;
  if (!ds)
    dkdv_launch<HD, BQd, 0>(st, dk, dv, ds, dout, q, k, v, lse, D, B, T, H, KVH, qs, kvs, scale);
  else if (o.dsstore == 16)
    dkdv_launch<HD, BQd, 2>(st, dk, dv, ds, dout, q, k, v, lse, D, B, T, H, KVH, qs, kvs, scale);
  else
    dkdv_launch<HD, BQd, 1>(st, dk, dv, ds, dout, q, k, v, lse, D, B, T, H, KVH, qs, kvs, scale);
  if (o.ev) TZC_CHECK(cudaEventRecord(o.ev[1], st));
  if (ds) {
    switch (o.dsvar) {
    case 1: dq_ds_launch<HD, 4, 2>(st, dq, ds, k, B, T, H, rep, qs, kvs, scale); break;
    case 2: dq_ds_launch<HD, 8, 1>(st, dq, ds, k, B, T, H, rep, qs, kvs, scale); break;
    default: dq_ds_launch<HD, 4, 1>(st, dq, ds, k, B, T, H, rep, qs, kvs, scale); break;
    }
    return;
  }
  using C = DqCfg<HD, NW, MT, BKq>;
  auto kern = fa_dq<HD, NW, MT, BKq, QREG>;
  static bool init = false;
  if (!init) set_smem(kern, C::SMEM), init = true;
  dim3 grid((T + C::BQ - 1) / C::BQ, H, B);
  kern<<<grid, C::NT, C::SMEM, st>>>(dq, dout, q, k, v, lse, D, T, H, rep, qs, kvs, scale);
  TZC_LAUNCHED();
}

template <int HD, int BQd, int BKq> constexpr size_t smem_max() {
  const size_t a = FwdCfg<HD, NW, MT>::SMEM, b = DkvCfg<HD, NW, MT, BQd, 2>::SMEM,
               c = DqCfg<HD, NW, MT, BKq>::SMEM, d = DqdsCfg<HD, 4, 2>::SMEM; /* dq_ds's largest */
  const size_t ab = a > b ? a : b, cd = c > d ? c : d;
  return ab > cd ? ab : cd;
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

size_t tzc_fa_ds_bytes(int B, int H, int T) {
  return (size_t)B * H * ds_tiles(T) * (DS_T * DS_T) * sizeof(bf16);
}

void tzc_fa_bwd(cudaStream_t st, bf16 *dq, bf16 *dk, bf16 *dv, bf16 *ds,
                const tzc_fa_bwd_opts *o, const bf16 *dout, const bf16 *q, const bf16 *k,
                const bf16 *v, const float *lse, const float *D, int B, int T, int H, int KVH,
                int hd, int qs, int kvs) {
  if (o->ev) TZC_CHECK(cudaEventRecord(o->ev[0], st));
  if (hd == 64)
    bwd_hd<64, DKV_BQ64, DQ_BK64, DQ_QREG64>(st, dq, dk, dv, ds, *o, dout, q, k, v, lse, D, B, T,
                                             H, KVH, qs, kvs);
  else
    bwd_hd<128, DKV_BQ128, DQ_BK128, DQ_QREG128>(st, dq, dk, dv, ds, *o, dout, q, k, v, lse, D, B,
                                                 T, H, KVH, qs, kvs);
  if (o->ev) { /* timing: the two kernels (the host waits: diagnostics only) */
    float a = 0, b = 0;
    TZC_CHECK(cudaEventRecord(o->ev[2], st));
    TZC_CHECK(cudaEventSynchronize(o->ev[2]));
    TZC_CHECK(cudaEventElapsedTime(&a, o->ev[0], o->ev[1]));
    TZC_CHECK(cudaEventElapsedTime(&b, o->ev[1], o->ev[2]));
    o->ms[0] += a, o->ms[1] += b;
  }
}
