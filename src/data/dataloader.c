#include "data/dataloader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h" /* tz_plural */
#include "core/fileio.h"
#include "data/shard.h"

struct tz_loader {
  int B, T, vocab;
  size_t nshards;
  char **paths;
  size_t *ntok;
  tz_loader_pos pos;
  uint16_t *tok;  /* tokens of shard `loaded` */
  size_t loaded;  /* index of the shard in `tok`, or SIZE_MAX when none */
  /* shuffling (tz_loader_shuffle): rows of a batch come from a permutation of the shard's
   * T-token row windows, drawn anew for each (shard, epoch) from the seed */
  int shuffle;
  uint64_t seed;
  uint32_t *perm;                 /* [perm_n] row window indices */
  size_t perm_n, perm_cap;
  uint64_t perm_shard, perm_epoch; /* what perm was drawn for; perm_n == 0: none yet */
};

void tz_loader_free(tz_loader *l) {
  if (!l) return;
  for (size_t i = 0; i < l->nshards; i++) free(l->paths[i]);
  free(l->paths);
  free(l->ntok);
  free(l->tok);
  free(l->perm);
  free(l);
}

int tz_loader_open(tz_loader **out, const char *paths, int vocab_size, int B, int T) {
  *out = NULL;
  if (B < 1 || T < 1) return tz_err("data loader: batch shape B=%d T=%d (both must be >= 1)", B, T);
  if ((uint64_t)B * (uint64_t)T + 1 > TZ_SHARD_MAX_TOKENS)
    return tz_err("data loader: batch B*T = %d*%d exceeds the shard size limit", B, T);
  if (vocab_size < 1 || vocab_size > 65536)
    return tz_err("data loader: vocab size %d out of range (expected 1..65536 for uint16 shards)", vocab_size);
  tz_loader *l = tz_calloc(1, sizeof *l);
  l->B = B;
  l->T = T;
  l->vocab = vocab_size;
  l->loaded = SIZE_MAX;
  /* comma-separated paths and globs; plain paths are kept as given (the reader reports a
   * missing file) */
  if (tz_expand_paths(paths, &l->paths, &l->nshards)) {
    tz_loader_free(l);
    return -1;
  }
  l->ntok = tz_calloc(l->nshards, sizeof *l->ntok);
  size_t need = (size_t)B * (size_t)T + 1;
  for (size_t i = 0; i < l->nshards; i++) {
    uint16_t *t;
    size_t n;
    int rc = tz_shard_read(l->paths[i], vocab_size, &t, &n);
    if (rc) {
      tz_loader_free(l);
      return rc; /* TZ_SHARD_EVOCAB passed on: the caller names the vocabulary */
    }
    if (n < need) {
      free(t);
      /* what helps: B*T+1 at most the shard's tokens (-B, -T: every command that reads shards) */
      tz_err("%s: %zu token%s, corpus smaller than one batch (B*T+1 = %d*%d+1 = %zu tokens); lower -B or -T (B*T at "
             "most %zu) or give a larger shard", l->paths[i], n, tz_plural((long long)n), B, T, need, n ? n - 1 : 0);
      tz_loader_free(l);
      return -1;
    }
    l->ntok[i] = n;
    if (i == 0) {
      l->tok = t;
      l->loaded = 0;
    } else {
      free(t);
    }
  }
  *out = l;
  return 0;
}

/* Make l->tok hold shard `s`, checking it still has the ntok seen at open. */
static int ensure_loaded(tz_loader *l, size_t s) {
  if (l->loaded == s) return 0;
  uint16_t *t;
  size_t n;
  if (tz_shard_read(l->paths[s], l->vocab, &t, &n)) return -1;
  if (n != l->ntok[s]) {
    free(t);
    return tz_err("%s: shard changed since the loader opened it (%zu tokens, was %zu)", l->paths[s], n, l->ntok[s]);
  }
  free(l->tok);
  l->tok = t;
  l->loaded = s;
  return 0;
}

void tz_loader_shuffle(tz_loader *l, uint64_t seed) {
  l->shuffle = 1;
  l->seed = seed;
  l->perm_n = 0;
}

/* SplitMix64 (Steele et al. 2014): the permutation's randomness, keyed by (seed, shard, epoch). */
static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Fisher-Yates over the shard's row windows [r·T, r·T + T] (r < (ntok−1)/T). */
static void ensure_perm(tz_loader *l, size_t s) {
  if (l->perm_n && l->perm_shard == s && l->perm_epoch == l->pos.epoch) return;
  size_t n = (l->ntok[s] - 1) / (size_t)l->T;
  if (n > l->perm_cap) { /* grows only: a new epoch of the same shard allocates nothing */
    l->perm = tz_realloc(l->perm, n * sizeof *l->perm);
    l->perm_cap = n;
  }
  for (size_t i = 0; i < n; i++) l->perm[i] = (uint32_t)i;
  uint64_t x = l->seed ^ (0x632be59bd9b4e019ULL * (s + 1)) ^ (0x85157af5ULL * (l->pos.epoch + 1));
  for (size_t i = n - 1; i > 0; i--) {
    size_t j = (size_t)(splitmix64(&x) % (i + 1));
    uint32_t t = l->perm[i];
    l->perm[i] = l->perm[j];
    l->perm[j] = t;
  }
  l->perm_n = n;
  l->perm_shard = s;
  l->perm_epoch = l->pos.epoch;
}

