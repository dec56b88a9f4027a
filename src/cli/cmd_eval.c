/* tezgah eval RUN_DIR|CKPT --data SHARDS|TEXT: validation loss and perplexity of a model
 * (ours, llama2.c or llm.c) on llm.c token shards, or on text files tokenized with the
 * model's tokenizer. The result goes to stdout (a line, or only JSON with --json -), the
 * progress line to stderr. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint/run_ckpt.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/progress.h"
#include "data/dataloader.h"
#include "data/shard.h"
#include "tokenizer/tokenizer.h"
#include "train/data_prep.h"

static const char *HELP =
    "usage: tezgah eval RUN_DIR|CHECKPOINT|HF_DIR --data SHARDS|TEXT [options]\n"
    "       tezgah eval -h|--help\n"
    "Mean cross-entropy (nats/token) and perplexity exp(loss) of a model on llm.c\n"
    "token shards or on text files. CHECKPOINT may be ours, a llama2.c .bin or an\n"
    "llm.c GPT-2 .bin; HF_DIR a Hugging Face directory (config.json +\n"
    "model.safetensors). Batches are contiguous windows from the start (targets =\n"
    "inputs shifted by one). Text (UTF-8, not empty, as train's --data) is tokenized\n"
    "with the model's tokenizer (or --tokenizer) as tezgah tokenize does: files\n"
    "joined with <|endoftext|>, EOT before each document. Result on stdout; progress\n"
    "on stderr.\n\n"
    "  --data LIST            comma-separated paths/globs (required): llm.c shards,\n"
    "                         or text files (anything whose header is not a shard's)\n"
    "                         (may be repeated: --data a.bin --data b.bin; a name\n"
    "                         with a ',' is taken whole where it exists and its\n"
    "                         first part alone does not; a name that exists is\n"
    "                         taken as it is, glob characters and all)\n"
    "  --tokenizer SPEC       tokenizer for text (default: the checkpoint's; see\n"
    "                         tezgah encode --help)\n"
    "  --batches N            number of batches (default: one pass over the shards)\n"
    "  -B, --batch-size N     sequences per batch (4)\n"
    "  -T, --seq-len N        tokens per sequence (default: min(context, 256))\n"
    "  --json PATH            also write {\"loss\",\"perplexity\",\"tokens\",...} as JSON;\n"
    "                         - = stdout, which then holds only the JSON (the result\n"
    "                         line goes to stderr)\n"
    "  --quiet                no progress line\n"
    "  --backend NAME         cpu (default), webgpu or " TZ_HELP_CUDA "\n"
    "  --precision P          fp32, bf16 (cuda's default) or f16 (webgpu's default\n"
    "                         where the adapter has ShaderF16)\n"
    "  --threads N            OpenMP threads (default: all cores)\n"
    "example:\n"
    "  tezgah eval runs/latest --data 'data/val_*.bin' --batches 20 --json eval.json\n";

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Text or shards? Shards start with llm.c's magic (20240520, or 20240801 for the uint32
 * variant the loader names in its error); anything else is text. Decided on the first file. */
static int is_text(const char *list, int *text) {
  char **p;
  size_t n;
  if (tz_expand_paths(list, &p, &n)) return -1;
  FILE *f = fopen(p[0], "rb");
  int rc = 0;
  int32_t magic = 0;
  if (!f) rc = tz_err("%s: %s", p[0], strerror(errno));
  else {
    if (fread(&magic, 4, 1, f) != 1) magic = 0;
    fclose(f);
    *text = magic != 20240520 && magic != 20240801;
  }
  tz_paths_free(p, n);
  return rc;
}

