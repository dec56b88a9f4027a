/* Hugging Face model directories (config.json + model.safetensors [+ tokenizer.json]) ↔ our
 * config and flat layout, for LlamaForCausalLM and GPT2LMHeadModel. Mapping (per layer l):
 *
 *  llama (model.*)                                 ours
 *   embed_tokens.weight [V, C]                      wte (first V rows)
 *   layers.l.input_layernorm.weight                 layers.l.attn_norm.w
 *   layers.l.self_attn.{q,k}_proj.weight            layers.l.attn.w{q,k}, rows permuted (below)
 *   layers.l.self_attn.v_proj.weight                layers.l.attn.wv
 *   layers.l.self_attn.o_proj.weight                layers.l.attn.wo
 *   layers.l.post_attention_layernorm.weight        layers.l.ffn_norm.w
 *   layers.l.mlp.{gate,up,down}_proj.weight         layers.l.ffn.{w1,w3,w2}
 *   norm.weight                                     norm.w
 *   lm_head.weight (untied only)                    lm_head
 *  RoPE: we rotate adjacent pairs (2i, 2i+1) of a head (llama2.c / Meta); HF rotates halves
 *  (i, i + hd/2). The same weights give the same model when q_proj/k_proj rows are permuted per
 *  head: HF row h·hd + j·hd/2 + i = our row h·hd + 2i + j (j ∈ {0,1}, i < hd/2), the
 *  permutation of transformers' convert_llama_weights_to_hf.
 *
 *  gpt2 (transformer.*, read with or without the prefix)
 *   wte.weight, wpe.weight                          wte (first V rows), wpe
 *   h.l.ln_1.{weight,bias}, h.l.ln_2.*              layers.l.ln1.{w,b}, layers.l.ln2.*
 *   h.l.attn.c_attn.{weight [C, 3C], bias}          layers.l.attn.qkv.{w [3C, C], b}
 *   h.l.attn.c_proj, h.l.mlp.c_fc, h.l.mlp.c_proj   layers.l.attn.proj, mlp.fc, mlp.proj
 *   ln_f.{weight,bias}                              lnf.{w,b}
 *  GPT-2's Conv1D stores weights as [in, out]: every .weight of a Conv1D is transposed.
 *  lm_head.weight is tied to wte (skipped when present), as are the attention mask buffers
 *  (attn.bias, attn.masked_bias) and llama's rotary_emb.inv_freq. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/decimal.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/gen_defaults.h"
#include "formats/formats.h"
#include "formats/safetensors.h"
#include "model/config_json.h"
#include "model/layout.h"
#include "tokenizer/tokenizer.h"

enum { X_COPY, X_T, X_ROPE };

typedef struct {
  char ours[TZ_NAME_MAX];
  char hf[96];
  int x;     /* X_COPY, X_T, X_ROPE */
  int heads; /* X_ROPE: heads in the tensor */
} hf_map;

