/* The WebGPU backend: Dawn (loaded by dawn_load.c) driven through our own webgpu.h subset
 * (webgpu_api.h), every op a WGSL kernel from src/kernels/<op>/<op>.wgsl (embedded at build
 * time, see cmake/embed_wgsl.cmake).
 *
 * Execution model:
 * - Ops are recorded into one command encoder and one compute pass; nothing is submitted
 *   until download(), sync(), upload() (which must not overtake recorded work), free(), or a
 *   full uniform ring. A training micro-step is therefore one submit for forward + loss
 *   readback and one for backward + optimizer.
 * - Uniform parameters live in a ring (one 256-byte slot per dispatch) mirrored on the host
 *   and written with one queue write per submit. Bind groups are cached by (pipeline, slot,
 *   buffers, ranges): a training step repeats the same dispatch sequence, so after the first
 *   step no bind group is created.
 * - A tz_slice is bound from its byte offset rounded down to the storage offset alignment;
 *   the remainder is passed to the kernel in elements (words 0..7 of the uniform block). Each
 *   binding covers exactly the range the op reads or writes; a range above the device's
 *   maxStorageBufferBindingSize stops with an error naming the op and tensor.
 * - Pipelines are created on first use and cached by (file, entry, constant prefix).
 * - The uncaptured-error and device-lost callbacks record the first message; every submit
 *   point checks it and stops the program with that message (never silent zeros).
 * - Precision: fp32 master weights, residual stream, gradients and optimizer. Where the adapter
 *   offers ShaderF16 (and TEZGAH_WEBGPU_F16 is not 0) the parameter buffer registered by
 *   params_mirror() gets an f16 mirror (w16.wgsl): the forward's weight reads (matmul_t's b, any
 *   shape, embed_fwd's wte/wpe) use it, and so does the subgroup-matrix matmul for matmul's W;
 *   the vector kernels' backward (matmul's W for dX) and AdamW read fp32. AdamW rewrites the
 *   mirror in the same pass; uploads/copies/fills into the parameter buffer mark it stale and it
 *   is re-cast before its next use. With it the matmul inputs (be->act_mm) are f16 (c->act16),
 *   and so are all activations and activation gradients (be->act, c->act_f16). With
 *   TEZGAH_WEBGPU_ACT=f32 (fp32 act) the backward's gradient producers instead write f16 copies
 *   of their outputs where the subgroup-matrix matmul runs (wg_grad16). f16 act tensors are
 *   wg_arg.h16 arguments: preamble kernels read them through their f16 variant (wg_run_ex), the
 *   standalone kernels declare them themselves.
 *
 * The backend is split by concern (as src/backend/cuda/ is); this header is what its files share:
 *   webgpu_rt.c          instance, adapter and device (features, limits, Dawn toggles), the error
 *                        callbacks, the op table (tz_backend_webgpu_create), destroy, describe, info
 *   webgpu_mem.c         buffers, upload / download, scratch and staging buffers, fill / copy /
 *                        copy_rows, the f16 weight mirror
 *   webgpu_pipe.c        recording and submission (encoder, flush, sync), shader modules and the
 *                        pipeline cache, bind groups, dispatch (wg_run / wg_run_ex)
 *   webgpu_prof.c        per-kernel GPU timestamps (TEZGAH_PROFILE=1) into the profile's rows
 *   webgpu_ops_matmul.c  the matmul family (matmul_t, matmul, matmul_at, matmul_at_swiglu_a)
 *   webgpu_ops_attn.c    rope and attention (flash kernels and the general ones)
 *   webgpu_ops_attn_sg.c flash attention on subgroup matrices (f16 x f16 -> f32)
 *   webgpu_ops_elem.c    elementwise ops, sums, bias gradient, norms, activations
 *   webgpu_ops_embed_xent_adamw.c  embedding, cross-entropy, AdamW
 * Nothing here is public API (backend.h is).
 */
#ifndef TZ_WEBGPU_INTERNAL_H
#define TZ_WEBGPU_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/webgpu/webgpu_api.h"
#include "core/error.h"

