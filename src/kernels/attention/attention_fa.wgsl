// Flash attention (FlashAttention-2 structure, Dao 2023) for the training form of causal GQA
// attention: Tq == Tk == T, q_pos0 == 0, head_dim HD in {32, 64, 128}. attention.wgsl stays
// the fallback (KV-cache decoding Tq < Tk, other head sizes, tensors not on 16-byte
// boundaries) and keeps attn_bwd_d (D = rowsum(dout ∘ out)), which the two-kernel backward
// uses when FD = 0.
//
// Every kernel is a chain of small register-tiled matmuls, like matmul_fast.wgsl: NT threads
// as TY × TX (ty = lid / TX, tx = lid % TX, TY = NT / TX); the workgroup owns R = 4·RG·TY rows
// (query rows in fa_fwd / fa_dq, key rows in fa_dkdv) and streams tiles of C = 4·TX columns
// (keys, or queries in fa_dkdv). Thread (ty, tx) owns RG blocks of 4 × 4 scores — rows
// 4ty..4ty+3 (and, RG = 2, 4(TY+ty)..+3) × columns 4tx..4tx+3, each a mat4x4 whose column i is
// row i's four scores — and the matching output blocks (columns 4tx.., and 4TX+4tx.. when
// HD = 128). RG = 2 (8 × 4 blocks) feeds 32 FMAs per 3 workgroup-memory vec4 loads instead of
// 16 per 2; with NT = 256 it makes 128-row tiles (HD 64 / 128; the default where the
// workgroup memory allows: 11.4 + 22.7 + 27.2 ms/step for fa_fwd + fa_dq + fa_dkdv in the GPT-2
// 124M training step on the H200 against 15.0 + 23.1 + 34.8 for RG 1 / NT 256, docs/PERF.md).
// The host picks the variant of each kernel (attn_config in webgpu_ops_attn.c).
//   HD 64 / 128: C = 64 (TX 16); HD 32: C = 32 (TX 8).
// Scores: S = A·Bᵀ over HD in chunks of DK = 16, both operands staged d-major in workgroup
// memory (transposed on the way in, rows padded by one vec4), the outer-product steps written
// out (NVIDIA's driver does not unroll Tint's loops). Products with the tile: P (or dS) goes to
// workgroup memory key-major and the other operand streams row-major in 16-row chunks:
// O += P·V. Row max / sum over the TX threads of a row: lanes_max4 / lanes_sum4 (subgroup
// shuffles where offered, else workgroup memory). Workgroup memory: 46.6 KB for RG 2 / NT 256
// (HD 64 / 128), 26.1 KB for RG 1 / NT 256, 15.4-17.4 KB for RG 1 / NT 128 (the host checks
// each variant against the adapter's limit and picks the default, attn_config).
// PF = 1 (register prefetch): every chunk's global loads are issued before the FMAs of the
// chunk before it (ld_* into registers, st_* into workgroup memory after the barrier), also
// across phases (the first V / dout / q chunk during the last score chunk, the next tile's
// first chunk during the last product chunk); PF = 0 loads each chunk right before storing it.
//
// fa_fwd:   online softmax over key tiles up to the causal limit; out, lse = m + log l.
// fa_dq:    per query block over key tiles: p = exp(s − lse), ds = p (dout·v − D) · scale,
//           dq = Σ ds k. FD = 1: first D = rowsum(dout ∘ out) of its rows, written for fa_dkdv
//           (no separate pass).
// fa_dkdv:  per key block of kv head g, over the group's query heads and the query tiles
//           t ≥ key: dv = Σ p dout, dk = Σ ds q. No atomics: every output has one owner and a
//           fixed summation order (deterministic).
// The default backward (FQ = 1 in fa_dkdv; the host's wg_attention_bwd): fa_d computes D, then
// fa_dkdv also stores each tile's partial dq = ds·k of its key block to a scratch buffer and
// fa_dq_sum adds a query's blocks in a fixed order: five matmul units instead of fa_dq + fa_dkdv's
// seven (fa_dq recomputes s and dp). FQ = 0 (TEZGAH_WEBGPU_ATTN_FUSED_DQ=0, or partial sums that
// do not fit the scratch bound): fa_dq and fa_dkdv.
// Rows past T are staged as zeros and masked; stores check t < T.
//
// Global access is vec4: a standalone module (no preamble) whose eight storage bindings are
// array<vec4<f32>>, with the preamble's argument → offset scheme (the binding of each argument
// is a constant of the host's prefix, SL below). The host uses it only when the vec4 arguments
// start on 16-byte boundaries and the row strides are multiples of 4 floats (the model's
// activation arena aligns every tensor to 64 bytes), and rounds every binding's end up to 16
// bytes (lse and D are read and written as scalars).
//
// Host prefix: const HD (32, 64, 128), TX (threads across a tile's columns: 16 for HD 64/128,
// 8 for HD 32), RG (1 or 2), NT (threads per workgroup, 128 or 256), PF (0, 1), FD (0, 1), FQ
// (0, 1) and
// SGW (the subgroup width of the lane reductions, common/lanes_sg.wgsl or lanes_wg.wgsl,
// appended by the host), then the bindings (below).
// Uniforms as attention.wgsl: u0 T, u1 Tk, u2 q_pos0, u3 n_head, u4 n_kv_head, u5 q_stride,
// u6 kv_stride, u7 has_lse, u8 scale, u9 B, and u10 the grid order (attn_grid in
// webgpu_ops_attn.c): 1 = grid (heads, B, blocks), the block index slowest (NVIDIA launches
// workgroups x fastest, so every head's most expensive causal block goes first and the cheap
// ones fill the last waves); 0 = grid (blocks, heads, B), the former order (longest first only
// within one head and sequence); under FQ, u11 the element offset of the partial sums in
// argument 7, u12 their rows per (sequence, head), u13 the first sequence of the chunk.
// Arguments as attn_fwd / attn_bwd_dkdv; fa_dq's, fa_d's and fa_dq_sum's differ (see there).

struct U {
  oa: vec4<u32>,
  ob: vec4<u32>,
  sa: vec4<u32>,
  sb: vec4<u32>,
  u: array<vec4<u32>, 4>,
}
@group(0) @binding(0) var<uniform> p: U;
@group(0) @binding(1) var<storage, read_write> B0: array<vec4<f32>>;
// From the host's prefix (attn_binds in webgpu_ops_attn.c), per dispatch:
//   bindings 2 .. 8: B1 .. B7, array<vec4<f32>>, read-only where no input shares a buffer with
//     an output (else read_write: Dawn rejects a buffer bound read-only and writable in one
//     dispatch), the unused ones bound to dummy buffers;
//   const SL: array<u32, 8>, the binding (0 .. 7) of each argument (arguments sharing a buffer
//     range share one);
//   fn stv(a: u32, i4: u32, v: vec4<f32>) and fn sts(a: u32, i: u32, v: f32): a switch over
//     the written arguments only (a read-only binding cannot appear in a store).
// Every call names its argument with a constant, so SL[a] folds and each access goes to one
// binding.

