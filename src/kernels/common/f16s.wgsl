// f16s(v): f32 -> f16 as IEEE round to nearest even, beyond f16's range ±inf (not saturated:
// an overflowing activation gradient must reach the loss scaler's finiteness check), NaN stays
// NaN. The one definition of the f16 activation store (the preamble kernels' f16 variant, the
// matmul kernels' f16 outputs, the attention's f16 dq / dk / dv, to_f16_inf); the backend
// appends this file to a module whose code calls f16s( (module() in webgpu_pipe.c); the module
// enables f16. Why not plain f16(v): WGSL leaves an out-of-range conversion undefined. Values in
// (65504, 65520) round down to 65504 (the clamp), as IEEE and the host
// (tz_sgmat_f16, src/backend/webgpu/sgmat.c) do; the
// infinities are made at run time (WGSL rejects an overflowing constant expression); the NaN
// test and the NaN come from the bits (lavapipe folded `v != v` to false and stored -inf).
// Source: IEEE 754-2008 binary16; our own.
fn f16s(v: f32) -> f16 {
  if (abs(v) < 65520.0) {
    return f16(clamp(v, -65504.0, 65504.0));
  }
  let m = f16(select(-65504.0, 65504.0, v > 0.0));
  let inf = m * abs(m);
  let b = bitcast<u32>(v);
  let nan = bitcast<vec2<f16>>(0x7e00u | ((b >> 16u) & 0x8000u)).x;
  return select(inf, nan, (b & 0x7fffffffu) > 0x7f800000u);
}
