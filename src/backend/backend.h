/* The backend interface: memory and ops. The model and the training loop call only this.
 *
 * A backend (CPU now; WebGPU and CUDA later) fills one tz_backend: a table of function
 * pointers plus a context. Adding a backend means implementing this table and nothing else;
 * the op contract (math, shapes, tolerances) is docs/OPS.md.
 *
 * Conventions (shared by every op):
 * - Row-major, last dimension contiguous. Activations are [B, T, C] flattened to N = B*T rows.
 * - Linear weights are [out, in] (PyTorch / llm.c / llama2.c). Forward Y = X·Wᵀ (+ b).
 * - Argument order: outputs, saved statistics, inputs, weights, then sizes (llm.c's order).
 * - Every tensor argument is a tz_slice (buffer + byte offset into it). Dtypes:
 *   - "act" arguments (activations and activation gradients: the [N, *] tensors of the
 *     activation arena, logits/dlogits, the KV cache) are in the backend's declared
 *     activation dtype `be->act` (TZ_F32 on the CPU; TZ_F32 or TZ_BF16 on CUDA, TZ_F32 or
 *     TZ_F16 on WebGPU, --precision). The model sizes and offsets them with
 *     tz_dtype_size(be->act).
 *   - "mmin" arguments (the activations whose consumers are matmul operands: the norms'
 *     outputs, the attention output, the GeLU / SwiGLU output) are in `be->act_mm`: be->act on
 *     the CPU and CUDA, TZ_F16 on WebGPU with --precision f16 (its matmuls read f16 operands,
 *     so the producing op writes f16 and no conversion pass runs), else TZ_F32.
 *   - weight arguments (slices of the flat fp32 parameter buffer, "W" below) are passed as
 *     fp32 master slices; a backend that keeps a low-precision mirror (params_mirror) may
 *     read its copy instead (WebGPU f16, CUDA bf16).
 *   - everything else is fp32: parameter gradients, AdamW moments, norm statistics
 *     (mean, rstd), attention logsumexp, losses; token ids and targets are int32.
 * - Gradient rule (llm.c's layernorm.cuh): parameter gradients are accumulated (+=), except
 *   the weight-gradient matmul_at of a step's first backward where the backend sets
 *   grads_written (acc = 0 writes: tz_model_zero_grads left them unfilled); activation
 *   gradients are written (=) unless the op says "+=" (the residual stream).
 * - Sizes are int (rows, channels); products are computed in size_t inside kernels.
 * - Ops are asynchronous on GPU backends: results are visible after sync() or a download().
 * - Ops never fail at run time: shapes are validated when the model is built. A NULL slice
 *   (buf == NULL) means "absent" where an argument is documented as optional.
 */
#ifndef TZ_BACKEND_H
#define TZ_BACKEND_H
#include <stddef.h>
#include <stdint.h>

typedef struct tz_buf tz_buf; /* backend-defined device buffer */

/* Element types of activation tensors (see "act" above). bf16 = the top 16 bits of an IEEE
 * fp32 (8-bit exponent, 7-bit mantissa), rounded to nearest even; f16 = IEEE binary16 (5-bit
 * exponent, 10-bit mantissa, largest finite 65504), rounded to nearest even. */
typedef enum { TZ_F32 = 0, TZ_BF16 = 1, TZ_F16 = 2 } tz_dtype;
static inline size_t tz_dtype_size(tz_dtype t) { return t == TZ_F32 ? 4 : 2; }
static inline const char *tz_dtype_name(tz_dtype t) {
  return t == TZ_BF16 ? "bf16" : t == TZ_F16 ? "f16" : "fp32";
}

/* A view into a buffer: byte offset `off` from the start of `buf`. */
typedef struct {
  tz_buf *buf;
  size_t off;
} tz_slice;

static inline tz_slice tz_at(tz_slice s, size_t bytes) {
  s.off += bytes;
  return s;
}
/* Offset a float32 slice by n elements. */
static inline tz_slice tz_f32(tz_slice s, size_t n) { return tz_at(s, n * sizeof(float)); }
/* Offset a slice of dtype t by n elements (activation slices: tz_elems(s, n, be->act)). */
static inline tz_slice tz_elems(tz_slice s, size_t n, tz_dtype t) {
  return tz_at(s, n * tz_dtype_size(t));
}
static const tz_slice TZ_NONE = {0, 0};
static inline int tz_present(tz_slice s) { return s.buf != 0; }

/* One contiguous range of the flat parameter buffer, for multi-tensor AdamW. */
typedef struct {
  size_t off;  /* first element (float index) */
  size_t n;    /* number of elements */
  float decay; /* weight-decay multiplier: 1 for matrices and embeddings, 0 for norms/biases */
} tz_range;

typedef struct {
  float lr, beta1, beta2, eps, weight_decay;
  float grad_scale; /* multiply every gradient by this first (clipping, 1/accum) */
  int t;            /* 1-based step for bias correction */
} tz_adamw_hp;

/* decode_step's view of one GPT-2 block: its weights (W slices of the parameter buffer, the
 * layout of src/model/layout.c: qkv_w [Q, C], proj_w [C, C], fc_w [F, C], fcproj_w [C, F],
 * biases and LayerNorm weights [N]) and this layer's KV cache (act [rows, max_T, kv_row]). */
typedef struct {
  tz_slice norm1_w, norm1_b, qkv_w, qkv_b, proj_w, proj_b, norm2_w, norm2_b, fc_w, fc_b, fcproj_w, fcproj_b;
  tz_slice kcache, vcache;
} tz_step_layer;

/* decode_step's model: GPT-2 shapes (C = d_model = n_head·head_dim, Q = (n_head + 2·n_kv_head)
 * ·head_dim, F = d_ff, Vp = padded vocabulary), LayerNorm eps, the step's inputs (tokens, pos:
 * int32 [B]), the embeddings (wte [Vp, C], also the tied lm_head; wpe [max_T, C]), the final
 * norm, and the logits act [B, Vp] it writes. layer: [n_layer]. */