fn pu(k: u32) -> u32 {
  return p.u[k / 4u][k % 4u];
}
// (block, head, sequence) of this workgroup under the grid order u10; each kernel maps block 0
// to its most expensive causal block
fn grid_ids(wid: vec3<u32>) -> vec3<u32> {
  if (pu(10u) == 1u) {
    return vec3<u32>(wid.z, wid.x, wid.y);
  }
  return wid;
}
fn pf(k: u32) -> f32 {
  return bitcast<f32>(p.u[k / 4u][k % 4u]);
}
fn aoff(a: u32) -> u32 {
  if (a < 4u) {
    return p.oa[a];
  }
  return p.ob[a - 4u];
}
// vec4 i4 of argument a (elements 4·i4 .. 4·i4+3; the argument's offset is a multiple of 4)
fn ldv(a: u32, i4: u32) -> vec4<f32> {
  let j = aoff(a) / 4u + i4;
  switch SL[a] {
    case 0u: { return B0[j]; }
    case 1u: { return B1[j]; }
    case 2u: { return B2[j]; }
    case 3u: { return B3[j]; }
    case 4u: { return B4[j]; }
    case 5u: { return B5[j]; }
    case 6u: { return B6[j]; }
    default: { return B7[j]; }
  }
}
// element i of argument a (any offset)
fn lds(a: u32, i: u32) -> f32 {
  let j = aoff(a) + i;
  let q = j / 4u;
  let c = j % 4u;
  switch SL[a] {
    case 0u: { return B0[q][c]; }
    case 1u: { return B1[q][c]; }
    case 2u: { return B2[q][c]; }
    case 3u: { return B3[q][c]; }
    case 4u: { return B4[q][c]; }
    case 5u: { return B5[q][c]; }
    case 6u: { return B6[q][c]; }
    default: { return B7[q][c]; }
  }
}

const TY: u32 = NT / TX;
const R: u32 = 4u * RG * TY;     // rows per workgroup
const C: u32 = 4u * TX;          // columns per tile
const NOV: u32 = HD / (4u * TX); // output vec4s per row and thread (1, or 2 for HD 128)
const DK: u32 = 16u;             // chunk depth (d for scores, rows for products)
const RA: u32 = R / 4u + 1u;     // vec4 stride of a staged row-side d-row
const CA: u32 = C / 4u + 1u;     // vec4 stride of a staged column-side d-row
const XB: u32 = DK * RA;         // column-side chunk offset in Xs
const PR: u32 = R / 4u + 1u;     // vec4 stride of a Ps column (one key / query)
const HV: u32 = HD / 4u;         // vec4s per head row
const NEG: f32 = -3.0e38;

// staged chunks; also lanes_combine's exchange (NT vec4s), which runs only between barriers when
// no chunk is in use
var<workgroup> Xs: array<vec4<f32>, max(max(DK * (RA + CA), DK * HV), NT)>;
var<workgroup> Ps: array<vec4<f32>, C * PR>; // P or dS, column-major: Ps[col·PR + g·TY + ty]

// a thread's two 4 × 4 blocks (row groups a and b; b unused when RG = 1)
struct M2 {
  a: mat4x4<f32>,
  b: mat4x4<f32>,
}

fn max4(v: vec4<f32>) -> f32 {
  return max(max(v.x, v.y), max(v.z, v.w));
}
fn sum4(v: vec4<f32>) -> f32 {
  return (v.x + v.y) + (v.z + v.w);
}

// Staging goes through registers in two halves so that the global loads of the next chunk
// can be issued before the FMAs of the current one (PF = 1, register prefetch): ld_t / ld_r
// load a thread's share of a chunk (at most 4 vec4s: NR·4 ≤ 4·NT, DK·HV ≤ 4·NT, which the host
// checks), st_t / st_r put it into Xs.
struct L4 {
  x0: vec4<f32>,
  x1: vec4<f32>,
  x2: vec4<f32>,
  x3: vec4<f32>,
}

// vec4 idx (< NR·4) of a chunk of rows n0 .. n0+NR-1 (zeros from row nv on), columns
// d0 .. d0+DK-1 of a row-major tensor (argument a, row r at element base + r·stride), times sc:
// row idx / 4, columns d0 + 4·(idx % 4) .. +3 (4 threads cover a row's 64 bytes)
fn ld_t1(a: u32, base: u32, stride: u32, n0: u32, nv: u32, d0: u32, sc: f32, idx: u32) -> vec4<f32> {
  let r = idx / 4u;
  var v = vec4<f32>(0.0);
  if (n0 + r < nv) {
    v = ldv(a, (base + (n0 + r) * stride + d0 + 4u * (idx % 4u)) / 4u) * sc;
  }
  return v;
}
fn ld_t(a: u32, base: u32, stride: u32, n0: u32, nv: u32, NR: u32, d0: u32, sc: f32, lid: u32) -> L4 {
  var l = L4();
  if (lid < NR * 4u) {
    l.x0 = ld_t1(a, base, stride, n0, nv, d0, sc, lid);
  }
  if (NR * 4u > NT && lid + NT < NR * 4u) {
    l.x1 = ld_t1(a, base, stride, n0, nv, d0, sc, lid + NT);
  }
  if (NR * 4u > 2u * NT && lid + 2u * NT < NR * 4u) {
    l.x2 = ld_t1(a, base, stride, n0, nv, d0, sc, lid + 2u * NT);
  }
  if (NR * 4u > 3u * NT && lid + 3u * NT < NR * 4u) {
    l.x3 = ld_t1(a, base, stride, n0, nv, d0, sc, lid + 3u * NT);
  }
  return l;
}
// ... into Xs[off + d·RS + r/4] (d-major, 4 rows per vec4), transposed with scalar stores
fn st_t1(off: u32, RS: u32, idx: u32, v: vec4<f32>) {
  let r = idx / 4u;
  let d = 4u * (idx % 4u);
  let q = off + r / 4u;
  let c = r % 4u;
  Xs[q + d * RS][c] = v.x;
  Xs[q + (d + 1u) * RS][c] = v.y;
  Xs[q + (d + 2u) * RS][c] = v.z;
  Xs[q + (d + 3u) * RS][c] = v.w;
}
fn st_t(off: u32, NR: u32, RS: u32, l: L4, lid: u32) {
  if (lid < NR * 4u) {
    st_t1(off, RS, lid, l.x0);
  }
  if (NR * 4u > NT && lid + NT < NR * 4u) {
    st_t1(off, RS, lid + NT, l.x1);
  }
  if (NR * 4u > 2u * NT && lid + 2u * NT < NR * 4u) {
    st_t1(off, RS, lid + 2u * NT, l.x2);
  }
  if (NR * 4u > 3u * NT && lid + 3u * NT < NR * 4u) {
    st_t1(off, RS, lid + 3u * NT, l.x3);
  }
}

// Rows n0 .. n0+DK-1 (zeros from row nv on) of a row-major tensor, all HD columns, for
// Xs[jj·HV + d4] (row-major): vec4 idx (< DK·HV) is row n0 + idx / HV, column vec4 idx % HV.
fn ld_r1(a: u32, base: u32, stride: u32, n0: u32, nv: u32, idx: u32) -> vec4<f32> {
  let r = n0 + idx / HV;
  var v = vec4<f32>(0.0);
  if (r < nv) {
    v = ldv(a, (base + r * stride) / 4u + idx % HV);
  }
  return v;
}
fn ld_r(a: u32, base: u32, stride: u32, n0: u32, nv: u32, lid: u32) -> L4 {
  var l = L4();
  if (lid < DK * HV) {
    l.x0 = ld_r1(a, base, stride, n0, nv, lid);
  }
  if (DK * HV > NT && lid + NT < DK * HV) {
    l.x1 = ld_r1(a, base, stride, n0, nv, lid + NT);
  }
  if (DK * HV > 2u * NT && lid + 2u * NT < DK * HV) {
    l.x2 = ld_r1(a, base, stride, n0, nv, lid + 2u * NT);
  }
  if (DK * HV > 3u * NT && lid + 3u * NT < DK * HV) {
    l.x3 = ld_r1(a, base, stride, n0, nv, lid + 3u * NT);
  }
  return l;
}
fn st_r(l: L4, lid: u32) {
  if (lid < DK * HV) {
    Xs[lid] = l.x0;
  }
  if (DK * HV > NT && lid + NT < DK * HV) {
    Xs[lid + NT] = l.x1;
  }
  if (DK * HV > 2u * NT && lid + 2u * NT < DK * HV) {
    Xs[lid + 2u * NT] = l.x2;
  }
  if (DK * HV > 3u * NT && lid + 3u * NT < DK * HV) {
    Xs[lid + 3u * NT] = l.x3;
  }
}

