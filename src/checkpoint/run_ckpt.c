#include "checkpoint/run_ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/fileio.h"
#include "formats/formats.h"
#include "model/config_json.h"

/* Parameters and AdamW moments are streamed from the backend buffer in TZ_CKPT_CHUNK pieces
 * while the file is written: no host copy of a whole tensor is made (peak host memory during
 * a save is the training state plus one chunk; tests/test_ckpt_memory.c). */
typedef struct {
  tz_backend *be;
  tz_buf *buf;
  const float *host; /* instead of buf: a host array */
} stream_src;

static void fill_from_device(void *ctx, uint64_t offset, void *dst, size_t n) {
  stream_src *s = ctx;
  if (s->host) memcpy(dst, (const char *)s->host + offset, n);
  else s->be->download(s->be, dst, tz_at((tz_slice){s->buf, 0}, (size_t)offset), n);
}

int tz_run_save(const char *path, tz_model *m, const tz_tokenizer *tok, const cJSON *train_state) {
  tz_run_src am = {m->m, NULL}, av = {m->v, NULL};
  return tz_run_save_moments(path, m, tok, train_state, am, av);
}

int tz_run_save_moments(const char *path, tz_model *m, const tz_tokenizer *tok, const cJSON *train_state,
                        tz_run_src adam_m, tz_run_src adam_v) {
  cJSON *meta = cJSON_CreateObject();
  cJSON_AddStringToObject(meta, "format", "tezgah-checkpoint");
  cJSON_AddNumberToObject(meta, "version", 1);
  cJSON_AddItemToObject(meta, "config", tz_config_to_json(&m->cfg));
  char fp[32];
  snprintf(fp, sizeof fp, "%016" PRIx64, m->lay.fingerprint);
  cJSON_AddStringToObject(meta, "fingerprint", fp);
  cJSON_AddNumberToObject(meta, "n_params", (double)m->lay.total);
  if (train_state) cJSON_AddItemToObject(meta, "train", cJSON_Duplicate(train_state, 1));
  char *meta_txt = cJSON_PrintUnformatted(meta);
  cJSON_Delete(meta);

  char *tok_json = NULL;
  size_t tok_len = 0;
  if (tok && tz_tok_to_blob(tok, &tok_json, &tok_len)) {
    free(meta_txt);
    return -1;
  }
  size_t bytes = m->lay.total * sizeof(float);
  int with_adam = train_state && (adam_m.buf || adam_m.host) && (adam_v.buf || adam_v.host);
  stream_src src[3] = {{m->be, m->params, NULL}, {m->be, adam_m.buf, adam_m.host}, {m->be, adam_v.buf, adam_v.host}};
  tz_ckpt_writer *w = tz_ckpt_begin();
  tz_ckpt_add_ref(w, "meta", meta_txt, strlen(meta_txt));
  if (tok_json) tz_ckpt_add_ref(w, "tokenizer", tok_json, tok_len);
  tz_ckpt_add_stream(w, "params", bytes, fill_from_device, &src[0]);
  if (with_adam) {
    tz_ckpt_add_stream(w, "adam_m", bytes, fill_from_device, &src[1]);
    tz_ckpt_add_stream(w, "adam_v", bytes, fill_from_device, &src[2]);
  }
  int rc = tz_ckpt_commit(w, path);
  tz_ckpt_free(w);
  free(meta_txt);
  free(tok_json);
  return rc;
}

/* A checkpoint write cut short in run directory `dir` (a second Ctrl-C or a kill while
 * checkpoint.tzc was saved: tz_afile's "checkpoint.tzc.tmp.<pid>", core/fileio.h), or one going
 * on now (a session saving its first checkpoint): where there is one, the "no checkpoint" error
 * names it (it said nothing of it) and 1 is returned; never loaded (it may be incomplete). With
 * `resume` (train --resume) the error says how to go on. Else 0, no error set. */
static int unfinished_ckpt(const char *dir, int resume) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  static const char pre[] = TZ_CKPT_FILE ".tmp.";
  const size_t n = sizeof pre - 1;
  char *found = NULL;
  int live = 0;
  for (struct dirent *e; !found && (e = readdir(d));) {
    const char *pid = e->d_name + n;
    if (!strncmp(e->d_name, pre, n) && *pid && pid[strspn(pid, "0123456789")] == '\0') {
      found = tz_path_join(dir, e->d_name);
      live = !tz_tmp_name_orphaned(e->d_name);
    }
  }
  closedir(d);
  if (!found) return 0;
  if (live)
    tz_err("%s: run directory has no checkpoint (%s) yet: %s is being written by a running session; try again when "
           "it has finished", dir, TZ_CKPT_FILE, found);
  else if (!resume)
    tz_err("%s: run directory has no checkpoint (%s), only %s: an unfinished write of one (its session was stopped "
           "while saving it), not loaded", dir, TZ_CKPT_FILE, found);
  else /* a run continued into this directory (--resume EARLIER --run-dir DIR) goes on from EARLIER */
    tz_err("%s: run directory has no checkpoint (%s) to resume, only %s: an unfinished write of one (its session was "
           "stopped while saving it), not loaded; start the run again (train --run-dir %s), or, if it continued an "
           "earlier run, continue that one again (train --resume EARLIER --run-dir %s)", dir, TZ_CKPT_FILE, found, dir,
           dir);
  free(found);
  return 1;
}

