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

// swiglu_fwd_v16 / ffn_swiglu_backward_v16: swiglu_fwd / ffn_swiglu_backward for f16
// activations with vector accesses (the host's choice where c->act_f16, F is a multiple of 4 and
// the f16 tensors start on 8 bytes: wg_v16_ok; prefix wg_v16_prefix: ld4 one 8-byte load of four
// columns, the forward's out one 8-byte st16x4 at binding 9, the backward's dgu two 8-byte st4).
// Same arguments and uniforms (u0 N, u1 F; gu / dgu f16 [N, 2F] gate | up, out / dout f16
// [N, F]). Thread: the groups of four outputs q = 4·WG·w + lid + k·WG, k < 4 (sixteen
// outputs; gelu_fwd_v16's layout), group q at row q / (F / 4), columns 4·(q mod F / 4) .. + 3;
// the loads of all four groups issue before the math. The same values per element as the
// one-element forms (sigmoid_stable, nan_to_zero per component). Grid: ceil(N·F / 4096)
// workgroups (lin_wg).
// Why: 2-byte accesses per element ran swiglu_fwd at ~1.0 and the backward at ~2.1 TB/s on the
// H200 (issue 22's llama profile); gelu's vector forms move as many bytes in about half the time.
fn swiglu_col(q: u32, F: u32) -> vec2<u32> { // (row offset n·2F, column f) of group q
  let F4 = F / 4u;
  return vec2<u32>((q / F4) * 2u * F, 4u * (q % F4));
}

@compute @workgroup_size(256)
fn swiglu_fwd_v16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
  let F = pu(1u);
  let q0 = lin_wg(wid, nwg) * 4u * WG + lid;
  let nq = pu(0u) * (F / 4u);
  var g: array<vec4<f32>, 4>;
  var u: array<vec4<f32>, 4>;
  for (var k = 0u; k < 4u; k = k + 1u) {
    g[k] = vec4<f32>(0.0);
    u[k] = vec4<f32>(0.0);
    let q = q0 + k * WG;
    if (q < nq) {
      let rc = swiglu_col(q, F);
      g[k] = ld4(1u, rc.x + rc.y);
      u[k] = ld4(1u, rc.x + F + rc.y);
    }
  }
  for (var k = 0u; k < 4u; k = k + 1u) {
    let q = q0 + k * WG;
    if (q < nq) {
      let a = g[k];
      let s = vec4<f32>(sigmoid_stable(a.x), sigmoid_stable(a.y), sigmoid_stable(a.z), sigmoid_stable(a.w));
      let y = a * s * u[k];
      if (OUT16) { st16x4(4u * q, y); } else { st4(0u, 4u * q, y); }
    }
  }
}

fn nan_to_zero4(x: vec4<f32>) -> vec4<f32> {
  return vec4<f32>(nan_to_zero(x.x), nan_to_zero(x.y), nan_to_zero(x.z), nan_to_zero(x.w));
}

@compute @workgroup_size(256)
fn ffn_swiglu_backward_v16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                           @builtin(local_invocation_index) lid: u32) {
  let F = pu(1u);
  let q0 = lin_wg(wid, nwg) * 4u * WG + lid;
  let nq = pu(0u) * (F / 4u);
  var g: array<vec4<f32>, 4>;
  var u: array<vec4<f32>, 4>;
  var d: array<vec4<f32>, 4>;
  for (var k = 0u; k < 4u; k = k + 1u) {
    g[k] = vec4<f32>(0.0);
    u[k] = vec4<f32>(0.0);
    d[k] = vec4<f32>(0.0);
    let q = q0 + k * WG;
    if (q < nq) {
      let rc = swiglu_col(q, F);
      g[k] = ld4(1u, rc.x + rc.y);
      u[k] = ld4(1u, rc.x + F + rc.y);
      d[k] = ld4(2u, 4u * q);
    }
  }
  for (var k = 0u; k < 4u; k = k + 1u) {
    let q = q0 + k * WG;
    if (q < nq) {
      let rc = swiglu_col(q, F);
      let a = g[k];
      let s = vec4<f32>(sigmoid_stable(a.x), sigmoid_stable(a.y), sigmoid_stable(a.z), sigmoid_stable(a.w));
      let y0 = nan_to_zero4(d[k] * u[k] * s * (vec4<f32>(1.0) + a * (vec4<f32>(1.0) - s)));
      let y1 = nan_to_zero4(d[k] * a * s);
      st4(0u, rc.x + rc.y, y0);
      st4(0u, rc.x + F + rc.y, y1);
    }
  }
}
