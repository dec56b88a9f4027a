// Causal attention with grouped-query heads, streaming (flash-style): online softmax over
// key tiles held in workgroup memory, no T×T matrix anywhere. The host prefixes the head
// dimension as a constant (const HD: u32 = 64u;) so per-thread rows live in registers.
// Forward: thread per query row (64 rows per workgroup), saves lse = log Σ exp(scores).
// Backward (FlashAttention-2 split, no atomics, deterministic): attn_bwd_d computes
// D = dout·out per row; attn_bwd_dq walks keys per query row; attn_bwd_dkdv walks queries
// per key row (summing the query heads of its kv group).

const BR: u32 = 64u;
const BC: u32 = 16u;
const NEG: f32 = -3.0e38;

// u0 Tq, u1 Tk, u2 q_pos0, u3 n_head, u4 n_kv_head, u5 q_stride, u6 kv_stride, u7 has_lse,
// u8 scale, u9 B
// attn_fwd args: 0 out, 1 lse, 2 q, 3 k, 4 v.  attn_bwd_d: 0 D, 1 dout, 2 out.
// attn_bwd_dq: 0 dq, 1 q, 2 k, 3 v, 4 dout, 5 lse, 6 D.
// attn_bwd_dkdv: 0 dk, 1 dv, 2 q, 3 k, 4 v, 5 dout, 6 lse, 7 D.

var<workgroup> Ks: array<f32, BC * HD>;
var<workgroup> Vs: array<f32, BC * HD>;
var<workgroup> Ls: array<f32, BC>;
var<workgroup> Dsh: array<f32, BC>;


// grid (ceil(Tq/64), n_head, B)
@compute @workgroup_size(64)
fn attn_fwd(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let b = wid.z;
  let h = wid.y;
  let g = h / (pu(3u) / pu(4u));
  let t = wid.x * BR + lid;
  let tq = min(t, pu(0u) - 1u);
  var q: array<f32, HD>;
  var o: array<f32, HD>;
  let qoff = (b * pu(0u) + tq) * pu(5u) + h * HD;
  for (var d = 0u; d < HD; d = d + 1u) {
    q[d] = ld(2u, qoff + d) * pf(8u);
    o[d] = 0.0;
  }
  let L = min(pu(2u) + tq + 1u, pu(1u));
  let tlast = min(wid.x * BR + BR, pu(0u)) - 1u;
  let Lmax = min(pu(2u) + tlast + 1u, pu(1u));
  let kb = b * pu(1u) * pu(6u) + g * HD;
  let vb = kb;
  var m = NEG;
  var l = 0.0;
  for (var j0 = 0u; j0 < Lmax; j0 = j0 + BC) {
    workgroupBarrier();
    for (var idx = lid; idx < BC * HD; idx = idx + BR) {
      let j = j0 + idx / HD;
      let d = idx % HD;
      var kv = 0.0;
      var vv = 0.0;
      if (j < pu(1u)) {
        kv = ld(3u, kb + j * pu(6u) + d);
        vv = ld(4u, vb + j * pu(6u) + d);
      }
      Ks[idx] = kv;
      Vs[idx] = vv;
    }
    workgroupBarrier();
    var s: array<f32, BC>;
    var mt = m;
    for (var jj = 0u; jj < BC; jj = jj + 1u) {
      var sv = NEG;
      if (j0 + jj < L) {
        sv = 0.0;
        for (var d = 0u; d < HD; d = d + 1u) {
          sv = fma(q[d], Ks[jj * HD + d], sv);
        }
      }
      s[jj] = sv;
      mt = max(mt, sv);
    }
    let corr = exp(m - mt);
    l = l * corr;
    for (var d = 0u; d < HD; d = d + 1u) {
      o[d] = o[d] * corr;
    }
    for (var jj = 0u; jj < BC; jj = jj + 1u) {
      if (j0 + jj < L) {
        let pj = exp(s[jj] - mt);
        l = l + pj;
        for (var d = 0u; d < HD; d = d + 1u) {
          o[d] = fma(pj, Vs[jj * HD + d], o[d]);
        }
      }
    }
    m = mt;
  }
  if (t < pu(0u)) {
    let inv = 1.0 / l;
    let ooff = (b * pu(0u) + t) * (pu(3u) * HD) + h * HD;
    for (var d = 0u; d < HD; d = d + 1u) {
      st(0u, ooff + d, o[d] * inv);
    }
    if (pu(7u) != 0u) {
      st(1u, (b * pu(3u) + h) * pu(0u) + t, m + log(l));
    }
  }
}


// D[b,h,t] = Σ_d dout·out; 1-D over B*nh*T (Tq == Tk == T)
@compute @workgroup_size(256)
fn attn_bwd_d(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
  let i = lin_wg(wid, nwg) * WG + lid;
  let T = pu(0u);
  if (i >= pu(9u) * pu(3u) * T) {
    return;
  }
  let t = i % T;
  let h = (i / T) % pu(3u);
  let b = i / (T * pu(3u));
  let off = (b * T + t) * (pu(3u) * HD) + h * HD;
  var s = 0.0;
  for (var d = 0u; d < HD; d = d + 1u) {
    s = fma(ld(1u, off + d), ld(2u, off + d), s);
  }
  st(0u, i, s);
}


