#include "sample/sampler.h"

#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "backend/backend.h"

void tz_sampler_init(tz_sampler *s, int V, float temperature, int top_k, float top_p, uint64_t seed) {
  s->V = V;
  s->temperature = temperature;
  s->top_k = top_k;
  s->top_p = top_p;
  tz_rng_seed(&s->rng, seed, 0x5a3b1e);
  s->prob = tz_malloc((size_t)V * sizeof *s->prob);
  s->idx = tz_malloc((size_t)V * sizeof *s->idx);
}

void tz_sampler_free(tz_sampler *s) {
  free(s->prob);
  free(s->idx);
}

static const double *g_prob; /* qsort has no context argument */
static int by_prob_desc(const void *a, const void *b) {
  double pa = g_prob[*(const int *)a], pb = g_prob[*(const int *)b];
  if (pa != pb) return pa < pb ? 1 : -1;
  return *(const int *)a - *(const int *)b; /* ties: lower id first (deterministic) */
}

int tz_sampler_pick(tz_sampler *s, const float *logits) {
  int V = s->V, best = -1;
  for (int i = 0; i < V; i++)
    if (isfinite(logits[i]) && (best < 0 || logits[i] > logits[best])) best = i;
  if (best < 0) return 0;
  if (s->temperature <= 0) return best;
  /* softmax(logits / temperature) in double, max-subtracted */
  double mx = logits[best], sum = 0;
  for (int i = 0; i < V; i++) {
    double p = isfinite(logits[i]) ? exp((logits[i] - mx) / s->temperature) : 0.0;
    s->prob[i] = p;
    sum += p;
  }
  int n = V;
  for (int i = 0; i < V; i++) s->idx[i] = i;
  if ((s->top_k > 0 && s->top_k < V) || s->top_p < 1.0f) {
    g_prob = s->prob;
    qsort(s->idx, V, sizeof *s->idx, by_prob_desc);
    if (s->top_k > 0 && s->top_k < n) n = s->top_k;
    if (s->top_p < 1.0f) {
      double kept = 0, total = 0;
      for (int i = 0; i < n; i++) total += s->prob[s->idx[i]];
      for (int i = 0; i < n; i++) {
        kept += s->prob[s->idx[i]];
        if (kept >= s->top_p * total) {
          n = i + 1;
          break;
        }
      }
    }
    sum = 0;
    for (int i = 0; i < n; i++) sum += s->prob[s->idx[i]];
  }
  double r = tz_rng_uniform(&s->rng) * sum, acc = 0;
  for (int i = 0; i < n; i++) {
    acc += s->prob[s->idx[i]];
    if (r < acc) return s->idx[i];
  }
  return s->idx[n - 1];
}

void tz_sampler_pick_rows(tz_sampler *s, tz_model *m, int B, int32_t *out, float *host_logits) {
  tz_backend *be = m->be;
  tz_acts *a = &m->infer;
  int V = m->cfg.vocab_size, Vp = m->cfg.padded_vocab;
  if (be->pick) {
    /* one draw per row when sampling, as tz_sampler_pick takes it; kept only if the op ran */
    double *r = tz_malloc((size_t)B * sizeof *r);
    tz_rng *saved = tz_malloc((size_t)B * sizeof *saved);
    for (int b = 0; b < B; b++) {
      saved[b] = s[b].rng;
      r[b] = s[0].temperature > 0 ? tz_rng_uniform(&s[b].rng) : 0.0;
    }
    int done = be->pick(be, a->tokens, a->logits, B, V, Vp, s[0].temperature, s[0].top_k, s[0].top_p, r);
    if (!done)
      for (int b = 0; b < B; b++) s[b].rng = saved[b];
    free(r);
    free(saved);
    if (done) {
      be->download(be, out, a->tokens, (size_t)B * sizeof *out);
      return;
    }
  }
  for (int b = 0; b < B; b++) {
    be->download_act(be, host_logits, tz_elems(a->logits, (size_t)b * Vp, be->act), (size_t)V);
    out[b] = tz_sampler_pick(&s[b], host_logits);
  }
  be->upload(be, a->tokens, out, (size_t)B * sizeof *out);
}
