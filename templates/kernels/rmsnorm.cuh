// ktune RMSNorm (optionally with fused residual add), one source for NVRTC, hiprtc and clang.
//
//   HAS_RESIDUAL: s = x + r (rounded to DTYPE) is written to r_out, then normalised (vLLM's
//                 fused_add_rms_norm semantics; r_out may alias r, y may alias x).
//   y = s / sqrt(mean(s^2) + eps) * w     (w only when HAS_WEIGHT), fp32 accumulation.
//
// Entry (fixed, extern "C"):
//   ktune_rmsnorm(T* y, const T* x, const T* w, const T* r, T* r_out,
//                 long long rows, long long cols, long long x_stride, long long y_stride,
//                 long long r_stride, long long ro_stride, float eps)
// strides in elements; w/r/r_out are ignored (may be null) when their feature is off.
//
// Config (-D defines, produced by templates/rowwise.cc rmsNormDefines):
//   DTYPE          0 fp32, 1 fp16, 2 bf16
//   VEC            elements per vector access (VEC * sizeof(T) <= 16)
//   THREADS        threads per row (multiple of the warp size); block = (THREADS, ROWS_PER_BLOCK)
//   ROWS_PER_BLOCK rows per block (each row owned by one y-slice of the block)
//   NITER          vectors per thread kept in registers; a row with at most THREADS*VEC*NITER
//                  elements is read once (one read of x, one write of y); 0 or a longer row
//                  takes the two-pass path (the second pass re-reads x, usually from L2)
//   OCC            0/1: occupancy floor for the register allocator (below)
//   HAS_WEIGHT, HAS_RESIDUAL  0/1
// Any column count works: a row whose pointers are not all VEC-aligned runs the scalar path,
// and the cols % VEC tail of an aligned row is done with scalar accesses.
#include "prelude.cuh"

#if !defined(DTYPE) || !defined(VEC) || !defined(THREADS) || !defined(ROWS_PER_BLOCK)
#error "rmsnorm.cuh: define DTYPE, VEC, THREADS and ROWS_PER_BLOCK (see templates/rowwise.h)"
#endif
#ifndef NITER
#define NITER 0
#endif
// OCC=1 hands the compiler an occupancy floor (a register cap): at least MIN_RESIDENT_THREADS
// threads resident per SM (NVIDIA: min blocks per SM = MIN_RESIDENT_THREADS / block threads;
// AMD CDNA: waves per EU = MIN_RESIDENT_THREADS / (wave size * 4 SIMDs per CU)). A row kernel
// needs loads in flight, i.e. resident warps, but a floor can force spills when a long row is
// kept in registers, so it is a tuning knob. OCC=0: no hint.
#ifndef OCC
#define OCC 0
#endif
#ifndef MIN_RESIDENT_THREADS
#define MIN_RESIDENT_THREADS 1024
#endif
#ifndef HAS_WEIGHT
#define HAS_WEIGHT 1
#endif
#ifndef HAS_RESIDUAL
#define HAS_RESIDUAL 0
#endif

