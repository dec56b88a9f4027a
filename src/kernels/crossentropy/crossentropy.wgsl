// Fused softmax + cross-entropy, in place: logits [N, Vp] become fp32 dlogits. One
// workgroup per row: max m and s = Σ exp(z − m) (softmax_xent_online: one pass; softmax_xent:
// two), then the writes.
// loss = log(s) − (z[t] − m), never (m + log(s)) − z[t]: m + log(s) rounded to f32 loses
// everything below the spacing of |m| (loss 0 for logits [1e8, 1e8], pytorch/pytorch#11752).
// args 0 losses, 1 logits, 2 targets (i32); u0 N, u1 V, u2 Vp, u3 dscale
// With OUT16 (the host's prefix, wg_out16_prefix_on: where the subgroup-matrix matmul runs) the
// dlogits are also written as f16 (st16: binding 9, element 2·u5 + row·Vp + c; beyond f16's
// range ±inf, as the conversion they replace gives), the f16 operand the lm_head's backward
// matmuls read (webgpu_ops_matmul.c, sg_operand).

var<workgroup> tsh: i32;

// The row's target t, read by thread 0 and made uniform (the branches that follow hold barriers).
fn xent_target(n: u32, lid: u32) -> i32 {
  if (lid == 0u) {
    tsh = ldi(2u, n);
  }
  return workgroupUniformLoad(&tsh);
}

// A row whose target is out of range (ignored position): dlogits 0, loss 0.
fn xent_ignored(n: u32, row: u32, Vp: u32, lid: u32) {
  for (var c = lid; c < Vp; c = c + WG) {
    st(1u, row + c, 0.0);
    if (OUT16) { st16(row + c, 0.0); }
  }
  if (lid == 0u) {
    st(0u, n, 0.0);
  }
}

// The last pass, given the row's max m and sum = Σ exp(z − m): dlogits = dscale·(softmax − onehot)
// written over the logits (and their f16 copy), and the loss.
fn xent_finish(n: u32, row: u32, t: u32, m: f32, sum: f32, lid: u32) {
  let V = pu(1u);
  let Vp = pu(2u);
  let dscale = pf(3u);
  let zt = ld(1u, row + t);
  workgroupBarrier(); // every thread has read z[t] before anyone overwrites it
  let scale = dscale / sum;
  for (var c = lid; c < Vp; c = c + WG) {
    var d = 0.0;
    if (c < V) {
      d = exp(ld(1u, row + c) - m) * scale;
      if (c == t) {
        d = d - dscale;
      }
    }
    st(1u, row + c, d);
    if (OUT16) { st16(row + c, d); }
  }
  if (lid == 0u) {
    st(0u, n, log(sum) - (zt - m));
  }
}

// Three passes: max, then Σ exp(z − m), then the writes (TEZGAH_WEBGPU_MEMOPS=0).
@compute @workgroup_size(256)
fn softmax_xent(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
  let n = lin_wg(wid, nwg);
  if (n >= pu(0u)) {
    return;
  }
  let V = pu(1u);
  let row = n * pu(2u);
  let t = xent_target(n, lid);
  if (t < 0 || u32(t) >= V) {
    xent_ignored(n, row, pu(2u), lid);
    return;
  }
  var mx = -3.4e38;
  for (var c = lid; c < V; c = c + WG) {
    mx = max(mx, ld(1u, row + c));
  }
  let m = wg_max(mx, lid);
  var s = 0.0;
  for (var c = lid; c < V; c = c + WG) {
    s = s + exp(ld(1u, row + c) - m);
  }
  xent_finish(n, row, u32(t), m, wg_sum(s, lid), lid);
}

// Two passes (the default): the max and the sum in one read of the row (online softmax, Milakov
// & Gimelshein 2018, arXiv:1805.02867): each thread keeps its running max mt and st = Σ exp(z − mt),
// rescaling st only when mt grows (one exp per element otherwise), then the workgroup's max m and
// Σ st·exp(mt − m); then the writes. A thread with no columns has mt = −3.4e38, st = 0 (adds 0).
// The row of 50257 fp32 logits does not stay in cache between passes, so one pass less is a
// third less read traffic.
@compute @workgroup_size(256)
fn softmax_xent_online(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                       @builtin(local_invocation_index) lid: u32) {
  let n = lin_wg(wid, nwg);
  if (n >= pu(0u)) {
    return;
  }
  let V = pu(1u);
  let row = n * pu(2u);
  let t = xent_target(n, lid);
  if (t < 0 || u32(t) >= V) {
    xent_ignored(n, row, pu(2u), lid);
    return;
  }
  var mt = -3.4e38;
  var sr = 0.0;
  for (var c = lid; c < V; c = c + WG) {
    let z = ld(1u, row + c);
    if (z > mt) {
      sr = sr * exp(mt - z) + 1.0;
      mt = z;
    } else {
      sr = sr + exp(z - mt);
    }
  }
  let m = wg_max(mt, lid);
  xent_finish(n, row, u32(t), m, wg_sum(sr * exp(mt - m), lid), lid);
}

