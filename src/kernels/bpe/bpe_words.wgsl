// Word counting for BPE training on the GPU (host: src/tokenizer/tok_webgpu_words.c).
// The same unique pre-tokens ("words") and counts as the CPU's tz_count_words
// (src/tokenizer/tok_train.c): the GPT-2 pattern's pieces of the text, documents split at
// <|endoftext|>; here the pieces come from bpe_pretok.wgsl, batch by batch, and only words of two
// or more bytes are kept (a single byte holds no pair: the trainer drops those words either way).
//
// A hash table of unique words, filled by one thread per piece: the slot's key is a 32-bit hash
// of the bytes (h1) and its place in the table comes from a second, independent hash (h2), so two
// different words share a slot only when h1 agrees and their probe runs meet. The first thread to
// claim a slot copies the word's bytes into the symbol arena (one u32 per byte: the trainer's
// `sym` layout) and records offset and length; every piece adds 1 to the slot's count. wc_verify
// (the next dispatch) compares every piece with its slot's word byte for byte and raises a flag on
// any difference, so the result is exact or the host counts on the CPU instead; it never happened
// on real text (a test forces it with a 4-bit key, u.keymask, that also decides the home slot).
//
//   u      keymask: bits of h1 kept in the key (0xffffffff; tests: 15), slots - 1, arena capacity
//          (u32), max words (the table's load limit)
//   text   the batch's bytes, 4 per u32 (bpe_pretok's input)
//   pcs    bpe_pretok's pieces: start byte, length (0xffffffff: the special literal)
//   pst    bpe_pretok's state: pst[0] = pieces in this batch
//   tab    4 u32 per slot: key (EMPTY = free), count, arena offset, length
//   arena  the words' bytes, one per u32, word after word (becomes the trainer's sym)
//   wst    wst[0] arena used, wst[1] words, wst[2] flags (1 a word differs from its slot's,
//          2 arena full, 4 table above its load limit); wst[3] words compacted
//   words  out (wc_compact): per word offset, length, count, 0 (the trainer's words layout)
struct U {
  keymask: u32,
  smask: u32,
  arena_cap: u32,
  max_words: u32,
}
@group(0) @binding(0) var<uniform> u: U;
@group(0) @binding(1) var<storage, read> text: array<u32>;
@group(0) @binding(2) var<storage, read> pcs: array<u32>;
@group(0) @binding(3) var<storage, read> pst: array<u32>;
@group(0) @binding(4) var<storage, read_write> tab: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> arena: array<u32>;
@group(0) @binding(6) var<storage, read_write> wst: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> words: array<u32>;

const EMPTY: u32 = 0xffffffffu;

fn touch() {
  _ = u;
  _ = &text;
  _ = &pcs;
  _ = &pst;
  _ = &tab;
  _ = &arena;
  _ = &wst;
  _ = &words;
}

