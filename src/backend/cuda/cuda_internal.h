/* Internal interface of the CUDA backend, shared by its runtime (the .c files of src/backend/cuda: device,
 * memory, streams, profiling, the op table) and its kernels (src/kernels/<op>/<op>.cu).
 * Included from C and from CUDA C++ (nvcc); nothing here is public API.
 *
 * Contract for a kernel file src/kernels/<op>/<op>.cu:
 * - It defines `extern "C"` launchers named tzc_<op> with exactly the signature of the
 *   matching tz_backend member (src/backend/backend.h), e.g.
 *     extern "C" void tzc_rmsnorm_fwd(tz_backend *be, tz_slice out, ...);
 *   The runtime puts them into the op table.
 * - Everything is launched on tzc(be)->stream, asynchronously; a launcher never synchronizes
 *   the device and never allocates (use tzc_scratch for temporaries).
 * - "act" arguments are of dtype tzc(be)->act: float (TZ_F32) or __nv_bfloat16 (TZ_BF16);
 *   kernels are templates over the element type, instantiated for both. Weight ("W")
 *   arguments are read through tzc_w(), which returns the bf16 mirror in bf16 mode and the
 *   fp32 master otherwise, so W is also of dtype tzc(be)->act. fp32 arguments are float.
 * - The default path is deterministic (no floating-point atomics): the same inputs give
 *   bit-identical outputs run to run on one GPU.
 * - The first statement is TZC_PROF(be, "<op>") (per-op CUDA-event timing for --profile;
 *   nothing when profiling is off), and every launch is followed by TZC_LAUNCHED().
 */
#ifndef TZ_CUDA_INTERNAL_H
#define TZ_CUDA_INTERNAL_H
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A device allocation (cudaMalloc). */
struct tz_buf {
  void *ptr;
  size_t bytes;
};

typedef struct tzc_prof tzc_prof; /* per-op timing state (backend_cuda_prof.c) */

