// Byte-level BPE training on the GPU (host: src/tokenizer/tok_webgpu_train.c). Same merges as the CPU
// trainer (src/tokenizer/tok_train.c): at each step the pair with the largest count, ties to the
// smallest (left id, right id); a pair whose bytes already are a token is banned for good.
//
// A merge touches only the words that can contain its pair (the CPU trainer's idea, with lists
// the GPU can build without per-pair dynamic arrays):
//  * a pair of two bytes: the words holding it at the start (a CSR list per byte pair, built
//    once: count_pairs counts, csr_scan, csr_fill);
//  * a pair with a merged id x (>= 256): a subset of L_x, the words that merge x rewrote (x can
//    only appear in those). L_x is appended by apply as it rewrites words, so it is one range
//    of the entry array: [start[x], start[x + 1]) (or up to the cursor for the newest id).
//    Both ids merged: the shorter list.
// Old pairs never gain occurrences (a merge adds counts only to pairs holding its new id), so
// these lists stay supersets; a word's stamp (the iteration) keeps duplicates from being
// rewritten twice.
// Pair counts live in a hash table; each pair also gets a dense position (creation order) and
// blocks of 256 positions keep their best (count, key). A count change marks the block dirty
// (flag + dirty list); refresh recomputes only the dirty blocks (one workgroup each) and
// select_best reduces the block bests (one workgroup) with the CPU's tie-break.
// One iteration = refresh, select_best, apply: three dispatches, work proportional to the touched
// words and pairs, no host round trip (the host reads the state once per submission). Fused
// mode (u.fused = 1) = refresh2, apply2: refresh2 also snapshots the state the merge changes,
// every apply2 workgroup selects the pair from the block bests and the snapshot (reads only: all
// decide the same) and workgroup 0 alone records it; dirty lists alternate by iteration parity.
//
// Data (ids < 65536, so a pair is one u32 key = left << 16 | right; 0xffffffff = empty):
//   sym    the words' symbols, word w at [words[4w], +len); rewritten in place
//   words  per word: offset, current length, count (multiplicity), stamp (last iteration)
//   ptab   pair hash table, 4 u32 per slot: key, count (two's complement deltas), banned, position
//   blk    per block of 256 positions: best count, best key, dirty flag; then (u.dl_off) the
//          dirty block lists 0 and 1 (u.nblk entries each; list 1 only in fused mode)
//   st     state: see the S_* constants
//   voc    token table: len, off, hash, hash power ([4 * id + 0..3]), the vocab hash table
//          (u.vh_off, u.vh_mask + 1 ids) and the byte arena (u.ar_off, one byte per u32)
//   lists  [0, 65537) CSR offsets of the byte pairs (a * 256 + b); u.lo_fill: CSR fill
//          counters (65536); u.lo_start: start of L_id per id; u.lo_merges: merge keys in
//          order; u.lo_ent: the entries (word ids: CSR lists, then the L_id lists)
//   plist  position -> pair table slot
struct U {
  pmask: u32,     // pair table slots - 1
  nwords: u32,    // words (all of length >= 2 at the start)
  last_id: u32,   // vocab_size - 1: merges stop when the next id reaches it
  vh_off: u32,
  vh_mask: u32,
  ar_off: u32,
  ar_cap: u32,
  dl_off: u32,    // blk: start of the dirty block list
  lo_fill: u32,
  lo_start: u32,
  lo_merges: u32,
  lo_ent: u32,
  ent_cap: u32,   // entries capacity (CSR + L lists <= 2 x positions)
  pcap: u32,      // pair table slots
  nblk: u32,      // blocks (each dirty list has room for all)
  fused: u32,     // 1: two dispatches per iteration (refresh2, apply2), 0: three
}
@group(0) @binding(0) var<uniform> u: U;
@group(0) @binding(1) var<storage, read_write> sym: array<u32>;
@group(0) @binding(2) var<storage, read_write> words: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> ptab: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> blk: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> st: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> voc: array<u32>;
@group(0) @binding(7) var<storage, read_write> lists: array<atomic<u32>>;
@group(0) @binding(8) var<storage, read_write> plist: array<u32>;

const EMPTY: u32 = 0xffffffffu;
const HP: u32 = 0x01000193u; // hash multiplier (byte strings: h = h * HP + byte + 1)