static int build_map(const tz_config *c, hf_map **out) {
  int L = c->n_layer, n = 0;
  hf_map *m = tz_calloc((size_t)(16 * L + 8), sizeof *m);
#define ADD(o, h, xf, nh)                                   \
  do {                                                      \
    snprintf(m[n].ours, sizeof m[n].ours, "%s", o);         \
    snprintf(m[n].hf, sizeof m[n].hf, "%s", h);             \
    m[n].x = xf;                                            \
    m[n].heads = nh;                                        \
    n++;                                                    \
  } while (0)
  char a[TZ_NAME_MAX], b[96];
  if (c->arch == TZ_ARCH_LLAMA) {
    ADD("wte", "model.embed_tokens.weight", X_COPY, 0);
    static const struct { const char *o, *h; int x; } PL[] = {
        {"attn_norm.w", "input_layernorm.weight", X_COPY}, {"attn.wq", "self_attn.q_proj.weight", X_ROPE},
        {"attn.wk", "self_attn.k_proj.weight", X_ROPE},    {"attn.wv", "self_attn.v_proj.weight", X_COPY},
        {"attn.wo", "self_attn.o_proj.weight", X_COPY},    {"ffn_norm.w", "post_attention_layernorm.weight", X_COPY},
        {"ffn.w1", "mlp.gate_proj.weight", X_COPY},        {"ffn.w3", "mlp.up_proj.weight", X_COPY},
        {"ffn.w2", "mlp.down_proj.weight", X_COPY}};
    for (int l = 0; l < L; l++)
      for (size_t i = 0; i < sizeof PL / sizeof *PL; i++) {
        snprintf(a, sizeof a, "layers.%d.%s", l, PL[i].o);
        snprintf(b, sizeof b, "model.layers.%d.%s", l, PL[i].h);
        ADD(a, b, PL[i].x, i == 1 ? c->n_head : c->n_kv_head);
      }
    ADD("norm.w", "model.norm.weight", X_COPY, 0);
    if (!c->tied) ADD("lm_head", "lm_head.weight", X_COPY, 0);
  } else {
    ADD("wte", "transformer.wte.weight", X_COPY, 0);
    ADD("wpe", "transformer.wpe.weight", X_COPY, 0);
    static const struct { const char *o, *h; int x; } PL[] = {
        {"ln1.w", "ln_1.weight", X_COPY},           {"ln1.b", "ln_1.bias", X_COPY},
        {"attn.qkv.w", "attn.c_attn.weight", X_T},  {"attn.qkv.b", "attn.c_attn.bias", X_COPY},
        {"attn.proj.w", "attn.c_proj.weight", X_T}, {"attn.proj.b", "attn.c_proj.bias", X_COPY},
        {"ln2.w", "ln_2.weight", X_COPY},           {"ln2.b", "ln_2.bias", X_COPY},
        {"mlp.fc.w", "mlp.c_fc.weight", X_T},       {"mlp.fc.b", "mlp.c_fc.bias", X_COPY},
        {"mlp.proj.w", "mlp.c_proj.weight", X_T},   {"mlp.proj.b", "mlp.c_proj.bias", X_COPY}};
    for (int l = 0; l < L; l++)
      for (size_t i = 0; i < sizeof PL / sizeof *PL; i++) {
        snprintf(a, sizeof a, "layers.%d.%s", l, PL[i].o);
        snprintf(b, sizeof b, "transformer.h.%d.%s", l, PL[i].h);
        ADD(a, b, PL[i].x, 0);
      }
    ADD("lnf.w", "transformer.ln_f.weight", X_COPY, 0);
    ADD("lnf.b", "transformer.ln_f.bias", X_COPY, 0);
  }
#undef ADD
  *out = m;
  return n;
}

/* HF tensor (rows × cols as HF stores it) → ours, or ours → HF (to_hf). */
static void xform(const hf_map *e, const tz_tensor_info *t, const float *src, float *dst, int to_hf) {
  size_t R = (size_t)t->shape[0], C = t->ndim == 2 ? (size_t)t->shape[1] : 1;
  if (e->x == X_COPY) {
    memcpy(dst, src, t->numel * sizeof(float));
  } else if (e->x == X_T) { /* ours [R, C] ↔ HF [C, R] */
    for (size_t r = 0; r < R; r++)
      for (size_t k = 0; k < C; k++) {
        if (to_hf) dst[k * R + r] = src[r * C + k];
        else dst[r * C + k] = src[k * R + r];
      }
  } else { /* X_ROPE: rows permuted within each head */
    size_t hd = R / (size_t)e->heads, half = hd / 2;
    for (size_t h = 0; h < (size_t)e->heads; h++)
      for (size_t j = 0; j < 2; j++)
        for (size_t i = 0; i < half; i++) {
          size_t ro = h * hd + 2 * i + j, rh = h * hd + j * half + i;
          if (to_hf) memcpy(dst + rh * C, src + ro * C, C * sizeof(float));
          else memcpy(dst + ro * C, src + rh * C, C * sizeof(float));
        }
  }
}

float *tz_params_relayout(const tz_config *from, const float *p, const tz_config *to) {
  tz_layout a, b;
  tz_layout_build(from, &a);
  tz_layout_build(to, &b);
  float *q = tz_calloc(b.total, sizeof(float));
  for (int i = 0; i < b.n; i++) {
    const tz_tensor_info *tb = &b.t[i], *ta = tz_layout_find(&a, tb->name);
    TZ_ASSERT(ta && ta->shape[1] == tb->shape[1]);
    size_t n = ta->numel < tb->numel ? ta->numel : tb->numel;
    memcpy(q + tb->off, p + ta->off, n * sizeof(float));
  }
  tz_layout_free(&a);
  tz_layout_free(&b);
  return q;
}

/* ------------------------------------------------------------------------------ config */

typedef struct {
  const cJSON *j;
  const char *where;
} cfgsrc;

static int get_int(cfgsrc s, const char *f, int def, int *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(s.j, f);
  if (!v || cJSON_IsNull(v)) {
    if (def < 0) return tz_err("%s: field '%s' is missing", s.where, f);
    *out = def;
    return 0;
  }
  if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 1 || v->valuedouble > (1 << 30))
    return tz_err("%s: field '%s' is not a positive integer", s.where, f);
  *out = (int)v->valuedouble;
  return 0;
}