typedef struct {
  int device;
  cudaStream_t stream;
  tz_dtype act; /* activation dtype: TZ_F32 (--precision fp32) or TZ_BF16 */
  int sm_count, cc_major, cc_minor;
  size_t bytes_used, bytes_peak; /* live tz_buf bytes, for mem_used / mem_peak */
  /* bf16 mode: the registered fp32 params buffer and its bf16 mirror (same element
   * order, n_params elements). adamw rewrites the mirror in the same pass. */
  tz_buf *params;
  void *params_bf16;
  size_t n_params;
  /* tz_backend_hint_weights_read_only at creation (bf16 only): the registered params keep no
   * fp32 copy on the device (params->ptr NULL, its bytes not held); uploads into them are
   * converted to bf16 on the host straight into the mirror (backend_cuda_mem.c). */
  int params_ro;
  /* Device scratch for kernels' temporaries (tzc_scratch). */
  void *scratch;
  size_t scratch_bytes;
  /* cuBLASLt handle (cublasLtHandle_t) and its workspace, owned by the runtime. */
  void *lt;     /* NULL until tzc_lt_ready */
  void *lt_job; /* the thread loading cuBLASLt (backend_cuda.c) */
  void *lt_ws;
  size_t lt_ws_bytes;
  tzc_prof *prof; /* NULL unless TEZGAH_PROFILE=1 */
  /* LayerNorm-backward forms, read from the environment when the backend is created
   * (backend_cuda.c), so that a process may hold backends of several settings (tests): ln_warps:
   * TEZGAH_CUDA_LN_WARPS (1..8; 0: by C, layernorm.cu ln_nw), the one-pass kernel's warps per
   * block, for LayerNorm's and RMSNorm's backward alike. */
  int ln_warps;
  /* TEZGAH_CUDA_ROPE_PAIRS=1: RoPE by the one-pair-per-thread kernel everywhere (rope.cu), the
   * A/B of its 16-byte form; the same bits either way. */
  int rope_pairs;
  /* TEZGAH_CUDA_RMS_ONEPASS=0: RMSNorm's backward by its rows kernel and the tiled column sum (rmsnorm.cu),
   * the A/B of the one-pass kernel (other dinp and dw bits: another rounding and summation order) */
  int rms_rows;
  int smem_optin; /* the device's largest dynamic shared memory per block (bytes) */
  /* ---- runtime-private below (backend_cuda.c, matmul.cu); kernels need not look ---- */
  void *mm;                 /* matmul state: descriptor/algorithm cache (matmul.cu) */
  void *stage[4];           /* pinned host staging ring for uploads / downloads */
  cudaEvent_t stage_ev[4];  /* completion of each slot's last copy */
  int stage_next;
  size_t stage_bytes;       /* bytes per slot */
  int verbose;              /* TEZGAH_VERBOSE: log allocations to stderr */
  /* Decoding (attention_decode.cu, pick.cu): split-attention partials, per-(row, head)
   * counters (zeroed), the rows' uniform draws; grown by tzc_dec_buffer outside recordings. */
  void *dec_part, *dec_cnt, *dec_r;
  size_t dec_part_bytes, dec_cnt_bytes, dec_r_bytes;
  /* Recorded steps (backend_cuda_graph.c): CUDA graphs by key. graph_gen counts the device
   * buffers that recordings may point at being reallocated (kernel scratch, the decoding
   * buffers): a recording made under an older generation is stale and is made again. */
  void *graphs;
  unsigned graph_gen;
  int graphs_off; /* TEZGAH_CUDA_GRAPHS=0, or profiling: ops always run one by one */
  /* Programmatic dependent launch. pdl_off: TEZGAH_CUDA_PDL=0, the device is older than sm_90,
   * profiling, or a decoding recording with it failed; else our own kernels launched through tzc_launch
   * (cuda_common.cuh: the norms, column sums, elementwise ops, ...) always carry the attribute.
   * pdl: the few-row matmuls and decoding attention (gemv.cu, attention_decode.cu) carry it too,
   * 1 while a decoding step is being recorded (its matmuls read only weights before their wait). */
  int pdl, pdl_off;
  /* decode_step's buffers, layer table and launch geometry (decode_step.cu), NULL until used
   * (be->decode_step is set only under TEZGAH_CUDA_STEP=1: backend_cuda.c) */
  void *step;
  /* The side queue (backend_cuda_side.c; be->side_* offered when TEZGAH_CUDA_SIDE allows):
   * while on_side, `stream`, `lt_ws` and `scratch` are the side stream and its own cuBLASLt
   * workspace and kernel scratch (swapped with the main ones, which the side's struct holds
   * meanwhile), so the launchers need not know. */
  struct tzc_side *side;
  int on_side;
} tzc_ctx;

static inline tzc_ctx *tzc(tz_backend *be) { return (tzc_ctx *)be->ctx; }

/* Device address of a slice (NULL for an absent slice). */
static inline void *tzc_ptr(tz_slice s) { return s.buf ? (char *)s.buf->ptr + s.off : NULL; }

/* Device address of a weight slice as kernels read it: in bf16 mode, a slice of the
 * registered params buffer maps to the bf16 mirror (element off/4); otherwise the fp32
 * slice itself. NULL for an absent slice. */
static inline void *tzc_w(tz_backend *be, tz_slice s) {
  tzc_ctx *c = tzc(be);
  if (!s.buf) return NULL;
  if (c->act == TZ_BF16 && c->params_bf16 && s.buf == c->params)
    return (char *)c->params_bf16 + s.off / 2;
  return tzc_ptr(s);
}

/* At least `bytes` of device scratch, valid until the next tzc_scratch call (ops run in
 * stream order, so consecutive ops may reuse it). Grows on demand (the first training step
 * sizes it; later steps allocate nothing). Aligned to 256 bytes. */
void *tzc_scratch(tz_backend *be, size_t bytes);

