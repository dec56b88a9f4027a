// Flash-style causal GQA attention for the training form (Tq == Tk == T, q_pos0 == 0),
// head_dim HD a multiple of 16 and at most 64 (the host prefixes `const HD: u32 = 64u;`).
// attention.wgsl stays the fallback (KV-cache decoding Tq < Tk, other head sizes) and keeps
// attn_bwd_d (D = rowsum(dout ∘ out)), which the backward here reuses.
//
// Every kernel: 256 threads, thread (r = lid/4, c = lid%4) owns row r of the workgroup's
// 64-row block (query rows in fa_fwd / fa_dq, key rows in fa_dkdv) and the output columns
// 4·(c + 4i) .. +3 for i < HD/16. The row's full q (or k and v) sits in registers; tiles of
// the other operand stream through workgroup memory (vec4 rows padded to HD/4+1 so the four
// column threads of a row hit different banks; the 8 rows of a warp read the same address,
// a broadcast). Scores / probabilities of a tile go through workgroup memory so each thread
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
const DV: u32 = HD / 16u;     // vec4 columns owned by a thread
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
  var q: array<vec4<f32>, HV>;
  let qoff = (b * T + tq) * pu(5u) + h * HD;
  for (var i = 0u; i < HV; i++) {
    q[i] = ld4(2u, qoff + 4u * i) * sc;
  }
  var o: array<vec4<f32>, DV>;
  for (var i = 0u; i < DV; i++) {
    o[i] = vec4<f32>(0.0);
  }
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
        var a = vec4<f32>(0.0);
        for (var i = 0u; i < HV; i++) {
          a = fma(q[i], Kf[jj * KS + i], a);
        }
        s = hsum(a);
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
    for (var i = 0u; i < DV; i++) {
      o[i] = o[i] * corr;
    }
    for (var jj = 0u; jj < FK; jj++) {
      let pj = exp(Pf[r * PS + jj] - mt); // masked: exp(-3e38 - mt) = 0
      l = l + pj;
      for (var i = 0u; i < DV; i++) {
        o[i] = fma(vec4<f32>(pj), Vf[jj * KS + c + 4u * i], o[i]);
      }
    }
    m = mt;
  }
  if (t < T) {
    let inv = 1.0 / l;
    let ooff = (b * T + t) * (pu(3u) * HD) + h * HD;
    for (var i = 0u; i < DV; i++) {
      st4(0u, ooff + 4u * (c + 4u * i), o[i] * inv);
    }
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
  var q: array<vec4<f32>, HV>;
  var dy: array<vec4<f32>, HV>;
  let qoff = (b * T + tq) * pu(5u) + h * HD;
  let ooff = (b * T + tq) * (pu(3u) * HD) + h * HD;
  for (var i = 0u; i < HV; i++) {
    q[i] = ld4(1u, qoff + 4u * i) * sc;
    dy[i] = ld4(4u, ooff + 4u * i);
  }
  var dq: array<vec4<f32>, DV>;
  for (var i = 0u; i < DV; i++) {
    dq[i] = vec4<f32>(0.0);
  }
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
        var a = vec4<f32>(0.0);
        var e = vec4<f32>(0.0);
        for (var i = 0u; i < HV; i++) {
          a = fma(q[i], Kf[jj * KS + i], a);
          e = fma(dy[i], Vf[jj * KS + i], e);
        }
        ds = exp(hsum(a) - lse) * (hsum(e) - D) * sc;
      }
      Pf[r * PS + jj] = ds;
    }
    workgroupBarrier();
    for (var jj = 0u; jj < FK; jj++) {
      let ds = Pf[r * PS + jj];
      for (var i = 0u; i < DV; i++) {
        dq[i] = fma(vec4<f32>(ds), Kf[jj * KS + c + 4u * i], dq[i]);
      }
    }
  }
  if (t < T) {
    for (var i = 0u; i < DV; i++) {
      st4(0u, qoff + 4u * (c + 4u * i), dq[i]);
    }
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
  var kr: array<vec4<f32>, HV>;
  var vr: array<vec4<f32>, HV>;
  let koff = (b * T + jc) * pu(6u) + g * HD;
  for (var i = 0u; i < HV; i++) {
    kr[i] = ld4(3u, koff + 4u * i) * sc;
    vr[i] = ld4(4u, koff + 4u * i);
  }
  var dk: array<vec4<f32>, DV>;
  var dv: array<vec4<f32>, DV>;
  for (var i = 0u; i < DV; i++) {
    dk[i] = vec4<f32>(0.0);
    dv[i] = vec4<f32>(0.0);
  }
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
          var a = vec4<f32>(0.0);
          var e = vec4<f32>(0.0);
          for (var i = 0u; i < HV; i++) {
            a = fma(kr[i], Qd[tt * KS + i], a);
            e = fma(vr[i], Od[tt * KS + i], e);
          }
          p = exp(hsum(a) - Ld[tt]);
          ds = p * (hsum(e) - Dd[tt]) * sc;
        }
        Pd[r * PS2 + tt] = p;
        Sd[r * PS2 + tt] = ds;
      }
      workgroupBarrier();
      for (var tt = 0u; tt < QT; tt++) {
        let p = Pd[r * PS2 + tt];
        let ds = Sd[r * PS2 + tt];
        for (var i = 0u; i < DV; i++) {
          dv[i] = fma(vec4<f32>(p), Od[tt * KS + c + 4u * i], dv[i]);
          dk[i] = fma(vec4<f32>(ds), Qd[tt * KS + c + 4u * i], dk[i]);
        }
      }
    }
  }
  if (j < T) {
    for (var i = 0u; i < DV; i++) {
      st4(0u, koff + 4u * (c + 4u * i), dk[i]);
      st4(1u, koff + 4u * (c + 4u * i), dv[i]);
    }
  }
}
