/* tezgah: the command-line entry point. Each subcommand lives in src/cli/cmd_<name>.c. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "tezgah.h"

static const struct {
  const char *name;
  int (*run)(int, char **);
  const char *help;
} commands[] = {
    {"train", tz_cmd_train, "train a model on a text corpus or token shards (default: data/kjv.txt)"},
    {"sample", tz_cmd_sample, "generate text from a run or checkpoint (default: runs/latest)"},
    {"eval", tz_cmd_eval, "validation loss and perplexity of a model on token shards"},
    {"convert", tz_cmd_convert, "import llama2.c / llm.c / Hugging Face models; export to llm.c, llama2.c, HF"},
    {"logits", tz_cmd_logits, "print a model's logits on fixed token ids as JSON (parity checks)"},
    {"tokenize", tz_cmd_tokenize, "tokenize a text file into an llm.c token shard"},
    {"encode", tz_cmd_encode, "print the token ids of a text as a JSON array"},
    {"decode", tz_cmd_decode, "print the text of a JSON array of token ids"},
    {"info", tz_cmd_info, "list backends; WebGPU adapter, features and limits"},
};
#define N_COMMANDS (int)(sizeof commands / sizeof *commands)

static void usage(FILE *f) {
  fprintf(f, "tezgah %s: train and run GPT-2 / Llama-style language models\n\n"
             "usage: tezgah COMMAND [options]   (tezgah COMMAND --help for its options)\n\ncommands:\n",
          TEZGAH_VERSION);
  for (int i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("tezgah %s\n", TEZGAH_VERSION);
    return 0;
  }
  for (int i = 0; i < N_COMMANDS; i++)
    if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "tezgah: error: unknown command '%s' (see tezgah --help)\n", argv[1]);
  return 2;
}