/* generated from src/kernels/ * / *.wgsl by cmake/embed_wgsl.cmake */
typedef struct {
  const char *name, *src;
} tz_wgsl_file;
extern const tz_wgsl_file tz_wgsl_files[];
extern const int tz_wgsl_nfiles;

struct tz_buf {
  WGPUBuffer b;
  size_t bytes; /* requested */
  size_t size;  /* allocated (multiple of 16) */
  const char *what;
};

#define UNI_STRIDE 256
#define UNI_SLOTS 4096
#define MAX_ARGS 8
#define MAX_PIPES 512
#define MAX_MODULES 384
#define KEY_CAP 2048
#define BG_CAP 16384
#define PROF_MAX 2048 /* timestamp pairs per submit (4096 queries: the WebGPU maximum) */

typedef struct {
  char key[KEY_CAP];
  WGPUComputePipeline pipe;
  WGPUBindGroupLayout bgl;
  int nbind; /* storage bindings of a standalone module (0: the preamble's MAX_ARGS) */
  /* preamble modules: the arguments the file writes (bit a; 0xff: no read-only variant) and
   * the read-only variant's pipeline (-1: not made yet); see ro_variant() */
  uint32_t wmask;
  int ro_pi;
  /* preamble modules: variants with f16 bindings (f16_mask[i]: bit k = binding k is array<f16>;
   * f16_pi[i]: its pipeline), made on first use by wg_run_ex */
  uint8_t f16_mask[4];
  int f16_pi[4], nf16;
  /* "// v16" in the prefix: a vector kernel, whose f16 bindings are array<vec4<f16>> in its f16
   * variant (wg_run_ex checks their 8-byte alignment) */
  int v16;
} wg_pipe;

typedef struct {
  char key[KEY_CAP];
  WGPUShaderModule mod;
} wg_module;

typedef struct {
  uint32_t pipe, slot, n, used;
  WGPUBuffer buf[MAX_ARGS + 1];
  uint64_t off[MAX_ARGS + 1], size[MAX_ARGS + 1];
  WGPUBindGroup bg;
} wg_bg;

