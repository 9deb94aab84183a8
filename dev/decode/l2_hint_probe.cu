// Issue 32, the weight stream's L2 policy (DC_EF): is a stream slower because of its own policy, or
// because of what the launch before it left in L2? Four weight streams X over one [N][4096] bf16 weight
// copy — the read bound's kernel with evict-first loads (ld.global.cs) and with default loads, the TMA
// stream of the 16x4096x4096 pick's partition (64-row tiles, 4 x 64 k a stage, a 4-stage ring, two
// blocks per tile over half of K each, A's 16 rows beside; no math) with the default policy and with
// every weight box evict-first (.L2::cache_hint) — each timed (device events around X alone) on copy 0
// after an L2 state: every cell starts with a reset (5x L2 of default loads: copy 0 evicted), then
// (a) nothing (the read flush's state: L2 full of unrelated default lines), (b) three launches of a
// stream Y over copies 1..3 (what Y leaves: the rotated timing's state when Y = X), or (c, N = 4096)
// a default read of copy 0 first, then Y x3 (does Y evict copy 0's default lines? a neighbour
// variant's lines in gemm_bench's rotated rounds). Interleaved rounds, median; per X: / after (a).
// Then each X 20 times back to back over 4 copies after the reset (gemm_bench's rotated batch), the
// same launches each synchronised and timed alone, and back to back with an empty kernel or a 1 MB
// read of other memory between two launches.
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a dev/decode/l2_hint_probe.cu
//        -L/usr/local/cuda/lib64/stubs -lcuda -o l2h;   ./l2h [rounds]
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "probe_mbar.cuh"

struct P {
  int TR, S, steps;
  long long units;
};

template <bool EF>
__device__ __forceinline__ void tma2d(unsigned dst, const CUtensorMap* m, int c0, int r0, unsigned bar,
                                      unsigned long long pol) {
  if (EF)
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
        " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(m)), "r"(c0), "r"(r0), "r"(bar), "l"(pol)
        : "memory");
  else
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(m)), "r"(c0), "r"(r0), "r"(bar)
        : "memory");
}

// The TMA stream (64-row tiles, U = 4 boxes of 64 k a stage, S stages; A's 16 rows per 64 k beside).
template <bool EF>
__global__ void __launch_bounds__(160, 1) tstream(const __grid_constant__ CUtensorMap mw,
                                                  const __grid_constant__ CUtensorMap mx, const P p) {
  constexpr int U = 4, TR = 64, kWB = TR * U * 128, kSB = kWB + 16 * U * 128;
  extern __shared__ __align__(1024) unsigned char sm[];
  const unsigned base = (saddr(sm) + 1023u) & ~1023u;
  const unsigned full = base + p.S * kSB, empty = full + 8 * p.S;
  const int tid = threadIdx.x;
  if (tid == 0) {
    for (int i = 0; i < p.S; ++i) mbar_init(full + 8 * i, 1), mbar_init(empty + 8 * i, 4);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  const long long u0 = p.units * blockIdx.x / gridDim.x, u1 = p.units * (blockIdx.x + 1) / gridDim.x;
  const int n = (int)(u1 - u0);
  int tile = (int)(u0 / p.steps), stp = (int)(u0 - (long long)tile * p.steps), slot = 0, ph = 0;
  if (tid == 128) {
    unsigned long long pol = 0;
    if (EF) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
    for (int s = 0; s < n; ++s) {
      if (s >= p.S) mbar_wait(empty + 8 * slot, ph ^ 1);
      const unsigned w = base + slot * kSB, bar = full + 8 * slot;
      const int k0 = stp * U * 64;
      mbar_expect_tx(bar, kSB);
#pragma unroll
      for (int u = 0; u < U; ++u) tma2d<EF>(w + u * TR * 128, &mw, k0 + u * 64, tile * TR, bar, pol);
#pragma unroll
      for (int u = 0; u < U; ++u) tma2d<false>(w + kWB + u * 16 * 128, &mx, k0 + u * 64, 0, bar, 0);
      if (++stp == p.steps) stp = 0, ++tile;
      if (++slot == p.S) slot = 0, ph ^= 1;
    }
  } else if (tid < 128) {
    for (int s = 0; s < n; ++s) {
      mbar_wait(full + 8 * slot, ph);
      __syncwarp();
      if ((tid & 31) == 0) mbar_arrive(empty + 8 * slot);
      if (++slot == p.S) slot = 0, ph ^= 1;
    }
  }
}

__global__ void empty_k(unsigned* out) {
  if (threadIdx.x == 1000) out[0] = 0;
}

__device__ __forceinline__ unsigned fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }
// The read bound's kernel (bench/gemm_read_bound.h): grid-stride, 4 loads of 16 bytes in flight per
// thread; CS: ld.global.cs (evict-first), else default loads.
template <bool CS>
__global__ void rd(const uint4* __restrict__ p, long long n, unsigned* out) {
  unsigned acc = 0;
  const long long stride = (long long)gridDim.x * blockDim.x * 4;
  for (long long b = (long long)blockIdx.x * blockDim.x * 4 + threadIdx.x; b < n; b += stride) {
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const long long i = b + (long long)u * blockDim.x;
      v[u] = i < n ? (CS ? __ldcs(p + i) : p[i]) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) acc ^= fold(v[u]);
  }
  if (acc == 0x9e3779b9u) out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

