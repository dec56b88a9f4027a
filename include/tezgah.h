/* tezgah: train and run GPT-2 / Llama-style decoder-only transformers in C.
 *
 * Public API of libtezgah. Everything here is plain C11; errors are reported by a nonzero
 * return value and a one-line message from tz_last_error(). Internals (backend op tables,
 * kernels, data loaders) live under src/ and are not part of the stable API.
 */
#ifndef TEZGAH_H
#define TEZGAH_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TEZGAH_VERSION "0.1.0"

/* Everything declared here is exported from libtezgah.so; the rest of the library is built
 * with -fvisibility=hidden and stays internal. */
#if defined(__GNUC__)
#define TZ_API __attribute__((visibility("default")))
#else
#define TZ_API
#endif

/* ---- model configuration ---- */
typedef enum {
  TZ_ARCH_LLAMA = 0, /* RMSNorm, RoPE, SwiGLU, no biases, GQA, tied or untied lm_head */
  TZ_ARCH_GPT2 = 1,  /* LayerNorm+bias, learned positions, GeLU-tanh MLP+bias, tied lm_head */
} tz_arch;

typedef struct {
  tz_arch arch;
  int n_layer;      /* L */
  int n_head;       /* query heads */
  int n_kv_head;    /* key/value heads (GQA); divides n_head; gpt2: == n_head */
  int d_model;      /* C; n_head * head_dim == C */
  int d_ff;         /* hidden width of the MLP (gpt2: 4C; llama: SwiGLU width) */
  int vocab_size;   /* V: real tokens */
  int padded_vocab; /* Vp ≥ V: rows of wte / lm_head and the logits' row stride */
  int max_seq_len;  /* maxT: context length (gpt2: rows of wpe) */
  int tied;         /* lm_head shares wte (gpt2: always 1) */
  float rope_theta; /* RoPE base (llama), 10000 */
  float norm_eps;   /* RMSNorm / LayerNorm epsilon, 1e-5 */
} tz_config;

/* Fill defaults for derived fields (n_kv_head 0 → n_head, d_ff 0 → family default,
 * padded_vocab 0 → V rounded up to 64 (llama) or 128 (gpt2, llm.c's 50257 → 50304),
 * rope_theta 0 → 10000, norm_eps 0 → 1e-5) and validate. Returns 0, or nonzero with
 * tz_last_error() naming the field and value (e.g. "n_head=5 does not divide d_model=64"). */
TZ_API int tz_config_finalize(tz_config *cfg);
/* Number of parameters (floats in the flat parameter buffer). */
TZ_API size_t tz_config_num_params(const tz_config *cfg);

