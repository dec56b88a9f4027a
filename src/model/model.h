/* The model: a decoder-only transformer (llama or gpt2 family) built from backend ops.
 *
 * It owns the flat parameter buffer (and, for training, gradients and AdamW moments in the
 * same layout) plus an activation arena sized once for (B, T) (one buffer, or one per tensor
 * where the backend prefers that): after tz_model_alloc_training a step allocates nothing. It never touches a backend's internals: every computation is a
 * call through tz_backend (src/backend/backend.h), so the same code runs on every backend.
 *
 * Forward (per layer l, residual stream res[l] of [N, C], N = B·T):
 *   n1 = norm1(res[l]); qkv = n1·Wqkvᵀ (+b); rope(q, k) [llama]; att = attention(q, k, v);
 *   mid = res[l] + att·Wprojᵀ (+b); n2 = norm2(mid); h = n2·Wfcᵀ (+b);
 *   a = gelu(h) [gpt2] | swiglu(h) [llama]; res[l+1] = mid + a·Wfcprojᵀ (+b)
 * then nf = normf(res[L]); logits = nf·lm_headᵀ [N, Vp]; fused cross-entropy.
 * Backward mirrors it in reverse (llm.c's gpt2_backward).
 * The classifier (logits, cross-entropy and, when training, its two gradient products) runs
 * over chunks of rows of nf so that the full [N, Vp] logits need not exist at once
 * (tz_model.logits_rows; the policy and its cost are documented in model.c). */
#ifndef TZ_MODEL_H
#define TZ_MODEL_H
#include <stdint.h>

#include "backend/backend.h"
#include "model/layout.h"
#include "tezgah.h"

/* Activation slices of one layer (saved for the backward). */
typedef struct {
  tz_slice n1, n1_mean, n1_rstd; /* [N,C], [N], [N] */
  tz_slice qkv;                  /* [N, Q] after RoPE */
  tz_slice att, lse;             /* [N, C], [B, n_head, T] */
  tz_slice mid;                  /* [N, C] residual after attention */
  tz_slice n2, n2_mean, n2_rstd; /* [N,C], [N], [N] */
  tz_slice h;                    /* [N, F2]: fc pre-activation (gpt2 F2 = d_ff) or gate|up (llama 2·d_ff) */
  tz_slice a;                    /* [N, d_ff]: activation output */
} tz_layer_acts;

/* One activation arena for a fixed (B, T). `shared` arenas (inference) reuse one layer's
 * slices for every layer and keep only the last row's logits. `recompute` training arenas
 * keep one n1, n2 and a for all layers: the backward recomputes them (llm.c's -r).
 * The slices lie in one buffer (bufs[0]), or each in its own buffer at offset 0 where the
 * backend asks for that (be->act_buffers, backend.h); bytes counts the 64-byte-padded slices
 * either way. */
typedef struct {
  int B, T, shared, recompute;
  int rows; /* inference arenas: the decoding rows (sequences) stepped together, ≤ T */
  int chunk; /* training arenas: rows of the classifier per chunk (1..B·T; B·T: one chunk, the
              * whole batch); logits holds that many rows */
  tz_buf **bufs; /* the nbufs buffers holding the slices (freed by tz_model_free) */
  int nbufs;
  size_t bytes;
  tz_slice tokens, targets; /* int32 [N] */
  tz_slice pos;             /* int32 [rows]: each decoding row's position in a step */
  tz_slice *res;            /* L+1 slices of [N, C] (shared: two alternating) */
  tz_layer_acts *layer;     /* [L] */
  tz_slice nf, nf_mean, nf_rstd, logits, losses; /* [N,C],[N],[N],[chunk or rows, Vp],[N] */
  /* backward scratch (training arenas only) */
  tz_slice dres, dtmp, dqkv, dh, da; /* [N,C],[N,C],[N,Q],[N,F2],[N,d_ff] */
} tz_acts;