static int get_num(cfgsrc s, const char *f, double def, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(s.j, f);
  if (!v || cJSON_IsNull(v)) {
    *out = def;
    return 0;
  }
  if (!cJSON_IsNumber(v) || !(v->valuedouble > 0)) return tz_err("%s: field '%s' is not a positive number", s.where, f);
  *out = v->valuedouble;
  return 0;
}

static int get_bool(cfgsrc s, const char *f, int def) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(s.j, f);
  return cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}

/* A field that must be absent, null, or have the value we implement. */
static int want_str(cfgsrc s, const char *f, const char *a, const char *b) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(s.j, f);
  if (!v || cJSON_IsNull(v)) return 0;
  if (cJSON_IsString(v) && (!strcmp(v->valuestring, a) || (b && !strcmp(v->valuestring, b)))) return 0;
  return tz_err("%s: field '%s' is %s; tezgah implements \"%s\"", s.where, f,
                cJSON_IsString(v) ? v->valuestring : "not a string", a);
}
static int want_false(cfgsrc s, const char *f) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(s.j, f);
  if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v)) return 0;
  return tz_err("%s: field '%s' is not false; tezgah does not implement it", s.where, f);
}

static int parse_config(const cJSON *j, const char *where, tz_config *c) {
  memset(c, 0, sizeof *c);
  cfgsrc s = {j, where};
  if (!cJSON_IsObject(j)) return tz_err("%s: not a JSON object", where);
  const cJSON *mt = cJSON_GetObjectItemCaseSensitive(j, "model_type");
  const cJSON *ar = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "architectures"), 0);
  const char *type = cJSON_IsString(mt) ? mt->valuestring : cJSON_IsString(ar) ? ar->valuestring : "(missing)";
  if (!strcmp(type, "llama") || !strcmp(type, "LlamaForCausalLM")) {
    c->arch = TZ_ARCH_LLAMA;
    double eps = 0, theta = 0;
    int hd = 0;
    if (get_int(s, "hidden_size", -1, &c->d_model) || get_int(s, "intermediate_size", -1, &c->d_ff) ||
        get_int(s, "num_hidden_layers", -1, &c->n_layer) || get_int(s, "num_attention_heads", -1, &c->n_head) ||
        get_int(s, "num_key_value_heads", c->n_head, &c->n_kv_head) || get_int(s, "vocab_size", -1, &c->vocab_size) ||
        get_int(s, "max_position_embeddings", 2048, &c->max_seq_len) || get_num(s, "rms_norm_eps", 1e-6, &eps) ||
        get_num(s, "rope_theta", 10000.0, &theta) || want_str(s, "hidden_act", "silu", NULL) ||
        want_false(s, "attention_bias") || want_false(s, "mlp_bias"))
      return -1;
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(j, "rope_scaling");
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(j, "rope_parameters"); /* transformers 5 */
    if (cJSON_IsObject(rp)) {
      cfgsrc r = {rp, where};
      if (want_str(r, "rope_type", "default", NULL) || get_num(r, "rope_theta", theta, &theta)) return -1;
    }
    if (rs && !cJSON_IsNull(rs)) {
      cfgsrc r = {rs, where};
      const cJSON *t = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
      if (!t) t = cJSON_GetObjectItemCaseSensitive(rs, "type");
      if (!cJSON_IsString(t) || strcmp(t->valuestring, "default"))
        return tz_err("%s: field 'rope_scaling' (%s) is not supported (only plain RoPE)", where,
                      cJSON_IsString(t) ? t->valuestring : "?");
      (void)r;
    }
    if (c->n_head > 0 && get_int(s, "head_dim", c->d_model / c->n_head, &hd)) return -1;
    if (hd * c->n_head != c->d_model)
      return tz_err("%s: field 'head_dim'=%d is not hidden_size/num_attention_heads=%d", where, hd,
                    c->d_model / c->n_head);
    c->norm_eps = (float)eps;
    c->rope_theta = (float)theta;
    c->tied = get_bool(s, "tie_word_embeddings", 0);
  } else if (!strcmp(type, "gpt2") || !strcmp(type, "GPT2LMHeadModel")) {
    c->arch = TZ_ARCH_GPT2;
    double eps = 0;
    if (get_int(s, "n_embd", -1, &c->d_model) || get_int(s, "n_layer", -1, &c->n_layer) ||
        get_int(s, "n_head", -1, &c->n_head) || get_int(s, "vocab_size", -1, &c->vocab_size) ||
        get_int(s, "n_positions", -1, &c->max_seq_len) || get_int(s, "n_inner", 4 * c->d_model, &c->d_ff) ||
        get_num(s, "layer_norm_epsilon", 1e-5, &eps) ||
        want_str(s, "activation_function", "gelu_new", "gelu_pytorch_tanh") ||
        want_false(s, "scale_attn_by_inverse_layer_idx"))
      return -1;
    if (!get_bool(s, "scale_attn_weights", 1))
      return tz_err("%s: field 'scale_attn_weights' is false; tezgah always scales by 1/sqrt(head_dim)", where);
    if (!get_bool(s, "tie_word_embeddings", 1))
      return tz_err("%s: field 'tie_word_embeddings' is false; tezgah's gpt2 ties lm_head to wte", where);
    c->norm_eps = (float)eps;
    c->tied = 1;
  } else {
    return tz_err("%s: model_type '%s' is not supported (llama / LlamaForCausalLM or gpt2 / GPT2LMHeadModel)",
                  where, type);
  }
  c->padded_vocab = c->vocab_size; /* HF stores exactly V rows */
  if (tz_config_finalize(c)) return tz_err_prefix(where);
  return 0;
}

