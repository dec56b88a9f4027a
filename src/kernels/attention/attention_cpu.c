/* Causal grouped-query attention: llm.c attention_forward / attention_backward restructured
 * to save only the logsumexp per (row, head) (FlashAttention's statistic, Dao et al. 2022)
 * instead of the T×T probability matrix, and llama2.c forward()'s multihead loop for the
 * KV-cache form (Tq < Tk). GQA (Ainslie et al. 2023): kv head g = h / (n_head/n_kv_head). */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "kernels/common/lanes16.h"
#include "kernels/cpu_kernels.h"

/* The score rows of both passes come from K transposed into per-thread scratch, kT[i*ldk + j]
 * = k_j[i] (ldk = Tk rounded up to SJ, the columns past the keys zero): s_j = Σ_i q_i·kT[i][j]
 * is then a chain over i in index order, computed for SJ keys at once in SJ independent lanes
 * (one zmm, two ymm, four xmm: the same additions in the same order on every instruction set,
 * products and sums unfused, -ffp-contract=off). The forward and the backward compute s with
 * this one function, so the backward's recomputed probabilities see the forward's scores. */
#define SJ 64 /* keys per block of score lanes */

static int round_sj(int n) { return (n + SJ - 1) / SJ * SJ; }

/* kT [hd][ldk] = the hd columns at k (rows of stride `stride`), rows [0, n); columns [n, ldk)
 * zero. */
static void transpose_head(float *kT, int ldk, const float *k, size_t stride, int n, int hd) {
  for (int j = 0; j < n; j++)
    for (int i = 0; i < hd; i++) kT[(size_t)i * ldk + j] = k[(size_t)j * stride + i];
  for (int i = 0; i < hd; i++)
    for (int j = n; j < ldk; j++) kT[(size_t)i * ldk + j] = 0.0f;
}

/* s[j] = (Σ_{i<hd} q[i]·kT[i][j]) · scale for j < jn (jn a multiple of SJ, ≤ ldk). */
static void score_row(float *s, const float *q, const float *kT, int ldk, int hd, int jn,
                      float scale) {
  for (int j0 = 0; j0 < jn; j0 += SJ) {
    float acc[SJ] = {0};
    for (int i = 0; i < hd; i++) {
      const float *kr = kT + (size_t)i * ldk + j0;
      float qi = q[i];
      for (int jj = 0; jj < SJ; jj++) acc[jj] += qi * kr[jj];
    }
    for (int jj = 0; jj < SJ; jj++) s[j0 + jj] = acc[jj] * scale;
  }
}

/* out[i] = Σ_{j<L} p[j]·x_j[i] for i < hd, x_j the row at x + j·stride: two sums per element,
 * e over even j and o over odd j, each in j order, then out = e + o (two chains, so the adds
 * of consecutive keys overlap instead of each waiting for the last; the accumulators stay in
 * registers, 32 columns at a time, where the form out[i] += p_j·x_j[i] in memory waited on a
 * store and a load per key). The generic path (hd not a multiple of 32) does the same
 * arithmetic per element, so both give the same bits. */
static void weighted_rows(float *out, const float *p, const float *x, size_t stride, int L, int hd) {
  if (hd % 32 == 0) {
    for (int i0 = 0; i0 < hd; i0 += 32) {
      float e[32] = {0}, o[32] = {0};
      int j = 0;
      for (; j + 1 < L; j += 2) {
        const float *x0 = x + (size_t)j * stride + i0, *x1 = x0 + stride;
        float p0 = p[j], p1 = p[j + 1];
        for (int ii = 0; ii < 32; ii++) {
          e[ii] += p0 * x0[ii];
          o[ii] += p1 * x1[ii];
        }
      }
      if (j < L) {
        const float *x0 = x + (size_t)j * stride + i0;
        float p0 = p[j];
        for (int ii = 0; ii < 32; ii++) e[ii] += p0 * x0[ii];
      }
      for (int ii = 0; ii < 32; ii++) out[i0 + ii] = e[ii] + o[ii];
    }
    return;
  }
  for (int i = 0; i < hd; i++) {
    float e = 0.0f, o = 0.0f;
    for (int j = 0; j < L; j++) {
      float t = p[j] * x[(size_t)j * stride + i];
      if (j % 2) o += t;
      else e += t;
    }
    out[i] = e + o;
  }
}