typedef struct {
  WGPUInstance inst;
  WGPUAdapter adapter;
  WGPUDevice dev;
  WGPUQueue queue;
  WGPULimits lim;
  WGPUAdapterInfo info;
  int has_f16, has_subgroups, has_ts;
  int subgroups;     /* reductions with subgroup operations (Subgroups, TEZGAH_WEBGPU_SUBGROUPS != 0) */
  int ro;            /* read-only variants of preamble kernels (ro_variant; TEZGAH_WEBGPU_RO) */
  int f16;           /* f16 weight mirror on (ShaderF16 and TEZGAH_WEBGPU_F16 != 0) */
  int act16;         /* be->act_mm is TZ_F16: f16 matmul-input activations (f16, TEZGAH_WEBGPU_ACT16 != 0) */
  int act_f16;       /* be->act is TZ_F16: every activation and activation gradient in f16
                      * (act16 and TEZGAH_WEBGPU_ACT=f16; wg_aa / wg_act_at below) */
  uint64_t serial;   /* dispatches and uploads recorded so far (sg_operand's reuse test) */
  /* what each sg16 operand buffer holds: the f16 copy of (buf, off, n) made right after
   * dispatch number sg_serial[i] (reused while nothing else ran: sg_operand) */
  tz_buf *sg_src[2];
  size_t sg_off[2], sg_n[2];
  uint64_t sg_serial[2];
  tz_buf *a32;       /* fp32 copies of f16 activations for kernels without f16 forms (wg_act32) */
  tz_buf *a32x[3];   /* more of them, for ops that need several at once (wg_act32x: attention) */
  /* the subgroup-matrix matmul (matmul_sgmat.wgsl) for the matmul family: on with f16, where
   * the adapter lists f16 x f16 -> f32 16x16x16, offers ShaderF16 and one subgroup size, unless
   * TEZGAH_WEBGPU_SGMAT=0 (wg_sgmat_choose, webgpu_rt.c); sg_why: why not */
  int sgmat;
  int sg_emu; /* TEZGAH_WEBGPU_SGMAT_EMU=1 (tests): the matmul family's kernel n with the builtins
               * emulated in WGSL (matmul_sgmm.wgsl EMU) on an adapter with ShaderF16 only */
  uint32_t sg_size;
  const char *sg_why;
  /* whether the adapter lists an f16 x f16 -> f16 16x16x16 subgroup-matrix configuration (an f16
   * accumulator; sgmat_choose, tz_sgmat_pick_res): the attention backward's f16 dq partials
   * (webgpu_ops_attn_sg.c sg_dq16) need it on real hardware */
  int sgmat_f16res;
  tz_buf *sg16[2];   /* f16 copies of the two operands (wg_matmul's sgmat path) */
  tz_buf *pbuf;      /* the registered parameter buffer (params_mirror) */
  tz_buf *mirror;    /* its f16 copy (2 bytes per element) */
  int mirror_stale;  /* pbuf written since the mirror was last made */
  int failed;
  char errmsg[1024];
  /* recording */
  WGPUCommandEncoder enc;
  WGPUComputePassEncoder pass;
  /* uniforms */
  WGPUBuffer uni;
  uint8_t *uni_host;
  uint32_t uni_used;
  /* caches */
  wg_pipe pipes[MAX_PIPES];
  int npipes;
  int npipes_waited; /* npipes at the end of the last wait (the ones a CPU adapter has compiled) */
  int compile_noted; /* the CPU adapter's compile note is out (wg_compile_note) */
  double pipe_s;     /* seconds spent creating pipelines (wg_pipeline) */
  wg_module mods[MAX_MODULES];
  int nmods;
  wg_bg *bgs;
  size_t nbgs;
  /* buffers owned by the backend */
  tz_buf *scratch, *stage, *wt, *dummy[MAX_ARGS], *ranges;
  uint32_t *ranges_host;
  size_t ranges_words;
  WGPUBuffer readback;
  size_t readback_size;
  size_t bytes_used, bytes_peak; /* storage (wg_alloc) + readback buffers: train's peak memory line */
  /* profiling (TEZGAH_PROFILE=1): one pass per dispatch with timestamps */
  int profile;
  WGPUQuerySet qs;
  WGPUBuffer qres, qread;
  int nq;
  const char *qlabel[PROF_MAX];
  double pending_flop;  /* the FLOP of the next dispatch (the op sets it; 0: not a matmul) */
  tz_prof_totals prof;  /* per label: GPU ns, calls, FLOP, bytes bound, summed over dispatches */
  uint64_t submits;
  /* Submit after this many recorded dispatches (TEZGAH_WEBGPU_FLUSH_EVERY, default 32; 0: only
   * when the uniform ring or bind group cache fills, or at a sync). Dawn translates a command
   * buffer to Vulkan at Submit and the GPU starts only then: a step recorded whole leaves the
   * GPU idle while the host records it. */
  int flush_every, since_flush;
} wg_ctx;

#define CTX(be) ((wg_ctx *)(be)->ctx)
#define W tz_wgpu


/* ---- dispatch ---- */
typedef struct {
  tz_slice s;
  size_t bytes; /* extent read or written from s.off */
  const char *name;
  /* 1: the tensor holds f16 elements (an activation with be->act == TZ_F16, c->act_f16). In a
   * preamble kernel its binding is then declared array<f16> and ld / st convert (f32 in the
   * kernel; a store beyond f16's range gives ±inf, NaN stays NaN: wg_run_ex's f16 variant), and
   * its element offset in the uniform block counts 2-byte elements. Arguments that share a
   * binding must agree on it. */
  int h16;
} wg_arg;

