/* WebGPU backend: flash attention forward and backward on subgroup matrices (f16 × f16 → f32
 * 16×16×16: tensor cores through Vulkan cooperative matrices on NVIDIA), src/kernels/
 * attention_sgmat/. Chosen by wg_attention_fwd / wg_attention_bwd (webgpu_ops_attn.c) for the
 * training form (Tq == Tk, q_pos0 0) with head_dim 64 or 128, when asked for (below), where the adapter runs the
 * subgroup-matrix matmul (c->sgmat: f16 precision, an f16 × f16 → f32 16×16×16 configuration,
 * ShaderF16, one subgroup size) and offers Subgroups (the softmax's row reductions shuffle);
 * everything else keeps the fp32 kernels (attention_fa.wgsl, attention.wgsl).
 *
 * Data flow, forward: fa_sg_pack makes compact f16 copies of q, k, v ([B, Tp, heads·head_dim],
 * zero rows from T up to Tp = T rounded up to 64) in the staging buffer (wg_stage), except where
 * the staged kernels read the fp32 q, k, v themselves (sg_f32in, opt-in: TEZGAH_WEBGPU_ATTN_SG_F32IN=1;
 * so the backward too); fa_sg_fwd writes out (f16 where the backend keeps the attention output in f16, c->act16, else fp32) and
 * lse. Backward: the same copies, fa_sg_prep (D = rowsum(dout ∘ out) into the scratch and dout's
 * f16 copy), then per chunk of sequences fa_sg_dkdv (dk, dv; the partial dq of every (key
 * block, query tile) into the scratch after D) and fa_sg_dqsum (dq, a fixed order).
 * Two forms of the forward and dk/dv kernels: staged (fa_sg_fwd_st, fa_sg_dkdv_st: the operand
 * tiles loaded once per workgroup into workgroup memory with 16-byte loads, then read by the
 * subgroups; where their tiles fit) and direct (fa_sg_fwd, fa_sg_dkdv: every subgroup loads its
 * matrices from the storage buffer), both with the same inputs, outputs and dq-part layout;
 * TEZGAH_WEBGPU_ATTN_SG_STAGE picks (sg_stage).
 *
 * Default where the adapter runs them and they are faster than the fp32 flash kernels
 * (head_dim 64 and 128 on the H200: sg_faster); TEZGAH_WEBGPU_ATTN_SGMAT=1 forces them for every shape
 * they take, =0 never (sg_use says how); TEZGAH_WEBGPU_ATTN=fallback forces the general kernels
 * as before. The partial dq sums follow TEZGAH_WEBGPU_ATTN_DQ_KB as the fp32
 * fused backward's do.
 *
 * f16 activations (c->act_f16, be->act = TZ_F16: q, k, v in the fused f16 qkv, dout, and dq, dk,
 * dv in the fused f16 dqkv), natively: fa_sg_pack's f16 entry points (main_h, qkv8h) copy the f16
 * q, k, v into the padded compact layout (a relayout, no conversion: the kernels' operands are the
 * same f16 values the fp32 path makes from fp32 inputs rounded to f16), fa_sg_prep reads the f16
 * dout (DT), the dK/dV kernels store dk, dv as f16 (DKT, cvk: sg_dkt) and fa_sg_dqsum dq (DQT,
 * cvq), rounded once from their fp32 sums; the written-out dK/dV's dq partial sums are f16 too
 * where the adapter has an f16 accumulator (sg_dq16, TEZGAH_WEBGPU_ATTN_DQ16); F32IN is off (it
 * reads fp32 q, k, v). Where T is a
 * multiple of SG_PAD too (Tp == T: the copies would have no zero rows) and the layout is aligned,
 * the written-out kernels (fa_sg_fwd_wo, fa_sg_dkdv_wo) read q, k, v in the qkv and dO in dout
 * themselves, with their row strides (prefix QRS, KRS), and fa_sg_prep computes D only: no packs,
 * no dout16, the same results bit for bit for finite dO (the copy clamps ±inf to ±65504; sg_nopack;
 * TEZGAH_WEBGPU_ATTN_NOPACK=0: the copies). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/webgpu/webgpu_internal.h"

#define SG_PAD 64 /* Tp: T rounded up to this (a multiple of every kernel's 16·NSG-row block) */

/* TEZGAH_WEBGPU_ATTN_SGMAT_EMU=1 (tests): run the kernels with a software stand-in for subgroup
 * matrices (wg_attn_sg_emulate) on any adapter with ShaderF16, e.g. lavapipe, to check their
 * indexing, masking, barriers and data flow against the CPU where no adapter has the feature. */
static int sg_emu(void) { return env_int("TEZGAH_WEBGPU_ATTN_SGMAT_EMU", 0) != 0; }
/* lanes per subgroup the kernels are built for: the adapter's one size; 32 when emulated */
static uint32_t sg_lanes(wg_ctx *c) { return sg_emu() ? 32 : c->sg_size; }

/* workgroup memory of a kernel with nsg subgroups (their s_, p_ / pT_, dsT_, ls_, dd_, and the
 * emulation's exchange array), bytes: the direct kernels (fa_sg_fwd, fa_sg_dkdv) */
static size_t sg_smem(int bwd, int nsg, uint32_t lanes) {
  size_t n = 16 * (size_t)nsg, s = n * (n + 4) * 4, p = n * (n + 8) * 2;
  return (bwd ? s + 2 * p + 2 * n * 4 : s + p) + (sg_emu() ? nsg * lanes * 4 : 0);
}
/* subgroups per workgroup of a kernel: 4 (64-row blocks) where the workgroup memory allows, else
 * 2 (32-row blocks; the emulation on lavapipe's 32 KB); TEZGAH_WEBGPU_ATTN_SG_NSG=2|4 asks */
static int sg_nsg(wg_ctx *c, int bwd) {
  int n = env_int("TEZGAH_WEBGPU_ATTN_SG_NSG", 4) == 2 ? 2 : 4;
  uint32_t lanes = sg_lanes(c);
  for (; n >= 2; n /= 2)
    if (sg_smem(bwd, n, lanes) <= c->lim.maxComputeWorkgroupStorageSize &&
        (uint32_t)n * lanes <= c->lim.maxComputeInvocationsPerWorkgroup)
      return n;
  return 0;
}

/* Which kernels are staged (fa_sg_fwd_st, fa_sg_dkdv_st: operand tiles in workgroup memory,
 * 16-byte global loads) rather than direct (every subgroup loads its matrices from the storage
 * buffer): TEZGAH_WEBGPU_ATTN_SG_STAGE=1 both (the default: on the H200 the staged dK/dV took
 * 1.80 ms vs the direct 3.34 at B16 T1024 head_dim 64, and test_attention_sgmat passed it
 * there; its software stand-in does not compile in reasonable time on lavapipe, so ctest's
 * stand-in entries pick 2 or 0), 2 the forward only, 3 the backward only, 0 neither. */
/* The staged kernels' element-wise passes (softmax, P, dS between the matrix products) in their
 * bank-conflict-free order (const EWF; fa_sg_fwd_st / fa_sg_dkdv_st say which order):
 * TEZGAH_WEBGPU_ATTN_SG_EWF=1 (the default), 0 round 1's (each lane CPL consecutive columns:
 * 4-way workgroup-memory bank conflicts on 32 lanes). Same results, bit for bit. */
static int sg_ewf(void) { return env_int("TEZGAH_WEBGPU_ATTN_SG_EWF", 1) != 0; }
/* The staged one-pass forward's output accumulator (fa_sg_fwd_st.wgsl main1, const LAZY):
 * TEZGAH_WEBGPU_ATTN_SG_LAZY=1 (the default) keeps it in subgroup matrices and rescales them only
 * when a row's running maximum grows by more than e^8 (a rare pass through workgroup memory);
 * 0 round 2's form (every key tile's P·V stored to workgroup memory and added, rescaled, into
 * registers: one more barrier and a scalar pass per tile); 2 (tests) rescales whenever a row's
 * maximum grows at all, so that random inputs take the rare path too. Same results up to
 * rounding. The threshold in nats (const LTH), or -1 for off. */
static double sg_lazy(void) {
  int v = env_int("TEZGAH_WEBGPU_ATTN_SG_LAZY", 1);
  return v == 0 ? -1.0 : v == 2 ? 0.0 : 8.0;
}
/* The staged kernels' fp32 operands (const F32IN; fa_sg_fwd_st.wgsl says how):
 * TEZGAH_WEBGPU_ATTN_SG_F32IN=1 (opt-in) reads q, k, v straight from the fp32 tensors and
 * converts them while staging the tiles, so the three fa_sg_pack passes per forward and per
 * backward ("attention_to_f16": 0.20 ms per layer pair) go; same f16 values, same results bit for
 * bit. Not the default: on the H200 (2026-12-03 04:53) the forward took 0.873 ms per layer with it
 * against 0.634 with the packs (reading fp32 in the kernel costs more than the separate pass),
 * training 144,857 vs 145,764 tokens/s. 0 (the default): the packs, then the f16 copies. Where
 * sg_f32in_ok declines (the layout), the packs run. */
/* The staged dK/dV's element-wise passes with their scales folded (const EWX, fa_sg_dkdv_st.wgsl:
 * exp2 of one fma for P, the softmax scale taken into P's register copy for dS; 2 multiplies per
 * entry fewer, the same up to rounding): TEZGAH_WEBGPU_ATTN_SG_EWX=1 (the default), 0 round 3's. */
static int sg_ewx(void) { return env_int("TEZGAH_WEBGPU_ATTN_SG_EWX", 1) != 0; }
static int sg_f32in(void) { return env_int("TEZGAH_WEBGPU_ATTN_SG_F32IN", 0) != 0; }
/* TEZGAH_WEBGPU_ATTN_SG_F32IN=2 (tuning): the same with the conversion at the loads (const F32L:
 * the prefetch registers hold halves, half as many, rather than floats) */
