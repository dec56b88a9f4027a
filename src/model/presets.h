/* Named model shapes (`tezgah train --model NAME`), so a user need not remember flag sets.
 *
 * GPT-2 family: the four sizes of Radford et al. 2019 (Table 2) as llm.c and nanoGPT build them
 * (n_layer, n_head, d_model; d_ff = 4·C; context 1024). Llama family: llama2.c's TinyStories
 * models stories15M / 42M / 110M (Karpathy, llama2.c README: dim, n_layers, n_heads, max_seq_len;
 * d_ff by the llama rule, which gives their hidden_dim 768 / 1376 / 2048).
 * A preset sets arch, n_layer, n_head, n_kv_head, d_model and max_seq_len only: the vocabulary
 * comes from the tokenizer (--vocab-size or --tokenizer), as for any run. */
#ifndef TZ_MODEL_PRESETS_H
#define TZ_MODEL_PRESETS_H

#include "tezgah.h"

typedef struct {
  const char *name;
  tz_arch arch;
  int n_layer, n_head, d_model, max_seq_len;
  const char *about; /* one line for --help and errors */
} tz_model_preset;

/* The preset called name (case-sensitive), or NULL. */
const tz_model_preset *tz_model_preset_find(const char *name);
/* All presets, *n of them (for help text and error messages). */
const tz_model_preset *tz_model_presets(int *n);

#endif
