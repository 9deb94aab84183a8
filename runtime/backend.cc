#include "runtime/backend.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "runtime/launch_check.h"

namespace ktune {

const char* vendorName(Vendor v) {
  switch (v) {
    case Vendor::kNvidia: return "nvidia";
    case Vendor::kAmd: return "amd";
    case Vendor::kSimulated: return "sim";
  }
  return "unknown";
}

Status checkTensorMap2D(const TensorMap2DDesc& d) {
  auto bad = [](const std::string& what) {
    return Status::InvalidArgument("TMA tensor map: " + what);
  };
  if (d.base == 0) return bad("null base address");
  if (d.base % 16 != 0) return bad("base address must be 16-byte aligned");
  if (d.elem_bytes != 1 && d.elem_bytes != 2 && d.elem_bytes != 4)
    return bad("element size must be 1, 2 or 4 bytes, got " + std::to_string(d.elem_bytes));
  constexpr uint64_t kMaxDim = uint64_t{1} << 32;
  if (d.rows == 0 || d.cols == 0 || d.rows > kMaxDim || d.cols > kMaxDim)
    return bad("rows and cols must be in [1, 2^32], got " + std::to_string(d.rows) + " x " +
               std::to_string(d.cols));
  if (d.row_stride_bytes % 16 != 0)
    return bad("row stride must be a multiple of 16 bytes, got " + std::to_string(d.row_stride_bytes));
  if (d.row_stride_bytes < d.cols * static_cast<uint64_t>(d.elem_bytes) ||
      d.row_stride_bytes >= (uint64_t{1} << 40))
    return bad("row stride " + std::to_string(d.row_stride_bytes) +
               " B is shorter than a row or >= 2^40");
  if (d.box_rows < 1 || d.box_rows > 256 || d.box_cols < 1 || d.box_cols > 256)
    return bad("box sides must be in [1, 256]");
  const uint64_t box_row_bytes = uint64_t{d.box_cols} * static_cast<uint64_t>(d.elem_bytes);
  if (box_row_bytes % 16 != 0) return bad("a box row must be a multiple of 16 bytes");
  if (d.swizzle_bytes != 0 && d.swizzle_bytes != 32 && d.swizzle_bytes != 64 && d.swizzle_bytes != 128)
    return bad("swizzle must be 0, 32, 64 or 128 bytes");
  if (d.swizzle_bytes != 0 && box_row_bytes > static_cast<uint64_t>(d.swizzle_bytes))
    return bad("a box row (" + std::to_string(box_row_bytes) + " B) exceeds the " +
               std::to_string(d.swizzle_bytes) + "-byte swizzle span");
  return Status::Ok();
}

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
