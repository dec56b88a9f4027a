#include "data/shard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/progress.h" /* tz_plural */
#include "core/fileio.h"
#include "core/utf8.h"

#define LLAMA3_MAGIC 20240801

/* the last id refusal of tz_shard_read in this thread (tz_shard_last_bad_id) */
static _Thread_local tz_shard_bad_id g_bad;

const tz_shard_bad_id *tz_shard_last_bad_id(void) { return &g_bad; }

const char *tz_shard_bad_id_text(char *buf, size_t cap) {
  snprintf(buf, cap, "%s: token id %d (at position %zu; this shard's largest is %d)", g_bad.path, g_bad.id, g_bad.pos,
           g_bad.max_id);
  return buf;
}

static void put_le32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16);
  p[3] = (unsigned char)(v >> 24);
}

static int32_t get_le32(const unsigned char *p) {
  return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

int tz_shard_write(const char *path, const int32_t *ids, size_t n) {
  if (n == 0) return tz_err("%s: no tokens to write (n = 0)", path);
  if (n > TZ_SHARD_MAX_TOKENS)
    return tz_err("%s: %zu tokens exceed the shard limit of %zu", path, n, TZ_SHARD_MAX_TOKENS);
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] > 65535)
      return tz_err("%s: token id %d at position %zu does not fit in uint16", path, (int)ids[i], i);

  unsigned char header[TZ_SHARD_HEADER_BYTES];
  memset(header, 0, sizeof header);
  put_le32(header + 0, TZ_SHARD_MAGIC);
  put_le32(header + 4, TZ_SHARD_VERSION);
  put_le32(header + 8, (uint32_t)n);

  tz_afile af;
  if (tz_afile_open(&af, path)) return -1;
  if (tz_afile_write(&af, header, sizeof header)) goto fail;
  enum { CHUNK = 8192 };
  unsigned char buf[2 * CHUNK];
  for (size_t i = 0; i < n; i += CHUNK) {
    size_t m = n - i < CHUNK ? n - i : CHUNK;
    for (size_t j = 0; j < m; j++) {
      uint32_t v = (uint32_t)ids[i + j];
      buf[2 * j] = (unsigned char)v;
      buf[2 * j + 1] = (unsigned char)(v >> 8);
    }
    if (tz_afile_write(&af, buf, 2 * m)) goto fail;
  }
  return tz_afile_commit(&af); /* removes the temporary file and names the path on failure */
fail:;
  char msg[TZ_ERR_MAX];
  snprintf(msg, sizeof msg, "%s", tz_errmsg());
  tz_afile_abort(&af);
  return tz_err("%s", msg);
}

/* Open `path`, validate header and size; on success the FILE is positioned at the first
 * token and *ntok is set. */
