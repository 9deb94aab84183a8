// ktune GEMM for NVIDIA Hopper (sm_90a): warpgroup MMA (wgmma.mma_async) from shared memory.
//
//   C = act(alpha * A * B^T + beta * C + bias)      LAYOUT NT only: A [M][K], B [N][K] (K-major)
//
// Each warpgroup (4 warps, 128 threads) owns 64 rows of the block tile and the full BLOCK_N
// columns (wgmma m64nBLOCK_Nk16, fp32 accumulators in registers). Tiles are BLOCK_K = 64 elements
// wide, i.e. 128-byte rows, loaded with a cp.async multistage pipeline (zero-filled at the edges;
// NUM_STAGES - 2 tiles in flight while the wgmma groups of the two previous tiles may still run)
// straight into the layout the tensor cores read with 128-byte swizzle: 16-byte chunk c of row r
// sits at chunk c ^ (r % 8) inside each 1024-byte group of 8 rows, so one shared-memory matrix
// descriptor (SBO = 1024 B) covers a 64-row operand, and the k16 steps advance its start address
// by 32 bytes. cp.async writes through the generic proxy while wgmma reads through the async
// proxy, hence fence.proxy.async before the barrier that publishes each stage.
//
// Config: BLOCK_N (128 | 256), WARPGROUPS (1 | 2; BLOCK_M = 64 * WARPGROUPS), NUM_STAGES (3..6),
// GROUP_M, SPLIT_K (grid.z; fp32 workspace [M][N] + one counter per tile, both zeroed by the caller
// once and left zero by the kernel, as in gemm_mma.cuh); problem defines DTYPE_AB (1 f16, 2 bf16), DTYPE_C (0 f32, 1 f16, 2 bf16), HAS_BIAS,
// ACT (0 none, 1 SiLU, 2 GELU erf). Host requirements (launch rule): layout NT, 16-byte aligned A
// and B, lda % 8 == 0, ldb % 8 == 0. Dynamic shared memory:
// NUM_STAGES * (BLOCK_M + BLOCK_N) * 64 * 2 + 1024 bytes (the 1024 aligns the tiles).

#if !defined(BLOCK_N) || !defined(WARPGROUPS) || !defined(NUM_STAGES) || !defined(GROUP_M) || \
    !defined(SPLIT_K)
#error "wgmma.cuh: define BLOCK_N, WARPGROUPS, NUM_STAGES, GROUP_M and SPLIT_K (see gemm::defines)"
#endif

#if DTYPE_AB == 2
#define KTUNE_WGMMA_T "bf16"
#else
#define KTUNE_WGMMA_T "f16"
#endif
#include "prelude.cuh"
#include "gemm_common.cuh"

namespace kw {

using namespace kgemm;

constexpr int kBM = 64 * WARPGROUPS, kBN = BLOCK_N, kBK = 64;
constexpr int kThreads = 128 * WARPGROUPS;
constexpr int kStages = NUM_STAGES;
constexpr int kATile = kBM * kBK, kBTile = kBN * kBK;  // elements per stage
constexpr int kAcc = kBN / 2;                         // fp32 accumulators per thread

static_assert(kBN == 128 || kBN == 256, "BLOCK_N must be 128 or 256");
static_assert(WARPGROUPS == 1 || WARPGROUPS == 2, "WARPGROUPS must be 1 or 2");
static_assert(kStages >= 3, "NUM_STAGES must be >= 3 (one slot is still read by the wgmma in flight)");

using ktune::smem_addr;
using ktune::make_desc;
using ktune::wgmma_fence;
using ktune::wgmma_commit;
using ktune::wgmma_wait;
using ktune::fence_proxy_async;
using ktune::wgmma_n128;
using ktune::wgmma_n256;

KTUNE_DEVICE void cp_async16_zfill(unsigned dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes)
               : "memory");
}

