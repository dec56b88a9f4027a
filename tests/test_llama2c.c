/* llama2.c parity on ../shared/llama2c (stories260K.bin + tok512.bin):
 * - `tezgah sample` reproduces run.c's two recorded outputs (reference_outputs.txt) byte for
 *   byte, with and without a prompt;
 * - logits: an independent float64 forward written here from run.c's description reads the
 *   legacy file itself (not through src/formats) and runs token by token; at every position
 *   of a 200-token sequence tezgah's CPU logits, both from a full forward and from KV-cache
 *   decoding (the sampling path), must satisfy  max_i |z_i − r_i| / max_i |r_i| ≤ 1e-5
 *   (z: tezgah fp32, r: float64 reference). The RoPE angle is formed as run.c defines it
 *   (float pos·freq, freq = 1/powf(10000, i/head_size)); everything else is double.
 *   The test also prints the smallest top-1/top-2 logit gap on the greedy path, the margin
 *   by which greedy decoding is safe from summation-order differences. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/fileio.h"
#include "formats/formats.h"
#include "model/model.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"

/* ---- run.c's reference outputs ---- */
static void test_reference_outputs(void **st) {
  char *ref = tz_test_shared("llama2c/reference_outputs.txt");
  char *model = tz_test_shared("llama2c/stories260K.bin"), *tok = tz_test_shared("llama2c/tok512.bin");
  char *txt;
  size_t len;
  assert_int_equal(tz_read_file(ref, &txt, &len), 0);
  char *dir = tz_test_tmpdir("llama2c");
  int blocks = 0;
  for (char *cmdl = strstr(txt, "=== COMMAND: "); cmdl; cmdl = strstr(cmdl + 1, "=== COMMAND: ")) {
    char *eol = strchr(cmdl, '\n');
    char *b = strstr(cmdl, "=== STDOUT BEGIN\n"), *e = strstr(cmdl, "=== STDOUT END");
    assert_non_null(b);
    assert_non_null(e);
    b += strlen("=== STDOUT BEGIN\n");
    /* the prompt, if any: run.c's -i argument (shell-escaped spaces) */
    char prompt[256] = "";
    char *pi = strstr(cmdl, " -i ");
    if (pi && pi < eol) {
      size_t k = 0;
      for (char *s = pi + 4; s < eol && k + 1 < sizeof prompt; s++)
        if (*s != '\\') prompt[k++] = *s;
      prompt[k] = 0;
    }
    char cmd[8192], out[4096];
    snprintf(out, sizeof out, "%s/out%d.txt", dir, blocks);
    snprintf(cmd, sizeof cmd, "%s sample '%s' --tokenizer '%s' --temperature 0 --tokens 200 %s%s%s > '%s'", TZ_CLI,
             model, tok, *prompt ? "--prompt '" : "", prompt, *prompt ? "'" : "", out);
    assert_int_equal(tz_test_sh(cmd), 0);
    char *got;
    size_t got_len;
    assert_int_equal(tz_read_file(out, &got, &got_len), 0);
    size_t want_len = (size_t)(e - b);
    if (got_len != want_len || memcmp(got, b, want_len))
      fail_msg("prompt '%s': output differs from run.c's (%zu vs %zu bytes):\n%s", prompt, got_len, want_len, got);
    printf("run.c output reproduced byte for byte (prompt '%s', %zu bytes)\n", prompt, got_len);
    free(got);
    blocks++;
  }
  assert_int_equal(blocks, 2);
  free(txt);
  free(dir);
  free(ref);
  free(model);
  free(tok);
}

/* ---- float64 reference forward, from the legacy file directly ---- */
typedef struct {
  int dim, hidden, L, nh, nkv, V, seq, shared;
  const float *emb, *rms_att, *wq, *wk, *wv, *wo, *rms_ffn, *w1, *w2, *w3, *rms_final, *wcls;
} ref_model;

static void ref_open(const float *base, const int32_t *h, ref_model *m) {
  m->dim = h[0]; m->hidden = h[1]; m->L = h[2]; m->nh = h[3]; m->nkv = h[4];
  m->shared = h[5] > 0; m->V = abs(h[5]); m->seq = h[6];
  int hd = m->dim / m->nh, kv = m->nkv * hd;
  size_t L = (size_t)m->L, C = (size_t)m->dim, H = (size_t)m->hidden;
  const float *p = base;
  m->emb = p; p += (size_t)m->V * C;
  m->rms_att = p; p += L * C;
  m->wq = p; p += L * C * C;
  m->wk = p; p += L * C * kv;
  m->wv = p; p += L * C * kv;
  m->wo = p; p += L * C * C;
  m->rms_ffn = p; p += L * C;
  m->w1 = p; p += L * C * H;
  m->w2 = p; p += L * C * H;
  m->w3 = p; p += L * C * H;
  m->rms_final = p; p += C;
  p += (size_t)m->seq * hd; /* freq_cis_real, freq_cis_imag */
  m->wcls = m->shared ? m->emb : p;
}