/* A 1-D grid of `threads` threads in workgroups of 256, folded into x and y. */
static inline void grid1(uint64_t threads, uint32_t *gx, uint32_t *gy) {
  uint64_t wgs = (threads + 255) / 256;
  if (wgs == 0) {
    *gx = *gy = 0;
    return;
  }
  uint64_t x = wgs < 32768 ? wgs : 32768;
  *gx = (uint32_t)x;
  *gy = (uint32_t)((wgs + x - 1) / x);
}
/* A grid of `groups` workgroups (one per row), folded into x and y. */
static inline void gridn(uint64_t groups, uint32_t *gx, uint32_t *gy) {
  if (!groups) {
    *gx = *gy = 0;
    return;
  }
  uint64_t x = groups < 32768 ? groups : 32768;
  *gx = (uint32_t)x;
  *gy = (uint32_t)((groups + x - 1) / x);
}

static inline uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

#define A(slice, nbytes, nm) ((wg_arg){(slice), (nbytes), (nm), 0})
/* an argument of n f16 elements */
#define AH(slice, n, nm) ((wg_arg){(slice), (size_t)(n) * 2, (nm), 1})
#define F4(n) ((size_t)(n) * 4)

/* Activation ("act", backend.h) arguments in the backend's activation dtype: n elements of
 * the act tensor s, f16 where c->act_f16 (AH), else fp32 (A). */
static inline wg_arg wg_aa(const wg_ctx *c, tz_slice s, size_t n, const char *nm) {
  return c->act_f16 ? AH(s, n, nm) : A(s, F4(n), nm);
}
/* Element i of the act tensor s (its byte offset moved by i act elements). */
static inline tz_slice wg_act_at(const wg_ctx *c, tz_slice s, size_t i) {
  s.off += i * (c->act_f16 ? 2 : 4);
  return s;
}

/* A switch's value that is not a decimal integer: one warning line per variable (webgpu_rt.c). */
void wg_env_bad(const char *name, const char *value, int dflt);
/* An integer from the environment variable `name` (the backend's switches, TEZGAH_WEBGPU_*),
 * `dflt` when unset or empty; a value that is not a decimal integer ("banana", "1x", "yes") is
 * `dflt` too, with a warning on stderr the first time (atoi read "banana" as 0 and "1x" as 1
 * without a word, the fresh-clone walkthrough of 2026-12-05). */
static inline int env_int(const char *name, int dflt) {
  const char *e = getenv(name);
  if (!e || !*e) return dflt;
  char *end;
  long v = strtol(e, &end, 10);
  if (end == e || *end || v < INT_MIN || v > INT_MAX) {
    wg_env_bad(name, e, dflt);
    return dflt;
  }
  return (int)v;
}

/* The f16 enable directive of the kernels that read the f16 weight mirror (w16.wgsl, matmul_fast's f16 operand). */
#define F16_PREFIX "enable f16;"

/* Tile configuration of matmul_fast.wgsl: a TM x TN register tile per thread (workgroup tile
 * 16·TM x 16·TN), k-tile depth BK, NBUF workgroup tile buffers. */
typedef struct {
  int tm, tn, bk, nbuf;
} mm_cfg;

/* ---- webgpu_rt.c: errors and waiting ---- */
/* Ops cannot return errors (backend.h): a recorded device error ends the program with its message. */
void wg_check(wg_ctx *c);
/* Record a first error (printf-style fmt over a, b, x, y) and stop through wg_check. */
void wg_fail(wg_ctx *c, const char *fmt, const char *a, const char *b, size_t x, uint64_t y);
/* Wait for a future (at most TEZGAH_WEBGPU_WAIT_S seconds, default 600): 0, or -1 on timeout
 * (c->failed set, c->errmsg naming the limit) or device error. */
int wg_wait_future(wg_ctx *c, WGPUFuture f);

