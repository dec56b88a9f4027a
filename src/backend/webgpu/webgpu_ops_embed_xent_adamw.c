/* WebGPU backend ops at the model's ends and the optimizer: the embedding lookup (fp32 or
 * from the f16 weight mirror) and its deterministic backward (radix sort by token id), the
 * fused softmax cross-entropy, and AdamW (which also rewrites the f16 mirror when it is on). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/webgpu_internal.h"

/* ---- embedding ---- */
void wg_embed_fwd(tz_backend *be, tz_slice out, tz_slice tok, tz_slice wte, tz_slice wpe,
                         int B, int T, int C, int V) {
  wg_ctx *c = CTX(be);
  size_t N = (size_t)B * T;
  uint32_t w[24] = {0};
  w[8] = (uint32_t)N, w[9] = T, w[10] = C, w[11] = V, w[12] = tz_present(wpe);
  uint32_t gx, gy;
  grid1(N * C, &gx, &gy);
  if (wg_mirrored(c, wte) && (!tz_present(wpe) || wg_mirrored(c, wpe))) {
    /* the f16 tables in one binding of the mirror when they fit (else the fp32 path below) */
    size_t e_te = wte.off / 4, e_pe = tz_present(wpe) ? wpe.off / 4 : e_te;
    size_t lo = e_te < e_pe ? e_te : e_pe, hi = e_te + (size_t)V * C;
    if (tz_present(wpe) && e_pe + (size_t)T * C > hi) hi = e_pe + (size_t)T * C;
    if ((hi - lo) * 2 + 4 <= wg_cap_bytes(c)) {
      wg_mirror_refresh(c);
      uint32_t h0;
      wg_arg h = wg_mirror_range(c, lo, hi - lo, &h0);
      w[14] = (uint32_t)(e_te - lo) + h0, w[15] = (uint32_t)(e_pe - lo) + h0;
      wg_arg a[] = {wg_aa(c, out, N * C, "embed out"), A(tok, F4(N), "tokens")};
      wg_run_ex(c, "embed_lookup", wg_pipeline(c, "w16", "embed_lookup_w16", F16_PREFIX), w, 16, a, 2, gx, gy, 1, &h,
             -1);
      return;
    }
  }
  /* wte in pieces of rows [r0, r0 + nr) that fit one binding: each pass writes the rows whose
   * token falls in its piece (and the zero rows of invalid ids) */
  size_t nr = wg_cap_elems(c) / (size_t)C;
  if (nr == 0) nr = 1;
  int pi = wg_pipeline(c, "embed", "embed_lookup", "");
  for (size_t r0 = 0; r0 < (size_t)V; r0 += nr) {
    size_t k = (size_t)V - r0 < nr ? (size_t)V - r0 : nr;
    w[13] = (uint32_t)r0, w[14] = (uint32_t)k;
    wg_arg a[] = {wg_aa(c, out, N * C, "embed out"), A(tok, F4(N), "tokens"),
                  A(tz_f32(wte, r0 * C), F4(k * C), "wte"), A(wpe, F4((size_t)T * C), "wpe")};
    wg_run(c, "embed_lookup", pi, w, 15, a, 4, gx, gy, 1);
  }
}

/* Sorted indices per embed_dwte workgroup (the runs that start there are its): 8, or
 * TEZGAH_WEBGPU_EMBED_IPW=1..1024 (tuning: fewer, mostly idle workgroups against longer
 * chains of runs per workgroup). */
static uint32_t embed_ipw(void) {
  const char *e = getenv("TEZGAH_WEBGPU_EMBED_IPW");
  int v = e && *e ? atoi(e) : 8;
  return v >= 1 && v <= 1024 ? (uint32_t)v : 8;
}

/* Embedding backward (embed.wgsl; the CPU's tz_cpu_embed_bwd, bit for bit): dwpe[t] += Σ_b
 * dout[b·T + t] (embed_dwpe, thread per element), then dwte: a stable radix sort groups the
 * positions by token id (8-bit digits, ceil(bits / 8) passes of count / scan / scatter over
 * the integer scratch, bound at binding 9), and embed_dwte adds each id's dout rows in
 * position order into its dwte row, one dispatch per piece of rows that fits one binding.
 * No atomics: deterministic. dout, tokens and dwpe must each fit one binding. The tables are
 * argument 0, the only one embed.wgsl writes, so the read-only variant (ro_variant) reads
 * dout and the tokens through read-only bindings. */
