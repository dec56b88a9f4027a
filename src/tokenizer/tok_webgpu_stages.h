/* What the WebGPU tokenizer's stages share with each other beyond the GPU context: the
 * encoder's tables (tok_webgpu_tables.c), its batch state, which the GPU pre-tokenizer
 * (tok_webgpu_pretok.c) also sets up for the word counting (tok_webgpu_words.c), and the
 * counted words the trainer (tok_webgpu_train.c) starts from. Private to
 * src/tokenizer/tok_webgpu*.c. */
#ifndef TZ_TOKENIZER_TOK_WEBGPU_STAGES_H
#define TZ_TOKENIZER_TOK_WEBGPU_STAGES_H
#include "tokenizer/tok_internal.h"
#include "tokenizer/tok_webgpu_ctx.h"

typedef struct {
  uint32_t *v;
  size_t n;
  uint32_t u[12]; /* byte_off, pair_off, pair_mask, tok_off, vh_off, vh_mask, ar_off */
} enc_tables;
#define SHORT 64
/* Text bytes pre-tokenized per step of the encoder's CPU/GPU pipeline (env
 * TEZGAH_TOK_GPU_SEGMENT overrides: the tests use small segments to reach many batches). */
#define SEGMENT (16u << 20)
/* One batch in flight: its readback buffer (mapped when done) and where its ids go. */
typedef struct {
  WGPUBuffer rb;
  uint64_t rb_size, mapped_size;
  int busy, st;
  long seq;
  WGPUFuture fut;
  /* GPU pre-tokenization: the byte offset in rb of the state (st[3] = nhuge) and the huge
   * pieces the CPU encodes (0: none), the batch's text and the tokenizer */
  uint64_t huge_at;
  const char *text;
  const tz_tokenizer *t;
} enc_slot;
typedef struct {
  int32_t *v;
  size_t n, cap;
} id_vec;
/* Everything one encode call's GPU feeding needs (used by the OpenMP master thread only). */
typedef struct {
  enc_tables tb;
  WGPUBuffer ub, B[8];
  uint64_t bs[8], cap;
  tg_pipe *P[5];
  enc_slot S[2];
  id_vec out;
  uint32_t *lng, *local;
  size_t lcap, loc_cap;
  long seq;
  /* GPU pre-tokenization (bpe_pretok.wgsl): its uniforms, the per-thread masks and the state
   * (piece count, long pieces, blocks), its pipelines */
  WGPUBuffer pu, PB[3];
  uint64_t pbs[3];
  tg_pipe *Q[5];
  uint32_t pt_u[16];
  const tz_tokenizer *t;
} enc_run;

/* tok_webgpu_tables.c: the tokenizer as bpe_encode.wgsl reads it (e->v: one u32 array, e->u:
 * its offsets); -1 with tz_err for a tokenizer that is not byte-level BPE or too large. */
int tz_tg_build_tables(const tz_tokenizer *t, enc_tables *e);

/* tok_webgpu_encode.c: where the last encode call spent its time */
extern tz_tok_gpu_enc_stats tz_tg_last_enc;

/* tok_webgpu_pretok.c: the pre-tokenizer's entry points; why the special literal eot[0, n)
 * rules the GPU pre-tokenizer out ("" when it does not); the end of the next batch of text
 * from a (0: none); its set-up for one call into R (1 yes, 0 no) */
extern const char *const tz_tg_pretok_entries[];
const char *tz_tg_pretok_literal_why(const char *e, size_t n);
size_t tz_tg_next_cut(const char *text, size_t len, size_t a, size_t target, size_t cap, const char *eot,
                   size_t eotn);
int tz_tg_gpu_pretok_setup(enc_run *R, const char *eot, size_t eotn);

/* tok_webgpu_words.c: the word counter's entry points, and the words of a training text
 * counted on the GPU into *sym and *words (0), or 1 when the GPU cannot (*why), -1 on an error */
extern const char *const tz_tg_words_entries[];
int tz_tg_count_words_gpu(const char *text, size_t len, int roomy, WGPUBuffer *sym, WGPUBuffer *words,
                       uint64_t *nw, uint64_t *nsym, const char **why);

#endif
