// Multi-tensor AdamW over the flat parameter buffer: one dispatch for all tensors. The range
// table (off, n, decay as f32 bits) is argument 4; workgroup row y = range, x strides over
// its elements. fp32 master weights, m and v.
// args 0 params, 1 grads, 2 m, 3 v, 4 ranges; u0 lr, u1 b1, u2 b2, u3 eps, u4 wd,
// u5 grad_scale, u6 1 − b1^t, u7 1 − b2^t

@compute @workgroup_size(256)
fn adamw(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) lid: u32) {
  let r = wid.y;
  let off = bitcast<u32>(ld(4u, 3u * r));
  let n = bitcast<u32>(ld(4u, 3u * r + 1u));
  let wd = pf(4u) * ld(4u, 3u * r + 2u);
  let lr = pf(0u);
  let b1 = pf(1u);
  let b2 = pf(2u);
  let eps = pf(3u);
  let gs = pf(5u);
  let c1 = pf(6u);
  let c2 = pf(7u);
  for (var j = wid.x * WG + lid; j < n; j = j + nwg.x * WG) {
    adamw_elem(off + j, lr, b1, b2, eps, wd, gs, c1, c2);
  }
}
