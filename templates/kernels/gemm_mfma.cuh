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
// step); GROUP_M tile swizzle; DTYPE_AB 0 f16 / 1 bf16; DTYPE_C 0 f16 / 1 bf16 / 2 f32; HAS_BIAS;
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
// The index math below (KTUNE_MFMA_INDEX) is plain constexpr C++ that tests/unit/
// amd_gemm_index_test.cc compiles on the host and checks against the documented MFMA register
// layouts (exact coverage, no bank conflicts).
#ifndef KTUNE_MFMA_HOST_INDEX_ONLY
#include "prelude.cuh"
#endif
// constexpr functions are host and device functions in HIP, so these serve both sides.
#define KTUNE_MFMA_HD inline

namespace kmi {

// 16-byte chunk slot of (row, chunk) in a tile of rows of `chunks` 16-byte chunks: the slots of
// each 128-byte line (8 chunks = all 32 banks) are permuted by XOR with a per-line key, so 8
// lanes writing 8 consecutive chunks, 8 lanes reading one chunk of 8 consecutive rows, and 8
// lanes writing one chunk of rows 8 apart (the transposed path) all hit 8 different bank groups.
KTUNE_MFMA_HD constexpr int ldsChunk(int row, int chunk, int chunks) {
  const int lin = row * chunks + chunk;
  const int per_line = chunks < 8 ? chunks : 8;
  const int key = (row * per_line / 8) & 7;
  return (lin & ~7) | ((lin & 7) ^ key);
}
// K elements one ds_read_b128 round covers: each lane reads 8 consecutive k of its row, and the
// 64 lanes hold 64/MI rows groups.
KTUNE_MFMA_HD constexpr int kPerRead(int mi) { return mi == 32 ? 16 : 32; }
// Operand fragment: lane reads row (lane % mi) of its operand tile, chunk (round * (64/mi) +
// lane / mi) of that row; its 8 elements feed MFMA `2*round` (first 4) and `2*round+1`.
KTUNE_MFMA_HD constexpr int fragRow(int lane, int mi) { return lane % mi; }
KTUNE_MFMA_HD constexpr int fragChunk(int lane, int mi, int round) {
  return round * (64 / mi) + lane / mi;
}
// Tile k of element e (0..3) of the 4-element operand of MFMA step `step` for this lane: the
// permutation described at the top (same for A and B).
KTUNE_MFMA_HD constexpr int fragK(int lane, int mi, int step, int e) {
  return fragChunk(lane, mi, step / 2) * 8 + (step % 2) * 4 + e;
}
// Accumulator element e of a lane (MFMA computes C^T): C row (m) and column (n) inside the
// mi x mi block. 32x32x8: D[i][j] is in lane j + 32 * ((i / 4) % 2), element (i / 8) * 4 + i % 4;
// 16x16x16: D[i][j] is in lane j + 16 * (i / 4), element i % 4 — with i = n, j = m here.
KTUNE_MFMA_HD constexpr int accM(int lane, int mi) { return lane % mi; }
KTUNE_MFMA_HD constexpr int accN(int lane, int mi, int e) {
  return mi == 32 ? 8 * (e / 4) + 4 * (lane / 32) + e % 4 : 4 * (lane / 16) + e;
}
// Waves arranged wavesM x wavesN over the block tile.
KTUNE_MFMA_HD constexpr int wavesM(int waves, int bm, int bn) {
  return waves == 8 && bm >= bn ? 4 : 2;
}

}  // namespace kmi

#ifndef KTUNE_MFMA_HOST_INDEX_ONLY

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
#define MATRIX_INSTR 16
#endif
#ifndef NUM_WAVES
#define NUM_WAVES 4
#endif
#ifndef WAVES_PER_EU
#define WAVES_PER_EU 0
#endif
#ifndef NUM_STAGES
#define NUM_STAGES 0
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
#ifndef SPLIT_K
#define SPLIT_K 1
#endif
#ifndef HAS_BETA
#define HAS_BETA 1  // beta != 0 possible: C is read (the host sets 0 when beta == 0)
#endif

#if KTUNE_AMD

