#include "train/train_state.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "train/data_prep.h"
#include "train/recompute.h"

void tz_train_state_init(tz_train_state *st, const tz_train_opts *o) {
  memset(st, 0, sizeof *st);
  st->opts = o;
  st->best_val = INFINITY;
  st->last_val = NAN;
}

void tz_train_state_free(tz_train_state *st) {
  free(st->train_shards);
  free(st->val_shards);
  free(st->loss_scale_opt);
  free(st->prep.corpus);
  free(st->recorded_backend);
  free(st->recorded_precision);
  st->prep.corpus = st->recorded_backend = st->recorded_precision = NULL;
  st->train_shards = st->val_shards = NULL;
  st->loss_scale_opt = NULL;
}

/* The options that determine the loss sequence: integer fields, then float fields. */
#define INT_FIELDS(X, o)                                                                   \
  X(B, o) X(T, o) X(grad_accum, o) X(steps, o) X(warmup, o) X(val_every, o) X(val_batches, o) \
  X(ckpt_every, o)
#define FLOAT_FIELDS(X, o)                                                               \
  X(lr, o) X(min_lr_frac, o) X(beta1, o) X(beta2, o) X(eps, o) X(weight_decay, o) X(grad_clip, o)

#define F32_NAME(f, o) #f,
const char *const tz_train_opts_f32_names[] = {FLOAT_FIELDS(F32_NAME, o) "skip_loss_z", "skip_norm_z", NULL};
#undef F32_NAME

/* a 64-bit hash as 16 hex digits (a JSON number holds 53 bits) */
static void put_hex64(cJSON *p, const char *name, uint64_t v) {
  char hx[20];
  snprintf(hx, sizeof hx, "%016" PRIx64, v);
  cJSON_AddStringToObject(p, name, hx);
}

cJSON *tz_train_state_to_json(const tz_train_state *st) {
  const tz_train_opts *o = st->opts;
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "step", st->step);
  cJSON_AddNumberToObject(j, "adam_t", (double)st->adam_t);
  cJSON_AddNumberToObject(j, "skipped", st->skipped);
  cJSON_AddNumberToObject(j, "elapsed_s", st->elapsed_s);
  cJSON *pos = cJSON_AddObjectToObject(j, "loader_pos");
  cJSON_AddNumberToObject(pos, "shard", (double)st->loader_pos.shard);
  cJSON_AddNumberToObject(pos, "offset", (double)st->loader_pos.offset);
  cJSON_AddNumberToObject(pos, "epoch", (double)st->loader_pos.epoch);
  cJSON *opts = cJSON_AddObjectToObject(j, "opts");
#define PUT(f, o) cJSON_AddNumberToObject(opts, #f, (double)(o)->f);
  INT_FIELDS(PUT, o)
  FLOAT_FIELDS(PUT, o)
