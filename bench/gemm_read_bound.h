// The weight-streaming bound of a decode GEMM for gemm_bench: a pure read of the weight matrix B
// (16-byte loads, grid-stride, a per-thread value stored only for an impossible result so nothing
// is optimised away), over a few block sizes, unrolls and grids. A GEMM that must read B cannot
// beat the fastest of them when timed the same way (same flush or same rotation).
#pragma once

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "runtime/backend.h"

namespace ktune::bench {

inline const char* kReadSrc = R"(
extern "C" __global__ void __launch_bounds__(THREADS) ktune_read_bound(const uint4* __restrict__ p,
                                                                     long long n, unsigned* out) {
  unsigned acc = 0;
  const long long stride = (long long)gridDim.x * THREADS * UNROLL;
  for (long long base = (long long)blockIdx.x * THREADS * UNROLL + threadIdx.x; base < n;
       base += stride) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long i = base + (long long)u * THREADS;
      v[u] = i < n ? __ldcs(p + i) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x9e3779b9u) out[blockIdx.x * THREADS + threadIdx.x] = acc;
}
)";

struct ReadKernel {
  FunctionHandle fn{};
  int threads = 0, unroll = 0;
};
struct ReadKernels {
  std::vector<ReadKernel> kernels;
  DevicePtr out = 0;  // the never-written output (4 Mi unsigned)
};

inline ReadKernels buildReadKernels(Backend& be, Compiler& cc, const DeviceInfo& dev) {
  ReadKernels rk;
  for (int threads : {256, 512, 1024})
    for (int unroll : {2, 4, 8}) {
      CompileRequest r;
      r.source = kReadSrc;
      r.source_name = "read_bound.cu";
      r.entry = "ktune_read_bound";
      r.arch = dev.arch;
      r.defines = {{"THREADS", std::to_string(threads)}, {"UNROLL", std::to_string(unroll)}};
      auto co = cc.compile(r);
      if (!co.ok()) {
        std::fprintf(stderr, "read bound: %s\n", co.status().toString().c_str());
        continue;
      }
      auto m = be.loadModule(co->binary);
      if (!m.ok()) continue;
      auto f = be.getFunction(*m, co->lowered_entry.empty() ? r.entry : co->lowered_entry);
      if (f.ok()) rk.kernels.push_back({*f, threads, unroll});
    }
  auto out = be.alloc(static_cast<size_t>(4) * 1024 * 1024 * 4);
  if (out.ok()) rk.out = *out;
  return rk;
}

// One way to read `bytes` at ptrs[i % ptrs.size()] (launch(i)), and its description.
struct ReadChoice {
  double us = -1;  // set by the caller's timing
  std::function<Status(int)> fn;
  std::string how;
};

// Every kernel x grid (1, 2, 4, 8 waves per SM) that fits the output buffer.
inline std::vector<ReadChoice> readLaunches(Backend& be, const DeviceInfo& dev, const ReadKernels& rk,
                                            const std::vector<DevicePtr>& ptrs, int64_t bytes) {
  std::vector<ReadChoice> out;
  const long long n = bytes / 16;
  for (const ReadKernel& k : rk.kernels)
    for (int per_sm : {1, 2, 4, 8}) {
      const unsigned grid = static_cast<unsigned>(
          std::min<long long>(per_sm * std::max(1, dev.multiprocessors) * (1024 / k.threads),
                              (n + k.threads - 1) / k.threads));
      if (grid * static_cast<long long>(k.threads) > 4 * 1024 * 1024) continue;
      const FunctionHandle fn = k.fn;
      const unsigned threads = static_cast<unsigned>(k.threads);
      Backend* b = &be;
      const DevicePtr sink = rk.out;
      out.push_back({-1, [b, ptrs, n, fn, grid, threads, sink](int i) {
                       KernelArgs a;
                       a.add(ptrs[static_cast<size_t>(i) % ptrs.size()]).add(n).add(sink);
                       return b->launch(fn, Dim3{grid, 1, 1}, Dim3{threads, 1, 1}, 0, a.data());
                     },
                     "read " + std::to_string(k.threads) + "x" + std::to_string(k.unroll) +
                         ", grid " + std::to_string(grid)});
    }
  return out;
}

}  // namespace ktune::bench