fn tb(i: u32) -> u32 { return (text[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu; }

fn hmix(x: u32) -> u32 {
  var h = x * 0x9e3779b1u;
  h = h ^ (h >> 15u);
  h = h * 0x85ebca77u;
  return h ^ (h >> 13u);
}

// The piece's key (h1: FNV-1a, masked) and home slot (h2: a polynomial hash), both mixed with
// the length.
var<private> key: u32;
var<private> home: u32;

fn hash_piece(s: u32, l: u32) {
  var h1 = 0x811c9dc5u;
  var h2 = l;
  for (var j = 0u; j < l; j++) {
    let b = tb(s + j);
    h1 = (h1 ^ b) * 0x01000193u;
    h2 = h2 * 31u + b + 1u;
  }
  key = hmix(h1 ^ (l * 0x9e3779b9u)) & u.keymask;
  if (key == EMPTY) { key = 0xfffffffeu; }
  home = hmix(h2 + 0x632be5abu) & u.smask;
  if (u.keymask != 0xffffffffu) { home = key & u.smask; } // tests: equal keys meet on one slot
}

// Piece k of the batch into ps / pl, hashed; false for pieces no word comes from (the special
// literal, single bytes).
var<private> ps: u32;
var<private> pl: u32;

fn load_piece(k: u32) -> bool {
  ps = pcs[2u * k];
  pl = pcs[2u * k + 1u];
  if (pl == EMPTY || pl < 2u) { return false; }
  hash_piece(ps, pl);
  return true;
}

// The thread's index in the (x, y) grid, and the grid's size: wc_insert / wc_verify stride over
// the batch's pieces (the host dispatches a fixed grid), wc_clear / wc_compact take a slot each.
fn grid_index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 { return (wid.y * nwg.x + wid.x) * 256u + lid; }
fn grid_size(nwg: vec3<u32>) -> u32 { return nwg.x * nwg.y * 256u; }

@compute @workgroup_size(256)
fn wc_insert(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
  touch();
  let np = pst[0];
  for (var k = grid_index(wid, nwg, lid); k < np; k += grid_size(nwg)) {
    // Once the table passed its load limit or the arena is full the host counts on the CPU:
    // stop. (Going on, every new word probed a full table to its end: 3 MB of unique words took
    // 100 s on lavapipe instead of 2.)
    if ((atomicLoad(&wst[2]) & 6u) != 0u) { return; }
    if (!load_piece(k)) { continue; }
    let s = ps;
    let l = pl;
    var slot = home;
    for (var probe = 0u; probe <= u.smask; probe++) {
      if ((probe & 63u) == 63u && (atomicLoad(&wst[2]) & 6u) != 0u) { return; }
      let k0 = atomicLoad(&tab[4u * slot]);
      if (k0 == key) {
        atomicAdd(&tab[4u * slot + 1u], 1u);
        break;
      }
      if (k0 == EMPTY) {
        let r = atomicCompareExchangeWeak(&tab[4u * slot], EMPTY, key);
        if (r.exchanged) { // this piece's word owns the slot: its bytes go into the arena
          let nw = atomicAdd(&wst[1], 1u);
          if (nw >= u.max_words) { atomicOr(&wst[2], 4u); }
          let off = atomicAdd(&wst[0], l);
          if (off + l > u.arena_cap || off + l < off) {
            atomicOr(&wst[2], 2u);
          } else {
            for (var j = 0u; j < l; j++) { arena[off + j] = tb(s + j); }
          }
          atomicStore(&tab[4u * slot + 2u], off);
          atomicStore(&tab[4u * slot + 3u], l);
          atomicAdd(&tab[4u * slot + 1u], 1u);
          break;
        }
        if (r.old_value == key) {
          atomicAdd(&tab[4u * slot + 1u], 1u);
          break;
        }
        if (r.old_value == EMPTY) { probe--; continue; } // spurious failure: retry this slot
      }
      slot = (slot + 1u) & u.smask;
    }
  }
}

// Every piece against its slot's word (written by wc_insert in the previous dispatch).
@compute @workgroup_size(256)
fn wc_verify(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
  touch();
  if ((atomicLoad(&wst[2]) & 6u) != 0u) { return; } // already failed: the host counts on the CPU
  let np = pst[0];
  for (var k = grid_index(wid, nwg, lid); k < np; k += grid_size(nwg)) {
    if (!load_piece(k)) { continue; }
    let s = ps;
    let l = pl;
    var slot = home;
    var same = false;
    for (var probe = 0u; probe <= u.smask; probe++) {
      let k0 = atomicLoad(&tab[4u * slot]);
      if (k0 == key) {
        let off = atomicLoad(&tab[4u * slot + 2u]);
        same = atomicLoad(&tab[4u * slot + 3u]) == l;
        for (var j = 0u; j < l && same; j++) { same = arena[off + j] == tb(s + j); }
        break;
      }
      if (k0 == EMPTY) { break; }
      slot = (slot + 1u) & u.smask;
    }
    if (!same) { atomicOr(&wst[2], 1u); }
  }
}

// The table's words into the trainer's word array (order: whichever thread gets there first; the
// trainer's result does not depend on the order of its words).
@compute @workgroup_size(256)
fn wc_compact(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
  touch();
  let slot = grid_index(wid, nwg, lid);
  if (slot > u.smask || atomicLoad(&tab[4u * slot]) == EMPTY) { return; }
  let w = atomicAdd(&wst[3], 1u);
  words[4u * w] = atomicLoad(&tab[4u * slot + 2u]);
  words[4u * w + 1u] = atomicLoad(&tab[4u * slot + 3u]);
  words[4u * w + 2u] = atomicLoad(&tab[4u * slot + 1u]);
  words[4u * w + 3u] = 0u;
}

// The table starts empty (key EMPTY, count 0).
@compute @workgroup_size(256)
fn wc_clear(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
  touch();
  let slot = grid_index(wid, nwg, lid);
  if (slot > u.smask) { return; }
  atomicStore(&tab[4u * slot], EMPTY);
  atomicStore(&tab[4u * slot + 1u], 0u);
}
