// Issue 32's rate and fixed-cost gap, the TMA side alone: does a TMA stream of the weights in the
// decode kernel's layout (one elected thread posting a stage's bytes on its `full` mbarrier and
// issuing 64-k boxes of the tile's rows and of A's 16 rows into a ring; consumer warps that only
// wait on `full` and release the slot on `empty`, no wgmma, no epilogue) stream at the plain read's
// rate, and which of its knobs moves that: the ring's depth and stage bytes (weight bytes in flight
// per SM), blocks per SM, A's boxes beside the weight boxes, the box height (TMA instructions per
// stage), the issue order (one thread, box by box; u-outer; one box per lane), and the start
// (an empty kernel with and without the ring's shared memory; a prologue of 8 KB of straight code).
// Each variant is timed at N = 4096, 6144, 14336, 28672 (K = 4096, bf16; read flush before every
// launch, interleaved rounds, median) and fitted t = fixed + MB / rate; per-block %globaltimer
// stamps of one launch give entry -> first issue -> first landed stage, and the tail.
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a dev/decode/tma_stream_probe.cu
//        -L/usr/local/cuda/lib64/stubs -lcuda -o ts;   ./ts [rounds]
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "probe_mbar.cuh"

struct Rec {
  unsigned long long t0, issue0, full0, t1;
  unsigned smid, pad;
};
struct P {
  int rows, K, TR, U, S, boxr, a_on, issue;
  long long units;
  int steps;
};

__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned smid() {
  unsigned r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void tma2d(unsigned dst, const CUtensorMap* m, int c0, int r0, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(m)), "r"(c0), "r"(r0), "r"(bar)
      : "memory");
}

// Box i of a stage (i < nb): the weight boxes (TR/boxr per 64-k chunk) then A's (one per chunk).
// issue 0: b-outer, u-inner (the kernel's order); 2: u-outer, b-inner. Same destinations.
__device__ __forceinline__ void box(const P& p, const CUtensorMap* mw, const CUtensorMap* mx, unsigned w,
                                    unsigned bar, int row0, int k0, int i) {
  const int nbw = p.TR / p.boxr, nw = nbw * p.U;
  if (i < nw) {
    const int b = p.issue == 2 ? i % nbw : i / p.U, u = p.issue == 2 ? i / nbw : i % p.U;
    tma2d(w + u * p.TR * 128 + b * p.boxr * 128, mw, k0 + u * 64, row0 + b * p.boxr, bar);
  } else {
    const int u = i - nw;
    tma2d(w + p.TR * p.U * 128 + u * 16 * 128, mx, k0 + u * 64, 0, bar);
  }
}