typedef struct {
  int n_layer, d_model, n_head, n_kv_head, head_dim, d_ff, vocab, padded_vocab, max_T;
  float eps;
  tz_slice tokens, pos, wte, wpe, normf_w, normf_b, lm_head, logits;
  const tz_step_layer *layer;
} tz_step_desc;

typedef struct tz_backend tz_backend;
struct tz_backend {
  const char *name; /* "cpu", "webgpu", "cuda" */
  void *ctx;        /* backend-private state */
  tz_dtype act;     /* dtype of every "act" argument (see the conventions above) */
  tz_dtype act_mm;  /* dtype of every "mmin" argument (the conventions above) */
  /* Allocation preference for the model's activations (src/model/model.c, acts_alloc):
   * 0 = one arena buffer carved into 64-byte-aligned slices (CPU, CUDA: one allocation);
   * 1 = one buffer per activation tensor, so that no op's output shares a buffer with an input
   * unless the op itself aliases them (add, rope and crossentropy in place). WebGPU asks for 1:
   * a buffer cannot be bound read-only and writable in one dispatch, and read_write operand
   * bindings made the model's matmul and matmul_t 20-50 % slower on the H200 (docs/PERF.md,
   * 2026-12-01: GPT-2 124M step 459 ms in one arena, 421 per tensor). Either way a slice
   * starts 64-byte aligned and its buffer's bytes past the tensor up to that alignment exist. */
  int act_buffers;
  /* 1: this backend's gradients are computed in a reduced precision (WebGPU --precision f16)
   * whose range small gradients can fall out of: `train` then scales the loss dynamically by
   * default (src/train/loss_scale.h, train --loss-scale). 0: fp32 gradients (CPU; CUDA, whose
   * bf16 has fp32's exponent range). */
  int needs_loss_scale;
  /* 1: tz_model_zero_grads fills only the gradients that no op writes whole (biases, norm
   * weights, wpe and an untied wte: the runs between the weight matrices in the layout, ~4 a
   * GPT-2 layer, by zero_ranges where offered, else a fill each) and the
   * next backward's weight-gradient matmuls write theirs (matmul_at acc = 0) instead of adding
   * to zeros: a fill of the model's size in fp32 and those matmuls' reads of it go (GPT-2 1.5B:
   * 6.2 GB written and 6.2 GB read a step). 0: one fill of the whole buffer, for a backend whose
   * every fill is a dispatch with a fixed cost (WebGPU). The results are the same bits either
   * way on the CPU (0 + x = x); on CUDA the accumulating and writing cuBLASLt calls may pick
   * different algorithms (another fp32 summation order, still the same run to run). */
  int grads_written;

  /* ---- memory ---- */
  /* Allocate `bytes` of device memory, zero-filled. Returns NULL and sets tz_err() on
   * failure (naming `what`, e.g. "params", and the size). */
  tz_buf *(*alloc)(tz_backend *be, size_t bytes, const char *what);
  void (*free)(tz_backend *be, tz_buf *buf);
  /* Copy host -> device, device -> host, device -> device. Sizes in bytes. download()
   * waits for all queued ops that write src. */
  void (*upload)(tz_backend *be, tz_slice dst, const void *src, size_t bytes);
  void (*download)(tz_backend *be, void *dst, tz_slice src, size_t bytes);
  void (*copy)(tz_backend *be, tz_slice dst, tz_slice src, size_t bytes);
  /* Fill n elements of dtype `dt` with `value` (rounded to dt). */
  void (*fill)(tz_backend *be, tz_slice dst, float value, size_t n, tz_dtype dt);
  /* Optional (NULL: not offered -- CPU, WebGPU; callers run fill once per range): zero n ranges
   * of the fp32 buffer buf, range i = elements [ranges[2i], ranges[2i] + ranges[2i + 1]),
   * not overlapping, in a few launches instead of one each (CUDA: 64 ranges a launch).
   * tz_model_zero_grads' runs between the weight matrices (be->grads_written: ~4 a GPT-2 layer,
   * 193 at 1.5B: 4 launches). */
  void (*zero_ranges)(tz_backend *be, tz_buf *buf, const size_t *ranges, int n);
  /* Download n "act" elements (dtype be->act) as fp32 host values (logits to the host). */
  void (*download_act)(tz_backend *be, float *dst, tz_slice src, size_t n);
  /* Strided row copy of act rows: dst[r*dst_stride + c] = src[r*src_stride + c] for
   * r < rows, c < cols. Strides and cols in act elements. (KV-cache writes.) */
  void (*copy_rows)(tz_backend *be, tz_slice dst, size_t dst_stride, tz_slice src,
                    size_t src_stride, int rows, int cols);
  /* Wait until every op queued on the main queue has finished. Work on the side queue (side_*
   * below: CUDA's second stream) is not waited for: the training loop's timing sync would
   * otherwise stall the host until the optimizer's update (queued there to overlap the next
   * forward) ends; downloads and tz_model_settle reach it. */
  void (*sync)(tz_backend *be);
  /* Release the backend itself (after all its buffers). */
  void (*destroy)(tz_backend *be);
  /* Optional (NULL when the backend cannot tell): bytes of device memory held by live
   * buffers now, and the most held at any moment since creation (reported at exit by
   * `tezgah train`). */
  size_t (*mem_used)(tz_backend *be);
  size_t (*mem_peak)(tz_backend *be);
  /* Optional (NULL: the backend cannot tell): bytes of device memory the caller may still
   * allocate now: what the device has free, less what this backend sets aside for what it
   * allocates by itself later (kernel scratch grown in the first step, library workspaces),
   * or SIZE_MAX when it cannot tell at this moment. For `train --recompute auto`
   * (src/train/recompute.h), which keeps the activations stored when it gets no answer.
   * CUDA: cudaMemGetInfo's free bytes less 1 GiB. CPU: NULL (host memory is overcommitted
   * and shared with every process: MemAvailable is a guess that moves under the run, and a
   * refusal on it would stop runs that work today with swap). WebGPU: NULL (webgpu.h
   * reports no free memory). */
  size_t (*mem_free)(tz_backend *be);
  /* Optional (NULL: no timing): with TEZGAH_PROFILE=1 (train --profile) print the per-op
   * time table (GPU timestamps; wall clock on the CPU) to stderr — ms/step over `steps`
   * steps, calls, share, GFLOP/s or GB/s — and reset it (to leave warm-up steps out).
   * No-ops when the backend was created without profiling. */
  void (*profile_print)(tz_backend *be, double steps);
  void (*profile_reset)(tz_backend *be);
  /* Optional (NULL: nothing to do, e.g. the CPU backend): `params` is the model's flat
   * parameter buffer (fp32 master weights). The WebGPU backend with ShaderF16 keeps an f16
   * copy of it for the weight reads (matmul_t's b, embed_fwd's wte/wpe, and matmul's b where
   * its matmuls run on subgroup matrices); adamw stays fp32 and refreshes the copy. Called once
   * after alloc; the registration ends when the buffer is freed. */
  void (*params_mirror)(tz_backend *be, tz_buf *params);
  /* Optional, for communication libraries working in place on backend memory (src/dist/;
   * NULL: the backend cannot take part in distributed training):
   * raw_ptr: the address behind a slice (host pointer on the CPU, device pointer on CUDA);
   * raw_stream: the queue every op runs on (CUDA: its cudaStream_t; NULL on the CPU), so that
   *   collectives are ordered with the ops around them;
   * written: `bytes` at `dst` were written behind the backend's back (a collective): refresh
   *   what the backend derives from them (CUDA: the bf16 mirror of the params buffer). */
  void *(*raw_ptr)(tz_backend *be, tz_slice s);
  void *(*raw_stream)(tz_backend *be);
  void (*written)(tz_backend *be, tz_slice dst, size_t bytes);

