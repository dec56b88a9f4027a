// GeLU, tanh form (Hendrycks & Gimpel 2016, eq. for the tanh approximation; GPT-2's), and its
// derivative: the one definition every WGSL kernel that applies it uses (webgpu_pipe.c's
// module() appends this file where a module calls gelu_f or gelu_g: gelu.wgsl, the
// subgroup-matrix matmul's GELU / DGELU epilogues). x is clamped to [-100, 100] inside the tanh
// argument so x³ cannot overflow (exact: tanh is ±1 there anyway).

const GELU_K: f32 = 0.7978845608028654;

// tanh via exp of a non-positive argument (stable; WGSL's tanh may overflow for large |u|).
fn tanh_stable(u: f32) -> f32 {
  let e = exp(-2.0 * abs(u));
  let t = (1.0 - e) / (1.0 + e);
  return select(-t, t, u >= 0.0);
}

// gelu(x) and its derivative gelu'(x)
fn gelu_f(x: f32) -> f32 {
  let xc = clamp(x, -100.0, 100.0);
  let u = GELU_K * (xc + 0.044715 * xc * xc * xc);
  return 0.5 * x * (1.0 + tanh_stable(u));
}
// gelu'(x) = 0.5(1 + tanh u) + 0.5x·sech²(u)·u', u' = √(2/π)(1 + 3·0.044715x²), written with
// s = σ(2u) = 0.5(1 + tanh u) (so sech²u = 4s(1 − s)) as s·(1 + x(1 − s)·2u'): one exp2 and one
// division, about half the operations of the tanh form (it runs in the subgroup-matrix matmul's
// DGELU epilogue, which the matrix units wait on). With z = −2u·log2(e) = x(G1 + G2·x²), exp2
// takes −|z| only (WGSL leaves an overflowing exp2 indeterminate): e = 2^−|z| in (0, 1], r =
// 1 / (1 + e), and s = σ(2u), 1 − s are r and e·r in the order the sign of z says (1 − s without
// cancellation). At u → ±∞, s → 1 or 0 and the result → 1 or 0, as the limits are.
const GELU_G1: f32 = -2.302208198; // −2·√(2/π)·log2(e)
const GELU_G2: f32 = -0.102943240; // GELU_G1 · 0.044715
fn gelu_g(x: f32) -> f32 {
  let xc = clamp(x, -100.0, 100.0);
  let t = xc * xc;
  let z = xc * fma(GELU_G2, t, GELU_G1);
  let e = exp2(-abs(z));
  let r = 1.0 / (1.0 + e);
  let s = select(e * r, r, z <= 0.0);   // σ(2u): z <= 0 is u >= 0
  let oms = select(r, e * r, z <= 0.0); // 1 − σ(2u)
  return s * fma(xc * oms, fma(2.0 * GELU_K * 3.0 * 0.044715, t, 2.0 * GELU_K), 1.0);
}
