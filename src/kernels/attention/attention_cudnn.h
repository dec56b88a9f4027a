/* Causal attention through cuDNN's fused flash-attention graphs (attention_cudnn.c): the default
 * on sm_90 without GQA, or anywhere with TEZGAH_CUDA_ATTN=cudnn (attention.cu's want_cudnn
 * decides when to ask). Internal to the CUDA
 * backend; included from C (attention_cudnn.c, tests and benchmarks of CUDA builds) and from CUDA
 * C++ (attention.cu). Layouts and dtypes are attention.cu's training form:
 *   q          bf16, row (b·T + t) of qs elements, head h at column h·hd
 *   k, v       bf16, row (b·T + t) of kvs elements, kv head g at column g·hd (q, k, v usually
 *              views of one fused qkv row: qs = kvs = (H + 2·KVH)·hd)
 *   out, dout  bf16 [B·T, H·hd]
 *   lse        fp32 [B, H, T], natural log of Σ_j exp(s_j), s = q·k·(1/√hd) (cuDNN's softmax
 *              "stats" are that same quantity: attention_cudnn.c's header)
 *   dq, dk, dv bf16, written (=) with the strides of q, k, v
 * Every pointer 16-byte aligned, qs and kvs multiples of 8 (tzc_cudnn_* check it and decline
 * otherwise). */
#ifndef TZ_ATTENTION_CUDNN_H
#define TZ_ATTENTION_CUDNN_H
#include "backend/cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Forward (causal, Tq == Tk == T, q_pos0 0, lse required). 0 when cuDNN ran it on the backend's
 * stream; -1 when the caller must run its own kernels: fp32 activations, head_dim not a multiple
 * of 8 or above 256, H not a multiple of KVH, unaligned pointers or strides (the rules above),
 * libcudnn.so.9 missing or older than 9, a cuDNN version with known faults, cudnnCreate failed,
 * the graph or every engine refused, the stream capturing, or a workspace that cannot grow
 * (tzc_scratch_fits). The first refusal of each kind prints one note to stderr when cuDNN was
 * asked for (TEZGAH_CUDA_ATTN=cudnn) or TEZGAH_VERBOSE is set. A refusal never aborts; a CUDA
 * error (a lost device) or host out-of-memory is fatal, as everywhere in the backend. */
int tzc_cudnn_attn_fwd(tz_backend *be, void *out, float *lse, const void *q, const void *k, const void *v,
                       int B, int T, int H, int KVH, int hd, int qs, int kvs);

/* Backward: dq, dk, dv from q, k, v, out, dout, lse; deterministic engines only (attention_cudnn.c's
 * header). Returns as tzc_cudnn_attn_fwd. Uses the backend's kernel scratch (tzc_scratch). */
int tzc_cudnn_attn_bwd(tz_backend *be, void *dq, void *dk, void *dv, const void *dout, const void *q,
                       const void *k, const void *v, const void *out, const float *lse, int B, int T, int H,
                       int KVH, int hd, int qs, int kvs);

/* Whether cuDNN can be used at all: 1 with its version (e.g. 91900) in *version, or 0 with the
 * reason in why (cap bytes; "built without cuDNN headers ...", "libcudnn.so.9 not found
 * (<dlerror>)", "cuDNN 8907 is older than 9", ...).
 * Loads the library on first call (thread-safe). */
int tzc_cudnn_available(int *version, char *why, size_t cap);

/* Whether this file's own rules (not cuDNN's) let a backward (bwd 1) or forward (0) of sequence
 * length T run on cuDNN `version`: the forward is refused on 9.10.0 / 9.10.1, the backward on
 * versions up to 9.15.0 when T is not a multiple of 128 (attention_cudnn.c's header says why).
 * Tests use it to tell a declined shape from a path that silently fell back. */
int tzc_cudnn_attn_allowed(int version, int bwd, int T);

/* Calls that ran through cuDNN since the process started: forwards in fwd[0], backwards in
 * bwd[0] (tests check that the cuDNN path really ran). */
void tzc_cudnn_attn_counts(long *fwd, long *bwd);

#ifdef __cplusplus
}
#endif
#endif
