/* Loaders for other projects' tokenizer files (GPT-2, llama2.c, llm.c), and llama2.c's
 * encode/decode (karpathy/llama2.c run.c, commit 350e04f).
 *
 * GPT-2: encoder.json (mapped token string -> id) + vocab.bpe ("#version: 0.2" then one merge
 * "left right" per line, in rank order). Tokens use GPT-2's bytes_to_unicode mapping.
 *
 * llama2.c tokenizer.bin: int32 max_token_length, then for each token (until EOF; the vocab
 * size is the model's, not stored): float32 score, int32 len, len bytes. Ids 0/1/2 are
 * <unk>/BOS/EOS, 3..258 the byte-fallback pieces "<0x00>".."<0xFF>".
 *
 * llm.c gpt2_tokenizer.bin: 256 x uint32 header ([0] 20240328, [1] version 1|2, [2] vocab
 * size, [3] EOT id in v2), then per token a uint8 length (> 0) and that many raw bytes. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h" /* tz_plural */
#include "core/fileio.h"
#include "core/utf8.h"
#include "tokenizer/tok_internal.h"

#include <cjson/cJSON.h>

/* ---- GPT-2 encoder.json + vocab.bpe -------------------------------------------------------- */

int tz_tok_load_gpt2_files(const char *encoder_json, const char *vocab_bpe, tz_tokenizer **out) {
  *out = NULL;
  char *js = NULL, *bpe = NULL;
  size_t jl, bl;
  cJSON *root = NULL;
  tz_tokenizer *t = NULL;
  tz_bmap names;
  tz_bmap_init(&names, 65536);
  int rc = -1, V = 0;
  if (tz_read_file(encoder_json, &js, &jl) || tz_read_file(vocab_bpe, &bpe, &bl)) goto done;
  if (jl == 0) {
    tz_err("%s: file is empty", encoder_json);
    goto done;
  }
  root = cJSON_ParseWithLength(js, jl);
  if (!root) {
    const char *ep = cJSON_GetErrorPtr();
    long off = (ep && ep >= js && ep <= js + jl) ? (long)(ep - js) : -1;
    if (off >= (long)jl)
      tz_err("%s: invalid JSON (truncated? ends at byte %zu)", encoder_json, jl);
    else
      tz_err("%s: invalid JSON near byte %ld", encoder_json, off);
    goto done;
  }
  if (!cJSON_IsObject(root)) {
    tz_err("%s: top level is not a JSON object (expected token -> id)", encoder_json);
    goto done;
  }
  const cJSON *it;
  cJSON_ArrayForEach(it, root) {
    double d = cJSON_IsNumber(it) ? it->valuedouble : -1;
    if (!(d >= 0 && d < (1 << 24)) || d != (double)(int)d) {
      tz_err("%s: the id of \"%s\" is not a token id (integer in 0..%d)", encoder_json, it->string,
             (1 << 24) - 1);
      goto done;
    }
    if ((int)d + 1 > V) V = (int)d + 1;
  }
  if (V == 0) {
    tz_err("%s: empty vocab", encoder_json);
    goto done;
  }
  t = tz_tok_alloc(TZ_TOK_BYTELEVEL, V);
  cJSON_ArrayForEach(it, root) {
    int id = (int)it->valuedouble;
    const char *key = it->string;
    size_t kl = strlen(key);
    int is_new;
    tz_bmap_put(&names, key, kl, id, &is_new);
    if (!is_new) {
      tz_err("%s: token \"%s\" appears twice", encoder_json, key);
      goto done;
    }
    if (t->tok[id]) {
      tz_err("%s: id %d appears twice", encoder_json, id);
      goto done;
    }
    if (strcmp(key, TZ_EOT_STR) == 0) {
      t->tok[id] = tz_strdup(key);
      t->tok_len[id] = TZ_EOT_LEN;
      t->special[id] = 1;
      t->eot = id;
      continue;
    }
    char *raw = tz_malloc(kl + 1);
    long rl = tz_unmap_token(key, kl, raw);
    if (rl <= 0) {
      free(raw);
      tz_err("%s: token \"%s\" (id %d) is not a byte-level (GPT-2 bytes_to_unicode) token", encoder_json,
             key, id);
      goto done;
    }
    raw[rl] = 0;
    t->tok[id] = raw;
    t->tok_len[id] = (size_t)rl;
  }
  /* vocab.bpe */
  size_t cap = 1024;
  t->merges = tz_malloc(cap * 2 * sizeof *t->merges);
  size_t pos = 0;
  long line = 0;
  while (pos < bl) {
    char *nl = memchr(bpe + pos, '\n', bl - pos);
    size_t e = nl ? (size_t)(nl - bpe) : bl;
    char *s = bpe + pos;
    size_t n = e - pos;
    pos = e + 1;
    line++;
    if (n && s[n - 1] == '\r') n--;
    if (n == 0 || (line == 1 && s[0] == '#')) continue;
    if (memchr(s, 0, n)) {
      tz_err("%s: line %ld contains a NUL byte", vocab_bpe, line);
      goto done;
    }
    char *sp = memchr(s, ' ', n);
    if (!sp || sp == s || sp == s + n - 1 || memchr(sp + 1, ' ', (size_t)(s + n - sp - 1))) {
      tz_err("%s: line %ld \"%.*s\" is not \"left right\"", vocab_bpe, line, (int)(n > 60 ? 60 : n), s);
      goto done;
    }
    const char *parts[2] = {s, sp + 1};
    size_t plen[2] = {(size_t)(sp - s), (size_t)(s + n - sp - 1)};
    if ((size_t)t->n_merges == cap) {
      cap *= 2;
      t->merges = tz_realloc(t->merges, cap * 2 * sizeof *t->merges);
    }
    for (int k = 0; k < 2; k++) {
      long ei = tz_bmap_find(&names, parts[k], plen[k]);
      if (ei < 0) {
        tz_err("%s: line %ld refers to token \"%.*s\", which is not in %s", vocab_bpe, line,
               (int)(plen[k] > 60 ? 60 : plen[k]), parts[k], encoder_json);
        goto done;
      }
      t->merges[2 * t->n_merges + k] = names.ents[ei].val;
    }
    t->n_merges++;
  }
  if (t->n_merges == 0) {
    tz_err("%s: no merges", vocab_bpe);
    goto done;
  }
  if (tz_tok_finish_bytelevel(t, vocab_bpe)) goto done;
  /* Every multi-byte token must come from a merge, or it can never be produced (a truncated
   * vocab.bpe, or merges missing for some tokens). */
  for (int id = 0; id < V; id++)
    if (!t->special[id] && t->tok_len[id] > 1 && t->rank[id] == INT32_MAX) {
      int missing = 0;
      for (int j = 0; j < V; j++) missing += !t->special[j] && t->tok_len[j] > 1 && t->rank[j] == INT32_MAX;
      tz_err("%s: %d tokens of %s are produced by no merge (first: id %d; truncated file?)", vocab_bpe,
             missing, encoder_json, id);
      goto done;
    }
  rc = 0;
done:
  cJSON_Delete(root);
  free(js);
  free(bpe);
  tz_bmap_free(&names);
  if (rc) {
    tz_tok_free(t);
    return -1;
  }
  *out = t;
  return 0;
}

