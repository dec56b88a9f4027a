/* Byte-level BPE training on the GPU (tz_tok_train_webgpu, kernels bpe_train.wgsl): unique
 * pre-tokens counted on the GPU (tz_tg_count_words_gpu, tok_webgpu_words.c), or on the CPU where the
 * GPU cannot (tz_count_words, all cores), while every kernel compiles asynchronously; their
 * symbols, the pair-count hash table, per-pair block bests, the word lists (which words can hold
 * a pair) and the vocabulary (token bytes + a byte-string hash table for the "already a token"
 * ban) live on the GPU. One merge is three dispatches (refresh the dirty blocks, select the best
 * pair with the CPU's tie-break and ban or record it, apply it to its candidate words with count
 * deltas), each sized by the work of that merge, not by the corpus; up to ITERS merges per
 * submission, two submissions in flight. Same merges as tz_tok_train. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tok_webgpu_stages.h"

#define ITERS 256   /* merge iterations per submission */
#define GRID_REF 64 /* workgroups of refresh (they stride over the dirty blocks) */
#define GRID_APPLY 128 /* workgroups of apply (their threads stride over the candidate words) */

/* The set-up kernels, then one iteration's: refresh, select_best, apply (three dispatches), or
 * with TEZGAH_TOK_GPU_FUSED=1 refresh2, apply2 (two: every apply2 workgroup selects the pair
 * itself; same result) */
static const char *const train_entries[2][8] = {
    {"clear", "count_pairs", "csr_scan", "csr_fill", "refresh", "select_best", "apply", NULL},
    {"clear", "count_pairs", "csr_scan", "csr_fill", "refresh2", "apply2", NULL, NULL}};
#define N_TRAIN_PIPES 7

typedef struct {
  tg_pipe *p[N_TRAIN_PIPES];
  int fused;
} train_pipes;

/* The training pipelines (started at the call's beginning, so they compile while the words are
 * counted): 0, or -1 with the error in tz_errmsg(). */
static int make_train_pipes(train_pipes *tp) {
  for (int i = 0; i < N_TRAIN_PIPES && train_entries[tp->fused][i]; i++)
    if (!(tp->p[i] = tz_tg_pipeline("bpe_train", train_entries[tp->fused][i]))) return -1;
  return 0;
}

/* Submit enc after copying the 16 state words into readback buffer rb and start mapping it. */
typedef struct {
  WGPUBuffer rb;
  WGPUFuture fut;
  int st, busy;
} st_slot;

static void submit_with_state(WGPUCommandEncoder enc, WGPUBuffer state, st_slot *s) {
  W.wgpuCommandEncoderCopyBufferToBuffer(enc, state, 0, s->rb, 0, 64);
  WGPUCommandBuffer cb = W.wgpuCommandEncoderFinish(enc, NULL);
  W.wgpuQueueSubmit(tz_tg_ctx.queue, 1, &cb);
  W.wgpuCommandBufferRelease(cb);
  W.wgpuCommandEncoderRelease(enc);
  s->st = 0;
  WGPUBufferMapCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, tz_tg_on_mapped, &s->st, NULL};
  s->fut = W.wgpuBufferMapAsync(s->rb, WGPUMapMode_Read, 0, 64, ci);
  s->busy = 1;
}

static int wait_state(st_slot *s, uint32_t *st) {
  s->busy = 0;
  if (tz_tg_wait_future(s->fut) || s->st != 1) {
    int rc = tz_tg_check_dev("training state readback");
    return rc ? rc : tz_err("webgpu tokenizer: training state readback failed");
  }
  const void *p = W.wgpuBufferGetConstMappedRange(s->rb, 0, 64);
  if (p) memcpy(st, p, 64);
  W.wgpuBufferUnmap(s->rb);
  return p ? tz_tg_check_dev("training") : tz_err("webgpu tokenizer: readback has no mapped range");
}

/* k merge iterations into `pass`: refresh, [select_best,] apply (n_iter 3), or refresh2,
 * apply2 (n_iter 2); pipelines and bind groups in train_entries' order. */
static void merge_iters(WGPUComputePassEncoder pass, const train_pipes *tp, WGPUBindGroup *bg, int n_iter,
                        uint64_t g_ref, uint64_t g_apply, uint32_t k) {
  for (uint32_t i = 0; i < k; i++) {
    tz_tg_dispatch(pass, tp->p[4], bg[4], g_ref);
    if (n_iter == 3) tz_tg_dispatch(pass, tp->p[5], bg[5], 1);
    tz_tg_dispatch(pass, tp->p[n_iter + 3], bg[n_iter + 3], g_apply);
  }
}

