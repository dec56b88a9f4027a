/* CUDA micro-benchmark of the memory-bound ops at the GPT-2 training shapes (B=16, T=1024,
 * V=50257 padded to 50304, bf16; C and n_layer from the arguments, 124M's 768 and 12 by
 * default; llama's SwiGLU/RMSNorm at d_ff 2048).
 *
 *   bench_cuda_ops [C n_layer [OPS]]   e.g. 1024 24 (350M), 1280 36 (774M), 1600 48 (1.5B);
 *                                      OPS: a comma list of ops to time (default: all), e.g.
 *                                      layernorm_bwd,bias_bwd (built only with the CUDA backend)
 *
 * Each case: fresh buffers with random contents, 3 warm-up calls, then 20 calls each timed
 * with a CUDA event pair on the backend's stream; the table shows the median ms, the
 * achieved GB/s over the op's minimal DRAM traffic (its "floor" bytes: every input read and
 * every output written once), the floor in ms at 4.0 TB/s (the H200's measured copy rate),
 * and ms per training step (median × calls per GPT-2 step). Env TEZGAH_CUDA_DEVICE picks the
 * GPU as for the CLI. Exit 77 when no CUDA device can be used. The backend's switches apply
 * (backend_cuda.c: TEZGAH_CUDA_LN_RB, _LN_WARPS; layernorm.cu: _LN_CHUNKS): run it once per
 * setting to compare them. The layernorm_bwd_rb row (when offered) is GPT-2's ln1/ln2 backward
 * with the projection's bias gradient; its calls/step (2·n_layer) then replace layernorm_bwd's
 * and bias_bwd [N,C]'s, which the table still counts as without it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cuda/cuda_internal.h"
#include "core/error.h"

#define REPS 20
#define WARM 3
#define PEAK_GBS 4000.0

enum { B = 16, T = 1024, V = 50257, VP = 50304, N = B * T, LL_FF = 2048 };
static int C = 768, FF = 4 * 768, L = 12; /* d_model, d_ff = 4·C, n_layer (argv) */

static tz_backend *be;
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) { /* uniform [-1, 1) */
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (float)((rng >> 40) * (1.0 / 8388608.0)) - 1.0f;
}
static uint16_t bf16_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

#define MAXBUF 64
static tz_buf *bufs[MAXBUF];
static int nbufs;
/* n act elements (bf16) with values scale·U[-1, 1) (+ shift). */
static tz_slice act(size_t n, float scale, float shift) {
  uint16_t *h = malloc(n * 2);
  for (size_t i = 0; i < n; i++) h[i] = bf16_bits(shift + scale * frand());
  tz_buf *b = be->alloc(be, n * 2, "bench act");
  be->upload(be, (tz_slice){b, 0}, h, n * 2);
  free(h);
  bufs[nbufs++] = b;
  return (tz_slice){b, 0};
}
static tz_slice f32(size_t n, float scale, float shift) {
  float *h = malloc(n * 4);
  for (size_t i = 0; i < n; i++) h[i] = shift + scale * frand();
  tz_buf *b = be->alloc(be, n * 4, "bench f32");
  be->upload(be, (tz_slice){b, 0}, h, n * 4);
  free(h);
  bufs[nbufs++] = b;
  return (tz_slice){b, 0};
}
static tz_slice i32(size_t n, int below) {
  int32_t *h = malloc(n * 4);
  for (size_t i = 0; i < n; i++) h[i] = (int32_t)((frand() + 1.0f) * 0.5f * below) % below;
  tz_buf *b = be->alloc(be, n * 4, "bench i32");
  be->upload(be, (tz_slice){b, 0}, h, n * 4);
  free(h);
  bufs[nbufs++] = b;
  return (tz_slice){b, 0};
}
static void release(void) {
  be->sync(be);
  while (nbufs) be->free(be, bufs[--nbufs]);
}

static int cmpf(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}
typedef void (*op_fn)(void *ctx);
static cudaEvent_t ev[2 * REPS];
static float time_op(op_fn f, void *ctx) {
  cudaStream_t st = tzc(be)->stream;
  for (int i = 0; i < WARM; i++) f(ctx);
  be->sync(be);
  for (int i = 0; i < REPS; i++) {
    cudaEventRecord(ev[2 * i], st);
    f(ctx);
    cudaEventRecord(ev[2 * i + 1], st);
  }
  cudaEventSynchronize(ev[2 * REPS - 1]);
  float ms[REPS];
  for (int i = 0; i < REPS; i++) cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]);
  qsort(ms, REPS, sizeof *ms, cmpf);
  return 0.5f * (ms[REPS / 2 - 1] + ms[REPS / 2]);
}
static double tot_ms, tot_floor;
static const char *ops_only; /* argv[3]: comma list of op names, NULL = all */
static int want(const char *op) {
  if (!ops_only) return 1;
  size_t n = strlen(op);
  for (const char *p = ops_only; (p = strstr(p, op)); p += n)
    if ((p == ops_only || p[-1] == ',') && (p[n] == ',' || p[n] == 0)) return 1;
  return 0;
}
static void row(const char *op, const char *shape, float ms, double bytes, int calls) {
  double floor_ms = bytes / (PEAK_GBS * 1e9) * 1e3;
  printf("%-14s %-22s %9.4f %8.0f %9.4f %6.0f%% %5d %9.3f %9.3f\n", op, shape, ms, bytes / (ms * 1e-3) / 1e9,
         floor_ms, 100.0 * floor_ms / ms, calls, ms * calls, floor_ms * calls);
  tot_ms += ms * calls, tot_floor += floor_ms * calls;
  fflush(stdout);
}

