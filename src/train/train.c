/* The training loop (one for every backend):
 *   prepare data (cached shards) → build or resume the model → for each step:
 *   [validate] → zero grads → grad_accum × (forward, loss·S, backward) → ‖g‖/S → skip if not
 *   finite → loss scale S updated → clip → AdamW(g·clip/S) → metrics.jsonl + progress line
 *   → [checkpoint]
 *   → final validation, checkpoint and a short sample.
 * Deterministic for a given seed and thread count; a resumed run continues the exact loss
 * sequence of an uninterrupted one (all state is in the checkpoint, see run_ckpt.h).
 * tz_train (at the end of this file) runs as named phases over one shared struct, train_run:
 * each phase can be read alone, and phase_loop fits on a screen. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#ifndef __wasi__ /* (WASI has no flock: the wasm build runs one process, below) */
#include <sys/file.h>
#endif
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint/run_ckpt.h"
#include "core/decimal.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/progress.h"
#include "core/stop.h"
#include "data/dataloader.h"
#include "data/metrics.h"
#include "data/shard.h"
#include "dist/comm.h"
#include "model/config_json.h"
#include "train/data_prep.h"
#include "train/loss_scale.h"
#include "train/recompute.h"
#include "train/schedule.h"
#include "train/train_ckpt.h"
#include "train/train_run.h"
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
  o->logits_chunk = -1; /* auto */
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

/* The progress line, at most PROGRESS_COLS characters:
 *   " 120/600 [#####.........] loss 3.2145 | 12.3k tok/s | ETA 1m23s | val 3.4121@100"
 * tok/s is over the recent steps (validation excluded); the ETA adds the remaining
 * validations at the last one's duration; val is the last validation loss and its step.
 * The bar keeps one width through a run (*bar_w, 0 before the first line), so that the
 * columns after it do not move: the first line sizes it for the typical fields (loss 6
 * characters, tok/s 6, ETA 5) and, when the lines show a val column (val_digits > 0), one
 * with a step of val_digits digits (val 5.7072@0 on the first line, @100 later, would otherwise
 * shrink it); a longer line later (a loss of 10 or more, an ETA in the tens of hours) narrows
 * it for the rest of the run. At least 3: even a 7-digit step count with a val loss keeps a
 * (short) bar where the line has room for it. */
static void progress_line(char *out, size_t cap, int step, int steps, double loss, double tok_s, double eta_s,
                          double val, int val_step, int val_digits, int *bar_w) {
  char right[160], rate[32], eta[32], vs[48] = "";
  tz_fmt_rate(rate, sizeof rate, tok_s);
  tz_fmt_eta(eta, sizeof eta, eta_s);
  if (isfinite(val)) snprintf(vs, sizeof vs, " | val %.4f@%d", val, val_step);
  snprintf(right, sizeof right, " loss %.4f | %s tok/s | ETA %s%s", loss, rate, eta, vs);
  int w = (int)log10(steps) + 1;
  char left[48];
  snprintf(left, sizeof left, "%*d/%d", w & 15, step, steps);
  int fit = PROGRESS_COLS - (int)strlen(left) - (int)strlen(right) - 3;
  if (!*bar_w) {
    int typical = (int)strlen(" loss 0.0000 | 000.0k tok/s | ETA 0m00s") +
                  (val_digits > 0 ? (int)strlen(" | val 0.0000@") + val_digits : 0);
    int b0 = PROGRESS_COLS - (int)strlen(left) - typical - 3;
    *bar_w = b0 > 30 ? 30 : b0 < 3 ? 3 : b0;
  }
  if (fit < *bar_w && fit >= 3) *bar_w = fit;
  int bar = fit < *bar_w ? fit : *bar_w;
  char b[40] = "";
  if (bar >= 3) {
    int fill = (int)((double)bar * step / steps);
    b[0] = ' ', b[1] = '[';
    for (int i = 0; i < bar; i++) b[2 + i] = i < fill ? '#' : '.';
    b[2 + bar] = ']', b[3 + bar] = 0;
  }
  snprintf(out, cap, "%s%s%s", left, b, right);
  if (strlen(out) > PROGRESS_COLS) out[PROGRESS_COLS] = 0;
}

/* On resume, drop metrics lines of steps after the checkpoint (they will be re-run), so
 * metrics.jsonl reads like an uninterrupted run's. Lines that are not a record (not a JSON
 * object with a numeric "step": text appended by hand, a damaged line) are dropped too, with
 * one warning naming the first: the file is the run's log, rewritten here, and the checkpoint
 * holds the state, so the resume goes on (plot leaves such lines out the same way). Blank
 * lines go without a word. An unterminated last line (a write cut short by a kill, or a file
 * cut by hand) is read as the others: a whole record is kept (its newline added), one cut off
 * is dropped with the warning (README promises it; it went without a word, 2026-12-05). */
static int metrics_trim(const char *path, int step) {
  if (step == 0 || !tz_exists(path)) return 0;
  char *data;
  size_t len;
  if (tz_read_file(path, &data, &len)) return -1;
  char *keep = tz_malloc(len + 1);
  size_t n = 0;
  int lineno = 0, bad = 0, first_bad = 0, cut = 0;
  for (char *line = data, *end; line < data + len; line = end + 1) {
    end = memchr(line, '\n', (size_t)(data + len - line));
    int last = !end; /* no newline after it: the file's unterminated last line */
    if (last) end = data + len;
    lineno++;
    cJSON *j = cJSON_ParseWithLength(line, (size_t)(end - line));
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "step");
    const cJSON *fin = cJSON_GetObjectItemCaseSensitive(j, "final");
    if (cJSON_IsNumber(s) && s->valuedouble <= step && !cJSON_IsTrue(fin)) {
      memcpy(keep + n, line, (size_t)(end - line));
      n += (size_t)(end - line);
      keep[n++] = '\n';
    } else if (!(cJSON_IsObject(j) && cJSON_IsNumber(s)) && strspn(line, " \t\r") < (size_t)(end - line)) {
      if (!bad++) first_bad = lineno, cut = last;
    }
    cJSON_Delete(j);
  }
  int rc = tz_write_file_atomic(path, keep, n);
  if (!rc && bad == 1 && cut)
    fprintf(stderr, "tezgah: warning: %s: line %d is cut off (no newline at its end: a write cut short, e.g. by a "
                    "kill); dropped on resume\n", path, first_bad);
  else if (!rc && bad == 1)
    fprintf(stderr, "tezgah: warning: %s: line %d is not a metrics record (a JSON object with a numeric \"step\"); "
                    "dropped on resume\n", path, first_bad);
  else if (!rc && bad > 1)
    fprintf(stderr, "tezgah: warning: %s: %d lines are not metrics records (JSON objects with a numeric \"step\"), the "
                    "first at line %d; dropped on resume\n", path, bad, first_bad);
  free(keep);
  free(data);
  return rc;
}

/* Parse "STEP[,STEP...]" (1-based step numbers) for the --debug-inject-* flags into a
 * malloc'ed array. NULL or "" gives none. Decimal digits only, as the options' numbers
 * (core/decimal.h): " 3" or "3, 7" is refused as "3 " is. */
