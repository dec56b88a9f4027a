/* A training run's checkpoints on disk (the checkpoints phase of tz_train, src/train/train.c):
 * written by rank 0 after gathering ZeRO-1 moment shards, kept as checkpoint-<step>.tzc under
 * --keep N (hard links, rotated atomically), the run's tokenizer file beside the first one of a
 * session, and runs/latest pointed at the run. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fileio.h"
#include "train/train_ckpt.h"

/* Point runs/latest at the run directory (a symlink replaced atomically). A link that cannot be
 * made (the parent read-only, `latest` a directory) is said in one warning and training goes on:
 * the link only helps `sample` with no model find the run (it failed without a word: the
 * fresh-clone walkthrough, 2026-12-05). `tty`: a progress line may be open on the terminal; the
 * warning clears it first (the next step redraws it). */
static void mark_latest(const char *run_dir, int tty) {
  char *copy = tz_strdup(run_dir), *copy2 = tz_strdup(run_dir);
  char *parent = dirname(copy), *base = basename(copy2);
  char *link = tz_path_join(parent, "latest"), *tmp = tz_path_join(parent, ".latest.tmp");
  if (strcmp(base, "latest") != 0) {
    unlink(tmp);
    const char *what = NULL, *where = "";
    int e = 0;
    if (symlink(base, tmp) != 0) e = errno, what = "cannot write in ", where = parent;
    else if (rename(tmp, link) != 0) e = errno, what = "cannot replace it", unlink(tmp);
    if (what)
      fprintf(stderr, "%stezgah: warning: %s was not updated to point at %s: %s%s: %s (training goes on; name the "
                      "run directory instead, e.g. tezgah sample %s)\n", tty ? "\r\033[K" : "", link, base, what,
              where, strerror(e), run_dir);
  }
  free(link);
  free(tmp);
  free(copy);
  free(copy2);
}

/* fsync a directory (renames and unlinks in it durable). Best effort. */
static void sync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

/* <dir>/<name> becomes another name of the file at `src` (a hard link: no copy), atomically:
 * a link under a temporary name ("<name>.tmp.<pid>", swept after a crash) renamed over it. */
int tz_train_link_as(const char *src, const char *dir, const char *name) {
  char *dst = tz_path_join(dir, name);
  size_t n = strlen(dst) + 32;
  char *tmp = tz_malloc(n);
  snprintf(tmp, n, "%s.tmp.%ld", dst, (long)getpid());
  unlink(tmp);
  int rc = 0;
  if (link(src, tmp) != 0 || rename(tmp, dst) != 0) {
    rc = tz_err("%s: cannot keep the checkpoint: %s", dst, strerror(errno));
    unlink(tmp);
  } else
    unlink(tmp); /* dst already a link to src: rename() of two links to one file does nothing */
  sync_dir(dir);
  free(tmp);
  free(dst);
  return rc;
}

static int cmp_int_desc(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x < y) - (x > y);
}

/* The steps of run_dir's numbered checkpoints (checkpoint-<8 digits>.tzc), highest first, in a
 * malloc'ed array (NULL when none or the directory cannot be read); their count in *n. */
static int *numbered_steps(const char *run_dir, int *n) {
  *n = 0;
  DIR *d = opendir(run_dir);
  if (!d) return NULL;
  int *steps = NULL, cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    int s, len = 0;
    if (sscanf(e->d_name, "checkpoint-%8d.tzc%n", &s, &len) == 1 && len == (int)strlen(e->d_name) && len == 23) {
      if (*n == cap) steps = tz_realloc(steps, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *steps);
      steps[(*n)++] = s;
    }
  }
  closedir(d);
  if (*n) qsort(steps, (size_t)*n, sizeof *steps, cmp_int_desc);
  return steps;
}

/* --keep N: checkpoint.tzc (just written, at `step`) is also kept as checkpoint-<step>.tzc;
 * of those, the N with the highest steps stay. A crash between the link and the removals
 * leaves one more file, removed at the next rotation; never a partial checkpoint (each name
 * is a complete file or absent). */
