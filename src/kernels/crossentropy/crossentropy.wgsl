// Fused softmax + cross-entropy, in place: logits [N, Vp] become fp32 dlogits. One
// workgroup per row: max m, then s = Σ exp(z − m), then the writes (three passes over the row).
// loss = log(s) − (z[t] − m), never (m + log(s)) − z[t]: m + log(s) rounded to f32 loses
// everything below the spacing of |m| (loss 0 for logits [1e8, 1e8], pytorch/pytorch#11752).
// args 0 losses, 1 logits, 2 targets (i32); u0 N, u1 V, u2 Vp, u3 dscale
// With OUT16 (the host's prefix, wg_out16_prefix_on: where the subgroup-matrix matmul runs) the
// dlogits are also written as f16 (st16: binding 9, element 2·u5 + row·Vp + c; beyond f16's
// range ±inf, as the conversion they replace gives), the f16 operand the lm_head's backward
// matmuls read (webgpu_ops_matmul.c, sg_operand).

var<workgroup> tsh: i32;

@compute @workgroup_size(256)
fn softmax_xent(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
  let n = lin_wg(wid, nwg);
  if (n >= pu(0u)) {
    return;
  }
  let V = pu(1u);
  let Vp = pu(2u);
  let dscale = pf(3u);
  let row = n * Vp;
  if (lid == 0u) {
    tsh = ldi(2u, n);
  }
  let t = workgroupUniformLoad(&tsh); // uniform: the branches below hold barriers
  if (t < 0 || u32(t) >= V) {
    for (var c = lid; c < Vp; c = c + WG) {
      st(1u, row + c, 0.0);
      if (OUT16) { st16(row + c, 0.0); }
    }
    if (lid == 0u) {
      st(0u, n, 0.0);
    }
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
  let sum = wg_sum(s, lid);
  let zt = ld(1u, row + u32(t));
  workgroupBarrier(); // every thread has read z[t] before anyone overwrites it
  let scale = dscale / sum;
  for (var c = lid; c < Vp; c = c + WG) {
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