/* ---- training ---- */
typedef struct {
  /* data: a text corpus (tokenized once into cached llm.c shards) or existing shards */
  const char *data;         /* corpus text file (default data/kjv.txt) */
  const char *train_shards; /* comma-separated paths/globs of llm.c shards (instead of data) */
  const char *val_shards;
  const char *tokenizer;    /* tokenizer file for --train-shards runs (optional) */
  const char *tokenizer_backend; /* NULL/"cpu" or "webgpu": where the corpus's BPE is trained and encoded */
  int vocab_size;           /* BPE vocabulary to train on the corpus (incl. <|endoftext|>) */
  float val_fraction;       /* share of the corpus's tokens held out for validation, in [1e-6, 0.5] */
  /* run */
  const char *run_dir;      /* where checkpoints and metrics go */
  const char *resume;       /* run directory to continue (its checkpoint) */
  const char *init_from;    /* start a new run from this model's weights (any model tezgah reads:
                               run directory, checkpoint, llm.c / llama2.c file, Hugging Face
                               directory): its config and tokenizer (or `tokenizer`), fresh
                               optimizer state; a --data corpus is encoded with that tokenizer.
                               T = 0: min(128, the model's max_seq_len) */
  const char *backend;      /* "cpu", "webgpu" or "cuda" */
  const char *precision;    /* NULL: the backend's default (cuda: bf16; others fp32), "fp32", "bf16" */
  const char *loss_scale;   /* NULL: dynamic where the backend asks for it (be->needs_loss_scale:
                               webgpu f16), else off; "dynamic", "off" or a power of two N in
                               [1, 2^24] (a fixed scale); see src/train/loss_scale.h */
  int threads;              /* OpenMP threads (0: all cores) */
  uint64_t seed;
  /* model (ignored on resume / init_from: the checkpoint's / model's config wins) */
  tz_config model;
  /* optimization */
  int B, T, grad_accum, steps, warmup; /* steps on resume: 0 keeps the checkpoint's total; a new
                                          total must exceed the checkpoint's step (else an error) */
  float lr, min_lr_frac;    /* peak LR; cosine decays to lr·min_lr_frac */
  float beta1, beta2, eps, weight_decay, grad_clip;
  /* evaluation, checkpoints, output */
  int val_every, val_batches, log_every; /* val_every 0: the final validation alone */
  int ckpt_every;           /* a checkpoint every N steps (200; 0 = at the end only; -1 on --resume:
                               the run's, recorded in its checkpoint; ≥ 0 there: the new cadence) */
  int sample_tokens;        /* sampled after training (200; 0 = none; -1 on --resume: the run's) */
  int stop_after;           /* end this session (with a checkpoint) after N steps; 0 = off */
  int keep;                 /* keep the last N checkpoints as checkpoint-<step>.tzc (0, 1: only
                               checkpoint.tzc); recorded, so --resume keeps rotating */
  int keep_best;            /* also keep checkpoint-best.tzc: the state with the lowest val loss */
  int quiet;
  /* numerical guards: skip a step whose loss / grad norm z-score over a running window of
   * recent steps exceeds this (llm.c's -sl / -sg); 0 = off. Recorded in checkpoints. */
  float skip_loss_z, skip_norm_z;
  /* debug: comma-separated 1-based step numbers whose first micro-batch gets NaN written
   * into its gradients / +Inf into its activations (tests of the skip path); NULL = none */
  const char *debug_inject_nan, *debug_inject_inf;
  /* --profile (webgpu, cuda): per-kernel GPU time table on stderr at the end of the session */
  int profile;
  /* --recompute: keep no per-layer norm outputs and GeLU/SwiGLU outputs; the backward
   * recomputes them (less activation memory, same losses bit for bit, a little slower).
   * TZ_RECOMPUTE_AUTO (0, the default): on only when the backend can tell its free memory and
   * the run fits with recompute but not without (src/train/recompute.h); TZ_RECOMPUTE_ON (1),
   * TZ_RECOMPUTE_OFF (2). -1 on --resume: the run's recorded mode (older checkpoints: auto). */
  int recompute;
  /* --logits-chunk: rows of the batch the classifier and loss run over at a time (only that
   * many rows of logits exist: less memory for large vocabularies; src/model/model.c says what
   * it costs). -1 (the default): auto, the whole batch unless its logits would take more than
   * 3.5 GiB, then chunks of about 1 GiB; 0: the whole batch; R ≥ 1: R rows. Same losses up to
   * fp32 summation order; not recorded in checkpoints (a --resume may change it) */
  int logits_chunk;
  /* data-parallel runs (mpirun or train --nproc; src/dist/): B is per process and the global
   * batch W·B is what the checkpoint records. zero = 1 (ZeRO-1): the AdamW moments are
   * sharded over the processes (same losses and parameters bit for bit, less memory) */
  int zero;
} tz_train_opts;

enum { TZ_RECOMPUTE_AUTO = 0, TZ_RECOMPUTE_ON = 1, TZ_RECOMPUTE_OFF = 2 };

/* Defaults: llama, 4 layers, 4 heads, C=128, T=128, B=16, vocab 2048, AdamW(0.9, 0.95, 1e-8,
 * wd 0.1), lr 3e-3 with 5% warmup and cosine decay to 10%, clip 1.0. */
TZ_API void tz_train_opts_default(tz_train_opts *o);
/* Train (or resume) as the options say. Returns 0, a negative value with tz_last_error(), or
 * 128+sig when stopped by tz_train_request_stop(sig) (after writing a checkpoint). */
TZ_API int tz_train(const tz_train_opts *o);
/* Ask a running tz_train to stop after the current step with a checkpoint; before step 1 (data
 * preparation polls for it) tz_train returns -1 at once, its error saying so, and leaves no run
 * directory it made and no partial token cache. Async-signal-safe:
 * the program's own SIGINT/SIGTERM handler may call it (the library installs no handlers).
 * tz_train clears the request when it returns. */
TZ_API void tz_train_request_stop(int sig);
TZ_API int tz_train_stop_requested(void);

