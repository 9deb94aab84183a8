#include "ops/buffers.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "autotune/compile_pool.h"
#include "ops/device_fill.h"

namespace ktune {

namespace {
// Deterministic generator (splitmix64), unlike std::uniform_real_distribution, whose output is
// implementation-defined.
constexpr uint64_t kSplitmixIncrement = 0x9e3779b97f4a7c15ull;
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += kSplitmixIncrement);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
// One chunk of the sequence: element i gets lo + span x u_i. The store is chosen once per chunk
// (an inlined conversion for the common dtypes) instead of storeFromDouble's switch per element:
// that call was most of the fill's time (a 4096-wide GEMM's three operands, ~50 M elements, are on
// every tuning run's critical path in the caller and again in the isolation worker). The values
// are storeFromDouble's, bit for bit (tests/unit/buffers_test.cc).
template <class Store>
void fillChunk(unsigned char* h, int64_t n, uint64_t state, double lo, double span, Store store) {
  for (int64_t i = 0; i < n; ++i) {
    const double u = static_cast<double>(splitmix64(state) >> 11) * 0x1p-53;  // [0, 1)
    store(h, i, lo + span * u);
  }
}

void fillChunk(unsigned char* h, DType t, int64_t n, uint64_t state, double lo, double span) {
  switch (t) {
    case DType::kBF16:
      return fillChunk(h, n, state, lo, span, [](unsigned char* b, int64_t i, double v) {
        const uint16_t x = floatToBf16(static_cast<float>(v));
        std::memcpy(b + 2 * i, &x, 2);
      });
    case DType::kF16:
      return fillChunk(h, n, state, lo, span, [](unsigned char* b, int64_t i, double v) {
        const uint16_t x = floatToHalf(static_cast<float>(v));
        std::memcpy(b + 2 * i, &x, 2);
      });
    case DType::kF32:
      return fillChunk(h, n, state, lo, span, [](unsigned char* b, int64_t i, double v) {
        const float x = static_cast<float>(v);
        std::memcpy(b + 4 * i, &x, 4);
      });
    default:
      return fillChunk(h, n, state, lo, span,
                       [t](unsigned char* b, int64_t i, double v) { storeFromDouble(b, t, i, v); });
  }
}

// What keepRandomFills keeps: per (dtype, seed, range), the largest fill made so far.
struct KeptFill {
  DType t;
  uint64_t seed;
  double lo, hi;
  int64_t count;
  DevicePtr p;
};
struct KeptFills {
  std::mutex mu;
  Backend* b = nullptr;
  std::vector<KeptFill> fills;
};
KeptFills& keptFills() {
  static KeptFills k;
  return k;
}

Status generate(Backend& b, DevicePtr dst, DType t, int64_t count, uint64_t seed, double lo,
                double hi);

// fillRandom through the kept fills (k.mu held): a copy when one covers `count`, else a fresh
// fill that then replaces the kept one (a failure to keep it only costs the next fill).
Status fillKept(KeptFills& k, DevicePtr dst, DType t, int64_t count, uint64_t seed, double lo,
                double hi) {
  Backend& b = *k.b;
  const size_t bytes = static_cast<size_t>(count) * sizeOf(t);
  for (auto it = k.fills.begin(); it != k.fills.end(); ++it) {
    if (it->t != t || it->seed != seed || it->lo != lo || it->hi != hi) continue;
    if (it->count >= count) {
      KTUNE_RETURN_IF_ERROR(b.copyDeviceToDevice(dst, it->p, bytes));
      return b.synchronize();
    }
    (void)b.free(it->p);
    k.fills.erase(it);
    break;
  }
  KTUNE_RETURN_IF_ERROR(generate(b, dst, t, count, seed, lo, hi));
  auto keep = b.alloc(bytes);
  if (!keep.ok()) return Status::Ok();
  if (!b.copyDeviceToDevice(*keep, dst, bytes).ok() || !b.synchronize().ok()) {
    (void)b.free(*keep);
    return Status::Ok();
  }
  k.fills.push_back({t, seed, lo, hi, count, *keep});
  return Status::Ok();
}

}  // namespace

void keepRandomFills(Backend* b) {
  KeptFills& k = keptFills();
  std::lock_guard<std::mutex> l(k.mu);
  if (k.b && k.b != b)
    for (const KeptFill& f : k.fills) (void)k.b->free(f.p);
  if (k.b != b) k.fills.clear();
  k.b = b;
}

size_t keptRandomFillBytes() {
  KeptFills& k = keptFills();
  std::lock_guard<std::mutex> l(k.mu);
  size_t n = 0;
  for (const KeptFill& f : k.fills) n += static_cast<size_t>(f.count) * sizeOf(f.t);
  return n;
}

