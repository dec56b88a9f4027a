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
fn gelu_g(x: f32) -> f32 {
  let xc = clamp(x, -100.0, 100.0);
  let u = GELU_K * (xc + 0.044715 * xc * xc * xc);
  let th = tanh_stable(u);
  let sech2 = 1.0 - th * th;
  return 0.5 * (1.0 + th) + 0.5 * xc * sech2 * GELU_K * (1.0 + 3.0 * 0.044715 * xc * xc);
}
