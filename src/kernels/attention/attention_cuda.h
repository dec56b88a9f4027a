/* Internal interface between the CUDA attention files (nothing here is public API):
 *   attention.cu     the launchers tzc_attention_fwd / tzc_attention_bwd, path selection,
 *                    the D = rowsum(dout ∘ out) kernel and the SIMT fallback kernels;
 *   attention_fa.cu  FlashAttention-2 on tensor cores (bf16, head_dim 64 / 128, training form).
 * Included only from .cu files (C++). */
#ifndef TZ_ATTENTION_CUDA_H
#define TZ_ATTENTION_CUDA_H
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

/* Bytes of dynamic shared memory the tensor-core kernels need for head_dim hd (the largest of
 * the forward, dQ and dK/dV kernels), so the dispatcher can fall back on a device with less. */
size_t tzc_fa_smem_bytes(int hd);

/* Forward, training form (Tq == Tk == T, q_pos0 == 0), hd 64 or 128. out [B*T, H*hd]; lse
 * [B, H, T] or NULL; q rows of qs elements, k/v rows of kvs elements (multiples of 8; every
 * pointer 16-byte aligned: the caller checks). */
void tzc_fa_fwd(cudaStream_t st, __nv_bfloat16 *out, float *lse, const __nv_bfloat16 *q,
                const __nv_bfloat16 *k, const __nv_bfloat16 *v, int B, int T, int H, int KVH,
                int hd, int qs, int kvs);

/* Bytes of the dS scratch the ds backward needs: B·H·nt(nt+1)/2 tiles of 64×64 bf16,
 * nt = ⌈T / 64⌉ (~B·H·T² bytes: 214 MB at B 16, H 12, T 1024). */
size_t tzc_fa_ds_bytes(int B, int H, int T);

/* Options of the tensor-core backward (attention.cu reads them from the environment).
 *   dsvar    ds path only: fa_dq_ds's blocks, 0: 64 query rows of 4 warps, 1: 128 rows, 4 warps of
 *            2 m-tiles, 2: 128 rows, 8 warps
 *   dsstore  ds path only: how fa_dkdv writes dS, 4: 4-byte stores from the fragments, 16:
 *            stmatrix into a shared-memory stage, then 16-byte stores of whole rows
 *   ev, ms   timing (ev NULL: off): 3 events; ms[0] += fa_dkdv's time, ms[1] += fa_dq's or
 *            fa_dq_ds's (the host waits for the kernels: diagnostics only) */
typedef struct {
  int dsvar, dsstore;
  cudaEvent_t *ev;
  double *ms;
} tzc_fa_bwd_opts;

/* Backward: dq, dk, dv written (=) with strides qs, kvs; D [B, H, T] = rowsum(dout ∘ out),
 * computed by the caller. ds NULL: dK/dV, then dQ recomputing S and dP (fa_dq); ds (256-byte
 * aligned, tzc_fa_ds_bytes(B, H, T) bytes, contents ignored): dK/dV also writes dS there, then
 * dQ = dS·K (fa_dq_ds). */
void tzc_fa_bwd(cudaStream_t st, __nv_bfloat16 *dq, __nv_bfloat16 *dk, __nv_bfloat16 *dv,
                __nv_bfloat16 *ds, const tzc_fa_bwd_opts *o, const __nv_bfloat16 *dout,
                const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v,
                const float *lse, const float *D, int B, int T, int H, int KVH, int hd, int qs,
                int kvs);

#endif
