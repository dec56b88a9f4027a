/* Byte-level BPE core: pre-tokenization (PCRE2), encoding, decoding, accessors.
 * Training is in tok_train.c, the JSON format in tok_json.c, other formats in tok_compat.c. */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/error.h"
#include "core/stop.h"
#include "tokenizer/tok_internal.h"

/* ---- GPT-2 bytes_to_unicode -------------------------------------------------------------
 * Bytes 33..126, 161..172 and 174..255 map to the same code point; the other 68 bytes
 * (0..32, 127..160, 173), in increasing order, map to 256, 257, ... 323. */
uint32_t tz_byte_to_cp(int b) {
  if (b <= 32) return 256 + (uint32_t)b;
  if (b >= 127 && b <= 160) return 256 + 33 + (uint32_t)(b - 127);
  if (b == 173) return 256 + 67;
  return (uint32_t)b;
}

int tz_cp_to_byte(uint32_t cp) {
  if (cp < 256) return tz_byte_to_cp((int)cp) == cp ? (int)cp : -1;
  if (cp < 256 + 33) return (int)(cp - 256);
  if (cp < 256 + 67) return (int)(cp - 256 - 33 + 127);
  if (cp == 256 + 67) return 173;
  return -1;
}

long tz_unmap_token(const char *s, size_t len, char *out) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0, o = 0;
  while (i < len) {
    uint32_t cp;
    if (u[i] < 0x80) {
      cp = u[i++];
    } else if ((u[i] & 0xE0) == 0xC0 && i + 1 < len && (u[i + 1] & 0xC0) == 0x80) {
      cp = ((uint32_t)(u[i] & 0x1F) << 6) | (u[i + 1] & 0x3F);
      i += 2;
    } else {
      return -1; /* mapped code points are all < 0x800 */
    }
    int b = tz_cp_to_byte(cp);
    if (b < 0) return -1;
    out[o++] = (char)b;
  }
  return (long)o;
}

char *tz_map_token(const char *b, size_t len) {
  char *s = tz_malloc(len * 2 + 1), *p = s;
  for (size_t i = 0; i < len; i++) {
    uint32_t cp = tz_byte_to_cp((unsigned char)b[i]);
    if (cp < 0x80) {
      *p++ = (char)cp;
    } else {
      *p++ = (char)(0xC0 | (cp >> 6));
      *p++ = (char)(0x80 | (cp & 0x3F));
    }
  }
  *p = 0;
  return s;
}

/* ---- pre-tokenizer ------------------------------------------------------------------------ */

/* GPT-2 / tiktoken r50k_base pattern. */
static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

int tz_pretok_compile(pcre2_code **out) {
  int errcode;
  PCRE2_SIZE erroff;
  uint32_t opts = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)GPT2_PATTERN, PCRE2_ZERO_TERMINATED, opts, &errcode,
                                 &erroff, NULL);
  if (!re) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(errcode, msg, sizeof msg);
    return tz_err("tokenizer: cannot compile the pre-tokenizer regex at offset %zu: %s",
                  (size_t)erroff, (const char *)msg);
  }
  (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* falls back to the interpreter */
  *out = re;
  return 0;
}

/* Without PCRE2's JIT (the wasm build's PCRE2 has none) pcre2_match validates the UTF-8 of
 * the whole rest of the subject on every call (PCRE2_MATCH_INVALID_UTF forces the check): a
 * pass over a text is quadratic in its length (1.1 MB took 191 s in wasm, 0.4 s natively with
 * JIT). There each match is looked for in a window of the subject, from 256 bytes, doubled
 * until the match ends at least PRETOK_MARGIN bytes before the window's end. Why that match is
 * the one the whole subject gives, for GPT2_PATTERN: its alternatives are literals of at most
 * 3 bytes, runs (\p{L}+, \p{N}+, [^...]+, \s+) and one character of lookahead; an
 * alternative cut by the window's end either is a literal starting within 3 bytes of it or
 * runs to it and then matches there (a run's end, a lookahead at the end of the subject). So
 * a match ending earlier, at every start position tried before it, saw only bytes inside the
 * window (a UTF-8 character cut by the window's end is a barrier within 3 bytes of it). No
 * match or an error in a window: the next, wider one. With JIT (native builds) the check is
 * done once per subject and the whole subject is passed, as before. */
