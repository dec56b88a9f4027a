// The f16 forward weight mirror (WebGPU backend, adapters with ShaderF16): H holds an f16 copy
// of the flat fp32 parameter buffer, element for element (H[i] = f16(params[i])). The fp32
// buffer stays the master copy: backward and the optimizer read and write it; the forward's
// weight reads (embed_lookup_w16 here, matmul_fast's b operand of matmul_t) read H.
// The host prefixes "enable f16;" and binds the whole mirror at binding 9 (run_ex's extra
// binding, whose element offset it writes to u5: always 0 here, so u5 is otherwise unused).
// Values are clamped to the f16 range (±65504) before the conversion.
@group(0) @binding(9) var<storage, read_write> H: array<f16>;

fn to_f16(x: f32) -> f16 {
  return f16(clamp(x, -65504.0, 65504.0));
}

// Refresh the mirror from the master (after an upload or copy into the parameters).
// arg 0 params; u0 n, u1 element index of params in the mirror.
@compute @workgroup_size(256)
fn cast_w16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
  let i = lin_wg(wid, nwg) * WG + lid;
  if (i >= pu(0u)) {
    return;
  }
  H[pu(1u) + i] = to_f16(ld(0u, i));
}

// Multi-tensor AdamW (adamw.wgsl) that also writes the f16 mirror of every updated weight in
// the same pass. args 0 params, 1 grads, 2 m, 3 v, 4 ranges; u0 lr, u1 b1, u2 b2, u3 eps,
// u4 wd, u5 (binding offset), u6 1 − b1^t, u7 1 − b2^t, u8 grad_scale, u9 element index of
// params in the mirror.
@compute @workgroup_size(256)
fn adamw_w16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
  let r = wid.y;
  let off = bitcast<u32>(ld(4u, 3u * r));
  let n = bitcast<u32>(ld(4u, 3u * r + 1u));
  let wd = pf(4u) * ld(4u, 3u * r + 2u);
  let lr = pf(0u);
  let b1 = pf(1u);
  let b2 = pf(2u);
  let eps = pf(3u);
  let gs = pf(8u);
  let c1 = pf(6u);
  let c2 = pf(7u);
  let h0 = pu(9u);
  for (var j = wid.x * WG + lid; j < n; j = j + nwg.x * WG) {
    let i = off + j;
    H[h0 + i] = to_f16(adamw_elem(i, lr, b1, b2, eps, wd, gs, c1, c2));
  }
}

// embed_lookup reading f16 weights: out[n,c] = wte[tok[n],c] (+ wpe[n % T, c]), summed in
// fp32. args 0 out, 1 tokens (i32); u0 N, u1 T, u2 C, u3 V, u4 has_wpe, u5 (binding offset),
// u6 / u7 element index of wte / wpe in the mirror.
@compute @workgroup_size(256)
fn embed_lookup_w16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_index) lid: u32) {
  let C = pu(2u);
  let i = lin_wg(wid, nwg) * WG + lid;
  if (i >= pu(0u) * C) {
    return;
  }
  let n = i / C;
  let c = i % C;
  let id = ldi(1u, n);
  var v = 0.0;
  if (id >= 0 && u32(id) < pu(3u)) {
    v = f32(H[pu(6u) + u32(id) * C + c]);
    if (pu(4u) != 0u) {
      v = v + f32(H[pu(7u) + (n % pu(1u)) * C + c]);
    }
  }
  st(0u, i, v);
}