/* ---- webgpu_mem.c: buffers and memory ops ---- */
WGPUBuffer wg_mkbuf(wg_ctx *c, uint64_t size, WGPUBufferUsage usage, const char *label);
/* Peak bytes in tensor, scratch and readback buffers since the backend was created. */
size_t wg_mem_peak(tz_backend *be);
tz_buf *wg_alloc(tz_backend *be, size_t bytes, const char *what);
void wg_free(tz_backend *be, tz_buf *t);
void wg_upload(tz_backend *be, tz_slice dst, const void *src, size_t bytes);
/* Map callback: *(int *)u1 = 1 on success, -1 otherwise. */
void wg_on_mapped(WGPUMapAsyncStatus status, WGPUStringView message, void *u1, void *u2);
void wg_download(tz_backend *be, void *dst, tz_slice src, size_t bytes);
void wg_sync(tz_backend *be);
/* The backend's scratch buffer of at least `bytes` (partial sums; one user at a time). */
tz_slice wg_scratch(tz_backend *be, size_t bytes);
/* The second scratch buffer (operands staged by the split matmul). */
tz_slice wg_stage(tz_backend *be, size_t bytes);
/* Bytes / fp32 elements one binding may cover from any 4-byte-aligned start. */
size_t wg_cap_bytes(wg_ctx *c);
size_t wg_cap_elems(wg_ctx *c);
void wg_download_act(tz_backend *be, float *dst, tz_slice src, size_t n);
void wg_fill(tz_backend *be, tz_slice dst, float value, size_t n, tz_dtype dt);
void wg_copy(tz_backend *be, tz_slice dst, tz_slice src, size_t bytes);
/* dst[r*dst_stride + c] (+)= src[r*src_stride + c] (acc: add), fp32. */
void wg_copy_rows_ex(wg_ctx *c, tz_slice dst, size_t dst_stride, tz_slice src, size_t src_stride, int rows,
                     int cols, int acc);
void wg_copy_rows_h(wg_ctx *c, tz_slice dst, size_t dst_stride, tz_slice src, size_t src_stride, int rows, int cols,
                    int acc, int dh16, int sh16);
void wg_copy_rows(tz_backend *be, tz_slice dst, size_t dst_stride, tz_slice src, size_t src_stride, int rows,
                  int cols);
/* The f16 weight mirror: elements [e0, e0 + n) as wg_run_ex's extra binding (*h0: e0's index
 * inside it); re-cast when stale; does slice s lie in the mirrored parameter buffer? */
wg_arg wg_mirror_range(wg_ctx *c, size_t e0, size_t n, uint32_t *h0);
void wg_mirror_refresh(wg_ctx *c);
int wg_mirrored(wg_ctx *c, tz_slice s);
void wg_params_mirror(tz_backend *be, tz_buf *params);

/* f16 activations (be->act_mm == TZ_F16, c->act16): dst [n] f16 = src [n] f32 (round to
 * nearest even, clamped to ±65504) and back, through to_f16.wgsl / to_f32.wgsl; slices 4-byte
 * aligned (to_f32's f16 src: 2-byte). */
void wg_to_f16(wg_ctx *c, const char *label, tz_slice dst, tz_slice src, size_t n);
void wg_to_f32(wg_ctx *c, const char *label, tz_slice dst, tz_slice src, size_t n);
/* wg_to_f16 with ±inf beyond f16's range instead of ±65504 (activation gradients with f16
 * activations: an overflow must reach the loss scaler's finiteness check) */
void wg_to_f16_inf(wg_ctx *c, const char *label, tz_slice dst, tz_slice src, size_t n);
/* An fp32 buffer of n elements owned by the backend (c->a32; one user at a time): where an f16
 * activation meets a kernel that has only an fp32 form (the general matmul, attention). */
tz_slice wg_act32(tz_backend *be, size_t n);
/* The same for ops that hold several fp32 copies at once (with f16 activations, c->act_f16, the
 * fp32 flash attention's q/k/v, dout and dq/dk/dv copies): slot 0..2 (each its own buffer,
 * apart from wg_act32's), `bytes` bytes from offset 0. */
tz_slice wg_act32x(tz_backend *be, int slot, size_t bytes);
/* The f16 output binding of the preamble kernels that write a matmul input (norms, GeLU,
 * SwiGLU): the prefix and, with act16, binding 9's argument for `out` [n] (wg_out16_prefix: binding 9 O16, element 2·u5 + i). */
