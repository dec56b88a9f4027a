/* tezgah train --nproc N: start N data-parallel ranks of this same command on this machine.
 *
 * cpu:  run Open MPI's mpirun as a child (the ranks all-reduce through MPI):
 *       mpirun -np N --oversubscribe --bind-to none --stdin none [--allow-run-as-root] <this exe> train ...
 *       in its own process group, and wait: a rank that dies ends the job (mpirun's message names
 *       it), then one `tezgah: error:` line and exit 1; SIGINT / SIGTERM to this process are
 *       passed to the ranks themselves, mpirun's children (they finish the step, checkpoint,
 *       and rank 0 says "interrupted" or "terminated" as one process does; a second signal is
 *       passed on too and ends them at once, as it ends one process), and the exit status
 *       is 128+sig. The ranks know this launcher's pid (TEZGAH_LAUNCHER_PID) and exit 0 after
 *       its signal, leaving the status to it (mpirun would abort the job on a nonzero one, with
 *       two boxes of text).
 * cuda: no MPI needed. This process makes an ncclUniqueId (ncclGetUniqueId needs no GPU; it
 *       keeps NCCL's bootstrap root alive here while the ranks connect), forks N children that
 *       exec this program again with TEZGAH_RANK, TEZGAH_WORLD_SIZE, TEZGAH_LOCAL_RANK and
 *       TEZGAH_NCCL_ID set (rank r uses GPU r), and waits. When a rank fails (non-zero exit or a
 *       signal) the others get SIGTERM, then SIGKILL after TZ_GRACE_S seconds, one line names
 *       the rank, and the exit status is 1. SIGINT / SIGTERM to this process are passed to the
 *       ranks (they finish the step together, checkpoint and exit 128+sig); a second one is
 *       passed too and ends them at once, without a checkpoint, as it ends one process.
 * The ranks find --nproc in their arguments again and ignore it (the environment says they
 * are ranks). A default run directory (runs/<date-time>) is chosen here once and given to every
 * rank as --run-dir: each rank's own clock could name another. */
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"

#ifdef __wasi__
/* The wasm build (scripts/build_wasm.sh): WASI has no processes to start (no fork, exec,
 * waitpid or kill) and the build has no MPI, so --nproc is refused with one line. */
int tz_launch_nproc(int nproc, const char *backend, const char *run_dir, int argc, char **argv) {
  tz_err("--nproc %d: the wasm build runs one process (no mpirun or fork in WASI); train without "
         "--nproc, or use the native build", nproc);
  return tz_cli_fail();
}
#else
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/stop.h"

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "dist/comm.h"

#define TZ_GRACE_S 10

static volatile sig_atomic_t g_sig, g_alarm;
static atomic_int g_nsig; /* atomic: two signals handled at once on two threads are two counts */
/* SIGINT / SIGTERM: counted and passed to the ranks by the wait loops (the first, and a second
 * one); a repeat of the first from the same process within a second is not counted
 * (core/stop.h's tz_stop_signal_seen: timeout(1) signals this launcher, then its group). */
static void on_sig(int s, siginfo_t *si, void *uc) {
  (void)uc;
  if (tz_stop_signal_seen(si, 1) == TZ_STOP_SIG_REPEAT) return;
  g_sig = s;
  atomic_fetch_add(&g_nsig, 1);
}
static void on_alarm(int s) { g_alarm = 1; }

/* This executable's path (argv[0] may be relative or searched in PATH). */
static char *self_exe(void) {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return NULL;
  buf[n] = 0;
  return tz_strdup(buf);
}

/* The ranks' arguments: argv, plus --run-dir `run_dir` when the launcher chose the default. */
static char **rank_args(char **av, int k, int argc, char **argv, const char *run_dir) {
  for (int i = 0; i < argc; i++) av[k++] = argv[i];
  if (run_dir) {
    av[k++] = "--run-dir";
    av[k++] = (char *)run_dir;
  }
  av[k] = NULL;
  return av;
}