/* 1 when tzc_scratch can give `bytes` without risking the run (else 0): the scratch already holds that
 * much, or growing it takes at most half of the device's free memory beyond a 1 GiB reserve
 * (tzc_scratch aborts when cudaMalloc fails). For kernels with a choice: attention's dS-storing
 * backward and cuDNN's attention workspace decline (their fallbacks need less) when it says no.
 * Training allocates its arenas before step 1 and in its loop only the scratch and a matmul
 * bias copy grow, each by replacing itself, in step 1; so the first backward's check sees about
 * what the run leaves free. The reserve and the other half stay for what comes later (NCCL's
 * buffers at the first all-reduce; the final sample, which loads the model again while the
 * training backend is still held). */
int tzc_scratch_fits(tz_backend *be, size_t bytes);

/* With TEZGAH_CUDA_ATTN_TIMING=1, tzc_attention_bwd (src/kernels/attention/attention.cu) times
 * its tensor-core kernels with CUDA events: ms[0] the D = rowsum(dout ∘ out) kernel, ms[1]
 * fa_dkdv, ms[2] fa_dq or fa_dq_ds, summed over the calls since the last read; returns the
 * number of those calls and resets (bench_cuda_attention's per-kernel split). */
long tzc_attention_bwd_split(double ms[3]);

/* 0 when $TEZGAH_CUDA_ATTN is unset, empty or one of auto, builtin, cudnn, fast, fallback
 * (src/kernels/attention/attention.cu says what each does); else -1 with the one-line reason in
 * why. The backend checks it at creation, so a bad value fails before any work is done. */
int tzc_attention_env_check(char *why, size_t cap);

/* TEZGAH_CUDA_GELU_EPI (matmul.cu): which GeLU epilogues the backend offers. auto (the default,
 * also unset or empty): TZC_GELU_AUTO_BF16 with bf16 activations, none in fp32 (whose training
 * matches the CPU to 1e-4: the epilogue's GeLU is cuBLASLt's own); off: none; bwd: matmul_dgelu;
 * fwd: matmul_t_gelu; both; bwd+bgrad, both+bgrad: and matmul_dgelu's bias gradient through
 * DGELU_BGRAD (slower on the H200). tzc_gelu_epi_mode(bf16): the TZC_GELU_* bits of the value for
 * that precision (0 for a bad one); tzc_gelu_epi_env_check: 0, or -1 with the one-line reason in
 * why (the backend checks it at creation, as TEZGAH_CUDA_ATTN). */
enum { TZC_GELU_BWD = 1, TZC_GELU_FWD = 2, TZC_GELU_BGRAD = 4 };
/* both (no bgrad: DGELU_BGRAD was slower on the H200, and its bias gradient may be bf16). The
 * forward epilogue was left out of auto at first (session 20): test_cuda_train's 20-step bf16
 * loss curve went 3.3e-2 from the CPU's against bwd's 1.6e-2 and a 2e-2 bound. That curve's
 * distance measures the chaotic growth of any rounding change, not a step's precision; its
 * teacher-forced check (each step at the CPU's weights) does, and passes with it (session 31).
 * The model does not use it under --recompute (model.c: recompute rebuilds gelu(h) from the
 * stored bf16 h with gelu_fwd, which the fused op's GeLU of the fp32 sum would not match), so
 * in bf16 a run with and without recompute differ in the last bits. */
#define TZC_GELU_AUTO_BF16 (TZC_GELU_BWD | TZC_GELU_FWD)
int tzc_gelu_epi_mode(int bf16);
int tzc_gelu_epi_env_check(char *why, size_t cap);

/* Device memory held outside tz_bufs (scratch, workspaces, the bf16 mirror) counts toward
 * mem_used / mem_peak: call with +bytes after allocating and -bytes before freeing. */
void tzc_mem_account(tz_backend *be, long long delta);

/* Abort with "tezgah: error: cuda: <what>: <cudaGetErrorString> at file:line" on error:
 * op launchers cannot fail by contract (shapes are validated when the model is built), so a
 * CUDA error is a bug or a lost device. */
void tzc_check(cudaError_t e, const char *what, const char *file, int line);
#define TZC_CHECK(x) tzc_check((x), #x, __FILE__, __LINE__)
#define TZC_LAUNCHED() tzc_check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

