// ktune verify_compare: the per-element rule of a comparison with a trusted output, shared by the
// host verifier (autotune/verifier.cc includes this file) and the device comparison kernel
// (autotune/device_compare.cc compiles this file's text with KTUNE_VERIFY_DEVICE defined), so the
// two cannot drift.
//
// Rule (autotune/verifier.h): out o against trusted e, both as doubles. Both finite: a mismatch when
// |o - e| > atol + rtol * |e|; the absolute error counts toward the maximum, the relative one
// |o - e| / |e| only where |e| > atol. e NaN: a mismatch unless o is NaN. o NaN or infinite where e
// is finite: a mismatch counted in `nans`. e infinite: a mismatch unless o == e. The first mismatch
// is the lowest index. Counts add up and maxima combine in any order: a partition of the elements
// over threads, merged, gives exactly what one pass gives.
//
// Device entry (extern "C"), config THREADS (block size):
//   ktune_verify_compare(const void* out, const void* ref, long long rows, long long cols,
//                        long long ld, int kind, double atol, double rtol,
//                        unsigned long long* result)
// compares the [rows x cols] matrices at out and ref (row stride ld elements; element index
// row * cols + col) of element kind 0 f32, 1 f16, 2 bf16, 3 f64, and merges into result[0..4]:
// mismatches (add), nans (add), max abs error's bits (max), max rel error's bits (max), first
// mismatch index (min; ~0 for none). The caller zeroes result[0..3] and sets result[4] to ~0.
// Non-negative doubles order as their bits, so the maxima merge by an integer max.
#ifndef KTUNE_VERIFY_COMPARE_CUH
#define KTUNE_VERIFY_COMPARE_CUH

