/* tezgah train: flags → tz_train_opts. On --resume the checkpoint's config and options are
 * used; shape flags that disagree with it, and options that would change the loss sequence,
 * are refused rather than silently ignored. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checkpoint/run_ckpt.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/plot.h"
#include "tokenizer/tokenizer.h"
#include "core/decimal.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/stop.h"
#include "dist/comm.h"
#include "model/config_json.h"
#include "model/presets.h"
#include "train/data_prep.h"
#include "train/loss_scale.h"
#include "train/recompute.h"
#include "tezgah.h"

static const char *HELP =
    "usage: tezgah train [options]   (-h, --help: this text)\n"
    "Train a model. With no options: a small llama on data/kjv.txt for 600 steps,\n"
    "then a sample.\n\n"
    "data:\n"
    "  --data LIST            text corpus: comma-separated files/globs (default\n"
    "                         data/kjv.txt), joined in order; documents separated by\n"
    "                         <|endoftext|> (also between files). A LIST option may\n"
    "                         be repeated (--data a.txt --data b.txt); a name with\n"
    "                         a ',' is taken whole where it exists and its first\n"
    "                         part alone does not; a name that exists is taken as\n"
    "                         it is, glob characters and all ('a[1].txt')\n"
    "  --vocab-size N         BPE vocabulary trained on the corpus, incl.\n"
    "                         <|endoftext|> (2048; 257 to 65536: uint16 shards)\n"
    "  --val-fraction F       share of tokens held out for validation (0.05;\n"
    "                         1e-6 to 0.5)\n"
    "  --train-shards LIST    llm.c token shards (comma-separated paths/globs)\n"
    "                         instead of --data; on --resume, copies of the run's\n"
    "                         shards (checked against its record) when they are gone\n"
    "  --val-shards LIST      validation shards of a --train-shards run (on\n"
    "                         --resume: as --train-shards)\n"
    "  --tokenizer SPEC       gpt2 or a tokenizer file (see tezgah tokenize --help):\n"
    "                         with --train-shards, the shards' tokenizer (stored in\n"
    "                         the run, for sample); with --init-from, replaces the\n"
    "                         model's (--data is encoded with it); with --data alone\n"
    "                         a BPE is trained instead (an error)\n"
    "  --tokenizer-backend B  cpu (default) or webgpu: where the corpus's BPE is\n"
    "                         trained and the corpus encoded (identical result; CPU\n"
    "                         with a notice without WebGPU); with --resume, where a\n"
    "                         run's deleted shards are made again\n"
    "run:\n"
    "  --run-dir DIR          output directory (default runs/<date-time>); a link\n"
    "                         'latest' beside it (in DIR's parent) points to it:\n"
    "                         tezgah sample finds runs/latest or ./latest, whichever\n"
    "                         is newer\n"
    "  --resume DIR           continue the run in DIR from its checkpoint (exactly);\n"
    "                         a --data run whose cached shards are gone prepares\n"
    "                         them again from its recorded corpus, if unchanged\n"
    "  --init-from MODEL      start a new run from MODEL's weights (run directory,\n"
    "                         checkpoint, llm.c or llama2.c file, Hugging Face\n"
    "                         directory): its config and tokenizer (or --tokenizer;\n"
    "                         --data is encoded with it), fresh optimizer; new data\n"
    "                         and hyperparameters; T up to its context\n"
    "  --backend NAME         cpu (default), webgpu or " TZ_HELP_CUDA "\n"
    "  --precision P          fp32, bf16 (cuda's default) or f16 (webgpu's default\n"
    "                         where the adapter has ShaderF16)\n"
    "  --profile              print the per-op time table (ms/step, share, GFLOP/s\n"
    "                         or GB/s; GPU timestamps, wall clock on cpu)\n"
    "  --recompute [auto|on|off]\n"
    "                         recompute norm and GeLU/SwiGLU outputs in the backward\n"
    "                         instead of keeping them per layer (less activation\n"
    "                         memory, a little slower; the same losses bit for bit,\n"
    "                         on cuda bf16 gpt2 up to the last bits: README).\n"
    "                         auto (the default): on only when the backend's free\n"
    "                         memory holds the run with it but not without (cuda,\n"
    "                         with a note; cpu and webgpu cannot tell their free\n"
    "                         memory: activations kept); when neither fits, an error\n"
    "                         before the training buffers are allocated. Bare\n"
    "                         --recompute: on. On --resume: the run's mode unless\n"
    "                         given\n"
    "  --logits-chunk ROWS|auto\n"
    "                         run the classifier and loss over ROWS of the batch's\n"
    "                         B·T rows (token positions) at a time: only ROWS\n"
    "                         rows of logits exist (less memory for large\n"
    "                         vocabularies; 0 = the whole batch;\n"
    "                         auto, the default: chunks of ~1 GiB when the whole\n"
    "                         batch's logits would take more than 3.5 GiB)\n"
    "  --threads N            OpenMP threads (default or 0: all cores; shared\n"
    "                         among data-parallel ranks)\n"
    "  --seed N               random seed (1337)\n"
    "data parallel (docs/DIST.md; -B is then per process, the global batch N·B):\n"
    "  --nproc N              start N processes on this machine (cpu: under mpirun,\n"
    "                         MPI all-reduce; cuda: one GPU each, NCCL); or launch\n"
    "                         with mpirun -np N tezgah train ...\n"
    "  --zero 0|1             1: ZeRO-1, AdamW moments sharded across processes (0)\n"
    "model:\n"
    "  --model NAME           a named shape: gpt2-124m, gpt2-350m, gpt2-774m,\n"
    "                         gpt2-1.5b (GPT-2 sizes, context 1024), stories15m,\n"
    "                         stories42m, stories110m (llama2.c's); flags below\n"
    "                         given as well override its fields\n"
    "  --arch llama|gpt2      family (llama)\n"
    "  --n-layer N  --n-head N  --n-kv-head N  --d-model N  --d-ff N\n"
    "                         shape (4, 4, n_head, 128, family default)\n"
    "  --max-seq-len N        context length (default: --seq-len)\n"
    "  --untied               separate lm_head (llama only)\n"
    "optimization:\n"
    "  -B, --batch-size N     sequences per micro-batch (16)\n"
    "  -T, --seq-len N        tokens per sequence (128)\n"
    "  --grad-accum N         micro-batches per step (1)\n"
    "  --steps N              optimizer steps (600); on --resume the run's new\n"
    "                         total, above the checkpoint's step (an N at or below\n"
    "                         it is refused: nothing to do)\n"
    "  --lr F  --warmup N  --min-lr-frac F\n"
    "                         peak LR (3e-3; 0 to 10, 0 trains nothing: taken\n"
    "                         with a warning), warmup steps (5% of steps), cosine\n"
    "                         floor (0.1)\n"
    "  --beta1 F --beta2 F --eps F --weight-decay F\n"
    "                         AdamW (0.9, 0.95, 1e-8, 0.1; decay on matrices only)\n"
    "  --grad-clip F          global grad-norm clip (1.0; 0 = off)\n"
    "  --loss-scale dynamic|off|N\n"
    "                         scale the loss gradient by S (N: a fixed power of\n"
    "                         two up to 2^24); dynamic: S from 2^16, halved and the\n"
    "                         step skipped on overflow, doubled after 2000 clean\n"
    "                         steps (default: dynamic where the backend's precision\n"
    "                         needs it, webgpu f16; else off)\n"
    "output:\n"
    "  --val-every N  --val-batches N\n"
    "                         validation cadence in steps and its size in batches\n"
    "                         (100, 8); one always follows the last step\n"
    "                         (--val-every 0: that one alone)\n"
    "  --ckpt-every N         checkpoint cadence in steps (200; 0: none during the\n"
    "                         run); one is always written at the end. On --resume\n"
    "                         the run's unless given\n"
    "  --keep N               keep the last N checkpoints as checkpoint-<step>.tzc\n"
    "                         (the step in 8 digits: checkpoint-00000030.tzc; hard\n"
    "                         links; checkpoint.tzc is always the newest; default\n"
    "                         1: only that one)\n"
    "  --keep-best            also keep checkpoint-best.tzc, the state with the\n"
    "                         lowest val loss (written when a validation improves on\n"
    "                         the best so far)\n"
    "  --log-every N          progress line cadence if stderr is not a terminal (10)\n"
    "  --sample-tokens N      tokens to sample after training (200; 0 = none)\n"
    "  --stop-after N         end this session after N steps with a checkpoint\n"
    "                         (resume later; 0 = off, the default)\n"
    "  --quiet                no progress output\n"
    "  --plot                 at the end, draw RUN_DIR/loss.svg (as tezgah plot\n"
    "                         RUN_DIR does)\n"
    "numerical guards (steps with a non-finite loss or grad norm: always skipped):\n"
    "  --skip-loss-z Z        skip a step whose loss z-score over the last 128 steps\n"
    "                         exceeds Z (0 = off)\n"
    "  --skip-norm-z Z        same for the grad norm (llm.c's -sl / -sg; 0 = off)\n"
    "debug:\n"
    "  --debug-inject-nan STEP[,STEP...]\n"
    "                         write NaN into those steps' gradients (tests the skip\n"
    "                         path)\n"
    "  --debug-inject-inf STEP[,STEP...]\n"
    "                         write +Inf into those steps' activations\n";

enum {
  O_DATA = 256, O_VOCAB, O_VALFRAC, O_TSHARDS, O_VSHARDS, O_TOKENIZER, O_RUNDIR, O_RESUME,
  O_BACKEND, O_THREADS, O_SEED, O_ARCH, O_NLAYER, O_NHEAD, O_NKV, O_DMODEL, O_DFF, O_MAXT,
  O_UNTIED, O_ACCUM, O_STEPS, O_LR, O_WARMUP, O_MINLR, O_B1, O_B2, O_EPS, O_WD, O_CLIP,
  O_VALEVERY, O_VALB, O_CKPT, O_LOG, O_SAMPLE, O_STOP, O_QUIET, O_SKIPLZ, O_SKIPNZ, O_INJNAN, O_INJINF, O_PROFILE, O_PRECISION, O_TOKBACKEND, O_KEEP, O_KEEPBEST, O_INIT, O_RECOMPUTE, O_LOGITS, O_PLOT, O_NPROC, O_ZERO, O_LOSSSCALE, O_MODEL, O_HELP
};

static const struct option LONG[] = {
    {"data", 1, 0, O_DATA}, {"vocab-size", 1, 0, O_VOCAB}, {"val-fraction", 1, 0, O_VALFRAC},
    {"train-shards", 1, 0, O_TSHARDS}, {"val-shards", 1, 0, O_VSHARDS}, {"tokenizer", 1, 0, O_TOKENIZER},
    {"tokenizer-backend", 1, 0, O_TOKBACKEND},
    {"run-dir", 1, 0, O_RUNDIR}, {"resume", 1, 0, O_RESUME}, {"init-from", 1, 0, O_INIT}, {"backend", 1, 0, O_BACKEND},
    {"precision", 1, 0, O_PRECISION},
    {"threads", 1, 0, O_THREADS}, {"seed", 1, 0, O_SEED}, {"arch", 1, 0, O_ARCH},
    {"n-layer", 1, 0, O_NLAYER}, {"n-head", 1, 0, O_NHEAD}, {"n-kv-head", 1, 0, O_NKV},
    {"d-model", 1, 0, O_DMODEL}, {"d-ff", 1, 0, O_DFF}, {"max-seq-len", 1, 0, O_MAXT},
    {"untied", 0, 0, O_UNTIED}, {"batch-size", 1, 0, 'B'}, {"seq-len", 1, 0, 'T'},
    {"grad-accum", 1, 0, O_ACCUM}, {"steps", 1, 0, O_STEPS}, {"lr", 1, 0, O_LR},
    {"warmup", 1, 0, O_WARMUP}, {"min-lr-frac", 1, 0, O_MINLR}, {"beta1", 1, 0, O_B1},
    {"beta2", 1, 0, O_B2}, {"eps", 1, 0, O_EPS}, {"weight-decay", 1, 0, O_WD},
    {"grad-clip", 1, 0, O_CLIP}, {"val-every", 1, 0, O_VALEVERY}, {"val-batches", 1, 0, O_VALB},
    {"ckpt-every", 1, 0, O_CKPT}, {"log-every", 1, 0, O_LOG}, {"sample-tokens", 1, 0, O_SAMPLE}, {"stop-after", 1, 0, O_STOP},
    {"quiet", 0, 0, O_QUIET}, {"profile", 0, 0, O_PROFILE}, {"recompute", 2, 0, O_RECOMPUTE}, {"logits-chunk", 1, 0, O_LOGITS}, {"skip-loss-z", 1, 0, O_SKIPLZ}, {"skip-norm-z", 1, 0, O_SKIPNZ},
    {"debug-inject-nan", 1, 0, O_INJNAN}, {"debug-inject-inf", 1, 0, O_INJINF}, {"keep", 1, 0, O_KEEP}, {"keep-best", 0, 0, O_KEEPBEST}, {"plot", 0, 0, O_PLOT}, {"nproc", 1, 0, O_NPROC}, {"zero", 1, 0, O_ZERO}, {"loss-scale", 1, 0, O_LOSSSCALE}, {"model", 1, 0, O_MODEL}, {"help", 0, 0, O_HELP}, {0, 0, 0, 0}};

/* Options that may accompany --resume without changing the loss sequence. --ckpt-every among
 * them: a checkpoint reads the state and changes none of it (tests/test_cli.sh: a run resumed
 * with another cadence has the uninterrupted run's losses). */
