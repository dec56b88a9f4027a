// dq of the subgroup-matrix flash attention's backward (fa_sg_dkdv.wgsl wrote, per key block kb
// of BC keys and query tile, the partial dq = dS·K of the tile's queries to the scratch):
//   dq[b, t, h, d] = Σ_{kb ≤ t / BC} part[b − u6, h, part_row(kb) + t − kb·BC, d]
// blocks in ascending order (deterministic: no atomics). part: per (sequence of the chunk, query
// head) u5 rows of HD parts (fp32, or f16 with PT = f16, below); key block kb's rows hold queries kb·BC .. Tp−1 from row
// part_row(kb) = Σ_{k < kb} (Tp − k·BC) (causal packing). Source: our own (as
// attention_fa.wgsl's fa_dq_sum, with the padded length Tp).
// Standalone module in the backend's layout (wg_run_ex): binding 0 the uniform block [element
// offsets of dq, scratch (in their elements: 4-byte units for fp32, halves for f16)][slots][u0 T, u1 Tp, u2 n_head, u3 q_stride, u4 parts'
// element offset in the scratch, u5 rows per (sequence, head), u6 the chunk's first sequence,
// u7 its sequences], bindings 1 dq f32 (rows of q_stride floats, head h at h·HD), 2 scratch.
// One element per thread, d fastest; 256 threads per workgroup, the grid folded into x and y.
// Entry point main4 (TEZGAH_WEBGPU_ATTN_SG_DQV4, the default where dq's and the parts' offsets
// are 16-byte aligned and q_stride a multiple of 4): the same sums, four consecutive d per thread
// with 16-byte loads and stores (dq4, scr4: the same bindings as vec4 arrays; an entry point
// uses one view), a quarter of the threads and load instructions; same order, same bits.
// Host prefix: const HD, BC, alias DQT (dq's element type) and fn cvq(f32) -> DQT: f32 and the
// identity, or, with the backend's f16 activations (c->act_f16: dq in the fused f16 dqkv; the
// prefix then starts with `enable f16;`), f16 and a rounding that gives ±inf beyond f16's range
// and keeps NaN, dq's offset then counting f16 elements (main4: 8-byte aligned, vec4<f16>).
// The sums stay fp32; the result is rounded once. alias PT (host prefix): the parts' element
// type, f32, or f16 where the written-out dK/dV wrote them as f16 (webgpu_ops_attn_sg.c sg_dq16,
// TEZGAH_WEBGPU_ATTN_DQ16: scr / scr4 then f16 views of the part area, 2-byte elements, u4 0,
// main4's 8-byte vec4<f16> loads), each converted to f32 exactly before the same fp32 sum.
struct U { oa: vec4<u32>, ob: vec4<u32>, sa: vec4<u32>, sb: vec4<u32>, u: array<vec4<u32>, 4> }
@group(0) @binding(0) var<uniform> p: U;
@group(0) @binding(1) var<storage, read_write> dq: array<DQT>;
@group(0) @binding(2) var<storage, read> scr: array<PT>;
@group(0) @binding(1) var<storage, read_write> dq4: array<vec4<DQT>>;
@group(0) @binding(2) var<storage, read> scr4: array<vec4<PT>>;

fn part_row(kb: u32, Tp: u32) -> u32 {
  return kb * Tp - BC * ((kb * max(kb, 1u) - kb) / 2u); // Σ_{k < kb} (Tp − k·BC)
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = gid.x + gid.y * nw.x * 256u;
  let T = p.u[0].x;
  let Tp = p.u[0].y;
  let nh = p.u[0].z;
  if (i >= p.u[1].w * nh * T * HD) {
    return;
  }
  let d = i % HD;
  let t = (i / HD) % T;
  let bh = i / (HD * T); // (sequence in the chunk, head)
  let h = bh % nh;
  let b = bh / nh + p.u[1].z;
  let base = p.oa.y + p.u[1].x + bh * p.u[1].y * HD + d;
  var acc = 0.0;
  for (var kb = 0u; kb <= t / BC; kb++) {
    acc += f32(scr[base + (part_row(kb, Tp) + t - kb * BC) * HD]);
  }
  dq[p.oa.x + (b * T + t) * p.u[0].w + h * HD + d] = cvq(acc);
}

@compute @workgroup_size(256)
fn main4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = gid.x + gid.y * nw.x * 256u;
  let T = p.u[0].x;
  let Tp = p.u[0].y;
  let nh = p.u[0].z;
  let H4 = HD / 4u;
  if (i >= p.u[1].w * nh * T * H4) {
    return;
  }
  let d4 = i % H4;
  let t = (i / H4) % T;
  let bh = i / (H4 * T);
  let h = bh % nh;
  let b = bh / nh + p.u[1].z;
  let base = (p.oa.y + p.u[1].x + bh * p.u[1].y * HD) / 4u + d4;
  var acc = vec4<f32>(0.0);
  for (var kb = 0u; kb <= t / BC; kb++) {
    acc += vec4<f32>(scr4[base + (part_row(kb, Tp) + t - kb * BC) * H4]);
  }
  dq4[(p.oa.x + (b * T + t) * p.u[0].w + h * HD) / 4u + d4] = vec4<DQT>(cvq(acc.x), cvq(acc.y), cvq(acc.z), cvq(acc.w));
}