enum { PRETOK_WINDOW0 = 256, PRETOK_MARGIN = 16 };
static int pretok_match(const pcre2_code *re, const char *s, size_t n, size_t pos, int windowed,
                        pcre2_match_data *md, pcre2_match_context *mc) {
  for (size_t w = PRETOK_WINDOW0; windowed && pos + w < n; w *= 2) {
    int m = pcre2_match(re, (PCRE2_SPTR)s, pos + w, pos, 0, md, mc);
    if (m > 0 && pcre2_get_ovector_pointer(md)[1] + PRETOK_MARGIN <= pos + w) return m;
  }
  return pcre2_match(re, (PCRE2_SPTR)s, n, pos, 0, md, mc);
}

void tz_pretok_state_free(tz_pretok_state *st) {
  if (st->js) pcre2_jit_stack_free(st->js);
  pcre2_match_context_free(st->mc);
  pcre2_match_data_free(st->md);
  *st = (tz_pretok_state){0};
}

int tz_pretok_each(const pcre2_code *re, const char *s, size_t n, tz_pretok_cb cb, void *ud) {
  tz_pretok_state st = {0};
  int rc = tz_pretok_each_st(re, &st, s, n, cb, ud);
  tz_pretok_state_free(&st);
  return rc;
}

int tz_pretok_each_st(const pcre2_code *re, tz_pretok_state *st, const char *s, size_t n, tz_pretok_cb cb,
                      void *ud) {
  if (!st->mc) {
    st->md = pcre2_match_data_create_from_pattern(re, NULL);
    st->mc = pcre2_match_context_create(NULL);
    st->js = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, NULL);
    if (!st->md || !st->mc) TZ_ASSERT(!"pcre2 out of memory");
    if (st->js) pcre2_jit_stack_assign(st->mc, NULL, st->js);
  }
  pcre2_match_data *md = st->md;
  pcre2_match_context *mc = st->mc;
  size_t jit_size = 0;
  int windowed = pcre2_pattern_info(re, PCRE2_INFO_JITSIZE, &jit_size) != 0 || jit_size == 0;
  int rc = 0;
  size_t pos = 0;
  while (pos < n) {
    int m = pretok_match(re, s, n, pos, windowed, md, mc);
    if (m == PCRE2_ERROR_NOMATCH) {
      rc = cb(ud, s + pos, n - pos); /* trailing bytes the regex cannot match */
      break;
    }
    if (m < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(m, msg, sizeof msg);
      rc = tz_err("tokenizer: pre-tokenizer regex failed at byte %zu: %s", pos, (const char *)msg);
      break;
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    size_t a = ov[0], b = ov[1];
    if (a > pos && (rc = cb(ud, s + pos, a - pos))) break; /* gap (invalid UTF-8) */
    if (b <= a) b = a + 1;                                    /* cannot happen with this pattern */
    if ((rc = cb(ud, s + a, b - a))) break;
    pos = b;
  }
  return rc;
}

struct enc_ctx;
static void enc_ctx_free(struct enc_ctx *c);

/* ---- construction -------------------------------------------------------------------------- */

tz_tokenizer *tz_tok_alloc(int kind, int vocab_size) {
  tz_tokenizer *t = tz_calloc(1, sizeof *t);
  t->kind = kind;
  t->vocab_size = vocab_size;
  t->tok = tz_calloc((size_t)vocab_size + 1, sizeof *t->tok);
  t->tok_len = tz_calloc((size_t)vocab_size + 1, sizeof *t->tok_len);
  t->special = tz_calloc((size_t)vocab_size + 1, 1);
  t->eot = -1;
  for (int i = 0; i < 256; i++) t->byte_id[i] = -1;
  pthread_mutex_init(&t->pool_lock, NULL);
  return t;
}

void tz_tok_free(tz_tokenizer *t) {
  if (!t) return;
  for (int i = 0; i < t->vocab_size; i++) {
    free(t->tok[i]);
    if (t->piece) free(t->piece[i]);
  }
  free(t->tok);
  free(t->tok_len);
  free(t->special);
  free(t->merges);
  free(t->rank);
  free(t->score);
  free(t->piece);
  tz_u64map_free(&t->pair);
  tz_bmap_free(&t->lookup);
  if (t->re) pcre2_code_free(t->re);
  for (int i = 0; i < t->pool_n; i++) enc_ctx_free(t->pool[i]);
  free(t->pool);
  pthread_mutex_destroy(&t->pool_lock);
  free(t);
}