void wg_embed_bwd(tz_backend *be, tz_slice dwte, tz_slice dwpe, tz_slice dout, tz_slice tok,
                         int B, int T, int C, int V) {
  wg_ctx *c = CTX(be);
  size_t N = (size_t)B * T;
  if (!N || C <= 0 || V <= 0) return;
  uint32_t w[24] = {0}, gx, gy;
  w[8] = (uint32_t)N, w[9] = T, w[10] = C, w[11] = V;
  if (tz_present(dwpe)) {
    w[12] = B;
    wg_arg a[] = {A(dwpe, F4((size_t)T * C), "dwpe"), wg_aa(c, dout, N * C, "dout"), A(tok, F4(N), "tokens")};
    grid1((uint64_t)T * C, &gx, &gy);
    wg_run(c, "embed_bwd_dwpe", wg_pipeline(c, "embed", "embed_dwpe", ""), w, 13, a, 3, gx, gy, 1);
  }
  /* keys: ids, INV = 2^bits − 1 (≥ V) for invalid ones; scratch layout in embed.wgsl */
  int bits = 1;
  while (bits < 32 && (1ull << bits) <= (uint64_t)V) bits++;
  int npass = (bits + 7) / 8;
  size_t nblk = (N + 255) / 256, words = 5 * N + 256 * nblk;
  wg_arg s = A(wg_scratch(be, F4(words)), F4(words), "embed sort");
  wg_arg at[] = {A(tok, F4(N), "tokens")};
  int pc = wg_pipeline(c, "embed", "embed_sort_count", ""), ps = wg_pipeline(c, "embed", "embed_sort_scan", ""),
      px = wg_pipeline(c, "embed", "embed_sort_scatter", "");
  gridn(nblk, &gx, &gy);
  for (int pass = 0; pass < npass; pass++) { /* pass k reads set k % 2 (tokens first), writes the other */
    w[12] = (uint32_t)nblk, w[14] = 8 * pass, w[15] = pass == 0;
    w[16] = pass % 2 ? (uint32_t)(2 * N) : 0, w[17] = pass % 2 ? 0 : (uint32_t)(2 * N);
    w[18] = (uint32_t)((1ull << bits) - 1);
    wg_run_ex(c, "embed_bwd_sort", pc, w, 19, at, 1, gx, gy, 1, &s, -1);
    wg_run_ex(c, "embed_bwd_sort", ps, w, 19, at, 1, 1, 1, 1, &s, -1);
    wg_run_ex(c, "embed_bwd_sort", px, w, 19, at, 1, gx, gy, 1, &s, -1);
  }
  /* dwte in pieces of rows [r0, r0 + nr) that fit one binding (u6 r0, u7 nr); workgroups of
   * ipw sorted indices × 256 columns */
  uint32_t nch = (uint32_t)((C + 255) / 256);
  uint32_t ipw = embed_ipw();
  w[12] = nch, w[16] = npass % 2 ? (uint32_t)(2 * N) : 0, w[17] = ipw;
  gridn((N + ipw - 1) / ipw * nch, &gx, &gy);
  int pd = wg_pipeline(c, "embed", "embed_dwte", "");
  size_t nr = wg_cap_elems(c) / (size_t)C;
  if (nr == 0) nr = 1;
  for (size_t r0 = 0; r0 < (size_t)V; r0 += nr) {
    size_t k = (size_t)V - r0 < nr ? (size_t)V - r0 : nr;
    w[14] = (uint32_t)r0, w[15] = (uint32_t)k;
    wg_arg a[] = {A(tz_f32(dwte, r0 * C), F4(k * C), "dwte"), wg_aa(c, dout, N * C, "dout")};
    wg_run_ex(c, "embed_bwd_dwte", pd, w, 18, a, 2, gx, gy, 1, &s, -1);
  }
}