/* Per-op timing (backend_cuda_prof.c): begin/end record CUDA events around one op call
 * when profiling is on. flops / bytes are the op's nominal work (for the GFLOP/s and GB/s
 * columns; 0 when not meaningful). `op` must have static storage (a string literal): the
 * table keeps the pointer. Nested calls (an op launcher calling another) count only the
 * outermost. Events come from a pool made when profiling starts: a step allocates nothing. */
void tzc_prof_begin(tz_backend *be, const char *op);
void tzc_prof_end(tz_backend *be, double flops, double bytes);

/* cuBLASLt, loaded at backend creation (dlopen of libcublasLt.so.<major>): linking it would
 * make every tezgah start map its 500 MB, GPU or not. Call through tzc_lt.<name> (the
 * function cublasLt<name>, same signature), e.g. tzc_lt.Matmul(...). */
#ifdef __cplusplus
#define TZC_TYPEOF(x) decltype(x)
#else
#define TZC_TYPEOF(x) __typeof__(x)
#endif
#define TZC_LT_FUNCS(X)                                                                              \
  X(Create) X(Destroy) X(GetVersion) X(MatmulDescCreate) X(MatmulDescDestroy) X(MatmulDescSetAttribute) \
  X(MatrixLayoutCreate) X(MatrixLayoutDestroy) X(MatmulPreferenceCreate) X(MatmulPreferenceDestroy)   \
  X(MatmulPreferenceSetAttribute) X(MatmulAlgoGetHeuristic) X(Matmul) X(MatmulAlgoConfigGetAttribute)
#define TZC_LT_MEMBER(name) TZC_TYPEOF(&cublasLt##name) name;
typedef struct {
  TZC_LT_FUNCS(TZC_LT_MEMBER)
} tzc_lt_api;
#undef TZC_LT_MEMBER
extern tzc_lt_api tzc_lt;
/* Load cuBLASLt once (thread-unsafe: from the backend's loader thread): 0, or -1 with tz_err(). */
int tzc_lt_load(void);
/* Before any cuBLASLt call: wait for the loader thread and create the handle (tzc_ctx.lt);
 * a failed load is fatal here (one line naming the library). */
void tzc_lt_ready(tz_backend *be);

/* ---- launchers (src/kernels/<op>/<op>.cu), each with its tz_backend member's signature ----
 * The runtime (backend_cuda.c) puts them into the op table. */
void tzc_fill(tz_backend *be, tz_slice dst, float value, size_t n, tz_dtype dt);
/* Zero n ranges of fp32 elements of base ([2i] first, [2i + 1] count), a few launches in all
 * (w16.cu; backend.h zero_ranges). */
void tzc_zero_ranges(tz_backend *be, float *base, const size_t *ranges, int n);
void tzc_embed_fwd(tz_backend *be, tz_slice out, tz_slice tok, tz_slice wte, tz_slice wpe, int B, int T, int C,
                   int V);
void tzc_embed_bwd(tz_backend *be, tz_slice dwte, tz_slice dwpe, tz_slice dout, tz_slice tok, int B, int T, int C,
                   int V);
void tzc_rmsnorm_fwd(tz_backend *be, tz_slice out, tz_slice rstd, tz_slice inp, tz_slice w, int N, int C, float eps);
void tzc_rmsnorm_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice dout, tz_slice inp, tz_slice w,
                     tz_slice rstd, int N, int C);
void tzc_layernorm_fwd(tz_backend *be, tz_slice out, tz_slice mean, tz_slice rstd, tz_slice inp, tz_slice w,
                       tz_slice b, int N, int C, float eps);
void tzc_layernorm_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice db, tz_slice dout, tz_slice inp,
                       tz_slice w, tz_slice mean, tz_slice rstd, int N, int C);
void tzc_matmul_t(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, tz_slice bias, int M, int K, int N, int acc);
/* The GeLU-epilogue matmuls (backend.h's matmul_t_gelu, matmul_dgelu; matmul.cu). */
void tzc_matmul_t_gelu(tz_backend *be, tz_slice out, tz_slice h, tz_slice x, tz_slice w, tz_slice bias, int M, int K,
                       int N);