template <int BLOAT>
__global__ void __launch_bounds__(160, 1) tstream(const __grid_constant__ CUtensorMap mw,
                                                  const __grid_constant__ CUtensorMap mx, const P p, Rec* rec,
                                                  float* sink) {
  extern __shared__ __align__(1024) unsigned char sm[];
  const unsigned long long ts = gtime();
  const unsigned base = (saddr(sm) + 1023u) & ~1023u;
  const int wbytes = p.TR * p.U * 128, sb = wbytes + (p.a_on ? 16 * p.U * 128 : 0);
  const unsigned full = base + p.S * sb, empty = full + 8 * p.S;
  const int tid = threadIdx.x;
  __shared__ unsigned long long st_issue0, st_full0;
  if (tid == 128) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(&mw)) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(&mx)) : "memory");
  }
  if (tid == 0) {
    for (int i = 0; i < p.S; ++i) {
      mbar_init(full + 8 * i, 1);
      mbar_init(empty + 8 * i, 4);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if (BLOAT) {  // straight-line code executed once before the first issue (instruction fetch)
    float a[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) a[i] = p.K * (i + 1) * 1e-9f + tid;
#pragma unroll
    for (int j = 0; j < BLOAT; ++j)
#pragma unroll
      for (int i = 0; i < 8; ++i) a[i] = fmaf(a[i], 1.0001f + j * 1e-7f, 0.5f + i);
    float s = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) s += a[i];
    if (s == 12345.0f) sink[tid] = s;
  }
  __syncthreads();
  const long long u0 = p.units * blockIdx.x / gridDim.x, u1 = p.units * (blockIdx.x + 1) / gridDim.x;
  const int n = (int)(u1 - u0), nb = (p.TR / p.boxr + (p.a_on ? 1 : 0)) * p.U;
  if (tid >= 128) {
    const int lane = tid - 128;
    for (int s = 0; s < n; ++s) {
      const int slot = s % p.S;
      if (s >= p.S) mbar_wait(empty + 8 * slot, ((s / p.S) - 1) & 1);
      const long long u = u0 + s;
      const int tile = (int)(u / p.steps), stp = (int)(u - (long long)tile * p.steps);
      const unsigned w = base + slot * sb, bar = full + 8 * slot;
      if (s == 0 && lane == 0) st_issue0 = gtime();
      if (p.issue == 1) {  // one box per lane
        if (lane == 0) mbar_expect_tx(bar, sb);
        __syncwarp();
        for (int i = lane; i < nb; i += 32) box(p, &mw, &mx, w, bar, tile * p.TR, stp * p.U * 64, i);
      } else if (lane == 0) {
        mbar_expect_tx(bar, sb);
        for (int i = 0; i < nb; ++i) box(p, &mw, &mx, w, bar, tile * p.TR, stp * p.U * 64, i);
      }
      __syncwarp();
    }
  } else {
    for (int s = 0; s < n; ++s) {
      const int slot = s % p.S;
      mbar_wait(full + 8 * slot, (s / p.S) & 1);
      if (s == 0 && tid == 0) st_full0 = gtime();
      __syncwarp();
      if ((tid & 31) == 0) mbar_arrive(empty + 8 * slot);
    }
  }
  __syncthreads();
  if (tid == 0) rec[blockIdx.x] = {ts, st_issue0, st_full0, gtime(), smid(), 0};
}

// The same stream with the issue path at compile time (as the decode kernel's: unrolled boxes, no
// division per box or stage): tile, step, slot and phase kept incrementally. ISSUE 0: the elected
// thread issues the stage's boxes in turn; 1: lane i % 32 issues box i.
template <int TR, int U, int BOXR, int ISSUE, int AON>
__global__ void __launch_bounds__(160, 1) tsx(const __grid_constant__ CUtensorMap mw,
                                              const __grid_constant__ CUtensorMap mx, const P p, Rec* rec,
                                              float* sink) {
  constexpr int kWB = TR * U * 128, kSB = kWB + (AON ? 16 * U * 128 : 0), kNBW = TR / BOXR * U;
  constexpr int kNB = kNBW + (AON ? U : 0);
  extern __shared__ __align__(1024) unsigned char sm[];
  const unsigned long long ts = gtime();
  const unsigned base = (saddr(sm) + 1023u) & ~1023u;
  const unsigned full = base + p.S * kSB, empty = full + 8 * p.S;
  const int tid = threadIdx.x;
  __shared__ unsigned long long st_issue0, st_full0;
  if (tid == 128) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(&mw)) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(&mx)) : "memory");
  }
  if (tid == 0) {
    for (int i = 0; i < p.S; ++i) {
      mbar_init(full + 8 * i, 1);
      mbar_init(empty + 8 * i, 4);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  const long long u0 = p.units * blockIdx.x / gridDim.x, u1 = p.units * (blockIdx.x + 1) / gridDim.x;
  const int n = (int)(u1 - u0);
  int tile = (int)(u0 / p.steps), stp = (int)(u0 - (long long)tile * p.steps), slot = 0, ph = 0;
  if (tid >= 128) {
    const int lane = tid - 128;
    for (int s = 0; s < n; ++s) {
      if (s >= p.S) mbar_wait(empty + 8 * slot, ph ^ 1);
      const unsigned w = base + slot * kSB, bar = full + 8 * slot;
      const int row0 = tile * TR, k0 = stp * U * 64;
      if (s == 0 && lane == 0) st_issue0 = gtime();
      if (lane == 0) mbar_expect_tx(bar, kSB);
      if (ISSUE == 1) __syncwarp();
      if (ISSUE == 1 || lane == 0) {
#pragma unroll
        for (int i = 0; i < kNB; ++i) {
          if (ISSUE == 1 && i % 32 != lane) continue;
          if (i < kNBW) {
            const int b = i / U, u = i % U;
            tma2d(w + u * TR * 128 + b * BOXR * 128, &mw, k0 + u * 64, row0 + b * BOXR, bar);
          } else {
            const int u = i - kNBW;
            tma2d(w + kWB + u * 16 * 128, &mx, k0 + u * 64, 0, bar);
          }
        }
      }
      __syncwarp();
      if (++stp == p.steps) stp = 0, ++tile;
      if (++slot == p.S) slot = 0, ph ^= 1;
    }
  } else {
    for (int s = 0; s < n; ++s) {
      mbar_wait(full + 8 * slot, ph);
      if (s == 0 && tid == 0) st_full0 = gtime();
      __syncwarp();
      if ((tid & 31) == 0) mbar_arrive(empty + 8 * slot);
      if (++slot == p.S) slot = 0, ph ^= 1;
    }
  }
  __syncthreads();
  if (tid == 0) rec[blockIdx.x] = {ts, st_issue0, st_full0, gtime(), smid(), 0};
  if (n < 0) sink[0] = 0;
}
using XFn = void (*)(const CUtensorMap, const CUtensorMap, const P, Rec*, float*);

__global__ void empty_k(Rec* rec) {
  const unsigned long long ts = gtime();
  __syncthreads();
  if (threadIdx.x == 0) rec[blockIdx.x] = {ts, ts, ts, gtime(), smid(), 0};
}

__device__ __forceinline__ unsigned fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }
// The read bound's kernel (bench/gemm_read_bound.h): grid-stride, 4 loads of 16 bytes in flight.
__global__ void lin4(const uint4* __restrict__ p, long long n, unsigned* out, Rec* rec) {
  const unsigned long long ts = gtime();
  unsigned acc = 0;
  const long long stride = (long long)gridDim.x * blockDim.x * 4;
  for (long long b = (long long)blockIdx.x * blockDim.x * 4 + threadIdx.x; b < n; b += stride) {
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const long long i = b + (long long)u * blockDim.x;
      v[u] = i < n ? __ldcs(p + i) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) acc ^= fold(v[u]);
  }
  __syncthreads();
  if (threadIdx.x == 0) rec[blockIdx.x] = {ts, ts, ts, gtime(), smid(), 0};
  if (acc == 0x9e3779b9u) out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