// (rows x 64) K-major tile, element (r, c) at g[(r0 + r) * ld + c0 + c], zero outside
// r0 + r < rlim, c0 + c < clim; written with the 128-byte swizzle.
template <int kRows>
KTUNE_DEVICE void load_tile(unsigned short* s, const unsigned short* __restrict__ g, long ld,
                            int r0, int c0, int rlim, int clim, int tid) {
  constexpr int kIters = kRows * 8 / kThreads;
  static_assert(kIters * kThreads == kRows * 8, "tile chunks must divide among threads");
#pragma unroll
  for (int i = 0; i < kIters; ++i) {
    const int chunk = tid + i * kThreads;
    const int r = chunk >> 3, ch = chunk & 7;
    const int gr = r0 + r, gc = c0 + ch * 8;
    int bytes = 0;
    if (gr < rlim && gc < clim) bytes = min(16, (clim - gc) * 2);
    const unsigned short* src = bytes > 0 ? g + (long)gr * ld + gc : g;
    cp_async16_zfill(smem_addr(s + r * kBK + ((ch ^ (r & 7)) * 8)), src, bytes);
  }
}

// Calls f(element, row, column) for each accumulator element of the thread (rows from row0, the
// thread's first row; columns from n0).
template <class F>
KTUNE_DEVICE void for_each_acc(float (&acc)[kAcc], int row0, int n0, int lane, F f) {
  const int q = lane & 3;
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) f(acc[j * 4 + e], row0 + (e >> 1) * 8, n0 + j * 8 + q * 2 + (e & 1));
}

#if SPLIT_K > 1
// Split-K: adds the partial tile into the zeroed fp32 workspace [M][N] (vector reductions when
// the column pair is 8-byte aligned); false in every block but the one that arrives last on the
// tile's counter, which reads the sums back into acc and zeroes the workspace and the counter
// (self-cleaning). `flag`: one shared word.
KTUNE_DEVICE bool splitk_reduce(float (&acc)[kAcc], float* workspace, unsigned* counter,
                                volatile unsigned* flag, int row0, int n0, int M, int N, int tid) {
  const int q = tid & 3;
  const bool pair_ok = (N & 1) == 0;
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = row0 + h * 8, c = n0 + j * 8 + q * 2;
      if (r >= M || c >= N) continue;
      float* wp = workspace + (long)r * N + c;
      const float v0 = acc[j * 4 + h * 2], v1 = acc[j * 4 + h * 2 + 1];
      if (pair_ok) {
        asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(wp), "f"(v0), "f"(v1)
                     : "memory");
      } else {
        atomicAdd(wp, v0);
        if (c + 1 < N) atomicAdd(wp + 1, v1);
      }
    }
  if (!last_slice(flag, counter, tid)) return false;
  if (tid == 0) *counter = 0u;
  for_each_acc(acc, row0, n0, tid & 31, [&](float& v, int r, int c) {
    if (r >= M || c >= N) return;
    float* wp = workspace + (long)r * N + c;
    v = __ldcg(wp);
    __stcg(wp, 0.0f);
  });
  return true;
}
#endif

// The thread's outputs: alpha * acc (+ beta * C, + bias), activated and converted.
KTUNE_DEVICE void store_tile(float (&acc)[kAcc], out_t* C, const out_t* bias, int row0, int n0,
                             int M, int N, long ldc, float alpha, float beta, int lane) {
  (void)bias;  // read only when HAS_BIAS
  for_each_acc(acc, row0, n0, lane, [&](float& a, int r, int c) {
    if (r >= M || c >= N) return;
    float v = alpha * a;
    out_t* dst = C + (long)r * ldc + c;
    if (beta != 0.0f) v += beta * out_to_float(*dst);
#if HAS_BIAS
    v += out_to_float(bias[c]);
#endif
    *dst = out_from_float(activate(v));
  });
}

}  // namespace kw

