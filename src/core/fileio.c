#include "core/fileio.h"

#include <errno.h>
#include <limits.h>
#include <glob.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

/* glob(3)'s first directory error (GLOB_ERR stops there): a missing directory in a pattern
 * (nodir/x*.txt) is no match; any other error (EACCES) is reported with the directory. */
static _Thread_local int glob_errno;
static _Thread_local char glob_errpath[512];
static int glob_error(const char *path, int err) {
  glob_errno = err;
  snprintf(glob_errpath, sizeof glob_errpath, "%s", path);
  return 1;
}

/* s[0..len) without the spaces around it, malloc'ed */
static char *trimmed(const char *s, size_t len) {
  while (len && *s == ' ') s++, len--;
  while (len && s[len - 1] == ' ') len--;
  char *t = tz_malloc(len + 1);
  memcpy(t, s, len);
  t[len] = 0;
  return t;
}

/* Whether `item` exists as given (a name may hold glob characters: "a[1].txt" is a file) */
static int exists_literally(const char *item) { return access(item, F_OK) == 0; }

int tz_names_something(const char *item) {
  if (exists_literally(item)) return 1;
  if (!strpbrk(item, "*?[")) return 0;
  glob_t g = {0};
  int hit = glob(item, 0, NULL, &g) == 0 && g.gl_pathc > 0;
  globfree(&g);
  return hit;
}

int tz_split_paths(const char *list, char ***out, size_t *n) {
  /* the pieces between commas: piece i is list[at[i] .. at[i + 1] - 1) */
  size_t np = 1, cap = 0;
  for (const char *p = list; *p; p++) np += *p == ',';
  size_t *at = tz_malloc((np + 1) * sizeof *at), k = 1;
  at[0] = 0;
  for (size_t i = 0; list[i]; i++)
    if (list[i] == ',') at[k++] = i + 1;
  at[np] = strlen(list) + 1;
  char **v = NULL;
  *n = 0;
  int empty = 0;
  for (size_t i = 0, j; i < np; i = j + 1) {
    /* a comma separates, unless piece i alone names nothing and a run of pieces i..j, joined
     * again, names something: then the run is one entry (the longest such run). The split is
     * tried first so that a list whose pieces are there reads as those files even where a name
     * with their commas exists too (a repeated --data a --data b.txt is "a,b.txt", never the
     * file a,b.txt), and so that a list of existing paths costs one check an entry. A run
     * longer than PATH_MAX names nothing, which bounds the search for a missing piece. */
    char *item = trimmed(list + at[i], at[i + 1] - 1 - at[i]);
    j = i;
    if (*item && !tz_names_something(item)) {
      for (size_t jj = i + 1; jj < np && at[jj + 1] - 1 - at[i] <= PATH_MAX; jj++) {
        char *run = trimmed(list + at[i], at[jj + 1] - 1 - at[i]);
        if (tz_names_something(run)) {
          free(item);
          item = run, j = jj;
        } else {
          free(run);
        }
      }
    }
    if (!*item) { /* left out, and counted: the command line refuses it (tz_arg_list_add) */
      free(item);
      empty++;
      continue;
    }
    if (*n == cap) v = tz_realloc(v, (cap = cap ? 2 * cap : 8) * sizeof *v);
    v[(*n)++] = item;
  }
  free(at);
  *out = v;
  return empty;
}

