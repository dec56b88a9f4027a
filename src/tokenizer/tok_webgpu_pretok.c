/* GPT-2 pre-tokenization on the GPU (kernels bpe_pretok.wgsl): the pieces of a batch of text
 * found from its raw bytes by a byte-local rule, with the character classes from PCRE2
 * (tz_pretok_classes) uploaded once; the encoder (tok_webgpu_encode.c) and the word counter
 * (tok_webgpu_words.c) run it on batches cut at context-free boundaries (tz_tg_next_cut). */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tok_webgpu_stages.h"

const char *const tz_tg_pretok_entries[] = {"pt_mask", "pt_scan", "pt_write", "pt_len", "pt_huge", NULL};

/* Why the GPU cannot pre-tokenize for this call ("" when it can): the special literal must be
 * ASCII, at most 32 bytes, hold no newline (so no context-free cut falls inside it) and never
 * overlap itself (so its occurrences are exactly memmem's, found locally on the GPU). */
const char *tz_tg_pretok_literal_why(const char *e, size_t n) {
  if (!e) return "";
  if (n == 0 || n > 32) return "the special literal is empty or longer than 32 bytes";
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)e[i] >= 0x80 || e[i] == '\n') return "the special literal is not ASCII without newlines";
  for (size_t k = 1; k < n; k++)
    if (!memcmp(e, e + k, n - k)) return "the special literal overlaps itself";
  return "";
}

/* The class table on the device (once per process). */
static int upload_classes(void) {
  if (tz_tg_ctx.cls) return 0;
  const uint32_t *tab;
  double s;
  if (tz_pretok_classes(&tab, &s)) return -1;
  tz_tg_last_enc.classes_s = s;
  tz_tg_ctx.cls = tz_tg_sbuf((uint64_t)TZ_PRETOK_CLASS_WORDS * 4, "pretok classes");
  tz_tg_put(tz_tg_ctx.cls, 0, tab, (size_t)TZ_PRETOK_CLASS_WORDS * 4);
  return tz_tg_check_dev("class table upload");
}

/* The end of the batch starting at a: len when the rest fits `target`; else the first
 * context-free cut (tz_pretok_safe_cut) or special literal at or after a + target, else after
 * a; it must leave at most cap bytes in the batch. 0 when there is none (the caller
 * pre-tokenizes on the CPU instead). The GPU treats the batch's ends as the text's ends, which
 * is exact at these cuts (tokenizer.c proves it for the safe cut; the literal ends documents). */
size_t tz_tg_next_cut(const char *text, size_t len, size_t a, size_t target, size_t cap, const char *eot,
                       size_t eotn) {
  if (len - a <= target) return len;
  size_t end = len - a <= cap ? len : a + cap; /* the batch ends by here */
  size_t starts[2] = {a + target, a + 1};
  for (int k = 0; k < 2; k++) {
    size_t from = starts[k];
    if (from >= end) continue;
    size_t best = tz_pretok_safe_cut(text, a, from, end); /* end when there is none */
    const char *hit = eotn ? memmem(text + from, best - from, eot, eotn) : NULL;
    if (hit) best = (size_t)(hit - text);
    if (best < end) return best;
    if (end == len) return len; /* no cut, but the rest fits */
  }
  return 0;
}

/* Pre-tokenization on the GPU for this call? 1 yes (R->Q, R->pu, R->pt_u set up), 0 no: why
 * (a structural reason, silently: the CPU's pieces are the same) or a missing capability (a
 * one-line notice on stderr, once per process). TEZGAH_TOK_GPU_PRETOK=cpu forces the CPU. */
int tz_tg_gpu_pretok_setup(enc_run *R, const char *eot, size_t eotn) {
  const char *env = getenv("TEZGAH_TOK_GPU_PRETOK");
  if (env && !strcmp(env, "cpu")) return 0;
  if (*tz_tg_pretok_literal_why(eot, eotn)) return 0;
  static int warned;
  int ok = R->cap >= (64u << 10) && upload_classes() == 0;
  if (R->cap < (64u << 10))
    tz_err("the adapter's storage binding limit (%llu bytes) leaves batches below 64 KiB",
           (unsigned long long)tz_tg_ctx.lim.maxStorageBufferBindingSize);
  for (int i = 0; i < 5 && ok; i++) ok = (R->Q[i] = tz_tg_pipeline("bpe_pretok", tz_tg_pretok_entries[i])) != NULL;
  if (!ok) {
    if (!warned) fprintf(stderr, "tezgah: GPU pre-tokenization unavailable (%s); pre-tokenizing on the CPU\n", tz_tg_why_bare(tz_errmsg()));
    warned = 1;
    return 0;
  }
  memset(R->pt_u, 0, sizeof R->pt_u);
  R->pt_u[2] = eot ? 1 : 0;
  R->pt_u[3] = (uint32_t)eotn;
  /* pre-tokens longer than this are encoded on the CPU (TEZGAH_TOK_GPU_HUGE overrides, for
   * tests): a GPU thread's heap loop costs tens of microseconds per byte once its heap leaves
   * the caches (a 1 MB run took > 30 s on the H200), the CPU encoder ~1 */
  const char *h = getenv("TEZGAH_TOK_GPU_HUGE");
  R->pt_u[4] = h && atoll(h) >= SHORT ? (uint32_t)atoll(h) : 4096;
  if (eot) memcpy(&R->pt_u[8], eot, eotn);
  R->pu = tz_tg_mkbuf(sizeof R->pt_u, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, "pretok uniforms");
  return 1;
}