// st fields
const S_NEXT: u32 = 0u;   // next id
const S_MERGES: u32 = 1u; // merges recorded
const S_DONE: u32 = 2u;   // 1 finished, 2 byte arena full, 3 pair table full, 4 entry array full
const S_A: u32 = 3u;      // current merge: left, right, new id
const S_B: u32 = 4u;
const S_NID: u32 = 5u;
const S_VALID: u32 = 6u;  // 1 when this iteration merges (0: done or a ban)
const S_CS: u32 = 7u;     // candidate words: entries [cs, ce)
const S_CE: u32 = 8u;
const S_CUR: u32 = 9u;    // entries used
const S_AR: u32 = 10u;    // byte arena used
const S_BANS: u32 = 11u;
const S_ITER: u32 = 12u;  // iterations (merges + bans + the final one)
const S_NP: u32 = 13u;    // pairs (positions) created
const S_ND: u32 = 14u;    // dirty blocks listed (list 0; S_ND + 1: list 1, fused mode)
// fused mode: the state that apply2 changes, as refresh2 saw it (apply2's workgroups read these)
const S_SNEXT: u32 = 16u;
const S_SCUR: u32 = 17u;
const S_SIT: u32 = 18u;   // this iteration's number
const S_SDONE: u32 = 19u;
const S_SNP: u32 = 20u;

// Every entry point references every binding so that all share one auto layout.
fn touch() {
  _ = u;
  _ = &sym;
  _ = &words;
  _ = &ptab;
  _ = &blk;
  _ = &st;
  _ = &voc;
  _ = &lists;
  _ = &plist;
}

fn hmix(x: u32) -> u32 {
  var h = x * 0x9e3779b1u;
  h = h ^ (h >> 15u);
  h = h * 0x85ebca77u;
  return h ^ (h >> 13u);
}

// The dirty list marks go to: 0 with three dispatches per iteration; in fused mode the list of
// the next iteration's parity (refresh2 of iteration t reads list t % 2 while apply2 of t fills
// list (t + 1) % 2).
var<private> dpar: u32;

fn mark_dirty(b: u32) {
  if (atomicLoad(&blk[3u * b + 2u]) != 0u) { return; } // (a plain load first: hot blocks are marked by many threads)
  if (atomicExchange(&blk[3u * b + 2u], 1u) == 0u) {
    let j = atomicAdd(&st[S_ND + dpar], 1u);
    atomicStore(&blk[u.dl_off + dpar * u.nblk + j], b);
  }
}

// Slot of key in the pair table, inserting it when absent. The inserting thread gives the pair
// the next position and marks its block dirty.
fn pslot(key: u32) -> u32 {
  var s = hmix(key) & u.pmask;
  for (var probe = 0u; probe <= u.pmask; probe++) {
    let k = atomicLoad(&ptab[4u * s]);
    if (k == key) { return s; }
    if (k == EMPTY) {
      let r = atomicCompareExchangeWeak(&ptab[4u * s], EMPTY, key);
      if (r.exchanged) {
        let p = atomicAdd(&st[S_NP], 1u);
        plist[p] = s;
        atomicStore(&ptab[4u * s + 3u], p);
        mark_dirty(p >> 8u);
        return s;
      }
      if (r.old_value == key) { return s; }
      if (r.old_value == EMPTY) { probe--; continue; } // spurious failure: retry this slot
    }
    s = (s + 1u) & u.pmask;
  }
  atomicStore(&st[S_DONE], 3u); // table full (cannot happen: sized for the worst case)
  return 0u;
}

// Add delta (two's complement) to the count of pair key and mark its block dirty. A pair
// inserted by another thread in this dispatch may have no position yet: its inserter marks it.
fn padd(key: u32, delta: u32) {
  if (delta == 0u) { return; }
  let s = pslot(key);
  atomicAdd(&ptab[4u * s + 1u], delta);
  let p = atomicLoad(&ptab[4u * s + 3u]);
  if (p != EMPTY) { mark_dirty(p >> 8u); }
}

// A per-thread cache of count deltas: runs of one byte ("aaaa", NUL runs) and repeated pairs in
// a word add to the same few keys; summing them here saves the atomics (results are exact
// integer sums either way). (A flush in phases — all probes, then all adds, ... — overlaps the
// keys' round trips, but unrolled it made lavapipe's compile of these kernels ~5x longer.)
const NC: u32 = 8u;
var<private> ck: array<u32, 8>;
var<private> cd: array<u32, 8>;
var<private> cn: u32;

