// GPT-2 pre-tokenization on the GPU (host: src/tokenizer/tok_webgpu_pretok.c):
// the pieces of the pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// as PCRE2 finds them on the CPU (PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, one match
// after the other; the bytes between two matches, invalid UTF-8, form one piece), computed from
// the raw bytes of a batch. The batch starts and ends where the CPU's pieces certainly break
// (the host cuts at context-free boundaries, tz_pretok_safe_cut, or at <|endoftext|>).
//
// Why a byte-local rule gives the regex's pieces. Invalid UTF-8 bytes match nothing: every run
// of them is one piece, and PCRE2 matches the valid stretches between them (and between
// <|endoftext|> literals, when special) as separate subjects ("segments"). In a segment, each
// character is L (\p{L}), N (\p{N}), S (\s) or O (anything else); classes come from PCRE2 itself
// (tz_pretok_classes), so they agree with the CPU by construction. A piece starts at character
// i of a segment when i = 0, or else:
//   * K_i = S: K_{i-1} != S (no piece but a whitespace one holds whitespace), or K_{i-1} = S and
//     character i+1 exists in the segment and is not S: a run of k >= 2 whitespace characters
//     before a non-space is matched by \s+(?!\S) without its last character (backtracking until
//     the lookahead sees whitespace), which then starts the next piece; a run reaching the
//     segment's end is one piece (the lookahead sees the end).
//   * K_i in {L, N, O}: not when character i-1 is U+0020 (that space, always at a match start,
//     since it is a whitespace run's last character or follows a non-space, is taken by
//     ` ?X+`); else yes when K_{i-1} = S (a non-space whitespace character is matched alone by
//     \s+) or K_{i-1} != K_i (` ?X+` runs are maximal runs of one class); else no.
//   * Contractions override the above: an apostrophe that starts a piece (segment start, or the
//     character before it is L, N or S other than U+0020) followed by s, t, m, d (2 bytes) or
//     re, ve, ll (3 bytes) is one piece (the first alternatives), so the bytes after the
//     apostrophe inside it start nothing and the byte after it starts a piece.
// tests/test_tok_webgpu.c checks the pieces against PCRE2's on random text built to hit every
// case (mixed whitespace runs, apostrophes after spaces / punctuation / letters, non-ASCII
// whitespace, combining marks, digits of other scripts, invalid UTF-8, <|endoftext|>).
//
//   u      n = batch bytes, nblk = blocks of 4096 bytes, special = 1 when the literal e[0 .. elen)
//          (<|endoftext|>: ASCII, never overlapping itself; the host checks) is a piece of its
//          own and a segment boundary; pieces longer than huge bytes are left to the CPU (hug)
//   cls    2 bits per code point: 0 other, 1 letter, 2 number, 3 whitespace
//   text   the batch's bytes, 4 per u32, zero-padded
//   pcs    out: per piece start byte, length (0xffffffff: the special literal); pcs[2 np] = n
//   msk    per thread (16 bytes each) a mask of the bytes starting a piece, at [0, 256 nblk);
//          per block the piece count, scanned, at [256 nblk, 257 nblk)
//   lng    out: pieces longer than SHORT bytes: piece index, scratch offset (9 * start)
//   st     out: st[0] np, st[1] nlong, st[2] blocks of 4096 pieces (copied into bpe_encode's U),
//          st[3] nhuge
//   cnt    bpe_encode's per-piece id counts: 0 for the huge pieces (bpe_encode skips them); after
//          bpe_encode's scan, cnt[np + block] = the ids before each block of 4096 pieces
//   hug    the huge pieces: piece index, start byte, length, ids before it in the batch (pt_huge)
//          — a single pre-token of megabytes is one GPU thread's heap loop, far slower there
//          than on the CPU, so the host encodes those and splices their ids in
struct PU {
  n: u32,
  nblk: u32,
  special: u32,
  elen: u32,
  huge: u32,
  pad0: u32,
  pad1: u32,
  pad2: u32,
  e: array<vec4<u32>, 2>,
}
@group(0) @binding(0) var<uniform> u: PU;
@group(0) @binding(1) var<storage, read> cls: array<u32>;
@group(0) @binding(2) var<storage, read> text: array<u32>;
@group(0) @binding(3) var<storage, read_write> pcs: array<u32>;
@group(0) @binding(4) var<storage, read_write> msk: array<u32>;
@group(0) @binding(5) var<storage, read_write> lng: array<u32>;
@group(0) @binding(6) var<storage, read_write> st: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> cnt: array<u32>;
@group(0) @binding(8) var<storage, read_write> hug: array<u32>;

const NONE: u32 = 0xffffffffu;
const SHORT: u32 = 64u;
const C_OTHER: u32 = 0u;
const C_SPACE: u32 = 3u;

fn touch() {
  _ = u;
  _ = &cls;
  _ = &text;
  _ = &pcs;
  _ = &msk;
  _ = &lng;
  _ = &st;
  _ = &cnt;
  _ = &hug;
}