/* The shortest decimal that reads back as the same float (1e-05, not 9.99999974737875e-06):
 * tz_f32_str's, as a double for cJSON. */
static double short_float(float f) {
  char buf[TZ_F32_STR];
  return strtod(tz_f32_str(f, buf), NULL);
}

static cJSON *config_json(const tz_config *c, int bos, int eos) {
  cJSON *j = cJSON_CreateObject();
  int llama = c->arch == TZ_ARCH_LLAMA;
  cJSON *ar = cJSON_AddArrayToObject(j, "architectures");
  cJSON_AddItemToArray(ar, cJSON_CreateString(llama ? "LlamaForCausalLM" : "GPT2LMHeadModel"));
  cJSON_AddStringToObject(j, "model_type", llama ? "llama" : "gpt2");
  if (llama) {
    cJSON_AddNumberToObject(j, "hidden_size", c->d_model);
    cJSON_AddNumberToObject(j, "intermediate_size", c->d_ff);
    cJSON_AddNumberToObject(j, "num_hidden_layers", c->n_layer);
    cJSON_AddNumberToObject(j, "num_attention_heads", c->n_head);
    cJSON_AddNumberToObject(j, "num_key_value_heads", c->n_kv_head);
    cJSON_AddNumberToObject(j, "head_dim", c->d_model / c->n_head);
    cJSON_AddNumberToObject(j, "vocab_size", c->vocab_size);
    cJSON_AddNumberToObject(j, "max_position_embeddings", c->max_seq_len);
    cJSON_AddNumberToObject(j, "rms_norm_eps", short_float(c->norm_eps));
    cJSON_AddNumberToObject(j, "rope_theta", short_float(c->rope_theta)); /* transformers 4 */
    cJSON *rp = cJSON_AddObjectToObject(j, "rope_parameters");             /* transformers 5 */
    cJSON_AddStringToObject(rp, "rope_type", "default");
    cJSON_AddNumberToObject(rp, "rope_theta", short_float(c->rope_theta));
    cJSON_AddStringToObject(j, "hidden_act", "silu");
    cJSON_AddBoolToObject(j, "attention_bias", 0);
    cJSON_AddNumberToObject(j, "attention_dropout", 0.0);
    cJSON_AddBoolToObject(j, "mlp_bias", 0);
    cJSON_AddNumberToObject(j, "pretraining_tp", 1);
  } else {
    cJSON_AddNumberToObject(j, "vocab_size", c->vocab_size);
    cJSON_AddNumberToObject(j, "n_positions", c->max_seq_len);
    cJSON_AddNumberToObject(j, "n_embd", c->d_model);
    cJSON_AddNumberToObject(j, "n_layer", c->n_layer);
    cJSON_AddNumberToObject(j, "n_head", c->n_head);
    cJSON_AddNumberToObject(j, "n_inner", c->d_ff);
    cJSON_AddStringToObject(j, "activation_function", "gelu_new");
    cJSON_AddNumberToObject(j, "layer_norm_epsilon", short_float(c->norm_eps));
    cJSON_AddNumberToObject(j, "resid_pdrop", 0.0); /* tezgah trains without dropout */
    cJSON_AddNumberToObject(j, "embd_pdrop", 0.0);
    cJSON_AddNumberToObject(j, "attn_pdrop", 0.0);
    cJSON_AddBoolToObject(j, "scale_attn_weights", 1);
    cJSON_AddBoolToObject(j, "scale_attn_by_inverse_layer_idx", 0);
    cJSON_AddBoolToObject(j, "reorder_and_upcast_attn", 0);
  }
  cJSON_AddBoolToObject(j, "tie_word_embeddings", c->tied);
  cJSON_AddNumberToObject(j, "initializer_range", 0.02);
  cJSON_AddBoolToObject(j, "use_cache", 1);
  cJSON_AddStringToObject(j, "torch_dtype", "float32"); /* transformers 4 */
  cJSON_AddStringToObject(j, "dtype", "float32");       /* transformers 5 */
  if (bos >= 0) cJSON_AddNumberToObject(j, "bos_token_id", bos);
  if (eos >= 0) cJSON_AddNumberToObject(j, "eos_token_id", eos);
  return j;
}