static int parse_steps(const char *flag, const char *s, int **out, int *n) {
  *out = NULL;
  *n = 0;
  if (!s || !*s) return 0;
  int cap = 1;
  for (const char *p = s; *p; p++) cap += *p == ',';
  *out = tz_malloc((size_t)cap * sizeof **out);
  for (const char *p = s;;) {
    size_t len = strcspn(p, ",");
    long v;
    if (tz_decimal_long(p, len, &v) || v < 1 || v > (1L << 30))
      return tz_err("%s: '%s' is not a list of step numbers >= 1 (e.g. 3,7)", flag, s);
    (*out)[(*n)++] = (int)v;
    if (!p[len]) return 0;
    p += len + 1;
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
#ifdef __wasi__
  /* wasm: the linear memory never shrinks, so its size is the peak (pages of 64 KiB) */
  return (double)__builtin_wasm_memory_size(0) * 65536.0 / (1024.0 * 1024.0);
#else
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss / 1024.0 : 0.0;
#endif
}

/* A stop request (the CLI's SIGINT / SIGTERM handler calls tz_train_request_stop): the current
 * step finishes, a checkpoint is written, and `--resume` continues exactly. The library
 * installs no signal handler itself. */
void tz_train_request_stop(int sig) { tz_stop_request(sig); } /* core/stop.h: data preparation checks it too */
int tz_train_stop_requested(void) { return tz_stop_pending(); }

/* ---- tz_train, phase by phase: train_run (train_run.h) ---- */

static void notes_add(train_run *r, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  if (n > 0) {
    r->notes = tz_realloc(r->notes, r->notes_len + (size_t)n + 1);
    vsnprintf(r->notes + r->notes_len, (size_t)n + 1, fmt, ap2);
    r->notes_len += (size_t)n;
  }
  va_end(ap2);
}

void tz_train_note(train_run *r, const char *fmt, ...) {
  if (r->o.quiet) return;
  va_list ap;
  va_start(ap, fmt);
  notes_add(r, fmt, ap);
  va_end(ap);
}

void tz_train_warn(train_run *r, const char *fmt, ...) {
  if (r->rank != 0) return; /* the ranks share the options: one line for the run */
  va_list ap;
  va_start(ap, fmt);
  notes_add(r, fmt, ap);
  va_end(ap);
}

int tz_train_agree(train_run *r, int ok) {
  if (!tz_comm_agree(r->comm, ok)) return 0;
  r->agreed = 1;
  return -1;
}

static double run_validation(train_run *r) {
  return validate(r->m, r->val, r->o.val_batches, r->in, r->tg, r->comm, r->rank * r->B_rank, r->B_rank);
}

/* The run's options, the ranks of a data-parallel run, and a config check before any work. */
static int phase_start(train_run *r, const tz_train_opts *opts_in) {
  r->o = *opts_in;
  r->rc = -1;
  r->W = 1;
  r->B_rank = r->o.B;
  tz_train_state_init(&r->st, &r->o);
  if (tz_dist_env_read(&r->denv)) return -1;
  r->W = r->denv.world, r->rank = r->denv.rank;
  if (r->rank > 0) r->o.quiet = 1; /* rank 0 alone reports progress (errors are still printed) */
  if (tz_backend_check(r->o.backend, r->o.precision)) return -1; /* a config error: before any slow work */
  return 0;
}

/* A finished run resumed from its own checkpoint.tzc: a kill between the final save and its
 * links (final_checkpoint) left them undone, and this completes them, each only when pending;
 * a failure (a read-only directory) is a note: the run and its checkpoint are intact.
 *  - --keep: one numbered checkpoint too many, or the final one unnamed (tests/test_ckpt_keep.sh's
 *    kills found it); completed with the run's recorded --keep, not one given now (this command
 *    changes nothing else).
 *  - --keep-best: the final validation was the best (the checkpoint's best_val_loss is its
 *    last_val_loss, measured at its step: final_checkpoint set it so before the save), yet
 *    checkpoint-best.tzc is not another name of checkpoint.tzc (an older best, or none). A
 *    best_val_loss is recorded only by --keep-best runs, so this needs no flag. */
static void finish_cut_links(train_run *r) {
  const int keep = r->st.recorded_keep;
  const tz_train_state *st = &r->st;
  const char *base = strrchr(r->rf.path, '/'), *file = base ? base + 1 : r->rf.path;
  int best = isfinite(st->best_val) && st->last_val_step == st->step && st->best_val == st->last_val;
  if (r->rank != 0 || (keep < 1 && !best) || strcmp(file, TZ_CKPT_FILE)) return;
  char *dir = tz_strdup(base ? r->rf.path : ".");
  if (base) dir[base - r->rf.path] = '\0';
  int rot = keep >= 1 && tz_train_rotation_pending(dir, r->rf.path, r->st.step, keep);
  best = best && !tz_train_is_link_of(dir, TZ_CKPT_BEST_FILE, r->rf.path);
  if (rot || best) tz_afile_sweep(dir); /* a kill inside a link leaves a temporary name */
  if (rot) {
    if (tz_train_rotate(dir, r->rf.path, r->st.step, keep) == 0) {
      if (!r->o.quiet) fprintf(stderr, "note: %s: completed the --keep %d rotation an interruption cut short\n", dir, keep);
    } else
      fprintf(stderr, "note: %s: the --keep %d rotation an interruption cut short is not completed: %s\n", dir, keep,
              tz_errmsg());
  }
  if (best) {
    if (tz_train_link_as(r->rf.path, dir, TZ_CKPT_BEST_FILE) == 0) {
      if (!r->o.quiet)
        fprintf(stderr, "note: %s: completed the --keep-best link an interruption cut short (%s: the final "
                        "checkpoint, step %d, val loss %.4f)\n", dir, TZ_CKPT_BEST_FILE, st->step, st->best_val);
    } else
      fprintf(stderr, "note: %s: the --keep-best link an interruption cut short is not completed (%s is not the "
                      "final checkpoint, the best): %s\n", dir, TZ_CKPT_BEST_FILE, tz_errmsg());
  }
  free(dir);
}

static int resumes_in(const char *dir, const char *path);
static int phase_run_dir(train_run *r);

/* Whether this session continues the run's metrics.jsonl: a resume into its own run directory
 * (one into another --run-dir starts a fresh file there) */
static int metrics_continue(const train_run *r) {
  return r->o.resume && r->st.step > 0 && resumes_in(r->o.run_dir, r->o.resume);
}

/* A metrics.jsonl in a run directory that holds no checkpoint, which a new run (or one continued
 * into this --run-dir) would replace: replaced where it is a tezgah log (empty, or its first
 * record "{\"step\":": a run stopped or failed before its first checkpoint), with a note; else
 * refused, since the file is someone else's (the fresh-clone walkthrough of 2026-12-06: a user's
 * metrics.jsonl was overwritten without a word). 0, or -1 with the error. */
static int stray_metrics(train_run *r) {
  FILE *f = fopen(r->metrics_path, "rb");
  if (!f) return 0;
  char head[16] = {0};
  size_t n = fread(head, 1, sizeof head - 1, f);
  fclose(f);
  static const char rec[] = "{\"step\":";
  if (n == 0) return 0; /* an empty log: nothing is lost */
  if (n < sizeof rec - 1 || memcmp(head, rec, sizeof rec - 1))
    return tz_err("%s: is not a tezgah run's log (its first record is not {\"step\": ...}) and no %s is beside it: "
                  "move it away or choose another --run-dir", r->metrics_path, TZ_CKPT_FILE);
  tz_train_note(r, "note: %s, the log of a run that saved no checkpoint, is replaced by this run's\n", r->metrics_path);
  return 0;
}

/* --resume: the checkpoint's options and config win over defaults. */
static int phase_resume(train_run *r) {
  tz_train_opts *o = &r->o;
  tz_train_state *st = &r->st;
  if (!o->resume) return 0;
  /* a checkpoint file only with --run-dir (without it the run continues in the directory given) */
  if (tz_run_open_resume(o->resume, o->run_dir != NULL, &r->rf)) return -1;
  if (!r->rf.train)
    return tz_err("%s: checkpoint has no training state (an imported or exported model); start a new run from its "
                  "weights with --init-from %s", r->rf.path, o->resume);
  int asked = o->steps; /* > 0: --steps given (0: keep the checkpoint's total) */
  r->resume_given_shards = (o->train_shards ? 1 : 0) | (o->val_shards ? 2 : 0); /* before from_json fills them */
  if (tz_train_state_from_json(r->rf.train, r->rf.path, st, o)) return -1;
  /* Refused before any work: the loop would run no step, yet rewrite the checkpoint with a
   * total below its own step ("step 38 of 35"). Equal: nothing to do, also refused. A run
   * resumed without --steps keeps its recorded total. */
  if (asked > 0 && asked <= st->step)
    return tz_err("--steps %d: the run is already at step %d%s; give --steps above %d to continue it", asked,
                  st->step, asked == st->step ? " (nothing to do)" : "", st->step);
  /* A checkpoint at its run's last step is the final one (the loop checkpoints only steps
   * below the total; the final validation precedes that save): nothing is left to do. */
  if (asked == 0 && st->step >= o->steps) {
    /* a --run-dir elsewhere gets a resume's checks first (another run there, a file, not
     * writable, locked): "nothing to do" told a command that could not have run that all was
     * well. A directory made for them is removed again (finish, abandon_run_dir). */
    r->finished = 1; /* (phase_run_dir: checks only, no sweep of the directory's leftovers) */
    if (o->run_dir && !resumes_in(o->run_dir, o->resume) && phase_run_dir(r)) return -1;
    if (!o->quiet)
      fprintf(stderr, "%s: the run is finished (step %d of %d); nothing to do, give --steps above %d to continue it\n",
              o->resume, st->step, o->steps, st->step);
    finish_cut_links(r);
    r->rc = 0;
    return 1;
  }
  if (o->steps != st->recorded_steps)
    tz_train_note(r, "note: --steps %d replaces the run's %d: the cosine schedule is recomputed for the new "
                     "total, so the learning rate changes from here on\n", o->steps, st->recorded_steps);
  if (!o->run_dir) o->run_dir = o->resume;
  o->model = r->rf.cfg;
  r->tok = r->rf.tok;
  r->rf.tok = NULL;
  return 0;
}

/* --init-from: a model's config and weights, fresh optimizer and training state. */
static int phase_init_from(train_run *r) {
  tz_train_opts *o = &r->o;
  if (!o->init_from) return 0;
  if (o->resume)
    return tz_err("--init-from: give --resume (continue a run) or --init-from (start one from a model), not both");
  if (tz_run_open(o->init_from, &r->rf)) return -1;
  o->model = r->rf.cfg;
  if (o->tokenizer) {
    if (tz_tok_load_spec(o->tokenizer, &r->tok)) return -1;
  } else {
    r->tok = r->rf.tok;
    r->rf.tok = NULL;
  }
  if (r->tok && tz_tok_vocab_size(r->tok) > o->model.vocab_size)
    return tz_err("--tokenizer: %s has %d tokens but the model's vocab_size is %d",
                  o->tokenizer ? o->tokenizer : r->rf.path, tz_tok_vocab_size(r->tok), o->model.vocab_size);
  if (!r->tok && !o->train_shards)
    return tz_err("%s: the model has no tokenizer to encode --data %s with; give --tokenizer (or token shards with "
                  "--train-shards)", r->rf.path, o->data);
  if (o->T <= 0) o->T = o->model.max_seq_len < 128 ? o->model.max_seq_len : 128;
  if (o->T > o->model.max_seq_len) /* before any slow work (data preparation) */
    return tz_err("--seq-len: T=%d is above the model's context max_seq_len=%d (%s)", o->T, o->model.max_seq_len,
                  r->rf.path);
  return 0;
}

/* The options checked, and the batch split over the ranks, before any slow work. */
static int phase_options(train_run *r) {
  tz_train_opts *o = &r->o;
  if (!o->run_dir) return tz_err("--run-dir: no run directory given");
  int ls_mode;
  float ls_fixed;
  if (tz_loss_scale_parse(o->loss_scale, &ls_mode, &ls_fixed)) return -1;
  if (parse_steps("--debug-inject-nan", o->debug_inject_nan, &r->inject_nan, &r->n_inject_nan) ||
      parse_steps("--debug-inject-inf", o->debug_inject_inf, &r->inject_inf, &r->n_inject_inf))
    return -1;
  if (!(o->skip_loss_z >= 0) || !(o->skip_norm_z >= 0))
    return tz_err("--skip-loss-z / --skip-norm-z: %g / %g must be >= 0 (0 = off)", o->skip_loss_z, o->skip_norm_z);
  if (o->B < 1 || o->T < 1 || o->grad_accum < 1 || o->steps < 1)
    return tz_err("options: B=%d, T=%d, grad_accum=%d and steps=%d must all be >= 1", o->B, o->T, o->grad_accum,
                  o->steps);
  if (o->resume) { /* the checkpoint's B is the global batch */
    if (o->B % r->W)
      return tz_err("--resume: the run's global batch B=%d does not divide into %d processes", o->B, r->W);
    r->B_rank = o->B / r->W;
  } else {
    r->B_rank = o->B;
    if ((long long)o->B * r->W > 1 << 24)
      return tz_err("--batch-size: B=%d per process × %d processes is too large", o->B, r->W);
    o->B *= r->W;
  }
  /* a batch is one window of B*T+1 tokens of one shard (tz_loader_open refuses it later, after
   * the corpus was prepared) */
  if ((uint64_t)o->B * (uint64_t)o->T + 1 > TZ_SHARD_MAX_TOKENS)
    return tz_err("--batch-size / --seq-len: B*T+1 = %d*%d+1 = %llu tokens per batch is above the shard limit of %zu "
                  "tokens; lower -B or -T", o->B, o->T, (unsigned long long)o->B * (unsigned long long)o->T + 1,
                  TZ_SHARD_MAX_TOKENS);
  if (!o->resume) { /* shape errors now, before any slow work (BPE training, tokenizing) */
    tz_config probe = o->model;
    if (probe.vocab_size <= 0) probe.vocab_size = o->vocab_size;
    if (probe.max_seq_len == 0) probe.max_seq_len = o->T;
    if (tz_config_finalize(&probe)) return -1;
    if (o->T > probe.max_seq_len)
      return tz_err("--seq-len: T=%d is above the model's context max_seq_len=%d", o->T, probe.max_seq_len);
  }
  /* --keep-best needs validation losses: a run on token shards without --val-shards has none */
  if (o->keep_best && o->train_shards && !o->val_shards)
    return tz_err("--keep-best: no validation data (give --val-shards with --train-shards), so checkpoint-best.tzc "
                  "would never be written");
  if (o->keep_best && o->val_every <= 0)
    tz_train_note(r, "note: --keep-best with --val-every 0: only the final validation is measured, so "
                     "checkpoint-best.tzc comes from that one alone\n");
  /* --lr 0 is taken, as PyTorch's optimizers and nanoGPT take it (a run that measures a model's
   * loss over the steps, the schedule's plumbing checked), but the run trains nothing: it was
   * accepted without a word (the session-37 walkthrough). A resumed run keeps its checkpoint's
   * LR (--lr is not taken there) and was warned when it started. */
  if (!o->resume && o->lr == 0)
    tz_train_warn(r, "tezgah: warning: --lr 0: the learning rate is 0 at every step, so the weights stay as they "
                     "are (AdamW's update and weight decay are scaled by it); give --lr above 0 to train\n");
  return 0;
}

/* The backend and the ranks' communicator, before the run directory and any slow work (BPE
 * training, tokenizing): a bad --backend / --precision, or a GPU that is not there, fails first. */
static int phase_backend(train_run *r) {
  tz_train_opts *o = &r->o;
  if (o->profile) setenv("TEZGAH_PROFILE", "1", 1); /* every backend times its ops */
  if (r->W > 1 && !strcmp(o->backend, "cpu") && o->threads == 0) { /* the cores shared by this machine's ranks */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    o->threads = cores / r->denv.local_world > 1 ? (int)(cores / r->denv.local_world) : 1;
  }
  if (r->W > 1 && !strcmp(o->backend, "cuda") && !getenv("TEZGAH_CUDA_DEVICE")) { /* one GPU per rank */
    char dev[16];
    snprintf(dev, sizeof dev, "%d", r->denv.local_rank);
    setenv("TEZGAH_CUDA_DEVICE", dev, 1);
  }
  if (!(r->be = tz_backend_create(o->backend, o->threads, o->precision))) return -1;
  /* the run records where it trained; a resume on another backend or dtype is taken (the
   * checkpoint is fp32 whatever the activations were) but said, since its losses then differ
   * from the uninterrupted run's: beyond the last bits where the dtype changes */
  tz_train_state *st = &r->st;
  st->backend = r->be->name, st->precision = tz_dtype_name(r->be->act);
  if (st->recorded_backend && st->recorded_precision &&
      (strcmp(st->recorded_backend, st->backend) || strcmp(st->recorded_precision, st->precision)))
    tz_train_note(r, "note: the run's last session trained with %s activations on %s; this one resumes it with %s "
                     "on %s, so the losses differ from an uninterrupted run's%s\n", st->recorded_precision,
                  st->recorded_backend, st->precision, st->backend,
                  strcmp(st->recorded_precision, st->precision) ? "" : " in their last bits");
  /* loss scaling: --loss-scale, else as the backend asks; a resumed run continues its S */
  tz_loss_scaler *ls = &st->ls;
  if (tz_loss_scaler_init(ls, o->loss_scale, r->be->needs_loss_scale, ls->scale, ls->clean)) return -1;
  if (tz_comm_create(&r->denv, r->be, &r->comm)) return -1;
  return 0;
}

/* The run directory: never another run's, writable, swept of a killed session's leftovers. */
/* 1 when `path` (a --resume argument: a run directory or a checkpoint file) lies in directory
 * `dir` or is it: the run a resume reads is the run it writes. Both resolved (realpath), so
 * "runs/x", "runs/x/" and "./runs/x/checkpoint_best.tzc" name one run. */
static int resumes_in(const char *dir, const char *path) {
  char *d = realpath(dir, NULL), *p = realpath(path, NULL);
  size_t n = d ? strlen(d) : 0;
  int in = d && p && !strncmp(d, p, n) && (p[n] == '\0' || p[n] == '/' || (n == 1 && d[0] == '/'));
  free(d), free(p);
  return in;
}

static int phase_run_dir(train_run *r) {
  tz_train_opts *o = &r->o;
  /* never train over another run: its checkpoint and metrics would be lost. A resume writes
   * into the run it reads (--resume DIR), or into a --run-dir without a run (--resume X
   * --run-dir NEW: the run continues there); a --run-dir holding another run is refused. */
  char *existing = tz_path_join(o->run_dir, TZ_CKPT_FILE);
  int taken = tz_exists(existing);
  free(existing);
  if (taken && !o->resume)
    return tz_err("%s: already holds a run (%s); continue it with --resume %s or choose another --run-dir",
                  o->run_dir, TZ_CKPT_FILE, o->run_dir);
  if (taken && !resumes_in(o->run_dir, o->resume))
    return tz_err("%s: already holds another run (%s); --resume %s continues into a --run-dir without one "
                  "(or --resume %s continues that run)", o->run_dir, TZ_CKPT_FILE, o->resume, o->run_dir);
  if (r->rank == 0) { /* rank 0 alone writes into the run directory */
    if (tz_mkdirs_track(o->run_dir, &r->created_top)) return -1;
    if (access(o->run_dir, W_OK) != 0)
      return tz_err("%s: run directory is not writable: %s", o->run_dir, strerror(errno));
    /* One process writes a run directory: an exclusive flock(2) on the directory itself, held
     * until this process ends (no lock file to leave behind). Two trainings started together
     * into one directory (the same --run-dir, or the default runs/<date-time> in one second)
     * both passed the check above and interleaved their metrics, one checkpoint surviving
     * (a user's walkthrough, 2026-12-04). The one that finds it locked stops here and leaves the
     * directory alone (the other may have created it and not written into it yet). */
#ifndef __wasi__ /* the wasm build (WASI, no flock): one process in a browser tab or under Node */
    int fd = open(o->run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return tz_err("%s: cannot open the run directory: %s", o->run_dir, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int e = errno;
      close(fd);
      if (e == EWOULDBLOCK) {
        free(r->created_top);
        r->created_top = NULL;
        return tz_err("%s: another tezgah train is writing into this run directory; wait for it to end or choose "
                      "another --run-dir", o->run_dir);
      }
      /* a file system without flock (some network and FUSE ones): trained as before, unguarded */
    } else {
      r->run_dir_fd = fd;
    }
#endif
    /* A previous session killed in the middle of a checkpoint or metrics write left its
     * temporary file ("checkpoint.tzc.tmp.<pid>"): remove such leftovers of dead processes. */
    if (!r->finished) tz_afile_sweep(o->run_dir); /* (a check alone, for a finished run, deletes nothing) */
  }
  r->ckpt_path = tz_path_join(o->run_dir, TZ_CKPT_FILE);
  r->best_path = tz_path_join(o->run_dir, TZ_CKPT_BEST_FILE);
  r->metrics_path = tz_path_join(o->run_dir, "metrics.jsonl");
  /* a stray metrics.jsonl is judged here, before the data is prepared (a refusal after it did
   * that work and left its token cache) */
  if (r->rank == 0 && !r->finished && !metrics_continue(r) && stray_metrics(r)) return -1;
  return 0;
}

/* A size for the recompute note and error: GiB, or MiB below 1 GiB (small models, tests). */
static const char *gib(char *buf, size_t cap, size_t bytes) {
  if (bytes >= ((size_t)1 << 30)) snprintf(buf, cap, "%.2f GiB", bytes / 1073741824.0);
  else snprintf(buf, cap, "%.1f MiB", bytes / 1048576.0);
  return buf;
}

/* --recompute: m->recompute for the arena about to be allocated (src/train/recompute.h). auto
 * sizes what the run will still allocate each way — gradients, AdamW moments, the arena
 * (tz_model_training_bytes) and, where this rank samples at the end, the sample's model (its
 * weights in the activation dtype and its inference arena: it is loaded on a second backend
 * while the training buffers are still held) — against what the backend can still give
 * (be->mem_free, or TEZGAH_DEBUG_MEM_FREE, a test hook). A note says when auto turns recompute
 * on; neither fitting is an error before the training buffers are allocated (and before fresh
 * weights are drawn). The parameters (and a backend's mirror of them) already exist, so the
 * free memory has them out already. */
static int pick_recompute(train_run *r) {
  tz_train_opts *o = &r->o;
  tz_model *m = r->m;
  tz_backend *be = r->be;
  size_t acts_store, acts_rc, free_b = TZ_MEM_UNKNOWN;
  size_t need_store = tz_model_training_bytes(m, r->B_rank, o->T, 0, &acts_store);
  size_t need_rc = tz_model_training_bytes(m, r->B_rank, o->T, 1, &acts_rc);
  size_t sample = 0;
  if (o->sample_tokens > 0 && r->tok && r->rank == 0)
    sample = m->lay.total * tz_dtype_size(be->act) + tz_model_inference_bytes(m, 1);
  need_store += sample, need_rc += sample;
  int dbg = tz_recompute_debug_free(&free_b);
  if (dbg < 0) return -1;
  if (!dbg && be->mem_free) free_b = be->mem_free(be);
  tz_rc_choice c = tz_recompute_decide(o->recompute, need_store, need_rc, free_b);
  char a[32], b[32], f[32], sm[128] = "";
  if (sample)
    snprintf(sm, sizeof sm, " (%s of them the final sample's model; --sample-tokens 0 leaves it out)",
             gib(f, sizeof f, sample));
  if (c == TZ_RC_NEITHER)
    return tz_err("--recompute auto: training needs %s with the activations stored and %s with recompute%s, but "
                  "the %s backend has %s free: %s", gib(a, sizeof a, need_store), gib(b, sizeof b, need_rc), sm,
                  be->name, gib(f, sizeof f, free_b),
                  o->resume        ? "free device memory (the run's batch is fixed on --resume)"
                  : r->B_rank > 1 ? "try a smaller -B (with --grad-accum for the same batch)"
                                  : "try a smaller -T or model, or free device memory");
  m->recompute = c == TZ_RC_RECOMPUTE;
  r->st.recompute_active = m->recompute;
  if (c == TZ_RC_RECOMPUTE && o->recompute != TZ_RECOMPUTE_ON)
    tz_train_note(r, "note: --recompute auto: recompute on: training needs %s with the activations stored, %s with "
                     "recompute%s; the %s backend has %s free\n", gib(a, sizeof a, need_store),
                  gib(b, sizeof b, need_rc), sm, be->name, gib(f, sizeof f, free_b));
  return 0;
}

/* The model: a checkpoint's or a model's weights, or fresh ones; training buffers; a resumed
 * run's AdamW moments and data position. Then metrics.jsonl (rank 0) and the ranks joined:
 * every rank starts from rank 0's weights. */
static int phase_model(train_run *r) {
  tz_train_opts *o = &r->o;
  int fresh = !(o->resume || o->init_from);
  if (!fresh) {
    if (tz_run_load_model(&r->rf, r->be, &r->m)) return -1;
  } else {
    if (tz_model_create(r->be, &o->model, &r->m)) return -1;
  }
  tz_model *m = r->m;
  /* --logits-chunk: -1 auto (the model's 0), 0 the whole batch (any R ≥ B·T), R rows */
  m->logits_rows = o->logits_chunk < 0 ? 0 : o->logits_chunk == 0 ? INT_MAX : o->logits_chunk;
  m->dist_world = r->W;
  m->dist_rank = r->rank;
  m->zero = o->zero && r->W > 1;
  if (pick_recompute(r)) return -1; /* m->recompute: --recompute's choice for this arena */
  /* fresh weights after the memory check (GPT-2 1.5B: seconds of host RNG a "neither fits"
   * refusal need not wait for; the parameter buffer and its mirror exist already, so the
   * check sees the same free memory) */
  if (fresh) tz_model_init_weights(m, o->seed);
  if (tz_model_alloc_training(m, r->B_rank, o->T)) return -1;
  if (o->resume) {
    if (tz_run_load_adam(&r->rf, m)) return -1;
    if (tz_loader_set_pos(r->train, r->st.loader_pos)) {
      tz_err_prefix(r->rf.path);
      return -1;
    }
  }
  tz_run_close(&r->rf);
  /* A resume into its own run directory continues that run's metrics.jsonl. One that continues
   * a run in another --run-dir starts that directory's metrics at the resumed step (README):
   * a fresh file, as a new run's (a directory without a checkpoint holds no run; its stray
   * metrics.jsonl was appended to, its records kept before the resumed ones: the fresh-clone
   * walkthrough, 2026-12-05); one found there is replaced only where it is a tezgah log
   * (stray_metrics, in phase_run_dir). */
  int continues = metrics_continue(r);
  /* the run's own metrics.jsonl deleted: the resume goes on, since the checkpoint holds the
   * state and the log is only its record, but said, since the records before are gone */
  if (r->rank == 0 && continues && !tz_exists(r->metrics_path))
    tz_train_note(r, "note: %s is missing: a new one is started from step %d (the records of steps 1 to %d are "
                     "not recovered; the run resumes exactly from its checkpoint)\n", r->metrics_path,
                  r->st.step + 1, r->st.step);
  r->metrics_made = r->rank == 0 && !tz_exists(r->metrics_path); /* (before the open, which creates it) */
  if (r->rank == 0 && ((continues && metrics_trim(r->metrics_path, r->st.step)) ||
                       !(r->metrics = tz_metrics_open(r->metrics_path, continues))))
    return -1;
  if (r->W > 1) {
    if (tz_train_agree(r, 1)) return -1;
    /* the same seed gives the same weights everywhere; rank 0's are made the truth anyway */
    r->comm->broadcast(r->comm, (tz_slice){m->params, 0}, m->lay.total, 0);
  }
  r->in_loop = 1;
  tz_comm_watchdog_start(r->comm);
  return 0;
}

/* The loop's buffers and clock, and the set-up's lines on stderr (model, training, ranks,
 * backend, memory). */
static int phase_report(train_run *r) {
  tz_train_opts *o = &r->o;
  tz_model *m = r->m;
  tz_backend *be = r->be;
  size_t Nr = (size_t)r->B_rank * o->T; /* tokens per batch of this rank */
  r->N = (size_t)o->B * o->T;
  r->in = tz_malloc(Nr * sizeof *r->in);
  r->tg = tz_malloc(Nr * sizeof *r->tg);
  r->warmup = o->warmup >= 0 ? o->warmup : o->steps / 20;
  /* every check has passed: the run starts, and the set-up's notes are true of it */
  if (r->notes_len) fwrite(r->notes, 1, r->notes_len, stderr);
  if (!o->quiet) {
    /* The model's context (max_seq_len, info's "context") and, where shorter, the T this run
     * trains at: the line said "T=<context>" above the train line's "T=<-T>", and a -T 256
     * run of a 1024-context model read as T=1024 (the walkthroughs). */
    char ctx[64];
    int n_ctx = snprintf(ctx, sizeof ctx, "context=%d", m->cfg.max_seq_len);
    if (o->T < m->cfg.max_seq_len) snprintf(ctx + n_ctx, sizeof ctx - (size_t)n_ctx, " (training at T=%d)", o->T);
    fprintf(stderr, "model: %s, %d layer%s, %d head%s (%d kv), C=%d, d_ff=%d, V=%d, %s: %.2fM params (%016" PRIx64 ")\n",
            tz_arch_name(m->cfg.arch), m->cfg.n_layer, tz_plural(m->cfg.n_layer), m->cfg.n_head,
            tz_plural(m->cfg.n_head), m->cfg.n_kv_head, m->cfg.d_model,
            m->cfg.d_ff, m->cfg.vocab_size, ctx, m->lay.total / 1e6, m->lay.fingerprint);
    fprintf(stderr, "train: %s backend, B=%d T=%d accum=%d, %d step%s%s, lr %.2e, run %s\n", be->name, o->B, o->T,
            o->grad_accum, o->steps, tz_plural(o->steps), r->st.step ? " (resumed)" : "", o->lr, o->run_dir);
    if (r->W > 1)
      fprintf(stderr, "dist: %d processes (%s), B=%d rows each%s\n", r->W, r->comm->kind, r->B_rank,
              m->zero ? ", ZeRO-1: AdamW moments sharded" : "");
    if (o->init_from) fprintf(stderr, "init: weights from %s, fresh optimizer state\n", o->init_from);
    if (!strcmp(be->name, "webgpu")) fprintf(stderr, "webgpu: %s\n", tz_webgpu_describe(be));
    if (r->st.ls.mode != TZ_LS_OFF)
      fprintf(stderr, "loss scale: %s, S = %.0f%s\n", tz_loss_scale_mode_name(r->st.ls.mode), r->st.ls.scale,
              r->st.ls.mode == TZ_LS_DYNAMIC ? " (halved on overflow, doubled after clean steps)" : "");
    size_t Nm = (size_t)m->train.B * m->train.T, lrow = (size_t)m->cfg.padded_vocab * tz_dtype_size(be->act);
    if ((size_t)m->train.chunk < Nm) /* the classifier in row chunks (model.c: classify) */
      fprintf(stderr, "classifier: logits in chunks of %d row%s (%zu chunks for a batch of %zu rows): %.1f MiB instead of %.1f MiB\n",
              m->train.chunk, tz_plural(m->train.chunk), (Nm + m->train.chunk - 1) / m->train.chunk, Nm, m->train.chunk * lrow / 1048576.0,
              Nm * lrow / 1048576.0);
    if (be->act != TZ_F32) fprintf(stderr, "precision: %s activations and weight copies, fp32 master weights, gradients and AdamW\n", tz_dtype_name(be->act));
    if (strcmp(be->name, "cpu") && be->mem_used) { /* the arenas on a GPU backend, in MiB */
      double pb = m->lay.total * 4.0 / 1048576.0, mv = (m->zero ? m->shard_n : m->lay.total) * 8.0 / 1048576.0;
      fprintf(stderr, "memory: params %.1f MiB, grads %.1f, adamw m+v %.1f, activations %.1f (%s%s); %s device memory in use %.1f MiB\n",
              pb, pb, mv, m->train.bytes / 1048576.0, tz_dtype_name(be->act), m->recompute ? ", recomputed" : "",
              be->name, be->mem_used(be) / 1048576.0);
    }
  }
  r->tty = isatty(2) && !o->quiet;
  r->first_step = r->st.step;
  r->t_start = now_s();
  r->prior_elapsed = r->st.elapsed_s;
  r->prof_from = r->st.step; /* --profile: the table covers steps prof_from.. */
  return 0;
}

/* --profile: the table leaves the two warm-up steps out (module loading, GEMM heuristics,
 * scratch sizing) when the run has enough steps. */
static void profile_window(train_run *r) {
  if (r->o.profile && r->st.step - r->first_step == 2 && r->o.steps - r->st.step >= 3) {
    if (r->be->profile_reset) r->be->profile_reset(r->be);
    r->prof_from = r->st.step;
  }
}

/* Every --val-every steps: the validation loss before this step (*val_loss, NAN when not
 * due); with --keep-best, checkpoint-best.tzc when it beats the best so far. */
static int periodic_validation(train_run *r, double *val_loss) {
  tz_train_state *st = &r->st;
  *val_loss = NAN;
  if (!r->val || r->o.val_every <= 0 || st->step % r->o.val_every != 0) return 0;
  double tv = now_s();
  *val_loss = run_validation(r);
  r->val_dt = now_s() - tv;
  st->last_val = *val_loss;
  st->last_val_step = st->step;
  if (r->o.keep_best && st->step > 0 && *val_loss < st->best_val) {
    /* the model now is the state after st.step steps: a complete training checkpoint */
    st->best_val = *val_loss;
    st->elapsed_s = r->prior_elapsed + (now_s() - r->t_start);
    int sr = tz_train_save(r->best_path, r->m, r->tok, st, r->train, r->comm);
    if (tz_train_agree(r, sr == 0)) return -1;
  }
  return 0;
}

/* Zeroed gradients, then grad_accum × (forward, loss, backward) of this rank's rows: *loss
 * is the mean over the micro-batches; the gradients are S times the true ones (the loss
 * scale, 1 when off). --debug-inject-nan / -inf poison the first one. */
static int accumulate(train_run *r, double *loss) {
  tz_train_opts *o = &r->o;
  tz_model *m = r->m;
  int step = r->st.step + 1;
  tz_model_zero_grads(m);
  *loss = 0;
  for (int a = 0; a < o->grad_accum; a++) {
    if (tz_loader_next_rows(r->train, r->rank * r->B_rank, r->B_rank, r->in, r->tg)) return -1;
    if (a == 0 && has_step(r->inject_inf, r->n_inject_inf, step)) m->debug_poison_acts = 1;
    /* 1/W: the ranks' gradients are summed, so each contributes its mean over W; S, a power
     * of two, scales the seed exactly (S / x == S · (1 / x) in binary floating point) */
    *loss += tz_model_train_micro(m, r->in, r->tg, r->st.ls.scale / ((float)o->grad_accum * (float)r->W));
    if (a == 0 && has_step(r->inject_nan, r->n_inject_nan, step)) /* through the backend's fill op */
      r->be->fill(r->be, (tz_slice){m->grads, 0}, NAN, m->ranges[0].n, TZ_F32);
  }
  *loss /= o->grad_accum;
  return 0;
}

/* The gradient norm. Data parallel: the ranks' gradients summed, and the loss (*loss) and
 * stop requests (*stop_sig) with them, so that every rank decides the same. */
static double reduce_grads(train_run *r, double *loss, int *stop_sig) {
  tz_model *m = r->m;
  tz_comm *comm = r->comm;
  *stop_sig = tz_stop_pending();
  if (r->W == 1) return tz_model_grad_norm(m);
  /* sum the gradients (ZeRO-1: only this rank's shard is needed); the norm from each
   * rank's shard of the sum; loss and stop requests summed alongside, so every rank
   * takes the same decisions (skip, clip, stop) from the same numbers */
  if (m->zero) comm->reduce_scatter(comm, (tz_slice){m->grads, 0}, m->shard_n);
  else tz_comm_allreduce(comm, (tz_slice){m->grads, 0}, m->shard_n);
  size_t first, n;
  tz_model_shard(m, &first, &n);
  double v[3] = {*loss, tz_model_grad_sumsq(m, first, n), tz_stop_pending() ? 1.0 : 0.0};
  tz_comm_sum_f64(comm, v, 3);
  *loss = v[0] / r->W;
  double norm = sqrt(v[1]);
  int sig = tz_stop_pending();
  *stop_sig = v[2] > 0 ? (sig ? sig : SIGTERM) : 0;
  tz_comm_progress();
  /* tests: TEZGAH_DEBUG_KILL="RANK:STEP" kills that rank there, "RANK:STEP:stop" stops it
   * (SIGSTOP: a hung peer, for the watchdog) */
  const char *kr = getenv("TEZGAH_DEBUG_KILL");
  int krank, kstep;
  if (kr && sscanf(kr, "%d:%d", &krank, &kstep) == 2 && krank == r->rank && kstep == r->st.step + 1)
    raise(strstr(kr, ":stop") ? SIGSTOP : SIGKILL);
  return norm;
}

/* Why this step is skipped (written into why[cap] where needed), or NULL: a non-finite loss
 * or norm, or a z-score above --skip-loss-z / --skip-norm-z; an accepted step's loss and norm
 * join the z-score windows. */
static const char *skip_reason(train_run *r, double loss, double norm, char *why, size_t cap) {
  tz_train_opts *o = &r->o;
  tz_train_state *st = &r->st;
  const char *skip = !isfinite(loss) ? "non-finite loss" : !isfinite(norm) ? "non-finite grad norm" : NULL;
  if (!skip && o->skip_loss_z > 0) {
    double z = tz_outlier_z(&st->loss_win, loss);
    if (z > o->skip_loss_z) snprintf(why, cap, "loss z-score %.2f > %g", z, o->skip_loss_z), skip = why;
  }
  if (!skip && o->skip_norm_z > 0) {
    double z = tz_outlier_z(&st->norm_win, norm);
    if (z > o->skip_norm_z) snprintf(why, cap, "grad norm z-score %.2f > %g", z, o->skip_norm_z), skip = why;
  }
  if (!skip && (o->skip_loss_z > 0 || o->skip_norm_z > 0)) {
    tz_outlier_push(&st->loss_win, loss);
    tz_outlier_push(&st->norm_win, norm);
  }
  return skip;
}

/* The AdamW update with the gradients clipped to --grad-clip and unscaled by the step's loss
 * scale S (norm is the unscaled norm; ZeRO-1: each rank updates its shard, then the
 * parameters are gathered), or the skip counted and said (with the new S when it changed). */
static int update(train_run *r, float lr, double loss, double norm, float S, const char *skip) {
  tz_train_opts *o = &r->o;
  tz_train_state *st = &r->st;
  if (skip) {
    char lsw[64] = "";
    if (st->ls.scale != S) snprintf(lsw, sizeof lsw, "; loss scale %.0f -> %.0f", S, st->ls.scale);
    st->skipped++;
    if (r->rank == 0)
      fprintf(stderr, "%sstep %d skipped: %s (loss %g, grad norm %g)%s\n", r->tty ? "\n" : "", st->step + 1, skip,
              loss, norm, lsw);
    return 0;
  }
  float clip = o->grad_clip > 0 && norm > o->grad_clip ? (float)(o->grad_clip / (norm + 1e-6)) : 1.0f;
  /* clip / S: exact for a power of two S, so g·S·(clip/S) == g·clip bit for bit */
  tz_adamw_hp hp = {lr, o->beta1, o->beta2, o->eps, o->weight_decay, clip / S, (int)(st->adam_t + 1)};
  if (tz_model_adamw(r->m, &hp)) return -1;
  if (r->m->zero) r->comm->all_gather(r->comm, (tz_slice){r->m->params, 0}, r->m->shard_n);
  st->adam_t++;
  return 0;
}

/* The step's metrics.jsonl record (rank 0 writes it), formatted without allocating.
 * ls_changed: the loss scale after this step is recorded ("loss_scale", also on step 1). */
static int log_step(train_run *r, double loss, float lr, double norm, double tok_s, double val_loss,
                    const char *skip, int ls_changed) {
  char *line = r->line;
  size_t cap = sizeof r->line;
  double elapsed = now_s() - r->t_start;
  size_t len = (size_t)snprintf(line, cap, "{\"step\":%d", r->st.step + 1);
  len += put_num(line + len, cap - len, "loss", loss);
  len += put_num(line + len, cap - len, "lr", lr);
  len += put_num(line + len, cap - len, "grad_norm", norm);
  len += put_num(line + len, cap - len, "tok_per_s", round(tok_s));
  len += put_num(line + len, cap - len, "elapsed_s", r->prior_elapsed + elapsed);
  if (isfinite(val_loss)) len += put_num(line + len, cap - len, "val_loss", val_loss);
  if (skip) len += snprintf(line + len, cap - len, ",\"skipped\":true,\"reason\":\"%s\"", skip);
  if (ls_changed || (r->st.step == 0 && r->st.ls.mode != TZ_LS_OFF))
    len += put_num(line + len, cap - len, "loss_scale", r->st.ls.scale);
  len += snprintf(line + len, cap - len, "}");
  return r->metrics && tz_metrics_write_line(r->metrics, line, len) ? -1 : 0;
}

/* The progress line of step index `step` (its line says step+1). after_val: printed after the
 * validation of the model after that step (its duration is no longer ahead, for the ETA). */
static void print_progress(train_run *r, int step, double loss, int after_val) {
  tz_train_opts *o = &r->o;
  int k = r->n_recent < RECENT ? r->n_recent : RECENT, left = o->steps - step - 1;
  double sum_dt = 0;
  for (int i = 0; i < k; i++) sum_dt += r->recent[i];
  int ve = o->val_every, done = step + after_val; /* validations left: after state `done`, and the final one */
  int vals_left = r->val && ve > 0 ? (o->steps - 1) / ve - done / ve + 1 : 0;
  /* the last step's line says 0: what follows (final validation, checkpoint) is reported by the done line */
  double eta = left > 0 ? sum_dt / k * left + r->val_dt * vals_left : 0;
  char pl[160];
  /* The val column: on every line of a run that validates every ve steps (a resumed one
   * repeating its checkpoint's last validation until the next); with --val-every 0, on the
   * last line alone, held for the final validation (after_val). A resumed --val-every 0 run
   * showed its checkpoint's last validation (the session before's final one, restored into
   * last_val) on every line up to the end, stale beside the done line's new final val loss
   * (the session-36 walkthrough). The bar's first sizing counts the column wherever a line
   * will show one (else the line that gains it narrows the bar: 22 -> 21 columns, session
   * 34). The val step's digits: at most those of the last step, the final validation's. */
  int vals = ve > 0 ? (r->val || isfinite(r->st.last_val)) : r->val != NULL;
  double val = ve > 0 || after_val ? r->st.last_val : NAN;
  int val_digits = vals ? (int)log10(o->steps) + 1 : 0;
  progress_line(pl, sizeof pl, step + 1, o->steps, loss, (double)r->N * o->grad_accum * k / sum_dt, eta, val,
                r->st.last_val_step, val_digits, &r->bar_w);
  fprintf(stderr, "%s%s%s", r->tty ? "\r" : "", pl, r->tty ? "\033[K" : "\n");
}

/* The step's time joins the recent ones; the progress line, on a terminal every step (redrawn
 * in place), else every --log-every steps, the session's first (also after a --resume) and the
 * run's last (with the final validation). The val column is the last
 * validation loss with the step of the model it measured. A validation runs on the model
 * after step N (every --val-every steps, at the start of the next turn; the final one after
 * the last step), so line N is held until it is done and shows "val X@N", as nanoGPT's
 * "step N: ... val loss" and llm.c's val line after step N do: printed at once, line N would
 * show the validation --val-every steps older, and X@N would first appear on a later line. */
static void progress(train_run *r, double loss, double dt) {
  tz_train_opts *o = &r->o;
  int step = r->st.step;
  r->recent[r->n_recent++ % RECENT] = dt;
  if (o->quiet || !(r->tty || (step + 1) % o->log_every == 0 || step == r->first_step || step + 1 == o->steps)) return;
  if (r->val && ((o->val_every > 0 && (step + 1) % o->val_every == 0) || step + 1 == o->steps)) {
    r->held = 1, r->held_step = step, r->held_loss = loss;
    return;
  }
  print_progress(r, step, loss, 0);
}

/* The held line, if any (after_val: its validation is done, the val column shows it). */
static void release_progress(train_run *r, int after_val) {
  if (!r->held) return;
  r->held = 0;
  print_progress(r, r->held_step, r->held_loss, after_val);
}

/* The end of the progress lines: the held one, and on a terminal the newline that ends the
 * line redrawn in place (once). */
static void end_progress(train_run *r, int after_val) {
  release_progress(r, after_val);
  if (r->tty && !r->tty_ended) fprintf(stderr, "\n");
  r->tty_ended = 1;
}

/* A checkpoint of the state after this step (the step counted, and wall time so far). */
static int checkpoint_next(train_run *r) {
  r->st.step++;
  r->st.elapsed_s = r->prior_elapsed + (now_s() - r->t_start);
  return tz_train_save_and_mark(r->ckpt_path, r->o.run_dir, &r->latest_marked, r->m, r->tok, &r->st, r->train, r->comm);
}

/* Every --ckpt-every steps, short of the last (the end checkpoints that one). */
static int periodic_checkpoint(train_run *r) {
  if (r->o.ckpt_every <= 0 || (r->st.step + 1) % r->o.ckpt_every != 0 || r->st.step + 1 >= r->o.steps) return 0;
  int src = checkpoint_next(r);
  r->st.step--;
  return tz_train_agree(r, src == 0);
}

/* --stop-after or a stop request (stop_sig, or a signal to this one process up to now),
 * short of the last step: a checkpoint, a line saying how to continue, and the session ends
 * (1) with 128+signal, or 0 for --stop-after. */
static int stop_early(train_run *r, int stop_sig) {
  tz_train_opts *o = &r->o;
  tz_train_state *st = &r->st;
  int stop_now = o->stop_after > 0 && st->step + 1 - r->first_step >= o->stop_after;
  if (r->W == 1) stop_sig = tz_stop_pending(); /* one process: a signal up to now counts */
  if (!(stop_now || stop_sig) || st->step + 1 >= o->steps) return 0;
  release_progress(r, 0); /* this session does not validate the model after this step */
  if (tz_train_agree(r, checkpoint_next(r) == 0)) return -1;
  if (stop_sig && r->rank == 0)
    fprintf(stderr, "%s%s: stopped at step %d with a checkpoint; continue with --resume %s\n", r->tty ? "\n" : "",
            stop_sig == SIGINT ? "interrupted" : "terminated", st->step, o->run_dir);
  else if (!o->quiet)
    fprintf(stderr, "%sstopped after %d step%s of this session at step %d; continue with --resume %s\n",
            r->tty ? "\n" : "", o->stop_after, tz_plural(o->stop_after), st->step, o->run_dir);
  r->rc = stop_sig ? 128 + stop_sig : 0;
  return 1;
}

/* The loop: one optimizer step per turn (see the top of this file). */
static int phase_loop(train_run *r) {
  tz_train_opts *o = &r->o;
  tz_train_state *st = &r->st;
  for (; st->step < o->steps; st->step++) {
    double val_loss, loss, norm;
    int stop_sig, e;
    char why[96];
    profile_window(r);
    if (periodic_validation(r, &val_loss)) return -1;
    release_progress(r, 1); /* the previous step's line, with this validation */
    double t0 = now_s();
    float lr = tz_lr_at(st->step, o->steps, r->warmup, o->lr, o->min_lr_frac);
    if (accumulate(r, &loss)) return -1;
    float S = st->ls.scale; /* this step's loss scale (1 when off) */
    norm = reduce_grads(r, &loss, &stop_sig) / S;
    const char *skip = skip_reason(r, loss, norm, why, sizeof why);
    /* an overflow (non-finite loss or norm) halves a dynamic S; a clean step counts towards
     * doubling it; a z-score skip leaves it */
    int overflow = !isfinite(loss) || !isfinite(norm);
    int ls_changed = (!skip || overflow) && tz_loss_scaler_update(&st->ls, overflow);
    if (update(r, lr, loss, norm, S, skip)) return -1;
    r->be->sync(r->be);
    double dt = now_s() - t0;
    r->tokens_done += (double)r->N * o->grad_accum; /* all ranks' tokens */
    r->steps_s += dt;
    if (log_step(r, loss, lr, norm, (double)r->N * o->grad_accum / dt, val_loss, skip, ls_changed)) return -1;
    progress(r, loss, dt);
    if (periodic_checkpoint(r)) return -1;
    if ((e = stop_early(r, stop_sig))) return e;
  }
  return 0;
}

/* The final validation, as a "final" record in metrics.jsonl. */
static int final_validation(train_run *r) {
  if (!r->val) return 0;
  r->st.last_val = run_validation(r);
  r->st.last_val_step = r->st.step;
  cJSON *fin = cJSON_CreateObject();
  cJSON_AddNumberToObject(fin, "step", r->st.step);
  cJSON_AddNumberToObject(fin, "val_loss", r->st.last_val);
  cJSON_AddTrueToObject(fin, "final");
  int wrc = r->metrics ? tz_metrics_write(r->metrics, fin) : 0;
  cJSON_Delete(fin);
  return wrc ? -1 : 0;
}

/* The final checkpoint (also checkpoint-best.tzc when the final validation is the best). */
static int final_checkpoint(train_run *r, double total) {
  tz_train_state *st = &r->st;
  st->elapsed_s = r->prior_elapsed + total;
  int final_best = r->o.keep_best && r->val && st->last_val < st->best_val;
  if (final_best) st->best_val = st->last_val;
  int src = tz_train_save_and_mark(r->ckpt_path, r->o.run_dir, &r->latest_marked, r->m, r->tok, st, r->train, r->comm);
  if (!src && final_best && r->rank == 0) src = tz_train_link_as(r->ckpt_path, r->o.run_dir, TZ_CKPT_BEST_FILE);
  return tz_train_agree(r, src == 0);
}

/* Peak host (and device) memory of every rank, printed by rank 0. Collective. */
static void report_rank_memory(train_run *r) {
  tz_backend *be = r->be;
  int W = r->W;
  double mem[2] = {peak_rss_mib(), be->mem_peak ? be->mem_peak(be) / 1048576.0 : 0.0};
  double *all = tz_malloc((size_t)W * 2 * sizeof *all);
  r->comm->allgather_f64(r->comm, mem, all, 2);
  if (!r->o.quiet) {
    fprintf(stderr, "peak memory per rank (MiB, host%s%s):", be->mem_peak ? " / " : "", be->mem_peak ? be->name : "");
    for (int k = 0; k < W; k++) {
      if (be->mem_peak) fprintf(stderr, " %d: %.0f / %.0f%s", k, all[2 * k], all[2 * k + 1], k + 1 < W ? "," : "");
      else fprintf(stderr, " %d: %.0f%s", k, all[2 * k], k + 1 < W ? "," : "");
    }
    fprintf(stderr, "\n");
  }
  free(all);
}

/* A short sample from the final checkpoint (rank 0, --sample-tokens). */
static int final_sample(train_run *r) {
  tz_train_opts *o = &r->o;
  if (o->sample_tokens <= 0 || r->rank != 0) return 0;
  if (!r->tok) { /* shards without --tokenizer: nothing to decode the ids with (it was skipped without a word) */
    if (!o->quiet)
      fprintf(stderr, "note: no closing sample: the run has no tokenizer to decode with (--train-shards without "
                      "--tokenizer); give --tokenizer gpt2 or the shards' tokenizer file when training, or sample "
                      "now with tezgah sample %s --tokenizer SPEC\n", o->run_dir);
    return 0;
  }
  tz_sample_opts so;
  tz_sample_opts_default(&so);
  so.model = r->ckpt_path;
  so.backend = o->backend;
  so.threads = o->threads;
  so.tokens = o->sample_tokens;
  so.seed = o->seed;
  if (!o->quiet) fprintf(stderr, "sample (temperature %.1f, top-k %d):\n", so.temperature, so.top_k);
  return tz_sample(&so, stdout) ? -1 : 0;
}

/* The end of a run that reached its last step: the profile table, final validation and
 * checkpoint, memory and the done line, a sample. */
static int phase_end(train_run *r) {
  tz_train_opts *o = &r->o;
  tz_train_state *st = &r->st;
  double total = now_s() - r->t_start;
  /* The table before the final validation, which is not in it; the last step's line stays
   * held for that validation (end_progress below), so it shows the final val loss as the done
   * line and metrics.jsonl do. It was released here, before the validation, and repeated the
   * one before ("6/6 ... | val 5.6246@3" beside "final val loss 5.5643", the session-37
   * walkthrough). On a terminal the line redrawn in place ends first (the table starts a line
   * of its own) without ending the progress lines: the last one is drawn after the table. */
  if (o->profile && r->tty && !r->tty_ended) fprintf(stderr, "\n");
  if (o->profile && r->rank == 0) { /* validation passes included; warm-up steps left out when there are enough */
    if (!o->quiet && r->prof_from > r->first_step)
      fprintf(stderr, "profile of steps %d..%d (warm-up steps left out)\n", r->prof_from + 1, st->step);
    else if (!o->quiet) /* too few steps to leave the warm-up (first compiles, caches) out */
      fprintf(stderr, "profile of steps %d..%d (warm-up included: too few steps to leave it out; validation passes "
                      "counted)\n", r->prof_from + 1, st->step);
    if (r->be->profile_print) r->be->profile_print(r->be, st->step - r->prof_from);
  }
  int e = final_validation(r);
  end_progress(r, 1); /* the last step's line, with the final validation */
  if (e || final_checkpoint(r, total)) return -1;
  if (r->W > 1) report_rank_memory(r);
  if (!o->quiet) {
    char vl[64] = "no validation";
    if (r->val) snprintf(vl, sizeof vl, "final val loss %.4f (ppl %.2f)", r->st.last_val, exp(r->st.last_val));
    /* the steps' own throughput, as the progress line's: the session's wall time also holds
     * validation passes, checkpoint writes and the metrics and progress lines (until 2026-12-03
     * the figure divided by it, and a run that validated often looked slower than it trained) */
    double other = now_s() - r->t_start - r->steps_s;
    char sess[48] = ""; /* a resumed session: how many of the run's steps it trained */
    if (r->first_step > 0) snprintf(sess, sizeof sess, " (%d in this session)", st->step - r->first_step);
    fprintf(stderr, "done: %d step%s%s, %.0f tok/s in this session's steps (%.2f s; validation, checkpoints: %.2f s more), "
            "%s, %d skipped; checkpoint %s\n", st->step, tz_plural(st->step), sess,
            r->steps_s > 0 ? r->tokens_done / r->steps_s : 0.0, r->steps_s, other > 0 ? other : 0.0, vl, st->skipped,
            r->ckpt_path);
  }
  tz_comm_watchdog_stop(); /* the collectives are over (rank 0 may sample for a while) */
  if (final_sample(r)) return -1;
  r->rc = 0;
  return 0;
}

/* A stop request (SIGINT / SIGTERM) before the loop's first step, e.g. Ctrl-C while the
 * corpus is prepared: nothing has been trained, so there is nothing to checkpoint. The session
 * ends as a failure (-1 and one line): finish() removes the run directory it made, and data
 * preparation leaves no partial cache entry (temporary names are renamed only when complete).
 * 0 when no stop is pending. */
static int stopped_before_loop(train_run *r) {
  tz_train_opts *o = &r->o;
  int sig = tz_stop_pending();
  if (!sig) return 0;
  const char *name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
  if (o->resume) {
    if (r->st.step > 0)
      return tz_err("%s: interrupted by %s before step %d; the run is unchanged", o->resume, name, r->st.step + 1);
    return tz_err("%s: interrupted by %s before training; the run is unchanged", o->resume, name);
  }
  if (r->preparing && !r->prep.train_path)
    return tz_err("%s: interrupted by %s while preparing the data, before step 1; no run was made", o->data, name);
  return tz_err("interrupted by %s before step 1; no run was made", name);
}

/* A run that failed before its first checkpoint: the metrics.jsonl this session created (none
 * was there: never a resumed run's own, nor a user's file) and the run directory it made, with
 * the parents it needed, if empty. Until 2026-12-06 the file went only with a directory made
 * by a new run: a resume into a new --run-dir left both, a run into an existing directory its
 * metrics.jsonl. A checkpoint there (saved, its tokenizer file then failed: latest_marked
 * unset) keeps the log. finish() calls it on a failure and after a finished run's --run-dir
 * check (phase_resume); abandon_at_exit on a fatal error raised inside an op (a WebGPU
 * validation error, a lost GPU: tz_fatal, whose CLI handler calls exit(1)), which never
 * returns to finish() -- such a run left its directory with an empty metrics.jsonl (the
 * fresh-clone walkthrough of 2026-12-05). */
static void abandon_run_dir(train_run *r) {
  if (r->latest_marked) return;
  if (r->metrics_made && !tz_exists(r->ckpt_path)) unlink(r->metrics_path);
  if (r->created_top) tz_rmdirs_upto(r->o.run_dir, r->created_top);
}
static train_run *live_run; /* tz_train's session while its phases run */
static void abandon_at_exit(void) {
  if (live_run) abandon_run_dir(live_run);
}

/* Whatever the phases reached: the session's peak memory, a failure told to the other
 * ranks, a run directory that never got a checkpoint removed, everything freed. */
static int finish(train_run *r) {
  tz_train_opts *o = &r->o;
  tz_backend *be = r->be;
  int rc = r->rc;
  if (rc == 0 && !o->quiet && !r->finished) { /* peak memory of the whole session (the sample included) */
    fprintf(stderr, "peak host memory: %.1f MiB", peak_rss_mib());
    if (be && be->mem_peak) fprintf(stderr, "; %s device memory: %.1f MiB peak", be->name, be->mem_peak(be) / 1048576.0);
    fprintf(stderr, "\n");
  }
  tz_stop_clear();
  if (r->comm && r->W > 1 && rc < 0 && !r->agreed) {
    /* a failure of this rank alone: in the set-up the others wait at a tz_comm_agree (join
     * it with "failed"); later they may wait in any collective (abort) */
    if (r->in_loop) r->comm->abort(r->comm);
    else if (tz_comm_agree(r->comm, 0)) {}
  }
  if (rc < 0 && r->W > 1 && r->rank > 0) {
    char who[32];
    snprintf(who, sizeof who, "rank %d", r->rank);
    tz_err_prefix(who);
  }
  tz_run_close(&r->rf);
  tz_metrics_close(r->metrics);
  if (rc < 0 || r->finished) abandon_run_dir(r);
  free(r->created_top);
  if (r->run_dir_fd >= 0) close(r->run_dir_fd); /* (the lock goes with it) */
  tz_loader_free(r->train);
  tz_loader_free(r->val);
  tz_model_free(r->m);
  tz_comm_free(r->comm);
  if (be) be->destroy(be);
  tz_tok_free(r->tok);
  tz_prepared_free(&r->prep);
  tz_train_state_free(&r->st);
  free(r->in);
  free(r->tg);
  free(r->inject_nan);
  free(r->inject_inf);
  free(r->notes);
  free(r->ckpt_path);
  free(r->best_path);
  free(r->metrics_path);
  free(r->cache_root);
  return rc;
}

int tz_train(const tz_train_opts *opts_in) {
  static int (*const phases[])(train_run *) = {
      phase_resume, phase_init_from, phase_options, phase_backend, phase_run_dir, tz_train_phase_data,
      phase_model,  phase_report,    phase_loop,    phase_end,
  };
  train_run r;
  memset(&r, 0, sizeof r);
  r.run_dir_fd = -1;
  static int hooked;
  if (!hooked) hooked = atexit(abandon_at_exit) == 0;
  live_run = &r;
  if (phase_start(&r, opts_in) == 0)
    for (size_t i = 0; i < sizeof phases / sizeof *phases; i++) {
      /* the loop checks stop requests after every step; before it, one ends the session as it
       * is (data preparation polls for it too: core/stop.h) */
      int before_loop = phases[i] != phase_end;
      if ((before_loop && stopped_before_loop(&r)) || phases[i](&r)) {
        if (before_loop && phases[i] != phase_loop) stopped_before_loop(&r);
        break;
      }
    }
  live_run = NULL; /* finish() cleans up from here */
  return finish(&r);
}