// s[i] += a[i] · b: the outer product of 4 rows (a) and 4 columns (b)
fn op4(s: mat4x4<f32>, a: vec4<f32>, b: vec4<f32>) -> mat4x4<f32> {
  return mat4x4<f32>(fma(vec4<f32>(a.x), b, s[0]), fma(vec4<f32>(a.y), b, s[1]), fma(vec4<f32>(a.z), b, s[2]),
                     fma(vec4<f32>(a.w), b, s[3]));
}

// Written-out chunk steps (NVIDIA's driver does not unroll Tint's loops).
// st16: s += Σ_d Xs[d·RA + ar] ⊗ Xs[XB + d·CA + tx]; st16_2: both row groups, one column load.
// pv16: o += Σ_jj Ps[(j0 + jj)·PR + ty] ⊗ Xs[jj·HV + x]; pv16_2: both row groups.
fn st16(s0: mat4x4<f32>, ar: u32, tx: u32) -> mat4x4<f32> {
  let b = XB + tx;
  var s = op4(s0, Xs[ar], Xs[b]);
  s = op4(s, Xs[ar + 1u * RA], Xs[b + 1u * CA]);
  s = op4(s, Xs[ar + 2u * RA], Xs[b + 2u * CA]);
  s = op4(s, Xs[ar + 3u * RA], Xs[b + 3u * CA]);
  s = op4(s, Xs[ar + 4u * RA], Xs[b + 4u * CA]);
  s = op4(s, Xs[ar + 5u * RA], Xs[b + 5u * CA]);
  s = op4(s, Xs[ar + 6u * RA], Xs[b + 6u * CA]);
  s = op4(s, Xs[ar + 7u * RA], Xs[b + 7u * CA]);
  s = op4(s, Xs[ar + 8u * RA], Xs[b + 8u * CA]);
  s = op4(s, Xs[ar + 9u * RA], Xs[b + 9u * CA]);
  s = op4(s, Xs[ar + 10u * RA], Xs[b + 10u * CA]);
  s = op4(s, Xs[ar + 11u * RA], Xs[b + 11u * CA]);
  s = op4(s, Xs[ar + 12u * RA], Xs[b + 12u * CA]);
  s = op4(s, Xs[ar + 13u * RA], Xs[b + 13u * CA]);
  s = op4(s, Xs[ar + 14u * RA], Xs[b + 14u * CA]);
  s = op4(s, Xs[ar + 15u * RA], Xs[b + 15u * CA]);
  return s;
}

fn st16_2(s0: M2, ty: u32, tx: u32) -> M2 {
  let a = ty;
  let b = XB + tx;
  var s = s0;
  {
    let bv = Xs[b];
    s.a = op4(s.a, Xs[a], bv);
    s.b = op4(s.b, Xs[a + TY], bv);
  }
  {
    let bv = Xs[b + 1u * CA];
    s.a = op4(s.a, Xs[a + 1u * RA], bv);
    s.b = op4(s.b, Xs[a + TY + 1u * RA], bv);
  }
  {
    let bv = Xs[b + 2u * CA];
    s.a = op4(s.a, Xs[a + 2u * RA], bv);
    s.b = op4(s.b, Xs[a + TY + 2u * RA], bv);
  }
  {
    let bv = Xs[b + 3u * CA];
    s.a = op4(s.a, Xs[a + 3u * RA], bv);
    s.b = op4(s.b, Xs[a + TY + 3u * RA], bv);
  }
  {
    let bv = Xs[b + 4u * CA];
    s.a = op4(s.a, Xs[a + 4u * RA], bv);
    s.b = op4(s.b, Xs[a + TY + 4u * RA], bv);
  }
  {
    let bv = Xs[b + 5u * CA];
    s.a = op4(s.a, Xs[a + 5u * RA], bv);
    s.b = op4(s.b, Xs[a + TY + 5u * RA], bv);
  }
  {
    let bv = Xs[b + 6u * CA];
    s.a = op4(s.a, Xs[a + 6u * RA], bv);
    s.b = op4(s.b, Xs[a + TY + 6u * RA], bv);
  }
  {
    let bv = Xs[b + 7u * CA];
    s.a = op4(s.a, Xs[a + 7u * RA], bv);
    s.b = op4(s.b, Xs[a + TY + 7u * RA], bv);
  }
  {
    let bv = Xs[b + 8u * CA];
    s.a = op4(s.a, Xs[a + 8u * RA], bv);
    s.b = op4(s.b, Xs[a + TY + 8u * RA], bv);
  }
  {
    let bv = Xs[b + 9u * CA];
    s.a = op4(s.a, Xs[a + 9u * RA], bv);
    s.b = op4(s.b, Xs[a + TY + 9u * RA], bv);
  }
  {
    let bv = Xs[b + 10u * CA];
    s.a = op4(s.a, Xs[a + 10u * RA], bv);
    s.b = op4(s.b, Xs[a + TY + 10u * RA], bv);
  }
  {
    let bv = Xs[b + 11u * CA];
    s.a = op4(s.a, Xs[a + 11u * RA], bv);
    s.b = op4(s.b, Xs[a + TY + 11u * RA], bv);
  }
  {
    let bv = Xs[b + 12u * CA];
    s.a = op4(s.a, Xs[a + 12u * RA], bv);
    s.b = op4(s.b, Xs[a + TY + 12u * RA], bv);
  }
  {
    let bv = Xs[b + 13u * CA];
    s.a = op4(s.a, Xs[a + 13u * RA], bv);
    s.b = op4(s.b, Xs[a + TY + 13u * RA], bv);
  }
  {
    let bv = Xs[b + 14u * CA];
    s.a = op4(s.a, Xs[a + 14u * RA], bv);
    s.b = op4(s.b, Xs[a + TY + 14u * RA], bv);
  }
  {
    let bv = Xs[b + 15u * CA];
    s.a = op4(s.a, Xs[a + 15u * RA], bv);
    s.b = op4(s.b, Xs[a + TY + 15u * RA], bv);
  }
  return s;
}

