/* The tokenizer as the GPU's encoder and decoder read it (bpe_encode.wgsl): one u32 array of
 * the merge ranks, the byte ids, a pair hash table, each token's (length, arena offset, hash), a
 * whole-token hash table and the token bytes; offsets in e->u. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tok_webgpu_stages.h"

int tz_tg_build_tables(const tz_tokenizer *t, enc_tables *e) {
  if (t->kind != TZ_TOK_BYTELEVEL) return tz_err("webgpu tokenizer: only byte-level BPE tokenizers run on the GPU");
  uint32_t V = (uint32_t)t->vocab_size;
  if (V > 65536) return tz_err("webgpu tokenizer: vocab size %u above 65536 (pairs are 32-bit keys)", V);
  uint64_t pcap = tz_tg_pow2_at_least(2 * (uint64_t)t->pair.n + 16), vhcap = tz_tg_pow2_at_least(2 * (uint64_t)V + 16);
  size_t arbytes = 0;
  for (uint32_t i = 0; i < V; i++) arbytes += t->tok_len[i];
  size_t byte_off = V, pair_off = byte_off + 256, tok_off = pair_off + 2 * pcap, vh_off = tok_off + 3 * (size_t)V,
         ar_off = vh_off + vhcap, n = ar_off + (arbytes + 3) / 4;
  uint32_t *v = tz_calloc(n + 1, 4);
  for (uint32_t i = 0; i < V; i++) v[i] = t->rank[i] == INT32_MAX ? 0x7fffffffu : (uint32_t)t->rank[i];
  for (int b = 0; b < 256; b++) v[byte_off + b] = (uint32_t)t->byte_id[b];
  memset(v + pair_off, 0xff, 2 * pcap * 4);
  for (size_t s = 0; s < t->pair.cap; s++) {
    if (!t->pair.used[s]) continue;
    uint64_t key = t->pair.keys[s];
    uint32_t k = (uint32_t)(key >> 32) << 16 | (uint32_t)(key & 0xffff);
    uint32_t h = tz_tg_hmix(k) & (uint32_t)(pcap - 1);
    while (v[pair_off + 2 * h] != EMPTY) h = (h + 1) & (uint32_t)(pcap - 1);
    v[pair_off + 2 * h] = k;
    v[pair_off + 2 * h + 1] = (uint32_t)t->pair.vals[s];
  }
  memset(v + vh_off, 0xff, vhcap * 4);
  unsigned char *ar = (unsigned char *)(v + ar_off);
  size_t at = 0;
  for (uint32_t i = 0; i < V; i++) {
    const unsigned char *s = (const unsigned char *)t->tok[i];
    uint32_t h = tz_tg_hbytes(s, t->tok_len[i]);
    v[tok_off + 3 * i] = (uint32_t)t->tok_len[i];
    v[tok_off + 3 * i + 1] = (uint32_t)at;
    v[tok_off + 3 * i + 2] = h;
    memcpy(ar + at, s, t->tok_len[i]);
    at += t->tok_len[i];
    if (t->special[i]) continue; /* specials are never a pre-token's whole-piece match */
    uint32_t q = tz_tg_hmix(h) & (uint32_t)(vhcap - 1);
    while (v[vh_off + q] != EMPTY) q = (q + 1) & (uint32_t)(vhcap - 1);
    v[vh_off + q] = i;
  }
  e->v = v;
  e->n = n;
  memset(e->u, 0, sizeof e->u);
  e->u[0] = (uint32_t)byte_off, e->u[1] = (uint32_t)pair_off, e->u[2] = (uint32_t)(pcap - 1);
  e->u[3] = (uint32_t)tok_off, e->u[4] = (uint32_t)vh_off, e->u[5] = (uint32_t)(vhcap - 1), e->u[6] = (uint32_t)ar_off;
  e->u[9] = (uint32_t)(t->eot >= 0 ? t->eot : 0);
  return tz_tg_too_big("the tokenizer tables", n * 4);
}
