#include "base/device.h"

#include <cctype>

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
  const int l2 = d.l2_promotion_bytes;
  if (l2 != 0 && l2 != 64 && l2 != 128 && l2 != 256)
    return bad("L2 promotion must be 0 (none), 64, 128 or 256 bytes, got " + std::to_string(l2));
  if (d.planes == 0 || d.planes > kMaxDim || d.box_planes < 1 || d.box_planes > 256 ||
      d.box_planes > d.planes)
    return bad("planes must be in [1, 2^32] and box planes in [1, min(planes, 256)], got " +
               std::to_string(d.planes) + " and " + std::to_string(d.box_planes));
  if (d.planes > 1 && (d.plane_stride_bytes % 16 != 0 || d.plane_stride_bytes >= (uint64_t{1} << 40) ||
                       d.plane_stride_bytes < d.rows * d.row_stride_bytes))
    return bad("plane stride " + std::to_string(d.plane_stride_bytes) +
               " B must be a multiple of 16, at least the rows' span and < 2^40");
  return Status::Ok();
}

Arch::Arch(std::string_view name) : name_(name) {
  auto digitsAt = [&](size_t pos, size_t max_digits) {
    int v = 0;
    for (size_t i = pos; i < name.size() && i < pos + max_digits &&
                         std::isdigit(static_cast<unsigned char>(name[i]));
         ++i)
      v = v * 10 + (name[i] - '0');
    return v;
  };
  if (name.substr(0, 3) == "sm_") {
    vendor_ = Vendor::kNvidia;
    generation_ = digitsAt(3, 3);
  } else if (name.substr(0, 3) == "gfx") {
    vendor_ = Vendor::kAmd;
    // gfx9xx: one digit of generation; gfx10xx, gfx11xx, gfx12xx: two (names have 3 or 4 digits).
    size_t n = 0;
    while (3 + n < name.size() && std::isalnum(static_cast<unsigned char>(name[3 + n]))) ++n;
    generation_ = digitsAt(3, n >= 4 ? 2 : 1);
  }
}

const char* Arch::spaceBackend() const {
  return isNvidia() ? "cuda" : isAmd() ? "hip" : "";
}

}  // namespace ktune
