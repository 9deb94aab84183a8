// ktune GEMM for AMD CDNA (gfx90a, gfx942) matrix cores (MFMA). Compile-and-analyse only in this
// project: no AMD GPU has run it (its GPU test waits in tests/gpu/gemm_mfma_gpu_test.cc).
//
//   C = act(alpha * op(A) * op(B) + beta * C + bias)     f16/bf16 in, f32 accumulate
//
// LAYOUT 0 NN: A [M][K], B [K][N]; 1 NT: A [M][K], B [N][K]; 2 TN: A [K][M], B [K][N];
// 3 TT: A [K][M], B [N][K]. C [M][N]; bias N elements of the C dtype. ACT: 0 none, 1 SiLU,
// 2 GELU (tanh form: no libm with -nogpulib).
//
// Config (-D): BLOCK_M, BLOCK_N (32..256), BLOCK_K (16..128); MATRIX_INSTR 16
// (v_mfma_f32_16x16x16{f16,bf16_1k}) or 32 (v_mfma_f32_32x32x8{f16,bf16_1k}); NUM_WAVES 4 or 8
// (64 lanes each); WAVES_PER_EU (amdgpu_waves_per_eu hint, 0 = none); NUM_STAGES as the MI300X
// guide uses it on AMD: 0 = one LDS buffer, the next tile's global loads issued into registers
// before the current tile's MFMAs (the guide's setting for a single GEMM); 1 = no prefetch (load,
// store, multiply in turn); 2 = two LDS buffers plus the register prefetch (one barrier per
// step); GROUP_M tile swizzle; DTYPE_AB 1 f16 / 2 bf16; DTYPE_C 0 f32 / 1 f16 / 2 bf16; HAS_BIAS;
// ACT; HAS_BETA (0: beta == 0, C is not read); SPLIT_K (grid.z slices of K, see splitReduce). The host guarantees 16-byte aligned A/B with lda % 8 == 0 and ldb % 8 == 0.
//
// Data path. Every global load is a 16-byte buffer load (buffer_load_dwordx4) through a buffer
// resource whose range check returns zeros out of range, so edge tiles take the same path (rows
// past the matrix get an out-of-range offset; a chunk straddling the K or M/N end is masked in
// registers). Both operand tiles sit in LDS as rows of K (an M row of A, an N row of B), each row
// BLOCK_K/8 16-byte chunks, XOR-swizzled (ldsChunk) so that the 16-byte writes and the 16-byte
// operand reads are free of bank conflicts. Operands stored MN-major in memory (A of TN/TT, B of
// NN/TN) are read as 8x8 blocks (8 loads of 8 MN-consecutive elements) and transposed in
// registers, so LDS is still written with ds_write_b128. Each lane's ds_read_b128 brings 8
// consecutive k of its row: the first 4 feed one MFMA, the last 4 the next (the k order inside a
// tile is permuted the same way for A and B, which leaves the sum unchanged). The MFMA computes
// C^T = B^T A^T (B fragment as the instruction's A operand), so each lane ends with 4 consecutive
// N of one C row and the epilogue stores 4 elements at a time.
//
// The index math lives in mfma_index.cuh, the global/LDS data path in mfma_memory.cuh, the
// epilogue and the split-K reduction in mfma_epilogue.cuh (all in this folder; gemm::kernelSource
// puts them in place of their #include lines).
#if !defined(BLOCK_M) || !defined(BLOCK_N) || !defined(BLOCK_K) || !defined(MATRIX_INSTR) || \
    !defined(NUM_WAVES) || !defined(WAVES_PER_EU) || !defined(NUM_STAGES) || !defined(GROUP_M) || \
    !defined(SPLIT_K) || !defined(HAS_BETA)
#error "mfma.cuh: define BLOCK_M, BLOCK_N, BLOCK_K, MATRIX_INSTR, NUM_WAVES, WAVES_PER_EU, NUM_STAGES, GROUP_M, SPLIT_K and HAS_BETA (see gemm::defines)"
#endif
#include "prelude.cuh"
#include "gemm_common.cuh"
#include "mfma_index.cuh"

#if KTUNE_AMD

