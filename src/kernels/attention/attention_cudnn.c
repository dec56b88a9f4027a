/* Causal attention through cuDNN's fused flash-attention graphs, in C through cuDNN's backend
 * API (cudnnBackendCreateDescriptor / SetAttribute / Finalize / Execute), loaded at run time:
 * tried first by default on sm_90 without GQA, and anywhere with TEZGAH_CUDA_ATTN=cudnn
 * (attention.cu's want_cudnn; attention_cudnn.h has the layouts).
 *
 * Source: NVIDIA's cuDNN developer guide, "Graph API" page, the runtime fusion engine's
 * "Flash Fused Attention fprop / bprop" patterns; and, for the exact node order, data types and
 * strides those patterns expect, how NVIDIA's open-source cuDNN frontend (github.com/NVIDIA/
 * cudnn-frontend, include/cudnn_frontend/node/scaled_dot_product_flash_attention.h, softmax.h,
 * diagonal_band_mask.h: the "composite" forms used before cuDNN 9.21) lowers its SDPA nodes to
 * backend operations. Written here from reading those; nothing is copied.
 *
 * Tensors (uid: dims, strides in elements; B batch, H query heads, G = KVH kv heads, T, d = hd;
 * q rows of qs elements, k/v rows of kvs, o/do rows of H·d; "v" = virtual, inside the kernel):
 *   1 Q     bf16 [B,H,T,d]  {T·qs, d, qs, 1}          (q's strided view: no copy)
 *   2 Kᵀ    bf16 [B,G,d,T]  {T·kvs, d, 1, kvs}        (k transposed by its strides)
 *   3 V     bf16 [B,G,T,d]  {T·kvs, d, kvs, 1}
 *   4 O     bf16 [B,H,T,d]  {T·H·d, d, H·d, 1}        (our out [B·T, H·d])
 *   5 Stats fp32 [B,H,T,1]  {H·T, T, 1, 1}            (our lse [B, H, T])
 *   6 scale fp32 by value (1/√d), 7 mask fill fp32 by value (−inf; FLT_MAX negated before 9.10,
 *     as the frontend does), 13 one fp32 by value (1.0)
 *   backward also: 8 dO like O, 9 dQ like Q, 10 dK like K ([B,G,T,d] {T·kvs, d, kvs, 1}),
 *     11 dV like V, 12 D = Σ dO∘O fp32 [B,H,T,1] {H·T, T, 1, 1} (non-virtual: in our workspace,
 *     as the frontend places it)
 * Forward graph (all pointwise math and matmul accumulation fp32; the score tensors are
 * [B,H,T,T] {H·T·T, T·T, T, 1} virtual fp32):
 *   S = Q·Kᵀ (matmul); S1 = S·scale; r = GEN_INDEX(S1, axis 2), c = GEN_INDEX(S1, axis 3) (int32);
 *   m = r ≥ c (CMP_GE, boolean); S2 = BINARY_SELECT(S1, fill, m) (S1 where m, else fill);
 *   M = max_j S2 (reduction → [B,H,T,1]); E = exp(S2 − M); L = Σ_j E; Stats = M + log L;
 *   P = E / L (virtual bf16: the second matmul takes its A operand in the I/O type);
 *   O = P·V (matmul).
 *   Stats is therefore exactly our lse: natural log of Σ_j exp(s_j) over the visible keys with
 *   s = q·k/√d, fp32, [B, H, T] — the existing backward kernels can consume it unchanged.
 * Backward graph (frontend order; P recomputed from Stats, no stored P):
 *   D' = Σ_d dO∘O (pointwise MUL, reduction ADD), D = D'·one (non-virtual 12);
 *   S = Q·Kᵀ; S1 = S·scale − Stats; S2 = causal BINARY_SELECT as above; E = exp(S2);
 *   dV = reshape(E)ᵀ (bf16, strides {H·T·T, T·T, 1, T}) · dO;
 *   dP = dO·Vᵀ (Vᵀ: V's strides swapped); dS = (dP − D)∘E·scale;
 *   dK = reshape(dS)ᵀ (bf16) · Q; dQ = dS · reshape(Kᵀ) (K's own strides, virtual fp32) written
 *   straight to dQ. GQA (G < H): dV and dK go to virtual per-query-head tensors [B,H,T,d] (bf16)
 *   and a reduction ADD to [B,G,T,d] (the frontend's GQA form); the forward broadcasts Kᵀ and V
 *   across the H/G query heads of a group inside the matmuls.
 * Determinism: cuDNN's backward is not deterministic by default. The frontend's default graph
 * sends dQ through a non-virtual fp32 accumulator in the workspace (dQ_accum, which it must zero
 * before cuDNN 9.6: key blocks add into it, in no fixed order); its is_deterministic_algorithm
 * option (set_deterministic_algorithm) instead builds the graph with dQ written directly by the
 * dS·K matmul (its "dP workspace" form; on Hopper the graph's shape is the whole option, no knob),
 * and NVIDIA's frontend tests compare dQ, dK, dV bitwise between runs in that mode only
 * (test/python/sdpa/fp16.py). That direct form is the one built here. Beyond the graph, engine
 * configurations whose numerical notes include CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC are skipped
 * for the backward (TEZGAH_CUDNN_ALLOW_NONDET=1 lifts that, for measurements only).
 * test_cuda_attention runs every backward twice and compares bits: on the H200 (cuDNN 9.14.0,
 * 2026-12-03) every case, GQA included, repeated its bits.
 *
 * Plans: one per (forward or backward, device, B, T, H, G, d, qs, kvs), built on first use
 * (heuristics mode A, then mode FALLBACK if A gave nothing usable; the first engine configuration
 * that finalizes; runtime-compiled engines may take ~1 s here; TEZGAH_VERBOSE=1 prints each
 * plan with its workspace and build time), cached for the process (64 entries; beyond that the
 * oldest plan's device is drained and the plan destroyed). A refusal is cached too (one stderr
 * note per refused shape, up to 8 notes, when cuDNN was asked for (TEZGAH_CUDA_ATTN=cudnn) or
 * TEZGAH_VERBOSE is set; by default refusals are silent). Workspace: the plan's, from tzc_scratch (the backward's D follows it, 256-byte
 * aligned). One cuDNN handle per device, bound to the backend's stream before each execute.
 *
 * Supported: bf16 act, training form (Tq == Tk, q_pos0 0), lse wanted, d a multiple of 8 up to
 * 256, qs/kvs multiples of 8, 16-byte aligned pointers, H a multiple of G, the stream not
 * capturing (plan builds allocate and compile). Not: fp32 act, decoding (KV cache, Tq ≠ Tk),
 * forwards without lse (sampling), dropout, padding/ragged batches.
 * Version rules of ours (tzc_cudnn_attn_allowed): cuDNN 9.10.0 / 9.10.1 forwards are refused
 * (the frontend refuses them for known bugs); backwards with T % 128 ≠ 0 on cuDNN ≤ 9.15.0 are
 * refused (the frontend adds a padding-mask workaround there for a backend fault; we do not
 * build it).
 * Checked without a GPU (2026-12-03, cuDNN 9.19, B 2 T 77 H 4 with G 4, 2, 1): every descriptor
 * here finalizes, and the operation graphs, as cuDNN's own API log (CUDNN_LOGLEVEL_DBG=3) prints
 * them at finalization, are identical to those NVIDIA's frontend builds for causal SDPA with
 * stats and for its deterministic backward (ops, order, data types, dims, strides, wiring; only
 * D's uid number differs). Heuristics, plans and execution need the GPU.
 * On the H200 (cuDNN 9.14.0, 2026-12-03; docs/PERF.md): the engines took every graph of
 * test_cuda_attention (T 9 to 1024 incl. 77 and 300, GQA 12/4 and 25/5, MQA, head_dim 128, the
 * strided qkv rows; backwards at T % 128 != 0 declined by our version rule), within the test's
 * bf16 tolerances, the backward bit-identical run to run; GQA's dK/dV carry the per-head bf16
 * rounding that keeps GQA off cuDNN by default (attention.cu's want_cudnn). */
