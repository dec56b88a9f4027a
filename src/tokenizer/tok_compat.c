/* Loaders for other projects' tokenizer files.
 *
 * GPT-2 (openai/gpt-2 encoder.json + vocab.bpe):
 *   encoder.json: {"<mapped token string>": id, ...} with GPT-2's bytes_to_unicode mapping,
 *   including "<|endoftext|>": 50256 (treated as the special EOT token).
 *   vocab.bpe: first line "#version: 0.2", then one merge "left right" per line in rank order.
 *   Loaded into the same byte-level BPE as our tokenizer.json, so encoding follows tiktoken's
 *   rule and gives r50k_base's ids.
 *
 * llama2.c tokenizer.bin (karpathy/llama2.c, tokenizer.py export; read by run.c
 * build_tokenizer): int32 max_token_length, then for every token: float32 score, int32 len,
 * len bytes (the piece, no NUL). The vocab size is not stored (run.c takes it from the model);
 * here it is the number of entries up to end of file. Ids 0 <unk>, 1 BOS, 2 EOS; pieces
 * "<0xNN>" are byte-fallback tokens (id = byte + 3).
 *
 * llm.c gpt2_tokenizer.bin (llmc/tokenizer.h): 256 x uint32 header: [0]=20240328,
 * [1]=version 1 or 2, [2]=vocab size, [3]=EOT id (version 2; version 1 implies 50256);
 * then per token: uint8 length (> 0) and that many raw bytes. Decode only. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "tokenizer/tok_internal.h"

/* ---- GPT-2 ------------------------------------------------------------------------------- */

int tz_tok_load_gpt2_files(const char *encoder_json, const char *vocab_bpe, tz_tokenizer **out) {
  *out = NULL;
  char *ej = NULL, *vb = NULL;
  size_t el, vl;
  cJSON *enc = NULL, *root = NULL;
  int rc = -1;
  if (tz_read_file(encoder_json, &ej, &el) || tz_read_file(vocab_bpe, &vb, &vl)) goto done;
  enc = cJSON_ParseWithLength(ej, el);
  if (!enc) {
    const char *ep = cJSON_GetErrorPtr();
    long off = (ep && ep >= ej && ep <= ej + el) ? (long)(ep - ej) : -1;
    tz_err("%s: invalid JSON near byte %ld", encoder_json, off);
    goto done;
  }
  if (!cJSON_IsObject(enc)) {
    tz_err("%s: not a JSON object of token -> id", encoder_json);
    goto done;
  }
  root = cJSON_CreateObject();
  cJSON *model = cJSON_AddObjectToObject(root, "model");
  cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
  const cJSON *eot = cJSON_GetObjectItemCaseSensitive(enc, TZ_EOT_STR);
  if (eot && cJSON_IsNumber(eot)) {
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "id", eot->valuedouble);
    cJSON_AddStringToObject(a, "content", TZ_EOT_STR);
    cJSON_AddItemToArray(added, a);
  }
  cJSON_AddItemToObject(model, "vocab", enc);
  enc = NULL; /* owned by root now */
  cJSON *merges = cJSON_AddArrayToObject(model, "merges");
  /* vocab.bpe lines */
  size_t pos = 0;
  int line = 0;
  while (pos < vl) {
    size_t e = pos;
    while (e < vl && vb[e] != '\n') e++;
    line++;
    size_t le = e;
    if (le > pos && vb[le - 1] == '\r') le--;
    if (line == 1 && le - pos >= 8 && memcmp(vb + pos, "#version", 8) == 0) {
      pos = e + 1;
      continue;
    }
    if (le > pos) {
      const char *sp = memchr(vb + pos, ' ', le - pos);
      if (!sp || sp == vb + pos || sp + 1 == vb + le || memchr(sp + 1, ' ', (size_t)(vb + le - sp - 1))) {
        tz_err("%s: line %d is not \"left right\"", vocab_bpe, line);
        goto done;
      }
      char *m = tz_malloc(le - pos + 1);
      memcpy(m, vb + pos, le - pos);
      m[le - pos] = 0;
      cJSON_AddItemToArray(merges, cJSON_CreateString(m));
      free(m);
    }
    pos = e + 1;
  }
  size_t nl = strlen(encoder_json) + strlen(vocab_bpe) + 8;
  char *name = tz_malloc(nl);
  snprintf(name, nl, "%s + %s", encoder_json, vocab_bpe);
  rc = tz_tok_from_cjson(root, name, out);
  free(name);
done:
  cJSON_Delete(enc);
  cJSON_Delete(root);
  free(ej);
  free(vb);
  return rc;
}

