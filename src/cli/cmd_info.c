/* tezgah info [RUN_DIR|CHECKPOINT]: what this build can run on (backends; for WebGPU the Dawn
 * library, adapter, backend, features and limits; for CUDA the devices and driver/runtime
 * versions; where data files were found), or a run's config and state. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>

#include "backend/backend.h"
#include "checkpoint/run_ckpt.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/plot.h"
#include "core/decimal.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/progress.h"
#include "dist/comm.h"
#include "formats/formats.h"
#include "model/config_json.h"
#include "tokenizer/tokenizer.h"
#include "train/train_state.h"

static const char *HELP =
    "usage: tezgah info [RUN_DIR|CHECKPOINT|HF_DIR]   (-h, --help)\n"
    "Without an argument: the backends (cpu, webgpu, cuda) and whether each is\n"
    "usable here, for WebGPU the adapter, features and limits, for CUDA the devices\n"
    "(name, compute capability, SMs, memory) and the driver and runtime versions,\n"
    "the build's optional features (MPI, NCCL, libplot, OpenBLAS: present or why\n"
    "not, and what each serves) and where the data files were found.\n"
    "With a run directory, checkpoint or model file (llm.c, llama2.c) or a Hugging\n"
    "Face directory: the model's config, tokenizer, training options and state\n"
    "(step, elapsed time, last losses from metrics.jsonl), and its size on disk.\n";

/* The last training line and the last validation loss in metrics.jsonl. */
static void print_metrics(const char *dir) {
  char *path = tz_path_join(dir, "metrics.jsonl"), *data;
  size_t len;
  if (tz_read_file(path, &data, &len)) {
    free(path);
    return;
  }
  double loss = 0, val = 0, tps = 0;
  int step = -1, vstep = -1;
  for (char *line = data, *end; line < data + len; line = end + 1) {
    end = memchr(line, '\n', (size_t)(data + len - line));
    if (!end) break;
    cJSON *j = cJSON_ParseWithLength(line, (size_t)(end - line));
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "step"), *l = cJSON_GetObjectItemCaseSensitive(j, "loss"),
                *v = cJSON_GetObjectItemCaseSensitive(j, "val_loss"), *t = cJSON_GetObjectItemCaseSensitive(j, "tok_per_s");
    if (cJSON_IsNumber(s) && cJSON_IsNumber(l)) step = s->valueint, loss = l->valuedouble;
    if (cJSON_IsNumber(t)) tps = t->valuedouble;
    /* val_loss on a step line was measured before that step, i.e. at step-1 */
    if (cJSON_IsNumber(s) && cJSON_IsNumber(v))
      vstep = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "final")) ? s->valueint : s->valueint - 1, val = v->valuedouble;
    cJSON_Delete(j);
  }
  if (step >= 0) printf("last step: %d, loss %.4f, %.0f tok/s\n", step, loss, tps);
  if (vstep >= 0) printf("last val loss: %.4f at step %d\n", val, vstep);
  free(data);
  free(path);
}

/* Bytes of a checkpoint file, or of the regular files in a model directory (Hugging Face:
 * config.json, model.safetensors or its shards, tokenizer files). */
static double model_bytes(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return 0;
  if (!S_ISDIR(st.st_mode)) return (double)st.st_size;
  double sum = 0;
  DIR *d = opendir(path);
  for (struct dirent *e; d && (e = readdir(d));) {
    char *p = tz_path_join(path, e->d_name);
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) sum += (double)st.st_size;
    free(p);
  }
  if (d) closedir(d);
  return sum;
}

/* The training options of a checkpoint (its "opts" object) as info prints them: JSON, with the
 * options train keeps as float32 (tz_train_opts_f32_names) in their shortest round-tripping form ("lr":0.003, not the double of the float,
 * 0.0030000000260770321), and warmup -1 as what train makes of it (train.c: steps / 20, so
 * recomputed when --resume extends --steps): "warmup":"auto (5% of steps: 30)". Returns a
 * malloc'ed string or NULL. */
