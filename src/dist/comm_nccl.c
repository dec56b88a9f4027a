/* NCCL transport for the CUDA backend: collectives in place on device buffers, queued on the
 * backend's stream (raw_stream) so that they are ordered with the kernels around them and the
 * host never waits for them (except for the small host reductions).
 *
 * NCCL is loaded with dlopen when the communicator is made (TEZGAH_NCCL_LIB, else
 * libnccl.so.2 on the loader's path), like cuBLASLt: no link-time dependency, so one binary
 * runs on machines without NCCL as long as it trains on one GPU. The types come from the
 * toolkit's nccl.h at build time.
 *
 * The ncclUniqueId reaches the ranks through MPI (rank 0 makes it, MPI_Bcast: under mpirun)
 * or the environment (TEZGAH_NCCL_ID, made by the --nproc launcher). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr; before any header */
#endif
#include "dist/comm.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#if defined(TZ_HAVE_CUDA) && defined(TZ_HAVE_NCCL)
#include <cuda_runtime_api.h>
#include <nccl.h>

#define TZ_NCCL_FUNCS(X)                                                                               \
  X(GetVersion) X(GetUniqueId) X(CommInitRank) X(CommDestroy) X(CommAbort) X(ReduceScatter) X(AllGather) \
  X(Broadcast) X(GetErrorString)
#define MEMBER(name) __typeof__(&nccl##name) name;
static struct {
  TZ_NCCL_FUNCS(MEMBER)
} nc;
#undef MEMBER
static void *nc_lib;
static char nc_path[512];

