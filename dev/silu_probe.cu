// Probe for the small SiLU·Mul shape (bf16, x: rows x 2d, out: rows x d): which variant of the
// kernel's structure and load cache hints moves the same-run ratio to a D2D copy of the same bytes,
// timed per call with CUDA events after a clean (read) L2 flush, variants interleaved in rounds.
// Two L2 flushes (read: a 2x-L2 buffer read; discard: the buffer written, then its lines
// discarded with discard.global.L2, so no dirty line of any earlier run is left) and two orders
// (interleaved: every variant once per shuffled round; repeated: a variant's runs back to back, as
// a harness that times one callable N times does), so an earlier run's dirty lines surviving the
// flush can be told apart from the kernels' own speed. ktune's own kernel is timed from cubins
// (KERNEL=name:path:VEC:THREADS:UNROLL:ROWS_PER_BLOCK arguments, built with nvcc -cubin from
// templates/kernels/silu_mul.cuh; dev/python_probe_device.sh).
// A dev tool (not part of the build):
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 silu_probe.cu -lcuda
//   ./a.out rows d rounds [name:cubin:VEC:THREADS:UNROLL:ROWS ...]
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

// HINT: 0 plain loads, 1 an L2 evict_first cache policy
template <int HINT>
__device__ __forceinline__ uint4 load16(const void* p) {
  uint4 v;
  if constexpr (HINT == 0) {
    v = *reinterpret_cast<const uint4*>(p);
  } else {
    unsigned long long pol;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    asm volatile("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p), "l"(pol));
  }
  return v;
}

__device__ __forceinline__ float silu(float g) {
  return __fdividef(g, 1.0f + exp2f(-g * 1.4426950408889634f));
}

__device__ __forceinline__ unsigned pack2(float a, float b) {
  __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<unsigned*>(&h);
}
__device__ __forceinline__ float2 unpack2(unsigned u) {
  __nv_bfloat162 h = *reinterpret_cast<__nv_bfloat162*>(&u);
  return __bfloat1622float2(h);
}

template <int MATH>
__device__ __forceinline__ unsigned op2(unsigned g, unsigned u) {
  float2 a = unpack2(g), b = unpack2(u);
  if constexpr (MATH == 1) return pack2(silu(a.x) * b.x, silu(a.y) * b.y);
  return pack2(a.x + b.x, a.y + b.y);
}

// 16-byte vectors (8 bf16). Each block: ROWS rows x (THREADS*UNROLL) vectors per step, all
// loads of a step issued before the math; grid-stride over row groups (grid.y may be capped).
template <int THREADS, int ROWS, int UNROLL, int HINT, int MATH>
__global__ void __launch_bounds__(THREADS) silu_k(uint4* out, const uint4* x, int rows, int nv) {
  const int tx = threadIdx.x;
  const int chunk = blockIdx.x * THREADS * UNROLL;
  for (int r0 = blockIdx.y * ROWS; r0 < rows; r0 += gridDim.y * ROWS) {
    uint4 g[ROWS][UNROLL], u[ROWS][UNROLL];
#pragma unroll
    for (int q = 0; q < ROWS; ++q)
#pragma unroll
      for (int k = 0; k < UNROLL; ++k) {
        const int i = chunk + k * THREADS + tx;
        if (r0 + q < rows && i < nv) {
          const uint4* xr = x + (size_t)(r0 + q) * 2 * nv;
          g[q][k] = load16<HINT>(xr + i);
          u[q][k] = load16<HINT>(xr + nv + i);
        }
      }
#pragma unroll
    for (int q = 0; q < ROWS; ++q)
#pragma unroll
      for (int k = 0; k < UNROLL; ++k) {
        const int i = chunk + k * THREADS + tx;
        if (r0 + q < rows && i < nv) {
          uint4 o;
          o.x = op2<MATH>(g[q][k].x, u[q][k].x);
          o.y = op2<MATH>(g[q][k].y, u[q][k].y);
          o.z = op2<MATH>(g[q][k].z, u[q][k].z);
          o.w = op2<MATH>(g[q][k].w, u[q][k].w);
          out[(size_t)(r0 + q) * nv + i] = o;
        }
      }
  }
}

// 8-byte vectors (4 bf16), as the default config of the real kernel (VEC=4).
template <int THREADS>
__global__ void __launch_bounds__(THREADS) silu_k8(uint2* out, const uint2* x, int rows, int nv) {
  const int i = blockIdx.x * THREADS + threadIdx.x;
  const int r = blockIdx.y;
  if (i >= nv) return;
  const uint2* xr = x + (size_t)r * 2 * nv;
  const uint2 g = xr[i], u = xr[nv + i];
  uint2 o;
  o.x = op2<1>(g.x, u.x);
  o.y = op2<1>(g.y, u.y);
  out[(size_t)r * nv + i] = o;
}

__global__ void copy_k(uint4* dst, const uint4* src, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    dst[i] = src[i];
}

__global__ void flush_k(const float4* p, size_t n, float* sink) {
  float s = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float4 v = p[i];
    s += v.x + v.y + v.z + v.w;
  }
  if (s == 12345.678f) *sink = s;  // keeps the loads; never true for the zero buffer
}