namespace km {

using namespace kmi;
using namespace kgemm;
constexpr int kBM = BLOCK_M, kBN = BLOCK_N, kBK = BLOCK_K, kMI = MATRIX_INSTR;
constexpr int kWaves = NUM_WAVES, kThreads = 64 * kWaves;
constexpr int kWavesM = wavesM(kWaves, kBM, kBN), kWavesN = kWaves / kWavesM;
constexpr int kWM = kBM / kWavesM, kWN = kBN / kWavesN;
constexpr int kTM = kWM / kMI, kTN = kWN / kMI;  // MFMA blocks per wave
constexpr int kChunks = kBK / 8;                  // 16-byte chunks per LDS row
constexpr int kRounds = kBK / kPerRead(kMI);      // ds_read_b128 rounds per tile
constexpr int kBuffers = NUM_STAGES == 2 ? 2 : 1;
constexpr bool kTransA = LAYOUT == 2 || LAYOUT == 3;  // A stored [K][M]
constexpr bool kTransB = LAYOUT == 1 || LAYOUT == 3;  // B stored [N][K]
constexpr int kALoads = kBM * kBK / 8 / kThreads;     // 16-byte loads per thread per tile
constexpr int kBLoads = kBN * kBK / 8 / kThreads;

static_assert(kMI == 16 || kMI == 32, "MATRIX_INSTR must be 16 or 32");
static_assert(NUM_STAGES >= 0 && NUM_STAGES <= 2, "NUM_STAGES is 0, 1 or 2 on AMD");
static_assert(kWaves == 4 || kWaves == 8, "NUM_WAVES must be 4 or 8");
static_assert(kWM % kMI == 0 && kWN % kMI == 0, "wave tile must be a multiple of MATRIX_INSTR");
static_assert(kBK % kPerRead(kMI) == 0, "BLOCK_K must be a multiple of 16 (MI 32) or 32 (MI 16)");
static_assert(kALoads * kThreads * 8 == kBM * kBK && kBLoads * kThreads * 8 == kBN * kBK,
              "tile chunks must divide among threads");
// MN-major operands move in 8x8 blocks, a whole number per thread: a thread without a block
// would put the loads and the repacking under a branch, and the wait-count pass then makes the
// loop wait for every load before the MFMAs (the host's applicable() keeps such configs away).
constexpr int blocksPerThread(int rows) { return rows * kBK / 64 / kThreads; }
static_assert(!kTransA || blocksPerThread(kBM) * kThreads * 64 == kBM * kBK,
              "A stored [K][M]: BLOCK_M * BLOCK_K / 64 must be a multiple of the thread count");
static_assert(kTransB || blocksPerThread(kBN) * kThreads * 64 == kBN * kBK,
              "B stored [K][N]: BLOCK_N * BLOCK_K / 64 must be a multiple of the thread count");

}  // namespace km

#include "mfma_memory.cuh"
#include "mfma_epilogue.cuh"

KTUNE_KERNEL void KTUNE_LAUNCH_BOUNDS(km::kThreads, WAVES_PER_EU)
    ktune_gemm_mfma(const unsigned short* __restrict__ A, const unsigned short* __restrict__ B,
                    void* Cv, const void* biasv, float* workspace, unsigned* counters, int M,
                    int N, int K, long lda, long ldb, long ldc, float alpha, float beta) {
  using namespace km;
  __shared__ __attribute__((aligned(16))) unsigned short sA[kBuffers * kBM * kBK];
  __shared__ __attribute__((aligned(16))) unsigned short sB[kBuffers * kBN * kBK];
#if SPLIT_K == 1
  (void)workspace;
  (void)counters;
#endif

  const int tid = ktune::tid_x(), lane = tid & 63, wave = tid >> 6;
  const int wm = wave / kWavesN, wn = wave % kWavesN;
  const int grid_m = (M + kBM - 1) / kBM, grid_n = (N + kBN - 1) / kBN;
  int pid_m, pid_n;
  group_tile(ktune::bid_x(), grid_m, grid_n, GROUP_M, pid_m, pid_n);
  const int m0 = pid_m * kBM, n0 = pid_n * kBN;
  // Split-K: slice z covers [kbase, kend), whole BLOCK_K tiles (the host refuses empty slices).
  const int k_per = SPLIT_K == 1 ? K : ((K + SPLIT_K - 1) / SPLIT_K + kBK - 1) / kBK * kBK;
  const int kbase = SPLIT_K == 1 ? 0 : static_cast<int>(ktune::bid_z()) * k_per;
  const int kend = kbase + k_per < K ? kbase + k_per : K;
  const int ktiles = kend > kbase ? (kend - kbase + kBK - 1) / kBK : 0;

  Operand<kBM, kTransA ? 8 * blocksPerThread(kBM) : kALoads, !kTransA> a;
  a.base = A, a.ld = lda, a.elems = (long)(kTransA ? K : M) * lda;
  a.mn0 = m0, a.mn_total = M, a.k_total = K;
  Operand<kBN, kTransB ? kBLoads : 8 * blocksPerThread(kBN), kTransB> b;
  b.base = B, b.ld = ldb, b.elems = (long)(kTransB ? N : K) * ldb;
  b.mn0 = n0, b.mn_total = N, b.k_total = K;

  acc_t acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j)