/* ---- llama2.c tokenizer.bin -------------------------------------------------------------- */

int tz_tok_load_llama2c_buf(const char *path, const char *data, size_t len, tz_tokenizer **out) {
  *out = NULL;
  /* a text file (encode --tokenizer a.txt) would be blamed for its "max_token_length" (its first
   * 4 bytes); no tokenizer.bin looks like text: max_token_length <= 65536 puts a NUL in byte 3 */
  char head[128];
  size_t n = len < 64 ? len : 64;
  if (tz_utf8_describe_head((const unsigned char *)data, n, len > n, head, sizeof head))
    return tz_err("%s: not a tokenizer file: a text file (starts with %s), not a llama2.c tokenizer.bin (expected "
                  "tokenizer.json, a GPT-2 directory, llm.c or llama2.c .bin)", path, head);
  if (len < 4) return tz_err("%s: %zu byte%s is too short for a llama2.c tokenizer.bin header", path, len, tz_plural((long long)len));
  int32_t maxlen;
  memcpy(&maxlen, data, 4);
  if (maxlen <= 0 || maxlen > (1 << 16))
    return tz_err("%s: not a tokenizer file (llama2.c max_token_length %d is not in 1..65536; "
                  "expected tokenizer.json, a GPT-2 directory, llm.c or llama2.c .bin)",
                  path, (int)maxlen);
  /* count the tokens first */
  int V = 0;
  size_t pos = 4;
  while (pos < len) {
    int32_t l;
    if (len - pos < 8)
      return tz_err("%s: truncated at byte %zu (token %d: score and length need 8 bytes)", path, pos, V);
    memcpy(&l, data + pos + 4, 4);
    if (l < 0 || l > maxlen)
      return tz_err("%s: token %d has length %d (must be 0..max_token_length %d)", path, V, (int)l,
                    (int)maxlen);
    if ((size_t)l > len - pos - 8)
      return tz_err("%s: truncated in token %d (length %d, %zu byte%s left)", path, V, (int)l, len - pos - 8,
                    tz_plural((long long)(len - pos - 8)));
    pos += 8 + (size_t)l;
    if (++V > (1 << 24)) return tz_err("%s: more than %d tokens", path, 1 << 24);
  }
  if (V < 259)
    return tz_err("%s: %d tokens; a llama2.c tokenizer needs >= 259 (<unk>, BOS, EOS, 256 byte pieces)", path, V);
  tz_tokenizer *t = tz_tok_alloc(TZ_TOK_LLAMA2C, V);
  t->score = tz_malloc((size_t)V * sizeof *t->score);
  t->piece = tz_calloc((size_t)V, sizeof *t->piece);
  t->max_token_length = maxlen;
  t->eot = 2;
  tz_bmap_init(&t->lookup, (size_t)V);
  pos = 4;
  for (int i = 0; i < V; i++) {
    int32_t l;
    memcpy(&t->score[i], data + pos, 4);
    memcpy(&l, data + pos + 4, 4);
    char *p = tz_malloc((size_t)l + 1);
    memcpy(p, data + pos + 8, (size_t)l);
    p[l] = 0;
    pos += 8 + (size_t)l;
    t->piece[i] = p;
    /* run.c works with C strings: a piece ends at its first NUL */
    size_t pl = strlen(p);
    unsigned char bv;
    if (sscanf(p, "<0x%02hhX>", &bv) == 1) { /* exactly run.c's test */
      t->tok[i] = tz_malloc(2);
      t->tok[i][0] = (char)bv;
      t->tok[i][1] = 0;
      t->tok_len[i] = 1;
    } else {
      t->tok[i] = tz_strdup(p);
      t->tok_len[i] = pl;
    }
    int is_new;
    tz_bmap_put(&t->lookup, p, pl, i, &is_new); /* duplicates: the first id wins */
  }
  *out = t;
  return 0;
}