/* Query rows per forward task: tasks are (b, h, block of QB rows); each transposes the keys its
 * rows see. */
#define QB 256

/* out [B*Tq, n_head*hd], lse [B, n_head, Tq] (or NONE); q rows of q_stride floats (head h
 * at column h*hd), Tq rows per batch; k, v rows of kv_stride floats (kv head g at g*hd),
 * Tk rows per batch. Query row t is at position q_pos0 + t and sees keys 0..q_pos0+t.
 *   s_j = q·k_j / √hd; p = softmax(s); out = Σ_j p_j v_j; lse = log Σ_j exp(s_j).
 * Each (b, h, block of QB query rows) is one task (static schedule) with K's visible rows
 * transposed and its score row in the thread's scratch (grown on the first call for a larger
 * Tk, then reused). */
void tz_cpu_attention_fwd(tz_backend *be, tz_slice out, tz_slice lse, tz_slice q, tz_slice k,
                          tz_slice v, int B, int Tq, int Tk, int q_pos0, int n_head,
                          int n_kv_head, int head_dim, int q_stride, int kv_stride) {
  tz_cpu_ctx *cx = TZ_CPU_CTX(be);
  int hd = head_dim, rep = n_head / n_kv_head, C = n_head * hd, ldk = round_sj(Tk);
  size_t sstride = tz_cpu_scratch(cx, (size_t)(hd + 1) * ldk);
  float *o = TZ_F(out), *ls = tz_present(lse) ? TZ_F(lse) : NULL;
  const float *qp = TZ_F(q), *kp = TZ_F(k), *vp = TZ_F(v);
  float scale = 1.0f / sqrtf((float)hd);
  int nqb = (Tq + QB - 1) / QB;
#pragma omp parallel for collapse(3) schedule(static) num_threads(cx->threads)
  for (int b = 0; b < B; b++)
    for (int h = 0; h < n_head; h++)
      for (int qb = 0; qb < nqb; qb++) {
        float *kT = cx->scratch + (size_t)omp_get_thread_num() * sstride, *s = kT + (size_t)hd * ldk;
        const float *kb = kp + (size_t)b * Tk * kv_stride + (size_t)(h / rep) * hd;
        const float *vb = vp + (size_t)b * Tk * kv_stride + (size_t)(h / rep) * hd;
        int t0 = qb * QB, t1 = t0 + QB < Tq ? t0 + QB : Tq;
        int Lmax = q_pos0 + t1 < Tk ? q_pos0 + t1 : Tk; /* keys the block's last row sees */
        transpose_head(kT, ldk, kb, kv_stride, Lmax, hd);
        for (int t = t0; t < t1; t++) {
          const float *qt = qp + ((size_t)b * Tq + t) * q_stride + (size_t)h * hd;
          int L = q_pos0 + t + 1; /* keys visible to this query */
          if (L > Tk) L = Tk;
          score_row(s, qt, kT, ldk, hd, round_sj(L), scale);
          float mx = -INFINITY;
          for (int j = 0; j < L; j++) mx = s[j] > mx ? s[j] : mx;
          float sum = tz_sumexp16(s, mx, L, s);
          float inv = 1.0f / sum;
          for (int j = 0; j < L; j++) s[j] *= inv; /* p_j */
          weighted_rows(o + ((size_t)b * Tq + t) * C + (size_t)h * hd, s, vb, kv_stride, L, hd);
          if (ls) ls[((size_t)b * n_head + h) * Tq + t] = mx + logf(sum);
        }
      }
}