/* time op `f` on ctx and print its row, when `op` is wanted */
static void bench_case(const char *op, const char *shape, op_fn f, void *ctx, double bytes, int calls) {
  if (want(op)) row(op, shape, time_op(f, ctx), bytes, calls);
}

/* ---- the cases ---- */
typedef struct {
  tz_slice s[12];
  int i[4];
  size_t n;
  tz_range *rg;
  int nr;
} cx;

static void f_bias(void *p) {
  cx *c = p;
  be->bias_bwd(be, c->s[0], c->s[1], c->i[0], c->i[1]);
}
static void f_ln_bwd(void *p) {
  cx *c = p;
  be->layernorm_bwd(be, c->s[0], c->s[1], c->s[2], c->s[3], c->s[4], c->s[5], c->s[6], c->s[7], N, C);
}
static void f_ln_bwd_rb(void *p) {
  cx *c = p;
  be->layernorm_bwd_rb(be, c->s[0], c->s[1], c->s[2], c->s[8], c->s[3], c->s[4], c->s[5], c->s[6], c->s[7], N, C);
}
static void f_ln_fwd(void *p) {
  cx *c = p;
  be->layernorm_fwd(be, c->s[0], c->s[1], c->s[2], c->s[3], c->s[4], c->s[5], N, C, 1e-5f);
}
static void f_rms_bwd(void *p) {
  cx *c = p;
  be->rmsnorm_bwd(be, c->s[0], c->s[1], c->s[2], c->s[3], c->s[4], c->s[5], N, C);
}
static void f_xent(void *p) {
  cx *c = p;
  be->crossentropy(be, c->s[0], c->s[1], c->s[2], N, V, VP, 1.0f / N);
}
static void f_adamw(void *p) {
  cx *c = p;
  tz_adamw_hp hp = {6e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 10};
  be->adamw(be, c->s[0], c->s[1], c->s[2], c->s[3], c->rg, c->nr, &hp);
}
static void f_gelu_fwd(void *p) {
  cx *c = p;
  be->gelu_fwd(be, c->s[0], c->s[1], c->n);
}
static void f_gelu_bwd(void *p) {
  cx *c = p;
  be->gelu_bwd(be, c->s[0], c->s[1], c->s[2], c->n);
}
static void f_add(void *p) {
  cx *c = p;
  be->add(be, c->s[0], c->s[0], c->s[1], c->n);
}
static void f_swiglu_fwd(void *p) {
  cx *c = p;
  be->swiglu_fwd(be, c->s[0], c->s[1], N, LL_FF);
}
static void f_rope(void *p) { /* llama's qkv, head_dim 64, forward rotation */
  cx *c = p;
  be->rope(be, c->s[0], B, T, C / 64, C / 64, 64, 0, 10000.0f, 1);
}
static void f_swiglu_bwd(void *p) {
  cx *c = p;
  be->swiglu_bwd(be, c->s[0], c->s[1], c->s[2], N, LL_FF);
}
static void f_embed_bwd(void *p) {
  cx *c = p;
  be->embed_bwd(be, c->s[0], c->s[1], c->s[2], c->s[3], B, T, C, V);
}
static void f_fill(void *p) {
  cx *c = p;
  be->fill(be, c->s[0], 0.0f, c->n, TZ_BF16);
}

