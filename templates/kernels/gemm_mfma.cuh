// ktune GEMM for AMD CDNA (gfx90a, gfx942) matrix cores (MFMA). Compile-and-analyse only in this
// project (no AMD GPU is available to test it on).
//
//   C = act(alpha * A * op(B) + beta * C + bias)     fp16/bf16 in, fp32 accumulate
//
// LAYOUT 0 NN: A [M][K], B [K][N];  1 NT: A [M][K], B [N][K]. C [M][N]; bias N elements of the C
// dtype. ACT: 0 none, 1 SiLU, 2 GELU (tanh form: no libm with -nogpulib).
//
// Config (-D): BLOCK_M, BLOCK_N, BLOCK_K; MATRIX_INSTR 16 (v_mfma_f32_16x16x16{f16,bf16_1k}) or
// 32 (v_mfma_f32_32x32x8{f16,bf16_1k}); NUM_WAVES (waves of 64 lanes, arranged 2 x NUM_WAVES/2);
// WAVES_PER_EU (amdgpu_waves_per_eu occupancy hint, 0 = none); NUM_STAGES 1 (one LDS buffer) or
// 2 (LDS double buffer: the next tile's 128-bit global loads are in flight while the current one is
// multiplied); GROUP_M tile swizzle; DTYPE_AB 0 f16 / 1 bf16; DTYPE_C 0 f16 / 1 bf16 / 2 f32;
// HAS_BIAS; ACT. The host requires 16-byte aligned A/B with lda % 8 == 0 and ldb % 8 == 0.
//
// LDS tiles are K-contiguous ([BM][BK] and [BN][BK]) with 8 elements of row padding so each lane's
// 8-byte operand read (ds_read_b64) spreads over the banks; for NN the B tile is transposed while
// it is written to LDS. LDS is static: NUM_STAGES * (BLOCK_M + BLOCK_N) * (BLOCK_K + 8) * 2 bytes.
#include "prelude.cuh"

#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 128
#endif
#ifndef BLOCK_K
#define BLOCK_K 32
#endif
#ifndef MATRIX_INSTR
#define MATRIX_INSTR 32
#endif
#ifndef NUM_WAVES
#define NUM_WAVES 4
#endif
#ifndef WAVES_PER_EU
#define WAVES_PER_EU 0
#endif
#ifndef NUM_STAGES
#define NUM_STAGES 2
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef LAYOUT
#define LAYOUT 1
#endif
#ifndef DTYPE_AB
#define DTYPE_AB 1
#endif
#ifndef DTYPE_C
#define DTYPE_C 1
#endif
#ifndef HAS_BIAS
#define HAS_BIAS 0
#endif
#ifndef ACT
#define ACT 0
#endif

#if KTUNE_AMD

