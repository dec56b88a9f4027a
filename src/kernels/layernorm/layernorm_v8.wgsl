enable f16;
enable subgroups;
// The row loop below is uniform per subgroup (every lane of a subgroup takes the same rows), which
// WGSL's analysis cannot see (its bound comes from subgroupAdd(1u)): its report is turned off.
diagnostic(off, subgroup_uniformity);
// end of directives
// LayerNorm forward / backward for f16 activations with 16-byte accesses and the row in registers
// (issue 22): layernorm.wgsl's layernorm_fwd / layernorm_bwd (and the backward's dw / db) with the
// same results up to fp32 summation order. Standalone module in the backend's layout (wg_run_ex):
// binding 0 the uniform block [element offsets in 4-byte units of the arguments][slots][N, C,
// eps (f32 bits), R rows a workgroup]; f16 tensors are vec4<u32> arrays (eight f16 a vector:
// their offsets multiples of 16 bytes, C a multiple of 8), w and b vec4<f32>.
//   layernorm_fwd_v8: 1 out f16 [N, C] (the matmul input, saturated at ±65504), 2 mean f32 [N],
//     3 rstd f32 [N], 4 inp f16 [N, C], 5 w f32 [C], 6 b f32 [C] (7: unused, the placeholder).
//   layernorm_bwd_v8: 1 dinp f16 [N, C] (+=; beyond f16's range ±inf), 2 dout f16 [N, C], 3 inp
//     f16 [N, C], 4 w, 5 mean, 6 rstd; with DWDB (prefix) also 7 part f32 [ceil(N / R), 2C]:
//     workgroup y's partial sums [Σ dout·x̂ | Σ dout] over its rows (the host adds them into dw
//     and db: colsum_rows8), else 7 unused.
// The prefix (layernorm host, webgpu_ops_elem.c) sets NK (`const NK` and `//defs NK=`: groups of
// eight columns a lane holds, ceil(C / (8 · the adapter's smallest subgroup size)) ≤ 4, so that
// C / 8 ≤ NK · lanes at any subgroup size the adapter has) and DWDB. Grid: ceil(N / R) workgroups
// of 256 (x, y folded); workgroup y takes rows [y·R, y·R + R), its subgroup s rows s, s + 256 / size,
// ... (common/norm_rows.wgsl). Why (issue 22): the subgroup-per-row kernels (layernorm_sg.wgsl's
// v16 forms) read each row up to three times with at most two 8-byte loads in flight per lane,
// and dw / db were a second kernel that read dout and inp again (H200 GPT-2 124M B16 T1024:
// fwd 0.77, bwd 1.08, dwdb 0.71 ms a step against ~0.33 / ~0.66 / ~0 at DRAM speed). Here every
// element is loaded once, all of a lane's loads at the start of the row (NK 16-byte loads per
// tensor in flight), and the backward adds the row's dw / db terms to per-lane registers.
// A lane whose group k is past the row (C / 8 not a multiple of the lanes) loads the row's last
// group instead (a clamped index, no branch around the loads) and leaves it out of the sums and
// stores. Lavapipe note (2026-12-04, 8 lanes): a form with the loads inside `if (q < G)` and the
// row loop `for (n = r0 + lid / ns; n < min(r0 + R, N); ...)` ran lanes 4..7 as inactive (wrong
// sums, unwritten columns) with GALLIVM_PERF=nopt, and once the loads were clamped, without it;
// this form (the row loop of layernorm_sg.wgsl) passes at 4 and 8 lanes, with and without.

struct U { off: vec4<u32>, off_hi: vec4<u32>, slots: array<vec4<u32>, 2>, N: u32, C: u32, eps: f32, R: u32 }
@group(0) @binding(0) var<uniform> p: U;
// forward
@group(0) @binding(1) var<storage, read_write> f_out: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> f_mean: array<f32>;
@group(0) @binding(3) var<storage, read_write> f_rstd: array<f32>;
@group(0) @binding(4) var<storage, read> f_inp: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read> f_w: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> f_b: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> f_unused: array<f32>;
// backward
@group(0) @binding(1) var<storage, read_write> b_dinp: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> b_dout: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> b_inp: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> b_w: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> b_mean: array<f32>;
@group(0) @binding(6) var<storage, read> b_rstd: array<f32>;
@group(0) @binding(7) var<storage, read_write> b_part: array<vec4<f32>>;

// columns 8q .. 8q + 7 of a [C] fp32 parameter (two 16-byte loads)
fn w8f(q: u32) -> nr8 {
  let o = p.off_hi[0] / 4u + 2u * q; // arg 4
  return nr8(f_w[o], f_w[o + 1u]);
}
fn b8f(q: u32) -> nr8 {
  let o = p.off_hi[1] / 4u + 2u * q; // arg 5
  return nr8(f_b[o], f_b[o + 1u]);
}
fn w8b(q: u32) -> nr8 {
  let o = p.off[3] / 4u + 2u * q; // arg 3
  return nr8(b_w[o], b_w[o + 1u]);
}
// nr_flush's store: four partial sums at element i of part
fn nr_part(i: u32, v: vec4<f32>) {
  b_part[p.off_hi[2] / 4u + i / 4u] = v;
}

