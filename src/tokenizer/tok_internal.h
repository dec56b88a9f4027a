/* Internal definitions shared by the tokenizer's source files (not a public header). */
#ifndef TZ_TOK_INTERNAL_H
#define TZ_TOK_INTERNAL_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tokenizer/tokenizer.h"

/* ---- hash maps (tok_hash.c) ------------------------------------------------------------ */

/* uint64 key -> int32 value, open addressing, linear probing. */
typedef struct {
  uint64_t *keys;
  int32_t *vals;
  uint8_t *used;
  size_t cap, n; /* cap is a power of two */
} tz_u64map;
void tz_u64map_init(tz_u64map *m, size_t expect);
void tz_u64map_free(tz_u64map *m);
/* Pointer to the value for key, or NULL. */
int32_t *tz_u64map_get(const tz_u64map *m, uint64_t key);
/* Pointer to the value for key, inserting `init` when absent (*is_new set when non-NULL). */
int32_t *tz_u64map_put(tz_u64map *m, uint64_t key, int32_t init, int *is_new);

/* byte string -> int32 value; keys are copied into an arena. Entries are numbered 0..n-1 in
 * insertion order (tz_bmap_put returns the entry index). */
typedef struct {
  uint64_t hash;
  size_t off, len;
  int32_t val;
} tz_bmap_entry;
typedef struct {
  int32_t *slots; /* -1 empty, else entry index */
  size_t cap;
  tz_bmap_entry *ents;
  size_t n, ents_cap;
  char *arena;
  size_t arena_len, arena_cap;
} tz_bmap;
void tz_bmap_init(tz_bmap *m, size_t expect);
void tz_bmap_free(tz_bmap *m);
/* Entry index for key, or -1. */
long tz_bmap_find(const tz_bmap *m, const void *key, size_t len);
/* Entry index for key, inserting with value `init` when absent. */
long tz_bmap_put(tz_bmap *m, const void *key, size_t len, int32_t init, int *is_new);
static inline const char *tz_bmap_key(const tz_bmap *m, long e) { return m->arena + m->ents[e].off; }

/* ---- the tokenizer --------------------------------------------------------------------- */

enum { TZ_TOK_BYTELEVEL = 1, TZ_TOK_LLAMA2C = 2, TZ_TOK_LLMC = 3 };

struct tz_tokenizer {
  int kind;
  int vocab_size;
  char **tok;       /* [vocab_size] token bytes (raw bytes, NUL-terminated for convenience) */
  size_t *tok_len;  /* [vocab_size] */
  int eot;          /* id of <|endoftext|> or -1 */
  uint8_t *special; /* [vocab_size] 1 for special (added) tokens */

  /* byte-level BPE */
  int32_t byte_id[256]; /* id of the single-byte token for each byte */
  int n_merges;
  int32_t *merges;  /* [2*n_merges] left, right ids in rank order */
  int32_t *rank;    /* [vocab_size] merge rank producing the token, INT32_MAX if none */
  tz_u64map pair;   /* (left<<32|right) -> merged id, for every split of every ranked token */
  pcre2_code *re;   /* pre-tokenizer */

  /* bytes -> id for non-special tokens (byte-level) or pieces (llama2c) */
  tz_bmap lookup;

  /* llama2.c */
  float *score;
  int max_token_length;
  char **piece; /* [vocab_size] the piece strings as stored in the file (NUL-terminated) */

  /* Encoder scratch + pre-token caches kept across calls (tokenizer.c). Each encoding thread
   * takes one context out of the pool under the lock and puts it back when done, so a
   * context is only ever used by one thread at a time; the tokenizer stays shareable. */
  pthread_mutex_t pool_lock;
  struct enc_ctx **pool;
  int pool_n, pool_cap;
};

#define TZ_EOT_STR "<|endoftext|>"
#define TZ_EOT_LEN 13

/* tokenizer.c */
tz_tokenizer *tz_tok_alloc(int kind, int vocab_size);
/* Compile the GPT-2 pre-tokenizer pattern (UTF + UCP + MATCH_INVALID_UTF, JIT when
 * available). */
int tz_pretok_compile(pcre2_code **out);
/* Split text[0..n) into pre-tokens; calls cb for each (contiguous, covering every byte). */
typedef int (*tz_pretok_cb)(void *ud, const char *s, size_t n);
int tz_pretok_each(const pcre2_code *re, const char *s, size_t n, tz_pretok_cb cb, void *ud);
/* The same with the PCRE2 match data, match context and JIT stack (4 MiB, mmap'ed) kept in *st
 * from one call to the next (zero-initialised before the first; one pattern per state; one
 * thread at a time): a text of many short spans (documents split at <|endoftext|>) costs
 * one allocation instead of an mmap + munmap per span. tz_pretok_state_free releases it. */
typedef struct tz_pretok_state {
  pcre2_match_data *md;
  pcre2_match_context *mc;
  pcre2_jit_stack *js;
} tz_pretok_state;
int tz_pretok_each_st(const pcre2_code *re, tz_pretok_state *st, const char *s, size_t n, tz_pretok_cb cb,
                      void *ud);
void tz_pretok_state_free(tz_pretok_state *st);
/* Smallest p in [from, b) (p >= a + 2) where pre-tokenizing s[a, b) equals pre-tokenizing
 * s[a, p) and s[p, b) separately (a context-free boundary: "X\nY" with X, Y printable ASCII,
 * p at Y), or b when there is none. Used to cut text into chunks for parallel encoding. */
