/* tezgah logits: the model's logits at every position of a fixed token sequence, as JSON (for
 * parity checks against other implementations, e.g. tools/hf_parity.py with transformers). */
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/run_ckpt.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/fileio.h"
#include "model/model.h"

static const char *HELP =
    "usage: tezgah logits MODEL --ids ID[,ID...] [--out FILE.json] [--threads N]\n"
    "Run MODEL (run directory, checkpoint, llm.c / llama2.c file or Hugging Face\n"
    "directory) on the token ids (one sequence, at most the model's context) on the\n"
    "CPU backend in fp32 and write {\"model\", \"ids\", \"vocab_size\", \"logits\":\n"
    "[[V floats] per position]} as JSON (9 significant digits) to FILE.json, or to\n"
    "stdout.\n\n"
    "  --ids LIST             comma-separated token ids, or encode's [1, 2]\n"
    "  --out FILE             output file (written atomically; default or '-':\n"
    "                         stdout)\n"
    "  --threads N            OpenMP threads (default: all cores)\n"
    "example:\n"
    "  tezgah logits runs/latest --ids 1,2,3,4 --out ref.json\n";

int tz_cmd_logits(int argc, char **argv) {
  static const struct option LONG[] = {{"ids", 1, 0, 'i'}, {"out", 1, 0, 'o'}, {"threads", 1, 0, 'j'},
                                       {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
  const char *ids_s = NULL, *out = NULL, *in = NULL;
  int threads = 0, c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":h", LONG, NULL)) != -1) {
    switch (c) {
      case 'i': ids_s = optarg; break;
      case 'o':
        out = optarg;
        if (tz_arg_path("--out", optarg)) return tz_cli_fail();
        break;
      case 'j':
        if (tz_arg_int("--threads", optarg, 0, 1024, &threads)) return tz_cli_fail();
        break;
      case 'h': fputs(HELP, stdout); return 0;
      case ':': tz_arg_bad("logits", LONG, argc, argv, optind, 0, 1); return tz_cli_fail();
      default: tz_arg_bad("logits", LONG, argc, argv, optind, optopt, 0); return tz_cli_fail();
    }
  }
  if (optind < argc) in = argv[optind++];
  if (optind < argc) {
    tz_err("logits: unexpected argument '%s' (see tezgah logits --help)", argv[optind]);
    return tz_cli_fail();
  }
  if (!in || !ids_s) {
    tz_err("logits: give MODEL and --ids (see tezgah logits --help)");
    return tz_cli_fail();
  }
  /* the model is read, --out written: logits m.bin --out m.bin would replace the model; "-" is
   * stdout, as the default */
  if (tz_out_path("--out", out, NULL, 0)) return tz_cli_fail();
  if (out && !strcmp(out, "-")) out = NULL;
  if (tz_arg_path("logits: MODEL", in) || tz_out_not_input("--out", out, "the model", in, TZ_MODEL_DIR_FILES))
    return tz_cli_fail();
  /* `tezgah encode` prints the ids as a JSON array ("[1, 2]"): take that form too, brackets off */
  char *list = tz_malloc(strlen(ids_s) + 1);
  strcpy(list, ids_s);
  const char *b = ids_s + strspn(ids_s, " ");
  size_t e = strlen(b);
  while (e && b[e - 1] == ' ') e--;
  if (e >= 2 && b[0] == '[' && b[e - 1] == ']') {
    memcpy(list, b + 1, e - 2);
    list[e - 2] = '\0';
  }
  int rc = 1, n = 0;
  int32_t *ids = tz_malloc((strlen(list) / 2 + 2) * sizeof *ids);
  for (const char *p = list;;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end != p && v < 0 && (!*end || *end == ',')) { /* strtol skips blanks: " -1" is negative too */
      tz_err("--ids: token id %ld in '%s' is negative (ids are 0 .. vocab_size-1)", v, ids_s);
      free(ids), free(list);
      return tz_cli_fail();
    }
    const char *q = p; /* past strtol's blanks, digits alone: no '+' (numbers are decimal only), no "-0" */
    while (isspace((unsigned char)*q)) q++;
    if (end == p || !isdigit((unsigned char)*q) || (*end && *end != ',')) {
      tz_err("--ids: '%s' is not a comma-separated list of token ids", ids_s);
      free(ids), free(list);
      return tz_cli_fail();
    }
    ids[n++] = v > INT32_MAX ? INT32_MAX : (int32_t)v; /* an id above any vocabulary: refused below */
    if (!*end) break;
    p = end + 1;
  }
  tz_run_file rf;
  tz_backend *be = NULL;
  tz_model *m = NULL;
  float *lg = NULL;
  if (tz_run_open(in, &rf)) {
    free(ids), free(list);
    return tz_cli_fail();
  }
  int V = rf.cfg.vocab_size;
  for (int i = 0; i < n; i++)
    if (ids[i] >= V) {
      const char *p = list; /* the id as given (a clamped one would misquote it) */
      for (int k = 0; k < i; k++) p = strchr(p, ',') + 1;
      p += strspn(p, " ");
      tz_err("--ids: token id %.*s is out of range (max %d: the model's vocab_size is %d)", (int)strcspn(p, ","), p,
             V - 1, V);
      goto out;
    }
  if (n > rf.cfg.max_seq_len) {
    tz_err("--ids: %d tokens are more than the model's context max_seq_len=%d", n, rf.cfg.max_seq_len);
    goto out;
  }
  if (!(be = tz_backend_create("cpu", threads, NULL)) || tz_run_load_model(&rf, be, &m) ||
      tz_model_alloc_training(m, 1, n))
    goto out;
  lg = tz_malloc((size_t)n * V * sizeof *lg);
  tz_model_forward_logits(m, ids, lg);
  size_t cap = (size_t)n * V * 18 + 4096 + strlen(in) * 2, len = 0;
  char *buf = tz_malloc(cap);
  len += (size_t)snprintf(buf + len, cap - len, "{\"model\": \"");
  for (const char *p = in; *p; p++) /* a JSON string: escape quotes and backslashes */
    len += (size_t)snprintf(buf + len, cap - len, (*p == '"' || *p == '\\') ? "\\%c" : "%c", *p);
  len += (size_t)snprintf(buf + len, cap - len, "\", \"vocab_size\": %d, \"ids\": [", V);
  for (int i = 0; i < n; i++) len += (size_t)snprintf(buf + len, cap - len, "%s%d", i ? ", " : "", ids[i]);
  len += (size_t)snprintf(buf + len, cap - len, "],\n \"logits\": [");
  for (int i = 0; i < n; i++) {
    len += (size_t)snprintf(buf + len, cap - len, "%s\n  [", i ? "," : "");
    for (int v = 0; v < V; v++) len += (size_t)snprintf(buf + len, cap - len, "%s%.9g", v ? ", " : "", lg[(size_t)i * V + v]);
    len += (size_t)snprintf(buf + len, cap - len, "]");
  }
  len += (size_t)snprintf(buf + len, cap - len, "]}\n");
  if (out) {
    if (!tz_write_file_atomic(out, buf, len)) rc = 0;
  } else {
    rc = fwrite(buf, 1, len, stdout) == len ? 0 : 1;
  }
  free(buf);
out:
  free(lg);
  free(ids), free(list);
  tz_model_free(m);
  if (be) be->destroy(be);
  tz_run_close(&rf);
  return rc ? tz_cli_fail() : 0;
}