static int write_json(const char *dir, const char *name, cJSON *j) {
  char *path = tz_path_join(dir, name), *txt = cJSON_Print(j);
  size_t n = strlen(txt);
  txt = tz_realloc(txt, n + 2);
  txt[n] = '\n';
  txt[n + 1] = 0;
  int rc = tz_write_file_atomic(path, txt, n + 1);
  free(txt);
  free(path);
  cJSON_Delete(j);
  return rc;
}

/* ------------------------------------------------------------------------------ files */

int tz_hf_is_dir(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
  char *p = tz_path_join(path, "config.json");
  int yes = tz_exists(p);
  free(p);
  return yes;
}

#define MAX_SHARDS 256

typedef struct {
  tz_st_file f[MAX_SHARDS];
  int n;
} st_set;

static void set_close(st_set *s) {
  for (int i = 0; i < s->n; i++) tz_st_close(&s->f[i]);
  s->n = 0;
}

/* model.safetensors, or the files a model.safetensors.index.json names. */
static int set_open(const char *dir, st_set *s) {
  s->n = 0;
  char *single = tz_path_join(dir, "model.safetensors"), *index = tz_path_join(dir, "model.safetensors.index.json");
  int rc = -1;
  if (tz_exists(single)) {
    rc = tz_st_open(single, &s->f[0]);
    if (!rc) s->n = 1;
  } else if (tz_exists(index)) {
    char *txt;
    size_t len;
    if (!tz_read_file(index, &txt, &len)) {
      cJSON *j = tz_json_parse(txt, len, index);
      const cJSON *wm = cJSON_GetObjectItemCaseSensitive(j, "weight_map");
      if (!j) {
        /* tz_json_parse's error stands: where the text goes wrong */
      } else if (!cJSON_IsObject(wm)) {
        tz_err("%s: no 'weight_map' object", index);
      } else {
        rc = 0;
        for (const cJSON *e = wm->child; e && !rc; e = e->next) {
          if (!cJSON_IsString(e) || strchr(e->valuestring, '/')) {
            rc = tz_err("%s: weight_map entry '%s' is not a file name", index, e->string);
            break;
          }
          char *p = tz_path_join(dir, e->valuestring);
          int seen = 0;
          for (int i = 0; i < s->n && !seen; i++) seen = !strcmp(s->f[i].path, p);
          if (!seen && s->n == MAX_SHARDS) rc = tz_err("%s: more than %d shard files", index, MAX_SHARDS);
          else if (!seen && !(rc = tz_st_open(p, &s->f[s->n]))) s->n++;
          free(p);
        }
      }
      cJSON_Delete(j);
      free(txt);
    }
  } else {
    tz_err("%s: no model.safetensors (or model.safetensors.index.json) in this Hugging Face directory", dir);
  }
  free(single);
  free(index);
  if (rc) set_close(s);
  return rc;
}

static const tz_st_tensor *set_find(const st_set *s, const char *name, const tz_st_file **file) {
  for (int i = 0; i < s->n; i++) {
    const tz_st_tensor *t = tz_st_find(&s->f[i], name);
    if (t) {
      *file = &s->f[i];
      return t;
    }
  }
  return NULL;
}

static int ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && !strcmp(s + a - b, suf);
}

