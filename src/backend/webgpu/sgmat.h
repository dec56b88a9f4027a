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
/* kernel n's f16-output epilogues (tz_sgmat_tile.epi) */
enum { TZ_SGMAT_EPI_NONE = 0, TZ_SGMAT_EPI_RES = 1, TZ_SGMAT_EPI_GELU = 2, TZ_SGMAT_EPI_DGELU = 3, TZ_SGMAT_EPI_DSWIGLU = 4 };
/* (the backend's sg_matmul also takes TZ_SGMAT_EPI_DB for the weight gradient's bias sums: the
 * tile's db, not its epi) */
enum { TZ_SGMAT_EPI_DB = 5 };

/* Workgroup tile BM × BN × BK with SG_M × SG_N subgroups of TM × TN 16×16 result matrices:
 * BM = SG_M·TM·16, BN = SG_N·TN·16, BK % 16 == 0.
 * kern 0: matmul_sgmat.wgsl (direct: the subgroups load their matrices from the operands, not
 * through workgroup memory). kern 1: matmul_sgmm.wgsl (one variable per result matrix, 8-half
 * loads; its header says what tv8, trb, nbuf and pf select). Positional initialisers of the first
 * six fields give kern 0. pers (kern 1 with pf, one buffer, no split): a persistent grid of
 * `pers` workgroups walking the tiles (matmul_sgmm.wgsl, PERS). */
typedef struct {
  uint32_t bk, sg_m, sg_n, tm, tn, direct;
  uint32_t kern, tv8, trb, nbuf, pf, swz, pers;
  uint32_t a32;  /* kern 1: operand a is f32, rounded to f16 in the kernel (matmul_sgmm.wgsl, A32) */
  uint32_t a16w; /* with a32, p, one buffer: the kernel also writes a's f16 copy (A16W) */
  uint32_t o16;  /* kern 1, no split: the output is f16, staged through workgroup memory (O16; the
                  * backend sets it for f16 activations, c->act_f16; tz_sgmat_run_ex has no f16
                  * output and rejects it) */
  uint32_t epi;  /* with o16, no a16w, no ACC: an epilogue with a second f16 [M, N] tensor at binding
                  * 5 (the backend's): TZ_SGMAT_EPI_RES adds a residual (RES, matmul_t_res),
                  * _GELU also writes gelu of the result there (GELU, matmul_t_gelu), _DGELU
                  * multiplies the result by gelu'(h) of the h there (DGELU, matmul_dgelu),
                  * _DSWIGLU writes SwiGLU's backward of the result and the gate|up [M, 2N]
                  * there into the [M, 2N] output (DSWIGLU, matmul_dswiglu) */
  uint32_t db;   /* kern 1, form DYTX, f16 a (no a32), v, p, one buffer, no P, no o16: the workgroups of tile
                  * column 0 also sum the f16 a (dY) they stage over k, per column m of dW's rows,
                  * into the M floats after c's [M, N] (db after dW; with a split, after each
                  * partial, stride M·N + M): the bias gradient (DB; the backend's matmul_at_db) */
} tz_sgmat_tile;

/* The tiles bench_webgpu_sgmat's sweep measures and test_webgpu_ops' test_matmul_sgmat checks
 * through the backend: every tile the backend may be told to take (the bench says what each
 * tries), the likeliest first (the sweep has a time budget). */
#define TZ_SGMAT_SWEEP_TILES                                                                       \
  "o:64:4x4:2x2;n:64:2x4:4x2:vp;n:32:2x4:4x2:v2;n:32:2x4:4x4:vp;n:32:2x2:4x4:v2;n:32:2x4:4x4:vpg;" \
  "n:32:2x4:4x2:v2g;n:64:2x2:4x4:vp;n:32:4x2:4x4:vp;n:64:4x4:2x2:tp;n:64:2x4:4x2:tp;n:32:2x4:4x2:t2;" \
  "n:32:4x4:2x2:v2;n:64:2x4:4x2:v;o:64:2x4:4x2;n:64:2x4:4x2:vpP264;n:64:2x4:4x2:vpgP132"