fn pv16(o0: mat4x4<f32>, j0: u32, ty: u32, x: u32) -> mat4x4<f32> {
  let a = j0 * PR + ty;
  var o = op4(o0, Ps[a], Xs[x]);
  o = op4(o, Ps[a + 1u * PR], Xs[x + 1u * HV]);
  o = op4(o, Ps[a + 2u * PR], Xs[x + 2u * HV]);
  o = op4(o, Ps[a + 3u * PR], Xs[x + 3u * HV]);
  o = op4(o, Ps[a + 4u * PR], Xs[x + 4u * HV]);
  o = op4(o, Ps[a + 5u * PR], Xs[x + 5u * HV]);
  o = op4(o, Ps[a + 6u * PR], Xs[x + 6u * HV]);
  o = op4(o, Ps[a + 7u * PR], Xs[x + 7u * HV]);
  o = op4(o, Ps[a + 8u * PR], Xs[x + 8u * HV]);
  o = op4(o, Ps[a + 9u * PR], Xs[x + 9u * HV]);
  o = op4(o, Ps[a + 10u * PR], Xs[x + 10u * HV]);
  o = op4(o, Ps[a + 11u * PR], Xs[x + 11u * HV]);
  o = op4(o, Ps[a + 12u * PR], Xs[x + 12u * HV]);
  o = op4(o, Ps[a + 13u * PR], Xs[x + 13u * HV]);
  o = op4(o, Ps[a + 14u * PR], Xs[x + 14u * HV]);
  o = op4(o, Ps[a + 15u * PR], Xs[x + 15u * HV]);
  return o;
}

fn pv16_2(o0: M2, j0: u32, ty: u32, x: u32) -> M2 {
  let a = j0 * PR + ty;
  var o = o0;
  {
    let xv = Xs[x];
    o.a = op4(o.a, Ps[a], xv);
    o.b = op4(o.b, Ps[a + TY], xv);
  }
  {
    let xv = Xs[x + 1u * HV];
    o.a = op4(o.a, Ps[a + 1u * PR], xv);
    o.b = op4(o.b, Ps[a + TY + 1u * PR], xv);
  }
  {
    let xv = Xs[x + 2u * HV];
    o.a = op4(o.a, Ps[a + 2u * PR], xv);
    o.b = op4(o.b, Ps[a + TY + 2u * PR], xv);
  }
  {
    let xv = Xs[x + 3u * HV];
    o.a = op4(o.a, Ps[a + 3u * PR], xv);
    o.b = op4(o.b, Ps[a + TY + 3u * PR], xv);
  }
  {
    let xv = Xs[x + 4u * HV];
    o.a = op4(o.a, Ps[a + 4u * PR], xv);
    o.b = op4(o.b, Ps[a + TY + 4u * PR], xv);
  }
  {
    let xv = Xs[x + 5u * HV];
    o.a = op4(o.a, Ps[a + 5u * PR], xv);
    o.b = op4(o.b, Ps[a + TY + 5u * PR], xv);
  }
  {
    let xv = Xs[x + 6u * HV];
    o.a = op4(o.a, Ps[a + 6u * PR], xv);
    o.b = op4(o.b, Ps[a + TY + 6u * PR], xv);
  }
  {
    let xv = Xs[x + 7u * HV];
    o.a = op4(o.a, Ps[a + 7u * PR], xv);
    o.b = op4(o.b, Ps[a + TY + 7u * PR], xv);
  }
  {
    let xv = Xs[x + 8u * HV];
    o.a = op4(o.a, Ps[a + 8u * PR], xv);
    o.b = op4(o.b, Ps[a + TY + 8u * PR], xv);
  }
  {
    let xv = Xs[x + 9u * HV];
    o.a = op4(o.a, Ps[a + 9u * PR], xv);
    o.b = op4(o.b, Ps[a + TY + 9u * PR], xv);
  }
  {
    let xv = Xs[x + 10u * HV];
    o.a = op4(o.a, Ps[a + 10u * PR], xv);
    o.b = op4(o.b, Ps[a + TY + 10u * PR], xv);
  }
  {
    let xv = Xs[x + 11u * HV];
    o.a = op4(o.a, Ps[a + 11u * PR], xv);
    o.b = op4(o.b, Ps[a + TY + 11u * PR], xv);
  }
  {
    let xv = Xs[x + 12u * HV];
    o.a = op4(o.a, Ps[a + 12u * PR], xv);
    o.b = op4(o.b, Ps[a + TY + 12u * PR], xv);
  }
  {
    let xv = Xs[x + 13u * HV];
    o.a = op4(o.a, Ps[a + 13u * PR], xv);
    o.b = op4(o.b, Ps[a + TY + 13u * PR], xv);
  }
  {
    let xv = Xs[x + 14u * HV];
    o.a = op4(o.a, Ps[a + 14u * PR], xv);
    o.b = op4(o.b, Ps[a + TY + 14u * PR], xv);
  }
  {
    let xv = Xs[x + 15u * HV];
    o.a = op4(o.a, Ps[a + 15u * PR], xv);
    o.b = op4(o.b, Ps[a + TY + 15u * PR], xv);
  }
  return o;
}

// the scores of a chunk / the product with a staged chunk, for RG row groups
fn scores(s: M2, ty: u32, tx: u32) -> M2 {
  if (RG == 2u) {
    return st16_2(s, ty, tx);
  }
  return M2(st16(s.a, ty, tx), s.b);
}
fn prod(o: M2, j0: u32, ty: u32, x: u32) -> M2 {
  if (RG == 2u) {
    return pv16_2(o, j0, ty, x);
  }
  return M2(pv16(o.a, j0, ty, x), o.b);
}

// a thread's P (or dS) blocks into Ps, column-major
fn put_p(p: M2, ty: u32, tx: u32) {
  let q = transpose(p.a); // q[c]: column c's 4 rows
  Ps[(4u * tx) * PR + ty] = q[0];
  Ps[(4u * tx + 1u) * PR + ty] = q[1];
  Ps[(4u * tx + 2u) * PR + ty] = q[2];
  Ps[(4u * tx + 3u) * PR + ty] = q[3];
  if (RG == 2u) {
    let r = transpose(p.b);
    Ps[(4u * tx) * PR + TY + ty] = r[0];
    Ps[(4u * tx + 1u) * PR + TY + ty] = r[1];
    Ps[(4u * tx + 2u) * PR + TY + ty] = r[2];
    Ps[(4u * tx + 3u) * PR + TY + ty] = r[3];
  }
}

// Workgroup-memory stage of lanes_max4 / lanes_sum4 (common/lanes_*.wgsl), through Xs: every
// caller is past the barrier after its last chunk product and before its next chunk store
fn lanes_combine(x: vec4<f32>, lid: u32, step: u32, is_max: bool) -> vec4<f32> {
  workgroupBarrier();
  Xs[lid] = x;
  workgroupBarrier();
  let base = lid - lid % TX;
  var r = Xs[base];
  for (var k = step; k < TX; k += step) {
    let y = Xs[base + k];
    r = select(r + y, max(r, y), is_max);
  }
  return r;
}

fn mask_q(s: vec4<f32>, t: u32, k0: u32, T: u32) -> vec4<f32> {
  let k = vec4<u32>(k0) + vec4<u32>(0u, 1u, 2u, 3u);
  return select(s, vec4<f32>(NEG), (k > vec4<u32>(t)) | (k >= vec4<u32>(T)));
}
fn mask_k(s: vec4<f32>, j: u32, t0: u32, T: u32) -> vec4<f32> {
  let t = vec4<u32>(t0) + vec4<u32>(0u, 1u, 2u, 3u);
  return select(s, vec4<f32>(NEG), (t < vec4<u32>(j)) | (t >= vec4<u32>(T)));
}
fn scale_rows(o: mat4x4<f32>, c: vec4<f32>) -> mat4x4<f32> {
  return mat4x4<f32>(o[0] * c.x, o[1] * c.y, o[2] * c.z, o[3] * c.w);
}

