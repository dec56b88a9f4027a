// GeLU (tanh form) forward and ffn_gelu_backward; the GeLU and its derivative are
// common/gelu_math.wgsl's gelu_f / gelu_g.
// The forward's output is a matmul input (backend.h "mmin"): with f16 activations the host's
// prefix (wg_out16_prefix) sets OUT16 and st16 writes it as f16 to binding 9 (element 2·u5 + i;
// arg 0 is then a placeholder), else OUT16 is false and it goes to arg 0 as fp32. The backward
// pipelines get their own prefix (wg_out16_prefix_on): there OUT16 adds an f16 copy of the
// written gradient (binding 9, beyond f16's range ±inf) to its fp32 store, the f16 operand of
// the subgroup-matrix matmuls that read it next (wg_grad16, webgpu_mem.c).

// args 0 out / dinp, 1 inp, 2 dout; u0 n

// gelu_f, gelu_g: common/gelu_math.wgsl (appended by the host)

@compute @workgroup_size(256)
fn gelu_fwd(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
  let i = lin_wg(wid, nwg) * WG + lid;
  if (i >= pu(0u)) {
    return;
  }
  let y = gelu_f(ld(1u, i));
  if (OUT16) { st16(i, y); } else { st(0u, i, y); }
}

// dinp = dout · gelu'(x) (written)
@compute @workgroup_size(256)
fn ffn_gelu_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                     @builtin(local_invocation_index) lid: u32) {
  let i = lin_wg(wid, nwg) * WG + lid;
  if (i >= pu(0u)) {
    return;
  }
  let y = gelu_g(ld(1u, i)) * ld(2u, i);
  st(0u, i, y);
  if (OUT16) { st16(i, y); } // the backward pipeline's OUT16: an f16 copy of dinp too
}

// gelu_fwd4 / ffn_gelu_backward4: the same per element, four elements per thread (elements
// 4·WG·w + lid + k·WG, k < 4, of workgroup w: each load coalesced across the workgroup, four in
// flight per thread; a quarter of the workgroups). The host's default (TEZGAH_WEBGPU_MEMOPS=0:
// the one-element forms); grid: ceil(n / 1024) workgroups.
@compute @workgroup_size(256)
fn gelu_fwd4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
  let i0 = lin_wg(wid, nwg) * 4u * WG + lid;
  let n = pu(0u);
  var x: array<f32, 4>;
  for (var k = 0u; k < 4u; k = k + 1u) {
    x[k] = 0.0;
    if (i0 + k * WG < n) {
      x[k] = ld(1u, i0 + k * WG);
    }
  }
  for (var k = 0u; k < 4u; k = k + 1u) {
    let i = i0 + k * WG;
    if (i < n) {
      let y = gelu_f(x[k]);
      if (OUT16) { st16(i, y); } else { st(0u, i, y); }
    }
  }
}

// gelu_fwd8: gelu_fwd4 with eight elements per thread (8·WG·w + lid + k·WG, k < 8): twice the
// loads in flight (issue 22: one fp32 stream in, f16 out, moved ~3 TB/s on the H200 at four);
// the host's default (TEZGAH_WEBGPU_ELEM8=0: gelu_fwd4). Grid: ceil(n / 2048).
@compute @workgroup_size(256)
fn gelu_fwd8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
  let i0 = lin_wg(wid, nwg) * 8u * WG + lid;
  let n = pu(0u);
  var x: array<f32, 8>;
  for (var k = 0u; k < 8u; k = k + 1u) {
    x[k] = 0.0;
    if (i0 + k * WG < n) {
      x[k] = ld(1u, i0 + k * WG);
    }
  }
  for (var k = 0u; k < 8u; k = k + 1u) {
    let i = i0 + k * WG;
    if (i < n) {
      let y = gelu_f(x[k]);
      if (OUT16) { st16(i, y); } else { st(0u, i, y); }
    }
  }
}

@compute @workgroup_size(256)
fn ffn_gelu_backward4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                      @builtin(local_invocation_index) lid: u32) {
  let i0 = lin_wg(wid, nwg) * 4u * WG + lid;
  let n = pu(0u);
  var x: array<f32, 4>;
  var d: array<f32, 4>;
  for (var k = 0u; k < 4u; k = k + 1u) {
    x[k] = 0.0;
    d[k] = 0.0;
    if (i0 + k * WG < n) {
      x[k] = ld(1u, i0 + k * WG);
      d[k] = ld(2u, i0 + k * WG);
    }
  }
  for (var k = 0u; k < 4u; k = k + 1u) {
    let i = i0 + k * WG;
    if (i < n) {
      let y = gelu_g(x[k]) * d[k];
      st(0u, i, y);
      if (OUT16) { st16(i, y); }
    }
  }
}

// gelu_fwd_v16 / ffn_gelu_backward_v16: gelu_fwd4 / ffn_gelu_backward4 for f16 activations with
// vector accesses (the host's choice where c->act_f16, n is a multiple of 4 and the tensors
// start on 8 bytes: wg_v16_ok; prefix wg_v16_prefix: ld4 one 8-byte load, the forward's f16 out
// one 8-byte st16x4, the backward's dinp one 8-byte st4). Thread: the groups of four
// g = 4·WG·w + lid + k·WG, k < 4 (sixteen elements); the same values per element as the
// one-element forms. u0 n (a multiple of 4); grid: ceil(n / 4096) workgroups.
@compute @workgroup_size(256)
fn gelu_fwd_v16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
  let g0 = lin_wg(wid, nwg) * 4u * WG + lid;
  let ng = pu(0u) / 4u;
  var x: array<vec4<f32>, 4>;
  for (var k = 0u; k < 4u; k = k + 1u) {
    x[k] = vec4<f32>(0.0);
    if (g0 + k * WG < ng) {
      x[k] = ld4(1u, 4u * (g0 + k * WG));
    }
  }
  for (var k = 0u; k < 4u; k = k + 1u) {
    let g = g0 + k * WG;
    if (g < ng) {
      let y = vec4<f32>(gelu_f(x[k].x), gelu_f(x[k].y), gelu_f(x[k].z), gelu_f(x[k].w));
      if (OUT16) { st16x4(4u * g, y); } else { st4(0u, 4u * g, y); }
    }
  }
}

@compute @workgroup_size(256)
fn ffn_gelu_backward_v16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                         @builtin(local_invocation_index) lid: u32) {
  let g0 = lin_wg(wid, nwg) * 4u * WG + lid;
  let ng = pu(0u) / 4u;
  var x: array<vec4<f32>, 4>;
  var d: array<vec4<f32>, 4>;
  for (var k = 0u; k < 4u; k = k + 1u) {
    x[k] = vec4<f32>(0.0);
    d[k] = vec4<f32>(0.0);
    if (g0 + k * WG < ng) {
      x[k] = ld4(1u, 4u * (g0 + k * WG));
      d[k] = ld4(2u, 4u * (g0 + k * WG));
    }
  }
  for (var k = 0u; k < 4u; k = k + 1u) {
    let g = g0 + k * WG;
    if (g < ng) {
      let y = vec4<f32>(gelu_g(x[k].x), gelu_g(x[k].y), gelu_g(x[k].z), gelu_g(x[k].w)) * d[k];
      st4(0u, 4u * g, y);
      if (OUT16) { st16x4(4u * g, y); }
    }
  }
}