static void show_bytes(char *dst, size_t cap, const char *b, size_t n) {
  /* printable rendering of a token for error messages */
  size_t o = 0;
  for (size_t i = 0; i < n && o + 5 < cap; i++) {
    unsigned char c = (unsigned char)b[i];
    if (c >= 32 && c < 127 && c != '\\')
      dst[o++] = (char)c;
    else
      o += (size_t)snprintf(dst + o, cap - o, "\\x%02x", c);
  }
  dst[o] = 0;
}

int tz_tok_finish_bytelevel(tz_tokenizer *t, const char *name) {
  int V = t->vocab_size;
  char shown[128];
  tz_bmap_init(&t->lookup, (size_t)V);
  for (int i = 0; i < V; i++) {
    if (!t->tok[i]) return tz_err("%s: token id %d is missing (ids must be 0..%d)", name, i, V - 1);
    if (t->special[i]) continue;
    if (t->tok_len[i] == 0) return tz_err("%s: token id %d is empty", name, i);
    int is_new;
    long e = tz_bmap_put(&t->lookup, t->tok[i], t->tok_len[i], i, &is_new);
    if (!is_new) {
      show_bytes(shown, sizeof shown, t->tok[i], t->tok_len[i]);
      return tz_err("%s: duplicate token \"%s\" (ids %d and %d)", name, shown,
                    (int)t->lookup.ents[e].val, i);
    }
    if (t->tok_len[i] == 1) t->byte_id[(unsigned char)t->tok[i][0]] = i;
  }
  for (int b = 0; b < 256; b++)
    if (t->byte_id[b] < 0)
      return tz_err("%s: no token for the single byte 0x%02x (a byte-level BPE needs all 256)", name, b);
  t->rank = tz_malloc((size_t)V * sizeof *t->rank);
  for (int i = 0; i < V; i++) t->rank[i] = INT32_MAX;
  char *buf = NULL;
  size_t bufcap = 0;
  for (int r = 0; r < t->n_merges; r++) {
    int a = t->merges[2 * r], b = t->merges[2 * r + 1];
    size_t la = t->tok_len[a], lb = t->tok_len[b];
    if (t->special[a] || t->special[b]) {
      free(buf);
      return tz_err("%s: merge %d uses a special token", name, r);
    }
    if (la + lb > bufcap) {
      bufcap = (la + lb) * 2;
      buf = tz_realloc(buf, bufcap);
    }
    memcpy(buf, t->tok[a], la);
    memcpy(buf + la, t->tok[b], lb);
    long e = tz_bmap_find(&t->lookup, buf, la + lb);
    if (e < 0) {
      show_bytes(shown, sizeof shown, buf, la + lb);
      free(buf);
      return tz_err("%s: merge %d produces \"%s\", which is not in the vocab", name, r, shown);
    }
    int id = t->lookup.ents[e].val;
    if (t->rank[id] != INT32_MAX) {
      show_bytes(shown, sizeof shown, buf, la + lb);
      free(buf);
      return tz_err("%s: merges %d and %d both produce \"%s\" (duplicate merge)", name,
                    (int)t->rank[id], r, shown);
    }
    t->rank[id] = r;
  }
  free(buf);
  /* Every multi-byte (non-special) token must be the product of a merge: a token no merge
   * produces can never come out of encode, so a file with merges missing (cut short, or an
   * emptied list) would silently encode text differently from the model's training data. */
  for (int id = 0; id < V; id++) {
    if (t->special[id] || t->tok_len[id] < 2 || t->rank[id] != INT32_MAX) continue;
    show_bytes(shown, sizeof shown, t->tok[id], t->tok_len[id]);
    return tz_err("%s: token id %d \"%s\" is produced by no merge (missing merges: %d merges for %d tokens)", name,
                  id, shown, t->n_merges, V);
  }
  /* tiktoken's rule: adjacent parts merge when their concatenation is a ranked token, whatever
   * the split; so index every split of every ranked token. */
  tz_u64map_init(&t->pair, (size_t)t->n_merges * 4 + 16);
  /* Only a split into two lengths some token has can be two tokens: without this filter a token
   * of L bytes hashed O(L^2) bytes (a 2 MB run of one letter trained 1 MB tokens and took 400 s
   * here). */
  size_t maxlen = 0;
  for (int id = 0; id < V; id++)
    if (t->tok_len[id] > maxlen) maxlen = t->tok_len[id];
  uint8_t *has_len = tz_calloc(maxlen + 1, 1);
  for (int id = 0; id < V; id++)
    if (!t->special[id]) has_len[t->tok_len[id]] = 1;
  for (int id = 0; id < V; id++) {
    if (t->rank[id] == INT32_MAX) continue;
    for (size_t k = 1; k < t->tok_len[id]; k++) {
      if (!has_len[k] || !has_len[t->tok_len[id] - k]) continue;
      long ea = tz_bmap_find(&t->lookup, t->tok[id], k);
      if (ea < 0) continue;
      long eb = tz_bmap_find(&t->lookup, t->tok[id] + k, t->tok_len[id] - k);
      if (eb < 0) continue;
      uint64_t key = ((uint64_t)(uint32_t)t->lookup.ents[ea].val << 32) | (uint32_t)t->lookup.ents[eb].val;
      *tz_u64map_put(&t->pair, key, id, NULL) = id;
    }
  }
  free(has_len);
  return tz_pretok_compile(&t->re);
}

