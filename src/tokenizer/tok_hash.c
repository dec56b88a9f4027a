/* Open-addressing hash maps used by the tokenizer (XXH3 for byte strings). */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/error.h"
#include "tokenizer/tok_internal.h"

static size_t pow2_at_least(size_t n) {
  size_t c = 16;
  while (c < n) c <<= 1;
  return c;
}

static inline uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

void tz_u64map_init(tz_u64map *m, size_t expect) {
  m->cap = pow2_at_least(expect * 2);
  m->n = 0;
  m->keys = tz_malloc(m->cap * sizeof *m->keys);
  m->vals = tz_malloc(m->cap * sizeof *m->vals);
  m->used = tz_calloc(m->cap, 1);
}

void tz_u64map_free(tz_u64map *m) {
  free(m->keys);
  free(m->vals);
  free(m->used);
  memset(m, 0, sizeof *m);
}

int32_t *tz_u64map_get(const tz_u64map *m, uint64_t key) {
  if (!m->cap) return NULL;
  size_t mask = m->cap - 1, i = mix64(key) & mask;
  while (m->used[i]) {
    if (m->keys[i] == key) return &m->vals[i];
    i = (i + 1) & mask;
  }
  return NULL;
}

static void u64map_grow(tz_u64map *m) {
  tz_u64map g;
  tz_u64map_init(&g, m->cap); /* doubles */
  for (size_t i = 0; i < m->cap; i++)
    if (m->used[i]) *tz_u64map_put(&g, m->keys[i], m->vals[i], NULL) = m->vals[i];
  tz_u64map_free(m);
  *m = g;
}

int32_t *tz_u64map_put(tz_u64map *m, uint64_t key, int32_t init, int *is_new) {
  if (!m->cap) tz_u64map_init(m, 16);
  if ((m->n + 1) * 4 > m->cap * 3) u64map_grow(m);
  size_t mask = m->cap - 1, i = mix64(key) & mask;
  while (m->used[i]) {
    if (m->keys[i] == key) {
      if (is_new) *is_new = 0;
      return &m->vals[i];
    }
    i = (i + 1) & mask;
  }
  m->used[i] = 1;
  m->keys[i] = key;
  m->vals[i] = init;
  m->n++;
  if (is_new) *is_new = 1;
  return &m->vals[i];
}

void tz_bmap_init(tz_bmap *m, size_t expect) {
  memset(m, 0, sizeof *m);
  m->cap = pow2_at_least(expect * 2);
  m->slots = tz_malloc(m->cap * sizeof *m->slots);
  memset(m->slots, 0xff, m->cap * sizeof *m->slots);
  m->ents_cap = expect > 16 ? expect : 16;
  m->ents = tz_malloc(m->ents_cap * sizeof *m->ents);
  m->arena_cap = 1024;
  m->arena = tz_malloc(m->arena_cap);
}

void tz_bmap_free(tz_bmap *m) {
  free(m->slots);
  free(m->ents);
  free(m->arena);
  memset(m, 0, sizeof *m);
}

long tz_bmap_find(const tz_bmap *m, const void *key, size_t len) {
  if (!m->cap) return -1;
  uint64_t h = XXH3_64bits(key, len);
  size_t mask = m->cap - 1, i = h & mask;
  while (m->slots[i] >= 0) {
    const tz_bmap_entry *e = &m->ents[m->slots[i]];
    if (e->hash == h && e->len == len && memcmp(m->arena + e->off, key, len) == 0) return m->slots[i];
    i = (i + 1) & mask;
  }
  return -1;
}

long tz_bmap_put(tz_bmap *m, const void *key, size_t len, int32_t init, int *is_new) {
  if (!m->cap) tz_bmap_init(m, 16);
  uint64_t h = XXH3_64bits(key, len);
  size_t mask = m->cap - 1, i = h & mask;
  while (m->slots[i] >= 0) {
    const tz_bmap_entry *e = &m->ents[m->slots[i]];
    if (e->hash == h && e->len == len && memcmp(m->arena + e->off, key, len) == 0) {
      if (is_new) *is_new = 0;
      return m->slots[i];
    }
    i = (i + 1) & mask;
  }
  if (is_new) *is_new = 1;
  if (m->n == m->ents_cap) {
    m->ents_cap *= 2;
    m->ents = tz_realloc(m->ents, m->ents_cap * sizeof *m->ents);
  }
  if (m->arena_len + len + 1 > m->arena_cap) {
    while (m->arena_len + len + 1 > m->arena_cap) m->arena_cap *= 2;
    m->arena = tz_realloc(m->arena, m->arena_cap);
  }
  memcpy(m->arena + m->arena_len, key, len);
  m->arena[m->arena_len + len] = 0;
  long idx = (long)m->n++;
  m->ents[idx] = (tz_bmap_entry){h, m->arena_len, len, init};
  m->arena_len += len + 1;
  m->slots[i] = (int32_t)idx;
  if (m->n * 4 > m->cap * 3) { /* rehash */
    free(m->slots);
    m->cap *= 2;
    m->slots = tz_malloc(m->cap * sizeof *m->slots);
    memset(m->slots, 0xff, m->cap * sizeof *m->slots);
    mask = m->cap - 1;
    for (size_t k = 0; k < m->n; k++) {
      size_t j = m->ents[k].hash & mask;
      while (m->slots[j] >= 0) j = (j + 1) & mask;
      m->slots[j] = (int32_t)k;
    }
  }
  return idx;
}