#ifdef TZ_HAVE_CUDA
#include "kernels/attention/attention_cudnn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static long n_fwd, n_bwd; /* calls that ran through cuDNN (tzc_cudnn_attn_counts) */

void tzc_cudnn_attn_counts(long *fwd, long *bwd) {
  *fwd = __atomic_load_n(&n_fwd, __ATOMIC_RELAXED);
  *bwd = __atomic_load_n(&n_bwd, __ATOMIC_RELAXED);
}

int tzc_cudnn_attn_allowed(int version, int bwd, int T) {
  if (!bwd) return !(version >= 91000 && version <= 91001);
  return version > 91500 || T % 128 == 0;
}

#ifndef TZ_HAVE_CUDNN
/* Built without cuDNN's headers (CMake found no cudnn_graph.h): the path is compiled out. */
static int told_nohdr;
int tzc_cudnn_available(int *version, char *why, size_t cap) {
  *version = 0;
  snprintf(why, cap, "built without cuDNN headers (no cudnn_graph.h when configured)");
  return 0;
}
static int declined(void) { /* a note only when cuDNN was asked for: by default this is normal */
  const char *e = getenv("TEZGAH_CUDA_ATTN");
  if (e && !strcmp(e, "cudnn") && !__atomic_exchange_n(&told_nohdr, 1, __ATOMIC_RELAXED))
    fprintf(stderr, "tezgah: note: TEZGAH_CUDA_ATTN=cudnn: this build has no cuDNN support (no cudnn_graph.h "
                    "when configured); the built-in attention kernels run\n");
  return -1;
}
int tzc_cudnn_attn_fwd(tz_backend *be, void *out, float *lse, const void *q, const void *k, const void *v,
                       int B, int T, int H, int KVH, int hd, int qs, int kvs) {
  (void)be, (void)out, (void)lse, (void)q, (void)k, (void)v, (void)B, (void)T, (void)H, (void)KVH, (void)hd;
  (void)qs, (void)kvs;
  return declined();
}
int tzc_cudnn_attn_bwd(tz_backend *be, void *dq, void *dk, void *dv, const void *dout, const void *q,
                       const void *k, const void *v, const void *out, const float *lse, int B, int T, int H,
                       int KVH, int hd, int qs, int kvs) {
  (void)be, (void)dq, (void)dk, (void)dv, (void)dout, (void)q, (void)k, (void)v, (void)out, (void)lse;
  (void)B, (void)T, (void)H, (void)KVH, (void)hd, (void)qs, (void)kvs;
  return declined();
}
#else /* TZ_HAVE_CUDNN */
#include <cudnn_graph.h>
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* ---- the library, loaded on first use ---- */
#ifndef TZ_CUDA_LIBDIR
#define TZ_CUDA_LIBDIR "/usr/local/cuda/lib64"
#endif
#define DN_FUNCS(X)                                                                                            \
  X(GetVersion) X(GetErrorString) X(GetLastErrorString) X(Create) X(SetStream) X(BackendCreateDescriptor)     \
  X(BackendDestroyDescriptor) X(BackendSetAttribute) X(BackendGetAttribute) X(BackendFinalize) X(BackendExecute)
#define DN_MEMBER(name) __typeof__(&cudnn##name) name;
static struct {
  DN_FUNCS(DN_MEMBER)
} dn;
#undef DN_MEMBER
static pthread_once_t dn_once = PTHREAD_ONCE_INIT;
static int dn_ok, dn_version;
static char dn_why[512];

/* $TEZGAH_CUDNN_LIB when set (and only it); else libcudnn.so.9 through the loader's search, then
 * beside the toolkit this was built with, then /usr/local/cuda/lib64. libcudnn.so.9 loads its
 * sub-libraries (graph, engines, heuristics) from its own directory (RUNPATH $ORIGIN). */
