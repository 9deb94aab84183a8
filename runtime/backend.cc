#include "runtime/backend.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "runtime/launch_check.h"

namespace ktune {

void KernelArgs::addBytes(const void* p, size_t size, size_t align) {
  if (align == 0) align = 1;  // addBytes(p, n, 0) from a caller means "no alignment"
  size_t off = (storage_used_ + align - 1) / align * align;
  if (storage_.size() < off + size) storage_.resize(std::max<size_t>(off + size, 256) * 2);
  if (size > 0) std::memcpy(storage_.data() + off, p, size);  // memcpy(dst, nullptr, 0) is UB
  offsets_.push_back(off);
  storage_used_ = off + size;
  ptrs_.clear();
}

void** KernelArgs::data() {
  if (ptrs_.size() != offsets_.size()) {
    ptrs_.resize(offsets_.size());
    for (size_t i = 0; i < offsets_.size(); ++i) ptrs_[i] = storage_.data() + offsets_[i];
  }
  return ptrs_.data();
}

// Formatted with snprintf: gcc 12's -O3 flags a false -Wrestrict in the inlined
// `"(" + std::to_string(...)` chain, and Release builds use -Werror.
static std::string dimString(Dim3 d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "(%u, %u, %u)", d.x, d.y, d.z);
  return buf;
}

Status launchConfigError(Dim3 grid, Dim3 block, size_t dynamic_shared, const LaunchLimits& lim) {
  const unsigned g[3] = {grid.x, grid.y, grid.z};
  const unsigned b[3] = {block.x, block.y, block.z};
  const char* axis[3] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    if (g[i] == 0 || g[i] > lim.max_grid[i]) {
      return Status::InvalidArgument("launch: grid " + dimString(grid) + " has " + axis[i] + " = " +
                                     std::to_string(g[i]) + "; each grid dimension must be in [1, " +
                                     std::to_string(lim.max_grid[i]) + "] on this device");
    }
  }
  for (int i = 0; i < 3; ++i) {
    if (b[i] == 0 || b[i] > lim.max_block[i]) {
      return Status::InvalidArgument("launch: block " + dimString(block) + " has " + axis[i] +
                                     " = " + std::to_string(b[i]) +
                                     "; each block dimension must be in [1, " +
                                     std::to_string(lim.max_block[i]) + "] on this device");
    }
  }
  uint64_t threads = uint64_t{block.x} * block.y * block.z;
  if (threads > lim.max_threads_per_block) {
    return Status::InvalidArgument("launch: block " + dimString(block) + " has " +
                                   std::to_string(threads) + " threads; the device allows " +
                                   std::to_string(lim.max_threads_per_block) + " per block");
  }
  if (dynamic_shared > lim.max_dynamic_shared) {
    return Status::OutOfResources("launch: " + std::to_string(dynamic_shared) +
                                  " bytes of dynamic shared memory requested; the device allows " +
                                  std::to_string(lim.max_dynamic_shared) + " per block");
  }
  return Status::Internal("launch: checkLaunch failed but no limit is exceeded (ktune bug)");
}

}  // namespace ktune
