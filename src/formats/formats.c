/* Format detection, file mapping and the order-table copier shared by llama2c.c and llmc.c. */
#include "formats/formats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/ckpt.h"
#include "core/error.h"
#include "core/utf8.h"
#include "formats/fmt_util.h"

int tz_fmt_map_open(const char *path, tz_fmt_map *m) {
  memset(m, 0, sizeof *m);
  int fd = open(path, O_RDONLY);
  if (fd < 0) return tz_err("%s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return tz_err("%s: not a regular file", path);
  }
  m->size = (size_t)st.st_size;
  if (m->size) {
    void *p = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      close(fd);
      return tz_err("%s: mmap failed: %s", path, strerror(errno));
    }
    m->data = p;
  }
  close(fd);
  return 0;
}

void tz_fmt_map_close(tz_fmt_map *m) {
  if (m->data) munmap((void *)m->data, m->size);
  memset(m, 0, sizeof *m);
}

static const tz_tensor_info *find(const tz_layout *lay, const char *pat, int l) {
  char nm[TZ_NAME_MAX];
  snprintf(nm, sizeof nm, pat, l);
  const tz_tensor_info *t = tz_layout_find(lay, nm);
  TZ_ASSERT(t != NULL);
  return t;
}

size_t tz_fmt_count(const tz_layout *lay, int L, const tz_fmt_entry *e, int n) {
  size_t total = 0;
  for (int i = 0; i < n; i++) {
    if (!e[i].name) {
      total += e[i].skip;
      continue;
    }
    for (int l = 0; l < (e[i].per_layer ? L : 1); l++) total += find(lay, e[i].name, l)->numel;
  }
  return total;
}

void tz_fmt_permute(const tz_layout *lay, int L, const tz_fmt_entry *e, int n, float *ours,
                    void *foreign, int bf16, int to_foreign) {
  size_t cur = 0;
  float *ff = foreign;
  uint16_t *fh = foreign;
  for (int i = 0; i < n; i++) {
    if (!e[i].name) {
      if (to_foreign) { /* never written by us; zero-fill for completeness */
        for (size_t j = 0; j < e[i].skip; j++) bf16 ? (void)(fh[cur + j] = 0) : (void)(ff[cur + j] = 0);
      }
      cur += e[i].skip;
      continue;
    }
    for (int l = 0; l < (e[i].per_layer ? L : 1); l++) {
      const tz_tensor_info *t = find(lay, e[i].name, l);
      float *o = ours + t->off;
      if (!bf16 && !to_foreign) memcpy(o, ff + cur, t->numel * sizeof(float));
      else if (!bf16) memcpy(ff + cur, o, t->numel * sizeof(float));
      else if (!to_foreign)
        for (size_t j = 0; j < t->numel; j++) o[j] = tz_bf16_to_f32(fh[cur + j]);
      else
        for (size_t j = 0; j < t->numel; j++) fh[cur + j] = tz_f32_to_bf16(o[j]);
      cur += t->numel;
    }
  }
}

int tz_format_detect(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return tz_err("%s: %s", path, strerror(errno));
  unsigned char b[8] = {0};
  size_t n = fread(b, 1, sizeof b, f);
  fclose(f);
  if (n == 0) return tz_err("%s: file is empty (not a checkpoint)", path);
  /* a (possibly truncated) tezgah magic: the container reader gives the precise error */
  if (!memcmp(b, TZ_CKPT_MAGIC, n < 8 ? n : 8)) return TZ_FMT_TEZGAH;
  if (n >= 4) {
    uint32_t m;
    memcpy(&m, b, 4);
    if (m == TZ_LLMC_MAGIC) return TZ_FMT_LLMC;
    if (m == TZ_LLAMA2C_MAGIC) return TZ_FMT_LLAMA2C;
  }
  return TZ_FMT_UNKNOWN;
}