static int resume_allows(int opt) {
  return opt == O_RESUME || opt == O_STEPS || opt == O_THREADS || opt == O_BACKEND || opt == O_PRECISION || opt == O_RECOMPUTE || opt == O_LOGITS || opt == O_QUIET ||
         opt == O_LOG || opt == O_SAMPLE || opt == O_RUNDIR || opt == O_STOP || opt == O_INJNAN || opt == O_INJINF ||
         opt == O_PROFILE || opt == O_KEEP || opt == O_KEEPBEST || opt == O_PLOT || opt == O_NPROC || opt == O_ZERO ||
         opt == O_LOSSSCALE || opt == O_MODEL || opt == O_CKPT ||
         opt == O_TSHARDS || opt == O_VSHARDS || /* the run's shards from elsewhere (its cache deleted): train.c
                                                   * checks them against the run's record */
         opt == O_TOKBACKEND; /* where shards prepared again are tokenized: the same BPE and ids on either
                               * backend (tests/test_tok_webgpu.c), and checked byte for byte against the
                               * run's record (train_data.c, prepare_again); not part of the run */
}

static const char *flag_name(int opt) {
  for (const struct option *o = LONG; o->name; o++)
    if (o->val == opt) return o->name;
  return "?";
}

/* With --resume / --init-from: shape flags must agree with the checkpoint / model. A field set
 * by --model NAME, not by its flag, is said as the preset's ("--model stories15m (n_layer=6)"):
 * the flag's name blamed a flag the user never typed. typed: flags on the command line. */