  /* ---- ops (see docs/OPS.md for the math of each) ----
   * Dtypes per argument (conventions above):
   *   act: embed_fwd out; embed_bwd dout; norm inp, dout, dinp; matmul_t out;
   *        matmul out, a; matmul_at a; bias_bwd dout; rope qkv; attention q, k, v,
   *        dout, dq, dk, dv; gelu inp, dinp, dout; swiglu gu, dgu, dout; add: every tensor;
   *        crossentropy logits.
   *   mmin (be->act_mm): norm fwd out; matmul_t a; matmul_at b; attention_fwd out and
   *        attention_bwd's out; gelu_fwd out; swiglu_fwd out.
   *   W (fp32 master slices, maybe read through a mirror): embed wte, wpe; norm w, b;
   *        matmul_t b, bias; matmul b.
   *   fp32: embed_bwd dwte, dwpe; norm mean, rstd, dw, db; matmul_at out; bias_bwd db;
   *        attention lse; crossentropy losses; sum_sq; adamw. int32: tok, targets. */

  /* out[n,:] = wte[tok[n],:] (+ wpe[n % T,:] when wpe is present). tok: int32 [N].
   * An id outside [0, V) writes zeros (ids are validated when data is loaded).
   * out [N,C]; wte [V,C]; wpe [maxT,C] or NONE. */
  void (*embed_fwd)(tz_backend *be, tz_slice out, tz_slice tok, tz_slice wte, tz_slice wpe,
                    int B, int T, int C, int V);
  /* dwte[tok[n],:] += dout[n,:]; dwpe[n % T,:] += dout[n,:] when dwpe is present.
   * Scatter-add; must be deterministic on the CPU. Non-finite rows are still added (the
   * step is then skipped by the grad-norm check). */
  void (*embed_bwd)(tz_backend *be, tz_slice dwte, tz_slice dwpe, tz_slice dout, tz_slice tok,
                    int B, int T, int C, int V);

  /* RMSNorm (Zhang & Sennrich 2019): out = x · rstd · w, rstd = 1/sqrt(mean(x²) + eps).
   * out [N,C], rstd [N] (saved), inp [N,C], w [C]. */
  void (*rmsnorm_fwd)(tz_backend *be, tz_slice out, tz_slice rstd, tz_slice inp, tz_slice w,
                      int N, int C, float eps);
  /* dinp += ..., dw += ... (dinp accumulates: it is the residual stream's gradient). */
  void (*rmsnorm_bwd)(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice dout, tz_slice inp,
                      tz_slice w, tz_slice rstd, int N, int C);

  /* LayerNorm (Ba et al. 2016): out = (x − mean) · rstd · w + b.
   * out [N,C], mean [N], rstd [N] (saved), inp [N,C], w [C], b [C]. */
  void (*layernorm_fwd)(tz_backend *be, tz_slice out, tz_slice mean, tz_slice rstd,
                        tz_slice inp, tz_slice w, tz_slice b, int N, int C, float eps);
  /* dinp += ..., dw += ..., db += ... */
  void (*layernorm_bwd)(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice db, tz_slice dout,
                        tz_slice inp, tz_slice w, tz_slice mean, tz_slice rstd, int N, int C);
  /* Optional (NULL: not offered -- CPU, WebGPU; CUDA unless TEZGAH_CUDA_LN_RB=0; the model then
   * runs bias_bwd of the projection, then layernorm_bwd): layernorm_bwd, and
   *   dbias[c] += Σ_n dinp[n, c]   of dinp's values as they come in, before the op adds to them,
   * i.e. what bias_bwd(dbias, dinp, N, C) and then layernorm_bwd give. dinp, dout, inp: act
   * [N, C]; w: W [C]; mean, rstd: fp32 [N]; dw, db, dbias: fp32 [C] (+=). In a pre-norm block's
   * backward the residual stream's gradient entering a norm's backward is also the output
   * gradient of the projection just below it (GPT-2: fc-proj's before ln2's, the attention
   * proj's before ln1's), so its bias gradient is a column sum of the dinp the norm's backward
   * reads anyway: CUDA adds it in the same pass (layernorm.cu) and saves bias_bwd's read of
   * dinp and its launches. The sums' order differs from bias_bwd's (fp32 rounding). */
  void (*layernorm_bwd_rb)(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice db, tz_slice dbias,
                           tz_slice dout, tz_slice inp, tz_slice w, tz_slice mean, tz_slice rstd,
                           int N, int C);