/* run.c encode(): see tokenizer.h. The merge loop of run.c (find the best-scoring adjacent
 * pair, leftmost on ties, merge, repeat) is done with a linked list and a heap keyed by
 * (score desc, position asc): same result, O(n log n). */
typedef struct {
  float score;
  int32_t l, a, b;
} l2_ent;

static int l2_better(const l2_ent *x, const l2_ent *y) {
  return x->score > y->score || (x->score == y->score && x->l < y->l);
}

typedef struct {
  const tz_tokenizer *t;
  int32_t *tok, *next, *prev;
  l2_ent *heap;
  size_t hn, hcap;
  char *buf;
  size_t bufcap;
} l2_ctx;

static void l2_push(l2_ctx *c, l2_ent e) {
  if (c->hn == c->hcap) {
    c->hcap = c->hcap ? c->hcap * 2 : 64;
    c->heap = tz_realloc(c->heap, c->hcap * sizeof *c->heap);
  }
  size_t i = c->hn++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!l2_better(&e, &c->heap[p])) break;
    c->heap[i] = c->heap[p];
    i = p;
  }
  c->heap[i] = e;
}

static l2_ent l2_pop(l2_ctx *c) {
  l2_ent top = c->heap[0], last = c->heap[--c->hn];
  size_t i = 0, n = c->hn;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    const l2_ent *best = &last;
    if (l < n && l2_better(&c->heap[l], best)) m = l, best = &c->heap[l];
    if (r < n && l2_better(&c->heap[r], best)) m = r;
    if (m == i) break;
    c->heap[i] = c->heap[m];
    i = m;
  }
  if (n) c->heap[i] = last;
  return top;
}

