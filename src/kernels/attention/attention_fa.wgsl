// Flash attention (FlashAttention-2 structure, Dao 2023) for the training form of causal GQA
// attention: Tq == Tk == T, q_pos0 == 0, head_dim HD in {32, 64, 128}. attention.wgsl stays
// the fallback (KV-cache decoding Tq < Tk, other head sizes) and keeps attn_bwd_d
// (D = rowsum(dout ∘ out)), which the backward here reuses.
//
// Host prefix: `const HD: u32` (head_dim) and `const TX: u32` (threads across a tile's
// columns: 16 for HD 64/128, 8 for HD 32), plus `const SGW: u32` for the lane reductions
// (common/lanes_sg.wgsl or lanes_wg.wgsl, appended by the host).
//
// Every kernel is a chain of small register-tiled matmuls, like matmul_fast.wgsl: 256 threads
// as TY × TX (ty = lid / TX, tx = lid % TX); the workgroup owns R = 4·TY rows (query rows in
// fa_fwd / fa_dq, key rows in fa_dkdv) and streams tiles of C = 4·TX columns (keys, or
// queries in fa_dkdv). Thread (ty, tx) owns the 4 × 4 score block rows 4ty..4ty+3 × columns
// 4tx..4tx+3 (a mat4x4 whose column i is row i's four scores) and the output block rows
// 4ty.. × columns 4tx..4tx+3 (and 4TX+4tx.. when HD = 128: NOV = 2).
//   HD 64 / 128: R = C = 64;  HD 32: R = 128, C = 32 (TEZGAH_WEBGPU_ATTN_TX: other shapes).
// Scores: S = A·Bᵀ over HD in chunks of DK = 16, both operands staged d-major in workgroup
// memory (Xs, transposed on the way in, rows padded by one vec4), 16 outer-product steps
// written out (NVIDIA's driver does not unroll Tint's loops). Products with the tile:
// P (or dS) goes to workgroup memory key-major (Ps) and the other operand streams row-major
// in 16-row chunks: O += P·V. Row max / sum over the TX threads of a row: lanes_max4 /
// lanes_sum4 (subgroup shuffles where offered, else workgroup memory). Workgroup memory:
// 30.2 KB (HD 64/128) or 31.0 KB (HD 32), under the 32 KB every adapter we use offers.
//
// fa_fwd:   online softmax over key tiles up to the causal limit; out, lse = m + log l.
// fa_dq:    per query block over key tiles: p = exp(s − lse), ds = p (dout·v − D) · scale,
//           dq = Σ ds k.
// fa_dkdv:  per key block of kv head g, over the group's query heads and the query tiles
//           t ≥ key: dv = Σ p dout, dk = Σ ds q. No atomics: every output has one owner and a
//           fixed summation order (deterministic).
// Rows past T are staged as zeros and masked; stores check t < T.
// Uniforms as attention.wgsl: u0 T, u1 Tk, u2 q_pos0, u3 n_head, u4 n_kv_head, u5 q_stride,
// u6 kv_stride, u7 has_lse, u8 scale, u9 B. Arguments as attn_fwd / attn_bwd_dq / attn_bwd_dkdv.

const TY: u32 = 256u / TX;
const R: u32 = 4u * TY;          // rows per workgroup
const C: u32 = 4u * TX;          // columns per tile
const NOV: u32 = HD / (4u * TX); // output vec4s per row and thread (1, or 2 for HD 128)
const DK: u32 = 16u;             // chunk depth (d for scores, rows for products)
const RA: u32 = R / 4u + 1u;     // vec4 stride of a staged row-side d-row
const CA: u32 = C / 4u + 1u;     // vec4 stride of a staged column-side d-row
const XB: u32 = DK * RA;         // column-side chunk offset in Xs
const PR: u32 = R / 4u + 1u;     // vec4 stride of a Ps column (one key / query)
const HV: u32 = HD / 4u;         // vec4s per head row
const NEG: f32 = -3.0e38;