static const char *sg_f32l(void) { return env_int("TEZGAH_WEBGPU_ATTN_SG_F32IN", 0) == 2 ? "true" : "false"; }
/* Whether q, k, v can be read as the F32IN kernels do: one buffer, q first (xin's argument
 * starts at q), every offset and row stride a multiple of 16 bytes (vec4<f32> loads). *bytes:
 * the argument's extent from q's offset. */
static int sg_f32in_ok(tz_slice q, tz_slice k, tz_slice v, int B, int T, int C, int ckv, int qs, int kvs, size_t *bytes) {
  if (q.buf != k.buf || q.buf != v.buf || k.off < q.off || v.off < q.off) return 0;
  if (q.off % 16 || k.off % 16 || v.off % 16 || qs % 4 || kvs % 4) return 0;
  size_t eq = q.off + F4(((size_t)B * T - 1) * qs + C), ek = k.off + F4(((size_t)B * T - 1) * kvs + ckv);
  size_t ev = v.off + F4(((size_t)B * T - 1) * kvs + ckv), e = eq > ek ? eq : ek;
  *bytes = (e > ev ? e : ev) - q.off;
  return 1;
}
static int sg_stage(int bwd) {
  int v = env_int("TEZGAH_WEBGPU_ATTN_SG_STAGE", 1);
  return v == 1 || (v == 2 && !bwd) || (v == 3 && bwd);
}
/* workgroup memory of a staged kernel, bytes: forward s_ (f32 BR × (BR + 4)), p_ (f16
 * BR × (BR + 8)), kv_ (BR rows of head_dim / 8 + kpad vec4), rs_ (4); backward kb_ (BC rows,
 * 2·BC with vst: V after K), qt_, dt_ (32 rows each, 64 with db), s_ (f32 BC × 36), pds_ (f16
 * BC × 40); plus the emulation's exchange array */
static size_t sg_smem_st(int bwd, int nsg, uint32_t lanes, int hd, int kpad, int vst, int db) {
  size_t n = 16 * (size_t)nsg, row = (size_t)(hd / 8 + kpad) * 16, e = sg_emu() ? nsg * lanes * 4 : 0;
  if (!bwd) return n * (n + 4) * 4 + n * (n + 8) * 2 + n * row + 4 + e;
  return n * row * (vst ? 2 : 1) + (db ? 4 : 2) * 32 * row + n * 36 * 4 + n * 40 * 2 + e;
}
/* The staged kernels written out (fa_sg_fwd_wo.wgsl, fa_sg_dkdv_wo.wgsl: every subgroup matrix,
 * prefetch register and (dK/dV) element-wise value its own variable, no arrays indexed in loops,
 * which NVIDIA's driver keeps in local memory): TEZGAH_WEBGPU_ATTN_SG_WO=1 (the default), 0
 * fa_sg_fwd_st / fa_sg_dkdv_st (main's kernels before; kept for F32IN, the ablations and A/B).
 * The forward's is the one-pass form with the lazy rescale (the two-pass form, head_dim 128's
 * default, LAZY=0 and F32IN run fa_sg_fwd_st); the dK/dV's is fa_sg_dkdv_st at its head_dim 64
 * defaults: V's left matrices in registers, f16 copies, EWF, EWX (F32IN or an ablation run
 * fa_sg_dkdv_st). Same results up to the summation order (the same operations, but the driver
 * may contract or reorder differently). H200, 2026-12-03 07:35, bench_webgpu attention 16 1024,
 * ms per layer: dK/dV 1.638 -> 1.303 (head_dim 64), 1.353 -> 0.954 (128); the forward 0.639 ->
 * 0.885 at 4 subgroups but 0.476 at 2 (sg_nsg_pref); GPT-2 124M f16 B16 T1024 151,938 -> 155,156
 * tokens/s with both written out at 4 subgroups, the same losses over 10 steps. */
static int sg_wo(void) { return env_int("TEZGAH_WEBGPU_ATTN_SG_WO", 1) != 0; }
/* A staged kernel's preferred subgroups per workgroup (2 or 4, or 1 below; sg_nsg_st falls back to
 * 2 where 4 does not fit): TEZGAH_WEBGPU_ATTN_SG_FWD_NSG=1|2|4 the forward's, TEZGAH_WEBGPU_ATTN_SG_NSG=2|4
 * both kernels' (the forward's where FWD_NSG is unset); unset: 2 for the written-out forward
 * (wo_fwd: 0.476 ms vs 0.885 at 4 on the H200, the 07:35 call above: half the rows per
 * workgroup, twice the workgroups), else 4 (the dK/dV: 1.303 ms at 4 vs 2.025 at 2, and its dq
 * sum doubles with the key blocks; fa_sg_fwd_st keeps main's 4: its main1 at 2 is not measured,
 * scripts/device_wgatt4.sh's oldf2 row). */
static int sg_nsg_pref(int bwd, int wo_fwd) {
  int f = bwd ? 0 : env_int("TEZGAH_WEBGPU_ATTN_SG_FWD_NSG", 0), n = env_int("TEZGAH_WEBGPU_ATTN_SG_NSG", 0);
  /* FWD_NSG=1 (the written-out forward only; not measured, an A/B for the H200): one subgroup,
   * 16 query rows and 16-key tiles a workgroup. Why try it: 2 subgroups ran the forward in 0.476
   * ms a layer where 4 took 0.885 (above: the fewer rows a workgroup, the faster so far), and a
   * workgroup of one subgroup makes its four barriers a tile subgroup-wide */
  if (f == 1 && wo_fwd) return 1;
  if (f) return f == 2 ? 2 : 4;
  if (n) return n == 2 ? 2 : 4;
  return wo_fwd ? 2 : 4;
}
/* A staged kernel's subgroups per workgroup, row padding (*kpad, vec4) and, backward, whether
 * the Q / dO tiles are double-buffered (*db, fa_sg_dkdv_st.wgsl's DB: one barrier less per tile)
 * and whether V is staged too (*vst), in this order of preference: `pref` subgroups (sg_nsg_pref)
 * before 2 (more work per barrier), the 16-byte pad (bank conflicts without it), double buffers,
 * V staged (TEZGAH_WEBGPU_ATTN_SG_VST=0 keeps V in registers; TEZGAH_WEBGPU_ATTN_SG_DB=0 single
 * buffers, round 2's form; the written-out dK/dV always holds V in registers): head_dim 64 on the
 * H200's 48 KB gets 4 subgroups, the pad, double buffers and V in registers; 128 single buffers
 * and V in registers; lavapipe's 32 KB (the emulation) 2 subgroups except the dK/dV at 64 (4,
 * no pad, single buffers). 0 where none fits (the call then runs the direct kernel). */
static int sg_nsg_st(wg_ctx *c, int bwd, int pref, int hd, int *kpad, int *vst, int *db) {
  int n = pref, v0 = bwd && env_int("TEZGAH_WEBGPU_ATTN_SG_VST", 1) != 0 && !sg_wo();
  int d0 = bwd && env_int("TEZGAH_WEBGPU_ATTN_SG_DB", 1) != 0;
  uint32_t lanes = sg_lanes(c);
  for (; n >= (pref == 1 ? 1 : 2); n /= 2)
    for (int k = 1; k >= 0; k--)
      for (int d = d0; d >= 0; d--)
        for (int v = v0; v >= 0; v--)
          if (sg_smem_st(bwd, n, lanes, hd, k, v, d) <= c->lim.maxComputeWorkgroupStorageSize &&
              (uint32_t)n * lanes <= c->lim.maxComputeInvocationsPerWorkgroup) {
            *kpad = k, *vst = v, *db = d;
            return n;
          }
  return 0;
}

const char *wg_attn_sg_why(wg_ctx *c) {
  if (sg_emu()) return c->has_f16 ? NULL : "no ShaderF16 (TEZGAH_WEBGPU_ATTN_SGMAT_EMU=1)";
  if (!c->sgmat) return c->sg_why ? c->sg_why : "no subgroup-matrix matmul";
  if (!c->has_subgroups) return "no Subgroups";
  if (c->sg_size != 16 && c->sg_size != 32 && c->sg_size != 64) return "subgroup size not 16, 32 or 64";
  if (!sg_nsg(c, 0) || !sg_nsg(c, 1)) return "too little workgroup memory or too few invocations";
  return NULL;
}

/* The emulation's kernel source (TEZGAH_WEBGPU_ATTN_SGMAT_EMU; webgpu_pipe.c's module() calls
 * this for a prefix holding "// sgmat emulation"): the subgroup-matrix and subgroup directives
 * dropped; Left / Right / Res become SM (a whole 16 × 16 f32 matrix in every invocation of the
 * subgroup, so a matrix is the same value in all of them, as a subgroup matrix is); loads,
 * stores (every invocation writes the same values) and multiply-accumulate become functions
 * over SM, generated per array the file uses; subgroupShuffleXor(y, o) becomes an exchange
 * through workgroup memory between invocations lid and lid ^ o (the callers are in uniform
 * control flow). Products of f16 values are exact in f32, so the arithmetic is the hardware's up
 * to the summation order. f16 result matrices (subgroup_matrix_result<f16, 16, 16>: the dK/dV's
 * f16 dq parts, DQ16) become SMH (values held as f32, each one an f16 value); a
 * multiply-accumulate into one must carry "// f16 acc" on its line and becomes sm_mmah: the 16
 * products added to the accumulator in f32, then rounded to f16 (f16s: ±inf beyond f16's range,
 * NaN kept), once per multiply-accumulate: at least the roundings of the hardware's f16
 * accumulator, which may round more often within one (an unmarked one into SMH fails to compile:
 * sm_mma takes SM); its store to an f16 array (scrh) writes those f16 values. malloc'ed. */
