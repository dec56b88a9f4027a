/* Byte-level BPE decoding on the GPU (tz_tok_decode_webgpu, bpe_encode.wgsl's dec_len,
 * dec_scan, dec_write): per-block byte counts, a scan, and a byte scatter. Ids must be < 65536
 * (pairs are 32-bit keys). Same bytes as tz_tok_decode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tok_webgpu_stages.h"

int tz_tok_decode_webgpu(const tz_tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len) {
  *text = NULL;
  *len = 0;
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= t->vocab_size)
      return tz_err("tokenizer: token id %d out of range (vocab size %d)", ids[i], t->vocab_size);
  if (!tz_tok_webgpu_available()) return -1;
  enc_tables tb;
  if (tz_tg_build_tables(t, &tb)) return -1;
  if (n == 0) {
    free(tb.v);
    *text = tz_calloc(1, 1);
    return 0;
  }
  if (n >= (1u << 31) || tz_tg_too_big("the ids", n * 4)) {
    free(tb.v);
    return n >= (1u << 31) ? tz_err("webgpu tokenizer: %zu ids are too many for one decode", n) : -1;
  }
  uint64_t nblocks = (n + 4095) / 4096;
  tb.u[10] = (uint32_t)n;
  tb.u[11] = (uint32_t)nblocks;
  WGPUBuffer ub = tz_tg_mkbuf(sizeof tb.u, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, "bpe uniforms");
  WGPUBuffer B[8] = {0};
  B[0] = tz_tg_sbuf(tb.n * 4 + 4, "bpe tables");
  B[1] = tz_tg_sbuf(16, "bpe text");
  B[2] = tz_tg_sbuf(16, "bpe pieces");
  B[3] = tz_tg_sbuf(n * 4, "bpe ids");
  B[4] = tz_tg_sbuf(nblocks * 4 + 4, "bpe block sums");
  B[5] = tz_tg_sbuf(16, "bpe long pieces");
  B[6] = tz_tg_sbuf(16, "bpe scratch");
  B[7] = tz_tg_sbuf(16, "bpe compacted ids");
  tz_tg_put(B[0], 0, tb.v, tb.n * 4);
  free(tb.v);
  tz_tg_put(B[3], 0, ids, n * 4);
  tz_tg_put(ub, 0, tb.u, sizeof tb.u);
  tg_pipe *pl = tz_tg_pipeline("bpe_encode", "dec_len"), *psc = tz_tg_pipeline("bpe_encode", "dec_scan"),
          *pw = tz_tg_pipeline("bpe_encode", "dec_write");
  int rc = (!pl || !psc || !pw) ? -1 : 0;
  uint32_t total = 0;
  char *s = NULL;
  if (!rc) {
    WGPUBindGroup g1 = tz_tg_bind(pl, ub, sizeof tb.u, B, 8), g2 = tz_tg_bind(psc, ub, sizeof tb.u, B, 8);
    WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(tz_tg_ctx.dev, NULL);
    WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
    tz_tg_dispatch(pass, pl, g1, nblocks);
    tz_tg_dispatch(pass, psc, g2, 1);
    W.wgpuComputePassEncoderEnd(pass);
    W.wgpuComputePassEncoderRelease(pass);
    rc = tz_tg_read_back(enc, B[4], nblocks * 4, &total, 4);
    W.wgpuBindGroupRelease(g1);
    W.wgpuBindGroupRelease(g2);
  }
  if (!rc && (rc = tz_tg_too_big("the decoded bytes", (uint64_t)total + 16)) == 0) {
    tz_tg_drop(&B[1]);
    B[1] = tz_tg_sbuf((uint64_t)total + 16, "bpe text"); /* zero-initialized */
    WGPUBindGroup g3 = tz_tg_bind(pw, ub, sizeof tb.u, B, 8);
    WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(tz_tg_ctx.dev, NULL);
    WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, NULL);
    tz_tg_dispatch(pass, pw, g3, nblocks);
    W.wgpuComputePassEncoderEnd(pass);
    W.wgpuComputePassEncoderRelease(pass);
    s = tz_malloc((size_t)total + 8);
    rc = tz_tg_read_back(enc, B[1], 0, s, ((size_t)total + 3) / 4 * 4);
    W.wgpuBindGroupRelease(g3);
  }
  tz_tg_drop(&ub);
  for (int i = 0; i < 8; i++) tz_tg_drop(&B[i]);
  if (rc) {
    free(s);
    return -1;
  }
  s[total] = 0;
  *text = s;
  *len = total;
  return 0;
}
