/* TFLOP/s of the CUDA attention kernels (src/kernels/attention/attention.cu, attention_fa.cu) on the training shapes:
 * GPT-2 124M (B 16, 12 heads, T 1024, head_dim 64), the same with GQA (4 kv heads) and
 * head_dim 128 (6 heads). Causal FLOPs as FlashAttention counts them: forward 4·B·H·hd·P,
 * backward 2.5× that, P = T(T+1)/2 visible (query, key) pairs.
 * GPT-2 350M's (16 heads, hd 64) and 1.5B's (25 heads, hd 64) too.
 * Usage: bench_cuda_attention [reps] [precision] [path] [shapes] [split]
 *   reps (20), precision bf16 (default) | fp32, path fast | fallback | cudnn | auto (default: the
 *   backend's choice, or an outer TEZGAH_CUDA_ATTN; any other value sets TEZGAH_CUDA_ATTN; with
 *   cudnn the last line counts the calls cuDNN really ran), shapes all (default) | gpt2 (only
 *   the GPT-2 shapes of training: 124M, 350M, 1.5B), split: after each shape's row, the backward's kernels
 *   timed one by one with CUDA events (TEZGAH_CUDA_ATTN_TIMING=1, another reps calls, the host
 *   waiting between kernels; the row above is timed without): D = rowsum(dout ∘ out), fa_dkdv,
 *   fa_dq or fa_dq_ds, in ms a call (CUDA builds; the tensor-core path only).
 * Mean over reps after one warm-up call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "core/error.h"
#ifdef TZ_HAVE_CUDA
#include "backend/cuda/cuda_internal.h"
#include "kernels/attention/attention_cudnn.h"
#endif

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 20;
  const char *prec = argc > 2 ? argv[2] : "bf16";
  if (argc > 3 && strcmp(argv[3], "auto") != 0) setenv("TEZGAH_CUDA_ATTN", argv[3], 1);
  tz_backend *be = tz_backend_create("cuda", 0, prec);
  if (!be) {
    fprintf(stderr, "bench_cuda_attention: %s\n", tz_errmsg());
    return 1;
  }
  struct {
    const char *name;
    int B, T, H, KVH, hd;
  } shapes[] = {
      {"gpt2 (MHA, hd 64)", 16, 1024, 12, 12, 64},
      {"gqa 12/4, hd 64", 16, 1024, 12, 4, 64},
      {"hd 128, 6 heads", 16, 1024, 6, 6, 128},
      {"gpt2, T 2048, B 8", 8, 2048, 12, 12, 64},
      {"350m (MHA 16, hd 64)", 16, 1024, 16, 16, 64},
      {"1.5b (MHA 25, hd 64)", 16, 1024, 25, 25, 64},
  };
  const int only_gpt2 = argc > 4 && strcmp(argv[4], "gpt2") == 0;
  const int split = argc > 5 && strcmp(argv[5], "split") == 0;
  size_t es = tz_dtype_size(be->act);
  printf("attention, %s, path %s, mean of %d\n", prec, argc > 3 ? argv[3] : "auto", reps);
  printf("%-20s %9s %9s %9s %9s\n", "shape", "fwd ms", "TFLOP/s", "bwd ms", "TFLOP/s");
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    if (only_gpt2 && shapes[s].H != shapes[s].KVH) continue;
    if (only_gpt2 && (shapes[s].hd != 64 || shapes[s].T != 1024)) continue;
    int B = shapes[s].B, T = shapes[s].T, H = shapes[s].H, KVH = shapes[s].KVH, hd = shapes[s].hd;
    size_t N = (size_t)B * T, Q = (size_t)(H + 2 * KVH) * hd, C = (size_t)H * hd;
    tz_buf *qkv = be->alloc(be, N * Q * es, "qkv"), *dqkv = be->alloc(be, N * Q * es, "dqkv"),
           *out = be->alloc(be, N * C * es, "out"), *dout = be->alloc(be, N * C * es, "dout"),
           *lse = be->alloc(be, (size_t)B * H * T * 4, "lse");
    if (!qkv || !dqkv || !out || !dout || !lse) {
      fprintf(stderr, "bench_cuda_attention: %s\n", tz_errmsg());
      return 1;
    }
    /* values: a smooth non-constant pattern is not needed for timing; constants suffice */
    be->fill(be, (tz_slice){qkv, 0}, 0.05f, N * Q, be->act);
    be->fill(be, (tz_slice){dout, 0}, 0.01f, N * C, be->act);
    tz_slice q = {qkv, 0}, k = {qkv, (size_t)H * hd * es}, v = {qkv, (size_t)(H + KVH) * hd * es};
    tz_slice dq = {dqkv, 0}, dk = {dqkv, (size_t)H * hd * es},
             dv = {dqkv, (size_t)(H + KVH) * hd * es};
    double pairs = (double)T * (T + 1) / 2, ff = 4.0 * B * H * hd * pairs;
    double tf = 0, tb = 0;
    for (int r = 0; r < reps + 1; r++) {
      be->sync(be);
      double t0 = now();
      be->attention_fwd(be, (tz_slice){out, 0}, (tz_slice){lse, 0}, q, k, v, B, T, T, 0, H, KVH,
                        hd, (int)Q, (int)Q);
      be->sync(be);
      double t1 = now();
      be->attention_bwd(be, dq, dk, dv, (tz_slice){dout, 0}, q, k, v, (tz_slice){out, 0},
                        (tz_slice){lse, 0}, B, T, H, KVH, hd, (int)Q, (int)Q);
      be->sync(be);
      double t2 = now();
      if (r > 0) tf += t1 - t0, tb += t2 - t1;
    }
    tf /= reps, tb /= reps;
    printf("%-20s %9.3f %9.1f %9.3f %9.1f\n", shapes[s].name, tf * 1e3, ff / tf * 1e-12,
           tb * 1e3, 2.5 * ff / tb * 1e-12);
    fflush(stdout);
#ifdef TZ_HAVE_CUDA
    if (split) {
      double ms[3];
      setenv("TEZGAH_CUDA_ATTN_TIMING", "1", 1);
      tzc_attention_bwd_split(ms); /* reset */
      for (int r = 0; r < reps; r++)
        be->attention_bwd(be, dq, dk, dv, (tz_slice){dout, 0}, q, k, v, (tz_slice){out, 0},
                          (tz_slice){lse, 0}, B, T, H, KVH, hd, (int)Q, (int)Q);
      be->sync(be);
      unsetenv("TEZGAH_CUDA_ATTN_TIMING");
      long n = tzc_attention_bwd_split(ms);
      if (n > 0)
        printf("  split: D %.3f dkdv %.3f dq %.3f sum %.3f ms\n", ms[0] / n, ms[1] / n, ms[2] / n,
               (ms[0] + ms[1] + ms[2]) / n);
      else
        printf("  split: no tensor-core backward call timed\n");
      fflush(stdout);
    }
#else
    (void)split;
#endif
    be->free(be, qkv), be->free(be, dqkv), be->free(be, out), be->free(be, dout), be->free(be, lse);
  }
#ifdef TZ_HAVE_CUDA
  {
    long cf = 0, cb = 0;
    tzc_cudnn_attn_counts(&cf, &cb);
    const char *e = getenv("TEZGAH_CUDA_ATTN");
    if (e && !strcmp(e, "cudnn")) printf("cudnn calls: forward %ld, backward %ld\n", cf, cb);
  }
#endif
  be->destroy(be);
  return 0;
}
