// The MI300X guide's occupancy recomputed independently of ktune (for the AMD occupancy tests:
// amd_spaces_test, amd_occupancy_llvm_test).
#pragma once

#include <algorithm>
#include <cstdint>

namespace ktune::testsupport {

// From the kernel descriptor, for gfx90a/gfx942: .vgpr_count (AGPRs included) rounded to the
// 8-register granule of a 512-entry file, 8 waves per EU, 4 EUs and 64 KiB LDS per CU; plus the
// GCN SGPR limit the guide leaves out (> 100 SGPRs: 7 waves).
inline double guideWavesPerEu(int vgpr_count, int sgpr, int64_t lds, int waves_per_wg) {
  const int alloc = (std::max(vgpr_count, 1) + 7) / 8 * 8;
  int occ_vgpr = std::min(8, 512 / alloc);
  if (sgpr > 100) occ_vgpr = std::min(occ_vgpr, 7);
  const int occ_lds = lds > 0 ? static_cast<int>(65536 / lds) : 1 << 30;
  const int wg = std::min(occ_vgpr * 4 / waves_per_wg, occ_lds);
  return static_cast<double>(wg) * waves_per_wg / 4;
}

}  // namespace ktune::testsupport
