// lanes_max4 / lanes_sum4 with subgroup operations (the host puts `enable subgroups;` first
// in the module and `const SGW: u32` = the adapter's fixed subgroup size in the prefix, 1 when
// it varies): the max / sum of a vec4 (four rows' values) over the TX consecutive lanes of
// local_invocation_index that share those rows (TX a power of two). Shuffles (xor 1, 2, 4,
// ... below min(TX, SGW)) reduce inside a subgroup; where the subgroup is narrower than TX
// (lavapipe: 8 lanes, TX 16) lanes_combine (the kernel file's workgroup-memory stage) joins the
// TX / SGW partials. Subgroups are assumed to be consecutive ranges of local_invocation_index
// (as reduce_sg.wgsl). Called from uniform control flow. lanes_wg.wgsl: no subgroups.
fn lanes_max4(v: vec4<f32>, lid: u32) -> vec4<f32> {
  var x = v;
  if (TX > 1u && SGW > 1u) {
    x = max(x, subgroupShuffleXor(x, 1u));
  }
  if (TX > 2u && SGW > 2u) {
    x = max(x, subgroupShuffleXor(x, 2u));
  }
  if (TX > 4u && SGW > 4u) {
    x = max(x, subgroupShuffleXor(x, 4u));
  }
  if (TX > 8u && SGW > 8u) {
    x = max(x, subgroupShuffleXor(x, 8u));
  }
  if (TX > 16u && SGW > 16u) {
    x = max(x, subgroupShuffleXor(x, 16u));
  }
  if (SGW < TX) {
    x = lanes_combine(x, lid, SGW, true);
  }
  return x;
}
fn lanes_sum4(v: vec4<f32>, lid: u32) -> vec4<f32> {
  var x = v;
  if (TX > 1u && SGW > 1u) {
    x = x + subgroupShuffleXor(x, 1u);
  }
  if (TX > 2u && SGW > 2u) {
    x = x + subgroupShuffleXor(x, 2u);
  }
  if (TX > 4u && SGW > 4u) {
    x = x + subgroupShuffleXor(x, 4u);
  }
  if (TX > 8u && SGW > 8u) {
    x = x + subgroupShuffleXor(x, 8u);
  }
  if (TX > 16u && SGW > 16u) {
    x = x + subgroupShuffleXor(x, 16u);
  }
  if (SGW < TX) {
    x = lanes_combine(x, lid, SGW, false);
  }
  return x;
}
