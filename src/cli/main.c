/* tezgah: the command-line entry point. Each subcommand lives in src/cli/cmd_<name>.c. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#ifndef __wasi__
#include <sched.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
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
    {"env", tz_cmd_env, "environment variables read (TEZGAH_*, TZ_*): defaults, meanings"},
};
#define N_COMMANDS (int)(sizeof commands / sizeof *commands)

static void usage(FILE *f) {
  fprintf(f, "tezgah %s: train and run GPT-2 / Llama-style language models\n\n"
             "usage: tezgah COMMAND [options]\n"
             "       tezgah help COMMAND, or tezgah COMMAND --help: the command's options\n"
             "backends: cpu, webgpu, " TZ_HELP_CUDA "\n"
             "          (--backend NAME; the tokenizer commands: cpu, webgpu)\n\ncommands:\n",
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
/* The OpenMP wait policy, chosen once at start (docs/PERF.md, "CPU training on 16 cores").
 * libgomp's default spins an idle thread at every barrier for up to 300000 pauses before it
 * sleeps. Where another process holds cores the spinning threads take turns with it: a step
 * slowed down 5x on 2 loaded cores (134 vs 637 tok/s), and 2 busy cores of 16 cost 45% with a
 * 30000 spin. Passive waiting (no spin) is robust there but costs every barrier a futex
 * wake-up of the team: 21% of a training step on 16 idle cores (5,310 vs 6,750 tok/s).
 * So: libgomp's default when the team fits in the cores that are free now, else
 * OMP_WAIT_POLICY=PASSIVE. "Free" = the CPUs this process may run on minus the other
 * runnable tasks (procs_running of /proc/stat, the median of 3 samples 1 ms apart); the team
 * = OMP_NUM_THREADS, else --threads N, else those CPUs. A load that starts later is not
 * seen. libgomp reads its environment when it is loaded, before main(), so passive waiting
 * is set by re-executing this program once. Nothing is changed when the user chose a policy
 * (OMP_WAIT_POLICY or GOMP_SPINCOUNT set) or under valgrind (the exec would leave its
 * supervision). */

/* Runnable tasks on the machine now, this process included; -1 if unknown. */
#ifndef __wasi__ /* the wasm build has one thread, no /proc and no exec: nothing to choose */
static int procs_running(void) {
  FILE *f = fopen("/proc/stat", "r");
  if (!f) return -1;
  char line[256];
  int n = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "procs_running %d", &n) == 1) break;
  fclose(f);
  return n;
}

/* The team size the run will ask for: OMP_NUM_THREADS, else --threads N / --threads=N. 0:
 * the OpenMP default (all CPUs this process may use). */
static int team_size(char **argv) {
  const char *e = getenv("OMP_NUM_THREADS");
  if (e && atoi(e) > 0) return atoi(e);
  for (int i = 1; argv[i]; i++) {
    if (!strcmp(argv[i], "--threads") && argv[i + 1]) return atoi(argv[i + 1]);
    if (!strncmp(argv[i], "--threads=", 10)) return atoi(argv[i] + 10);
  }
  return 0;
}

static int spin_fits(char **argv) {
  cpu_set_t set;
  int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
  int team = team_size(argv);
  if (team <= 0 || team > cpus) team = cpus;
  int r[3];
  for (int i = 0; i < 3; i++) {
    if (i) usleep(1000);
    if ((r[i] = procs_running()) < 0) return 0;
  }
  int lo = r[0] < r[1] ? r[0] : r[1], hi = r[0] < r[1] ? r[1] : r[0];
  int med = r[2] < lo ? lo : r[2] > hi ? hi : r[2];
  return team <= cpus - (med - 1);
}

/* Commands that run no OpenMP team (help, version, info, plot, env): the policy does not matter to
 * them, and on a busy machine the re-exec would make them pay the program's start twice. */
