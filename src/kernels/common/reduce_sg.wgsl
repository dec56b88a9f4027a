// Workgroup reductions over WG threads (sum and max) with subgroup operations (the host puts
// `enable subgroups;` first in the module). Each subgroup reduces in registers
// (subgroupAdd / subgroupMax), its first lane writes the result to red[lid / size], and every
// subgroup then reduces those WG / size partials the same way: two barriers instead of the
// log2(WG) + 2 of reduce_wg.wgsl. The subgroup size and lane come from subgroupAdd(1) and
// subgroupExclusiveAdd(1) (every thread is active at a call: callers are uniform), so no
// entry point needs the subgroup builtins. Subgroups are assumed to be consecutive ranges of
// local_invocation_index (as on every Vulkan driver we know of: NVIDIA 32 lanes, lavapipe 8);
// tests/test_webgpu_ops checks every reduction against the CPU on both paths.
var<workgroup> red: array<f32, 256>;

fn wg_sum(v: f32, lid: u32) -> f32 {
  let s = subgroupAdd(v);
  let n = subgroupAdd(1u);
  let lane = subgroupExclusiveAdd(1u);
  workgroupBarrier();
  if (lane == 0u) {
    red[lid / n] = s;
  }
  workgroupBarrier();
  var t = 0.0;
  for (var i = lane; i < WG / n; i = i + n) {
    t = t + red[i];
  }
  return subgroupAdd(t); // the next call's first barrier protects red
}

fn wg_max(v: f32, lid: u32) -> f32 {
  let s = subgroupMax(v);
  let n = subgroupAdd(1u);
  let lane = subgroupExclusiveAdd(1u);
  workgroupBarrier();
  if (lane == 0u) {
    red[lid / n] = s;
  }
  workgroupBarrier();
  var t = -3.4e38;
  for (var i = lane; i < WG / n; i = i + n) {
    t = max(t, red[i]);
  }
  return subgroupMax(t);
}
