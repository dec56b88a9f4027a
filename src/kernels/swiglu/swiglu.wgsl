// SwiGLU on a fused gate|up row: forward and ffn_swiglu_backward (branch-on-sign stable
// sigmoid from the preamble; a NaN product becomes 0, the seed's guard). Thread per (n, f).
// The forward's output is a matmul input (backend.h "mmin"): with f16 activations the host's
// prefix (wg_out16_prefix) sets OUT16 and st16 writes it as f16 to binding 9 (element 2·u5 + i;
// arg 0 is then a placeholder), else OUT16 is false and it goes to arg 0 as fp32. The backward
// pipelines get their own prefix (wg_out16_prefix_on): there OUT16 adds an f16 copy of the
// written gradient (binding 9, beyond f16's range ±inf) to its fp32 store, the f16 operand of
// the subgroup-matrix matmuls that read it next (wg_grad16, webgpu_mem.c).

// args 0 out / dgu, 1 gu, 2 dout; u0 N, u1 F

// sigmoid_stable, nan_to_zero, swiglu_dgu: common/swiglu_math.wgsl (appended by the host)

// out[n,f] = silu(g)·u
@compute @workgroup_size(256)
fn swiglu_fwd(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
  let F = pu(1u);
  let i = lin_wg(wid, nwg) * WG + lid;
  if (i >= pu(0u) * F) {
    return;
  }
  let n = i / F;
  let f = i % F;
  let g = ld(1u, n * 2u * F + f);
  let u = ld(1u, n * 2u * F + F + f);
  let y = g * sigmoid_stable(g) * u;
  if (OUT16) { st16(i, y); } else { st(0u, i, y); }
}

// dgate = dout·u·σ(g)(1 + g(1 − σ(g))), dup = dout·silu(g), written (=) into dgu [N, 2F]
@compute @workgroup_size(256)
fn ffn_swiglu_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                       @builtin(local_invocation_index) lid: u32) {
  let F = pu(1u);
  let i = lin_wg(wid, nwg) * WG + lid;
  if (i >= pu(0u) * F) {
    return;
  }
  let n = i / F;
  let f = i % F;
  let row = n * 2u * F;
  let g = ld(1u, row + f);
  let u = ld(1u, row + F + f);
  let d = ld(2u, i);
  let y = swiglu_dgu(d, g, u);
  let y0 = y.x;
  let y1 = y.y;
  st(0u, row + f, y0);
  st(0u, row + F + f, y1);
  if (OUT16) { st16(row + f, y0); st16(row + F + f, y1); } // the backward pipeline's OUT16: an f16 copy
}
