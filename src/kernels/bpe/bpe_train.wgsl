// Byte-level BPE training on the GPU (host: src/tokenizer/tok_webgpu.c). Same merges as the CPU
// trainer (src/tokenizer/tok_train.c): at each step the pair with the largest count, ties to the
// smallest (left id, right id); a pair whose bytes already are a token is banned for good.
//
// Data (ids < 65536, so a pair is one u32 key = left << 16 | right; 0xffffffff = empty):
//   sym    the unique words' symbols, word w at [words[4w], +len); rewritten in place
//   words  per word: offset, current length, count (multiplicity), unused
//   act    two halves of nwords: the active words (length >= 2); st[9] picks the current half
//   ptab   pair hash table, 3 u32 per slot: key, count (two's complement deltas), banned
//   blk    per block of 256 slots: best count, best key, dirty flag
//   part   select_a's per-workgroup best (count, key)
//   st     state: 0 next id, 1 merges, 2 done (1 finished, 2 arena full), 3..5 current a, b,
//          new id, 6 current merge valid, 7 active words, 8 compaction count, 9 parity,
//          10 arena used, 11 bans, 12 iterations
//   voc    token table: len, off, hash, hash power ([4 * id + 0..3]), the vocab hash table
//          (u.vh_off, u.vh_mask + 1 ids) and the byte arena (u.ar_off, one byte per u32)
//   merges keys of the merges in order
// One iteration = refresh, select_a, select_b, apply (each a no-op once done); many iterations
// per submission; compact + compact_fin between submissions drop words of length 1.
struct U {
  pmask: u32,      // pair table slots - 1
  nblk: u32,       // blocks of 256 slots
  nwords: u32,     // words (size of one act half)
  last_id: u32,    // vocab_size - 1: merges stop when the next id reaches it
  vh_off: u32,
  vh_mask: u32,
  ar_off: u32,
  ar_cap: u32,
}
@group(0) @binding(0) var<uniform> u: U;
@group(0) @binding(1) var<storage, read_write> sym: array<u32>;
@group(0) @binding(2) var<storage, read_write> words: array<u32>;
@group(0) @binding(3) var<storage, read_write> act: array<u32>;
@group(0) @binding(4) var<storage, read_write> ptab: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> blk: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> part: array<u32>;
@group(0) @binding(7) var<storage, read_write> st: array<atomic<u32>>;
@group(0) @binding(8) var<storage, read_write> voc: array<u32>;
@group(0) @binding(9) var<storage, read_write> merges: array<u32>;

const EMPTY: u32 = 0xffffffffu;
const HP: u32 = 0x01000193u; // hash multiplier (byte strings: h = h * HP + byte + 1)

// Every entry point references every binding so that all share one auto layout.
fn touch() {
  _ = u;
  _ = &sym;
  _ = &words;
  _ = &act;
  _ = &ptab;
  _ = &blk;
  _ = &part;
  _ = &st;
  _ = &voc;
  _ = &merges;
}

fn hmix(x: u32) -> u32 {
  var h = x * 0x9e3779b1u;
  h = h ^ (h >> 15u);
  h = h * 0x85ebca77u;
  return h ^ (h >> 13u);
}

// Slot of key in the pair table, inserting it when absent.
fn pslot(key: u32) -> u32 {
  var s = hmix(key) & u.pmask;
  for (var probe = 0u; probe <= u.pmask; probe++) {
    let k = atomicLoad(&ptab[3u * s]);
    if (k == key) { return s; }
    if (k == EMPTY) {
      let r = atomicCompareExchangeWeak(&ptab[3u * s], EMPTY, key);
      if (r.exchanged || r.old_value == key) { return s; }
      if (r.old_value == EMPTY) { probe--; continue; } // spurious failure: retry this slot
    }
    s = (s + 1u) & u.pmask;
  }
  atomicStore(&st[2], 3u); // table full (cannot happen: sized for the worst case)
  return 0u;
}

fn padd(x: u32, y: u32, delta: u32) {
  let s = pslot((x << 16u) | y);
  atomicAdd(&ptab[3u * s + 1u], delta);
  atomicStore(&blk[3u * (s >> 8u) + 2u], 1u);
}

fn word_index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
  return (wid.y * nwg.x + wid.x) * 256u + lid;
}

// Initial pair counts of the active words.
@compute @workgroup_size(256)
fn count_pairs(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
  touch();
  let t = word_index(wid, nwg, lid);
  if (t >= atomicLoad(&st[7])) { return; }
  let w = act[atomicLoad(&st[9]) * u.nwords + t];
  let base = words[4u * w];
  let len = words[4u * w + 1u];
  let c = words[4u * w + 2u];
  for (var i = 0u; i + 1u < len; i++) { padd(sym[base + i], sym[base + i + 1u], c); }
}