#pragma unroll
      for (int e = 0; e < kAcc; ++e) acc[i][j][e] = 0.0f;

  auto compute = [&](int buf) {
    const unsigned short* la = sA + buf * kBM * kBK;
    const unsigned short* lb = sB + buf * kBN * kBK;
#pragma unroll
    for (int round = 0; round < kRounds; ++round) {
      chunk_t fa[kTM], fb[kTN];
      const int c = fragChunk(lane, kMI, round);
#pragma unroll
      for (int tm = 0; tm < kTM; ++tm)
        fa[tm] = *reinterpret_cast<const chunk_t*>(
            la + 8 * ldsChunk(wm * kWM + tm * kMI + fragRow(lane, kMI), c, kChunks));
#pragma unroll
      for (int tn = 0; tn < kTN; ++tn)
        fb[tn] = *reinterpret_cast<const chunk_t*>(
            lb + 8 * ldsChunk(wn * kWN + tn * kMI + fragRow(lane, kMI), c, kChunks));
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int tm = 0; tm < kTM; ++tm)
#pragma unroll
          for (int tn = 0; tn < kTN; ++tn)  // C^T = B^T A^T: B's fragment is the A operand
            acc[tm][tn] = mfma(half_of(fb[tn], h), half_of(fa[tm], h), acc[tm][tn]);
    }
  };

  if (ktiles > 0) {
#if NUM_STAGES == 1
    for (int kt = 0; kt < ktiles; ++kt) {
      a.load(kbase + kt * kBK, tid);
      b.load(kbase + kt * kBK, tid);
      if (kt > 0) ktune::sync_threads();  // everyone is done reading the previous tile
      a.store(sA, tid, kbase + kt * kBK);
      b.store(sB, tid, kbase + kt * kBK);
      ktune::sync_threads();
      compute(0);
    }
#else
    a.load(kbase, tid);
    b.load(kbase, tid);
    a.store(sA, tid, kbase);
    b.store(sB, tid, kbase);
    ktune::sync_threads();
    for (int kt = 0; kt < ktiles; ++kt) {
      const bool more = kt + 1 < ktiles;
      if (more) {  // next tile in flight during this tile's MFMAs
        a.load(kbase + (kt + 1) * kBK, tid);
        b.load(kbase + (kt + 1) * kBK, tid);
      }
      compute(kt % kBuffers);
      if (more) {
        a.holdUntilHere();
        b.holdUntilHere();
#if NUM_STAGES == 0
        ktune::sync_threads();  // one LDS buffer: everyone is done reading it
#endif
        a.store(sA + ((kt + 1) % kBuffers) * kBM * kBK, tid, kbase + (kt + 1) * kBK);
        b.store(sB + ((kt + 1) % kBuffers) * kBN * kBK, tid, kbase + (kt + 1) * kBK);
      }
      ktune::sync_threads();
    }
#endif
  }
#if SPLIT_K > 1
  if (!splitReduce(acc, workspace, counters, pid_m * grid_n + pid_n, M, N, m0 + wm * kWM,
                   n0 + wn * kWN, lane))
    return;
#endif
  epilogue(acc, Cv, biasv, M, N, ldc, alpha, beta, m0 + wm * kWM, n0 + wn * kWN, lane);
}


#endif  // KTUNE_AMD
