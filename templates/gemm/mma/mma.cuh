// ktune GEMM for NVIDIA sm_80+ (Ampere/Hopper tensor cores through mma.sync.m16n8k16).
//
//   C = act(alpha * op(A) * op(B) + beta * C + bias)     fp16/bf16 in, fp32 accumulate
//
// Storage is row-major. LAYOUT picks which operand is stored transposed:
//   0 NN: A [M][K] (lda), B [K][N] (ldb)      1 NT: A [M][K], B [N][K] (nn.Linear weights)
//   2 TN: A [K][M], B [K][N]                  3 TT: A [K][M], B [N][K]
// C is [M][N] (ldc). bias has N elements of the C dtype. ACT: 0 none, 1 SiLU, 2 GELU (erf form).
//
// Config (-D defines; the host side in templates/gemm.cc owns the constraints):
//   BLOCK_M, BLOCK_N, BLOCK_K   block tile;  WARPS_M x WARPS_N warps, each owning a
//   (BLOCK_M/WARPS_M) x (BLOCK_N/WARPS_N) sub-tile;  NUM_STAGES >= 2 cp.async pipeline depth;
//   GROUP_M tile swizzle for L2 reuse;  SPLIT_K reduction split across grid.z;
//   ALIGNED 1: 16-byte cp.async path (host checked: leading dims % 8 == 0, 16-byte base
//   pointers), 0: element-wise loads that work for any pointer/leading dimension;
//   DTYPE_AB 1 fp16 / 2 bf16;  DTYPE_C 0 fp32 / 1 fp16 / 2 bf16;  HAS_BIAS;  ACT;
//   MIN_BLOCKS min resident blocks per SM for __launch_bounds__ (0 = no hint).
//
// Shared memory is dynamic: NUM_STAGES * (BLOCK_M*BLOCK_K + BLOCK_K*BLOCK_N) * 2 bytes.
// Tiles are stored with a 16-byte-chunk XOR swizzle so ldmatrix reads are bank-conflict free.
//
// Split-K (SPLIT_K > 1): each z-slice adds its fp32 partial tile into `workspace` (M*N floats)
// with atomics and bumps `counters[tile]`; the last slice to arrive applies the epilogue, writes
// C, and restores the workspace and its counter to zero. So the caller zeroes workspace and
// counters ONCE when allocating them, never between launches (launches on one stream only).
#if !defined(BLOCK_M) || !defined(BLOCK_N) || !defined(BLOCK_K) || !defined(WARPS_M) || \
    !defined(WARPS_N) || !defined(NUM_STAGES) || !defined(GROUP_M) || !defined(SPLIT_K) || \
    !defined(MIN_BLOCKS) || !defined(ALIGNED)
#error "mma.cuh: define BLOCK_M, BLOCK_N, BLOCK_K, WARPS_M, WARPS_N, NUM_STAGES, GROUP_M, SPLIT_K, MIN_BLOCKS and ALIGNED (see gemm::defines)"
#endif
#include "prelude.cuh"
#include "gemm_common.cuh"

