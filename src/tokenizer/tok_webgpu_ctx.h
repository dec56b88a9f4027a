/* The GPU context the WebGPU tokenizer's stages share (tok_webgpu_ctx.c): the device, its
 * errors, buffers, readbacks, pipelines (compiled asynchronously from src/kernels/bpe/),
 * bind groups, dispatches, and small helpers. Private to src/tokenizer/tok_webgpu*.c. */
#ifndef TZ_TOKENIZER_TOK_WEBGPU_CTX_H
#define TZ_TOKENIZER_TOK_WEBGPU_CTX_H
#include <stddef.h>
#include <stdint.h>

#include "backend/webgpu/webgpu_api.h"

#define W tz_wgpu
#define EMPTY 0xffffffffu
#define HP 0x01000193u

typedef struct {
  const char *file, *entry;
  WGPUComputePipeline pipe;
  WGPUBindGroupLayout bgl;
  /* asynchronous creation (pipeline_start): pending until tz_tg_pipeline() waits for it */
  int pending, status;
  WGPUFuture fut;
  char msg[256];
} tg_pipe;

/* The tokenizer's own device, created once per process (tz_tok_webgpu_available). */
typedef struct {
  int state; /* 0 untried, 1 ready, -1 unavailable (why) */
  char why[600];
  WGPUInstance inst;
  WGPUAdapter adapter;
  WGPUDevice dev;
  WGPUQueue queue;
  WGPULimits lim;
  char desc[300];
  int failed;
  char err[1024];
  tg_pipe pipes[32];
  int npipes;
  WGPUBuffer cls; /* the pre-tokenizer's character classes (tz_pretok_classes), uploaded once */
} tg_context;
extern tg_context tz_tg_ctx;

/* Wait for a future (1 s at a time, up to an hour, events processed between): 0, or -1 on a
 * wait failure or a device error. */
int tz_tg_wait_future(WGPUFuture f);
/* 0, or -1 with tz_err naming `what` when the device reported an error since the last check. */
int tz_tg_check_dev(const char *what);
/* A buffer of `size` bytes rounded up to 16 (at least 16). */
WGPUBuffer tz_tg_mkbuf(uint64_t size, WGPUBufferUsage usage, const char *label);
/* A storage buffer that can also be copied from and to. */
WGPUBuffer tz_tg_sbuf(uint64_t size, const char *label);
/* Queue a write of n bytes (rounded up to 4) of data at off. */
void tz_tg_put(WGPUBuffer b, uint64_t off, const void *data, size_t n);
/* Destroy and release *b (NULL: nothing); *b becomes NULL. */
void tz_tg_drop(WGPUBuffer *b);
/* A map callback: *(int *)u1 = 1 on success, -1 otherwise. */
void tz_tg_on_mapped(WGPUMapAsyncStatus status, WGPUStringView message, void *u1, void *u2);
/* Submit enc (may be NULL), then copy n bytes (multiple of 4) of src at off to dst. */
int tz_tg_read_back(WGPUCommandEncoder enc, WGPUBuffer src, uint64_t off, void *dst, size_t n);
/* End compute pass `pass` of enc and submit enc. */
void tz_tg_submit_pass(WGPUCommandEncoder enc, WGPUComputePassEncoder pass);
/* The pipeline of `entry` in bpe file `file`, made (or waited for) now; NULL on an error. */
tg_pipe *tz_tg_pipeline(const char *file, const char *entry);
/* Start compiling every entry point in `entries` (NULL-terminated) of bpe file `file`. */
void tz_tg_pipelines_start(const char *file, const char *const *entries);
/* A bind group for pipeline p: binding 0 = uniform u, 1..n = storage buffers b[] (whole). */
WGPUBindGroup tz_tg_bind(tg_pipe *p, WGPUBuffer u, uint64_t usize, WGPUBuffer *b, int n);
/* Dispatch `groups` workgroups (x up to 65535, the rest in y); 0: nothing. */
void tz_tg_dispatch(WGPUComputePassEncoder pass, tg_pipe *p, WGPUBindGroup bg, uint64_t groups);
/* The hashes the kernels use: of a 32-bit key, and of a byte string. */
uint32_t tz_tg_hmix(uint32_t x);
uint32_t tz_tg_hbytes(const unsigned char *s, size_t n);
uint64_t tz_tg_pow2_at_least(uint64_t x);
/* The largest buffer one storage binding can take on this device (bytes). */
uint64_t tz_tg_bind_limit(void);
/* 0, or -1 with tz_err when `what` needs more bytes than one binding takes. */
int tz_tg_too_big(const char *what, uint64_t bytes);
/* Monotonic wall time in seconds. */
double tz_tg_wall(void);
/* An error message without its "webgpu tokenizer: " / "webgpu: " prefix. */
const char *tz_tg_why_bare(const char *msg);

#endif