#ifdef KTUNE_VERIFY_DEVICE
#include "prelude.cuh"
#define KTUNE_VR_FN __device__ __forceinline__
#define KTUNE_VR_DBITS(x) ((unsigned long long)__double_as_longlong(x))
#define KTUNE_VR_BITSD(u) __longlong_as_double((long long)(u))
#define KTUNE_VR_BITSF(u) __uint_as_float(u)
#define KTUNE_VR_MUL(a, b) __dmul_rn(a, b)
#define KTUNE_VR_ADD(a, b) __dadd_rn(a, b)
#else
#include <cstring>
#define KTUNE_VR_FN inline
namespace ktune::verify_rule {
inline unsigned long long dbits(double x) {
  unsigned long long u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
inline double bitsd(unsigned long long u) {
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
inline float bitsf(unsigned u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
}  // namespace ktune::verify_rule
#define KTUNE_VR_DBITS(x) ::ktune::verify_rule::dbits(x)
#define KTUNE_VR_BITSD(u) ::ktune::verify_rule::bitsd(u)
#define KTUNE_VR_BITSF(u) ::ktune::verify_rule::bitsf(u)
#define KTUNE_VR_MUL(a, b) ((a) * (b))
#define KTUNE_VR_ADD(a, b) ((a) + (b))
#endif

namespace ktune {
namespace verify_rule {

// What a pass over elements gathers (one thread's part on the device).
struct Acc {
  long long mismatches;
  long long nans;
  double max_abs;
  double max_rel;
  long long first_bad;  // -1: none
  double first_out, first_ref;
};

KTUNE_VR_FN void init(Acc& a) {
  a.mismatches = 0;
  a.nans = 0;
  a.max_abs = 0;
  a.max_rel = 0;
  a.first_bad = -1;
  a.first_out = 0;
  a.first_ref = 0;
}

KTUNE_VR_FN bool isNan(double x) {
  return (KTUNE_VR_DBITS(x) & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
}
KTUNE_VR_FN bool isFinite(double x) {
  return (KTUNE_VR_DBITS(x) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}
KTUNE_VR_FN double absOf(double x) { return KTUNE_VR_BITSD(KTUNE_VR_DBITS(x) & 0x7fffffffffffffffull); }

// Element i: out o against trusted e.
KTUNE_VR_FN void element(Acc& r, double o, double e, double atol, double rtol, long long i) {
  bool bad = false;
  if (isFinite(e) && isFinite(o)) {
    const double ae = absOf(e), abs_err = absOf(o - e);
    if (abs_err > r.max_abs) r.max_abs = abs_err;
    // The division only where the relative error can be a new maximum (the product test is a
    // superset of it: the quotient decides).
    if (ae > atol && abs_err >= KTUNE_VR_MUL(KTUNE_VR_MUL(r.max_rel, ae), 1 - 1e-9)) {
      const double rel_err = abs_err / (ae > 1e-30 ? ae : 1e-30);
      if (rel_err > r.max_rel) r.max_rel = rel_err;
    }
    bad = abs_err > KTUNE_VR_ADD(atol, KTUNE_VR_MUL(rtol, ae));  // rounded each, no fused form
  } else if (isNan(e)) {
    bad = !isNan(o);
  } else if (isFinite(e)) {  // o is NaN or infinite here
    bad = true;
    ++r.nans;
  } else {  // e is infinite, o finite
    bad = o != e;
  }
  if (bad) {
    if (r.first_bad < 0) {
      r.first_bad = i;
      r.first_out = o;
      r.first_ref = e;
    }
    ++r.mismatches;
  }
}

// `b` (a later part of the elements than `a`'s, or any part: the first mismatch is the lowest
// index) merged into `a`.
KTUNE_VR_FN void merge(Acc& a, const Acc& b) {
  a.mismatches += b.mismatches;
  a.nans += b.nans;
  if (b.max_abs > a.max_abs) a.max_abs = b.max_abs;
  if (b.max_rel > a.max_rel) a.max_rel = b.max_rel;
  if (b.first_bad >= 0 && (a.first_bad < 0 || b.first_bad < a.first_bad)) {
    a.first_bad = b.first_bad;
    a.first_out = b.first_out;
    a.first_ref = b.first_ref;
  }
}

// The storage formats' values (exact in float).
KTUNE_VR_FN float bf16Value(unsigned short h) { return KTUNE_VR_BITSF((unsigned)h << 16); }
KTUNE_VR_FN float halfValue(unsigned short h) {
  const unsigned sign = ((unsigned)h & 0x8000u) << 16, e = ((unsigned)h >> 10) & 0x1fu,
                 m = (unsigned)h & 0x3ffu;
  if (e == 0x1fu) return KTUNE_VR_BITSF(sign | 0x7f800000u | (m << 13));
  if (e == 0) {  // zero or subnormal: m x 2^-24, exact
    const float v = (float)m * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return KTUNE_VR_BITSF(sign | ((e + 112u) << 23) | (m << 13));
}

// Element i of a buffer of kind kKind as a double.
template <int kKind>
KTUNE_VR_FN double load(const void* p, long long i) {
  if (kKind == 0) return (double)((const float*)p)[i];
  if (kKind == 1) return (double)halfValue(((const unsigned short*)p)[i]);
  if (kKind == 2) return (double)bf16Value(((const unsigned short*)p)[i]);
  return ((const double*)p)[i];
}

// Thread `thread` of `threads` in block `block` of `blocks`: its part of the [rows x cols]
// comparison (contiguous: a grid-stride loop over one index space; padded: rows by block, columns
// by thread), gathered into `a`. The kernel runs it once per thread; a host test runs every
// thread's part and merges them.
template <int kKind>
KTUNE_VR_FN void pass(Acc& a, const void* out, const void* ref, long long rows, long long cols,
                      long long ld, double atol, double rtol, long long block, long long blocks,
                      long long thread, long long threads) {
  if (ld == cols) {
    const long long n = rows * cols, step = blocks * threads;
    for (long long i = block * threads + thread; i < n; i += step)
      element(a, load<kKind>(out, i), load<kKind>(ref, i), atol, rtol, i);
    return;
  }
  for (long long r = block; r < rows; r += blocks)
    for (long long c = thread; c < cols; c += threads)
      element(a, load<kKind>(out, r * ld + c), load<kKind>(ref, r * ld + c), atol, rtol,
              r * cols + c);
}

}  // namespace verify_rule
}  // namespace ktune

#ifdef KTUNE_VERIFY_DEVICE
namespace ktune {
namespace verify_rule {

__device__ void reduceWarp(unsigned long long* v) {
  for (int m = 16; m > 0; m >>= 1) {
    const unsigned long long o0 = __shfl_xor_sync(0xffffffffu, v[0], m);
    const unsigned long long o1 = __shfl_xor_sync(0xffffffffu, v[1], m);
    const unsigned long long o2 = __shfl_xor_sync(0xffffffffu, v[2], m);
    const unsigned long long o3 = __shfl_xor_sync(0xffffffffu, v[3], m);
    const unsigned long long o4 = __shfl_xor_sync(0xffffffffu, v[4], m);
    v[0] += o0;
    v[1] += o1;
    v[2] = v[2] > o2 ? v[2] : o2;
    v[3] = v[3] > o3 ? v[3] : o3;
    v[4] = v[4] < o4 ? v[4] : o4;
  }
}

}  // namespace verify_rule
}  // namespace ktune

KTUNE_KERNEL KTUNE_LAUNCH_BOUNDS(THREADS, 0) void ktune_verify_compare(
    const void* out, const void* ref, long long rows, long long cols, long long ld, int kind,
    double atol, double rtol, unsigned long long* result) {
  using namespace ktune::verify_rule;
  Acc a;
  init(a);
  const long long b = ktune::bid_x(), nb = ktune::gdim_x(), t = ktune::tid_x();
  if (kind == 0) pass<0>(a, out, ref, rows, cols, ld, atol, rtol, b, nb, t, THREADS);
  else if (kind == 1) pass<1>(a, out, ref, rows, cols, ld, atol, rtol, b, nb, t, THREADS);
  else if (kind == 2) pass<2>(a, out, ref, rows, cols, ld, atol, rtol, b, nb, t, THREADS);
  else pass<3>(a, out, ref, rows, cols, ld, atol, rtol, b, nb, t, THREADS);
  unsigned long long v[5] = {(unsigned long long)a.mismatches, (unsigned long long)a.nans,
                             KTUNE_VR_DBITS(a.max_abs), KTUNE_VR_DBITS(a.max_rel),
                             (unsigned long long)a.first_bad};  // -1 -> ~0: none
  reduceWarp(v);
  __shared__ unsigned long long part[THREADS / 32][5];
  const int warp = ktune::tid_x() / 32, lane = ktune::tid_x() % 32;
  if (lane == 0)
    for (int j = 0; j < 5; ++j) part[warp][j] = v[j];
  __syncthreads();
  if (ktune::tid_x() != 0) return;
  for (int w = 1; w < THREADS / 32; ++w) {
    v[0] += part[w][0];
    v[1] += part[w][1];
    v[2] = v[2] > part[w][2] ? v[2] : part[w][2];
    v[3] = v[3] > part[w][3] ? v[3] : part[w][3];
    v[4] = v[4] < part[w][4] ? v[4] : part[w][4];
  }
  if (v[0]) atomicAdd(&result[0], v[0]);
  if (v[1]) atomicAdd(&result[1], v[1]);
  if (v[2]) atomicMax(&result[2], v[2]);
  if (v[3]) atomicMax(&result[3], v[3]);
  if (v[4] != ~0ull) atomicMin(&result[4], v[4]);
}
#endif  // KTUNE_VERIFY_DEVICE

#endif  // KTUNE_VERIFY_COMPARE_CUH
