/* Byte-level BPE encoding on the GPU (tz_tok_encode_webgpu, kernels bpe_encode.wgsl): pre-tokens
 * found on the GPU from the raw bytes (tok_webgpu_pretok.c: the GPT-2 pattern's pieces by a
 * byte-local rule, character classes from PCRE2), BPE on the GPU (one thread per pre-token; up
 * to 64 bytes in private arrays, longer ones with a heap in scratch memory), ids compacted on the
 * GPU; the host cuts ~16 MiB batches at context-free boundaries, uploads them and copies ids out
 * (two readback buffers in flight). Fallback: pre-tokens from the CPU (PCRE2, parallel): all
 * threads pre-tokenize the next 16 MiB segment while the master thread feeds the last one to the
 * GPU and copies older ids out. Same ids as tz_tok_encode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/error.h"
#include "tokenizer/tok_webgpu_stages.h"

static const char *const encode_entries[] = {"encode_short", "encode_long", "enc_bsum", "enc_bscan", "enc_scatter", NULL};

tz_tok_gpu_enc_stats tz_tg_last_enc;

void tz_tok_webgpu_encode_stats(tz_tok_gpu_enc_stats *out) { *out = tz_tg_last_enc; }

/* A buffer of at least `need` bytes: kept when large enough, else replaced (1.25x slack). */
static void ensure(WGPUBuffer *b, uint64_t *have, uint64_t need, WGPUBufferUsage usage, const char *label) {
  if (*b && *have >= need) return;
  tz_tg_drop(b);
  /* a quarter more for the next, larger batch, but never past what one storage binding takes: a
   * batch sized to fit the limit (the encoder's scratch, 36 bytes per byte of text) must not be
   * pushed over it by the headroom (lavapipe's 128 MiB: a 3 MB text without a newline did) */
  uint64_t lim = tz_tg_bind_limit();
  lim = lim / 16 * 16;
  *have = need + need / 4 + 16;
  if (*have > lim && need <= lim) *have = lim;
  *b = tz_tg_mkbuf(*have, usage, label);
}

/* A pre-token too long for the GPU's one-thread heap loop (bpe_pretok.wgsl, pt_len / pt_huge):
 * piece index, start byte and length in the batch, ids before it in the batch's GPU ids. */
typedef struct {
  uint32_t k, s, len, off;
} huge_piece;

static int huge_cmp(const void *a, const void *b) {
  uint32_t x = ((const huge_piece *)a)->k, y = ((const huge_piece *)b)->k;
  return x < y ? -1 : x > y;
}

/* dst[0, n) = src[0, n), in 1 MiB pieces over the threads when large (outside a parallel
 * region): the copy touches the id array's fresh pages, whose faults cost as much as the copy */
static void copy_ids(int32_t *dst, const uint32_t *src, size_t n) {
  size_t chunk = 1u << 18;
#pragma omp parallel for schedule(static) if (n > 4 * chunk)
  for (size_t c = 0; c < n; c += chunk) memcpy(dst + c, src + c, (n - c < chunk ? n - c : chunk) * 4);
}

/* The batch's ids with the huge pieces' ids (encoded here, on all threads) spliced in at their
 * places: gpu[0, n) has none of theirs. Appends to out[o ..]; returns the count or -1. */