/* ---- encoding ------------------------------------------------------------------------------- */

typedef struct {
  int32_t *v;
  size_t n, cap;
} ivec;

static void ivec_push(ivec *v, int32_t x) {
  if (v->n == v->cap) {
    v->cap = v->cap ? v->cap * 2 : 256;
    v->v = tz_realloc(v->v, v->cap * sizeof *v->v);
  }
  v->v[v->n++] = x;
}

typedef struct {
  int32_t rank, l, a, b;
} heap_ent;

typedef struct enc_ctx {
  const tz_tokenizer *t;
  ivec *out;
  /* scratch for one pre-token */
  int32_t *tok, *next, *prev;
  heap_ent *heap;
  size_t cap, heap_cap;
  /* pre-token cache: piece -> ids (cache_ids[cache_off[e] .. + cache_n[e]]) */
  tz_bmap cache;
  tz_pretok_state pre; /* PCRE2 state of tz_pretok_each_st, kept with the context */
  ivec cache_ids;
  size_t *cache_off;
  int32_t *cache_n;
  size_t cache_cap;
} enc_ctx;

static inline int heap_less(const heap_ent *x, const heap_ent *y) {
  return x->rank < y->rank || (x->rank == y->rank && x->l < y->l);
}

static void heap_push(enc_ctx *c, size_t *hn, heap_ent e) {
  if (*hn == c->heap_cap) {
    c->heap_cap = c->heap_cap ? c->heap_cap * 2 : 64;
    c->heap = tz_realloc(c->heap, c->heap_cap * sizeof *c->heap);
  }
  size_t i = (*hn)++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!heap_less(&e, &c->heap[p])) break;
    c->heap[i] = c->heap[p];
    i = p;
  }
  c->heap[i] = e;
}

static heap_ent heap_pop(enc_ctx *c, size_t *hn) {
  heap_ent top = c->heap[0], last = c->heap[--(*hn)];
  size_t i = 0, n = *hn;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    const heap_ent *best = &last;
    if (l < n && heap_less(&c->heap[l], best)) m = l, best = &c->heap[l];
    if (r < n && heap_less(&c->heap[r], best)) m = r;
    if (m == i) break;
    c->heap[i] = c->heap[m];
    i = m;
  }
  if (n) c->heap[i] = last;
  return top;
}

static inline int32_t pair_merge(const tz_tokenizer *t, int32_t a, int32_t b) {
  const int32_t *v = tz_u64map_get(&t->pair, ((uint64_t)(uint32_t)a << 32) | (uint32_t)b);
  return v ? *v : -1;
}

static void try_push(enc_ctx *c, size_t *hn, int32_t l, int32_t r) {
  if (l < 0 || r < 0) return;
  int32_t m = pair_merge(c->t, c->tok[l], c->tok[r]);
  if (m >= 0) heap_push(c, hn, (heap_ent){c->t->rank[m], l, c->tok[l], c->tok[r]});
}