fn cflush() {
  for (var j = 0u; j < cn; j++) { padd(ck[j], cd[j]); }
  cn = 0u;
}

fn cadd(key: u32, delta: u32) {
  for (var j = 0u; j < cn; j++) {
    if (ck[j] == key) {
      cd[j] += delta;
      return;
    }
  }
  if (cn == NC) { cflush(); }
  ck[cn] = key;
  cd[cn] = delta;
  cn++;
}

fn word_index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
  return (wid.y * nwg.x + wid.x) * 256u + lid;
}

// The pair table starts empty: key EMPTY, count 0, not banned, no position.
@compute @workgroup_size(256)
fn clear(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) lid: u32) {
  touch();
  let s = word_index(wid, nwg, lid);
  if (s >= u.pcap) { return; }
  atomicStore(&ptab[4u * s], EMPTY);
  atomicStore(&ptab[4u * s + 1u], 0u);
  atomicStore(&ptab[4u * s + 2u], 0u);
  atomicStore(&ptab[4u * s + 3u], EMPTY);
}

// Whether the byte pair at position i of the word at base also starts at one of the 8
// positions before it (a cheap partial dedup of the CSR lists; the stamps do the rest).
fn seen_before(base: u32, i: u32, x: u32, y: u32) -> bool {
  var j = i;
  var k = 0u;
  while (j > 0u && k < 8u) {
    j--;
    k++;
    if (sym[base + j] == x && sym[base + j + 1u] == y) { return true; }
  }
  return false;
}

// Initial pair counts of every word, and the sizes of the byte pairs' word lists.
@compute @workgroup_size(256)
fn count_pairs(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
  touch();
  let w = word_index(wid, nwg, lid);
  if (w >= u.nwords) { return; }
  let base = atomicLoad(&words[4u * w]);
  let len = atomicLoad(&words[4u * w + 1u]);
  let c = atomicLoad(&words[4u * w + 2u]);
  dpar = u.fused; // fused: iteration 1 reads list 1
  cn = 0u;
  for (var i = 0u; i + 1u < len; i++) {
    let x = sym[base + i];
    let y = sym[base + i + 1u];
    cadd((x << 16u) | y, c);
    if (!seen_before(base, i, x, y)) { atomicAdd(&lists[x * 256u + y], 1u); }
  }
  cflush();
}

var<workgroup> scan_w: array<u32, 256>;

// The CSR offsets: exclusive prefix sums of the 65536 list sizes, in place; [65536] = total,
// which is also where the L lists start.
@compute @workgroup_size(256)
fn csr_scan(@builtin(local_invocation_index) lid: u32) {
  touch();
  var sum = 0u;
  for (var j = 0u; j < 256u; j++) { sum += atomicLoad(&lists[lid * 256u + j]); }
  scan_w[lid] = sum;
  workgroupBarrier();
  for (var off = 1u; off < 256u; off <<= 1u) {
    var v = 0u;
    if (lid >= off) { v = scan_w[lid - off]; }
    workgroupBarrier();
    scan_w[lid] += v;
    workgroupBarrier();
  }
  var run = scan_w[lid] - sum; // exclusive start of this thread's 256 lists
  for (var j = 0u; j < 256u; j++) {
    let n = atomicLoad(&lists[lid * 256u + j]);
    atomicStore(&lists[lid * 256u + j], run);
    run += n;
  }
  if (lid == 255u) {
    atomicStore(&lists[65536u], run);
    atomicStore(&st[S_CUR], run);
  }
}

