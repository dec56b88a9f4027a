// The matmul family, fast path: vec4 global loads and stores, read-only operand bindings,
// double-buffered workgroup tiles (one barrier per k-tile), optional split-K.
//   VARIANT 0 matmul_t:  out[M,N] (+)= a[M,K] · b[N,K]ᵀ (+ bias[N])
//   VARIANT 1 matmul:    out[M,N] (+)= a[M,K] · b[K,N]
//   VARIANT 2 matmul_at: out[M,N] (+)= a[K,M]ᵀ · b[K,N]
//     with SWB (matmul_at_swiglu_a): b = silu(gate) ⊙ up computed on load from gu [K, 2N]
// The host uses it only when M, K, N are multiples of 4, every tensor starts on a 16-byte
// boundary of its binding and no two tensors share a binding (otherwise matmul.wgsl runs), so
// a vec4 is either wholly inside or wholly outside a tensor: bounds are checked per vec4.
//
// Standalone module (no preamble: it declares its own bindings, so a, b and bias can be
// read-only and vec4-typed). Workgroup tile 128 x 128, BK = 8 or 16 (host prefix), 256 threads, each owning an
// 8 x 8 register tile (rows ty*4+i and 64+ty*4+i, columns tx*4+j and 64+tx*4+j). Both operand
// tiles live k-major in workgroup memory with a row stride of 132 floats: the compute loop
// reads vec4s without bank conflicts, and a k-contiguous operand (a of matmul/matmul_t, b of
// matmul_t) is transposed on its way in with scalar stores that are conflict-free too (the
// 4-float pad spreads the two k-halves of a warp over all 32 banks). Every thread loads exactly
// BK/8 vec4s of each operand per k-tile, into registers during the previous tile's arithmetic.
// The k loop inside a tile is written out (NVIDIA's driver does not unroll Tint's loops, and a
// rolled loop leaves every workgroup-memory load's latency exposed before its 64 FMAs).
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
@group(0) @binding(1) var<storage, read_write> O: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> A: array<vec4<f32>>;
// Bm's element type BV and BDIV (f32s or f16s per 4-byte unit of the element offset: 4 for
// vec4<f32>, 2 for vec4<f16>) come in the host's prefix: vec4<f16> when matmul_t reads the
// f16 weight mirror (w16.wgsl), converted to f32 on load.
@group(0) @binding(3) var<storage, read> Bm: array<BV>;
@group(0) @binding(4) var<storage, read> BI: array<vec4<f32>>;

const BM: u32 = 128u;
const BN: u32 = 128u;
// BK (8 or 16) comes with VARIANT in the host's prefix
const RS: u32 = 33u;         // row stride in vec4s (132 floats)
const TILE: u32 = BK * RS;   // vec4s per operand tile

var<workgroup> As: array<vec4<f32>, 2u * TILE>; // two buffers of [BK][132 floats]
var<workgroup> Bs: array<vec4<f32>, 2u * TILE>;

// global vec4 of the a tile at k0 for thread tid (zero outside the tensor or split)
fn load_a(tid: u32, j: u32, m0: u32, k0: u32, kend: u32, M: u32, K: u32) -> vec4<f32> {
  if (VARIANT == 2u) {
    let k = k0 + j * 8u + tid / 32u;
    let m = m0 + (tid % 32u) * 4u;
    if (k < kend && m < M) {
      return A[p.oa.y / 4u + k * (M / 4u) + m / 4u];
    }
  } else {
    let m = m0 + tid / 2u;
    let k = k0 + j * 8u + (tid % 2u) * 4u;
    if (k < kend && m < M) {
      return A[p.oa.y / 4u + m * (K / 4u) + k / 4u];
    }
  }
  return vec4<f32>(0.0);
}

fn load_b(tid: u32, j: u32, n0: u32, k0: u32, kend: u32, N: u32, K: u32) -> vec4<f32> {
  if (VARIANT == 0u) {
    let n = n0 + tid / 2u;
    let k = k0 + j * 8u + (tid % 2u) * 4u;
    if (k < kend && n < N) {
      return vec4<f32>(Bm[p.oa.z / BDIV + n * (K / 4u) + k / 4u]);
    }
  } else {
    let k = k0 + j * 8u + tid / 32u;
    let n = n0 + (tid % 32u) * 4u;
    if (k < kend && n < N) {
      if (SWB) { // b = silu(gate) ⊙ up of gu [K, 2N]
        let i = p.oa.z / BDIV + k * (N / 2u) + n / 4u;
        return silu4(vec4<f32>(Bm[i])) * vec4<f32>(Bm[i + N / 4u]);
      }
      return vec4<f32>(Bm[p.oa.z / BDIV + k * (N / 4u) + n / 4u]);
    }
  }
  return vec4<f32>(0.0);
}