int tz_tok_train_webgpu(const char *text, size_t len, int vocab_size, tz_tokenizer **out, tz_tok_gpu_stats *stats) {
  *out = NULL;
  if (vocab_size < 257 || vocab_size > 65536)
    return tz_err("webgpu tokenizer: vocab size %d out of range (257..65536)", vocab_size);
  if (len >= (1u << 31)) return tz_err("webgpu tokenizer: corpus of %zu bytes is above 2 GiB", len);
  if (!tz_tok_webgpu_available()) return -1;
  double t0 = tz_tg_wall();
  train_pipes tp;
  memset(&tp, 0, sizeof tp);
  const char *fe = getenv("TEZGAH_TOK_GPU_FUSED");
  tp.fused = fe && !strcmp(fe, "1");
  int n_pipes = tp.fused ? 6 : 7, n_iter = tp.fused ? 2 : 3;
  /* every kernel this call may need compiles on Dawn's workers from here on */
  tz_tg_pipelines_start("bpe_pretok", tz_tg_pretok_entries);
  tz_tg_pipelines_start("bpe_words", tz_tg_words_entries);
  tz_tg_pipelines_start("bpe_train", train_entries[tp.fused]);
  /* The words: counted on the GPU (tz_tg_count_words_gpu), else on the CPU by all cores. */
  WGPUBuffer gsym = NULL, gwords = NULL;
  uint64_t gnw = 0, gnsym = 0;
  const char *why = NULL;
  int grc = tz_tg_count_words_gpu(text, len, 0, &gsym, &gwords, &gnw, &gnsym, &why);
  if (grc == 1 && why && strstr(why, "full")) /* text of many unique words: once more, roomier */
    grc = tz_tg_count_words_gpu(text, len, 1, &gsym, &gwords, &gnw, &gnsym, &why);
  if (grc < 0) return -1;
  size_t nw = 0, nsym = 0, npos = 0;
  uint32_t *sym = NULL, *words = NULL;
  tz_wordcount wc;
  memset(&wc, 0, sizeof wc);
  if (grc == 0) nw = gnw, nsym = gnsym, npos = gnsym - gnw;
  else if (tz_count_words(text, len, &wc)) return -1;
  double t1 = tz_tg_wall();
  if (make_train_pipes(&tp)) {
    tz_tg_drop(&gsym), tz_tg_drop(&gwords);
    tz_wordcount_free(&wc);
    return -1;
  }
  double tpipe = tz_tg_wall();
  if (grc != 0) { /* the CPU's words that can hold a pair (length >= 2), in the trainer's layout */
    for (size_t w = 0; w < wc.words.n; w++)
      if (wc.words.ents[w].len >= 2) nw++, nsym += wc.words.ents[w].len, npos += wc.words.ents[w].len - 1;
    sym = tz_malloc((nsym + 1) * 4), words = tz_malloc((nw + 1) * 16);
    nw = nsym = 0;
    for (size_t w = 0; w < wc.words.n; w++) {
      size_t L = wc.words.ents[w].len;
      if (L < 2) continue;
      const unsigned char *k = (const unsigned char *)tz_bmap_key(&wc.words, (long)w);
      words[4 * nw] = (uint32_t)nsym;
      words[4 * nw + 1] = (uint32_t)L;
      words[4 * nw + 2] = (uint32_t)wc.count[w];
      words[4 * nw + 3] = 0;
      for (size_t i = 0; i < L; i++) sym[nsym++] = k[i];
      nw++;
    }
    tz_wordcount_free(&wc);
  }
  /* every pair that can ever exist: the initial ones plus at most two new ones per merged
   * occurrence (at most one per position), so 3 npos at worst; far fewer in practice (the
   * 210 MB Debian corpus: 3.2 M positions, 0.34 M pairs by vocab 8192), and a full table is
   * detected (the caller falls back to the CPU). Pairs get dense positions in creation order,
   * so the per-block bests cover only the pairs that exist. */
  uint64_t pcap = tz_tg_pow2_at_least(3 * (uint64_t)npos + 1024);
  uint64_t maxcap = tz_tg_bind_limit() / 16;
  if (pcap > maxcap) pcap = tz_tg_pow2_at_least(maxcap + 1) / 2; /* the worst case rarely comes near: overflow is detected */
  if (pcap < 1024) pcap = 1024;
  uint64_t nblk = pcap / 256;
  uint32_t V = (uint32_t)vocab_size;
  uint64_t vhcap = tz_tg_pow2_at_least(4 * (uint64_t)V);
  uint64_t arcap = 256 + 64 * (uint64_t)V;
  if (arcap < (1u << 20)) arcap = 1u << 20;
  uint64_t vwords = 4 * (uint64_t)V + vhcap + arcap;
  /* entries: the byte pairs' CSR lists (<= one per position) and the L lists (a word joins one
   * each time a merge rewrites it, which shortens it: <= one per position) */
  uint64_t ent_cap = 2 * (uint64_t)npos + 16;
  uint64_t lo_fill = 65537, lo_start = lo_fill + 65536, lo_merges = lo_start + V, lo_ent = lo_merges + V;
  uint64_t lwords = lo_ent + ent_cap;
  int rc = 0;
  if ((rc = tz_tg_too_big("the pair table", pcap * 16)) || (rc = tz_tg_too_big("the words' symbols", nsym * 4 + 4)) ||
      (rc = tz_tg_too_big("the vocabulary", vwords * 4)) || (rc = tz_tg_too_big("the word lists", lwords * 4)) ||
      (rc = tz_tg_too_big("the words", nw * 16 + 16))) {
    free(sym), free(words);
    tz_tg_drop(&gsym), tz_tg_drop(&gwords);
    return rc;
  }
  /* host-side initial vocabulary: the 256 bytes */
  uint32_t *voc = tz_calloc(vwords, 4);
  memset(voc + 4 * V, 0xff, vhcap * 4);
  for (uint32_t b = 0; b < 256; b++) {
    unsigned char c = (unsigned char)b;
    voc[4 * b] = 1;
    voc[4 * b + 1] = b;
    voc[4 * b + 2] = tz_tg_hbytes(&c, 1);
    voc[4 * b + 3] = HP;
    uint32_t s = tz_tg_hmix(voc[4 * b + 2]) & (uint32_t)(vhcap - 1);
    while (voc[4 * V + s] != EMPTY) s = (s + 1) & (uint32_t)(vhcap - 1);
    voc[4 * V + s] = b;
    voc[4 * V + vhcap + b] = b;
  }
  uint32_t u[16] = {(uint32_t)(pcap - 1), (uint32_t)nw, V - 1, 4 * V, (uint32_t)(vhcap - 1), (uint32_t)(4 * V + vhcap),
                    (uint32_t)arcap, (uint32_t)(3 * nblk), (uint32_t)lo_fill, (uint32_t)lo_start, (uint32_t)lo_merges,
                    (uint32_t)lo_ent, (uint32_t)ent_cap, (uint32_t)pcap, (uint32_t)nblk, (uint32_t)tp.fused};
  uint32_t st[32] = {256, 0, 0, 0, 0, 0, 0, 0, 0, 0, 256};
  if (nw == 0) st[2] = 1;
  WGPUBuffer ub = tz_tg_mkbuf(sizeof u, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, "bpe uniforms");
  /* storage buffers, zero-initialized by WebGPU (the pair table is set by `clear`) */
  WGPUBuffer B[8];
  B[0] = gsym ? gsym : tz_tg_sbuf(nsym * 4 + 4, "bpe symbols");
  B[1] = gwords ? gwords : tz_tg_sbuf(nw * 16 + 16, "bpe words");
  B[2] = tz_tg_sbuf(pcap * 16, "bpe pair table");
  B[3] = tz_tg_sbuf(nblk * 20, "bpe pair blocks"); /* best count, best key, dirty flag; two dirty lists */
  B[4] = tz_tg_sbuf(sizeof st, "bpe state");
  B[5] = tz_tg_sbuf(vwords * 4, "bpe vocabulary");
  B[6] = tz_tg_sbuf(lwords * 4, "bpe word lists");
  B[7] = tz_tg_sbuf(pcap * 4, "bpe pair positions");
  st_slot S[2];
  memset(S, 0, sizeof S);
  for (int i = 0; i < 2; i++) S[i].rb = tz_tg_mkbuf(64, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "bpe state readback");
  tz_tg_put(ub, 0, u, sizeof u);
  if (sym) tz_tg_put(B[0], 0, sym, nsym * 4);
  if (words) tz_tg_put(B[1], 0, words, nw * 16);
  tz_tg_put(B[4], 0, st, sizeof st);
  tz_tg_put(B[5], 0, voc, vwords * 4);
  free(sym), free(words), free(voc);
  int32_t *merges = NULL;
  uint32_t iters = 0, subs = 0;
  WGPUBindGroup bg[N_TRAIN_PIPES] = {0};
  for (int i = 0; i < n_pipes; i++) bg[i] = tz_tg_bind(tp.p[i], ub, sizeof u, B, 8);
  double t2 = t1;
  if ((rc = tz_tg_check_dev("training setup"))) goto release;
  t2 = tz_tg_wall();
  /* Submissions of up to ITERS iterations, two in flight: the host encodes and submits the next
   * while the GPU runs the last. Iterations after the end are no-ops; the batch sizes follow
   * the merges left (vocab_size - 256 iterations when no pair is banned), then 16 at a time.
   * Grids are capped by the work there can be (small corpora: a few workgroups). */
  uint64_t g_ref = nblk < GRID_REF ? nblk : GRID_REF, g_apply = (nw + 255) / 256 + 1;
  if (g_apply > GRID_APPLY) g_apply = GRID_APPLY;
  int inflight = 0, head = 0, done = 0;
  int64_t submitted = 0;
  for (int first = 1; !done;) {
    int64_t need = (int64_t)V - 256 - submitted;
    if (inflight && (inflight == 2 || need <= 0)) {
      rc = wait_state(&S[head], st);
      head = (head + 1) % 2;
      inflight--;
      done = rc || st[2] != 0;
      continue;
    }
    uint32_t k = need > ITERS ? ITERS : need > 16 ? (uint32_t)need : 16;
    WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(tz_tg_ctx.dev, NULL);
    WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
    if (first) {
      tz_tg_dispatch(pass, tp.p[0], bg[0], pcap / 256);
      tz_tg_dispatch(pass, tp.p[1], bg[1], (nw + 255) / 256);
      tz_tg_dispatch(pass, tp.p[2], bg[2], 1);
      tz_tg_dispatch(pass, tp.p[3], bg[3], (nw + 255) / 256);
      first = 0;
    }
    merge_iters(pass, &tp, bg, n_iter, g_ref, g_apply, k);
    W.wgpuComputePassEncoderEnd(pass);
    W.wgpuComputePassEncoderRelease(pass);
    submit_with_state(enc, B[4], &S[(head + inflight) % 2]);
    inflight++;
    subs++;
    submitted += k;
  }
  while (inflight) { /* the one still in flight (a no-op once done): its state is the newest */
    uint32_t st2[32];
    int rc2 = wait_state(&S[head], st2);
    head = (head + 1) % 2;
    inflight--;
    if (!rc && !rc2) memcpy(st, st2, 64);
    if (!rc) rc = rc2;
  }
  double t3 = tz_tg_wall(), noop = 0;
  const char *ne = getenv("TEZGAH_TOK_GPU_NOOP_ITERS");
  if (!rc && ne && atoi(ne) > 0) { /* measure the per-iteration floor: iterations after the end */
    int k = atoi(ne);
    double n0 = tz_tg_wall();
    WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(tz_tg_ctx.dev, NULL);
    WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
    merge_iters(pass, &tp, bg, n_iter, g_ref, g_apply, (uint32_t)k);
    W.wgpuComputePassEncoderEnd(pass);
    W.wgpuComputePassEncoderRelease(pass);
    uint32_t st2[32];
    submit_with_state(enc, B[4], &S[0]);
    rc = wait_state(&S[0], st2);
    noop = (tz_tg_wall() - n0) / k;
  }
  iters = st[12];
  if (!rc && st[2] == 2) rc = tz_err("webgpu tokenizer: the token byte arena (%llu bytes) is full", (unsigned long long)arcap);
  if (!rc && st[2] == 3) rc = tz_err("webgpu tokenizer: the pair table (%llu slots) is full", (unsigned long long)pcap);
  if (!rc && st[2] == 4) rc = tz_err("webgpu tokenizer: the word lists (%llu entries) are full", (unsigned long long)ent_cap);
  if (!rc) {
    uint32_t nm = st[1];
    uint32_t *keys = tz_malloc((size_t)nm * 4 + 4);
    if (!(rc = tz_tg_read_back(NULL, B[6], lo_merges * 4, keys, (size_t)nm * 4))) {
      merges = tz_malloc((size_t)2 * nm * sizeof *merges + 8);
      for (uint32_t i = 0; i < nm; i++) merges[2 * i] = (int32_t)(keys[i] >> 16), merges[2 * i + 1] = (int32_t)(keys[i] & 0xffff);
      if (stats) {
        stats->merges = nm;
        stats->iterations = iters;
        stats->bans = st[11];
        stats->submissions = subs;
        stats->words = nw;
        stats->pair_slots = pcap;
        stats->pairs = st[13];
        stats->list_entries = st[9];
        stats->count_s = t1 - t0;
        stats->count_gpu = grc == 0;
        snprintf(stats->count_why, sizeof stats->count_why, "%s", why ? why : "");
        stats->pipes_s = tpipe - t1;
        stats->upload_s = t2 - tpipe;
        stats->merge_s = t3 - t2;
        stats->noop_iter_s = noop;
        stats->fused = tp.fused;
      }
      rc = tz_tok_from_trained_merges(merges, (int)nm, out);
    }
    free(keys);
  }
release:
  for (int i = 0; i < n_pipes; i++) W.wgpuBindGroupRelease(bg[i]);
  tz_tg_drop(&ub);
  for (int i = 0; i < 8; i++) tz_tg_drop(&B[i]);
  for (int i = 0; i < 2; i++) tz_tg_drop(&S[i].rb);
  return rc;
}