fn better(c1: u32, k1: u32, c2: u32, k2: u32) -> bool {
  return c1 > c2 || (c1 == c2 && c1 != 0u && k1 < k2);
}

var<workgroup> rc: array<u32, 256>;
var<workgroup> rk: array<u32, 256>;

fn wg_reduce(lid: u32, c: u32, k: u32) {
  rc[lid] = c;
  rk[lid] = k;
  workgroupBarrier();
  for (var off = 128u; off > 0u; off >>= 1u) {
    if (lid < off && better(rc[lid + off], rk[lid + off], rc[lid], rk[lid])) {
      rc[lid] = rc[lid + off];
      rk[lid] = rk[lid + off];
    }
    workgroupBarrier();
  }
}

// Recompute the best live pair of every dirty block: one thread per block scans its 256 slots
// (the default; `refresh` below is the workgroup-per-block variant).
@compute @workgroup_size(256)
fn refresh_serial(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  touch();
  if (atomicLoad(&st[2]) != 0u) { return; }
  let b = gid.y * nwg.x * 256u + gid.x;
  if (b >= u.nblk) { return; }
  if (atomicLoad(&blk[3u * b + 2u]) == 0u) { return; }
  atomicStore(&blk[3u * b + 2u], 0u);
  var bc = 0u;
  var bk = EMPTY;
  for (var s = b * 256u; s < b * 256u + 256u; s++) {
    let k = atomicLoad(&ptab[3u * s]);
    if (k == EMPTY) { continue; }
    let c = i32(atomicLoad(&ptab[3u * s + 1u]));
    if (c <= 0 || atomicLoad(&ptab[3u * s + 2u]) != 0u) { continue; }
    if (better(u32(c), k, bc, bk)) { bc = u32(c); bk = k; }
  }
  atomicStore(&blk[3u * b], bc);
  atomicStore(&blk[3u * b + 1u], bk);
}

var<workgroup> dirty_w: u32;

// The same with one workgroup per block of 256 slots, one slot per thread and a workgroup max
// (TEZGAH_TOK_GPU_REFRESH=workgroup). Measured on the H200 (docs/PERF.md): no faster than the
// serial scan (the merge loop's time is elsewhere); on lavapipe ~8x slower.
@compute @workgroup_size(256)
fn refresh(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
  touch();
  let b = wid.y * nwg.x + wid.x;
  if (lid == 0u) {
    var d = 0u;
    if (b < u.nblk && atomicLoad(&st[2]) == 0u && atomicLoad(&blk[3u * b + 2u]) != 0u) {
      d = 1u;
      atomicStore(&blk[3u * b + 2u], 0u);
    }
    dirty_w = d;
  }
  if (workgroupUniformLoad(&dirty_w) == 0u) { return; }
  let s = b * 256u + lid;
  var bc = 0u;
  var bk = EMPTY;
  let k = atomicLoad(&ptab[3u * s]);
  if (k != EMPTY) {
    let c = i32(atomicLoad(&ptab[3u * s + 1u]));
    if (c > 0 && atomicLoad(&ptab[3u * s + 2u]) == 0u) {
      bc = u32(c);
      bk = k;
    }
  }
  wg_reduce(lid, bc, bk);
  if (lid == 0u) {
    atomicStore(&blk[3u * b], rc[0]);
    atomicStore(&blk[3u * b + 1u], rk[0]);
  }
}

// up to 256 workgroups (the rest of part stays 0): each reduces a strided share of the block bests into part[2 wg].
@compute @workgroup_size(256)
fn select_a(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
  touch(); // (no early exit when done: the reduction's barriers need uniform control flow)
  var bc = 0u;
  var bk = EMPTY;
  for (var b = wid.x * 256u + lid; b < u.nblk; b += nwg.x * 256u) {
    let c = atomicLoad(&blk[3u * b]);
    let k = atomicLoad(&blk[3u * b + 1u]);
    if (better(c, k, bc, bk)) { bc = c; bk = k; }
  }
  wg_reduce(lid, bc, bk);
  if (lid == 0u) {
    part[2u * wid.x] = rc[0];
    part[2u * wid.x + 1u] = rk[0];
  }
}

fn tbyte(id: u32, j: u32) -> u32 { return voc[u.ar_off + voc[4u * id + 1u] + j]; }

