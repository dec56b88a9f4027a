/* The CUDA backend: device selection, the stream and cuBLASLt handle, and the op table.
 *
 * One device (TEZGAH_CUDA_DEVICE, default 0), one non-blocking stream on which every op and
 * copy is queued in order; host synchronization happens only in download / download_act /
 * sync. Memory ops live in backend_cuda_mem.c, profiling in backend_cuda_prof.c, `tezgah
 * info` in backend_cuda_info.c; the kernels are src/kernels/<op>/<op>.cu (contract:
 * cuda_internal.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cuda/cuda_rt.h"
#include "core/decimal.h"
#include "core/error.h"

#define LT_WORKSPACE_BYTES ((size_t)32 << 20)

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

/* cuBLASLt (a dlopen of a ~500 MB library) loads on a thread started at backend creation, so
 * that it overlaps the context creation and the model's loading; its first user waits for it
 * (tzc_lt_ready). Few-row matmuls (decoding) never need it. */
typedef struct {
  pthread_t th;
  int started, joined, rc;
  int deferred; /* not started at creation (tz_backend_hint_matmul_rows: few rows): loaded at first use */
  double t0, ms;
  char err[512];
} lt_job;
static void *lt_thread(void *p) {
  lt_job *j = p;
  j->rc = tzc_lt_load();
  if (j->rc) snprintf(j->err, sizeof j->err, "%s", tz_errmsg());
  j->ms = now_ms() - j->t0;
  return NULL;
}
static void lt_join(lt_job *j) {
  if (j->started && !j->joined) pthread_join(j->th, NULL);
  j->joined = 1;
}

void tzc_lt_ready(tz_backend *be) {
  tzc_ctx *c = tzc(be);
  if (c->lt) return;
  lt_job *j = c->lt_job;
  if (j && j->deferred) { /* nobody expected a large matmul: load it now, on this thread */
    j->deferred = 0;
    j->t0 = now_ms();
    lt_thread(j);
  }
  if (j) lt_join(j);
  if (j && j->rc) tz_fatal(j->err);
  cublasLtHandle_t lt = NULL;
  cublasStatus_t st = tzc_lt.Create(&lt);
  if (st != CUBLAS_STATUS_SUCCESS) {
    char msg[96];
    snprintf(msg, sizeof msg, "cuda: cuBLASLt initialization failed (status %d)", (int)st);
    tz_fatal(msg);
  }
  c->lt = lt;
  if (c->verbose && j) fprintf(stderr, "cuda: cuBLASLt ready (loaded in %.1f ms on its thread)\n", j->ms);
}

void tzc_check(cudaError_t e, const char *what, const char *file, int line) {
  if (e == cudaSuccess) return;
  const char *f = strrchr(file, '/');
  char msg[512];
  snprintf(msg, sizeof msg, "cuda: %s: %s (%s) at %s:%d", what, cudaGetErrorString(e), cudaGetErrorName(e),
           f ? f + 1 : file, line);
  tz_fatal(msg); /* the CLI exits 1; the library itself never calls exit() */
}

void tzc_mem_account(tz_backend *be, long long delta) {
  tzc_ctx *c = tzc(be);
  c->bytes_used = (size_t)((long long)c->bytes_used + delta);
  if (c->bytes_used > c->bytes_peak) c->bytes_peak = c->bytes_used;
}

static void cuda_sync(tz_backend *be) { TZC_CHECK(cudaStreamSynchronize(tzc(be)->stream)); }
static void *cuda_raw_ptr(tz_backend *be, tz_slice s) { return tzc_ptr(s); }
static void *cuda_raw_stream(tz_backend *be) { return (void *)tzc(be)->stream; }
static size_t cuda_mem_used(tz_backend *be) { return tzc(be)->bytes_used; }
static size_t cuda_mem_peak(tz_backend *be) { return tzc(be)->bytes_peak; }

/* be->mem_free (backend.h): cudaMemGetInfo's free bytes of this device (every process's
 * allocations already out of it) less MEM_RESERVE, set aside for what the backend allocates by
 * itself after the model's buffers: the kernel scratch grown in the first step (norm and
 * column-sum partials, the embedding backward's sort, attention's D; GPT-2 1.5B at B16 T1024:
 * a few MiB besides the optional dS tiles, 427 MiB, which fall back to the recomputing dQ
 * kernel when they do not fit: ds_fits in attention.cu keeps the same 1 GiB), matmul's
 * aligned-bias copy, cuBLASLt's kernels loaded at their first use, NCCL's buffers at the first
 * all-reduce. SIZE_MAX when the query fails (the caller then keeps its default). */