const char *tz_format_name(int fmt) {
  switch (fmt) {
    case TZ_FMT_TEZGAH: return "tezgah";
    case TZ_FMT_LLAMA2C: return "llama2c";
    case TZ_FMT_LLMC: return "llmc";
    case TZ_FMT_HF: return "Hugging Face";
    default: return "unknown";
  }
}

/* A file that matches no magic is read as a legacy llama2.c checkpoint, the one format
 * without a magic. When that fails too the file may be anything, and the legacy reader's
 * complaint alone would mislead ("truncated llama2.c checkpoint" of a short text file): say
 * what the file is not, from its first bytes. A text file (a corpus, a config or a tokenizer
 * given as the model) gets its start quoted and nothing about llama2.c's fields (no text
 * starts with a valid legacy header: its first int32, dim, would be negative or at least
 * 0x09000000, where the reader takes up to 2^16); anything else (an llm.c file with a
 * corrupted magic reads as dim = the magic) gets its first int32, the magics checked and the
 * legacy reader's complaint. A safetensors file (a u64 length, then its JSON header) is named
 * as one: tezgah reads it from its Hugging Face directory. */
static int no_format(const char *path) {
  char legacy[TZ_ERR_MAX];
  const char *e = tz_errmsg();
  size_t pl = strlen(path);
  if (!strncmp(e, path, pl) && !strncmp(e + pl, ": ", 2)) e += pl + 2;
  snprintf(legacy, sizeof legacy, "%s", e);
  unsigned char b[65] = {0};
  FILE *f = fopen(path, "rb");
  size_t n = f ? fread(b, 1, sizeof b, f) : 0;
  if (f) fclose(f);
  int more = n == sizeof b;
  if (more) n--;
  uint64_t hlen;
  memcpy(&hlen, b, 8);
  if (n >= 9 && b[8] == '{' && hlen >= 2 && hlen < ((uint64_t)1 << 30)) /* safetensors: u64 length, JSON header */
    return tz_err("%s: a safetensors file, not a checkpoint: give the Hugging Face directory that holds it with "
                  "its config.json", path);
  char head[128];
  if (tz_utf8_describe_head(b, n, more, head, sizeof head))
    return tz_err("%s: not a checkpoint: a text file (starts with %s), not a tezgah (\"TZCKPT\"), llm.c (magic %d) or "
                  "llama2.c model", path, head, TZ_LLMC_MAGIC);
  if (n < 4)
    return tz_err("%s: not a checkpoint: %zu byte%s, shorter than any checkpoint's header", path, n, n == 1 ? "" : "s");
  int32_t first;
  memcpy(&first, b, 4);
  return tz_err("%s: not a checkpoint: its first int32 %d (0x%08x) is no tezgah (\"TZCKPT\"), llm.c (%d) or llama2.c "
                "version 1 (0x%08x) magic, and read as a legacy llama2.c file (no magic): %s",
                path, first, (uint32_t)first, TZ_LLMC_MAGIC, TZ_LLAMA2C_MAGIC, legacy);
}

int tz_foreign_load(const char *path, const char *from, tz_config *cfg, float **params) {
  if (from && !strcmp(from, "llmc")) return tz_llmc_load(path, cfg, params);
  if (from && !strcmp(from, "llama2c")) return tz_llama2c_load(path, cfg, params);
  if ((from && !strcmp(from, "hf")) || (!from && tz_hf_is_dir(path))) return tz_hf_load(path, cfg, params, NULL);
  if (from) return tz_err("--from: '%s' is not llama2c, llmc or hf", from);
  int f = tz_format_detect(path);
  if (f < 0) return -1;
  if (f == TZ_FMT_TEZGAH) return tz_err("%s: a tezgah checkpoint, not an llm.c or llama2.c one", path);
  if (f == TZ_FMT_LLMC) return tz_llmc_load(path, cfg, params);
  if (f == TZ_FMT_LLAMA2C) return tz_llama2c_load(path, cfg, params); /* version 1 */
  return tz_llama2c_load(path, cfg, params) ? no_format(path) : 0;
}
