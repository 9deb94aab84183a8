// The decode GEMM's CUDA-core body (DC_WG = 3; part of decode.cuh, after its shared helpers): a
// GEMV for M <= 8 with fp32 FMAs and no tensor-core instruction. The probe in bench/NOTES.md saw
// every tensor-core decode kernel run at a lower SM clock than a plain read of the same bytes, and
// what limits a weight stream at the read's pace runs in the SM clock domain; this body keeps the
// read's instruction mix (16-byte loads, a few ALU operations per byte).
//
// Work: the weight rows are cut in groups of R = 2*DC_NT rows (silu_mul: DC_NT gate rows and the
// DC_NT up rows of the same output columns, so a column's two sums meet in one warp and the
// epilogue writes silu(gate)*up directly). Groups are split into gridDim.x equal contiguous ranges
// (DC_GRID = 0: about one group per warp; 1..3: a persistent grid of DC_GRID blocks per SM), and
// the warps of a block take the range's groups in turn. A warp streams whole rows: per stage each
// lane loads DC_U 16-byte chunks of each of its R rows (the warp reads 512*DC_U contiguous bytes
// of a row), into a ring of DC_DEPTH register stages that runs across the warp's groups, so the
// stream never drains between them. The DC_MT rows of A (DC_MT: the smallest power of two >= M,
// at most 8; a compile-time count, so no instruction is spent on rows past it and the kernel's
// code stays small) are read per stage through L1 (__ldg: every warp of the SM reads the same few
// KB) and widened once per stage, then each weight chunk is widened once per 4 rows of A. At a
// group's end the lanes' partial sums are reduced with warp shuffles and lane r*DC_MT+m stores
// output (row r, token m): no shared memory, no barrier, no workspace.
//
// Knobs here: DC_WARPS (warps per block), DC_NT (R/2), DC_U (16-byte chunks per row and lane per
// stage), DC_DEPTH (ring stages), DC_GRID (0..3), DC_PF (the weight loads' L2 prefetch / policy,
// as ld_stream; 0, plain loads, is this body's: the L2::256B prefetch of 1 and 2 made 20% of the L2
// lookups hits with no DRAM byte saved), DC_MT (rows of A: 1, 2, 4, 8), DC_XR (1: a ring slot is
// refilled as soon as its data arrived, before the stage's FMAs, so DC_DEPTH stages stay in flight
// while a warp computes: one more stage of registers; 0: refilled after the FMAs).
//
// The epilogue's reads of C (beta != 0, the residual add) and of the bias are issued when a group's
// first stage is computed and consumed at its end: read at the end, they waited on DRAM after the
// last weight byte (3-14% of a flushed 13-19 us GEMM, bench/NOTES.md).
namespace kd {

constexpr int kWarps = DC_WARPS, kNT = DC_NT, kR = 2 * DC_NT, kU = DC_U, kD = DC_DEPTH;
constexpr int kThreads = 32 * kWarps;
constexpr int kMaxM = DC_MT;             // rows of A computed (M <= DC_MT)
constexpr int kMG = kMaxM < 4 ? kMaxM : 4;  // rows of A widened at a time
constexpr int kStageK = 256 * kU;        // k per stage: 32 lanes x 8 x DC_U
constexpr int kMinBlocks = DC_GRID ? DC_GRID : 16 / kWarps;  // registers for that many blocks per SM
static_assert(kMaxM == 1 || kMaxM == 2 || kMaxM == 4 || kMaxM == 8, "DC_WG=3: DC_MT is 1, 2, 4 or 8");
static_assert(kD >= 1 && kD <= 8, "DC_DEPTH must be 1..8");
static_assert(kR * kMaxM <= 32, "one lane per output of a group");

struct Frag {
  uint4 w[kR][kU];
};

// The 8 values of a 16-byte chunk as floats (the same element order for weights and A, so the
// dot product pairs the same k).
KTUNE_DEVICE void widen(const uint4& v, float (&f)[8]) {
  const unsigned u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#if DTYPE_AB == 2
    f[2 * i] = __uint_as_float(u[i] << 16);
    f[2 * i + 1] = __uint_as_float(u[i] & 0xffff0000u);
#else
    const float2 t = __half22float2(*reinterpret_cast<const __half2*>(&u[i]));
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
#endif
  }
}