#undef PUT
  /* a JSON number (a double) holds integers up to 2^53 exactly; larger seeds go as a decimal
   * string, or a resumed run would shuffle its data with another seed */
  if (o->seed <= (1ull << 53)) cJSON_AddNumberToObject(opts, "seed", (double)o->seed);
  else {
    char d[24];
    snprintf(d, sizeof d, "%llu", (unsigned long long)o->seed);
    cJSON_AddStringToObject(opts, "seed", d);
  }
  if (o->skip_loss_z > 0 || o->skip_norm_z > 0) {
    cJSON_AddNumberToObject(opts, "skip_loss_z", o->skip_loss_z);
    cJSON_AddNumberToObject(opts, "skip_norm_z", o->skip_norm_z);
    cJSON_AddItemToObject(j, "loss_window", tz_outlier_to_json(&st->loss_win));
    cJSON_AddItemToObject(j, "norm_window", tz_outlier_to_json(&st->norm_win));
  }
  /* checkpoint rotation (does not change the losses; a flag given on --resume wins) */
  if (o->keep > 0) cJSON_AddNumberToObject(opts, "keep", o->keep);
  if (o->keep_best) cJSON_AddTrueToObject(opts, "keep_best");
  /* tokens sampled at the end (not part of the loss sequence; --sample-tokens on --resume wins) */
  cJSON_AddNumberToObject(opts, "sample_tokens", o->sample_tokens);
  if (isfinite(st->best_val)) cJSON_AddNumberToObject(j, "best_val_loss", st->best_val);
  if (isfinite(st->last_val)) {
    cJSON_AddNumberToObject(j, "last_val_loss", st->last_val);
    cJSON_AddNumberToObject(j, "last_val_step", st->last_val_step);
  }
  /* --loss-scale as given (absent: the backend's default), kept by a resume without it */
  if (o->loss_scale && *o->loss_scale) cJSON_AddStringToObject(opts, "loss_scale", o->loss_scale);
  if (st->ls.mode == TZ_LS_DYNAMIC) { /* what --resume continues from (exact powers of two) */
    cJSON_AddNumberToObject(j, "loss_scale", st->ls.scale);
    cJSON_AddNumberToObject(j, "loss_scale_clean", st->ls.clean);
  }
  /* --recompute's mode, and what this session's arena does (not part of the loss sequence) */
  cJSON_AddStringToObject(opts, "recompute", tz_recompute_name(o->recompute));
  cJSON_AddBoolToObject(j, "recompute_active", st->recompute_active);
  /* where this session ran and in which activation dtype (not options: a resume may change them) */
  if (st->backend) cJSON_AddStringToObject(j, "backend", st->backend);
  if (st->precision) cJSON_AddStringToObject(j, "precision", st->precision);
  if (st->train_shards) cJSON_AddStringToObject(opts, "train_shards", st->train_shards);
  if (st->val_shards) cJSON_AddStringToObject(opts, "val_shards", st->val_shards);
  if (st->prep.has) {
    cJSON *p = cJSON_AddObjectToObject(j, "data_prep");
    cJSON_AddStringToObject(p, "corpus", st->prep.corpus);
    cJSON_AddNumberToObject(p, "vocab_size", st->prep.vocab_size);
    cJSON_AddNumberToObject(p, "val_fraction", st->prep.val_fraction); /* a float: exact as a double */
    cJSON_AddStringToObject(p, "tokenizer", st->prep.run_tok ? "run" : "trained");
    put_hex64(p, "corpus_xxh64", st->prep.corpus_xxh64);
    put_hex64(p, "train_xxh64", st->prep.train_xxh64);
    cJSON_AddNumberToObject(p, "train_bytes", (double)st->prep.train_bytes);
    put_hex64(p, "val_xxh64", st->prep.val_xxh64);
    cJSON_AddNumberToObject(p, "val_bytes", (double)st->prep.val_bytes);
  }
  return j;
}

static int num(const cJSON *j, const char *where, const char *name, double *v) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, name);
  if (!cJSON_IsNumber(x)) return tz_err("%s: training state field '%s' is missing or not a number", where, name);
  *v = x->valuedouble;
  return 0;
}

/* A whole number in [lo, hi] (a double holds every integer up to 2^53 exactly): the fields
 * below are cast to int / uint64_t, where NaN, fractions, negative or huge values are
 * undefined behaviour or nonsense positions. */
static int count(const cJSON *j, const char *where, const char *name, double lo, double hi, double *v) {
  if (num(j, where, name, v)) return -1;
  if (!(*v >= lo && *v <= hi) || *v != floor(*v))
    return tz_err("%s: training state field '%s' = %g is not a whole number in [%.0f, %.0f]", where, name, *v, lo, hi);
  return 0;
}

#define MAX_STEPS 1073741824.0 /* train --steps' limit (2^30) */
#define MAX_POS 9007199254740992.0 /* 2^53 */

/* A 16-hex-digit field of "data_prep" into *v. */
static int hex64(const cJSON *p, const char *where, const char *name, uint64_t *v) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(p, name);
  if (!cJSON_IsString(x) || strlen(x->valuestring) != 16 || strspn(x->valuestring, "0123456789abcdef") != 16)
    return tz_err("%s: training state field 'data_prep.%s' is missing or not 16 hex digits", where, name);
  *v = (uint64_t)strtoull(x->valuestring, NULL, 16);
  return 0;
}