// Every word into the lists of the byte pairs it holds.
@compute @workgroup_size(256)
fn csr_fill(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
  touch();
  let w = word_index(wid, nwg, lid);
  if (w >= u.nwords) { return; }
  let base = atomicLoad(&words[4u * w]);
  let len = atomicLoad(&words[4u * w + 1u]);
  for (var i = 0u; i + 1u < len; i++) {
    let x = sym[base + i];
    let y = sym[base + i + 1u];
    if (seen_before(base, i, x, y)) { continue; }
    let k = x * 256u + y;
    let at = atomicLoad(&lists[k]) + atomicAdd(&lists[u.lo_fill + k], 1u);
    atomicStore(&lists[u.lo_ent + at], w);
  }
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

var<workgroup> nd_w: u32;

// Recompute the best live pair (count > 0, not banned) of every block on dirty list `par`: one
// workgroup per listed block, one position per thread; workgroups stride over the list.
fn refresh_list(wid: u32, nwg: u32, lid: u32, par: u32) {
  if (lid == 0u) { nd_w = atomicLoad(&st[S_ND + par]); }
  let nd = workgroupUniformLoad(&nd_w);
  let np = atomicLoad(&st[S_NP]);
  for (var j = wid; j < nd; j += nwg) {
    let b = atomicLoad(&blk[u.dl_off + par * u.nblk + j]);
    let p = b * 256u + lid;
    var bc = 0u;
    var bk = EMPTY;
    if (p < np) {
      let s = plist[p];
      let c = i32(atomicLoad(&ptab[4u * s + 1u]));
      if (c > 0 && atomicLoad(&ptab[4u * s + 2u]) == 0u) {
        bc = u32(c);
        bk = atomicLoad(&ptab[4u * s]);
      }
    }
    wg_reduce(lid, bc, bk);
    if (lid == 0u) {
      atomicStore(&blk[3u * b], rc[0]);
      atomicStore(&blk[3u * b + 1u], rk[0]);
      atomicStore(&blk[3u * b + 2u], 0u);
    }
    workgroupBarrier();
  }
}

@compute @workgroup_size(256)
fn refresh(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
  touch();
  refresh_list(wid.x, nwg.x, lid, 0u);
}

// Fused mode, iteration t = the last one + 1: refresh list t % 2 and snapshot the state apply2
// changes (every thread stores the same values: nothing else writes them in this dispatch).
@compute @workgroup_size(256)
fn refresh2(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
  touch();
  let t = atomicLoad(&st[S_ITER]) + 1u;
  if (wid.x == 0u && lid == 0u) {
    atomicStore(&st[S_SNEXT], atomicLoad(&st[S_NEXT]));
    atomicStore(&st[S_SCUR], atomicLoad(&st[S_CUR]));
    atomicStore(&st[S_SIT], t);
    atomicStore(&st[S_SDONE], atomicLoad(&st[S_DONE]));
    atomicStore(&st[S_SNP], atomicLoad(&st[S_NP]));
  }
  refresh_list(wid.x, nwg.x, lid, t % 2u);
}

fn tbyte(id: u32, j: u32) -> u32 { return voc[u.ar_off + voc[4u * id + 1u] + j]; }

// End of L_x (x >= 256, an existing id < next): where L_{x+1} starts, or the cursor.
fn list_end(x: u32, next: u32, cur: u32) -> u32 {
  if (x + 1u < next) { return atomicLoad(&lists[u.lo_start + x + 1u]); }
  return cur;
}

// The best of the block bests [0, nb) into rc[0], rk[0] (every thread of the workgroup).
fn reduce_blocks(lid: u32, nb: u32) {
  var bc = 0u;
  var bk = EMPTY;
  for (var b = lid; b < nb; b += 256u) {
    let c = atomicLoad(&blk[3u * b]);
    let k = atomicLoad(&blk[3u * b + 1u]);
    if (better(c, k, bc, bk)) { bc = c; bk = k; }
  }
  wg_reduce(lid, bc, bk);
}

// The outcome of an iteration whose best pair is (cnt, key), next id `next`, list cursor `cur`:
// 0 done (no pair left or the vocabulary full), 1 banned (its bytes already are a token),
// 2 merge (d_cs, d_ce: its candidate words), 3 byte arena full. Reads only state no other
// thread changes in this dispatch (ids >= next are ignored in the vocabulary's hash table), so
// every workgroup of apply2 decides the same; with `write` it also records the outcome (the
// ban, the new token and merge, where L_next starts, the next id).
var<private> d_cs: u32;
var<private> d_ce: u32;

fn decide(cnt: u32, key: u32, next: u32, cur: u32, write: bool) -> u32 {
  if (next >= u.last_id || cnt == 0u) {
    if (write) { atomicStore(&st[S_DONE], 1u); }
    return 0u;
  }
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
    if (id == EMPTY || id >= next) { break; }
    if (voc[4u * id + 2u] == h && voc[4u * id] == len) {
      var same = true;
      for (var j = 0u; j < len && same; j++) {
        var want: u32;
        if (j < la) { want = tbyte(a, j); } else { want = tbyte(b, j - la); }
        same = tbyte(id, j) == want;
      }
      if (same) {
        if (write) {
          var ps = hmix(key) & u.pmask;
          loop {
            if (atomicLoad(&ptab[4u * ps]) == key) { break; }
            ps = (ps + 1u) & u.pmask;
          }
          atomicStore(&ptab[4u * ps + 2u], 1u);
          mark_dirty(atomicLoad(&ptab[4u * ps + 3u]) >> 8u);
          atomicAdd(&st[S_BANS], 1u);
        }
        return 1u;
      }
    }
    s = (s + 1u) & u.vh_mask;
  }
  if (write) {
    let used = atomicLoad(&st[S_AR]);
    if (used + len > u.ar_cap) {
      atomicStore(&st[S_DONE], 2u);
      return 3u;
    }
    for (var j = 0u; j < la; j++) { voc[u.ar_off + used + j] = tbyte(a, j); }
    for (var j = 0u; j < lb; j++) { voc[u.ar_off + used + la + j] = tbyte(b, j); }
    atomicStore(&st[S_AR], used + len);
    voc[4u * next] = len;
    voc[4u * next + 1u] = used;
    voc[4u * next + 2u] = h;
    voc[4u * next + 3u] = voc[4u * a + 3u] * voc[4u * b + 3u];
    voc[u.vh_off + s] = next; // s: the empty slot the probe ended on
    let m = atomicLoad(&st[S_MERGES]);
    atomicStore(&lists[u.lo_merges + m], key);
    atomicStore(&st[S_MERGES], m + 1u);
    atomicStore(&lists[u.lo_start + next], cur); // L_next starts here
    atomicStore(&st[S_NEXT], next + 1u);
  }
  // the candidate words
  if (a < 256u && b < 256u) {
    d_cs = atomicLoad(&lists[a * 256u + b]);
    d_ce = atomicLoad(&lists[a * 256u + b + 1u]);
  } else {
    var x = a;
    if (a < 256u) { x = b; }
    d_cs = atomicLoad(&lists[u.lo_start + x]);
    d_ce = list_end(x, next, cur);
    if (a >= 256u && b >= 256u) {
      let s2 = atomicLoad(&lists[u.lo_start + b]);
      let e2 = list_end(b, next, cur);
      if (e2 - s2 < d_ce - d_cs) { d_cs = s2; d_ce = e2; }
    }
  }
  return 2u;
}