// Weight row r of group gi (silu_mul: rows 0..kNT-1 gate rows of columns gi*kNT.., then the up
// rows of the same columns), or -1 past N.
KTUNE_DEVICE int group_row(const Prob& p, int gi, int r) {
#if ACT == 3
  const int j = gi * kNT + (r % kNT);
  return j < p.half ? j + (r >= kNT ? p.half : 0) : -1;
#else
  const int n = gi * kR + r;
  return n < p.N ? n : -1;
#endif
}

KTUNE_DEVICE float warp_total(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// What the epilogue of a group reads besides the sums, loaded at the group's start by the lane
// that stores (lane r*DC_MT + m): C (beta != 0) and the bias (silu_mul: the gate's and the up's).
struct Early {
  float c = 0.0f, bg = 0.0f, bu = 0.0f;
};
KTUNE_DEVICE Early early(const Prob& p, int gi, int lane) {
  Early e;
  const int r = lane / kMaxM, m = lane % kMaxM, row = lane < kR * kMaxM ? group_row(p, gi, r) : -1;
#if ACT == 3
  if (r >= kNT) return e;
#endif
  if (row < 0 || m >= p.M) return e;
  if (p.beta != 0.0f) e.c = out_to_float(p.C[(long)m * p.ldc + row]);
#if HAS_BIAS
  e.bg = out_to_float(p.bias[row]);
#if ACT == 3
  e.bu = out_to_float(p.bias[p.half + row]);
#endif
#endif
  return e;
}

// store_out / store_gated (decode.cuh) with C and the bias already read.
KTUNE_DEVICE void store_early(const Prob& p, int row, int m, float v, float up, const Early& e) {
#if ACT == 3
  const float g = v * p.alpha + e.bg;
  float o = g / (1.0f + __expf(-g)) * (up * p.alpha + e.bu);
  if (p.beta != 0.0f) o += p.beta * e.c;
#else
  (void)up;
  float o = v * p.alpha;
  if (p.beta != 0.0f) o += p.beta * e.c;
  o = activate(o + e.bg);
#endif
  p.C[(long)m * p.ldc + row] = out_from_float(o);
}

// End of group gi: the lanes' sums reduced, one lane per output stores it, acc zeroed.
KTUNE_DEVICE void finish(const Prob& p, float (&acc)[kR][kMaxM], int gi, int lane, const Early& e) {
#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int m = 0; m < kMaxM; ++m) acc[r][m] = warp_total(acc[r][m]);
#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int m = 0; m < kMaxM; ++m) {
      const int row = group_row(p, gi, r);
#if ACT == 3
      if (r < kNT && lane == r * kMaxM + m && m < p.M && row >= 0)
        store_early(p, row, m, acc[r][m], acc[r + kNT][m], e);
#else
      if (lane == r * kMaxM + m && m < p.M && row >= 0) store_early(p, row, m, acc[r][m], 0.0f, e);
#endif
    }
#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int m = 0; m < kMaxM; ++m) acc[r][m] = 0.0f;
}

}  // namespace kd

