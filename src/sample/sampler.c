#include "sample/sampler.h"

#include <math.h>
#include <stdlib.h>

#include "core/error.h"

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
