/* Model checkpoints: what a training run saves and what sample/resume load, on top of the
 * generic section container (checkpoint/ckpt.h).
 *
 * Sections:
 *   "meta"      JSON: {"format":"tezgah-checkpoint","version":1,"config":{...},
 *               "fingerprint":"<16 hex>","n_params":N,"train":{...training state...}}
 *   "tokenizer" the tokenizer in its native format (tz_tok_to_blob), absent when none was used
 *   "params"    N fp32, the flat parameter buffer in layout order (model/layout.h)
 *   "adam_m", "adam_v"  N fp32 each (training checkpoints only)
 * The training state in "meta" holds everything resume needs for a bit-exact continuation:
 * step, AdamW step count, loader position, RNG state and the training options.
 * A checkpoint whose fingerprint differs from the layout its config builds is refused. */
#ifndef TZ_CHECKPOINT_RUN_CKPT_H
#define TZ_CHECKPOINT_RUN_CKPT_H
#include <cjson/cJSON.h>

#include "checkpoint/ckpt.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

#define TZ_CKPT_FILE "checkpoint.tzc"
#define TZ_CKPT_BEST_FILE "checkpoint-best.tzc" /* train --keep-best */

/* Write a checkpoint atomically. train_state may be NULL (inference-only export); the AdamW
 * moments are included when the model has them and train_state is not NULL. */
int tz_run_save(const char *path, tz_model *m, const tz_tokenizer *tok, const cJSON *train_state);
/* The run's tokenizer beside its checkpoint, in its native format (tz_tok_to_blob), written
 * atomically: <run_dir>/tokenizer.json for byte-level BPE (Hugging Face tools read it),
 * <run_dir>/tokenizer.bin for the others (llama2.c's, llm.c's), so that encode / decode
 * --tokenizer RUN_DIR and other tools find it. tok NULL: nothing. Errors: the file's write
 * error ("<path>: write failed: ..."). */
int tz_run_save_tokenizer(const char *run_dir, const tz_tokenizer *tok);
/* Where a moment section's lay.total floats come from: a backend buffer or a host array. */
typedef struct {
  tz_buf *buf;
  const float *host;
} tz_run_src;
/* tz_run_save with the AdamW moments taken from `adam_m` / `adam_v` (data-parallel ZeRO-1:
 * the shards gathered by the caller) instead of the model's m and v. */
int tz_run_save_moments(const char *path, tz_model *m, const tz_tokenizer *tok, const cJSON *train_state,
                        tz_run_src adam_m, tz_run_src adam_v);

typedef struct {
  char *path;           /* the checkpoint file actually opened */
  tz_ckpt *ck;          /* open container (params/moments are read from it) */
  tz_config cfg;
  cJSON *meta;          /* whole meta object (owned) */
  const cJSON *train;   /* meta.train or NULL */
  tz_tokenizer *tok;    /* NULL when the checkpoint has none */
  int format;           /* tz_format (formats/formats.h): TZ_FMT_TEZGAH or a foreign one */
  float *host_params;   /* foreign checkpoints: the parameters in our layout (owned) */
} tz_run_file;

/* Open a checkpoint file, or a run directory holding TZ_CKPT_FILE; validate meta, config and
 * fingerprint; load the tokenizer. Errors name the file, section/field and value.
 * A file that is not a tezgah checkpoint is read as an llm.c or llama2.c checkpoint
 * (formats/formats.h, detected by its header): then there is no tokenizer, no training
 * state and no AdamW moments. A directory without TZ_CKPT_FILE but with config.json is read
 * as a Hugging Face model (formats.h, tz_hf_load), with its tokenizer.json when we read it. */
int tz_run_open(const char *path_or_dir, tz_run_file *rf);
/* tz_run_open for train --resume: a directory must hold TZ_CKPT_FILE. A Hugging Face
 * directory, which tz_run_open reads, has no run to resume (no optimizer or training state):
 * the error says so and points to --init-from, where tz_run_open's own message (shared with
 * sample / eval, which take such a directory) would call config.json the missing piece.
 * file_ok: a checkpoint file is taken too (train --resume FILE --run-dir DIR); without it a
 * file is refused, naming the directory that holds it. A path that is not there is said as
 * --resume's value ("--resume: 'x': no such run directory", "... or checkpoint file" with
 * file_ok). */
int tz_run_open_resume(const char *path_or_dir, int file_ok, tz_run_file *rf);
/* Create a model on `be` with the checkpoint's config and parameters. */
int tz_run_load_model(tz_run_file *rf, tz_backend *be, tz_model **out);
/* Load AdamW moments into a model that has training buffers (ZeRO-1: its shard of them). */
int tz_run_load_adam(tz_run_file *rf, tz_model *m);
void tz_run_close(tz_run_file *rf);
/* Once the parameters are on the backend (tz_run_load_model, then the backend's sync) and no
 * other section will be read: the checkpoint's mapping and a foreign model's host copy are
 * released on a detached thread (rf->ck and rf->host_params become NULL; tz_run_close then
 * frees the rest). Why: a run's checkpoint maps params and both AdamW moments (1.5 GB at GPT-2
 * 124M, every page touched by the checksums), and unmapping it took 54–132 ms on the
 * development VM — work that otherwise lands in the process's exit, after the output, while
 * here it overlaps the decoding. Where no thread can start (the wasm build) nothing changes:
 * they stay until tz_run_close or the exit. */
void tz_run_release_params_async(tz_run_file *rf);

#endif
