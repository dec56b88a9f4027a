/* llama2.c checkpoints (legacy and version 1) → our llama config and layout. The format is
 * described in formats.h; this reads it from the description of run.c's
 * memory_map_weights and export.py's legacy_export / version1_export. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h" /* tz_plural */
#include "core/fileio.h"
#include "core/utf8.h"
#include "formats/fmt_util.h"
#include "formats/formats.h"

#define V1_HEADER 256

/* The 7 header ints, validated; hd = head dim. */
static int check_dims(const char *path, const int32_t h[7], tz_config *c) {
  static const char *names[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
  static const long max[7] = {1 << 16, 1 << 20, 1024, 4096, 4096, 1 << 24, 1 << 20};
  for (int i = 0; i < 7; i++) {
    long v = h[i];
    if (i == 5 && v < 0) v = -v; /* negative vocab = separate classifier (legacy convention) */
    if (v <= 0 || v > max[i])
      return tz_err("%s: llama2.c header field %s=%d is out of range [1, %ld]", path, names[i], h[i], max[i]);
  }
  memset(c, 0, sizeof *c);
  c->arch = TZ_ARCH_LLAMA;
  c->d_model = h[0];
  c->d_ff = h[1];
  c->n_layer = h[2];
  c->n_head = h[3];
  c->n_kv_head = h[4];
  c->vocab_size = h[5] < 0 ? -h[5] : h[5];
  c->padded_vocab = c->vocab_size;
  c->max_seq_len = h[6];
  c->tied = h[5] > 0;
  c->rope_theta = 10000.0f; /* run.c's constants */
  c->norm_eps = 1e-5f;
  if (h[0] % h[3]) return tz_err("%s: llama2.c header n_heads=%d does not divide dim=%d", path, h[3], h[0]);
  if (h[3] % h[4]) return tz_err("%s: llama2.c header n_kv_heads=%d does not divide n_heads=%d", path, h[4], h[3]);
  if (tz_config_finalize(c)) return tz_err_prefix(path);
  return 0;
}

#define LEGACY_N 14

/* The legacy file's tensor order (lm_head last: drop it when tied). */
static void legacy_entries(const tz_config *cfg, tz_fmt_entry e[LEGACY_N]) {
  const size_t hd = (size_t)cfg->d_model / cfg->n_head, rope = (size_t)cfg->max_seq_len * hd / 2;
  const tz_fmt_entry order[LEGACY_N] = {
      {"wte", 0, 0}, {"layers.%d.attn_norm.w", 1, 0}, {"layers.%d.attn.wq", 1, 0},
      {"layers.%d.attn.wk", 1, 0}, {"layers.%d.attn.wv", 1, 0}, {"layers.%d.attn.wo", 1, 0},
      {"layers.%d.ffn_norm.w", 1, 0}, {"layers.%d.ffn.w1", 1, 0}, {"layers.%d.ffn.w2", 1, 0},
      {"layers.%d.ffn.w3", 1, 0}, {"norm.w", 0, 0},
      {NULL, 0, rope}, /* freq_cis_real */
      {NULL, 0, rope}, /* freq_cis_imag */
      {"lm_head", 0, 0}};
  memcpy(e, order, sizeof order);
}

int tz_llama2c_load(const char *path, tz_config *cfg, float **params) {
  tz_fmt_map m;
  if (tz_fmt_map_open(path, &m)) return -1;
  int rc = -1;
  uint32_t magic = 0;
  if (m.size >= 4) memcpy(&magic, m.data, 4);
  int legacy = magic != TZ_LLAMA2C_MAGIC;
  size_t hdr = legacy ? 28 : V1_HEADER;
  int32_t h[7];
  int shared = 0;
  tz_layout lay = {0};
  /* a text file (convert --from llama2c a.txt) would be blamed for its "dim" (its first 4 bytes);
   * no llama2.c file looks like text: dim <= 65536 (legacy) or version 1 after "ak42" put NULs early */
  char head[128];
  size_t nh = m.size < 64 ? m.size : 64;
  if (tz_utf8_describe_head(m.data, nh, m.size > nh, head, sizeof head)) {
    tz_err("%s: not a llama2.c model: a text file (starts with %s)", path, head);
    goto out;
  }
  if (m.size < hdr) {
    tz_err("%s: truncated llama2.c checkpoint: %zu byte%s, the %s header needs %zu", path, m.size,
           tz_plural((long long)m.size), legacy ? "legacy" : "version 1", hdr);
    goto out;
  }
  if (legacy) {
    memcpy(h, m.data, sizeof h);
  } else {
    int32_t version;
    memcpy(&version, m.data + 4, 4);
    if (version != 1) {
      tz_err("%s: llama2.c checkpoint version %d is not supported (expected 1; 2 is int8-quantized)", path, version);
      goto out;
    }
    memcpy(h, m.data + 8, sizeof h);
    if (m.data[36] > 1) {
      tz_err("%s: llama2.c header field shared_classifier=%d is not 0 or 1", path, m.data[36]);
      goto out;
    }
    shared = m.data[36];
    if (h[5] < 0) {
      tz_err("%s: llama2.c version 1 header field vocab_size=%d must be positive", path, h[5]);
      goto out;
    }
    h[5] = shared ? h[5] : -h[5]; /* reuse the legacy sign convention below */
  }
  if (check_dims(path, h, cfg)) goto out;
  tz_layout_build(cfg, &lay);
  const int L = cfg->n_layer;
  tz_fmt_entry legacy_order[LEGACY_N];
  legacy_entries(cfg, legacy_order);
  const tz_fmt_entry v1_order[] = {
      {"layers.%d.attn_norm.w", 1, 0}, {"layers.%d.ffn_norm.w", 1, 0}, {"norm.w", 0, 0},
      {"wte", 0, 0}, {"layers.%d.attn.wq", 1, 0}, {"layers.%d.attn.wk", 1, 0},
      {"layers.%d.attn.wv", 1, 0}, {"layers.%d.attn.wo", 1, 0}, {"layers.%d.ffn.w1", 1, 0},
      {"layers.%d.ffn.w2", 1, 0}, {"layers.%d.ffn.w3", 1, 0}, {"lm_head", 0, 0}};
  const tz_fmt_entry *order = legacy ? legacy_order : v1_order;
  int n = legacy ? (int)(sizeof legacy_order / sizeof *legacy_order) : (int)(sizeof v1_order / sizeof *v1_order);
  if (cfg->tied) n--; /* lm_head is last in both orders */
  size_t floats = tz_fmt_count(&lay, L, order, n);
  size_t want = hdr + floats * sizeof(float);
  if (m.size != want) {
    tz_err("%s: llama2.c checkpoint has %zu bytes but its header (dim=%d hidden_dim=%d n_layers=%d n_heads=%d "
           "n_kv_heads=%d vocab_size=%d seq_len=%d%s) needs %zu%s",
           path, m.size, h[0], h[1], h[2], h[3], h[4], h[5], h[6], legacy ? "" : shared ? " shared" : " unshared",
           want, m.size < want ? " (truncated?)" : "");
    goto out;
  }
  *params = tz_calloc(lay.total, sizeof(float));
  tz_fmt_permute(&lay, L, order, n, *params, (void *)(m.data + hdr), 0, 0);
  rc = 0;
out:
  tz_layout_free(&lay);
  tz_fmt_map_close(&m);
  return rc;
}

int tz_llama2c_save(const char *path, const tz_config *cfg, const float *params) {
  if (cfg->arch != TZ_ARCH_LLAMA) return tz_err("%s: llama2.c's format holds llama models only (this one is gpt2)", path);
  if (cfg->rope_theta != 10000.0f || cfg->norm_eps != 1e-5f)
    return tz_err("%s: llama2.c's run.c fixes rope_theta=10000 and norm_eps=1e-5 (this model has %g and %g)", path,
                  cfg->rope_theta, cfg->norm_eps);
  tz_config c = *cfg; /* the file holds exactly vocab_size rows */
  c.padded_vocab = c.vocab_size;
  float *p = tz_params_relayout(cfg, params, &c);
  tz_layout lay;
  tz_layout_build(&c, &lay);
  tz_fmt_entry order[LEGACY_N];
  legacy_entries(&c, order);
  int n = c.tied ? LEGACY_N - 1 : LEGACY_N;
  size_t floats = tz_fmt_count(&lay, c.n_layer, order, n);
  int32_t h[7] = {c.d_model, c.d_ff, c.n_layer, c.n_head, c.n_kv_head, c.tied ? c.vocab_size : -c.vocab_size,
                  c.max_seq_len};
  float *body = tz_malloc(floats * sizeof(float));
  tz_fmt_permute(&lay, c.n_layer, order, n, p, body, 0, 1);
  tz_afile af;
  int rc = tz_afile_open(&af, path);
  if (!rc) {
    tz_afile_write(&af, h, sizeof h);
    tz_afile_write(&af, body, floats * sizeof(float));
    rc = tz_afile_commit(&af);
  }
  free(body);
  free(p);
  tz_layout_free(&lay);
  return rc;
}
