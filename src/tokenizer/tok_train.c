/* Byte-level BPE training.
 *
 * 1. Split the text on "<|endoftext|>" and pre-tokenize each document with the GPT-2 regex;
 *    count unique pre-tokens ("words") in an XXH3 hash map.
 * 2. Each unique word becomes a symbol sequence (its bytes) with a multiplicity.
 * 3. Pair statistics: (left,right) -> count and the list of words containing it; a max-heap of
 *    (count, -left, -right) entries with lazy invalidation (an entry is live only while its count
 *    equals the pair's current count; every count change pushes a fresh entry).
 * 4. Each merge rewrites only the words listed for the chosen pair and applies count deltas
 *    locally (no full recount). Ties go to the smallest (left, right) ids: deterministic. */
#define _GNU_SOURCE /* memmem */
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/error.h"
#include "core/stop.h"
#include "tokenizer/tok_internal.h"

typedef struct {
  int32_t a, b;
  int64_t count;
  int32_t *words; /* word ids (may repeat or be stale; deduplicated at merge time) */
  size_t nw, cw;
  uint32_t stamp; /* last merge step that touched the count */
  uint8_t banned;
} pstat;

typedef struct {
  int64_t count;
  int32_t a, b;
} hent;

typedef struct {
  tz_bmap words;
  int64_t *wcount;
  size_t wcap;
  tz_pretok_state pre; /* this thread's PCRE2 state, reused over its spans */
} count_ctx;

static int count_cb(void *ud, const char *s, size_t n) {
  count_ctx *c = ud;
  if (tz_stop_pending()) return -1; /* Ctrl-C while `train` prepares its data (core/stop.h) */
  long e = tz_bmap_put(&c->words, s, n, 0, NULL);
  if ((size_t)e >= c->wcap) {
    size_t old = c->wcap;
    c->wcap = c->wcap ? c->wcap * 2 : 4096;
    c->wcount = tz_realloc(c->wcount, c->wcap * sizeof *c->wcount);
    memset(c->wcount + old, 0, (c->wcap - old) * sizeof *c->wcount);
  }
  c->wcount[e]++;
  return 0;
}

typedef struct {
  tz_u64map idx; /* pair key -> index in ps */
  pstat *ps;
  size_t n, cap;
  hent *heap;
  size_t hn, hcap;
  int32_t *touched;
  size_t nt, ct;
  uint32_t step;
} pairs;

static inline uint64_t pkey(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }

static inline int hent_better(const hent *x, const hent *y) {
  if (x->count != y->count) return x->count > y->count;
  if (x->a != y->a) return x->a < y->a;
  return x->b < y->b;
}

static void hpush(pairs *P, hent e) {
  if (P->hn == P->hcap) {
    P->hcap = P->hcap ? P->hcap * 2 : 4096;
    P->heap = tz_realloc(P->heap, P->hcap * sizeof *P->heap);
  }
  size_t i = P->hn++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!hent_better(&e, &P->heap[p])) break;
    P->heap[i] = P->heap[p];
    i = p;
  }
  P->heap[i] = e;
}

static hent hpop(pairs *P) {
  hent top = P->heap[0], last = P->heap[--P->hn];
  size_t i = 0, n = P->hn;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    const hent *best = &last;
    if (l < n && hent_better(&P->heap[l], best)) m = l, best = &P->heap[l];
    if (r < n && hent_better(&P->heap[r], best)) m = r;
    if (m == i) break;
    P->heap[i] = P->heap[m];
    i = m;
  }
  if (n) P->heap[i] = last;
  return top;
}