KTUNE_KERNEL void __launch_bounds__(kw::kThreads, 1)
    ktune_gemm_wgmma(const unsigned short* __restrict__ A, const unsigned short* __restrict__ B,
                     void* Cv, const void* biasv, float* workspace, unsigned* counters, int M,
                     int N, int K, long lda, long ldb, long ldc, float alpha, float beta) {
  using namespace kw;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* base = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
  unsigned short* sA = reinterpret_cast<unsigned short*>(base);
  unsigned short* sB = sA + kStages * kATile;
  out_t* C = reinterpret_cast<out_t*>(Cv);
  (void)workspace;  // used when SPLIT_K > 1
  (void)counters;

  const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, warp = (tid >> 5) & 3;
  const int grid_m = (M + kBM - 1) / kBM, grid_n = (N + kBN - 1) / kBN;
  const int pid = blockIdx.x;
  int pid_m, pid_n;
  group_tile(pid, grid_m, grid_n, GROUP_M, pid_m, pid_n);
  const int m0 = pid_m * kBM, n0 = pid_n * kBN;
  const int ktiles = (K + kBK - 1) / kBK;

  // This block's slice of the k-tiles (SPLIT_K > 1: grid.z slices, reduced through the fp32
  // workspace; the launch rule rejects splits that leave a slice empty).
  const int kt_per = (ktiles + SPLIT_K - 1) / SPLIT_K;
  const int kt_begin = min(ktiles, (int)blockIdx.z * kt_per);
  const int nkt = min(ktiles, kt_begin + kt_per) - kt_begin;

  auto load_stage = [&](int kt, int slot) {
    const int k0 = (kt_begin + kt) * kBK;
    load_tile<kBM>(sA + slot * kATile, A, lda, m0, k0, M, K, tid);
    load_tile<kBN>(sB + slot * kBTile, B, ldb, n0, k0, N, K, tid);
  };

  float acc[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) acc[i] = 0.0f;

  // Pipeline: kStages - 2 tiles are loading while the tensor cores work on tile kt and the
  // wgmma group of tile kt - 1 may still be reading its slot (wgmma.wait_group 1 keeps one group
  // in flight, so issue never waits for the MMAs). The slot refilled in iteration kt held tile
  // kt - 2, whose wgmmas every warpgroup retired (wait_group 1 in iteration kt - 1) before the
  // barrier of iteration kt.
#pragma unroll
  for (int s = 0; s < kStages - 2; ++s) {
    if (s < nkt) load_stage(s, s);
    ktune::cp_async_commit();
  }

#pragma unroll 1
  for (int kt = 0; kt < nkt; ++kt) {
    ktune::cp_async_wait<kStages - 3>();
    fence_proxy_async();  // this thread's cp.async writes -> visible to the async proxy
    __syncthreads();
    {
      const int nk = kt + kStages - 2;
      if (nk < nkt) load_stage(nk, nk % kStages);
      ktune::cp_async_commit();
    }
    const unsigned short* a = sA + (kt % kStages) * kATile + wg * 64 * kBK;
    const unsigned short* b = sB + (kt % kStages) * kBTile;
    const unsigned long long da = make_desc(a), db = make_desc(b);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
#if BLOCK_N == 256
      wgmma_n256(acc, da + 2 * kk, db + 2 * kk, 1);
#else
      wgmma_n128(acc, da + 2 * kk, db + 2 * kk, 1);
#endif
    }
    wgmma_commit();
    wgmma_wait<1>();
  }
  wgmma_wait<0>();
  ktune::cp_async_wait<0>();

  // Accumulator j*4 + e: row wg*64 + warp*16 + lane/4 + (e/2)*8, column j*8 + 2*(lane%4) + e%2.
  const int row0 = m0 + wg * 64 + warp * 16 + (lane >> 2);
#if SPLIT_K > 1
  // The flag reuses the tile memory: every thread is past its last cp.async and wgmma here.
  if (!splitk_reduce(acc, workspace, counters + pid, reinterpret_cast<volatile unsigned*>(base),
                     row0, n0, M, N, tid))
    return;
#endif
  store_tile(acc, C, reinterpret_cast<const out_t*>(biasv), row0, n0, M, N, ldc, alpha, beta,
             lane);
}
