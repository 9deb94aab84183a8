// ktune SiLU·Mul (the gated MLP activation), one source for NVRTC, hiprtc and clang.
//
//   out[r, j] = silu(x[r, j]) * x[r, d + j]      x: [rows, 2d] (row stride x_stride),
//                                                out: [rows, d] (row stride out_stride)
// vLLM's silu_and_mul convention: the gate is the first half of each row. Computed in fp32,
// rounded once to DTYPE.
//
// Entry (fixed, extern "C"):
//   ktune_silu_mul(T* out, const T* x, long long rows, long long d, long long x_stride,
//                  long long out_stride)
//
// Config (-D defines, produced by templates/rowwise.cc siluMulDefines):
//   DTYPE          0 fp32, 1 fp16, 2 bf16
//   VEC            elements per vector access (VEC * sizeof(T) <= 16)
//   THREADS        threads per block (1-D)
//   UNROLL         vectors per thread per row: a block covers THREADS*VEC*UNROLL columns
//   ROWS_PER_BLOCK rows a block handles per step; all their loads are issued before any math
//   LOAD_HINT      optional: 1 loads x with ktune::load_vec_once (its lines evicted from the L2
//                  first, so the output's stay), 0 or undefined plain loads
// Grid: x = ceil(ceil(d / VEC) / (THREADS*UNROLL)) column chunks (so some thread owns the
// partial vector at nv = d / VEC), y = row groups (a grid-stride loop covers more rows than grid.y).
// Any d works: a row whose three pointers (gate, up, out) are not all VEC-aligned takes the
// scalar path, and the d % VEC tail of an aligned row is done with scalar accesses.
#include "prelude.cuh"

#if !defined(DTYPE) || !defined(VEC) || !defined(THREADS) || !defined(UNROLL) || \
    !defined(ROWS_PER_BLOCK)
#error "silu_mul.cuh: define DTYPE, VEC, THREADS, UNROLL and ROWS_PER_BLOCK (see templates/rowwise.h)"
#endif

namespace ktune_rw {

KTUNE_ELEMENT_TYPE(T, ld, st, DTYPE)

constexpr int kVec = VEC;
constexpr int kThreads = THREADS;
constexpr int kUnroll = UNROLL;
constexpr int kRows = ROWS_PER_BLOCK;
#ifdef LOAD_HINT
constexpr int kLoadHint = LOAD_HINT;
#else
constexpr int kLoadHint = 0;
#endif

template <int N, class E>
KTUNE_DEVICE ktune::Vec<E, N> load_x(const E* p) {
  if constexpr (kLoadHint == 1) return ktune::load_vec_once<N>(p);
  else return ktune::load_vec<N>(p);
}
static_assert(kVec >= 1 && (kVec & (kVec - 1)) == 0, "silu_mul: VEC must be a power of two");
static_assert(kVec * sizeof(T) <= 16, "silu_mul: VEC * sizeof(DTYPE) must be <= 16 bytes");
static_assert(kThreads % KTUNE_WARP_SIZE == 0, "silu_mul: THREADS must be a multiple of the warp size");
static_assert(kUnroll >= 1 && kRows >= 1, "silu_mul: UNROLL and ROWS_PER_BLOCK must be >= 1");

KTUNE_DEVICE float act_mul(float g, float u) { return ktune::silu(g) * u; }

}  // namespace ktune_rw

KTUNE_KERNEL KTUNE_LAUNCH_BOUNDS(THREADS, 0) void ktune_silu_mul(
    ktune_rw::T* out, const ktune_rw::T* x, long long rows, long long d, long long x_stride,
    long long out_stride) {
  using namespace ktune_rw;
  KTUNE_PDL_WAIT();  // prelude.cuh: nothing above reads an input or writes an output
  KTUNE_PDL_LAUNCH_DEPENDENTS();
  typedef ktune::Vec<T, kVec> V;
  const int tx = (int)ktune::tid_x();
  const long long nv = d / kVec;  // whole vectors per row
  const long long chunk_vec = (long long)ktune::bid_x() * (kThreads * kUnroll);
  const unsigned long long align = kVec * sizeof(T);
  for (long long r0 = (long long)ktune::bid_y() * kRows; r0 < rows;
       r0 += (long long)ktune::gdim_y() * kRows) {
    // Fast path only when every row of this step is aligned and complete, so all loads of the
    // step can be issued before the first use.
    bool fast = r0 + kRows <= rows;
#pragma unroll
    for (int q = 0; q < kRows; ++q) {
      const long long rr = fast ? r0 + q : r0;
      unsigned long long bits = (unsigned long long)(x + rr * x_stride) |
                                (unsigned long long)(x + rr * x_stride + d) |
                                (unsigned long long)(out + rr * out_stride);
      fast = fast && (bits & (align - 1)) == 0;
    }
    if (fast) {
      V g[kRows][kUnroll], u[kRows][kUnroll];
#pragma unroll
      for (int q = 0; q < kRows; ++q) {
        const T* xr = x + (r0 + q) * x_stride;
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
          const long long i = chunk_vec + k * kThreads + tx;
          if (i < nv) {
            g[q][k] = load_x<kVec>(xr + i * kVec);
            u[q][k] = load_x<kVec>(xr + d + i * kVec);
          }
        }
      }
#pragma unroll
      for (int q = 0; q < kRows; ++q) {
        T* orow = out + (r0 + q) * out_stride;
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
          const long long i = chunk_vec + k * kThreads + tx;
          if (i < nv) {
            V o;
#pragma unroll
            for (int e = 0; e < kVec; ++e) o.v[e] = st(act_mul(ld(g[q][k].v[e]), ld(u[q][k].v[e])));
            ktune::store_vec<kVec>(orow + i * kVec, o);
          } else if (kVec > 1 && i == nv) {
            // d % VEC tail, owned by the thread whose next vector would start there.
            const T* xr = x + (r0 + q) * x_stride;
            for (long long j = nv * kVec; j < d; ++j) orow[j] = st(act_mul(ld(xr[j]), ld(xr[d + j])));
          }
        }
      }
    } else {
      // Scalar path (misaligned rows or the last partial row group): the block's column chunk,
      // element by element.
      const long long c0 = chunk_vec * kVec;
      // grid.x covers ceil(d / VEC) vectors, so the chunks tile [0, d) including the tail.
      long long c1 = c0 + (long long)kThreads * kUnroll * kVec;
      if (c1 > d) c1 = d;
      for (int q = 0; q < kRows; ++q) {
        const long long row = r0 + q;
        if (row >= rows) break;
        const T* xr = x + row * x_stride;
        T* orow = out + row * out_stride;
#pragma unroll 1
        for (long long j = c0 + tx; j < c1; j += kThreads) orow[j] = st(act_mul(ld(xr[j]), ld(xr[d + j])));
      }
    }
  }
}