  /* The matmul family (names from the seed kernels). `acc` = 0 writes, 1 accumulates (+=).
   * matmul_t:  out[M,N] (+)= a[M,K] · b[N,K]ᵀ (+ bias[N] if present)   -- forward Y = X·Wᵀ + b
   * matmul:    out[M,N] (+)= a[M,K] · b[K,N]                          -- dX = dY·W
   * matmul_at: out[M,N] (+)= a[K,M]ᵀ · b[K,N]                         -- dW = dYᵀ·X
   * bias_bwd:  db[N] += Σ_m dout[m,N]                                 -- db */
  void (*matmul_t)(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, tz_slice bias, int M,
                   int K, int N, int acc);
  void (*matmul)(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, int M, int K, int N,
                 int acc);
  void (*matmul_at)(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, int M, int K, int N,
                    int acc);
  void (*bias_bwd)(tz_backend *be, tz_slice db, tz_slice dout, int M, int N);
  /* Optional (NULL: not offered -- CPU, CUDA; the model then runs matmul_at and bias_bwd):
   *   out[M,N] (+)= a[K,M]ᵀ · b[K,N]   and   db[m] += Σ_k a[k, m] for each m < M
   * matmul_at and bias_bwd of the same dY in one op (a: act, dY; b: act, X; out, db: fp32
   * parameter gradients). A GPT-2 linear layer's weight and bias gradients: the WebGPU backend
   * sums the bias from the f16 dY its weight-gradient kernel stages (matmul_sgmm.wgsl, DB)
   * instead of reading dY again; the sums' order differs from bias_bwd's (fp32 rounding). */
  void (*matmul_at_db)(tz_backend *be, tz_slice out, tz_slice db, tz_slice a, tz_slice b, int M, int K, int N,
                       int acc);
  /* Optional (NULL: not offered; callers use swiglu_fwd's output with matmul_at instead):
   * out[M,N] (+)= a[K,M]ᵀ · (silu(gate) ⊙ up)[K,N] with gu [K, 2N] = gate | up (as swiglu_fwd),
   * computed without materialising silu(gate) ⊙ up -- dW_down from dY and the fused gate|up
   * rows. a, gu: act; out: fp32. */
  void (*matmul_at_swiglu_a)(tz_backend *be, tz_slice out, tz_slice a, tz_slice gu, int M, int K,
                             int N, int acc);
  /* Optional GeLU-epilogue matmuls (NULL: not offered -- CPU; WebGPU as TEZGAH_WEBGPU_GELU_EPI
   * says, by default matmul_dgelu with f16 activations; CUDA as TEZGAH_CUDA_GELU_EPI says, by
   * default both in bf16, neither in fp32; the model then runs the separate ops). GeLU =
   * gelu_fwd's tanh form.
   * matmul_t_gelu: h[M,N] = x[M,K] · W[N,K]ᵀ + bias[N] (bias W, may be NONE) and
   *   out[M,N] = gelu(h), with the GeLU applied to the sum before h is rounded to act: in bf16
   *   `out` may differ in its last bits from matmul_t + gelu_fwd (which read the stored h), so a
   *   caller that recomputes out from h later (train --recompute) must not use it. x: mmin; W: W;
   *   h: act (written); out: mmin (written). The fc matmul and GeLU of a GPT-2 block's forward
   *   (cuBLASLt's GELU_AUX_BIAS epilogue on CUDA).
   * matmul_dgelu: dh[M,N] = gelu'(h[M,N]) ⊙ (dout[M,K] · W[K,N]) -- matmul then gelu_bwd, without
   *   rounding the product to act between them -- and, when db is present, db[N] += Σ_m dh[m,N]
   *   (bias_bwd's sum of the dh written). dout, h: act; W: W; dh: act (written); db: fp32 or
   *   NONE. The fcproj dX, GeLU backward and fc bias gradient of a GPT-2 block's backward
   *   (cuBLASLt's DGELU / DGELU_BGRAD epilogues on CUDA). */
  void (*matmul_t_gelu)(tz_backend *be, tz_slice out, tz_slice h, tz_slice x, tz_slice w, tz_slice bias, int M,
                        int K, int N);
  /* Optional (NULL: not offered -- CPU; CUDA in fp32 unless TEZGAH_CUDA_MM_RES=1, in bf16 under
   * =0; the model then runs matmul_t and add): the residual connection in the matmul's epilogue,
   *   out[M,N] = a[M,K] · b[N,K]ᵀ + bias[N] + res[M,N]   (bias may be NONE)
   * with the sum formed in fp32 and rounded to act once (matmul_t + add round the product to act
   * first: the last bits may differ). a: act; b: W (the weight); out, res: act, distinct, not
   * overlapping. A GPT-2 / llama block's two projections into the residual stream (attention
   * output, MLP output): the separate add's read of out and its dispatch go. WebGPU: kernel n's
   * RES epilogue; CUDA: cuBLASLt with C = res, D = out, beta = 1 (matmul.cu; the fallback kernel
   * where N % 8 != 0 or res is not on 16 bytes, as cuBLASLt rounded twice there), by default in
   * bf16 (backend_cuda.c says why). */
  void (*matmul_t_res)(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, tz_slice bias, tz_slice res, int M,
                       int K, int N);
  /* Optional (NULL: not offered -- CPU, CUDA; the model then runs matmul and swiglu_bwd):
   *   dgu[M, 2N] = swiglu_bwd(da = dout[M,K] · W[K,N], gu[M, 2N])
   * (swiglu_bwd's math, gu = gate | up as swiglu_fwd reads it), da not materialised nor rounded
   * to act. dout, gu: act; W: W; dgu: act (written). A llama block's down-projection input
   * gradient and SwiGLU's backward in one matmul (its epilogue). */
  void (*matmul_dswiglu)(tz_backend *be, tz_slice dgu, tz_slice dout, tz_slice w, tz_slice gu, int M, int K, int N);
  void (*matmul_dgelu)(tz_backend *be, tz_slice dh, tz_slice db, tz_slice dout, tz_slice w, tz_slice h, int M,
                       int K, int N);

