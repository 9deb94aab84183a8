// ktune skinny GEMM for NVIDIA sm_80+: small M (decode shapes), weight streaming.
//
//   C[M][N] = act(alpha * A[M][K] * B[N][K]^T + beta * C + bias)    (LAYOUT NT only)
//
// The weights B are the large operand: each block owns SK_NT*16 rows of B (a slice of N) and
// streams them once with 16-byte loads; the block's warps split K in interleaved steps of
// 32*SK_U elements and keep SK_DEPTH steps of loads in flight (a ring of SK_DEPTH register
// fragments, indexed only with compile-time constants, so it stays in registers): the kernel is
// bound by bytes in flight per SM, not by arithmetic. The
// product runs on tensor cores with the operands swapped (C^T = B * A^T): B rows are the mma
// "A" operand (16 rows), the few rows of A are the mma "B" operand (8 columns per tile, SK_MT
// tiles), so M <= 8 wastes nothing. Because a sum over k does not depend on the order of k, each
// thread feeds the mma with the 8 consecutive k it loaded in one 16-byte access (the same
// permutation of k is applied to both operands), so no shared memory or shuffles are needed
// before the mma. Warps' partial tiles are summed through shared memory.
//
// Config: SK_NT (16-row B tiles per block: 1, 2, 4), SK_MT (8-row A tiles per block: 1..8; grid.y
// covers larger M), SK_U (16-byte loads per row per thread per step: 1, 2, 4), NUM_WARPS,
// SK_DEPTH (steps in flight per warp: 2..4), SK_PF (weight-load cache hints: 0 none, 1 L2 256-byte
// prefetch, 2 prefetch + L2 evict-first policy), SPLIT_K (grid.z; same self-cleaning workspace +
// counter scheme as gemm_mma.cuh), DTYPE_AB,
// DTYPE_C, HAS_BIAS, ACT. Host requirements (checked by the launch rule): K % 8 == 0,
// lda % 8 == 0, ldb % 8 == 0, A and B 16-byte aligned.
// Dynamic shared memory: NUM_WARPS * SK_NT*16 * (SK_MT*8 + 1) * 4 bytes.
#if !defined(SK_NT) || !defined(SK_MT) || !defined(SK_U) || !defined(NUM_WARPS) || \
    !defined(SPLIT_K) || !defined(SK_DEPTH) || !defined(SK_PF)
#error "skinny.cuh: define SK_NT, SK_MT, SK_U, NUM_WARPS, SPLIT_K, SK_DEPTH and SK_PF (see gemm::defines)"
#endif
#include "prelude.cuh"
#define KGEMM_STREAM_PF SK_PF
#include "gemm_common.cuh"

namespace ks {

using namespace kgemm;

constexpr int kNT = SK_NT, kMT = SK_MT, kU = SK_U, kWarps = NUM_WARPS, kD = SK_DEPTH;
static_assert(kD >= 1 && kD <= 8, "SK_DEPTH must be 1..8");
constexpr int kThreads = 32 * kWarps;
constexpr int kBN = kNT * 16, kBM = kMT * 8;
constexpr int kStep = 32 * kU;       // k per warp step: 4 lanes x kU chunks x 8
constexpr int kRedStride = kBM + 1;  // padded row of the reduction buffer

// ld_stream and l2_policy: gemm_common.cuh (KGEMM_STREAM_PF = SK_PF).

struct Frag {
  uint4 w[kNT][kU][2];  // B rows g and g+8 of each 16-row tile
};

// Cross-warp reduction, step 1: the warp's acc into its slice of `red` ([kWarps][kBN][kRedStride]);
// acc element (t, mt, e) is C^T[n = t*16 + g + (e/2)*8][m = mt*8 + 2q + e%2].
KTUNE_DEVICE void stash_acc(float* red, const float (&acc)[kNT][kMT][4], int warp, int lane) {
  const int g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int n = t * 16 + g + (e >> 1) * 8, m = mt * 8 + q * 2 + (e & 1);
        red[(warp * kBN + n) * kRedStride + m] = acc[t][mt][e];
      }
}

// The block's sum of output (n, m) over the warps' slices of `red`.
KTUNE_DEVICE float warp_sum(const float* red, int n, int m) {
  float v = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) v += red[(w * kBN + n) * kRedStride + m];
  return v;
}

#if SPLIT_K > 1
// Split-K: the block's sums added into the fp32 workspace; false in every block but the tile's
// last slice, which then reads the totals back in store_tile (and resets the tile's counter).
KTUNE_DEVICE bool splitk_add(const float* red, float* workspace, unsigned* counter, int n0, int m0,
                             int M, int N, int tid) {
  __shared__ unsigned is_last;
  for (int i = tid; i < kBN * kBM; i += kThreads) {
    const int n = i % kBN, m = i / kBN;
    const int gn = n0 + n, gm = m0 + m;
    if (gn >= N || gm >= M) continue;
    atomicAdd(workspace + (long)gm * N + gn, warp_sum(red, n, m));
  }
  if (!last_slice(&is_last, counter, tid)) return false;
  if (tid == 0) *counter = 0u;
  return true;
}
#endif