/* ---- llama2.c ----------------------------------------------------------------------------- */

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int tz_tok_load_llama2c_buf(const char *path, const char *data, size_t len, tz_tokenizer **out) {
  *out = NULL;
  int32_t maxlen;
  if (len < 4) return tz_err("%s: too short for a llama2.c tokenizer.bin (%zu bytes)", path, len);
  memcpy(&maxlen, data, 4);
  if (maxlen <= 0 || maxlen > 65536)
    return tz_err("%s: not a tokenizer file (llama2.c max_token_length would be %d)", path, maxlen);
  /* count entries */
  size_t pos = 4;
  int V = 0;
  while (pos < len) {
    float score;
    int32_t l;
    if (len - pos < 8) return tz_err("%s: truncated at token %d (header needs 8 bytes, %zu left)", path, V, len - pos);
    memcpy(&score, data + pos, 4);
    memcpy(&l, data + pos + 4, 4);
    if (l < 0 || l > maxlen)
      return tz_err("%s: token %d has length %d (max_token_length is %d)", path, V, l, maxlen);
    if ((size_t)l > len - pos - 8)
      return tz_err("%s: truncated at token %d (needs %d bytes, %zu left)", path, V, l, len - pos - 8);
    pos += 8 + (size_t)l;
    if (++V > (1 << 24)) return tz_err("%s: more than %d tokens", path, 1 << 24);
  }
  if (V < 3) return tz_err("%s: only %d tokens (llama2.c needs <unk>, BOS, EOS)", path, V);
  tz_tokenizer *t = tz_tok_alloc(TZ_TOK_LLAMA2C, V);
  t->max_token_length = maxlen;
  t->score = tz_malloc((size_t)V * sizeof *t->score);
  t->piece = tz_calloc((size_t)V, sizeof *t->piece);
  tz_bmap_init(&t->lookup, (size_t)V);
  t->eot = 2;
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
    /* run.c decode(): sscanf(piece, "<0x%02hhX>", &byte) == 1 -> the raw byte */
    int h1 = l >= 4 && memcmp(p, "<0x", 3) == 0 ? hexval(p[3]) : -1;
    if (h1 >= 0) {
      int h2 = hexval(p[4]);
      t->tok[i] = tz_malloc(2);
      t->tok[i][0] = (char)(h2 >= 0 ? h1 * 16 + h2 : h1);
      t->tok[i][1] = 0;
      t->tok_len[i] = 1;
    } else {
      t->tok[i] = tz_strdup(p);
      t->tok_len[i] = strlen(p);
    }
    tz_bmap_put(&t->lookup, p, strlen(p), i, NULL); /* first id wins on duplicate pieces */
  }
  *out = t;
  return 0;
}

typedef struct {
  float score;
  int32_t l, a, b;
} lheap_ent;

static inline int lbetter(const lheap_ent *x, const lheap_ent *y) {
  return x->score > y->score || (x->score == y->score && x->l < y->l);
}

typedef struct {
  lheap_ent *v;
  size_t n, cap;
} lheap;