/* A tile from its name: "o:BK:SGMxSGN:TMxTN[:d]" (kern 0; d = direct) or
 * "n:BK:SGMxSGN:TMxTN[:FLAGS]" (kern 1; FLAGS letters v = tv8, t = trb, 2 = two buffers,
 * p = register prefetch, g = grouped grid order, P<n> = a persistent grid of n workgroups
 * (P alone: 264, two per SM of a 132-SM GPU), f = operand a in f32 (a32: tz_sgmat_run_ex uploads
 * a's f16 values as f32, so results match the f16 run; the backend sets it itself), w = with
 * f, p and one buffer, the kernel also writes a's f16 copy (a16w: tz_sgmat_run_ex reads it back
 * and requires it equal to a, bit for bit)), e.g. "o:64:4x4:2x2", "n:32:2x4:4x2:v2". 0, or -1 with tz_err naming
 * the text. tz_sgmat_tile_name writes the same form back (cap >= 32). */
int tz_sgmat_tile_parse(const char *s, tz_sgmat_tile *t);
void tz_sgmat_tile_name(tz_sgmat_tile t, char *buf, size_t cap);

/* Workgroup memory of a tile in bytes (form: operand layouts; has_bias: the bias tile). */
uint32_t tz_sgmat_tile_smem(tz_sgmat_tile t, int form, int has_bias);

/* Can tile t run form (tz_sgmat_form, below) at M × N × K with `split` pieces of K (1: none)
 * on subgroups of sgsize lanes, within smem_limit bytes of workgroup memory and max_threads
 * per workgroup? 1, or 0 with a short reason in why (why may be NULL). Shape: multiples of the
 * tile (and K / split of BK); the tile loads divide evenly over the threads; kern 1 needs its
 * operands' contiguous dimensions to be multiples of 8 (they are, as multiples of the tile). */
int tz_sgmat_tile_fits(tz_sgmat_tile t, int form, uint32_t M, uint32_t N, uint32_t K, uint32_t split,
                       uint32_t sgsize, uint32_t smem_limit, uint32_t max_threads, const char **why);

/* Pieces of K for the weight-gradient form (dW += dYᵀ·X: few output tiles over a long K): the S
 * in 1..16 (pieces of >= 512 k; 1 where K < 1024) that minimises ceil(tiles·S / n) / S ·
 * (1 + c·S): waves per unit of work with n = 132 workgroups in flight (one per multiprocessor
 * of an H200), c = 4 % per piece for the fp32 partials (each piece writes its M × N partial in
 * the matmul, and the sum pass reads them all); each piece a multiple of bk.
 * TEZGAH_WEBGPU_SGMAT_SLOTS=n: another n; =0: the earlier rule (S = ceil(264 / tiles), 1 when
 * tiles >= 264 or K < 2048). TEZGAH_WEBGPU_SGMAT_SPLIT_COST=p: c = p % (tuning).
 * H200 (2026-12-03 04:11 UTC, bench_webgpu_sgmat sweep, GPT-2 124M's five weight-gradient
 * shapes, partial sums included): 18.21 ms with n = 132, 18.53 with 264, 19.19 with the earlier
 * rule. c was 1 % until session 23's training profiles (H200, 2026-12-04 15:52 UTC,
 * scripts/device_split23.sh, matmul + its sum, ms/step): GPT-2's 144-tile shapes (dW of fc and
 * fcproj) 4.24 / 4.17 at 5 pieces against 4.51 / 4.45 at 10 (1 %'s choice) and 4.61 / 4.56 at
 * 11; the 108-tile qkv 3.08 at 6 against 3.32 at 3 and 3.23 at 7; the 36-tile attention proj
 * 1.24 at 7 against 1.32 at 11. With c = 4 %: 5, 6 and 7, the measured best of each (llama's 192
 * and 96 tiles keep 2 and 4). */
uint32_t tz_sgmat_splits(uint32_t tiles, uint32_t K, uint32_t bk);

/* The constants and preprocessor values the kernel file of t expects, for one pipeline:
 * `const` lines and a `//defs NAME=VALUE ...` line (tz_sgmat_preprocess reads it). emu: the
 * emulated builtins (matmul_sgmm.wgsl only; any adapter with ShaderF16). Reads
 * TEZGAH_WEBGPU_SGMAT_EPRE (the EPRE value; sgmat.c). Returns the length written (truncation is
 * a bug: cap >= 1024 suffices). */
size_t tz_sgmat_prefix(char *buf, size_t cap, tz_sgmat_tile t, int form, int acc, int has_bias, int split,
                       uint32_t sgsize, int emu);
/* The kernel file of t: "matmul_sgmat" or "matmul_sgmm". */
const char *tz_sgmat_file(tz_sgmat_tile t);

/* The dispatch grid g[3] of tile t at M × N with `split` pieces of K: (N / BN, M / BM, split),
 * or with t.pers (min(tiles, pers), 1, 1). */