static int check_model_shape(const tz_train_opts *o, const char *path, const int *given, const int *typed,
                             const tz_model_preset *preset) {
  tz_run_file rf;
  if (o->resume ? tz_run_open_resume(path, o->run_dir != NULL, &rf) : tz_run_open(path, &rf)) return -1;
  const tz_config *c = &rf.cfg;
  const struct { int opt; long want, have; const char *field; } chk[] = {
      {O_ARCH, o->model.arch, c->arch, "arch"}, {O_NLAYER, o->model.n_layer, c->n_layer, "n_layer"},
      {O_NHEAD, o->model.n_head, c->n_head, "n_head"}, {O_NKV, o->model.n_kv_head, c->n_kv_head, "n_kv_head"},
      {O_DMODEL, o->model.d_model, c->d_model, "d_model"}, {O_DFF, o->model.d_ff, c->d_ff, "d_ff"},
      {O_MAXT, o->model.max_seq_len, c->max_seq_len, "max_seq_len"}, {O_UNTIED, 0, !c->tied, "tied"},
      {O_VOCAB, o->vocab_size, c->vocab_size, "vocab_size"},
  };
  int rc = 0;
  char side[96];
  const char *whose = o->resume ? "checkpoint" : "model";
  if (given[O_ARCH - 256] && o->model.arch != c->arch) {
    if (typed[O_ARCH - 256] || !preset) snprintf(side, sizeof side, "--arch=%s", tz_arch_name(o->model.arch));
    else snprintf(side, sizeof side, "--model %s (arch=%s)", preset->name, tz_arch_name(o->model.arch));
    rc = tz_err("%s does not match the %s's arch=%s (%s)", side, whose, tz_arch_name(c->arch), rf.path);
  }
  for (size_t i = 1; i < sizeof chk / sizeof *chk && !rc; i++) /* [0] (arch) above */
    if (given[chk[i].opt - 256] && chk[i].want != chk[i].have && chk[i].opt != O_UNTIED) {
      if (typed[chk[i].opt - 256] || !preset)
        snprintf(side, sizeof side, "--%s=%ld", flag_name(chk[i].opt), chk[i].want);
      else snprintf(side, sizeof side, "--model %s (%s=%ld)", preset->name, chk[i].field, chk[i].want);
      rc = tz_err("%s does not match the %s's %s=%ld (%s)", side, whose, chk[i].field, chk[i].have, rf.path);
    }
  if (!rc && given[O_UNTIED - 256] && c->tied)
    rc = tz_err("--untied does not match the %s's tied lm_head (%s)", o->resume ? "checkpoint" : "model", rf.path);
  tz_run_close(&rf);
  return rc;
}