char *wg_attn_sg_emulate(const char *src) {
  static const char *const rep[][2] = {
      {"enable subgroups;\n", ""},
      {"enable chromium_experimental_subgroup_matrix;\n", ""},
      {"diagnostic(off, chromium.subgroup_matrix_uniformity);\n", ""},
      {"subgroup_matrix_left<f16, 16, 16>", "SM"},
      {"subgroup_matrix_right<f16, 16, 16>", "SM"},
      {"subgroup_matrix_result<f32, 16, 16>", "SM"},
      {"subgroup_matrix_result<f16, 16, 16>", "SMH"},
      {"subgroupMatrixMultiplyAccumulate(", "sm_mma("},
      {"subgroupShuffleXor(y, o)", "sm_shfx(y, o, lid)"},
      {"subgroupMatrixLoad<Left, row_major>(&", "sm_ld_r_"},
      {"subgroupMatrixLoad<Left, col_major>(&", "sm_ld_c_"},
      {"subgroupMatrixLoad<Right, row_major>(&", "sm_ld_r_"},
      {"subgroupMatrixLoad<Right, col_major>(&", "sm_ld_c_"},
      {"subgroupMatrixLoad<Res, row_major>(&", "sm_ld_r_"},
      {"subgroupMatrixStore<row_major>(&", "sm_st_"},
  };
  size_t cap = strlen(src) * 2 + 8192, n = 0;
  char *o = tz_malloc(cap);
  for (const char *q = src; *q;) {
    int hit = 0;
    for (size_t i = 0; i < sizeof rep / sizeof *rep && !hit; i++) {
      size_t k = strlen(rep[i][0]);
      if (!strncmp(q, rep[i][0], k)) {
        const char *to = rep[i][1], *eol = strchr(q, '\n');
        /* an f16-result multiply-accumulate ("// f16 acc" on its line) */
        if (!strcmp(to, "sm_mma(")) {
          const char *f = strstr(q, "// f16 acc");
          if (f && (!eol || f < eol)) to = "sm_mmah(";
        }
        n += (size_t)snprintf(o + n, cap - n, "%s", to);
        q += k, hit = 1;
        if (!strncmp(rep[i][1], "sm_ld_", 6) || !strncmp(rep[i][1], "sm_st_", 6)) { /* "name, " -> "name(" */
          while (*q && *q != ',') o[n++] = *q++;
          q += 2;
          o[n++] = '(';
        }
      }
    }
    if (!hit) o[n++] = *q++;
    TZ_ASSERT(n + 64 < cap);
  }
  o[n] = 0;
  /* the library, after the host's prefix (it needs NT): per f16 array a load, per stored array a
   * store (below) */
  /* (f16s: the arrays loaded element by element, f16 or, s_ (fa_sg_fwd_st's LAZY), f32) */
  static const char *const f16s[] = {"x16", "p_", "pT_", "dsT_", "pds_", "s_"};
  /* the staged kernels' tiles of vec4<u32> (8 halves): offsets and strides count vec4 */
  static const char *const v4s[] = {"kv_", "kb_", "qt_", "dt_"};
  char lib[16384];
  size_t m = (size_t)snprintf(lib, sizeof lib,
                              "struct SM { v: array<f32, 256> }\n"
                              "fn sm_mma(a: SM, b: SM, c: SM) -> SM {\n  var r = c;\n"
                              "  for (var i = 0u; i < 16u; i++) { for (var j = 0u; j < 16u; j++) { var s = r.v[i * 16u + j];\n"
                              "    for (var k = 0u; k < 16u; k++) { s = fma(a.v[i * 16u + k], b.v[k * 16u + j], s); }\n"
                              "    r.v[i * 16u + j] = s; } }\n  return r;\n}\n"
                              "var<workgroup> sm_x: array<f32, NT>;\n"
                              "fn sm_shfx(y: f32, o: u32, lid: u32) -> f32 {\n  workgroupBarrier();\n  sm_x[lid] = y;\n"
                              "  workgroupBarrier();\n  return sm_x[lid ^ o];\n}\n");
  /* the f16 result type, only where used (the other kernels' sources stay as they were) */
  if (strstr(o, "SMH"))
    m += (size_t)snprintf(lib + m, sizeof lib - m,
                          "struct SMH { v: array<f32, 256> }\n"
                          "fn sm_mmah(a: SM, b: SM, c: SMH) -> SMH {\n  var r = c;\n"
                          "  for (var i = 0u; i < 16u; i++) { for (var j = 0u; j < 16u; j++) { var s = r.v[i * 16u + j];\n"
                          "    for (var k = 0u; k < 16u; k++) { s = fma(a.v[i * 16u + k], b.v[k * 16u + j], s); }\n"
                          "    r.v[i * 16u + j] = f32(f16s(s)); } }\n  return r;\n}\n");
  for (size_t i = 0; i < sizeof v4s / sizeof *v4s; i++) {
    char key[16];
    snprintf(key, sizeof key, "sm_ld_r_%s(", v4s[i]);
    if (!strstr(o, key) && !(snprintf(key, sizeof key, "sm_ld_c_%s(", v4s[i]), strstr(o, key))) continue;
    /* line a (a row, or a column when column-major) is 2 vec4 at off + a·ld: halves q·8 .. +7
     * of it, with static component access (dynamic vector indexing compiles slowly in lavapipe) */
    for (int cm = 0; cm < 2; cm++)
      m += (size_t)snprintf(lib + m, sizeof lib - m,
                            "fn sm_ld_%c_%s(off: u32, ld: u32) -> SM {\n  var r: SM;\n"
                            "  for (var a = 0u; a < 16u; a++) { for (var q = 0u; q < 2u; q++) {\n"
                            "    let w = %s[off + a * ld + q];\n"
                            "    let h = array<vec2<f32>, 4>(unpack2x16float(w.x), unpack2x16float(w.y), unpack2x16float(w.z), unpack2x16float(w.w));\n"
                            "    for (var e = 0u; e < 8u; e++) { r.v[%s] = h[e / 2u][e %% 2u]; } } }\n"
                            "  return r;\n}\n",
                            cm ? 'c' : 'r', v4s[i], v4s[i], cm ? "(q * 8u + e) * 16u + a" : "a * 16u + q * 8u + e");
  }
  for (size_t i = 0; i < sizeof f16s / sizeof *f16s; i++) {
    char key[16];
    snprintf(key, sizeof key, "sm_ld_r_%s(", f16s[i]);
    if (!strstr(o, key) && !(snprintf(key, sizeof key, "sm_ld_c_%s(", f16s[i]), strstr(o, key))) continue;
    for (int cm = 0; cm < 2; cm++)
      m += (size_t)snprintf(lib + m, sizeof lib - m,
                            "fn sm_ld_%c_%s(off: u32, ld: u32) -> SM {\n  var r: SM;\n"
                            "  for (var i = 0u; i < 16u; i++) { for (var j = 0u; j < 16u; j++) {\n"
                            "    r.v[i * 16u + j] = f32(%s[off + %s]); } }\n  return r;\n}\n",
                            cm ? 'c' : 'r', f16s[i], f16s[i], cm ? "j * ld + i" : "i * ld + j");
  }
  /* the stores: f32 arrays from SM, f16 arrays (scrh: f16 dq parts) from SMH, rounded to f16 */
  static const struct { const char *arr, *mt, *cv; } sts[] = {{"s_", "SM", ""}, {"scr", "SM", ""}, {"scrh", "SMH", "f16"}};
  for (size_t i = 0; i < sizeof sts / sizeof *sts; i++) {
    char key[16];
    snprintf(key, sizeof key, "sm_st_%s(", sts[i].arr);
    if (!strstr(o, key)) continue;
    m += (size_t)snprintf(lib + m, sizeof lib - m,
                          "fn sm_st_%s(off: u32, a: %s, ld: u32) {\n"
                          "  for (var i = 0u; i < 16u; i++) { for (var j = 0u; j < 16u; j++) {\n"
                          "    %s[off + i * ld + j] = %s(a.v[i * 16u + j]); } }\n}\n",
                          sts[i].arr, sts[i].mt, sts[i].arr, sts[i].cv);
  }
  TZ_ASSERT(m + 1 < sizeof lib);
  /* after the directives */
  const char *d = strstr(o, "// end of directives\n");
  TZ_ASSERT(d);
  size_t at = (size_t)(d - o) + strlen("// end of directives\n");
  char *r = tz_malloc(n + m + 64);
  snprintf(r, n + m + 64, "%.*s%s%s", (int)at, o, lib, o + at);
  free(o);
  return r;
}

/* head_dims whose training form runs on the subgroup-matrix kernels by default: where the H200
 * measured them faster than the fp32 flash kernels (bench_webgpu attention 16 1024, ms per
 * forward + backward pair of one layer): head_dim 64 staged 3.40 (one-pass forward, staged dK/dV)
 * vs fp32 flash 4.06 (docs/PERF.md, 2026-12-02 15:21-15:35 UTC); head_dim 128 (lead's call
 * 2026-12-02 ~20:15 UTC; scripts/device_webgpu_f16speed.sh times it now) staged with the two-pass
 * forward 2.73, with the one-pass forward 2.83, vs fp32 flash 4.0, so 128 runs them too, with the
 * two-pass forward (sg_onepass). TEZGAH_WEBGPU_ATTN_SGMAT=1 / 0 force them on / off. */
static int sg_faster(int hd) { return hd == 64 || hd == 128; }