namespace km {

using namespace kmi;
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

typedef int i32x4 __attribute__((ext_vector_type(4)));
typedef int i32x2 __attribute__((ext_vector_type(2)));
typedef ktune::Vec<unsigned, 4> chunk_t;  // 8 x 16-bit

// The buffer intrinsics, declared through their LLVM names (works with hiprtc's clang and 19).
__device__ i32x4 raw_buffer_load_x4(i32x4 rsrc, int voffset, int soffset, int aux) __asm(
    "llvm.amdgcn.raw.buffer.load.v4i32");

// A buffer resource over [base, base + bytes): loads past `bytes` return 0. Word 3 is the gfx9
// data format word (32-bit untyped), as CDNA's buffer instructions expect.
KTUNE_DEVICE i32x4 make_rsrc(const void* base, unsigned long long bytes) {
  const unsigned long long p = reinterpret_cast<unsigned long long>(base);
  // readfirstlane: the resource must live in SGPRs; a VGPR resource makes LLVM wrap every
  // buffer load in a waterfall loop.
  i32x4 r;
  r[0] = __builtin_amdgcn_readfirstlane(static_cast<int>(p));
  r[1] = __builtin_amdgcn_readfirstlane(static_cast<int>((p >> 32) & 0xffff));  // stride 0
  r[2] = __builtin_amdgcn_readfirstlane(
      static_cast<int>(bytes > 0xffffffffull ? 0xffffffffull : bytes));
  r[3] = 0x00020000;
  return r;
}
constexpr int kOutOfRange = 0x7ffffff0;  // a byte offset past any resource

KTUNE_DEVICE chunk_t load16(i32x4 rsrc, int byte_offset) {
  const i32x4 v = raw_buffer_load_x4(rsrc, byte_offset, 0, 0);
  chunk_t c;
  c[0] = static_cast<unsigned>(v[0]);
  c[1] = static_cast<unsigned>(v[1]);
  c[2] = static_cast<unsigned>(v[2]);
  c[3] = static_cast<unsigned>(v[3]);
  return c;
}
// Keeps the first `valid` 16-bit elements of a chunk (valid >= 8 keeps all).
KTUNE_DEVICE chunk_t mask16(chunk_t c, int valid) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const unsigned m = (2 * j < valid ? 0xffffu : 0u) | (2 * j + 1 < valid ? 0xffff0000u : 0u);
    c[j] &= m;
  }
  return c;
}
// LDS 16-byte write through a vector type: LLVM keeps it one ds_write_b128 (a struct store may
// be split into 64-bit halves).
KTUNE_DEVICE void lds_write16(unsigned short* p, const chunk_t& c) {
  i32x4 v;
  v[0] = static_cast<int>(c[0]);
  v[1] = static_cast<int>(c[1]);
  v[2] = static_cast<int>(c[2]);
  v[3] = static_cast<int>(c[3]);
  *reinterpret_cast<i32x4*>(p) = v;
}
KTUNE_DEVICE unsigned short elem(const chunk_t& c, int j) {
  return static_cast<unsigned short>(c[j >> 1] >> ((j & 1) * 16));
}

#if DTYPE_AB == 1
typedef ktune::bf16x4_t op_t;
#else
typedef ktune::half4_t op_t;
#endif
#if MATRIX_INSTR == 32
typedef ktune::floatx16_t acc_t;
constexpr int kAcc = 16;
#else
typedef ktune::floatx4_t acc_t;
constexpr int kAcc = 4;
#endif
KTUNE_DEVICE acc_t mfma(op_t a, op_t b, acc_t c) {
#if DTYPE_AB == 1 && MATRIX_INSTR == 32
  return ktune::mfma_32x32x8_bf16(a, b, c);
#elif DTYPE_AB == 1
  return ktune::mfma_16x16x16_bf16(a, b, c);
#elif MATRIX_INSTR == 32
  return ktune::mfma_32x32x8_f16(a, b, c);
#else
  return ktune::mfma_16x16x16_f16(a, b, c);
#endif
}
KTUNE_DEVICE op_t half_of(const chunk_t& c, int h) {
  op_t o;
  __builtin_memcpy(&o, &c.v[2 * h], sizeof(o));
  return o;
}

#if DTYPE_C == 2
typedef float out_t;
#elif DTYPE_C == 1
typedef ktune::bf16_t out_t;
#else
typedef ktune::half_t out_t;
#endif

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

// One operand's tile loader. K-major operands (A of NN/NT, B of NT/TT) load chunk q = row q / C,
// chunk q % C; MN-major ones load 8x8 blocks (block q: k-chunk q % C, MN rows 8 * (q / C)..+8),
// one 16-byte load per k row of the block.
template <int kRows, int kLoads, bool kKMajor>
struct Operand {
  chunk_t r[kLoads];
  const unsigned short* base;  // the stored matrix
  long ld, elems;              // leading dimension; stored rows * ld
  int mn0, mn_total, k_total;