namespace kg {

using namespace kgemm;

constexpr int kBM = BLOCK_M, kBN = BLOCK_N, kBK = BLOCK_K;
constexpr int kWarpsM = WARPS_M, kWarpsN = WARPS_N;
constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kStages = NUM_STAGES;
constexpr int kWM = kBM / kWarpsM, kWN = kBN / kWarpsN;  // warp tile
constexpr int kMT = kWM / 16, kNT = kWN / 8;             // mma tiles per warp
constexpr bool kTransA = (LAYOUT == 2 || LAYOUT == 3);    // A stored [K][M]
constexpr bool kTransB = (LAYOUT == 1 || LAYOUT == 3);    // B stored [N][K]
// Shared tiles: A is [BM][BK] (K contiguous) or [BK][BM]; B is [BK][BN] or [BN][BK].
constexpr int kARows = kTransA ? kBK : kBM, kACols = kTransA ? kBM : kBK;
constexpr int kBRows = kTransB ? kBN : kBK, kBCols = kTransB ? kBK : kBN;
constexpr int kATile = kBM * kBK, kBTile = kBK * kBN;  // elements per stage

static_assert(kStages >= 2, "NUM_STAGES must be >= 2");
static_assert(kBM % (16 * kWarpsM) == 0, "BLOCK_M must be a multiple of 16*WARPS_M");
static_assert(kBN % (16 * kWarpsN) == 0, "BLOCK_N must be a multiple of 16*WARPS_N");
static_assert(kBK % 16 == 0, "BLOCK_K must be a multiple of 16");
static_assert((kATile / 8) % kThreads == 0, "A tile chunks must divide among threads");
static_assert((kBTile / 8) % kThreads == 0, "B tile chunks must divide among threads");
static_assert(kNT % 2 == 0, "warp N tile must be a multiple of 16");

// Physical 16-byte chunk of logical chunk `ch` in row `row` of a tile `cols` elements wide.
template <int kCols>
KTUNE_DEVICE int swz(int row, int ch) {
  constexpr int kC = kCols / 8;
  if constexpr (kC >= 8) return ch ^ (row & 7);
  else if constexpr (kC == 4) return ch ^ ((row >> 1) & 3);
  else if constexpr (kC == 2) return ch ^ ((row >> 2) & 1);
  else return ch;
}

KTUNE_DEVICE unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16-byte async copy with zero fill: copies `bytes` (0..16) from src and zeroes the rest.
KTUNE_DEVICE void cp_async16_zfill(unsigned dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes)
               : "memory");
}

// Loads a (rows x cols) tile whose element (r, c) is at g[(r0 + r) * ld + c0 + c], zero outside
// r0 + r < rlim and c0 + c < clim, into swizzled shared memory.
template <int kRows, int kCols>
KTUNE_DEVICE void load_tile(unsigned short* s, const unsigned short* __restrict__ g, long ld,
                            int r0, int c0, int rlim, int clim, int tid) {
  constexpr int kChunksPerRow = kCols / 8;
  constexpr int kIters = kRows * kChunksPerRow / kThreads;
#if ALIGNED
#pragma unroll
#else
#pragma unroll 1  // the element-wise path holds 8 values per chunk; unrolling it spills
#endif
  for (int i = 0; i < kIters; ++i) {
    const int chunk = tid + i * kThreads;
    const int r = chunk / kChunksPerRow, ch = chunk % kChunksPerRow;
    const int gr = r0 + r, gc = c0 + ch * 8;
    unsigned short* dst = s + r * kCols + swz<kCols>(r, ch) * 8;
#if ALIGNED
    int bytes = 0;
    if (gr < rlim && gc < clim) bytes = min(16, (clim - gc) * 2);
    const unsigned short* src = bytes > 0 ? g + (long)gr * ld + gc : g;
    cp_async16_zfill(smem_addr(dst), src, bytes);
#else
    unsigned short v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j)
      v[j] = (gr < rlim && gc + j < clim) ? g[(long)gr * ld + gc + j] : (unsigned short)0;
    uint4 packed;
    packed.x = v[0] | ((unsigned)v[1] << 16);
    packed.y = v[2] | ((unsigned)v[3] << 16);
    packed.z = v[4] | ((unsigned)v[5] << 16);
    packed.w = v[6] | ((unsigned)v[7] << 16);
    *reinterpret_cast<uint4*>(dst) = packed;
#endif
  }
}

KTUNE_DEVICE void ldsm_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
KTUNE_DEVICE void ldsm_x4_t(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

KTUNE_DEVICE void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  kgemm::mma16816(d, a[0], a[1], a[2], a[3], b0, b1);
}

// Final value of C[r][c] from the fp32 accumulator.
KTUNE_DEVICE float finish(float acc, const out_t* C, const out_t* bias, long ldc, int r, int c,
                          float alpha, float beta) {
  float v = alpha * acc;
  if (beta != 0.0f) v += beta * out_to_float(C[(long)r * ldc + c]);
#if HAS_BIAS
  v += out_to_float(bias[c]);
#endif
  return activate(v);
}