const char *wg_out16_prefix(wg_ctx *c);
/* The same with OUT16 on (on != 0) or off whatever c->act16 says; st16 writes ±inf beyond f16's
 * range instead of clamping where inf != 0 (gradients: dynamic loss scaling must see overflow). */
const char *wg_out16_prefix_on(int on, int inf);
/* The vector kernels for f16 activations ("// v16": ld4 / st4 as 8-byte accesses; st16x4 on
 * binding 9 where out16): their prefix, and whether they are on (c->act_f16 and
 * TEZGAH_WEBGPU_ACT16_VEC != 0). */
const char *wg_v16_prefix(int out16);
int wg_v16_on(wg_ctx *c);
/* A vector kernel can take f16 tensors of n elements at byte offsets off[0..k): n a multiple of
 * 4 and every offset a multiple of 8 (whole vec4<f16> of the binding; else the per-element
 * variant runs). */
static inline int wg_v16_ok(wg_ctx *c, size_t n, const size_t *off, int k) {
  if (!wg_v16_on(c) || n % 4) return 0;
  for (int i = 0; i < k; i++)
    if (off[i] % 8) return 0;
  return 1;
}
/* Gradient f16 copies, where the subgroup-matrix matmul runs (TEZGAH_WEBGPU_GRAD16=0: off, =1:
 * forced, tests; off under TEZGAH_WEBGPU_SG_REUSE=0): the kernel that writes the fp32 gradient
 * `dst` [n] (crossentropy's dlogits, the norms' dinp, gelu_bwd's dinp, swiglu_bwd's dgu) also
 * writes it as f16 into the operand scratch buffer 0 (*h: binding 9's argument; 1 when on), and
 * wg_grad16_made records it after the op's last dispatch as the f16 copy of dst, which the next
 * subgroup-matrix matmuls reading dst as their dY take instead of converting it (sg_operand).
 * dst 16-byte aligned, n even. */
int wg_grad16(tz_backend *be, tz_slice dst, size_t n, wg_arg *h);
void wg_grad16_made(wg_ctx *c, tz_slice dst, size_t n);

/* ---- webgpu_pipe.c: recording, pipelines, bind groups, dispatch ---- */
void wg_end_pass(wg_ctx *c);
WGPUCommandEncoder wg_encoder(wg_ctx *c);
/* Submit everything recorded (and the uniform ring); collects profile timestamps. */
void wg_flush(wg_ctx *c);
/* wg_flush, then wait until the queue is idle. */
void wg_sync_ctx(wg_ctx *c);
/* Pipeline index for entry point `entry` of src/kernels/<file>/<file>.wgsl with `prefix`
 * (WGSL declarations) prepended; created on first use, cached. */
int wg_pipeline(wg_ctx *c, const char *file, const char *entry, const char *prefix);
void wg_bg_clear(wg_ctx *c);
/* The bindings wg_run_ex gives a dispatch's arguments (see there); returns their number. */
int wg_bind_slots(wg_ctx *c, const wg_arg *args, int nargs, int *slot_of, tz_buf **sb, uint64_t *lo,
                  uint64_t *hi);
/* The CPU adapter's compile note (webgpu_rt.c), once, where s seconds (of a wait, or of making
 * pipelines) reach TEZGAH_WEBGPU_COMPILE_NOTE_S. */
void wg_compile_note(wg_ctx *c, double s);
/* Whether a standalone kernel's arguments a[0..n) get bindings 1..n in order, none merged. */
int wg_own_bindings(wg_ctx *c, const wg_arg *a, int n);
/* Record one dispatch (words[8..nwords): the kernel's parameters; args: at most 8 tensors). */
void wg_run_ex(wg_ctx *c, const char *label, int pi, uint32_t *words, int nwords, const wg_arg *args, int nargs,
               uint32_t gx, uint32_t gy, uint32_t gz, const wg_arg *atomic_arg, int pi_direct);
void wg_run(wg_ctx *c, const char *label, int pi, uint32_t *words, int nwords, const wg_arg *args, int nargs,
            uint32_t gx, uint32_t gy, uint32_t gz);

