// embed_lookup (forward) and embed_backward (scatter-add with a compare-and-swap float add
// on u32 bits: WGSL has no float atomics). Thread per (row n, channel c).
// u0 N, u1 T, u2 C, u3 V, u4 has_wpe
// Large tables run in pieces of rows [r0, r0 + nr) (each piece one binding below
// maxStorageBufferBindingSize): a pass touches only the rows of tokens in its piece.

// args 0 out, 1 tokens (i32), 2 wte rows r0.., 3 wpe; u5 r0, u6 nr.
// out[n,c] = wte[tok[n],c] (+ wpe[n % T, c]) for the tokens of this piece; an id outside
// [0,V) gives a zero row (every pass writes it).
@compute @workgroup_size(256)
fn embed_lookup(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
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
    let r = u32(id) - pu(5u); // wraps above nr for ids below r0
    if (r >= pu(6u)) {
      return;
    }
    v = ld(2u, r * C + c);
    if (pu(4u) != 0u) {
      v = v + ld(3u, (n % pu(1u)) * C + c);
    }
  }
  st(0u, i, v);
}

// The gradient table being added to (dwte or dwpe) has its own atomic binding; u5 is its
// element offset. One dispatch per table (u4 = 0: dwte rows by token id, 1: dwpe rows by
// position) and per piece of rows [u6, u6 + u7) (the binding holds that piece only).
@group(0) @binding(9) var<storage, read_write> G: array<atomic<u32>>;

// Lock-free float add: retry the compare-and-swap until no other thread got in between.
fn cas_add(idx: u32, val: f32) {
  var old = atomicLoad(&G[idx]);
  loop {
    let r = atomicCompareExchangeWeak(&G[idx], old, bitcast<u32>(bitcast<f32>(old) + val));
    if (r.exchanged) {
      break;
    }
    old = r.old_value;
  }
}

// args 0 dout, 1 tokens. table[row(n), c] += dout[n, c]. Rows with an invalid id are skipped
// (their forward was zeros), and so are zero gradients (no contention for nothing).
@compute @workgroup_size(256)
fn embed_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
  let C = pu(2u);
  let i = lin_wg(wid, nwg) * WG + lid;
  if (i >= pu(0u) * C) {
    return;
  }
  let n = i / C;
  let c = i % C;
  let id = ldi(1u, n);
  if (id < 0 || u32(id) >= pu(3u)) {
    return;
  }
  let g = ld(0u, i);
  if (g == 0.0) {
    return;
  }
  var row = u32(id);
  if (pu(4u) != 0u) {
    row = n % pu(1u);
  }
  row = row - pu(6u); // wraps above u7 for rows below the piece
  if (row >= pu(7u)) {
    return;
  }
  cas_add(pu(5u) + row * C + c, g);
}
