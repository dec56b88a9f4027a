/* MPI transport (Open MPI from Debian, linked when the build found it: TEZGAH_MPI) for the CPU
 * backend: collectives in place on the host memory behind the backend's buffers (raw_ptr).
 * MPI's default error handler (MPI_ERRORS_ARE_FATAL) ends the whole job with MPI's own
 * message when a peer is lost; mpirun then stops the other ranks. */
#include "dist/comm.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#ifdef TZ_HAVE_MPI
#include <mpi.h>

typedef struct {
  float *tmp; /* reduce-scatter's receive buffer (one shard) */
  size_t tmp_n;
  int finalize; /* we called MPI_Init */
} mpi_ctx;

static float *host(tz_comm *c, tz_slice s) { return c->be->raw_ptr(c->be, s); }

static int count(size_t n) {
  if (n > INT_MAX) tz_fatal("mpi: a shard of more than INT_MAX floats is not supported");
  return (int)n;
}

static void mpi_rs(tz_comm *c, tz_slice buf, size_t shard_n) {
  mpi_ctx *x = c->ctx;
  if (x->tmp_n < shard_n) {
    free(x->tmp);
    x->tmp = tz_malloc(shard_n * sizeof *x->tmp);
    x->tmp_n = shard_n;
  }
  float *p = host(c, buf);
  MPI_Reduce_scatter_block(p, x->tmp, count(shard_n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  memcpy(p + (size_t)c->rank * shard_n, x->tmp, shard_n * sizeof *p);
}

static void mpi_ag(tz_comm *c, tz_slice buf, size_t shard_n) {
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, host(c, buf), count(shard_n), MPI_FLOAT, MPI_COMM_WORLD);
}

static void mpi_bcast(tz_comm *c, tz_slice buf, size_t n, int root) {
  float *p = host(c, buf);
  for (size_t done = 0; done < n;) {
    size_t k = n - done < (size_t)1 << 30 ? n - done : (size_t)1 << 30;
    MPI_Bcast(p + done, (int)k, MPI_FLOAT, root, MPI_COMM_WORLD);
    done += k;
  }
}

static void mpi_allgather_f64(tz_comm *c, const double *x, double *all, int n) {
  MPI_Allgather(x, n, MPI_DOUBLE, all, n, MPI_DOUBLE, MPI_COMM_WORLD);
}

static void mpi_barrier(tz_comm *c) { MPI_Barrier(MPI_COMM_WORLD); }

static void mpi_abort(tz_comm *c) { MPI_Abort(MPI_COMM_WORLD, 1); }

static void mpi_destroy(tz_comm *c) {
  mpi_ctx *x = c->ctx;
  if (!x) return;
  if (x->finalize) MPI_Finalize();
  free(x->tmp);
  free(x);
  c->ctx = NULL;
}

int tz_comm_mpi_init(tz_comm *c, const tz_dist_env *env) {
  if (!c->be->raw_ptr) return tz_err("mpi: the %s backend does not expose its buffers", c->be->name);
  if (env->launcher != TZ_LAUNCH_MPI)
    return tz_err("%d processes on the cpu backend need MPI: start them with mpirun -np %d (or train --nproc %d)",
                  env->world, env->world, env->world);
  mpi_ctx *x = tz_calloc(1, sizeof *x);
  int inited = 0, provided, size, rank;
  MPI_Initialized(&inited);
  if (!inited) {
    /* FUNNELED: OpenMP threads run the kernels, only the main thread calls MPI */
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
      free(x);
      return tz_err("mpi: MPI_Init_thread failed");
    }
    x->finalize = 1;
  }
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  c->ctx = x;
  c->kind = "mpi";
  if (size != env->world || rank != env->rank) {
    tz_err("mpi: MPI_COMM_WORLD has rank %d of %d but the launcher's environment says %d of %d", rank, size,
           env->rank, env->world);
    mpi_destroy(c);
    return -1;
  }
  c->reduce_scatter = mpi_rs;
  c->all_gather = mpi_ag;
  c->broadcast = mpi_bcast;
  c->allgather_f64 = mpi_allgather_f64;
  c->barrier = mpi_barrier;
  c->abort = mpi_abort;
  c->destroy = mpi_destroy;
  return 0;
}

int tz_comm_have_mpi(void) { return 1; }

int tz_mpi_describe(char *out, size_t cap) {
  /* MPI_Get_library_version may be called before MPI_Init (MPI-3); Open MPI's string runs on
   * with package, ident and date after the first comma: the name and version are enough */
  char v[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  if (MPI_Get_library_version(v, &len) != MPI_SUCCESS) snprintf(v, sizeof v, "MPI %d.%d", MPI_VERSION, MPI_SUBVERSION);
  v[strcspn(v, ",\n")] = 0;
  snprintf(out, cap, "yes (%s): data-parallel training on the CPU (train --nproc N, or mpirun -np N tezgah train)", v);
  return 1;
}

int tz_mpi_bootstrap_bcast(void *data, int bytes) {
  int inited = 0, provided;
  MPI_Initialized(&inited);
  if (!inited && MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    return tz_err("mpi: MPI_Init_thread failed");
  MPI_Bcast(data, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
  return 0;
}

void tz_mpi_finalize(void) {
  int inited = 0, done = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&done);
  if (inited && !done) MPI_Finalize();
}

#else /* built without MPI (TEZGAH_MPI=OFF or not found) */

int tz_comm_mpi_init(tz_comm *c, const tz_dist_env *env) {
  return tz_err("%d processes on the %s backend need MPI, and this tezgah was built without it (TEZGAH_MPI=OFF or "
                "no libopenmpi-dev at build time)",
                env->world, c->be->name);
}

int tz_comm_have_mpi(void) { return 0; }

int tz_mpi_describe(char *out, size_t cap) {
  snprintf(out, cap, "no (built without MPI: TEZGAH_MPI=OFF or no libopenmpi-dev): no data-parallel training on the CPU");
  return 0;
}

int tz_mpi_bootstrap_bcast(void *data, int bytes) {
  return tz_err("launched by mpirun, but this tezgah was built without MPI (TEZGAH_MPI=OFF): use train --nproc N");
}

void tz_mpi_finalize(void) {}

#endif
