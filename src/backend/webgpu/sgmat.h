/* The subgroup-matrix matmul (src/kernels/matmul_sgmat/matmul_sgmat.wgsl) as a standalone op:
 * f16 × f16 → f32 on WGSL's chromium_experimental_subgroup_matrix (tensor cores on NVIDIA
 * through Vulkan cooperative matrices), with its own device, for the bench
 * (bench/bench_webgpu_sgmat.c) and the test (tests/test_webgpu_sgmat.c). The training backend
 * runs the same kernel file on its own device (webgpu_ops_matmul.c, sg_matmul).
 *
 * The adapter is asked for with the toggles that expose the feature on NVIDIA under the "node"
 * Dawn (vulkan_enable_f16_on_nvidia, allow_unsafe_apis: docs/PERF.md's probe); the kernel is
 * chosen only when the adapter lists an f16 × f16 → f32 16×16×16 configuration, offers
 * ShaderF16 and has one subgroup size (tz_sgmat_pick); otherwise (lavapipe, bun's Dawn on
 * NVIDIA) callers keep the fp32 / f16-vector kernels. */
#ifndef TZ_WEBGPU_SGMAT_H
#define TZ_WEBGPU_SGMAT_H
#include <stddef.h>
#include <stdint.h>

#include "backend/webgpu/webgpu_api.h"

/* The matmul forms of the model (row-major; C is [M, N] f32):
 *   TZ_SGMAT_XWT:  C = A·Bᵀ, A [M, K], B [N, K]     (forward X·Wᵀ, + bias [N])
 *   TZ_SGMAT_DYW:  C = A·B,  A [M, K], B [K, N]     (input gradient dX = dY·W)
 *   TZ_SGMAT_DYTX: C += Aᵀ·B, A [K, M], B [K, N]    (weight gradient dW += dYᵀ·X) */
typedef enum { TZ_SGMAT_XWT = 0, TZ_SGMAT_DYW = 1, TZ_SGMAT_DYTX = 2 } tz_sgmat_form;

/* Workgroup tile BM × BN × BK with SG_M × SG_N subgroups of TM × TN 16×16 result matrices:
 * BM = SG_M·TM·16, BN = SG_N·TN·16, BK % 16 == 0; direct: the subgroups load their matrices
 * from the operands, not through workgroup memory. */
typedef struct {
  uint32_t bk, sg_m, sg_n, tm, tn, direct;
} tz_sgmat_tile;

/* Index of the configuration the kernel uses (f16 × f16 → f32, M = N = K = 16) in `cfg[0..n)`,
 * or -1 when there is none (the caller falls back). Pure; no GPU. */
int tz_sgmat_pick(const WGPUSubgroupMatrixConfig *cfg, size_t n);

typedef struct tz_sgmat tz_sgmat;
/* Load Dawn, create an instance, the Vulkan adapter (with the toggles above under the node
 * Dawn) and, when the kernel is usable there, a device with ShaderF16 and
 * ChromiumExperimentalSubgroupMatrix. NULL with tz_err when there is no adapter at all; a
 * non-NULL handle whose tz_sgmat_usable() is 0 when the adapter cannot run the kernel. */
tz_sgmat *tz_sgmat_open(void);
/* 1 if the kernel can run; 0 and, in why, the reason it falls back. */
int tz_sgmat_usable(const tz_sgmat *s, const char **why);
/* One line: the adapter, the Dawn build, ShaderF16, the subgroup-matrix configurations. */
const char *tz_sgmat_describe(const tz_sgmat *s);
/* Run one form with f16 operands (IEEE binary16 bit patterns) a, b and optional bias (f32, [N],
 * XWT only); c [M, N] is read first for DYTX (accumulation) and written. M % BM, N % BN,
 * K % BK must be 0 (returns -1 with tz_err otherwise). When reps > 0, also times `reps`
 * dispatches in one submission after one warm-up and stores milliseconds per dispatch in
 * *ms. 0 or -1 with tz_err (device error, shape). */
int tz_sgmat_run(tz_sgmat *s, tz_sgmat_form form, tz_sgmat_tile t, uint32_t M, uint32_t N, uint32_t K,
                 const uint16_t *a, const uint16_t *b, const float *bias, float *c, int reps, double *ms);
void tz_sgmat_close(tz_sgmat *s);

/* The kernel source `src` with the lines between `//#if X` and `//#else` / `//#endif` kept where
 * flag X holds (X is DIRECT or HAS_BIAS), the `//#else` part where it does not (not nested);
 * malloc'ed. Used here and by the backend's pipelines (webgpu_pipe.c). */
char *tz_sgmat_preprocess(const char *src, int direct, int has_bias);

/* IEEE binary16 from float, round to nearest even (host side). */
uint16_t tz_sgmat_f16(float x);
float tz_sgmat_f32(uint16_t h);

#endif