static void dn_load(void) {
  const char *env = getenv("TEZGAH_CUDNN_LIB");
  const char *paths[] = {"libcudnn.so.9", TZ_CUDA_LIBDIR "/libcudnn.so.9", "/usr/local/cuda/lib64/libcudnn.so.9"};
  size_t np = sizeof paths / sizeof *paths;
  if (env && *env) paths[0] = env, np = 1;
  void *h = NULL;
  char first[400] = "";
  for (size_t i = 0; i < np && !h; i++) {
    h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
    if (!h && !first[0]) {
      const char *e = dlerror();
      snprintf(first, sizeof first, "%s", e ? e : paths[i]);
    }
  }
  if (!h) {
    snprintf(dn_why, sizeof dn_why, "libcudnn.so.9 not found (%s)", first);
    return;
  }
#define DN_SYM(name)                                                                                           \
  if (!(*(void **)&dn.name = dlsym(h, "cudnn" #name))) {                                                       \
    snprintf(dn_why, sizeof dn_why, "libcudnn.so.9 has no cudnn%s", #name);                                    \
    dlclose(h);                                                                                                \
    return;                                                                                                    \
  }
  DN_FUNCS(DN_SYM)
#undef DN_SYM
  dn_version = (int)dn.GetVersion();
  if (dn_version < 90000) {
    snprintf(dn_why, sizeof dn_why, "cuDNN %d is older than 9", dn_version);
    dlclose(h);
    return;
  }
  dn_ok = 1; /* the library stays loaded for the life of the process */
}

int tzc_cudnn_available(int *version, char *why, size_t cap) {
  pthread_once(&dn_once, dn_load);
  *version = dn_ok ? dn_version : 0;
  if (!dn_ok) snprintf(why, cap, "%s", dn_why);
  return dn_ok;
}

/* ---- graph building: every descriptor made is recorded, the first failure kept ---- */
#define GB_MAXD 128
#define GB_MAXOPS 40
typedef struct {
  cudnnBackendDescriptor_t d[GB_MAXD];
  int nd;
  cudnnBackendDescriptor_t ops[GB_MAXOPS];
  int nops;
  cudnnStatus_t st;
  char where[400];
  int64_t next_uid; /* virtual tensors' uids */
} gb;

static void gb_fail(gb *g, cudnnStatus_t st, const char *what) {
  if (g->st != CUDNN_STATUS_SUCCESS) return;
  g->st = st;
  char last[256] = "";
  dn.GetLastErrorString(last, sizeof last);
  snprintf(g->where, sizeof g->where, "%.120s: %.60s%s%.160s", what, dn.GetErrorString(st), last[0] ? ": " : "", last);
}
static cudnnBackendDescriptor_t gb_new(gb *g, cudnnBackendDescriptorType_t t, const char *what) {
  if (g->st != CUDNN_STATUS_SUCCESS) return NULL;
  if (g->nd == GB_MAXD) {
    gb_fail(g, CUDNN_STATUS_INTERNAL_ERROR, "descriptor table full");
    return NULL;
  }
  cudnnBackendDescriptor_t d = NULL;
  cudnnStatus_t st = dn.BackendCreateDescriptor(t, &d);
  if (st != CUDNN_STATUS_SUCCESS) {
    gb_fail(g, st, what);
    return NULL;
  }
  g->d[g->nd++] = d;
  return d;
}
static void gb_set(gb *g, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t ty,
                   int64_t n, const void *v, const char *what) {
  if (g->st != CUDNN_STATUS_SUCCESS) return;
  cudnnStatus_t st = dn.BackendSetAttribute(d, a, ty, n, v);
  if (st != CUDNN_STATUS_SUCCESS) gb_fail(g, st, what);
}
static void gb_fin(gb *g, cudnnBackendDescriptor_t d, const char *what) {
  if (g->st != CUDNN_STATUS_SUCCESS) return;
  cudnnStatus_t st = dn.BackendFinalize(d);
  if (st != CUDNN_STATUS_SUCCESS) gb_fail(g, st, what);
}
static void gb_free(gb *g) {
  for (int i = g->nd - 1; i >= 0; i--) dn.BackendDestroyDescriptor(g->d[i]);
  g->nd = g->nops = 0;
}

/* A tensor: 4 dims (strides in elements), 16-byte alignment (the frontend's default). */
static cudnnBackendDescriptor_t gb_tensor(gb *g, int64_t uid, cudnnDataType_t dt, const int64_t dims[4],
                                          const int64_t strides[4], bool virt, bool byval) {
  cudnnBackendDescriptor_t t = gb_new(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor");
  int64_t align = 16;
  gb_set(g, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, "tensor data type");
  gb_set(g, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims, "tensor dims");
  gb_set(g, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides, "tensor strides");
  gb_set(g, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor uid");
  gb_set(g, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, "tensor alignment");
  if (virt) gb_set(g, t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt, "tensor virtual");
  if (byval) gb_set(g, t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &byval, "tensor by value");
  gb_fin(g, t, "tensor finalize");
  return t;
}
static cudnnBackendDescriptor_t gb_virt(gb *g, cudnnDataType_t dt, const int64_t dims[4], const int64_t strides[4]) {
  return gb_tensor(g, g->next_uid++, dt, dims, strides, true, false);
}
static void gb_op(gb *g, cudnnBackendDescriptor_t op) {
  if (g->st != CUDNN_STATUS_SUCCESS) return;
  if (g->nops == GB_MAXOPS) {
    gb_fail(g, CUDNN_STATUS_INTERNAL_ERROR, "operation table full");
    return;
  }
  g->ops[g->nops++] = op;
}
/* y = mode(x[, b[, t]]) with math precision prec; axis ≥ 0 for GEN_INDEX. */
static void gb_pw(gb *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec, cudnnBackendDescriptor_t x,
                  cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t t, cudnnBackendDescriptor_t y, int64_t axis) {
  cudnnBackendDescriptor_t pd = gb_new(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise");
  gb_set(g, pd, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "pointwise mode");
  gb_set(g, pd, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, "pointwise precision");
  if (axis >= 0) gb_set(g, pd, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, "pointwise axis");
  gb_fin(g, pd, "pointwise finalize");
  cudnnBackendDescriptor_t op = gb_new(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise op");
  float one = 1.0f;
  gb_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pd, "pw desc");
  gb_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "pw x");
  if (b) gb_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b, "pw b");
  if (t) gb_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t, "pw t");
  gb_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "pw y");
  gb_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one, "pw alpha1");
  gb_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one, "pw alpha2");
  gb_fin(g, op, "pointwise op finalize");
  gb_op(g, op);
}
/* c = a·b (batched over dims 0, 1; b broadcast over query heads for GQA), fp32 accumulation. */
static void gb_mm(gb *g, cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c) {
  cudnnBackendDescriptor_t md = gb_new(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul");
  cudnnDataType_t f = CUDNN_DATA_FLOAT;
  gb_set(g, md, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f, "matmul comp type");
  gb_fin(g, md, "matmul finalize");
  cudnnBackendDescriptor_t op = gb_new(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul op");
  gb_set(g, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a, "matmul a");
  gb_set(g, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b, "matmul b");
  gb_set(g, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c, "matmul c");
  gb_set(g, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &md, "matmul desc");
  gb_fin(g, op, "matmul op finalize");
  gb_op(g, op);
}
/* y = reduce(x) over the dims where y has extent 1 (or fewer heads: GQA), fp32. */
static void gb_red(gb *g, cudnnReduceTensorOp_t r, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
  cudnnBackendDescriptor_t rd = gb_new(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction");
  cudnnDataType_t f = CUDNN_DATA_FLOAT;
  gb_set(g, rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f, "reduction comp type");
  gb_set(g, rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &r, "reduction operator");
  gb_fin(g, rd, "reduction finalize");
  cudnnBackendDescriptor_t op = gb_new(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "reduction op");
  gb_set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "reduction x");
  gb_set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "reduction y");
  gb_set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd, "reduction desc");
  gb_fin(g, op, "reduction op finalize");
  gb_op(g, op);
}
/* y = x seen through y's dims and strides (a transposed view: no data moves). */
static void gb_reshape(gb *g, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
  cudnnBackendDescriptor_t op = gb_new(g, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, "reshape op");
  gb_set(g, op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "reshape x");
  gb_set(g, op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "reshape y");
  gb_fin(g, op, "reshape op finalize");
  gb_op(g, op);
}