int tz_hf_load(const char *dir, tz_config *cfg, float **params, tz_tokenizer **tok) {
  *params = NULL;
  if (tok) *tok = NULL;
  char *cpath = tz_path_join(dir, "config.json"), *txt = NULL;
  size_t len;
  st_set *s = tz_calloc(1, sizeof *s);
  hf_map *map = NULL;
  float *p = NULL, *tmp = NULL;
  tz_layout lay = {0};
  tz_config c;
  int rc = -1, n = 0;
  struct stat sb;
  if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode)) { /* else "FILE/config.json: Not a directory" */
    tz_err("%s: not a directory (a Hugging Face model is a directory with config.json and model.safetensors)", dir);
    goto out;
  }
  if (tz_read_file(cpath, &txt, &len)) goto out;
  cJSON *j = tz_json_parse(txt, len, cpath); /* "DIR/config.json:3:14: invalid JSON near ..." */
  if (!j) goto out;
  int e = parse_config(j, cpath, &c);
  cJSON_Delete(j);
  if (e || set_open(dir, s)) goto out;
  n = build_map(&c, &map);
  tz_layout_build(&c, &lay);
  p = tz_calloc(lay.total, sizeof(float));
  size_t maxn = 0;
  for (int i = 0; i < lay.n; i++) maxn = lay.t[i].numel > maxn ? lay.t[i].numel : maxn;
  tmp = tz_malloc(maxn * sizeof(float));
  for (int i = 0; i < n; i++) {
    const tz_st_file *f = NULL;
    const tz_st_tensor *t = set_find(s, map[i].hf, &f);
    if (!t && !strncmp(map[i].hf, "transformer.", 12)) t = set_find(s, map[i].hf + 12, &f); /* hub GPT-2 files */
    if (!t) {
      tz_err("%s: missing tensor '%s' (needed by config.json)", s->n == 1 ? s->f[0].path : dir, map[i].hf);
      goto out;
    }
    const tz_tensor_info *ti = tz_layout_find(&lay, map[i].ours);
    TZ_ASSERT(ti);
    int64_t w0 = ti->shape[0], w1 = ti->ndim == 2 ? ti->shape[1] : 0;
    if (map[i].x == X_T) w0 = ti->shape[1], w1 = ti->shape[0];
    if (!t->elem) {
      tz_err("%s: tensor '%s' has dtype %s; only F32, F16 and BF16 are supported", f->path, t->name, t->dtype);
      goto out;
    }
    if (t->ndim != ti->ndim || t->shape[0] != w0 || (ti->ndim == 2 && t->shape[1] != w1)) {
      char got[64] = "", want[48];
      for (int k = 0, o = 0; k < t->ndim && o < 60; k++)
        o += snprintf(got + o, sizeof got - (size_t)o, "%s%lld", k ? ", " : "", (long long)t->shape[k]);
      if (ti->ndim == 2) snprintf(want, sizeof want, "%lld, %lld", (long long)w0, (long long)w1);
      else snprintf(want, sizeof want, "%lld", (long long)w0);
      tz_err("%s: tensor '%s' has shape [%s] but config.json needs [%s]", f->path, t->name, got, want);
      goto out;
    }
    if (tz_st_to_f32(f, t, tmp)) goto out;
    xform(&map[i], ti, tmp, p + ti->off, 0);
  }
  /* every tensor in the files must be one we read or a known duplicate / buffer */
  for (int k = 0; k < s->n; k++)
    for (int i = 0; i < s->f[k].n; i++) {
      const char *nm = s->f[k].t[i].name;
      int known = !strcmp(nm, "lm_head.weight") || ends_with(nm, ".attn.bias") || ends_with(nm, ".attn.masked_bias") ||
                  ends_with(nm, "rotary_emb.inv_freq");
      if (!strcmp(nm, "lm_head.weight") && !c.tied) known = 0;
      for (int m = 0; m < n && !known; m++)
        known = !strcmp(nm, map[m].hf) || (!strncmp(map[m].hf, "transformer.", 12) && !strcmp(nm, map[m].hf + 12));
      if (!known) {
        tz_err("%s: unexpected tensor '%s' (not part of a %s model as config.json describes it)", s->f[k].path, nm,
               c.arch == TZ_ARCH_LLAMA ? "LlamaForCausalLM" : "GPT2LMHeadModel");
        goto out;
      }
    }
  /* our default vocab padding (rows of zeros) for fast matmuls */
  tz_config padded = c;
  padded.padded_vocab = 0;
  if (tz_config_finalize(&padded)) goto out;
  *params = tz_params_relayout(&c, p, &padded);
  *cfg = padded;
  if (tok) {
    char *tp = tz_path_join(dir, "tokenizer.json");
    /* A tokenizer.json we cannot read (e.g. a sentencepiece-style one) is left out: the model
     * still loads, and the caller asks for --tokenizer when it needs one. */
    if (tz_exists(tp) && tz_tok_load(tp, tok)) {
      *tok = NULL;
      tz_err_clear();
    }
    if (*tok && tz_tok_vocab_size(*tok) > cfg->vocab_size) {
      tz_tok_free(*tok);
      *tok = NULL;
    }
    free(tp);
  }
  rc = 0;