static pstat *pget(pairs *P, int32_t a, int32_t b) {
  int is_new;
  int32_t *v = tz_u64map_put(&P->idx, pkey(a, b), (int32_t)P->n, &is_new);
  if (is_new) {
    if (P->n == P->cap) {
      P->cap = P->cap ? P->cap * 2 : 4096;
      P->ps = tz_realloc(P->ps, P->cap * sizeof *P->ps);
    }
    memset(&P->ps[P->n], 0, sizeof P->ps[P->n]);
    P->ps[P->n].a = a;
    P->ps[P->n].b = b;
    P->n++;
  }
  return &P->ps[*v];
}

/* Add delta occurrences (weighted) of pair (a,b) in word w. */
static void padd(pairs *P, int32_t a, int32_t b, int64_t delta, int32_t w) {
  pstat *p = pget(P, a, b);
  p->count += delta;
  if (delta > 0 && (p->nw == 0 || p->words[p->nw - 1] != w)) {
    if (p->nw == p->cw) {
      p->cw = p->cw ? p->cw * 2 : 4;
      p->words = tz_realloc(p->words, p->cw * sizeof *p->words);
    }
    p->words[p->nw++] = w;
  }
  if (p->stamp != P->step) {
    p->stamp = P->step;
    if (P->nt == P->ct) {
      P->ct = P->ct ? P->ct * 2 : 1024;
      P->touched = tz_realloc(P->touched, P->ct * sizeof *P->touched);
    }
    P->touched[P->nt++] = (int32_t)(p - P->ps);
  }
}

void tz_wordcount_free(tz_wordcount *w) {
  tz_bmap_free(&w->words);
  free(w->count);
  memset(w, 0, sizeof *w);
}

int tz_count_words(const char *text, size_t len, tz_wordcount *out) {
  memset(out, 0, sizeof *out);
  pcre2_code *re;
  if (tz_pretok_compile(&re)) return -1;
  int nthr = 1;
#ifdef _OPENMP
  if (!omp_in_parallel()) nthr = omp_get_max_threads();
#endif
  tz_span *sp;
  size_t nsp = tz_text_spans(text, len, TZ_EOT_STR, TZ_EOT_LEN, nthr, &sp);
  count_ctx *cc = tz_calloc((size_t)nthr, sizeof *cc);
  int failed = 0;
#pragma omp parallel num_threads(nthr) if (nthr > 1)
  {
    int me = 0;
#ifdef _OPENMP
    me = omp_get_thread_num();
#endif
    count_ctx *c = &cc[me];
    tz_bmap_init(&c->words, 1 << 14);
#pragma omp for schedule(dynamic, 1)
    for (size_t i = 0; i < nsp; i++)
      if (sp[i].b > sp[i].a && tz_pretok_each_st(re, &c->pre, text + sp[i].a, sp[i].b - sp[i].a, count_cb, c)) {
#pragma omp atomic write
        failed = 1;
      }
    tz_pretok_state_free(&c->pre);
  }
  free(sp);
  pcre2_code_free(re);
  /* merge the per-thread counts into the first map */
  count_ctx *m = &cc[0];
  for (int k = 1; k < nthr; k++) {
    count_ctx *c = &cc[k];
    for (size_t e = 0; e < c->words.n && !failed; e++) {
      long d = tz_bmap_put(&m->words, tz_bmap_key(&c->words, (long)e), c->words.ents[e].len, 0, NULL);
      if ((size_t)d >= m->wcap) {
        size_t old = m->wcap;
        m->wcap = m->wcap ? m->wcap * 2 : 4096;
        while ((size_t)d >= m->wcap) m->wcap *= 2;
        m->wcount = tz_realloc(m->wcount, m->wcap * sizeof *m->wcount);
        memset(m->wcount + old, 0, (m->wcap - old) * sizeof *m->wcount);
      }
      m->wcount[d] += c->wcount[e];
    }
    tz_bmap_free(&c->words);
    free(c->wcount);
  }
  out->words = m->words;
  out->count = m->wcount;
  free(cc);
  if (failed) {
    tz_wordcount_free(out);
    return tz_stop_pending() ? tz_stop_check() : -1; /* the workers' messages are theirs (thread-local) */
  }
  return 0;
}

