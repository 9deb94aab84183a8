// ktune runtime — launch-configuration checks shared by the GPU backends (internal header).
//
// The CUDA and HIP backends validate a launch against the device's limits *before* calling the
// driver, so a bad config comes back as kInvalidArgument / kOutOfResources naming the limit instead
// of an opaque driver error. The check is on the launch hot path: the success path is a handful of
// integer compares, no allocation and no string building; only a failure formats a message.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "runtime/backend.h"

namespace ktune {

// Per-device launch limits, read from the device (cuDeviceGetAttribute / hipDeviceGetAttribute).
struct LaunchLimits {
  unsigned max_block[3] = {0, 0, 0};
  unsigned max_grid[3] = {0, 0, 0};
  unsigned max_threads_per_block = 0;
  uint64_t max_dynamic_shared = 0;  // opt-in per-block limit (NVIDIA) / LDS per workgroup (AMD)
};

// Builds the failure Status for checkLaunch (cold path, out of line).
Status launchConfigError(Dim3 grid, Dim3 block, size_t dynamic_shared, const LaunchLimits& lim);

// OK when every grid/block dimension is in [1, limit], the block's thread count is within the
// device limit and dynamic_shared does not exceed the per-block maximum. Otherwise
// kInvalidArgument (dims) or kOutOfResources (shared memory) with a message naming the limit.
// Thread-safe (pure).
inline Status checkLaunch(Dim3 grid, Dim3 block, size_t dynamic_shared, const LaunchLimits& lim) {
  // d - 1 wraps to UINT_MAX for d == 0, so one compare per dimension catches 0 and > limit.
  bool bad = grid.x - 1u >= lim.max_grid[0] || grid.y - 1u >= lim.max_grid[1] ||
             grid.z - 1u >= lim.max_grid[2] || block.x - 1u >= lim.max_block[0] ||
             block.y - 1u >= lim.max_block[1] || block.z - 1u >= lim.max_block[2] ||
             uint64_t{block.x} * block.y * block.z > lim.max_threads_per_block ||
             dynamic_shared > lim.max_dynamic_shared;
  if (__builtin_expect(bad, 0)) return launchConfigError(grid, block, dynamic_shared, lim);
  return Status();
}

}  // namespace ktune