static void describe(char *out, size_t n, int status) {
  if (WIFSIGNALED(status)) snprintf(out, n, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else snprintf(out, n, "exited with status %d", WEXITSTATUS(status));
}

/* Send sig to the N ranks of mpirun's job, its children (Open MPI forks a local job's processes
 * itself): 1 when there were N, else 0 and none is signalled (the ranks are still starting).
 * The signal went to mpirun before, which aborts the job: SIGTERM to the ranks (a Ctrl-C's
 * stop line read "terminated") and SIGKILL a second later (Open MPI's odls_base_sigkill_timeout),
 * which cut a larger model's stop checkpoint short: no checkpoint, its temporary file left. */
static int signal_ranks(pid_t mpirun, int nproc, int sig) {
  DIR *d = opendir("/proc");
  if (!d) return 0;
  pid_t *kids = tz_calloc((size_t)nproc + 1, sizeof *kids);
  int n = 0;
  for (struct dirent *e; n <= nproc && (e = readdir(d));) {
    char path[300], buf[512];
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    const char *p = strrchr(buf, ')'); /* "pid (comm) state ppid ...": comm may hold spaces */
    long ppid;
    if (p && sscanf(p + 1, " %*c %ld", &ppid) == 1 && ppid == (long)mpirun) kids[n++] = (pid_t)atol(e->d_name);
  }
  closedir(d);
  int all = n == nproc;
  for (int i = 0; all && i < n; i++) kill(kids[i], sig);
  free(kids);
  return all;
}

/* cpu: mpirun running N copies of this command, as a watched child. */
static int launch_mpirun(int nproc, const char *run_dir, int argc, char **argv) {
  tz_err_clear();
  if (!tz_comm_have_mpi() && *tz_errmsg()) { /* built with MPI, but its module does not load */
    char what[64];
    snprintf(what, sizeof what, "--nproc %d on the cpu backend", nproc);
    return tz_err_prefix(what);
  }
  if (!tz_comm_have_mpi())
    return tz_err("--nproc %d on the cpu backend runs the ranks under mpirun, and this tezgah was built without "
                  "MPI (TEZGAH_MPI=OFF or no libopenmpi-dev at build time)",
                  nproc);
  char *exe = self_exe();
  if (!exe) return tz_err("--nproc: cannot find this program's path (/proc/self/exe)");
  char np[16];
  snprintf(np, sizeof np, "%d", nproc);
  char **av = tz_calloc((size_t)argc + 16, sizeof *av);
  int k = 0;
  av[k++] = "mpirun";
  av[k++] = "-np";
  av[k++] = np;
  av[k++] = "--oversubscribe"; /* more ranks than cores is allowed (each rank gets its share of threads) */
  av[k++] = "--bind-to";
  av[k++] = "none";
  av[k++] = "--stdin"; /* mpirun runs in its own process group: reading the terminal would stop it */
  av[k++] = "none";
  if (geteuid() == 0) av[k++] = "--allow-run-as-root"; /* containers: Open MPI refuses root otherwise */
  av[k++] = exe;
  rank_args(av, k, argc, argv, run_dir);
  int pipefd[2]; /* exec failure report: errno through a close-on-exec pipe */
  if (pipe(pipefd)) {
    free(av);
    free(exe);
    return tz_err("--nproc: pipe: %s", strerror(errno));
  }
  fcntl(pipefd[1], F_SETFD, FD_CLOEXEC);
  char launcher[24]; /* the ranks' TEZGAH_LAUNCHER_PID (mpirun passes its environment on) */
  snprintf(launcher, sizeof launcher, "%ld", (long)getpid());
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    free(av);
    free(exe);
    return tz_err("--nproc: fork: %s", strerror(e));
  }
  if (pid == 0) {
    /* its own process group: a terminal's Ctrl-C reaches this launcher alone, which passes it
     * on to the ranks; a second one too, which ends them at once, without a checkpoint, as a
     * second Ctrl-C ends one process (mpirun then ends the job) */
    setpgid(0, 0);
    close(pipefd[0]);
    setenv("TEZGAH_LAUNCHER_PID", launcher, 1);
    execvp("mpirun", av);
    int e = errno;
    if (write(pipefd[1], &e, sizeof e) < 0) {}
    _exit(127);
  }
  setpgid(pid, pid);
  close(pipefd[1]);
  int exec_errno = 0;
  ssize_t got = read(pipefd[0], &exec_errno, sizeof exec_errno);
  close(pipefd[0]);
  struct sigaction sa = {0}, old_int, old_term;
  sa.sa_sigaction = on_sig;
  sa.sa_flags = SA_SIGINFO;
  tz_stop_handler_mask(&sa.sa_mask); /* both held while one is handled */
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  int status = 0, forwarded = 0, passed = 0;
  for (;;) {
    while (g_nsig > passed && passed < 2) { /* the first signal and a second one (see above) */
      if (!signal_ranks(pid, nproc, g_sig)) kill(pid, g_sig); /* still starting: mpirun aborts the job */
      if (!forwarded) forwarded = g_sig;
      passed++;
    }
    if (waitpid(pid, &status, 0) == pid) break;
    if (errno != EINTR) break;
  }
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  free(av);
  free(exe);
  if (got == (ssize_t)sizeof exec_errno)
    return tz_err("--nproc %d on the cpu backend needs mpirun (%s); install openmpi-bin, or use mpirun -np %d yourself",
                  nproc, strerror(exec_errno), nproc);
  /* the ranks checkpointed (their lines say where), or, after a second signal, ended at once */
  if (forwarded) return 128 + forwarded;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  char how[96];
  describe(how, sizeof how, status);
  return tz_err("--nproc %d: mpirun %s: a rank failed (its messages and mpirun's are above)", nproc, how);
}