#define MEM_RESERVE ((size_t)1 << 30)
static size_t cuda_mem_free(tz_backend *be) {
  size_t fr = 0, tot = 0;
  /* cudaMemGetInfo reports the calling thread's current device: ask with this backend's
   * device current, then give the thread its own back */
  int prev = -1, dev = tzc(be)->device;
  if (cudaGetDevice(&prev) != cudaSuccess) prev = -1;
  cudaError_t e = cudaSetDevice(dev);
  if (e == cudaSuccess) e = cudaMemGetInfo(&fr, &tot);
  if (prev >= 0 && prev != dev) cudaSetDevice(prev);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return SIZE_MAX;
  }
  return fr > MEM_RESERVE ? fr - MEM_RESERVE : 0;
}

static void cuda_destroy(tz_backend *be) {
  if (!be) return;
  tzc_ctx *c = tzc(be);
  if (c) {
    if (c->stream) cudaStreamSynchronize(c->stream);
    if (c->lt_job) {
      lt_join(c->lt_job);
      free(c->lt_job);
    }
    tzc_graphs_free(be);
    tzc_dec_buffers_free(be);
    tzc_decode_step_free(be);
    tzc_matmul_destroy(be);
    tzc_scratch_free(be);
    tzc_side_free(be);
    if (c->params_bf16) cudaFree(c->params_bf16);
    if (c->lt) tzc_lt.Destroy((cublasLtHandle_t)c->lt);
    if (c->lt_ws) cudaFree(c->lt_ws);
    tzc_stage_free(c);
    tzc_prof_free(c->prof);
    if (c->stream) cudaStreamDestroy(c->stream);
    free(c);
  }
  free(be);
}

/* ---- the op table ---- */
#define OP(name) be->name = tzc_##name

static void fill_ops(tz_backend *be) {
  be->alloc = tzc_alloc;
  be->free = tzc_free;
  be->upload = tzc_upload;
  be->download = tzc_download;
  be->copy = tzc_copy;
  be->fill = tzc_fill_op;
  be->zero_ranges = tzc_zero_ranges_op;
  be->download_act = tzc_download_act;
  be->copy_rows = tzc_copy_rows;
  be->sync = cuda_sync;
  be->destroy = cuda_destroy;
  be->profile_print = tz_cuda_profile_print;
  be->profile_reset = tz_cuda_profile_reset;
  be->mem_used = cuda_mem_used;
  be->mem_peak = cuda_mem_peak;
  be->mem_free = cuda_mem_free;
  be->params_mirror = tzc_params_mirror;
  be->raw_ptr = cuda_raw_ptr;
  be->raw_stream = cuda_raw_stream;
  be->written = tzc_written;
  be->matmul_t = tzc_matmul_t;
  be->matmul = tzc_matmul;
  be->matmul_at = tzc_matmul_at;
  be->matmul_t_gelu = tzc_matmul_t_gelu;
  be->matmul_dgelu = tzc_matmul_dgelu;
  be->matmul_t_res = tzc_matmul_t_res;
  OP(embed_fwd);
  OP(embed_bwd);
  OP(rmsnorm_fwd);
  OP(rmsnorm_bwd);
  OP(layernorm_fwd);
  OP(layernorm_bwd);
  OP(layernorm_bwd_rb);
  OP(bias_bwd);
  OP(rope);
  OP(attention_fwd);
  OP(attention_bwd);
  OP(gelu_fwd);
  OP(gelu_bwd);
  OP(swiglu_fwd);
  OP(swiglu_bwd);
  OP(add);
  OP(crossentropy);
  OP(sum_sq);
  OP(adamw);
  OP(embed_pos_fwd);
  OP(rope_pos);
  OP(attention_decode);
  OP(pick);
  OP(pick_dev);
  OP(norm_matmul_t);
  OP(decode_step);
  be->replay = tzc_replay;
  be->record_begin = tzc_record_begin;
  be->record_end = tzc_record_end;
}

/* ---- creation ---- */
static int env_device(int n_devices, int *dev) {
  const char *s = getenv("TEZGAH_CUDA_DEVICE");
  *dev = 0;
  if (!s || !*s) return 0;
  long v; /* decimal digits only (core/decimal.h): " 1" is refused as "1 " is */
  if (tz_decimal_long(s, strlen(s), &v) || v < 0 || v >= n_devices)
    return tz_err("cuda: TEZGAH_CUDA_DEVICE='%s' is not a device index in 0..%d", s, n_devices - 1);
  *dev = (int)v;
  return 0;
}