/* ---- sampling ---- */
typedef struct {
  const char *model;     /* run directory or checkpoint file: ours, llama2.c or llm.c (NULL: the newest of runs/latest and ./latest) */
  const char *prompt;    /* text (may be empty) */
  const char *backend;   /* "cpu", "webgpu" or "cuda" */
  const char *precision; /* as tz_train_opts.precision */
  int threads;
  int tokens;            /* maximum new tokens */
  float temperature;     /* 0: greedy */
  int top_k;             /* 0: off */
  float top_p;           /* 1: off */
  uint64_t seed;
  const char *tokenizer; /* tokenizer file overriding the checkpoint's (NULL: the checkpoint's);
                            a llama2.c tokenizer.bin switches to run.c's generation loop, where
                            `tokens` counts all positions, prompt included (run.c's -n) */
  int batch;             /* rows generated together (0 or 1: one): `batch` samples of the prompt,
                            row i drawn with seed + i (so row i equals a batch-1 run with that
                            seed); not with a llama2.c tokenizer */
  const char *prompts_file; /* one prompt per line, one row each (the batch is their number;
                            `batch`, if set, must equal it); NULL: `prompt` for every row */
  int ignore_eot;        /* keep generating past <|endoftext|> (benchmarks: exactly `tokens`) */
  int stats;             /* print load / prefill / decode times and tokens/s to stderr */
} tz_sample_opts;

TZ_API void tz_sample_opts_default(tz_sample_opts *o);
/* Generate and stream text to `out` (FILE*), stopping at <|endoftext|> or after `tokens`. */
TZ_API int tz_sample(const tz_sample_opts *o, void *out_file);

/* ---- model-level API: load a model, tokenize, forward, generate, train step by step ----
 * A tz_lm is one model on one backend with its tokenizer (when the checkpoint has one).
 * Arrays returned through pointers are malloc'ed: release them with tz_free. */
typedef struct tz_lm tz_lm;

/* Load a run directory or checkpoint (ours, llama2.c, llm.c) on `backend` ("cpu", "webgpu",
 * "cuda"; NULL: cpu) with `threads` CPU threads (0: the default). */
TZ_API int tz_lm_load(const char *path, const char *backend, int threads, tz_lm **out);
TZ_API void tz_lm_free(tz_lm *lm);
TZ_API const tz_config *tz_lm_config(const tz_lm *lm);
TZ_API void tz_free(void *p);

/* Tokenizer (fails when the model has none): text → ids (special tokens as plain text unless
 * allow_special), ids → bytes. */
TZ_API int tz_lm_encode(const tz_lm *lm, const char *text, size_t len, int allow_special, int32_t **ids, size_t *n);
TZ_API int tz_lm_decode(const tz_lm *lm, const int32_t *ids, size_t n, char **text, size_t *len);
TZ_API int tz_lm_eot(const tz_lm *lm); /* <|endoftext|> id, or -1 */

/* Full forward pass over `n` tokens (1 ≤ n ≤ max_seq_len): logits of every position into
 * logits[n · vocab_size]. */
TZ_API int tz_lm_forward(tz_lm *lm, const int32_t *tokens, int n, float *logits);

/* Token-by-token generation with a KV cache: start with a prompt (n ≥ 1 ids), then each
 * tz_lm_next returns one sampled token (temperature 0: greedy) and feeds it back. Fails
 * when the context is full. */
TZ_API int tz_lm_generate_start(tz_lm *lm, const int32_t *prompt, int n, float temperature, int top_k, float top_p,
                                uint64_t seed);
TZ_API int tz_lm_next(tz_lm *lm, int32_t *token);

/* One optimizer step of AdamW (betas 0.9/0.95, eps 1e-8, weight decay 0.1, grad-norm clip 1)
 * on a (B, T) batch (inputs and targets: B·T ids each); the first call allocates gradients
 * and moments for that shape, later calls must keep it.
 * *loss receives the batch's mean loss before the update. */
TZ_API int tz_lm_train_step(tz_lm *lm, const int32_t *inputs, const int32_t *targets, int B, int T, float lr,
                            double *loss);
/* Save the model (and its tokenizer) as a tezgah checkpoint file (inference-only). */
TZ_API int tz_lm_save(tz_lm *lm, const char *path);

/* The last error message of this thread ("" when none). */
TZ_API const char *tz_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
