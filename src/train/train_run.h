/* The state of one training session, shared by tz_train's phases (train.c: the session, the
 * loop, the end; train_data.c: the data phase). Internal to src/train. */
#ifndef TZ_TRAIN_TRAIN_RUN_H
#define TZ_TRAIN_TRAIN_RUN_H
#include <stddef.h>
#include <stdint.h>

#include "checkpoint/run_ckpt.h"
#include "data/dataloader.h"
#include "data/metrics.h"
#include "dist/comm.h"
#include "train/data_prep.h"
#include "train/train_state.h"
#include "tezgah.h"

#define RECENT 16 /* tok/s and the ETA come from the last RECENT steps' times */

/* One training session (train.c, tz_train): start → resume | init-from → options → backend and ranks → run
 * directory → data (shards, tokenizer) → model config → loaders → model → metrics → ranks
 * joined → report → the loop → the end, then finish() frees what was made. Every phase
 * reads and fills the run below and returns 0 to go on, -1 for an error (tz_last_error), or
 * 1 for an early end whose result is already in rc. */
typedef struct {
  tz_train_opts o;   /* the options as they end up (a resumed run's: the checkpoint's) */
  tz_train_state st; /* what the checkpoint carries (st.opts points to o) */
  int rc;            /* tz_train's result: -1 until a phase settles it */
  int finished;      /* a resumed run with nothing left to do */
  /* data parallelism: W ranks of B_rank rows each; o.B is the global batch W·B_rank (what
   * the checkpoint records, so a run resumes with any W that divides it). agreed: this
   * rank's failure is known to the others (tz_comm_agree); in_loop: past the set-up. */
  tz_dist_env denv;
  int W, rank, B_rank, agreed, in_loop;
  tz_comm *comm;
  tz_backend *be;
  tz_model *m;
  tz_tokenizer *tok;
  tz_run_file rf;   /* the checkpoint (--resume) or model (--init-from) opened */
  tz_prepared prep; /* a --data corpus's cached shards and tokenizer */
  int preparing;    /* 1 from the start of the corpus's preparation until it is done */
  int resume_given_shards; /* --resume with --train-shards (1) / --val-shards (2): resume_shards checks them */
  tz_loader *train, *val;
  tz_metrics *metrics;
  int32_t *in, *tg; /* this rank's batch rows: B_rank × T inputs and targets */
  int *inject_nan, *inject_inf, n_inject_nan, n_inject_inf; /* --debug-inject-* steps */
  char *ckpt_path, *best_path, *metrics_path, *cache_root;
  char *created_top; /* the shallowest directory of o.run_dir this run created */
  int run_dir_fd;    /* rank 0: the run directory, flock'ed for this process (-1: none) */
  int latest_marked;
  int metrics_made;  /* rank 0 created metrics.jsonl (none was there): abandon_run_dir removes it */
  /* the set-up's notes (tz_train_note), held until every check has passed */
  char *notes;
  size_t notes_len;
  /* the loop's clock and counters */
  size_t N; /* tokens per batch, all ranks */
  int warmup, tty, first_step, prof_from, n_recent;
  /* the progress line of step index held_step (held != 0) waits for the validation of the
   * model after that step, so that line N shows "val X@N" (below, progress) */
  int held, held_step, tty_ended;
  int bar_w; /* the progress bar's width, fixed by the first line (progress_line) */
  double held_loss;
  /* elapsed_s in checkpoints = wall time of earlier sessions + this session's so far */
  double t_start, prior_elapsed, tokens_done, val_dt;
  double steps_s; /* this session's steps alone (accumulate .. update, synced): the done line's tok/s */
  double recent[RECENT];
  /* After the first step's warm-up (lazily allocated scratch, stdio buffers) a step allocates
   * nothing: the metrics record is formatted into this buffer (tests/test_step_alloc.sh). */
  char line[512];
} train_run;

/* A "note: ..." line of the set-up (--steps replacing the run's total, a resume on another
 * backend, ...; fmt ends with its newline), nothing under --quiet. Held until the run starts
 * (phase_report prints them before its first line): a check after the note may still refuse
 * the run (its directory locked by another training, its shards gone with the corpus changed,
 * a wrong --train-shards), and stderr then held the note of a session that never ran beside
 * the one error line. A refused run prints none of them. */
void tz_train_note(train_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for a warning ("tezgah: warning: ..."): held as the notes are, but printed under
 * --quiet too (it says the run will not do what was likely meant; --quiet drops progress and
 * notes), by rank 0 alone. */
void tz_train_warn(train_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Every rank says whether it is fine: 0 when all are, else -1 (the failure is then known to
 * every rank, so none waits for it). Collective. */
int tz_train_agree(train_run *r, int ok);

/* The data phase (train_data.c): a --data corpus prepared into cached shards (rank 0 first,
 * the other ranks then find them cached) or the token shards given (--resume: the run's,
 * prepared again when the cache is gone), the tokenizer, the model's config from them, and
 * the loaders. 0, or -1 with tz_err (a vocabulary mismatch said as one). */
int tz_train_phase_data(train_run *r);

#endif
