// Device value types shared by every layer: the vendor, the architecture (an Arch value with
// vendor and family queries instead of string-prefix tests), what a device reports (DeviceInfo),
// launch dimensions, device addresses and the TMA tensor-map descriptor. No driver is involved:
// runtime/ fills these from the device, compiler/ and templates/ read them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "ktune/types.hpp"

namespace ktune {

enum class Vendor { kNvidia, kAmd, kSimulated };
const char* vendorName(Vendor v);

// A GPU architecture name ("sm_90a", "sm_80", "gfx90a", "gfx942", "gfx1100"): which vendor it is
// for and its family, parsed once. Any string is accepted; one that names neither vendor has
// vendor kSimulated (e.g. the simulated backend's "sim").
class Arch {
 public:
  Arch() = default;
  explicit Arch(std::string_view name);
  const std::string& name() const { return name_; }
  Vendor vendor() const { return vendor_; }
  bool isNvidia() const { return vendor_ == Vendor::kNvidia; }  // "sm_*"
  bool isAmd() const { return vendor_ == Vendor::kAmd; }        // "gfx*"
  // NVIDIA: the compute capability as major*10+minor ("sm_90a" -> 90); AMD: the GFX generation
  // ("gfx90a", "gfx942" -> 9, "gfx1100" -> 11); 0 when unknown.
  int generation() const { return generation_; }
  // The ConfigSpace backend name for this arch: "cuda", "hip" or "".
  const char* spaceBackend() const;

 private:
  std::string name_;
  Vendor vendor_ = Vendor::kSimulated;
  int generation_ = 0;
};


// Read from the device; never hard-coded.
struct DeviceInfo {
  Vendor vendor = Vendor::kSimulated;
  int ordinal = 0;
  std::string name;           // "NVIDIA H100 80GB HBM3", "AMD Instinct MI300X"
  std::string arch;           // "sm_90a", "sm_80", "gfx90a", "gfx942"
  int cc_major = 0, cc_minor = 0;  // NVIDIA compute capability (0 on AMD)
  int multiprocessors = 0;    // SMs / CUs
  int warp_size = 0;          // 32 / 64
  int64_t shared_per_block = 0;        // default per-block limit (48 KiB on NVIDIA)
  int64_t shared_per_block_optin = 0;  // after raising the dynamic limit
  int64_t shared_per_sm = 0;
  int regs_per_block = 0;
  int regs_per_sm = 0;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;
  int64_t l2_bytes = 0;
  int64_t global_mem_bytes = 0;
  int clock_khz = 0;
  int mem_clock_khz = 0;
  int mem_bus_width_bits = 0;
  std::string driver_version;  // "13.0" / HIP runtime version
  std::string pci_bus_id;
};

// DevicePtr (a device address, 0 = null) is public: ktune/types.hpp.

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// The 128 opaque bytes of a CUtensorMap (alignment as the driver requires for a kernel parameter).
struct alignas(64) TensorMap {
  uint64_t opaque[16] = {};
};
static_assert(sizeof(TensorMap) == 128, "CUtensorMap is 128 bytes");

// A 2-D matrix of `rows` x `cols` elements of `elem_bytes` each, rows `row_stride_bytes` apart,
// loaded in boxes of box_rows x box_cols elements into shared memory with a `swizzle_bytes`-byte
// swizzle (0, 32, 64 or 128). Elements outside the matrix read as zero. `l2_promotion_bytes`
// (0 = none, 64, 128 or 256): the span the L2 fetches around each of a box's requests
// (CUtensorMapL2promotion). With `planes` > 1 the map is 3-D: `planes` such matrices
// `plane_stride_bytes` apart, loaded in boxes of box_planes x box_rows x box_cols that land in
// shared memory plane after plane (the decode gate/up pair: [2][N/2][K], a box of 32 gate rows
// and their 32 up rows). planes = box_planes = 1 (the default): a 2-D map.
struct TensorMap2DDesc {
  DevicePtr base = 0;
  int elem_bytes = 2;
  uint64_t rows = 0, cols = 0, row_stride_bytes = 0;
  uint32_t box_rows = 64, box_cols = 64;
  int swizzle_bytes = 128;
  int l2_promotion_bytes = 256;
  uint64_t planes = 1, plane_stride_bytes = 0;
  uint32_t box_planes = 1;
};

// kInvalidArgument naming the defect unless `d` meets the TMA rules: base 16-byte aligned and
// non-null, elem_bytes 1/2/4, 1 <= rows, cols <= 2^32, row stride a multiple of 16 bytes, at least
// one row long and < 2^40, boxes 1..256 per side with box_cols * elem_bytes a multiple of 16 and,
// when swizzled, at most the swizzle span, L2 promotion 0, 64, 128 or 256 bytes; with planes > 1,
// planes <= 2^32, a plane stride a multiple of 16 bytes, at least the rows' span and < 2^40, and
// 1 <= box_planes <= min(planes, 256). Pure; thread-safe.
Status checkTensorMap2D(const TensorMap2DDesc& d);

}  // namespace ktune