/* id of piece(a) + piece(b) (as C strings), or -1 */
static int32_t l2_pair(l2_ctx *c, int32_t a, int32_t b) {
  const tz_tokenizer *t = c->t;
  size_t la = strlen(t->piece[a]), lb = strlen(t->piece[b]);
  if (la + lb + 1 > c->bufcap) {
    c->bufcap = (la + lb + 1) * 2;
    c->buf = tz_realloc(c->buf, c->bufcap);
  }
  memcpy(c->buf, t->piece[a], la);
  memcpy(c->buf + la, t->piece[b], lb);
  long e = tz_bmap_find(&t->lookup, c->buf, la + lb);
  return e < 0 ? -1 : t->lookup.ents[e].val;
}

static void l2_try(l2_ctx *c, int32_t l, int32_t r) {
  if (l < 0 || r < 0) return;
  int32_t id = l2_pair(c, c->tok[l], c->tok[r]);
  /* run.c: best_score starts at -1e10 (a float) and a pair wins with score > best_score */
  if (id >= 0 && c->t->score[id] > (float)-1e10) l2_push(c, (l2_ent){c->t->score[id], l, c->tok[l], c->tok[r]});
}

int tz_tok_encode_llama2c(const tz_tokenizer *t, const char *text, int bos, int eos, int32_t **ids,
                          size_t *n_ids) {
  *ids = NULL;
  *n_ids = 0;
  if (t->kind != TZ_TOK_LLAMA2C) return tz_err("tokenizer: not a llama2.c tokenizer");
  if (!text) return tz_err("tokenizer: cannot encode NULL text");
  size_t tl = strlen(text);
  /* at most: BOS + prefix + one id per byte + EOS */
  int32_t *tok = tz_malloc((tl + 3) * sizeof *tok);
  size_t n = 0;
  if (bos) tok[n++] = 1;
  if (text[0]) {
    long e = tz_bmap_find(&t->lookup, " ", 1);
    if (e < 0) {
      free(tok);
      return tz_err("tokenizer: the llama2.c vocab has no \" \" piece (needed for the dummy prefix)");
    }
    tok[n++] = t->lookup.ents[e].val;
  }
  char sbuf[8];
  size_t sl = 0;
  for (const char *c = text; *c; c++) {
    if ((*c & 0xC0) != 0x80) sl = 0;
    sbuf[sl++] = *c;
    if ((c[1] & 0xC0) == 0x80 && sl < 4) continue;
    long e = tz_bmap_find(&t->lookup, sbuf, sl);
    if (e >= 0) {
      tok[n++] = t->lookup.ents[e].val;
    } else {
      for (size_t i = 0; i < sl; i++) tok[n++] = (unsigned char)sbuf[i] + 3;
    }
    sl = 0;
  }
  l2_ctx c = {.t = t, .tok = tok};
  c.next = tz_malloc((n + 1) * sizeof *c.next);
  c.prev = tz_malloc((n + 1) * sizeof *c.prev);
  for (size_t i = 0; i < n; i++) {
    c.next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    c.prev[i] = (int32_t)i - 1;
  }
  for (size_t i = 0; i + 1 < n; i++) l2_try(&c, (int32_t)i, (int32_t)i + 1);
  while (c.hn) {
    l2_ent e = l2_pop(&c);
    int32_t l = e.l, r = c.next[l];
    if (tok[l] != e.a || r < 0 || tok[r] != e.b) continue; /* stale */
    tok[l] = l2_pair(&c, e.a, e.b);
    tok[r] = -1;
    c.next[l] = c.next[r];
    if (c.next[r] >= 0) c.prev[c.next[r]] = l;
    l2_try(&c, c.prev[l], l);
    l2_try(&c, l, c.next[l]);
  }
  size_t o = 0;
  if (n)
    for (int32_t i = 0; i >= 0; i = c.next[i]) tok[o++] = tok[i];
  if (eos) tok[o++] = 2;
  free(c.next);
  free(c.prev);
  free(c.heap);
  free(c.buf);
  *ids = tok;
  *n_ids = o;
  return 0;
}