/* Tokenize the text files (joined with <|endoftext|>) as tezgah tokenize does. */
static int tokenize_text(const tz_run_file *rf, const char *tokp, const char *list, int32_t **ids, size_t *n) {
  tz_tokenizer *own = NULL;
  const tz_tokenizer *t = rf->tok;
  if (tokp) {
    if (tz_tok_load_spec(tokp, &own)) return -1;
    t = own;
  }
  if (!t) return tz_err("%s: the model has no tokenizer to tokenize text with (give --tokenizer)", rf->path);
  char **p;
  size_t np;
  if (tz_expand_paths(list, &p, &np)) {
    tz_tok_free(own);
    return -1;
  }
  char *all = NULL;
  size_t len = 0;
  int rc = 0;
  for (size_t i = 0; i < np && !rc; i++) {
    char *d;
    size_t l;
    if ((rc = tz_read_file(p[i], &d, &l))) break;
    rc = tz_corpus_check_text(p[i], d, l); /* as train --data: not empty, not binary */
    all = tz_realloc(all, len + 13 + l + 1);
    if (!rc && len) memcpy(all + len, "<|endoftext|>", 13), len += 13;
    if (!rc) memcpy(all + len, d, l), len += l;
    all[len] = 0;
    free(d);
  }
  tz_paths_free(p, np);
  *ids = NULL;
  *n = 0;
  if (!rc) {
    if (tz_tok_kind(t) == TZ_TOKENIZER_LLAMA2C) {
      rc = tz_tok_encode_llama2c(t, all, 1, 0, ids, n);
    } else if (tz_tok_eot(t) < 0) {
      rc = tz_err("%s: the tokenizer has no <|endoftext|> token", list);
    } else {
      int32_t *enc;
      size_t ne;
      rc = tz_tok_encode(t, all, len, 1, &enc, &ne);
      if (!rc) {
        *ids = tz_malloc((ne + 1) * sizeof **ids);
        (*ids)[0] = tz_tok_eot(t);
        memcpy(*ids + 1, enc, ne * sizeof *enc);
        *n = ne + 1;
        free(enc);
      }
    }
  }
  /* an id past the model's vocabulary: the tokenizer and the model do not match (--tokenizer
   * gpt2 on a small model); said with the model, its V and the way out, not as the text's fault */
  for (size_t i = 0; !rc && i < *n; i++)
    if ((*ids)[i] >= rf->cfg.vocab_size) {
      if (tokp)
        rc = tz_err("--tokenizer %s gives token id %d for %s, outside the vocabulary of the model %s (V=%d): the "
                    "tokenizer does not match the model; %s, or evaluate a model trained with this tokenizer", tokp,
                    (*ids)[i], list, rf->path, rf->cfg.vocab_size,
                    rf->tok ? "leave --tokenizer out (the model's own)" : "give the model's own tokenizer with --tokenizer");
      else
        rc = tz_err("%s: the model's own tokenizer gives token id %d for %s, outside its vocabulary (V=%d): the "
                    "tokenizer stored with the model does not match it; give the matching one with --tokenizer",
                    rf->path, (*ids)[i], list, rf->cfg.vocab_size);
    }
  if (rc) free(*ids), *ids = NULL, *n = 0;
  free(all);
  tz_tok_free(own);
  return rc;
}

