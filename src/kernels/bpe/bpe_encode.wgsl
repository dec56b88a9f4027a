// Byte-level BPE encoding and decoding on the GPU (hosts: src/tokenizer/tok_webgpu_encode.c, _decode.c), with the
// CPU encoder's rule (tiktoken's): within a pre-token, repeatedly merge the adjacent pair whose
// concatenation is the token with the lowest merge rank, leftmost on ties; a pre-token that is
// itself a token (one byte, or a ranked token) is emitted directly. Pre-tokens come from
// bpe_pretok.wgsl (u.npieces, u.nlong, u.nblocks then copied in on the GPU) or from the CPU.
//
//   tab    tables: rank[V] at 0; byte ids at u.byte_off; the pair map (key = left << 16 | right,
//          value = merged id; 2 u32 per slot) at u.pair_off; per token len, byte offset, hash
//          at u.tok_off; the vocab hash table (ids) at u.vh_off; token bytes packed 4 per u32 at
//          u.ar_off
//   text   the batch's bytes, packed 4 per u32
//   pcs    per pre-token: start byte (in the batch), length; length 0xffffffff = <|endoftext|>
//   outp   ids of pre-token p at outp[start ..], their count in cnt[p]
//   lng    pre-tokens longer than SHORT: piece index, scratch offset (encode_long)
//   scr    encode_long's scratch: tok, next, prev (3 n) and a heap of (rank, left) (6 n)
//   cids   the batch's ids compacted in piece order (enc_bsum, enc_bscan, enc_scatter): the
//          count at cids[0], the ids from cids[1]; per-block sums of 4096 pieces' counts are
//          scanned in cnt[u.npieces ..], the total at cnt[u.npieces + u.nblocks]
// Decoding (dec_*): ids in outp, token byte counts scanned per block of 4096 ids into cnt,
// bytes or-ed into text.
struct U {
  byte_off: u32,
  pair_off: u32,
  pair_mask: u32,
  tok_off: u32,
  vh_off: u32,
  vh_mask: u32,
  ar_off: u32,
  npieces: u32,
  nlong: u32,
  eot: u32,
  nids: u32,
  nblocks: u32,
}
@group(0) @binding(0) var<uniform> u: U;
@group(0) @binding(1) var<storage, read> tab: array<u32>;
@group(0) @binding(2) var<storage, read_write> text: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read> pcs: array<u32>;
@group(0) @binding(4) var<storage, read_write> outp: array<u32>;
@group(0) @binding(5) var<storage, read_write> cnt: array<u32>;
@group(0) @binding(6) var<storage, read> lng: array<u32>;
@group(0) @binding(7) var<storage, read_write> scr: array<u32>;
@group(0) @binding(8) var<storage, read_write> cids: array<u32>;

const EMPTY: u32 = 0xffffffffu;
const NORANK: u32 = 0x7fffffffu;
const HP: u32 = 0x01000193u;
const SHORT: u32 = 64u;

fn touch() {
  _ = u;
  _ = &tab;
  _ = &text;
  _ = &pcs;
  _ = &outp;
  _ = &cnt;
  _ = &lng;
  _ = &scr;
  _ = &cids;
}

fn hmix(x: u32) -> u32 {
  var h = x * 0x9e3779b1u;
  h = h ^ (h >> 15u);
  h = h * 0x85ebca77u;
  return h ^ (h >> 13u);
}

fn tbyte(i: u32) -> u32 { return (atomicLoad(&text[i >> 2u]) >> ((i & 3u) * 8u)) & 0xffu; }
fn abyte(i: u32) -> u32 { return (tab[u.ar_off + (i >> 2u)] >> ((i & 3u) * 8u)) & 0xffu; }

// Merged id of the pair (x, y), or EMPTY.
fn merged(x: u32, y: u32) -> u32 {
  let key = (x << 16u) | y;
  var s = hmix(key) & u.pair_mask;
  loop {
    let k = tab[u.pair_off + 2u * s];
    if (k == key) { return tab[u.pair_off + 2u * s + 1u]; }
    if (k == EMPTY) { return EMPTY; }
    s = (s + 1u) & u.pair_mask;
  }
  return EMPTY;
}

