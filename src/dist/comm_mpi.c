/* MPI transport (Open MPI from Debian, when the build found it: TEZGAH_MPI) for the CPU
 * backend: collectives in place on the host memory behind the backend's buffers (raw_ptr).
 * The MPI calls themselves are in the module libtezgah_mpi.so (src/modules/mpi_module.c,
 * mpi_api.h), loaded here on first use so that commands without MPI never load libmpi.
 * MPI's default error handler (MPI_ERRORS_ARE_FATAL) ends the whole job with MPI's own
 * message when a peer is lost; mpirun then stops the other ranks. */
#include "dist/comm.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#ifdef TZ_HAVE_MPI
#include <dlfcn.h>

#include "core/dlib.h"
#include "dist/mpi_api.h"

/* libtezgah_mpi.so, loaded on first use (mpi_api.h). RTLD_GLOBAL: Open MPI loads its own
 * components (mca_*.so) with dlopen, and they expect libmpi's and libopen-pal's symbols to be
 * global, as when the program links libmpi. */
static const tz_mpi_api *mpi;
static char mpi_error[TZ_ERR_MAX];

static int mpi_load(void) {
  if (mpi) return 0;
  if (*mpi_error) return tz_err("%s", mpi_error);
  char path[4096];
  if (tz_module_find(TZ_MPI_MODULE_FILE, "mpi", path, sizeof path) == 0) {
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    tz_mpi_module_api_fn get = NULL;
    if (!h)
      tz_err("mpi: cannot load %s (Debian: apt-get install libopenmpi3): %s", path, tz_dl_why(path));
    else if (!(*(void **)&get = dlsym(h, TZ_MPI_MODULE_ENTRY)) || !get() || get()->abi != TZ_MPI_API_ABI)
      tz_err("mpi: %s is not this tezgah's MPI module (%s)", path,
             get ? "another interface version: rebuild" : "no " TZ_MPI_MODULE_ENTRY);
    else
      mpi = get();
  }
  if (mpi) return 0;
  snprintf(mpi_error, sizeof mpi_error, "%s", tz_errmsg());
  return -1;
}

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
  mpi->reduce_scatter_f32(p, x->tmp, count(shard_n));
  memcpy(p + (size_t)c->rank * shard_n, x->tmp, shard_n * sizeof *p);
}

static void mpi_ag(tz_comm *c, tz_slice buf, size_t shard_n) {
  mpi->allgather_inplace_f32(host(c, buf), count(shard_n));
}

static void mpi_bcast(tz_comm *c, tz_slice buf, size_t n, int root) {
  float *p = host(c, buf);
  for (size_t done = 0; done < n;) {
    size_t k = n - done < (size_t)1 << 30 ? n - done : (size_t)1 << 30;
    mpi->bcast_f32(p + done, (int)k, root);
    done += k;
  }
}

static void mpi_allgather_f64(tz_comm *c, const double *x, double *all, int n) { mpi->allgather_f64(x, all, n); }

static void mpi_barrier(tz_comm *c) { mpi->barrier(); }

static void mpi_abort(tz_comm *c) { mpi->abort_job(1); }

static void mpi_destroy(tz_comm *c) {
  mpi_ctx *x = c->ctx;
  if (!x) return;
  if (x->finalize) mpi->finalize_now();
  free(x->tmp);
  free(x);
  c->ctx = NULL;
}

int tz_comm_mpi_init(tz_comm *c, const tz_dist_env *env) {
  if (!c->be->raw_ptr) return tz_err("mpi: the %s backend does not expose its buffers", c->be->name);
  if (env->launcher != TZ_LAUNCH_MPI)
    return tz_err("%d processes on the cpu backend need MPI: start them with mpirun -np %d (or train --nproc %d)",
                  env->world, env->world, env->world);
  if (mpi_load() != 0) return -1;
  mpi_ctx *x = tz_calloc(1, sizeof *x);
  int r = mpi->init();
  if (r < 0) {
    free(x);
    return tz_err("mpi: MPI_Init_thread failed");
  }
  x->finalize = r == 1;
  int size = mpi->size(), rank = mpi->rank();
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

int tz_comm_have_mpi(void) { return mpi_load() == 0; }

int tz_mpi_describe(char *out, size_t cap) {
  if (mpi_load() != 0) {
    snprintf(out, cap, "no (built with MPI, but %s): no data-parallel training on the CPU", tz_errmsg());
    tz_err_clear();
    return 0;
  }
  char v[256];
  mpi->version(v, (int)sizeof v);
  snprintf(out, cap, "yes (%s, loaded on use): data-parallel training on the CPU (train --nproc N, or mpirun -np N tezgah train)", v);
  return 1;
}

int tz_mpi_bootstrap_bcast(void *data, int bytes) {
  if (mpi_load() != 0) return -1;
  if (mpi->init() < 0) return tz_err("mpi: MPI_Init_thread failed");
  mpi->bcast_bytes(data, bytes, 0);
  return 0;
}

void tz_mpi_finalize(void) {
  if (mpi) mpi->finalize(); /* not loaded: MPI was never initialized */
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