// one online-softmax step of a 4-row block: rows t..t+3 against keys k0..k0+3
struct OS {
  p: mat4x4<f32>,
  m: vec4<f32>,
  l: vec4<f32>,
  c: vec4<f32>,
}
fn online(s0: mat4x4<f32>, t: u32, k0: u32, T: u32, m: vec4<f32>, l: vec4<f32>, lid: u32) -> OS {
  let s = mat4x4<f32>(mask_q(s0[0], t, k0, T), mask_q(s0[1], t + 1u, k0, T), mask_q(s0[2], t + 2u, k0, T),
                      mask_q(s0[3], t + 3u, k0, T));
  let mt = lanes_max4(vec4<f32>(max4(s[0]), max4(s[1]), max4(s[2]), max4(s[3])), lid);
  let mn = max(m, mt);
  let corr = exp(m - mn);
  let p = mat4x4<f32>(exp(s[0] - vec4<f32>(mn.x)), exp(s[1] - vec4<f32>(mn.y)), exp(s[2] - vec4<f32>(mn.z)),
                      exp(s[3] - vec4<f32>(mn.w)));
  return OS(p, mn, l * corr + vec4<f32>(sum4(p[0]), sum4(p[1]), sum4(p[2]), sum4(p[3])), corr);
}

fn pick(o: mat4x4<f32>, i: u32) -> vec4<f32> {
  var r = o[0];
  if (i == 1u) {
    r = o[1];
  } else if (i == 2u) {
    r = o[2];
  } else if (i == 3u) {
    r = o[3];
  }
  return r;
}
fn pick1(v: vec4<f32>, i: u32) -> f32 {
  var r = v.x;
  if (i == 1u) {
    r = v.y;
  } else if (i == 2u) {
    r = v.z;
  } else if (i == 3u) {
    r = v.w;
  }
  return r;
}
// lse or D of rows t .. t+3 of head row base rb (0 past T)
fn ld_rows(a: u32, rb: u32, t: u32, T: u32) -> vec4<f32> {
  var v = vec4<f32>(0.0);
  if (t < T) {
    v.x = lds(a, rb + t);
  }
  if (t + 1u < T) {
    v.y = lds(a, rb + t + 1u);
  }
  if (t + 2u < T) {
    v.z = lds(a, rb + t + 2u);
  }
  if (t + 3u < T) {
    v.w = lds(a, rb + t + 3u);
  }
  return v;
}

// rows t..t+3 of a 4-row output block (and its second vec4 column o2 when NOV = 2), times
// the row factors f, to argument a at element base + row·stride (stores check row < T)
fn store_rows(a: u32, base: u32, stride: u32, t: u32, T: u32, o: mat4x4<f32>, o2: mat4x4<f32>, f: vec4<f32>,
              tx: u32) {
  for (var i = 0u; i < 4u; i++) {
    if (t + i < T) {
      let ob = (base + (t + i) * stride) / 4u + tx;
      let fi = pick1(f, i);
      stv(a, ob, pick(o, i) * fi);
      if (NOV == 2u) {
        stv(a, ob + TX, pick(o2, i) * fi);
      }
    }
  }
}

// grid (n_head, B, ceil(T/R)) or (ceil(T/R), n_head, B) (u10, grid_ids); args 0 out, 1 lse,
// 2 q, 3 k, 4 v
@compute @workgroup_size(NT)
fn fa_fwd(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let T = pu(0u);
  let nh = pu(3u);
  let ids = grid_ids(wid);
  let b = ids.z;
  let h = ids.y;
  let g = h / (nh / pu(4u));
  let q0 = ((T + R - 1u) / R - 1u - ids.x) * R; // block 0: the last rows, which see the most keys
  let ty = lid / TX;
  let tx = lid % TX;
  let qs = pu(5u);
  let kvs = pu(6u);
  let sc = pf(8u);
  let qbase = b * T * qs + h * HD;
  let kbase = b * T * kvs + g * HD;
  let ta = q0 + 4u * ty;
  let tb = ta + 4u * TY;
  var ma = vec4<f32>(NEG);
  var mb = vec4<f32>(NEG);
  var la = vec4<f32>(0.0);
  var lb = vec4<f32>(0.0);
  var o = M2();
  var o2 = M2();
  let kend = min(q0 + R, T);
  // the first chunk of q and k (PF: loaded ahead of every chunk's FMAs)
  var na = L4();
  var nb = L4();
  if (PF == 1u) {
    na = ld_t(2u, qbase, qs, q0, T, R, 0u, sc, lid);
    nb = ld_t(3u, kbase, kvs, 0u, T, C, 0u, 1.0, lid);
  }
  for (var j0 = 0u; j0 < kend; j0 += C) {
    var s = M2();
    for (var d0 = 0u; d0 < HD; d0 += DK) {
      if (PF == 0u) {
        na = ld_t(2u, qbase, qs, q0, T, R, d0, sc, lid);
        nb = ld_t(3u, kbase, kvs, j0, T, C, d0, 1.0, lid);
      }
      workgroupBarrier();
      st_t(0u, R, RA, na, lid);
      st_t(XB, C, CA, nb, lid);
      workgroupBarrier();
      if (PF == 1u && d0 + DK < HD) {
        na = ld_t(2u, qbase, qs, q0, T, R, d0 + DK, sc, lid);
        nb = ld_t(3u, kbase, kvs, j0, T, C, d0 + DK, 1.0, lid);
      }
      s = scores(s, ty, tx);
    }
    let jn = min(C, kend - j0); // keys of this tile that any row sees
    var nr = L4();
    if (PF == 1u) {
      nr = ld_r(4u, kbase, kvs, j0, T, lid);
    }
    let k0 = j0 + 4u * tx;
    let ra = online(s.a, ta, k0, T, ma, la, lid);
    ma = ra.m;
    la = ra.l;
    var pm = M2(ra.p, mat4x4<f32>());
    o.a = scale_rows(o.a, ra.c);
    if (NOV == 2u) {
      o2.a = scale_rows(o2.a, ra.c);
    }
    if (RG == 2u) {
      let rb = online(s.b, tb, k0, T, mb, lb, lid);
      mb = rb.m;
      lb = rb.l;
      pm.b = rb.p;
      o.b = scale_rows(o.b, rb.c);
      if (NOV == 2u) {
        o2.b = scale_rows(o2.b, rb.c);
      }
    }
    put_p(pm, ty, tx);
    for (var jj = 0u; jj < jn; jj += DK) {
      if (PF == 0u) {
        nr = ld_r(4u, kbase, kvs, j0 + jj, T, lid);
      }
      workgroupBarrier();
      st_r(nr, lid);
      workgroupBarrier();
      if (PF == 1u) {
        if (jj + DK < jn) {
          nr = ld_r(4u, kbase, kvs, j0 + jj + DK, T, lid);
        } else if (j0 + C < kend) { // the next tile's first chunk
          na = ld_t(2u, qbase, qs, q0, T, R, 0u, sc, lid);
          nb = ld_t(3u, kbase, kvs, j0 + C, T, C, 0u, 1.0, lid);
        }
      }
      o = prod(o, jj, ty, tx);
      if (NOV == 2u) {
        o2 = prod(o2, jj, ty, tx + TX);
      }
    }
  }
  let C_ = nh * HD;
  let obase = b * T * C_ + h * HD;
  let lta = lanes_sum4(la, lid);
  store_rows(0u, obase, C_, ta, T, o.a, o2.a, 1.0 / lta, tx);
  let lsa = ma + log(lta);
  var ltb = vec4<f32>(1.0);
  if (RG == 2u) {
    ltb = lanes_sum4(lb, lid);
    store_rows(0u, obase, C_, tb, T, o.b, o2.b, 1.0 / ltb, tx);
  }
  let lsb = mb + log(ltb);
  if (pu(7u) != 0u && tx == 0u) {
    let rb = (b * nh + h) * T;
    for (var i = 0u; i < 4u; i++) {
      if (ta + i < T) {
        sts(1u, rb + ta + i, pick1(lsa, i));
      }
      if (RG == 2u && tb + i < T) {
        sts(1u, rb + tb + i, pick1(lsb, i));
      }
    }
  }
}