// softmax_xent_online4 (the host's default; TEZGAH_WEBGPU_XENT4=0: softmax_xent_online): the
// same two passes with four columns per iteration (c, c + WG, c + 2·WG, c + 3·WG): four loads
// in flight per thread where the one-column loop waits on each (issue 22: the H200 ran the
// crossentropy at ~1.35x its DRAM time), and one running-max update per four columns: the four
// are folded into the running sum after the max of the four (sr·exp(mt − m4) when it grows).
// Same results up to fp32 summation order.
@compute @workgroup_size(256)
fn softmax_xent_online4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                        @builtin(local_invocation_index) lid: u32) {
  let n = lin_wg(wid, nwg);
  if (n >= pu(0u)) {
    return;
  }
  let V = pu(1u);
  let Vp = pu(2u);
  let row = n * Vp;
  let t = xent_target(n, lid);
  if (t < 0 || u32(t) >= V) {
    xent_ignored(n, row, Vp, lid);
    return;
  }
  var mt = -3.4e38;
  var sr = 0.0;
  var c = lid;
  for (; c + 3u * WG < V; c = c + 4u * WG) {
    let z0 = ld(1u, row + c);
    let z1 = ld(1u, row + c + WG);
    let z2 = ld(1u, row + c + 2u * WG);
    let z3 = ld(1u, row + c + 3u * WG);
    let m4 = max(max(z0, z1), max(z2, z3));
    if (m4 > mt) {
      sr = sr * exp(mt - m4);
      mt = m4;
    }
    sr = sr + ((exp(z0 - mt) + exp(z1 - mt)) + (exp(z2 - mt) + exp(z3 - mt)));
  }
  for (; c < V; c = c + WG) {
    let z = ld(1u, row + c);
    if (z > mt) {
      sr = sr * exp(mt - z) + 1.0;
      mt = z;
    } else {
      sr = sr + exp(z - mt);
    }
  }
  let m = wg_max(mt, lid);
  let sum = wg_sum(sr * exp(mt - m), lid);
  // the writes (xent_finish's, four columns per iteration)
  let dscale = pf(3u);
  let zt = ld(1u, row + u32(t));
  workgroupBarrier(); // every thread has read z[t] before anyone overwrites it
  let scale = dscale / sum;
  c = lid;
  for (; c + 3u * WG < Vp; c = c + 4u * WG) {
    var z: array<f32, 4>;
    for (var k = 0u; k < 4u; k = k + 1u) {
      z[k] = ld(1u, row + c + k * WG);
    }
    for (var k = 0u; k < 4u; k = k + 1u) {
      let ck = c + k * WG;
      var d = 0.0;
      if (ck < V) {
        d = exp(z[k] - m) * scale;
        if (ck == u32(t)) {
          d = d - dscale;
        }
      }
      st(1u, row + ck, d);
      if (OUT16) { st16(row + ck, d); }
    }
  }
  for (; c < Vp; c = c + WG) {
    var d = 0.0;
    if (c < V) {
      d = exp(ld(1u, row + c) - m) * scale;
      if (c == u32(t)) {
        d = d - dscale;
      }
    }
    st(1u, row + c, d);
    if (OUT16) { st16(row + c, d); }
  }
  if (lid == 0u) {
    st(0u, n, log(sum) - (zt - m));
  }
}

