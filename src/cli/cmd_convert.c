/* tezgah convert: llama2.c / llm.c checkpoints → a tezgah run directory, and our GPT-2 models
 * → llm.c's format (so llm.c's trainers can load them). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/run_ckpt.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/fileio.h"
#include "formats/formats.h"

static const char *HELP =
    "usage: tezgah convert [--from llama2c|llmc] IN --out RUN_DIR [--tokenizer PATH]\n"
    "       tezgah convert --to llmc RUN_DIR|CHECKPOINT --out FILE.bin [--bf16]\n"
    "Import a llama2.c checkpoint (legacy or version 1) or an llm.c GPT-2 checkpoint (version 3\n"
    "fp32 or 5 bf16) as a tezgah run directory (RUN_DIR/checkpoint.tzc, inference-only), or\n"
    "export a gpt2-family model in llm.c's format (version 3; version 5 with --bf16).\n\n"
    "  --from llama2c|llmc    input format (default: detected from the header; files without\n"
    "                         a magic number are read as legacy llama2.c)\n"
    "  --to llmc              export instead of import\n"
    "  --out PATH             run directory (import) or file (export)\n"
    "  --tokenizer PATH       tokenizer to store in the imported checkpoint (llama2.c\n"
    "                         tokenizer.bin, llm.c gpt2_tokenizer.bin or tokenizer.json)\n"
    "  --bf16                 export weights as bf16 (round to nearest even)\n"
    "examples:\n"
    "  tezgah convert --from llama2c stories260K.bin --tokenizer tok512.bin --out runs/stories\n"
    "  tezgah convert --to llmc runs/latest --out gpt2_model.bin\n";

int tz_cmd_convert(int argc, char **argv) {
  static const struct option LONG[] = {{"from", 1, 0, 'f'}, {"to", 1, 0, 't'},   {"out", 1, 0, 'o'},
                                       {"tokenizer", 1, 0, 'z'}, {"bf16", 0, 0, 'H'}, {"help", 0, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *from = NULL, *to = NULL, *out = NULL, *tokp = NULL, *in = NULL;
  int bf16 = 0, c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":h", LONG, NULL)) != -1) {
    switch (c) {
      case 'f': from = optarg; break;
      case 't': to = optarg; break;
      case 'o': out = optarg; break;
      case 'z': tokp = optarg; break;
      case 'H': bf16 = 1; break;
      case 'h': fputs(HELP, stdout); return 0;
      case ':': tz_arg_bad("convert", argc, argv, optind, 0, 1); return tz_cli_fail();
      default: tz_arg_bad("convert", argc, argv, optind, optopt, 0); return tz_cli_fail();
    }
  }
  if (optind < argc) in = argv[optind++];
  if (optind < argc) {
    tz_err("convert: unexpected argument '%s' (see tezgah convert --help)", argv[optind]);
    return tz_cli_fail();
  }
  if (!in || !out) {
    tz_err("convert: give an input and --out (see tezgah convert --help)");
    return tz_cli_fail();
  }
  if (from && strcmp(from, "llama2c") && strcmp(from, "llmc")) {
    tz_err("--from: '%s' is not llama2c or llmc", from);
    return tz_cli_fail();
  }
  if (to && strcmp(to, "llmc")) {
    tz_err("--to: '%s' is not supported (only llmc)", to);
    return tz_cli_fail();
  }
  if (to && from) {
    tz_err("convert: give --from (import) or --to (export), not both");
    return tz_cli_fail();
  }
  int rc = 1;
  tz_backend *be = NULL;
  tz_model *m = NULL;
  tz_tokenizer *tok = NULL;
  tz_run_file rf;
  memset(&rf, 0, sizeof rf);
  if (to) { /* export: any model we can open → llm.c */
    if (tz_run_open(in, &rf)) goto out;
    size_t n = tz_config_num_params(&rf.cfg);
    float *p = rf.host_params;
    if (!p) {
      if (!(be = tz_backend_create("cpu", 0, NULL)) || tz_run_load_model(&rf, be, &m)) goto out;
      p = tz_malloc(n * sizeof *p);
      tz_model_get_params(m, p);
    }
    int e = tz_llmc_save(out, &rf.cfg, p, bf16);
    if (p != rf.host_params) free(p);
    if (e) goto out;
    fprintf(stderr, "convert: wrote %s (llm.c version %d, %zu params)\n", out, bf16 ? 5 : 3, n);
    rc = 0;
    goto out;
  }
  /* import */
  tz_config cfg;
  float *p;
  if (tz_foreign_load(in, from, &cfg, &p)) goto out;
  if (tokp) {
    if (tz_tok_load_spec(tokp, &tok)) goto out_p;
    if (tz_tok_vocab_size(tok) > cfg.vocab_size) {
      tz_err("--tokenizer: %s has %d tokens but the model's vocab_size is %d", tokp, tz_tok_vocab_size(tok),
             cfg.vocab_size);
      goto out_p;
    }
  }
  if (!(be = tz_backend_create("cpu", 0, NULL)) || tz_model_create(be, &cfg, &m)) goto out_p;
  tz_model_set_params(m, p);
  char *path = tz_path_join(out, TZ_CKPT_FILE);
  if (tz_exists(path)) { /* never replace another run's model (its metrics would no longer match) */
    tz_err("%s: already holds a run (%s); choose another --out", out, TZ_CKPT_FILE);
    free(path);
    goto out_p;
  }
  if (tz_mkdirs(out)) {
    free(path);
    goto out_p;
  }
  int e = tz_run_save(path, m, tok, NULL);
  if (!e) fprintf(stderr, "convert: wrote %s (%s, %d layers, C=%d, V=%d, %zu params)\n", path,
                  cfg.arch == TZ_ARCH_GPT2 ? "gpt2" : "llama", cfg.n_layer, cfg.d_model, cfg.vocab_size, m->lay.total);
  free(path);
  if (!e) rc = 0;
out_p:
  free(p);
out:
  tz_tok_free(tok);
  tz_model_free(m);
  if (be) be->destroy(be);
  tz_run_close(&rf);
  return rc ? tz_cli_fail() : 0;
}
