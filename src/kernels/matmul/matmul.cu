// The matmul family on cuBLASLt (backend.h semantics, row-major):
//   matmul_t:  out[M,N] (+)= a[M,K] · b[N,K]ᵀ (+ bias[N])   forward  Y = X·Wᵀ + b
//   matmul:    out[M,N] (+)= a[M,K] · b[K,N]                dX = dY·W
//   matmul_at: out[M,N] (+)= a[K,M]ᵀ · b[K,N]               dW += dYᵀ·X
//   matmul_t_gelu: h[M,N] = a[M,K] · b[N,K]ᵀ + bias[N], out = gelu(h)      fc + GeLU forward
//   matmul_dgelu:  out[M,N] = gelu'(h[M,N]) ⊙ (a[M,K] · b[K,N]),           fcproj's dX + GeLU
//                  db[N] += Σ_m out[m,N]                                   backward (+ fc's db)
//   matmul_t_res:  out[M,N] = a[M,K] · b[N,K]ᵀ + bias[N] + res[M,N]        projection into the
//                                                                          residual stream
//
// cuBLASLt is column-major. A row-major [R,C] matrix is the column-major [C,R] matrix with
// leading dimension C, so each form computes the transposed product out_cmᵀ = (…)ᵀ with the
// operands swapped: D (N×M, ld N) = opA(b) · opB(a), with m = N, n = M, k = K and
//   matmul_t:  A = b as K×N (ld K) transposed,  B = a as K×M (ld K)
//   matmul:    A = b as N×K (ld N),             B = a as K×M (ld K)
//   matmul_at: A = b as N×K (ld N),             B = a as M×K (ld M) transposed
// The bias (length N = rows of D) goes through CUBLASLT_EPILOGUE_BIAS.
//
// Dtypes: --precision fp32: everything fp32, CUBLAS_COMPUTE_32F (strict fp32, never TF32).
// bf16: a and b bf16 (weights through tzc_w: the bf16 mirror), fp32 accumulation; out bf16
// for matmul_t / matmul, fp32 for matmul_at (parameter gradients: acc=1 → beta=1, a step's
// first backward acc=0 → beta=0, backend.h grads_written); bias bf16.
//
// Slices of the flat parameter buffer can sit at any 4-byte (fp32) / 2-byte (bf16) offset:
// cuBLASLt is told the real alignment of every pointer (MIN_ALIGNMENT_*_BYTES), and a bias
// that is not 16-byte aligned is copied to an aligned buffer first (epilogue loads). Matmul
// descriptors, layouts and the heuristic's algorithm are cached per (form, M, K, N, acc,
// bias, dtype, alignments) in a fixed table, so steady-state calls query nothing and
// allocate nothing. When the heuristic offers no algorithm, or cuBLASLt rejects the call, (or
// TEZGAH_CUDA_MATMUL=naive at backend creation) a simple fp32-accumulating kernel computes the
// same thing.
//
// GeLU epilogues (matmul_t_gelu, matmul_dgelu; which the backend offers: TEZGAH_CUDA_GELU_EPI,
// tzc_gelu_epi_mode below; by default both in bf16 and neither in fp32; where one is not
// offered the model runs matmul_t + gelu_fwd, matmul + gelu_bwd + bias_bwd), the key's `epi`:
// - matmul_t_gelu: CUBLASLT_EPILOGUE_GELU_AUX_BIAS (GELU_AUX without a bias): D = gelu(acc + bias)
//   and the aux matrix = acc + bias (the GeLU input, which the backward reads), both in D's type
//   (bf16 or fp32: cublasLt.h, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE's default) and laid out
//   as D (ld N; cuBLASLt wants the aux ld divisible by 8: other N take the fallback kernel). The
//   GeLU is applied to the fp32 sum, while gelu_fwd reads the stored h: in bf16 `out` differs from
//   matmul_t + gelu_fwd in its last bits (in fp32 the math is the same). So `train --recompute`,
//   which recomputes out from the stored h with gelu_fwd, must not use this op (the model's rule).
// - matmul_dgelu: CUBLASLT_EPILOGUE_DGELU with h as the aux input: D = gelu'(h) ⊙ acc, the GeLU
//   gradient applied to the fp32 accumulator (matmul + gelu_bwd round dX to bf16 between them).
//   db: with TEZGAH_CUDA_GELU_EPI=...+bgrad, CUBLASLT_EPILOGUE_DGELU_BGRAD also writes the sums of
//   D over our rows (the bias gradient, "length = D's rows" in cuBLASLt's column-major view) --
//   fp32 asked first, D's type if the heuristic has nothing for fp32 -- into tzc_scratch, and a
//   small kernel adds it into db (db accumulates; the epilogue writes). Otherwise, or without a
//   BGRAD algorithm, db += bias_bwd(out), bias_bwd's kernel and bits.
// Which GeLU: cublasLt.h and the cuBLAS docs say only "GELU". It is the tanh form (Hendrycks &
// Gimpel 2016), GPT-2's and ours (gelu.cu, gelu_cpu.c): PyTorch's _addmm_activation documents its
// cuBLASLt GELU epilogue as the tanh approximation (pytorch/pytorch#104061, "cuBLASLt-based fused
// GELU epilogue ... uses tanh approximation"), and test_cuda_gelu_epi checks it: the outputs lie
// closer to the CPU's tanh form than to the erf form (up to 4.7e-4 apart, at |x| ≈ 2.7). Its tanh
// may be the GPU's approximate instruction (tanh.approx.f32, ~2^-11 relative): the test's bounds
// allow that and print the largest error seen; the precision is not documented by cuBLASLt.
// The fallback kernel computes the same: out = gelu(fp32 sum) and h = the sum; out = gelu'(h)·sum
// (gelu'/gelu of cuda_common.cuh, gelu.cu's formulas), then bias_bwd for db.
//
// Residual epilogue (matmul_t_res, the last op; offered by default in bf16, in fp32 only under
// TEZGAH_CUDA_MM_RES=1, never under =0; where not, the model runs matmul_t + add --
// backend_cuda.c says why): cuBLASLt's own
// D = alpha·op(A)·op(B) + beta·C (+ bias) with C = res, D = out, beta = 1 -- the key's `res`.
// C and D are distinct buffers with one layout and type (the descriptor's ld, used for both;
// C's alignment is its own, al_c), so the sum acc + bias + res is formed in fp32 and rounded to
// act once, where matmul_t + add round acc + bias to act first and then the sum (in fp32 the
// two agree up to the order of the three fp32 additions). The heuristic is asked with C's real
// alignment; it picks its algorithm for beta = 1 as for the accumulating matmuls (acc = 1,
// C = D). The fallback kernel adds res after the bias.
// N not a multiple of 8 (out's / res's rows not 16-byte aligned in bf16) runs on the fallback
// kernel, as the GeLU epilogues do. Why: on the H200 (bf16, M=33 K=40 N=37, a bias) the
// algorithm cuBLASLt took for that ld rounded twice, out = bf16(bf16(acc + res) + bias) -- the
// bias added after the C term had been rounded to bf16. That model reproduces each element
// test_cuda_mm_res reported and its worst error (4.51 of the one-rounding bound) exactly; one
// rounding stays within 0.91 of it (the fallback kernel at that shape). Which algorithm that was
// and why it rounds there was not printed (no GPU at the time of writing). res alone misaligned
// (C 2-byte aligned, N = 256, a bias) rounded twice the same way on the H200 (2026-12-04 17:00,
// test_cuda_mm_res: -2.625 for -2.6109, past the bound): such a res runs on the fallback kernel
// too. Shapes with N % 8 = 0 and res on 16 bytes rounded once. The few-row
// / out == res path below does the same where it would run cuBLASLt's C = D form at such an ld
// (by inference the same algorithm; not observed). Plain matmul_t with a bias at such an ld may
// round twice as well: test_cuda_ops's bf16 bound (8e-3·Σ|terms|) would not tell.
// Few rows (M ≤ TZC_GEMV_MAX_M, decoding's prefill and the KV-cache forward): res is copied into
// out and the accumulating few-row kernel (gemv.cu: out += acc + bias, one rounding) or cuBLASLt
// (C = D = out, beta = 1) runs, as those kernels have no second input. out must not overlap res
// (backend.h); the same buffer is taken as the accumulating matmul_t, a partial overlap is a
// fatal error.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "kernels/common/cuda_common.cuh"
extern "C" [[noreturn]] void tz_fatal(const char *msg); // core/error.h (C11 _Noreturn there)