fn prank(x: u32, y: u32) -> u32 {
  let m = merged(x, y);
  if (m == EMPTY) { return NORANK; }
  return tab[m];
}

// The token whose bytes are text[s, s + n), or EMPTY.
fn whole(s: u32, n: u32) -> u32 {
  var h = 0u;
  for (var i = 0u; i < n; i++) { h = h * HP + tbyte(s + i) + 1u; }
  var slot = hmix(h) & u.vh_mask;
  loop {
    let id = tab[u.vh_off + slot];
    if (id == EMPTY) { return EMPTY; }
    if (tab[u.tok_off + 3u * id + 2u] == h && tab[u.tok_off + 3u * id] == n) {
      let off = tab[u.tok_off + 3u * id + 1u];
      var same = true;
      for (var i = 0u; i < n && same; i++) { same = abyte(off + i) == tbyte(s + i); }
      if (same) { return id; }
    }
    slot = (slot + 1u) & u.vh_mask;
  }
  return EMPTY;
}

// Emitted directly (EOT, one byte, a whole ranked token)? Writes the id and returns true.
fn direct(p: u32, s: u32, n: u32) -> bool {
  if (n == EMPTY) {
    outp[s] = u.eot;
    cnt[p] = 1u;
    return true;
  }
  if (n == 1u) {
    outp[s] = tab[u.byte_off + tbyte(s)];
    cnt[p] = 1u;
    return true;
  }
  let w = whole(s, n);
  if (w != EMPTY && tab[w] != NORANK) {
    outp[s] = w;
    cnt[p] = 1u;
    return true;
  }
  return false;
}

// Pre-tokens of up to SHORT bytes: one thread each, tiktoken's loop on private arrays.
@compute @workgroup_size(64)
fn encode_short(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  touch();
  let p = gid.y * nwg.x * 64u + gid.x;
  if (p >= u.npieces) { return; }
  let s = pcs[2u * p];
  let n = pcs[2u * p + 1u];
  if (n != EMPTY && n > SHORT) { return; }
  if (direct(p, s, n)) { return; }
  var tk: array<u32, 64>;
  var rk: array<u32, 64>;
  for (var i = 0u; i < n; i++) { tk[i] = tab[u.byte_off + tbyte(s + i)]; }
  for (var i = 0u; i + 1u < n; i++) { rk[i] = prank(tk[i], tk[i + 1u]); }
  var m = n;
  loop {
    var best = NORANK;
    var j = 0u;
    for (var i = 0u; i + 1u < m; i++) {
      if (rk[i] < best) { best = rk[i]; j = i; }
    }
    if (best == NORANK) { break; }
    tk[j] = merged(tk[j], tk[j + 1u]);
    for (var i = j + 1u; i + 1u < m; i++) {
      tk[i] = tk[i + 1u];
      rk[i] = rk[i + 1u];
    }
    m--;
    if (j + 1u < m) { rk[j] = prank(tk[j], tk[j + 1u]); }
    if (j > 0u) { rk[j - 1u] = prank(tk[j - 1u], tk[j]); }
  }
  for (var i = 0u; i < m; i++) { outp[s + i] = tk[i]; }
  cnt[p] = m;
}

// Longer pre-tokens: a linked list and a min-heap keyed by (rank, position) in scratch, as the
// CPU encoder (O(n log n): a megabyte run stays fast).
var<private> hb: u32;  // heap base in scr
var<private> hn: u32;  // heap size