@compute @workgroup_size(256)
fn layernorm_fwd_v8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_index) lid: u32) {
  _ = &f_unused;
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
    let row = p.off[3] / 4u + n * G; // the row's first vector in f_inp
    let orow = p.off[0] / 4u + n * G;
    // the lane's groups, all loads first (zeros past the row: they add nothing to the sums)
//#for k in NK
    let q{k} = lane + {k}u * ns;
    let x{k} = select(vec4<u32>(0u), f_inp[row + min(q{k}, G - 1u)], q{k} < G);
//#endfor
    var s = 0.0;
//#for k in NK
    s = s + nr_sum(nr_h8(x{k}));
//#endfor
    let m = subgroupAdd(s) / f32(C);
    // two-pass variance from the registers (the CPU's order of operations, biased)
    var v = 0.0;
//#for k in NK
    if (q{k} < G) {
      v = v + nr_sqdev(nr_h8(x{k}), m);
    }
//#endfor
    let r = 1.0 / sqrt(subgroupAdd(v) / f32(C) + p.eps);
//#for k in NK
    if (q{k} < G) {
      let xv = nr_h8(x{k});
      let w = w8f(q{k});
      let b = b8f(q{k});
      let y = nr8((xv.a - vec4<f32>(m)) * r * w.a + b.a, (xv.b - vec4<f32>(m)) * r * w.b + b.b);
      f_out[orow + q{k}] = nr_pk_sat(y);
    }
//#endfor
    if (lane == 0u) {
      f_mean[p.off[1] + n] = m;
      f_rstd[p.off[2] + n] = r;
    }
  }
}

// g = w·dout, x̂ = (x − mean)·rstd: dinp += rstd·(g − mean(g) − x̂·mean(g·x̂)); with DWDB the
// lane's dw (Σ dout·x̂) and db (Σ dout) sums for its columns over its subgroup's rows, added over
// the workgroup (nr_flush) into its partial row.
@compute @workgroup_size(256)
fn layernorm_bwd_v8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
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
  var sb{k} = nr_zero();
//#endfor
  for (var rr = lid / ns; rr < p.R; rr = rr + 256u / ns) {
    let n = r0 + rr;
    if (n >= p.N) {
      break;
    }
    let m = b_mean[p.off_hi[0] + n];
    let r = b_rstd[p.off_hi[1] + n];
    let di = p.off[0] / 4u + n * G;
    let dy = p.off[1] / 4u + n * G;
    let xi = p.off[2] / 4u + n * G;
//#for k in NK
    let j{k} = min(q{k}, G - 1u); // (a lane past the row loads the last group, unused)
    let d{k} = b_dout[dy + j{k}];
    let x{k} = b_inp[xi + j{k}];
    let a{k} = b_dinp[di + j{k}];
//#endfor
    var gs = 0.0;
    var gx = 0.0;
//#for k in NK
    if (q{k} < G) {
      let dv = nr_h8(d{k});
      let xv = nr_h8(x{k});
      let w = w8b(q{k});
      let g = nr8(w.a * dv.a, w.b * dv.b);
      let xh = nr8((xv.a - vec4<f32>(m)) * r, (xv.b - vec4<f32>(m)) * r);
      gs = gs + nr_sum(g);
      gx = gx + nr_dot(g, xh);
      if (DWDB) {
        sw{k} = nr8(sw{k}.a + dv.a * xh.a, sw{k}.b + dv.b * xh.b);
        sb{k} = nr8(sb{k}.a + dv.a, sb{k}.b + dv.b);
      }
    }
//#endfor
    let gm = subgroupAdd(gs) / f32(C);
    let gxm = subgroupAdd(gx) / f32(C);
//#for k in NK
    if (q{k} < G) {
      let dv = nr_h8(d{k});
      let xv = nr_h8(x{k});
      let av = nr_h8(a{k});
      let w = w8b(q{k});
      let ya = av.a + r * (w.a * dv.a - vec4<f32>(gm) - (xv.a - vec4<f32>(m)) * r * gxm);
      let yb = av.b + r * (w.b * dv.b - vec4<f32>(gm) - (xv.b - vec4<f32>(m)) * r * gxm);
      b_dinp[di + q{k}] = nr_pk_inf(nr8(ya, yb));
    }
//#endfor
  }
  if (DWDB && r0 < p.N) { // (a workgroup past the rows of a folded grid has no partial row)
    // partial row wg: [dw C | db C]
//#for k in NK
    nr_flush(sw{k}, {k}u, lid, ns, C, wg * 2u * C);
    nr_flush(sb{k}, {k}u, lid, ns, C, wg * 2u * C + C);
//#endfor
  }
}