int tz_run_open(const char *path_or_dir, tz_run_file *rf) {
  memset(rf, 0, sizeof *rf);
  struct stat st;
  if (stat(path_or_dir, &st) != 0) return tz_err("%s: no such checkpoint file or run directory", path_or_dir);
  rf->path = S_ISDIR(st.st_mode) ? tz_path_join(path_or_dir, TZ_CKPT_FILE) : tz_strdup(path_or_dir);
  if (S_ISDIR(st.st_mode) && !tz_exists(rf->path) && tz_hf_is_dir(path_or_dir)) { /* a Hugging Face model */
    free(rf->path);
    rf->path = tz_strdup(path_or_dir);
    rf->format = TZ_FMT_HF;
    if (tz_hf_load(path_or_dir, &rf->cfg, &rf->host_params, &rf->tok)) goto fail;
    return 0;
  }
  if (S_ISDIR(st.st_mode) && !tz_exists(rf->path)) {
    if (!unfinished_ckpt(path_or_dir, 0))
      tz_err("%s: run directory has no checkpoint (%s) and is not a Hugging Face model (config.json)", path_or_dir,
             TZ_CKPT_FILE);
    goto fail;
  }
  rf->format = TZ_FMT_TEZGAH;
  if (!S_ISDIR(st.st_mode)) {
    int f = tz_format_detect(rf->path);
    if (f < 0) goto fail;
    if (f != TZ_FMT_TEZGAH) {
      if (tz_foreign_load(rf->path, NULL, &rf->cfg, &rf->host_params)) goto fail;
      rf->format = f == TZ_FMT_UNKNOWN ? TZ_FMT_LLAMA2C : f;
      return 0;
    }
  }
  if (tz_ckpt_open(rf->path, &rf->ck)) goto fail;
  size_t n;
  const char *txt = tz_ckpt_get(rf->ck, "meta", &n);
  if (!txt) {
    tz_err("%s: missing section 'meta'", rf->path);
    goto fail;
  }
  rf->meta = cJSON_ParseWithLength(txt, n);
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(rf->meta, "format");
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(rf->meta, "version");
  if (!rf->meta || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, "tezgah-checkpoint")) {
    tz_err("%s: section 'meta' is not a tezgah checkpoint header", rf->path);
    goto fail;
  }
  if (!cJSON_IsNumber(ver) || ver->valueint != 1) {
    tz_err("%s: meta version %g is not supported (expected 1)", rf->path, cJSON_IsNumber(ver) ? ver->valuedouble : -1.0);
    goto fail;
  }
  if (tz_config_from_json(cJSON_GetObjectItemCaseSensitive(rf->meta, "config"), rf->path, &rf->cfg)) goto fail;
  tz_layout lay;
  tz_layout_build(&rf->cfg, &lay);
  char fp[32];
  snprintf(fp, sizeof fp, "%016" PRIx64, lay.fingerprint);
  tz_layout_free(&lay);
  const cJSON *jfp = cJSON_GetObjectItemCaseSensitive(rf->meta, "fingerprint");
  if (!cJSON_IsString(jfp) || strcmp(jfp->valuestring, fp)) {
    tz_err("%s: layout fingerprint %s does not match this config's %s", rf->path,
           cJSON_IsString(jfp) ? jfp->valuestring : "(missing)", fp);
    goto fail;
  }
  rf->train = cJSON_GetObjectItemCaseSensitive(rf->meta, "train");
  const char *tj = tz_ckpt_get(rf->ck, "tokenizer", &n);
  if (tj && tz_tok_load_buf(rf->path, tj, n, &rf->tok)) goto fail;
  if (rf->tok && tz_tok_vocab_size(rf->tok) > rf->cfg.vocab_size) {
    tz_err("%s: tokenizer has %d tokens but the model's vocab_size is %d", rf->path,
           tz_tok_vocab_size(rf->tok), rf->cfg.vocab_size);
    goto fail;
  }
  return 0;
fail:
  tz_run_close(rf);
  return -1;
}