// softmax_xent_v16: softmax_xent_online4 on f16 logits with vector accesses (the host's choice
// where c->act_f16, Vp is a multiple of 4 and the logits start on 8 bytes: wg_v16_ok; prefix
// wg_v16_prefix(0): ld4 / st4 one 8-byte access of four logits). Why: [16384, 50304] f16 logits
// read once and written once are ~3.3 GB, which the per-element f16 form moved at ~650 GB/s on
// the H200. Same arguments and uniforms (OUT16 off: with f16 activations the dlogits are
// themselves the f16 operand); grid N workgroups. Thread lid takes the groups of four columns
// g = lid + k·WG: the V / 4 full groups two per iteration (eight logits, one running-max update,
// as online4's four), then the < 4 columns of a partial last group one at a time; the writes
// go over all Vp / 4 groups (columns ≥ V: 0, by select: the padding is read but not used).
// Same results as softmax_xent_online4 up to fp32 summation order.
@compute @workgroup_size(256)
fn softmax_xent_v16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_index) lid: u32) {
  let n = lin_wg(wid, nwg);
  if (n >= pu(0u)) {
    return;
  }
  let V = pu(1u);
  let Vp = pu(2u);
  let row = n * Vp;
  let G = Vp / 4u;
  let t = xent_target(n, lid);
  if (t < 0 || u32(t) >= V) {
    for (var g = lid; g < G; g = g + WG) {
      st4(1u, row + 4u * g, vec4<f32>(0.0));
      if (OUT16) { st16x4(row + 4u * g, vec4<f32>(0.0)); }
    }
    if (lid == 0u) {
      st(0u, n, 0.0);
    }
    return;
  }
  let Gf = V / 4u; // full groups
  var mt = -3.4e38;
  var sr = 0.0;
  var g = lid;
  for (; g + WG < Gf; g = g + 2u * WG) {
    let z0 = ld4(1u, row + 4u * g);
    let z1 = ld4(1u, row + 4u * (g + WG));
    let m2 = max(z0, z1);
    let m8 = max(max(m2.x, m2.y), max(m2.z, m2.w));
    if (m8 > mt) {
      sr = sr * exp(mt - m8);
      mt = m8;
    }
    let e = exp(z0 - vec4<f32>(mt)) + exp(z1 - vec4<f32>(mt));
    sr = sr + ((e.x + e.y) + (e.z + e.w));
  }
  if (g < Gf) {
    let z = ld4(1u, row + 4u * g);
    let m4 = max(max(z.x, z.y), max(z.z, z.w));
    if (m4 > mt) {
      sr = sr * exp(mt - m4);
      mt = m4;
    }
    let e = exp(z - vec4<f32>(mt));
    sr = sr + ((e.x + e.y) + (e.z + e.w));
  }
  for (var c = 4u * Gf + lid; c < V; c = c + WG) {
    let z = ld(1u, row + c);
    if (z > mt) {
      sr = sr * exp(mt - z) + 1.0;
      mt = z;
    } else {
      sr = sr + exp(z - mt);
    }
  }
  let m = wg_max(mt, lid);
  let sum = wg_sum(sr * exp(mt - m), lid);
  let dscale = pf(3u);
  let zt = ld(1u, row + u32(t));
  workgroupBarrier(); // every thread has read z[t] before anyone overwrites it
  let scale = dscale / sum;
  let vV = vec4<u32>(V);
  let vt = vec4<u32>(u32(t));
  g = lid;
  for (; g + WG < G; g = g + 2u * WG) {
    let z0 = ld4(1u, row + 4u * g);
    let z1 = ld4(1u, row + 4u * (g + WG));
    let c0 = vec4<u32>(4u * g) + vec4<u32>(0u, 1u, 2u, 3u);
    let c1 = c0 + vec4<u32>(4u * WG);
    let d0 = select(vec4<f32>(0.0), exp(z0 - vec4<f32>(m)) * scale, c0 < vV) - select(vec4<f32>(0.0), vec4<f32>(dscale), c0 == vt);
    let d1 = select(vec4<f32>(0.0), exp(z1 - vec4<f32>(m)) * scale, c1 < vV) - select(vec4<f32>(0.0), vec4<f32>(dscale), c1 == vt);
    st4(1u, row + 4u * g, d0);
    st4(1u, row + 4u * (g + WG), d1);
    if (OUT16) {
      st16x4(row + 4u * g, d0);
      st16x4(row + 4u * (g + WG), d1);
    }
  }
  if (g < G) {
    let z = ld4(1u, row + 4u * g);
    let c0 = vec4<u32>(4u * g) + vec4<u32>(0u, 1u, 2u, 3u);
    let d = select(vec4<f32>(0.0), exp(z - vec4<f32>(m)) * scale, c0 < vV) - select(vec4<f32>(0.0), vec4<f32>(dscale), c0 == vt);
    st4(1u, row + 4u * g, d);
    if (OUT16) { st16x4(row + 4u * g, d); }
  }
  if (lid == 0u) {
    st(0u, n, log(sum) - (zt - m));
  }
}
