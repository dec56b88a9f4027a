enable f16;
// end of directives
// SwiGLU forward for f16 activations with 16-byte accesses (issue 22): out = silu(gate) · up,
// silu(g) = g · sigmoid_stable(g) (common/swiglu_math.wgsl, appended by the host), the same
// values per element as swiglu.wgsl's swiglu_fwd_v16 (f32 math on the f16 inputs, the result
// clamped to ±65504 and rounded to f16 once). Source: Shazeer 2020 (GLU variants), llama2.c's
// SwiGLU; the layout is the model's (src/model/model.c: gu = gate | up).
//   1 out f16 [N, F] (array<vec4<u32>>: 8 halves a vec4), 2 gu f16 [N, 2F] (gate at columns
//   0..F−1 of a row, up at F..2F−1). Uniforms: p.off[k] the byte offset / 4 of argument k (the
//   host binds both 16-byte aligned, so p.off[k] / 4 is a vec4 index), u0 N, u1 F (F % 8 == 0).
// Thread: groups q = 4·256·w + lid + k·256 (k < 4) of eight outputs, group q at row q / (F / 8),
// columns 8·(q mod F / 8) .. + 7; the four groups' loads issue before the math.
// Grid: ceil(N·F / 8 / 1024) workgroups (gridn).
// Why: swiglu_fwd_v16's 8-byte accesses moved ~2.65 TB/s on the H200 (0.908 ms for 12 calls of
// the llama shape's 16384 × 2048, issue 22's profile, 2026-12-05); the f16 norms gained by
// 16-byte accesses (rmsnorm_v8.wgsl).
// swiglu_bwd_v8: SwiGLU's backward the same way (TEZGAH_WEBGPU_SWIGLU_BWD_V8): 1 dgu f16 [N, 2F]
// (dgate | dup, written), 2 gu f16 [N, 2F], 3 dout f16 [N, F] (d = dL/d out); per element
// swiglu_dgu (common/swiglu_math.wgsl: the same values as swiglu.wgsl's ffn_swiglu_backward_v16),
// stored by f16s (±inf beyond f16's range: the loss scaler must see an overflow). Same threads
// and grid as the forward. Why: ffn_swiglu_backward_v16 moved ~2.6 TB/s on the H200 (1.53 ms a
// llama step where the model runs it apart from the matmul, TEZGAH_WEBGPU_SWIGLU_EPI=0; fused into
// the dY·W matmul's epilogue it costs as much, docs/PERF.md 2026-12-04).
struct U { off: vec4<u32>, off_hi: vec4<u32>, slots: array<vec4<u32>, 2>, N: u32, F: u32, pad0: u32, pad1: u32 }
@group(0) @binding(0) var<uniform> p: U;
@group(0) @binding(1) var<storage, read_write> out8: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> gu8: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> dout8: array<vec4<u32>>; // (the backward's; a placeholder in the forward)

// (h8lo, h8hi, h8s: common/h8.wgsl, appended by the host)
fn silu_mul4(g: vec4<f32>, u: vec4<f32>) -> vec4<f32> {
  let s = vec4<f32>(sigmoid_stable(g.x), sigmoid_stable(g.y), sigmoid_stable(g.z), sigmoid_stable(g.w));
  return clamp(g * s * u, vec4<f32>(-65504.0), vec4<f32>(65504.0));
}

@compute @workgroup_size(256)
fn swiglu_fwd_v8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
  _ = &dout8;
  let G = p.F / 8u;          // groups a row
  let nq = p.N * G;
  let qb = (wid.y * nwg.x + wid.x) * 1024u + lid;
  let o0 = p.off[0] / 4u;
  let i0 = p.off[1] / 4u;
  // the four groups written out (//#for, the host's preprocessor: NG = 4 from the prefix's
  // `//defs` line), not arrays indexed in loops, which NVIDIA's driver keeps in local memory
//#for k in NG
  let q{k} = qb + {k}u * 256u;
  var g{k} = vec4<u32>(0u);
  var u{k} = vec4<u32>(0u);
  if (q{k} < nq) {
    let a = i0 + (q{k} / G) * 2u * G + q{k} % G;
    g{k} = gu8[a];
    u{k} = gu8[a + G];
  }
//#endfor
//#for k in NG
  if (q{k} < nq) {
    let lo = vec4<f16>(silu_mul4(h8lo(g{k}), h8lo(u{k})));
    let hi = vec4<f16>(silu_mul4(h8hi(g{k}), h8hi(u{k})));
    out8[o0 + q{k}] = vec4<u32>(bitcast<vec2<u32>>(lo), bitcast<vec2<u32>>(hi));
  }
//#endfor
}

// four components' (dgate, dup) from d, gate, up: swiglu_dgu's per component
fn dgu4(d: vec4<f32>, g: vec4<f32>, u: vec4<f32>) -> array<vec4<f32>, 2> {
  let x = swiglu_dgu(d.x, g.x, u.x);
  let y = swiglu_dgu(d.y, g.y, u.y);
  let z = swiglu_dgu(d.z, g.z, u.z);
  let w = swiglu_dgu(d.w, g.w, u.w);
  return array<vec4<f32>, 2>(vec4<f32>(x.x, y.x, z.x, w.x), vec4<f32>(x.y, y.y, z.y, w.y));
}

@compute @workgroup_size(256)
fn swiglu_bwd_v8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
  let G = p.F / 8u;
  let nq = p.N * G;
  let qb = (wid.y * nwg.x + wid.x) * 1024u + lid;
  let dgo = p.off[0] / 4u; // (not o0, g0, u0, d0: the written-out blocks' names)
  let guo = p.off[1] / 4u;
  let dto = p.off[2] / 4u;
//#for k in NG
  let q{k} = qb + {k}u * 256u;
  let a{k} = (q{k} / G) * 2u * G + q{k} % G; // group q's gate in a [N, 2F] row
  var g{k} = vec4<u32>(0u);
  var u{k} = vec4<u32>(0u);
  var d{k} = vec4<u32>(0u);
  if (q{k} < nq) {
    g{k} = gu8[guo + a{k}];
    u{k} = gu8[guo + a{k} + G];
    d{k} = dout8[dto + q{k}];
  }
//#endfor
//#for k in NG
  if (q{k} < nq) {
    let lo = dgu4(h8lo(d{k}), h8lo(g{k}), h8lo(u{k}));
    let hi = dgu4(h8hi(d{k}), h8hi(g{k}), h8hi(u{k}));
    out8[dgo + a{k}] = vec4<u32>(h8s(lo[0]), h8s(hi[0]));
    out8[dgo + a{k} + G] = vec4<u32>(h8s(lo[1]), h8s(hi[1]));
  }
//#endfor
}