enum { U_Q = 1, U_KT, U_V, U_O, U_STATS, U_SCALE, U_FILL, U_DO, U_DQ, U_DK, U_DV, U_DSUM, U_ONE, U_VIRT = 100 };

typedef struct {
  int64_t B, T, H, G, d, qs, kvs;
} shape;

/* The causal mask on a score tensor s (virtual fp32 [B,H,T,T]): s where row ≥ column, else fill. */
static cudnnBackendDescriptor_t gb_causal(gb *g, cudnnBackendDescriptor_t s, cudnnBackendDescriptor_t fill,
                                          const int64_t pd[4], const int64_t ps[4]) {
  cudnnBackendDescriptor_t r = gb_virt(g, CUDNN_DATA_INT32, pd, ps), c = gb_virt(g, CUDNN_DATA_INT32, pd, ps);
  cudnnBackendDescriptor_t m = gb_virt(g, CUDNN_DATA_BOOLEAN, pd, ps), y = gb_virt(g, CUDNN_DATA_FLOAT, pd, ps);
  gb_pw(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, s, NULL, NULL, r, 2);
  gb_pw(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, s, NULL, NULL, c, 3);
  gb_pw(g, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, r, c, NULL, m, -1);
  gb_pw(g, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, s, fill, m, y, -1);
  return y;
}

/* The forward graph's operations (the header's list). */
static void build_fwd(gb *g, const shape *s) {
  const int64_t B = s->B, T = s->T, H = s->H, G = s->G, d = s->d, qs = s->qs, kvs = s->kvs;
  const int64_t qd[4] = {B, H, T, d}, qst[4] = {T * qs, d, qs, 1};
  const int64_t ktd[4] = {B, G, d, T}, ktst[4] = {T * kvs, d, 1, kvs};
  const int64_t vd[4] = {B, G, T, d}, vst[4] = {T * kvs, d, kvs, 1};
  const int64_t od[4] = {B, H, T, d}, ost[4] = {T * H * d, d, H * d, 1};
  const int64_t sd[4] = {B, H, T, 1}, sst[4] = {H * T, T, 1, 1};
  const int64_t pd[4] = {B, H, T, T}, ps[4] = {H * T * T, T * T, T, 1};
  const int64_t one[4] = {1, 1, 1, 1};
  cudnnBackendDescriptor_t Q = gb_tensor(g, U_Q, CUDNN_DATA_BFLOAT16, qd, qst, false, false);
  cudnnBackendDescriptor_t KT = gb_tensor(g, U_KT, CUDNN_DATA_BFLOAT16, ktd, ktst, false, false);
  cudnnBackendDescriptor_t V = gb_tensor(g, U_V, CUDNN_DATA_BFLOAT16, vd, vst, false, false);
  cudnnBackendDescriptor_t O = gb_tensor(g, U_O, CUDNN_DATA_BFLOAT16, od, ost, false, false);
  cudnnBackendDescriptor_t St = gb_tensor(g, U_STATS, CUDNN_DATA_FLOAT, sd, sst, false, false);
  cudnnBackendDescriptor_t Sc = gb_tensor(g, U_SCALE, CUDNN_DATA_FLOAT, one, one, false, true);
  cudnnBackendDescriptor_t Fi = gb_tensor(g, U_FILL, CUDNN_DATA_FLOAT, one, one, false, true);
  const cudnnDataType_t F = CUDNN_DATA_FLOAT;
  cudnnBackendDescriptor_t S = gb_virt(g, F, pd, ps), S1 = gb_virt(g, F, pd, ps);
  gb_mm(g, Q, KT, S);
  gb_pw(g, CUDNN_POINTWISE_MUL, F, S, Sc, NULL, S1, -1);
  cudnnBackendDescriptor_t S2 = gb_causal(g, S1, Fi, pd, ps);
  cudnnBackendDescriptor_t M = gb_virt(g, F, sd, sst), S3 = gb_virt(g, F, pd, ps), E = gb_virt(g, F, pd, ps);
  cudnnBackendDescriptor_t L = gb_virt(g, F, sd, sst), LL = gb_virt(g, F, sd, sst);
  cudnnBackendDescriptor_t P = gb_virt(g, CUDNN_DATA_BFLOAT16, pd, ps);
  gb_red(g, CUDNN_REDUCE_TENSOR_MAX, S2, M);
  gb_pw(g, CUDNN_POINTWISE_SUB, F, S2, M, NULL, S3, -1);
  gb_pw(g, CUDNN_POINTWISE_EXP, F, S3, NULL, NULL, E, -1);
  gb_red(g, CUDNN_REDUCE_TENSOR_ADD, E, L);
  gb_pw(g, CUDNN_POINTWISE_LOG, F, L, NULL, NULL, LL, -1);
  gb_pw(g, CUDNN_POINTWISE_ADD, F, M, LL, NULL, St, -1);
  gb_pw(g, CUDNN_POINTWISE_DIV, F, E, L, NULL, P, -1);
  gb_mm(g, P, V, O);
}

