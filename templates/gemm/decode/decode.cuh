// ktune decode GEMM for NVIDIA sm_80+: M <= 128 (LLM decode), the weights streamed once, every SM
// busy whatever N is.
//
//   C[M][N] = act(alpha * A[M][K] * B[N][K]^T + beta * C + bias)    (LAYOUT NT only)
//
// ACT 3 (silu_mul, the gate/up pair): B is [gate; up] (N rows, N/2 each) and C gets N/2 columns,
// C[m][j] = silu(alpha*G[m][j] + bias[j]) * (alpha*U[m][j] + bias[N/2 + j]) + beta*C[m][j]. The
// 16-row mma tile t then reads gate rows j0..j0+7 as its rows 0-7 and up rows N/2+j0.. as rows
// 8-15 (j0 = 8*t): the pair's two sums meet in one tile, so the epilogue needs no second pass and
// writes half the bytes.
//
// Work: the weight rows B are cut in tiles of DC_NT*16 rows and K in block steps of
// DC_WARPS*32*DC_U; the (tile, block step) units, tile-major, are split into gridDim.x equal
// contiguous ranges (stream-K): each block streams the same number of weight bytes, so no SM idles
// for lack of N and no block is a straggler. Within a block step the warps take consecutive k
// slices of the same rows, so a block reads each of its rows in DC_WARPS*64*DC_U-byte runs (DRAM
// page locality: the probe in dev/decode measured warps on different rows 5-15% slower).
// Each thread loads weight rows g and g+8 of its tiles with 16-byte loads straight into a ring of
// DC_DEPTH register fragments (compile-time indices: they stay in registers); the ring runs over
// the block's whole range, across tiles, so the stream never drains between them.
// Swap AB on mma.sync m16n8k16 (C^T = B * A^T): weight rows are the mma A side, the M rows of A
// the n8 side (DC_MT tiles of 8). A sum over k does not depend on its order, so each thread feeds
// the mma the 8 consecutive k of its own 16-byte load, the same permutation for both operands.
// A block's run over one tile ends in a flush: the warps' sums meet in shared memory; if the run
// covered all of K the tile is stored; else the run's sums are added (fp32 atomics) into the M x N
// workspace and its step count into the tile's counter, and the block that completes the count
// reads the sums back, stores the tile and zeroes both (self-cleaning: the next call finds
// zeros). C is written once; only tiles that a range boundary cuts go through the workspace.
//
// Config: DC_WARPS (4, 8), DC_NT (1, 2), DC_MT (1, 2, 4, 8, 16: M <= 8*DC_MT), DC_U (1, 2, 4),
// DC_DEPTH (2, 4), DC_PF (1 L2 256-byte prefetch, 2 prefetch + evict-first; 0 plain), DC_XR (1: the
// A chunks ride in the ring with the weights; 0: loaded when the step is consumed, fewer
// registers), DTYPE_AB, DTYPE_C, HAS_BIAS, ACT. Host requirements (launch rule): K % 8 == 0,
// lda % 8 == 0, ldb % 8 == 0, A and B 16-byte aligned, M <= 8*DC_MT.
// Dynamic shared memory: DC_WARPS * DC_NT*16 * (DC_MT*8 + 1) * 4 bytes (the warps' sums).
// Arguments: as the skinny kernel; `counters` holds ceil(N / (16*DC_NT)) counters.
//
// DC_WG = 1 (sm_90a) swaps the mma.sync body for a warpgroup-MMA one (decode_wg.cuh, described
// there): weight tiles of 64 rows are wgmma's A operand from shared memory and the M rows of A its
// N side (8*DC_MT = 8..128), streamed through a shared-memory ring by a producer warp. The knobs
// keep their names with that kernel's meaning; the helpers below (problem, gate/up row mapping,
// epilogue stores) serve both. DC_WG = 3 is a CUDA-core FMA body for M <= 8 (decode_fma.cuh).
#if !defined(DC_WARPS) || !defined(DC_NT) || !defined(DC_MT) || !defined(DC_U) || \
    !defined(DC_DEPTH) || !defined(DC_PF) || !defined(DC_XR)