__global__ void flush_read(const uint4* __restrict__ p, long long n, unsigned* out) {
  unsigned acc = 0;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    acc ^= fold(__ldcs(p + i));
  if (acc == 0x9e3779b9u) out[threadIdx.x] = acc;
}

// A variant: kind 0 read, 1 empty (smem bytes in S), 2 the TMA stream (runtime issue path), 3 the
// same with the issue path at compile time (tsx). grid rule: 0 = 132 * bps
// blocks (units split evenly, stream-K-like), 1 = 2 blocks per tile (the cluster K split's
// partition, no cluster), 2 = min(tiles, 132) blocks of whole tiles (DC_GRID = 6).
struct V {
  std::string name;
  int kind, TR, U, S, boxr, a_on, issue, bloat, rule, bps;
  XFn xk = nullptr;  // kind 3: tsx<TR, U, boxr, issue, a_on>
  int cluster = 1;   // kind 3: launched in clusters of |cluster| blocks (< 0: the spread scheduling policy)
};

static CUtensorMap make_map(void* base, int rows, int K, int box_rows) {
  CUtensorMap m;
  const cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows};
  const cuuint64_t strides[1] = {(cuuint64_t)K * 2};
  const cuuint32_t boxd[2] = {64, (cuuint32_t)box_rows}, es[2] = {1, 1};
  const CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, base, dims, strides, boxd, es,
                                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                            CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::printf("cuTensorMapEncodeTiled failed (%d) rows %d box %d\n", (int)r, rows, box_rows);
    std::exit(1);
  }
  return m;
}

