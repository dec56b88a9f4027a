#include "checkpoint/ckpt.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/error.h"
#include "core/progress.h" /* tz_plural */
#include "core/fileio.h"
#include "core/utf8.h"

#define HEADER_BYTES 16
#define ENTRY_BYTES 72
#define NAME_FIELD 48

static void put_le32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_le64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_le32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static uint64_t get_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}
static uint64_t align_up(uint64_t x) { return (x + TZ_CKPT_ALIGN - 1) / TZ_CKPT_ALIGN * TZ_CKPT_ALIGN; }

/* ---------------------------------------------------------------- writer */

typedef struct {
  char name[NAME_FIELD];
  const void *data;
  size_t size;
  void *owned; /* non-NULL when the writer copied the data */
  tz_ckpt_fill_fn fill; /* streamed section (data == NULL) */
  void *ctx;
} wsection;

struct tz_ckpt_writer {
  wsection *s;
  size_t n, cap;
};

tz_ckpt_writer *tz_ckpt_begin(void) { return tz_calloc(1, sizeof(tz_ckpt_writer)); }

static int add(tz_ckpt_writer *w, const char *name, const void *data, size_t size, int copy) {
  size_t len = name ? strlen(name) : 0;
  if (len == 0 || len > TZ_CKPT_NAME_MAX)
    return tz_err("checkpoint: section name '%s' must be 1..%d bytes", name ? name : "(null)", TZ_CKPT_NAME_MAX);
  if (size && !data && copy >= 0) return tz_err("checkpoint: section '%s' has %zu bytes but no data", name, size);
  for (size_t i = 0; i < w->n; i++)
    if (strcmp(w->s[i].name, name) == 0) return tz_err("checkpoint: duplicate section '%s'", name);
  if (w->n == w->cap) {
    w->cap = w->cap ? 2 * w->cap : 16;
    w->s = tz_realloc(w->s, w->cap * sizeof *w->s);
  }
  wsection *s = &w->s[w->n++];
  memset(s, 0, sizeof *s);
  memcpy(s->name, name, len);
  s->size = size;
  if (copy > 0 && size) {
    s->owned = tz_malloc(size);
    memcpy(s->owned, data, size);
    s->data = s->owned;
  } else {
    s->data = data;
  }
  return 0;
}

int tz_ckpt_add(tz_ckpt_writer *w, const char *name, const void *data, size_t size) {
  return add(w, name, data, size, 1);
}

int tz_ckpt_add_ref(tz_ckpt_writer *w, const char *name, const void *data, size_t size) {
  return add(w, name, data, size, 0);
}

int tz_ckpt_add_stream(tz_ckpt_writer *w, const char *name, uint64_t size, tz_ckpt_fill_fn fill, void *ctx) {
  if (add(w, name, NULL, (size_t)size, -1)) return -1;
  w->s[w->n - 1].fill = fill;
  w->s[w->n - 1].ctx = ctx;
  return 0;
}

void tz_ckpt_free(tz_ckpt_writer *w) {
  if (!w) return;
  for (size_t i = 0; i < w->n; i++) free(w->s[i].owned);
  free(w->s);
  free(w);
}

/* One pass: a zeroed placeholder for the header and table, then each payload (streamed
 * sections chunk by chunk through one TZ_CKPT_CHUNK buffer) hashed as it is written, the
 * trailer, and finally the real header and table over the placeholder. */