  /* RoPE (Su et al. 2021, llama2.c's pairing of adjacent dims (2i, 2i+1)), in place on the q
   * and k parts of a fused qkv row: qkv [B*T, (n_head + 2*n_kv_head)*head_dim] holds q
   * (n_head heads), then k (n_kv_head heads), then v (untouched). Position of row (b,t) is
   * pos0 + t. Angle = pos · theta^(−2i/head_dim). dir = +1 rotates (forward), −1 rotates by
   * the negative angle (backward on the gradient). */
  void (*rope)(tz_backend *be, tz_slice qkv, int B, int T, int n_head, int n_kv_head,
               int head_dim, int pos0, float theta, int dir);

  /* Causal attention with grouped-query heads (kv head = h / (n_head / n_kv_head)).
   * q: rows of stride q_stride floats, head h at column h*head_dim, Tq rows per batch;
   * k, v: rows of stride kv_stride, kv head g at column g*head_dim, Tk rows per batch.
   * Query row t sits at key position q_pos0 + t and attends to keys 0..q_pos0+t.
   * Training: Tq == Tk, q_pos0 = 0, q/k/v point into the fused qkv buffer.
   * Decoding: B = 1, k/v point into the KV cache, q_pos0 = cached length.
   * out [B*Tq, n_head*head_dim]; lse [B, n_head, Tq] (saved logsumexp of the scaled scores,
   * may be NONE when no backward follows). Scale 1/sqrt(head_dim). */
  void (*attention_fwd)(tz_backend *be, tz_slice out, tz_slice lse, tz_slice q, tz_slice k,
                        tz_slice v, int B, int Tq, int Tk, int q_pos0, int n_head,
                        int n_kv_head, int head_dim, int q_stride, int kv_stride);
  /* Backward of the training form (Tq == Tk == T, q_pos0 = 0). dq, dk, dv are written (=)
   * with the same strides as q, k, v (so they can point into a fused dqkv buffer); dk, dv
   * sum over the query heads that share them. out and lse are the forward's. */
  void (*attention_bwd)(tz_backend *be, tz_slice dq, tz_slice dk, tz_slice dv, tz_slice dout,
                        tz_slice q, tz_slice k, tz_slice v, tz_slice out, tz_slice lse, int B,
                        int T, int n_head, int n_kv_head, int head_dim, int q_stride,
                        int kv_stride);

  /* GeLU, tanh form (Hendrycks & Gimpel 2016): out = 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))).
   * n elements. Backward writes dinp (=). */
  void (*gelu_fwd)(tz_backend *be, tz_slice out, tz_slice inp, size_t n);
  void (*gelu_bwd)(tz_backend *be, tz_slice dinp, tz_slice inp, tz_slice dout, size_t n);

  /* SwiGLU (Shazeer 2020) on a fused gate|up row: gu [N, 2F], gate = gu[:, :F], up =
   * gu[:, F:]; out [N,F] = silu(gate) ⊙ up, silu(x) = x·σ(x), σ branch-on-sign stable.
   * Backward writes dgu (=) [N, 2F]: dgate = dout·up·σ(g)(1 + g(1 − σ(g))), dup =
   * dout·silu(g); a NaN in the product becomes 0 (seed's guard). */
  void (*swiglu_fwd)(tz_backend *be, tz_slice out, tz_slice gu, int N, int F);
  void (*swiglu_bwd)(tz_backend *be, tz_slice dgu, tz_slice dout, tz_slice gu, int N, int F);

  /* out = a + b (out may alias a or b). n elements. */
  void (*add)(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, size_t n);

  /* Fused softmax cross-entropy over the first V of Vp columns (Vp ≥ V is the padded row
   * stride). In place: logits [N, Vp] becomes dlogits = (softmax(z) − onehot(y)) · dscale
   * for the first V columns and 0 for the padding. losses [N] get logsumexp(z) − z[y].
   * targets int32 [N]; a target < 0 is ignored (loss 0, dlogits row 0).
   * dscale is typically 1 / (number of counted rows · grad_accum). */
  void (*crossentropy)(tz_backend *be, tz_slice losses, tz_slice logits, tz_slice targets,
                       int N, int V, int Vp, float dscale);

  /* out[0] = Σ x[i]² over n elements, accumulated in fp64 on the CPU (fp32 slice out). */
  void (*sum_sq)(tz_backend *be, tz_slice out, tz_slice x, size_t n);

  /* Multi-tensor AdamW (Loshchilov & Hutter 2019) over ranges of four buffers with the same
   * layout: for each i in each range, g = grads[i] · grad_scale;
   * m = β1·m + (1−β1)·g; v = β2·v + (1−β2)·g²; m̂ = m/(1−β1^t); v̂ = v/(1−β2^t);
   * p −= lr · (m̂ / (√v̂ + ε) + weight_decay · decay · p). */
  void (*adamw)(tz_backend *be, tz_slice params, tz_slice grads, tz_slice m, tz_slice v,
                const tz_range *ranges, int n_ranges, const tz_adamw_hp *hp);