/* ---- loss ---- */
void wg_crossentropy(tz_backend *be, tz_slice losses, tz_slice logits, tz_slice targets, int N, int V,
                            int Vp, float dscale) {
  wg_ctx *c = CTX(be);
  /* rows per piece: logits above one binding run in pieces (f16 logits, c->act_f16: by their
   * bytes, so GPT-2's [16384, 50304] in one, as the lm_head's matmuls take them;
   * TEZGAH_WEBGPU_F16_PIECES=0: fp32 elements, as before) */
  size_t rc = wg_cap_bytes(c) / (c->act_f16 && wg_f16_pieces() ? 2 : 4) / (size_t)Vp;
  if (rc == 0) rc = 1;
  /* Where the subgroup-matrix matmul runs (or TEZGAH_WEBGPU_GRAD16=1, tests), the dlogits are
   * also written as f16 into the f16 operand scratch buffer 0 (wg_grad16), recorded as the f16
   * copy of `logits`: the lm_head's dX = dlogits·W and dW += dlogitsᵀ·nf (both read dlogits as
   * their a operand, in row pieces) then take it instead of converting [N, Vp] twice
   * (sg_operand).
   * TEZGAH_WEBGPU_GRAD16=0 (or TEZGAH_WEBGPU_SG_REUSE=0): off. Not in eval (dscale 0: no backward
   * follows). */
  wg_arg hall = {{0}, 0, 0, 0};
  int x16 = dscale != 0.0f && Vp % 2 == 0 && wg_grad16(be, logits, (size_t)N * Vp, &hall);
  tz_buf *h16 = x16 ? hall.s.buf : NULL;
  /* softmax_xent_online4 (four columns per iteration; TEZGAH_WEBGPU_XENT4=0: softmax_xent_online,
   * one): max and Σ exp in one read of the row; softmax_xent (TEZGAH_WEBGPU_MEMOPS=0): two */
  const char *ent = !wg_memops_new() ? "softmax_xent"
                    : env_int("TEZGAH_WEBGPU_XENT4", 1) ? "softmax_xent_online4" : "softmax_xent_online";
  int pi = wg_pipeline(c, "crossentropy", ent, wg_out16_prefix_on(x16, 1));
  /* f16 logits: softmax_xent_v16 (8-byte accesses) where Vp and the logits allow (wg_v16_ok;
   * x16 is 0 with f16 activations) */
  size_t loff[] = {logits.off};
  if (!x16 && wg_memops_new() && wg_v16_ok(c, (size_t)Vp, loff, 1))
    pi = wg_pipeline(c, "crossentropy", "softmax_xent_v16", wg_v16_prefix(0));
  for (size_t r0 = 0; r0 < (size_t)N; r0 += rc) {
    size_t r = (size_t)N - r0 < rc ? (size_t)N - r0 : rc;
    uint32_t w[24] = {0};
    w[8] = (uint32_t)r, w[9] = V, w[10] = Vp, w[11] = fbits(dscale);
    wg_arg a[] = {A(tz_f32(losses, r0), F4(r), "losses"), wg_aa(c, wg_act_at(c, logits, r0 * Vp), r * Vp, "logits"),
                  A(tz_f32(targets, r0), F4(r), "targets")};
    tz_slice hs = {h16, r0 * Vp * 2};
    wg_arg h = A(hs, r * Vp * 2, "dlogits (f16 copy)");
    uint32_t gx, gy;
    gridn(r, &gx, &gy);
    wg_run_ex(c, "crossentropy", pi, w, 12, a, 3, gx, gy, 1, x16 ? &h : NULL, -1);
  }
  if (x16) wg_grad16_made(c, logits, (size_t)N * Vp); /* valid until the next other dispatch (sg_operand) */
}