int tz_tok_train(const char *text, size_t len, int vocab_size, tz_tokenizer **out) {
  *out = NULL;
  if (vocab_size < 257 || vocab_size > (1 << 24))
    return tz_err("tokenizer: vocab size %d out of range (need 257..%d: 256 bytes + merges + <|endoftext|>)",
                  vocab_size, 1 << 24);
  /* 1. unique pre-tokens */
  tz_wordcount wc;
  if (tz_count_words(text, len, &wc)) return -1;
  count_ctx cc = {.words = wc.words, .wcount = wc.count};

  /* 2. word symbol sequences */
  size_t nw = cc.words.n, total = 0;
  size_t *woff = tz_malloc((nw + 1) * sizeof *woff);
  int32_t *wlen = tz_malloc((nw + 1) * sizeof *wlen);
  uint32_t *wstamp = tz_calloc(nw + 1, sizeof *wstamp);
  for (size_t w = 0; w < nw; w++) total += cc.words.ents[w].len;
  int32_t *sym = tz_malloc((total + 1) * sizeof *sym);
  total = 0;
  for (size_t w = 0; w < nw; w++) {
    const unsigned char *k = (const unsigned char *)tz_bmap_key(&cc.words, (long)w);
    woff[w] = total;
    wlen[w] = (int32_t)cc.words.ents[w].len;
    for (int32_t i = 0; i < wlen[w]; i++) sym[total++] = k[i];
  }

  /* 3. initial pair counts */
  pairs P;
  memset(&P, 0, sizeof P);
  tz_u64map_init(&P.idx, 1 << 16);
  P.step = 1;
  for (size_t w = 0; w < nw; w++) {
    int32_t *s = sym + woff[w];
    for (int32_t i = 0; i + 1 < wlen[w]; i++) padd(&P, s[i], s[i + 1], cc.wcount[w], (int32_t)w);
  }
  for (size_t i = 0; i < P.nt; i++) {
    pstat *p = &P.ps[P.touched[i]];
    hpush(&P, (hent){p->count, p->a, p->b});
  }
  P.nt = 0;

  /* vocab so far: bytes */
  int cap_tokens = vocab_size;
  char **tok = tz_calloc((size_t)cap_tokens, sizeof *tok);
  size_t *tlen = tz_calloc((size_t)cap_tokens, sizeof *tlen);
  int32_t *merges = tz_malloc((size_t)2 * cap_tokens * sizeof *merges);
  tz_bmap vocab;
  tz_bmap_init(&vocab, (size_t)vocab_size);
  for (int b = 0; b < 256; b++) {
    tok[b] = tz_malloc(2);
    tok[b][0] = (char)b;
    tok[b][1] = 0;
    tlen[b] = 1;
    tz_bmap_put(&vocab, tok[b], 1, b, NULL);
  }
  int next_id = 256, n_merges = 0;

  /* 4. merges (until a stop request: core/stop.h) */
  while (next_id < vocab_size - 1 && P.hn && !tz_stop_pending()) {
    hent e = hpop(&P);
    int32_t *pi = tz_u64map_get(&P.idx, pkey(e.a, e.b));
    pstat *p = &P.ps[*pi];
    if (p->count != e.count || p->count <= 0 || p->banned) continue;
    size_t nl = tlen[e.a] + tlen[e.b];
    char *nb = tz_malloc(nl + 1);
    memcpy(nb, tok[e.a], tlen[e.a]);
    memcpy(nb + tlen[e.a], tok[e.b], tlen[e.b]);
    nb[nl] = 0;
    int is_new;
    tz_bmap_put(&vocab, nb, nl, next_id, &is_new);
    if (!is_new) { /* same bytes as an existing token: skip this pair for good */
      free(nb);
      p->banned = 1;
      continue;
    }
    int32_t a = e.a, b = e.b, nid = next_id++;
    tok[nid] = nb;
    tlen[nid] = nl;
    merges[2 * n_merges] = a;
    merges[2 * n_merges + 1] = b;
    n_merges++;
    P.step++;
    /* take the word list (p may move when pairs grow) */
    int32_t *wl = p->words;
    size_t wn = p->nw;
    p->words = NULL;
    p->nw = p->cw = 0;
    for (size_t k = 0; k < wn; k++) {
      int32_t w = wl[k];
      if (wstamp[w] == P.step) continue;
      wstamp[w] = P.step;
      int32_t *s = sym + woff[w];
      int32_t L = wlen[w], o = 0;
      int64_t c = cc.wcount[w];
      for (int32_t i = 0; i < L;) {
        if (i + 1 < L && s[i] == a && s[i + 1] == b) {
          if (o > 0) {
            padd(&P, s[o - 1], a, -c, w);
            padd(&P, s[o - 1], nid, c, w);
          }
          padd(&P, a, b, -c, w);
          if (i + 2 < L) {
            padd(&P, b, s[i + 2], -c, w);
            padd(&P, nid, s[i + 2], c, w);
          }
          s[o++] = nid;
          i += 2;
        } else {
          s[o++] = s[i++];
        }
      }
      wlen[w] = o;
    }
    free(wl);
    for (size_t i = 0; i < P.nt; i++) {
      pstat *q = &P.ps[P.touched[i]];
      if (q->count > 0) hpush(&P, (hent){q->count, q->a, q->b});
    }
    P.nt = 0;
  }

  for (size_t i = 0; i < P.n; i++) free(P.ps[i].words);
  free(P.ps);
  free(P.heap);
  free(P.touched);
  tz_u64map_free(&P.idx);
  tz_bmap_free(&vocab);
  for (int i = 0; i < next_id; i++) free(tok[i]);
  free(tok);
  free(tlen);
  free(sym);
  free(woff);
  free(wlen);
  free(wstamp);
  tz_wordcount_free(&wc);
  if (tz_stop_pending()) {
    free(merges);
    return tz_stop_check();
  }
  return tz_tok_from_trained_merges(merges, n_merges, out);
}