namespace ktune_rw {

KTUNE_ELEMENT_TYPE(T, ld, st, DTYPE)

// Butterfly sum: every lane ends with the warp total.
KTUNE_DEVICE float warp_allreduce(float v) {
#pragma unroll
  for (int m = KTUNE_WARP_SIZE / 2; m > 0; m >>= 1) v += ktune::shfl_xor(v, m);
  return v;
}

constexpr int kVec = VEC;
constexpr int kThreads = THREADS;
constexpr int kRows = ROWS_PER_BLOCK;
constexpr int kIter = NITER;
constexpr int kWarps = kThreads / KTUNE_WARP_SIZE;
constexpr bool kWeight = HAS_WEIGHT != 0;
constexpr bool kResidual = HAS_RESIDUAL != 0;
static_assert(kThreads % KTUNE_WARP_SIZE == 0, "rmsnorm: THREADS must be a multiple of the warp size");
static_assert(kVec >= 1 && (kVec & (kVec - 1)) == 0, "rmsnorm: VEC must be a power of two");
static_assert(kVec * sizeof(T) <= 16, "rmsnorm: VEC * sizeof(DTYPE) must be <= 16 bytes");
static_assert(kIter >= 0 && kIter <= 32, "rmsnorm: NITER must be in [0, 32]");

struct Row {
  T* y;
  const T* x;
  const T* w;
  const T* r;
  T* ro;
};

// Sum over the THREADS threads of one row. Called exactly once per row iteration by every
// thread of the block (barriers inside). `red` is this row's slot of a parity-double-buffered
// array, so a fast thread writing the next iteration's partials cannot clobber values a slow
// thread is still reading.
KTUNE_DEVICE float row_sum(float v, float* red, int tx) {
  v = warp_allreduce(v);
  if (kWarps > 1) {
    if (tx % KTUNE_WARP_SIZE == 0) red[tx / KTUNE_WARP_SIZE] = v;
    ktune::sync_threads();
    v = 0.f;
#pragma unroll
    for (int i = 0; i < kWarps; ++i) v += red[i];
  }
  return v;
}

// s = x (+ r, rounded to T and stored to r_out) for W consecutive elements at column c.
template <int W>
KTUNE_DEVICE ktune::Vec<T, W> load_in(const Row& p, long long c) {
  typedef ktune::Vec<T, W> V;
  V a = *reinterpret_cast<const V*>(p.x + c);
  if (kResidual) {
    V b = *reinterpret_cast<const V*>(p.r + c);
#pragma unroll
    for (int e = 0; e < W; ++e) a.v[e] = st(ld(a.v[e]) + ld(b.v[e]));
    *reinterpret_cast<V*>(p.ro + c) = a;
  }
  return a;
}

template <int W>
KTUNE_DEVICE float sumsq(const ktune::Vec<T, W>& a) {
  float s = 0.f;
#pragma unroll
  for (int e = 0; e < W; ++e) {
    float f = ld(a.v[e]);
    s += f * f;
  }
  return s;
}

template <int W>
KTUNE_DEVICE void store_out(const Row& p, long long c, const ktune::Vec<T, W>& a,
                            const ktune::Vec<T, W>& w, float inv) {
  ktune::Vec<T, W> o;
#pragma unroll
  for (int e = 0; e < W; ++e) {
    float f = ld(a.v[e]) * inv;
    if (kWeight) f *= ld(w.v[e]);
    o.v[e] = st(f);
  }
  *reinterpret_cast<ktune::Vec<T, W>*>(p.y + c) = o;
}

template <int W>
KTUNE_DEVICE ktune::Vec<T, W> load_w(const Row& p, long long c) {
  ktune::Vec<T, W> w;
  if (kWeight) {
    w = *reinterpret_cast<const ktune::Vec<T, W>*>(p.w + c);
  } else {
#pragma unroll
    for (int e = 0; e < W; ++e) w.v[e] = st(1.f);
  }
  return w;
}

// Scalar tail: columns [from, cols) by thread 0 of the row.
KTUNE_DEVICE float tail_pass1(const Row& p, long long from, long long cols, int tx) {
  float s = 0.f;
  if (tx == 0) {
#pragma unroll 1
    for (long long c = from; c < cols; ++c) s += sumsq<1>(load_in<1>(p, c));
  }
  return s;
}

KTUNE_DEVICE void tail_pass2(const Row& p, long long from, long long cols, int tx, float inv) {
  if (tx == 0) {
#pragma unroll 1
    for (long long c = from; c < cols; ++c) {
      ktune::Vec<T, 1> a;
      a.v[0] = kResidual ? p.ro[c] : p.x[c];  // r_out was written by this thread in pass 1
      store_out<1>(p, c, a, load_w<1>(p, c), inv);
    }
  }
}

// Two passes over the row with W-wide accesses: sum of squares, then normalise (re-reading
// x, or r_out when the residual is fused; same thread -> element mapping in both passes).
template <int W>
KTUNE_DEVICE void two_pass(bool active, const Row& p, long long cols, float eps, float* red,
                           int tx) {
  const long long nv = cols / W;
  float ss = 0.f;
  if (active) {
#pragma unroll 1
    for (long long i = tx; i < nv; i += kThreads) ss += sumsq<W>(load_in<W>(p, i * W));
    if (W > 1) ss += tail_pass1(p, nv * W, cols, tx);
  }
  const float inv = ktune::rsqrt(row_sum(ss, red, tx) / (float)cols + eps);
  if (active) {
#pragma unroll 1
    for (long long i = tx; i < nv; i += kThreads) {
      ktune::Vec<T, W> a;
      if (kResidual) {
        a = *reinterpret_cast<const ktune::Vec<T, W>*>(p.ro + i * W);
      } else {
        a = *reinterpret_cast<const ktune::Vec<T, W>*>(p.x + i * W);
      }
      store_out<W>(p, i * W, a, load_w<W>(p, i * W), inv);
    }
    if (W > 1) tail_pass2(p, nv * W, cols, tx, inv);
  }
}

// Registers hold raw data as 32-bit words: a 16-bit element kept in its own register would
// double the register footprint (NVIDIA has no 16-bit registers), which caps occupancy or
// spills. Element e of a vector is half (e % kPerWord) of word (e / kPerWord).
constexpr int kBytes = kVec * (int)sizeof(T);
constexpr bool kPacked = kBytes >= 4;
constexpr int kPerWord = 4 / (int)sizeof(T);  // 1 (fp32) or 2 (fp16/bf16)
constexpr int kWords = kPacked ? kBytes / 4 : 1;
typedef ktune::Vec<unsigned, kWords> Words;

// Bit casts through pointers to locals (NVRTC has no __builtin_memcpy/__builtin_bit_cast);
// compilers turn these into register moves.
KTUNE_DEVICE float unpk(unsigned w, int half) {
  if (sizeof(T) == 4) {
    return *reinterpret_cast<const float*>(&w);
  } else {
    const unsigned short b = (unsigned short)(half ? (w >> 16) : (w & 0xffffu));
    return ld(*reinterpret_cast<const T*>(&b));
  }
}
KTUNE_DEVICE unsigned pk(float lo, float hi) {
  if (sizeof(T) == 4) {
    return *reinterpret_cast<const unsigned*>(&lo);
  } else {
    const T a = st(lo), b = st(hi);
    return (unsigned)*reinterpret_cast<const unsigned short*>(&a) |
           ((unsigned)*reinterpret_cast<const unsigned short*>(&b) << 16);
  }
}
KTUNE_DEVICE float wsumsq(const Words& a) {
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < kWords; ++j) {
#pragma unroll
    for (int h = 0; h < kPerWord; ++h) {
      const float f = unpk(a.v[j], h);
      s += f * f;
    }
  }
  return s;
}