static long splice_huge(const enc_slot *s, const uint32_t *gpu, size_t n, const uint32_t *hw, uint32_t nh,
                        int32_t *dst) {
  tz_tg_last_enc.huge_pieces += nh;
  huge_piece *hp = tz_malloc((size_t)nh * sizeof *hp);
  memcpy(hp, hw, (size_t)nh * sizeof *hp);
  qsort(hp, nh, sizeof *hp, huge_cmp);
  int32_t **cid = tz_calloc(nh, sizeof *cid);
  size_t *cn = tz_calloc(nh, sizeof *cn);
  char errmsg[TZ_ERR_MAX] = "";
  int failed = 0;
#pragma omp parallel for schedule(dynamic, 1)
  for (uint32_t j = 0; j < nh; j++) {
    /* a pre-token alone is pre-tokenized into itself, so the CPU encoder gives its ids */
    if (tz_tok_encode(s->t, s->text + hp[j].s, hp[j].len, 0, &cid[j], &cn[j])) {
#pragma omp critical(tz_tok_gpu_huge)
      {
        if (!failed) snprintf(errmsg, sizeof errmsg, "%s", tz_errmsg());
        failed = 1;
      }
    }
  }
  long o = 0;
  size_t pos = 0;
  for (uint32_t j = 0; j < nh && !failed; j++) {
    if (hp[j].off < pos || hp[j].off > n) {
      snprintf(errmsg, sizeof errmsg, "webgpu tokenizer: a long pre-token's id offset %u is out of order", hp[j].off);
      failed = 1;
      break;
    }
    copy_ids(dst + o, gpu + pos, hp[j].off - pos);
    o += (long)(hp[j].off - pos);
    if (cn[j]) memcpy(dst + o, cid[j], cn[j] * sizeof *dst);
    o += (long)cn[j];
    pos = hp[j].off;
  }
  if (!failed) copy_ids(dst + o, gpu + pos, n - pos), o += (long)(n - pos);
  for (uint32_t j = 0; j < nh; j++) free(cid[j]);
  free(cid), free(cn), free(hp);
  return failed ? tz_err("%s", errmsg) : o;
}

/* Wait for slot s's batch, append its ids to out. */
static int finish_slot(enc_slot *s, id_vec *out) {
  if (!s->busy) return 0;
  s->busy = 0;
  double t0 = tz_tg_wall();
  int rc = 0;
  if (tz_tg_wait_future(s->fut) || s->st != 1) {
    rc = tz_tg_check_dev("encode readback");
    if (!rc) rc = tz_err("webgpu tokenizer: encode readback failed");
    tz_tg_last_enc.wait_s += tz_tg_wall() - t0;
    return rc;
  }
  tz_tg_last_enc.wait_s += tz_tg_wall() - t0;
  const uint32_t *p = W.wgpuBufferGetConstMappedRange(s->rb, 0, s->mapped_size);
  if (!p) rc = tz_err("webgpu tokenizer: encode readback has no mapped range");
  else if ((uint64_t)p[0] + 1 > s->mapped_size / 4) rc = tz_err("webgpu tokenizer: encode produced %u ids, above its bound", p[0]);
  else {
    size_t n = p[0], extra = 0;
    uint32_t nh = 0;
    const uint32_t *hw = NULL;
    if (s->huge_at) {
      nh = p[s->huge_at / 4 + 3];
      hw = p + s->huge_at / 4 + 4;
      if (s->huge_at + 16 + 16 * (uint64_t)nh > s->mapped_size)
        rc = tz_err("webgpu tokenizer: %u long pre-tokens, above their bound", nh);
      for (uint32_t j = 0; j < nh && !rc; j++) extra += hw[4 * j + 2]; /* <= 1 id per byte */
    }
    if (!rc && out->n + n + extra > out->cap) {
      while (out->n + n + extra > out->cap) out->cap = out->cap ? out->cap * 2 : 1u << 16;
      out->v = tz_realloc(out->v, out->cap * sizeof *out->v);
    }
    if (!rc && nh == 0) {
      copy_ids(out->v + out->n, p + 1, n);
      out->n += n;
    } else if (!rc) {
      long m = splice_huge(s, p + 1, n, hw, nh, out->v + out->n);
      if (m < 0) rc = -1;
      else out->n += (size_t)m;
    }
  }
  W.wgpuBufferUnmap(s->rb);
  return rc ? rc : tz_tg_check_dev("encode readback");
}

