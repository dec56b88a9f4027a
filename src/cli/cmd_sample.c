/* tezgah sample [RUN_DIR|CKPT]: stream generated text to stdout. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "sample/sampler.h"
#include "tokenizer/tokenizer.h"
#include "tezgah.h"

static const char *HELP =
    "usage: tezgah sample [RUN_DIR|CHECKPOINT|HF_DIR] [options]   (-h, --help)\n"
    "Generate text with a KV cache, streaming to stdout. Default model: the newer of\n"
    "runs/latest and ./latest (train writes latest beside the run directory).\n"
    "CHECKPOINT may also be a llama2.c (.bin, legacy or version 1) or llm.c GPT-2\n"
    "file, or a Hugging Face directory (config.json + model.safetensors\n"
    "[+ tokenizer.json]).\n\n"
    "  --tokenizer PATH       tokenizer file (needed for llama2.c / llm.c\n"
    "                         checkpoints): ours, llama2.c tokenizer.bin or llm.c\n"
    "                         gpt2_tokenizer.bin. With a llama2.c tokenizer\n"
    "                         generation follows llama2.c run.c exactly: BOS=1,\n"
    "                         --tokens counts all positions incl. the prompt\n"
    "                         (run.c -n; 0 = the context length); example below\n"
    "  --prompt TEXT          text to continue (default: empty); one longer than the\n"
    "                         model's context keeps its last tokens (a warning\n"
    "                         says how many were dropped)\n"
    "  --tokens N             maximum new tokens (256; 0 = the prompt alone);\n"
    "                         stops early at <|endoftext|>; past the model's\n"
    "                         context the most recent half is kept (sliding\n"
    "                         window)\n"
    "  --temperature F        0 = greedy (0.8)\n"
    "  --top-k N              keep the N most likely tokens (40; 0 = off)\n"
    "  --top-p F              nucleus sampling threshold (1 = off)\n"
    "  --seed N               random seed (1337)\n"
    "  --batch N              generate N samples of the prompt at once (1), row i\n"
    "                         with seed + i (the same text as --batch 1 --seed\n"
    "                         SEED+i, up to rounding: see README); printed one\n"
    "                         after the other when all are done\n"
    "  --prompts FILE         one prompt per line, one row each, generated at once\n"
    "                         (the batch is the number of prompts; row i seed + i);\n"
    "                         blank lines are skipped (an empty prompt: --prompt '')\n"
    "  --ignore-eot           keep going past <|endoftext|> (exactly N tokens)\n"
    "  --stats                print load, prefill and decoding times to stderr\n"
    "  --backend NAME         cpu (default), webgpu or " TZ_HELP_CUDA "\n"
    "  --precision P          fp32, bf16 (cuda's default) or f16 (webgpu's default\n"
    "                         where the adapter has ShaderF16)\n"
    "  --threads N            OpenMP threads (default: all cores)\n"
    "example (a llama2.c model and tokenizer):\n"
    "  tezgah sample stories260K.bin --tokenizer tok512.bin --temperature 0 \\\n"
    "      --tokens 200\n";

int tz_cmd_sample(int argc, char **argv) {
  static const struct option LONG[] = {
      {"prompt", 1, 0, 'p'}, {"tokens", 1, 0, 'n'}, {"temperature", 1, 0, 't'}, {"top-k", 1, 0, 'k'},
      {"top-p", 1, 0, 'P'}, {"seed", 1, 0, 's'}, {"backend", 1, 0, 'b'}, {"threads", 1, 0, 'j'},
      {"tokenizer", 1, 0, 'z'}, {"precision", 1, 0, 'r'}, {"batch", 1, 0, 'B'}, {"ignore-eot", 0, 0, 'E'}, {"prompts", 1, 0, 'F'},
      {"stats", 0, 0, 'S'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
  tz_sample_opts o;
  tz_sample_opts_default(&o);
  int c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":h", LONG, NULL)) != -1) {
    int e = 0;
    switch (c) {
      case 'p': o.prompt = optarg; break;
      case 'n': e = tz_arg_int("--tokens", optarg, 0, 1 << 24, &o.tokens); break;
      case 't': e = tz_arg_float("--temperature", optarg, 0, 100, &o.temperature); break;
      case 'k': e = tz_arg_int("--top-k", optarg, 0, 1 << 24, &o.top_k); break;
      case 'P': e = tz_arg_float("--top-p", optarg, 1e-9, 1, &o.top_p); break;
      case 's': e = tz_arg_u64("--seed", optarg, &o.seed); break;
      case 'b': o.backend = optarg; break;
      case 'r':
        o.precision = optarg;
        if (!*optarg) {
          tz_err("--precision: '' is not one of fp32, bf16, f16");
          return tz_cli_fail();
        }
        break;
      case 'z': o.tokenizer = optarg, e = tz_tok_spec_check(optarg); break;
      case 'B': e = tz_arg_int("--batch", optarg, 1, 1024, &o.batch); break;
      case 'E': o.ignore_eot = 1; break;
      case 'F': o.prompts_file = optarg, e = tz_arg_path("--prompts", optarg); break;
      case 'S': o.stats = 1; break;
      case 'j': e = tz_arg_int("--threads", optarg, 0, 1024, &o.threads); break;
      case 'h': fputs(HELP, stdout); return 0;
      case ':': tz_arg_bad("sample", LONG, argc, argv, optind, 0, 1); return tz_cli_fail();
      default: tz_arg_bad("sample", LONG, argc, argv, optind, optopt, 0); return tz_cli_fail();
    }
    if (e) return tz_cli_fail();
  }
  if (optind < argc) o.model = argv[optind++];
  if (tz_arg_path("sample: RUN_DIR|CHECKPOINT|HF_DIR", o.model)) return tz_cli_fail();
  if (optind < argc) {
    tz_err("sample: unexpected argument '%s' (see tezgah sample --help)", argv[optind]);
    return tz_cli_fail();
  }
  const char *qe = getenv("TEZGAH_QUICK_EXIT"); /* main.c's quick exit after a CUDA backend */
  tz_sample_process_exits_after(!qe || !*qe || strcmp(qe, "0") != 0);
  return tz_sample(&o, stdout) ? tz_cli_fail() : 0;
}