void tzc_matmul_dgelu(tz_backend *be, tz_slice dh, tz_slice db, tz_slice dout, tz_slice w, tz_slice h, int M, int K,
                      int N);
/* The residual-epilogue matmul (backend.h's matmul_t_res; matmul.cu: cuBLASLt with C = res, beta
 * 1; the fallback kernel where N % 8 != 0). Offered by default in bf16, in fp32 only under
 * TEZGAH_CUDA_MM_RES=1, never under =0 (read at backend creation); where not offered NULL and
 * the model runs matmul_t + add (backend_cuda.c: why). */
void tzc_matmul_t_res(tz_backend *be, tz_slice out, tz_slice x, tz_slice w, tz_slice bias, tz_slice res, int M, int K,
                      int N);
void tzc_matmul(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, int M, int K, int N, int acc);
void tzc_matmul_at(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, int M, int K, int N, int acc);
void tzc_bias_bwd(tz_backend *be, tz_slice db, tz_slice dout, int M, int N);
/* backend.h's layernorm_bwd_rb (layernorm.cu): layernorm_bwd and the preceding projection's bias
 * gradient from the dinp it reads. Offered unless TEZGAH_CUDA_LN_RB=0 (backend_cuda.c). */
void tzc_layernorm_bwd_rb(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice db, tz_slice dbias, tz_slice dout,
                          tz_slice inp, tz_slice w, tz_slice mean, tz_slice rstd, int N, int C);
/* How many layernorm_bwd_rb calls of this process took the fallback (fused 0) or the one-pass
 * kernel (1): backend.h's tz_cuda_ln_rb_calls. */
long tzc_ln_rb_calls(int fused);
/* RMSNorm's backward by layernorm.cu's one-pass kernel (rmsnorm.cu calls it): dinp += (act),
 * dw += (fp32) as tzc_rmsnorm_bwd's contract; 1 when launched, 0 (nothing done) where that kernel
 * does not apply (C % W, C > 8·32·W, unaligned rows, shared memory) or TEZGAH_CUDA_RMS_ONEPASS=0. */
int tzc_rmsnorm_bwd_onepass(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice dout, tz_slice inp, tz_slice w,
                            tz_slice rstd, int N, int C);
void tzc_rope(tz_backend *be, tz_slice qkv, int B, int T, int n_head, int n_kv_head, int head_dim, int pos0,
              float theta, int dir);
void tzc_attention_fwd(tz_backend *be, tz_slice out, tz_slice lse, tz_slice q, tz_slice k, tz_slice v, int B, int Tq,
                       int Tk, int q_pos0, int n_head, int n_kv_head, int head_dim, int q_stride, int kv_stride);
void tzc_attention_bwd(tz_backend *be, tz_slice dq, tz_slice dk, tz_slice dv, tz_slice dout, tz_slice q, tz_slice k,
                       tz_slice v, tz_slice out, tz_slice lse, int B, int T, int n_head, int n_kv_head, int head_dim,
                       int q_stride, int kv_stride);
void tzc_gelu_fwd(tz_backend *be, tz_slice out, tz_slice inp, size_t n);
void tzc_gelu_bwd(tz_backend *be, tz_slice dinp, tz_slice inp, tz_slice dout, size_t n);
void tzc_swiglu_fwd(tz_backend *be, tz_slice out, tz_slice gu, int N, int F);
void tzc_swiglu_bwd(tz_backend *be, tz_slice dgu, tz_slice dout, tz_slice gu, int N, int F);
void tzc_add(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, size_t n);
void tzc_crossentropy(tz_backend *be, tz_slice losses, tz_slice logits, tz_slice targets, int N, int V, int Vp,
                      float dscale);
void tzc_sum_sq(tz_backend *be, tz_slice out, tz_slice x, size_t n);
void tzc_adamw(tz_backend *be, tz_slice params, tz_slice grads, tz_slice m, tz_slice v, const tz_range *ranges,
               int n_ranges, const tz_adamw_hp *hp);

/* Batched decoding ops (backend.h): embed.cu, rope.cu, attention_decode.cu, pick.cu. */
void tzc_embed_pos_fwd(tz_backend *be, tz_slice out, tz_slice tok, tz_slice pos, tz_slice wte, tz_slice wpe, int B,
                       int C, int V);