/* Finish both slots, the older batch first (ids stay in text order). */
static int finish_all(enc_slot *S, id_vec *out) {
  int a = S[0].seq <= S[1].seq ? 0 : 1;
  int rc = finish_slot(&S[a], out);
  int rc2 = finish_slot(&S[1 - a], out);
  return rc ? rc : rc2;
}

/* Upload text[0, n) into R->B[1]: the whole 4-byte words, then the last partial word
 * zero-padded (never read past the text). */
static void put_text(enc_run *R, const char *text, size_t n) {
  if (n / 4) tz_tg_put(R->B[1], 0, text, n / 4 * 4);
  if (n % 4) {
    uint32_t tail = 0;
    size_t a = n / 4 * 4;
    memcpy(&tail, text + a, n - a);
    W.wgpuQueueWriteBuffer(tz_tg_ctx.queue, R->B[1], a, &tail, 4);
  }
}

/* Submit `enc` (which ends by copying slot s's ids into s->rb), release it and its `nbg` bind
 * groups, and start mapping s->rb[0, s->mapped_size) asynchronously: s is busy, numbered
 * R->seq, until finish_slot reads it. */
static void submit_slot(enc_run *R, enc_slot *s, WGPUCommandEncoder enc, WGPUBindGroup *bg, int nbg) {
  WGPUCommandBuffer cb = W.wgpuCommandEncoderFinish(enc, NULL);
  W.wgpuQueueSubmit(tz_tg_ctx.queue, 1, &cb);
  W.wgpuCommandBufferRelease(cb);
  W.wgpuCommandEncoderRelease(enc);
  for (int i = 0; i < nbg; i++) W.wgpuBindGroupRelease(bg[i]);
  s->st = 0;
  WGPUBufferMapCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, tz_tg_on_mapped, &s->st, NULL};
  s->fut = W.wgpuBufferMapAsync(s->rb, WGPUMapMode_Read, 0, s->mapped_size, ci);
  s->busy = 1;
  s->seq = R->seq++;
  tz_tg_last_enc.batches++;
}

/* Encode one segment's pieces on the GPU: pcs[0..2 np) are (start, length) pairs relative to
 * seg (length 0xffffffff: an EOT). Cut into batches of at most R->cap bytes and pieces (one
 * batch unless the segment is larger); each batch is uploaded, encoded and its ids read back
 * asynchronously into a slot, the slot's previous batch finished first (ids appended in
 * order). Returns 0 or -1 with tz_err set. */