static char *options_text(const cJSON *opts) {
  cJSON *o = cJSON_Duplicate(opts, 1);
  const cJSON *steps = cJSON_GetObjectItemCaseSensitive(opts, "steps");
  for (cJSON *it = o ? o->child : NULL; it; it = it->next) {
    if (!cJSON_IsNumber(it) || !it->string) continue;
    cJSON *rep = NULL;
    char b[TZ_F32_STR + 48];
    for (const char *const *f = tz_train_opts_f32_names; *f && !rep; f++)
      if (!strcmp(it->string, *f) && isfinite(it->valuedouble)) rep = cJSON_CreateRaw(tz_f32_str((float)it->valuedouble, b));
    if (!strcmp(it->string, "warmup") && it->valuedouble == -1) {
      if (cJSON_IsNumber(steps)) snprintf(b, sizeof b, "auto (5%% of steps: %d)", steps->valueint / 20);
      else snprintf(b, sizeof b, "auto (5%% of steps)");
      rep = cJSON_CreateString(b);
    }
    if (rep) { /* the item's place and name (copied before the old item is freed) */
      cJSON_ReplaceItemInObjectCaseSensitive(o, it->string, rep);
      it = rep;
    }
  }
  char *txt = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return txt;
}

static int info_run(const char *arg) {
  tz_run_file rf;
  if (tz_run_open(arg, &rf)) return tz_cli_fail();
  const tz_config *c = &rf.cfg;
  struct stat st;
  printf("checkpoint: %s (%s, %.1f MiB)\n", rf.path, tz_format_name(rf.format), model_bytes(rf.path) / 1048576.0);
  printf("model: %s, %d layer%s, %d head%s (%d kv), d_model %d, d_ff %d, vocab %d (padded %d), context %d, %s lm_head, "
         "%.3fM params\n",
         tz_arch_name(c->arch), c->n_layer, tz_plural(c->n_layer), c->n_head, tz_plural(c->n_head), c->n_kv_head, c->d_model, c->d_ff, c->vocab_size, c->padded_vocab,
         c->max_seq_len, c->tied ? "tied" : "untied", tz_config_num_params(c) / 1e6);
  char rt[TZ_F32_STR], ne[TZ_F32_STR]; /* float32 fields: %g's 6 digits could hide a difference */
  if (c->arch == TZ_ARCH_LLAMA) printf("rope_theta %s, norm_eps %s\n", tz_f32_str(c->rope_theta, rt), tz_f32_str(c->norm_eps, ne));
  else printf("norm_eps %s\n", tz_f32_str(c->norm_eps, ne));
  if (rf.tok)
    printf("tokenizer: %s, %d tokens\n",
           tz_tok_kind(rf.tok) == TZ_TOKENIZER_BPE ? "byte-level BPE" : tz_tok_kind(rf.tok) == TZ_TOKENIZER_LLAMA2C ? "llama2.c" : "llm.c",
           tz_tok_vocab_size(rf.tok));
  else
    printf("tokenizer: none stored\n");
  if (rf.train) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(rf.train, "step"), *e = cJSON_GetObjectItemCaseSensitive(rf.train, "elapsed_s"),
                *sk = cJSON_GetObjectItemCaseSensitive(rf.train, "skipped"), *o = cJSON_GetObjectItemCaseSensitive(rf.train, "opts"),
                *steps = cJSON_GetObjectItemCaseSensitive(o, "steps");
    /* the last session's arena (train --recompute; absent before 2026-12-03: not said) */
    const cJSON *ra = cJSON_GetObjectItemCaseSensitive(rf.train, "recompute_active");
    printf("training: step %d of %d, %.1f s of training, %d skipped steps%s\n", cJSON_IsNumber(s) ? s->valueint : -1,
           cJSON_IsNumber(steps) ? steps->valueint : -1, cJSON_IsNumber(e) ? e->valuedouble : 0.0,
           cJSON_IsNumber(sk) ? sk->valueint : 0,
           cJSON_IsTrue(ra) ? ", activations recomputed in the last session" : "");
    char *txt = options_text(o);
    if (txt) printf("options: %s\n", txt);
    free(txt);
  } else {
    printf("training: no training state (an imported or exported model)\n");
  }
  if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) print_metrics(arg);
  tz_run_close(&rf);
  return 0;
}