// The block's outputs: alpha * sum (+ beta * C, + bias), activated and converted. The sum is the
// warps' (or, with split-K, the workspace's, which is zeroed for the next call).
KTUNE_DEVICE void store_tile(const float* red, float* workspace, out_t* C, const out_t* bias,
                             int n0, int m0, int M, int N, long ldc, float alpha, float beta,
                             int tid) {
  (void)red;
  (void)workspace;
  (void)bias;  // read only when HAS_BIAS
  for (int i = tid; i < kBN * kBM; i += kThreads) {
    const int n = i % kBN, m = i / kBN;
    const int gn = n0 + n, gm = m0 + m;
    if (gn >= N || gm >= M) continue;
#if SPLIT_K > 1
    float* wp = workspace + (long)gm * N + gn;
    float v = __ldcg(wp);
    __stcg(wp, 0.0f);
#else
    float v = warp_sum(red, n, m);
#endif
    v *= alpha;
    out_t* dst = C + (long)gm * ldc + gn;
    if (beta != 0.0f) v += beta * out_to_float(*dst);
#if HAS_BIAS
    v += out_to_float(bias[gn]);
#endif
    *dst = out_from_float(activate(v));
  }
}

}  // namespace ks

KTUNE_KERNEL void KTUNE_LAUNCH_BOUNDS(ks::kThreads, 0)
    ktune_gemm_skinny(const unsigned short* __restrict__ A, const unsigned short* __restrict__ B,
                      void* Cv, const void* biasv, float* workspace, unsigned* counters, int M,
                      int N, int K, long lda, long ldb, long ldc, float alpha, float beta) {
  using namespace ks;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float* red = reinterpret_cast<float*>(smem_raw);  // [kWarps][kBN][kRedStride]
  out_t* C = reinterpret_cast<out_t*>(Cv);
  const out_t* bias = reinterpret_cast<const out_t*>(biasv);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, q = lane & 3;
  const int n0 = blockIdx.x * kBN, m0 = blockIdx.y * kBM;

  const int k_per = ((K + SPLIT_K - 1) / SPLIT_K + kStep - 1) / kStep * kStep;
  const int k_begin = min(K, (int)blockIdx.z * k_per);
  const int k_end = min(K, k_begin + k_per);
  const int nsteps = (k_end - k_begin + kStep - 1) / kStep;

  // Row pointers (clamped to row 0 when out of range; those lanes load zeros).
  const unsigned short* wrow[kNT][2];
  bool wok[kNT][2];
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int n = n0 + t * 16 + g + h * 8;
      wok[t][h] = n < N;
      wrow[t][h] = B + (long)(wok[t][h] ? n : 0) * ldb;
    }
  const unsigned short* xrow[kMT];
  bool xok[kMT];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    const int m = m0 + mt * 8 + g;
    xok[mt] = m < M;
    xrow[mt] = A + (long)(xok[mt] ? m : 0) * lda;
  }

  const unsigned long long pol = l2_policy();
  // Only the weights go through the register ring; the few rows of A (read by every block, so
  // L1/L2 hits) are loaded when a step is consumed, which keeps registers for more weight bytes
  // in flight and more warps per SM.
  auto load = [&](Frag& f, int step) {
    const int kb = k_begin + step * kStep;
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int k = kb + (u * 4 + q) * 8;
      const bool kin = step < nsteps && k < k_end;
#pragma unroll
      for (int t = 0; t < kNT; ++t)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          f.w[t][u][h] = ld_stream(wrow[t][h] + k, kin && wok[t][h], pol);
    }
  };

  float acc[kNT][kMT][4];
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[t][mt][e] = 0.0f;

  auto compute = [&](const Frag& f, int step) {
    const int kb = k_begin + step * kStep;
    uint4 x[kMT][kU];  // A row g of each 8-row tile
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int k = kb + (u * 4 + q) * 8;
      const bool kin = k < k_end;
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
        x[mt][u] = (kin && xok[mt]) ? __ldg(reinterpret_cast<const uint4*>(xrow[mt] + k))
                                    : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kU; ++u)
#pragma unroll
      for (int t = 0; t < kNT; ++t)
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          // k half 0 uses words 0-1 of each 16-byte chunk, half 1 words 2-3.
          mma16816(acc[t][mt], f.w[t][u][0].x, f.w[t][u][1].x, f.w[t][u][0].y, f.w[t][u][1].y,
                   x[mt][u].x, x[mt][u].y);
          mma16816(acc[t][mt], f.w[t][u][0].z, f.w[t][u][1].z, f.w[t][u][0].w, f.w[t][u][1].w,
                   x[mt][u].z, x[mt][u].w);
        }
  };

  // Warp w takes steps w, w + kWarps, ...; kD steps in flight per warp (ring of fragments: the
  // slot just consumed is refilled with the step kD rounds ahead before the next slot is used).
  Frag f[kD];
#pragma unroll
  for (int d = 0; d < kD; ++d) load(f[d], warp + d * kWarps);
#pragma unroll 1
  for (int s = warp; s < nsteps; s += kD * kWarps) {
#pragma unroll
    for (int d = 0; d < kD; ++d) {
      const int sd = s + d * kWarps;
      if (sd < nsteps) compute(f[d], sd);
      load(f[d], sd + kD * kWarps);
    }
  }

  stash_acc(red, acc, warp, lane);
  __syncthreads();
#if SPLIT_K > 1
  if (!splitk_add(red, workspace, counters + blockIdx.y * gridDim.x + blockIdx.x, n0, m0, M, N,
                  tid))
    return;
#endif
  store_tile(red, workspace, C, bias, n0, m0, M, N, ldc, alpha, beta, tid);
}
