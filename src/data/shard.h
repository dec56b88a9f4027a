/* llm.c token shards (karpathy/llm.c dev/data/data_common.py write_datafile, read by
 * llmc/dataloader.h).
 *
 * Layout, all integers little-endian:
 *   bytes [0, 1024)   header: 256 x int32; [0] = 20240520 (magic), [1] = 1 (version),
 *                     [2] = ntok (number of tokens, > 0); the other 253 slots are 0
 *   bytes [1024, ...) ntok x uint16 token ids
 * A valid file is exactly 1024 + 2 * ntok bytes long. (llm.c's Llama-3 variant, magic
 * 20240801 with uint32 ids, is not supported and is reported as such.) */
#ifndef TZ_DATA_SHARD_H
#define TZ_DATA_SHARD_H
#include <stddef.h>
#include <stdint.h>

#define TZ_SHARD_MAGIC 20240520
#define TZ_SHARD_VERSION 1
#define TZ_SHARD_HEADER_BYTES 1024
/* Largest ntok the int32 header field can hold. */
#define TZ_SHARD_MAX_TOKENS ((size_t)INT32_MAX)

/* Write ids[0..n) as a shard at `path`, atomically (temporary file + fsync + rename via
 * tz_afile: on any failure `path` is left as it was and no temporary file remains).
 * Inputs: ids, n tokens (1 <= n <= TZ_SHARD_MAX_TOKENS), every id in [0, 65535].
 * Returns 0, or -1 with a one-line tz_err message: "<path>: token id <v> at position <i>
 * does not fit in uint16", "<path>: no tokens to write (n = 0)", or the write error naming
 * the path and errno's text (e.g. "No space left on device"). */
int tz_shard_write(const char *path, const int32_t *ids, size_t n);

/* Read and validate the shard at `path`.
 * Inputs: vocab_size in [1, 65536]: every id must be < vocab_size; 0 skips the id check.
 * Outputs: *tokens = malloc'ed array of *n token ids (caller frees with free()), *n >= 1.
 * On error *tokens = NULL, *n = 0, returns -1 with a one-line message naming the file, the
 * field and its value, e.g.
 *   "data/x.bin: not a tezgah/llm.c token shard: header magic 12345 (expected 20240520)"
 *   "x.txt: not a tezgah/llm.c token shard: a text file (starts with "hello world, thi..."),
 *    not the magic 20240520; train --data takes text, or make a shard of it with tezgah
 *    tokenize --in TEXT --out SHARD.bin" (the magic is checked before the size)
 *   "data/x.bin: header version 3 (expected 1)"
 *   "data/x.bin: header ntok 0 (must be > 0)"
 *   "data/x.bin: file size 2000 bytes does not match header ntok 600 (expected 1024 + 2*600 = 2224 bytes)"
 *   "data/x.bin: file size 100 bytes is smaller than the 1024-byte header (truncated?)"
 *   "data/x.bin: token id 50300 at position 17 is out of range for vocab size 50257"
 *     (returned as TZ_SHARD_EVOCAB, below)
 *   "data/x.bin: No such file or directory" */
int tz_shard_read(const char *path, int vocab_size, uint16_t **tokens, size_t *n);
/* tz_shard_read's result for an id >= vocab_size (the message as above): the shards and the
 * vocabulary do not match, which only the caller can say in its terms (the model's V, the
 * --vocab-size or --tokenizer that set it); tz_shard_last_bad_id has the numbers. */
#define TZ_SHARD_EVOCAB (-2)
/* The last TZ_SHARD_EVOCAB refusal of this thread: the shard's path, the first id out of range
 * (id, at token position pos), the largest id in that shard (max_id) and the vocab_size it
 * was checked against. Valid until the next refusal. */
typedef struct {
  char path[1024];
  int id, max_id, vocab_size;
  size_t pos;
} tz_shard_bad_id;
const tz_shard_bad_id *tz_shard_last_bad_id(void);
/* That refusal as the start of the callers' messages, into buf (cap bytes; returns buf):
 * "<path>: token id <id> (at position <pos>; this shard's largest is <max_id>)". */
const char *tz_shard_bad_id_text(char *buf, size_t cap);

/* Read and validate only the header and the file size (no token ids are read).
 * Output: *ntok (>= 1). Errors as tz_shard_read, minus the id check. */
int tz_shard_read_header(const char *path, size_t *ntok);

#endif