namespace {

enum Form { F_T = 0, F_NN = 1, F_AT = 2 };
const char *const kFormName[3] = {"matmul_t", "matmul", "matmul_at"};

// Epilogues beyond the bias: GeLU forward with its input as aux (F_T), GeLU gradient from the
// aux (F_NN), and that with the bias gradient (F_NN; bias pointer = the gradient's output).
enum Epi { E_NONE = 0, E_GELU = 1, E_DGELU = 2, E_DGELU_BGRAD = 3 };

struct Key {
  int form, M, K, N, acc, bias, bf16, epi;
  int res;                                     // C = res (matmul_t_res), not D, with beta = 1
  int al_a, al_b, al_c, al_d, al_bias, al_aux; // pointer alignments (bytes, quantized); al_c: res's, or D's
};

constexpr int kTune = 8; // the heuristic's candidates timed at a shape's first call (tune below)

struct Entry {
  Key key;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, ld;
  cublasLtMatmulAlgo_t algo;
  cublasLtMatmulAlgo_t cand[kTune]; // the heuristic's first ncand algorithms, in its order
  int ncand, tuned;
  int naive;      // no cuBLASLt algorithm: use the fallback kernel
  int bgrad_bf16; // E_DGELU_BGRAD: the bias gradient comes in bf16 (fp32 had no algorithm)
};

constexpr int kCap = 256;
struct MM {
  Entry e[kCap];
  int n, evict;
  void *bias_buf; // 256-aligned copy of a misaligned bias
  size_t bias_bytes;
  int force_naive;
  int gelu_bgrad;      // TEZGAH_CUDA_GELU_EPI=...+bgrad: DGELU_BGRAD for matmul_dgelu's db
  int tune;            // TEZGAH_CUDA_MM_TUNE: 0 off, 1 (default) from kTuneFlop, 2 (=all) every shape
  unsigned long long *fp; // device [2]: tune's output fingerprint (hash, nonzero count)
  cudaEvent_t ev[2];      // tune's timing events (made with fp at init; tune is off without them)
  long long fallbacks; // calls that cuBLASLt could not take (not counting forced / K = 0)
  long long tuned;     // entries whose algorithm tune chose among >= 2 timed candidates
};

void lt_check(cublasStatus_t st, const char *what, const char *file, int line) {
  if (st == CUBLAS_STATUS_SUCCESS) return;
  const char *f = strrchr(file, '/');
  char msg[512];
  snprintf(msg, sizeof msg, "cuda: cuBLASLt %s failed (status %d) at %s:%d", what, (int)st, f ? f + 1 : file, line);
  tz_fatal(msg); // the CLI exits 1; the library never calls exit()
}
#define LT_CHECK(x) lt_check((x), #x, __FILE__, __LINE__)

int align_of(const void *p) {
  uintptr_t a = (uintptr_t)p;
  if (!a) return 256;
  uintptr_t low = a & (~a + 1);
  return low >= 256 ? 256 : low >= 16 ? 16 : (int)low;
}

MM *mm_state(tz_backend *be) { return (MM *)tzc(be)->mm; } // made by tzc_matmul_init

void entry_release(Entry *e) {
  if (e->desc) tzc_lt.MatmulDescDestroy(e->desc);
  if (e->la) tzc_lt.MatrixLayoutDestroy(e->la);
  if (e->lb) tzc_lt.MatrixLayoutDestroy(e->lb);
  if (e->ld) tzc_lt.MatrixLayoutDestroy(e->ld);
  memset(e, 0, sizeof *e);
}

// Ask the heuristic for the best algorithm of e's descriptors; 1 when it has one.
int entry_algo(tz_backend *be, Entry *e, const Key &k) {
  tzc_ctx *c = tzc(be);
  cublasLtMatmulPreference_t pref;
  LT_CHECK(tzc_lt.MatmulPreferenceCreate(&pref));
  uint64_t ws = c->lt_ws_bytes;
  uint32_t al[4] = {(uint32_t)k.al_b, (uint32_t)k.al_a, (uint32_t)k.al_c, (uint32_t)k.al_d}; // A = b, B = a
  LT_CHECK(tzc_lt.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  LT_CHECK(tzc_lt.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al[0], 4));
  LT_CHECK(tzc_lt.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al[1], 4));
  LT_CHECK(tzc_lt.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al[2], 4));
  LT_CHECK(tzc_lt.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al[3], 4));
  cublasLtMatmulHeuristicResult_t res[kTune];
  memset(res, 0, sizeof res);
  int found = 0;
  cublasStatus_t st = tzc_lt.MatmulAlgoGetHeuristic((cublasLtHandle_t)c->lt, e->desc, e->la, e->lb, e->ld, e->ld,
                                                     pref, kTune, res, &found);
  tzc_lt.MatmulPreferenceDestroy(pref);
  e->ncand = 0;
  for (int i = 0; st == CUBLAS_STATUS_SUCCESS && i < found && i < kTune; i++)
    if (res[i].state == CUBLAS_STATUS_SUCCESS && res[i].workspaceSize <= ws) e->cand[e->ncand++] = res[i].algo;
  if (!e->ncand) return 0;
  e->algo = e->cand[0];
  return 1;
}

