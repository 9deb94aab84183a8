#include "autotune/ops/buffers.h"

#include <algorithm>

namespace ktune {

namespace {
// Deterministic generator (splitmix64), unlike std::uniform_real_distribution, whose output is
// implementation-defined.
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

Status fillRandom(Backend& b, DevicePtr dst, DType t, int64_t count, uint64_t seed, double lo,
                  double hi) {
  constexpr int64_t kChunk = int64_t(1) << 20;
  const size_t es = sizeOf(t);
  std::vector<unsigned char> host(static_cast<size_t>(std::min(count, kChunk)) * es);
  uint64_t state = seed;
  for (int64_t off = 0; off < count; off += kChunk) {
    const int64_t n = std::min(kChunk, count - off);
    for (int64_t i = 0; i < n; ++i) {
      const double u = static_cast<double>(splitmix64(state) >> 11) * 0x1p-53;  // [0, 1)
      storeFromDouble(host.data(), t, i, lo + (hi - lo) * u);
    }
    KTUNE_RETURN_IF_ERROR(b.copyToDevice(dst + static_cast<DevicePtr>(off) * es, host.data(),
                                         static_cast<size_t>(n) * es));
  }
  return Status::Ok();
}

DeviceBuffers::~DeviceBuffers() {
  for (DevicePtr p : ptrs_) (void)b_->free(p);
}

Expected<DevicePtr> DeviceBuffers::alloc(size_t bytes) {
  KTUNE_ASSIGN_OR_RETURN(DevicePtr p, b_->alloc(bytes));
  ptrs_.push_back(p);
  return p;
}

Expected<DevicePtr> DeviceBuffers::random(DType t, int64_t count, uint64_t seed) {
  KTUNE_ASSIGN_OR_RETURN(DevicePtr p, alloc(static_cast<size_t>(count) * sizeOf(t)));
  KTUNE_RETURN_IF_ERROR(fillRandom(*b_, p, t, count, seed));
  return p;
}

}  // namespace ktune