// dS of a 4-row block: rows t..t+3 (fa_dq: queries; scores s, dP dp) against keys k0..k0+3
fn ds_q(s: mat4x4<f32>, dp: mat4x4<f32>, t: u32, k0: u32, T: u32, lse: vec4<f32>, D: vec4<f32>, sc: f32)
    -> mat4x4<f32> {
  let p0 = exp(mask_q(s[0], t, k0, T) - vec4<f32>(lse.x));
  let p1 = exp(mask_q(s[1], t + 1u, k0, T) - vec4<f32>(lse.y));
  let p2 = exp(mask_q(s[2], t + 2u, k0, T) - vec4<f32>(lse.z));
  let p3 = exp(mask_q(s[3], t + 3u, k0, T) - vec4<f32>(lse.w));
  return mat4x4<f32>(p0 * (dp[0] - vec4<f32>(D.x)) * sc, p1 * (dp[1] - vec4<f32>(D.y)) * sc,
                     p2 * (dp[2] - vec4<f32>(D.z)) * sc, p3 * (dp[3] - vec4<f32>(D.w)) * sc);
}

// D = Σ_d dout·out of row t (0 past T) over this thread's NOV column vec4s (args 5 dout, 7 out)
fn d_row(obase: u32, os: u32, t: u32, T: u32, tx: u32) -> f32 {
  var x = 0.0;
  if (t < T) {
    let ob = (obase + t * os) / 4u + tx;
    x = dot(ldv(5u, ob), ldv(7u, ob));
    if (NOV == 2u) {
      x += dot(ldv(5u, ob + TX), ldv(7u, ob + TX));
    }
  }
  return x;
}
// D of rows t .. t+3, summed over the TX threads of the rows (uniform control flow)
fn d_rows(obase: u32, os: u32, t: u32, T: u32, tx: u32, lid: u32) -> vec4<f32> {
  let v = vec4<f32>(d_row(obase, os, t, T, tx), d_row(obase, os, t + 1u, T, tx), d_row(obase, os, t + 2u, T, tx),
                    d_row(obase, os, t + 3u, T, tx));
  return lanes_sum4(v, lid);
}

// the two operands of staging step st of a score loop: even steps (A0, B0) for s, odd ones
// (A1, B1) for dp, chunk d0 = (st / 2)·DK; rows a0 .. a0+R-1 and columns b0 .. b0+C-1
struct L8 {
  a: L4,
  b: L4,
}
fn ld_pair(st: u32, A0: u32, A1: u32, abase0: u32, abase1: u32, as0: u32, as1: u32, a0: u32, asc0: f32, B0: u32,
           B1: u32, bbase0: u32, bbase1: u32, bs0: u32, bs1: u32, b0: u32, bsc0: f32, T: u32, lid: u32) -> L8 {
  let d0 = (st / 2u) * DK;
  if (st % 2u == 0u) {
    return L8(ld_t(A0, abase0, as0, a0, T, R, d0, asc0, lid), ld_t(B0, bbase0, bs0, b0, T, C, d0, bsc0, lid));
  }
  return L8(ld_t(A1, abase1, as1, a0, T, R, d0, 1.0, lid), ld_t(B1, bbase1, bs1, b0, T, C, d0, 1.0, lid));
}
const NST: u32 = 2u * (HD / DK); // staging steps of a score loop (s and dp)

// grid as fa_fwd's; args 0 dq, 1 D (written when FD = 1, else read), 2 q, 3 k, 4 v, 5 dout,
// 6 lse, 7 out (FD = 1 only)
@compute @workgroup_size(NT)
fn fa_dq(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let T = pu(0u);
  let nh = pu(3u);
  let ids = grid_ids(wid);
  let b = ids.z;
  let h = ids.y;
  let g = h / (nh / pu(4u));
  let q0 = ((T + R - 1u) / R - 1u - ids.x) * R; // block 0: the last rows
  let ty = lid / TX;
  let tx = lid % TX;
  let qs = pu(5u);
  let kvs = pu(6u);
  let os = nh * HD;
  let sc = pf(8u);
  let qbase = b * T * qs + h * HD;
  let kbase = b * T * kvs + g * HD;
  let obase = b * T * os + h * HD;
  let ta = q0 + 4u * ty;
  let tb = ta + 4u * TY;
  let rb = (b * nh + h) * T;
  let lsa = ld_rows(6u, rb, ta, T);
  let lsb = ld_rows(6u, rb, tb, T);
  var Da = vec4<f32>(0.0);
  var Db = vec4<f32>(0.0);
  if (FD == 1u) { // D = rowsum(dout ∘ out) here, for fa_dkdv too
    Da = d_rows(obase, os, ta, T, tx, lid);
    if (RG == 2u) {
      Db = d_rows(obase, os, tb, T, tx, lid);
    }
    if (tx == 0u) {
      for (var i = 0u; i < 4u; i++) {
        if (ta + i < T) {
          sts(1u, rb + ta + i, pick1(Da, i));
        }
        if (RG == 2u && tb + i < T) {
          sts(1u, rb + tb + i, pick1(Db, i));
        }
      }
    }
  } else {
    Da = ld_rows(1u, rb, ta, T);
    Db = ld_rows(1u, rb, tb, T);
  }
  var dq = M2();
  var dq2 = M2();
  let kend = min(q0 + R, T);
  // score steps: (q·scale, k) for s, (dout, v) for dp
  var nx = L8();
  if (PF == 1u) {
    nx = ld_pair(0u, 2u, 5u, qbase, obase, qs, os, q0, sc, 3u, 4u, kbase, kbase, kvs, kvs, 0u, 1.0, T, lid);
  }
  var nr = L4();
  for (var j0 = 0u; j0 < kend; j0 += C) {
    var s = M2();
    var dp = M2();
    for (var st = 0u; st < NST; st++) {
      if (PF == 0u) {
        nx = ld_pair(st, 2u, 5u, qbase, obase, qs, os, q0, sc, 3u, 4u, kbase, kbase, kvs, kvs, j0, 1.0, T, lid);
      }
      workgroupBarrier();
      st_t(0u, R, RA, nx.a, lid);
      st_t(XB, C, CA, nx.b, lid);
      workgroupBarrier();
      if (PF == 1u) {
        if (st + 1u < NST) {
          nx = ld_pair(st + 1u, 2u, 5u, qbase, obase, qs, os, q0, sc, 3u, 4u, kbase, kbase, kvs, kvs, j0, 1.0, T,
                       lid);
        } else {
          nr = ld_r(3u, kbase, kvs, j0, T, lid);
        }
      }
      if (st % 2u == 0u) {
        s = scores(s, ty, tx);
      } else {
        dp = scores(dp, ty, tx);
      }
    }
    let k0 = j0 + 4u * tx;
    var ds = M2(ds_q(s.a, dp.a, ta, k0, T, lsa, Da, sc), mat4x4<f32>());
    if (RG == 2u) {
      ds.b = ds_q(s.b, dp.b, tb, k0, T, lsb, Db, sc);
    }
    put_p(ds, ty, tx);
    let jn = min(C, kend - j0);
    for (var jj = 0u; jj < jn; jj += DK) {
      if (PF == 0u) {
        nr = ld_r(3u, kbase, kvs, j0 + jj, T, lid);
      }
      workgroupBarrier();
      st_r(nr, lid);
      workgroupBarrier();
      if (PF == 1u) {
        if (jj + DK < jn) {
          nr = ld_r(3u, kbase, kvs, j0 + jj + DK, T, lid);
        } else if (j0 + C < kend) {
          nx = ld_pair(0u, 2u, 5u, qbase, obase, qs, os, q0, sc, 3u, 4u, kbase, kbase, kvs, kvs, j0 + C, 1.0, T, lid);
        }
      }
      dq = prod(dq, jj, ty, tx);
      if (NOV == 2u) {
        dq2 = prod(dq2, jj, ty, tx + TX);
      }
    }
  }
  store_rows(0u, qbase, qs, ta, T, dq.a, dq2.a, vec4<f32>(1.0), tx);
  if (RG == 2u) {
    store_rows(0u, qbase, qs, tb, T, dq.b, dq2.b, vec4<f32>(1.0), tx);
  }
}

