/* Causal grouped-query attention: llm.c attention_forward / attention_backward restructured
 * to save only the logsumexp per (row, head) (FlashAttention's statistic, Dao et al. 2022)
 * instead of the T×T probability matrix, and llama2.c forward()'s multihead loop for the
 * KV-cache form (Tq < Tk). GQA (Ainslie et al. 2023): kv head g = h / (n_head/n_kv_head). */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "kernels/common/lanes16.h"
#include "kernels/cpu_kernels.h"

/* out [B*Tq, n_head*hd], lse [B, n_head, Tq] (or NONE); q rows of q_stride floats (head h
 * at column h*hd), Tq rows per batch; k, v rows of kv_stride floats (kv head g at g*hd),
 * Tk rows per batch. Query row t is at position q_pos0 + t and sees keys 0..q_pos0+t.
 *   s_j = q·k_j / √hd; p = softmax(s); out = Σ_j p_j v_j; lse = log Σ_j exp(s_j).
 * Each (b, h, t) is one task (static schedule) with its score row in the thread's scratch
 * (grown on the first call for a larger Tk, then reused). */
void tz_cpu_attention_fwd(tz_backend *be, tz_slice out, tz_slice lse, tz_slice q, tz_slice k,
                          tz_slice v, int B, int Tq, int Tk, int q_pos0, int n_head,
                          int n_kv_head, int head_dim, int q_stride, int kv_stride) {
  tz_cpu_ctx *cx = TZ_CPU_CTX(be);
  size_t sstride = tz_cpu_scratch(cx, (size_t)Tk);
  float *o = TZ_F(out), *ls = tz_present(lse) ? TZ_F(lse) : NULL;
  const float *qp = TZ_F(q), *kp = TZ_F(k), *vp = TZ_F(v);
  int hd = head_dim, rep = n_head / n_kv_head, C = n_head * hd;
  float scale = 1.0f / sqrtf((float)hd);
#pragma omp parallel for collapse(3) schedule(static) num_threads(cx->threads)
  for (int b = 0; b < B; b++)
    for (int h = 0; h < n_head; h++)
      for (int t = 0; t < Tq; t++) {
        float *s = cx->scratch + (size_t)omp_get_thread_num() * sstride;
        const float *qt = qp + ((size_t)b * Tq + t) * q_stride + (size_t)h * hd;
        const float *kb = kp + (size_t)b * Tk * kv_stride + (size_t)(h / rep) * hd;
        const float *vb = vp + (size_t)b * Tk * kv_stride + (size_t)(h / rep) * hd;
        int L = q_pos0 + t + 1; /* keys visible to this query */
        if (L > Tk) L = Tk;
        float mx = -INFINITY;
        for (int j = 0; j < L; j++) {
          const float *kj = kb + (size_t)j * kv_stride;
          s[j] = tz_dot16(qt, kj, hd) * scale;
          mx = s[j] > mx ? s[j] : mx;
        }
        float sum = tz_sumexp16(s, mx, L, s);
        float inv = 1.0f / sum;
        float *ot = o + ((size_t)b * Tq + t) * C + (size_t)h * hd;
        for (int i = 0; i < hd; i++) ot[i] = 0.0f;
        for (int j = 0; j < L; j++) {
          const float *vj = vb + (size_t)j * kv_stride;
          float pj = s[j] * inv;
#pragma omp simd
          for (int i = 0; i < hd; i++) ot[i] += pj * vj[i];
        }
        if (ls) ls[((size_t)b * n_head + h) * Tq + t] = mx + logf(sum);
      }
}

/* Training form (Tq = Tk = T, q_pos0 = 0). dq, dk, dv written (=), same strides as q, k, v
 * (they may point into one fused dqkv buffer). With p_j = exp(s_j − lse) recomputed from
 * the saved lse, dp_j = dout·v_j and D = dout·out (= Σ_j p_j dp_j):
 *   ds_j = p_j (dp_j − D); dq = Σ_j ds_j k_j / √hd; dk_j += ds_j q / √hd; dv_j += p_j dout.
 * One task per (b, kv head g): it owns dk, dv of that head and dq of its query heads, so
 * there are no shared writes and every sum runs in a fixed order (deterministic for any
 * thread count). No scratch: p_j is used as soon as it is recomputed. */
void tz_cpu_attention_bwd(tz_backend *be, tz_slice dq, tz_slice dk, tz_slice dv,
                          tz_slice dout, tz_slice q, tz_slice k, tz_slice v, tz_slice out,
                          tz_slice lse, int B, int T, int n_head, int n_kv_head, int head_dim,
                          int q_stride, int kv_stride) {
  float *dqp = TZ_F(dq), *dkp = TZ_F(dk), *dvp = TZ_F(dv);
  const float *dyp = TZ_F(dout), *qp = TZ_F(q), *kp = TZ_F(k), *vp = TZ_F(v), *op = TZ_F(out),
              *ls = TZ_F(lse);
  int hd = head_dim, rep = n_head / n_kv_head, C = n_head * hd;
  float scale = 1.0f / sqrtf((float)hd);
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++)
    for (int g = 0; g < n_kv_head; g++) {
      size_t kvoff = (size_t)b * T * kv_stride + (size_t)g * hd;
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
          for (int i = 0; i < hd; i++) dqt[i] = 0.0f;
          for (int j = 0; j <= t; j++) {
            const float *kj = kp + kvoff + (size_t)j * kv_stride;
            const float *vj = vp + kvoff + (size_t)j * kv_stride;
            float *dkj = dkp + kvoff + (size_t)j * kv_stride;
            float *dvj = dvp + kvoff + (size_t)j * kv_stride;
            float s, dp;
            tz_dot16x2(qt, kj, dyt, vj, hd, &s, &dp);
            float pj = tz_expf(s * scale - l);
            float ds = pj * (dp - D) * scale;
#pragma omp simd
            for (int i = 0; i < hd; i++) {
              dqt[i] += ds * kj[i];
              dkj[i] += ds * qt[i];
              dvj[i] += pj * dyt[i];
            }
          }
        }
    }
}