fn hless(i: u32, j: u32) -> bool {
  let ri = scr[hb + 2u * i];
  let rj = scr[hb + 2u * j];
  return ri < rj || (ri == rj && scr[hb + 2u * i + 1u] < scr[hb + 2u * j + 1u]);
}
fn hswap(i: u32, j: u32) {
  let r = scr[hb + 2u * i];
  let l = scr[hb + 2u * i + 1u];
  scr[hb + 2u * i] = scr[hb + 2u * j];
  scr[hb + 2u * i + 1u] = scr[hb + 2u * j + 1u];
  scr[hb + 2u * j] = r;
  scr[hb + 2u * j + 1u] = l;
}
fn hpush(r: u32, l: u32) {
  var i = hn;
  hn++;
  scr[hb + 2u * i] = r;
  scr[hb + 2u * i + 1u] = l;
  while (i > 0u) {
    let q = (i - 1u) / 2u;
    if (!hless(i, q)) { break; }
    hswap(i, q);
    i = q;
  }
}
fn hpop() {
  hn--;
  hswap(0u, hn);
  var i = 0u;
  loop {
    let l = 2u * i + 1u;
    let r = l + 1u;
    var m = i;
    if (l < hn && hless(l, m)) { m = l; }
    if (r < hn && hless(r, m)) { m = r; }
    if (m == i) { break; }
    hswap(i, m);
    i = m;
  }
}

@compute @workgroup_size(64)
fn encode_long(@builtin(global_invocation_id) gid: vec3<u32>) {
  touch();
  let q = gid.x;
  if (q >= u.nlong) { return; }
  let p = lng[2u * q];
  let base = lng[2u * q + 1u];
  let s = pcs[2u * p];
  let n = pcs[2u * p + 1u];
  if (direct(p, s, n)) { return; }
  let tk = base;
  let nx = base + n;
  let pv = base + 2u * n;
  hb = base + 3u * n;
  hn = 0u;
  for (var i = 0u; i < n; i++) {
    scr[tk + i] = tab[u.byte_off + tbyte(s + i)];
    scr[nx + i] = select(EMPTY, i + 1u, i + 1u < n);
    scr[pv + i] = select(EMPTY, i - 1u, i > 0u);
  }
  for (var i = 0u; i + 1u < n; i++) {
    let r = prank(scr[tk + i], scr[tk + i + 1u]);
    if (r != NORANK) { hpush(r, i); }
  }
  while (hn > 0u) {
    let r = scr[hb];
    let l = scr[hb + 1u];
    hpop();
    // stale? (l absorbed, no right neighbour, or the pair at l is no longer of rank r)
    let a = scr[tk + l];
    if (a == EMPTY) { continue; }
    let rr = scr[nx + l];
    if (rr == EMPTY) { continue; }
    let m = merged(a, scr[tk + rr]);
    if (m == EMPTY || tab[m] != r) { continue; }
    scr[tk + l] = m;
    scr[tk + rr] = EMPTY;
    let after = scr[nx + rr];
    scr[nx + l] = after;
    if (after != EMPTY) { scr[pv + after] = l; }
    let before = scr[pv + l];
    if (before != EMPTY) {
      let r1 = prank(scr[tk + before], m);
      if (r1 != NORANK) { hpush(r1, before); }
    }
    if (after != EMPTY) {
      let r2 = prank(m, scr[tk + after]);
      if (r2 != NORANK) { hpush(r2, l); }
    }
  }
  var o = 0u;
  var i = 0u;
  while (i != EMPTY) {
    outp[s + o] = scr[tk + i];
    o++;
    i = scr[nx + i];
  }
  cnt[p] = o;
}

// ---- decoding: ids (outp[0 .. u.nids)) -> bytes or-ed into text (zeroed) ----
fn tlen(id: u32) -> u32 { return tab[u.tok_off + 3u * id]; }


// Byte count of each block of 4096 ids into cnt[block].
@compute @workgroup_size(256)
fn dec_len(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
  touch();
  let blk = block_id(wid, nwg);
  let i0 = blk * 4096u + lid * 16u;
  var sum = 0u;
  for (var k = 0u; k < 16u; k++) {
    if (i0 + k < u.nids) { sum += tlen(outp[i0 + k]); }
  }
  let pre = wg_scan(lid, sum);
  if (lid == 255u && blk < u.nblocks) { cnt[blk] = pre + sum; }
}