/* The forward's form: one-pass (entry point main1: output rows in registers; head_dim 64 staged
 * 0.75 ms vs the two-pass form's 0.87 on the H200 at B16 T1024, docs/PERF.md) or two-pass (main;
 * head_dim 128: 2.73 ms per forward + backward pair vs 2.83 with the one-pass form, the 20:15
 * call; its dK/dV keeps V in registers either way: K and V staged do not fit 48 KB at 128).
 * TEZGAH_WEBGPU_ATTN_SG_ONEPASS=1 / 0 forces one form for every head_dim. */
static int sg_onepass(int hd) {
  const char *e = getenv("TEZGAH_WEBGPU_ATTN_SG_ONEPASS");
  if (e && *e) return strcmp(e, "0") != 0;
  return hd != 128;
}

/* Whether a (Tq, Tk, q_pos0, head_dim) call is a shape the kernels take: NULL, else why not. */
static const char *sg_shape_why(int Tq, int Tk, int q_pos0, int hd) {
  if (!(Tq == Tk && q_pos0 == 0)) return "not the training form (Tq == Tk, q_pos0 0)";
  if (hd != 64 && hd != 128) return "head_dim not 64 or 128";
  return NULL;
}

/* The choice (TEZGAH_WEBGPU_ATTN_SGMAT; TEZGAH_WEBGPU_ATTN=fallback forces the general kernels):
 *   unset or "auto"  the subgroup-matrix kernels where the adapter runs them (wg_attn_sg_why),
 *                    the shape is theirs (sg_shape_why) and they are faster (sg_faster); else
 *                    the fp32 flash kernels, silently;
 *   1                forced: every call whose shape they take runs them (an adapter that cannot
 *                    is an error naming why: the tests rely on it); other shapes (head_dim 32,
 *                    decoding) fall back to the fp32 kernels, with one note on stderr per reason;
 *   0                never.
 * The forward and the backward of one layer take the same decision (same shape), so the lse the
 * backward reads is the one its forward wrote. wg_attn_sg_choice says it in words. */
static int sg_mode(void) {
  const char *e = getenv("TEZGAH_WEBGPU_ATTN_SGMAT"), *f = getenv("TEZGAH_WEBGPU_ATTN");
  if (f && !strcmp(f, "fallback")) return 0;
  if (!e || !*e || !strcmp(e, "auto")) return 2;
  return strcmp(e, "0") ? 1 : 0;
}
static int sg_use(wg_ctx *c, const char *op, int Tq, int Tk, int q_pos0, int hd) {
  int m = sg_mode();
  if (!m) return 0;
  const char *why = wg_attn_sg_why(c);
  if (m == 2) return !why && !sg_shape_why(Tq, Tk, q_pos0, hd) && sg_faster(hd);
  if (why) {
    wg_fail(c, "%s: TEZGAH_WEBGPU_ATTN_SGMAT=1 but the subgroup-matrix kernels cannot run: %s", op, why, 0, 0);
    return 0;
  }
  const char *sw = sg_shape_why(Tq, Tk, q_pos0, hd);
  if (sw) {
    static int noted[2]; /* per reason, once per process */
    int r = sw[0] == 'h';
    if (!noted[r]++)
      fprintf(stderr, "webgpu: %s: TEZGAH_WEBGPU_ATTN_SGMAT=1, but %s (%d): the fp32 flash kernels run it\n", op, sw,
              r ? hd : Tq);
    return 0;
  }
  return 1;
}
static int sg_dq16(wg_ctx *c);
const char *wg_attn_sg_choice(wg_ctx *c) {
  static char line[360];
  const char *why = wg_attn_sg_why(c);
  int m = sg_mode();
  if (why) snprintf(line, sizeof line, "attention: fp32 flash kernels (subgroup-matrix attention off: %s)", why);
  else if (m == 0)
    snprintf(line, sizeof line, "attention: fp32 flash kernels (attention on subgroup matrices available; forced off)");
  else
    snprintf(line, sizeof line,
             "attention on subgroup matrices (f16 x f16 -> f32, forward %s %s, dK/dV %s%s) for training at head_dim %s, "
             "fp32 flash kernels elsewhere",
             sg_stage(0) ? (sg_wo() ? "staged (one-pass: written out)" : "staged") : "direct",
             sg_onepass(64) == sg_onepass(128) ? (sg_onepass(64) ? "one-pass" : "two-pass")
                                               : sg_onepass(64) ? "one-pass (128: two-pass)"
                                                                : "two-pass (128: one-pass)",
             sg_stage(1) ? (sg_wo() ? "staged, written out" : "staged") : "direct",
             sg_stage(1) && sg_wo() && sg_dq16(c) ? ", dq partials f16" : "",
             m == 1 ? "64 and 128 (TEZGAH_WEBGPU_ATTN_SGMAT=1)" : "64 and 128 (faster there on the H200)");
  return line;
}

/* A call the kernels decline after sg_use (layout, binding limits): 0, an error under
 * TEZGAH_WEBGPU_ATTN_SGMAT=1. */
static int sg_decline(wg_ctx *c, const char *op, const char *why) {
  if (sg_mode() == 1)
    wg_fail(c, "%s: TEZGAH_WEBGPU_ATTN_SGMAT=1 but the subgroup-matrix kernels decline: %s", op, why, 0, 0);
  return 0;
}
/* The standalone kernels index binding i + 1 as argument i: every argument must get its own
 * binding in order (wg_bind_slots merges arguments whose aligned ranges overlap), and no
 * argument outside `wmask` (bound read-only) may share a buffer with one inside it (Dawn rejects
 * a buffer bound read-only and writable in one dispatch). */
static int sg_binds_ok(wg_ctx *c, const wg_arg *a, int n, unsigned wmask) {
  tz_buf *sb[MAX_ARGS];
  uint64_t lo[MAX_ARGS], hi[MAX_ARGS];
  int sl[MAX_ARGS];
  if (wg_bind_slots(c, a, n, sl, sb, lo, hi) != n) return 0;
  for (int i = 0; i < n; i++) {
    if (sl[i] != i) return 0;
    if (hi[i] - lo[i] / c->lim.minStorageBufferOffsetAlignment * c->lim.minStorageBufferOffsetAlignment > wg_cap_bytes(c))
      return 0;
    for (int j = 0; j < n; j++)
      if (!(wmask >> i & 1) && (wmask >> j & 1) && a[i].s.buf == a[j].s.buf) return 0;
  }
  return 1;
}

static size_t al256(size_t x) { return (x + 255) / 256 * 256; }

/* The no-pack path: whether the written-out kernels (fa_sg_fwd_wo, fa_sg_dkdv_wo; the caller
 * says they run) read q, k, v straight from the fused f16 qkv activation and dO straight from
 * dout (backward: dout present) instead of fa_sg_pack's compact padded copies and fa_sg_prep's
 * dout16. With f16 activations (c->act_f16) those copies are pure relayouts (the same f16
 * values), and where T is a multiple of SG_PAD (Tp == T) they have no zero rows either, so the
 * kernels read the same values in the same order: the same results bit for bit (for finite dO:
 * dout16 clamps ±inf to ±65504, the kernels then read the inf itself), without the
 * copy passes (H200, GPT-2 124M B16 T1024: "attention_to_f16" 24 dispatches a step, 1.04 ms;
 * fa_sg_prep's dout16 stores, half its traffic). Needs q, k, v in one buffer with k, v at or after
 * q (x16 is bound from q), q's offset, k's and v's distances from it and dout's offset multiples
 * of 16 bytes and the row strides qs, kvs of 8 halves (the kernels' vec4<u32> loads of 8 halves;
 * head_dim and the heads' column offsets are multiples of 8); dout's rows are compact (C).
 * *bytes: x16's extent from q's offset. Else 0: the packs run (also for fp32 activations, T not
 * a multiple of SG_PAD, the other kernels). TEZGAH_WEBGPU_ATTN_NOPACK=0: never (the packs as
 * before, A/B); 1 (the default) where it applies. The caller falls back to the packs where the
 * bindings do not work out (sg_binds_ok: e.g. qkv in a buffer the kernel writes). */
static long sg_ewo_calls; /* ... and with EWO (the softmax's entries written out) */
long tz_webgpu_attn_ewo_calls(void) { return sg_ewo_calls; }
static long sg_np_calls[2]; /* the calls that ran the no-pack path: forwards, backwards */
long tz_webgpu_attn_nopack_calls(int bwd) { return sg_np_calls[bwd != 0]; }
static int sg_nopack(wg_ctx *c, int T, tz_slice q, tz_slice k, tz_slice v, tz_slice dout, int B, int C, int ckv,
                     int qs, int kvs, size_t *bytes) {
  if (!env_int("TEZGAH_WEBGPU_ATTN_NOPACK", 1) || !c->act_f16 || T % SG_PAD) return 0;
  if (q.buf != k.buf || q.buf != v.buf || k.off < q.off || v.off < q.off) return 0;
  if (q.off % 16 || (k.off - q.off) % 16 || (v.off - q.off) % 16 || qs % 8 || kvs % 8 || C % 8 || ckv % 8) return 0;
  if (tz_present(dout) && dout.off % 16) return 0;
  size_t n = (size_t)B * T - 1, eq = 2 * (n * qs + C), ek = k.off - q.off + 2 * (n * kvs + ckv),
         ev = v.off - q.off + 2 * (n * kvs + ckv), e = eq > ek ? eq : ek;
  *bytes = ((e > ev ? e : ev) + 3) & ~(size_t)3;
  return 1;
}

/* dst [B, Tp, ncols] f16 = src rows (stride elements), zero past T (fa_sg_pack.wgsl; src fp32, or
 * f16 with f16 activations, c->act_f16: entry main_h) */
