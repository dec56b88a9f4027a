// fill16: dst[i] = w (four u32 words: 16 bytes) for i < u0: the aligned middle of wg_fill
// (src/backend/webgpu/webgpu_mem.c), whose scalar fill (elementwise.wgsl `fill`, one 4- or
// 2-byte store per thread) writes the ragged ends. Source: our own.
// Standalone module in the backend's layout (wg_run_ex): binding 0 the uniform block [element
// offsets (4-byte units) of dst][slots][u0 n (16-byte vectors), u1 the value's fp32 bits],
// binding 1 dst (a 16-byte aligned byte range of any tensor: the host checks; viewed as
// vec4<u32>). One vector per thread, 256 threads per workgroup, the grid folded into x and y.
// Host prefix: fn word(b: u32) -> u32, the 4-byte pattern of the value with fp32 bits b: b
// itself (fp32 tensors), or (f16 activations, c->act_f16; the prefix then starts with `enable
// f16;`) two copies of the value through f16s: the f16 store of the preamble's f16 variant, so the bytes
// equal the scalar fill's (±inf beyond f16's range, NaN kept).
// Why: the scalar fill's 4-byte stores reached ~1.5 TB/s of the H200's ~4 on the 497 MB fp32
// gradient buffer that training zeroes every step (0.35 ms per step, GPT-2 124M,
// /work/notes/prof_gpt2.log).
struct U { oa: vec4<u32>, ob: vec4<u32>, sa: vec4<u32>, sb: vec4<u32>, u: array<vec4<u32>, 4> }
@group(0) @binding(0) var<uniform> p: U;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = gid.x + gid.y * nw.x * 256u;
  if (i >= p.u[0].x) {
    return;
  }
  dst[p.oa.x / 4u + i] = vec4<u32>(word(p.u[0].y));
}