static void lpush(lheap *h, lheap_ent e) {
  if (h->n == h->cap) {
    h->cap = h->cap ? h->cap * 2 : 64;
    h->v = tz_realloc(h->v, h->cap * sizeof *h->v);
  }
  size_t i = h->n++;
  while (i > 0 && lbetter(&e, &h->v[(i - 1) / 2])) {
    h->v[i] = h->v[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->v[i] = e;
}

static lheap_ent lpop(lheap *h) {
  lheap_ent top = h->v[0], last = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    const lheap_ent *best = &last;
    if (l < h->n && lbetter(&h->v[l], best)) m = l, best = &h->v[l];
    if (r < h->n && lbetter(&h->v[r], best)) m = r;
    if (m == i) break;
    h->v[i] = h->v[m];
    i = m;
  }
  if (h->n) h->v[i] = last;
  return top;
}

/* id of piece(a)+piece(b), or -1 */
static int32_t lmerge(const tz_tokenizer *t, int32_t a, int32_t b, char **buf, size_t *cap) {
  size_t la = strlen(t->piece[a]), lb = strlen(t->piece[b]);
  if (la + lb + 1 > *cap) {
    *cap = (la + lb + 1) * 2;
    *buf = tz_realloc(*buf, *cap);
  }
  memcpy(*buf, t->piece[a], la);
  memcpy(*buf + la, t->piece[b], lb);
  long e = tz_bmap_find(&t->lookup, *buf, la + lb);
  return e < 0 ? -1 : t->lookup.ents[e].val;
}

static void ltry(const tz_tokenizer *t, lheap *h, const int32_t *tok, int32_t l, int32_t r, char **buf, size_t *cap) {
  if (l < 0 || r < 0) return;
  int32_t id = lmerge(t, tok[l], tok[r], buf, cap);
  /* run.c: best_score starts at -1e10 and needs a strictly greater score */
  if (id >= 0 && t->score[id] > -1e10f) lpush(h, (lheap_ent){t->score[id], l, tok[l], tok[r]});
}

int tz_tok_encode_llama2c(const tz_tokenizer *t, const char *text, int bos, int eos, int32_t **ids,
                          size_t *n_ids) {
  *ids = NULL;
  *n_ids = 0;
  if (t->kind != TZ_TOK_LLAMA2C) return tz_err("tokenizer: tz_tok_encode_llama2c needs a llama2.c tokenizer.bin");
  size_t tl = strlen(text);
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
  /* code points (at most 4 bytes), else byte fallback */
  char cp[5];
  size_t cl = 0;
  for (size_t i = 0; i < tl; i++) {
    unsigned char c = (unsigned char)text[i];
    if ((c & 0xC0) != 0x80) cl = 0;
    cp[cl++] = (char)c;
    if (i + 1 < tl && ((unsigned char)text[i + 1] & 0xC0) == 0x80 && cl < 4) continue;
    long e = tz_bmap_find(&t->lookup, cp, cl);
    if (e >= 0) {
      tok[n++] = t->lookup.ents[e].val;
    } else {
      for (size_t k = 0; k < cl; k++) {
        int32_t id = (unsigned char)cp[k] + 3;
        if (id >= t->vocab_size) {
          free(tok);
          return tz_err("tokenizer: byte fallback id %d out of range (vocab size %d)", id, t->vocab_size);
        }
        tok[n++] = id;
      }
    }
    cl = 0;
  }
  /* merges: highest score first, leftmost on ties (same result as run.c's rescans) */
  int32_t *next = tz_malloc((n + 1) * sizeof *next), *prev = tz_malloc((n + 1) * sizeof *prev);
  for (size_t i = 0; i < n; i++) {
    next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    prev[i] = (int32_t)i - 1;
  }
  lheap h = {0};
  char *buf = NULL;
  size_t cap = 0;
  for (size_t i = 0; i + 1 < n; i++) ltry(t, &h, tok, (int32_t)i, (int32_t)i + 1, &buf, &cap);
  while (h.n) {
    lheap_ent e = lpop(&h);
    int32_t l = e.l, r = next[l];
    if (tok[l] != e.a || r < 0 || tok[r] != e.b) continue;
    tok[l] = lmerge(t, e.a, e.b, &buf, &cap);
    tok[r] = -1;
    next[l] = next[r];
    if (next[r] >= 0) prev[next[r]] = l;
    ltry(t, &h, tok, prev[l], l, &buf, &cap);
    ltry(t, &h, tok, l, next[l], &buf, &cap);
  }
  size_t o = 0;
  if (n)
    for (int32_t i = 0; i >= 0; i = next[i]) tok[o++] = tok[i];
  if (eos) tok[o++] = 2;
  free(h.v);
  free(buf);
  free(next);
  free(prev);
  *ids = tok;
  *n_ids = o;
  return 0;
}

/* ---- llm.c -------------------------------------------------------------------------------- */

int tz_tok_load_llmc_buf(const char *path, const char *data, size_t len, tz_tokenizer **out) {
  *out = NULL;
  uint32_t hdr[256];
  if (len < sizeof hdr) return tz_err("%s: llm.c tokenizer header truncated (%zu of 1024 bytes)", path, len);
  memcpy(hdr, data, sizeof hdr);
  if (hdr[0] != 20240328) return tz_err("%s: bad llm.c tokenizer magic %u (want 20240328)", path, hdr[0]);
  if (hdr[1] != 1 && hdr[1] != 2) return tz_err("%s: unsupported llm.c tokenizer version %u (1 or 2)", path, hdr[1]);
  uint32_t V = hdr[2], eot = hdr[1] == 2 ? hdr[3] : 50256;
  if (V == 0 || V > (1u << 24)) return tz_err("%s: bad vocab size %u", path, V);
  if (eot >= V) return tz_err("%s: EOT id %u out of range (vocab size %u)", path, eot, V);
  tz_tokenizer *t = tz_tok_alloc(TZ_TOK_LLMC, (int)V);
  size_t pos = sizeof hdr;
  for (uint32_t i = 0; i < V; i++) {
    if (pos >= len) {
      tz_tok_free(t);
      return tz_err("%s: truncated at token %u of %u", path, i, V);
    }
    size_t l = (unsigned char)data[pos++];
    if (l == 0) {
      tz_tok_free(t);
      return tz_err("%s: token %u has length 0", path, i);
    }
    if (l > len - pos) {
      tz_tok_free(t);
      return tz_err("%s: truncated in token %u (needs %zu bytes, %zu left)", path, i, l, len - pos);
    }
    t->tok[i] = tz_malloc(l + 1);
    memcpy(t->tok[i], data + pos, l);
    t->tok[i][l] = 0;
    t->tok_len[i] = l;
    pos += l;
  }
  if (pos != len) {
    tz_tok_free(t);
    return tz_err("%s: %zu unexpected bytes after the last token", path, len - pos);
  }
  t->eot = (int)eot;
  t->special[eot] = 1;
  *out = t;
  return 0;
}