/* ---- webgpu_prof.c ---- */
/* Read the timestamps of the last submit into the per-label totals. */
void wg_prof_collect(wg_ctx *c);

/* ---- the ops (backend.h documents each); webgpu_ops_*.c ---- */
/* webgpu_ops_elem.c */
void wg_add(tz_backend *be, tz_slice out, tz_slice a_, tz_slice b_, size_t n);
/* dst[c] += sum_k part[k*stride + c], c < cols, k < rows */
/* 0 under TEZGAH_WEBGPU_MEMOPS=0 (the memory-bound ops' former kernels), else 1 (webgpu_ops_elem.c) */
int wg_memops_new(void);
int wg_colsum_new(void);
int wg_colsum_add_v4(wg_ctx *c, const char *label, tz_slice dst, tz_slice part, int rows, size_t cols, size_t stride,
                     int overwrite);
void wg_colsum_add(wg_ctx *c, tz_slice dst, tz_slice part, int rows, int cols, int stride);
void wg_bias_bwd(tz_backend *be, tz_slice db, tz_slice dout, int M, int N);
void wg_sum_sq(tz_backend *be, tz_slice out, tz_slice x, size_t n);
void wg_rmsnorm_fwd(tz_backend *be, tz_slice out, tz_slice rstd, tz_slice inp, tz_slice w_, int N, int C,
                    float eps);
void wg_rmsnorm_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice dout, tz_slice inp, tz_slice w_,
                    tz_slice rstd, int N, int C);
void wg_layernorm_fwd(tz_backend *be, tz_slice out, tz_slice mean, tz_slice rstd, tz_slice inp, tz_slice w_,
                      tz_slice b_, int N, int C, float eps);
void wg_layernorm_bwd(tz_backend *be, tz_slice dinp, tz_slice dw, tz_slice db, tz_slice dout, tz_slice inp,
                      tz_slice w_, tz_slice mean, tz_slice rstd, int N, int C);
void wg_gelu_fwd(tz_backend *be, tz_slice out, tz_slice inp, size_t n);
void wg_gelu_bwd(tz_backend *be, tz_slice dinp, tz_slice inp, tz_slice dout, size_t n);
void wg_swiglu_fwd(tz_backend *be, tz_slice out, tz_slice gu, int N, int F);
void wg_swiglu_bwd(tz_backend *be, tz_slice dgu, tz_slice dout, tz_slice gu, int N, int F);
/* webgpu_ops_matmul.c; wg_mm_config / wg_mm_smem also name the tile in tz_webgpu_describe */
size_t wg_mm_smem(mm_cfg f);
mm_cfg wg_mm_config(wg_ctx *c, int rw);
void wg_matmul_t(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, tz_slice bias, int M, int K, int N,
                 int acc);
/* TEZGAH_WEBGPU_F16_PIECES (webgpu_ops_matmul.c): f16 tensors' pieces counted by their bytes */
int wg_f16_pieces(void);
void wg_matmul_t_res(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, tz_slice bias, tz_slice res, int M, int K,
                     int N);
void wg_matmul_t_gelu(tz_backend *be, tz_slice out, tz_slice h, tz_slice x, tz_slice w, tz_slice bias, int M, int K,
                      int N);
void wg_matmul_dgelu(tz_backend *be, tz_slice dh, tz_slice db, tz_slice dout, tz_slice w, tz_slice h, int M, int K,
                     int N);
void wg_matmul_dswiglu(tz_backend *be, tz_slice dgu, tz_slice dout, tz_slice w, tz_slice gu, int M, int K, int N);
void wg_matmul(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, int M, int K, int N, int acc);
void wg_matmul_at(tz_backend *be, tz_slice out, tz_slice a, tz_slice b, int M, int K, int N, int acc);
void wg_matmul_at_db(tz_backend *be, tz_slice out, tz_slice db, tz_slice a, tz_slice b, int M, int K, int N, int acc);
void wg_matmul_at_swiglu_a(tz_backend *be, tz_slice out, tz_slice a, tz_slice gu, int M, int K, int N, int acc);
/* The subgroup-matrix path's f16 operand scratch buffer `which` (0: a, 1: b) of at least `bytes`
 * (c->sg16; c->sg_src/off/n/serial say which fp32 tensor it holds: sg_operand's reuse). */
