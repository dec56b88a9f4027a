/* Training batches from llm.c token shards (see data/shard.h).
 *
 * A loader walks a fixed, ordered list of shards as one token stream per shard. Each batch
 * is a contiguous window of B*T+1 tokens w[0..B*T] taken from the current shard:
 *   inputs  [B*T] int32, row-major (B rows of T): inputs[b*T + t]  = w[b*T + t]
 *   targets [B*T] int32, same shape:              targets[b*T + t] = w[b*T + t + 1]
 * so targets are the inputs shifted left by one token. After a batch the offset advances by
 * B*T (the last target of one batch is the first input of the next). When the next window
 * would not fit in the current shard (offset + B*T + 1 > ntok), the loader moves to offset 0
 * of the next shard; after the last shard it wraps to shard 0 and the epoch counter
 * increases. Tokens at the end of a shard that do not fill a window are skipped. There is no
 * shuffling: the sequence of batches is a pure function of the shard list, B, T and the
 * start position.
 *
 * All shards are read and validated (header, size, every id < vocab_size, ntok >= B*T+1) by
 * tz_loader_open, so a bad shard is reported before training starts. Only the current shard
 * is kept in memory (2 bytes per token); moving to another shard re-reads it. */
#ifndef TZ_DATA_DATALOADER_H
#define TZ_DATA_DATALOADER_H
#include <stddef.h>
#include <stdint.h>

typedef struct tz_loader tz_loader;

/* Where the next batch starts. Every position reachable by tz_loader_next has
 * shard < number of shards, offset a multiple of B*T and offset + B*T + 1 <= that shard's
 * ntok. Plain integers with no padding: store the fields in a checkpoint (e.g. with
 * tz_loader_pos_encode) and restore with tz_loader_set_pos for bit-identical batches. */
typedef struct {
  uint64_t shard;  /* index into the shard list (in tz_loader_shard_path order) */
  uint64_t offset; /* token offset of the window's first token within that shard */
  uint64_t epoch;  /* completed passes over the whole shard list (0 at open) */
} tz_loader_pos;

#define TZ_LOADER_POS_BYTES 24

/* Open a loader.
 * Inputs: `paths` = comma-separated list of shard paths and/or glob(3) patterns (each
 *   pattern's matches in sorted order; the list order is kept, so "a.bin,b.bin" reads a then
 *   b); vocab_size in [1, 65536] (every token id must be < vocab_size); B >= 1 sequences per
 *   batch; T >= 1 tokens per sequence.
 * Output: *out, positioned at (shard 0, offset 0, epoch 0). Free with tz_loader_free.
 * Errors (-1, one line): "no files given (empty list ...)", "<pattern>: no files match",
 *   "<pattern>: cannot read directory D: <strerror>", any
 *   tz_shard_read error (names the file and value; an id >= vocab_size returns
 *   TZ_SHARD_EVOCAB, -2, with tz_shard_last_bad_id's numbers), or
 *   "<file>: 100 tokens, corpus smaller than one batch (B*T+1 = 4*64+1 = 257 tokens); lower -B or
 *   -T (B*T at most 99) or give a larger shard". */
int tz_loader_open(tz_loader **out, const char *paths, int vocab_size, int B, int T);

/* Free the loader (NULL is fine). */
void tz_loader_free(tz_loader *l);

/* Fill the next batch and advance.
 * Outputs: inputs[B*T] and targets[B*T] (caller-owned int32 arrays, shapes as above).
 * Returns 0, or -1 if the shard to read could not be (re)loaded or changed on disk since
 * open (message names the file). On error the position is unchanged. */
int tz_loader_next(tz_loader *l, int32_t *inputs, int32_t *targets);

/* Rows [row0, row0 + nrows) of the next batch only (0 <= row0, row0 + nrows <= B), then
 * advance past the whole batch: inputs/targets [nrows·T]. Data-parallel rank r of W with
 * B_rank rows each opens the loader with B = W·B_rank and reads rows [r·B_rank, (r+1)·B_rank),
 * so the W ranks together read exactly the batch one process would. Errors as tz_loader_next. */
int tz_loader_next_rows(tz_loader *l, int row0, int nrows, int32_t *inputs, int32_t *targets);

/* Shuffle the rows of every batch: the B rows of batch k (k = offset / (B·T)) are the row
 * windows perm[k·B .. k·B+B−1] of a permutation of the shard's (ntok−1)/T windows of T+1
 * tokens (starting at multiples of T), drawn for each (shard, epoch) from `seed`. Positions
 * keep their meaning and their save/restore, so resuming stays exact. Consecutive batches
 * are then independent samples of the whole shard rather than neighbouring text, which
 * matters for corpora in reading order (a book, a Bible). Off by default. */
void tz_loader_shuffle(tz_loader *l, uint64_t seed);

/* Back to (shard 0, offset 0, epoch 0). */
void tz_loader_reset(tz_loader *l);

/* Current position (the start of the batch the next tz_loader_next returns). */
tz_loader_pos tz_loader_get_pos(const tz_loader *l);

/* Restore a position from tz_loader_get_pos (of a loader over the same shards with the
 * same B and T). Validated: shard < number of shards, offset multiple of B*T, and
 * offset + B*T + 1 <= ntok of that shard. Returns 0, or -1 with a one-line message (the
 * position is then unchanged). */
int tz_loader_set_pos(tz_loader *l, tz_loader_pos pos);

/* Serialize a position as 24 bytes: shard, offset, epoch as little-endian uint64. */
void tz_loader_pos_encode(tz_loader_pos pos, unsigned char out[TZ_LOADER_POS_BYTES]);
tz_loader_pos tz_loader_pos_decode(const unsigned char in[TZ_LOADER_POS_BYTES]);

/* Introspection. */
int tz_loader_B(const tz_loader *l);
int tz_loader_T(const tz_loader *l);
size_t tz_loader_num_shards(const tz_loader *l);
const char *tz_loader_shard_path(const tz_loader *l, size_t i); /* i < num_shards */
size_t tz_loader_shard_tokens(const tz_loader *l, size_t i);    /* ntok of shard i */
uint64_t tz_loader_total_tokens(const tz_loader *l);            /* sum of ntok */
/* Batches in one full pass (epoch): sum over shards of floor((ntok - 1) / (B*T)). */
uint64_t tz_loader_batches_per_epoch(const tz_loader *l);

#endif
