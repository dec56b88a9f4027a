/* Per-op wall-clock time of the CPU backend for `train --profile` (TEZGAH_PROFILE=1 when the
 * backend is created). CPU ops are synchronous (each has finished when its call returns), so
 * an op's time is CLOCK_MONOTONIC read before and after the call, all threads of its OpenMP
 * region included. tz_cpu_prof_attach swaps every op slot of the backend for a wrapper that
 * times the tz_cpu_* kernel behind it and adds into per-op totals (tz_prof_totals, backend.h),
 * printed by the backend-neutral tz_prof_print like the WebGPU and CUDA profiles.
 *
 * Rows: one per op; a matmul with a dimension >= TZ_PROF_BIG_DIM is its own row ("matmul_t
 * big": the lm_head, whose vocabulary dimension no layer has). One more row, "(outside ops)",
 * is the wall time since the last reset that no op took (the training loop's host work: data,
 * logging, checkpoints, the loss check), so the table's total is the wall time per step.
 * Rates: matmuls 2·M·N·K FLOP; attention the causal pairs' 4·hd FLOP (forward) and 8·hd
 * (backward: scores, dP, dQ, dK, dV); other ops GB/s of the bytes they nominally move. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "core/error.h"
#include "kernels/cpu_kernels.h"

#define TZ_PROF_BIG_DIM 16384

struct tz_cpu_prof {
  tz_prof_totals tot;
  double since_ns; /* wall clock at creation or the last reset */
};

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void add(tz_backend *be, const char *label, double t0, double flop, double bytes) {
  double dt = now_ns() - t0;
  tz_prof_totals *t = &TZ_CPU_CTX(be)->prof->tot;
  tz_prof_row *r = &t->row[tz_prof_label(t, label)];
  r->ns += dt;
  r->calls += 1;
  r->flop += flop;
  r->bytes += bytes;
}

#define F4 4.0 /* bytes per fp32 element */