// The row stays in registers: every input element is read once and y written once.
// Addresses are one base per pointer plus compile-time offsets (k * THREADS * VEC), so the
// unrolled loops cost no per-iteration 64-bit address registers.
KTUNE_DEVICE void cached(bool active, const Row& p, long long cols, float eps, float* red,
                         int tx) {
  constexpr int kStep = kThreads * kVec;
  constexpr int kN = kIter > 0 ? kIter : 1;
  const int nv = (int)(cols / kVec);  // cached only when nv <= NITER * THREADS
  const long long c0 = (long long)tx * kVec;
  Words xs[kN];
  Words ws[kN];
  float ss = 0.f;
  if (active) {
    // All loads first (x, r, w are independent), then the residual stores: a store to r_out
    // must not sit between loads the compiler could otherwise batch.
    Words rs[kN];
    const T* xb = p.x + c0;
    const T* rb = kResidual ? p.r + c0 : nullptr;
    const T* wb = p.w + c0;
#pragma unroll
    for (int k = 0; k < kIter; ++k) {
      if (tx + k * kThreads < nv) {
        xs[k] = *reinterpret_cast<const Words*>(xb + k * kStep);
        if (kResidual) rs[k] = *reinterpret_cast<const Words*>(rb + k * kStep);
        if (kWeight) ws[k] = *reinterpret_cast<const Words*>(wb + k * kStep);
      }
    }
    T* rob = kResidual ? p.ro + c0 : nullptr;
#pragma unroll
    for (int k = 0; k < kIter; ++k) {
      if (tx + k * kThreads < nv) {
        if (kResidual) {
#pragma unroll
          for (int j = 0; j < kWords; ++j) {
            const float lo = unpk(xs[k].v[j], 0) + unpk(rs[k].v[j], 0);
            const float hi = kPerWord == 2 ? unpk(xs[k].v[j], 1) + unpk(rs[k].v[j], 1) : 0.f;
            xs[k].v[j] = pk(lo, hi);
          }
          *reinterpret_cast<Words*>(rob + k * kStep) = xs[k];
        }
        ss += wsumsq(xs[k]);
      }
    }
    if (kVec > 1) ss += tail_pass1(p, (long long)nv * kVec, cols, tx);
  }
  const float inv = ktune::rsqrt(row_sum(ss, red, tx) / (float)cols + eps);
  if (active) {
    T* yb = p.y + c0;
#pragma unroll
    for (int k = 0; k < kIter; ++k) {
      if (tx + k * kThreads < nv) {
        Words o;
#pragma unroll
        for (int j = 0; j < kWords; ++j) {
          float lo = unpk(xs[k].v[j], 0) * inv;
          float hi = kPerWord == 2 ? unpk(xs[k].v[j], 1) * inv : 0.f;
          if (kWeight) {
            lo *= unpk(ws[k].v[j], 0);
            if (kPerWord == 2) hi *= unpk(ws[k].v[j], 1);
          }
          o.v[j] = pk(lo, hi);
        }
        *reinterpret_cast<Words*>(yb + k * kStep) = o;
      }
    }
    if (kVec > 1) tail_pass2(p, (long long)nv * kVec, cols, tx, inv);
  }
}

}  // namespace ktune_rw