void tzc_rope_pos(tz_backend *be, tz_slice qkv, tz_slice pos, int B, int n_head, int n_kv_head, int head_dim,
                  float theta);
void tzc_attention_decode(tz_backend *be, tz_slice out, tz_slice kcache, tz_slice vcache, tz_slice qkv, tz_slice pos,
                          int B, int n_head, int n_kv_head, int head_dim, int q_stride, int max_T);
int tzc_pick(tz_backend *be, tz_slice out, tz_slice logits, int B, int V, int Vp, float temperature, int top_k,
             float top_p, const double *r);
int tzc_pick_dev(tz_backend *be, tz_slice out, tz_slice logits, int B, int V, int Vp, float temperature, int top_k,
                 float top_p, tz_slice r, tz_slice ids);
/* The decoding buffers (which: 0 partials, 1 counters (zero-filled), 2 draws), at least
 * `bytes`; growing one bumps graph_gen. Freed by tzc_dec_buffers_free at destroy. */
void *tzc_dec_buffer(tz_backend *be, int which, size_t bytes);
void tzc_dec_buffers_free(tz_backend *be);
/* A whole GPT-2 decoding step in one persistent kernel (src/kernels/decode_step/decode_step.cu):
 * be->decode_step, and its state's release (tzc_ctx.step) at destroy. */
int tzc_decode_step(tz_backend *be, const tz_step_desc *d, int B);
void tzc_decode_step_free(tz_backend *be);
/* Recorded steps (backend_cuda_graph.c): be->replay, record_begin, record_end, and release. */
int tzc_replay(tz_backend *be, int key);
int tzc_record_begin(tz_backend *be, int key);
int tzc_record_end(tz_backend *be, int key);
void tzc_graphs_free(tz_backend *be);
/* The side queue (backend_cuda_side.c). tzc_side_wanted: TEZGAH_CUDA_SIDE=1 on (1), =0 off
 * (0), =grads the weight gradients only, not the optimizer's update (2), else
 * TZC_SIDE_DEFAULT. tzc_side_offer at creation sets be->side_* (and be->side_update for 1)
 * where wanted, unless profiling (per-op times of overlapping ops would not add up) or under
 * TEZGAH_CUDA_GELU_EPI's +bgrad; where its stream, events or workspace cannot be made it is not
 * offered (one queue, a line under TEZGAH_VERBOSE). tzc_side_free at destroy. */
#define TZC_SIDE_DEFAULT 1
int tzc_side_wanted(void);
/* 0, or -1 with a one-line reason in why[cap] for a TEZGAH_CUDA_SIDE value tzc_side_wanted does
 * not know (checked at backend creation, as the attention and GeLU switches are). */
int tzc_side_env_check(char *why, size_t cap);
void tzc_side_offer(tz_backend *be);
void tzc_side_free(tz_backend *be);
/* The main stream waits for all side work issued so far (nothing without a side queue or
 * before its first ticket): downloads call it, so a host read sees every op queued before it
 * on either queue (an optimizer update still on the side: model.c tz_model_adamw). */
void tzc_side_join(tz_backend *be);

/* matmul_t for M ≤ tzc_gemv_max_m() rows (gemv.cu; matmul.cu calls it first): 1 when it ran,
 * 0 when the call is not for it (then cuBLASLt). Row m's result does not depend on M.
 * TZC_GEMV_MAX_M: the most rows the kernels handle; tzc_gemv_max_m(): the crossover used,
 * TZC_GEMV_CROSSOVER (7: batch >= 8 on the tensor cores — tzc_mma_t up to 16 rows in bf16, else
 * cuBLASLt — as the H200 run of 2026-12-02 showed cuBLASLt at 64 rows, 1.40 ms/step, faster
 * than these kernels at 16, 2.75) or
 * TEZGAH_CUDA_GEMV_MAX_M=1..16 (read once per process; 16 = the rule before 2026-12-02). */