static int open_checked(const char *path, FILE **out, size_t *ntok) {
  *out = NULL;
  *ntok = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return tz_err("%s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0) {
    int e = errno;
    fclose(f);
    return tz_err("%s: %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    fclose(f);
    return tz_err("%s: not a regular file", path);
  }
  uint64_t size = (uint64_t)st.st_size;
  /* the magic first, over the bytes there are (as checkpoints are checked): a short text file
   * given as a shard is no truncated shard */
  unsigned char h[TZ_SHARD_HEADER_BYTES];
  size_t got = fread(h, 1, size < sizeof h ? (size_t)size : sizeof h, f);
  int32_t magic = got >= 4 ? get_le32(h) : 0;
  unsigned char want[4];
  put_le32(want, TZ_SHARD_MAGIC);
  int rc = 0;
  if (magic == LLAMA3_MAGIC)
    rc = tz_err("%s: header magic %d is llm.c's uint32 Llama-3 shard format (expected %d, uint16 tokens)",
                path, (int)magic, TZ_SHARD_MAGIC);
  else if (got && memcmp(h, want, got < 4 ? got : 4) != 0) { /* a cut-off magic: truncated (below) */
    /* Text is the likely mistake (a corpus given to --train-shards): say so, and how a shard
     * is made from it. The first bytes are shown, as the checkpoint loader shows them. */
    char head[128];
    size_t n = got < 64 ? got : 64;
    if (tz_utf8_describe_head(h, n, size > n, head, sizeof head))
      rc = tz_err("%s: not a tezgah/llm.c token shard: a text file (starts with %s), not the magic %d; train "
                  "--data takes text, or make a shard of it with tezgah tokenize --in TEXT --out SHARD.bin",
                  path, head, TZ_SHARD_MAGIC);
    else if (got >= 4)
      rc = tz_err("%s: not a tezgah/llm.c token shard: header magic %d (expected %d)", path, (int)magic,
                  TZ_SHARD_MAGIC);
  }
  if (rc) {
    fclose(f);
    return rc;
  }
  if (size < TZ_SHARD_HEADER_BYTES) {
    fclose(f);
    return tz_err("%s: file size %llu byte%s is smaller than the %d-byte header (truncated?)", path,
                  (unsigned long long)size, tz_plural((long long)size), TZ_SHARD_HEADER_BYTES);
  }
  if (got != sizeof h) {
    fclose(f);
    return tz_err("%s: cannot read the %d-byte header", path, TZ_SHARD_HEADER_BYTES);
  }
  int32_t version = get_le32(h + 4), nt = get_le32(h + 8);
  if (version != TZ_SHARD_VERSION)
    rc = tz_err("%s: header version %d (expected %d)", path, (int)version, TZ_SHARD_VERSION);
  else if (nt <= 0)
    rc = tz_err("%s: header ntok %d (must be > 0)", path, (int)nt);
  else if (size != TZ_SHARD_HEADER_BYTES + 2 * (uint64_t)nt)
    rc = tz_err("%s: file size %llu bytes does not match header ntok %d (expected %d + 2*%d = %llu bytes)",
                path, (unsigned long long)size, (int)nt, TZ_SHARD_HEADER_BYTES, (int)nt,
                (unsigned long long)(TZ_SHARD_HEADER_BYTES + 2 * (uint64_t)nt));
  if (rc) {
    fclose(f);
    return rc;
  }
  *out = f;
  *ntok = (size_t)nt;
  return 0;
}

int tz_shard_read_header(const char *path, size_t *ntok) {
  FILE *f;
  if (open_checked(path, &f, ntok)) return -1;
  fclose(f);
  return 0;
}

int tz_shard_read(const char *path, int vocab_size, uint16_t **tokens, size_t *n) {
  *tokens = NULL;
  *n = 0;
  if (vocab_size < 0 || vocab_size > 65536)
    return tz_err("%s: vocab size %d out of range (expected 1..65536, or 0 for no check)", path, vocab_size);
  FILE *f;
  size_t nt;
  if (open_checked(path, &f, &nt)) return -1;
  uint16_t *t = tz_malloc(nt * sizeof *t);
  size_t got = fread(t, 2, nt, f);
  int bad = ferror(f);
  fclose(f);
  if (bad || got != nt) {
    free(t);
    return tz_err("%s: read %zu of %zu tokens (file changed or I/O error)", path, got, nt);
  }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  for (size_t i = 0; i < nt; i++) t[i] = (uint16_t)((t[i] >> 8) | (t[i] << 8));
#endif
  if (vocab_size > 0) {
    uint16_t lim = (uint16_t)(vocab_size - 1); /* vocab_size 65536 admits every id */
    for (size_t i = 0; i < nt; i++) {
      if (t[i] > lim) {
        /* the largest id too (the rest of the shard scanned once, on this error path only): what
         * a vocabulary must hold, for the callers' hint */
        int v = t[i], mx = v;
        for (size_t k = i + 1; k < nt; k++)
          if (t[k] > mx) mx = t[k];
        free(t);
        snprintf(g_bad.path, sizeof g_bad.path, "%s", path);
        g_bad.id = v, g_bad.max_id = mx, g_bad.pos = i, g_bad.vocab_size = vocab_size;
        tz_err("%s: token id %d at position %zu is out of range for vocab size %d", path, v, i, vocab_size);
        return TZ_SHARD_EVOCAB;
      }
    }
  }
  *tokens = t;
  *n = nt;
  return 0;
}