// P and dS of a 4-key block: keys j..j+3 against queries t0..t0+3 (lse, D: those queries')
fn pds_k(s: mat4x4<f32>, dp: mat4x4<f32>, j: u32, t0: u32, T: u32, lse: vec4<f32>, D: vec4<f32>, sc: f32) -> M2 {
  let p = mat4x4<f32>(exp(mask_k(s[0], j, t0, T) - lse), exp(mask_k(s[1], j + 1u, t0, T) - lse),
                      exp(mask_k(s[2], j + 2u, t0, T) - lse), exp(mask_k(s[3], j + 3u, t0, T) - lse));
  let ds = mat4x4<f32>(p[0] * (dp[0] - D) * sc, p[1] * (dp[1] - D) * sc, p[2] * (dp[2] - D) * sc,
                       p[3] * (dp[3] - D) * sc);
  return M2(p, ds);
}

// FQ = 1: dq's partial sums instead of fa_dq (FlashAttention-2's five matmul units instead of
// seven: fa_dq recomputes S and dP). After dS of (key block kb, query tile) is in Ps, the tile's
// partial dq = dS·K_block (C queries × HD, over the block's R keys) is stored to the scratch
// (argument 7 from element u11, after D) as part[bl, h, row(kb, t), :], bl = b − u13: per
// (sequence, query head) u12 rows, block kb's queries t = kb·R .. T−1 from row part_row(kb)
// (causal packing: no rows for t < kb·R). fa_dq_sum then adds a query's blocks in a fixed
// order. WGSL has no float atomics, hence the scratch. Each thread owns NPQ (query block of
// 4, output vec4) pairs: p = lid + i·NT < TX·HV, queries 4·(p / HV) .. +3 of the tile, column
// vec4 p % HV (HD 32: only TX·HV = 64 threads work in this phase).
const NPQ: u32 = (TX * HV + NT - 1u) / NT;
fn part_row(kb: u32, T: u32) -> u32 {
  return kb * T - R * ((kb * max(kb, 1u) - kb) / 2u); // Σ_{k < kb} (T − k·R)
}
// o += k·a: 4 K rows (columns of k) weighted by the dS of 4 keys for one query (a)
fn mv4(o: vec4<f32>, k: mat4x4<f32>, a: vec4<f32>) -> vec4<f32> {
  return fma(k[3], vec4<f32>(a.w), fma(k[2], vec4<f32>(a.z), fma(k[1], vec4<f32>(a.y), fma(k[0], vec4<f32>(a.x), o))));
}
// queries 4qb .. 4qb+3 (Ps index pq = 4qb·PR + key group) against 4 staged K rows from Xs[x]
fn dq_k4(acc: mat4x4<f32>, pq: u32, x: u32) -> mat4x4<f32> {
  let k = mat4x4<f32>(Xs[x], Xs[x + HV], Xs[x + 2u * HV], Xs[x + 3u * HV]);
  return mat4x4<f32>(mv4(acc[0], k, Ps[pq]), mv4(acc[1], k, Ps[pq + PR]), mv4(acc[2], k, Ps[pq + 2u * PR]),
                     mv4(acc[3], k, Ps[pq + 3u * PR]));
}
// pair p's sums over the DK keys kc .. kc+15 of the block staged in Xs (row-major)
fn dq16(acc: mat4x4<f32>, kc: u32, p: u32) -> mat4x4<f32> {
  let dx = p % HV;
  let pq = 4u * (p / HV) * PR + kc / 4u;
  var o = dq_k4(acc, pq, dx);
  o = dq_k4(o, pq + 1u, 4u * HV + dx);
  o = dq_k4(o, pq + 2u, 8u * HV + dx);
  return dq_k4(o, pq + 3u, 12u * HV + dx);
}
// pair p's four rows (queries t0 + 4·(p / HV) + i below T) to the part, from row pb (query k0)
fn store_dq(pb: u32, t0: u32, k0: u32, T: u32, acc: mat4x4<f32>, p: u32) {
  let t = t0 + 4u * (p / HV);
  for (var i = 0u; i < 4u; i++) {
    if (t + i < T) {
      stv(7u, pu(11u) / 4u + (pb + t + i - k0) * HV + p % HV, pick(acc, i));
    }
  }
}

