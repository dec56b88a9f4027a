/* The communicator: launcher environment, the single-process communicator, the operations
 * built from the transports' primitives, and the watchdog. See comm.h. */
#include "dist/comm.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/decimal.h"
#include "core/error.h"

/* A non-negative integer environment variable: 1 if set (value in *v), 0 if unset, -1 bad.
 * Decimal digits only (core/decimal.h: " 2" is refused as "2 " is). */
static int env_int(const char *name, int *v) {
  const char *s = getenv(name);
  if (!s || !*s) return 0;
  long x;
  if (tz_decimal_long(s, strlen(s), &x) || x < 0 || x > 1 << 20)
    return tz_err("%s='%s' is not a rank or process count", name, s);
  *v = (int)x;
  return 1;
}

int tz_dist_env_read(tz_dist_env *e) {
  memset(e, 0, sizeof *e);
  e->world = e->local_world = 1;
  int r;
  /* our launcher sets TEZGAH_WORLD_SIZE, TEZGAH_RANK and TEZGAH_LOCAL_RANK together: one of the
   * ranks without the world size was ignored without a word (the process trained alone), and a
   * world without the rank made every process rank 0 */
  const char *ws = getenv("TEZGAH_WORLD_SIZE"), *rk = getenv("TEZGAH_RANK"), *lr = getenv("TEZGAH_LOCAL_RANK");
  if (!(ws && *ws) && ((rk && *rk) || (lr && *lr)))
    return tz_err("%s='%s' is set but TEZGAH_WORLD_SIZE is not: give both (train --nproc N sets them for each "
                  "rank), or unset %s", rk && *rk ? "TEZGAH_RANK" : "TEZGAH_LOCAL_RANK", rk && *rk ? rk : lr,
                  rk && *rk ? "TEZGAH_RANK" : "TEZGAH_LOCAL_RANK");
  if ((r = env_int("TEZGAH_WORLD_SIZE", &e->world)) != 0) { /* our launcher (--nproc) */
    if (r < 0) return -1;
    if (e->world > 1 && !(rk && *rk))
      return tz_err("TEZGAH_WORLD_SIZE=%d is set but TEZGAH_RANK is not: give this process's rank in [0, %d) "
                    "(train --nproc N sets both), or unset TEZGAH_WORLD_SIZE", e->world, e->world);
    if (env_int("TEZGAH_RANK", &e->rank) < 0) return -1;
    e->local_rank = e->rank;
    if (env_int("TEZGAH_LOCAL_RANK", &e->local_rank) < 0) return -1;
    e->local_world = e->world;
    e->launcher = TZ_LAUNCH_LOCAL;
  } else if ((r = env_int("OMPI_COMM_WORLD_SIZE", &e->world)) != 0) { /* Open MPI's mpirun */
    if (r < 0 || env_int("OMPI_COMM_WORLD_RANK", &e->rank) < 0) return -1;
    e->local_rank = e->rank;
    e->local_world = e->world;
    if (env_int("OMPI_COMM_WORLD_LOCAL_RANK", &e->local_rank) < 0 ||
        env_int("OMPI_COMM_WORLD_LOCAL_SIZE", &e->local_world) < 0)
      return -1;
    e->launcher = TZ_LAUNCH_MPI;
  } else if ((r = env_int("PMI_SIZE", &e->world)) != 0) { /* MPICH's hydra (mpiexec) */
    if (r < 0 || env_int("PMI_RANK", &e->rank) < 0) return -1;
    e->local_rank = e->rank;
    if (env_int("MPI_LOCALRANKID", &e->local_rank) < 0) return -1;
    e->local_world = e->world;
    e->launcher = TZ_LAUNCH_MPI;
  }
  if (e->world < 1 || e->rank >= e->world || e->local_rank > e->rank)
    return tz_err("distributed launch: rank %d / local rank %d do not fit a world of %d processes", e->rank,
                  e->local_rank, e->world);
  if (e->local_world < 1) e->local_world = 1;
  if (e->world == 1) e->launcher = TZ_LAUNCH_SINGLE;
  /* read with atof by the watchdog (tz_comm_watchdog_start): an unreadable value would have
   * turned it off (0) without a word */
  const char *to = getenv("TEZGAH_DIST_TIMEOUT");
  errno = 0;
  double tv = to && *to ? strtod(to, NULL) : 0; /* ERANGE: 1e400 (inf: never) or 1e-400 (0: off) */
  if (to && *to && (!tz_decimal(to, strlen(to), 1) || errno == ERANGE || !isfinite(tv) || tv < 0))
    return tz_err("TEZGAH_DIST_TIMEOUT='%s' is not a number of seconds >= 0 (0 turns the watchdog off)", to);
  return 0;
}

size_t tz_dist_shard_size(size_t total, int world) {
  size_t s = (total + (size_t)world - 1) / (size_t)world;
  return (s + 63) & ~(size_t)63;
}

