/* The CPU GEMM's register-tile micro-kernels, one per instruction set, chosen at run time.
 *
 * Every kernel computes, for each element of its mr×nr tile of C,
 *     acc = 0;  for k in [0, kc): acc = fma(a[k], b[k], acc)      (one rounding per step)
 *     x = acc + (bias ? bias[j] : 0);  C[i][j] = load ? C[i][j] + x : x
 * in exactly this order. The vector width, the tile shape (MR×NR) and the edge handling only
 * decide which elements are computed together, never how one element is computed: the
 * AVX-512, AVX2+FMA and scalar (C99 fmaf, correctly rounded by definition) kernels give
 * bit-identical C for the same packed inputs. The driver (matmul_cpu.c) fixes the k-blocking
 * (TZ_MM_KC), so a GEMM's result does not depend on the CPU, the build's -march, the thread
 * count, the matrix sizes around an element, or where the buffers sit (docs/RELIABILITY.md).
 *
 * The vector kernels are compiled with target attributes, so an x86-64-v2 build carries them
 * too; tz_mm_pick() asks the CPU (cpuid through __builtin_cpu_supports) which may run.
 *
 * Layout (the driver packs): a is an MR-row strip, a[k*MR + i]; b an NR-wide panel,
 * b[k*NR + j], 64-byte aligned; rows of A past mr and columns of B past nr are zero.
 * C is row-major with leading dimension ldc; only its mr×nr corner is written.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TZ_X86 1
#endif
#ifdef __wasm_simd128__ /* the wasm build (scripts/build_wasm.sh, -msimd128) */
#include <wasm_simd128.h>
#define TZ_WASM128 1
#endif

#include "core/error.h"
#include "kernels/cpu_kernels.h"

/* The epilogue of every kernel on a full tile kept in memory (edge tiles): see the header. */
static void store_tile(const float *tile, int NR, float *C, size_t ldc, int mr, int nr, int load,
                       const float *bias) {
  for (int i = 0; i < mr; i++) {
    float *ci = C + (size_t)i * ldc;
    for (int j = 0; j < nr; j++) {
      float x = tile[i * NR + j] + (bias ? bias[j] : 0.0f);
      ci[j] = load ? ci[j] + x : x;
    }
  }
}

/* The transposing pack (tz_mm_ukernel.pack_t), plain C: one strided gather per element. */
static void pack_t_scalar(float *dst, int w, const float *src, size_t stride, int n, int kc) {
  for (int k = 0; k < kc; k++)
    for (int i = 0; i < w; i++) dst[k * w + i] = i < n ? src[(size_t)i * stride + k] : 0.0f;
}

/* ---- scalar: any CPU (4×8 tile; fmaf is one instruction where the CPU has FMA) ---- */
enum { S_MR = 4, S_NR = 8 };
static void ukernel_scalar(int kc, const float *a, const float *b, float *C, size_t ldc, int mr,
                           int nr, int load, const float *bias) {
  float tile[S_MR * S_NR] = {0};
  for (int k = 0; k < kc; k++)
    for (int i = 0; i < S_MR; i++)
      for (int j = 0; j < S_NR; j++)
        tile[i * S_NR + j] = fmaf(a[k * S_MR + i], b[k * S_NR + j], tile[i * S_NR + j]);
  store_tile(tile, S_NR, C, ldc, mr, nr, load, bias);
}

#ifdef TZ_X86
/* The transposing pack with AVX: 8 source rows × 8 k at a time, loaded as 8 ymm rows and
 * transposed in registers (unpack / shuffle / 128-bit permute), so each k's 8 values leave as
 * one store instead of 8 strided gathers. Rows past n read a zero row. Any w: a last group of
 * w % 8 rows (the AVX2 MR 6, the AVX-512 MR 12 and 14) leaves by masked stores; the last
 * kc % 8 columns take the scalar path. */