__global__ void write_k(float4* p, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = make_float4(0.f, 0.f, 0.f, 0.f);
}

__global__ void discard_k(char* p, size_t lines) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < lines;
       i += (size_t)gridDim.x * blockDim.x)
    asm volatile("discard.global.L2 [%0], 128;" ::"l"(p + i * 128) : "memory");
}

__global__ void fill_k(__nv_bfloat16* p, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)(i * 2654435761u);
    p[i] = __float2bfloat16(((h >> 8) & 0xffff) / 8192.0f - 4.0f);
  }
}

struct Variant {
  std::string name;
  std::function<void()> fn;
  std::vector<float> ms[4];  // per block: read/interleaved, read/repeated, discard/...
};

#define CU(x)                                                           \
  do {                                                                  \
    CUresult r_ = (x);                                                  \
    if (r_ != CUDA_SUCCESS) {                                           \
      std::fprintf(stderr, "%s:%d %s: CUresult %d\n", __FILE__, __LINE__, #x, (int)r_); \
      std::exit(1);                                                     \
    }                                                                   \
  } while (0)

int main(int argc, char** argv) {
  const int rows = argc > 1 ? std::atoi(argv[1]) : 4096;
  const int d = argc > 2 ? std::atoi(argv[2]) : 2048;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 60;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  CK(cudaFree(nullptr));  // the primary context, current for the driver calls below
  const int sms = prop.multiProcessorCount;
  const size_t xn = (size_t)rows * 2 * d, on = (size_t)rows * d;
  __nv_bfloat16 *x, *out, *src, *dst;
  CK(cudaMalloc(&x, xn * 2));
  CK(cudaMalloc(&out, on * 2));
  const size_t cn = (size_t)rows * 3 * d / 2;  // copy moves the op's bytes: read 1.5d, write 1.5d
  CK(cudaMalloc(&src, cn * 2));
  CK(cudaMalloc(&dst, cn * 2));
  fill_k<<<1024, 256>>>(x, xn);
  fill_k<<<1024, 256>>>(src, cn);
  const size_t fl = 2 * (size_t)prop.l2CacheSize / 16;
  float4* flush;
  float* sink;
  CK(cudaMalloc(&flush, fl * 16));
  CK(cudaMemset(flush, 0, fl * 16));
  CK(cudaMalloc(&sink, 4));
  const double opb = 3.0 * rows * d * 2;
  const int nv = d / 8;
  auto* xo = reinterpret_cast<const uint4*>(x);
  auto* oo = reinterpret_cast<uint4*>(out);
  std::vector<Variant> vs;
  vs.push_back({"copy cudaMemcpyAsync D2D", [&] {
                  CK(cudaMemcpyAsync(dst, src, cn * 2, cudaMemcpyDeviceToDevice, 0));
                }});
  // The same copy of a zero-filled source (a fresh allocation, as an uninitialised peer's).
  __nv_bfloat16* zsrc;
  CK(cudaMalloc(&zsrc, cn * 2));
  CK(cudaMemset(zsrc, 0, cn * 2));
  vs.push_back({"copy D2D, zero source", [&] {
                  CK(cudaMemcpyAsync(dst, zsrc, cn * 2, cudaMemcpyDeviceToDevice, 0));
                }});
  vs.push_back({"copy kernel 16B (sms*8 x 256)", [&] {
                  copy_k<<<sms * 8, 256>>>(reinterpret_cast<uint4*>(dst),
                                           reinterpret_cast<const uint4*>(src), cn / 8);
                }});
#define SV(T, R, U, H, M, GY, label)                                                        \
  vs.push_back({label, [&] {                                                                \
                  dim3 g((nv + T * U - 1) / (T * U), GY);                                   \
                  silu_k<T, R, U, H, M><<<g, T>>>(oo, xo, rows, nv);                        \
                }})
  const int full = rows;
  SV(256, 1, 1, 0, 0, full, "r2w1 add 16B T256 R1");
  SV(256, 1, 1, 0, 1, full, "silu 16B T256 R1");
  SV(256, 1, 1, 1, 1, full, "silu 16B T256 R1 L2 evict_first");
  SV(128, 1, 1, 0, 1, full, "silu 16B T128 R1 (2 blocks/row)");
  SV(128, 1, 1, 1, 1, full, "silu 16B T128 R1 L2 evict_first");
  vs.push_back({"silu 8B T128 (default config shape)", [&] {
                  dim3 g((d / 4 + 127) / 128, rows);
                  silu_k8<128><<<g, 128>>>(reinterpret_cast<uint2*>(out),
                                              reinterpret_cast<const uint2*>(x), rows, d / 4);
                }});
  // ktune's kernel from cubins: name:path:VEC:THREADS:UNROLL:ROWS
  for (int a = 4; a < argc; ++a) {
    std::string spec = argv[a];
    std::vector<std::string> f;
    size_t p0 = 0;
    for (size_t p; (p = spec.find(':', p0)) != std::string::npos; p0 = p + 1)
      f.push_back(spec.substr(p0, p - p0));
    f.push_back(spec.substr(p0));
    if (f.size() != 6) {
      std::fprintf(stderr, "bad kernel spec %s\n", argv[a]);
      return 1;
    }
    CUmodule mod;
    CUfunction fn;
    CU(cuModuleLoad(&mod, f[1].c_str()));
    CU(cuModuleGetFunction(&fn, mod, "ktune_silu_mul"));
    const long long vec = std::stoll(f[2]), th = std::stoll(f[3]), un = std::stoll(f[4]),
                    rp = std::stoll(f[5]);
    const unsigned gx = (unsigned)(((d + vec - 1) / vec + th * un - 1) / (th * un));
    const unsigned gy = (unsigned)std::min<long long>((rows + rp - 1) / rp, 65535);
    vs.push_back({"ktune " + f[0], [=] {
                    void* o = out;
                    const void* xi = x;
                    long long r = rows, dd = d, xs = 2LL * d, os = d;
                    void* params[] = {&o, (void*)&xi, &r, &dd, &xs, &os};
                    CU(cuLaunchKernel(fn, gx, gy, 1, (unsigned)th, 1, 1, 0, nullptr, params, nullptr));
                  }});
  }
  cudaEvent_t s[64], e[64];
  for (int i = 0; i < 64; ++i) {
    CK(cudaEventCreate(&s[i]));
    CK(cudaEventCreate(&e[i]));
  }
  auto flushRead = [&] { flush_k<<<sms * 4, 512>>>(flush, fl, sink); };
  auto flushDiscard = [&] {
    write_k<<<sms * 4, 512>>>(flush, fl);
    discard_k<<<sms * 4, 512>>>(reinterpret_cast<char*>(flush), fl * 16 / 128);
  };
  for (auto& v : vs) v.fn();  // warm
  CK(cudaDeviceSynchronize());
  std::mt19937 rng(12345);
  std::vector<float> allDeltas;
  // One timed run per (variant, slot) in `seq`, each after a flush.
  auto timeSeq = [&](const std::vector<int>& seq, const std::function<void()>& fl_, int block) {
    for (size_t j0 = 0; j0 < seq.size(); j0 += 64) {
      const size_t n = std::min<size_t>(64, seq.size() - j0);
      for (size_t j = 0; j < n; ++j) {
        fl_();
        CK(cudaEventRecord(s[j]));
        vs[seq[j0 + j]].fn();
        CK(cudaEventRecord(e[j]));
      }
      CK(cudaDeviceSynchronize());
      for (size_t j = 0; j < n; ++j) {
        float ms;
        CK(cudaEventElapsedTime(&ms, s[j], e[j]));
        vs[seq[j0 + j]].ms[block].push_back(ms);
        allDeltas.push_back(ms);
      }
    }
  };
  const int nvar = (int)vs.size();
  for (int blk = 0; blk < 4; ++blk) {
    const auto& fl_ = blk < 2 ? std::function<void()>(flushRead) : std::function<void()>(flushDiscard);
    const bool repeated = blk % 2 == 1;
    for (int r = 0; r < rounds; ++r) {
      std::vector<int> order(nvar);
      for (int i = 0; i < nvar; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<int> seq;
      if (repeated) {
        // Each variant 8 times back to back (the first of the 8 dropped: it follows another).
        for (int i : order)
          for (int k = 0; k < 8; ++k) seq.push_back(i);
      } else {
        seq = order;
      }
      timeSeq(seq, fl_, blk);
    }
    if (repeated) {  // drop the first run of each back-to-back group of 8
      for (auto& v : vs) {
        std::vector<float> kept;
        for (size_t i = 0; i < v.ms[blk].size(); ++i)
          if (i % 8 != 0) kept.push_back(v.ms[blk][i]);
        v.ms[blk] = kept;
      }
    }
  }
  CK(cudaGetLastError());
  auto med = [](std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.f : v[v.size() / 2];
  };
  std::sort(allDeltas.begin(), allDeltas.end());
  float gran = 1e9;
  for (size_t i = 1; i < allDeltas.size(); ++i)
    if (allDeltas[i] > allDeltas[i - 1]) gran = std::min(gran, allDeltas[i] - allDeltas[i - 1]);
  std::printf("rows %d d %d (op bytes %.1f MB), %d rounds, L2 %d MB, event granularity %.4f us\n",
              rows, d, opb / 1e6, rounds, prop.l2CacheSize >> 20, gran * 1e3);
  std::printf("median us and x D2D per block: flush read/discard, order interleaved/repeated\n");
  std::printf("%-40s %16s %16s %16s %16s\n", "variant", "read,interl", "read,repeat",
              "discard,interl", "discard,repeat");
  float copyMs[4];
  for (int b = 0; b < 4; ++b) copyMs[b] = med(vs[0].ms[b]);
  for (auto& v : vs) {
    std::printf("%-40s", v.name.c_str());
    for (int b = 0; b < 4; ++b) {
      const float m = med(v.ms[b]);
      std::printf("  %7.2f %6.3f ", m * 1e3, copyMs[b] / m);
    }
    std::printf("\n");
  }
  return 0;
}