// grid (n_kv_head, B, ceil(T/R)) or (ceil(T/R), n_kv_head, B) (u10, grid_ids; FQ: B the
// sequences of this chunk); args 0 dk, 1 dv, 2 q, 3 k, 4 v, 5 dout, 6 lse, 7 D (FQ: then the
// partial sums from element u11)
@compute @workgroup_size(NT)
fn fa_dkdv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let T = pu(0u);
  let nh = pu(3u);
  let rep = nh / pu(4u);
  let ids = grid_ids(wid);
  let b = ids.z + pu(13u); // FQ: a chunk of the batch from sequence u13 (else 0)
  let g = ids.y;
  let k0 = ids.x * R; // block 0: the first keys, which the most queries see
  let ty = lid / TX;
  let tx = lid % TX;
  let qs = pu(5u);
  let kvs = pu(6u);
  let os = nh * HD;
  let sc = pf(8u);
  let kbase = b * T * kvs + g * HD;
  let ja = k0 + 4u * ty; // this thread's keys ja .. ja+3 (and jb .. jb+3)
  let jb = ja + 4u * TY;
  var dk = M2();
  var dk2 = M2();
  var dv = M2();
  var dv2 = M2();
  var nx = L8();
  var nr = L4();
  for (var h = g * rep; h < (g + 1u) * rep; h++) {
    let qbase = b * T * qs + h * HD;
    let obase = b * T * os + h * HD;
    let rb = (b * nh + h) * T;
    // score steps: (k, q·scale) for s, (v, dout) for dp
    if (PF == 1u) { // a head's first tile (later tiles were loaded ahead)
      nx = ld_pair(0u, 3u, 4u, kbase, kbase, kvs, kvs, k0, 1.0, 2u, 5u, qbase, obase, qs, os, k0, sc, T, lid);
    }
    for (var t0 = k0; t0 < T; t0 += C) { // queries before k0 see none of these keys
      let tc = t0 + 4u * tx; // this thread's queries tc .. tc+3
      let lse = ld_rows(6u, rb, tc, T);
      let D = ld_rows(7u, rb, tc, T);
      var s = M2();
      var dp = M2();
      for (var st = 0u; st < NST; st++) {
        if (PF == 0u) {
          nx = ld_pair(st, 3u, 4u, kbase, kbase, kvs, kvs, k0, 1.0, 2u, 5u, qbase, obase, qs, os, t0, sc, T, lid);
        }
        workgroupBarrier();
        st_t(0u, R, RA, nx.a, lid);
        st_t(XB, C, CA, nx.b, lid);
        workgroupBarrier();
        if (PF == 1u) {
          if (st + 1u < NST) {
            nx = ld_pair(st + 1u, 3u, 4u, kbase, kbase, kvs, kvs, k0, 1.0, 2u, 5u, qbase, obase, qs, os, t0, sc, T,
                         lid);
          } else {
            nr = ld_r(5u, obase, os, t0, T, lid);
          }
        }
        if (st % 2u == 0u) {
          s = scores(s, ty, tx);
        } else {
          dp = scores(dp, ty, tx);
        }
      }
      let xa = pds_k(s.a, dp.a, ja, tc, T, lse, D, sc);
      var xb = M2();
      if (RG == 2u) {
        xb = pds_k(s.b, dp.b, jb, tc, T, lse, D, sc);
      }
      put_p(M2(xa.a, xb.a), ty, tx);
      let tn = min(C, T - t0);
      for (var jj = 0u; jj < tn; jj += DK) {
        if (PF == 0u) {
          nr = ld_r(5u, obase, os, t0 + jj, T, lid);
        }
        workgroupBarrier();
        st_r(nr, lid);
        workgroupBarrier();
        if (PF == 1u) {
          if (jj + DK < tn) {
            nr = ld_r(5u, obase, os, t0 + jj + DK, T, lid);
          } else {
            nr = ld_r(2u, qbase, qs, t0, T, lid);
          }
        }
        dv = prod(dv, jj, ty, tx);
        if (NOV == 2u) {
          dv2 = prod(dv2, jj, ty, tx + TX);
        }
      }
      workgroupBarrier();
      put_p(M2(xa.b, xb.b), ty, tx);
      for (var jj = 0u; jj < tn; jj += DK) {
        if (PF == 0u) {
          nr = ld_r(2u, qbase, qs, t0 + jj, T, lid);
        }
        workgroupBarrier();
        st_r(nr, lid);
        workgroupBarrier();
        if (PF == 1u) {
          if (jj + DK < tn) {
            nr = ld_r(2u, qbase, qs, t0 + jj + DK, T, lid);
          } else if (FQ == 1u) { // the block's first K chunk (dq phase)
            nr = ld_r(3u, kbase, kvs, k0, T, lid);
          } else if (t0 + C < T) {
            nx = ld_pair(0u, 3u, 4u, kbase, kbase, kvs, kvs, k0, 1.0, 2u, 5u, qbase, obase, qs, os, t0 + C, sc, T, lid);
          }
        }
        dk = prod(dk, jj, ty, tx);
        if (NOV == 2u) {
          dk2 = prod(dk2, jj, ty, tx + TX);
        }
      }
      if (FQ == 1u) {
        // dq's partial sum over this key block for the tile's queries: dS (still in Ps) times
        // the block's K rows, streamed through Xs in DK-row chunks; stored, not accumulated
        let kn = min(R, T - k0); // keys of the block below T (dS of the others is 0)
        var a0 = mat4x4<f32>();
        var a1 = mat4x4<f32>();
        var a2 = mat4x4<f32>();
        var a3 = mat4x4<f32>();
        for (var kc = 0u; kc < kn; kc += DK) {
          if (PF == 0u) {
            nr = ld_r(3u, kbase, kvs, k0 + kc, T, lid);
          }
          workgroupBarrier();
          st_r(nr, lid);
          workgroupBarrier();
          if (PF == 1u) {
            if (kc + DK < kn) {
              nr = ld_r(3u, kbase, kvs, k0 + kc + DK, T, lid);
            } else if (t0 + C < T) {
              nx = ld_pair(0u, 3u, 4u, kbase, kbase, kvs, kvs, k0, 1.0, 2u, 5u, qbase, obase, qs, os, t0 + C, sc, T,
                           lid);
            }
          }
          if (lid < TX * HV) {
            a0 = dq16(a0, kc, lid);
          }
          if (NPQ > 1u) {
            a1 = dq16(a1, kc, lid + NT);
          }
          if (NPQ > 2u) {
            a2 = dq16(a2, kc, lid + 2u * NT);
            a3 = dq16(a3, kc, lid + 3u * NT);
          }
        }
        let pb = (ids.z * nh + h) * pu(12u) + part_row(ids.x, T); // row of query k0 in the part
        if (lid < TX * HV) {
          store_dq(pb, t0, k0, T, a0, lid);
        }
        if (NPQ > 1u) {
          store_dq(pb, t0, k0, T, a1, lid + NT);
        }
        if (NPQ > 2u) {
          store_dq(pb, t0, k0, T, a2, lid + 2u * NT);
          store_dq(pb, t0, k0, T, a3, lid + 3u * NT);
        }
      }
    }
  }
  store_rows(0u, kbase, kvs, ja, T, dk.a, dk2.a, vec4<f32>(1.0), tx);
  store_rows(1u, kbase, kvs, ja, T, dv.a, dv2.a, vec4<f32>(1.0), tx);
  if (RG == 2u) {
    store_rows(0u, kbase, kvs, jb, T, dk.b, dk2.b, vec4<f32>(1.0), tx);
    store_rows(1u, kbase, kvs, jb, T, dv.b, dv2.b, vec4<f32>(1.0), tx);
  }
}

// D[b, h, t] = Σ_d dout·out of every row (the separate pass of FQ = 1, which has no fa_dq to
// compute it): a 1-D grid over B·n_head·T rows (x·y folded, 256 threads), t fastest; args
// 0 D, 1 dout, 2 out
@compute @workgroup_size(256)
fn fa_d(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  let T = pu(0u);
  let nh = pu(3u);
  if (i >= pu(9u) * nh * T) {
    return;
  }
  let t = i % T;
  let h = (i / T) % nh;
  let b = i / (T * nh);
  let ob = ((b * T + t) * nh * HD + h * HD) / 4u;
  var x = vec4<f32>(0.0);
  for (var d4 = 0u; d4 < HV; d4++) {
    x = fma(ldv(1u, ob + d4), ldv(2u, ob + d4), x);
  }
  sts(0u, i, sum4(x));
}

// dq[b, t, h, :] = Σ_{kb ≤ t / R} part[b − u13, h, part_row(kb) + t − kb·R, :], blocks in
// ascending order (deterministic), for the u9 sequences of a chunk from sequence u13: a 1-D
// grid over u9·n_head·T·HV vec4s (x·y folded, 256 threads), column fastest; args 0 dq (row
// stride u5, as q), 1 the scratch (parts from element u11, u12 rows per (sequence, head))
@compute @workgroup_size(256)
fn fa_dq_sum(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  let T = pu(0u);
  let nh = pu(3u);
  if (i >= pu(9u) * nh * T * HV) {
    return;
  }
  let dx = i % HV;
  let t = (i / HV) % T;
  let bh = i / (HV * T);
  let h = bh % nh;
  let b = bh / nh + pu(13u);
  let base = pu(11u) / 4u + bh * pu(12u) * HV + dx;
  var acc = vec4<f32>(0.0);
  for (var kb = 0u; kb <= t / R; kb++) {
    acc += ldv(1u, base + (part_row(kb, T) + t - kb * R) * HV);
  }
  stv(0u, ((b * T + t) * pu(5u) + h * HD) / 4u + dx, acc);
}
