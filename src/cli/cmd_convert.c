/* tezgah convert: llama2.c / llm.c checkpoints and Hugging Face directories → a tezgah run
 * directory, and any model we read → llm.c's format (gpt2), llama2.c's legacy format (llama)
 * or a Hugging Face directory (both families). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/run_ckpt.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/progress.h"
#include "formats/formats.h"
#include "tokenizer/tokenizer.h"

static const char *HELP =
    "usage: tezgah convert [--from llama2c|llmc|hf] IN --out RUN_DIR\n"
    "                      [--tokenizer PATH]\n"
    "       tezgah convert --to llmc|llama2c|hf MODEL --out FILE_OR_DIR [--bf16]\n"
    "                      [--tokenizer PATH]\n"
    "Import a llama2.c checkpoint (legacy or version 1), an llm.c GPT-2 checkpoint\n"
    "(version 3 fp32 or 5 bf16) or a Hugging Face directory (config.json +\n"
    "model.safetensors, llama or gpt2; fp32/fp16/bf16) as a tezgah run directory\n"
    "(RUN_DIR/checkpoint.tzc, inference-only; train --init-from starts training from\n"
    "it), or export any model tezgah reads:\n"
    "  llmc     gpt2 models, llm.c's format (version 3; version 5 with --bf16)\n"
    "  llama2c  llama models, llama2.c's legacy format that run.c reads\n"
    "  hf       both families, a Hugging Face directory: model.safetensors (fp32),\n"
    "           config.json, generation_config.json, tokenizer.json (byte-level BPE\n"
    "           tokenizers only)\n\n"
    "  --from llama2c|llmc|hf input format (default: detected; a directory with\n"
    "                         config.json is Hugging Face; files without a magic\n"
    "                         number are legacy llama2.c)\n"
    "  --to llmc|llama2c|hf   export instead of import\n"
    "  --out PATH             run directory (import), new file (llmc, llama2c) or\n"
    "                         new/empty directory (hf, written all or nothing);\n"
    "                         never overwritten; not '-' (no stdout form)\n"
    "  --tokenizer PATH       tokenizer to store in the import / the HF export\n"
    "                         (llama2.c tokenizer.bin, llm.c gpt2_tokenizer.bin,\n"
    "                         tokenizer.json or gpt2)\n"
    "  --bf16                 llmc export: weights as bf16 (round to nearest even)\n"
    "examples:\n"
    "  tezgah convert --from llama2c stories260K.bin --tokenizer tok512.bin \\\n"
    "      --out runs/stories\n"
    "  tezgah convert --to llmc runs/latest --out gpt2_model.bin\n"
    "  tezgah convert --to hf runs/latest --out hf_model\n"
    "      # transformers: from_pretrained(\"hf_model\")\n"
    "  tezgah convert --from hf hf_model --out runs/from-hf\n";

/* An import's input that is already tezgah's format (a run directory, a checkpoint.tzc) or a
 * directory of no format: a one-line error that says so and names what the user likely wants
 * (the loaders alone would say "file is empty" of a directory). 0 when `in` may be imported;
 * from is --from or NULL. */