int tz_run_open_resume(const char *path_or_dir, int file_ok, tz_run_file *rf) {
  struct stat st;
  memset(rf, 0, sizeof *rf);
  /* named as --resume's value, quoted ('' for an empty one, which said ": no such ..."); a
   * checkpoint file is offered only where it would be taken (with --run-dir) */
  if (stat(path_or_dir, &st) != 0) {
    if (errno == ENOENT)
      return tz_err("--resume: '%s': no such run directory%s", path_or_dir, file_ok ? " or checkpoint file" : "");
    return tz_err("--resume: '%s': %s", path_or_dir, strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    if (tz_run_open(path_or_dir, rf)) return -1; /* what the file is not, first ("a text file") */
    if (file_ok) return 0;
    /* without --run-dir a run continues in the directory given (its checkpoint, metrics and
     * tokenizer are written there again): a checkpoint file is refused, naming its directory
     * (it failed later as "not a directory"); with --run-dir a file is a start like any
     * checkpoint */
    tz_run_close(rf);
    char *cp = tz_strdup(path_or_dir);
    tz_err("--resume: '%s' is a file; give the run directory that holds it (%s), or --run-dir for the continued run",
           path_or_dir, dirname(cp));
    free(cp);
    return -1;
  }
  char *ck = tz_path_join(path_or_dir, TZ_CKPT_FILE);
  int none = !tz_exists(ck);
  free(ck);
  if (!none) return tz_run_open(path_or_dir, rf);
  if (tz_hf_is_dir(path_or_dir))
    return tz_err("%s: no checkpoint (%s) to resume, but a Hugging Face model's config.json: start a new run from the "
                  "model with --init-from %s", path_or_dir, TZ_CKPT_FILE, path_or_dir);
  if (unfinished_ckpt(path_or_dir, 1)) return -1;
  return tz_err("%s: run directory has no checkpoint (%s) to resume (a run saves one every --ckpt-every steps and "
                "at its end)", path_or_dir, TZ_CKPT_FILE);
}

static int load_section(tz_run_file *rf, tz_model *m, const char *name, tz_buf *buf) {
  const void *data;
  if (tz_ckpt_require(rf->ck, name, m->lay.total * sizeof(float), &data)) return -1;
  tz_slice s = {buf, 0};
  tz_model_settle(m); /* (an update still queued would write after this) */
  m->be->upload(m->be, s, data, m->lay.total * sizeof(float));
  return 0;
}

int tz_run_load_model(tz_run_file *rf, tz_backend *be, tz_model **out) {
  tz_model *m;
  if (tz_model_create(be, &rf->cfg, &m)) return -1;
  if (rf->host_params) {
    tz_model_set_params(m, rf->host_params);
    *out = m;
    return 0;
  }
  if (load_section(rf, m, "params", m->params)) {
    tz_model_free(m);
    return -1;
  }
  *out = m;
  return 0;
}

/* ZeRO-1: only this rank's shard of a moment section goes to the (shard-sized) buffer. */
static int load_shard(tz_run_file *rf, tz_model *m, const char *name, tz_buf *buf) {
  const void *data;
  if (tz_ckpt_require(rf->ck, name, m->lay.total * sizeof(float), &data)) return -1;
  size_t first, n;
  tz_model_shard(m, &first, &n);
  if (n) m->be->upload(m->be, (tz_slice){buf, 0}, (const float *)data + first, n * sizeof(float));
  return 0;
}

int tz_run_load_adam(tz_run_file *rf, tz_model *m) {
  if (rf->host_params)
    return tz_err("%s: a %s model has no optimizer state; start a new run from it with train --init-from %s",
                  rf->path, tz_format_name(rf->format), rf->path);
  if (m->zero) return load_shard(rf, m, "adam_m", m->m) || load_shard(rf, m, "adam_v", m->v) ? -1 : 0;
  return load_section(rf, m, "adam_m", m->m) || load_section(rf, m, "adam_v", m->v) ? -1 : 0;
}

typedef struct {
  tz_ckpt *ck;
  float *host_params;
} release_job;
static void *release_thread(void *p) {
  release_job *j = p;
  tz_ckpt_close(j->ck);
  free(j->host_params);
  free(j);
  return NULL;
}

void tz_run_release_params_async(tz_run_file *rf) {
  if (!rf->ck && !rf->host_params) return;
  release_job *j = malloc(sizeof *j);
  if (!j) return;
  j->ck = rf->ck;
  j->host_params = rf->host_params;
  pthread_t th;
  if (pthread_create(&th, NULL, release_thread, j) != 0) {
    free(j);
    return;
  }
  pthread_detach(th);
  rf->ck = NULL;
  rf->host_params = NULL;
}

void tz_run_close(tz_run_file *rf) {
  if (rf->ck) tz_ckpt_close(rf->ck);
  cJSON_Delete(rf->meta);
  tz_tok_free(rf->tok);
  free(rf->host_params);
  free(rf->path);
  memset(rf, 0, sizeof *rf);
}

int tz_run_save_tokenizer(const char *run_dir, const tz_tokenizer *tok) {
  if (!tok) return 0;
  char *data, *tp = tz_path_join(run_dir, tz_tok_kind(tok) == TZ_TOKENIZER_BPE ? "tokenizer.json" : "tokenizer.bin");
  size_t len;
  int e = tz_tok_to_blob(tok, &data, &len);
  if (!e) e = tz_write_file_atomic(tp, data, len), free(data);
  free(tp);
  return e ? -1 : 0;
}
