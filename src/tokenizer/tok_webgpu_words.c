/* Word counting for BPE training on the GPU (kernels bpe_words.wgsl, pieces from
 * bpe_pretok.wgsl): the trainer's (tok_webgpu_train.c) words and their counts, left on the GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tok_webgpu_stages.h"

const char *const tz_tg_words_entries[] = {"wc_clear", "wc_insert", "wc_verify", "wc_compact", NULL};

/* The unique pre-tokens of two or more bytes and their counts — tz_count_words' words (the GPT-2
 * pattern's pieces, documents split at <|endoftext|>), less the single bytes the trainer drops —
 * counted on the GPU: bpe_pretok.wgsl finds the pieces of each batch (the encoder's batches, cut
 * at context-free boundaries), bpe_words.wgsl hashes them into a table of unique words whose bytes
 * go to an arena, then verifies every piece against its slot's word byte for byte. The result
 * stays on the GPU in the trainer's layout: *sym (one u32 per byte, nsym of them) and *words
 * (offset, length, count, 0 per word, nw of them).
 * Returns 0, or 1 when the GPU cannot count this text (*why says why; the caller counts on the
 * CPU): GPU pre-tokenization unavailable, a batch without a context-free cut, the table or the
 * arena full, two words on one key (never seen on real text; TEZGAH_TOK_GPU_KEYBITS=4 forces
 * it for the tests); -1 on a device error. TEZGAH_TOK_GPU_COUNT=cpu skips it (returns 1).
 * roomy: table and arena sized for any text (one slot and one symbol per byte, within the
 * binding limit) instead of for natural text; the caller's second try after "full". */