#error "decode.cuh: define DC_WARPS, DC_NT, DC_MT, DC_U, DC_DEPTH, DC_PF and DC_XR (see gemm::defines)"
#endif
#ifndef DC_WG
#define DC_WG 0
#endif
#if DC_WG == 1 || DC_WG == 2  // the prelude's wgmma helpers for the operand type
#if DTYPE_AB == 2
#define KTUNE_WGMMA_T "bf16"
#else
#define KTUNE_WGMMA_T "f16"
#endif
#endif
#include "prelude.cuh"
#define KGEMM_STREAM_PF DC_PF
#include "gemm_common.cuh"

namespace kd {

using namespace kgemm;

// Workspace words through L2 only (the other blocks' atomics land there): __ldcg/__stcg's PTX,
// written out because clang's CUDA shims have no float overloads of them.
KTUNE_DEVICE float ld_cg(const float* p) {
  float v;
  asm volatile("ld.global.cg.f32 %0, [%1];\n" : "=f"(v) : "l"(p));
  return v;
}
KTUNE_DEVICE void st_cg(float* p, float v) {
  asm volatile("st.global.cg.f32 [%0], %1;\n" ::"l"(p), "f"(v) : "memory");
}

// The problem, as every helper needs it.
struct Prob {
  const unsigned short* A;
  const unsigned short* B;
  out_t* C;
  const out_t* bias;
  float* ws;
  unsigned* counters;
  int M, N, K, nsteps;  // nsteps: block steps per tile (all of K)
  int half;             // ACT 3: N/2, the first up row
  long lda, ldb, ldc;
  float alpha, beta;
};

// The weight row behind row n of the tile at row0 (tile rows run over N; with ACT 3 over the
// gate/up pairs, see the top), or -1 past N.
KTUNE_DEVICE int weight_row(const Prob& p, int row0, int n) {
#if ACT == 3
  const int j = (row0 + (n & ~15)) / 2 + (n & 7);
  return j < p.half ? j + ((n >> 3) & 1) * p.half : -1;
#else
  return row0 + n < p.N ? row0 + n : -1;
#endif
}

// Output element (n, m) of accumulator (t, mt, e): n = row0 + t*16 + g + (e/2)*8, m = mt*8 + 2q + e%2.
KTUNE_DEVICE void store_out(const Prob& p, int n, int m, float v) {
  v *= p.alpha;
  out_t* dst = p.C + (long)m * p.ldc + n;
  if (p.beta != 0.0f) v += p.beta * out_to_float(*dst);
#if HAS_BIAS
  v += out_to_float(p.bias[n]);
#endif
  *dst = out_from_float(activate(v));
}

// ACT 3: output column j's value from its gate and up sums, before the residual.
KTUNE_DEVICE float gated_out(const Prob& p, int j, float gate, float up) {
  gate *= p.alpha;
  up *= p.alpha;
#if HAS_BIAS
  gate += out_to_float(p.bias[j]);
  up += out_to_float(p.bias[p.half + j]);
#endif
  return silu_mul_value(gate, up);
}

// ACT 3: output column j from the gate and up sums.
KTUNE_DEVICE void store_gated(const Prob& p, int j, int m, float gate, float up) {
  float v = gated_out(p, j, gate, up);
  out_t* dst = p.C + (long)m * p.ldc + j;
  if (p.beta != 0.0f) v += p.beta * out_to_float(*dst);
  *dst = out_from_float(v);
}

// A residual add (beta != 0) reads C in the epilogue, after the tile's last weight byte, and waited
// on DRAM there (bench/NOTES.md: 4-14% of a flushed 13-19 us decode GEMM): the 128-byte lines of
// output columns [c0, c1) of every row of A, and the bias's, prefetched into L2 at the start.
// Threads t of nt share the lines.
// l1: into L1 instead (the wgmma bodies, at a tile's last stage, for a residual add: its epilogue's
// loads then hit L1).
KTUNE_DEVICE void prefetch_out(const Prob& p, int c0, int c1, int t, int nt, bool l1 = false) {
  constexpr int per = 128 / (int)sizeof(out_t);  // columns per line
  c1 = min(c1, ACT == 3 ? p.half : p.N);
  const int lines = c1 > c0 ? (c1 - c0 + per - 1) / per : 0;
  const int crows = p.beta != 0.0f ? p.M : 0;
  const int rows = crows + (HAS_BIAS ? (ACT == 3 ? 2 : 1) : 0);
  for (int i = t; i < lines * rows; i += nt) {
    const int r = i / lines, c = c0 + (i - r * lines) * per;
    const out_t* a = r < crows ? p.C + (long)r * p.ldc + c : p.bias + (long)(r - crows) * p.half + c;
    if (l1) asm volatile("prefetch.global.L1 [%0];\n" ::"l"(a));
    else asm volatile("prefetch.global.L2 [%0];\n" ::"l"(a));
  }
}

// Programmatic dependent launch: a block's (or warp's) first weight bytes, rows r < `rows` (weight
// row row_of(r), < 0 past N) from element k0, kelems elements each, prefetched into L2 by threads t
// of nt before KTUNE_PDL_WAIT(), so DRAM starts on them while the previous kernel drains instead of
// after the launch ramp. Safe whatever the previous kernel writes: a model's weights never are
// written there, but the op cannot know it; a prefetch is a hint that reads no value, and L2 is the
// point of coherence for global memory, so a line written after the prefetch is read, after the
// wait, as written. Without a programmatic launch the wait returns at once and the prefetches are
// a few instructions ahead of the loads of the same lines.
template <class RowOf>
KTUNE_DEVICE void prefetch_weights(const Prob& p, RowOf row_of, int rows, int k0, int kelems, int t,
                                   int nt) {
  constexpr int per = 64;  // 16-bit elements per 128-byte line
  const int lines = (kelems + per - 1) / per;
  for (int i = t; i < rows * lines; i += nt) {
    const int r = i / lines, k = k0 + (i - r * lines) * per, row = row_of(r);
    if (row >= 0 && k < p.K) asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p.B + (long)row * p.ldb + k));
  }
}

}  // namespace kd