// Exclusive scan of the block counts (one workgroup); the total goes to cnt[u.nblocks].
@compute @workgroup_size(256)
fn dec_scan(@builtin(local_invocation_index) lid: u32) {
  touch();
  var carry = 0u;
  for (var b0 = 0u; b0 < u.nblocks; b0 += 256u) {
    var v = 0u;
    if (b0 + lid < u.nblocks) { v = cnt[b0 + lid]; }
    let pre = wg_scan(lid, v);
    let total = wsum[255];
    workgroupBarrier();
    if (b0 + lid < u.nblocks) { cnt[b0 + lid] = carry + pre; }
    carry += total;
    workgroupBarrier();
  }
  if (lid == 0u) { cnt[u.nblocks] = carry; }
}

@compute @workgroup_size(256)
fn dec_write(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
  touch();
  let blk = block_id(wid, nwg);
  let i0 = blk * 4096u + lid * 16u;
  var sum = 0u;
  for (var k = 0u; k < 16u; k++) {
    if (i0 + k < u.nids) { sum += tlen(outp[i0 + k]); }
  }
  var pos = wg_scan(lid, sum);
  if (blk >= u.nblocks) { return; }
  pos += cnt[blk];
  for (var k = 0u; k < 16u; k++) {
    if (i0 + k >= u.nids) { break; }
    let id = outp[i0 + k];
    let n = tlen(id);
    let off = tab[u.tok_off + 3u * id + 1u];
    for (var j = 0u; j < n; j++) {
      let at = pos + j;
      atomicOr(&text[at >> 2u], abyte(off + j) << ((at & 3u) * 8u));
    }
    pos += n;
  }
}

// ---- compaction of a batch's ids (after encode_short / encode_long) ----
// The ids of piece p sit at outp[pcs[2p] ..], cnt[p] of them; the host reads cids instead of
// outp (one id per 1-4 bytes of text instead of one u32 per byte, and no per-piece gather).

// Sum of the id counts of each block of 4096 pieces into cnt[u.npieces + block].
@compute @workgroup_size(256)
fn enc_bsum(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
  touch();
  let blk = block_id(wid, nwg);
  let i0 = blk * 4096u + lid * 16u;
  var sum = 0u;
  for (var k = 0u; k < 16u; k++) {
    if (i0 + k < u.npieces) { sum += cnt[i0 + k]; }
  }
  let pre = wg_scan(lid, sum);
  if (lid == 255u && blk < u.nblocks) { cnt[u.npieces + blk] = pre + sum; }
}

// Exclusive scan of the block sums (one workgroup); the total to cnt[u.npieces + u.nblocks]
// and cids[0].
@compute @workgroup_size(256)
fn enc_bscan(@builtin(local_invocation_index) lid: u32) {
  touch();
  var carry = 0u;
  for (var b0 = 0u; b0 < u.nblocks; b0 += 256u) {
    var v = 0u;
    if (b0 + lid < u.nblocks) { v = cnt[u.npieces + b0 + lid]; }
    let pre = wg_scan(lid, v);
    let total = wsum[255];
    workgroupBarrier();
    if (b0 + lid < u.nblocks) { cnt[u.npieces + b0 + lid] = carry + pre; }
    carry += total;
    workgroupBarrier();
  }
  if (lid == 0u) {
    cnt[u.npieces + u.nblocks] = carry;
    cids[0] = carry;
  }
}

// Each thread copies the ids of its 16 pieces to their place in cids.
@compute @workgroup_size(256)
fn enc_scatter(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
  touch();
  let blk = block_id(wid, nwg);
  let i0 = blk * 4096u + lid * 16u;
  var sum = 0u;
  for (var k = 0u; k < 16u; k++) {
    if (i0 + k < u.npieces) { sum += cnt[i0 + k]; }
  }
  var pos = wg_scan(lid, sum);
  if (blk >= u.nblocks) { return; }
  pos += cnt[u.npieces + blk] + 1u;
  for (var k = 0u; k < 16u; k++) {
    let p = i0 + k;
    if (p >= u.npieces) { break; }
    let c = cnt[p];
    let s = pcs[2u * p];
    for (var j = 0u; j < c; j++) { cids[pos + j] = outp[s + j]; }
    pos += c;
  }
}