int tz_loader_next_rows(tz_loader *l, int row0, int nrows, int32_t *inputs, int32_t *targets) {
  TZ_ASSERT(row0 >= 0 && nrows >= 0 && row0 + nrows <= l->B);
  size_t s = (size_t)l->pos.shard, bt = (size_t)l->B * (size_t)l->T, T = (size_t)l->T;
  if (ensure_loaded(l, s)) return -1;
  if (l->shuffle) {
    /* batch k = offset / (B·T) takes rows perm[k·B .. k·B+B−1]; (k+1)·B ≤ perm_n holds
     * because offset + B·T + 1 ≤ ntok */
    ensure_perm(l, s);
    size_t k = (size_t)(l->pos.offset / bt);
    for (size_t b = 0; b < (size_t)nrows; b++) {
      const uint16_t *w = l->tok + (size_t)l->perm[k * l->B + row0 + b] * T;
      for (size_t i = 0; i < T; i++) {
        inputs[b * T + i] = w[i];
        targets[b * T + i] = w[i + 1];
      }
    }
  } else {
    const uint16_t *w = l->tok + l->pos.offset + (size_t)row0 * T;
    for (size_t i = 0; i < (size_t)nrows * T; i++) {
      inputs[i] = w[i];
      targets[i] = w[i + 1];
    }
  }
  /* advance; keep the invariant offset + bt + 1 <= ntok[shard] */
  l->pos.offset += bt;
  if (l->pos.offset + bt + 1 > l->ntok[s]) {
    l->pos.offset = 0;
    l->pos.shard++;
    if (l->pos.shard == l->nshards) {
      l->pos.shard = 0;
      l->pos.epoch++;
    }
  }
  return 0;
}

int tz_loader_next(tz_loader *l, int32_t *inputs, int32_t *targets) {
  return tz_loader_next_rows(l, 0, l->B, inputs, targets);
}

void tz_loader_reset(tz_loader *l) { l->pos = (tz_loader_pos){0, 0, 0}; }

tz_loader_pos tz_loader_get_pos(const tz_loader *l) { return l->pos; }

int tz_loader_set_pos(tz_loader *l, tz_loader_pos p) {
  uint64_t bt = (uint64_t)l->B * (uint64_t)l->T;
  if (p.shard >= l->nshards)
    return tz_err("data loader: position shard %llu out of range (%zu shards)", (unsigned long long)p.shard,
                  l->nshards);
  if (p.offset % bt != 0)
    return tz_err("data loader: position offset %llu in %s is not a multiple of B*T = %llu (saved with another "
                  "batch shape?)",
                  (unsigned long long)p.offset, l->paths[p.shard], (unsigned long long)bt);
  if (p.offset + bt + 1 > l->ntok[p.shard])
    return tz_err("data loader: position offset %llu + B*T+1 = %llu exceeds %s's %zu tokens",
                  (unsigned long long)p.offset, (unsigned long long)(p.offset + bt + 1), l->paths[p.shard],
                  l->ntok[p.shard]);
  l->pos = p;
  return 0;
}

static void put_le64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

void tz_loader_pos_encode(tz_loader_pos pos, unsigned char out[TZ_LOADER_POS_BYTES]) {
  put_le64(out, pos.shard);
  put_le64(out + 8, pos.offset);
  put_le64(out + 16, pos.epoch);
}

tz_loader_pos tz_loader_pos_decode(const unsigned char in[TZ_LOADER_POS_BYTES]) {
  return (tz_loader_pos){get_le64(in), get_le64(in + 8), get_le64(in + 16)};
}

int tz_loader_B(const tz_loader *l) { return l->B; }
int tz_loader_T(const tz_loader *l) { return l->T; }
size_t tz_loader_num_shards(const tz_loader *l) { return l->nshards; }
const char *tz_loader_shard_path(const tz_loader *l, size_t i) { return i < l->nshards ? l->paths[i] : NULL; }
size_t tz_loader_shard_tokens(const tz_loader *l, size_t i) { return i < l->nshards ? l->ntok[i] : 0; }

uint64_t tz_loader_total_tokens(const tz_loader *l) {
  uint64_t s = 0;
  for (size_t i = 0; i < l->nshards; i++) s += l->ntok[i];
  return s;
}

uint64_t tz_loader_batches_per_epoch(const tz_loader *l) {
  uint64_t s = 0, bt = (uint64_t)l->B * (uint64_t)l->T;
  for (size_t i = 0; i < l->nshards; i++) s += (l->ntok[i] - 1) / bt;
  return s;
}
