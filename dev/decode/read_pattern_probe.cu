// Issue 32's 16-row gap: does the decode kernel's access pattern (each block streaming its own
// 128-row tiles, all rows' k chunk at once) stream slower than the read bound's grid-stride sweep,
// with plain 16-byte loads in both (no TMA)? Times (read flush before each launch, interleaved
// rounds) pure reads of the same weight bytes in several patterns and prints, per pattern, the
// median µs, the rate, and from one launch's per-block %globaltimer stamps the blocks' stream times
// (min / median / max) and the tail (last block's end after the median block's end).
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a dev/decode/read_pattern_probe.cu -o rp
//   ./rp [rounds]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <cstdio>
#include <string>
#include <vector>

struct Rec {
  unsigned long long t0, t1;
};

__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void stamp(Rec* rec, unsigned long long ts, unsigned acc, unsigned* out) {
  __syncthreads();
  if (threadIdx.x == 0) rec[blockIdx.x] = {ts, gtime()};
  if (acc == 0x9e3779b9u) out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
__device__ __forceinline__ unsigned fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

// The read bound's kernel (bench/gemm_read_bound.h): grid-stride, U loads of 16 bytes in flight.
// blocked = 1: block b reads its own contiguous 1/grid of the bytes (the same loop inside it).
template <int U>
__global__ void lin(const uint4* __restrict__ p, long long n, int blocked, unsigned* out, Rec* rec) {
  const unsigned long long ts = gtime();
  unsigned acc = 0;
  const long long lo = blocked ? n * blockIdx.x / gridDim.x : 0;
  const long long hi = blocked ? n * (blockIdx.x + 1) / gridDim.x : n;
  const long long stride = (long long)(blocked ? 1 : gridDim.x) * blockDim.x * U;
  for (long long base = lo + (long long)(blocked ? 0 : blockIdx.x) * blockDim.x * U + threadIdx.x; base < hi;
       base += stride) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long i = base + (long long)u * blockDim.x;
      v[u] = i < hi ? __ldcs(p + i) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= fold(v[u]);
  }
  stamp(rec, ts, acc, out);
}

