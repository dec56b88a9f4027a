// Token (+ learned position) embedding: embed_lookup (forward) and embed_backward (the
// embed_sort_* passes, embed_dwte and embed_dwpe). Both match the CPU backend's
// tz_cpu_embed_fwd / tz_cpu_embed_bwd (embed_cpu.c); the backward bit for bit in fp32, as it
// adds every table element's gradients in the CPU's order (positions ascending) without
// atomics: deterministic run to run.
// Shapes (fp32, row-major): tokens i32 [N], N = B·T, position n = b·T + t; out / dout [N, C];
// wte / dwte [V, C]; wpe / dwpe [T, C] (rows 0..T-1 of the position table). Ids outside [0, V)
// read a zero row and get no gradient (for wpe either: their forward row was zeros).
// Uniforms: u0 N, u1 T, u2 C, u3 V; the rest per entry point below.
// Large tables run in pieces of rows [r0, r0 + nr) (each piece one binding below
// maxStorageBufferBindingSize): a pass touches only the rows of its piece. Every entry point
// writes only argument 0 (the host's read-only variant then binds the others read-only).

// args 0 out, 1 tokens (i32), 2 wte rows r0.., 3 wpe; u4 has_wpe, u5 r0, u6 nr.
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

// ---- backward ----
// dwpe[t, c] += Σ_b dout[b·T + t, c] over valid ids, b ascending (embed_dwpe: one thread per
// element, no atomics). dwte: the positions are grouped by token id with a stable LSD radix
// sort of the keys (id, or INV for an invalid id: sorted last), 8 bits per pass (two passes
// for V ≤ 65,535, three below 2^24), so each id's positions come out ascending; then, per 256
// columns, the workgroup whose range of sorted indices holds an id's first position starts
// from dwte's row, adds that id's dout rows in that order and stores the row once
// (embed_dwte).
//
// Integer scratch S (u32, its own binding 9; u5 = its element offset, set by the host), in
// words from u5: two key / position sets a = [0, 2N) and b = [2N, 4N) (keys, then positions:
// K[0..N) P[0..N)), a pass's in-block ranks R = [4N, 5N), the digit counts per block
// H = [5N, 5N + 256·nblk) block-major (H[blk·256 + d]), nblk = ceil(N / 256) blocks of 256
// positions.
// Sort passes (args 0 tokens; u4 nblk, u6 shift (8·pass), u7 first pass (keys from the
// tokens, positions n), u8 / u9 the in / out set's base, u10 INV = 2^bits − 1 ≥ V):
//   embed_sort_count   per block: each position's rank among the block's earlier positions
//                      with its digit (R), and the block's count of each digit (H)
//   embed_sort_scan    one workgroup: H becomes exclusive offsets in (digit, block) order
//   embed_sort_scatter out[H[blk, d] + R[n]] = (key, position): stable
@group(0) @binding(9) var<storage, read_write> S: array<u32>;

const NO_DIGIT: u32 = 0xffffffffu;
var<workgroup> wd: array<u32, 256>;

// Key of the pass's n-th input: the token id (first pass), or the previous pass's output.
fn sort_key(n: u32) -> u32 {
  if (pu(7u) != 0u) {
    let id = ldi(0u, n);
    if (id < 0 || u32(id) >= pu(3u)) {
      return pu(10u);
    }
    return u32(id);
  }
  return S[pu(5u) + pu(8u) + n];
}
fn sort_pos(n: u32) -> u32 {
  if (pu(7u) != 0u) {
    return n;
  }
  return S[pu(5u) + pu(8u) + pu(0u) + n];
}

@compute @workgroup_size(256)
fn embed_sort_count(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_index) lid: u32) {
  let N = pu(0u);
  let nblk = pu(4u);
  let blk = lin_wg(wid, nwg);
  if (blk >= nblk) {
    return;
  }
  let n = blk * WG + lid;
  var d = NO_DIGIT;
  if (n < N) {
    d = (sort_key(n) >> pu(6u)) & 255u;
  }
  wd[lid] = d;
  workgroupBarrier();
  // rank: earlier positions of this block with digit d; cnt: positions with digit lid
  var rank = 0u;
  var cnt = 0u;
  for (var j = 0u; j < WG; j++) {
    let v = wd[j];
    if (v == d && j < lid) {
      rank++;
    }
    if (v == lid) {
      cnt++;
    }
  }
  let s0 = pu(5u);
  if (n < N) {
    S[s0 + 4u * N + n] = rank;
  }
  S[s0 + 5u * N + blk * WG + lid] = cnt;
}