const char *const kEpiName[4] = {"", " with GELU_AUX(_BIAS)", " with DGELU", " with DGELU_BGRAD"};

// Build the descriptors for `k` and ask the heuristic for its best algorithm. `bias`: the bias
// (k.bias) or, for E_DGELU_BGRAD, the bias gradient's output; `aux`: the GeLU input (E_GELU
// writes it, E_DGELU* read it). The heuristic reads their alignments.
void entry_build(tz_backend *be, Entry *e, const Key &k, const void *bias, const void *aux) {
  tzc_ctx *c = tzc(be);
  e->key = k;
  cudaDataType_t in_t = k.bf16 ? CUDA_R_16BF : CUDA_R_32F;
  cudaDataType_t out_t = (k.bf16 && k.form != F_AT) ? CUDA_R_16BF : CUDA_R_32F;
  cublasOperation_t ta = k.form == F_T ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = k.form == F_AT ? CUBLAS_OP_T : CUBLAS_OP_N;
  LT_CHECK(tzc_lt.MatmulDescCreate(&e->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  LT_CHECK(tzc_lt.MatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  LT_CHECK(tzc_lt.MatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (k.epi == E_GELU) epi = k.bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
  else if (k.epi == E_DGELU) epi = CUBLASLT_EPILOGUE_DGELU;
  else if (k.epi == E_DGELU_BGRAD) epi = CUBLASLT_EPILOGUE_DGELU_BGRAD;
  else if (k.bias) epi = CUBLASLT_EPILOGUE_BIAS;
  if (epi != CUBLASLT_EPILOGUE_DEFAULT)
    LT_CHECK(tzc_lt.MatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  if (k.bias || k.epi == E_DGELU_BGRAD) {
    int32_t bt = (int32_t)(k.epi == E_DGELU_BGRAD ? CUDA_R_32F : out_t);
    LT_CHECK(tzc_lt.MatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    LT_CHECK(tzc_lt.MatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  }
  if (k.epi != E_NONE) { // the GeLU input: D's layout; its type is left to the default, D's
    int64_t ld = k.N;
    LT_CHECK(tzc_lt.MatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld));
    LT_CHECK(tzc_lt.MatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux));
  }
  // stored (pre-op) shapes of the column-major operands, see the header
  uint64_t a_rows = k.form == F_T ? k.K : k.N, a_cols = k.form == F_T ? k.N : k.K;
  uint64_t b_rows = k.form == F_AT ? k.M : k.K, b_cols = k.form == F_AT ? k.K : k.M;
  LT_CHECK(tzc_lt.MatrixLayoutCreate(&e->la, in_t, a_rows, a_cols, (int64_t)a_rows));
  LT_CHECK(tzc_lt.MatrixLayoutCreate(&e->lb, in_t, b_rows, b_cols, (int64_t)b_rows));
  LT_CHECK(tzc_lt.MatrixLayoutCreate(&e->ld, out_t, k.N, k.M, k.N));

  int ok = entry_algo(be, e, k);
  if (!ok && k.epi == E_DGELU_BGRAD && out_t != CUDA_R_32F) { // the bias gradient in D's type (bf16)
    int32_t bt = (int32_t)out_t;
    LT_CHECK(tzc_lt.MatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    ok = entry_algo(be, e, k);
    e->bgrad_bf16 = ok;
  }
  if (!ok) {
    e->naive = 1;
    if (c->verbose)
      fprintf(stderr, "cuda: cuBLASLt has no algorithm for %s%s%s M=%d K=%d N=%d (%s, alignments %d/%d/%d/%d): %s\n",
              kFormName[k.form], kEpiName[k.epi], k.res ? " with C = res" : "", k.M, k.K, k.N,
              k.bf16 ? "bf16" : "fp32", k.al_a, k.al_b, k.al_c, k.al_d,
              k.epi == E_DGELU_BGRAD ? "DGELU + bias_bwd" : "fallback kernel");
  } else if (c->verbose && k.epi != E_NONE) {
    fprintf(stderr, "cuda: cuBLASLt %s%s M=%d K=%d N=%d (%s)%s\n", kFormName[k.form], kEpiName[k.epi], k.M, k.K, k.N,
            k.bf16 ? "bf16" : "fp32", e->bgrad_bf16 ? ": bias gradient in bf16" : "");
  }
}

Entry *lookup(tz_backend *be, const Key &k, const void *bias, const void *aux) {
  MM *m = mm_state(be);
  for (int i = 0; i < m->n; i++)
    if (!memcmp(&m->e[i].key, &k, sizeof k)) return &m->e[i];
  Entry *e;
  if (m->n < kCap) {
    e = &m->e[m->n++];
  } else { // full: replace round-robin (shapes beyond the table only cost re-queries)
    e = &m->e[m->evict];
    m->evict = (m->evict + 1) % kCap;
    entry_release(e);
  }
  entry_build(be, e, k, bias, aux);
  return e;
}

// ---- fallback: one thread per output element, fp32 accumulation in k order ----
template <typename T>
__device__ __forceinline__ float ld_f(const T *p, size_t i) {
  return (float)p[i];
}
template <>
__device__ __forceinline__ float ld_f<__nv_bfloat16>(const __nv_bfloat16 *p, size_t i) {
  return __bfloat162float(p[i]);
}
template <typename T>
__device__ __forceinline__ void st_f(T *p, size_t i, float v) {
  p[i] = v;
}
template <>
__device__ __forceinline__ void st_f<__nv_bfloat16>(__nv_bfloat16 *p, size_t i, float v) {
  p[i] = __float2bfloat16_rn(v);
}

// epi (Epi; E_DGELU_BGRAD's bias gradient is not done here): E_GELU writes aux = the sum (after
// the bias) and out = gelu of it in fp32; E_DGELU reads aux and writes out = gelu'(aux)·sum.
// res (matmul_t_res, [M,N] in out's dtype, not overlapping out; nullptr: none): added to the
// fp32 sum after the bias, rounded to out's type with it once.
template <typename TI, typename TO>
__global__ void naive_kernel(int form, TO *out, const TI *a, const TI *b, const TO *bias, int M, int K, int N,
                             int acc, int epi, TO *aux, const TO *res) {
  int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  for (int m = blockIdx.y * blockDim.y + threadIdx.y; m < M; m += gridDim.y * blockDim.y) {
    float s = 0.f;
    for (int k = 0; k < K; k++) {
      float x = form == F_AT ? ld_f(a, (size_t)k * M + m) : ld_f(a, (size_t)m * K + k);
      float y = form == F_T ? ld_f(b, (size_t)n * K + k) : ld_f(b, (size_t)k * N + n);
      s = fmaf(x, y, s);
    }
    size_t o = (size_t)m * N + n;
    if (acc) s += ld_f(out, o);
    if (bias) s += ld_f(bias, (size_t)n);
    if (res) s += ld_f(res, o);
    if (epi == E_GELU) {
      st_f(aux, o, s);
      s = tzc_gelu_fwd1(s);
    } else if (epi != E_NONE) {
      s *= tzc_gelu_grad1(ld_f((const TO *)aux, o));
    }
    st_f(out, o, s);
  }
}

void run_naive(tz_backend *be, int form, void *out, const void *a, const void *b, const void *bias, int M, int K,
               int N, int acc, int epi = E_NONE, void *aux = nullptr, const void *res = nullptr) {
  cudaStream_t s = tzc(be)->stream;
  dim3 blk(32, 8);
  unsigned gy = (unsigned)((M + 7) / 8);
  dim3 grid((unsigned)((N + 31) / 32), gy > 65535 ? 65535 : gy);
  if (tzc(be)->act == TZ_F32) {
    naive_kernel<float, float><<<grid, blk, 0, s>>>(form, (float *)out, (const float *)a, (const float *)b,
                                                    (const float *)bias, M, K, N, acc, epi, (float *)aux,
                                                    (const float *)res);
  } else if (form == F_AT) {
    naive_kernel<__nv_bfloat16, float><<<grid, blk, 0, s>>>(form, (float *)out, (const __nv_bfloat16 *)a,
                                                            (const __nv_bfloat16 *)b, (const float *)nullptr, M, K,
                                                            N, acc, E_NONE, (float *)nullptr, (const float *)nullptr);
  } else {
    naive_kernel<__nv_bfloat16, __nv_bfloat16><<<grid, blk, 0, s>>>(
        form, (__nv_bfloat16 *)out, (const __nv_bfloat16 *)a, (const __nv_bfloat16 *)b,
        (const __nv_bfloat16 *)bias, M, K, N, acc, epi, (__nv_bfloat16 *)aux, (const __nv_bfloat16 *)res);
  }
  TZC_LAUNCHED();
}

// A 16-byte-aligned pointer to the bias (a stream-ordered copy when it is not).
const void *aligned_bias(tz_backend *be, const void *bias, int N) {
  if (!bias || align_of(bias) >= 16) return bias;
  tzc_ctx *c = tzc(be);
  MM *m = mm_state(be);
  size_t bytes = (size_t)N * tz_dtype_size(c->act);
  if (bytes > m->bias_bytes) { // grows during the first step only
    size_t want = (bytes + 4095) & ~(size_t)4095;
    if (m->bias_buf) {
      TZC_CHECK(cudaStreamSynchronize(c->stream));
      TZC_CHECK(cudaFree(m->bias_buf));
      tzc_mem_account(be, -(long long)m->bias_bytes);
    }
    TZC_CHECK(cudaMalloc(&m->bias_buf, want));
    tzc_mem_account(be, (long long)want);
    m->bias_bytes = want;
    c->graph_gen++; // recorded steps that copied into the old buffer are stale
  }
  TZC_CHECK(cudaMemcpyAsync(m->bias_buf, bias, bytes, cudaMemcpyDeviceToDevice, c->stream));
  return m->bias_buf;
}

// ---- choosing among the heuristic's algorithms by time (TEZGAH_CUDA_MM_TUNE, default 1) ----
// Why: cuBLASLt's heuristic ranks its algorithms without running them, and its first choice is
// not always the fastest. Timed one by one on an H100 (2026-12-06, every training GEMM of GPT-2
// 124M and 1.5B at B·T = 16384), a later one was faster for about half of the shapes: the 124M
// lm_head forward 1.575 ms against 1.746 (-9.8 %), matmul_dgelu 0.1435 against 0.1570 (-8.6 %),
// 1.5B's attention-projection dW -13 %, others 0-6 %. So at a shape's first call each candidate
// runs on the real operands and is timed (cudaEvents: the mean of kReps runs after one untimed
// run), and the fastest is kept for the entry.
// Same bits: an algorithm is a candidate only when its output is bit-identical to the
// heuristic's first choice on this call's data (a fingerprint of D, and of aux for the GeLU
// epilogue), so the choice -- which timing noise may change from run to run -- never changes a
// result: runs stay bit-identical to each other and to TEZGAH_CUDA_MM_TUNE=0. (In the exploration
// on random data all candidates of the 30 shapes gave the first one's bits: most of cuBLASLt's
// sm_90 kernels sum K in the same order whatever their tile; in training, where the heuristic
// lists algorithms for the real pointers' alignments, some matmul_at candidates did not, and
// were dropped, TEZGAH_VERBOSE=1 says.) The bits are compared on one call's data, so a
// candidate must also have the first one's split-K count and reduction scheme: one that sums K
// in parts another way could match once by chance and differ later. An output with fewer than half its elements
// nonzero proves little, so then the first choice is kept. Not tuned: accumulating calls (C = D,
// beta = 1: each run would add again; grad_accum > 1's later micro-batches, classifier chunks
// after the first), DGELU_BGRAD, calls below kTuneFlop (TEZGAH_CUDA_MM_TUNE=all: every shape,
// for tests), and calls while the stream is being captured (a recorded decoding step). A
// candidate that fails to launch is dropped. On the side queue the timing shares the GPU with
// the main stream (noisier, the bits the same). The cost: each candidate runs kReps + 1 times
// once per shape (GPT-2 1.5B: ~0.3 s at the first step).
constexpr int kReps = 4;
constexpr double kTuneFlop = 2e9;

// fp[0] += a hash of every 16-bit unit of p (position-mixed: commutative sum, so exact whatever
// the order), fp[1] += its nonzero units
__global__ void fingerprint_kernel(unsigned long long *fp, const unsigned short *p, size_t n) {
  unsigned long long h = 0, nz = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned long long x = ((unsigned long long)p[i] << 32 | 1u) * 0x9E3779B97F4A7C15ull ^ (i * 0xC2B2AE3D27D4EB4Full);
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    h += x ^ (x >> 32);
    nz += p[i] != 0;
  }
  atomicAdd(&fp[0], h);
  atomicAdd(&fp[1], nz);
}

// An algorithm's split-K count and reduction scheme (-1 where cuBLASLt does not say).
void algo_split(const cublasLtMatmulAlgo_t *a, int32_t v[2]) {
  size_t sz;
  v[0] = v[1] = -1;
  if (tzc_lt.MatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &v[0], sizeof v[0], &sz) !=
      CUBLAS_STATUS_SUCCESS)
    v[0] = -1;
  if (tzc_lt.MatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &v[1], sizeof v[1], &sz) !=
      CUBLAS_STATUS_SUCCESS)
    v[1] = -1;
}

// Run candidate `i` of e on the call's operands (one launch; 0 when cuBLASLt takes it).
int try_algo(tzc_ctx *c, Entry *e, int i, const void *a, const void *b, const void *cin, void *out, float beta) {
  float alpha = 1.f;
  return tzc_lt.Matmul((cublasLtHandle_t)c->lt, e->desc, &alpha, b, e->la, a, e->lb, &beta, cin, e->ld, out, e->ld,
                       &e->cand[i], c->lt_ws, c->lt_ws_bytes, c->stream) == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}

// The fingerprint of out (and aux where given), n 16-bit units each; waits.
void fingerprint(tz_backend *be, MM *m, const void *out, const void *aux, size_t n, unsigned long long h[2]) {
  tzc_ctx *c = tzc(be);
  TZC_CHECK(cudaMemsetAsync(m->fp, 0, 2 * sizeof *m->fp, c->stream));
  fingerprint_kernel<<<264, 256, 0, c->stream>>>(m->fp, (const unsigned short *)out, n);
  if (aux) fingerprint_kernel<<<264, 256, 0, c->stream>>>(m->fp, (const unsigned short *)aux, n);
  TZC_LAUNCHED();
  TZC_CHECK(cudaMemcpyAsync(h, m->fp, 2 * sizeof *m->fp, cudaMemcpyDeviceToHost, c->stream));
  TZC_CHECK(cudaStreamSynchronize(c->stream));
}

// Pick e->algo among e->cand by time, keeping only those with the first one's bits (above).
// out (and aux for E_GELU) are overwritten by the candidates; the caller then runs e->algo.
void tune(tz_backend *be, Entry *e, const Key &k, const void *a, const void *b, const void *cin, void *out, float beta,
          const void *aux) {
  tzc_ctx *c = tzc(be);
  MM *m = mm_state(be);
  size_t n = (size_t)k.M * k.N * (k.bf16 && k.form != F_AT ? 1 : 2); // 16-bit units of out
  const void *aux_out = k.epi == E_GELU ? aux : nullptr;
  unsigned long long ref[2], h[2];
  cudaEvent_t *ev = m->ev;
  int best = 0, timed = 0;
  float best_ms = 0.f, first_ms = 0.f;
  int32_t split0[2], split[2];
  algo_split(&e->cand[0], split0);
  for (int i = 0; i < e->ncand; i++) {
    const char *why = nullptr;
    algo_split(&e->cand[i], split);
    if (split[0] != split0[0] || split[1] != split0[1]) {
      why = "sums K another way";
    } else if (try_algo(c, e, i, a, b, cin, out, beta)) {
      if (i == 0) break; /* (the caller's call reports it) */
      cudaGetLastError();
      why = "failed to launch";
    } else {
      fingerprint(be, m, out, aux_out, n, i ? h : ref);
      if (i == 0 && ref[1] < n / 2) break; // mostly zeros: the bits say little
      if (i && (h[0] != ref[0] || h[1] != ref[1])) why = "gives other bits";
    }
    float ms = 0.f;
    if (!why) {
      TZC_CHECK(cudaEventRecord(ev[0], c->stream));
      int ok = 1;
      for (int r = 0; r < kReps && ok; r++) ok = !try_algo(c, e, i, a, b, cin, out, beta);
      TZC_CHECK(cudaEventRecord(ev[1], c->stream));
      TZC_CHECK(cudaEventSynchronize(ev[1]));
      TZC_CHECK(cudaEventElapsedTime(&ms, ev[0], ev[1]));
      if (!ok) {
        cudaGetLastError();
        why = "failed to launch";
        if (i == 0) break;
      }
    }
    if (why) {
      if (c->verbose)
        fprintf(stderr, "cuda: matmul tune: %s M=%d K=%d N=%d: candidate %d %s, not taken\n", kFormName[k.form], k.M,
                k.K, k.N, i, why);
      continue;
    }
    if (i == 0) first_ms = ms;
    if (i == 0 || ms < best_ms) best = i, best_ms = ms;
    timed++;
  }
  e->algo = e->cand[best];
  if (timed > 1) m->tuned++;
  if (c->verbose && first_ms > 0)
    fprintf(stderr, "cuda: matmul tune: %s%s M=%d K=%d N=%d: candidate %d of %d, %.4f ms against the first's %.4f\n",
            kFormName[k.form], kEpiName[k.epi], k.M, k.K, k.N, best, e->ncand, best_ms / kReps, first_ms / kReps);
}

// epi (Epi) with aux (the GeLU input, [M,N] in out's dtype: written by E_GELU, read by E_DGELU*)
// and, for E_DGELU_BGRAD, dbias (N elements, 16-byte aligned scratch). Returns 1 when the
// epilogue wrote the bias gradient into dbias (fp32, or bf16 when *dbias_bf16 comes back 1);
// 0 otherwise (no bias gradient asked, or DGELU_BGRAD had no algorithm / was rejected: then the
// product went through DGELU or the fallback kernel and the caller sums the bias gradient).
// res (F_T, epi E_NONE and acc 0 only; out's dtype and [M,N] layout, not overlapping out): out =
// product + bias + res through cuBLASLt's C input (C = res, beta = 1), else (N % 8 != 0, no
// algorithm, rejected) the fallback kernel; either rounds the fp32 sum to out's type once.
int run(tz_backend *be, int form, void *out, const void *a, const void *b, const void *bias, int M, int K, int N,
        int acc, int epi = E_NONE, void *aux = nullptr, void *dbias = nullptr, int *dbias_bf16 = nullptr,
        const void *res = nullptr) {
  if (M <= 0 || N <= 0) return 0;
  if (res && (form != F_T || acc || epi != E_NONE)) tz_fatal("cuda: matmul: res with acc, an epilogue or not matmul_t");
  tzc_ctx *c = tzc(be);
  MM *m = mm_state(be);
  bias = aligned_bias(be, bias, N);
  const int naive_epi = epi == E_DGELU_BGRAD ? E_DGELU : epi; // the fallback kernel leaves db to the caller
  if (m->force_naive || K <= 0) {
    run_naive(be, form, out, a, b, bias, M, K < 0 ? 0 : K, N, acc, naive_epi, aux, res);
    return 0;
  }
  if (epi != E_NONE && N % 8) { // cuBLASLt wants the aux matrix's ld (N) divisible by 8
    m->fallbacks++;
    run_naive(be, form, out, a, b, bias, M, K, N, acc, naive_epi, aux);
    return 0;
  }
  if (res && (N % 8 || (uintptr_t)res % 16)) { // cuBLASLt's algorithms there added the bias after rounding acc + C (header)
    m->fallbacks++;
    run_naive(be, form, out, a, b, bias, M, K, N, acc, epi, aux, res);
    return 0;
  }
  tzc_lt_ready(be); // cuBLASLt loads on a thread from backend creation: wait for it here
  Key k;
  memset(&k, 0, sizeof k); // padding-free, but compared with memcmp
  k.form = form;
  k.M = M, k.K = K, k.N = N, k.acc = acc ? 1 : 0, k.bias = bias != nullptr, k.bf16 = c->act == TZ_BF16;
  k.epi = epi;
  k.res = res != nullptr;
  const void *epi_bias = epi == E_DGELU_BGRAD ? (const void *)dbias : bias;
  k.al_a = align_of(a), k.al_b = align_of(b), k.al_d = align_of(out), k.al_bias = align_of(epi_bias);
  k.al_c = res ? align_of(res) : k.al_d;
  k.al_aux = align_of(aux);
  Entry *e = lookup(be, k, epi_bias, aux);
  if (e->naive) {
    if (epi == E_DGELU_BGRAD) return run(be, form, out, a, b, bias, M, K, N, acc, E_DGELU, aux);
    m->fallbacks++;
    run_naive(be, form, out, a, b, bias, M, K, N, acc, epi, aux, res);
    return 0;
  }
  if (epi_bias)
    LT_CHECK(tzc_lt.MatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &epi_bias, sizeof epi_bias));
  if (aux) LT_CHECK(tzc_lt.MatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux));
  float alpha = 1.f, beta = acc || res ? 1.f : 0.f;
  const void *cin = res ? res : out; // C: res (out-of-place, D's layout and type) or D itself
  if (!e->tuned) {
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (m->tune && e->ncand > 1 && !acc && epi != E_DGELU_BGRAD && (m->tune == 2 || 2.0 * M * N * K >= kTuneFlop) &&
        cudaStreamIsCapturing(c->stream, &cap) == cudaSuccess && cap == cudaStreamCaptureStatusNone)
      tune(be, e, k, a, b, cin, out, beta, aux);
    e->tuned = 1;
  }
  cublasStatus_t st = tzc_lt.Matmul((cublasLtHandle_t)c->lt, e->desc, &alpha, b, e->la, a, e->lb, &beta, cin, e->ld,
                                     out, e->ld, &e->algo, c->lt_ws, c->lt_ws_bytes, c->stream);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE) {
    // rejected before launch (nothing was queued): this shape/alignment uses the fallback
    if (c->verbose)
      fprintf(stderr, "cuda: cuBLASLt rejected %s%s%s M=%d K=%d N=%d (status %d): %s\n", kFormName[form],
              kEpiName[epi], res ? " with C = res" : "", M, K, N, (int)st,
              epi == E_DGELU_BGRAD ? "DGELU + bias_bwd" : "fallback kernel");
    e->naive = 1;
    if (epi == E_DGELU_BGRAD) return run(be, form, out, a, b, bias, M, K, N, acc, E_DGELU, aux);
    m->fallbacks++;
    run_naive(be, form, out, a, b, bias, M, K, N, acc, epi, aux, res);
    return 0;
  }
  LT_CHECK(st);
  if (epi != E_DGELU_BGRAD) return 0;
  if (dbias_bf16) *dbias_bf16 = e->bgrad_bf16;
  return 1;
}

