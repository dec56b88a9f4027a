/* tezgah: the command-line entry point. Each subcommand lives in src/cli/cmd_<name>.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "core/error.h"
#include "tezgah.h"

static const struct {
  const char *name;
  int (*run)(int, char **);
  const char *help;
} commands[] = {
    {"train", tz_cmd_train, "train a model on text or token shards (default: data/kjv.txt)"},
    {"sample", tz_cmd_sample, "generate text from a model (default: runs/latest or ./latest)"},
    {"eval", tz_cmd_eval, "loss and perplexity of a model on text files or token shards"},
    {"convert", tz_cmd_convert, "import llama2.c / llm.c / HF models; export to llm.c, llama2.c, HF"},
    {"logits", tz_cmd_logits, "print a model's logits on fixed token ids as JSON (parity checks)"},
    {"tokenize", tz_cmd_tokenize, "tokenize a text file into an llm.c token shard"},
    {"encode", tz_cmd_encode, "print the token ids of a text as a JSON array"},
    {"decode", tz_cmd_decode, "print the text of a JSON array of token ids"},
    {"tokenizer", tz_cmd_tokenizer, "tokenizer train: train a byte-level BPE on a text (cpu or webgpu)"},
    {"plot", tz_cmd_plot, "draw a run's loss and learning rate against steps (SVG or PNG)"},
    {"info", tz_cmd_info, "backends and devices here, or a run's config and state (info RUN)"},
};
#define N_COMMANDS (int)(sizeof commands / sizeof *commands)

static void usage(FILE *f) {
  fprintf(f, "tezgah %s: train and run GPT-2 / Llama-style language models\n\n"
             "usage: tezgah COMMAND [options]\n"
             "       tezgah help COMMAND, or tezgah COMMAND --help: the command's options\n"
             "backends: cpu, webgpu, cuda (--backend NAME; tokenizer commands: cpu, webgpu)\n\ncommands:\n",
          TEZGAH_VERSION);
  for (int i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
}

static int find_command(const char *name) {
  for (int i = 0; i < N_COMMANDS; i++)
    if (!strcmp(name, commands[i].name)) return i;
  return -1;
}

/* Exit codes: 0 success, 1 any error (usage errors included), 128+N for a training run
 * stopped by signal N after writing its checkpoint. Results go to stdout; progress and
 * diagnostics to stderr. */
/* OpenMP's default wait policy spins idle threads for a while at every barrier; when another
 * process holds a core the spinning threads take turns with the busy ones and a step slows
 * down 5x (docs/PERF.md: 134 vs 637 tok/s on 2 loaded cores, --threads 1 637). Passive
 * waiting keeps the default thread count no slower than --threads 1 under contention.
 * libgomp reads its environment when it is loaded, before main(), so the policy is set by
 * re-executing this program once with OMP_WAIT_POLICY=PASSIVE. Not done when the user chose
 * a policy (OMP_WAIT_POLICY or GOMP_SPINCOUNT set: OMP_WAIT_POLICY=ACTIVE restores spinning)
 * or under valgrind (the exec would leave its supervision). */
static void set_wait_policy(char **argv) {
  if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
  const char *pre = getenv("LD_PRELOAD");
  if (pre && strstr(pre, "vgpreload")) return;
  if (setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) return;
  execv("/proc/self/exe", argv); /* returns only on failure: run on with the default policy */
}

static void cli_fatal(const char *msg) {
  fprintf(stderr, "tezgah: error: %s\n", msg);
  exit(1);
}

int main(int argc, char **argv) {
  set_wait_policy(argv);
  tz_set_fatal_handler(cli_fatal); /* out of memory, a lost GPU: exit 1 (the library aborts) */
  if (argc < 2) { /* a usage error like any other (exit 1), after the list of commands */
    usage(stderr);
    fprintf(stderr, "\ntezgah: error: no command given (see above, or tezgah --help)\n");
    return 1;
  }
  if (!strcmp(argv[1], "help")) { /* tezgah help [COMMAND] */
    if (argc < 3) {
      usage(stdout);
      return 0;
    }
    int i = find_command(argv[2]);
    if (i < 0 || argc > 3) {
      fprintf(stderr, "tezgah: error: help: unknown command '%s' (see tezgah --help)\n", argc > 3 ? argv[3] : argv[2]);
      return 1;
    }
    char *hargv[] = {argv[2], "--help", NULL};
    return commands[i].run(2, hargv);
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("tezgah %s\n", TEZGAH_VERSION);
    return 0;
  }
  int i = find_command(argv[1]);
  if (i >= 0) return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "tezgah: error: unknown command '%s' (see tezgah --help)\n", argv[1]);
  return 1;
}