/* The driver's environment for this process, set before the driver starts (tz_backend_cuda_env
 * calls it early; tz_backend_cuda_create again, which then changes nothing: setenv with overwrite
 * 0 leaves a variable that is set alone). Returns `few` (below). */
static int cuda_env(tz_dtype act) {
  const int rows = tz_backend_matmul_rows_expected();
  /* few rows expected (`sample`'s hint): gemv.cu's kernels take every matmul (up to
   * tzc_gemv_max_m() rows; in bf16 up to 16 through tzc_mma_t), so cuBLASLt is not preloaded */
  const int few = rows >= 0 && rows <= (act == TZ_BF16 && tzc_mma_max_m() > 0 ? tzc_mma_max_m() : tzc_gemv_max_m());
  /* ... and the driver loads every kernel module when the context is made instead of at each
   * kernel's first launch, which the H200 runs of 2026-12-02 measured ~0.07 s faster over a
   * whole process (the first step no longer loads kernels one by one). Only then: with
   * cuBLASLt in use (batch 64, fp32 batch 16, TEZGAH_CUDA_MMA=0) the 22:44 run's EAGER steps
   * were 2-3x slower than decode3's LAZY ones (batch 64 2.74 vs ~1.4 ms/step; a suspicion that
   * the EAGER/LAZY A/Bs of device_cuda_decode4.sh, since removed, were to check). The user's own
   * CUDA_MODULE_LOADING wins; set before the driver starts. */
  if (few) setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  /* One hardware work queue instead of the driver's default 8: tezgah queues everything on one
   * stream (kernels, copies, cuBLASLt, NCCL's collectives; but the side queue, below), so the
   * other queues only cost time — each is made with the context and torn down at the exit. A bare driver program on the
   * H200 (2026-12-03 15:04 UTC, 4 runs each): context 102-120 ms with 8, 66-79 with 2, 50-60
   * with 1 (481-547 with 32); the exit after its last line 85-111 / 66-77 / 57-67 ms. A whole
   * 1,000-token `tezgah sample` went 0.696 -> 0.622 s (median of 5) with steps unchanged.
   * The user's own CUDA_DEVICE_MAX_CONNECTIONS wins; set before the driver starts.
   * Two where the side queue may run (backend_cuda_side.c; not for few rows, whose commands
   * never use it): on one hardware queue the side stream's kernels would wait in line behind
   * the main stream's (false serialization) instead of running beside them. */
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", few || !tzc_side_wanted() ? "1" : "2", 0);
  return few;
}

void tz_backend_cuda_env(const char *precision) {
  cuda_env(precision && !strcmp(precision, "fp32") ? TZ_F32 : TZ_BF16);
}

/* TEZGAH_CUDA_PDL: 1 (also unset or empty), 0, or -1 for another value */
static int parse_pdl(const char *e) {
  if (!e || !*e || !strcmp(e, "1")) return 1;
  return !strcmp(e, "0") ? 0 : -1;
}

int tzc_pdl_env_check(char *why, size_t cap) {
  const char *e = getenv("TEZGAH_CUDA_PDL");
  if (parse_pdl(e) >= 0) return 0;
  snprintf(why, cap, "TEZGAH_CUDA_PDL=%.40s: must be 1 or 0", e);
  return -1;
}