static void rmsnorm64(double *o, const double *x, const float *w, int n) {
  double ss = 0;
  for (int i = 0; i < n; i++) ss += x[i] * x[i];
  double r = 1.0 / sqrt(ss / n + 1e-5);
  for (int i = 0; i < n; i++) o[i] = w[i] * (r * x[i]);
}

static void matvec64(double *o, const double *x, const float *w, int n, int d) { /* W [d, n] */
  for (int i = 0; i < d; i++) {
    double s = 0;
    for (int j = 0; j < n; j++) s += (double)w[(size_t)i * n + j] * x[j];
    o[i] = s;
  }
}

/* logits [T, V] for tokens[0..T) */
static void ref_forward(const ref_model *m, const int32_t *tokens, int T, double *logits) {
  int C = m->dim, hd = C / m->nh, kv = m->nkv * hd, H = m->hidden, rep = m->nh / m->nkv;
  double *x = calloc(C, 8), *xb = calloc(C, 8), *xb2 = calloc(C, 8), *q = calloc(C, 8), *att = calloc(T, 8);
  double *hb = calloc(H, 8), *hb2 = calloc(H, 8);
  double *kc = calloc((size_t)m->L * T * kv, 8), *vc = calloc((size_t)m->L * T * kv, 8);
  for (int pos = 0; pos < T; pos++) {
    for (int i = 0; i < C; i++) x[i] = m->emb[(size_t)tokens[pos] * C + i];
    for (int l = 0; l < m->L; l++) {
      double *k = kc + ((size_t)l * T + pos) * kv, *v = vc + ((size_t)l * T + pos) * kv;
      rmsnorm64(xb, x, m->rms_att + (size_t)l * C, C);
      matvec64(q, xb, m->wq + (size_t)l * C * C, C, C);
      matvec64(k, xb, m->wk + (size_t)l * C * kv, C, kv);
      matvec64(v, xb, m->wv + (size_t)l * C * kv, C, kv);
      for (int i = 0; i < C; i += 2) { /* RoPE: adjacent pairs; angle as run.c forms it */
        int hi = i % hd;
        float freq = 1.0f / powf(10000.0f, hi / (float)hd);
        float val = pos * freq;
        double c = cos((double)val), s = sin((double)val);
        for (int which = 0; which < (i < kv ? 2 : 1); which++) {
          double *vec = which == 0 ? q : k;
          double v0 = vec[i], v1 = vec[i + 1];
          vec[i] = v0 * c - v1 * s;
          vec[i + 1] = v0 * s + v1 * c;
        }
      }
      for (int h = 0; h < m->nh; h++) {
        const double *qh = q + h * hd;
        double mx = -INFINITY;
        for (int t = 0; t <= pos; t++) {
          const double *kt = kc + ((size_t)l * T + t) * kv + (h / rep) * hd;
          double s = 0;
          for (int i = 0; i < hd; i++) s += qh[i] * kt[i];
          att[t] = s / sqrt((double)hd);
          if (att[t] > mx) mx = att[t];
        }
        double sum = 0;
        for (int t = 0; t <= pos; t++) sum += att[t] = exp(att[t] - mx);
        for (int i = 0; i < hd; i++) {
          double o = 0;
          for (int t = 0; t <= pos; t++) o += att[t] / sum * vc[((size_t)l * T + t) * kv + (h / rep) * hd + i];
          xb[h * hd + i] = o;
        }
      }
      matvec64(xb2, xb, m->wo + (size_t)l * C * C, C, C);
      for (int i = 0; i < C; i++) x[i] += xb2[i];
      rmsnorm64(xb, x, m->rms_ffn + (size_t)l * C, C);
      matvec64(hb, xb, m->w1 + (size_t)l * C * H, C, H);
      matvec64(hb2, xb, m->w3 + (size_t)l * C * H, C, H);
      for (int i = 0; i < H; i++) hb[i] = hb[i] / (1.0 + exp(-hb[i])) * hb2[i];
      matvec64(xb2, hb, m->w2 + (size_t)l * C * H, H, C);
      for (int i = 0; i < C; i++) x[i] += xb2[i];
    }
    rmsnorm64(xb, x, m->rms_final, C);
    matvec64(logits + (size_t)pos * m->V, xb, m->wcls, C, m->V);
  }
  free(x); free(xb); free(xb2); free(q); free(att); free(hb); free(hb2); free(kc); free(vc);
}