// db[i] += s[i]: the epilogue's bias gradient (fp32 or bf16) into the accumulating fp32 gradient.
template <typename T>
__global__ void add_into_kernel(float *db, const T *s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) db[i] += ld_f(s, (size_t)i);
}

// TEZGAH_CUDA_GELU_EPI's value as GELU_* bits, kAutoEpi for auto (also unset or empty), or -1
// when it is not one of the documented values.
constexpr int kAutoEpi = -2;
// TEZGAH_CUDA_MM_TUNE's value as MM.tune (0, 1, 2 for all; unset or empty: 1), or -1 when unknown
int parse_mm_tune(const char *s) {
  if (!s || !*s) return 1;
  return !strcmp(s, "0") ? 0 : !strcmp(s, "1") ? 1 : !strcmp(s, "all") ? 2 : -1;
}

int parse_gelu_epi(const char *s) {
  if (!s || !*s || !strcmp(s, "auto")) return kAutoEpi;
  if (!strcmp(s, "off")) return 0;
  if (!strcmp(s, "bwd")) return TZC_GELU_BWD;
  if (!strcmp(s, "fwd")) return TZC_GELU_FWD;
  if (!strcmp(s, "both")) return TZC_GELU_BWD | TZC_GELU_FWD;
  if (!strcmp(s, "bwd+bgrad")) return TZC_GELU_BWD | TZC_GELU_BGRAD;
  if (!strcmp(s, "both+bgrad")) return TZC_GELU_BWD | TZC_GELU_FWD | TZC_GELU_BGRAD;
  return -1;
}

} // namespace

