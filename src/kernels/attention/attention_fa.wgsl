// Flash-style causal GQA attention for the training form (Tq == Tk == T, q_pos0 == 0),
// head_dim HD = 64 (the host prefixes `const HD: u32 = 64u;`).
// attention.wgsl stays the fallback (KV-cache decoding Tq < Tk, other head sizes) and keeps
// attn_bwd_d (D = rowsum(dout ∘ out)), which the backward here reuses.
//
// Every kernel: 256 threads, thread (r = lid/4, c = lid%4) owns row r of the workgroup's
// 64-row block (query rows in fa_fwd / fa_dq, key rows in fa_dkdv) and the output columns
// 4·(c + 4i) .. +3 for i < HD/16. The row's full q (or k and v) sits in registers; tiles of
// the other operand stream through workgroup memory (vec4 rows padded to HD/4+1 so the four
// column threads of a row hit different banks; the 8 rows of a warp read the same address,
// a broadcast). Register rows are indexed only with constants (unrolled helpers below, four
// named accumulators): a loop-indexed array would live in local memory on NVIDIA, where the
// driver does not unroll Tint's loops. Scores / probabilities of a tile go through workgroup memory so each thread
// computes 1/4 of the dot products and then sees its whole row.
//
// fa_fwd:   online softmax over 32-key tiles; out, lse (log Σ exp s).
// fa_dq:    dq = Σ_j ds_j k_j, ds_j = p_j (dout·v_j − D) · scale, p_j = exp(s_j − lse).
// fa_dkdv:  for 64 keys of kv head g, over the query heads of the group and the 16-row query
//           tiles that see them (t ≥ key): dk = Σ ds·q, dv = Σ p·dout. No atomics: every sum
//           has one owner and a fixed order (deterministic).
// Uniforms as attention.wgsl: u0 T, u1 Tk, u2 q_pos0, u3 n_head, u4 n_kv_head, u5 q_stride,
// u6 kv_stride, u7 has_lse, u8 scale, u9 B. Arguments as attn_fwd / attn_bwd_dq / attn_bwd_dkdv.

const FQ: u32 = 64u;          // rows per workgroup
const FK: u32 = 32u;          // keys per tile (fa_fwd, fa_dq)
const QT: u32 = 16u;          // query rows per tile (fa_dkdv)
const HV: u32 = HD / 4u;      // vec4s per head row
const KS: u32 = HD / 4u + 1u; // padded row stride (vec4s)
const PS: u32 = FK + 1u;      // score row stride
const PS2: u32 = QT + 1u;
const NEGF: f32 = -3.0e38;

var<workgroup> Kf: array<vec4<f32>, FK * KS>;
var<workgroup> Vf: array<vec4<f32>, FK * KS>;
var<workgroup> Pf: array<f32, FQ * PS>;
var<workgroup> Qd: array<vec4<f32>, QT * KS>;
var<workgroup> Od: array<vec4<f32>, QT * KS>;
var<workgroup> Pd: array<f32, FQ * PS2>;
var<workgroup> Sd: array<f32, FQ * PS2>;
var<workgroup> Ld: array<f32, QT>;
var<workgroup> Dd: array<f32, QT>;

fn ld4(a: u32, i: u32) -> vec4<f32> {
  return vec4<f32>(ld(a, i), ld(a, i + 1u), ld(a, i + 2u), ld(a, i + 3u));
}
fn st4(a: u32, i: u32, v: vec4<f32>) {
  st(a, i, v.x);
  st(a, i + 1u, v.y);
  st(a, i + 2u, v.z);
  st(a, i + 3u, v.w);
}
fn hsum(v: vec4<f32>) -> f32 {
  return (v.x + v.y) + (v.z + v.w);
}