static const float pack_zero_row[TZ_MM_KC] __attribute__((aligned(64)));
__attribute__((target("avx2"))) static void pack_t_avx2(float *dst, int w, const float *src,
                                                        size_t stride, int n, int kc) {
  int k8 = kc / 8 * 8;
  for (int i0 = 0; i0 < w; i0 += 8) {
    const int part = w - i0 < 8; /* a last group of w % 8 rows: masked stores */
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(w - i0),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const float *row[8];
    for (int r = 0; r < 8; r++)
      row[r] = i0 + r < n && i0 + r < w ? src + (size_t)(i0 + r) * stride : pack_zero_row;
    for (int k0 = 0; k0 < k8; k0 += 8) {
      __m256 r0 = _mm256_loadu_ps(row[0] + k0), r1 = _mm256_loadu_ps(row[1] + k0),
             r2 = _mm256_loadu_ps(row[2] + k0), r3 = _mm256_loadu_ps(row[3] + k0),
             r4 = _mm256_loadu_ps(row[4] + k0), r5 = _mm256_loadu_ps(row[5] + k0),
             r6 = _mm256_loadu_ps(row[6] + k0), r7 = _mm256_loadu_ps(row[7] + k0);
      __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1),
             t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3),
             t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
             t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
      __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE),
             u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE),
             u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE),
             u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
      __m256 col[8] = {_mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
                       _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
                       _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
                       _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31)};
      for (int kk = 0; kk < 8; kk++) { /* col[kk] holds rows i0..i0+7 at k = k0 + kk */
        float *d = dst + (size_t)(k0 + kk) * w + i0;
        if (part) _mm256_maskstore_ps(d, mask, col[kk]);
        else _mm256_storeu_ps(d, col[kk]);
      }
    }
    for (int k = k8; k < kc; k++)
      for (int i = i0; i < i0 + 8 && i < w; i++) dst[(size_t)k * w + i] = i < n ? src[(size_t)i * stride + k] : 0.0f;
  }
}

/* ---- AVX2 + FMA: 6×16 tile in 12 ymm accumulators (the BLIS Haswell shape) ---- */
enum { A2_MR = 6, A2_NR = 16 };
__attribute__((target("avx2,fma"))) static void ukernel_avx2(int kc, const float *a,
                                                              const float *b, float *C,
                                                              size_t ldc, int mr, int nr,
                                                              int load, const float *bias) {
  /* named accumulators, not arrays: gcc 12 stored array-held accumulators to the stack on
   * every k step, which halved the kernel's rate */
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
         c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int k = 0; k < kc; k++) {
    const float *ak = a + k * A2_MR;
    __m256 b0 = _mm256_load_ps(b + k * A2_NR), b1 = _mm256_load_ps(b + k * A2_NR + 8), ai;
#define ROW(i)                              \
  ai = _mm256_broadcast_ss(ak + i);         \
  c##i##0 = _mm256_fmadd_ps(ai, b0, c##i##0); \
  c##i##1 = _mm256_fmadd_ps(ai, b1, c##i##1);
    ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5)
#undef ROW
  }
  __m256 c0[A2_MR] = {c00, c10, c20, c30, c40, c50}, c1[A2_MR] = {c01, c11, c21, c31, c41, c51};
  if (mr == A2_MR && nr == A2_NR) {
    __m256 bs0 = bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps();
    __m256 bs1 = bias ? _mm256_loadu_ps(bias + 8) : _mm256_setzero_ps();
    for (int i = 0; i < A2_MR; i++) {
      float *ci = C + (size_t)i * ldc;
      __m256 x0 = _mm256_add_ps(c0[i], bs0), x1 = _mm256_add_ps(c1[i], bs1);
      if (load) {
        x0 = _mm256_add_ps(_mm256_loadu_ps(ci), x0);
        x1 = _mm256_add_ps(_mm256_loadu_ps(ci + 8), x1);
      }
      _mm256_storeu_ps(ci, x0);
      _mm256_storeu_ps(ci + 8, x1);
    }
    return;
  }
  float tile[A2_MR * A2_NR] __attribute__((aligned(32)));
  for (int i = 0; i < A2_MR; i++) {
    _mm256_store_ps(tile + i * A2_NR, c0[i]);
    _mm256_store_ps(tile + i * A2_NR + 8, c1[i]);
  }
  store_tile(tile, A2_NR, C, ldc, mr, nr, load, bias);
}

/* ---- AVX-512: MR×32 tiles, MR = 8, 12 or 14, in 2·MR zmm accumulators ----
 * Per k step: two 16-float loads of the B panel, MR broadcasts of A, 2·MR FMAs. The tile's
 * height is a choice per CPU (TEZGAH_MM_TILE, tz_mm_pick): a core with two 512-bit FMA units
 * and 4-cycle FMA latency needs >= 8 FMA chains in flight and gains from the better FMA : load
 * ratio of a taller tile (12×32: 24 FMAs per 14 loads, against 16 per 10 for 8×32); a core that
 * runs a zmm FMA as two 256-bit halves (Zen 4) is saturated by fewer. Every height computes
 * each element the same way (file comment): the same bits. The accumulators are named, not
 * an array (see ukernel_avx2), generated by the row lists below. */