typedef struct {
  tz_config cfg;
  tz_layout lay;
  tz_backend *be;
  tz_buf *params, *grads, *m, *v; /* flat fp32, lay.total each (grads/m/v: training only) */
  tz_acts train;                   /* training arena (B, T) */
  tz_acts infer;                   /* inference arena (B = 1, T = max_seq_len, rows) */
  tz_buf *kcache, *vcache;         /* [L, rows, max_seq_len, n_kv_head·head_dim] each */
  float *host_losses;              /* [B·T] host copy of per-row losses */
  tz_range *ranges;                /* AdamW ranges (one per tensor) */
  int n_ranges;
  int debug_poison_acts; /* debug: the next training forward writes +Inf into its activations */
  /* Set before tz_model_alloc_training: the norm outputs n1, n2 and the GeLU/SwiGLU output a
   * are not kept per layer but recomputed in the backward (same kernels, same inputs: the
   * losses are bit-identical to a stored run's that does not use be->matmul_t_gelu, which the
   * forward leaves out under recompute: model.c), saving (2·C + d_ff)·B·T activations per layer
   * but one. */
  int recompute;
  /* Set before tz_model_alloc_training: rows per classifier chunk. 0 (the default): auto
   * (tz_model_logits_rows: the whole batch unless its logits would take more than 3.5 GiB);
   * R ≥ 1: R rows (R ≥ B·T: the whole batch at once). The resolved value is train.chunk. */
  int logits_rows;
  /* Data parallelism (src/dist/), set before tz_model_alloc_training. dist_world > 1: params
   * and grads are padded to n_buf = dist_world·shard_n floats (shard_n from
   * tz_dist_shard_size; the padding stays 0), so that collectives see equal shards. zero
   * (ZeRO-1): m and v hold only shard dist_rank (shard_n floats each) and tz_model_adamw
   * updates only that shard of params. Otherwise shard_n = n_buf = lay.total. */
  int dist_world, dist_rank, zero;
  size_t shard_n, n_buf;
  tz_range *zranges; /* zero: the AdamW ranges cut to the shard, offsets relative to it */
  int n_zranges;
  /* tz_model_zero_grads on a backend with be->grads_written (model.c says why): the gradient
   * ranges no op writes whole ([2·i] first float, [2·i + 1] count; built on first use), and
   * grads_fresh = 1 until the next backward's weight-gradient matmuls have written theirs. */
  size_t *gz_ranges;
  int n_gz_ranges, grads_fresh;
  /* The newest ticket of a weight-gradient matmul queued on the backend's side queue
   * (backend.h side_*; model.c's backward), 0 when none is pending: waited for before the
   * backward returns. */
  int side_last;
  /* The optimizer step overlapped with the next forward (tz_model_adamw where the backend has
   * a side queue, without zero): AdamW runs on the side queue in parts in layout order -- part
   * 0 wte (and wpe), part 1 + l layer l, part L + 1 the final norm (and an untied lm_head),
   * ranges [upd_r0[k], upd_r0[k + 1]) -- and the forward's layer l waits only for part 1 + l
   * (upd_ticket[k]: its ticket, 0 once waited). tz_model_zero_grads queues its fills behind
   * them while they are pending (AdamW reads the gradients). upd_last: the newest ticket of
   * either, 0 when nothing is pending; tz_model_settle waits for it. */
  int *upd_r0;     /* [L + 3] */
  int *upd_ticket; /* [L + 2] */
  int upd_last;
} tz_model;

/* Create a model with zeroed parameters on `be`. cfg must be finalized. */
int tz_model_create(tz_backend *be, const tz_config *cfg, tz_model **out);
void tz_model_free(tz_model *m);
/* GPT-2 / llm.c init: N(0, 0.02) matrices and embeddings, residual projections
 * N(0, 0.02/sqrt(2L)), biases 0, norm weights 1, padded vocab rows 0. Drawn on the host in
 * layout order from PCG32 seeded with `seed` (deterministic on every backend). */
void tz_model_init_weights(tz_model *m, uint64_t seed);
/* Host copies of the whole flat buffers (lay.total floats). */
void tz_model_get_params(tz_model *m, float *dst);
void tz_model_set_params(tz_model *m, const float *src);

/* Allocate gradients, AdamW moments and the (B, T) activation arena. T ≤ max_seq_len.
 * logits_rows < 0 is an error. */
int tz_model_alloc_training(tz_model *m, int B, int T);
/* The classifier's rows per chunk for N = B·T rows: `want` (logits_rows) resolved, 0 = auto;
 * 1..N. Auto: N while N·Vp logits of be->act take at most TZ_LOGITS_AUTO_BYTES, else
 * k = ⌈bytes / TZ_LOGITS_CHUNK_BYTES⌉ near-equal chunks of ⌈N/k⌉ rows rounded up to a multiple
 * of 64. */
#define TZ_LOGITS_AUTO_BYTES ((size_t)7 << 29) /* 3.5 GiB */
#define TZ_LOGITS_CHUNK_BYTES ((size_t)1 << 30)
int tz_model_logits_rows(const tz_model *m, int N, int want);
/* Zero the gradient buffer (start of an optimizer step). With be->grads_written only the
 * gradients that no op of the next backward writes whole are filled; the linear weights'
 * gradients are then written (not added) by that backward: until tz_model_train_micro has run,
 * their contents are undefined. */
void tz_model_zero_grads(tz_model *m);
/* One micro-batch: forward, loss, backward; gradients accumulate (+=) scaled by `dscale`
 * (1 / grad_accum_steps). inputs/targets: int32 [B·T] host arrays. Returns the mean
 * loss over the batch (nats/token). */
