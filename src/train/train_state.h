/* The training state a checkpoint carries for an exact resume: progress counters, the data
 * position and the options that shape the loss sequence (batch, schedule, optimizer, data). */
#ifndef TZ_TRAIN_TRAIN_STATE_H
#define TZ_TRAIN_TRAIN_STATE_H
#include <cjson/cJSON.h>
#include <stdint.h>

#include "data/dataloader.h"
#include "train/loss_scale.h"
#include "train/outlier.h"
#include "tezgah.h"

typedef struct {
  int step;          /* completed optimizer steps */
  int64_t adam_t;    /* AdamW updates applied (skipped steps do not count) */
  int skipped;       /* steps skipped (non-finite loss / grad norm, z-score spikes) */
  tz_outlier loss_win, norm_win; /* z-score windows (saved only when a skip rule is on) */
  double elapsed_s;  /* training wall time before this session */
  tz_loader_pos loader_pos;
  const tz_train_opts *opts; /* options to record (borrowed) */
  char *train_shards, *val_shards; /* restored shard lists (owned) */
  int recorded_steps;              /* --steps the checkpoint was trained with (resume) */
  int recorded_keep;               /* its --keep (0: none), whatever --keep is given now (resume) */
  double best_val;                 /* lowest validation loss so far (--keep-best), +inf: none */
  /* the last validation: its loss (NAN: none yet) and the step of the model it measured; saved
   * ("last_val_loss", "last_val_step") so that a resumed run's progress line repeats it until
   * its next validation, as an uninterrupted run's does (absent in older checkpoints: NAN) */
  double last_val;
  int last_val_step;
  /* loss scaling (loss_scale.h): the scaler of the run; saved when dynamic ("loss_scale",
   * "loss_scale_clean"). from_json leaves a checkpoint's values in ls.scale / ls.clean (scale
   * 0: absent, an old checkpoint or a run without dynamic scaling) for tz_loss_scaler_init. */
  tz_loss_scaler ls;
  char *loss_scale_opt; /* the run's --loss-scale as recorded (owned; a resume without the flag
                          keeps it) */
  /* --recompute: the mode is opts' "recompute" ("auto", "on", "off"; a resume without the flag
   * keeps it; absent in older checkpoints: auto); recompute_active, saved as "recompute_active",
   * is this session's arena (1: recomputed). A resumed session chooses again (auto may decide
   * otherwise on another device or batch of free memory): the losses are bit-identical either
   * way, so the run stays exact (but for the last bits where CUDA's forward GeLU epilogue runs
   * without recompute: GPT-2 in bf16 by default, TEZGAH_CUDA_GELU_EPI). */
  int recompute_active;
  /* The session's backend and activation dtype (be->name, tz_dtype_name(be->act): "fp32",
   * "bf16", "f16"; static strings set by train.c once the backend exists; NULL: not recorded),
   * saved as "backend" and "precision": a session record, not options (a resume may run on
   * another backend or --precision: supported, but the losses differ from an uninterrupted
   * run's, and train.c says so when the record differs). from_json leaves a checkpoint's in
   * recorded_backend / recorded_precision (owned; NULL: absent, in checkpoints older than these
   * fields (added 2026-12-05): no note then). */
  const char *backend, *precision;
  char *recorded_backend, *recorded_precision;
  /* A --data run's corpus and the shards prepared from it, saved as "data_prep" (absent in
   * --train-shards runs and in checkpoints written before 2026-12-05): what --resume needs to
   * prepare the shards again, byte-identical and checked so, when the cache was deleted
   * (train_data.c: resume_shards). */
  struct {
    int has;               /* 1: recorded (the fields below are set) */
    char *corpus;          /* the --data list, relative entries made absolute (owned) */
    int vocab_size;        /* --vocab-size asked for (of the BPE trained on the corpus) */
    float val_fraction;    /* --val-fraction */
    int run_tok;           /* 1: encoded with the run's tokenizer (--init-from), no BPE trained */
    uint64_t corpus_xxh64; /* of the corpus text as joined (tz_prep_corpus_xxh64) */
    uint64_t train_xxh64, val_xxh64;  /* of the shard files, header included (tz_prep_file_xxh64) */
    uint64_t train_bytes, val_bytes;  /* their sizes */
  } prep;
} tz_train_state;

void tz_train_state_init(tz_train_state *st, const tz_train_opts *o);
cJSON *tz_train_state_to_json(const tz_train_state *st);
/* The names of the training options ("opts") that tz_train_opts keeps as float32 (written as
 * the doubles of the floats), NULL-terminated: what `tezgah info` prints in their shortest
 * float form. */
extern const char *const tz_train_opts_f32_names[];
/* Restore counters and the recorded options into *o (o->steps is kept when > 0 and larger
 * than the recorded step, so a finished run can be extended). Errors name `where`. */
int tz_train_state_from_json(const cJSON *j, const char *where, tz_train_state *st, tz_train_opts *o);
void tz_train_state_free(tz_train_state *st);

#endif