int tz_expand_paths(const char *list, char ***out, size_t *n) {
  *out = NULL;
  *n = 0;
  size_t cap = 0, ni;
  char **v = NULL, **items;
  int rc = 0;
  tz_split_paths(list, &items, &ni);
  for (size_t it = 0; it < ni && !rc; it++) {
    const char *item = items[it];
    glob_t g = {0};
    glob_errno = 0;
    /* a name that exists as given is that file, glob characters and all: "a[1].txt" was read
     * as the pattern a1.txt (no match, or another file); only a name that is not there is
     * expanded */
    int plain = strpbrk(item, "*?[") == NULL || exists_literally(item);
    int r = plain ? 0 : glob(item, GLOB_ERR, glob_error, &g);
    if (r == GLOB_ABORTED && (glob_errno == ENOENT || glob_errno == ENOTDIR)) r = GLOB_NOMATCH;
    if (r == GLOB_NOMATCH) rc = tz_err("%s: no files match", item);
    else if (r == GLOB_ABORTED && glob_errno)
      rc = tz_err("%s: cannot read directory %s: %s", item, glob_errpath, strerror(glob_errno));
    else if (r) rc = tz_err("%s: cannot expand pattern (%s)", item, r == GLOB_NOSPACE ? "out of memory" : "read error");
    for (size_t i = 0; !rc && i < (plain ? 1 : g.gl_pathc); i++) {
      if (*n == cap) v = tz_realloc(v, (cap = cap ? 2 * cap : 8) * sizeof *v);
      v[(*n)++] = tz_strdup(plain ? item : g.gl_pathv[i]);
    }
    if (!plain) globfree(&g);
  }
  tz_paths_free(items, ni);
  if (!rc && *n == 0) rc = tz_err("no files given (empty list '%s')", list);
  if (rc) {
    tz_paths_free(v, *n);
    *n = 0;
    return -1;
  }
  *out = v;
  return 0;
}

