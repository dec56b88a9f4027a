/* WebGPU backend profile (TEZGAH_PROFILE=1 where the adapter offers TimestampQuery): each
 * dispatch runs in its own compute pass with begin / end timestamps (wg_run_ex); after each
 * submit the resolved timestamps are read back and added to per-label totals (GPU ns, calls, and
 * the FLOP and bytes the ops declared: tz_prof_totals), printed by the backend-neutral
 * tz_prof_print (backend.c), as the CUDA backend's are. */
#include <string.h>

#include "backend/webgpu/webgpu_internal.h"

/* ---- profiling ---- */
void wg_prof_collect(wg_ctx *c) {
  int nq = c->nq;
  c->nq = 0;
  int st = 0;
  WGPUBufferMapCallbackInfo ci = {NULL, WGPUCallbackMode_WaitAnyOnly, wg_on_mapped, &st, NULL};
  WGPUFuture f = W.wgpuBufferMapAsync(c->qread, WGPUMapMode_Read, 0, (size_t)nq * 8, ci);
  if (wg_wait_future(c, f) != 0 || st != 1) return;
  const uint64_t *t = W.wgpuBufferGetConstMappedRange(c->qread, 0, (size_t)nq * 8);
  for (int i = 0; t && i < nq / 2; i++) {
    tz_prof_row *r = &c->prof.row[tz_prof_label(&c->prof, c->qlabel[i])];
    if (t[2 * i + 1] > t[2 * i]) r->ns += (double)(t[2 * i + 1] - t[2 * i]);
    r->calls++;
  }
  W.wgpuBufferUnmap(c->qread);
}

void tz_webgpu_profile_print(tz_backend *be, double steps) {
  if (!be || strcmp(be->name, "webgpu")) return;
  wg_ctx *c = CTX(be);
  if (!c->profile) return;
  wg_sync_ctx(c);
  /* rates: matmuls GFLOP/s (2MNK), the flash attention kernels GFLOP/s of their causal matmul
   * units (attn_flop); others GB/s of the tensor extents bound (each read or written once: a
   * lower bound on the traffic). The attention backward is three rows: attention_bwd_dq and
   * attention_bwd_dkdv, and attention_bwd_d where D runs as its own pass (under the fused dq,
   * attention_bwd_dq is fa_dq_sum, the sum of the partial dq, and attention_bwd_dkdv counts
   * five units). */
  tz_prof_print(&c->prof, "webgpu profile (GPU timestamps", steps);
}

void tz_webgpu_profile_reset(tz_backend *be) {
  if (!be || strcmp(be->name, "webgpu")) return;
  wg_ctx *c = CTX(be);
  wg_sync_ctx(c);
  tz_prof_clear(&c->prof);
}