int tz_ckpt_commit(tz_ckpt_writer *w, const char *path) {
  if (w->n > UINT32_MAX) return tz_err("%s: too many sections (%zu)", path, w->n);
  size_t table_end = HEADER_BYTES + ENTRY_BYTES * w->n;
  unsigned char *head = tz_calloc(1, table_end), *chunk = NULL;
  memcpy(head, TZ_CKPT_MAGIC, 8);
  put_le32(head + 8, TZ_CKPT_VERSION);
  put_le32(head + 12, (uint32_t)w->n);
  static const unsigned char zeros[TZ_CKPT_ALIGN];
  tz_afile af;
  if (tz_afile_open(&af, path)) {
    free(head);
    return -1;
  }
  unsigned char *blank = tz_calloc(1, table_end);
  int bad = tz_afile_write(&af, blank, table_end);
  free(blank);
  uint64_t cursor = table_end;
  XXH64_state_t *h = XXH64_createState();
  for (size_t i = 0; i < w->n && !bad; i++) {
    const wsection *sec = &w->s[i];
    unsigned char *e = head + HEADER_BYTES + ENTRY_BYTES * i;
    uint64_t off = align_up(cursor);
    bad = tz_afile_write(&af, zeros, (size_t)(off - cursor));
    XXH64_reset(h, 0);
    if (!sec->fill) {
      XXH64_update(h, sec->data, sec->size);
      if (!bad) bad = tz_afile_write(&af, sec->data, sec->size);
    } else {
      if (!chunk) chunk = tz_malloc(TZ_CKPT_CHUNK);
      for (uint64_t o = 0; o < sec->size && !bad; o += TZ_CKPT_CHUNK) {
        size_t n = sec->size - o < TZ_CKPT_CHUNK ? (size_t)(sec->size - o) : TZ_CKPT_CHUNK;
        sec->fill(sec->ctx, o, chunk, n);
        XXH64_update(h, chunk, n);
        bad = tz_afile_write(&af, chunk, n);
      }
    }
    memcpy(e, sec->name, NAME_FIELD);
    put_le64(e + 48, off);
    put_le64(e + 56, sec->size);
    put_le64(e + 64, XXH64_digest(h));
    cursor = off + sec->size;
  }
  XXH64_freeState(h);
  free(chunk);
  unsigned char trailer[8];
  put_le64(trailer, XXH64(head, table_end, 0));
  if (!bad) bad = tz_afile_write(&af, trailer, sizeof trailer);
  if (!bad && fseeko(af.f, 0, SEEK_SET) != 0) bad = tz_err("%s: write failed: %s", path, strerror(errno));
  if (!bad) bad = tz_afile_write(&af, head, table_end);
  free(head);
  if (bad) {
    char msg[TZ_ERR_MAX];
    snprintf(msg, sizeof msg, "%s", tz_errmsg()); /* "<path>: write failed: <errno text>" */
    tz_afile_abort(&af);
    return tz_err("%s", msg);
  }
  return tz_afile_commit(&af); /* on failure: temp removed, path untouched, message names path */
}

/* ---------------------------------------------------------------- reader */

typedef struct {
  char name[NAME_FIELD];
  uint64_t offset, size;
} rsection;

struct tz_ckpt {
  char *path;
  unsigned char *map;
  size_t map_len;
  rsection *s;
  size_t n;
};

void tz_ckpt_close(tz_ckpt *ck) {
  if (!ck) return;
  if (ck->map) munmap(ck->map, ck->map_len);
  free(ck->s);
  free(ck->path);
  free(ck);
}

/* Section checksums on threads: every section of at least HASH_THREAD_MIN bytes (a run's
 * params, adam_m, adam_v: 3 × 498 MB at GPT-2 124M) is hashed on its own thread, up to
 * HASH_THREADS_MAX at once, the rest on the calling thread; the results are compared in section
 * order afterwards, so the error names the same (first) bad section as a loop would. Where a
 * thread cannot start (the wasm build's pthread_create fails) the section is hashed inline.
 * One thread hashed the 1.5 GB in ~255 ms on the H200's host (2026-12-03, `sample`'s
 * checkpoint thread), about as long as the CUDA start-up it runs beside. */
#define HASH_THREAD_MIN (16u << 20)
#define HASH_THREADS_MAX 8
typedef struct {
  const unsigned char *p;
  size_t n;
  uint64_t h;
  pthread_t th;
  int started;
} hash_job;
static void *hash_thread(void *arg) {
  hash_job *j = arg;
  j->h = XXH64(j->p, j->n, 0);
  return NULL;
}
static void hash_sections(const unsigned char *m, const rsection *s, uint64_t n, uint64_t *out) {
  hash_job *jobs = tz_calloc(n ? n : 1, sizeof *jobs);
  int threads = 0;
  for (uint64_t i = 0; i < n; i++) {
    jobs[i].p = m + s[i].offset;
    jobs[i].n = (size_t)s[i].size;
    if (jobs[i].n >= HASH_THREAD_MIN && threads < HASH_THREADS_MAX &&
        pthread_create(&jobs[i].th, NULL, hash_thread, &jobs[i]) == 0) {
      jobs[i].started = 1;
      threads++;
    }
  }
  for (uint64_t i = 0; i < n; i++)
    if (!jobs[i].started) hash_thread(&jobs[i]);
  for (uint64_t i = 0; i < n; i++) {
    if (jobs[i].started) pthread_join(jobs[i].th, NULL);
    out[i] = jobs[i].h;
  }
  free(jobs);
}