/* run.c decode(): the piece for tok after prev (no safe_printf filter); id must be valid. */
void tz_l2_decode_raw(const tz_tokenizer *t, int prev, int tok, const char **bytes, size_t *len) {
  static const unsigned char BYTES[256] = {
#define B4(x) x, x + 1, x + 2, x + 3
#define B16(x) B4(x), B4(x + 4), B4(x + 8), B4(x + 12)
      B16(0), B16(16), B16(32), B16(48), B16(64), B16(80), B16(96), B16(112),
      B16(128), B16(144), B16(160), B16(176), B16(192), B16(208), B16(224), B16(240)};
#undef B16
#undef B4
  const char *p = t->piece[tok];
  if (prev == 1 && p[0] == ' ') p++;
  unsigned char bv;
  if (sscanf(p, "<0x%02hhX>", &bv) == 1) { /* exactly run.c's test, after the strip */
    *bytes = (const char *)&BYTES[bv];
    *len = 1;
  } else {
    *bytes = p;
    *len = strlen(p);
  }
}

int tz_tok_decode_piece_llama2c(const tz_tokenizer *t, int prev, int tok, const char **bytes, size_t *len) {
  *bytes = "";
  *len = 0;
  if (t->kind != TZ_TOK_LLAMA2C) return tz_err("tokenizer: not a llama2.c tokenizer");
  if (tok < 0 || tok >= t->vocab_size)
    return tz_err("tokenizer: token id %d out of range (vocab size %d)", tok, t->vocab_size);
  tz_l2_decode_raw(t, prev, tok, bytes, len);
  /* run.c safe_printf(): nothing for an empty piece or a lone unprintable, non-space byte;
   * printf("%s") stops at a NUL. */
  if (*len == 1) {
    unsigned char b = (unsigned char)(*bytes)[0];
    if (!(isprint(b) || isspace(b))) *len = 0;
  }
  return 0;
}

/* ---- llm.c gpt2_tokenizer.bin -------------------------------------------------------------- */

int tz_tok_load_llmc_buf(const char *path, const char *data, size_t len, tz_tokenizer **out) {
  *out = NULL;
  if (len < 1024)
    return tz_err("%s: %zu byte%s is smaller than the 1024-byte llm.c tokenizer header (truncated?)", path, len,
                  tz_plural((long long)len));
  uint32_t h[4];
  memcpy(h, data, sizeof h);
  if (h[0] != 20240328) return tz_err("%s: header magic %u (expected 20240328)", path, h[0]);
  if (h[1] != 1 && h[1] != 2) return tz_err("%s: header version %u (expected 1 or 2)", path, h[1]);
  if (h[2] == 0 || h[2] > (1u << 24)) return tz_err("%s: header vocab size %u (must be 1..%d)", path, h[2], 1 << 24);
  int V = (int)h[2];
  if ((size_t)V > (len - 1024) / 2) /* every token takes >= 2 bytes */
    return tz_err("%s: truncated: header vocab size %d needs at least %zu bytes, the file has %zu", path, V,
                  1024 + 2 * (size_t)V, len);
  uint32_t eot = h[1] == 2 ? h[3] : 50256;
  if (eot >= (uint32_t)V) return tz_err("%s: header EOT id %u is out of range (vocab size %d)", path, eot, V);
  tz_tokenizer *t = tz_tok_alloc(TZ_TOK_LLMC, V);
  size_t pos = 1024;
  for (int i = 0; i < V; i++) {
    if (pos >= len) {
      tz_tok_free(t);
      return tz_err("%s: truncated: token %d of %d is missing", path, i, V);
    }
    size_t l = (unsigned char)data[pos++];
    if (l == 0) {
      tz_tok_free(t);
      return tz_err("%s: token %d has length 0", path, i);
    }
    if (l > len - pos) {
      tz_tok_free(t);
      return tz_err("%s: truncated in token %d (length %zu, %zu byte%s left)", path, i, l, len - pos,
                    tz_plural((long long)(len - pos)));
    }
    t->tok[i] = tz_malloc(l + 1);
    memcpy(t->tok[i], data + pos, l);
    t->tok[i][l] = 0;
    t->tok_len[i] = l;
    pos += l;
  }
  if (pos != len) {
    tz_tok_free(t);
    return tz_err("%s: %zu byte%s of trailing data after %d token%s", path, len - pos, tz_plural((long long)(len - pos)),
                  V, tz_plural(V));
  }
  t->eot = (int)eot;
  t->special[eot] = 1;
  *out = t;
  return 0;
}
