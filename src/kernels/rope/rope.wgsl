// RoPE (llama2.c pairing of adjacent dims), in place on the q and k heads of a fused qkv row.
// Thread per (row n, head h < n_head + n_kv_head, pair i). dir = -1 rotates backwards.
// arg 0 qkv; u0 N, u1 T, u2 heads rotated, u3 hd, u4 row stride, u5 pos0, u6 theta, u7 dir

@compute @workgroup_size(256)
fn rope(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let nh = pu(2u);
  let hd = pu(3u);
  let half = hd / 2u;
  let i = lin_wg(wid, nwg) * WG + lid;
  if (i >= pu(0u) * nh * half) {
    return;
  }
  let pr = i % half;
  let h = (i / half) % nh;
  let n = i / (half * nh);
  let pos = pu(5u) + n % pu(1u);
  let freq = 1.0 / pow(pf(6u), f32(2u * pr) / f32(hd));
  let val = f32(pos) * freq;
  // Reduce the angle to [-pi, pi] first (Cody-Waite, 2pi = 6.28125 + 1.9353071795864769e-3;
  // k * 6.28125 is exact): WGSL only bounds sin/cos errors inside [-pi, pi], and NVIDIA's
  // Vulkan sin/cos of large positions' angles were off by 3e-6 against the CPU's sinf/cosf.
  let k = round(val * 0.15915494309189535);
  let r = (val - k * 6.28125) - k * 1.9353071795864769e-3;
  let fcr = cos(r);
  let fci = pf(7u) * sin(r);
  let o = n * pu(4u) + h * hd + 2u * pr;
  let v0 = ld(0u, o);
  let v1 = ld(0u, o + 1u);
  st(0u, o, v0 * fcr - v1 * fci);
  st(0u, o + 1u, v0 * fci + v1 * fcr);
}