/* dlopen NCCL once: 0, or -1 with tz_err() naming the library and how to point at it. */
static int nccl_load(void) {
  if (nc_lib) return 0;
  const char *env = getenv("TEZGAH_NCCL_LIB");
  snprintf(nc_path, sizeof nc_path, "%s", env && *env ? env : "libnccl.so.2");
  void *h = dlopen(nc_path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    return tz_err("nccl: cannot load %s (%s); install NCCL or set TEZGAH_NCCL_LIB to libnccl.so.2", nc_path,
                  why ? why : "dlopen failed");
  }
#define LOAD(name)                                                                      \
  if (!(*(void **)&nc.name = dlsym(h, "nccl" #name))) {                                 \
    dlclose(h);                                                                         \
    return tz_err("nccl: %s has no symbol nccl%s (NCCL too old?)", nc_path, #name);     \
  }
  TZ_NCCL_FUNCS(LOAD)
#undef LOAD
  nc_lib = h;
  return 0;
}

static void nc_check(ncclResult_t r, const char *what) {
  if (r == ncclSuccess) return;
  char msg[256];
  snprintf(msg, sizeof msg, "nccl: %s: %s", what, nc.GetErrorString ? nc.GetErrorString(r) : "error");
  tz_fatal(msg);
}
static void cu_check(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return;
  char msg[256];
  snprintf(msg, sizeof msg, "nccl: %s: %s", what, cudaGetErrorString(e));
  tz_fatal(msg);
}

typedef struct {
  ncclComm_t comm;
  cudaStream_t stream;
  double *dev; /* host reductions: [world·64] doubles of device staging */
  int mpi;     /* bootstrapped through MPI: finalize it at the end */
  int aborted;
} nccl_ctx;

#define SMALL_N 64 /* doubles per rank in one host reduction */

static nccl_ctx *ctx(tz_comm *c) { return c->ctx; }
static float *dptr(tz_comm *c, tz_slice s) { return c->be->raw_ptr(c->be, s); }

static void nccl_rs(tz_comm *c, tz_slice buf, size_t shard_n) {
  float *p = dptr(c, buf);
  /* in place: recvbuff = sendbuff + rank·recvcount */
  nc_check(nc.ReduceScatter(p, p + (size_t)c->rank * shard_n, shard_n, ncclFloat32, ncclSum, ctx(c)->comm,
                            ctx(c)->stream),
           "ncclReduceScatter");
}

static void nccl_ag(tz_comm *c, tz_slice buf, size_t shard_n) {
  float *p = dptr(c, buf);
  nc_check(nc.AllGather(p + (size_t)c->rank * shard_n, p, shard_n, ncclFloat32, ctx(c)->comm, ctx(c)->stream),
           "ncclAllGather");
  if (c->be->written) c->be->written(c->be, buf, (size_t)c->world * shard_n * sizeof(float));
}

static void nccl_bcast(tz_comm *c, tz_slice buf, size_t n, int root) {
  float *p = dptr(c, buf);
  nc_check(nc.Broadcast(p, p, n, ncclFloat32, root, ctx(c)->comm, ctx(c)->stream), "ncclBroadcast");
  if (c->be->written) c->be->written(c->be, buf, n * sizeof(float));
}

static void nccl_allgather_f64(tz_comm *c, const double *x, double *all, int n) {
  nccl_ctx *k = ctx(c);
  for (int done = 0; done < n;) { /* SMALL_N doubles per round */
    int m = n - done < SMALL_N ? n - done : SMALL_N;
    double *send = k->dev + (size_t)c->world * SMALL_N; /* after the receive area */
    cu_check(cudaMemcpyAsync(send, x + done, (size_t)m * sizeof *x, cudaMemcpyHostToDevice, k->stream), "copy");
    nc_check(nc.AllGather(send, k->dev, (size_t)m, ncclFloat64, k->comm, k->stream), "ncclAllGather");
    for (int r = 0; r < c->world; r++)
      cu_check(cudaMemcpyAsync(all + (size_t)r * n + done, k->dev + (size_t)r * m, (size_t)m * sizeof *x,
                               cudaMemcpyDeviceToHost, k->stream),
               "copy");
    cu_check(cudaStreamSynchronize(k->stream), "cudaStreamSynchronize");
    done += m;
  }
}

static void nccl_barrier(tz_comm *c) {
  double x = 0, *all = tz_malloc((size_t)c->world * sizeof *all);
  nccl_allgather_f64(c, &x, all, 1);
  free(all);
}

static void nccl_abort(tz_comm *c) {
  nccl_ctx *k = ctx(c);
  if (k && k->comm) {
    nc.CommAbort(k->comm); /* pending collectives are dropped: nothing waits for a peer */
    k->comm = NULL;
    k->aborted = 1;
  }
}

static void nccl_destroy(tz_comm *c) {
  nccl_ctx *k = ctx(c);
  if (!k) return;
  if (k->stream && !k->aborted) cudaStreamSynchronize(k->stream);
  if (k->comm) nc.CommDestroy(k->comm);
  if (k->dev) cudaFree(k->dev);
  if (k->mpi && !k->aborted) tz_mpi_finalize();
  free(k);
  c->ctx = NULL;
}

static int hexval(int ch) {
  return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

int tz_nccl_unique_id_hex(char *out, size_t cap) {
  if (cap < 2 * NCCL_UNIQUE_ID_BYTES + 1) return tz_err("nccl: id buffer too small");
  if (nccl_load()) return -1;
  ncclUniqueId id;
  ncclResult_t r = nc.GetUniqueId(&id);
  if (r != ncclSuccess) return tz_err("nccl: ncclGetUniqueId: %s", nc.GetErrorString(r));
  for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++) sprintf(out + 2 * i, "%02x", (unsigned char)id.internal[i]);
  return 0;
}

int tz_comm_nccl_init(tz_comm *c, const tz_dist_env *env) {
  if (!c->be->raw_ptr || !c->be->raw_stream) return tz_err("nccl: the %s backend does not expose its buffers", c->be->name);
  if (nccl_load()) return -1;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  nccl_ctx *k = tz_calloc(1, sizeof *k);
  c->ctx = k;
  c->kind = "nccl";
  c->destroy = nccl_destroy;
  if (env->launcher == TZ_LAUNCH_LOCAL) {
    const char *hex = getenv("TEZGAH_NCCL_ID");
    if (!hex || strlen(hex) != 2 * NCCL_UNIQUE_ID_BYTES) {
      nccl_destroy(c);
      return tz_err("nccl: TEZGAH_NCCL_ID must hold %d hex digits (set by train --nproc)", 2 * NCCL_UNIQUE_ID_BYTES);
    }
    for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++) {
      int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
      if (hi < 0 || lo < 0) {
        nccl_destroy(c);
        return tz_err("nccl: TEZGAH_NCCL_ID is not hexadecimal");
      }
      id.internal[i] = (char)(hi << 4 | lo);
    }
  } else {
    if (env->rank == 0) {
      ncclResult_t r = nc.GetUniqueId(&id);
      if (r != ncclSuccess) {
        nccl_destroy(c);
        return tz_err("nccl: ncclGetUniqueId: %s", nc.GetErrorString(r));
      }
    }
    k->mpi = 1;
    if (tz_mpi_bootstrap_bcast(&id, (int)sizeof id)) {
      k->mpi = 0;
      nccl_destroy(c);
      return -1;
    }
  }
  k->stream = (cudaStream_t)c->be->raw_stream(c->be);
  cudaError_t e = cudaMalloc((void **)&k->dev, ((size_t)env->world + 1) * SMALL_N * sizeof(double));
  if (e != cudaSuccess) {
    cudaGetLastError();
    nccl_destroy(c);
    return tz_err("nccl: cannot allocate device staging: %s", cudaGetErrorString(e));
  }
  ncclResult_t r = nc.CommInitRank(&k->comm, env->world, id, env->rank);
  if (r != ncclSuccess) {
    k->comm = NULL;
    nccl_destroy(c);
    return tz_err("nccl: ncclCommInitRank (rank %d of %d): %s", env->rank, env->world, nc.GetErrorString(r));
  }
  c->reduce_scatter = nccl_rs;
  c->all_gather = nccl_ag;
  c->broadcast = nccl_bcast;
  c->allgather_f64 = nccl_allgather_f64;
  c->barrier = nccl_barrier;
  c->abort = nccl_abort;
  int ver = 0;
  nc.GetVersion(&ver);
  if (env->rank == 0 && getenv("TEZGAH_VERBOSE"))
    fprintf(stderr, "nccl: %s, version %d, %d ranks\n", nc_path, ver, env->world);
  return 0;
}

int tz_nccl_describe(char *out, size_t cap) {
  if (nccl_load() != 0) {
    snprintf(out, cap, "built in, not loadable here: %s", tz_errmsg());
    return 1;
  }
  int ver = 0;
  Dl_info di;
  const char *where = dladdr(*(void **)&nc.GetVersion, &di) && di.dli_fname ? di.dli_fname : nc_path;
  nc.GetVersion(&ver);
  snprintf(out, cap, "yes (%s, version %d.%d.%d; TEZGAH_NCCL_LIB sets the library): data-parallel training on cuda",
           where, ver / 10000 ? ver / 10000 : ver / 1000, ver / 10000 ? ver / 100 % 100 : ver / 100 % 10, ver % 100);
  return 1;
}

#else /* no CUDA backend or no nccl.h at build time */

int tz_nccl_describe(char *out, size_t cap) {
#ifdef TZ_HAVE_CUDA
  snprintf(out, cap, "no (no nccl.h in the CUDA toolkit at build time): data-parallel cuda training unavailable");
#else
  snprintf(out, cap, "no (a build without the CUDA backend): NCCL serves only cuda's data-parallel training");
#endif
  return 0;
}

int tz_comm_nccl_init(tz_comm *c, const tz_dist_env *env) {
  return tz_err("distributed training on cuda needs NCCL, and this tezgah was built without it (no CUDA toolkit "
                "with nccl.h)");
}

int tz_nccl_unique_id_hex(char *out, size_t cap) {
  return tz_err("train --nproc on cuda needs NCCL, and this tezgah was built without it");
}

#endif