  /* ---- batched decoding (all optional: NULL where the backend lacks them) ----
   * One decoding step feeds B independent rows (sequences) one token each; row b sits at its
   * own position pos[b] (int32 [B] in device memory, so that a recorded step can be replayed at
   * the next position: see replay below). Without embed_pos_fwd / attention_decode (/ rope_pos
   * for llama) the model steps each row through embed_fwd, rope, copy_rows and attention_fwd
   * with a host position instead (the CPU's path: the reference).
   *
   * embed_pos_fwd: out[b,:] = wte[tok[b],:] (+ wpe[pos[b],:] when wpe is present). tok, pos:
   *   int32 [B]; out act [B, C]; wte [V, C], wpe [maxT, C] (W). Ids outside [0, V) write zeros. */
  void (*embed_pos_fwd)(tz_backend *be, tz_slice out, tz_slice tok, tz_slice pos, tz_slice wte,
                        tz_slice wpe, int B, int C, int V);
  /* rope_pos: rope (above) on B fused qkv rows, row b at position pos[b] (int32 [B]), dir +1. */
  void (*rope_pos)(tz_backend *be, tz_slice qkv, tz_slice pos, int B, int n_head, int n_kv_head,
                   int head_dim, float theta);
  /* attention_decode: for each row b, append the k and v of qkv row b (columns
   * n_head·head_dim.. and (n_head + n_kv_head)·head_dim.., kv_row = n_kv_head·head_dim wide)
   * to row b's cache at position pos[b], then out[b] = attention of q (qkv row b, column
   * h·head_dim) over that row's keys 0..pos[b] (causal, GQA, scale 1/√head_dim): exactly
   * copy_rows + attention_fwd(Tq = 1, q_pos0 = pos[b]) of the host path. qkv act [B, q_stride];
   * kcache, vcache act [B, max_T, kv_row] (this layer's); out mmin [B, n_head·head_dim];
   * pos int32 [B], 0 ≤ pos[b] < max_T. */
  void (*attention_decode)(tz_backend *be, tz_slice out, tz_slice kcache, tz_slice vcache,
                           tz_slice qkv, tz_slice pos, int B, int n_head, int n_kv_head,
                           int head_dim, int q_stride, int max_T);
  /* norm_matmul_t: out[M,N] = f(norm(x)·Wᵀ + bias) for a few rows (a decoding step's M rows),
   * the pre-norm computed inside and not stored: norm = LayerNorm with nw, nb (nb present) or
   * RMSNorm with nw (nb NONE), eps, its output rounded to the act dtype as norm_fwd stores it;
   * f = GeLU (tanh form, as gelu_fwd, applied to the act-rounded sum) when gelu, else identity:
   * what norm_fwd, matmul_t and gelu_fwd give one after the other. x act [M,K]; nw, nb [K], W
   * [N,K], bias [N] or NONE: W; out act [M,N]. Returns 1, or 0 (nothing queued) when it does
   * not take this M (the caller then runs those ops). */
  int (*norm_matmul_t)(tz_backend *be, tz_slice out, tz_slice x, tz_slice nw, tz_slice nb, float eps, tz_slice w,
                       tz_slice bias, int M, int K, int N, int gelu);
  /* pick: choose the next token of B rows from logits act [B, Vp] (first V columns) on the
   * device, as src/sample/sampler.c's tz_sampler_pick does on the host: greedy (temperature ≤
   * 0: the first maximal finite logit), else softmax(logits / temperature) in double, cut to
   * the top_k most likely (ties: lower id first) and to the top_p nucleus, and the token where
   * the running sum in that order first exceeds r[b]·sum (r: B host doubles in [0, 1), one
   * draw of each row's sampler). Writes int32 ids to out [B]. Returns 1, or 0 (nothing
   * queued) for settings it does not offer (the caller then picks on the host). */
  int (*pick)(tz_backend *be, tz_slice out, tz_slice logits, int B, int V, int Vp,
              float temperature, int top_k, float top_p, const double *r);
  /* pick_dev: pick with the draws already in device memory (r: fp64 [B], may be NONE when
   * greedy) and the ids written to `ids` too (int32 [B], or NONE), so that many decoding
   * steps can be queued without the host waiting on any (src/sample/generate.c's device
   * loop). Same ids as pick for the same draws; returns 0 (nothing queued) where pick would. */
  int (*pick_dev)(tz_backend *be, tz_slice out, tz_slice logits, int B, int V, int Vp, float temperature,
                  int top_k, float top_p, tz_slice r, tz_slice ids);
  /* decode_step: a whole decoding step of a GPT-2 model in one call (the ops of model.c's
   * forward_step: embed_pos_fwd, per layer LayerNorm → qkv → attention_decode (the k, v
   * appended at pos[b]) → proj added to the residual → LayerNorm → fc → GeLU → fcproj added,
   * then the final LayerNorm → lm_head), for rows 0..B-1 at positions pos[b] (tokens, pos:
   * int32 [B] in device memory). Writes logits act [B, Vp] and each layer's kcache/vcache row
   * pos[b]; the other act tensors of the step are not written (the residual stream stays inside).
   * Returns 1 when queued, 0 (nothing queued) when it does not take this model, B or precision
   * (the caller then runs the ops one by one). NULL where the backend has no such kernel. */
  int (*decode_step)(tz_backend *be, const tz_step_desc *d, int B);
  /* Recording a step once and replaying it (CUDA graphs; NULL: ops are queued one by one).
   * replay(key): 1 when a recording made under `key` was queued (as if its ops had been
   * called again, with the same arguments: per-step values must live in device memory), 0
   * when there is none (or it went stale). record_begin(key): 1 when the ops called until
   * record_end(key) are recorded instead of run (record_end then queues the recording once),
   * 0 when the backend runs them as usual now (e.g. a first, warm-up use of `key`: ops may
   * allocate scratch then); record_end returns 1, or 0 when the recording failed and nothing
   * was queued (the caller then calls the ops again, as usual). Uploads, downloads and sync
   * must not be called while recording. */
  int (*replay)(tz_backend *be, int key);
  int (*record_begin)(tz_backend *be, int key);
  int (*record_end)(tz_backend *be, int key);
  /* Optional (NULL: one queue -- CPU, WebGPU, and CUDA unless offered; backend_cuda_side.c): a
   * second queue for work off the critical path: the backward's weight-gradient matmuls, so a
   * GPU can run them beside the input-gradient chain (a memory-bound norm or the attention
   * backward next to a tensor-core matmul, and each kernel's last partial wave filled), and
   * the optimizer's update beside the next forward (model.c tz_model_adamw).
   * side_begin: the ops called until side_end go to the side queue, after everything queued so
   * far on either queue; only matmul_at, bias_bwd, adamw, fill and zero_ranges may be called
   * there. download and download_act wait for all side work queued before them.
   * side_end: back to the main queue; returns a ticket > 0 (the next after the last one issued;
   * CUDA's start again at 1 after 2^30). side_wait(t): ops queued on the main queue from now on
   * start after the side work up to ticket t's (t ≤ 0: nothing); the side runs its work in
   * order. The caller owns the hazards: until a side_wait covers a side op, the main queue must
   * not write what it reads nor touch what it writes. The results are the same bits as on one
   * queue (each op computes what it would; only the overlap changes). */
  void (*side_begin)(tz_backend *be);
  int (*side_end)(tz_backend *be);
  void (*side_wait)(tz_backend *be, int ticket);
  /* With side_*: 1 when the optimizer's update may go to the side queue too (CUDA: unless
   * TEZGAH_CUDA_SIDE=grads, an A/B), 0: only the weight gradients. */
  int side_update;
};