#if DC_WG == 3
#include "decode_fma.cuh"
#elif DC_WG
#include "decode_wg.cuh"
#else
namespace kd {

constexpr int kWarps = DC_WARPS, kNT = DC_NT, kMT = DC_MT, kU = DC_U, kD = DC_DEPTH;
static_assert(kD >= 1 && kD <= 8, "DC_DEPTH must be 1..8");
constexpr int kThreads = 32 * kWarps;
constexpr int kBN = 16 * kNT, kBM = 8 * kMT;  // a tile: weight rows x A rows
constexpr int kStep = 32 * kU;                 // k per warp step: 4 lanes x kU chunks x 8
constexpr int kBlockStep = kStep * kWarps;     // k per block step (one unit)
constexpr int kRedStride = kBM + 1;            // padded row of the reduction buffer

// ld_stream and l2_policy: gemm_common.cuh (KGEMM_STREAM_PF = DC_PF).

struct Frag {
  uint4 w[kNT][kU][2];  // weight rows g and g+8 of each 16-row tile
#if DC_XR
  uint4 x[kMT][kU];  // A row g of each 8-row tile, loaded with the weights
#endif
};

// A row (token) chunk: L1-allocating (every warp of the block reads it), zeros when !ok.
KTUNE_DEVICE uint4 ld_x(const unsigned short* p, bool ok) {
  return ok ? __ldg(reinterpret_cast<const uint4*>(p)) : make_uint4(0, 0, 0, 0);
}

// The warp's acc into its slice of `red` ([kWarps][kBN][kRedStride]), and acc zeroed.
KTUNE_DEVICE void stash(float* red, float (&acc)[kNT][kMT][4], int warp, int lane) {
  const int g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        red[(warp * kBN + t * 16 + g + (e >> 1) * 8) * kRedStride + mt * 8 + q * 2 + (e & 1)] =
            acc[t][mt][e];
        acc[t][mt][e] = 0.0f;
      }
}

KTUNE_DEVICE float warp_sum(const float* red, int n, int m) {
  float v = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) v += red[(w * kBN + n) * kRedStride + m];
  return v;
}