fn ldrow(a: u32, i: u32, sc: f32) -> array<vec4<f32>, 16> {
  return array<vec4<f32>, 16>(ld4(a, i + 0u) * sc, ld4(a, i + 4u) * sc, ld4(a, i + 8u) * sc, ld4(a, i + 12u) * sc, ld4(a, i + 16u) * sc, ld4(a, i + 20u) * sc, ld4(a, i + 24u) * sc, ld4(a, i + 28u) * sc, ld4(a, i + 32u) * sc, ld4(a, i + 36u) * sc, ld4(a, i + 40u) * sc, ld4(a, i + 44u) * sc, ld4(a, i + 48u) * sc, ld4(a, i + 52u) * sc, ld4(a, i + 56u) * sc, ld4(a, i + 60u) * sc);
}
fn dotK(x: array<vec4<f32>, 16>, b: u32) -> f32 {
  var a = x[0] * Kf[b];
  a = fma(x[1], Kf[b + 1u], a);
  a = fma(x[2], Kf[b + 2u], a);
  a = fma(x[3], Kf[b + 3u], a);
  a = fma(x[4], Kf[b + 4u], a);
  a = fma(x[5], Kf[b + 5u], a);
  a = fma(x[6], Kf[b + 6u], a);
  a = fma(x[7], Kf[b + 7u], a);
  a = fma(x[8], Kf[b + 8u], a);
  a = fma(x[9], Kf[b + 9u], a);
  a = fma(x[10], Kf[b + 10u], a);
  a = fma(x[11], Kf[b + 11u], a);
  a = fma(x[12], Kf[b + 12u], a);
  a = fma(x[13], Kf[b + 13u], a);
  a = fma(x[14], Kf[b + 14u], a);
  a = fma(x[15], Kf[b + 15u], a);
  return hsum(a);
}
fn dotV(x: array<vec4<f32>, 16>, b: u32) -> f32 {
  var a = x[0] * Vf[b];
  a = fma(x[1], Vf[b + 1u], a);
  a = fma(x[2], Vf[b + 2u], a);
  a = fma(x[3], Vf[b + 3u], a);
  a = fma(x[4], Vf[b + 4u], a);
  a = fma(x[5], Vf[b + 5u], a);
  a = fma(x[6], Vf[b + 6u], a);
  a = fma(x[7], Vf[b + 7u], a);
  a = fma(x[8], Vf[b + 8u], a);
  a = fma(x[9], Vf[b + 9u], a);
  a = fma(x[10], Vf[b + 10u], a);
  a = fma(x[11], Vf[b + 11u], a);
  a = fma(x[12], Vf[b + 12u], a);
  a = fma(x[13], Vf[b + 13u], a);
  a = fma(x[14], Vf[b + 14u], a);
  a = fma(x[15], Vf[b + 15u], a);
  return hsum(a);
}
fn dotQ(x: array<vec4<f32>, 16>, b: u32) -> f32 {
  var a = x[0] * Qd[b];
  a = fma(x[1], Qd[b + 1u], a);
  a = fma(x[2], Qd[b + 2u], a);
  a = fma(x[3], Qd[b + 3u], a);
  a = fma(x[4], Qd[b + 4u], a);
  a = fma(x[5], Qd[b + 5u], a);
  a = fma(x[6], Qd[b + 6u], a);
  a = fma(x[7], Qd[b + 7u], a);
  a = fma(x[8], Qd[b + 8u], a);
  a = fma(x[9], Qd[b + 9u], a);
  a = fma(x[10], Qd[b + 10u], a);
  a = fma(x[11], Qd[b + 11u], a);
  a = fma(x[12], Qd[b + 12u], a);
  a = fma(x[13], Qd[b + 13u], a);
  a = fma(x[14], Qd[b + 14u], a);
  a = fma(x[15], Qd[b + 15u], a);
  return hsum(a);
}
fn dotO(x: array<vec4<f32>, 16>, b: u32) -> f32 {
  var a = x[0] * Od[b];
  a = fma(x[1], Od[b + 1u], a);
  a = fma(x[2], Od[b + 2u], a);
  a = fma(x[3], Od[b + 3u], a);
  a = fma(x[4], Od[b + 4u], a);
  a = fma(x[5], Od[b + 5u], a);
  a = fma(x[6], Od[b + 6u], a);
  a = fma(x[7], Od[b + 7u], a);
  a = fma(x[8], Od[b + 8u], a);
  a = fma(x[9], Od[b + 9u], a);
  a = fma(x[10], Od[b + 10u], a);
  a = fma(x[11], Od[b + 11u], a);
  a = fma(x[12], Od[b + 12u], a);
  a = fma(x[13], Od[b + 13u], a);
  a = fma(x[14], Od[b + 14u], a);
  a = fma(x[15], Od[b + 15u], a);
  return hsum(a);
}

// K and V rows j0 .. j0+FK-1 of kv head g (args ka, va) into Kf, Vf (zeros past T)
fn load_kv(lid: u32, ka: u32, va: u32, kb: u32, j0: u32, T: u32) {
  for (var idx = lid; idx < FK * HV; idx += 256u) {
    let jj = idx / HV;
    let d4 = idx % HV;
    let j = j0 + jj;
    var kv = vec4<f32>(0.0);
    var vv = vec4<f32>(0.0);
    if (j < T) {
      let off = kb + j * pu(6u) + 4u * d4;
      kv = ld4(ka, off);
      vv = ld4(va, off);
    }
    Kf[jj * KS + d4] = kv;
    Vf[jj * KS + d4] = vv;
  }
}