static int feed_segment(enc_run *R, const char *seg, const uint32_t *pcs, size_t np) {
  const WGPUBufferUsage SU = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
  size_t pi = 0;
  int rc = 0;
  while (pi < np && !rc) {
    /* batch [p0, p1) of the segment's pieces */
    size_t p0 = pi, base = pcs[2 * p0], p1 = p0, nl = 0;
    uint64_t scr_need = 0;
    while (p1 < np && p1 - p0 < R->cap) {
      uint32_t L = pcs[2 * p1 + 1], n = L == EMPTY ? 1 : L; /* an EOT writes its id at its start */
      if (pcs[2 * p1] + (uint64_t)n - base > R->cap) break;
      if (L != EMPTY && L > SHORT) {
        if (nl + 1 > R->lcap) R->lcap = R->lcap ? R->lcap * 2 : 64, R->lng = tz_realloc(R->lng, R->lcap * 8);
        R->lng[2 * nl] = (uint32_t)(p1 - p0);
        R->lng[2 * nl + 1] = (uint32_t)scr_need;
        nl++;
        scr_need += 9 * (uint64_t)L;
      }
      p1++;
    }
    if (p1 == p0)
      return tz_err("webgpu tokenizer: a pre-token of %u bytes is above the batch size %llu", pcs[2 * p0 + 1],
                    (unsigned long long)R->cap);
    if ((rc = tz_tg_too_big("the long pre-tokens' scratch", scr_need * 4 + 64))) break;
    size_t npb = p1 - p0, bytes = pcs[2 * (p1 - 1)] + (pcs[2 * p1 - 1] == EMPTY ? 1 : pcs[2 * p1 - 1]) - base;
    uint64_t nblocks = (npb + 4095) / 4096;
    /* this slot's previous batch must be done before its readback buffer is reused, and the
     * work buffers may only be replaced while nothing is in flight */
    enc_slot *s = &R->S[R->seq % 2];
    if ((rc = finish_slot(s, &R->out))) break;
    uint64_t need[8] = {0, bytes + 16, npb * 8 + 16, bytes * 4 + 16, (npb + nblocks + 2) * 4, nl * 8 + 16,
                        scr_need * 4 + 64, bytes * 4 + 32};
    int grow = 0;
    for (int i = 1; i < 8; i++) grow |= !R->B[i] || R->bs[i] < need[i];
    if (grow && (rc = finish_all(R->S, &R->out))) break;
    const char *lab[8] = {"", "bpe text", "bpe pieces", "bpe ids", "bpe counts", "bpe long pieces", "bpe scratch",
                          "bpe compacted ids"};
    for (int i = 1; i < 8; i++) ensure(&R->B[i], &R->bs[i], need[i], SU, lab[i]);
    ensure(&s->rb, &s->rb_size, need[7], WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "bpe ids readback");
    const uint32_t *up = pcs + 2 * p0; /* the pieces relative to the batch's first byte */
    if (base) {
      if (npb > R->loc_cap) R->loc_cap = npb + npb / 4, R->local = tz_realloc(R->local, R->loc_cap * 8);
      for (size_t i = p0; i < p1; i++)
        R->local[2 * (i - p0)] = pcs[2 * i] - (uint32_t)base, R->local[2 * (i - p0) + 1] = pcs[2 * i + 1];
      up = R->local;
    }
    put_text(R, seg + base, bytes);
    tz_tg_put(R->B[2], 0, up, npb * 8);
    tz_tg_put(R->B[5], 0, R->lng, nl * 8);
    R->tb.u[7] = (uint32_t)npb;
    R->tb.u[8] = (uint32_t)nl;
    R->tb.u[11] = (uint32_t)nblocks;
    tz_tg_put(R->ub, 0, R->tb.u, sizeof R->tb.u);
    WGPUBindGroup g[5];
    for (int i = 0; i < 5; i++) g[i] = tz_tg_bind(R->P[i], R->ub, sizeof R->tb.u, R->B, 8);
    WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(tz_tg_ctx.dev, NULL);
    WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
    tz_tg_dispatch(pass, R->P[0], g[0], (npb + 63) / 64);
    tz_tg_dispatch(pass, R->P[1], g[1], (nl + 63) / 64);
    tz_tg_dispatch(pass, R->P[2], g[2], nblocks);
    tz_tg_dispatch(pass, R->P[3], g[3], 1);
    tz_tg_dispatch(pass, R->P[4], g[4], nblocks);
    W.wgpuComputePassEncoderEnd(pass);
    W.wgpuComputePassEncoderRelease(pass);
    s->mapped_size = (bytes + 1) * 4;
    s->huge_at = 0;
    W.wgpuCommandEncoderCopyBufferToBuffer(enc, R->B[7], 0, s->rb, 0, s->mapped_size);
    submit_slot(R, s, enc, g, 5);
    pi = p1;
  }
  return rc;
}

/* Pre-tokenize and encode text[0, n) (one batch, n <= R->cap) on the GPU: pretok pass (masks,
 * scan, piece starts, lengths and long pieces), the counts copied into bpe_encode's uniforms,
 * then the encode pass as in feed_segment (dispatched for the most pieces n bytes can hold; the
 * kernels stop at the count). Ids read back asynchronously into a slot, as there. */
