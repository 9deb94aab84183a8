// Hostile input through the public APIs: degenerate kernel arguments and launch dims (runtime/).
// Every case must give a clear Status (what was wrong, what to do), never a crash, a torn file or
// a lost entry. Runs without a GPU.
// First: it sets the diagnostics every hostile test needs before any other include.
#include "tests/unit/hostile_fixture.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <functional>

#include "runtime/backend.h"
#include "runtime/launch_check.h"

namespace ktune {
namespace {

// ---- runtime -------------------------------------------------------------------------------

TEST(HostileRuntime, KernelArgsWithNoArgumentsAndEmptyBlobs) {
  KernelArgs a;
  EXPECT_EQ(a.count(), 0u);
  (void)a.data();  // nullptr or not: the driver accepts either for zero arguments
  a.addBytes(nullptr, 0, 0);  // an empty struct argument: no bytes, no alignment
  EXPECT_EQ(a.count(), 1u);
  ASSERT_NE(a.data(), nullptr);
  a.add(int32_t{7});
  int32_t v = 0;
  std::memcpy(&v, a.data()[1], sizeof v);
  EXPECT_EQ(v, 7);
  a.clear();
  EXPECT_EQ(a.count(), 0u);
}

TEST(HostileRuntime, ZeroAndOverflowingLaunchDimsAreRefusedBeforeTheDriver) {
  LaunchLimits lim;
  lim.max_block[0] = lim.max_block[1] = 1024;
  lim.max_block[2] = 64;
  lim.max_grid[0] = 2147483647u;
  lim.max_grid[1] = lim.max_grid[2] = 65535;
  lim.max_threads_per_block = 1024;
  lim.max_dynamic_shared = 232448;
  struct Case {
    Dim3 grid, block;
    size_t shared;
    Code code;
  };
  const Case cases[] = {
      {{0, 1, 1}, {128, 1, 1}, 0, Code::kInvalidArgument},
      {{1, 1, 1}, {0, 1, 1}, 0, Code::kInvalidArgument},
      {{1, 0, 1}, {1, 1, 1}, 0, Code::kInvalidArgument},
      {{1, 1, 1}, {1, 1, 0}, 0, Code::kInvalidArgument},
      {{UINT_MAX, 1, 1}, {1, 1, 1}, 0, Code::kInvalidArgument},
      // 1024^3 threads overflows 32 bits; the product must be computed wide.
      {{1, 1, 1}, {1024, 1024, 64}, 0, Code::kInvalidArgument},
      {{1, 1, 1}, {65536, 65536, 1}, 0, Code::kInvalidArgument},
      {{1, 1, 1}, {128, 1, 1}, SIZE_MAX, Code::kOutOfResources},
  };
  for (const auto& c : cases) {
    Status st = checkLaunch(c.grid, c.block, c.shared, lim);
    EXPECT_EQ(st.code(), c.code) << c.grid.x << "," << c.grid.y << " / " << c.block.x << ","
                                 << c.block.y << "," << c.block.z << ": " << st.toString();
    EXPECT_FALSE(st.message().empty());
  }
  // No driver here: the backends say so instead of crashing.
  auto cuda = openCudaBackend();
  if (!cuda.ok()) {
    EXPECT_EQ(cuda.status().code(), Code::kUnavailable);
    EXPECT_FALSE(cuda.status().message().empty());
  }
  EXPECT_FALSE(openBackend("no-such-backend").ok());
}

}  // namespace
}  // namespace ktune