  // A resource per tile, starting at the tile's first element: offsets stay below
  // 256 * ld * 2 bytes (the host keeps ld < 2^22), whatever the matrix size.
  KTUNE_DEVICE i32x4 tileRsrc(int k0) const {
    const long first = kKMajor ? (long)mn0 * ld + k0 : (long)k0 * ld + mn0;
    return make_rsrc(base + first, static_cast<unsigned long long>(elems - first) * 2);
  }
  KTUNE_DEVICE void load(int k0, int tid) {
    const i32x4 rsrc = tileRsrc(k0);
    if constexpr (kKMajor) {
#pragma unroll
      for (int i = 0; i < kLoads; ++i) {
        const int q = tid + i * kThreads, row = q / kChunks, kk = (q % kChunks) * 8;
        const bool in = mn0 + row < mn_total && k0 + kk < k_total;
        r[i] = load16(rsrc, in ? static_cast<int>((row * ld + kk) * 2) : kOutOfRange);
      }
    } else {
#pragma unroll
      for (int b = 0; b < kLoads / 8; ++b) {
        const int q = tid + b * kThreads, kk = (q % kChunks) * 8, col = (q / kChunks) * 8;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const bool in = k0 + kk + j < k_total && mn0 + col < mn_total;
          r[8 * b + j] =
              load16(rsrc, in ? static_cast<int>(((kk + j) * ld + col) * 2) : kOutOfRange);
        }
      }
    }
  }
  // After the MFMAs: an empty asm that "rewrites" the loaded registers, so the repacking of the
  // transposed path (and the tail masks) cannot be hoisted above the MFMAs, where it would make
  // the wave wait for its loads first.
  KTUNE_DEVICE void holdUntilHere() {
#pragma unroll
    for (int i = 0; i < kLoads; ++i)
#pragma unroll
      for (int h = 0; h < 4; ++h) asm volatile("" : "+v"(r[i][h]));
  }
  // Masking the K (or M/N) tail happens here, not at the load: touching the loaded registers
  // right away would make the wave wait for the loads before its MFMAs.
  KTUNE_DEVICE void store(unsigned short* lds, int tid, int k0) const {
    if constexpr (kKMajor) {
#pragma unroll
      for (int i = 0; i < kLoads; ++i) {
        const int q = tid + i * kThreads;
        lds_write16(lds + 8 * ldsChunk(q / kChunks, q % kChunks, kChunks),
                    mask16(r[i], k_total - k0 - (q % kChunks) * 8));
      }
    } else {
#pragma unroll
      for (int b = 0; b < kLoads / 8; ++b) {
        const int q = tid + b * kThreads, kc = q % kChunks, row0 = (q / kChunks) * 8;
        const int valid = mn_total - mn0 - row0;  // columns past M/N read as zero
#pragma unroll
        for (int j = 0; j < 8; ++j) {  // row row0 + j: element j of the 8 loaded k rows
          chunk_t t;
#pragma unroll
          for (int h = 0; h < 4; ++h)
            t[h] = elem(r[8 * b + 2 * h], j) | (static_cast<unsigned>(elem(r[8 * b + 2 * h + 1], j)) << 16);
          lds_write16(lds + 8 * ldsChunk(row0 + j, kc, kChunks), j < valid ? t : chunk_t{});
        }
      }
    }
  }
};