extern "C" void tzc_matmul_t(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, tz_slice bias, int M, int K, int N,
                             int acc) {
  TZC_PROF(be, "matmul_t");
  TZC_PROF_WORK(2.0 * M * N * K, 0);
  if (tzc_gemv_t(be, tzc_ptr(out), tzc_ptr(a), tzc_w(be, b), tzc_w(be, bias), M, K, N, acc)) return; // few rows
  run(be, F_T, tzc_ptr(out), tzc_ptr(a), tzc_w(be, b), tzc_w(be, bias), M, K, N, acc);
}

extern "C" void tzc_matmul(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, int M, int K, int N, int acc) {
  TZC_PROF(be, "matmul");
  TZC_PROF_WORK(2.0 * M * N * K, 0);
  run(be, F_NN, tzc_ptr(out), tzc_ptr(a), tzc_w(be, b), nullptr, M, K, N, acc);
}

extern "C" void tzc_matmul_at(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, int M, int K, int N, int acc) {
  TZC_PROF(be, "matmul_at");
  TZC_PROF_WORK(2.0 * M * N * K, 0);
  run(be, F_AT, tzc_ptr(out), tzc_ptr(a), tzc_ptr(b), nullptr, M, K, N, acc);
}

// backend.h: h[M,N] = x[M,K]·W[N,K]ᵀ + bias[N] (act), out = gelu(h) from the fp32 sum (mmin = act).
extern "C" void tzc_matmul_t_gelu(tz_backend *be, tz_slice out, tz_slice h, tz_slice x, tz_slice w, tz_slice bias,
                                  int M, int K, int N) {
  TZC_PROF(be, "matmul_t_gelu");
  TZC_PROF_WORK(2.0 * M * N * K, 0);
  run(be, F_T, tzc_ptr(out), tzc_ptr(x), tzc_w(be, w), tzc_w(be, bias), M, K, N, 0, E_GELU, tzc_ptr(h));
}