#define TZC_GEMV_MAX_M 16
#define TZC_GEMV_CROSSOVER 7
int tzc_gemv_max_m(void);
int tzc_gemv_t(tz_backend *be, void *out, const void *a, const void *b, const void *bias, int M, int K, int N,
               int acc);
int tzc_norm_matmul_t(tz_backend *be, tz_slice out, tz_slice x, tz_slice nw, tz_slice nb, float eps, tz_slice w,
                      tz_slice bias, int M, int K, int N, int gelu);
/* The same products for M = 1..16 rows on the tensor cores (gemv.cu's mma_k: bf16 only, sm_80+,
 * K % 32 == 0, a, b, nw, nb 16-byte aligned; device pointers as tzc_w gives them): out[M,N]
 * (+)= [gelu](norm(a)·bᵀ + bias), norm 0 none, 1 LayerNorm (nw, nb), 2 RMSNorm (nw). 1 when it
 * ran, 0 when the call is not for it. tzc_gemv_t and tzc_norm_matmul_t call it for
 * tzc_gemv_max_m() < M ≤ 16; TEZGAH_CUDA_MMA=0 (read once per process): never (cuBLASLt, or the
 * norm op then cuBLASLt). Deterministic, and a row's result does not depend on M (the tile's
 * rows are independent), but it differs from gemv_k's (another summation order). Tests call it
 * directly (test_cuda_decode). */
int tzc_mma_t(tz_backend *be, void *out, const void *a, const void *b, const void *bias, const void *nw,
              const void *nb, float eps, int norm, int gelu, int M, int K, int N, int acc);
/* The most rows tzc_mma_t takes in bf16 (16), or 0 under TEZGAH_CUDA_MMA=0 (start-up: whether
 * decoding at that many rows will need cuBLASLt). */
int tzc_mma_max_m(void);

/* ---- runtime helpers in kernel files (src/kernels/w16/w16.cu, matmul.cu) ---- */
/* bf16 mirror: mirror[i] = bf16(params[i]) for i in [first, first + n) (after a write into the
 * registered params buffer that did not go through adamw). */
void tzc_mirror_refresh(tz_backend *be, size_t first, size_t n);
/* matmul.cu's state (descriptor cache; TEZGAH_CUDA_MATMUL read here) at backend creation,
 * and its release at destroy. */
void tzc_matmul_init(tz_backend *be);
/* Matmul calls so far that cuBLASLt could not take and the fallback kernel ran (tests). */
long long tzc_matmul_fallbacks(tz_backend *be);
/* Shapes whose algorithm was chosen by time among two or more of the heuristic's (matmul.cu's
 * tune; TEZGAH_CUDA_MM_TUNE; tests). */
long long tzc_matmul_tuned(tz_backend *be);
/* 0, or -1 with a one-line reason in why[cap] for a TEZGAH_CUDA_MM_TUNE value other than 0, 1
 * and all (checked at backend creation). */
int tzc_mm_tune_env_check(char *why, size_t cap);
/* 0, or -1 with a one-line reason in why[cap] for a TEZGAH_CUDA_PDL value other than 1 and 0
 * (unset or empty: 1; backend_cuda.c, checked at backend creation). */
int tzc_pdl_env_check(char *why, size_t cap);
void tzc_matmul_destroy(tz_backend *be);

#ifdef __cplusplus
}
/* C++ (kernel files): TZC_PROF(be, "op") times the rest of the enclosing launcher. */
struct tzc_prof_scope {
  tz_backend *be;
  double flops, bytes;
  tzc_prof_scope(tz_backend *b, const char *op) : be(b), flops(0), bytes(0) {
    if (tzc(b)->prof) tzc_prof_begin(b, op);
  }
  ~tzc_prof_scope() {
    if (tzc(be)->prof) tzc_prof_end(be, flops, bytes);
  }
};
#define TZC_PROF(be, op) tzc_prof_scope tzc_prof_scope_(be, op)
/* Optional, after TZC_PROF: the op's nominal work for the table's rate column. */
#define TZC_PROF_WORK(f, b) (tzc_prof_scope_.flops = (f), tzc_prof_scope_.bytes = (b))
#endif

#endif
