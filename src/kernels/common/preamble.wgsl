// Shared preamble, prepended to every kernel file of the WebGPU backend
// (src/backend/webgpu/webgpu_pipe.c builds each module as constants + preamble + file).
//
// Tensor arguments. A kernel names its tensors by argument index a = 0..7 and reads and
// writes them only through ld(a, i) / st(a, i, v) (element i of argument a). The host binds
// each distinct buffer range once: arguments that live in the same buffer with overlapping
// (or alignment-adjacent) ranges share one binding, because Dawn rejects two writable
// bindings of overlapping ranges (the fused qkv rows are bound several times by attention,
// add() writes in place, and under TEZGAH_WEBGPU_ARENA=1 all activations share one buffer). The uniform block says, per
// argument, which binding (sa/sb) and which element offset inside it (oa/ob) to use; the
// switch on it is uniform across the dispatch. All eight storage bindings are read_write
// (unused ones get a 16-byte placeholder).
// Scalar parameters follow as 16 u32 words: pu(k) reads word k, pf(k) the same as f32.
// 1-D dispatches may be folded into x and y (x <= 32768): linear workgroup = wid.y*nwg.x + wid.x.

struct U {
  oa: vec4<u32>,
  ob: vec4<u32>,
  sa: vec4<u32>,
  sb: vec4<u32>,
  u: array<vec4<u32>, 4>,
}
@group(0) @binding(0) var<uniform> p: U;
const WG: u32 = 256u;

fn pu(k: u32) -> u32 {
  return p.u[k / 4u][k % 4u];
}
fn pf(k: u32) -> f32 {
  return bitcast<f32>(p.u[k / 4u][k % 4u]);
}
fn aoff(a: u32) -> u32 {
  if (a < 4u) {
    return p.oa[a];
  }
  return p.ob[a - 4u];
}
fn aslot(a: u32) -> u32 {
  if (a < 4u) {
    return p.sa[a];
  }
  return p.sb[a - 4u];
}
// ARGS BEGIN: the host's read-only variant (module() in webgpu_pipe.c, "// ro W=<mask>" in the
// prefix) replaces this block by bindings that are read-only for the arguments the file never
// writes, argument a at binding a, and an ld / st that switch on the argument itself (a constant
// at every call site, so each access folds to one binding).
@group(0) @binding(1) var<storage, read_write> B0: array<f32>;
@group(0) @binding(2) var<storage, read_write> B1: array<f32>;
@group(0) @binding(3) var<storage, read_write> B2: array<f32>;
@group(0) @binding(4) var<storage, read_write> B3: array<f32>;
@group(0) @binding(5) var<storage, read_write> B4: array<f32>;
@group(0) @binding(6) var<storage, read_write> B5: array<f32>;
@group(0) @binding(7) var<storage, read_write> B6: array<f32>;
@group(0) @binding(8) var<storage, read_write> B7: array<f32>;

fn ld(a: u32, i: u32) -> f32 {
  let j = aoff(a) + i;
  switch aslot(a) {
    case 0u: { return B0[j]; }
    case 1u: { return B1[j]; }
    case 2u: { return B2[j]; }
    case 3u: { return B3[j]; }
    case 4u: { return B4[j]; }
    case 5u: { return B5[j]; }
    case 6u: { return B6[j]; }
    default: { return B7[j]; }
  }
}
fn st(a: u32, i: u32, v: f32) {
  let j = aoff(a) + i;
  switch aslot(a) {
    case 0u: { B0[j] = v; }
    case 1u: { B1[j] = v; }
    case 2u: { B2[j] = v; }
    case 3u: { B3[j] = v; }
    case 4u: { B4[j] = v; }
    case 5u: { B5[j] = v; }
    case 6u: { B6[j] = v; }
    default: { B7[j] = v; }
  }
}
// Four consecutive elements i .. i + 3 of argument a. Here (fp32 bindings) four scalar
// accesses; in the f16 vector variant (module() in webgpu_pipe.c, "// v16" in the prefix) an
// f16 binding is array<vec4<f16>> and these are one 8-byte access each (aoff(a) + i must then be
// a multiple of 4: the host's alignment test, wg_v16_ok).
fn ld4(a: u32, i: u32) -> vec4<f32> {
  return vec4<f32>(ld(a, i), ld(a, i + 1u), ld(a, i + 2u), ld(a, i + 3u));
}
fn st4(a: u32, i: u32, v: vec4<f32>) {
  st(a, i, v.x);
  st(a, i + 1u, v.y);
  st(a, i + 2u, v.z);
  st(a, i + 3u, v.w);
}
// ARGS END
fn ldi(a: u32, i: u32) -> i32 {
  return bitcast<i32>(ld(a, i));
}

fn lin_wg(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
  return wid.y * nwg.x + wid.x;
}

// sigmoid_stable: common/swiglu_math.wgsl (appended by the host where a module calls it)

// wg_sum(v, lid) / wg_max(v, lid): the sum / max of v over the workgroup's WG threads, the
// same value returned to every thread; called from uniform control flow. The host appends
// reduce_sg.wgsl (subgroup operations, where the adapter offers Subgroups) or reduce_wg.wgsl
// (shared memory only) to this preamble in modules that use them.

// One AdamW element (Loshchilov & Hutter 2019) of the flat buffers bound as args 0 params,
// 1 grads, 2 m, 3 v: updates m, v and the weight, returns the new weight. Shared by adamw
// (adamw.wgsl) and adamw_w16 (w16.wgsl), which also writes the f16 mirror.
// c1, c2 = 1 − β1^t, 1 − β2^t; wd already multiplied by the range's decay flag.
fn adamw_elem(i: u32, lr: f32, b1: f32, b2: f32, eps: f32, wd: f32, gs: f32, c1: f32, c2: f32) -> f32 {
  let g = ld(1u, i) * gs;
  let m = b1 * ld(2u, i) + (1.0 - b1) * g;
  let v = b2 * ld(3u, i) + (1.0 - b2) * g * g;
  st(2u, i, m);
  st(3u, i, v);
  let w = ld(0u, i);
  let nw = w - lr * ((m / c1) / (sqrt(v / c2) + eps) + wd * w);
  st(0u, i, nw);
  return nw;
}
