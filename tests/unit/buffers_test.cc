// fillRandom (ops/buffers.h): the values are those of one splitmix64 sequence drawn in
// element order, whatever the number of threads and chunks that generate them, so a problem
// rebuilt by another process (a worker, another machine with another core count) holds the same
// data.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "ops/buffers.h"
#include "base/dtype.h"
#include "runtime/sim/sim_backend.h"
#include "tests/unit/fill_reference.h"

namespace ktune {
namespace {

TEST(FillRandom, SameValuesAsOneSerialSequenceAcrossChunksAndThreads) {
  SimBackend sim;
  // More than one chunk (2^20 elements) per thread round, and a ragged last chunk.
  // Every dtype's store (the common ones have their own inlined loop), values bit for bit.
  for (auto [t, count] : {std::pair{DType::kF32, (int64_t(9) << 20) + 17},
                          std::pair{DType::kBF16, (int64_t(3) << 20) + 5},
                          std::pair{DType::kF16, int64_t(100000)},
                          std::pair{DType::kF8E4M3, int64_t(1000)},
                          std::pair{DType::kI8, int64_t(1000)}}) {
    SCOPED_TRACE(dtypeName(t));
    const size_t bytes = static_cast<size_t>(count) * sizeOf(t);
    auto p = sim.alloc(bytes);
    ASSERT_TRUE(p.ok()) << p.status().toString();
    ASSERT_TRUE(fillRandom(sim, *p, t, count, 42, -2.0, 3.0).ok());
    const auto want = serialFillReference(t, count, 42, -2.0, 3.0);
    EXPECT_EQ(std::memcmp(sim.hostPtr(*p), want.data(), bytes), 0);
    ASSERT_TRUE(sim.free(*p).ok());
  }
}

// `ktune tune gemm` with several keys fills each operand once at the largest count any key needs
// and hands every key a prefix of it (tools/cmd_tune.cc, SharedOperands): that is a key's own fill
// only because element i depends on the seed and i, never on the count.
TEST(FillRandom, APrefixOfALargerFillIsTheSmallerFill) {
  SimBackend sim;
  const int64_t small = (int64_t(1) << 20) + 3, large = (int64_t(5) << 20) + 11;
  auto a = sim.alloc(size_t(small) * 2);
  auto b = sim.alloc(size_t(large) * 2);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(fillRandom(sim, *a, DType::kBF16, small, 12).ok());
  ASSERT_TRUE(fillRandom(sim, *b, DType::kBF16, large, 12).ok());
  EXPECT_EQ(std::memcmp(sim.hostPtr(*a), sim.hostPtr(*b), size_t(small) * 2), 0);
  ASSERT_TRUE(sim.free(*a).ok());
  ASSERT_TRUE(sim.free(*b).ok());
}

// keepRandomFills (the isolation worker's and the regret harness's setting): a fill the kept one
// covers is a copy of its prefix, a larger one replaces it, and every fill holds the values of a
// fresh one; off again, nothing is kept.
TEST(FillRandom, KeptFillsGiveTheSameValues) {
  SimBackend sim;
  keepRandomFills(&sim);
  for (int64_t count : {int64_t(1) << 20, (int64_t(3) << 20) + 7, int64_t(2) << 20}) {
    SCOPED_TRACE(count);
    auto p = sim.alloc(size_t(count) * 2);
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE(fillRandom(sim, *p, DType::kBF16, count, 7).ok());
    const auto want = serialFillReference(DType::kBF16, count, 7, -1.0, 1.0);
    EXPECT_EQ(std::memcmp(sim.hostPtr(*p), want.data(), size_t(count) * 2), 0);
    ASSERT_TRUE(sim.free(*p).ok());
  }
  EXPECT_EQ(keptRandomFillBytes(), ((size_t(3) << 20) + 7) * 2);  // the largest, once
  keepRandomFills(nullptr);
  EXPECT_EQ(keptRandomFillBytes(), 0u);
}

// The GEMM split-K scratch: what it allocates is zeroed (the kernels count on zero workspace and
// counters), asking for no more keeps the buffers and their contents, asking for more of one
// reallocates that one only, and release frees both.
TEST(SplitKScratch, GrowsZeroedAndKeepsWhatItHas) {
  SimBackend sim;
  SplitKScratch s;
  auto grew = s.ensure(sim, 64, 4);
  ASSERT_TRUE(grew.ok()) << grew.status().toString();
  EXPECT_TRUE(*grew);
  ASSERT_NE(s.workspace, DevicePtr{0});
  ASSERT_NE(s.counters, DevicePtr{0});
  std::vector<unsigned char> w(64, 0xff);
  std::vector<uint32_t> c(4, 7);
  ASSERT_TRUE(sim.copyToHost(w.data(), s.workspace, w.size()).ok());
  ASSERT_TRUE(sim.copyToHost(c.data(), s.counters, c.size() * 4).ok());
  EXPECT_EQ(w, std::vector<unsigned char>(64, 0));
  EXPECT_EQ(c, std::vector<uint32_t>(4, 0));

  ASSERT_TRUE(sim.memset8(s.workspace, 1, 64).ok());
  const DevicePtr ws = s.workspace, cs = s.counters;
  grew = s.ensure(sim, 32, 2);
  ASSERT_TRUE(grew.ok());
  EXPECT_FALSE(*grew);
  EXPECT_EQ(s.workspace, ws);
  ASSERT_TRUE(sim.copyToHost(w.data(), s.workspace, w.size()).ok());
  EXPECT_EQ(w, std::vector<unsigned char>(64, 1)) << "a smaller request must not re-zero";

  grew = s.ensure(sim, 128, 4);
  ASSERT_TRUE(grew.ok());
  EXPECT_TRUE(*grew);
  EXPECT_EQ(s.workspace_bytes, 128);
  EXPECT_EQ(s.counters, cs) << "the counters were large enough";
  std::vector<unsigned char> w2(128, 0xff);
  ASSERT_TRUE(sim.copyToHost(w2.data(), s.workspace, w2.size()).ok());
  EXPECT_EQ(w2, std::vector<unsigned char>(128, 0));

  const DevicePtr last = s.workspace;
  s.release(sim);
  EXPECT_EQ(s.workspace, DevicePtr{0});
  EXPECT_EQ(s.counters, DevicePtr{0});
  EXPECT_FALSE(sim.free(last).ok()) << "release freed the workspace";
}

// A CUDA graph captured before the scratch grew still launches with the old addresses: growing
// must leave the outgrown buffers allocated (and as they were) until release(). Before, they were
// freed at once, and the replay of a decode step captured at batch 128 wrote freed memory once the
// prefill had grown the workspace (an illegal address in python/examples/llama.py's timing).
TEST(SplitKScratch, OutgrownBuffersStayAllocatedUntilRelease) {
  SimBackend sim;
  SplitKScratch s;
  ASSERT_TRUE(s.ensure(sim, 64, 4).ok());
  const DevicePtr ws = s.workspace, cs = s.counters;
  ASSERT_TRUE(s.ensure(sim, 4096, 64).ok());
  ASSERT_NE(s.workspace, ws);
  ASSERT_NE(s.counters, cs);
  std::vector<unsigned char> w(64, 0xff);
  std::vector<uint32_t> c(4, 7);
  EXPECT_TRUE(sim.copyToHost(w.data(), ws, w.size()).ok()) << "the old workspace was freed";
  EXPECT_TRUE(sim.copyToHost(c.data(), cs, c.size() * 4).ok()) << "the old counters were freed";
  EXPECT_EQ(w, std::vector<unsigned char>(64, 0));
  EXPECT_EQ(c, std::vector<uint32_t>(4, 0));
  s.release(sim);
  EXPECT_FALSE(sim.free(ws).ok()) << "release must free the outgrown workspace too";
  EXPECT_FALSE(sim.free(cs).ok()) << "release must free the outgrown counters too";
  EXPECT_TRUE(s.retired.empty());
}

}  // namespace
}  // namespace ktune