/* ---- optimizer ---- */
void wg_adamw(tz_backend *be, tz_slice params, tz_slice grads, tz_slice m, tz_slice v,
                     const tz_range *ranges, int n_ranges, const tz_adamw_hp *hp) {
  wg_ctx *c = CTX(be);
  if (n_ranges <= 0) return;
  /* Pieces of at most cap elements (a range above one binding is cut: AdamW is elementwise),
   * grouped into batches whose span [base, end) fits one binding of each of the four buffers.
   * One dispatch per batch (one in all when the buffers fit: the common case); the table holds
   * every batch's (off − base, n, decay) rows back to back. */
  size_t cap = wg_cap_elems(c), np = 0;
  for (int r = 0; r < n_ranges; r++) np += ranges[r].n ? (ranges[r].n + cap - 1) / cap : 1;
  size_t *poff = tz_malloc(np * sizeof *poff), *pn = tz_malloc(np * sizeof *pn);
  float *pdec = tz_malloc(np * sizeof *pdec);
  np = 0;
  for (int r = 0; r < n_ranges; r++) {
    size_t o = 0;
    do {
      size_t k = ranges[r].n - o < cap ? ranges[r].n - o : cap;
      poff[np] = ranges[r].off + o, pn[np] = k, pdec[np] = ranges[r].decay, np++;
      o += k;
    } while (o < ranges[r].n);
  }
  /* batches: [bfirst[b], bfirst[b + 1]) pieces, span [bbase[b], bend[b]) */
  size_t *bfirst = tz_malloc((np + 1) * sizeof *bfirst), *bbase = tz_malloc(np * sizeof *bbase),
         *bend = tz_malloc(np * sizeof *bend), nb = 0;
  for (size_t i = 0; i < np; i++) {
    size_t lo = poff[i], hi = poff[i] + pn[i];
    if (nb && i - bfirst[nb - 1] < 65535) {
      size_t l2 = lo < bbase[nb - 1] ? lo : bbase[nb - 1], h2 = hi > bend[nb - 1] ? hi : bend[nb - 1];
      if (h2 - l2 <= cap) {
        bbase[nb - 1] = l2, bend[nb - 1] = h2;
        continue;
      }
    }
    bfirst[nb] = i, bbase[nb] = lo, bend[nb] = hi, nb++;
  }
  bfirst[nb] = np;
  size_t nw = np * 3;
  uint32_t *tab = tz_malloc(nw * 4);
  for (size_t b = 0; b < nb; b++)
    for (size_t i = bfirst[b]; i < bfirst[b + 1]; i++) {
      TZ_ASSERT(poff[i] - bbase[b] + pn[i] < 0xffffffffu);
      tab[3 * i] = (uint32_t)(poff[i] - bbase[b]);
      tab[3 * i + 1] = (uint32_t)pn[i];
      tab[3 * i + 2] = fbits(pdec[i]);
    }
  /* the range table is uploaded once and kept while it does not change */
  if (!c->ranges || c->ranges_words != nw || memcmp(c->ranges_host, tab, nw * 4)) {
    if (c->ranges && c->ranges->size < nw * 4) {
      wg_free(be, c->ranges);
      c->ranges = NULL;
    }
    if (!c->ranges) c->ranges = wg_alloc(be, nw * 4, "adamw ranges");
    if (!c->ranges) wg_fail(c, "%s%s(%zu, %llu)", tz_errmsg(), " ", nw, 0);
    tz_slice rs = {c->ranges, 0};
    wg_upload(be, rs, tab, nw * 4);
    free(c->ranges_host);
    c->ranges_host = tab;
    c->ranges_words = nw;
  } else {
    free(tab);
  }
  float b1 = hp->beta1, b2 = hp->beta2;
  uint32_t w[24] = {0};
  w[8] = fbits(hp->lr), w[9] = fbits(b1), w[10] = fbits(b2), w[11] = fbits(hp->eps),
  w[12] = fbits(hp->weight_decay), w[13] = fbits(hp->grad_scale),
  w[14] = fbits(1.0f - powf(b1, (float)hp->t)), w[15] = fbits(1.0f - powf(b2, (float)hp->t));
  int w16 = wg_mirrored(c, params); /* the same update, writing the f16 mirror too */
  if (w16) {
    wg_mirror_refresh(c);
    w[13] = 0, w[16] = fbits(hp->grad_scale);
  }
  int pi = w16 ? wg_pipeline(c, "w16", "adamw_w16", F16_PREFIX) : wg_pipeline(c, "adamw", "adamw", "");
  for (size_t b = 0; b < nb; b++) {
    size_t span = bend[b] - bbase[b], maxn = 0, n_b = bfirst[b + 1] - bfirst[b];
    for (size_t i = bfirst[b]; i < bfirst[b + 1]; i++)
      if (pn[i] > maxn) maxn = pn[i];
    tz_slice rs = {c->ranges, F4(3 * bfirst[b])};
    wg_arg a[] = {A(tz_f32(params, bbase[b]), F4(span), "params"), A(tz_f32(grads, bbase[b]), F4(span), "grads"),
                  A(tz_f32(m, bbase[b]), F4(span), "adamw m"), A(tz_f32(v, bbase[b]), F4(span), "adamw v"),
                  A(rs, F4(3 * n_b), "ranges")};
    uint64_t gx = (maxn + 255) / 256;
    if (gx > 512) gx = 512;
    if (gx == 0) gx = 1;
    if (w16) {
      uint32_t h0;
      wg_arg h = wg_mirror_range(c, params.off / 4 + bbase[b], span, &h0);
      w[17] = h0;
      wg_run_ex(c, "adamw", pi, w, 18, a, 5, (uint32_t)gx, (uint32_t)n_b, 1, &h, -1);
    } else {
      wg_run(c, "adamw", pi, w, 16, a, 5, (uint32_t)gx, (uint32_t)n_b, 1);
    }
  }
  free(poff), free(pn), free(pdec), free(bfirst), free(bbase), free(bend);
}