int tz_same_file(const char *a, const char *b) {
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Notes for files a list reads more than once. Each path is stat'ed once and the pairs compared
 * in memory (a glob of thousands of shards: no stat per pair). */
char *tz_list_repeats(const char *lead, const char *flag, const char *list) {
  char **p;
  size_t n;
  if (!list || tz_expand_paths(list, &p, &n)) {
    tz_err_clear(); /* a list that does not expand is its reader's error */
    return NULL;
  }
  struct stat *st = tz_malloc((n + 1) * sizeof *st);
  char *ok = tz_malloc(n + 1);
  for (size_t i = 0; i < n; i++) ok[i] = stat(p[i], &st[i]) == 0;
#define SAME(i, j) (ok[i] && ok[j] && st[i].st_dev == st[j].st_dev && st[i].st_ino == st[j].st_ino)
  char *notes = NULL;
  size_t len = 0;
  for (size_t i = 0; i < n; i++) {
    size_t times = 1, j = 0;
    while (j < i && !SAME(i, j)) j++;
    if (!ok[i] || j < i) continue; /* missing (the reader's error), or said at its first listing */
    for (j = i + 1; j < n; j++) times += SAME(i, j);
    if (times < 2) continue;
    const char *fmt = "%snote: %s: %s is listed %zu times and is read %zu times (list it once to read it once)\n";
    int k = snprintf(NULL, 0, fmt, lead, flag, p[i], times, times);
    notes = tz_realloc(notes, len + (size_t)k + 1);
    len += (size_t)snprintf(notes + len, (size_t)k + 1, fmt, lead, flag, p[i], times, times);
  }
#undef SAME
  free(st);
  free(ok);
  tz_paths_free(p, n);
  return notes;
}

/* out against one input file: the refusal names both as given */
static int out_is(const char *out_flag, const char *out, const char *in_what, const char *in) {
  if (!tz_same_file(out, in)) return 0;
  return tz_err("%s: '%s' is the same file as %s '%s', which this command reads: give another path (writing it "
                "would replace the input)", out_flag, out, in_what, in);
}

int tz_out_not_input(const char *out_flag, const char *out, const char *in_what, const char *in,
                     const char *const *dir_files) {
  struct stat st;
  /* a missing output replaces nothing; stdin ("-") is no file */
  if (!out || !in || !strcmp(in, "-") || stat(out, &st) != 0) return 0;
  if (out_is(out_flag, out, in_what, in)) return -1;
  if (dir_files && stat(in, &st) == 0 && S_ISDIR(st.st_mode))
    for (const char *const *f = dir_files; *f; f++) {
      char *p = tz_path_join(in, *f);
      int rc = out_is(out_flag, out, in_what, p);
      free(p);
      if (rc) return -1;
    }
  return 0;
}

int tz_out_path(const char *flag, const char *out, const char *what, int is_dir) {
  struct stat st;
  if (!out) return 0;
  if (!strcmp(out, "-"))
    return what ? tz_err("%s: '-' (stdout) is not taken for %s; give a %s name", flag, what, is_dir ? "directory" : "file")
                : 0;
  size_t n = strlen(out);
  int dir = stat(out, &st) == 0 && S_ISDIR(st.st_mode);
  if (!is_dir && (dir || (n && out[n - 1] == '/')))
    return tz_err("%s: '%s' %s a directory; give a file name", flag, out, dir ? "is" : "names");
  return 0;
}

int tz_out_not_in_list(const char *out_flag, const char *out, const char *in_what, const char *list) {
  struct stat st;
  if (!out || !list || stat(out, &st) != 0) return 0;
  char **p;
  size_t n;
  int rc = 0;
  /* a list that does not expand is its reader's error (said when the list is read) */
  if (tz_expand_paths(list, &p, &n)) return 0;
  for (size_t i = 0; i < n && !rc; i++) rc = out_is(out_flag, out, in_what, p[i]);
  tz_paths_free(p, n);
  return rc ? -1 : 0;
}

void tz_paths_free(char **paths, size_t n) {
  for (size_t i = 0; i < n; i++) free(paths[i]);
  free(paths);
}

int tz_read_file(const char *path, char **data, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return tz_err("%s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return tz_err("%s: not a regular file", path);
  }
  size_t n = (size_t)st.st_size;
  char *buf = tz_malloc(n + 1);
  size_t got = fread(buf, 1, n, f);
  int bad = ferror(f);
  fclose(f);
  if (bad || got != n) {
    free(buf);
    return tz_err("%s: read failed (%zu of %zu bytes)", path, got, n);
  }
  buf[n] = 0;
  *data = buf;
  *len = n;
  return 0;
}

int tz_afile_open(tz_afile *af, const char *path) {
  memset(af, 0, sizeof *af);
  af->path = tz_strdup(path);
  size_t n = strlen(path) + 32;
  af->tmp = tz_malloc(n);
  snprintf(af->tmp, n, "%s.tmp.%ld", path, (long)getpid());
  af->f = fopen(af->tmp, "wb");
  if (!af->f) {
    int e = errno;
    free(af->path);
    free(af->tmp);
    memset(af, 0, sizeof *af);
    return tz_err("%s: cannot write: %s", path, strerror(e));
  }
  return 0;
}

int tz_afile_write(tz_afile *af, const void *data, size_t n) {
  if (af->failed) return -1;
  if (n && fwrite(data, 1, n, af->f) != n) {
    af->failed = errno ? errno : EIO;
    return tz_err("%s: write failed: %s", af->path, strerror(af->failed));
  }
  return 0;
}

static void fsync_dir(const char *path) {
  char *copy = tz_strdup(path);
  int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  free(copy);
}

int tz_afile_commit(tz_afile *af) {
  if (!af->f) return tz_err("%s: file was not open", af->path ? af->path : "?");
  int e = af->failed;
  if (!e && fflush(af->f) != 0) e = errno;
  if (!e && fsync(fileno(af->f)) != 0) e = errno;
  if (fclose(af->f) != 0 && !e) e = errno;
  af->f = NULL;
  if (!e && rename(af->tmp, af->path) != 0) e = errno;
  if (e) {
    unlink(af->tmp);
    tz_err("%s: write failed: %s", af->path, strerror(e));
  } else {
    fsync_dir(af->path);
  }
  free(af->tmp);
  free(af->path);
  af->tmp = af->path = NULL;
  return e ? -1 : 0;
}

void tz_afile_abort(tz_afile *af) {
  if (af->f) fclose(af->f);
  if (af->tmp) unlink(af->tmp);
  free(af->tmp);
  free(af->path);
  memset(af, 0, sizeof *af);
}

int tz_tmp_name_orphaned(const char *name) {
  const char *t = strstr(name, ".tmp."), *q;
  if (!t || t == name) return 0;
  while ((q = strstr(t + 1, ".tmp."))) t = q; /* the last ".tmp." */
  const char *digits = t + 5;
  char *end;
  errno = 0;
  long pid = strtol(digits, &end, 10);
  if (end == digits || *end || pid <= 0 || errno) return 0;
#ifdef __wasi__
  /* WASI has no kill() to ask whether that process lives (the wasm build, scripts/build_wasm.sh):
   * another process may be writing the file, so it is never taken for an orphan. */
  return 0;
#else
  return !(pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH);
#endif
}

int tz_afile_sweep(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int removed = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (!tz_tmp_name_orphaned(e->d_name)) continue;
    char *path = tz_path_join(dir, e->d_name);
    if (unlink(path) == 0) removed++;
    free(path);
  }
  closedir(d);
  return removed;
}