static int bad_preset(const char *name) {
  int n;
  const tz_model_preset *p = tz_model_presets(&n);
  char list[256] = "";
  for (int i = 0; i < n; i++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", p[i].name);
  return tz_err("--model: '%s' is not a known shape (%s)", name, list);
}

/* --model NAME: its fields where no explicit flag set them (flags win in any order), marked
 * as given so that --resume / --init-from check them against the checkpoint like flags. */
static void apply_preset(tz_train_opts *o, const tz_model_preset *p, int *given) {
  tz_config *m = &o->model;
  if (!given[O_ARCH - 256]) m->arch = p->arch;
  if (!given[O_NLAYER - 256]) m->n_layer = p->n_layer;
  if (!given[O_NHEAD - 256]) m->n_head = p->n_head;
  if (!given[O_NKV - 256]) m->n_kv_head = m->n_head;
  if (!given[O_DMODEL - 256]) m->d_model = p->d_model;
  if (!given[O_MAXT - 256]) m->max_seq_len = p->max_seq_len;
  for (int opt = O_ARCH; opt <= O_MAXT; opt++)
    if (opt != O_DFF) given[opt - 256] = 1;
}

/* One side of a shape relation, as the user gave it: "--n-head 5" when a flag set it, else the
 * field and where its value came from ("n_head=4 (--model stories15M's)", "(the default)"). */
static const char *shape_side(char *buf, size_t cap, int opt, const char *field, int value, const int *typed,
                              const tz_model_preset *preset) {
  if (typed[opt - 256]) snprintf(buf, cap, "--%s %d", flag_name(opt), value);
  else if (preset) snprintf(buf, cap, "%s=%d (--model %s's)", field, value, preset->name);
  else snprintf(buf, cap, "%s=%d (the default)", field, value);
  return buf;
}

/* A new model's shape relations (tz_config_finalize's, which names config fields: "config:
 * n_head=5 does not divide d_model=128") said in the flags the user typed, before any slow work.
 * typed: flags on the command line (not those a --model preset marked as given). The ranges of
 * single values are the flags' own (tz_arg_int). */
static int check_new_shape(const tz_train_opts *o, const int *typed, const tz_model_preset *preset) {
  const tz_config *m = &o->model;
  char a[96], b[96];
  int n_kv = m->n_kv_head ? m->n_kv_head : m->n_head;
  if (m->d_model % m->n_head)
    return tz_err("%s does not divide %s: each head takes d_model/n_head channels",
                  shape_side(a, sizeof a, O_NHEAD, "n_head", m->n_head, typed, preset),
                  shape_side(b, sizeof b, O_DMODEL, "d_model", m->d_model, typed, preset));
  if (m->n_head % n_kv)
    return tz_err("%s does not divide %s: each key/value head serves n_head/n_kv_head query heads",
                  shape_side(a, sizeof a, O_NKV, "n_kv_head", n_kv, typed, preset),
                  shape_side(b, sizeof b, O_NHEAD, "n_head", m->n_head, typed, preset));
  if (m->arch == TZ_ARCH_GPT2 && n_kv != m->n_head)
    return tz_err("%s and %s: gpt2 needs n_kv_head == n_head: it has no grouped-query attention",
                  shape_side(a, sizeof a, O_NKV, "n_kv_head", n_kv, typed, preset),
                  shape_side(b, sizeof b, O_NHEAD, "n_head", m->n_head, typed, preset));
  if (m->arch == TZ_ARCH_LLAMA && (m->d_model / m->n_head) % 2)
    return tz_err("%s / %s: the head size %d is odd; llama's RoPE rotates pairs of channels, so it must be even",
                  shape_side(a, sizeof a, O_DMODEL, "d_model", m->d_model, typed, preset),
                  shape_side(b, sizeof b, O_NHEAD, "n_head", m->n_head, typed, preset), m->d_model / m->n_head);
  return 0;
}

/* SIGINT / SIGTERM: finish the step, checkpoint, exit 128+sig; a second signal kills at once.
 * Before step 1 (data preparation) the run ends at once with an error line, also 128+sig.
 * g_by_launcher: the first one came from the train --nproc launcher above this rank (its pid
 * in TEZGAH_LAUNCHER_PID, launch.c), which then exits 128+sig itself.
 * A repeat of the first signal from the same process within a second is not a second signal
 * (core/stop.h's tz_stop_signal_seen: timeout(1) signals its command, then its group); a
 * launcher's forwarding always counts (it passes a second signal on only when one came). */
static volatile sig_atomic_t g_caught, g_by_launcher;
static long g_launcher; /* its pid; 0: not under the launcher */
#ifdef __wasi__
static void on_stop_signal(int sig) {
  if (tz_train_stop_requested()) {
    signal(sig, SIG_DFL);
    raise(sig);
  }
  g_caught = sig;
  tz_train_request_stop(sig);
}
#else /* (WASI's emulated signals have no sigaction: the wasm build has no --nproc) */
static void on_stop_siginfo(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  int by_launcher = g_launcher > 0 && si && (long)si->si_pid == g_launcher;
  switch (tz_stop_signal_seen(si, !by_launcher)) { /* a launcher's forwarding is never a repeat */
  case TZ_STOP_SIG_FIRST:
    g_by_launcher = by_launcher;
    g_caught = sig;
    tz_train_request_stop(sig);
    return;
  case TZ_STOP_SIG_REPEAT:
    return; /* the same sender's repeat: one signal */
  default:
    signal(sig, SIG_DFL); /* a second signal: end at once (delivered when this handler returns) */
    raise(sig);
  }
}
#endif
static void catch_stop(int sig) {
#ifdef __wasi__
  signal(sig, on_stop_signal);
#else
  struct sigaction sa = {0};
  sa.sa_sigaction = on_stop_siginfo;
  sa.sa_flags = SA_SIGINFO | SA_RESTART; /* SA_RESTART: as signal() installs it (glibc) */
  tz_stop_handler_mask(&sa.sa_mask); /* both stop signals held while one is handled */
  sigaction(sig, &sa, NULL);
#endif
}

/* --run-dir, --resume, --init-from: each names one directory, run or model. getopt lets a later
 * value win, harmless for most flags; for these the first was dropped without a word, so a
 * second one is refused (which to take is not guessed), and '' is no path. *dst is NULL until
 * the option is given (tz_train_opts_default). */
static int set_once(const char *flag, const char **dst, const char *val, const char *what) {
  if (*dst) return tz_err("%s: given twice ('%s', then '%s'); give the one %s", flag, *dst, val, what);
  *dst = val;
  return tz_arg_path(flag, val);
}

int tz_cmd_train(int argc, char **argv) {
  /* A reader of the log that goes away (`tezgah train 2>&1 | head`) must not end the run: its
   * SIGPIPE killed training at the next line, exit 141, without a word or a checkpoint. Ignored,
   * a write to the closed pipe fails with EPIPE, which stdio drops (no log line is checked), and
   * the run goes on to its checkpoints, metrics.jsonl and exit status; inherited by mpirun and
   * the ranks under --nproc. */
#ifdef SIGPIPE
  signal(SIGPIPE, SIG_IGN);
#endif
  tz_train_opts o;
  tz_train_opts_default(&o);
  const tz_model_preset *preset = NULL;
  int given[O_HELP - 256 + 1] = {0}, typed[O_HELP - 256 + 1] = {0}, given_B = 0, given_T = 0, plot = 0, c, nproc = 1, run_dir_default = 0;
  char default_dir[64];
  const char *data_list = NULL; /* --data's values (given more than once: joined) */
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":hB:T:", LONG, NULL)) != -1) {
    int e = 0, arch;
    if (c >= 256) given[c - 256] = typed[c - 256] = 1;
    switch (c) {
      case O_DATA: e = tz_arg_list_add("--data", &data_list, optarg), o.data = data_list; break;
      case O_VOCAB:
        e = tz_arg_int_why("--vocab-size", optarg, TZ_PREP_VOCAB_MIN, TZ_PREP_VOCAB_MAX, TZ_PREP_VOCAB_WHY, &o.vocab_size);
        break;
      case O_VALFRAC:
        e = tz_arg_float("--val-fraction", optarg, TZ_VAL_FRACTION_MIN, TZ_VAL_FRACTION_MAX, &o.val_fraction);
        break;
      case O_TSHARDS: e = tz_arg_list_add("--train-shards", &o.train_shards, optarg); break;
      case O_VSHARDS: e = tz_arg_list_add("--val-shards", &o.val_shards, optarg); break;
      case O_TOKENIZER: o.tokenizer = optarg, e = tz_tok_spec_check(optarg); break;
      case O_TOKBACKEND:
        o.tokenizer_backend = optarg;
        if (tz_tok_backend_check(optarg)) e = tz_err_prefix("--tokenizer-backend");
        break;
      case O_RUNDIR: e = set_once("--run-dir", &o.run_dir, optarg, "directory"); break;
      case O_RESUME: e = set_once("--resume", &o.resume, optarg, "run to continue"); break;
      case O_INIT: e = set_once("--init-from", &o.init_from, optarg, "model to start from"); break;
      case O_BACKEND: o.backend = optarg; break;
      case O_PRECISION:
        o.precision = optarg;
        if (!*optarg) e = tz_err("--precision: '' is not one of fp32, bf16, f16");
        break;
      case O_THREADS: e = tz_arg_int("--threads", optarg, 0, 1024, &o.threads); break;
      case O_SEED: e = tz_arg_u64("--seed", optarg, &o.seed); break;
      case O_ARCH:
        if ((arch = tz_arch_parse(optarg)) < 0) e = tz_err("--arch: '%s' is not llama or gpt2", optarg);
        else o.model.arch = (tz_arch)arch;
        break;
      case O_NLAYER: e = tz_arg_int("--n-layer", optarg, 1, 1024, &o.model.n_layer); break;
      case O_NHEAD: e = tz_arg_int("--n-head", optarg, 1, 4096, &o.model.n_head); break;
      case O_NKV: e = tz_arg_int("--n-kv-head", optarg, 1, 4096, &o.model.n_kv_head); break;
      case O_DMODEL: e = tz_arg_int("--d-model", optarg, 1, 65536, &o.model.d_model); break;
      case O_DFF: e = tz_arg_int("--d-ff", optarg, 1, 1 << 20, &o.model.d_ff); break;
      case O_MAXT: e = tz_arg_int("--max-seq-len", optarg, 1, 1 << 20, &o.model.max_seq_len); break;
      case O_UNTIED: o.model.tied = 0; break;
      case 'B': given_B = 1; e = tz_arg_int("--batch-size", optarg, 1, 1 << 20, &o.B); break;
      case 'T': given_T = 1; e = tz_arg_int("--seq-len", optarg, 1, 1 << 20, &o.T); break;
      case O_ACCUM: e = tz_arg_int("--grad-accum", optarg, 1, 1 << 20, &o.grad_accum); break;
      case O_STEPS: e = tz_arg_int("--steps", optarg, 1, 1 << 30, &o.steps); break;
      case O_LR: e = tz_arg_float("--lr", optarg, 0, 10, &o.lr); break;
      case O_WARMUP: e = tz_arg_int("--warmup", optarg, 0, 1 << 30, &o.warmup); break;
      case O_MINLR: e = tz_arg_float("--min-lr-frac", optarg, 0, 1, &o.min_lr_frac); break;
      case O_B1: e = tz_arg_float("--beta1", optarg, 0, 0.999999, &o.beta1); break;
      case O_B2: e = tz_arg_float("--beta2", optarg, 0, 0.999999999, &o.beta2); break;
      case O_EPS: e = tz_arg_float("--eps", optarg, 1e-30, 1, &o.eps); break;
      case O_WD: e = tz_arg_float("--weight-decay", optarg, 0, 10, &o.weight_decay); break;
      case O_CLIP: e = tz_arg_float("--grad-clip", optarg, 0, 1e9, &o.grad_clip); break;
      case O_VALEVERY: e = tz_arg_int("--val-every", optarg, 0, 1 << 30, &o.val_every); break;
      case O_VALB: e = tz_arg_int("--val-batches", optarg, 1, 1 << 20, &o.val_batches); break;
      case O_CKPT: e = tz_arg_int("--ckpt-every", optarg, 0, 1 << 30, &o.ckpt_every); break;
      case O_LOG: e = tz_arg_int("--log-every", optarg, 1, 1 << 30, &o.log_every); break;
      case O_SAMPLE: e = tz_arg_int("--sample-tokens", optarg, 0, 1 << 20, &o.sample_tokens); break;
      case O_STOP: e = tz_arg_int("--stop-after", optarg, 0, 1 << 30, &o.stop_after); break;
      case O_QUIET: o.quiet = 1; break;
      case O_KEEP: e = tz_arg_int("--keep", optarg, 1, 1 << 20, &o.keep); break;
      case O_KEEPBEST: o.keep_best = 1; break;
      case O_PLOT: plot = 1; break;
      case O_PROFILE: o.profile = 1; break;
      case O_RECOMPUTE: /* an optional value: --recompute=auto, or the next word when it is not an option */
        if (!optarg && optind < argc && argv[optind][0] != '-') optarg = argv[optind++];
        if (!optarg) o.recompute = TZ_RECOMPUTE_ON;
        else e = tz_recompute_parse(optarg, "--recompute", &o.recompute);
        break;
      case O_LOGITS:
        if (!strcmp(optarg, "auto")) o.logits_chunk = -1;
        else if (!tz_decimal(optarg, strlen(optarg), 0))
          e = tz_err("--logits-chunk: '%s' is not auto or a number of rows (0: the whole batch)", optarg);
        else e = tz_arg_int("--logits-chunk", optarg, 0, 1 << 30, &o.logits_chunk);
        break;
      case O_NPROC: e = tz_arg_int("--nproc", optarg, 1, 4096, &nproc); break;
      case O_ZERO: e = tz_arg_int("--zero", optarg, 0, 1, &o.zero); break;
      case O_SKIPLZ: e = tz_arg_float("--skip-loss-z", optarg, 0, 1e6, &o.skip_loss_z); break;
      case O_SKIPNZ: e = tz_arg_float("--skip-norm-z", optarg, 0, 1e6, &o.skip_norm_z); break;
      case O_INJNAN: o.debug_inject_nan = optarg; break;
      case O_LOSSSCALE: {
        int mode;
        float fixed;
        o.loss_scale = optarg;
        /* the parser reads "" as unset (a checkpoint without the option): refused here, or a
         * resume with --loss-scale= would drop the run's recorded setting */
        e = *optarg ? tz_loss_scale_parse(optarg, &mode, &fixed)
                    : tz_err("--loss-scale: '' is not dynamic, off or a power of two");
        break;
      }
      case O_INJINF: o.debug_inject_inf = optarg; break;
      case O_MODEL:
        if (!(preset = tz_model_preset_find(optarg))) e = bad_preset(optarg);
        break;
      case 'h':
      case O_HELP: printf("%s", HELP); return 0;
      case ':': tz_arg_bad("train", LONG, argc, argv, optind, 0, 1); return tz_cli_fail();
      default: tz_arg_bad("train", LONG, argc, argv, optind, optopt, 0); return tz_cli_fail();
    }
    if (e) return tz_cli_fail();
  }
  if (optind < argc) {
    tz_err("train: unexpected argument '%s' (see tezgah train --help)", argv[optind]);
    return tz_cli_fail();
  }
  if (preset) apply_preset(&o, preset, given);
  if (o.resume && o.init_from) {
    tz_err("--init-from: give --resume (continue a run) or --init-from (start one from a model), not both");
    return tz_cli_fail();
  }
  if (o.resume) {
    for (int i = 0; i <= O_HELP - 256; i++)
      if (given[i] && !resume_allows(i + 256) && !(i + 256 >= O_ARCH && i + 256 <= O_UNTIED)) {
        tz_err("--%s is not taken with --resume (the run keeps its checkpoint's value, so that it resumes exactly)", flag_name(i + 256));
        return tz_cli_fail();
      }
    if (given_B || given_T) {
      tz_err("--%s is not taken with --resume (the run keeps its checkpoint's value, so that it resumes exactly)",
             given_B ? "batch-size" : "seq-len");
      return tz_cli_fail();
    }
    if (check_model_shape(&o, o.resume, given, typed, preset)) return tz_cli_fail();
    if (!given[O_STEPS - 256]) o.steps = 0; /* keep the checkpoint's */
    if (!given[O_SAMPLE - 256]) o.sample_tokens = -1; /* the run's */
    if (!given[O_RECOMPUTE - 256]) o.recompute = -1;   /* the run's */
    if (!given[O_CKPT - 256]) o.ckpt_every = -1;       /* the run's */
  } else if (o.init_from && given[O_INIT - 256]) {
    /* the model's config wins: shape flags (and --vocab-size) must agree with it */
    if (check_model_shape(&o, o.init_from, given, typed, preset)) return tz_cli_fail();
    if (!given_T) o.T = 0; /* min(128, the model's context) */
  } else if (check_new_shape(&o, typed, preset))
    return tz_cli_fail();
  if (!o.resume && !o.run_dir) {
    /* runs/<date-time>, with -2, -3, ... when that name is taken (two runs in one second) */
    time_t t = time(NULL);
    char stamp[32];
    strftime(stamp, sizeof stamp, "runs/%Y%m%d-%H%M%S", localtime(&t));
    snprintf(default_dir, sizeof default_dir, "%s", stamp);
    for (int k = 2; tz_exists(default_dir) && k < 1000; k++) snprintf(default_dir, sizeof default_dir, "%s-%d", stamp, k);
    o.run_dir = default_dir;
    run_dir_default = 1;
  }
  /* Shard runs have no corpus to train a tokenizer on: --vocab-size is then the model's
   * vocabulary (it was ignored, and the run refused with "--vocab-size: needed ..."). */
  if (o.train_shards && given[O_VOCAB - 256]) o.model.vocab_size = o.vocab_size;
  if (o.train_shards && given[O_DATA - 256]) {
    tz_err("train: give either --data or --train-shards, not both");
    return tz_cli_fail();
  }
  if (given[O_VSHARDS - 256] && !o.train_shards && !o.resume) { /* it was ignored: the text's own split won */
    tz_err("--val-shards: a --data run holds out --val-fraction of its text for validation; give --val-shards with "
           "--train-shards (tezgah tokenize makes shards)");
    return tz_cli_fail();
  }
  if (given[O_TOKENIZER - 256] && !o.train_shards && !o.init_from) { /* it would be ignored */
    tz_err("--tokenizer: a --data run trains its own BPE (--vocab-size); give the tokenizer with --init-from "
           "MODEL, or tokenize the text first (tezgah tokenize) and train on --train-shards");
    return tz_cli_fail();
  }
  if (given[O_UNTIED - 256] && o.model.arch == TZ_ARCH_GPT2) {
    tz_err("--untied: gpt2 always ties lm_head to wte (use --arch llama for an untied lm_head)");
    return tz_cli_fail();
  }
  if (plot && !tz_plot_available()) return tz_cli_fail();
  tz_dist_env env; /* where this process sits: alone, the --nproc launcher, or a rank */
  if (tz_dist_env_read(&env)) return tz_cli_fail();
  if (nproc > 1) {
    if (env.world == 1) /* this is the launcher */
      return tz_launch_nproc(nproc, o.backend, run_dir_default ? default_dir : NULL, argc, argv);
    if (env.world != nproc) { /* a rank: the launcher's world must be the one asked for */
      tz_err("--nproc %d: this process is rank %d of %d", nproc, env.rank, env.world);
      return tz_cli_fail();
    }
  }
  if (run_dir_default && env.world > 1) { /* ranks started by mpirun: each one's clock could name another directory */
    tz_err("--run-dir: give the run directory when training with %d processes under mpirun (each rank would name "
           "its own runs/<date-time>; train --nproc chooses one for all)", env.world);
    return tz_cli_fail();
  }
  const char *lp = getenv("TEZGAH_LAUNCHER_PID");
  g_launcher = lp && env.world > 1 ? atol(lp) : 0;
  catch_stop(SIGINT);
  catch_stop(SIGTERM);
  int rc = tz_train(&o);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  /* a missing --data file: the reader named the file alone. The default corpus is relative to
   * the working directory (the repository's data/kjv.txt, which scripts/main.sh writes): run
   * elsewhere, the read failed naming a file the user never gave, with no word on what to do. */
  if (rc < 0 && tz_arg_list_failed_missing(o.data)) {
    if (given[O_DATA - 256]) {
      tz_err_prefix("--data");
    } else if (!o.train_shards && !o.resume) {
      char msg[TZ_ERR_MAX];
      snprintf(msg, sizeof msg, "%s", tz_errmsg());
      tz_err("%s (the default corpus, relative to the working directory: run from the repository root, or give "
             "--data FILE)", msg);
    }
  }
  /* in a data-parallel run the plot is rank 0's, like the metrics it reads */
  if (rc == 0 && plot && env.rank == 0 && tz_plot_run(o.run_dir ? o.run_dir : o.resume, NULL, 0, o.quiet)) rc = -1;
  /* a rank stopped by its launcher's signal exits 0: the launcher exits 128+sig for the job,
   * and mpirun, seeing a rank's nonzero status, would abort the others and print two boxes */
  int by_launcher = g_caught && g_by_launcher;
  if (rc < 0 && g_caught) { /* a signal, then a failure: before step 1 (tz_train's line says so) or the stop
                             * checkpoint failed (its error line): 128+sig, as for any interrupted command */
    tz_cli_fail();
    return by_launcher ? 0 : 128 + g_caught;
  }
  if (rc > 0 && by_launcher) return 0;
  return rc < 0 ? tz_cli_fail() : rc; /* rc > 0: stopped by a signal after a checkpoint */
}