tz_buf *wg_sg16(tz_backend *be, int which, size_t bytes);
/* 0 under TEZGAH_WEBGPU_SG_REUSE=0: the subgroup-matrix path converts every operand that is not
 * already f16 on every call (no weight-mirror reads, no reused copies, no f16 dlogits). */
int wg_sg_reuse(void);
/* The f16 copy of the fp32 tensor src [n] that scratch buffer `which` holds and is still valid
 * (sg_operand's rule: made by the last pass or kept valid since, 16-byte steps inside the tensor
 * it was made of), else a slice with buf NULL. */
tz_slice wg_sg_copy16(wg_ctx *c, int which, tz_slice src, size_t n);
/* webgpu_ops_attn.c */
void wg_rope(tz_backend *be, tz_slice qkv, int B, int T, int n_head, int n_kv_head, int head_dim, int pos0,
             float theta, int dir);
void wg_attention_fwd(tz_backend *be, tz_slice out, tz_slice lse, tz_slice q, tz_slice k, tz_slice v, int B,
                      int Tq, int Tk, int q_pos0, int n_head, int n_kv_head, int head_dim, int q_stride,
                      int kv_stride);
void wg_attention_bwd(tz_backend *be, tz_slice dq, tz_slice dk, tz_slice dv, tz_slice dout, tz_slice q,
                      tz_slice k, tz_slice v, tz_slice out, tz_slice lse, int B, int T, int n_head, int n_kv_head,
                      int head_dim, int q_stride, int kv_stride);
/* webgpu_ops_attn_sg.c: flash attention on subgroup matrices for the training form (head_dim
 * 64 / 128) where the adapter allows (wg_attn_sg_why: NULL, else why not); each returns 1 when
 * it ran the op, 0 when the caller's fp32 kernels must (out: f16 with c->act16, else fp32). */
const char *wg_attn_sg_why(wg_ctx *c);
/* the attention kernels' choice in words ("attention on subgroup matrices (...) for training at
 * head_dim 64, ..." or "attention: fp32 flash kernels (...)"), for tz_webgpu_describe; static */
const char *wg_attn_sg_choice(wg_ctx *c);
/* the kernel source with a software stand-in for subgroup matrices (TEZGAH_WEBGPU_ATTN_SGMAT_EMU,
 * tests); module() applies it to a prefix holding "// sgmat emulation"; malloc'ed */
char *wg_attn_sg_emulate(const char *src);
int wg_attn_sg_fwd(tz_backend *be, tz_slice out, tz_slice lse, tz_slice q, tz_slice k, tz_slice v, int B, int Tq,
                   int Tk, int q_pos0, int n_head, int n_kv_head, int head_dim, int q_stride, int kv_stride);
int wg_attn_sg_bwd(tz_backend *be, tz_slice dq, tz_slice dk, tz_slice dv, tz_slice dout, tz_slice q, tz_slice k,
                   tz_slice v, tz_slice out, tz_slice lse, int B, int T, int n_head, int n_kv_head, int head_dim,
                   int q_stride, int kv_stride);
/* webgpu_ops_embed_xent_adamw.c */
void wg_embed_fwd(tz_backend *be, tz_slice out, tz_slice tok, tz_slice wte, tz_slice wpe, int B, int T, int C,
                  int V);
void wg_embed_bwd(tz_backend *be, tz_slice dwte, tz_slice dwpe, tz_slice dout, tz_slice tok, int B, int T, int C,
                  int V);
void wg_crossentropy(tz_backend *be, tz_slice losses, tz_slice logits, tz_slice targets, int N, int V, int Vp,
                     float dscale);
void wg_adamw(tz_backend *be, tz_slice params, tz_slice grads, tz_slice m, tz_slice v, const tz_range *ranges,
              int n_ranges, const tz_adamw_hp *hp);

#endif
