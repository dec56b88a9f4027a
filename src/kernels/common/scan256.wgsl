// Workgroup helpers shared by the tokenizer's standalone modules (bpe_encode.wgsl,
// bpe_pretok.wgsl; the host appends this file to their source: tok_webgpu_ctx.c, tz_tg_pipeline()) and
// the backend's modules that call wg_scan (embed.wgsl's radix sort; webgpu_pipe.c, module()).

var<workgroup> wsum: array<u32, 256>;

// Exclusive scan (Hillis-Steele) of the 256 per-thread values of this workgroup; returns this
// thread's prefix. Every thread of a 256-thread workgroup must call it (barriers).
fn wg_scan(lid: u32, v: u32) -> u32 {
  wsum[lid] = v;
  workgroupBarrier();
  for (var off = 1u; off < 256u; off <<= 1u) {
    var x = 0u;
    if (lid >= off) { x = wsum[lid - off]; }
    workgroupBarrier();
    wsum[lid] += x;
    workgroupBarrier();
  }
  return wsum[lid] - v;
}

// Linear block index of a 2-D grid (grids wider than 65,535 workgroups wrap into y).
fn block_id(wid: vec3<u32>, nwg: vec3<u32>) -> u32 { return wid.y * nwg.x + wid.x; }
