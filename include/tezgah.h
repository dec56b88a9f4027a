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
int tz_config_finalize(tz_config *cfg);
/* Number of parameters (floats in the flat parameter buffer). */
size_t tz_config_num_params(const tz_config *cfg);

/* ---- training ---- */
typedef struct {
  /* data: a text corpus (tokenized once into cached llm.c shards) or existing shards */
  const char *data;         /* corpus text file (default data/kjv.txt) */
  const char *train_shards; /* comma-separated paths/globs of llm.c shards (instead of data) */
  const char *val_shards;
  const char *tokenizer;    /* tokenizer file for --train-shards runs (optional) */
  int vocab_size;           /* BPE vocabulary to train on the corpus (incl. <|endoftext|>) */
  float val_fraction;       /* share of the corpus's tokens held out for validation */
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
  int threads;              /* OpenMP threads (0: all cores) */
  uint64_t seed;
  /* model (ignored on resume / init_from: the checkpoint's / model's config wins) */
  tz_config model;
  /* optimization */
  int B, T, grad_accum, steps, warmup;
  float lr, min_lr_frac;    /* peak LR; cosine decays to lr·min_lr_frac */
  float beta1, beta2, eps, weight_decay, grad_clip;
  /* evaluation, checkpoints, output */
  int val_every, val_batches, ckpt_every, log_every, sample_tokens;
  int stop_after;           /* end this session (with a checkpoint) after N steps; 0 = off */
  int quiet;
  /* numerical guards: skip a step whose loss / grad norm z-score over a running window of
   * recent steps exceeds this (llm.c's -sl / -sg); 0 = off. Recorded in checkpoints. */
  float skip_loss_z, skip_norm_z;
  /* debug: comma-separated 1-based step numbers whose first micro-batch gets NaN written
   * into its gradients / +Inf into its activations (tests of the skip path); NULL = none */
  const char *debug_inject_nan, *debug_inject_inf;
  /* --profile (webgpu, cuda): per-kernel GPU time table on stderr at the end of the session */
  int profile;
} tz_train_opts;

/* Defaults: llama, 4 layers, 4 heads, C=128, T=128, B=16, vocab 2048, AdamW(0.9, 0.95, 1e-8,
 * wd 0.1), lr 3e-3 with 5% warmup and cosine decay to 10%, clip 1.0. */
void tz_train_opts_default(tz_train_opts *o);
/* Train (or resume) as the options say. Returns 0, or nonzero with tz_last_error(). */
int tz_train(const tz_train_opts *o);

/* ---- sampling ---- */
typedef struct {
  const char *model;     /* run directory or checkpoint file: ours, llama2.c or llm.c (default runs/latest) */
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
} tz_sample_opts;

void tz_sample_opts_default(tz_sample_opts *o);
/* Generate and stream text to `out` (FILE*), stopping at <|endoftext|> or after `tokens`. */
int tz_sample(const tz_sample_opts *o, void *out_file);

/* The last error message of this thread ("" when none). */
const char *tz_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