static void p_upload(tz_backend *be, tz_slice dst, const void *src, size_t bytes) {
  double t0 = now_ns();
  TZ_CPU_CTX(be)->inner.upload(be, dst, src, bytes);
  add(be, "upload", t0, 0, 2.0 * bytes);
}
static void p_download(tz_backend *be, void *dst, tz_slice src, size_t bytes) {
  double t0 = now_ns();
  TZ_CPU_CTX(be)->inner.download(be, dst, src, bytes);
  add(be, "download", t0, 0, 2.0 * bytes);
}
static void p_copy(tz_backend *be, tz_slice dst, tz_slice src, size_t bytes) {
  double t0 = now_ns();
  TZ_CPU_CTX(be)->inner.copy(be, dst, src, bytes);
  add(be, "copy", t0, 0, 2.0 * bytes);
}
static void p_fill(tz_backend *be, tz_slice dst, float value, size_t n, tz_dtype dt) {
  double t0 = now_ns();
  tz_cpu_fill(be, dst, value, n, dt);
  add(be, "fill", t0, 0, F4 * n);
}
static void p_download_act(tz_backend *be, float *dst, tz_slice src, size_t n) {
  double t0 = now_ns();
  tz_cpu_download_act(be, dst, src, n);
  add(be, "download", t0, 0, 2 * F4 * n);
}
static void p_copy_rows(tz_backend *be, tz_slice dst, size_t dst_stride, tz_slice src,
                        size_t src_stride, int rows, int cols) {
  double t0 = now_ns();
  tz_cpu_copy_rows(be, dst, dst_stride, src, src_stride, rows, cols);
  add(be, "copy_rows", t0, 0, 2 * F4 * rows * cols);
}
static void p_embed_fwd(tz_backend *be, tz_slice out, tz_slice tok, tz_slice wte, tz_slice wpe,
                        int B, int T, int C, int V) {
  double t0 = now_ns();
  tz_cpu_embed_fwd(be, out, tok, wte, wpe, B, T, C, V);
  add(be, "embed_fwd", t0, 0, 3 * F4 * B * T * C);
}
static void p_embed_bwd(tz_backend *be, tz_slice dwte, tz_slice dwpe, tz_slice dout, tz_slice tok,
                        int B, int T, int C, int V) {
  double t0 = now_ns();
  tz_cpu_embed_bwd(be, dwte, dwpe, dout, tok, B, T, C, V);
  add(be, "embed_bwd", t0, 0, 5 * F4 * B * T * C);
}
static void p_rmsnorm_fwd(tz_backend *be, tz_slice out, tz_slice rstd, tz_slice inp, tz_slice w,
                          int N, int C, float eps) {
  double t0 = now_ns();
  tz_cpu_rmsnorm_fwd(be, out, rstd, inp, w, N, C, eps);
  add(be, "rmsnorm_fwd", t0, 0, 2 * F4 * N * C);
}
static void p_rmsnorm_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice dout, tz_slice inp,
                          tz_slice w, tz_slice rstd, int N, int C) {
  double t0 = now_ns();
  tz_cpu_rmsnorm_bwd(be, dinp, dw, dout, inp, w, rstd, N, C);
  add(be, "rmsnorm_bwd", t0, 0, 4 * F4 * N * C);
}
static void p_layernorm_fwd(tz_backend *be, tz_slice out, tz_slice mean, tz_slice rstd,
                            tz_slice inp, tz_slice w, tz_slice b, int N, int C, float eps) {
  double t0 = now_ns();
  tz_cpu_layernorm_fwd(be, out, mean, rstd, inp, w, b, N, C, eps);
  add(be, "layernorm_fwd", t0, 0, 2 * F4 * N * C);
}
static void p_layernorm_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice db,
                            tz_slice dout, tz_slice inp, tz_slice w, tz_slice mean,
                            tz_slice rstd, int N, int C) {
  double t0 = now_ns();
  tz_cpu_layernorm_bwd(be, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
  add(be, "layernorm_bwd", t0, 0, 4 * F4 * N * C);
}
static int big(int M, int K, int N) {
  return M >= TZ_PROF_BIG_DIM || K >= TZ_PROF_BIG_DIM || N >= TZ_PROF_BIG_DIM;
}
static void p_matmul_t(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, tz_slice bias, int M,
                       int K, int N, int acc) {
  double t0 = now_ns();
  tz_cpu_matmul_t(be, out, a, b, bias, M, K, N, acc);
  add(be, big(M, K, N) ? "matmul_t big" : "matmul_t", t0, 2.0 * M * N * K, 0);
}
static void p_matmul(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, int M, int K, int N,
                     int acc) {
  double t0 = now_ns();
  tz_cpu_matmul(be, out, a, b, M, K, N, acc);
  add(be, big(M, K, N) ? "matmul big" : "matmul", t0, 2.0 * M * N * K, 0);
}
static void p_matmul_at(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, int M, int K, int N,
                        int acc) {
  double t0 = now_ns();
  tz_cpu_matmul_at(be, out, a, b, M, K, N, acc);
  add(be, big(M, K, N) ? "matmul_at big" : "matmul_at", t0, 2.0 * M * N * K, 0);
}
static void p_bias_bwd(tz_backend *be, tz_slice db, tz_slice dout, int M, int N) {
  double t0 = now_ns();
  tz_cpu_bias_bwd(be, db, dout, M, N);
  add(be, "bias_bwd", t0, 0, F4 * M * N);
}
static void p_rope(tz_backend *be, tz_slice qkv, int B, int T, int n_head, int n_kv_head,
                   int head_dim, int pos0, float theta, int dir) {
  double t0 = now_ns();
  tz_cpu_rope(be, qkv, B, T, n_head, n_kv_head, head_dim, pos0, theta, dir);
  add(be, "rope", t0, 0, 2 * F4 * B * T * (n_head + n_kv_head) * head_dim);
}
/* query-key pairs a causal attention visits: Σ_t min(q_pos0 + t + 1, Tk) per (b, h) */
static double pairs(int B, int Tq, int Tk, int q_pos0, int n_head) {
  double s = 0;
  for (int t = 0; t < Tq; t++) s += q_pos0 + t + 1 < Tk ? q_pos0 + t + 1 : Tk;
  return s * B * n_head;
}
static void p_attention_fwd(tz_backend *be, tz_slice out, tz_slice lse, tz_slice q, tz_slice k,
                            tz_slice v, int B, int Tq, int Tk, int q_pos0, int n_head,
                            int n_kv_head, int head_dim, int q_stride, int kv_stride) {
  double t0 = now_ns();
  tz_cpu_attention_fwd(be, out, lse, q, k, v, B, Tq, Tk, q_pos0, n_head, n_kv_head, head_dim,
                       q_stride, kv_stride);
  add(be, "attention_fwd", t0, 4.0 * head_dim * pairs(B, Tq, Tk, q_pos0, n_head), 0);
}
static void p_attention_bwd(tz_backend *be, tz_slice dq, tz_slice dk, tz_slice dv, tz_slice dout,
                            tz_slice q, tz_slice k, tz_slice v, tz_slice out, tz_slice lse, int B,
                            int T, int n_head, int n_kv_head, int head_dim, int q_stride,
                            int kv_stride) {
  double t0 = now_ns();
  tz_cpu_attention_bwd(be, dq, dk, dv, dout, q, k, v, out, lse, B, T, n_head, n_kv_head,
                       head_dim, q_stride, kv_stride);
  add(be, "attention_bwd", t0, 10.0 * head_dim * pairs(B, T, T, 0, n_head), 0);
}
static void p_gelu_fwd(tz_backend *be, tz_slice out, tz_slice inp, size_t n) {
  double t0 = now_ns();
  tz_cpu_gelu_fwd(be, out, inp, n);
  add(be, "gelu_fwd", t0, 0, 2 * F4 * n);
}
static void p_gelu_bwd(tz_backend *be, tz_slice dinp, tz_slice inp, tz_slice dout, size_t n) {
  double t0 = now_ns();
  tz_cpu_gelu_bwd(be, dinp, inp, dout, n);
  add(be, "gelu_bwd", t0, 0, 3 * F4 * n);
}
static void p_swiglu_fwd(tz_backend *be, tz_slice out, tz_slice gu, int N, int F) {
  double t0 = now_ns();
  tz_cpu_swiglu_fwd(be, out, gu, N, F);
  add(be, "swiglu_fwd", t0, 0, 3 * F4 * N * F);
}
static void p_swiglu_bwd(tz_backend *be, tz_slice dgu, tz_slice dout, tz_slice gu, int N, int F) {
  double t0 = now_ns();
  tz_cpu_swiglu_bwd(be, dgu, dout, gu, N, F);
  add(be, "swiglu_bwd", t0, 0, 5 * F4 * N * F);
}
static void p_add(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, size_t n) {
  double t0 = now_ns();
  tz_cpu_add(be, out, a, b, n);
  add(be, "add", t0, 0, 3 * F4 * n);
}
/* bytes: the logits read twice and written once (crossentropy_cpu.c's two passes) */
static void p_crossentropy(tz_backend *be, tz_slice losses, tz_slice logits, tz_slice targets,
                           int N, int V, int Vp, float dscale) {
  double t0 = now_ns();
  tz_cpu_crossentropy(be, losses, logits, targets, N, V, Vp, dscale);
  add(be, "crossentropy", t0, 0, 3 * F4 * N * (double)Vp);
}
static void p_sum_sq(tz_backend *be, tz_slice out, tz_slice x, size_t n) {
  double t0 = now_ns();
  tz_cpu_sum_sq(be, out, x, n);
  add(be, "sum_sq", t0, 0, F4 * n);
}
/* bytes: params, grads, m, v read; params, m, v written */
static void p_adamw(tz_backend *be, tz_slice params, tz_slice grads, tz_slice m, tz_slice v,
                    const tz_range *ranges, int n_ranges, const tz_adamw_hp *hp) {
  double t0 = now_ns(), n = 0;
  tz_cpu_adamw(be, params, grads, m, v, ranges, n_ranges, hp);
  for (int r = 0; r < n_ranges; r++) n += ranges[r].n;
  add(be, "adamw", t0, 0, 7 * F4 * n);
}

void tz_cpu_profile_print(tz_backend *be, double steps) {
  if (!be || strcmp(be->name, "cpu") || !TZ_CPU_CTX(be)->prof) return;
  tz_cpu_prof *p = TZ_CPU_CTX(be)->prof;
  tz_prof_totals t = p->tot; /* a copy: the "(outside ops)" row is only for this table */
  double in_ops = 0;
  for (int i = 0; i < t.n; i++) in_ops += t.row[i].ns;
  tz_prof_row *o = &t.row[tz_prof_label(&t, "(outside ops)")];
  o->ns = now_ns() - p->since_ns - in_ops;
  if (o->ns < 0) o->ns = 0;
  o->calls = steps > 0 ? steps : 1; /* one stretch per step */
  char title[96];
  snprintf(title, sizeof title, "cpu profile (wall clock, %d threads", TZ_CPU_CTX(be)->threads);
  tz_prof_print(&t, title, steps);
}

void tz_cpu_profile_reset(tz_backend *be) {
  if (!be || strcmp(be->name, "cpu") || !TZ_CPU_CTX(be)->prof) return;
  tz_cpu_prof *p = TZ_CPU_CTX(be)->prof;
  tz_prof_clear(&p->tot);
  p->since_ns = now_ns();
}

void tz_cpu_prof_attach(tz_backend *be) {
  tz_cpu_ctx *cx = TZ_CPU_CTX(be);
  cx->prof = tz_calloc(1, sizeof *cx->prof);
  cx->prof->since_ns = now_ns();
  cx->inner = *be; /* the untimed slots (upload/download/copy are backend_cpu.c's statics) */
  be->upload = p_upload;
  be->download = p_download;
  be->copy = p_copy;
  be->fill = p_fill;
  be->download_act = p_download_act;
  be->copy_rows = p_copy_rows;
  be->embed_fwd = p_embed_fwd;
  be->embed_bwd = p_embed_bwd;
  be->rmsnorm_fwd = p_rmsnorm_fwd;
  be->rmsnorm_bwd = p_rmsnorm_bwd;
  be->layernorm_fwd = p_layernorm_fwd;
  be->layernorm_bwd = p_layernorm_bwd;
  be->matmul_t = p_matmul_t;
  be->matmul = p_matmul;
  be->matmul_at = p_matmul_at;
  be->bias_bwd = p_bias_bwd;
  be->rope = p_rope;
  be->attention_fwd = p_attention_fwd;
  be->attention_bwd = p_attention_bwd;
  be->gelu_fwd = p_gelu_fwd;
  be->gelu_bwd = p_gelu_bwd;
  be->swiglu_fwd = p_swiglu_fwd;
  be->swiglu_bwd = p_swiglu_bwd;
  be->add = p_add;
  be->crossentropy = p_crossentropy;
  be->sum_sq = p_sum_sq;
  be->adamw = p_adamw;
  be->profile_print = tz_cpu_profile_print;
  be->profile_reset = tz_cpu_profile_reset;
}