namespace km {

constexpr int kBM = BLOCK_M, kBN = BLOCK_N, kBK = BLOCK_K;
constexpr int kMI = MATRIX_INSTR;
constexpr int kWaves = NUM_WAVES, kThreads = 64 * kWaves;
constexpr int kWavesM = 2, kWavesN = kWaves / 2;
constexpr int kWM = kBM / kWavesM, kWN = kBN / kWavesN;
constexpr int kTM = kWM / kMI, kTN = kWN / kMI;  // MFMA tiles per wave
constexpr int kKStep = kMI == 32 ? 8 : 16;        // k per MFMA
constexpr int kStages = NUM_STAGES;
constexpr bool kTransB = (LAYOUT == 1);
constexpr int kRow = kBK + 8;  // padded LDS row (elements)
constexpr int kATile = kBM * kRow, kBTile = kBN * kRow;
constexpr int kAIters = kBM * kBK / 8 / kThreads;
constexpr int kBIters = kBN * kBK / 8 / kThreads;

static_assert(kMI == 16 || kMI == 32, "MATRIX_INSTR must be 16 or 32");
static_assert(kStages == 1 || kStages == 2, "NUM_STAGES must be 1 or 2 on AMD");
static_assert(kWaves % 2 == 0, "NUM_WAVES must be even");
static_assert(kWM % kMI == 0 && kWN % kMI == 0, "wave tile must be a multiple of MATRIX_INSTR");
static_assert(kBK % 16 == 0, "BLOCK_K must be a multiple of 16");
static_assert(kAIters * kThreads * 8 == kBM * kBK, "A tile chunks must divide among threads");
static_assert(kBIters * kThreads * 8 == kBN * kBK, "B tile chunks must divide among threads");

typedef ktune::Vec<unsigned, 4> chunk_t;  // 8 x 16-bit, one 128-bit global load

#if DTYPE_AB == 1
typedef ktune::bf16x4_t op_t;
#if MATRIX_INSTR == 32
KTUNE_DEVICE ktune::floatx16_t mfma(op_t a, op_t b, ktune::floatx16_t c) {
  return ktune::mfma_32x32x8_bf16(a, b, c);
}
#else
KTUNE_DEVICE ktune::floatx4_t mfma(op_t a, op_t b, ktune::floatx4_t c) {
  return ktune::mfma_16x16x16_bf16(a, b, c);
}
#endif
#else
typedef ktune::half4_t op_t;
#if MATRIX_INSTR == 32
KTUNE_DEVICE ktune::floatx16_t mfma(op_t a, op_t b, ktune::floatx16_t c) {
  return ktune::mfma_32x32x8_f16(a, b, c);
}
#else
KTUNE_DEVICE ktune::floatx4_t mfma(op_t a, op_t b, ktune::floatx4_t c) {
  return ktune::mfma_16x16x16_f16(a, b, c);
}
#endif
#endif

#if MATRIX_INSTR == 32
typedef ktune::floatx16_t acc_t;
constexpr int kAcc = 16;
#else
typedef ktune::floatx4_t acc_t;
constexpr int kAcc = 4;
#endif

#if DTYPE_C == 2
typedef float out_t;
#elif DTYPE_C == 1
typedef ktune::bf16_t out_t;
#else
typedef ktune::half_t out_t;
#endif
KTUNE_DEVICE float out_to_float(out_t v) { return ktune::to_float(v); }
KTUNE_DEVICE out_t out_from_float(float v) { return ktune::from_float<out_t>(v); }

KTUNE_DEVICE int imin(int a, int b) { return a < b ? a : b; }

KTUNE_DEVICE float activate(float v) {
#if ACT == 1
  return ktune::silu(v);
#elif ACT == 2
  const float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
  const float t = 1.0f - ktune::fast_div(2.0f, ktune::exp_fast(2.0f * u) + 1.0f);  // tanh(u)
  return 0.5f * v * (1.0f + t);
#else
  return v;
#endif
}

// 8 consecutive elements at g[row * ld + col], zero outside row < rows, col < cols. The fast
// case is one 128-bit load (global_load_dwordx4); the edge case loads element by element.
KTUNE_DEVICE chunk_t load_chunk(const unsigned short* __restrict__ g, long ld, int row, int col,
                                int rows, int cols) {
  chunk_t v;
  if (row < rows && col + 8 <= cols) {
    v = *reinterpret_cast<const chunk_t*>(g + (long)row * ld + col);
  } else {
    unsigned short h[8];
#pragma unroll
    for (int j = 0; j < 8; ++j)
      h[j] = (row < rows && col + j < cols) ? g[(long)row * ld + col + j] : (unsigned short)0;
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = h[2 * j] | ((unsigned)h[2 * j + 1] << 16);
  }
  return v;
}

}  // namespace km

KTUNE_KERNEL void KTUNE_LAUNCH_BOUNDS(km::kThreads, WAVES_PER_EU)
    ktune_gemm_mfma(const unsigned short* __restrict__ A, const unsigned short* __restrict__ B,
                    void* Cv, const void* biasv, float* workspace, unsigned* counters, int M,
                    int N, int K, long lda, long ldb, long ldc, float alpha, float beta) {
  using namespace km;
  __shared__ __attribute__((aligned(16))) unsigned short sA[kStages * kATile];
  __shared__ __attribute__((aligned(16))) unsigned short sB[kStages * kBTile];
  out_t* C = reinterpret_cast<out_t*>(Cv);
  const out_t* bias = reinterpret_cast<const out_t*>(biasv);
  (void)bias;
  (void)workspace;
  (void)counters;

  const int tid = ktune::tid_x(), lane = tid & 63, wave = tid >> 6;
  const int wm = wave / kWavesN, wn = wave % kWavesN;
  const int grid_m = (M + kBM - 1) / kBM, grid_n = (N + kBN - 1) / kBN;
  const int pid = ktune::bid_x();
  const int in_group = GROUP_M * grid_n;
  const int first_m = (pid / in_group) * GROUP_M;
  const int group_rows = imin(grid_m - first_m, GROUP_M);
  const int pid_m = first_m + (pid % in_group) % group_rows;
  const int pid_n = (pid % in_group) / group_rows;
  const int m0 = pid_m * kBM, n0 = pid_n * kBN;
  const int ktiles = (K + kBK - 1) / kBK;

  chunk_t ra[kAIters], rb[kBIters];
  auto load_global = [&](int kt) {
    const int k0 = kt * kBK;
#pragma unroll
    for (int i = 0; i < kAIters; ++i) {
      const int c = tid + i * kThreads, r = c / (kBK / 8), c8 = c % (kBK / 8);
      ra[i] = load_chunk(A, lda, m0 + r, k0 + c8 * 8, M, K);
    }
#pragma unroll
    for (int i = 0; i < kBIters; ++i) {
      const int c = tid + i * kThreads;
      if constexpr (kTransB) {
        const int r = c / (kBK / 8), c8 = c % (kBK / 8);
        rb[i] = load_chunk(B, ldb, n0 + r, k0 + c8 * 8, N, K);
      } else {
        const int r = c / (kBN / 8), c8 = c % (kBN / 8);  // r: k row, c8: chunk of 8 n
        rb[i] = load_chunk(B, ldb, k0 + r, n0 + c8 * 8, K, N);
      }
    }
  };
  auto store_lds = [&](int slot) {
    unsigned short* a = sA + slot * kATile;
    unsigned short* b = sB + slot * kBTile;
#pragma unroll
    for (int i = 0; i < kAIters; ++i) {
      const int c = tid + i * kThreads, r = c / (kBK / 8), c8 = c % (kBK / 8);
      *reinterpret_cast<chunk_t*>(a + r * kRow + c8 * 8) = ra[i];
    }
#pragma unroll
    for (int i = 0; i < kBIters; ++i) {
      const int c = tid + i * kThreads;
      if constexpr (kTransB) {
        const int r = c / (kBK / 8), c8 = c % (kBK / 8);
        *reinterpret_cast<chunk_t*>(b + r * kRow + c8 * 8) = rb[i];
      } else {
        // Transpose: the chunk holds 8 n for one k; LDS B is [n][k].
        const int r = c / (kBN / 8), c8 = c % (kBN / 8);
#pragma unroll
        for (int j = 0; j < 8; ++j)
          b[(c8 * 8 + j) * kRow + r] = static_cast<unsigned short>(rb[i][j >> 1] >> ((j & 1) * 16));
      }
    }
  };

  acc_t acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j)
