/* Model configuration: defaults for derived fields and validation (one-line errors naming
 * the field and value). */
#include <stdio.h>

#include "core/error.h"
#include "model/layout.h"
#include "tezgah.h"

static int round_up(int x, int m) { return (x + m - 1) / m * m; }

int tz_config_finalize(tz_config *c) {
  if (c->arch != TZ_ARCH_LLAMA && c->arch != TZ_ARCH_GPT2)
    return tz_err("config: arch=%d is not llama or gpt2", (int)c->arch);
#define POS(f, max)                                                              \
  if (c->f <= 0 || c->f > (max)) return tz_err("config: " #f "=%d must be in [1, %d]", c->f, (max))
  POS(n_layer, 1024);
  POS(n_head, 4096);
  POS(d_model, 1 << 16);
  POS(vocab_size, 1 << 24);
  POS(max_seq_len, 1 << 20);
  if (c->n_kv_head == 0) c->n_kv_head = c->n_head;
  POS(n_kv_head, 4096);
  if (c->d_model % c->n_head)
    return tz_err("config: n_head=%d does not divide d_model=%d", c->n_head, c->d_model);
  if (c->n_head % c->n_kv_head)
    return tz_err("config: n_kv_head=%d does not divide n_head=%d", c->n_kv_head, c->n_head);
  int hd = c->d_model / c->n_head;
  if (c->arch == TZ_ARCH_GPT2) {
    if (c->n_kv_head != c->n_head)
      return tz_err("config: gpt2 needs n_kv_head == n_head (got %d and %d)", c->n_kv_head, c->n_head);
    if (c->d_ff == 0) c->d_ff = 4 * c->d_model;
    c->tied = 1;
  } else {
    if (hd % 2) return tz_err("config: head_dim=%d must be even for RoPE (d_model/n_head)", hd);
    /* llama's SwiGLU width: 2/3 of 4C rounded up to a multiple of 32 (Touvron et al. 2023) */
    if (c->d_ff == 0) c->d_ff = round_up(8 * c->d_model / 3, 32);
  }
  POS(d_ff, 1 << 20);
  if (c->padded_vocab == 0)
    c->padded_vocab = round_up(c->vocab_size, c->arch == TZ_ARCH_GPT2 ? 128 : 64);
  if (c->padded_vocab < c->vocab_size)
    return tz_err("config: padded_vocab=%d is below vocab_size=%d", c->padded_vocab, c->vocab_size);
  if (c->rope_theta == 0) c->rope_theta = 10000.0f;
  if (c->norm_eps == 0) c->norm_eps = 1e-5f;
  if (!(c->rope_theta > 0) || !(c->norm_eps > 0))
    return tz_err("config: rope_theta=%g and norm_eps=%g must be positive", c->rope_theta, c->norm_eps);
#undef POS
  return 0;
}

size_t tz_config_num_params(const tz_config *cfg) {
  tz_layout lay;
  tz_layout_build(cfg, &lay);
  size_t n = lay.total;
  tz_layout_free(&lay);
  return n;
}