static CUtensorMap make_map(void* base, int rows, int K, int box_rows) {
  CUtensorMap m;
  const cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows};
  const cuuint64_t strides[1] = {(cuuint64_t)K * 2};
  const cuuint32_t boxd[2] = {64, (cuuint32_t)box_rows}, es[2] = {1, 1};
  if (cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, base, dims, strides, boxd, es,
                             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
    std::printf("cuTensorMapEncodeTiled failed rows %d\n", rows);
    std::exit(1);
  }
  return m;
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 30;
  const int K = 4096, S = 4, sizes[2] = {4096, 14336}, kCopies = 4;
  const char* xname[4] = {"read .cs", "read default", "TMA default", "TMA evict-first"};
  cuInit(0);
  int l2 = 0;
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
  const long long fl_n = 5ll * l2 / 16;  // the reset: 5x L2 of default loads
  std::vector<void*> w(kCopies);
  void* x = nullptr;
  uint4* fl = nullptr;
  unsigned* out = nullptr;
  for (auto& c : w)
    if (cudaMalloc(&c, (size_t)sizes[1] * K * 2)) return std::printf("no GPU memory\n"), 1;
  if (cudaMalloc(&x, 16 * K * 2) || cudaMalloc(&fl, fl_n * 16) || cudaMalloc(&out, 64 << 20))
    return std::printf("no GPU memory\n"), 1;
  for (auto& c : w) cudaMemset(c, 1, (size_t)sizes[1] * K * 2);
  cudaMemset(x, 1, 16 * K * 2);
  cudaMemset(fl, 2, fl_n * 16);
  const size_t smem = 1024 + (size_t)S * (64 * 4 * 128 + 16 * 4 * 128) + 16 * S;
  cudaFuncSetAttribute(tstream<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  cudaFuncSetAttribute(tstream<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  const CUtensorMap mx = make_map(x, 16, K, 16);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::printf("L2H L2 %d bytes; reset: %lld MB of default loads before every cell\n", l2, fl_n * 16 >> 20);
  for (int si = 0; si < 2; ++si) {
    const int rows = sizes[si];
    std::vector<CUtensorMap> mw;
    for (auto& c : w) mw.push_back(make_map(c, rows, K, 64));
    const P p{64, S, K / 256, (long long)(rows / 64) * (K / 256)};
    const long long nv = (long long)rows * K * 2 / 16;
    auto launch = [&](int kind, int copy) {  // 0 read .cs, 1 read default, 2 TMA default, 3 TMA EF
      if (kind == 0) rd<true><<<264, 512>>>((const uint4*)w[copy], nv, out);
      else if (kind == 1) rd<false><<<264, 512>>>((const uint4*)w[copy], nv, out);
      else if (kind == 2) tstream<false><<<2 * rows / 64, 160, smem>>>(mw[copy], mx, p);
      else tstream<true><<<2 * rows / 64, 160, smem>>>(mw[copy], mx, p);
    };
    for (int k = 0; k < 4; ++k)
      for (int c = 0; c < kCopies; ++c) launch(k, c);  // warm-up
    if (cudaDeviceSynchronize() != cudaSuccess)
      return std::printf("CUDA error (warm-up): %s\n", cudaGetErrorString(cudaGetLastError())), 1;
    // Cell (x, st): st 0 reset -> X; 1..4: reset -> Y = st - 1 three times over copies 1..3 -> X;
    // 5..8 (N = 4096, copy 0 fits in L2): reset -> a default read of copy 0 -> Y x3 -> X.
    const int states = si == 0 ? 9 : 5, cells = 4 * states;
    std::vector<std::vector<float>> t(cells);
    for (int r = 0; r < rounds; ++r)
      for (int i = 0; i < cells; ++i) {
        const int cell = (i * 7 + r * 5) % cells, xk = cell % 4, st = cell / 4;
        rd<false><<<264, 512>>>(fl, fl_n, out);
        if (st >= 5) launch(1, 0);
        if (st >= 1)
          for (int c = 1; c < 4; ++c) launch((st - 1) % 4, c);
        cudaEventRecord(e0);
        launch(xk, 0);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        t[cell].push_back(ms * 1e3f);
      }
    // Back to back: after the reset, 20 launches of X over copies 0..3 in turn, timed together / 20
    // (gemm_bench's rotated batch), and the same 20 with a stream synchronisation after each
    // launch, timed launch by launch (the sum / 20: no overlap of one launch's tail with the next).
    // Modes 2, 3: back to back with an empty kernel, or a 1 MB default read of other memory (a
    // row-wise op's activations), launched between two streams (timed together / 20 with them).
    std::vector<float> b2b[4][4];
    for (int r = 0; r < rounds; ++r)
      for (int i = 0; i < 16; ++i) {
        const int xk = (i + r) % 4, mode = ((i + r) / 4) % 4, sync = mode == 1;
        rd<false><<<264, 512>>>(fl, fl_n, out);
        float sum = 0;
        if (!sync) cudaEventRecord(e0);
        for (int j = 0; j < 20; ++j) {
          if (sync) cudaEventRecord(e0);
          if (j > 0 && mode == 2) empty_k<<<1, 32>>>(out);
          if (j > 0 && mode == 3) rd<false><<<64, 256>>>(fl, (1 << 20) / 16, out);
          launch(xk, j % kCopies);
          if (sync) {
            cudaEventRecord(e1);
            cudaEventSynchronize(e1);
            float ms = 0;
            cudaEventElapsedTime(&ms, e0, e1);
            sum += ms;
          }
        }
        if (!sync) {
          cudaEventRecord(e1);
          cudaEventSynchronize(e1);
          cudaEventElapsedTime(&sum, e0, e1);
        }
        b2b[xk][mode].push_back(sum * 1e3f / 20);
      }
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess)
      return std::printf("CUDA error: %s\n", cudaGetErrorString(e)), 1;
    auto med = [](std::vector<float> v) {
      std::sort(v.begin(), v.end());
      return v.empty() ? 0.0 : (double)v[v.size() / 2];
    };
    std::printf("L2H N=%d (%.1f MB), %d rounds: X (copy 0) after the state, median us [/ after the reset alone]\n",
                rows, rows * (double)K * 2 / 1e6, rounds);
    std::printf("L2H %-16s | %-15s", "X \\ state", "reset");
    for (int st = 1; st < states; ++st)
      std::printf(" | %s%-14s", st >= 5 ? "c0 + " : "", (std::string(xname[(st - 1) % 4]) + " x3").c_str());
    std::printf("\n");
    for (int xk = 0; xk < 4; ++xk) {
      const double f = med(t[xk]);
      std::printf("L2H %-16s | %6.2f         ", xname[xk], f);
      for (int st = 1; st < states; ++st) std::printf(" | %6.2f [%.3f]", med(t[st * 4 + xk]), med(t[st * 4 + xk]) / f);
      std::printf("\n");
    }
    for (int xk = 0; xk < 4; ++xk)
      std::printf("L2H B2B N=%d %-16s | 20 back to back over 4 copies: %6.2f us a launch | each synchronised: %6.2f"
                  " | an empty kernel between: %6.2f | a 1 MB read between: %6.2f\n",
                  rows, xname[xk], med(b2b[xk][0]), med(b2b[xk][1]), med(b2b[xk][2]), med(b2b[xk][3]));
  }
  return 0;
}
