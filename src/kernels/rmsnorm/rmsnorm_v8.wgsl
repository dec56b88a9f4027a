enable f16;
enable subgroups;
// The row loop below is uniform per subgroup (every lane of a subgroup takes the same rows), which
// WGSL's analysis cannot see (its bound comes from subgroupAdd(1u)): its report is turned off.
diagnostic(off, subgroup_uniformity);
// end of directives
// RMSNorm forward / backward for f16 activations with 16-byte accesses and the row in registers
// (issue 22): rmsnorm.wgsl's rmsnorm_fwd / rmsnorm_bwd (and the backward's dw) with the same
// results up to fp32 summation order; layernorm_v8.wgsl's layout, uniforms (u0 N, u1 C, u2 eps,
// u3 R rows a workgroup), prefix (NK, DW here) and grid, and common/norm_rows.wgsl's row code.
//   rmsnorm_fwd_v8: 1 out f16 [N, C] (the matmul input, saturated at ±65504), 2 rstd f32 [N],
//     3 inp f16 [N, C], 4 w f32 [C] (5, 6: unused, placeholders).
//   rmsnorm_bwd_v8: 1 dinp f16 [N, C] (+=; beyond f16's range ±inf), 2 dout f16 [N, C], 3 inp
//     f16 [N, C], 4 w f32 [C], 5 rstd f32 [N]; with DW also 6 part f32 [ceil(N / R), C]:
//     workgroup y's partial sums Σ dout·x·rstd over its rows (the host adds them into dw:
//     colsum_rows8), else 6 unused.
// Why: as layernorm_v8 (the llama profile, H200 B16 T1024: rmsnorm_fwd 0.60, _bwd 1.03, _dw 0.57
// ms a step with rmsnorm_sg.wgsl's 8-byte forms and the separate dw pass).

struct U { off: vec4<u32>, off_hi: vec4<u32>, slots: array<vec4<u32>, 2>, N: u32, C: u32, eps: f32, R: u32 }
@group(0) @binding(0) var<uniform> p: U;
// forward
@group(0) @binding(1) var<storage, read_write> f_out: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> f_rstd: array<f32>;
@group(0) @binding(3) var<storage, read> f_inp: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> f_w: array<vec4<f32>>;
// backward (5 and 6 also the forward's placeholders)
@group(0) @binding(1) var<storage, read_write> b_dinp: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> b_dout: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> b_inp: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> b_w: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> b_rstd: array<f32>;
@group(0) @binding(6) var<storage, read_write> b_part: array<vec4<f32>>;

// columns 8q .. 8q + 7 of w (arg 3, two 16-byte loads)
fn w8f(q: u32) -> nr8 {
  let o = p.off[3] / 4u + 2u * q;
  return nr8(f_w[o], f_w[o + 1u]);
}
fn w8b(q: u32) -> nr8 {
  let o = p.off[3] / 4u + 2u * q;
  return nr8(b_w[o], b_w[o + 1u]);
}
// nr_flush's store: four partial sums at element i of part (arg 5)
fn nr_part(i: u32, v: vec4<f32>) {
  b_part[p.off_hi[1] / 4u + i / 4u] = v;
}

// out = x·rstd·w, rstd = 1/sqrt(mean(x²) + eps)
@compute @workgroup_size(256)
fn rmsnorm_fwd_v8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
  _ = &b_rstd;
  _ = &b_part;
  let ns = subgroupAdd(1u); // subgroup size and lane (every thread active here)
  let lane = subgroupExclusiveAdd(1u);
  let C = p.C;
  let G = C / 8u;
  let r0 = (wid.y * nwg.x + wid.x) * p.R;
  for (var rr = lid / ns; rr < p.R; rr = rr + 256u / ns) {
    let n = r0 + rr;
    if (n >= p.N) {
      break;
    }
    let row = p.off[2] / 4u + n * G;
    let orow = p.off[0] / 4u + n * G;
//#for k in NK
    let q{k} = lane + {k}u * ns;
    let x{k} = select(vec4<u32>(0u), f_inp[row + min(q{k}, G - 1u)], q{k} < G);
//#endfor
    var s = 0.0;
//#for k in NK
    let x{k}f = nr_h8(x{k});
    s = s + nr_dot(x{k}f, x{k}f);
//#endfor
    let r = 1.0 / sqrt(subgroupAdd(s) / f32(C) + p.eps);
//#for k in NK
    if (q{k} < G) {
      let w = w8f(q{k});
      f_out[orow + q{k}] = nr_pk_sat(nr8(x{k}f.a * r * w.a, x{k}f.b * r * w.b));
    }
//#endfor
    if (lane == 0u) {
      f_rstd[p.off[1] + n] = r;
    }
  }
}

// dinp += rstd·w·dout − x·rstd³·(Σ_c w·dout·x)/C; with DW the lane's Σ dout·x·rstd for its
// columns over its subgroup's rows, added over the workgroup (nr_flush) into its partial row.
@compute @workgroup_size(256)
fn rmsnorm_bwd_v8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
  _ = &b_part;
  let ns = subgroupAdd(1u);
  let lane = subgroupExclusiveAdd(1u);
  let C = p.C;
  let G = C / 8u;
  let wg = wid.y * nwg.x + wid.x;
  let r0 = wg * p.R;
//#for k in NK
  let q{k} = lane + {k}u * ns;
  var sw{k} = nr_zero();
//#endfor
  for (var rr = lid / ns; rr < p.R; rr = rr + 256u / ns) {
    let n = r0 + rr;
    if (n >= p.N) {
      break;
    }
    let r = b_rstd[p.off_hi[0] + n];
    let di = p.off[0] / 4u + n * G;
    let dy = p.off[1] / 4u + n * G;
    let xi = p.off[2] / 4u + n * G;
//#for k in NK
    let j{k} = min(q{k}, G - 1u); // (a lane past the row loads the last group, unused)
    let d{k} = b_dout[dy + j{k}];
    let x{k} = b_inp[xi + j{k}];
    let a{k} = b_dinp[di + j{k}];
//#endfor
    var dot = 0.0;
//#for k in NK
    if (q{k} < G) {
      let dv = nr_h8(d{k});
      let xv = nr_h8(x{k});
      let w = w8b(q{k});
      dot = dot + nr_dot(nr8(w.a * dv.a, w.b * dv.b), xv);
      if (DW) {
        sw{k} = nr8(sw{k}.a + dv.a * xv.a * r, sw{k}.b + dv.b * xv.b * r);
      }
    }
//#endfor
    let kk = r * r * r * subgroupAdd(dot) / f32(C);
//#for k in NK
    if (q{k} < G) {
      let dv = nr_h8(d{k});
      let xv = nr_h8(x{k});
      let av = nr_h8(a{k});
      let w = w8b(q{k});
      b_dinp[di + q{k}] = nr_pk_inf(nr8(av.a + r * w.a * dv.a - kk * xv.a, av.b + r * w.b * dv.b - kk * xv.b));
    }
//#endfor
  }
  if (DW && r0 < p.N) { // (a workgroup past the rows of a folded grid has no partial row)
//#for k in NK
    nr_flush(sw{k}, {k}u, lid, ns, C, wg * C);
//#endfor
  }
}