/* Create a backend by name ("cpu", "webgpu", "cuda"). threads <= 0 means all cores (OpenMP
 * default; CPU only). precision: NULL or "" for the backend's default (CUDA: bf16; WebGPU: f16
 * where the adapter offers ShaderF16, else fp32; CPU: fp32), else "fp32", "bf16" (CUDA) or
 * "f16" (WebGPU); a precision the backend does not offer is an error.
 * Returns NULL with tz_err() set for an unknown or unavailable backend. */
tz_backend *tz_backend_create(const char *name, int threads, const char *precision);
/* The name and precision checks of tz_backend_create alone (no device is touched), so that a
 * command can refuse a bad --backend / --precision before any slow work. 0, or -1 with
 * tz_err() set: "--backend: 'foo' is not one of cpu, webgpu, cuda", "--precision: ...". */
int tz_backend_check(const char *name, const char *precision);
/* 1 when tz_backend_create has made a CUDA backend in this process (main.c: such a process
 * leaves without the CUDA runtime's exit-time context teardown; TEZGAH_QUICK_EXIT). */
int tz_backend_cuda_was_created(void);
/* TEZGAH_EXIT_RESET=1 (an A/B of the exit, scripts/device_cuda_decode5.sh): main.c calls this
 * before its quick exit. CUDA: cudaDeviceReset() (the primary context, its memory and modules
 * torn down by the runtime before the process ends, instead of by the driver when the process's
 * device files close); returns the milliseconds it took. Without CUDA: 0, nothing done. */
double tz_backend_cuda_reset_device(void);

/* The WebGPU backend (src/backend/webgpu): Dawn loaded at run time (TEZGAH_WEBGPU_LIB or
 * the repository's .deps/dawn/). precision: NULL / "" (f16 where the adapter offers ShaderF16,
 * else fp32), "f16" (an error without ShaderF16) or "fp32". NULL with tz_err() when Dawn or an
 * adapter is missing, or f16 is asked of an adapter without it. */
tz_backend *tz_backend_webgpu_create(const char *precision);
/* Print the Dawn library, adapter, features and limits to stdout (`tezgah info`). 0 or -1
 * with tz_err(). */
int tz_webgpu_info(void);
/* One line naming the WebGPU device, precision, reduction path and matmul tile ("" for other
 * backends). */
const char *tz_webgpu_describe(tz_backend *be);
/* be->profile_print / profile_reset of the WebGPU backend (timestamp queries), also callable
 * directly (bench_webgpu). No-ops for other backends or without profiling. */
void tz_webgpu_profile_print(tz_backend *be, double steps);
void tz_webgpu_profile_reset(tz_backend *be);
/* How many subgroup-matrix attention calls of this process (bwd 0: forwards, 1: backwards) read
 * q, k, v (and dO) in place rather than through the f16 copies (webgpu_ops_attn_sg.c sg_nopack;
 * TEZGAH_WEBGPU_ATTN_NOPACK): for tests, that the path they mean to check ran. */
long tz_webgpu_attn_nopack_calls(int bwd);
/* How many subgroup-matrix attention forwards of this process ran the written-out kernel with
 * the softmax's entries written out (fa_sg_fwd_wo.wgsl EWO, the default;
 * TEZGAH_WEBGPU_ATTN_SG_EWO=0 the loops): for tests, that the path they mean to check ran. */
long tz_webgpu_attn_ewo_calls(void);
/* How many norm calls of this process ran the f16 16-byte kernels (layernorm_v8 / rmsnorm_v8,
 * webgpu_ops_elem.c; which 0: forwards, 1: backwards, 2: backwards with the weight gradients fused
 * into the row pass): for tests, that the path they mean to check ran. */
long tz_webgpu_norm_v8_calls(int which);
/* How many swiglu_fwd calls of this process ran the f16 16-byte kernel (swiglu_v8.wgsl,
 * webgpu_ops_elem.c; TEZGAH_WEBGPU_SWIGLU_V8): for tests, that the path they mean to check ran. */
long tz_webgpu_swiglu_v8_calls(void);
/* The same for swiglu_bwd (swiglu_v8.wgsl's swiglu_bwd_v8; TEZGAH_WEBGPU_SWIGLU_BWD_V8). */
long tz_webgpu_swiglu_bwd_v8_calls(void);
/* How many matmul_at_db calls of this process summed the bias in the weight gradient's kernel
 * (webgpu_ops_matmul.c, matmul_sgmm.wgsl DB; split 0: without a split over K, 1: with one): for
 * tests, that the path they mean to check ran. */
long tz_webgpu_mm_db_calls(int split);
/* How many of this process's dispatches of the attention backward's D pass took the vector form
 * (fa_sg_prep.wgsl main8; TEZGAH_WEBGPU_ATTN_D_VEC): for tests. */
long tz_webgpu_attn_dvec_calls(void);
/* How many of this process's subgroup-matrix attention backwards wrote their dq partial sums as
 * f16 (the written-out dK/dV's DQ16, webgpu_ops_attn_sg.c sg_dq16; TEZGAH_WEBGPU_ATTN_DQ16): for
 * tests, that the path they mean to check ran. */
long tz_webgpu_attn_dq16_calls(void);
/* How many of this process's WebGPU fills took the vector form (webgpu_mem.c wg_fill, fill16.wgsl;
 * TEZGAH_WEBGPU_FILL_VEC): for tests. */
long tz_webgpu_fill_vec_calls(void);
/* Tests: the subgroup-matrix attention backward's D pass alone on a WebGPU backend (fa_sg_prep:
 * D [B, n_head, T] f32 = Σ_d dout·out per head; with dcopy also dout16 [B, Tp, n_head·hd] f16,
 * Tp = T rounded up to 64, zero rows past T); dout an activation tensor (be->act), out in
 * be->act_mm's dtype, both [B·T, n_head·hd]. 1: the vector form ran, 0: the scalar one, -1: the
 * arguments do not get their bindings (nothing ran). */