int main(int argc, char **argv) {
  if (argc == 3 || argc == 4) {
    C = atoi(argv[1]), L = atoi(argv[2]), FF = 4 * C;
    if (argc == 4) ops_only = argv[3];
    if (C <= 0 || C % 8 || L <= 0 || L > 64) {
      fprintf(stderr, "tezgah: error: bench_cuda_ops: C must be a positive multiple of 8 and n_layer in 1..64 (got %s %s)\n",
              argv[1], argv[2]);
      return 2;
    }
  } else if (argc != 1) {
    fprintf(stderr, "tezgah: error: usage: bench_cuda_ops [C n_layer [OPS]]\n");
    return 2;
  }
  be = tz_backend_create("cuda", 0, "bf16");
  if (!be) {
    fprintf(stderr, "bench_cuda_ops: CUDA unavailable: %s\n", tz_errmsg());
    return 77;
  }
  for (int i = 0; i < 2 * REPS; i++) cudaEventCreate(&ev[i]);
  struct cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, tzc(be)->device);
  printf("bench_cuda_ops: %s, %d SMs; bf16; C %d, n_layer %d; median of %d after %d warm-up; floor at %.1f TB/s\n",
         prop.name, prop.multiProcessorCount, C, L, REPS, WARM, PEAK_GBS / 1e3);
  char nc[32], nf[32];
  snprintf(nc, sizeof nc, "[%d,%d]", N, C);
  snprintf(nf, sizeof nf, "[%d,%d]", N, FF);
  printf("%-14s %-22s %9s %8s %9s %7s %5s %9s %9s\n", "op", "shape", "ms", "GB/s", "floor_ms", "%floor", "calls",
         "ms/step", "floor/st");
  cx c;
  /* bias_bwd: per step n_layer x (qkv 3C, attn proj C, fc 4C, fc proj C) */
  if (want("bias_bwd")) {
    const int cols[] = {3 * C, C, 4 * C};
    const int calls[] = {L, 2 * L, L};
    for (int k = 0; k < 3; k++) {
      memset(&c, 0, sizeof c);
      c.i[0] = N, c.i[1] = cols[k];
      c.s[0] = f32(cols[k], 0.1f, 0), c.s[1] = act((size_t)N * cols[k], 1, 0);
      char sh[64];
      snprintf(sh, sizeof sh, "[%d,%d]", N, cols[k]);
      bench_case("bias_bwd", sh, f_bias, &c, (double)N * cols[k] * 2 + 8.0 * cols[k], calls[k]);
      release();
    }
  }
  /* layernorm_bwd: dinp (+=), dw, db, dout, inp, w, mean, rstd */
  if (want("layernorm_bwd") || want("layernorm_fwd") || want("rmsnorm_bwd")) {
    memset(&c, 0, sizeof c);
    c.s[0] = act((size_t)N * C, 1, 0), c.s[1] = f32(C, 1, 0), c.s[2] = f32(C, 1, 0);
    c.s[3] = act((size_t)N * C, 1, 0), c.s[4] = act((size_t)N * C, 1, 0.3f), c.s[5] = act(C, 1, 0);
    c.s[6] = f32(N, 0.1f, 0), c.s[7] = f32(N, 0.2f, 1.0f);
    bench_case("layernorm_bwd", nc, f_ln_bwd, &c, 4.0 * N * C * 2 + 8.0 * N + 16.0 * C, 2 * L + 1);
    /* layernorm_bwd_rb (the same and dbias from dinp; GPT-2's ln1, ln2 where offered: then
     * layernorm_bwd runs once a step, for ln_f, and bias_bwd [N, C] not at all) */
    c.s[8] = f32(C, 1, 0);
    if (be->layernorm_bwd_rb)
      bench_case("layernorm_bwd_rb", nc, f_ln_bwd_rb, &c, 4.0 * N * C * 2 + 8.0 * N + 24.0 * C, 2 * L);
    /* layernorm_fwd: out, mean, rstd, inp, w, b (same buffers) */
    cx f = c;
    f.s[1] = c.s[6], f.s[2] = c.s[7], f.s[3] = c.s[4], f.s[4] = c.s[5], f.s[5] = c.s[5];
    bench_case("layernorm_fwd", nc, f_ln_fwd, &f, 2.0 * N * C * 2 + 8.0 * N, 2 * L + 1);
    /* rmsnorm_bwd: dinp, dw, dout, inp, w, rstd */
    f.s[0] = c.s[0], f.s[1] = c.s[1], f.s[2] = c.s[3], f.s[3] = c.s[4], f.s[4] = c.s[5], f.s[5] = c.s[7];
    bench_case("rmsnorm_bwd", nc, f_rms_bwd, &f, 4.0 * N * C * 2 + 4.0 * N + 8.0 * C, 2 * L + 1);
    release();
  }
  /* crossentropy in place */
  if (want("crossentropy")) {
    memset(&c, 0, sizeof c);
    c.s[0] = f32(N, 1, 0), c.s[1] = act((size_t)N * VP, 4, 0), c.s[2] = i32(N, V);
    bench_case("crossentropy", "[16384,50304]", f_xent, &c, 2.0 * N * VP * 2 + 8.0 * N, 1);
    release();
  }
  /* adamw over the GPT-2 parameter layout (n_layer blocks), with the bf16 mirror */
  if (want("adamw")) {
    tz_range rg[12 * 64 + 4]; /* n_layer ≤ 64 */
    int nr = 0;
    size_t off = 0;
#define RG(n_, d_) (rg[nr++] = (tz_range){off, (size_t)(n_), (d_)}, off += (size_t)(n_))
    RG((size_t)VP * C, 1.0f);
    RG((size_t)T * C, 1.0f);
    for (int l = 0; l < L; l++) {
      RG(C, 0), RG(C, 0), RG((size_t)C * 3 * C, 1), RG(3 * C, 0), RG((size_t)C * C, 1), RG(C, 0);
      RG(C, 0), RG(C, 0), RG((size_t)C * FF, 1), RG(FF, 0), RG((size_t)FF * C, 1), RG(C, 0);
    }
    RG(C, 0), RG(C, 0);
#undef RG
    memset(&c, 0, sizeof c);
    c.s[0] = f32(off, 0.02f, 0), c.s[1] = f32(off, 0.01f, 0), c.s[2] = f32(off, 0.001f, 0);
    c.s[3] = f32(off, 1e-6f, 2e-6f);
    if (be->params_mirror) be->params_mirror(be, c.s[0].buf);
    c.rg = rg, c.nr = nr;
    char sh[64];
    snprintf(sh, sizeof sh, "%zu_params", off);
    bench_case("adamw", sh, f_adamw, &c, 30.0 * off, 1);
    release();
  }
  /* gelu */
  if (want("gelu_fwd") || want("gelu_bwd") || want("fill")) {
    memset(&c, 0, sizeof c);
    c.n = (size_t)N * FF;
    c.s[0] = act(c.n, 1, 0), c.s[1] = act(c.n, 3, 0), c.s[2] = act(c.n, 1, 0);
    bench_case("gelu_fwd", nf, f_gelu_fwd, &c, 2.0 * c.n * 2, L);
    bench_case("gelu_bwd", nf, f_gelu_bwd, &c, 3.0 * c.n * 2, L);
    bench_case("fill", nf, f_fill, &c, 1.0 * c.n * 2, 1);
    release();
  }
  /* add (residual, out aliases a) */
  if (want("add")) {
    memset(&c, 0, sizeof c);
    c.n = (size_t)N * C;
    c.s[0] = act(c.n, 1, 0), c.s[1] = act(c.n, 1e-3f, 0);
    bench_case("add", nc, f_add, &c, 3.0 * c.n * 2, 2 * L);
    release();
  }
  /* swiglu (llama, d_ff 2048): out [N, F], gu [N, 2F] */
  if (want("swiglu_fwd") || want("swiglu_bwd")) {
    memset(&c, 0, sizeof c);
    c.s[0] = act((size_t)N * 2 * LL_FF, 1, 0), c.s[1] = act((size_t)N * 2 * LL_FF, 3, 0),
    c.s[2] = act((size_t)N * LL_FF, 1, 0);
    cx f = c;
    f.s[0] = c.s[2], f.s[1] = c.s[1];
    bench_case("swiglu_fwd", "[16384,2x2048] llama", f_swiglu_fwd, &f, 3.0 * N * LL_FF * 2, L);
    f.s[0] = c.s[0], f.s[1] = c.s[2], f.s[2] = c.s[1];
    bench_case("swiglu_bwd", "[16384,2x2048] llama", f_swiglu_bwd, &f, 5.0 * N * LL_FF * 2, L);
    release();
  }
  /* rope (llama: n_head = n_kv_head = C/64, head_dim 64) in place on qkv [N, 3C]: q and k read
   * and written; a forward and a backward call a layer */
  if (want("rope")) {
    memset(&c, 0, sizeof c);
    c.s[0] = act((size_t)N * 3 * C, 1, 0);
    bench_case("rope", "[16384,3C] llama q,k", f_rope, &c, 2.0 * N * 2 * C * 2, 2 * L);
    release();
  }
  /* embed_bwd: dwte, dwpe (fp32), dout, tok */
  if (want("embed_bwd")) {
    memset(&c, 0, sizeof c);
    c.s[0] = f32((size_t)VP * C, 0.01f, 0), c.s[1] = f32((size_t)T * C, 0.01f, 0);
    c.s[2] = act((size_t)N * C, 1, 0), c.s[3] = i32(N, V);
    bench_case("embed_bwd", nc, f_embed_bwd, &c, (double)N * C * 2 + 2.0 * T * C * 4 + 2.0 * N * C * 4 * 0.6, 1);
    release();
  }
  printf("%-14s %-22s %9s %8s %9s %6.0f%% %5s %9.3f %9.3f\n", "total", "(per GPT-2 step)", "", "", "",
         100.0 * tot_floor / tot_ms, "", tot_ms, tot_floor);
  for (int i = 0; i < 2 * REPS; i++) cudaEventDestroy(ev[i]);
  be->destroy(be);
  return 0;
}