var<workgroup> Xs: array<vec4<f32>, DK * (RA + CA)>; // staged chunks ([DK][RA] + [DK][CA], or [DK][HV])
var<workgroup> Ps: array<vec4<f32>, C * PR>;         // P or dS, column-major: Ps[col·PR + ty] = rows 4ty..+3

fn ld4(a: u32, i: u32) -> vec4<f32> {
  return vec4<f32>(ld(a, i), ld(a, i + 1u), ld(a, i + 2u), ld(a, i + 3u));
}
fn st4(a: u32, i: u32, v: vec4<f32>) {
  st(a, i, v.x);
  st(a, i + 1u, v.y);
  st(a, i + 2u, v.z);
  st(a, i + 3u, v.w);
}
fn max4(v: vec4<f32>) -> f32 {
  return max(max(v.x, v.y), max(v.z, v.w));
}
fn sum4(v: vec4<f32>) -> f32 {
  return (v.x + v.y) + (v.z + v.w);
}

// Rows n0 .. n0+NR-1 (zeros from row nv on), columns d0 .. d0+DK-1 of a row-major tensor
// (argument a, row r at base + r·stride), times sc, into Xs[off + d·RS + r/4] (d-major, 4 rows
// per vec4). Thread: one d and four consecutive rows per vec4 (16 threads read 64 contiguous
// bytes of a row).
fn stage_t(off: u32, a: u32, base: u32, stride: u32, n0: u32, nv: u32, NR: u32, RS: u32, d0: u32, sc: f32,
           lid: u32) {
  for (var idx = lid; idx < DK * (NR / 4u); idx += 256u) {
    let d = idx % DK;
    let rq = idx / DK;
    let r = n0 + 4u * rq;
    let g = base + d0 + d + r * stride;
    var v = vec4<f32>(0.0);
    if (r < nv) {
      v.x = ld(a, g);
    }
    if (r + 1u < nv) {
      v.y = ld(a, g + stride);
    }
    if (r + 2u < nv) {
      v.z = ld(a, g + 2u * stride);
    }
    if (r + 3u < nv) {
      v.w = ld(a, g + 3u * stride);
    }
    Xs[off + d * RS + rq] = v * sc;
  }
}

// Rows n0 .. n0+DK-1 (zeros from row nv on) of a row-major tensor, all HD columns, into
// Xs[jj·HV + d4] (row-major).
fn stage_r(a: u32, base: u32, stride: u32, n0: u32, nv: u32, lid: u32) {
  for (var idx = lid; idx < DK * HV; idx += 256u) {
    let r = n0 + idx / HV;
    var v = vec4<f32>(0.0);
    if (r < nv) {
      v = ld4(a, base + r * stride + 4u * (idx % HV));
    }
    Xs[idx] = v;
  }
}

// s[i] += a[i] · b: the outer product of 4 rows (a) and 4 columns (b)
fn op4(s: mat4x4<f32>, a: vec4<f32>, b: vec4<f32>) -> mat4x4<f32> {
  return mat4x4<f32>(fma(vec4<f32>(a.x), b, s[0]), fma(vec4<f32>(a.y), b, s[1]), fma(vec4<f32>(a.z), b, s[2]),
                     fma(vec4<f32>(a.w), b, s[3]));
}

