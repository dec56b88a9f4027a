// The matmul family, fast path: register-tiled, one or two workgroup tile buffers, any shape.
//   VARIANT 0 matmul_t:  out[M,N] (+)= a[M,K] · b[N,K]ᵀ (+ bias[N])
//   VARIANT 1 matmul:    out[M,N] (+)= a[M,K] · b[K,N] (+ bias[N])
//   VARIANT 2 matmul_at: out[M,N] (+)= a[K,M]ᵀ · b[K,N]
//     with SWB (matmul_at_swiglu_a): b = silu(gate) ⊙ up computed on load from gu [K, 2N]
// fp32 accumulation throughout; bias is fp32, out fp32 or f16, written / read per element (any N,
// any element offset: the epilogue is a small part of the work).
//
// Standalone module (no preamble). The host's prefix defines, besides the constants below,
// the operand bindings 2 (A) and 3 (Bm) and their fetch functions
//   ga(e, n) / gb(e, n) -> vec4<f32>: elements e .. e+3 of the operand (e counted from the
//   tensor's start along its contiguous dimension), only the first min(n, 4) of them valid
//   (the rest read as 0);
// and the output binding 1 (O) with its accessors ldo(i) -> f32 / sto(i, v: f32): array<f32>, or
// array<f16> for an f16 activation output (matmul_t's Y, matmul's dX with f16 activations,
// c->act_f16; the element offset p.oa.x then counts halves, the store gives ±inf beyond ±65504).
// Split-K partial sums are always fp32.
// Where the operand's contiguous dimension is a multiple of 4 and the tensor starts on a 16-byte
// boundary, the binding is array<vec4<f32>> (or array<vec4<f16>>, the f16 weight mirror) and a
// fetch is one vector load (n is then always ≥ 4 or the vec4 is not fetched at all); otherwise it is
// array<f32> / array<f16> and a fetch is up to four scalar loads. f16 operands (ShaderF16 and the
// weight mirror, w16.wgsl) are converted to f32 on load.
//
// Constants from the prefix: VARIANT, SWB, BK (k-tile depth, 8 or 16), TM and TN (rows and columns
// of the register tile per thread, 8 or 16, not both 16), NBUF (workgroup tile buffers: 2 =
// one barrier per k-tile, 1 = two; the host's default is 1, faster on the H200, mm_config).
// 256 threads in a 16 x 16 grid (tx = tid % 16, ty = tid / 16); the workgroup tile is
// BM x BN = 16·TM x 16·TN; thread (tx, ty) owns rows ty*4 + {0..3} + 64·g (g < TM/4) and
// columns tx*4 + {0..3} + 64·h (h < TN/4), so the compute loop reads its operands from
// workgroup memory as vec4s. Both operand tiles live k-major in workgroup memory, BM (BN) floats
// per k row, unpadded (8 x 16 / BK 16 takes 16·(128 + 256)·4 = 24 576 bytes per buffer: two fit
// the H200 Dawn's maxComputeWorkgroupStorageSize of 49 152 exactly). An m-contiguous operand
// (a of matmul_at, b of matmul and matmul_at) is stored as fetched, one vec4 per thread,
// consecutive threads at consecutive vec4s. A k-contiguous operand (a of matmul / matmul_t, b of
// matmul_t) is transposed on its way in: the vec4 of fetch j, k .. k+3 of row m
// (k = 8·(j % (BK/8)) + 4·(tid % 2), m = tid/2 + 128·(j / (BK/8))), is stored as four scalars,
// one per k row, so each store instruction of a warp writes 16 consecutive m (starting at a
// multiple of 16) at two k's four apart. Rows are a multiple of 32 floats long, so unswizzled
// those two halves would hit the same 16 banks; the tile therefore keeps element (k, m) in vec4
// column (m/4) XOR swz(k), swz(k) = 4·((k/4) & 1), which moves the odd half by 16 floats onto
// the other 16 banks. In the compute loop the XOR only permutes vec4 columns within aligned
// groups of 8 (conflict-free as before), and k is a constant in each kstep call: ktile picks
// the thread's column ty or ty ^ 4 (tx or tx ^ 4) per group of four k's. The next k-tile is
// fetched into registers during the current tile's arithmetic.
// The k loop inside a tile is written out as calls of kstep with constant arguments (NVIDIA's
// driver does not unroll Tint's loops; it does inline functions, and a rolled loop leaves every
// workgroup-memory load's latency exposed before its FMAs).
// Split-K (wid.z = split s of u5 k's each): split s writes plain partial sums to
// out + s*M*N (the host then reduces them); a single split honors acc and bias.

