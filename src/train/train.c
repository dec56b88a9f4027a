/* The training loop (one for every backend):
 *   prepare data (cached shards) → build or resume the model → for each step:
 *   [validate] → zero grads → grad_accum × (forward, loss, backward) → ‖g‖ → skip if not
 *   finite → clip → AdamW → metrics.jsonl + progress line → [checkpoint]
 *   → final validation, checkpoint and a short sample.
 * Deterministic for a given seed and thread count; a resumed run continues the exact loss
 * sequence of an uninterrupted one (all state is in the checkpoint, see run_ckpt.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <inttypes.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint/run_ckpt.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/progress.h"
#include "data/dataloader.h"
#include "data/metrics.h"
#include "dist/comm.h"
#include "model/config_json.h"
#include "train/data_prep.h"
#include "train/schedule.h"
#include "train/train_state.h"
#include "tezgah.h"

void tz_train_opts_default(tz_train_opts *o) {
  memset(o, 0, sizeof *o);
  o->data = "data/kjv.txt";
  o->vocab_size = 2048;
  o->val_fraction = 0.05f;
  o->backend = "cpu";
  o->seed = 1337;
  o->model.arch = TZ_ARCH_LLAMA;
  o->model.n_layer = 4;
  o->model.n_head = 4;
  o->model.d_model = 128;
  o->model.tied = 1;
  o->B = 16;
  o->T = 128;
  o->grad_accum = 1;
  o->steps = 600;
  o->warmup = -1; /* 5% of steps */
  o->lr = 3e-3f;
  o->min_lr_frac = 0.1f;
  o->beta1 = 0.9f;
  o->beta2 = 0.95f;
  o->eps = 1e-8f;
  o->weight_decay = 0.1f;
  o->grad_clip = 1.0f;
  o->val_every = 100;
  o->val_batches = 8;
  o->ckpt_every = 200;
  o->log_every = 10;
  o->sample_tokens = 200;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Mean loss over up to `batches` validation batches from the start of the val split. Data
 * parallel: each rank evaluates its rows [row0, row0 + nrows) of every batch and the means
 * of the ranks are averaged (every rank has as many rows: the mean of the whole batches). */
static double validate(tz_model *m, tz_loader *val, int batches, int32_t *in, int32_t *tg, tz_comm *comm, int row0,
                       int nrows) {
  tz_loader_reset(val);
  uint64_t avail = tz_loader_batches_per_epoch(val);
  int n = batches < (int)avail ? batches : (int)avail;
  if (n < 1) n = 1;
  double sum = 0;
  for (int i = 0; i < n; i++) {
    if (tz_loader_next_rows(val, row0, nrows, in, tg)) {
      sum = NAN; /* still join the ranks' sum below */
      break;
    }
    sum += tz_model_eval_loss(m, in, tg);
  }
  double mean = sum / n;
  if (comm->world > 1) {
    tz_comm_sum_f64(comm, &mean, 1);
    mean /= comm->world;
  }
  return mean;
}

#define PROGRESS_COLS TZ_PROGRESS_COLS
#define RECENT 16        /* tok/s and the ETA come from the last RECENT steps' times */

/* The progress line, at most PROGRESS_COLS characters:
 *   " 120/600 [#####.........] loss 3.2145 | 12.3k tok/s | ETA 1m23s | val 3.4121@100"
 * tok/s is over the recent steps (validation excluded); the ETA adds the remaining
 * validations at the last one's duration; val is the last validation loss and its step. */
static void progress_line(char *out, size_t cap, int step, int steps, double loss, double tok_s, double eta_s,
                          double val, int val_step) {
  char right[160], rate[32], eta[32], vs[48] = "";
  tz_fmt_rate(rate, sizeof rate, tok_s);
  tz_fmt_eta(eta, sizeof eta, eta_s);
  if (isfinite(val)) snprintf(vs, sizeof vs, " | val %.4f@%d", val, val_step);
  snprintf(right, sizeof right, " loss %.4f | %s tok/s | ETA %s%s", loss, rate, eta, vs);
  int w = (int)log10(steps) + 1;
  char left[48];
  snprintf(left, sizeof left, "%*d/%d", w & 15, step, steps);
  int bar = PROGRESS_COLS - (int)strlen(left) - (int)strlen(right) - 3;
  if (bar > 30) bar = 30;
  char b[40] = "";
  if (bar >= 3) { /* 3: even a 7-digit step count with a val loss keeps a (short) bar */
    int fill = (int)((double)bar * step / steps);
    b[0] = ' ', b[1] = '[';
    for (int i = 0; i < bar; i++) b[2 + i] = i < fill ? '#' : '.';
    b[2 + bar] = ']', b[3 + bar] = 0;
  }
  snprintf(out, cap, "%s%s%s", left, b, right);
  if (strlen(out) > PROGRESS_COLS) out[PROGRESS_COLS] = 0;
}

/* Point runs/latest at the run directory (a symlink replaced atomically). */
static void mark_latest(const char *run_dir) {
  char *copy = tz_strdup(run_dir), *copy2 = tz_strdup(run_dir);
  char *parent = dirname(copy), *base = basename(copy2);
  char *link = tz_path_join(parent, "latest"), *tmp = tz_path_join(parent, ".latest.tmp");
  if (strcmp(base, "latest") != 0) {
    unlink(tmp);
    if (symlink(base, tmp) == 0 && rename(tmp, link) != 0) unlink(tmp);
  }
  free(link);
  free(tmp);
  free(copy);
  free(copy2);
}