// dq = Σ_{j<=t} ds_j k_j · scale, ds_j = p_j (dout·v_j − D); grid (ceil(T/64), n_head, B)
@compute @workgroup_size(64)
fn attn_bwd_dq(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let T = pu(0u);
  let b = wid.z;
  let h = wid.y;
  let g = h / (pu(3u) / pu(4u));
  let t = wid.x * BR + lid;
  let tq = min(t, T - 1u);
  var q: array<f32, HD>;
  var dy: array<f32, HD>;
  var dq: array<f32, HD>;
  let qoff = (b * T + tq) * pu(5u) + h * HD;
  let ooff = (b * T + tq) * (pu(3u) * HD) + h * HD;
  for (var d = 0u; d < HD; d = d + 1u) {
    q[d] = ld(1u, qoff + d) * pf(8u);
    dy[d] = ld(4u, ooff + d);
    dq[d] = 0.0;
  }
  let row = (b * pu(3u) + h) * T + tq;
  let lse = ld(5u, row);
  let D = ld(6u, row);
  let tlast = min(wid.x * BR + BR, T) - 1u;
  let kb = b * T * pu(6u) + g * HD;
  let vb = kb;
  for (var j0 = 0u; j0 <= tlast; j0 = j0 + BC) {
    workgroupBarrier();
    for (var idx = lid; idx < BC * HD; idx = idx + BR) {
      let j = j0 + idx / HD;
      let d = idx % HD;
      var kv = 0.0;
      var vv = 0.0;
      if (j < T) {
        kv = ld(2u, kb + j * pu(6u) + d);
        vv = ld(3u, vb + j * pu(6u) + d);
      }
      Ks[idx] = kv;
      Vs[idx] = vv;
    }
    workgroupBarrier();
    for (var jj = 0u; jj < BC; jj = jj + 1u) {
      if (j0 + jj <= tq) {
        var s = 0.0;
        var dp = 0.0;
        for (var d = 0u; d < HD; d = d + 1u) {
          s = fma(q[d], Ks[jj * HD + d], s);
          dp = fma(dy[d], Vs[jj * HD + d], dp);
        }
        let pj = exp(s - lse);
        let ds = pj * (dp - D) * pf(8u);
        for (var d = 0u; d < HD; d = d + 1u) {
          dq[d] = fma(ds, Ks[jj * HD + d], dq[d]);
        }
      }
    }
  }
  if (t < T) {
    for (var d = 0u; d < HD; d = d + 1u) {
      st(0u, qoff + d, dq[d]);
    }
  }
}


// For key row j of kv head g: over the query heads h of the group and rows t >= j,
// dk = Σ ds·q·scale, dv = Σ p·dout (written); grid (ceil(T/64), n_kv_head, B)
@compute @workgroup_size(64)
fn attn_bwd_dkdv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let T = pu(0u);
  let b = wid.z;
  let g = wid.y;
  let rep = pu(3u) / pu(4u);
  let j = wid.x * BR + lid;
  let jc = min(j, T - 1u);
  var kr: array<f32, HD>;
  var vr: array<f32, HD>;
  var dk: array<f32, HD>;
  var dv: array<f32, HD>;
  let koff = (b * T + jc) * pu(6u) + g * HD;
  for (var d = 0u; d < HD; d = d + 1u) {
    kr[d] = ld(3u, koff + d) * pf(8u);
    vr[d] = ld(4u, koff + d);
    dk[d] = 0.0;
    dv[d] = 0.0;
  }
  let tstart = wid.x * BR;
  for (var h = g * rep; h < (g + 1u) * rep; h = h + 1u) {
    for (var t0 = tstart; t0 < T; t0 = t0 + BC) {
      workgroupBarrier();
      for (var idx = lid; idx < BC * HD; idx = idx + BR) {
        let t = t0 + idx / HD;
        let d = idx % HD;
        var qv = 0.0;
        var ov = 0.0;
        if (t < T) {
          qv = ld(2u, (b * T + t) * pu(5u) + h * HD + d);
          ov = ld(5u, (b * T + t) * (pu(3u) * HD) + h * HD + d);
        }
        Ks[idx] = qv;
        Vs[idx] = ov;
      }
      if (lid < BC) {
        let t = t0 + lid;
        var lv = 0.0;
        var dd = 0.0;
        if (t < T) {
          lv = ld(6u, (b * pu(3u) + h) * T + t);
          dd = ld(7u, (b * pu(3u) + h) * T + t);
        }
        Ls[lid] = lv;
        Dsh[lid] = dd;
      }
      workgroupBarrier();
      for (var tt = 0u; tt < BC; tt = tt + 1u) {
        let t = t0 + tt;
        if (t >= jc && t < T) {
          var s = 0.0;
          var dp = 0.0;
          for (var d = 0u; d < HD; d = d + 1u) {
            s = fma(Ks[tt * HD + d], kr[d], s);
            dp = fma(Vs[tt * HD + d], vr[d], dp);
          }
          let pj = exp(s - Ls[tt]);
          let ds = pj * (dp - Dsh[tt]) * pf(8u);
          for (var d = 0u; d < HD; d = d + 1u) {
            dk[d] = fma(ds, Ks[tt * HD + d], dk[d]);
            dv[d] = fma(pj, Vs[tt * HD + d], dv[d]);
          }
        }
      }
    }
  }
  if (j < T) {
    for (var d = 0u; d < HD; d = d + 1u) {
      st(0u, koff + d, dk[d]);
      st(1u, koff + d, dv[d]);
    }
  }
}