/* BPE of one pre-token (tiktoken's byte_pair_merge with a linked list + min-heap keyed by
 * (rank, position), so long pre-tokens cost O(n log n)). Appends ids to out. */
static void bpe_piece(enc_ctx *c, const char *s, size_t n, ivec *out) {
  const tz_tokenizer *t = c->t;
  long whole = tz_bmap_find(&t->lookup, s, n);
  if (whole >= 0 && (n == 1 || t->rank[t->lookup.ents[whole].val] != INT32_MAX)) {
    ivec_push(out, t->lookup.ents[whole].val); /* tiktoken: a whole-piece token wins */
    return;
  }
  if (n > c->cap) {
    c->cap = n * 2;
    c->tok = tz_realloc(c->tok, c->cap * sizeof *c->tok);
    c->next = tz_realloc(c->next, c->cap * sizeof *c->next);
    c->prev = tz_realloc(c->prev, c->cap * sizeof *c->prev);
  }
  for (size_t i = 0; i < n; i++) {
    c->tok[i] = t->byte_id[(unsigned char)s[i]];
    c->next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    c->prev[i] = (int32_t)i - 1;
  }
  size_t hn = 0;
  for (size_t i = 0; i + 1 < n; i++) try_push(c, &hn, (int32_t)i, (int32_t)i + 1);
  while (hn) {
    heap_ent e = heap_pop(c, &hn);
    int32_t l = e.l, r = c->next[l];
    /* stale entry? (l was absorbed: tok set to -1; or a neighbour changed) */
    if (c->tok[l] != e.a || r < 0 || c->tok[r] != e.b) continue;
    c->tok[l] = pair_merge(t, e.a, e.b);
    c->tok[r] = -1;
    c->next[l] = c->next[r];
    if (c->next[r] >= 0) c->prev[c->next[r]] = l;
    try_push(c, &hn, c->prev[l], l);
    try_push(c, &hn, l, c->next[l]);
  }
  for (int32_t i = 0; i >= 0; i = c->next[i]) ivec_push(out, c->tok[i]);
}

/* Pre-tokens longer than this are not cached (a megabyte "word" would only bloat the cache). */
#define CACHE_MAX_PIECE 256
/* Entries per cached context; past this, new pre-tokens are encoded without caching. */
#define CACHE_MAX_ENTRIES (1u << 18)

static int enc_piece_cb(void *ud, const char *s, size_t n) {
  enc_ctx *c = ud;
  int is_new;
  if (tz_stop_pending()) return tz_stop_check(); /* Ctrl-C while `train` prepares its data (core/stop.h) */
  if (n > CACHE_MAX_PIECE || c->cache.n >= CACHE_MAX_ENTRIES) {
    if (n > CACHE_MAX_PIECE || tz_bmap_find(&c->cache, s, n) < 0) {
      bpe_piece(c, s, n, c->out);
      return 0;
    }
  }
  long e = tz_bmap_put(&c->cache, s, n, 0, &is_new);
  if (is_new) {
    if ((size_t)e >= c->cache_cap) {
      c->cache_cap = c->cache_cap ? c->cache_cap * 2 : 1024;
      c->cache_off = tz_realloc(c->cache_off, c->cache_cap * sizeof *c->cache_off);
      c->cache_n = tz_realloc(c->cache_n, c->cache_cap * sizeof *c->cache_n);
    }
    size_t before = c->cache_ids.n;
    bpe_piece(c, s, n, &c->cache_ids);
    c->cache_off[e] = before;
    c->cache_n[e] = (int32_t)(c->cache_ids.n - before);
  }
  const int32_t *src = c->cache_ids.v + c->cache_off[e];
  for (int32_t k = 0; k < c->cache_n[e]; k++) ivec_push(c->out, src[k]);
  return 0;
}

static void enc_ctx_free(enc_ctx *c) {
  if (!c) return;
  free(c->tok);
  free(c->next);
  free(c->prev);
  free(c->heap);
  free(c->cache_ids.v);
  free(c->cache_off);
  free(c->cache_n);
  tz_bmap_free(&c->cache);
  tz_pretok_state_free(&c->pre);
  free(c);
}