/* The backward graph's operations (the header's list; dQ written directly: deterministic form). */
static void build_bwd(gb *g, const shape *s) {
  const int64_t B = s->B, T = s->T, H = s->H, G = s->G, d = s->d, qs = s->qs, kvs = s->kvs;
  const int64_t qd[4] = {B, H, T, d}, qst[4] = {T * qs, d, qs, 1};
  const int64_t ktd[4] = {B, G, d, T}, ktst[4] = {T * kvs, d, 1, kvs};
  const int64_t kd[4] = {B, G, T, d}, kst[4] = {T * kvs, d, kvs, 1};
  const int64_t od[4] = {B, H, T, d}, ost[4] = {T * H * d, d, H * d, 1};
  const int64_t sd[4] = {B, H, T, 1}, sst[4] = {H * T, T, 1, 1};
  const int64_t pd[4] = {B, H, T, T}, ps[4] = {H * T * T, T * T, T, 1}, pts[4] = {H * T * T, T * T, 1, T};
  const int64_t fd[4] = {B, H, T, d}, fst[4] = {H * T * d, T * d, d, 1}; /* GQA per-head dK / dV */
  const int64_t one[4] = {1, 1, 1, 1};
  const cudnnDataType_t F = CUDNN_DATA_FLOAT, BF = CUDNN_DATA_BFLOAT16;
  cudnnBackendDescriptor_t Q = gb_tensor(g, U_Q, BF, qd, qst, false, false);
  cudnnBackendDescriptor_t KT = gb_tensor(g, U_KT, BF, ktd, ktst, false, false);
  cudnnBackendDescriptor_t VT = gb_tensor(g, U_V, BF, ktd, ktst, false, false); /* v's strides = k's */
  cudnnBackendDescriptor_t O = gb_tensor(g, U_O, BF, od, ost, false, false);
  cudnnBackendDescriptor_t dO = gb_tensor(g, U_DO, BF, od, ost, false, false);
  cudnnBackendDescriptor_t St = gb_tensor(g, U_STATS, F, sd, sst, false, false);
  cudnnBackendDescriptor_t dQ = gb_tensor(g, U_DQ, BF, qd, qst, false, false);
  cudnnBackendDescriptor_t dK = gb_tensor(g, U_DK, BF, kd, kst, false, false);
  cudnnBackendDescriptor_t dV = gb_tensor(g, U_DV, BF, kd, kst, false, false);
  cudnnBackendDescriptor_t Ds = gb_tensor(g, U_DSUM, F, sd, sst, false, false);
  cudnnBackendDescriptor_t Sc = gb_tensor(g, U_SCALE, F, one, one, false, true);
  cudnnBackendDescriptor_t Fi = gb_tensor(g, U_FILL, F, one, one, false, true);
  cudnnBackendDescriptor_t One = gb_tensor(g, U_ONE, F, one, one, false, true);
  /* D = Σ_d dO∘O (the product's virtual strides as the frontend gives them) */
  const int64_t xst[4] = {H * T * d, T * d, H * d, 1};
  cudnnBackendDescriptor_t X = gb_virt(g, F, od, xst), Dr = gb_virt(g, F, sd, sst);
  gb_pw(g, CUDNN_POINTWISE_MUL, F, dO, O, NULL, X, -1);
  gb_red(g, CUDNN_REDUCE_TENSOR_ADD, X, Dr);
  gb_pw(g, CUDNN_POINTWISE_MUL, F, Dr, One, NULL, Ds, -1);
  /* E = exp(causal(S·scale − Stats)) = P */
  cudnnBackendDescriptor_t S = gb_virt(g, F, pd, ps), S1 = gb_virt(g, F, pd, ps), S2 = gb_virt(g, F, pd, ps);
  gb_mm(g, Q, KT, S);
  gb_pw(g, CUDNN_POINTWISE_MUL, F, S, Sc, NULL, S1, -1);
  gb_pw(g, CUDNN_POINTWISE_SUB, F, S1, St, NULL, S2, -1);
  cudnnBackendDescriptor_t S3 = gb_causal(g, S2, Fi, pd, ps);
  cudnnBackendDescriptor_t E = gb_virt(g, F, pd, ps);
  gb_pw(g, CUDNN_POINTWISE_EXP, F, S3, NULL, NULL, E, -1);
  /* dV = Pᵀ·dO */
  cudnnBackendDescriptor_t PT = gb_virt(g, BF, pd, pts);
  gb_reshape(g, E, PT);
  if (H == G) {
    gb_mm(g, PT, dO, dV);
  } else {
    cudnnBackendDescriptor_t dVf = gb_virt(g, BF, fd, fst);
    gb_mm(g, PT, dO, dVf);
    gb_red(g, CUDNN_REDUCE_TENSOR_ADD, dVf, dV);
  }
  /* dS = (dO·Vᵀ − D)∘P·scale */
  cudnnBackendDescriptor_t dP = gb_virt(g, F, pd, ps), dP1 = gb_virt(g, F, pd, ps), dP2 = gb_virt(g, F, pd, ps);
  cudnnBackendDescriptor_t dS = gb_virt(g, F, pd, ps);
  gb_mm(g, dO, VT, dP);
  gb_pw(g, CUDNN_POINTWISE_SUB, F, dP, Ds, NULL, dP1, -1);
  gb_pw(g, CUDNN_POINTWISE_MUL, F, dP1, E, NULL, dP2, -1);
  gb_pw(g, CUDNN_POINTWISE_MUL, F, dP2, Sc, NULL, dS, -1);
  /* dK = dSᵀ·Q */
  cudnnBackendDescriptor_t dST = gb_virt(g, BF, pd, pts);
  gb_reshape(g, dS, dST);
  if (H == G) {
    gb_mm(g, dST, Q, dK);
  } else {
    cudnnBackendDescriptor_t dKf = gb_virt(g, BF, fd, fst);
    gb_mm(g, dST, Q, dKf);
    gb_red(g, CUDNN_REDUCE_TENSOR_ADD, dKf, dK);
  }
  /* dQ = dS·K (K: Kᵀ's strides swapped back; a virtual fp32 view, as the frontend types it),
   * straight into dQ */
  cudnnBackendDescriptor_t K = gb_virt(g, F, kd, kst);
  gb_reshape(g, KT, K);
  gb_mm(g, dS, K, dQ);
}

