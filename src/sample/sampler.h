/* Picking the next token from logits: greedy (temperature 0), or temperature softmax with
 * optional top-k and top-p (nucleus, Holtzman et al. 2019) truncation, drawn with PCG32.
 * Greedy takes the first maximal index, as llama2.c run.c's sample_argmax. */
#ifndef TZ_SAMPLE_SAMPLER_H
#define TZ_SAMPLE_SAMPLER_H
#include <stdint.h>

#include "core/rng.h"
#include "model/model.h"

typedef struct {
  int V;
  float temperature; /* ≥ 0; 0 is greedy */
  int top_k;         /* 0 = off, else keep the k most likely */
  float top_p;       /* (0, 1]; 1 = off */
  tz_rng rng;
  double *prob; /* [V] scratch */
  int *idx;     /* [V] scratch */
} tz_sampler;

void tz_sampler_init(tz_sampler *s, int V, float temperature, int top_k, float top_p, uint64_t seed);
void tz_sampler_free(tz_sampler *s);
/* logits: V floats. Returns a token id in [0, V). Non-finite logits are never picked
 * unless all are non-finite (then 0). */
int tz_sampler_pick(tz_sampler *s, const float *logits);

/* Pick the next token of rows 0..B-1 of the model's decoding logits (m->infer.logits, row b
 * with sampler s[b]) into out[B] (host), leaving the ids in m->infer.tokens[0..B) as the
 * next tz_model_step's input. On the backend's `pick` op where it offers the settings (only
 * the ids come back; each row's one uniform draw is taken here, from s[b]'s generator, as
 * tz_sampler_pick would), else each row's logits are downloaded and picked on the host.
 * `host_logits`: V floats of scratch for the host path. Same seeds, same ids either way, up
 * to exp() rounding on the device and ties among equal probabilities at the top-k edge. */
void tz_sampler_pick_rows(tz_sampler *s, tz_model *m, int B, int32_t *out, float *host_logits);

/* `tezgah sample` (cli/cmd_sample.c) says that the process ends right after tz_sample without
 * the libraries' exit handlers (main.c's quick exit: the default after a CUDA backend, unless
 * TEZGAH_QUICK_EXIT=0). Then a successful tz_sample on CUDA leaves its model, backend and
 * checkpoint to the process's end instead of freeing them (0.010-0.013 s of cudaFree and
 * munmap on the H200, 2026-12-02; the driver frees them at exit anyway). Other backends (the
 * CPU paths that valgrind / ASan check) and library callers always free. */
void tz_sample_process_exits_after(int yes);

#endif
