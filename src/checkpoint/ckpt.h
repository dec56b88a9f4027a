/* Crash-safe checkpoint container: a file of named binary sections.
 *
 * The container knows nothing about models; the training code decides which sections to
 * store (e.g. "config", "params", "adam_m", "adam_v", "rng", "loader_pos") and their
 * encoding. Format version 1, all integers little-endian:
 *
 *   offset 0    char     magic[8]     "TZCKPT\0\0"
 *   offset 8    uint32   version      1
 *   offset 12   uint32   n_sections
 *   offset 16   entry    table[n_sections], 72 bytes each:
 *                 char   name[48]     NUL-terminated, 1..47 bytes, unique, rest zero
 *                 uint64 offset       absolute file offset of the payload, multiple of 64
 *                 uint64 size         payload bytes
 *                 uint64 checksum     XXH64(payload, seed 0)
 *   ...         payloads in table order, each starting at the next multiple of 64 after the
 *               previous one (table end for the first); the gaps are zero bytes (checked)
 *   file end-8  uint64   table_checksum  XXH64(bytes [0, 16 + 72*n_sections), seed 0),
 *               i.e. of the header and the table; it directly follows the last payload
 *               (or the table when n_sections = 0), so the file size is exactly
 *               max(table end, end of the last payload) + 8.
 *
 * Files are written with tz_afile (temporary file, fsync, rename, fsync of the directory):
 * a crash or a full disk leaves either the previous checkpoint or the new one.
 * The reader validates everything before returning: magic, version, the table fits in
 * the file, the table checksum, each entry's name, alignment, bounds and order, the exact
 * file size, and every payload checksum. See docs/CHECKPOINT.md. */
#ifndef TZ_CHECKPOINT_CKPT_H
#define TZ_CHECKPOINT_CKPT_H
#include <stddef.h>
#include <stdint.h>

#define TZ_CKPT_MAGIC "TZCKPT\0\0"
#define TZ_CKPT_VERSION 1
#define TZ_CKPT_NAME_MAX 47 /* longest section name in bytes (the field holds 48 with the NUL) */
#define TZ_CKPT_ALIGN 64    /* payload alignment in bytes, from the start of the file */

/* ---- writing ---- */
typedef struct tz_ckpt_writer tz_ckpt_writer;

/* A new, empty writer. Never NULL (aborts on out-of-memory like tz_malloc). */
tz_ckpt_writer *tz_ckpt_begin(void);

/* Add section `name` (1..47 bytes, unique in this writer) with `size` bytes at `data`
 * (data may be NULL when size == 0). tz_ckpt_add COPIES the bytes, so the caller may
 * change or free them right away. Returns 0, or -1 with a one-line message for a bad or
 * duplicate name. */
int tz_ckpt_add(tz_ckpt_writer *w, const char *name, const void *data, size_t size);

/* Like tz_ckpt_add but only REFERENCES the bytes (no copy, for large tensors): they must
 * stay valid and unchanged until tz_ckpt_commit returns (or tz_ckpt_free). */
int tz_ckpt_add_ref(tz_ckpt_writer *w, const char *name, const void *data, size_t size);

/* A section whose bytes are produced while the file is written (e.g. downloaded from a device
 * in chunks): fill(ctx, offset, dst, n) must write bytes [offset, offset+n) of the payload
 * into dst. tz_ckpt_commit calls it in order with chunks of at most TZ_CKPT_CHUNK bytes
 * (into one buffer of that size), hashing and writing each chunk before the next: a
 * checkpoint of any size needs only that buffer on the host. The table (with the checksums)
 * is written last, over a zeroed placeholder at the start of the temporary file. */
#define TZ_CKPT_CHUNK (1u << 20)
typedef void (*tz_ckpt_fill_fn)(void *ctx, uint64_t offset, void *dst, size_t n);
int tz_ckpt_add_stream(tz_ckpt_writer *w, const char *name, uint64_t size, tz_ckpt_fill_fn fill, void *ctx);

/* Write all sections to `path` atomically (see above). May be called more than once.
 * Returns 0, or -1 with a one-line message naming the path and errno's text (e.g.
 * "runs/a/ckpt.bin: write failed: No space left on device"); then `path` is untouched
 * (an existing file keeps its old contents) and no temporary file remains. */
int tz_ckpt_commit(tz_ckpt_writer *w, const char *path);

/* Free the writer and its copied sections (NULL is fine). */
void tz_ckpt_free(tz_ckpt_writer *w);

/* ---- reading ---- */
typedef struct tz_ckpt tz_ckpt;

/* Open and fully validate the checkpoint at `path` (the file is memory-mapped read-only;
 * every checksum is verified here, so later gets cannot see corrupt data).
 * Output: *out, to be closed with tz_ckpt_close. On error *out = NULL and -1 with a
 * one-line message naming the file, e.g.
 *   "<path>: file is empty (not a checkpoint)"
 *   "<path>: not a tezgah checkpoint: a text file (starts with "hello world, thi..."), not the
 *    magic "TZCKPT\0\0""  (or: starts with bytes 58 58 ..., for a binary file)
 *   "<path>: truncated: 10 bytes, smaller than the 24-byte minimum checkpoint" (the magic's
 *    first bytes, but no whole header)
 *   "<path>: version 2 (expected 1)"
 *   "<path>: truncated: 100 bytes, the table of 3 sections needs 240"
 *   "<path>: truncated: 1000 bytes, expected 290440 (the size its table of 5 sections gives;
 *    289440 bytes missing)" (before any checksum, where the table's entries are in order)
 *   "<path>: 290444 bytes, expected 290440 (...): 4 bytes of trailing data"
 *   "<path>: table checksum mismatch (file corrupt or truncated)"
 *   "<path>: section 'params' ends at byte 5000, beyond the data end 4000 (truncated?)"
 *   "<path>: section 'params' checksum mismatch (stored 0x..., computed 0x...)" */
int tz_ckpt_open(const char *path, tz_ckpt **out);

/* Payload of section `name`, or NULL when absent. *size (if size is non-NULL) receives
 * the byte count (0 when absent). The pointer is 64-byte aligned, read-only, and valid
 * until tz_ckpt_close. A present zero-byte section returns a non-NULL pointer. */
const void *tz_ckpt_get(const tz_ckpt *ck, const char *name, size_t *size);

/* Require section `name` to exist with exactly `expected_size` bytes; *data receives its
 * payload. Returns 0, or -1 with "<file>: missing section '<name>'" or
 * "<file>: section '<name>' has <n> bytes (expected <m>)". */
int tz_ckpt_require(const tz_ckpt *ck, const char *name, size_t expected_size, const void **data);

/* Number of sections and the name of section i (< count), in file order. */
size_t tz_ckpt_count(const tz_ckpt *ck);
const char *tz_ckpt_name(const tz_ckpt *ck, size_t i);

/* Unmap and free (NULL is fine). */
void tz_ckpt_close(tz_ckpt *ck);

#endif