KTUNE_KERNEL void KTUNE_LAUNCH_BOUNDS(kd::kThreads, kd::kMinBlocks)
    ktune_gemm_decode(const unsigned short* __restrict__ A, const unsigned short* __restrict__ B,
                      void* Cv, const void* biasv, float* workspace, unsigned* counters, int M,
                      int N, int K, long lda, long ldb, long ldc, float alpha, float beta) {
  using namespace kd;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int T = (K + kStageK - 1) / kStageK;  // stages per group (all of K)
  Prob p{A, B, reinterpret_cast<out_t*>(Cv), reinterpret_cast<const out_t*>(biasv), workspace,
         counters, M, N, K, T, N / 2, lda, ldb, ldc, alpha, beta};
#if ACT == 3
  const long groups = (p.half + kNT - 1) / kNT;
#else
  const long groups = (N + kR - 1) / kR;
#endif
  const int g0 = (int)(groups * blockIdx.x / gridDim.x);
  const int g1 = (int)(groups * (blockIdx.x + 1) / gridDim.x);
  const int mine = g1 - g0 > warp ? (g1 - g0 - warp + kWarps - 1) / kWarps : 0;
  const int S = mine * T;  // this warp's stages
  if (mine > 0)  // the first stage of this warp's first group into L2 before the wait (decode.cuh)
    prefetch_weights(p, [&](int r) { return group_row(p, g0 + warp, r); }, kR, 0, kStageK, lane, 32);
  KTUNE_PDL_WAIT(); KTUNE_PDL_LAUNCH_DEPENDENTS();  // prelude.cuh: no memory read above
  const unsigned long long pol = l2_policy();

  // The load cursor: group lg, stage lst of it, ls stages issued.
  int lg = g0 + warp, lst = 0, ls = 0;
  auto load = [&](Frag& f) {
    const int k0 = lst * kStageK + lane * 8;
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const int row = group_row(p, lg, r);
      const bool ok = ls < S && row >= 0;
      const unsigned short* rp = B + (long)(row < 0 ? 0 : row) * ldb + k0;
#pragma unroll
      for (int ui = 0; ui < kU; ++ui) f.w[r][ui] = ld_stream(rp + ui * 256, ok && k0 + ui * 256 < K, pol);
    }
    ++ls;
    if (++lst == T) {
      lst = 0;
      lg += kWarps;
    }
  };

  float acc[kR][kMaxM];
#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int m = 0; m < kMaxM; ++m) acc[r][m] = 0.0f;

  auto compute = [&](const Frag& f, int st) {
    const int k0 = st * kStageK + lane * 8;
#pragma unroll
    for (int ui = 0; ui < kU; ++ui) {
      const int k = k0 + ui * 256;
      const bool kin = k < K;
#pragma unroll
      for (int mh = 0; mh < kMaxM; mh += kMG) {
        float x[kMG][8];  // rows past M read as zeros (their sums are never stored)
#pragma unroll
        for (int mm = 0; mm < kMG; ++mm) {
          const bool ok = kin && mh + mm < M;
          const uint4 v = ok ? __ldg(reinterpret_cast<const uint4*>(A + (long)(mh + mm) * lda + k))
                             : make_uint4(0, 0, 0, 0);
          widen(v, x[mm]);
        }
#pragma unroll
        for (int r = 0; r < kR; ++r) {
          float w[8];
          widen(f.w[r][ui], w);
#pragma unroll
          for (int mm = 0; mm < kMG; ++mm)
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[r][mh + mm] = fmaf(w[e], x[mm][e], acc[r][mh + mm]);
        }
      }
    }
  };

  Frag f[kD];
#pragma unroll
  for (int d = 0; d < kD; ++d) load(f[d]);
  int cst = 0, cg = g0 + warp;  // the compute cursor: stage cst of group cg
  Early e;
#pragma unroll 1
  for (int s = 0; s < S; s += kD) {
#pragma unroll
    for (int d = 0; d < kD; ++d) {
      if (s + d < S) {  // warp-uniform
        if (cst == 0) e = early(p, cg, lane);
#if DC_XR
        const Frag cur = f[d];  // waits for the stage's data, then refills its slot at once
        load(f[d]);
        compute(cur, cst);
#else
        compute(f[d], cst);
#endif
        if (++cst == T) {
          finish(p, acc, cg, lane, e);
          cst = 0;
          cg += kWarps;
        }
      }
#if DC_XR
      else
#endif
        load(f[d]);
    }
  }
}