static void sg_pack(wg_ctx *c, tz_slice dst, tz_slice src, int B, int T, int Tp, int ncols, int stride) {
  uint32_t w[24] = {0};
  w[8] = (uint32_t)T, w[9] = (uint32_t)Tp, w[10] = (uint32_t)ncols, w[11] = (uint32_t)stride, w[12] = (uint32_t)B;
  wg_arg a[] = {A(dst, (size_t)B * Tp * ncols * 2, "x16"), wg_aa(c, src, ((size_t)B * T - 1) * stride + ncols, "q/k/v")};
  uint32_t gx, gy;
  grid1((size_t)B * Tp * ncols / 2, &gx, &gy);
  wg_run(c, "attention_to_f16", wg_pipeline(c, "fa_sg_pack", c->act_f16 ? "main_h" : "main", ""), w, 13, a, 2, gx, gy, 1);
}

/* the f16 copies' layout in the staging buffer (byte offsets): q, k, v, then dout (backward) */
typedef struct {
  size_t q, k, v, d, end;
} sg_lay;

/* The q, k, v copies into x at l's offsets: one dispatch (fa_sg_pack.wgsl's qkv8, eight columns
 * a thread) where q, k, v are consecutive column blocks of one tensor with one row stride, every
 * offset and the stride a multiple of 4 elements and every width of 8 (the model's fused qkv),
 * else three `main`
 * dispatches. The same copies bit for bit. TEZGAH_WEBGPU_ATTN_PACK8=0: always the three (A/B).
 * H200 (2026-12-04, GPT-2 124M B16 T1024): the 72 single-block packs of a step took 2.6 ms at
 * ~2.1 TB/s of real traffic; the 24 qkv8h packs 1.04 ms. Not called where sg_nopack lets the
 * written-out kernels read q, k, v in place. */
static void sg_pack_qkv(wg_ctx *c, tz_slice x, const sg_lay *l, tz_slice q, tz_slice k, tz_slice v, int B, int T,
                        int Tp, int C, int ckv, int qs, int kvs) {
  /* es: the source's element size; f16 (c->act_f16, entry qkv8h) loads eight halves at once, so
   * its row stride must be a multiple of 8 */
  size_t es = c->act_f16 ? 2 : 4;
  int one = env_int("TEZGAH_WEBGPU_ATTN_PACK8", 1) && q.buf == k.buf && k.buf == v.buf && qs == kvs &&
            k.off == q.off + (size_t)C * es && v.off == k.off + (size_t)ckv * es && q.off % 16 == 0 &&
            qs % (c->act_f16 ? 8 : 4) == 0 && C % 8 == 0 && ckv % 8 == 0 && x.off % 16 == 0 && l->q % 16 == 0 &&
            l->k % 16 == 0 && l->v % 16 == 0;
  if (!one) {
    sg_pack(c, tz_at(x, l->q), q, B, T, Tp, C, qs);
    sg_pack(c, tz_at(x, l->k), k, B, T, Tp, ckv, kvs);
    sg_pack(c, tz_at(x, l->v), v, B, T, Tp, ckv, kvs);
    return;
  }
  uint32_t w[24] = {0};
  w[8] = (uint32_t)T, w[9] = (uint32_t)Tp, w[10] = (uint32_t)C, w[11] = (uint32_t)qs, w[12] = (uint32_t)B,
  w[13] = (uint32_t)ckv, w[14] = (uint32_t)(l->q / 4), w[15] = (uint32_t)(l->k / 4), w[16] = (uint32_t)(l->v / 4);
  size_t width = (size_t)C + 2 * (size_t)ckv;
  wg_arg a[] = {A(x, l->v + (size_t)B * Tp * ckv * 2, "x16"), wg_aa(c, q, ((size_t)B * T - 1) * qs + width, "q/k/v")};
  uint32_t gx, gy;
  grid1((size_t)B * Tp * width / 8, &gx, &gy);
  wg_run(c, "attention_to_f16", wg_pipeline(c, "fa_sg_pack", c->act_f16 ? "qkv8h" : "qkv8", ""), w, 17, a, 2, gx, gy, 1);
}
static sg_lay sg_layout(int B, int Tp, int nh, int nkv, int hd, int with_dout) {
  sg_lay l;
  size_t nq = (size_t)B * Tp * nh * hd * 2, nk = (size_t)B * Tp * nkv * hd * 2;
  l.q = 0, l.k = al256(nq), l.v = l.k + al256(nk), l.d = l.v + al256(nk);
  l.end = with_dout ? l.d + al256(nq) : l.d;
  return l;
}

int wg_attn_sg_fwd(tz_backend *be, tz_slice out, tz_slice lse, tz_slice q, tz_slice k, tz_slice v, int B, int Tq,
                   int Tk, int q_pos0, int nh, int nkv, int hd, int qs, int kvs) {
  wg_ctx *c = CTX(be);
  static const char *op = "attention_fwd";
  if (!sg_use(c, op, Tq, Tk, q_pos0, hd)) return 0;
  int T = Tq, Tp = (T + SG_PAD - 1) / SG_PAD * SG_PAD, o16 = c->act16, nsg = sg_nsg(c, 0);
  if (out.off % 4) return sg_decline(c, op, "out is not 4-byte aligned");
  sg_lay l = sg_layout(B, Tp, nh, nkv, hd, 0);
  size_t C = (size_t)nh * hd, nl = (size_t)B * nh * T;
  int has_lse = tz_present(lse);
  /* the staged kernel where its tiles fit (TEZGAH_WEBGPU_ATTN_SG_STAGE; x16 is the staging
   * buffer from offset 0: 16-byte aligned); it reads q, k, v itself where it may (F32IN), else
   * binds xin to a spare slice of the staging buffer after the copies (unread) */
  int one = sg_onepass(hd), wo_want = one && sg_wo() && !sg_f32in() && sg_lazy() >= 0;
  int kpad = 0, vst = 0, db = 0, nst = sg_stage(0) ? sg_nsg_st(c, 0, sg_nsg_pref(0, wo_want), hd, &kpad, &vst, &db) : 0;
  if (nst) nsg = nst;
  size_t xb = 0;
  /* (F32IN reads fp32 q, k, v: not with f16 activations, whose packs are mere relayouts) */
  int f32in = nst && sg_f32in() && !c->act_f16 && sg_f32in_ok(q, k, v, B, T, (int)C, nkv * hd, qs, kvs, &xb);
  /* the written-out one-pass forward (sg_wo: fa_sg_fwd_wo.wgsl, main1 with LAZY on f16 operands).
   * Not where TEZGAH_WEBGPU_ATTN_SG_F32IN asks for F32IN, even where F32IN is then declined: the
   * subgroup count, chosen above, is then fa_sg_fwd_st's, and fa_sg_fwd_st runs on the copies
   * (`!f32in` is implied by wo_want). It reads q, k, v in the f16 qkv itself where sg_nopack
   * says so (np: x16 bound from q, xin to the staging buffer, unread), else the copies. */
  int wo = nst && wo_want && !f32in;
  size_t nqb = 0;
  int np = wo && sg_nopack(c, T, q, k, v, TZ_NONE, B, (int)C, nkv * hd, qs, kvs, &nqb);
  size_t xend = f32in || np ? 256 : l.end;
  wg_arg a[] = {A(out, o16 ? ((size_t)B * T * C * 2 + 3) & ~(size_t)3 : F4((size_t)B * T * C), "att out"),
                A(has_lse ? lse : TZ_NONE, F4(nl), "lse"), A(TZ_NONE, xend, "x16"), A(q, xb, "q/k/v")};
  if (xend > wg_cap_bytes(c)) return sg_decline(c, op, "the f16 copies exceed one binding");
  tz_slice x = wg_stage(be, xend + 512);
  if (!has_lse) a[1].s = wg_scratch(be, F4(nl)); /* written, not read: a place for it */
  a[2].s = x;
  /* q/k/v bound where they are (np, f32in) unless that fails (e.g. q/k/v in a buffer the kernel
   * writes): then the packs */
  int repack = 0;
  if (np) {
    a[2] = A(q, nqb, "q/k/v (f16 qkv)"), a[3] = A(x, 16, "xin (unread)");
    if (!sg_binds_ok(c, a, 4, 0x3)) np = 0, repack = 1;
  }
  if (f32in && !sg_binds_ok(c, a, 4, 0x3)) f32in = 0, repack = 1;
  if (repack) {
    xend = l.end;
    if (xend > wg_cap_bytes(c)) return sg_decline(c, op, "the f16 copies exceed one binding");
    a[2] = A(x = wg_stage(be, xend + 512), xend, "x16");
  }
  if (!f32in && !np) a[3] = A(tz_at(x, al256(xend)), 16, "xin (unread)");
  if (!sg_binds_ok(c, a, nst ? 4 : 3, 0x3)) return sg_decline(c, op, "the arguments do not get a binding each");
  if (!f32in && !np) {
    sg_pack_qkv(c, x, &l, q, k, v, B, T, Tp, (int)C, nkv * hd, qs, kvs);
  }
  sg_np_calls[0] += np;
  char pre[512];
  snprintf(pre, sizeof pre,
           "const HD: u32 = %du;\nconst SGSIZE: u32 = %uu;\nconst NSG: u32 = %du;\nconst OUT16 = %s;\nalias OT = %s;\n"
           "const KPAD: u32 = %du;\nconst EWF = %s;\nconst LAZY = %s;\nconst LTH: f32 = %.1f;\nconst F32IN = %s;\nconst F32L = %s;\n%s",
           hd, sg_lanes(c), nsg, o16 ? "true" : "false", o16 ? "f16" : "f32", kpad, sg_ewf() ? "true" : "false",
           sg_lazy() >= 0 ? "true" : "false", sg_lazy() >= 0 ? sg_lazy() : 0.0, f32in ? "true" : "false", sg_f32l(),
           sg_emu() ? "// sgmat emulation\n" : "");
  if (wo) { /* (QRS, KRS: q's and k's, v's row strides in halves: the copies' or, np, the qkv's) */
    size_t pl = strlen(pre);
    /* EWO (default; TEZGAH_WEBGPU_ATTN_SG_EWO=0 for the loops): the softmax's entries written
     * out, CPL = BC / (lanes / 16) of them a lane. On an H100 (2026-12-05 10:23, llama B16
     * T1024) the forward took 4.63 ms a step against the loops' 5.88, 199.8K tokens/s vs 195.3K */
    int ewo = env_int("TEZGAH_WEBGPU_ATTN_SG_EWO", 1) != 0, cpl = 16 * nsg / ((int)sg_lanes(c) / 16);
    sg_ewo_calls += ewo;
    snprintf(pre + pl, sizeof pre - pl,
             "const QRS: u32 = %du;\nconst KRS: u32 = %du;\n//defs NQ=%d NC=%d NV=%d EWO=%d CPL=%d\n",
             np ? qs : nh * hd, np ? kvs : nkv * hd, hd / 16, nsg, 2 * hd / (int)sg_lanes(c), ewo, cpl);
  }
  uint32_t w[24] = {0};
  int ord = env_int("TEZGAH_WEBGPU_ATTN_ORDER", 1) != 0;
  w[8] = (uint32_t)T, w[9] = (uint32_t)Tp, w[10] = (uint32_t)nh, w[11] = (uint32_t)nkv,
  w[12] = fbits(1.0f / sqrtf((float)hd)), w[13] = (uint32_t)(l.q / 2), w[14] = (uint32_t)(l.k / 2),
  w[15] = (uint32_t)(l.v / 2), w[16] = (uint32_t)ord, w[17] = (uint32_t)has_lse;
  if (f32in) /* q's row stride; k's, v's first float after q's; their row stride (floats) */
    w[13] = (uint32_t)qs, w[14] = (uint32_t)((k.off - q.off) / 4), w[15] = (uint32_t)((v.off - q.off) / 4),
    w[23] = (uint32_t)kvs;
  if (np) /* q's, k's, v's first half from q's (x16 bound from q) */
    w[13] = 0, w[14] = (uint32_t)((k.off - q.off) / 2), w[15] = (uint32_t)((v.off - q.off) / 2);
  uint32_t nb = (uint32_t)(Tp / (16 * nsg));
  c->pending_flop = 3.0 * B * nh * (double)T * T * hd; /* S twice (two passes), P·V; causal half */
  /* the one-pass form (main1: output rows in registers, 2 matmul units) or the two-pass form
   * (main), per head_dim (sg_onepass) */
  if (one) c->pending_flop = 2.0 * B * nh * (double)T * T * hd;
  wg_run(c, op, wg_pipeline(c, wo ? "fa_sg_fwd_wo" : nst ? "fa_sg_fwd_st" : "fa_sg_fwd", one ? "main1" : "main", pre), w, 24, a, nst ? 4 : 3, ord ? (uint32_t)nh : nb, ord ? (uint32_t)B : (uint32_t)nh,
         ord ? nb : (uint32_t)B);
  c->pending_flop = 0;
  return 1;
}