// scores of one staged chunk: s += Σ_d Xs[d·RA + ty] ⊗ Xs[XB + d·CA + tx] (written out)
fn st16(s0: mat4x4<f32>, ty: u32, tx: u32) -> mat4x4<f32> {
  let a = ty;
  let b = XB + tx;
  var s = op4(s0, Xs[a], Xs[b]);
  s = op4(s, Xs[a + RA], Xs[b + CA]);
  s = op4(s, Xs[a + 2u * RA], Xs[b + 2u * CA]);
  s = op4(s, Xs[a + 3u * RA], Xs[b + 3u * CA]);
  s = op4(s, Xs[a + 4u * RA], Xs[b + 4u * CA]);
  s = op4(s, Xs[a + 5u * RA], Xs[b + 5u * CA]);
  s = op4(s, Xs[a + 6u * RA], Xs[b + 6u * CA]);
  s = op4(s, Xs[a + 7u * RA], Xs[b + 7u * CA]);
  s = op4(s, Xs[a + 8u * RA], Xs[b + 8u * CA]);
  s = op4(s, Xs[a + 9u * RA], Xs[b + 9u * CA]);
  s = op4(s, Xs[a + 10u * RA], Xs[b + 10u * CA]);
  s = op4(s, Xs[a + 11u * RA], Xs[b + 11u * CA]);
  s = op4(s, Xs[a + 12u * RA], Xs[b + 12u * CA]);
  s = op4(s, Xs[a + 13u * RA], Xs[b + 13u * CA]);
  s = op4(s, Xs[a + 14u * RA], Xs[b + 14u * CA]);
  s = op4(s, Xs[a + 15u * RA], Xs[b + 15u * CA]);
  return s;
}