// One workgroup of 256: thread d sums digit d's counts over the blocks, a workgroup scan
// (common/scan256.wgsl) gives the digits' starts, then thread d writes its blocks' starts.
// Reads of one block's 256 counts are coalesced; eight blocks' loads are issued at a time.
@compute @workgroup_size(256)
fn embed_sort_scan(@builtin(local_invocation_index) lid: u32) {
  let nblk = pu(4u);
  // An automatic layout lists only the bindings an entry point uses, and the host binds all of
  // the preamble's: this never-taken store (the host's nblk ≥ 1) keeps them in the layout.
  if (nblk == 0u) {
    st(0u, 0u, 0.0);
  }
  let h = pu(5u) + 5u * pu(0u) + lid;
  var sum = 0u;
  var b = 0u;
  for (; b + 8u <= nblk; b += 8u) {
    let v0 = S[h + b * WG];
    let v1 = S[h + (b + 1u) * WG];
    let v2 = S[h + (b + 2u) * WG];
    let v3 = S[h + (b + 3u) * WG];
    let v4 = S[h + (b + 4u) * WG];
    let v5 = S[h + (b + 5u) * WG];
    let v6 = S[h + (b + 6u) * WG];
    let v7 = S[h + (b + 7u) * WG];
    sum += v0 + v1 + v2 + v3 + v4 + v5 + v6 + v7;
  }
  for (; b < nblk; b++) {
    sum += S[h + b * WG];
  }
  var run = wg_scan(lid, sum);
  b = 0u;
  for (; b + 8u <= nblk; b += 8u) {
    let v0 = S[h + b * WG];
    let v1 = S[h + (b + 1u) * WG];
    let v2 = S[h + (b + 2u) * WG];
    let v3 = S[h + (b + 3u) * WG];
    let v4 = S[h + (b + 4u) * WG];
    let v5 = S[h + (b + 5u) * WG];
    let v6 = S[h + (b + 6u) * WG];
    let v7 = S[h + (b + 7u) * WG];
    S[h + b * WG] = run;
    S[h + (b + 1u) * WG] = run + v0;
    S[h + (b + 2u) * WG] = run + v0 + v1;
    S[h + (b + 3u) * WG] = run + v0 + v1 + v2;
    S[h + (b + 4u) * WG] = run + v0 + v1 + v2 + v3;
    S[h + (b + 5u) * WG] = run + v0 + v1 + v2 + v3 + v4;
    S[h + (b + 6u) * WG] = run + v0 + v1 + v2 + v3 + v4 + v5;
    S[h + (b + 7u) * WG] = run + v0 + v1 + v2 + v3 + v4 + v5 + v6;
    run += v0 + v1 + v2 + v3 + v4 + v5 + v6 + v7;
  }
  for (; b < nblk; b++) {
    let v = S[h + b * WG];
    S[h + b * WG] = run;
    run += v;
  }
}

@compute @workgroup_size(256)
fn embed_sort_scatter(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                      @builtin(local_invocation_index) lid: u32) {
  let N = pu(0u);
  let nblk = pu(4u);
  let blk = lin_wg(wid, nwg);
  let n = blk * WG + lid;
  if (blk >= nblk || n >= N) {
    return;
  }
  let s0 = pu(5u);
  let key = sort_key(n);
  let d = (key >> pu(6u)) & 255u;
  let dst = S[s0 + 5u * N + blk * WG + d] + S[s0 + 4u * N + n];
  let o = s0 + pu(9u);
  S[o + dst] = key;
  S[o + N + dst] = sort_pos(n);
}