// The tile's sum for row n (weight row `row`), column m: from the warps' slices, or (a range cut
// the tile) from the workspace, which it leaves zero.
KTUNE_DEVICE float tile_sum(const Prob& p, const float* red, bool whole, int row, int n, int m) {
  if (whole) return warp_sum(red, n, m);
  float* w = p.ws + (long)m * p.N + row;
  const float v = ld_cg(w);
  st_cg(w, 0.0f);
  return v;
}

// End of the block's run of `steps` block steps over the tile at row0 (block-uniform): store, or
// add into the workspace and let the block that completes the tile's count store. Ends with a
// barrier, so `red` is free again.
KTUNE_DEVICE void flush(const Prob& p, float* red, float (&acc)[kNT][kMT][4], int row0, int steps,
                        int tid) {
  __shared__ unsigned last;
  stash(red, acc, tid >> 5, tid & 31);
  __syncthreads();
  const bool whole = steps == p.nsteps;
  if (!whole) {
    for (int i = tid; i < kBN * kBM; i += kThreads) {
      const int n = i % kBN, m = i / kBN, row = weight_row(p, row0, n);
      if (row >= 0 && m < p.M) atomicAdd(p.ws + (long)m * p.N + row, warp_sum(red, n, m));
    }
    __threadfence();
    __syncthreads();
    if (tid == 0) {
      unsigned* cnt = p.counters + row0 / kBN;
      last = atomicAdd(cnt, (unsigned)steps) + (unsigned)steps == (unsigned)p.nsteps ? 1u : 0u;
      if (last) *cnt = 0u;
    }
    __syncthreads();
    if (last) __threadfence();
  }
  if (whole || last) {
#if ACT == 3
    // Gate row n and up row n + 8 of each 16-row tile make one output column.
    for (int i = tid; i < kBN / 2 * kBM; i += kThreads) {
      const int c = i % (kBN / 2), m = i / (kBN / 2), n = (c & ~7) * 2 + (c & 7);
      const int row = weight_row(p, row0, n);
      if (row < 0 || m >= p.M) continue;
      store_gated(p, row, m, tile_sum(p, red, whole, row, n, m),
                  tile_sum(p, red, whole, row + p.half, n + 8, m));
    }
#else
    for (int i = tid; i < kBN * kBM; i += kThreads) {
      const int n = i % kBN, m = i / kBN;
      if (row0 + n >= p.N || m >= p.M) continue;
      store_out(p, row0 + n, m, tile_sum(p, red, whole, row0 + n, n, m));
    }
#endif
  }
  __syncthreads();
}

}  // namespace kd


KTUNE_KERNEL void KTUNE_LAUNCH_BOUNDS(kd::kThreads, 1)
    ktune_gemm_decode(const unsigned short* __restrict__ A, const unsigned short* __restrict__ B,
                      void* Cv, const void* biasv, float* workspace, unsigned* counters, int M,
                      int N, int K, long lda, long ldb, long ldc, float alpha, float beta) {
  using namespace kd;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float* red = reinterpret_cast<float*>(smem_raw);  // [kWarps][kBN][kRedStride]
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, q = lane & 3;
  Prob p{A, B, reinterpret_cast<out_t*>(Cv), reinterpret_cast<const out_t*>(biasv), workspace,
         counters, M, N, K, (K + kBlockStep - 1) / kBlockStep, N / 2, lda, ldb, ldc, alpha, beta};

  // This block's range [u0, u1) of the (tile, block step) units.
  const long units = (long)((N + kBN - 1) / kBN) * p.nsteps;
  const long u0 = units * blockIdx.x / gridDim.x, u1 = units * (blockIdx.x + 1) / gridDim.x;
  const int S = (int)(u1 - u0);
  if (S > 0) {  // the first block step's weights into L2 before the wait (prefetch_weights)
    const int tile = (int)(u0 / p.nsteps), st = (int)(u0 - (long)tile * p.nsteps);
    prefetch_weights(p, [&](int n) { return weight_row(p, tile * kBN, n); }, kBN, st * kBlockStep,
                     kBlockStep, tid, kThreads);
  }
  KTUNE_PDL_WAIT(); KTUNE_PDL_LAUNCH_DEPENDENTS();  // prelude.cuh: no memory read above

  const unsigned short* xrow[kMT];
  bool xok[kMT];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    const int m = mt * 8 + g;
    xok[mt] = m < M;
    xrow[mt] = A + (long)(xok[mt] ? m : 0) * lda;
  }
  const unsigned long long pol = l2_policy();

  // Weight (and with DC_XR, A) loads of the block's step s into ring slot f; zeros past the
  // range, N or K. This warp's k slice of the step starts at st*kBlockStep + warp*kStep.
  auto load = [&](Frag& f, int s) {
    const long u = u0 + s;
    const int tile = (int)(u / p.nsteps), st = (int)(u - (long)tile * p.nsteps);
    const int k0 = st * kBlockStep + warp * kStep + q * 8;  // chunk ui at k0 + ui*32
    // One row pointer per (t, h); chunks are immediate offsets from it (a predicated-off load
    // touches no memory, so a row past N needs no clamping).
    const unsigned short* rp[kNT][2];
    bool rok[kNT][2];
#pragma unroll
    for (int t = 0; t < kNT; ++t)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int n = weight_row(p, tile * kBN, t * 16 + g + h * 8);
        rok[t][h] = s < S && n >= 0;
        rp[t][h] = B + (long)(n < 0 ? 0 : n) * ldb + k0;
      }