// grid (ceil(T/64), n_head, B); args 0 out, 1 lse, 2 q, 3 k, 4 v
@compute @workgroup_size(256)
fn fa_fwd(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let T = pu(0u);
  let b = wid.z;
  let h = wid.y;
  let g = h / (pu(3u) / pu(4u));
  let qb = (T + FQ - 1u) / FQ - 1u - wid.x; // longest rows first
  let r = lid / 4u;
  let c = lid % 4u;
  let t = qb * FQ + r;
  let tq = min(t, T - 1u);
  let sc = pf(8u);
  let qoff = (b * T + tq) * pu(5u) + h * HD;
  let q = ldrow(2u, qoff, sc);
  var o0 = vec4<f32>(0.0);
  var o1 = vec4<f32>(0.0);
  var o2 = vec4<f32>(0.0);
  var o3 = vec4<f32>(0.0);
  var m = NEGF;
  var l = 0.0;
  let kend = min(qb * FQ + FQ, T);
  let kb = b * T * pu(6u) + g * HD;
  for (var j0 = 0u; j0 < kend; j0 += FK) {
    workgroupBarrier();
    load_kv(lid, 3u, 4u, kb, j0, T);
    workgroupBarrier();
    for (var u = 0u; u < FK / 4u; u++) {
      let jj = c + 4u * u;
      var s = NEGF;
      if (j0 + jj <= tq) {
        s = dotK(q, jj * KS);
      }
      Pf[r * PS + jj] = s;
    }
    workgroupBarrier();
    var mt = m;
    for (var jj = 0u; jj < FK; jj++) {
      mt = max(mt, Pf[r * PS + jj]);
    }
    let corr = exp(m - mt);
    l = l * corr;
    o0 = o0 * corr;
    o1 = o1 * corr;
    o2 = o2 * corr;
    o3 = o3 * corr;
    for (var jj = 0u; jj < FK; jj++) {
      let pj = exp(Pf[r * PS + jj] - mt); // masked: exp(-3e38 - mt) = 0
      l = l + pj;
      let vb = jj * KS + c;
      o0 = fma(vec4<f32>(pj), Vf[vb], o0);
      o1 = fma(vec4<f32>(pj), Vf[vb + 4u], o1);
      o2 = fma(vec4<f32>(pj), Vf[vb + 8u], o2);
      o3 = fma(vec4<f32>(pj), Vf[vb + 12u], o3);
    }
    m = mt;
  }
  if (t < T) {
    let inv = 1.0 / l;
    let ooff = (b * T + t) * (pu(3u) * HD) + h * HD;
    st4(0u, ooff + 4u * c, o0 * inv);
    st4(0u, ooff + 4u * c + 16u, o1 * inv);
    st4(0u, ooff + 4u * c + 32u, o2 * inv);
    st4(0u, ooff + 4u * c + 48u, o3 * inv);
    if (pu(7u) != 0u && c == 0u) {
      st(1u, (b * pu(3u) + h) * T + t, m + log(l));
    }
  }
}

// grid (ceil(T/64), n_head, B); args 0 dq, 1 q, 2 k, 3 v, 4 dout, 5 lse, 6 D
@compute @workgroup_size(256)
fn fa_dq(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let T = pu(0u);
  let b = wid.z;
  let h = wid.y;
  let g = h / (pu(3u) / pu(4u));
  let qb = (T + FQ - 1u) / FQ - 1u - wid.x;
  let r = lid / 4u;
  let c = lid % 4u;
  let t = qb * FQ + r;
  let tq = min(t, T - 1u);
  let sc = pf(8u);
  let qoff = (b * T + tq) * pu(5u) + h * HD;
  let ooff = (b * T + tq) * (pu(3u) * HD) + h * HD;
  let q = ldrow(1u, qoff, sc);
  let dy = ldrow(4u, ooff, 1.0);
  var dq0 = vec4<f32>(0.0);
  var dq1 = vec4<f32>(0.0);
  var dq2 = vec4<f32>(0.0);
  var dq3 = vec4<f32>(0.0);
  let row = (b * pu(3u) + h) * T + tq;
  let lse = ld(5u, row);
  let D = ld(6u, row);
  let kend = min(qb * FQ + FQ, T);
  let kb = b * T * pu(6u) + g * HD;
  for (var j0 = 0u; j0 < kend; j0 += FK) {
    workgroupBarrier();
    load_kv(lid, 2u, 3u, kb, j0, T);
    workgroupBarrier();
    for (var u = 0u; u < FK / 4u; u++) {
      let jj = c + 4u * u;
      var ds = 0.0;
      if (j0 + jj <= tq) {
        ds = exp(dotK(q, jj * KS) - lse) * (dotV(dy, jj * KS) - D) * sc;
      }
      Pf[r * PS + jj] = ds;
    }
    workgroupBarrier();
    for (var jj = 0u; jj < FK; jj++) {
      let ds = Pf[r * PS + jj];
      let kb2 = jj * KS + c;
      dq0 = fma(vec4<f32>(ds), Kf[kb2], dq0);
      dq1 = fma(vec4<f32>(ds), Kf[kb2 + 4u], dq1);
      dq2 = fma(vec4<f32>(ds), Kf[kb2 + 8u], dq2);
      dq3 = fma(vec4<f32>(ds), Kf[kb2 + 12u], dq3);
    }
  }
  if (t < T) {
    st4(0u, qoff + 4u * c, dq0);
    st4(0u, qoff + 4u * c + 16u, dq1);
    st4(0u, qoff + 4u * c + 32u, dq2);
    st4(0u, qoff + 4u * c + 48u, dq3);
  }
}