#pragma unroll
      for (int e = 0; e < kAcc; ++e) acc[i][j][e] = 0.0f;

  // Operand lanes: row (or column) lane % kMI, k offset 4 * (lane / kMI) inside each MFMA step.
  const int lrow = lane % kMI, lk = (lane / kMI) * 4;
  auto compute = [&](int slot) {
    const unsigned short* a = sA + slot * kATile;
    const unsigned short* b = sB + slot * kBTile;
#pragma unroll
    for (int ks = 0; ks < kBK / kKStep; ++ks) {
      op_t av[kTM], bv[kTN];
#pragma unroll
      for (int tm = 0; tm < kTM; ++tm)
        av[tm] = *reinterpret_cast<const op_t*>(a + (wm * kWM + tm * kMI + lrow) * kRow + ks * kKStep + lk);
#pragma unroll
      for (int tn = 0; tn < kTN; ++tn)
        bv[tn] = *reinterpret_cast<const op_t*>(b + (wn * kWN + tn * kMI + lrow) * kRow + ks * kKStep + lk);
#pragma unroll
      for (int tm = 0; tm < kTM; ++tm)
#pragma unroll
        for (int tn = 0; tn < kTN; ++tn) acc[tm][tn] = mfma(av[tm], bv[tn], acc[tm][tn]);
    }
  };

  if (ktiles > 0) {
#if NUM_STAGES == 2
    load_global(0);
    store_lds(0);
    ktune::sync_threads();
    for (int kt = 0; kt < ktiles; ++kt) {
      const bool more = kt + 1 < ktiles;
      if (more) load_global(kt + 1);  // in flight during the MFMAs below
      compute(kt & 1);
      if (more) store_lds((kt + 1) & 1);
      ktune::sync_threads();
    }
#else
    for (int kt = 0; kt < ktiles; ++kt) {
      load_global(kt);
      ktune::sync_threads();  // everyone finished reading the previous tile
      store_lds(0);
      ktune::sync_threads();
      compute(0);
    }
#endif
  }

  // D layout: 32x32: row = 8*(e/4) + 4*(lane/32) + e%4, col = lane%32;
  //           16x16: row = 4*(lane/16) + e,              col = lane%16.
#pragma unroll
  for (int tm = 0; tm < kTM; ++tm)
#pragma unroll
    for (int tn = 0; tn < kTN; ++tn)
#pragma unroll
      for (int e = 0; e < kAcc; ++e) {
        const int row = kMI == 32 ? 8 * (e / 4) + 4 * (lane / 32) + (e % 4) : 4 * (lane / 16) + e;
        const int r = m0 + wm * kWM + tm * kMI + row;
        const int c = n0 + wn * kWN + tn * kMI + (lane % kMI);
        if (r >= M || c >= N) continue;
        float v = alpha * acc[tm][tn][e];
        out_t* dst = C + (long)r * ldc + c;
        if (beta != 0.0f) v += beta * out_to_float(*dst);
#if HAS_BIAS
        v += out_to_float(bias[c]);
#endif
        *dst = out_from_float(activate(v));
      }
}

#endif  // KTUNE_AMD
