/* libtezgah_mpi.so: the MPI calls of data-parallel training on the CPU (src/dist/mpi_api.h),
 * compiled against mpi.h and linked to MPI, loaded by src/dist/comm_mpi.c only when MPI is
 * used. It depends on nothing of tezgah's (errors come back as return codes). MPI's default
 * error handler (MPI_ERRORS_ARE_FATAL) ends the whole job with MPI's own message when a peer
 * is lost; mpirun then stops the other ranks. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "dist/mpi_api.h"

static int init(void) {
  int inited = 0, provided;
  MPI_Initialized(&inited);
  if (inited) return 0;
  /* FUNNELED: OpenMP threads run the kernels, only the main thread calls MPI */
  return MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) == MPI_SUCCESS ? 1 : -1;
}

static void finalize(void) {
  int inited = 0, done = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&done);
  if (inited && !done) MPI_Finalize();
}

static void finalize_now(void) { MPI_Finalize(); }

static int size(void) {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

static int rank(void) {
  int r = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

static void reduce_scatter_f32(const float *send, float *recv, int n) {
  MPI_Reduce_scatter_block(send, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static void allgather_inplace_f32(float *buf, int n) {
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, n, MPI_FLOAT, MPI_COMM_WORLD);
}

static void bcast_f32(float *buf, int n, int root) { MPI_Bcast(buf, n, MPI_FLOAT, root, MPI_COMM_WORLD); }

static void allgather_f64(const double *x, double *all, int n) {
  MPI_Allgather(x, n, MPI_DOUBLE, all, n, MPI_DOUBLE, MPI_COMM_WORLD);
}

static void bcast_bytes(void *buf, int bytes, int root) { MPI_Bcast(buf, bytes, MPI_BYTE, root, MPI_COMM_WORLD); }

static void barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }

static void abort_job(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

static void version(char *out, int cap) {
  /* MPI_Get_library_version may be called before MPI_Init (MPI-3); Open MPI's string runs on
   * with package, ident and date after the first comma: the name and version are enough */
  char v[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  if (MPI_Get_library_version(v, &len) != MPI_SUCCESS) snprintf(v, sizeof v, "MPI %d.%d", MPI_VERSION, MPI_SUBVERSION);
  v[strcspn(v, ",\n")] = 0;
  snprintf(out, (size_t)cap, "%s", v);
}

static const tz_mpi_api api = {
    .abi = TZ_MPI_API_ABI,
    .init = init,
    .finalize = finalize,
    .finalize_now = finalize_now,
    .size = size,
    .rank = rank,
    .reduce_scatter_f32 = reduce_scatter_f32,
    .allgather_inplace_f32 = allgather_inplace_f32,
    .bcast_f32 = bcast_f32,
    .allgather_f64 = allgather_f64,
    .bcast_bytes = bcast_bytes,
    .barrier = barrier,
    .abort_job = abort_job,
    .version = version,
};

/* The module's one export (mpi_api.h). */
__attribute__((visibility("default"))) const tz_mpi_api *tz_mpi_module_api(void) { return &api; }