// product with a staged row-major chunk: o += Σ_jj Ps[(j0 + jj)·PR + ty] ⊗ Xs[jj·HV + x]
fn pv16(o0: mat4x4<f32>, j0: u32, ty: u32, x: u32) -> mat4x4<f32> {
  let a = j0 * PR + ty;
  var o = op4(o0, Ps[a], Xs[x]);
  o = op4(o, Ps[a + PR], Xs[x + HV]);
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

// the thread's 4 × 4 block of P (or dS) into Ps, column-major
fn put_p(p: mat4x4<f32>, ty: u32, tx: u32) {
  let q = transpose(p); // q[c] = (p[0][c], p[1][c], p[2][c], p[3][c]): column c's 4 rows
  Ps[(4u * tx) * PR + ty] = q[0];
  Ps[(4u * tx + 1u) * PR + ty] = q[1];
  Ps[(4u * tx + 2u) * PR + ty] = q[2];
  Ps[(4u * tx + 3u) * PR + ty] = q[3];
}

// Workgroup-memory stage of lanes_max4 / lanes_sum4 (common/lanes_*.wgsl): x holds the
// result over groups of `step` lanes; combines the TX / step groups of each row's TX lanes.
// Called from uniform control flow.
var<workgroup> lred: array<vec4<f32>, 256>;
fn lanes_combine(x: vec4<f32>, lid: u32, step: u32, is_max: bool) -> vec4<f32> {
  workgroupBarrier();
  lred[lid] = x;
  workgroupBarrier();
  let base = lid - lid % TX;
  var r = lred[base];
  for (var k = step; k < TX; k += step) {
    let y = lred[base + k];
    r = select(r + y, max(r, y), is_max);
  }
  return r;
}

// causal mask of row i's scores: query t against keys k0 .. k0+3 (fa_fwd, fa_dq), or key j
// against queries t0 .. t0+3 (fa_dkdv); NEG where the key is after the query or past T
fn mask_q(s: vec4<f32>, t: u32, k0: u32, T: u32) -> vec4<f32> {
  let k = vec4<u32>(k0) + vec4<u32>(0u, 1u, 2u, 3u);
  return select(s, vec4<f32>(NEG), (k > vec4<u32>(t)) | (k >= vec4<u32>(T)));
}
fn mask_k(s: vec4<f32>, j: u32, t0: u32, T: u32) -> vec4<f32> {
  let t = vec4<u32>(t0) + vec4<u32>(0u, 1u, 2u, 3u);
  return select(s, vec4<f32>(NEG), (t < vec4<u32>(j)) | (t >= vec4<u32>(T)));
}

// grid (ceil(T/R), n_head, B); args 0 out, 1 lse, 2 q, 3 k, 4 v
@compute @workgroup_size(256)
fn fa_fwd(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let T = pu(0u);
  let nh = pu(3u);
  let b = wid.z;
  let h = wid.y;
  let g = h / (nh / pu(4u));
  let q0 = ((T + R - 1u) / R - 1u - wid.x) * R; // longest rows first
  let ty = lid / TX;
  let tx = lid % TX;
  let qs = pu(5u);
  let kvs = pu(6u);
  let sc = pf(8u);
  let qbase = b * T * qs + h * HD;
  let kbase = b * T * kvs + g * HD;
  let t = q0 + 4u * ty;
  var m = vec4<f32>(NEG);
  var l = vec4<f32>(0.0);
  var o = mat4x4<f32>();
  var o2 = mat4x4<f32>();
  let kend = min(q0 + R, T);
  for (var j0 = 0u; j0 < kend; j0 += C) {
    var s = mat4x4<f32>();
    for (var d0 = 0u; d0 < HD; d0 += DK) {
      workgroupBarrier();
      stage_t(0u, 2u, qbase, qs, q0, T, R, RA, d0, sc, lid);
      stage_t(XB, 3u, kbase, kvs, j0, T, C, CA, d0, 1.0, lid);
      workgroupBarrier();
      s = st16(s, ty, tx);
    }
    let k0 = j0 + 4u * tx;
    s = mat4x4<f32>(mask_q(s[0], t, k0, T), mask_q(s[1], t + 1u, k0, T), mask_q(s[2], t + 2u, k0, T),
                    mask_q(s[3], t + 3u, k0, T));
    let mt = lanes_max4(vec4<f32>(max4(s[0]), max4(s[1]), max4(s[2]), max4(s[3])), lid);
    let mn = max(m, mt);
    let corr = exp(m - mn);
    m = mn;
    let p = mat4x4<f32>(exp(s[0] - vec4<f32>(mn.x)), exp(s[1] - vec4<f32>(mn.y)), exp(s[2] - vec4<f32>(mn.z)),
                        exp(s[3] - vec4<f32>(mn.w)));
    l = l * corr + vec4<f32>(sum4(p[0]), sum4(p[1]), sum4(p[2]), sum4(p[3]));
    o = mat4x4<f32>(o[0] * corr.x, o[1] * corr.y, o[2] * corr.z, o[3] * corr.w);
    if (NOV == 2u) {
      o2 = mat4x4<f32>(o2[0] * corr.x, o2[1] * corr.y, o2[2] * corr.z, o2[3] * corr.w);
    }
    put_p(p, ty, tx);
    let jn = min(C, kend - j0); // keys of this tile that any row sees
    for (var jj = 0u; jj < jn; jj += DK) {
      workgroupBarrier();
      stage_r(4u, kbase, kvs, j0 + jj, T, lid);
      workgroupBarrier();
      o = pv16(o, jj, ty, tx);
      if (NOV == 2u) {
        o2 = pv16(o2, jj, ty, tx + TX);
      }
    }
  }
  let lt = lanes_sum4(l, lid);
  let inv = 1.0 / lt;
  let ls = m + log(lt);
  let C_ = nh * HD;
  for (var i = 0u; i < 4u; i++) {
    let ti = t + i;
    if (ti < T) {
      let ob = (b * T + ti) * C_ + h * HD + 4u * tx;
      let oi = pick(o, i);
      let o2i = pick(o2, i);
      let li = pick1(inv, i);
      let lsi = pick1(ls, i);
      st4(0u, ob, oi * li);
      if (NOV == 2u) {
        st4(0u, ob + 4u * TX, o2i * li);
      }
      if (pu(7u) != 0u && tx == 0u) {
        st(1u, (b * nh + h) * T + ti, lsi);
      }
    }
  }
}

// row i (a constant-indexed pick for the store loops)
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
    v.x = ld(a, rb + t);
  }
  if (t + 1u < T) {
    v.y = ld(a, rb + t + 1u);
  }
  if (t + 2u < T) {
    v.z = ld(a, rb + t + 2u);
  }
  if (t + 3u < T) {
    v.w = ld(a, rb + t + 3u);
  }
  return v;
}