// grid (ceil(T/64), n_kv_head, B); args 0 dk, 1 dv, 2 q, 3 k, 4 v, 5 dout, 6 lse, 7 D
@compute @workgroup_size(256)
fn fa_dkdv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let T = pu(0u);
  let b = wid.z;
  let g = wid.y;
  let nh = pu(3u);
  let rep = nh / pu(4u);
  let r = lid / 4u;
  let c = lid % 4u;
  let j = wid.x * FQ + r; // first key blocks see the most queries: dispatched first
  let jc = min(j, T - 1u);
  let sc = pf(8u);
  let koff = (b * T + jc) * pu(6u) + g * HD;
  let kr = ldrow(3u, koff, sc);
  let vr = ldrow(4u, koff, 1.0);
  var dk0 = vec4<f32>(0.0);
  var dk1 = vec4<f32>(0.0);
  var dk2 = vec4<f32>(0.0);
  var dk3 = vec4<f32>(0.0);
  var dv0 = vec4<f32>(0.0);
  var dv1 = vec4<f32>(0.0);
  var dv2 = vec4<f32>(0.0);
  var dv3 = vec4<f32>(0.0);
  for (var h = g * rep; h < (g + 1u) * rep; h++) {
    for (var t0 = wid.x * FQ; t0 < T; t0 += QT) {
      workgroupBarrier();
      for (var idx = lid; idx < QT * HV; idx += 256u) {
        let tt = idx / HV;
        let d4 = idx % HV;
        let t = t0 + tt;
        var qv = vec4<f32>(0.0);
        var ov = vec4<f32>(0.0);
        if (t < T) {
          qv = ld4(2u, (b * T + t) * pu(5u) + h * HD + 4u * d4);
          ov = ld4(5u, (b * T + t) * (nh * HD) + h * HD + 4u * d4);
        }
        Qd[tt * KS + d4] = qv;
        Od[tt * KS + d4] = ov;
      }
      if (lid < QT) {
        let t = t0 + lid;
        var lv = 0.0;
        var dd = 0.0;
        if (t < T) {
          lv = ld(6u, (b * nh + h) * T + t);
          dd = ld(7u, (b * nh + h) * T + t);
        }
        Ld[lid] = lv;
        Dd[lid] = dd;
      }
      workgroupBarrier();
      for (var u = 0u; u < QT / 4u; u++) {
        let tt = c + 4u * u;
        let t = t0 + tt;
        var p = 0.0;
        var ds = 0.0;
        if (t >= jc && t < T) {
          p = exp(dotQ(kr, tt * KS) - Ld[tt]);
          ds = p * (dotO(vr, tt * KS) - Dd[tt]) * sc;
        }
        Pd[r * PS2 + tt] = p;
        Sd[r * PS2 + tt] = ds;
      }
      workgroupBarrier();
      for (var tt = 0u; tt < QT; tt++) {
        let p = Pd[r * PS2 + tt];
        let ds = Sd[r * PS2 + tt];
        let xb = tt * KS + c;
        dv0 = fma(vec4<f32>(p), Od[xb], dv0);
        dv1 = fma(vec4<f32>(p), Od[xb + 4u], dv1);
        dv2 = fma(vec4<f32>(p), Od[xb + 8u], dv2);
        dv3 = fma(vec4<f32>(p), Od[xb + 12u], dv3);
        dk0 = fma(vec4<f32>(ds), Qd[xb], dk0);
        dk1 = fma(vec4<f32>(ds), Qd[xb + 4u], dk1);
        dk2 = fma(vec4<f32>(ds), Qd[xb + 8u], dk2);
        dk3 = fma(vec4<f32>(ds), Qd[xb + 12u], dk3);
      }
    }
  }
  if (j < T) {
    st4(0u, koff + 4u * c, dk0);
    st4(0u, koff + 4u * c + 16u, dk1);
    st4(0u, koff + 4u * c + 32u, dk2);
    st4(0u, koff + 4u * c + 48u, dk3);
    st4(1u, koff + 4u * c, dv0);
    st4(1u, koff + 4u * c + 16u, dv1);
    st4(1u, koff + 4u * c + 32u, dv2);
    st4(1u, koff + 4u * c + 48u, dv3);
  }
}