/* The dK/dV and dq kernels' output type and store conversion (prefix lines `alias <ty> = ...;` and
 * `fn <fn>(v: f32) -> <ty>`): f32 and the identity, or (h16: f16 activations, c->act_f16) f16 and
 * the preamble's f16 store rounding (webgpu_pipe.c's f16s: ±inf beyond f16's range, so that an
 * overflowing gradient reaches the loss scaler's finiteness check; NaN stays NaN). Static. */
static const char *sg_dkt(int h16, const char *ty, const char *fn) {
  static char b[2][400];
  char *o = b[ty[1] == 'Q'];
  if (!h16) snprintf(o, sizeof b[0], "alias %s = f32;\nfn %s(v: f32) -> f32 { return v; }\n", ty, fn);
  else
    snprintf(o, sizeof b[0],
             "alias %s = f16;\nfn %s(v: f32) -> f16 { return f16s(v); }\n",
             ty, fn);
  return o;
}

/* Whether the written-out dK/dV (fa_sg_dkdv_wo.wgsl) writes its f16 dk, dv as 16-byte chunks
 * (`//defs` DK8=1, rows_out8: each lane 8 halves of a row, consecutive lanes consecutive chunks)
 * rather than one half per store (rows_out: each lane 16 consecutive halves of its own row, one
 * 2-byte store each, a warp's store touching 32 rows). Needs f16 activations (c->act_f16) and
 * dk's offset, dv's distance from it and the row stride kvs multiples of 8 halves (16 bytes: the
 * binding's element offset and every chunk then whole vec4<u32>); else 0. Same bytes either way.
 * TEZGAH_WEBGPU_ATTN_SG_DK8=0: always rows_out (A/B). */
static int sg_dk8(wg_ctx *c, tz_slice dk, tz_slice dv, int kvs) {
  return c->act_f16 && env_int("TEZGAH_WEBGPU_ATTN_SG_DK8", 1) != 0 && dk.off % 16 == 0 &&
         (dv.off - dk.off) % 16 == 0 && kvs % 8 == 0;
}

/* Whether the written-out dK/dV (fa_sg_dkdv_wo.wgsl, the caller says it runs) writes the dq
 * partial sums as f16 (`//defs` DQ16=1: f16 result matrices, subgroup_matrix_result<f16>, each
 * part dS·K of one key block accumulated in f16 and stored as f16; fa_sg_dqsum reads them with
 * the prefix PT = f16 and adds them in fp32 in the same order, dq rounded once) rather than fp32:
 * half the parts' bytes (GPT-2 124M, B16 T1024: ~5 GB of fp32 parts written and read per step;
 * attention_bwd_dq alone 1.67 ms of an 83 ms step on the H200). Needs f16 activations
 * (c->act_f16: dq is stored as f16 anyway; with fp32 activations the parts stay fp32) and an
 * adapter that lists an f16 × f16 → f16 16×16×16 configuration (c->sgmat_f16res; the H200 does,
 * docs/PERF.md) or the stand-in (sg_emu: wg_attn_sg_emulate rounds the accumulator to f16 after
 * every multiply-accumulate). TEZGAH_WEBGPU_ATTN_DQ16=0: the fp32 parts (A/B). The loop-indexed
 * staged (fa_sg_dkdv_st) and direct (fa_sg_dkdv) kernels keep fp32 parts: neither is a default on
 * the H200 (the A/B, F32IN and ablation forms); like the written-out kernel they are checked
 * against the CPU.
 * Error (u = 2^-11, f16's unit roundoff): a part is a sum over the block's BC = 16·NSG keys of
 * products of f16 dS and f16 K (exact in the accumulator), rounded to f16 after each of the NSG
 * multiply-accumulates of 16 keys (more often if the hardware rounds within one): at most
 * NSG·u·(Σ|dS·K| of the part) apart from the fp32 part, about u·|part| at random signs; the
 * sum over the ≤ T / BC parts adds these (√(T / BC) of them at random signs). With the final
 * f16 rounding of dq (u relative at most) that is, for dq of the magnitude of its parts, a few
 * roundings of an f16 value more than before; where the parts cancel (|dq| ≪ |parts|) it is
 * relative to the parts, not dq. Parts below f16's normal range (6.1e-5) keep an absolute error
 * of 2^-25 per rounding: gradients that small need the loss scale. A part beyond ±65504 becomes
 * ±inf, which the loss scaler's finiteness check sees (dq then ±inf or NaN): where parts cancel,
 * a part can overflow while the fp32 parts' dq would not, so the scaler halves its scale earlier
 * there (the H200's 1,500-step runs report the skipped steps). Measured through
 * the stand-in (lavapipe, 2026-12-04, ctest _wo's case: B 2, T 70, GQA 4/2, head_dim 64, NSG 2,
 * up to 3 parts a query; unit-normal inputs, dq's rms 0.263): dq against the CPU, rms error
 * 7.7e-5 with fp32 parts, 9.1e-5 with f16 ones, max 1.05e-3 and 1.53e-3 (the bound's worst
 * ratio 0.073 and 0.084); f16 against fp32 parts, rms 7.2e-5 (2.8e-4 of dq's rms, 0.86 f16
 * ulps of dq on average: about one f16 rounding more); dk, dv, out, lse the same bits. The
 * parts cancel where the keys share a mean (Σ_keys dS = 0 per query, so a block's part carries
 * mean·Σ_block dS): with 4 added to every key component (TZ_TEST_SG_KSHIFT=4) f16 against fp32
 * parts rms 1.39e-4 (3.5 ulps on average), dq's error against the CPU 2.37e-4 -> 2.69e-4 rms.
 * At the H200's shape the parts are more (T 1024: 16 a query, 4 roundings each):
 * bench/dq16_err_model.py (float64, the parts' rounding alone) gives dq's error 1.35 f16 ulps
 * of dq on average with f16 parts against 0.26 with fp32 ones (the final rounding), 2.7 with a
 * shared key mean of 1, 6.2 with 4 (~7e-4 to 3e-3 relative: the size of one bf16 rounding). */
static int sg_dq16(wg_ctx *c) {
  return env_int("TEZGAH_WEBGPU_ATTN_DQ16", 1) != 0 && c->act_f16 && (sg_emu() || c->sgmat_f16res);
}
static long sg_dq16_calls;
long tz_webgpu_attn_dq16_calls(void) { return sg_dq16_calls; }