/* ---- plans ---- */
typedef struct {
  int used, bwd, dev, ok;
  shape s;
  unsigned long age;
  gb *g; /* every descriptor of the graph, kept alive with the plan */
  cudnnBackendDescriptor_t plan;
  int64_t ws; /* workspace bytes */
} plan_ent;

#define NPLANS 64
#define NDEV 16
static plan_ent plans[NPLANS];
static unsigned long plan_clock;
static cudnnHandle_t handles[NDEV];
static int create_failed[NDEV]; /* cudnnCreate failed on that device: decline without retrying */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int notes; /* refusal notes printed (at most 8) */

/* Whether refusals are worth a note: the user asked for cuDNN (TEZGAH_CUDA_ATTN=cudnn) or for
 * detail (TEZGAH_VERBOSE); by default (cuDNN tried first on sm_90, attention.cu) a machine
 * without cuDNN, or a shape it declines, just runs the built-in kernels quietly. */
static int loud(tz_backend *be) {
  const char *e = getenv("TEZGAH_CUDA_ATTN");
  return (e && !strcmp(e, "cudnn")) || tzc(be)->verbose;
}

static void note(tz_backend *be, const char *fmt, const char *a, const char *b) {
  if (notes >= 8 || !loud(be)) return;
  notes++;
  fprintf(stderr, "tezgah: note: cuDNN attention: ");
  fprintf(stderr, fmt, a, b);
  fprintf(stderr, "; the built-in attention kernels run%s\n", notes == 8 ? " (further notes suppressed)" : "");
}

static int same(const shape *a, const shape *b) { return memcmp(a, b, sizeof *a) == 0; }

/* TEZGAH_CUDNN_ALLOW_NONDET=1 (measurements only, read when a plan is built): the backward may
 * take engines noted NONDETERMINISTIC (the default skips them: bf16 runs must be bit-identical). */
static int allow_nondet(void) {
  const char *e = getenv("TEZGAH_CUDNN_ALLOW_NONDET");
  return e && !strcmp(e, "1");
}

/* Engine configurations of heuristics `mode` for graph og, then the first whose plan finalizes
 * (for the backward: skipping nondeterministic ones). 1 with e->plan / e->ws set; 0 otherwise,
 * with what happened appended to tried (or g->st set on an API failure). */
static int try_heur(gb *g, plan_ent *e, cudnnHandle_t h, cudnnBackendDescriptor_t og, cudnnBackendHeurMode_t mode,
                    char *tried, size_t cap) {
  cudnnBackendDescriptor_t hd = gb_new(g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "heuristics");
  gb_set(g, hd, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &og, "heur graph");
  gb_set(g, hd, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heur mode");
  gb_fin(g, hd, "heuristics finalize");
  if (g->st != CUDNN_STATUS_SUCCESS) return 0;
  int64_t n = 0;
  cudnnStatus_t st = dn.BackendGetAttribute(hd, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL);
  if (st != CUDNN_STATUS_SUCCESS) {
    gb_fail(g, st, "heuristics count");
    return 0;
  }
  snprintf(tried + strlen(tried), cap - strlen(tried), " [mode %d: %lld configs", (int)mode, (long long)n);
  if (n > 12) n = 12;
  cudnnBackendDescriptor_t cfg[12];
  for (int64_t i = 0; i < n; i++) cfg[i] = gb_new(g, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config");
  if (g->st != CUDNN_STATUS_SUCCESS) return 0;
  int64_t got = 0;
  if (n > 0) {
    st = dn.BackendGetAttribute(hd, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &got, cfg);
    if (st != CUDNN_STATUS_SUCCESS) {
      gb_fail(g, st, "heuristics results");
      return 0;
    }
  }
  for (int64_t i = 0; i < got && i < n; i++) {
    if (e->bwd && !allow_nondet()) { /* deterministic engines only */
      cudnnBackendDescriptor_t eng = NULL;
      if (dn.BackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) != CUDNN_STATUS_SUCCESS) continue;
      int64_t ne = 0, nn = 0;
      cudnnBackendNumericalNote_t nt[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
      int nondet = 1; /* unknown counts as nondeterministic */
      if (dn.BackendGetAttribute(cfg[i], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &ne, &eng) ==
              CUDNN_STATUS_SUCCESS &&
          dn.BackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                 CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &nn, nt) == CUDNN_STATUS_SUCCESS) {
        nondet = 0;
        for (int64_t j = 0; j < nn && j < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; j++)
          if (nt[j] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) nondet = 1;
      }
      dn.BackendDestroyDescriptor(eng);
      if (nondet) {
        strncat(tried, " nondet", cap - strlen(tried) - 1);
        continue;
      }
    }
    cudnnBackendDescriptor_t plan = NULL;
    if (dn.BackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) != CUDNN_STATUS_SUCCESS) continue;
    int64_t ws = 0, nws = 0;
    if (dn.BackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h) ==
            CUDNN_STATUS_SUCCESS &&
        dn.BackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                               &cfg[i]) == CUDNN_STATUS_SUCCESS &&
        dn.BackendFinalize(plan) == CUDNN_STATUS_SUCCESS &&
        dn.BackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &nws, &ws) ==
            CUDNN_STATUS_SUCCESS) {
      e->plan = plan;
      e->ws = ws;
      return 1;
    }
    dn.BackendDestroyDescriptor(plan);
    strncat(tried, " refused", cap - strlen(tried) - 1);
  }
  strncat(tried, "]", cap - strlen(tried) - 1);
  return 0;
}