// One workgroup: the best pair over all block bests; then ban it or make it the next merge
// (three-dispatch mode).
@compute @workgroup_size(256)
fn select_best(@builtin(local_invocation_index) lid: u32) {
  touch();
  reduce_blocks(lid, (atomicLoad(&st[S_NP]) + 255u) / 256u);
  if (lid != 0u) { return; }
  atomicStore(&st[S_ND], 0u); // refresh has consumed the dirty list
  atomicStore(&st[S_VALID], 0u);
  if (atomicLoad(&st[S_DONE]) != 0u) { return; }
  atomicAdd(&st[S_ITER], 1u);
  let next = atomicLoad(&st[S_NEXT]);
  if (decide(rc[0], rk[0], next, atomicLoad(&st[S_CUR]), true) != 2u) { return; }
  atomicStore(&st[S_CS], d_cs);
  atomicStore(&st[S_CE], d_ce);
  atomicStore(&st[S_A], rk[0] >> 16u);
  atomicStore(&st[S_B], rk[0] & 0xffffu);
  atomicStore(&st[S_NID], next);
  atomicStore(&st[S_VALID], 1u);
}

// Words of up to WS symbols are read once into private memory (wv) and rewritten there and in
// sym; longer ones are read from sym symbol by symbol.
const WS: u32 = 16u;
var<private> wv: array<u32, 16>;

fn ld(sw: bool, base: u32, i: u32) -> u32 {
  if (sw) { return wv[i]; }
  return sym[base + i];
}

fn st_sym(sw: bool, base: u32, i: u32, v: u32) {
  if (sw) { wv[i] = v; }
  sym[base + i] = v;
}

