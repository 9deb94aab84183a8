// ktune kernel prelude: one kernel language for NVRTC, hiprtc and clang -x hip -nogpuinc.
//
// Every ktune kernel source starts with `#include "prelude.cuh"`; the compilers supply this file
// (embedded in the library), so kernels need no CUDA/HIP runtime header. On AMD everything comes
// from compiler builtins (__builtin_amdgcn_*): no HIP header, no ockl/ocml call, because the LLVM
// path compiles with -nogpulib -nogpuinc. On NVIDIA: CUDA builtins, cuda_fp16.h / cuda_bf16.h and
// inline PTX.
//
// Provides:
//   KTUNE_NVIDIA / KTUNE_AMD (exactly one is 1), KTUNE_WARP_SIZE, KTUNE_DEVICE, KTUNE_KERNEL,
//   KTUNE_LAUNCH_BOUNDS(max_threads, min_blocks_or_waves_per_eu), KTUNE_HAS_MFMA,
//   KTUNE_HAS_MFMA_BF16_1K, KTUNE_HAS_CP_ASYNC;
//   ktune::tid_x/tid_y/bid_x/bid_y/bid_z/bdim_x/bdim_y/gdim_x/gdim_y, sync_threads, lane_id,
//   shfl_xor(float,int), warp_reduce_sum/max(float), half_t, bf16_t, to_float, from_float<T>,
//   Vec<T,N>, load_vec/store_vec/load_vec_once, exp_fast, rsqrt,
//   cp_async16/cp_async_commit/cp_async_wait<N>, KTUNE_PDL_WAIT() / KTUNE_PDL_LAUNCH_DEPENDENTS(),
//   AMD MFMA wrappers (mfma_16x16x16_f16/bf16, mfma_32x32x8_f16/bf16).
#pragma once

#if defined(__HIP__) || defined(__HIPCC_RTC__) || defined(__AMDGCN__) || defined(__HIP_PLATFORM_AMD__)
#define KTUNE_AMD 1
#define KTUNE_NVIDIA 0
#elif defined(__CUDACC__) || defined(__CUDACC_RTC__) || defined(__NVCC__)
#define KTUNE_AMD 0
#define KTUNE_NVIDIA 1
#else
#error "ktune prelude: unknown compiler (expected NVRTC/nvcc, hiprtc or clang -x hip)"
#endif

// ---------------------------------------------------------------------------------------------
// Keywords and attributes
// ---------------------------------------------------------------------------------------------
#if KTUNE_AMD
// With -nogpuinc there is no HIP header; clang still knows the attributes.
#ifndef __global__
#define __global__ __attribute__((global))
#endif
#ifndef __device__
#define __device__ __attribute__((device))
#endif
#ifndef __host__
#define __host__ __attribute__((host))
#endif
#ifndef __shared__
#define __shared__ __attribute__((shared))
#endif
#ifndef __constant__
#define __constant__ __attribute__((constant))
#endif
#ifndef __forceinline__
#define __forceinline__ inline __attribute__((always_inline))
#endif
#ifndef __launch_bounds__
#define __launch_bounds__(t, ...) __attribute__((amdgpu_flat_work_group_size(1, t)))
#endif
#ifndef __restrict__
#define __restrict__ __restrict
#endif
#endif  // KTUNE_AMD

#define KTUNE_DEVICE __device__ __forceinline__
#define KTUNE_KERNEL extern "C" __global__

// KTUNE_LAUNCH_BOUNDS(max_threads, hint): NVIDIA: __launch_bounds__(max_threads, min blocks per
// SM); AMD: flat work-group size 1..max_threads and waves_per_eu(hint). hint 0 = no hint (clang
// drops amdgpu_waves_per_eu(0), NVCC treats min blocks 0 as unspecified).
#if KTUNE_AMD
#define KTUNE_LAUNCH_BOUNDS(max_threads, hint) \
  __attribute__((amdgpu_flat_work_group_size(1, max_threads), amdgpu_waves_per_eu(hint)))
#else
#define KTUNE_LAUNCH_BOUNDS(max_threads, hint) __launch_bounds__(max_threads, hint)
#endif