/* Training form (Tq = Tk = T, q_pos0 = 0). dq, dk, dv written (=), same strides as q, k, v
 * (they may point into one fused dqkv buffer). With p_j = exp(s_j − lse) recomputed from
 * the saved lse, dp_j = dout·v_j and D = dout·out (= Σ_j p_j dp_j):
 *   ds_j = p_j (dp_j − D); dq = Σ_j ds_j k_j / √hd (weighted_rows); dk_j += ds_j q / √hd;
 *   dv_j += p_j dout.
 * One task per (b, kv head g): it owns dk, dv of that head and dq of its query heads, so
 * there are no shared writes and every sum runs in a fixed order (deterministic for any
 * thread count). The task transposes the head's K and V into the thread's scratch (score_row
 * gives s and dp for SJ keys at a time), where the rows p and ds also live. */
void tz_cpu_attention_bwd(tz_backend *be, tz_slice dq, tz_slice dk, tz_slice dv,
                          tz_slice dout, tz_slice q, tz_slice k, tz_slice v, tz_slice out,
                          tz_slice lse, int B, int T, int n_head, int n_kv_head, int head_dim,
                          int q_stride, int kv_stride) {
  tz_cpu_ctx *cx = TZ_CPU_CTX(be);
  int hd = head_dim, rep = n_head / n_kv_head, C = n_head * hd, ldk = round_sj(T);
  size_t sstride = tz_cpu_scratch(cx, (size_t)(2 * hd + 2) * ldk);
  float *dqp = TZ_F(dq), *dkp = TZ_F(dk), *dvp = TZ_F(dv);
  const float *dyp = TZ_F(dout), *qp = TZ_F(q), *kp = TZ_F(k), *vp = TZ_F(v), *op = TZ_F(out),
              *ls = TZ_F(lse);
  float scale = 1.0f / sqrtf((float)hd);
#pragma omp parallel for collapse(2) schedule(static) num_threads(cx->threads)
  for (int b = 0; b < B; b++)
    for (int g = 0; g < n_kv_head; g++) {
      float *kT = cx->scratch + (size_t)omp_get_thread_num() * sstride, *vT = kT + (size_t)hd * ldk;
      float *p = vT + (size_t)hd * ldk, *ds = p + ldk;
      size_t kvoff = (size_t)b * T * kv_stride + (size_t)g * hd;
      transpose_head(kT, ldk, kp + kvoff, kv_stride, T, hd);
      transpose_head(vT, ldk, vp + kvoff, kv_stride, T, hd);
      for (int j = 0; j < T; j++) {
        memset(dkp + kvoff + (size_t)j * kv_stride, 0, hd * sizeof(float));
        memset(dvp + kvoff + (size_t)j * kv_stride, 0, hd * sizeof(float));
      }
      for (int h = g * rep; h < (g + 1) * rep; h++)
        for (int t = 0; t < T; t++) {
          size_t qoff = ((size_t)b * T + t) * q_stride + (size_t)h * hd;
          size_t ooff = ((size_t)b * T + t) * C + (size_t)h * hd;
          const float *qt = qp + qoff, *dyt = dyp + ooff, *ot = op + ooff;
          float *dqt = dqp + qoff;
          float l = ls[((size_t)b * n_head + h) * T + t];
          float D = tz_dot16(dyt, ot, hd);
          int jn = round_sj(t + 1);
          score_row(p, qt, kT, ldk, hd, jn, scale);  /* s_j (scaled) */
          score_row(ds, dyt, vT, ldk, hd, jn, 1.0f); /* dp_j */
          for (int j = 0; j <= t; j++) {
            float pj = tz_expf(p[j] - l);
            p[j] = pj;
            ds[j] = pj * (ds[j] - D) * scale;
          }
          weighted_rows(dqt, ds, kp + kvoff, kv_stride, t + 1, hd);
          for (int j = 0; j <= t; j++) {
            float *dkj = dkp + kvoff + (size_t)j * kv_stride;
            float *dvj = dvp + kvoff + (size_t)j * kv_stride;
            float dsj = ds[j], pj = p[j];
#pragma omp simd
            for (int i = 0; i < hd; i++) {
              dkj[i] += dsj * qt[i];
              dvj[i] += pj * dyt[i];
            }
          }
        }
    }
}
