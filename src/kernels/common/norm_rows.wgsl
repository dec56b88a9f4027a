// The row code shared by the f16 norms with 16-byte accesses (layernorm_v8.wgsl, rmsnorm_v8.wgsl;
// issue 22): the backend appends this file to a module whose code calls nr_h8( (module() in
// webgpu_pipe.c), as it does common/gelu_math.wgsl. The module enables f16 (nr_pk_*) and declares
// `fn nr_part(i: u32, v: vec4<f32>)`, the store of four partial sums (nr_flush).
// Layout the kernels share: a row of C f16 activations (C a multiple of 8) is C / 8 groups of
// eight columns, one 16-byte vec4<u32> each (two f16 per u32, the lower column in the low half);
// subgroup s of the 256-thread workgroup takes the workgroup's rows s, s + 256 / size, ...; its
// lane l the groups l, l + size, ... (NK of them at most: the host's prefix), held in registers,
// so every activation is read from memory once per row pass. Source: our own.

// eight consecutive columns in f32: columns 0..3 in a, 4..7 in b
struct nr8 {
  a: vec4<f32>,
  b: vec4<f32>,
}

// a group's eight f16 (exact in f32)
fn nr_h8(v: vec4<u32>) -> nr8 {
  return nr8(vec4<f32>(unpack2x16float(v.x), unpack2x16float(v.y)),
             vec4<f32>(unpack2x16float(v.z), unpack2x16float(v.w)));
}

fn nr_zero() -> nr8 {
  return nr8(vec4<f32>(0.0), vec4<f32>(0.0));
}

// Σ of the eight (pairwise)
fn nr_sum(x: nr8) -> f32 {
  let s = x.a + x.b;
  return (s.x + s.y) + (s.z + s.w);
}

// Σ x·y over the eight
fn nr_dot(x: nr8, y: nr8) -> f32 {
  let s = x.a * y.a + x.b * y.b;
  return (s.x + s.y) + (s.z + s.w);
}

// Σ (x − m)² over the eight
fn nr_sqdev(x: nr8, m: f32) -> f32 {
  let a = x.a - vec4<f32>(m);
  let b = x.b - vec4<f32>(m);
  return nr_dot(nr8(a, b), nr8(a, b));
}

// the eight as f16 for a matmul input (backend.h "mmin"): saturated at ±65504, as the other
// kernels' st16x4 (wg_v16_prefix)
fn nr_pk_sat(y: nr8) -> vec4<u32> {
  let lo = vec4<f16>(clamp(y.a, vec4<f32>(-65504.0), vec4<f32>(65504.0)));
  let hi = vec4<f16>(clamp(y.b, vec4<f32>(-65504.0), vec4<f32>(65504.0)));
  return vec4<u32>(bitcast<vec2<u32>>(lo), bitcast<vec2<u32>>(hi));
}

// the eight as f16 activation gradients: f16s (common/f16s.wgsl: ±inf beyond f16's range, NaN
// kept), as the f16 variant's st4
fn nr_pk_inf(y: nr8) -> vec4<u32> {
  let lo = vec4<f16>(f16s(y.a.x), f16s(y.a.y), f16s(y.a.z), f16s(y.a.w));
  let hi = vec4<f16>(f16s(y.b.x), f16s(y.b.y), f16s(y.b.z), f16s(y.b.w));
  return vec4<u32>(bitcast<vec2<u32>>(lo), bitcast<vec2<u32>>(hi));
}

// The fused weight-gradient partials: acc holds, for the lane's group k (columns
// 8·(lane + k·ns) .. + 7), a sum over the rows its subgroup took. nr_flush adds the workgroup's
// subgroups' sums (in subgroup order) and stores columns 8·k·ns .. 8·(k + 1)·ns − 1 (those < C)
// with nr_part(prow + column, four sums). Called from uniform control flow by every thread, once
// per k and partial row; two barriers each (workgroup memory: 256 threads x 8 f32 = 8 KB).
var<workgroup> nr_red: array<vec4<f32>, 512>;
fn nr_flush(acc: nr8, k: u32, lid: u32, ns: u32, C: u32, prow: u32) {
  workgroupBarrier(); // the previous call's readers are done
  nr_red[2u * lid] = acc.a;
  nr_red[2u * lid + 1u] = acc.b;
  workgroupBarrier();
  // thread t: columns 8·k·ns + 4t .. + 3 (lane t / 2, half t % 2) over the 256 / ns subgroups
  for (var t = lid; t < 2u * ns; t = t + 256u) {
    let col = 8u * k * ns + 4u * t;
    if (col < C) {
      var s = nr_red[t];
      for (var sg = 1u; sg < 256u / ns; sg = sg + 1u) {
        s = s + nr_red[sg * 2u * ns + t];
      }
      nr_part(prow + col, s);
    }
  }
}
