#include "runtime/backend.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "runtime/launch_check.h"

namespace ktune {

void KernelArgs::addBytes(const void* p, size_t size, size_t align) {
  if (align == 0) align = 1;  // addBytes(p, n, 0) from a caller means "no alignment"
  size_t off = (used_ + align - 1) / align * align;
  if (off + size > cap_ || n_ >= arg_cap_) grow(off + size, n_ + 1);  // offsets stay valid
  if (size > 0) std::memcpy(bytes_ + off, p, size);  // memcpy(dst, nullptr, 0) is UB
  offsets_[n_] = static_cast<uint32_t>(off);
  ptrs_[n_++] = bytes_ + off;
  used_ = off + size;
}

void KernelArgs::grow(size_t bytes, size_t args) {
  const size_t want_bytes = std::max(cap_ * 2, bytes + 64);
  const size_t want_args = std::max(arg_cap_ * 2, args);
  std::vector<unsigned char> b(want_bytes);
  std::vector<uint32_t> o(want_args);
  std::vector<void*> q(want_args);
  if (used_ > 0) std::memcpy(b.data(), bytes_, used_);
  std::copy(offsets_, offsets_ + n_, o.begin());
  heap_bytes_ = std::move(b);
  heap_offsets_ = std::move(o);
  heap_ptrs_ = std::move(q);
  bytes_ = heap_bytes_.data();
  offsets_ = heap_offsets_.data();
  ptrs_ = heap_ptrs_.data();
  cap_ = want_bytes;
  arg_cap_ = want_args;
  repoint();
}

void KernelArgs::repoint() {
  for (size_t i = 0; i < n_; ++i) ptrs_[i] = bytes_ + offsets_[i];
}

KernelArgs& KernelArgs::operator=(const KernelArgs& o) {
  if (this == &o) return *this;
  used_ = 0;
  n_ = 0;
  if (o.used_ > cap_ || o.n_ > arg_cap_) grow(o.used_, o.n_);
  if (o.used_ > 0) std::memcpy(bytes_, o.bytes_, o.used_);
  std::copy(o.offsets_, o.offsets_ + o.n_, offsets_);
  used_ = o.used_;
  n_ = o.n_;
  repoint();
  return *this;
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

Dim3 residentClusterGrid(Backend& b, FunctionHandle f, Dim3 grid, Dim3 block, size_t dynamic_shared,
                         unsigned cluster) {
  if (cluster <= 1) return grid;
  const int threads = static_cast<int>(block.x * block.y * block.z);
  const Expected<int> n = b.maxActiveClusters(f, Dim3{cluster, 1, 1}, threads, dynamic_shared);
  if (!n.ok() || *n <= 0) return grid;
  const uint64_t fit = static_cast<uint64_t>(*n) * cluster;
  if (fit < grid.x) grid.x = static_cast<unsigned>(fit);
  return grid;
}

}  // namespace ktune
