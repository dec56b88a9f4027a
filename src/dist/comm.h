/* Data-parallel communication: one communicator per training process ("rank").
 *
 * Ranks are started by a launcher, never by tezgah itself forming a network:
 *   - `mpirun -np N tezgah train ...` (Open MPI: OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK),
 *   - `tezgah train --nproc N ...` (src/cli/launch.c): on the CPU it re-executes itself under
 *     mpirun; on CUDA it forks N ranks with TEZGAH_RANK / TEZGAH_WORLD_SIZE /
 *     TEZGAH_LOCAL_RANK and TEZGAH_NCCL_ID (an ncclUniqueId in hex) in their environment.
 * Without either, the world is one process and nothing changes (the "single" communicator).
 *
 * Transports are existing engines: MPI (comm_mpi.c, Open MPI, linked) for the CPU backend's
 * buffers (host memory, in place), NCCL (comm_nccl.c, loaded with dlopen) for the CUDA
 * backend's device buffers, queued on the backend's stream. Other backends (WebGPU) are
 * refused with one line.
 *
 * Buffer operations act on fp32 backend buffers laid out as `world` equal shards of
 * `shard_n` floats (the model pads its flat buffers to that size, tz_dist_shard_size):
 *   reduce_scatter: shard r of the sum over ranks lands in place at shard r of rank r's buffer
 *                   (the other shards of the buffer are left in an unspecified state);
 *   all_gather:     every rank's shard r is copied into shard r of every rank's buffer;
 *   allreduce:      reduce_scatter then all_gather (the same sums as ZeRO-1's path, so runs
 *                   with and without --zero 1 are bit-identical);
 *   broadcast:      the whole buffer of `root` to every rank.
 * Sums, not averages: the training loop scales each rank's loss gradient by 1/world instead.
 * Host operations (small, once per step): allgather_f64 (every rank's n doubles, in rank order,
 * to every rank: sums made from it on the host are identical on all ranks), barrier.
 * Errors inside a collective (a lost peer) end the process with one line (tz_fatal); the
 * launcher or mpirun then stops the other ranks, and the watchdog (tz_comm_watchdog) ends a
 * rank that made no progress for TEZGAH_DIST_TIMEOUT seconds (default 600). */
#ifndef TZ_DIST_COMM_H
#define TZ_DIST_COMM_H
#include <stddef.h>

#include "backend/backend.h"

/* Where this process sits, read from the launcher's environment (no communication yet). */
typedef struct {
  int rank, world, local_rank, local_world;
  int launcher; /* TZ_LAUNCH_SINGLE, TZ_LAUNCH_MPI (mpirun), TZ_LAUNCH_LOCAL (--nproc) */
} tz_dist_env;
enum { TZ_LAUNCH_SINGLE = 0, TZ_LAUNCH_MPI = 1, TZ_LAUNCH_LOCAL = 2 };

/* Read the environment: 0, or -1 with tz_err() for inconsistent values (e.g. rank >= world). */
int tz_dist_env_read(tz_dist_env *e);

typedef struct tz_comm tz_comm;
struct tz_comm {
  int rank, world, local_rank;
  const char *kind; /* "single", "mpi", "nccl" */
  tz_backend *be;
  void *ctx;
  void (*reduce_scatter)(tz_comm *c, tz_slice buf, size_t shard_n);
  void (*all_gather)(tz_comm *c, tz_slice buf, size_t shard_n);
  void (*broadcast)(tz_comm *c, tz_slice buf, size_t n, int root); /* n floats */
  void (*allgather_f64)(tz_comm *c, const double *x, double *all, int n); /* all: world·n */
  void (*barrier)(tz_comm *c);
  /* After an error on this rank alone (the others may wait in a collective): MPI_Abort of the
   * whole job (MPI), or abandon the communicator so that exiting does not hang (NCCL; the
   * launcher stops the other ranks when this one exits). */
  void (*abort)(tz_comm *c);
  void (*destroy)(tz_comm *c);
};

/* Build the communicator of `env` for backend `be` (MPI for cpu, NCCL for cuda; world 1:
 * the single one, whatever the backend). 0, or -1 with tz_err(). */
int tz_comm_create(const tz_dist_env *env, tz_backend *be, tz_comm **out);
void tz_comm_free(tz_comm *c);

/* In-place sum over ranks of a buffer of world·shard_n floats (reduce_scatter + all_gather). */
void tz_comm_allreduce(tz_comm *c, tz_slice buf, size_t shard_n);
/* Sum of each of n host doubles over ranks, added in rank order (identical on every rank). */
void tz_comm_sum_f64(tz_comm *c, double *x, int n);
/* 0 when `ok` holds on every rank; else -1 (with tz_err() naming the first failed rank unless
 * this rank failed itself and already set its own message). Collective. */
int tz_comm_agree(tz_comm *c, int ok);

/* Floats per shard for a buffer of `total` floats over `world` ranks: ceil(total / world)
 * rounded up to a multiple of 64 (256-byte aligned shards for NCCL and vector loads). */
size_t tz_dist_shard_size(size_t total, int world);

/* Watchdog: after tz_comm_watchdog_start, a rank that does not call tz_comm_progress for
 * TEZGAH_DIST_TIMEOUT seconds (default 600; 0 = off) prints one line and exits 1 (a peer
 * died or hangs inside a collective). No-op for world 1. */
void tz_comm_watchdog_start(tz_comm *c);
void tz_comm_progress(void);
void tz_comm_watchdog_stop(void);

/* Implementations (comm_mpi.c, comm_nccl.c): fill c's operations. 0 or -1 with tz_err(). */
int tz_comm_mpi_init(tz_comm *c, const tz_dist_env *env);
int tz_comm_nccl_init(tz_comm *c, const tz_dist_env *env);
/* --nproc on CUDA: a fresh ncclUniqueId as 2·128 hex digits (the launcher passes it to its
 * ranks in TEZGAH_NCCL_ID; the calling process must stay alive while they start). */
int tz_nccl_unique_id_hex(char *out, size_t cap);
/* MPI: whether this build has it, and MPI_Abort of the whole job (after a fatal error). */
int tz_comm_have_mpi(void);
/* For `tezgah info`: one line (without a trailing newline) into out on MPI / NCCL in this
 * build: "yes (library, version): what it serves" or "no (why)". NCCL is dlopen'ed to say
 * where it was found (TEZGAH_NCCL_LIB, else libnccl.so.2 on the loader's path), or why it
 * cannot be loaded. Returns 1 when this build supports it, 0 when not. */
int tz_mpi_describe(char *out, size_t cap);
int tz_nccl_describe(char *out, size_t cap);
/* NCCL under mpirun: initialize MPI (once) and broadcast `bytes` from rank 0 (the unique id);
 * tz_mpi_finalize at the end (no-op when MPI was not initialized). */
int tz_mpi_bootstrap_bcast(void *data, int bytes);
void tz_mpi_finalize(void);

#endif