KTUNE_DEVICE void epilogue(acc_t (&acc)[kTM][kTN], void* Cv, const void* biasv, int M, int N,
                           long ldc, float alpha, float beta, int m_base, int n_base, int lane) {
  out_t* C = reinterpret_cast<out_t*>(Cv);
  const out_t* bias = reinterpret_cast<const out_t*>(biasv);
  (void)bias;
  (void)beta;
  // 4 consecutive n per group: vector stores when they are in range and C rows are aligned.
  const unsigned long long align = 4 * sizeof(out_t);
  bool vec = ldc % 4 == 0 && reinterpret_cast<unsigned long long>(C) % align == 0;
#if HAS_BIAS
  vec = vec && reinterpret_cast<unsigned long long>(bias) % align == 0;
#endif
#pragma unroll
  for (int tm = 0; tm < kTM; ++tm)
#pragma unroll
    for (int tn = 0; tn < kTN; ++tn)
#pragma unroll
      for (int g = 0; g < kAcc / 4; ++g) {
        const int m = m_base + tm * kMI + accM(lane, kMI);
        const int n = n_base + tn * kMI + accN(lane, kMI, 4 * g);
        if (m >= M) continue;
        float v[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) v[e] = alpha * acc[tm][tn][4 * g + e];
        out_t* dst = C + (long)m * ldc + n;
        if (vec && n + 4 <= N) {
          ktune::Vec<out_t, 4> o;
#if HAS_BETA
          const ktune::Vec<out_t, 4> old = ktune::load_vec<4>(dst);
#endif
#if HAS_BIAS
          const ktune::Vec<out_t, 4> bv = ktune::load_vec<4>(bias + n);
#endif
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            float x = v[e];
#if HAS_BETA
            x += beta * ktune::to_float(old[e]);
#endif
#if HAS_BIAS
            x += ktune::to_float(bv[e]);
#endif
            o[e] = ktune::from_float<out_t>(activate(x));
          }
          ktune::store_vec<4>(dst, o);
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            if (n + e >= N) continue;
            float x = v[e];
#if HAS_BETA
            x += beta * ktune::to_float(dst[e]);
#endif
#if HAS_BIAS
            x += ktune::to_float(bias[n + e]);
#endif
            dst[e] = ktune::from_float<out_t>(activate(x));
          }
        }
      }
}

#if SPLIT_K > 1
typedef __attribute__((address_space(1))) float global_float;
// Split-K: each z slice adds its fp32 partial tile into `workspace` (M x N floats) with hardware
// float atomics and bumps counters[tile]; the last slice to arrive reads the sums back 16 bytes at
// a time (the host requires N % 4 == 0), restores the workspace and its counter to zero, and returns true to run
// the epilogue. The caller zeroes workspace and counters once per allocation, never per launch.
KTUNE_DEVICE bool splitReduce(acc_t (&acc)[kTM][kTN], float* workspace, unsigned* counters,
                              int tile, int M, int N, int m_base, int n_base, int lane) {
  __shared__ unsigned is_last;
#pragma unroll
  for (int tm = 0; tm < kTM; ++tm)
#pragma unroll
    for (int tn = 0; tn < kTN; ++tn)
#pragma unroll
      for (int e = 0; e < kAcc; ++e) {
        const int m = m_base + tm * kMI + accM(lane, kMI), n = n_base + tn * kMI + accN(lane, kMI, e);
        if (m < M && n < N)
          __builtin_amdgcn_global_atomic_fadd_f32(
              (global_float*)(workspace + (long)m * N + n), acc[tm][tn][e]);
      }
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "agent");
  ktune::sync_threads();
  if (ktune::tid_x() == 0)
    is_last = __hip_atomic_fetch_add(counters + tile, 1u, __ATOMIC_ACQ_REL,
                                     __HIP_MEMORY_SCOPE_AGENT) == SPLIT_K - 1;
  ktune::sync_threads();
  if (!is_last) return false;
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "agent");
  // N % 4 == 0 (the host's rule for SPLIT_K > 1): each group of 4 is in range or out whole.
#pragma unroll
  for (int tm = 0; tm < kTM; ++tm)
#pragma unroll
    for (int tn = 0; tn < kTN; ++tn)
#pragma unroll
      for (int g = 0; g < kAcc / 4; ++g) {
        const int m = m_base + tm * kMI + accM(lane, kMI), n = n_base + tn * kMI + accN(lane, kMI, 4 * g);
        if (m >= M || n >= N) continue;
        float* w = workspace + (long)m * N + n;
        const ktune::Vec<float, 4> v = ktune::load_vec<4>(w);
        ktune::store_vec<4>(w, ktune::Vec<float, 4>{});
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[tm][tn][4 * g + e] = v[e];
      }
  if (ktune::tid_x() == 0) counters[tile] = 0u;
  return true;
}
#endif

}  // namespace km

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
  const int pid = ktune::bid_x();
  const int in_group = GROUP_M * grid_n;
  const int first_m = (pid / in_group) * GROUP_M;
  const int group_rows = grid_m - first_m < GROUP_M ? grid_m - first_m : GROUP_M;
  const int pid_m = first_m + (pid % in_group) % group_rows;
  const int pid_n = (pid % in_group) / group_rows;
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
#endif  // KTUNE_MFMA_HOST_INDEX_ONLY