#define A5_ROWS8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define A5_ROWS12(X) A5_ROWS8(X) X(8) X(9) X(10) X(11)
#define A5_ROWS14(X) A5_ROWS12(X) X(12) X(13)
#define A5_DECL(i) __m512 c##i##_0 = _mm512_setzero_ps(), c##i##_1 = _mm512_setzero_ps();
#define A5_FMA(i)                                 \
  ai = _mm512_set1_ps(ak[i]);                     \
  c##i##_0 = _mm512_fmadd_ps(ai, b0, c##i##_0);   \
  c##i##_1 = _mm512_fmadd_ps(ai, b1, c##i##_1);
#define A5_STORE(i)                                                     \
  {                                                                     \
    float *ci = C + (size_t)(i) * ldc;                                  \
    __m512 x0 = _mm512_add_ps(c##i##_0, bs0), x1 = _mm512_add_ps(c##i##_1, bs1); \
    if (load) {                                                         \
      x0 = _mm512_add_ps(_mm512_loadu_ps(ci), x0);                      \
      x1 = _mm512_add_ps(_mm512_loadu_ps(ci + 16), x1);                 \
    }                                                                   \
    _mm512_storeu_ps(ci, x0);                                           \
    _mm512_storeu_ps(ci + 16, x1);                                      \
  }
#define A5_SPILL(i)                                 \
  _mm512_store_ps(tile + (i) * 32, c##i##_0);       \
  _mm512_store_ps(tile + (i) * 32 + 16, c##i##_1);
/* PF: the "pf" variants first prefetch the tile's rows of C (two lines each), so that C's
 * loads in the epilogue (load = 1: the weight gradients, and every KC slice after the first)
 * do not each wait on memory when C is larger than the caches, as in BLIS's kernels. */
#define A5_PREF(i) _mm_prefetch((const char *)(C + (size_t)(i) * ldc), _MM_HINT_T0);              \
  _mm_prefetch((const char *)(C + (size_t)(i) * ldc + 16), _MM_HINT_T0);
#define A5_KERNEL(MR, ROWS, PF, SUF)                                                           \
  __attribute__((target("avx512f"))) static void ukernel_avx512_##MR##x32##SUF(                \
      int kc, const float *a, const float *b, float *C, size_t ldc, int mr, int nr, int load,  \
      const float *bias) {                                                                     \
    if (PF && mr == MR) { ROWS(A5_PREF) }                                                      \
    ROWS(A5_DECL)                                                                              \
    for (int k = 0; k < kc; k++) {                                                             \
      const float *ak = a + k * MR;                                                            \
      __m512 b0 = _mm512_load_ps(b + k * 32), b1 = _mm512_load_ps(b + k * 32 + 16), ai;        \
      ROWS(A5_FMA)                                                                             \
    }                                                                                          \
    if (mr == MR && nr == 32) {                                                                \
      __m512 bs0 = bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps();                         \
      __m512 bs1 = bias ? _mm512_loadu_ps(bias + 16) : _mm512_setzero_ps();                    \
      ROWS(A5_STORE)                                                                           \
      return;                                                                                  \
    }                                                                                          \
    float tile[MR * 32] __attribute__((aligned(64)));                                          \
    ROWS(A5_SPILL)                                                                             \
    store_tile(tile, 32, C, ldc, mr, nr, load, bias);                                          \
  }
A5_KERNEL(8, A5_ROWS8, 0, )
A5_KERNEL(12, A5_ROWS12, 0, )
A5_KERNEL(14, A5_ROWS14, 0, )
A5_KERNEL(8, A5_ROWS8, 1, pf)
A5_KERNEL(12, A5_ROWS12, 1, pf)
A5_KERNEL(14, A5_ROWS14, 1, pf)
#endif

#ifdef TZ_WASM128
/* ---- wasm SIMD128: 4×4 tile, fmaf computed exactly two lanes at a time in f64x2 ----
 * WebAssembly has no fused multiply-add; wasi-libc's fmaf (musl) is a call per element that
 * computes a·b + acc in double and checks the result, and took 3/4 of a training step. Here the
 * same computation two lanes at a time: a·b is exact in double (24 + 24 significant bits),
 * s = a·b + acc rounds once to double, and (float)s is the correctly rounded fmaf(a, b, acc)
 * unless that first rounding landed on a float halfway point (the 29 bits below float's last
 * one are 1000...0) or s lies below float's normal range (where the halfway point sits higher);
 * lanes in either case, rare, take fmaf itself. So every element is the scalar kernel's chain
 * of correctly rounded fmas, bit for bit (tests/test_wasm_node.sh compares a run under
 * TEZGAH_CPU_ISA=scalar with tolerance 0). Accumulators are doubles holding float values. */
enum { W_MR = 4, W_NR = 4 };
static void ukernel_wasm128(int kc, const float *a, const float *b, float *C, size_t ldc, int mr,
                            int nr, int load, const float *bias) {
  const v128_t low29 = wasm_i64x2_splat(0x1fffffff), half29 = wasm_i64x2_splat(0x10000000);
  const v128_t min_normal = wasm_f64x2_splat(0x1p-126), zero = wasm_f64x2_splat(0.0);
  v128_t acc[W_MR][2];
  for (int i = 0; i < W_MR; i++) acc[i][0] = acc[i][1] = zero;
  for (int k = 0; k < kc; k++) {
    const float *bk = b + (size_t)k * W_NR;
    v128_t bv = wasm_v128_load(bk);
    v128_t bd[2] = {wasm_f64x2_promote_low_f32x4(bv),
                    wasm_f64x2_promote_low_f32x4(wasm_i32x4_shuffle(bv, bv, 2, 3, 0, 1))};
    for (int i = 0; i < W_MR; i++) {
      float ai = a[k * W_MR + i];
      v128_t ad = wasm_f64x2_splat((double)ai);
      for (int h = 0; h < 2; h++) {
        v128_t s = wasm_f64x2_add(wasm_f64x2_mul(ad, bd[h]), acc[i][h]);
        v128_t halfway = wasm_i64x2_eq(wasm_v128_and(s, low29), half29);
        v128_t subnormal = wasm_v128_and(wasm_f64x2_lt(wasm_f64x2_abs(s), min_normal), wasm_f64x2_ne(s, zero));
        if (wasm_v128_any_true(wasm_v128_or(halfway, subnormal))) {
          float r0 = fmaf(ai, bk[2 * h], (float)wasm_f64x2_extract_lane(acc[i][h], 0));
          float r1 = fmaf(ai, bk[2 * h + 1], (float)wasm_f64x2_extract_lane(acc[i][h], 1));
          acc[i][h] = wasm_f64x2_make((double)r0, (double)r1);
        } else {
          acc[i][h] = wasm_f64x2_promote_low_f32x4(wasm_f32x4_demote_f64x2_zero(s));
        }
      }
    }
  }
  float tile[W_MR * W_NR];
  for (int i = 0; i < W_MR; i++)
    for (int h = 0; h < 2; h++) {
      tile[i * W_NR + 2 * h] = (float)wasm_f64x2_extract_lane(acc[i][h], 0);
      tile[i * W_NR + 2 * h + 1] = (float)wasm_f64x2_extract_lane(acc[i][h], 1);
    }
  store_tile(tile, W_NR, C, ldc, mr, nr, load, bias);
}
#endif

static const tz_mm_ukernel KERNELS[] = {
#ifdef TZ_WASM128
    {"wasm128", "4x4", W_MR, W_NR, ukernel_wasm128, pack_t_scalar},
#endif
#ifdef TZ_X86
    {"avx512", "8x32", 8, 32, ukernel_avx512_8x32, pack_t_avx2}, /* an ISA's first: its fallback */
    {"avx512", "12x32", 12, 32, ukernel_avx512_12x32, pack_t_avx2},
    {"avx512", "14x32", 14, 32, ukernel_avx512_14x32, pack_t_avx2},
    {"avx512", "8x32pf", 8, 32, ukernel_avx512_8x32pf, pack_t_avx2},
    {"avx512", "12x32pf", 12, 32, ukernel_avx512_12x32pf, pack_t_avx2},
    {"avx512", "14x32pf", 14, 32, ukernel_avx512_14x32pf, pack_t_avx2},
    {"avx2", "6x16", A2_MR, A2_NR, ukernel_avx2, pack_t_avx2},
#endif
    {"scalar", "4x8", S_MR, S_NR, ukernel_scalar, pack_t_scalar},
};

static int cpu_has(const char *isa) {
#ifdef TZ_X86
  __builtin_cpu_init();
  if (!strcmp(isa, "avx512")) return __builtin_cpu_supports("avx512f");
  if (!strcmp(isa, "avx2")) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
#ifdef TZ_WASM128
  if (!strcmp(isa, "wasm128")) return 1; /* compiled with -msimd128: the engine runs it or refuses the module */
#endif
  return !strcmp(isa, "scalar");
}

/* The default tile of an ISA with several (avx512) on this CPU, or NULL for the
 * ISA's first entry. Per vendor because the two kinds of x86 core differ in what saturates them
 * (the AVX-512 comment above); chosen from bench_matmul runs at the model's shapes
 * (scripts/device_cpu17.sh on the device's Intel Xeon, the same here on the AMD EPYC dev VM;
 * docs/PERF.md). */
static const char *default_tile(const char *isa) {
#ifdef TZ_X86
  __builtin_cpu_init();
  /* Intel (the device host's Xeon, 2026-12-02 14:42 UTC, bench_matmul at GPT-2 L4 C256 shapes):
   * 12x32pf 255 GFLOP/s on 2 threads (76 % of peak) vs 224 for 8x32pf and 192 for 14x32; 104 vs
   * 100 for 8x32 on 1; 2-core training 1,676 vs 1,455 tokens/s; on 16 threads 910 vs 1,018 for
   * 8x32pf in that call (a noisy one: its FMA probe read 1,392 of 2,059), training the same. */
  if (!strcmp(isa, "avx512") && __builtin_cpu_is("intel")) return "12x32pf";
  if (!strcmp(isa, "avx512") && __builtin_cpu_is("amd")) return "8x32";
#endif
  (void)isa;
  return NULL;
}

/* The widest kernel this CPU runs, or the one TEZGAH_CPU_ISA names (avx512 | avx2 | scalar:
 * tests run every kernel on one machine that way); of that ISA's register tiles, the one
 * TEZGAH_MM_TILE names ("MRxNR", avx512: 8x32, 12x32, 14x32, each also with "pf", prefetching
 * C; avx2 6x16; scalar 4x8), else
 * this CPU's default (default_tile). The tile never changes a result's bits (file comment).
 * NULL with tz_err() when the named ISA or tile is unknown or this CPU lacks its instructions. */
const tz_mm_ukernel *tz_mm_pick(void) {
  const char *want = getenv("TEZGAH_CPU_ISA");
  int n = (int)(sizeof KERNELS / sizeof KERNELS[0]), pick = -1;
  for (int i = 0; i < n && pick < 0; i++) {
    if (want && *want && strcmp(want, KERNELS[i].name)) continue;
    if (cpu_has(KERNELS[i].name)) pick = i;
    else if (want && *want) {
      tz_err("TEZGAH_CPU_ISA=%s: this CPU lacks the instructions of that kernel", want);
      return NULL;
    }
  }
  if (pick < 0 && want && *want) {
    tz_err("TEZGAH_CPU_ISA='%s' is not one of avx512, avx2, scalar", want);
    return NULL;
  }
  if (pick < 0) pick = n - 1;
  const char *tile = getenv("TEZGAH_MM_TILE"), *named = tile && *tile ? tile : NULL;
  if (!named) tile = default_tile(KERNELS[pick].name);
  if (!tile) return &KERNELS[pick];
  for (int i = pick; i < n && !strcmp(KERNELS[i].name, KERNELS[pick].name); i++)
    if (!strcmp(KERNELS[i].tile, tile)) return &KERNELS[i];
  if (!named) return &KERNELS[pick]; /* a stale default: the ISA's first tile */
  char list[96] = "";
  for (int i = pick; i < n && !strcmp(KERNELS[i].name, KERNELS[pick].name); i++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i > pick ? ", " : "",
             KERNELS[i].tile);
  tz_err("TEZGAH_MM_TILE='%s' is not a tile of the %s GEMM kernel (%s)", named, KERNELS[pick].name,
         list);
  return NULL;
}