struct U {
  oa: vec4<u32>,
  ob: vec4<u32>,
  sa: vec4<u32>,
  sb: vec4<u32>,
  u: array<vec4<u32>, 4>,
}
@group(0) @binding(0) var<uniform> p: U;
@group(0) @binding(4) var<storage, read> BI: array<f32>;

const BM: u32 = 16u * TM;
const BN: u32 = 16u * TN;
const RA: u32 = BM / 4u;          // row stride of the a tile in vec4s (BM floats, no padding)
const RB: u32 = BN / 4u;
// vec4-column swizzles of the k rows with (k/4) odd: 4 for a transposed tile, 0 for the others
const XA: u32 = select(4u, 0u, VARIANT == 2u);
const XB: u32 = select(0u, 4u, VARIANT == 0u);
const TA: u32 = BK * RA;          // vec4s per a tile buffer
const TB: u32 = BK * RB;
const LA: u32 = BM * BK / 1024u;  // vec4 fetches of a per thread and k-tile (1 .. 4)
const LB: u32 = BN * BK / 1024u;

var<workgroup> As: array<vec4<f32>, NBUF * TA>;
var<workgroup> Bs: array<vec4<f32>, NBUF * TB>;
// the register tile: acc for rows g < 2 and columns h < 2; acc2 for columns h = 2, 3 (TN 16)
// or rows g = 2, 3 (TM 16); index 2·r + h' for row r (0..7) of the half and column group h'
var<private> acc: array<vec4<f32>, 16>;
var<private> acc2: array<vec4<f32>, 16>;

// x·σ(x) with σ branch-on-sign stable (exp of −|x| only), as swiglu.wgsl
fn silu4(x: vec4<f32>) -> vec4<f32> {
  let e = exp(-abs(x));
  return x * select(e / (1.0 + e), 1.0 / (1.0 + e), x >= vec4<f32>(0.0));
}

// fetch j (< LA) of the a tile at k0 for thread tid (zero outside the tensor or split)
fn load_a(tid: u32, j: u32, m0: u32, k0: u32, kend: u32, M: u32, K: u32) -> vec4<f32> {
  if (VARIANT == 2u) { // a [K, M], m contiguous: BM/4 vec4s per k row
    let v = j * 256u + tid;
    let k = k0 + v / (BM / 4u);
    let m = m0 + (v % (BM / 4u)) * 4u;
    if (k < kend && m < M) {
      return ga(k * M + m, M - m);
    }
  } else { // a [M, K], k contiguous: 128 rows x 8 k per fetch
    let m = m0 + tid / 2u + 128u * (j / (BK / 8u));
    let k = k0 + (j % (BK / 8u)) * 8u + (tid % 2u) * 4u;
    if (k < kend && m < M) {
      return ga(m * K + k, kend - k);
    }
  }
  return vec4<f32>(0.0);
}