// Rewrite word w with the merge (a, b) -> nid (left to right, non-overlapping) with the CPU
// trainer's count deltas; when it held the pair it joins L_nid.
fn apply_word(w: u32, a: u32, b: u32, nid: u32) {
  let base = atomicLoad(&words[4u * w]);
  let len = atomicLoad(&words[4u * w + 1u]);
  let c = atomicLoad(&words[4u * w + 2u]);
  let sw = len <= WS;
  if (sw) { // one round of independent loads instead of one per symbol
    for (var j = 0u; j < WS; j++) {
      if (j < len) { wv[j] = sym[base + j]; }
    }
  }
  var i = 0u;
  loop {
    if (i + 1u >= len) { break; }
    if (ld(sw, base, i) == a && ld(sw, base, i + 1u) == b) { break; }
    i++;
  }
  if (i + 1u >= len) { return; }
  let neg = 0u - c;
  cn = 0u;
  var o = i;
  while (i < len) {
    if (i + 1u < len && ld(sw, base, i) == a && ld(sw, base, i + 1u) == b) {
      if (o > 0u) {
        let l = ld(sw, base, o - 1u);
        cadd((l << 16u) | a, neg);
        cadd((l << 16u) | nid, c);
      }
      cadd((a << 16u) | b, neg);
      if (i + 2u < len) {
        let r = ld(sw, base, i + 2u);
        cadd((b << 16u) | r, neg);
        cadd((nid << 16u) | r, c);
      }
      st_sym(sw, base, o, nid);
      o++;
      i += 2u;
    } else {
      st_sym(sw, base, o, ld(sw, base, i));
      o++;
      i++;
    }
  }
  cflush();
  atomicStore(&words[4u * w + 1u], o);
  let j = atomicAdd(&st[S_CUR], 1u);
  if (j < u.ent_cap) {
    atomicStore(&lists[u.lo_ent + j], w);
  } else {
    atomicStore(&st[S_DONE], 4u);
  }
}

// Apply the current merge to its candidate words (three-dispatch mode); threads stride over
// the candidates, a word's stamp (the iteration) skips a word listed twice.
@compute @workgroup_size(256)
fn apply(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  touch();
  if (atomicLoad(&st[S_VALID]) == 0u) { return; }
  let cs = atomicLoad(&st[S_CS]);
  let ce = atomicLoad(&st[S_CE]);
  let a = atomicLoad(&st[S_A]);
  let b = atomicLoad(&st[S_B]);
  let nid = atomicLoad(&st[S_NID]);
  let it = atomicLoad(&st[S_ITER]);
  dpar = 0u;
  for (var e = cs + gid.x; e < ce; e += nwg.x * 256u) {
    let w = atomicLoad(&lists[u.lo_ent + e]);
    if (atomicExchange(&words[4u * w + 3u], it) == it) { continue; } // listed twice
    apply_word(w, a, b, nid);
  }
}

var<workgroup> dec_w: u32;
var<workgroup> cand_w: array<u32, 2>;

// Fused mode: every workgroup selects the best pair itself from the block bests and the state
// refresh2 snapshotted (all decide the same; workgroup 0 alone records it), then the merge is
// applied to the candidate words, threads striding over them.
@compute @workgroup_size(256)
fn apply2(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
          @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  touch();
  let t = atomicLoad(&st[S_SIT]);
  dpar = (t + 1u) % 2u;
  reduce_blocks(lid, (atomicLoad(&st[S_SNP]) + 255u) / 256u);
  if (lid == 0u) {
    var r = 0u;
    if (atomicLoad(&st[S_SDONE]) == 0u) {
      let w0 = wid.x == 0u;
      if (w0) {
        atomicStore(&st[S_ND + t % 2u], 0u); // refresh2 has consumed list t % 2
        atomicStore(&st[S_ITER], t);
      }
      r = decide(rc[0], rk[0], atomicLoad(&st[S_SNEXT]), atomicLoad(&st[S_SCUR]), w0);
    }
    dec_w = r;
    cand_w[0] = d_cs;
    cand_w[1] = d_ce;
  }
  if (workgroupUniformLoad(&dec_w) != 2u) { return; }
  let cs = cand_w[0];
  let ce = cand_w[1];
  let a = rk[0] >> 16u;
  let b = rk[0] & 0xffffu;
  let nid = atomicLoad(&st[S_SNEXT]);
  for (var e = cs + gid.x; e < ce; e += nwg.x * 256u) {
    let w = atomicLoad(&lists[u.lo_ent + e]);
    if (atomicExchange(&words[4u * w + 3u], t) == t) { continue; } // listed twice
    apply_word(w, a, b, nid);
  }
}