int tz_cmd_info(int argc, char **argv) {
  if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    fputs(HELP, stdout);
    return 0;
  }
  if (argc > 1 && !strncmp(argv[1], "--help=", 7)) { /* as getopt_long's commands say it (args.c) */
    tz_err("--help: takes no value (got %s)", argv[1]);
    return tz_cli_fail();
  }
  if (argc > 1 && argv[1][0] == '-') {
    tz_err("info: unknown option %s (see tezgah info --help)", argv[1]);
    return tz_cli_fail();
  }
  if (argc > 2) {
    tz_err("info: unexpected argument '%s' (see tezgah info --help)", argv[2]);
    return tz_cli_fail();
  }
  if (argc == 2 && tz_arg_path("info: RUN_DIR|CHECKPOINT|HF_DIR", argv[1])) return tz_cli_fail();
  if (argc == 2) return info_run(argv[1]);
  /* the backends compiled in (WebGPU always is: Dawn is loaded at run time) */
  const char *backends = "cpu, webgpu, " TZ_HELP_CUDA; /* as tezgah --help says it */
  printf("tezgah %s\nbackends: %s\n", TEZGAH_VERSION, backends);
  const char *gemm = tz_cpu_gemm_kernel();
  if (gemm) printf("cpu: available, GEMM kernel %s (same results with any: TEZGAH_CPU_ISA, TEZGAH_MM_TILE)\n", gemm);
  else printf("cpu: unavailable: %s\n", tz_errmsg());
  if (tz_webgpu_info() != 0) { /* one "webgpu: " (the message has its own for other callers) */
    const char *msg = tz_errmsg();
    printf("webgpu: unavailable: %s\n", strncmp(msg, "webgpu: ", 8) ? msg : msg + 8);
  }
  /* CUDA: the devices, or one line saying why there are none (not a failure of `info`) */
  if (tz_cuda_info() != 0) {
    const char *msg = tz_errmsg();
    printf("cuda: unavailable: %s\n", strncmp(msg, "cuda: ", 6) ? msg : msg + 6);
  }
  /* optional parts of this build: what each gives, or why it is absent */
  char line[1024];
  printf("features:\n");
  tz_mpi_describe(line, sizeof line);
  printf("  mpi: %s\n", line);
  tz_nccl_describe(line, sizeof line);
  printf("  nccl: %s\n", line);
#ifdef TZ_HAVE_LIBPLOT
  if (tz_plot_available()) printf("  libplot: yes (%s, loaded on use): tezgah plot and train --plot (SVG, PNG)\n", TZ_LIBPLOT_SONAME);
  else printf("  libplot: no (%s): tezgah plot and train --plot unavailable\n", tz_errmsg());
#else
  printf("  libplot: no (built without libplot-dev): tezgah plot and train --plot unavailable\n");
#endif
  /* OpenBLAS: only TZ_MATMUL=blas uses it (the default CPU matmul is tezgah's own GEMM) */
  const char *mm = getenv("TZ_MATMUL");
  if (tz_cpu_blas_describe(line, sizeof line))
    printf("  openblas: %s: the CPU matmuls with TZ_MATMUL=blas%s\n", line,
           mm && !strcmp(mm, "blas") ? " (set now)" : " (default: tezgah's GEMM)");
  else
    printf("  openblas: %s: TZ_MATMUL=blas runs tezgah's GEMM\n", line);
  const char *how;
  char *g = tz_gpt2_dir_find(&how);
  printf("data: gpt2 tokenizer files: %s (%s; TEZGAH_GPT2_DIR overrides)\n", g ? g : "-", how);
  free(g);
  return 0;
}