// The winner: ban it (its bytes already are a token) or make it the next merge.
@compute @workgroup_size(256)
fn select_b(@builtin(local_invocation_index) lid: u32) {
  touch();
  wg_reduce(lid, part[2u * lid], part[2u * lid + 1u]);
  if (lid != 0u || atomicLoad(&st[2]) != 0u) { return; }
  atomicAdd(&st[12], 1u);
  atomicStore(&st[6], 0u);
  let next = atomicLoad(&st[0]);
  if (next >= u.last_id || rc[0] == 0u) {
    atomicStore(&st[2], 1u);
    return;
  }
  let key = rk[0];
  let a = key >> 16u;
  let b = key & 0xffffu;
  let la = voc[4u * a];
  let lb = voc[4u * b];
  let len = la + lb;
  let h = voc[4u * a + 2u] * voc[4u * b + 3u] + voc[4u * b + 2u];
  // already a token? (hash, length, then every byte)
  var s = hmix(h) & u.vh_mask;
  loop {
    let id = voc[u.vh_off + s];
    if (id == EMPTY) { break; }
    if (voc[4u * id + 2u] == h && voc[4u * id] == len) {
      var same = true;
      for (var j = 0u; j < len && same; j++) {
        var want: u32;
        if (j < la) { want = tbyte(a, j); } else { want = tbyte(b, j - la); }
        same = tbyte(id, j) == want;
      }
      if (same) {
        var ps = hmix(key) & u.pmask;
        loop {
          if (atomicLoad(&ptab[3u * ps]) == key) { break; }
          ps = (ps + 1u) & u.pmask;
        }
        atomicStore(&ptab[3u * ps + 2u], 1u);
        atomicStore(&blk[3u * (ps >> 8u) + 2u], 1u);
        atomicAdd(&st[11], 1u);
        return;
      }
    }
    s = (s + 1u) & u.vh_mask;
  }
  let used = atomicLoad(&st[10]);
  if (used + len > u.ar_cap) {
    atomicStore(&st[2], 2u);
    return;
  }
  for (var j = 0u; j < la; j++) { voc[u.ar_off + used + j] = tbyte(a, j); }
  for (var j = 0u; j < lb; j++) { voc[u.ar_off + used + la + j] = tbyte(b, j); }
  atomicStore(&st[10], used + len);
  voc[4u * next] = len;
  voc[4u * next + 1u] = used;
  voc[4u * next + 2u] = h;
  voc[4u * next + 3u] = voc[4u * a + 3u] * voc[4u * b + 3u];
  voc[u.vh_off + s] = next; // s: the empty slot the probe ended on
  let m = atomicLoad(&st[1]);
  merges[m] = key;
  atomicStore(&st[1], m + 1u);
  atomicStore(&st[0], next + 1u);
  atomicStore(&st[3], a);
  atomicStore(&st[4], b);
  atomicStore(&st[5], next);
  atomicStore(&st[6], 1u);
}

// Apply the current merge to every active word (left to right, non-overlapping) with the CPU
// trainer's count deltas.
@compute @workgroup_size(256)
fn apply(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) lid: u32) {
  touch();
  if (atomicLoad(&st[6]) == 0u) { return; }
  let t = word_index(wid, nwg, lid);
  if (t >= atomicLoad(&st[7])) { return; }
  let w = act[atomicLoad(&st[9]) * u.nwords + t];
  let base = words[4u * w];
  let len = words[4u * w + 1u];
  let a = atomicLoad(&st[3]);
  let b = atomicLoad(&st[4]);
  let nid = atomicLoad(&st[5]);
  var i = 0u;
  loop {
    if (i + 1u >= len) { return; }
    if (sym[base + i] == a && sym[base + i + 1u] == b) { break; }
    i++;
  }
  let c = words[4u * w + 2u];
  let neg = 0u - c;
  var o = i;
  while (i < len) {
    if (i + 1u < len && sym[base + i] == a && sym[base + i + 1u] == b) {
      if (o > 0u) {
        let l = sym[base + o - 1u];
        padd(l, a, neg);
        padd(l, nid, c);
      }
      padd(a, b, neg);
      if (i + 2u < len) {
        let r = sym[base + i + 2u];
        padd(b, r, neg);
        padd(nid, r, c);
      }
      sym[base + o] = nid;
      o++;
      i += 2u;
    } else {
      sym[base + o] = sym[base + i];
      o++;
      i++;
    }
  }
  words[4u * w + 1u] = o;
}

// Keep the words that can still hold a pair (length >= 2) in the other half of act.
@compute @workgroup_size(256)
fn compact(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
  touch();
  let t = word_index(wid, nwg, lid);
  if (t >= atomicLoad(&st[7])) { return; }
  let par = atomicLoad(&st[9]);
  let w = act[par * u.nwords + t];
  if (words[4u * w + 1u] >= 2u) {
    let j = atomicAdd(&st[8], 1u);
    act[(1u - par) * u.nwords + j] = w;
  }
}

@compute @workgroup_size(1)
fn compact_fin() {
  touch();
  atomicStore(&st[7], atomicLoad(&st[8]));
  atomicStore(&st[8], 0u);
  atomicStore(&st[9], 1u - atomicLoad(&st[9]));
}