/* "data_prep" (optional: absent in --train-shards runs and older checkpoints) into st->prep. */
static int prep_from_json(const cJSON *j, const char *where, tz_train_state *st) {
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "data_prep");
  if (!p) return 0;
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(p, "corpus"), *t = cJSON_GetObjectItemCaseSensitive(p, "tokenizer");
  double v;
  if (!cJSON_IsString(c) || !*c->valuestring)
    return tz_err("%s: training state field 'data_prep.corpus' is missing or not a path", where);
  if (!cJSON_IsString(t) || (strcmp(t->valuestring, "run") && strcmp(t->valuestring, "trained")))
    return tz_err("%s: training state field 'data_prep.tokenizer' is not \"run\" or \"trained\"", where);
  if (count(p, where, "vocab_size", TZ_PREP_VOCAB_MIN, TZ_PREP_VOCAB_MAX, &v)) return -1;
  st->prep.vocab_size = (int)v;
  if (num(p, where, "val_fraction", &v)) return -1;
  /* --val-fraction's own range (data_prep.h), its top included: a --val-fraction 0.5 run
   * records 0.5 and must resume (it was refused here as "not in (0, 0.5)") */
  if (!((float)v >= (float)TZ_VAL_FRACTION_MIN && (float)v <= (float)TZ_VAL_FRACTION_MAX))
    return tz_err("%s: training state field 'data_prep.val_fraction' = %g is not in [%g, %g]", where, v,
                  TZ_VAL_FRACTION_MIN, TZ_VAL_FRACTION_MAX);
  st->prep.val_fraction = (float)v;
  if (hex64(p, where, "corpus_xxh64", &st->prep.corpus_xxh64) || hex64(p, where, "train_xxh64", &st->prep.train_xxh64) ||
      hex64(p, where, "val_xxh64", &st->prep.val_xxh64))
    return -1;
  if (count(p, where, "train_bytes", 0, MAX_POS, &v)) return -1;
  st->prep.train_bytes = (uint64_t)v;
  if (count(p, where, "val_bytes", 0, MAX_POS, &v)) return -1;
  st->prep.val_bytes = (uint64_t)v;
  st->prep.run_tok = !strcmp(t->valuestring, "run");
  st->prep.corpus = tz_strdup(c->valuestring);
  st->prep.has = 1;
  return 0;
}