/* The operation graph, then heuristics mode A (cuDNN's default choice), then its FALLBACK mode
 * when A gave nothing usable. Fills e->plan / e->ws or leaves g->st set. */
static void make_plan(gb *g, plan_ent *e, cudnnHandle_t h) {
  cudnnBackendDescriptor_t og = gb_new(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
  gb_set(g, og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h, "graph handle");
  gb_set(g, og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g->nops, g->ops, "graph ops");
  gb_fin(g, og, "operation graph finalize (graph not supported)");
  char tried[160] = "";
  const cudnnBackendHeurMode_t modes[2] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
  for (int m = 0; m < 2 && g->st == CUDNN_STATUS_SUCCESS; m++)
    if (try_heur(g, e, h, og, modes[m], tried, sizeof tried)) return;
  char msg[224];
  snprintf(msg, sizeof msg, "no engine configuration finalized:%.180s", tried);
  gb_fail(g, CUDNN_STATUS_NOT_SUPPORTED, msg);
}

static void ent_free(plan_ent *e) {
  if (e->plan) dn.BackendDestroyDescriptor(e->plan);
  if (e->g) gb_free(e->g), free(e->g);
  memset(e, 0, sizeof *e);
}

/* The cached plan of (bwd, device, shape), built on first use; NULL when refused (noted once).
 * Called with mu held. */
static plan_ent *get_plan(tz_backend *be, int bwd, const shape *s) {
  tzc_ctx *c = tzc(be);
  plan_ent *free_e = NULL, *oldest = NULL;
  for (int i = 0; i < NPLANS; i++) {
    plan_ent *e = &plans[i];
    if (e->used && e->bwd == bwd && e->dev == c->device && same(&e->s, s)) {
      e->age = ++plan_clock;
      return e->ok ? e : NULL;
    }
    if (!e->used && !free_e) free_e = e;
    if (e->used && (!oldest || e->age < oldest->age)) oldest = e;
  }
  if (c->device < 0 || c->device >= NDEV || create_failed[c->device]) return NULL;
  if (!free_e) { /* evict: its kernels may still be queued, on any stream of its device */
    TZC_CHECK(cudaSetDevice(oldest->dev));
    TZC_CHECK(cudaDeviceSynchronize());
    TZC_CHECK(cudaSetDevice(c->device));
    ent_free(oldest);
    free_e = oldest;
  }
  if (!handles[c->device]) {
    TZC_CHECK(cudaSetDevice(c->device)); /* cudnnCreate binds the current device */
    cudnnStatus_t st = dn.Create(&handles[c->device]);
    if (st != CUDNN_STATUS_SUCCESS) { /* kept: every later call declines at once */
      handles[c->device] = NULL;
      create_failed[c->device] = 1;
      note(be, "cudnnCreate failed: %s%s", dn.GetErrorString(st), "");
      return NULL;
    }
  }
  plan_ent *e = free_e;
  memset(e, 0, sizeof *e);
  e->used = 1, e->bwd = bwd, e->dev = c->device, e->s = *s, e->age = ++plan_clock;
  e->g = calloc(1, sizeof(gb));
  if (!e->g) tz_panic(__FILE__, __LINE__, "out of host memory");
  gb *g = e->g;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  g->st = CUDNN_STATUS_SUCCESS;
  g->next_uid = U_VIRT;
  if (bwd)
    build_bwd(g, s);
  else
    build_fwd(g, s);
  if (g->st == CUDNN_STATUS_SUCCESS) make_plan(g, e, handles[c->device]);
  if (g->st != CUDNN_STATUS_SUCCESS || !e->plan) {
    char what[96];
    snprintf(what, sizeof what, "%s B %lld T %lld heads %lld/%lld head_dim %lld", bwd ? "backward" : "forward",
             (long long)s->B, (long long)s->T, (long long)s->H, (long long)s->G, (long long)s->d);
    note(be, "cuDNN refused the %s graph (%s)", what, g->where[0] ? g->where : "no plan");
    gb_free(g); /* keep the refusal, not the descriptors */
    return NULL;
  }
  e->ok = 1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (c->verbose) /* TEZGAH_VERBOSE: which calls went to cuDNN, and what the plan cost */
    fprintf(stderr, "cuda: cuDNN %d attention %s plan, B %lld T %lld heads %lld/%lld head_dim %lld: workspace %.1f MiB, "
            "built in %.0f ms\n", dn_version, bwd ? "backward" : "forward", (long long)s->B, (long long)s->T,
            (long long)s->H, (long long)s->G, (long long)s->d, (double)e->ws / (1 << 20),
            (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) * 1e-6);
  return e;
}

static int al16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* Common checks; fills s. 0 when this call may go to cuDNN. */
static int prepare(tz_backend *be, int bwd, shape *s, int B, int T, int H, int KVH, int hd, int qs, int kvs,
                   const void *const *ptrs, int np) {
  tzc_ctx *c = tzc(be);
  if (c->act != TZ_BF16 || B <= 0 || T <= 0 || H <= 0 || KVH <= 0 || H % KVH || hd % 8 || hd > 256 || qs % 8 ||
      kvs % 8)
    return -1; /* before loading the library: fp32 runs under the switch need none of it */
  for (int i = 0; i < np; i++)
    if (!ptrs[i] || !al16(ptrs[i])) return -1;
  int version;
  char why[512];
  if (!tzc_cudnn_available(&version, why, sizeof why)) {
    static int told;
    if (loud(be) && !__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
      fprintf(stderr, "tezgah: note: cuDNN attention: %s; the built-in attention kernels run\n", why);
    return -1;
  }
  if (!tzc_cudnn_attn_allowed(version, bwd, T)) {
    static int told[2];
    if (loud(be) && !__atomic_exchange_n(&told[bwd], 1, __ATOMIC_RELAXED))
      fprintf(stderr, "tezgah: note: cuDNN attention: cuDNN %d: the %s is not used (%s)\n", version,
              bwd ? "backward" : "forward",
              bwd ? "T not a multiple of 128 on cuDNN <= 9.15.0" : "cuDNN 9.10.0/9.10.1 forward faults");
    return -1;
  }
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(c->stream, &cs) != cudaSuccess || cs != cudaStreamCaptureStatusNone) {
    cudaGetLastError();
    return -1;
  }
  *s = (shape){B, T, H, KVH, hd, qs, kvs};
  return 0;
}

/* Bind the stream, build the variant pack, execute. 0 on success. */
static int execute(tz_backend *be, plan_ent *e, int n, const int64_t *uids, void *const *ptrs, void *ws) {
  tzc_ctx *c = tzc(be);
  cudnnHandle_t h = handles[c->device];
  cudnnStatus_t st = dn.SetStream(h, c->stream);
  if (st != CUDNN_STATUS_SUCCESS) {
    note(be, "cudnnSetStream failed: %s%s", dn.GetErrorString(st), "");
    return -1;
  }
  cudnnBackendDescriptor_t vp = NULL;
  if (dn.BackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp) != CUDNN_STATUS_SUCCESS) return -1;
  if ((st = dn.BackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids)) ==
          CUDNN_STATUS_SUCCESS &&
      (st = dn.BackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs)) ==
          CUDNN_STATUS_SUCCESS &&
      (st = dn.BackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws)) ==
          CUDNN_STATUS_SUCCESS &&
      (st = dn.BackendFinalize(vp)) == CUDNN_STATUS_SUCCESS)
    st = dn.BackendExecute(h, e->plan, vp);
  dn.BackendDestroyDescriptor(vp);
  if (st != CUDNN_STATUS_SUCCESS) {
    char last[256] = "";
    dn.GetLastErrorString(last, sizeof last);
    note(be, "cudnnBackendExecute failed: %s (%.200s)", dn.GetErrorString(st), last);
    return -1;
  }
  /* libcudnn links its own CUDA runtime statically: its launch errors come back as the execute
   * status above, or as a sticky device error at our next check; this only catches ours */
  TZC_LAUNCHED();
  return 0;
}