fn tb(i: u32) -> u32 { return (text[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu; }
fn ebyte(i: u32) -> u32 { return (u.e[i >> 4u][(i >> 2u) & 3u] >> ((i & 3u) * 8u)) & 0xffu; }
fn cont(b: u32) -> bool { return (b & 0xc0u) == 0x80u; }

// Length of the well-formed UTF-8 sequence starting at byte q < n (Unicode's table 3-7: no
// overlongs, surrogates or code points above 0x10FFFF), 0 when there is none.
fn vlen(q: u32) -> u32 {
  let b0 = tb(q);
  if (b0 < 0x80u) { return 1u; }
  if (b0 < 0xc2u || b0 > 0xf4u || q + 1u >= u.n) { return 0u; }
  let b1 = tb(q + 1u);
  if (b0 < 0xe0u) { return select(0u, 2u, cont(b1)); }
  var lo = 0x80u;
  var hi = 0xbfu;
  if (b0 == 0xe0u) { lo = 0xa0u; }
  if (b0 == 0xedu) { hi = 0x9fu; }
  if (b0 == 0xf0u) { lo = 0x90u; }
  if (b0 == 0xf4u) { hi = 0x8fu; }
  if (b1 < lo || b1 > hi || q + 2u >= u.n || !cont(tb(q + 2u))) { return 0u; }
  if (b0 < 0xf0u) { return 3u; }
  if (q + 3u >= u.n || !cont(tb(q + 3u))) { return 0u; }
  return 4u;
}

// Code point of the valid sequence of l bytes at q.
fn decode(q: u32, l: u32) -> u32 {
  let b0 = tb(q);
  if (l == 1u) { return b0; }
  if (l == 2u) { return ((b0 & 0x1fu) << 6u) | (tb(q + 1u) & 0x3fu); }
  if (l == 3u) { return ((b0 & 0x0fu) << 12u) | ((tb(q + 1u) & 0x3fu) << 6u) | (tb(q + 2u) & 0x3fu); }
  return ((b0 & 0x07u) << 18u) | ((tb(q + 1u) & 0x3fu) << 12u) | ((tb(q + 2u) & 0x3fu) << 6u) | (tb(q + 3u) & 0x3fu);
}

fn klass(cp: u32) -> u32 { return (cls[cp >> 4u] >> ((cp & 15u) * 2u)) & 3u; }

// The special literal starts at byte q.
fn eot_at(q: u32) -> bool {
  if (u.special == 0u || q + u.elen > u.n) { return false; }
  for (var i = 0u; i < u.elen; i++) {
    if (tb(q + i) != ebyte(i)) { return false; }
  }
  return true;
}

// Byte p belongs to a special literal.
fn in_eot(p: u32) -> bool {
  if (u.special == 0u) { return false; }
  for (var k = 0u; k < u.elen && k <= p; k++) {
    if (eot_at(p - k)) { return true; }
  }
  return false;
}

// First byte of the valid character covering byte p, or NONE when p is an invalid byte.
fn lead_of(p: u32) -> u32 {
  if (!cont(tb(p))) { return select(NONE, p, vlen(p) > 0u); }
  for (var k = 1u; k <= 3u && k <= p; k++) {
    if (!cont(tb(p - k))) { return select(NONE, p - k, vlen(p - k) > k); }
  }
  return NONE;
}

// First byte of the character before the one starting at byte p, in the same segment; NONE at
// a segment start (the batch's start, after a special literal or an invalid byte).
fn prev_lead(p: u32) -> u32 {
  if (p == 0u || in_eot(p - 1u)) { return NONE; }
  return lead_of(p - 1u);
}

// Length in bytes of the contraction ('s 't 'm 'd: 2; 're 've 'll: 3) matched at byte a, or 0:
// the apostrophe must start a piece (segment start, or after L, N or S other than U+0020).
fn contraction(a: u32) -> u32 {
  if (tb(a) != 0x27u || a + 1u >= u.n || in_eot(a) || in_eot(a + 1u)) { return 0u; }
  let pq = prev_lead(a);
  if (pq != NONE) {
    let pc = decode(pq, a - pq);
    if (pc == 0x20u || klass(pc) == C_OTHER) { return 0u; }
  }
  let c1 = tb(a + 1u);
  if (c1 == 0x73u || c1 == 0x74u || c1 == 0x6du || c1 == 0x64u) { return 2u; }
  if (a + 2u >= u.n || in_eot(a + 2u)) { return 0u; }
  let c2 = tb(a + 2u);
  if ((c1 == 0x72u && c2 == 0x65u) || (c1 == 0x76u && c2 == 0x65u) || (c1 == 0x6cu && c2 == 0x6cu)) { return 3u; }
  return 0u;
}

// Does a piece start at byte p (< n)? The rule in the header.
fn is_start(p: u32) -> bool {
  if (in_eot(p)) { return eot_at(p); }
  let q = lead_of(p);
  if (q == NONE) { // invalid: starts a piece unless the byte before is invalid too
    if (p == 0u || in_eot(p - 1u)) { return true; }
    return lead_of(p - 1u) != NONE;
  }
  if (q != p) { return false; } // inside a character
  let l = vlen(p);
  let k = klass(decode(p, l));
  let pq = prev_lead(p);
  if (pq == NONE) { return true; }
  let pc = decode(pq, p - pq);
  let pk = klass(pc);
  if (k == C_SPACE) {
    if (pk != C_SPACE) { return true; }
    let nq = p + l;
    if (nq >= u.n || in_eot(nq)) { return false; }
    let nl = vlen(nq);
    if (nl == 0u) { return false; }
    return klass(decode(nq, nl)) != C_SPACE;
  }
  if (p >= 1u && contraction(p - 1u) != 0u) { return false; }
  if (p >= 2u) {
    let c = contraction(p - 2u);
    if (c == 3u) { return false; }
    if (c == 2u) { return true; }
  }
  if (p >= 3u && contraction(p - 3u) == 3u) { return true; }
  if (pc == 0x20u) { return false; }
  if (pk == C_SPACE) { return true; }
  return pk != k;
}


// Per thread: the mask of its 16 bytes that start a piece; per block of 4096 bytes: the count.
@compute @workgroup_size(256)
fn pt_mask(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
  touch();
  let blk = block_id(wid, nwg);
  let p0 = blk * 4096u + lid * 16u;
  var m = 0u;
  if (blk < u.nblk) {
    for (var k = 0u; k < 16u; k++) {
      if (p0 + k < u.n && is_start(p0 + k)) { m |= 1u << k; }
    }
  }
  let c = countOneBits(m);
  let pre = wg_scan(lid, c);
  if (blk < u.nblk) {
    msk[blk * 256u + lid] = m;
    if (lid == 255u) { msk[u.nblk * 256u + blk] = pre + c; }
  }
}

// Exclusive scan of the block counts (one workgroup); the piece count and the sentinel.
@compute @workgroup_size(256)
fn pt_scan(@builtin(local_invocation_index) lid: u32) {
  touch();
  let at = u.nblk * 256u;
  var carry = 0u;
  for (var b0 = 0u; b0 < u.nblk; b0 += 256u) {
    var v = 0u;
    if (b0 + lid < u.nblk) { v = msk[at + b0 + lid]; }
    let pre = wg_scan(lid, v);
    let total = wsum[255];
    workgroupBarrier();
    if (b0 + lid < u.nblk) { msk[at + b0 + lid] = carry + pre; }
    carry += total;
    workgroupBarrier();
  }
  if (lid == 0u) {
    atomicStore(&st[0], carry);
    atomicStore(&st[1], 0u);
    atomicStore(&st[2], (carry + 4095u) / 4096u);
    atomicStore(&st[3], 0u);
    pcs[2u * carry] = u.n;
  }
}

// The start byte of each piece, in order.
@compute @workgroup_size(256)
fn pt_write(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
  touch();
  let blk = block_id(wid, nwg);
  var m = 0u;
  if (blk < u.nblk) { m = msk[blk * 256u + lid]; }
  var at = wg_scan(lid, countOneBits(m));
  if (blk >= u.nblk) { return; }
  at += msk[u.nblk * 256u + blk];
  let p0 = blk * 4096u + lid * 16u;
  while (m != 0u) {
    let k = firstTrailingBit(m);
    pcs[2u * at] = p0 + k;
    at++;
    m &= m - 1u;
  }
}

// Each piece's length (the special literal: 0xffffffff); long pieces listed with their scratch.
@compute @workgroup_size(256)
fn pt_len(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
  touch();
  let k = block_id(wid, nwg) * 256u + lid;
  if (k >= atomicLoad(&st[0])) { return; }
  let s = pcs[2u * k];
  let e = pcs[2u * k + 2u];
  if (eot_at(s)) {
    pcs[2u * k + 1u] = NONE;
    return;
  }
  pcs[2u * k + 1u] = e - s;
  if (e - s > u.huge) {
    let q = atomicAdd(&st[3], 1u);
    hug[4u * q] = k;
    hug[4u * q + 1u] = s;
    hug[4u * q + 2u] = e - s;
    cnt[k] = 0u;
  } else if (e - s > SHORT) {
    let q = atomicAdd(&st[1], 1u);
    lng[2u * q] = k;
    lng[2u * q + 1u] = 9u * s;
  }
}

// After bpe_encode's scan: the ids before each huge piece in the batch's compacted ids.
@compute @workgroup_size(64)
fn pt_huge(@builtin(global_invocation_id) gid: vec3<u32>) {
  touch();
  let q = gid.x;
  if (q >= atomicLoad(&st[3])) { return; }
  let k = hug[4u * q];
  let b0 = (k / 4096u) * 4096u;
  var off = cnt[atomicLoad(&st[0]) + k / 4096u];
  for (var i = b0; i < k; i++) { off += cnt[i]; }
  hug[4u * q + 3u] = off;
}