void tz_sgmat_grid(tz_sgmat_tile t, uint32_t M, uint32_t N, uint32_t split, uint32_t g[3]);

/* Index of the configuration the kernel uses (f16 × f16 → f32, M = N = K = 16) in `cfg[0..n)`,
 * or -1 when there is none (the caller falls back). Pure; no GPU. */
int tz_sgmat_pick(const WGPUSubgroupMatrixConfig *cfg, size_t n);
/* The same for f16 × f16 → `res` at 16×16×16 (tz_sgmat_pick is res = F32; F16: the f16
 * accumulator the attention backward's dq partials use where listed, webgpu_ops_attn_sg.c
 * sg_dq16; the H200 lists both, docs/PERF.md "f16 and subgroup matrices on the H200 with a newer
 * Dawn"). Index or -1. Pure; no GPU. */
int tz_sgmat_pick_res(const WGPUSubgroupMatrixConfig *cfg, size_t n, WGPUSubgroupMatrixComponentType res);

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
 * XWT only); c [M, N] is read first for DYTX (accumulation) and written. The shape must fit
 * the tile (tz_sgmat_tile_fits; -1 with tz_err otherwise). When reps > 0, also times `reps`
 * dispatches in one submission after one warm-up and stores milliseconds per dispatch in
 * *ms. 0 or -1 with tz_err (device error, shape). */
int tz_sgmat_run(tz_sgmat *s, tz_sgmat_form form, tz_sgmat_tile t, uint32_t M, uint32_t N, uint32_t K,
                 const uint16_t *a, const uint16_t *b, const float *bias, float *c, int reps, double *ms);
/* The same with options: split (pieces of K, DYTX only; 0 or 1: none; the partial products
 * are summed by sgmat_sum.wgsl inside each timed repetition), keep_ab (a and b are the same
 * arrays as in the earlier calls of this handle with keep_ab, their first bytes unchanged:
 * only what no earlier call uploaded is uploaded), emu (the
 * kernel's emulated builtins: kern 1 on an adapter without subgroup matrices, where
 * tz_sgmat_open_emu gave the handle). */
int tz_sgmat_run_ex(tz_sgmat *s, tz_sgmat_form form, tz_sgmat_tile t, uint32_t M, uint32_t N, uint32_t K,
                    const uint16_t *a, const uint16_t *b, const float *bias, float *c, int reps, double *ms,
                    uint32_t split, int keep_ab, int emu);
/* A handle whose device needs only ShaderF16 (and offers subgroups when the adapter does), for
 * tz_sgmat_run_ex(..., emu = 1): the kernel's indexing checked on any such adapter (lavapipe).
 * NULL with tz_err without Dawn, an adapter or ShaderF16. */
tz_sgmat *tz_sgmat_open_emu(void);
/* The subgroup size the kernels are built for (the adapter's), and the device's workgroup
 * memory and binding limits. */
uint32_t tz_sgmat_sgsize(const tz_sgmat *s);
uint32_t tz_sgmat_smem_limit(const tz_sgmat *s);
uint64_t tz_sgmat_binding_limit(const tz_sgmat *s);
void tz_sgmat_close(tz_sgmat *s);

/* The kernel source `src` preprocessed with the values of the `//defs` line in `defs` (a
 * prefix from tz_sgmat_prefix; names not listed are 0):
 *   //#if NAME, //#if !NAME, //#else, //#endif   keep lines where NAME != 0 (nestable);
 *   //#for V in NAME ... //#endfor               the lines repeated NAME times, `{V}` replaced
 *                                                by 0, 1, ... (nestable);
 * and, where EMU != 0, the subgroup-matrix builtins rewritten to the file's emu_* functions
 * (subgroupMatrixLoad<T, MAJ>(&ARR, → emu_ld_ARR_MAJ(, subgroupMatrixStore<MAJ>(&ARR, →
 * emu_st_ARR_MAJ(, subgroupMatrixMultiplyAccumulate( → emu_mma() and the lines
 * `enable chromium_experimental_subgroup_matrix;` / `diagnostic(off, chromium.…)` dropped.
 * malloc'ed. Used here and by the backend's pipelines (webgpu_pipe.c). */
char *tz_sgmat_preprocess(const char *src, const char *defs);

/* IEEE binary16 from float, round to nearest even (host side). */
uint16_t tz_sgmat_f16(float x);
float tz_sgmat_f32(uint16_t h);

#endif