size_t tz_pretok_safe_cut(const char *s, size_t a, size_t from, size_t b);
/* A span [a, b) of text to pre-tokenize, followed by the EOT token when eot_after. */
typedef struct {
  size_t a, b;
  int eot_after;
} tz_span;
/* Split text into documents at the literal eot (when eotn > 0) and the documents into chunks of
 * about len/(8 nthr) bytes (clamped to [64 KiB, 1 MiB]; one chunk per document when nthr == 1)
 * at context-free pre-token boundaries (tz_pretok_safe_cut). Returns the number of spans
 * (malloc'ed in *out). */
size_t tz_text_spans(const char *text, size_t len, const char *eot, size_t eotn, int nthr, tz_span **out);
/* The same with an explicit chunk size in bytes (SIZE_MAX: one span per document); the pieces
 * of the spans do not depend on it (the cuts are context-free). */
size_t tz_text_spans_chunk(const char *text, size_t len, const char *eot, size_t eotn, size_t chunk, tz_span **out);
/* The pre-tokens of text (OpenMP over tz_text_spans) as malloc'ed (start, length) pairs;
 * length 0xffffffff marks an <|endoftext|> (allow_special). Needs len < 4 GiB. */
int tz_pretok_pieces(const tz_tokenizer *t, const char *text, size_t len, int allow_special, uint32_t **pcs,
                     size_t *npcs);
/* The same for the spans sp[0..nsp) of text only (offsets relative to text), OpenMP over the
 * spans with nthr threads; an EOT piece follows each span with eot_after. */
int tz_pretok_spans(const tz_tokenizer *t, const char *text, const tz_span *sp, size_t nsp, int nthr, uint32_t **pcs,
                    size_t *npcs);
/* tok_classes.c: the GPT-2 pattern's character class of every code point 0..0x10FFFF, 2 bits
 * each (code point c at bits 2 (c & 15) of word c >> 4): TZ_CLASS_LETTER (\p{L}),
 * TZ_CLASS_NUMBER (\p{N}), TZ_CLASS_SPACE (\s), else TZ_CLASS_OTHER; surrogates are OTHER
 * (they are invalid UTF-8 and never looked up). Built once per process by asking PCRE2 (the
 * library and options of tz_pretok_compile) about each code point; *seconds (may be NULL) gets
 * how long that took. The table is shared and read-only; -1 with tz_err when PCRE2 lacks
 * Unicode support. */
enum { TZ_CLASS_OTHER = 0, TZ_CLASS_LETTER = 1, TZ_CLASS_NUMBER = 2, TZ_CLASS_SPACE = 3 };
#define TZ_PRETOK_CLASS_WORDS (0x110000 / 16)
int tz_pretok_classes(const uint32_t **table, double *seconds);
/* tok_webgpu_pretok.c: the GPU pre-tokenizer alone (bpe_pretok.wgsl) on text[0, n) as one batch, for
 * tests: the pieces as malloc'ed (start, length) pairs like tz_pretok_pieces (length 0xffffffff
 * for the special literal eot[0, eotn) when eot is not NULL). -1 with tz_err when WebGPU or the
 * GPU pre-tokenizer is unavailable or n is above one batch. */
int tz_tok_webgpu_pretok(const char *text, size_t n, const char *eot, size_t eotn, uint32_t **pcs, size_t *np);
/* Unique pre-tokens ("words") of a training text and their counts: documents split at
 * <|endoftext|>, pre-tokenized in parallel chunks (OpenMP), counted per thread and merged. The
 * order of the words depends on the thread count; their set and counts do not. */
typedef struct {
  tz_bmap words;
  int64_t *count; /* [words.n] */
} tz_wordcount;
int tz_count_words(const char *text, size_t len, tz_wordcount *out);
void tz_wordcount_free(tz_wordcount *w);
/* The tokenizer the trainers return: bytes, merges[2 * n_merges] in order (taken over), EOT. */
int tz_tok_from_trained_merges(int32_t *merges, int n_merges, tz_tokenizer **out);

/* Build the byte-level tables (byte_id, rank, pair, lookup, re) after tok/tok_len/special/merges
 * are filled. `name` is used in errors. */
int tz_tok_finish_bytelevel(tz_tokenizer *t, const char *name);

/* GPT-2 bytes_to_unicode: code point for each byte, and the inverse (-1 if not a mapped cp). */
uint32_t tz_byte_to_cp(int b);
int tz_cp_to_byte(uint32_t cp);
/* Convert a token's mapped string (UTF-8 of mapped code points) to raw bytes. Returns -1 on a
 * character outside the mapping. out needs len bytes. */
long tz_unmap_token(const char *s, size_t len, char *out);
/* Raw bytes -> mapped UTF-8 string (malloc'ed, NUL-terminated). */
char *tz_map_token(const char *b, size_t len);

/* tok_compat.c */

int tz_tok_load_llama2c_buf(const char *path, const char *data, size_t len, tz_tokenizer **out);
int tz_tok_load_llmc_buf(const char *path, const char *data, size_t len, tz_tokenizer **out);
/* run.c decode() for a valid id: piece after prev (leading space dropped after BOS, <0xNN> -> the
 * raw byte), without run.c's safe_printf filter. */
void tz_l2_decode_raw(const tz_tokenizer *t, int prev, int tok, const char **bytes, size_t *len);

#endif