static int validate(tz_ckpt *ck) {
  const char *path = ck->path;
  const unsigned char *m = ck->map;
  uint64_t fsize = ck->map_len;
  /* the magic first, over the bytes there are: a short text file is no truncated checkpoint */
  if (memcmp(m, TZ_CKPT_MAGIC, fsize < 8 ? (size_t)fsize : 8) != 0) {
    char head[128];
    size_t n = fsize < 64 ? (size_t)fsize : 64;
    int text = tz_utf8_describe_head(m, n, fsize > n, head, sizeof head);
    return tz_err("%s: not a tezgah checkpoint: %s%s%s, not the magic \"TZCKPT\\0\\0\"", path,
                  text ? "a text file (starts with " : "starts with ", head, text ? ")" : "");
  }
  if (fsize < HEADER_BYTES + 8)
    return tz_err("%s: truncated: %llu byte%s, smaller than the %d-byte minimum checkpoint", path,
                  (unsigned long long)fsize, tz_plural((long long)fsize), HEADER_BYTES + 8);
  uint32_t version = get_le32(m + 8);
  if (version != TZ_CKPT_VERSION) return tz_err("%s: version %u (expected %d)", path, version, TZ_CKPT_VERSION);
  uint64_t n = get_le32(m + 12);
  uint64_t table_end = HEADER_BYTES + ENTRY_BYTES * n;
  if (table_end + 8 > fsize)
    return tz_err("%s: truncated: %llu bytes, the table of %llu sections needs %llu", path,
                  (unsigned long long)fsize, (unsigned long long)n, (unsigned long long)(table_end + 8));
  /* The size before any checksum: the table checksum is the file's last 8 bytes, so a cut file
   * (a copy that stopped, a full disk) failed as a "table checksum mismatch". Where the table's
   * entries are in order (aligned, ascending, as tz_ckpt_commit writes them) they give the
   * file's size: the last section's end + the 8-byte trailer. A table whose entries are out of
   * order is damaged, not cut: its checksum says so below. */
  uint64_t want_size = table_end;
  int in_order = 1;
  for (uint64_t i = 0; i < n && in_order; i++) {
    const unsigned char *e = m + HEADER_BYTES + ENTRY_BYTES * i;
    uint64_t off = get_le64(e + 48), sz = get_le64(e + 56);
    in_order = off % TZ_CKPT_ALIGN == 0 && off >= want_size && sz <= UINT64_MAX - 8 - off;
    if (in_order) want_size = off + sz;
  }
  want_size += 8;
  if (in_order && want_size > fsize)
    return tz_err("%s: truncated: %llu bytes, expected %llu (the size its table of %llu sections gives; %llu "
                  "byte%s missing)", path, (unsigned long long)fsize, (unsigned long long)want_size,
                  (unsigned long long)n, (unsigned long long)(want_size - fsize), tz_plural((long long)(want_size - fsize)));
  if (in_order && want_size < fsize)
    return tz_err("%s: %llu bytes, expected %llu (the size its table of %llu sections gives): %llu byte%s of "
                  "trailing data", path, (unsigned long long)fsize, (unsigned long long)want_size,
                  (unsigned long long)n, (unsigned long long)(fsize - want_size), tz_plural((long long)(fsize - want_size)));
  uint64_t stored = get_le64(m + fsize - 8), computed = XXH64(m, (size_t)table_end, 0);
  if (stored != computed)
    return tz_err("%s: table checksum mismatch (stored 0x%016llx, computed 0x%016llx; file corrupt or truncated)",
                  path, (unsigned long long)stored, (unsigned long long)computed);
  uint64_t data_end = fsize - 8;
  ck->s = tz_calloc(n ? n : 1, sizeof *ck->s);
  ck->n = n;
  uint64_t prev_end = table_end;
  for (uint64_t i = 0; i < n; i++) {
    const unsigned char *e = m + HEADER_BYTES + ENTRY_BYTES * i;
    rsection *s = &ck->s[i];
    memcpy(s->name, e, NAME_FIELD);
    size_t len = strnlen(s->name, NAME_FIELD);
    if (len == 0 || len == NAME_FIELD)
      return tz_err("%s: section %llu has an invalid name (empty or not NUL-terminated)", path,
                    (unsigned long long)i);
    for (uint64_t j = 0; j < i; j++)
      if (strcmp(ck->s[j].name, s->name) == 0) return tz_err("%s: duplicate section '%s'", path, s->name);
    s->offset = get_le64(e + 48);
    s->size = get_le64(e + 56);
    if (s->offset % TZ_CKPT_ALIGN != 0 || s->offset < prev_end)
      return tz_err("%s: section '%s' offset %llu is misaligned or overlaps the previous data", path, s->name,
                    (unsigned long long)s->offset);
    if (s->offset > data_end || s->size > data_end - s->offset)
      return tz_err("%s: section '%s' ends at byte %llu, beyond the data end %llu (truncated?)", path, s->name,
                    (unsigned long long)(s->offset + s->size), (unsigned long long)data_end);
    for (uint64_t b = prev_end; b < s->offset; b++) /* padding is not checksummed: require zeros */
      if (m[b]) return tz_err("%s: nonzero padding byte at %llu before section '%s'", path, (unsigned long long)b, s->name);
    prev_end = s->offset + s->size;
  }
  if (prev_end != data_end)
    return tz_err("%s: file size %llu bytes (expected %llu; trailing garbage or truncation)", path,
                  (unsigned long long)fsize, (unsigned long long)(prev_end + 8));
  uint64_t *got = tz_calloc(n ? n : 1, sizeof *got);
  hash_sections(m, ck->s, n, got);
  for (uint64_t i = 0; i < n; i++) {
    const rsection *s = &ck->s[i];
    uint64_t want = get_le64(m + HEADER_BYTES + ENTRY_BYTES * i + 64);
    if (want != got[i]) {
      uint64_t g = got[i];
      free(got);
      return tz_err("%s: section '%s' checksum mismatch (stored 0x%016llx, computed 0x%016llx)", path, s->name,
                    (unsigned long long)want, (unsigned long long)g);
    }
  }
  free(got);
  return 0;
}

