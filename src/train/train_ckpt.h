/* A training run's checkpoints on disk (train_ckpt.c), for tz_train's phases. */
#ifndef TZ_TRAIN_TRAIN_CKPT_H
#define TZ_TRAIN_TRAIN_CKPT_H
#include "checkpoint/run_ckpt.h"
#include "data/dataloader.h"
#include "dist/comm.h"
#include "train/train_state.h"

/* Write the checkpoint at `path` (rank 0 writes; collective for data-parallel runs: call it on
 * every rank; ZeRO-1 moment shards are gathered through the gradient buffer first). The other
 * ranks are not told whether the write worked: callers follow with tz_comm_agree. */
int tz_train_save(const char *path, tz_model *m, const tz_tokenizer *tok, tz_train_state *st, tz_loader *loader,
                  tz_comm *comm);
/* --keep N's rotation for the checkpoint at ckpt_path (step `step`) in run_dir, as after a save:
 * it is also named checkpoint-<step>.tzc and the N newest such names stay (--keep 1: none).
 * keep < 1: nothing. Errors: the link's (one line). */
int tz_train_rotate(const char *run_dir, const char *ckpt_path, int step, int keep);
/* 1 when that rotation has something to do: for keep > 1 the step's name is missing or another
 * file, or more numbered names exist than it keeps (a kill cut it short); 0 otherwise. Reads
 * only. */
int tz_train_rotation_pending(const char *run_dir, const char *ckpt_path, int step, int keep);
/* 1 when <dir>/<name> exists and is another name (a hard link) of the file at `path`, else 0.
 * Reads only. */
int tz_train_is_link_of(const char *dir, const char *name, const char *path);
/* tz_train_save to `path` in run_dir, then (rank 0) the --keep rotation and, once per session
 * (*marked), the run's tokenizer file and runs/latest. */
int tz_train_save_and_mark(const char *path, const char *run_dir, int *marked, tz_model *m, const tz_tokenizer *tok,
                           tz_train_state *st, tz_loader *loader, tz_comm *comm);
/* <dir>/<name> becomes another name (a hard link) of the file at `src`, atomically. 0, or -1
 * with tz_err naming the link. */
int tz_train_link_as(const char *src, const char *dir, const char *name);

#endif