/* Take an encoder context (with its warm cache) from the tokenizer's pool, or make one. */
static enc_ctx *ctx_get(const tz_tokenizer *ct) {
  tz_tokenizer *t = (tz_tokenizer *)ct; /* the pool is internal, lock-protected state */
  enc_ctx *c = NULL;
  pthread_mutex_lock(&t->pool_lock);
  if (t->pool_n) c = t->pool[--t->pool_n];
  pthread_mutex_unlock(&t->pool_lock);
  if (!c) {
    c = tz_calloc(1, sizeof *c);
    c->t = ct;
    tz_bmap_init(&c->cache, 4096);
  }
  return c;
}

static void ctx_put(const tz_tokenizer *ct, enc_ctx *c) {
  tz_tokenizer *t = (tz_tokenizer *)ct;
  c->out = NULL;
  pthread_mutex_lock(&t->pool_lock);
  if (t->pool_n == t->pool_cap) {
    t->pool_cap = t->pool_cap ? t->pool_cap * 2 : 8;
    t->pool = tz_realloc(t->pool, (size_t)t->pool_cap * sizeof *t->pool);
  }
  t->pool[t->pool_n++] = c;
  pthread_mutex_unlock(&t->pool_lock);
}


static inline int ascii_graph(unsigned char c) { return c > 0x20 && c < 0x7f; }

/* Smallest p in [from, b) where the GPT-2 regex certainly has a pre-token boundary that does
 * not depend on the text around it, or b when there is none. p qualifies when
 * text[p-2] is printable ASCII (not space), text[p-1] == '\n' and text[p] is printable ASCII:
 * no alternative of the pattern can join a non-space to '\n', so a pre-token starts at p-1;
 * from there `\s+(?!\S)` fails (text[p] is \S) and `\s+` matches exactly "\n", which is also
 * what a pre-tokenizer that stops at p finds ("\n" at the end of the subject); and a match
 * starting at p reads nothing before p (the pattern has no lookbehind or anchors). So
 * pre-tokenizing [a, p) and [p, b) separately gives the same pre-tokens as [a, b). */
size_t tz_pretok_safe_cut(const char *s, size_t a, size_t from, size_t b) {
  if (from < a + 2) from = a + 2;
  while (from < b) {
    const char *nl = memchr(s + from - 1, '\n', b - (from - 1));
    if (!nl) return b;
    size_t p = (size_t)(nl - s) + 1;
    if (p >= b) return b;
    if (p >= a + 2 && ascii_graph((unsigned char)s[p - 2]) && ascii_graph((unsigned char)s[p])) return p;
    from = p + 1;
  }
  return b;
}

size_t tz_text_spans(const char *text, size_t len, const char *eot, size_t eotn, int nthr, tz_span **out) {
  size_t chunk = len / ((size_t)nthr * 8);
  if (chunk < (64u << 10)) chunk = 64u << 10;
  if (chunk > (1u << 20)) chunk = 1u << 20;
  if (nthr == 1) chunk = SIZE_MAX;
  return tz_text_spans_chunk(text, len, eot, eotn, chunk, out);
}

size_t tz_text_spans_chunk(const char *text, size_t len, const char *eot, size_t eotn, size_t chunk, tz_span **out) {
  tz_span *sp = NULL;
  size_t nsp = 0, capsp = 0, pos = 0;
  for (;;) {
    size_t end = len;
    const char *hit = NULL;
    if (eotn && pos < len && (hit = memmem(text + pos, len - pos, eot, eotn))) end = (size_t)(hit - text);
    /* cut the document into chunks at context-free pre-token boundaries */
    size_t a = pos;
    do {
      size_t b = end;
      if (end - a > chunk) b = tz_pretok_safe_cut(text, a, a + chunk, end);
      if (nsp == capsp) {
        capsp = capsp ? capsp * 2 : 16;
        sp = tz_realloc(sp, capsp * sizeof *sp);
      }
      sp[nsp++] = (tz_span){a, b, hit && b == end};
      a = b;
    } while (a < end);
    if (!hit) break;
    pos = end + eotn;
  }
  *out = sp;
  return nsp;
}

