/* llm.c GPT-2 checkpoints (version 3 fp32, version 5 bf16) ↔ our gpt2 config and layout.
 * Format in formats.h and ../shared/llmc/FORMATS.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h" /* tz_plural */
#include "core/fileio.h"
#include "formats/fmt_util.h"
#include "formats/formats.h"

#define HEADER_INTS 256
#define HEADER_BYTES (HEADER_INTS * 4)

static const tz_fmt_entry ORDER[] = {
    {"wte", 0, 0}, {"wpe", 0, 0},
    {"layers.%d.ln1.w", 1, 0}, {"layers.%d.ln1.b", 1, 0},
    {"layers.%d.attn.qkv.w", 1, 0}, {"layers.%d.attn.qkv.b", 1, 0},
    {"layers.%d.attn.proj.w", 1, 0}, {"layers.%d.attn.proj.b", 1, 0},
    {"layers.%d.ln2.w", 1, 0}, {"layers.%d.ln2.b", 1, 0},
    {"layers.%d.mlp.fc.w", 1, 0}, {"layers.%d.mlp.fc.b", 1, 0},
    {"layers.%d.mlp.proj.w", 1, 0}, {"layers.%d.mlp.proj.b", 1, 0},
    {"lnf.w", 0, 0}, {"lnf.b", 0, 0}};
#define N_ORDER (int)(sizeof ORDER / sizeof *ORDER)

int tz_llmc_load(const char *path, tz_config *cfg, float **params) {
  tz_fmt_map m;
  if (tz_fmt_map_open(path, &m)) return -1;
  int rc = -1;
  tz_layout lay = {0};
  int32_t h[HEADER_INTS];
  if (m.size < HEADER_BYTES) {
    tz_err("%s: truncated llm.c checkpoint: %zu byte%s, the header needs %d", path, m.size, tz_plural((long long)m.size),
           HEADER_BYTES);
    goto out;
  }
  memcpy(h, m.data, sizeof h);
  if (h[0] != TZ_LLMC_MAGIC) {
    tz_err("%s: magic %d is not llm.c's model magic %d", path, h[0], TZ_LLMC_MAGIC);
    goto out;
  }
  if (h[1] != 3 && h[1] != 5) {
    tz_err("%s: llm.c checkpoint version %d is not supported (3 = fp32, 5 = bf16)", path, h[1]);
    goto out;
  }
  static const char *names[] = {"", "", "maxT", "V", "L", "NH", "C", "Vp"};
  static const long max[] = {0, 0, 1 << 20, 1 << 24, 1024, 4096, 1 << 16, 1 << 24};
  for (int i = 2; i < 8; i++)
    if (h[i] <= 0 || h[i] > max[i]) {
      tz_err("%s: llm.c header field %s=%d is out of range [1, %ld]", path, names[i], h[i], max[i]);
      goto out;
    }
  if (h[7] < h[3]) {
    tz_err("%s: llm.c header field Vp=%d is below V=%d", path, h[7], h[3]);
    goto out;
  }
  if (h[6] % h[5]) {
    tz_err("%s: llm.c header field NH=%d does not divide C=%d", path, h[5], h[6]);
    goto out;
  }
  memset(cfg, 0, sizeof *cfg);
  cfg->arch = TZ_ARCH_GPT2;
  cfg->max_seq_len = h[2];
  cfg->vocab_size = h[3];
  cfg->n_layer = h[4];
  cfg->n_head = cfg->n_kv_head = h[5];
  cfg->d_model = h[6];
  cfg->d_ff = 4 * h[6];
  cfg->padded_vocab = h[7];
  cfg->tied = 1;
  if (tz_config_finalize(cfg)) {
    tz_err_prefix(path);
    goto out;
  }
  tz_layout_build(cfg, &lay);
  int bf16 = h[1] == 5;
  size_t want = HEADER_BYTES + tz_fmt_count(&lay, cfg->n_layer, ORDER, N_ORDER) * (bf16 ? 2 : 4);
  if (m.size != want) {
    tz_err("%s: llm.c checkpoint has %zu bytes but its header (version=%d maxT=%d V=%d L=%d NH=%d C=%d Vp=%d) "
           "needs %zu%s", path, m.size, h[1], h[2], h[3], h[4], h[5], h[6], h[7], want,
           m.size < want ? " (truncated?)" : "");
    goto out;
  }
  *params = tz_calloc(lay.total, sizeof(float));
  tz_fmt_permute(&lay, cfg->n_layer, ORDER, N_ORDER, *params, (void *)(m.data + HEADER_BYTES), bf16, 0);
  rc = 0;
out:
  tz_layout_free(&lay);
  tz_fmt_map_close(&m);
  return rc;
}

int tz_llmc_save(const char *path, const tz_config *cfg, const float *params, int bf16) {
  if (cfg->arch != TZ_ARCH_GPT2) return tz_err("%s: llm.c's format holds gpt2 models only (this one is llama)", path);
  if (cfg->d_ff != 4 * cfg->d_model)
    return tz_err("%s: llm.c's format needs d_ff = 4·d_model (d_ff=%d, d_model=%d)", path, cfg->d_ff, cfg->d_model);
  tz_layout lay;
  tz_layout_build(cfg, &lay);
  size_t n = tz_fmt_count(&lay, cfg->n_layer, ORDER, N_ORDER), es = bf16 ? 2 : 4;
  int32_t h[HEADER_INTS] = {TZ_LLMC_MAGIC, bf16 ? 5 : 3, cfg->max_seq_len, cfg->vocab_size, cfg->n_layer,
                            cfg->n_head, cfg->d_model, cfg->padded_vocab};
  void *body = tz_malloc(n * es);
  float *ours = tz_malloc(lay.total * sizeof(float));
  memcpy(ours, params, lay.total * sizeof(float));
  tz_fmt_permute(&lay, cfg->n_layer, ORDER, N_ORDER, ours, body, bf16, 1);
  tz_afile af;
  int rc = tz_afile_open(&af, path);
  if (!rc) {
    tz_afile_write(&af, h, sizeof h);
    tz_afile_write(&af, body, n * es);
    rc = tz_afile_commit(&af);
  }
  free(body);
  free(ours);
  tz_layout_free(&lay);
  return rc;
}
