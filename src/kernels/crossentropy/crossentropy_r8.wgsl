enable f16;
// end of directives
// Fused softmax + cross-entropy on f16 logits with the row in registers (issue 22): one read of
// the row and one write, where softmax_xent_v16 (crossentropy.wgsl) reads it twice. The same
// formulas as softmax_xent_v16: m = max z, s = Σ exp(z − m) over the V real columns,
// dlogits = dscale·(softmax − onehot(t)) written over the logits in f16 (f16s: ±inf beyond
// f16's range, NaN kept; columns V..Vp−1: 0), loss = log(s) − (z[t] − m) (never (m + log s) −
// z[t]: see crossentropy.wgsl); a row whose target is outside [0, V): dlogits 0, loss 0.
// Results: softmax_xent_v16's up to the fp32 summation order of s (here Σ exp(z − m) directly,
// there the online rescaled sum). Source: the softmax cross-entropy gradient (e.g. Goodfellow
// et al., Deep Learning, 6.2.2.3); llm.c's fused_classifier for the in-place layout.
//   1 losses f32 [N], 2 logits f16 [N, Vp] (array<vec4<u32>>: 8 halves a vec4; in place),
//   3 targets i32 [N]. Uniforms: p.off[k] the byte offset / 4 of argument k (logits 16-byte
//   aligned: p.off[1] / 4 is a vec4 index), u0 N (rows), u1 V, u2 Vp (a multiple of 8), u3
//   dscale (f32 bits). `//defs` line: NR, the 16-byte groups a thread holds, ceil(Vp / 8 / 256).
// Thread lid of row n's workgroup holds the groups q = lid + k·256 (k < NR) of eight columns
// 8q .. 8q + 7 in NR vec4<u32> registers (written out by the host's preprocessor, not an array:
// NVIDIA's driver keeps loop-indexed arrays in local memory); all NR loads issue first. Then the
// workgroup's max (wg_max), the sum of exp (wg_sum: common/reduce_sg.wgsl or reduce_wg.wgsl,
// appended by the host), and the writes from the registers; the thread holding column t writes
// the loss. Grid: one workgroup per row (gridn).
// Why: [16384, 50304] f16 logits are 1.65 GB; softmax_xent_v16 reads them twice and writes them
// once (1.35 ms of the llama step on the H200, 2026-12-05); one read less is a third of the bytes.
// Registers: NR = 25 at GPT-2's Vp 50304 (100 words of logits a thread); the host takes this
// kernel only for NR <= 32 (Vp <= 65536).
struct U { off: vec4<u32>, off_hi: vec4<u32>, slots: array<vec4<u32>, 2>, N: u32, V: u32, Vp: u32, dscale: f32 }
@group(0) @binding(0) var<uniform> p: U;
@group(0) @binding(1) var<storage, read_write> losses: array<f32>;
@group(0) @binding(2) var<storage, read_write> lg8: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> tgt: array<i32>; // (read_write: it may share a buffer with losses)
const WG: u32 = 256u;      // threads (wg_sum, wg_max)
const NEG: f32 = -3.4e38;
var<workgroup> tsh: i32;

// (h8lo, h8hi, h8s: common/h8.wgsl, appended by the host)
// columns 8q .. 8q + 3 and 8q + 4 .. 8q + 7
fn xr_c0(q: u32) -> vec4<u32> {
  return vec4<u32>(8u * q) + vec4<u32>(0u, 1u, 2u, 3u);
}
// the max of group q's columns below V (NEG where none)
fn xr_max(v: vec4<u32>, q: u32, V: u32) -> f32 {
  let ca = xr_c0(q);
  let vV = vec4<u32>(V);
  let m2 = max(select(vec4<f32>(NEG), h8lo(v), ca < vV), select(vec4<f32>(NEG), h8hi(v), ca + vec4<u32>(4u) < vV));
  return max(max(m2.x, m2.y), max(m2.z, m2.w));
}
// Σ exp(z − m) over group q's columns below V
fn xr_sum(v: vec4<u32>, q: u32, V: u32, m: f32) -> f32 {
  let ca = xr_c0(q);
  let vV = vec4<u32>(V);
  let ea = select(vec4<f32>(0.0), exp(h8lo(v) - vec4<f32>(m)), ca < vV);
  let eb = select(vec4<f32>(0.0), exp(h8hi(v) - vec4<f32>(m)), ca + vec4<u32>(4u) < vV);
  return ((ea.x + ea.y) + (ea.z + ea.w)) + ((eb.x + eb.y) + (eb.z + eb.w));
}
// group q's dlogits: exp(z − m)·scale below V (0 beyond), minus dscale at column t
fn xr_d(v: vec4<u32>, q: u32, V: u32, m: f32, scale: f32, dscale: f32, t: u32) -> vec4<u32> {
  let ca = xr_c0(q);
  let cb = ca + vec4<u32>(4u);
  let vV = vec4<u32>(V);
  let vt = vec4<u32>(t);
  let da = select(vec4<f32>(0.0), exp(h8lo(v) - vec4<f32>(m)) * scale, ca < vV) - select(vec4<f32>(0.0), vec4<f32>(dscale), ca == vt);
  let db = select(vec4<f32>(0.0), exp(h8hi(v) - vec4<f32>(m)) * scale, cb < vV) - select(vec4<f32>(0.0), vec4<f32>(dscale), cb == vt);
  return vec4<u32>(h8s(da), h8s(db));
}
// logit i (< 8) of group v
fn xr_at(v: vec4<u32>, i: u32) -> f32 {
  return f32(bitcast<vec2<f16>>(v[i / 2u])[i % 2u]);
}

@compute @workgroup_size(256)
fn softmax_xent_r8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {
  let n = wid.y * nwg.x + wid.x;
  if (n >= p.N) {
    return;
  }
  let V = p.V;
  let G = p.Vp / 8u;                   // groups a row
  let row = p.off[1] / 4u + n * G;     // the row's first vec4
  if (lid == 0u) {
    tsh = tgt[p.off[2] + n];
  }
  let ti = workgroupUniformLoad(&tsh); // uniform: the branches below hold barriers
  let t = u32(ti);
  let ok = ti >= 0 && t < V;
  let qt = t / 8u;                     // the target's group (where ok)
//#for k in NR
  let q{k} = lid + {k}u * WG;
  var zr{k} = vec4<u32>(0u);
  if (ok && q{k} < G) {
    zr{k} = lg8[row + q{k}];
  }
//#endfor
  if (!ok) { // an ignored position: dlogits 0, loss 0
//#for k in NR
    if (q{k} < G) {
      lg8[row + q{k}] = vec4<u32>(0u);
    }
//#endfor
    if (lid == 0u) {
      losses[p.off[0] + n] = 0.0;
    }
    return;
  }
  var mt = NEG;
//#for k in NR
  mt = max(mt, xr_max(zr{k}, q{k}, V));
//#endfor
  let m = wg_max(mt, lid);
  var st = 0.0;
//#for k in NR
  st += xr_sum(zr{k}, q{k}, V, m);
//#endfor
  let sum = wg_sum(st, lid);
  let dscale = p.dscale;
  let scale = dscale / sum;
//#for k in NR
  if (q{k} == qt) {
    losses[p.off[0] + n] = log(sum) - (xr_at(zr{k}, t % 8u) - m);
  }
  if (q{k} < G) {
    lg8[row + q{k}] = xr_d(zr{k}, q{k}, V, m, scale, dscale, t);
  }
//#endfor
}