static int runs_no_team(char **argv) {
  static const char *const none[] = {"--help", "-h", "--version", "help", "info", "plot", "env"};
  if (!argv[1]) return 1;
  for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
    if (!strcmp(argv[1], none[i])) return 1;
  for (int i = 2; argv[i]; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
  /* `sample --backend cuda`: the model runs on the GPU (the weight upload's 4 copy threads
   * run once, for ~20 ms); the probe's 2 ms of sleeps would be most of the time before the
   * command starts */
  if (!strcmp(argv[1], "sample"))
    for (int i = 2; argv[i]; i++)
      if ((!strcmp(argv[i], "--backend") && argv[i + 1] && !strcmp(argv[i + 1], "cuda")) ||
          !strcmp(argv[i], "--backend=cuda"))
        return 1;
  return 0;
}

static void set_wait_policy(char **argv) {
  if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") || runs_no_team(argv)) return;
  /* an OMP_NUM_THREADS libgomp rejects: it has said so once at load (and uses its default);
   * a re-exec would make it say so twice */
  const char *nt = getenv("OMP_NUM_THREADS");
  if (nt && atoi(nt) <= 0) return;
  const char *pre = getenv("LD_PRELOAD");
  if (pre && strstr(pre, "vgpreload")) return;
  if (spin_fits(argv) || setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) return;
  execv("/proc/self/exe", argv); /* returns only on failure: run on with the default policy */
}
#endif

#if defined(__linux__)
/* TEZGAH_DETACH_EXIT=1 (Linux; only where the process leaves quickly, see main): the last
 * reference to the CUDA driver's device files and to the address space passes to a short-lived
 * child, so that the driver's context teardown (~0.1 s after `sample` returned, H200,
 * 2026-12-02: freeing the context and its device memory when the last file reference closes
 * and the mappings go) runs after the command's process has ended and its output is closed.
 * The child shares the address space (CLONE_VM: the parent's exit then unmaps nothing) and
 * holds copies of the /dev/nvidia* descriptors only (every other descriptor, stdout among
 * them, is closed in it: a reader of the output sees its end when the parent ends); it waits
 * for the parent's end (EOF on a pipe whose write end only the parent holds) and exits, which
 * tears everything down as the parent's exit would have. Not the default: a measurement
 * (scripts/device_cuda_decode5.sh) decides. 0 = done (does not return), -1 = not possible
 * (the caller exits as before). */
#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#define DETACH_MAX_FDS 1024
typedef struct {
  int pipe_r, n;
  int fd[DETACH_MAX_FDS];
} detach_job;
static int detach_child(void *p) { /* CLONE_VM: only plain system calls here */
  detach_job *j = p;
  for (int i = 0; i < j->n; i++) close(j->fd[i]);
  char b;
  for (int i = 0; i < 100 && read(j->pipe_r, &b, 1) < 0; i++) {
  } /* returns 0 (EOF) once the parent has ended; an interrupted read is tried again */
  _exit(0);
}
static int detach_exit(int rc) {
  static detach_job job; /* static: the child reads it after the parent's stack is gone */
  int pp[2];
  if (pipe(pp)) return -1;
  job.pipe_r = pp[0];
  job.n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  struct dirent *e;
  while ((e = readdir(d))) {
    int fd = atoi(e->d_name);
    char path[64], target[256];
    if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == dirfd(d) || fd == pp[0]) continue;
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, target, sizeof target - 1);
    target[n > 0 ? n : 0] = 0;
    if (strncmp(target, "/dev/nvidia", 11) == 0) continue; /* kept by the child */
    if (job.n == DETACH_MAX_FDS) {
      closedir(d);
      return -1;
    }
    job.fd[job.n++] = fd;
  }
  closedir(d);
  size_t stack_bytes = 64 << 10;
  char *stack = mmap(NULL, stack_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return -1;
  if (clone(detach_child, stack + stack_bytes, CLONE_VM | SIGCHLD, &job) < 0) return -1;
  _exit(rc); /* the write end of the pipe closes with this process */
}
#endif

static void cli_fatal(const char *msg) {
  fprintf(stderr, "tezgah: error: %s\n", msg);
  exit(1);
}

int main(int argc, char **argv) {
#ifndef __wasi__
  set_wait_policy(argv);
#endif
  tz_set_fatal_handler(cli_fatal); /* out of memory, a lost GPU: exit 1 (the library aborts) */
  if (argc < 2) { /* a usage error like any other (exit 1), after the list of commands */
    usage(stderr);
    fprintf(stderr, "\ntezgah: error: no command given (see above, or tezgah --help)\n");
    return 1;
  }
  if (!strcmp(argv[1], "help")) { /* tezgah help [COMMAND] */
    /* help's own help (help help, help --help, help -h) is the top-level one: it lists what
     * help takes (they failed as "unknown command": the fresh-clone walkthrough, 2026-12-05) */
    if (argc < 3 || (argc == 3 && (!strcmp(argv[2], "help") || !strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")))) {
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
  if (i >= 0) {
    int rc = commands[i].run(argc - 1, argv + 1);
    /* Leave without the libraries' exit handlers once stdio is flushed (a command has closed
     * its files by now) when the command made a CUDA backend: the CUDA runtime's handler tears
     * the context down, 0.09-0.10 s of a 1-second `sample` on the H200 (2026-12-02), work the
     * kernel does anyway when the process ends. TEZGAH_QUICK_EXIT=0: never (run the handlers,
     * e.g. for a leak checker); =1: after any command. Measured by scripts/device_cuda_decode3.sh (since removed; device_cuda_decode5.sh times the exit's A/Bs). */
    const char *qe = getenv("TEZGAH_QUICK_EXIT");
    int quick = qe && *qe ? strcmp(qe, "0") != 0 : tz_backend_cuda_was_created();
    if (quick) {
      fflush(NULL);
      const char *rs = getenv("TEZGAH_EXIT_RESET"); /* A/B: the context torn down before the exit */
      if (rs && *rs && strcmp(rs, "0") != 0 && tz_backend_cuda_was_created()) {
        double ms = tz_backend_cuda_reset_device();
        const char *vb = getenv("TEZGAH_VERBOSE");
        if (vb && *vb && strcmp(vb, "0") != 0) fprintf(stderr, "exit: cudaDeviceReset %.1f ms\n", ms);
      }
#if defined(__linux__)
      const char *de = getenv("TEZGAH_DETACH_EXIT");
      if (de && *de && strcmp(de, "0") != 0 && tz_backend_cuda_was_created()) detach_exit(rc);
#endif
      _exit(rc);
    }
    return rc;
  }
  fprintf(stderr, "tezgah: error: unknown command '%s' (see tezgah --help)\n", argv[1]);
  return 1;
}
