// The matmul family, one tiled kernel specialized by the host-defined constant VARIANT:
//   0 matmul_t:  out[M,N] (+)= a[M,K] · b[N,K]ᵀ (+ bias[N])   forward Y = X·Wᵀ + b
//   1 matmul:    out[M,N] (+)= a[M,K] · b[K,N]                dX = dY·W
//   2 matmul_at: out[M,N] (+)= a[K,M]ᵀ · b[K,N]               dW = dYᵀ·X
//     with SWB (matmul_at_swiglu_a): b = silu(gate) ⊙ up from gu [K, 2N], computed on load
// Workgroup tile BM x BN (128 x 128), BK = 8 deep, 256 threads each owning an 8 x 8 register
// tile (two 4-row and two 4-column groups 64 apart, so shared-memory reads are vec4 and
// conflict-free). Global loads are coalesced for either operand layout: threads run along
// the operand's contiguous dimension (k for a row-major [M,K] operand, m or n for a
// transposed one) and the tile is stored k-major in shared memory. Any shape: out-of-range
// elements load as 0 and are not stored. acc = 1 adds to out (parameter gradients).

// VARIANT and DIRECT are defined by the host in a prefix (const VARIANT: u32 = 0u; const
// DIRECT: bool = true;). DIRECT: the host bound out, a, b, bias at bindings 0..3 (no two share
// a buffer range), so loads index them directly instead of through ld()'s switch.
const BM: u32 = 128u;
const BN: u32 = 128u;
const BK: u32 = 16u;

// args 0 out, 1 a, 2 b, 3 bias; u0 M, u1 K, u2 N, u3 acc, u4 has_bias

var<workgroup> As: array<vec4<f32>, 512>; // [BK][BM/4]
var<workgroup> Bs: array<vec4<f32>, 512>; // [BK][BN/4]

fn load_a(m: u32, k: u32, M: u32, K: u32) -> f32 {
  if (m >= M || k >= K) {
    return 0.0;
  }
  var i = m * K + k;
  if (VARIANT == 2u) {
    i = k * M + m;
  }
  if (DIRECT) {
    return B1[p.oa.y + i];
  }
  return ld(1u, i);
}

fn load_b(k: u32, n: u32, K: u32, N: u32) -> f32 {
  if (n >= N || k >= K) {
    return 0.0;
  }
  if (SWB) { // b = silu(gate) ⊙ up of gu [K, 2N] (matmul_at_swiglu_a)
    let i = k * 2u * N + n;
    var g = 0.0;
    var u = 0.0;
    if (DIRECT) {
      g = B2[p.oa.z + i];
      u = B2[p.oa.z + i + N];
    } else {
      g = ld(2u, i);
      u = ld(2u, i + N);
    }
    return g * sigmoid_stable(g) * u;
  }
  var i = k * N + n;
  if (VARIANT == 0u) {
    i = n * K + k;
  }
  if (DIRECT) {
    return B2[p.oa.z + i];
  }
  return ld(2u, i);
}

// out[m, n..n+3] (+)= v (+ bias), each column bounds-checked
fn store4(m: u32, n: u32, v: vec4<f32>, M: u32, N: u32) {
  if (m >= M) {
    return;
  }
  let acc = pu(3u) != 0u;
  let bias = pu(4u) != 0u;
  for (var j = 0u; j < 4u; j = j + 1u) {
    let c = n + j;
    if (c < N) {
      var y = v[j];
      if (bias) {
        if (DIRECT) {
          y = y + B3[p.oa.w + c];
        } else {
          y = y + ld(3u, c);
        }
      }
      let o = m * N + c;
      if (DIRECT) {
        if (acc) {
          y = y + B0[p.oa.x + o];
        }
        B0[p.oa.x + o] = y;
      } else {
        if (acc) {
          y = y + ld(0u, o);
        }
        st(0u, o, y);
      }
    }
  }
}

@compute @workgroup_size(256)
fn matmul_tiled(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
  let m0 = wid.y * BM;
  let n0 = wid.x * BN;
  let M = pu(0u);
  let K = pu(1u);
  let N = pu(2u);
  let tx = tid % 16u;
  let ty = tid / 16u;
  // rows ty*4 + {0..3} and 64 + ty*4 + {0..3}, column groups tx*4 and 64 + tx*4; every
  // index below is a constant so the array stays in registers (zero-initialized)
  var acc: array<vec4<f32>, 16>;
  for (var k0 = 0u; k0 < K; k0 = k0 + BK) {
    for (var i = 0u; i < 8u; i = i + 1u) {
      let idx = i * 256u + tid;
      var m: u32;
      var k: u32;
      if (VARIANT == 2u) {
        m = idx % BM;
        k = idx / BM;
      } else {
        k = idx % BK;
        m = idx / BK;
      }
      As[k * 32u + m / 4u][m % 4u] = load_a(m0 + m, k0 + k, M, K);
      var n: u32;
      var kb: u32;
      if (VARIANT == 0u) {
        kb = idx % BK;
        n = idx / BK;
      } else {
        n = idx % BN;
        kb = idx / BN;
      }
      Bs[kb * 32u + n / 4u][n % 4u] = load_b(k0 + kb, n0 + n, K, N);
    }
    workgroupBarrier();
    for (var k = 0u; k < BK; k = k + 1u) {
      let a0 = As[k * 32u + ty];
      let a1 = As[k * 32u + 16u + ty];
      let b0 = Bs[k * 32u + tx];
      let b1 = Bs[k * 32u + 16u + tx];
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
    workgroupBarrier();
  }
  let mb = m0 + ty * 4u;
  let nb = n0 + tx * 4u;
  store4(mb, nb, acc[0], M, N);
  store4(mb, nb + 64u, acc[1], M, N);
  store4(mb + 1u, nb, acc[2], M, N);
  store4(mb + 1u, nb + 64u, acc[3], M, N);
  store4(mb + 2u, nb, acc[4], M, N);
  store4(mb + 2u, nb + 64u, acc[5], M, N);
  store4(mb + 3u, nb, acc[6], M, N);
  store4(mb + 3u, nb + 64u, acc[7], M, N);
  store4(mb + 64u, nb, acc[8], M, N);
  store4(mb + 64u, nb + 64u, acc[9], M, N);
  store4(mb + 65u, nb, acc[10], M, N);
  store4(mb + 65u, nb + 64u, acc[11], M, N);
  store4(mb + 66u, nb, acc[12], M, N);
  store4(mb + 66u, nb + 64u, acc[13], M, N);
  store4(mb + 67u, nb, acc[14], M, N);
  store4(mb + 67u, nb + 64u, acc[15], M, N);
}