static std::vector<V> variants() {
  std::vector<V> v;
  v.push_back({"read grid-stride 264x512 U4", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  v.push_back({"empty 132x160, no smem", 1, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  v.push_back({"empty 132x160, 200 KB smem", 1, 0, 0, 200 << 10, 0, 0, 0, 0, 0, 0});
  // name, kind, TR, U, S, boxr, a_on, issue, bloat, rule, bps
  v.push_back({"T64 U4 S4 2/tile (16x4096 G4 U4 D2)", 2, 64, 4, 4, 64, 1, 0, 0, 1, 1});
  v.push_back({"T64 U2 S10 2/tile (G4 U2 D5)", 2, 64, 2, 10, 64, 1, 0, 0, 1, 1});
  v.push_back({"T128 U2 S4 2/tile (6144 G4 NT2 U2 D2)", 2, 128, 2, 4, 64, 1, 0, 0, 1, 1});
  v.push_back({"T128 U2 S4 whole tiles (G6 W8 U2 D2)", 2, 128, 2, 4, 64, 1, 0, 0, 2, 1});
  v.push_back({"T64 U4 S4 x132", 2, 64, 4, 4, 64, 1, 0, 0, 0, 1});
  v.push_back({"T64 U4 S4 x132 no A", 2, 64, 4, 4, 64, 0, 0, 0, 0, 1});
  v.push_back({"T64 U4 S2 x132", 2, 64, 4, 2, 64, 1, 0, 0, 0, 1});
  v.push_back({"T64 U4 S5 x132", 2, 64, 4, 5, 64, 1, 0, 0, 0, 1});
  v.push_back({"T64 U2 S8 x132", 2, 64, 2, 8, 64, 1, 0, 0, 0, 1});
  v.push_back({"T64 U1 S16 x132", 2, 64, 1, 16, 64, 1, 0, 0, 0, 1});
  v.push_back({"T64 U8 S2 x132", 2, 64, 8, 2, 64, 1, 0, 0, 0, 1});
  v.push_back({"T64 U4 S2 x264 (2 per SM)", 2, 64, 4, 2, 64, 1, 0, 0, 0, 2});
  v.push_back({"T64 U4 S4 x132 lanes issue", 2, 64, 4, 4, 64, 1, 1, 0, 0, 1});
  v.push_back({"T128 U2 S4 x132 box64", 2, 128, 2, 4, 64, 1, 0, 0, 0, 1});
  v.push_back({"T128 U2 S4 x132 box128", 2, 128, 2, 4, 128, 1, 0, 0, 0, 1});
  v.push_back({"T128 U2 S4 x132 box64 u-outer", 2, 128, 2, 4, 64, 1, 2, 0, 0, 1});
  v.push_back({"T256 U1 S4 x132 box256", 2, 256, 1, 4, 256, 1, 0, 0, 0, 1});
  v.push_back({"T64 U4 S4 x132 + 8 KB prologue code", 2, 64, 4, 4, 64, 1, 0, 64, 0, 1});
  // name, kind, TR, U, S, boxr, a_on, issue, bloat, rule, bps, kernel: the compile-time issue path
  v.push_back({"X T64 U4 S4 2/tile (G4 U4 D2)", 3, 64, 4, 4, 64, 1, 0, 0, 1, 1, tsx<64, 4, 64, 0, 1>});
  v.push_back({"X T64 U4 S4 2/tile lanes", 3, 64, 4, 4, 64, 1, 1, 0, 1, 1, tsx<64, 4, 64, 1, 1>});
  v.push_back({"X T64 U2 S10 2/tile (G4 U2 D5)", 3, 64, 2, 10, 64, 1, 0, 0, 1, 1, tsx<64, 2, 64, 0, 1>});
  v.push_back({"X T64 U2 S10 2/tile lanes", 3, 64, 2, 10, 64, 1, 1, 0, 1, 1, tsx<64, 2, 64, 1, 1>});
  v.push_back({"X T128 U2 S4 whole tiles (G6 U2 D2)", 3, 128, 2, 4, 64, 1, 0, 0, 2, 1, tsx<128, 2, 64, 0, 1>});
  v.push_back({"X T128 U2 S4 whole tiles lanes", 3, 128, 2, 4, 64, 1, 1, 0, 2, 1, tsx<128, 2, 64, 1, 1>});
  v.push_back({"X T64 U4 S4 x132", 3, 64, 4, 4, 64, 1, 0, 0, 0, 1, tsx<64, 4, 64, 0, 1>});
  v.push_back({"X T64 U4 S4 x132 lanes", 3, 64, 4, 4, 64, 1, 1, 0, 0, 1, tsx<64, 4, 64, 1, 1>});
  v.push_back({"X T64 U4 S4 x132 no A", 3, 64, 4, 4, 64, 0, 0, 0, 0, 1, tsx<64, 4, 64, 0, 0>});
  v.push_back({"X T64 U4 S2 x132", 3, 64, 4, 2, 64, 1, 0, 0, 0, 1, tsx<64, 4, 64, 0, 1>});
  v.push_back({"X T64 U4 S5 x132", 3, 64, 4, 5, 64, 1, 0, 0, 0, 1, tsx<64, 4, 64, 0, 1>});
  v.push_back({"X T64 U1 S16 x132", 3, 64, 1, 16, 64, 1, 0, 0, 0, 1, tsx<64, 1, 64, 0, 1>});
  v.push_back({"X T64 U8 S2 x132", 3, 64, 8, 2, 64, 1, 0, 0, 0, 1, tsx<64, 8, 64, 0, 1>});
  v.push_back({"X T128 U2 S4 x132 box64", 3, 128, 2, 4, 64, 1, 0, 0, 0, 1, tsx<128, 2, 64, 0, 1>});
  v.push_back({"X T128 U2 S4 x132 box128", 3, 128, 2, 4, 128, 1, 0, 0, 0, 1, tsx<128, 2, 128, 0, 1>});
  v.push_back({"X T64 U4 S2 x264 (2 per SM)", 3, 64, 4, 2, 64, 1, 0, 0, 0, 2, tsx<64, 4, 64, 0, 1>});
  v.push_back({"X T64 U4 S4 2/tile cluster 2 (G4 U4 D2)", 3, 64, 4, 4, 64, 1, 0, 0, 1, 1, tsx<64, 4, 64, 0, 1>, 2});
  v.push_back({"X T128 U2 S4 2/tile (G4 NT2 U2 D2)", 3, 128, 2, 4, 64, 1, 0, 0, 1, 1, tsx<128, 2, 64, 0, 1>});
  v.push_back({"X T128 U2 S4 2/tile cluster 2", 3, 128, 2, 4, 64, 1, 0, 0, 1, 1, tsx<128, 2, 64, 0, 1>, 2});
  v.push_back({"X T128 U2 S4 2/tile cluster 2 spread", 3, 128, 2, 4, 64, 1, 0, 0, 1, 1, tsx<128, 2, 64, 0, 1>, -2});
  v.push_back({"X T128 U2 S4 2/tile cluster 8 (SMs by cluster)", 3, 128, 2, 4, 64, 1, 0, 0, 1, 1, tsx<128, 2, 64, 0, 1>, 8});
  v.push_back({"X T64 U4 S4 2/tile cluster 2 spread", 3, 64, 4, 4, 64, 1, 0, 0, 1, 1, tsx<64, 4, 64, 0, 1>, -2});
  // One block per tile of fewer than 64 rows (a TR-row box into a 64-row slab; no K split, no
  // cluster, no reduction): 128 blocks at 4096 (T32) and at 6144 (T48).
  v.push_back({"X T32 U4 S4 tile/block (4096: 128)", 3, 32, 4, 4, 32, 1, 0, 0, 2, 1, tsx<32, 4, 32, 0, 1>});
  v.push_back({"X T32 U8 S2 tile/block", 3, 32, 8, 2, 32, 1, 0, 0, 2, 1, tsx<32, 8, 32, 0, 1>});
  v.push_back({"X T32 U2 S8 tile/block", 3, 32, 2, 8, 32, 1, 0, 0, 2, 1, tsx<32, 2, 32, 0, 1>});
  v.push_back({"X T48 U4 S4 tile/block (6144: 128)", 3, 48, 4, 4, 48, 1, 0, 0, 2, 1, tsx<48, 4, 48, 0, 1>});
  v.push_back({"X T48 U2 S6 tile/block", 3, 48, 2, 6, 48, 1, 0, 0, 2, 1, tsx<48, 2, 48, 0, 1>});
  v.push_back({"X T64 U4 S4 tile/block (G0)", 3, 64, 4, 4, 64, 1, 0, 0, 2, 1, tsx<64, 4, 64, 0, 1>});
  return v;
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  const int K = 4096, sizes[4] = {4096, 6144, 14336, 28672};
  const long long max_rows = 28672, fl_n = (256ll << 20) / 16;
  cuInit(0);
  void *w = nullptr, *x = nullptr;
  uint4* fl = nullptr;
  unsigned* out = nullptr;
  Rec* rec = nullptr;
  float* sink = nullptr;
  if (cudaMalloc(&w, max_rows * K * 2) || cudaMalloc(&x, 16 * K * 2) || cudaMalloc(&fl, fl_n * 16) ||
      cudaMalloc(&out, 64 << 20) || cudaMalloc(&rec, 4096 * sizeof(Rec)) || cudaMalloc(&sink, 4096)) {
    std::printf("no GPU memory\n");
    return 1;
  }
  cudaMemset(w, 1, max_rows * K * 2);
  cudaMemset(x, 1, 16 * K * 2);
  cudaMemset(fl, 2, fl_n * 16);
  cudaFuncSetAttribute(tstream<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, 210 << 10);
  cudaFuncSetAttribute(tstream<64>, cudaFuncAttributeMaxDynamicSharedMemorySize, 210 << 10);
  for (const V& a : variants())
    if (a.xk) cudaFuncSetAttribute((const void*)a.xk, cudaFuncAttributeMaxDynamicSharedMemorySize, 210 << 10);
  cudaFuncSetAttribute(empty_k, cudaFuncAttributeMaxDynamicSharedMemorySize, 210 << 10);
  const CUtensorMap mx = make_map(x, 16, K, 16);
  const std::vector<V> vs = variants();
  struct Job {
    int v, size, grid;
    size_t smem;
    P p;
    CUtensorMap mw;
  };
  std::vector<Job> jobs;
  for (int v = 0; v < (int)vs.size(); ++v)
    for (int si = 0; si < 4; ++si) {
      const V& a = vs[v];
      Job j{v, si, 0, 0, {}, {}};
      const int rows = sizes[si];
      if (a.kind >= 2) {
        const int tiles = rows / a.TR, steps = K / (64 * a.U);
        j.p = {rows, K, a.TR, a.U, a.S, a.boxr, a.a_on, a.issue, (long long)tiles * steps, steps};
        j.grid = a.rule == 0 ? 132 * a.bps : a.rule == 1 ? 2 * tiles : std::min(tiles, 132);
        j.smem = 1024 + (size_t)a.S * (a.TR * a.U * 128 + (a.a_on ? 16 * a.U * 128 : 0)) + 16 * a.S;
        j.mw = make_map(w, rows, K, a.boxr);
      } else {
        j.grid = a.kind == 0 ? 264 : 132;
        j.smem = a.S;
      }
      jobs.push_back(j);
    }
  auto launch = [&](const Job& j) {
    const V& a = vs[j.v];
    if (a.kind == 0) {
      lin4<<<264, 512>>>((const uint4*)w, (long long)sizes[j.size] * K * 2 / 16, out, rec);
    } else if (a.kind == 1) {
      empty_k<<<132, 160, j.smem>>>(rec);
    } else if (a.kind == 3) {
      void* args[] = {(void*)&j.mw, (void*)&mx, (void*)&j.p, (void*)&rec, (void*)&sink};
      cudaLaunchConfig_t lc = {};
      cudaLaunchAttribute at[2];
      lc.gridDim = dim3(j.grid);
      lc.blockDim = dim3(160);
      lc.dynamicSmemBytes = j.smem;
      at[0].id = cudaLaunchAttributeClusterDimension;
      at[0].val.clusterDim.x = std::abs(a.cluster), at[0].val.clusterDim.y = 1, at[0].val.clusterDim.z = 1;
      at[1].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
      at[1].val.clusterSchedulingPolicyPreference = cudaClusterSchedulingPolicySpread;
      lc.attrs = at;
      lc.numAttrs = a.cluster > 1 ? 1 : a.cluster < -1 ? 2 : 0;
      cudaLaunchKernelExC(&lc, (const void*)a.xk, args);
    } else if (a.bloat) {
      tstream<64><<<j.grid, 160, j.smem>>>(j.mw, mx, j.p, rec, sink);
    } else {
      tstream<0><<<j.grid, 160, j.smem>>>(j.mw, mx, j.p, rec, sink);
    }
  };
  for (auto& j : jobs)
    for (int i = 0; i < 2; ++i) {
      launch(j);
      const cudaError_t e = cudaGetLastError();
      if (e != cudaSuccess)
        std::printf("launch failed: %s N=%d grid %d smem %zu: %s\n", vs[j.v].name.c_str(), sizes[j.size], j.grid,
                    j.smem, cudaGetErrorString(e));
    }
  if (cudaDeviceSynchronize() != cudaSuccess) {
    std::printf("CUDA error (warm-up): %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<std::vector<float>> t(jobs.size());
  std::vector<std::vector<Rec>> last(jobs.size());
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < jobs.size(); ++i) {
      const size_t q = (i * 7 + r * 13) % jobs.size();  // a different neighbour each round
      flush_read<<<264, 512>>>(fl, fl_n, out);
      cudaEventRecord(e0);
      launch(jobs[q]);
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      t[q].push_back(ms * 1e3f);
      last[q].resize(jobs[q].grid);
      cudaMemcpy(last[q].data(), rec, jobs[q].grid * sizeof(Rec), cudaMemcpyDeviceToHost);
    }
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) std::printf("CUDA error: %s\n", cudaGetErrorString(e));
  auto med = [](std::vector<double> x) {
    std::sort(x.begin(), x.end());
    return x.empty() ? 0.0 : x[x.size() / 2];
  };
  std::printf("TS %-40s | µs at N = 4096 6144 14336 28672 | fit fixed µs, TB/s | at 4096: issue0 / full0 after "
              "entry, tail | at 28672: full0, tail (µs, medians over blocks)\n", "variant");
  for (size_t v = 0; v < vs.size(); ++v) {
    double us[4], sx = 0, sy = 0, sxx = 0, sxy = 0;
    std::string extra;
    for (int si = 0; si < 4; ++si) {
      const size_t q = v * 4 + si;
      std::vector<double> tt(t[q].begin(), t[q].end());
      us[si] = med(tt);
      const double mb = sizes[si] * (double)K * 2 / 1e6;
      sx += mb, sy += us[si], sxx += mb * mb, sxy += mb * us[si];
      if (si == 0 || si == 3) {
        unsigned long long first = ~0ull;
        for (auto& b : last[q]) first = std::min(first, b.t0);
        std::vector<double> i0, f0, end;
        for (auto& b : last[q]) {
          i0.push_back((b.issue0 - b.t0) * 1e-3);
          f0.push_back((b.full0 - b.t0) * 1e-3);
          end.push_back((b.t1 - first) * 1e-3);
        }
        const double tail = *std::max_element(end.begin(), end.end()) - med(end);
        char buf[128];
        if (si == 0) std::snprintf(buf, sizeof buf, " | %.2f / %.2f, %.2f", med(i0), med(f0), tail);
        else std::snprintf(buf, sizeof buf, " | %.2f, %.2f", med(f0), tail);
        extra += buf;
      }
    }
    if (vs[v].name.find("2/tile") != std::string::npos && vs[v].TR == 128)
      for (int si = 0; si < 2; ++si) {  // the blocks' SMs of the last launch (N = 4096, 6144)
        std::vector<unsigned> ids;
        for (auto& b : last[v * 4 + si]) ids.push_back(b.smid);
        if (vs[v].cluster <= 2) std::sort(ids.begin(), ids.end());  // clusters of 8: block order
        std::printf("SMID %s N=%d:", vs[v].name.c_str(), sizes[si]);
        for (unsigned id : ids) std::printf(" %u", id);
        std::printf("\n");
      }
    const double slope = (4 * sxy - sx * sy) / (4 * sxx - sx * sx), fixed = (sy - slope * sx) / 4;
    std::printf("TS %-40s | %7.2f %7.2f %7.2f %7.2f | %5.2f, %5.3f%s\n", vs[v].name.c_str(), us[0], us[1], us[2],
                us[3], fixed, slope > 0 ? 1.0 / slope : 0.0, extra.c_str());
  }
  return 0;
}