static int encode_bytelevel(const tz_tokenizer *t, const char *text, size_t len, int allow_special,
                            ivec *out) {
  /* documents split at "<|endoftext|>" when it is special, cut into chunks */
  int nthr = 1;
#ifdef _OPENMP
  if (!omp_in_parallel()) nthr = omp_get_max_threads();
#endif
  const char *eot = t->eot >= 0 && allow_special ? t->tok[t->eot] : NULL;
  size_t eotn = eot ? t->tok_len[t->eot] : 0;
  tz_span *sp;
  size_t nsp = tz_text_spans(text, len, eot, eotn, nthr, &sp);
  int rc = 0;
  if (nsp == 1 || nthr == 1) {
    enc_ctx *c = ctx_get(t);
    c->out = out;
    for (size_t i = 0; i < nsp && !rc; i++) {
      if (sp[i].b > sp[i].a) rc = tz_pretok_each_st(t->re, &c->pre, text + sp[i].a, sp[i].b - sp[i].a, enc_piece_cb, c);
      if (!rc && sp[i].eot_after) ivec_push(out, t->eot);
    }
    ctx_put(t, c);
    free(sp);
    return rc;
  }
  /* 3. encode the chunks in parallel, each into its own vector; concatenate in order */
  ivec *parts = tz_calloc(nsp, sizeof *parts);
  char errmsg[TZ_ERR_MAX] = "";
  int failed = 0;
#pragma omp parallel num_threads(nthr)
  {
    enc_ctx *c = ctx_get(t);
#pragma omp for schedule(dynamic, 1)
    for (size_t i = 0; i < nsp; i++) {
      c->out = &parts[i];
      int r = 0;
      if (sp[i].b > sp[i].a) r = tz_pretok_each_st(t->re, &c->pre, text + sp[i].a, sp[i].b - sp[i].a, enc_piece_cb, c);
      if (r) {
#pragma omp critical(tz_tok_encode_err)
        {
          if (!failed) snprintf(errmsg, sizeof errmsg, "%s", tz_errmsg());
          failed = 1;
        }
      } else if (sp[i].eot_after) {
        ivec_push(&parts[i], t->eot);
      }
    }
    ctx_put(t, c);
  }
  if (failed) {
    rc = tz_err("%s", errmsg);
  } else {
    size_t total = out->n;
    for (size_t i = 0; i < nsp; i++) total += parts[i].n;
    if (total > out->cap) {
      out->cap = total;
      out->v = tz_realloc(out->v, (total ? total : 1) * sizeof *out->v);
    }
    for (size_t i = 0; i < nsp; i++) {
      if (parts[i].n) memcpy(out->v + out->n, parts[i].v, parts[i].n * sizeof *out->v);
      out->n += parts[i].n;
    }
  }
  for (size_t i = 0; i < nsp; i++) free(parts[i].v);
  free(parts);
  free(sp);
  return rc;
}

int tz_tok_encode(const tz_tokenizer *t, const char *text, size_t len, int allow_special,
                  int32_t **ids, size_t *n_ids) {
  *ids = NULL;
  *n_ids = 0;
  if (t->kind == TZ_TOK_LLAMA2C) {
    (void)len;
    return tz_tok_encode_llama2c(t, text, 0, 0, ids, n_ids);
  }
  if (t->kind != TZ_TOK_BYTELEVEL)
    return tz_err("tokenizer: this tokenizer (llm.c gpt2_tokenizer.bin) can only decode, not encode");
  ivec out = {0};
  if (encode_bytelevel(t, text, len, allow_special, &out)) {
    free(out.v);
    return -1;
  }
  *ids = out.v;
  *n_ids = out.n;
  return 0;
}

/* ---- decoding / accessors -------------------------------------------------------------------- */

static int check_id(const tz_tokenizer *t, int64_t id) {
  if (id < 0 || id >= t->vocab_size)
    return tz_err("tokenizer: token id %lld out of range (vocab size %d)", (long long)id, t->vocab_size);
  return 0;
}