double tz_model_train_micro(tz_model *m, const int32_t *inputs, const int32_t *targets,
                            float dscale);
/* Forward and mean loss only (validation). */
double tz_model_eval_loss(tz_model *m, const int32_t *inputs, const int32_t *targets);
/* Forward over a full (B, T) batch of the training arena; copies logits [B·T, V] (the first V
 * columns of each row) to `logits`. For tests and tools. */
void tz_model_forward_logits(tz_model *m, const int32_t *inputs, float *logits);
/* ‖g‖₂ over the whole gradient buffer. */
double tz_model_grad_norm(tz_model *m);
/* Σ g² over gradient elements [first, first + n) (accumulated as the backend's sum_sq does,
 * rounded to fp32). The data-parallel norm sums this over each rank's shard. */
double tz_model_grad_sumsq(tz_model *m, size_t first, size_t n);
/* First element and length of shard dist_rank within [0, lay.total) (n may be 0). */
void tz_model_shard(const tz_model *m, size_t *first, size_t *n);
/* Sizes before allocating (train --recompute auto, src/train/recompute.h); nothing is
 * allocated. tz_model_training_bytes: the device bytes tz_model_alloc_training(m, B, T) would
 * allocate with m->recompute = recompute and dist_world / zero as set now: gradients, AdamW m
 * and v, the data-parallel padding of the parameters, and the activation arena, whose bytes
 * alone go to *acts (NULL: not wanted) and equal the arena's train.bytes once allocated. The
 * parameters (and a backend's mirror of them) are not in it: tz_model_create holds them
 * already. tz_model_inference_bytes: tz_model_alloc_inference_rows(m, rows)'s (KV caches and
 * the inference arena). */
size_t tz_model_training_bytes(const tz_model *m, int B, int T, int recompute, size_t *acts);
size_t tz_model_inference_bytes(const tz_model *m, int rows);
/* AdamW over every tensor (weight decay on ≥2-D tensors only); with zero, over shard
 * dist_rank only (the caller all-gathers params afterwards). hp->t < 1 is an error
 * (nothing is updated). On a backend with a side queue (backend.h side_*; not with zero) the
 * update is queued there and returns at once; the next forward waits for each layer's part
 * before that layer (tz_model.upd_ticket), and the entry points below that read or write the
 * parameters, moments or gradients otherwise wait for all of it (tz_model_settle). The
 * results are the same bits as one queue's (elementwise: the parts only split the launches). */
int tz_model_adamw(tz_model *m, const tz_adamw_hp *hp);
/* Wait for an update queued by tz_model_adamw (nothing when none is pending): every op queued
 * after it, on the backend's main queue, sees the updated parameters and moments. For code
 * that reaches m->params, m->m, m->v or m->grads through the backend directly (checkpoints,
 * tests); the backend's downloads already wait (backend.h side_*). */
void tz_model_settle(tz_model *m);

/* KV-cache decoding. alloc once; then feed tokens at positions pos0.. (pos0 + n ≤ maxT):
 * prefill with the prompt, then one token at a time. Writes the logits of the last fed
 * position, V floats, to `logits`. */
int tz_model_alloc_inference(tz_model *m);
void tz_model_decode(tz_model *m, const int32_t *tokens, int n, int pos0, float *logits);

/* Batched decoding (`sample --batch`): `rows` independent sequences, each with its own KV
 * cache, stepped together. tz_model_alloc_inference is tz_model_alloc_inference_rows(m, 1).
 * 1 ≤ rows ≤ max_seq_len. */
int tz_model_alloc_inference_rows(tz_model *m, int rows);
/* Feed n host tokens to row `row` at positions pos0..pos0+n-1 (a prompt's prefill, or a
 * single step of one row); the logits of its last position go to row `row` of the device
 * logits m->infer.logits [rows, Vp] (no download). */
void tz_model_feed_row(tz_model *m, int row, const int32_t *tokens, int n, int pos0);
/* One step of rows 0..B-1: row b's token is m->infer.tokens[b] (device int32, put there by
 * tz_sampler_pick_rows), at position pos[b] (host, < max_seq_len); its logits go to row b of
 * m->infer.logits. With the backend's decoding ops (backend.h) the whole step is one
 * recorded unit where the backend records (CUDA graphs), else each row goes through
 * tz_model_feed_row. */
void tz_model_step(tz_model *m, const int32_t *pos, int B);
/* tz_model_step with the positions already in device memory (pos: int32 [B], copied on the
 * device into the step's position buffer): nothing waits for or copies from the host.
 * Only where tz_model_step_fused(m). */
void tz_model_step_dev(tz_model *m, tz_slice pos, int B);
/* 1 when tz_model_step runs on the backend's batched decoding ops. */
int tz_model_step_fused(const tz_model *m);

#endif