fn load_b(tid: u32, j: u32, n0: u32, k0: u32, kend: u32, N: u32, K: u32) -> vec4<f32> {
  if (VARIANT == 0u) { // b [N, K], k contiguous
    let n = n0 + tid / 2u + 128u * (j / (BK / 8u));
    let k = k0 + (j % (BK / 8u)) * 8u + (tid % 2u) * 4u;
    if (k < kend && n < N) {
      return gb(n * K + k, kend - k);
    }
  } else { // b [K, N], n contiguous
    let v = j * 256u + tid;
    let k = k0 + v / (BN / 4u);
    let n = n0 + (v % (BN / 4u)) * 4u;
    if (k < kend && n < N) {
      if (SWB) { // b = silu(gate) ⊙ up of gu [K, 2N]
        let e = k * 2u * N + n;
        return silu4(gb(e, N - n)) * gb(e + N, N - n);
      }
      return gb(k * N + n, N - n);
    }
  }
  return vec4<f32>(0.0);
}

// the vec4-column swizzle of k row k (the same for k .. k+3 when k % 4 == 0)
fn swz(k: u32) -> u32 {
  return ((k / 4u) & 1u) * 4u;
}

// store a fetched vec4 into the a tile buffer at vec4 index buf (fetch j, as load_a)
fn store_a(tid: u32, j: u32, buf: u32, v: vec4<f32>) {
  if (VARIANT == 2u) { // as fetched: vec4 w = j·256 + tid at row w / RA, column w % RA
    As[buf + j * 256u + tid] = v;
  } else { // transposed and swizzled: element (k + i, m) at vec4 column (m/4) ^ swz(k), lane m % 4
    let m = tid / 2u + 128u * (j / (BK / 8u));
    let k = (j % (BK / 8u)) * 8u + (tid % 2u) * 4u;
    let q = buf + ((m / 4u) ^ swz(k));
    let c = m % 4u;
    As[q + k * RA][c] = v.x;
    As[q + (k + 1u) * RA][c] = v.y;
    As[q + (k + 2u) * RA][c] = v.z;
    As[q + (k + 3u) * RA][c] = v.w;
  }
}

fn store_b(tid: u32, j: u32, buf: u32, v: vec4<f32>) {
  if (VARIANT == 0u) { // transposed and swizzled, as store_a
    let n = tid / 2u + 128u * (j / (BK / 8u));
    let k = (j % (BK / 8u)) * 8u + (tid % 2u) * 4u;
    let q = buf + ((n / 4u) ^ swz(k));
    let c = n % 4u;
    Bs[q + k * RB][c] = v.x;
    Bs[q + (k + 1u) * RB][c] = v.y;
    Bs[q + (k + 2u) * RB][c] = v.z;
    Bs[q + (k + 3u) * RB][c] = v.w;
  } else { // as fetched
    Bs[buf + j * 256u + tid] = v;
  }
}

