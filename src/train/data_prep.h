/* Corpus preparation: raw text → trained BPE tokenizer + llm.c token shards, done once and
 * cached. The cache lives beside the runs: <cache_root>/<key>/{tokenizer.json, train.bin,
 * val.bin}, key = XXH64 of (corpus bytes, vocab_size, val_fraction, prep format version), so
 * a second run on the same corpus starts training at once.
 * The corpus is split on the literal "<|endoftext|>" into documents (the tokenizer encodes it
 * as its special token); every (1/val_fraction)-th block of 4096 tokens is held out for
 * validation (the tail, for corpora smaller than that). */
#ifndef TZ_TRAIN_DATA_PREP_H
#define TZ_TRAIN_DATA_PREP_H
#include <stdint.h>

#include "tokenizer/tokenizer.h"

/* --val-fraction's range, one rule for train's option (cli/cmd_train.c, on the double given)
 * and tz_prepare_corpus_tok (on the float it is stored as, against the bounds as floats: a value
 * the option takes is never refused here). Why these bounds: the split holds out every
 * round(1/F)-th block, so above 0.5 it could not hold out more than half (1/0.6 rounds to 2
 * too); below 1e-6 the cache key, which holds F * 1e6 as an integer, would be 0. Both say
 * "--val-fraction: F is out of range [1e-06, 0.5]" (they said [1e-06, 0.5] and then "(0, 0.5)"
 * for 0.5 itself). */
#define TZ_VAL_FRACTION_MIN 1e-6
#define TZ_VAL_FRACTION_MAX 0.5
/* train's --vocab-size range (a BPE trained on the corpus): 256 byte tokens and
 * <|endoftext|> at least; at most 65536 because the corpus is stored as llm.c shards of
 * uint16 ids (data/shard.h). `tezgah tokenizer train` writes only a tokenizer and goes to
 * 2^24, the largest vocabulary tezgah's tokenizers take (tokenizer.h). Both errors say why. */
#define TZ_PREP_VOCAB_MIN 257
#define TZ_PREP_VOCAB_MAX 65536
#define TZ_PREP_VOCAB_WHY                                                                          \
  "at least 256 byte tokens + <|endoftext|>; at most 65536: train's token shards hold uint16 ids; " \
  "tezgah tokenizer train goes to 16777216"

typedef struct {
  char *train_path, *val_path, *tokenizer_path; /* malloc'ed */
  size_t n_train, n_val;                         /* tokens */
  uint64_t corpus_xxh64; /* XXH64 (seed 0) of the corpus text as joined (tz_prep_corpus_xxh64's) */
} tz_prepared;

/* Errors (one line): "<corpus>: <strerror>", "<corpus>: file is empty",
 * "<corpus>: looks binary (NUL byte at offset N)", "<corpus>: too small to hold out a
 * validation split: N bytes (...)" (before the BPE is trained, below) or "... split (N tokens)"
 * (after encoding), tokenizer/shard errors. `log` (may be NULL) receives progress. */
int tz_prepare_corpus(const char *corpus, int vocab_size, float val_fraction,
                      const char *cache_root, int quiet, const char *tok_backend, tz_prepared *out);
/* The same with a given tokenizer (train --init-from: the model's) instead of a newly
 * trained BPE; vocab_size is ignored. Byte-level BPE encodes with <|endoftext|> special;
 * llama2.c tokenizers give BOS + run.c encode per document; llm.c's (decode-only) is refused.
 * Cached under a key that includes the tokenizer's bytes; tokenizer_path is then the
 * tokenizer in its native format (tz_tok_to_blob).
 * A byte-level BPE gives at most one token per byte, so with one (trained or given) a corpus
 * too small for a validation split of 2 tokens is refused before the BPE is trained or the text
 * encoded: "<corpus>: too small to hold out a validation split: N bytes (at most as many tokens;
 * --val-fraction F needs M bytes or more)"; and with B, T > 0 (the batch the shards must hold:
 * B*T+1 tokens in each split) a corpus too small for it: "<corpus>: N bytes are at most N
 * tokens, fewer than one batch (B*T+1 = ...)" or "<corpus>: N bytes hold out at most M
 * validation tokens (--val-fraction F), fewer than one batch (...)". B, T = 0: no batch check. */
int tz_prepare_corpus_tok(const char *corpus, const tz_tokenizer *given, int vocab_size, float val_fraction, int B,
                          int T, const char *cache_root, int quiet, const char *tok_backend, tz_prepared *out);
void tz_prepared_free(tz_prepared *p);
/* XXH64 (seed 0) of the corpus list's text as tz_prepare_corpus_tok reads it (the files joined
 * with <|endoftext|> between them, each checked as text): what a run records of its corpus, so
 * that --resume can tell whether preparing it again gives the run's shards. Errors as the
 * corpus's in tz_prepare_corpus_tok ("<path>: No such file or directory", "<pattern>: no files
 * match", "<path>: file is empty", ...). */
int tz_prep_corpus_xxh64(const char *list, uint64_t *hash);
/* XXH64 (seed 0) of a whole file (a shard: header and tokens) and its size in bytes: the run's
 * record of its prepared shards (byte-identical ones are the same tokens). Errors: "<path>:
 * <strerror>". */
int tz_prep_file_xxh64(const char *path, uint64_t *hash, uint64_t *bytes);

/* The validation tokens the split holds out of n tokens at val_fraction (the count
 * tz_prepare_corpus_tok's split gives: every (1/val_fraction)-th block, or the tail). */
size_t tz_prep_val_tokens(size_t n, float val_fraction);
/* The smallest --val-fraction of 0.01, 0.02, ..., 0.5 whose split of n tokens leaves at least
 * `need` tokens on both sides; 0 when none does (the hint in the errors of a too-small split). */
float tz_prep_val_fraction_for(size_t n, size_t need);

/* The corpus rule, shared by every command that takes text to train or tokenize (train
 * --data, tokenizer train, tokenize, eval on text): `data` (len bytes, named `path` in the
 * message) must be non-empty, hold no NUL byte and be mostly UTF-8 (at most 5% invalid bytes
 * in the first MiB). Errors (one line): "<path>: file is empty", "<path>: looks binary (NUL
 * byte at offset N); expected UTF-8 text", "<path>: looks binary (N of the first M bytes are
 * not UTF-8); expected UTF-8 text". */
int tz_corpus_check_text(const char *path, const char *data, size_t len);

#endif