// One warp's mma.sync steps over one shared-memory stage (a, b): ldmatrix fragments of its
// kWM x kWN tile, accumulated into acc.
KTUNE_DEVICE void mma_stage(float (&acc)[kMT][kNT][4], const unsigned short* a,
                            const unsigned short* b, int wm, int wn, int lane) {
  const int lj = lane >> 3, lr = lane & 7;
#pragma unroll
  for (int kk = 0; kk < kBK / 16; ++kk) {
    unsigned af[kMT][4];
    unsigned bf[kNT / 2][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      const int mb = wm * kWM + mt * 16;
      if constexpr (!kTransA) {
        const int r = mb + (lane & 15), ch = kk * 2 + (lane >> 4);
        ldsm_x4(af[mt], smem_addr(a + r * kACols + swz<kACols>(r, ch) * 8));
      } else {
        const int r = kk * 16 + lr + (lj >> 1) * 8, ch = (mb >> 3) + (lj & 1);
        ldsm_x4_t(af[mt], smem_addr(a + r * kACols + swz<kACols>(r, ch) * 8));
      }
    }
#pragma unroll
    for (int p = 0; p < kNT / 2; ++p) {
      const int nb = wn * kWN + p * 16;
      if constexpr (kTransB) {
        const int r = nb + lr + (lj >> 1) * 8, ch = kk * 2 + (lj & 1);
        ldsm_x4(bf[p], smem_addr(b + r * kBCols + swz<kBCols>(r, ch) * 8));
      } else {
        const int r = kk * 16 + lr + (lj & 1) * 8, ch = (nb >> 3) + (lj >> 1);
        ldsm_x4_t(bf[p], smem_addr(b + r * kBCols + swz<kBCols>(r, ch) * 8));
      }
    }
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
        mma16816(acc[mt][nt], af[mt], bf[nt >> 1][(nt & 1) * 2], bf[nt >> 1][(nt & 1) * 2 + 1]);
  }
}

#if SPLIT_K > 1
// Calls f(element, row, column) for each accumulator element of the warp's tile.
template <class F>
KTUNE_DEVICE void for_each_acc(float (&acc)[kMT][kNT][4], int row_base, int col_base, int lane,
                               F f) {
  const int g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        f(acc[mt][nt][e], row_base + mt * 16 + g + (e >> 1) * 8, col_base + nt * 8 + q * 2 + (e & 1));
}

// Split-K: adds acc into the fp32 workspace; false in every block but the tile's last slice,
// which gets the sum back in acc (and zeroes the workspace and the tile's counter for the next
// call).
KTUNE_DEVICE bool splitk_reduce(float (&acc)[kMT][kNT][4], float* workspace, unsigned* counter,
                                int row_base, int col_base, int M, int N, int tid, int lane) {
  for_each_acc(acc, row_base, col_base, lane, [&](float& v, int r, int c) {
    if (r < M && c < N) atomicAdd(workspace + (long)r * N + c, v);
  });
  __shared__ unsigned is_last;
  if (!last_slice(&is_last, counter, tid)) return false;
  for_each_acc(acc, row_base, col_base, lane, [&](float& v, int r, int c) {
    if (r >= M || c >= N) return;
    float* w = workspace + (long)r * N + c;
    v = __ldcg(w);
    __stcg(w, 0.0f);
  });
  if (tid == 0) *counter = 0u;
  return true;
}
#endif

// The warp's tile of C: alpha * acc (+ beta * C, + bias), activated, converted; pairs of
// neighbouring columns are stored together when C allows it.
KTUNE_DEVICE void store_tile(const float (&acc)[kMT][kNT][4], out_t* C, const out_t* bias,
                             int row_base, int col_base, int M, int N, long ldc, float alpha,
                             float beta, int lane) {
  const int g = lane >> 2, q = lane & 3;
  const bool pair_ok = (ldc % 2 == 0) &&
                       ((reinterpret_cast<unsigned long long>(C) % (2 * sizeof(out_t))) == 0);
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = row_base + mt * 16 + g + h * 8;
        const int c = col_base + nt * 8 + q * 2;
        if (r >= M || c >= N) continue;
        const float v0 = finish(acc[mt][nt][h * 2], C, bias, ldc, r, c, alpha, beta);
        out_t* dst = C + (long)r * ldc + c;
        if (c + 1 < N) {
          const float v1 = finish(acc[mt][nt][h * 2 + 1], C, bias, ldc, r, c + 1, alpha, beta);
          if (pair_ok) {
#if DTYPE_C == 0
            *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
#else
            out_t pr[2] = {out_from_float(v0), out_from_float(v1)};
            *reinterpret_cast<unsigned*>(dst) = *reinterpret_cast<unsigned*>(pr);
#endif
          } else {
            dst[0] = out_from_float(v0);
            dst[1] = out_from_float(v1);
          }
        } else {
          dst[0] = out_from_float(v0);
        }
      }
}

}  // namespace kg