// One k step of the register tile: ia / ib are the vec4 indices of the thread's first a / b
// vec4 in row k of the current tiles (swizzle applied; +16, +32, +48 keep it, as the XOR only
// touches bit 2 of a column below 16).
fn kstep(ia: u32, ib: u32) {
  let a0 = As[ia];
  let a1 = As[ia + 16u];
  let b0 = Bs[ib];
  let b1 = Bs[ib + 16u];
  acc[0] = fma(vec4<f32>(a0.x), b0, acc[0]);
  acc[1] = fma(vec4<f32>(a0.x), b1, acc[1]);
  acc[2] = fma(vec4<f32>(a0.y), b0, acc[2]);
  acc[3] = fma(vec4<f32>(a0.y), b1, acc[3]);
  acc[4] = fma(vec4<f32>(a0.z), b0, acc[4]);
  acc[5] = fma(vec4<f32>(a0.z), b1, acc[5]);
  acc[6] = fma(vec4<f32>(a0.w), b0, acc[6]);
  acc[7] = fma(vec4<f32>(a0.w), b1, acc[7]);
  acc[8] = fma(vec4<f32>(a1.x), b0, acc[8]);
  acc[9] = fma(vec4<f32>(a1.x), b1, acc[9]);
  acc[10] = fma(vec4<f32>(a1.y), b0, acc[10]);
  acc[11] = fma(vec4<f32>(a1.y), b1, acc[11]);
  acc[12] = fma(vec4<f32>(a1.z), b0, acc[12]);
  acc[13] = fma(vec4<f32>(a1.z), b1, acc[13]);
  acc[14] = fma(vec4<f32>(a1.w), b0, acc[14]);
  acc[15] = fma(vec4<f32>(a1.w), b1, acc[15]);
  if (TN == 16u) { // columns 128 + tx*4 and 192 + tx*4
    let b2 = Bs[ib + 32u];
    let b3 = Bs[ib + 48u];
    acc2[0] = fma(vec4<f32>(a0.x), b2, acc2[0]);
    acc2[1] = fma(vec4<f32>(a0.x), b3, acc2[1]);
    acc2[2] = fma(vec4<f32>(a0.y), b2, acc2[2]);
    acc2[3] = fma(vec4<f32>(a0.y), b3, acc2[3]);
    acc2[4] = fma(vec4<f32>(a0.z), b2, acc2[4]);
    acc2[5] = fma(vec4<f32>(a0.z), b3, acc2[5]);
    acc2[6] = fma(vec4<f32>(a0.w), b2, acc2[6]);
    acc2[7] = fma(vec4<f32>(a0.w), b3, acc2[7]);
    acc2[8] = fma(vec4<f32>(a1.x), b2, acc2[8]);
    acc2[9] = fma(vec4<f32>(a1.x), b3, acc2[9]);
    acc2[10] = fma(vec4<f32>(a1.y), b2, acc2[10]);
    acc2[11] = fma(vec4<f32>(a1.y), b3, acc2[11]);
    acc2[12] = fma(vec4<f32>(a1.z), b2, acc2[12]);
    acc2[13] = fma(vec4<f32>(a1.z), b3, acc2[13]);
    acc2[14] = fma(vec4<f32>(a1.w), b2, acc2[14]);
    acc2[15] = fma(vec4<f32>(a1.w), b3, acc2[15]);
  }
  if (TM == 16u) { // rows 128 + ty*4 + i and 192 + ty*4 + i
    let a2 = As[ia + 32u];
    let a3 = As[ia + 48u];
    acc2[0] = fma(vec4<f32>(a2.x), b0, acc2[0]);
    acc2[1] = fma(vec4<f32>(a2.x), b1, acc2[1]);
    acc2[2] = fma(vec4<f32>(a2.y), b0, acc2[2]);
    acc2[3] = fma(vec4<f32>(a2.y), b1, acc2[3]);
    acc2[4] = fma(vec4<f32>(a2.z), b0, acc2[4]);
    acc2[5] = fma(vec4<f32>(a2.z), b1, acc2[5]);
    acc2[6] = fma(vec4<f32>(a2.w), b0, acc2[6]);
    acc2[7] = fma(vec4<f32>(a2.w), b1, acc2[7]);
    acc2[8] = fma(vec4<f32>(a3.x), b0, acc2[8]);
    acc2[9] = fma(vec4<f32>(a3.x), b1, acc2[9]);
    acc2[10] = fma(vec4<f32>(a3.y), b0, acc2[10]);
    acc2[11] = fma(vec4<f32>(a3.y), b1, acc2[11]);
    acc2[12] = fma(vec4<f32>(a3.z), b0, acc2[12]);
    acc2[13] = fma(vec4<f32>(a3.z), b1, acc2[13]);
    acc2[14] = fma(vec4<f32>(a3.w), b0, acc2[14]);
    acc2[15] = fma(vec4<f32>(a3.w), b1, acc2[15]);
  }
}