/* On resume, drop metrics lines of steps after the checkpoint (they will be re-run), so
 * metrics.jsonl reads like an uninterrupted run's. Lines that do not parse are dropped too. */
static int metrics_trim(const char *path, int step) {
  if (step == 0 || !tz_exists(path)) return 0;
  char *data;
  size_t len;
  if (tz_read_file(path, &data, &len)) return -1;
  char *keep = tz_malloc(len + 1);
  size_t n = 0;
  for (char *line = data, *end; line < data + len; line = end + 1) {
    end = memchr(line, '\n', (size_t)(data + len - line));
    if (!end) break; /* a partial last line from a crash */
    cJSON *j = cJSON_ParseWithLength(line, (size_t)(end - line));
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "step");
    const cJSON *fin = cJSON_GetObjectItemCaseSensitive(j, "final");
    if (cJSON_IsNumber(s) && s->valuedouble <= step && !cJSON_IsTrue(fin)) {
      memcpy(keep + n, line, (size_t)(end - line + 1));
      n += (size_t)(end - line + 1);
    }
    cJSON_Delete(j);
  }
  int rc = tz_write_file_atomic(path, keep, n);
  free(keep);
  free(data);
  return rc;
}

/* Parse "STEP[,STEP...]" (1-based step numbers) for the --debug-inject-* flags into a
 * malloc'ed array. NULL or "" gives none. */
static int parse_steps(const char *flag, const char *s, int **out, int *n) {
  *out = NULL;
  *n = 0;
  if (!s || !*s) return 0;
  int cap = 1;
  for (const char *p = s; *p; p++) cap += *p == ',';
  *out = tz_malloc((size_t)cap * sizeof **out);
  for (const char *p = s;;) {
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end == p || errno || v < 1 || v > (1L << 30) || (*end && *end != ','))
      return tz_err("%s: '%s' is not a list of step numbers >= 1 (e.g. 3,7)", flag, s);
    (*out)[(*n)++] = (int)v;
    if (!*end) return 0;
    p = end + 1;
  }
}

static int has_step(const int *list, int n, int step) {
  for (int i = 0; i < n; i++)
    if (list[i] == step) return 1;
  return 0;
}

/* A JSON number the way cJSON prints one (the shortest of %.15g / %.17g that reads back
 * exactly; null for NaN and infinities), without allocating. */
static int put_num(char *buf, size_t cap, const char *key, double v) {
  char num[32];
  if (!isfinite(v)) snprintf(num, sizeof num, "null");
  else if (v == (double)(long long)v && fabs(v) < 1e15) snprintf(num, sizeof num, "%lld", (long long)v);
  else {
    snprintf(num, sizeof num, "%1.15g", v);
    if (strtod(num, NULL) != v) snprintf(num, sizeof num, "%1.17g", v);
  }
  return snprintf(buf, cap, ",\"%s\":%s", key, num);
}

/* Peak resident set size of this process in MiB (Linux reports ru_maxrss in KiB). */
static double peak_rss_mib(void) {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss / 1024.0 : 0.0;
}

/* A stop request (the CLI's SIGINT / SIGTERM handler calls tz_train_request_stop): the current
 * step finishes, a checkpoint is written, and `--resume` continues exactly. The library
 * installs no signal handler itself. */
static volatile sig_atomic_t g_stop_signal;
void tz_train_request_stop(int sig) { g_stop_signal = sig > 0 ? sig : SIGTERM; }
int tz_train_stop_requested(void) { return g_stop_signal; }

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
static int link_as(const char *src, const char *dir, const char *name) {
  char *dst = tz_path_join(dir, name);
  size_t n = strlen(dst) + 32;
  char *tmp = tz_malloc(n);
  snprintf(tmp, n, "%s.tmp.%ld", dst, (long)getpid());
  unlink(tmp);
  int rc = 0;
  if (link(src, tmp) != 0 || rename(tmp, dst) != 0) {
    rc = tz_err("%s: cannot keep the checkpoint: %s", dst, strerror(errno));
    unlink(tmp);
  }
  sync_dir(dir);
  free(tmp);
  free(dst);
  return rc;
}

static int cmp_int_desc(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x < y) - (x > y);
}

/* --keep N: checkpoint.tzc (just written, at `step`) is also kept as checkpoint-<step>.tzc;
 * of those, the N with the highest steps stay. A crash between the link and the removals
 * leaves one more file, removed at the next rotation; never a partial checkpoint (each name
 * is a complete file or absent). */
static int rotate(const char *run_dir, const char *ckpt_path, int step, int keep) {
  char name[64];
  if (keep == 1) keep = 0; /* --keep 1: checkpoint.tzc alone (a run resumed with a lower --keep drops the rest) */
  snprintf(name, sizeof name, "checkpoint-%08d.tzc", step);
  if (keep > 0 && link_as(ckpt_path, run_dir, name)) return -1;
  DIR *d = opendir(run_dir);
  if (!d) return 0;
  int *steps = NULL, n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    int s, len = 0;
    if (sscanf(e->d_name, "checkpoint-%8d.tzc%n", &s, &len) == 1 && len == (int)strlen(e->d_name) && len == 23) {
      if (n == cap) steps = tz_realloc(steps, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *steps);
      steps[n++] = s;
    }
  }
  closedir(d);
  qsort(steps, (size_t)n, sizeof *steps, cmp_int_desc);
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

