/* tezgah train --nproc N: start N data-parallel ranks of this same command on this machine.
 *
 * cpu:  re-execute under Open MPI's mpirun (the ranks all-reduce through MPI):
 *       mpirun -np N --oversubscribe --bind-to none [--allow-run-as-root] <this exe> train ...
 *       mpirun then owns the job: a rank that dies ends it (its own message names the rank).
 * cuda: no MPI needed. This process makes an ncclUniqueId (ncclGetUniqueId needs no GPU; it
 *       keeps NCCL's bootstrap root alive here while the ranks connect), forks N children that
 *       exec this program again with TEZGAH_RANK, TEZGAH_WORLD_SIZE, TEZGAH_LOCAL_RANK and
 *       TEZGAH_NCCL_ID set (rank r uses GPU r), and waits. When a rank fails (non-zero exit or a
 *       signal) the others get SIGTERM, then SIGKILL after TZ_GRACE_S seconds, one line names
 *       the rank, and the exit status is 1. SIGINT / SIGTERM to this process are passed to the
 *       ranks once (they finish the step together, checkpoint and exit 128+sig).
 * The ranks find --nproc in their arguments again and ignore it (the environment says they
 * are ranks). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "dist/comm.h"

#define TZ_GRACE_S 10

static volatile sig_atomic_t g_sig, g_alarm;
static void on_sig(int s) { g_sig = s; }
static void on_alarm(int s) { g_alarm = 1; }

/* This executable's path (argv[0] may be relative or searched in PATH). */
static char *self_exe(void) {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return NULL;
  buf[n] = 0;
  return tz_strdup(buf);
}

/* cpu: replace this process by mpirun running N copies of this command. */
static int launch_mpirun(int nproc, int argc, char **argv) {
  if (!tz_comm_have_mpi())
    return tz_err("--nproc %d on the cpu backend runs the ranks under mpirun, and this tezgah was built without "
                  "MPI (TEZGAH_MPI=OFF or no libopenmpi-dev at build time)",
                  nproc);
  char *exe = self_exe();
  if (!exe) return tz_err("--nproc: cannot find this program's path (/proc/self/exe)");
  char np[16];
  snprintf(np, sizeof np, "%d", nproc);
  char **av = tz_calloc((size_t)argc + 12, sizeof *av);
  int k = 0;
  av[k++] = "mpirun";
  av[k++] = "-np";
  av[k++] = np;
  av[k++] = "--oversubscribe"; /* more ranks than cores is allowed (each rank gets its share of threads) */
  av[k++] = "--bind-to";
  av[k++] = "none";
  if (geteuid() == 0) av[k++] = "--allow-run-as-root"; /* containers: Open MPI refuses root otherwise */
  av[k++] = exe;
  for (int i = 0; i < argc; i++) av[k++] = argv[i];
  av[k] = NULL;
  fflush(NULL);
  execvp("mpirun", av);
  int e = errno;
  free(av);
  free(exe);
  return tz_err("--nproc %d on the cpu backend needs mpirun (%s); install openmpi-bin, or use mpirun -np %d yourself",
                nproc, strerror(e), nproc);
}

static void describe(char *out, size_t n, int status) {
  if (WIFSIGNALED(status)) snprintf(out, n, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else snprintf(out, n, "exited with status %d", WEXITSTATUS(status));
}

/* cuda: fork N ranks with the NCCL id in their environment and watch them. */
static int launch_local(int nproc, int argc, char **argv) {
  char id[512];
  if (tz_nccl_unique_id_hex(id, sizeof id)) return -1;
  char *exe = self_exe();
  if (!exe) return tz_err("--nproc: cannot find this program's path (/proc/self/exe)");
  char **av = tz_calloc((size_t)argc + 2, sizeof *av);
  av[0] = "tezgah";
  for (int i = 0; i < argc; i++) av[i + 1] = argv[i];
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
  sa.sa_handler = on_sig;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, &old_alrm);
  int alive = nproc, failed = 0, forwarded = 0, result = 0;
  while (alive > 0) {
    if (g_sig && !forwarded) {
      kill(-pgid, g_sig);
      forwarded = g_sig;
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

int tz_launch_nproc(int nproc, const char *backend, int argc, char **argv) {
  if (!strcmp(backend, "cpu")) return launch_mpirun(nproc, argc, argv) ? tz_cli_fail() : 0;
  if (!strcmp(backend, "cuda")) {
    int rc = launch_local(nproc, argc, argv);
    return rc < 0 ? tz_cli_fail() : rc;
  }
  tz_err("--nproc: data-parallel training runs on the cpu (MPI) and cuda (NCCL) backends, not on %s", backend);
  return tz_cli_fail();
}