static int feed_batch_gpu(enc_run *R, const char *text, size_t n) {
  const WGPUBufferUsage SU = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
  uint64_t nblk = (n + 4095) / 4096, maxlong = n / (SHORT + 1) + 1, maxhuge = n / ((uint64_t)R->pt_u[4] + 1) + 1;
  /* the readback: the ids, then (16-byte aligned) the state and the huge pieces */
  uint64_t huge_at = (((uint64_t)n + 1) * 4 + 15) / 16 * 16, rb_need = huge_at + 16 + 16 * maxhuge;
  enc_slot *s = &R->S[R->seq % 2];
  int rc;
  if ((rc = finish_slot(s, &R->out))) return rc;
  uint64_t need[8] = {0, n + 16, 8 * (uint64_t)n + 16, 4 * (uint64_t)n + 16, 4 * ((uint64_t)n + nblk + 3),
                      8 * maxlong + 16, 36 * (uint64_t)n + 64, 4 * (uint64_t)n + 32};
  uint64_t pneed[3] = {257 * nblk * 4 + 16, 16, 16 * maxhuge + 16};
  int grow = 0;
  for (int i = 1; i < 8; i++) grow |= !R->B[i] || R->bs[i] < need[i];
  for (int i = 0; i < 3; i++) grow |= !R->PB[i] || R->pbs[i] < pneed[i];
  if (grow && (rc = finish_all(R->S, &R->out))) return rc;
  const char *lab[8] = {"", "bpe text", "bpe pieces", "bpe ids", "bpe counts", "bpe long pieces", "bpe scratch",
                        "bpe compacted ids"};
  for (int i = 1; i < 8; i++) ensure(&R->B[i], &R->bs[i], need[i], SU, lab[i]);
  ensure(&R->PB[0], &R->pbs[0], pneed[0], SU, "pretok masks");
  ensure(&R->PB[1], &R->pbs[1], pneed[1], SU, "pretok state");
  ensure(&R->PB[2], &R->pbs[2], pneed[2], SU, "pretok huge pieces");
  ensure(&s->rb, &s->rb_size, rb_need, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "bpe ids readback");
  put_text(R, text, n);
  R->pt_u[0] = (uint32_t)n;
  R->pt_u[1] = (uint32_t)nblk;
  tz_tg_put(R->pu, 0, R->pt_u, sizeof R->pt_u);
  tz_tg_put(R->ub, 0, R->tb.u, sizeof R->tb.u); /* npieces, nlong, nblocks: copied from the GPU below */
  WGPUBuffer pb[8] = {tz_tg_ctx.cls, R->B[1], R->B[2], R->PB[0], R->B[5], R->PB[1], R->B[4], R->PB[2]};
  WGPUBindGroup bg[10], *q = bg, *g = bg + 5; /* the pretok passes', then the encode passes' */
  for (int i = 0; i < 5; i++) q[i] = tz_tg_bind(R->Q[i], R->pu, sizeof R->pt_u, pb, 8);
  for (int i = 0; i < 5; i++) g[i] = tz_tg_bind(R->P[i], R->ub, sizeof R->tb.u, R->B, 8);
  WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(tz_tg_ctx.dev, NULL);
  WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
  tz_tg_dispatch(pass, R->Q[0], q[0], nblk);
  tz_tg_dispatch(pass, R->Q[1], q[1], 1);
  tz_tg_dispatch(pass, R->Q[2], q[2], nblk);
  tz_tg_dispatch(pass, R->Q[3], q[3], (n + 255) / 256);
  W.wgpuComputePassEncoderEnd(pass);
  W.wgpuComputePassEncoderRelease(pass);
  /* st[0], st[1] -> U.npieces, U.nlong (u32 7, 8); st[2] -> U.nblocks (u32 11) */
  W.wgpuCommandEncoderCopyBufferToBuffer(enc, R->PB[1], 0, R->ub, 7 * 4, 8);
  W.wgpuCommandEncoderCopyBufferToBuffer(enc, R->PB[1], 8, R->ub, 11 * 4, 4);
  pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
  tz_tg_dispatch(pass, R->P[0], g[0], (n + 63) / 64);
  tz_tg_dispatch(pass, R->P[1], g[1], (maxlong + 63) / 64);
  tz_tg_dispatch(pass, R->P[2], g[2], nblk);
  tz_tg_dispatch(pass, R->P[3], g[3], 1);
  tz_tg_dispatch(pass, R->P[4], g[4], nblk);
  tz_tg_dispatch(pass, R->Q[4], q[4], (maxhuge + 63) / 64);
  W.wgpuComputePassEncoderEnd(pass);
  W.wgpuComputePassEncoderRelease(pass);
  s->mapped_size = rb_need;
  s->huge_at = huge_at;
  s->text = text;
  s->t = R->t;
  W.wgpuCommandEncoderCopyBufferToBuffer(enc, R->B[7], 0, s->rb, 0, ((uint64_t)n + 1) * 4);
  W.wgpuCommandEncoderCopyBufferToBuffer(enc, R->PB[1], 0, s->rb, huge_at, 16);
  W.wgpuCommandEncoderCopyBufferToBuffer(enc, R->PB[2], 0, s->rb, huge_at + 16, 16 * maxhuge);
  submit_slot(R, s, enc, bg, 10);
  return 0;
}

