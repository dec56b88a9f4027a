// RoPE (llama2.c pairing of adjacent dims), in place on the q and k heads of a fused qkv row.
// Thread per (row n, head h < n_head + n_kv_head, pair i). dir = -1 rotates backwards.
// arg 0 qkv; u0 N, u1 T, u2 heads rotated, u3 hd, u4 row stride, u5 pos0, u6 theta, u7 dir

// (cos, dir·sin) of position pos's angle for pair pr of a head of hd dims: pos·theta^(−2·pr/hd)
fn rope_cs(pos: u32, pr: u32, hd: u32) -> vec2<f32> {
  let freq = 1.0 / pow(pf(6u), f32(2u * pr) / f32(hd));
  let val = f32(pos) * freq;
  // Reduce the angle to [-pi, pi] first (Cody-Waite, 2pi = 6.28125 + 1.9353071795864769e-3;
  // k * 6.28125 is exact): WGSL only bounds sin/cos errors inside [-pi, pi], and NVIDIA's
  // Vulkan sin/cos of large positions' angles were off by 3e-6 against the CPU's sinf/cosf.
  let k = round(val * 0.15915494309189535);
  let r = (val - k * 6.28125) - k * 1.9353071795864769e-3;
  return vec2<f32>(cos(r), pf(7u) * sin(r));
}

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
  let cs = rope_cs(pos, pr, hd);
  let fcr = cs.x;
  let fci = cs.y;
  let o = n * pu(4u) + h * hd + 2u * pr;
  let v0 = ld(0u, o);
  let v1 = ld(0u, o + 1u);
  st(0u, o, v0 * fcr - v1 * fci);
  st(0u, o + 1u, v0 * fci + v1 * fcr);
}

// rope_v16: rope for f16 activations with vector accesses (the host's choice where c->act_f16,
// hd is a multiple of 4 and qkv starts on 8 bytes: wg_v16_ok; prefix wg_v16_prefix(0): ld4 / st4
// one 8-byte access of two pairs). Same argument and uniforms. Thread per (row n, group g of four
// dims < hd / 4): pairs 2g and 2g + 1, whose angles depend on the position and the pair only, so
// the thread takes them once and rotates that group in every rotated head (u2 of them), four
// heads per iteration (four 8-byte loads in flight before the stores); a subgroup of 32 covers
// two rows' 128-byte head slices at hd 64. The same values per element as rope (rope_cs).
// Grid: ceil(N·hd / 4 / WG) workgroups (lin_wg).
// Why: rope's thread per pair with two 2-byte loads and stores and a pow, sin and cos each ran
// at ~0.83 TB/s on the H200 (issue 22's llama profile, 24 calls a step).
fn rope_rot(v: vec4<f32>, cs: vec4<f32>) -> vec4<f32> { // cs: (cos, sin) of pair 0, of pair 1
  return vec4<f32>(v.x * cs.x - v.y * cs.y, v.x * cs.y + v.y * cs.x, v.z * cs.z - v.w * cs.w, v.z * cs.w + v.w * cs.z);
}

@compute @workgroup_size(256)
fn rope_v16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
  let nh = pu(2u);
  let hd = pu(3u);
  let G = hd / 4u;
  let i = lin_wg(wid, nwg) * WG + lid;
  if (i >= pu(0u) * G) {
    return;
  }
  let g = i % G;
  let n = i / G;
  let pos = pu(5u) + n % pu(1u);
  let cs = vec4<f32>(rope_cs(pos, 2u * g, hd), rope_cs(pos, 2u * g + 1u, hd));
  let o = n * pu(4u) + 4u * g;
  var h = 0u;
  for (; h + 3u < nh; h = h + 4u) {
    let v0 = ld4(0u, o + h * hd);
    let v1 = ld4(0u, o + (h + 1u) * hd);
    let v2 = ld4(0u, o + (h + 2u) * hd);
    let v3 = ld4(0u, o + (h + 3u) * hd);
    st4(0u, o + h * hd, rope_rot(v0, cs));
    st4(0u, o + (h + 1u) * hd, rope_rot(v1, cs));
    st4(0u, o + (h + 2u) * hd, rope_rot(v2, cs));
    st4(0u, o + (h + 3u) * hd, rope_rot(v3, cs));
  }
  for (; h < nh; h = h + 1u) {
    st4(0u, o + h * hd, rope_rot(ld4(0u, o + h * hd), cs));
  }
}
