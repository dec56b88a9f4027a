// Eight f16 in a 16-byte vec4<u32> (two per u32, the lower column in the low half), as the
// kernels with 16-byte f16 accesses hold them (swiglu_v8.wgsl): the
// backend appends this file to a module whose code calls h8lo(, h8hi( or h8s( (module() in
// webgpu_pipe.c), with common/f16s.wgsl; the module enables f16. Source: our own.

// halves 0..3 and 4..7 in f32 (exact)
fn h8lo(v: vec4<u32>) -> vec4<f32> {
  return vec4<f32>(bitcast<vec4<f16>>(v.xy));
}
fn h8hi(v: vec4<u32>) -> vec4<f32> {
  return vec4<f32>(bitcast<vec4<f16>>(v.zw));
}
// four f32 stored as four f16 in two u32 (f16s: ±inf beyond f16's range, NaN kept); a group of
// eight is vec4<u32>(h8s(columns 0..3), h8s(columns 4..7))
fn h8s(x: vec4<f32>) -> vec2<u32> {
  return bitcast<vec2<u32>>(vec4<f16>(f16s(x.x), f16s(x.y), f16s(x.z), f16s(x.w)));
}
