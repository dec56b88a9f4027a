/* Other projects' checkpoint formats: read llama2.c and llm.c files into our config and flat
 * parameter layout (model/layout.h), and write our GPT-2 models in llm.c's format.
 *
 * llama2.c (karpathy/llama2.c, run.c / export.py), all little-endian, fp32 tensors:
 *  - legacy ("version 0"): 7 int32 {dim, hidden_dim, n_layers, n_heads, n_kv_heads,
 *    vocab_size, seq_len}; vocab_size < 0 marks a separate classifier (untied lm_head).
 *    Tensors, each stacked over all layers where per layer: token_embedding [V,C],
 *    rms_att [L,C], wq [L,C,C], wk [L,kv,C], wv [L,kv,C], wo [L,C,C], rms_ffn [L,C],
 *    w1 [L,H,C], w2 [L,C,H], w3 [L,H,C], rms_final [C], the legacy RoPE tables
 *    freq_cis_real and freq_cis_imag [seq_len, head_dim/2] each (skipped), then wcls [V,C]
 *    when untied. (kv = n_kv_heads·head_dim, H = hidden_dim.)
 *  - version 1: a 256-byte header: uint32 magic 0x616b3432 ("ak42"), int32 version (1),
 *    the same 7 int32 (vocab_size positive), uint8 shared_classifier, zero padding. Tensors:
 *    rms_att [L,C], rms_ffn [L,C], rms_final [C], token_embedding [V,C], wq, wk, wv, wo,
 *    w1, w2, w3 (each [L,...]), then wcls [V,C] unless shared. Version 2 (int8) is refused.
 *  run.c's fixed hyper-parameters become ours: rope_theta 10000, norm_eps 1e-5; RoPE pairs
 *  adjacent dims (our rope op does too); padded_vocab = vocab_size.
 *
 * llm.c GPT-2 (../shared/llmc/FORMATS.md): 256 int32 header {20240326, version (3 fp32 |
 * 5 bf16), maxT, V, L, NH, C, Vp, 0...}, then wte [Vp,C], wpe [maxT,C] and the 12 per-layer
 * tensors each stacked over L (ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw,
 * fcb, fcprojw, fcprojb), lnfw, lnfb. bf16 loads exactly (bits << 16); saving as bf16 rounds
 * to nearest even (as PyTorch's .to(torch.bfloat16)).
 *
 * Every size is checked against the header before anything is read: a malformed file gives
 * one line naming the file, the field and its value, never a crash. */
#ifndef TZ_FORMATS_FORMATS_H
#define TZ_FORMATS_FORMATS_H
#include <stddef.h>
#include <stdint.h>

#include "tezgah.h"

#define TZ_LLMC_MAGIC 20240326
#define TZ_LLAMA2C_MAGIC 0x616b3432u

typedef enum {
  TZ_FMT_UNKNOWN = 0, /* not recognized by magic (may be a legacy llama2.c file) */
  TZ_FMT_TEZGAH = 1,
  TZ_FMT_LLAMA2C = 2, /* version 1 (magic) */
  TZ_FMT_LLMC = 3,
  TZ_FMT_HF = 4, /* a Hugging Face model directory (config.json + model.safetensors) */
} tz_format;

/* Sniff the first bytes of a file. Returns a tz_format, or -1 (with tz_err) when the file
 * cannot be opened. Legacy llama2.c files have no magic: TZ_FMT_UNKNOWN. */
int tz_format_detect(const char *path);
const char *tz_format_name(int fmt);

/* Load a llama2.c checkpoint (legacy or version 1, told apart by the magic). *params is a
 * malloc'ed array of tz_config_num_params(cfg) floats in our layout; cfg is finalized. */
int tz_llama2c_load(const char *path, tz_config *cfg, float **params);
/* Load an llm.c GPT-2 checkpoint (version 3 fp32 or 5 bf16). Same outputs. */
int tz_llmc_load(const char *path, tz_config *cfg, float **params);
/* Write a gpt2-family model in llm.c's format (atomically): version 3 (fp32) or, with
 * bf16 != 0, version 5. Errors: not gpt2, d_ff != 4·d_model, write failures. */
int tz_llmc_save(const char *path, const tz_config *cfg, const float *params, int bf16);

/* Write a llama-family model as a llama2.c legacy ("version 0") file, the format run.c reads
 * (atomically): the 7-int header (vocab_size negated when lm_head is untied), the tensors in
 * the legacy order, zero-filled RoPE tables. Errors: not llama; rope_theta / norm_eps other
 * than run.c's fixed 10000 / 1e-5. */
int tz_llama2c_save(const char *path, const tz_config *cfg, const float *params);

/* Hugging Face directories (hf.c; mapping, RoPE row permutation and Conv1D transposes there).
 * tz_hf_is_dir: a directory holding config.json. tz_hf_load reads config.json (llama /
 * LlamaForCausalLM, gpt2 / GPT2LMHeadModel; unsupported variants such as rope_scaling or
 * attention biases are refused naming the field) and model.safetensors (or the shards of
 * model.safetensors.index.json; F32, F16, BF16): a missing, unexpected or mis-shaped tensor
 * is a one-line error naming the file, tensor and shapes. cfg gets our default vocab padding.
 * tok (may be NULL) receives tokenizer.json when it is one tezgah reads (byte-level BPE),
 * else NULL. tz_hf_save writes model.safetensors (F32), config.json, generation_config.json
 * and, for byte-level BPE tokenizers, tokenizer.json + tokenizer_config.json; `note` (may be
 * NULL) receives a line saying why no tokenizer.json was written, or "". */
typedef struct tz_tokenizer tz_tokenizer;
int tz_hf_is_dir(const char *path);
int tz_hf_load(const char *dir, tz_config *cfg, float **params, tz_tokenizer **tok);
int tz_hf_save(const char *dir, const tz_config *cfg, const float *params, const tz_tokenizer *tok, char *note,
               size_t note_len);

/* The parameters of `from` copied tensor by tensor (by name) into the layout of `to`, a config
 * that differs only in padded_vocab: rows beyond the smaller count are dropped / zero. */
float *tz_params_relayout(const tz_config *from, const float *p, const tz_config *to);

/* Load any foreign checkpoint: by magic (llm.c, llama2.c v1), else as a legacy llama2.c
 * file, or a Hugging Face directory; `from` ("llama2c", "llmc", "hf" or NULL for auto) forces the
 * family. Auto: a tezgah checkpoint is an error, and so is a file that matches no magic and is
 * no valid legacy llama2.c file (the message names the magics checked and the legacy reader's
 * complaint). */
int tz_foreign_load(const char *path, const char *from, tz_config *cfg, float **params);

/* bf16 helpers: src/core/bf16.h (tz_bf16_to_f32, tz_f32_to_bf16). */
#include "core/bf16.h"

#endif