int tz_train_state_from_json(const cJSON *j, const char *where, tz_train_state *st, tz_train_opts *o) {
  double v = 0;
  const cJSON *opts = cJSON_GetObjectItemCaseSensitive(j, "opts");
  const cJSON *pos = cJSON_GetObjectItemCaseSensitive(j, "loader_pos");
  if (!cJSON_IsObject(opts) || !cJSON_IsObject(pos))
    return tz_err("%s: training state lacks 'opts' or 'loader_pos'", where);
  if (count(j, where, "step", 0, MAX_STEPS, &v)) return -1;
  st->step = (int)v;
  if (num(j, where, "adam_t", &v)) return -1;
  /* the next AdamW step is t = adam_t + 1, and t < 1 turns every parameter into NaN
   * (bias correction divides by 1 − β^t = 0) */
  if (!(v >= 0 && v <= st->step) || v != floor(v))
    return tz_err("%s: training state field 'adam_t' = %g is not a count of AdamW steps in [0, step=%d]", where, v,
                  st->step);
  st->adam_t = (int64_t)v;
  if (count(j, where, "skipped", 0, st->step, &v)) return -1; /* skipped steps are steps */
  st->skipped = (int)v;
  if (num(j, where, "elapsed_s", &v)) return -1;
  if (!(v >= 0 && isfinite(v))) return tz_err("%s: training state field 'elapsed_s' = %g is not a duration >= 0", where, v);
  st->elapsed_s = v;
  /* the loader checks the position against the shards (tz_loader_set_pos); here: integers */
  if (count(pos, where, "shard", 0, MAX_POS, &v)) return -1;
  st->loader_pos.shard = (uint64_t)v;
  if (count(pos, where, "offset", 0, MAX_POS, &v)) return -1;
  st->loader_pos.offset = (uint64_t)v;
  if (count(pos, where, "epoch", 0, MAX_POS, &v)) return -1;
  st->loader_pos.epoch = (uint64_t)v;
  int want_steps = o->steps, want_ckpt = o->ckpt_every;
#define GETI(f, o)                                            \
  if (count(opts, where, #f, strcmp(#f, "warmup") ? 0 : -1, MAX_STEPS, &v)) return -1; \
  (o)->f = (int)v; /* warmup -1: "5% of steps"; ranges are checked with the options */
#define GETF(f, o)                           \
  if (num(opts, where, #f, &v)) return -1;    \
  (o)->f = (float)v;
  INT_FIELDS(GETI, o)
  FLOAT_FIELDS(GETF, o)
#undef GETI
#undef GETF
  const cJSON *sd = cJSON_GetObjectItemCaseSensitive(opts, "seed");
  if (cJSON_IsString(sd)) { /* seeds above 2^53: decimal digits (see tz_train_state_to_json) */
    const char *t = sd->valuestring;
    char *end;
    errno = 0;
    unsigned long long u = strtoull(t, &end, 10);
    if (!*t || *t < '0' || *t > '9' || *end || errno)
      return tz_err("%s: training state field 'seed' = \"%.40s\" is not a whole number in [0, 2^64-1]", where, t);
    o->seed = (uint64_t)u;
  } else {
    /* (checkpoints written before the string form hold larger seeds rounded to a double) */
    if (count(opts, where, "seed", 0, 18446744073709551615.0, &v)) return -1;
    o->seed = v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)v;
  }
  /* optional (absent in checkpoints of runs without skip rules): 0 = off */
  o->skip_loss_z = o->skip_norm_z = 0;
  if (cJSON_GetObjectItemCaseSensitive(opts, "skip_loss_z")) {
    if (num(opts, where, "skip_loss_z", &v)) return -1;
    o->skip_loss_z = (float)v;
  }
  if (cJSON_GetObjectItemCaseSensitive(opts, "skip_norm_z")) {
    if (num(opts, where, "skip_norm_z", &v)) return -1;
    o->skip_norm_z = (float)v;
  }
  if (tz_outlier_from_json(cJSON_GetObjectItemCaseSensitive(j, "loss_window"), where, "loss_window", &st->loss_win) ||
      tz_outlier_from_json(cJSON_GetObjectItemCaseSensitive(j, "norm_window"), where, "norm_window", &st->norm_win))
    return -1;
  const cJSON *kp = cJSON_GetObjectItemCaseSensitive(opts, "keep"), *bv = cJSON_GetObjectItemCaseSensitive(j, "best_val_loss");
  st->recorded_keep = cJSON_IsNumber(kp) ? kp->valueint : 0;
  if (o->keep == 0) o->keep = st->recorded_keep;
  if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(opts, "keep_best"))) o->keep_best = 1;
  if (o->sample_tokens < 0) { /* not given on --resume: the run's (absent in older checkpoints: 200) */
    o->sample_tokens = 200;
    if (cJSON_GetObjectItemCaseSensitive(opts, "sample_tokens")) {
      if (count(opts, where, "sample_tokens", 0, 1 << 20, &v)) return -1;
      o->sample_tokens = (int)v;
    }
  }
  if (cJSON_IsNumber(bv)) st->best_val = bv->valuedouble;
  /* optional (absent in checkpoints written before 2026-12-03 and before a first validation) */
  st->last_val = NAN, st->last_val_step = 0;
  if (cJSON_GetObjectItemCaseSensitive(j, "last_val_loss")) {
    if (num(j, where, "last_val_loss", &v)) return -1;
    if (!isfinite(v)) return tz_err("%s: training state field 'last_val_loss' = %g is not finite", where, v);
    st->last_val = v;
    if (count(j, where, "last_val_step", 0, st->step, &v)) return -1; /* a model of at most `step` steps */
    st->last_val_step = (int)v;
  }
  /* optional (absent in checkpoints of runs without dynamic loss scaling, and older ones) */
  st->ls.scale = 0, st->ls.clean = 0;
  if (cJSON_GetObjectItemCaseSensitive(j, "loss_scale")) {
    int e;
    if (num(j, where, "loss_scale", &v)) return -1;
    if (!(v >= TZ_LS_MIN && v <= TZ_LS_MAX) || frexp(v, &e) != 0.5)
      return tz_err("%s: training state field 'loss_scale' = %g is not a power of two in [1, %.0f]", where, v,
                    (double)TZ_LS_MAX);
    st->ls.scale = (float)v;
    if (count(j, where, "loss_scale_clean", 0, MAX_STEPS, &v)) return -1;
    st->ls.clean = (int)v;
  }
  const cJSON *lso = cJSON_GetObjectItemCaseSensitive(opts, "loss_scale");
  if (lso && !o->loss_scale) {
    int mode;
    float fixed;
    if (!cJSON_IsString(lso) || tz_loss_scale_parse(lso->valuestring, &mode, &fixed))
      return tz_err("%s: training state option 'loss_scale' is not dynamic, off or a power of two in [1, %.0f]",
                    where, (double)TZ_LS_MAX);
    o->loss_scale = st->loss_scale_opt = tz_strdup(lso->valuestring);
  }
  if (o->recompute < 0) { /* not given on --resume: the run's (absent in older checkpoints: auto) */
    const cJSON *rc = cJSON_GetObjectItemCaseSensitive(opts, "recompute");
    o->recompute = TZ_RECOMPUTE_AUTO;
    if (rc && (!cJSON_IsString(rc) || tz_recompute_parse(rc->valuestring, "recompute", &o->recompute)))
      return tz_err("%s: training state option 'recompute' is not auto, on or off", where);
  }
  /* optional (absent in older checkpoints): the last session's backend and activation dtype,
   * compared with this session's by train.c (a note, not an error). Names only: a backend or
   * dtype this build lacks is still a name to print. */
  static const char *const rec[2] = {"backend", "precision"};
  char **dst[2] = {&st->recorded_backend, &st->recorded_precision};
  for (int i = 0; i < 2; i++) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, rec[i]);
    if (!x) continue;
    if (!cJSON_IsString(x) || !*x->valuestring || strlen(x->valuestring) > 16 ||
        strspn(x->valuestring, "abcdefghijklmnopqrstuvwxyz0123456789") != strlen(x->valuestring))
      return tz_err("%s: training state field '%s' is not a name (lowercase letters and digits, at most 16)", where,
                    rec[i]);
    *dst[i] = tz_strdup(x->valuestring);
  }
  st->recorded_steps = o->steps;
  if (want_steps > 0) o->steps = want_steps;
  /* --ckpt-every given on --resume: the new cadence (a checkpoint changes no state of the run:
   * the loss sequence is the same with any cadence, as with --stop-after's checkpoint); -1: the
   * run's. Recorded with the next checkpoint, so a later resume keeps it. */
  if (want_ckpt >= 0) o->ckpt_every = want_ckpt;
  const cJSON *ts = cJSON_GetObjectItemCaseSensitive(opts, "train_shards");
  const cJSON *vs = cJSON_GetObjectItemCaseSensitive(opts, "val_shards");
  /* --train-shards / --val-shards given on --resume (o's, non-NULL) replace the recorded ones
   * (train_data.c's resume_shards checks them against the record); the run records the new ones */
  if (!cJSON_IsString(ts)) return tz_err("%s: training state does not record its training shards", where);
  if (o->val_shards && !cJSON_IsString(vs))
    return tz_err("--val-shards: the run %s has no validation shards to replace (it trained without validation)", where);
  st->train_shards = tz_strdup(o->train_shards ? o->train_shards : ts->valuestring);
  if (cJSON_IsString(vs)) st->val_shards = tz_strdup(o->val_shards ? o->val_shards : vs->valuestring);
  o->train_shards = st->train_shards;
  o->val_shards = st->val_shards;
  return prep_from_json(j, where, st);
}
