/* The MPI module's interface: what src/dist/comm_mpi.c calls in libtezgah_mpi.so.
 *
 * MPI is not linked into tezgah (Open MPI's libmpi, open-rte, open-pal, hwloc and libevent cost
 * every tezgah call ~6 ms of CPU in the loader: src/core/dlib.h). The few MPI calls that
 * data-parallel training makes live in src/modules/mpi_module.c, built against mpi.h into
 * libtezgah_mpi.so (linked to libmpi), which comm_mpi.c loads when a communicator is made under
 * mpirun, or `info` / `train --nproc` ask. The module exports one function, tz_mpi_module_api,
 * returning this table; its `abi` must equal TZ_MPI_API_ABI (bumped whenever the table
 * changes), so a module from another build is refused instead of miscalled.
 * Every call works on MPI_COMM_WORLD; counts are element counts (int, as MPI takes them). */
#ifndef TZ_DIST_MPI_API_H
#define TZ_DIST_MPI_API_H

#define TZ_MPI_API_ABI 1
#define TZ_MPI_MODULE_FILE "libtezgah_mpi.so"
#define TZ_MPI_MODULE_ENTRY "tz_mpi_module_api"

typedef struct {
  int abi; /* TZ_MPI_API_ABI */
  /* MPI_Init_thread(MPI_THREAD_FUNNELED) unless MPI is already initialized: 1 if this call
   * initialized it, 0 if it already was, -1 on failure. */
  int (*init)(void);
  void (*finalize)(void);  /* MPI_Finalize if initialized and not yet finalized */
  void (*finalize_now)(void); /* MPI_Finalize (the caller knows it initialized MPI) */
  int (*size)(void);       /* MPI_Comm_size */
  int (*rank)(void);       /* MPI_Comm_rank */
  /* MPI_Reduce_scatter_block, sum of float32: send [world*n] -> recv [n] */
  void (*reduce_scatter_f32)(const float *send, float *recv, int n);
  /* MPI_Allgather in place, float32: buf [world*n], this rank's n at rank*n */
  void (*allgather_inplace_f32)(float *buf, int n);
  void (*bcast_f32)(float *buf, int n, int root);                 /* MPI_Bcast, float32 */
  void (*allgather_f64)(const double *x, double *all, int n);     /* x [n] -> all [world*n] */
  void (*bcast_bytes)(void *buf, int bytes, int root);            /* MPI_Bcast, MPI_BYTE */
  void (*barrier)(void);
  void (*abort_job)(int code); /* MPI_Abort of the whole job */
  /* MPI_Get_library_version up to the first comma or newline, into out (cap bytes) */
  void (*version)(char *out, int cap);
} tz_mpi_api;

typedef const tz_mpi_api *(*tz_mpi_module_api_fn)(void);

#endif
