/* The parameter layout: one table of tensors (name, shape, offset) over ONE flat fp32 buffer.
 *
 * Parameters, gradients and both AdamW moments use this same layout, so one offset serves
 * all four buffers. The table drives allocation, initialization, weight decay, checkpoints
 * and logging (STYLE.md "one tensor table"). The fingerprint (XXH64 over every tensor's
 * name, dtype and shape, in order) is stored in checkpoints: a checkpoint whose fingerprint
 * differs belongs to another model and is refused.
 *
 * Order is per layer so that tensors consumed by one fused matmul are adjacent:
 *   llama: wte; layers.{l}.{attn_norm.w, attn.wq, attn.wk, attn.wv, attn.wo, ffn_norm.w,
 *          ffn.w1, ffn.w3, ffn.w2}; norm.w; lm_head (untied only)
 *          (wq|wk|wv form one [(n_head+2·n_kv_head)·head_dim, C] matrix, w1|w3 one [2·d_ff, C])
 *   gpt2:  wte; wpe; layers.{l}.{ln1.w, ln1.b, attn.qkv.w, attn.qkv.b, attn.proj.w, attn.proj.b,
 *          ln2.w, ln2.b, mlp.fc.w, mlp.fc.b, mlp.proj.w, mlp.proj.b}; lnf.w; lnf.b
 * Linear weights are [out, in]. wte (and lm_head) have padded_vocab rows. */
#ifndef TZ_MODEL_LAYOUT_H
#define TZ_MODEL_LAYOUT_H
#include <stddef.h>
#include <stdint.h>

#include "tezgah.h"

#define TZ_NAME_MAX 48
#define TZ_ABSENT ((size_t)-1)

typedef struct {
  char name[TZ_NAME_MAX];
  int ndim;
  int shape[2];   /* rows, cols (cols = 1 for vectors... ndim says which) */
  size_t off;     /* first element in the flat buffer */
  size_t numel;
  int decay;      /* 1: AdamW weight decay applies (≥2-D), 0: norms and biases */
  int init;       /* how to initialize: 0 zeros, 1 ones, 2 normal(0.02), 3 normal(0.02/sqrt(2L)) */
} tz_tensor_info;

/* Element offsets of one layer's tensors (TZ_ABSENT where the family has none). */
typedef struct {
  size_t norm1_w, norm1_b;   /* attention pre-norm */
  size_t qkv_w, qkv_b;       /* fused [Q, C], Q = (n_head + 2 n_kv_head) head_dim */
  size_t proj_w, proj_b;     /* attention output [C, C] */
  size_t norm2_w, norm2_b;   /* MLP pre-norm */
  size_t fc_w, fc_b;         /* gpt2: [d_ff, C]; llama: w1|w3 [2 d_ff, C] */
  size_t fcproj_w, fcproj_b; /* [C, d_ff] */
} tz_layer_offsets;

typedef struct {
  tz_tensor_info *t;
  int n;
  size_t total;          /* number of floats */
  uint64_t fingerprint;  /* XXH64 of names, dtypes, shapes in order */
  size_t wte, wpe, normf_w, normf_b, lm_head; /* lm_head == wte when tied */
  tz_layer_offsets *layer; /* [n_layer] */
} tz_layout;

/* Build the layout for a finalized config. Never fails for a valid config. */
void tz_layout_build(const tz_config *cfg, tz_layout *lay);
void tz_layout_free(tz_layout *lay);
/* Find a tensor by name (NULL if absent). */
const tz_tensor_info *tz_layout_find(const tz_layout *lay, const char *name);

#endif