Status fillRandom(Backend& b, DevicePtr dst, DType t, int64_t count, uint64_t seed, double lo,
                  double hi) {
  KeptFills& k = keptFills();
  {
    std::lock_guard<std::mutex> l(k.mu);
    if (k.b == &b && count > 0) return fillKept(k, dst, t, count, seed, lo, hi);
  }
  return generate(b, dst, t, count, seed, lo, hi);
}

namespace {

Status generate(Backend& b, DevicePtr dst, DType t, int64_t count, uint64_t seed, double lo,
                double hi) {
  // On the device when it can (ops/device_fill.h: the same values, bit for bit).
  if (Status st; deviceFillRandom(b, dst, t, count, seed, lo, hi - lo, &st)) return st;
  constexpr int64_t kChunk = int64_t(1) << 20;
  constexpr int kMaxThreads = 8;
  const size_t es = sizeOf(t);
  const int64_t chunks = (count + kChunk - 1) / kChunk;
  // A large operand (a GEMM's weights: hundreds of millions of elements) takes about a second on
  // one thread, on every key's critical path: the chunks are generated a few at a time on several
  // threads (element i draws from the state seed + i x the increment, so the values do not depend
  // on the thread count) and copied from this thread, whose device the copy goes to.
  const int threads = std::min(kMaxThreads, CompilePool::threadsFor(size_t(chunks), 0, false));
  std::vector<std::vector<unsigned char>> host(static_cast<size_t>(threads));
  for (int64_t first = 0; first < chunks; first += threads) {
    const int64_t here = std::min<int64_t>(threads, chunks - first);
    CompilePool::parallelFor(size_t(here), threads, [&](size_t j) {
      const int64_t off = (first + int64_t(j)) * kChunk, n = std::min(kChunk, count - off);
      std::vector<unsigned char>& h = host[j];
      h.resize(static_cast<size_t>(n) * es);
      fillChunk(h.data(), t, n, seed + uint64_t(off) * kSplitmixIncrement, lo, hi - lo);
    });
    for (int64_t j = 0; j < here; ++j) {
      const int64_t off = (first + j) * kChunk;
      KTUNE_RETURN_IF_ERROR(b.copyToDevice(dst + static_cast<DevicePtr>(off) * es,
                                           host[size_t(j)].data(), host[size_t(j)].size()));
    }
  }
  return Status::Ok();
}

}  // namespace

DeviceBuffers::~DeviceBuffers() {
  for (DevicePtr p : ptrs_) (void)b_->free(p);
}

Expected<DevicePtr> DeviceBuffers::alloc(size_t bytes) {
  KTUNE_ASSIGN_OR_RETURN(DevicePtr p, b_->alloc(bytes));
  ptrs_.push_back(p);
  return p;
}

Expected<bool> SplitKScratch::ensure(Backend& b, int64_t bytes, int64_t count,
                                     StreamHandle stream) {
  bool grew = false;
  if (bytes > workspace_bytes) {
    if (workspace) retired.push_back(workspace);
    workspace = 0;
    workspace_bytes = 0;
    KTUNE_ASSIGN_OR_RETURN(workspace, b.alloc(static_cast<size_t>(bytes)));
    workspace_bytes = bytes;
    KTUNE_RETURN_IF_ERROR(b.memset8(workspace, 0, static_cast<size_t>(bytes), stream));
    grew = true;
  }
  if (count > counter_count) {
    if (counters) retired.push_back(counters);
    counters = 0;
    counter_count = 0;
    KTUNE_ASSIGN_OR_RETURN(counters, b.alloc(static_cast<size_t>(count) * 4));
    counter_count = count;
    KTUNE_RETURN_IF_ERROR(b.memset32(counters, 0, static_cast<size_t>(count), stream));
    grew = true;
  }
  return grew;
}

void SplitKScratch::release(Backend& b) {
  if (workspace) (void)b.free(workspace);
  if (counters) (void)b.free(counters);
  for (DevicePtr p : retired) (void)b.free(p);
  retired.clear();
  workspace = counters = 0;
  workspace_bytes = counter_count = 0;
}

Expected<DevicePtr> DeviceBuffers::random(DType t, int64_t count, uint64_t seed) {
  KTUNE_ASSIGN_OR_RETURN(DevicePtr p, alloc(static_cast<size_t>(count) * sizeOf(t)));
  KTUNE_RETURN_IF_ERROR(fillRandom(*b_, p, t, count, seed));
  return p;
}

}  // namespace ktune