/* rows of dq partial sums per (sequence, head): Σ over the key blocks kb of Tp − kb·bc */
static size_t sg_part_rows(int Tp, int bc) {
  size_t nkb = (size_t)Tp / bc;
  return nkb * (size_t)Tp - (size_t)bc * (nkb * (nkb - 1) / 2);
}

/* The backward's first pass, fa_sg_prep.wgsl (see there): D [B, n_head, T] f32 = rowsum(dout ∘ out)
 * per head, and where dcopy dout16 [B, Tp, n_head·hd] f16 = dout (clamped to ±65504; zero rows
 * for T ≤ t < Tp). ap: the four arguments D, dout16, dout, out as wg_attn_sg_bwd makes them
 * (dout an activation argument, wg_aa: f16 with c->act_f16; out f16 where c->act16). The vector
 * entry point main8 (16-byte loads and stores, the row's sum by subgroup shuffles) where f16
 * activations make dout and out f16 and dout's and out's byte offsets, dout16's (dcopy), the
 * row width n_head·hd and hd are multiples of 16 bytes / 8 halves (hd / 8 a power of two
 * dividing 256), else main (one f16 pair or two floats per thread, a workgroup tree sum).
 * TEZGAH_WEBGPU_ATTN_D_VEC=0: always main (A/B). Same D up to fp32 summation order, the same
 * dout16 bit for bit. Returns whether main8 ran (counted for the tests: sg_dvec_calls). */
static long sg_dvec_calls;
long tz_webgpu_attn_dvec_calls(void) { return sg_dvec_calls; }
static int sg_prep(wg_ctx *c, const wg_arg *ap, int B, int T, int Tp, int nh, int hd, int dcopy) {
  int o16 = c->act16, hl = hd / 8;
  int vec = env_int("TEZGAH_WEBGPU_ATTN_D_VEC", 1) != 0 && c->act_f16 && o16 && hd % 8 == 0 && hl >= 1 &&
            hl <= 256 && !(hl & (hl - 1)) && ap[2].s.off % 16 == 0 && ap[3].s.off % 16 == 0 &&
            (!dcopy || ap[1].s.off % 16 == 0);
  /* SGW: the subgroup width main8's shuffles may assume (the adapter's one subgroup size; 1
   * where it varies or subgroups are off: then workgroup memory only), as attn_prefix's */
  unsigned sgw = c->subgroups && c->info.subgroupMinSize == c->info.subgroupMaxSize ? c->info.subgroupMinSize : 1;
  if (!sgw) sgw = 1;
  char pre[512];
  snprintf(pre, sizeof pre,
           "%sconst HD: u32 = %du;\nconst OUT16 = %s;\nalias OT = %s;\nalias DT = %s;\nconst DCOPY = %s;\n"
           "const SGW: u32 = %uu;\nfn shx(x: f32, o: u32) -> f32 { return %s; }\n",
           sgw > 1 ? "enable subgroups;\n" : "", hd, o16 ? "true" : "false", o16 ? "f16" : "f32",
           c->act_f16 ? "f16" : "f32", dcopy ? "true" : "false", sgw, sgw > 1 ? "subgroupShuffleXor(x, o)" : "x");
  uint32_t w[24] = {0}, gx, gy;
  w[8] = (uint32_t)T, w[9] = (uint32_t)Tp, w[10] = (uint32_t)nh, w[11] = (uint32_t)B;
  /* threads: hd / 8 (main8) or hd / 2 (main) per (b, t < Tp, h) row */
  grid1((uint64_t)B * nh * Tp * (vec ? hl : hd / 2), &gx, &gy);
  wg_run(c, "attention_bwd_d", wg_pipeline(c, "fa_sg_prep", vec ? "main8" : "main", pre), w, 12, ap, 4, gx, gy, 1);
  sg_dvec_calls += vec;
  return vec;
}

/* tz_webgpu_attn_sg_prep (backend.h): the test hook. */
int tz_webgpu_attn_sg_prep(tz_backend *be, tz_slice d, tz_slice dout16, tz_slice dout, tz_slice out, int B, int T,
                           int nh, int hd, int dcopy) {
  wg_ctx *c = CTX(be);
  int Tp = (T + SG_PAD - 1) / SG_PAD * SG_PAD;
  size_t C = (size_t)nh * hd;
  wg_arg ap[4] = {A(d, F4((size_t)B * nh * T), "D"), A(dout16, (size_t)B * Tp * C * 2, "dout16"),
                  wg_aa(c, dout, (size_t)B * T * C, "dout"),
                  A(out, c->act16 ? ((size_t)B * T * C * 2 + 3) & ~(size_t)3 : F4((size_t)B * T * C), "att out")};
  if (!sg_binds_ok(c, ap, 4, 0x3)) return -1;
  return sg_prep(c, ap, B, T, Tp, nh, hd, dcopy);
}