int tz_tok_webgpu_pretok(const char *text, size_t n, const char *eot, size_t eotn, uint32_t **pcs, size_t *np) {
  *pcs = NULL;
  *np = 0;
  if (!tz_tok_webgpu_available()) return -1;
  if (*tz_tg_pretok_literal_why(eot, eotn)) return tz_err("webgpu pretok: %s", tz_tg_pretok_literal_why(eot, eotn));
  enc_run R;
  memset(&R, 0, sizeof R);
  uint64_t lim = tz_tg_bind_limit();
  R.cap = (lim - 64) / 36 < (64u << 20) ? (lim - 64) / 36 : (64u << 20);
  if (n > R.cap) return tz_err("webgpu pretok: %zu bytes above one batch (%llu)", n, (unsigned long long)R.cap);
  const char *env = getenv("TEZGAH_TOK_GPU_PRETOK");
  if (env && !strcmp(env, "cpu")) return tz_err("webgpu pretok: TEZGAH_TOK_GPU_PRETOK=cpu");
  if (!tz_tg_gpu_pretok_setup(&R, eot, eotn)) return tz_err("webgpu pretok: unavailable");
  const WGPUBufferUsage SU = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
  uint64_t nblk = (n + 4095) / 4096;
  WGPUBuffer tx = tz_tg_mkbuf(n + 16, SU, "pretok text"), pc = tz_tg_mkbuf(8 * (uint64_t)n + 16, SU, "pretok pieces"),
             mk = tz_tg_mkbuf(257 * nblk * 4 + 16, SU, "pretok masks"), lg = tz_tg_mkbuf(8 * (n / (SHORT + 1) + 1) + 16, SU, "pretok long"),
             sb = tz_tg_mkbuf(16, SU, "pretok state"), cn = tz_tg_mkbuf(4 * (uint64_t)n + 16, SU, "pretok counts"),
             hg = tz_tg_mkbuf(16 * (n / ((uint64_t)R.pt_u[4] + 1) + 1) + 16, SU, "pretok huge");
  char *pad = tz_calloc(n + 4, 1);
  memcpy(pad, text, n);
  tz_tg_put(tx, 0, pad, n);
  free(pad);
  R.pt_u[0] = (uint32_t)n;
  R.pt_u[1] = (uint32_t)nblk;
  tz_tg_put(R.pu, 0, R.pt_u, sizeof R.pt_u);
  WGPUBuffer pb[8] = {tz_tg_ctx.cls, tx, pc, mk, lg, sb, cn, hg};
  WGPUBindGroup q[4];
  for (int i = 0; i < 4; i++) q[i] = tz_tg_bind(R.Q[i], R.pu, sizeof R.pt_u, pb, 8);
  WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(tz_tg_ctx.dev, NULL);
  WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
  tz_tg_dispatch(pass, R.Q[0], q[0], nblk);
  tz_tg_dispatch(pass, R.Q[1], q[1], 1);
  tz_tg_dispatch(pass, R.Q[2], q[2], nblk);
  tz_tg_dispatch(pass, R.Q[3], q[3], (n + 255) / 256);
  W.wgpuComputePassEncoderEnd(pass);
  W.wgpuComputePassEncoderRelease(pass);
  uint32_t st[4] = {0};
  int rc = tz_tg_read_back(enc, sb, 0, st, 12);
  for (int i = 0; i < 4; i++) W.wgpuBindGroupRelease(q[i]);
  uint32_t *v = NULL;
  if (!rc && st[0] > n) rc = tz_err("webgpu pretok: %u pieces for %zu bytes", st[0], n);
  if (!rc) {
    v = tz_malloc(((size_t)st[0] * 2 + 1) * 4);
    rc = tz_tg_read_back(NULL, pc, 0, v, ((size_t)st[0] * 2 + 1) * 4);
  }
  tz_tg_drop(&tx), tz_tg_drop(&pc), tz_tg_drop(&mk), tz_tg_drop(&lg), tz_tg_drop(&sb), tz_tg_drop(&cn), tz_tg_drop(&hg), tz_tg_drop(&R.pu);
  if (rc) {
    free(v);
    return -1;
  }
  *pcs = v;
  *np = st[0];
  return 0;
}