// grid (ceil(T/R), n_head, B); args 0 dq, 1 q, 2 k, 3 v, 4 dout, 5 lse, 6 D
@compute @workgroup_size(256)
fn fa_dq(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let T = pu(0u);
  let nh = pu(3u);
  let b = wid.z;
  let h = wid.y;
  let g = h / (nh / pu(4u));
  let q0 = ((T + R - 1u) / R - 1u - wid.x) * R;
  let ty = lid / TX;
  let tx = lid % TX;
  let qs = pu(5u);
  let kvs = pu(6u);
  let os = nh * HD;
  let sc = pf(8u);
  let qbase = b * T * qs + h * HD;
  let kbase = b * T * kvs + g * HD;
  let obase = b * T * os + h * HD;
  let t = q0 + 4u * ty;
  let rb = (b * nh + h) * T;
  let lse = ld_rows(5u, rb, t, T);
  let D = ld_rows(6u, rb, t, T);
  var dq = mat4x4<f32>();
  var dq2 = mat4x4<f32>();
  let kend = min(q0 + R, T);
  for (var j0 = 0u; j0 < kend; j0 += C) {
    var s = mat4x4<f32>();
    var dp = mat4x4<f32>();
    for (var d0 = 0u; d0 < HD; d0 += DK) {
      workgroupBarrier();
      stage_t(0u, 1u, qbase, qs, q0, T, R, RA, d0, sc, lid);
      stage_t(XB, 2u, kbase, kvs, j0, T, C, CA, d0, 1.0, lid);
      workgroupBarrier();
      s = st16(s, ty, tx);
      workgroupBarrier();
      stage_t(0u, 4u, obase, os, q0, T, R, RA, d0, 1.0, lid);
      stage_t(XB, 3u, kbase, kvs, j0, T, C, CA, d0, 1.0, lid);
      workgroupBarrier();
      dp = st16(dp, ty, tx);
    }
    let k0 = j0 + 4u * tx;
    let p0 = exp(mask_q(s[0], t, k0, T) - vec4<f32>(lse.x));
    let p1 = exp(mask_q(s[1], t + 1u, k0, T) - vec4<f32>(lse.y));
    let p2 = exp(mask_q(s[2], t + 2u, k0, T) - vec4<f32>(lse.z));
    let p3 = exp(mask_q(s[3], t + 3u, k0, T) - vec4<f32>(lse.w));
    let ds = mat4x4<f32>(p0 * (dp[0] - vec4<f32>(D.x)) * sc, p1 * (dp[1] - vec4<f32>(D.y)) * sc,
                         p2 * (dp[2] - vec4<f32>(D.z)) * sc, p3 * (dp[3] - vec4<f32>(D.w)) * sc);
    put_p(ds, ty, tx);
    let jn = min(C, kend - j0);
    for (var jj = 0u; jj < jn; jj += DK) {
      workgroupBarrier();
      stage_r(2u, kbase, kvs, j0 + jj, T, lid);
      workgroupBarrier();
      dq = pv16(dq, jj, ty, tx);
      if (NOV == 2u) {
        dq2 = pv16(dq2, jj, ty, tx + TX);
      }
    }
  }
  for (var i = 0u; i < 4u; i++) {
    let ti = t + i;
    if (ti < T) {
      let qb = qbase + ti * qs + 4u * tx;
      st4(0u, qb, pick(dq, i));
      if (NOV == 2u) {
        st4(0u, qb + 4u * TX, pick(dq2, i));
      }
    }
  }
}