// backend.h: dh[M,N] = gelu'(h[M,N]) ⊙ (dout[M,K]·W[K,N]) (act), db[N] += Σ_m dh[m,:] (fp32) when present.
extern "C" void tzc_matmul_dgelu(tz_backend *be, tz_slice dh, tz_slice db, tz_slice dout, tz_slice w, tz_slice h,
                                 int M, int K, int N) {
  MM *m = mm_state(be);
  int fused = 0;
  {
    const int bgrad = m->gelu_bgrad && tz_present(db);
    TZC_PROF(be, bgrad ? "matmul_dgelu_bgrad" : "matmul_dgelu");
    TZC_PROF_WORK(2.0 * M * N * K, 0);
    void *s = bgrad ? tzc_scratch(be, (size_t)N * sizeof(float)) : nullptr; // 256-aligned
    int s_bf16 = 0;
    fused = run(be, F_NN, tzc_ptr(dh), tzc_ptr(dout), tzc_w(be, w), nullptr, M, K, N, 0,
                bgrad ? E_DGELU_BGRAD : E_DGELU, tzc_ptr(h), s, &s_bf16);
    if (fused) {
      unsigned g = (unsigned)((N + 255) / 256);
      if (s_bf16)
        add_into_kernel<<<g, 256, 0, tzc(be)->stream>>>((float *)tzc_ptr(db), (const __nv_bfloat16 *)s, N);
      else
        add_into_kernel<<<g, 256, 0, tzc(be)->stream>>>((float *)tzc_ptr(db), (const float *)s, N);
      TZC_LAUNCHED();
    }
  }
  if (!fused && tz_present(db)) tzc_bias_bwd(be, db, dh, M, N);
}