// The whole k-tile (BK steps) from tile buffers ca (a) and cb (b) for thread (tx, ty): rows
// k with (k/4) even read vec4 column ty (tx), the others ty ^ XA (tx ^ XB).
fn ktile(ca: u32, cb: u32, tx: u32, ty: u32) {
  let a0 = ca + ty;
  let a1 = ca + (ty ^ XA);
  let b0 = cb + tx;
  let b1 = cb + (tx ^ XB);
  kstep(a0 + 0u * RA, b0 + 0u * RB);
  kstep(a0 + 1u * RA, b0 + 1u * RB);
  kstep(a0 + 2u * RA, b0 + 2u * RB);
  kstep(a0 + 3u * RA, b0 + 3u * RB);
  kstep(a1 + 4u * RA, b1 + 4u * RB);
  kstep(a1 + 5u * RA, b1 + 5u * RB);
  kstep(a1 + 6u * RA, b1 + 6u * RB);
  kstep(a1 + 7u * RA, b1 + 7u * RB);
  if (BK > 8u) {
    kstep(a0 + 8u * RA, b0 + 8u * RB);
    kstep(a0 + 9u * RA, b0 + 9u * RB);
    kstep(a0 + 10u * RA, b0 + 10u * RB);
    kstep(a0 + 11u * RA, b0 + 11u * RB);
    kstep(a1 + 12u * RA, b1 + 12u * RB);
    kstep(a1 + 13u * RA, b1 + 13u * RB);
    kstep(a1 + 14u * RA, b1 + 14u * RB);
    kstep(a1 + 15u * RA, b1 + 15u * RB);
  }
}

// out[m, n..n+3] (+)= v (+ bias), per element (columns at or past N are not written)
fn store4(m: u32, n: u32, v: vec4<f32>, M: u32, N: u32, base: u32, single: bool) {
  if (m >= M) {
    return;
  }
  let i = base + m * N + n;
  for (var j = 0u; j < 4u; j = j + 1u) {
    if (n + j < N) {
      var y = v[j];
      if (single) {
        if (p.u[1].x != 0u) {
          y = y + BI[p.oa.w + n + j];
        }
        if (p.u[0].w != 0u) {
          y = y + ldo(i + j);
        }
      }
      sto(i + j, y);
    }
  }
}

// rows mb + {0..3} (+ 64) from acc-like array half q (0: acc, 1: acc2) at columns nb, nb + 64
fn store_half(q: u32, mb: u32, nb: u32, M: u32, N: u32, base: u32, single: bool) {
  var t: array<vec4<f32>, 16>;
  if (q == 0u) {
    t = acc;
  } else {
    t = acc2;
  }
  store4(mb, nb, t[0], M, N, base, single);
  store4(mb, nb + 64u, t[1], M, N, base, single);
  store4(mb + 1u, nb, t[2], M, N, base, single);
  store4(mb + 1u, nb + 64u, t[3], M, N, base, single);
  store4(mb + 2u, nb, t[4], M, N, base, single);
  store4(mb + 2u, nb + 64u, t[5], M, N, base, single);
  store4(mb + 3u, nb, t[6], M, N, base, single);
  store4(mb + 3u, nb + 64u, t[7], M, N, base, single);
  store4(mb + 64u, nb, t[8], M, N, base, single);
  store4(mb + 64u, nb + 64u, t[9], M, N, base, single);
  store4(mb + 65u, nb, t[10], M, N, base, single);
  store4(mb + 65u, nb + 64u, t[11], M, N, base, single);
  store4(mb + 66u, nb, t[12], M, N, base, single);
  store4(mb + 66u, nb + 64u, t[13], M, N, base, single);
  store4(mb + 67u, nb, t[14], M, N, base, single);
  store4(mb + 67u, nb + 64u, t[15], M, N, base, single);
}

