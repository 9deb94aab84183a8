// ktune copy: a plain 16-byte vectorized device copy, the copy-bandwidth peer for the row-wise
// kernels (bytes moved = 2 * n: n read + n written). One source for NVRTC, hiprtc and clang.
//
// Entry (fixed, extern "C"):
//   ktune_copy(unsigned char* dst, const unsigned char* src, long long n_bytes)
// Config: THREADS (block size), UNROLL (16-byte vectors per thread per step, all loads issued
// before the stores). Grid-stride loop; any grid size is correct. When dst or src is not
// 16-byte aligned the whole copy is done byte by byte (correct, slow; the peer is always called
// with allocator-aligned buffers).
#include "prelude.cuh"

#if !defined(THREADS) || !defined(UNROLL)
#error "copy.cuh: define THREADS and UNROLL (see templates/rowwise.h)"
#endif

KTUNE_KERNEL KTUNE_LAUNCH_BOUNDS(THREADS, 0) void ktune_copy(unsigned char* dst,
                                                            const unsigned char* src,
                                                            long long n_bytes) {
  typedef ktune::Vec<unsigned, 4> V;
  constexpr int kThreads = THREADS;
  constexpr int kUnroll = UNROLL;
  const long long tid = (long long)ktune::bid_x() * kThreads + ktune::tid_x();
  const long long nthreads = (long long)ktune::gdim_x() * kThreads;
  if ((((unsigned long long)dst | (unsigned long long)src) & 15ull) != 0) {
    for (long long i = tid; i < n_bytes; i += nthreads) dst[i] = src[i];
    return;
  }
  const long long nv = n_bytes / 16;
  const V* s = reinterpret_cast<const V*>(src);
  V* o = reinterpret_cast<V*>(dst);
  // Each step a block moves THREADS*UNROLL vectors, coalesced: vector k of thread t is at
  // base + k*THREADS + t.
  const long long step = nthreads * kUnroll;
  long long base = (long long)ktune::bid_x() * kThreads * kUnroll + ktune::tid_x();
  for (; base + (long long)(kUnroll - 1) * kThreads < nv; base += step) {
    V v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) v[k] = s[base + (long long)k * kThreads];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) o[base + (long long)k * kThreads] = v[k];
  }
  // Partial last step.
#pragma unroll
  for (int k = 0; k < kUnroll; ++k) {
    const long long i = base + (long long)k * kThreads;
    if (i < nv) o[i] = s[i];
  }
  // Bytes past the last whole vector.
  for (long long i = nv * 16 + tid; i < n_bytes; i += nthreads) dst[i] = src[i];
}
