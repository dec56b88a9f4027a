// Workgroup reductions over WG threads (sum and max) through shared memory only: the path for
// adapters without Subgroups (and TEZGAH_WEBGPU_SUBGROUPS=0). Appended to the preamble by
// the host; reduce_sg.wgsl defines the same two functions with subgroup operations.
var<workgroup> red: array<f32, 256>;

fn wg_sum(v: f32, lid: u32) -> f32 {
  workgroupBarrier();
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (lid < s) {
      red[lid] = red[lid] + red[lid + s];
    }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

fn wg_max(v: f32, lid: u32) -> f32 {
  workgroupBarrier();
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (lid < s) {
      red[lid] = max(red[lid], red[lid + s]);
    }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}