// grid (ceil(T/R), n_kv_head, B); args 0 dk, 1 dv, 2 q, 3 k, 4 v, 5 dout, 6 lse, 7 D
@compute @workgroup_size(256)
fn fa_dkdv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let T = pu(0u);
  let nh = pu(3u);
  let rep = nh / pu(4u);
  let b = wid.z;
  let g = wid.y;
  let k0 = wid.x * R; // first key blocks see the most queries: dispatched first
  let ty = lid / TX;
  let tx = lid % TX;
  let qs = pu(5u);
  let kvs = pu(6u);
  let os = nh * HD;
  let sc = pf(8u);
  let kbase = b * T * kvs + g * HD;
  let j = k0 + 4u * ty; // this thread's keys j .. j+3
  var dk = mat4x4<f32>();
  var dk2 = mat4x4<f32>();
  var dv = mat4x4<f32>();
  var dv2 = mat4x4<f32>();
  for (var h = g * rep; h < (g + 1u) * rep; h++) {
    let qbase = b * T * qs + h * HD;
    let obase = b * T * os + h * HD;
    let rb = (b * nh + h) * T;
    for (var t0 = k0; t0 < T; t0 += C) { // queries before k0 see none of these keys
      let tc = t0 + 4u * tx; // this thread's queries tc .. tc+3
      let lse = ld_rows(6u, rb, tc, T);
      let D = ld_rows(7u, rb, tc, T);
      var s = mat4x4<f32>();
      var dp = mat4x4<f32>();
      for (var d0 = 0u; d0 < HD; d0 += DK) {
        workgroupBarrier();
        stage_t(0u, 3u, kbase, kvs, k0, T, R, RA, d0, 1.0, lid);
        stage_t(XB, 2u, qbase, qs, t0, T, C, CA, d0, sc, lid);
        workgroupBarrier();
        s = st16(s, ty, tx);
        workgroupBarrier();
        stage_t(0u, 4u, kbase, kvs, k0, T, R, RA, d0, 1.0, lid);
        stage_t(XB, 5u, obase, os, t0, T, C, CA, d0, 1.0, lid);
        workgroupBarrier();
        dp = st16(dp, ty, tx);
      }
      let p = mat4x4<f32>(exp(mask_k(s[0], j, tc, T) - lse), exp(mask_k(s[1], j + 1u, tc, T) - lse),
                          exp(mask_k(s[2], j + 2u, tc, T) - lse), exp(mask_k(s[3], j + 3u, tc, T) - lse));
      let ds = mat4x4<f32>(p[0] * (dp[0] - D) * sc, p[1] * (dp[1] - D) * sc, p[2] * (dp[2] - D) * sc,
                           p[3] * (dp[3] - D) * sc);
      put_p(p, ty, tx);
      let tn = min(C, T - t0);
      for (var jj = 0u; jj < tn; jj += DK) {
        workgroupBarrier();
        stage_r(5u, obase, os, t0 + jj, T, lid);
        workgroupBarrier();
        dv = pv16(dv, jj, ty, tx);
        if (NOV == 2u) {
          dv2 = pv16(dv2, jj, ty, tx + TX);
        }
      }
      workgroupBarrier();
      put_p(ds, ty, tx);
      for (var jj = 0u; jj < tn; jj += DK) {
        workgroupBarrier();
        stage_r(2u, qbase, qs, t0 + jj, T, lid);
        workgroupBarrier();
        dk = pv16(dk, jj, ty, tx);
        if (NOV == 2u) {
          dk2 = pv16(dk2, jj, ty, tx + TX);
        }
      }
    }
  }
  for (var i = 0u; i < 4u; i++) {
    let ji = j + i;
    if (ji < T) {
      let kb = kbase + ji * kvs + 4u * tx;
      st4(0u, kb, pick(dk, i));
      st4(1u, kb, pick(dv, i));
      if (NOV == 2u) {
        st4(0u, kb + 4u * TX, pick(dk2, i));
        st4(1u, kb + 4u * TX, pick(dv2, i));
      }
    }
  }
}