out:
  free(tmp);
  free(p);
  free(map);
  tz_layout_free(&lay);
  set_close(s);
  free(s);
  free(txt);
  free(cpath);
  return rc;
}

/* Remove a directory tz_hf_save filled (plain files only, no subdirectories). Best effort. */
static void remove_flat_dir(const char *d) {
  DIR *dp = opendir(d);
  if (dp) {
    for (struct dirent *e; (e = readdir(dp));) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char *p = tz_path_join(d, e->d_name);
      unlink(p);
      free(p);
    }
    closedir(dp);
  }
  rmdir(d);
}

/* 1 when d is a directory with no entries. */
static int dir_is_empty(const char *d) {
  DIR *dp = opendir(d);
  if (!dp) return 0;
  int empty = 1;
  for (struct dirent *e; empty && (e = readdir(dp));) empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
  closedir(dp);
  return empty;
}

static void fsync_parent(const char *path) {
  char *copy = tz_strdup(path), *slash = strrchr(copy, '/');
  if (slash == copy) slash[1] = 0;
  else if (slash) *slash = 0;
  int fd = open(slash ? copy : ".", O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  free(copy);
}

static int hf_write_files(const char *dir, const tz_config *cfg, const float *params, const tz_tokenizer *tok,
                          char *note, size_t note_len);

/* Remove "<out>.tmp.<pid>" directories of exports whose process died (SIGKILL, OOM, power
 * loss) before renaming them: nobody else will. Only siblings named after `out`. */
static void sweep_dead_exports(const char *out) {
  char *copy = tz_strdup(out), *slash = strrchr(copy, '/');
  const char *parent = slash ? (slash == copy ? "/" : copy) : ".", *base = slash ? slash + 1 : copy;
  if (slash) *slash = 0;
  size_t bl = strlen(base);
  DIR *dp = opendir(parent);
  for (struct dirent *e; dp && (e = readdir(dp));) {
    if (strncmp(e->d_name, base, bl) || strncmp(e->d_name + bl, ".tmp.", 5) || !tz_tmp_name_orphaned(e->d_name)) continue;
    char *p = tz_path_join(parent, e->d_name);
    struct stat st;
    if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) remove_flat_dir(p);
    free(p);
  }
  if (dp) closedir(dp);
  free(copy);
}

/* All or nothing: the files go to a temporary sibling "<dir>.tmp.<pid>" that is renamed to
 * <dir> once complete (onto a missing or empty directory), and removed on any failure. */
int tz_hf_save(const char *dir, const tz_config *cfg, const float *params, const tz_tokenizer *tok, char *note,
               size_t note_len) {
  if (note && note_len) note[0] = 0;
  if (tok && tz_tok_vocab_size(tok) > cfg->vocab_size)
    return tz_err("%s: the tokenizer has %d tokens but the model's vocab_size is %d", dir, tz_tok_vocab_size(tok),
                  cfg->vocab_size);
  char *out = tz_strdup(dir);
  for (size_t n = strlen(out); n > 1 && out[n - 1] == '/'; n--) out[n - 1] = 0; /* "hf/" → "hf" */
  struct stat st;
  if (stat(out, &st) == 0 && !S_ISDIR(st.st_mode)) {
    tz_err("%s: exists and is not a directory; choose another --out", out);
    free(out);
    return -1;
  }
  if (stat(out, &st) == 0 && !dir_is_empty(out)) {
    tz_err("%s: directory is not empty; choose another --out (a new or empty directory)", out);
    free(out);
    return -1;
  }
  size_t tl = strlen(out) + 32;
  char *tmp = tz_malloc(tl);
  snprintf(tmp, tl, "%s.tmp.%ld", out, (long)getpid());
  remove_flat_dir(tmp); /* a leftover of an earlier process with our pid */
  sweep_dead_exports(out);
  int rc = -1;
  char *made = NULL; /* the shallowest directory tz_mkdirs_track made: tmp or a parent of out */
  if (!tz_mkdirs_track(tmp, &made) && !hf_write_files(tmp, cfg, params, tok, note, note_len)) {
    if (rename(tmp, out) != 0) {
      int e = errno;
      tz_err("%s: cannot move the finished export into place: %s", out, strerror(e));
    } else {
      fsync_parent(out);
      rc = 0;
    }
  }
  if (rc) {
    remove_flat_dir(tmp);
    if (made && strcmp(made, tmp)) { /* the parents of out that this export made, if empty */
      char *slash = strrchr(tmp, '/');
      *slash = 0;
      tz_rmdirs_upto(tmp, made);
      *slash = '/';
    }
    /* name the files as the user knows them: <dir>/x and <dir>, not <dir>.tmp.<pid>/x */
    const char *m = tz_errmsg();
    size_t k = strlen(tmp);
    if (m && !strncmp(m, tmp, k) && (m[k] == '/' || m[k] == ':')) {
      char *rest = tz_strdup(m + k);
      tz_err("%s%s", out, rest);
      free(rest);
    }
  }
  free(made);
  free(tmp);
  free(out);
  return rc;
}