#if !OCC
#define KTUNE_RW_OCC 0
#elif KTUNE_AMD
#define KTUNE_RW_OCC (MIN_RESIDENT_THREADS / (KTUNE_WARP_SIZE * 4))
#else
#define KTUNE_RW_OCC                                                       \
  ((MIN_RESIDENT_THREADS / (THREADS * ROWS_PER_BLOCK)) > 0                 \
       ? (MIN_RESIDENT_THREADS / (THREADS * ROWS_PER_BLOCK)) : 1)
#endif
KTUNE_KERNEL KTUNE_LAUNCH_BOUNDS(THREADS * ROWS_PER_BLOCK, KTUNE_RW_OCC) void ktune_rmsnorm(
    ktune_rw::T* y, const ktune_rw::T* x, const ktune_rw::T* w, const ktune_rw::T* r,
    ktune_rw::T* r_out, long long rows, long long cols, long long x_stride, long long y_stride,
    long long r_stride, long long ro_stride, float eps) {
  using namespace ktune_rw;
  KTUNE_PDL_WAIT();  // prelude.cuh: nothing above reads an input or writes an output
  KTUNE_PDL_LAUNCH_DEPENDENTS();
  __shared__ float red[2][kRows][kWarps];
  const int tx = (int)ktune::tid_x();
  const int ty = (int)ktune::tid_y();
  const unsigned long long align = kVec * sizeof(T);
  int parity = 0;
  for (long long base = (long long)ktune::bid_x() * kRows; base < rows;
       base += (long long)ktune::gdim_x() * kRows) {
    const long long row = base + ty;
    const bool active = row < rows;
    const long long rr = active ? row : 0;
    Row p;
    p.x = x + rr * x_stride;
    p.y = y + rr * y_stride;
    p.w = w;
    p.r = kResidual ? r + rr * r_stride : nullptr;
    p.ro = kResidual ? r_out + rr * ro_stride : nullptr;
    unsigned long long bits = (unsigned long long)p.x | (unsigned long long)p.y;
    if (kWeight) bits |= (unsigned long long)p.w;
    if (kResidual) bits |= (unsigned long long)p.r | (unsigned long long)p.ro;
    const bool aligned = (bits & (align - 1)) == 0;
    float* slot = &red[parity][ty][0];
    // Every branch below calls row_sum exactly once, so the block's barriers line up even when
    // its rows take different paths.
    if (!aligned) {
      two_pass<1>(active, p, cols, eps, slot, tx);
    } else if (kPacked && kIter > 0 && cols / kVec <= (long long)kIter * kThreads) {
      cached(active, p, cols, eps, slot, tx);
    } else {
      two_pass<kVec>(active, p, cols, eps, slot, tx);
    }
    parity ^= 1;
  }
}