// backend.h: out[M,N] = x[M,K]·W[N,K]ᵀ + bias[N] + res[M,N] (act; bias may be NONE), the sum in
// fp32 rounded to act once. out and res distinct (the same buffer: out += x·Wᵀ + bias, the
// accumulating matmul_t; a partial overlap: fatal). Few rows: res copied into out, then the
// accumulating few-row kernel or cuBLASLt; else cuBLASLt with C = res, or the fallback kernel
// where N % 8 != 0 or res is not on 16 bytes (the header). Offered as TEZGAH_CUDA_MM_RES says (backend_cuda.c).
extern "C" void tzc_matmul_t_res(tz_backend *be, tz_slice out, tz_slice x, tz_slice w, tz_slice bias, tz_slice res,
                                 int M, int K, int N) {
  TZC_PROF(be, "matmul_t_res");
  TZC_PROF_WORK(2.0 * M * N * K, 0);
  if (M <= 0 || N <= 0) return;
  tzc_ctx *c = tzc(be);
  void *o = tzc_ptr(out);
  const void *r = tzc_ptr(res), *a = tzc_ptr(x), *b = tzc_w(be, w), *bi = tzc_w(be, bias);
  const size_t bytes = (size_t)M * N * tz_dtype_size(c->act);
  const uintptr_t po = (uintptr_t)o, pr = (uintptr_t)r;
  if (po != pr && po < pr + bytes && pr < po + bytes)
    tz_fatal("cuda: matmul_t_res: out overlaps res (backend.h: distinct)");
  if (po == pr || M <= TZC_GEMV_MAX_M) {
    if (po != pr) TZC_CHECK(cudaMemcpyAsync(o, r, bytes, cudaMemcpyDeviceToDevice, c->stream));
    if (tzc_gemv_t(be, o, a, b, bi, M, K, N, 1)) return;
    if (N % 8) { // cuBLASLt with C = D at this ld: the same two roundings as with C = res (header)
      if (!mm_state(be)->force_naive) mm_state(be)->fallbacks++;
      run_naive(be, F_T, o, a, b, bi, M, K, N, 1);
      return;
    }
    if (po != pr) { // the few-row kernels declined: C = res, which rounds once (C = D may not: the header)
      run(be, F_T, o, a, b, bi, M, K, N, 0, E_NONE, nullptr, nullptr, nullptr, r);
      return;
    }
    run(be, F_T, o, a, b, bi, M, K, N, 1);
    return;
  }
  run(be, F_T, o, a, b, bi, M, K, N, 0, E_NONE, nullptr, nullptr, nullptr, r);
}