/* ---- the single-process communicator ---- */
static void one_rs(tz_comm *c, tz_slice buf, size_t shard_n) {}
static void one_ag(tz_comm *c, tz_slice buf, size_t shard_n) {}
static void one_bcast(tz_comm *c, tz_slice buf, size_t n, int root) {}
static void one_allgather_f64(tz_comm *c, const double *x, double *all, int n) {
  memmove(all, x, (size_t)n * sizeof *x);
}
static void one_barrier(tz_comm *c) {}
static void one_abort(tz_comm *c) {}
static void one_destroy(tz_comm *c) {}

int tz_comm_create(const tz_dist_env *env, tz_backend *be, tz_comm **out) {
  *out = NULL;
  tz_comm *c = tz_calloc(1, sizeof *c);
  c->rank = env->rank;
  c->world = env->world;
  c->local_rank = env->local_rank;
  c->be = be;
  c->kind = "single";
  c->reduce_scatter = one_rs;
  c->all_gather = one_ag;
  c->broadcast = one_bcast;
  c->allgather_f64 = one_allgather_f64;
  c->barrier = one_barrier;
  c->abort = one_abort;
  c->destroy = one_destroy;
  int rc = 0;
  if (env->world > 1) {
    if (!strcmp(be->name, "cpu")) rc = tz_comm_mpi_init(c, env);
    else if (!strcmp(be->name, "cuda")) rc = tz_comm_nccl_init(c, env);
    else
      rc = tz_err("distributed training (%d processes): the %s backend is not supported (cpu: MPI, cuda: NCCL)",
                  env->world, be->name);
  }
  if (rc) {
    free(c);
    return -1;
  }
  *out = c;
  return 0;
}

void tz_comm_free(tz_comm *c) {
  if (!c) return;
  tz_comm_watchdog_stop();
  c->destroy(c);
  free(c);
}

void tz_comm_allreduce(tz_comm *c, tz_slice buf, size_t shard_n) {
  if (c->world == 1) return;
  c->reduce_scatter(c, buf, shard_n);
  c->all_gather(c, buf, shard_n);
}

void tz_comm_sum_f64(tz_comm *c, double *x, int n) {
  if (c->world == 1) return;
  double all[64];
  double *a = (size_t)c->world * n <= 64 ? all : tz_malloc((size_t)c->world * n * sizeof *a);
  c->allgather_f64(c, x, a, n);
  for (int i = 0; i < n; i++) {
    double s = 0;
    for (int r = 0; r < c->world; r++) s += a[(size_t)r * n + i];
    x[i] = s;
  }
  if (a != all) free(a);
}

int tz_comm_agree(tz_comm *c, int ok) {
  if (c->world == 1) return ok ? 0 : -1;
  double mine = ok ? 1.0 : 0.0, small[64];
  double *a = c->world <= 64 ? small : tz_malloc((size_t)c->world * sizeof *a);
  c->allgather_f64(c, &mine, a, 1);
  int bad = -1;
  for (int r = 0; r < c->world && bad < 0; r++)
    if (a[r] != 1.0) bad = r;
  if (a != small) free(a);
  if (bad < 0) return 0;
  if (ok) tz_err("rank %d failed (its message is above); rank %d stops too", bad, c->rank);
  return -1;
}

/* ---- watchdog ---- */
static atomic_llong g_last_progress; /* CLOCK_MONOTONIC seconds */
static atomic_int g_watch_on;
static pthread_t g_watch_thread;
static int g_watch_started, g_watch_rank;
static double g_watch_timeout;

static long long mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec;
}

static void *watch_main(void *arg) {
  const struct timespec tick = {0, 200 * 1000 * 1000}; /* 0.2 s: a quick stop at the end */
  while (atomic_load(&g_watch_on)) {
    nanosleep(&tick, NULL);
    long long idle = mono_s() - atomic_load(&g_last_progress);
    if (atomic_load(&g_watch_on) && idle > g_watch_timeout) {
      char msg[200];
      snprintf(msg, sizeof msg,
               "rank %d: no training step finished for %lld s (TEZGAH_DIST_TIMEOUT=%g): a rank (this one or a "
               "peer) died or hangs; stopping",
               g_watch_rank, idle, g_watch_timeout);
      tz_fatal(msg); /* the CLI exits 1; the launcher or mpirun then ends the other ranks */
    }
  }
  return NULL;
}

void tz_comm_progress(void) { atomic_store(&g_last_progress, mono_s()); }

void tz_comm_watchdog_start(tz_comm *c) {
  if (c->world == 1 || g_watch_started) return;
  const char *s = getenv("TEZGAH_DIST_TIMEOUT");
  g_watch_timeout = s && *s ? atof(s) : 600;
  if (!(g_watch_timeout > 0)) return;
  g_watch_rank = c->rank;
  tz_comm_progress();
  atomic_store(&g_watch_on, 1);
  if (pthread_create(&g_watch_thread, NULL, watch_main, NULL) == 0) g_watch_started = 1;
}

void tz_comm_watchdog_stop(void) {
  if (!g_watch_started) return;
  atomic_store(&g_watch_on, 0);
  pthread_join(g_watch_thread, NULL);
  g_watch_started = 0;
}
