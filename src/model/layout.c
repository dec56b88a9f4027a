#include "model/layout.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "core/error.h"

typedef struct {
  tz_layout *lay;
  int cap;
} builder;

static size_t add(builder *b, const char *name, int rows, int cols, int init) {
  tz_layout *lay = b->lay;
  if (lay->n == b->cap) {
    b->cap = b->cap ? 2 * b->cap : 64;
    lay->t = tz_realloc(lay->t, (size_t)b->cap * sizeof *lay->t);
  }
  tz_tensor_info *t = &lay->t[lay->n++];
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->ndim = cols > 0 ? 2 : 1;
  t->shape[0] = rows;
  t->shape[1] = cols > 0 ? cols : 1;
  t->numel = (size_t)rows * (size_t)t->shape[1];
  t->off = lay->total;
  t->decay = t->ndim >= 2;
  t->init = init;
  lay->total += t->numel;
  return t->off;
}

enum { ZEROS = 0, ONES = 1, NORMAL = 2, NORMAL_RESID = 3 };

void tz_layout_build(const tz_config *c, tz_layout *lay) {
  memset(lay, 0, sizeof *lay);
  builder b = {lay, 0};
  const int C = c->d_model, L = c->n_layer, hd = c->d_model / c->n_head;
  const int Q = (c->n_head + 2 * c->n_kv_head) * hd;
  const int gpt2 = c->arch == TZ_ARCH_GPT2;
  char nm[TZ_NAME_MAX];
  lay->layer = tz_calloc((size_t)L, sizeof *lay->layer);
  lay->wte = add(&b, "wte", c->padded_vocab, C, NORMAL);
  lay->wpe = gpt2 ? add(&b, "wpe", c->max_seq_len, C, NORMAL) : TZ_ABSENT;
#define T(field, suffix, rows, cols, init)                          \
  do {                                                              \
    snprintf(nm, sizeof nm, "layers.%d.%s", l, suffix);             \
    o->field = add(&b, nm, rows, cols, init);                       \
  } while (0)
  for (int l = 0; l < L; l++) {
    tz_layer_offsets *o = &lay->layer[l];
    for (size_t *p = &o->norm1_w; p <= &o->fcproj_b; p++) *p = TZ_ABSENT;
    if (gpt2) {
      T(norm1_w, "ln1.w", C, 0, ONES);
      T(norm1_b, "ln1.b", C, 0, ZEROS);
      T(qkv_w, "attn.qkv.w", Q, C, NORMAL);
      T(qkv_b, "attn.qkv.b", Q, 0, ZEROS);
      T(proj_w, "attn.proj.w", C, C, NORMAL_RESID);
      T(proj_b, "attn.proj.b", C, 0, ZEROS);
      T(norm2_w, "ln2.w", C, 0, ONES);
      T(norm2_b, "ln2.b", C, 0, ZEROS);
      T(fc_w, "mlp.fc.w", c->d_ff, C, NORMAL);
      T(fc_b, "mlp.fc.b", c->d_ff, 0, ZEROS);
      T(fcproj_w, "mlp.proj.w", C, c->d_ff, NORMAL_RESID);
      T(fcproj_b, "mlp.proj.b", C, 0, ZEROS);
    } else {
      size_t unused;
      T(norm1_w, "attn_norm.w", C, 0, ONES);
      T(qkv_w, "attn.wq", c->n_head * hd, C, NORMAL);
      snprintf(nm, sizeof nm, "layers.%d.attn.wk", l);
      unused = add(&b, nm, c->n_kv_head * hd, C, NORMAL);
      snprintf(nm, sizeof nm, "layers.%d.attn.wv", l);
      unused = add(&b, nm, c->n_kv_head * hd, C, NORMAL);
      (void)unused;
      T(proj_w, "attn.wo", C, c->n_head * hd, NORMAL_RESID);
      T(norm2_w, "ffn_norm.w", C, 0, ONES);
      T(fc_w, "ffn.w1", c->d_ff, C, NORMAL);
      snprintf(nm, sizeof nm, "layers.%d.ffn.w3", l);
      unused = add(&b, nm, c->d_ff, C, NORMAL);
      T(fcproj_w, "ffn.w2", C, c->d_ff, NORMAL_RESID);
    }
  }
#undef T
  lay->normf_w = add(&b, gpt2 ? "lnf.w" : "norm.w", C, 0, ONES);
  lay->normf_b = gpt2 ? add(&b, "lnf.b", C, 0, ZEROS) : TZ_ABSENT;
  lay->lm_head = c->tied ? lay->wte : add(&b, "lm_head", c->padded_vocab, C, NORMAL);

  XXH64_state_t *h = XXH64_createState();
  XXH64_reset(h, 0);
  for (int i = 0; i < lay->n; i++) {
    const tz_tensor_info *t = &lay->t[i];
    XXH64_update(h, t->name, strlen(t->name) + 1);
    XXH64_update(h, "f32", 4);
    int32_t dims[3] = {t->ndim, t->shape[0], t->shape[1]};
    XXH64_update(h, dims, sizeof dims);
  }
  lay->fingerprint = XXH64_digest(h);
  XXH64_freeState(h);
}

void tz_layout_free(tz_layout *lay) {
  free(lay->t);
  free(lay->layer);
  memset(lay, 0, sizeof *lay);
}

const tz_tensor_info *tz_layout_find(const tz_layout *lay, const char *name) {
  for (int i = 0; i < lay->n; i++)
    if (strcmp(lay->t[i].name, name) == 0) return &lay->t[i];
  return NULL;
}
