// fillRandom (autotune/ops/buffers.h): the values are those of one splitmix64 sequence drawn in
// element order, whatever the number of threads and chunks that generate them, so a problem
// rebuilt by another process (a worker, another machine with another core count) holds the same
// data.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "autotune/ops/buffers.h"
#include "base/dtype.h"
#include "runtime/sim/sim_backend.h"

namespace ktune {
namespace {

// The generator of the documented sequence, drawn one element after the other.
std::vector<unsigned char> serialReference(DType t, int64_t count, uint64_t seed, double lo,
                                           double hi) {
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

TEST(FillRandom, SameValuesAsOneSerialSequenceAcrossChunksAndThreads) {
  SimBackend sim;
  // More than one chunk (2^20 elements) per thread round, and a ragged last chunk.
  for (auto [t, count] : {std::pair{DType::kF32, (int64_t(9) << 20) + 17},
                          std::pair{DType::kBF16, int64_t(1000)}}) {
    SCOPED_TRACE(dtypeName(t));
    const size_t bytes = static_cast<size_t>(count) * sizeOf(t);
    auto p = sim.alloc(bytes);
    ASSERT_TRUE(p.ok()) << p.status().toString();
    ASSERT_TRUE(fillRandom(sim, *p, t, count, 42, -2.0, 3.0).ok());
    const auto want = serialReference(t, count, 42, -2.0, 3.0);
    EXPECT_EQ(std::memcmp(sim.hostPtr(*p), want.data(), bytes), 0);
    ASSERT_TRUE(sim.free(*p).ok());
  }
}

}  // namespace
}  // namespace ktune