int tz_tok_from_trained_merges(int32_t *merges, int n_merges, tz_tokenizer **out) {
  *out = NULL;
  int next_id = 256 + n_merges;
  tz_tokenizer *t = tz_tok_alloc(TZ_TOK_BYTELEVEL, next_id + 1);
  for (int b = 0; b < 256; b++) {
    t->tok[b] = tz_malloc(2);
    t->tok[b][0] = (char)b;
    t->tok[b][1] = 0;
    t->tok_len[b] = 1;
  }
  for (int r = 0; r < n_merges; r++) {
    int a = merges[2 * r], b = merges[2 * r + 1], id = 256 + r;
    if (a < 0 || b < 0 || a >= id || b >= id) {
      free(merges);
      tz_tok_free(t);
      return tz_err("tokenizer: trained merge %d names token ids %d, %d (only %d exist)", r, a, b, id);
    }
    size_t nl = t->tok_len[a] + t->tok_len[b];
    t->tok[id] = tz_malloc(nl + 1);
    memcpy(t->tok[id], t->tok[a], t->tok_len[a]);
    memcpy(t->tok[id] + t->tok_len[a], t->tok[b], t->tok_len[b]);
    t->tok[id][nl] = 0;
    t->tok_len[id] = nl;
  }
  t->tok[next_id] = tz_strdup(TZ_EOT_STR);
  t->tok_len[next_id] = TZ_EOT_LEN;
  t->special[next_id] = 1;
  t->eot = next_id;
  t->n_merges = n_merges;
  t->merges = merges;
  if (tz_tok_finish_bytelevel(t, "trained tokenizer")) {
    tz_tok_free(t);
    return -1;
  }
  *out = t;
  return 0;
}