/* cuda: fork N ranks with the NCCL id in their environment and watch them. */
static int launch_local(int nproc, const char *run_dir, int argc, char **argv) {
  char id[512];
  if (tz_nccl_unique_id_hex(id, sizeof id)) return -1;
  char *exe = self_exe();
  if (!exe) return tz_err("--nproc: cannot find this program's path (/proc/self/exe)");
  char **av = tz_calloc((size_t)argc + 4, sizeof *av);
  av[0] = "tezgah";
  rank_args(av, 1, argc, argv, run_dir);
  pid_t *pids = tz_calloc((size_t)nproc, sizeof *pids);
  pid_t pgid = 0;
  fflush(NULL);
  for (int r = 0; r < nproc; r++) {
    pid_t pid = fork();
    if (pid < 0) {
      int e = errno;
      for (int j = 0; j < r; j++) kill(pids[j], SIGKILL);
      while (wait(NULL) > 0) {}
      free(av);
      free(pids);
      free(exe);
      return tz_err("--nproc: fork: %s", strerror(e));
    }
    if (pid == 0) {
      /* one process group for the ranks: a terminal's Ctrl-C reaches this launcher alone,
       * which passes it on once (a second signal would kill the ranks at once) */
      setpgid(0, pgid);
      char v[32];
      snprintf(v, sizeof v, "%d", r);
      setenv("TEZGAH_RANK", v, 1);
      setenv("TEZGAH_LOCAL_RANK", v, 1);
      snprintf(v, sizeof v, "%d", nproc);
      setenv("TEZGAH_WORLD_SIZE", v, 1);
      setenv("TEZGAH_NCCL_ID", id, 1);
      execv(exe, av);
      fprintf(stderr, "tezgah: error: --nproc: cannot run %s: %s\n", exe, strerror(errno));
      _exit(127);
    }
    if (!pgid) pgid = pid;
    setpgid(pid, pgid); /* also here: no race with the first signal */
    pids[r] = pid;
  }
  struct sigaction sa = {0}, old_int, old_term, old_alrm;
  sa.sa_sigaction = on_sig;
  sa.sa_flags = SA_SIGINFO;
  tz_stop_handler_mask(&sa.sa_mask); /* both held while one is handled */
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sa.sa_flags = 0;
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, &old_alrm);
  int alive = nproc, failed = 0, forwarded = 0, passed = 0, result = 0;
  while (alive > 0) {
    while (g_nsig > passed && passed < 2) { /* a second signal too: the ranks then end at once */
      kill(-pgid, g_sig);
      if (!forwarded) forwarded = g_sig;
      passed++;
    }
    if (g_alarm) { /* the grace period is over */
      for (int r = 0; r < nproc; r++)
        if (pids[r] > 0) kill(pids[r], SIGKILL);
      g_alarm = 0;
    }
    int status;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    int r = 0;
    while (r < nproc && pids[r] != pid) r++;
    if (r == nproc) continue;
    pids[r] = 0;
    alive--;
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    int stopped = forwarded && WIFEXITED(status) && WEXITSTATUS(status) == 128 + forwarded;
    if (stopped) result = 128 + forwarded;
    if (!ok && !stopped && !failed) {
      failed = 1;
      char how[96];
      describe(how, sizeof how, status);
      fprintf(stderr, "tezgah: error: rank %d of %d (pid %d) %s; stopping the other ranks\n", r, nproc, (int)pid, how);
      for (int j = 0; j < nproc; j++)
        if (pids[j] > 0) kill(pids[j], SIGTERM);
      alarm(TZ_GRACE_S);
    }
  }
  alarm(0);
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  sigaction(SIGALRM, &old_alrm, NULL);
  free(av);
  free(pids);
  free(exe);
  return failed ? 1 : result;
}

int tz_launch_nproc(int nproc, const char *backend, const char *run_dir, int argc, char **argv) {
  if (!strcmp(backend, "cpu")) {
    /* each rank is a training process with its own OpenMP team: more ranks than CPUs only
     * oversubscribes the machine (a new user's `--nproc 1000` on 2 cores started 1000 ranks and
     * ran for minutes without a line); 2 are always allowed (the tests' size) */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 2) ncpu = 2;
    if (nproc > ncpu) {
      tz_err("--nproc %d: more processes than the %ld CPUs of this machine (use at most %ld)", nproc, ncpu, ncpu);
      return tz_cli_fail();
    }
    int rc = launch_mpirun(nproc, run_dir, argc, argv);
    return rc < 0 ? tz_cli_fail() : rc;
  }
  if (!strcmp(backend, "cuda")) {
    int rc = launch_local(nproc, run_dir, argc, argv);
    return rc < 0 ? tz_cli_fail() : rc;
  }
  tz_err("--nproc: data-parallel training runs on the cpu (MPI) and cuda (NCCL) backends, not on %s", backend);
  return tz_cli_fail();
}
#endif /* __wasi__ */
