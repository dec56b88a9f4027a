// SwiGLU's element math (Shazeer 2020; silu(g)·u with the seed's guards), the one definition
// every WGSL kernel that applies it uses: webgpu_pipe.c's module() appends this file where a
// module calls sigmoid_stable, nan_to_zero or swiglu_dgu (swiglu.wgsl, matmul.wgsl's SWB,
// matmul_sgmm.wgsl's DSWIGLU epilogue).

// Branch on the sign so exp() only sees x <= 0: no overflow for any finite x (seed's trick).
fn sigmoid_stable(x: f32) -> f32 {
  if (x >= 0.0) {
    return 1.0 / (1.0 + exp(-x));
  }
  let e = exp(x);
  return e / (1.0 + e);
}

fn nan_to_zero(x: f32) -> f32 {
  // x != x is the NaN test; compilers may fold it under fast-math, so also test the bits.
  let b = bitcast<u32>(x) & 0x7fffffffu;
  return select(x, 0.0, b > 0x7f800000u);
}

// SwiGLU's backward for one (gate g, up u) pair given d = dL/d(silu(g)·u): (dgate, dup) =
// (d·u·σ(g)(1 + g(1 − σ(g))), d·silu(g)), a NaN product made 0 (the seed's guard)
fn swiglu_dgu(d: f32, g: f32, u: f32) -> vec2<f32> {
  let s = sigmoid_stable(g);
  return vec2<f32>(nan_to_zero(d * u * s * (1.0 + g * (1.0 - s))), nan_to_zero(d * g * s));
}
