// The documented fillRandom sequence (ops/buffers.h) drawn one element after the other on the
// host: the reference the host fill's chunked threads (buffers_test) and the device fill
// (device_fill_gpu_test) are compared with, bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "base/dtype.h"

namespace ktune {

inline std::vector<unsigned char> serialFillReference(DType t, int64_t count, uint64_t seed,
                                                      double lo, double hi) {
  std::vector<unsigned char> out(static_cast<size_t>(count) * sizeOf(t));
  uint64_t state = seed;
  for (int64_t i = 0; i < count; ++i) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    storeFromDouble(out.data(), t, i, lo + (hi - lo) * (static_cast<double>(z >> 11) * 0x1p-53));
  }
  return out;
}

}  // namespace ktune