// x·σ(x) with σ branch-on-sign stable (exp of −|x| only), as swiglu.wgsl
fn silu4(x: vec4<f32>) -> vec4<f32> {
  let e = exp(-abs(x));
  return x * select(e / (1.0 + e), 1.0 / (1.0 + e), x >= vec4<f32>(0.0));
}

fn store_a(tid: u32, j: u32, buf: u32, v: vec4<f32>) {
  if (VARIANT == 2u) {
    As[buf + (j * 8u + tid / 32u) * RS + tid % 32u] = v;
  } else {
    let m = tid / 2u;
    let k = j * 8u + (tid % 2u) * 4u;
    let q = buf + m / 4u;
    let c = m % 4u;
    As[q + k * RS][c] = v.x;
    As[q + (k + 1u) * RS][c] = v.y;
    As[q + (k + 2u) * RS][c] = v.z;
    As[q + (k + 3u) * RS][c] = v.w;
  }
}

fn store_b(tid: u32, j: u32, buf: u32, v: vec4<f32>) {
  if (VARIANT == 0u) {
    let n = tid / 2u;
    let k = j * 8u + (tid % 2u) * 4u;
    let q = buf + n / 4u;
    let c = n % 4u;
    Bs[q + k * RS][c] = v.x;
    Bs[q + (k + 1u) * RS][c] = v.y;
    Bs[q + (k + 2u) * RS][c] = v.z;
    Bs[q + (k + 3u) * RS][c] = v.w;
  } else {
    Bs[buf + (j * 8u + tid / 32u) * RS + tid % 32u] = v;
  }
}