/* bytes as MiB text, for note()'s string arguments (one static buffer: notes print under mu) */
static const char *mib(int64_t bytes) {
  static char b[32];
  snprintf(b, sizeof b, "%.1f", (double)bytes / (1 << 20));
  return b;
}

/* The mask fill: −inf from cuDNN 9.10 on, else −FLT_MAX (the frontend's choice per version). */
static float mask_fill(void) { return dn_version >= 91000 ? -INFINITY : -FLT_MAX; }

int tzc_cudnn_attn_fwd(tz_backend *be, void *out, float *lse, const void *q, const void *k, const void *v,
                       int B, int T, int H, int KVH, int hd, int qs, int kvs) {
  shape s;
  const void *ptrs[5] = {out, lse, q, k, v};
  if (prepare(be, 0, &s, B, T, H, KVH, hd, qs, kvs, ptrs, 5)) return -1;
  pthread_mutex_lock(&mu);
  plan_ent *e = get_plan(be, 0, &s);
  int rc = -1;
  if (e && e->ws > 0 && !tzc_scratch_fits(be, (size_t)e->ws)) {
    note(be, "the forward's workspace (%s MiB) does not fit in device memory%s", mib(e->ws), "");
    e = NULL;
  }
  if (e) {
    void *ws = e->ws > 0 ? tzc_scratch(be, (size_t)e->ws) : NULL;
    float scale = 1.0f / sqrtf((float)hd), fill = mask_fill();
    const int64_t uids[7] = {U_Q, U_KT, U_V, U_O, U_STATS, U_SCALE, U_FILL};
    void *const dp[7] = {(void *)q, (void *)k, (void *)v, out, lse, &scale, &fill};
    rc = execute(be, e, 7, uids, dp, ws);
  }
  pthread_mutex_unlock(&mu);
  if (rc == 0) __atomic_add_fetch(&n_fwd, 1, __ATOMIC_RELAXED);
  return rc;
}

int tzc_cudnn_attn_bwd(tz_backend *be, void *dq, void *dk, void *dv, const void *dout, const void *q,
                       const void *k, const void *v, const void *out, const float *lse, int B, int T, int H,
                       int KVH, int hd, int qs, int kvs) {
  shape s;
  const void *ptrs[9] = {dq, dk, dv, dout, q, k, v, out, lse};
  if (prepare(be, 1, &s, B, T, H, KVH, hd, qs, kvs, ptrs, 9)) return -1;
  pthread_mutex_lock(&mu);
  plan_ent *e = get_plan(be, 1, &s);
  int rc = -1;
  /* scratch: the plan's workspace (B·H·T² bf16 at head_dim 64 on the H200: 512 MiB at gpt2-350m
   * B16 T1024), then D (B·H·T fp32), 256-byte aligned; declined when that cannot grow safely */
  const size_t ws_bytes = e ? ((size_t)(e->ws > 0 ? e->ws : 0) + 255) & ~(size_t)255 : 0;
  const size_t d_bytes = (size_t)B * H * T * sizeof(float);
  if (e && !tzc_scratch_fits(be, ws_bytes + d_bytes)) {
    note(be, "the backward's workspace (%s MiB) does not fit in device memory%s", mib((int64_t)(ws_bytes + d_bytes)), "");
    e = NULL;
  }
  if (e) {
    char *scr = tzc_scratch(be, ws_bytes + d_bytes);
    float scale = 1.0f / sqrtf((float)hd), fill = mask_fill(), one = 1.0f;
    const int64_t uids[13] = {U_Q, U_KT, U_V, U_O, U_DO, U_STATS, U_DQ, U_DK, U_DV, U_DSUM, U_SCALE, U_FILL, U_ONE};
    void *const dp[13] = {(void *)q,   (void *)k, (void *)v, (void *)out, (void *)dout, (void *)lse, dq,
                          dk,          dv,        scr + ws_bytes, &scale, &fill, &one};
    rc = execute(be, e, 13, uids, dp, e->ws > 0 ? scr : NULL);
  }
  pthread_mutex_unlock(&mu);
  if (rc == 0) __atomic_add_fetch(&n_bwd, 1, __ATOMIC_RELAXED);
  return rc;
}
#endif /* TZ_HAVE_CUDNN */
#else  /* !TZ_HAVE_CUDA: nothing here (the CUDA backend is not built) */
typedef int tz_attention_cudnn_unused;
#endif