int tz_ckpt_open(const char *path, tz_ckpt **out) {
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return tz_err("%s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return tz_err("%s: not a regular file", path);
  }
  if (st.st_size == 0) {
    close(fd);
    return tz_err("%s: file is empty (not a checkpoint)", path);
  }
  tz_ckpt *ck = tz_calloc(1, sizeof *ck);
  ck->path = tz_strdup(path);
  void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  close(fd);
  if (m == MAP_FAILED) {
    tz_err("%s: cannot map: %s", path, strerror(e));
    tz_ckpt_close(ck);
    return -1;
  }
  ck->map = m;
  ck->map_len = (size_t)st.st_size;
  if (validate(ck)) {
    tz_ckpt_close(ck);
    return -1;
  }
  *out = ck;
  return 0;
}

static const rsection *find(const tz_ckpt *ck, const char *name) {
  for (size_t i = 0; i < ck->n; i++)
    if (strcmp(ck->s[i].name, name) == 0) return &ck->s[i];
  return NULL;
}

const void *tz_ckpt_get(const tz_ckpt *ck, const char *name, size_t *size) {
  const rsection *s = find(ck, name);
  if (size) *size = s ? (size_t)s->size : 0;
  return s ? ck->map + s->offset : NULL;
}

int tz_ckpt_require(const tz_ckpt *ck, const char *name, size_t expected_size, const void **data) {
  *data = NULL;
  const rsection *s = find(ck, name);
  if (!s) return tz_err("%s: missing section '%s'", ck->path, name);
  if (s->size != expected_size)
    return tz_err("%s: section '%s' has %llu bytes (expected %zu)", ck->path, name, (unsigned long long)s->size,
                  expected_size);
  *data = ck->map + s->offset;
  return 0;
}

size_t tz_ckpt_count(const tz_ckpt *ck) { return ck->n; }

const char *tz_ckpt_name(const tz_ckpt *ck, size_t i) { return i < ck->n ? ck->s[i].name : NULL; }