int tz_tok_decode(const tz_tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len) {
  *text = NULL;
  *len = 0;
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    if (check_id(t, ids[i])) return -1;
    total += t->tok_len[ids[i]];
  }
  char *s = tz_malloc(total + 1), *p = s;
  for (size_t i = 0; i < n; i++) {
    const char *b = t->tok[ids[i]];
    size_t bl = t->tok_len[ids[i]];
    if (t->kind == TZ_TOK_LLAMA2C) {
      if (ids[i] == 1 || ids[i] == 2) continue; /* BOS / EOS */
      tz_l2_decode_raw(t, i > 0 ? ids[i - 1] : -1, ids[i], &b, &bl);
    }
    memcpy(p, b, bl);
    p += bl;
  }
  *p = 0;
  *text = s;
  *len = (size_t)(p - s);
  return 0;
}

int tz_tok_token_bytes(const tz_tokenizer *t, int32_t id, const char **bytes, size_t *len) {
  if (check_id(t, id)) return -1;
  *bytes = t->tok[id];
  *len = t->tok_len[id];
  return 0;
}

int tz_tok_vocab_size(const tz_tokenizer *t) { return t->vocab_size; }
int tz_tok_eot(const tz_tokenizer *t) { return t->eot; }
int tz_tok_kind(const tz_tokenizer *t) { return t->kind; }

/* ---- pre-token pieces (for the WebGPU encoder) ------------------------------------------- */

typedef struct {
  uint32_t *v;
  size_t n, cap;
  const char *base;
} pvec;

static int piece_cb(void *ud, const char *s, size_t n) {
  pvec *p = ud;
  if (p->n + 2 > p->cap) {
    p->cap = p->cap ? p->cap * 2 : 1024;
    p->v = tz_realloc(p->v, p->cap * sizeof *p->v);
  }
  p->v[p->n++] = (uint32_t)(s - p->base);
  p->v[p->n++] = (uint32_t)n;
  return 0;
}

int tz_pretok_spans(const tz_tokenizer *t, const char *text, const tz_span *sp, size_t nsp, int nthr, uint32_t **pcs,
                    size_t *npcs) {
  *pcs = NULL;
  *npcs = 0;
  pvec *parts = tz_calloc(nsp ? nsp : 1, sizeof *parts);
  int failed = 0;
#pragma omp parallel num_threads(nthr) if (nthr > 1 && nsp > 1)
  {
    tz_pretok_state st = {0}; /* one per thread, reused over its spans */
#pragma omp for schedule(dynamic, 1)
    for (size_t i = 0; i < nsp; i++) {
      parts[i].base = text;
      if (sp[i].b > sp[i].a && tz_pretok_each_st(t->re, &st, text + sp[i].a, sp[i].b - sp[i].a, piece_cb, &parts[i])) {
#pragma omp atomic write
        failed = 1;
      }
      if (sp[i].eot_after) {
        piece_cb(&parts[i], text + sp[i].b, 0);
        parts[i].v[parts[i].n - 1] = 0xffffffffu;
      }
    }
    tz_pretok_state_free(&st);
  }
  size_t total = 0;
  for (size_t i = 0; i < nsp; i++) total += parts[i].n;
  uint32_t *v = failed ? NULL : tz_malloc((total ? total : 1) * sizeof *v);
  size_t o = 0;
  for (size_t i = 0; i < nsp; i++) {
    if (v && parts[i].n) memcpy(v + o, parts[i].v, parts[i].n * sizeof *v);
    o += parts[i].n;
    free(parts[i].v);
  }
  free(parts);
  if (failed) return -1;
  *pcs = v;
  *npcs = total / 2;
  return 0;
}

int tz_pretok_pieces(const tz_tokenizer *t, const char *text, size_t len, int allow_special, uint32_t **pcs,
                     size_t *npcs) {
  *pcs = NULL;
  *npcs = 0;
  if (len >= 0xffffffffu) return tz_err("tokenizer: text of %zu bytes is too long for 32-bit piece offsets", len);
  int nthr = 1;
#ifdef _OPENMP
  if (!omp_in_parallel()) nthr = omp_get_max_threads();
#endif
  const char *eot = t->eot >= 0 && allow_special ? t->tok[t->eot] : NULL;
  size_t eotn = eot ? t->tok_len[t->eot] : 0;
  tz_span *sp;
  size_t nsp = tz_text_spans(text, len, eot, eotn, nthr, &sp);
  int rc = tz_pretok_spans(t, text, sp, nsp, nthr, pcs, npcs);
  free(sp);
  return rc;
}