tz_backend *tz_backend_cuda_create(const char *precision) {
  tz_dtype act = TZ_BF16;
  if (precision && *precision) {
    if (!strcmp(precision, "fp32")) act = TZ_F32;
    else if (strcmp(precision, "bf16")) {
      tz_err("cuda: precision '%s' is not one of fp32, bf16", precision);
      return NULL;
    }
  }
  char attn_why[160]; /* a bad attention, GeLU-epilogue, side-queue, tuning or PDL switch fails here, before any work */
  if (tzc_attention_env_check(attn_why, sizeof attn_why) || tzc_gelu_epi_env_check(attn_why, sizeof attn_why) ||
      tzc_side_env_check(attn_why, sizeof attn_why) || tzc_mm_tune_env_check(attn_why, sizeof attn_why) ||
      tzc_pdl_env_check(attn_why, sizeof attn_why)) {
    tz_err("cuda: %s", attn_why);
    return NULL;
  }
  int n, dv, rv, dev;
  const int few = cuda_env(act);
  double t0 = now_ms();
  if (tzc_probe(&n, &dv, &rv) || env_device(n, &dev)) return NULL;
  double t_probe = now_ms();
  lt_job *job = tz_calloc(1, sizeof *job); /* cuBLASLt loads on a thread meanwhile */
  job->t0 = t_probe;
  if (few)
    job->deferred = 1;
  else if (!(job->started = pthread_create(&job->th, NULL, lt_thread, job) == 0)) lt_thread(job);
  double t_lt = now_ms();
  struct cudaDeviceProp prop;
  cudaError_t e = cudaSetDevice(dev);
  if (e == cudaSuccess) e = cudaFree(NULL); /* creates the context now (timed below) */
  if (e == cudaSuccess) e = cudaGetDeviceProperties(&prop, dev);
  double t_ctx = now_ms();
  if (e != cudaSuccess) {
    cudaGetLastError();
    lt_join(job);
    free(job);
    tz_err("cuda: cannot use device %d: %s", dev, cudaGetErrorString(e));
    return NULL;
  }
  if (prop.major < 8) {
    lt_join(job);
    free(job);
    tz_err("cuda: device %d (%s) has compute capability %d.%d; this build needs 8.0 or newer (sm_80, sm_89, sm_90)",
           dev, prop.name, prop.major, prop.minor);
    return NULL;
  }
  tz_backend *be = tz_calloc(1, sizeof *be);
  tzc_ctx *c = tz_calloc(1, sizeof *c);
  be->name = "cuda";
  be->ctx = c;
  be->act = act;
  be->act_mm = act; /* the norms, attention and activations write bf16 like every act tensor */
  c->device = dev;
  c->act = act;
  const char *ro = getenv("TEZGAH_CUDA_WEIGHTS_RO"); /* =0: keep the fp32 copy anyway (an A/B) */
  c->params_ro = act == TZ_BF16 && tz_backend_weights_read_only() && !(ro && !strcmp(ro, "0"));
  c->sm_count = prop.multiProcessorCount;
  c->smem_optin = (int)prop.sharedMemPerBlockOptin;
  c->cc_major = prop.major;
  c->cc_minor = prop.minor;
  const char *vb = getenv("TEZGAH_VERBOSE");
  c->verbose = vb && *vb && strcmp(vb, "0") != 0;
  fill_ops(be);
  c->lt_job = job;
  if ((e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) != cudaSuccess ||
      (e = cudaMalloc(&c->lt_ws, LT_WORKSPACE_BYTES)) != cudaSuccess) {
    cudaGetLastError();
    tz_err("cuda: cannot set up device %d (%s): %s", dev, prop.name, cudaGetErrorString(e));
    cuda_destroy(be);
    return NULL;
  }
  c->lt_ws_bytes = LT_WORKSPACE_BYTES;
  tzc_mem_account(be, (long long)LT_WORKSPACE_BYTES);
  tzc_stage_init(c);
  tzc_matmul_init(be);
  const char *pf = getenv("TEZGAH_PROFILE");
  if (pf && *pf && strcmp(pf, "0") != 0) c->prof = tzc_prof_create();
  if (!few) tzc_side_offer(be); /* (few rows: `sample`, which has no backward) */
  const char *gr = getenv("TEZGAH_CUDA_GRAPHS");
  c->graphs_off = c->prof || (gr && !strcmp(gr, "0"));
  const char *so = getenv("TEZGAH_CUDA_STEP");
  /* opt-in (on the H200 the one-kernel step is still slower than the recorded op-by-op step,
   * 2026-12-03): otherwise NULL, and the model never builds a step description */
  if (!(so && !strcmp(so, "1"))) be->decode_step = NULL;
  /* the GeLU epilogues (matmul.cu): by default both in bf16 (TEZGAH_CUDA_GELU_EPI=auto;
   * docs/PERF.md, sessions 20 and 31), none in fp32; where not offered NULL, and the model runs
   * the separate ops. The forward one is the model's only without recompute (model.c). */
  const int gelu_epi = tzc_gelu_epi_mode(be->act == TZ_BF16);
  if (!(gelu_epi & TZC_GELU_BWD)) be->matmul_dgelu = NULL;
  if (!(gelu_epi & TZC_GELU_FWD)) be->matmul_t_gelu = NULL;
  /* the residual epilogue (matmul.cu: cuBLASLt's C = res): by default in bf16, not in fp32;
   * TEZGAH_CUDA_MM_RES=1 offers it in both, =0 in neither (any other value: the default). Where
   * not offered NULL, and the model runs matmul_t + add. On the H200 it gained 0.5 % on gpt2-350m
   * and 1.1 % on 774m alone (2026-12-04, scripts/device_mmres23.sh), and with the GeLU
   * epilogues' both 0.9-1.0 % over the former default on 350m-1.5b (docs/PERF.md). fp32 keeps
   * the separate ops by default, as for the GeLU (the precision kept closest to the CPU's
   * reference; there the two forms differ only in the order of three fp32 additions). It was
   * opt-in while test_cuda_train judged bf16 by a 20-step loss curve's distance from the CPU's
   * (2.9e-2 with it, 1.6e-2 without, against 2e-2): one rounding fewer per projection moves a
   * chaotic curve without making a step less precise, which the test's teacher-forced check
   * now measures. */
  const char *mres = getenv("TEZGAH_CUDA_MM_RES");
  const int mm_res = mres && !strcmp(mres, "1") ? 1 : mres && !strcmp(mres, "0") ? 0 : act == TZ_BF16;
  if (!mm_res) be->matmul_t_res = NULL;
  /* the weight gradients written by a step's first backward, not zero-filled first (backend.h
   * grads_written); TEZGAH_CUDA_GRADS_WRITTEN=0 fills the whole buffer as before (an A/B) */
  const char *gw = getenv("TEZGAH_CUDA_GRADS_WRITTEN");
  be->grads_written = !(gw && !strcmp(gw, "0"));
  /* The LayerNorm backward's forms (cuda_internal.h; measurement knobs, read
   * leniently: another value is the default). TEZGAH_CUDA_LN_RB=0: layernorm_bwd_rb not offered
   * (the model then runs bias_bwd for the projections' biases, as before it; the A/B of the op).
   * TEZGAH_CUDA_LN_WARPS=1..8: the one-pass LayerNorm backward's warps per block (default 4 or
   * 2 by C, layernorm.cu says why; another count changes which rows each warp's partial sums hold, so
   * the dw, db, dbias sums' order: deterministic at a given count). */
  const char *lrb = getenv("TEZGAH_CUDA_LN_RB");
  if (lrb && !strcmp(lrb, "0")) be->layernorm_bwd_rb = NULL;
  const char *lw = getenv("TEZGAH_CUDA_LN_WARPS");
  c->ln_warps = lw ? atoi(lw) : 0;
  if (c->ln_warps < 1 || c->ln_warps > 8) c->ln_warps = 0; /* by C (layernorm.cu ln_nw) */
  const char *rp = getenv("TEZGAH_CUDA_ROPE_PAIRS");
  c->rope_pairs = rp && !strcmp(rp, "1");
  const char *ro1 = getenv("TEZGAH_CUDA_RMS_ONEPASS");
  c->rms_rows = ro1 && !strcmp(ro1, "0");
  /* programmatic dependent launch (cuda_common.cuh's tzc_launch: our own kernels; gemv.cu and
   * attention_decode.cu while a decoding step is recorded): by default on where the device has it
   * (compute capability >= 9.0: prop is the backend's device's, dev above); TEZGAH_CUDA_PDL=0 off
   * (the A/B), =1 the default (off below 9.0 still); another value failed at the start. Off while
   * profiling, as the side queue: an op's events would time the overlap of its first kernel with
   * the previous op's last. */
  c->pdl_off = prop.major < 9 || parse_pdl(getenv("TEZGAH_CUDA_PDL")) == 0 || c->prof;
  if (c->verbose) {
    fprintf(stderr, "cuda: device %d %s (sm_%d%d, %d SMs), %s activations\n", dev, prop.name, prop.major, prop.minor,
            prop.multiProcessorCount, tz_dtype_name(act));
    fprintf(stderr, "cuda: start-up %.1f ms: driver %.1f, context %.1f, stream/workspace/staging %.1f (cuBLASLt %s)\n",
            now_ms() - t0, t_probe - t0, t_ctx - t_lt, now_ms() - t_ctx,
            job->deferred ? "not preloaded: few-row matmuls expected; loaded at a first large one"
                          : "loads on a thread until its first use");
  }
  return be;
}

long tz_cuda_ln_rb_calls(int fused) { return tzc_ln_rb_calls(fused); } /* backend.h */

double tz_backend_cuda_reset_device(void) { /* backend.h; the backends are left to the exit */
  double t0 = now_ms();
  cudaDeviceReset();
  return now_ms() - t0;
}