int tz_cmd_eval(int argc, char **argv) {
  static const struct option LONG[] = {{"data", 1, 0, 'd'},      {"batches", 1, 0, 'n'}, {"batch-size", 1, 0, 'B'},
                                       {"seq-len", 1, 0, 'T'},   {"json", 1, 0, 'J'},    {"backend", 1, 0, 'b'},
                                       {"threads", 1, 0, 'j'},   {"precision", 1, 0, 'r'}, {"help", 0, 0, 'h'},
                                       {"tokenizer", 1, 0, 'z'}, {"quiet", 0, 0, 'q'}, {0, 0, 0, 0}};
  const char *data = NULL, *json = NULL, *backend = "cpu", *model = NULL, *precision = NULL, *tokp = NULL;
  int batches = 0, B = 4, T = 0, threads = 0, quiet = 0, c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":hB:T:", LONG, NULL)) != -1) {
    int e = 0;
    switch (c) {
      case 'd': e = tz_arg_list_add("--data", &data, optarg); break;
      case 'n': e = tz_arg_int("--batches", optarg, 1, 1 << 30, &batches); break;
      case 'B': e = tz_arg_int("--batch-size", optarg, 1, 1 << 20, &B); break;
      case 'T': e = tz_arg_int("--seq-len", optarg, 1, 1 << 20, &T); break;
      case 'J': json = optarg, e = tz_arg_path("--json", optarg); break;
      case 'b': backend = optarg; break;
      case 'r':
        precision = optarg;
        if (!*optarg) {
          tz_err("--precision: '' is not one of fp32, bf16, f16");
          return tz_cli_fail();
        }
        break;
      case 'z': tokp = optarg, e = tz_tok_spec_check(optarg); break;
      case 'q': quiet = 1; break;
      case 'j': e = tz_arg_int("--threads", optarg, 0, 1024, &threads); break;
      case 'h': fputs(HELP, stdout); return 0;
      case ':': tz_arg_bad("eval", LONG, argc, argv, optind, 0, 1); return tz_cli_fail();
      default: tz_arg_bad("eval", LONG, argc, argv, optind, optopt, 0); return tz_cli_fail();
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
  if (tz_arg_path("eval: RUN_DIR|CHECKPOINT|HF_DIR", model)) return tz_cli_fail();
  if (!data) {
    tz_err("eval: --data SHARDS is required");
    return tz_cli_fail();
  }
  if (tz_backend_check(backend, precision)) return tz_cli_fail(); /* before tokenizing the text */
  /* --json FILE: opened (as its temporary name) now, so that an unwritable path fails before
   * minutes of evaluation; renamed over FILE at the end */
  tz_afile jf = {0};
  int to_file = json && strcmp(json, "-");
  if (tz_out_path("--json", json, NULL, 0)) return tz_cli_fail(); /* a directory: before the evaluation */
  /* nor may it name an input: the text or shards (eval --data a.txt --json a.txt replaced the
   * corpus with the result), the model, the tokenizer */
  if (to_file && (tz_out_not_in_list("--json", json, "--data", data) ||
                  tz_out_not_input("--json", json, "the model", model, TZ_MODEL_DIR_FILES) ||
                  tz_out_not_input("--json", json, "--tokenizer", tokp, TZ_MODEL_DIR_FILES)))
    return tz_cli_fail();
  if (to_file && tz_afile_open(&jf, json)) return tz_cli_fail();
  tz_run_file rf;
  if (tz_run_open(model, &rf)) {
    if (to_file) tz_afile_abort(&jf);
    return tz_cli_fail();
  }
  int rc = 1;
  tz_loader *ld = NULL;
  tz_backend *be = NULL;
  tz_model *m = NULL;
  int32_t *in = NULL, *tg = NULL, *toks = NULL;
  size_t ntoks = 0;
  if (T == 0) T = rf.cfg.max_seq_len < 256 ? rf.cfg.max_seq_len : 256;
  if (T > rf.cfg.max_seq_len) {
    tz_err("--seq-len: T=%d is above the model's context max_seq_len=%d", T, rf.cfg.max_seq_len);
    goto out;
  }
  if (rf.cfg.vocab_size > 65536) {
    tz_err("%s: vocab_size=%d does not fit llm.c's uint16 token shards", rf.path, rf.cfg.vocab_size);
    goto out;
  }
  int text = 0;
  if (is_text(data, &text)) goto out;
  uint64_t avail;
  if (text) {
    if (tokenize_text(&rf, tokp, data, &toks, &ntoks)) goto out;
    avail = ntoks > 0 ? (uint64_t)(ntoks - 1) / ((uint64_t)B * T) : 0;
    if (avail == 0) {
      tz_err("%s: %zu token%s, too few for one batch of B*T+1 = %d*%d+1 = %lld tokens; lower -B or -T", data, ntoks,
             tz_plural((long long)ntoks), B, T, (long long)B * T + 1);
      goto out;
    }
  } else {
    int lrc = tz_loader_open(&ld, data, rf.cfg.vocab_size, B, T);
    if (lrc == TZ_SHARD_EVOCAB) { /* shards of another tokenizer: the model's V and the way out */
      /* the way out through the model's tokenizer only where the model carries one (a Hugging
       * Face directory or an llm.c file may not) */
      char way[1100];
      if (rf.tok)
        snprintf(way, sizeof way, "tokenize the text with the model's (tezgah tokenize --tokenizer %s), or", model);
      else
        snprintf(way, sizeof way, "evaluate on the text with the model's tokenizer (--tokenizer SPEC), or");
      char what[1280];
      tz_err("%s is outside the vocabulary of the model %s (V=%d): the shards were made with another tokenizer than "
             "the model's; %s evaluate a model trained with the shards' tokenizer",
             tz_shard_bad_id_text(what, sizeof what), rf.path, rf.cfg.vocab_size, way);
      goto out;
    }
    if (lrc) goto out;
    avail = tz_loader_batches_per_epoch(ld);
  }
  int n = batches ? batches : (int)(avail < (1u << 30) ? avail : (1u << 30));
  if ((uint64_t)n > avail) {
    tz_err("--batches: %d is more than the %llu batch%s of B=%d T=%d %s holds", n, (unsigned long long)avail,
           avail == 1 ? "" : "es", B, T, text ? "the text" : "the shards");
    goto out;
  }
  if (!(be = tz_backend_create(backend, threads, precision))) goto out;
  if (tz_run_load_model(&rf, be, &m) || tz_model_alloc_training(m, B, T)) goto out;
  /* a file the list reads twice is evaluated twice: kept, said (tz_list_repeats), here where
   * every check has passed (a note before an error line would make it two lines) */
  char *rep = quiet ? NULL : tz_list_repeats("eval: ", "--data", data);
  if (rep) fputs(rep, stderr);
  free(rep);
  in = tz_malloc((size_t)B * T * sizeof *in);
  tg = tz_malloc((size_t)B * T * sizeof *tg);
  double sum = 0, t0 = now_s(), last = t0;
  int tty = isatty(2);
  for (int i = 0; i < n; i++) {
    if (text) {
      const int32_t *w = toks + (size_t)i * B * T;
      memcpy(in, w, (size_t)B * T * sizeof *in);
      memcpy(tg, w + 1, (size_t)B * T * sizeof *tg);
    } else if (tz_loader_next(ld, in, tg)) {
      goto out;
    }
    sum += tz_model_eval_loss(m, in, tg);
    double t = now_s();
    /* progress: redrawn on a terminal, otherwise a line every 10 s and at the end */
    if (!quiet && ((tty && t - last > 0.2) || (!tty && t - last > 10) || i + 1 == n)) {
      /* train's width rule: at most TZ_PROGRESS_COLS columns */
      double rate = (i + 1) / (t - t0 > 0 ? t - t0 : 1e-9);
      char line[160], tok_s[32], eta[32];
      tz_fmt_rate(tok_s, sizeof tok_s, rate * B * T);
      tz_fmt_eta(eta, sizeof eta, (n - i - 1) / rate);
      snprintf(line, sizeof line, "eval: %d/%d batch%s | loss %.4f | %s tok/s | ETA %s", i + 1, n, n == 1 ? "" : "es",
               sum / (i + 1), tok_s, eta);
      line[TZ_PROGRESS_COLS] = 0;
      fprintf(stderr, "%s%s%s", tty ? "\r" : "", line, tty ? "\033[K" : "\n");
      last = t;
    }
  }
  if (!quiet && tty) fputc('\n', stderr);
  double loss = sum / n, ppl = exp(loss);
  long long tokens = (long long)n * B * T;
  fprintf(json && !strcmp(json, "-") ? stderr : stdout, "eval: %s on %lld tokens (%d batch%s of %dx%d): loss %.6f | perplexity %.4f\n", rf.path, tokens, n, n == 1 ? "" : "es", B, T,
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
    if (!to_file) fputs(txt, stdout);
    else w = tz_afile_write(&jf, txt, len + 1) || tz_afile_commit(&jf); /* commit closes jf */
    free(txt);
    if (w) goto out;
  }
  rc = 0;
out:
  if (rc && tz_arg_list_failed_missing(data)) tz_err_prefix("--data"); /* the reader named the file alone */
  if (to_file) tz_afile_abort(&jf); /* after a commit: nothing left to remove */
  free(toks);
  free(in);
  free(tg);
  tz_model_free(m);
  if (be) be->destroy(be);
  tz_loader_free(ld);
  tz_run_close(&rf);
  return rc ? tz_cli_fail() : 0;
}