static int not_importable(const char *in, const char *from) {
  struct stat st;
  if (stat(in, &st) != 0) return 0; /* the loader names the missing file */
  int tezgah = 0;
  if (S_ISDIR(st.st_mode)) {
    char *ck = tz_path_join(in, TZ_CKPT_FILE);
    tezgah = tz_exists(ck);
    free(ck);
    if (!tezgah && !from && !tz_hf_is_dir(in)) { /* with --from, its loader says what is missing */
      tz_err("%s: a directory, but neither a tezgah run (%s) nor a Hugging Face model (config.json): nothing "
             "to import (llama2.c and llm.c models are single files)", in, TZ_CKPT_FILE);
      return 1;
    }
  } else {
    tezgah = tz_format_detect(in) == TZ_FMT_TEZGAH;
  }
  if (tezgah)
    tz_err("%s: already a tezgah %s, nothing to import; to export it give --to: tezgah convert --to "
           "llmc|llama2c|hf %s --out PATH (train --init-from %s trains from it)",
           in, S_ISDIR(st.st_mode) ? "run" : "checkpoint", in, in);
  return tezgah;
}

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
      case 'o':
        out = optarg;
        if (tz_arg_path("--out", optarg)) return tz_cli_fail();
        break;
      case 'z':
        tokp = optarg;
        if (tz_tok_spec_check(optarg)) return tz_cli_fail();
        break;
      case 'H': bf16 = 1; break;
      case 'h': fputs(HELP, stdout); return 0;
      case ':': tz_arg_bad("convert", LONG, argc, argv, optind, 0, 1); return tz_cli_fail();
      default: tz_arg_bad("convert", LONG, argc, argv, optind, optopt, 0); return tz_cli_fail();
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
  if (tz_arg_path(to ? "convert: MODEL" : "convert: IN", in)) return tz_cli_fail();
  if (from && strcmp(from, "llama2c") && strcmp(from, "llmc") && strcmp(from, "hf")) {
    tz_err("--from: '%s' is not llama2c, llmc or hf", from);
    return tz_cli_fail();
  }
  if (to && strcmp(to, "llmc") && strcmp(to, "llama2c") && strcmp(to, "hf")) {
    tz_err("--to: '%s' is not llmc, llama2c or hf", to);
    return tz_cli_fail();
  }
  if (bf16 && to && strcmp(to, "llmc")) {
    tz_err("--bf16: only for --to llmc (the %s export is fp32)", to);
    return tz_cli_fail();
  }
  if (to && from) {
    tz_err("convert: give --from (import) or --to (export), not both");
    return tz_cli_fail();
  }
  /* convert writes binary files or directories, none with a stdout form; a file export's --out
   * is no directory */
  int file_out = to && strcmp(to, "hf");
  if (tz_out_path("--out", out, file_out ? "a model file" : to ? "a Hugging Face directory" : "a run directory",
                  !file_out))
    return tz_cli_fail();
  int rc = 1;
  tz_backend *be = NULL;
  tz_model *m = NULL;
  tz_tokenizer *tok = NULL;
  tz_run_file rf;
  memset(&rf, 0, sizeof rf);
  if (to) { /* export: any model we can open → llm.c, llama2.c or Hugging Face */
    if (strcmp(to, "hf") && tz_exists(out)) { /* never replace a file (it may be anything: a corpus, a model) */
      tz_err("%s: already exists; choose another --out (convert does not overwrite files)", out);
      goto out;
    }
    if (tz_run_open(in, &rf)) goto out;
    if (tokp) {
      tz_tok_free(rf.tok);
      rf.tok = NULL;
      if (tz_tok_load_spec(tokp, &rf.tok)) goto out;
      if (tz_tok_vocab_size(rf.tok) > rf.cfg.vocab_size) {
        tz_err("--tokenizer: %s has %d tokens but the model's vocab_size is %d", tokp, tz_tok_vocab_size(rf.tok),
               rf.cfg.vocab_size);
        goto out;
      }
    }
    if (!strcmp(to, "hf")) {
      char *c1 = tz_path_join(out, "config.json"), *c2 = tz_path_join(out, "model.safetensors");
      int taken = tz_exists(c1) || tz_exists(c2);
      free(c1);
      free(c2);
      if (taken) { /* never mix two models' files in one directory */
        tz_err("%s: already holds a Hugging Face model (config.json / model.safetensors); choose another --out", out);
        goto out;
      }
    }
    size_t n = tz_config_num_params(&rf.cfg);
    float *p = rf.host_params;
    if (!p) {
      if (!(be = tz_backend_create("cpu", 0, NULL)) || tz_run_load_model(&rf, be, &m)) goto out;
      p = tz_malloc(n * sizeof *p);
      tz_model_get_params(m, p);
    }
    char note[256] = "";
    int e = !strcmp(to, "llmc")      ? tz_llmc_save(out, &rf.cfg, p, bf16)
            : !strcmp(to, "llama2c") ? tz_llama2c_save(out, &rf.cfg, p)
                                     : tz_hf_save(out, &rf.cfg, p, rf.tok, note, sizeof note);
    if (p != rf.host_params) free(p);
    if (e) goto out;
    if (!strcmp(to, "llmc")) fprintf(stderr, "convert: wrote %s (llm.c version %d, %zu params)\n", out, bf16 ? 5 : 3, n);
    else if (!strcmp(to, "llama2c"))
      fprintf(stderr, "convert: wrote %s (llama2.c legacy format, %zu params)\n", out, n);
    else
      fprintf(stderr, "convert: wrote %s (Hugging Face %s, %zu params)%s%s\n", out,
              rf.cfg.arch == TZ_ARCH_GPT2 ? "GPT2LMHeadModel" : "LlamaForCausalLM", n, *note ? "; " : "", note);
    rc = 0;
    goto out;
  }
  /* import */
  if (not_importable(in, from)) goto out;
  /* the import writes OUT/checkpoint.tzc (refused below where it exists) and the tokenizer
   * beside it: neither may be a file it reads (--tokenizer OUT/tokenizer.bin) */
  {
    static const char *const written[] = {"tokenizer.json", "tokenizer.bin"};
    for (int i = 0; i < 2; i++) {
      char *w = tz_path_join(out, written[i]);
      int bad = tz_out_not_input("--out", w, "--tokenizer", tokp, NULL) || tz_out_not_input("--out", w, "IN", in, NULL);
      free(w);
      if (bad) goto out;
    }
  }
  tz_config cfg;
  float *p;
  if ((from && !strcmp(from, "hf")) || (!from && tz_hf_is_dir(in))) {
    if (tz_hf_load(in, &cfg, &p, tokp ? NULL : &tok)) goto out;
  } else if (tz_foreign_load(in, from, &cfg, &p)) {
    goto out;
  }
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
  char *made = NULL; /* the shallowest directory of out this import created */
  if (tz_mkdirs_track(out, &made)) {
    free(path);
    goto out_p;
  }
  /* a run holds its tokenizer beside the checkpoint too (as train writes it) */
  int e = tz_run_save(path, m, tok, NULL);
  if (!e && (e = tz_run_save_tokenizer(out, tok))) unlink(path);
  if (e) tz_rmdirs_upto(out, made); /* no empty directories left behind by a failed import */
  free(made);
  if (!e) fprintf(stderr, "convert: wrote %s (%s, %d layer%s, C=%d, V=%d, %zu params)%s\n", path,
                  cfg.arch == TZ_ARCH_GPT2 ? "gpt2" : "llama", cfg.n_layer, tz_plural(cfg.n_layer), cfg.d_model, cfg.vocab_size, m->lay.total,
                  tok ? "" : "; no tokenizer stored (give --tokenizer FILE to store one)");
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