#if KTUNE_AMD
#if defined(__AMDGCN_WAVEFRONT_SIZE)
#define KTUNE_WARP_SIZE __AMDGCN_WAVEFRONT_SIZE
#elif defined(__GFX10__) || defined(__GFX11__) || defined(__GFX12__)
#define KTUNE_WARP_SIZE 32
#else
#define KTUNE_WARP_SIZE 64
#endif
#else
#define KTUNE_WARP_SIZE 32
#endif

// Matrix-core availability (AMD), per arch: 16x16x16/32x32x8 f16 since gfx908 (CDNA1); the
// bf16 "_1k" forms (4 bf16 per lane) since gfx90a (CDNA2) and gfx940..942 (CDNA3).
#if KTUNE_AMD && (defined(__gfx908__) || defined(__gfx90a__) || defined(__gfx940__) || \
                  defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__))
#define KTUNE_HAS_MFMA 1
#else
#define KTUNE_HAS_MFMA 0
#endif
#if KTUNE_AMD && (defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || \
                  defined(__gfx942__) || defined(__gfx950__))
#define KTUNE_HAS_MFMA_BF16_1K 1
#else
#define KTUNE_HAS_MFMA_BF16_1K 0
#endif
#if KTUNE_NVIDIA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define KTUNE_HAS_CP_ASYNC 1
#else
#define KTUNE_HAS_CP_ASYNC 0
#endif

#if KTUNE_NVIDIA
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif

namespace ktune {

// ---------------------------------------------------------------------------------------------
// Indices
// ---------------------------------------------------------------------------------------------
#if KTUNE_AMD
namespace detail {
// HSA kernel dispatch packet: workgroup_size_x/y/z (u16) at byte 4/6/8, grid_size_x/y/z (u32,
// in work-items) at byte 12/16/20. Used where clang lacks the workgroup/grid-size builtins.
KTUNE_DEVICE const unsigned short* dispatch_u16() {
  return reinterpret_cast<const unsigned short*>(__builtin_amdgcn_dispatch_ptr());
}
KTUNE_DEVICE const unsigned* dispatch_u32() {
  return reinterpret_cast<const unsigned*>(__builtin_amdgcn_dispatch_ptr());
}
}  // namespace detail
KTUNE_DEVICE unsigned tid_x() { return __builtin_amdgcn_workitem_id_x(); }
KTUNE_DEVICE unsigned tid_y() { return __builtin_amdgcn_workitem_id_y(); }
KTUNE_DEVICE unsigned tid_z() { return __builtin_amdgcn_workitem_id_z(); }
KTUNE_DEVICE unsigned bid_x() { return __builtin_amdgcn_workgroup_id_x(); }
KTUNE_DEVICE unsigned bid_y() { return __builtin_amdgcn_workgroup_id_y(); }
KTUNE_DEVICE unsigned bid_z() { return __builtin_amdgcn_workgroup_id_z(); }
#if defined(__has_builtin) && __has_builtin(__builtin_amdgcn_workgroup_size_x)
KTUNE_DEVICE unsigned bdim_x() { return __builtin_amdgcn_workgroup_size_x(); }
KTUNE_DEVICE unsigned bdim_y() { return __builtin_amdgcn_workgroup_size_y(); }
#else
KTUNE_DEVICE unsigned bdim_x() { return detail::dispatch_u16()[2]; }
KTUNE_DEVICE unsigned bdim_y() { return detail::dispatch_u16()[3]; }
#endif
#if defined(__has_builtin) && __has_builtin(__builtin_amdgcn_grid_size_x)
KTUNE_DEVICE unsigned gdim_x() {
  return (__builtin_amdgcn_grid_size_x() + bdim_x() - 1) / bdim_x();
}
KTUNE_DEVICE unsigned gdim_y() {
  return (__builtin_amdgcn_grid_size_y() + bdim_y() - 1) / bdim_y();
}
#else
KTUNE_DEVICE unsigned gdim_x() { return (detail::dispatch_u32()[3] + bdim_x() - 1) / bdim_x(); }
KTUNE_DEVICE unsigned gdim_y() { return (detail::dispatch_u32()[4] + bdim_y() - 1) / bdim_y(); }
#endif
KTUNE_DEVICE void sync_threads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
KTUNE_DEVICE unsigned lane_id() {
#if KTUNE_WARP_SIZE == 64
  return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
#else
  return __builtin_amdgcn_mbcnt_lo(~0u, 0u);
#endif
}
#else   // KTUNE_NVIDIA
KTUNE_DEVICE unsigned tid_x() { return threadIdx.x; }
KTUNE_DEVICE unsigned tid_y() { return threadIdx.y; }
KTUNE_DEVICE unsigned tid_z() { return threadIdx.z; }
KTUNE_DEVICE unsigned bid_x() { return blockIdx.x; }
KTUNE_DEVICE unsigned bid_y() { return blockIdx.y; }
KTUNE_DEVICE unsigned bid_z() { return blockIdx.z; }
KTUNE_DEVICE unsigned bdim_x() { return blockDim.x; }
KTUNE_DEVICE unsigned bdim_y() { return blockDim.y; }
KTUNE_DEVICE unsigned gdim_x() { return gridDim.x; }
KTUNE_DEVICE unsigned gdim_y() { return gridDim.y; }
KTUNE_DEVICE void sync_threads() { __syncthreads(); }
KTUNE_DEVICE unsigned lane_id() {
  unsigned l;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
  return l;
}
#endif

// ---------------------------------------------------------------------------------------------
// Warp shuffles and reductions (full warp/wave participates)
// ---------------------------------------------------------------------------------------------
KTUNE_DEVICE float shfl_xor(float v, int mask) {
#if KTUNE_AMD
  // ds_bpermute addresses lanes in bytes; wraps modulo the wave.
  const int src = static_cast<int>(lane_id()) ^ mask;
  return __builtin_bit_cast(float, __builtin_amdgcn_ds_bpermute(src << 2, __builtin_bit_cast(int, v)));
#else
  return __shfl_xor_sync(0xffffffffu, v, mask);
#endif
}
KTUNE_DEVICE float warp_reduce_sum(float v) {
#pragma unroll
  for (int m = KTUNE_WARP_SIZE / 2; m > 0; m >>= 1) v += shfl_xor(v, m);
  return v;
}
KTUNE_DEVICE float warp_reduce_max(float v) {
#pragma unroll
  for (int m = KTUNE_WARP_SIZE / 2; m > 0; m >>= 1) {
    const float o = shfl_xor(v, m);
    v = v > o ? v : o;
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// 16-bit float types
// ---------------------------------------------------------------------------------------------
#if KTUNE_AMD
typedef _Float16 half_t;
// bf16 as raw bits: ROCm 5.2's hiprtc clang has no usable __bf16 arithmetic type.
struct alignas(2) bf16_t {
  unsigned short bits;
};
KTUNE_DEVICE float to_float(float x) { return x; }
KTUNE_DEVICE float to_float(half_t x) { return static_cast<float>(x); }
KTUNE_DEVICE float to_float(bf16_t x) {
  return __builtin_bit_cast(float, static_cast<unsigned>(x.bits) << 16);
}
template <class T>
KTUNE_DEVICE T from_float(float x);
template <>
KTUNE_DEVICE float from_float<float>(float x) { return x; }
template <>
KTUNE_DEVICE half_t from_float<half_t>(float x) { return static_cast<half_t>(x); }
template <>
KTUNE_DEVICE bf16_t from_float<bf16_t>(float x) {
  // Round to nearest even; NaN stays a (quiet) NaN.
  unsigned u = __builtin_bit_cast(unsigned, x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16_t{static_cast<unsigned short>((u >> 16) | 0x40u)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16_t{static_cast<unsigned short>(u >> 16)};
}
#else
typedef __half half_t;
typedef __nv_bfloat16 bf16_t;
KTUNE_DEVICE float to_float(float x) { return x; }
KTUNE_DEVICE float to_float(half_t x) { return __half2float(x); }
KTUNE_DEVICE float to_float(bf16_t x) { return __bfloat162float(x); }
template <class T>
KTUNE_DEVICE T from_float(float x);
template <>
KTUNE_DEVICE float from_float<float>(float x) { return x; }
template <>
KTUNE_DEVICE half_t from_float<half_t>(float x) { return __float2half_rn(x); }
template <>
KTUNE_DEVICE bf16_t from_float<bf16_t>(float x) { return __float2bfloat16_rn(x); }
#endif

// The element type of a template's dtype code: 0 f32, 1 f16, 2 bf16 (one numbering for every
// template, as base/dtype.h's DType). dtype_of<DTYPE>::type; other codes do not compile.
template <int Code>
struct dtype_of {
  static_assert(Code >= 0 && Code <= 2, "dtype code (DTYPE, DTYPE_C) must be 0 (f32), 1 (f16) or 2 (bf16)");
};
template <>
struct dtype_of<0> { typedef float type; };
template <>
struct dtype_of<1> { typedef half_t type; };
template <>
struct dtype_of<2> { typedef bf16_t type; };

// A kernel's element type for dtype code `code` with its float conversions, declared in the
// enclosing namespace: KTUNE_ELEMENT_TYPE(T, ld, st, DTYPE) gives T, float ld(T), T st(float).
#define KTUNE_ELEMENT_TYPE(name, load, store, code)               \
  typedef ktune::dtype_of<code>::type name;                       \
  KTUNE_DEVICE float load(name x) { return ktune::to_float(x); }  \
  KTUNE_DEVICE name store(float x) { return ktune::from_float<name>(x); }

// ---------------------------------------------------------------------------------------------
// Vectors for 16-byte accesses: Vec<bf16_t, 8>, Vec<float, 4>, ...
// ---------------------------------------------------------------------------------------------
template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
  KTUNE_DEVICE T& operator[](int i) { return v[i]; }
  KTUNE_DEVICE const T& operator[](int i) const { return v[i]; }
};
// A vector's bytes as one machine vector type (VecWords<bytes>::type; kWords false where none
// fits): load_vec/store_vec move them as one access. Copying a Vec of 16-bit elements as a
// struct lets the compiler split the access, one 2-byte access per element (seen for SiLU·Mul's
// output: eight 2-byte stores per 16-byte vector, which halved its bandwidth).
template <int Bytes>
struct VecWords { static constexpr bool kWords = false; };
#if KTUNE_NVIDIA
// AMD keeps the struct copy: its compilers keep those accesses whole (the MFMA epilogue's analysis
// shows no split), and a word-typed local there was put in scratch memory.
template <>
struct VecWords<16> { typedef uint4 type; static constexpr bool kWords = true; };
template <>
struct VecWords<8> { typedef uint2 type; static constexpr bool kWords = true; };
template <>
struct VecWords<4> { typedef unsigned type; static constexpr bool kWords = true; };
template <>
struct VecWords<2> { typedef unsigned short type; static constexpr bool kWords = true; };
#endif
// (A Vec is aligned to its size, as the word type is, so it can be read as one.)
template <int N, class T>
KTUNE_DEVICE Vec<T, N> load_vec(const T* p) {
  typedef VecWords<static_cast<int>(sizeof(T)) * N> Words;
  if constexpr (!Words::kWords) {
    return *reinterpret_cast<const Vec<T, N>*>(p);
  } else {
    typedef typename Words::type W;
    const W w = *reinterpret_cast<const W*>(p);
    return *reinterpret_cast<const Vec<T, N>*>(&w);
  }
}
template <int N, class T>
KTUNE_DEVICE void store_vec(T* p, const Vec<T, N>& x) {
  typedef VecWords<static_cast<int>(sizeof(T)) * N> Words;
  if constexpr (!Words::kWords) {
    *reinterpret_cast<Vec<T, N>*>(p) = x;
  } else {
    typedef typename Words::type W;
    const W w = *reinterpret_cast<const W*>(&x);
#if KTUNE_NVIDIA
    // A plain store of `w` is still split where the words were made of 16-bit values; the
    // store intrinsic (st.global.wb, the default write-back policy) is one instruction.
    if (sizeof(W) >= 8 && __isGlobal(p)) {
      __stwb(reinterpret_cast<W*>(p), w);
      return;
    }
#endif
    *reinterpret_cast<W*>(p) = w;
  }
}
// load_vec for data a kernel reads once: its cache lines are the first the L2 evicts, so the
// lines the kernel writes stay cached instead (NVIDIA sm_80+: an L2 evict_first cache policy;
// elsewhere, AMD included, a plain load: no AMD measurement says what a nontemporal load would
// do there). Same alignment rule as load_vec.
template <int N, class T>
KTUNE_DEVICE Vec<T, N> load_vec_once(const T* p) {
  constexpr int kBytes = static_cast<int>(sizeof(T)) * N;
  static_assert(kBytes == 2 || kBytes == 4 || kBytes == 8 || kBytes == 16,
                "load_vec_once: 2, 4, 8 or 16 bytes");
#if KTUNE_NVIDIA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  Vec<T, N> r;
  unsigned long long pol;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  if constexpr (kBytes == 16) {
    unsigned* w = reinterpret_cast<unsigned*>(&r);
    asm volatile("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                 : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3]) : "l"(p), "l"(pol));
  } else if constexpr (kBytes == 8) {
    unsigned* w = reinterpret_cast<unsigned*>(&r);
    asm volatile("ld.global.L2::cache_hint.v2.u32 {%0,%1}, [%2], %3;"
                 : "=r"(w[0]), "=r"(w[1]) : "l"(p), "l"(pol));
  } else if constexpr (kBytes == 4) {
    unsigned* w = reinterpret_cast<unsigned*>(&r);
    asm volatile("ld.global.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(w[0]) : "l"(p), "l"(pol));
  } else {
    unsigned short* h = reinterpret_cast<unsigned short*>(&r);
    asm volatile("ld.global.L2::cache_hint.u16 %0, [%1], %2;" : "=h"(h[0]) : "l"(p), "l"(pol));
  }
  return r;
#else
  return load_vec<N>(p);
#endif
}

// ---------------------------------------------------------------------------------------------
// Fast math (no libm/ocml calls)
// ---------------------------------------------------------------------------------------------
KTUNE_DEVICE float exp_fast(float x) {
#if KTUNE_AMD
  // llvm.exp2.f32 is native on AMDGPU (v_exp_f32), so no device-library call.
  return __builtin_exp2f(x * 1.4426950408889634f);
#else
  return __expf(x);
#endif
}
KTUNE_DEVICE float rsqrt(float x) {
#if KTUNE_AMD
  return __builtin_amdgcn_rsqf(x);
#else
  return rsqrtf(x);
#endif
}
KTUNE_DEVICE float fast_div(float a, float b) {
#if KTUNE_AMD
  return a * __builtin_amdgcn_rcpf(b);
#else
  return __fdividef(a, b);
#endif
}
KTUNE_DEVICE float silu(float x) { return fast_div(x, 1.0f + exp_fast(-x)); }

// ---------------------------------------------------------------------------------------------
// Asynchronous global->shared copies. NVIDIA sm_80+: cp.async (16 bytes, bypassing L1). Elsewhere
// a plain 16-byte copy so one kernel source still works (commit/wait become no-ops).
// ---------------------------------------------------------------------------------------------
KTUNE_DEVICE void cp_async16(void* smem, const void* gmem) {
#if KTUNE_HAS_CP_ASYNC
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
#else
  *reinterpret_cast<Vec<unsigned, 4>*>(smem) = *reinterpret_cast<const Vec<unsigned, 4>*>(gmem);
#endif
}
KTUNE_DEVICE void cp_async_commit() {
#if KTUNE_HAS_CP_ASYNC
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// Waits until at most N committed groups are still in flight.
template <int N>
KTUNE_DEVICE void cp_async_wait() {
#if KTUNE_HAS_CP_ASYNC
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// ---------------------------------------------------------------------------------------------
// Programmatic dependent launch (NVIDIA sm_90+). A kernel whose family declares that it waits
// (programmatic_wait) may be launched by the tuned op while the previous kernel on the stream is
// still running; KTUNE_PDL_WAIT() then blocks until that kernel has finished and its writes are
// visible. So nothing before the wait may read an input or write an output (a preceding kernel
// may still write the one or read the other); setup from kernel arguments and shared memory only.
// KTUNE_PDL_LAUNCH_DEPENDENTS() lets the next such kernel's blocks be scheduled before this one
// ends (without it, they start when this grid exits). Both are no-ops below sm_90, on AMD, and
// when the kernel was launched without the attribute (griddepcontrol.wait then returns at once).
// ---------------------------------------------------------------------------------------------
#if KTUNE_NVIDIA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define KTUNE_PDL_WAIT() asm volatile("griddepcontrol.wait;\n" ::: "memory")
#define KTUNE_PDL_LAUNCH_DEPENDENTS() asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory")
#else
#define KTUNE_PDL_WAIT() ((void)0)
#define KTUNE_PDL_LAUNCH_DEPENDENTS() ((void)0)
#endif

// Matrix-core helpers (NVIDIA wgmma, AMD MFMA): prelude_mma.cuh, part of this file.
#include "prelude_mma.cuh"

}  // namespace ktune