@compute @workgroup_size(256)
fn matmul_fast(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32,
               @builtin(num_workgroups) nwg: vec3<u32>) {
  let M = p.u[0].x;
  let K = p.u[0].y;
  let N = p.u[0].z;
  let ks = p.u[1].y; // k's per split (multiple of BK)
  let m0 = wid.y * BM;
  let n0 = wid.x * BN;
  let kbeg = wid.z * ks;
  let kend = min(K, kbeg + ks);
  let tx = tid % 16u;
  let ty = tid / 16u;
  var nt = 0u;
  if (kend > kbeg) {
    nt = (kend - kbeg + BK - 1u) / BK;
  }
  if (nt > 0u) {
    store_a(tid, 0u, 0u, load_a(tid, 0u, m0, kbeg, kend, M, K));
    store_b(tid, 0u, 0u, load_b(tid, 0u, n0, kbeg, kend, N, K));
    if (LA > 1u) {
      store_a(tid, 1u, 0u, load_a(tid, 1u, m0, kbeg, kend, M, K));
    }
    if (LB > 1u) {
      store_b(tid, 1u, 0u, load_b(tid, 1u, n0, kbeg, kend, N, K));
    }
    if (LA > 2u) {
      store_a(tid, 2u, 0u, load_a(tid, 2u, m0, kbeg, kend, M, K));
      store_a(tid, 3u, 0u, load_a(tid, 3u, m0, kbeg, kend, M, K));
    }
    if (LB > 2u) {
      store_b(tid, 2u, 0u, load_b(tid, 2u, n0, kbeg, kend, N, K));
      store_b(tid, 3u, 0u, load_b(tid, 3u, n0, kbeg, kend, N, K));
    }
  }
  workgroupBarrier();
  for (var t = 0u; t < nt; t = t + 1u) {
    var ca = 0u;
    var cb = 0u;
    var nxa = 0u;
    var nxb = 0u;
    if (NBUF == 2u) {
      ca = (t % 2u) * TA;
      cb = (t % 2u) * TB;
      nxa = TA - ca;
      nxb = TB - cb;
    }
    let more = t + 1u < nt;
    var ra0 = vec4<f32>(0.0);
    var ra1 = vec4<f32>(0.0);
    var ra2 = vec4<f32>(0.0);
    var ra3 = vec4<f32>(0.0);
    var rb0 = vec4<f32>(0.0);
    var rb1 = vec4<f32>(0.0);
    var rb2 = vec4<f32>(0.0);
    var rb3 = vec4<f32>(0.0);
    if (more) {
      let k1 = kbeg + (t + 1u) * BK;
      ra0 = load_a(tid, 0u, m0, k1, kend, M, K);
      rb0 = load_b(tid, 0u, n0, k1, kend, N, K);
      if (LA > 1u) {
        ra1 = load_a(tid, 1u, m0, k1, kend, M, K);
      }
      if (LB > 1u) {
        rb1 = load_b(tid, 1u, n0, k1, kend, N, K);
      }
      if (LA > 2u) {
        ra2 = load_a(tid, 2u, m0, k1, kend, M, K);
        ra3 = load_a(tid, 3u, m0, k1, kend, M, K);
      }
      if (LB > 2u) {
        rb2 = load_b(tid, 2u, n0, k1, kend, N, K);
        rb3 = load_b(tid, 3u, n0, k1, kend, N, K);
      }
    }
    ktile(ca, cb, tx, ty);
    if (NBUF == 1u) {
      workgroupBarrier();
    }
    if (more) {
      store_a(tid, 0u, nxa, ra0);
      store_b(tid, 0u, nxb, rb0);
      if (LA > 1u) {
        store_a(tid, 1u, nxa, ra1);
      }
      if (LB > 1u) {
        store_b(tid, 1u, nxb, rb1);
      }
      if (LA > 2u) {
        store_a(tid, 2u, nxa, ra2);
        store_a(tid, 3u, nxa, ra3);
      }
      if (LB > 2u) {
        store_b(tid, 2u, nxb, rb2);
        store_b(tid, 3u, nxb, rb3);
      }
    }
    workgroupBarrier();
  }
  let single = nwg.z == 1u;
  let base = p.oa.x + wid.z * (M * N);
  let mb = m0 + ty * 4u;
  let nb = n0 + tx * 4u;
  store_half(0u, mb, nb, M, N, base, single);
  if (TN == 16u) {
    store_half(1u, mb, nb + 128u, M, N, base, single);
  }
  if (TM == 16u) {
    store_half(1u, mb + 128u, nb, M, N, base, single);
  }
}