#pragma unroll
    for (int ui = 0; ui < kU; ++ui) {
      const bool kin = k0 + ui * 32 < K;
#pragma unroll
      for (int t = 0; t < kNT; ++t)
#pragma unroll
        for (int h = 0; h < 2; ++h) f.w[t][ui][h] = ld_stream(rp[t][h] + ui * 32, kin && rok[t][h], pol);
#if DC_XR
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) f.x[mt][ui] = ld_x(xrow[mt] + k0 + ui * 32, s < S && kin && xok[mt]);
#endif
    }
  };

  float acc[kNT][kMT][4];
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[t][mt][e] = 0.0f;

  auto compute = [&](const Frag& f, int st) {
#if DC_XR
    (void)st;
    const uint4(&x)[kMT][kU] = f.x;
#else
    uint4 x[kMT][kU];  // A row g of each 8-row tile
    const int k0 = st * kBlockStep + warp * kStep + q * 8;
#pragma unroll
    for (int ui = 0; ui < kU; ++ui)
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) x[mt][ui] = ld_x(xrow[mt] + k0 + ui * 32, k0 + ui * 32 < K && xok[mt]);
#endif
#pragma unroll
    for (int ui = 0; ui < kU; ++ui)
#pragma unroll
      for (int t = 0; t < kNT; ++t)
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          // k half 0 uses words 0-1 of each 16-byte chunk, half 1 words 2-3.
          mma16816(acc[t][mt], f.w[t][ui][0].x, f.w[t][ui][1].x, f.w[t][ui][0].y,
                   f.w[t][ui][1].y, x[mt][ui].x, x[mt][ui].y);
          mma16816(acc[t][mt], f.w[t][ui][0].z, f.w[t][ui][1].z, f.w[t][ui][0].w,
                   f.w[t][ui][1].w, x[mt][ui].z, x[mt][ui].w);
        }
  };

  Frag f[kD];
#pragma unroll
  for (int d = 0; d < kD; ++d) load(f[d], d);
  int run = 0;  // block steps of the current run (tile) so far
#pragma unroll 1
  for (int s = 0; s < S; s += kD) {
#pragma unroll
    for (int d = 0; d < kD; ++d) {
      const int sd = s + d;
      if (sd < S) {  // block-uniform
        const long u = u0 + sd;
        const int tile = (int)(u / p.nsteps), st = (int)(u - (long)tile * p.nsteps);
        compute(f[d], st);
        ++run;
        if (st == p.nsteps - 1 || sd == S - 1) {
          flush(p, red, acc, tile * kBN, run, tid);
          run = 0;
        }
      }
      load(f[d], sd + kD);
    }
  }
}
#endif  // DC_WG
