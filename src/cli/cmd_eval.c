/* tezgah eval RUN_DIR|CKPT --data SHARDS: validation loss and perplexity of a model (ours,
 * llama2.c or llm.c) on llm.c token shards. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/run_ckpt.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/fileio.h"
#include "data/dataloader.h"

static const char *HELP =
    "usage: tezgah eval RUN_DIR|CHECKPOINT --data SHARDS [options]\n"
    "Mean cross-entropy (nats/token) and perplexity exp(loss) of a model on llm.c token shards.\n"
    "CHECKPOINT may be ours, a llama2.c .bin or an llm.c GPT-2 .bin. Batches are the loader's\n"
    "contiguous windows from the start of the first shard (targets = inputs shifted by one).\n\n"
    "  --data LIST            comma-separated shard paths/globs (required)\n"
    "  --batches N            number of batches (default: one pass over the shards)\n"
    "  -B, --batch-size N     sequences per batch (4)\n"
    "  -T, --seq-len N        tokens per sequence (default: min(context, 256))\n"
    "  --json PATH            also write {\"loss\",\"perplexity\",\"tokens\",...} as JSON (- = stdout)\n"
    "  --backend NAME         cpu (default), webgpu or cuda\n"
    "  --precision P          fp32 or bf16 (cuda; default bf16)\n"
    "  --threads N            OpenMP threads (default: all cores)\n"
    "example: tezgah eval runs/latest --data 'data/val_*.bin' --batches 20 --json eval.json\n";

int tz_cmd_eval(int argc, char **argv) {
  static const struct option LONG[] = {{"data", 1, 0, 'd'},      {"batches", 1, 0, 'n'}, {"batch-size", 1, 0, 'B'},
                                       {"seq-len", 1, 0, 'T'},   {"json", 1, 0, 'J'},    {"backend", 1, 0, 'b'},
                                       {"threads", 1, 0, 'j'},   {"precision", 1, 0, 'r'}, {"help", 0, 0, 'h'},    {0, 0, 0, 0}};
  const char *data = NULL, *json = NULL, *backend = "cpu", *model = NULL, *precision = NULL;
  int batches = 0, B = 4, T = 0, threads = 0, c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":hB:T:", LONG, NULL)) != -1) {
    int e = 0;
    switch (c) {
      case 'd': data = optarg; break;
      case 'n': e = tz_arg_int("--batches", optarg, 1, 1 << 30, &batches); break;
      case 'B': e = tz_arg_int("--batch-size", optarg, 1, 1 << 20, &B); break;
      case 'T': e = tz_arg_int("--seq-len", optarg, 1, 1 << 20, &T); break;
      case 'J': json = optarg; break;
      case 'b': backend = optarg; break;
      case 'r': precision = optarg; break;
      case 'j': e = tz_arg_int("--threads", optarg, 0, 1024, &threads); break;
      case 'h': fputs(HELP, stdout); return 0;
      case ':': tz_arg_bad("eval", argc, argv, optind, 0, 1); return tz_cli_fail();
      default: tz_arg_bad("eval", argc, argv, optind, optopt, 0); return tz_cli_fail();
    }
    if (e) return tz_cli_fail();
  }
  if (optind < argc) model = argv[optind++];
  if (optind < argc) {
    tz_err("eval: unexpected argument '%s' (see tezgah eval --help)", argv[optind]);
    return tz_cli_fail();
  }
  if (!model) {
    tz_err("eval: give a run directory or checkpoint (see tezgah eval --help)");
    return tz_cli_fail();
  }
  if (!data) {
    tz_err("eval: --data SHARDS is required");
    return tz_cli_fail();
  }
  tz_run_file rf;
  if (tz_run_open(model, &rf)) return tz_cli_fail();
  int rc = 1;
  tz_loader *ld = NULL;
  tz_backend *be = NULL;
  tz_model *m = NULL;
  int32_t *in = NULL, *tg = NULL;
  if (T == 0) T = rf.cfg.max_seq_len < 256 ? rf.cfg.max_seq_len : 256;
  if (T > rf.cfg.max_seq_len) {
    tz_err("--seq-len: T=%d is above the model's context max_seq_len=%d", T, rf.cfg.max_seq_len);
    goto out;
  }
  if (rf.cfg.vocab_size > 65536) {
    tz_err("%s: vocab_size=%d does not fit llm.c's uint16 token shards", rf.path, rf.cfg.vocab_size);
    goto out;
  }
  if (tz_loader_open(&ld, data, rf.cfg.vocab_size, B, T)) goto out;
  uint64_t avail = tz_loader_batches_per_epoch(ld);
  int n = batches ? batches : (int)(avail < (1u << 30) ? avail : (1u << 30));
  if ((uint64_t)n > avail) {
    tz_err("--batches: %d is more than the %llu batches of B=%d T=%d the shards hold", n, (unsigned long long)avail, B, T);
    goto out;
  }
  if (!(be = tz_backend_create(backend, threads, precision))) goto out;
  if (tz_run_load_model(&rf, be, &m) || tz_model_alloc_training(m, B, T)) goto out;
  in = tz_malloc((size_t)B * T * sizeof *in);
  tg = tz_malloc((size_t)B * T * sizeof *tg);
  double sum = 0;
  for (int i = 0; i < n; i++) {
    if (tz_loader_next(ld, in, tg)) goto out;
    sum += tz_model_eval_loss(m, in, tg);
  }
  double loss = sum / n, ppl = exp(loss);
  long long tokens = (long long)n * B * T;
  printf("eval: %s on %lld tokens (%d batches of %dx%d): loss %.6f | perplexity %.4f\n", rf.path, tokens, n, B, T,
         loss, ppl);
  if (json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model", rf.path);
    cJSON_AddStringToObject(j, "data", data);
    cJSON_AddNumberToObject(j, "loss", loss);
    cJSON_AddNumberToObject(j, "perplexity", ppl);
    cJSON_AddNumberToObject(j, "tokens", (double)tokens);
    cJSON_AddNumberToObject(j, "batches", n);
    cJSON_AddNumberToObject(j, "B", B);
    cJSON_AddNumberToObject(j, "T", T);
    char *txt = cJSON_Print(j);
    cJSON_Delete(j);
    size_t len = strlen(txt);
    txt = realloc(txt, len + 2);
    txt[len] = '\n';
    txt[len + 1] = 0;
    int w = 0;
    if (!strcmp(json, "-")) fputs(txt, stdout);
    else w = tz_write_file_atomic(json, txt, len + 1);
    free(txt);
    if (w) goto out;
  }
  rc = 0;
out:
  free(in);
  free(tg);
  tz_model_free(m);
  if (be) be->destroy(be);
  tz_loader_free(ld);
  tz_run_close(&rf);
  return rc ? tz_cli_fail() : 0;
}