int tz_write_file_atomic(const char *path, const void *data, size_t n) {
  tz_afile af;
  if (tz_afile_open(&af, path)) return -1;
  if (tz_afile_write(&af, data, n)) {
    int e = af.failed; /* keep the reason: "No space left on device", "File too large" */
    tz_afile_abort(&af);
    return tz_err("%s: write failed: %s", path, strerror(e));
  }
  return tz_afile_commit(&af);
}

int tz_mkdirs_track(const char *path, char **top) {
  if (top) *top = NULL;
  char *p = tz_strdup(path);
  for (char *s = p + 1;; s++) {
    if (*s == '/' || *s == 0) {
      char c = *s;
      *s = 0;
      if (mkdir(p, 0777) == 0) {
        if (top && !*top) *top = tz_strdup(p);
      } else if (errno != EEXIST) {
        int e = errno;
        tz_err("%s: cannot create directory: %s", p, strerror(e));
        if (top && *top) { /* undo what this call created: p's parent and up */
          char *slash = strrchr(p, '/');
          if (slash) *slash = 0;
          tz_rmdirs_upto(p, *top);
          free(*top);
          *top = NULL;
        }
        free(p);
        return -1;
      }
      *s = c;
      if (!c) break;
    }
  }
  struct stat st;
  int ok = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
  free(p);
  return ok ? 0 : tz_err("%s: not a directory", path);
}

int tz_mkdirs(const char *path) { return tz_mkdirs_track(path, NULL); }

/* Cut trailing slashes from p in place ("a/b//" -> "a/b"; "/" stays). */
static void strip_slashes(char *p) {
  size_t n = strlen(p);
  while (n > 1 && p[n - 1] == '/') p[--n] = 0;
}

void tz_rmdirs_upto(const char *path, const char *top) {
  if (!top) return;
  char *p = tz_strdup(path), *t = tz_strdup(top);
  strip_slashes(p);
  strip_slashes(t);
  /* top is a prefix of path as tz_mkdirs_track cut it; never walk above it */
  size_t tn = strlen(t);
  while (strlen(p) >= tn && !strncmp(p, t, tn) && rmdir(p) == 0 && strcmp(p, t)) {
    char *slash = strrchr(p, '/');
    if (!slash || slash == p) break;
    *slash = 0;
    strip_slashes(p);
  }
  free(p);
  free(t);
}

int tz_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

char *tz_path_join(const char *a, const char *b) {
  /* "run/" (a shell's completion) joins as "run/x", not "run//x": the path is printed in
   * messages and recorded in checkpoints. "/" stays the root. */
  size_t la = strlen(a);
  while (la > 1 && a[la - 1] == '/') la--;
  const char *sep = la && a[la - 1] == '/' ? "" : "/";
  size_t n = la + strlen(b) + 2;
  char *p = tz_malloc(n);
  snprintf(p, n, "%.*s%s%s", (int)la, a, sep, b);
  return p;
}