int tz_train_rotate(const char *run_dir, const char *ckpt_path, int step, int keep) {
  if (keep < 1) return 0;
  char name[64];
  if (keep == 1) keep = 0; /* --keep 1: checkpoint.tzc alone (a run resumed with a lower --keep drops the rest) */
  snprintf(name, sizeof name, "checkpoint-%08d.tzc", step);
  if (keep > 0 && tz_train_link_as(ckpt_path, run_dir, name)) return -1;
  int n, *steps = numbered_steps(run_dir, &n);
  for (int i = keep; i < n; i++) {
    snprintf(name, sizeof name, "checkpoint-%08d.tzc", steps[i]);
    char *p = tz_path_join(run_dir, name);
    unlink(p);
    free(p);
  }
  if (n > keep) sync_dir(run_dir);
  free(steps);
  return 0;
}

int tz_train_rotation_pending(const char *run_dir, const char *ckpt_path, int step, int keep) {
  if (keep < 1) return 0;
  char name[64];
  snprintf(name, sizeof name, "checkpoint-%08d.tzc", step);
  if (keep > 1 && !tz_train_is_link_of(run_dir, name, ckpt_path)) return 1;
  int n;
  free(numbered_steps(run_dir, &n));
  return n > (keep == 1 ? 0 : keep); /* more numbered names than the rotation keeps (--keep 1: none) */
}

int tz_train_is_link_of(const char *dir, const char *name, const char *path) {
  char *p = tz_path_join(dir, name);
  struct stat a, b;
  int same = stat(p, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
  free(p);
  return same;
}

/* Write the checkpoint (rank 0 alone writes; collective for data-parallel runs: call it on
 * every rank). With ZeRO-1 the moment shards are gathered first, through the gradient buffer
 * (free between steps): m into it and then to a host copy on rank 0, then v into it. The file
 * is then an ordinary single-process checkpoint. The others are not told whether the write
 * worked: callers follow with tz_comm_agree. */
int tz_train_save(const char *path, tz_model *m, const tz_tokenizer *tok, tz_train_state *st, tz_loader *loader,
                tz_comm *comm) {
  tz_run_src am = {m->m, NULL}, av = {m->v, NULL};
  float *host_m = NULL;
  if (m->zero) {
    tz_backend *be = m->be;
    size_t S = m->shard_n, total = m->lay.total;
    tz_slice g = {m->grads, 0}, mine = tz_f32(g, (size_t)comm->rank * S);
    be->copy(be, mine, (tz_slice){m->m, 0}, S * sizeof(float));
    comm->all_gather(comm, g, S);
    if (comm->rank == 0) {
      host_m = tz_malloc(total * sizeof *host_m);
      be->download(be, host_m, g, total * sizeof *host_m);
    }
    be->copy(be, mine, (tz_slice){m->v, 0}, S * sizeof(float));
    comm->all_gather(comm, g, S);
    be->sync(be);
    am = (tz_run_src){NULL, host_m};
    av = (tz_run_src){m->grads, NULL};
  }
  int rc = 0;
  if (comm->rank == 0) {
    st->loader_pos = tz_loader_get_pos(loader);
    cJSON *j = tz_train_state_to_json(st);
    rc = tz_run_save_moments(path, m, tok, j, am, av);
    cJSON_Delete(j);
  }
  free(host_m);
  return rc;
}

/* Checkpoint, then (once per session) write the tokenizer file and point runs/latest here: `tezgah sample` alone must find a run
 * that has a checkpoint. */
int tz_train_save_and_mark(const char *path, const char *run_dir, int *marked, tz_model *m,
                         const tz_tokenizer *tok, tz_train_state *st, tz_loader *loader, tz_comm *comm) {
  int rc = tz_train_save(path, m, tok, st, loader, comm);
  if (comm->rank > 0 || rc) return rc;
  if (tz_train_rotate(run_dir, path, st->step, st->opts->keep)) return -1;
  if (!*marked) {
    /* the run's tokenizer beside the checkpoint, in its native format (encode/decode
     * --tokenizer RUN_DIR, Hugging Face tools read tokenizer.json) */
    if (tz_run_save_tokenizer(run_dir, tok)) return -1;
    mark_latest(run_dir, isatty(2) && !st->opts->quiet);
  }
  *marked = 1;
  return 0;
}