// args 0 dwte rows r0..r0+nr (this piece), 1 dout; u4 column chunks of 256 (nch), u6 r0,
// u7 nr, u8 the sorted set's base in S, u9 sorted indices per workgroup (IPW). Workgroup g =
// (range, chunk) = (g / nch, g % nch) takes the runs of equal keys that start in its range
// [range·IPW, +IPW) of sorted indices (a run may reach past it) and whose id lies in the
// piece: per run, dwte's row plus the run's dout rows in sorted (= position) order, eight
// loads in flight, stored once.
@compute @workgroup_size(256)
fn embed_dwte(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
  let N = pu(0u);
  let C = pu(2u);
  let nch = pu(4u);
  let g = lin_wg(wid, nwg);
  let p0 = (g / nch) * pu(9u);
  let c = (g % nch) * WG + lid;
  if (p0 >= N || c >= C) {
    return;
  }
  let p1 = min(p0 + pu(9u), N);
  let ks = pu(5u) + pu(8u);
  let ps = ks + N;
  for (var p = p0; p < p1; p++) {
    let key = S[ks + p];
    if (key >= pu(3u) || key >= pu(6u) + pu(7u)) {
      break; // sorted: invalid ids (INV ≥ V) and the rows past this piece come last
    }
    if (key < pu(6u) || (p > 0u && S[ks + p - 1u] == key)) {
      continue; // below the piece, or not the first index of its run
    }
    // the run's end e: keys are sorted, so gallop (p + 1, 2, 4, ...) to an index past the run,
    // then bisect (a run of L indices costs about 2·log2 L loads, one for L = 1)
    var lo = p + 1u; // [p, lo) holds key
    var hi = lo;
    var step = 1u;
    loop {
      if (hi >= N) {
        hi = N;
        break;
      }
      if (S[ks + hi] != key) {
        break; // hi is past the run
      }
      lo = hi + 1u;
      step = step * 2u;
      hi = p + step;
    }
    while (lo < hi) {
      let mid = (lo + hi) / 2u;
      if (S[ks + mid] == key) {
        lo = mid + 1u;
      } else {
        hi = mid;
      }
    }
    let e = lo;
    let at = (key - pu(6u)) * C + c;
    var acc = ld(0u, at);
    var q = p;
    for (; q + 8u <= e; q += 8u) {
      let x0 = ld(1u, S[ps + q] * C + c);
      let x1 = ld(1u, S[ps + q + 1u] * C + c);
      let x2 = ld(1u, S[ps + q + 2u] * C + c);
      let x3 = ld(1u, S[ps + q + 3u] * C + c);
      let x4 = ld(1u, S[ps + q + 4u] * C + c);
      let x5 = ld(1u, S[ps + q + 5u] * C + c);
      let x6 = ld(1u, S[ps + q + 6u] * C + c);
      let x7 = ld(1u, S[ps + q + 7u] * C + c);
      acc = acc + x0;
      acc = acc + x1;
      acc = acc + x2;
      acc = acc + x3;
      acc = acc + x4;
      acc = acc + x5;
      acc = acc + x6;
      acc = acc + x7;
    }
    if (q + 4u <= e) {
      let x0 = ld(1u, S[ps + q] * C + c);
      let x1 = ld(1u, S[ps + q + 1u] * C + c);
      let x2 = ld(1u, S[ps + q + 2u] * C + c);
      let x3 = ld(1u, S[ps + q + 3u] * C + c);
      acc = acc + x0;
      acc = acc + x1;
      acc = acc + x2;
      acc = acc + x3;
      q += 4u;
    }
    for (; q < e; q++) {
      acc = acc + ld(1u, S[ps + q] * C + c);
    }
    st(0u, at, acc);
    p = e - 1u; // the run's other indices are not starts
  }
}

// args 0 dwpe [T, C], 1 dout, 2 tokens; u4 B. One thread per dwpe element (t, c): starts from
// dwpe and adds dout[b·T + t, c] for b ascending, skipping invalid ids (the loads of four rows
// are issued before their adds).
@compute @workgroup_size(256)
fn embed_dwpe(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
  let T = pu(1u);
  let C = pu(2u);
  let V = pu(3u);
  let B = pu(4u);
  let i = lin_wg(wid, nwg) * WG + lid;
  if (i >= T * C) {
    return;
  }
  let t = i / C;
  let c = i % C;
  var acc = ld(0u, i);
  var b = 0u;
  for (; b + 4u <= B; b += 4u) {
    let n0 = b * T + t;
    let n1 = n0 + T;
    let n2 = n1 + T;
    let n3 = n2 + T;
    let id0 = ldi(2u, n0);
    let id1 = ldi(2u, n1);
    let id2 = ldi(2u, n2);
    let id3 = ldi(2u, n3);
    let x0 = ld(1u, n0 * C + c);
    let x1 = ld(1u, n1 * C + c);
    let x2 = ld(1u, n2 * C + c);
    let x3 = ld(1u, n3 * C + c);
    if (id0 >= 0 && u32(id0) < V) {
      acc = acc + x0;
    }
    if (id1 >= 0 && u32(id1) < V) {
      acc = acc + x1;
    }
    if (id2 >= 0 && u32(id2) < V) {
      acc = acc + x2;
    }
    if (id3 >= 0 && u32(id3) < V) {
      acc = acc + x3;
    }
  }
  for (; b < B; b++) {
    let n = b * T + t;
    let id = ldi(2u, n);
    if (id >= 0 && u32(id) < V) {
      acc = acc + ld(1u, n * C + c);
    }
  }
  st(0u, i, acc);
}