static int hf_write_files(const char *dir, const tz_config *cfg, const float *params, const tz_tokenizer *tok,
                          char *note, size_t note_len) {
  tz_config c = *cfg;
  c.padded_vocab = c.vocab_size;
  float *p = tz_params_relayout(cfg, params, &c);
  tz_layout lay;
  tz_layout_build(&c, &lay);
  hf_map *map;
  int n = build_map(&c, &map), rc = -1;
  tz_st_out *outs = tz_calloc((size_t)n, sizeof *outs);
  float *hfp = tz_malloc(lay.total * sizeof(float));
  size_t off = 0;
  for (int i = 0; i < n; i++) {
    const tz_tensor_info *ti = tz_layout_find(&lay, map[i].ours);
    TZ_ASSERT(ti);
    xform(&map[i], ti, p + ti->off, hfp + off, 1);
    outs[i].name = map[i].hf;
    outs[i].ndim = ti->ndim;
    outs[i].shape[0] = map[i].x == X_T ? ti->shape[1] : ti->shape[0];
    outs[i].shape[1] = map[i].x == X_T ? ti->shape[0] : ti->shape[1];
    outs[i].data = hfp + off;
    off += ti->numel;
  }
  char *mpath = tz_path_join(dir, "model.safetensors");
  int bos = -1, eos = -1;
  if (tok && tz_tok_kind(tok) == TZ_TOKENIZER_LLAMA2C) bos = 1, eos = 2;
  else if (tok) bos = eos = tz_tok_eot(tok);
  if (tz_st_write(mpath, outs, n) || write_json(dir, "config.json", config_json(&c, bos, eos)))
    goto out;
  cJSON *g = cJSON_CreateObject();
  if (bos >= 0) cJSON_AddNumberToObject(g, "bos_token_id", bos);
  if (eos >= 0) cJSON_AddNumberToObject(g, "eos_token_id", eos);
  cJSON_AddBoolToObject(g, "do_sample", 1);
  cJSON_AddNumberToObject(g, "temperature", short_float(TZ_GEN_TEMPERATURE));
  cJSON_AddNumberToObject(g, "top_k", TZ_GEN_TOP_K);
  cJSON_AddNumberToObject(g, "top_p", short_float(TZ_GEN_TOP_P));
  cJSON_AddNumberToObject(g, "max_length", c.max_seq_len);
  if (write_json(dir, "generation_config.json", g)) goto out;
  if (tok && tz_tok_kind(tok) == TZ_TOKENIZER_BPE) {
    char *tp = tz_path_join(dir, "tokenizer.json");
    int e = tz_tok_save(tok, tp);
    free(tp);
    if (e) goto out;
    cJSON *tc = cJSON_CreateObject();
    cJSON_AddStringToObject(tc, "tokenizer_class", "PreTrainedTokenizerFast");
    if (eos >= 0) {
      const char *b;
      size_t bl;
      if (!tz_tok_token_bytes(tok, eos, &b, &bl)) {
        char *s = tz_malloc(bl + 1);
        memcpy(s, b, bl);
        s[bl] = 0;
        cJSON_AddStringToObject(tc, "bos_token", s);
        cJSON_AddStringToObject(tc, "eos_token", s);
        free(s);
      }
    }
    cJSON_AddNumberToObject(tc, "model_max_length", c.max_seq_len);
    cJSON_AddBoolToObject(tc, "clean_up_tokenization_spaces", 0);
    cJSON_AddBoolToObject(tc, "add_prefix_space", 0);
    if (write_json(dir, "tokenizer_config.json", tc)) goto out;
  } else if (tok && note) {
    snprintf(note, note_len, "tokenizer.json not written: exporting a %s tokenizer to Hugging Face is not supported "
             "(only byte-level BPE: ours and GPT-2's)", tz_tok_kind(tok) == TZ_TOKENIZER_LLAMA2C ? "llama2.c" : "llm.c");
  } else if (!tok && note) {
    snprintf(note, note_len, "tokenizer.json not written: the model has no tokenizer (give --tokenizer)");
  }
  rc = 0;
out:
  free(mpath);
  free(hfp);
  free(outs);
  free(map);
  free(p);
  tz_layout_free(&lay);
  return rc;
}