// The decode kernel's order with plain loads: units (128-row tile, 1/ksplit of K) split evenly over
// the blocks as the TMA body splits them (DC_GRID 6 / 0 / the cluster K split); per step every row's
// next CH 16-byte chunks (CH = 16: the 256 bytes of a U2 stage), STEPS steps in flight.
template <int TH, int CH, int STEPS>
__global__ void __launch_bounds__(TH) tile(const uint4* __restrict__ p, int rows, int k16, int ksplit,
                                           unsigned* out, Rec* rec) {
  const unsigned long long ts = gtime();
  constexpr int kLpt = 128 * CH / TH;
  static_assert(128 * CH % TH == 0, "the loads of a step divide over the threads");
  const long long units = (long long)((rows + 127) / 128) * ksplit;
  const long long u0 = units * blockIdx.x / gridDim.x, u1 = units * (blockIdx.x + 1) / gridDim.x;
  const int kpart = k16 / ksplit;
  unsigned acc = 0;
  for (long long u = u0; u < u1; ++u) {
    const int t = (int)(u / ksplit), kbeg = (int)(u % ksplit) * kpart, kend = kbeg + kpart;
    for (int k = kbeg; k < kend; k += CH * STEPS) {
      uint4 v[STEPS][kLpt];
#pragma unroll
      for (int s = 0; s < STEPS; ++s)
#pragma unroll
        for (int j = 0; j < kLpt; ++j) {
          const int idx = threadIdx.x + j * TH, r = t * 128 + idx / CH, c = k + s * CH + idx % CH;
          v[s][j] = r < rows && c < kend ? __ldcs(p + (long long)r * k16 + c) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
      for (int s = 0; s < STEPS; ++s)
#pragma unroll
        for (int j = 0; j < kLpt; ++j) acc ^= fold(v[s][j]);
    }
  }
  stamp(rec, ts, acc, out);
}

__global__ void flush_read(const uint4* __restrict__ p, long long n, unsigned* out) {
  unsigned acc = 0;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    acc ^= fold(__ldcs(p + i));
  if (acc == 0x9e3779b9u) out[threadIdx.x] = acc;
}

struct Variant {
  std::string name;
  int rows, grid, threads;
  std::function<void(const uint4*, Rec*)> launch;
};

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 10;
  const int k16 = 4096 * 2 / 16;  // K = 4096 bf16: 512 chunks of 16 bytes per row
  const long long max_rows = 28672;
  uint4 *w = nullptr, *fl = nullptr;
  unsigned* out = nullptr;
  Rec* rec = nullptr;
  const long long fl_n = (256ll << 20) / 16;
  if (cudaMalloc(&w, max_rows * k16 * 16) || cudaMalloc(&fl, fl_n * 16) || cudaMalloc(&out, 64 << 20) ||
      cudaMalloc(&rec, 4096 * sizeof(Rec))) {
    std::printf("no GPU memory: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
  }
  cudaMemset(w, 1, max_rows * k16 * 16);
  cudaMemset(fl, 2, fl_n * 16);
  std::vector<Variant> vs;
  for (int rows : {28672, 6144}) {
    const long long n = (long long)rows * k16;
    const std::string r = std::to_string(rows) + "x4096 ";
    vs.push_back({r + "grid-stride 264x512 U4 (read bound)", rows, 264, 512,
                  [=](const uint4* p, Rec* q) { lin<4><<<264, 512>>>(p, n, 0, out, q); }});
    vs.push_back({r + "grid-stride 132x1024 U4", rows, 132, 1024,
                  [=](const uint4* p, Rec* q) { lin<4><<<132, 1024>>>(p, n, 0, out, q); }});
    vs.push_back({r + "blocked 132x1024 U4 (own 1/132 each)", rows, 132, 1024,
                  [=](const uint4* p, Rec* q) { lin<4><<<132, 1024>>>(p, n, 1, out, q); }});
    vs.push_back({r + "blocked 264x512 U4", rows, 264, 512,
                  [=](const uint4* p, Rec* q) { lin<4><<<264, 512>>>(p, n, 1, out, q); }});
    const int tiles = rows / 128;
    if (rows == 28672) {  // the 16-row picks: G6 W8 NT1 (112 blocks, 2 tiles each), G0 NT2 (224 x 1 tile)
      vs.push_back({r + "tiles G6-like 112x1024 CH16 S4", rows, 112, 1024,
                     [=](const uint4* p, Rec* q) { tile<1024, 16, 4><<<112, 1024>>>(p, rows, k16, 1, out, q); }});
      vs.push_back({r + "tiles G6-like 112x1024 CH32 S2", rows, 112, 1024,
                     [=](const uint4* p, Rec* q) { tile<1024, 32, 2><<<112, 1024>>>(p, rows, k16, 1, out, q); }});
      vs.push_back({r + "tiles 1 per block 224x512 CH16 S2", rows, 224, 512,
                     [=](const uint4* p, Rec* q) { tile<512, 16, 2><<<224, 512>>>(p, rows, k16, 1, out, q); }});
      vs.push_back({r + "tiles split over 132x1024 CH16 S4 (stream-K-like)", rows, 132, 1024,
                     [=](const uint4* p, Rec* q) { tile<1024, 16, 4><<<132, 1024>>>(p, rows, k16, 4, out, q); }});
    } else {  // the pick G4 NT2: a tile's K split over 2 blocks (96 blocks)
      vs.push_back({r + "tiles K/2 per block 96x1024 CH16 S4", rows, 2 * tiles, 1024,
                     [=](const uint4* p, Rec* q) { tile<1024, 16, 4><<<2 * tiles, 1024>>>(p, rows, k16, 2, out, q); }});
      vs.push_back({r + "tiles K/4 per block 132x1024 CH16 S4", rows, 132, 1024,
                     [=](const uint4* p, Rec* q) { tile<1024, 16, 4><<<132, 1024>>>(p, rows, k16, 4, out, q); }});
    }
  }
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<std::vector<float>> t(vs.size());
  std::vector<std::vector<Rec>> last(vs.size());
  for (auto& v : vs)
    for (int i = 0; i < 3; ++i) v.launch(w, rec);  // warm-up
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < vs.size(); ++i) {
      const size_t v = (i + r) % vs.size();  // each variant first in turn
      flush_read<<<264, 512>>>(fl, fl_n, out);
      cudaEventRecord(e0);
      vs[v].launch(w, rec);
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      t[v].push_back(ms * 1e3f);
      last[v].resize(vs[v].grid);
      cudaMemcpy(last[v].data(), rec, vs[v].grid * sizeof(Rec), cudaMemcpyDeviceToHost);
    }
  if (cudaGetLastError() != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  std::printf("%-58s %8s %7s  %s\n", "pattern (K = 4096, bf16)", "us", "TB/s",
              "last launch: block stream us min / median / max; end median / max after first entry; tail");
  for (size_t v = 0; v < vs.size(); ++v) {
    std::vector<float> x = t[v];
    std::sort(x.begin(), x.end());
    const double us = x[x.size() / 2], mb = vs[v].rows * 4096.0 * 2 / 1e6;
    unsigned long long first = ~0ull;
    for (auto& q : last[v]) first = std::min(first, q.t0);
    std::vector<double> dur, end;
    for (auto& q : last[v]) {
      dur.push_back((q.t1 - q.t0) * 1e-3);
      end.push_back((q.t1 - first) * 1e-3);
    }
    std::sort(dur.begin(), dur.end());
    std::sort(end.begin(), end.end());
    std::printf("RP %-55s %8.2f %7.3f  %.2f / %.2f / %.2f; %.2f / %.2f; %.2f\n", vs[v].name.c_str(), us,
                mb / us, dur.front(), dur[dur.size() / 2], dur.back(), end[end.size() / 2], end.back(),
                end.back() - end[end.size() / 2]);
  }
  return 0;
}