int tz_tg_count_words_gpu(const char *text, size_t len, int roomy, WGPUBuffer *sym, WGPUBuffer *words,
                           uint64_t *nw, uint64_t *nsym, const char **why) {
  *sym = *words = NULL;
  *nw = *nsym = 0;
  const char *env = getenv("TEZGAH_TOK_GPU_COUNT");
  if (env && !strcmp(env, "cpu")) return *why = "TEZGAH_TOK_GPU_COUNT=cpu", 1;
  enc_run R;
  memset(&R, 0, sizeof R);
  uint64_t lim = tz_tg_bind_limit();
  /* a batch needs 8 bytes of pieces per byte of text (the largest of pre-tokenization's buffers) */
  R.cap = (lim - 64) / 8 < (64u << 20) ? (lim - 64) / 8 : (64u << 20);
  env = getenv("TEZGAH_TOK_GPU_BATCH_CAP"); /* tests: smaller batches */
  if (env && atoll(env) > 0 && (uint64_t)atoll(env) < R.cap) R.cap = (uint64_t)atoll(env);
  uint64_t seg = SEGMENT;
  env = getenv("TEZGAH_TOK_GPU_SEGMENT");
  if (env && atoll(env) > 0) seg = (uint64_t)atoll(env);
  uint64_t target = seg < R.cap / 2 ? seg : R.cap / 2;
  if (!tz_tg_gpu_pretok_setup(&R, TZ_EOT_STR, TZ_EOT_LEN)) return *why = "GPU pre-tokenization unavailable", 1;
  R.pt_u[4] = 0xffffffffu; /* no piece is "huge" here: each is hashed by one thread, whatever its length */
  tg_pipe *P[4];
  for (int i = 0; i < 4; i++)
    if (!(P[i] = tz_tg_pipeline("bpe_words", tz_tg_words_entries[i]))) {
      tz_tg_drop(&R.pu);
      return -1;
    }
  /* the table: 1/64 slot per byte of text (the 210 MB Debian corpus: 4 M slots for 0.52 M words),
   * loaded to 3/4 at most; the arena: 1/4 symbol per byte of text (that corpus: 3.7 M symbols
   * for 53 M) */
  uint64_t slots = 0, acap = 0;
  for (int r = 0; r <= roomy; r++) { /* roomy: 1 slot and 1 symbol per byte (words of >= 2 bytes fill <= 1/2) */
    uint64_t per = r ? 1 : 64, aper = r ? 1 : 4;
    uint64_t s = tz_tg_pow2_at_least(len / per > 65536 ? len / per : 65536), a = len / aper > (4u << 20) ? len / aper : (4u << 20);
    while (s * 16 > lim) s /= 2;
    if (a * 4 > lim) a = lim / 4;
    if (r && s <= slots && a <= acap) return *why = "the word table would not be larger", 1;
    slots = s, acap = a;
  }
  uint32_t keymask = 0xffffffffu;
  env = getenv("TEZGAH_TOK_GPU_KEYBITS"); /* tests: a short key, so that words collide */
  if (env && atoi(env) > 0 && atoi(env) < 32) keymask = (1u << atoi(env)) - 1;
  uint32_t wu[4] = {keymask, (uint32_t)(slots - 1), (uint32_t)acap, (uint32_t)(slots / 4 * 3)};
  const WGPUBufferUsage SU = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
  uint64_t bcap = R.cap, nblk = (bcap + 4095) / 4096;
  WGPUBuffer wub = tz_tg_mkbuf(sizeof wu, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, "words uniforms");
  WGPUBuffer tx = tz_tg_mkbuf(bcap + 16, SU, "words text"), pc = tz_tg_mkbuf(8 * bcap + 16, SU, "words pieces"),
             mk = tz_tg_mkbuf(257 * nblk * 4 + 16, SU, "words masks"), lg = tz_tg_mkbuf(8 * (bcap / (SHORT + 1) + 1) + 16, SU, "words long"),
             ps = tz_tg_mkbuf(16, SU, "words pretok state"), cn = tz_tg_mkbuf(16, SU, "words counts"), hg = tz_tg_mkbuf(16, SU, "words huge");
  WGPUBuffer tab = tz_tg_mkbuf(slots * 16, SU, "words table"), ar = tz_tg_mkbuf(acap * 4 + 16, SU, "words arena"),
             ws = tz_tg_mkbuf(16, SU, "words state"), dummy = tz_tg_mkbuf(16, SU, "words none"), wo = NULL;
  tz_tg_put(wub, 0, wu, sizeof wu);
  WGPUBuffer pb[8] = {tz_tg_ctx.cls, tx, pc, mk, lg, ps, cn, hg}, wb[7] = {tx, pc, ps, tab, ar, ws, dummy};
  WGPUBindGroup q[4], g[3];
  for (int i = 0; i < 4; i++) q[i] = tz_tg_bind(R.Q[i], R.pu, sizeof R.pt_u, pb, 8);
  for (int i = 0; i < 3; i++) g[i] = tz_tg_bind(P[i], wub, sizeof wu, wb, 7);
  uint64_t grid = 0;
  int rc = 0;
  *why = NULL;
  for (size_t a = 0; a < len && !rc && !*why;) {
    size_t b = tz_tg_next_cut(text, len, a, target, bcap, TZ_EOT_STR, TZ_EOT_LEN);
    if (!b) {
      *why = "a batch without a context-free cut";
      break;
    }
    size_t n = b - a;
    tz_tg_put(tx, 0, text + a, n / 4 * 4);
    if (n % 4) {
      uint32_t t4 = 0;
      memcpy(&t4, text + a + n / 4 * 4, n % 4);
      W.wgpuQueueWriteBuffer(tz_tg_ctx.queue, tx, n / 4 * 4, &t4, 4);
    }
    uint64_t nb = (n + 4095) / 4096;
    R.pt_u[0] = (uint32_t)n;
    R.pt_u[1] = (uint32_t)nb;
    tz_tg_put(R.pu, 0, R.pt_u, sizeof R.pt_u);
    WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(tz_tg_ctx.dev, NULL);
    WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
    if (a == 0) tz_tg_dispatch(pass, P[0], g[0], slots / 256);
    tz_tg_dispatch(pass, R.Q[0], q[0], nb);
    tz_tg_dispatch(pass, R.Q[1], q[1], 1);
    tz_tg_dispatch(pass, R.Q[2], q[2], nb);
    tz_tg_dispatch(pass, R.Q[3], q[3], (n + 255) / 256);
    /* pieces <= n; a grid of up to 2048 workgroups strides over them */
    grid = (n + 1023) / 1024 < 2048 ? (n + 1023) / 1024 : 2048;
    tz_tg_dispatch(pass, P[1], g[1], grid);
    tz_tg_dispatch(pass, P[2], g[2], grid);
    tz_tg_submit_pass(enc, pass);
    rc = tz_tg_check_dev("word counting");
    a = b;
  }
  uint32_t st[4] = {0};
  if (!rc && !*why) rc = tz_tg_read_back(NULL, ws, 0, st, 16);
  if (!rc && !*why) {
    if (st[2] & 1) *why = "two words share a hash key";
    else if (st[2] & 2) *why = "the word arena is full";
    else if (st[2] & 4) *why = "the word table is full";
  }
  if (!rc && !*why) { /* the table's words into the trainer's word array */
    wo = tz_tg_mkbuf((uint64_t)st[1] * 16 + 16, SU, "bpe words");
    wb[6] = wo;
    WGPUBindGroup gc = tz_tg_bind(P[3], wub, sizeof wu, wb, 7);
    WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(tz_tg_ctx.dev, NULL);
    WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
    tz_tg_dispatch(pass, P[3], gc, slots / 256);
    tz_tg_submit_pass(enc, pass);
    W.wgpuBindGroupRelease(gc);
    rc = tz_tg_check_dev("word compaction");
  }
  for (int i = 0; i < 4; i++) W.wgpuBindGroupRelease(q[i]);
  for (int i = 0; i < 3; i++) W.wgpuBindGroupRelease(g[i]);
  tz_tg_drop(&wub), tz_tg_drop(&tx), tz_tg_drop(&pc), tz_tg_drop(&mk), tz_tg_drop(&lg), tz_tg_drop(&ps), tz_tg_drop(&cn), tz_tg_drop(&hg), tz_tg_drop(&tab), tz_tg_drop(&ws);
  tz_tg_drop(&dummy), tz_tg_drop(&R.pu);
  if (rc || *why) {
    tz_tg_drop(&ar), tz_tg_drop(&wo);
    return rc ? -1 : 1;
  }
  *sym = ar;
  *words = wo;
  *nw = st[1];
  *nsym = st[0];
  return 0;
}