// out[m, n..n+3] (+)= v (+ bias); N % 4 == 0, so the vec4 is wholly in or out
fn store4(m: u32, n: u32, v: vec4<f32>, M: u32, N: u32, base: u32, single: bool) {
  if (m >= M || n >= N) {
    return;
  }
  let i = base + m * (N / 4u) + n / 4u;
  var y = v;
  if (single) {
    if (p.u[1].x != 0u) {
      y = y + BI[p.oa.w / 4u + n / 4u];
    }
    if (p.u[0].w != 0u) {
      y = y + O[i];
    }
  }
  O[i] = y;
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
  var acc: array<vec4<f32>, 16>;
  var nt = 0u;
  if (kend > kbeg) {
    nt = (kend - kbeg + BK - 1u) / BK;
  }
  if (nt > 0u) {
    store_a(tid, 0u, 0u, load_a(tid, 0u, m0, kbeg, kend, M, K));
    store_b(tid, 0u, 0u, load_b(tid, 0u, n0, kbeg, kend, N, K));
    if (BK > 8u) {
      store_a(tid, 1u, 0u, load_a(tid, 1u, m0, kbeg, kend, M, K));
      store_b(tid, 1u, 0u, load_b(tid, 1u, n0, kbeg, kend, N, K));
    }
  }
  workgroupBarrier();
  for (var t = 0u; t < nt; t = t + 1u) {
    let cur = (t % 2u) * TILE;
    let nxt = TILE - cur;
    let more = t + 1u < nt;
    var ra0 = vec4<f32>(0.0);
    var rb0 = vec4<f32>(0.0);
    var ra1 = vec4<f32>(0.0);
    var rb1 = vec4<f32>(0.0);
    if (more) {
      let k1 = kbeg + (t + 1u) * BK;
      ra0 = load_a(tid, 0u, m0, k1, kend, M, K);
      rb0 = load_b(tid, 0u, n0, k1, kend, N, K);
      if (BK > 8u) {
        ra1 = load_a(tid, 1u, m0, k1, kend, M, K);
        rb1 = load_b(tid, 1u, n0, k1, kend, N, K);
      }
    }
    {
      let a0 = As[cur + 0u * RS + ty];
      let a1 = As[cur + 0u * RS + 16u + ty];
      let b0 = Bs[cur + 0u * RS + tx];
      let b1 = Bs[cur + 0u * RS + 16u + tx];
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
    }
    {
      let a0 = As[cur + 1u * RS + ty];
      let a1 = As[cur + 1u * RS + 16u + ty];
      let b0 = Bs[cur + 1u * RS + tx];
      let b1 = Bs[cur + 1u * RS + 16u + tx];
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
    }
    {
      let a0 = As[cur + 2u * RS + ty];
      let a1 = As[cur + 2u * RS + 16u + ty];
      let b0 = Bs[cur + 2u * RS + tx];
      let b1 = Bs[cur + 2u * RS + 16u + tx];
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
    }
    {
      let a0 = As[cur + 3u * RS + ty];
      let a1 = As[cur + 3u * RS + 16u + ty];
      let b0 = Bs[cur + 3u * RS + tx];
      let b1 = Bs[cur + 3u * RS + 16u + tx];
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
    }
    {
      let a0 = As[cur + 4u * RS + ty];
      let a1 = As[cur + 4u * RS + 16u + ty];
      let b0 = Bs[cur + 4u * RS + tx];
      let b1 = Bs[cur + 4u * RS + 16u + tx];
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
    }
    {
      let a0 = As[cur + 5u * RS + ty];
      let a1 = As[cur + 5u * RS + 16u + ty];
      let b0 = Bs[cur + 5u * RS + tx];
      let b1 = Bs[cur + 5u * RS + 16u + tx];
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
    }
    {
      let a0 = As[cur + 6u * RS + ty];
      let a1 = As[cur + 6u * RS + 16u + ty];
      let b0 = Bs[cur + 6u * RS + tx];
      let b1 = Bs[cur + 6u * RS + 16u + tx];
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
    }
    {
      let a0 = As[cur + 7u * RS + ty];
      let a1 = As[cur + 7u * RS + 16u + ty];
      let b0 = Bs[cur + 7u * RS + tx];
      let b1 = Bs[cur + 7u * RS + 16u + tx];
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
    }
    if (BK > 8u) {
      {
        let a0 = As[cur + 8u * RS + ty];
        let a1 = As[cur + 8u * RS + 16u + ty];
        let b0 = Bs[cur + 8u * RS + tx];
        let b1 = Bs[cur + 8u * RS + 16u + tx];
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
      }
      {
        let a0 = As[cur + 9u * RS + ty];
        let a1 = As[cur + 9u * RS + 16u + ty];
        let b0 = Bs[cur + 9u * RS + tx];
        let b1 = Bs[cur + 9u * RS + 16u + tx];
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
      }
      {
        let a0 = As[cur + 10u * RS + ty];
        let a1 = As[cur + 10u * RS + 16u + ty];
        let b0 = Bs[cur + 10u * RS + tx];
        let b1 = Bs[cur + 10u * RS + 16u + tx];
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
      }
      {
        let a0 = As[cur + 11u * RS + ty];
        let a1 = As[cur + 11u * RS + 16u + ty];
        let b0 = Bs[cur + 11u * RS + tx];
        let b1 = Bs[cur + 11u * RS + 16u + tx];
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
      }
      {
        let a0 = As[cur + 12u * RS + ty];
        let a1 = As[cur + 12u * RS + 16u + ty];
        let b0 = Bs[cur + 12u * RS + tx];
        let b1 = Bs[cur + 12u * RS + 16u + tx];
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
      }
      {
        let a0 = As[cur + 13u * RS + ty];
        let a1 = As[cur + 13u * RS + 16u + ty];
        let b0 = Bs[cur + 13u * RS + tx];
        let b1 = Bs[cur + 13u * RS + 16u + tx];
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
      }
      {
        let a0 = As[cur + 14u * RS + ty];
        let a1 = As[cur + 14u * RS + 16u + ty];
        let b0 = Bs[cur + 14u * RS + tx];
        let b1 = Bs[cur + 14u * RS + 16u + tx];
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
      }
      {
        let a0 = As[cur + 15u * RS + ty];
        let a1 = As[cur + 15u * RS + 16u + ty];
        let b0 = Bs[cur + 15u * RS + tx];
        let b1 = Bs[cur + 15u * RS + 16u + tx];
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
      }
    }
    if (more) {
      store_a(tid, 0u, nxt, ra0);
      store_b(tid, 0u, nxt, rb0);
      if (BK > 8u) {
        store_a(tid, 1u, nxt, ra1);
        store_b(tid, 1u, nxt, rb1);
      }
    }
    workgroupBarrier();
  }
  let single = nwg.z == 1u;
  let base = p.oa.x / 4u + wid.z * (M * (N / 4u));
  let mb = m0 + ty * 4u;
  let nb = n0 + tx * 4u;
  store4(mb, nb, acc[0], M, N, base, single);
  store4(mb, nb + 64u, acc[1], M, N, base, single);
  store4(mb + 1u, nb, acc[2], M, N, base, single);
  store4(mb + 1u, nb + 64u, acc[3], M, N, base, single);
  store4(mb + 2u, nb, acc[4], M, N, base, single);
  store4(mb + 2u, nb + 64u, acc[5], M, N, base, single);
  store4(mb + 3u, nb, acc[6], M, N, base, single);
  store4(mb + 3u, nb + 64u, acc[7], M, N, base, single);
  store4(mb + 64u, nb, acc[8], M, N, base, single);
  store4(mb + 64u, nb + 64u, acc[9], M, N, base, single);
  store4(mb + 65u, nb, acc[10], M, N, base, single);
  store4(mb + 65u, nb + 64u, acc[11], M, N, base, single);
  store4(mb + 66u, nb, acc[12], M, N, base, single);
  store4(mb + 66u, nb + 64u, acc[13], M, N, base, single);
  store4(mb + 67u, nb, acc[14], M, N, base, single);
  store4(mb + 67u, nb + 64u, acc[15], M, N, base, single);
}