KTUNE_KERNEL void KTUNE_LAUNCH_BOUNDS(kg::kThreads, MIN_BLOCKS)
    ktune_gemm_mma(const unsigned short* __restrict__ A, const unsigned short* __restrict__ B,
                   void* Cv, const void* biasv, float* workspace, unsigned* counters, int M,
                   int N, int K, long lda, long ldb, long ldc, float alpha, float beta) {
  using namespace kg;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  unsigned short* sA = reinterpret_cast<unsigned short*>(smem_raw);
  unsigned short* sB = sA + kStages * kATile;
  out_t* C = reinterpret_cast<out_t*>(Cv);
  const out_t* bias = reinterpret_cast<const out_t*>(biasv);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp / kWarpsN, wn = warp % kWarpsN;

  // GROUP_M swizzle of the 1-D tile index (L2 reuse across neighbouring blocks).
  const int grid_m = (M + kBM - 1) / kBM, grid_n = (N + kBN - 1) / kBN;
  int pid_m, pid_n;
  group_tile(blockIdx.x, grid_m, grid_n, GROUP_M, pid_m, pid_n);
  const int m0 = pid_m * kBM, n0 = pid_n * kBN;

  // This slice's K range, a whole number of BLOCK_K tiles.
  const int k_per = ((K + SPLIT_K - 1) / SPLIT_K + kBK - 1) / kBK * kBK;
  const int k_begin = min(K, (int)blockIdx.z * k_per);
  const int k_end = min(K, k_begin + k_per);
  const int ktiles = (k_end - k_begin + kBK - 1) / kBK;

  auto load_stage = [&](int kt, int slot) {
    const int k0 = k_begin + kt * kBK;
    unsigned short* a = sA + slot * kATile;
    unsigned short* b = sB + slot * kBTile;
    if constexpr (kTransA) load_tile<kARows, kACols>(a, A, lda, k0, m0, k_end, M, tid);
    else load_tile<kARows, kACols>(a, A, lda, m0, k0, M, k_end, tid);
    if constexpr (kTransB) load_tile<kBRows, kBCols>(b, B, ldb, n0, k0, N, k_end, tid);
    else load_tile<kBRows, kBCols>(b, B, ldb, k0, n0, k_end, N, tid);
  };

  float acc[kMT][kNT][4];
#pragma unroll
  for (int i = 0; i < kMT; ++i)
#pragma unroll
    for (int j = 0; j < kNT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < ktiles) load_stage(s, s);
    ktune::cp_async_commit();
  }

#pragma unroll 1
  for (int kt = 0; kt < ktiles; ++kt) {
    ktune::cp_async_wait<kStages - 2>();
    __syncthreads();
    {
      const int nk = kt + kStages - 1;
      if (nk < ktiles) load_stage(nk, nk % kStages);
      ktune::cp_async_commit();
    }
    const unsigned short* a = sA + (kt % kStages) * kATile;
    const unsigned short* b = sB + (kt % kStages) * kBTile;
    mma_stage(acc, a, b, wm, wn, lane);
  }
  ktune::cp_async_wait<0>();

  const int row_base = m0 + wm * kWM, col_base = n0 + wn * kWN;

#if SPLIT_K > 1
  if (!splitk_reduce(acc, workspace, counters + pid_m * grid_n + pid_n, row_base, col_base, M, N,
                     tid, lane))
    return;
#endif
  store_tile(acc, C, bias, row_base, col_base, M, N, ldc, alpha, beta, lane);
}