/* Write the checkpoint (rank 0 alone writes; collective for data-parallel runs: call it on
 * every rank). With ZeRO-1 the moment shards are gathered first, through the gradient buffer
 * (free between steps): m into it and then to a host copy on rank 0, then v into it. The file
 * is then an ordinary single-process checkpoint. The others are not told whether the write
 * worked: callers follow with tz_comm_agree. */
static int save(const char *path, tz_model *m, const tz_tokenizer *tok, tz_train_state *st, tz_loader *loader,
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
static int save_and_mark(const char *path, const char *run_dir, int *marked, tz_model *m,
                         const tz_tokenizer *tok, tz_train_state *st, tz_loader *loader, tz_comm *comm) {
  int rc = save(path, m, tok, st, loader, comm);
  if (comm->rank > 0 || rc) return rc;
  if (st->opts->keep >= 1 && rotate(run_dir, path, st->step, st->opts->keep)) return -1;
  if (!*marked) {
    /* the run's tokenizer beside the checkpoint, in its native format (encode/decode
     * --tokenizer RUN_DIR, Hugging Face tools read tokenizer.json) */
    if (tok) {
      char *data, *tp = tz_path_join(run_dir, tz_tok_kind(tok) == TZ_TOKENIZER_BPE ? "tokenizer.json" : "tokenizer.bin");
      size_t len;
      int e = tz_tok_to_blob(tok, &data, &len);
      if (!e) e = tz_write_file_atomic(tp, data, len), free(data);
      free(tp);
      if (e) return -1;
    }
    mark_latest(run_dir);
  }
  *marked = 1;
  return 0;
}

int tz_train(const tz_train_opts *opts_in) {
  tz_train_opts o = *opts_in;
  int rc = -1, finished = 0; /* finished: a resumed run with nothing left to do */
  tz_backend *be = NULL;
  tz_model *m = NULL;
  tz_tokenizer *tok = NULL;
  tz_loader *train = NULL, *val = NULL;
  tz_run_file rf = {0};
  tz_metrics *metrics = NULL;
  tz_prepared prep = {0};
  int32_t *in = NULL, *tg = NULL;
  int *inject_nan = NULL, *inject_inf = NULL, n_inject_nan = 0, n_inject_inf = 0;
  char *ckpt_path = NULL, *best_path = NULL, *metrics_path = NULL, *cache_root = NULL;
  char *created_top = NULL; /* the shallowest directory of o.run_dir this run created */
  int latest_marked = 0;
  tz_comm *comm = NULL;
  /* data parallelism: W ranks of B_rank rows each; o.B is the global batch W·B_rank (what
   * the checkpoint records, so a run resumes with any W that divides it). agreed: this
   * rank's failure is known to the others (tz_comm_agree); in_loop: past the set-up. */
  int W = 1, rank = 0, B_rank = o.B, agreed = 0, in_loop = 0;
  tz_dist_env denv;
  tz_train_state st;
  tz_train_state_init(&st, &o);
  if (tz_dist_env_read(&denv)) goto out;
  W = denv.world, rank = denv.rank;
  if (rank > 0) o.quiet = 1; /* rank 0 alone reports progress (errors are still printed) */
  if (tz_backend_check(o.backend, o.precision)) goto out; /* a config error: before any slow work */

  /* ---- resume: the checkpoint's options and config win over defaults ---- */
  if (o.resume) {
    if (tz_run_open(o.resume, &rf)) goto out;
    if (!rf.train) {
      tz_err("%s: checkpoint has no training state (an imported or exported model); start a new run from its "
             "weights with --init-from %s", rf.path, o.resume);
      goto out;
    }
    int asked = o.steps; /* > 0: --steps given (0: keep the checkpoint's total) */
    if (tz_train_state_from_json(rf.train, rf.path, &st, &o)) goto out;
    /* Refused before any work: the loop would run no step, yet rewrite the checkpoint with a
     * total below its own step ("step 38 of 35"). Equal: nothing to do, also refused. A run
     * resumed without --steps keeps its recorded total. */
    if (asked > 0 && asked <= st.step) {
      tz_err("--steps %d: the run is already at step %d%s; give --steps above %d to continue it", asked, st.step,
             asked == st.step ? " (nothing to do)" : "", st.step);
      goto out;
    }
    /* A checkpoint at its run's last step is the final one (the loop checkpoints only steps
     * below the total; the final validation precedes that save): nothing is left to do. */
    if (asked == 0 && st.step >= o.steps) {
      if (!o.quiet)
        fprintf(stderr, "%s: the run is finished (step %d of %d); nothing to do, give --steps above %d to continue it\n",
                o.resume, st.step, o.steps, st.step);
      rc = 0, finished = 1;
      goto out;
    }
    if (o.steps != st.recorded_steps && !o.quiet)
      fprintf(stderr, "note: --steps %d replaces the run's %d: the cosine schedule is recomputed for the new "
                      "total, so the learning rate changes from here on\n", o.steps, st.recorded_steps);
    if (!o.run_dir) o.run_dir = o.resume;
    o.model = rf.cfg;
    tok = rf.tok;
    rf.tok = NULL;
  }
  /* ---- init from a model: its config and weights, fresh optimizer and training state ---- */
  if (o.init_from) {
    if (o.resume) {
      tz_err("--init-from: give --resume (continue a run) or --init-from (start one from a model), not both");
      goto out;
    }
    if (tz_run_open(o.init_from, &rf)) goto out;
    o.model = rf.cfg;
    if (o.tokenizer) {
      if (tz_tok_load_spec(o.tokenizer, &tok)) goto out;
    } else {
      tok = rf.tok;
      rf.tok = NULL;
    }
    if (tok && tz_tok_vocab_size(tok) > o.model.vocab_size) {
      tz_err("--tokenizer: %s has %d tokens but the model's vocab_size is %d", o.tokenizer ? o.tokenizer : rf.path,
             tz_tok_vocab_size(tok), o.model.vocab_size);
      goto out;
    }
    if (!tok && !o.train_shards) {
      tz_err("%s: the model has no tokenizer to encode --data %s with; give --tokenizer (or token shards with "
             "--train-shards)", rf.path, o.data);
      goto out;
    }
    if (o.T <= 0) o.T = o.model.max_seq_len < 128 ? o.model.max_seq_len : 128;
    if (o.T > o.model.max_seq_len) { /* before any slow work (data preparation) */
      tz_err("--seq-len: T=%d is above the model's context max_seq_len=%d (%s)", o.T, o.model.max_seq_len, rf.path);
      goto out;
    }
  }
  if (!o.run_dir) {
    tz_err("--run-dir: no run directory given");
    goto out;
  }
  if (parse_steps("--debug-inject-nan", o.debug_inject_nan, &inject_nan, &n_inject_nan) ||
      parse_steps("--debug-inject-inf", o.debug_inject_inf, &inject_inf, &n_inject_inf))
    goto out;
  if (!(o.skip_loss_z >= 0) || !(o.skip_norm_z >= 0)) {
    tz_err("--skip-loss-z / --skip-norm-z: %g / %g must be >= 0 (0 = off)", o.skip_loss_z, o.skip_norm_z);
    goto out;
  }
  if (o.B < 1 || o.T < 1 || o.grad_accum < 1 || o.steps < 1) {
    tz_err("options: B=%d, T=%d, grad_accum=%d and steps=%d must all be >= 1", o.B, o.T, o.grad_accum, o.steps);
    goto out;
  }
  if (o.resume) { /* the checkpoint's B is the global batch */
    if (o.B % W) {
      tz_err("--resume: the run's global batch B=%d does not divide into %d processes", o.B, W);
      goto out;
    }
    B_rank = o.B / W;
  } else {
    B_rank = o.B;
    if ((long long)o.B * W > 1 << 24) {
      tz_err("--batch-size: B=%d per process × %d processes is too large", o.B, W);
      goto out;
    }
    o.B *= W;
  }
  if (!o.resume) { /* shape errors now, before any slow work (BPE training, tokenizing) */
    tz_config probe = o.model;
    if (probe.vocab_size <= 0) probe.vocab_size = o.vocab_size;
    if (probe.max_seq_len == 0) probe.max_seq_len = o.T;
    if (tz_config_finalize(&probe)) goto out;
    if (o.T > probe.max_seq_len) {
      tz_err("--seq-len: T=%d is above the model's context max_seq_len=%d", o.T, probe.max_seq_len);
      goto out;
    }
  }
  /* --keep-best needs validation losses: a run on token shards without --val-shards has none */
  if (o.keep_best && o.train_shards && !o.val_shards) {
    tz_err("--keep-best: no validation data (give --val-shards with --train-shards), so checkpoint-best.tzc "
           "would never be written");
    goto out;
  }
  if (o.keep_best && o.val_every <= 0 && !o.quiet)
    fprintf(stderr, "note: --keep-best with --val-every 0: only the final validation is measured, so "
                    "checkpoint-best.tzc comes from that one alone\n");
  /* the backend before the run directory and any slow work (BPE training, tokenizing): a bad
   * --backend / --precision, or a GPU that is not there, fails first */
  if (o.profile) {
    if (strcmp(o.backend, "webgpu") && strcmp(o.backend, "cuda")) {
      tz_err("--profile needs --backend webgpu or cuda (GPU timestamps)");
      goto out;
    }
    setenv("TEZGAH_PROFILE", "1", 1);
  }
  if (W > 1 && !strcmp(o.backend, "cpu") && o.threads == 0) { /* the cores shared by this machine's ranks */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    o.threads = cores / denv.local_world > 1 ? (int)(cores / denv.local_world) : 1;
  }
  if (W > 1 && !strcmp(o.backend, "cuda") && !getenv("TEZGAH_CUDA_DEVICE")) { /* one GPU per rank */
    char dev[16];
    snprintf(dev, sizeof dev, "%d", denv.local_rank);
    setenv("TEZGAH_CUDA_DEVICE", dev, 1);
  }
  if (!(be = tz_backend_create(o.backend, o.threads, o.precision))) goto out;
  if (tz_comm_create(&denv, be, &comm)) goto out;
  if (!o.resume) { /* never train over another run: its checkpoint and metrics would be lost */
    char *existing = tz_path_join(o.run_dir, TZ_CKPT_FILE);
    int taken = tz_exists(existing);
    free(existing);
    if (taken) {
      tz_err("%s: already holds a run (%s); continue it with --resume %s or choose another --run-dir",
             o.run_dir, TZ_CKPT_FILE, o.run_dir);
      goto out;
    }
  }
  if (rank == 0) { /* rank 0 alone writes into the run directory */
    if (tz_mkdirs_track(o.run_dir, &created_top)) goto out;
    if (access(o.run_dir, W_OK) != 0) {
      tz_err("%s: run directory is not writable: %s", o.run_dir, strerror(errno));
      goto out;
    }
    /* A previous session killed in the middle of a checkpoint or metrics write left its
     * temporary file ("checkpoint.tzc.tmp.<pid>"): remove such leftovers of dead processes. */
    tz_afile_sweep(o.run_dir);
  }
  ckpt_path = tz_path_join(o.run_dir, TZ_CKPT_FILE);
  best_path = tz_path_join(o.run_dir, TZ_CKPT_BEST_FILE);
  metrics_path = tz_path_join(o.run_dir, "metrics.jsonl");

  /* ---- data: rank 0 prepares it (BPE training, tokenizing into the cache) while the other
   * ranks wait; they then find it cached ---- */
  const char *train_shards = o.train_shards, *val_shards = o.val_shards;
  for (int turn = 0; turn < (W > 1 ? 2 : 1); turn++) {
    if (turn == 1 && tz_comm_agree(comm, 1)) {
      agreed = 1;
      goto out;
    }
    if ((turn == 0) != (rank == 0)) continue;
  if (!train_shards) {
    /* absolute, so that a resumed run finds its shards from any working directory */
    char *abs = realpath(o.run_dir, NULL);
    cache_root = tz_path_join(dirname(abs), ".cache");
    free(abs);
    if (tz_prepare_corpus_tok(o.data, o.init_from ? tok : NULL, o.vocab_size, o.val_fraction, cache_root, o.quiet,
                              o.tokenizer_backend, &prep))
      goto out;
    train_shards = prep.train_path;
    val_shards = prep.val_path;
    st.train_shards = tz_strdup(train_shards);
    st.val_shards = tz_strdup(val_shards);
    if (!tok && tz_tok_load(prep.tokenizer_path, &tok)) goto out;
  } else {
    if (!st.train_shards) st.train_shards = tz_strdup(train_shards);
    if (!st.val_shards && val_shards) st.val_shards = tz_strdup(val_shards);
    if (!tok && o.tokenizer && tz_tok_load_spec(o.tokenizer, &tok)) goto out;
  }
  }
  if (!o.resume && !o.init_from) {
    o.model.vocab_size = tok ? tz_tok_vocab_size(tok) : o.vocab_size;
    if (o.model.vocab_size <= 0) {
      tz_err("--vocab-size: needed when training on shards without a tokenizer");
      goto out;
    }
    if (o.model.max_seq_len == 0) o.model.max_seq_len = o.T;
    if (tz_config_finalize(&o.model)) goto out;
  }
  if (o.T > o.model.max_seq_len) {
    tz_err("--seq-len: T=%d is above the model's context max_seq_len=%d", o.T, o.model.max_seq_len);
    goto out;
  }
  if (tz_loader_open(&train, train_shards, o.model.vocab_size, o.B, o.T) ||
      (val_shards && tz_loader_open(&val, val_shards, o.model.vocab_size, o.B, o.T))) {
    if (!o.train_shards && !o.resume) tz_err_prefix(o.data); /* name the user's corpus, not just the cache file */
    goto out;
  }
  tz_loader_shuffle(train, o.seed);

  /* ---- model ---- */
  if (o.resume || o.init_from) {
    if (tz_run_load_model(&rf, be, &m)) goto out;
  } else {
    if (tz_model_create(be, &o.model, &m)) goto out;
    tz_model_init_weights(m, o.seed);
  }
  m->recompute = o.recompute;
  m->dist_world = W;
  m->dist_rank = rank;
  m->zero = o.zero && W > 1;
  if (tz_model_alloc_training(m, B_rank, o.T)) goto out;
  if (o.resume) {
    if (tz_run_load_adam(&rf, m)) goto out;
    if (tz_loader_set_pos(train, st.loader_pos)) {
      tz_err_prefix(rf.path);
      goto out;
    }
  }
  tz_run_close(&rf);
  if (rank == 0 && (metrics_trim(metrics_path, st.step) || !(metrics = tz_metrics_open(metrics_path, st.step > 0))))
    goto out;
  if (W > 1) {
    if (tz_comm_agree(comm, 1)) {
      agreed = 1;
      goto out;
    }
    /* the same seed gives the same weights everywhere; rank 0's are made the truth anyway */
    comm->broadcast(comm, (tz_slice){m->params, 0}, m->lay.total, 0);
  }
  in_loop = 1;
  tz_comm_watchdog_start(comm);

  size_t N = (size_t)o.B * o.T, Nr = (size_t)B_rank * o.T; /* tokens per batch: all ranks, this rank */
  in = tz_malloc(Nr * sizeof *in);
  tg = tz_malloc(Nr * sizeof *tg);
  int warmup = o.warmup >= 0 ? o.warmup : o.steps / 20;
  if (!o.quiet) {
    fprintf(stderr, "model: %s, %d layers, %d heads (%d kv), C=%d, d_ff=%d, V=%d, T=%d: %.2fM params (%016" PRIx64 ")\n",
            tz_arch_name(m->cfg.arch), m->cfg.n_layer, m->cfg.n_head, m->cfg.n_kv_head, m->cfg.d_model,
            m->cfg.d_ff, m->cfg.vocab_size, m->cfg.max_seq_len, m->lay.total / 1e6, m->lay.fingerprint);
    fprintf(stderr, "train: %s backend, B=%d T=%d accum=%d, %d steps%s, lr %.2e, run %s\n", be->name, o.B, o.T,
            o.grad_accum, o.steps, st.step ? " (resumed)" : "", o.lr, o.run_dir);
    if (W > 1)
      fprintf(stderr, "dist: %d processes (%s), B=%d rows each%s\n", W, comm->kind, B_rank,
              m->zero ? ", ZeRO-1: AdamW moments sharded" : "");
    if (o.init_from) fprintf(stderr, "init: weights from %s, fresh optimizer state\n", o.init_from);
    if (!strcmp(be->name, "webgpu")) fprintf(stderr, "webgpu: %s\n", tz_webgpu_describe(be));
    if (be->act != TZ_F32) fprintf(stderr, "precision: %s activations and weight copies, fp32 master weights, gradients and AdamW\n", tz_dtype_name(be->act));
    if (strcmp(be->name, "cpu") && be->mem_used) { /* the arenas on a GPU backend, in MiB */
      double pb = m->lay.total * 4.0 / 1048576.0, mv = (m->zero ? m->shard_n : m->lay.total) * 8.0 / 1048576.0;
      fprintf(stderr, "memory: params %.1f MiB, grads %.1f, adamw m+v %.1f, activations %.1f (%s); %s device memory in use %.1f MiB\n",
              pb, pb, mv, m->train.bytes / 1048576.0, tz_dtype_name(be->act), be->name, be->mem_used(be) / 1048576.0);
    }
  }
  int tty = isatty(2) && !o.quiet, first_step = st.step;
  /* elapsed_s in checkpoints = wall time of earlier sessions + this session's so far */
  double t_start = now_s(), prior_elapsed = st.elapsed_s, tokens_done = 0, last_val = NAN, val_dt = 0;
  double recent[RECENT] = {0};
  int n_recent = 0, last_val_step = 0;
  /* After the first step's warm-up (lazily allocated scratch, stdio buffers) a step allocates
   * nothing: the metrics record is formatted into this buffer (tests/test_step_alloc.sh). */
  char line[512];
  int prof_from = st.step; /* --profile: the table covers steps prof_from.. */
  for (; st.step < o.steps; st.step++) {
    double val_loss = NAN;
    if (o.profile && st.step - first_step == 2 && o.steps - st.step >= 3) {
      /* leave the two warm-up steps out (module loading, GEMM heuristics, scratch sizing) */
      if (be->profile_reset) be->profile_reset(be);
      prof_from = st.step;
    }
    if (val && o.val_every > 0 && st.step % o.val_every == 0) {
      double tv = now_s();
      val_loss = validate(m, val, o.val_batches, in, tg, comm, rank * B_rank, B_rank);
      val_dt = now_s() - tv;
      last_val = val_loss;
      last_val_step = st.step;
      if (o.keep_best && st.step > 0 && val_loss < st.best_val) {
        /* the model now is the state after st.step steps: a complete training checkpoint */
        st.best_val = val_loss;
        st.elapsed_s = prior_elapsed + (now_s() - t_start);
        int sr = save(best_path, m, tok, &st, train, comm);
        if (tz_comm_agree(comm, sr == 0)) {
          agreed = 1;
          goto out;
        }
      }
    }
    double t0 = now_s();
    float lr = tz_lr_at(st.step, o.steps, warmup, o.lr, o.min_lr_frac);
    tz_model_zero_grads(m);
    double loss = 0;
    for (int a = 0; a < o.grad_accum; a++) {
      if (tz_loader_next_rows(train, rank * B_rank, B_rank, in, tg)) goto out;
      if (a == 0 && has_step(inject_inf, n_inject_inf, st.step + 1)) m->debug_poison_acts = 1;
      /* 1/W: the ranks' gradients are summed, so each contributes its mean over W */
      loss += tz_model_train_micro(m, in, tg, 1.0f / ((float)o.grad_accum * (float)W));
      if (a == 0 && has_step(inject_nan, n_inject_nan, st.step + 1)) /* through the backend's fill op */
        be->fill(be, (tz_slice){m->grads, 0}, NAN, m->ranges[0].n, TZ_F32);
    }
    loss /= o.grad_accum;
    double norm;
    int stop_sig = g_stop_signal;
    if (W == 1) {
      norm = tz_model_grad_norm(m);
    } else {
      /* sum the gradients (ZeRO-1: only this rank's shard is needed); the norm from each
       * rank's shard of the sum; loss and stop requests summed alongside, so every rank
       * takes the same decisions (skip, clip, stop) from the same numbers */
      if (m->zero) comm->reduce_scatter(comm, (tz_slice){m->grads, 0}, m->shard_n);
      else tz_comm_allreduce(comm, (tz_slice){m->grads, 0}, m->shard_n);
      size_t first, n;
      tz_model_shard(m, &first, &n);
      double v[3] = {loss, tz_model_grad_sumsq(m, first, n), g_stop_signal ? 1.0 : 0.0};
      tz_comm_sum_f64(comm, v, 3);
      loss = v[0] / W;
      norm = sqrt(v[1]);
      stop_sig = v[2] > 0 ? (g_stop_signal ? g_stop_signal : SIGTERM) : 0;
      tz_comm_progress();
      /* tests: TEZGAH_DEBUG_KILL="RANK:STEP" kills that rank there, "RANK:STEP:stop" stops it
       * (SIGSTOP: a hung peer, for the watchdog) */
      const char *kr = getenv("TEZGAH_DEBUG_KILL");
      int krank, kstep;
      if (kr && sscanf(kr, "%d:%d", &krank, &kstep) == 2 && krank == rank && kstep == st.step + 1)
        raise(strstr(kr, ":stop") ? SIGSTOP : SIGKILL);
    }
    const char *skip = !isfinite(loss) ? "non-finite loss" : !isfinite(norm) ? "non-finite grad norm" : NULL;
    char why[96];
    if (!skip && o.skip_loss_z > 0) {
      double z = tz_outlier_z(&st.loss_win, loss);
      if (z > o.skip_loss_z) snprintf(why, sizeof why, "loss z-score %.2f > %g", z, o.skip_loss_z), skip = why;
    }
    if (!skip && o.skip_norm_z > 0) {
      double z = tz_outlier_z(&st.norm_win, norm);
      if (z > o.skip_norm_z) snprintf(why, sizeof why, "grad norm z-score %.2f > %g", z, o.skip_norm_z), skip = why;
    }
    if (!skip && (o.skip_loss_z > 0 || o.skip_norm_z > 0)) {
      tz_outlier_push(&st.loss_win, loss);
      tz_outlier_push(&st.norm_win, norm);
    }
    if (!skip) {
      float clip = o.grad_clip > 0 && norm > o.grad_clip ? (float)(o.grad_clip / (norm + 1e-6)) : 1.0f;
      tz_adamw_hp hp = {lr, o.beta1, o.beta2, o.eps, o.weight_decay, clip, (int)(st.adam_t + 1)};
      if (tz_model_adamw(m, &hp)) goto out;
      if (m->zero) comm->all_gather(comm, (tz_slice){m->params, 0}, m->shard_n);
      st.adam_t++;
    } else {
      st.skipped++;
      if (rank == 0)
        fprintf(stderr, "%sstep %d skipped: %s (loss %g, grad norm %g)\n", tty ? "\n" : "", st.step + 1, skip, loss, norm);
    }
    be->sync(be);
    double dt = now_s() - t0;
    tokens_done += (double)N * o.grad_accum; /* all ranks' tokens */
    double elapsed = now_s() - t_start;
    double tok_s = (double)N * o.grad_accum / dt;
    size_t len = (size_t)snprintf(line, sizeof line, "{\"step\":%d", st.step + 1);
    len += put_num(line + len, sizeof line - len, "loss", loss);
    len += put_num(line + len, sizeof line - len, "lr", lr);
    len += put_num(line + len, sizeof line - len, "grad_norm", norm);
    len += put_num(line + len, sizeof line - len, "tok_per_s", round(tok_s));
    len += put_num(line + len, sizeof line - len, "elapsed_s", prior_elapsed + elapsed);
    if (isfinite(val_loss)) len += put_num(line + len, sizeof line - len, "val_loss", val_loss);
    if (skip) len += snprintf(line + len, sizeof line - len, ",\"skipped\":true,\"reason\":\"%s\"", skip);
    len += snprintf(line + len, sizeof line - len, "}");
    if (metrics && tz_metrics_write_line(metrics, line, len)) goto out;
    recent[n_recent++ % RECENT] = dt;
    if (!o.quiet && (tty || (st.step + 1) % o.log_every == 0 || st.step == 0)) {
      int k = n_recent < RECENT ? n_recent : RECENT, left = o.steps - st.step - 1;
      double sum_dt = 0;
      for (int i = 0; i < k; i++) sum_dt += recent[i];
      int vals_left = val && o.val_every > 0 ? (o.steps - 1) / o.val_every - st.step / o.val_every + 1 : 0;
      /* the last step's line says 0: what follows (final validation, checkpoint) is reported by the done line */
      double eta = left > 0 ? sum_dt / k * left + val_dt * vals_left : 0;
      char pl[160];
      progress_line(pl, sizeof pl, st.step + 1, o.steps, loss, (double)N * o.grad_accum * k / sum_dt, eta, last_val,
                    last_val_step);
      fprintf(stderr, "%s%s%s", tty ? "\r" : "", pl, tty ? "\033[K" : "\n");
    }
    if (o.ckpt_every > 0 && (st.step + 1) % o.ckpt_every == 0 && st.step + 1 < o.steps) {
      st.step++;
      st.elapsed_s = prior_elapsed + (now_s() - t_start);
      int src = save_and_mark(ckpt_path, o.run_dir, &latest_marked, m, tok, &st, train, comm);
      st.step--;
      if (tz_comm_agree(comm, src == 0)) {
        agreed = 1;
        goto out;
      }
    }
    int stop_now = o.stop_after > 0 && st.step + 1 - first_step >= o.stop_after;
    if (W == 1) stop_sig = g_stop_signal; /* one process: a signal up to now counts */
    if ((stop_now || stop_sig) && st.step + 1 < o.steps) {
      st.step++;
      st.elapsed_s = prior_elapsed + (now_s() - t_start);
      int src = save_and_mark(ckpt_path, o.run_dir, &latest_marked, m, tok, &st, train, comm);
      if (tz_comm_agree(comm, src == 0)) {
        agreed = 1;
        goto out;
      }
      if (stop_sig && rank == 0)
        fprintf(stderr, "%s%s: stopped at step %d with a checkpoint; continue with --resume %s\n", tty ? "\n" : "",
                stop_sig == SIGINT ? "interrupted" : "terminated", st.step, o.run_dir);
      else if (!o.quiet)
        fprintf(stderr, "%sstopped after %d steps of this session at step %d; continue with --resume %s\n",
                tty ? "\n" : "", o.stop_after, st.step, o.run_dir);
      rc = stop_sig ? 128 + stop_sig : 0;
      goto out;
    }
  }
  double total = now_s() - t_start;
  if (tty) fprintf(stderr, "\n");
  if (o.profile && rank == 0) { /* validation passes included; warm-up steps left out when there are enough */
    if (!o.quiet && prof_from > first_step) fprintf(stderr, "profile of steps %d..%d (warm-up steps left out)\n", prof_from + 1, st.step);
    if (be->profile_print) be->profile_print(be, st.step - prof_from);
  }
  if (val) {
    last_val = validate(m, val, o.val_batches, in, tg, comm, rank * B_rank, B_rank);
    cJSON *fin = cJSON_CreateObject();
    cJSON_AddNumberToObject(fin, "step", st.step);
    cJSON_AddNumberToObject(fin, "val_loss", last_val);
    cJSON_AddTrueToObject(fin, "final");
    int wrc = metrics ? tz_metrics_write(metrics, fin) : 0;
    cJSON_Delete(fin);
    if (wrc) goto out;
  }
  st.elapsed_s = prior_elapsed + total;
  int final_best = o.keep_best && val && last_val < st.best_val;
  if (final_best) st.best_val = last_val;
  int src = save_and_mark(ckpt_path, o.run_dir, &latest_marked, m, tok, &st, train, comm);
  if (!src && final_best && rank == 0) src = link_as(ckpt_path, o.run_dir, TZ_CKPT_BEST_FILE);
  if (tz_comm_agree(comm, src == 0)) {
    agreed = 1;
    goto out;
  }
  if (W > 1) { /* peak memory of every rank, printed by rank 0 */
    double mem[2] = {peak_rss_mib(), be->mem_peak ? be->mem_peak(be) / 1048576.0 : 0.0};
    double *all = tz_malloc((size_t)W * 2 * sizeof *all);
    comm->allgather_f64(comm, mem, all, 2);
    if (!o.quiet) {
      fprintf(stderr, "peak memory per rank (MiB, host%s%s):", be->mem_peak ? " / " : "", be->mem_peak ? be->name : "");
      for (int r = 0; r < W; r++) {
        if (be->mem_peak) fprintf(stderr, " %d: %.0f / %.0f%s", r, all[2 * r], all[2 * r + 1], r + 1 < W ? "," : "");
        else fprintf(stderr, " %d: %.0f%s", r, all[2 * r], r + 1 < W ? "," : "");
      }
      fprintf(stderr, "\n");
    }
    free(all);
  }
  if (!o.quiet) {
    char vl[64] = "no validation";
    if (val) snprintf(vl, sizeof vl, "final val loss %.4f (ppl %.2f)", last_val, exp(last_val));
    fprintf(stderr, "done: %d steps, %.0f tok/s this session, %s, %d skipped; checkpoint %s\n", st.step,
            total > 0 ? tokens_done / total : 0.0, vl, st.skipped, ckpt_path);
  }
  tz_comm_watchdog_stop(); /* the collectives are over (rank 0 may sample for a while) */
  if (o.sample_tokens > 0 && tok && rank == 0) {
    tz_sample_opts so;
    tz_sample_opts_default(&so);
    so.model = ckpt_path;
    so.backend = o.backend;
    so.threads = o.threads;
    so.tokens = o.sample_tokens;
    so.seed = o.seed;
    if (!o.quiet) fprintf(stderr, "sample (temperature %.1f, top-k %d):\n", so.temperature, so.top_k);
    if (tz_sample(&so, stdout)) goto out;
  }
  rc = 0;
out:
  if (rc == 0 && !o.quiet && !finished) { /* peak memory of the whole session (the sample included) */
    fprintf(stderr, "peak host memory: %.1f MiB", peak_rss_mib());
    if (be && be->mem_peak) fprintf(stderr, "; %s device memory: %.1f MiB peak", be->name, be->mem_peak(be) / 1048576.0);
    fprintf(stderr, "\n");
  }
  g_stop_signal = 0;
  if (comm && W > 1 && rc < 0 && !agreed) {
    /* a failure of this rank alone: in the set-up the others wait at a tz_comm_agree (join
     * it with "failed"); later they may wait in any collective (abort) */
    if (in_loop) comm->abort(comm);
    else if (tz_comm_agree(comm, 0)) {}
  }
  if (rc < 0 && W > 1 && rank > 0) {
    char who[32];
    snprintf(who, sizeof who, "rank %d", rank);
    tz_err_prefix(who);
  }
  tz_run_close(&rf);
  tz_metrics_close(metrics);
  if (rc < 0 && created_top && !latest_marked) { /* a run that failed before its first checkpoint */
    if (metrics_path && tz_exists(metrics_path) && !o.resume) unlink(metrics_path);
    tz_rmdirs_upto(o.run_dir, created_top); /* the run directory and the parents it needed, if empty */
  }
  free(created_top);
  tz_loader_free(train);
  tz_loader_free(val);
  tz_model_free(m);
  tz_comm_free(comm);
  if (be) be->destroy(be);
  tz_tok_free(tok);
  tz_prepared_free(&prep);
  tz_train_state_free(&st);
  free(in);
  free(tg);
  free(inject_nan);
  free(inject_inf);
  free(ckpt_path);
  free(best_path);
  free(metrics_path);
  free(cache_root);
  return rc;
}