/* One span's pieces, (start, length) relative to the segment's first byte `seg`. */
typedef struct {
  uint32_t *v;
  size_t n, cap;
  const char *seg;
} span_pcs;

static int span_piece(void *ud, const char *s, size_t n) {
  span_pcs *p = ud;
  if (p->n + 2 > p->cap) {
    p->cap = p->cap ? p->cap * 2 : 1024;
    p->v = tz_realloc(p->v, p->cap * sizeof *p->v);
  }
  p->v[p->n++] = (uint32_t)(s - p->seg);
  p->v[p->n++] = (uint32_t)n;
  return 0;
}

/* A segment's pieces, concatenated in text order. */
typedef struct {
  uint32_t *pcs;
  size_t np;
  const char *seg;
} seg_pcs;

int tz_tok_encode_webgpu(const tz_tokenizer *t, const char *text, size_t len, int allow_special, int32_t **ids,
                         size_t *n_ids) {
  *ids = NULL;
  *n_ids = 0;
  double t_start = tz_tg_wall();
  memset(&tz_tg_last_enc, 0, sizeof tz_tg_last_enc);
  if (len >= 0xffffffffu) return tz_err("tokenizer: text of %zu bytes is too long for 32-bit piece offsets", len);
  if (!tz_tok_webgpu_available()) return -1;
  enc_run R;
  memset(&R, 0, sizeof R);
  R.t = t;
  /* the kernels compile on Dawn's workers while the host builds the tables */
  tz_tg_pipelines_start("bpe_encode", encode_entries);
  if (!getenv("TEZGAH_TOK_GPU_PRETOK") || strcmp(getenv("TEZGAH_TOK_GPU_PRETOK"), "cpu"))
    tz_tg_pipelines_start("bpe_pretok", tz_tg_pretok_entries);
  if (tz_tg_build_tables(t, &R.tb)) return -1;
  int nthr = 1;
#ifdef _OPENMP
  if (!omp_in_parallel()) nthr = omp_get_max_threads();
#endif
  uint64_t seg = SEGMENT;
  const char *env = getenv("TEZGAH_TOK_GPU_SEGMENT");
  if (env && atoll(env) > 0) seg = (uint64_t)atoll(env);
  const char *eot = t->eot >= 0 && allow_special ? t->tok[t->eot] : NULL;
  size_t eotn = eot ? t->tok_len[t->eot] : 0;
  uint64_t lim = tz_tg_bind_limit();
  R.ub = tz_tg_mkbuf(sizeof R.tb.u, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, "bpe uniforms");
  R.B[0] = tz_tg_sbuf(R.tb.n * 4 + 4, "bpe tables");
  tz_tg_put(R.B[0], 0, R.tb.v, R.tb.n * 4);
  free(R.tb.v);
  R.tb.v = NULL;
  int rc = 0;
  for (int i = 0; i < 5; i++)
    if (!(R.P[i] = tz_tg_pipeline("bpe_encode", encode_entries[i]))) rc = -1;
  /* every id covers >= 1 byte of text: room for all of them up front (pages are touched only
   * as ids arrive), so the ids are never copied again */
  R.out.cap = len + 1;
  R.out.v = tz_malloc(R.out.cap * sizeof *R.out.v);
  /* Pre-tokenization on the GPU when it can (the usual case): the host only cuts the text into
   * batches of about seg bytes at context-free boundaries, uploads them and copies the ids out
   * (two batches in flight). The GPU's scratch takes 36 bytes per byte of text (bpe_encode's
   * long-piece heap at 9 u32 per byte), which bounds a batch. */
  R.cap = (lim - 64) / 36 < (64u << 20) ? (lim - 64) / 36 : (64u << 20);
  env = getenv("TEZGAH_TOK_GPU_BATCH_CAP"); /* tests: smaller batches */
  if (env && atoll(env) > 0 && (uint64_t)atoll(env) < R.cap) R.cap = (uint64_t)atoll(env);
  size_t *cuts = NULL, ncut = 0;
  if (!rc && tz_tg_gpu_pretok_setup(&R, eot, eotn)) {
    size_t target = seg < R.cap / 2 ? seg : R.cap / 2, a = 0, cap = 0;
    while (a < len) {
      size_t b = tz_tg_next_cut(text, len, a, target, R.cap, eot, eotn);
      if (!b) { /* no context-free cut within a batch: the CPU pre-tokenizes this call */
        free(cuts);
        cuts = NULL;
        ncut = 0;
        break;
      }
      if (ncut == cap) cap = cap ? 2 * cap : 64, cuts = tz_realloc(cuts, cap * sizeof *cuts);
      cuts[ncut++] = b;
      a = b;
    }
    tz_tg_last_enc.gpu_pretok = a >= len;
  }
  /* else: spans of about seg / (4 nthr) bytes for the CPU pre-tokenizer: each segment gives
   * every thread several spans to balance (the CPU encoder's larger chunks would leave threads
   * idle within a segment); a batch holds at most `cap` bytes of text and as many pieces (pieces
   * are >= 1 byte, an EOT piece 13): its ids (<= 1 per byte) and the per-byte id slots must fit
   * one binding */
  tz_span *sp = NULL;
  size_t nsp = 0;
  if (!tz_tg_last_enc.gpu_pretok) {
    size_t chunk = seg / (4 * (uint64_t)nthr);
    if (chunk < (64u << 10)) chunk = 64u << 10;
    if (chunk > (1u << 20)) chunk = 1u << 20;
    if (nthr == 1) chunk = SIZE_MAX;
    nsp = tz_text_spans_chunk(text, len, eot, eotn, chunk, &sp);
    R.cap = lim / 4 - 16 < (64u << 20) ? lim / 4 - 16 : (64u << 20);
  } else {
    double f0 = tz_tg_wall();
    for (size_t k = 0, a = 0; k < ncut && !rc; a = cuts[k++]) rc = feed_batch_gpu(&R, text + a, cuts[k] - a);
    tz_tg_last_enc.feed_s = tz_tg_wall() - f0;
    free(cuts);
  }
  /* The pipeline: segment k (spans [si, sj), up to seg bytes) is pre-tokenized by all threads
   * while the master thread feeds segment k-1 to the GPU (upload, submit, finish the batch
   * before, copy its ids out) and then joins the pre-tokenization; the spans' pieces are then
   * concatenated in parallel. */
  seg_pcs prev = {0};
  size_t si = 0;
  char errmsg[TZ_ERR_MAX] = "";
  while (!rc && (si < nsp || prev.pcs)) {
    size_t sj = si;
    if (si < nsp) {
      sj = si + 1;
      while (sj < nsp && sp[sj].b - sp[si].a <= seg) sj++;
    }
    size_t ns = sj - si;
    span_pcs *parts = tz_calloc(ns ? ns : 1, sizeof *parts);
    size_t *off = tz_malloc((ns + 1) * sizeof *off);
    seg_pcs cur = {NULL, 0, si < nsp ? text + sp[si].a : NULL};
    int feed_rc = 0, failed = 0;
    double t0 = tz_tg_wall();
#pragma omp parallel num_threads(nthr) if (nthr > 1)
    {
      tz_pretok_state st = {0}; /* one per thread, reused over its spans */
#pragma omp master
      {
        if (prev.pcs) {
          double f0 = tz_tg_wall();
          feed_rc = feed_segment(&R, prev.seg, prev.pcs, prev.np);
          if (feed_rc) snprintf(errmsg, sizeof errmsg, "%s", tz_errmsg());
          tz_tg_last_enc.feed_s += tz_tg_wall() - f0;
        }
      }
#pragma omp for schedule(dynamic, 1)
      for (size_t i = 0; i < ns; i++) {
        const tz_span *x = &sp[si + i];
        span_pcs *p = &parts[i];
        p->seg = cur.seg;
        p->cap = (x->b - x->a) / 2 + 64; /* ~ 2 words per 3.5 bytes: rarely regrown */
        p->v = tz_malloc(p->cap * sizeof *p->v);
        if (x->b > x->a && tz_pretok_each_st(t->re, &st, text + x->a, x->b - x->a, span_piece, p)) {
#pragma omp critical(tz_tok_gpu_err)
          {
            if (!failed) snprintf(errmsg, sizeof errmsg, "%s", tz_errmsg());
            failed = 1;
          }
        }
        if (x->eot_after) {
          span_piece(p, text + x->b, 0);
          p->v[p->n - 1] = EMPTY;
        }
      }
#pragma omp single
      {
        off[0] = 0;
        for (size_t i = 0; i < ns; i++) off[i + 1] = off[i] + parts[i].n;
        cur.np = off[ns] / 2;
        cur.pcs = ns ? tz_malloc((off[ns] ? off[ns] : 1) * sizeof *cur.pcs) : NULL;
      }
#pragma omp for schedule(dynamic, 1)
      for (size_t i = 0; i < ns; i++) {
        if (parts[i].n) memcpy(cur.pcs + off[i], parts[i].v, parts[i].n * sizeof *cur.pcs);
        free(parts[i].v);
      }
      tz_pretok_state_free(&st);
    }
    tz_tg_last_enc.pretok_s += tz_tg_wall() - t0;
    if (ns) tz_tg_last_enc.segments++;
    free(parts);
    free(off);
    free(prev.pcs);
    prev = cur;
    si = sj;
    if (feed_rc || failed) rc = tz_err("%s", errmsg);
  }
  free(prev.pcs);
  double d0 = tz_tg_wall();
  int rc2 = finish_all(R.S, &R.out);
  tz_tg_last_enc.drain_s = tz_tg_wall() - d0;
  if (!rc) rc = rc2;
  free(sp), free(R.lng), free(R.local);
  tz_tg_drop(&R.ub);
  for (int i = 0; i < 8; i++) tz_tg_drop(&R.B[i]);
  for (int i = 0; i < 2; i++) tz_tg_drop(&R.S[i].rb);
  for (int i = 0; i < 3; i++) tz_tg_drop(&R.PB[i]);
  tz_tg_drop(&R.pu);
  tz_tg_last_enc.total_s = tz_tg_wall() - t_start;
  if (rc) {
    free(R.out.v);
    return -1;
  }
  *ids = tz_realloc(R.out.v, (R.out.n ? R.out.n : 1) * sizeof(int32_t));
  *n_ids = R.out.n;
  return 0;
}