static double rel_err(const float *z, const double *r, int V) {
  double d = 0, mx = 0;
  for (int i = 0; i < V; i++) {
    d = fmax(d, fabs((double)z[i] - r[i]));
    mx = fmax(mx, fabs(r[i]));
  }
  return d / mx;
}

static void logits_check(const char *prompt) {
  char *model = tz_test_shared("llama2c/stories260K.bin"), *tokp = tz_test_shared("llama2c/tok512.bin");
  char *raw;
  size_t raw_len;
  assert_int_equal(tz_read_file(model, &raw, &raw_len), 0);
  ref_model rm;
  ref_open((const float *)(raw + 28), (const int32_t *)raw, &rm);
  /* a 200-position sequence: BOS + a story prompt, continued greedily by tezgah below */
  tz_tokenizer *tok;
  assert_int_equal(tz_tok_load(tokp, &tok), 0);
  int32_t *pids;
  size_t np;
  assert_int_equal(tz_tok_encode_llama2c(tok, prompt, 1, 0, &pids, &np), 0);
  enum { T = 200 };
  tz_config cfg;
  float *params;
  assert_int_equal(tz_llama2c_load(model, &cfg, &params), 0);
  assert_int_equal(cfg.vocab_size, rm.V);
  tz_backend *be = tz_backend_create("cpu", 1, NULL);
  tz_model *m;
  assert_int_equal(tz_model_create(be, &cfg, &m), 0);
  tz_model_set_params(m, params);
  assert_int_equal(tz_model_alloc_inference(m), 0);
  int V = cfg.vocab_size;
  int32_t ids[T];
  float *dec = malloc((size_t)T * V * sizeof(float)), *full = malloc((size_t)T * V * sizeof(float));
  for (size_t i = 0; i < np; i++) ids[i] = pids[i];
  for (int pos = 0; pos < T; pos++) { /* KV-cache decoding, one token at a time (greedy continuation) */
    tz_model_decode(m, ids + pos, 1, pos, dec + (size_t)pos * V);
    if (pos + 1 < T && pos + 1 >= (int)np) {
      int best = 0;
      for (int i = 1; i < V; i++)
        if (dec[(size_t)pos * V + i] > dec[(size_t)pos * V + best]) best = i;
      ids[pos + 1] = best;
    }
  }
  assert_int_equal(tz_model_alloc_training(m, 1, T), 0);
  tz_model_forward_logits(m, ids, full);
  double *ref = malloc((size_t)T * V * sizeof(double));
  ref_forward(&rm, ids, T, ref);
  double worst_dec = 0, worst_full = 0, min_gap = INFINITY;
  int argmax_mismatch = 0;
  for (int pos = 0; pos < T; pos++) {
    const double *r = ref + (size_t)pos * V;
    double ed = rel_err(dec + (size_t)pos * V, r, V), ef = rel_err(full + (size_t)pos * V, r, V);
    worst_dec = fmax(worst_dec, ed);
    worst_full = fmax(worst_full, ef);
    if (ed > 1e-5 || ef > 1e-5) fail_msg("position %d: relative logit error decode %.3e, full %.3e (> 1e-5)", pos, ed, ef);
    int b1 = 0, b2 = -1;
    for (int i = 1; i < V; i++)
      if (r[i] > r[b1]) b1 = i;
    for (int i = 0; i < V; i++)
      if (i != b1 && (b2 < 0 || r[i] > r[b2])) b2 = i;
    if (pos + 1 >= (int)np && pos + 1 < T) {
      min_gap = fmin(min_gap, r[b1] - r[b2]);
      argmax_mismatch += ids[pos + 1] != b1;
    }
  }
  printf("prompt '%s', stories260K, %d positions: max relative logit error vs float64: decode %.3e, full forward %.3e; "
         "greedy path: smallest top-1/top-2 gap %.3e, argmax disagreements %d\n", prompt, T, worst_dec, worst_full, min_gap,
         argmax_mismatch);
  assert_int_equal(argmax_mismatch, 0);
  free(ref); free(dec); free(full); free(params); free(pids); free(raw); free(model); free(tokp);
  tz_tok_free(tok);
  tz_model_free(m);
  be->destroy(be);
}

/* Several prompts (plain, empty, leading space, non-ASCII with byte fallback). */
static void test_logits_float64(void **st) {
  logits_check("Tom and his dog went to the big forest. They saw a tree");
  logits_check("");
  logits_check(" a leading space, then: Lily's mom");
  logits_check("\xc3\x9c" "n" "\xc3\xaf" "c" "\xc3\xb6" "d" "\xc3\xa9" " " "\xe2\x9c\x93" " z" "\xe2\x82\xac");
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_reference_outputs), cmocka_unit_test(test_logits_float64)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