extern "C" int tzc_gelu_epi_mode(int bf16) {
  int v = parse_gelu_epi(getenv("TEZGAH_CUDA_GELU_EPI"));
  if (v == kAutoEpi) return bf16 ? TZC_GELU_AUTO_BF16 : 0;
  return v < 0 ? 0 : v;
}

extern "C" int tzc_gelu_epi_env_check(char *why, size_t cap) {
  const char *e = getenv("TEZGAH_CUDA_GELU_EPI");
  if (parse_gelu_epi(e) != -1) return 0;
  snprintf(why, cap, "TEZGAH_CUDA_GELU_EPI=%.40s: must be auto, off, bwd, fwd, both, bwd+bgrad or both+bgrad", e);
  return -1;
}

extern "C" void tzc_matmul_init(tz_backend *be) {
  MM *m = (MM *)calloc(1, sizeof(MM));
  if (!m) tz_fatal("out of host memory for the matmul cache");
  const char *s = getenv("TEZGAH_CUDA_MATMUL"); // "naive": the fallback kernel only (tests)
  m->force_naive = s && !strcmp(s, "naive");
  m->gelu_bgrad = (tzc_gelu_epi_mode(1) & TZC_GELU_BGRAD) != 0; // checked at backend creation
  m->tune = parse_mm_tune(getenv("TEZGAH_CUDA_MM_TUNE")); // checked at backend creation
  if (m->tune < 0) m->tune = 1;
  // tune's fingerprint and events; without them no tuning (the heuristic's first choice)
  if (m->tune && cudaMalloc(&m->fp, 2 * sizeof *m->fp) != cudaSuccess) m->fp = nullptr;
  if (m->fp) tzc_mem_account(be, 2 * sizeof *m->fp);
  if (m->fp && (cudaEventCreate(&m->ev[0]) != cudaSuccess || cudaEventCreate(&m->ev[1]) != cudaSuccess)) {
    if (m->ev[0]) cudaEventDestroy(m->ev[0]);
    m->ev[0] = m->ev[1] = nullptr;
  }
  if (m->tune && (!m->fp || !m->ev[1])) {
    cudaGetLastError();
    m->tune = 0;
  }
  tzc(be)->mm = m;
}

extern "C" int tzc_mm_tune_env_check(char *why, size_t cap) {
  const char *e = getenv("TEZGAH_CUDA_MM_TUNE");
  if (parse_mm_tune(e) >= 0) return 0;
  snprintf(why, cap, "TEZGAH_CUDA_MM_TUNE=%.40s: must be 1, 0 or all", e);
  return -1;
}

extern "C" long long tzc_matmul_tuned(tz_backend *be) {
  MM *m = mm_state(be);
  return m ? m->tuned : 0;
}

extern "C" long long tzc_matmul_fallbacks(tz_backend *be) {
  MM *m = mm_state(be);
  return m ? m->fallbacks : 0;
}

extern "C" void tzc_matmul_destroy(tz_backend *be) {
  tzc_ctx *c = tzc(be);
  MM *m = (MM *)c->mm;
  if (!m) return;
  for (int i = 0; i < m->n; i++) entry_release(&m->e[i]);
  if (m->fp) {
    cudaFree(m->fp);
    tzc_mem_account(be, -(long long)(2 * sizeof *m->fp));
  }
  for (int i = 0; i < 2; i++)
    if (m->ev[i]) cudaEventDestroy(m->ev[i]);
  if (m->bias_buf) {
    cudaFree(m->bias_buf);
    tzc_mem_account(be, -(long long)m->bias_bytes);
  }
  free(m);
  c->mm = nullptr;
}
