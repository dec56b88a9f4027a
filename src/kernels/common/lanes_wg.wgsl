// lanes_max4 / lanes_sum4 through workgroup memory only (adapters without Subgroups, and
// TEZGAH_WEBGPU_SUBGROUPS=0): the max / sum of a vec4 over the TX consecutive lanes of
// local_invocation_index that share four rows. lanes_sg.wgsl is the subgroup version.
// Called from uniform control flow.
fn lanes_max4(v: vec4<f32>, lid: u32) -> vec4<f32> {
  return lanes_combine(v, lid, 1u, true);
}
fn lanes_sum4(v: vec4<f32>, lid: u32) -> vec4<f32> {
  return lanes_combine(v, lid, 1u, false);
}