int wg_attn_sg_bwd(tz_backend *be, tz_slice dq, tz_slice dk, tz_slice dv, tz_slice dout, tz_slice q, tz_slice k,
                   tz_slice v, tz_slice out, tz_slice lse, int B, int T, int nh, int nkv, int hd, int qs, int kvs) {
  wg_ctx *c = CTX(be);
  static const char *op = "attention_bwd";
  if (!sg_use(c, op, T, T, 0, hd)) return 0;
  int Tp = (T + SG_PAD - 1) / SG_PAD * SG_PAD, o16 = c->act16, nsg = sg_nsg(c, 1);
  /* the staged kernel where its tiles fit (TEZGAH_WEBGPU_ATTN_SG_STAGE; x16 is the staging
   * buffer from offset 0: 16-byte aligned) */
  int kpad = 0, vst = 0, db = 0, nst = sg_stage(1) ? sg_nsg_st(c, 1, sg_nsg_pref(1, 0), hd, &kpad, &vst, &db) : 0;
  if (nst) nsg = nst;
  int kbc = 16 * nsg;
  /* es: dq's, dk's, dv's and dout's element size (f16 with f16 activations, c->act_f16) */
  size_t es = c->act_f16 ? 2 : 4;
  if (dk.buf != dv.buf || dv.off < dk.off || (dv.off - dk.off) % es || dk.off % es || dq.off % es || out.off % 4)
    return sg_decline(c, op, "dk and dv are not aligned slices of one buffer with dv after dk");
  sg_lay l = sg_layout(B, Tp, nh, nkv, hd, 1);
  /* TEZGAH_WEBGPU_ATTN_SG_ABLATE=N (diagnosis, staged only; WRONG RESULTS, a note on stderr):
   * the staged dK/dV without parts of its work, so that bench_webgpu shows where its time goes:
   * bit 1 the dq part (its products and stores), 2 the element-wise passes (P, dS), 4 the
   * barriers between the per-tile phases (2)-(5) of fa_sg_dkdv_st.wgsl */
  int abl = nst ? env_int("TEZGAH_WEBGPU_ATTN_SG_ABLATE", 0) & 7 : 0;
  /* dq16: f16 dq parts (sg_dq16), in the written-out kernel only: it runs with f16 activations
   * wherever it is staged and asked for (F32IN needs fp32 activations, see wo below) */
  int dq16 = nst && sg_wo() && !abl && sg_dq16(c);
  /* per: one sequence's parts, bytes (f16: half) */
  size_t C = (size_t)nh * hd, nl = (size_t)B * nh * T, rows = sg_part_rows(Tp, kbc);
  size_t dbytes = al256(F4(nl)), per = (size_t)nh * rows * hd * (dq16 ? 2 : 4);
  size_t cap = (size_t)env_int("TEZGAH_WEBGPU_ATTN_DQ_KB", 256 * 1024) * 1024, lim = wg_cap_bytes(c);
  if ((size_t)(c->lim.maxBufferSize / 5 * 4) < lim) lim = (size_t)(c->lim.maxBufferSize / 5 * 4);
  lim = lim > dbytes ? lim - dbytes : 0;
  if (cap > lim) cap = lim;
  size_t bc = cap / per < (size_t)B ? cap / per : (size_t)B;
  if (!bc) return sg_decline(c, op, "one sequence's dq partial sums exceed TEZGAH_WEBGPU_ATTN_DQ_KB or the binding limits");
  size_t kvext = F4(((size_t)B * T - 1) * kvs + (size_t)nkv * hd), xb = 0, nqb = 0;
  static int abl_noted;
  if (abl && !abl_noted++)
    fprintf(stderr, "webgpu: TEZGAH_WEBGPU_ATTN_SG_ABLATE=%d: dK/dV and dq are WRONG (timing only)\n", abl);
  /* the staged kernel reads q, k, v itself where it may (F32IN; dout still through its copy),
   * else binds xin to a spare slice of the staging buffer after the copies (unread). The
   * written-out form (wo) reads dO through xin: fa_sg_prep's dout16 in the staging buffer, or
   * (np, sg_nopack) the f16 dout itself, with x16 bound from q in the f16 qkv (no packs, and
   * fa_sg_prep computes D only); where those bindings do not work out, the packs. */
  int f32in = nst && sg_f32in() && !c->act_f16 && sg_f32in_ok(q, k, v, B, T, (int)C, nkv * hd, qs, kvs, &xb);
  int wo = nst && sg_wo() && !f32in && !abl; /* (f32in may drop below: then wo, without np) */
  int np = wo && sg_nopack(c, T, q, k, v, dout, B, (int)C, nkv * hd, qs, kvs, &nqb);
  tz_slice s = wg_scratch(be, dbytes + bc * per), x;
  /* (dq16: D, then the f16 parts from dbytes, 256-byte aligned: their own binding, 6) */
  wg_arg ap[4], ak[6];
  for (;;) {
    if (!np && l.end > wg_cap_bytes(c)) return sg_decline(c, op, "the f16 copies exceed one binding");
    x = wg_stage(be, (np ? 0 : l.end) + 512);
    ap[0] = A(s, F4(nl), "D");
    ap[1] = np ? A(x, 16, "dout16 (not written)") : A(tz_at(x, l.d), (size_t)B * Tp * C * 2, "dout16");
    ap[2] = wg_aa(c, dout, (size_t)B * T * C, "dout");
    ap[3] = A(out, o16 ? ((size_t)B * T * C * 2 + 3) & ~(size_t)3 : F4((size_t)B * T * C), "att out");
    /* dk, dv: one argument from dk on (with f16 activations in f16 elements: kvext / 2 bytes past dv) */
    ak[0] = c->act_f16 ? AH(dk, (dv.off - dk.off + kvext / 2) / 2, "dk, dv") : A(dk, dv.off - dk.off + kvext, "dk, dv");
    ak[1] = A(s, dbytes + bc * per, "D, dq parts"), ak[2] = A(x, l.end, "x16"), ak[3] = A(lse, F4(nl), "lse");
    ak[4] = A(q, xb, "q/k/v");
    if (dq16) ak[1] = A(s, F4(nl), "D"), ak[5] = AH(tz_at(s, dbytes), bc * per / 2, "dq parts (f16)");
    if (np) { /* (dout: 16-byte aligned, B·T·C halves, C a multiple of 8) */
      ak[2] = A(q, nqb, "q/k/v (f16 qkv)"), ak[4] = A(dout, (size_t)B * T * C * 2, "dO (f16 dout)");
      if (!sg_binds_ok(c, ak, dq16 ? 6 : 5, dq16 ? 0x23 : 0x3)) {
        np = 0;
        continue;
      }
    }
    break;
  }
  if (f32in && !sg_binds_ok(c, ak, 5, 0x3)) f32in = 0, wo = nst && sg_wo() && !abl; /* e.g. q/k/v in a buffer the kernel writes: the packs */
  TZ_ASSERT(!dq16 || wo); /* (dq16 needs f16 activations, f32in fp32 ones) */
  if (wo && !np) /* the copies: q, k, v (x16) before dout16 (xin), at l.d (256-aligned: separate bindings) */
    ak[2] = A(x, l.d, "x16"), ak[4] = A(tz_at(x, l.d), (size_t)B * Tp * C * 2, "dout16");
  else if (!f32in && !wo)
    ak[4] = A(tz_at(x, al256(l.end)), 16, "xin (unread)");
  wg_arg as[] = {wg_aa(c, dq, ((size_t)B * T - 1) * qs + C, "dq"),
                 dq16 ? AH(tz_at(s, dbytes), bc * per / 2, "dq parts (f16)") : A(s, dbytes + bc * per, "dq parts")};
  int nak = dq16 ? 6 : nst ? 5 : 4;
  if (!sg_binds_ok(c, ap, 4, 0x3) || !sg_binds_ok(c, ak, nak, dq16 ? 0x23 : 0x3) || !sg_binds_ok(c, as, 2, 0x1))
    return sg_decline(c, op, "the arguments do not get a binding each");
  sg_dq16_calls += dq16;
  if (!f32in && !np) {
    sg_pack_qkv(c, x, &l, q, k, v, B, T, Tp, (int)C, nkv * hd, qs, kvs);
  }
  sg_np_calls[1] += np;
  /* (DCOPY: fa_sg_prep writes dout16 unless np) */
  sg_prep(c, ap, B, T, Tp, nh, hd, !np);
  char pk[1024], pq[512];
  uint32_t w[24] = {0}, gx, gy;
  /* TEZGAH_WEBGPU_ATTN_SG_KREG=1 (tuning, staged only): K's left matrices held in registers */
  int kreg = nst && env_int("TEZGAH_WEBGPU_ATTN_SG_KREG", 0) != 0;
  snprintf(pk, sizeof pk, "const HD: u32 = %du;\nconst SGSIZE: u32 = %uu;\nconst NSG: u32 = %du;\nconst KPAD: u32 = %du;\n"
           "const VST = %s;\nconst KREG = %s;\nconst EWF = %s;\nconst DB = %s;\nconst ABL: u32 = %du;\nconst F32IN = %s;\n"
           "const F32L = %s;\nconst EWX = %s;\n%s",
           hd, sg_lanes(c), nsg, kpad, vst ? "true" : "false", kreg ? "true" : "false", sg_ewf() ? "true" : "false",
           db ? "true" : "false", abl, f32in ? "true" : "false", sg_f32l(), sg_ewx() ? "true" : "false",
           sg_emu() ? "// sgmat emulation\n" : "");
  /* the written-out form (sg_wo; fa_sg_dkdv_wo.wgsl's prefix and `//defs` counts; QRS, KRS: q's
   * and k's, v's row strides in halves, the copies' or, np, the qkv's) */
  if (wo) {
    int lanes = (int)sg_lanes(c), nq = hd / 16;
    snprintf(pk, sizeof pk,
             "const HD: u32 = %du;\nconst SGSIZE: u32 = %uu;\nconst NSG: u32 = %du;\nconst KPAD: u32 = %du;\n"
             "const DB = %s;\nconst QRS: u32 = %du;\nconst KRS: u32 = %du;\n"
             "//defs NQ=%d NR=2 NQS=%d NVQ=%d CPL=%d NSG=%d KREG=%d DK8=%d DQ16=%d\n%s",
             hd, sg_lanes(c), nsg, kpad, db ? "true" : "false", np ? qs : nh * hd, np ? kvs : nkv * hd, nq, nq * 2 / nsg,
             32 * (hd / 8) / (nsg * lanes),
             32 * 16 / lanes, nsg, kreg, sg_dk8(c, dk, dv, kvs), dq16, sg_emu() ? "// sgmat emulation\n" : "");
  }
  {
    size_t n = strlen(pk);
    snprintf(pk + n, sizeof pk - n, "%s", sg_dkt(c->act_f16, "DKT", "cvk"));
  }
  /* (PT: the parts' element type, f16 with dq16) */
  snprintf(pq, sizeof pq, "%sconst HD: u32 = %du;\nconst BC: u32 = %du;\nalias PT = %s;\n%s", c->act_f16 ? "enable f16;\n" : "",
           hd, kbc, dq16 ? "f16" : "f32", sg_dkt(c->act_f16, "DQT", "cvq"));
  int ord = env_int("TEZGAH_WEBGPU_ATTN_ORDER", 1) != 0;
  uint32_t nkb = (uint32_t)(Tp / kbc);
  /* the dq sums four floats per thread (fa_sg_dqsum.wgsl main4) where 16-byte aligned:
   * TEZGAH_WEBGPU_ATTN_SG_DQV4=1 (the default), 0 one per thread (round 3's); same bits */
  int dq4 = env_int("TEZGAH_WEBGPU_ATTN_SG_DQV4", 1) != 0 && dq.off % (c->act_f16 ? 8 : 16) == 0 && s.off % 16 == 0 &&
            qs % 4 == 0; /* (f16 dq: vec4<f16>, 8 bytes; dq16's parts from dbytes, a multiple of 256) */
  for (int b0 = 0; b0 < B; b0 += (int)bc) {
    int nb = B - b0 < (int)bc ? B - b0 : (int)bc;
    memset(w, 0, sizeof w);
    w[8] = (uint32_t)T, w[9] = (uint32_t)Tp, w[10] = (uint32_t)nh, w[11] = (uint32_t)nkv,
    w[12] = fbits(1.0f / sqrtf((float)hd)), w[13] = (uint32_t)(l.q / 2), w[14] = (uint32_t)(l.k / 2),
    w[15] = (uint32_t)(l.v / 2), w[16] = (uint32_t)(l.d / 2), w[17] = (uint32_t)ord, w[18] = 0,
    w[19] = (uint32_t)(dbytes / 4), w[20] = (uint32_t)rows, w[21] = (uint32_t)b0, w[22] = (uint32_t)((dv.off - dk.off) / es),
    w[23] = (uint32_t)kvs;
    if (f32in) /* q's row stride; k's, v's first float after q's (floats) */
      w[13] = (uint32_t)qs, w[14] = (uint32_t)((k.off - q.off) / 4), w[15] = (uint32_t)((v.off - q.off) / 4);
    if (wo) w[16] = 0; /* dO from xin's first half (dout16, or np dout) */
    if (np) /* q's, k's, v's first half from q's (x16 bound from q) */
      w[13] = 0, w[14] = (uint32_t)((k.off - q.off) / 2), w[15] = (uint32_t)((v.off - q.off) / 2);
    c->pending_flop = 5.0 * nb * nh * (double)T * T * hd; /* S, dP, dV, dK, dq: causal half */
    wg_run(c, "attention_bwd_dkdv", wg_pipeline(c, wo ? "fa_sg_dkdv_wo" : nst ? "fa_sg_dkdv_st" : "fa_sg_dkdv", "main", pk), w, 24, ak, nak, ord ? (uint32_t)nkv : nkb,
           ord ? (uint32_t)nb : (uint32_t)nkv, ord ? nkb : (uint32_t)nb);
    c->pending_flop = 0;
    memset(w, 0, sizeof w);
    w[8] = (uint32_t)T, w[9] = (uint32_t)Tp, w[10] = (uint32_t)nh, w[11] = (uint32_t)qs, w[12] = dq16 ? 0 : (uint32_t)(dbytes / 4),
    w[13] = (uint32_t)rows, w[14] = (uint32_t)b0, w[15] = (uint32_t)nb;
    grid1((size_t)nb * nh * T * hd / (dq4 ? 4 : 1), &gx, &gy);
    wg_run(c, "attention_bwd_dq", wg_pipeline(c, "fa_sg_dqsum", dq4 ? "main4" : "main", pq), w, 16, as, 2, gx, gy, 1);
  }
  return 1;
}