int tz_webgpu_attn_sg_prep(tz_backend *be, tz_slice d, tz_slice dout16, tz_slice dout, tz_slice out, int B, int T,
                           int nh, int hd, int dcopy);

/* A hint for backends created after it: the most rows any matmul of the coming work has
 * (decoding after a short prompt: max(prompt tokens, batch)), so that a backend may skip
 * preloading what only larger products use (CUDA: cuBLASLt, a ~500 MB library, then loaded at
 * its first use, when rows > tzc_gemv_max_m()); -1 (the default): unknown, large. Only a
 * matter of speed: a backend loads what a call needs either way. Not thread-safe (set it
 * before creating the backend). */
void tz_backend_hint_matmul_rows(int rows);
int tz_backend_matmul_rows_expected(void);
/* A hint for backends created after it: the model's parameters are written only by uploads
 * (loading) and read only as weights by the forward ops — no training step, no gradient, no
 * download of them (`sample`). A backend may then keep them only in the form its weight reads
 * use: CUDA in bf16 keeps the bf16 copy alone, converted on the host during the upload (half
 * the bytes over PCIe; the fp32 buffer, 475 MiB at GPT-2 124M and 6 GiB at 1.5B, is freed);
 * any other access to them is then an internal error (fatal, one line). 0 (the default): off.
 * Not thread-safe (set it before creating the backend). */
void tz_backend_hint_weights_read_only(int on);
int tz_backend_weights_read_only(void);
/* The CUDA backend (src/backend/cuda): NULL with tz_err() when built without CUDA
 * (TEZGAH_CUDA=OFF or no toolkit), or without a driver or GPU at run time. precision as
 * above. */
tz_backend *tz_backend_cuda_create(const char *precision);
/* The environment a backend's runtime reads when it starts (CUDA: CUDA_MODULE_LOADING from the
 * rows hint, CUDA_DEVICE_MAX_CONNECTIONS; each only where the environment does not give it),
 * set now: call it before starting threads that may read the environment while the backend is
 * created (setenv beside a getenv on another thread is a data race). tz_backend_create sets the
 * same itself; calling this first only moves it earlier. WebGPU: MESA_SHADER_CACHE_DIR, a Mesa
 * shader cache of its own for a process that sets LP_NATIVE_VECTOR_WIDTH (dawn_load.c says why).
 * No-op for other backends. */
void tz_backend_env(const char *name, const char *precision);
void tz_backend_cuda_env(const char *precision);
void tz_backend_webgpu_env(void);
/* Print the CUDA devices (name, compute capability, SMs, memory, driver and runtime
 * versions) to stdout (`tezgah info`). 0, or -1 with tz_err() when CUDA is unavailable. */
int tz_cuda_info(void);
/* How many layernorm_bwd_rb calls of this process took the one-pass kernel (fused 1) or the
 * fallback (0: the column sum of dinp, the rows kernel, the column sums of dw, db; layernorm.cu):
 * for tests, that the path they mean to check ran. 0 without CUDA. */
long tz_cuda_ln_rb_calls(int fused);
/* be->profile_print / profile_reset of the CUDA backend (CUDA events), also callable directly
 * (tests). No-ops for other backends or without profiling. */
void tz_cuda_profile_print(tz_backend *be, double steps);
void tz_cuda_profile_reset(tz_backend *be);

/* be->profile_print / profile_reset of the CPU backend (wall clock around each op, plus an
 * "(outside ops)" row), also callable directly. No-ops for other backends or without
 * profiling (TEZGAH_PROFILE=1 when the backend was created). */
void tz_cpu_profile_print(tz_backend *be, double steps);
void tz_cpu_profile_reset(tz_backend *be);

/* One row of a backend's per-op time table (profile_print). */
typedef struct {
  const char *label;
  double ns, calls, flop, bytes; /* summed over the profiled steps; flop 0: not a matmul */
} tz_prof_row;
/* The per-op totals a GPU backend's profiler accumulates, one row per label (an op or kernel
 * name; the pointer is kept, so a string literal). Each backend times its ops its own way
 * (WebGPU timestamps, CUDA events) and adds into these rows; the table is printed here. */
#define TZ_PROF_LABELS 64
typedef struct {
  tz_prof_row row[TZ_PROF_LABELS];
  int n;
} tz_prof_totals;
/* The row of `label` (compared by pointer, then by string), added at first use; when all
 * TZ_PROF_LABELS rows are taken, the last is "(other)" and takes every further label. */
int tz_prof_label(tz_prof_totals *t, const char *label);
/* The one per-op table of every GPU backend: the rows that ran (calls > 0), slowest first, to
 * stderr as "<title>, per step over N steps" and one line per op: ms/step, calls/step, share of
 * the total, and GFLOP/s (2MNK matmuls) or GB/s (the bytes the op nominally moves), then the
 * total (`steps` <= 0 counts as 1); `t` is left as it was. */
void tz_prof_print(const tz_prof_totals *t, const char *title, double steps);
/* Zero every row's time, calls, FLOP and bytes (the labels stay). */
void tz_prof_clear(tz_prof_totals *t);

/* The CPU backend (src/backend/cpu). */
tz_backend *tz_backend_cpu_create(int threads);
/* CPU buffers are host memory: the pointer behind a slice (for CPU-only code and tests). */
void *tz_cpu_ptr(tz_slice s);
/* The GEMM micro-kernel the CPU backend would run here ("avx512", "avx2" or "scalar": the
 * widest this CPU has, or TEZGAH_CPU_ISA's), or NULL with tz_err() when TEZGAH_CPU_ISA names
 * an unknown kernel or one this CPU lacks. Results do not depend on it (docs/RELIABILITY.md). */
const char *tz_cpu_gemm_kernel(void);
/* For `tezgah info`: one line (no newline) into out (cap bytes) on OpenBLAS, which the CPU
 * matmuls run with TZ_MATMUL=blas: "yes (<its config>, <path>, loaded on use)" (loading it
 * now), "no (<why it does not load>)" or "no (built without OpenBLAS: ...)". 1 when it
 * loads, else 0. */
int tz_cpu_blas_describe(char *out, size_t cap);

#endif
